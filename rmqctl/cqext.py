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
from collections import Counter
from pathlib import Path

import numpy as np

from . import schema as S
from .engine import ext_units_end
from .errors import FileGone
from .store import MappedFileQueue

EXT_DIR = "consumequeue_ext"
DEFAULT_FILE_SIZE = 48 * 1024 * 1024  # MessageStoreConfig.mappedFileSizeConsumeQueueExt
# what ConsumeQueueExt.get gives the broker for an address (DefaultMessageStore.getMessage): a unit; none (delivered
# unfiltered); a ByteBuffer exception (the pull fails); and GONE: in a file deleted since it was listed (a running
# broker's expired head, which it deletes with the consume queue files whose units point there)
FOUND, MISSING, THROWS, GONE = 0, 1, 2, 3


def real_offsets(addresses: np.ndarray) -> np.ndarray:
    """ConsumeQueueExt.unDecorate of ext addresses: address - Long.MIN_VALUE, the unit's offset in the files."""
    return (np.asarray(addresses, np.int64).view(np.uint64) ^ np.uint64(1 << 63)).view(np.int64)


@dataclasses.dataclass
class ExtUnits:
    """The lookups of some addresses: the outcome of each (FOUND, MISSING, THROWS) and, where FOUND, the unit's
    fields (0 elsewhere)."""

    outcome: np.ndarray
    tags_code: np.ndarray
    store_time: np.ndarray


class QueueExt:
    """One queue's ConsumeQueueExt files, loaded as ConsumeQueueExt.load and recover load them."""

    def __init__(self, directory: Path, configured_size: int | None):
        self.directory = directory
        self.queue = MappedFileQueue([directory], configured_size or DEFAULT_FILE_SIZE)
        self.files = self.queue.files
        lengths = Counter(f.length for f in self.files if f.length > 0)
        if configured_size is None and lengths:
            # the length most files have: the others are the ones MappedFileQueue.load refuses
            self.queue.file_size = lengths.most_common(1)[0][0]
        self.file_size = self.queue.file_size
        self.gone_below = 0  # the end of the files deleted since they were listed
        walked = []
        for f in list(self.files):
            try:
                walked.append(self._walk(f))
            except FileGone:
                self.files.remove(f)
                self.gone_below = max(self.gone_below, f.start + self.file_size)
        self.ends = walked

    def _walk(self, f) -> tuple[int, bool]:
        """(where ConsumeQueueExt.recover's walk of the file stops, whether it reads there without an exception)."""
        limit = min(f.length, self.file_size)
        if limit == 0:
            return 0, True
        return tuple(int(v) for v in ext_units_end(np.frombuffer(f.buf, np.uint8), limit))

    @property
    def wrong_sizes(self) -> list:
        """Files MappedFileQueue.load refuses (a length other than mappedFileSizeConsumeQueueExt): the load fails."""
        return [f for f in self.files if f.length != self.file_size]

    @property
    def broken_walk(self):
        """The first file where recover's walk throws (the load fails), with where; None."""
        for f, (end, readable) in zip(self.files, self.ends):
            if not readable:
                return f, end
        return None

    def readable_end(self, k: int) -> int:
        """How far file k reads after the load: a whole file before the last; the last up to where recover's
        walk stopped (truncateDirtyFiles sets its write position there)."""
        f = self.files[k]
        return min(f.length, self.file_size) if k < len(self.files) - 1 else self.ends[k][0]

    def units(self, addresses: np.ndarray) -> ExtUnits:
        """ConsumeQueueExt.get of each address (every one an ext address)."""
        n = len(addresses)
        outcome = np.full(n, MISSING, np.int8)
        tags_code = np.zeros(n, np.int64)
        store_time = np.zeros(n, np.int64)
        real = real_offsets(addresses)
        for k, f in enumerate(self.files):
            here = (real >= f.start) & (real < f.start + self.file_size)
            if k == 0:
                here |= (real == 0) & self._nowhere(real)  # findMappedFileByOffset(0, returnFirstOnNotFound)
            rows = np.flatnonzero(here)
            if not len(rows):
                continue
            try:
                u8 = np.frombuffer(f.buf, np.uint8)
            except FileGone:
                outcome[rows] = GONE
                continue
            pos = real[rows] % self.file_size
            limit = self.readable_end(k)
            # selectMappedBuffer(pos) gives nothing at or past the read position; read() wants 2 bytes of size >= 1
            sized = pos + 2 <= limit
            size = np.zeros(len(rows), np.int64)
            size[sized] = u8[pos[sized]].astype(np.int64) << 8 | u8[pos[sized] + 1]
            size[size >= 32768] -= 65536
            taken = sized & (size >= 1)
            head = taken & (pos + S.CQ_EXT_UNIT_MIN_SIZE <= limit)
            outcome[rows[taken & ~head]] = THROWS  # the getLong/getShort past the buffer's limit
            if not head.any():
                continue
            at = pos[head]
            heads = u8[at[:, None] + np.arange(S.CQ_EXT_UNIT_MIN_SIZE)].copy().view(S.CQ_EXT_DTYPE).reshape(-1)
            bitmap = heads["bitMapSize"].astype(np.int64)
            whole = (bitmap < 1) | (at + S.CQ_EXT_UNIT_MIN_SIZE + bitmap <= limit)
            got = rows[head]
            outcome[got] = np.where(whole, FOUND, THROWS)
            tags_code[got] = np.where(whole, heads["tagsCode"], 0)
            store_time[got] = np.where(whole, heads["msgStoreTime"], 0)
        outcome[(outcome == MISSING) & (real < self.gone_below)] = GONE
        return ExtUnits(outcome, tags_code, store_time)

    def fields(self, address: int) -> dict:
        """What ConsumeQueueExt.get gives for one address, as a dump row's fields: the unit's tagsCode and store time,
        or why there is none."""
        got = self.units(np.array([address], np.int64))
        if got.outcome[0] == FOUND:
            return {"extTagsCode": int(got.tags_code[0]), "extMsgStoreTime": int(got.store_time[0])}
        return {"extUnit": {MISSING: "not found", THROWS: "unreadable", GONE: "deleted since listed"}[got.outcome[0]]}

    def _nowhere(self, real: np.ndarray) -> np.ndarray:
        """Offsets no file holds (findMappedFileByOffset finds no file)."""
        first, last = self.files[0].start, self.files[-1].start + self.file_size
        return (real < first) | (real >= last)

    def close(self):
        self.queue.close()


def queue_ext(root: Path, topic: str, queue_id: int, configured_size: int | None) -> QueueExt | None:
    """The queue's ConsumeQueueExt files (None: the queue has no directory of them)."""
    directory = root / EXT_DIR / topic / str(queue_id)
    return QueueExt(directory, configured_size) if directory.is_dir() else None
