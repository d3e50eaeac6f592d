"""`verify`: check a store; exit 0 when sound, 1 with findings, 2 when it cannot run."""

from __future__ import annotations

import sys
from collections import Counter

import click

from ..errors import UsageError
from ..checks import VERIFY_PARTS
from ..findings import FINDING_COLUMNS
from ..views.time_range import check_time_range, narrow
from .app import cli
from .options import FILE, OFFSET, memory_option, store_options, time_range_options
from .render import echo_err, echo_moved, prepare_kernels, progress, render


@cli.command("verify")
@store_options
@click.option(
    "--only", type=click.Choice(VERIFY_PARTS), help="Report only this part (the commitlog is read in any case)."
)
@click.option("--from", "start", type=OFFSET, help="First commitlog offset to check (inclusive).")
@click.option("--to", "end", type=OFFSET, help="Commitlog offset to stop at (exclusive).")
@time_range_options(
    "Check only the commitlog from the first record stored at or after TIME (ISO 8601, local time without a "
    "zone, or epoch ms) to the last one stored by --until, found by a scan of the commitlog files whose store "
    "times can hold it.",
    "Check only up to the last record stored at or before TIME (as --since).",
)
@click.option("--deep", is_flag=True, help="Also check that every key of every message is in the index.")
@click.option("--jobs", "-j", type=int, help="Threads checking commitlog chunks in parallel (default: all cores).")
@click.option("--max-findings", type=int, help="Stop listing after N findings (the exit code still says 1).")
@memory_option(
    "Every check stays exact at any size; verify needs about 121M, 242M with a RocksDB message store (less is "
    "taken as that)."
)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing; the exit code is the answer.")
@click.option(
    "--baseline",
    "baseline_path",
    type=FILE,
    help="Accept the findings recorded in this file (--write-baseline): exit 1 only for new ones.",
)
@click.option(
    "--write-baseline",
    "write_path",
    type=FILE,
    help="Record every finding (errors and warnings) in this file as accepted, and exit 0.",
)
def verify_cmd(ctx, only, start, end, since, until, deep, jobs, max_findings, memory, quiet, baseline_path, write_path):
    """Check every file of the store the way the broker reads it; exit 0 sound, 1 findings, 2 cannot run.

    Findings (kind, severity, file, position, commitLogOffset, detail) go to stdout, one JSON object per
    line with --format jsonl; a summary goes to stderr. Read-only: it also runs beside a live broker,
    whose tail may then be moving.

    --since/--until narrow the check to the commitlog offsets from the first message stored in that time
    range to the last one (within --from/--to when given). The broker stamps store times in offset order, so
    one record read per commitlog file tells which files can hold the range, and only those are scanned for
    its exact ends (every file of a DLedger store); no message in the range checks nothing (exit 0).

    \b
    rmqctl verify --store /data/store --broker-config broker.conf
    rmqctl verify --quiet --store /data/store --broker-config broker.conf || echo "exit $?"
    rmqctl verify --store /data/store --since 2024-06-01T00:00 --until 2024-06-01T00:01
    """
    _refuse_contradictions(start, end, since, until, jobs, max_findings, baseline_path, write_path)
    from ..checks.baseline import judge, read_baseline, write_baseline  # beside the verify import below

    baseline, store = (read_baseline(baseline_path) if baseline_path else None), ctx.store
    ctx.version(quiet)  # the recovery prediction depends on it: one stderr line when assumed
    if store.live is not None and not quiet:
        echo_err(
            f"rmqctl: live: {store.live.holder} holds the store lock: verify judges the store as it "
            f"was when it began; what the broker writes meanwhile is its work in flight, not damage"
        )
    whole = baseline is not None or write_path  # the listing is cut below, after the baseline is applied
    result = _run_verify(
        store, only, (start, end, since, until), deep, jobs, memory, None if whole else max_findings, quiet
    )
    if write_path:
        written = write_baseline(write_path, result.findings)
    findings, accepted, gone, exit_code = judge(
        result.findings, result.truncated, baseline, accept_all=bool(write_path)
    )
    counted = findings if whole else None  # verify counted (and cut) the listing itself otherwise
    if whole and max_findings is not None:
        findings = findings[:max_findings]
    if not quiet:
        rows = [f.to_dict() for f in findings] + [{**f.to_dict(), "accepted": True} for f in accepted]
        columns = FINDING_COLUMNS + (["accepted"] if accepted else [])
        if ctx.format == "table":
            _print_findings(rows)
        elif rows or ctx.format in ("json", "csv"):
            render(rows, ctx.format, columns)
        echo_err(_summary(result, counted, len(findings), store.parts.unread_named))  # what it read and not
        _say_restarts(result.restarted_after)
        echo_moved(result.moved)
        if accepted or gone:
            echo_err(
                f"rmqctl: {len(accepted)} finding(s) accepted by the baseline {baseline_path}"
                + (f"; {gone} of its finding(s) no longer found" if gone else "")
            )
        if write_path:
            echo_err(
                f"rmqctl: wrote {written} finding(s) to {write_path}: `verify --baseline {write_path}` accepts "
                "them and exits 1 only for new ones"
            )
        if store.is_empty:  # said even in cron: an empty store is sound, but rarely what was meant
            echo_err(
                f"rmqctl: {store.root} is an empty store: the commitlog directory holds no file (a broker "
                "started here, no message was ever written)"
            )
    raise click.exceptions.Exit(exit_code)


def _run_verify(store, only, span: tuple, deep, jobs, memory, max_findings, quiet):
    """verify over `span` (--from, --to, --since, --until), with a progress bar when stderr is a terminal and not
    --quiet."""
    bars = []  # created at the first report, when the total is known

    def advance(done: int, total: int):
        if not bars:
            bars.append(progress(total, "verify"))
        bars[0].n = done
        bars[0].refresh()

    # the compiled kernels load only for this command
    from ..engine import check_walk
    from ..checks.verify import verify

    prepare_kernels(check_walk)
    start, end, since, until = span
    start, end = narrow(store, since, until, start, end)
    try:
        return verify(
            store,
            only=only,
            start=start,
            end=end,
            deep=deep,
            jobs=jobs,
            memory=memory,
            max_findings=max_findings,
            progress=None if quiet or not sys.stderr.isatty() else advance,
        )
    finally:
        for bar in bars:
            bar.close()


def _say_restarts(deleted: list):
    for path in deleted:
        echo_err(
            f"rmqctl: live: {path} was deleted by the broker (its expired head) while verify read it: verify "
            "started again on the store as it was then"
        )


def _refuse_contradictions(start, end, since, until, jobs, max_findings, baseline_path, write_path):
    """Options that cannot hold together are a usage error (exit 2) before the store is read."""
    if jobs is not None and jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if max_findings is not None and max_findings < 0:
        raise UsageError("--max-findings must not be negative")
    if start is not None and end is not None and end <= start:
        raise UsageError("--to must be greater than --from")
    if baseline_path and write_path:
        raise UsageError("give --baseline or --write-baseline, not both")
    check_time_range(since, until)


STYLES = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _print_findings(rows: list[dict]):
    """One block per finding: what and where on one line, the detail wrapped under it."""
    # rich costs start-up time: loaded only when findings are drawn
    from rich.console import Console
    from rich.text import Text

    con = Console()
    for r in rows:
        where = r["file"] or ""
        if r["position"] is not None:
            where += f" @{r['position']}"
        if r["commitLogOffset"] is not None:
            where += f"  (commitlog offset {r['commitLogOffset']})"
        line = Text()
        line.append(f"{r['severity']:<7} ", style=STYLES.get(r["severity"], ""))
        line.append(f"{r['kind']:<22} ", style="bold")
        line.append(where)
        con.print(line)
        con.print(Text("        " + r["detail"]), soft_wrap=False)


def _summary(result, counted: list | None, shown: int, unread: list) -> str:
    """Counts over every finding reported (`counted`, or verify's own count of all), of which `shown` are
    listed: --max-findings cuts the listing, not the count. A store with `unread` parts is sound only as far
    as read, and the line names them: a summary read alone must not vouch for what was not checked."""
    s = result.stats
    if counted is None:
        counts, kinds, total = s["findings"]["bySeverity"], s["findings"]["byKind"], s["findings"]["total"]
    else:
        counts, kinds = Counter(f.severity for f in counted), dict(Counter(f.kind for f in counted).most_common())
        total = len(counted)
    head = (
        f"verify: {s['records']} records, {s['bytes'] / 1e6:.1f} MB of commitlog in {s['seconds']:.2f} s "
        f"({s['jobs']} job(s)): "
    )
    if not total:
        return head + soundness(unread)
    parts = [f"{counts[k]} {k}(s)" for k in ("error", "warning", "info") if counts.get(k)]
    text = head + ", ".join(parts) + " — " + ", ".join(f"{k} {n}" for k, n in kinds.items())
    if shown < total:
        text += f" (showing {shown} of {total}: --max-findings)"
    return text + not_read_note(unread)


def soundness(unread: list) -> str:
    """What a run without findings says: sound, or sound as far as read and what was not (`unread` parts)."""
    return ("sound as far as read" if unread else "sound") + not_read_note(unread)


def not_read_note(unread: list) -> str:
    return "; not read: " + ", ".join(f"{p.path} ({p.what})" for p in unread) if unread else ""
