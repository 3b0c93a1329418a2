"""C source of the optional pgoutput accelerator, generated from the construct grammar.

:mod:`pgwire_spec._codegen` turns each layout of :mod:`pgwire_spec.pgoutput.grammar` into
Python; this module reads the same layouts through the same intermediate form
(:mod:`pgwire_spec._ir`) and writes ``pgwire_spec/_speedups.c``: one C decoder per message. The grammar stays the single
source of every layout. Two writers for the fake walsender's cold streams come with it:
``encode_text_rows``, TupleData of text rows (from the layout the TupleData reader is
generated from; a Python encoder of one row stays the reference and encodes what it does
not), and ``xlog_frames``/``xlog_span``, a plan's logical XLogData frames in one pass
(what ``pgwire_spec.replication.frames`` packs one at a time; tested equal to it). The C file is committed, so that installing on a machine with a
compiler builds it without running anything first, and ``tests/pgoutput/test_speedups.py``
checks it is what the grammar generates today. After a grammar change::

    python -m pgwire_spec.pgoutput._cbuild          # rewrite pgwire_spec/_speedups.c
    python -m pgwire_spec.pgoutput._cbuild --check  # exit 1 if it is out of date
    pip install -e . --no-deps                      # rebuild the extension

Each generated ``decode_<Name>(data, in_stream, abort_tail, binary_ok=True)`` keeps the
contract of the Python fast path: it returns the message, an instance of the same frozen,
slotted dataclass whose slots it fills through the member offsets that ``setup`` reads from
the class, or it raises. On input it does not accept it raises the module's private
``Invalid`` and never guesses an error: the caller then runs the Python tracing decoder
(:func:`pgwire_spec._codegen.decode_traced`) for the precise :class:`DecodeError`, so error
behaviour is the Python codec's by construction. Every read is bounds-checked, and an item
count is checked against the bytes left (over the item's smallest size) before anything is
allocated for it.

Text ('t' values, Strings) is decoded as UTF-8 with ``surrogateescape``: what the Python
codec returns once its strict fast path has handed non-UTF-8 text to the tracing path.

The module also carries ``SOURCE_DIGEST``, a hash of the generated source; the codec uses
the extension only when that digest is the one the grammar generates now, so a build left
over from an older grammar is never used.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from construct import FocusedSeq, FormatField, Pass, Struct, Switch

from . import _ir
from . import _primitives as P

__all__ = ["generate_c", "source_digest", "SOURCE_PATH"]

#: The committed output of this generator.
SOURCE_PATH = Path(__file__).resolve().parent / "_speedups.c"

# Big-endian FormatField codes: (C type of the value, read from `s`, PyObject from `{v}`).
_INTS: dict[str, tuple[str, str, str]] = {
    "B": ("uint64_t", "(uint64_t)s[0]", "PyLong_FromLong((long){v})"),
    "b": ("int64_t", "(int64_t)(int8_t)s[0]", "PyLong_FromLong((long){v})"),
    "H": ("uint64_t", "(uint64_t)rd_u16(s)", "PyLong_FromLong((long){v})"),
    "h": ("int64_t", "(int64_t)(int16_t)rd_u16(s)", "PyLong_FromLong((long){v})"),
    "I": ("uint64_t", "(uint64_t)rd_u32(s)", "PyLong_FromUnsignedLong((unsigned long){v})"),
    "L": ("uint64_t", "(uint64_t)rd_u32(s)", "PyLong_FromUnsignedLong((unsigned long){v})"),
    "i": ("int64_t", "(int64_t)(int32_t)rd_u32(s)", "PyLong_FromLong((long){v})"),
    "l": ("int64_t", "(int64_t)(int32_t)rd_u32(s)", "PyLong_FromLong((long){v})"),
    "Q": ("uint64_t", "rd_u64(s)", "PyLong_FromUnsignedLongLong((unsigned long long){v})"),
    "q": ("int64_t", "(int64_t)rd_u64(s)", "PyLong_FromLongLong((long long){v})"),
}

#: Decoding context parameters (``this._params.X``), which are C arguments of the same name.
_PARAMS = _ir.PARAMS


def _fmt(node: FormatField) -> str:
    return _check_fmt(_ir.fmt(node))


def _check_fmt(code: str) -> str:
    if code not in _INTS:
        raise TypeError(f"the C generator does not know the format {code!r}")
    return code


_size = _ir.size


def _ident(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise TypeError(f"not usable as a C identifier: {name!r}")
    return name


class _Out:
    """Lines of C."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def text(self) -> str:
        return "\n".join(self.lines)


class _Scope:
    """The C locals of one struct being decoded (a message, or one nested item)."""

    def __init__(self) -> None:
        self.fields: list[str] = []  # dataclass fields, in order; local f_<name> each
        self.ints: dict[str, str] = {}  # integer C locals (counts): name -> format


class _CGen:
    def __init__(self, nested: dict[int, str]) -> None:
        self.nested = nested
        self.classes: dict[str, list[str]] = {}  # class name -> the slots it fills, in order
        self.helpers: list[str] = []  # decoders of nested structs, callees first
        self.item_funcs: dict[int, str] = {}
        self.tuple_data: str | None = None  # the TupleData reader, once used
        self.counter = 0

    # -- fields ----------------------------------------------------------------------------
    def struct_body(self, layout: _ir.Layout, out: _Out, scope: _Scope, top: bool) -> None:
        """The reads of *layout*'s fields from ``p``; a run of fixed-size fields is
        bounds-checked once."""
        subs = layout.all_fields
        i = 0
        while i < len(subs):
            run, j = 0, i
            while j < len(subs) and (size := self.fixed_size(subs[j])) is not None:
                run += size
                j += 1
            if j > i:
                names = ", ".join(subs[k].name for k in range(i, j))
                out(1, f"if (n - p < {run}) goto fail; /* {names} */")
                for k in range(i, j):
                    self.field(subs[k], out, scope, checked=True)
                i = j
            else:
                self.field(subs[i], out, scope, checked=False)
                i += 1

    @staticmethod
    def fixed_size(f: _ir.Field) -> int | None:
        """The size of a field that always takes the same number of bytes, else None."""
        if f.when is not None or f.optional:
            return None
        if isinstance(f.const, bytes):
            return len(f.const)
        if f.const is None and f.fmt is not None:
            return _size(f.fmt)
        if f.type in ("Byte1", "Bool8"):
            return 1
        return None

    def min_size(self, f: _ir.Field) -> int:
        """The fewest bytes a value of *f* takes (to bound item counts)."""
        if f.when is not None or f.optional:
            return 0
        if isinstance(f.const, bytes):
            return len(f.const)
        if f.fmt is not None:
            return _size(f.fmt)
        if f.type in ("Byte1", "Bool8", "String"):
            return 1
        if f.type == "Byten32":
            return 4
        if f.type == "TupleData":
            return _size(_ir.TYPE_FMT["UInt16"])  # its column count
        if f.type == "Array" and f.count in _ir.TYPE_FMT:
            return _size(_ir.TYPE_FMT[f.count])
        return 0

    def items_min_size(self, items: Any) -> int:
        if isinstance(items, _ir.Layout):
            return sum(self.min_size(f) for f in items.all_fields)
        if isinstance(items, str) and items in _ir.TYPE_FMT:
            return _size(_ir.TYPE_FMT[items])
        return 0

    def field(self, f: _ir.Field, out: _Out, scope: _Scope, checked: bool) -> None:
        name = _ident(f.name)
        out(1, f"/* {name} */")
        if f.const is not None:
            if not isinstance(f.const, bytes):
                raise TypeError(f"the C generator does not know integer constants: {f!r}")
            self.const(f.const, out, 1, checked)
            return
        if f.derived:
            # a count the encoder recomputes: a C integer, not a dataclass field
            if f.fmt is None:
                raise TypeError(f"Rebuild of a non-integer: {f!r}")
            self.int_local(f.fmt, name, out, 1, scope, checked)
            return
        local = f"f_{name}"
        if f.when is not None:
            out(1, f"if ({self.cond(f, scope)}) {{")
            self.value(f, local, out, 2, scope, False, name)
            out(1, "} else {")
            out(2, f"{local} = Py_None;")
            out(2, "Py_INCREF(Py_None);")
            out(1, "}")
        else:
            self.value(f, local, out, 1, scope, checked, name)
        scope.fields.append(name)

    def const(self, value: bytes, out: _Out, ind: int, checked: bool) -> None:
        n = len(value)
        if not checked:
            out(ind, f"if (n - p < {n}) goto fail;")
        if n == 1:
            out(ind, f"if (d[p] != {value[0]}) goto fail;")
        else:
            lit = "".join(f"\\x{b:02x}" for b in value)
            out(ind, f'if (memcmp(d + p, "{lit}", {n}) != 0) goto fail;')
        out(ind, f"p += {n};")

    def int_local(self, fmt: str, name: str, out: _Out, ind: int, scope: _Scope,
                  checked: bool) -> None:
        _check_fmt(fmt)
        if not checked:
            out(ind, f"if (n - p < {_size(fmt)}) goto fail;")
        out(ind, f"{{ const unsigned char *s = d + p; c_{name} = {_INTS[fmt][1]}; }}")
        out(ind, f"p += {_size(fmt)};")
        scope.ints[name] = fmt

    def value(self, f: _ir.Field, dst: str, out: _Out, ind: int, scope: _Scope, checked: bool,
              name: str) -> None:
        """Read one value of *f* into the new reference *dst*."""
        e = out
        if f.fmt is not None:
            fmt = _check_fmt(f.fmt)
            _, reader, maker = _INTS[fmt]
            if not checked:
                e(ind, f"if (n - p < {_size(fmt)}) goto fail;")
            e(ind, f"{{ const unsigned char *s = d + p; {dst} = {maker.format(v=reader)}; }}")
            e(ind, f"if ({dst} == NULL) goto fail;")
            e(ind, f"p += {_size(fmt)};")
        elif f.type == "String":
            e(ind, "{")
            e(ind + 1, "const unsigned char *z = memchr(d + p, 0, (size_t)(n - p));")
            e(ind + 1, "if (z == NULL) goto fail;")
            e(ind + 1, f"{dst} = PyUnicode_DecodeUTF8((const char *)d + p, z - (d + p), \"surrogateescape\");")
            e(ind + 1, f"if ({dst} == NULL) goto fail;")
            e(ind + 1, "p = (z - d) + 1;")
            e(ind, "}")
        elif f.type == "Byte1" and f.optional:
            # Optional(CharIn(...)): the byte is taken only when it is one of the choices
            assert f.values is not None
            e(ind, f"if (p < n && ({self.char_test(''.join(f.values))})) {{")
            e(ind + 1, f"{dst} = PyUnicode_FromOrdinal(d[p]);")
            e(ind + 1, f"if ({dst} == NULL) goto fail;")
            e(ind + 1, "p += 1;")
            e(ind, "} else {")
            e(ind + 1, f"{dst} = Py_None;")
            e(ind + 1, "Py_INCREF(Py_None);")
            e(ind, "}")
        elif f.type == "Byte1":
            if not checked:
                e(ind, "if (n - p < 1) goto fail;")
            if f.values is not None:
                e(ind, f"if (!({self.char_test(''.join(f.values))})) goto fail;")
            e(ind, f"{dst} = PyUnicode_FromOrdinal(d[p]);")
            e(ind, f"if ({dst} == NULL) goto fail;")
            e(ind, "p += 1;")
        elif f.type == "Bool8":
            if not checked:
                e(ind, "if (n - p < 1) goto fail;")
            e(ind, "if (d[p] > 1) goto fail;")
            e(ind, f"{dst} = PyBool_FromLong(d[p]);")
            e(ind, "p += 1;")
        elif f.type == "Byten32":
            e(ind, f"{dst} = read_byten32(d, n, &p);")
            e(ind, f"if ({dst} == NULL) goto fail;")
        elif f.type == "RestBytes":
            e(ind, f"{dst} = PyBytes_FromStringAndSize((const char *)d + p, n - p);")
            e(ind, f"if ({dst} == NULL) goto fail;")
            e(ind, "p = n;")
        elif f.type == "TupleData":
            fn = self.tuple_data_func(f.sub)
            e(ind, f"{dst} = {fn}(d, n, &p, binary_ok);")
            e(ind, f"if ({dst} == NULL) goto fail;")
        elif f.type == "Array" and f.count in _ir.TYPE_FMT:
            # a count of its own (PrefixedArray), then the items
            local = f"{name}__count"
            self.int_local(_ir.TYPE_FMT[f.count], local, out, ind, scope, checked=False)
            self.array(f.items, local, dst, out, ind, scope)
        elif f.type == "Array":
            if f.count not in scope.ints:
                raise TypeError(f"array count not understood: {f.count!r}")
            self.array(f.items, f.count, dst, out, ind, scope)
        else:
            raise TypeError(f"the C generator does not know {f.type} (field {f.name})")

    def array(self, item: Any, count: str, dst: str, out: _Out, ind: int, scope: _Scope) -> None:
        """Items (a nested layout or an integer type), as many as the C integer
        ``c_<count>``, into the tuple *dst*."""
        e = out
        self.counter += 1
        k = self.counter
        minsize = self.items_min_size(item)
        if minsize < 1:
            raise TypeError(f"cannot bound the count of items that may take no bytes: {item!r}")
        e(ind, "{")
        e(ind + 1, f"Py_ssize_t cnt{k}, i{k};")
        if _INTS[scope.ints[count]][0] == "int64_t":
            # the Python fast path loops over range(count): a negative count is no item
            e(ind + 1, f"if (c_{count} < 0) c_{count} = 0;")
        # every item takes at least `minsize` bytes: a larger count is invalid before allocating
        e(ind + 1, f"if ((uint64_t)c_{count} > (uint64_t)((n - p) / {minsize})) goto fail;")
        e(ind + 1, f"cnt{k} = (Py_ssize_t)c_{count};")
        e(ind + 1, f"{dst} = PyTuple_New(cnt{k});")
        e(ind + 1, f"if ({dst} == NULL) goto fail;")
        e(ind + 1, f"for (i{k} = 0; i{k} < cnt{k}; i{k}++) {{")
        e(ind + 2, "PyObject *v;")
        if isinstance(item, _ir.Layout):
            e(ind + 2, f"v = {self.item_func(item)}(d, n, &p, in_stream, abort_tail, binary_ok);")
            e(ind + 2, "if (v == NULL) goto fail;")
        elif isinstance(item, str) and item in _ir.TYPE_FMT:
            # fixed size: within the bytes the count check above has seen
            fmt = _check_fmt(_ir.TYPE_FMT[item])
            _, reader, maker = _INTS[fmt]
            e(ind + 2, f"{{ const unsigned char *s = d + p; v = {maker.format(v=reader)}; }}")
            e(ind + 2, "if (v == NULL) goto fail;")
            e(ind + 2, f"p += {_size(fmt)};")
        else:
            raise TypeError(f"the C generator does not know arrays of {item!r}")
        e(ind + 2, f"PyTuple_SET_ITEM({dst}, i{k}, v);")
        e(ind + 1, "}")
        e(ind, "}")

    def cond(self, f: _ir.Field, scope: _Scope) -> str:
        """A field's presence condition as C over the decoder's arguments and locals."""
        if not f.when_field and f.when in _PARAMS:
            return str(f.when)
        if f.when_field and f.when in scope.fields:
            return f"f_{f.when} != Py_None"
        raise TypeError(f"the C generator does not know the condition of {f.name}: {f.when}")

    @staticmethod
    def char_test(valids: str) -> str:
        if not valids or any(not c.isascii() or not c.isprintable() for c in valids):
            raise TypeError(f"CharIn choices must be printable ASCII: {valids!r}")
        return " || ".join(f"d[p] == {ord(c)} /* {c} */" for c in valids)

    # -- functions -------------------------------------------------------------------------
    def item_func(self, layout: _ir.Layout) -> str:
        """The C function that decodes one nested struct into its dataclass."""
        st = layout.struct
        if id(st) not in self.item_funcs:
            if id(st) not in self.nested:
                raise TypeError(f"nested struct without a dataclass: {st!r}")
            cls = _ident(self.nested[id(st)])
            self.item_funcs[id(st)] = f"item_{cls}"
            self.helpers.append(self.function(f"item_{cls}", cls, layout, top=False))
        return self.item_funcs[id(st)]

    def function(self, fn: str, cls: str, layout: _ir.Layout, top: bool) -> str:
        """A C function decoding *layout* into an instance of the dataclass *cls*."""
        body = _Out()
        scope = _Scope()
        if top and layout.tag is None:
            raise TypeError(f"{cls}: a message layout starts with its tag")
        self.struct_body(layout, body, scope, top)
        if self.classes.setdefault(cls, scope.fields) != scope.fields:
            raise TypeError(f"{cls} decoded with two different field lists")
        out = _Out()
        out(0, "static PyObject *")
        if top:
            out(0, f"{fn}(const unsigned char *d, Py_ssize_t n, int in_stream, int abort_tail, int binary_ok)")
        else:
            out(0, f"{fn}(const unsigned char *d, Py_ssize_t n, Py_ssize_t *pp, int in_stream,")
            out(0, "    int abort_tail, int binary_ok)")
        out(0, "{")
        out(1, "Py_ssize_t p = 0;" if top else "Py_ssize_t p = *pp;")
        for f in scope.fields:
            out(1, f"PyObject *f_{f} = NULL;")
        for name, fmt in scope.ints.items():
            out(1, f"{_INTS[fmt][0]} c_{name} = 0;")
        out(1, "PyObject *m;")
        out(1, "(void)in_stream; (void)abort_tail; (void)binary_ok;")
        out.lines.extend(body.lines)
        if top:
            out(1, "/* end of message */")
            out(1, "if (p != n) goto fail;")
        out(1, f"m = new_instance(T_{cls});")
        out(1, "if (m == NULL) goto fail;")
        for k, f in enumerate(scope.fields):
            out(1, f"SLOT(m, O_{cls}[{k}]) = f_{f};")
        if not top:
            out(1, "*pp = p;")
        out(1, "return m;")
        out(0, "fail:")
        for f in scope.fields:
            out(1, f"Py_XDECREF(f_{f});")
        out(1, "return NULL;")
        out(0, "}")
        return out.text()

    def tuple_data_func(self, sub: Any) -> str:
        """The reader of TupleData, from its layout: a PrefixedArray of (kind, value) where
        the kind letter selects the value; the letters and their values must be the ones
        the Python codec knows ('n' None, 'u' UNCHANGED, 't' text, 'b' bytes if allowed)."""
        if self.tuple_data is not None:
            return self.tuple_data
        seq = sub.subcon if not isinstance(sub, FocusedSeq) else sub  # inside TupleValues
        if not _ir.is_prefixed_array(seq):
            raise TypeError(f"TupleData not understood: {sub!r}")
        count_fmt = _fmt(seq.subcons[0].subcon.subcon)
        column = seq.subcons[1].subcon.subcon
        kind, value = column.subcons
        sw = value.subcon
        if not (kind.subcon is P.Char and isinstance(sw, Switch) and set(sw.cases) == set("nutb")
                and sw.cases["n"] is Pass and sw.cases["u"] is Pass and sw.cases["b"] is P.Byten32
                and getattr(sw.cases["t"], "subcon", None) is P.Byten32):
            raise TypeError(f"TupleColumn not understood: {column!r}")
        ctype, reader, _ = _INTS[count_fmt]
        minsize = 1  # every column takes its kind byte; 'n' and 'u' take nothing more
        out = _Out()
        out(0, "/* TupleData: a count, then per column Byte1 kind n (NULL), u (unchanged TOASTed")
        out(0, "   value), t (text) or b (binary, only when binary_ok), t and b with Int32 length")
        out(0, "   and the bytes. */")
        out(0, "static PyObject *")
        out(0, "read_tuple_data(const unsigned char *d, Py_ssize_t n, Py_ssize_t *pp, int binary_ok)")
        out(0, "{")
        out(1, "Py_ssize_t p = *pp, cnt, i;")
        out(1, f"{ctype} count;")
        out(1, "PyObject *t, *v;")
        out(1, f"if (n - p < {_size(count_fmt)}) return NULL;")
        out(1, f"{{ const unsigned char *s = d + p; count = {reader}; }}")
        out(1, f"p += {_size(count_fmt)};")
        if ctype == "int64_t":
            out(1, "if (count < 0) count = 0;")
        out(1, "/* every column takes at least one byte: a larger count is invalid before allocating */")
        out(1, f"if ((uint64_t)count > (uint64_t)((n - p) / {minsize})) return NULL;")
        out(1, "cnt = (Py_ssize_t)count;")
        out(1, "t = PyTuple_New(cnt);")
        out(1, "if (t == NULL) return NULL;")
        out(1, "for (i = 0; i < cnt; i++) {")
        out(2, "if (p >= n) goto fail;")
        out(2, "switch (d[p++]) {")
        out(2, f"case {ord('t')}: /* t */")
        out(3, "v = read_text32(d, n, &p);")
        out(3, "if (v == NULL) goto fail;")
        out(3, "break;")
        out(2, f"case {ord('n')}: /* n */")
        out(3, "v = Py_None;")
        out(3, "Py_INCREF(v);")
        out(3, "break;")
        out(2, f"case {ord('b')}: /* b */")
        out(3, "if (!binary_ok) goto fail;")
        out(3, "v = read_byten32(d, n, &p);")
        out(3, "if (v == NULL) goto fail;")
        out(3, "break;")
        out(2, f"case {ord('u')}: /* u */")
        out(3, "v = UNCHANGED;")
        out(3, "Py_INCREF(v);")
        out(3, "break;")
        out(2, "default:")
        out(3, "goto fail;")
        out(2, "}")
        out(2, "PyTuple_SET_ITEM(t, i, v);")
        out(1, "}")
        out(1, "*pp = p;")
        out(1, "return t;")
        out(0, "fail:")
        out(1, "Py_DECREF(t);")
        out(1, "return NULL;")
        out(0, "}")
        self.helpers.append(out.text())
        # The same layout written: a row's text values (the fake walsender's plain Inserts).
        self.helpers.append(_TEXT_ROWS.replace("@NULL@", str(ord("n"))).replace("@TEXT@", str(ord("t"))))
        self.tuple_data = "read_tuple_data"
        return self.tuple_data


#: The writer of TupleData's text columns (the layout ``tuple_data_func`` checked: Byte1 'n'
#: for NULL; Byte1 't', Int32 length, the text), for rows given as dicts: what the Python
#: encoder of a row (``loop``, the reference) writes, without a Python step per value.
#: @NULL@ and @TEXT@ are the kind letters' codes.
_TEXT_ROWS = r"""/* One column's text, as encode_text_rows found it: NULL (p == NULL) or n bytes at p, kept
   alive by owned. */
struct textcol {
    const char *p;
    Py_ssize_t n;
    PyObject *owned;
    char digits[24];
};

/* The decimal text of x into buf (at least 21 bytes); its length. */
static Py_ssize_t
write_decimal(long long x, char *buf)
{
    char tmp[24];
    int k = 0, neg = x < 0;
    unsigned long long u = neg ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    Py_ssize_t len = 0;
    do { tmp[k++] = (char)('0' + (int)(u % 10)); u /= 10; } while (u);
    if (neg) buf[len++] = '-';
    while (k) buf[len++] = tmp[--k];
    return len;
}

/* A value's text (a new str, or NULL with an error), as the reference encoder makes it:
   str(value) when its type is the column's str_type, else text(value). */
static PyObject *
value_text(PyObject *v, PyObject *str_type, PyObject *text)
{
    if ((PyObject *)Py_TYPE(v) == str_type) {
        if (PyUnicode_CheckExact(v)) { Py_INCREF(v); return v; }
        return PyObject_Str(v);
    }
    return PyObject_CallOneArg(text, v);
}

/* One row: head, then per column 'n' or 't' + Int32 length + the text as UTF-8 with
   surrogateescape. A row that is no dict, or whose text is not a plain str, is encoded
   by loop(row). */
static PyObject *
text_row(PyObject *head, PyObject *names, PyObject *types, PyObject *texts, PyObject *loop,
         PyObject *row, struct textcol *cols, Py_ssize_t ncols)
{
    Py_ssize_t total = PyBytes_GET_SIZE(head), i;
    PyObject *res = NULL;
    char *w;
    if (!PyDict_CheckExact(row)) return PyObject_CallOneArg(loop, row);
    for (i = 0; i < ncols; i++) cols[i].owned = NULL;
    for (i = 0; i < ncols; i++) {
        struct textcol *c = &cols[i];
        PyObject *st = PyTuple_GET_ITEM(types, i), *t;
        PyObject *v = PyDict_GetItemWithError(row, PyTuple_GET_ITEM(names, i));  /* borrowed */
        c->p = NULL;
        if (v == NULL && PyErr_Occurred()) goto done;
        if (v == NULL || v == Py_None) { total += 1; continue; }
        if (st == (PyObject *)&PyLong_Type && PyLong_CheckExact(v)) {
            int overflow;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (x == -1 && PyErr_Occurred()) goto done;
            if (!overflow) {
                c->n = write_decimal(x, c->digits);
                c->p = c->digits;
                total += 5 + c->n;
                continue;
            }
        }
        Py_INCREF(v);  /* text() may change the row */
        t = value_text(v, st, PyTuple_GET_ITEM(texts, i));
        Py_DECREF(v);
        if (t == NULL) goto done;
        if (t == Py_None) { Py_DECREF(t); total += 1; continue; }
        if (!PyUnicode_CheckExact(t)) { Py_DECREF(t); res = PyObject_CallOneArg(loop, row); goto done; }
        if (PyUnicode_IS_ASCII(t)) {
            c->owned = t;
            c->p = (const char *)PyUnicode_DATA(t);
            c->n = PyUnicode_GET_LENGTH(t);
        } else {
            c->owned = PyUnicode_AsEncodedString(t, "utf-8", "surrogateescape");
            Py_DECREF(t);
            if (c->owned == NULL) goto done;
            c->p = PyBytes_AS_STRING(c->owned);
            c->n = PyBytes_GET_SIZE(c->owned);
        }
        if (c->n > 0x7fffffff) { res = PyObject_CallOneArg(loop, row); goto done; }
        total += 5 + c->n;
    }
    res = PyBytes_FromStringAndSize(NULL, total);
    if (res == NULL) goto done;
    w = PyBytes_AS_STRING(res);
    memcpy(w, PyBytes_AS_STRING(head), (size_t)PyBytes_GET_SIZE(head));
    w += PyBytes_GET_SIZE(head);
    for (i = 0; i < ncols; i++) {
        struct textcol *c = &cols[i];
        uint32_t n;
        if (c->p == NULL) { *w++ = (char)@NULL@; continue; }
        n = (uint32_t)c->n;
        w[0] = (char)@TEXT@;
        w[1] = (char)(n >> 24); w[2] = (char)(n >> 16); w[3] = (char)(n >> 8); w[4] = (char)n;
        memcpy(w + 5, c->p, (size_t)c->n);
        w += 5 + c->n;
    }
done:
    for (i = 0; i < ncols; i++) Py_CLEAR(cols[i].owned);
    return res;
}

/* encode_text_rows(head, names, str_types, texts, loop, rows) -> [bytes per row] */
static PyObject *
encode_text_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *out, *rows;
    struct textcol *cols;
    Py_ssize_t ncols, r;
    if (nargs != 6 || !PyBytes_CheckExact(args[0]) || !PyTuple_CheckExact(args[1])
        || !PyTuple_CheckExact(args[2]) || !PyTuple_CheckExact(args[3]) || !PyList_CheckExact(args[5])
        || PyTuple_GET_SIZE(args[2]) != PyTuple_GET_SIZE(args[1])
        || PyTuple_GET_SIZE(args[3]) != PyTuple_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_TypeError, "expected (head: bytes, names: tuple, str_types: tuple, "
                        "texts: tuple, loop, rows: list), the tuples of one length");
        return NULL;
    }
    ncols = PyTuple_GET_SIZE(args[1]);
    rows = args[5];
    cols = PyMem_New(struct textcol, ncols ? ncols : 1);
    if (cols == NULL) return PyErr_NoMemory();
    out = PyList_New(0);
    if (out == NULL) { PyMem_Free(cols); return NULL; }
    for (r = 0; r < PyList_GET_SIZE(rows); r++) {
        PyObject *row = PyList_GET_ITEM(rows, r), *payload;
        Py_INCREF(row);
        payload = text_row(args[0], args[1], args[2], args[3], args[4], row, cols, ncols);
        Py_DECREF(row);
        if (payload == NULL || PyList_Append(out, payload) < 0) {
            Py_XDECREF(payload);
            Py_DECREF(out);
            PyMem_Free(cols);
            return NULL;
        }
        Py_DECREF(payload);
    }
    PyMem_Free(cols);
    return out;
}"""


#: Logical XLogData frames of a fake walsender's plan, in one pass: what
#: ``pgwire_spec.replication.frames.xlog_data`` packs one at a time (the docs' "Streaming
#: Replication Protocol": CopyData 'd' + Int32 length; XLogData 'w', Int64 dataStart, Int64
#: walEnd, Int64 sendTime, the data; dataStart = walEnd for a logical stream's messages).
_XLOG_FRAMES = r"""/* The arguments (lsns, payloads, start, stop, ...) of a plan's items [start, stop), checked;
   -1 with an error if not. */
static int
xlog_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t *start, Py_ssize_t *stop)
{
    if (nargs != 5 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "expected (lsns: list, payloads: list, start, stop, stamp or size)");
        return -1;
    }
    *start = PyLong_AsSsize_t(args[2]);
    if (*start == -1 && PyErr_Occurred()) return -1;
    *stop = PyLong_AsSsize_t(args[3]);
    if (*stop == -1 && PyErr_Occurred()) return -1;
    if (*start < 0 || *start > *stop || *stop > PyList_GET_SIZE(args[0]) || *stop > PyList_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_IndexError, "expected 0 <= start <= stop <= the plan's length");
        return -1;
    }
    return 0;
}

/* xlog_frames(lsns, payloads, start, stop, stamp) -> the frames of items [start, stop)
   joined, each with sendTime = stamp (8 bytes). */
static PyObject *
xlog_frames(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t start, stop, i, total = 0;
    PyObject *res;
    char *w;
    if (xlog_args(args, nargs, &start, &stop) < 0) return NULL;
    if (!PyBytes_CheckExact(args[4]) || PyBytes_GET_SIZE(args[4]) != 8) {
        PyErr_SetString(PyExc_TypeError, "expected an 8-byte sendTime");
        return NULL;
    }
    for (i = start; i < stop; i++) {
        PyObject *p = PyList_GET_ITEM(args[1], i), *l = PyList_GET_ITEM(args[0], i);
        if (!PyBytes_CheckExact(p) || !PyLong_CheckExact(l)) {
            PyErr_Format(PyExc_TypeError, "item %zd: expected an int LSN and a bytes payload", i);
            return NULL;
        }
        if (PyBytes_GET_SIZE(p) > 0x7fffffff - 29) {
            PyErr_Format(PyExc_OverflowError, "item %zd: a payload too long for one CopyData", i);
            return NULL;
        }
        total += 30 + PyBytes_GET_SIZE(p);
    }
    res = PyBytes_FromStringAndSize(NULL, total);
    if (res == NULL) return NULL;
    w = PyBytes_AS_STRING(res);
    for (i = start; i < stop; i++) {
        PyObject *p = PyList_GET_ITEM(args[1], i);
        Py_ssize_t n = PyBytes_GET_SIZE(p);
        uint64_t lsn = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(args[0], i));
        uint32_t len = (uint32_t)(29 + n);
        int k;
        if (lsn == (uint64_t)-1 && PyErr_Occurred()) { Py_DECREF(res); return NULL; }
        w[0] = 'd';
        w[1] = (char)(len >> 24); w[2] = (char)(len >> 16); w[3] = (char)(len >> 8); w[4] = (char)len;
        w[5] = 'w';
        for (k = 0; k < 8; k++) w[6 + k] = w[14 + k] = (char)(lsn >> (56 - 8 * k));
        memcpy(w + 22, PyBytes_AS_STRING(args[4]), 8);
        memcpy(w + 30, PyBytes_AS_STRING(p), (size_t)n);
        w += 30 + n;
    }
    return res;
}

/* xlog_span(lsns, payloads, start, stop, size) -> the first j in (start, stop] whose frames
   [start, j) take at least size bytes, else stop (start when start == stop). */
static PyObject *
xlog_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t start, stop, i, size, total = 0;
    if (xlog_args(args, nargs, &start, &stop) < 0) return NULL;
    size = PyLong_AsSsize_t(args[4]);
    if (size == -1 && PyErr_Occurred()) return NULL;
    for (i = start; i < stop && (i == start || total < size); i++) {
        PyObject *p = PyList_GET_ITEM(args[1], i);
        if (!PyBytes_CheckExact(p)) {
            PyErr_Format(PyExc_TypeError, "item %zd: expected a bytes payload", i);
            return NULL;
        }
        total += 30 + PyBytes_GET_SIZE(p);
    }
    return PyLong_FromSsize_t(i);
}"""


# =========================================================================================
# The module
# =========================================================================================

_PRELUDE = r"""#define PY_SSIZE_T_CLEAN
#include <Python.h>
#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#endif
#include <stdint.h>
#include <string.h>

#ifndef Py_T_OBJECT_EX
#define Py_T_OBJECT_EX T_OBJECT_EX
#endif
#ifndef Py_READONLY
#define Py_READONLY READONLY
#endif

/* Raised for any input a decoder does not accept; never seen by users: the caller runs
   the Python tracing decoder, which says precisely what is wrong. */
static PyObject *Invalid = NULL;
static PyObject *UNCHANGED = NULL;
static int ready = 0;

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

static inline uint32_t rd_u16(const unsigned char *s) { return ((uint32_t)s[0] << 8) | s[1]; }
static inline uint32_t rd_u32(const unsigned char *s)
{
    return ((uint32_t)s[0] << 24) | ((uint32_t)s[1] << 16) | ((uint32_t)s[2] << 8) | s[3];
}
static inline uint64_t rd_u64(const unsigned char *s)
{
    return ((uint64_t)rd_u32(s) << 32) | rd_u32(s + 4);
}

/* An instance of a frozen slotted dataclass, its slots still empty: the decoders fill
   them directly (no __init__, no __setattr__). */
static inline PyObject *
new_instance(PyTypeObject *type)
{
    return type->tp_alloc(type, 0);
}

/* Int32 length, then that many bytes. */
static PyObject *
read_byten32(const unsigned char *d, Py_ssize_t n, Py_ssize_t *pp)
{
    Py_ssize_t p = *pp;
    int32_t ln;
    PyObject *v;
    if (n - p < 4) return NULL;
    ln = (int32_t)rd_u32(d + p);
    p += 4;
    if (ln < 0 || ln > n - p) return NULL;
    v = PyBytes_FromStringAndSize((const char *)d + p, ln);
    if (v != NULL) *pp = p + ln;
    return v;
}

/* Int32 length, then that many bytes of text (UTF-8, other bytes kept as surrogates). */
static PyObject *
read_text32(const unsigned char *d, Py_ssize_t n, Py_ssize_t *pp)
{
    Py_ssize_t p = *pp;
    int32_t ln;
    PyObject *v;
    if (n - p < 4) return NULL;
    ln = (int32_t)rd_u32(d + p);
    p += 4;
    if (ln < 0 || ln > n - p) return NULL;
    v = PyUnicode_DecodeUTF8((const char *)d + p, ln, "surrogateescape");
    if (v != NULL) *pp = p + ln;
    return v;
}

typedef PyObject *(*decoder_fn)(const unsigned char *, Py_ssize_t, int, int, int);

static int
truth(PyObject *o)
{
    if (o == Py_True) return 1;
    if (o == Py_False) return 0;
    return PyObject_IsTrue(o);
}

/* decode_<Name>(data, in_stream, abort_tail, binary_ok=True) */
static PyObject *
run(decoder_fn fn, PyObject *const *args, Py_ssize_t nargs)
{
    int in_stream, abort_tail, binary_ok = 1;
    PyObject *result;
    Py_buffer view;
    if (!ready) {
        PyErr_SetString(PyExc_RuntimeError, "pgwire_spec._speedups.setup() was not called");
        return NULL;
    }
    if (nargs < 3 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "expected (data, in_stream, abort_tail[, binary_ok])");
        return NULL;
    }
    if ((in_stream = truth(args[1])) < 0) return NULL;
    if ((abort_tail = truth(args[2])) < 0) return NULL;
    if (nargs == 4 && (binary_ok = truth(args[3])) < 0) return NULL;
    if (PyBytes_CheckExact(args[0])) {
        result = fn((const unsigned char *)PyBytes_AS_STRING(args[0]), PyBytes_GET_SIZE(args[0]),
                    in_stream, abort_tail, binary_ok);
    } else {
        if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
        result = fn((const unsigned char *)view.buf, view.len, in_stream, abort_tail, binary_ok);
        PyBuffer_Release(&view);
    }
    if (result == NULL && !PyErr_Occurred()) PyErr_SetNone(Invalid);
    return result;
}

/* The slot offsets of a class: each field must be a writable object slot of the class
   itself, and the class must have no other slots (so every slot gets filled). */
static int
bind_class(PyObject *classes, const char *name, const char *const *fields, Py_ssize_t nfields,
           PyTypeObject **type_out, Py_ssize_t *offsets)
{
    PyObject *cls = PyDict_GetItemString(classes, name);  /* borrowed */
    PyObject *slots;
    Py_ssize_t i;
    if (cls == NULL || !PyType_Check(cls)) {
        PyErr_Format(PyExc_TypeError, "setup: no class %s", name);
        return -1;
    }
    slots = PyObject_GetAttrString(cls, "__slots__");
    if (slots == NULL) PyErr_Clear();
    if (slots == NULL || !PyTuple_Check(slots) || PyTuple_GET_SIZE(slots) != nfields) {
        Py_XDECREF(slots);
        PyErr_Format(PyExc_TypeError, "setup: %s.__slots__ is not the %zd fields of its layout",
                     name, nfields);
        return -1;
    }
    Py_DECREF(slots);
    for (i = 0; i < nfields; i++) {
        PyObject *descr = PyObject_GetAttrString(cls, fields[i]);
        PyMemberDef *member;
        if (descr == NULL) return -1;
        if (!Py_IS_TYPE(descr, &PyMemberDescr_Type)
            || ((PyDescrObject *)descr)->d_type != (PyTypeObject *)cls) {
            Py_DECREF(descr);
            PyErr_Format(PyExc_TypeError, "setup: %s.%s is not a slot of the class", name, fields[i]);
            return -1;
        }
        member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != Py_T_OBJECT_EX || (member->flags & Py_READONLY)) {
            Py_DECREF(descr);
            PyErr_Format(PyExc_TypeError, "setup: %s.%s is not an object slot", name, fields[i]);
            return -1;
        }
        offsets[i] = member->offset;
        Py_DECREF(descr);
    }
    *type_out = (PyTypeObject *)cls;  /* borrowed: setup keeps a reference once all bind */
    return 0;
}
"""


def generate_c(layouts: dict[str, Struct], nested: dict[int, str], origin: str) -> str:
    """The C source of the decoders of *layouts* (message name -> layout); *nested* names
    the dataclass of each nested struct layout (by ``id``). *origin* is named in the
    header."""
    gen = _CGen(nested)
    functions = [gen.function(f"dec_{_ident(name)}", name, _ir.lower(name, lay), top=True)
                 for name, lay in layouts.items()]
    out = _Out()
    out(0, "/* The dataclasses the decoders fill, and the slots of each in the order read. */")
    for cls, fields in gen.classes.items():
        names = ", ".join(f'"{f}"' for f in fields)
        out(0, f"static PyTypeObject *T_{cls} = NULL;")
        out(0, f"static const char *const F_{cls}[] = {{{names}{', ' if fields else ''}NULL}};")
        out(0, f"static Py_ssize_t O_{cls}[{max(len(fields), 1)}];")
    classes = out.text()

    out = _Out()
    for name in layouts:
        out(0, "static PyObject *")
        out(0, f"py_decode_{name}(PyObject *self, PyObject *const *args, Py_ssize_t nargs)")
        out(0, "{")
        out(1, f"return run(dec_{name}, args, nargs);")
        out(0, "}")
        out(0, "")
    out(0, "/* setup(classes, unchanged): bind the dataclasses (name -> class) and UNCHANGED. */")
    out(0, "static PyObject *")
    out(0, "setup(PyObject *self, PyObject *const *args, Py_ssize_t nargs)")
    out(0, "{")
    out(1, "if (nargs != 2 || !PyDict_Check(args[0])) {")
    out(2, 'PyErr_SetString(PyExc_TypeError, "setup(classes: dict, unchanged)");')
    out(2, "return NULL;")
    out(1, "}")
    out(1, "/* check every class first: a failed setup changes nothing */")
    for cls, fields in gen.classes.items():
        out(1, f"PyTypeObject *t_{cls};")
        out(1, f"Py_ssize_t o_{cls}[{max(len(fields), 1)}];")
    for cls, fields in gen.classes.items():
        out(1, f'if (bind_class(args[0], "{cls}", F_{cls}, {len(fields)}, &t_{cls}, o_{cls}) < 0) return NULL;')
    for cls in gen.classes:
        out(1, f"Py_INCREF(t_{cls});")
        out(1, f"Py_XSETREF(T_{cls}, t_{cls});")
        out(1, f"memcpy(O_{cls}, o_{cls}, sizeof(O_{cls}));")
    out(1, "Py_INCREF(args[1]);")
    out(1, "Py_XSETREF(UNCHANGED, args[1]);")
    out(1, "ready = 1;")
    out(1, "Py_RETURN_NONE;")
    out(0, "}")
    out(0, "")
    out(0, "static PyMethodDef methods[] = {")
    out(1, '{"setup", (PyCFunction)(void (*)(void))setup, METH_FASTCALL, "bind the message classes"},')
    out(1, '{"xlog_frames", (PyCFunction)(void (*)(void))xlog_frames, METH_FASTCALL,')
    out(1, ' "xlog_frames(lsns, payloads, start, stop, stamp): logical XLogData frames joined"},')
    out(1, '{"xlog_span", (PyCFunction)(void (*)(void))xlog_span, METH_FASTCALL,')
    out(1, ' "xlog_span(lsns, payloads, start, stop, size): where frames from start reach size bytes"},')
    if gen.tuple_data is not None:
        out(1, '{"encode_text_rows", (PyCFunction)(void (*)(void))encode_text_rows, METH_FASTCALL,')
        out(1, ' "encode_text_rows(head, names, str_types, texts, loop, rows): TupleData of text rows"},')
    for name in layouts:
        out(1, f'{{"decode_{name}", (PyCFunction)(void (*)(void))py_decode_{name}, METH_FASTCALL,')
        out(1, f' "decode_{name}(data, in_stream, abort_tail, binary_ok=True)"}},')
    out(1, "{NULL, NULL, 0, NULL}")
    out(0, "};")
    out(0, "")
    out(0, "static struct PyModuleDef module = {")
    out(1, 'PyModuleDef_HEAD_INIT, "pgwire_spec._speedups",')
    out(1, '"Generated C decoders of the pgoutput messages (see pgwire_spec/_cgen.py).", -1, methods,')
    out(1, "NULL, NULL, NULL, NULL,")
    out(0, "};")
    out(0, "")
    out(0, "PyMODINIT_FUNC")
    out(0, "PyInit__speedups(void)")
    out(0, "{")
    out(1, "PyObject *mod = PyModule_Create(&module);")
    out(1, "if (mod == NULL) return NULL;")
    out(1, 'Invalid = PyErr_NewException("pgwire_spec._speedups.Invalid", PyExc_ValueError, NULL);')
    out(1, 'if (Invalid == NULL || PyModule_AddObjectRef(mod, "Invalid", Invalid) < 0')
    out(1, '    || PyModule_AddStringConstant(mod, "SOURCE_DIGEST", SOURCE_DIGEST) < 0) {')
    out(2, "Py_DECREF(mod);")
    out(2, "return NULL;")
    out(1, "}")
    out(1, "return mod;")
    out(0, "}")
    tail = out.text()

    body = "\n\n".join([_PRELUDE.rstrip("\n"), classes, *gen.helpers, _XLOG_FRAMES, *functions, tail]) + "\n"
    digest = hashlib.sha256(body.encode()).hexdigest()
    header = (
        f"/* GENERATED by pgwire_spec/_cgen.py from {origin}: do not edit.\n"
        " * Regenerate with `python -m pgwire_spec.pgoutput._cbuild` (check with --check),\n"
        " * then rebuild the extension with `pip install -e . --no-deps`.\n"
        f" * SOURCE_DIGEST (sha256 of everything after this comment): {digest}\n"
        " */\n"
        f'#define SOURCE_DIGEST "{digest}"\n'
    )
    return header + body


def source_digest(source: str) -> str:
    """The SOURCE_DIGEST recorded in a generated source."""
    m = re.search(r'#define SOURCE_DIGEST "([0-9a-f]+)"', source)
    if m is None:
        raise ValueError("not a generated source")
    return m.group(1)
