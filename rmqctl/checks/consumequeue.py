"""verify's consumequeue check in windows of commitlog offsets (checks/windows.py), in memory bounded by the
number of queues, not of records (the rules are checks/links.py's, which tells them).

First each queue's files are read one at a time (`QueueSummary`): where its written units end, its holes and
stale units, and per file whether its units point forward in commitlog order (then a window
finds its units by binary search; a file that does not is masked whole, per window). Then, per window:
  - each unit pointing into the window is checked against the record there (`Records.find`);
  - each record's own unit (queue offset x 20 in its queue's files) tells whether it is missing;
  - which record a queue offset belongs to (the earliest record with that queue offset): within the window
    from its targets, and for the windows before from the queue offsets they held (kept as intervals: one
    for a sound queue). A mismatch that names a record outside its window is resolved by `resolve` over
    the windows again, which only a damaged store needs.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import schema as S
from ..findings import CONSUMEQUEUE, Findings
from ..rules import cq_unit_valid, lite_topic, pre_blank, record_expired
from ..store import ConsumeQueue, dledger_committed_end
from .context import Context, Records
from ..recovery import first_redispatched, recovered_queues_end
from ..errors import FileGone, StoreError
from ..javacompat import parse_long
from ..live import head_moved
from .queue_ext import QueueExts
from .links import _cq_groups, _data_end, _field_cause, _members, _queue_file_checks, _tail_cause
from .rocksqueue import RocksQueueSummary
from .scan import UNKNOWN_TAGS
from .windows import Window

UNIT_BLOCK = 1 << 16  # units of a file that does not go forward masked to a window at a time (not its 300,000)


@dataclasses.dataclass
class FileUnits:
    k: int  # index in the queue's files
    first: int  # position of its first unit among the queue's units (the files' written parts one after another)
    n: int  # units up to its last non-zero byte
    lo: int  # least and greatest commitlog offset of its checked units (lo > hi: none)
    hi: int
    forward: bool  # its checked units are one run, in commitlog order: binary search finds a window's
    a: int = 0  # that run: units a..b-1
    b: int = 0
    gone: bool = False  # a running broker deleted the file during the run (QueueSummary._gone)


class QueueSummary:
    """One queue's units, read a file at a time: what does not depend on the records."""

    def __init__(self, run: Context, cq: ConsumeQueue, size: int):
        self.cq, self.live = cq, run.live
        self.files: list[FileUnits] = []
        self.end_at = self.lead = 0  # one past the last valid unit; the first that is not a pre-blank unit
        first, last_valid, lead = 0, -1, None
        ended = False  # a live store's queue ends at its last unit inside the snapshot (ConsumeQueue.snapshot_units)
        for k, f in enumerate(cq.files.files):
            try:
                n = -(-(_data_end(f.path, f.buf, min(f.length, size))) // S.CQ_UNIT_SIZE)
                n = min(n, min(f.length, size) // S.CQ_UNIT_SIZE)
                inside = 0 if ended else cq.snapshot_units(k, np.frombuffer(f.buf, dtype=S.CQ_DTYPE, count=n))
            except FileGone as e:
                head_moved(self.live, f, e)  # (a stopped store: the error)
                # the broker deletes a queue's file only once its last unit is expired, never the last file: a
                # full file of entries, left out of every check from here on
                n = size // S.CQ_UNIT_SIZE
                self.files.append(FileUnits(k, first, n, 1, 0, True, gone=True))
                lead = first if lead is None else lead
                last_valid, first = first + n - 1, first + n
                continue
            ended, n = ended or inside < n, inside
            self.files.append(FileUnits(k, first, n, 1, 0, True))
            if n:
                off, sz, tags = self._columns(k)
                valid = cq_unit_valid(off, sz)
                if valid.any():
                    last_valid = first + int(np.flatnonzero(valid)[-1])
                pre = pre_blank(off, sz, tags)
                if lead is None and not pre.all():
                    lead = first + int(np.argmin(pre))
                f.release()
            first += n
        self.total = first
        if last_valid >= 0:
            self.end_at = last_valid + 1
            self.lead = lead if lead is not None else first

    def _units(self, k: int) -> np.ndarray | None:
        """File k's units (its first fu.n), mapped; None once a running broker deleted the file (_gone)."""
        fu = self.files[k]
        if fu.gone:
            return None
        try:
            return np.frombuffer(self.cq.files.files[k].buf, dtype=S.CQ_DTYPE, count=fu.n)
        except FileGone as e:
            self._gone(fu, e)
            return None

    def _gone(self, fu: FileUnits, error: FileGone):
        """File fu was deleted since the run listed it: on a running broker's store by CleanConsumeQueueService,
        once every unit of it pointed below the commitlog's first offset (noted with what moved, its units left
        out and its records taken as expired); on a stopped store the error."""
        head_moved(self.live, self.cq.files.files[fu.k], error)
        fu.gone, fu.lo, fu.hi = True, 1, 0

    def _columns(self, k: int, a: int = 0, b: int | None = None):
        """(commitLogOffset, size, tagsCode) of units a..b-1 of file k; None once the file is gone (_units)."""
        arr = self._units(k)
        if arr is None:
            return None
        arr = arr[a:b]
        return (arr["commitLogOffset"].astype(np.int64), arr["size"].astype(np.int64), arr["tagsCode"].astype(np.int64))

    def real(self, fu: FileUnits, off, sz, tags, a: int = 0):
        """Units a..a+len of file `fu` that are entries: valid, not pre-blank, before the end of the written."""
        p = fu.first + a + np.arange(len(off))
        return cq_unit_valid(off, sz) & ~(pre_blank(off, sz, tags)) & (p < self.end_at)

    def check(self, run: Context, size: int) -> Findings:
        """File findings, holes and stale units (in the order of the whole-store check), and per file what
        a window needs to find its units."""
        cq = self.cq
        found = _queue_file_checks(run, cq.files, size, "consumequeue")
        queue = f"{cq.topic}/{cq.queue_id}"
        holes = stale = 0
        first_hole = first_stale = None
        for fu in self.files:
            columns = self._columns(fu.k) if fu.n else None
            if columns is None:
                continue
            off, sz, tags = columns
            p = fu.first + np.arange(fu.n)
            valid = cq_unit_valid(off, sz)
            pre = pre_blank(off, sz, tags)
            hole = (p < self.end_at) & (~valid | (pre & (p >= self.lead)))
            if hole.any():
                holes += int(hole.sum())
                first_hole = first_hole or (fu, int(np.argmax(hole)), off, sz)
            old = (p >= self.end_at) & ((off != 0) | (sz != 0) | (tags != 0))
            if old.any():
                stale += int(old.sum())
                first_stale = first_stale or (fu, int(np.argmax(old)))
            real = self.real(fu, off, sz, tags)
            sel = real & ~record_expired(off, run.min_offset) & run.in_range(off)
            offs = off[sel]
            if len(offs):
                fu.lo, fu.hi = int(offs.min()), int(offs.max())
                run_of = np.flatnonzero(sel)
                fu.forward = bool(run_of[-1] - run_of[0] + 1 == len(run_of) and np.all(offs[1:] >= offs[:-1]))
                fu.a, fu.b = int(run_of[0]), int(run_of[-1]) + 1
            cq.files.files[fu.k].release()
        if first_hole:
            fu, i, off, sz = first_hole
            found.add(
                CONSUMEQUEUE,
                "cq-entry-invalid",
                "error",
                self.path(fu),
                self.pos(fu, i, size),
                None,
                f"{queue}: {holes} unit(s) among the written ones are not entries (first at queue offset "
                f"{self.index(fu, i)}: offset {int(off[i])}, size {int(sz[i])}); consumers read them as messages",
            )
        if first_stale:
            fu, i = first_stale
            found.add(
                CONSUMEQUEUE,
                "cq-stale-units",
                "warning",
                self.path(fu),
                self.pos(fu, i, size),
                None,
                f"{queue}: {stale} unit(s) after the last entry hold data (first at queue offset "
                f"{self.index(fu, i)}); the broker's recovery would read them as entries if they looked valid",
            )
        return found

    def path(self, fu: FileUnits):
        return self.cq.files.files[fu.k].path

    def index(self, fu: FileUnits, i):
        return self.cq.files.files[fu.k].start // S.CQ_UNIT_SIZE + i

    def pos(self, fu: FileUnits, i: int, size: int) -> int:
        return int(self.index(fu, i) * S.CQ_UNIT_SIZE % size)

    def in_window(self, run: Context, w: Window):
        """(file, unit numbers in it, offset, size, tagsCode) of the checked units pointing into the window: a
        slice found by binary search when the file goes forward, else every unit a block at a time."""
        for fu in self.files:
            if fu.lo > fu.hi or fu.hi < w.lo or fu.lo >= w.hi:
                continue
            if fu.forward:
                units = self._units(fu.k)
                if units is None:
                    continue
                arr = units["commitLogOffset"]
                spans = [(_bound(arr, fu.a, fu.b, w.lo), _bound(arr, fu.a, fu.b, w.hi))]
            else:
                spans = [(a, min(fu.n, a + UNIT_BLOCK)) for a in range(0, fu.n, UNIT_BLOCK)]
            for a, b in spans:
                columns = self._columns(fu.k, a, b)
                if columns is None:
                    break
                off, sz, tags = columns
                sel = (
                    self.real(fu, off, sz, tags, a)
                    & ~record_expired(off, run.min_offset)
                    & run.in_range(off)
                    & w.holds(off)
                )
                if sel.any():
                    yield fu, (a + np.arange(b - a))[sel], off[sel], sz[sel], tags[sel]

    def units_at(self, qoffs: np.ndarray) -> np.ndarray:
        """Whether the unit at each queue offset (ascending) is an entry (in any file holding it)."""
        have = np.zeros(len(qoffs), bool)
        for fu in self.files:
            base = self.cq.files.files[fu.k].start // S.CQ_UNIT_SIZE
            a, b = np.searchsorted(qoffs, [base, base + fu.n])
            if a == b:
                continue
            i = qoffs[a:b] - base
            units = self._units(fu.k)
            if units is None:  # deleted by the running broker: its records are expired, not missing from it
                have[a:b] = True
                continue
            arr = units[i]
            off, sz, tags = (arr[c].astype(np.int64) for c in ("commitLogOffset", "size", "tagsCode"))
            p = fu.first + i
            have[a:b] |= cq_unit_valid(off, sz) & ~(pre_blank(off, sz, tags)) & (p < self.end_at)
        return have

    @property
    def end(self) -> int:
        """One past the queue offset of the last written unit."""
        if not self.end_at:
            return 0
        for fu in self.files:
            if fu.first <= self.end_at - 1 < fu.first + fu.n:
                return self.index(fu, self.end_at - 1 - fu.first) + 1
        return 0


def _bound(arr, a: int, b: int, x: int) -> int:
    """First unit of the forward run a..b-1 (`arr`: commitlog offsets) at or past offset x, by binary search."""
    while a < b:
        m = (a + b) // 2
        if int(arr[m]) < x:
            a = m + 1
        else:
            b = m
    return a


def summaries(run: Context) -> list[QueueSummary]:
    """Every queue's summary, read once per run."""
    if run.queue_units is None:
        rocks = run.store.rocks_queues
        if rocks is not None:
            run.queue_units = [RocksQueueSummary(run, rocks, q) for q in rocks.queues()]
        else:
            size = run.store.consumequeue_file_size
            run.queue_units = [QueueSummary(run, cq, size) for cq in run.store.consume_queues()]
    return run.queue_units


class ConsumeQueueCheck:
    """check_consumequeues in windows: `begin`, `window` per window in commitlog order, `finish`."""

    def __init__(self, run: Context, queue_offset_findings: set[int]):
        self.run = run
        self.field_breaks = queue_offset_findings  # commitlog offsets of the queue-offset findings: causes
        self.size = run.store.consumequeue_file_size  # settled before the scan
        self.queues = {(q.cq.topic, q.cq.queue_id): q for q in summaries(run)}
        self.seen: dict[tuple[str, int], list[list[int]]] = {}  # queue -> intervals of queue offsets of past windows
        self.missing: _MissingEntries | None = None  # made at `begin`, once the consumequeues' end is known
        self.mismatches: list = []
        self.pending: dict[tuple[str, int, int], int] = {}  # (topic, queueId, queue offset) -> earliest record offset
        self.ext = QueueExts(run, self.size)  # the queues' ConsumeQueueExt units

    def begin(self) -> Findings:
        run = self.run
        found = Findings()
        for q in self.queues.values():
            found += q.check(run, self.size)
            if self.ext.read:  # (file consume queues only)
                found += self.ext.load(q.cq)
        rocks = run.store.rocks_queues
        if rocks is None:
            found += _unread_queue_dirs(run.store.consumequeue_dir)
        self.missing = _MissingEntries(run, redispatch_from(run))
        checkpoint = consumequeue_max_phy(run)
        if rocks is not None and checkpoint < run.logical_end:
            found.add(
                CONSUMEQUEUE,
                "rocksdb-cq-behind",
                "info",
                rocks.directory,
                None,
                checkpoint,
                f"the RocksDB consume queue's dispatch checkpoint is at {checkpoint}, the commitlog ends at "
                f"{run.logical_end} ({run.logical_end - checkpoint} bytes on): at its next start the broker "
                "dispatches again the records that start after the checkpoint, not one that starts at it (its "
                "queue writes skip the write-ahead log, so a crash leaves it behind)",
            )
        return found

    def window(self, w: Window) -> Findings:
        run, rec = self.run, w.rec
        found = Findings()
        groups = _cq_groups(run, rec)
        for key in [k for k in groups if k[0] in run.store.parts.topics_not_read]:
            del groups[key]  # dispatched to a part this version does not read (BatchCQ): not missing here
        for key, q in self.queues.items():
            queue = f"{key[0]}/{key[1]}"
            qoffs, recs = groups.get(key, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
            for fu, i, off, sz, tags in q.in_window(run, w):
                found += self._units(q, fu, queue, key, rec, i, off, sz, tags, qoffs, recs)
        for key, (qoffs, recs) in groups.items():
            q = self.queues.get(key)
            if key[0] in run.batch_topics or (q is None and lite_topic(key[0]) is not None):
                continue  # a BatchCQ topic's queue (checks/batchcq.py); a lite queue that expired, as they do
            lost = ~q.units_at(qoffs) if q is not None else np.ones(len(qoffs), bool)
            if lost.any():
                self.missing.add(key, q, qoffs[lost], rec.off[recs[lost]])
            self._remember(key, qoffs)
        for q in self.queues.values():
            for f in q.cq.files.files:
                f.release()
        return found

    def _units(
        self, q: QueueSummary, fu: FileUnits, queue: str, key, rec: Records, i, off, sz, tags, qoffs, recs
    ) -> Findings:
        """The entries past the commitlog's end or where no record starts; the rest wait for `finish`."""
        run = self.run
        found = Findings()
        idx = q.index(fu, i)
        path = q.path(fu)
        pos = lambda k: q.pos(fu, int(i[k]), self.size)
        j = rec.find(off)
        past = off >= run.logical_end
        for k in np.flatnonzero(past).tolist():
            o = int(off[k])
            cause = run.damage.cause(o, o + int(sz[k])) or _tail_cause(run, o)
            detail = f"{queue} entry {int(idx[k])} points at {o}, past the end of the commitlog ({run.logical_end})"
            if cause:
                detail += f"; a direct consequence of {cause} (the broker's recovery drops this entry)"
            found.add(CONSUMEQUEUE, "cq-entry-past-end", "error", path, pos(k), o, detail)
        for k in np.flatnonzero((j < 0) & ~past).tolist():
            o = int(off[k])
            cause = run.damage.cause(o, o + int(sz[k]))
            inside = rec.containing(o)
            detail = f"{queue} entry {int(idx[k])} points at {o}, where no record starts"
            if cause:
                detail += f"; a direct consequence of {cause}"
            elif inside >= 0:
                detail += f" (inside the record at {int(rec.off[inside])})"
            found.add(CONSUMEQUEUE, "cq-entry-bad-target", "error", path, pos(k), o, detail)
        hit = np.flatnonzero(j >= 0)
        jh = j[hit]
        if len(qoffs):
            at = np.minimum(np.searchsorted(qoffs, idx[hit]), len(qoffs) - 1)
            here = np.where(qoffs[at] == idx[hit], recs[at], -1)
        else:
            here = np.full(len(hit), -1, dtype=np.int64)
        earlier = self._seen_before(key, idx[hit])
        inner = _members(jh, rec.inner_num)
        ext = tags[hit] <= S.CQ_EXT_MAX_ADDRESS  # ConsumeQueueExt.isExtAddr: the tags live in the ext unit
        known = rec.tags[jh] != UNKNOWN_TAGS  # (a record the broker's check fails: it computes no code)
        tags_ok = (tags[hit] == rec.tags[jh]) | ext | ~known
        bad = ~inner & (earlier | (here != jh) | (sz[hit] != rec.size[jh]) | ~tags_ok)
        at_ext = ext & ~bad & ~inner & known
        if at_ext.any():
            self.ext.add(
                key, queue, path, idx[hit][at_ext], tags[hit][at_ext], rec.tags[jh][at_ext],
                rec.store_ts[jh][at_ext], off[hit][at_ext],
            )  # fmt: skip
        for k, r, e, before in zip(hit[bad].tolist(), jh[bad].tolist(), here[bad].tolist(), earlier[bad].tolist()):
            u = int(idx[k])
            # the record with this queue offset: here when the window has it and no earlier window did
            expected = int(rec.off[e]) if e >= 0 and not before else None
            if expected is None:
                self.pending[(key[0], key[1], u)] = -1
            self.mismatches.append(
                (key, queue, path, pos(k), u, int(off[k]), int(sz[k]), int(tags[k]), _record_facts(rec, r), expected)
            )
        return found

    def _seen_before(self, key, idx: np.ndarray) -> np.ndarray:
        out = np.zeros(len(idx), bool)
        for a, b in self.seen.get(key, ()):
            out |= (idx >= a) & (idx <= b)
        return out

    def _remember(self, key, qoffs: np.ndarray):
        """The queue offsets this window's records held, as intervals."""
        if not len(qoffs):
            return
        cut = np.flatnonzero(qoffs[1:] > qoffs[:-1] + 1) + 1
        runs = self.seen.setdefault(key, [])
        for a, b in zip(np.concatenate([[0], cut]).tolist(), np.concatenate([cut, [len(qoffs)]]).tolist()):
            runs.append([int(qoffs[a]), int(qoffs[b - 1])])
        runs.sort()
        merged = [runs[0]]
        for a, b in runs[1:]:
            if a <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.seen[key] = merged

    @property
    def needs_resolve(self) -> bool:
        return bool(self.pending)

    def resolve(self, w: Window):
        """The earliest record of each pending (queue, queue offset), from another pass over the windows."""
        groups = _cq_groups(self.run, w.rec)
        for (topic, qid, u), earliest in self.pending.items():
            if earliest >= 0 or (topic, qid) not in groups:
                continue
            qoffs, recs = groups[(topic, qid)]
            at = int(np.searchsorted(qoffs, u))
            if at < len(qoffs) and qoffs[at] == u:
                self.pending[(topic, qid, u)] = int(w.rec.off[recs[at]])

    def finish(self) -> Findings:
        found = Findings()
        for key, queue, path, pos, u, off, size, tags, facts, expected in self.mismatches:
            if expected is None:
                earliest = self.pending[(key[0], key[1], u)]
                expected = earliest if earliest >= 0 else None
            causes = [_field_cause(self.field_breaks, at) for at in (facts["off"], expected) if at is not None]
            found.add(
                CONSUMEQUEUE,
                "cq-entry-mismatch",
                "error",
                path,
                pos,
                off,
                _mismatch(queue, u, off, size, tags, facts, expected, next(filter(None, causes), None)),
            )
        found += self.missing.finish(self.queues)
        found += self.ext.finish()
        return found


def _unread_queue_dirs(root) -> Findings:
    """Queue directories whose name Integer.parseInt reads as another (03, +3): the broker opens that queue at
    topic/<queueId> and never reads, serves or deletes these files (Store.consume_queues leaves them out)."""
    found = Findings()
    for qdir in sorted(root.glob("*/*")):
        queue_id = parse_long(qdir.name, 32) if qdir.is_dir() else None
        if queue_id is not None and qdir.name != str(queue_id):
            found.add(
                CONSUMEQUEUE,
                "queue-dir-unread",
                "warning",
                qdir,
                None,
                None,
                f"the broker reads queue {queue_id} of {qdir.parent.name} from {qdir.parent.name}/{queue_id}, "
                "never from this directory: its units are neither served nor cleaned",
            )
    return found


LOST, AGAIN, UNCOMMITTED = range(3)  # what becomes of a record missing from its queue (_MissingEntries)


# what a cq-missing-entries finding says of the entries the broker's next start dispatches again (repair keeps
# `abort` for them: a normal start would not)
DISPATCHED_AGAIN = "the broker dispatches them again at its next start"


class _MissingEntries:
    """Records without their consumequeue unit, per queue and by what the broker does with them: the reput has
    passed them for good (LOST), its next start dispatches them again (AGAIN: at or past `redispatch`), or, in a
    DLedger store, the reput has not reached them because the group has not committed them (UNCOMMITTED: also
    past the committed position, where DLedgerCommitLog.getMaxOffset stops it); tallied window by window."""

    def __init__(self, run: Context, redispatch: int):
        self.run = run
        self.redispatch = redispatch
        self.committed = dledger_committed_end(run.store)
        self.tally: dict[tuple[tuple[str, int], int], list] = {}  # (queue, fate) -> count, qoffs, offsets, all past end

    def _fates(self, offs: np.ndarray) -> np.ndarray:
        fate = np.where(offs >= self.redispatch, AGAIN, LOST)
        if self.committed is not None:
            fate[(fate == AGAIN) & (offs >= self.committed)] = UNCOMMITTED
        return fate

    def add(self, key, q: QueueSummary | None, qoffs: np.ndarray, offs: np.ndarray):
        live = self.run.live
        if live is not None:  # not yet dispatched at the snapshot, or expired (the queue's head cleaned) since
            keep = (offs < live.dispatched_end) & ~self._expired_now(offs)
            qoffs, offs = qoffs[keep], offs[keep]
        fates = self._fates(offs)
        for fate in (LOST, AGAIN, UNCOMMITTED):
            sel = fates == fate
            if not sel.any():
                continue
            qs, os_ = qoffs[sel], offs[sel]
            end = q.end if q is not None else None
            m = self.tally.setdefault((key, fate), [0, qs.min(), qs.max(), os_.min(), os_.max(), True])
            m[0] += int(sel.sum())
            m[1], m[2] = min(m[1], int(qs.min())), max(m[2], int(qs.max()))
            m[3], m[4] = min(m[3], int(os_.min())), max(m[4], int(os_.max()))
            m[5] = m[5] and (end is None or bool((qs >= end).all()))

    def _expired_now(self, offs: np.ndarray) -> np.ndarray:
        """Which records' commitlog files a running broker deleted since the scan (Store.expired, per file)."""
        starts = offs - offs % self.run.file_size
        gone = {int(s) for s in np.unique(starts).tolist() if self.run.store.expired(int(s))}
        return np.isin(starts, list(gone)) if gone else np.zeros(len(offs), bool)

    def finish(self, queues: dict) -> Findings:
        run, found = self.run, Findings()
        present = {topic for topic, _ in queues}
        for (key, fate), (count, qmin, qmax, omin, omax, all_past) in self.tally.items():
            q = queues.get(key)
            queue = f"{key[0]}/{key[1]}"
            directory = q.cq.directory if q is not None else run.store.consumequeue_dir / key[0] / str(key[1])
            where = (
                "no consumequeue directory"
                if q is None
                else f"the queue ends at {q.end}"
                if all_past
                else "the queue has no unit there"
            )
            offsets = f"queue offsets {int(qmin)}..{int(qmax)}, commitlog offsets {int(omin)}..{int(omax)}; {where}"
            if fate == UNCOMMITTED:
                found.add(
                    CONSUMEQUEUE,
                    "cq-missing-entries",
                    "info",
                    directory,
                    None,
                    int(omin),
                    f"{queue}: {count} message(s) past the DLedger group's committed position ({self.committed}, "
                    "where the DLedger checkpoint's committedIndex ends) have no consumequeue entry "
                    f"yet ({offsets}); the broker dispatches them once the group commits them (a new leader may "
                    "truncate them instead)",
                )
                continue
            detail = f"{queue}: {count} dispatched message(s) have no consumequeue entry ({offsets})"
            deleted = fate == LOST and run.deleted_topic(key[0], present)
            if fate == AGAIN and q is not None and all_past and qmin > q.end:
                # ConsumeQueue.putMessagePositionInfo logs "[BUG]logic queue order maybe wrong" and appends anyway
                offsets_note = (
                    f", their units written from queue offset {q.end}, the queue's end, not at their own "
                    f"{int(qmin)}.. (the broker logs [BUG]logic queue order maybe wrong)"
                )
            else:
                offsets_note = ""
            detail += (
                f"; {DISPATCHED_AGAIN} (they are past where its reput resumes){offsets_note}"
                if fate == AGAIN
                else f"; {key[0]} is not among the broker's topics (topics.json): deleted, its queues removed, "
                "its records left in the commitlog until the cleanup deletes their files"
                if deleted
                else "; the broker will not dispatch them again: consumers never see them"
            )
            # a RocksDB queue behind its commitlog is its normal state after a crash, not damage
            later_severity = "info" if run.store.rocks_queues is not None else "warning"
            found.add(
                CONSUMEQUEUE,
                "cq-missing-entries",
                later_severity if fate == AGAIN else "info" if deleted else "error",
                directory,
                None,
                int(omin),
                detail,
            )
        return found


def _record_facts(rec: Records, r: int) -> dict:
    dispatched = bool(rec.dispatched[r])
    tx = "PREPARED" if rec.sysflag[r] & S.TRANSACTION_MASK == S.TRANSACTION_PREPARED_TYPE else "ROLLBACK"
    return dict(
        off=int(rec.off[r]),
        dispatched=dispatched,
        tx=tx,
        describe=rec.describe(r),
        size=int(rec.size[r]),
        tags=int(rec.tags[r]),
    )


def _mismatch(queue, qoff, off, size, tags, r: dict, expected: int | None, cause: str | None) -> str:
    """What an entry that points at record `r` (_record_facts) gets wrong."""
    problems = []
    if not r["dispatched"]:
        problems.append(f"the record is {r['tx']}, which the broker never dispatches")
    elif expected != r["off"]:
        problems.append(f"it points at {r['describe']}")
        if expected is not None:
            problems.append(f"the record with that queue offset is at {expected}")
    if size != r["size"]:
        problems.append(f"size {size} but the record is {r['size']} bytes")
    if tags != r["tags"] and tags > S.CQ_EXT_MAX_ADDRESS and r["tags"] != UNKNOWN_TAGS and expected == r["off"]:
        problems.append(f"tagsCode {tags} but the dispatcher computes {r['tags']}")
    detail = f"{queue} entry {qoff} (commitlog offset {off}): " + "; ".join(problems)
    if cause:
        detail += f"; {cause}"
    return detail


def consumequeue_max_phy(run: Context) -> int:
    """Where the broker's consume queues end at its next start (recovery.recovered_queues_end), read once per run;
    0 when its consume queues are not read."""
    if run.queues_end is None:
        try:
            run.queues_end = recovered_queues_end(run.store)
        except StoreError:
            return 0
    return run.queues_end.max_phy


def redispatch_from(run: Context) -> int:
    """Records at or after this offset are dispatched again by the broker at its next start
    (recovery.first_redispatched, the commitlog as far as it reads; after a crash, abnormal recovery re-dispatches
    from its start file: 4.9 then reputs from the queues' end as well, 5.x (recoverAbnormally's doDispatch = true,
    then the reput from the confirm offset) from that file alone; DLedgerCommitLog's recoverAbnormally is its
    recover, which dispatches nothing)."""
    if run.redispatch is None:
        consumequeue_max_phy(run)
        ends = run.queues_end
        run.redispatch = first_redispatched(run.store, ends, run.logical_end) if ends is not None else 0
        if run.crashed and run.files and run.store.dledger is None:
            start = run.files[run.abnormal_start].start
            run.redispatch = start if run.store.version.major >= 5 else min(run.redispatch, start)
    return run.redispatch
