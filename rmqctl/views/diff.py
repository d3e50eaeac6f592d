"""`diff`: where two copies of one broker's store (a master and its slave after a failover, or two copies of a
store) diverge. The commitlog is compared byte for byte over the range both hold, file by file in blocks
(memcmp on the mapped pages: on one machine that is faster than a CRC per block, and exact); the first
differing offset is then found inside the block, and the record there is shown on each side. The consume
queues each broker reads (file queues, or the RocksDB consume queue of storeType=defaultRocksDB) are compared
unit by unit; topics, subscription groups and consumer offsets entry by entry, as each side's broker
loads them (the JSON files, or the RocksDB config databases of storeType=defaultRocksDB). 5.x controller mode's
epochs say which epoch each side's tail belongs to. Read-only.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import schema as S
from ..configfiles import bean_field, committed_offsets, read_broker_identity, read_epochs
from ..rocksdbconfig import KINDS, OFFSET_FILES, broker_config, consumer_offsets_file
from ..errors import FileGone, StoreError
from ..live import head_moved
from ..rocksdbcq import UNIT_VALUE
from ..store import Store, queue_keys
from .inspect import commitlog_end, locate

BLOCK = 4 << 20


@dataclasses.dataclass
class QueueDiff:
    topic: str
    queueId: int
    minOffsetA: int | None
    maxOffsetA: int | None
    minOffsetB: int | None
    maxOffsetB: int | None
    firstDifference: int | None  # queue offset of the first unit that differs in the common range
    relation: str  # identical | a-prefix-of-b | b-prefix-of-a | diverged | only-in-a | only-in-b

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class ConfigDiff:
    """One config table on both sides: its entries (offsets: per topic@group and queue) only on one side, or on
    both with different values."""

    config: str
    sourceA: str
    sourceB: str
    entriesA: int
    entriesB: int
    onlyInA: list[str]
    onlyInB: list[str]
    differ: list[str]

    @property
    def same(self) -> bool:
        return not (self.onlyInA or self.onlyInB or self.differ)


@dataclasses.dataclass
class DiffResult:
    a: dict  # per side: minOffset, maxOffset, queueStore, epochs, identity
    b: dict
    commonFrom: int
    commonTo: int
    firstDifference: int | None  # commitlog offset
    relation: str  # identical | a-prefix-of-b | b-prefix-of-a | diverged | disjoint
    messageA: dict | None  # the record at or around the first difference, on each side
    messageB: dict | None
    queues: list[QueueDiff]
    configs: list[ConfigDiff]
    notes: list[str]

    @property
    def same(self) -> bool:
        return (
            self.relation == "identical"
            and all(q.relation == "identical" for q in self.queues)
            and all(c.same for c in self.configs)
        )

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["queues"] = [q.to_dict() for q in self.queues]
        return d


def _side(store: Store) -> dict:
    files = store.commitlog.files
    end, _ = commitlog_end(store)
    lo = files[0].start if files else 0
    epochs, source = read_epochs(store.root)
    return {
        "store": str(store.root),
        "minOffset": lo,
        "maxOffset": end if end is not None else lo,
        "queueStore": store.parts.queue_store,  # the consume queues its broker reads (storeType)
        "epochs": [dataclasses.asdict(e) for e in epochs],
        "epochFile": source,
        "identity": read_broker_identity(store.root),
    }


def first_difference(a: Store, b: Store, start: int, end: int) -> int | None:
    """The first commitlog offset in [start, end) where the two stores' bytes differ."""
    pos = start
    while pos < end:
        fa, fb = a.commitlog.find(pos), b.commitlog.find(pos)
        if fa is None or fb is None:
            return pos
        try:
            stop = min(end, fa.start + len(fa.buf), fb.start + len(fb.buf), pos + BLOCK)
        except FileGone as e:  # a live side's broker deleted its expired head since it was listed: compared past it
            gone, side = (fa, a) if e.path == fa.path else (fb, b)
            head_moved(side.live, gone, e)
            pos = gone.start + side.commitlog.file_size
            continue
        if stop <= pos:
            return pos
        ma = memoryview(fa.buf)[pos - fa.start : stop - fa.start]
        mb = memoryview(fb.buf)[pos - fb.start : stop - fb.start]
        if ma != mb:
            diff = np.frombuffer(ma, np.uint8) != np.frombuffer(mb, np.uint8)
            return pos + int(np.argmax(diff))
        pos = stop
    return None


def epoch_of(epochs: list[dict], offset: int) -> int | None:
    """The epoch whose range holds `offset` (each epoch runs from its start offset to the next one's)."""
    found = None
    for e in epochs:
        if e["startOffset"] <= offset:
            found = e["epoch"]
    return found


def _record_around(store: Store, offset: int) -> dict:
    """The record that starts at or covers `offset` (locate's view of it)."""
    where = locate(store, offset)
    if not where["recordStart"] and "insideRecordAt" in where:
        return {**locate(store, where["insideRecordAt"]), "differenceAt": offset}
    return where


def diff_stores(a: Store, b: Store) -> DiffResult:
    sa, sb = _side(a), _side(b)
    notes = []
    if a.commitlog.file_size != b.commitlog.file_size:
        notes.append(
            f"commitlog file sizes differ ({a.commitlog.file_size} and {b.commitlog.file_size}): "
            "not copies of one broker"
        )
    lo, hi = max(sa["minOffset"], sb["minOffset"]), min(sa["maxOffset"], sb["maxOffset"])
    if sa["minOffset"] != sb["minOffset"]:
        notes.append(
            f"the stores start at different offsets ({sa['minOffset']} and {sb['minOffset']}): "
            "cleanup removed different files; only the common range is compared"
        )
    first = first_difference(a, b, lo, hi) if lo < hi else None
    if lo >= hi and (sa["maxOffset"] > sa["minOffset"] and sb["maxOffset"] > sb["minOffset"]):
        relation = "disjoint"
    elif first is not None:
        relation = "diverged"
    elif sa["maxOffset"] == sb["maxOffset"]:
        relation = "identical"
    else:
        relation = "a-prefix-of-b" if sa["maxOffset"] < sb["maxOffset"] else "b-prefix-of-a"
    # where the two part: the first differing byte, or the end of the shorter side
    at = first if first is not None else (hi if relation in ("a-prefix-of-b", "b-prefix-of-a") else None)
    msg_a = _record_around(a, at) if at is not None and at < sa["maxOffset"] else None
    msg_b = _record_around(b, at) if at is not None and at < sb["maxOffset"] else None
    for side, name in ((sa, "A"), (sb, "B")):
        if side["epochs"]:
            tail = epoch_of(side["epochs"], max(side["maxOffset"] - 1, 0))
            notes.append(f"{name}: tail at {side['maxOffset']} belongs to epoch {tail} ({side['epochFile']})")
    if first is not None and sa["epochs"] and sb["epochs"]:
        notes.append(
            f"at the first difference {first}: epoch {epoch_of(sa['epochs'], first)} on A, "
            f"{epoch_of(sb['epochs'], first)} on B"
        )
    return DiffResult(sa, sb, lo, hi, first, relation, msg_a, msg_b, diff_queues(a, b), diff_configs(a, b), notes)


def _units(store: Store, topic: str, qid: int) -> tuple[int, np.ndarray]:
    """(first queue offset, units as one array) of a queue the broker reads: its file queue's written units, or
    its RocksDB queue's units (with their store time), which must be contiguous to be compared."""
    rocks = store.rocks_queues
    if rocks is not None:
        batches = list(rocks.units(topic, qid))
        if not batches:
            return 0, np.empty(0, UNIT_VALUE)
        offsets = np.concatenate([o for o, _ in batches])
        if len(offsets) and offsets[-1] - offsets[0] != len(offsets) - 1:
            gap = int(offsets[np.flatnonzero(np.diff(offsets) != 1)[0]]) + 1
            raise StoreError(
                f"unit column family: {topic}/{qid} has no unit at queue offset {gap} between its first "
                "and last: diff compares contiguous queues only",
                rocks.directory,
            )
        return int(offsets[0]), np.concatenate([u for _, u in batches])
    cq = store.consume_queue(topic, qid)
    parts, first = [], None
    for start, f, written, arr in cq.units():
        if first is None:
            first = start
        parts.append(np.asarray(arr[:written]))
        if written < len(arr):
            break
    return (first or 0), (np.concatenate(parts) if parts else np.empty(0, S.CQ_DTYPE))


def differing(ua: np.ndarray, ub: np.ndarray) -> np.ndarray:
    """Where two runs of units of the same length differ, over the fields both kinds hold (a file unit has no
    store time: a RocksDB unit's is compared with another RocksDB unit's only)."""
    fields = [n for n in ua.dtype.names if n in ub.dtype.names]
    return np.flatnonzero(np.logical_or.reduce([ua[n].astype(np.int64) != ub[n].astype(np.int64) for n in fields]))


def diff_queues(a: Store, b: Store) -> list[QueueDiff]:
    """Every queue either broker reads (file or RocksDB consume queues), unit by unit."""
    qa, qb = set(queue_keys(a)), set(queue_keys(b))
    out = []
    for topic, qid in sorted(qa | qb):
        if (topic, qid) not in qb:
            fa, ua = _units(a, topic, qid)
            out.append(QueueDiff(topic, qid, served_min(a, topic, qid), fa + len(ua), None, None, None, "only-in-a"))
            continue
        if (topic, qid) not in qa:
            fb, ub = _units(b, topic, qid)
            out.append(QueueDiff(topic, qid, None, None, served_min(b, topic, qid), fb + len(ub), None, "only-in-b"))
            continue
        fa, ua = _units(a, topic, qid)
        fb, ub = _units(b, topic, qid)
        lo, hi = max(fa, fb), min(fa + len(ua), fb + len(ub))
        first = None
        if lo < hi:
            differs = differing(ua[lo - fa : hi - fa], ub[lo - fb : hi - fb])
            first = lo + int(differs[0]) if len(differs) else None
        ea, eb = fa + len(ua), fb + len(ub)
        if first is not None:
            relation = "diverged"
        elif ea == eb:
            relation = "identical"
        else:
            relation = "a-prefix-of-b" if ea < eb else "b-prefix-of-a"
        min_a, min_b = served_min(a, topic, qid), served_min(b, topic, qid)
        out.append(QueueDiff(topic, qid, min_a, ea, min_b, eb, first, relation))
    return out


def served_min(store: Store, topic: str, qid: int) -> int:
    """The queue's min offset as the loaded broker serves it: past the units its cleanup left below the
    commitlog's min offset, which the units compared still include (both copies may hold them)."""
    min_phy = store.commitlog.min_offset
    rocks = store.rocks_queues
    if rocks is not None:
        return rocks.min_offset(rocks.queue(topic, qid), min_phy)
    return store.consume_queue(topic, qid).loaded_range(min_phy, store.version.major)[0]


def _entries(store: Store, name: str) -> tuple[str, dict | None]:
    """(where the broker loads it from, its entries), offsets keyed `topic@group queue N` (from the offset
    config the broker loads: consumer_offsets_file); None: not loaded."""
    if name == OFFSET_FILES[0]:
        name = consumer_offsets_file(store)
    c = broker_config(store, name)
    source = str(c.main.path if c.loaded_from != "bak" else c.bak.path)
    doc = c.document
    if not isinstance(doc, dict):
        return source, None
    if name in OFFSET_FILES:
        entries, _ = committed_offsets(doc, lmq=name == OFFSET_FILES[1])
        return source, {f"{e.topic}@{e.group} queue {e.queueId}": e.offset for e in entries}
    table = bean_field(doc, KINDS[name].table)
    return source, table if isinstance(table, dict) else None


def diff_configs(a: Store, b: Store) -> list[ConfigDiff]:
    """Topics, subscription groups and consumer offsets of both sides, where either side has them."""
    out = []
    for name in KINDS:
        (source_a, ta), (source_b, tb) = _entries(a, name), _entries(b, name)
        if ta is None and tb is None:
            continue
        ta, tb = ta or {}, tb or {}
        out.append(
            ConfigDiff(
                name,
                source_a,
                source_b,
                len(ta),
                len(tb),
                sorted(ta.keys() - tb.keys()),
                sorted(tb.keys() - ta.keys()),
                sorted(k for k in ta.keys() & tb.keys() if ta[k] != tb[k]),
            )
        )
    return out
