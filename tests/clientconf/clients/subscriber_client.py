"""A real PostgreSQL subscriber as the client under test: its apply worker streams from the
fake. This process only sets it up and reports what it applied: in a database of its own
on the subscriber server it creates ``public.accounts`` and a subscription to ``pub`` on
the case's slot (copy_data false, streaming on), then polls the subscription's replication
origin (``pg_replication_origin_status.remote_lsn``: the end LSN of the last transaction
the apply worker committed; logical/worker.c) and the table, printing the applied hook
for each transaction, {"applied": "<end LSN>", "changes": <rows added>}, and the apply
worker's errors (pg_stat_subscription_stats, 15+) on stderr. On SIGTERM it drops the
subscription (leaving the slot alone) and the database.

Usage: subscriber_client.py FAKE_DSN SLOT SUBSCRIBER_DSN
"""

import json
import signal
import sys
import time
import uuid

import psycopg


def main() -> None:
    fake_dsn, slot, server_dsn = sys.argv[1], sys.argv[2], sys.argv[3]
    db = f"conform_{uuid.uuid4().hex[:10]}"
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with psycopg.connect(server_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {db}")
    try:
        with psycopg.connect(psycopg.conninfo.make_conninfo(server_dsn, dbname=db), autocommit=True) as conn:
            conn.execute("CREATE TABLE public.accounts (id int4 PRIMARY KEY, name text)")
            conninfo = fake_dsn.replace("'", "''")
            conn.execute(f"CREATE SUBSCRIPTION conform CONNECTION '{conninfo}' PUBLICATION pub "
                         f"WITH (create_slot = false, slot_name = '{slot}', copy_data = false, streaming = on)")
            origin = "pg_" + str(conn.execute("SELECT oid FROM pg_subscription WHERE subname = 'conform'").fetchone()[0])
            last, rows, errors = None, 0, 0
            while not stop:
                got = conn.execute("SELECT remote_lsn::text FROM pg_replication_origin_status s "
                                   "JOIN pg_replication_origin o ON o.roident = s.local_id WHERE o.roname = %s",
                                   (origin,)).fetchone()
                count = conn.execute("SELECT count(*) FROM public.accounts").fetchone()[0]
                lsn = got[0] if got else None
                if lsn is not None and lsn != "0/0" and lsn != last:
                    print(json.dumps({"applied": lsn, "changes": count - rows}), flush=True)
                    last, rows = lsn, count
                n = conn.execute("SELECT apply_error_count FROM pg_stat_subscription_stats "
                                 "WHERE subname = 'conform'").fetchone()
                if n and n[0] > errors:
                    errors = n[0]
                    print(f"apply worker error #{errors} (see the subscriber's log)", file=sys.stderr, flush=True)
                time.sleep(0.05)
            conn.execute("ALTER SUBSCRIPTION conform DISABLE")
            conn.execute("ALTER SUBSCRIPTION conform SET (slot_name = NONE)")
            conn.execute("DROP SUBSCRIPTION conform")
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


if __name__ == "__main__":
    main()
