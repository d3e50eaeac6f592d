"""The DLedger half of `verify` for a store in DLedger mode (rmqctl/dledger.py): each data file's entries walked
and checked (magic, size, pos equal to the entry's place, bodyLength, the BLANK that ends a full file), the
record in each entry body checked by verify's own kernel (engine/dledger.py steps it from body to body), and
then the layer as a whole: index continuity, terms never decreasing, every index unit equal to its entry,
`checkpoint` against the data, and what DLedgerMmapFileStore.recover will truncate at the next start.

A data file's result is a ChunkResult like a plain commitlog chunk's, with positions inside the file, so
checks/commitlog.py merges the records into the same table and checks/verify.py runs the consumequeue, index
and checkpoint checks on them unchanged; verify calls `check_layer` after that merge.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import dledger as D
from .. import schema as S
from ..findings import CHECKPOINT, FILES, RECORDS, Finding, Findings
from .. import engine as K
from ..record import RecordError, read_record
from ..store import MappedFileQueue
from .context import Context
from .scan import ChunkResult, Region, Task, _Scanner, open_map

RECORD_KINDS = {"zeros": "zeroed-region"}  # read_record's kind -> the finding, as for plain records


def scan_file(task: Task) -> ChunkResult:
    buf = open_map(task.path)
    return _EntryScanner(task, buf, min(len(buf), task.file_size)).run()


class _EntryScanner(_Scanner):
    """One data file: the entry walk (rmqctl.dledger), then the record of every claimed entry body."""

    def run(self) -> ChunkResult:
        t = self.t
        walks, bodies = self._walks()
        claimed = [found.position >= t.claim_from for found in walks]
        starts = np.concatenate([f.message_starts()[c] for f, c in zip(walks, claimed)] + [bodies[:, 0]])
        ends = np.concatenate([f.message_ends()[c] for f, c in zip(walks, claimed)] + [bodies[:, 1]])
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
        add = self.findings.append
        i = 0
        while i < len(starts):
            status, i = K.walk_bodies(self.u8, starts, ends, i, 0, *self.record_kernel_args())
            if status == K.FULL:
                self.grow()
            elif status == K.BROKEN:
                at = int(starts[i])
                try:
                    read_record(self.buf, at, int(ends[i]), self.allow_v2)
                except RecordError as e:
                    add(
                        (
                            RECORD_KINDS.get(e.kind, e.kind),
                            "error",
                            at,
                            f"the body of the DLedger entry at {t.file_start + at - S.DLEDGER_BODY_OFFSET} is not a "
                            f"record ({e.detail}); the broker's reput skips the entry",
                        )
                    )
                i += 1
        for found, c in zip(walks, claimed):
            self.entry_findings(found, c)
        self.file_end(walks[-1])
        return self.result(t.begin, walks[-1].end)

    def _walks(self) -> tuple[list[D.FileEntries], np.ndarray]:
        """The entry walk from the task's start, and again past each entry whose header stops it where RocketMQ's
        reput read on (D.reput_reads_on, before the committed position: it dispatched the record in that entry and
        the entries after it, which the consumequeues and index name); each such header is damage up to its record. Returns the walks and
        the (start, end) of the records in those entries, (n, 2) int64."""
        t = self.t
        walks, bodies = [D.walk_entries(self.buf, self.limit, t.begin, t.stop)], []
        while walks[-1].stop is not None and t.claim_from <= walks[-1].stop.position < self._reput_passed():
            stop = walks[-1].stop
            on = D.reput_reads_on(self.buf, self.limit, stop.position, self.allow_v2)
            if on is None:
                break
            body = stop.position + S.DLEDGER_BODY_OFFSET
            what = f"{stop.detail}; the broker's reput reads the record in it and on, DLedger's recovery stops here"
            self.regions.append(Region(stop.position, stop.kind, what, body, -1, False))
            bodies.append((body, on))
            walks[-1] = dataclasses.replace(walks[-1], stop=None)
            walks.append(D.walk_entries(self.buf, self.limit, on, t.stop))
        return walks, np.array(bodies, np.int64).reshape(-1, 2)

    def _reput_passed(self) -> int:
        """Up to where in this file RocketMQ's reput had read (the committed position; nothing when unknown)."""
        return -1 if self.t.reput_end is None else self.t.reput_end - self.t.file_start

    def entry_findings(self, found: D.FileEntries, claimed: np.ndarray):
        """Each claimed entry's own fields, and its body against the record in it (flagged in numpy passes;
        the few flagged entries described one by one)."""
        t, add = self.t, self.findings.append
        n = int(self.state[K.S_RECORDS])
        rec_pos, rec_size = self.records[K.POS, :n], self.records[K.SIZE, :n]
        body_at = found.message_starts()
        j = np.minimum(np.searchsorted(rec_pos, body_at), max(n - 1, 0))
        has_record = (rec_pos[j] == body_at) if n else np.zeros(len(body_at), bool)
        record_size = np.where(has_record, rec_size[j] if n else 0, -1)
        bad_pos = found.pos != found.position + t.file_start
        bad_size = found.bodyLength + S.DLEDGER_BODY_OFFSET != found.size
        bad_body = has_record & (record_size != found.bodyLength) & ~bad_size
        for k in np.flatnonzero(claimed & (bad_pos | bad_size | bad_body)).tolist():
            at, index = int(found.position[k]), int(found.index[k])
            size, body = int(found.size[k]), int(found.bodyLength[k])
            if bad_pos[k]:
                add(
                    (
                        "dledger-entry-pos",
                        "error",
                        at,
                        f"DLedger entry {index} has pos {int(found.pos[k])} but lies at {t.file_start + at}",
                    )
                )
            if bad_size[k]:
                add(
                    (
                        "dledger-entry-size",
                        "error",
                        at,
                        f"DLedger entry {index} has size {size} but bodyLength {body} (+ {S.DLEDGER_BODY_OFFSET})",
                    )
                )
            if bad_body[k]:
                add(
                    (
                        "dledger-entry-body",
                        "error",
                        at,
                        f"DLedger entry {index} holds {body} body bytes but its record's storeSize is "
                        f"{int(record_size[k])}: the broker's reput steps by the record and loses its place",
                    )
                )

    def file_end(self, found: D.FileEntries):
        """How the file ends: the DLedger BLANK (claiming the rest of the file), zeros, or bytes the walk stops at."""
        t = self.t
        if found.end < t.claim_from or (
            found.stop is None and found.blank is None and t.stop <= found.end < self.limit
        ):
            return  # (the walk goes on in the next chunk)
        if found.stop is not None:
            s = found.stop
            self.regions.append(Region(s.position, s.kind, s.detail, None, self.last_nonzero(s.position), False))
        elif found.blank is not None:
            at, size = found.blank
            if size != t.file_size - at:
                self.findings.append(
                    (
                        "dledger-blank-size",
                        "error",
                        at,
                        f"the DLedger BLANK claims {size} bytes but {t.file_size - at} remain in the file",
                    )
                )
        elif found.end < self.limit:
            self.regions.append(
                Region(
                    found.end,
                    "zeros",
                    "zero bytes where the next entry or the DLedger BLANK should be",
                    None,
                    self.last_nonzero(found.end),
                    True,
                )
            )
        else:
            self.missing_blank(found.end)


# ---- the layer as a whole ------------------------------------------------------------------------------------


def check_layer(run: Context, results: list[list[ChunkResult]], report: bool) -> tuple[D.Recovery | None, Findings]:
    """Index continuity and terms across files, the index units and the DLedger checkpoint; returns what the
    recovery will do (for `recovery_notes`, once the records past its cut are counted) and the findings (only
    the index files' when not `report`ing the commitlog). The entries are
    walked again a slice of a data file at a time (the scan keeps none), so what is held is one slice's
    entries and the last entry before them."""
    store, files = run.store, run.files
    layout = store.dledger
    found = Findings()
    try:
        iq = store.dledger_index
    except Exception as e:  # index files of different sizes: named, and the unit checks skipped
        found.add(FILES, "dledger-index-file", "error", layout.index_dir, None, None, str(e))
        iq = None
    units = _IndexUnits(run, iq) if iq is not None and report else None
    if units is not None:
        found += _index_files(run, iq)
    before = None  # (file, offset, index, term) of the last entry compared
    for i, rs in enumerate(results):
        if not rs:
            continue
        f = files[i]
        for entries in D.entry_slices(f.buf, min(len(f.buf), run.file_size), D.ENTRY_SLICE):
            pos = entries.position + f.start
            # with --from/--to: the entries whose record is in range, compared only with a neighbour also walked
            keep = run.in_range(pos + S.DLEDGER_BODY_OFFSET)
            cols = {name: getattr(entries, name)[keep] for name in ("magic", "size", "index", "term")}
            pos = pos[keep]
            del entries
            if not len(pos):
                continue
            if report:
                found += _neighbours(run, i, before, pos, cols["index"], cols["term"])
            if units is not None:
                found += units.check(pos, cols)
            before = (i, int(pos[-1]), int(cols["index"][-1]), int(cols["term"][-1]))
        f.release()
    state = D.read_state(layout.checkpoint_path)
    recovery = D.recover(store.commitlog, iq, state) if iq is not None and report else None
    # the last entry: where DLedger's recovery ends the log (an entry torn past its header walks on, its index
    # field zeros), else the last one walked
    last = recovery.end_index if recovery is not None else before[2] if before is not None else None
    if units is not None and run.full_range:
        found += units.extra(-1 if last is None else last)
    if report and run.full_range:
        found += _checkpoint(run, state, last)
    return recovery, found


def _neighbours(run: Context, i: int, before: tuple | None, pos, index, term) -> Findings:
    """Indexes going up by one and terms never down, entry after entry: those of data file `i`, the first
    against `before` (the last entry compared) when that lies in this file or the one before."""
    fidx = np.full(len(pos), i)
    if before is not None:
        fidx, pos, index, term = (np.concatenate([[v], x]) for v, x in zip(before, (fidx, pos, index, term)))
    near = fidx[1:] - fidx[:-1] <= 1
    files = run.files
    found = Findings()

    def add(kind, severity, k, detail):
        f = files[int(fidx[k])]
        found.add(RECORDS, kind, severity, f.path, int(pos[k]) - f.start, int(pos[k]), detail)

    for k in np.flatnonzero((index[1:] != index[:-1] + 1) & near).tolist():
        cause = run.damage.cause(int(pos[k]), int(pos[k + 1]))
        add(
            "dledger-entry-index",
            "warning" if cause else "error",
            k + 1,
            f"DLedger entry index {int(index[k + 1])} follows {int(index[k])}: indexes go up by one"
            + (f"; a direct consequence of {cause}" if cause else ""),
        )
    for k in np.flatnonzero((term[1:] < term[:-1]) & near).tolist():
        add(
            "dledger-entry-term",
            "error",
            k + 1,
            f"DLedger entry {int(index[k + 1])} has term {int(term[k + 1])} after term {int(term[k])}: terms never "
            f"go down",
        )
    return found


def _index_files(run: Context, iq: MappedFileQueue) -> Findings:
    size = iq.file_size
    problems = [("stray-file", p, "not a 20-digit offset name in the DLedger index") for p in iq.strays]
    problems += [
        (
            "file-gap",
            b.path,
            f"DLedger index files {a.name} then {b.name}: MmapFileList.checkSelf fails and DLedger does not start",
        )
        for a, b in zip(iq.files, iq.files[1:])
        if b.start != a.start + size
    ]
    problems += [
        ("file-size", f.path, f"DLedger index file is {f.length} bytes, not {size}: MmapFileList.load refuses it")
        for f in iq.files
        if f.length != size
    ]
    found = Findings()
    for kind, path, detail in problems:
        found.add(FILES, kind, "error", path, None, None, detail)
    return found


class _IndexUnits:
    """Every entry's unit at index * 32 equal to it (reported at the unit, about the entry's offset), and, for
    the whole log, no unit written past the last entry. The units are views on the index files' maps."""

    def __init__(self, run: Context, iq: MappedFileQueue):
        self.run, self.iq = run, iq
        self.per_file = iq.file_size // S.DLEDGER_INDEX_UNIT_SIZE
        unit_size = S.DLEDGER_INDEX_UNIT_SIZE
        self.units = {
            f.start // unit_size: D.index_units(f.buf, min(f.length, iq.file_size) // unit_size) for f in iq.files
        }

    def add(self, found: Findings, idx: int, offset: int, detail: str):
        unit_at = idx * S.DLEDGER_INDEX_UNIT_SIZE
        f = self.iq.find(unit_at) if idx >= 0 else None
        path = f.path if f is not None else self.run.store.dledger.index_dir
        found.add(
            RECORDS, "dledger-index-unit", "error", path, unit_at - f.start if f is not None else None, offset, detail
        )

    def check(self, pos, cols) -> Findings:
        """The units of entries at `pos` (columns `cols`), compared a unit file at a time."""
        index = cols["index"]
        first = index - index % self.per_file
        out = Findings()
        found = np.zeros(len(index), bool)
        differs = np.zeros(len(index), bool)
        want = {"magic": cols["magic"], "pos": pos, "size": cols["size"], "index": index, "term": cols["term"]}
        for start in np.unique(first[index >= 0]).tolist():
            arr = self.units.get(start)
            if arr is None:
                continue
            mine = np.flatnonzero((first == start) & (index - start < len(arr)) & (index >= 0))
            if not len(mine):
                continue
            got = arr[index[mine] - start]
            found[mine] = True
            differs[mine] = np.any([got[n].astype(np.int64) != want[n][mine] for n in D.INDEX_FIELDS], axis=0)
        for k in np.flatnonzero(~found | differs).tolist():
            idx = int(index[k])
            if not found[k]:
                self.add(
                    out,
                    idx,
                    int(pos[k]),
                    f"DLedger entry {idx} has no index unit (no index file holds byte "
                    f"{idx * S.DLEDGER_INDEX_UNIT_SIZE})",
                )
                continue
            unit = self.units[int(first[k])][idx - int(first[k])]
            diff = ", ".join(
                f"{n} {int(unit[n])} (entry: {int(want[n][k])})"
                for n in D.INDEX_FIELDS
                if int(unit[n]) != int(want[n][k])
            )
            self.add(out, idx, int(pos[k]), f"the index unit of DLedger entry {idx} disagrees with the entry: {diff}")
        return out

    def extra(self, last: int) -> Findings:
        """Units written past the last entry's (`last`: its index, -1 when none)."""
        found = Findings()
        for start, arr in sorted(self.units.items()):
            written = np.flatnonzero(arr["magic"] != 0) + start
            extra = written[written > last]
            if len(extra):
                f = self.iq.find(start * S.DLEDGER_INDEX_UNIT_SIZE)
                at = int(extra[0]) * S.DLEDGER_INDEX_UNIT_SIZE
                found.add(
                    FILES,
                    "dledger-index-extra",
                    "warning",
                    f.path,
                    at - f.start,
                    None,
                    f"{len(extra)} index unit(s) from entry {int(extra[0])} on have no entry DLedger's walk of the data "
                    f"reaches (the last is {last}); DLedger's recovery truncates them",
                )
        return found


def _checkpoint(run: Context, state, last: int | None) -> Findings:
    """dledger-{id}/checkpoint: endIndex and committedIndex against the entries (`last`: the last entry's
    index, None when there is none)."""
    path = run.store.dledger.checkpoint_path
    found = Findings()
    if state is None:
        if last is not None:
            found.add(
                CHECKPOINT,
                "dledger-checkpoint",
                "warning",
                path,
                None,
                None,
                "no DLedger checkpoint: at start "
                "no entry counts as committed until the group commits again, and the broker serves none before",
            )
        return found
    last = -1 if last is None else last
    end, committed = D.state_long(state, "endIndex"), D.state_long(state, "committedIndex")
    if D.state_unreadable(state, "committedIndex"):
        what = (
            f"committedIndex {state['committedIndex']!r} is no number to Long.valueOf: DLedger's recovery throws on "
            "it and the broker's load fails"
        )
        found.add(CHECKPOINT, "dledger-checkpoint", "error", path, None, None, what)
    elif committed is None:
        found.add(CHECKPOINT, "dledger-checkpoint", "warning", path, None, None, "no readable committedIndex")
    elif committed > last:
        found.add(
            CHECKPOINT,
            "dledger-checkpoint",
            "error",
            path,
            None,
            None,
            f"committedIndex {committed} is past the last entry {last}: entries the group committed are gone "
            f"from this replica (DLedger caps it at {last})",
        )
    elif committed < last:
        found.add(
            CHECKPOINT,
            "dledger-checkpoint",
            "info",
            path,
            None,
            None,
            f"committedIndex {committed} < last entry {last}: the broker's reput dispatches entries only up to "
            f"{committed} until the group commits the rest, while the consumequeue units already written for later "
            "entries are served (a new leader may truncate those entries)",
        )
    if end is not None and end != last:
        found.add(
            CHECKPOINT,
            "dledger-checkpoint",
            "warning" if end > last else "info",
            path,
            None,
            None,
            f"endIndex {end} but the last entry is {last}",
        )
    return found


def recovery_notes(run: Context, lost: int, r: D.Recovery, damage: list[Finding]) -> Findings:
    """What DLedgerMmapFileStore.recover will do at the next start, on the commitlog findings it concerns
    (`damage`, their details noted here; `lost`: the records from its cut on), and its own notes."""
    files = run.files
    found = Findings()
    begin = files[r.start_file].start if files else 0
    if r.stop is not None:
        note = (
            f"DLedger's recovery at start walks the entries from {files[r.start_file].name} and stops at the entry "
            f"at {r.cut} ({r.stop.detail}): it truncates the log there, dropping the {lost} record(s) "
            f"from there on"
        )
        at_cut = [
            f
            for f in damage
            if f.commitLogOffset is not None and r.cut <= f.commitLogOffset < r.cut + S.DLEDGER_BODY_OFFSET + 1
        ]
        if at_cut:
            min(at_cut, key=lambda f: f.commitLogOffset).detail += f"; {note}"
        else:
            found.add(CHECKPOINT, "dledger-recovery", "info", files[r.start_file].path, None, r.cut, note)
        for f in damage:
            if f.commitLogOffset is not None and f.commitLogOffset > r.cut + S.DLEDGER_BODY_OFFSET and f not in at_cut:
                f.detail += f"; DLedger's recovery cuts it off with everything after {r.cut}"
    for f in damage:
        if f.commitLogOffset is not None and f.commitLogOffset < begin:
            f.detail += f"; DLedger's recovery starts at {files[r.start_file].name} and does not re-check this entry"
    if r.index_rewritten_from is not None:
        found.add(
            CHECKPOINT,
            "dledger-recovery",
            "info",
            run.store.dledger.index_dir,
            None,
            None,
            f"DLedger's recovery finds the index unit of entry {r.index_rewritten_from} not equal to its entry "
            f"({r.index_mismatch}) and rewrites the index from the data from there on",
        )
    if r.exits:
        found.add(
            CHECKPOINT,
            "dledger-recovery",
            "error",
            files[-1].path,
            None,
            r.cut,
            f"DLedger's recovery would stop at {r.cut}, more than a file before the last data file: it refuses "
            f'to truncate that much and exits ("processOffset is too small"); the broker does not start',
        )
    return found
