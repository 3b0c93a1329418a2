"""Server side of password authentication: cleartext, MD5 and SCRAM-SHA-256 (RFC 5802/7677).

Sans-IO: an :class:`Authenticator` is told what the client sent and says what to answer.
SCRAM follows PostgreSQL's rules: the mechanism list is ``SCRAM-SHA-256`` only (no -PLUS
without TLS); the username inside client-first-message is ignored — libpq sends an empty
one (``n,,n=,r=…``, fe-auth-scram.c; auth-scram.c
read_client_first_message ignores it) — and the credentials are those of the startup
packet's user; the iteration count is 4096 (``scram_iterations``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import stringprep
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from .personas import ServerError

__all__ = ["Authenticator", "AuthStep", "md5_password", "scram_salted_password", "saslprep"]

SCRAM_ITERATIONS = 4096
MECHANISM = "SCRAM-SHA-256"


@dataclass(frozen=True, slots=True)
class AuthStep:
    """What to send: ``kind`` is ``cleartext`` | ``md5`` (data = salt) | ``sasl`` |
    ``sasl-continue`` | ``sasl-final`` | ``ok``; ``expect`` is what the reader must parse
    next ('password', 'sasl-initial', 'sasl-response' or None when done)."""

    kind: str
    data: bytes = b""
    expect: str | None = None


def _failed(user: str, method: str) -> ServerError:
    # auth_failed(): FATAL 28P01 for password methods (28000 for others), with the same
    # text whether the user exists or the password is wrong.
    text = {"password": "password", "md5": "password", "scram-sha-256": "password"}.get(method, method)
    return ServerError("28P01", f'{text} authentication failed for user "{user}"', severity="FATAL")


def md5_password(user: str, password: str, salt: bytes) -> str:
    """The response libpq sends to AuthenticationMD5Password:
    ``"md5" + md5hex(md5hex(password + user) + salt)``."""
    inner = hashlib.md5((password + user).encode()).hexdigest()
    return "md5" + hashlib.md5(inner.encode() + salt).hexdigest()


def saslprep(password: str) -> str:
    """SASLprep (RFC 4013) as PostgreSQL applies it; like PostgreSQL, a password that is
    not valid under SASLprep is used as it is."""
    mapped = "".join(
        " " if stringprep.in_table_c12(ch) else "" if stringprep.in_table_b1(ch) else ch for ch in password
    )
    norm = unicodedata.normalize("NFKC", mapped)
    if not norm:
        return password
    prohibited = (stringprep.in_table_c12, stringprep.in_table_c21_c22, stringprep.in_table_c3,
                  stringprep.in_table_c4, stringprep.in_table_c5, stringprep.in_table_c6,
                  stringprep.in_table_c7, stringprep.in_table_c8, stringprep.in_table_c9,
                  stringprep.in_table_a1)
    if any(p(ch) for ch in norm for p in prohibited):
        return password
    has_ral = any(stringprep.in_table_d1(ch) for ch in norm)
    if has_ral and (any(stringprep.in_table_d2(ch) for ch in norm)
                    or not stringprep.in_table_d1(norm[0]) or not stringprep.in_table_d1(norm[-1])):
        return password
    return norm


def scram_salted_password(password: str, salt: bytes, iterations: int = SCRAM_ITERATIONS) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", saslprep(password).encode(), salt, iterations)


def _hmac(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


class _ScramSecret:
    """What a server stores for a SCRAM user: salt, StoredKey, ServerKey."""

    __slots__ = ("salt", "stored_key", "server_key")

    def __init__(self, password: str, salt: bytes) -> None:
        salted = scram_salted_password(password, salt)
        self.salt = salt
        self.stored_key = hashlib.sha256(_hmac(salted, b"Client Key")).digest()
        self.server_key = _hmac(salted, b"Server Key")


class SecretCache:
    """Per-server SCRAM secrets (PBKDF2 once per user, as a real server stores them)."""

    def __init__(self, users: dict[str, str], random_bytes: Callable[[int], bytes] = os.urandom) -> None:
        self.users = users
        self.random_bytes = random_bytes
        self._secrets: dict[str, _ScramSecret] = {}

    def secret(self, user: str) -> _ScramSecret:
        s = self._secrets.get(user)
        if s is None:
            password = self.users.get(user)
            # An unknown user still gets a full exchange (a mock secret), then fails, as a
            # real server does (no user enumeration).
            s = _ScramSecret(password if password is not None else self.random_bytes(16).hex(),
                             self.random_bytes(16))
            if password is not None:
                self._secrets[user] = s
        return s


class Authenticator:
    """One connection's authentication exchange for *method*."""

    def __init__(self, method: str, user: str, users: dict[str, str], secrets: SecretCache | None = None,
                 *, refuse: bool = False, random_bytes: Callable[[int], bytes] = os.urandom) -> None:
        self.method = method
        self.random_bytes = random_bytes
        self.user = user
        self.users = users
        self.secrets = secrets or SecretCache(users, random_bytes)
        self.refuse = refuse
        self._salt = b""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._gs2 = ""

    def start(self) -> AuthStep:
        if self.method == "trust":
            if self.refuse:
                raise _failed(self.user, "password")
            if self.users and self.user not in self.users:
                raise ServerError(
                    "28000", f'no pg_hba.conf entry for replication connection from host "127.0.0.1", '
                             f'user "{self.user}", no encryption', severity="FATAL")
            return AuthStep("ok")
        if self.method == "password":
            return AuthStep("cleartext", expect="password")
        if self.method == "md5":
            self._salt = self.random_bytes(4)
            return AuthStep("md5", self._salt, expect="password")
        if self.method == "scram-sha-256":
            return AuthStep("sasl", MECHANISM.encode(), expect="sasl-initial")
        raise ServerError("28000", f"authentication method {self.method} not supported", severity="FATAL")

    # -- password / md5 --------------------------------------------------------------------
    def password(self, data: bytes) -> AuthStep:
        text = data.rstrip(b"\x00").decode("utf-8", "replace")
        expected = self.users.get(self.user)
        if expected is None or self.refuse:
            raise _failed(self.user, self.method)
        if self.method == "md5":
            ok = hmac.compare_digest(text, md5_password(self.user, expected, self._salt))
        else:
            ok = hmac.compare_digest(text.encode(), expected.encode())
        if not ok:
            raise _failed(self.user, self.method)
        return AuthStep("ok")

    # -- SCRAM -----------------------------------------------------------------------------
    def sasl_initial(self, mechanism: str, data: bytes | None) -> AuthStep:
        if mechanism != MECHANISM:
            raise ServerError("08P01", "client selected an invalid SASL authentication mechanism",
                              severity="FATAL")
        text = (data or b"").decode("utf-8", "replace")
        # client-first-message = gs2-header client-first-message-bare
        # gs2-header = gs2-cbind-flag "," [ authzid ] ","
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y") or parts[1]:
            if parts and parts[0].startswith("p"):
                raise ServerError("08P01", "malformed SCRAM message",
                                  detail="The client requires SCRAM channel binding, but it is not supported.",
                                  severity="FATAL")
            raise ServerError("08P01", "malformed SCRAM message",
                              detail=f"Unexpected start of client-first-message {text[:20]!r}.", severity="FATAL")
        self._gs2 = parts[0] + "," + parts[1] + ","
        bare = parts[2]
        attrs = dict(a.split("=", 1) for a in bare.split(",") if "=" in a)
        if "n" not in attrs or "r" not in attrs or not attrs["r"]:
            raise ServerError("08P01", "malformed SCRAM message",
                              detail="client-first-message lacks the user name or nonce.", severity="FATAL")
        # The name inside the message is ignored: PostgreSQL uses the startup user (libpq
        # sends an empty name).
        self._client_first_bare = bare
        secret = self.secrets.secret(self.user)
        self._nonce = attrs["r"] + base64.b64encode(self.random_bytes(18)).decode()
        self._server_first = (f"r={self._nonce},s={base64.b64encode(secret.salt).decode()},"
                              f"i={SCRAM_ITERATIONS}")
        return AuthStep("sasl-continue", self._server_first.encode(), expect="sasl-response")

    def sasl_response(self, data: bytes) -> AuthStep:
        text = data.decode("utf-8", "replace")
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        if not sep:
            raise ServerError("08P01", "malformed SCRAM message",
                              detail="Proof missing from client-final-message.", severity="FATAL")
        attrs = dict(a.split("=", 1) for a in without_proof.split(",") if "=" in a)
        expected_cb = base64.b64encode(self._gs2.encode()).decode()
        if attrs.get("c") != expected_cb:
            raise ServerError("08P01", "malformed SCRAM message",
                              detail="Unexpected channel-binding flag in client-final-message.", severity="FATAL")
        if attrs.get("r") != self._nonce:
            raise ServerError("08P01", "malformed SCRAM message",
                              detail="Unexpected nonce in client-final-message.", severity="FATAL")
        try:
            proof = base64.b64decode(proof_b64, validate=True)
        except ValueError:
            raise ServerError("08P01", "malformed SCRAM message",
                              detail="Malformed proof in client-final-message.", severity="FATAL") from None
        secret = self.secrets.secret(self.user)
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(secret.stored_key, auth_message)
        if len(proof) != len(signature):
            raise _failed(self.user, self.method)
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if self.refuse or self.user not in self.users or not hmac.compare_digest(
                hashlib.sha256(client_key).digest(), secret.stored_key):
            raise _failed(self.user, self.method)
        server_signature = _hmac(secret.server_key, auth_message)
        return AuthStep("sasl-final", b"v=" + base64.b64encode(server_signature))
