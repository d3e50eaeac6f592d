"""`dump commitlog|consumequeue|batchconsumequeue|compaction|index|rocksdbstore|checkpoint` and `locate`."""

from __future__ import annotations

import click

from ..errors import EXIT_FINDINGS, UsageError
from ..views import inspect
from ..views.annotate import record_hex
from ..views.filters import MessageFilter
from ..record import DECOMPRESSION_FACTOR, decompression_limit
from ..rocksdbstore import KINDS
from .app import cli, dump
from .options import OFFSET, body_option, parse_int, store_options, time_range_options
from .render import damage_exits, echo_err, prepare_kernels, render, write_blocks


@dump.command("commitlog")
@store_options
@click.option("--from", "start", type=OFFSET, help="First physical offset (inclusive; decimal or 0x hex).")
@click.option("--to", "end", type=OFFSET, help="Last physical offset (exclusive; decimal or 0x hex).")
@click.option("--topic", help="Only messages of this topic.")
@click.option("--queue-id", type=int, help="Only messages of this queue id.")
@time_range_options(
    "Only messages stored at or after TIME (ISO 8601, local time without a zone, or epoch ms); found by "
    "scanning, the commitlog is not in time order.",
    "Only messages stored at or before TIME (as --since).",
)
@click.option("--tag", help="Only messages whose TAGS property is this.")
@click.option("--key", help="Only messages with this word among their KEYS.")
@click.option(
    "--property",
    "properties",
    multiple=True,
    metavar="NAME=VALUE",
    help="Only messages whose property NAME is VALUE; repeatable (all must match).",
)
@click.option("--msgid", "msg_id", help="Only the message with this offset msgId or UNIQ_KEY.")
@click.option(
    "--sys-flag",
    "sys_flags",
    multiple=True,
    metavar="transaction=STATE",
    help="Only messages in this transaction state: transaction=not|prepared|commit|rollback.",
)
@click.option("--limit", type=int, help="Stop after N messages.")
@body_option("How to render bodies; non-UTF-8 bodies fall back to base64 (see bodyEncoding).")
@click.option("--raw-properties", is_flag=True, help="Add propertiesString, the exact stored property text.")
@click.option("--decompress", is_flag=True, help="Add bodyDecompressed for compressed messages.")
@click.option(
    "--max-decompressed-size",
    type=click.IntRange(min=0),
    metavar="BYTES",
    help=f"With --decompress: a body inflating past this is not decompressed (bodyDecompressedEncoding "
    f"over-limit). Default maxMessageSize x {DECOMPRESSION_FACTOR}.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    help="Threads writing lines while the walk decodes (default: all cores); the order is the same.",
)
def dump_commitlog(
    ctx,
    start,
    end,
    topic,
    queue_id,
    since,
    until,
    tag,
    key,
    properties,
    msg_id,
    sys_flags,
    limit,
    body,
    raw_properties,
    decompress,
    max_decompressed_size,
    jobs,
):
    """Decode every message record of the commitlog, in offset order.

    \b
    rmqctl dump commitlog --store /data/store --broker-config broker.conf --limit 3
    rmqctl dump commitlog --store /data/store --topic TopicTest --from 0x248 --format jsonl | jq .msgId
    rmqctl dump commitlog --store /data/store --since 2024-06-01T00:00 --until 2024-06-01T00:01 --tag TagA
    """
    if limit is not None and limit < 0:
        raise UsageError("--limit must not be negative")
    cap = None  # --decompress: inflate compressed bodies up to this many bytes
    if decompress:
        cap = decompression_limit(ctx.config.maxMessageSize) if max_decompressed_size is None else max_decompressed_size
    where = MessageFilter.parse(since, until, tag, key, properties, msg_id, sys_flags)
    where = None if where == MessageFilter() else where
    from ..engine import dump_kernels  # the compiled kernels load only for this command

    with damage_exits() as warn:
        args = (ctx.store, start, end, topic, queue_id, limit, body, raw_properties, cap, warn, where, jobs)
        prepare_kernels(*dump_kernels(ctx.store.dledger is not None, where))
        if ctx.format == "jsonl":
            write_blocks(inspect.dump_commitlog_lines(*args, views=True))  # (written as they come)
        else:
            render(inspect.dump_commitlog(*args), ctx.format)


def queue_arguments(fn):
    """TOPIC QUEUE_ID: the queue a command reads."""
    return click.argument("topic")(click.argument("queue_id", type=int)(fn))


def render_queue_units(ctx, units, queue: str, offset_field: str):
    """A queue's units as they come; after them, when --resolve found units that do not agree with their records,
    one stderr line naming how many and the queue offset (`offset_field`) of the first, and exit 1."""
    unresolved = []

    def rows():
        for row in units:
            if row.get("ok") is False:
                unresolved.append(row[offset_field])
            yield row

    render(rows(), ctx.format)
    if unresolved:
        echo_err(f"rmqctl: {len(unresolved)} unit(s) of {queue} do not resolve (first at queue offset {unresolved[0]})")
        raise click.exceptions.Exit(EXIT_FINDINGS)


@dump.command("batchconsumequeue")
@store_options
@queue_arguments
@click.option("--resolve", is_flag=True, help="Check each unit against the unit its record makes.")
def dump_batchconsumequeue(ctx, topic, queue_id, resolve):
    """Decode the 46-byte units of one BatchConsumeQueue (5.x topics with queue.type=BatchCQ): each covers the
    queue offsets msgBaseOffset .. msgBaseOffset + batchSize - 1. With --resolve, exit 1 when a unit is not the one
    the broker writes for the record it names.

    \b
    rmqctl dump batchconsumequeue BatchTopic 0 --store /data/store --broker-config broker.conf
    """
    units = inspect.dump_batchconsumequeue(ctx.store, topic, queue_id, resolve)
    render_queue_units(ctx, units, f"{topic}/{queue_id}", "msgBaseOffset")


@dump.command("compaction")
@store_options
@queue_arguments
@click.option("--cq", is_flag=True, help="The compaction CQ's 46-byte units instead of the log's records.")
def dump_compaction(ctx, topic, queue_id, cq):
    """A 5.x compaction topic's queue (cleanup.policy=COMPACTION): the records of compaction/compactionLog (the
    commitlog's, PHYSICALOFFSET rewritten to their place in this log; `inPlace` says whether it is) and each
    file's BLANK end, or with --cq the units of compaction/compactionCq (`end`: the unit closing a full file).

    \b
    rmqctl dump compaction KvTopic 0 --store /data/store
    rmqctl dump compaction KvTopic 0 --cq --store /data/store
    """
    render(inspect.dump_compaction(ctx.store, topic, queue_id, cq), ctx.format)


@dump.command("consumequeue")
@store_options
@queue_arguments
@click.option("--resolve", is_flag=True, help="Check each entry against the record it points at.")
def dump_consumequeue(ctx, topic, queue_id, resolve):
    """Decode the 20-byte units of one consumequeue (TOPIC QUEUE_ID); for a BatchCQ topic, its batch queue's
    units with the broker's queueOffset and batchNum. With --resolve, exit 1 when an entry does not agree with
    the record it points at (or points at none).

    \b
    rmqctl dump consumequeue TopicTest 0 --store /data/store --broker-config broker.conf
    """
    units = inspect.dump_consumequeue(ctx.store, topic, queue_id, resolve)
    render_queue_units(ctx, units, f"{topic}/{queue_id}", "queueOffset")


@dump.command("index")
@store_options
@click.argument("file", required=False)
@click.option("--headers-only", is_flag=True, help="Only the IndexHeader of each file.")
def dump_index(ctx, file, headers_only):
    """Decode index files (all, or FILE): header, then every entry with its slot and chain link.

    \b
    rmqctl dump index --store /data/store --broker-config broker.conf
    rmqctl dump index 20240601000000003 --store /data/store --format jsonl
    """
    with damage_exits() as warn:
        render(inspect.dump_index(ctx.store, file, entries=not headers_only, warn=warn), ctx.format)


@dump.command("rocksdbstore")
@store_options
@click.option(
    "--kind",
    "kinds",
    type=click.Choice(KINDS),
    multiple=True,
    help="Only these kinds (repeatable): index, timer, trans. Default: every kind the layout keeps.",
)
def dump_rocksdbstore(ctx, kinds):
    """The 5.4 RocksDB message store (rocksdbstore/, or the split layout's RocksDBIndexStore/ and
    RocksDBTransStore/: indexRocksDBEnable, timerRocksDBEnable, transRocksDBEnable), one line per key: index records (hour, topic, type K/T/U, key, uniqKey, offsetPy, storeTime), timer records
    (delayTime, uniqKey, offsetPy, sizePy), transaction records (offsetPy, topic, uniqKey, sizePy, checkTimes), and
    the bookkeeping keys. Exit 1 when a key is of neither layout (its bytes shown).

    \b
    rmqctl dump rocksdbstore --store /data/store --broker-config broker.conf
    rmqctl dump rocksdbstore --kind index --store /data/store --format jsonl
    """
    bad = []

    def rows():
        for row in inspect.dump_rocksdbstore(ctx.store, tuple(k for k in KINDS if k in kinds) or None):
            if "problem" in row:
                bad.append(row)
            yield row

    render(rows(), ctx.format)
    if bad:
        echo_err(
            f"rmqctl: {len(bad)} key(s) of the RocksDB message store are not of their kind's layout (first: "
            f"{bad[0]['kind']} key {bad[0]['keyHex']}: {bad[0]['problem']})"
        )
        raise click.exceptions.Exit(EXIT_FINDINGS)


@dump.command("checkpoint")
@store_options
def dump_checkpoint(ctx):
    """Decode the checkpoint file (3 fields in 4.9, 5 in 5.x).

    \b
    rmqctl dump checkpoint --store /data/store
    """
    render([inspect.dump_checkpoint(ctx.store)], ctx.format, blocks=True)


@cli.command("locate")
@store_options
@click.argument("offset")
@click.option("--topic", help="Locate a consumequeue offset of this topic instead of a commitlog offset.")
@click.option("--queue-id", type=int, default=0, show_default=True, help="Queue id, with --topic.")
@click.option(
    "--hex", "hex_view", is_flag=True, help="Show the record there as annotated hex: every field's bytes and name."
)
def locate(ctx, offset, topic, queue_id, hex_view):
    """Find the file and position of a commitlog OFFSET (decimal or 0x hex; or a queue offset with --topic: of a
    BatchCQ topic, the unit whose batch covers it). Exit 1 when the offset lies outside the data (before the
    first file, past the end, an unwritten unit).

    \b
    rmqctl locate 0x248 --store /data/store --hex
    rmqctl locate 4 --topic TopicTest --queue-id 1 --store /data/store
    """
    offset = parse_int(offset, "OFFSET")
    where = inspect.locate(ctx.store, offset, topic, queue_id)
    if hex_view and topic is None and not where.get("nothingThere"):
        click.echo("\n".join(record_hex(ctx.store, offset)))
        return
    render([where], ctx.format, blocks=True)
    if where.get("nothingThere"):  # said where it would be; the exit code says nothing is there
        at = f"commitlog offset {offset}" if topic is None else f"{topic}/{queue_id} queue offset {offset}"
        echo_err(f"rmqctl: {at}: {where['nothingThere']}")
        raise click.exceptions.Exit(EXIT_FINDINGS)
