"""`info`: one screen about a store."""

from __future__ import annotations

from collections import Counter

import click

from ..queueload import walk_kernels
from ..views import inspect
from ..views.startup import estimate_startup
from .app import cli
from .options import store_options
from .render import dumps, echo_lines, prepare_kernels, render


@cli.command("info")
@store_options
def info(ctx):
    """Files and offset ranges per component, queues, checkpoint, abort/lock state, index files, oddities.

    \b
    rmqctl info --store /data/store --broker-config broker.conf
    rmqctl info --store /data/store --format table | less
    """
    ctx.version()  # one stderr line when nothing in the store tells it
    data_files = inspect.files_with_data(ctx.store)
    prepare_kernels(*inspect.end_kernels(ctx.store, data_files), *walk_kernels(ctx.store))
    end = inspect.commitlog_end(ctx.store, data_files)
    data = inspect.info(ctx.store, end)
    startup = estimate_startup(ctx.store, end)
    data["startup"] = startup.to_dict()
    if ctx.format in ("json", "jsonl"):
        click.echo(dumps(data))
        return
    if ctx.format == "csv":
        render(data["consumequeue"]["queues"], "csv")
        return
    _print_table(data, startup.line())


def _print_table(d: dict, startup: str):
    """Plain lines (a pager shows them as they are), then the queue and index tables at full width."""
    echo_lines(_summary_lines(d, startup), indent=11)
    _print_queue_tables(d)


def _summary_lines(d: dict, startup: str) -> list[str]:
    """The store, its version, commitlog, DLedger, checkpoint, state and start-up, and the parts not read."""
    cl = d["commitlog"]
    bv = d["brokerVersion"]
    lines = [
        f"store      {d['store']}",
        f"version    RocketMQ {bv['version']} rules ({'assumed: ' if bv['assumed'] else ''}{bv['evidence']})",
        f"commitlog  {cl['files']} file(s) of {cl['fileSize']} B ({cl['preallocatedEmptyFiles']} preallocated empty), "
        f"offsets {cl['minOffset']}..{cl['maxOffset']}  [{cl['firstFile']} .. {cl['lastFile']}]",
    ]
    dl = d.get("dledger")
    if dl:
        lines.append(
            f"dledger    {dl['home']}: entries {dl['beginIndex']}..{dl['endIndex']} (term {dl['endTerm']}), "
            f"committed {dl['committedIndex']} (to offset {dl['committedPos']}), currTerm {dl['currTerm']}, "
            f"leader {dl['voteLeader']}; {dl['indexFiles']} index file(s) of {dl['indexFileSize']} B"
        )
    if d["empty"]:
        lines.insert(
            1, "empty      the commitlog directory holds no file (a broker started here, no message was ever written)"
        )
    cp = d["checkpoint"]
    if cp:
        lines.append(
            "checkpoint "
            + "  ".join(
                f"{name} {cp[field + 'Text'] or 'not set (0)'}"
                for name, field in (
                    ("physic", "physicMsgTimestamp"),
                    ("logics", "logicsMsgTimestamp"),
                    ("index", "indexMsgTimestamp"),
                )
            )
        )
    lines.append(f"state      {_broker_state(d)}")
    lines.append(f"startup    {startup}")
    rs = d.get("rocksdbStore")
    if rs:
        n, last = rs["records"], rs["lastOffsetPy"]
        lines.append(
            f"rocksdb    {rs['path']}: {n['index']} index, {n['timer']} timer, {n['trans']} transaction "
            f"record(s); lastOffsetPy index {last['index']}, trans {last['trans']}"
        )
    lines += [f"not read   {p['path']}: {p['what']} ({p['why']})" for p in d["parts"] if not p["read"]]
    lines += [_config_line(c) for c in d.get("rocksdbConfigs", ())]
    return lines


def _print_queue_tables(d: dict):
    """The consume queues', index files' and pending timer messages' tables, then what looked odd."""
    cq = d["consumequeue"]
    # a store whose recovery moves a queue's max: the max the broker serves after it, and the max on disk
    truncated = "recoveryEnd" in cq
    recovery = (
        f"; maxOffset after the broker's recovery, which ends the commitlog at {cq['recoveryEnd']}" if truncated else ""
    )
    if cq.get("redispatchCounted") is False:
        recovery += "; the units its recovery dispatches again are not counted"
    on_disk = ["maxOffsetOnDisk"] if truncated else []
    if cq.get("kind") == "rocksdb":
        render(
            cq["queues"],
            "table",
            ["topic", "queueId", "minOffset", "maxOffset", *on_disk, "maxPhysicOffset"],
            title=f"RocksDB consume queue ({cq['topics']} topics, {cq['entries']} entries, dispatched to "
            f"{cq['dispatchCheckpoint']}{recovery})",
        )
    elif cq["read"]:
        kinds = Counter(q["kind"] for q in cq["queues"] if q["kind"] != "topic")
        kinds_text = "".join(f", {n} {kind}" for kind, n in sorted(kinds.items()))
        # a column only for what a queue's name does not show (an LMQ's starts with %LMQ%)
        marked = kinds.keys() & {"lite", "BatchCQ"}
        render(
            cq["queues"],
            "table",
            ["topic", "queueId", "files", "minOffset", "maxOffset", *on_disk] + (["kind"] if marked else []),
            title=f"consumequeues ({cq['topics']} topics, {cq['entries']} entries{kinds_text}{recovery})",
        )
    geometry = d["index"]["geometry"]
    if not d["index"]["files"]:
        echo_lines(["index      no index file"])
    render(
        d["index"]["files"],
        "table",
        ["file", "entries", "beginTimestamp", "endTimestamp", "beginPhyOffset", "endPhyOffset"],
        title=f"index files ({geometry['maxHashSlotNum']} slots / {geometry['maxIndexNum']} entries)",
    )
    t = d.get("timer")
    if t:
        echo_lines(
            [
                f"timer      {t['pending']} pending of {t['units']} timerlog unit(s) in {t['timerlogFiles']} file(s), "
                f"oldest {t['oldest']}, newest {t['newest']}; {t['notYetInWheel']} not in the wheel yet"
            ],
            indent=11,
        )
        render(
            t["byHour"],
            "table",
            ["hour", "count", "oldest", "newest"],
            title="pending timer messages by delivery hour (UTC)",
        )
    for line in d["odd"]:
        echo_lines([f"odd: {line}"], indent=5)


def _config_line(c: dict) -> str:
    """Where the broker keeps one config in RocksDB, and what its load() reads, in order."""
    if not c["read"]:
        return f"config     {c['config']} in RocksDB: not read ({c['why']})"
    return (
        f"config     {c['config']} in RocksDB {c['database']}: {c['entries']} entries, DataVersion "
        f"{c['dataVersion']}; load() reads {'; then '.join(c['sources'])}"
    )


def _broker_state(d: dict) -> str:
    """A running broker holds the lock and has `abort` as its running marker; without the lock, `abort` is an
    unclean exit."""
    pid, abort = d["lockHeldBy"], d["abort"]
    shown = f"pid {pid}" if pid else "pid not visible"  # F_GETLK's 0: a holder in another pid namespace
    if pid is not None and d["lockHeldByRmqctl"]:
        return f"another rmqctl ({shown}) is writing the store; abort {'PRESENT (unclean exit)' if abort else 'absent'}"
    if pid is not None:
        marker = "abort is its running marker" if abort else "no abort file"
        return (
            f"broker running ({shown}): {marker}; read as the store was when this began (commitlog to offset "
            f"{d['commitlog']['maxOffset']})"
        )
    return f"broker stopped; abort {'PRESENT (unclean exit)' if abort else 'absent'}, lock free"
