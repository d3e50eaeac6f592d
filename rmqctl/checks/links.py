"""The consumequeue and index rules of `verify` and what their window-by-window checks share
(checks/consumequeue.py, checks/index.py): units and entries are fixed-size, so a file is one array.

Consumequeue (ConsumeQueue.putMessagePositionInfo / recover / truncateDirtyLogicFiles): units are valid
while offset >= 0 and size > 0; pre-blank units (0, 0x7FFFFFFF, 0) may only lead a queue; every other unit
must point at a record start whose size, topic, queueId, queue offset (the unit's index) and tagsCode (as
the dispatcher computes it) match, and which is dispatched at all (not PREPARED/ROLLBACK); every dispatched
record must have its unit. Index (IndexFile.putKey / selectPhyOffset): header counts and begin/end values
agree with the entries, slots hold the newest entry of their hash, chains link each entry to the previous
one of the same slot (so they are acyclic and strictly backwards), every entry points at a record one of
whose keys hashes to it, and with `deep` every key of every record is there.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from .. import schema as S
from ..errors import StoreError
from ..findings import CHECKPOINT, CONSUMEQUEUE, INDEX, Findings
from ..engine import hash_slots, index_entries, slot_chains
from ..rules import index_dropped_after_crash, queue_files_loaded, record_expired
from ..store import IndexFile, MappedFileQueue, loaded_index_name
from .context import Context, Records

MAX_LISTED = 5
ENTRY_BLOCK = 1 << 18  # index entries decoded at a time (24 bytes each)
NO_ROWS = np.zeros((0, 4), np.int64)  # slot_chains asked only whether any link is wrong


def queue_order(topic: np.ndarray, qid: np.ndarray, ri: np.ndarray) -> np.ndarray:
    """Consumequeue targets grouped per queue, in record order inside each (`ri` ascending): a stable sort
    by queue alone (a radix sort when the queues fit 16 bits)."""
    if len(qid):
        span = int(qid.max() - qid.min()) + 1
        if span * (int(topic.max()) + 1) < 1 << 16:
            return np.argsort((topic * span + (qid - qid.min())).astype(np.uint16), kind="stable")
    return np.lexsort((ri, topic * (1 << 32) + qid))


def _cq_groups(run: Context, rec: Records):
    """Targets per (topic name, queueId): queue offsets sorted (a queue offset twice: the earlier record
    first), with their record."""
    topic, qid, qoff, ri, names = run.targets(rec)
    inner = _members(ri, rec.inner_num)
    if inner.any():
        topic, qid, qoff, ri = topic[~inner], qid[~inner], qoff[~inner], ri[~inner]
    order = queue_order(topic, qid, ri) if not len(ri) or np.all(ri[1:] >= ri[:-1]) else np.lexsort((ri, qid, topic))
    topic, qid, qoff, ri = topic[order], qid[order], qoff[order], ri[order]
    if np.any((qoff[1:] < qoff[:-1]) & (topic[1:] == topic[:-1]) & (qid[1:] == qid[:-1])):
        order = np.lexsort((qoff, qid, topic))  # queue offsets out of commitlog order (damage): sort by them
        topic, qid, qoff, ri = topic[order], qid[order], qoff[order], ri[order]
    groups = {}
    if len(ri):
        cut = np.flatnonzero((topic[1:] != topic[:-1]) | (qid[1:] != qid[:-1])) + 1
        for a, b in zip(np.concatenate([[0], cut]), np.concatenate([cut, [len(ri)]])):
            groups[(names[topic[a]], int(qid[a]))] = (qoff[a:b], ri[a:b])
    return groups


def _members(values: np.ndarray, keys) -> np.ndarray:
    """values in the (usually empty) collection `keys`."""
    if not len(keys):
        return np.zeros(len(values), dtype=bool)
    return np.isin(values, np.fromiter(keys, dtype=np.int64, count=len(keys)))


def _sorted_member(values: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """values in `sorted_keys` (ascending), by binary search."""
    if not len(sorted_keys):
        return np.zeros(len(values), dtype=bool)
    k = np.minimum(np.searchsorted(sorted_keys, values), len(sorted_keys) - 1)
    return sorted_keys[k] == values


def _data_end(path, buf, length: int) -> int:
    """One past the last non-zero byte of the first `length` bytes. Files are preallocated sparse, so the
    first hole (SEEK_HOLE) bounds the search when the filesystem reports one."""
    end = length
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            end = min(end, os.lseek(fd, 0, os.SEEK_HOLE))
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        pass
    data = np.frombuffer(buf, dtype=np.uint8, count=length) if length else np.zeros(0, np.uint8)
    step = 1 << 20
    while end > 0:
        lo = max(0, end - step)
        filled = data[lo:end] != 0
        if filled.any():  # the last non-zero byte: the first True from the back (argmax stops there)
            return end - int(np.argmax(filled[::-1]))
        end = lo
    return 0


def _queue_file_checks(
    run: Context,
    q: MappedFileQueue,
    size: int,
    what: str,
    setting: str = "mappedFileSizeConsumeQueue",
    unit: tuple[int, str] | None = (S.CQ_UNIT_SIZE, "queue offsets"),
) -> Findings:
    """What MappedFileQueue.load refuses in a queue's directory (names that are no offset, files of another length
    than `setting`), and files that do not follow each other; `unit`: the queue's unit size and what its numbers
    are, to name what a gap leaves out (None: its bytes)."""
    found = Findings()
    for p in q.strays:
        found.add(
            CONSUMEQUEUE,
            "stray-file",
            "error",
            p,
            None,
            None,
            f"not a 20-digit offset name in a {what} directory: the broker's load fails on it",
        )
    # a zero-length last file is one a running broker is creating, or one a 5.x load deletes, where 4.x refuses it
    # (rules.queue_files_loaded, asked of that file alone: a wrong length before it is reported on its own)
    lone_empty = queue_files_loaded([0], size, run.store.version.release, run.live is not None)
    dropped = q.files[-1:] if q.files and q.files[-1].length == 0 and not lone_empty.fails else []
    for f in q.files:
        if f.length != size and f not in dropped:
            found.add(
                CONSUMEQUEUE,
                "file-size",
                "error",
                f.path,
                None,
                None,
                f"file is {f.length} bytes, not {size} ({setting}): the broker's load refuses it",
            )
        if f.start % size:
            found.add(
                CONSUMEQUEUE,
                "file-misaligned",
                "error",
                f.path,
                None,
                None,
                f"starts at byte {f.start}, not a multiple of the file size {size}",
            )
    for a, b in zip(q.files, q.files[1:]):
        if b.start > a.start + size:
            found.add(
                CONSUMEQUEUE,
                "file-gap",
                "error",
                b.path,
                None,
                None,
                (
                    f"{unit[1]} {(a.start + size) // unit[0]}..{b.start // unit[0] - 1}"
                    if unit
                    else f"bytes {a.start + size}..{b.start - 1}"
                )
                + f" have no file between {a.name} and {b.name}",
            )
        elif b.start < a.start + size:
            found.add(CONSUMEQUEUE, "file-overlap", "error", b.path, None, None, f"{b.name} starts inside {a.name}")
    return found


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (np.unique's hashing path is slow on large integer arrays; a stable sort is
    a merge of the already sorted runs here)."""
    values = np.sort(values, kind="stable")
    return values[np.append(True, values[1:] != values[:-1])] if len(values) else values


def _tail_cause(run: Context, offset: int) -> str | None:
    for lo, hi, kind, at in run.damage.ranges:
        if kind == "torn-tail" and lo <= offset:
            return f"the torn-tail at {at}"
    return None


def _field_cause(queue_offset_findings: set[int], offset: int) -> str | None:
    """A queue-offset finding about the record at `offset` (one of `queue_offset_findings`, their commitlog
    offsets) explains a unit that disagrees with it."""
    if offset in queue_offset_findings:
        return f"a direct consequence of the queue-offset finding at {offset}"
    return None


# -- index ------------------------------------------------------------------------------------------------


def index_files(run: Context) -> tuple[list[IndexFile], Findings]:
    """The index files in load order; one that cannot be read is a finding, not a stop."""
    out, found = [], Findings()
    for p in run.store.index_paths():
        if not loaded_index_name(p.name):
            continue
        try:
            ix = run.store.open_index_file(p)
            if ix is not None:
                out.append(ix)
        except StoreError as e:
            found.add(INDEX, "file-size", "error", p, None, None, str(e).split(": ", 1)[-1])
    return out, found


def index_structure(run: Context) -> dict:
    """Per index file (by path), its `IndexSummary`: what the index check needs that does not depend on the
    commitlog, so a scan with threads to spare reads it alongside the commitlog."""
    if run.index_structure is None:
        slots, num = run.store.index_geometry
        run.index_structure = {ix.path: _structure(ix, slots, num) for ix in index_files(run)[0]}
    return run.index_structure


@dataclasses.dataclass
class IndexSummary:
    count: int  # entries counted (entry 0 included)
    sound: bool  # slots and chains as the broker links them (engine.checks.slot_chains)
    negative: list  # (entry, key hash, phyOffset) of the first entries with a negative key hash
    order: tuple | None  # the first entry pointing before its predecessor: (entry, phyOffset, previous one, how many)
    lo: int  # least and greatest phyOffset (lo > hi: no entries), the first entry's and the last one's
    hi: int
    first_phy: int | None
    last_phy: int | None


def entry_blocks(ix: IndexFile, slots: int, count: int, a: int = 0, b: int | None = None):
    """(first entry number - 1, keyHash, phyOffset, timeDiff, prevIndex, slot) of entries a+1..b (all counted:
    1..count-1), a block at a time, read from the map (engine.checks.index_entries)."""
    u8 = np.frombuffer(ix.mf.buf, np.uint8)
    base = S.INDEX_HEADER_SIZE + slots * S.HASH_SLOT_SIZE
    b = count - 1 if b is None else b
    for k in range(a, b, ENTRY_BLOCK):
        n = min(ENTRY_BLOCK, b - k)
        yield (k, *index_entries(u8, base + k * S.INDEX_ENTRY_SIZE, n + 1, slots))


def _sound(ix: IndexFile, slots: int, count: int) -> bool:
    """Slots and chains as the broker links them; the slot tables (4 bytes a slot each) are gone before the
    entries are read."""
    u8 = np.frombuffer(ix.mf.buf, np.uint8)
    slot_values = hash_slots(u8, S.INDEX_HEADER_SIZE, len(ix.slots()), slots)
    _, wrong, disagree = slot_chains(u8, S.INDEX_HEADER_SIZE + slots * S.HASH_SLOT_SIZE, count, slot_values, NO_ROWS)
    return not wrong and not disagree


def _structure(ix: IndexFile, slots: int, num: int) -> IndexSummary:
    count = min(ix.index_count, num, len(ix.entries()))
    out = IndexSummary(count, _sound(ix, slots, count), [], None, 1, 0, None, None)
    before, bad = None, 0
    for k, key_hash, phy, _, _, _ in entry_blocks(ix, slots, count):
        if not len(phy):
            continue
        neg = np.flatnonzero(key_hash < 0)[: MAX_LISTED - len(out.negative)]
        out.negative += [(k + int(i) + 1, int(key_hash[i]), int(phy[i])) for i in neg]
        back = np.flatnonzero(np.diff(phy if before is None else np.append(before, phy)) < 0)
        if len(back) and out.order is None:
            i = int(back[0]) + (1 if before is None else 0)  # index in this block
            prev = int(phy[i - 1]) if i > 0 else before
            out.order = (k + i + 1, int(phy[i]), prev)
        bad += len(back)
        if out.first_phy is None:
            out.first_phy, out.lo, out.hi = int(phy[0]), int(phy.min()), int(phy.max())
        out.lo, out.hi = min(out.lo, int(phy.min())), max(out.hi, int(phy.max()))
        out.last_phy = before = int(phy[-1])
    if out.order is not None:
        out.order = (*out.order, bad)
    return out


def _counted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and how often each occurs."""
    values = np.sort(values)
    if not len(values):
        return values, np.zeros(0, np.int64)
    first = np.flatnonzero(np.append(True, values[1:] != values[:-1]))
    return values[first], np.diff(np.append(first, len(values)))


def _slot_error(found: Findings, ix, s: int, detail: str) -> None:
    """A hash slot of an index file that does not hold its hash's newest entry, reported at the slot."""
    found.add(INDEX, "index-slot", "error", ix.path, S.INDEX_HEADER_SIZE + s * S.HASH_SLOT_SIZE, None, detail)


def _check_slots_and_chains(run, ix, slots: int, count: int, slot_values: np.ndarray, sound: bool) -> Findings:
    """Each slot holds the newest entry of its hash; each entry links to the previous entry of its slot (0
    at a chain's start), so chains are acyclic and strictly backwards. A file `sound` (IndexSummary) is
    only checked for slot values out of range; otherwise the links are replayed (engine.checks.slot_chains)
    for the first wrong ones."""
    total = max(count, 1)
    found = Findings()
    out_of_range = np.flatnonzero((slot_values < 0) | (slot_values >= total))
    for s in out_of_range[:MAX_LISTED].tolist():
        _slot_error(found, ix, s, f"slot {s} holds {int(slot_values[s])}, outside the entries 1..{count - 1}")
    if sound:
        return found
    entry_pos = S.INDEX_HEADER_SIZE + slots * S.HASH_SLOT_SIZE
    broken = np.zeros((MAX_LISTED, 4), np.int64)
    newest, links, _ = slot_chains(np.frombuffer(ix.mf.buf, np.uint8), entry_pos, count, slot_values, broken)
    wrong = np.flatnonzero((newest != slot_values) & (slot_values >= 0) & (slot_values < total))
    for s in wrong[:MAX_LISTED].tolist():
        _slot_error(
            found,
            ix,
            s,
            f"slot {s} holds entry {int(slot_values[s])} but its newest entry is {int(newest[s])}: lookups of "
            f"keys in this slot miss entries",
        )
    for e, p, expected, slot in broken[: min(links, MAX_LISTED)].tolist():
        what = (
            "a loop: it links to itself or to a later entry"
            if p >= e
            else "out of range"
            if p < 0
            else f"it should link to entry {expected}, the previous one in slot {slot}"
        )
        found.add(
            INDEX,
            "index-chain",
            "error",
            ix.path,
            entry_pos + e * S.INDEX_ENTRY_SIZE,
            None,
            f"entry {e} has prevIndex {p}: {what}",
        )
    if links > MAX_LISTED:
        found.add(
            INDEX,
            "index-chain",
            "error",
            ix.path,
            None,
            None,
            f"{links - MAX_LISTED} more entries with a wrong prevIndex in {ix.name}",
        )
    return found


def index_loss_on_recovery(run: Context, cp: dict, begin: int) -> Findings:
    """With the abort file, the broker deletes index files whose endTimestamp is after the checkpoint's
    indexMsgTimestamp and re-indexes only from where its recovery starts: keys of records before that are
    lost from the index (unless messageIndexSafe made the recovery start early enough). The deletion does not
    depend on messageIndexEnable; with it false nothing is re-indexed, so every key of such a file is lost."""
    reindexed = run.config.messageIndexEnable
    found = Findings()
    for ix in index_files(run)[0]:
        if not index_dropped_after_crash(ix.header["endTimestamp"], cp["indexMsgTimestamp"]):
            continue
        entries = ix.entries()
        phy = entries[1 : min(ix.index_count, len(entries))]["phyOffset"]
        lost, lo, hi = 0, None, None
        for a in range(0, len(phy), ENTRY_BLOCK):  # a block's mask at a time, not the file's
            offs = phy[a : a + ENTRY_BLOCK]
            if reindexed:
                offs = offs[offs < begin]
            offs = offs[~record_expired(offs, run.min_offset)]  # (expired messages' keys are not lost)
            if len(offs):
                lost += len(offs)
                lo = int(offs.min()) if lo is None else min(lo, int(offs.min()))
                hi = int(offs.max()) if hi is None else max(hi, int(offs.max()))
        if lost:
            found.add(
                CHECKPOINT,
                "index-lost-on-recovery",
                "warning",
                ix.path,
                None,
                lo,
                f"the broker deletes this index file at load (endTimestamp {ix.header['endTimestamp']} > "
                f"indexMsgTimestamp {cp['indexMsgTimestamp']}) and "
                + (
                    f"its recovery re-indexes only from {begin}"
                    if reindexed
                    else "re-indexes nothing (messageIndexEnable=false)"
                )
                + f": {lost} key(s) of messages at {lo}..{hi} will not be found by key",
            )
    return found
