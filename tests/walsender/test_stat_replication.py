"""pg_stat_replication's connection and lag columns (walsender/_base.py LagTracker, the
catalog's rows), driven without sockets on fixed clocks: the client's address and port as
the driver passes them, backend_start, reply_time, and the lags as walsender.c's lag
tracker computes them."""

from __future__ import annotations

from typing import Any

from pgwire_spec.replication.messages import StandbyStatusUpdate, encode_copy_data
from pgwire_spec.walsender import Scenario, ServerState
from pgwire_spec.walsender._base import LagTracker
from pgwire_spec.wire import CopyBothResponse, CopyData, DataRow, ErrorResponse, RowDescription

from ._client import Client
from .scenarios import accounts

_STAT = ("SELECT client_addr, client_port, backend_start, write_lag, flush_lag, replay_lag, reply_time "
         "FROM pg_stat_replication")
#: 2025-11-24 16:00:00.5 UTC, and a status update's sendTime 2 s later (µs since 2000-01-01)
_WALL = 1_764_000_000.5
_SEND_TIME = int((_WALL + 2 - 946_684_800) * 1_000_000)


def _rows(out: list[Any]) -> list[tuple[str | None, ...]]:
    errors = [dict(m.fields) for m in out if isinstance(m, ErrorResponse)]
    assert not errors, errors
    return [tuple(None if v is None else v.decode() for v in m.values) for m in out if isinstance(m, DataRow)]


def _streaming(port: int | None) -> tuple[ServerState, Client, Client]:
    state = ServerState(Scenario.from_dict({**accounts(16), "auth": {"method": "trust"}}), wall_clock=lambda: _WALL)
    client = Client(state, peer="10.1.2.3", port=port)
    client.startup()
    client.query("CREATE_REPLICATION_SLOT s LOGICAL pgoutput")
    out = client.query("START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'pub')")
    assert any(isinstance(m, CopyBothResponse) for m in out)
    observer = Client(state)
    observer.startup(replication=None)
    return state, client, observer


def _status(client: Client, write: int, flush: int, apply: int) -> None:
    client.send(CopyData(encode_copy_data(StandbyStatusUpdate(write, flush, apply, _SEND_TIME, False))))
    client.pump()


def test_the_clients_address_port_and_start_and_its_last_reply() -> None:
    _, client, observer = _streaming(port=54321)
    out = observer.query(_STAT)
    desc = next(m for m in out if isinstance(m, RowDescription))
    assert [f.type_oid for f in desc.fields] == [869, 23, 1184, 1186, 1186, 1186, 1184]
    # no status update yet: no lags, no reply time (walsender.c: -1 and 0 are NULL)
    assert _rows(out) == [("10.1.2.3", "54321", "2025-11-24 16:00:00.5+00", None, None, None, None)]
    _status(client, 0, 0, 0)
    assert _rows(observer.query("SELECT reply_time FROM pg_stat_replication")) == [("2025-11-24 16:00:02.5+00",)]


def test_a_client_not_over_tcp_has_no_address_and_port_minus_one() -> None:
    _, _, observer = _streaming(port=None)
    assert _rows(observer.query("SELECT client_addr, client_port FROM pg_stat_replication")) == [(None, "-1")]


def test_lags_are_the_time_since_the_reported_position_was_sent() -> None:
    _, client, observer = _streaming(port=54321)
    sent = client.conn.stream.wal_end  # the stream went out at clock 1000.0
    client.clock = 1002.25
    _status(client, sent, sent, 0)
    # write and flush passed the sample; apply (0) has only a future sample: the lag it would
    # have if reached now (LagTrackerRead)
    assert _rows(observer.query(_STAT))[0][3:6] == ("00:00:02.25", "00:00:02.25", "00:00:02.25")
    client.clock = 1003.0
    _status(client, sent, sent, sent)  # applied: the lag when it got there
    assert _rows(observer.query(_STAT))[0][3:6] == ("00:00:02.25", "00:00:02.25", "00:00:03")
    client.clock = 1010.0
    _status(client, sent, sent, sent)  # applied twice in a row: the lags are cleared
    assert _rows(observer.query(_STAT))[0][3:6] == (None, None, None)


def test_the_lag_tracker_reads_and_interpolates_as_walsender_c() -> None:
    lag = LagTracker()
    lag.write(100, 10.0)
    lag.write(150, 10.5)  # within a second of the last sample: not noted
    lag.write(200, 11.0)
    lag.write(300, 12.0)
    assert lag.samples == [(100, 10.0), (200, 11.0), (300, 12.0)]
    lag.read((100, 100, 0), 300, 13.0)
    # write/flush crossed the sample of 100; apply: before any sample, the first one's time
    assert lag.lags == [3.0, 3.0, 3.0]
    lag.read((250, 150, 0), 300, 14.0)
    # write crossed 200 (noted at 11.0); flush lies between 100 and 200: time interpolated
    assert lag.lags == [3.0, 14.0 - 10.5, 4.0]
    lag.read((250, 150, 0), 300, 15.0)
    # nothing new read: each lies before an unread sample, interpolated from the last read
    # one (write: halfway from 200 at 11.0 to 300 at 12.0) or looked ahead to (apply)
    assert lag.lags == [15.0 - 11.5, 15.0 - 10.5, 5.0]
    lag.read((250, 250, 250), 300, 16.0)
    lag.read((250, 250, 250), 300, 17.0)  # a position that stays shows a growing lag
    assert lag.lags == [17.0 - 11.5] * 3
    lag.read((300, 300, 300), 300, 18.0)
    assert lag.lags == [6.0, 6.0, 6.0]
    lag.read((300, 300, 300), 300, 19.0)  # the sent position applied twice in a row: cleared
    assert lag.lags == [None, None, None]


def test_the_lag_tracker_keeps_a_bounded_buffer() -> None:
    lag = LagTracker()
    for i in range(20_000):
        lag.write(i + 1, float(i))
    # a client that never reports: the newest sample is overwritten once the buffer is full
    assert len(lag.samples) == 8192 and lag.samples[-1] == (20_000, 19_999.0)
    lag.read((20_000, 20_000, 20_000), 20_000, 20_000.0)
    for i in range(20_000, 25_000):
        lag.write(i + 1, float(i))
    assert len(lag.samples) < 8192  # what every kind has read is forgotten
