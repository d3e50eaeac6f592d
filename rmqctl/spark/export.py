"""`spark export`: every message of one or many stores to Parquet (or ORC), one directory per topic (or per
store date, or none).

Each Spark task takes a run of one store's commitlog files (task_runs): it decodes them with the library (the
same Arrow batches the `rocketmq` data source yields) and writes them with Arrow's Parquet (or ORC) writer
straight from the executor, one file per topic, in row groups of about ROW_GROUP_BYTES, holding at most
PENDING_BYTES. Nothing goes through JVM rows: turning every message into a Spark row and back into Parquet
costs the JVM as much CPU as decoding costs Python, for a copy that changes nothing. The result is laid out
as Spark's own partitioned writer lays it out (topicDir=<Spark's escaping of the name>/part-*.parquet,
_SUCCESS on commit), so spark.read.parquet(out) (or .orc) and pyarrow read it back. A 5.x topic can be 32767
bytes long, a directory name at most 255: a topic whose directory name would be longer gets
topicDir=<its start>~<hash of it>. The partition column is therefore not `topic`, which Spark would fill from
the directory name: `topic` is the data column, the exact name in every case (each file holds one topic, so
its Parquet statistics still let a filter on `topic` skip the others' files).

`partition_by="date"` lays the files out as date=<UTC date of storeTimestamp>/ (Spark reads `date` back as a
DateType column); "none" writes them straight into out.

Commit: tasks write under out/_temporary-<id>/; once all tasks succeeded the driver removes the previous
export's _SUCCESS, then the rest of it (--overwrite), moves every file into its directory and writes _SUCCESS
last: a directory without _SUCCESS is not a complete export, and a run that fails leaves the previous export
as it was. A retried task rewrites the same names.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import shutil
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pyarrow.parquet as pq

from ..engine import span_column
from ..errors import UsageError, where
from .columns import arrow_schema, commitlog_columns, message_batches, struct
from .filesource import FilePart
from .inputs import StoreSelection
from .sources import plan_commitlog

ROW_GROUP_BYTES = 64 << 20  # Arrow bytes of a partition's rows written as one row group (stripe)
# Arrow memory a task holds at most before it writes what it holds: its rows of many topics, or of a rare topic
# whose rows keep each whole batch they came from alive, never grow with the commitlog it reads
PENDING_BYTES = 256 << 20
TOPIC_DIRECTORY = "topicDir"  # the topic layout's partition key: `topic` itself is the data column, whole
# commitlog bytes one task exports: a store's small files go to one task (and so to one file per partition value)
TASK_BYTES = 1 << 30
MIN_TASK_BYTES = 256 << 20  # a store is spread over the session's cores in tasks of no less than this
# the engine's batches for an export: larger than its default (4 MiB), so that what is paid per batch (grouping
# rows by partition, the typed columns, a Parquet write's pieces, the walk's hand-back of pages) is paid less often
EXPORT_BATCH = {"rows": 1 << 16, "max_bytes": 16 << 20}
NAME_MAX = 255  # bytes in one directory name (Linux, and the usual cluster filesystems)
# columns with few distinct values; dictionary-encoding the others (bodies, ids, offsets) only costs time
DICTIONARY_COLUMNS = [
    "store",
    "file",
    "magicCode",
    "queueId",
    "flag",
    "sysFlag",
    "storeHost",
    "reconsumeTimes",
    "preparedTransactionOffset",
    "tags",
    "properties.key_value.key",
]


@dataclasses.dataclass
class ExportResult:
    out: str
    rows: list[dict]  # per store and topic: messages and files written
    damage: list[str]  # records the broker would refuse: the rest of that file was not exported


# opaque bytes nobody prunes row groups by: their min/max statistics cost a quarter of the Parquet write
NO_STATISTICS = ("body", "propertiesBytes")


def statistics_columns(schema: pa.Schema) -> list[str]:
    """Every Parquet column of `schema` but those under NO_STATISTICS, by the paths the writer gives them
    (a map's m.key_value.key, a list's l.list.element: a top-level name alone leaves those without)."""
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink)
    columns = pq.ParquetFile(pa.BufferReader(sink.getvalue())).schema
    paths = [columns.column(i).path for i in range(len(columns))]
    return [p for p in paths if p.split(".")[0] not in NO_STATISTICS]


def _parquet(path: Path, schema: pa.Schema):
    writer = pq.ParquetWriter(
        path,
        schema,
        compression="snappy",
        use_dictionary=DICTIONARY_COLUMNS,
        write_statistics=statistics_columns(schema),
    )
    return writer.write_table, writer.close


def _orc(path: Path, schema: pa.Schema):
    writer = orc.ORCWriter(str(path), compression="snappy")
    return writer.write, writer.close


# --format: file name suffix and writer (a function of path and schema returning its write and close)
FORMATS = {"parquet": (".snappy.parquet", _parquet), "orc": (".snappy.orc", _orc)}


PARTITION_BY = ("topic", "date", "none")
NO_DATE = "__HIVE_DEFAULT_PARTITION__"  # Spark's directory for a null partition value (a time it cannot hold)


MS_PER_DAY = 86_400_000


def partition_key(partition_by: str):
    """What message_batches groups a batch's rows by so that each partition value is one run: the topic's
    bytes (as a dictionary code) or the UTC day; None for no partitioning."""
    if partition_by == "topic":
        return lambda chunk: topic_codes(chunk)
    if partition_by == "date":
        return lambda chunk: chunk.column("storeTimestamp") // MS_PER_DAY
    return None


def topic_codes(chunk) -> np.ndarray:
    at = chunk.column("topicAt")
    topics = span_column(chunk.u8, at, at + chunk.column("topicLength"), pa.binary())
    return pc.dictionary_encode(topics).indices.to_numpy()


def runs(values: pa.Array) -> tuple[np.ndarray, list]:
    """Where each run of equal values starts (and one past the end), and each run's value (consecutive nulls
    are one run)."""
    encoded = pc.run_end_encode(values)
    return np.concatenate([[0], encoded.run_ends.to_numpy()]).astype(np.int64), encoded.values.to_pylist()


def partition_runs(batch: pa.RecordBatch, partition_by: str) -> tuple[np.ndarray, list]:
    """The runs (as `runs` gives them) of a batch's partition values: its topic, or the UTC date it was stored
    (None for a time Spark cannot hold); one run of None for no partitioning. A date is formatted once per run,
    not per row."""
    if partition_by == "topic":
        return runs(batch.column("topic"))
    if partition_by == "date":
        stored = batch.column("storeTimestamp")
        starts, _ = runs(stored.cast(pa.date32()).cast(pa.int32()))  # days since the epoch
        return starts, pc.strftime(stored.take(starts[:-1]), "%Y-%m-%d").to_pylist()
    return np.array([0, batch.num_rows], np.int64), [None]


class PartitionFiles:
    """One file per partition value (topic or date) for one task, written in row groups (stripes) of about
    `row_group_bytes`; with `max_records`, a value's file is closed at that many rows and the next one opened.
    Past `pending_bytes` of Arrow memory (the pool's: a run of a batch keeps the whole batch alive), the
    partitions holding the oldest batches are written first."""

    def __init__(
        self,
        directory: Path,
        prefix: str,
        schema: pa.Schema,
        file_format: str = "parquet",
        partition_by: str = "topic",
        max_records: int | None = None,
        row_group_bytes: int = ROW_GROUP_BYTES,
        pending_bytes: int = PENDING_BYTES,
    ):
        self.suffix, self.open = FORMATS[file_format]
        self.row_group_bytes = row_group_bytes
        self.most_pending = pending_bytes
        self.directory = directory
        self.prefix = prefix
        self.partition_by = partition_by
        self.max_records = max_records
        self.schema = schema
        self.pending: dict[str | None, list[pa.RecordBatch]] = {}
        self.pending_bytes: dict[str | None, int] = {}
        self.pending_since: dict[str | None, int] = {}  # value -> the batch its first pending rows came from
        self.batches = 0
        self.writers: dict[str | None, tuple[tuple, str]] = {}  # value -> ((write, close), file name) being written
        self.file_rows: dict[str | None, int] = {}  # value -> rows of its file being written
        self.written: list[tuple[str | None, str, int]] = []  # (value, file name, rows) of every file closed
        self.opened = 0

    def add(self, batch: pa.RecordBatch):
        """A batch's rows to their partitions' files, a run of rows with the same value at a time (batches
        from message_batches grouped by partition_key hold one run per value)."""
        starts, run_values = partition_runs(batch, self.partition_by)
        batch = batch.rename_columns(self.schema.names)
        self.batches += 1
        for k, value in enumerate(run_values):
            self._append(value, batch.slice(starts[k], starts[k + 1] - starts[k]))
        while self.pending and pa.total_allocated_bytes() > self.most_pending:
            self._flush(min(self.pending_since, key=self.pending_since.get))

    def _append(self, value: str | None, part: pa.RecordBatch):
        while part.num_rows:
            room = part.num_rows if self.max_records is None else self.max_records - self.file_rows.get(value, 0)
            piece, part = part.slice(0, room), part.slice(room)
            self.pending.setdefault(value, []).append(piece)
            self.pending_since.setdefault(value, self.batches)
            self.pending_bytes[value] = self.pending_bytes.get(value, 0) + piece.nbytes
            self.file_rows[value] = self.file_rows.get(value, 0) + piece.num_rows
            if self.max_records is not None and self.file_rows[value] >= self.max_records:
                self._flush(value)
                self._finish(value)
            elif self.pending_bytes[value] >= self.row_group_bytes:
                self._flush(value)

    def _flush(self, value: str | None):
        if value not in self.writers:
            name = f"{self.prefix}-{self.opened:05d}{self.suffix}"
            self.opened += 1
            self.writers[value] = (self.open(self.directory / name, self.schema), name)
        write, _ = self.writers[value][0]
        write(pa.Table.from_batches(self.pending.pop(value), self.schema))
        del self.pending_bytes[value], self.pending_since[value]

    def _finish(self, value: str | None):
        (_, close), name = self.writers.pop(value)
        close()
        self.written.append((value, name, self.file_rows.pop(value)))

    def close(self) -> list[tuple[str | None, str, int]]:
        """(partition value, file name, rows) of every file written."""
        for value in list(self.pending):
            self._flush(value)
        for value in list(self.writers):
            self._finish(value)
        return self.written


@dataclasses.dataclass(frozen=True)
class ExportLayout:
    """What every task of one export writes: `file_format` (a key of FORMATS) files laid out by `partition_by`
    (PARTITION_BY), of the messages stored in [since, until] (epoch ms, inclusive; None: open), at most
    `max_records` rows per file (None: no limit). One that cannot be written is a usage error."""

    file_format: str
    partition_by: str
    since: int | None
    until: int | None
    max_records: int | None

    def __post_init__(self):
        if self.max_records is not None and self.max_records < 1:
            raise UsageError("--max-records-per-file must be at least 1")
        if self.file_format not in FORMATS:
            raise UsageError(f"--format must be one of {', '.join(FORMATS)}")
        if self.partition_by not in PARTITION_BY:
            raise UsageError(f"--partition-by must be one of {', '.join(PARTITION_BY)}")


def export_files(numbered: tuple[int, list[FilePart]], staging: str, layout: ExportLayout) -> dict:
    """Executor side: the messages of a run of one store's commitlog files stored in [since, until] to
    per-partition files under `staging`, as `layout` says."""
    index, parts = numbered
    source = parts[0].source
    store = source.store()
    schema = arrow_schema(struct(commitlog_columns([store])))
    scan = store.scan()
    files = PartitionFiles(
        Path(staging), f"part-{index:05d}", schema, layout.file_format, layout.partition_by, layout.max_records
    )
    for part in parts:
        for batch in message_batches(
            scan,
            part.start,
            part.end,
            schema,
            source.root,
            False,
            None,
            layout.since,
            layout.until,
            partition_key(layout.partition_by),
            EXPORT_BATCH,
        ):
            files.add(batch)
    damage = [f"{where(f.path, f.start + pos)}: {e.detail}; rest of the file not exported" for f, pos, e in scan.errors]
    return {"store": source.root, "files": files.close(), "damage": damage}


def task_runs(parts: list[FilePart], cores: int = 1, task_bytes: int = TASK_BYTES) -> list[list[FilePart]]:
    """The planned files grouped into tasks: consecutive files of one store, up to `task_bytes` of commitlog,
    or less where that leaves some of `cores` without a task (never less than MIN_TASK_BYTES)."""
    total = sum(part.end - part.start for part in parts)
    task_bytes = max(MIN_TASK_BYTES, min(task_bytes, -(-total // cores)))
    tasks: list[list[FilePart]] = []
    size = 0
    for part in parts:
        if tasks and tasks[-1][0].source is part.source and size + part.end - part.start <= task_bytes:
            tasks[-1].append(part)
            size += part.end - part.start
        else:
            tasks.append([part])
            size = part.end - part.start
    return tasks


def export(
    spark,
    selection: StoreSelection,
    out: str,
    overwrite: bool = False,
    file_format: str = "parquet",
    partition_by: str = "topic",
    since: int | None = None,
    until: int | None = None,
    max_records: int | None = None,
) -> ExportResult:
    """Export the messages of the selected stores stored in [since, until] (epoch ms, inclusive; None: open)
    under `out` (a directory every executor can write to), as `file_format` (a key of FORMATS), laid out by
    `partition_by` (PARTITION_BY), at most `max_records` rows per file (None: no limit). The commitlog files
    whose store times lie outside the range are not read; one task takes up to TASK_BYTES of a store's files
    (see task_runs)."""
    layout = ExportLayout(file_format, partition_by, since, until, max_records)
    target = Path(out).expanduser().resolve()
    previous = list(target.iterdir()) if target.is_dir() else []
    if previous and not overwrite:
        raise UsageError(f"{target} exists and is not empty; pass --overwrite to replace it")
    sc = spark.sparkContext
    parts = task_runs(plan_commitlog(selection.resolve(), since=since, until=until), sc.defaultParallelism)
    made = [d for d in (target, *target.parents) if not d.exists()]  # deepest first
    staging = target / f"_temporary-{uuid.uuid4().hex}"
    staging.mkdir(parents=True)
    sc.setJobDescription(
        f"rmqctl spark export: {sum(map(len, parts))} commitlog file(s) in {len(parts)} task(s) to {target}"
    )
    results = []
    try:
        if parts:
            task = functools.partial(export_files, staging=str(staging), layout=layout)
            results = sc.parallelize(list(enumerate(parts)), len(parts)).map(task).collect()
        replace_previous(target, previous)
        rows = commit(spark, target, staging, results, partition_by)
    except BaseException:  # a failed or interrupted run (Ctrl-C) leaves no trace, not even an empty --out
        shutil.rmtree(staging, ignore_errors=True)
        for d in made:
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    return ExportResult(str(target), rows, [line for r in results for line in r["damage"]])


def replace_previous(target: Path, previous: list[Path]):
    """Remove what a previous export left (its _SUCCESS first, so it never marks a half-replaced directory)."""
    previous.sort(key=lambda p: p.name != "_SUCCESS")
    for p in previous:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()


def topic_directory(partition_path, topic: str) -> str:
    """`topicDir=<name>` as Spark names the partition; when that is longer than a directory name may be, the
    longest start of the name that fits with `~` and 16 hex digits of its SHA-256 (unique per topic; the
    exact name is in the `topic` column)."""
    name = partition_path(TOPIC_DIRECTORY, topic)
    if len(name.encode("utf-8")) <= NAME_MAX:
        return name
    digest = "~" + hashlib.sha256(topic.encode("utf-8")).hexdigest()[:16]
    fits = lambda n: len((partition_path(TOPIC_DIRECTORY, topic[:n]) + digest).encode("utf-8")) <= NAME_MAX
    lo, hi = 0, len(topic)
    while lo < hi:  # the longest start that fits: escaping only grows with the length
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return partition_path(TOPIC_DIRECTORY, topic[:lo]) + digest


def commit(spark, target: Path, staging: Path, results: list[dict], partition_by: str = "topic") -> list[dict]:
    """Move the staged files into their partition directories, named as Spark names partitions; then _SUCCESS.
    One summary row per store and partition value: messages and files."""
    naming = spark._jvm.org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils
    directory_name = {
        "topic": functools.partial(topic_directory, naming.getPartitionPathString),
        "date": lambda day: naming.getPartitionPathString("date", day) if day is not None else f"date={NO_DATE}",
        "none": lambda _: "",
    }[partition_by]
    directories: dict[str | None, Path] = {}
    totals: dict[tuple[str, str | None], list[int]] = {}
    for r in results:
        for value, name, rows in r["files"]:
            if value not in directories:
                directories[value] = target / directory_name(value)
                directories[value].mkdir(exist_ok=True)
            os.replace(staging / name, directories[value] / name)
            total = totals.setdefault((r["store"], value), [0, 0])
            total[0] += rows
            total[1] += 1
    shutil.rmtree(staging)
    (target / "_SUCCESS").touch()
    named = (lambda value: {}) if partition_by == "none" else (lambda value: {partition_by: value})
    return [
        {"store": store, **named(value), "messages": n, "files": files}
        for (store, value), (n, files) in sorted(totals.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))
    ]
