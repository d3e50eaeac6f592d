"""`rebuild consumequeue`, `rebuild index` and `repair`: options in, library call, rows out (stdout) and a
summary (stderr)."""

from __future__ import annotations

import sys

import click

from ..errors import UsageError

from .app import cli, rebuild
from .options import memory_option, store_options, wait_option
from .render import echo_err, note_live_dry_run, progress, render

DRY_RUN_HELP = "Print what would change and write nothing."
NO_BACKUP_HELP = (
    "Delete the replaced files once the new ones are durable (default: keep them in {store}/.rmqctl-backup-<time>/)."
)


def _interrupted(info: dict | None):
    if not info:
        return
    if "lockHeldBy" in info:  # a dry run beside the lock's holder: it may be writing right now
        pid = info["lockHeldBy"]
        echo_err(
            f"rmqctl: note: another process holds the lock ({f'pid {pid}' if pid else 'pid not visible'}): "
            f"what it staged ({info['state']}) may be its run in progress; if that run was interrupted, "
            f"it {info['action']}"
        )
    elif info.get("action") == "completed":
        echo_err(f"rmqctl: finished an interrupted `{info['command']}` run first ({info['steps']} steps)")
    elif info.get("action") == "rolled back":
        echo_err(f"rmqctl: removed what an interrupted run left before its commit point: {', '.join(info['paths'])}")
    else:
        echo_err(f"rmqctl: warning: an interrupted rmqctl run is pending ({info['state']}); it {info['action']}")


def _commitlog_bar(ctx, desc: str):
    cl = ctx.store.commitlog
    return progress(len(cl.files) * cl.file_size, desc)


def _finish(result, what: str):
    for w in result.warnings:
        echo_err(f"rmqctl: warning: {w}")
    for field, (before, after) in result.checkpoint.items():
        echo_err(f"rmqctl: checkpoint {field}: {before} -> {after}")
    verb = "would change" if result.dryRun else "changed"
    if not result.changed:
        echo_err(f"rmqctl: {what} rebuilt from {result.records} records: identical to the store's, nothing to change")
        return
    where = f"; replaced files kept in {result.backup}" if result.backup else ""
    echo_err(
        f"rmqctl: {what} rebuilt from {result.records} records ({result.entries} entries): {verb}"
        f"{' (dry run: nothing written)' if result.dryRun else ''}{where}"
    )


@rebuild.command("consumequeue")
@store_options(writes=True)
@wait_option
@click.option("--topic", help="Rebuild only this topic's queues (and remove those no record feeds).")
@click.option("--queue-id", type=int, help="Rebuild only this queue id (of --topic, or of every topic).")
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@click.option("--no-backup", is_flag=True, help=NO_BACKUP_HELP)
@memory_option("The files written are the same at any size.")
def rebuild_consumequeue_cmd(ctx, topic, queue_id, dry_run, no_backup, memory):
    """Rebuild consumequeue files from the commitlog, byte-identical to what the broker's dispatch writes
    (tagsCode, schedule-topic delivery times, LMQ queues, pre-blank fill after cleanup), check them, and
    swap them in atomically. Prints one row per queue that changes: units before/after, added, removed,
    changed. Takes the broker's lock.

    \b
    rmqctl rebuild consumequeue --store /data/store --broker-config broker.conf --dry-run
    rmqctl rebuild consumequeue --store /data/store --broker-config broker.conf --topic TopicTest
    """
    store = ctx.store if dry_run else ctx.writable_store()
    if dry_run:
        note_live_dry_run(store)
    with _commitlog_bar(ctx, "rebuild consumequeue") as bar:
        from ..maintenance.rocksqueue import rebuild_queues  # loads the compiled kernels: only for this command

        result = rebuild_queues(
            store, topic, queue_id, dry_run=dry_run, keep_backup=not no_backup, progress=bar.update, memory=memory
        )
    _interrupted(result.interrupted)
    render(
        (
            {
                "topic": q.topic,
                "queueId": q.queueId,
                "unitsBefore": q.before,
                "unitsAfter": q.after,
                "added": q.added,
                "removed": q.removed,
                "changed": q.changed,
            }
            for q in result.queues
        ),
        ctx.format,
        columns=["topic", "queueId", "unitsBefore", "unitsAfter", "added", "removed", "changed"],
    )
    _finish(result, f"{len(result.queues) + result.unchangedQueues} queue(s)")


@cli.group()
def convert():
    """Convert a store part offline into another form the broker reads."""


@convert.command("consumequeue")
@store_options(writes=True)
@click.option(
    "--to",
    "to",
    type=click.Choice(["rocksdb", "file"]),
    required=True,
    help="rocksdb: the file queues into a RocksDB queue (storeType=defaultRocksDB); file: the way back.",
)
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@click.option("--no-backup", is_flag=True, help=NO_BACKUP_HELP)
@memory_option("The queues written are the same at any size.")
def convert_consumequeue_cmd(ctx, to, dry_run, no_backup, memory):
    """Convert the consume queues: file queues into the RocksDB queue the broker keeps with
    storeType=defaultRocksDB, or back. The new queue is staged, checked unit for unit against the old one and
    with verify, and swapped in whole under the broker's lock (the old one kept in the backup unless
    --no-backup). Change storeType in broker.conf to match before the broker starts: rmqctl does not.

    \b
    rmqctl convert consumequeue --to rocksdb --store /data/store --broker-config broker.conf --dry-run
    rmqctl convert consumequeue --to file --store /data/store --broker-config broker.conf
    """
    store = ctx.store if dry_run else ctx.writable_store()
    with _commitlog_bar(ctx, f"convert consumequeue to {to}") as bar:
        from ..maintenance.rocksqueue import convert_queues  # loads the compiled kernels: only for this command

        result = convert_queues(
            store, to, dry_run=dry_run, keep_backup=not no_backup, progress=bar.update, memory=memory
        )
    _interrupted(result.interrupted)
    for note in result.notes:
        echo_err(f"rmqctl: note: {note}")
    render(
        [{"to": result.to, "queues": result.queues, "units": result.units, "checkpoint": result.checkpoint}],
        ctx.format,
        columns=["to", "queues", "units", "checkpoint"],
    )
    where = f"; the old queues kept in {result.backup}" if result.backup else ""
    echo_err(
        f"rmqctl: {result.queues} queue(s), {result.units} unit(s) converted to {result.to}"
        f"{' (dry run: nothing written)' if result.dryRun else ''}{where}; set storeType="
        f"{'defaultRocksDB' if result.to == 'rocksdb' else 'default'} in broker.conf before the broker starts"
    )


@rebuild.command("index")
@store_options(writes=True)
@wait_option
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@click.option("--no-backup", is_flag=True, help=NO_BACKUP_HELP)
@memory_option("The files written are the same at any size.")
def rebuild_index_cmd(ctx, dry_run, no_backup, memory):
    """Rebuild the index files from the commitlog as IndexService does (UNIQ_KEY then each KEYS word, rollover
    when full, names from the creation time), set the checkpoint's indexMsgTimestamp as the broker does,
    check them, and swap them in atomically. Prints one row per index file (paired by position with the
    old ones): entries before/after, added, removed, changed. Takes the broker's lock.

    \b
    rmqctl rebuild index --store /data/store --broker-config broker.conf --dry-run
    """
    store = ctx.store if dry_run else ctx.writable_store()
    if dry_run:
        note_live_dry_run(store)
    with _commitlog_bar(ctx, "rebuild index") as bar:
        from ..maintenance.rebuild import rebuild_index  # loads the compiled kernels: only for this command

        result = rebuild_index(store, dry_run=dry_run, keep_backup=not no_backup, progress=bar.update, memory=memory)
    _interrupted(result.interrupted)
    render(
        (
            {
                "position": d.position,
                "fileBefore": d.before,
                "fileAfter": d.after,
                "entriesBefore": d.entriesBefore,
                "entriesAfter": d.entriesAfter,
                "added": d.added,
                "removed": d.removed,
                "changed": d.changed,
                "headerChanged": ",".join(d.headerChanged),
            }
            for d in result.indexFiles
        ),
        ctx.format,
        columns=[
            "position",
            "fileBefore",
            "fileAfter",
            "entriesBefore",
            "entriesAfter",
            "added",
            "removed",
            "changed",
            "headerChanged",
        ],
    )
    _finish(result, f"{len(result.indexFiles)} index file(s)")


def repair_rows(r) -> list[dict]:
    """The plan as one row per action: the commitlog's, then the queues' and index files', then the rest."""
    return _commitlog_rows(r) + _queue_rows(r) + _state_rows(r)


def _row(action: str, target: str, offset: int | None, count: int | None, detail: str) -> dict:
    return {"action": action, "target": target, "commitLogOffset": offset, "count": count, "detail": detail}


def _commitlog_rows(r) -> list[dict]:
    """The cut, the records left in place, the padded or removed short files, the findings repair keeps."""
    rows = []
    if r.stoppedAt is not None:
        s = r.stoppedAt
        detail = f"{s.kind}: {s.detail}; {r.bytesCut} bytes and {r.recordsCut} record(s) past it"
        rows.append(_row("cut", f"commitlog/{s.file}", r.cutOffset, r.recordsCut, detail))
    for bad in r.notCut:
        detail = (
            f"{bad.kind}: {bad.detail} (before the broker's recovery start, which does not re-check it; "
            "--scan-all would cut here)"
        )
        rows.append(_row("not-cut", f"commitlog/{bad.file}", bad.commitLogOffset, 1, detail))
    for p in r.padded:
        if p["bytesAfter"] is None:
            detail = "a zero-length last file, which the broker's load refuses (4.9) or deletes (5.1.3+)"
            rows.append(_row("remove", p["target"], None, 1, detail))
        else:
            detail = (
                f"a short file ({p['bytesBefore']} bytes): made {p['bytesAfter']} bytes with zeros, the length "
                "the broker's load requires"
            )
            rows.append(_row("pad", p["target"], None, p["bytesAfter"] - p["bytesBefore"], detail))
    for f in r.keptFindings:
        if f["scanAllCutsIt"]:
            fate = f"--scan-all would cut it off with everything from commitlog offset {f['scanAllCut']}"
        else:
            fate = f"--scan-all keeps it too (its cut is at commitlog offset {f['scanAllCut']})"
        detail = (
            f"{f['kind']}: {f['detail']} (the store has it before the repair and the broker's recovery keeps "
            f"it; {fate})"
        )
        rows.append(_row("not-cut", f["file"], f["commitLogOffset"], 1, detail))
    cl = r.commitlog
    if cl["fileZeroed"]:
        detail = "bytes past the last valid record zeroed"
        rows.append(_row("zero-tail", f"commitlog/{cl['fileZeroed']}", r.cutOffset, cl["bytesZeroed"], detail))
    rows += [_row("remove", f"commitlog/{name}", int(name), 1, "starts past the cut") for name in cl["filesRemoved"]]
    return rows


def _queue_rows(r) -> list[dict]:
    """The consume queues truncated and the index files truncated or removed at the cut."""
    rows = []
    for q in r.consumequeue:
        detail = f"queue offsets {q['fromQueueOffset']}..{q['toQueueOffset'] - 1} dropped"
        if q["filesRemoved"]:
            detail += f"; files removed: {', '.join(q['filesRemoved'])}"
        target = f"consumequeue/{q['topic']}/{q['queueId']}"
        rows.append(_row("truncate", target, r.cutOffset, q["entriesDropped"], detail))
    for ix in r.index:
        action = "remove" if ix["removed"] else "truncate"
        rows.append(_row(action, f"index/{ix['file']}", r.cutOffset, ix["entriesDropped"], "index entries dropped"))
    return rows


def _state_rows(r) -> list[dict]:
    """The checkpoint, the timer's and DLedger's files, and the abort file."""
    rows = [
        _row("set", "checkpoint", None, None, f"{field} {before} -> {after}")
        for field, (before, after) in r.checkpoint.items()
    ]
    for u in r.timer.get("danglingUnits", []):
        rows.append(_row("timer-dangling", f"timerlog/{u['file']}", u["offsetPy"], 1, u["detail"]))
    for field, (before, after) in r.timer.get("timercheck", {}).items():
        detail = f"{field} {before} -> {after} (as TimerMessageStore.recover lowers it)"
        rows.append(_row("set", "config/timercheck", None, None, detail))
    dledger = r.dledger or {}
    for ix in dledger.get("indexFiles", []):
        rows.append(_row(ix["action"], f"dledger index/{ix['file']}", None, None, ix["detail"]))
    for field, (before, after) in dledger.get("checkpoint", {}).items():
        rows.append(_row("set", "dledger checkpoint", None, None, f"{field} {before} -> {after}"))
    if r.abortRemoved:
        rows.append(_row("remove", "abort", None, None, "the broker starts normally (no abnormal recovery)"))
    for f in r.abortKeptFor:
        detail = (
            f"{f['detail']}: `abort` is kept, so that its abnormal recovery does (a normal start reputs only past "
            "the queues' end, and consumers would never see them)"
        )
        rows.append(_row("keep", "abort", f["commitLogOffset"], None, detail))
    return rows


def _confirm_scan_all(plan, min_offset: int):
    """--scan-all can drop most of a store for one bad record near its start: say how much before doing it;
    ask on a terminal, refuse (exit 2) elsewhere unless --yes."""
    alt = plan.alternative
    if not (plan.bytesCut or plan.recordsCut) or alt["sameCut"]:
        return  # the broker's own recovery cuts the same: nothing more is lost
    data = plan.cutOffset - min_offset + plan.bytesCut
    what = (
        f"--scan-all cuts the commitlog at commitlog offset {plan.cutOffset}: it drops {plan.recordsCut} record(s), "
        f"{plan.bytesCut} bytes ({100 * plan.bytesCut / max(data, 1):.0f}% of the data), "
        f"{alt['scanAllLosesMoreRecords']} record(s) more than the broker's own recovery (which cuts at "
        f"{alt['cutOffset']})"
    )
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise UsageError(f"{what}; nothing changed: pass --yes to confirm")
    if not click.confirm(f"rmqctl: {what}. Cut?", err=True):
        raise UsageError("nothing changed")


@cli.command("repair")
@store_options(writes=True)
@wait_option
@click.option(
    "--scan-all",
    is_flag=True,
    help="Scan from the first commitlog file and cut at the first bad record anywhere (loses more).",
)
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@click.option("--no-backup", is_flag=True, help=NO_BACKUP_HELP)
@click.option("--yes", "-y", is_flag=True, help="Confirm what --scan-all drops without being asked (scripts).")
def repair_cmd(ctx, scan_all, dry_run, no_backup, yes):
    """Do the broker's next recovery as an explicit step: find the last valid record with its checks (with
    `abort`, the abnormal recovery's, from the checkpoint's file; without, the normal recovery's, from its
    later start; CRC on), report what will be cut (bytes, records, their queues), then truncate the commitlog
    (zeroing past the last valid record, removing later files), the consumequeues and index entries that point
    past it, set the checkpoint and remove `abort` (kept while its recovery would dispatch entries the queues
    miss), atomically. Prints one row per action. Takes the broker's lock.

    \b
    rmqctl repair --store /data/store --broker-config broker.conf --dry-run
    rmqctl repair --store /data/store --broker-config broker.conf
    """
    store = ctx.store if dry_run else ctx.writable_store()
    if dry_run:
        note_live_dry_run(store)
    ctx.version()  # 4.9, 5.x and 5.5 recover differently: one stderr line when assumed
    from ..maintenance.repair import repair  # loads the compiled kernels: only for this command

    if scan_all and not dry_run and not yes:
        _confirm_scan_all(repair(store, scan_all=True, dry_run=True), store.commitlog.min_offset)
    with _commitlog_bar(ctx, "repair") as bar:
        r = repair(
            store,
            scan_all=scan_all,
            dry_run=dry_run,
            keep_backup=not no_backup,
            progress=lambda done: bar.update(done - bar.n),
        )
    _interrupted(r.interrupted)
    render(repair_rows(r), ctx.format, columns=["action", "target", "commitLogOffset", "count", "detail"])
    alt = r.alternative
    if r.stoppedAt is None and not r.bytesCut:
        echo_err(
            f"rmqctl: the commitlog reads cleanly to its end at {r.cutOffset} (recovery starts at {r.startFile})"
            + (f"; {len(r.padded)} short file(s) to make loadable" if r.padded else "")
        )
    else:
        queues = ", ".join(f"{q} ({n})" for q, n in sorted(r.recordsCutByQueue.items())) or "none"
        echo_err(
            f"rmqctl: cut at commitlog offset {r.cutOffset}: {r.bytesCut} bytes, {r.recordsCut} record(s); queues: {queues}"
        )
    if not alt["sameCut"]:
        if scan_all:
            echo_err(
                f"rmqctl: --scan-all cuts at {r.cutOffset}; the broker's own recovery would cut at {alt['cutOffset']}: "
                f"this loses {alt['scanAllLosesMoreRecords']} more record(s), {alt['scanAllLosesMoreBytes']} more bytes"
            )
        else:
            echo_err(
                f"rmqctl: bad record(s) before the recovery start are reported, not cut; --scan-all would cut at "
                f"{alt['cutOffset']}, losing {alt['scanAllLosesMoreRecords']} more record(s), "
                f"{alt['scanAllLosesMoreBytes']} more bytes"
            )
    kept = len(r.notCut) + len(r.keptFindings)
    if kept:
        echo_err(
            f"rmqctl: {kept} finding(s) {'are' if dry_run else 'were'} kept (damaged records and what follows from "
            "them), as the broker's recovery keeps them: verify still reports them; `rmqctl verify --write-baseline "
            "FILE` records them as accepted, "
            "then `verify --baseline FILE` exits 1 only for new damage"
        )
    if dry_run:
        echo_err("rmqctl: dry run: nothing written")
    elif r.changed:
        echo_err("rmqctl: repaired" + (f"; replaced files kept in {r.backup}" if r.backup else ""))
    else:
        echo_err("rmqctl: nothing to repair")
