"""pg_recvlogical with a planted bug in what it writes (the suite must catch it): the real
program runs and its output file (stdout) is passed on line by line, except

``drop``    the session's 3rd line that starts with an Insert's tag is not written;
``repeat``  the 2nd Commit's line is written twice;
``flip``    the 2nd Insert's line has its last byte changed (a column's text).

Usage: planted_recvlogical.py PLANT PG_RECVLOGICAL [ARGS…]
"""

import os
import subprocess
import sys


def main() -> None:
    plant, program, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    proc = subprocess.Popen([program, *args], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    out = sys.stdout.buffer
    counts = {b"I": 0, b"C": 0}
    buf = b""
    while chunk := os.read(proc.stdout.fileno(), 1 << 16):
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            tag = line[:1]
            if tag in counts:
                counts[tag] += 1
            if plant == "drop" and tag == b"I" and counts[tag] == 3:
                continue
            if plant == "flip" and tag == b"I" and counts[tag] == 2:
                line = line[:-1] + bytes([line[-1] ^ 0x01])
            out.write(line + b"\n")
            if plant == "repeat" and tag == b"C" and counts[tag] == 2:
                out.write(line + b"\n")
        out.flush()
    sys.exit(proc.wait())


if __name__ == "__main__":
    main()
