"""Findings accepted as they are: a verify baseline (`verify --write-baseline FILE`, then `verify --baseline
FILE`), and the findings a repair leaves in the store because the broker's own recovery leaves them.

A finding is the same finding when its kind, file, position and commitlog offset are: its detail may be
worded differently from one run to the next (notes about recovery, consequences), its place may not. The
baseline file holds one finding per line as a JSON object with those four fields and the detail (for people;
it is not compared)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from ..errors import UsageError
from ..txn import fsync_dir

KEY_FIELDS = ("kind", "file", "position", "commitLogOffset")


def finding_key(f) -> tuple:
    """What makes two findings (Finding objects or their dicts) the same one."""
    get = f.get if isinstance(f, dict) else lambda name: getattr(f, name)
    return tuple(get(name) for name in KEY_FIELDS)


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
            raise UsageError(f"line {lineno} is not a finding ({e}); write the file with --write-baseline", path) from None
        keys.add(finding_key(row))
    return keys


class Preexisting:
    """Accepts a finding of a staged store when the live store has it already: the change being checked did
    not create it. The live store is verified only when the first finding needs this answer, so a change
    whose staged result is sound pays nothing. `kept` lists the findings accepted this way."""

    def __init__(self, store):
        self.store = store
        self.kept: list = []
        self._before: set[tuple] | None = None

    def __call__(self, finding) -> bool:
        if self._before is None:
            from .verify import verify  # late: verify loads the compiled kernels

            self._before = {finding_key(f) for f in verify(self.store).findings}
        if finding_key(finding) in self._before:
            self.kept.append(finding)
            return True
        return False
