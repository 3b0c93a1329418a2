"""The reference pgoutput decoder: stateless ``decode_message`` and stateful ``PgOutputDecoder``."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from .._codegen import READS, TupleValues
from ..errors import DecodeError, OptionError
from . import _catalogue, _state
from . import messages as m
from ._codec import _DECODERS, _EAGER_DECODERS, BAD_INPUT, decode_payload, explain_payload

_STREAM = _state.STREAM
_RELATION = ord(m.Relation.tag)
_BEGIN = m.Begin
#: Relation messages a decoder remembers by their bytes, at most (then it starts again)
_RELATION_MEMO_SIZE = 1024
#: The messages with TupleData, whose values the Python decoders decode on first access
_ROW_TAGS = tuple(ord(c.tag) for c in (m.Insert, m.Update, m.Delete))
#: Rows a decoder watches to learn whether its reader reads their values (_adapt), and how
#: many more it then decodes at once before it watches again
_WINDOW = 256
_EAGER_SPAN = 64 * _WINDOW
_LAZY = TupleValues

__all__ = ["PgOutputDecoder", "decode_message", "normalize_streaming", "Streaming", "DECODER_OPTIONS",
           "decoder_options"]

#: The options that change how a pgoutput stream reads (PgOutputDecoder's keywords, strict
#: aside); every context type that makes a decoder hands over these, by these names.
DECODER_OPTIONS = ("protocol_version", "streaming", "two_phase", "binary", "messages")


def decoder_options(context: Any) -> dict[str, Any]:
    """``PgOutputDecoder(**decoder_options(x))`` for any object with those attributes."""
    return {name: getattr(context, name) for name in DECODER_OPTIONS}

Streaming = Literal["off", "on", "parallel"]

#: Messages that only exist from a protocol version on, and the options that make a server
#: send them; the flags bytes that must be 0: both from the catalogue.
_NEEDS = _catalogue.NEEDS
_FLAG_ZERO = _catalogue.FLAGS_ZERO
_OPTION_PROTOCOL = _catalogue.OPTION_PROTOCOL


def normalize_streaming(value: str | bool | None) -> Streaming:
    """``True``/``"on"`` -> ``"on"``; ``False``/``None``/``"off"`` -> ``"off"``; ``"parallel"``."""
    if value is True or value == "on" or value == "true":
        return "on"
    if value is False or value is None or value == "off" or value == "false":
        return "off"
    if value == "parallel":
        return "parallel"
    raise OptionError(f"streaming must be 'off', 'on' or 'parallel', found {value!r}")


def _check_options(protocol_version: int, streaming: str, two_phase: bool) -> None:
    if protocol_version not in (1, 2, 3, 4):
        raise OptionError(f"protocol_version must be 1 to 4, found {protocol_version!r}")
    needs = _OPTION_PROTOCOL["streaming"]
    if streaming == "on" and protocol_version < needs:
        raise OptionError(f"streaming needs protocol_version >= {needs}")
    needs = _catalogue.PARALLEL_PROTOCOL
    if streaming == "parallel" and protocol_version < needs:
        raise OptionError(f"streaming = parallel needs protocol_version >= {needs}")
    needs = _OPTION_PROTOCOL["two_phase"]
    if two_phase and protocol_version < needs:
        raise OptionError(f"two_phase needs protocol_version >= {needs}")


def decode_message(
    payload: bytes,
    *,
    protocol_version: int = 1,
    streaming: str | bool = "off",
    in_stream: bool = False,
) -> m.PgOutputMessage:
    """Decode one pgoutput payload without sequence state.

    ``in_stream`` says whether the message sits between Stream Start and Stream Stop (then
    R Y I U D T M carry an xid prefix); ``streaming="parallel"`` makes Stream Abort carry its
    abort LSN and time. Raises :class:`DecodeError` for anything that is not a message.
    """
    if in_stream is False and streaming == "off" and protocol_version in (1, 2, 3, 4):
        abort_tail = False  # the default context, valid as it is (no cache lookup)
    else:
        abort_tail = _abort_tail(protocol_version, streaming, in_stream)
    if type(payload) is not bytes:
        payload = bytes(payload)
    try:
        # an empty payload (IndexError) or an unknown tag (KeyError) is explained below too
        return _DECODERS[payload[0]](payload, in_stream, abort_tail)  # type: ignore[no-any-return]
    except BAD_INPUT:
        pass  # decoded once by the fast path (bad bytes): now explained once
    return explain_payload(payload, in_stream, abort_tail)


@functools.lru_cache(maxsize=64)
def _abort_tail(protocol_version: int, streaming: str | bool, in_stream: bool) -> bool:
    """Validate a decoding context once; the answer is whether Stream Abort has its tail."""
    mode = normalize_streaming(streaming)
    _check_options(protocol_version, mode, False)
    needs = _catalogue.CONDITION_PROTOCOL["in_stream"]
    if in_stream and protocol_version < needs:
        raise OptionError(f"in_stream needs protocol_version >= {needs}")
    return mode == "parallel"


#: Every transition of _state.TRANSITIONS with what the decoder's tables hold for it:
#: (state, tag, next state, tag byte, in a streamed block, next state or None to stay).
_TRANSITION_ROWS: tuple[tuple[str, str, str, int, bool, str | None], ...] = tuple(
    (state, tag, nxt, ord(tag), state == _STREAM, None if nxt == state else nxt)
    for (state, tag), nxt in _state.TRANSITIONS.items()
)
_TRANSITION_TAGS: tuple[str, ...] = tuple(dict.fromkeys(tag for _, tag in _state.TRANSITIONS))


@functools.lru_cache(maxsize=64)
def _not_negotiated(protocol_version: int, streaming: str, two_phase: bool, messages: bool) -> frozenset[str]:
    """The tags a server sends only under options these did not ask for (the catalogue's
    needs)."""
    enabled = {"streaming": streaming != "off", "two_phase": two_phase, "messages": messages}
    return frozenset(
        tag for tag, (version, options) in _NEEDS.items()
        if protocol_version < version or not all(enabled.get(o, False) for o in options)
    )


class PgOutputDecoder:
    """Decode a sequence of pgoutput payloads, checking it as a server would produce it.

    Tracks the streamed block (so the xid prefix is read exactly when present), the
    relation cache (DML after its Relation, tuple arity equal to the relation's columns),
    transaction nesting (Begin/Commit, Begin Prepare/Prepare, Stream Start/Stop/Commit/Abort
    with interleaved xids) and the options negotiated with START_REPLICATION.

    With ``strict=True`` a violation raises :class:`DecodeError` and leaves the decoder as it
    was; with ``strict=False`` it is appended to :attr:`warnings` and decoding goes on.
    Malformed bytes raise in both modes: there is no message to go on with.
    """

    def __init__(
        self,
        protocol_version: int = 1,
        streaming: str | bool = "off",
        two_phase: bool = False,
        binary: bool = False,
        messages: bool = False,
        strict: bool = True,
    ) -> None:
        self.protocol_version = protocol_version
        self.streaming: Streaming = normalize_streaming(streaming)
        self.two_phase = bool(two_phase)
        self.binary = bool(binary)
        self.messages = bool(messages)
        self.strict = bool(strict)
        _check_options(protocol_version, self.streaming, self.two_phase)
        self._abort_tail = self.streaming == "parallel"
        #: Violations seen in non-strict mode (and erratum notes in both modes).
        self.warnings: list[DecodeError] = []
        self._relations: dict[int, m.Relation] = {}
        #: Type messages by type OID.
        self.types: dict[int, m.Type] = {}
        #: Streamed transactions started and not yet committed, aborted or prepared.
        self.open_streams: set[int] = set()
        self._stream_xid: int | None = None
        #: The message that moved the decoder into its state: the Begin or Begin Prepare
        #: that Commit and Prepare are checked against
        self._opened_by: m.PgOutputMessage | None = None
        self._index = 0
        #: [rows left in this window, READS when it began, values decoded at once]
        self._window: list[Any] = [_WINDOW, READS[0], False]
        self._checks = {
            "B": self._on_begin,
            "b": self._on_begin,
            "C": self._on_commit,
            "P": self._on_prepare,
            "R": self._on_relation,
            "Y": self._on_type,
            "I": self._on_insert(),
            "U": self._on_update(),
            "D": self._on_delete(),
            "T": self._on_truncate,
            "M": self._on_message,
            "S": self._on_stream_start,
            "E": self._on_stream_stop,
            "c": self._on_stream_end,
            "A": self._on_stream_abort,
            "p": self._on_stream_end,
            "K": self._check_flags,
            "r": self._check_flags,
        }
        # Binary values are refused by the generated decoder itself when not negotiated
        # (strict); a lenient decoder accepts them and records a warning.
        self._binary_ok = self.binary or not self.strict
        self._lenient_binary = not self.binary and not self.strict
        if self._lenient_binary:
            for tag, fields in (("I", ("new_tuple",)), ("U", ("old_tuple", "new_tuple")),
                                ("D", ("old_tuple",))):
                self._checks[tag] = self._with_binary_check(self._checks[tag], fields)
        #: (state -> tag -> (next state, checks)), from _state.TRANSITIONS and the options.
        self._table: dict[str, dict[str, tuple[str, Any]]] = {s: {} for s in _state.STATES}
        #: (state -> tag byte -> (decoder, in_stream, checks, next state or None to stay)):
        #: what decode() needs, in one lookup.
        self._fast: dict[str, dict[int, tuple[Any, bool, Any, str | None]]] = {s: {} for s in _state.STATES}
        # each tag's checks once, each transition's constants from a table made at import
        missing = _not_negotiated(protocol_version, self.streaming, self.two_phase, self.messages)
        handlers = {tag: self._handler(tag, tag in missing) for tag in _TRANSITION_TAGS}
        table, fast = self._table, self._fast
        #: Relation messages already decoded, by their bytes (outside, inside a streamed block)
        self._relation_memo: tuple[dict[bytes, m.Relation], dict[bytes, m.Relation]] = ({}, {})
        decoders = {**_DECODERS, _RELATION: self._relation_decoder(_DECODERS[_RELATION])}
        on_begin = self._on_begin
        for state, tag, nxt, byte, in_stream, stay in _TRANSITION_ROWS:
            handler = handlers[tag]
            table[state][tag] = (nxt, handler)
            # a Begin's check is what decode() does on a change of state: no call for it
            fast[state][byte] = (decoders[byte], in_stream,
                                 None if handler == on_begin and stay is not None else handler, stay)
        self.state = _state.IDLE

    def _relation_decoder(self, decode: Any) -> Any:
        """*decode* for Relation messages, remembering them by their bytes: a server sends a
        relation's schema again, unchanged, in every streamed transaction and after cache
        invalidations (maybe_send_schema in src/backend/replication/pgoutput/pgoutput.c), and
        a message is frozen, so the one decoded before is the answer."""
        outside, inside = self._relation_memo

        def relation(payload: Any, in_stream: bool, abort_tail: bool, binary_ok: bool) -> Any:
            memo = inside if in_stream else outside
            msg = memo.get(payload) if type(payload) is bytes else None
            if msg is None:
                msg = decode(payload, in_stream, abort_tail, binary_ok)
                if type(payload) is bytes:
                    if len(memo) >= _RELATION_MEMO_SIZE:
                        memo.clear()
                    memo[payload] = msg
            return msg

        return relation

    def _adapt(self) -> None:
        """At the end of a window of rows: the Python decoders decode a row's values on
        first access, which a reader that skips rows never pays for and one that reads
        every value pays as a second walk of the row. When nearly every row of a window
        was read, decode values at once for a while, then watch a window again. Only the
        speed changes: the values are equal either way."""
        win = self._window
        if _EAGER_DECODERS is _DECODERS:  # the C decoders: values always decoded at once
            win[0] = 1 << 62
            return
        eager = not win[2] and READS[0] - win[1] >= _WINDOW * 9 // 10
        if eager != win[2]:
            self._decode_rows_at_once(eager)
        win[:] = [_EAGER_SPAN if eager else _WINDOW, READS[0], eager]

    def _decode_rows_at_once(self, eager: bool) -> None:
        decoders = _EAGER_DECODERS if eager else _DECODERS
        for entries in self._fast.values():
            for byte in _ROW_TAGS:
                entry = entries.get(byte)
                if entry is not None:
                    entries[byte] = (decoders[byte], *entry[1:])

    @property
    def options(self) -> dict[str, Any]:
        """The keyword arguments that make an equal decoder."""
        return {**decoder_options(self), "strict": self.strict}

    @property
    def relations(self) -> dict[int, m.Relation]:
        """The relation cache: Relation messages by relation OID."""
        return self._relations

    @property
    def state(self) -> str:
        """The position in the stream: a state of ``_state.STATES``."""
        return self._state

    @state.setter
    def state(self, value: str) -> None:
        self._state = value
        self._here = self._fast[value]

    @property
    def in_stream(self) -> bool:
        """True between Stream Start and Stream Stop."""
        return self._state == _state.STREAM

    @property
    def index(self) -> int:
        """How many payloads this decoder has been given."""
        return self._index

    def _context(self) -> dict[str, Any]:
        return {
            "protocol_version": self.protocol_version,
            "streaming": self.streaming,
            "state": self.state,
        }

    # -- the public calls ------------------------------------------------------------------
    def decode(self, payload: bytes) -> m.PgOutputMessage:
        """Decode the next payload of the stream."""
        index = self._index
        self._index = index + 1
        msg: m.PgOutputMessage
        try:
            # (decoder, in_stream, checks, next state) of this tag in this state: one lookup
            fn, in_stream, check, nxt = self._here[payload[0]]
        except Exception:
            # empty, an unknown tag, or a message not legal here: not decoded yet
            msg = self._decode_slow(payload, index, explain_only=False)
        else:
            try:
                msg = fn(payload, in_stream, self._abort_tail, self._binary_ok)
            except BAD_INPUT:
                # bad bytes or non-UTF-8 text: the fast path ran once, explain it once
                msg = self._decode_slow(payload, index, explain_only=True)
            else:
                if check is not None:
                    check(msg, index)
                if nxt is not None:
                    self._state = nxt  # the state setter, inline
                    self._here = self._fast[nxt]
                    self._opened_by = msg
                return msg
        state = self._state
        entry = self._table[state].get(msg.tag)
        if entry is None:
            self._violation(
                "unexpected-message", f"one of {_state.EXPECTED[state]} in state {state}",
                f"{type(msg).__name__} ({msg.tag!r})", index, msg.tag,
            )
            # lenient: check the message as if it were legal, and stay in this state
            entry = (state, self._handler(msg.tag))
        nxt, check = entry
        if check is not None:
            check(msg, index)
        self.state = nxt
        return msg

    def _decode_slow(self, payload: bytes, index: int, explain_only: bool) -> m.PgOutputMessage:
        in_stream = self.state == _state.STREAM
        data = bytes(payload)
        try:
            if explain_only:
                return explain_payload(data, in_stream, self._abort_tail, self._binary_ok)
            return decode_payload(data, in_stream, self._abort_tail, self._binary_ok)
        except DecodeError as err:
            err.context.update(self._context())
            raise err.with_index(index) from None

    def _handler(self, tag: str, missing: bool | None = None) -> Any:
        """The checks of one message kind under this decoder's options (*missing*: whether
        it was not negotiated, when the caller knows)."""
        check = self._checks.get(tag)
        needs = _NEEDS.get(tag)
        if needs is None:
            return check
        if missing is None:
            missing = not self._negotiated(tag, needs)
        if not missing:
            return check

        def not_negotiated(msg: Any, index: int) -> None:
            self._check_negotiated(msg, needs, index)
            if check is not None:
                check(msg, index)

        return not_negotiated

    def _negotiated(self, tag: str, needs: tuple[int, tuple[str, ...]]) -> bool:
        version, options = needs
        enabled = all(getattr(self, option) not in (False, "off") for option in options)
        return self.protocol_version >= version and enabled

    def decode_all(self, payloads: Iterable[bytes]) -> Iterator[m.PgOutputMessage]:
        """Decode every payload in order; then :meth:`finish`."""
        for payload in payloads:
            yield self.decode(payload)
        self.finish()

    def reset(self) -> None:
        """Forget the stream and start a new one with the same options: the same as a new
        decoder, without building its tables again (conform decodes ~100k short streams)."""
        self.warnings = []
        self._relations.clear()  # the checks hold this dict: emptied, not replaced
        for memo in self._relation_memo:
            memo.clear()
        if self._window[2]:
            self._decode_rows_at_once(False)
        self._window[:] = [_WINDOW, READS[0], False]
        self.types.clear()
        self.open_streams.clear()
        self._stream_xid = None
        self._opened_by = None
        self._index = 0
        self.state = _state.IDLE

    def finish(self) -> None:
        """The stream ended: report a transaction or streamed block left open."""
        if self.state != _state.IDLE:
            self._violation(
                "unterminated-transaction", "the stream to end between transactions",
                f"it ended in state {self.state}", self._index, None,
            )
        elif self.open_streams and self.strict:
            # Streamed transactions may legitimately be committed after a restart; report
            # them but never raise for them.
            self.warnings.append(DecodeError(
                "unterminated-stream", expected="every streamed xid committed or aborted",
                found=f"open streamed xids {sorted(self.open_streams)}", index=self._index,
                context=self._context(),
            ))

    # -- violations --------------------------------------------------------------------------
    def _violation(
        self, rule: str, expected: str, found: str, index: int, tag: str | None,
        field: str | None = None,
    ) -> None:
        err = DecodeError(
            rule, expected=expected, found=found, index=index, tag=tag, field=field,
            context=self._context(),
        )
        if self.strict:
            try:
                raise err
            finally:  # the traceback holds this frame: no cycle through the local
                del err
        self.warnings.append(err)

    def _check_negotiated(
        self, msg: m.PgOutputMessage, needs: tuple[int, tuple[str, ...]], index: int
    ) -> None:
        version, options = needs
        # name the first option not asked for (Stream Prepare needs two)
        option = next((o for o in options if getattr(self, o) in (False, "off")), options[0])
        if msg.tag == "A" and self.streaming == "off":
            # Erratum E-PG18-STRAY-STREAM-ABORT: PostgreSQL 18 may send a Stream Abort for a
            # subtransaction to a client that never asked for streaming. Not an error.
            self.warnings.append(DecodeError(
                "stray-stream-abort", expected="no Stream Abort without streaming",
                found="a Stream Abort (PostgreSQL 18 sends these)", index=index, tag="A",
                context=self._context(),
            ))
            return
        self._violation(
            "message-not-negotiated",
            f"{option} enabled and protocol_version >= {version}",
            f"{type(msg).__name__} with {option}={getattr(self, option)!r}, "
            f"protocol_version={self.protocol_version}",
            index, msg.tag,
        )

    # -- per-message checks (run before the state changes) ------------------------------------
    def _on_begin(self, msg: Any, index: int) -> None:
        self._opened_by = msg

    def _on_commit(self, msg: Any, index: int) -> None:
        if msg.flags and self.strict:
            self._check_flags(msg, index)
        begin = self._opened_by
        if type(begin) is _BEGIN and begin.final_lsn != msg.commit_lsn:
            self._violation(
                "commit-lsn-mismatch", f"commit_lsn equal to Begin's final_lsn {begin.final_lsn}",
                str(msg.commit_lsn), index, msg.tag, "Commit.commit_lsn",
            )
        self._opened_by = None

    def _on_prepare(self, msg: Any, index: int) -> None:
        self._check_flags(msg, index)
        begin = self._opened_by
        if isinstance(begin, m.BeginPrepare) and (
            begin.prepare_lsn != msg.prepare_lsn or begin.gid != msg.gid or begin.xid != msg.xid
        ):
            self._violation(
                "prepare-mismatch",
                f"the Begin Prepare's prepare_lsn/xid/gid {begin.prepare_lsn}/{begin.xid}/{begin.gid!r}",
                f"{msg.prepare_lsn}/{msg.xid}/{msg.gid!r}", index, msg.tag,
            )
        self._opened_by = None

    def _on_relation(self, msg: Any, index: int) -> None:
        # Relations are re-sent, identical or changed, after cache invalidations: replace.
        self.relations[msg.relation_id] = msg

    def _on_type(self, msg: Any, index: int) -> None:
        self.types[msg.type_oid] = msg

    # The row checks run for every Insert, Update and Delete: closures over the relation
    # cache. Tuples are plain tuples (C codec) or TupleValues (Python codec), whose raw[2]
    # is its len() without a call to a Python __len__.
    def _on_insert(self) -> Any:
        relations = self._relations
        check_tuple = self._check_tuple
        win, adapt = self._window, self._adapt

        def on_insert(msg: Any, index: int) -> None:
            win[0] -= 1
            if not win[0]:
                adapt()
            new = msg.new_tuple
            try:
                if (new.raw[2] if type(new) is _LAZY else len(new)) == len(relations[msg.relation_id].columns):
                    return
            except KeyError:
                pass
            check_tuple(msg, relations.get(msg.relation_id), "new_tuple", new, index)

        return on_insert

    def _on_update(self) -> Any:
        relations = self._relations
        check_tuple = self._check_tuple
        check_full = self._check_full
        win, adapt = self._window, self._adapt

        def on_update(msg: Any, index: int) -> None:
            win[0] -= 1
            if not win[0]:
                adapt()
            rel = relations.get(msg.relation_id)
            ncols = -1 if rel is None else len(rel.columns)
            old = msg.old_tuple
            new = msg.new_tuple
            if (new.raw[2] if type(new) is _LAZY else len(new)) != ncols or (
                old is not None and (old.raw[2] if type(old) is _LAZY else len(old)) != ncols
            ):
                if old is not None:
                    check_tuple(msg, rel, "old_tuple", old, index)
                check_tuple(msg, rel, "new_tuple", new, index)
            if msg.old_kind == "O":
                check_full(msg, rel, index)

        return on_update

    def _on_delete(self) -> Any:
        relations = self._relations
        check_tuple = self._check_tuple
        check_full = self._check_full
        win, adapt = self._window, self._adapt

        def on_delete(msg: Any, index: int) -> None:
            win[0] -= 1
            if not win[0]:
                adapt()
            rel = relations.get(msg.relation_id)
            old = msg.old_tuple
            if rel is None or (old.raw[2] if type(old) is _LAZY else len(old)) != len(rel.columns):
                check_tuple(msg, rel, "old_tuple", old, index)
            if msg.old_kind == "O":
                check_full(msg, rel, index)

        return on_delete

    def _with_binary_check(self, check: Any, fields: tuple[str, ...]) -> Any:
        """*check*, then (lenient decoders without binary) a warning for any 'b' value."""

        def checked(msg: Any, index: int) -> None:
            check(msg, index)
            for name in fields:
                values = getattr(msg, name)
                if values is not None:
                    self._check_binary(msg, name, values, index)

        return checked

    def _check_tuple(self, msg: Any, rel: m.Relation | None, field: str, values: Any, index: int) -> None:
        name = type(msg).__name__
        if rel is None:
            self._violation(
                "unknown-relation", "a Relation message for this OID earlier in the stream",
                f"relation_id {msg.relation_id} never described", index, msg.tag, f"{name}.relation_id",
            )
        elif len(values) != len(rel.columns):
            self._violation(
                "column-count-mismatch",
                f"{len(rel.columns)} columns (relation {rel.namespace}.{rel.name})",
                f"{len(values)} columns", index, msg.tag, f"{name}.{field}",
            )

    def _check_binary(self, msg: Any, field: str, values: Any, index: int) -> None:
        # Only reached in lenient mode: strict decoders refuse 'b' values while decoding.
        for pos, value in enumerate(values):
            if type(value) is bytes:
                self._violation(
                    "binary-not-negotiated", "no 'b' value without binary = true", "a 'b' value",
                    index, msg.tag, f"{type(msg).__name__}.{field}[{pos}]",
                )
                return

    def _check_full(self, msg: Any, rel: m.Relation | None, index: int) -> None:
        if rel is not None and rel.replica_identity != "f":
            # Old tuples are sent only under REPLICA IDENTITY FULL (docs: Update, Delete).
            self._violation(
                "old-tuple-without-full-identity", "'O' only for REPLICA IDENTITY FULL",
                f"'O' for replica identity {rel.replica_identity!r}", index, msg.tag,
                f"{type(msg).__name__}.old_kind",
            )

    def _on_truncate(self, msg: Any, index: int) -> None:
        if self.strict and msg.options & ~3:
            self._violation(
                "invalid-value", "option bits 1 (CASCADE) and 2 (RESTART IDENTITY) only",
                str(msg.options), index, msg.tag, "Truncate.options",
            )
        for oid in msg.relation_ids:
            if oid not in self.relations:
                self._violation(
                    "unknown-relation", "a Relation message for each truncated relation",
                    f"relation_id {oid} never described", index, msg.tag, "Truncate.relation_ids",
                )
                break

    def _on_message(self, msg: Any, index: int) -> None:
        if msg.flags not in (0, 1):
            self._violation(
                "invalid-value", "flags 0 or 1", str(msg.flags), index, msg.tag,
                "LogicalMessage.flags",
            )
        if msg.transactional and self.state == _state.IDLE:
            self._violation(
                "transactional-message-outside-transaction",
                "a transactional logical message inside a transaction",
                "one between transactions", index, msg.tag,
            )

    def _on_stream_start(self, msg: Any, index: int) -> None:
        if msg.first_segment and msg.xid in self.open_streams:
            self._violation(
                "stream-xid-already-open", f"first_segment 0 for xid {msg.xid} (already streaming)",
                "first_segment 1", index, msg.tag, "StreamStart.first_segment",
            )
        elif not msg.first_segment and msg.xid not in self.open_streams:
            self._violation(
                "stream-xid-not-open", f"first_segment 1 for the first segment of xid {msg.xid}",
                "first_segment 0", index, msg.tag, "StreamStart.first_segment",
            )
        self.open_streams.add(msg.xid)
        self._stream_xid = msg.xid

    def _on_stream_stop(self, msg: Any, index: int) -> None:
        self._stream_xid = None

    def _on_stream_end(self, msg: Any, index: int) -> None:
        self._check_flags(msg, index)
        if msg.xid not in self.open_streams:
            self._violation(
                "stream-xid-not-open", f"one of the streamed xids {sorted(self.open_streams)}",
                f"xid {msg.xid}", index, msg.tag, f"{type(msg).__name__}.xid",
            )
        self.open_streams.discard(msg.xid)

    def _on_stream_abort(self, msg: Any, index: int) -> None:
        if msg.xid not in self.open_streams:
            if self.streaming == "off":
                return  # erratum E-PG18-STRAY-STREAM-ABORT, noted in _check_negotiated
            if msg.subtransaction_xid != msg.xid:
                # Erratum E-PG18-STRAY-STREAM-ABORT: 18 also sends it, for an xid it never
                # streamed, to a client that asked for streaming. Not an error.
                self.warnings.append(DecodeError(
                    "stray-stream-abort", expected="a Stream Abort of a streamed xid",
                    found=f"a Stream Abort of subtransaction {msg.subtransaction_xid} of xid {msg.xid}, "
                          "never streamed (PostgreSQL 18 sends these)",
                    index=index, tag="A", context=self._context(),
                ))
                return
            self._violation(
                "stream-xid-not-open", f"one of the streamed xids {sorted(self.open_streams)}",
                f"xid {msg.xid}", index, msg.tag, "StreamAbort.xid",
            )
        # A subtransaction abort (subxid != xid) leaves the transaction streaming: only its
        # changes are discarded (go-pq-cdc #166 discarded the whole xid and lost rows).
        if msg.subtransaction_xid == msg.xid:
            self.open_streams.discard(msg.xid)

    def _check_flags(self, msg: Any, index: int) -> None:
        if self.strict and type(msg) in _FLAG_ZERO and msg.flags != 0:
            self._violation(
                "nonzero-flags", "Int8(0) flags (\"currently unused\")", str(msg.flags), index,
                msg.tag, f"{type(msg).__name__}.flags",
            )

