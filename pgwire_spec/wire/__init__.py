"""The PostgreSQL frontend/backend protocol v3: the messages of a walsender conversation.

Messages are frozen, slotted dataclasses (:mod:`.messages`) laid out in one construct
grammar (:mod:`.grammar`, the message contents after the tag and length).
:func:`encode_message` writes a whole framed message; the sans-IO readers cut a byte
stream into messages:

>>> server_side = FrontendReader()            # reads what a client sends
>>> server_side.feed(encode_message(StartupMessage(parameters=(("user", "u"),))))
>>> server_side.next_event()
StartupMessage(protocol_version=196608, parameters=(('user', 'u'),))
>>> server_side.next_event()
NEED_DATA

``pgwire_spec.encode(message)`` and ``to_json``/``from_json`` cover these messages too.
"""

from __future__ import annotations

from typing import Literal

from .. import _ENCODERS
from .. import jsonform as _jsonform
from . import grammar as _grammar
from ._codec import NESTED as _NESTED
from ._codec import encode_message
from .messages import (
    ERROR_FIELD_CODES,
    MESSAGE_TYPES,
    PROTOCOL_3_0,
    PROTOCOL_3_2,
    AuthenticationCleartextPassword,
    AuthenticationMD5Password,
    AuthenticationOk,
    AuthenticationSASL,
    AuthenticationSASLContinue,
    AuthenticationSASLFinal,
    BackendKeyData,
    Bind,
    BindComplete,
    CancelRequest,
    Close,
    CloseComplete,
    CommandComplete,
    CopyBothResponse,
    CopyData,
    CopyDone,
    CopyFail,
    CopyInResponse,
    CopyOutResponse,
    DataRow,
    Describe,
    EmptyQueryResponse,
    ErrorResponse,
    Execute,
    FieldDescription,
    Flush,
    GSSENCRequest,
    GSSENCResponse,
    NegotiateProtocolVersion,
    NoData,
    NoticeResponse,
    ParameterDescription,
    ParameterStatus,
    Parse,
    ParseComplete,
    PasswordMessage,
    PortalSuspended,
    Query,
    ReadyForQuery,
    RowDescription,
    SASLInitialResponse,
    SASLResponse,
    SSLRequest,
    SSLResponse,
    StartupMessage,
    Sync,
    Terminate,
    WireMessage,
)
from .reader import (
    CLOSED,
    DEFAULT_MAX_MESSAGE_LENGTH,
    NEED_DATA,
    BackendReader,
    Closed,
    FrontendReader,
    NeedData,
    PasswordKind,
)

__all__ = [
    "encode_message",
    "decode_message",
    "FrontendReader",
    "BackendReader",
    "NEED_DATA",
    "CLOSED",
    "NeedData",
    "Closed",
    "PasswordKind",
    "DEFAULT_MAX_MESSAGE_LENGTH",
    "PROTOCOL_3_0",
    "PROTOCOL_3_2",
    "ERROR_FIELD_CODES",
    "WireMessage",
    "StartupMessage",
    "SSLRequest",
    "GSSENCRequest",
    "CancelRequest",
    "SSLResponse",
    "GSSENCResponse",
    "PasswordMessage",
    "SASLInitialResponse",
    "SASLResponse",
    "Query",
    "CopyData",
    "CopyDone",
    "CopyFail",
    "Terminate",
    "AuthenticationOk",
    "AuthenticationCleartextPassword",
    "AuthenticationMD5Password",
    "AuthenticationSASL",
    "AuthenticationSASLContinue",
    "AuthenticationSASLFinal",
    "ParameterStatus",
    "BackendKeyData",
    "NegotiateProtocolVersion",
    "ReadyForQuery",
    "FieldDescription",
    "RowDescription",
    "DataRow",
    "CommandComplete",
    "EmptyQueryResponse",
    "ErrorResponse",
    "NoticeResponse",
    "CopyInResponse",
    "CopyOutResponse",
    "CopyBothResponse",
    "Parse",
    "Bind",
    "Describe",
    "Execute",
    "Close",
    "Flush",
    "Sync",
    "ParseComplete",
    "BindComplete",
    "CloseComplete",
    "ParameterDescription",
    "NoData",
    "PortalSuspended",
]


def decode_message(
    data: bytes,
    sender: Literal["frontend", "backend"] = "backend",
    *,
    password: PasswordKind = "password",
) -> WireMessage:
    """Decode exactly one whole framed message (the inverse of :func:`encode_message`).

    For ``sender="frontend"``, bytes starting with a zero byte are a startup-phase packet
    (its length's high byte: startup packets are at most 10000 bytes), else a tagged
    message; a 'p' message is read as *password* says. SSLResponse and GSSENCResponse,
    single bytes, are read by :class:`BackendReader` only. Raises DecodeError for anything
    but exactly one message.
    """
    reader: FrontendReader | BackendReader
    if sender == "frontend":
        reader = FrontendReader()
        if data[:1] != b"\x00":
            reader._phase = "messages"  # a tagged message
        reader.expect_password(password)
    elif sender == "backend":
        reader = BackendReader()
    else:
        raise ValueError(f"expected sender 'frontend' or 'backend', found {sender!r}")
    reader.feed(bytes(data))
    reader.feed(b"")
    message = reader.next_event()
    if isinstance(message, (NeedData, Closed)):
        from ..errors import DecodeError

        raise DecodeError("truncated", expected="a message", found="no bytes", offset=0)
    rest = reader.buffered
    if rest:
        from ..errors import DecodeError

        raise DecodeError(
            "trailing-bytes", expected="the end of the message", found=f"{rest} more byte(s)",
            offset=reader.offset, index=1,
        )
    return message


# pgwire_spec.encode(message) for every message class, and the JSON forms.
for _cls in MESSAGE_TYPES.values():
    _ENCODERS[_cls] = encode_message
_jsonform.register(
    _grammar.LAYOUTS, {name: MESSAGE_TYPES[name] for name in _grammar.LAYOUTS}, _NESTED
)
_jsonform.register_plain(SSLResponse, {"accepted": "bool"})
_jsonform.register_plain(GSSENCResponse, {"accepted": "bool"})
