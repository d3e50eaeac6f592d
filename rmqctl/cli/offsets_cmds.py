"""What the broker's admin tool answers only while a broker runs: consumer lag, offsets by time, scheduled
messages, the config files a crash corrupts, and where two copies of a store diverge."""

from __future__ import annotations

import time

import click

from ..errors import EXIT_FINDINGS, UsageError
from ..views import offsets
from ..maintenance.config_restore import plan_restore, restore_configs
from ..views.diff import diff_stores
from ..views.inspect import end_kernels
from ..store import Store
from .app import cli
from .options import parse_time_ms, store_options, wait_option
from .render import dumps, echo_err, prepare_kernels, render

QUEUE_STORES = {"default": "file consume queues", "defaultRocksDB": "RocksDB consume queue"}  # by storeType
BOUNDARY_HELP = (
    "5.x BoundaryType: lower (first message at or after TIME; the default, as the one-argument call) or upper."
)


@cli.command("consumers")
@store_options
@click.option(
    "--per-group",
    is_flag=True,
    help="One row per group: its topics and queues, total lag, oldest unconsumed message, and how many "
    "of its offsets are not ok.",
)
def consumers(ctx, per_group):
    """Consumer lag offline: every group, topic and queue of the consumer offsets the broker loads
    (config/consumerOffset.json; with enableLmq, lmqConsumerOffset.json alone) with the committed offset, the
    queue's min and max, the lag (max - max(offset, min), never below 0; mqadmin's Diff is max - offset), and the
    store time of the oldest unconsumed message. Offsets outside [min, max] are flagged: the broker corrects them on the next
    pull. A queue with no files was never written to: the broker answers min = max = 0 there, so an offset of 0
    (a push consumer's on its %RETRY% queue) is ok. Exit 1 when an offset is outside its queue, or names a queue
    the broker's recovery has still to dispatch into (no-queue); a lite topic's queue that expired
    (lite-expired) and a deleted topic's left-behind offset (deleted-topic) are normal. BatchCQ queues count in
    queue offsets, as the broker's.

    \b
    rmqctl consumers --store /data/store --broker-config broker.conf
    rmqctl consumers --per-group --store /data/store --broker-config broker.conf
    rmqctl consumers --store /data/store --format jsonl | jq 'select(.lag > 10000)'
    """
    prepare_kernels(*end_kernels(ctx.store))
    rows, notes = offsets.consumers(ctx.store)
    for n in notes:
        echo_err(f"rmqctl: {n}")
    if per_group:
        render(
            offsets.group_lag(rows),
            ctx.format,
            ["group", "topics", "queues", "lag", "oldestUnconsumedText", "notOk"] if ctx.format == "table" else None,
        )
    else:
        render(
            (r.to_dict() for r in rows),
            ctx.format,
            ["group", "topic", "queueId", "offset", "minOffset", "maxOffset", "lag", "oldestUnconsumedText", "status"]
            if ctx.format == "table"
            else None,
        )
    if any(r.status not in offsets.NORMAL_STATUSES for r in rows):
        ctx_exit(EXIT_FINDINGS)


@cli.command("offset-by-time")
@store_options
@click.argument("args", nargs=-1, required=True, metavar="TOPIC [QUEUE_ID] TIME")
@click.option(
    "--boundary", type=click.Choice(offsets.BOUNDARIES), default="lower", show_default=True, help=BOUNDARY_HELP
)
def offset_by_time(ctx, args, boundary):
    """The queue offset the broker's getOffsetInQueueByTime returns for TIME (epoch milliseconds, ISO 8601 with
    local time without a zone, or mqadmin's yyyy-MM-dd#HH:mm:ss:SSS, read as mqadmin reads it), for one queue
    or, without QUEUE_ID, every queue of TOPIC: where a consumer reset to that time starts.

    \b
    rmqctl offset-by-time TopicTest 2024-06-01T00:00:30 --store /data/store --broker-config broker.conf
    rmqctl offset-by-time TopicTest 0 1717200024003 --store /data/store --rocketmq-version 4
    """
    if len(args) not in (2, 3):
        raise UsageError("offset-by-time takes TOPIC [QUEUE_ID] TIME")
    topic, time_text = args[0], args[-1]
    queue_id = None
    if len(args) == 3:
        if not args[1].isdigit():
            raise UsageError(f"QUEUE_ID {args[1]!r} is not a queue id")
        queue_id = int(args[1])
    major = ctx.version().major  # 4.9 picks the file by its modification time, 5.x by the messages' store times
    if major == 4 and boundary != "lower":
        raise UsageError("--boundary is a 5.x option; 4.9 has one rule")
    ms = parse_time_ms(time_text, "TIME")
    prepare_kernels(*end_kernels(ctx.store))
    rows = offsets.offset_by_time(ctx.store, topic, queue_id, ms, major, boundary)
    render(
        (r.to_dict() for r in rows),
        ctx.format,
        ["topic", "queueId", "queueOffset", "minOffset", "maxOffset", "storeTimestampText"]
        if ctx.format == "table"
        else None,
    )


@cli.command("delay-offsets")
@store_options
@click.option("--at", "at", help="Count messages due at this time (ISO or epoch ms) instead of now.")
def delay_offsets(ctx, at):
    """Scheduled (delay-level) messages: config/delayOffset.json against the SCHEDULE_TOPIC_XXXX queues (queue id
    = level - 1): pending per level, how many are due, the next delivery time and the oldest pending message.

    \b
    rmqctl delay-offsets --store /data/store --broker-config broker.conf
    """
    now = parse_time_ms(at, "--at") if at else int(time.time() * 1000)
    prepare_kernels(*end_kernels(ctx.store))
    rows, notes = offsets.delay_offsets(ctx.store, now)
    for n in notes:
        echo_err(f"rmqctl: {n}")
    render(
        (r.to_dict() for r in rows),
        ctx.format,
        [
            "level",
            "delay",
            "queueId",
            "offset",
            "maxOffset",
            "pending",
            "due",
            "nextDeliveryText",
            "oldestPendingStoreText",
        ]
        if ctx.format == "table"
        else None,
    )


@cli.group("config")
def config_group():
    """The broker's config/*.json files (consumer offsets, topics, delay offsets, ...)."""


@config_group.command("restore")
@store_options(writes=True)
@wait_option
@click.argument("names", nargs=-1)
@click.option("--apply", is_flag=True, help="Do it (default: only print the plan).")
@click.option("--no-backup", is_flag=True, help="Delete the replaced files once the restored ones are durable.")
def config_restore(ctx, names, apply, no_backup):
    """Put a sound .bak back in place of a damaged (empty, cut or non-JSON) config file, as the broker's
    ConfigManager.load would read it, under the store lock with the same atomic swap and backup as repair.
    Prints the plan; --apply acts. NAMES: file names under config/ (default: every damaged one).

    \b
    rmqctl config restore --store /data/store
    rmqctl config restore consumerOffset.json --store /data/store --apply
    """
    store = ctx.writable_store() if apply else ctx.store
    plan = plan_restore(store, list(names) or None)
    render((p.to_dict() for p in plan), ctx.format)
    impossible = [p for p in plan if p.action == "impossible"]
    if apply:
        restore_configs(store, plan, keep_backup=not no_backup)
    elif any(p.action == "restore" for p in plan):
        echo_err("rmqctl: plan only; --apply restores")
    if impossible:
        ctx_exit(EXIT_FINDINGS)


@cli.command("diff")
@store_options
@click.argument("stores", nargs=-1, required=True, metavar="[STORE_A] STORE_B")
def diff(ctx, stores):
    """Where two copies of one broker's store diverge (a master and its slave after a failover, or two copies):
    the first commitlog offset whose bytes differ over the range both hold, the record there on each side,
    whether one is a prefix of the other (the normal master/slave case), the same per consumequeue, topics,
    subscription groups and consumer offsets as each broker loads them (JSON files or RocksDB config databases),
    and in 5.x controller mode which epoch each tail belongs to. STORE_A defaults to --store; --broker-config gives both
    stores' geometry (they are copies of one broker). --format csv gives the consumequeue table. Exit 0
    identical, 1 different.

    \b
    rmqctl diff /data/master/store /data/slave/store --broker-config broker.conf
    rmqctl diff /data/slave/store --store /data/master/store
    """
    if len(stores) > 2:
        raise UsageError("diff takes [STORE_A] STORE_B")
    a = stores[0] if len(stores) == 2 else ctx.store_dir
    sides = Store(a, ctx.config), Store(stores[-1], ctx.config)
    prepare_kernels(*end_kernels(sides[0]), *end_kernels(sides[1]))
    result = diff_stores(*sides)
    if ctx.format == "csv":  # the one table of the result: the consumequeues
        render((q.to_dict() for q in result.queues), "csv")
    elif ctx.format != "table":
        click.echo(dumps(result.to_dict()))
    else:
        click.echo(
            f"commitlog: {result.relation}; compared [{result.commonFrom}, {result.commonTo})"
            + (
                f"; first difference at commitlog offset {result.firstDifference}"
                if result.firstDifference is not None
                else ""
            )
        )
        for side, msg in (("A", result.messageA), ("B", result.messageB)):
            if msg:
                click.echo(
                    f"  {side}: {msg.get('kind', 'no record')} at {msg['offset']} topic={msg.get('topic')} "
                    f"queueId={msg.get('queueId')} queueOffset={msg.get('queueOffset')} msgId={msg.get('msgId')}"
                )
        for n in result.notes:
            click.echo(f"  {n}")
        changed = [q.to_dict() for q in result.queues if q.relation != "identical"]
        click.echo(
            f"consumequeues: {len(result.queues)} queue(s) compared unit by unit, {len(changed)} differ "
            f"(A: {QUEUE_STORES[result.a['queueStore']]}, B: {QUEUE_STORES[result.b['queueStore']]})"
        )
        for c in result.configs:
            click.echo(_config_diff_line(c))
        if changed:
            render(changed, "table", title="consumequeues that differ")
    if not result.same:
        ctx_exit(EXIT_FINDINGS)


def _config_diff_line(c) -> str:
    """One config table of both sides: entry counts, and the keys that differ (the first few of each kind)."""

    def some(keys: list[str]) -> str:
        return ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")

    parts = [
        f"{what}: {some(keys)}"
        for what, keys in (("only in A", c.onlyInA), ("only in B", c.onlyInB), ("differ", c.differ))
        if keys
    ]
    return (
        f"{c.config}: {'identical' if c.same else 'different'}; A {c.entriesA} entries ({c.sourceA}), "
        f"B {c.entriesB} ({c.sourceB})" + "".join(f"; {p}" for p in parts)
    )


def ctx_exit(code: int):
    click.get_current_context().exit(code)
