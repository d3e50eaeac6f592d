"""Compaction topics (5.x, topic attribute `cleanup.policy=COMPACTION`): `compaction/compactionLog/{topic}/{queueId}/`
holds the topic's records copied from the commitlog with PHYSICALOFFSET rewritten to their place in the
compaction log (QUEUEOFFSET kept), each file ending in an 8-byte `int32 remaining | BLANK_MAGIC_CODE` once full;
`compaction/compactionCq/{topic}/{queueId}/` is its SparseConsumeQueue (46-byte BatchCQ units, batchSize 1, an
end unit `-1, 0, ..., 0` when a file fills), one CQ file per log file with the same name;
`compaction/position-checkpoint` is JSON `queueOffsetMap` (`topic_queueId` -> the highest queue offset the last
compaction took into its key map, CompactionLog.compactAndReplace).

Sources (5.3.3): store/.../kv/CompactionLog.java (getCompactionLogSize, CompactionAppendMessageCallback,
CompactionAppendEndMsgCallback, TopicPartitionLog.recover / sanityCheck), kv/CompactionStore.java (paths),
kv/CompactionService.java (only topics whose CleanupPolicyUtils policy is COMPACTION), queue/SparseConsumeQueue.java
(putEndPositionInfo, recover), MessageStoreConfig (compactionMappedFileSize 100 MiB, compactionCqMappedFileSize
10 MiB).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterator

import numpy as np

from . import schema as S
from .batchcq import BatchConsumeQueue, written_bcq_units
from .configfiles import bean_field, read_text
from .javacompat import parse_long
from .record import Blank, Message, RecordError, read_record
from .store import MappedFile, MappedFileQueue, Store, offset_of_name

DIRECTORY = "compaction"
LOG_DIR, CQ_DIR, CHECKPOINT = "compactionLog", "compactionCq", "position-checkpoint"


def file_sizes(config) -> tuple[int, int]:
    """(log file size, CQ file size) as CompactionLog's constructor derives them: the CQ size in whole units,
    the log size a multiple of it (at least 5, the nearer multiple when the configured size is within half a CQ
    file above one)."""
    cq = config.compactionCqMappedFileSize // S.BCQ_UNIT_SIZE * S.BCQ_UNIT_SIZE
    n, m = divmod(config.compactionMappedFileSize, cq)
    if n < 5:
        return cq * 5, cq
    return (n * cq if 0 < m < (cq >> 1) else (n + 1) * cq), cq


@dataclasses.dataclass
class LogRecord:
    """One record of a compaction log file, or what stopped the walk there."""

    file: MappedFile
    position: int
    message: Message | None  # None: the file's end (BLANK) or bytes that are not a record
    end: str | None = None  # "blank", "zeros" or the RecordError detail


@dataclasses.dataclass
class FolderLoad:
    """MappedFileQueue.doLoad over one folder: the zero-length last entry it deletes, and the file it stops at
    (culprit) with what then happens to the queue."""

    deleted: Path | None = None
    culprit: Path | None = None
    why: str = ""
    store_fails: bool = False  # a NumberFormatException: CompactionStore.load rethrows it, the store does not start


def folder_load(directory: Path, file_size: int) -> FolderLoad:
    """doLoad sorts every entry by name, directories too (skipped), deletes a zero-length last entry, returns
    false at a file of another length (TopicPartitionLog.init throws an IOException, loadAndGetClog drops the
    queue) and parses each other file's name in DefaultMappedFile (a name that is not a number, such as the
    NAME.delete CompactionLog.replaceFiles leaves when it crashes, throws NumberFormatException, which nothing
    catches)."""
    entries = sorted(directory.iterdir(), key=lambda p: p.name) if directory.is_dir() else []
    for i, p in enumerate(entries):
        if p.is_dir():
            continue
        try:
            length = p.stat().st_size
        except FileNotFoundError:
            continue  # deleted since the folder was listed: a running broker's compaction swapping files in
        if length == 0 and i == len(entries) - 1:
            return FolderLoad(deleted=p)
        if length != file_size:
            return FolderLoad(culprit=p, why=f"file is {length} bytes, not {file_size}")
        if offset_of_name(p.name) is None:
            return FolderLoad(culprit=p, why="file name is not a number", store_fails=True)
    return FolderLoad()


class CompactionQueue:
    """One topic-queue's compaction log and its SparseConsumeQueue."""

    def __init__(self, store: Store, topic: str, queue_id: int):
        self.topic, self.queue_id = topic, queue_id
        log_size, cq_size = file_sizes(store.config)
        root = store.root / DIRECTORY
        self.log_dir = root / LOG_DIR / topic / str(queue_id)
        self.log = MappedFileQueue([self.log_dir], log_size)
        self.cq = BatchConsumeQueue(topic, queue_id, root / CQ_DIR / topic / str(queue_id), cq_size)
        # doLoad deletes a zero-length last entry: it takes no part in pairing or in where the log ends
        self.log_load, self.cq_load = folder_load(self.log_dir, log_size), folder_load(self.cq.directory, cq_size)
        for files, load in ((self.log.files, self.log_load), (self.cq.files.files, self.cq_load)):
            files[:] = [f for f in files if f.path != load.deleted]

    def records(self) -> Iterator[LogRecord]:
        """Every record of every log file (file_records of each)."""
        for f in self.log.files:
            yield from self.file_records(f)

    def file_records(self, f: MappedFile) -> Iterator[LogRecord]:
        """One log file's records to its BLANK end or its first bytes that are not a record (then a LogRecord
        without a message says what stopped it); the file released after."""
        buf, pos = f.buf, 0
        limit = min(len(buf), self.log.file_size)
        while pos < limit:
            try:
                rec = read_record(buf, pos, limit)
            except RecordError as e:
                yield LogRecord(f, pos, None, "zeros" if e.kind == "zeros" else e.detail)
                break
            if isinstance(rec, Blank):
                yield LogRecord(f, pos, None, "blank")
                break
            yield LogRecord(f, pos, rec)
            pos += rec.storeSize
        f.release()

    def holds_record(self, f: MappedFile) -> bool:
        """Whether the log file holds a record (a file rolled but never written to is all zeros)."""
        return any([r.message is not None for r in self.file_records(f)])

    def unmatched_files(self) -> tuple[list[str], list[str]]:
        """TopicPartitionLog.sanityCheck: log files without a CQ file of the same name, and CQ files without a
        log file (either fails the broker's load, unless recover deleted the log file first: log_end_at_load)."""
        logs = {f.name for f in self.log.files}
        cqs = {f.name for f in self.cq.files.files}
        return sorted(logs - cqs), sorted(cqs - logs)

    def load_failure(self) -> FolderLoad | None:
        """The folder load that stops this queue's (TopicPartitionLog.init loads the log first), or None."""
        return next((load for load in (self.log_load, self.cq_load) if load.culprit is not None), None)

    def log_end_at_load(self) -> int:
        """Where TopicPartitionLog.recover truncates the log (truncateDirtyFiles): SparseConsumeQueue's
        getMaxPhyOffsetInLog, the end of the last CQ file's last written unit; -1 (no truncation) when it has
        none. Log files starting past it are deleted."""
        if not self.cq.files.files:
            return -1
        f = self.cq.files.files[-1]
        n = min(len(f.buf), self.cq.files.file_size) // S.BCQ_UNIT_SIZE
        arr = np.frombuffer(f.buf, dtype=S.BCQ_DTYPE, count=n) if n else np.empty(0, S.BCQ_DTYPE)
        written = written_bcq_units(arr)
        end = int(arr[written - 1]["commitLogOffset"]) + int(arr[written - 1]["size"]) if written else -1
        del arr
        f.release()
        return end


def queue_dirs(store: Store, sub: str) -> Iterator[tuple[Path, int | None]]:
    """Each {topic}/{queue} directory under compaction/`sub`, with the queueId Integer.parseInt reads from its
    name (None where it throws)."""
    base = store.root / DIRECTORY / sub
    for t in sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else ():
        for q in sorted(p for p in t.iterdir() if p.is_dir()):
            yield q, parse_long(q.name, 32)


def compaction_queues(store: Store) -> list[CompactionQueue]:
    """Every topic/queue directory under compaction/compactionLog (or compactionCq), in order."""
    found = {(q.parent.name, queue_id) for sub in (LOG_DIR, CQ_DIR) for q, queue_id in queue_dirs(store, sub)}
    return [CompactionQueue(store, t, q) for t, q in sorted(found) if q is not None]


def unloadable_dirs(store: Store) -> list[Path]:
    """compactionLog/{topic}/ directories whose names Integer.parseInt refuses: CompactionStore.load throws on
    one, and the broker's load fails."""
    return [q for q, queue_id in queue_dirs(store, LOG_DIR) if queue_id is None]


def position_checkpoint(store: Store) -> tuple[dict[str, int] | None, str | None]:
    """compaction/position-checkpoint's queueOffsetMap (`topic_queueId` -> offset), and what is wrong with the
    file (None: sound or absent)."""
    text = read_text(store.root / DIRECTORY / CHECKPOINT)
    if not text.exists:
        return None, None
    doc = text.document if text.sound else None
    table = bean_field(doc, "queueOffsetMap")
    if not isinstance(table, dict):
        return None, text.error or "no queueOffsetMap"
    try:
        return {str(k): int(v) for k, v in table.items()}, None
    except (TypeError, ValueError):
        return None, "a queueOffsetMap value is not a number"


def end_unit(unit) -> bool:
    """SparseConsumeQueue.putEndPositionInfo's unit: phyOffset -1, size 0, batchSize 0."""
    return int(unit["commitLogOffset"]) == -1 and int(unit["size"]) == 0 and int(unit["batchSize"]) == 0


def cq_units(q: CompactionQueue, only: str | None = None) -> Iterator[tuple[MappedFile, int, dict]]:
    """Each CQ file's units (of the file named `only`, when given) as recover reads them, and the first it stops
    at when that is not zeros (the end unit of a full file, or damage): (file, position, fields)."""
    for f in q.cq.files.files:
        if only is not None and f.name != only:
            continue
        n = min(len(f.buf), q.cq.files.file_size) // S.BCQ_UNIT_SIZE
        arr = np.frombuffer(f.buf, dtype=S.BCQ_DTYPE, count=n) if n else np.empty(0, S.BCQ_DTYPE)
        written = written_bcq_units(arr)
        shown = written + (written < n and arr[written].tobytes() != bytes(S.BCQ_UNIT_SIZE))
        rows = [(f, i * S.BCQ_UNIT_SIZE, {k: int(arr[i][k]) for k in S.BCQ_DTYPE.names}) for i in range(shown)]
        del arr
        f.release()
        yield from rows
