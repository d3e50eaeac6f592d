"""A running broker's store, seen at one moment: the snapshot every read of a live store is judged against.

A broker that holds `lock` appends to the last commitlog file, dispatches to the consumequeues and the newest
index file behind it, rewrites the checkpoint and deletes expired files at the head. A reader that walked to
wherever the bytes end at the moment it looked would see a record half copied, a unit pointing past the records
it read, an index slot pointing at an entry the header does not count yet. So before anything is read the
snapshot records, in this order, the checkpoint, each index file's written part (the newest one's header, hash
slots and counted entries copied: IndexFile.putKey writes the entry, then the slot, then the header's counts),
and last the end of the commitlog's last whole record (decoded with its body CRC). Everything the broker
dispatched before that end refers to records inside it; anything past it is the broker's work in flight, not
damage. What moves under a read all the same (a file the broker deletes at the head) is noted in `moved`.

Sources: CommitLog.putMessage / DefaultMappedFile.appendMessage (records are copied whole into the mapping, then
the write position moves), IndexFile.putKey and IndexHeader (4.9.7 and 5.x), StoreCheckpoint.flush,
CommitLog.deleteExpiredFile (files go from the head).
"""

from __future__ import annotations

import dataclasses
import mmap
import time
from pathlib import Path

import numpy as np

from . import schema as S
from .errors import FileGone, StoreError
from .lock import held_by_rmqctl
from .rules import BLANK, RECORD, written_units


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """Where a running broker's store ended when the read began. `commitlog_end` is one past the last whole
    record; `commitlog_min` the start of the first commitlog file then; `index` the frozen copies of the
    index files the broker was writing (by name), `index_names` the index files there were;
    `moved` what changed under the reads since (the CLI prints it)."""

    pid: int
    commitlog_end: int
    commitlog_min: int
    dispatched_end: int  # where the broker's reput had got to: records from here on had no unit yet
    checkpoint: dict | None
    index: dict
    index_names: tuple
    taken: float
    by_rmqctl: bool = False  # the holder is another rmqctl writing the store, not a broker (lock.held_by_rmqctl)
    # (file, position, what): files the broker deleted while they were read, tails that moved under a read
    moved: list = dataclasses.field(default_factory=list, compare=False)

    @property
    def holder(self) -> str:
        """Who holds the lock, as messages name it (F_GETLK reports pid 0 for a holder in another pid
        namespace)."""
        pid = f"pid {self.pid}" if self.pid else "pid not visible"
        return f"another rmqctl ({pid})" if self.by_rmqctl else f"a broker ({pid})"

    def gone(self, f, what: str = "the read goes on from the next file"):
        """File `f` (a mapped file, or a path) was deleted by the broker (its expired head) while it was read:
        noted in `moved` (once)."""
        if any(g == f for g, _, _ in self.moved):
            return
        self.moved.append(
            (f, 0, f"deleted by the running broker while rmqctl read the store (the log's head moved); {what}")
        )


def head_moved(live: Snapshot | None, f, error: FileGone | None = None):
    """File `f` was deleted while it was read: on a live store (`live`) the broker's expired head, noted in the
    snapshot and the read goes on; on a stopped store an error (`error`, the one met, when there is one)."""
    if live is None:
        raise error or FileGone("deleted while rmqctl read the store", f.path)
    live.gone(f)


def bounded_end(live: Snapshot | None, end: int | None) -> int | None:
    """Where a commitlog read stops: `end`, and on a live store (`live`) no later than the snapshot's end."""
    if live is None:
        return end
    return live.commitlog_end if end is None else min(end, live.commitlog_end)


class FrozenFile:
    """An index file's bytes as they were at the snapshot, in an anonymous mapping (untouched pages cost
    nothing); it offers what the store's MappedFile offers to readers. Giving its pages back would zero them,
    so it keeps them until it is dropped."""

    def __init__(self, path: Path, length: int, parts: list[tuple[int, bytes]]):
        self.path = path
        self.name = path.name
        self.start = 0
        self.length = length
        self.buf = mmap.mmap(-1, length) if length else b""
        for at, data in parts:
            self.buf[at : at + len(data)] = data

    def release(self):
        """Nothing to give back: the copy is the snapshot."""

    def drop_pages(self, lo: int, hi: int):
        """Nothing to give back: the copy is the snapshot."""

    def close(self):
        """The copy lives as long as the snapshot."""


def freeze_index(path: Path, buf, slot_num: int, tries: int = 1000) -> FrozenFile:
    """The written part of an index file the broker may be writing: the header, read until two reads of it
    agree (IndexFile.putKey sets its fields one by one), then the hash slots and the entries the header counts.
    The broker writes an entry, then its slot, then the header's count, so entries under the count are whole;
    a slot copied after the header may name an entry the header does not count yet: it is followed back along
    that entry's prevIndex to the value it had at the snapshot. (Waiting for the header to hold still across
    the slots' copy, 20 MB, never ended beside a broker indexing thousands of messages a second.)"""
    base = S.INDEX_HEADER_SIZE
    entries_at = base + slot_num * S.HASH_SLOT_SIZE
    for _ in range(tries):
        header = bytes(buf[:base])
        if bytes(buf[:base]) == header:
            break
    else:  # the broker wrote the header during every copy of it: no consistent view of this file to judge
        raise StoreError(f"the index file's header changed during each of {tries} reads of it; run again", path)
    slots = np.frombuffer(bytes(buf[base:entries_at]), ">i4").copy()
    count = max(S.INDEX_HEADER.unpack_from(header, 0)[-1], 1)
    entries = bytes(buf[entries_at : entries_at + count * S.INDEX_ENTRY_SIZE])
    prev_at = S.INDEX_ENTRY_AT["prevIndex"]
    for i in np.flatnonzero(slots >= count).tolist():
        entry = int(slots[i])
        while entry >= count:  # each step goes to an older entry; a link that does not is damage, kept as found
            pos = entries_at + entry * S.INDEX_ENTRY_SIZE + prev_at
            prev = S.INT32.unpack_from(buf, pos)[0] if pos + 4 <= len(buf) else entry
            if not 0 <= prev < entry:
                break
            entry = slots[i] = prev
    return FrozenFile(path, len(buf), [(0, header), (base, slots.astype(">i4").tobytes()), (entries_at, entries)])


def commitlog_end(files: list, file_size: int, allow_v2: bool) -> int:
    """One past the last whole record of the commitlog's last file with data (its body CRC checked: a record
    still being copied is not whole), or that file's end when a BLANK closes it. Bytes that are no record with
    a record after them are damage, not the broker's work in flight: the end is found past them (verify then
    reports them)."""
    # the compiled decoder loads only when a live store is read (importing the store model must not load numba)
    from .engine import COLUMN, CRC_OK, NCOLUMNS, data_extents, decode_records, next_record_start

    data = [f for f in files if starts_with_data(f)]
    if not data:
        return files[0].start if files else 0
    f = data[-1]
    u8 = np.frombuffer(f.buf, np.uint8) if len(f.buf) else np.zeros(0, np.uint8)
    limit = min(len(u8), file_size)
    extents = data_extents(f.path, 0, limit)
    searched = extents[-1][1] if extents else 0
    pos = end = 0
    cols = np.empty((4096, NCOLUMNS), np.int64)
    while pos is not None and pos < limit:
        n, pos, outcome = decode_records(u8, pos, limit, allow_v2, True, 1 << 62, cols)
        if n:  # only the last record can be in flight: one whose CRC fails before it is damage, for verify
            last = cols[n - 1]
            end = int(last[COLUMN["position"]] + (last[COLUMN["storeSize"]] if last[CRC_OK] != 0 else 0))
        if outcome == BLANK:
            end = file_size
            break
        if outcome != RECORD:
            pos = next_record_start(f.buf, pos + 1, limit, searched, f.start, file_size, allow_v2)
    del u8
    return f.start + end


def starts_with_data(f) -> bool:
    """A commitlog file whose first record is written (a preallocated or new file is all zero); False for a
    file deleted since it was listed."""
    try:
        return len(f.buf) >= 8 and f.buf[:8] != bytes(8)
    except FileGone:
        return False


def take(store, pid: int, checkpoint: dict | None) -> Snapshot:
    """The snapshot of `store` (held by broker `pid`) after its `checkpoint` was read: then the index files, then
    the commitlog's end."""
    frozen = {}
    index = store.index_paths()
    if index and store.dledger is None and _index_geometry(store):
        slots, num = store.index_geometry
        newest = index[-1]
        try:
            with open(newest, "rb") as fh:
                length = fh.seek(0, 2)
                if length >= S.index_file_size(slots, num):
                    buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                    frozen[newest.name] = freeze_index(newest, buf, slots)
                    buf.close()
        except FileNotFoundError:
            pass  # deleted (expired) since it was listed: nothing is written to it any more
    dispatched = dispatched_end(store.consumequeue_dir)
    q = store.commitlog
    allow_v2 = store.config.rocketmqVersion != 4
    end = commitlog_end(q.files, q.file_size, allow_v2) if store.dledger is None else _dledger_end(q)
    return Snapshot(
        pid,
        end,
        q.min_offset,
        min(dispatched, end),
        checkpoint,
        frozen,
        tuple(p.name for p in index),
        time.time(),
        held_by_rmqctl(pid),
    )


def dispatched_end(consumequeue_dir: Path) -> int:
    """One past the newest unit's record over every queue (its last file's last written unit): the broker's
    reput dispatches the commitlog in order, so every record before it had its units."""
    end = 0
    for qdir in consumequeue_dir.glob("*/*"):
        names = sorted(p.name for p in qdir.iterdir() if S.OFFSET_FILE_NAME.match(p.name)) if qdir.is_dir() else []
        if not names:
            continue
        try:
            data = (qdir / names[-1]).read_bytes()
        except FileNotFoundError:
            continue  # the queue's head, deleted as expired: not its tail
        units = np.frombuffer(data, S.CQ_DTYPE, count=len(data) // S.CQ_UNIT_SIZE)
        n = written_units(units)
        if n:
            end = max(end, int(units[n - 1]["commitLogOffset"]) + int(units[n - 1]["size"]))
    return end


def _index_geometry(store) -> bool:
    """Whether the index geometry is settled; when it is not, the commands that read index files say so."""
    try:
        return bool(store.index_geometry)
    except StoreError:
        return False


def _dledger_end(q) -> int:
    """DLedger's data files are not bounded here (their entries carry their own lengths): the last file's end."""
    return q.files[-1].start + q.file_size if q.files else 0
