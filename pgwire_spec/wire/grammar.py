"""Frontend/backend protocol v3: the messages of a walsender conversation, as construct layouts.

The single source of these layouts. One definition per message, grouped by phase and in
the docs' alphabetical order within a group, with the docs' words ("Message Formats"
chapter of the Frontend/Backend Protocol) above it.

**What a layout describes: the message contents after the framing.** Every v3 message is
framed: a tagged message is ``Byte1`` tag, ``Int32`` length (counting itself, not the tag),
then the contents; a startup-phase message (StartupMessage, SSLRequest, GSSENCRequest,
CancelRequest) has no tag, only the ``Int32`` length. Tag and length are framing: the
readers (:mod:`pgwire_spec.wire.reader`) cut frames and check lengths, and
:func:`pgwire_spec.wire.encode_message` writes them; the tag lives on each message class
(``Query.tag == "Q"``). A layout here is exactly "the message contents" that follow the
length, so ``len(layout.build(...)) + 4`` is the length field.

Several messages share a tag: the authentication requests ('R') are told apart by their
leading ``Int32`` code, a ``Const`` in the layout (the readers dispatch on those leading
constants); PasswordMessage, SASLInitialResponse and SASLResponse ('p') cannot be told
apart by their bytes at all: "the exact message type can be deduced from the context",
so the server tells its reader which one comes next.

Field names here are the field names of the dataclasses in
:mod:`pgwire_spec.wire.messages`; ``code`` fields are constants and have no dataclass field.
"""

from __future__ import annotations

from construct import Bytes, Const, PrefixedArray, Sequence, Struct

from .._primitives import (
    Char,
    CharIn,
    Int8,
    Int16,
    Int32,
    NullableByten32,
    Oid,
    RestBytes,
    String,
    StringBytes,
    TerminatedList,
    UInt16,
    UInt32,
)

# Byte4: four bytes taken as they are (the MD5 salt).
Byte4 = Bytes(4)

# Counts of columns are Int16 in the docs; libpq reads them unsigned (pqGetInt), and so do
# we, so that every count the wire can carry decodes and re-encodes to the same bytes.
ColumnCount = UInt16

# =========================================================================================
# Startup phase (F, untagged: Int32 length, then the contents below)
# =========================================================================================

# CancelRequest (F): Int32(16) length; Int32(80877102) "The cancel request code. The value
# is chosen to contain 1234 in the most significant 16 bits, and 5678 in the least
# significant 16 bits."; Int32 "The process ID of the target backend."; Int32 (protocol 3.0)
# or Byten (3.2: "extends to the end of the message ... maximum key length is 256 bytes")
# "The secret key for the target backend."
CancelRequest = Struct(
    "code" / Const(80877102, Int32),
    "process_id" / Int32,
    "secret_key" / RestBytes,
)

# GSSENCRequest (F): Int32(8) length; Int32(80877104) "The GSSAPI Encryption request code.
# The value is chosen to contain 1234 in the most significant 16 bits, and 5680 in the
# least significant 16 bits."
GSSENCRequest = Struct(
    "code" / Const(80877104, Int32),
)

# SSLRequest (F): Int32(8) length; Int32(80877103) "The SSL request code. The value is
# chosen to contain 1234 in the most significant 16 bits, and 5679 in the least
# significant 16 bits."
SSLRequest = Struct(
    "code" / Const(80877103, Int32),
)

# StartupMessage (F): Int32 length; Int32(196608) "The protocol version number. The most
# significant 16 bits are the major version number (3 for the protocol described here). The
# least significant 16 bits are the minor version number." "The protocol version number is
# followed by one or more pairs of parameter name and value strings. A zero byte is
# required as a terminator after the last name/value pair." String "The parameter name.";
# String "The parameter value."
StartupMessage = Struct(
    "protocol_version" / Int32,
    "parameters" / TerminatedList(Sequence(String, String)),
)

# =========================================================================================
# Frontend, tagged (F)
# =========================================================================================

# Bind (F): Byte1('B') "Identifies the message as a Bind command."; String "The name of
# the destination portal (an empty string selects the unnamed portal)."; String "The name
# of the source prepared statement (an empty string selects the unnamed prepared
# statement)."; Int16 "The number of parameter format codes that follow (denoted C below).
# This can be zero to indicate that there are no parameters or that the parameters all use
# the default format (text); or one, in which case the specified format code is applied to
# all parameters; or it can equal the actual number of parameters."; Int16[C] "The
# parameter format codes. Each must presently be zero (text) or one (binary)."; Int16 "The
# number of parameter values that follow (possibly zero)."; then, for each, Int32 "The
# length of the parameter value, in bytes ... As a special case, -1 indicates a NULL
# parameter value." and Byten "The value of the parameter"; Int16 "The number of result-
# column format codes that follow (denoted R below)."; Int16[R] "The result-column format
# codes."
Bind = Struct(
    "portal" / String,
    "statement" / String,
    "parameter_formats" / PrefixedArray(ColumnCount, Int16),
    "parameters" / PrefixedArray(ColumnCount, NullableByten32),
    "result_formats" / PrefixedArray(ColumnCount, Int16),
)

# Close (F): Byte1('C') "Identifies the message as a Close command."; Byte1 "'S' to close a
# prepared statement; or 'P' to close a portal."; String "The name of the prepared
# statement or portal to close (an empty string selects the unnamed prepared statement or
# portal)."
Close = Struct(
    "kind" / CharIn("SP"),
    "name" / String,
)

# CopyData (F & B): Byte1('d') "Identifies the message as COPY data."; Byten "Data that
# forms part of a COPY data stream. Messages sent from the backend will always correspond
# to single data rows, but messages sent by frontends might divide the data stream
# arbitrarily." (In CopyBoth mode: one replication message, see pgwire_spec.replication.)
CopyData = Struct(
    "data" / RestBytes,
)

# CopyDone (F & B): Byte1('c') "Identifies the message as a COPY-complete indicator."
CopyDone = Struct()

# CopyFail (F): Byte1('f') "Identifies the message as a COPY-failure indicator."; String
# "An error message to report as the cause of failure."
CopyFail = Struct(
    "message" / String,
)

# Describe (F): Byte1('D') "Identifies the message as a Describe command."; Byte1 "'S' to
# describe a prepared statement; or 'P' to describe a portal."; String "The name of the
# prepared statement or portal to describe (an empty string selects the unnamed prepared
# statement or portal)."
Describe = Struct(
    "kind" / CharIn("SP"),
    "name" / String,
)

# Execute (F): Byte1('E') "Identifies the message as an Execute command."; String "The name
# of the portal to execute (an empty string selects the unnamed portal)."; Int32 "Maximum
# number of rows to return, if portal contains a query that returns rows (ignored
# otherwise). Zero denotes "no limit"."
Execute = Struct(
    "portal" / String,
    "max_rows" / Int32,
)

# Flush (F): Byte1('H') "Identifies the message as a Flush command."
Flush = Struct()

# Parse (F): Byte1('P') "Identifies the message as a Parse command."; String "The name of
# the destination prepared statement (an empty string selects the unnamed prepared
# statement)."; String "The query string to be parsed."; Int16 "The number of parameter
# data types specified (can be zero)."; Int32[N] "Specifies the object ID of the parameter
# data type. Placing a zero here is equivalent to leaving the type unspecified."
Parse = Struct(
    "statement" / String,
    "sql" / String,
    "parameter_types" / PrefixedArray(ColumnCount, Oid),
)

# PasswordMessage (F): Byte1('p') "Identifies the message as a password response. Note
# that this is also used for GSSAPI, SSPI and SASL response messages. The exact message
# type can be deduced from the context."; String "The password (encrypted, if requested)."
# Kept as bytes: the server compares it byte for byte, whatever its encoding.
PasswordMessage = Struct(
    "password" / StringBytes,
)

# Query (F): Byte1('Q') "Identifies the message as a simple query."; String "The query
# string itself."
Query = Struct(
    "sql" / String,
)

# SASLInitialResponse (F): Byte1('p') "Identifies the message as an initial SASL
# response."; String "Name of the SASL authentication mechanism that the client
# selected."; Int32 "Length of SASL mechanism specific "Initial Client Response" that
# follows, or -1 if there is no Initial Response."; Byten "SASL mechanism specific
# "Initial Response"."
SASLInitialResponse = Struct(
    "mechanism" / String,
    "data" / NullableByten32,
)

# SASLResponse (F): Byte1('p') "Identifies the message as a SASL response."; Byten "SASL
# mechanism specific message data."
SASLResponse = Struct(
    "data" / RestBytes,
)

# Sync (F): Byte1('S') "Identifies the message as a Sync command."
Sync = Struct()

# Terminate (F): Byte1('X') "Identifies the message as a termination."
Terminate = Struct()

# =========================================================================================
# Backend, tagged (B)
# =========================================================================================

# AuthenticationOk (B): Byte1('R') "Identifies the message as an authentication request.";
# Int32(0) "Specifies that the authentication was successful."
AuthenticationOk = Struct(
    "code" / Const(0, Int32),
)

# AuthenticationCleartextPassword (B): Byte1('R'); Int32(3) "Specifies that a clear-text
# password is required."
AuthenticationCleartextPassword = Struct(
    "code" / Const(3, Int32),
)

# AuthenticationMD5Password (B): Byte1('R'); Int32(5) "Specifies that an MD5-encrypted
# password is required."; Byte4 "The salt to use when encrypting the password."
AuthenticationMD5Password = Struct(
    "code" / Const(5, Int32),
    "salt" / Byte4,
)

# AuthenticationSASL (B): Byte1('R'); Int32(10) "Specifies that SASL authentication is
# required." "The message body is a list of SASL authentication mechanisms, in the
# server's order of preference. A zero byte is required as terminator after the last
# authentication mechanism name." String "Name of a SASL authentication mechanism."
AuthenticationSASL = Struct(
    "code" / Const(10, Int32),
    "mechanisms" / TerminatedList(String),
)

# AuthenticationSASLContinue (B): Byte1('R'); Int32(11) "Specifies that this message
# contains a SASL challenge."; Byten "SASL data, specific to the SASL mechanism being used."
AuthenticationSASLContinue = Struct(
    "code" / Const(11, Int32),
    "data" / RestBytes,
)

# AuthenticationSASLFinal (B): Byte1('R'); Int32(12) "Specifies that SASL authentication
# has completed."; Byten "SASL outcome "additional data", specific to the SASL mechanism
# being used."
AuthenticationSASLFinal = Struct(
    "code" / Const(12, Int32),
    "data" / RestBytes,
)

# BackendKeyData (B): Byte1('K') "Identifies the message as cancellation key data. The
# frontend must save these values if it wishes to be able to issue CancelRequest messages
# later."; Int32 "The process ID of this backend."; Int32 (3.0) or Byten (3.2: "This
# field extends to the end of the message, indicated by the length field") "The secret
# key of this backend."
BackendKeyData = Struct(
    "process_id" / Int32,
    "secret_key" / RestBytes,
)

# BindComplete (B): Byte1('2') "Identifies the message as a Bind-complete indicator."
BindComplete = Struct()

# CloseComplete (B): Byte1('3') "Identifies the message as a Close-complete indicator."
CloseComplete = Struct()

# CommandComplete (B): Byte1('C') "Identifies the message as a command-completed
# response."; String "The command tag. This is usually a single word that identifies
# which SQL command was completed." (Named command_tag here: ``tag`` is the message's
# Byte1 on every message class.)
CommandComplete = Struct(
    "command_tag" / String,
)

# CopyInResponse (B): Byte1('G') "Identifies the message as a Start Copy In response.";
# Int8 "0 indicates the overall COPY format is textual ... 1 indicates the overall copy
# format is binary"; Int16 "The number of columns in the data to be copied (denoted N
# below)."; Int16[N] "The format codes to be used for each column. Each must presently be
# zero (text) or one (binary). All must be zero if the overall copy format is textual."
CopyInResponse = Struct(
    "format" / Int8,
    "column_formats" / PrefixedArray(ColumnCount, Int16),
)

# CopyOutResponse (B): Byte1('H') "Identifies the message as a Start Copy Out response.
# This message will be followed by copy-out data."; then the same fields as CopyInResponse.
CopyOutResponse = Struct(
    "format" / Int8,
    "column_formats" / PrefixedArray(ColumnCount, Int16),
)

# CopyBothResponse (B): Byte1('W') "Identifies the message as a Start Copy Both response.
# This message is used only for Streaming Replication."; then the same fields. A walsender
# sends exactly format 0 and no columns (walsender.c, StartReplication).
CopyBothResponse = Struct(
    "format" / Int8,
    "column_formats" / PrefixedArray(ColumnCount, Int16),
)

# DataRow (B): Byte1('D') "Identifies the message as a data row."; Int16 "The number of
# column values that follow (possibly zero)." Next, for each column: Int32 "The length of
# the column value, in bytes (this count does not include itself). Can be zero. As a
# special case, -1 indicates a NULL column value. No value bytes follow in the NULL
# case."; Byten "The value of the column, in the format indicated by the associated format
# code."
DataRow = Struct(
    "values" / PrefixedArray(ColumnCount, NullableByten32),
)

# EmptyQueryResponse (B): Byte1('I') "Identifies the message as a response to an empty
# query string. (This substitutes for CommandComplete.)"
EmptyQueryResponse = Struct()

# ErrorResponse (B): Byte1('E') "Identifies the message as an error." "The message body
# consists of one or more identified fields, followed by a zero byte as a terminator.
# Fields can appear in any order." Byte1 "A code identifying the field type; if zero, this
# is the message terminator and no string follows." String "The field value."
ErrorResponse = Struct(
    "fields" / TerminatedList(Sequence(Char, String)),
)

# NegotiateProtocolVersion (B): Byte1('v') "Identifies the message as a protocol version
# negotiation message."; Int32 "Newest minor protocol version supported by the server for
# the major protocol version requested by the client." (E-NEGOTIATE-VERSION: servers send
# the whole version number, 196608 for 3.0, 196610 for 3.2); Int32 "Number of protocol
# options not recognized by the server." Then, for each: String "The option name."
NegotiateProtocolVersion = Struct(
    "newest_version" / Int32,
    "unrecognized" / PrefixedArray(UInt32, String),
)

# NoData (B): Byte1('n') "Identifies the message as a no-data indicator."
NoData = Struct()

# NoticeResponse (B): Byte1('N') "Identifies the message as a notice."; then the same
# fields as ErrorResponse.
NoticeResponse = Struct(
    "fields" / TerminatedList(Sequence(Char, String)),
)

# ParameterDescription (B): Byte1('t') "Identifies the message as a parameter
# description."; Int16 "The number of parameters used by the statement (can be zero)."
# Then, for each parameter: Int32 "Specifies the object ID of the parameter data type."
ParameterDescription = Struct(
    "parameter_types" / PrefixedArray(ColumnCount, Oid),
)

# ParameterStatus (B): Byte1('S') "Identifies the message as a run-time parameter status
# report."; String "The name of the run-time parameter being reported."; String "The
# current value of the parameter."
ParameterStatus = Struct(
    "name" / String,
    "value" / String,
)

# ParseComplete (B): Byte1('1') "Identifies the message as a Parse-complete indicator."
ParseComplete = Struct()

# PortalSuspended (B): Byte1('s') "Identifies the message as a portal-suspended indicator.
# Note this only appears if an Execute message's row-count limit was reached."
PortalSuspended = Struct()

# ReadyForQuery (B): Byte1('Z') "ReadyForQuery is sent whenever the backend is ready for a
# new query cycle."; Byte1 "Current backend transaction status indicator. Possible values
# are 'I' if idle (not in a transaction block); 'T' if in a transaction block; or 'E' if
# in a failed transaction block (queries will be rejected until block is ended)."
ReadyForQuery = Struct(
    "status" / CharIn("ITE"),
)

# RowDescription field: String "The field name."; Int32 "If the field can be identified as
# a column of a specific table, the object ID of the table; otherwise zero."; Int16 "... the
# attribute number of the column; otherwise zero."; Int32 "The object ID of the field's
# data type."; Int16 "The data type size (see pg_type.typlen). Note that negative values
# denote variable-width types."; Int32 "The type modifier (see pg_attribute.atttypmod).";
# Int16 "The format code being used for the field. Currently will be zero (text) or one
# (binary)."
FieldDescription = Struct(
    "name" / String,
    "table_oid" / Oid,
    "column_number" / Int16,
    "type_oid" / Oid,
    "type_size" / Int16,
    "type_modifier" / Int32,
    "format" / Int16,
)

# RowDescription (B): Byte1('T') "Identifies the message as a row description."; Int16
# "Specifies the number of fields in a row (can be zero)." Then, for each field, the above.
RowDescription = Struct(
    "fields" / PrefixedArray(ColumnCount, FieldDescription),
)

#: Startup-phase layouts (untagged), in the docs' order.
STARTUP_LAYOUTS: dict[str, Struct] = {
    "CancelRequest": CancelRequest,
    "GSSENCRequest": GSSENCRequest,
    "SSLRequest": SSLRequest,
    "StartupMessage": StartupMessage,
}

#: Tagged layouts a frontend sends (CopyData and CopyDone go both ways).
FRONTEND_LAYOUTS: dict[str, Struct] = {
    "Bind": Bind,
    "Close": Close,
    "CopyData": CopyData,
    "CopyDone": CopyDone,
    "CopyFail": CopyFail,
    "Describe": Describe,
    "Execute": Execute,
    "Flush": Flush,
    "Parse": Parse,
    "PasswordMessage": PasswordMessage,
    "Query": Query,
    "SASLInitialResponse": SASLInitialResponse,
    "SASLResponse": SASLResponse,
    "Sync": Sync,
    "Terminate": Terminate,
}

#: Tagged layouts a backend sends, in the docs' order.
BACKEND_LAYOUTS: dict[str, Struct] = {
    "AuthenticationOk": AuthenticationOk,
    "AuthenticationCleartextPassword": AuthenticationCleartextPassword,
    "AuthenticationMD5Password": AuthenticationMD5Password,
    "AuthenticationSASL": AuthenticationSASL,
    "AuthenticationSASLContinue": AuthenticationSASLContinue,
    "AuthenticationSASLFinal": AuthenticationSASLFinal,
    "BackendKeyData": BackendKeyData,
    "BindComplete": BindComplete,
    "CloseComplete": CloseComplete,
    "CommandComplete": CommandComplete,
    "CopyData": CopyData,
    "CopyDone": CopyDone,
    "CopyInResponse": CopyInResponse,
    "CopyOutResponse": CopyOutResponse,
    "CopyBothResponse": CopyBothResponse,
    "DataRow": DataRow,
    "EmptyQueryResponse": EmptyQueryResponse,
    "ErrorResponse": ErrorResponse,
    "NegotiateProtocolVersion": NegotiateProtocolVersion,
    "NoData": NoData,
    "NoticeResponse": NoticeResponse,
    "ParameterDescription": ParameterDescription,
    "ParameterStatus": ParameterStatus,
    "ParseComplete": ParseComplete,
    "PortalSuspended": PortalSuspended,
    "ReadyForQuery": ReadyForQuery,
    "RowDescription": RowDescription,
}

#: Every layout by its name (each message once).
LAYOUTS: dict[str, Struct] = {**STARTUP_LAYOUTS, **FRONTEND_LAYOUTS, **BACKEND_LAYOUTS}

#: Nested layouts that map to their own dataclass.
NESTED: dict[str, Struct] = {"FieldDescription": FieldDescription}
