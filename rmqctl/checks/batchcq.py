"""verify's BatchConsumeQueue check, window by window in commitlog order: every unit against the record it names
(a unit per dispatched record of the queue, in commitlog order, each the one putBatchMessagePositionInfo
writes), the queue offsets the units cover (each msgBaseOffset where the previous unit's batch ends), and the
records with no unit. Each queue's units are walked once, alongside the windows: memory stays one file of units
per queue."""

from __future__ import annotations

import numpy as np

from .. import batchcq as B
from .. import schema as S
from ..errors import StoreError
from ..findings import CONSUMEQUEUE, Findings
from ..rules import record_expired
from .consumequeue import redispatch_from
from .context import Context, Records
from .links import _queue_file_checks
from .windows import Window


class QueueCursor:
    """One queue's units in commitlog order, handed out a window at a time."""

    def __init__(self, q: B.BatchConsumeQueue):
        self.q = q
        self.units = q.units()
        self.current = None  # (file, unit array of its written units, next index)
        self.next_base = None  # where the next unit's msgBaseOffset must start
        # records with no unit, before and after where the broker's dispatch resumes: count, first, last offset
        self.missing = [[0, None, None], [0, None, None]]

    def upto(self, end: int | None):
        """(file, position, unit) of every unit whose commitLogOffset is below `end` (None: every one left)."""
        while True:
            if self.current is None:
                nxt = next(self.units, None)
                if nxt is None:
                    return
                f, written, arr = nxt
                self.current = [f, arr[:written], 0]
            f, arr, i = self.current
            while i < len(arr) and (end is None or int(arr[i]["commitLogOffset"]) < end):
                yield f, i * S.BCQ_UNIT_SIZE, arr[i]
                i += 1
            self.current[2] = i
            if i < len(arr):
                return
            f.release()
            self.current = None


class BatchConsumeQueueCheck:
    """The begin / window / finish protocol of verify's windowed checks."""

    def __init__(self, run: Context):
        self.run = run
        self.cursors = {(q.topic, q.queue_id): QueueCursor(q) for q in B.batch_consume_queues(run.store)}

    def begin(self) -> Findings:
        self.redispatch = redispatch_from(self.run)  # (after the consumequeue check settled their end)
        found = Findings()
        for path, topic, kind in B.queue_type_conflicts(self.run.store):
            found.add(
                CONSUMEQUEUE,
                "bcq-queue-type",
                "error",
                path,
                None,
                None,
                f"topic {topic}'s queues are here, but its topic config makes it {kind} (queue.type in topics.json): "
                "ConsumeQueueStore.load throws (queueTypeShouldBe), and the broker does not start",
            )
        for cursor in self.cursors.values():
            files = cursor.q.files
            found += _queue_file_checks(
                self.run,
                files,
                files.file_size,
                "batchconsumequeue",
                "mapperFileSizeBatchConsumeQueue",
                (S.BCQ_UNIT_SIZE, "units"),
            )
        return found

    def window(self, w: Window) -> Findings:
        rec = w.rec
        found = Findings()
        if not len(rec.off):
            return found
        end = int(rec.off[-1]) + int(rec.size[-1])
        groups = self._records_by_queue(rec)
        for key in sorted(set(groups) | set(self.cursors)):
            self._queue(found, key, rec, groups.get(key, np.zeros(0, np.int64)), end)
        return found

    def _records_by_queue(self, rec: Records) -> dict[tuple[str, int], np.ndarray]:
        """The commitlog offsets of the window's dispatched records of BatchCQ topics, per queue."""
        batch = np.array([name in self.run.batch_topics for name in rec.topics] + [False])
        idx = np.flatnonzero(rec.dispatched & batch[rec.topic])
        idx = idx[np.lexsort((rec.off[idx], rec.queue_id[idx], rec.topic[idx]))]
        t, q = rec.topic[idx], rec.queue_id[idx]
        cut = list(np.flatnonzero((t[1:] != t[:-1]) | (q[1:] != q[:-1])) + 1)
        return {(rec.topics[t[a]], int(q[a])): rec.off[idx[a:b]] for a, b in zip([0] + cut, cut + [len(idx)]) if b > a}

    def _queue(self, found: Findings, key, rec: Records, offsets: np.ndarray, end: int | None):
        """The queue's units up to `end` against the window's records (into `found`), and what they miss."""
        cursor = self.cursors.get(key)
        units = list(cursor.upto(end)) if cursor is not None else []
        offs = np.array([int(u["commitLogOffset"]) for _, _, u in units], np.int64)
        at = rec.find(offs) if len(offs) else np.zeros(0, np.int64)
        agrees = self._agrees(key, np.array([u for _, _, u in units], S.BCQ_DTYPE), at, rec)
        for (f, pos, u), off, i, ok in zip(units, offs.tolist(), at.tolist(), agrees.tolist()):
            self._unit(found, cursor, f, pos, u, off, i >= 0, ok)
        seen = set(offs.tolist())
        lost = [int(o) for o in offsets if int(o) not in seen]
        if lost:
            m = (cursor or self._absent(key)).missing
            for later in (False, True):
                part = [o for o in lost if (o >= self.redispatch) == later]
                if part:
                    count, first, last = m[later]
                    m[later] = [count + len(part), part[0] if first is None else first, part[-1]]

    def _absent(self, key) -> QueueCursor:
        """A queue the records name that has no directory: a cursor with no units, to count what it misses."""
        directory = self.run.store.root / B.DIRECTORY / key[0] / str(key[1])
        cursor = QueueCursor(B.BatchConsumeQueue(key[0], key[1], directory, B.DEFAULT_FILE_SIZE))
        self.cursors[key] = cursor
        return cursor

    @staticmethod
    def _agrees(key, units: np.ndarray, found: np.ndarray, rec: Records) -> np.ndarray:
        """Units that are the broker's for their record as the record columns tell it (the queue offset for
        INNER_BASE): those need no second look; any other is decided by batchcq.unit_problems on the record."""
        ok = found >= 0
        r = np.where(ok, found, 0)
        if not len(r):
            return ok
        names = np.array([name == key[0] for name in rec.topics] + [False])
        batch = np.array([rec.inner_num.get(int(i), 1) for i in r], np.int64)
        return (
            ok
            & names[rec.topic[r]]
            & (rec.queue_id[r] == key[1])
            & (units["size"] == rec.size[r])
            & (units["tagsCode"] == rec.tags[r])
            & (units["storeTime"] == rec.store_ts[r])
            & (units["msgBaseOffset"] == rec.queue_offset[r])
            & (units["batchSize"] == batch)
            & (units["compactedOffset"] == S.BCQ_INVALID_POS)
            & (units["reserved"] == 0)
        )

    def _unit(self, found: Findings, cursor: QueueCursor, f, pos: int, u, off: int, at_record: bool, agrees: bool):
        q, run = cursor.q, self.run
        base, batch = int(u["msgBaseOffset"]), int(u["batchSize"])
        if cursor.next_base is not None and base != cursor.next_base:
            found.add(
                CONSUMEQUEUE,
                "bcq-offset-gap",
                "error",
                f.path,
                pos,
                off,
                f"{q.topic}/{q.queue_id}: msgBaseOffset {base} where the previous unit's batch ends at "
                f"{cursor.next_base}: consumers cannot read the queue offsets between",
            )
        cursor.next_base = base + batch
        # below the commitlog's min: its record went with the cleanup, as the broker reads it
        if agrees or record_expired(off, run.min_offset):
            return
        if not at_record:
            _bad_target(
                found, f, pos, off, f"{q.topic}/{q.queue_id} unit at msgBaseOffset {base}: no record starts at {off}"
            )
            return
        try:
            problems = B.unit_problems(u, run.store.read_message(off)[1], q.topic, q.queue_id, run.config)
        except StoreError as e:
            problems = [str(e)]
        if problems:
            found.add(
                CONSUMEQUEUE,
                "bcq-unit-mismatch",
                "error",
                f.path,
                pos,
                off,
                f"{q.topic}/{q.queue_id} unit at msgBaseOffset {base}: " + "; ".join(problems),
            )

    @property
    def needs_resolve(self) -> bool:
        return False

    def finish(self) -> Findings:
        found = Findings()
        for (topic, qid), cursor in self.cursors.items():
            for f, pos, u in cursor.upto(None):
                off = int(u["commitLogOffset"])
                base = int(u["msgBaseOffset"])
                _bad_target(
                    found, f, pos, off, f"{topic}/{qid} unit at msgBaseOffset {base}: {off} is past the records checked"
                )
            for later, (count, first, last) in enumerate(cursor.missing):
                if count:
                    found.add(
                        CONSUMEQUEUE,
                        "bcq-missing-units",
                        "warning" if later else "error",
                        cursor.q.directory,
                        None,
                        first,
                        f"{topic}/{qid}: {count} dispatched record(s) have no batchconsumequeue unit "
                        f"(commitlog offsets {first}..{last}); "
                        + (
                            "the broker dispatches them again at its next start"
                            if later
                            else "the broker will not dispatch them again: consumers never see them"
                        ),
                    )
        return found


def _bad_target(found: Findings, f, pos: int, off: int, detail: str) -> None:
    """A unit whose commitlog offset names no record the check can read, reported at the unit."""
    found.add(CONSUMEQUEUE, "bcq-unit-bad-target", "error", f.path, pos, off, detail)
