"""Dial one broker before the admin client does, so a failure names its cause.

kafka-python retries a bootstrap that fails (refused, a TLS handshake, a plaintext peer, a
wrong password) until its timeout and then says only "Unable to bootstrap". The probe dials
once: TCP, the TLS handshake with the client's own context, one ApiVersions, and the SASL
exchange (SaslHandshake then SaslAuthenticate), every message encoded and decoded by
kafka-python's protocol classes and the login driven by its own SASL mechanisms; a failure is a
:class:`ProbeError` with a sentence a user can act on.
"""

from __future__ import annotations

import socket
import ssl
from typing import Any

from trimtab.systems.kafka.command_config import ClientSecurity

__all__ = ["ProbeError", "probe"]


class ProbeError(Exception):
    """Why one broker could not be used; ``auth`` when it refused the login."""

    def __init__(self, message: str, *, auth: bool = False) -> None:
        super().__init__(message)
        self.auth = auth


_CLOSED_AFTER_TLS = (
    "the broker closed the connection after the TLS handshake: does its listener require a "
    "client certificate (ssl.client.auth=required)? set ssl.keystore.location (PEM)"
)


def _tls_reason(exc: ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        detail = str(exc.verify_message or exc.reason or "verify failed")
        if "mismatch" in detail or "doesn't match" in detail:
            return f"the broker's certificate does not name this host ({detail})"
        return f"the broker's certificate does not verify ({detail}): check ssl.truststore.location"
    if exc.reason == "TLSV13_ALERT_CERTIFICATE_REQUIRED":
        return "the broker requires a client certificate: set ssl.keystore.location (PEM)"
    if exc.reason in ("SSLV3_ALERT_BAD_CERTIFICATE", "TLSV1_ALERT_UNKNOWN_CA"):
        return "the broker refused the client certificate (ssl.keystore.location): check its CA"
    if exc.reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE") or isinstance(
        exc, ssl.SSLEOFError
    ):
        return "the peer does not speak TLS here (a PLAINTEXT listener?): check security.protocol"
    return f"TLS handshake failed ({exc.reason or exc})"


def _exchange(sock: Any, request: Any) -> Any:
    """Send one request and read its response with kafka-python's protocol parser."""
    from kafka.protocol.parser import KafkaProtocol

    parser = KafkaProtocol(client_id="trimtab")
    parser.send_request(request)
    sock.sendall(parser.send_bytes())
    while True:
        data = sock.recv(65536)
        if not data:
            raise ProbeError("the broker closed the connection during the login")
        responses = parser.receive_bytes(data)
        if responses:
            return responses[0][1]


def _versions(sock: Any) -> None:
    """One ApiVersions (v0, which every broker answers): the peer speaks Kafka to us."""
    from kafka.protocol.metadata import ApiVersionsRequest

    answer = _exchange(sock, ApiVersionsRequest(version=0))
    if answer.error_code:
        raise ProbeError(f"the broker answered ApiVersions with error {answer.error_code}")


def _login(sock: Any, host: str, security: ClientSecurity) -> None:
    from kafka.net.sasl import get_sasl_mechanism
    from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

    handshake = _exchange(sock, SaslHandshakeRequest(mechanism=security.mechanism, version=1))
    if handshake.error_code:
        enabled = ", ".join(handshake.mechanisms) or "none"
        raise ProbeError(
            f"sasl.mechanism={security.mechanism} is not enabled on this listener "
            f"(enabled: {enabled})",
            auth=True,
        )
    mechanism = get_sasl_mechanism(security.mechanism)(
        host=host,
        security_protocol=security.protocol,
        sasl_mechanism=security.mechanism,
        sasl_plain_username=security.username,
        sasl_plain_password=security.password,
    )
    while not mechanism.is_done():
        request = SaslAuthenticateRequest(auth_bytes=mechanism.auth_bytes(), version=1)
        answer = _exchange(sock, request)
        if answer.error_code:
            raise ProbeError("authentication failed", auth=True)
        mechanism.receive(answer.auth_bytes)
    if not mechanism.is_authenticated():
        raise ProbeError("authentication failed", auth=True)


def probe(
    host: str, port: int, security: ClientSecurity, context: ssl.SSLContext | None, timeout_s: float
) -> None:
    """Connect to ``host:port`` as the admin client will; :class:`ProbeError` on failure."""
    try:
        raw = socket.create_connection((host, port), timeout=timeout_s)
    except OSError as exc:
        raise ProbeError(str(exc.strerror or exc)) from None
    with raw:
        sock: Any = raw
        try:
            if context is not None:
                sock = _handshake(raw, host, context, timeout_s)
            _versions(sock)
            if security.sasl:
                _login(sock, host, security)
        except ssl.SSLError as exc:  # TLS 1.3: a refused client certificate shows here
            closed = (
                isinstance(exc, ssl.SSLEOFError) or exc.reason == "UNEXPECTED_EOF_WHILE_READING"
            )
            shaken = sock is not raw  # the handshake went through: the peer speaks TLS
            raise ProbeError(_CLOSED_AFTER_TLS if closed and shaken else _tls_reason(exc)) from None
        except (ConnectionResetError, BrokenPipeError) as exc:
            if sock is not raw:
                raise ProbeError(_CLOSED_AFTER_TLS) from None
            raise ProbeError(str(exc.strerror or exc)) from None
        except TimeoutError:
            raise ProbeError(f"no answer within {timeout_s:g} s") from None
        except OSError as exc:
            raise ProbeError(str(exc.strerror or exc)) from None
        finally:
            if sock is not raw:
                sock.close()


def _handshake(raw: socket.socket, host: str, context: ssl.SSLContext, timeout_s: float) -> Any:
    """The TLS handshake; a peer that hangs up or stays silent is named a plaintext one."""
    plaintext = "the peer does not speak TLS here (a PLAINTEXT listener?): check security.protocol"
    try:
        return context.wrap_socket(raw, server_hostname=host)
    except ssl.SSLError as exc:
        raise ProbeError(_tls_reason(exc)) from None
    except TimeoutError:
        raise ProbeError(f"no TLS answer within {timeout_s:g} s: {plaintext}") from None
    except (ConnectionResetError, BrokenPipeError):
        raise ProbeError(plaintext) from None
