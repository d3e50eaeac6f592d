"""The consumequeue and index halves of `verify`: every unit and index entry checked against the commitlog
records the scan found, vectorised with numpy (units and entries are fixed-size, so a file is one array).

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

import os

import numpy as np

from .. import schema as S
from ..errors import StoreError
from ..findings import CHECKPOINT, CONSUMEQUEUE, INDEX
from ..recovery import recovery_start
from ..native.verify import E_NO_RECORD, E_PAST_END, E_TIME, E_WRONG_KEY, chains_sound, hash_slots, index_entries, index_targets
from ..store import INDEX_FILE_NAME, ConsumeQueue, IndexFile, MappedFileQueue
from .verify_context import Context, Records

EXT_ADDRESS_MAX = -2147483649  # ConsumeQueueExt.isExtAddr: tagsCode <= this is an address, not a hash
MAX_LISTED = 5


def queue_order(topic: np.ndarray, qid: np.ndarray, ri: np.ndarray) -> np.ndarray:
    """Consumequeue targets grouped per queue, in record order inside each (`ri` ascending): a stable sort
    by queue alone (a radix sort when the queues fit 16 bits)."""
    if len(qid):
        span = int(qid.max() - qid.min()) + 1
        if span * (int(topic.max()) + 1) < 1 << 16:
            return np.argsort((topic * span + (qid - qid.min())).astype(np.uint16), kind="stable")
    return np.lexsort((ri, topic * (1 << 32) + qid))


def _cq_groups(run: Context, rec: Records):
    """Targets per (topic name, queueId): queue offsets sorted, with their record."""
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


def _units(cq: ConsumeQueue, size: int):
    """All units of a queue up to the last one holding any data: (logical index, commitLogOffset, size,
    tagsCode, file index)."""
    parts = []
    for k, f in enumerate(cq.files.files):
        n = -(-(_data_end(f.path, f.buf, min(f.length, size))) // S.CQ_UNIT_SIZE)
        n = min(n, min(f.length, size) // S.CQ_UNIT_SIZE)
        if not n:
            continue
        arr = np.frombuffer(f.buf, dtype=S.CQ_DTYPE, count=n)
        parts.append((f.start // S.CQ_UNIT_SIZE + np.arange(n, dtype=np.int64), arr["commitLogOffset"].astype(np.int64),
                      arr["size"].astype(np.int64), arr["tagsCode"].astype(np.int64), np.full(n, k, np.int64)))
    if not parts:
        z = np.zeros(0, np.int64)
        return z, z, z, z, z
    return tuple(np.concatenate(c) for c in zip(*parts))


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


def queue_units(run: Context):
    """(queue, units) of every consumequeue, read once per run."""
    if run.queue_units is None:
        size = run.store.consumequeue_file_size
        run.queue_units = [(cq, _units(cq, size)) for cq in run.store.consume_queues()]
    return run.queue_units


def _queue_file_checks(run: Context, q: MappedFileQueue, size: int, what: str):
    for p in q.strays:
        run.report(CONSUMEQUEUE, "stray-file", "error", p, None, None,
                   f"not a 20-digit offset name in a {what} directory: the broker's load fails on it")
    for f in q.files:
        if f.length != size:
            run.report(CONSUMEQUEUE, "file-size", "error", f.path, None, None,
                       f"file is {f.length} bytes, not {size} (mappedFileSizeConsumeQueue): the broker's load refuses it")
        if f.start % size:
            run.report(CONSUMEQUEUE, "file-misaligned", "error", f.path, None, None,
                       f"starts at byte {f.start}, not a multiple of the file size {size}")
    for a, b in zip(q.files, q.files[1:]):
        if b.start > a.start + size:
            run.report(CONSUMEQUEUE, "file-gap", "error", b.path, None, None,
                       f"queue offsets {(a.start + size) // S.CQ_UNIT_SIZE}..{b.start // S.CQ_UNIT_SIZE - 1} have no file "
                       f"between {a.name} and {b.name}")
        elif b.start < a.start + size:
            run.report(CONSUMEQUEUE, "file-overlap", "error", b.path, None, None, f"{b.name} starts inside {a.name}")


def consumequeue_max_phy(run: Context) -> int:
    """max(offset + size) over the last unit of every queue: where the broker's reput resumes."""
    if run.cq_max_phy is not None:
        return run.cq_max_phy
    best = 0
    try:
        units = queue_units(run)
    except StoreError:
        return 0
    for cq, (idx, off, sz, _, _) in units:
        valid = np.flatnonzero((off >= 0) & (sz > 0) & (sz != S.PRE_BLANK_SIZE))
        if len(valid):
            best = max(best, int(off[valid[-1]] + sz[valid[-1]]))
    run.cq_max_phy = best
    return best


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (np.unique's hashing path is slow on large integer arrays; a stable sort is
    a merge of the already sorted runs here)."""
    values = np.sort(values, kind="stable")
    return values[np.append(True, values[1:] != values[:-1])] if len(values) else values


def _redispatch_from(run: Context) -> int:
    """Records at or after this offset are dispatched again by the broker at its next start (reput from
    the consumequeues' end; after a crash, abnormal recovery re-dispatches from its start file)."""
    start = consumequeue_max_phy(run)
    if run.store.abort_exists() and run.files:
        start = min(start, run.files[recovery_start(run.store)].start)
    return start


def check_consumequeues(run: Context, rec: Records):
    store = run.store
    size = store.consumequeue_file_size  # settled before the scan
    groups = _cq_groups(run, rec)
    missing_reports = []
    seen = set()
    max_phy = 0
    for cq, (idx, off, sz, tags, fidx) in queue_units(run):
        key = (cq.topic, cq.queue_id)
        seen.add(key)
        _queue_file_checks(run, cq.files, size, "consumequeue")
        valid = (off >= 0) & (sz > 0)
        pre = (off == 0) & (sz == S.PRE_BLANK_SIZE) & (tags == 0)
        live = np.flatnonzero(valid)
        if not len(live):
            lead = 0
            end_at = 0
        else:
            end_at = int(live[-1]) + 1  # units past the last valid one are unwritten space
            lead = int(np.argmin(pre)) if not pre.all() else len(pre)
        path = lambda i: cq.files.files[int(fidx[i])].path
        pos = lambda i: int((idx[i] * S.CQ_UNIT_SIZE) % size)
        queue = f"{cq.topic}/{cq.queue_id}"
        # holes and misplaced pre-blank units among the written ones
        holes = np.flatnonzero((~valid[:end_at]) | (pre[:end_at] & (np.arange(end_at) >= lead)))
        if len(holes):
            i = int(holes[0])
            run.report(CONSUMEQUEUE, "cq-entry-invalid", "error", path(i), pos(i), None,
                       f"{queue}: {len(holes)} unit(s) among the written ones are not entries (first at queue offset "
                       f"{int(idx[i])}: offset {int(off[i])}, size {int(sz[i])}); consumers read them as messages")
        stale = np.flatnonzero((off[end_at:] != 0) | (sz[end_at:] != 0) | (tags[end_at:] != 0)) + end_at
        if len(stale):
            i = int(stale[0])
            run.report(CONSUMEQUEUE, "cq-stale-units", "warning", path(i), pos(i), None,
                       f"{queue}: {len(stale)} unit(s) after the last entry hold data (first at queue offset {int(idx[i])}); "
                       f"the broker's recovery would read them as entries if they looked valid")
        real = np.flatnonzero(valid[:end_at] & ~pre[:end_at])
        if len(real):
            max_phy = max(max_phy, int(off[real[-1]] + sz[real[-1]]))
        real = real[(off[real] >= run.min_offset) & run.in_range(off[real])]
        j = rec.find(off[real])
        _report_bad_targets(run, rec, queue, real, j, idx, off, sz, path, pos)
        hit = real[j >= 0]
        jh = j[j >= 0]
        qoffs, recs = groups.get(key, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        if len(qoffs):
            k = np.minimum(np.searchsorted(qoffs, idx[hit]), len(qoffs) - 1)
            expect = np.where(qoffs[k] == idx[hit], recs[k], -1)
        else:
            expect = np.full(len(hit), -1, dtype=np.int64)
        inner = _members(jh, rec.inner_num)
        tags_ok = (tags[hit] == rec.tags[jh]) | (tags[hit] <= EXT_ADDRESS_MAX)
        bad = ~inner & ((expect != jh) | (sz[hit] != rec.size[jh]) | ~tags_ok)
        for i, r, e in zip(hit[bad].tolist(), jh[bad].tolist(), expect[bad].tolist()):
            _report_mismatch(run, rec, queue, path(i), pos(i), int(idx[i]), int(off[i]), int(sz[i]), int(tags[i]), r, e)
        # dispatched records whose unit is not there at all
        if len(qoffs):
            have = _sorted_member(qoffs, idx[np.flatnonzero(valid[:end_at] & ~pre[:end_at])])
            lost = np.flatnonzero(~have)
            if len(lost):
                missing_reports.append((queue, cq.directory, qoffs[lost], recs[lost], int(idx[end_at - 1]) + 1 if end_at else 0))
    for key, (qoffs, recs) in groups.items():
        if key not in seen:
            missing_reports.append((f"{key[0]}/{key[1]}", store.consumequeue_dir / key[0] / str(key[1]), qoffs, recs, None))
    run.cq_max_phy = max_phy
    _report_missing(run, rec, missing_reports)


def _report_bad_targets(run: Context, rec: Records, queue: str, real, j, idx, off, sz, path, pos):
    """Entries `real` whose record `j` is not there: past the commitlog's end, or where no record starts."""
    past = off[real] >= run.logical_end
    for i in real[past].tolist():
        o = int(off[i])
        cause = run.damage.cause(o, o + int(sz[i])) or _tail_cause(run, o)
        detail = f"{queue} entry {int(idx[i])} points at {o}, past the end of the commitlog ({run.logical_end})"
        if cause:
            detail += f"; a direct consequence of {cause} (the broker's recovery drops this entry)"
        run.report(CONSUMEQUEUE, "cq-entry-past-end", "error", path(i), pos(i), o, detail)
    nohit = real[(j < 0) & ~past]
    for i in nohit.tolist():
        o = int(off[i])
        cause = run.damage.cause(o, o + int(sz[i]))
        inside = rec.containing(o)
        detail = f"{queue} entry {int(idx[i])} points at {o}, where no record starts"
        if cause:
            detail += f"; a direct consequence of {cause}"
        elif inside >= 0:
            detail += f" (inside the record at {int(rec.off[inside])})"
        run.report(CONSUMEQUEUE, "cq-entry-bad-target", "error", path(i), pos(i), o, detail)


def _report_missing(run: Context, rec: Records, missing_reports: list):
    """Dispatched records whose unit is not there, per queue: (queue, directory, queue offsets, records,
    where the queue ends or None without a directory)."""
    redispatch = _redispatch_from(run)
    for queue, directory, qoffs, recs, end in missing_reports:
        offs = rec.off[recs]
        for later in (False, True):
            sel = (offs >= redispatch) if later else (offs < redispatch)
            if not sel.any():
                continue
            q, o = qoffs[sel], offs[sel]
            where = ("no consumequeue directory" if end is None else
                     f"the queue ends at {end}" if (q >= end).all() else "the queue has no unit there")
            detail = (f"{queue}: {int(sel.sum())} dispatched message(s) have no consumequeue entry (queue offsets "
                      f"{int(q.min())}..{int(q.max())}, commitlog offsets {int(o.min())}..{int(o.max())}; {where})")
            detail += ("; the broker dispatches them again at its next start (they are past where its reput resumes)"
                       if later else "; the broker will not dispatch them again: consumers never see them")
            run.report(CONSUMEQUEUE, "cq-missing-entries", "warning" if later else "error", directory, None,
                       int(o.min()), detail)


def _tail_cause(run: Context, offset: int) -> str | None:
    for lo, hi, kind, at in run.damage.ranges:
        if kind == "torn-tail" and lo <= offset:
            return f"the torn-tail at {at}"
    return None


def _report_mismatch(run, rec, queue, path, pos, qoff, off, size, tags, r, expected):
    problems = []
    if not rec.dispatched[r]:
        tx = "PREPARED" if rec.sysflag[r] & S.TRANSACTION_MASK == S.TRANSACTION_PREPARED_TYPE else "ROLLBACK"
        problems.append(f"the record is {tx}, which the broker never dispatches")
    elif expected != r:
        problems.append(f"it points at {rec.describe(r)}")
        if expected >= 0:
            problems.append(f"the record with that queue offset is at {int(rec.off[expected])}")
    if size != rec.size[r]:
        problems.append(f"size {size} but the record is {int(rec.size[r])} bytes")
    if tags != rec.tags[r] and tags > EXT_ADDRESS_MAX and expected == r:
        problems.append(f"tagsCode {tags} but the dispatcher computes {int(rec.tags[r])}")
    cause = _field_cause(run, rec, r) or (_field_cause(run, rec, expected) if expected >= 0 else None)
    detail = f"{queue} entry {qoff} (commitlog offset {off}): " + "; ".join(problems)
    if cause:
        detail += f"; {cause}"
    run.report(CONSUMEQUEUE, "cq-entry-mismatch", "error", path, pos, off, detail)


def _field_cause(run, rec: Records, r: int) -> str | None:
    """A queue-offset finding about record r explains a unit that disagrees with it."""
    o = int(rec.off[r])
    for _, f in run.out.items:
        if f.kind == "queue-offset" and f.commitLogOffset == o:
            return f"a direct consequence of the queue-offset finding at {o}"
    return None


# -- index ------------------------------------------------------------------------------------------------


def index_files(run: Context, report: bool = True) -> list[IndexFile]:
    """The index files in load order; one too short to hold its header is a finding, not a stop."""
    slots, num = run.store.index_geometry
    out = []
    for p in run.store.index_paths():
        if not INDEX_FILE_NAME.match(p.name):
            continue
        try:
            out.append(IndexFile(p, slots, num))
        except StoreError as e:
            if report:
                run.report(INDEX, "file-size", "error", p, None, None, str(e).split(": ", 1)[-1])
    return out


def index_structure(run: Context) -> dict:
    """Per index file (by path): the entries it counts, their fields (keyHash, phyOffset, timeDiff,
    prevIndex, slot), its slot values and whether its slots and chains are sound (native.verify's
    chains_sound): what the index check needs that does not depend on the commitlog, so a scan with
    threads to spare reads it alongside the commitlog."""
    if run.index_structure is None:
        slots, num = run.store.index_geometry
        run.index_structure = {ix.path: _structure(ix, slots, num) for ix in index_files(run, report=False)}
    return run.index_structure


def _structure(ix: IndexFile, slots: int, num: int):
    """(entries counted, their fields, slot values, chains sound) of one index file."""
    count = min(ix.index_count, num, len(ix.entries()))
    u8 = np.frombuffer(ix.mf.buf, np.uint8)
    fields = index_entries(u8, S.INDEX_HEADER_SIZE + slots * S.HASH_SLOT_SIZE, count, slots)
    slot_values = hash_slots(u8, S.INDEX_HEADER_SIZE, len(ix.slots()), slots)
    return count, fields, slot_values, chains_sound(fields[4], fields[3], slot_values, max(count, 1))


def check_index(run: Context, rec: Records):
    store, cfg = run.store, run.config
    paths = store.index_paths()
    for p in paths:
        if not INDEX_FILE_NAME.match(p.name):
            run.report(INDEX, "stray-file", "warning", p, None, None,
                       "not a yyyyMMddHHmmssSSS index file name: the broker loads it as an index file anyway")
    slots, num = store.index_geometry  # settled before the scan (verify refuses to guess it)
    files = index_files(run)
    rec_keys = np.sort(rec.key_record * (1 << 32) + rec.key_hash)
    found_keys = []
    prev = None
    prev_phy = None
    for ix in files:
        found_keys.append(_check_index_file(run, rec, ix, slots, num, rec_keys, prev, prev_phy))
        prev = ix
        ent = ix.entries()
        count = min(ix.index_count, len(ent))
        if count > 1:
            prev_phy = int(ent["phyOffset"][count - 1])
    if run.deep and cfg.messageIndexEnable:
        _deep_keys(run, rec, rec_keys, np.concatenate(found_keys) if found_keys else np.zeros(0, np.int64))


def _check_index_file(run, rec, ix, slots: int, num: int, rec_keys: np.ndarray, prev, prev_phy):
    h = ix.header
    name = ix.name
    found = np.zeros(0, np.int64)
    if ix.length != ix.expected_length:
        run.report(INDEX, "file-size", "error", ix.path, None, None,
                   f"index file is {ix.length} bytes; maxHashSlotNum={slots} and maxIndexNum={num} make {ix.expected_length}")
    entries = ix.entries()
    count = ix.index_count
    if count > num:
        run.report(INDEX, "index-header", "error", ix.path, S.INDEX_HEADER_AT["indexCount"], None,
                   f"indexCount {h['indexCount']} is more than maxIndexNum {num}")
    # read alongside the scan when it could be (a file a live broker has added since is read now)
    structure = index_structure(run).get(ix.path) or _structure(ix, slots, num)
    count, (key_hash, phy, diff, prev_idx, slot_of), slot_values, sound = structure
    n = np.arange(1, max(count, 1), dtype=np.int64)
    entry_pos = lambda k: S.INDEX_HEADER_SIZE + slots * S.HASH_SLOT_SIZE + int(k) * S.INDEX_ENTRY_SIZE
    # entries past indexCount must be untouched space (a header that lags shows right after the count)
    tail = entries[count : count + 4096]
    used = np.flatnonzero((tail["keyHash"] != 0) | (tail["phyOffset"] != 0) | (tail["timeDiff"] != 0) | (tail["prevIndex"] != 0))
    if len(used):
        run.report(INDEX, "index-header", "error", ix.path, entry_pos(count + used[0]), None,
                   f"{len(used)} entries past indexCount {h['indexCount']} hold data: the header lags the entries")
    if int(np.count_nonzero(slot_values)) != h["hashSlotCount"]:
        run.report(INDEX, "index-header", "error", ix.path, S.INDEX_HEADER_AT["hashSlotCount"], None,
                   f"hashSlotCount {h['hashSlotCount']} but {int(np.count_nonzero(slot_values))} slots are in use")
    negative = np.flatnonzero(key_hash < 0)
    _check_slots_and_chains(run, ix, slots, count, n, slot_of, prev_idx, slot_values, sound)
    for k in negative[:MAX_LISTED].tolist():
        run.report(INDEX, "index-entry-mismatch", "error", ix.path, entry_pos(n[k]), int(phy[k]),
                   f"entry {int(n[k])} has a negative key hash {int(key_hash[k])}; the broker stores abs(hashCode)")
    # entries against the records
    order_bad = np.flatnonzero(np.diff(phy) < 0) + 1
    if len(order_bad):
        k = int(order_bad[0])
        run.report(INDEX, "index-order", "warning", ix.path, entry_pos(n[k]), int(phy[k]),
                   f"entry {int(n[k])} points at {int(phy[k])}, before entry {int(n[k]) - 1} ({int(phy[k - 1])}): the broker "
                   f"indexes in commitlog order ({len(order_bad)} such entries)")
    lo = max(run.min_offset, run.start if run.start is not None else run.min_offset)
    hi = run.end if run.end is not None else np.iinfo(np.int64).max
    first_base = (prev.header["endTimestamp"] if prev is not None else -1)
    outcome, record = index_targets(phy, key_hash, diff, lo, hi, run.logical_end, rec.off, rec_keys, rec.store_ts,
                                    h["beginTimestamp"], first_base)
    flagged = outcome.any()  # a sound file has no entry to report: no pass per kind of finding
    for k in (np.flatnonzero(outcome & E_PAST_END) if flagged else n[:0]).tolist():
        o = int(phy[k])
        cause = run.damage.cause(o) or _tail_cause(run, o)
        detail = f"entry {int(n[k])} points at {o}, past the end of the commitlog ({run.logical_end})"
        if cause:
            detail += f"; a direct consequence of {cause}"
        run.report(INDEX, "index-entry-past-end", "error", ix.path, entry_pos(n[k]), o, detail)
    for k in (np.flatnonzero(outcome & E_NO_RECORD)[:100] if flagged else n[:0]).tolist():
        o = int(phy[k])
        cause = run.damage.cause(o)
        inside = rec.containing(o)
        detail = f"entry {int(n[k])} points at {o}, where no record starts"
        detail += f"; a direct consequence of {cause}" if cause else (
            f" (inside the record at {int(rec.off[inside])})" if inside >= 0 else "")
        run.report(INDEX, "index-entry-bad-target", "error", ix.path, entry_pos(n[k]), o, detail)
    if run.deep:  # (record, key hash) of every entry, for the keys every record should have
        hit = np.flatnonzero(record >= 0)
        found = record[hit] * (1 << 32) + key_hash[hit]
    wrong_key = np.flatnonzero(outcome & E_WRONG_KEY) if flagged else n[:0]
    for k in wrong_key[:MAX_LISTED].tolist():
        run.report(INDEX, "index-entry-mismatch", "error", ix.path, entry_pos(n[k]), int(phy[k]),
                   f"entry {int(n[k])} has key hash {int(key_hash[k])}, but no key of the record it points at "
                   f"({rec.describe(int(record[k]))}) hashes to it")
    if len(wrong_key) > MAX_LISTED:
        run.report(INDEX, "index-entry-mismatch", "error", ix.path, None, None,
                   f"{len(wrong_key) - MAX_LISTED} more entries in {name} whose key hash matches no key of their record")
    if flagged:
        _report_time_diffs(run, rec, ix, np.flatnonzero(outcome & E_TIME)[:MAX_LISTED], n, phy, diff, record,
                           first_base, entry_pos)
    if count > 1:
        _check_header(run, rec, ix, phy)
    return found


def _report_time_diffs(run: Context, rec: Records, ix: IndexFile, ks, n, phy, diff, record, first_base: int,
                       entry_pos):
    """timeDiff: seconds since the file's beginTimestamp (for the first entry: the previous file's end, which
    the constructor presets)."""
    for k in ks.tolist():
        base = first_base if k == 0 else ix.header["beginTimestamp"]
        want = 0 if base <= 0 else min(max((int(rec.store_ts[record[k]]) - base) // 1000, 0), 0x7FFFFFFF)
        run.report(INDEX, "index-entry-mismatch", "warning", ix.path, entry_pos(n[k]), int(phy[k]),
                   f"entry {int(n[k])} has timeDiff {int(diff[k])} s but the record's storeTimestamp gives {want}: "
                   f"time-bounded lookups misjudge it")


def _check_header(run: Context, rec: Records, ix: IndexFile, phy: np.ndarray):
    """The header's begin/end values against its first and last entries and their records."""
    h = ix.header
    checks = [("beginPhyOffset", int(phy[0])), ("endPhyOffset", int(phy[-1]))]
    for field, at in (("beginTimestamp", 0), ("endTimestamp", len(phy) - 1)):
        r = rec.find(phy[at : at + 1])[0]
        if r >= 0:
            checks.append((field, int(rec.store_ts[r])))
    for field, value in checks:
        if h[field] != value:
            run.report(INDEX, "index-header", "error", ix.path, None, None,
                       f"{field} {h[field]} but the entries say {value}")


def _counted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and how often each occurs."""
    values = np.sort(values)
    if not len(values):
        return values, np.zeros(0, np.int64)
    first = np.flatnonzero(np.append(True, values[1:] != values[:-1]))
    return values[first], np.diff(np.append(first, len(values)))


def _check_slots_and_chains(run, ix, slots: int, count: int, n: np.ndarray, slot_of: np.ndarray,
                            prev_idx: np.ndarray, slot_values: np.ndarray, sound: bool):
    """Each slot holds the newest entry of its hash; each entry links to the previous entry of its slot (0
    at a chain's start), so chains are acyclic and strictly backwards. First in O(n) (prevIndex in range,
    same slot, no entry linked twice, one chain start and one slot value per slot used, slot values nobody
    links to); only when that fails, the exact expected links from sorting the entries by slot."""
    total = max(count, 1)
    out_of_range = np.flatnonzero((slot_values < 0) | (slot_values >= total))
    for s in out_of_range[:MAX_LISTED].tolist():
        run.report(INDEX, "index-slot", "error", ix.path, S.INDEX_HEADER_SIZE + s * S.HASH_SLOT_SIZE, None,
                   f"slot {s} holds {int(slot_values[s])}, outside the entries 1..{count - 1}")
    if sound:
        return
    order = np.argsort(slot_of, kind="stable")
    sorted_slots = slot_of[order]
    newest = np.zeros(slots, dtype=np.int64)
    expected = np.zeros(len(n), dtype=np.int64)
    if len(n):
        last = np.append(sorted_slots[1:] != sorted_slots[:-1], True)
        newest[sorted_slots[last]] = n[order][last]
        same = np.concatenate([[False], sorted_slots[1:] == sorted_slots[:-1]])
        expected[order] = np.where(same, np.concatenate([[0], n[order][:-1]]), 0)
    wrong = np.flatnonzero((newest != slot_values) & (slot_values >= 0) & (slot_values < total))
    for s in wrong[:MAX_LISTED].tolist():
        run.report(INDEX, "index-slot", "error", ix.path, S.INDEX_HEADER_SIZE + s * S.HASH_SLOT_SIZE, None,
                   f"slot {s} holds entry {int(slot_values[s])} but its newest entry is {int(newest[s])}: lookups of "
                   f"keys in this slot miss entries")
    broken = np.flatnonzero(prev_idx != expected)
    entry_pos = S.INDEX_HEADER_SIZE + slots * S.HASH_SLOT_SIZE
    for k in broken[:MAX_LISTED].tolist():
        p = int(prev_idx[k])
        what = ("a loop: it links to itself or to a later entry" if p >= n[k] else
                "out of range" if p < 0 else
                f"it should link to entry {int(expected[k])}, the previous one in slot {int(slot_of[k])}")
        run.report(INDEX, "index-chain", "error", ix.path, entry_pos + int(n[k]) * S.INDEX_ENTRY_SIZE, None,
                   f"entry {int(n[k])} has prevIndex {p}: {what}")
    if len(broken) > MAX_LISTED:
        run.report(INDEX, "index-chain", "error", ix.path, None, None,
                   f"{len(broken) - MAX_LISTED} more entries with a wrong prevIndex in {ix.name}")


def _deep_keys(run: Context, rec: Records, rec_keys: np.ndarray, found: np.ndarray):
    """Every key of every (non-rollback) record in range has its entry: (record, hash) counted on both
    sides, since a key given twice is indexed twice."""
    rec_of = rec_keys >> 32
    keep = (rec.off[rec_of] >= run.min_offset) & run.in_range(rec.off[rec_of])
    want, want_n = _counted(rec_keys[keep])
    have, have_n = _counted(found)
    k = np.searchsorted(have, want)
    k = np.minimum(k, max(len(have) - 1, 0))
    got = np.where((have[k] == want) if len(have) else np.zeros(len(want), bool), have_n[k] if len(have) else 0, 0)
    short = np.flatnonzero(got < want_n)
    if not len(short):
        return
    recs = _distinct(want[short] >> 32)
    offs = rec.off[recs]
    examples = ", ".join(rec.describe(int(r)) for r in recs[:3])
    run.report(INDEX, "index-missing-key", "warning", run.store.index_dir, None, int(offs.min()),
               f"{int((want_n[short] - got[short]).sum())} key(s) of {len(recs)} message(s) are not in the index (commitlog "
               f"offsets {int(offs.min())}..{int(offs.max())}, e.g. {examples}): lookups by key do not find them")


def index_loss_on_recovery(run: Context, cp: dict, begin: int):
    """With the abort file, the broker deletes index files whose endTimestamp is after the checkpoint's
    indexMsgTimestamp and re-indexes only from where its recovery starts: keys of records before that are
    lost from the index (unless messageIndexSafe made the recovery start early enough)."""
    cfg = run.config
    if not cfg.messageIndexEnable:
        return
    for ix in index_files(run, report=False):
        if ix.header["endTimestamp"] <= cp["indexMsgTimestamp"]:
            continue
        entries = ix.entries()
        ent = entries[1 : min(ix.index_count, len(entries))]
        lost = ent["phyOffset"] < begin
        if lost.any():
            offs = ent["phyOffset"][lost]
            run.report(CHECKPOINT, "index-lost-on-recovery", "warning", ix.path, None, int(offs.min()),
                       f"the broker deletes this index file at load (endTimestamp {ix.header['endTimestamp']} > "
                       f"indexMsgTimestamp {cp['indexMsgTimestamp']}) and its recovery re-indexes only from {begin}: "
                       f"{int(lost.sum())} key(s) of messages at {int(offs.min())}..{int(offs.max())} will not be found by key")
