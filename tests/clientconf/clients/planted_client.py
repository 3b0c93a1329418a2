"""A planted misbehaving replication client: the one the client-conformance catalogue must
catch. It acknowledges each transaction (flush = the Commit's end LSN) as soon as the
Commit arrives and reports it applied (the applied hook) 1.5 s later; it reads nothing but
XLogData: it never answers a keepalive, replyRequested or not, sends no other feedback, and
ignores the server's CopyDone. Otherwise it is careful:
after an error or a dropped connection it waits a second and resumes from what it
acknowledged.

Usage: planted_client.py HOST PORT SLOT
"""

import json
import socket
import sys
import time

from pgwire_spec import PgOutputDecoder
from pgwire_spec.lsn import format_lsn
from pgwire_spec.replication.messages import StandbyStatusUpdate, XLogData, decode_copy_data, encode_copy_data
from pgwire_spec.wire import (
    BackendReader,
    CopyBothResponse,
    CopyData,
    ErrorResponse,
    Query,
    ReadyForQuery,
    StartupMessage,
    encode_message,
)


def main() -> None:
    host, port, slot = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    acked = 0
    pending: list[tuple[float, int]] = []  # (due, end LSN) of transactions acknowledged, not yet applied
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=0.2)
        except OSError:
            time.sleep(1)
            continue
        reader = BackendReader()
        decoder = PgOutputDecoder(protocol_version=1)
        sock.sendall(encode_message(StartupMessage(parameters=(
            ("user", "replicator"), ("database", "postgres"), ("replication", "database")))))
        phase = "startup"
        try:
            while True:
                for due, lsn in [p for p in pending if p[0] <= time.monotonic()]:
                    print(json.dumps({"applied": format_lsn(lsn)}), flush=True)
                    pending.remove((due, lsn))
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    raise ConnectionError("closed")
                reader.feed(data)
                for msg in reader:
                    if isinstance(msg, ErrorResponse):
                        print(f"error: {msg.code} {msg.message}", file=sys.stderr, flush=True)
                        raise ConnectionError(msg.code)
                    if phase == "startup" and isinstance(msg, ReadyForQuery):
                        phase = "start"
                        sock.sendall(encode_message(Query(
                            f"START_REPLICATION SLOT {slot} LOGICAL {format_lsn(acked)} "
                            f"(proto_version '1', publication_names 'pub')")))
                    elif isinstance(msg, CopyBothResponse):
                        phase = "stream"
                    elif isinstance(msg, CopyData) and phase == "stream":
                        payload = decode_copy_data(msg.data)
                        if not isinstance(payload, XLogData):
                            continue  # keepalives ignored, replyRequested or not
                        pg = decoder.decode(payload.data)
                        if pg.tag == "C":
                            acked = max(acked, pg.end_lsn)
                            sock.sendall(encode_message(CopyData(encode_copy_data(
                                StandbyStatusUpdate(acked, acked, acked, 0, False)))))
                            pending.append((time.monotonic() + 1.5, pg.end_lsn))
        except (ConnectionError, OSError):
            sock.close()
            time.sleep(1)


if __name__ == "__main__":
    main()
