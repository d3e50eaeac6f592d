"""The broker's dispatch of a whole commitlog file at once: what dispatch.py decides record by record
(which consumequeue entries, their tagsCode, which index keys and their hashes), computed for every record
of the file in one compiled pass (engine/dispatch.py), so a rebuild costs a few times a plain header walk
instead of a Python decode per record.

dispatch.py stays the reference. The compiled pass flags the records it leaves to it (a DELAY property,
INNER_MULTI_DISPATCH with multi-dispatch on, text that is not well-formed UTF-8); they go through
read_record + cq_targets / tags_code / index_keys here and their entries and keys are merged in, in record
order. A record whose lengths do not add up ends the batch, as read_record's refusal ends the reference
scan of that file.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
from collections import Counter
from typing import Callable

import numpy as np

from .. import schema as S
from ..budget import block_sigint_here
from ..config import BrokerConfig
from ..dispatch import cq_targets, dispatch_failure, index_key_hash, index_keys, reput_stuck_at, tags_code
from ..errors import StoreError
from ..engine import available_cores, dispatch_decode, dispatch_walk, put_units_in_order
from ..record import Message, read_record
from ..store import valid_topic_dir_name
from ..checks.links import queue_order
from .writers import Dispatcher, new_file_sizes


MIN_PART = 4096  # records: fewer are not worth a thread


@dataclasses.dataclass
class FileDispatch:
    """What dispatching the records of one file gives, in record order."""

    position: np.ndarray  # record start in the file
    size: np.ndarray
    phy: np.ndarray  # PHYSICALOFFSET field: what DispatchRequest carries
    store_ts: np.ndarray
    queue_id: np.ndarray
    queue_offset: np.ndarray
    sysflag: np.ndarray
    topic: np.ndarray  # index into `topics`
    tags: np.ndarray  # tagsCode
    reference: np.ndarray  # records that went through dispatch.py
    lmq: list  # (record, queue name, queueId, queue offset) of each LMQ entry (INNER_MULTI_DISPATCH)
    # consumequeue entries: record index, topic (index into `topics`), queueId, queueOffset, tagsCode
    cq_record: np.ndarray
    cq_topic: np.ndarray
    cq_qid: np.ndarray
    cq_qoff: np.ndarray
    cq_tags: np.ndarray
    topics: list[str]
    # index keys: record index and IndexService hash (abs of String.hashCode of topic#key)
    key_record: np.ndarray
    key_hash: np.ndarray
    stop: int  # where the records ended (BLANK, end of data, or a record read_record refuses)

    @property
    def reference_records(self) -> int:
        return int(np.count_nonzero(self.reference))


def record_starts(buf, limit: int, allow_v2: bool, start: int, stop_at: int) -> tuple[np.ndarray, int]:
    """The header walk over a commitlog file's first `limit` bytes from `start`: where its records start,
    and where the walk stopped: a BLANK, the end, bytes that cannot start a record, or (at or past
    `stop_at`) the end of the window asked for."""
    return dispatch_walk(np.frombuffer(buf, dtype=np.uint8, count=limit), limit, allow_v2, start, stop_at)


def _decode_parallel(
    u8: np.ndarray,
    starts: np.ndarray,
    stop: int,
    allow_v2: bool,
    multi_dispatch: bool,
    with_keys: bool,
    jobs: int | None,
) -> tuple:
    """The records at `starts` decoded in `jobs` threads, up to the first one a kernel cannot decode: (their
    columns: position, size, phy, store_ts, qid, qoff, sysflag, topic, tags, reference; topic name -> id; key
    records; key hashes; where dispatch stops; how many were decoded)."""
    n = len(starts)
    size, phy, store_ts, qid, qoff, sysflag, topic, tags = (np.empty(n, np.int64) for _ in range(8))
    reference = np.empty(n, np.bool_)
    bounds = np.linspace(0, n, max(1, min(jobs or available_cores(), n // MIN_PART)) + 1).astype(np.int64)

    def decode(lo: int, hi: int):
        return dispatch_decode(
            u8,
            starts[lo:hi],
            allow_v2,
            multi_dispatch,
            with_keys,
            size[lo:hi],
            phy[lo:hi],
            store_ts[lo:hi],
            qid[lo:hi],
            qoff[lo:hi],
            sysflag[lo:hi],
            topic[lo:hi],
            tags[lo:hi],
            reference[lo:hi],
        )

    if len(bounds) == 2:  # one part: decoded here; a thread made for it would only wait for a core to run on
        decoded = [decode(0, n)]
    else:
        with concurrent.futures.ThreadPoolExecutor(len(bounds) - 1, initializer=block_sigint_here) as pool:
            decoded = list(pool.map(decode, bounds[:-1], bounds[1:]))
    topic_ids: dict[str, int] = {}
    keys_rec, keys_hash = [], []
    done = 0
    for lo, hi, (reps, key_record, key_hash, decoded_here) in zip(bounds[:-1], bounds[1:], decoded):
        # topic ids are per part; byte strings that decode to one name (malformed UTF-8) become one id
        renumber = np.array(
            [
                topic_ids.setdefault(u8[a : a + k].tobytes().decode("utf-8", "replace"), len(topic_ids))
                for a, k in reps.tolist()
            ],
            dtype=np.int64,
        )
        if len(renumber) and np.any(renumber != np.arange(len(renumber))):
            topic[lo : lo + decoded_here] = renumber[topic[lo : lo + decoded_here]]
        keys_rec.append(key_record + lo if lo else key_record)
        keys_hash.append(key_hash)
        done = lo + decoded_here
        if decoded_here < hi - lo:  # read_record will say what it is; nothing after it is dispatched
            stop = int(starts[done])
            break
    columns = tuple(a[:done] for a in (starts, size, phy, store_ts, qid, qoff, sysflag, topic, tags, reference))
    key_record, key_hash = (
        (keys_rec[0], keys_hash[0]) if len(keys_rec) == 1 else (np.concatenate(keys_rec), np.concatenate(keys_hash))
    )
    return columns, topic_ids, key_record, key_hash, stop, done


def dispatch_file(
    buf,
    limit: int,
    config: BrokerConfig,
    allow_v2: bool,
    with_keys: bool = True,
    jobs: int | None = None,
    starts: np.ndarray | None = None,
    file=None,
) -> FileDispatch:
    """Dispatch the records of one file: the header walk (or the record `starts` given: a DLedger data file's
    entry bodies), then the records decoded in `jobs` threads (default: all cores; the kernels run without
    the GIL). StoreError (naming the record in `file`) at a record the broker's reput never gets past
    (dispatch.reput_stuck_at): what it dispatches there is no store's, so no writer writes it."""
    u8 = np.frombuffer(buf, dtype=np.uint8, count=limit)
    starts, stop = dispatch_walk(u8, limit, allow_v2, 0, limit) if starts is None else (starts, limit)
    multi = config.enableMultiDispatch
    decoded, topic_ids, key_record, key_hash, stop, done = _decode_parallel(
        u8, starts, stop, allow_v2, multi, with_keys, jobs
    )
    decoded, stop = _cut_at_failure(buf, limit, allow_v2, decoded, stop)
    position, size, phy, store_ts, qid, qoff, sysflag, topic, tags, reference = decoded
    done = len(position)
    key_record, key_hash = key_record[key_record < done], key_hash[key_record < done]
    topics = list(topic_ids)
    t = sysflag & S.TRANSACTION_MASK
    vec = ((t == S.TRANSACTION_NOT_TYPE) | (t == S.TRANSACTION_COMMIT_TYPE)) & ~reference
    if vec.all():  # every record: the columns themselves
        cq = [(np.arange(done, dtype=np.int64), topic, qid, qoff, tags)]
    else:
        cq = [(np.flatnonzero(vec), topic[vec], qid[vec], qoff[vec], tags[vec])]
    keys = [(key_record, None, key_hash)]
    ref = np.flatnonzero(reference)
    lmq = []
    for r in ref.tolist():
        m: Message = _past_the_reput(read_record(buf, int(position[r]), limit, allow_v2), config, allow_v2, file)
        code = tags[r] = tags_code(m, config)
        targets = cq_targets(m, config, allow_v2)
        lmq += [(r, *t) for t in targets[1:]]
        for name, q, o in targets:
            t = topic_ids.setdefault(name, len(topics))
            if t == len(topics):
                topics.append(name)
            cq.append((np.array([r]), np.array([t]), np.array([q]), np.array([o]), np.array([code])))
        hashes = [index_key_hash(k) for k in index_keys(m)] if with_keys else []
        keys.append(
            (
                np.full(len(hashes), r, np.int64),
                np.arange(len(hashes), dtype=np.int64),
                np.array(hashes, dtype=np.int64),
            )
        )
    columns = dict(
        position=position,
        size=size,
        phy=phy,
        store_ts=store_ts,
        queue_id=qid,
        queue_offset=qoff,
        sysflag=sysflag,
        topic=topic,
        tags=tags,
        reference=reference,
        lmq=lmq,
        topics=topics,
        stop=stop,
    )
    if not len(ref):
        return FileDispatch(**columns, **_entries(cq[0]), key_record=key_record, key_hash=key_hash)
    # merge the reference records' entries and keys in, in record order
    cq_cols = [np.concatenate([c[i] for c in cq]) for i in range(5)]
    order = np.argsort(cq_cols[0], kind="stable")
    cq_cols = [c[order] for c in cq_cols]
    keys[0] = (key_record, np.zeros(len(key_record), np.int64), key_hash)  # the kernel's keys come first per record
    k_rec, k_rank, k_hash = (np.concatenate([k[i] for k in keys]) for i in range(3))
    k_order = np.lexsort((k_rank, k_rec))
    k_rec, k_hash = k_rec[k_order], k_hash[k_order]
    return FileDispatch(**columns, **_entries(cq_cols), key_record=k_rec, key_hash=k_hash)


def _past_the_reput(m: Message, config: BrokerConfig, allow_v2: bool, file) -> Message:
    """The record, unless the broker's reput never gets past it (StoreError naming it in `file`)."""
    if (stuck := reput_stuck_at(m, config, allow_v2)) is not None:
        raise StoreError(stuck, *((file.path, file.start + m.position) if file is not None else ()))
    return m


def _cut_at_failure(buf, limit: int, allow_v2: bool, decoded: tuple, stop: int) -> tuple[tuple, int]:
    """The decoded columns up to the first record the reput's check fails (dispatch_failure: only records the
    kernels leave to the reference can), and where dispatch then stops."""
    position, reference = decoded[0], decoded[-1]
    for r in np.flatnonzero(reference).tolist():
        if dispatch_failure(read_record(buf, int(position[r]), limit, allow_v2), allow_v2) is not None:
            return tuple(c[:r] for c in decoded), int(position[r])
    return decoded, stop


def dispatch_range(store, lo: int, hi: int, config: BrokerConfig, allow_v2: bool, with_keys: bool = True):
    """dispatch_file over the records of [lo, hi) of the commitlog (`lo` a record's start, `hi` the end of one:
    records the recovery walk accepted), a file at a time: (file, its FileDispatch), the file mapped until
    the next one is asked for."""
    size = store.commitlog.file_size
    for f in store.commitlog.files:
        if f.start + size <= lo or f.start >= hi:
            continue
        first, limit = max(lo - f.start, 0), min(hi - f.start, size)
        try:
            starts, _ = dispatch_walk(np.frombuffer(f.buf, np.uint8, count=limit), limit, allow_v2, first, limit)
            yield f, dispatch_file(f.buf, limit, config, allow_v2, with_keys, starts=starts, file=f)
        finally:
            f.release()


def queue_ends(b: FileDispatch) -> dict[tuple[str, int], int]:
    """Each queue's next offset after the consumequeue entries of `b`: its highest queue offset + 1."""
    if not len(b.cq_record):
        return {}
    keys, inverse = np.unique(np.stack([b.cq_topic, b.cq_qid], axis=1), axis=0, return_inverse=True)
    top = np.full(len(keys), np.iinfo(np.int64).min, np.int64)
    np.maximum.at(top, inverse.ravel(), b.cq_qoff)
    return {(b.topics[t], q): int(o) + 1 for (t, q), o in zip(keys.tolist(), top.tolist())}


def indexed_from(index, b: FileDispatch) -> int:
    """The first record of `b` IndexService.buildIndex does not skip: those below the last index file's
    endPhyOffset are indexed already (a prefix, in commitlog order); 0 for records out of order."""
    if not index.files or not np.all(np.diff(b.phy) > 0):
        return 0
    return int(np.searchsorted(b.phy, index.files[-1].end_phy))


def new_keys(index, b: FileDispatch) -> int:
    """The index keys dispatching `b` adds (at most: a record out of order may be skipped)."""
    return int(np.count_nonzero(b.key_record >= indexed_from(index, b)))


def _entries(cq: tuple | list) -> dict:
    """FileDispatch's consumequeue entry columns from (record, topic, queueId, queueOffset, tagsCode)."""
    return dict(zip(("cq_record", "cq_topic", "cq_qid", "cq_qoff", "cq_tags"), cq))


def first_bad_queue(b: FileDispatch, rows: np.ndarray) -> tuple[str, int] | None:
    """(queue name, record position) of the first record, in commitlog order, among the entries `rows` of `b` whose
    queue cannot be a directory name (write_in_order refuses it); None when every queue can be one."""
    bad_topics = [k for k, name in enumerate(b.topics) if not valid_topic_dir_name(name)]
    rows = rows[np.isin(b.cq_topic[rows], bad_topics)]
    if not len(rows):
        return None
    first = rows[np.argmin(b.cq_record[rows])]
    return b.topics[b.cq_topic[first]], int(b.position[b.cq_record[first]])


def first_inner_batch(b: FileDispatch, rows: np.ndarray) -> tuple[str, int] | None:
    """(topic, record position) of the first inner batch (sysFlag INNER_BATCH), in commitlog order, among the
    entries `rows` of `b` that go to the record's own topic: only a BatchConsumeQueue serves one, whose units
    cover its INNER_NUM queue offsets; None when there is none."""
    records = b.cq_record[rows]
    rows = rows[(b.sysflag[records] & S.INNER_BATCH_FLAG != 0) & (b.cq_topic[rows] == b.topic[records])]
    if not len(rows):
        return None
    first = rows[np.argmin(b.cq_record[rows])]
    return b.topics[b.cq_topic[first]], int(b.position[b.cq_record[first]])


class BatchWriter:
    """What dispatch_file computed, written into a Dispatcher's consumequeues and index with the outcome of
    Dispatcher.dispatch record by record: a queue's run of entries in bulk (put_run), keys in bulk when no
    record is already indexed (build_many), anything else one entry or one record at a time. A BatchCQ topic's
    own queue gets its BatchConsumeQueue unit instead (Dispatcher.dispatch_batch, from the record: its
    INNER_BASE / INNER_NUM are not in the columns). Counts the entries per selected queue, the units per
    BatchConsumeQueue and the keys; `refuse(topic, position)` raises for a topic that cannot be a directory
    name; write() also `refuse(topic, position, inner_batch=True)` for an inner batch bound for a consumequeue."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        allow_v2: bool,
        build_cq: bool,
        build_index: bool,
        selected: Callable[[str, int], bool] | None = None,
    ):
        self.dispatcher, self.allow_v2, self.selected = dispatcher, allow_v2, selected
        self.build_cq, self.build_index = build_cq, build_index and dispatcher.index is not None
        self.queued: Counter = Counter()  # (topic, queueId) -> entries dispatched to it
        self.queued_batch: Counter = Counter()  # the same for BatchConsumeQueue units
        self.keys = 0

    def space_needed(self, batches: list[FileDispatch]) -> list[int]:
        """writers.new_file_sizes of what writing `batches` adds."""
        units: dict[tuple[str, int], list[int]] = {}
        keys = 0
        for b in batches:
            if self.build_cq and len(b.cq_record):
                queue = b.cq_topic * (1 << 32) + b.cq_qid
                _, first, count = np.unique(queue, return_index=True, return_counts=True)
                for i, n in zip(first.tolist(), count.tolist()):
                    key = (b.topics[b.cq_topic[i]], int(b.cq_qid[i]))
                    if key[0] not in self.dispatcher.batch_topics:  # no consumequeue file: a BatchConsumeQueue
                        units.setdefault(key, [int(b.cq_qoff[i]), 0])[1] += n
            if self.build_index:
                keys += new_keys(self.dispatcher.index, b)
        return new_file_sizes(self.dispatcher, units, keys)

    def write(self, buf, b: FileDispatch, refuse: Callable[..., None]):
        """Dispatch the records of `b` (read from `buf`, one commitlog file), a queue's entries at a time: for
        files no reader sees until they are complete (rebuild's staging)."""
        if not len(b.position):
            return
        if self.build_cq:
            self._queues(buf, b, refuse)
        if self.build_index:
            self._index(buf, b)

    def write_in_order(self, buf, b: FileDispatch, refuse: Callable[[str, int], None]):
        """write() into live files, so that a kill at any moment leaves what the reput resumes from: the keys
        first (a record the index holds is not indexed again), then the consumequeue entries in record order,
        so the entries written are always those of a prefix of the records (the reput starts after the
        furthest entry of any queue; a queue written ahead of another would hide the other's missing ones)."""
        if not len(b.position):
            return
        if self.build_index:
            self._index(buf, b)
        if not self.build_cq or not len(b.cq_record):
            return
        groups, _ = self._groups(b, refuse)
        d = self.dispatcher
        names = b.topics
        done, last_written = self._plain_appends_in_order(b, groups)
        for r, t, q, o, tags in zip(
            b.cq_record[done:].tolist(),
            b.cq_topic[done:].tolist(),
            b.cq_qid[done:].tolist(),
            b.cq_qoff[done:].tolist(),
            b.cq_tags[done:].tolist(),
        ):
            name = names[t]
            if self.selected is not None and not self.selected(name, q):
                continue
            if name in d.batch_topics:
                if self._batch_unit(buf, b, r):
                    last_written = r
                continue
            self.queued[(name, q)] += 1
            status = d.queue(name, q).put(int(b.phy[r]), int(b.size[r]), tags, o)
            if status != "written":
                d.events.append((status, f"{name}/{q}", o, int(b.phy[r])))
            if status in ("written", "out-of-order"):
                last_written = r
        if last_written >= 0:
            d.logics_ts = int(b.store_ts[last_written])

    def _plain_appends_in_order(self, b: FileDispatch, groups: list) -> tuple[int, int]:
        """write_in_order's units in one compiled pass (engine.dispatch.put_units_in_order), in commitlog order,
        when every queue takes its units as plain appends to its last file (put_run's conditions: consecutive
        queue offsets continuing the queue, commitlog ends increasing past its last); up to the first unit
        whose file is full, which put() goes on from. (units written, record of the last one; -1 if none)."""
        d = self.dispatcher
        if self.selected is not None or sum(len(g) for g in groups) != len(b.cq_record):
            return 0, -1
        writers, maps = [], []
        queue_of = np.empty(len(b.cq_record), np.int64)
        for n, g in enumerate(groups):
            w = d.queue(b.topics[b.cq_topic[g[0]]], int(b.cq_qid[g[0]]))
            qoffs, ends = b.cq_qoff[g], b.phy[b.cq_record[g]] + b.size[b.cq_record[g]]
            if int(qoffs[0]) == 0:
                w.open_first()
            if (
                not w.files
                or w.wrote >= w.file_size
                or w.max_queue_offset != int(qoffs[0])
                or np.any(np.diff(qoffs) != 1)
                or np.any(ends[1:] <= ends[:-1])
                or int(ends[0]) <= w.max_physic_offset
            ):
                return 0, -1
            writers.append(w)
            maps.append(np.frombuffer(w.files[-1][1].map, np.uint8))  # held for the kernel's writes through its address
            queue_of[g] = n
        wrote = np.array([w.wrote for w in writers], np.int64)
        rec = b.cq_record
        done = put_units_in_order(
            np.array([m.ctypes.data for m in maps], np.int64),
            wrote,
            writers[0].file_size if writers else 0,
            queue_of,
            b.phy[rec],
            b.size[rec],
            b.cq_tags,
        )
        for n, w in enumerate(writers):
            mine = np.flatnonzero(queue_of[:done] == n)
            if len(mine):
                w.wrote, w.files[-1][1].dirty = int(wrote[n]), True
                last = rec[mine[-1]]
                w.max_physic_offset = int(b.phy[last] + b.size[last])
                self.queued[(b.topics[b.cq_topic[mine[0]]], int(b.cq_qid[mine[0]]))] += len(mine)
        return done, int(rec[done - 1]) if done else -1

    def _groups(self, b: FileDispatch, refuse: Callable[[str, int], None]) -> tuple[list, list]:
        """The entries of `b` by queue (queue_order), of selected queues: those of consumequeues, and those of
        BatchCQ topics' own queues; `refuse` the first record (in commitlog order) whose consumequeue's or
        BatchConsumeQueue's name cannot be a directory name."""
        order = queue_order(b.cq_topic, b.cq_qid, b.cq_record)
        topic, qid = b.cq_topic[order], b.cq_qid[order]
        cuts = np.flatnonzero((topic[1:] != topic[:-1]) | (qid[1:] != qid[:-1])) + 1
        groups = [(order[lo:hi]) for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(order)]) if hi > lo]
        if self.selected is not None:
            groups = [g for g in groups if self.selected(b.topics[b.cq_topic[g[0]]], int(b.cq_qid[g[0]]))]
        batch = [g for g in groups if b.topics[b.cq_topic[g[0]]] in self.dispatcher.batch_topics]
        groups = [g for g in groups if b.topics[b.cq_topic[g[0]]] not in self.dispatcher.batch_topics]
        if (bad := first_bad_queue(b, np.concatenate([np.zeros(0, np.int64), *groups, *batch]))) is not None:
            refuse(*bad)
        return groups, batch

    def _batch_unit(self, buf, b: FileDispatch, r: int) -> bool:
        """Record `r`'s unit into its BatchConsumeQueue (read from the record); False when the broker writes none."""
        m = read_record(buf, int(b.position[r]), len(buf), self.allow_v2)
        if not self.dispatcher.dispatch_batch(m):
            return False
        self.queued_batch[(m.topic, m.queueId)] += 1
        return True

    def _index(self, buf, b: FileDispatch):
        """buildIndex skips records below endPhyOffset: in commitlog order a prefix; the rest go in at once
        (record by record when a skipped one would meet a full file, which the broker rolls over first)."""
        index, first = self.dispatcher.index, indexed_from(self.dispatcher.index, b)
        if np.all(np.diff(b.phy) > 0) and (first == 0 or not index.files[-1].full):
            keys = b.key_record >= first
            self.keys += int(np.count_nonzero(keys))
            at = b.key_record[keys]
            index.build_many(b.key_hash[keys], b.phy[at], b.store_ts[at], int(b.phy[-1]), int(b.store_ts[-1]))
        else:
            for pos in b.position.tolist():
                m = read_record(buf, pos, len(buf), self.allow_v2)
                self.keys += len(index_keys(m))
                index.build(m, m.physicalOffset)

    def _queues(self, buf, b: FileDispatch, refuse: Callable[..., None]):
        d = self.dispatcher
        groups, batch = self._groups(b, refuse)
        # (an inner batch bound for a consumequeue: its units would not match its queue offsets; not staged)
        if (inner := first_inner_batch(b, np.concatenate([np.zeros(0, np.int64), *groups]))) is not None:
            refuse(*inner, inner_batch=True)
        last_written = -1
        for g in batch:  # each BatchConsumeQueue's records in commitlog order
            for r in sorted(set(b.cq_record[g].tolist())):
                if self._batch_unit(buf, b, r):
                    last_written = max(last_written, r)
        for g in groups:
            name, q = b.topics[b.cq_topic[g[0]]], int(b.cq_qid[g[0]])
            rec, qoffs, tags = b.cq_record[g], b.cq_qoff[g], b.cq_tags[g]
            self.queued[(name, q)] += len(g)
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
