"""verify's queue-offset check, run by run of records (each commitlog chunk, in commitlog order): per topic/queue,
dispatched records' QUEUEOFFSET goes up by exactly one (INNER_NUM for inner batches); PREPARED/ROLLBACK records
carry 0.

`summarize` takes what a run of records tells the check (its breaks, and per queue its first, second and
last target), where the records are: on the scan's thread, right after the chunk is walked, so that no record
columns need to outlive the walk. `QueueOffsets.add` joins the runs in commitlog order: what crosses runs is
per queue, its last target and a break whose next target is not seen yet (one record's field being off is
told by the target after it). Findings are filed at `finish` in the order a single whole-store pass files
them (by queue, then commitlog order).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import schema as S
from ..findings import QUEUES, Findings
from ..engine import queue_breaks
from .context import Context, Records, chunk_records, dispatch_targets, records_of


class Queue(NamedTuple):
    """One queue's targets in a run: a target is its number in the run and (record offset, qoff, step)."""

    key: tuple[str, int]
    first: int
    first_target: tuple[int, int, int]
    second: int  # its next target (-1: the run has one target of this queue) and that one's qoff
    second_qoff: int | None
    breaks: list[tuple]  # (target before, at, at's target, after (-1: none), after's qoff) in commitlog order
    last_target: tuple[int, int, int]


class QueueSummary(NamedTuple):
    topics: list[str]  # the run's topic names, in first-appearance order
    lmq_names: list[str]  # LMQ queue names that are no topic of the run
    undispatched: list[tuple]  # (path, record offset, detail) of PREPARED/ROLLBACK records with a queue offset
    queues: list[Queue]  # by queue number


def summarize(ctx: Context, result) -> QueueSummary:
    """The summary of one chunk's result (checks/scan.ChunkResult, its columns still held)."""
    r = result
    if len(set(r.topics)) < len(r.topics):  # topics whose bytes differ but names agree: records_of merges them
        return summary(ctx, records_of([(r, r.task.file_start, 0, r.count)]))
    # else the chunk's own columns are its table (copies of them would cost more than the summary)
    return summary(ctx, chunk_records(r))


def summary(ctx: Context, rec: Records) -> QueueSummary:
    """What the run of records `rec` tells the check (the PREPARED/ROLLBACK findings already worded)."""
    dispatched = rec.dispatched
    undispatched = []
    for i in np.flatnonzero(~dispatched & (rec.queue_offset != 0)).tolist():
        tx = "PREPARED" if rec.sysflag[i] & S.TRANSACTION_MASK == S.TRANSACTION_PREPARED_TYPE else "ROLLBACK"
        undispatched.append(
            (
                ctx.path_of(int(rec.off[i])),
                int(rec.off[i]),
                f"{tx} record {rec.describe(i)} has queue offset {int(rec.queue_offset[i])}; the broker "
                f"writes 0 for records it never dispatches",
            )
        )
    topic, qid, qoff, ri, names = dispatch_targets(rec, ctx.in_range)
    if not len(ri):
        return QueueSummary(list(rec.topics), [], undispatched, [])
    # targets in commitlog order within each queue: own targets come so; LMQ ones are appended after them
    order = np.argsort(ri, kind="stable") if rec.lmq else np.zeros(0, np.int64)
    low = int(qid.min())
    span = int(qid.max()) - low + 1
    queues = span * (int(topic.max()) + 1)
    if queues < 1 << 20:
        queue = topic * span + (qid - low)
    else:
        queues, queue = len(ri), np.unique(topic * (1 << 32) + qid, return_inverse=True)[1].ravel()
    inner = np.array(sorted(rec.inner_num.items()), dtype=np.int64).reshape(-1, 2)
    before, at, after, first, second, last = queue_breaks(
        queue, qoff, ri, order, queues, inner[:, 0].copy(), inner[:, 1].copy()
    )

    def target(j: int) -> tuple[int, int, int]:
        r = int(ri[j])
        return int(rec.off[r]), int(qoff[j]), rec.inner_num.get(r, 1)

    breaks: dict[int, list] = {int(q): [] for q in np.flatnonzero(first >= 0).tolist()}
    for b, a, c in sorted(zip(before.tolist(), at.tolist(), after.tolist()), key=lambda t: int(ri[t[1]])):
        breaks[int(queue[a])].append((target(b), a, target(a), c, int(qoff[c]) if c >= 0 else None))
    out = [
        Queue(
            (names[topic[f]], int(qid[f])),
            f,
            target(f),
            int(second[q]),
            int(qoff[second[q]]) if second[q] >= 0 else None,
            breaks[q],
            target(int(last[q])),
        )
        for q, f in ((q, int(first[q])) for q in breaks)
    ]
    return QueueSummary(list(rec.topics), names[len(rec.topics) :], undispatched, out)


class QueueOffsets:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.last: dict[tuple[str, int], tuple[int, int, int]] = {}  # queue -> (record offset, qoff, step)
        self.waiting: dict[tuple[str, int], tuple] = {}  # queue -> a break whose next target is not seen yet
        self.own_rank: dict[str, int] = {}  # topic names in first-appearance order, then LMQ names
        self.lmq_rank: dict[str, int] = {}
        self.reports: list[tuple] = []  # (queue, record offset, seq, detail args)

    def add(self, s: QueueSummary) -> Findings:
        """The next run of records, in commitlog order; returns the findings about records the broker never
        dispatches (the breaks wait for `finish`)."""
        found = Findings()
        for name in s.topics:
            self.own_rank.setdefault(name, len(self.own_rank))
        for path, off, detail in s.undispatched:
            found.add(QUEUES, "queue-offset", "warning", path, None, off, detail)
        for name in s.lmq_names:
            self.lmq_rank.setdefault(name, len(self.lmq_rank))
        todo = []  # per queue: the target whose break is no finding (-1: none yet), its breaks
        for q in s.queues:
            prev = self.last.get(q.key)
            skip_target = -1
            if q.key in self.waiting and self._judge(q.key, *self.waiting.pop(q.key), q.first_target[1]):
                skip_target = q.first
            breaks = []
            if prev is not None and q.first_target[1] != prev[1] + prev[2]:
                breaks.append((prev, q.first, q.first_target, q.second, q.second_qoff))
            todo.append((skip_target, breaks + q.breaks))
        for q, (skip_target, breaks) in zip(s.queues, todo):
            for before_t, a, a_target, c, c_qoff in breaks:
                if a == skip_target:
                    continue
                if c < 0:  # its next target is in a later run (or none)
                    self.waiting[q.key] = (before_t, a_target)
                elif self._judge(q.key, before_t, a_target, c_qoff):
                    skip_target = c
        for q in s.queues:
            self.last[q.key] = q.last_target
        return found

    def _judge(self, k: tuple[str, int], before: tuple, at: tuple, after_qoff: int | None) -> bool:
        """File the finding of one break: `at` does not continue `before`. True when only `at`'s field is off
        (the target after it continues `before`): then the break at that next target is no finding."""
        ctx = self.ctx
        a, prev_qoff, prev_step = before
        b, got, step = at
        want = prev_qoff + prev_step
        queue_name = f"{k[0]}/{k[1]}"
        where = (ctx.path_of(b), b - ctx.file_start(b), b)
        if after_qoff is not None and after_qoff == want + step:
            detail = (
                f"record at {b} in {queue_name} has queue offset {got}, but the records around it make it "
                f"{want} ({'a duplicate of an earlier offset' if got < want else 'a jump ahead'}); the header "
                f"field was changed after the broker wrote it"
            )
            self.reports.append((k, b, len(self.reports), "error", where, detail))
            return True
        cause = ctx.damage.cause(a, b)
        if got > want:
            detail = (
                f"queue {queue_name} jumps from offset {want - 1} (record at {a}) to {got} (record at {b}): "
                f"{got - want} missing"
            )
        else:
            detail = (
                f"queue {queue_name} goes back from offset {want - 1} (record at {a}) to {got} (record at "
                f"{b}): duplicate queue offsets"
            )
        if cause:
            detail += f"; a direct consequence of {cause}"
        severity = "error" if not cause or got < want else "warning"
        self.reports.append((k, b, len(self.reports), severity, where, detail))
        return False

    def finish(self) -> Findings:
        """The breaks whose queue has no later target, then every finding in whole-store order."""
        found = Findings()
        for k, (before, at) in list(self.waiting.items()):
            self._judge(k, before, at, None)
        self.waiting.clear()
        rank = dict(self.own_rank)
        for name in self.lmq_rank:
            rank.setdefault(name, len(rank))
        for k, b, _, severity, (path, pos, off), detail in sorted(
            self.reports, key=lambda r: (rank[r[0][0]], r[0][1], r[1], r[2])
        ):
            found.add(QUEUES, "queue-offset", severity, path, pos, off, detail)
        self.reports.clear()
        return found
