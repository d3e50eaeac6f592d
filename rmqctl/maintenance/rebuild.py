"""`rebuild consumequeue` and `rebuild index`: the files the broker's dispatch (CommitLogDispatcherBuildConsumeQueue,
CommitLogDispatcherBuildIndex) would have written, rebuilt offline from the commitlog, checked, and swapped in
atomically (txn.py).

Every record of the commitlog is dispatched, in commitlog order, through the same Dispatcher `append` uses
(batches of records within the memory budget through the compiled pass of batchdispatch), into a staging
directory inside the store (a temporary directory outside it with `dry_run`); the consumequeue entries carry
the record's own PHYSICALOFFSET field, as the broker's DispatchRequest does. As in the broker, each output
file is synced and unmapped once full and each commitlog file released once dispatched: what the run holds
does not grow with the store. Topic names read from the records are checked before they become directory
names. The new files are compared with the live ones a pair of files at a time (only the differences are
reported), counted against what was dispatched, and when they change anything, `verify`'s checks
(checks/verify.py) run on the store as the swap will leave it; on a failed check nothing changes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import numpy as np

from .. import batchcq
from .. import schema as S
from .batchdispatch import BatchWriter, dispatch_file, record_starts
from ..budget import DEFAULT_MEMORY, batch_records
from ..dispatch import batch_unit, cq_targets, dispatch_failure, index_keys, reput_stuck_at
from ..dledger import ENTRY_SLICE, entry_slices
from ..errors import StoreError, UsageError, where
from ..schema import SMALLEST_HEAD
from ..record import Blank, Message, RecordError, read_record
from ..recovery import allow_v2
from ..rocksdbconfig import configured_topics
from ..rules import LMQ_PREFIX, deleted_topic, record_expired, reput_fields_end, written_units
from ..store import ConsumeQueue, IndexFile, Store, offset_to_name, queue_keys, valid_topic_dir_name
from .writers import DISPATCH_PARTS, Dispatcher
from .staging import (
    Build,
    DryRunPlan,
    index_count_check,
    last_full_end,
    stage_checkpoint,
    store_transaction,
    verify_staged,
    writing,
)

# working memory of one record in a dispatch batch: its decoded columns, consumequeue entries, index keys
# (2-3 per message) and the sort of the entries by queue, with room to spare
DISPATCH_BYTES_PER_RECORD = 320


@dataclasses.dataclass
class QueueDiff:
    """How one queue changes: units (pre-blank units included) by queue offset."""

    topic: str
    queueId: int
    before: int
    after: int
    added: int
    removed: int
    changed: int


@dataclasses.dataclass
class IndexFileDiff:
    """How the n-th index file changes (files are paired by position: their names are creation times)."""

    position: int
    before: str | None
    after: str | None
    entriesBefore: int
    entriesAfter: int
    added: int
    removed: int
    changed: int
    headerChanged: list[str]


@dataclasses.dataclass
class RebuildResult:
    kind: str  # "consumequeue" or "index"
    store: str
    dryRun: bool
    records: int  # commitlog records dispatched
    entries: int  # consumequeue units / index entries written
    queues: list[QueueDiff] = dataclasses.field(default_factory=list)  # queues that change
    unchangedQueues: int = 0
    indexFiles: list[IndexFileDiff] = dataclasses.field(default_factory=list)
    checkpoint: dict = dataclasses.field(default_factory=dict)  # field -> [before, after]
    warnings: list[str] = dataclasses.field(default_factory=list)
    interrupted: dict | None = None  # what an earlier killed run left, and what was done about it
    backup: str | None = None
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.queues or any(self._file_changes()) or self.checkpoint)

    def _file_changes(self):
        for d in self.indexFiles:
            yield bool(d.added or d.removed or d.changed or d.headerChanged or d.before is None or d.after is None)

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["changed"] = self.changed
        return d


def _next_file(offset: int, f, file_size: int) -> int | None:
    """CommitLog.rollNextFile of the reput's offset, at a BLANK of file `f`: the start of the file after the one
    holding it (None where that is the file after `f` anyway)."""
    rolled = offset + file_size - offset % file_size
    return rolled if rolled != f.start + file_size else None


class _Run:
    """One dispatch of the commitlog, as the broker's reput does it: file by file, each in batches of
    records within the memory budget through the compiled pass (batchdispatch), the records it leaves
    through the Dispatcher one by one. What it keeps across batches is a count per queue."""

    def __init__(
        self, store: Store, dispatcher: Dispatcher, build_cq: bool, build_index: bool, queue_filter, memory: int
    ):
        self.store, self.dispatcher, self.queue_filter = store, dispatcher, queue_filter
        self.build_cq, self.build_index = build_cq, build_index and dispatcher.index is not None
        self.v2 = allow_v2(store)
        self.scan = store.scan(self.v2)
        self.writer = BatchWriter(dispatcher, self.v2, build_cq, build_index, queue_filter)
        self.queued = self.writer.queued  # (topic, queueId) -> entries dispatched to it
        self.queued_batch = self.writer.queued_batch  # the same for BatchConsumeQueue units
        self.records = self.mismatched = 0
        self.moved_on: list = []  # (file, position, why, where the reput goes on) of records whose lengths disagree
        self.batch = batch_records(memory, DISPATCH_BYTES_PER_RECORD)

    def _selected(self, topic: str, qid: int) -> bool:
        return self.queue_filter is None or self.queue_filter(topic, qid)

    @staticmethod
    def _refuse(topic: str, f, position: int, inner_batch: bool = False):
        if inner_batch:  # (a BatchCQ topic whose config was lost: BatchWriter._groups)
            raise StoreError(
                f"{topic}'s records are inner batches (sysFlag INNER_BATCH), which only a BatchConsumeQueue serves, "
                f"but neither topics.json (queue.type=BatchCQ) nor batchconsumequeue/ makes {topic} a BatchCQ "
                "topic: a consumequeue of them would not match their queue offsets; restore the topic's config "
                "(`rmqctl config restore`, or its attributes in topics.json) and run the rebuild again",
                f.path,
                position=position,
            )
        raise StoreError(
            f"topic {topic!r} read from this record cannot be a directory name; refusing to write "
            "consumequeue files for it",
            f.path,
            position=position,
        )

    def file(self, f, resume: int | None = None) -> int | None:
        """Dispatch one commitlog file as the reput does, from `resume` (a commitlog offset in it; None: its
        start). Returns where the reput goes on when a record whose lengths disagree with its TOTALSIZE moved
        its offset off the records (rules.reput_fields_end: it reads on where the fields end, its offset
        counting the TOTALSIZE); None: at the next file's start."""
        buf = f.buf
        limit = min(len(buf), self.store.commitlog.file_size)
        if self.store.dledger is not None:
            self.entries_file(f, buf, limit)
            return None
        # (an offset before this file, a gap or a short file behind it, reads it from its start, as any file after
        # a gap is; one past a short file's bytes reads none of them)
        pos = 0 if resume is None else min(max(resume - f.start, 0), limit)
        ahead = claimed = 0  # how far the reput's offset is ahead of the records; the TOTALSIZEs it skipped
        while (pos := self._compiled(f, buf, limit, pos)) < limit:
            try:
                rec = read_record(buf, pos, limit, self.v2)
            except RecordError as e:
                end = reput_fields_end(buf, pos, limit, self.v2)
                if end is None:
                    if e.kind != "zeros" or self.scan._data_follows(f):
                        self.scan.errors.append((f, pos, e.with_traceback(None)))
                    break
                self.moved_on.append((f, pos, e.detail, f.start + end))
                ahead, claimed, pos = ahead + e.size - (end - pos), claimed + e.size, end
                continue
            if isinstance(rec, Blank):  # rollNextFile of the reput's offset
                return _next_file(f.start + pos + ahead, f, self.store.commitlog.file_size) if ahead else None
            if self._failed(f, pos, rec):
                break
            self.one(f, rec)
            pos += rec.storeSize
        return f.start + limit + claimed if claimed else None  # (doReput: += result.getSize() - readSize)

    def _compiled(self, f, buf, limit: int, pos: int) -> int:
        """The records from `pos` through the compiled walk, a window at a time (its pages given back after);
        returns where it stopped: a BLANK, the end, damage, or a record it leaves to read_record."""
        while True:
            window_end = pos + self.batch * SMALLEST_HEAD  # so it holds at most a batch of records
            starts, stop = record_starts(buf, limit, self.v2, pos, window_end)
            done = self._batches(f, buf, limit, starts)
            f.drop_pages(pos, stop)
            if done < len(starts):
                return int(starts[done])
            pos = stop
            if stop < window_end:
                return pos

    def _batches(self, f, buf, limit: int, starts: np.ndarray) -> int:
        """Dispatch the records at `starts` a batch at a time; returns how many went through the compiled
        pass (it stops at the first record it leaves to read_record)."""
        for lo in range(0, len(starts), self.batch):
            window = starts[lo : lo + self.batch]
            b = dispatch_file(buf, limit, self.store.config, self.v2, with_keys=self.build_index, starts=window, file=f)
            self._batch(f, b)
            if len(b.position) < len(window):
                return lo + len(b.position)
            f.drop_pages(int(window[0]), int(b.position[-1] + b.size[-1]))
        return len(starts)

    def entries_file(self, f, buf, limit: int):
        """A DLedger data file, a slice of its entries at a time: the records of their bodies through the
        compiled pass; from the first it refuses on, entry by entry, as DLedgerCommitLog's reput steps over an
        entry whose record fails."""
        for found in entry_slices(buf, limit, ENTRY_SLICE):
            starts, ends = found.message_starts(), found.message_ends()
            done = self._batches(f, buf, limit, starts)
            for at, end in zip(starts[done:].tolist(), ends[done:].tolist()):
                try:
                    rec = read_record(buf, at, end, self.v2)
                except RecordError as e:
                    self.scan.errors.append((f, at, e.with_traceback(None)))
                    continue
                if isinstance(rec, Message) and not self._failed(f, at, rec):
                    self.one(f, rec)
        if found.stop is not None:  # (the last slice says how the file ends)
            self.scan.errors.append((f, found.stop.position, RecordError(found.stop.kind, found.stop.detail)))

    def _failed(self, f, pos: int, m: Message) -> bool:
        """Whether the reput's check fails this record (dispatch_failure), which is then told as damage is."""
        failure = dispatch_failure(m, self.v2)
        if failure is not None:
            self.scan.errors.append((f, pos, RecordError(*failure)))
        return failure is not None

    def one(self, f, m):
        """The reference path for one record (StoreError where the broker's reput never gets past it)."""
        if (stuck := reput_stuck_at(m, self.store.config, self.v2)) is not None:
            raise StoreError(stuck, f.path, f.start + m.position)
        phy = m.physicalOffset
        self.mismatched += phy != f.start + m.position
        if self.build_cq:
            targets = cq_targets(m, self.store.config, self.v2)
            if targets and m.topic in self.dispatcher.batch_topics:  # its own queue is a BatchConsumeQueue
                if batch_unit(m, self.store.config) is not None and self._selected(m.topic, m.queueId):
                    self.queued_batch[(m.topic, m.queueId)] += 1
                targets = targets[1:]
            for topic, qid, qoff in targets:
                if self._selected(topic, qid):
                    if not valid_topic_dir_name(topic):
                        self._refuse(topic, f, m.position)
                    if topic == m.topic and m.sysFlag & S.INNER_BATCH_FLAG:
                        self._refuse(topic, f, m.position, inner_batch=True)
                    self.queued[(topic, qid)] += 1
        if self.build_index:
            self.writer.keys += len(index_keys(m))
        self.dispatcher.dispatch(m, phy)
        self.records += 1

    def _batch(self, f, b):
        n = len(b.position)
        self.records += n
        self.mismatched += int(np.count_nonzero(b.phy != f.start + b.position))
        self.writer.write(f.buf, b, lambda topic, position, **why: self._refuse(topic, f, position, **why))


def dispatch_records(
    store: Store,
    build_root: Path,
    *,
    build_cq: bool,
    build_index: bool,
    queue_filter=None,
    progress=None,
    index_clock=None,
    memory: int = DEFAULT_MEMORY,
    batch_root: Path | None = None,
) -> Build:
    """Dispatch every commitlog record into `build_root` (laid out like a store; BatchCQ topics' queues into
    `batch_root`, default build_root/batchconsumequeue) as the broker's reput does, each commitlog file released
    once dispatched and each output file once full. Refuses (StoreError naming the record) a topic that cannot
    be a directory name."""
    slots, num = store.index_geometry if build_index else (1, 1)
    batch = frozenset(batchcq.batch_topics(store)) if build_cq else frozenset()
    dispatcher = Dispatcher(
        build_root,
        store.config,
        store.consumequeue_file_size,
        slots,
        num,
        allow_v2(store),
        build_cq=build_cq,
        build_index=build_index,
        index_clock=index_clock,
        queue_filter=queue_filter,
        batch_topics=batch,
        batch_file_size=batchcq.queue_file_size(store) if batch else 0,
        batch_root=batch_root,
    )
    run = _Run(store, dispatcher, build_cq, build_index, queue_filter, memory)
    resume, passed = None, []  # where the reput goes on (a commitlog offset; None: each file's start)
    try:
        for f in store.commitlog.files:
            try:
                if resume is not None and resume >= f.start + store.commitlog.file_size:
                    passed.append(f)
                else:
                    resume = run.file(f, resume)
            finally:
                f.release()
            if progress:
                progress(store.commitlog.file_size)
    finally:
        dispatcher.close()
    skipped = "that DLedger entry is" if store.dledger is not None else "the rest of that file is"
    # (a record torn at the tail by a crash reads as one whose lengths disagree too: repair is the way on)
    next_step = "run `rmqctl repair` or `rmqctl verify`"
    warnings = [
        f"{where(ef.path, ef.start + pos)}: {why}; not dispatched, and the broker's reput reads on where its fields "
        f"end, at commitlog offset {end}, its own offset moved by the TOTALSIZE: {next_step}"
        for ef, pos, why, end in run.moved_on
    ]
    warnings += [f"{f.path}: not dispatched: the broker's reput offset passes over the whole file" for f in passed]
    warnings += [
        f"{where(ef.path, ef.start + pos)}: {e.detail}; {skipped} not dispatched (as the broker's reput "
        f"skips it): {next_step}"
        for ef, pos, e in run.scan.errors
    ]
    if run.mismatched:
        warnings.append(
            f"{run.mismatched} record(s) whose PHYSICALOFFSET field differs from their position; "
            "their entries carry the field, as the broker's would"
        )
    for status, queue, qoff, off in dispatcher.events:
        warnings.append(
            f"consumequeue {queue}: entry for queue offset {qoff} (commitlog {off}) {status}, as the broker does"
        )
    return Build(
        dispatcher=dispatcher,
        records=run.records,
        queued=dict(run.queued),
        keys=run.writer.keys,
        warnings=warnings,
        queued_batch=dict(run.queued_batch),
    )


# ---- diffs -------------------------------------------------------------------------------------------------


def _queue_files(directory: Path | None, file_size: int, queue_class=ConsumeQueue) -> dict:
    """A queue's files (a ConsumeQueue's or a BatchConsumeQueue's) by start offset, none mapped yet."""
    if directory is None or not directory.is_dir():
        return {}
    return {f.start: f for f in queue_class("", 0, directory, file_size).files.files}


def _written(f, file_size: int, dtype: np.dtype, count_written: Callable[[np.ndarray], int]) -> np.ndarray:
    """The units written in a (batch) consumequeue file, a view on its map; none for a missing file."""
    if f is None:
        return np.empty(0, dtype)
    n = min(f.length, file_size) // dtype.itemsize
    units = np.frombuffer(f.buf, dtype, count=n) if n else np.empty(0, dtype)
    return units[: count_written(units)]


def _diff_files(topic: str, qid: int, old: dict, new: dict, file_size: int, kind) -> tuple[QueueDiff, int]:
    """Compare two queues' units by queue offset, a pair of files at a time (files of both with one name hold
    the same queue offsets); `kind` = (unit dtype, count of written units, new units counted). Returns the
    diff and the count."""
    dtype, count_written, counted = kind
    before = after = common = changed = total = 0
    for start in sorted(old.keys() | new.keys()):
        a, b = old.get(start), new.get(start)
        ua, ub = _written(a, file_size, dtype, count_written), _written(b, file_size, dtype, count_written)
        n = min(len(ua), len(ub))
        before, after, common = before + len(ua), after + len(ub), common + n
        changed += int(np.count_nonzero(ua[:n] != ub[:n]))
        total += counted(ub)
        del ua, ub
        for f in (a, b):
            if f is not None:
                f.release()
    return QueueDiff(
        topic=topic,
        queueId=qid,
        before=before,
        after=after,
        added=after - common,
        removed=before - common,
        changed=changed,
    ), total


def _not_pre_blank(units: np.ndarray) -> int:
    return int(np.count_nonzero(units["size"] != S.PRE_BLANK_SIZE))


def diff_queue(
    topic: str, qid: int, old_dir: Path | None, new_dir: Path | None, file_size: int
) -> tuple[QueueDiff, int]:
    """Compare the live queue's units with the new ones by queue offset. Returns the diff and how many of the
    new queue's units are not pre-blank ones."""
    old, new = _queue_files(old_dir, file_size), _queue_files(new_dir, file_size)
    return _diff_files(topic, qid, old, new, file_size, (S.CQ_DTYPE, written_units, _not_pre_blank))


INDEX_COMPARE_ITEMS = 1 << 20  # entries or slots compared at a time


def _differing(a: np.ndarray, b: np.ndarray) -> int:
    """How many items differ between two equally long arrays, compared a slice at a time."""
    return sum(
        int(np.count_nonzero(a[i : i + INDEX_COMPARE_ITEMS] != b[i : i + INDEX_COMPARE_ITEMS]))
        for i in range(0, len(a), INDEX_COMPARE_ITEMS)
    )


def diff_batch_queue(
    topic: str, qid: int, old_dir: Path | None, new_dir: Path | None, file_size: int
) -> tuple[QueueDiff, int]:
    """diff_queue for a BatchConsumeQueue, unit by unit in file order; returns the diff and the new units."""
    old, new = (_queue_files(d, file_size, batchcq.BatchConsumeQueue) for d in (old_dir, new_dir))
    return _diff_files(topic, qid, old, new, file_size, (S.BCQ_DTYPE, batchcq.written_bcq_units, len))


def _stage_batch_queues(store: Store, txn, build: Build, selected, subset: bool, result: RebuildResult) -> list[str]:
    """The rebuilt BatchConsumeQueues: compared with the live ones, counted against the units dispatched, and
    planned into the swap when they change anything. Returns the count problems."""
    root, file_size = build.dispatcher.batch_root, build.dispatcher.batch_file_size
    queues = batchcq.batch_consume_queues(store)
    live = {(q.topic, q.queue_id): q.directory for q in queues if selected(q.topic, q.queue_id)}
    kept = _keep_queues_left_dead(store, queues, set(build.queued_batch), live, root)
    heads = _keep_dead_heads(store, queues, set(build.queued_batch), live, root, file_size)
    built = set(build.queued_batch) | kept
    problems, changed = [], False
    for t, q in sorted(built | set(live)):
        d, written = diff_batch_queue(t, q, live.get((t, q)), root / t / str(q) if (t, q) in built else None, file_size)
        if written != build.queued_batch.get((t, q), 0) + heads[(t, q)] and (t, q) not in kept:
            problems.append(
                f"batchconsumequeue {t}/{q}: {written} units written for {build.queued_batch.get((t, q), 0)} "
                "dispatched records"
            )
        if d.added or d.removed or d.changed:
            result.queues.append(d)
            changed = True
        else:
            result.unchangedQueues += 1
    if changed and not problems:
        target = store.root / batchcq.DIRECTORY
        if subset:
            for t, q in sorted(built | set(live)):
                (
                    txn.replace(target / t / str(q), root / t / str(q))
                    if (t, q) in built
                    else txn.remove(target / t / str(q))
                )
        else:
            root.mkdir(parents=True, exist_ok=True)
            txn.replace(target, root)
    return problems


def diff_index(old: list[IndexFile], new: list[IndexFile]) -> list[IndexFileDiff]:
    """Pair old and new files by position and compare headers, slots and entries (not names: they are
    creation times), one pair of files mapped at a time."""
    out = []
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else None
        b = new[i] if i < len(new) else None
        ea = a.entries()[1 : a.index_count] if a else np.empty(0, S.INDEX_ENTRY_DTYPE)
        eb = b.entries()[1 : b.index_count] if b else np.empty(0, S.INDEX_ENTRY_DTYPE)
        n = min(len(ea), len(eb))
        header = []
        if a and b:
            header = [k for k in a.header if a.header[k] != b.header[k]]
            sa, sb = a.slots(), b.slots()
            if len(sa) != len(sb) or _differing(sa, sb):
                header.append("hashSlots")
            del sa, sb
            if a.length != b.length:  # (a file cut short, its entries whole: the broker maps it at full size)
                header.append("fileLength")
        out.append(
            IndexFileDiff(
                position=i,
                before=a.name if a else None,
                after=b.name if b else None,
                entriesBefore=len(ea),
                entriesAfter=len(eb),
                added=max(0, len(eb) - len(ea)),
                removed=max(0, len(ea) - len(eb)),
                changed=_differing(ea[:n], eb[:n]),
                headerChanged=header,
            )
        )
        del ea, eb
        for ix in (a, b):
            if ix is not None:
                ix.mf.release()
    return out


# ---- the two rebuilds --------------------------------------------------------------------------------------


@contextlib.contextmanager
def _build_area(store: Store, dry_run: bool, kind: str, keep_backup: bool):
    """Where to build and what plans the swap: a transaction with its staging directory in the store, or (dry
    run) a plan that is never committed, in a temporary directory outside it."""
    if dry_run:
        with tempfile.TemporaryDirectory(prefix=f"rmqctl-{kind}-dry-") as d:
            yield DryRunPlan(Path(d))
        return
    with store_transaction(store, "rebuild", f"rebuild {kind}", keep_backup) as txn:
        yield txn


def _check_staged(store: Store, txn, kind: str, within: tuple[str, ...], where_: Path, memory: int) -> None:
    problems = verify_staged(store, txn, kind, within, memory=memory)
    if problems:
        raise StoreError(
            f"verify finds the rebuilt {kind} wrong, nothing was changed: " + "; ".join(problems[:5]), where_
        )


def refuse_dropping_lmq_queues(store: Store, topic: str | None = None, queue_id: int | None = None):
    """Without a broker.conf, multi-dispatch is off (the broker's default), and a rebuild would remove every LMQ
    queue of the selection, which only a broker with enableMultiDispatch=true dispatched: refused rather than
    guessed (UsageError naming one)."""
    if store.config.source is not None or store.config.enableMultiDispatch:
        return
    lmq = sorted(
        f"{t}/{q}"
        for t, q in queue_keys(store)
        if t.startswith(LMQ_PREFIX) and topic in (None, t) and queue_id in (None, q)
    )
    if lmq:
        raise UsageError(
            f"the store has {len(lmq)} LMQ queue(s) ({lmq[0]}, ...), which only a broker with enableMultiDispatch=true "
            "dispatches; without --broker-config multi-dispatch is off and the rebuild would remove them: give the "
            "broker's broker.conf"
        )


def rebuild_consumequeue(
    store: Store,
    topic: str | None = None,
    queue_id: int | None = None,
    dry_run: bool = False,
    keep_backup: bool = True,
    progress=None,
    memory: int = DEFAULT_MEMORY,
) -> RebuildResult:
    """Rebuild every consumequeue (or those of `topic` and/or `queue_id`) from the commitlog and swap them in;
    queues of the selection that no record feeds any more are removed. `memory` bounds a dispatch batch."""
    t0 = time.monotonic()
    subset = topic is not None or queue_id is not None
    if topic is not None and not valid_topic_dir_name(topic):
        raise UsageError(f"--topic {topic!r} cannot be a consumequeue directory name")
    refuse_dropping_lmq_queues(store, topic, queue_id)

    def selected(t: str, q: int) -> bool:
        return (topic is None or t == topic) and (queue_id is None or q == queue_id)

    with (
        writing(store, dry_run, "rebuild consumequeue", understood=DISPATCH_PARTS) as (interrupted, store),
        _build_area(store, dry_run, "consumequeue", keep_backup) as txn,
    ):
        file_size = store.consumequeue_file_size
        root = txn.area(store.consumequeue_dir)  # on its filesystem, which a top-level link may make another
        # batchconsumequeue/ staged on its own filesystem: a top-level link may put it elsewhere than consumequeue/
        batch_root = txn.area(store.root / batchcq.DIRECTORY) / batchcq.DIRECTORY
        build = dispatch_records(
            store,
            root,
            build_cq=True,
            build_index=False,
            queue_filter=selected if subset else None,
            progress=progress,
            memory=memory,
            batch_root=batch_root,
        )
        live = {
            (cq.topic, cq.queue_id): cq.directory for cq in store.consume_queues() if selected(cq.topic, cq.queue_id)
        }
        kept = _keep_queues_left_dead(store, store.consume_queues(), set(build.queued), live, root / "consumequeue")
        built = set(build.queued) | kept
        result = RebuildResult(
            kind="consumequeue",
            store=str(store.root),
            dryRun=dry_run,
            records=build.records,
            entries=sum(build.queued.values()) + sum(build.queued_batch.values()),
            warnings=build.warnings,
            interrupted=interrupted,
        )
        topics = configured_topics(store)
        problems = _compare_queues(build, kept, live, root / "consumequeue", file_size, topics, result)
        queues_changed = bool(result.queues)
        problems += _stage_batch_queues(store, txn, build, selected, subset, result)
        if problems:
            raise StoreError(
                "the rebuilt consumequeue failed its check, nothing was changed: " + "; ".join(problems[:5]),
                store.consumequeue_dir,
            )
        if not subset and build.dispatcher.logics_ts:
            stage_checkpoint(store, txn, result.checkpoint, logicsMsgTimestamp=build.dispatcher.logics_ts)
        if queues_changed:
            _swap_queues(store, txn, root / "consumequeue", built, live, subset)
        if result.changed:
            within = (
                tuple(
                    f"{d}/{t}/{q}/"
                    for t, q in built | set(live) | set(build.queued_batch)
                    for d in ("consumequeue", batchcq.DIRECTORY)
                )
                if subset
                else ()
            )
            _check_staged(store, txn, "consumequeue", within, store.consumequeue_dir, memory)
            if not dry_run:
                result.backup = txn.commit().get("backup")
    result.seconds = time.monotonic() - t0
    return result


def _keep_queues_left_dead(store: Store, queues, fed: set, live: dict, staged: Path) -> set:
    """The queues of `live` (ConsumeQueues or BatchConsumeQueues, `queues`) no record feeds (`fed`: those that
    are) whose every unit points below the commitlog's first file, copied as they are into `staged`. The
    broker's cleanup left them so: a queue file goes only when all of it is dead and never as a queue's last
    file, which keeps the queue's max offset, where producers go on and inside which consumers' committed
    offsets stay. Rebuilt from the commitlog they would be gone, and their offsets would restart at 0."""
    min_phy = store.commitlog.min_offset
    kept = set()
    for q in queues:
        key = (q.topic, q.queue_id)
        if key in fed or key not in live or not _all_units_below(q, min_phy):
            continue
        target = staged / q.topic / str(q.queue_id)
        target.mkdir(parents=True)
        for f in q.files.files:
            shutil.copyfile(f.path, target / f.name)
        kept.add(key)
    return kept


def _all_units_below(q, min_phy: int) -> bool:
    """Whether the queue has units and its last one (so every one) points below commitlog offset `min_phy`."""
    last = None
    for *_, written, arr in q.units():  # (ConsumeQueue.units leads with the file's first offset, then the file)
        if written:
            last = int(arr["commitLogOffset"][written - 1])
        if written < len(arr):
            break
    return last is not None and record_expired(last, min_phy)


def _keep_dead_heads(store: Store, queues, fed: set, live: dict, staged: Path, file_size: int) -> Counter:
    """The BatchConsumeQueues of `live` that records feed (`fed`) and that lead with units whose records the
    cleanup deleted: those units kept where they are, in their files, and the rebuilt units after them. The
    broker serves such a queue from past its first file's dead units only (BatchConsumeQueue.correctMinOffset),
    so a consumer may sit at an offset no record feeds any more; rebuilt from the commitlog alone the queue would
    start at its first live record, and a higher min would lose those offsets. The units kept, per queue."""
    min_phy, kept = store.commitlog.min_offset, Counter()
    for q in queues:
        key = (q.topic, q.queue_id)
        head = _dead_head(q, min_phy) if key in fed and key in live else np.empty(0, S.BCQ_DTYPE)
        if not len(head):
            continue
        target = staged / q.topic / str(q.queue_id)
        rebuilt = _bcq_units(batchcq.BatchConsumeQueue(q.topic, q.queue_id, target, file_size))
        units = np.concatenate([head, rebuilt]).astype(S.BCQ_DTYPE)  # (concatenate gives native byte order)
        for f in list(target.iterdir()):
            f.unlink()
        per_file, start = file_size // S.BCQ_UNIT_SIZE, q.files.files[0].start
        for i in range(0, len(units), per_file):
            data = units[i : i + per_file].tobytes()
            (target / offset_to_name(start + i * S.BCQ_UNIT_SIZE)).write_bytes(data + bytes(file_size - len(data)))
        kept[key] = len(head)
    return kept


def _dead_head(q: batchcq.BatchConsumeQueue, min_phy: int) -> np.ndarray:
    """A copy of the queue's leading units whose records lie below commitlog offset `min_phy`, in file order."""
    head = [np.empty(0, S.BCQ_DTYPE)]
    for f, written, arr in q.units():
        live = np.flatnonzero(~record_expired(arr["commitLogOffset"][:written], min_phy))
        head.append(arr[: int(live[0]) if len(live) else written].copy())
        f.release()
        if len(live) or written < len(arr):
            break
    return np.concatenate(head)


def _bcq_units(q: batchcq.BatchConsumeQueue) -> np.ndarray:
    """A copy of every unit a BatchConsumeQueue's recover reads, in file order."""
    out = [np.empty(0, S.BCQ_DTYPE)]
    for f, written, arr in q.units():
        out.append(arr[:written].copy())
        f.release()
        if written < len(arr):
            break
    return np.concatenate(out)


def _compare_queues(
    build, kept: set, live: dict, staged: Path, file_size: int, topics, result: RebuildResult
) -> list[str]:
    """Each rebuilt queue (staged under `staged`) against the store's (`live`) into `result`: what changed, and a
    warning for a queue no record feeds any more (unless `kept`: left dead by the cleanup, copied as it was) and
    for one of a deleted topic (not among the broker's `topics`) that the rebuild brings back.
    Returns the problems: a queue whose units written are not the messages dispatched to it."""
    built = set(build.queued) | kept
    skipped = Counter(q for status, q, _, _ in build.dispatcher.events if status in ("duplicate", "already-built"))
    problems = []
    for t, q in sorted(built | set(live)):
        new_dir = staged / t / str(q) if (t, q) in built else None
        d, written = diff_queue(t, q, live.get((t, q)), new_dir, file_size)
        wanted = build.queued.get((t, q), 0) - skipped[f"{t}/{q}"]
        if written != wanted and (t, q) not in kept:
            problems.append(f"{t}/{q}: {written} units written for {wanted} dispatched messages")
        if d.added or d.removed or d.changed:
            result.queues.append(d)
        else:
            result.unchangedQueues += 1
        if (t, q) in live and (t, q) not in built:
            result.warnings.append(
                f"consumequeue {t}/{q}: no record in the commitlog feeds it any more; "
                "it is removed (its queue offsets restart when it is next written)"
            )
        elif (t, q) not in live and deleted_topic(t, topics, {topic for topic, _ in live}):
            result.warnings.append(
                f"consumequeue {t}/{q}: {t} is not among the broker's topics (topics.json: deleted); its records "
                "still in the commitlog bring its queue back, as the broker's own dispatch of them would"
            )
    return problems


def _swap_queues(store: Store, txn, staged: Path, built: set, live: dict, subset: bool):
    """The rebuilt queues in: each selected queue's directory (a subset), else the whole consumequeue/."""
    if not subset:
        staged.mkdir(exist_ok=True)
        txn.replace(store.consumequeue_dir, staged)
        return
    for t, q in sorted(built | set(live)):
        target = store.consumequeue_dir / t / str(q)
        if (t, q) in built:
            txn.replace(target, staged / t / str(q))
        else:
            txn.remove(target)


def rebuild_index(
    store: Store,
    dry_run: bool = False,
    keep_backup: bool = True,
    progress=None,
    clock=None,
    memory: int = DEFAULT_MEMORY,
) -> RebuildResult:
    """Rebuild every index file from the commitlog (IndexService.buildIndex, file names from the creation
    time) and swap them in; the checkpoint's indexMsgTimestamp becomes the endTimestamp of the last full
    file, as the broker sets it when it flushes a full file. `memory` bounds a dispatch batch."""
    t0 = time.monotonic()
    if not store.config.messageIndexEnable:
        raise UsageError("messageIndexEnable=false: the broker keeps no index for this store")
    with (
        writing(store, dry_run, "rebuild index", understood=DISPATCH_PARTS) as (interrupted, store),
        _build_area(store, dry_run, "index", keep_backup) as txn,
    ):
        slots, num = store.index_geometry
        root = txn.area(store.index_dir)  # on its filesystem, which a top-level link may make another
        build = dispatch_records(
            store, root, build_cq=False, build_index=True, progress=progress, index_clock=clock, memory=memory
        )
        index_dir = root / "index"
        index_dir.mkdir(exist_ok=True)
        problems = index_count_check(build, index_dir, slots, num)
        if problems:
            raise StoreError(
                "the rebuilt index failed its check, nothing was changed: " + "; ".join(problems[:5]), store.index_dir
            )
        new_files = [IndexFile(p, slots, num) for p in sorted(index_dir.iterdir())]
        result = RebuildResult(
            kind="index",
            store=str(store.root),
            dryRun=dry_run,
            records=build.records,
            entries=build.keys,
            warnings=build.warnings,
            interrupted=interrupted,
        )
        result.indexFiles = diff_index(store.index_files(), new_files)
        stage_checkpoint(store, txn, result.checkpoint, indexMsgTimestamp=last_full_end(new_files))
        for ix in new_files:
            ix.mf.release()
        if any(result._file_changes()):
            txn.replace(store.index_dir, index_dir)
        if result.changed:
            _check_staged(store, txn, "index", (), store.index_dir, memory)
            if not dry_run:
                result.backup = txn.commit().get("backup")
    result.seconds = time.monotonic() - t0
    return result
