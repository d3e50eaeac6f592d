"""The RocksDB consume queue (storeType=defaultRocksDB; develop's double write keeps one beside the files):
the database in {root}/consumequeue/ with column families `default` (one key per unit) and `offset` (each
queue's min and max, and the dispatch checkpoint). Read through rmqctl.rocksdb, never written here.

Sources (apache/rocketmq 5.3.3 store module): queue/RocksDBConsumeQueueTable.java (unit key and value),
queue/RocksDBConsumeQueueOffsetTable.java (offset key, value, checkpoint; getMinCqOffset/getMaxCqOffset),
queue/RocksDBConsumeQueueStore.java (getMaxOffsetInQueue = max cqOffset + 1), rocksdb/ConsumeQueueRocksDBStorage.
"""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path
from typing import Iterator

import numpy as np

from .errors import StoreError
from .rocksdb import ReadOnlyDB, compression, rocksdict
from .rules import record_expired

UNIT_CF, OFFSET_CF = "default", "offset"
CTRL_0, CTRL_1, CTRL_2 = b"\x00", b"\x01", b"\x02"
CHECKPOINT_TOPIC = "CHECKPOINT_TOPIC"  # TopicValidator.RMQ_SYS_ROCKSDB_OFFSET_TOPIC
MAX, MIN = b"max", b"min"
# the unit's value: phyOffset, size, tagsCode, then the store time the file unit does not have
UNIT_VALUE = np.dtype([("commitLogOffset", ">i8"), ("size", ">i4"), ("tagsCode", ">i8"), ("storeTimestamp", ">i8")])
UNIT_VALUE_SIZE = 28
OFFSET_VALUE = struct.Struct(">qq")  # phyOffset, cqOffset
INT32, INT64 = struct.Struct(">i"), struct.Struct(">q")
BATCH_UNITS = 1 << 16  # units decoded at a time: memory stays flat in a queue's length


def topic_part(topic: str) -> bytes:
    """int32 topic length | CTRL_1 | topic | CTRL_1: how every key of both column families starts."""
    raw = topic.encode("utf-8")
    return INT32.pack(len(raw)) + CTRL_1 + raw + CTRL_1


def queue_prefix(topic: str, queue_id: int) -> bytes:
    """The unit keys of one queue start with this; the queue offset follows (buildCQKeyByteBuffer0)."""
    return topic_part(topic) + INT32.pack(queue_id) + CTRL_1


def unit_key(topic: str, queue_id: int, queue_offset: int) -> bytes:
    return queue_prefix(topic, queue_id) + INT64.pack(queue_offset)


def offset_key(topic: str, which: bytes, queue_id: int) -> bytes:
    """int32 T | 1 | topic | 1 | "max"/"min" | 1 | int32 queueId (buildOffsetKeyByteBuffer)."""
    return topic_part(topic) + which + CTRL_1 + INT32.pack(queue_id)


def split_topic(key: bytes) -> tuple[str, bytes]:
    """(topic, the rest after its closing CTRL_1) of a key; ValueError when the key is not of this layout."""
    if len(key) < 6:
        raise ValueError("shorter than a topic prefix")
    n = INT32.unpack_from(key)[0]
    if n <= 0 or len(key) < 6 + n or key[4:5] != CTRL_1 or key[5 + n : 6 + n] != CTRL_1:
        raise ValueError("no topic length and separators")
    return key[5 : 5 + n].decode("utf-8"), key[6 + n :]


def parse_offset_key(key: bytes) -> tuple[str, bytes, int]:
    """(topic, b"max"/b"min", queueId)."""
    topic, rest = split_topic(key)
    if len(rest) != 8 or rest[3:4] != CTRL_1 or rest[:3] not in (MAX, MIN):
        raise ValueError("not max/min and a queue id")
    return topic, rest[:3], INT32.unpack_from(rest, 4)[0]


@dataclasses.dataclass
class RocksQueue:
    """One queue as the offset column family records it: (phyOffset, cqOffset) of its first and last unit."""

    topic: str
    queue_id: int
    max_entry: tuple[int, int] | None = None
    min_entry: tuple[int, int] | None = None

    @property
    def max_offset(self) -> int:
        """getMaxOffsetInQueue: the last unit's queue offset + 1, 0 without a max entry."""
        return self.max_entry[1] + 1 if self.max_entry else 0


class RocksConsumeQueues:
    """The RocksDB consume queue of a store, opened read-only on first use."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._db: ReadOnlyDB | None = None
        self._table: tuple[dict, int | None] | None = None

    @property
    def db(self) -> ReadOnlyDB:
        if self._db is None:
            self._db = ReadOnlyDB(self.directory, (UNIT_CF, OFFSET_CF))
        return self._db

    def _offset_table(self) -> tuple[dict, int | None]:
        """Every queue of the offset CF, and the dispatch checkpoint (None when absent)."""
        if self._table is None:
            queues: dict[tuple[str, int], RocksQueue] = {}
            checkpoint = None
            for key, value in self.db.items(OFFSET_CF):
                try:
                    topic, which, qid = parse_offset_key(key)
                except (ValueError, UnicodeDecodeError) as e:
                    raise StoreError(
                        f"offset column family: key {key.hex()} is not a queue's min/max key ({e})", self.directory
                    ) from None
                if topic == CHECKPOINT_TOPIC:
                    if which == MAX and qid == 0 and len(value) >= 8:
                        checkpoint = INT64.unpack_from(value)[0]
                    continue
                if len(value) != OFFSET_VALUE.size:
                    raise StoreError(
                        f"offset column family: {topic}/{qid} {which.decode()} has a {len(value)}-byte "
                        f"value, not {OFFSET_VALUE.size}",
                        self.directory,
                    )
                q = queues.setdefault((topic, qid), RocksQueue(topic, qid))
                setattr(q, "max_entry" if which == MAX else "min_entry", OFFSET_VALUE.unpack(value))
            self._table = (queues, checkpoint)
        return self._table

    def queues(self) -> list[RocksQueue]:
        """Every queue with a min or max entry, by topic and queue id."""
        return sorted(self._offset_table()[0].values(), key=lambda q: (q.topic, q.queue_id))

    def queue(self, topic: str, queue_id: int) -> RocksQueue | None:
        return self._offset_table()[0].get((topic, queue_id))

    @property
    def checkpoint(self) -> int | None:
        """The commitlog offset dispatch got to (getMaxPhyOffsetInConsumeQueue): recovery restarts there."""
        return self._offset_table()[1]

    def min_offset(self, q: RocksQueue, min_phy: int) -> int:
        """getMinCqOffset without its writes: the min entry while it points into the commitlog, else the first
        unit at or past the commitlog's min offset (correctMinCqOffset's search)."""
        if q.min_entry is not None and not record_expired(q.min_entry[0], min_phy):
            return q.min_entry[1]
        if q.max_entry is None:
            return 0
        if record_expired(q.max_entry[0], min_phy):
            return q.max_entry[1] + 1
        start = q.min_entry[1] if q.min_entry is not None else 0
        for qoffs, units in self.units(q.topic, q.queue_id, start, q.max_entry[1] + 1):
            at = np.flatnonzero(~record_expired(units["commitLogOffset"], min_phy))
            if len(at):
                return int(qoffs[at[0]])
        return start

    def unit(self, topic: str, queue_id: int, queue_offset: int) -> tuple[int, int, int, int] | None:
        """(commitLogOffset, size, tagsCode, storeTimestamp) at one queue offset, or None (getCQInKV)."""
        value = self.db.get(UNIT_CF, unit_key(topic, queue_id, queue_offset))
        if value is None:
            return None
        if len(value) != UNIT_VALUE_SIZE:
            raise StoreError(
                f"unit column family: {topic}/{queue_id} at {queue_offset} has a {len(value)}-byte value, "
                f"not {UNIT_VALUE_SIZE}",
                self.directory,
            )
        unit = np.frombuffer(value, UNIT_VALUE)[0]
        return tuple(int(unit[n]) for n in UNIT_VALUE.names)

    def units(
        self, topic: str, queue_id: int, lo: int = 0, hi: int | None = None, batch: int = BATCH_UNITS
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(queue offsets, units as UNIT_VALUE) of the queue's keys lo <= offset < hi, `batch` at a time."""
        prefix = queue_prefix(topic, queue_id)
        end = prefix + INT64.pack(hi) if hi is not None else prefix[:-1] + CTRL_2
        keys, values = [], []
        for key, value in self.db.items(UNIT_CF, prefix + INT64.pack(max(lo, 0)), end):
            if len(key) != len(prefix) + 8 or len(value) != UNIT_VALUE_SIZE:
                raise StoreError(
                    f"unit column family: key {key.hex()} ({len(value)}-byte value) is not a unit of "
                    f"{topic}/{queue_id}: a unit has a {len(prefix) + 8}-byte key and a "
                    f"{UNIT_VALUE_SIZE}-byte value",
                    self.directory,
                )
            keys.append(key[-8:])
            values.append(value)
            if len(keys) == batch:
                yield decode(keys, values)
                keys, values = [], []
        if keys:
            yield decode(keys, values)

    def close(self):
        if self._db is not None:
            self._db.close()
            self._db = None


def decode(offset_bytes: list[bytes], values: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    qoffs = np.frombuffer(b"".join(offset_bytes), ">i8").astype(np.int64)
    return qoffs, np.frombuffer(b"".join(values), UNIT_VALUE)


def family_options(compression_type: str = "lz4", bottommost: str = "zstd") -> dict:
    """The column families as RocksDBOptionsFactory makes them (5.3.3): the unit CF block-based (format 5, 32 KiB
    blocks, Bloom 16 bits, binary-and-hash data index), `compression_type` with `bottommost` at the last level,
    universal compaction; the offset CF uncompressed, level compaction. Bytewise comparator for both."""
    rd = rocksdict()

    def table(hash_index: bool):
        t = rd.BlockBasedOptions()
        t.set_format_version(5)
        t.set_block_size(32 * 1024)
        t.set_bloom_filter(16, False)
        if hash_index:
            t.set_data_block_index_type(rd.DataBlockIndexType.binary_and_hash())
            t.set_data_block_hash_ratio(0.75)
            t.set_metadata_block_size(4 * 1024)
        return t

    units = rd.Options(raw_mode=True)
    units.set_block_based_table_factory(table(True))
    units.set_compression_type(compression(compression_type))
    units.set_bottommost_compression_type(compression(bottommost))
    units.set_compaction_style(rd.DBCompactionStyle.universal())
    units.set_write_buffer_size(128 << 20)
    offsets = rd.Options(raw_mode=True)
    offsets.set_block_based_table_factory(table(False))
    offsets.set_compression_type(compression("none"))
    offsets.set_compaction_style(rd.DBCompactionStyle.level())
    offsets.set_write_buffer_size(64 << 20)
    return {UNIT_CF: units, OFFSET_CF: offsets}
