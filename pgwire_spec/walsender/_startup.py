"""The connection's startup and authentication: the startup packet, the password/SASL
exchange, the welcome (ParameterStatus, BackendKeyData, ReadyForQuery).

A mixin of :class:`~pgwire_spec.walsender.core.Connection`; it runs on its state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..wire import (
    PROTOCOL_3_0,
    PROTOCOL_3_2,
    AuthenticationCleartextPassword,
    AuthenticationMD5Password,
    AuthenticationOk,
    AuthenticationSASL,
    AuthenticationSASLContinue,
    AuthenticationSASLFinal,
    BackendKeyData,
    CancelRequest,
    GSSENCRequest,
    NegotiateProtocolVersion,
    ParameterStatus,
    PasswordMessage,
    ReadyForQuery,
    SASLInitialResponse,
    SASLResponse,
    SSLRequest,
    StartupMessage,
    Terminate,
)
from ._auth import Authenticator, AuthStep
from ._base import Close
from .personas import ServerError

if TYPE_CHECKING:
    from .core import ServerState


class _Startup:
    server: ServerState

    # -- startup and authentication --------------------------------------------------------
    def _startup(self, msg: Any) -> None:
        if isinstance(msg, (SSLRequest, GSSENCRequest)):
            # No TLS, no GSSAPI: 'N', and the client goes on in plain text.
            self.out.append(b"N")
            self._record("B", event="answered 'N'")
            return
        if isinstance(msg, CancelRequest):
            for other in list(self.server.connections.values()):
                # Only a running command is cancelled: an idle backend forgets the signal
                # before it reads its next command (postgres.c PostgresMain).
                if other.pid == msg.process_id and other.secret == msg.secret_key and other.phase == "streaming":
                    other.cancel_requested = True
            self.close_action = Close()
            return
        if not isinstance(msg, StartupMessage):
            self.fatal(ServerError("08P01", "invalid startup packet layout"))
            return
        params = dict(msg.parameters)
        self.params = params
        self._negotiate(msg)
        user = params.get("user")
        if not user:
            self.fatal(ServerError("28000", "no PostgreSQL user name specified in startup packet"))
            return
        self.user = user
        repl = params.get("replication", "false").lower()
        if repl == "database":
            self.replication = "database"
        elif repl in ("true", "on", "yes", "1"):
            self.replication = "physical"
        elif repl in ("false", "off", "no", "0"):
            self.replication = "false"
        else:
            self.fatal(ServerError("22023", f'invalid value for parameter "replication": "{params["replication"]}"',
                                   hint="Valid values are: \"false\", 0, \"true\", 1, \"database\"."))
            return
        if self.server.clock() < self.server.down_until:
            self.fatal(ServerError("57P03", "the database system is starting up"))
            return
        if self.too_many:
            # backend_startup.c ProcessStartupPacket, CAC_TOOMANY
            self.fatal(ServerError("53300", "sorry, too many clients already"))
            return
        db = params.get("database") or user
        if self.replication != "physical":
            if db != self.server.scenario.server.database:
                self.fatal(ServerError("3D000", f'database "{db}" does not exist'))
                return
            self.database = db
        auth = self.server.scenario.auth
        refuse = False
        for i in self.server.faults.for_connection(params, "auth"):
            if self.server.faults.fire(i):
                refuse = True
                self._record(event="fault:refuse_auth")
        self.auth = Authenticator(auth.method, user, auth.passwords, self.server.secrets, refuse=refuse,
                                  random_bytes=self.server.random_bytes)
        self.phase = "auth"
        # Password and SASL messages: at most PG_MAX_AUTH_TOKEN_LENGTH (auth.c).
        self.reader.max_message_length = self.server.limits.max_auth_message_length + 4
        try:
            step = self.auth.start()
        except ServerError as err:
            self.fatal(err)
            return
        self._auth_step(step)

    def _negotiate(self, msg: StartupMessage) -> None:
        """The protocol version: the one asked for, at most the major's newest minor; a
        newer minor or ``_pq_.`` options (none known) are answered by
        NegotiateProtocolVersion (backend_startup.c ProcessStartupPacket,
        SendNegotiateProtocolVersion; erratum E-NEGOTIATE-VERSION). From 3.2 the cancel key
        is the major's longer one."""
        table = self.server.persona.table
        version = PROTOCOL_3_0 | min(msg.minor, table.protocol_minor)
        options = tuple(k for k, _ in msg.parameters if k.startswith("_pq_."))
        if msg.minor > table.protocol_minor or options:
            self.send(NegotiateProtocolVersion(version, options))
        self.protocol_version = version
        if version >= PROTOCOL_3_2:
            self.secret = self.server.random_bytes(table.cancel_key_length)

    def _auth_step(self, step: AuthStep) -> None:
        if step.kind == "ok":
            self.send(AuthenticationOk())
            self._welcome()
            return
        if step.kind == "cleartext":
            self.send(AuthenticationCleartextPassword())
        elif step.kind == "md5":
            self.send(AuthenticationMD5Password(step.data))
        elif step.kind == "sasl":
            self.send(AuthenticationSASL((step.data.decode(),)))
        elif step.kind == "sasl-continue":
            self.send(AuthenticationSASLContinue(step.data))
        elif step.kind == "sasl-final":
            self.send(AuthenticationSASLFinal(step.data))
            self.send(AuthenticationOk())
            self._welcome()
            return
        assert step.expect is not None
        self.reader.expect_password(step.expect)  # type: ignore[arg-type]

    def _auth_message(self, msg: Any) -> None:
        assert self.auth is not None
        try:
            if isinstance(msg, PasswordMessage):
                step = self.auth.password(msg.password)
            elif isinstance(msg, SASLInitialResponse):
                step = self.auth.sasl_initial(msg.mechanism, msg.data)
            elif isinstance(msg, SASLResponse):
                step = self.auth.sasl_response(msg.data)
            elif isinstance(msg, Terminate):
                self.close_action = Close()
                return
            else:
                raise ServerError("08P01", f"expected password response, got message type {ord(msg.tag)}",
                                  severity="FATAL")
        except ServerError as err:
            self.fatal(err)
            return
        self._auth_step(step)

    def _welcome(self) -> None:
        sc = self.server.scenario.server
        extra = dict(sc.parameters)
        enc = self.params.get("client_encoding", sc.encoding)
        if enc.upper().replace("-", "").replace("_", "") in ("UTF8", "UNICODE"):
            enc = "UTF8"
        for name, value in self.server.persona.parameter_status(
                version=self.server.version, user=self.user,
                application_name=self.params.get("application_name", ""),
                client_encoding=enc, server_encoding=sc.encoding):
            self.send(ParameterStatus(name, extra.pop(name, value)))
        for name, value in extra.items():
            self.send(ParameterStatus(name, value))
        self.send(BackendKeyData(self.pid, self.secret))
        self.reader.max_message_length = self.server.limits.max_message_length + 4
        self.phase = "ready"
        self._ready()

    def _ready(self) -> None:
        self.send(ReadyForQuery(self.tx))
