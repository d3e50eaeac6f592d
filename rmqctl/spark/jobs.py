"""The Spark jobs behind `rmqctl spark ...`, usable from a notebook: stats and key query over the `rocketmq`
data source (export and verify have their own modules). `messages` takes a SparkSession with the data sources
registered (rmqctl.spark.session()) and a StoreSelection, and gives their messages (within a time range) as a
DataFrame; stats and query_key take that DataFrame and return plain dicts (the shapes the CLI prints)."""

from __future__ import annotations

import contextlib
import logging
import re
import signal
import sys
import threading

from pyspark import SparkContext
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from py4j.protocol import Py4JJavaError

from ..errors import RmqError, StoreError
from ..views.inspect import ms_text
from ..record import encode_body
from ..engine import SCALARS
from .columns import TIME_COLUMNS
from .inputs import StoreSelection

HOUR_MS = 3_600_000
# the `dump commitlog` object, key for key, in its order (message_dict), with `store` first
DUMP_ORDER = [name for name, _ in SCALARS if name not in ("topic", "msgId", "uniqKey")] + [
    "body",
    "bodyEncoding",
    "topic",
    "properties",
    "msgId",
    "uniqKey",
]


def messages(
    spark: SparkSession,
    selection: StoreSelection,
    verify_crc: bool = False,
    since: int | None = None,
    until: int | None = None,
) -> DataFrame:
    """The messages of every store; with `since`/`until` (epoch ms, inclusive) only those stored in that range,
    kept by a filter on storeTimestampMs that the `rocketmq` source takes: it skips the commitlog files stored
    wholly outside the range and checks every record of the others."""
    reader = spark.read.format("rocketmq").options(**selection.options())
    if verify_crc:
        reader = reader.option("verifyCrc", "true")
    df = reader.load(selection.load_paths())
    if since is not None:
        df = df.filter(F.col("storeTimestampMs") >= since)
    if until is not None:
        df = df.filter(F.col("storeTimestampMs") <= until)
    return df


def stats(df: DataFrame, by_hour: bool = False) -> list[dict]:
    """Of `df` (`messages`), per store, topic and queue (and hour of storeTimestamp, UTC, with by_hour):
    messages, bytes (storeSize), body bytes, first and last storeTimestamp, distinct KEYS words. One pass: keys
    are exploded and only the first row of each message counts towards messages and bytes."""
    group = ["store", "topic", "queueId"]
    if by_hour:
        df = df.withColumn("hour", F.col("storeTimestampMs") - F.pmod("storeTimestampMs", F.lit(HOUR_MS)))
        group.append("hour")
    rows = df.select(
        *group, "storeSize", "bodyLength", "storeTimestampMs", F.posexplode_outer("keys").alias("pos", "key")
    )
    first = F.col("pos").isNull() | (F.col("pos") == 0)
    agg = rows.groupBy(*group).agg(
        F.count(F.when(first, 1)).alias("messages"),
        F.sum(F.when(first, F.col("storeSize"))).alias("bytes"),
        F.sum(F.when(first, F.col("bodyLength"))).alias("bodyBytes"),
        F.min("storeTimestampMs").alias("firstStoreTimestamp"),
        F.max("storeTimestampMs").alias("lastStoreTimestamp"),
        F.count_distinct("key").alias("distinctKeys"),
    )
    out = sorted((r.asDict() for r in agg.collect()), key=lambda row: tuple(row[g] for g in group))
    if by_hour:
        for row in out:
            row["hour"] = ms_text(row["hour"]) or row["hour"]
    return out


def query_key(df: DataFrame, key: str, topic: str | None = None, body: str = "utf8") -> list[dict]:
    """The messages of `df` (`messages`) carrying `key` as a KEYS word or as UNIQ_KEY, found by scanning the
    commitlog (no index files needed); the topic filter is pushed down to the reader. Rows in the `dump
    commitlog` shape with `store` first, ordered by store and offset."""
    if topic is not None:
        df = df.filter(F.col("topic") == topic)
    hits = df.filter(F.array_contains("keys", key) | (F.col("uniqKey") == key))
    rows = sorted((r.asDict() for r in hits.collect()), key=lambda r: (r["store"], r["commitLogOffset"]))
    return [dump_row(r, body) for r in rows]


def dump_row(row: dict, body: str = "utf8") -> dict:
    """A DataFrame row as `dump commitlog` prints the message, with `store` first."""
    out = {"store": row["store"]}
    text, encoding = encode_body(bytes(row["body"]), body)
    values = {
        **row,
        "body": text,
        "bodyEncoding": encoding,
        "properties": dict(row["properties"] or {}),
        **{name: row[f"{name}Ms"] for name in TIME_COLUMNS},
    }
    out.update((name, values[name]) for name in DUMP_ORDER)
    return out


_ERROR_LINE = re.compile(r"^\s*(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$")


@contextlib.contextmanager
def spark_errors():
    """A failed job as one line (the error the Python worker raised, not the JVM's stack): a store an executor
    cannot read is still `path at commitlog offset N: what`. A Ctrl-C (SIGINT, in the main thread) ends the
    block with KeyboardInterrupt, whatever the interrupted call raises on its way out (py4j's network error,
    a cancelled job): the caller's one line and exit 130, not their tracebacks."""
    interrupted = []

    def on_sigint(signum, frame):
        # no py4j call here: the main thread may be inside one on the same connection. The JVM this driver
        # started goes now (its Python daemon and workers follow: their pipe to it closes), so no task writes
        # on and no stage bar is drawn after the one line; py4j's tracebacks about the broken call are noise
        interrupted.append(signum)
        logging.disable(logging.CRITICAL)
        jvm = getattr(SparkContext._gateway, "proc", None)  # None under spark-submit: its JVM is our parent
        if jvm is not None:
            jvm.kill()
            jvm.wait()
        if sys.stderr.isatty():
            sys.stderr.write("\r\x1b[K")  # the stage bar's line, for the one line that follows
        raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_sigint) if main else None
    try:
        yield
    except BaseException as e:
        if interrupted:
            raise KeyboardInterrupt from None
        if isinstance(e, (PySparkException, Py4JJavaError)):
            raise StoreError(first_cause(str(e))) from None
        raise
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


def first_cause(text: str) -> str:
    ours = [m for m in map(_ERROR_LINE.match, text.splitlines()) if m]
    for m in ours:
        if m.group(1) in {cls.__name__ for cls in (RmqError, *all_subclasses(RmqError))}:
            return m.group(2).strip()
    if ours:
        return f"{ours[-1].group(1)}: {ours[-1].group(2).strip()}"
    return text.strip().splitlines()[0] if text.strip() else "Spark job failed"


def all_subclasses(cls) -> list[type]:
    return [sub for direct in cls.__subclasses__() for sub in (direct, *all_subclasses(direct))]
