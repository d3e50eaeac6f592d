"""What the checks of one verify run share: the record columns the commitlog scan decoded (`Records`), and a
small run context (`Context`): the store, the part and range checked, the damaged commitlog ranges found so
far (so later findings can name their cause), and what is read once per run (consumequeue units, index
structure, the BatchCQ topics, where the broker's recovery starts and its dispatch resumes). The checks
(checks/commitlog.py, checks/links.py, checks/verify.py) take the context and the columns and return their
findings; verify merges them.
"""

from __future__ import annotations

import dataclasses
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import schema as S
from ..batchcq import batch_topics
from ..config import BrokerConfig
from ..findings import Damage
from ..live import bounded_end
from ..recovery import QueuesEnd, recovery_start
from ..rocksdbconfig import configured_topics
from ..rules import deleted_topic, record_expired
from ..store import Store, offset_to_name


@dataclasses.dataclass
class Records:
    """Every well-formed commitlog record checked, in offset order, with what the broker derives from it."""

    off: np.ndarray
    size: np.ndarray
    queue_id: np.ndarray
    queue_offset: np.ndarray
    sysflag: np.ndarray
    store_ts: np.ndarray
    topic: np.ndarray
    tags: np.ndarray
    topics: list[str]
    key_record: np.ndarray
    key_hash: np.ndarray
    lmq: list[tuple[int, str, int, int]]
    inner_num: dict[int, int]
    # the dispatch targets of the run's range, made once (Context.targets) and freed with these records
    targets: "Targets | None" = dataclasses.field(default=None, repr=False, compare=False)

    def find(self, offsets: np.ndarray) -> np.ndarray:
        """Index of the record starting at each offset, -1 where none does."""
        idx = np.searchsorted(self.off, offsets)
        idx = np.minimum(idx, max(len(self.off) - 1, 0))
        hit = (self.off[idx] == offsets) if len(self.off) else np.zeros(len(offsets), bool)
        return np.where(hit, idx, -1)

    def containing(self, offset: int) -> int:
        """Index of the record whose bytes cover `offset`, -1 if none."""
        i = int(np.searchsorted(self.off, offset, side="right")) - 1
        if i >= 0 and offset < self.off[i] + self.size[i]:
            return i
        return -1

    @property
    def dispatched(self) -> np.ndarray:
        t = self.sysflag & S.TRANSACTION_MASK
        return (t == S.TRANSACTION_NOT_TYPE) | (t == S.TRANSACTION_COMMIT_TYPE)

    def describe(self, i: int) -> str:
        return f"{self.topics[self.topic[i]]}/{int(self.queue_id[i])}@{int(self.queue_offset[i])} at {int(self.off[i])}"


class Targets(NamedTuple):
    """Every consumequeue entry the broker's dispatch writes for the records in range: the record's own queue
    for NOT/COMMIT records, plus LMQ queues. Topic ids index `names` (the records' topics, then LMQ queue
    names); `record` is the index of the record in `Records`."""

    topic: np.ndarray
    queue_id: np.ndarray
    queue_offset: np.ndarray
    record: np.ndarray
    names: list[str]


@dataclasses.dataclass(eq=False)
class Context:
    """One verify run: what is checked (the `parts`, the commitlog offsets [start, end), `deep`), on how many
    threads, the queues' `geometry`, and what its checks share."""

    store: Store
    parts: set
    start: int | None
    end: int | None
    deep: bool
    jobs: int
    geometry: dict

    def __post_init__(self):
        store = self.store
        self.config: BrokerConfig = store.config
        self.live = store.live  # a running broker's store: judged as it was when the run began
        self.damage = Damage()
        self.file_size = store.commitlog.file_size
        self.files = store.commitlog.files
        self.logical_end = self.files[0].start if self.files else 0
        self.min_offset = self.files[0].start if self.files else 0
        self.is5 = store.version.major == 5
        self.recovery_cut: int | None = None  # where the broker's next recovery truncates the commitlog
        # read once per run, by whichever check needs them first
        self.queue_units: list | None = None
        self.queues_end: QueuesEnd | None = None  # where the consume queues end (recovery.recovered_queues_end)
        self.redispatch: int | None = None  # where the broker's next start dispatches again from
        self.index_structure: dict | None = None
        self.rocksdb_reading = None  # the RocksDB message store's reading, begun before the walk (verify)

    # what the broker's recovery and dispatch go by, asked of the store once per run by the first check that
    # needs it (what a run does not check is never read)
    @cached_property
    def crashed(self) -> bool:
        return self.store.crashed()

    @cached_property
    def abnormal_start(self) -> int:
        """The index of the file the broker's abnormal recovery starts from (recovery.recovery_start)."""
        return recovery_start(self.store)

    @cached_property
    def configured_topics(self) -> frozenset[str] | None:
        return configured_topics(self.store)

    def deleted_topic(self, topic: str, present: set) -> bool:
        return deleted_topic(topic, self.configured_topics, present)

    @cached_property
    def batch_topics(self) -> frozenset[str]:
        """The topics the broker keeps in BatchConsumeQueues (topics.json, or its RocksDB table; batchconsumequeue/)."""
        return frozenset(batch_topics(self.store))

    def head_moved(self) -> int:
        """On a running broker's store, the commitlog's first offset as the broker's cleaner has left it by now:
        the start of the first listed file still there (files go from the head, CommitLog.deleteExpiredFile).
        `min_offset` follows it, so records below it are expired from here on, as a file cleaned before the run
        is (it never moves back: `expire_below` may have moved it further); each file gone is noted in what moved.
        Returns `min_offset`."""
        if self.live is not None and self.files:  # (never the last file: MappedFileQueue.deleteExpiredFileByTime)
            first = next((f.start for f in self.files[:-1] if f.path.exists()), self.files[-1].start)
            self.min_offset = max(self.min_offset, first)
            for f in self.files:
                if not record_expired(f.start, self.min_offset):
                    break
                if not f.path.exists():
                    self.live.gone(f.path, "its records are expired: the checks leave them out")
        return self.min_offset

    def expire_below(self, offset: int):
        """A running broker's cleaner showed its min offset is past `offset` (it deleted a file by that min
        before the commitlog file below it went: CommitLog.getMinOffset skips a head file shut down but still
        referenced): records below it are expired from here on."""
        self.min_offset = max(self.head_moved(), offset)

    def in_range(self, offsets: np.ndarray) -> np.ndarray:
        ok = np.ones(len(offsets), dtype=bool)
        if self.start is not None:
            ok &= offsets >= self.start
        if self.end is not None:
            ok &= offsets < self.end
        return ok

    @property
    def full_range(self) -> bool:
        return self.start is None and self.end is None

    @property
    def scan_end(self) -> int | None:
        """Where the commitlog's scan stops: `end`, and on a live store no later than the snapshot's end."""
        return bounded_end(self.live, self.end)

    def file_start(self, offset: int) -> int:
        return offset - offset % self.file_size

    def path_of(self, offset: int) -> Path:
        f = self.store.commitlog.find(offset)
        return f.path if f is not None else self.store.commitlog_dirs[0] / offset_to_name(self.file_start(offset))

    def targets(self, rec: Records) -> Targets:
        """The dispatch targets of `rec` in this run's range, computed once per record table and kept with it
        (kept here, they held a window's columns alive while the next window was made)."""
        if rec.targets is None:
            rec.targets = dispatch_targets(rec, self.in_range)
        return rec.targets


def dispatch_targets(rec: Records, in_range) -> Targets:
    names = list(rec.topics)
    ids = {t: i for i, t in enumerate(names)}
    main = np.flatnonzero(rec.dispatched & in_range(rec.off))
    lmq = [(r, name, q, o) for r, name, q, o in rec.lmq if rec.dispatched[r] and in_range(rec.off[r : r + 1])[0]]
    for _, name, _, _ in lmq:
        if name not in ids:
            ids[name] = len(names)
            names.append(name)
    if len(main) == len(rec.off) and not lmq:  # every record has exactly its own entry: no copies
        return Targets(rec.topic, rec.queue_id, rec.queue_offset, main, names)
    topic = np.concatenate([rec.topic[main], np.array([ids[n] for _, n, _, _ in lmq], dtype=np.int64)])
    qid = np.concatenate([rec.queue_id[main], np.array([q for _, _, q, _ in lmq], dtype=np.int64)])
    qoff = np.concatenate([rec.queue_offset[main], np.array([o for _, _, _, o in lmq], dtype=np.int64)])
    ri = np.concatenate([main, np.array([r for r, _, _, _ in lmq], dtype=np.int64)])
    return Targets(topic, qid, qoff, ri, names)


class RecordsBuilder:
    """One Records of slices of chunk results, added in commitlog order: the columns concatenated, topics merged
    by name, record numbers renumbered. Each slice is copied as it is added (a view would keep its chunk's
    whole arrays alive) and the columns are concatenated one at a time, each column's slices freed as soon as
    it is whole, so that the records are held about once while they are assembled, not two or three times."""

    COLUMNS = (
        "off",
        "size",
        "queue_id",
        "queue_offset",
        "sysflag",
        "store_ts",
        "topic",
        "tags",
        "key_record",
        "key_hash",
    )

    def __init__(self):
        self._empty()

    def _empty(self):
        self.index_of: dict[str, int] = {}
        self.cols: dict[str, list] = {k: [] for k in self.COLUMNS}
        self.lmq, self.inner = [], {}
        self.count = 0

    def add(self, r, start: int, a: int, b: int):
        """Records a..b-1 of chunk result `r`, whose file starts at commitlog offset `start`."""
        cols, base = self.cols, self.count
        remap = np.array([self.index_of.setdefault(t, len(self.index_of)) for t in r.topics], dtype=np.int64)
        cols["off"].append(r.pos[a:b] + start)
        for name in ("size", "queue_id", "queue_offset", "sysflag", "store_ts", "tags"):
            cols[name].append(getattr(r, name)[a:b].copy())
        cols["topic"].append(remap[r.topic[a:b]] if b > a else r.topic[:0].copy())
        keys = (r.key_record >= a) & (r.key_record < b)
        cols["key_record"].append(r.key_record[keys] - a + base)
        cols["key_hash"].append(r.key_hash[keys])
        self.lmq += [(k - a + base, *rest) for k, *rest in r.lmq if a <= k < b]
        self.inner.update({k - a + base: v for k, v in r.inner_num.items() if a <= k < b})
        self.count += b - a

    def build(self) -> Records:
        """The Records of everything added; the builder is empty afterwards."""
        cat = {}
        for k in self.COLUMNS:
            parts, self.cols[k] = self.cols[k], []
            cat[k] = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            del parts
        keys = cat["key_record"]
        # each chunk lists its keys by record, except the few of records decoded the slow way
        order = np.argsort(keys, kind="stable") if len(keys) and (np.diff(keys) < 0).any() else slice(None)
        cat["key_record"], cat["key_hash"] = cat["key_record"][order], cat["key_hash"][order]
        out = Records(**cat, topics=sorted(self.index_of, key=self.index_of.get), lmq=self.lmq, inner_num=self.inner)
        self._empty()
        return out


def chunk_records(result) -> Records:
    """A chunk result's own columns as its Records (checks/scan.ChunkResult: the same names, offsets within
    the file): views of its arrays, not copies."""
    fields = (f.name for f in dataclasses.fields(Records) if f.name not in ("off", "targets"))
    return Records(off=result.pos + result.task.file_start, **{name: getattr(result, name) for name in fields})


def records_of(parts) -> Records:
    """One Records of slices of chunk results, (result, file start, first record, end record) in commitlog
    order (RecordsBuilder)."""
    builder = RecordsBuilder()
    for part in parts:
        builder.add(*part)
    return builder.build()
