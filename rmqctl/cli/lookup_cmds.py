"""`msgid decode|lookup` and `query key`."""

from __future__ import annotations

import sys

import click

from ..errors import EXIT_FINDINGS, EXIT_REFUSED, UsageError
from ..views import msgid as msgid_ops
from ..views.annotate import record_hex
from ..views.query import LONG_MAX, MAX_MSGS_NUM_BATCH, query_key_rows
from ..record import message_dict
from .app import msgid, query
from .options import TIME, body_option, store_options
from .render import echo_err, render


@msgid.command("decode")
@store_options
@click.argument("ids", nargs=-1, required=True)
@click.option(
    "--reference-time",
    type=int,
    metavar="MS",
    help="'Now' for the UNIQ_KEY time guess (epoch ms); RocketMQ uses the current month.",
)
def msgid_decode(ctx, ids, reference_time):
    """Decode IDS (or - for stdin) both as an offset msgId and as a UNIQ_KEY.

    With --store (or ROCKETMQ_STORE), says which interpretation the store confirms.

    \b
    rmqctl msgid decode C0A8000A00002A9F0000000000000248
    """
    from_stdin = ids == ("-",)
    if from_stdin:
        ids = tuple(line.strip() for line in sys.stdin if line.strip())
    store = ctx.store if ctx.explicit_store else None
    rows = msgid_ops.decode_ids(list(ids), store, reference_time)
    garbage = [r["id"] for r in rows if r["offset"] is None and r["unique"] is None]
    why = "not a message id: both readings (offset msgId, UNIQ_KEY) need 32 or 56 hex digits"
    if garbage and not from_stdin:
        raise UsageError(f"{garbage[0]!r} is {why}")
    render(rows, ctx.format)
    if garbage:  # a list from stdin: every id still gets its row (both readings null), then the exit code says it
        echo_err(f"rmqctl: {len(garbage)} id(s) from stdin are {why}, e.g. {garbage[0]!r}")
        sys.exit(EXIT_REFUSED)


@msgid.command("lookup")
@store_options
@click.argument("id")
@body_option("How to render bodies (as in dump commitlog).")
@click.option(
    "--hex", "hex_view", is_flag=True, help="Show each record as annotated hex: every field's bytes and name."
)
def msgid_lookup(ctx, id, body, hex_view):
    """The message for an offset msgId, or every message carrying ID as its UNIQ_KEY.

    \b
    rmqctl msgid lookup C0A8000A00002A9F0000000000000248 --store /data/store --broker-config broker.conf
    rmqctl msgid lookup C0A8000A00002A9F0000000000000248 --hex --store /data/store
    """
    hits = msgid_ops.lookup(ctx.store, id)
    if not hits:
        gone = msgid_ops.expired_offset(ctx.store, id)
        why = (
            f": as an offset msgId it names commitlog offset {gone}, below the commitlog's first file (expired: "
            "the broker deleted it)"
            if gone is not None
            else ""
        )
        echo_err(f"rmqctl: no message with id {id} in {ctx.store.root}{why}")
        sys.exit(EXIT_FINDINGS)
    if hex_view:
        click.echo("\n\n".join("\n".join(record_hex(ctx.store, start + m.position)) for _, start, m in hits))
        return
    render([message_dict(m, name, start, body) for name, start, m in hits], ctx.format, blocks=True)


@query.command("key")
@store_options
@click.argument("topic")
@click.argument("key")
@click.option(
    "--begin",
    "--since",
    "begin",
    type=TIME,
    default=0,
    help="Earliest store time, inclusive (ISO 8601, local time without a zone, or epoch ms); the index "
    "files' own time ranges and entries find it, as the broker's queryMessage does.",
)
@click.option("--end", "--until", "end", type=TIME, default=LONG_MAX, help="Latest store time, inclusive (as --begin).")
@click.option(
    "--max",
    "max_num",
    type=click.IntRange(min=0),
    default=MAX_MSGS_NUM_BATCH,
    show_default=True,
    help="At most N messages (the broker caps this at maxMsgsNumBatch, 64).",
)
@body_option("How to render bodies (as in dump commitlog).")
@click.option(
    "--exit-status",
    "-e",
    is_flag=True,
    help="Exit 1 when no message matches, as `msgid lookup` does (default: 0, with a line on stderr).",
)
def query_key(ctx, topic, key, begin, end, max_num, body, exit_status):
    """Messages of TOPIC with KEY (a KEYS word or UNIQ_KEY), found through the index files like the broker's
    queryMessage, with hash collisions dropped.

    \b
    rmqctl query key TopicTest ORDER-1002 --store /data/store --broker-config broker.conf
    """
    rows, result = query_key_rows(ctx.store, topic, key, max_num, begin, end, body)
    for off, why in result.unreadable:
        echo_err(f"rmqctl: warning: index entry points at commitlog offset {off}: {why}")
    for name, count in result.dropped:
        echo_err(
            f"rmqctl: warning: {count} of these offset(s) come from index file {name}, which the broker deletes at its "
            "next start (abort file: its endTimestamp is after the checkpoint's indexMsgTimestamp); it re-indexes only "
            "from where its recovery starts, so it may not find them (verify: index-lost-on-recovery)"
        )
    for name in result.looped:
        echo_err(
            f"rmqctl: warning: index file {name}: the chain of entries for this key loops (a damaged prev leads back "
            "into it): the broker's query never returns there; these are the entries before the loop (rmqctl "
            "verify names the entry, rmqctl rebuild index writes the file again)"
        )
    for name, length, size in result.short:
        echo_err(
            f"rmqctl: warning: index file {name} is {length} bytes, not {size}: the broker reads it as zeros past its "
            "end, so keys indexed there are not found (rmqctl rebuild index writes it again)"
        )
    if not render(rows, ctx.format):
        echo_err(f"rmqctl: no message of {topic} with key {key} in {ctx.store.root}")
        if exit_status:
            sys.exit(EXIT_FINDINGS)
