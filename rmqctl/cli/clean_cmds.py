"""`clean`: the broker's deleteWhen / fileReservedTime / disk-ratio cleanup, planned and (with --apply) carried out."""

from __future__ import annotations

import datetime as dt
import os

import click

from ..errors import EXIT_FINDINGS, EXIT_REFUSED, UsageError
from ..maintenance.clean import CleanResult, run_clean
from ..maintenance.clean_rules import FILE_KINDS, CleanSettings, Clock, FileDecision
from .app import cli
from .options import FILE, store_options, wait_option
from .render import dumps, echo_err, render

COLUMNS = ["pass", "kind", "file", "action", "why", "detail"]
# The broker settings clean takes on its command line, each under its broker.conf name (the keyword
# CleanSettings.from_config takes): its option, the option's type, its help.
SETTINGS = {
    "deleteWhen": ("--delete-when", str, "deleteWhen: hours separated by ';' (e.g. 04;05), parsed like the broker."),
    "fileReservedTime": ("--file-reserved-time", int, "fileReservedTime in hours (default 72)."),
    "diskMaxUsedSpaceRatio": (
        "--disk-max-used-space-ratio",
        int,
        "diskMaxUsedSpaceRatio in percent (default 75, clamped 10..95).",
    ),
    "diskSpaceCleanForciblyRatio": (
        "--disk-space-clean-forcibly-ratio",
        int,
        "diskSpaceCleanForciblyRatio in percent (default 85; 5.x clamps to 30..85).",
    ),
    "diskSpaceWarningLevelRatio": (
        "--disk-space-warning-level-ratio",
        int,
        "diskSpaceWarningLevelRatio in percent (default 90; 5.x clamps to 35..90).",
    ),
    "cleanFileForciblyEnable": (
        "--clean-file-forcibly-enable",
        click.BOOL,
        "cleanFileForciblyEnable (default true): above the forcibly ratio, delete regardless of age.",
    ),
    "deleteFileBatchMax": ("--delete-file-batch-max", int, "deleteFileBatchMax, files per pass (5.x; default 10)."),
}


def setting_options(fn):
    """One option per SETTINGS entry, in its order; each reaches the command as a keyword of its broker.conf name."""
    for key, (flag, kind, text) in reversed(SETTINGS.items()):
        fn = click.option(flag, key, type=kind, help=text)(fn)
    return fn


@cli.command("clean")
@store_options(writes=True)
@wait_option
@click.option(
    "--now",
    "manual",
    is_flag=True,
    help="Manual delete, like mqadmin deleteExpiredCommitLog: the next 20 passes act at any hour.",
)
@click.option("--passes", type=click.IntRange(min=1), help="Run N passes (the broker runs one every 10 s); default 1.")
@click.option("--until-ok", is_flag=True, help="Repeat passes until one deletes nothing.")
@click.option("--apply", is_flag=True, help="Delete the planned files (takes the broker's lock; needs --store).")
@click.option("--dry-run", is_flag=True, help="Only print the plan (the default without --apply).")
@click.option(
    "--check",
    is_flag=True,
    help="Exit 1 only if a pass would delete a file now (for monitoring; 2 is an error, or a file the scan "
    "stops at that rmqctl does not delete: a link, one outside the store); deletes nothing.",
)
@click.option(
    "--protect-unconsumed",
    is_flag=True,
    help="Keep commitlog files holding messages a consumer group (consumerOffset.json) has not consumed.",
)
@setting_options
@click.option(
    "--at",
    "at",
    help="Evaluate at this time instead of now (epoch ms, ISO 8601 or mqadmin's yyyy-MM-dd#HH:mm:ss:SSS; its zone is the zone of the hour).",
)
@click.option(
    "--disk-usage",
    type=float,
    metavar="RATIO",
    help="What if the disks were this full (used / total, e.g. 0.9): the plan measures them so, then "
    "credits each planned deletion. Not with --apply.",
)
@click.option(
    "--delete-interval",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Pause (ms) before each deletion with --apply, as the broker's deleteCommitLogFilesInterval (100).",
)
@click.option(
    "--log",
    "log_path",
    type=FILE,
    help="Append one line per deleted file to this log, with the absolute store path (opened per line: "
    "logrotate-friendly).",
)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors; the exit code is the answer.")
@click.option("--verbose", "-v", is_flag=True, help="With --apply, print the plan and summary even when nothing goes.")
def clean(
    ctx,
    manual,
    passes,
    until_ok,
    apply,
    dry_run,
    check,
    protect_unconsumed,
    at,
    disk_usage,
    delete_interval,
    log_path,
    quiet,
    verbose,
    **settings,
):
    """Plan the broker's cleanup (deleteWhen, fileReservedTime, disk ratios) and, with --apply, do it.

    Commitlog files go oldest first (never the last, stopping at the first kept, at most deleteFileBatchMax per
    pass), then consumequeue files and index files wholly below the new minimum offset. Prints each file
    with its action and reason, then (on stderr) why nothing else goes and the resulting minimum offsets.
    With --apply and nothing to delete it prints nothing (cron mails nothing) unless --verbose. A deleted file
    is gone: clean keeps no backup (it runs to free the space one would take); read the plan first.

    \b
    rmqctl clean --store /data/store --broker-config broker.conf --until-ok
    rmqctl clean --check --quiet --store /data/store --broker-config broker.conf || echo "exit $?"
    """
    if apply and (dry_run or check):
        raise UsageError("--apply cannot be combined with --dry-run or --check")
    store = ctx.writable_store() if apply else ctx.store
    settings = CleanSettings.from_config(ctx.config, ctx.version(quiet).major, **settings)
    clock = Clock.parse(at, live=apply)
    on_delete = _logger(log_path, os.path.abspath(store.root)) if log_path else None
    result = run_clean(
        store,
        settings,
        clock,
        passes,
        until_ok,
        manual,
        protect_unconsumed,
        apply,
        on_delete,
        delete_interval,
        disk_usage,
    )
    silent = quiet or (apply and not result.deleted() and not verbose)
    if not silent:
        if ctx.format == "json":
            click.echo(dumps(result.as_dict()))
        else:
            render(
                (d.row() for d in result.decisions),
                ctx.format,
                COLUMNS if ctx.format == "table" else None,
                title="clean plan" if not apply else "clean (applied)",
            )
        for line in summary(result):
            echo_err(line)
    if result.configError:  # (an --apply it let run went at an hour a token named: said, not refused)
        echo_err(f"rmqctl: broker config: {result.configError}")
        if not apply:
            raise click.exceptions.Exit(EXIT_REFUSED)
    blocked = {d.file: d for d in result.decisions if d.why == "unsafe-path"}
    if blocked:  # (said even with --quiet: the broker's cleanup would have gone on past them)
        first = next(iter(blocked.values()))
        echo_err(
            f"rmqctl: clean stops at {len(blocked)} file(s) it does not delete, {first.file} first: "
            f"{first.detail.split(';')[0]}; the broker's cleanup deletes such a file (a link: unlinks it) and goes "
            "on, so resolve it by hand and run clean again"
        )
        if apply or check:
            raise click.exceptions.Exit(EXIT_REFUSED)
    if check and result.deleted():
        raise click.exceptions.Exit(EXIT_FINDINGS)


def _logger(path: str, root):
    """One line per deletion, appended with the file opened and closed each time, so logrotate may move or
    truncate the log between lines."""

    def log(d: FileDecision):
        stamp = dt.datetime.now().astimezone().isoformat(timespec="seconds")
        line = f"{stamp} rmqctl clean store={root} pass={d.passNo} deleted {d.file} why={d.why} ({d.detail})\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)

    return log


def summary(r: CleanResult) -> list[str]:
    """The human part on stderr: each pass's measurements and triggers, the resulting minimum offsets, the
    unconsumed messages that go, and why nothing else goes."""
    s = r.settings
    out = [
        f"clean ({'applied' if r.applied else 'plan only'}), RocketMQ {s.version}.x rules: deleteWhen={s.deleteWhen!r} "
        f"fileReservedTime={s.fileReservedTime}h diskMaxUsedSpaceRatio={s.max_used_ratio:.2f} "
        f"forcibly={s.forcibly_ratio:.2f} warning={s.warning_ratio:.2f} "
        f"cleanFileForciblyEnable={str(s.cleanFileForciblyEnable).lower()} batch={s.batch_max}"
    ]
    for p in r.passes:
        sp = p.space
        disk = (
            f"commitlog disk {sp.commitLogRatio:.2f}"
            + (f", consumequeue {sp.logicsRatio:.2f}" if sp.logicsRatio is not None else "")
            if sp
            else "disk not measured"
        )
        fired = ", ".join(p.triggers()) or "no rule fires"
        counts = ", ".join(f"{len(p.deleted(k))} {k}" for k in FILE_KINDS if k != "timerlog" or p.deleted(k))
        out.append(
            f"pass {p.passNo} at {p.at} (hour {p.hour}): {disk}; {fired}; deletes {counts}; "
            f"min offset {p.minPhyOffsetAfter}"
        )
        if sp:
            out += [f"  {reason}" for reason in sp.reasons]
        if p.brokerException:
            out.append(f"  the broker's consumequeue cleaner throws: {p.brokerException}")
    out.append(f"min commitlog offset: {r.minPhyOffsetBefore} -> {r.minPhyOffsetAfter}; freed {r.freed_bytes} bytes")
    moved = [
        f"{k} {r.cqMinOffsetsBefore.get(k)}->{v}"
        for k, v in r.cqMinOffsetsAfter.items()
        if r.cqMinOffsetsBefore.get(k) != v
    ]
    if moved:
        out.append("consumequeue min offsets: " + ", ".join(moved))
    out.append(
        f"index files left: {len(r.indexFilesAfter)}"
        + (f" (first {r.indexFilesAfter[0]})" if r.indexFilesAfter else "")
    )
    for u in r.unconsumed:
        if u.deleted:
            out.append(
                f"unconsumed messages deleted: group {u.group} {u.topic}/{u.queueId}: {u.deleted} of {u.unconsumed} "
                f"(consumer offset {u.consumerOffset}, first lost queue offset {u.firstDeletedQueueOffset})"
            )
    if r.unconsumed and not any(u.deleted for u in r.unconsumed):
        out.append(f"unconsumed messages deleted: none ({len(r.unconsumed)} group/queue offsets checked)")
    if r.timerUnitsLost:
        slots = sorted({u["slotIndex"] for u in r.timerUnitsLost})
        out.append(
            f"{len(r.timerUnitsLost)} pending timer message(s) lose their commitlog record (timerlog units at "
            f"{', '.join(str(u['pos']) for u in r.timerUnitsLost[:10])}{' ...' if len(r.timerUnitsLost) > 10 else ''}"
            f"; {len(slots)} wheel slot(s)); the broker's dequeue drops them"
        )
    out.append("nothing else goes:")
    out += [f"  {line}" for line in r.remaining]
    out += [f"note: {n}" for n in r.notes + r.settings.notes]
    return out
