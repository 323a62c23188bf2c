"""What a failed TLS exchange with a node means, in one sentence naming the endpoint and the fix.

Why: OpenSSL's reasons (``CERTIFICATE_VERIFY_FAILED``, ``TLSV13_ALERT_CERTIFICATE_REQUIRED``,
``WRONG_VERSION_NUMBER``) and gRPC's (``Ssl handshake failed``, ``Socket closed``) say what broke,
not what to do. Each case the issue lists has its sentence here: a node's certificate from another
CA, expired, or for another host; a node that wants a client certificate or refuses ours; a node
that speaks plaintext where TLS was asked, and the reverse.

gRPC hides the handshake's reason, so for a gRPC node whose call failed :func:`probe` runs one
handshake with Python's ``ssl`` against the same port and explains that; it runs only after a
failure, never on the path of a good answer.
"""

from __future__ import annotations

import socket
import ssl

__all__ = ["explain", "not_tls", "probe", "refused_after_handshake", "wants_tls_answer"]

# OpenSSL's X509_V_ERR codes the explanations tell apart
_EXPIRED = 10
_NOT_YET_VALID = 9
_UNKNOWN_ISSUER = (2, 18, 19, 20, 21)
_HOSTNAME_MISMATCH = 62
_IP_MISMATCH = 64
_GIVE = "give --tls-ca (and --tls-cert/--tls-key if it requires client certificates)"


def explain(exc: BaseException, endpoint: str, *, ca: str | None, cert: str | None) -> str:
    """The sentence for ``exc``, raised while talking TLS to ``endpoint``."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return _verification(exc, endpoint, ca)
    reason = (getattr(exc, "reason", None) or str(exc) or type(exc).__name__).upper()
    if "CERTIFICATE_REQUIRED" in reason or ("HANDSHAKE_FAILURE" in reason and cert is None):
        return (
            f"{endpoint} requires a client certificate: give --tls-cert and --tls-key "
            "signed by the CA the node trusts"
        )
    if "UNKNOWN_CA" in reason or "BAD_CERTIFICATE" in reason or "DECRYPT_ERROR" in reason:
        return (
            f"{endpoint} refused our client certificate {cert}: it is not signed by a CA the "
            "node trusts; give a certificate from the node's CA (--tls-cert/--tls-key)"
        )
    if "CERTIFICATE_EXPIRED" in reason:
        return f"{endpoint} refused our client certificate {cert}: it has expired; renew it"
    if "WRONG_VERSION_NUMBER" in reason or "RECORD_LAYER" in reason or "PACKET_LENGTH" in reason:
        return not_tls(endpoint)
    return f"{endpoint}: TLS failed: {reason.lower()}"


def _verification(exc: ssl.SSLCertVerificationError, endpoint: str, ca: str | None) -> str:
    code = exc.verify_code
    trusted = f"the CA in {ca}" if ca else "the system's CAs"
    if code == _EXPIRED:
        return (
            f"{endpoint}'s certificate has expired: renew it on the node "
            "(its --tls-cert, tlsCertificatePath)"
        )
    if code == _NOT_YET_VALID:
        return f"{endpoint}'s certificate is not valid yet: check the clocks or reissue it"
    if code in (_HOSTNAME_MISMATCH, _IP_MISMATCH):
        host = endpoint.rpartition(":")[0].strip("[]")
        return (
            f"{endpoint}'s certificate is not for {host}: reissue it with {host} among its "
            "subject alternative names, or reach the node by a name its certificate carries"
        )
    if code in _UNKNOWN_ISSUER:
        return (
            f"{endpoint}'s certificate is not signed by {trusted}: give the CA that signs the "
            "nodes' certificates with --tls-ca (tlsTrustStore)"
        )
    return f"{endpoint}'s certificate was refused: {exc.verify_message}"


def refused_after_handshake(endpoint: str, cert: str | None) -> str:
    """The node ended the connection right after the handshake: with TLS 1.3 that is how a
    server refuses the client's certificate (its alert, when it sends one, says which way)."""
    if cert is None:
        return (
            f"{endpoint} closed the connection after the TLS handshake: it requires a client "
            "certificate; give --tls-cert and --tls-key signed by the CA the node trusts"
        )
    return (
        f"{endpoint} refused our client certificate {cert} (it closed the connection after the "
        "TLS handshake): give a certificate signed by the CA the node trusts, and not expired "
        "(--tls-cert/--tls-key)"
    )


def not_tls(endpoint: str) -> str:
    """A node that answered plaintext where TLS was asked."""
    return (
        f"{endpoint} does not speak TLS on this port: start the node with a certificate, "
        "or reach it without TLS settings"
    )


def wants_tls_answer() -> str:
    """A bookie port that refused a plaintext request: it wants TLS (a trimtab agent with a
    certificate) or authentication (a bookie with an authentication plugin) first."""
    return (
        "node answered EUA (it wants TLS or authentication first: give --tls-ca, and "
        "--tls-cert/--tls-key if it requires client certificates)"
    )


def probe(
    host: str,
    port: int,
    context: ssl.SSLContext | None,
    *,
    timeout: float,
    ca: str | None = None,
    cert: str | None = None,
) -> str | None:
    """Why a TLS (``context``) or plaintext (``None``) gRPC call to ``host:port`` failed, from
    one handshake of our own; ``None`` when the probe learns nothing (the node is just down)."""
    endpoint = f"{host}:{port}"
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            if context is None:
                return _plain_probe(raw, endpoint)
            tls = context.wrap_socket(raw, server_hostname=host)
    except ssl.SSLError as exc:
        return explain(exc, endpoint, ca=ca, cert=cert)
    except (OSError, TimeoutError):
        return None
    with tls:
        try:
            tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            if tls.recv(1):  # TLS 1.3: a refused client certificate shows here
                return None
        except ssl.SSLError as exc:
            if "ALERT" in (exc.reason or "").upper():
                return explain(exc, endpoint, ca=ca, cert=cert)
        except TimeoutError:
            return None
        except OSError:
            pass
    return refused_after_handshake(endpoint, cert)


def _plain_probe(raw: socket.socket, endpoint: str) -> str | None:
    """A plaintext gRPC call failed: does the port speak TLS?"""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with context.wrap_socket(raw):
            pass
    except ssl.SSLError as exc:
        if "CERTIFICATE_REQUIRED" in str(exc).upper():
            return f"{endpoint} speaks TLS and requires a client certificate: " + _GIVE
        return None
    return f"{endpoint} speaks TLS on this port: " + _GIVE
