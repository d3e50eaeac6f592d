"""`msgid decode|lookup` and `query key`."""
from __future__ import annotations

import sys

import click

from ..ops import msgid as msgid_ops
from ..ops.annotate import record_hex
from ..ops.query import LONG_MAX, MAX_MSGS_NUM_BATCH, query_key_rows
from ..record import message_dict
from .base import echo_err, msgid, query, render, store_options


@msgid.command("decode")
@store_options
@click.argument("ids", nargs=-1, required=True)
@click.option("--reference-time", type=int, metavar="MS",
              help="'Now' for the UNIQ_KEY time guess (epoch ms); RocketMQ uses the current month.")
def msgid_decode(ctx, ids, reference_time):
    """Decode IDS (or - for stdin) both as an offset msgId and as a UNIQ_KEY.

    With --store (or ROCKETMQ_STORE), says which interpretation the store confirms."""
    if ids == ("-",):
        ids = tuple(line.strip() for line in sys.stdin if line.strip())
    store = ctx.store if ctx.explicit_store else None
    render(msgid_ops.decode_ids(list(ids), store, reference_time), ctx.format)


@msgid.command("lookup")
@store_options
@click.argument("id")
@click.option("--body", type=click.Choice(["utf8", "base64", "hex", "none"]), default="utf8", show_default=True,
              help="How to render bodies (as in dump commitlog).")
@click.option("--hex", "hex_view", is_flag=True, help="Show each record as annotated hex: every field's bytes and name.")
def msgid_lookup(ctx, id, body, hex_view):
    """The message for an offset msgId, or every message carrying ID as its UNIQ_KEY."""
    hits = msgid_ops.lookup(ctx.store, id)
    if not hits:
        echo_err(f"rmqctl: no message with id {id} in {ctx.store.root}")
        sys.exit(1)
    if hex_view:
        click.echo("\n\n".join("\n".join(record_hex(ctx.store, start + m.position)) for _, start, m in hits))
        return
    render([message_dict(m, name, start, body) for name, start, m in hits], ctx.format, blocks=True)


@query.command("key")
@store_options
@click.argument("topic")
@click.argument("key")
@click.option("--begin", type=int, default=0, metavar="MS", help="Earliest store time (epoch ms).")
@click.option("--end", type=int, default=LONG_MAX, metavar="MS", help="Latest store time (epoch ms).")
@click.option("--max", "max_num", type=int, default=MAX_MSGS_NUM_BATCH, show_default=True,
              help="At most N messages (the broker caps this at maxMsgsNumBatch, 64).")
@click.option("--body", type=click.Choice(["utf8", "base64", "hex", "none"]), default="utf8", show_default=True,
              help="How to render bodies (as in dump commitlog).")
def query_key(ctx, topic, key, begin, end, max_num, body):
    """Messages of TOPIC with KEY (a KEYS word or UNIQ_KEY), found through the index files like the broker's
    queryMessage, with hash collisions dropped."""
    rows, result = query_key_rows(ctx.store, topic, key, max_num, begin, end, body)
    for off, why in result.unreadable:
        echo_err(f"rmqctl: warning: index entry points at offset {off}: {why}")
    render(rows, ctx.format, blocks=True)
