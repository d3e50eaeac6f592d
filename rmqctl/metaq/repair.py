"""`metaq repair`: the broker's last-segment recovery as an explicit, reviewable step.

At load, MessageStore.loadSegments reopens the last segment of each partition in mutable mode, and
FileMessageSet.recover walks it with validateMessage from position 0 and truncates the file at the first
record that fails (fewer than 20 header bytes, header + msgLen past the end, msgLen < 0, checksum mismatch):
`channel.truncate(validUpTo)`. Nothing else changes; earlier segments are never checked. This does exactly
that cut, per partition, with the staging + intent + atomic swap of `rmqctl.txn` (the old file is kept in
`{partition}/.rmqctl/.rmqctl-backup-<time>/` unless `keep_backup` is off). A partition the broker refuses to
load (names, contiguity) is not touched: that needs a decision, not a recovery.
"""

from __future__ import annotations

import dataclasses

from ..errors import StoreError
from ..txn import Transaction
from .lock import partition_lock
from .store import MetaqStore, Partition, SegmentScan


@dataclasses.dataclass
class RepairRow:
    topic: str
    partition: int
    segment: str | None
    action: str  # truncate | none | not-cut | refused
    sizeBefore: int | None
    sizeAfter: int | None
    droppedBytes: int
    detail: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class RepairResult:
    rows: list[RepairRow]
    backups: list[str]

    @property
    def refused(self) -> bool:
        return any(r.action == "refused" for r in self.rows)


def _plan(store: MetaqStore, part: Partition) -> list[RepairRow]:
    refuse = [o.detail for o in part.oddities if o.kind == "bad-segment-name"]
    refuse += [f"{store.relative(b.path)} starts at {b.start}, not at {a.end}" for a, b in part.contiguity()]
    if refuse:
        return [
            RepairRow(
                part.topic,
                part.partition,
                None,
                "refused",
                None,
                None,
                0,
                "the broker does not load this partition (" + "; ".join(refuse) + "): not a recovery case",
            )
        ]
    rows = []
    for i, seg in enumerate(part.segments):
        scan = SegmentScan(seg.read(), seg.size).run()
        rel = store.relative(seg.path)
        if i < len(part.segments) - 1:
            if scan.stop is not None:
                rows.append(
                    RepairRow(
                        part.topic,
                        part.partition,
                        rel,
                        "not-cut",
                        seg.size,
                        seg.size,
                        0,
                        f"{scan.stop.problem} at offset {seg.start + scan.stop.position}: the broker "
                        "never recovers a segment before the last, so it is kept as the broker keeps it",
                    )
                )
            continue
        if scan.stop is None:
            rows.append(
                RepairRow(
                    part.topic,
                    part.partition,
                    rel,
                    "none",
                    seg.size,
                    seg.size,
                    0,
                    f"the last segment is valid to its end ({scan.count} records)",
                )
            )
        else:
            rows.append(
                RepairRow(
                    part.topic,
                    part.partition,
                    rel,
                    "truncate",
                    seg.size,
                    scan.valid_up_to,
                    seg.size - scan.valid_up_to,
                    f"{scan.stop.problem} at offset {seg.start + scan.stop.position}: {scan.stop.detail}; "
                    f"recovery keeps {scan.count} records",
                )
            )
    return rows


def _stage_truncated(txn: Transaction, seg, size: int):
    staged = txn.area(seg.path.parent) / seg.path.name
    with open(seg.path, "rb") as src, open(staged, "wb") as dst:
        left = size
        while left:
            chunk = src.read(min(left, 1 << 20))
            if not chunk:
                raise StoreError("the segment shrank while being repaired", seg.path)
            dst.write(chunk)
            left -= len(chunk)
    check = SegmentScan(staged.read_bytes(), size).run()
    if check.stop is not None or check.valid_up_to != size:
        raise StoreError("the staged segment does not read back as valid records; nothing changed", staged)
    txn.replace(seg.path, staged)


def repair(
    store: MetaqStore,
    topic: str | None = None,
    partition: int | None = None,
    dry_run: bool = False,
    keep_backup: bool = True,
) -> RepairResult:
    rows, backups = [], []
    for part in store.select(topic, partition):
        if dry_run:
            rows += _plan(store, part)
            continue
        with partition_lock(part.path) as own:
            part = MetaqStore(store.root, store.config).partition(part.topic, part.partition)  # as of the lock
            plan = _plan(store, part)
            rows += plan
            cuts = [r for r in plan if r.action == "truncate"]
            if not cuts:
                continue
            with Transaction(own, "repair", "metaq repair", keep_backup, base=part.path) as txn:
                seg = part.segments[-1]
                _stage_truncated(txn, seg, cuts[0].sizeAfter)
                done = txn.commit()
            if done.get("backup"):
                backups.append(done["backup"])
    return RepairResult(rows, backups)
