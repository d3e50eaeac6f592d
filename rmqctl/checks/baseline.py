"""Findings accepted as they are: a verify baseline (`verify --write-baseline FILE`, then `verify --baseline
FILE`); the findings a repair leaves because the store had them before are checks.verify.Preexisting's.

A finding is the same finding when its kind, file, position and commitlog offset are: its detail may be
worded differently from one run to the next (notes about recovery, consequences), its place may not. The
baseline file holds one finding per line as a JSON object with those four fields and the detail (for people;
it is not compared). `judge` is the policy every front end's exit code comes from."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, NamedTuple

from ..errors import EXIT_FINDINGS, EXIT_OK, UsageError
from ..txn import fsync_dir

KEY_FIELDS = ("kind", "file", "position", "commitLogOffset")


def finding_key(f) -> tuple:
    """What makes two findings (Finding objects or their dicts) the same one."""
    get = f.get if isinstance(f, dict) else lambda name: getattr(f, name)
    return tuple(get(name) for name in KEY_FIELDS)


class Verdict(NamedTuple):
    """What a verify run answers: the findings it lists, those a baseline accepted (listed apart), how many
    of the baseline's findings are gone, and the exit code."""

    findings: list
    accepted: list
    gone: int
    exit_code: int


def judge(
    findings: list, truncated: bool = False, baseline: set[tuple] | None = None, accept_all: bool = False
) -> Verdict:
    """The baseline policy, for every front end: a run fails (exit 1) on an error or a warning that the
    `baseline` (read_baseline's keys) does not accept, or on a listing cut at --max-findings (`truncated`);
    info notes never fail it. `accept_all`: the run writes its findings as the baseline, so none fails."""
    if accept_all:
        return Verdict(findings, [], 0, EXIT_OK)
    accepted = []
    if baseline is not None:
        accepted = [f for f in findings if f.severity != "info" and finding_key(f) in baseline]
        gone = len(baseline - {finding_key(f) for f in findings})
        findings = [f for f in findings if f.severity == "info" or finding_key(f) not in baseline]
    failed = truncated or any(f.severity != "info" for f in findings)
    return Verdict(findings, accepted, gone if baseline is not None else 0, EXIT_FINDINGS if failed else EXIT_OK)


def write_baseline(path: str | os.PathLike, findings: Iterable) -> int:
    """Write the findings (errors and warnings; info notes are not problems) as the accepted set, atomically
    (a temporary file renamed over FILE). Returns how many."""
    path = Path(path)
    rows = [dict(zip(KEY_FIELDS, finding_key(f)), detail=f.detail) for f in findings if f.severity != "info"]
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    fsync_dir(path.resolve().parent)
    return len(rows)


def read_baseline(path: str | os.PathLike) -> set[tuple]:
    """The accepted findings of a baseline file; a line that is not one is a usage error naming it."""
    keys = set()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot read the baseline: {e.strerror}", path) from None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict) or not isinstance(row.get("kind"), str):
                raise ValueError("not a finding object")
        except ValueError as e:
            raise UsageError(
                f"line {lineno} is not a finding ({e}); write the file with --write-baseline", path
            ) from None
        keys.add(finding_key(row))
    return keys
