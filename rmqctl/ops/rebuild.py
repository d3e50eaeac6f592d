"""`rebuild consumequeue` and `rebuild index`: the files the broker's dispatch (CommitLogDispatcherBuildConsumeQueue,
CommitLogDispatcherBuildIndex) would have written, rebuilt offline from the commitlog, checked, and swapped in
atomically (ops/txn.py).

Every record of the commitlog is dispatched, in commitlog order, through the same Dispatcher `append` uses
(whole files at once through the compiled pass of batchdispatch), into a staging directory inside the store;
the consumequeue entries carry the record's own PHYSICALOFFSET field, as the broker's DispatchRequest does.
Topic names read from the records are checked before they become directory names. Then `verify`'s checks
(ops/verify.py) run on the store as the swap will leave it; on a failed check nothing changes. When the
dispatch found the commitlog sound, those checks run against its own decode of the records (verify's
consumequeue or index checks alone); otherwise a full `verify` decodes the commitlog again, so that findings
caused by its damage are told apart. With `dry_run` the same build goes to a temporary directory outside the
store, is read back and checked with the store model, and only the differences are reported.
"""
from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
from array import array
from collections import defaultdict
from pathlib import Path

import numpy as np

from .. import schema as S
from ..dispatch import cq_targets, index_keys
from ..errors import StoreError, UsageError
from ..batchdispatch import dispatch_file
from ..record import Blank, RecordError, read_record
from ..recovery import RecordSet, allow_v2
from ..store import IndexFile, Store, valid_topic_dir_name
from ..writers import Dispatcher
from .staging import (Build, check_consumequeues, check_index, index_count_check, last_full_end, queue_units,
                      stage_checkpoint, verify_staged, writing)
from .txn import Transaction
from .verify_context import Records
from .verify_links import queue_order


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


class _Run:
    """One dispatch of the commitlog: whole files through the compiled pass (batchdispatch), records it
    leaves through the Dispatcher one by one, with the accounting the read-back check needs."""

    def __init__(self, store: Store, dispatcher: Dispatcher, build_cq: bool, build_index: bool, queue_filter):
        self.store, self.dispatcher, self.queue_filter = store, dispatcher, queue_filter
        self.build_cq, self.build_index = build_cq, build_index and dispatcher.index is not None
        self.v2 = allow_v2(store)
        self.scan = store.scan(self.v2)
        self.seen = RecordSet()
        self.targets: dict = defaultdict(lambda: array("q"))
        self.keys = self.records = self.mismatched = self.one_by_one = 0
        self.columns: list[Records] = []  # per file, its record columns (topic ids are the run's)
        self.topics: dict[str, int] = {}

    def record_table(self) -> Records | None:
        """verify's Records of every record dispatched, when every one went through the compiled pass and
        nothing was damaged, misplaced or beyond what that pass decides (inner batches): then the check of
        the result needs no second decode of the commitlog."""
        cols = self.columns
        if self.scan.errors or self.one_by_one or self.mismatched:
            return None
        base = np.cumsum([0] + [len(c.off) for c in cols[:-1]])
        # key records numbered across files; one file's columns are used as they are
        cols = [dataclasses.replace(c, key_record=c.key_record + b) if b else c for c, b in zip(cols, base)]

        def joined(name: str) -> np.ndarray:
            if not cols:
                return np.zeros(0, np.int64)
            return getattr(cols[0], name) if len(cols) == 1 else np.concatenate([getattr(c, name) for c in cols])

        sysflag = joined("sysflag")
        if np.any(sysflag & S.INNER_BATCH_FLAG):
            return None
        lmq = [(r + int(b), *target) for c, b in zip(cols, base) for r, *target in c.lmq]
        return Records(off=joined("off"), size=joined("size"), queue_id=joined("queue_id"),
                       queue_offset=joined("queue_offset"), sysflag=sysflag, store_ts=joined("store_ts"),
                       topic=joined("topic"), tags=joined("tags"), topics=list(self.topics),
                       key_record=joined("key_record"), key_hash=joined("key_hash"), lmq=lmq, inner_num={})

    def _selected(self, topic: str, qid: int) -> bool:
        return self.queue_filter is None or self.queue_filter(topic, qid)

    @staticmethod
    def _refuse(topic: str, f, position: int):
        raise StoreError(f"topic {topic!r} read from this record cannot be a directory name; refusing to write "
                         "consumequeue files for it", f.path, position)

    def file(self, f):
        buf = f.buf
        limit = min(len(buf), self.store.commitlog.file_size)
        batch = dispatch_file(buf, limit, self.store.config, self.v2, with_keys=self.build_index)
        self._batch(f, batch)
        pos = batch.stop
        while pos < limit:  # what the compiled walk stopped at: a BLANK, the end, damage, or a record for read_record
            try:
                rec = read_record(buf, pos, limit, self.v2)
            except RecordError as e:
                if e.kind != "zeros" or self.scan._data_follows(f):
                    self.scan.errors.append((f, pos, e))
                return
            if isinstance(rec, Blank):
                return
            self.one(f, rec)
            pos += rec.storeSize

    def one(self, f, m):
        """The reference path for one record."""
        phy = m.physicalOffset
        self.one_by_one += 1
        self.mismatched += phy != f.start + m.position
        self.seen.add(phy, m.storeSize)
        if self.build_cq:
            for topic, qid, qoff in cq_targets(m, self.store.config):
                if self._selected(topic, qid):
                    if not valid_topic_dir_name(topic):
                        self._refuse(topic, f, m.position)
                    self.targets[(topic, qid)].append(qoff)
        if self.build_index:
            self.keys += len(index_keys(m))
        self.dispatcher.dispatch(m, phy)
        self.records += 1

    def _batch(self, f, b):
        n = len(b.position)
        if not n:
            return
        self.records += n
        self.seen.add_many(b.phy, b.size)
        ids = np.array([self.topics.setdefault(t, len(self.topics)) for t in b.topics], np.int64)
        self.columns.append(Records(
            off=f.start + b.position, size=b.size, queue_id=b.queue_id, queue_offset=b.queue_offset,
            sysflag=b.sysflag, store_ts=b.store_ts, topic=ids[b.topic] if len(ids) else b.topic, tags=b.tags,
            topics=[], key_record=b.key_record, key_hash=b.key_hash, lmq=b.lmq, inner_num={}))
        self.mismatched += int(np.count_nonzero(b.phy != f.start + b.position))
        if self.build_cq:
            self._batch_queues(f, b)
        if self.build_index:
            index = self.dispatcher.index
            fresh = not index.files or b.phy[0] >= index.files[-1].end_phy
            if fresh and np.all(np.diff(b.phy) > 0):  # no record is "already indexed": keys go in as they come
                self.keys += len(b.key_hash)
                index.build_many(b.key_hash, b.phy[b.key_record], b.store_ts[b.key_record], int(b.phy[-1]))
            else:
                for pos in b.position.tolist():
                    m = read_record(f.buf, pos, len(f.buf), self.v2)
                    self.keys += len(index_keys(m))
                    index.build(m, m.physicalOffset)

    def _batch_queues(self, f, b):
        d = self.dispatcher
        order = queue_order(b.cq_topic, b.cq_qid, b.cq_record)
        topic, qid = b.cq_topic[order], b.cq_qid[order]
        cuts = np.flatnonzero((topic[1:] != topic[:-1]) | (qid[1:] != qid[:-1])) + 1
        groups = [(order[lo:hi]) for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(order)]) if hi > lo]
        groups = [g for g in groups if self._selected(b.topics[b.cq_topic[g[0]]], int(b.cq_qid[g[0]]))]
        bad = [g for g in groups if not valid_topic_dir_name(b.topics[b.cq_topic[g[0]]])]
        if bad:
            first = min(bad, key=lambda g: b.cq_record[g[0]])
            self._refuse(b.topics[b.cq_topic[first[0]]], f, int(b.position[b.cq_record[first[0]]]))
        last_written = -1
        for g in groups:
            name, q = b.topics[b.cq_topic[g[0]]], int(b.cq_qid[g[0]])
            rec, qoffs, tags = b.cq_record[g], b.cq_qoff[g], b.cq_tags[g]
            self.targets[(name, q)].frombytes(qoffs.astype(np.int64).tobytes())
            w = d.queue(name, q)
            if np.all(np.diff(qoffs) == 1) and w.put_run(b.phy[rec], b.size[rec], tags, int(qoffs[0])):
                last_written = max(last_written, int(rec[-1]))
                continue
            for r, o, t in zip(rec.tolist(), qoffs.tolist(), tags.tolist()):
                status = w.put(int(b.phy[r]), int(b.size[r]), t, o)
                if status != "written":
                    d.events.append((status, f"{name}/{q}", o, int(b.phy[r])))
                if status in ("written", "out-of-order"):
                    last_written = max(last_written, r)
        if last_written >= 0:
            d.logics_ts = int(b.store_ts[last_written])


def dispatch_records(store: Store, build_root: Path, *, build_cq: bool, build_index: bool, queue_filter=None,
                     progress=None, index_clock=None) -> Build:
    """Dispatch every commitlog record into `build_root` (laid out like a store) as the broker's reput does.
    Refuses (StoreError naming the record) a topic that cannot be a directory name."""
    slots, num = store.index_geometry if build_index else (1, 1)
    dispatcher = Dispatcher(build_root, store.config, store.consumequeue_file_size, slots, num, build_cq=build_cq,
                            build_index=build_index, index_clock=index_clock, queue_filter=queue_filter)
    run = _Run(store, dispatcher, build_cq, build_index, queue_filter)
    try:
        for f in store.commitlog.files:
            run.file(f)
            if progress:
                progress(store.commitlog.file_size)
        units = {key: w.written() for key, w in dispatcher.queues.items()}
    finally:
        dispatcher.close()
    warnings = [f"{ef.path} at offset {ef.start + pos}: {e.detail}; the rest of that file is not dispatched "
                "(as the broker's reput skips it): run `rmqctl repair` or `rmqctl verify`" for ef, pos, e in run.scan.errors]
    if run.mismatched:
        warnings.append(f"{run.mismatched} record(s) whose PHYSICALOFFSET field differs from their position; "
                        "their entries carry the field, as the broker's would")
    for status, queue, qoff, off in dispatcher.events:
        warnings.append(f"consumequeue {queue}: entry for queue offset {qoff} (commitlog {off}) {status}, as the broker does")
    return Build(dispatcher=dispatcher, records=run.records, records_seen=run.seen, targets=dict(run.targets),
                 keys=run.keys, warnings=warnings, commitlog=run.record_table(), units=units)


# ---- diffs -------------------------------------------------------------------------------------------------


EMPTY_QUEUE = (np.empty(0, np.int64), np.empty(0, S.CQ_DTYPE))


def diff_queue(topic: str, qid: int, old_dir: Path | None, new: tuple, file_size: int) -> QueueDiff:
    """Compare the live queue's units with the new ones (queue offsets, units), by queue offset."""
    oq, ou = queue_units(old_dir, file_size)[:2] if old_dir is not None and old_dir.is_dir() else EMPTY_QUEUE
    nq, nu = new
    common, io, inew = np.intersect1d(oq, nq, assume_unique=True, return_indices=True)
    changed = int(np.count_nonzero(ou[io] != nu[inew])) if len(common) else 0
    return QueueDiff(topic=topic, queueId=qid, before=len(oq), after=len(nq), added=len(nq) - len(common),
                     removed=len(oq) - len(common), changed=changed)


def diff_index(old: list[IndexFile], new: list[IndexFile]) -> list[IndexFileDiff]:
    """Pair old and new files by position and compare headers, slots and entries (not names: they are
    creation times)."""
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
            if len(a.slots()) != len(b.slots()) or np.any(a.slots() != b.slots()):
                header.append("hashSlots")
        out.append(IndexFileDiff(position=i, before=a.name if a else None, after=b.name if b else None,
                                 entriesBefore=len(ea), entriesAfter=len(eb), added=max(0, len(eb) - len(ea)),
                                 removed=max(0, len(ea) - len(eb)), changed=int(np.count_nonzero(ea[:n] != eb[:n])),
                                 headerChanged=header))
    return out


# ---- the two rebuilds --------------------------------------------------------------------------------------


@contextlib.contextmanager
def _build_area(store: Store, dry_run: bool, kind: str, keep_backup: bool):
    """Where to build: a transaction's staging directory in the store, or (dry run) a temporary directory
    outside it."""
    if dry_run:
        with tempfile.TemporaryDirectory(prefix=f"rmqctl-{kind}-dry-") as d:
            yield None, Path(d)
        return
    txn = Transaction(store.root, "rebuild", f"rebuild {kind}", keep_backup)
    with txn:
        yield txn, txn.staging


def rebuild_consumequeue(store: Store, topic: str | None = None, queue_id: int | None = None,
                         dry_run: bool = False, keep_backup: bool = True, progress=None) -> RebuildResult:
    """Rebuild every consumequeue (or those of `topic` and/or `queue_id`) from the commitlog and swap
    them in; queues of the selection that no record feeds any more are removed."""
    t0 = time.monotonic()
    subset = topic is not None or queue_id is not None
    if topic is not None and not valid_topic_dir_name(topic):
        raise UsageError(f"--topic {topic!r} cannot be a consumequeue directory name")

    def selected(t: str, q: int) -> bool:
        return (topic is None or t == topic) and (queue_id is None or q == queue_id)

    with writing(store, dry_run) as (interrupted, store), _build_area(store, dry_run, "consumequeue", keep_backup) as (txn, root):
        file_size = store.consumequeue_file_size
        build = dispatch_records(store, root, build_cq=True, build_index=False,
                                 queue_filter=selected if subset else None, progress=progress)
        if build.commitlog is not None and not dry_run:  # verify's checks of the staged queues follow
            problems, built_units = [], build.units
        else:
            problems, built_units = check_consumequeues(build, root, file_size)
        if problems:
            raise StoreError("the rebuilt consumequeue failed its check, nothing was changed: " + "; ".join(problems[:5]),
                             store.consumequeue_dir)
        built = {(t, q) for t, q in build.targets}
        live = {(cq.topic, cq.queue_id): cq.directory for cq in store.consume_queues() if selected(cq.topic, cq.queue_id)}
        result = RebuildResult(kind="consumequeue", store=str(store.root), dryRun=dry_run, records=build.records,
                               entries=sum(len(v) for v in build.targets.values()), warnings=build.warnings,
                               interrupted=interrupted)
        for t, q in sorted(built | set(live)):
            d = diff_queue(t, q, live.get((t, q)), built_units.get((t, q), EMPTY_QUEUE), file_size)
            if d.added or d.removed or d.changed:
                result.queues.append(d)
            else:
                result.unchangedQueues += 1
            if (t, q) in live and (t, q) not in built:
                result.warnings.append(f"consumequeue {t}/{q}: no record in the commitlog feeds it any more; "
                                       "it is removed (its queue offsets restart when it is next written)")
        if not subset and build.dispatcher.logics_ts:
            stage_checkpoint(store, txn, result.checkpoint, logicsMsgTimestamp=build.dispatcher.logics_ts)
        if txn is not None and result.queues:
            if subset:
                for t, q in sorted(built | set(live)):
                    target = store.consumequeue_dir / t / str(q)
                    if (t, q) in built:
                        txn.replace(target, root / "consumequeue" / t / str(q))
                    else:
                        txn.remove(target)
            else:
                (root / "consumequeue").mkdir(exist_ok=True)
                txn.replace(store.consumequeue_dir, root / "consumequeue")
        if txn is not None and result.changed:
            within = tuple(f"consumequeue/{t}/{q}/" for t, q in built | set(live)) if subset else ()
            problems = verify_staged(store, txn, "consumequeue", within, records=build.commitlog)
            if problems:
                raise StoreError("verify finds the rebuilt consumequeue wrong, nothing was changed: "
                                 + "; ".join(problems[:5]), store.consumequeue_dir)
            result.backup = txn.commit().get("backup")
    result.seconds = time.monotonic() - t0
    return result


def rebuild_index(store: Store, dry_run: bool = False, keep_backup: bool = True, progress=None,
                  clock=None) -> RebuildResult:
    """Rebuild every index file from the commitlog (IndexService.buildIndex, file names from the creation
    time) and swap them in; the checkpoint's indexMsgTimestamp becomes the endTimestamp of the last full
    file, as the broker sets it when it flushes a full file."""
    t0 = time.monotonic()
    if not store.config.messageIndexEnable:
        raise UsageError("messageIndexEnable=false: the broker keeps no index for this store")
    with writing(store, dry_run) as (interrupted, store), _build_area(store, dry_run, "index", keep_backup) as (txn, root):
        slots, num = store.index_geometry
        build = dispatch_records(store, root, build_cq=False, build_index=True, progress=progress, index_clock=clock)
        index_dir = root / "index"
        index_dir.mkdir(exist_ok=True)
        if build.commitlog is not None and not dry_run:  # verify's checks of the staged files follow
            problems = index_count_check(build, index_dir, slots, num)
        else:
            problems = check_index(build, index_dir, slots, num)
        if problems:
            raise StoreError("the rebuilt index failed its check, nothing was changed: " + "; ".join(problems[:5]),
                             store.index_dir)
        new_files = [IndexFile(p, slots, num) for p in sorted(index_dir.iterdir())]
        result = RebuildResult(kind="index", store=str(store.root), dryRun=dry_run, records=build.records,
                               entries=build.keys, warnings=build.warnings,
                               interrupted=interrupted)
        result.indexFiles = diff_index(store.index_files(), new_files)
        stage_checkpoint(store, txn, result.checkpoint, indexMsgTimestamp=last_full_end(new_files))
        if txn is not None and any(result._file_changes()):
            txn.replace(store.index_dir, index_dir)
        if txn is not None and result.changed:
            problems = verify_staged(store, txn, "index", records=build.commitlog)
            if problems:
                raise StoreError("verify finds the rebuilt index wrong, nothing was changed: " + "; ".join(problems[:5]),
                                 store.index_dir)
            result.backup = txn.commit().get("backup")
    result.seconds = time.monotonic() - t0
    return result
