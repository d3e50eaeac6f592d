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
import shutil
import struct
import tempfile
import time
from array import array
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from .. import schema as S
from ..dispatch import cq_targets, index_keys
from ..errors import StoreError, UsageError
from ..lock import store_lock
from ..batchdispatch import dispatch_file
from ..record import Blank, RecordError, read_record
from ..store import ConsumeQueue, IndexFile, Store, valid_topic_dir_name
from ..writers import Dispatcher
from .txn import Transaction, complete_pending, pending
from .verify import Records, check_links, verify
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


# ---- shared by rebuild and repair --------------------------------------------------------------------------


def allow_v2(store: Store) -> bool:
    """4.9 readers take V2 magic for an illegal one; any other (or unknown) version reads it."""
    return store.config.rocketmqVersion != 4


@contextlib.contextmanager
def writing(store: Store, dry_run: bool, extra_dirs=()):
    """Hold the broker's lock for the whole run and apply the recovery rule first. Yields what an earlier
    killed run left (and what was done about it) and the store to work on: reopened when the recovery
    changed files, so nothing read before it is used. A dry run takes the lock only if the lock file exists
    (creating it would be a write) and only reports leftovers."""
    if dry_run:
        if store.lock_path.exists():
            with store_lock(store.root, finish_interrupted=False):
                yield pending(store.root, extra_dirs), store
        else:
            yield pending(store.root, extra_dirs), store
        return
    with store_lock(store.root, finish_interrupted=False):
        store.refuse_links_outside()
        done = complete_pending(store.root, extra_dirs)
        if done:
            store.close()
            store = Store(store.root, store.config)
        yield done, store


def _checkpoint_offsets() -> dict[str, int]:
    """Byte offset of each checkpoint field, from schema.Checkpoint."""
    out, pos = {}, 0
    for name, code in S.fixed_fields(S.Checkpoint):
        out[name] = pos
        pos += struct.calcsize(code)
    return out


CHECKPOINT_OFFSETS = _checkpoint_offsets()


def stage_checkpoint(store: Store, txn: Transaction | None, result_fields: dict, **values) -> None:
    """Write a copy of the checkpoint with some fields changed into the staging area and plan its swap.
    Records [before, after] of every field that changes in `result_fields`. No checkpoint file: nothing
    (the broker creates it at start)."""
    cp = store.checkpoint()
    if cp is None:
        return
    changes = {k: v for k, v in values.items() if cp[k] != v}
    if not changes:
        return
    result_fields.update({k: [cp[k], v] for k, v in changes.items()})
    if txn is None:
        return
    data = bytearray(store.checkpoint_path.read_bytes())
    data.extend(bytes(max(0, S.CHECKPOINT_FILE_SIZE - len(data))))
    for k, v in changes.items():
        S.INT64.pack_into(data, CHECKPOINT_OFFSETS[k], v)
    staged = txn.area(store.root) / "checkpoint"
    staged.write_bytes(bytes(data))
    txn.replace(store.checkpoint_path, staged)


class RecordSet:
    """Start offsets and sizes of the commitlog records seen, for checking what entries point at."""

    def __init__(self):
        self._offsets, self._sizes = array("q"), array("q")
        self._sorted = None

    def add(self, offset: int, size: int):
        self._offsets.append(offset)
        self._sizes.append(size)
        self._sorted = None

    def add_many(self, offsets: np.ndarray, sizes: np.ndarray):
        self._offsets.frombytes(offsets.astype(np.int64).tobytes())
        self._sizes.frombytes(sizes.astype(np.int64).tobytes())
        self._sorted = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._sorted is None:
            off = np.frombuffer(self._offsets, dtype=np.int64)
            size = np.frombuffer(self._sizes, dtype=np.int64)
            order = np.argsort(off, kind="stable")
            self._sorted = off[order], size[order]
        return self._sorted

    def sizes_at(self, offsets: np.ndarray) -> np.ndarray:
        """The record size at each offset, or -1 where no record starts."""
        off, size = self.arrays()
        if not len(off):
            return np.full(len(offsets), -1, np.int64)
        i = np.clip(np.searchsorted(off, offsets), 0, len(off) - 1)
        return np.where(off[i] == offsets, size[i], -1)


@dataclasses.dataclass
class Build:
    """What one dispatch run produced and what it was asked to produce (for the read-back check)."""

    dispatcher: Dispatcher
    records: int
    records_seen: RecordSet
    targets: dict  # (topic, qid) -> array of queue offsets, in dispatch order
    keys: int  # index keys put
    warnings: list[str]
    commitlog: "Records | None"  # verify's record table from this dispatch, when it found the commitlog sound
    units: dict  # (topic, qid) -> (queue offsets, units) as written


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
        self.columns: list[tuple] = []  # per file, the record columns of verify's Records
        self.topics: dict[str, int] = {}

    def record_table(self) -> Records | None:
        """verify's Records of every record dispatched, when every one went through the compiled pass and
        nothing was damaged, misplaced or beyond what that pass decides (inner batches): then the check of
        the result needs no second decode of the commitlog."""
        cols = self.columns
        if self.scan.errors or self.one_by_one or self.mismatched:
            return None
        base = np.cumsum([0] + [len(c[0]) for c in cols[:-1]])
        # key records numbered across files; one file's columns are used as they are
        cols = [c[:8] + (c[8] + b if b else c[8],) + c[9:] for c, b in zip(cols, base)]
        off, size, qid, qoff, sysflag, store_ts, topic, tags, key_record, key_hash = (
            (cols[0][k] if len(cols) == 1 else np.concatenate([c[k] for c in cols])) if cols else np.zeros(0, np.int64)
            for k in range(10))
        if np.any(sysflag & S.INNER_BATCH_FLAG):
            return None
        lmq = [(r + int(b), *target) for c, b in zip(cols, base) for r, *target in c[10]]
        return Records(off, size, qid, qoff, sysflag, store_ts, topic, tags, list(self.topics), key_record, key_hash,
                       lmq, {})

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
        self.columns.append((f.start + b.position, b.size, b.queue_id, b.queue_offset, b.sysflag, b.store_ts,
                             ids[b.topic] if len(ids) else b.topic, b.tags, b.key_record, b.key_hash, b.lmq))
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
    return Build(dispatcher, run.records, run.seen, dict(run.targets), run.keys, warnings, run.record_table(), units)


# ---- verifying what a transaction will leave ---------------------------------------------------------------


def post_commit_view(store: Store, txn: Transaction) -> Path:
    """The store as the transaction will leave it, as symlinks in the transaction's staging directory (so
    a killed run's view goes with its staging): the live files, the staged ones in place of those replaced,
    the removed ones left out (commitlog files of every commitlog directory together in view/commitlog)."""
    view = Path(tempfile.mkdtemp(prefix="view-", dir=txn.staging))

    def link(src: Path, dst: Path):
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
            for child in src.iterdir():
                link(child, dst / child.name)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.symlink_to(src.resolve())

    def place(target: Path) -> Path:
        target = target.resolve()
        if target.parent in {d.resolve() for d in store.commitlog_dirs}:
            return view / "commitlog" / target.name
        return view / target.relative_to(store.root.resolve())

    (view / "commitlog").mkdir()
    for d in store.commitlog_dirs:
        for f in (d.iterdir() if d.is_dir() else ()):
            if f.is_file():
                link(f, view / "commitlog" / f.name)
    for name in ("consumequeue", "index", "checkpoint", "abort"):
        if (store.root / name).exists():
            link(store.root / name, view / name)
    for op in txn.ops:
        at = place(Path(op["target"]))
        if at.is_dir() and not at.is_symlink():
            shutil.rmtree(at)
        elif at.is_symlink() or at.exists():
            at.unlink()
        if op["op"] == "replace":
            link(Path(op["staged"]), at)
    return view


def verify_staged(store: Store, txn: Transaction, only: str | None, within: tuple[str, ...] = (),
                  accepted=lambda finding: False, records: Records | None = None) -> list[str]:
    """verify (ops/verify.py) on the state the transaction will leave: its errors, except those verify
    calls consequences of commitlog damage (no rebuild or repair of these files can change them), those
    outside `within` (path prefixes relative to the store) when given, and those `accepted`. With the
    commitlog's `records` (from a build that found it sound), only the checks of `only` run, against them."""
    view = post_commit_view(store, txn)
    try:
        config = dataclasses.replace(store.config, storePathCommitLog=str(view / "commitlog"), storePathRootDir=None)
        staged = Store(view, config)
        findings = check_links(staged, records, only) if records is not None else verify(staged, only=only).findings
    finally:
        shutil.rmtree(view)
    return [f"{f.file}: {f.kind}: {f.detail}" for f in findings
            if f.severity == "error" and "a direct consequence of" not in f.detail and not accepted(f)
            and (not within or (f.file or "").startswith(within))]


# ---- reading back ------------------------------------------------------------------------------------------


def queue_units(directory: Path, file_size: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Queue offsets and units of every written unit of a consumequeue directory, and file-level problems
    (names, sizes, gaps)."""
    cq = ConsumeQueue("", 0, directory, file_size)
    qoffs, units, problems = [], [], []
    expected_start = None
    for first, f, written, arr in cq.units():
        if f.length != file_size:
            problems.append(f"{f.path}: {f.length} bytes, not {file_size}")
        if expected_start is not None and f.start != expected_start:
            problems.append(f"{f.path}: expected the next file at {expected_start}")
        expected_start = f.start + file_size
        qoffs.append(np.arange(first, first + written, dtype=np.int64))
        units.append(np.array(arr[:written]))
    problems += [f"{p}: not a consumequeue file name" for p in cq.files.strays]
    if not qoffs:
        return np.empty(0, np.int64), np.empty(0, S.CQ_DTYPE), problems
    return np.concatenate(qoffs), np.concatenate(units), problems


def check_consumequeues(build: Build, build_root: Path, file_size: int) -> tuple[list[str], dict]:
    """Read the built queues back and check them against the commitlog: every queue asked for exists,
    pre-blank units only at its head, then one unit per dispatched message at its queue offset, each
    pointing at a record start of that size, in commitlog order. Returns the problems and what was read
    (queue -> (queue offsets, units))."""
    problems, read = [], {}
    skipped = Counter(q for status, q, _, _ in build.dispatcher.events if status in ("duplicate", "already-built"))
    for (topic, qid), wanted in build.targets.items():
        directory = build_root / "consumequeue" / topic / str(qid)
        name = f"{topic}/{qid}"
        qoffs, units, file_problems = queue_units(directory, file_size)
        read[(topic, qid)] = qoffs, units
        problems += file_problems
        real = units["size"] != S.PRE_BLANK_SIZE
        blanks = np.flatnonzero(~real)
        if len(blanks) and blanks[-1] != len(blanks) - 1:
            problems.append(f"{name}: pre-blank units after real ones")
        if len(blanks) and np.any(units["commitLogOffset"][blanks] != 0) | np.any(units["tagsCode"][blanks] != 0):
            problems.append(f"{name}: pre-blank units that are not (0, {S.PRE_BLANK_SIZE}, 0)")
        entries = units[real]
        wanted = np.frombuffer(wanted, dtype=np.int64)
        if len(entries) != len(wanted) - skipped[name]:
            problems.append(f"{name}: {len(entries)} units written for {len(wanted)} dispatched messages")
            continue
        if len(entries) and qoffs[real][0] != wanted[0]:
            problems.append(f"{name}: first message at queue offset {qoffs[real][0]}, its record says {wanted[0]}")
        if not skipped[name] and len(entries) and not np.array_equal(qoffs[real], wanted):
            problems.append(f"{name}: units are not at their records' queue offsets")
        phys = entries["commitLogOffset"].astype(np.int64)
        if np.any(np.diff(phys) <= 0):
            problems.append(f"{name}: units not in commitlog order")
        bad = np.flatnonzero(build.records_seen.sizes_at(phys) != entries["size"])
        if len(bad):
            problems.append(f"{name}: {len(bad)} unit(s) not pointing at a record of their size, e.g. {int(phys[bad[0]])}")
    return problems, read


def check_index(build: Build, index_dir: Path, slots: int, num: int) -> list[str]:
    """Read the built index files back: headers agree with their entries, every chain runs strictly
    backwards and reaches each entry exactly once, every entry points at a record start, and all keys
    dispatched are there."""
    problems = []
    paths = sorted(index_dir.iterdir()) if index_dir.is_dir() else []
    for p in paths:
        ix = IndexFile(p, slots, num)
        h = ix.header
        count = ix.index_count
        if ix.length != ix.expected_length:
            problems.append(f"{p}: {ix.length} bytes, not {ix.expected_length}")
            continue
        entries = ix.entries()[1:count]
        slot_values = ix.slots()
        if h["hashSlotCount"] != int(np.count_nonzero(slot_values)):
            problems.append(f"{p}: hashSlotCount {h['hashSlotCount']} but {np.count_nonzero(slot_values)} slots used")
        if np.any((slot_values < 0) | (slot_values >= count)):
            problems.append(f"{p}: slot values out of range")
            continue
        prev = entries["prevIndex"].astype(np.int64)
        numbers = np.arange(1, count, dtype=np.int64)
        if np.any((prev < 0) | (prev >= numbers)):
            problems.append(f"{p}: a chain link that does not point backwards")
            continue
        # each entry is the head of its slot or the prevIndex of exactly one later entry
        heads = slot_values[slot_values > 0].astype(np.int64)
        linked = prev[prev > 0]
        reach = np.bincount(np.concatenate([heads, linked]), minlength=count)[1:]
        if np.any(reach != 1):
            problems.append(f"{p}: {int(np.count_nonzero(reach != 1))} entries not reached exactly once by the chains")
        hashes = entries["keyHash"].astype(np.int64)
        own_slot = np.where(hashes == -(1 << 31), 0, np.abs(hashes)) % slots
        used = np.flatnonzero(slot_values)
        if np.any(own_slot[slot_values[used].astype(np.int64) - 1] != used):
            problems.append(f"{p}: a slot heads a chain of another slot's entries")
        link_slots = own_slot[prev[prev > 0] - 1]
        if np.any(link_slots != own_slot[prev > 0]):
            problems.append(f"{p}: a chain joins entries of different slots")
        phys = entries["phyOffset"].astype(np.int64)
        if len(entries):
            if h["endPhyOffset"] != phys[-1] or h["beginPhyOffset"] != phys[0]:
                problems.append(f"{p}: header phy offsets do not match its first/last entries")
            if np.any(np.diff(phys) < 0):
                problems.append(f"{p}: entries not in commitlog order")
            if np.any(entries["timeDiff"] < 0):
                problems.append(f"{p}: negative timeDiff")
        missing = np.count_nonzero(build.records_seen.sizes_at(phys) < 0)
        if missing:
            problems.append(f"{p}: {missing} entries not pointing at a record start")
    return problems + index_count_check(build, index_dir, slots, num)


def index_count_check(build: Build, index_dir: Path, slots: int, num: int) -> list[str]:
    """As many entries in the files' headers as keys dispatched."""
    total = sum(IndexFile(p, slots, num).entry_count for p in sorted(index_dir.iterdir()))
    return [] if total == build.keys else [f"{total} index entries written for {build.keys} keys dispatched"]


def last_full_end(files: list[IndexFile]) -> int:
    """The checkpoint's indexMsgTimestamp: the endTimestamp of the last full index file (the broker sets it
    when it flushes a full file at rollover; every file here is durable, so a full last file counts too)."""
    full = [ix for ix in files if ix.index_count >= ix.index_num]
    return full[-1].header["endTimestamp"] if full else 0


# ---- diffs -------------------------------------------------------------------------------------------------


EMPTY_QUEUE = (np.empty(0, np.int64), np.empty(0, S.CQ_DTYPE))


def diff_queue(topic: str, qid: int, old_dir: Path | None, new: tuple, file_size: int) -> QueueDiff:
    """Compare the live queue's units with the new ones (queue offsets, units), by queue offset."""
    oq, ou = queue_units(old_dir, file_size)[:2] if old_dir is not None and old_dir.is_dir() else EMPTY_QUEUE
    nq, nu = new
    common, io, inew = np.intersect1d(oq, nq, assume_unique=True, return_indices=True)
    changed = int(np.count_nonzero(ou[io] != nu[inew])) if len(common) else 0
    return QueueDiff(topic, qid, len(oq), len(nq), len(nq) - len(common), len(oq) - len(common), changed)


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
        out.append(IndexFileDiff(i, a.name if a else None, b.name if b else None, len(ea), len(eb),
                                 max(0, len(eb) - len(ea)), max(0, len(ea) - len(eb)),
                                 int(np.count_nonzero(ea[:n] != eb[:n])), header))
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
        result = RebuildResult("consumequeue", str(store.root), dry_run, build.records,
                               sum(len(v) for v in build.targets.values()), warnings=build.warnings,
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
        result = RebuildResult("index", str(store.root), dry_run, build.records, build.keys, warnings=build.warnings,
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
