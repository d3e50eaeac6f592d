"""ConsumeQueueExt (`enableConsumeQueueExt`, file consume queues of 4.x and 5.x): consumequeue_ext/{topic}/{queueId}/,
files named by their start offset like every MappedFileQueue, holding one unit (schema.ConsumeQueueExtUnit) per
consume queue unit in dispatch order; the consume queue unit's tagsCode then holds its unit's address (the
unit's offset + Long.MIN_VALUE), and the unit the TAGS hash code, the store time and the filter bitmap. RocketMQ
calls the part weakly reliable: a message whose address leads to no unit is delivered unfiltered by tag (the
consumer's client filters it), not lost.

`QueueExt.units` finds the units of addresses as ConsumeQueueExt.get does (findMappedFileByOffset, the
position `offset % mappedFileSize`, the readable end of the last file from ConsumeQueueExt.recover, then
CqExtUnit.read), with what each lookup gives the broker.

Sources: rocketmq-all-4.9.7 store/ConsumeQueueExt.java (get, put, recover, CqExtUnit.read and readBySkip),
ConsumeQueue.java (the constructor, load, isExtAddr, getExt), MappedFileQueue.java (load,
findMappedFileByOffset, truncateDirtyFiles), DefaultMessageStore.getMessage (isTagsCodeLegal),
StorePathConfigHelper.getStorePathConsumeQueueExt; 5.3.3's are the same."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from .config import JAVA_DEFAULTS
from . import schema as S
from .engine import ext_units_end
from .errors import FileGone
from .store import MappedFileQueue, Store, infer_file_size

EXT_DIR = "consumequeue_ext"
DEFAULT_FILE_SIZE = JAVA_DEFAULTS["mappedFileSizeConsumeQueueExt"]
# what ConsumeQueueExt.get gives the broker for an address (DefaultMessageStore.getMessage): a unit; none (delivered
# unfiltered); a ByteBuffer exception (the pull fails); and GONE: in a file deleted since it was listed (a running
# broker's expired head, which it deletes with the consume queue files whose units point there)
FOUND, MISSING, THROWS, GONE = 0, 1, 2, 3


def real_offsets(addresses: np.ndarray) -> np.ndarray:
    """ConsumeQueueExt.unDecorate of ext addresses: address - Long.MIN_VALUE, the unit's offset in the files."""
    return (np.asarray(addresses, np.int64).view(np.uint64) ^ np.uint64(1 << 63)).view(np.int64)


@dataclasses.dataclass
class ExtUnits:
    """The lookups of some addresses: the outcome of each (FOUND, MISSING, THROWS, GONE) and, where FOUND, the
    unit's fields (0 elsewhere)."""

    outcome: np.ndarray
    tags_code: np.ndarray
    store_time: np.ndarray
    size: np.ndarray


class QueueExt:
    """One queue's ConsumeQueueExt files (all `file_size` long, the store's mappedFileSizeConsumeQueueExt), as
    ConsumeQueue's load and recover leave them: ConsumeQueueExt.recover's walk, then `truncate_after` recover's
    maxExtAddr (loaded_queue_ext). Each file is mapped while it is walked or looked into, and given back after."""

    def __init__(self, directory: Path, file_size: int, deletes_empty_last: bool = False):
        self.directory = directory
        self.queue = MappedFileQueue([directory], file_size)
        self.files = self.queue.files
        self.file_size = file_size
        if deletes_empty_last and self.files and self.files[-1].length == 0:
            self.files.pop()  # 5.x MappedFileQueue.doLoad deletes an empty last file ("size is 0, auto delete")
        self.gone_below = 0  # the end of the files deleted since they were listed
        self.ends: list[tuple[int, bool]] = []  # per file: where recover's walk stops, whether it reads there
        for f in list(self.files):
            try:
                self.ends.append(self._walk(f))
            except FileGone:
                self.files.remove(f)
                self.gone_below = max(self.gone_below, f.start + self.file_size)
        self.cut: int | None = None  # where truncate_after cut the files (None: not cut)
        self.truncation_throws = False  # truncate_after's lookup threw: the load fails

    def _walk(self, f) -> tuple[int, bool]:
        """(where ConsumeQueueExt.recover's walk of the file stops, whether it reads there without an exception)."""
        limit = min(f.length, self.file_size)
        if limit == 0:
            return 0, True
        try:
            return tuple(int(v) for v in ext_units_end(np.frombuffer(f.buf, np.uint8), limit))
        finally:
            f.release()

    @property
    def load_fails(self) -> bool:
        """ConsumeQueue.load fails on these files: MappedFileQueue.load refuses one (another length, a name that is no
        offset), or recover's walk throws."""
        wrong = any(f.length != self.file_size for f in self.files)
        return bool(self.queue.strays) or wrong or self.broken_walk is not None or self.truncation_throws

    @property
    def broken_walk(self):
        """The first file where recover's walk throws (the load fails), with where; None."""
        for f, (end, readable) in zip(self.files, self.ends):
            if not readable:
                return f, end
        return None

    def truncate_after(self, address: int) -> list:
        """ConsumeQueueExt.truncateByMaxAddress, which ConsumeQueue.recover calls with its maxExtAddr
        (recover_max_address): MappedFileQueue.truncateDirtyFiles at the end of that address's unit, when there is
        one. Returns the files the load deletes."""
        got = self.units(np.array([address], np.int64))
        self.truncation_throws = bool(got.outcome[0] == THROWS)  # (get's read throws inside recover)
        if got.outcome[0] != FOUND:
            return []  # (the broker logs "[BUG] address ... not found" and truncates nothing)
        at = int(real_offsets(np.array([address]))[0]) + int(got.size[0])
        deleted = [f for f in self.files if f.start > at]
        kept = [k for k, f in enumerate(self.files) if f not in deleted]
        self.files[:] = [self.files[k] for k in kept]
        self.ends = [self.ends[k] for k in kept]
        self.cut = at
        return deleted

    def readable_end(self, k: int) -> int:
        """How far file k reads after the load: a whole file before the last; the last up to where recover's
        walk stopped (truncateDirtyFiles sets its write position there), or where truncate_after cut it."""
        f = self.files[k]
        if k < len(self.files) - 1:
            return min(f.length, self.file_size)
        # (after a cut, the file holding it is the last: the files after it are deleted)
        return self.ends[k][0] if self.cut is None else self.cut - f.start

    def units(self, addresses: np.ndarray) -> ExtUnits:
        """ConsumeQueueExt.get of each address (every one an ext address): the file findMappedFileByOffset finds
        (the first when it finds none for offset 0), the position offset % file size, CqExtUnit.read there."""
        n = len(addresses)
        outcome = np.full(n, MISSING, np.int8)
        tags_code, store_time, size = (np.zeros(n, np.int64) for _ in range(3))
        real = real_offsets(addresses)
        held = {id(f): k for k, f in enumerate(self.files)}
        blocks = real // self.file_size
        found = {int(b): self.queue.find(int(b) * self.file_size) for b in np.unique(blocks)}
        first = self.files and (real == 0).any() and found.get(0) is None  # no file holds offset 0:
        for block, f in found.items():
            if f is None and not (block == 0 and first):
                continue
            # findMappedFileByOffset(0, returnFirstOnNotFound) gives offset 0 the first file
            rows = np.flatnonzero(real == 0 if f is None else blocks == block)
            f = f or self.files[0]
            k = held[id(f)]
            try:
                u8 = np.frombuffer(f.buf, np.uint8)
            except FileGone:
                outcome[rows] = GONE
                continue
            self._read(
                u8, real[rows] % self.file_size, self.readable_end(k), rows, outcome, tags_code, store_time, size
            )
            del u8
            f.release()
        outcome[(outcome == MISSING) & (real < self.gone_below)] = GONE
        return ExtUnits(outcome, tags_code, store_time, size)

    @staticmethod
    def _read(u8, pos, limit, rows, outcome, tags_code, store_time, size):
        """CqExtUnit.read at each position of one file, bounded by what the file reads (`limit`)."""
        # selectMappedBuffer(pos) gives nothing at or past the read position; read() wants 2 bytes of size >= 1
        sized = pos + 2 <= limit
        unit = np.zeros(len(rows), np.int64)
        unit[sized] = u8[pos[sized]].astype(np.int64) << 8 | u8[pos[sized] + 1]
        unit[unit >= 32768] -= 65536
        taken = sized & (unit >= 1)
        head = taken & (pos + S.CQ_EXT_UNIT_MIN_SIZE <= limit)
        outcome[rows[taken & ~head]] = THROWS  # the getLong/getShort past the buffer's limit
        if not head.any():
            return
        at = pos[head]
        heads = u8[at[:, None] + np.arange(S.CQ_EXT_UNIT_MIN_SIZE)].copy().view(S.CQ_EXT_DTYPE).reshape(-1)
        bitmap = heads["bitMapSize"].astype(np.int64)
        whole = (bitmap < 1) | (at + S.CQ_EXT_UNIT_MIN_SIZE + bitmap <= limit)
        got = rows[head]
        outcome[got] = np.where(whole, FOUND, THROWS)
        tags_code[got] = np.where(whole, heads["tagsCode"], 0)
        store_time[got] = np.where(whole, heads["msgStoreTime"], 0)
        size[got] = np.where(whole, unit[head], 0)

    def fields(self, address: int) -> dict:
        """What ConsumeQueueExt.get gives for one address, as a dump row's fields: the unit's tagsCode and store time,
        or why there is none."""
        got = self.units(np.array([address], np.int64))
        if got.outcome[0] == FOUND:
            return {"extTagsCode": int(got.tags_code[0]), "extMsgStoreTime": int(got.store_time[0])}
        return {"extUnit": {MISSING: "not found", THROWS: "unreadable", GONE: "deleted since listed"}[got.outcome[0]]}

    def close(self):
        self.queue.close()


def file_size(root: Path, configured: int | None) -> int:
    """mappedFileSizeConsumeQueueExt: configured, else the one length every queue's non-empty files have, else the
    spacing of their names (a short or grown file is what verify reports), else the default."""
    if configured:
        return configured
    queues = [MappedFileQueue([q], 0).files for t in Store._dirs(root / EXT_DIR) for q in Store._dirs(t)]
    return infer_file_size(queues, "consumequeue_ext", "mappedFileSizeConsumeQueueExt", DEFAULT_FILE_SIZE)


def queue_ext(root: Path, topic: str, queue_id: int, size: int, deletes_empty_last: bool = False) -> QueueExt | None:
    """The queue's ConsumeQueueExt files, all `size` long (None: the queue has no directory of them)."""
    directory = root / EXT_DIR / topic / str(queue_id)
    return QueueExt(directory, size, deletes_empty_last) if directory.is_dir() else None


def recover_max_address(cq) -> int | None:
    """The maxExtAddr of ConsumeQueue.recover: the last extension address among the units its walk passes (from
    the third file from the end, unit by unit while offset >= 0 and size > 0, on to the next file only past a
    whole one); None when it passes none."""
    files, size = cq.files.files, cq.files.file_size
    last = None
    for f in files[max(len(files) - 3, 0) :]:
        units = np.frombuffer(f.buf, S.CQ_DTYPE, count=min(f.length, size) // S.CQ_UNIT_SIZE)
        bad = np.flatnonzero((units["commitLogOffset"] < 0) | (units["size"] <= 0))
        walked = units["tagsCode"][: bad[0] if len(bad) else len(units)].astype(np.int64)
        ext = np.flatnonzero(walked <= S.CQ_EXT_MAX_ADDRESS)
        if len(ext):
            last = int(walked[ext[-1]])
        del units
        f.release()
        if len(bad) or len(walked) * S.CQ_UNIT_SIZE < size:
            break
    return last


def loaded_queue_ext(root: Path, cq, size: int, major: int, live: bool = False) -> tuple:
    """(the queue's ConsumeQueueExt files as ConsumeQueue's load leaves them, the files that load deletes): 5.x's
    doLoad drops an empty last file, recover walks the units, then truncateByMaxAddress at recover's maxExtAddr
    when the load succeeds (not on a running broker's store: its next start truncates, at its own last unit).
    (None, []) for a queue without ext files."""
    ext = queue_ext(root, cq.topic, cq.queue_id, size, deletes_empty_last=major >= 5)
    if ext is None or ext.load_fails or live:
        return ext, []
    address = recover_max_address(cq)
    return ext, [] if address is None else ext.truncate_after(address)
