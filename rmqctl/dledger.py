"""DLedger mode (`enableDLegerCommitLog=true`): the commitlog is DLedger's entry store. Every message is the
body of one entry in `{root}/dledger-{selfId}/data/` behind a 48-byte entry header, so its commitlog offset is
the entry's pos + 48, and the bytes at that offset of the data files are the record itself. This module reads
that layer: the layout, the entries of a data file, the index units, `checkpoint` and `currterm`. The store
model (store.py) presents the records in the plain commitlog's shape on top of it.

Sources: openmessaging/dledger tag dledger-all-0.3.1.2 (DLedgerConfig.getDefaultPath/getDataStorePath/
getIndexStorePath, MmapFileList, DLedgerMmapFileStore, DLedgerEntryCoder) and apache/rocketmq
rocketmq-all-4.9.7 store/.../dledger/DLedgerCommitLog.java (the data file size is mappedFileSizeCommitLog; a
record's PHYSICALOFFSET is entry pos + BODY_OFFSET, set by its append hook).
"""

from __future__ import annotations

import dataclasses
import functools
from array import array
from pathlib import Path
from typing import Iterator

import numpy as np

from . import schema as S
from .config import BrokerConfig, read_properties, split_paths
from .javacompat import parse_long
from .engine import ColumnViews
from .errors import RmqError
from .record import Message, RecordError, read_record
from .rules import BLANK, RECORD, record_magic

# DLedgerConfig.mappedFileSizeForEntryIndex: INDEX_UNIT_SIZE * 5 * 1024 * 1024 (no broker key sets it)
DEFAULT_INDEX_FILE_SIZE = S.DLEDGER_INDEX_UNIT_SIZE * 5 * 1024 * 1024
HEADER_FIELDS = tuple(name for name, _ in S.fixed_fields(S.DLedgerEntryHeader))
ENTRY_HEADER_DTYPE = S.compile_dtype(S.DLedgerEntryHeader)
INDEX_FIELDS = tuple(name for name, _ in S.fixed_fields(S.DLedgerIndexUnit))
KEPT_FIELDS = 4  # Recovery.kept's columns
ENTRY_SLICE = 64 << 20  # the bytes of a data file whose entries a walk holds at once (entry_slices)


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where a DLedger store keeps its files (DLedgerConfig with storeBaseDir = the store root)."""

    home: Path  # dledger-{selfId}: DLedgerConfig.getDefaultPath()
    data_dirs: tuple[Path, ...]  # getDataStorePath(): storePathDLedgerCommitLog, else home/data

    @property
    def index_dir(self) -> Path:
        return self.home / "index"

    @property
    def checkpoint_path(self) -> Path:
        return self.home / "checkpoint"

    @property
    def currterm_path(self) -> Path:
        return self.home / "currterm"


def detect(root: Path, config: BrokerConfig) -> Layout | None:
    """DLedger mode from broker.conf (enableDLegerCommitLog, dLegerSelfId, storePathDLedgerCommitLog), or,
    without it, from the layout: no file in commitlog/ (DLedgerCommitLog's deleteExpiredFile leaves the directory
    empty) and exactly one dledger-*/data directory."""
    if config.enableDLegerCommitLog:
        self_id = config.dLegerSelfId
        if not self_id:
            found = _dledger_homes(root)
            if len(found) != 1:
                raise RmqError(
                    "enableDLegerCommitLog=true but dLegerSelfId is not set and the store does not show it "
                    f"({len(found)} dledger-* directories)",
                    root,
                )
            self_id = found[0].name.removeprefix("dledger-")
        home = root / f"dledger-{self_id}"
    elif config.storePathCommitLog or _holds_files(root / "commitlog"):
        return None
    else:
        found = _dledger_homes(root)
        if len(found) != 1:
            return None
        home = found[0]
    if config.storePathDLedgerCommitLog:
        data = tuple(split_paths(config.storePathDLedgerCommitLog))
    else:
        data = (home / "data",)
    old = root / "commitlog"
    if old not in data and _holds_files(old):
        raise RmqError(
            "the store holds an old commitlog before its DLedger log (a broker switched to "
            "enableDLegerCommitLog=true: DLedgerCommitLog's dividedCommitlogOffset); rmqctl reads one or "
            "the other, not both",
            old,
        )
    return Layout(home, data)


def _holds_files(directory: Path) -> bool:
    return directory.is_dir() and any(p.is_file() for p in directory.iterdir())


def _dledger_homes(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.name.startswith("dledger-") and (p / "data").is_dir())


def read_state(path: Path) -> dict[str, str] | None:
    """`checkpoint` (endIndex, committedIndex) or `currterm` (currTerm, voteLeader): Java properties."""
    if not path.is_file():
        return None
    return read_properties(path)


def state_long(state: dict[str, str] | None, key: str) -> int | None:
    """A long of checkpoint/currterm as DLedger reads it (Long.valueOf of the trimmed text); None when absent
    or not a number (where it throws: state_unreadable)."""
    if not state or key not in state:
        return None
    return parse_long(state[key].strip())


def state_unreadable(state: dict[str, str] | None, key: str) -> bool:
    """A value DLedger's recovery reads and throws on: not blank, and not a number to Long.valueOf (then the
    broker's load fails)."""
    return bool(state) and bool(state.get(key, "").strip()) and state_long(state, key) is None


@dataclasses.dataclass
class Stop:
    """Why the walk of a data file ended before its BLANK or its zero tail: `kind` names the finding."""

    position: int
    kind: str
    detail: str


@dataclasses.dataclass
class FileEntries:
    """The entries of one data file in order, as columns (int64 arrays, positions inside the file), and how
    the file ends: a BLANK (`blank`: position, its size field), zeros (`end`), or bytes that cannot be an
    entry (`stop`)."""

    position: np.ndarray
    magic: np.ndarray
    size: np.ndarray
    index: np.ndarray
    term: np.ndarray
    pos: np.ndarray
    channel: np.ndarray
    chainCrc: np.ndarray
    bodyCrc: np.ndarray
    bodyLength: np.ndarray
    end: int  # where the walk ended (the BLANK, the first zero header, or the stop)
    blank: tuple[int, int] | None
    stop: Stop | None

    def __len__(self):
        return len(self.position)

    def entry(self, i: int, file_start: int) -> dict:
        """The entry fields `dump commitlog` shows with its record."""
        return dict(zip(S.DLEDGER_DUMP_FIELDS, map(int, self.entry_columns[i])))

    @functools.cached_property
    def entry_columns(self) -> np.ndarray:
        """schema.DLEDGER_DUMP_FIELDS of every entry, side by side: (entries, fields) int64."""
        return np.stack([self.index, self.term, self.pos, self.size, self.position], axis=1)

    def message_starts(self) -> np.ndarray:
        """In-file positions of the records (the entry bodies)."""
        return self.position + S.DLEDGER_BODY_OFFSET

    def message_ends(self) -> np.ndarray:
        return self.position + self.size


def walk_entries(buf, limit: int, start: int = 0, stop: int | None = None) -> FileEntries:
    """The entries of a data file that start in [start, stop) (`start` an entry start; `stop` None: to the
    end), by their size fields, as MmapFileList's readers and DLedgerMmapFileStore.recover step through
    them (engine/dledger.entry_heads): an int -1 is the BLANK that ends a full file, a size of 0 is the end
    of the data. The walk goes on over entries whose fields disagree (pos, bodyLength, index, term: the
    verifier's business) and stops where the next entry cannot be located: a magic other than 1, a size
    smaller than the header, or one that runs past the file. A walk cut by `stop` has `end` at or past it,
    where the next slice starts, and neither `blank` nor `stop`."""
    from . import engine as KD  # (numba: the kernels load with the commands that walk entries)

    stop = limit if stop is None else min(stop, limit)
    u8 = _bytes(buf, limit)
    # as many entries as headers fit: pages of `out` past the entries found are never touched
    out = np.empty(max(0, stop - start) // S.DLEDGER_ENTRY_HEADER.size + 1, np.int64)
    n, end, outcome = KD.entry_heads(u8, limit, start, stop, out)
    position = out[:n].copy()
    heads = np.zeros((n, S.DLEDGER_ENTRY_HEADER.size), np.uint8)
    for k in range(S.DLEDGER_ENTRY_HEADER.size):
        heads[:, k] = u8[position + k]
    fields = heads.view(ENTRY_HEADER_DTYPE).ravel()
    by_name = {name: fields[name].astype(np.int64) for name in HEADER_FIELDS}
    blank = stopped = None
    if outcome == KD.ENTRY_BLANK:
        blank = (end, S.DLEDGER_BLANK.unpack_from(buf, end)[1])
    elif outcome not in (KD.ENTRY_REACHED, KD.ENTRY_FILE_END, KD.ENTRY_ZERO_SIZE):
        stopped = _stop(buf, limit, end, outcome, KD)
    return FileEntries(position=position, **by_name, end=end, blank=blank, stop=stopped)


def reput_reads_on(buf, limit: int, at: int, allow_v2: bool) -> int | None:
    """Where RocketMQ's reput reads on past an entry whose header the entry walk stops at (`at`), or None where
    it does not: DLedgerCommitLog.checkMessageAndReturnSize reads only the entry's first two ints (the BLANK's
    magic ends the file; a commitlog magic in the size field sends it to CommitLog's own reading) and the
    record in the body, and steps by the record's size + the header's 48 bytes. So the broker dispatched that
    record and the entries after it, which DLedger's recovery will still truncate at its next start."""
    if at + S.DLEDGER_MIN_BLANK > limit:
        return None
    magic, old = S.DLEDGER_BLANK.unpack_from(buf, at)
    if magic == S.DLEDGER_BLANK_MAGIC or record_magic(old, old, allow_v2) in (RECORD, BLANK):
        return None
    body = at + S.DLEDGER_BODY_OFFSET
    try:
        record = read_record(buf, body, limit, allow_v2)
    except RecordError:
        return None
    return body + record.storeSize if isinstance(record, Message) else None


def slice_starts(buf, limit: int, size: int) -> list[int]:
    """Entry starts that cut a data file's entries into slices of about `size` bytes: 0, then each first
    entry at or past `size` bytes after the last cut, for as long as the entry walk goes on."""
    from . import engine as KD  # (numba: the kernels load with the commands that walk entries)

    u8 = _bytes(buf, limit)
    out = np.empty(1 << 16, np.int64)  # (positions the walk writes and nobody reads: a page or two of them)
    cuts, p = [0], 0
    while True:
        goal = cuts[-1] + size
        _, p, outcome = KD.entry_heads(u8, limit, p, goal, out)
        if outcome != KD.ENTRY_REACHED:
            return cuts
        if p >= goal:
            cuts.append(p)


def entry_slices(buf, limit: int, size: int) -> Iterator[FileEntries]:
    """walk_entries over a whole data file, a slice of about `size` bytes at a time (so what is held is one
    slice's entries); the last slice says how the file ends."""
    cuts = slice_starts(buf, limit, size)
    for a, b in zip(cuts, cuts[1:] + [None]):
        yield walk_entries(buf, limit, a, b)


def _bytes(buf, limit: int) -> np.ndarray:
    """The first `limit` bytes of a data file's map for the kernels (an empty file: zeros they stop at)."""
    return np.frombuffer(buf, np.uint8, count=limit) if limit else np.zeros(S.DLEDGER_MIN_BLANK, np.uint8)


def _stop(buf, limit: int, p: int, outcome: int, KD) -> Stop:
    """The finding for an entry walk that ends at p without a BLANK or the end of the data (`outcome`: one
    of engine.dledger's, KD)."""
    magic, size = S.DLEDGER_BLANK.unpack_from(buf, p)
    head = S.DLEDGER_ENTRY_HEADER.size
    if outcome == KD.ENTRY_SHORT_HEAD:
        return Stop(p, "truncated-entry", f"an entry header needs {head} bytes, {limit - p} are left in the file")
    if outcome == KD.ENTRY_ILLEGAL_MAGIC:
        return Stop(p, "illegal-magic", f"entry magic {magic}, DLedger writes {S.DLEDGER_MAGIC}")
    if outcome == KD.ENTRY_SMALL_SIZE:
        return Stop(p, "bad-length", f"entry size {size} is smaller than the {head}-byte entry header")
    return Stop(p, "bad-length", f"entry size {size} runs past the end of the file ({limit - p} bytes left)")


def index_units(buf, count: int) -> np.ndarray:
    """The first `count` 32-byte index units of an index file, as a record array."""
    return np.frombuffer(buf, dtype=S.DLEDGER_INDEX_DTYPE, count=count)


class DLedgerScan(ColumnViews):
    """CommitLogScan's interface over a DLedger data file queue: the records in entry order, each with its
    entry (`Message.dledger`), and in `errors` (file, position, RecordError) where an entry cannot be
    located or its body is not a record (the broker's reput skips such an entry by its size). `entries` is
    the reference walk, record by record; `chunks` the compiled engine's (the same records and errors)."""

    dledger_entries = True

    def __init__(self, queue, allow_v2: bool = True):
        self.queue = queue
        self.allow_v2 = allow_v2
        self.errors: list[tuple[object, int, RecordError]] = []

    def records(self, start: int | None = None, end: int | None = None):
        return self.entries(start, end)

    def entries(self, start: int | None = None, end: int | None = None):
        size = self.queue.file_size
        for f in self.queue.files:
            if end is not None and f.start >= end:
                return
            if start is not None and f.start + size <= start:
                continue
            for found in entry_slices(f.buf, min(len(f.buf), size), ENTRY_SLICE):
                for i, (at, stop_at) in enumerate(zip(found.message_starts().tolist(), found.message_ends().tolist())):
                    off = f.start + at
                    if end is not None and off >= end:
                        return
                    if start is not None and off < start:
                        continue
                    m = self._record(f, at, stop_at)
                    if m is not None:
                        m.dledger = found.entry(i, f.start)
                        yield f, m
            self._file_end(f, found)  # (the last slice says how the file ends)

    def chunks(self, start: int | None = None, end: int | None = None, check_crc: bool = False, **batch):
        """The same walk on the compiled engine: bounded batches of columns (rmqctl.engine.Chunk) whose
        `entries` hold each record's entry (`batch` as for CommitLogScan.chunks)."""
        from .engine import walk_entry_files  # the compiled kernels load only for the commands that walk

        return walk_entry_files(
            self.queue.files,
            self.queue.file_size,
            start,
            end,
            self.allow_v2,
            lambda f, limit: entry_slices(f.buf, limit, ENTRY_SLICE),
            self._refused_at,
            self._file_end,
            check_crc,
            **batch,
        )

    def _record(self, f, at: int, stop_at: int) -> Message | None:
        """The record of the entry body [at, stop_at), or None (the refusal in `errors`)."""
        try:
            m = read_record(f.buf, at, stop_at, self.allow_v2)
        except RecordError as e:
            # without its traceback: its frames would keep a view of the mapping (which then cannot close)
            self.errors.append((f, at, e.with_traceback(None)))
            return None
        if not isinstance(m, Message):
            self.errors.append((f, at, RecordError("illegal-magic", "a BLANK record inside a DLedger entry")))
            return None
        return m

    def _refused_at(self, f, at: int, stop_at: int):
        """The engine refused an entry body: the reference names what is wrong there."""
        if self._record(f, at, stop_at) is not None:
            raise AssertionError(f"{f.path} at {at}: the engine refused a record the reference reads")

    def _file_end(self, f, found: FileEntries):
        if found.stop is not None:
            self.errors.append((f, found.stop.position, RecordError(found.stop.kind, found.stop.detail)))
        elif found.blank is None and self._data_follows(f):
            self.errors.append(
                (
                    f,
                    found.end,
                    RecordError(
                        "zeros",
                        "zero bytes where the next entry or the DLedger BLANK should be, and later files hold entries",
                    ),
                )
            )

    def _data_follows(self, f) -> bool:
        later = self.queue.files[self.queue.files.index(f) + 1 :]
        return any(len(g.buf) >= 8 and g.buf[:8] != bytes(8) for g in later)


# ---- DLedgerMmapFileStore.recover ---------------------------------------------------------------------------


@dataclasses.dataclass
class Recovery:
    """What DLedgerMmapFileStore.recover does to a store at start (the broker runs it after every exit, clean
    or not: DLedgerCommitLog.recoverNormally and recoverAbnormally both call it)."""

    start_file: int  # the data file its loop starts from
    cut: int  # processOffset: data past it is truncated (later files deleted)
    stop: Stop | None  # the entry it stopped at (position: absolute offset); None: a clean end
    end_index: int  # ledgerEndIndex (-1: no entry kept)
    end_term: int
    begin_index: int  # ledgerBeginIndex: the first data file's first entry (-1: none)
    index_rewritten_from: int | None  # the entry from which the index units are rewritten from the data
    index_mismatch: str | None  # why (the first unit that disagrees)
    exits: bool  # processOffset more than a file before the last file: DLedger logs and System.exit(-1)
    committed_index: int  # after updateCommittedIndex with the checkpoint's committedIndex (-1: none)
    committed_pos: int  # the committed entry's end: RocketMQ's getMaxOffset (-1: none)
    kept: np.ndarray  # (entries, 4) int64: index, pos, size, term of every entry from the start file on

    @property
    def index_end(self) -> int:
        """Where the index is truncated: (ledgerEndIndex + 1) * 32."""
        return (self.end_index + 1) * S.DLEDGER_INDEX_UNIT_SIZE


def index_files_rewritten(r: Recovery, index_queue) -> tuple[set[int], list[int]]:
    """Which index files DLedger's recovery leaves when it rewrites the units from `r.index_rewritten_from` on
    (recover's catch: indexFileList.truncateOffset(unit) removes the files starting past it, rebuildWithPos(unit)
    all of them when those left do not end at the unit, then one append per entry, a new file whenever the last
    is full): the start offsets of the files it removes and does not make again, and of the files it makes that
    are not there. A file it removes and makes again holds what a rewrite in place gives."""
    if r.index_rewritten_from is None:
        return set(), []
    size = index_queue.file_size
    unit = r.index_rewritten_from * S.DLEDGER_INDEX_UNIT_SIZE
    starts = [f.start for f in index_queue.files]
    left = [s for s in starts if s <= unit]
    wrote = left[-1] + min(unit - left[-1], size) if left else 0  # (a loaded file is full: its wrote position)
    rebuilt = wrote != unit
    first_new = unit - unit % size if rebuilt else wrote + (size - wrote % size) % size
    appended = set(range(first_new, r.end_index * S.DLEDGER_INDEX_UNIT_SIZE + 1, size))
    kept = appended | (set() if rebuilt else set(left))
    return {s for s in starts if s not in kept}, sorted(appended - set(starts))


def _unit(index_queue, entry_index: int):
    """The index unit of an entry (magic, pos, size, index, term), None where indexFileList.getData finds no file."""
    off = entry_index * S.DLEDGER_INDEX_UNIT_SIZE
    f = index_queue.find(off) if entry_index >= 0 else None
    if f is None or off - f.start + S.DLEDGER_INDEX_UNIT_SIZE > len(f.buf):
        return None
    return S.DLEDGER_INDEX_UNIT.unpack_from(f.buf, off - f.start)


def committed_end(state: dict[str, str] | None, index_queue) -> int | None:
    """Where the checkpoint's committedIndex entry ends (its index unit's pos + size): RocketMQ's reput reads no
    further than the committed position (DLedgerCommitLog.getMaxOffset), which the checkpoint trails; None when
    they do not tell."""
    wanted = state_long(state, "committedIndex")
    unit = _unit(index_queue, wanted) if wanted is not None else None
    return unit[1] + unit[2] if unit else None


def _first_entry_matches(f, index_queue) -> bool:
    """recover()'s pre-check of a candidate start file: its first entry sound and equal to its index unit."""
    if len(f.buf) < S.DLEDGER_BODY_OFFSET:
        return False
    magic, size, idx, term, pos, _, _, _, body = S.DLEDGER_ENTRY_HEADER.unpack_from(f.buf, 0)
    if magic == S.DLEDGER_BLANK_MAGIC or magic < S.DLEDGER_MAGIC or size <= S.DLEDGER_HEADER_SIZE:
        return False
    if pos != f.start or body + S.DLEDGER_BODY_OFFSET != size:
        return False
    return _unit(index_queue, idx) == (magic, f.start, size, idx, term)


def recover(data, index_queue, checkpoint: dict[str, str] | None) -> Recovery:
    """DLedgerMmapFileStore.recover over the data and index file queues (store.MappedFileQueue), read-only."""
    files, size = data.files, data.file_size
    if not files:
        return Recovery(0, 0, None, -1, -1, -1, None, None, False, -1, -1, np.zeros((0, KEPT_FIELDS), np.int64))
    start = max(0, len(files) - 3)
    for i in range(start, -1, -1):  # the newest of the last three files whose first entry checks out, else 0
        start = i
        if _first_entry_matches(files[i], index_queue):
            break
    i, rel = start, 0
    process = files[i].start
    last_index = last_term = -1
    rewrite_from = mismatch = stop = None
    kept = array("q")  # 32 bytes an entry: no tuple per entry
    head = S.DLEDGER_ENTRY_HEADER
    while True:
        f = files[i]
        buf = f.buf
        limit = min(len(buf), size)
        at = f.start + rel
        if rel + 4 > limit:
            break  # BufferUnderflowException: the loop ends
        magic = S.INT32.unpack_from(buf, rel)[0]
        if magic == S.DLEDGER_BLANK_MAGIC:
            process = f.start + size
            if i + 1 >= len(files):
                break
            i, rel = i + 1, 0
            process = files[i].start
            continue
        if rel + 8 > limit:
            break
        entry_size = S.INT32.unpack_from(buf, rel + 4)[0]
        if entry_size == 0:
            break  # the end of the data
        if rel + head.size > limit:
            stop = Stop(at, "truncated-entry", "the entry header runs past the end of the file")
            break
        header = head.unpack_from(buf, rel)
        idx, term = header[2], header[3]
        reason = _entry_problem(header, at, entry_size, limit - rel, last_index, last_term)
        if reason is not None:
            stop = Stop(at, *reason)
            break
        if rewrite_from is None:
            unit = _unit(index_queue, idx)
            if unit != (magic, at, entry_size, idx, term):
                rewrite_from = idx
                mismatch = (
                    "no index unit"
                    if unit is None
                    else "unit " + ", ".join(f"{n} {v}" for n, v in zip(INDEX_FIELDS, unit))
                )
        kept.extend((idx, at, entry_size, term))
        last_index, last_term = idx, term
        process += entry_size
        rel += entry_size
    exits = files[-1].start - process > size
    begin = -1
    if last_index != -1 and len(files[0].buf) >= 16:
        begin = S.INT64.unpack_from(files[0].buf, 8)[0]  # reviseLedgerBeginIndex: the first file's first entry
    kept = np.frombuffer(kept, np.int64).reshape(-1, KEPT_FIELDS)
    committed, committed_pos = _committed(
        index_queue, state_long(checkpoint, "committedIndex"), begin, last_index, kept
    )
    return Recovery(
        start,
        process,
        stop,
        last_index,
        last_term,
        begin,
        rewrite_from,
        mismatch,
        exits,
        committed,
        committed_pos,
        kept,
    )


def _entry_problem(
    header: tuple, at: int, entry_size: int, room: int, last_index: int, last_term: int
) -> tuple[str, str] | None:
    """Why recover stops at the entry at commitlog position `at` (kind, detail), checked in the broker's order;
    None: it is taken. `room`: the bytes from the entry to the end of its file."""
    magic, _, idx, term, pos, _, _, _, body = header
    if pos != at:
        return "entry-pos", f"pos field {pos}, the entry is at {at}"
    if body + S.DLEDGER_BODY_OFFSET != entry_size:
        return "entry-size", f"size {entry_size} != bodyLength {body} + {S.DLEDGER_BODY_OFFSET}"
    if entry_size < 0 or entry_size > room:
        return "bad-length", f"size {entry_size} runs past the end of the file"
    if magic != S.DLEDGER_MAGIC:
        return "illegal-magic", f"magic {magic}"
    if last_index != -1 and idx != last_index + 1:
        return "entry-index", f"index {idx} after {last_index}"
    if term < last_term:
        return "entry-term", f"term {term} after {last_term}"
    if entry_size <= S.DLEDGER_HEADER_SIZE:
        return "bad-length", f"size {entry_size} <= {S.DLEDGER_HEADER_SIZE}"
    return None


def _committed(index_queue, wanted: int | None, begin: int, last_index: int, kept: np.ndarray) -> tuple[int, int]:
    """updateCommittedIndex with the checkpoint's committedIndex after the recovery: the committed index
    and the end of its entry (-1, -1: none)."""
    if wanted is None or wanted == -1 or last_index == -1 or wanted < begin:
        return -1, -1
    committed = min(wanted, last_index)
    at = np.flatnonzero(kept[:, 0] == committed)
    if len(at):
        return committed, int(kept[at[-1], 1] + kept[at[-1], 2])
    unit = _unit(index_queue, committed)  # an entry before the start file: its unit (DLedger reads the index)
    return committed, (unit[1] + unit[2] if unit else -1)


def checkpoint_text(committed_index: int, end_index: int) -> str:
    """persistCheckPoint's file: IOUtils.properties2String of a Properties (a Hashtable; this is the order
    its iteration gives for these two keys, as in the fixtures)."""
    return f"committedIndex={committed_index}\nendIndex={end_index}\n"
