"""verify's index check in windows of commitlog offsets (checks/windows.py).

Per index file, `begin` checks what does not depend on the records (header counts, slots and chains, key
hashes, order) and notes the range of commitlog offsets its entries point at; each window then checks the
entries pointing into it against its records (engine.checks.index_targets), with a file's entry columns
read while windows still need them (a file whose entries go forward in commitlog order: only the window's
slice of them). Findings limited per file (the first entries of a kind) keep the lowest entry numbers seen;
everything is filed by `finish` in the order of the whole-store check. With `deep`, a record's keys are
counted against the entries pointing at it: both lie in the record's window.
"""

from __future__ import annotations

import numpy as np

from .. import schema as S
from ..errors import FileGone
from ..findings import INDEX, Findings
from ..engine import E_NO_RECORD, E_PAST_END, E_TIME, E_WRONG_KEY, hash_slots, index_targets
from ..rules import index_dropped_after_crash, index_time_diff, record_expired
from ..store import INDEX_FILE_NAME, loaded_index_name
from .context import Context, Records
from .links import (
    MAX_LISTED,
    _check_slots_and_chains,
    _counted,
    _distinct,
    _structure,
    _tail_cause,
    entry_blocks,
    index_files,
)
from .windows import Window

NO_RECORD_LISTED = 100


class _File:
    def __init__(self, ix, prev):
        self.ix = ix
        self.first_base = prev.header["endTimestamp"] if prev is not None else -1
        self.count = 0
        self.lo, self.hi, self.forward = 1, 0, True  # the commitlog offsets its entries point at
        self.first_phy = self.last_phy = None
        self.header_ts = {}  # beginTimestamp / endTimestamp -> the storeTimestamp of the record there
        self.past_end: list = []
        self.no_record: list = []  # (entry, offset, detail), the lowest entries
        self.wrong_key: list = []  # (entry, offset, key hash, record described)
        self.wrong_keys = 0
        self.times: list = []  # (entry, offset, timeDiff, want)

    def note(self, run: Context, rec: Records, ks, outcome, record, phy, key_hash, diff):
        """The entries of a block the kernel judged wrong, kept to be filed at the end (the lowest of each kind)."""
        self._note_targets(run, rec, ks, outcome, phy)
        wrong = np.flatnonzero(outcome & E_WRONG_KEY)
        self.wrong_keys += len(wrong)
        for i in wrong.tolist():
            k = int(ks[i])
            if len(self.wrong_key) < MAX_LISTED or k < self.wrong_key[-1][0]:
                self.wrong_key = sorted(
                    self.wrong_key + [(k, int(phy[i]), int(key_hash[i]), rec.describe(int(record[i])))]
                )[:MAX_LISTED]
        for i in np.flatnonzero(outcome & E_TIME).tolist():
            k = int(ks[i])
            if len(self.times) < MAX_LISTED or k < self.times[-1][0]:
                base = self.first_base if k == 0 else self.ix.header["beginTimestamp"]
                want = index_time_diff(int(rec.store_ts[record[i]]), base)
                self.times = sorted(self.times + [(k, int(phy[i]), int(diff[i]), want)])[:MAX_LISTED]

    def _note_targets(self, run: Context, rec: Records, ks, outcome, phy):
        """Entries pointing past the commitlog's end or where no record starts, with their cause."""
        for i in np.flatnonzero(outcome & E_PAST_END).tolist():
            k, o = int(ks[i]), int(phy[i])
            cause = run.damage.cause(o) or _tail_cause(run, o)
            detail = f"entry {k + 1} points at {o}, past the end of the commitlog ({run.logical_end})"
            if cause:
                detail += f"; a direct consequence of {cause}"
            self.past_end.append((k, o, detail))
        for i in np.flatnonzero(outcome & E_NO_RECORD).tolist():
            k, o = int(ks[i]), int(phy[i])
            if len(self.no_record) >= NO_RECORD_LISTED and k > self.no_record[-1][0]:
                continue
            cause = run.damage.cause(o)
            inside = rec.containing(o)
            detail = f"entry {k + 1} points at {o}, where no record starts"
            detail += (
                f"; a direct consequence of {cause}"
                if cause
                else (f" (inside the record at {int(rec.off[inside])})" if inside >= 0 else "")
            )
            self.no_record = sorted(self.no_record + [(k, o, detail)])[:NO_RECORD_LISTED]


class IndexCheck:
    """check_index in windows: `begin`, `window` per window in commitlog order, `finish`."""

    def __init__(self, run: Context):
        self.run = run
        self.slots, self.num = run.store.index_geometry  # settled before the scan (verify refuses to guess it)
        self.files: list[_File] = []
        self.deep = _MissingKeys(run) if run.deep and run.config.messageIndexEnable else None
        self.unindexed = self.unindexed_lo = None  # no index file at all: the keys and first record it lacks

    def begin(self) -> Findings:
        run, found = self.run, Findings()
        for p in run.store.index_paths():
            if not loaded_index_name(p.name):
                what = "a name Long.parseLong refuses: the broker's load skips it"
                found.add(INDEX, "stray-file", "warning", p, None, None, what)
            elif not INDEX_FILE_NAME.match(p.name):
                what = "not a yyyyMMddHHmmssSSS name, but a number: the broker loads it as an index file"
                found.add(INDEX, "stray-file", "warning", p, None, None, what)
        index_dir = run.store.index_dir
        for p in sorted(index_dir.iterdir()) if index_dir.is_dir() else ():
            if p.is_dir() and loaded_index_name(p.name):  # (one whose name does not parse is skipped, not opened)
                what = "a directory named as a number: IndexService.load fails opening it and stops, " + (
                    "and 5.x's store load fails with it (the broker does not start)"
                    if run.store.version.major == 5
                    else "so the index files after it in name order are not loaded (their keys are not found)"
                )
                found.add(INDEX, "stray-file", "error", p, None, None, what)
        prev = None
        files, unreadable = index_files(run)
        found += unreadable
        for ix in files:
            f = _File(ix, prev)
            self.files.append(f)
            try:
                found += _structure_checks(run, f, self.slots, self.num, self.entry_pos)
            except FileGone as e:
                self._lost(f, e)
            prev = ix
        if not self.files and run.config.messageIndexEnable and run.config.indexFileWriteEnable:
            self.unindexed = 0  # (indexFileWriteEnable=false, 5.4: an empty index/ by design, the RocksDB index used)
        run.index_structure = None  # read alongside the scan; from here on, per window
        return found

    def entry_pos(self, k) -> int:
        return S.INDEX_HEADER_SIZE + self.slots * S.HASH_SLOT_SIZE + int(k) * S.INDEX_ENTRY_SIZE

    def _blocks(self, f: _File, w: Window):
        """(entry numbers - 1, keyHash, phyOffset, timeDiff) of the file's entries pointing into the window, a
        block at a time: a slice found by binary search when the file goes forward, else every block masked
        to the window (a damaged file: a pass over it per window)."""
        if f.forward:
            phy = f.ix.entries()["phyOffset"]  # entry k + 1 at k + 1: a view on the map
            a, b = _bound(phy, f.count, w.lo), _bound(phy, f.count, w.hi)
            for k, h, p, d, _, _ in entry_blocks(f.ix, self.slots, f.count, a, b):
                yield k + np.arange(len(h)), h, p, d
        else:
            for k, h, p, d, _, _ in entry_blocks(f.ix, self.slots, f.count):
                mine = np.flatnonzero(w.holds(p))
                if len(mine):
                    yield k + mine, h[mine], p[mine], d[mine]

    def window(self, w: Window) -> Findings:  # (none: what is wrong is listed at `finish`)
        rec = w.rec
        rec_keys = np.sort(rec.key_record * (1 << 32) + rec.key_hash)
        if self.unindexed is not None:
            self._count_unindexed(rec)
        indexed = []  # --deep: (record, key hash) of the entries found, a block at a time
        for f in list(self.files):
            try:
                indexed += self._file_window(f, w, rec_keys)
            except FileGone as e:
                self._lost(f, e)
        if self.deep is not None:
            self.deep.count(rec, rec_keys, np.concatenate(indexed) if indexed else np.zeros(0, np.int64), self.files)
        return Findings()

    def _file_window(self, f: _File, w: Window, rec_keys: np.ndarray) -> list[np.ndarray]:
        """One file's entries pointing into the window, judged; --deep: the (record, key hash) pairs found."""
        run, rec, h, indexed = self.run, w.rec, f.ix.header, []
        lo = max(run.min_offset, run.start if run.start is not None else run.min_offset)
        hi = run.end if run.end is not None else np.iinfo(np.int64).max
        for field, at in (("beginTimestamp", f.first_phy), ("endTimestamp", f.last_phy)):
            if at is not None and w.lo <= at < w.hi:
                r = rec.find(np.array([at]))[0]
                if r >= 0:
                    f.header_ts[field] = int(rec.store_ts[r])
        if f.lo > f.hi or f.hi < w.lo or f.lo >= w.hi:
            return indexed
        for ks, key_hash, phy, diff in self._blocks(f, w):  # (a block's columns at a time, not the window's)
            first_base = f.first_base if ks[0] == 0 else h["beginTimestamp"]
            outcome, record = index_targets(
                phy, key_hash, diff, lo, hi, run.logical_end, rec.off, rec_keys, rec.store_ts,
                h["beginTimestamp"], first_base,
            )  # fmt: skip
            if outcome.any():
                f.note(run, rec, ks, outcome, record, phy, key_hash, diff)
            if self.deep is not None:
                hit = np.flatnonzero(record >= 0)
                indexed.append(record[hit] * (1 << 32) + key_hash[hit])
        f.ix.mf.release()
        return indexed

    def _lost(self, f: _File, error: FileGone):
        """Index file `f` went while it was read: beside a running broker its expired head (IndexService deletes
        a file once the commitlog's min offset passed its last entry), left out with its entries, whose records
        are expired by now; on a stopped store the error."""
        run = self.run
        if run.live is None:
            raise error
        run.live.gone(f.ix.path, "its entries are expired: the checks leave them out")
        self.files.remove(f)
        run.expire_below(f.ix.header["endPhyOffset"] + 1)  # (deleted once the min passed its last entry)

    def _count_unindexed(self, rec: Records):
        """With no index file: the keys of the (non-rollback) records in range, which no lookup finds."""
        run = self.run
        offs = rec.off[rec.key_record]
        offs = offs[~record_expired(offs, run.min_offset) & run.in_range(offs)]
        self.unindexed += len(offs)
        if len(offs) and self.unindexed_lo is None:
            self.unindexed_lo = int(offs.min())

    def finish(self) -> Findings:
        run, found = self.run, Findings()
        if self.unindexed:
            found.add(
                INDEX,
                "index-missing",
                "warning",
                run.store.index_dir,
                None,
                self.unindexed_lo,
                f"no index file, but the commitlog holds {self.unindexed} key(s) to index: the broker's "
                "lookups by key find none of them; rmqctl rebuild index makes the files",
            )
        for f in list(self.files):
            try:
                found += _file_findings(run, f, self.entry_pos)
            except FileGone as e:
                self._lost(f, e)
        if self.deep is not None:
            found += self.deep.finish()
        return found


class _MissingKeys:
    """--deep: every key of every (non-rollback) record in range has its entry, counted window by window."""

    def __init__(self, run: Context):
        self.run = run
        self.short = self.messages = 0  # keys missing, and the messages they belong to
        self.short_lo = self.short_hi = None
        self.examples: list[str] = []

    def count(self, rec: Records, rec_keys: np.ndarray, found: np.ndarray, files: list[_File]):
        """The window's (record, hash) pairs counted on both sides, since a key given twice is indexed twice."""
        run = self.run
        rec_of = rec_keys >> 32
        keep = ~record_expired(rec.off[rec_of], run.min_offset) & run.in_range(rec.off[rec_of])
        if run.live is not None:  # records the index service had not reached at the snapshot: in flight
            # (IndexService.buildIndex moves endPhyOffset at each key it puts: that record may be partly indexed)
            keep &= rec.off[rec_of] < max([f.ix.header["endPhyOffset"] for f in files], default=-1)
        want, want_n = _counted(rec_keys[keep])
        have, have_n = _counted(found)
        k = np.minimum(np.searchsorted(have, want), max(len(have) - 1, 0))
        got = np.where((have[k] == want) if len(have) else np.zeros(len(want), bool), have_n[k] if len(have) else 0, 0)
        short = np.flatnonzero(got < want_n)
        if not len(short):
            return
        recs = _distinct(want[short] >> 32)
        offs = rec.off[recs]
        self.short += int((want_n[short] - got[short]).sum())
        self.messages += len(recs)
        self.short_lo = int(offs.min()) if self.short_lo is None else self.short_lo
        self.short_hi = int(offs.max())
        self.examples += [rec.describe(int(r)) for r in recs[: 3 - len(self.examples)]]

    def finish(self) -> Findings:
        found = Findings()
        if self.short:
            found.add(
                INDEX,
                "index-missing-key",
                "warning",
                self.run.store.index_dir,
                None,
                self.short_lo,
                f"{self.short} key(s) of {self.messages} message(s) are not in the index (commitlog offsets "
                f"{self.short_lo}..{self.short_hi}, e.g. {', '.join(self.examples)}): lookups by key do not "
                f"find them",
            )
        return found


def _structure_checks(run: Context, f: _File, slots: int, num: int, entry_pos) -> Findings:
    """What an index file says of itself: its header against its entries and slots, the chains, key hashes and
    order (read alongside the scan when it could be; a file a live broker has added since is read now)."""
    ix = f.ix
    summary = (run.index_structure or {}).get(ix.path) or _structure(ix, slots, num)
    count = f.count = summary.count
    found = _header_checks(ix, slots, num, count, entry_pos)
    slot_values = hash_slots(np.frombuffer(ix.mf.buf, np.uint8), S.INDEX_HEADER_SIZE, len(ix.slots()), slots)
    if int(np.count_nonzero(slot_values)) != ix.header["hashSlotCount"]:
        found.add(
            INDEX,
            "index-header",
            "error",
            ix.path,
            S.INDEX_HEADER_AT["hashSlotCount"],
            None,
            f"hashSlotCount {ix.header['hashSlotCount']} but {int(np.count_nonzero(slot_values))} slots are in use",
        )
    found += _check_slots_and_chains(run, ix, slots, count, slot_values, summary.sound)
    del slot_values
    for k, key_hash, phy in summary.negative:
        found.add(
            INDEX,
            "index-entry-mismatch",
            "error",
            ix.path,
            entry_pos(k),
            phy,
            f"entry {k} has a negative key hash {key_hash}; the broker stores abs(hashCode)",
        )
    if summary.order is not None:
        k, phy, before, bad = summary.order
        found.add(
            INDEX,
            "index-order",
            "warning",
            ix.path,
            entry_pos(k),
            phy,
            f"entry {k} points at {phy}, before entry {k - 1} ({before}): the broker indexes in commitlog "
            f"order ({bad} such entries)",
        )
    f.lo, f.hi, f.forward = summary.lo, summary.hi, summary.order is None
    f.first_phy, f.last_phy = summary.first_phy, summary.last_phy
    ix.mf.release()
    return found


def _header_checks(ix, slots: int, num: int, count: int, entry_pos) -> Findings:
    """The file's size for its geometry, and its indexCount against maxIndexNum and the entries that hold data."""
    found = Findings()
    h = ix.header
    if ix.length != ix.expected_length:
        found.add(
            INDEX,
            "file-size",
            "error",
            ix.path,
            None,
            None,
            f"index file is {ix.length} bytes; maxHashSlotNum={slots} and maxIndexNum={num} make {ix.expected_length}",
        )
    entries = ix.entries()
    if ix.index_count > num:
        found.add(
            INDEX,
            "index-header",
            "error",
            ix.path,
            S.INDEX_HEADER_AT["indexCount"],
            None,
            f"indexCount {h['indexCount']} is more than maxIndexNum {num}",
        )
    tail = entries[count : count + 4096]
    used = np.flatnonzero(
        (tail["keyHash"] != 0) | (tail["phyOffset"] != 0) | (tail["timeDiff"] != 0) | (tail["prevIndex"] != 0)
    )
    if len(used):
        found.add(
            INDEX,
            "index-header",
            "error",
            ix.path,
            entry_pos(count + used[0]),
            None,
            f"{len(used)} entries past indexCount {h['indexCount']} hold data: the header lags the entries",
        )
    return found


def _file_findings(run: Context, f: _File, pos) -> Findings:
    """One index file's entry and header findings, in the order of the whole-store check."""
    ix = f.ix
    found = Findings()
    for k, o, detail in f.past_end:
        found.add(INDEX, "index-entry-past-end", "error", ix.path, pos(k + 1), o, detail)
    for k, o, detail in f.no_record:
        found.add(INDEX, "index-entry-bad-target", "error", ix.path, pos(k + 1), o, detail)
    for k, o, key_hash, what in f.wrong_key:
        found.add(
            INDEX,
            "index-entry-mismatch",
            "error",
            ix.path,
            pos(k + 1),
            o,
            f"entry {k + 1} has key hash {key_hash}, but no key of the record it points at ({what}) hashes to it",
        )
    if f.wrong_keys > MAX_LISTED:
        found.add(
            INDEX,
            "index-entry-mismatch",
            "error",
            ix.path,
            None,
            None,
            f"{f.wrong_keys - MAX_LISTED} more entries in {ix.name} whose key hash matches no key of their record",
        )
    for k, o, diff, want in f.times:
        found.add(
            INDEX,
            "index-entry-mismatch",
            "warning",
            ix.path,
            pos(k + 1),
            o,
            f"entry {k + 1} has timeDiff {diff} s but the record's storeTimestamp gives {want}: time-bounded "
            f"lookups misjudge it",
        )
    if f.count > 1:
        h = ix.header
        checks = [("beginPhyOffset", f.first_phy), ("endPhyOffset", f.last_phy)]
        checks += [(field, f.header_ts[field]) for field in ("beginTimestamp", "endTimestamp") if field in f.header_ts]
        for field, value in checks:
            if h[field] != value:
                found.add(
                    INDEX,
                    "index-header",
                    "error",
                    ix.path,
                    None,
                    None,
                    f"{field} {h[field]} but the entries say {value}",
                )
    cp = run.store.checkpoint() if run.crashed and len(found) else None
    if cp is not None and index_dropped_after_crash(ix.header["endTimestamp"], cp["indexMsgTimestamp"]):
        for finding in found:  # moot: the file is gone at the broker's next start
            finding.severity = "info"
            finding.detail += (
                "; after the crash the broker deletes this file at load (its endTimestamp is after the checkpoint's "
                "indexMsgTimestamp) and indexes again from its recovery start"
            )
    return found


def _bound(phy, count: int, x: int) -> int:
    """How many of entries 1..count-1 (going forward in commitlog order) point before offset x."""
    a, b = 0, max(count - 1, 0)
    while a < b:
        m = (a + b) // 2
        if int(phy[m + 1]) < x:
            a = m + 1
        else:
            b = m
    return a
