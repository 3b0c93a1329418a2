"""A logical replication client written the way psycopg2's documentation shows it
(LogicalReplicationConnection, consume_stream, send_feedback(flush_lsn=msg.data_start)),
asking for protocol version 2 with streaming, plus the applied hook: one JSON line per
Commit or Stream Commit, {"applied": "<end LSN>", "changes": N} (_apply.py). Reconnects
after any error (closing the old connection), one second apart.

Usage: psycopg2_client.py DSN SLOT
"""

import sys
import time

import psycopg2
import psycopg2.extras
from _apply import Applier


def main() -> None:
    dsn, slot = sys.argv[1], sys.argv[2]
    while True:
        conn = None
        try:
            conn = psycopg2.connect(dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
            cur = conn.cursor()
            cur.start_replication(slot_name=slot, decode=False, status_interval=1,
                                  options={"proto_version": "2", "streaming": "on", "publication_names": "pub"})
            applier = Applier(2, "on")

            def consume(msg: "psycopg2.extras.ReplicationMessage", applier: Applier = applier) -> None:
                line = applier.feed(msg.payload)
                if line is not None:
                    print(line, flush=True)
                msg.cursor.send_feedback(flush_lsn=msg.data_start)

            cur.consume_stream(consume)
        except psycopg2.Error as exc:
            print(f"error: {exc}".strip(), file=sys.stderr, flush=True)
            if conn is not None:
                conn.close()
            time.sleep(1)


if __name__ == "__main__":
    main()
