"""`verify`: check a store; exit 0 when sound, 1 with findings, 2 when it cannot run."""
from __future__ import annotations

import sys
from collections import Counter

import click

from ..errors import UsageError
from ..ops import VERIFY_PARTS
from .base import cli, echo_err, progress, render, store_options

COLUMNS = ["severity", "kind", "file", "position", "commitLogOffset", "detail"]


@cli.command("verify")
@store_options
@click.option("--only", type=click.Choice(VERIFY_PARTS), help="Report only this part (the commitlog is read in any case).")
@click.option("--from", "start", type=int, help="First commitlog offset to check (inclusive).")
@click.option("--to", "end", type=int, help="Commitlog offset to stop at (exclusive).")
@click.option("--deep", is_flag=True, help="Also check that every key of every message is in the index.")
@click.option("--jobs", "-j", type=int, help="Threads checking commitlog chunks in parallel (default: all cores).")
@click.option("--max-findings", type=int, help="Stop listing after N findings (the exit code still says 1).")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing; the exit code is the answer.")
def verify_cmd(ctx, only, start, end, deep, jobs, max_findings, quiet):
    """Check every file of the store the way the broker reads it; exit 0 sound, 1 findings, 2 cannot run.

    Findings (kind, severity, file, position, commitLogOffset, detail) go to stdout, one JSON object per
    line with --format jsonl; a summary goes to stderr. Read-only: it also runs beside a live broker,
    whose tail may then be moving.
    """
    if jobs is not None and jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if max_findings is not None and max_findings < 0:
        raise UsageError("--max-findings must not be negative")
    if start is not None and end is not None and end <= start:
        raise UsageError("--to must be greater than --from")
    store = ctx.store
    holder = store.lock_holder()
    if holder and not quiet:
        echo_err(f"rmqctl: a broker (pid {holder}) holds the store lock: the commitlog tail may be moving while "
                 f"verify reads it; findings about the end of the last file may be transient")
    bars = []  # created at the first report, when the total is known

    def advance(done: int, total: int):
        if not bars:
            bars.append(progress(total, "verify"))
        bars[0].n = done
        bars[0].refresh()

    try:
        from ..ops.verify import verify  # loads the compiled kernels: only for this command

        result = verify(store, only=only, start=start, end=end, deep=deep, jobs=jobs, max_findings=max_findings,
                        progress=None if quiet or not sys.stderr.isatty() else advance)
    finally:
        for bar in bars:
            bar.close()
    if not quiet:
        rows = [f.to_dict() for f in result.findings]
        if ctx.format == "table":
            _print_findings(rows)
        elif rows or ctx.format in ("json", "csv"):
            render(rows, ctx.format, COLUMNS)
        if result.findings or sys.stderr.isatty():  # quiet success in cron: exit 0 and no output at all
            echo_err(_summary(result))
    raise click.exceptions.Exit(result.exit_code)


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


def _summary(result) -> str:
    s = result.stats
    counts = Counter(f.severity for f in result.findings)
    kinds = Counter(f.kind for f in result.findings)
    head = (f"verify: {s['records']} records, {s['bytes'] / 1e6:.1f} MB of commitlog in {s['seconds']:.2f} s "
            f"({s['jobs']} job(s)): ")
    if not result.findings:
        return head + "sound"
    parts = [f"{counts[k]} {k}(s)" for k in ("error", "warning", "info") if counts[k]]
    text = head + ", ".join(parts) + " — " + ", ".join(f"{k} {n}" for k, n in kinds.most_common())
    if result.truncated:
        text += " (listing stopped at --max-findings)"
    return text
