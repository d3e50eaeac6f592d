"""verify's view of one queue of the RocksDB consume queue, in the shape of checks/consumequeue.py's
QueueSummary, so the same check (its windows, its rules: unit against record, missing units, re-dispatch)
runs over RocksDB units as over file units. A queue's units are keyed by queue offset: they are read a bounded
batch at a time, once to summarise the queue and once per window that holds them (found by binary search on
the keys when the queue's commitlog offsets go forward).

What only a RocksDB queue has is checked here: its `offset` column family's max and min against its units,
keys missing inside its range, and units below its min offset that the broker's compaction filter should have
dropped (apache/rocketmq#10959).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from ..findings import CONSUMEQUEUE, Findings
from ..rocksdbcq import RocksConsumeQueues, RocksQueue
from ..rules import cq_unit_valid, record_expired
from .context import Context
from .windows import Window


@dataclasses.dataclass
class FileUnits:
    """The queue's units as the one pseudo file the check's windows ask about (consumequeue.FileUnits' fields
    that matter here): the first queue offset, how many, the least and greatest commitlog offset, forward."""

    k: int
    first: int
    n: int
    lo: int
    hi: int
    forward: bool


@dataclasses.dataclass
class NoFiles:
    files: tuple = ()


@dataclasses.dataclass
class RocksQueueRef:
    """What the check asks of a queue: its name, where it lives, its files (none: nothing to map or release)."""

    topic: str
    queue_id: int
    directory: Path
    files: NoFiles = dataclasses.field(default_factory=NoFiles)


class RocksQueueSummary:
    """One queue's units, read once a batch at a time: where they start and end, holes, invalid units; then its
    offset-table entries checked against them (`check`). (Where dispatch resumes is the store's checkpoint:
    recovery.recovered_queues_end.)"""

    def __init__(self, run: Context, rocks: RocksConsumeQueues, q: RocksQueue):
        self.rocks, self.q = rocks, q
        self.cq = RocksQueueRef(q.topic, q.queue_id, rocks.directory)
        self.first = self.last = None  # queue offsets of the first and last key
        self.count = self.invalid = 0
        self.first_invalid = None
        self.end_at = 0  # one past the last valid unit's queue offset
        lo, hi, self.forward, previous = None, 0, True, -1
        for qoffs, units in rocks.units(q.topic, q.queue_id):
            off, sz = units["commitLogOffset"].astype(np.int64), units["size"].astype(np.int64)
            self.first = int(qoffs[0]) if self.first is None else self.first
            self.last = int(qoffs[-1])
            self.count += len(qoffs)
            valid = cq_unit_valid(off, sz)
            if not valid.all():
                self.invalid += int((~valid).sum())
                self.first_invalid = self.first_invalid if self.first_invalid is not None else int(qoffs[~valid][0])
            if valid.any():
                at = np.flatnonzero(valid)[-1]
                self.end_at = int(qoffs[at]) + 1
                seen = off[valid]
                lo, hi = min(int(seen.min()), lo if lo is not None else int(seen.min())), max(hi, int(seen.max()))
                self.forward = self.forward and bool(np.all(seen[1:] >= seen[:-1])) and int(seen[0]) >= previous
                previous = int(seen[-1])
        base = self.first if self.first is not None else 0
        self.files = [FileUnits(0, base, self.count, lo if lo is not None else 1, hi, self.forward)]

    @property
    def end(self) -> int:
        return self.end_at

    def path(self, fu: FileUnits) -> Path:
        return self.cq.directory

    def index(self, fu: FileUnits, i):
        return fu.first + i

    def pos(self, fu: FileUnits, i: int, size: int) -> None:
        return None  # a unit is a key, not a position in a file

    def check(self, run: Context, size: int) -> Findings:
        """Invalid units, keys missing inside the queue, the offset table against the units, units below min."""
        queue = f"{self.q.topic}/{self.q.queue_id}"
        where = self.cq.directory
        invalid = []
        if self.invalid:
            invalid.append(
                f"{queue}: {self.invalid} unit(s) are not entries (first at queue offset {self.first_invalid}); "
                "consumers read them as messages"
            )
        if self.first is not None and self.last - self.first + 1 != self.count:
            invalid.append(
                f"{queue}: {self.last - self.first + 1 - self.count} queue offset(s) between {self.first} and "
                f"{self.last} have no unit; consumers find nothing there"
            )
        found = Findings()
        for detail in invalid:
            found.add(CONSUMEQUEUE, "cq-entry-invalid", "error", where, None, None, detail)
        found += self._offset_table(run, queue, where)
        return found

    def _offset_table(self, run: Context, queue: str, where: Path) -> Findings:
        q, last = self.q, self.last
        found = Findings()
        if q.max_entry is None:
            if last is not None:
                _offset_table_error(
                    found,
                    where,
                    None,
                    f"{queue}: units up to queue offset {last} but no max in the offset column family; "
                    "the broker serves the queue as empty",
                )
            return found
        unit = self.rocks.unit(q.topic, q.queue_id, q.max_entry[1])
        # a max whose record the cleanup deleted may have lost its units to the compaction filter (or to a
        # conversion, which does not copy dead units): only a unit past it or pointing elsewhere is wrong
        dead = record_expired(q.max_entry[0], run.min_offset) and (last is None or last < q.max_entry[1])
        if not dead and (last != q.max_entry[1] or unit is None or unit[0] != q.max_entry[0]):
            _offset_table_error(
                found,
                where,
                q.max_entry[0],
                f"{queue}: the offset column family's max is queue offset {q.max_entry[1]} at commitlog offset "
                f"{q.max_entry[0]}, but the last unit is "
                + (f"at queue offset {last}" if last is not None else "none")
                + (
                    f" and the unit there points at {unit[0]}" if unit is not None and unit[0] != q.max_entry[0] else ""
                ),
            )
        low = self.rocks.min_offset(q, run.min_offset)
        if self.first is not None and self.first < low:
            below = sum(len(qoffs) for qoffs, _ in self.rocks.units(q.topic, q.queue_id, self.first, low))
            # normal after commitlog files go, until RocksDB compacts them away; they stay if it never does
            found.add(
                CONSUMEQUEUE,
                "rocksdb-cq-below-min",
                "info",
                where,
                None,
                None,
                f"{queue}: {below} unit(s) below the queue's min offset {low} (queue offsets {self.first}.."
                f"{low - 1}) are still in the database; the broker never serves them, its compaction filter "
                "drops them when RocksDB compacts them (they survive it in apache/rocketmq#10959)",
            )
        return found

    def in_window(self, run: Context, w: Window):
        """(the one pseudo file, unit numbers, offset, size, tagsCode) of the valid units pointing into the
        window, from a key range found by binary search when the queue goes forward, else from every unit."""
        fu = self.files[0]
        if fu.lo > fu.hi or fu.hi < w.lo or fu.lo >= w.hi or self.first is None:
            return
        lo = self._first_at(w.lo) if self.forward else self.first
        for qoffs, units in self.rocks.units(self.q.topic, self.q.queue_id, lo, self.end_at):
            off, sz, tags = (units[c].astype(np.int64) for c in ("commitLogOffset", "size", "tagsCode"))
            sel = cq_unit_valid(off, sz) & ~record_expired(off, run.min_offset) & run.in_range(off) & w.holds(off)
            if sel.any():
                yield fu, qoffs[sel] - fu.first, off[sel], sz[sel], tags[sel]
            if self.forward and len(off) and off[-1] >= w.hi:
                return

    def _first_at(self, offset: int) -> int:
        """The first queue offset whose unit points at or past `offset` (a missing key counts as past it: the
        range may start early, never late)."""
        a, b = self.first, self.end_at
        while a < b:
            m = (a + b) // 2
            unit = self.rocks.unit(self.q.topic, self.q.queue_id, m)
            if unit is not None and unit[0] < offset:
                a = m + 1
            else:
                b = m
        return a

    def units_at(self, qoffs: np.ndarray) -> np.ndarray:
        """Whether each queue offset (ascending) has a unit that is an entry."""
        have = np.zeros(len(qoffs), bool)
        if not len(qoffs) or self.first is None:
            return have
        for got, units in self.rocks.units(self.q.topic, self.q.queue_id, int(qoffs[0]), int(qoffs[-1]) + 1):
            ok = cq_unit_valid(units["commitLogOffset"].astype(np.int64), units["size"].astype(np.int64))
            ok &= got < self.end_at
            at = np.searchsorted(qoffs, got)
            inside = at < len(qoffs)
            match = inside & (qoffs[np.minimum(at, len(qoffs) - 1)] == got)
            have[at[match]] |= ok[match]
        return have


def _offset_table_error(found: Findings, where: Path, offset: int | None, detail: str) -> None:
    """The offset column family's max for a queue does not match the queue's last unit."""
    found.add(CONSUMEQUEUE, "rocksdb-cq-offset-table", "error", where, None, offset, detail)
