"""`spark export`: every message of one or many stores to Parquet (or ORC), one directory per topic.

Each Spark task takes one commitlog file: it decodes it with the library (the same Arrow batches the
`rocketmq` data source yields) and writes them with Arrow's Parquet (or ORC) writer straight from the executor,
one file per topic. Nothing goes through JVM rows: turning every message into a Spark row and back into Parquet
costs the JVM as much CPU as decoding costs Python, for a copy that changes nothing. The result is laid out
as Spark's own partitioned writer lays it out (topic=<Spark's escaping of the name>/part-*.parquet,
_SUCCESS on commit), so spark.read.parquet(out) (or .orc) and pyarrow read it back. A 5.x topic can be 32767
bytes long, a directory name at most 255: a topic whose directory name would be longer gets
topic=<its start>~<hash of it>. So the exact name is also in the data of every file, as `topicName`.

Commit: tasks write under out/_temporary-<id>/; the driver moves every file into its topic directory once
all tasks succeeded, then writes _SUCCESS. A retried task rewrites the same names.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import os
import shutil
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pyarrow.parquet as pq

from ..errors import UsageError, where
from .columns import arrow_schema, commitlog_columns, message_batches, struct
from .inputs import StoreSelection
from .sources import CommitLogFile, plan_commitlog

ROW_GROUP_BYTES = 64 << 20
TOPIC_NAME = "topicName"  # the topic as stored, in the data of every exported file
NAME_MAX = 255  # bytes in one directory name (Linux, and the usual cluster filesystems)
# columns with few distinct values; dictionary-encoding the others (bodies, ids, offsets) only costs time
DICTIONARY_COLUMNS = ["store", "file", "magicCode", "queueId", "flag", "sysFlag", "storeHost", "reconsumeTimes",
                      "preparedTransactionOffset", "tags", "properties.key_value.key"]


@dataclasses.dataclass
class ExportResult:
    out: str
    rows: list[dict]  # per store and topic: messages and files written
    damage: list[str]  # records the broker would refuse: the rest of that file was not exported


def _parquet(path: Path, schema: pa.Schema):
    writer = pq.ParquetWriter(path, schema, compression="snappy", use_dictionary=DICTIONARY_COLUMNS)
    return writer.write_table, writer.close


def _orc(path: Path, schema: pa.Schema):
    writer = orc.ORCWriter(str(path), compression="snappy")
    return writer.write, writer.close


# --format: file name suffix and writer (a function of path and schema returning its write and close)
FORMATS = {"parquet": (".snappy.parquet", _parquet), "orc": (".snappy.orc", _orc)}


class TopicFiles:
    """One file per topic for one task, written in row groups (stripes) of about ROW_GROUP_BYTES."""

    def __init__(self, directory: Path, prefix: str, schema: pa.Schema, file_format: str = "parquet"):
        self.suffix, self.open = FORMATS[file_format]
        self.directory = directory
        self.prefix = prefix
        at = schema.get_field_index("topic")  # the directory holds it too, but not always whole: see topic_directory
        self.schema = schema.set(at, schema.field(at).with_name(TOPIC_NAME))
        self.pending: dict[str, list[pa.RecordBatch]] = {}
        self.pending_bytes: dict[str, int] = {}
        self.writers: dict[str, tuple[tuple, str]] = {}  # topic -> ((write, close), file name)
        self.rows: dict[str, int] = {}

    def add(self, batch: pa.RecordBatch):
        ordered = batch.take(pc.sort_indices(batch.column("topic")))
        topics = ordered.column("topic").to_pylist()
        ordered = ordered.rename_columns(self.schema.names)
        start = 0
        for topic, run in itertools.groupby(topics):
            n = sum(1 for _ in run)
            self._append(topic, ordered.slice(start, n))
            start += n

    def _append(self, topic: str, part: pa.RecordBatch):
        self.pending.setdefault(topic, []).append(part)
        self.pending_bytes[topic] = self.pending_bytes.get(topic, 0) + part.nbytes
        self.rows[topic] = self.rows.get(topic, 0) + part.num_rows
        if self.pending_bytes[topic] >= ROW_GROUP_BYTES:
            self._flush(topic)

    def _flush(self, topic: str):
        if topic not in self.writers:
            name = f"{self.prefix}-{len(self.writers):05d}{self.suffix}"
            self.writers[topic] = (self.open(self.directory / name, self.schema), name)
        write, _ = self.writers[topic][0]
        write(pa.Table.from_batches(self.pending.pop(topic), self.schema))
        self.pending_bytes[topic] = 0

    def close(self) -> list[tuple[str, str, int]]:
        """(topic, file name, rows) of every file written."""
        for topic in list(self.pending):
            self._flush(topic)
        for (_, close), _ in self.writers.values():
            close()
        return [(topic, name, self.rows[topic]) for topic, (_, name) in self.writers.items()]


def export_file(numbered: tuple[int, CommitLogFile], staging: str, file_format: str = "parquet") -> dict:
    """Executor side: one commitlog file to per-topic files under `staging`."""
    index, part = numbered
    store = part.source.store()
    schema = arrow_schema(struct(commitlog_columns([store])))
    scan = store.scan()
    files = TopicFiles(Path(staging), f"part-{index:05d}", schema, file_format)
    for batch in message_batches(scan, part.start, part.end, schema, part.source.root, False, None):
        files.add(batch)
    damage = [f"{where(f.path, f.start + pos)}: {e.detail}; rest of the file not exported"
              for f, pos, e in scan.errors]
    return {"store": part.source.root, "files": files.close(), "damage": damage}


def export(spark, selection: StoreSelection, out: str, overwrite: bool = False,
           file_format: str = "parquet") -> ExportResult:
    """Export every message of the selected stores under `out` (a directory every executor can write to), as
    `file_format` (a key of FORMATS)."""
    if file_format not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}")
    target = Path(out).expanduser().resolve()
    if target.exists() and any(target.iterdir()):
        if not overwrite:
            raise UsageError(f"{target} exists and is not empty; pass --overwrite to replace it")
        shutil.rmtree(target)
    parts = plan_commitlog(selection.resolve())
    staging = target / f"_temporary-{uuid.uuid4().hex}"
    staging.mkdir(parents=True)
    sc = spark.sparkContext
    sc.setJobDescription(f"rmqctl spark export: {len(parts)} commitlog file(s) to {target}")
    results = []
    try:
        if parts:
            tasks = sc.parallelize(list(enumerate(parts)), len(parts))
            results = tasks.map(functools.partial(export_file, staging=str(staging), file_format=file_format)).collect()
        rows = commit(spark, target, staging, results)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ExportResult(str(target), rows, [line for r in results for line in r["damage"]])


def topic_directory(partition_path, topic: str) -> str:
    """`topic=<name>` as Spark names the partition; when that is longer than a directory name may be, the
    longest start of the name that fits with `~` and 16 hex digits of its SHA-256 (unique per topic; the
    exact name is in the `topicName` column)."""
    name = partition_path("topic", topic)
    if len(name.encode("utf-8")) <= NAME_MAX:
        return name
    digest = "~" + hashlib.sha256(topic.encode("utf-8")).hexdigest()[:16]
    fits = lambda n: len((partition_path("topic", topic[:n]) + digest).encode("utf-8")) <= NAME_MAX
    lo, hi = 0, len(topic)
    while lo < hi:  # the longest start that fits: escaping only grows with the length
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return partition_path("topic", topic[:lo]) + digest


def commit(spark, target: Path, staging: Path, results: list[dict]) -> list[dict]:
    """Move the staged files into topic directories named as Spark names partitions; then _SUCCESS."""
    naming = spark._jvm.org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils
    directory_name = functools.partial(topic_directory, naming.getPartitionPathString)
    directories: dict[str, Path] = {}
    totals: dict[tuple[str, str], list[int]] = {}
    for r in results:
        for topic, name, rows in r["files"]:
            if topic not in directories:
                directories[topic] = target / directory_name(topic)
                directories[topic].mkdir(exist_ok=True)
            os.replace(staging / name, directories[topic] / name)
            total = totals.setdefault((r["store"], topic), [0, 0])
            total[0] += rows
            total[1] += 1
    shutil.rmtree(staging)
    (target / "_SUCCESS").touch()
    return [{"store": store, "topic": topic, "messages": n, "files": files}
            for (store, topic), (n, files) in sorted(totals.items())]
