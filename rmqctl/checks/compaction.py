"""verify's check of compaction topics' files (rmqctl.compaction): both folders of a queue, files of the mapped
length and with numbers for names, log and CQ files paired by name (the broker deletes a log file past the CQ's
last record and fails its load on any other unpaired file), every log record where its PHYSICALOFFSET says, of its
queue and with the body its BODYCRC was computed over (nothing in the broker checks that on this log: it serves
what is there), every CQ unit the one CompactionAppendMessageCallback writes for the record it names (batchSize 1,
the record's queue offset, size, store time and tagsCode), the position checkpoint readable. One log file's
records are held at a time: a CQ file's units name records of the log file of its name."""

from __future__ import annotations

from ..compaction import CompactionQueue, compaction_queues, cq_units, end_unit, position_checkpoint, unloadable_dirs
from ..dispatch import tags_code
from ..findings import CONSUMEQUEUE, Findings
from ..javacompat import crc31
from ..store import Store, offset_of_name


def check_compaction(store: Store) -> Findings:
    """The compaction topics' findings."""
    found = Findings()
    for path in unloadable_dirs(store):
        what = "a queue directory whose name Integer.parseInt refuses: CompactionStore.load throws, the broker's load fails"
        found.add(CONSUMEQUEUE, "stray-file", "error", path, None, None, what)
    for q in compaction_queues(store):
        loads = _check_files(found, q, store.live is not None)
        if not (q.log_dir.is_dir() and q.cq.directory.is_dir()):
            continue  # the broker never loads the queue: its files' units and records are never read
        logs, cqs = q.unmatched_files()
        # a queue the broker drops, or a log file it deletes or fails on, says more than its unindexed records
        end = q.log_end_at_load() if loads else -2
        for f in q.log.files:  # a CQ file's units name records of the log file of its name: one file at a time
            records = _check_log(found, q, f, store)
            named = _check_units(found, q, f.name, records)
            if end != -2 and f.name not in logs:
                _check_unindexed(found, q, f, {at: r for at, r in records.items() if at not in named}, end)
        for name in cqs:
            _check_units(found, q, name, {})
    _, problem = position_checkpoint(store)
    if problem is not None:
        found.add(
            CONSUMEQUEUE,
            "compaction-checkpoint",
            "warning",
            store.root / "compaction" / "position-checkpoint",
            None,
            None,
            f"compaction position checkpoint: {problem}",
        )
    return found


# a running broker rolls a new log file before its CQ file and leaves NAME.delete files while it swaps in a
# compaction: on its store such a finding may be work in flight
IN_FLIGHT = " (the broker is running: this may be a file it is writing)"


def _check_files(found: Findings, q: CompactionQueue, live: bool) -> bool:
    """A missing log or CQ folder (the broker skips the queue), the file a folder's load stops at (the queue
    dropped, or the store not started) and log / CQ files without their pair; whether the queue loads."""
    for folder, files, what in ((q.log_dir, q.cq.files.files, "log"), (q.cq.directory, q.log.files, "CQ")):
        if not folder.is_dir():
            if files:
                found.add(
                    CONSUMEQUEUE,
                    "compaction-folder-missing",
                    "error",
                    folder,
                    None,
                    None,
                    f"{q.topic}/{q.queue_id}: no compaction {what} folder: the broker's load skips this queue and "
                    "never serves it",
                )
            return False
    failure = q.load_failure()
    if failure is not None:
        in_flight = live and failure.culprit.name.endswith(".delete")
        fate = (
            "the store does not start"
            if failure.store_fails
            else "the broker's load drops this queue and serves none of it"
        )
        found.add(
            CONSUMEQUEUE,
            "compaction-file-name" if failure.store_fails else "compaction-file-size",
            "warning" if in_flight else "error",
            failure.culprit,
            None,
            None,
            f"{q.topic}/{q.queue_id}: {failure.why}: {fate}" + (IN_FLIGHT if in_flight else ""),
        )
        return False
    _check_pairs(found, q, live)
    return True


def _check_pairs(found: Findings, q: CompactionQueue, live: bool) -> None:
    """Log and CQ files without their pair: TopicPartitionLog.recover deletes a log file past the CQ's last
    record (an error only when it held a record: a roll that crashed before its CQ file leaves an empty one), and
    sanityCheck fails the load on any other."""
    logs, cqs = q.unmatched_files()
    end = q.log_end_at_load() if logs else -1
    newest = {fs[-1].name for fs in (q.log.files, q.cq.files.files) if fs}
    for name in logs + cqs:
        is_log = name in logs
        if is_log and end > 0 and offset_of_name(name) > end:
            if not q.holds_record(next(f for f in q.log.files if f.name == name)):
                continue
            fate = (
                f"the broker's load deletes it with its records (the log is cut at {end}, the end of the CQ's last "
                "record)"
            )
        else:
            fate = "the broker's load fails on this queue and the store does not start"
        in_flight = live and name in newest
        found.add(
            CONSUMEQUEUE,
            "compaction-file-mismatch",
            "warning" if in_flight else "error",
            (q.log_dir if is_log else q.cq.directory) / name,
            None,
            None,
            f"{q.topic}/{q.queue_id}: {'log' if is_log else 'CQ'} file {name} has no "
            f"{'CQ' if is_log else 'log'} file of that name: {fate}" + (IN_FLIGHT if in_flight else ""),
        )


def _log_record_error(found: Findings, q: CompactionQueue, r, kind: str, what: str) -> None:
    """A record of the queue's compaction log that is not what the log must hold, reported at the record."""
    found.add(
        CONSUMEQUEUE,
        kind,
        "error",
        r.file.path,
        r.position,
        r.file.start + r.position,
        f"{q.topic}/{q.queue_id} compaction log: {what}",
    )


def _check_log(found: Findings, q: CompactionQueue, f, store: Store) -> dict[int, dict]:
    """What a CQ unit must hold for each record of one log file, by its position; the records out of place or
    of another queue and bytes that are not a record go to `found`."""
    records = {}
    for r in q.file_records(f):
        at = r.file.start + r.position
        if r.message is None:
            if r.end not in ("blank", "zeros"):
                _log_record_error(found, q, r, "compaction-record", r.end)
            continue
        m = r.message
        if m.physicalOffset != at:
            what = f"PHYSICALOFFSET {m.physicalOffset}, but the record is at {at}"
            _log_record_error(found, q, r, "compaction-physical-offset", what)
        if (m.topic, m.queueId) != (q.topic, q.queue_id):
            _log_record_error(found, q, r, "compaction-record", f"a record of {m.topic}/{m.queueId}")
        if not m.body_crc_ok():
            what = (
                f"body CRC {m.bodyCRC} stored, {crc31(m.body)} computed over the {m.bodyLength}-byte body: the body "
                "changed after it was written; the broker serves it as it is"
            )
            _log_record_error(found, q, r, "compaction-body-crc", what)
        records[at] = {
            "size": m.storeSize,
            "tagsCode": tags_code(m, store.config),
            "storeTime": m.storeTimestamp,
            "msgBaseOffset": m.queueOffset,
            "batchSize": 1,
        }
    return records


def _check_unindexed(found: Findings, q: CompactionQueue, f, records: dict, end: int) -> None:
    """Records of a log file no CQ unit names: getMessage reads only through units, and TopicPartitionLog.recover
    cuts the log at `end` (log_end_at_load), so one at or past it is overwritten by the next append."""
    for at, want in sorted(records.items()):
        if end >= 0 and at >= end:
            fate = f"the broker's load cuts the log at {end}, the end of the CQ's last record, and loses it"
        else:
            fate = "the broker never serves it"
        found.add(
            CONSUMEQUEUE,
            "compaction-record-unindexed",
            "error",
            f.path,
            at - f.start,
            at,
            f"{q.topic}/{q.queue_id} compaction log: no CQ unit names the record at {at} (queue offset "
            f"{want['msgBaseOffset']}): {fate}",
        )


def _check_units(found: Findings, q: CompactionQueue, name: str, records: dict) -> set[int]:
    """Each unit of the CQ file `name` against the record it names; returns the log offsets named."""
    named = set()
    for f, pos, u in cq_units(q, name):
        if end_unit(u):
            continue
        off = u["commitLogOffset"]
        named.add(off)
        want = records.get(off)
        if want is None:
            found.add(
                CONSUMEQUEUE,
                "compaction-cq-bad-target",
                "error",
                f.path,
                pos,
                off,
                f"{q.topic}/{q.queue_id} compaction CQ unit at queue offset {u['msgBaseOffset']}: no record of "
                f"compaction log file {name} starts at {off}",
            )
            continue
        wrong = [f"{k} {u[k]}, the record's {v}" for k, v in want.items() if u[k] != v]
        if wrong:
            found.add(
                CONSUMEQUEUE,
                "compaction-cq-mismatch",
                "error",
                f.path,
                pos,
                off,
                f"{q.topic}/{q.queue_id} compaction CQ unit at {off}: " + "; ".join(wrong),
            )
    return named
