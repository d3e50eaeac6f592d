"""`repair`: the broker's recovery at its next start (CommitLog.recoverAbnormally when `abort` is there,
recoverNormally when not; 4.9 and 5.x) as an explicit, reviewable step, then the truncation it implies, applied
atomically (txn.py).

Where the scan starts (recovery.start_file): after a crash, like `isMappedFileMatchedRecover`, the newest
commitlog file whose first record is a message (V1; V1 or V2 for 5.x) with a non-zero storeTimestamp <= the
checkpoint's minimum (min(physicMsgTimestamp, logicsMsgTimestamp) - 3 s, also <= indexMsgTimestamp with
messageIndexEnable and messageIndexSafe), else the first file; without `abort`, where the normal recovery starts
(4.9: the third file from the last; 5.x: the newest file at or before the consumequeues' end). From there records are checked as `checkMessageAndReturnSize(checkCRC
= checkCRCOnRecover)` checks them (body CRC; with forceVerifyPropCRC the property CRC instead), a BLANK moves
to the next file, and the first failure is the cut: the broker's processOffset. Damage in files before the
start file is found and reported but, as by the broker, not cut; `scan_all` cuts at the first bad record
anywhere instead, and both modes say what the other would cut.

What the cut means on disk, all swapped in together:
* the file holding the cut gets a copy with every byte past the last valid record zeroed (a BLANK that ends
  the last file is kept); files starting past the cut are removed (MappedFileQueue.truncateDirtyFiles);
* consumequeue units pointing at or past the cut are dropped (ConsumeQueue.truncateDirtyLogicFiles: files
  whose first unit is past it removed, the rest of the last one zeroed);
* index entries pointing at or past the cut are taken out newest first, undoing IndexFile.putKey exactly
  (slot back to the entry's prevIndex, hashSlotCount, indexCount, endPhyOffset/endTimestamp), so each file
  is the one the broker would have written for the records kept; a file left empty stays only if a kept
  record would have made the broker create it;
* the checkpoint: physicMsgTimestamp / logicsMsgTimestamp no later than the last kept (dispatched) record,
  indexMsgTimestamp = endTimestamp of the last full index file, a 5.x confirmPhyOffset no later than the
  last valid message (as recoverAbnormally sets it); then `abort` is removed so the broker starts normally,
  unless its abnormal recovery would dispatch consumequeue entries the queues miss below the cut (verify's
  cq-missing-entries the broker dispatches again): a normal start reputs only past the queues' end.
Records the broker had not dispatched yet (a consumequeue behind the commitlog) are left to its normal start,
whose reput dispatches everything past the consumequeues' end. Before the swap the staged files are read
back, and `verify` checks the store as the swap will leave it (errors allowed only for the bad records kept
before the recovery start, and their consequences).
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import time
from pathlib import Path
from typing import Callable

import numpy as np

from .. import schema as S
from .. import dledger as D
from ..errors import StoreError, UsageError
from ..record import Message
from ..recovery import (
    CHUNK,
    BadRecord,
    ProgressReporter,
    PastTheCut,
    RecordTally,
    RecoveryChecker,
    Walk,
    allow_v2,
    check_earlier_files,
    record_failures,
    last_nonzero,
    records_past,
    recovered_queues_end,
    start_file,
    walk,
)
from ..engine import walk_files
from ..rules import cq_unit_valid, index_slot
from ..store import IndexFile, MappedFile, Store
from ..checks.verify import Preexisting, redispatched_missing
from .staging import stage_checkpoint, stage_timercheck, store_transaction, verify_staged, writing
from ..views.timer import dangling_after, dangling_rows
from .writers import reserve
from ..txn import Transaction

SCAN_BLOCK = 1 << 20  # index entries compared with the cut at a time


@dataclasses.dataclass
class RepairResult:
    store: str
    dryRun: bool
    # "checkpoint" (abort there: from where the broker's abnormal recovery starts), "normal" (no abort: from where
    # its normal recovery starts) or "scan-all"
    mode: str
    startFile: str | None
    cutOffset: int
    stoppedAt: BadRecord | None
    bytesCut: int  # non-zero bytes past the cut
    recordsCut: int  # records past the cut that can still be parsed (the torn one counts if its header reads)
    recordsCutByQueue: dict
    cutRecords: list  # the first few, for the report
    commitlog: dict  # fileZeroed, bytesZeroed, filesRemoved
    consumequeue: list  # per queue: entries dropped, files removed
    index: list  # per file: entries dropped, removed
    checkpoint: dict
    abortRemoved: bool
    # the cq-missing-entries findings below the cut that the abnormal recovery `abort` asks for dispatches again
    # (a normal start would not): `abort` is kept for them
    abortKeptFor: list
    notCut: list  # bad records before the recovery start: reported, not cut
    alternative: dict  # what the other mode would cut
    interrupted: dict | None = None
    dledger: dict | None = None  # DLedger mode: the index units and DLedger checkpoint recovery rewrites
    backup: str | None = None
    seconds: float = 0.0
    timer: dict = dataclasses.field(default_factory=dict)  # danglingUnits, timercheck: the 5.x timer files
    keptFindings: list = dataclasses.field(default_factory=list)  # verify's findings the repair leaves as they were
    padded: list = dataclasses.field(default_factory=list)  # short last files made full length (or removed when empty)

    @property
    def changed(self) -> bool:
        return bool(
            self.commitlog["fileZeroed"]
            or self.commitlog["filesRemoved"]
            or self.consumequeue
            or self.index
            or self.checkpoint
            or self.abortRemoved
            or self.timer.get("timercheck")
            or self.padded
            or (self.dledger and (self.dledger["indexFiles"] or self.dledger["checkpoint"]))
        )

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["changed"] = self.changed
        return d


# ---- the truncation, staged --------------------------------------------------------------------------------


def sparse_copy(buf, dst: Path, length: int, upto: int | None = None):
    """Copy `buf[:upto]` into a new file of `length` bytes, writing no zeros (where the source is zero, and
    past `upto`) but reserving every block, so later writes through a mapping cannot meet a full disk; then
    fsync it."""
    upto = len(buf) if upto is None else upto
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for lo in range(0, upto, CHUNK):
            chunk = buf[lo : min(upto, lo + CHUNK)]
            if chunk.count(0) != len(chunk):
                os.pwrite(fd, chunk, lo)
        os.ftruncate(fd, length)
        reserve(fd, length, dst)
        os.fsync(fd)
    finally:
        os.close(fd)


def plan_consumequeue(store: Store, cut: int, txn: Transaction | None, queues_of: dict, padded: list) -> list[dict]:
    """truncateDirtyLogicFiles for every queue: the units that point at or past the cut. Fills `queues_of`
    (commitlog offset -> the queue whose dropped unit points at it), and pads a short last file (see
    plan_short)."""
    out = []
    size = store.consumequeue_file_size
    per_file = size // S.CQ_UNIT_SIZE
    for cq in store.consume_queues():
        rel = f"consumequeue/{cq.topic}/{cq.queue_id}"
        keep_to, dropped, end = _units_past(cq, cut, queues_of, f"{cq.topic}/{cq.queue_id}")
        last = cq.files.files[-1] if cq.files.files else None
        if keep_to is None:
            if last is not None and last.length < size:  # a partial unit at its end is not kept
                plan_short(
                    last, f"{rel}/{last.name}", size, txn, padded, last.length // S.CQ_UNIT_SIZE * S.CQ_UNIT_SIZE
                )
            continue
        removed, zeroed = [], None
        if last is not None and last.length < size:  # removed or rewritten at full size below
            padded.append({"target": f"{rel}/{last.name}", "bytesBefore": last.length, "bytesAfter": size})
        for f in cq.files.files:
            first = f.start // S.CQ_UNIT_SIZE
            if first >= keep_to:
                removed.append(f.name)
                if txn:
                    txn.remove(f.path)
            elif first + per_file > keep_to:
                zeroed = f.name
                if txn:
                    staged = txn.area(f.path.parent) / "consumequeue" / cq.topic / str(cq.queue_id) / f.name
                    sparse_copy(f.buf, staged, size, (keep_to - first) * S.CQ_UNIT_SIZE)
                    txn.replace(f.path, staged)
        out.append(
            {
                "topic": cq.topic,
                "queueId": cq.queue_id,
                "entriesDropped": dropped,
                "fromQueueOffset": keep_to,
                "toQueueOffset": end,
                "fileTruncated": zeroed,
                "filesRemoved": removed,
            }
        )
    return out


def _units_past(cq, cut: int, queues_of: dict, name: str) -> tuple[int | None, int, int]:
    """A queue's written units, a file at a time: the first queue offset whose unit points at or past the cut
    (None: none does), how many units from there on, and the queue offset after the last written unit.
    Fills `queues_of` with the commitlog offsets of those units."""
    keep_to, dropped, end = None, 0, 0
    for first, f, written, units in cq.units():
        offsets = units["commitLogOffset"][:written]
        lo = 0
        if keep_to is None:
            past = np.flatnonzero(offsets >= cut)
            lo = int(past[0]) if len(past) else written
            if len(past):
                keep_to = first + lo
        dropped += written - lo
        for phy in offsets[lo:].tolist():
            queues_of.setdefault(phy, name)
        if written:
            end = first + written
        del offsets, units
        f.release()
    return keep_to, dropped, end


def undo_entries(m, slots: int, header: list, keep: int):
    """Take index entries keep..indexCount-1 out of a mapped index file, newest first: the inverse of
    IndexFile.putKey. `header` is [beginTs, endTs, beginPhy, endPhy, hashSlotCount, indexCount]."""
    base = S.INDEX_HEADER_SIZE + slots * S.HASH_SLOT_SIZE
    for n in range(header[5] - 1, keep - 1, -1):
        pos = base + n * S.INDEX_ENTRY_SIZE
        key_hash, _, _, prev = S.INDEX_ENTRY.unpack_from(m, pos)
        slot_pos = S.INDEX_HEADER_SIZE + index_slot(key_hash, slots) * S.HASH_SLOT_SIZE
        if S.INT32.unpack_from(m, slot_pos)[0] != n:
            raise StoreError(
                f"index entry {n} is not the head of its hash slot's chain; the file is damaged "
                "beyond undoing: rebuild the index (`rmqctl rebuild index`) after the repair"
            )
        S.INT32.pack_into(m, slot_pos, prev)
        if prev == 0:
            header[4] -= 1
        m[pos : pos + S.INDEX_ENTRY_SIZE] = bytes(S.INDEX_ENTRY_SIZE)
    header[5] = keep


def plan_index(store: Store, cut: int, last_kept: int, txn: Transaction | None, padded: list) -> tuple[list[dict], int]:
    """Index entries at or past the cut, undone file by file; a short file padded to its full length, as the
    broker's load maps it (its entries all present: refuse_gaps checked). Returns the plan and the
    endTimestamp of the last full file afterwards (the checkpoint's indexMsgTimestamp)."""
    out = []
    slots, num = store.index_geometry
    files = store.index_files()
    last_full_end = 0
    prev_file = None
    affected = False
    for ix in files:
        h = ix.header
        count = ix.index_count
        entries = ix.entries()[1:count]
        first_past = _first(entries["phyOffset"], lambda phy: phy >= cut)
        if affected or (first_past == 0 < len(entries) and not _broker_creates(prev_file, last_kept)):
            out.append({"file": ix.name, "entriesDropped": len(entries), "removed": True})
            affected = True
            if txn:
                txn.remove(ix.path)
            continue
        if first_past == len(entries):
            if count >= num:
                last_full_end = h["endTimestamp"]
            prev_file = ix
            if ix.length < ix.expected_length:
                plan_short(ix.mf, f"index/{ix.name}", ix.expected_length, txn, padded, ix.length)
            continue
        if ix.length < ix.expected_length:
            padded.append({"target": f"index/{ix.name}", "bytesBefore": ix.length, "bytesAfter": ix.expected_length})
        keep = first_past + 1  # entry numbers start at 1
        header = [
            h["beginTimestamp"],
            h["endTimestamp"],
            h["beginPhyOffset"],
            h["endPhyOffset"],
            h["hashSlotCount"],
            count,
        ]
        out.append({"file": ix.name, "entriesDropped": len(entries) - keep + 1, "removed": False})
        affected = True
        if txn is None:
            continue
        staged = txn.area(ix.path.parent) / "index" / ix.name
        sparse_copy(ix.mf.buf, staged, ix.expected_length)
        with open(staged, "r+b") as fh:
            m = mmap.mmap(fh.fileno(), 0)
            try:
                undo_entries(m, slots, header, keep)
                if keep > 1:
                    header[3] = int(entries["phyOffset"][keep - 2])
                    header[1] = store.read_message(header[3])[1].storeTimestamp
                    on_disk_count = keep
                else:  # emptied: back to what the constructor wrote (previous file's end values)
                    pe = prev_file.header if prev_file is not None else None
                    header[0] = header[1] = pe["endTimestamp"] if pe and pe["endTimestamp"] > 0 else 0
                    header[2] = header[3] = pe["endPhyOffset"] if pe and pe["endPhyOffset"] > 0 else 0
                    on_disk_count = 0
                S.INDEX_HEADER.pack_into(m, 0, header[0], header[1], header[2], header[3], header[4], on_disk_count)
                m.flush()
            finally:
                m.close()
            os.fsync(fh.fileno())
        txn.replace(ix.path, staged)
    return out, last_full_end


def _first(values: np.ndarray, test: Callable[[np.ndarray], np.ndarray]) -> int:
    """Where the first of `values` (a column view on a map) passing `test` is, len(values) when none: tested a
    block at a time, so the mask is a block long, not an index file's 20 million entries."""
    for lo in range(0, len(values), SCAN_BLOCK):
        hit = np.flatnonzero(test(values[lo : lo + SCAN_BLOCK]))
        if len(hit):
            return lo + int(hit[0])
    return len(values)


def _broker_creates(prev_file: IndexFile | None, last_kept: int) -> bool:
    """Would the broker have created this (now empty) index file? The first file is created by the first
    record dispatched; a later one by the first record dispatched after the previous file filled up."""
    if last_kept < 0:
        return False
    return prev_file is None or last_kept > prev_file.header["endPhyOffset"]


def plan_commitlog(store: Store, cut: int, zero_from: int, txn: Transaction | None, padded: list) -> dict:
    """The file holding the cut zeroed past it, later files removed, and a short last file made the length
    the broker's load wants (plan_short)."""
    size = store.commitlog.file_size
    out = {"fileZeroed": None, "bytesZeroed": 0, "filesRemoved": []}
    files = store.commitlog.files
    for f in files:
        short = f.length < size
        if not f.length and f is files[-1]:
            plan_short(f, f"commitlog/{f.name}", size, txn, padded, 0)
        elif f.start <= zero_from < f.start + size:
            last = last_nonzero(f.buf, zero_from - f.start)
            if last >= 0:
                out["fileZeroed"] = f.name
                out["bytesZeroed"] = last + 1 - (zero_from - f.start)
            if last >= 0 or short:
                if short:
                    padded.append({"target": f"commitlog/{f.name}", "bytesBefore": f.length, "bytesAfter": size})
                if txn:
                    staged = txn.area(f.path.parent) / "commitlog" / f.name
                    sparse_copy(f.buf, staged, size, zero_from - f.start)
                    txn.replace(f.path, staged)
        elif f.start > cut:
            out["filesRemoved"].append(f.name)
            if txn:
                txn.remove(f.path)
        elif short:
            plan_short(f, f"commitlog/{f.name}", size, txn, padded, f.length)
    return out


def plan_checkpoint(store: Store, txn: Transaction | None, last_kept: int, index: list, index_ts: int | None) -> dict:
    """The checkpoint no later than the records kept: physic/logics at most the last kept record's
    storeTimestamp, indexMsgTimestamp the last full index file's end after the index plan, a 5.x
    confirmPhyOffset no later than the last kept message. Returns field -> [before, after]."""
    checkpoint: dict = {}
    cp = store.checkpoint()
    if cp is None:
        return checkpoint
    values = {}
    if last_kept >= 0:
        ts = store.read_message(last_kept)[1].storeTimestamp
        values["physicMsgTimestamp"] = min(cp["physicMsgTimestamp"], ts)
        values["logicsMsgTimestamp"] = min(cp["logicsMsgTimestamp"], ts)
    if index_ts is not None and (index or cp["indexMsgTimestamp"] > index_ts):
        values["indexMsgTimestamp"] = index_ts
    if cp["confirmPhyOffset"] > max(last_kept, 0):
        values["confirmPhyOffset"] = max(last_kept, 0)
    stage_checkpoint(store, txn, checkpoint, **values)
    return checkpoint


def plan_short(f: MappedFile, rel: str, size: int, txn: Transaction | None, padded: list, keep: int):
    """A last file shorter than the mapped size, which the broker's MappedFileQueue.load refuses (4.9; 5.1.3+
    deletes a zero-length last one): removed when empty, else its first `keep` bytes in a file of the full
    size, zeros after them, as an operator would pad it by hand. The recovery scan then cuts at the last
    valid record in it, as the broker's would."""
    padded.append({"target": rel, "bytesBefore": f.length, "bytesAfter": size if f.length else None})
    if txn is None:
        return
    if not f.length:
        txn.remove(f.path)
        return
    staged = txn.area(f.path.parent) / "padded" / rel
    sparse_copy(f.buf, staged, size, keep)
    txn.replace(f.path, staged)


def refuse_gaps(store: Store):
    """A short file that is not the last of its queue is a hole in the data, not an unfinished write:
    padding it would put zeros between records. So is a short index file missing entries its header counts.
    Refused, naming it (nothing is changed)."""
    queues = [(store.commitlog, store.commitlog.file_size, "mappedFileSizeCommitLog")]
    queues += [(cq.files, store.consumequeue_file_size, "mappedFileSizeConsumeQueue") for cq in store.consume_queues()]
    for q, size, key in queues:
        for f in q.files[:-1]:
            if f.length != size:
                raise StoreError(
                    f"file is {f.length} bytes, not {key}={size}, and later files follow it: a gap in the "
                    "data, which repair does not pad; restore the file from a copy, or move it and every "
                    "later file out of the store",
                    f.path,
                )
    if not store.config.messageIndexEnable:
        return
    for ix in store.index_files():
        if ix.length < S.INDEX_HEADER_SIZE + ix.slot_num * S.HASH_SLOT_SIZE + ix.index_count * S.INDEX_ENTRY_SIZE:
            what = (
                "shorter than its header: what it indexed is lost"
                if ix.length < S.INDEX_HEADER_SIZE
                else f"too short for the {ix.entry_count} entries its header counts: they are lost"
            )
            raise StoreError(
                f"index file is {ix.length} bytes, {what}; rebuild the index (`rmqctl rebuild index`)", ix.path
            )


def bytes_past(store: Store, cut: int) -> int:
    """Non-zero data past the cut: from the cut to the last non-zero byte of each file."""
    total = 0
    for f in store.commitlog.files:
        if f.start + store.commitlog.file_size <= cut:
            continue
        lo = max(0, cut - f.start)
        last = last_nonzero(f.buf, lo)
        if last >= 0:
            total += last + 1 - lo
    return total


def _check_staged(store: Store, txn: Transaction, cut: int, zero_from: int) -> list[str]:
    """Read the staged files back before the swap: no consumequeue unit or index entry at or past the cut,
    index slots and header agreeing, and the zeroed commitlog file's records reading back up to the cut."""
    problems = []
    slots, num = store.index_geometry
    for op in txn.ops:
        if op["op"] != "replace":
            continue
        staged, target = Path(op["staged"]), Path(op["target"])
        if target.parent.parent.parent == store.consumequeue_dir.resolve():
            arr = np.fromfile(staged, dtype=S.CQ_DTYPE)
            written = arr[cq_unit_valid(arr["commitLogOffset"], arr["size"])]
            if np.any(written["commitLogOffset"] >= cut) or np.any(arr["size"][len(written) :] != 0):
                problems.append(f"{target}: units past the cut remain")
        elif target.parent == store.index_dir.resolve():
            ix = IndexFile(staged, slots, num)
            e, rest = ix.entries()[1 : ix.index_count], ix.entries()[ix.index_count :]["keyHash"]
            if _first(e["phyOffset"], lambda phy: phy >= cut) < len(e) or _first(rest, lambda h: h != 0) < len(rest):
                problems.append(f"{target}: entries past the cut remain")
            if ix.header["hashSlotCount"] != int(np.count_nonzero(ix.slots())):
                problems.append(f"{target}: hashSlotCount disagrees with the slots")
        elif target.parent in {d.resolve() for d in store.commitlog_dirs}:
            f = MappedFile(staged, int(staged.name))
            end = _records_end(store, f, cut)
            if end < cut:
                problems.append(f"{target}: the kept records do not read back at {end}")
            if last_nonzero(f.buf, zero_from - f.start) >= 0:
                problems.append(f"{target}: data remains past {zero_from}")
    return problems


def _records_end(store: Store, f: MappedFile, cut: int) -> int:
    """Where the records of commitlog file `f`, read one after another from its start, stop before `cut`:
    at the first bytes that are not a record, or a BLANK (`cut` or past it when they all read)."""
    stopped = []

    def refused(_, pos: int, limit: int):
        stopped.append(f.start + pos)

    end = f.start
    for chunk in walk_files([f], store.commitlog.file_size, None, cut, allow_v2(store), refused):
        end = f.start + chunk.end
    return min(stopped + [end])


def plan_timer(store: Store, cut: int, consumequeue: list, txn: Transaction | None) -> dict:
    """The pending timer units the cut leaves pointing at nothing (left as the broker leaves them), and
    timercheck's enqueued queue offsets lowered to the timer queue's new end, as TimerMessageStore.recover
    does; empty without timer files."""
    queue_end = next(
        (q["fromQueueOffset"] for q in consumequeue if (q["topic"], q["queueId"]) == (S.TIMER_TOPIC, 0)), None
    )
    dangling = dangling_after(store, None, cut, queue_end)
    if dangling is None:
        return {}
    stage_timercheck(store, txn, dangling.timercheck)
    return {
        "danglingUnits": dangling_rows(dangling, f"past the cut at {cut}"),
        "timercheck": {k: list(v) for k, v in dangling.timercheck.items()},
    }


# ---- the operation -----------------------------------------------------------------------------------------


def repair(
    store: Store,
    scan_all: bool = False,
    dry_run: bool = False,
    keep_backup: bool = True,
    progress: Callable[[int], None] | None = None,
) -> RepairResult:
    """Find the cut as the broker's next recovery would (or at the first bad record anywhere with
    `scan_all`), report it, and truncate the commitlog, consumequeues, index and checkpoint to it. `progress`
    is told the commitlog bytes checked so far."""
    t0 = time.monotonic()
    extra = [d for d in store.commitlog_dirs if d.resolve().parent != store.root.resolve()]
    with writing(store, dry_run, "repair", extra) as (interrupted, store):
        if store.dledger is not None:
            if scan_all:
                raise UsageError("--scan-all: a DLedger store has one recovery, DLedger's own; repair applies it")
            result = _repair_dledger(store, dry_run, keep_backup, interrupted)
            result.seconds = time.monotonic() - t0
            return result
        refuse_gaps(store)
        rec = _Recovery(store, scan_all, progress)
        checker, abnormal, cut, last_kept = rec.checker, rec.abnormal, rec.cut, rec.last_kept
        txn = None
        if not dry_run:
            command = "repair --scan-all" if scan_all else "repair"
            txn = store_transaction(store, "repair", command, keep_backup)
        try:
            padded: list = []
            commitlog = plan_commitlog(store, cut, rec.zero_from, txn, padded)
            queues_of: dict = {}
            consumequeue = plan_consumequeue(store, cut, txn, queues_of, padded)
            past = records_past(
                store, checker, cut, lambda offset, own: queues_of.get(offset) or own or "unknown", queues_of
            )
            index, index_ts = (
                plan_index(store, cut, last_kept, txn, padded) if store.config.messageIndexEnable else ([], None)
            )
            checkpoint = plan_checkpoint(store, txn, last_kept, index, index_ts)
            timer = plan_timer(store, cut, consumequeue, txn)
            # with `abort` removed the normal start would reput only past the queues' end: consumers would never see them
            abort_kept = [f.to_dict() for f in redispatched_missing(store, cut)] if abnormal else []
            remove_abort = abnormal and not abort_kept
            if txn is not None and remove_abort:
                txn.remove(store.abort_path)
            result = RepairResult(
                store=str(store.root),
                dryRun=dry_run,
                mode="scan-all" if scan_all else rec.mode,
                startFile=rec.start_file,
                cutOffset=cut,
                stoppedAt=rec.stop,
                bytesCut=bytes_past(store, cut),
                recordsCut=past.count,
                recordsCutByQueue=dict(past.by_queue),
                cutRecords=[_describe(off, r, queues_of) for off, r in past.first],
                commitlog=commitlog,
                consumequeue=consumequeue,
                index=index,
                checkpoint=checkpoint,
                abortRemoved=remove_abort,
                abortKeptFor=abort_kept,
                notCut=[] if scan_all else rec.earlier,
                alternative=rec.alternative,
                interrupted=interrupted,
                timer=timer,
                padded=padded,
            )
            if txn is not None:
                _check_and_swap_in(store, txn, result, rec.zero_from)
        finally:
            if txn is not None:
                txn.discard()
    result.seconds = time.monotonic() - t0
    return result


class _Recovery:
    """The broker's recovery at its next start, walked: abnormal with `abort`, else normal, which re-checks fewer
    files (damage before its start is served as it is, never cut); the cut it makes, or --scan-all's."""

    def __init__(self, store: Store, scan_all: bool, progress: Callable[[int], None] | None):
        self.abnormal = store.abort_exists()
        self.checker = RecoveryChecker(store, abnormal=self.abnormal)
        files = store.commitlog.files
        start = start_file(store, self.abnormal, lambda: recovered_queues_end(store).max_phy)
        self.start_file = files[start].name if files else None
        seen = RecordTally()
        reporter = ProgressReporter(progress, files)
        self.earlier = check_earlier_files(store, self.checker, start, seen, reporter)
        broker = walk(store, self.checker, start, seen, reporter)
        first_bad = self.earlier[0] if self.earlier else None
        self.cut, self.zero_from, self.stop, self.last_kept = _the_cut(scan_all, first_bad, broker, seen)
        self.mode = "checkpoint" if self.abnormal else "normal"
        self.alternative = _alternative(scan_all, self.mode, first_bad, broker, seen)


def _the_cut(scan_all: bool, first_bad, broker, seen) -> tuple:
    """(cut, zero from, the record stopped at, the last record kept): at the first bad record with --scan-all,
    else where the broker's recovery walk stops."""
    if scan_all and first_bad is not None:
        # the last record kept: the last record start below the first bad record
        return first_bad.commitLogOffset, first_bad.commitLogOffset, first_bad, seen.at_first_bad[1]
    return broker.cut, broker.zero_from, broker.stop, broker.last_message


def _check_and_swap_in(store: Store, txn: Transaction, result: RepairResult, zero_from: int):
    """Read the staged repair back and verify it, accepting the bad records repair leaves in place (notCut) and
    the findings the store had before; then swap it in (swap_in)."""
    kept_bad = [(b.commitLogOffset, b.commitLogOffset + (b.storeSize or 1)) for b in result.notCut]
    preexisting = Preexisting(store)

    def accepted(f) -> bool:
        return any(lo <= (f.commitLogOffset or -1) < hi for lo, hi in kept_bad) or preexisting(f)

    problems = _check_staged(store, txn, result.cutOffset, zero_from) or verify_staged(
        store, txn, None, accepted=accepted
    )
    result.keptFindings = [_kept(f, result) for f in preexisting.kept]
    swap_in(store, txn, result, problems)


def swap_in(store: Store, txn: Transaction, result: RepairResult, problems: list[str]):
    """Commit the staged repair, unless its read-back or verify found problems (then nothing changes)."""
    if problems:
        raise StoreError(
            "the repaired files failed their check, nothing was changed: " + "; ".join(problems[:5]), store.root
        )
    if result.changed:
        result.backup = txn.commit().get("backup")


def _alternative(
    scan_all: bool, broker_mode: str, first_bad: BadRecord | None, broker: Walk, seen: RecordTally
) -> dict:
    """What the other mode would cut, and how many more known records that is (those passed after the first
    bad record: every record the walks pass lies below the broker's cut)."""
    if first_bad is None:
        return {"mode": broker_mode if scan_all else "scan-all", "cutOffset": broker.cut, "sameCut": True}
    lost = seen.count - seen.at_first_bad[0]
    return {
        "mode": broker_mode if scan_all else "scan-all",
        "cutOffset": broker.cut if scan_all else first_bad.commitLogOffset,
        "sameCut": False,
        "scanAllLosesMoreRecords": lost,
        "scanAllLosesMoreBytes": broker.cut - first_bad.commitLogOffset,
    }


def _kept(f, result: RepairResult) -> dict:
    """A finding the store had before and keeps after the repair (the broker's recovery keeps it too), and
    whether the other mode's cut would take it away (None: that cut does not reach it)."""
    alt = result.alternative
    scan_all_cut = result.cutOffset if result.mode == "scan-all" else alt["cutOffset"]
    cut_off = None if f.commitLogOffset is None else f.commitLogOffset >= scan_all_cut
    return {**f.to_dict(), "scanAllCut": scan_all_cut, "scanAllCutsIt": cut_off}


def _describe(offset: int, r, queues_of: dict) -> dict:
    """A record past the cut, for the report; a torn record's queue comes from the unit that points at it."""
    if isinstance(r, Message):
        return {
            "commitLogOffset": offset,
            "storeSize": r.storeSize,
            "queue": f"{r.topic}/{r.queueId}",
            "queueOffset": r.queueOffset,
            "state": "parses" if r.body_crc_ok() else "body CRC mismatch",
        }
    return {
        "commitLogOffset": offset,
        "storeSize": r.storeSize,
        "queue": queues_of.get(offset) or (f"?/{r.queueId}" if r.queueId is not None else None),
        "queueOffset": r.queueOffset,
        "state": f"{r.kind}: {r.detail}",
    }


# ---- DLedger mode ------------------------------------------------------------------------------------------


def _repair_dledger(store: Store, dry_run: bool, keep_backup: bool, interrupted) -> RepairResult:
    """DLedgerMmapFileStore.recover as an explicit step (formats/dledger.md states the rule with its source
    lines), then what RocketMQ's DLedgerCommitLog.recover and this repair's plain rules do after it."""
    layout = store.dledger
    state = D.read_state(layout.checkpoint_path)
    iq = store.dledger_index
    r = D.recover(store.commitlog, iq, state)
    files = store.commitlog.files
    _refuse_dledger_exit(r, files)
    cut = r.cut
    last_kept = _dledger_last_kept(store, r)
    not_cut = _damage_kept(store, cut)
    stop = None
    if r.stop is not None:
        f = store.commitlog.find(r.stop.position)
        stop = BadRecord(r.stop.position, f.name, r.stop.position - f.start, r.stop.kind, r.stop.detail)
    txn = None
    if not dry_run:
        txn = store_transaction(store, "repair", "repair", keep_backup)
    try:
        padded: list = []  # short last consumequeue or index files, made whole as for a plain store
        commitlog = plan_commitlog(store, cut, cut, txn, padded)
        queues_of: dict = {}
        consumequeue = plan_consumequeue(store, cut, txn, queues_of, padded)
        past = _dledger_records_past(store, cut, queues_of)
        index, index_ts = (
            plan_index(store, cut, last_kept, txn, padded) if store.config.messageIndexEnable else ([], None)
        )
        checkpoint = plan_checkpoint(store, txn, last_kept, index, index_ts)
        dledger = {
            "startFile": files[r.start_file].name if files else None,
            "endIndex": r.end_index,
            "indexRewrittenFrom": r.index_rewritten_from,
            "indexFiles": _plan_dledger_index(store, iq, r, txn),
            "checkpoint": _plan_dledger_checkpoint(layout, state, r, txn),
        }
        abort = store.abort_exists()
        if txn is not None and abort:
            txn.remove(store.abort_path)
        result = RepairResult(
            str(store.root),
            dry_run,
            "dledger",
            dledger["startFile"],
            cut,
            stop,
            bytes_past(store, cut),
            past.count,
            dict(past.by_queue),
            [_describe(off, m, queues_of) for off, m in past.first],
            commitlog,
            consumequeue,
            index,
            checkpoint,
            abort,
            [],
            not_cut,
            {"mode": "dledger", "cutOffset": cut, "sameCut": True},
            interrupted,
            dledger=dledger,
            padded=padded,
        )
        if txn is not None:
            problems = _check_staged_dledger(store, txn, r) or verify_staged(store, txn, None, accepted=_before(cut))
            swap_in(store, txn, result, problems)
    finally:
        if txn is not None:
            txn.discard()
    return result


def _dledger_records_past(store: Store, cut: int, queues_of: dict) -> PastTheCut:
    """The records past the cut: those inside the entries the walk reads from it, then, as recovery.records_past
    counts them, those consumequeue units point at past where the walk met damage in their file (past an entry
    it cannot read, the rest of that file's entries are known only from their units). The walk holds at most the
    files from the cut on (DLedger exits rather than cut more)."""
    scan = store.scan()
    past = PastTheCut(lambda offset, own: queues_of.get(offset) or own or "unknown")
    read = [np.zeros(0, np.int64)]
    for chunk in scan.chunks(start=cut):  # (the records inside sound entries: DLedger's reput skips the rest)
        past.add(chunk, scan.allow_v2)
        read.append(chunk.file.start + chunk.column("position").astype(np.int64))
    damaged: dict[int, int] = {}  # file start -> the first offset of it where the walk met damage
    for f, pos, _ in scan.errors:
        damaged[f.start] = min(damaged.get(f.start, f.start + pos), f.start + pos)
    size = store.commitlog.file_size
    named = np.fromiter((o for o in queues_of if o >= cut), np.int64)
    named = named[~np.isin(named, np.concatenate(read))]
    for offset in named.tolist():
        if offset >= damaged.get(offset - offset % size, offset + 1):
            past.add_named(offset)
    return past


def _refuse_dledger_exit(r, files: list):
    """DLedger's recovery exits rather than truncate more than a file before the last data file: so does repair."""
    if r.exits:
        raise StoreError(
            f"DLedger's recovery would stop at {r.cut}, more than a file before the last data file, and "
            'refuses to truncate that much (it exits: "processOffset is too small"); nothing was changed. '
            "Check the data files by hand (`rmqctl verify`)",
            files[-1].path,
        )


def _before(cut: int) -> Callable:
    """Accepts a finding of the staged store before the cut: the repair keeps what lies before it as it was."""
    return lambda f: f.commitLogOffset is not None and f.commitLogOffset < cut


def _dledger_last_kept(store: Store, r) -> int:
    """The last message DLedger's recovery keeps: the body of its last kept entry that holds one (DLedger never
    reads the bodies: a torn one stays, and the broker's reput skips it), else (none from the start file on) the
    last entry before that file; -1 for none."""
    for body in (int(b) + S.DLEDGER_BODY_OFFSET for b in r.kept[::-1, 1]):
        try:
            store.read_message(body)
            return body
        except StoreError:
            continue
    return _last_message_below(store, store.commitlog.files[r.start_file].start) if r.start_file > 0 else -1


def _last_message_below(store: Store, offset: int) -> int:
    last = -1
    for chunk in store.scan().chunks(end=offset):
        last = chunk.file.start + int(chunk.column("position")[-1])
    return last


def _damage_kept(store: Store, cut: int) -> list[BadRecord]:
    """Damage below the cut that DLedger's recovery keeps: entries before its start file, and records inside
    sound entries (DLedger never reads them; the broker's reput skips or serves them)."""
    found = []
    scan = store.scan()
    checker = RecoveryChecker(store)
    for chunk in scan.chunks(end=cut, check_crc=checker.crc):
        found += [bad for _, bad in record_failures(chunk, checker, lambda _: True)]
    for f, pos, e in scan.errors:
        if f.start + pos < cut:
            found.append(BadRecord(f.start + pos, f.name, pos, e.kind, e.detail))
    return sorted(found, key=lambda b: b.commitLogOffset)


def _plan_dledger_index(store: Store, iq, r: D.Recovery, txn: Transaction | None) -> list[dict]:
    """The index as recovery leaves it: units past (last entry + 1) * 32 gone (later files removed), units
    from the first one that disagreed rewritten from their entries (in new files past the last one, or in place
    of all of them: D.index_files_rewritten), files wholly before the first entry's unit removed (resetOffset)."""
    out = []
    size = iq.file_size
    end = r.index_end
    begin = r.begin_index * S.DLEDGER_INDEX_UNIT_SIZE if r.end_index != -1 else None
    rewrite = r.kept[r.kept[:, 0] >= r.index_rewritten_from] if r.index_rewritten_from is not None else r.kept[:0]
    removed, created = D.index_files_rewritten(r, iq)
    for f in iq.files:
        why = (
            f"DLedger's recovery rebuilds the index from entry {r.index_rewritten_from}'s unit on (rebuildWithPos)"
            if f.start in removed
            else "wholly before the first entry's unit"
            if begin is not None and f.start + size <= begin
            else f"starts past the last entry's unit ({end})"
            if f.start > end
            else None
        )
        if why is not None:
            out.append({"file": f.name, "action": "remove", "detail": why})
            if txn:
                txn.remove(f.path)
            continue
        data = bytearray(f.buf[: min(f.length, size)])
        zero_from = min(max(0, end - f.start), len(data))
        data[zero_from:] = bytes(len(data) - zero_from)
        units = _write_units(data, f.start, rewrite)
        if bytes(data) == bytes(f.buf[: len(data)]):
            continue
        zeroed = last_nonzero(f.buf, zero_from) >= 0
        out.append(
            {
                "file": f.name,
                "action": "rewrite",
                "detail": ", ".join(
                    ([f"units from {f.start + zero_from} zeroed"] if zeroed else [])
                    + ([f"{units} unit(s) rewritten from their entries"] if units else [])
                ),
            }
        )
        if txn:
            staged = txn.area(f.path.parent) / "dledger-index" / f.name
            sparse_copy(bytes(data), staged, f.length)
            txn.replace(f.path, staged)
    for start in created:  # (DLedger's recovery appends them where no file holds them)
        data = bytearray(size)
        units = _write_units(data, start, rewrite)
        name = f"{start:020d}"
        out.append({"file": name, "action": "create", "detail": f"{units} unit(s) written from their entries"})
        if txn:
            staged = txn.area(iq.dirs[0]) / "dledger-index" / name
            sparse_copy(bytes(data), staged, size)
            txn.replace(iq.dirs[0] / name, staged)
    return out


def _write_units(data: bytearray, start: int, rewrite) -> int:
    """The index units of the entries in `rewrite` (index, pos, size, term rows) that fall in the file starting
    at `start`, packed into its bytes `data`; returns how many."""
    at = rewrite[:, 0] * S.DLEDGER_INDEX_UNIT_SIZE - start
    here = rewrite[(at >= 0) & (at < len(data))]
    for idx, pos, entry_size, term in here.tolist():
        S.DLEDGER_INDEX_UNIT.pack_into(
            data, idx * S.DLEDGER_INDEX_UNIT_SIZE - start, S.DLEDGER_MAGIC, pos, entry_size, idx, term
        )
    return len(here)


def _plan_dledger_checkpoint(layout: D.Layout, state, r: D.Recovery, txn: Transaction | None) -> dict:
    """dledger-{id}/checkpoint as DLedger persists it after the recovery: endIndex the last entry kept,
    committedIndex capped by updateCommittedIndex. Absent: left absent (DLedger writes it on its own)."""
    if state is None:
        return {}
    before = {k: D.state_long(state, k) for k in ("committedIndex", "endIndex")}
    after = {"committedIndex": r.committed_index, "endIndex": r.end_index}
    if before == after:
        return {}
    if txn:
        staged = txn.area(layout.home) / "dledger-checkpoint"
        staged.write_text(D.checkpoint_text(r.committed_index, r.end_index))
        txn.replace(layout.checkpoint_path, staged)
    return {k: [before[k], after[k]] for k in after if before[k] != after[k]}


def _check_staged_dledger(store: Store, txn: Transaction, r: D.Recovery) -> list[str]:
    """Read the staged data and index files back: entries up to the cut and nothing after it, every kept
    entry's unit equal to it and no unit past the last."""
    problems = []
    data_dirs = {d.resolve() for d in store.commitlog_dirs}
    index_dir = store.dledger.index_dir.resolve()
    for op in txn.ops:
        if op["op"] != "replace":
            continue
        staged, target = Path(op["staged"]), Path(op["target"])
        if target.parent in data_dirs:
            f = MappedFile(staged, int(staged.name))
            for found in D.entry_slices(f.buf, f.length, D.ENTRY_SLICE):
                pass  # the last slice says how the entries end
            if found.stop is not None or (found.blank is None and f.start + found.end != r.cut):
                problems.append(f"{target}: the kept entries do not read back up to {r.cut}")
            elif last_nonzero(f.buf, found.end + (S.DLEDGER_MIN_BLANK if found.blank else 0)) >= 0:
                problems.append(f"{target}: data remains past {r.cut}")
        elif target.parent == index_dir:
            f = MappedFile(staged, int(target.name))
            arr = D.index_units(f.buf, f.length // S.DLEDGER_INDEX_UNIT_SIZE)
            k = _first_wrong_unit(arr, f.start // S.DLEDGER_INDEX_UNIT_SIZE, r)
            if k is not None:
                have = tuple(int(arr[k][n]) for n in D.INDEX_FIELDS)
                problems.append(f"{target}: the unit of entry {f.start // S.DLEDGER_INDEX_UNIT_SIZE + k} is {have}")
    return problems


def _first_wrong_unit(arr: np.ndarray, first: int, r: D.Recovery) -> int | None:
    """The first unit of an index file (units `arr`, the first of entry `first`) written past the last entry
    kept, or not equal to its kept entry; None when every unit is right. Compared as columns."""
    idx = first + np.arange(len(arr))
    wrong = (idx > r.end_index) & np.any([arr[n] != 0 for n in D.INDEX_FIELDS], axis=0)
    kept = r.kept[(r.kept[:, 0] >= first) & (r.kept[:, 0] < first + len(arr))]
    got = arr[kept[:, 0] - first]
    want = {
        "magic": np.full(len(kept), S.DLEDGER_MAGIC),
        "pos": kept[:, 1],
        "size": kept[:, 2],
        "index": kept[:, 0],
        "term": kept[:, 3],
    }
    differs = np.any([got[n].astype(np.int64) != want[n] for n in D.INDEX_FIELDS], axis=0)
    wrong[kept[:, 0][differs] - first] = True
    hit = np.flatnonzero(wrong)
    return int(hit[0]) if len(hit) else None
