"""Hypothesis strategies for every v3 message class (test-local)."""

from __future__ import annotations

from hypothesis import strategies as st

from pgwire_spec.wire import messages as m

# Text as the wire carries it: no NUL, no lone surrogates (they have no UTF-8 bytes); the
# bytes that are not UTF-8 come back as surrogateescape characters \udc80-\udcff.
_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
text = st.text(_chars, max_size=12) | st.binary(max_size=8).filter(lambda b: b"\x00" not in b).map(
    lambda b: b.decode("utf-8", "surrogateescape"))
name = text.filter(bool)  # items of zero-terminated lists cannot be empty
blob = st.binary(max_size=24)
cstring = st.binary(max_size=12).filter(lambda b: b"\x00" not in b)
i16 = st.integers(-(2**15), 2**15 - 1)
i32 = st.integers(-(2**31), 2**31 - 1)
u32 = st.integers(0, 2**32 - 1)
code_char = st.characters(min_codepoint=1, max_codepoint=255)
fields = st.lists(st.tuples(code_char, text), max_size=6).map(tuple)

STRATEGIES: dict[type, st.SearchStrategy[m.WireMessage]] = {
    m.CancelRequest: st.builds(m.CancelRequest, i32, blob),
    m.GSSENCRequest: st.just(m.GSSENCRequest()),
    m.SSLRequest: st.just(m.SSLRequest()),
    m.StartupMessage: st.builds(
        m.StartupMessage, st.integers(3 << 16, (3 << 16) + 0xFFFF),
        st.lists(st.tuples(name, text), max_size=5).map(tuple)),
    m.SSLResponse: st.builds(m.SSLResponse, st.booleans()),
    m.GSSENCResponse: st.builds(m.GSSENCResponse, st.booleans()),
    m.CopyData: st.builds(m.CopyData, blob),
    m.CopyDone: st.just(m.CopyDone()),
    m.CopyFail: st.builds(m.CopyFail, text),
    m.PasswordMessage: st.builds(m.PasswordMessage, cstring),
    m.Query: st.builds(m.Query, text),
    m.SASLInitialResponse: st.builds(m.SASLInitialResponse, text, st.none() | blob),
    m.SASLResponse: st.builds(m.SASLResponse, blob),
    m.Terminate: st.just(m.Terminate()),
    m.Parse: st.builds(m.Parse, text, text, st.lists(u32, max_size=4).map(tuple)),
    m.Bind: st.builds(m.Bind, text, text, st.lists(i16, max_size=3).map(tuple),
                      st.lists(st.none() | blob, max_size=4).map(tuple), st.lists(i16, max_size=3).map(tuple)),
    m.Describe: st.builds(m.Describe, st.sampled_from("SP"), text),
    m.Execute: st.builds(m.Execute, text, i32),
    m.Close: st.builds(m.Close, st.sampled_from("SP"), text),
    m.Flush: st.just(m.Flush()),
    m.Sync: st.just(m.Sync()),
    m.ParseComplete: st.just(m.ParseComplete()),
    m.BindComplete: st.just(m.BindComplete()),
    m.CloseComplete: st.just(m.CloseComplete()),
    m.ParameterDescription: st.builds(m.ParameterDescription, st.lists(u32, max_size=4).map(tuple)),
    m.NoData: st.just(m.NoData()),
    m.PortalSuspended: st.just(m.PortalSuspended()),
    m.AuthenticationOk: st.just(m.AuthenticationOk()),
    m.AuthenticationCleartextPassword: st.just(m.AuthenticationCleartextPassword()),
    m.AuthenticationMD5Password: st.builds(m.AuthenticationMD5Password, st.binary(min_size=4, max_size=4)),
    m.AuthenticationSASL: st.builds(m.AuthenticationSASL, st.lists(name, max_size=4).map(tuple)),
    m.AuthenticationSASLContinue: st.builds(m.AuthenticationSASLContinue, blob),
    m.AuthenticationSASLFinal: st.builds(m.AuthenticationSASLFinal, blob),
    m.BackendKeyData: st.builds(m.BackendKeyData, i32, blob),
    m.CommandComplete: st.builds(m.CommandComplete, text),
    m.CopyInResponse: st.builds(m.CopyInResponse, st.integers(0, 255), st.lists(i16, max_size=5).map(tuple)),
    m.CopyOutResponse: st.builds(m.CopyOutResponse, st.integers(0, 255), st.lists(i16, max_size=5).map(tuple)),
    m.CopyBothResponse: st.builds(m.CopyBothResponse, st.integers(0, 255), st.lists(i16, max_size=5).map(tuple)),
    m.DataRow: st.builds(m.DataRow, st.lists(st.none() | blob, max_size=6).map(tuple)),
    m.EmptyQueryResponse: st.just(m.EmptyQueryResponse()),
    m.ErrorResponse: st.builds(m.ErrorResponse, fields),
    m.NoticeResponse: st.builds(m.NoticeResponse, fields),
    m.NegotiateProtocolVersion: st.builds(m.NegotiateProtocolVersion, i32, st.lists(text, max_size=4).map(tuple)),
    m.ParameterStatus: st.builds(m.ParameterStatus, text, text),
    m.ReadyForQuery: st.builds(m.ReadyForQuery, st.sampled_from("ITE")),
    m.RowDescription: st.builds(m.RowDescription, st.lists(
        st.builds(m.FieldDescription, text, u32, i16, u32, i16, i32, i16), max_size=4).map(tuple)),
}

assert set(STRATEGIES) == set(m.MESSAGE_TYPES.values())

any_message = st.one_of(list(STRATEGIES.values()))
