"""`rmqctl spark export|stats|query|verify`: the pipeline on Apache Spark over one store or a fleet of them
(the optional extra rmqctl[spark]). Every command takes --store several times; --broker-config once for all
stores or once per store, in the same order."""

from __future__ import annotations

import functools
import os
import sys
from typing import Callable, NamedTuple

import click

from ..checks.baseline import judge
from ..errors import EXIT_REFUSED, UsageError
from ..findings import FINDING_COLUMNS
from ..spark import MASTER_ENV, require
from ..spark.inputs import StoreSelection
from ..views.time_range import check_time_range
from .app import cli
from .options import DIRECTORY, FILE, body_option, time_range_options
from .render import FORMATS, echo_err, render
from .verify_cmds import not_read_note, soundness

LOG_LEVELS = ["OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG"]


@cli.group("spark")
def spark_group():
    """Run over many stores on Apache Spark (pip install 'rmqctl[spark]').

    Embedded by default (--master local[*], or $RMQCTL_SPARK_MASTER); under spark-submit the submitted
    master is used. Every executor must see the store paths. Progress is Spark's own (console bar, UI)."""


def spark_options(fn: Callable) -> Callable:
    """--store (repeatable), --broker-config (once, or once per store), --master, --log-level."""

    @click.option(
        "--store",
        "stores",
        multiple=True,
        envvar="ROCKETMQ_STORE",
        type=DIRECTORY,
        help="Store root or commitlog directory; repeat for several stores. Env ROCKETMQ_STORE; default ~/store.",
    )
    @click.option(
        "--broker-config",
        "broker_configs",
        multiple=True,
        type=FILE,
        help="broker.conf: once for every store, or once per --store in the same order.",
    )
    @click.option("--master", envvar=MASTER_ENV, help="Spark master URL (default local[*], or spark-submit's).")
    @click.option(
        "--log-level",
        type=click.Choice(LOG_LEVELS, case_sensitive=False),
        default="OFF",
        show_default=True,
        envvar="RMQCTL_SPARK_LOG_LEVEL",
        help="Spark's own log level on stderr (its task failure logs carry Python tracebacks).",
    )
    @functools.wraps(fn)
    def wrapper(stores, broker_configs, master, log_level, **kwargs):
        selection = StoreSelection(
            [os.path.expanduser(p) for p in stores] or [os.path.expanduser("~/store")], list(broker_configs)
        )
        selection.resolve()  # bad paths and configs fail here, in one line, before a JVM starts
        require()  # before a command imports the modules that need pyspark
        return fn(selection, SparkOptions(master, log_level.upper()), **kwargs)

    return wrapper


# --since/--until of the commands that read messages: the rocketmq source skips files outside the range
time_range = time_range_options(
    "Only messages stored at or after TIME (ISO 8601, local time without a zone, or epoch ms); commitlog files "
    "stored wholly outside the range are not read, every record of the others is checked.",
    "Only messages stored at or before TIME (as --since).",
)


def print_format(fn: Callable) -> Callable:
    return click.option(
        "--format", "fmt", type=click.Choice(FORMATS), help="Output format: table on a terminal, jsonl otherwise."
    )(fn)


def auto_format(fmt: str | None) -> str:
    return fmt or ("table" if sys.stdout.isatty() else "jsonl")


class SparkOptions(NamedTuple):
    master: str | None
    log_level: str


def run_job(options: SparkOptions, job: Callable):
    """Start (or join) the Spark session and run `job(spark)`; a failed job is one line and exit 2."""
    from ..spark import session  # spark's modules need the optional extra (pyspark)
    from ..spark.jobs import spark_errors  # optional extra (pyspark)

    spark = session(options.master, log_level=options.log_level)
    with spark_errors():
        return job(spark)


@spark_group.command("export")
@spark_options
@click.option("--out", required=True, help="Output directory, on a filesystem the driver and every executor share.")
@click.option(
    "--format",
    "file_format",
    type=click.Choice(["parquet", "orc"]),
    default="parquet",
    show_default=True,
    help="File format of the export (both snappy-compressed).",
)
@click.option(
    "--partition-by",
    type=click.Choice(["topic", "date", "none"]),
    default="topic",
    show_default=True,
    help="Directory layout: OUT/topicDir=<topic>/, OUT/date=<UTC store date>/, or files straight in OUT.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing export (the previous one stays if the run fails).")
@click.option(
    "--max-records-per-file",
    "max_records",
    type=int,
    help="Close a file at this many messages and go on in the next (default: no limit).",
)
@time_range
def spark_export(selection, spark_options, out, file_format, partition_by, overwrite, max_records, since, until):
    """Export every message to Parquet (or ORC), one directory per topic (or store date).

    Files go under OUT/topicDir=<topic>/ (Spark's partition layout; the exact topic is in the `topic`
    column), OUT/date=YYYY-MM-DD/ (the UTC date of storeTimestamp) or straight into OUT, one task per run of
    a store's commitlog files (up to 1 GiB), one file per task and directory (or per --max-records-per-file
    messages), with the columns of the `rocketmq` data source (`rmqctl spark schema`). Prints the
    messages and files written per store and topic (or date).

    _SUCCESS is written last. An OUT that is not empty is refused unless --overwrite; then, once every task
    has succeeded, the previous export is removed (its _SUCCESS first) and the new one moved in, so a failed
    run leaves the previous export as it was. Damage ends the export of that file, as it ends dump: it is
    reported and the exit code is 2.

    \b
    rmqctl spark export --store /data/a/store --store /data/b/store --out /data/export
    rmqctl spark export --store /data/a/store --out /data/day --partition-by date --since 2024-06-01 --until 2024-06-01T23:59:59.999
    """
    from ..spark.export import export  # optional extra (pyspark)

    check_time_range(since, until)
    result = run_job(
        spark_options,
        lambda spark: export(spark, selection, out, overwrite, file_format, partition_by, since, until, max_records),
    )
    render(result.rows, auto_format(None))
    for line in result.damage:
        echo_err(f"rmqctl: {line}")
    if result.damage:
        raise click.exceptions.Exit(EXIT_REFUSED)


@spark_group.command("stats")
@spark_options
@click.option(
    "--by",
    type=click.Choice(["queue", "hour"]),
    default="queue",
    show_default=True,
    help="Per store/topic/queue, or also per hour of storeTimestamp (UTC).",
)
@time_range
@print_format
def spark_stats(selection, spark_options, by, since, until, fmt):
    """Messages, bytes, first/last store time and distinct keys per topic and queue.

    One row per store, topic and queue (and hour of storeTimestamp, UTC, with --by hour): messages, bytes
    (storeSize), bodyBytes, firstStoreTimestamp, lastStoreTimestamp (epoch ms) and distinctKeys (KEYS words).

    \b
    rmqctl spark stats --store /data/a/store --store /data/b/store --by hour
    rmqctl spark stats --store /data/a/store --since 2024-06-01T00:00 --until 2024-06-01T00:01
    """
    from ..spark import jobs  # optional extra (pyspark)

    check_time_range(since, until)
    in_range = lambda spark: jobs.messages(spark, selection, since=since, until=until)
    render(run_job(spark_options, lambda spark: jobs.stats(in_range(spark), by == "hour")), auto_format(fmt))


@spark_group.command("query")
@spark_options
@click.option("--key", required=True, help="A KEYS word or a UNIQ_KEY.")
@click.option("--topic", help="Only this topic (pushed down to the reader).")
@body_option("How to render bodies (as in dump commitlog).")
@time_range
@print_format
def spark_query(selection, spark_options, key, topic, body, since, until, fmt):
    """Find messages by key in every store, without index files.

    Scans the commitlogs for KEY as a KEYS word or as UNIQ_KEY; prints the messages in the dump commitlog
    shape with `store` first.

    \b
    rmqctl spark query --store /data/a/store --store /data/b/store --key ORDER-1002 --topic TopicTest
    """
    from ..spark import jobs  # optional extra (pyspark)

    if not key:
        raise UsageError("--key must not be empty")
    check_time_range(since, until)
    in_range = lambda spark: jobs.messages(spark, selection, since=since, until=until)
    render(run_job(spark_options, lambda spark: jobs.query_key(in_range(spark), key, topic, body)), auto_format(fmt))


@spark_group.command("schema")
@print_format
def spark_schema(fmt):
    """The columns of the `rocketmq` data source and of `spark export`'s files: name, Spark type, what it holds.

    The declaration the source and the export are built from (rmqctl.spark.columns.MESSAGE_COLUMNS). In the
    files of the topic layout the directory adds `topicDir` (the topic, shortened when too long for a
    directory name); --partition-by date adds `date`. verifyCrc=true adds `crcOk` (boolean) to the source.

    \b
    rmqctl spark schema
    rmqctl spark schema --format csv
    """
    require()
    from ..spark.columns import MESSAGE_COLUMNS  # optional extra (pyspark)

    render(
        [{"column": name, "type": kind.simpleString(), "holds": about} for name, kind, about in MESSAGE_COLUMNS],
        auto_format(fmt),
        ["column", "type", "holds"],
    )


VERIFY_COLUMNS = ["store", *FINDING_COLUMNS]


@spark_group.command("verify")
@spark_options
@click.option(
    "--only",
    type=click.Choice(["commitlog", "consumequeue", "index"]),
    help="Report only this part (the commitlog is read in any case).",
)
@click.option("--deep", is_flag=True, help="Also check that every key of every message is in the index.")
@click.option("--max-findings", type=int, help="Stop listing after N findings per store (the exit code still says 1).")
@time_range_options(
    "Check only the commitlog from the first record stored at or after TIME (ISO 8601, local time without a "
    "zone, or epoch ms) to the last one stored by --until, as verify does.",
    "Check only up to the last record stored at or before TIME (as --since).",
)
@print_format
def spark_verify(selection, spark_options, only, deep, max_findings, since, until, fmt):
    """Verify every store, one Spark task per commitlog file.

    The same findings as `rmqctl verify`, with `store` first; a summary per store goes to stderr.
    Exit 0 when every store is sound, 1 with findings. --since/--until narrow each store's check to the
    offsets from its first message stored in the range to its last, found on the driver as `verify
    --since` finds them (one record read per commitlog file, then a scan of the files that can hold it).

    \b
    rmqctl spark verify --store /data/a/store --store /data/b/store
    rmqctl spark verify --store /data/a/store --since 2024-06-01T00:00 --until 2024-06-01T00:01
    """
    from ..spark.verify import verify_stores  # optional extra (pyspark)

    if max_findings is not None and max_findings < 0:
        raise UsageError("--max-findings must not be negative")
    stores = [inp.store() for inp in selection.resolve()]
    check_time_range(since, until)
    results = run_job(spark_options, lambda spark: verify_stores(spark, stores, only, deep, max_findings, since, until))
    rows = [{"store": str(store.root), **f.to_dict()} for store, result in results for f in result.findings]
    if rows or fmt in ("json", "csv"):
        render(rows, auto_format(fmt), VERIFY_COLUMNS)
    for store, result in results:
        s = result.stats
        unread = store.parts.unread_named
        state = (
            f"{len(result.problems)} problem(s), {len(result.findings)} finding(s){not_read_note(unread)}"
            if result.findings
            else soundness(unread)
        )
        echo_err(
            f"spark verify: {store.root}: {s['records']} records, {s['bytes'] / 1e6:.1f} MB of commitlog in "
            f"{s['jobs']} task(s): {state}"
        )
    # verify's own policy per store (checks/baseline.judge): the fleet fails when any store does
    raise click.exceptions.Exit(
        max((judge(result.findings, result.truncated).exit_code for _, result in results), default=0)
    )
