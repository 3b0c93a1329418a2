"""Regenerate tests/data/pg15_sample.jsonl: real pgoutput bytes from Debian's PostgreSQL 15.

    python tests/data/make_pg15_sample.py [BINDIR]

Starts a throw-away server as the unprivileged user ``postgres`` (postgres refuses to run
as root) on a free loopback port, runs a small workload, reads the changes with
``pg_logical_slot_peek_binary_changes`` for two option sets, and writes one JSON line per
payload after a header line (server version, option sets): option set index, server LSN
and xid, hex. The golden corpus of all majors lives in
fixtures/; this file is the small sample the core's tests and benchmark use.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

BINDIR = Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/lib/postgresql/15/bin")
OUT = Path(__file__).with_name("pg15_sample.jsonl")

WORKLOAD = """
CREATE TABLE accounts (id int PRIMARY KEY, name text, amount numeric(10,2), note text);
CREATE TABLE events (id bigserial PRIMARY KEY, kind text, payload jsonb, at timestamptz);
ALTER TABLE events REPLICA IDENTITY FULL;
CREATE PUBLICATION pub FOR TABLE accounts, events;
SELECT pg_create_logical_replication_slot('s', 'pgoutput');
INSERT INTO accounts SELECT g, 'name ' || g, g * 1.5, CASE WHEN g % 3 = 0 THEN NULL ELSE 'Zoë 北京 ' || g END
  FROM generate_series(1, 1500) g;
BEGIN;
INSERT INTO events (kind, payload, at) SELECT 'k' || (g % 7), jsonb_build_object('n', g, 's', repeat('x', g % 40)),
  '2024-01-01'::timestamptz + g * interval '1 minute' FROM generate_series(1, 500) g;
COMMIT;
UPDATE accounts SET amount = amount + 1 WHERE id % 10 = 0;
UPDATE accounts SET id = id + 100000 WHERE id % 250 = 0;
UPDATE events SET kind = 'changed' WHERE id % 50 = 0;
DELETE FROM accounts WHERE id % 97 = 0;
DELETE FROM events WHERE id % 99 = 0;
TRUNCATE events;
"""

OPTION_SETS = [
    {"proto_version": "1", "publication_names": "pub"},
    {"proto_version": "2", "publication_names": "pub", "binary": "true", "streaming": "on"},
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    user = pwd.getpwnam("postgres")
    tmp = Path(tempfile.mkdtemp(prefix="pgwire-sample-"))
    os.chown(tmp, user.pw_uid, user.pw_gid)
    data = tmp / "data"
    port = free_port()

    def as_pg(*cmd: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *cmd], check=True, capture_output=True)

    try:
        as_pg(str(BINDIR / "initdb"), "-A", "trust", "-U", "postgres", "-D", str(data))
        as_pg(str(BINDIR / "pg_ctl"), "-D", str(data), "-l", str(tmp / "log"), "-w", "start", "-o",
              f"-p {port} -k {tmp} -c listen_addresses=127.0.0.1 -c wal_level=logical -c fsync=off -c logical_decoding_work_mem=64kB")
        dsn = f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
        with psycopg.connect(dsn, autocommit=True) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            for stmt in WORKLOAD.strip().split(";\n"):
                if stmt.strip():
                    conn.execute(stmt)
            # then 300 small OLTP-style transactions, as a CDC pipeline mostly sees them
            for i in range(1, 301):
                with conn.transaction():
                    conn.execute("UPDATE accounts SET amount = amount - 1 WHERE id = %s", (i,))
                    conn.execute("INSERT INTO events (kind, payload, at) VALUES ('debit', %s, now())",
                                 (json.dumps({"account": i, "amount": 1}),))
            lines: list[dict[str, object]] = [{"server_version": version, "option_sets": OPTION_SETS}]
            for index, options in enumerate(OPTION_SETS):
                args = [x for kv in options.items() for x in kv]
                rows = conn.execute(
                    "SELECT lsn::text, xid::text::bigint, data FROM pg_logical_slot_peek_binary_changes("
                    "'s', NULL, NULL, " + ", ".join(["%s"] * len(args)) + ")", args,
                ).fetchall()
                for lsn, xid, payload in rows:
                    lines.append({"set": index, "lsn": lsn, "xid": xid, "hex": bytes(payload).hex()})
        OUT.write_text("".join(json.dumps(x) + "\n" for x in lines))
        print(f"wrote {len(lines) - 1} payloads from PostgreSQL {version} to {OUT}", file=sys.stderr)
    finally:
        subprocess.run(["runuser", "-u", "postgres", "--", str(BINDIR / "pg_ctl"), "-D", str(data),
                        "-m", "immediate", "stop"], capture_output=True)
        time.sleep(0.2)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
