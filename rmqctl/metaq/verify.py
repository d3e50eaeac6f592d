"""`metaq verify`: what the broker's load refuses (partition and segment names, contiguity), every record's
length and checksum, what its last-segment recovery will truncate, and the damage in earlier segments that
it never checks. Findings have the RocketMQ verify shape; `commitLogOffset` carries the MetaQ message offset
(the byte offset in the partition), `file` the segment relative to the data path."""

from __future__ import annotations

import time

from .. import schema_metaq as M
from ..txn import pending
from ..checks.verify import Finding, VerifyResult
from .lock import segment_holders
from .store import RMQCTL_DIR, DecodeError, MetaqStore, Partition, check_record, decode_data, is_zero_header

ODDITY_SEVERITY = {"bad-partition-dir": "error", "bad-segment-name": "error", "segment-name": "warning"}


class _Findings(list):
    def __init__(self, limit: int | None):
        super().__init__()
        self.limit = limit
        self.truncated = False

    def add(self, *args):
        if self.limit is not None and len(self) >= self.limit:
            self.truncated = True
            return
        self.append(Finding(*args))


def _check_partition(store: MetaqStore, part: Partition, out: _Findings, stats: dict):
    _partition_findings(store, part, out)
    for i, seg in enumerate(part.segments):
        _check_segment(store, seg, i == len(part.segments) - 1, out, stats)


def _partition_findings(store: MetaqStore, part: Partition, out: _Findings):
    """What is wrong with a partition as a whole: its oddities, an interrupted rmqctl run, no segment, gaps
    and overlaps between segments."""
    for o in part.oddities:
        out.add(o.kind, ODDITY_SEVERITY[o.kind], store.relative(o.path), None, None, o.detail)
    state = pending(part.path / RMQCTL_DIR) if (part.path / RMQCTL_DIR).is_dir() else None
    if state:
        out.add(
            "pending-intent",
            "warning",
            f"{part.name}/{RMQCTL_DIR}",
            None,
            None,
            f"an interrupted rmqctl run ({state['state']}): {state['action']}; do not start the broker before",
        )
    if not part.segments:
        out.add(
            "empty-partition",
            "info",
            part.name,
            None,
            None,
            "no segment files: the broker creates 00000000000000000000.meta when the partition is first used",
        )
    for a, b in part.contiguity():
        kind = "gap" if b.start > a.end else "overlap"
        out.add(
            kind,
            "error",
            store.relative(b.path),
            0,
            b.start,
            f"starts at {b.start} but {store.relative(a.path)} ends at {a.end} ({abs(b.start - a.end)} bytes "
            f"{'missing' if kind == 'gap' else 'claimed twice'}): validateSegments throws and the broker does "
            f"not load {part.name}",
        )


def _check_segment(store: MetaqStore, seg, last: bool, out: _Findings, stats: dict):
    """One segment walked with the broker's record check: records that do not decode, all-zero records, the first
    bad record (where the broker's recovery cuts) and those after it."""
    rel = store.relative(seg.path)
    buf = seg.read()
    pos, cut, zeros, intact_after, later = 0, None, [], 0, []
    while pos < seg.size:
        chk = check_record(buf, pos, seg.size)
        if chk.next is None:
            if cut is None:
                cut = chk
            else:
                later.append(chk)
            if chk.problem != "checksum-mismatch":
                break  # the length cannot be trusted: nothing further can be walked
            pos += M.HEADER_LEN + chk.header[0]  # only the data is bad: its length still leads to the next header
            continue
        if cut is not None:  # past the first bad record: only counted, the broker never gets here
            intact_after += 1
            pos = chk.next
            continue
        stats["records"] += 1
        msg_len, _, _, flag = chk.header
        if is_zero_header(chk.header):
            zeros.append(pos)
        try:
            decode_data(msg_len, flag, memoryview(buf)[pos + M.HEADER_LEN : chk.next])
        except DecodeError as e:
            out.add(
                "undecodable",
                "error",
                rel,
                pos,
                seg.start + pos,
                f"{e}; the checksum is right, so the broker serves it and every consumer fails on it",
            )
        pos = chk.next
    stats["bytes"] += seg.size
    if zeros:
        out.add(
            "zero-records",
            "warning",
            rel,
            zeros[0],
            seg.start + zeros[0],
            f"{len(zeros)} all-zero 20-byte record(s) from offset {seg.start + zeros[0]}: msgLen 0 and checksum "
            "0 pass the broker's check, so it keeps and serves them as empty messages with id 0 (a zero-filled "
            "tail reads this way)",
        )
    if cut is not None:
        _damage(out, seg, rel, cut, last, later=False, intact_after=intact_after)
    for chk in later:
        _damage(out, seg, rel, chk, last, later=True)


def _damage(out: _Findings, seg, rel: str, chk, last: bool, later: bool, intact_after: int = 0):
    offset = seg.start + chk.position
    if later:
        what = f"{chk.detail}; after the first bad record of this segment, " + (
            "which the broker's recovery cuts at, so the broker never reads it" if last else "so no reader gets here"
        )
    elif last:
        what = (
            f"{chk.detail}. The broker's recovery of the last segment stops here and truncates {rel} to "
            f"{chk.position} bytes, dropping {seg.size - chk.position} bytes"
        )
        what += f", {intact_after} intact record(s) after it among them" if intact_after else ""
        what += " (rmqctl metaq repair does the same cut now)"
    else:
        what = (
            f"{chk.detail}. The broker recovers only the last segment, so it loads this one as is and serves "
            f"it: consumers reading offset {offset} fail on it (decodeMessage checks the checksum) and cannot get "
            f"past it; {seg.size - chk.position} bytes to the end of the segment are unreachable"
        )
    out.add(chk.problem, "error", rel, chk.position, offset, what)


def verify(
    store: MetaqStore, topic: str | None = None, partition: int | None = None, max_findings: int | None = None
) -> VerifyResult:
    t0 = time.monotonic()
    out = _Findings(max_findings)
    stats = {"partitions": 0, "records": 0, "bytes": 0}
    parts = store.select(topic, partition)
    for o in store.oddities:
        out.add(o.kind, ODDITY_SEVERITY[o.kind], store.relative(o.path), None, None, o.detail)
    if not parts:
        out.add(
            "no-partitions",
            "warning",
            None,
            None,
            None,
            "no {topic}-{partition} directories"
            + (" match the selection" if topic or partition is not None else "")
            + ": an empty data path, or not a MetaQ data path (a RocketMQ store root holds commitlog/)",
        )
    holder = None
    for part in parts:
        stats["partitions"] += 1
        _check_partition(store, part, out, stats)
        holders = segment_holders(part.path)
        holder = holder or next(iter(holders), None)
    stats["seconds"] = time.monotonic() - t0
    return VerifyResult(list(out), out.truncated, stats, holder)
