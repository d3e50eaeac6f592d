"""The broker's file cleanup, decided as RocketMQ decides it and applied durably.

One *pass* is one tick of the broker's clean task:

* `CleanCommitLogService.deleteExpiredFiles`: time-up (`deleteWhen` vs the local hour), space (statvfs of every
  commitlog directory and of `consumequeue/`, rounded up to a whole percent), manual (`mqadmin
  deleteExpiredCommitLog`); then `MappedFileQueue.deleteExpiredFileByTime`: oldest first, never the last file,
  stop at the first file kept, at most `deleteFileBatchMax` (4.9: 10) files;
* `CleanConsumeQueueService.deleteExpiredFiles`, only when the commitlog minimum offset went up: per queue
  `deleteExpiredFileByOffset` (last unit < min offset, never the queue's last file) and `correctMinOffset`,
  then `IndexService.deleteExpiredFile` (endPhyOffset < min offset, never the last file).

Sources (apache/rocketmq, tags rocketmq-all-4.9.7 and rocketmq-all-5.3.3): DefaultMessageStore.java
(CleanCommitLogService, CleanConsumeQueueService, recoverTopicQueueTable), MappedFileQueue.java, ConsumeQueue.java,
IndexService.java, UtilAll.java (isItTimeToDo, getDiskPartitionSpaceUsedPercent), MessageStoreConfig.java.

The decision is maintenance/clean_rules.py's (the broker's rules, on the state `load_state` reads from the store and
the disk figures `DiskMeter` reads); this module loads, measures and applies.

Planning changes nothing. `run_clean(..., apply=True)` holds the broker's lock for the whole run and deletes in
the broker's order (commitlog files oldest first, then consumequeue files, then index files), each unlink made
durable by an fsync of its directory before the next, so a run killed at any moment leaves a store the broker
loads: at most consumequeue and index files that lie entirely below the new minimum offset, which the broker's
correctMinOffset and index lookups step over.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import stat
import time
from pathlib import Path
from typing import Callable

import numpy as np

from .. import schema as S
from ..configfiles import AmbiguousProperty, bean_field
from ..errors import FileGone, RmqError, StoreError, UsageError
from ..rocksdbconfig import broker_config
from ..rules import queue_files_loaded, record_expired, written_units
from ..store import IndexFile, Store, loaded_index_name
from .clean_rules import (
    CleanFile,
    Cleaner,
    CleanSettings,
    Clock,
    DeleteWhenError,
    DiskUsage,
    FileDecision,
    PassResult,
    QueueSegment,
    QueueMinOffsetFailed,
    QueueState,
    StoreState,
    Unconsumed,
    check_delete_when,
    correct_min_offset,
    is_time_to_do,
    java_disk_ratio,
    remaining,
)
from ..views.inspect import commitlog_end
from ..views.timer import dangling_after, dangling_rows
from ..live import head_moved
from ..timerstore import TimerLog
from ..txn import locked_for_writing

UNTIL_OK_LIMIT = 100_000  # a guard, far beyond any real store (10 files per pass)


class DiskMeter:
    """statvfs the way Java's File.getTotalSpace/getFreeSpace/getUsableSpace read it (f_blocks, f_bfree,
    f_bavail times f_frsize). A plan-only run cannot free anything, so `simulate` keeps a per-filesystem
    account and credits each planned deletion with the blocks the file holds (st_blocks * 512)."""

    def __init__(self, simulate: bool, what_if: float | None = None):
        self.simulate = simulate
        self.what_if = what_if  # a plan's "what if the disk were this full": used / total on every filesystem
        self._account: dict[int, list[int]] = {}  # st_dev -> [total, free, usable]
        self.past_reserve: set[str] = set()  # filesystems measured with free space but none usable

    def _statvfs(self, path: str) -> list[int]:
        st = os.statvfs(path)
        total = st.f_blocks * st.f_frsize
        if self.what_if is not None:  # the same disk, as full as asked (no root reserve: free is usable)
            free = total - int(total * self.what_if)  # down: the broker rounds the percent up
            return [total, free, free]
        if st.f_bavail == 0 < st.f_bfree:
            self.past_reserve.add(path)
        return [total, st.f_bfree * st.f_frsize, st.f_bavail * st.f_frsize]

    def _numbers(self, path: str) -> list[int]:
        if not self.simulate:
            return self._statvfs(path)
        dev = os.stat(path).st_dev
        if dev not in self._account:
            self._account[dev] = self._statvfs(path)
        return self._account[dev]

    def measure(self, path: str | os.PathLike) -> DiskUsage:
        """A missing commitlog or consumequeue directory is measured where the broker would create it
        (DefaultMessageStore's constructor makes both), i.e. on its nearest existing parent."""
        path = str(path)
        where = Path(path)
        while not where.exists() and where != where.parent:
            where = where.parent
        try:
            total, free, usable = self._numbers(str(where))
        except OSError:
            return DiskUsage(path, -1.0)  # the broker logs the exception and reads -1
        return DiskUsage(path, java_disk_ratio(total, free, usable), total, total - free, usable)

    def release(self, path: Path, blocks: int):
        """Account for a planned deletion (simulated runs only)."""
        if self.simulate:
            numbers = self._numbers(str(path.parent))
            numbers[1] += blocks * 512
            numbers[2] += blocks * 512


@dataclasses.dataclass
class CleanResult:
    store: str
    settings: CleanSettings
    passes: list[PassResult]
    minPhyOffsetBefore: int
    minPhyOffsetAfter: int
    cqMinOffsetsBefore: dict[str, int]
    cqMinOffsetsAfter: dict[str, int]
    indexFilesAfter: list[str]
    unconsumed: list[Unconsumed]
    remaining: list[str]  # why nothing else goes
    notes: list[str]
    applied: bool
    configError: str | None = None
    timerUnitsLost: list = dataclasses.field(default_factory=list)  # pending 5.x timer units below the new minimum

    @property
    def decisions(self) -> list[FileDecision]:
        return [d for p in self.passes for d in p.decisions]

    def deleted(self, kind: str | None = None) -> list[FileDecision]:
        return [d for p in self.passes for d in p.deleted(kind)]

    @property
    def freed_bytes(self) -> int:
        return sum(d.blocks * 512 for d in self.deleted())

    def as_dict(self) -> dict:
        return {
            "store": self.store,
            "settings": self.settings.as_dict(),
            "applied": self.applied,
            "configError": self.configError,
            "passes": [p.as_dict() for p in self.passes],
            "files": [d.row() for d in self.decisions],
            "minPhyOffsetBefore": self.minPhyOffsetBefore,
            "minPhyOffsetAfter": self.minPhyOffsetAfter,
            "cqMinOffsetsBefore": self.cqMinOffsetsBefore,
            "cqMinOffsetsAfter": self.cqMinOffsetsAfter,
            "indexFilesAfter": self.indexFilesAfter,
            "freedBytes": self.freed_bytes,
            "unconsumed": [dataclasses.asdict(u) for u in self.unconsumed],
            "remaining": self.remaining,
            "notes": self.notes + self.settings.notes,
            "timerUnitsLost": self.timerUnitsLost,
        }


# -- the store as the cleaner sees it --------------------------------------------------------------------


def loaded_commitlog_files(store: Store) -> list:
    """The commitlog files the broker holds once loaded, when its cleaner starts: the recovery's
    truncateDirtyFiles removes those starting past the commitlog's end (the all-zero next file a running or
    crashed broker pre-allocated), so the last file its cleaner never deletes is the one holding the end."""
    files = store.commitlog.files
    try:
        zero = len(list(itertools.takewhile(lambda f: f.is_all_zero(), reversed(files))))
        if not zero or zero == len(files):
            return files
        end, _ = commitlog_end(store, files[:-zero])
    finally:
        for f in files:  # a deleted file's space stays in use while it is mapped: the meter must see it freed
            f.close()
    return [f for f in files if end is None or f.start <= end]


def load_state(store: Store, settings: CleanSettings, protect_unconsumed: bool = False) -> StoreState:
    """The files, queues, index files and consumer offsets the cleaner decides on, as the broker holds them
    after its load (recoverTopicQueueTable corrects every queue's minimum offset)."""
    roots = store.allowed_roots()  # deletion never leaves them, nor follows a symlink
    commitlog = _still_there([(f, f.path, f.start) for f in loaded_commitlog_files(store)], roots, store.live)
    notes: list[str] = []
    queues = _load_queues(store, roots, notes) if store.rocks_queues is None else []
    min_phy = commitlog[0].start if commitlog else -1  # MappedFileQueue.getMinOffset
    for q in queues:
        try:
            correct_min_offset(q, min_phy, settings.version)
        except QueueMinOffsetFailed as e:  # (recoverTopicQueueTable, before any cleaner runs)
            raise StoreError(
                f"{e}: the broker's correctMinOffset throws on this queue at load, and what its recovery makes of "
                "an all-empty last file first is not modelled here, so nothing is planned",
                q.segments[-1].file.path,
            ) from None
    try:
        unconsumed, offsets = _load_consumer_offsets(store, queues, min_phy, notes)
    except AmbiguousProperty as e:  # the broker's cleanup reads no offsets: only --protect-unconsumed needs them
        if protect_unconsumed:
            raise
        notes.append(f"{e}: the unconsumed messages a deletion takes are not counted")
        unconsumed, offsets = [], []
    if store.crashed():
        notes.append(
            "abort file present: the broker would run abnormal recovery (and may drop index files) before "
            "its cleaner runs"
        )
    # IndexService.load order
    index = []
    for f in _still_there([(p, p, 0) for p in store.index_paths() if loaded_index_name(p.name)], roots, store.live):
        try:
            ix = IndexFile(f.path, 0, 0)
            if ix.length < S.INDEX_HEADER_SIZE:
                notes.append(f"{f.name}: shorter than an index header; the broker's load reads it as zeros")
            index.append((f, ix.header["endPhyOffset"]))
        except FileGone as e:
            head_moved(store.live, f.path, e)
        except FileNotFoundError:
            head_moved(store.live, f.path, FileGone("deleted while rmqctl read the store", f.path))
    return StoreState(
        timerlog=_timerlog(store, roots),
        root=store.root,
        commitlog_dirs=list(store.commitlog_dirs),
        consumequeue_dir=store.consumequeue_dir,
        file_size=store.commitlog.file_size,
        cq_file_size=store.consumequeue_file_size,
        commitlog=commitlog,
        queues=queues,
        index=index,
        unconsumed=unconsumed,
        unconsumed_offsets=offsets,
        notes=notes,
    )


def _timerlog(store: Store, roots: list[str]) -> list[tuple[CleanFile, int | None]]:
    """The timerlog files a 5.x broker's timer cleaner looks at (TimerMessageStore, with timerWheelEnable, the
    default), each with its last unit's offsetPy (TimerLog.last_offset_py)."""
    directory = store.root / "timerlog"
    enabled = store.config.untrimmed.get("timerWheelEnable", "true").strip().lower() == "true"
    if store.version.major < 5 or not enabled or not directory.is_dir():
        return []
    log = TimerLog(directory, store.config.mappedFileSizeTimerLog)
    out = []
    for f in log.files:
        try:
            out.append((_file(f.path, f.start, roots), log.last_offset_py(f)))
        finally:
            f.close()
    return out


def _still_there(listed: list[tuple], roots: list[str], live) -> list[CleanFile]:
    """CleanFiles of the listed (file, path, start): on a running broker's store a file its own cleaner deleted
    since the listing is left out of the plan and noted in the snapshot (live.head_moved: the broker made that
    deletion); on a stopped store a file that vanishes is an error."""
    out = []
    for f, path, start in listed:
        try:
            out.append(_file(path, start, roots))
        except FileNotFoundError:
            head_moved(live, f, FileGone("deleted while rmqctl read the store", path))
    return out


def _file(path: Path, start: int, roots: list[str]) -> CleanFile:
    st = os.stat(path)  # File.lastModified() follows links; deciding to delete does not
    unsafe = None
    if os.path.islink(path):
        unsafe = "a symlink (never followed)"
    elif not stat.S_ISREG(st.st_mode):
        unsafe = "not a regular file"
    else:
        parent = os.path.realpath(path.parent)
        if not any(parent == r or parent.startswith(r + os.sep) for r in roots):
            unsafe = f"resolves outside the store ({parent})"
    # a file with another hard link (a backup's) frees no block when deleted (blocks a snapshot shares are not seen)
    blocks = st.st_blocks if st.st_nlink == 1 else 0
    return CleanFile(path, path.name, start, blocks, st.st_mtime_ns // 1_000_000, unsafe)


def _load_queues(store: Store, roots: list[str], notes: list[str]) -> list[QueueState]:
    """Every queue's files as views on their maps (the store's loader): the cleaner reads only the last slot
    of each file, the first file(s) for correctMinOffset and the tail a consumer has not read, never a whole
    big store; the units written are counted in the last file only."""
    queues = []
    for cq in store.consume_queues():
        arrays = list(cq.unit_arrays())
        load = queue_files_loaded(
            [mf.length for mf, _ in arrays], store.consumequeue_file_size, store.version.release, store.live is not None
        )
        if load.fails:  # the broker would not start: no cleaner of its runs
            raise StoreError(
                f"the broker's load of this queue fails: {load.said}: it would not start, so it cleans nothing",
                arrays[min(load.kept, len(arrays) - 1)][0].path,
            )
        if load.said:
            notes.append(f"{cq.topic}/{cq.queue_id}: {load.said}; its file before it is the queue's last")
        arrays = arrays[: load.kept]
        segments = []
        for i, (mf, units) in enumerate(arrays):
            read_pos = (written_units(units) if i == len(arrays) - 1 else len(units)) * S.CQ_UNIT_SIZE
            segments.append(QueueSegment(_file(mf.path, mf.start, roots), units["commitLogOffset"], read_pos))
        queues.append(QueueState(cq.topic, cq.queue_id, segments))
    queues.sort(key=lambda q: (q.topic, q.queue_id))
    return queues


def _load_consumer_offsets(
    store: Store, queues: list[QueueState], min_phy: int, notes: list[str]
) -> tuple[list[Unconsumed], list[np.ndarray]]:
    """config/consumerOffset.json (fastjson, unquoted int keys, .bak fallback): per group/topic/queue the
    commitlog offsets of the messages at or after the committed (next-to-consume) offset."""
    data = broker_config(store, "consumerOffset.json").document
    table = bean_field(data, "offsetTable") or {}
    if not isinstance(table, dict):
        raise StoreError("offsetTable is not an object", store.root / "config" / "consumerOffset.json")
    by_key = {(q.topic, q.queue_id): q for q in queues}
    out, offsets = [], []
    for topic_at_group, per_queue in sorted(table.items()):
        parts = topic_at_group.split("@")
        if len(parts) != 2 or not isinstance(per_queue, dict):
            notes.append(f"consumerOffset.json: entry {topic_at_group!r} is not topic@group; skipped")
            continue
        topic, group = parts
        for qid_text, next_offset in per_queue.items():
            try:
                qid, next_offset = int(qid_text), int(next_offset)
            except (TypeError, ValueError):
                notes.append(
                    f"consumerOffset.json: {topic_at_group} {qid_text!r}: {next_offset!r} is not "
                    "queueId: offset; skipped"
                )
                continue
            q = by_key.get((topic, qid))
            if q is None:
                continue
            qoffs, poffs = _queue_units(q, max(next_offset, q.min_offset))
            alive = ~record_expired(poffs, min_phy)
            out.append(Unconsumed(group, topic, qid, next_offset, q.max_offset, int(alive.sum())))
            offsets.append(np.stack([qoffs[alive], poffs[alive]]))
    return out, offsets


def _queue_units(q: QueueState, from_offset: int) -> tuple[np.ndarray, np.ndarray]:
    """(queue offsets, commitlog offsets) of the units at or after queue offset `from_offset`; files wholly
    before it are not read."""
    qs, ps = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    for seg in q.segments:
        first, n = seg.file.start // S.CQ_UNIT_SIZE, seg.read_pos // S.CQ_UNIT_SIZE
        skip = min(max(from_offset - first, 0), n)
        if skip < n:
            qs.append(np.arange(first + skip, first + n, dtype=np.int64))
            ps.append(np.asarray(seg.offsets[skip:n], dtype=np.int64))
    return np.concatenate(qs), np.concatenate(ps)


def unlink_durably(path: Path):
    """Unlink one file (never through a symlink) and fsync its directory, so the deletion survives a crash
    before the next one starts."""
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        st = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise StoreError("not a regular file any more; refusing to delete it", path)
        os.unlink(path.name, dir_fd=dir_fd)
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def run_clean(
    store: Store,
    settings: CleanSettings,
    clock: Clock | None = None,
    passes: int | None = None,
    until_ok: bool = False,
    manual: bool = False,
    protect_unconsumed: bool = False,
    apply: bool = False,
    on_delete: Callable[[FileDecision], None] | None = None,
    interval_ms: int = 0,
    disk_usage: float | None = None,
) -> CleanResult:
    """Plan (and with apply=True, carry out) `passes` cleaner passes, or with until_ok as many as it takes
    until one deletes nothing. Plan-only runs simulate the space each planned deletion frees; applied runs
    delete for real (under the broker's lock) and re-measure the disk before every pass. `interval_ms`
    paces the deletions as the broker's deleteCommitLogFilesInterval (100 ms) does, to spare a busy disk.
    `disk_usage` (plans only): the disks taken as that full (used / total) instead of as they are."""
    if disk_usage is not None and (apply or not 0 <= disk_usage <= 1):
        raise UsageError("--disk-usage is a what-if for a plan: a ratio from 0 to 1, without --apply")
    if store.dledger is not None:
        raise UsageError(
            "this store keeps its commitlog in DLedger: its files go by DLedger's own CleanSpaceService "
            "(fileReservedTime + 1 hours, its own disk ratios, ledgerBeginIndex revised after), not by "
            "RocketMQ's cleanup rules, which rmqctl clean applies; refusing",
            store.root,
        )
    # a RocksDB queue is not cleaned by hand: clean deletes commitlog and index files around it (as the broker)
    store.parts.refuse_writer("clean", frozenset({"consumequeue"}))
    if protect_unconsumed and store.rocks_queues is not None:
        raise UsageError("--protect-unconsumed reads file consume queues; this store's queue is in RocksDB")
    clock = clock or Clock.parse(None)
    config_error = None
    try:
        check_delete_when(settings.deleteWhen)
    except DeleteWhenError as e:
        if apply:  # nothing to do at an hour where the broker's cleaner throws: say why (and where it would not)
            is_time_to_do(settings.deleteWhen, clock.at(1)[1])
        config_error = str(e)
    limit = passes or (UNTIL_OK_LIMIT if until_ok else 1)
    if limit < 1:
        raise UsageError("--passes must be at least 1")
    # a plan needs no lock and measures a simulated disk; disk_usage is None when applying
    with locked_for_writing(store.root) if apply else contextlib.nullcontext():
        meter = DiskMeter(simulate=not apply, what_if=disk_usage)
        state = load_state(store, settings, protect_unconsumed)
        cleaner = Cleaner(state, settings, clock, meter, manual, protect_unconsumed)
        return _run(
            store, settings, cleaner, limit, until_ok, apply, on_delete, config_error, interval_ms if apply else 0
        )


def _run(
    store, settings, cleaner: Cleaner, limit, until_ok, apply, on_delete, config_error, interval_ms
) -> CleanResult:
    notes = list(cleaner.notes)
    if cleaner.meter.what_if is not None:
        notes.append(f"what if: every disk taken as {cleaner.meter.what_if:.2f} full (--disk-usage), not as measured")
    for path in sorted(cleaner.meter.past_reserve if not apply else ()):
        notes.append(
            f"{path}: the disk is full past its root reserve (no usable space): statvfs does not tell the reserve's "
            "size, so how much of each deletion becomes usable is not known; the plan counts all of it, and the "
            "broker (and --apply, which measures after each pass) may delete more"
        )
    holder = store.lock_holder() if not apply else None
    if holder is not None:  # pid 0: F_GETLK's answer for a holder in another pid namespace
        shown = f"pid {holder}" if holder else "a process (pid not visible)"
        notes.append(f"the store's lock is held by {shown}: a broker is running and its own cleaner applies")
    results: list[PassResult] = []
    for n in range(1, limit + 1):
        p = cleaner.plan_pass(n)
        results.append(p)
        if apply:
            for d in p.decisions:
                if d.action == "delete":
                    if interval_ms:
                        time.sleep(interval_ms / 1000)
                    try:
                        unlink_durably(d.path)
                    except OSError as e:
                        raise RmqError(
                            f"cannot delete: {e.strerror}; stopped (files before it are deleted)", d.path
                        ) from None
                    if on_delete:
                        on_delete(d)
        if until_ok and not p.deleted():
            break
    cleaner.finish_unconsumed()
    cq_before, cq_after = cleaner.cq_min_before, cleaner.cq_min_offsets()
    if store.rocks_queues is not None:
        notes.append(rocks_queue_note(cleaner.min_phy_offset))
        cq_before, cq_after = (
            rocks_min_offsets(store, cleaner.min_before),
            rocks_min_offsets(store, cleaner.min_phy_offset),
        )
    timer_lost = []
    if cleaner.min_phy_offset > cleaner.min_before:
        timer_lost = dangling_rows(
            dangling_after(store, cleaner.min_phy_offset, None),
            f"below the new minimum offset {cleaner.min_phy_offset}",
        )
    return CleanResult(
        store=str(store.root),
        settings=settings,
        passes=results,
        minPhyOffsetBefore=cleaner.min_before,
        minPhyOffsetAfter=cleaner.min_phy_offset,
        cqMinOffsetsBefore=cq_before,
        cqMinOffsetsAfter=cq_after,
        indexFilesAfter=[f.name for f, _ in cleaner.index],
        unconsumed=cleaner.unconsumed,
        remaining=remaining(cleaner, results[-1]),
        notes=notes,
        applied=apply,
        configError=config_error,
        timerUnitsLost=timer_lost,
    )


def rocks_queue_note(min_phy: int) -> str:
    """What the broker does to its RocksDB consume queue when commitlog files go (5.3.3: no file of the queue
    is deleted; ConsumeQueueCompactionFilter and getMinCqOffset do it)."""
    return (
        f"the RocksDB consume queue: nothing is deleted from it by hand; with the commitlog's min offset at "
        f"{min_phy}, the broker's compaction filter drops units below it when RocksDB next compacts them, and "
        "each queue's min offset moves to its first unit at or past it (getMinOffsetInQueue corrects it)"
    )


def rocks_min_offsets(store: Store, min_phy: int) -> dict[str, int]:
    """Each RocksDB queue's min offset as getMinCqOffset gives it with the commitlog's min offset at min_phy."""
    rocks = store.rocks_queues
    return {f"{q.topic}/{q.queue_id}": rocks.min_offset(q, min_phy) for q in rocks.queues()}
