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

from ..errors import StoreError, where
from ..views.time_range import FileSpan, file_spans
from ..rocksdbcq import UNIT_VALUE_SIZE, RocksConsumeQueues
from ..store import ConsumeQueue, IndexFile
from .columns import (
    CONSUMEQUEUE_COLUMNS,
    CRC_COLUMN,
    INDEX_COLUMNS,
    SPARK_TIME_MS,
    commitlog_columns,
    consumequeue_batches,
    rocks_consumequeue_batches,
    index_batches,
    message_batches,
)
from .inputs import StoreInput, inputs_from_options, option_bool, settle_commitlog_geometry
from .batchcq_source import BATCHCQ
from .filesource import FilePart, FileReader, FileSource, data_source
from .metaq import METAQ
from .timer_source import TIMERLOG

try:  # filter pushdown arrived in Spark 4.1
    from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan, LessThanOrEqual
except ImportError:  # pragma: no cover - Spark 4.0
    EqualTo = GreaterThan = GreaterThanOrEqual = In = LessThan = LessThanOrEqual = None

log = logging.getLogger("rmqctl.spark")

CQ_PARTITION_BYTES = 64 << 20  # whole queues are grouped until their files reach this size


def plan_commitlog(
    inputs: list[StoreInput],
    start: int | None = None,
    end: int | None = None,
    since: int | None = None,
    until: int | None = None,
) -> list[FilePart]:
    """One partition per commitlog file (of every store) that overlaps [start, end) and, with a store time
    range [since, until] (epoch ms), may hold messages stored in it: files whose span of store times
    (time_range.file_spans: one record read per file) lies outside are not planned. A part's `source` is its
    store (StoreInput, geometry settled), [`start`, `end`) its commitlog range."""
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
                parts.append(FilePart((settled.root, lo), source=settled, start=lo, end=hi))
    return parts


EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
MICRO = dt.timedelta(microseconds=1)


def closed_range(f, value: int, scale: int = 1) -> tuple[int | None, int | None] | None:
    """The integers n (inclusive bounds, None: open) with `n * scale <op> value` for a comparison filter `f`."""
    floor, ceil = value // scale, -(-value // scale)
    if isinstance(f, EqualTo):
        return (value // scale, value // scale) if value % scale == 0 else (1, 0)
    return {
        GreaterThan: (floor + 1, None),
        GreaterThanOrEqual: (ceil, None),
        LessThan: (None, ceil - 1),
        LessThanOrEqual: (None, floor),
    }.get(type(f))


def micros(value) -> int | None:
    """A pushed timestamp literal as epoch microseconds (Spark hands it over as an aware datetime)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return (value - EPOCH) // MICRO
    return None


class PushedFilters:
    """The filters the `rocketmq` source applies itself: topic (= and IN), commitLogOffset and storeTimestamp /
    storeTimestampMs ranges; Spark evaluates the others."""

    def __init__(self):
        self.topics: frozenset[str] | None = None
        self.offsets = [None, None]  # pushed commitLogOffset range, inclusive
        self.times = [None, None]  # pushed storeTimestamp range, epoch ms, inclusive

    def take(self, f) -> bool:
        """Keep a filter this source applies exactly."""
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
                bounds = (
                    max(SPARK_TIME_MS[0], lo if lo is not None else SPARK_TIME_MS[0]),
                    min(SPARK_TIME_MS[1], hi if hi is not None else SPARK_TIME_MS[1]),
                )
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


def message_source_columns(options) -> list:
    extra = [CRC_COLUMN] if option_bool(options, "verifyCrc") else []
    return commitlog_columns(inp.store() for inp in inputs_from_options(options)) + extra


def plan_messages(reader: FileReader) -> list[FilePart]:
    start, last = reader.pushed.offsets
    end = None if last is None else last + 1
    times = reader.pushed.times if option_bool(reader.options, "pruneByStoreTime", True) else (None, None)
    return plan_commitlog(inputs_from_options(reader.options), start, end, *times)


def read_messages(reader: FileReader, part: FilePart):
    """One commitlog file's messages in the pushed ranges; a record the broker would refuse ends the file with a
    warning, or with failOnDamage fails the task."""
    source, pushed = part.source, reader.pushed
    scan = source.store().scan()
    yield from message_batches(
        scan,
        part.start,
        part.end,
        reader.schema,
        source.root,
        option_bool(reader.options, "verifyCrc"),
        pushed.topics,
        *pushed.times,
    )
    for f, pos, e in scan.errors:
        if option_bool(reader.options, "failOnDamage"):
            raise StoreError(e.detail, f.path, f.start + pos)
        log.warning("rmqctl: %s: %s; rest of the file skipped", where(f.path, f.start + pos), e.detail)


MESSAGES = FileSource(
    "rocketmq",
    "store_root_or_commitlog_dir | [paths...]",
    "",
    message_source_columns,
    plan_messages,
    read_messages,
    PushedFilters,
)


def plan_queues(reader: FileReader) -> list[FilePart]:
    """Whole consume queues of every store in groups of about CQ_PARTITION_BYTES of files (of units, for a
    RocksDB consume queue)."""
    parts = []
    for inp in inputs_from_options(reader.options):
        store = inp.store()
        if store.rocks_queues is not None:
            directory = str(store.consumequeue_dir)
            queues = (
                (q.topic, q.queue_id, directory, q.max_offset * UNIT_VALUE_SIZE) for q in store.rocks_queues.queues()
            )
            parts += queue_groups(queues, root=inp.root, file_size=0, rocksdb=directory)
        else:
            queues = (
                (cq.topic, cq.queue_id, str(cq.directory), sum(f.length for f in cq.files.files))
                for cq in store.consume_queues()
            )
            parts += queue_groups(queues, root=inp.root, file_size=store.consumequeue_file_size, rocksdb=None)
    return parts


def queue_groups(queues, **fields) -> list[FilePart]:
    """(topic, queueId, directory, bytes) queues in groups of about CQ_PARTITION_BYTES, each a part with `fields`."""
    parts, group, group_bytes = [], [], 0
    for topic, queue_id, directory, size in queues:
        group.append((topic, queue_id, directory))
        group_bytes += size
        if group_bytes >= CQ_PARTITION_BYTES:
            parts.append(FilePart((fields["root"], group[0][:2]), queues=group, **fields))
            group, group_bytes = [], 0
    if group:
        parts.append(FilePart((fields["root"], group[0][:2]), queues=group, **fields))
    return parts


def read_queues(reader: FileReader, part: FilePart):
    """The units of a group of queues: files of 20-byte units, or a RocksDB consume queue's (`rocksdb`)."""
    if part.rocksdb is not None:
        rocks = RocksConsumeQueues(Path(part.rocksdb))
        try:
            for topic, queue_id, _ in part.queues:
                yield from rocks_consumequeue_batches(rocks, topic, queue_id, reader.schema, part.root)
        finally:
            rocks.close()
        return
    for topic, queue_id, directory in part.queues:
        cq = ConsumeQueue(topic, queue_id, Path(directory), part.file_size)
        yield from consumequeue_batches(cq, reader.schema, part.root)


CONSUMEQUEUES = FileSource(
    "rocketmq-consumequeue",
    "store_root",
    "every written consumequeue unit",
    CONSUMEQUEUE_COLUMNS,
    plan_queues,
    read_queues,
)


def plan_index(reader: FileReader) -> list[FilePart]:
    """One partition per index file of every store."""
    parts = []
    for inp in inputs_from_options(reader.options):
        store = inp.store()
        slots, entries = store.index_geometry
        parts += [
            FilePart((inp.root, ix.path.name), root=inp.root, path=str(ix.path), slots=slots, entries=entries)
            for ix in store.index_files()
        ]
    return parts


def read_index(reader: FileReader, part: FilePart):
    ix = IndexFile(Path(part.path), part.slots, part.entries)
    yield from index_batches(ix, reader.schema, part.root)


INDEX = FileSource("rocketmq-index", "store_root", "every used index entry", INDEX_COLUMNS, plan_index, read_index)

SOURCES = tuple(data_source(s) for s in (MESSAGES, CONSUMEQUEUES, BATCHCQ, INDEX, TIMERLOG, METAQ))
PUSHDOWN = EqualTo is not None
