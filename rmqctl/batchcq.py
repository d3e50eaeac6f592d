"""BatchConsumeQueue (5.0+): `batchconsumequeue/{topic}/{queueId}/`, the consume queue of topics whose attribute
`queue.type` is `BatchCQ`. One 46-byte unit per record (schema.BatchConsumeQueueUnit); a unit covers the queue
offsets msgBaseOffset .. msgBaseOffset + batchSize - 1, so units are not one per queue offset.

Sources: store/.../queue/BatchConsumeQueue.java (recover, putBatchMessagePositionInfo, reviseMin/MaxOffsetInQueue),
queue/ConsumeQueueStore.java (findOrCreateConsumeQueue by QueueTypeUtils.getCQType), MessageStoreConfig
(mapperFileSizeBatchConsumeQueue = 300000 * 46, not rounded).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from .config import JAVA_DEFAULTS
from . import schema as S
from .configfiles import batch_cq_topics
from .dispatch import batch_unit
from .errors import ConfigNotRead, StoreError
from .parts import FILE_STORE
from .record import Message
from .rules import record_expired, served_units
from .rocksdbconfig import broker_config
from .store import MappedFile, MappedFileQueue, Store, settle_file_size

DIRECTORY = "batchconsumequeue"
DEFAULT_FILE_SIZE = JAVA_DEFAULTS["mapperFileSizeBatchConsumeQueue"]


def bcq_unit_valid(units: np.ndarray) -> np.ndarray:
    """BatchConsumeQueue.recover: a unit is written while phyOffset >= 0, size > 0, msgBaseOffset >= 0 and
    batchSize > 0. Element by element."""
    return (
        (units["commitLogOffset"] >= 0) & (units["size"] > 0) & (units["msgBaseOffset"] >= 0) & (units["batchSize"] > 0)
    )


def written_bcq_units(units: np.ndarray) -> int:
    """How many units of a file recover accepts: those before the first that is not valid."""
    invalid = (~bcq_unit_valid(units)).nonzero()[0]
    return int(invalid[0]) if len(invalid) else len(units)


def bcq_binary_search(bases: np.ndarray, right: int, target: int) -> int:
    """BatchConsumeQueue.binarySearch on msgBaseOffset over unit indexes 0..right (the broker's byte positions /
    46: the same steps): the unit whose base equals the target, else the one its halving converges to from the
    left (or the next when that one's base is not above the target); -1 for none."""
    left, max_right = 0, right
    while left <= right:
        mid = (left + right) // 2
        value = int(bases[mid])
        if value == target:
            return mid
        if value > target:
            right = mid - 1
        elif mid == left:
            return mid + 1 if mid + 1 <= max_right and int(bases[mid + 1]) <= target else mid
        else:
            left = mid
    return -1


class BatchConsumeQueue:
    """One queue's files (named by logical byte offset, like a consumequeue's)."""

    def __init__(
        self, topic: str, queue_id: int, directory: Path, file_size: int, min_phy: int = 0, by_cache: bool = True
    ):
        self.topic = topic
        self.queue_id = queue_id
        self.directory = directory
        self.files = MappedFileQueue([directory], file_size)
        self.min_phy = min_phy  # the commitlog's min offset, which the broker's load corrects the min against
        self.by_cache = by_cache  # searchBcqByCacheEnable: a file found through the caches, else file by file
        self.loaded_max: int | None = None  # the max the broker's load leaves, where it moves it (as_loaded)
        self.beyond_files = 0  # queue offsets the load's dispatch adds past the files (as_loaded)

    @property
    def units_per_file(self) -> int:
        return self.files.file_size // S.BCQ_UNIT_SIZE

    def units(self) -> Iterator[tuple[MappedFile, int, np.ndarray]]:
        """(file, units the broker keeps (rules.served_units), unit array) per file, up to the file where recover
        stops; where the load truncates the queue (loaded_max), the units from it on are gone, and so is a file
        left without one (truncateDirtyLogicFiles deletes it), but the first."""
        for k, f in enumerate(self.files.files):
            n = min(len(f.buf), self.files.file_size) // S.BCQ_UNIT_SIZE
            arr = np.frombuffer(f.buf, dtype=S.BCQ_DTYPE, count=n) if n else np.empty(0, S.BCQ_DTYPE)
            written = served_units(k, len(self.files.files), arr, written_bcq_units)
            if self.loaded_max is not None:
                written = int(np.searchsorted(arr["msgBaseOffset"][:written], self.loaded_max))
                if not written and k:
                    f.release()
                    return
            yield f, written, arr
            if written < self.units_per_file:
                return

    def as_loaded(self, loaded_max: int | None) -> "BatchConsumeQueue":
        """The queue as the broker's load leaves it, `loaded_max` its max after the load (queueload.loaded_maxes;
        None: the files as they are). Where the recovery truncates it (truncateDirtyLogicFiles keeps the units
        before the commitlog's recovered end, their msgBaseOffsets below the new max), the units past it are gone;
        where its dispatch adds units the files do not hold yet, `beyond_files` counts their queue offsets."""
        if loaded_max is not None and self.loaded_max is None:
            self.beyond_files = max(0, loaded_max - self.offset_range()[1])
            self.loaded_max = loaded_max
        return self

    def unit_covering(self, queue_offset: int) -> tuple[MappedFile, int, dict] | None:
        """(file, position, unit fields) of the unit getBatchMsgIndexBuffer (5.3.3) finds for a queue offset, None
        where it finds none: nothing at or past maxOffsetInQueue; the last file when its first unit's
        msgBaseOffset is at most the offset, else the file of the offset cache's floor entry (each file keyed by
        its first unit's msgBaseOffset, a later file replacing an earlier one under the same key); then
        binarySearch on msgBaseOffset over that file's units. On sound units that is the unit whose batch
        covers the offset; on damaged ones, the unit the broker serves all the same."""
        if queue_offset >= self.offset_range()[1]:
            return None
        firsts: dict[int, int] = {}  # first unit's msgBaseOffset -> file index (the cache)
        bases: list[tuple[int, int]] = []  # (first unit's msgBaseOffset, file index) of each file with a unit
        last = None
        for k, (f, written, arr) in enumerate(self.units()):
            if written:
                firsts[int(arr[0]["msgBaseOffset"])] = k
                bases.append((int(arr[0]["msgBaseOffset"]), k))
                last = (k, int(arr[0]["msgBaseOffset"]))
            f.release()
        if last is not None and last[1] <= queue_offset:
            target = last[0]
        elif not self.by_cache:  # searchOffsetFromFiles: the last file whose first unit is at or before it
            target = max((k for base, k in bases if base <= queue_offset), default=None)
            if target is None:
                return None
        else:
            floor = [base for base in firsts if base <= queue_offset]
            if not floor:
                return None
            target = firsts[max(floor)]
        for k, (f, written, arr) in enumerate(self.units()):
            if k == target:
                break
            f.release()
        i = bcq_binary_search(arr["msgBaseOffset"], written - 1, queue_offset)
        if i < 0:
            f.release()
            return None
        return f, i * S.BCQ_UNIT_SIZE, {k: int(arr[i][k]) for k in S.BCQ_DTYPE.names}

    def store_time_at(self, queue_offset: int) -> int | None:
        """The storeTime of the unit covering a queue offset, None when no unit does (an offset the load's dispatch
        adds past the files is in none, though the broker's search lands on the last)."""
        found = self.unit_covering(queue_offset)
        if (
            found is None
            or not found[2]["msgBaseOffset"] <= queue_offset < found[2]["msgBaseOffset"] + found[2]["batchSize"]
        ):
            return None
        return found[2]["storeTime"]

    def offset_range(self) -> tuple[int, int]:
        """(minOffsetInQueue, maxOffsetInQueue) as the broker's load leaves them: reviseMinOffsetInQueue's
        first unit's msgBaseOffset, moved by correctMinOffset past the first file's leading units below the
        commitlog's min offset (each such unit's msgBaseOffset + batchSize; only the first file is looked at,
        so a second dead file is still served), and the last unit's msgBaseOffset + batchSize, or the max the
        load leaves (as_loaded) (0, 0: no unit)."""
        lo = last = None
        for f, written, arr in self.units():
            if written:
                if lo is None:
                    live = np.flatnonzero(~record_expired(arr["commitLogOffset"][:written], self.min_phy))
                    dead = int(live[0]) if len(live) else written  # the leading units below the min
                    lo = int(arr[dead - 1]["msgBaseOffset"]) + int(arr[dead - 1]["batchSize"]) if dead else None
                    lo = int(arr[0]["msgBaseOffset"]) if lo is None else lo
                last = arr[written - 1]
            f.release()
        if last is None:
            return 0, 0
        return lo, self.loaded_max if self.loaded_max is not None else int(last["msgBaseOffset"]) + int(
            last["batchSize"]
        )


UNIT_FIELDS = ("commitLogOffset", "size", "tagsCode", "storeTime", "msgBaseOffset", "batchSize")


def unit_problems(unit, m: Message, topic: str, queue_id: int, config) -> list[str]:
    """How a unit differs from the one the broker writes for the record it names (empty: it agrees)."""
    problems = []
    if m.topic != topic or m.queueId != queue_id:
        problems.append(f"the record is {m.topic}/{m.queueId}'s")
    expected = batch_unit(m, config)
    if expected is None:
        problems.append(
            "the broker writes no unit for this record (a PREPARED or ROLLBACK one, or bad INNER_BASE/INNER_NUM)"
        )
        return problems
    for name, want in zip(UNIT_FIELDS, expected):
        if int(unit[name]) != want:
            problems.append(f"{name} {int(unit[name])}, the record's {want}")
    if int(unit["compactedOffset"]) != S.BCQ_INVALID_POS or int(unit["reserved"]) != 0:
        problems.append(
            f"compactedOffset {int(unit['compactedOffset'])} / reserved {int(unit['reserved'])}, not -1 / 0"
        )
    return problems


def queue(store: Store, topic: str, queue_id: int) -> BatchConsumeQueue:
    """One queue, or StoreError naming the directory that is not there."""
    for q in batch_consume_queues(store):
        if (q.topic, q.queue_id) == (topic, queue_id):
            return q
    raise StoreError("no such batchconsumequeue", store.root / DIRECTORY / topic / str(queue_id))


def offset_by_time(q: BatchConsumeQueue, timestamp: int, boundary: str) -> int:
    """BatchConsumeQueue.getOffsetInQueueByTime (5.3.3), clamped to [min, max] as ConsumeQueueStore does: the
    last file when its first unit is at or before the time, else the file `_time_file` picks; then the unit
    binarySearchRight finds by storeTime, its msgBaseOffset."""
    spans = []  # (file index, its first and last units' storeTime, units written): one file mapped at a time
    for i, (f, written, arr) in enumerate(q.units()):
        spans.append(
            (i, *((int(arr[0]["storeTime"]), int(arr[written - 1]["storeTime"])) if written else (None,) * 2), written)
        )
        f.release()
    lo, hi = q.offset_range()
    if not spans:
        return min(max(-1, lo), hi)
    target = len(spans) - 1
    if spans[-1][1] is None or spans[-1][1] > timestamp:
        target = _time_file(spans, timestamp, q.by_cache)
    if target is None:
        return min(max(-1, lo), hi)
    written = spans[target][3]
    f = q.files.files[target]
    units = np.frombuffer(f.buf, dtype=S.BCQ_DTYPE, count=written) if written else None
    found = _search_file(units, timestamp, boundary) if written else -1
    del units
    f.release()
    return min(max(found, lo), hi)


def _time_file(spans: list[tuple], timestamp: int, by_cache: bool) -> int | None:
    """The file getOffsetInQueueByTime searches when the last one starts after the time (None: none, the answer
    -1). searchBcqByCacheEnable (the default): the file whose first unit's storeTime is the greatest at or before
    it (the time cache, a later file winning a tie as the map's put; none: the first file). Else
    searchTimeFromFiles, from the last file back: a file without a unit is passed; the first whose last unit is
    at or after the time is it if its first unit is at or before it, or if it is the first file; one whose last
    unit is before the time gives the file after it (none after it: None)."""
    if by_cache:
        cache = {first: i for i, first, _, _ in spans if first is not None}
        earlier = [t for t in cache if t <= timestamp]
        return cache[max(earlier)] if earlier else 0
    for i, first, last, _ in reversed(spans):
        if first is None:
            continue
        if last >= timestamp:
            if first <= timestamp or i == 0:
                return i
            continue
        return i + 1 if i + 1 < len(spans) else None
    return None


def _search_file(units: np.ndarray, timestamp: int, boundary: str) -> int:
    """The rest of getOffsetInQueueByTime in one file: past its last unit's time, that unit's msgBaseOffset;
    else that of the unit binary_search_right finds (-1: none)."""
    right = len(units) - 1
    if timestamp >= int(units[right]["storeTime"]):
        return int(units[right]["msgBaseOffset"])
    at = binary_search_right(units["storeTime"], 0, right, timestamp, boundary)
    return int(units[at]["msgBaseOffset"]) if at >= 0 else -1


def binary_search_right(values: np.ndarray, left: int, right: int, target: int, boundary: str) -> int:
    """BatchConsumeQueue.binarySearchRight over unit indexes (the broker's byte positions / 46: the same
    halving, its ceil() rounding a byte middle down to a unit): the unit it stops at, -1 for none. As the
    broker's, UPPER returns -1 when the target falls between two units' values."""
    while left <= right:
        mid = (left + right) // 2
        value = int(values[mid])
        if mid == right:
            return mid if value >= target else -1
        if mid == left:
            if value >= target:
                return mid
            left = mid + 1
        elif boundary == "lower":
            left, right = (mid + 1, right) if value < target else (left, mid)
        else:
            left, right = (mid, right) if value <= target else (left, mid - 1)
    return -1


def batch_topics(store: Store) -> set[str]:
    """The topics the broker keeps in a BatchConsumeQueue: queue.type=BatchCQ in topics.json (where dispatch
    looks), and every topic directory under batchconsumequeue/ (what ConsumeQueueStore.load loads as one)."""
    try:
        named = batch_cq_topics(broker_config(store, "topics.json").document)
    except ConfigNotRead:  # (configManagerVersion=v2: the directories alone; rebuild refuses inner batches)
        named = set()
    root = store.root / DIRECTORY
    present = {p.name for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()
    return named | present


def queue_type_conflicts(store: Store) -> list[tuple[Path, str, str]]:
    """(directory, topic, the type its config gives) of each topic whose queues lie where ConsumeQueueStore.load
    does not take them (queueTypeShouldBe throws, and the 5.x broker does not start): a batchconsumequeue/ topic
    whose config is not BatchCQ (no topic config, or no queue.type=BatchCQ), a consumequeue/ topic whose config
    is. Empty for a 4.x broker or a RocksDB queue store (neither checks), or where the topic configs cannot be read
    (configManagerVersion=v2)."""
    if store.version.major < 5 or store.parts.queue_store != FILE_STORE:
        return []
    try:
        named = batch_cq_topics(broker_config(store, "topics.json").document)
    except ConfigNotRead:
        return []
    out = []
    for root, batch in ((store.root / DIRECTORY, True), (store.consumequeue_dir, False)):
        for topic in sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else ():
            if (topic in named) != batch:
                out.append((root / topic, topic, "BatchCQ" if topic in named else "SimpleCQ"))
    return out


def file_size(store: Store, queues: list[list[MappedFile]]) -> int:
    """mapperFileSizeBatchConsumeQueue: configured (checked against the files), else what the files show."""
    return settle_file_size(
        queues,
        store.config.mapperFileSizeBatchConsumeQueue or 0,
        "mapperFileSizeBatchConsumeQueue",
        DIRECTORY,
        DEFAULT_FILE_SIZE,
    )


def _queue_dirs(store: Store) -> list[tuple[Path, Path]]:
    root = store.root / DIRECTORY
    return (
        [
            (t, q)
            for t in sorted(root.iterdir())
            if t.is_dir()
            for q in sorted(t.iterdir())
            if q.is_dir() and q.name.isdigit()
        ]
        if root.is_dir()
        else []
    )


def queue_file_size(store: Store) -> int:
    """The store's mapperFileSizeBatchConsumeQueue (file_size over every queue's files)."""
    return file_size(store, [MappedFileQueue([q], 0).files for _, q in _queue_dirs(store)])


def batch_consume_queues(store: Store) -> list[BatchConsumeQueue]:
    """Every queue directory under batchconsumequeue/, topic and queue id in order."""
    size = queue_file_size(store)
    min_phy = store.commitlog.min_offset
    by_cache = store.config.searchBcqByCacheEnable
    return [BatchConsumeQueue(t.name, int(q.name), q, size, min_phy, by_cache) for t, q in _queue_dirs(store)]
