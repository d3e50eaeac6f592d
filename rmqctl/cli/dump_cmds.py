"""`dump commitlog|consumequeue|index|checkpoint` and `locate`."""
from __future__ import annotations

import click

from ..errors import EXIT_REFUSED
from ..ops import inspect
from ..ops.annotate import record_hex
from ..record import DECOMPRESSION_FACTOR, decompression_limit
from .base import cli, dump, echo_err, parse_int, render, store_options


@dump.command("commitlog")
@store_options
@click.option("--from", "start", type=int, help="First physical offset (inclusive).")
@click.option("--to", "end", type=int, help="Last physical offset (exclusive).")
@click.option("--topic", help="Only messages of this topic.")
@click.option("--queue-id", type=int, help="Only messages of this queue id.")
@click.option("--limit", type=int, help="Stop after N messages.")
@click.option("--body", type=click.Choice(["utf8", "base64", "hex", "none"]), default="utf8", show_default=True,
              help="How to render bodies; non-UTF-8 bodies fall back to base64 (see bodyEncoding).")
@click.option("--raw-properties", is_flag=True, help="Add propertiesString, the exact stored property text.")
@click.option("--decompress", is_flag=True, help="Add bodyDecompressed for compressed messages.")
@click.option("--max-decompressed-size", type=click.IntRange(min=0), metavar="BYTES",
              help=f"With --decompress: a body inflating past this is not decompressed (bodyDecompressedEncoding "
                   f"over-limit). Default maxMessageSize x {DECOMPRESSION_FACTOR}.")
def dump_commitlog(ctx, start, end, topic, queue_id, limit, body, raw_properties, decompress, max_decompressed_size):
    """Decode every message record of the commitlog, in offset order."""
    damage = []

    def warn(msg):
        damage.append(msg)
        echo_err(f"rmqctl: {msg}")

    cap = None
    if decompress:
        cap = decompression_limit(ctx.config.maxMessageSize) if max_decompressed_size is None else max_decompressed_size
    rows = inspect.dump_commitlog(ctx.store, start, end, topic, queue_id, limit, body, raw_properties, cap, warn)
    render(rows, ctx.format, blocks=True)
    if damage:
        # everything readable was printed; the exit code still tells scripts the store is damaged
        raise click.exceptions.Exit(EXIT_REFUSED)


@dump.command("consumequeue")
@store_options
@click.argument("topic")
@click.argument("queue_id", type=int)
@click.option("--resolve", is_flag=True, help="Check each entry against the record it points at.")
def dump_consumequeue(ctx, topic, queue_id, resolve):
    """Decode the 20-byte units of one consumequeue (TOPIC QUEUE_ID)."""
    render(inspect.dump_consumequeue(ctx.store, topic, queue_id, resolve), ctx.format)


@dump.command("index")
@store_options
@click.argument("file", required=False)
@click.option("--headers-only", is_flag=True, help="Only the IndexHeader of each file.")
def dump_index(ctx, file, headers_only):
    """Decode index files (all, or FILE): header, then every entry with its slot and chain link."""
    render(inspect.dump_index(ctx.store, file, entries=not headers_only), ctx.format)


@dump.command("checkpoint")
@store_options
def dump_checkpoint(ctx):
    """Decode the checkpoint file (3 fields in 4.9, 5 in 5.x)."""
    render([inspect.dump_checkpoint(ctx.store)], ctx.format, blocks=True)


@cli.command("locate")
@store_options
@click.argument("offset")
@click.option("--topic", help="Locate a consumequeue offset of this topic instead of a commitlog offset.")
@click.option("--queue-id", type=int, default=0, show_default=True, help="Queue id, with --topic.")
@click.option("--hex", "hex_view", is_flag=True, help="Show the record there as annotated hex: every field's bytes and name.")
def locate(ctx, offset, topic, queue_id, hex_view):
    """Find the file and position of a commitlog OFFSET (decimal or 0x hex; or a queue offset with --topic).

    \b
    rmqctl locate 0x5e2 --store /data/store --hex
    rmqctl locate 42 --topic TopicTest --queue-id 1 --store /data/store
    """
    offset = parse_int(offset, "OFFSET")
    if hex_view and topic is None:
        click.echo("\n".join(record_hex(ctx.store, offset)))
        return
    render([inspect.locate(ctx.store, offset, topic, queue_id)], ctx.format, blocks=True)
