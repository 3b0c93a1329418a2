"""Specialised codecs generated from the construct grammar.

construct interprets a layout node by node (~9k Insert messages/s here); this module walks
the same layout objects once, at import, and emits straight-line Python that uses
precompiled ``struct.Struct`` objects and slices: the layouts stay the single source, and
``tests/pgoutput/test_codegen_differential.py`` proves the generated codec equal to construct's own parse and
build on generated data (hypothesis).

Three functions are generated per layout:

``decode(data, in_stream, abort_tail)``
    the fast path; any failure raises whatever Python raises (struct.error, IndexError, …).
``explain(data, in_stream, abort_tail, tr)``
    the same walk, reporting each field's path and offset to ``tr`` first; run only after
    the fast path failed, to turn the failure into a precise :class:`DecodeError`.
``encode(msg)``
    the message object to bytes; the xid prefix and other optional fields are written
    exactly when they are not None.

The generator reads each layout through the grammar's intermediate form
(:mod:`pgwire_spec._ir`), which knows the primitives by identity and construct's composite
nodes by class; a node it does not know is a programming error reported at import time.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from construct import Struct

from . import _ir
from . import _primitives as P
from .errors import DecodeError, EncodeError

__all__ = ["Codec", "Family", "generate", "decode_traced", "Tracer", "Fail"]


class Fail(Exception):
    """Raised by generated code for a semantic violation: (rule, expected, found)."""

    def __init__(self, rule: str, expected: str, found: str) -> None:
        super().__init__(rule, expected, found)
        self.rule, self.expected, self.found = rule, expected, found


class Tracer:
    """Receives (field path, offset, expectation) from an ``explain`` run."""

    __slots__ = ("field", "offset", "expected")

    def __init__(self) -> None:
        self.field = ""
        self.offset = 0
        self.expected = ""

    def __call__(self, field: str, offset: int, expected: str) -> None:
        self.field, self.offset, self.expected = field, offset, expected


@dataclass
class Codec:
    """The generated functions of one layout, and the source they were made from."""

    name: str
    cls: type
    decode: Callable[..., Any]
    explain: Callable[..., Any]
    encode: Callable[[Any], bytes]
    source: str = field(repr=False)
    fields: list[str] = field(default_factory=list)
    #: ``decode`` with TupleData values decoded at once, not on first access (the same
    #: function for a layout without TupleData)
    decode_eager: Callable[..., Any] | None = None


_FMT_NAMES = _ir.FMT_NAMES
_BYTEN = re.compile(r"Byte(?!1$)\d+")
_fmt = _ir.fmt
_size = _ir.size


def _cond(f: _ir.Field) -> str:
    """A field's presence condition as Python over the generated locals."""
    if f.when_field:
        return f"(f_{f.when} is not None)"
    return str(f.when)


def _derived(f: _ir.Field, names: set[str], obj: str) -> str:
    """A recomputed count's expression over the fields of *obj* (``len(m.relation_ids)``)."""
    return re.sub(r"\b(\w+)\b", lambda m: f"{obj}.{m[1]}" if m[1] in names else m[1], str(f.derived))


def _plain_int(f: _ir.Field) -> bool:
    """An integer field read and written as it is (no constant, condition or rebuild)."""
    return f.fmt is not None and f.const is None and not f.derived and f.when is None


class _Gen:
    def __init__(self, nested: dict[int, type], consts: dict[str, Any]) -> None:
        self.nested = nested
        self.consts = consts
        self.lines: list[str] = []
        self.counter = 0
        self.trace = False
        self.pending_count = False
        #: decode TupleData values on access (TupleValues), checking only their bounds now
        self.lazy_tuples = False

    # -- helpers -------------------------------------------------------------------------
    def const(self, prefix: str, value: Any) -> str:
        for k, v in self.consts.items():
            if k.startswith(prefix) and v is value:
                return k
        name = f"{prefix}{len(self.consts)}"
        self.consts[name] = value
        return name

    def struct_obj(self, fmt: str) -> str:
        key = "_S_" + fmt
        if key not in self.consts:
            self.consts[key] = struct.Struct(">" + fmt)
        return key

    def build(self, local: str, cls: type, fields: list[tuple[str, str]], indent: int) -> None:
        """Emit the making of a *cls* instance into *local* from (field, expression) pairs,
        without the frozen dataclass's ``__init__`` (one ``object.__setattr__`` call per
        field): a private twin class with the same slots takes the values by plain
        attribute stores, then the instance becomes a *cls* (``__class__`` assignment, which
        CPython allows between types of the same slot layout)."""
        twin = _twin(cls)
        if twin is None:  # not slotted: through the slot-less setattr path
            self.emit(indent, f"{local} = _new({self.const('_C_', cls)})")
            for n, expr in fields:
                self.emit(indent, f"_osa({local}, {n!r}, {expr})")
            return
        self.emit(indent, f"{local} = {self.const('_T_', twin)}()")
        for n, expr in fields:
            self.emit(indent, f"{local}.{n} = {expr}")
        self.emit(indent, f"{local}.__class__ = {self.const('_C_', cls)}")

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def tr(self, indent: int, path: str, expected: str) -> None:
        if self.trace:
            self.emit(indent, f"tr({path}, p, {expected!r})")

    # -- decode --------------------------------------------------------------------------
    def dec_struct(
        self, layout: _ir.Layout, indent: int, path: str, out: list[str], scope: str = "f_"
    ) -> None:
        """Emit the fields of *layout*; append the names of dataclass fields to *out*.

        Field ``x`` is read into the local ``{scope}x``; nested structs get their own scope.
        """
        subs = layout.all_fields
        i = 0
        while i < len(subs):
            # Runs of plain integers and one-byte constants are read with one struct call
            # (not when tracing); a TupleData right after the run has its count read too.
            run = []
            j = i
            while j < len(subs) and not self.trace and self._mergeable(subs[j], j):
                run.append(subs[j])
                j += 1
            # (a lone byte is read by indexing, cheaper than a struct call)
            if run and (len(run) > 1 or run[0].const is None and run[0].fmt != "B"):
                self.dec_run(run, subs[j] if j < len(subs) else None, indent, scope, out)
                i = j
                continue
            self.dec_field(subs[i], indent, path, out, scope)
            i += 1

    @staticmethod
    def _mergeable(f: _ir.Field, position: int) -> bool:
        if _plain_int(f):
            return True
        # the tag (position 0) is skipped by the dispatcher, not merged
        return isinstance(f.const, bytes) and len(f.const) == 1 and position > 0

    def dec_run(self, run: list[_ir.Field], following: _ir.Field | None, indent: int, scope: str,
                out: list[str]) -> None:
        fmt = ""
        names = []
        checks = []
        for k, f in enumerate(run):
            if isinstance(f.const, bytes):
                fmt += "B"
                names.append(f"c{k}")
                checks.append((f"c{k}", f.const))
            else:
                assert f.fmt is not None
                fmt += f.fmt
                names.append(f"{scope}{f.name}")
                out.append(f.name)
        self.pending_count = False
        if following is not None and following.type == "TupleData" and following.when is None:
            fmt += "H"
            names.append("cnt")
            self.pending_count = True
        comma = "," if len(names) == 1 else ""
        self.emit(indent, f"{', '.join(names)}{comma} = {self.struct_obj(fmt)}.unpack_from(data, p)")
        for local, value in checks:
            self.emit(indent, f"if {local} != {value[0]}:")
            self.emit(indent + 1, f"raise Fail('unexpected-byte', {value.decode('latin-1')!r}, repr(chr({local})))")
        self.emit(indent, f"p += {_size(fmt)}")

    def dec_field(
        self, f: _ir.Field, indent: int, path: str, out: list[str], scope: str = "f_"
    ) -> None:
        name = f.name
        fpath = f"{path} + '.{name}'" if path else repr(name)
        local = f"{scope}{name}"
        if f.const is not None:
            if isinstance(f.const, bytes):
                self.dec_const(f.const, indent, fpath)
            else:
                self.dec_const_value(f, indent, fpath)
            return
        if f.derived:
            self.dec_value(f, local, indent, fpath)
            return
        if f.when is not None:
            self.emit(indent, f"if {_cond(f)}:")
            self.dec_value(f, local, indent + 1, fpath)
            self.emit(indent, "else:")
            self.emit(indent + 1, f"{local} = None")
            out.append(name)
            return
        self.dec_value(f, local, indent, fpath)
        out.append(name)

    def dec_const(self, value: bytes, indent: int, fpath: str) -> None:
        self.tr(indent, fpath, f"Byte1({value.decode('latin-1')!r})")
        n = len(value)
        if fpath == "'tag'" and not self.trace and n == 1:
            # The dispatcher chose this decoder by the tag byte: nothing to check.
            self.emit(indent, "p += 1")
            return
        if n == 1:
            self.emit(indent, f"if data[p] != {value[0]}:")
            self.emit(indent + 1, f"raise Fail('unexpected-byte', {value.decode('latin-1')!r}, _found(data, p, 1))")
            self.emit(indent, "p += 1")
            return
        self.emit(indent, f"if data[p:p + {n}] != {value!r}:")
        self.emit(
            indent + 1,
            f"raise Fail('unexpected-byte' if len(data) >= p + {n} else 'truncated', "
            f"{value.decode('latin-1')!r}, _found(data, p, {n}))",
        )
        self.emit(indent, f"p += {n}")

    def dec_const_value(self, f: _ir.Field, indent: int, fpath: str) -> None:
        """A constant integer: ``Const(80877103, Int32)``, an authentication request code."""
        assert f.fmt is not None
        fmt = f.fmt
        label = f"{_FMT_NAMES[fmt]}({f.const})"
        self.tr(indent, fpath, label)
        self.emit(indent, f"v, = {self.struct_obj(fmt)}.unpack_from(data, p)")
        self.emit(indent, f"if v != {f.const!r}:")
        self.emit(indent + 1, f"raise Fail('unexpected-value', {label!r}, str(v))")
        self.emit(indent, f"p += {_size(fmt)}")

    def dec_value(self, f: _ir.Field, local: str, indent: int, fpath: str) -> None:
        e = self.emit
        t = f.type
        if f.fmt == "B":
            self.tr(indent, fpath, f"{_FMT_NAMES['B']} (1 byte)")
            e(indent, f"{local} = data[p]")
            e(indent, "p += 1")
        elif f.fmt is not None:
            fmt = f.fmt
            self.tr(indent, fpath, f"{_FMT_NAMES[fmt]} ({_size(fmt)} bytes)")
            e(indent, f"{local}, = {self.struct_obj(fmt)}.unpack_from(data, p)")
            e(indent, f"p += {_size(fmt)}")
        elif t == "String":
            self.tr(indent, fpath, "String (NUL-terminated)")
            self.dec_nul(indent)
            codec = "'utf-8', 'surrogateescape'" if self.trace else ""
            e(indent, f"{local} = data[p:q].decode({codec})")
            e(indent, "p = q + 1")
        elif t == "Byte1" and f.values is None:
            self.tr(indent, fpath, "Byte1")
            e(indent, f"{local} = chr(data[p])")
            e(indent, "p += 1")
        elif t == "Bool8":
            self.tr(indent, fpath, "Int8 0 or 1")
            e(indent, "v = data[p]")
            e(indent, "if v > 1:")
            e(indent + 1, "raise Fail('invalid-value', '0 or 1', str(v))")
            e(indent, f"{local} = v == 1")
            e(indent, "p += 1")
        elif t == "Byten32":
            self.dec_byten(local, indent, fpath, text=False)
        elif t == "RestBytes":
            e(indent, f"{local} = data[p:]")
            e(indent, "p = len(data)")
        elif t == "StringBytes":
            self.tr(indent, fpath, "String (NUL-terminated)")
            self.dec_nul(indent)
            e(indent, f"{local} = data[p:q]")
            e(indent, "p = q + 1")
        elif t == "NullableByten32":
            self.tr(indent, fpath + " + '.length'", "Int32 length, or -1 for NULL")
            e(indent, "ln, = _I32.unpack_from(data, p)")
            e(indent, "p += 4")
            e(indent, "if ln == -1:")
            e(indent + 1, f"{local} = None")
            e(indent, "else:")
            e(indent + 1, "if ln < 0 or p + ln > len(data):")
            e(indent + 2, "raise Fail('length-out-of-range', "
                          "f'-1 or a length from 0 to {len(data) - p}', str(ln))")
            e(indent + 1, f"{local} = data[p:p + ln]")
            e(indent + 1, "p += ln")
        elif _BYTEN.fullmatch(t):
            n = int(t[4:])
            self.tr(indent, fpath, f"Byte{n}")
            e(indent, f"{local} = data[p:p + {n}]")
            e(indent, f"if len({local}) != {n}:")
            e(indent + 1, f"raise Fail('truncated', 'Byte{n}', f'{{len(data) - p}} byte(s) left')")
            e(indent, f"p += {n}")
        elif t == "List":
            self.dec_terminated(f, local, indent, fpath)
        elif t == "TupleData":
            self.dec_tuple(local, indent, fpath)
        elif t == "Byte1" and f.optional:
            assert f.values is not None
            choices = list(f.values)
            codes = tuple(ord(c) for c in choices)
            self.tr(indent, fpath, f"optional Byte1 in {choices}")
            e(indent, f"if p < len(data) and data[p] in {codes!r}:")
            e(indent + 1, f"{local} = chr(data[p])")
            e(indent + 1, "p += 1")
            e(indent, "else:")
            e(indent + 1, f"{local} = None")
        elif t == "Byte1":
            assert f.values is not None
            choices = list(f.values)
            self.tr(indent, fpath, f"Byte1 in {choices}")
            e(indent, f"{local} = chr(data[p])")
            e(indent, f"if {local} not in {tuple(choices)!r}:")
            e(indent + 1, f"raise Fail('unexpected-byte', 'one of {''.join(choices)}', repr({local}))")
            e(indent, "p += 1")
        elif t == "Array" and f.count in _ir.TYPE_FMT:
            # a count of its own (PrefixedArray), read into f_count, then the items
            self.dec_value(_ir.item_field(f.count), "f_count", indent, fpath + " + '.count'")
            self.dec_array(f, "f_count", local, indent, fpath)
        elif t == "Array":
            self.dec_array(f, f"f_{f.count}", local, indent, fpath)
        else:
            raise TypeError(f"the code generator does not know {t} (field {f.name})")

    def dec_nul(self, indent: int) -> None:
        """``q``: where the String starting at ``p`` ends (its NUL). The fast path lets
        ``bytes.index`` raise (ValueError), the tracing pass says what is missing."""
        if not self.trace:
            self.emit(indent, "q = data.index(0, p)")
            return
        self.emit(indent, "q = data.find(0, p)")
        self.emit(indent, "if q < 0:")
        self.emit(indent + 1, "raise Fail('string-unterminated', 'a NUL-terminated String', "
                              "f'{len(data) - p} bytes with no NUL')")

    def dec_byten(self, local: str, indent: int, fpath: str, *, text: bool) -> None:
        e = self.emit
        self.tr(indent, fpath + " + '.length'", "Int32 length")
        e(indent, "ln, = i32(data, p)")
        e(indent, "p += 4")
        e(indent, "v = data[p:p + ln]")
        e(indent, "if len(v) != ln:")
        e(indent + 1, "raise Fail('length-out-of-range', "
                      "f'a length from 0 to {len(data) - p}', str(ln))")
        if text:
            # Fast path: strict UTF-8 (cheaper); text that is not UTF-8 fails here and is
            # decoded by the tracing path, which keeps every byte through surrogateescape.
            codec = "'utf-8', 'surrogateescape'" if self.trace else ""
            e(indent, f"{local} = v.decode({codec})")
        elif local != "v":
            e(indent, f"{local} = v")
        e(indent, "p += ln")

    def dec_tuple(self, local: str, indent: int, fpath: str) -> None:
        e = self.emit
        self.tr(indent, fpath + " + '.count'", "Int16 number of columns")
        if self.pending_count:
            self.pending_count = False  # read with the fields before it
        else:
            e(indent, "cnt, = _U16.unpack_from(data, p)")
            e(indent, "p += 2")
        if not self.trace:
            self.dec_tuple_walk(local, indent)
            return
        e(indent, "vals = []")
        e(indent, "app = vals.append")
        e(indent, "for ci in range(cnt):")
        i2 = indent + 1
        cpath = fpath + " + f'[{ci}]'"
        self.tr(i2, cpath + " + '.kind'", "Byte1 n, u, t or b")
        e(i2, "k = data[p]")
        e(i2, "p += 1")
        e(i2, "if k == 116:")  # 't'
        self.dec_byten("v", i2 + 1, cpath, text=True)
        e(i2 + 1, "app(v)")
        e(i2, "elif k == 110:")  # 'n'
        e(i2 + 1, "app(None)")
        e(i2, "elif k == 98:")  # 'b'
        e(i2 + 1, "if not binary_ok:")
        e(i2 + 2, "raise Fail('binary-not-negotiated', \"no 'b' value without binary = true\", \"a 'b' value\")")
        self.dec_byten("v", i2 + 1, cpath, text=False)
        e(i2 + 1, "app(v)")
        e(i2, "elif k == 117:")  # 'u'
        e(i2 + 1, "app(UNCHANGED)")
        e(i2, "else:")
        e(i2 + 1, "raise Fail('unknown-tuple-kind', 'n, u, t or b', _byte(k))")
        e(indent, f"{local} = tuple(vals)")

    def dec_tuple_walk(self, local: str, indent: int) -> None:
        """The fast path's TupleData: every kind byte and length checked now; the values
        decoded in the same walk, or (``lazy_tuples``) on first access (:class:`TupleValues`,
        by :func:`_tuple_values`).

        Lengths are read unsigned and not compared with what is left: a length past the end
        (or a negative one) moves ``p`` past it, and the next kind byte (IndexError) or the
        end-of-message check sends the payload to the tracing pass, which names the column.
        No count check either: every column moves ``p`` on by at least one byte, so a count
        past the end costs at most len(data) columns, allocating nothing."""
        e = self.emit
        lazy = self.lazy_tuples
        if lazy:
            e(indent, "s = p")
        else:
            e(indent, "vals = []")
            e(indent, "app = vals.append")
        e(indent, "for _ in range(cnt):")
        i2 = indent + 1
        e(i2, "k = data[p]")
        # (condition on k, the value kept, or None for a length-prefixed one: text, binary)
        kinds = [("k == 116", None, ".decode()"), ("k == 110", "None", ""), ("k == 117", "UNCHANGED", ""),
                 ("k == 98 and binary_ok", None, "")]
        if lazy:  # 'n' and 'u' alike: one byte, nothing kept
            kinds[1:3] = [("k == 110 or k == 117", "", "")]
        for n, (cond, value, text) in enumerate(kinds):
            e(i2, f"{'if' if n == 0 else 'elif'} {cond}:")
            if value is not None:
                if value:
                    e(i2 + 1, f"app({value})")
                e(i2 + 1, "p += 1")
            elif lazy:
                e(i2 + 1, "p += 5 + u32(data, p)[0]")
            else:
                e(i2 + 1, "q = p + 5 + u32(data, p)[0]")
                e(i2 + 1, f"app(data[p + 5:q]{text})")
                e(i2 + 1, "p = q")
        e(i2, "else:")  # an unknown kind, or 'b' not negotiated: the tracing pass says which
        e(i2 + 1, "raise Fail('unknown-tuple-kind', 'n, u, t or b', _byte(k))")
        if not lazy:
            e(indent, f"{local} = tuple(vals)")
            return
        e(indent, f"{local} = _new(_TV)")
        # the values are read later: from bytes, never from a buffer the caller may reuse
        e(indent, f"{local}.raw = (data if type(data) is bytes else bytes(data), s, cnt)")
        e(indent, f"{local}._values = None")

    def dec_array(self, f: _ir.Field, cexpr: str, local: str, indent: int, fpath: str) -> None:
        e = self.emit
        tag = self.counter = self.counter + 1
        arr = f"a{tag}"
        e(indent, f"{arr} = []")
        e(indent, f"for i{tag} in range({cexpr}):")
        ipath = fpath + f" + f'[{{i{tag}}}]'"
        self.dec_item(f.items, indent + 1, ipath, arr, tag)
        e(indent, f"{local} = tuple({arr})")

    def dec_item(self, item: Any, indent: int, ipath: str, arr: str, tag: int) -> None:
        """One item of an array or list, appended to *arr*: a nested layout becomes its
        dataclass, a Sequence a tuple, anything else its plain value."""
        e = self.emit
        if isinstance(item, _ir.Layout):
            cls = self.nested[id(item.struct)]
            names: list[str] = []
            scope = f"g{tag}_"
            self.dec_struct(item, indent, ipath, names, scope)
            if self.trace:
                args = ", ".join(f"{scope}{n}" for n in names)
                e(indent, f"{arr}.append({self.const('_C_', cls)}({args}))")
            else:
                self.build("x", cls, [(n, f"{scope}{n}") for n in names], indent)
                e(indent, f"{arr}.append(x)")
        elif isinstance(item, tuple):
            parts = []
            for k, sub in enumerate(item):
                part = f"s{tag}_{k}"
                self.dec_value(_ir.item_field(sub), part, indent, ipath + f" + '[{k}]'")
                parts.append(part)
            e(indent, f"{arr}.append(({', '.join(parts)},))")
        else:
            self.dec_value(_ir.item_field(item), "v", indent, ipath)
            e(indent, f"{arr}.append(v)")

    def dec_terminated(self, f: _ir.Field, local: str, indent: int, fpath: str) -> None:
        """TerminatedList: items until a zero byte where the next item would start."""
        e = self.emit
        tag = self.counter = self.counter + 1
        arr = f"a{tag}"
        e(indent, f"{arr} = []")
        e(indent, f"i{tag} = 0")
        e(indent, "while True:")
        ipath = fpath + f" + f'[{{i{tag}}}]'"
        self.tr(indent + 1, ipath, "an item, or a zero byte ending the list")
        e(indent + 1, "if data[p] == 0:")
        e(indent + 2, "p += 1")
        e(indent + 2, "break")
        self.dec_item(f.items, indent + 1, ipath, arr, tag)
        e(indent + 1, f"i{tag} += 1")
        e(indent, f"{local} = tuple({arr})")

    # -- encode --------------------------------------------------------------------------
    def enc_struct(self, layout: _ir.Layout, indent: int, obj: str) -> None:
        subs = layout.all_fields
        names = {f.name for f in subs}
        i = 0
        while i < len(subs):
            if _plain_int(subs[i]):
                run = []
                while i < len(subs) and _plain_int(subs[i]):
                    run.append(subs[i])
                    i += 1
                fmt = "".join(str(r.fmt) for r in run)
                args = ", ".join(f"{obj}.{r.name}" for r in run)
                self.emit(indent, f"out.append({self.struct_obj(fmt)}.pack({args}))")
                continue
            self.enc_field(subs[i], indent, obj, names)
            i += 1

    def enc_field(self, f: _ir.Field, indent: int, obj: str, names: set[str]) -> None:
        name = f.name
        value = f"{obj}.{name}"
        if f.const is not None:
            raw = f.const if isinstance(f.const, bytes) else struct.pack(">" + str(f.fmt), f.const)
            self.emit(indent, f"out.append({raw!r})")
        elif f.derived:
            self.emit(indent, f"out.append({self.struct_obj(str(f.fmt))}.pack({_derived(f, names, obj)}))")
        elif f.when is not None:
            self.emit(indent, f"if {value} is not None:")
            self.enc_value(f, value, indent + 1)
        else:
            self.enc_value(f, value, indent)

    def enc_value(self, f: _ir.Field, value: str, indent: int) -> None:
        e = self.emit
        t = f.type
        if f.fmt is not None:
            e(indent, f"out.append({self.struct_obj(f.fmt)}.pack({value}))")
        elif t == "String":
            e(indent, f"out.append(_str(({value})))")
        elif t == "Byte1" and f.optional:
            e(indent, f"if {value} is not None:")
            e(indent + 1, f"out.append(_char({value}))")
        elif t == "Byte1":
            e(indent, f"out.append(_char({value}))")
        elif t == "Bool8":
            e(indent, f"out.append(b'\\x01' if {value} else b'\\x00')")
        elif t == "Byten32":
            e(indent, f"v = bytes({value})")
            e(indent, "out.append(_I32.pack(len(v)))")
            e(indent, "out.append(v)")
        elif t == "RestBytes":
            e(indent, f"out.append(bytes({value}))")
        elif t == "StringBytes":
            e(indent, f"out.append(_strb({value}))")
        elif t == "NullableByten32":
            e(indent, f"if {value} is None:")
            e(indent + 1, "out.append(b'\\xff\\xff\\xff\\xff')")
            e(indent, "else:")
            e(indent + 1, f"v = bytes({value})")
            e(indent + 1, "out.append(_I32.pack(len(v)))")
            e(indent + 1, "out.append(v)")
        elif _BYTEN.fullmatch(t):
            n = int(t[4:])
            e(indent, f"v = bytes({value})")
            e(indent, f"if len(v) != {n}:")
            e(indent + 1, f"raise EncodeError(f'expected {n} bytes, found {{len(v)}}')")
            e(indent, "out.append(v)")
        elif t == "List":
            tag = self.counter = self.counter + 1
            e(indent, f"for x{tag} in {value}:")
            e(indent + 1, f"n{tag} = len(out)")
            self.enc_item(f.items, f"x{tag}", indent + 1)
            e(indent + 1, f"if b''.join(out[n{tag}:])[:1] in (b'', b'\\x00'):")
            e(indent + 2, "raise EncodeError(f'an item of a zero-terminated list cannot be "
                          f"empty or start with a zero byte: {{x{tag}!r}}')")
            e(indent, "out.append(b'\\x00')")
        elif t == "TupleData":
            e(indent, f"_tuple(out, {value})")
        elif t == "Array":
            if f.count in _ir.TYPE_FMT:
                e(indent, f"out.append({self.struct_obj(_ir.TYPE_FMT[f.count])}.pack(len({value})))")
            tag = self.counter = self.counter + 1
            e(indent, f"for x{tag} in {value}:")
            self.enc_item(f.items, f"x{tag}", indent + 1)
        else:
            raise TypeError(f"the code generator does not know {t} (field {f.name})")

    def enc_item(self, item: Any, x: str, indent: int) -> None:
        """One item of an array or list: a nested layout from its dataclass, a Sequence from
        a tuple of that many values, anything else as a plain value."""
        if isinstance(item, _ir.Layout):
            self.enc_struct(item, indent, x)
        elif isinstance(item, tuple):
            n = len(item)
            self.emit(indent, f"if len({x}) != {n}:")
            self.emit(indent + 1, f"raise EncodeError(f'expected {n} values in each item, "
                                  f"found {{len({x})}}: {{{x}!r}}')")
            for k, sub in enumerate(item):
                self.enc_value(_ir.item_field(sub), f"{x}[{k}]", indent)
        else:
            self.enc_value(_ir.item_field(item), x, indent)


def _found(data: bytes, p: int, n: int) -> str:
    chunk = data[p:p + n]
    if len(chunk) < n:
        return f"{len(data) - p} byte(s) left"
    return repr(chunk.decode("latin-1"))


def _byte(k: int) -> str:
    return f"0x{k:02x} ({chr(k)!r})"


def _str(value: str) -> bytes:
    raw = value.encode(P.ENCODING, P.ERRORS)
    if b"\x00" in raw:
        raise EncodeError(f"a String cannot contain NUL: {value!r}")
    return raw + b"\x00"


def _strb(value: bytes) -> bytes:
    raw = bytes(value)
    if b"\x00" in raw:
        raise EncodeError(f"a String cannot contain NUL: {raw!r}")
    return raw + b"\x00"


def _char(value: str) -> bytes:
    if not isinstance(value, str) or len(value) != 1:
        raise EncodeError(f"expected a one-character str, found {value!r}")
    return value.encode("latin-1")


_I32 = struct.Struct(">i")
_U16 = struct.Struct(">H")


def _tuple(out: list[bytes], values: Any) -> None:
    append = out.append
    append(_U16.pack(len(values)))
    for v in values:
        t = type(v)
        if t is str:
            try:
                raw = v.encode()  # strict UTF-8, the cheaper call; surrogates need the handler
            except UnicodeEncodeError:
                raw = v.encode(P.ENCODING, P.ERRORS)
            append(_KIND_LEN.pack(116, len(raw)) + raw)
        elif v is None:
            append(b"n")
        elif v is P.UNCHANGED:
            append(b"u")
        elif t is bytes or isinstance(v, (bytes, bytearray, memoryview)):
            raw = bytes(v)
            append(_KIND_LEN.pack(98, len(raw)))
            append(raw)
        elif isinstance(v, str):
            raw = v.encode(P.ENCODING, P.ERRORS)
            append(_KIND_LEN.pack(116, len(raw)))
            append(raw)
        else:
            raise EncodeError(
                f"a column value must be str, bytes, None or UNCHANGED, found {type(v).__name__}"
            )


_KIND_LEN = struct.Struct(">Bi")


def _encode_tuple(values: Any) -> bytes:
    out: list[bytes] = []
    _tuple(out, values)
    return b"".join(out)
#: a TupleData column's kind byte (skipped) and its length, read unsigned (see dec_tuple_bounds)
_KIND_U32 = struct.Struct(">xI")


def _generate_tuple_values() -> tuple[Callable[[bytes, int, int], tuple[Any, ...]], str]:
    """``values(data, p, cnt)``: the *cnt* values of a TupleData starting at *p*, whose
    kinds and lengths the fast path already checked (:meth:`_Gen.dec_tuple_bounds`), so
    this walk checks nothing. Text is decoded as the tracing pass decodes it (UTF-8, any
    other byte kept through surrogateescape): a lazy value equals the eager one."""
    g = _Gen({}, {})
    e = g.emit
    e(0, "def values(data, p, cnt):")
    e(1, "u32 = _U32_unpack")
    e(1, "vals = []")
    e(1, "app = vals.append")
    e(1, "for _ in range(cnt):")
    e(2, "k = data[p]")
    e(2, "if k == 116:")  # 't'
    e(3, "q = p + 5 + u32(data, p)[0]")
    e(3, "v = data[p + 5:q]")
    e(3, "try:")
    e(4, "app(v.decode())")
    e(3, "except UnicodeDecodeError:")
    e(4, "app(v.decode('utf-8', 'surrogateescape'))")
    e(3, "p = q")
    e(2, "elif k == 110:")  # 'n'
    e(3, "app(None)")
    e(3, "p += 1")
    e(2, "elif k == 98:")  # 'b'
    e(3, "q = p + 5 + u32(data, p)[0]")
    e(3, "app(data[p + 5:q])")
    e(3, "p = q")
    e(2, "else:")  # 'u', the only kind left
    e(3, "app(UNCHANGED)")
    e(3, "p += 1")
    e(1, "return tuple(vals)")
    source = "\n".join(g.lines)
    ns: dict[str, Any] = {"UNCHANGED": P.UNCHANGED, "_U32_unpack": _KIND_U32.unpack_from}
    exec(compile(source, "<pgwire_spec codec TupleData values>", "exec"), ns)
    return ns["values"], source


_tuple_values, TUPLE_VALUES_SOURCE = _generate_tuple_values()


#: How many TupleValues had their values decoded, ever (PgOutputDecoder compares it with the
#: rows it decoded, to decode values at once for a reader that reads them all).
READS = [0]


class TupleValues:
    """A TupleData's values as the generated Python decoder returns them: a read-only
    sequence equal to (and hashing like) the tuple of the values (``str`` for 't', ``bytes``
    for 'b', None for 'n', UNCHANGED for 'u'), whose column kinds and lengths were checked
    when the message was decoded and whose values are decoded on first access.

    ``len()`` needs no decoding; ``tuple(values)`` gives the plain tuple; pickling and
    copying give the plain tuple too. The C decoder returns plain tuples.
    """

    __slots__ = ("raw", "_values")

    #: Where the values are: (payload, offset of the first column, number of columns).
    #: ``raw[2]`` is ``len()`` without a call to a Python ``__len__`` (the stateful
    #: decoder's arity check, run for every row, reads it).
    raw: tuple[bytes, int, int]
    #: the values once decoded, else None
    _values: tuple[Any, ...] | None

    def __init__(self, values: Any = ()) -> None:
        values = tuple(values)
        self._values = values
        self.raw = (_encode_tuple(values), 2, len(values))

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # noqa: F811
        """``tuple``, so that ``isinstance(values, tuple)`` holds as for the C decoder's
        plain tuples (``type(values)`` stays TupleValues; C code that reads a real tuple's
        storage does not take it for one, and iterates it)."""
        return tuple

    def _decode(self) -> tuple[Any, ...]:
        READS[0] += 1
        data, p, cnt = self.raw
        values = self._values = _tuple_values(data, p, cnt)
        return values

    def __len__(self) -> int:
        return self.raw[2]

    def __iter__(self) -> Any:
        v = self._values
        if v is None:
            READS[0] += 1
            data, p, cnt = self.raw
            v = self._values = _tuple_values(data, p, cnt)
        return iter(v)

    def __reversed__(self) -> Any:
        v = self._values
        return reversed(v if v is not None else self._decode())

    def __getitem__(self, index: Any) -> Any:
        v = self._values
        return (v if v is not None else self._decode())[index]

    def __contains__(self, value: Any) -> bool:
        return value in self._plain(self)

    def index(self, value: Any, *args: Any) -> int:
        return self._plain(self).index(value, *args)

    def count(self, value: Any) -> int:
        return self._plain(self).count(value)

    @staticmethod
    def _plain(other: Any) -> Any:
        """The plain tuple of a TupleValues or a tuple, else None."""
        if type(other) is TupleValues:
            v = other._values
            return v if v is not None else other._decode()
        return other if isinstance(other, tuple) else None

    def __eq__(self, other: object) -> bool:
        plain = self._plain(other)
        return NotImplemented if plain is None else self._plain(self) == plain

    def __ne__(self, other: object) -> bool:
        plain = self._plain(other)
        return NotImplemented if plain is None else self._plain(self) != plain

    def __lt__(self, other: Any) -> bool:
        plain = self._plain(other)
        return NotImplemented if plain is None else self._plain(self) < plain

    def __le__(self, other: Any) -> bool:
        plain = self._plain(other)
        return NotImplemented if plain is None else self._plain(self) <= plain

    def __gt__(self, other: Any) -> bool:
        plain = self._plain(other)
        return NotImplemented if plain is None else self._plain(self) > plain

    def __ge__(self, other: Any) -> bool:
        plain = self._plain(other)
        return NotImplemented if plain is None else self._plain(self) >= plain

    def __hash__(self) -> int:
        return hash(self._plain(self))

    def __add__(self, other: Any) -> tuple[Any, ...]:
        plain = self._plain(other)
        return NotImplemented if plain is None else self._plain(self) + plain

    def __radd__(self, other: Any) -> tuple[Any, ...]:
        plain = self._plain(other)
        return NotImplemented if plain is None else plain + self._plain(self)

    def __repr__(self) -> str:
        return repr(self._plain(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (self._plain(self),))


Sequence.register(TupleValues)


_TWINS: dict[type, type | None] = {}


def _twin(cls: type) -> type | None:
    """A mutable class with *cls*'s slot layout (same base, same ``__slots__``) whose
    instances take plain attribute stores and can then become *cls* instances; None when
    CPython refuses the ``__class__`` assignment between them (no slots of its own, a
    ``__dict__``)."""
    if cls not in _TWINS:
        slots = cls.__dict__.get("__slots__")
        twin: type | None = None
        if isinstance(slots, tuple) and slots:
            twin = type(f"_{cls.__name__}Builder", (cls.__base__,), {"__slots__": slots, "__module__": __name__})
            try:
                twin().__class__ = cls  # made by calling it: cheaper than object.__new__
            except TypeError:
                twin = None
        _TWINS[cls] = twin
    return _TWINS[cls]


def _tidy(lines: list[str], trace: bool) -> list[str]:
    """Drop the prologue's work that a decoder does not need: the unpackers it never calls,
    and (fast path) ``p = 0`` then ``p += 1`` for the tag becomes ``p = 1``."""
    body = "\n".join(lines[3:])
    out = [lines[0]]
    if not trace and lines[3] == "    p += 1":
        out.append("    p = 1")
        rest = lines[4:]
    else:
        out.append(lines[1])
        rest = lines[3:]
    if "i32(" in body:
        out.append(lines[2])
    if "u32(" in body:
        out.append("    u32 = _U32_unpack")
    # A fixed-size message (one struct read after the tag): its length checked first, no
    # offset kept (Begin, Commit and the other hot fixed layouts).
    if (not trace and out[1] == "    p = 1" and len(rest) >= 3 and rest[0].endswith(".unpack_from(data, p)")
            and rest[1].startswith("    p += ") and rest[2] == "    if p != len(data):"
            and "p" not in re.findall(r"\b\w+\b", "\n".join(rest[4:]))):
        size = 1 + int(rest[1][len("    p += "):])
        out[1:2] = []
        rest = [rest[0].replace("(data, p)", "(data, 1)"), f"    if len(data) != {size}:",
                rest[3].replace("len(data) - p", f"len(data) - {size}"), *rest[4:]]
    return out + rest


def generate(name: str, layout: Struct, cls: type, nested: dict[int, type] | None = None) -> Codec:
    """Generate the codec of *layout*, producing instances of *cls*."""
    nested = nested or {}
    ns: dict[str, Any] = {
        "Fail": Fail,
        "EncodeError": EncodeError,
        "UNCHANGED": P.UNCHANGED,
        "_I32": _I32,
        "_I32_unpack": _I32.unpack_from,
        "_U16": _U16,
        "_found": _found,
        "_byte": _byte,
        "_str": _str,
        "_char": _char,
        "_strb": _strb,
        "_tuple": _tuple,
        "_new": object.__new__,
        "_osa": object.__setattr__,
        "_U32_unpack": _KIND_U32.unpack_from,
        "_TV": TupleValues,
    }
    consts: dict[str, Any] = {}
    lowered = _ir.lower(name, layout)
    sources = []
    fields: list[str] = []
    # the fast path with lazy TupleData values, the fast path decoding them at once, the
    # tracing pass
    for fn, trace, lazy in (("decode", False, True), ("decode_eager", False, False), ("explain", True, False)):
        g = _Gen(nested, consts)
        g.trace = trace
        g.lazy_tuples = lazy
        sig = "data, in_stream, abort_tail, binary_ok, tr" if trace else "data, in_stream, abort_tail, binary_ok=True"
        g.emit(0, f"def {fn}({sig}):")
        g.emit(1, "p = 0")
        g.emit(1, "i32 = _I32_unpack")
        names: list[str] = []
        g.dec_struct(lowered, 1, "", names)
        g.emit(1, "if p != len(data):")
        if trace:
            g.emit(2, "tr('', p, 'end of message')")
        g.emit(2, "raise Fail('trailing-bytes', 'end of message', "
                  "f'{len(data) - p} more byte(s)')")
        g.build("m", cls, [(n, f"f_{n}") for n in names], 1)
        g.emit(1, "return m")
        fields = names
        text = "\n".join(_tidy(g.lines, trace))
        if fn == "decode_eager" and text.replace("decode_eager(", "decode(", 1) == sources[0]:
            continue  # no TupleData: one fast path
        sources.append(text)
    g = _Gen(nested, consts)
    g.emit(0, "def encode(m):")
    g.emit(1, "out = []")
    g.enc_struct(lowered, 1, "m")
    g.emit(1, "return b''.join(out)")
    sources.append("\n".join(g.lines))
    ns.update(consts)
    source = "\n\n".join(sources)
    traced = next(text for text in sources if text.startswith("def explain("))
    exec(compile("\n\n".join(text for text in sources if text is not traced), f"<pgwire_spec codec {name}>",
                 "exec"), ns)
    return Codec(name, cls, ns["decode"], _explain_on_first_use(name, traced, ns), ns["encode"], source, fields,
                 ns.get("decode_eager", ns["decode"]))


def _explain_on_first_use(name: str, source: str, ns: dict[str, Any]) -> Callable[..., Any]:
    """The tracing pass of a codec, compiled when first called: it runs only on bad input
    (and to name a field), and compiling it was half of the generated code's compile time,
    paid at every start for each of the ~60 layouts."""
    compiled: list[Callable[..., Any]] = []

    def explain(data: Any, in_stream: bool, abort_tail: bool, binary_ok: bool, tr: Any) -> Any:
        if not compiled:
            exec(compile(source, f"<pgwire_spec codec {name} (tracing)>", "exec"), ns)
            compiled.append(ns["explain"])
        return compiled[0](data, in_stream, abort_tail, binary_ok, tr)

    return explain


def decode_traced(
    codec: Codec, data: bytes, in_stream: bool, abort_tail: bool, binary_ok: bool = True
) -> Any:
    """Run the tracing decoder: the message, or a precise DecodeError.

    Used when the fast path failed: to explain invalid input, and to decode text that is
    not valid UTF-8 (the fast path decodes strictly; this one keeps every byte through
    surrogateescape).
    """
    tr = Tracer()

    def field() -> str:
        return f"{codec.name}.{tr.field}".rstrip(".")

    try:
        return codec.explain(data, in_stream, abort_tail, binary_ok, tr)
    except Fail as f:
        raise DecodeError(
            f.rule, expected=f.expected, found=f.found, offset=tr.offset, field=field(),
            tag=_tag_of(data),
        ) from None
    except (struct.error, IndexError):
        left = max(len(data) - tr.offset, 0)
        raise DecodeError(
            "truncated", expected=tr.expected or "more bytes",
            found=f"{left} byte(s) left" if left else "end of message",
            offset=tr.offset, field=field(), tag=_tag_of(data),
        ) from None
    except Exception as other:  # pragma: no cover - a generator bug, reported as such
        raise DecodeError(
            "internal", expected="a decodable message", found=f"{type(other).__name__}: {other}",
            offset=tr.offset, field=field(), tag=_tag_of(data),
        ) from None


def explain_failure(
    codec: Codec, data: bytes, in_stream: bool, abort_tail: bool, exc: BaseException,
    binary_ok: bool = True,
) -> DecodeError:
    """The DecodeError that the tracing decoder finds in *data* (for callers that already
    know the input is bad)."""
    try:
        decode_traced(codec, data, in_stream, abort_tail, binary_ok)
    except DecodeError as err:
        return err
    return DecodeError(
        "internal", expected="fast and tracing decoders to agree",
        found=f"{type(exc).__name__}: {exc}", offset=0, field=codec.name, tag=_tag_of(data),
    )


def _tag_of(data: bytes) -> str | None:
    return chr(data[0]) if data else None




class Family:
    """The generated codecs of a family of tagged layouts (pgoutput, replication payloads):
    dispatch by the first byte, precise errors, and encoding by message class."""

    def __init__(
        self,
        what: str,
        layouts: dict[str, Struct],
        classes: dict[str, type],
        nested: dict[int, type] | None = None,
    ) -> None:
        self.what = what
        self.codecs = {name: generate(name, lay, classes[name], nested) for name, lay in layouts.items()}
        self.by_tag: dict[int, Codec] = {ord(c.cls.tag): c for c in self.codecs.values()}  # type: ignore[attr-defined]
        self.decoders = {tag: c.decode for tag, c in self.by_tag.items()}
        self.eager_decoders = {tag: c.decode_eager or c.decode for tag, c in self.by_tag.items()}
        self.encoders = {c.cls: c.encode for c in self.codecs.values()}
        self.layouts = layouts
        self.known_tags = " ".join(sorted(chr(t) for t in self.by_tag))

    def decode(
        self, data: bytes, in_stream: bool = False, abort_tail: bool = False, binary_ok: bool = True
    ) -> Any:
        """Decode one message; any failure becomes a precise DecodeError."""
        if not data:
            raise DecodeError(
                "truncated", expected=f"a {self.what} tag", found="an empty payload",
                offset=0, field="tag",
            )
        fn = self.decoders.get(data[0])
        if fn is None:
            raise DecodeError(
                "unknown-message-tag",
                expected=f"a {self.what} tag ({self.known_tags})",
                found=_byte(data[0]),
                offset=0,
                field="tag",
                tag=chr(data[0]),
            )
        try:
            return fn(data, in_stream, abort_tail, binary_ok)
        except (Fail, struct.error, ValueError, TypeError, IndexError, KeyError):
            pass
        return decode_traced(self.by_tag[data[0]], data, in_stream, abort_tail, binary_ok)

    def explain(
        self, data: bytes, in_stream: bool = False, abort_tail: bool = False, binary_ok: bool = True
    ) -> Any:
        """After a fast decoder failed on *data*: the tracing pass alone, which returns the
        message (text that is not UTF-8) or raises the precise DecodeError."""
        if not data or data[0] not in self.by_tag:
            return self.decode(data)  # raises: empty, or an unknown tag
        return decode_traced(self.by_tag[data[0]], data, in_stream, abort_tail, binary_ok)

    def encode(self, message: Any) -> bytes:
        """Encode a message object of this family."""
        try:
            fn = self.encoders[type(message)]
        except KeyError:
            raise EncodeError(f"not a {self.what}: {type(message).__name__}") from None
        try:
            return fn(message)
        except EncodeError:
            raise
        except (struct.error, TypeError, AttributeError, UnicodeError, OverflowError) as exc:
            raise EncodeError(
                f"cannot encode {type(message).__name__}: {self._field_hint(message, exc)}"
            ) from None

    def _field_hint(self, message: Any, exc: BaseException) -> str:
        """Name the field whose value does not fit its wire type."""
        name = type(message).__name__
        for f in _ir.lower(name, self.layouts[name]).all_fields:
            if not hasattr(message, f.name):
                continue
            value = getattr(message, f.name)
            if value is None or f.fmt is None or f.const is not None or f.derived:
                continue
            try:
                struct.pack(">" + f.fmt, value)
            except (struct.error, TypeError) as bad:
                return f"field {f.name}={value!r} does not fit {_FMT_NAMES[f.fmt]} ({bad})"
        return f"{type(exc).__name__}: {exc}"
