"""The MetaQ store model: a `dataPath` holding one `{topic}-{partition}/` directory per partition, each a run
of contiguous segment files `{start offset}.meta`, read with the broker's own rules:

* which directories are partitions: MessageStoreManager.loadDataDir (non-directories and names without '-'
  are skipped; topic = the name up to the last '-', partition = Integer.parseInt of the rest);
* which files are segments and where they start: MessageStore.loadSegments (regular files ending in
  `.meta`, start = Long.parseLong of the name without the suffix), sorted by start;
* contiguity: MessageStore.validateSegments (each segment starts where the previous one ends);
* what a valid record is: FileMessageSet.validateMessage, the check the broker's recovery runs over the last
  segment at load (`check_record` below is the one home of that rule; every command calls it);
* how data decodes: MessageUtils.decodeMessage (`decode_data`).

Offsets: a message's offset is the byte offset of its header in the partition (segment start + position).
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import zlib
from pathlib import Path
from typing import Iterator

from .. import schema_metaq as M
from ..errors import StoreError
from ..javacompat import parse_int, parse_long
from ..store import existing_root
from .config import MetaqConfig

# rmqctl's own directory inside a partition directory: lock, intent, staging and backups. loadSegments only
# takes regular files ending in .meta, so the broker never sees it.
RMQCTL_DIR = ".rmqctl"


def crc31(data) -> int:
    """CheckSum.crc32: java.util.zip.CRC32 & 0x7FFFFFFF."""
    return zlib.crc32(data) & 0x7FFFFFFF


def segment_name(start: int) -> str:
    """MessageStore.nameFromOffset: at least 20 digits, no grouping."""
    return f"{start:020d}{M.SEGMENT_SUFFIX}"


@dataclasses.dataclass
class Segment:
    path: Path
    start: int
    size: int  # the file's length when listed (an immutable segment's highWaterMark)

    @property
    def end(self) -> int:
        return self.start + self.size

    def read(self) -> bytes | mmap.mmap:
        """The segment's bytes, read-only (a memory map; empty files give b"")."""
        if self.size == 0:
            return b""
        with open(self.path, "rb") as f:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


@dataclasses.dataclass
class RecordCheck:
    """One step of FileMessageSet.validateMessage at `position`: the record's end, or why it is not one."""

    position: int
    next: int | None  # position after the record when valid
    problem: str | None  # torn-tail | negative-length | checksum-mismatch
    detail: str
    header: tuple | None  # (msgLen, checksum, id, flag) when 20 header bytes were there


def check_record(buf, position: int, length: int) -> RecordCheck:
    """The broker's recovery check of the record at `position` (FileMessageSet.validateMessage), in its order:
    fewer than 20 bytes left -> stop; header + msgLen past the end -> stop; msgLen < 0 -> stop; CRC32 of the
    data & 0x7FFFFFFF != checksum -> stop. A valid record (an all-zero 20 bytes is one: msgLen 0, checksum 0
    = crc of nothing) returns its end."""
    left = length - position
    if left < M.HEADER_LEN:
        return RecordCheck(position, None, "torn-tail", f"{left} bytes left, fewer than a 20-byte header", None)
    header = M.HEADER.unpack_from(buf, position)
    msg_len, checksum = header[0], header[1]
    end = position + M.HEADER_LEN + msg_len
    if end > length:
        return RecordCheck(
            position, None, "torn-tail", f"msgLen {msg_len} runs {end - length} bytes past the end of the file", header
        )
    if msg_len < 0:
        return RecordCheck(position, None, "negative-length", f"msgLen {msg_len} is negative", header)
    computed = crc31(memoryview(buf)[position + M.HEADER_LEN : end])
    if computed != checksum:
        return RecordCheck(
            position,
            None,
            "checksum-mismatch",
            f"checksum {checksum} but CRC32(data) & 0x7FFFFFFF = {computed}",
            header,
        )
    return RecordCheck(position, end, None, "", header)


def is_zero_header(header: tuple) -> bool:
    """All 20 bytes zero: what a zero-filled tail reads as; it passes the check (crc of nothing is 0), so the
    broker keeps it as an empty message with id 0."""
    return header == (0, 0, 0, 0)


@dataclasses.dataclass
class Record:
    """A valid record as stored: where it is and its header; `data` is the msgLen bytes after the header."""

    position: int
    msgLen: int
    checksum: int
    id: int
    flag: int
    data: memoryview

    @property
    def size(self) -> int:
        return M.HEADER_LEN + self.msgLen


class SegmentScan:
    """The records of one segment in order, as the broker's recovery walks them. Iterating yields Records
    until the end or the first invalid one; afterwards `valid_up_to` is where recovery would truncate the
    file and `stop` is the failed check (None when the whole file is valid)."""

    def __init__(self, buf, length: int):
        self.buf = buf
        self.length = length
        self.valid_up_to = 0
        self.count = 0
        self.stop: RecordCheck | None = None

    def __iter__(self) -> Iterator[Record]:
        pos, view = 0, memoryview(self.buf) if self.length else memoryview(b"")
        while pos < self.length:
            chk = check_record(self.buf, pos, self.length)
            if chk.next is None:
                self.stop = chk
                break
            msg_len, checksum, ident, flag = chk.header
            yield Record(pos, msg_len, checksum, ident, flag, view[pos + M.HEADER_LEN : chk.next])
            self.count += 1
            pos = self.valid_up_to = chk.next

    def run(self) -> "SegmentScan":
        for _ in self:
            pass
        return self


class DecodeError(ValueError):
    """Data that passed the checksum but that MessageUtils.decodeMessage cannot decode."""


def decode_data(msg_len: int, flag: int, data) -> tuple[bytes | None, bytes]:
    """MessageUtils.decodeMessage: (attribute bytes or None, payload). With flag & 1 the data starts with
    attrLen and the attribute; a msgLen above MAX_READ_BUFFER_SIZE is refused."""
    if msg_len > M.MAX_READ_BUFFER_SIZE:
        raise DecodeError(
            f"msgLen {msg_len} is above MAX_READ_BUFFER_SIZE {M.MAX_READ_BUFFER_SIZE}: "
            "decodeMessage refuses it (InvalidMessageException)"
        )
    if not flag & M.ATTRIBUTE_FLAG:
        return None, bytes(data)
    if msg_len < 4:
        raise DecodeError(f"flag has the attribute bit but msgLen {msg_len} cannot hold the 4-byte attrLen")
    (attr_len,) = M.ATTR_LEN.unpack_from(data, 0)
    if attr_len < 0 or 4 + attr_len > msg_len:
        raise DecodeError(f"attrLen {attr_len} does not fit in msgLen {msg_len}: decodeMessage fails")
    return bytes(data[4 : 4 + attr_len]), bytes(data[4 + attr_len :])


def attribute_text(raw: bytes) -> str:
    """ByteUtils.getString: new String(bytes, "utf-8") (malformed input becomes U+FFFD)."""
    return raw.decode("utf-8", errors="replace")


@dataclasses.dataclass
class Oddity:
    """Something in the data path the broker's loader trips over or skips."""

    kind: str
    path: Path
    detail: str


@dataclasses.dataclass
class Partition:
    topic: str
    partition: int
    path: Path
    segments: list[Segment]
    oddities: list[Oddity]

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def min_offset(self) -> int:
        return self.segments[0].start if self.segments else 0

    @property
    def max_offset(self) -> int:
        return self.segments[-1].end if self.segments else 0

    def contiguity(self) -> list[tuple[Segment, Segment]]:
        """MessageStore.validateSegments: the neighbouring pairs where the next does not start at the end of
        the previous one (the broker refuses to load the partition)."""
        return [(a, b) for a, b in zip(self.segments, self.segments[1:]) if a.end != b.start]

    def find(self, offset: int) -> Segment | None:
        """MessageStore.findSegment + Segment.contains: the segment holding `offset`."""
        for seg in self.segments:
            if seg.start <= offset < seg.end or (seg.size == 0 and offset == seg.start):
                return seg
        return None


def check_data_path(root: Path):
    """A directory is a MetaQ data path only if it holds a `{topic}-{partition}` directory (the broker makes one
    per partition it serves); a RocketMQ store root, a typo or /tmp must not pass as a data path with no topic
    (or with a finding for every directory that has a dash in its name)."""
    if (root / "commitlog").is_dir():
        raise StoreError(f"a RocketMQ store root, not a MetaQ data path: rmqctl info --store {root} reads it", root)
    for entry in root.iterdir():
        dash = entry.name.rfind("-")
        if entry.is_dir() and dash > 0 and parse_int(entry.name[dash + 1 :]) is not None:
            return
    raise StoreError(
        "not a MetaQ data path: no {topic}-{partition}/ directory (the broker makes one for each partition it serves)",
        root,
    )


class MetaqStore:
    """A MetaQ dataPath, read-only."""

    def __init__(self, root: str | os.PathLike, config: MetaqConfig | None = None):
        self.root = existing_root(root, "no such data path (a MetaQ dataPath holds {topic}-{partition}/ directories)")
        self.config = config or MetaqConfig()
        self.oddities: list[Oddity] = []
        self._partitions: list[Partition] | None = None

    def partitions(self) -> list[Partition]:
        if self._partitions is None:
            self._partitions = self._load()
        return self._partitions

    def partition(self, topic: str, partition: int) -> Partition:
        for p in self.partitions():
            if p.topic == topic and p.partition == partition:
                return p
        raise StoreError(f"no partition directory {topic}-{partition}", self.root)

    def _load(self) -> list[Partition]:
        out = []
        for entry in sorted(self.root.iterdir()):
            if not entry.is_dir():
                continue
            dash = entry.name.rfind("-")
            if dash < 0:
                continue  # loadDataDir: "Ignore invalid directory"
            number = parse_int(entry.name[dash + 1 :])
            if number is None:
                self.oddities.append(
                    Oddity(
                        "bad-partition-dir",
                        entry,
                        f"{entry.name[dash + 1 :]!r} after the last '-' "
                        "is not an int: the broker fails to start (NumberFormatException)",
                    )
                )
                continue
            out.append(self._load_partition(entry.name[:dash], number, entry))
        out.sort(key=lambda p: (p.topic, p.partition))
        return out

    def _load_partition(self, topic: str, number: int, path: Path) -> Partition:
        segments, odd = [], []
        for f in path.iterdir():
            if not f.name.endswith(M.SEGMENT_SUFFIX) or not f.is_file():
                continue
            start = parse_long(f.name[: -len(M.SEGMENT_SUFFIX)])
            if start is None:
                odd.append(
                    Oddity(
                        "bad-segment-name",
                        f,
                        "the name is not a long offset: loadSegments fails "
                        "(NumberFormatException) and the broker does not start",
                    )
                )
                continue
            if f.name != segment_name(start):
                odd.append(
                    Oddity(
                        "segment-name",
                        f,
                        f"not the broker's 20-digit name {segment_name(start)} (the loader still takes it)",
                    )
                )
            segments.append(Segment(f, start, f.stat().st_size))
        segments.sort(key=lambda s: s.start)
        return Partition(topic, number, path, segments, odd)

    def relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def select(self, topic: str | None = None, partition: int | None = None) -> list[Partition]:
        return [
            p
            for p in self.partitions()
            if (topic is None or p.topic == topic) and (partition is None or p.partition == partition)
        ]
