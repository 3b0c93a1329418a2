"""A logical replication client written the way psycopg2's documentation shows it
(LogicalReplicationConnection, consume_stream, send_feedback(flush_lsn=msg.data_start)),
plus the applied hook: one JSON line per Commit, {"applied": "<end LSN>"}. Reconnects
after any error (closing the old connection), one second apart.

Usage: psycopg2_client.py DSN SLOT
"""

import json
import struct
import sys
import time

import psycopg2
import psycopg2.extras


def main() -> None:
    dsn, slot = sys.argv[1], sys.argv[2]
    while True:
        conn = None
        try:
            conn = psycopg2.connect(dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
            cur = conn.cursor()
            cur.start_replication(slot_name=slot, decode=False, status_interval=1,
                                  options={"proto_version": "1", "publication_names": "pub"})

            def consume(msg: "psycopg2.extras.ReplicationMessage") -> None:
                if msg.payload[:1] == b"C":
                    # Commit: flags (1 byte), commit LSN, end LSN (protocol docs, 53.9 "Commit")
                    end_lsn = struct.unpack_from("!Q", msg.payload, 10)[0]
                    print(json.dumps({"applied": f"{end_lsn >> 32:X}/{end_lsn & 0xFFFFFFFF:X}"}), flush=True)
                msg.cursor.send_feedback(flush_lsn=msg.data_start)

            cur.consume_stream(consume)
        except psycopg2.Error as exc:
            print(f"error: {exc}".strip(), file=sys.stderr, flush=True)
            if conn is not None:
                conn.close()
            time.sleep(1)


if __name__ == "__main__":
    main()
