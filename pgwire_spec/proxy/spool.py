"""A proxied conversation kept on a file as it goes (sans-IO: any binary file object the
caller opens), so that a recording's memory stays bounded whatever the session's length.

Each record is ``direction (1 byte) · time (float64) · length (uint32) · bytes``: one client
message, or one or more whole server messages (a run of the stream read at once: every
backend message carries its tag and length, so the run splits again on reading). A sparse
index (one mark every :data:`MARK_EVERY` messages) lets a reader start near any message.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator
from typing import BinaryIO

__all__ = ["Spool", "SpooledMessage", "MARK_EVERY"]

_HEAD = struct.Struct("!cdI")
_LEN = struct.Struct("!I")
#: One index mark per this many messages: 16 bytes per mark.
MARK_EVERY = 4096
#: Bytes read from the file at a time.
_BLOCK = 1 << 20

SpooledMessage = tuple[int, str, float, bytes]  # index, direction ("F" | "B"), time, exact bytes


class Spool:
    """Messages appended in order (:meth:`add`) and read back from any index (:meth:`read`)."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.count = 0  # messages
        self.size = 0  # bytes written
        self._marks = array("q", [0, 0])  # (first message index, file offset) pairs
        self._closed = False

    def add(self, direction: str, data: bytes | bytearray | memoryview, time: float, count: int = 1) -> None:
        """Append *count* whole messages of one direction (a server run: several)."""
        if self.count - self._marks[-2] >= MARK_EVERY:
            self._marks.extend((self.count, self.size))
        self.file.write(_HEAD.pack(direction.encode(), time, len(data)))
        self.file.write(data)
        self.count += count
        self.size += _HEAD.size + len(data)

    def read(self, start: int = 0, limit: int | None = None) -> Iterator[SpooledMessage]:
        """The messages from index *start* (at most *limit*), each with its exact bytes. The
        file's position is restored after each block read, so appending may go on between
        two messages read."""
        marks = self._marks
        i = 0
        while i + 2 < len(marks) and marks[i + 2] <= start:
            i += 2
        index, offset = marks[i], marks[i + 1]
        end = self.size
        left = limit if limit is not None else self.count
        pending = b""
        while offset < end and left > 0:
            block = self._pread(offset, min(_BLOCK, end - offset))
            offset += len(block)
            data = pending + block
            pos = 0
            while left > 0 and len(data) - pos >= _HEAD.size:
                direction, time, length = _HEAD.unpack_from(data, pos)
                if len(data) - pos - _HEAD.size < length:
                    break
                body = data[pos + _HEAD.size:pos + _HEAD.size + length]
                pos += _HEAD.size + length
                side = direction.decode()
                if side == "F":
                    parts = [body]
                else:
                    parts = []
                    p = 0
                    while p < len(body):
                        (n,) = _LEN.unpack_from(body, p + 1)
                        parts.append(body[p:p + 1 + n])
                        p += 1 + n
                for part in parts:
                    if index >= start and left > 0:
                        yield index, side, time, part
                        left -= 1
                    index += 1
            pending = data[pos:]

    def _pread(self, offset: int, size: int) -> bytes:
        f = self.file
        f.flush()
        here = f.tell()
        try:
            f.seek(offset)
            return f.read(size)
        finally:
            f.seek(here)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.file.close()
