"""Consumer and queue offsets offline: consumer lag from config/consumerOffset.json, the queue offset the broker
returns for a time (getOffsetInQueueByTime, 4.9 and 5.x rules), and scheduled (delay-level) messages against
config/delayOffset.json. Read-only.

Sources: ConsumeQueue.getOffsetInQueueByTime / correctMinOffset (4.9.7), ConsumeQueue.binarySearchInQueueByTime
and MappedFileQueue.getConsumeQueueMappedFileByTime (5.3.3), MappedFileQueue.getMappedFileByTime,
CommitLog.pickupStoreTimestamp, ConsumerOffsetManager, ScheduleMessageService.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from .. import schema as S
from ..batchcq import batch_consume_queues, offset_by_time as batch_offset_by_time
from ..configfiles import committed_offsets, config_dir, delay_level_offsets, read_config
from ..errors import StoreError, UsageError
from ..javacompat import java_div, parse_int
from ..rocksdbconfig import OFFSET_FILES, broker_config, configured_topics, consumer_offsets_file, kept_in_rocksdb
from ..rocksdbcq import RocksConsumeQueues, RocksQueue
from ..rules import SCHEDULE_TOPIC, deleted_topic, lite_topic, pre_blank, read_at_commitlog_min, record_expired
from ..queueload import loaded_maxes
from ..store import ConsumeQueue, MappedFile, Store, loaded_min_logic, store_times
from .inspect import commitlog_end, ms_text

TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"  # messageTimeup's real topic that the service discards
BOUNDARIES = ("lower", "upper")


class CommitLogTimes:
    """CommitLog.pickupStoreTimestamp over the commitlog's [min, max) offsets, as the loaded broker has them."""

    def __init__(self, store: Store):
        self.store = store
        files = store.commitlog.files
        self.min_offset = files[0].start if files else 0
        end, _ = commitlog_end(store)
        self.max_offset = end if end is not None else self.min_offset

    def store_time(self, offset: int, size: int) -> int:
        """The storeTimestamp of the record at `offset` (rmqctl.store.store_times), or -1 outside the commitlog."""
        return int(
            store_times(self.store.commitlog, np.array([offset]), np.array([size]), self.max_offset, self.store.live)[0]
        )


@dataclasses.dataclass
class QueueView:
    """One consumequeue as the loaded broker sees it: its files with their readable bytes, and its min and
    max logical offsets (in units)."""

    cq: ConsumeQueue
    files: list[tuple[MappedFile, int]]  # (file, bytes the broker reads: wrote position)
    min_logic: int  # minLogicOffset, in bytes (correctMinOffset)
    max_offset: int  # getMaxOffsetInQueue, in units
    beyond_files: int = 0  # units the load's recovery dispatches into the queue that its files do not hold yet

    @property
    def min_offset(self) -> int:
        return self.min_logic // S.CQ_UNIT_SIZE

    def unit(self, f: MappedFile, pos: int) -> tuple[int, int, int]:
        return S.CQ_UNIT.unpack_from(f.buf, pos)


def queue_view(store: Store, cq: ConsumeQueue, min_phy: int, loaded_max: int | None = None) -> QueueView:
    """Wrote positions as ConsumeQueue.recover leaves them (every file full up to the last, which ends at its
    first unwritten unit), cut where the load's recovery truncates the queue (`loaded_max`: loaded_maxes), and
    minLogicOffset as the load's correctMinOffset sets it (store.loaded_min_logic, by the store's broker
    version)."""
    files, offsets = [], []
    end = None if loaded_max is None else loaded_max * S.CQ_UNIT_SIZE
    for first, f, written, arr in cq.units():
        if end is not None:
            if f.start >= end:
                break
            written = min(written, (end - f.start) // S.CQ_UNIT_SIZE)
        files.append((f, written * S.CQ_UNIT_SIZE))
        offsets.append((f.start, arr["commitLogOffset"][:written]))
        if written < len(arr):
            break
    min_logic = loaded_min_logic(offsets, min_phy, store.version.major)
    on_disk = (files[-1][0].start + files[-1][1]) // S.CQ_UNIT_SIZE if files else 0
    max_offset = on_disk if loaded_max is None else loaded_max
    return QueueView(cq, files, min_logic, max_offset, max(0, max_offset - on_disk))


class LoadedMaxes:
    """loaded_maxes, walked on the first question (a store without committed offsets is not walked)."""

    def __init__(self, store: Store):
        self.store, self._maxes = store, None

    def get(self, name: str) -> int | None:
        if self._maxes is None:
            self._maxes = loaded_maxes(self.store)
        return self._maxes.get(name)


class RocksQueueView:
    """One queue of the RocksDB consume queue as the loaded broker sees it (RocksDBConsumeQueueStore): min by
    getMinCqOffset, max by getMaxOffsetInQueue; its units carry their store time."""

    def __init__(self, rocks: RocksConsumeQueues, q: RocksQueue, min_phy: int, loaded_max: int | None = None):
        self.rocks, self.q, self.min_phy = rocks, q, min_phy
        self.min_offset = rocks.min_offset(q, min_phy)
        self.max_offset = q.max_offset if loaded_max is None else loaded_max  # (loaded_maxes: truncateDirty's)
        # getMaxCqOffset: the max entry's offset, or the one truncateDirty corrected it to
        self.high = (q.max_entry[1] if q.max_entry is not None else None) if loaded_max is None else loaded_max - 1

    def unit(self, queue_offset: int) -> tuple[int, int, int, int] | None:
        return self.rocks.unit(self.q.topic, self.q.queue_id, queue_offset)

    def store_time(self, queue_offset: int) -> int | None:
        unit = self.unit(queue_offset) if self.min_offset <= queue_offset < self.max_offset else None
        return unit[3] if unit is not None else None

    def offset_by_time(self, timestamp: int, boundary: str) -> int:
        """RocksDBConsumeQueueStore.getOffsetInQueueByTime: binarySearchInCQByTime from the min to the last unit."""
        if self.high is None or self.high == -1:
            return 0
        return rocks_search_by_time(self, self.high, self.min_offset, timestamp, boundary)


def rocks_search_by_time(view: RocksQueueView, high: int, low: int, timestamp: int, boundary: str) -> int:
    """RocksDBConsumeQueueTable.binarySearchInCQByTime (5.3.3), over the units the view reads by key."""
    lower = boundary == "lower"
    ceiling, floor = high, low
    unit = view.unit(ceiling)
    if unit is not None and unit[3] < timestamp:
        return ceiling + 1 if lower else ceiling
    unit = view.unit(floor)
    if unit is not None and unit[3] > timestamp:
        return floor if lower else 0
    target = left = right = -1
    while high >= low:
        mid = low + ((high - low) >> 1)
        unit = view.unit(mid)
        if unit is None:
            low = mid + 1
            continue
        if record_expired(unit[0], view.min_phy):
            low, left = mid + 1, mid
            continue
        if unit[3] < 0:
            return 0
        if unit[3] == timestamp:
            target = mid
            break
        if unit[3] > timestamp:
            high, right = mid - 1, mid
        else:
            low, left = mid + 1, mid
    if target == -1:
        return right if lower else left
    step, stop = (-1, floor) if lower else (1, ceiling)
    while (target + step >= stop) if lower else (target + step <= stop):
        unit = view.unit(target + step)
        if unit is None or unit[3] != timestamp:  # (the broker would fail on a missing unit here)
            break
        target += step
    return target


def _file_mtime_ms(f: MappedFile) -> int:
    """File.lastModified(): milliseconds."""
    return os.stat(f.path).st_mtime_ns // 1_000_000


def _bisect(view: QueueView, f: MappedFile, times: CommitLogTimes, timestamp: int, low: int, high: int):
    """The binary search both versions run over a file's units (byte positions low..high): (the unit whose store
    time is exactly `timestamp` or -1, the last unit probed below it, the last above it, and their times), or
    None when a unit's record cannot be read (the broker then answers 0). Units below the commitlog's minimum
    count as earlier."""
    unit = S.CQ_UNIT_SIZE
    target = left = right = -1
    left_value = right_value = -1
    while high >= low:
        mid = java_div(low + high, 2 * unit) * unit
        phy, size, _ = view.unit(f, mid)
        if record_expired(phy, times.min_offset):
            low, left = mid + unit, mid
            continue
        t = times.store_time(phy, size)
        if t < 0:
            return None
        if t == timestamp:
            target = mid
            break
        if t > timestamp:
            high, right, right_value = mid - unit, mid, t
        else:
            low, left, left_value = mid + unit, mid, t
    return target, left, right, left_value, right_value


def offset_by_time_v4(view: QueueView, times: CommitLogTimes, timestamp: int) -> int:
    """ConsumeQueue.getOffsetInQueueByTime of 4.9: the file is the first whose modification time is at or after
    the time (else the last); a binary search in its written units; without an exact hit, the nearer of the
    two neighbours."""
    if not view.files:
        return 0
    f, readable = next(((g, r) for g, r in view.files if _file_mtime_ms(g) >= timestamp), view.files[-1])
    if readable <= 0:  # selectMappedBuffer(0) of a file with nothing written is null
        return 0
    low = view.min_logic - f.start if view.min_logic > f.start else 0
    high = readable - S.CQ_UNIT_SIZE
    found = _bisect(view, f, times, timestamp, low, high)
    if found is None:
        return 0
    target, left, right, left_value, right_value = found
    if target != -1:
        offset = target
    elif left_value == -1:
        offset = right
    elif right_value == -1:
        offset = left
    else:
        offset = right if abs(timestamp - left_value) > abs(timestamp - right_value) else left
    return java_div(f.start + offset, S.CQ_UNIT_SIZE)


def _file_by_time_v5(view: QueueView, times: CommitLogTimes, timestamp: int, boundary: str):
    """MappedFileQueue.getConsumeQueueMappedFileByTime: each file's first unit's store time (start) and, but
    for the last file, its last unit's (stop); LOWER takes the first file stopping at or after the time, else
    the last; UPPER the last file starting at or before it, else none."""
    files = [f for f, _ in view.files]
    size = view.cq.files.file_size

    def time_at(f, pos):
        if pos + S.CQ_UNIT_SIZE > len(f.buf):
            return -1
        phy, sz, _ = view.unit(f, pos)
        t = times.store_time(phy, sz)
        return t if t > 0 else -1

    if boundary == "lower":
        for i, f in enumerate(files):
            if i < len(files) - 1 and time_at(f, size - S.CQ_UNIT_SIZE) >= timestamp:
                return i
        return len(files) - 1
    for i in range(len(files) - 1, -1, -1):
        if time_at(files[i], 0) <= timestamp:
            return i
    return None


def offset_by_time_v5(view: QueueView, times: CommitLogTimes, timestamp: int, boundary: str = "lower") -> int:
    """ConsumeQueue.getOffsetInQueueByTime of 5.x with its boundary type (the one-argument form is LOWER)."""
    if boundary not in BOUNDARIES:
        raise UsageError(f"boundary must be one of {BOUNDARIES}")
    if not view.files:
        return 0
    i = _file_by_time_v5(view, times, timestamp, boundary)
    if i is None:
        return 0
    f, wrote = view.files[i]
    size = view.cq.files.file_size
    span = wrote if wrote not in (0, size) else size  # the file being written is read up to its wrote position
    span = min(span, len(f.buf))
    low = view.min_logic - f.start if view.min_logic > f.start else 0
    ceiling = span - S.CQ_UNIT_SIZE
    floor, high = low, ceiling
    unit = S.CQ_UNIT_SIZE

    def time_of(pos):
        phy, sz, _ = view.unit(f, pos)
        return phy, times.store_time(phy, sz)

    if ceiling < 0:
        return 0
    if time_of(ceiling)[1] < timestamp:
        return java_div(f.start + ceiling + (unit if boundary == "lower" else 0), unit)
    if floor <= ceiling and time_of(floor)[1] > timestamp:
        return java_div(f.start, unit) if boundary == "lower" else 0
    found = _bisect(view, f, times, timestamp, low, high)
    if found is None:
        return 0
    target, left, right, _, _ = found
    if target != -1:
        step, stop = (-unit, floor) if boundary == "lower" else (unit, ceiling)
        offset = target
        while True:
            attempt = offset + step
            if (attempt < stop) if step < 0 else (attempt > stop):
                break
            if time_of(attempt)[1] != timestamp:
                break
            offset = attempt
    else:
        offset = right if boundary == "lower" else left
    return java_div(f.start + offset, unit)


@dataclasses.dataclass
class TimeOffset:
    topic: str
    queueId: int
    timestamp: int
    timestampText: str | None
    queueOffset: int
    minOffset: int
    maxOffset: int
    storeTimestamp: int | None  # of the message at queueOffset, when there is one
    storeTimestampText: str | None
    rule: str

    @classmethod
    def found(cls, topic: str, queue_id: int, timestamp: int, queue_offset: int, lo: int, hi: int, st, rule: str):
        """The answer for `timestamp`: queue_offset in a queue holding lo..hi-1, st the store time there."""
        st_text = ms_text(st) if st is not None else None
        return cls(topic, queue_id, timestamp, ms_text(timestamp), queue_offset, lo, hi, st, st_text, rule)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def offset_by_time(
    store: Store, topic: str, queue_id: int | None, timestamp: int, version: int = 5, boundary: str = "lower"
) -> list[TimeOffset]:
    """The queue offset getOffsetInQueueByTime returns for `timestamp` (ms), for one queue or every queue of
    the topic; what a consumer reset to that time would start from."""
    if boundary not in BOUNDARIES:
        raise UsageError(f"boundary must be one of {BOUNDARIES}")
    batch = [q for q in batch_consume_queues(store) if q.topic == topic and queue_id in (None, q.queue_id)]
    if batch:
        maxes = loaded_maxes(store)
        return [
            _batch_offset_by_time(q.as_loaded(maxes.get(f"{q.topic}/{q.queue_id}")), timestamp, version, boundary)
            for q in batch
        ]
    rocks = store.rocks_queues
    of_topic = [q for q in (rocks.queues() if rocks is not None else store.consume_queues()) if q.topic == topic]
    queues = [q for q in of_topic if queue_id in (None, q.queue_id)]
    if not queues and queue_id is not None and (of_topic or topic in (configured_topics(store) or ())):
        # a queue of a known topic that holds nothing yet: findConsumeQueue makes it, empty, and the search
        # answers 0 (every version and queue store)
        rule = "no such queue: the broker's findConsumeQueue makes it empty, getOffsetInQueueByTime answers 0"
        return [TimeOffset.found(topic, queue_id, timestamp, 0, 0, 0, None, rule)]
    if not queues:
        where = store.consumequeue_dir / topic / ("" if queue_id is None else str(queue_id))
        raise StoreError("no such consumequeue", where if rocks is None else store.consumequeue_dir)
    times = CommitLogTimes(store)
    out, maxes = [], loaded_maxes(store)
    if rocks is not None:
        views = [RocksQueueView(rocks, q, times.min_offset, maxes.get(f"{q.topic}/{q.queue_id}")) for q in queues]
        return [_rocks_offset_by_time(view, timestamp, boundary) for view in views]
    for cq in queues:
        view = queue_view(store, cq, times.min_offset, maxes.get(f"{cq.topic}/{cq.queue_id}"))
        if view.beyond_files:
            raise StoreError(
                f"{cq.topic}/{cq.queue_id}: the broker's recovery dispatches {view.beyond_files} unit(s) into this "
                f"queue that its files do not hold yet (its max after load is {view.max_offset}): this search runs "
                "over the queue's files only; let the broker recover the store first (`rmqctl locate --topic` "
                "names the record of each such unit)",
                cq.directory,
            )
        if version == 4:
            qoff = offset_by_time_v4(view, times, timestamp)
            rule = "4.9 getOffsetInQueueByTime (file by modification time, nearest neighbour)"
        else:  # ConsumeQueueStore.getOffsetInQueueByTime keeps the queue's answer inside [min, max]
            qoff = min(max(offset_by_time_v5(view, times, timestamp, boundary), view.min_offset), view.max_offset)
            rule = f"5.x getOffsetInQueueByTime, BoundaryType.{boundary.upper()}"
        st = message_time(view, times, qoff)
        out.append(TimeOffset.found(topic, cq.queue_id, timestamp, qoff, view.min_offset, view.max_offset, st, rule))
    return out


def _rocks_offset_by_time(view: RocksQueueView, timestamp: int, boundary: str) -> TimeOffset:
    qoff = view.offset_by_time(timestamp, boundary)
    st = view.store_time(qoff)
    return TimeOffset.found(
        view.q.topic,
        view.q.queue_id,
        timestamp,
        qoff,
        view.min_offset,
        view.max_offset,
        st,
        f"5.x RocksDBConsumeQueueStore.getOffsetInQueueByTime, BoundaryType.{boundary.upper()}",
    )


def _batch_offset_by_time(q, timestamp: int, version: int, boundary: str) -> TimeOffset:
    """A BatchCQ topic's queue (5.x only): batchcq.offset_by_time, the store time from the unit covering it."""
    if version == 4:
        raise StoreError("a BatchConsumeQueue is 5.x's; 4.9 has no getOffsetInQueueByTime for it", q.directory)
    if q.beyond_files:
        raise StoreError(
            f"{q.topic}/{q.queue_id}: the broker's recovery dispatches {q.beyond_files} queue offset(s) into this "
            f"queue that its files do not hold yet (its max after load is {q.loaded_max}): this search runs over "
            "the queue's files only; let the broker recover the store first",
            q.directory,
        )
    qoff = batch_offset_by_time(q, timestamp, boundary)  # clamped into [min, max] there, as ConsumeQueueStore does
    lo, hi = q.offset_range()
    st = q.store_time_at(qoff)
    return TimeOffset.found(
        q.topic,
        q.queue_id,
        timestamp,
        qoff,
        lo,
        hi,
        st,
        f"5.x BatchConsumeQueue.getOffsetInQueueByTime, BoundaryType.{boundary.upper()}",
    )


def message_time(view: QueueView | RocksQueueView, times: CommitLogTimes, queue_offset: int) -> int | None:
    """The store time of the message at `queue_offset` of the queue, if the queue holds it."""
    if isinstance(view, RocksQueueView):
        return view.store_time(queue_offset)
    if not view.min_offset <= queue_offset < view.max_offset:
        return None
    byte = queue_offset * S.CQ_UNIT_SIZE
    for f, readable in view.files:
        if f.start <= byte < f.start + readable:
            phy, size, _ = view.unit(f, byte - f.start)
            t = times.store_time(phy, size)
            return t if t >= 0 else None
    return None


# -- consumer lag ---------------------------------------------------------------------------------------------
@dataclasses.dataclass
class ConsumerQueue:
    group: str
    topic: str
    queueId: int
    offset: int  # committed: the next queue offset the group consumes
    minOffset: int | None
    maxOffset: int | None
    lag: int | None  # messages not yet consumed
    oldestUnconsumed: int | None  # store time of the message at the committed offset
    oldestUnconsumedText: str | None
    status: str  # ok | behind-min | ahead-of-max | no-queue | lite-expired, deleted-topic (normal)
    note: str | None
    source: str  # the file the offset was read from

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


NORMAL_STATUSES = ("ok", "lite-expired", "deleted-topic")  # what makes `consumers` exit 0


def offsets_config(store: Store, notes: list[str]) -> str:
    """The one consumer-offset config the broker loads (consumer_offsets_file); a note for the other JSON file
    where it lies unread."""
    name = consumer_offsets_file(store)
    other = OFFSET_FILES[0] if name == OFFSET_FILES[1] else OFFSET_FILES[1]
    unread = read_config(store.root, other)
    if unread.main.exists or unread.bak.exists:
        why = (
            f"(it keeps consumer offsets in RocksDB, with {name} merged in when newer)"
            if kept_in_rocksdb(store, name)
            else f"(enableLmq={str(name == OFFSET_FILES[1]).lower()}): it reads {name}"
        )
        notes.append(f"{unread.main.path}: not loaded by this broker {why}")
    return name


def consumers(store: Store) -> tuple[list[ConsumerQueue], list[str]]:
    """Every group, topic and queue of the consumer-offset config the broker loads (offsets_config), read as
    ConfigManager.load reads it, against the consumequeues: lag, the oldest unconsumed message, and offsets
    the broker corrects on the next pull (below the queue's min: from the min; above its max: to the max)."""
    times = CommitLogTimes(store)
    rocks = store.rocks_queues
    views = {(q.topic, q.queue_id): q for q in (rocks.queues() if rocks is not None else store.consume_queues())}
    batch = {(q.topic, q.queue_id): q for q in batch_consume_queues(store)}
    cache: dict = {}
    now: list[Store] = []  # on a running broker's store, the store as it is now (_max_offset_now)
    rows, notes, present = [], [], []
    maxes = LoadedMaxes(store)
    topics = configured_topics(store)
    name = offsets_config(store, notes)
    cfg = broker_config(store, name)
    if cfg.main.exists or cfg.bak.exists:
        present.append(str(cfg.main.path))
    source, entries = _loaded_offsets(cfg, notes)
    queued = {topic for topic, _ in views} | {topic for topic, _ in batch}  # the topics with a queue
    for c in entries:
        cq, bcq = views.get((c.topic, c.queueId)), batch.get((c.topic, c.queueId))
        if cq is None and bcq is None:
            rows.append(_no_queue(c, source, topics, queued, maxes.get(f"{c.topic}/{c.queueId}")))
            continue
        if bcq is not None:
            bcq.as_loaded(maxes.get(f"{c.topic}/{c.queueId}"))
            lo, hi = cache.get(bcq.directory) or cache.setdefault(bcq.directory, bcq.offset_range())
        else:
            key = (c.topic, c.queueId)
            view = cache.get(key) or cache.setdefault(
                key,
                RocksQueueView(rocks, cq, times.min_offset, maxes.get(f"{c.topic}/{c.queueId}"))
                if rocks is not None
                else queue_view(store, cq, times.min_offset, maxes.get(f"{c.topic}/{c.queueId}")),
            )
            lo, hi = view.min_offset, view.max_offset
        status, note = _offset_status(c.offset, lo, hi)
        if status == "ahead-of-max" and store.live is not None and rocks is None and bcq is None:
            max_now = _max_offset_now(store, now, c.topic, c.queueId)
            if c.offset <= max_now:  # committed since the snapshot: within the queue as it is now
                status, note = "ok", f"committed after this read's snapshot; the queue's max is {max_now} now"
        lag = max(hi - max(c.offset, lo), 0)
        if not lag:
            oldest = None
        else:
            oldest = (
                bcq.store_time_at(max(c.offset, lo))
                if bcq is not None
                else message_time(view, times, max(c.offset, lo))
            )
        rows.append(
            ConsumerQueue(
                c.group,
                c.topic,
                c.queueId,
                c.offset,
                lo,
                hi,
                lag,
                oldest,
                ms_text(oldest) if oldest else None,
                status,
                note,
                source,
            )
        )
    for later in now:
        later.close()
    if not present:
        notes.append(
            f"{config_dir(store.root) / name}: no such file (nor its .bak): no consumer group has "
            "committed an offset in this store, so there is no lag to show"
        )
    elif not rows:
        notes.append(f"{', '.join(present)}: no committed offset")
    return rows, notes


def _loaded_offsets(cfg, notes: list[str]) -> tuple[str | None, list]:
    """The file an offsets config loads from (main, else .bak, as ConfigManager.load) and its committed offsets;
    a note for a .bak loaded, for entries that do not read, and for a config the broker cannot load (no offsets)."""
    if cfg.load_fails:
        notes.append(
            f"{cfg.bak.path}: {cfg.bak.error}; {cfg.main.path} is not usable either: the broker does not start"
        )
        return None, []
    if cfg.loaded_from == "bak":
        notes.append(
            f"{cfg.main.path}: {cfg.main.error or 'empty or missing'}; the broker loads {cfg.bak.path} "
            "(an older persist) instead, and these offsets come from it"
        )
    source = str(cfg.main.path if cfg.loaded_from == "main" else cfg.bak.path)
    entries, bad = committed_offsets(cfg.document, lmq=cfg.name == OFFSET_FILES[1])
    notes += [f"{source}: {b}" for b in bad]
    return source, entries


def _max_offset_now(store: Store, now: list[Store], topic: str, queue_id: int) -> int:
    """A queue's max offset on a running broker's store as it is now, not at the snapshot this read is judged
    on: consumerOffset.json is read after that snapshot, and a consumer may have committed messages dispatched
    since. The store is opened again once (a second snapshot), kept in `now`."""
    if not now:
        now.append(Store(store.root, store.config))
    return queue_view(now[0], now[0].consume_queue(topic, queue_id), now[0].commitlog.min_offset).max_offset


def _offset_status(offset: int, lo: int, hi: int) -> tuple[str, str | None]:
    """A committed offset against its queue's range: what the broker does with it on the next pull."""
    if offset < lo:
        return "behind-min", f"below the queue's min {lo}: the broker serves from {lo}, skipping {lo - offset} deleted"
    if offset > hi:
        return "ahead-of-max", f"above the queue's max {hi}: the broker resets the pull to {hi}"
    return "ok", None


def group_lag(rows: list[ConsumerQueue]) -> list[dict]:
    """Per group: its topics and queues, the total lag, the oldest unconsumed message over all its queues,
    and how many of its offsets the broker corrects or cannot place (a status not in NORMAL_STATUSES)."""
    groups: dict[str, dict] = {}
    for r in rows:
        g = groups.setdefault(
            r.group,
            {
                "group": r.group,
                "topics": 0,
                "queues": 0,
                "lag": 0,
                "oldestUnconsumed": None,
                "oldestUnconsumedText": None,
                "notOk": 0,
                "_topics": set(),
            },
        )
        g["_topics"].add(r.topic)
        g["queues"] += 1
        g["lag"] += r.lag or 0
        g["notOk"] += r.status not in NORMAL_STATUSES
        if r.oldestUnconsumed is not None and (
            g["oldestUnconsumed"] is None or r.oldestUnconsumed < g["oldestUnconsumed"]
        ):
            g["oldestUnconsumed"], g["oldestUnconsumedText"] = r.oldestUnconsumed, r.oldestUnconsumedText
    out = []
    for g in groups.values():
        g["topics"] = len(g.pop("_topics"))
        out.append(g)
    return out


def _no_queue(c, source: str, topics: frozenset | None, present: set, dispatched: int | None) -> "ConsumerQueue":
    """An offset whose queue has no files. A queue never written to, which the broker answers as min = max = 0
    (getMaxOffsetInQueue of a queue with no files: a push consumer commits 0 there, on every %RETRY% queue of
    its group), judged as any other (_offset_status); a lite topic's that expired (normal); a deleted topic's
    (rules.deleted_topic: its queues gone, the offset left behind, which the broker's consumerProgress does not
    list: normal too); or one the broker's recovery dispatches units into (loaded_maxes), whose offsets are
    not known until it has (no-queue)."""
    lo = hi = lag = None
    if lite_topic(c.topic) is not None:
        status = "lite-expired"
        note = "a lite topic's queue (RIP-83): it expires after an idle TTL, so a vanished one is normal"
    elif deleted_topic(c.topic, topics, present):
        status = "deleted-topic"
        note = "the topic is in no queue and not in the broker's topics: deleted, its consumer offset left behind"
    elif dispatched:
        status = "no-queue"
        note = f"no consumequeue files yet: the broker's recovery dispatches {dispatched} unit(s) into this queue"
    else:
        lo = hi = lag = 0
        status, correction = _offset_status(c.offset, 0, 0)
        note = "; ".join(filter(None, ["no consumequeue files: a queue never written to (min = max = 0)", correction]))
    return ConsumerQueue(c.group, c.topic, c.queueId, c.offset, lo, hi, lag, None, None, status, note, source)


# -- scheduled messages ---------------------------------------------------------------------------------------
@dataclasses.dataclass
class DelayLevel:
    level: int
    delay: str | None  # from messageDelayLevel
    queueId: int
    offset: int | None  # delayOffset.json: the next unit the schedule service delivers
    minOffset: int
    maxOffset: int
    pending: int
    due: int  # pending units whose delivery time (tagsCode) is at or before `now`
    stuckAt: int | None  # the queue offset the schedule service never gets past (_delivery_times), if any
    nextDelivery: int | None
    nextDeliveryText: str | None
    oldestPendingStore: int | None
    oldestPendingStoreText: str | None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def delay_offsets(store: Store, now_ms: int) -> tuple[list[DelayLevel], list[str]]:
    """config/delayOffset.json against the SCHEDULE_TOPIC_XXXX queues (queue id = level - 1): per level the
    scheduled messages still pending, how many are due at `now_ms`, and the oldest."""
    cfg = read_config(store.root, "delayOffset.json")
    notes = []
    if cfg.load_fails:
        notes.append(f"{cfg.bak.path}: {cfg.bak.error}; the broker does not start")
    elif cfg.loaded_from == "bak":
        notes.append(f"{cfg.main.path}: {cfg.main.error or 'empty or missing'}; the broker loads {cfg.bak.path}")
    offsets = delay_level_offsets(cfg.document)
    names = {i + 1: text for i, text in enumerate(store.config.messageDelayLevel.split())}
    delays = store.config.delay_level_table()
    times = CommitLogTimes(store)
    queues = {q.queue_id: q for q in store.consume_queues() if q.topic == SCHEDULE_TOPIC}
    rows = []
    for level in sorted(set(offsets) | {qid + 1 for qid in queues}):
        cq = queues.get(level - 1)
        view = queue_view(store, cq, times.min_offset) if cq else None
        lo, hi = (view.min_offset, view.max_offset) if view else (0, 0)
        committed = offsets.get(level)
        start = max(committed if committed is not None else lo, lo)
        deliver, stuck = _delivery_times(store, view, start, times) if view else (np.empty(0, np.int64), None)
        if stuck is not None:
            notes.append(
                f"level {level}: the schedule service stops at queue offset {stuck} for good: the unit there points "
                f"at commitlog offset 0, below the min {times.min_offset}, so CommitLog.getMessage reads the "
                f"record at {times.min_offset} instead, which is no scheduled message (no REAL_TOPIC and REAL_QID); "
                "RocketMQ 4.9 retries it every 100 ms"
            )
        deliver = _corrected(deliver, now_ms, delays.get(level), level, notes)
        due = int((deliver <= now_ms).sum())
        oldest = message_time(view, times, start) if view and len(deliver) else None
        nxt = int(deliver.min()) if len(deliver) else None
        rows.append(
            DelayLevel(
                level,
                names.get(level),
                level - 1,
                committed,
                lo,
                hi,
                len(deliver),
                due,
                stuck,
                nxt,
                ms_text(nxt) if nxt else None,
                oldest,
                ms_text(oldest) if oldest else None,
            )
        )
    return rows, notes


def _corrected(deliver: np.ndarray, now_ms: int, delay: int | None, level: int, notes: list[str]) -> np.ndarray:
    """ScheduleMessageService.correctDeliverTimestamp: a delivery time past now plus the level's delay (the clock
    stepped back, or messageDelayLevel shortened the level) is delivered at once; said in a note."""
    if delay is None:  # (no schedule task runs a level the table lacks)
        return deliver
    late = deliver > now_ms + delay
    if late.any():
        notes.append(
            f"level {level}: {int(late.sum())} message(s) due later than now plus the level's delay ({delay} ms: "
            "the clock stepped back, or messageDelayLevel changed): the schedule service delivers them at once"
        )
    return np.where(late, now_ms, deliver)


def _delivery_times(store: Store, view: QueueView, start: int, times: CommitLogTimes) -> tuple[np.ndarray, int | None]:
    """tagsCode (the delivery time in ms) of the schedule queue's units from queue offset `start` that the
    schedule service still has to deliver, and the queue offset where it stops for good (None: nowhere). A unit
    whose record the cleanup deleted delivers nothing (lookMessageByOffset returns null and the service goes on;
    a 4.9 queue with no live unit keeps its min at 0), nor does a pre-blank unit (no file holds its size); one
    at commitlog offset 0 reads the record at the commitlog's min instead (_head_delivery)."""
    out, stuck = [np.empty(0, np.int64)], None
    for f, readable in view.files:
        first = f.start // S.CQ_UNIT_SIZE
        n = readable // S.CQ_UNIT_SIZE
        skip = min(max(start - first, 0), n)
        if skip >= n:
            continue
        arr = np.frombuffer(f.buf, dtype=S.CQ_DTYPE, count=n)[skip:n]
        off, size, tags = arr["commitLogOffset"], arr["size"], arr["tagsCode"]
        read = ~record_expired(off, times.min_offset) & ~pre_blank(off, size, tags)
        for i in np.flatnonzero(read_at_commitlog_min(off, times.min_offset)).tolist():
            fate = _head_delivery(store, times, int(size[i]))
            read[i] = fate != "skip"
            if fate == "stuck" and stuck is None:
                stuck = first + skip + i
        out.append(tags[read].astype(np.int64))
    return np.concatenate(out), stuck


def _head_delivery(store: Store, times: CommitLogTimes, size: int) -> str:
    """What the schedule service makes of a unit at commitlog offset 0 whose record the cleanup deleted: it reads
    `size` bytes at the commitlog's min (rules.read_at_commitlog_min). "skip" where MessageDecoder finds no whole
    message in them (the record there is longer, or they run past the file's data: lookMessageByOffset returns
    null and the service goes on); "deliver" where that message has REAL_TOPIC and an int REAL_QID (messageTimeup
    sends a copy of it there); else "stuck" on 4.9 (messageTimeup throws, and executeOnTimeup's catch reschedules
    the same unit every 100 ms, for good) and "skip" on 5.x (its catch moves past the unit)."""
    at, first = times.min_offset, store.commitlog.files[0]
    if at + size > min(first.start + store.commitlog.file_size, times.max_offset):
        return "skip"
    try:
        _, head = store.read_message(at)
    except StoreError:
        return "skip"
    if head.storeSize > size:
        return "skip"
    topic, queue_id = head.properties.get("REAL_TOPIC"), parse_int(head.properties.get("REAL_QID", ""))
    if topic is not None and queue_id is not None:
        return "skip" if topic == TRANS_HALF_TOPIC else "deliver"
    return "stuck" if store.version.major == 4 else "skip"
