"""What the broker's load() leaves of its consume queues' max offsets (DefaultMessageStore.recover, 4.9.7, 5.3.3,
develop): each queue's own recovery (recovery.recovered_queues_end), then the commitlog's recovery walk
(recovery.walk: from recovery_start when `abort` is there, else from normal_recovery_start, each record checked
as checkMessageAndReturnSize(checkCRCOnRecover) does) to its processOffset, which dispatches records as it
walks them, then truncateDirtyLogicFiles(processOffset).

The walk's dispatch: recoverAbnormally dispatches every record it walks; 5.x's recoverNormally those past
dispatchFromPhyOffset (recovery.dispatch_start); 4.9's recoverNormally none. A unit goes to its queue as
putMessagePositionInfo writes it (rules.cq_already_built, rules.cq_put_order; a BatchCQ topic's
putBatchMessagePositionInfo, rules.bcq_already_built), so a queue that lagged the commitlog gets its missing
units back. The truncation runs when the consume queues' maxPhysicOffset reaches processOffset: before
apache/rocketmq 9d9431dc1c (develop, 2025-06-03) CommitLog compares the value the queues' recovery gave, before
the dispatch; from it on the check moved into ConsumeQueueStore.truncateDirty, which reads the queues' max after
the dispatch (see `truncation_runs`). The RocksDB consume queue's own truncateDirty is
recovery.recovered_rocks_queue_max; its dispatch is not replayed here (LoadedQueues.redispatch_counted).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import dledger
from . import schema as S
from .batchcq import batch_topics, queue_file_size
from .dispatch import batch_unit, cq_targets, dispatched_type
from .engine import check_walk
from .javacompat import decode_utf8
from .record import read_record
from .recovery import (
    QueueRecovery,
    RecordTally,
    RecoveryChecker,
    dispatch_start,
    recovered_queues_end,
    recovered_rocks_queue_max,
    start_file,
    walk,
)
from .rules import bcq_already_built, cq_already_built, cq_put_order
from .store import Store, loaded_min_logic

FNV_PRIME = 1099511628211  # (any odd multiplier: a collision only costs the exact grouping)
MULTI_DISPATCH_KEY = b"INNER_MULTI_DISPATCH\x01"  # the property's name and NAME_VALUE_SEPARATOR
BLANK_UNIT = np.array([(0, S.PRE_BLANK_SIZE, 0)], S.CQ_DTYPE)  # fillPreBlank's unit


class FileWrites:
    """The units the dispatch wrote into one file of a queue: a contiguous run from byte `at` of it (the queue's
    writes go where it ends), held in an array that grows by doubling, at most the file's units."""

    def __init__(self, start: int, at: int, dtype: np.dtype):
        self.start, self.at, self.n = start, at, 0
        self.units = np.empty(16, dtype)

    def append(self, units: np.ndarray | tuple) -> int:
        """Units (an array, or one unit as a tuple of its fields) after the ones held; how many."""
        count = len(units) if isinstance(units, np.ndarray) else 1
        if self.n + count > len(self.units):
            grown = np.empty(max(2 * len(self.units), self.n + count), self.units.dtype)
            grown[: self.n] = self.units[: self.n]
            self.units = grown
        if count == 1:
            self.units[self.n] = units[0] if isinstance(units, np.ndarray) else units
        else:
            self.units[self.n : self.n + count] = units
        self.n += count
        return count

    def over(self, arr: np.ndarray) -> np.ndarray:
        """The file's units `arr` with these written into them (a copy). A file cut shorter than its size (the
        broker's load refuses it: info shows it among the odd files) is zero-filled up to the written units, as
        the broker's mapping of the whole size would read."""
        first = self.at // arr.dtype.itemsize
        out = np.zeros(max(len(arr), first + self.n), arr.dtype)
        out[: len(arr)] = arr
        out[first : first + self.n] = self.units[: self.n]
        return out


class QueueWrites:
    """What the recovery's dispatch wrote into one queue: how many units, the files it created (their logical
    starts), and the units themselves only in the first file and the last file it wrote into: the writes are one
    contiguous run from where the queue ended, so truncated() reads written units only in the last file (a file
    whose first unit the dispatch wrote points below processOffset and stops its walk back), and a queue the
    dispatch made gets its min from its first file (made_min). Memory is bounded by two files' units, whatever
    the number of units re-dispatched."""

    def __init__(self, file_size: int, dtype: np.dtype):
        self.file_size, self.dtype = file_size, dtype
        self.count = 0
        self.first: FileWrites | None = None
        self.last: FileWrites | None = None
        self.new_files: list[int] = []

    def write(self, at: int, units: np.ndarray | tuple):
        """`units` (FileWrites.append's) written from logical byte `at` on, all inside the file holding `at`."""
        start = at - at % self.file_size
        if self.last is None or self.last.start != start:
            self.last = FileWrites(start, at - start, self.dtype)
            self.first = self.first or self.last
        self.count += self.last.append(units)

    def over(self, start: int, arr: np.ndarray) -> np.ndarray:
        """File `start`'s units with the ones written into it (a copy when any is)."""
        for held in {id(w): w for w in (self.first, self.last) if w is not None}.values():
            if held.start == start:
                return held.over(arr)
        if self.first is not None and self.first.start < start < self.last.start:
            raise AssertionError(f"queue file {start}: the dispatch's units in it were not kept (an rmqctl bug)")
        return arr


class ReplayedQueue:
    """One queue through the recovery's dispatch: where its last file ends and its maxPhysicOffset, from its own
    recovery (ConsumeQueue.recover, BatchConsumeQueue.recover: `recovery`), then each unit put to it."""

    def __init__(self, recovery: QueueRecovery):
        dtype = S.BCQ_DTYPE if recovery.names_a_record else S.CQ_DTYPE
        self.recovery, self.written = recovery, QueueWrites(recovery.file_size, dtype)
        self.max_phy = recovery.max_phy
        stop = recovery.stop  # truncateDirtyFiles after recover: the files past the stop's go
        self.starts = [f.start for f in recovery.files[: stop[0] + 1]] if stop is not None else []
        self.end = recovery.files[stop[0]].start + stop[1] if stop is not None else None  # None: no file
        self.last_max = None  # the max offset the last unit written gives (a BatchCQ unit's base + batchSize)

    @property
    def changed(self) -> bool:
        return self.written.count > 0

    def _file_for(self, expect: int) -> bool:
        """MappedFileQueue.getLastMappedFile(expect): the last file unless full, else a new one after it; a queue
        without a file gets one at `expect`'s file. True when this made the queue's first file."""
        size = self.recovery.file_size
        if not self.starts:
            self.end = expect - expect % size
        elif self.end < self.starts[-1] + size:
            return False
        self.starts.append(self.end)
        self.written.new_files.append(self.end)
        return len(self.starts) == 1

    def made_min(self, store: Store) -> int:
        """The min offset of a queue the dispatch made: its units' (pre-blank ones included), as
        recoverTopicQueueTable's correctMinOffset leaves it (store.loaded_min_logic; a BatchCQ queue: its
        first unit's msgBaseOffset). Its writes start at its first file's start."""
        first, last = self.written.first, self.written.last
        if self.recovery.names_a_record:
            return int(first.units[0]["msgBaseOffset"])
        files = [
            (w.start, w.units["commitLogOffset"][: w.n]) for w in ((first, last) if first is not last else (first,))
        ]
        if self.starts[-1] != last.start:  # (a file made for a unit found a duplicate: it stays empty)
            files.append((self.starts[-1], np.empty(0, np.int64)))
        return loaded_min_logic(files, store.commitlog.min_offset, store.version.major) // S.CQ_UNIT_SIZE

    def put(self, offset: int, size: int, cq_offset: int):
        """ConsumeQueue.putMessagePositionInfo of one unit."""
        if cq_already_built(offset, size, self.max_phy):
            return
        expect = cq_offset * S.CQ_UNIT_SIZE
        if self._file_for(expect) and cq_offset != 0 and expect > self.end:
            # fillPreBlank up to the unit's slot
            self.written.write(self.end, np.repeat(BLANK_UNIT, (expect - self.end) // S.CQ_UNIT_SIZE))
            self.end = expect
        if cq_put_order(cq_offset, self.end) == "duplicate":
            return
        self.written.write(self.end, (offset, size, 0))
        self.end += S.CQ_UNIT_SIZE
        self.max_phy, self.last_max = offset + size, self.end // S.CQ_UNIT_SIZE

    def put_run(self, offsets: np.ndarray, sizes: np.ndarray, cq_offsets: np.ndarray):
        """put() of each unit in turn (commitlog order), a run at a time where they go where the queue ends: in
        the queue's last file, in queue-offset order, each past the one before it (put's checks all pass)."""
        i, ends = 0, offsets + sizes
        while i < len(offsets):
            run = self._run_at(ends[i:], cq_offsets[i:])
            if not run:
                self.put(int(offsets[i]), int(sizes[i]), int(cq_offsets[i]))
                i += 1
                continue
            units = np.zeros(run, S.CQ_DTYPE)
            units["commitLogOffset"], units["size"] = offsets[i : i + run], sizes[i : i + run]
            self._append(units)
            i += run

    def _run_at(self, ends: np.ndarray, cq_offsets: np.ndarray) -> int:
        """How many of the units from the first put() writes where the queue ends without a check tripping."""
        if not self.starts or self.end >= self.starts[-1] + self.recovery.file_size:
            return 0  # (a new file comes first)
        room = min(len(ends), (self.starts[-1] + self.recovery.file_size - self.end) // S.CQ_UNIT_SIZE)
        slot = self.end // S.CQ_UNIT_SIZE + np.arange(room)
        before = np.concatenate(([self.max_phy], ends[: room - 1]))
        fits = (cq_offsets[:room] == slot) & (slot != 0) & ~cq_already_built(ends[:room], 0, before)
        return int(np.argmin(fits)) if not fits.all() else room

    def _append(self, units: np.ndarray):
        """Units written where the queue ends."""
        self.written.write(self.end, units)
        self.end += len(units) * S.CQ_UNIT_SIZE
        last = units[-1]
        self.max_phy, self.last_max = int(last["commitLogOffset"]) + int(last["size"]), self.end // S.CQ_UNIT_SIZE

    def put_batch(self, unit: tuple):
        """BatchConsumeQueue.putBatchMessagePositionInfo of (commitLogOffset, size, tagsCode, storeTime,
        msgBaseOffset, batchSize): appended where the queue ends (a new queue at file 0)."""
        if bcq_already_built(unit[0], self.max_phy):
            return
        self._file_for(0)
        self.written.write(self.end, (*unit, S.BCQ_INVALID_POS, 0))
        self.end += S.BCQ_UNIT_SIZE
        self.max_phy, self.last_max = unit[0], unit[4] + unit[5]


class Redispatch:
    """The recovery walk's dispatch, fed the records the walk passes (walk's `reporter`): each record from
    `dispatch_from` on, of a dispatched transaction type, to its queues (dispatch.cq_targets; a BatchCQ topic's
    own queue its batch_unit), in commitlog order."""

    def __init__(self, store: Store, queues: dict[str, ReplayedQueue], batch: set[str], dispatch_from: int):
        self.store, self.queues, self.batch, self.dispatch_from = store, queues, batch, dispatch_from
        self.v2 = store.version.major != 4
        self.cq_size = store.consumequeue_file_size
        self.topic_ids: dict[str, int] = {}
        self.topic_names: list[str] = []

    def queue(self, name: str, batch: bool) -> ReplayedQueue:
        """The queue, made (findOrCreateConsumeQueue) when the store has none by that name."""
        q = self.queues.get(name)
        if q is None:
            size = self.cq_size if not batch else queue_file_size(self.store)
            q = self.queues[name] = ReplayedQueue(QueueRecovery(name, [], size, -1, None, None, batch))
        return q

    def passed(self, chunk):
        """A chunk's records, a queue at a time (queues are independent, each in commitlog order): only those
        past what their queue holds are put, a run at a time. The reference reads a record only where a unit
        comes from what the columns lack (a BatchCQ topic's INNER_BASE / INNER_NUM, INNER_MULTI_DISPATCH), and
        not when its own queue already holds it (nor, under multi-dispatch, when it names no other queue)."""
        cols = {n: chunk.column(n) for n in ("position", "physicalOffset", "storeSize", "queueId", "queueOffset")}
        rows = np.flatnonzero((cols["physicalOffset"] > self.dispatch_from) & dispatched_type(chunk.column("sysFlag")))
        if not len(rows):
            return
        topics = self._topics(chunk, rows)
        keys = topics * (1 << 32) + (cols["queueId"][rows] & 0xFFFFFFFF)
        _, first, group = np.unique(keys, return_index=True, return_inverse=True)
        group = group.ravel()
        if self.store.config.enableMultiDispatch:
            self._multi_dispatched(chunk, cols, rows, topics, self._built(cols, rows, topics, first, group))
            return
        for g, at in enumerate(first.tolist()):
            topic, queue_id = self.topic_names[int(topics[at])], int(cols["queueId"][rows[at]])
            mine = rows[group == g]
            if topic in self.batch:  # (its queue is made only for a record the reference finds a unit in)
                q = self.queues.get(f"{topic}/{queue_id}")
                past = np.flatnonzero(~bcq_already_built(cols["physicalOffset"][mine], q.max_phy if q else -1))
                for r in mine[past[0] :].tolist() if len(past) else ():
                    self._by_reference(chunk, int(cols["position"][r]), topic)
                continue
            q = self.queue(f"{topic}/{queue_id}", False)
            past = np.flatnonzero(~cq_already_built(cols["physicalOffset"][mine], cols["storeSize"][mine], q.max_phy))
            mine = mine[past[0] :] if len(past) else mine[:0]
            q.put_run(cols["physicalOffset"][mine], cols["storeSize"][mine], cols["queueOffset"][mine])

    def _built(self, cols: dict, rows: np.ndarray, topics: np.ndarray, first: np.ndarray, group: np.ndarray):
        """Whether each row's own queue (topic/queueId) already holds its record, as the chunk starts."""
        built = np.zeros(len(rows), bool)
        for g, at in enumerate(first.tolist()):
            topic, queue_id = self.topic_names[int(topics[at])], int(cols["queueId"][rows[at]])
            q = self.queues.get(f"{topic}/{queue_id}")
            if q is None:
                continue
            mine = group == g
            offsets = cols["physicalOffset"][rows[mine]]
            if topic in self.batch:
                built[mine] = bcq_already_built(offsets, q.max_phy)
            else:
                built[mine] = cq_already_built(offsets, cols["storeSize"][rows[mine]], q.max_phy)
        return built

    def _multi_dispatched(self, chunk, cols: dict, rows: np.ndarray, topics: np.ndarray, built: np.ndarray):
        """Multi-dispatch on: the records in commitlog order, each to its queues (INNER_MULTI_DISPATCH's too). A
        record its own queue holds is passed over unread unless its properties name INNER_MULTI_DISPATCH (a
        queue's max only grows, so it holds it at its turn too; a BatchCQ topic's record goes to its queue only)."""
        props_at, props_len = chunk.column("propertiesAt"), chunk.column("propertiesLength")
        for r, t, held in zip(rows.tolist(), topics.tolist(), built.tolist()):
            topic = self.topic_names[t]
            if held and (
                topic in self.batch
                or MULTI_DISPATCH_KEY not in chunk.u8[props_at[r] : props_at[r] + props_len[r]].tobytes()
            ):
                continue
            self._by_reference(chunk, int(cols["position"][r]), topic)

    def _topics(self, chunk, rows: np.ndarray) -> np.ndarray:
        """Each row's topic as an index into topic_names (the topic's bytes decoded as Java decodes them)."""
        at, length = chunk.column("topicAt")[rows], chunk.column("topicLength")[rows]
        width = int(length.max())
        spread = np.arange(width)
        names = chunk.u8[np.minimum(at[:, None] + spread, len(chunk.u8) - 1)] * (spread < length[:, None])
        names = np.column_stack([names, length.astype(np.uint8), (length >> 8).astype(np.uint8)])
        # a hash of the bytes groups the rows; a group whose bytes differ (a collision) falls back to the bytes
        spread = np.arange(names.shape[1], dtype=np.uint64)
        hashes = (names.astype(np.uint64) * (np.uint64(FNV_PRIME) ** spread)).sum(axis=1, dtype=np.uint64)
        _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        if not (names == names[first[inverse]]).all():
            _, first, inverse = np.unique(names, axis=0, return_index=True, return_inverse=True)
            inverse = inverse.ravel()
        ids = np.empty(len(first), np.int64)
        for k, r in enumerate(first.tolist()):
            name = decode_utf8(chunk.u8[at[r] : at[r] + length[r]].tobytes())
            ids[k] = self.topic_ids.setdefault(name, len(self.topic_names))
            if ids[k] == len(self.topic_names):
                self.topic_names.append(name)
        return ids[inverse]

    def _by_reference(self, chunk, pos: int, topic: str):
        m = read_record(chunk.buf, pos, len(chunk.u8), self.v2)
        if topic in self.batch:
            unit = batch_unit(m, self.store.config)
            if unit is not None:
                self.queue(f"{topic}/{m.queueId}", True).put_batch(unit)
            return
        for name, queue_id, queue_offset in cq_targets(m, self.store.config, self.v2):
            self.queue(f"{name}/{queue_id}", False).put(m.physicalOffset, m.storeSize, queue_offset)


@dataclasses.dataclass(frozen=True)
class LoadedQueues:
    """The consume queues as the broker's load() leaves them, where that differs from their files."""

    end: int  # processOffset: where the commitlog's recovery walk stops
    abnormal: bool  # recoverAbnormally (abort present), else recoverNormally
    max_offset: dict[str, int]  # topic/queueId -> max offset after load, for each queue the load moves or makes
    made: dict[str, int]  # topic/queueId -> min offset of each file queue the recovery's dispatch makes
    max_phy: dict[str, int | None]  # RocksDB queue: the commitLogOffset of the unit its new max points past
    redispatch_counted: bool  # False: the recovery dispatches records whose units max_offset leaves out
    walk_start: int = 0  # the commitlog offset the recovery's walk (and any dispatch it does) starts from


def truncation_runs(store: Store, before: int, after: int, process_offset: int) -> bool:
    """Whether truncateDirtyLogicFiles(processOffset) changes the file queues: when their greatest maxPhysicOffset
    reaches processOffset. 4.9.7 and 5.3.3 (CommitLog.recoverNormally/recoverAbnormally) compare the value the
    queues' recovery gave (`before` the walk's dispatch). apache/rocketmq 9d9431dc1c (develop, 2025-06-03; not in
    rocketmq-all-5.3.3, checked on the repository's history) moved the check into ConsumeQueueStore.truncateDirty,
    which reads the queues' max `after` the dispatch. 5.4.0 (2025-12-24) was released from develop after it (its
    notes list 5.3.4's README update, #9894); 5.3.4 (2025-11-26)'s notes were not seen whole, and rmqctl's version
    evidence does not tell 5.3.4 from 5.3.3 (brokerversion): the check moves from 5.4 on."""
    return (after if store.version.at_least(5, 4) else before) >= process_offset


def walk_kernels(store: Store) -> tuple:
    """The compiled kernels loaded_queues runs on this store as `info` calls it: the recovery walk's (the engine's
    CRC-checking walk, as verify's), unless a broker holds the store, its queues are not read, it has no
    commitlog file or DLedger recovers it."""
    if store.live is not None or not store.parts.queues_read or not store.commitlog.files or store.dledger:
        return ()
    return (check_walk,)


def loaded_queues(store: Store) -> LoadedQueues | None:
    """DefaultMessageStore.recover's effect on the consume queues (see the module's docstring); None without a
    commitlog file (the broker then destroys the queues)."""
    if not store.commitlog.files:
        return None
    abnormal = store.crashed()
    ends = recovered_queues_end(store)
    if store.dledger is not None:
        return dledger_loaded_queues(store, ends, abnormal)
    start = start_file(store, abnormal, lambda: ends.max_phy)
    checker = RecoveryChecker(store, abnormal=abnormal)
    if store.rocks_queues is not None:
        end = walk(store, checker, start, RecordTally()).cut
        moved = recovered_rocks_queue_max(store, end)
        # recoverAbnormally dispatches every record it walks, 5.x's recoverNormally those past the checkpoint
        counted = not abnormal and (store.rocks_queues.checkpoint or 0) >= end
        return LoadedQueues(
            end, abnormal, {k: v[0] for k, v in moved.items()}, {}, {k: v[1] for k, v in moved.items()}, counted
        )
    queues = {q.name: ReplayedQueue(q) for q in ends.queues}
    batch = batch_topics(store) if store.version.major >= 5 else set()
    redispatch = None
    if abnormal or store.version.major >= 5:
        dispatch_from = -1 if abnormal else dispatch_start(store, ends.max_phy)
        redispatch = Redispatch(store, queues, batch, dispatch_from)
    end = walk(store, checker, start, RecordTally(), redispatch).cut
    after = max((q.max_phy for q in queues.values()), default=-1)
    truncating = truncation_runs(store, ends.max_phy, after, end)
    max_offset = {}
    for name, q in queues.items():
        if truncating and q.starts:
            max_offset[name] = q.recovery.truncated(end, q.written)[1]
        elif q.changed:
            max_offset[name] = q.last_max
    made = {name: q.made_min(store) for name, q in queues.items() if not q.recovery.files and q.changed}
    return LoadedQueues(end, abnormal, max_offset, made, {}, True, store.commitlog.files[start].start)


def dledger_loaded_queues(store: Store, ends, abnormal: bool) -> LoadedQueues:
    """DLedgerCommitLog.recover (4.9.7, 5.3.3): DLedger's own recovery (dledger.recover) ends the log, nothing is
    dispatched, and truncateDirtyLogicFiles runs at its end when the queues reach it."""
    layout = store.dledger
    end = dledger.recover(store.commitlog, store.dledger_index, dledger.read_state(layout.checkpoint_path)).cut
    moved = {}
    if ends.max_phy >= end:
        moved = {q.name: q.truncated(end)[1] for q in ends.queues if q.stop is not None}
    return LoadedQueues(end, abnormal, moved, {}, {}, True)


def loaded_state(store: Store) -> LoadedQueues | None:
    """loaded_queues after a crash or a clean stop alike (a clean stop's commitlog may still have lost its
    tail); None beside a running broker, whose queues are their files (it loaded them already)."""
    return loaded_queues(store) if store.live is None else None


def loaded_maxes(store: Store) -> dict[str, int]:
    """topic/queueId -> each queue's max after the broker's load, where its recovery moves it (loaded_state:
    units past the commitlog's recovered end truncated, the units its dispatch adds)."""
    loaded = loaded_state(store)
    return dict(loaded.max_offset) if loaded is not None else {}
