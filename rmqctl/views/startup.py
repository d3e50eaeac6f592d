"""How long will the broker take to start? What `DefaultMessageStore.load()` and `start()` will read: the
commitlog recovery scan (from the file recovery.normal_recovery_start names, or, when `abort` exists, the
file `recoverAbnormally` picks: recovery.recovery_start), each consumequeue's recovery (its last three files), the index files it maps, and the
messages dispatched again at start (recovery.first_redispatched). The time is an
estimate: those bytes at the speed of a CRC-checked read of a sample of this store's own files, measured now.

Sources: DefaultMessageStore.load/recover/recoverConsumeQueue/start, CommitLog.recoverNormally/
recoverAbnormally, ConsumeQueue.recover.
"""

from __future__ import annotations

import dataclasses
import time
import zlib

from ..recovery import QueuesEnd, first_redispatched, recovered_queues_end, start_file
from ..errors import StoreError
from ..store import Store
from .inspect import commitlog_end

SAMPLE = 64 << 20


@dataclasses.dataclass
class StartupEstimate:
    recovery: str  # normal | abnormal
    firstFile: str | None  # the commitlog file the recovery scan starts from
    commitlogFiles: int  # files the scan reads
    commitlogBytes: int
    consumequeueFiles: int  # files loaded (mapped) at load()
    consumequeueRecoverBytes: int  # read by the consumequeues' recovery
    indexFiles: int
    dispatchBytes: int  # commitlog past the newest consumequeue entry: dispatched again after start
    sampleBytes: int
    measuredMBps: float | None
    estimatedSeconds: float | None
    note: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def line(self) -> str:
        if self.firstFile is None and self.estimatedSeconds is None:
            return f"{self.recovery} recovery: {self.note}"
        t = "unknown" if self.estimatedSeconds is None else f"~{self.estimatedSeconds:.1f} s"
        return (
            f"{self.recovery} recovery from {self.firstFile}: {self.commitlogBytes / 1e6:.1f} MB in "
            f"{self.commitlogFiles} commitlog file(s), {self.consumequeueFiles} consumequeue file(s), "
            f"{self.dispatchBytes / 1e6:.1f} MB to dispatch; {t} (estimate)"
        )


def measure_speed(store: Store, first: int, end: int) -> tuple[int, float | None]:
    """MB/s of reading and CRC-checking up to SAMPLE bytes of the range recovery will scan."""
    files = store.commitlog.files
    todo, done = min(SAMPLE, max(end - first, 0)), 0
    began = time.perf_counter()
    for f in files:
        if done >= todo:
            break
        if f.start + store.commitlog.file_size <= first:
            continue
        try:
            fh = open(f.path, "rb")
        except FileNotFoundError:
            continue  # a running broker deleted it (its expired head) since it was listed: not in the sample
        with fh:
            fh.seek(max(first - f.start, 0))
            while done < todo:
                chunk = fh.read(min(4 << 20, todo - done))
                if not chunk:
                    break
                zlib.crc32(chunk)
                done += len(chunk)
    spent = time.perf_counter() - began
    return done, (done / 1e6 / spent if done and spent > 0 else None)


def queue_recovery(store: Store) -> tuple[int, int, QueuesEnd]:
    """(consumequeue files loaded, bytes their recovery reads, where they end: recovery.recovered_queues_end). A
    RocksDB queue loads no file."""
    ends = recovered_queues_end(store)
    if store.rocks_queues is not None:
        return 0, 0, ends
    cq_files = sum(len(q.files) for q in ends.queues)
    return cq_files, sum(q.walked_bytes() for q in ends.queues), ends


def _dispatch_bytes(store: Store, ends: QueuesEnd, end: int) -> int:
    """The bytes of the records the next start dispatches again. 5.x dispatches the records past
    dispatchFromPhyOffset, one byte before first_redispatched: a record that starts there is not among them."""
    first = first_redispatched(store, ends, end)
    if store.version.major >= 5 and 0 < first < end:
        try:
            first = first - 1 + store.read_message(first - 1)[1].storeSize
        except StoreError:
            pass  # no record starts there: the dispatch begins at the next one
    return max(end - first, 0)


def estimate_startup(store: Store, end: tuple[int | None, list] | None = None) -> StartupEstimate:
    """`end`: inspect.commitlog_end's answer, when the caller has it already."""
    files = store.commitlog.files
    abnormal = store.crashed()  # (a running broker's abort is its running marker)
    if not files:
        return StartupEstimate(
            "abnormal" if abnormal else "normal",
            None,
            0,
            0,
            0,
            0,
            len(store.index_paths()),
            0,
            0,
            None,
            0.0,
            "no commitlog file: nothing to recover",
        )
    if not store.parts.queues_read:
        return StartupEstimate(
            "abnormal" if abnormal else "normal",
            None,
            0,
            0,
            0,
            0,
            len(store.index_paths()),
            0,
            0,
            None,
            None,
            "not estimated: the consume queues, where dispatch resumes, are not read",
        )
    cq_files, cq_recover, ends = queue_recovery(store)
    index = start_file(store, abnormal, lambda: ends.max_phy)
    end, _ = end if end is not None else commitlog_end(store)
    end = end if end is not None else files[index].start
    first = files[index].start
    scan = max(end - first, 0)
    dispatch = _dispatch_bytes(store, ends, end)
    sample, speed = measure_speed(store, first, end)
    seconds = (scan + dispatch) / 1e6 / speed if speed else None
    return StartupEstimate(
        "abnormal" if abnormal else "normal",
        files[index].name,
        sum(1 for f in files[index:] if f.start < max(end, first + 1)),
        scan,
        cq_files,
        cq_recover,
        len(store.index_paths()),
        dispatch,
        sample,
        round(speed, 1) if speed else None,
        round(seconds, 2) if seconds is not None else None,
        "estimate: the recovery scan and the dispatch after start at a CRC-checked read speed measured "
        "on a sample of this store now (a cold disk reads slower; consumequeue loading and the "
        "broker's own start-up are not counted)",
    )
