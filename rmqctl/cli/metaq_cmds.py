"""`rmqctl metaq info|dump|locate|verify|repair|clean|append`: the same verbs for a MetaQ (Metamorphosis)
data path, with the RocketMQ commands' output formats and exit codes."""

from __future__ import annotations

import base64
import datetime as dt
import functools
import json
import os
import sys
from collections import Counter
from typing import Callable

import click

from ..errors import EXIT_REFUSED, UsageError
from ..findings import FINDING_COLUMNS
from ..metaq import clean, inspect
from ..metaq.append import Appender, NewMessage
from ..metaq.config import load_server_config, parse_delete_policy
from ..metaq.cron import next_fire
from ..metaq.store import MetaqStore, check_data_path
from ..record import decode_body
from .app import cli
from .options import DIRECTORY, FILE, OFFSET, body_option, parse_int, parse_time_ms
from .render import FORMATS, damage_exits, echo_err, render


@cli.group()
def metaq():
    """MetaQ (Metamorphosis 1.4.x) segment stores: {dataPath}/{topic}-{partition}/{offset}.meta."""


class MetaqContext:
    def __init__(self, data_path: str | None, server_config: str | None, fmt: str | None):

        self.config = load_server_config(server_config)
        self.explicit = data_path is not None or self.config.dataPath is not None
        # MetaConfig's default dataPath is ~/meta
        self.data_path = data_path or self.config.dataPath or os.path.expanduser("~/meta")
        self.format = fmt or ("table" if sys.stdout.isatty() else "jsonl")
        self._store = None

    @property
    def store(self):

        if self._store is None:
            self._store = MetaqStore(self.data_path, self.config)
            check_data_path(self._store.root)
        return self._store

    def writable_store(self):
        """Writing commands refuse to guess: --store or dataPath in --server-config only."""
        if not self.explicit:
            raise UsageError("this command writes: name the data path with --store (or dataPath in --server-config)")
        return self.store


def metaq_options(fn: Callable) -> Callable:
    """--store, --server-config and --format, after every metaq command's name."""

    @click.option(
        "--store",
        "data_path",
        type=DIRECTORY,
        help="The broker's dataPath (holds the {topic}-{partition}/ directories); default: dataPath in "
        "--server-config, else ~/meta as MetaConfig.",
    )
    @click.option(
        "--server-config",
        "--broker-config",
        "server_config",
        type=FILE,
        help="The broker's server.ini (maxSegmentSize, deletePolicy, deleteWhen, [topic=...] sections).",
    )
    @click.option(
        "--format", "fmt", type=click.Choice(FORMATS), help="Output format: table on a terminal, jsonl otherwise."
    )
    @functools.wraps(fn)
    def wrapper(data_path, server_config, fmt, **kwargs):
        return fn(MetaqContext(data_path, server_config, fmt), **kwargs)

    return wrapper


def select_options(fn: Callable) -> Callable:
    fn = click.option("--partition", type=int, help="Only this partition number.")(fn)
    return click.option("--topic", help="Only partitions of this topic.")(fn)


@metaq.command("info")
@metaq_options
@select_options
def info_cmd(ctx, topic, partition):
    """Partitions, their segments with offset ranges and message counts, and anything odd.

    \b
    rmqctl metaq info --store /data/meta --server-config server.ini
    """

    result = inspect.info(ctx.store, topic, partition)
    if ctx.format == "table":
        render(
            result["partitions"],
            "table",
            ["topic", "partition", "segments", "minOffset", "maxOffset", "messageCount", "sizeInBytes", "odd"],
            title="partitions",
        )
        render(
            result["segments"],
            "table",
            ["segment", "startOffset", "endOffset", "size", "messageCount", "last"],
            title="segments",
        )
        for line in result["odd"]:
            echo_err(f"odd: {line}")
    elif ctx.format == "csv":
        render(result["segments"], "csv")
    elif ctx.format == "jsonl":
        render([result], "jsonl")
    else:
        render([result], "json")


@metaq.command("dump")
@metaq_options
@select_options
@click.option("--from", "start", type=OFFSET, help="First message offset (inclusive; decimal or 0x hex).")
@click.option("--to", "end", type=OFFSET, help="Message offset to stop at (exclusive; decimal or 0x hex).")
@click.option("--limit", type=int, help="Stop after N messages.")
@body_option("How to render payloads; non-UTF-8 payloads fall back to base64 (see payloadEncoding).")
def dump_cmd(ctx, topic, partition, start, end, limit, body):
    """Every record, in partition and offset order, under Metamorphosis's field names.

    \b
    rmqctl metaq dump --store /data/meta --topic trade-events --partition 0 --limit 3
    """
    with damage_exits() as warn:
        render(inspect.dump(ctx.store, topic, partition, start, end, limit, body, warn), ctx.format, blocks=True)


@metaq.command("locate")
@metaq_options
@click.argument("offset")
@click.option("--topic", required=True, help="The partition's topic.")
@click.option("--partition", type=int, required=True, help="The partition number.")
@click.option(
    "--hex", "hex_view", is_flag=True, help="Show the record there as annotated hex: every field's bytes and name."
)
def locate_cmd(ctx, offset, topic, partition, hex_view):
    """Which segment holds message OFFSET (decimal or 0x hex), at which position, and whether a record starts
    there.

    \b
    rmqctl metaq locate 93266 --topic meta-test --partition 0 --store /data/meta --hex
    """

    offset = parse_int(offset, "OFFSET")
    if hex_view:
        click.echo("\n".join(inspect.record_hex(ctx.store, offset, topic, partition)))
        return
    render([inspect.locate(ctx.store, offset, topic, partition)], ctx.format, blocks=True)


@metaq.command("verify")
@metaq_options
@select_options
@click.option("--max-findings", type=int, help="Stop listing after N findings (the exit code still says 1).")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing; the exit code is the answer.")
def verify_cmd(ctx, topic, partition, max_findings, quiet):
    """Check names, contiguity, every length and checksum, and what the broker's recovery will cut; exit 0
    sound, 1 findings, 2 cannot run. commitLogOffset in a finding is the MetaQ message offset.

    \b
    rmqctl metaq verify --store /data/meta --server-config server.ini
    """
    from ..metaq.verify import verify  # start-up time: its kernels load only for the command that runs them

    if max_findings is not None and max_findings < 0:
        raise UsageError("--max-findings must not be negative")
    result = verify(ctx.store, topic, partition, max_findings)
    if not quiet:
        if result.lock_holder:
            echo_err(
                f"rmqctl: process {result.lock_holder} has segments open (a running broker?): the last segments "
                "may be growing while verify reads them"
            )
        rows = [f.to_dict() for f in result.findings]
        if rows or ctx.format in ("json", "csv"):
            render(rows, ctx.format, FINDING_COLUMNS)
        s = result.stats
        kinds = Counter(f.kind for f in result.findings)
        echo_err(
            f"metaq verify: {s['partitions']} partition(s), {s['records']} records, {s['bytes']} bytes: "
            + (", ".join(f"{k} {n}" for k, n in kinds.most_common()) if kinds else "sound")
            + (" (listing stopped at --max-findings)" if result.truncated else "")
        )
    raise click.exceptions.Exit(result.exit_code)


REPAIR_COLUMNS = ["topic", "partition", "segment", "action", "sizeBefore", "sizeAfter", "droppedBytes", "detail"]


@metaq.command("repair")
@metaq_options
@select_options
@click.option("--dry-run", is_flag=True, help="Only print what the recovery would cut; write nothing.")
@click.option("--no-backup", is_flag=True, help="Delete the replaced segments once the new ones are durable.")
def repair_cmd(ctx, topic, partition, dry_run, no_backup):
    """The broker's last-segment recovery as an explicit step: truncate each partition's last segment at its
    first invalid record (staged, intent file, atomic swap; the old file kept in {partition}/.rmqctl/).
    Exit 2 when a partition cannot be loaded by the broker at all (left untouched).

    \b
    rmqctl metaq repair --store /data/meta --server-config server.ini --dry-run
    """
    from ..metaq.repair import repair  # start-up time: its kernels load only for the command that runs them

    result = repair(
        ctx.store if dry_run else ctx.writable_store(), topic, partition, dry_run=dry_run, keep_backup=not no_backup
    )
    render([r.to_dict() for r in result.rows], ctx.format, REPAIR_COLUMNS)
    for b in result.backups:
        echo_err(f"rmqctl: replaced segments kept in {b}")
    if result.refused:
        raise click.exceptions.Exit(EXIT_REFUSED)


CLEAN_COLUMNS = ["segment", "startOffset", "size", "mtime", "ageHours", "policy", "action", "reason", "evaluatedAt"]


@metaq.command("clean")
@metaq_options
@select_options
@click.option("--apply", "do_apply", is_flag=True, help="Act on the plan (default: print it and change nothing).")
@click.option("--check", is_flag=True, help="Exit 1 when the policy would remove or archive a segment.")
@click.option(
    "--delete-policy", help="Override deletePolicy (delete,<age> | archive,<age>[,true]; age in h, or m/s/h suffix)."
)
@click.option(
    "--at",
    "at",
    help="Evaluate the policy at this time (epoch ms, ISO 8601 or mqadmin's form) instead of now; 'next': at the next time each topic's deleteWhen fires.",
)
def clean_cmd(ctx, topic, partition, do_apply, check, delete_policy, at):
    """The broker's deletePolicy as its DeleteJob applies it: every segment but the last whose mtime is older
    than the reserved time is deleted, renamed to .arc, or zipped (archive,<age>,true). A plan unless --apply.

    \b
    rmqctl metaq clean --store /data/meta --server-config server.ini
    rmqctl metaq clean --check --store /data/meta --server-config server.ini || echo "exit $?"
    """

    if delete_policy:
        parse_delete_policy(delete_policy)
    at_next_run = at == "next"
    if at and not at_next_run:
        now_ms = parse_time_ms(at, "--at")
    else:
        now_ms = int(dt.datetime.now().timestamp() * 1000)
    if do_apply and check:
        raise UsageError("--check only reports: drop --apply")
    store = ctx.writable_store() if do_apply else ctx.store
    rows = clean.clean(store, now_ms, topic, partition, delete_policy, at_next_run, act=do_apply)
    render([r.to_dict() for r in rows], ctx.format, CLEAN_COLUMNS)
    acting = [r for r in rows if r.action != "keep"]
    echo_err(
        f"metaq clean: {len(acting)} of {len(rows)} segment(s) {'were' if do_apply else 'would be'} removed or "
        f"archived at {rows[0].evaluatedAt if rows else 'now'}"
    )
    for when in sorted({ctx.config.topic(t).deleteWhen for t in {r.topic for r in rows}}):
        fire = next_fire(when, dt.datetime.now())
        echo_err(
            f"metaq clean: the broker runs its delete job at deleteWhen {when!r}; next: "
            + (fire.isoformat(sep=" ") + " local time" if fire else "not computed (L, W or #)")
        )
    if check and acting:
        raise click.exceptions.Exit(1)


@metaq.command("append")
@metaq_options
@click.option("--topic", help="Topic of the message (single-message mode).")
@click.option("--partition", type=int, help="Partition of the message (single-message mode).")
@click.option("--payload", help="Payload text (UTF-8).")
@click.option("--payload-file", type=click.File("rb"), help="Payload bytes from a file.")
@click.option("--attribute", help="Message attribute (flag bit 0 is set; '' is the empty attribute).")
@click.option("--id", "msg_id", type=int, help="Message id (default: a new IdWorker id for brokerId).")
@click.option(
    "--jsonl",
    "jsonl_file",
    type=click.File("r"),
    help="Messages as JSON Lines in the `metaq dump` shape ('-' = stdin); rows with the same `batch` "
    "value are one append call.",
)
def append_cmd(ctx, topic, partition, payload, payload_file, attribute, msg_id, jsonl_file):
    """Append messages as the broker writes them (one record, or a batch in one write), rolling segments at
    maxSegmentSize. Each message is acknowledged with one JSON line once durable. `metaq dump --body base64 |
    metaq append --jsonl -` into an empty data path reproduces every segment byte for byte.

    \b
    rmqctl metaq append --store /data/meta --server-config server.ini --topic trade-events --partition 0 --payload 'hello'
    rmqctl metaq dump --store /data/meta --body base64 --format jsonl | rmqctl metaq append --jsonl - --store /data/copy
    """

    if not ctx.explicit:
        raise UsageError("this command writes: name the data path with --store (or dataPath in --server-config)")
    if jsonl_file is not None:
        if any(v is not None for v in (topic, partition, payload, payload_file, attribute, msg_id)):
            raise UsageError("--jsonl takes the messages from the file: drop the single-message options")
        rows = _jsonl_messages(jsonl_file, NewMessage)
    else:
        if topic is None or partition is None:
            raise UsageError("give --topic and --partition (or --jsonl)")
        if payload is not None and payload_file is not None:
            raise UsageError("give --payload or --payload-file, not both")
        data = payload_file.read() if payload_file else (payload or "").encode("utf-8")
        rows = [
            (
                NewMessage(topic, partition, data, None if attribute is None else attribute.encode("utf-8"), msg_id),
                None,
                None,
            )
        ]
    with Appender(ctx.data_path, ctx.config) as app:
        try:
            render((a.to_dict() for a in app.append_rows(rows)), "jsonl" if ctx.format == "table" else ctx.format)
        finally:
            for w in app.warnings:
                echo_err(f"rmqctl: warning: {w}")


def _jsonl_messages(fh, NewMessage):
    """`metaq dump` rows (topic, partition, payload + payloadEncoding, attribute / attributeBytes, id, flag,
    segment) and an optional `batch` key -> (message, batch, segment)."""

    for n, line in enumerate(fh, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            attr = row.get("attribute")
            if "attributeBytes" in row:
                attr_raw = base64.b64decode(row["attributeBytes"], validate=True)
            else:
                attr_raw = None if attr is None else attr.encode("utf-8")
            msg = NewMessage(
                row["topic"],
                int(row["partition"]),
                decode_body(row.get("payload"), row.get("payloadEncoding")),
                attr_raw,
                row.get("id"),
                row.get("flag"),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise UsageError(f"--jsonl line {n}: not a message row ({type(e).__name__}: {e})") from None
        yield msg, row.get("batch"), row.get("segment")
