"""`metaq clean`: the broker's deletePolicy, decided as MessageStore.runDeletePolicy decides it.

When the DeleteJob fires (the Quartz cron `deleteWhen`, per topic), runDeletePolicy takes one `start` time
and visits every segment of the partition: each one that is immutable (every segment but the last, which the
loader reopens mutable) and for which `canDelete(file, start)` holds (`start - file.lastModified() >
maxReservedTime`) goes through `process(file)`:

* `delete,<age>` (DiscardDeletePolicy): the file is deleted;
* `archive,<age>` (ArchiveDeletePolicy): renamed to `<name>.arc`;
* `archive,<age>,true`: zipped to `<name>.zip` (one entry named like the file), then deleted.

It does not stop at the first segment kept: a segment with an older mtime after a newer one is removed
alone, and the hole it leaves makes validateSegments refuse the partition at the broker's next start (the
plan says so). A plan by default; `apply` acts with the staging + intent machinery of `rmqctl.txn`, one
transaction per partition, under `partition_lock`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import shutil
import zipfile

from ..errors import UsageError
from ..txn import Transaction
from .config import DeletePolicy, parse_delete_policy
from .cron import next_fire
from .lock import partition_lock
from .store import MetaqStore, Partition, Segment


@dataclasses.dataclass
class CleanRow:
    topic: str
    partition: int
    segment: str
    startOffset: int
    size: int
    mtime: str
    ageHours: float
    policy: str
    action: str  # keep | delete | archive | zip
    reason: str
    evaluatedAt: str  # the `now` the policy was applied at (the delete job's start)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _mtime_ms(seg: Segment) -> int:
    """File.lastModified(): milliseconds."""
    return os.stat(seg.path).st_mtime_ns // 1_000_000


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="seconds")


def evaluation_time(store: MetaqStore, topic: str, now_ms: int, at_next_run: bool) -> int:
    """`now`, or the next time the topic's deleteWhen fires after it (local time, as the broker's scheduler)."""
    if not at_next_run:
        return now_ms
    when = store.config.topic(topic).deleteWhen
    fire = next_fire(when, dt.datetime.fromtimestamp(now_ms / 1000))
    if fire is None:
        raise UsageError(
            f"deleteWhen {when!r} of topic {topic}: its next run is not evaluated here (L, W or #); give --at TIME"
        )
    return int(fire.timestamp() * 1000)


def plan_partition(store: MetaqStore, part: Partition, now_ms: int, policy: DeletePolicy) -> list[CleanRow]:
    rows = []
    for i, seg in enumerate(part.segments):
        mtime = _mtime_ms(seg)
        age_h = (now_ms - mtime) / 3_600_000
        last = i == len(part.segments) - 1
        if last:
            action, reason = "keep", "the last segment is the mutable one: never deleted"
        elif policy.can_delete(mtime, now_ms):
            action, reason = policy.action, f"older than {policy.max_reserved_ms / 3_600_000:g} h"
        else:
            action, reason = "keep", f"not older than {policy.max_reserved_ms / 3_600_000:g} h"
        rows.append(
            CleanRow(
                part.topic,
                part.partition,
                store.relative(seg.path),
                seg.start,
                seg.size,
                _iso(mtime),
                round(age_h, 3),
                policy.text,
                action,
                reason,
                _iso(now_ms),
            )
        )
    kept_before = False
    for r in rows:
        if r.action == "keep":
            kept_before = True
        elif kept_before:
            r.reason += (
                "; an older segment before it is kept, so this leaves a hole: at its next start the broker "
                "refuses to load the partition (validateSegments)"
            )
    return rows


def _partition_plan(store: MetaqStore, part: Partition, now_ms: int, policy_text: str | None, at_next_run: bool):
    """What the delete job would do to one partition at `now_ms` (or, with `at_next_run`, when its topic's
    deleteWhen next fires after it), by `policy_text` or else the topic's own deletePolicy."""
    policy = parse_delete_policy(policy_text) if policy_text else store.config.delete_policy(part.topic)
    return plan_partition(store, part, evaluation_time(store, part.topic, now_ms, at_next_run), policy)


def _stage(txn: Transaction, seg: Segment, action: str):
    """The replacement file an archive leaves: `.arc` is the same inode (a hard link, no copy); `.zip` is the
    file as one deflated entry named like the segment (ZipOutputStream + ZipEntry(name))."""
    area = txn.area(seg.path.parent)
    if action == "archive":
        staged = area / (seg.path.name + ".arc")
        os.link(seg.path, staged)
    else:
        staged = area / (seg.path.name + ".zip")
        entry = zipfile.ZipInfo(seg.path.name, dt.datetime.now().timetuple()[:6])  # ZipEntry: the time of writing
        entry.compress_type = zipfile.ZIP_DEFLATED
        with (
            zipfile.ZipFile(staged, "w") as z,
            z.open(entry, "w", force_zip64=seg.size >= 1 << 31) as out,
            open(seg.path, "rb") as src,
        ):
            shutil.copyfileobj(src, out, 1 << 20)
    txn.replace(seg.path.parent / staged.name, staged)


def clean(
    store: MetaqStore,
    now_ms: int,
    topic: str | None = None,
    partition: int | None = None,
    policy_text: str | None = None,
    at_next_run: bool = False,
    act: bool = False,
) -> list[CleanRow]:
    """What the delete job would do at `now_ms` (or, with `at_next_run`, when each topic's deleteWhen next
    fires after it), changing nothing; with `act`, the plan is carried out partition by partition, each as one
    atomic change, and what was done is returned."""
    done = []
    for part in store.select(topic, partition):
        if not act:
            done += _partition_plan(store, part, now_ms, policy_text, at_next_run)
            continue
        with partition_lock(part.path) as own:
            part = MetaqStore(store.root, store.config).partition(part.topic, part.partition)  # as of the lock
            rows = _partition_plan(store, part, now_ms, policy_text, at_next_run)
            go = [(seg, r) for seg, r in zip(part.segments, rows) if r.action != "keep"]
            if go:
                with Transaction(own, "clean", "metaq clean", keep_backup=False, base=part.path) as txn:
                    for seg, r in go:
                        if r.action != "delete":
                            _stage(txn, seg, r.action)
                        txn.remove(seg.path)
                    txn.commit()
            done += rows
    return done
