"""A double-write store (develop's CombineConsumeQueueStore, rocksdbCQDoubleWriteEnable=true): the file queues the
broker reads and the RocksDB copy written beside them must hold the same units, or switching the broker to the
RocksDB queue serves other data. An offline checkRocksdbCqWriteProgress (CombineConsumeQueueStore
.doCheckCqWriteProgress), over every unit of every queue rather than up to the first difference, store time
included (the RocksDB unit stores it; the file unit's is its record's), and the max offsets that
verifyAndInitOffsetForAllStore compares at start.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import StoreError
from ..findings import CONSUMEQUEUE, Findings
from ..rocksdbcq import RocksConsumeQueues
from ..rules import record_expired
from ..store import Store
from ..views.offsets import CommitLogTimes

KIND = "rocksdb-cq-double-write"


def check_double_write(store: Store) -> Findings:
    """Every file queue against the RocksDB copy's queue of the same name, and the copy's other queues. A copy
    RocksDB cannot read is one finding, not the end of verify: the broker reads the file queues (5.3.3 never
    opens the copy), and only a broker switched to the copy would fail on it."""
    found = Findings()
    rocks = RocksConsumeQueues(store.consumequeue_dir)
    try:
        found += _compare(store, rocks)
    except StoreError as e:
        if e.path is None or Path(e.path) != rocks.directory:  # (a commitlog file gone under a live store, say)
            raise
        _differs(
            found,
            rocks,
            None,
            f"the RocksDB copy cannot be read ({e.detail}): a broker switched to it (the double write's "
            "purpose) could not serve from it; the file queues, which the broker reads, are checked as usual",
        )
    finally:
        rocks.close()
    return found


def _compare(store: Store, rocks: RocksConsumeQueues) -> Findings:
    """Each file queue against the copy's queue of its name, then the copy's queues the files lack."""
    found = Findings()
    times = CommitLogTimes(store)
    copies = {(q.topic, q.queue_id): q for q in rocks.queues()}
    for cq in store.consume_queues():
        found += _compare_queue(rocks, times, cq, copies.pop((cq.topic, cq.queue_id), None))
    for (topic, qid), q in sorted(copies.items()):
        if q.max_offset:
            _differs(
                found,
                rocks,
                None,
                f"{topic}/{qid}: the RocksDB copy holds queue offsets up to {q.max_offset - 1}, the file "
                "queues have no such queue",
            )
    return found


def _compare_queue(rocks: RocksConsumeQueues, times: CommitLogTimes, cq, copy) -> Findings:
    queue = f"{cq.topic}/{cq.queue_id}"
    found = Findings()
    differing, first, end = 0, None, 0
    for start, f, written, arr in cq.units():
        units = arr[:written]
        end = start + written
        got = {}
        for qoffs, values in rocks.units(cq.topic, cq.queue_id, start, end):
            got.update(zip(qoffs.tolist(), values.tolist()))
        for i, u in enumerate(units.tolist()):
            off, size, tags = u
            if record_expired(off, times.min_offset):  # its record went with the cleanup: neither store serves it
                continue
            have, stored = got.get(start + i), times.store_time(off, size)
            # (-1: no record there to read a time from, a torn tail's: that unit's own findings say so)
            if have is None or have[:3] != (off, size, tags) or (stored != -1 and have[3] != stored):
                differing += 1
                first = first or (start + i, (off, size, tags, stored), have)
        f.release()
        if written < len(arr):
            break
    rocks_end = copy.max_offset if copy is not None else 0
    if rocks_end != end:
        _differs(
            found,
            rocks,
            None,
            f"{queue}: the file queue ends at queue offset {end}, the RocksDB copy at {rocks_end} (the max "
            "offsets CombineConsumeQueueStore compares at start)",
        )
    if differing:
        qoff, want, have = first
        _differs(
            found,
            rocks,
            want[0],
            f"{queue}: {differing} unit(s) of the file queue differ in the RocksDB copy (first at queue offset "
            f"{qoff}: file (offset, size, tagsCode, store time) {want}, RocksDB {have or 'no unit'})",
        )
    return found


def _differs(found: Findings, rocks: RocksConsumeQueues, offset: int | None, detail: str) -> None:
    """A way the RocksDB copy differs from the file queues: an error at the copy's directory."""
    found.add(CONSUMEQUEUE, KIND, "error", rocks.directory, None, offset, detail)
