"""verify's check of the 5.4 RocksDB message store (rmqctl.rocksdbstore): every index, timer and transaction
record against the commitlog record it names, and the bookkeeping keys against the log.

The database's keys sort by hour and topic (index), delay time (timer) or offset (transaction), not by the
commitlog offset they name, so the check is a merge of two streams in commitlog order in bounded memory:
`RecordRuns` reads the keys a batch at a time, the engine (engine/rocksdbstore.py) parses each batch into
columns, and the batch, sorted by offsetPy, is kept as a run: in memory up to a budget (verify's --memory),
past it spilled to a temporary directory; `check_runs` then takes the commitlog a window at a time, gathers
every run's records naming offsets in it, and compares each with the bytes of the record it names in the
file's own mapping, in order, a record several keys name decoded once. Memory is the budget, one batch while
reading and one window's records while checking, whatever the database's size. What the engine cannot show to agree (keys of neither layout, records past the end, expired or
differing) is checked again here by the reference, which names what is wrong.

verify starts the reading in a thread of its own before it walks the commitlog (`start_reading`): the
reading is RocksDB's iteration and the engine's parsing, which needs no record of the walk, and the walk's
kernels run without the GIL, so the two overlap; the check against the commitlog runs after the walk.

What each record must agree with is what the broker builds it from: an index record from the dispatched
record's topic, KEYS word, TAGS or UNIQ_KEY and store time, its hour bucket the hour of that store time
(IndexRocksDBStore.buildIndex, IndexRocksDBRecord.getKeyBytes; a rollback record is never indexed); a timer
record from its timer message's UNIQ_KEY, size and TIMER_OUT_MS, which is its delayTime
(TimerMessageRocksDBStore.scanSysTimerTopic, getDelayTime); a transaction record from the half message's
REAL_TOPIC, __transactionId__ and size (TransMessageRocksDBStore). Records naming offsets below the
commitlog's first file are expired (the broker deletes them by the hour), not damage; a negative offset is
below every file, expired by no cleanup, and is named."""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import gc
import heapq
import itertools
import shutil
import threading
from collections.abc import Callable, Iterator

import numpy as np

from .. import engine as E
from ..budget import DEFAULT_MEMORY, block_sigint_here
from ..errors import FileGone, StoreError
from ..findings import CONSUMEQUEUE, INDEX, TIMER, Findings
from ..record import Message
from ..rocksdb import Pairs, scratch_directory
from ..rocksdbstore import (
    BOOKKEEPING,
    INDEX as INDEX_KIND,
    KINDS,
    LAST_OFFSET_PY,
    TIMER as TIMER_KIND,
    TRANS,
    Entry,
    entry,
)
from ..sstable import Unreadable, check_count, groups
from ..rules import record_expired
from ..schema import TRANSACTION_ROLLBACK_TYPE
from ..store import Store
from .scan import MASK64

# the index's bookkeeping keys, end to end, and where each is (what engine.table_index_digest passes)
BOOKKEEPING_NAMES = (
    np.frombuffer(b"".join(BOOKKEEPING[INDEX_KIND]), np.uint8),
    np.cumsum([0] + [len(k) for k in BOOKKEEPING[INDEX_KIND][:-1]]).astype(np.int64),
    np.cumsum([len(k) for k in BOOKKEEPING[INDEX_KIND]]).astype(np.int64),
)
# the engine's code of each kind, its position in KINDS (Records.kinds holds them; Records.entry reads them back)
KIND_CODES = {INDEX_KIND: E.STORE_INDEX, TIMER_KIND: E.STORE_TIMER, TRANS: E.STORE_TRANS}
GROUPS = {INDEX_KIND: INDEX, TIMER_KIND: TIMER, TRANS: CONSUMEQUEUE}
KEY_SEPARATOR = " "  # MessageConst.KEY_SEPARATOR: KEYS words
BATCH = 1 << 16  # keys read, parsed and spilled as one run
WINDOW = 64 << 20  # commitlog bytes whose records are checked at a time
NOWHERE = np.iinfo(np.int64)  # the ends of the offsets' line: records outside every file
# what a run holds, in memory or in its files: the columns are parsed from its keys when it is read
SPILLED = ("offsets", "kinds", "key_lo", "key_hi", "keys", "values", "value_len")
NO_COLUMNS = np.zeros((0, E.STORE_NCOLUMNS), np.int64)  # Records' columns before they are parsed


@dataclasses.dataclass
class Records:
    """Records in commitlog order: each row's kind code, the engine's columns (spans into `keys`), where its
    key is in `keys`, its value (zero-padded to E.STORE_VALUE_SLOT bytes) and the value's length."""

    offsets: np.ndarray
    kinds: np.ndarray
    cols: np.ndarray
    key_lo: np.ndarray
    key_hi: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    value_len: np.ndarray

    def entry(self, i: int) -> Entry:
        kind = KINDS[self.kinds[i]]
        key = self.keys[self.key_lo[i] : self.key_hi[i]].tobytes()
        return entry(kind, key, self.values[i, : self.value_len[i]].tobytes())


def parsed(kind: str, pairs: Pairs) -> tuple[Records, np.ndarray]:
    """A batch of the kind's pairs as Records in commitlog order, and the positions in the batch of the keys the
    engine could not parse as records (bookkeeping keys, keys of neither layout: the reference's)."""
    records, rest = _sorted_run(kind, pairs)
    _parse_columns(records)
    return records, rest


def _sorted_run(kind: str, pairs: Pairs) -> tuple[Records, np.ndarray]:
    """parsed's Records without their columns (none: a run's are parsed again from its keys when it is read)."""
    cols = np.zeros((len(pairs), E.STORE_NCOLUMNS), np.int64)
    spans = (pairs.data, pairs.key_lo, pairs.key_hi, pairs.data, pairs.value_lo, pairs.value_hi)
    ok = E.parse_store_keys(np.full(len(pairs), KIND_CODES[kind], np.int8), *spans, cols)
    rows = np.flatnonzero(ok)
    order = rows[np.argsort(cols[rows, E.STORE_OFFSET], kind="stable")]  # equal offsets keep key order
    offsets, key_lo, key_hi, keys, values, value_len = E.gather_store_run(order, *spans, cols)
    kinds = np.full(len(offsets), KIND_CODES[kind], np.int8)
    return Records(offsets, kinds, NO_COLUMNS, key_lo, key_hi, keys, values, value_len), np.flatnonzero(~ok)


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of `a`: the engine's parse then takes the types a batch's pairs have (numba compiles and
    loads a kernel per signature, and a read-only array is a type of its own)."""
    view = a.view()
    view.flags.writeable = False
    return view


def _parse_columns(records: Records) -> bool:
    """The records' columns parsed from their keys and values, each row as its kind's (as `parsed` parses a
    batch); whether every row parses as a record naming the offset it is kept under."""
    records.cols = np.zeros((len(records.offsets), E.STORE_NCOLUMNS), np.int64)
    value_lo = np.arange(len(records.offsets), dtype=np.int64) * E.STORE_VALUE_SLOT
    value_hi = value_lo + records.value_len
    keys, values = _read_only(records.keys), _read_only(records.values.reshape(-1))
    ok = E.parse_store_keys(
        records.kinds, keys, records.key_lo, records.key_hi, values, value_lo, value_hi, records.cols
    ).all()
    return bool(ok) and np.array_equal(records.cols[:, E.STORE_OFFSET], records.offsets)


def concatenated(parts: list[Records]) -> Records:
    """Records of several runs, without their columns, as one, their key positions moved to the joined keys,
    in commitlog order."""
    if len(parts) == 1:
        return parts[0]
    bases = np.cumsum([0] + [len(p.keys) for p in parts[:-1]])
    joined = {name: np.concatenate([getattr(p, name) for p in parts]) for name in SPILLED}
    shift = np.repeat(bases, [len(p.offsets) for p in parts])
    order = np.argsort(joined["offsets"], kind="stable")
    offsets, kinds, *rows = E.order_store_rows(order, shift, *(joined[name] for name in SPILLED if name != "keys"))
    return Records(offsets, kinds, NO_COLUMNS, *rows[:2], joined["keys"], *rows[2:])


def spill(
    db,
    batch: int,
    store: Callable[[int, Records], None],
    say: Callable[[tuple], None],
    stopped: Callable[[], bool],
    kinds: tuple[str, ...],
    digest: IndexDigest | None = None,
    keys: bool = True,
    begun: Callable[[], object] = lambda: None,
):
    """The `kinds`' keys read `batch` at a time and parsed (until `stopped`); each batch's records, in commitlog
    order, stored as run n (`store(n, records)`) and said as ("run", its first offset, its records), or, for the
    index records `digest` takes, summed there instead (from the table files directly where it can: a group of
    blocks a step); each key the engine parses as no record said as ("key", kind, key, value) unless not
    `keys`. A batch is parsed and stored on a thread of its own while the next one is read (the engine's parse
    and the writes release the GIL; RocksDB's iteration holds it), and said once stored, in order. The first
    step of each kind is taken at once and the rest once `begun()` returns: the kernels each kind needs load
    then, while the caller's walk still runs, not beside its checks, whose Python they would hold up."""
    numbers = itertools.count()  # (taken on the one storing thread, a batch at a time in order)

    def written(kind: str, pairs: Pairs) -> tuple[tuple | None, np.ndarray]:
        if digest is not None and kind == INDEX_KIND:
            return None, digest.add_pairs(pairs)
        records, rest = _sorted_run(kind, pairs)
        if not len(records.offsets):
            return None, rest
        store(next(numbers), records)
        return ("run", int(records.offsets[0]), len(records.offsets)), rest

    def said(kind: str, pairs: Pairs, job: concurrent.futures.Future):
        run, rest = job.result()
        if run is not None:
            say(run)
        for i in rest.tolist() if keys else ():
            say(("key", kind, pairs.key(i), pairs.value(i)))

    def steps(kind: str) -> Iterator[Pairs | None]:
        tables = digest.tables_of(db) if digest is not None and kind == INDEX_KIND else None
        return digest.table_groups(tables) if tables is not None else db.batches(kind, batch)

    with concurrent.futures.ThreadPoolExecutor(1, initializer=block_sigint_here) as pool:
        last = None

        def take(kind: str, pairs: Pairs | None):
            nonlocal last
            if pairs is None:  # (a group of table blocks, summed as it was read)
                return
            job = pool.submit(written, kind, pairs)
            if last is not None:
                said(*last)
            last = (kind, pairs, job)

        streams = [(kind, steps(kind)) for kind in kinds]
        try:
            for kind, stream in streams:
                if stopped():
                    return
                take(kind, next(stream, None))
            if last is not None:  # (said before the wait: the first steps are whole while the walk runs)
                said(*last)
                last = None
            begun()
            for kind, stream in streams:
                while not stopped():  # (asked before each step: a step reads, even one of a digest)
                    pairs = next(stream, stream)
                    if pairs is stream:
                        break
                    take(kind, pairs)
            if last is not None and not stopped():
                said(*last)
        finally:  # (a stream left mid-way holds an iterator of the database, or a table file's mapping)
            for _, stream in streams:
                stream.close()


def _collecting_while(wait: Callable[[], object]) -> Callable[[], None]:
    """`wait` with the collector running meanwhile and paused again after: RecordRuns.read pauses it for its
    batches, and the caller's walk, which goes on while the reading waits, runs as usual (cli/launch.py)."""

    def waiting():
        gc.enable()
        try:
            wait()
        finally:
            gc.disable()

    return waiting


class RecordRuns:
    """The database's records read and parsed a batch at a time, each batch kept in commitlog order as a run:
    in memory while the runs kept there take at most `memory` bytes, past that spilled into a scratch directory
    of its own (removed by `close`, or by the next run if this process is killed); the keys the engine parses
    as no record are decoded by the reference as they come: `found` names those of neither layout, `unparsed`
    keeps the records among them for the check against the commitlog."""

    def __init__(
        self,
        db,
        batch: int = BATCH,
        memory: int = 0,
        kinds: tuple[str, ...] | None = None,
        digest: IndexDigest | None = None,
        keys: bool = True,
    ):
        self.db = db
        self.batch = batch
        self.memory = memory
        self.kinds = db.kinds if kinds is None else kinds
        self.digest = digest  # takes the index records instead of runs (IndexDigest)
        self.keys = keys  # whether the keys the engine parses as no record go to the reference
        self._kept: dict[int, dict[str, np.ndarray]] = {}  # the runs in memory: their SPILLED arrays by name
        self._kept_bytes = 0
        self.found = Findings()
        self.unparsed: list[Entry] = []
        self.runs: list[int] = []  # each run's length
        self._cursors: list[int] = []  # where each run's next window starts
        # (the offset at each run's cursor, its number) for the runs not yet read to their end: a window opens
        # only the runs holding offsets in it, and a run is mapped only while it is searched (a map holds a file
        # descriptor: one per run would run out of them on a large database)
        self._next: list[tuple[int, int]] = []
        self.error: BaseException | None = None
        self.stopped = False
        self.directory = scratch_directory("rocksdbstore")

    def read(self, begun: Callable[[], object] = lambda: None):
        """Every kind's keys (a thread's body: Reading; the rest after its first steps once `begun()` returns).
        Every batch makes 65,536 (key, value) tuples, which start the collector's passes over every object the
        process holds (numba's alone are many); they hold no cycles, so the collector is paused while they are
        made, and left as it was found (never frozen: it would undo the launcher's or a library user's)."""
        collecting = gc.isenabled()
        gc.disable()
        try:
            waiting = _collecting_while(begun) if collecting else begun
            args = (self._store, self.said, lambda: self.stopped, self.kinds, self.digest, self.keys, waiting)
            spill(self.db, self.batch, *args)
        finally:
            if collecting:
                gc.enable()

    def _store(self, number: int, records: Records):
        """Run `number`'s arrays (SPILLED) kept in memory if they fit what is left of `memory`, else spilled as
        a raw file per array, named number-array (the columns are parsed again when the run is read: 80
        bytes a record gathered, held or written cost more than parsing the key again)."""
        arrays = {name: np.ascontiguousarray(getattr(records, name)) for name in SPILLED}
        size = sum(a.nbytes for a in arrays.values())
        if self._kept_bytes + size <= self.memory:
            self._kept[number] = arrays
            self._kept_bytes += size
            return
        for name, array in arrays.items():
            # written through Python's file, whose write and close raise on a full disk (numpy's tofile leaves
            # a short file without a word when the last flush fails)
            with open(self.directory / f"{number}-{name}", "wb") as f:
                f.write(memoryview(array).cast("B"))

    def said(self, message: tuple):
        """What `spill` says: a run written, or a key the engine parses as no record."""
        if message[0] == "run":
            _, first, length = message
            heapq.heappush(self._next, (first, len(self.runs)))
            self.runs.append(length)
            self._cursors.append(0)
            return
        _, kind, key, value = message
        e = entry(kind, key, value)
        if e.record is not None:
            self.unparsed.append(e)
        else:
            key_problem(self.found, self.db, e)

    def between(self, lo: int, hi: int) -> Records | None:
        """Every run's records naming offsets in [lo, hi) (the last window: [lo, hi]), in commitlog order, read
        from the runs' files; asked for windows in ascending order, each run read on from where the last window
        ended; their columns parsed once they are joined (a row that no longer parses: see _changed)."""
        spans = list(self._spans(lo, hi))
        parts = [self._read(number, a, b) for number, a, b in spans]
        self._let_go(number for number, _, _ in spans)
        if not parts:
            return None
        records = concatenated(parts)
        if not _parse_columns(records):
            self._changed([number for number, _, _ in spans], parts)
        return records

    def slices(self, lo: int, hi: int) -> Iterator[Records]:
        """between(lo, hi) cut into slices of about a batch of records each, in commitlog order (more only where
        more keys name one offset): where no file is, every record is one the reference names, however many."""
        while self._next and (self._next[0][0] < hi or hi == NOWHERE.max):
            cut = self._cut(hi)
            records = self.between(lo, cut)
            if records is not None:
                yield records
            lo = cut

    def _cut(self, hi: int) -> int:
        """An offset at most `hi` below which each run holding records under it has its share of a batch at most
        (and at least the next record's offset, so that every slice takes one)."""
        share, cut = max(1, self.batch // len(self._next)), hi
        for _, number in self._next:
            offsets = self._offsets(number)  # mapped only here (_next)
            if self._cursors[number] + share < len(offsets):
                cut = min(cut, int(offsets[self._cursors[number] + share]))
            del offsets
        return hi if self._next[0][0] >= hi else max(cut, self._next[0][0] + 1)

    def skip(self, lo: int, hi: int):
        """Pass the records naming offsets in [lo, hi) without reading them (expired: nothing to check)."""
        self._let_go(number for number, _, _ in self._spans(lo, hi))

    def _let_go(self, numbers):
        """The kept runs among `numbers` read to their end given back (what was read from them lives on only in
        the records taken)."""
        for number in numbers:
            if self._cursors[number] == self.runs[number] and number in self._kept:
                self._kept_bytes -= sum(a.nbytes for a in self._kept.pop(number).values())

    def _spans(self, lo: int, hi: int) -> Iterator[tuple[int, int, int]]:
        """(run, first row, end row) of each run holding records in [lo, hi), each run's cursor moved past them."""
        side = "right" if hi == NOWHERE.max else "left"  # the last window holds Long.MAX_VALUE too
        while self._next and (self._next[0][0] < hi or side == "right"):
            _, number = heapq.heappop(self._next)
            # mapped only for this search (see _next)
            offsets = self._offsets(number)
            a = self._cursors[number]
            a += int(np.searchsorted(offsets[a:], lo))
            b = a + int(np.searchsorted(offsets[a:], hi, side))
            if b < len(offsets):
                heapq.heappush(self._next, (int(offsets[b]), number))
            del offsets
            self._cursors[number] = b
            if a < b:
                yield number, a, b

    def _offsets(self, number: int) -> np.ndarray:
        """Run `number`'s offsets, kept or mapped; all of them, or an error (a run's file cut short by its disk)."""
        if number in self._kept:
            return self._kept[number]["offsets"]
        offsets = np.memmap(self.directory / f"{number}-offsets", np.int64, "r")
        if len(offsets) != self.runs[number]:
            raise StoreError(f"verify's spilled run {number} holds fewer records than were written", self.directory)
        return offsets

    def _read(self, number: int, a: int, b: int) -> Records:
        kept = self._kept.get(number)

        def rows(name, dtype, width=1, first=a, count=b - a):
            if kept is not None:
                out = kept[name].reshape(-1)[first * width : (first + count) * width]
            else:
                out = np.fromfile(
                    self.directory / f"{number}-{name}",
                    dtype,
                    count * width,
                    offset=first * width * np.dtype(dtype).itemsize,
                )
            if len(out) != count * width:
                raise StoreError(f"verify's spilled run {number} holds fewer bytes than were written", self.directory)
            return out.reshape(-1, width) if width > 1 else out

        key_lo, key_hi = rows("key_lo", np.int64), rows("key_hi", np.int64)
        base = int(key_lo[0])
        return Records(
            rows("offsets", np.int64),
            rows("kinds", np.int8),
            NO_COLUMNS,  # (parsed once the window's runs are joined)
            key_lo - base,
            key_hi - base,
            rows("keys", np.uint8, 1, base, int(key_hi[-1]) - base),
            rows("values", np.uint8, E.STORE_VALUE_SLOT),
            rows("value_len", np.int8),
        )

    def _changed(self, numbers: list[int], parts: list[Records]):
        """Raise for the first of the runs whose rows no longer parse as they did when read (the runs' files
        changed under verify)."""
        number = next((n for n, part in zip(numbers, parts) if not _parse_columns(part)), numbers[0])
        raise StoreError(f"verify's spilled run {number} changed while it was read", self.directory)

    def close(self):
        self.runs.clear()
        self._next.clear()
        self._kept.clear()
        shutil.rmtree(self.directory, ignore_errors=True)


@dataclasses.dataclass
class Digest:
    """Index records counted and the sum of their hashes (mod 2^64); `doubtful`: records that make it prove
    nothing (engine.index_digest and table_index_digest for the database's, record_digest for the walk's)."""

    count: int = 0
    total: int = 0
    doubtful: int = 0

    def add(self, count: int, total, doubtful: int):
        self.count += int(count)
        self.total = (self.total + int(total)) & MASK64
        self.doubtful += int(doubtful)


class IndexDigest:
    """The index records' shorter way (engine/rocksdbstore.py): the database's records summed as they are read
    (`add_pairs`, on the reading's thread, in place of runs), and the records IndexRocksDBStore.buildIndex
    makes of each record verify's walk checks summed by the walk (`bounds`, `add_walked`). `proves`: the
    database holds exactly those records, so each agrees with the record it names; if not, they are held
    against the commitlog one by one (check_rocksdb_store). Records below the commitlog's min offset are
    expired on both sides; lastOffsetPy (> 0) bounds what was indexed."""

    def __init__(self, min_offset: int, last_offset: int | None):
        self.min_offset = min_offset
        self.last_offset = last_offset if last_offset is not None and last_offset > 0 else int(NOWHERE.max)
        self.found, self.expected = Digest(), Digest()
        self.direct = False  # its values were the table files' own (sstable), older versions of a key too
        self._tables: list | None = None
        self._listed = False

    def tables_of(self, db) -> list | None:
        """The index's table files as ReadOnlyDB.tables lists them (their metadata read), listed once."""
        if not self._listed:
            self._tables, self._listed = db.tables(INDEX_KIND), True
        return self._tables

    def add_pairs(self, pairs: Pairs) -> np.ndarray:
        """A batch of index pairs summed; the positions of the keys the engine parses as no record, for the
        reference."""
        cols = np.zeros((len(pairs), E.STORE_NCOLUMNS), np.int64)
        spans = (pairs.data, pairs.key_lo, pairs.key_hi, pairs.data, pairs.value_lo, pairs.value_hi)
        ok = E.parse_store_keys(np.full(len(pairs), E.STORE_INDEX, np.int8), *spans, cols)
        self.found.add(*E.index_digest(*spans, ok, self.min_offset, self.last_offset))
        return np.flatnonzero(~ok)

    def table_groups(self, tables: list) -> Iterator[None]:
        """The index records summed from their table files read directly (sstable, in one pass in the engine),
        which are all the data, a group of blocks a step (the caller paces the reading). Every value counts,
        older versions too, which a digest may take; a key of no record other than a bookkeeping one holding an
        int64 is doubtful (an older version is never to be named), and so is a table that turns out unreadable
        mid-way: the digest then proves nothing and RocksDB's reading follows."""
        self.direct = True
        try:
            for t in tables:
                counted = 0
                for group in groups(t):
                    code, values, deletions, *digest = E.table_index_digest(
                        *group, self.min_offset, self.last_offset, *BOOKKEEPING_NAMES
                    )
                    if code != E.SST_READ:
                        raise Unreadable(f"{t.path}: a data block does not decode")
                    counted += values + deletions
                    self.found.add(*digest)
                    del group  # (not held while the caller waits: its ZSTD blocks decoded)
                    yield
                check_count(t, counted)
        except Unreadable:
            self.found.doubtful += 1

    @property
    def bounds(self) -> tuple[int, int]:
        """The commitlog offsets whose records the walk sums (engine.record_digest), both ends included."""
        return self.min_offset, self.last_offset

    def add_walked(self, results: list[list]):
        """The walk's sums of its checked records (scan.ChunkResult.digest), each chunk's once."""
        for r in (r for rs in results for r in rs):
            self.expected.add(*r.digest)

    def proves(self) -> bool:
        found, expected = self.found, self.expected
        return found.doubtful == expected.doubtful == 0 and (found.count, found.total) == (
            expected.count,
            expected.total,
        )


class Reading:
    """RecordRuns.read in a thread of its own (the database opened first, here: one that cannot be opened is
    said before any walk, and the walk's checks read its bookkeeping keys), begun `at_once` or when the caller
    says (`begin`): verify begins it before its walk where the walk leaves a core free, else once the walk is
    done, beside the checks after it, which leave one (on a busy core the reading costs the walk what it
    takes, and runs slower itself). With a store to check `beside` (a stopped one), the runs read are held
    against its commitlog there too (check_runs on `jobs` threads), through a Store of its own: the caller's
    checks map and unmap the same files meanwhile. rocksdict holds the GIL for each key, so its iteration
    shares a core with Python; a forked process measured no faster on 2 cores, and a fork beside the caller's
    threads is not safe (a lock held at the fork hangs the child, an inherited pipe end keeps it writing), so
    the reading stays in this process."""

    def __init__(
        self,
        db,
        memory: int = 0,
        digest: Callable[[], IndexDigest] | None = None,
        at_once: bool = True,
        beside: Store | None = None,
        jobs: int = 1,
    ):
        db.open()
        self.digest = digest() if digest is not None and INDEX_KIND in db.kinds else None
        self.runs = RecordRuns(db, memory=memory, digest=self.digest)
        self.checked: Findings | None = None  # check_runs' findings, where they were taken beside
        self._beside, self._jobs = beside, jobs
        self._begun = threading.Event()
        if at_once:
            self._begun.set()
        self._thread = threading.Thread(target=self._read, name="rmqctl-rocksdbstore", daemon=True)
        try:
            self._thread.start()
        except BaseException:
            self.runs.close()
            raise

    def _read(self):
        block_sigint_here()  # Ctrl-C is the main thread's (rmqctl.budget)
        try:
            self.runs.read(self._begun.wait)  # (its first steps at once: the kernels they load too)
            if self._beside is not None and not self.runs.stopped:
                own = Store(self._beside.root, self._beside.config)
                try:
                    self.checked = check_runs(own, self.runs, self._jobs, lambda: self.runs.stopped)
                finally:
                    own.close()
        except BaseException as e:  # (re-raised by wait, in verify's own thread)
            self.runs.error = e

    def begin(self):
        self._begun.set()

    def wait(self) -> RecordRuns:
        self.begin()
        self._thread.join()
        if self.runs.error is not None:
            self.close()
            raise self.runs.error
        return self.runs

    def close(self):
        """End the reading (at its next batch, or its check at its next window) and remove what it spilled."""
        self.runs.stopped = True
        self.begin()
        self._thread.join()
        self.runs.close()


def start_reading(
    store: Store, memory: int = DEFAULT_MEMORY, digest: bool = False, at_once: bool = True, beside: int = 0
) -> Reading | None:
    """The RocksDB message store's reading, begun `at_once` or by Reading.begin, its runs kept in `memory`
    bytes and spilled past them (None: the store has none, or one not read: info names it). With `digest`, the
    index records are summed instead (IndexDigest: the caller then sums the walk's records with the reading's
    `digest`); with `beside` > 0 (a stopped store), the runs are checked on the reading's thread too, on that
    many threads."""
    db = store.message_rocksdb
    if db is None:
        return None
    q = store.commitlog

    def index_digest() -> IndexDigest:  # (once the database is open: its lastOffsetPy bounds the digest)
        return IndexDigest(q.min_offset if q.files else 0, db.bookkeeping(INDEX_KIND, LAST_OFFSET_PY))

    return Reading(db, memory, index_digest if digest else None, at_once, store if beside else None, beside)


def check_rocksdb_store(store: Store, reading: Reading | None = None, jobs: int = 1) -> Findings:
    """The RocksDB message store's findings (none without the part, or where it is not read: info names it),
    checked against the commitlog on `jobs` threads."""
    reading = reading or start_reading(store)
    if reading is None:
        return Findings()
    try:
        runs = reading.wait()
        found = runs.found
        found += reading.checked if reading.checked is not None else check_runs(store, runs, jobs)
        if runs.digest is not None and not runs.digest.proves():
            found += _index_one_by_one(store, runs, jobs)
        _check_records(found, store, runs.db, sorted(runs.unparsed, key=lambda e: e.record["offsetPy"]))
        for kind in (k for k in (INDEX_KIND, TRANS) if k in runs.db.kinds):
            found += _check_last_offset(store, runs.db, kind)
        return found
    finally:
        reading.close()


def _index_one_by_one(store: Store, first: RecordRuns, jobs: int) -> Findings:
    """The index records read again, as runs, and held against the commitlog one by one: the digest proved
    nothing (the keys the engine parses as no record went to the reference in the first reading, unless that
    read the table files directly)."""
    runs = RecordRuns(first.db, first.batch, first.memory, kinds=(INDEX_KIND,), keys=first.digest.direct)
    try:
        runs.read()
        found = runs.found
        found += check_runs(store, runs, jobs)
        first.unparsed += runs.unparsed
        return found
    finally:
        runs.close()


def windows(store: Store) -> list[tuple[int, int, object]]:
    """The offsets' line cut at 0, at the commitlog's files and every WINDOW bytes within them: (lo, hi, the
    file or None where no file is); each window holds [lo, hi), the last one [lo, hi] (an offsetPy of
    Long.MAX_VALUE is in it). Negative offsets have a window of their own: they are no file's, not expired."""
    q, out, at = store.commitlog, [(int(NOWHERE.min), 0, None)], 0
    for f in q.files:
        lo, end = max(f.start, q.min_offset), f.start + q.file_size
        if lo >= end:
            continue
        if at < lo:
            out.append((at, lo, None))
        out += [(w, min(w + WINDOW, end), f) for w in range(lo, end, WINDOW)]
        at = end
    return out + [(at, int(NOWHERE.max), None)]


def check_runs(store: Store, runs: RecordRuns, jobs: int = 1, stopped: Callable[[], bool] = lambda: False) -> Findings:
    """Every spilled record against the commitlog record it names, a window of the commitlog at a time. Records
    below the commitlog's first offset are expired (Store.expired: the broker serves them so, not as damage),
    so they are passed without being read: a store whose old files were cleaned while the database still
    names them costs no memory for them; those between files or past the end are taken a slice at a time.
    With jobs > 1 the next jobs - 1 windows are held against the commitlog on threads (the engine's check
    releases the GIL) while this thread reads the runs and files each window's findings, in window order. Once
    `stopped`, no further window is begun (what the caller then gets is cut short: for a caller that ends)."""
    found, q = Findings(), store.commitlog
    with concurrent.futures.ThreadPoolExecutor(max(jobs - 1, 1), initializer=block_sigint_here) as pool:
        ahead: collections.deque = collections.deque()  # windows being checked, in order
        for lo, hi, f in windows(store):
            if stopped():
                break
            if f is None and q.files and lo >= 0 and record_expired(lo, q.min_offset):
                runs.skip(lo, min(hi, q.min_offset))
                lo = min(hi, q.min_offset)
            if f is None:  # no record here is in a file: the reference names each
                while ahead:
                    _file_window(found, store, runs.db, *ahead.popleft())
                for records in runs.slices(lo, hi) if lo < hi else ():
                    _check_records(found, store, runs.db, [records.entry(i) for i in range(len(records.offsets))])
                continue
            records = runs.between(lo, hi)
            if records is None:
                continue
            check = None
            if jobs > 1:
                with contextlib.suppress(FileGone):  # (agreed passes a file gone to the reference)
                    _ = f.buf  # mapped here, once: the threads check in the one mapping
                check = pool.submit(agreed, store, records, [(lo, hi, f)])
            ahead.append((records, lo, hi, f, check))
            while len(ahead) > jobs - 1:
                _file_window(found, store, runs.db, *ahead.popleft())
        while ahead:
            _file_window(found, store, runs.db, *ahead.popleft())
    return found


def _file_window(found: Findings, store: Store, db, records: Records, lo: int, hi: int, f, check):
    """A window's records the engine did not show to agree (`check`: its future, None: checked here), checked
    by the reference, and the window's pages given back (what the reference read)."""
    ok = check.result() if check is not None else agreed(store, records, [(lo, hi, f)])
    _check_records(found, store, db, [records.entry(i) for i in np.flatnonzero(~ok).tolist()])
    f.drop_pages(lo - f.start, hi - f.start + store.config.maxMessageSize)
    if hi >= f.start + store.commitlog.file_size:  # the file's last window: its mapping (a descriptor) goes
        f.release()


def agreed(store: Store, records: Records, cuts: list[tuple[int, int, object]] | None = None) -> np.ndarray:
    """Which of the records (in commitlog order) the engine shows to agree with the live commitlog record they
    name, taking the commitlog's files by `cuts` (default: windows(store)). Each cut is read in the file's
    mapping, with room for a record of the largest size the broker stores starting at its end, and its pages
    are given back after (they stay in the page cache: the process keeps one window's); a longer record is
    left to the reference."""
    ok = np.zeros(len(records.offsets), bool)
    for lo, hi, f in windows(store) if cuts is None else cuts:
        a, b = np.searchsorted(records.offsets, [lo, hi])
        if a == b or f is None or not f.path.exists():
            continue
        try:
            mapped = f.buf
        except FileGone:  # deleted since listed (a running broker's expired head): the reference says so
            continue
        start = lo - f.start
        end = min(hi - f.start + store.config.maxMessageSize, f.length, len(mapped), store.commitlog.file_size)
        if start >= end:  # the file ends before the window: no record is read there
            continue
        u8 = np.frombuffer(mapped, np.uint8, end - start, start)
        for code in np.unique(records.kinds[a:b]).tolist():
            mine = a + np.flatnonzero(records.kinds[a:b] == code)
            ok[mine] = E.agree_store_records(
                KIND_CODES[KINDS[code]], u8, len(u8), records.offsets[mine] - lo, records.keys, records.cols, mine
            )
        del u8  # (a view of the mapping: without it the mapping could not be let go)
        f.drop_pages(lo - f.start, end)
    return ok


def key_problem(found: Findings, db, e: Entry):
    """A key the reference reads as no record: a finding when it is not what the broker writes."""
    if e.problem is not None:
        found.add(
            GROUPS[e.kind],
            "rocksdb-store-key",
            "error",
            db.where(e.kind),
            None,
            None,
            f"RocksDB message store {e.kind} key {e.key.hex()}: {e.problem}",
        )


def _check_records(found: Findings, store: Store, db, batch: list[Entry]):
    """The reference's check of records in commitlog order, each record they name read once (a key the engine
    took for a record and the reference reads as none, a bookkeeping key of a record's length, is a key)."""
    end = _log_end(store)
    at, m, err = None, None, None
    for e in batch:
        if e.record is None:
            key_problem(found, db, e)
            continue
        off = e.record["offsetPy"]
        if off != at:
            at, m, err = off, None, None
            if 0 <= off < end and not store.expired(off):
                try:
                    _, m = store.read_message(off)
                except StoreError as problem:
                    err = problem
        _check_record(found, store, db.where(e.kind), e, m, err, end)


def _check_record(found: Findings, store: Store, where, e: Entry, m: Message | None, err: StoreError | None, end: int):
    off = e.record["offsetPy"]
    name = f"RocksDB message store {e.kind} record {_label(e)}"
    if off < 0:  # in no file, ever: no record starts there (never expired: below every file's start)
        found.add(
            GROUPS[e.kind],
            "rocksdb-store-bad-target",
            "error",
            where,
            None,
            None,
            f"{name} names commitlog offset {off}, which is negative: no record starts there",
        )
        return
    if m is None and err is None:
        if not store.expired(off):
            found.add(
                GROUPS[e.kind],
                "rocksdb-store-past-end",
                "error",
                where,
                None,
                None,
                f"{name} names commitlog offset {off}, past the end of the commitlog ({end})",
            )
        return
    if err is not None:
        found.add(GROUPS[e.kind], "rocksdb-store-bad-target", "error", where, None, off, f"{name}: {err}")
        return
    wrong = MISMATCHES[e.kind](e.record, m)
    if wrong:
        found.add(
            GROUPS[e.kind],
            "rocksdb-store-mismatch",
            "error",
            where,
            None,
            off,
            f"{name} at commitlog offset {off}: " + "; ".join(wrong),
        )


def _log_end(store) -> int:
    """Where the commitlog's files end: an offset at or past it is in no file."""
    return store.commitlog.files[-1].start + store.commitlog.file_size if store.commitlog.files else 0


def _label(e: Entry) -> str:
    r = e.record
    if e.kind == INDEX_KIND:
        return f"{r['topic']}@{r['type']}@{r.get('key', r['uniqKey'])}"
    return f"{r.get('topic', '')}{'@' if 'topic' in r else ''}{r['uniqKey']}"


def _index_mismatch(r: dict, m: Message) -> list[str]:
    wrong = []
    if m.topic != r["topic"]:
        wrong.append(f"topic {r['topic']!r}, the record's {m.topic!r}")
    if m.uniq_key != r["uniqKey"]:
        wrong.append(f"uniqKey {r['uniqKey']}, the record's {m.uniq_key}")
    if r["type"] == "K" and r["key"] not in (m.keys or "").split(KEY_SEPARATOR):
        wrong.append(f"key {r['key']!r} is not among the record's KEYS {m.keys!r}")
    if r["type"] == "T" and r["key"] != m.properties.get("TAGS"):
        wrong.append(f"tag {r['key']!r}, the record's TAGS {m.properties.get('TAGS')!r}")
    if r["storeTime"] != m.storeTimestamp:
        wrong.append(f"storeTime {r['storeTime']}, the record's {m.storeTimestamp}")
    if not E.in_hour_bucket(r["hour"], r["storeTime"]):
        wrong.append(f"hour bucket {r['hour']} is not the hour its storeTime {r['storeTime']} falls in")
    if m.transaction_type == TRANSACTION_ROLLBACK_TYPE:
        wrong.append("the record is a transaction rollback, which the broker never indexes")
    return wrong


def _size_mismatch(r: dict, m: Message) -> list[str]:
    return [f"sizePy {r['sizePy']}, the record's storeSize {m.storeSize}"] if m.storeSize != r["sizePy"] else []


def _timer_mismatch(r: dict, m: Message) -> list[str]:
    wrong = [f"uniqKey {r['uniqKey']}, the record's {m.uniq_key}"] if m.uniq_key != r["uniqKey"] else []
    out_ms = m.properties.get("TIMER_OUT_MS")
    text = np.frombuffer((out_ms or "").encode("utf-8"), np.uint8)
    parsed_ok, delay = E.java_long(text, 0, len(text))
    if not parsed_ok or delay != r["delayTime"]:
        wrong.append(f"delayTime {r['delayTime']}, the record's TIMER_OUT_MS {out_ms!r}")
    return wrong + _size_mismatch(r, m)


def _trans_mismatch(r: dict, m: Message) -> list[str]:
    topic, txid = m.properties.get("REAL_TOPIC"), m.properties.get("__transactionId__")
    wrong = [f"topic {r['topic']!r}, the record's REAL_TOPIC {topic!r}"] if topic != r["topic"] else []
    if txid != r["uniqKey"]:
        wrong.append(f"uniqKey {r['uniqKey']}, the record's __transactionId__ {txid}")
    return wrong + _size_mismatch(r, m)


MISMATCHES = {INDEX_KIND: _index_mismatch, TIMER_KIND: _timer_mismatch, TRANS: _trans_mismatch}


def _check_last_offset(store: Store, db, kind: str) -> Findings:
    """lastOffsetPy: the offset of the newest record dispatched to this kind; dispatch resumes after it."""
    found, last = Findings(), db.bookkeeping(kind, LAST_OFFSET_PY)
    if last is None or last <= 0 or store.expired(last):
        return found
    if last >= _log_end(store):
        _bookkeeping_error(
            found,
            db,
            kind,
            None,
            f"RocksDB message store {kind} lastOffsetPy {last} is past the end of the commitlog "
            f"({_log_end(store)}): dispatch to it would resume there",
        )
        return found
    try:
        store.read_message(last)
    except StoreError as err:
        _bookkeeping_error(found, db, kind, last, f"RocksDB message store {kind} lastOffsetPy {last}: {err}")
    return found


def _bookkeeping_error(found: Findings, db, kind: str, offset: int | None, detail: str) -> None:
    """A bookkeeping key of one kind's column family that dispatch would resume from wrongly."""
    found.add(GROUPS[kind], "rocksdb-store-bookkeeping", "error", db.where(kind), None, offset, detail)
