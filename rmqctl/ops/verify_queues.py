"""verify's queue-offset check, window by window (ops/verify_windows.py): per topic/queue, dispatched records'
QUEUEOFFSET goes up by exactly one (INNER_NUM for inner batches); PREPARED/ROLLBACK records carry 0.

What crosses windows is per queue: its last target, and a break whose next target is not seen yet (one
record's field being off is told by the target after it). Findings are filed at `finish` in the order a
single whole-store pass files them (by queue, then commitlog order).
"""
from __future__ import annotations

import numpy as np

from .. import schema as S
from ..findings import QUEUES
from ..native.verify import queue_breaks
from .verify_context import Context, Records, dispatch_targets


class QueueOffsets:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.last: dict[tuple[str, int], tuple[int, int, int]] = {}  # queue -> (record offset, qoff, step)
        self.waiting: dict[tuple[str, int], tuple] = {}  # queue -> a break whose next target is not seen yet
        self.own_rank: dict[str, int] = {}  # topic names in first-appearance order, then LMQ names
        self.lmq_rank: dict[str, int] = {}
        self.reports: list[tuple] = []  # (queue, record offset, seq, detail args)

    def window(self, rec: Records):
        ctx = self.ctx
        if not len(rec.off):
            return
        for name in rec.topics:
            self.own_rank.setdefault(name, len(self.own_rank))
        dispatched = rec.dispatched
        for i in np.flatnonzero(~dispatched & (rec.queue_offset != 0)).tolist():
            tx = "PREPARED" if rec.sysflag[i] & S.TRANSACTION_MASK == S.TRANSACTION_PREPARED_TYPE else "ROLLBACK"
            ctx.report(QUEUES, "queue-offset", "warning", ctx.path_of(int(rec.off[i])), None, int(rec.off[i]),
                       f"{tx} record {rec.describe(i)} has queue offset {int(rec.queue_offset[i])}; the broker "
                       f"writes 0 for records it never dispatches")
        topic, qid, qoff, ri, names = dispatch_targets(rec, ctx.in_range)
        if not len(ri):
            return
        for name in names[len(rec.topics):]:  # LMQ queue names that are no topic of this window
            self.lmq_rank.setdefault(name, len(self.lmq_rank))
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
        before, at, after = queue_breaks(queue, qoff, ri, order, queues, inner[:, 0].copy(), inner[:, 1].copy())
        seq = order if len(order) else np.arange(len(ri))
        # per queue its first and last target in this window, and each target's next one (-1: none here)
        ordered = queue[seq]
        nxt = np.full(len(ri), -1, np.int64)
        by_queue = seq[np.argsort(ordered, kind="stable")]
        same = queue[by_queue[1:]] == queue[by_queue[:-1]]
        nxt[by_queue[:-1][same]] = by_queue[1:][same]
        firsts = by_queue[np.flatnonzero(np.append(True, ~same))]
        lasts = by_queue[np.flatnonzero(np.append(~same, True))]

        def target(j: int) -> tuple[int, int, int]:
            r = int(ri[j])
            return int(rec.off[r]), int(qoff[j]), rec.inner_num.get(r, 1)

        def key(j: int) -> tuple[str, int]:
            return names[topic[j]], int(qid[j])

        breaks: dict[int, list] = {}  # first target of a queue -> its breaks in this window, in commitlog order
        first_of = {int(queue[f]): int(f) for f in firsts.tolist()}
        for f in firsts.tolist():
            k = key(f)
            prev = self.last.get(k)
            skip_target = -1
            if k in self.waiting and self._judge(k, *self.waiting.pop(k), target(f)[1]):
                skip_target = f
            todo = []
            if prev is not None and target(f)[1] != prev[1] + prev[2]:
                todo.append((prev, f, int(nxt[f])))
            breaks[f] = [skip_target, todo]
        for b, a, c in sorted(zip(before.tolist(), at.tolist(), after.tolist()), key=lambda t: int(ri[t[1]])):
            breaks[first_of[int(queue[a])]][1].append((target(b), a, c))
        for f, (skip_target, todo) in breaks.items():
            k = key(f)
            for before_t, a, c in todo:
                if a == skip_target:
                    continue
                if c < 0:  # its next target is in a later window (or none)
                    self.waiting[k] = (before_t, target(a))
                elif self._judge(k, before_t, target(a), target(c)[1]):
                    skip_target = c
        for j in lasts.tolist():
            self.last[key(j)] = target(j)

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
            detail = (f"record at {b} in {queue_name} has queue offset {got}, but the records around it make it "
                      f"{want} ({'a duplicate of an earlier offset' if got < want else 'a jump ahead'}); the header "
                      f"field was changed after the broker wrote it")
            self.reports.append((k, b, len(self.reports), "error", where, detail))
            return True
        cause = ctx.damage.cause(a, b)
        if got > want:
            detail = (f"queue {queue_name} jumps from offset {want - 1} (record at {a}) to {got} (record at {b}): "
                      f"{got - want} missing")
        else:
            detail = (f"queue {queue_name} goes back from offset {want - 1} (record at {a}) to {got} (record at "
                      f"{b}): duplicate queue offsets")
        if cause:
            detail += f"; a direct consequence of {cause}"
        severity = "error" if not cause or got < want else "warning"
        self.reports.append((k, b, len(self.reports), severity, where, detail))
        return False

    def finish(self):
        """The breaks whose queue has no later target, then every finding in whole-store order."""
        for k, (before, at) in list(self.waiting.items()):
            self._judge(k, before, at, None)
        self.waiting.clear()
        rank = dict(self.own_rank)
        for name in self.lmq_rank:
            rank.setdefault(name, len(rank))
        for k, b, _, severity, (path, pos, off), detail in sorted(
                self.reports, key=lambda r: (rank[r[0][0]], r[0][1], r[1], r[2])):
            self.ctx.report(QUEUES, "queue-offset", severity, path, pos, off, detail)
        self.reports.clear()
