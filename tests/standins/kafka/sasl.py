"""The broker side of SASL PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677).

A connection's :class:`SaslServer` answers the SaslAuthenticate exchanges after a
SaslHandshake named its mechanism; a wrong user or password ends with Kafka's
SASL_AUTHENTICATION_FAILED (58) and the message brokers send.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Mapping

__all__ = ["MECHANISMS", "SaslFailedError", "SaslServer"]

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_HASH = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
_ITERATIONS = 4096


class SaslFailedError(Exception):
    """Authentication failed: the broker answers error 58 with this message."""


class SaslServer:
    """One connection's exchange; :meth:`step` takes the client's bytes and returns the reply."""

    def __init__(self, mechanism: str, users: Mapping[str, str]) -> None:
        self.mechanism = mechanism
        self.users = users
        self.done = False
        self._scram: dict[str, bytes] = {}

    def step(self, data: bytes) -> bytes:
        if self.mechanism == "PLAIN":
            return self._plain(data)
        return self._scram_step(data)

    def _fail(self) -> SaslFailedError:
        return SaslFailedError(
            "Authentication failed during authentication due to invalid credentials with SASL "
            f"mechanism {self.mechanism}"
        )

    def _plain(self, data: bytes) -> bytes:
        parts = data.split(b"\0")
        if len(parts) != 3:
            raise SaslFailedError("Invalid SASL/PLAIN response: expected 3 tokens")
        user, password = parts[1].decode(), parts[2].decode()
        expected = self.users.get(user)
        if expected is None or not hmac.compare_digest(expected, password):
            raise self._fail()
        self.done = True
        return b""

    def _scram_step(self, data: bytes) -> bytes:
        h = _HASH[self.mechanism]
        text = data.decode()
        if not self._scram:
            bare = text.split(",", 2)[2]
            fields = dict(kv.split("=", 1) for kv in bare.split(","))
            user = fields["n"]
            if user not in self.users:
                raise self._fail()
            salt = os.urandom(16)
            nonce = fields["r"] + base64.b64encode(os.urandom(18)).decode()
            first = f"r={nonce},s={base64.b64encode(salt).decode()},i={_ITERATIONS}"
            salted = hashlib.pbkdf2_hmac(h().name, self.users[user].encode(), salt, _ITERATIONS)
            self._scram = {"bare": bare.encode(), "first": first.encode(), "salted": salted}
            return first.encode()
        fields = dict(kv.split("=", 1) for kv in text.split(","))
        without_proof = text.rsplit(",p=", 1)[0].encode()
        auth = self._scram["bare"] + b"," + self._scram["first"] + b"," + without_proof
        salted = self._scram["salted"]
        client_key = hmac.new(salted, b"Client Key", h).digest()
        stored = h(client_key).digest()
        signature = hmac.new(stored, auth, h).digest()
        proof = base64.b64decode(fields["p"])
        if len(proof) != len(signature):
            raise self._fail()
        recovered = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(h(recovered).digest(), stored):
            raise self._fail()
        server_key = hmac.new(salted, b"Server Key", h).digest()
        self.done = True
        return b"v=" + base64.b64encode(hmac.new(server_key, auth, h).digest())
