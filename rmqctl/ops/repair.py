"""`repair`: the broker's abnormal recovery (CommitLog.recoverAbnormally, 4.9 and 5.x) as an explicit,
reviewable step, then the truncation it implies, applied atomically (ops/txn.py).

Where the scan starts: like `isMappedFileMatchedRecover`, the newest commitlog file whose first record is a
message (V1; V1 or V2 for 5.x) with a non-zero storeTimestamp <= the checkpoint's minimum
(min(physicMsgTimestamp, logicsMsgTimestamp) - 3 s, also <= indexMsgTimestamp with messageIndexEnable and
messageIndexSafe), else the first file. From there records are checked as `checkMessageAndReturnSize(checkCRC
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
  last valid message (as recoverAbnormally sets it); then `abort` is removed so the broker starts normally.
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
from collections import Counter
from pathlib import Path

import numpy as np

from .. import schema as S
from ..errors import StoreError
from ..record import Blank, Message
from ..recovery import (CHUNK, BadRecord, RecordSet, RecoveryChecker, Walk, check_earlier_files, last_nonzero,
                        records_past, recovery_start, walk)
from ..store import IndexFile, MappedFile, Store, index_slot
from .staging import queue_units, stage_checkpoint, verify_staged, writing
from ..writers import reserve
from .txn import Transaction


@dataclasses.dataclass
class RepairResult:
    store: str
    dryRun: bool
    mode: str  # "checkpoint" (where the broker's abnormal recovery starts) or "scan-all"
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
    notCut: list  # bad records before the recovery start: reported, not cut
    alternative: dict  # what the other mode would cut
    interrupted: dict | None = None
    backup: str | None = None
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.commitlog["fileZeroed"] or self.commitlog["filesRemoved"] or self.consumequeue
                    or self.index or self.checkpoint or self.abortRemoved)

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


def plan_consumequeue(store: Store, cut: int, txn: Transaction | None, queues_of: dict) -> list[dict]:
    """truncateDirtyLogicFiles for every queue: the units that point at or past the cut. Fills `queues_of`
    (commitlog offset -> the queue whose dropped unit points at it)."""
    out = []
    size = store.consumequeue_file_size
    per_file = size // S.CQ_UNIT_SIZE
    for cq in store.consume_queues():
        qoffs, units, _ = queue_units(cq.directory, size)
        past = np.flatnonzero(units["commitLogOffset"] >= cut)
        if not len(past):
            continue
        keep_to = int(qoffs[past[0]])  # first queue offset dropped
        removed, zeroed = [], None
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
        for phy in units["commitLogOffset"][past[0]:].tolist():
            queues_of.setdefault(phy, f"{cq.topic}/{cq.queue_id}")
        out.append({"topic": cq.topic, "queueId": cq.queue_id, "entriesDropped": len(units) - int(past[0]),
                    "fromQueueOffset": keep_to, "toQueueOffset": int(qoffs[-1]) + 1,
                    "fileTruncated": zeroed, "filesRemoved": removed})
    return out


def undo_entries(m, slots: int, header: list, keep: int):
    """Take index entries keep..indexCount-1 out of a mapped index file, newest first: the inverse of
    IndexFile.putKey. `header` is [beginTs, endTs, beginPhy, endPhy, hashSlotCount, indexCount]."""
    base = S.INDEX_HEADER_SIZE + slots * S.HASH_SLOT_SIZE
    for n in range(header[5] - 1, keep - 1, -1):
        pos = base + n * S.INDEX_ENTRY_SIZE
        key_hash, _, _, prev = S.INDEX_ENTRY.unpack_from(m, pos)
        slot_pos = S.INDEX_HEADER_SIZE + (index_slot(key_hash) % slots) * S.HASH_SLOT_SIZE
        if S.INT32.unpack_from(m, slot_pos)[0] != n:
            raise StoreError(f"index entry {n} is not the head of its hash slot's chain; the file is damaged "
                             "beyond undoing: rebuild the index (`rmqctl rebuild index`) after the repair")
        S.INT32.pack_into(m, slot_pos, prev)
        if prev == 0:
            header[4] -= 1
        m[pos : pos + S.INDEX_ENTRY_SIZE] = bytes(S.INDEX_ENTRY_SIZE)
    header[5] = keep


def plan_index(store: Store, cut: int, last_kept: int, txn: Transaction | None) -> tuple[list[dict], int]:
    """Index entries at or past the cut, undone file by file. Returns the plan and the endTimestamp of the
    last full file afterwards (the checkpoint's indexMsgTimestamp)."""
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
        past = np.flatnonzero(entries["phyOffset"] >= cut)
        if affected or (len(past) and past[0] == 0 and not _broker_creates(prev_file, last_kept)):
            out.append({"file": ix.name, "entriesDropped": len(entries), "removed": True})
            affected = True
            if txn:
                txn.remove(ix.path)
            continue
        if not len(past):
            if count >= num:
                last_full_end = h["endTimestamp"]
            prev_file = ix
            continue
        keep = int(past[0]) + 1  # entry numbers start at 1
        header = [h["beginTimestamp"], h["endTimestamp"], h["beginPhyOffset"], h["endPhyOffset"],
                  h["hashSlotCount"], count]
        out.append({"file": ix.name, "entriesDropped": len(entries) - keep + 1, "removed": False})
        affected = True
        if txn is None:
            continue
        staged = txn.area(ix.path.parent) / "index" / ix.name
        sparse_copy(ix.mf.buf, staged, ix.length)
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


def _broker_creates(prev_file: IndexFile | None, last_kept: int) -> bool:
    """Would the broker have created this (now empty) index file? The first file is created by the first
    record dispatched; a later one by the first record dispatched after the previous file filled up."""
    if last_kept < 0:
        return False
    return prev_file is None or last_kept > prev_file.header["endPhyOffset"]


def plan_commitlog(store: Store, cut: int, zero_from: int, txn: Transaction | None) -> dict:
    size = store.commitlog.file_size
    out = {"fileZeroed": None, "bytesZeroed": 0, "filesRemoved": []}
    for f in store.commitlog.files:
        if f.start <= zero_from < f.start + size:
            last = last_nonzero(f.buf, zero_from - f.start)
            if last >= 0:
                out["fileZeroed"] = f.name
                out["bytesZeroed"] = last + 1 - (zero_from - f.start)
                if txn:
                    staged = txn.area(f.path.parent) / "commitlog" / f.name
                    sparse_copy(f.buf, staged, size, zero_from - f.start)
                    txn.replace(f.path, staged)
        elif f.start > cut:
            out["filesRemoved"].append(f.name)
            if txn:
                txn.remove(f.path)
    return out


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
    checker = RecoveryChecker(store)
    slots, num = store.index_geometry
    for op in txn.ops:
        if op["op"] != "replace":
            continue
        staged, target = Path(op["staged"]), Path(op["target"])
        if target.parent.parent.parent == store.consumequeue_dir.resolve():
            arr = np.fromfile(staged, dtype=S.CQ_DTYPE)
            written = arr[(arr["size"] > 0) & (arr["commitLogOffset"] >= 0)]
            if np.any(written["commitLogOffset"] >= cut) or np.any(arr["size"][len(written):] != 0):
                problems.append(f"{target}: units past the cut remain")
        elif target.parent == store.index_dir.resolve():
            ix = IndexFile(staged, slots, num)
            e = ix.entries()[1 : ix.index_count]
            if np.any(e["phyOffset"] >= cut) or np.any(ix.entries()[ix.index_count :]["keyHash"] != 0):
                problems.append(f"{target}: entries past the cut remain")
            if ix.header["hashSlotCount"] != int(np.count_nonzero(ix.slots())):
                problems.append(f"{target}: hashSlotCount disagrees with the slots")
        elif target.parent in {d.resolve() for d in store.commitlog_dirs}:
            f = MappedFile(staged, int(staged.name))
            pos = 0
            while f.start + pos < cut:
                rec, bad = checker.check(f, pos)
                if rec is None or isinstance(rec, Blank):
                    problems.append(f"{target}: the kept records do not read back at {f.start + pos}")
                    break
                pos += rec.storeSize
            if last_nonzero(f.buf, zero_from - f.start) >= 0:
                problems.append(f"{target}: data remains past {zero_from}")
    return problems


# ---- the operation -----------------------------------------------------------------------------------------


def repair(store: Store, scan_all: bool = False, dry_run: bool = False, keep_backup: bool = True) -> RepairResult:
    """Find the cut as the broker's abnormal recovery would (or at the first bad record anywhere with
    `scan_all`), report it, and truncate the commitlog, consumequeues, index and checkpoint to it."""
    t0 = time.monotonic()
    extra = [d for d in store.commitlog_dirs if d.resolve().parent != store.root.resolve()]
    with writing(store, dry_run, extra) as (interrupted, store):
        checker = RecoveryChecker(store)
        files = store.commitlog.files
        start = recovery_start(store)
        seen = RecordSet()
        earlier = check_earlier_files(store, checker, start, seen)
        broker = walk(store, checker, start, seen)
        first_bad = earlier[0] if earlier else None
        if scan_all and first_bad is not None:
            cut, zero_from, stop = first_bad.commitLogOffset, first_bad.commitLogOffset, first_bad
            last_kept = _last_below(seen, cut)
        else:
            cut, zero_from, stop, last_kept = broker.cut, broker.zero_from, broker.stop, broker.last_message
        kept_offsets, _ = seen.arrays()
        past = records_past(store, checker, cut)
        alternative = _alternative(scan_all, first_bad, broker, kept_offsets)
        txn = Transaction(store.root, "repair", "repair" + (" --scan-all" if scan_all else ""), keep_backup) if not dry_run else None
        try:
            commitlog = plan_commitlog(store, cut, zero_from, txn)
            queues_of: dict = {}
            consumequeue = plan_consumequeue(store, cut, txn, queues_of)
            by_queue = Counter(queues_of.get(off) or (f"{r.topic}/{r.queueId}" if isinstance(r, Message) else "unknown")
                               for off, r in past)
            index, index_ts = plan_index(store, cut, last_kept, txn) if store.config.messageIndexEnable else ([], None)
            checkpoint: dict = {}
            cp = store.checkpoint()
            if cp is not None:
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
            abort = store.abort_exists()
            if txn is not None and abort:
                txn.remove(store.abort_path)
            result = RepairResult(
                store=str(store.root), dryRun=dry_run, mode="scan-all" if scan_all else "checkpoint",
                startFile=files[start].name if files else None, cutOffset=cut, stoppedAt=stop,
                bytesCut=bytes_past(store, cut), recordsCut=len(past), recordsCutByQueue=dict(by_queue),
                cutRecords=[_describe(off, r, queues_of) for off, r in past[:20]], commitlog=commitlog,
                consumequeue=consumequeue, index=index, checkpoint=checkpoint, abortRemoved=abort,
                notCut=[] if scan_all else earlier, alternative=alternative, interrupted=interrupted)
            if txn is not None:
                kept_bad = [(b.commitLogOffset, b.commitLogOffset + (b.storeSize or 1)) for b in result.notCut]
                problems = _check_staged(store, txn, cut, zero_from) or verify_staged(
                    store, txn, None, accepted=lambda f: any(lo <= (f.commitLogOffset or -1) < hi for lo, hi in kept_bad))
                if problems:
                    raise StoreError("the repaired files failed their check, nothing was changed: " + "; ".join(problems[:5]),
                                     store.root)
                if result.changed:
                    result.backup = txn.commit().get("backup")
        finally:
            if txn is not None:
                txn.discard()
    result.seconds = time.monotonic() - t0
    return result


def _last_below(seen: RecordSet, cut: int) -> int:
    off, _ = seen.arrays()
    below = off[off < cut]
    return int(below[-1]) if len(below) else -1


def _alternative(scan_all: bool, first_bad: BadRecord | None, broker: Walk, offsets: np.ndarray) -> dict:
    """What the other mode would cut, and how many more known records that is."""
    if first_bad is None:
        return {"mode": "checkpoint" if scan_all else "scan-all", "cutOffset": broker.cut, "sameCut": True}
    lost = int(np.count_nonzero((offsets >= first_bad.commitLogOffset) & (offsets < broker.cut)))
    return {"mode": "checkpoint" if scan_all else "scan-all",
            "cutOffset": broker.cut if scan_all else first_bad.commitLogOffset, "sameCut": False,
            "scanAllLosesMoreRecords": lost, "scanAllLosesMoreBytes": broker.cut - first_bad.commitLogOffset}


def _describe(offset: int, r, queues_of: dict) -> dict:
    """A record past the cut, for the report; a torn record's queue comes from the unit that points at it."""
    if isinstance(r, Message):
        return {"commitLogOffset": offset, "storeSize": r.storeSize, "queue": f"{r.topic}/{r.queueId}",
                "queueOffset": r.queueOffset, "state": "parses" if r.body_crc_ok() else "body CRC mismatch"}
    return {"commitLogOffset": offset, "storeSize": r.storeSize,
            "queue": queues_of.get(offset) or (f"?/{r.queueId}" if r.queueId is not None else None),
            "queueOffset": r.queueOffset, "state": f"{r.kind}: {r.detail}"}
