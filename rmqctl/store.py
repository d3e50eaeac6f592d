"""The store model: the root directory, its MappedFileQueues (commitlog, consumequeues), index files,
checkpoint, abort, lock and config/*.json. Files are mapped read-only for reading; nothing here writes.

Sources: MappedFileQueue.java, DefaultMappedFile.java, ConsumeQueue.java, IndexFile.java, IndexService.java,
StoreCheckpoint.java, DefaultMessageStore.java (apache/rocketmq store module).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import math
import mmap
import os
import queue
import re
import signal
import threading
from collections import Counter
from functools import cached_property
from pathlib import Path
from typing import Iterator

import numpy as np

from . import schema as S
from . import dledger as D
from .brokerversion import SAMPLE_FILES, BrokerVersion, infer, record_style
from .config import JAVA_DEFAULTS, BrokerConfig, split_paths
from .javacompat import parse_long
from .engine import ColumnViews
from .errors import FileGone, StoreError
from .live import Snapshot, bounded_end, head_moved, starts_with_data, take as take_snapshot
from .lock import lock_holder
from .parts import ROCKSDB_STORE, Layout, StoreParts, find_parts
from .rocksdbcq import RocksConsumeQueues
from .rocksdbstore import MessageRocksDB, message_rocksdb
from .schema_metaq import SEGMENT_SUFFIX
from .record import Blank, Message, RecordError, read_record
from .rules import CorrectMinOffsetFailed, corrected_min_logic, index_slot, record_expired, served_units, written_units

DEFAULT_COMMITLOG_SIZE = JAVA_DEFAULTS["mappedFileSizeCommitLog"]
DEFAULT_CQ_SIZE = JAVA_DEFAULTS["mappedFileSizeConsumeQueue"]
DEFAULT_HASH_SLOTS = JAVA_DEFAULTS["maxHashSlotNum"]
DEFAULT_INDEX_NUM = JAVA_DEFAULTS["maxIndexNum"]
FILE_NAME = S.OFFSET_FILE_NAME
INDEX_FILE_NAME = re.compile(r"^\d{17}$")  # the names IndexService gives its files (yyyyMMddHHmmssSSS)


def loaded_index_name(name: str) -> bool:
    """IndexService.load loads a file of index/ as an index file when MappedFile's Long.parseLong reads its name
    (its fileFromOffset), whatever the form; it skips any other (the NumberFormatException is caught)."""
    return parse_long(name) is not None


JAVA_LONG_MAX = (1 << 63) - 1


# madvise through ctypes, which lets other threads run during the call: mmap.madvise and mmap.close hold the
# GIL while the kernel unmaps, ~3 ms for a 64 MiB chunk of read pages, which made verify's threads take turns
_madvise = ctypes.CDLL(None, use_errno=True).madvise
_madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


def give_back_pages(m: mmap.mmap, lo: int = 0, hi: int | None = None):
    """MADV_DONTNEED over the bytes [lo, hi) of the read-only mapping m (lo rounded down to its page): the
    pages stay in the page cache and fault in again if read later; unmapping m then has nothing left to do."""
    hi = len(m) if hi is None else min(hi, len(m))
    lo -= lo % mmap.PAGESIZE
    if hi > lo:
        _madvise(np.frombuffer(m, np.uint8).ctypes.data + lo, hi - lo, mmap.MADV_DONTNEED)


MADV_POPULATE_READ = 22  # Linux 5.14: map the pages in as reads would (EINVAL on older kernels: nothing done)


def map_in_pages(m: mmap.mmap, spans: list[tuple[int, int]]):
    """MADV_POPULATE_READ over the byte spans [lo, hi) of the read-only mapping m, on this thread: one call maps
    in what the walk's reads would fault in a few pages at a time (a fault's trap costs more than the mapping it
    does), for a walk with no pager thread beside it. Spans hold file data only: on tmpfs a read of a hole
    allocates it. A hint: a failed madvise (a file cut short under the walk) changes nothing."""
    if not isinstance(m, mmap.mmap):
        return
    at = np.frombuffer(m, np.uint8).ctypes.data
    for lo, hi in spans:
        lo -= lo % mmap.PAGESIZE
        hi = min(hi, len(m))
        if hi > lo:
            _madvise(at + lo, hi - lo, MADV_POPULATE_READ)


class _Request:
    __slots__ = ("view", "spans", "advice", "cancelled", "served")

    def __init__(self, m: mmap.mmap | None, spans: list[tuple[int, int]], advice: int):
        # the view keeps m mapped (its close() raises) until the request is done; no mapping: a marker (drain)
        self.view = None if m is None else np.frombuffer(m, np.uint8)
        self.spans = [(lo - lo % mmap.PAGESIZE, min(hi, len(m))) for lo, hi in spans if hi > lo] if m else []
        self.advice = advice
        self.cancelled = False
        self.served = threading.Event()


class Pager:
    """A thread that maps a walk's pages in ahead of it (MADV_POPULATE_READ) and gives them back behind it
    (MADV_DONTNEED), so the walking thread neither takes page faults nor tears page tables down: on a warm page
    cache those cost half as much again as the walk itself. Both are hints: a failed madvise (a file cut short
    by a broker's cleanup fails the populate with EFAULT where a read would raise SIGBUS) changes nothing. A
    request holds a view of its mapping until done, so the mapping cannot be unmapped and its addresses reused
    meanwhile (MADV_DONTNEED on memory mapped there since would zero it). At most MOST_PENDING requests wait:
    past that a walk's pages are not mapped in ahead and are given back on the caller's thread, as they are
    where no pager thread can be started, so a pager that falls behind never holds more than a few chunks'
    mappings. A request may be made from any thread, a finalizer's on the pager's own thread included (a
    walk's generator closed by the garbage collector): nothing here waits there."""

    STEP = 8 << 20  # a request is carried out in steps, so a cancelled one stops soon
    MOST_PENDING = 4

    def __init__(self):
        self._started()
        os.register_at_fork(after_in_child=self._started)  # (the thread, and a lock held at the fork, stay behind)

    def _started(self):
        self._requests: queue.SimpleQueue | None = None
        self._thread: threading.Thread | None = None
        self._starting = threading.RLock()  # (a finalizer run while the thread starts may make a request)
        # a token per waiting request, taken without waiting and given back by the pager thread: a SimpleQueue's
        # get and put run no Python code, so no finalizer can run while they hold their lock (a semaphore's
        # Python-level lock could be held by a thread whose collection closed a walk that then asked for one)
        self._slots = queue.SimpleQueue()
        for _ in range(self.MOST_PENDING):
            self._slots.put(None)

    def ahead(self, m, spans: list[tuple[int, int]]) -> _Request | None:
        """Map the byte spans [lo, hi) of read-only mapping m in, in the background. Spans hold file data only:
        on tmpfs a read of a hole allocates it. Returns the request for behind()."""
        return self._put(m, spans, MADV_POPULATE_READ)

    def behind(self, m, lo: int, hi: int, ahead: _Request | None = None) -> _Request | None:
        """Give the pages of [lo, hi) back in the background (they stay in the page cache); what `ahead` has not
        mapped in yet is no longer mapped in."""
        if ahead is not None:
            ahead.cancelled = True
        r = self._put(m, [(lo, hi)], mmap.MADV_DONTNEED)
        if r is None and isinstance(m, mmap.mmap):  # the pager is behind, or there is none: given back here, now
            give_back_pages(m, lo, hi)
        return r

    def drain(self):
        """Wait until every request made before is served, their mappings let go: a walk ends with no file of
        it mapped. Not on the pager's own thread, and not for a pager thread that has died."""
        requests, thread = self._requests, self._thread
        if requests is None or threading.current_thread() is thread:
            return
        marker = _Request(None, [], 0)
        requests.put(marker)  # (never refused: it holds no mapping)
        while not marker.served.wait(0.1):
            if not thread.is_alive():
                return

    @staticmethod
    def done(r: _Request | None) -> bool:
        return r is None or r.served.is_set()

    def _put(self, m, spans: list[tuple[int, int]], advice: int) -> _Request | None:
        if not isinstance(m, mmap.mmap):
            return None
        r = _Request(m, spans, advice)  # (made before the lock is taken: a collection may run while it is made)
        if not r.spans:
            return None
        try:
            self._slots.get_nowait()
        except queue.Empty:
            return None
        if not self._serving():
            self._slots.put(None)
            return None
        self._requests.put(r)
        return r

    def _serving(self) -> bool:
        """The pager thread, started on first use; False when none can be started (a process at its thread limit)."""
        with self._starting:
            if self._thread is None or not self._thread.is_alive():  # (first use, or a thread that died)
                requests = queue.SimpleQueue()
                thread = threading.Thread(target=self._serve, args=(requests,), name="rmqctl-pager", daemon=True)
                try:
                    thread.start()
                except RuntimeError:
                    return False
                self._requests, self._thread = requests, thread
        return True

    def _serve(self, requests: queue.SimpleQueue):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # Ctrl-C is the main thread's
        while True:
            r = requests.get()
            try:
                if r.view is not None:
                    at = r.view.ctypes.data
                    for lo, hi in r.spans:
                        for step in range(lo, hi, Pager.STEP):
                            if r.cancelled:
                                break
                            _madvise(at + step, min(hi, step + Pager.STEP) - step, r.advice)
            finally:
                if r.view is not None:
                    r.view = None
                    self._slots.put(None)
                r.served.set()


PAGER = Pager()


def dledger_committed_end(store: "Store") -> int | None:
    """A DLedger store's committed position per its checkpoint and index (dledger.committed_end): the reput
    dispatches no record past it until the group commits it. None where they do not tell, or not DLedger."""
    if store.dledger is None:
        return None
    try:
        return D.committed_end(D.read_state(store.dledger.checkpoint_path), store.dledger_index)
    except StoreError:  # (index files of different sizes: verify's layout check names them)
        return None


def offset_of_name(name: str) -> int | None:
    """The start offset a file's 20-digit name gives, as Long.parseLong reads it; None for any other name
    (the broker's load fails on it), 99999999999999999999 included."""
    if FILE_NAME.match(name) and int(name) <= JAVA_LONG_MAX:
        return int(name)
    return None


TOPIC_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")


def offset_to_name(offset: int) -> str:
    """UtilAll.offset2FileName."""
    return f"{offset:020d}"


def valid_topic_dir_name(topic: str) -> bool:
    """A topic read from data may become a directory name only if it cannot escape: no separators, no
    dot names, nothing empty, within the 255-char retry/DLQ limit and the filesystem's name limit."""
    return (
        0 < len(topic) <= 255
        and "/" not in topic
        and "\\" not in topic
        and "\0" not in topic
        and topic not in (".", "..")
        and len(topic.encode("utf-8")) <= 255
    )


class MappedFile:
    """One fixed-size file of a MappedFileQueue. Mapped read-only on first use."""

    def __init__(self, path: Path, start: int):
        self.path = path
        self.name = path.name
        self.start = start
        self.length = path.stat().st_size
        self._map = None

    @property
    def buf(self):
        if self._map is None:
            if self.length == 0:
                self._map = b""
            else:
                try:
                    with open(self.path, "rb") as f:
                        self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                except FileNotFoundError:
                    raise FileGone(
                        "deleted while rmqctl read the store (a running broker removed this expired file)", self.path
                    ) from None
        return self._map

    def is_all_zero(self) -> bool:
        """Preallocated files are sparse and all zero; checked in chunks so a big file is cheap. (FileGone for a
        file deleted since it was listed.)"""
        buf = self.buf
        step = 1 << 20
        zero = bytes(step)
        for i in range(0, len(buf), step):
            chunk = buf[i : i + step]
            if chunk != zero[: len(chunk)]:
                return False
        return True

    def close(self):
        """Unmap, or while a view of the mapping is still alive (an Arrow table a notebook kept), leave the
        mapping to that view: it is unmapped when the last view goes."""
        if isinstance(self._map, mmap.mmap):
            try:
                self._map.close()
            except BufferError:
                pass
        self._map = None

    def release(self, paged: bool = False):
        """Give this file's pages back (they stay in the page cache; on the pager's thread when `paged`) and
        unmap it; while a view of it is still alive (a batch a worker thread still reads, the pager's request)
        the mapping is left to that view, as close() leaves it, and goes with the last view: kept here, the
        pages the view faults in again would stay until Store.close(). The next use maps the file again."""
        if isinstance(self._map, mmap.mmap):
            if paged:
                PAGER.behind(self._map, 0, len(self._map))
            else:
                give_back_pages(self._map)
        self.close()

    def drop_pages(self, lo: int, hi: int):
        """Give back the pages of bytes [lo, hi) once read, so a walk through a large file keeps only its
        window resident."""
        if isinstance(self._map, mmap.mmap):
            give_back_pages(self._map, lo, hi)

    def map_in(self, spans: list[tuple[int, int]]):
        """map_in_pages on this thread."""
        map_in_pages(self._map, spans)

    def pages_ahead(self, spans: list[tuple[int, int]]):
        """Map the byte spans in on the pager's thread (Pager.ahead); the request, or None."""
        return PAGER.ahead(self._map, spans)

    def pages_behind(self, lo: int, hi: int):
        """drop_pages on the pager's thread (Pager.behind)."""
        PAGER.behind(self._map, lo, hi)

    @staticmethod
    def pages_settled():
        """Wait until the pager has served every request made so far (Pager.drain)."""
        PAGER.drain()

    def __repr__(self):
        return f"MappedFile({self.path})"


class MappedFileQueue:
    """Files named by their 20-digit start offset, all `file_size` long (MappedFileQueue.load rules).
    Files with other names are listed in `strays` rather than loaded; the broker would fail on them."""

    def __init__(self, dirs: list[Path], file_size: int):
        self.dirs = dirs
        self.file_size = file_size
        self.files: list[MappedFile] = []
        self.strays: list[Path] = []
        for d in dirs:
            if not d.is_dir():
                continue
            for p in d.iterdir():
                if p.is_dir():
                    continue
                start = offset_of_name(p.name)
                if start is None:
                    self.strays.append(p)
                    continue
                try:
                    self.files.append(MappedFile(p, start))
                except FileNotFoundError:
                    continue  # deleted since the directory was listed: a running broker's expired head
        self.files.sort(key=lambda f: f.name)

    @property
    def min_offset(self) -> int:
        return self.files[0].start if self.files else 0

    def find(self, offset: int) -> MappedFile | None:
        """findMappedFileByOffset: the file holding `offset`, by index then by a linear check."""
        if not self.files:
            return None
        first = self.files[0]
        if offset < first.start or offset >= self.files[-1].start + self.file_size:
            return None
        idx = offset // self.file_size - first.start // self.file_size
        if 0 <= idx < len(self.files) and self.files[idx].start <= offset < self.files[idx].start + self.file_size:
            return self.files[idx]
        for f in self.files:
            if f.start <= offset < f.start + self.file_size:
                return f
        return None

    def close(self):
        for f in self.files:
            f.close()


def infer_file_size(queues: list[list[MappedFile]], what: str, setting: str | None, default: int) -> int:
    """A kind's file size when not configured (`queues`: each queue's files in order). Files are preallocated at
    full size, so: the one length of the files with data, unless empty files are there too and the names'
    spacing says otherwise; else (a short or grown file is damage to report, not the geometry) the one spacing of
    consecutive names, when a file has that length; else, with no data at all, that spacing or the default.
    Files whose lengths and names disagree are refused, never guessed around (`setting`: the broker key that
    settles it, None when none does)."""
    lengths = Counter(f.length for files in queues for f in files if f.length)
    gaps = {b.start - a.start for files in queues for a, b in zip(files, files[1:])}
    empty = any(f.length == 0 for files in queues for f in files)
    if len(lengths) == 1 and (not empty or not gaps or next(iter(lengths)) in gaps):
        return next(iter(lengths))
    if len(gaps) == 1 and next(iter(gaps)) in lengths:
        return gaps.pop()
    if not lengths and len(gaps) <= 1:  # no data: the names' one spacing, else the default
        return gaps.pop() if gaps and min(gaps) > 0 else default
    sizes = ", ".join(
        f"{n} file(s) of {size} bytes" for size, n in sorted(Counter(f.length for q in queues for f in q).items())
    )
    spacing = ", ".join(map(str, sorted(gaps))) or "none"
    hint = f"; pass {setting} with --broker-config" if setting else ""
    raise StoreError(
        f"inconsistent {what} file sizes ({sizes}; names spaced {spacing}): neither tells the file size{hint}",
        next(files[0].path.parent for files in queues if files),
    )


def check_configured_size(files: list[MappedFile], size: int, key: str):
    """A configured geometry that no file has is a wrong configuration, not damage: refuse it. (Single
    short or odd files are damage, for verify to report; so is a short last file, even the only one.)"""
    evidence = files[:-1] if files and files[-1].length < size else files
    if evidence and not any(f.length == size for f in evidence):
        f = files[0]
        raise StoreError(f"file is {f.length} bytes but {key}={size}; wrong broker config for this store?", f.path)


# CommitLog.pickupStoreTimestamp: sysFlag, and the storeTimestamp after a 4-byte or (BORNHOST_V6_FLAG) 16-byte born host
SYSFLAG_AT, STORE_TIME_AT = 36, {False: 56, True: 68}
for _v6, _at in STORE_TIME_AT.items():
    _head, _names = S.RECORD_HEADS[(_v6, False)]
    _probe = bytearray(_head.size)
    S.INT64.pack_into(_probe, _at, 0x0102030405060708)
    S.INT32.pack_into(_probe, SYSFLAG_AT, 0x7F)
    _fields = _head.unpack_from(_probe)
    assert _fields[_names.index("storeTimestamp")] == 0x0102030405060708 and _fields[_names.index("sysFlag")] == 0x7F


def store_times(
    queue: MappedFileQueue, offsets: np.ndarray, sizes: np.ndarray, end: int, live: Snapshot | None = None
) -> np.ndarray:
    """pickupStoreTimestamp for many records at once: the storeTimestamp of the record at each offset (read where
    its sysFlag's born-host width puts it, nothing else checked, as the broker does), -1 where offset + size is
    not inside [the commitlog's min, `end`), or its file was deleted while read (on a `live` store the broker's
    expired head, head_moved)."""
    out = np.full(len(offsets), -1, np.int64)
    offsets = np.asarray(offsets, np.int64)
    inside = ~record_expired(offsets, queue.min_offset) & (offsets + np.asarray(sizes, np.int64) <= end)
    for f in queue.files:
        sel = np.flatnonzero(inside & (offsets >= f.start) & (offsets < f.start + queue.file_size))
        if not len(sel):
            continue
        try:
            data = np.frombuffer(f.buf, np.uint8)
        except FileGone as e:
            head_moved(live, f, e)
            continue
        pos = offsets[sel] - f.start
        fits = pos + SYSFLAG_AT + 4 <= len(data)
        sel, pos = sel[fits], pos[fits]
        flag = _be(data, pos + SYSFLAG_AT, 4)
        at = np.where(flag & S.BORNHOST_V6_FLAG, STORE_TIME_AT[True], STORE_TIME_AT[False])
        ok = pos + at + 8 <= len(data)
        out[sel[ok]] = _be(data, (pos + at)[ok], 8)
    return out


def _be(data: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Big-endian signed integers of `width` bytes at each position."""
    raw = data[pos[:, None] + np.arange(width)]
    return raw.copy().view(f">i{width}").reshape(-1).astype(np.int64)


class CommitLogScan(ColumnViews):
    """Walks commitlog records file by file, the way CommitLog.getData + checkMessageAndReturnSize do:
    records until the BLANK at the end of a full file; in each file, reading stops at the first bytes
    that are not a record (the logical end, or damage, which `errors` collects). On a running broker's
    store (`live`, its snapshot) the walk ends at the snapshot's end: later records are the broker's work in
    flight. A file the broker deletes while it is read is skipped, and `moved` says so (the log's head moved);
    bytes that changed between the walk and the reference's second look (a moving tail) go there too."""

    segmented = True

    def __init__(self, queue: MappedFileQueue, allow_v2: bool = True, live: Snapshot | None = None):
        self.queue = queue
        self.allow_v2 = allow_v2
        self.live = live
        self.errors: list[tuple[MappedFile, int, RecordError]] = []
        # (file, position, what moved there): the snapshot's list, which every read of the store adds to
        self.moved: list[tuple[MappedFile, int, str]] = live.moved if live is not None else []

    def records(self, start: int | None = None, end: int | None = None) -> Iterator[tuple[MappedFile, Message]]:
        for f, rec in self.entries(start, end):
            if isinstance(rec, Message):
                yield f, rec

    def entries(self, start: int | None = None, end: int | None = None) -> Iterator[tuple[MappedFile, Message | Blank]]:
        size = self.queue.file_size
        end = bounded_end(self.live, end)
        for f in self.queue.files:
            if end is not None and f.start >= end:
                return
            if start is not None and f.start + size <= start:
                continue
            try:
                buf = f.buf
            except FileGone:
                self.head_moved(f)
                continue
            limit = min(len(buf), size)
            pos = 0
            while pos < limit:
                try:
                    rec = read_record(buf, pos, limit, self.allow_v2)
                except RecordError as e:
                    if end is None or f.start + pos < end:  # (bytes past the end are not the walk's)
                        self._refused(f, pos, e)
                    break
                if isinstance(rec, Blank):
                    yield f, rec
                    break
                off = f.start + pos
                if end is not None and off >= end:
                    return
                if start is None or off >= start:
                    yield f, rec
                pos += rec.storeSize

    def chunks(self, start: int | None = None, end: int | None = None, check_crc: bool = False, **batch):
        """The same walk on the compiled engine: the records of [start, end) in bounded batches of columns
        (rmqctl.engine.Chunk; `batch`: rows= and max_bytes= other than its defaults); damage goes to
        `errors` as entries() reports it. With `built=` (a function of a chunk) and `jobs=`: built(chunk) of
        each batch instead, walked and built on `jobs` threads (engine.walk_files)."""
        from .engine import walk_files  # the compiled kernels load only for the commands that walk

        return walk_files(
            self.queue.files,
            self.queue.file_size,
            start,
            bounded_end(self.live, end),
            self.allow_v2,
            self._refused_at,
            check_crc,
            gone=self.head_moved,
            **batch,
        )

    def head_moved(self, f: MappedFile):
        head_moved(self.live, f)

    def _refused_at(self, f: MappedFile, pos: int, limit: int):
        """The engine stopped at bytes that are not a record: the reference names what is wrong there. When
        the reference reads a record there past a live snapshot's end, the bytes changed since the engine read
        them: a moving tail. Anywhere else whole records do not change: the engine is wrong (an rmqctl bug)."""
        try:
            read_record(f.buf, pos, limit, self.allow_v2)
        except RecordError as e:
            # without its traceback: its frames would keep the walk's view of a mapping (which then cannot close)
            self._refused(f, pos, e.with_traceback(None))
        else:
            if self.live is None or f.start + pos < self.live.commitlog_end:
                raise AssertionError(f"{f.path} at {pos}: the engine refused a record the reference reads")
            self.moved.append(
                (
                    f,
                    pos,
                    "a record was being written here while rmqctl read it (a moving tail); the scan ends before it",
                )
            )

    def _refused(self, f: MappedFile, pos: int, e: RecordError):
        if e.kind != "zeros" or self._data_follows(f):
            self.errors.append((f, pos, e))

    def _data_follows(self, f: MappedFile) -> bool:
        """Zeros are the logical end only in the last file with data; before a later record they are a hole."""
        later = self.queue.files[self.queue.files.index(f) + 1 :]
        return any(starts_with_data(g) for g in later)


class ConsumeQueue:
    """consumequeue/{topic}/{queueId}/: 20-byte units (commitLogOffset, size, tagsCode). On a live store
    (`live`) the queue ends at its last unit inside the snapshot: the broker dispatches in commitlog order, so
    the units pointing past the snapshot's end are the tail it appended since."""

    def __init__(self, topic: str, queue_id: int, directory: Path, file_size: int, live: Snapshot | None = None):
        self.topic = topic
        self.queue_id = queue_id
        self.directory = directory
        self.files = MappedFileQueue([directory], file_size)
        self.live = live

    def unit_arrays(self) -> Iterator[tuple[MappedFile, np.ndarray]]:
        """(file, unit array) per file: a view on the map, nothing read until looked at. On a live store the
        file holding the snapshot's last unit is the last one, its array cut after that unit; a file the
        broker deleted while it was read (its expired head) is skipped and noted in the snapshot."""
        for _, f, arr in self.indexed_unit_arrays(0):
            yield f, arr

    def indexed_unit_arrays(self, first: int) -> Iterator[tuple[int, MappedFile, np.ndarray]]:
        """unit_arrays from file index `first` on, each with its index."""
        for k, f in enumerate(self.files.files[first:], first):
            try:
                buf = f.buf
            except FileGone as e:
                head_moved(self.live, f, e)
                continue
            n = min(len(buf), self.files.file_size) // S.CQ_UNIT_SIZE
            arr = np.frombuffer(buf, dtype=S.CQ_DTYPE, count=n) if n else np.empty(0, S.CQ_DTYPE)
            cut = self.snapshot_units(k, arr)
            yield k, f, arr[:cut]
            if cut < len(arr):
                return

    def snapshot_units(self, k: int, arr: np.ndarray) -> int:
        """How many of file k's units (`arr`, from its first) lie inside the snapshot: all of them on a stopped
        store; on a live one, those before the queue's trailing run of units pointing at or past the snapshot's
        end (the broker's dispatch since). A unit past the end with a unit inside it after (later in this file,
        or first in the next) is damage: it is kept, for the checks to report."""
        if self.live is None or not len(arr):
            return len(arr)
        end = self.live.commitlog_end
        off = arr["commitLogOffset"]
        inside = np.flatnonzero((off < end) & ((off != 0) | (arr["size"] != 0)))
        cut = int(inside[-1]) + 1 if len(inside) else 0
        if not (off[cut:] >= end).any() or self._next_file_starts_inside(k, end):
            return len(arr)
        return cut

    def _next_file_starts_inside(self, k: int, end: int) -> bool:
        later = self.files.files[k + 1 : k + 2]
        try:
            head = bytes(later[0].buf[: S.CQ_UNIT_SIZE]) if later else b""
        except FileGone:
            return False
        if len(head) < S.CQ_UNIT_SIZE:
            return False
        off, size = S.CQ_UNIT.unpack(head)[:2]
        return (off != 0 or size != 0) and off < end

    def units(self) -> Iterator[tuple[int, MappedFile, int, np.ndarray]]:
        """(first queue offset, file, units the broker keeps (served_units), unit array) per file."""
        count = len(self.files.files)
        for k, f, arr in self.indexed_unit_arrays(0):
            yield f.start // S.CQ_UNIT_SIZE, f, served_units(k, count, arr, written_units), arr

    def entries(self) -> Iterator[tuple[int, MappedFile, int, int, int, int]]:
        """(queueOffset, file, position, commitLogOffset, size, tagsCode) for every written unit."""
        for first, f, written, arr in self.units():
            for i in range(written):
                u = arr[i]
                yield first + i, f, i * S.CQ_UNIT_SIZE, int(u["commitLogOffset"]), int(u["size"]), int(u["tagsCode"])
            if written < len(arr):
                return

    def loaded_range(self, min_phy: int, version: int) -> tuple[int, int]:
        """(min, max) queue offsets as the broker serves them after its load, in one pass over the files: the
        max one past the last written unit, the min as recoverTopicQueueTable's correctMinOffset leaves it
        against the commitlog minimum `min_phy` (loaded_min_logic). Only the first file and the one read last
        stay mapped, every file is let go by the end: a store's queues may be more than its memory holds."""
        ends = []  # (file, its start, its written units' commitLogOffsets): the first file and the last read
        try:
            for _, f, written, arr in self.units():
                if len(ends) == 2:
                    ends.pop()[0].release()
                ends.append((f, f.start, arr["commitLogOffset"][:written]))
                if written < len(arr):
                    break
            files = [(start, offsets) for _, start, offsets in ends]
            end = files[-1][0] + len(files[-1][1]) * S.CQ_UNIT_SIZE if files else 0
            return loaded_min_logic(files, min_phy, version) // S.CQ_UNIT_SIZE, end // S.CQ_UNIT_SIZE
        finally:
            for f, _, _ in ends:
                f.release()

    def offset_range(self) -> tuple[int, int]:
        """(min, max) queue offsets the broker would compute: min skips pre-blank units, max is one past
        the last written unit. Each file is let go once read."""
        lo = hi = None
        for first, f, written, arr in self.units():
            if lo is None:
                real = np.flatnonzero(arr["size"][:written] != S.PRE_BLANK_SIZE)
                lo = first + int(real[0]) if len(real) else first + written
            hi = first + written
            f.release()
            if written < len(arr):
                break
        return (lo or 0, hi or 0)


def loaded_min_logic(files: list[tuple[int, np.ndarray]], min_phy: int, version: int) -> int:
    """A file queue's minLogicOffset (bytes) as the broker's load leaves it, from its files' (start, written
    units' commitLogOffsets): recoverTopicQueueTable's correctMinOffset against the commitlog minimum `min_phy`,
    from 0 (rules.corrected_min_logic). The cleanup keeps a file until all of it is dead, so units below the
    minimum stay; the broker serves none of them. A 5.x queue whose last file reads nothing keeps 0: the
    broker's call throws before it sets anything."""
    if not files:
        return 0
    (first_start, first_offsets), (last_start, last_offsets) = files[0], files[-1]
    last_end = last_start + len(last_offsets) * S.CQ_UNIT_SIZE
    last = int(last_offsets[-1]) if len(last_offsets) else None
    try:
        return corrected_min_logic(version, 0, first_start, first_offsets, last_end, last, min_phy)
    except CorrectMinOffsetFailed:
        return 0


class IndexFile:
    """index/{yyyyMMddHHmmssSSS}: IndexHeader, hash slots, entries (IndexFile.java)."""

    def __init__(self, path: Path, slot_num: int, index_num: int):
        self.path = path
        self.name = path.name
        self.slot_num = slot_num
        self.index_num = index_num
        self.mf = MappedFile(path, 0)
        self.length = self.mf.length

    @property
    def expected_length(self) -> int:
        return S.INDEX_HEADER_SIZE + self.slot_num * S.HASH_SLOT_SIZE + self.index_num * S.INDEX_ENTRY_SIZE

    @cached_property
    def header(self) -> dict:
        """A file shorter than its header reads as zeros past its end, as the broker's load reads it: it maps
        the file READ_WRITE at its full size, which extends it with zeros."""
        head = bytes(self.mf.buf[: S.INDEX_HEADER_SIZE]).ljust(S.INDEX_HEADER_SIZE, b"\0")
        vals = S.INDEX_HEADER.unpack(head)
        return dict(zip((n for n, _ in S.fixed_fields(S.IndexHeader)), vals))

    @property
    def index_count(self) -> int:
        """In memory the count starts at 1 and load() forces values <= 0 to 1."""
        return max(self.header["indexCount"], 1)

    @property
    def entry_count(self) -> int:
        return self.index_count - 1

    def slots(self) -> np.ndarray:
        """The hash slots that fit in the file (a short file yields fewer)."""
        n = max(0, min(self.slot_num, (self.length - S.INDEX_HEADER_SIZE) // S.HASH_SLOT_SIZE))
        return np.frombuffer(self.mf.buf, dtype=">i4", count=n, offset=S.INDEX_HEADER_SIZE) if n else np.empty(0, ">i4")

    def entries(self) -> np.ndarray:
        """All entry slots 0..indexNum-1 that fit in the file (entry 0 is never used)."""
        base = S.INDEX_HEADER_SIZE + self.slot_num * S.HASH_SLOT_SIZE
        n = max(0, min(self.index_num, (self.length - base) // S.INDEX_ENTRY_SIZE))
        if not n:
            return np.empty(0, S.INDEX_ENTRY_DTYPE)
        return np.frombuffer(self.mf.buf, dtype=S.INDEX_ENTRY_DTYPE, count=n, offset=base)

    def select_phy_offsets(self, key_hash: int, max_num: int, begin: int, end: int, out: list[int]) -> bool:
        """IndexFile.selectPhyOffset: follow the slot's chain newest first; hash-only match. A damaged prev that
        leads back into the chain makes a loop: one holding a match fills `out` to max_num (with repeats) as
        the broker's does; one holding none spins there for good in the broker, and this returns True once it
        has gone more steps than there are entries without a match."""
        slot_value_pos = S.INDEX_HEADER_SIZE + index_slot(key_hash, self.slot_num) * S.HASH_SLOT_SIZE
        buf = self.mf.buf
        if slot_value_pos + 4 > len(buf):
            return
        slot_value = S.INT32.unpack_from(buf, slot_value_pos)[0]
        count = self.index_count
        if slot_value <= 0 or slot_value > count or count <= 1:
            return False
        begin_ts = self.header["beginTimestamp"]
        base = S.INDEX_HEADER_SIZE + self.slot_num * S.HASH_SLOT_SIZE
        next_index = slot_value
        missed = 0  # steps since the last match: past `count`, the chain is a loop without one
        while missed <= count:
            if len(out) >= max_num:
                return False
            pos = base + next_index * S.INDEX_ENTRY_SIZE
            if pos + S.INDEX_ENTRY_SIZE > len(buf):
                return False
            h, phy, diff, prev = S.INDEX_ENTRY.unpack_from(buf, pos)
            if diff < 0:
                return False
            time_read = begin_ts + diff * 1000
            if h == key_hash and begin <= time_read <= end:
                out.append(phy)
                missed = 0
            else:
                missed += 1
            if prev <= 0 or prev > count or prev == next_index or time_read < begin:
                return False
            next_index = prev
        return True


def queue_keys(store: "Store") -> list[tuple[str, int]]:
    """(topic, queueId) of every queue the broker reads: the RocksDB queue's, or the file queues'."""
    rocks = store.rocks_queues
    return [(q.topic, q.queue_id) for q in (rocks.queues() if rocks is not None else store.consume_queues())]


def commitlog_dirs(root: Path, config: BrokerConfig) -> list[Path]:
    """storePathCommitLog (comma-separated, 5.x multi-path), else {root}/commitlog."""
    return split_paths(config.storePathCommitLog) if config.storePathCommitLog else [root / "commitlog"]


def commitlog_queue(dirs: list[Path], config: BrokerConfig) -> MappedFileQueue:
    """The commitlog's files, sized by mappedFileSizeCommitLog or, unconfigured, by the files themselves."""
    probe = MappedFileQueue(dirs, 0)
    size = config.mappedFileSizeCommitLog
    if size:
        check_configured_size(probe.files, size, "mappedFileSizeCommitLog")
    else:
        size = infer_file_size([probe.files], "commitlog", "mappedFileSizeCommitLog", DEFAULT_COMMITLOG_SIZE)
    probe.file_size = size
    return probe


TOP_LEVEL_PARTS = ("commitlog", "consumequeue", "index", "config", "timerlog", "batchconsumequeue")


def is_store_root(d: Path) -> bool:
    """A directory a broker has started in: its commitlog/ and its lock or checkpoint (check_store_root)."""
    return (d / "commitlog").is_dir() and ((d / "lock").exists() or (d / "checkpoint").exists())


def check_store_root(store: "Store"):
    """A directory is a store root only if a broker has started in it: DefaultMessageStore's constructor
    creates the commitlog and consumequeue directories and `lock` before load() reads anything, and load()
    creates `checkpoint`; MappedFileQueue.load then takes whatever files the commitlog directory holds
    (none, for a new broker). So no commitlog directory, or an empty one with neither lock nor checkpoint,
    is not a store (an unmounted volume, a typo, a subdirectory) and must not pass as a sound empty one."""
    missing = [d for d in store.commitlog_dirs if not d.is_dir()]
    if missing:
        what = (
            f"no commitlog directory {missing[0]} (storePathCommitLog)"
            if store.config.storePathCommitLog
            else "no commitlog/ directory"
        )
        hint = ""
        if any(FILE_NAME.match(p.name) for p in store.root.iterdir()):
            what += f"; this looks like a commitlog directory itself: the store root is {store.root.parent}"
        elif _holds_metaq_segments(store.root):
            hint = f"; it is a MetaQ data path: rmqctl metaq info --store {store.root}"
        raise StoreError(
            f"not a RocketMQ store root: {what} (a broker creates commitlog/, consumequeue/ and "
            f"lock at its first start){hint}",
            store.root,
        )
    if not store.is_empty:
        return
    if not (store.lock_path.exists() or store.checkpoint_path.exists()):
        raise StoreError(
            "not a RocketMQ store root: the commitlog directory holds no file and there is neither "
            "lock nor checkpoint (a broker creates both at its first start)",
            store.root,
        )


def _holds_metaq_segments(root: Path) -> bool:
    """A MetaQ data path: a `{topic}-{partition}` directory with a segment file in it."""
    return any(
        d.is_dir() and "-" in d.name and any(f.name.endswith(SEGMENT_SUFFIX) for f in d.iterdir())
        for d in root.iterdir()
    )


def existing_root(root: str | os.PathLike, missing: str) -> Path:
    """A store's root directory as a Path (~ expanded); a StoreError saying `missing` when it is not a directory."""
    path = Path(root).expanduser()
    if not path.is_dir():
        raise StoreError(missing, path)
    return path


class Store:
    """A RocketMQ store root. Everything is read lazily and read-only."""

    def __init__(self, root: str | os.PathLike, config: BrokerConfig | None = None):
        self.root = existing_root(root, "store directory does not exist")
        self.config = config or BrokerConfig()
        check_store_root(self)

    @property
    def is_empty(self) -> bool:
        """A valid store no message was ever written to: a new broker's (commitlog directory, no file)."""
        return not any(FILE_NAME.match(p.name) for d in self.commitlog_dirs if d.is_dir() for p in d.iterdir())

    # -- paths -------------------------------------------------------------------------------------------
    @cached_property
    def dledger(self) -> D.Layout | None:
        """The DLedger layout when the commitlog is DLedger's entry store (enableDLegerCommitLog), else None."""
        return D.detect(self.root, self.config)

    @cached_property
    def parts(self) -> StoreParts:
        """What the store holds and which parts this version reads (rmqctl.parts)."""
        return find_parts(Layout(self.root, self.config, tuple(self.commitlog_dirs)))

    @property
    def commitlog_dirs(self) -> list[Path]:
        if self.dledger is not None:
            return list(self.dledger.data_dirs)
        return commitlog_dirs(self.root, self.config)

    def allowed_roots(self) -> list[str]:
        """The real directories the store's files may live in: the root, the commitlog directories the
        config names, and the operator's top-level links (followed_links). Nothing rmqctl writes or deletes
        is reached through any other symlink leading elsewhere."""
        roots = [os.path.realpath(self.root)]
        if self.config.storePathCommitLog:
            roots += [os.path.realpath(d) for d in self.commitlog_dirs]
        return roots + list(followed_links(self).values())

    # the root entries every store has, by the broker's names
    consumequeue_dir = property(lambda self: self.root / "consumequeue")
    index_dir = property(lambda self: self.root / "index")
    checkpoint_path = property(lambda self: self.root / "checkpoint")
    abort_path = property(lambda self: self.root / "abort")
    lock_path = property(lambda self: self.root / "lock")

    # -- commitlog ---------------------------------------------------------------------------------------
    @cached_property
    def commitlog(self) -> MappedFileQueue:
        return commitlog_queue(self.commitlog_dirs, self.config)

    @cached_property
    def version(self) -> BrokerVersion:
        """Which RocketMQ's rules apply: the operator's word, else what the store's files tell (brokerversion)."""
        return infer(self.root, self.config, lambda n: newest_first_records(self, n))

    def scan(self, allow_v2: bool = True) -> CommitLogScan | D.DLedgerScan:
        if self.dledger is not None:
            return D.DLedgerScan(self.commitlog, allow_v2)
        return CommitLogScan(self.commitlog, allow_v2, self.live)

    @cached_property
    def live(self) -> Snapshot | None:
        """While a broker holds the lock: where its store ended when this read began (rmqctl.live), taken at
        the first use (every command takes it before reading). None for a stopped store."""
        pid = self.lock_holder()
        return take_snapshot(self, pid, read_checkpoint(self.checkpoint_path)) if pid is not None else None

    @cached_property
    def dledger_index(self) -> MappedFileQueue:
        """DLedger's entry index files (32-byte units), sized from the files, else DLedger's default."""
        q = MappedFileQueue([self.dledger.index_dir], 0)
        q.file_size = infer_file_size([q.files], "DLedger index", None, D.DEFAULT_INDEX_FILE_SIZE)
        return q

    def expired(self, offset: int) -> bool:
        """Its file was cleaned up (below the first one, or deleted as the head while this ran): the broker serves
        units and index entries pointing there as expired (getMinOffsetInQueue skips them), not as damage."""
        q = self.commitlog
        f = q.find(offset)
        return bool(q.files) and (record_expired(offset, q.min_offset) or (f is not None and not f.path.exists()))

    def read_message(self, offset: int) -> tuple[MappedFile, Message]:
        """The record that starts at commitlog `offset`."""
        f = self.commitlog.find(offset)
        if f is None:
            raise StoreError(f"offset {offset} is outside the commitlog", self.commitlog_dirs[0])
        pos = offset - f.start
        try:
            rec = read_record(f.buf, pos, min(len(f.buf), self.commitlog.file_size))
        except RecordError as e:
            detail = f"no record starts at commitlog offset {offset}: {e.detail}"
            raise StoreError(detail, f.path, position=pos) from None
        if isinstance(rec, Blank):
            detail = f"commitlog offset {offset} is the BLANK end-of-file record, not a message"
            raise StoreError(detail, f.path, position=pos)
        return f, rec

    # -- consumequeues -----------------------------------------------------------------------------------
    @cached_property
    def consumequeue_file_size(self) -> int:
        return settle_cq_file_size(self.config, self.consumequeue_dir)

    @staticmethod
    def _dirs(path: Path) -> list[Path]:
        return sorted(p for p in path.iterdir() if p.is_dir()) if path.is_dir() else []

    @cached_property
    def rocks_queues(self) -> RocksConsumeQueues | None:
        """The RocksDB consume queue when it is the one the broker reads (storeType=defaultRocksDB), else None."""
        if self.parts.queue_store == ROCKSDB_STORE and self.parts.queues_read:
            return RocksConsumeQueues(self.consumequeue_dir)
        return None

    @cached_property
    def message_rocksdb(self) -> MessageRocksDB | None:
        """The 5.4 RocksDB message store (index, timer, transactions) in a layout this version reads, or None."""
        return message_rocksdb([p for p in self.parts.parts if p.kind == "rocksdb-message-store"])

    def consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        self.parts.require_file_queues()
        directory = self.consumequeue_dir / topic / str(queue_id)
        return ConsumeQueue(topic, queue_id, directory, self.consumequeue_file_size, self.live)

    def consume_queues(self) -> list[ConsumeQueue]:
        """Every topic/queueId directory, as the broker's load reads them: a directory whose name
        Integer.parseInt refuses is skipped, and one it reads into another name (03, +3) too, since the broker
        opens its queue at topic/<queueId> (ConsumeQueue's path) and never reads or deletes that one's files."""
        self.parts.require_file_queues()
        return [
            ConsumeQueue(topic_dir.name, queue_id, qdir, self.consumequeue_file_size, self.live)
            for topic_dir in self._dirs(self.consumequeue_dir)
            for qdir in self._dirs(topic_dir)
            if (queue_id := parse_long(qdir.name, 32)) is not None and qdir.name == str(queue_id)
        ]

    # -- index -------------------------------------------------------------------------------------------
    def index_paths(self) -> list[Path]:
        if not self.index_dir.is_dir():
            return []
        return sorted(p for p in self.index_dir.iterdir() if p.is_file())

    @cached_property
    def index_geometry(self) -> tuple[int, int]:
        """(hash slots, max entries): settle_index_geometry for this store's index files."""
        return settle_index_geometry(self.index_paths(), self.config, self.index_dir)

    def index_files(self) -> list[IndexFile]:
        """Index files in load order (lexicographic names = creation time). On a live store, the files of its
        snapshot, the one the broker was writing as it was then (rmqctl.live.freeze_index); a file deleted
        since is left out, one created since is not yet there."""
        paths = [p for p in self.index_paths() if loaded_index_name(p.name)]
        return [ix for ix in map(self.open_index_file, paths) if ix is not None]

    def open_index_file(self, path: Path) -> IndexFile | None:
        """One index file; on a live store as the snapshot saw it, None for one deleted (expired) or created
        since."""
        slots, num = self.index_geometry
        live = self.live
        if live is not None and path.name > max(live.index_names, default=""):
            return None
        try:
            ix = IndexFile(path, slots, num)
            if live is not None:
                ix.mf = as_of_snapshot(ix.mf, live)
        except (FileNotFoundError, FileGone):
            if live is not None:
                live.gone(path, "the read goes on without it")
            return None
        return ix

    # -- checkpoint, abort, lock, config ----------------------------------------------------------------
    def checkpoint(self) -> dict | None:
        """The checkpoint's fields (and `fileSize`); on a live store, as the snapshot read it."""
        live = self.live
        if live is not None and live.checkpoint is not None:
            return dict(live.checkpoint)
        return read_checkpoint(self.checkpoint_path)

    def abort_exists(self) -> bool:
        return self.abort_path.exists()

    def crashed(self) -> bool:
        """The last exit was not clean: `abort` is there and no broker holds the lock (no one, or another rmqctl
        writing the store). A running broker creates `abort` at its start and deletes it at a clean shutdown:
        while it runs, the file is its running marker."""
        live = self.live
        return self.abort_exists() and (live is None or live.by_rmqctl)

    def lock_holder(self) -> int | None:
        """The pid holding the broker's lock (fcntl on byte 0 of {store}/lock), or None."""
        return lock_holder(self.lock_path)

    def close(self):
        if "commitlog" in self.__dict__:
            self.commitlog.close()
        if self.__dict__.get("rocks_queues") is not None:
            self.rocks_queues.close()
        if self.__dict__.get("message_rocksdb") is not None:
            self.message_rocksdb.close()


def settle_cq_file_size(config: BrokerConfig, consumequeue_dir: Path) -> int:
    """mappedFileSizeConsumeQueue: configured (rounded up to whole units, as the getter does), else what the files
    show (infer_file_size), else the default."""
    queues = [MappedFileQueue([q], 0).files for t in Store._dirs(consumequeue_dir) for q in Store._dirs(t)]
    configured = -(-(config.mappedFileSizeConsumeQueue or 0) // S.CQ_UNIT_SIZE) * S.CQ_UNIT_SIZE
    return settle_file_size(queues, configured, "mappedFileSizeConsumeQueue", "consumequeue", DEFAULT_CQ_SIZE)


def settle_file_size(queues: list[list[MappedFile]], configured: int, setting: str, kind: str, default: int) -> int:
    """A queue kind's file size (`queues`: each queue's files): the configured one, checked against the files, else
    infer_file_size's."""
    if configured:
        check_configured_size([f for files in queues for f in files], configured, setting)
        return configured
    return infer_file_size(queues, kind, setting, default)


def newest_first_records(store: Store, n: int) -> Iterator[tuple]:
    """brokerversion.record_style of up to n records from the start of each of the newest commitlog files, newest
    first; each file released once read (a reading command maps one commitlog file at a time)."""
    scan, size = store.scan(), store.commitlog.file_size
    for f in reversed(store.commitlog.files[-SAMPLE_FILES:]):
        walk = scan.records(f.start, f.start + size)
        styles = [record_style(m) for _, m in itertools.islice(walk, n)]
        walk.close()  # its frame holds views of the mapping
        f.release()
        yield from styles


def as_of_snapshot(mf: MappedFile, live: Snapshot):
    """An index file of a live store as the snapshot has it: its frozen copy when the broker was writing it,
    else mapped now (a mapping stays readable when the broker deletes the file as expired)."""
    if mf.name in live.index:
        return live.index[mf.name]
    mf.buf  # noqa: B018 (mapping it is the point)
    return mf


def settle_index_geometry(paths: list[Path], config: BrokerConfig, index_dir: Path) -> tuple[int, int]:
    """(hash slots, max entries). Configured, or the defaults when the files have the default size,
    or inferred from the data: the newest entry of a file sits at indexCount-1 and holds the
    header's endPhyOffset. (A file a running broker deletes meanwhile is left out.)"""
    slots, num = config.maxHashSlotNum, config.maxIndexNum
    files = []
    for p in paths:
        with contextlib.suppress(FileNotFoundError):
            files.append(MappedFile(p, 0))
    if slots and num:
        check_configured_size(files, S.index_file_size(slots, num), "maxHashSlotNum/maxIndexNum")
        return slots, num
    default_len = S.INDEX_HEADER_SIZE + DEFAULT_HASH_SLOTS * S.HASH_SLOT_SIZE + DEFAULT_INDEX_NUM * S.INDEX_ENTRY_SIZE
    if all(f.length == default_len for f in files):
        return slots or DEFAULT_HASH_SLOTS, num or DEFAULT_INDEX_NUM
    for f in files:
        with contextlib.suppress(FileNotFoundError):
            found = infer_index_geometry(f.path, slots, num)
            if found:
                return found
    raise StoreError(
        "cannot infer the index geometry (maxHashSlotNum/maxIndexNum); pass it with --broker-config", index_dir
    )


def read_checkpoint(path: Path) -> dict | None:
    """StoreCheckpoint's fields and `fileSize`, None without the file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    names = [n for n, _ in S.fixed_fields(S.Checkpoint)]
    padded = data[: S.CHECKPOINT_HEAD.size].ljust(S.CHECKPOINT_HEAD.size, b"\0")
    out = dict(zip(names, S.CHECKPOINT_HEAD.unpack(padded)))
    out["fileSize"] = len(data)
    return out


def infer_index_geometry(path: Path, slots: int | None, num: int | None) -> tuple[int, int] | None:
    """Solve 40 + 4*slots + 20*num == size with the data's own evidence, vectorised over every candidate
    slot count: the newest entry (indexCount-1) holds the header's endPhyOffset, its key's slot points at
    it, and entry 0 is never used (all zero). Neighbouring candidates read neighbouring entries, which often
    share the phyOffset (one message, several keys): the slot test tells them apart."""
    size = path.stat().st_size
    if size < S.INDEX_HEADER_SIZE:
        return None
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    _, _, _, end_phy, _, count = S.INDEX_HEADER.unpack_from(buf, 0)
    body = size - S.INDEX_HEADER_SIZE
    # the slots must leave a whole number of entries: one residue of slots modulo `step`
    slot, entry = S.HASH_SLOT_SIZE, S.INDEX_ENTRY_SIZE
    step = entry // math.gcd(slot, entry)
    first = next((r for r in range(1, step + 1) if (body - slot * r) % entry == 0), None)
    if first is None:
        return None
    cand = np.array([slots], dtype=np.int64) if slots else np.arange(first, body // slot + 1, step, dtype=np.int64)
    rest = body - cand * slot
    ok = (rest >= 0) & (rest % S.INDEX_ENTRY_SIZE == 0)
    if num:
        ok &= rest // S.INDEX_ENTRY_SIZE == num
    cand = cand[ok]
    if count <= 1:
        return (int(cand[0]), (body - int(cand[0]) * slot) // entry) if len(cand) == 1 else None
    arr = np.frombuffer(buf, dtype=np.uint8)

    def read(pos, width):
        v = np.zeros(len(pos), dtype=np.int64)
        for i in range(width):
            v = (v << 8) | arr[pos + i].astype(np.int64)
        return v - ((v >> (8 * width - 1)) & 1) * (1 << (8 * width)) if width < 8 else v

    at = S.INDEX_ENTRY_AT
    entries = S.INDEX_HEADER_SIZE + cand * slot
    last = entries + (count - 1) * entry
    fits = last + entry <= size
    cand, entries, last = cand[fits], entries[fits], last[fits]
    hit = read(last + at["phyOffset"], S.INT64.size) == end_phy
    key_hash = read(last + at["keyHash"], S.INT32.size)
    slot_pos = (
        S.INDEX_HEADER_SIZE + np.array([index_slot(int(h), int(c)) for h, c in zip(key_hash, cand)], np.int64) * slot
    )
    hit &= read(slot_pos, slot) == count - 1
    hit &= ~arr[entries[:, None] + np.arange(entry)].any(axis=1)  # entry 0: all zero
    found = cand[hit]
    if len(found) == 1:
        s = int(found[0])
        return s, (body - s * slot) // entry
    return None


def followed_links(store: "Store") -> dict[str, str]:
    """The store's own top-level directories (commitlog/, consumequeue/, index/, ...) that are symlinks to
    a directory on another disk, a common layout (the broker follows them, and has no setting for
    consumequeue's place: StorePathConfigHelper.getStorePathConsumeQueue is always {root}/consumequeue):
    name -> real directory. A link into another store (a directory with commitlog/ and a lock or
    checkpoint above the target) is not followed: writing there would change that store."""
    out = {}
    for name in TOP_LEVEL_PARTS:
        link = store.root / name
        if not (link.is_symlink() and link.is_dir()):
            continue
        real = Path(os.path.realpath(link))
        if not any(is_store_root(d) for d in real.parents if d != Path(os.path.realpath(store.root))):
            out[name] = str(real)
    return out


def in_store(store: "Store", path: Path) -> Path:
    """A path of the store's, relative to the store as the broker names it: through a followed top-level
    link it is under that link's name."""
    real = os.path.realpath(path)
    for name, target in followed_links(store).items():
        if real == target or real.startswith(target + os.sep):
            return Path(name) / os.path.relpath(real, target)
    return Path(real).relative_to(os.path.realpath(store.root))


def elsewhere(store: "Store") -> list[Path]:
    """The store's directories that may lie on another filesystem than its root (commitlog directories
    the config names, followed links): a writer's staging for them sits beside them."""
    dirs = [Path(d) for d in followed_links(store).values()]
    if store.config.storePathCommitLog:
        dirs += [Path(os.path.realpath(d)) for d in store.commitlog_dirs]
    return dirs


def links_outside(store: "Store") -> list[tuple[Path, str]]:
    """Every symlink under the store (root and commitlog directories) whose target resolves outside
    allowed_roots(), with that target; found without following any link."""
    roots = store.allowed_roots()
    out = []
    followed = followed_links(store)
    pending = [
        Path(d) for d in dict.fromkeys([store.root, *store.commitlog_dirs, *followed.values()]) if os.path.isdir(d)
    ]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for e in entries:
                if e.is_symlink() and Path(e.path).parent == store.root and e.name in followed:
                    continue  # the operator's own layout, scanned at its target
                if e.is_symlink():
                    target = os.path.realpath(e.path)
                    if not any(target == r or target.startswith(r + os.sep) for r in roots):
                        out.append((Path(e.path), target))
                elif e.is_dir():
                    pending.append(Path(e.path))
    return sorted(out)


def refuse_links_outside(store: "Store"):
    """Writers call this first: they never write or delete through a symlink leading out of the store."""
    links = links_outside(store)
    if links:
        path, target = links[0]
        more = f" (and {len(links) - 1} more; `rmqctl verify` lists them)" if len(links) > 1 else ""
        raise StoreError(
            f"is a symlink to {target}, outside the store: rmqctl's writers do not follow it{more}; "
            "they follow only the store's own top-level directories (commitlog/, consumequeue/, index/, "
            "...) linked to a directory that is not part of another store",
            path,
        )
