"""`metaq append`: records written as the broker writes them.

One append call is MessageStore.append(id, PutCommand) (one record) or append(List<Long>, List<PutCommand>)
(a batch, as a transaction commit writes it): MessageUtils.makeMessageBuffer builds the records back to back
(msgLen, checksum = CRC32(data) & 0x7FFFFFFF, id, flag, data), they go to the end of the last segment in one
write, and only then `mayBeRoll` rolls: when the segment has reached maxSegmentSize, a new empty segment is
created, named by the offset where this one ends. The data of a message with an attribute is attrLen +
attribute (UTF-8) + payload (MessageUtils.encodePayload) and its flag has bit 0 set (MessageFlagUtils).

Before writing, the partition's last segment is checked with the broker's recovery rule; a tail it would
truncate is refused (`rmqctl metaq repair` cuts it), so no acknowledged message can be cut by the next load.
A new partition starts with `00000000000000000000.meta` (MessageStore with offsetIfCreate 0).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Iterable

from .. import schema_metaq as M
from ..errors import StoreError, UsageError
from ..txn import fsync_dir
from .config import MetaqConfig
from .lock import partition_lock
from .store import MetaqStore, Partition, SegmentScan, crc31, segment_name

TWEPOCH = 1303895660503  # IdWorker.twepoch
JAVA_LONG = 1 << 64


@dataclasses.dataclass
class NewMessage:
    topic: str
    partition: int
    payload: bytes
    attribute: bytes | None = None  # None: no attribute (flag bit 0 clear); b"" is the empty attribute
    id: int | None = None  # None: a new id from IdWorker(brokerId)
    flag: int | None = None  # None: MessageFlagUtils.getFlag (1 with an attribute, else 0)

    def data(self) -> bytes:
        """MessageUtils.encodePayload."""
        if self.attribute is None:
            return self.payload
        return M.ATTR_LEN.pack(len(self.attribute)) + self.attribute + self.payload

    def stored_flag(self) -> int:
        if self.flag is None:
            return M.ATTRIBUTE_FLAG if self.attribute is not None else 0
        if bool(self.flag & M.ATTRIBUTE_FLAG) != (self.attribute is not None):
            raise UsageError(
                f"flag {self.flag} {'has' if self.flag & 1 else 'lacks'} the attribute bit but the "
                f"message {'lacks' if self.attribute is None else 'has'} an attribute"
            )
        return self.flag


@dataclasses.dataclass
class Appended:
    topic: str
    partition: int
    offset: int
    msgLen: int
    id: int
    segment: str
    segmentPosition: int
    batchOffset: int  # the Location the broker's callback gets: where the write started
    batchLength: int

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class IdWorker:
    """com.taobao.metamorphosis.utils.IdWorker: (ms - twepoch) << 22 | workerId << 12 | sequence. The broker
    takes its milliseconds from System.nanoTime (an arbitrary origin); rmqctl uses the wall clock."""

    def __init__(self, worker_id: int):
        if not 0 <= worker_id < 1024:
            raise UsageError(f"brokerId {worker_id} is not a valid IdWorker worker id (0..1023)")
        self.worker_id, self.sequence, self.last = worker_id, 0, -1
        self._lock = threading.Lock()

    def next_id(self) -> int:
        with self._lock:
            ts = time.time_ns() // 1_000_000
            if ts == self.last:
                self.sequence = (self.sequence + 1) & 0xFFF
                if self.sequence == 0:
                    while ts <= self.last:
                        ts = time.time_ns() // 1_000_000
            else:
                self.sequence = 0
            self.last = ts
            v = ((ts - TWEPOCH) << 22 | self.worker_id << 12 | self.sequence) % JAVA_LONG
            return v - JAVA_LONG if v >= 1 << 63 else v


def encode_records(messages: list[NewMessage], ids: list[int]) -> bytes:
    """MessageUtils.makeMessageBuffer (one or a list)."""
    out = bytearray()
    for m, ident in zip(messages, ids):
        if not -(1 << 63) <= ident < 1 << 63:
            raise UsageError(f"id {ident} is not a Java long")
        if m.flag is not None and not -(1 << 31) <= m.flag < 1 << 31:
            raise UsageError(f"flag {m.flag} is not a Java int")
        data = m.data()
        out += M.HEADER.pack(len(data), crc31(data), ident, m.stored_flag()) + data
    return bytes(out)


def valid_topic(topic: str):
    if not topic or "/" in topic or "\0" in topic or topic in (".", ".."):
        raise UsageError(f"topic {topic!r} cannot be a partition directory name")


class _OpenPartition:
    def __init__(self, store: MetaqStore, part: Partition):
        self.part = part
        bad = [o for o in part.oddities if o.kind == "bad-segment-name"]
        if bad:
            raise StoreError(f"{bad[0].detail}; refusing to append", bad[0].path)
        if part.contiguity():
            a, b = part.contiguity()[0]
            raise StoreError(
                f"starts at {b.start}, not at {a.end}: the broker does not load this partition; refusing to append",
                b.path,
            )
        if not part.segments:
            self._new_segment(0)
        else:
            last = part.segments[-1]
            scan = SegmentScan(last.read(), last.size).run()
            if scan.stop is not None:
                raise StoreError(
                    f"{scan.stop.problem} at offset {last.start + scan.stop.position}: the broker's "
                    "recovery would truncate this tail; run `rmqctl metaq repair` first",
                    last.path,
                )
            self.start, self.path, self.size = last.start, last.path, last.size
        self.store = store

    def _new_segment(self, start: int):
        """MessageStore.roll / loadSegments with no file: an empty segment named by its start offset."""
        path = self.part.path / segment_name(start)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.fsync(fd)
        os.close(fd)
        fsync_dir(self.part.path)
        self.start, self.path, self.size = start, path, 0


class Appender:
    """Appends to the partitions of a data path, holding each partition's lock from its first append until
    close(). `append(batch)` is one append call; it is durable (fsync) when it returns.

        with Appender("/data/meta", load_server_config("server.ini")) as app:
            app.append([NewMessage("orders", 0, b"hello", attribute=b"k=v")])"""

    def __init__(self, root: str | os.PathLike, config: MetaqConfig | None = None):
        self.root = Path(root).expanduser()
        self.config = config or MetaqConfig()
        self.ids = IdWorker(self.config.brokerId)
        self._stack = ExitStack()
        self._open: dict[tuple[str, int], _OpenPartition] = {}
        self.warnings: list[str] = []

    def __enter__(self):
        self.root.mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._stack.close()
        self._open.clear()

    def _partition(self, topic: str, number: int) -> _OpenPartition:
        key = (topic, number)
        if key not in self._open:
            valid_topic(topic)
            if number < 0:
                raise UsageError(f"partition {number} must not be negative")
            refusal = self.config.put_refusal(topic, number)
            if refusal:  # written anyway (a copy or a restore may need it); the broker loads it but takes no puts
                self.warnings.append(f"{topic}-{number}: the broker would refuse puts here: {refusal}")
            path = self.root / f"{topic}-{number}"
            if not path.is_dir():
                path.mkdir()
                fsync_dir(self.root)
            self._stack.enter_context(partition_lock(path))
            store = MetaqStore(self.root, self.config)
            self._open[key] = _OpenPartition(store, store.partition(topic, number))
        return self._open[key]

    def next_offset(self, topic: str, number: int) -> int:
        p = self._partition(topic, number)
        return p.start + p.size

    def segment_size(self, topic: str, number: int) -> int:
        return self._partition(topic, number).size

    def append(self, batch: list[NewMessage]) -> list[Appended]:
        """One append call: the records in one write at the end of the last segment, fsync, then the roll."""
        if not batch:
            return []
        if len({(m.topic, m.partition) for m in batch}) != 1:
            raise UsageError("a batch goes to one partition: its messages name several")
        p = self._partition(batch[0].topic, batch[0].partition)
        ids = [m.id if m.id is not None else self.ids.next_id() for m in batch]
        buf = encode_records(batch, ids)
        fd = os.open(p.path, os.O_WRONLY | os.O_APPEND)
        try:
            if os.fstat(fd).st_size != p.size:
                raise StoreError("the segment changed under rmqctl (is a broker running?)", p.path)
            view = memoryview(buf)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        out, pos = [], p.size
        rel = p.store.relative(p.path)
        for m, ident in zip(batch, ids):
            n = len(m.data())
            out.append(Appended(m.topic, m.partition, p.start + pos, n, ident, rel, pos, p.start + p.size, len(buf)))
            pos += M.HEADER_LEN + n
        p.size = pos
        if p.size >= self.config.maxSegmentSize:  # mayBeRoll, after the whole write
            p._new_segment(p.start + p.size)
        return out

    def append_rows(self, rows: Iterable[tuple[NewMessage, object, str | None]]) -> Iterable[Appended]:
        """Messages with their `batch` key and `segment` name (both optional, as `metaq dump` rows carry the
        latter). Consecutive rows with the same non-null batch key are one append call. A row that names the
        same segment as the previous one, after the previous write already brought that segment to
        maxSegmentSize, must have been written in the same call (the broker rolls after every write that
        reaches the size), so it joins it: that is how `dump | append` reproduces every segment."""
        pending: list[NewMessage] = []
        prev_batch = prev_segment = None
        for msg, batch, segment in rows:
            joins = False
            if pending and (msg.topic, msg.partition) == (pending[0].topic, pending[0].partition):
                if batch is not None and batch == prev_batch:
                    joins = True
                elif segment is not None and segment == prev_segment:
                    written = sum(M.HEADER_LEN + len(m.data()) for m in pending)
                    joins = self.segment_size(msg.topic, msg.partition) + written >= self.config.maxSegmentSize
            if pending and not joins:
                yield from self.append(pending)
                pending = []
            pending.append(msg)
            prev_batch, prev_segment = batch, segment
        if pending:
            yield from self.append(pending)
