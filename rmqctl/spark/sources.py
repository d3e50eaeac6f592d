"""The PySpark Python Data Sources (Spark 4.x): `rocketmq` (commitlog messages), `rocketmq-consumequeue` and
`rocketmq-index` (entries as rows). Planning (listing files, settling geometry) runs on the driver; each input
partition is one commitlog file, one index file, or a group of whole consume queues, read on an executor
through the library and handed to Spark as Arrow record batches.

Options (all sources): `path` or several paths (store roots, or commitlog directories), `brokerConfig` (one
broker.conf for every store, or a JSON array with one per path), geometry overrides under their broker.conf
names (`mappedFileSizeCommitLog`, `mappedFileSizeConsumeQueue`, `maxHashSlotNum`, `maxIndexNum`).
`rocketmq` also takes `verifyCrc` (adds `crcOk`) and `failOnDamage` (a record the broker would refuse fails
the task instead of ending that file with a warning, as `dump commitlog` does), and takes pushed-down
filters on `topic` (= and IN), `commitLogOffset` (comparisons: whole files outside the range are skipped)
and `storeTimestamp` / `storeTimestampMs` (comparisons and BETWEEN: every record is checked, and the files
whose store times lie wholly outside the range are not read at all, see rmqctl.views.time_range; option
`pruneByStoreTime=false` reads them all, for a store whose broker clock stepped back).
On a DLedger-mode store its partitions are the data files and its rows carry their entry (`dledger`).
"""
from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..errors import StoreError, where
from ..views.time_range import FileSpan, file_spans
from ..rocksdbcq import UNIT_VALUE_SIZE, RocksConsumeQueues
from ..store import ConsumeQueue, IndexFile
from .columns import (
    CONSUMEQUEUE_COLUMNS,
    CRC_COLUMN,
    INDEX_COLUMNS,
    SPARK_TIME_MS,
    arrow_schema,
    commitlog_columns,
    consumequeue_batches,
    rocks_consumequeue_batches,
    index_batches,
    message_batches,
    struct,
)
from .inputs import StoreInput, inputs_from_options, option_bool, settle_commitlog_geometry
from .batchcq_source import BatchConsumeQueueDataSource
from .metaq import MetaqDataSource
from .timer_source import TimerLogDataSource

try:  # filter pushdown arrived in Spark 4.1
    from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan, LessThanOrEqual
except ImportError:  # pragma: no cover - Spark 4.0
    EqualTo = GreaterThan = GreaterThanOrEqual = In = LessThan = LessThanOrEqual = None

log = logging.getLogger("rmqctl.spark")

CQ_PARTITION_BYTES = 64 << 20  # whole queues are grouped until their files reach this size


class CommitLogFile(InputPartition):
    def __init__(self, source: StoreInput, start: int, end: int):
        super().__init__((source.root, start))
        self.source = source
        self.start = start
        self.end = end


def plan_commitlog(inputs: list[StoreInput], start: int | None = None, end: int | None = None,
                   since: int | None = None, until: int | None = None) -> list[CommitLogFile]:
    """One partition per commitlog file (of every store) that overlaps [start, end) and, with a store time
    range [since, until] (epoch ms), may hold messages stored in it: files whose span of store times
    (time_range.file_spans: one record read per file) lies outside are not planned."""
    parts = []
    for inp in inputs:
        settled, store = settle_commitlog_geometry(inp)
        size = store.commitlog.file_size
        by_time = (since is not None or until is not None) and store.dledger is None
        spans = file_spans(store) if by_time else [FileSpan(f, None, None) for f in store.commitlog.files]
        for span in spans:
            f = span.file
            lo = f.start if start is None else max(f.start, start)
            hi = f.start + size if end is None else min(f.start + size, end)
            if lo < hi and span.may_hold(since, until):
                parts.append(CommitLogFile(settled, lo, hi))
    return parts


EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
MICRO = dt.timedelta(microseconds=1)


def closed_range(f, value: int, scale: int = 1) -> tuple[int | None, int | None] | None:
    """The integers n (inclusive bounds, None: open) with `n * scale <op> value` for a comparison filter `f`."""
    floor, ceil = value // scale, -(-value // scale)
    if isinstance(f, EqualTo):
        return (value // scale, value // scale) if value % scale == 0 else (1, 0)
    return {GreaterThan: (floor + 1, None), GreaterThanOrEqual: (ceil, None), LessThan: (None, ceil - 1),
            LessThanOrEqual: (None, floor)}.get(type(f))


def micros(value) -> int | None:
    """A pushed timestamp literal as epoch microseconds (Spark hands it over as an aware datetime)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return (value - EPOCH) // MICRO
    return None


class CommitLogReader(DataSourceReader):
    def __init__(self, options, schema):
        self.inputs = inputs_from_options(options)
        self.verify_crc = option_bool(options, "verifyCrc")
        self.fail_on_damage = option_bool(options, "failOnDamage")
        self.prune_by_time = option_bool(options, "pruneByStoreTime", True)
        self.schema = arrow_schema(schema)
        self.topics: frozenset[str] | None = None
        self.offsets = [None, None]  # pushed commitLogOffset range, inclusive
        self.times = [None, None]  # pushed storeTimestamp range, epoch ms, inclusive

    def pushFilters(self, filters):
        return [f for f in filters if not self._take(f)]

    def _take(self, f) -> bool:
        """Keep a filter this reader applies exactly; Spark evaluates the ones returned."""
        column, value = getattr(f, "attribute", None), getattr(f, "value", None)
        if column == ("topic",):
            if isinstance(f, EqualTo) and isinstance(value, str):
                return self._narrow_topics({value})
            if isinstance(f, In) and all(isinstance(v, str) for v in value):
                return self._narrow_topics(set(value))
        bounds = None
        if column in (("commitLogOffset",), ("storeTimestampMs",)) and type(value) is int:
            bounds = closed_range(f, value)
        elif column == ("storeTimestamp",) and micros(value) is not None:
            bounds = closed_range(f, micros(value), 1000)  # the column holds whole milliseconds
            if bounds is not None:  # and is null (never in range) for a time Spark cannot hold
                lo, hi = bounds
                bounds = (max(SPARK_TIME_MS[0], lo if lo is not None else SPARK_TIME_MS[0]),
                          min(SPARK_TIME_MS[1], hi if hi is not None else SPARK_TIME_MS[1]))
        if bounds is None:
            return False
        narrowed = self.offsets if column == ("commitLogOffset",) else self.times
        lo, hi = bounds
        if lo is not None:
            narrowed[0] = lo if narrowed[0] is None else max(narrowed[0], lo)
        if hi is not None:
            narrowed[1] = hi if narrowed[1] is None else min(narrowed[1], hi)
        return True

    def _narrow_topics(self, topics: set[str]) -> bool:
        self.topics = frozenset(topics if self.topics is None else self.topics & topics)
        return True

    def partitions(self):
        start, last = self.offsets
        end = None if last is None else last + 1
        return plan_commitlog(self.inputs, start, end, *(self.times if self.prune_by_time else (None, None)))

    def read(self, partition: CommitLogFile):
        if not isinstance(partition, CommitLogFile):
            return  # no files: Spark still reads one default partition
        source = partition.source
        scan = source.store().scan()
        yield from message_batches(scan, partition.start, partition.end, self.schema, source.root,
                                   self.verify_crc, self.topics, *self.times)
        for f, pos, e in scan.errors:
            if self.fail_on_damage:
                raise StoreError(e.detail, f.path, f.start + pos)
            log.warning("rmqctl: %s: %s; rest of the file skipped", where(f.path, f.start + pos), e.detail)


class RocketMQDataSource(DataSource):
    """spark.read.format("rocketmq").load(store_root_or_commitlog_dir | [paths...])"""

    @classmethod
    def name(cls):
        return "rocketmq"

    def schema(self):
        extra = [CRC_COLUMN] if option_bool(self.options, "verifyCrc") else []
        return struct(commitlog_columns(inp.store() for inp in inputs_from_options(self.options)) + extra)

    def reader(self, schema):
        return CommitLogReader(self.options, schema)


class QueueGroup(InputPartition):
    def __init__(self, root: str, file_size: int, queues: list[tuple[str, int, str]], rocksdb: str | None = None):
        super().__init__((root, queues[0][:2]))
        self.root = root
        self.file_size = file_size
        self.queues = queues  # (topic, queueId, directory)
        self.rocksdb = rocksdb  # the RocksDB consume queue's directory, when the queues are its


class ConsumeQueueReader(DataSourceReader):
    def __init__(self, options, schema):
        self.inputs = inputs_from_options(options)
        self.schema = arrow_schema(schema)

    def partitions(self):
        parts = []
        for inp in self.inputs:
            store = inp.store()
            if store.rocks_queues is not None:
                parts += rocks_queue_groups(inp.root, store)
                continue
            size = store.consumequeue_file_size
            group, group_bytes = [], 0
            for cq in store.consume_queues():
                group.append((cq.topic, cq.queue_id, str(cq.directory)))
                group_bytes += sum(f.length for f in cq.files.files)
                if group_bytes >= CQ_PARTITION_BYTES:
                    parts.append(QueueGroup(inp.root, size, group))
                    group, group_bytes = [], 0
            if group:
                parts.append(QueueGroup(inp.root, size, group))
        return parts

    def read(self, partition: QueueGroup):
        if not isinstance(partition, QueueGroup):
            return  # no queues: Spark still reads one default partition
        if partition.rocksdb is not None:
            rocks = RocksConsumeQueues(Path(partition.rocksdb))
            try:
                for topic, queue_id, _ in partition.queues:
                    yield from rocks_consumequeue_batches(rocks, topic, queue_id, self.schema, partition.root)
            finally:
                rocks.close()
            return
        for topic, queue_id, directory in partition.queues:
            cq = ConsumeQueue(topic, queue_id, Path(directory), partition.file_size)
            yield from consumequeue_batches(cq, self.schema, partition.root)


def rocks_queue_groups(root: str, store) -> list[QueueGroup]:
    """The queues of a RocksDB consume queue in groups of about CQ_PARTITION_BYTES of units (by their offset range)."""
    parts, group, group_bytes = [], [], 0
    directory = str(store.consumequeue_dir)
    for q in store.rocks_queues.queues():
        group.append((q.topic, q.queue_id, directory))
        group_bytes += q.max_offset * UNIT_VALUE_SIZE
        if group_bytes >= CQ_PARTITION_BYTES:
            parts.append(QueueGroup(root, 0, group, directory))
            group, group_bytes = [], 0
    if group:
        parts.append(QueueGroup(root, 0, group, directory))
    return parts


class ConsumeQueueDataSource(DataSource):
    """spark.read.format("rocketmq-consumequeue").load(store_root): every written consumequeue unit."""

    @classmethod
    def name(cls):
        return "rocketmq-consumequeue"

    def schema(self):
        return struct(CONSUMEQUEUE_COLUMNS)

    def reader(self, schema):
        return ConsumeQueueReader(self.options, schema)


class IndexFilePartition(InputPartition):
    def __init__(self, root: str, path: str, slots: int, entries: int):
        super().__init__((root, Path(path).name))
        self.root = root
        self.path = path
        self.slots = slots
        self.entries = entries


class IndexReader(DataSourceReader):
    def __init__(self, options, schema):
        self.inputs = inputs_from_options(options)
        self.schema = arrow_schema(schema)

    def partitions(self):
        parts = []
        for inp in self.inputs:
            store = inp.store()
            slots, entries = store.index_geometry
            parts += [IndexFilePartition(inp.root, str(ix.path), slots, entries) for ix in store.index_files()]
        return parts

    def read(self, partition: IndexFilePartition):
        if not isinstance(partition, IndexFilePartition):
            return  # no index files: Spark still reads one default partition
        ix = IndexFile(Path(partition.path), partition.slots, partition.entries)
        yield from index_batches(ix, self.schema, partition.root)


class IndexDataSource(DataSource):
    """spark.read.format("rocketmq-index").load(store_root): every used index entry."""

    @classmethod
    def name(cls):
        return "rocketmq-index"

    def schema(self):
        return struct(INDEX_COLUMNS)

    def reader(self, schema):
        return IndexReader(self.options, schema)


SOURCES = (RocketMQDataSource, ConsumeQueueDataSource, BatchConsumeQueueDataSource, IndexDataSource, TimerLogDataSource,
           MetaqDataSource)
PUSHDOWN = EqualTo is not None
