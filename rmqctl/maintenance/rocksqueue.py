"""Writing the RocksDB consume queue: rebuilt from the commitlog (storeType=defaultRocksDB), staged in the
store's staging area as a new database made with the broker's column families and options, checked with verify
on the store as the swap leaves it, then swapped in whole (consumequeue/ is the database) with the intent file
and the backup every rmqctl writer uses: a kill leaves the old database or the new one.

The units come from the same dispatch as the file-queue rebuild (file queues built in staging first, so
queue offsets, LMQ queues and tagsCodes follow one set of rules), then each unit gets the store time of its
record (store.store_times) and its key; each queue's min and max and the dispatch checkpoint go to the
`offset` column family as RocksDBConsumeQueueOffsetTable writes them.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from pathlib import Path

import numpy as np

from .. import rocksdbcq as R
from ..budget import DEFAULT_MEMORY
from ..errors import StoreError, UsageError
from ..rocksdb import NewDB, ReadOnlyDB
from ..rules import cq_unit_valid, pre_blank, record_expired
from ..store import ConsumeQueue, Store, store_times
from ..parts import FILE_STORE, ROCKSDB_STORE
from .rebuild import (
    QueueDiff,
    RebuildResult,
    _build_area,
    _check_staged,
    dispatch_records,
    rebuild_consumequeue,
    refuse_dropping_lmq_queues,
)
from .staging import writing
from .writers import ConsumeQueueWriter

ROCKS_QUEUE_KINDS = frozenset({"consumequeue"})  # the part this writer writes when it is a RocksDB queue


def write_rocks_queue(
    store: Store, queues: list[ConsumeQueue], directory: Path, checkpoint: int, kept: list | None = None
) -> dict:
    """A new RocksDB consume queue in `directory` holding every entry of the file `queues` (pre-blank and
    invalid units are not entries), with the dispatch checkpoint, and the offset entries of the `kept` queues of
    the live RocksDB queue (RocksQueues: _left_dead); returns {(topic, queueId): units}.

    Units whose record lies below the commitlog's min offset (the broker's cleanup deleted it; the file queue
    keeps them until its whole file goes) are dead: the broker serves none of them and its compaction filter
    drops them from the RocksDB queue, and their store time is gone. They are not written; the queue's max
    entry still names its last unit (so queue offsets go on where they were), and its min entry is the first
    live unit, or, when none is left, (commitlog min, max + 1) as correctMinCqOffset writes it."""
    db = NewDB(
        directory,
        R.family_options(
            store.config.rocksdbCompressionType, store.config.bottomMostCompressionTypeForConsumeQueueStore
        ),
    )
    written = {}
    end, min_phy = checkpoint, store.commitlog.min_offset
    try:
        for cq in queues:
            first = last = None
            count = 0
            for qoffs, units in _entries(cq):
                last = (int(units["commitLogOffset"][-1]), int(qoffs[-1]))
                live = ~record_expired(units["commitLogOffset"].astype(np.int64), min_phy)
                qoffs, units = qoffs[live], units[live]
                if not len(qoffs):
                    continue
                values = np.zeros(len(units), R.UNIT_VALUE)
                for name in ("commitLogOffset", "size", "tagsCode"):
                    values[name] = units[name]
                values["storeTimestamp"] = store_times(store.commitlog, units["commitLogOffset"], units["size"], end)
                if (values["storeTimestamp"] < 0).any():
                    bad = int(qoffs[np.argmax(values["storeTimestamp"] < 0)])
                    raise StoreError(
                        f"{cq.topic}/{cq.queue_id} unit {bad} points outside the commitlog: its store "
                        "time cannot be read (run `rmqctl verify`, then rebuild the queue)",
                        cq.directory,
                    )
                _put_units(db, cq.topic, cq.queue_id, qoffs, values)
                first = first or (int(units["commitLogOffset"][0]), int(qoffs[0]))
                count += len(qoffs)
            if last is not None:
                first = first or (min_phy, last[1] + 1)
                db.put(
                    R.OFFSET_CF,
                    [
                        (R.offset_key(cq.topic, R.MIN, cq.queue_id), R.OFFSET_VALUE.pack(*first)),
                        (R.offset_key(cq.topic, R.MAX, cq.queue_id), R.OFFSET_VALUE.pack(*last)),
                    ],
                )
                written[(cq.topic, cq.queue_id)] = count
        for q in kept or ():
            written[(q.topic, q.queue_id)] = _copy_queue(q, db)
        db.put(R.OFFSET_CF, [(R.offset_key(R.CHECKPOINT_TOPIC, R.MAX, 0), R.INT64.pack(checkpoint))])
    finally:
        db.finish()
    return written


def _put_units(db: NewDB, topic: str, queue_id: int, qoffs: np.ndarray, values: np.ndarray):
    """The units (R.UNIT_VALUE) at queue offsets `qoffs` of one queue, into the unit column family."""
    prefix = R.queue_prefix(topic, queue_id)
    keys, raw, size = qoffs.astype(">i8").tobytes(), values.tobytes(), R.UNIT_VALUE_SIZE
    db.put(R.UNIT_CF, ((prefix + keys[i * 8 : i * 8 + 8], raw[i * size : (i + 1) * size]) for i in range(len(qoffs))))


def _left_dead(store: Store, fed: set, warnings: list) -> list:
    """The live RocksDB queue's queues no record feeds (`fed`: those that are) whose max entry lies below the
    commitlog: the broker's cleanup left them so (their max for good, where producers go on and inside which
    consumers' committed offsets stay). A rebuild from the commitlog alone would lose them and their offsets
    would restart at 0. When the live queue cannot be read, `warnings` says that this may happen."""
    min_phy = store.commitlog.min_offset
    try:
        queues = store.rocks_queues.queues()
    except StoreError as e:
        warnings.append(
            f"the live RocksDB consume queue cannot be read ({e}): a queue the cleanup left without a record "
            "(its max offset in the old database alone) cannot be kept, and restarts at queue offset 0"
        )
        return []
    return [
        q
        for q in queues
        if (q.topic, q.queue_id) not in fed and q.max_entry is not None and record_expired(q.max_entry[0], min_phy)
    ]


def _copy_queue(q, db: NewDB) -> int:
    """A dead queue's offset entries into `db`, not its units: the broker serves none of them, its compaction
    filter drops them, and a unit damaged there cannot stop the rebuild. Returns 0 (units written)."""
    entries = [(R.MAX, q.max_entry)] + ([(R.MIN, q.min_entry)] if q.min_entry is not None else [])
    db.put(R.OFFSET_CF, [(R.offset_key(q.topic, kind, q.queue_id), R.OFFSET_VALUE.pack(*e)) for kind, e in entries])
    return 0


def _entries(cq: ConsumeQueue):
    """(queue offsets, units) of a file queue's entries, a file at a time."""
    for first, f, written, arr in cq.units():
        units = arr[:written]
        off, size = units["commitLogOffset"].astype(np.int64), units["size"].astype(np.int64)
        keep = cq_unit_valid(off, size) & ~pre_blank(off, size, units["tagsCode"])
        if keep.any():
            yield (first + np.flatnonzero(keep)).astype(np.int64), units[keep]
        f.release()
        if written < len(arr):
            return


def rebuild_queues(store: Store, topic: str | None = None, queue_id: int | None = None, **options) -> RebuildResult:
    """`rebuild consumequeue` for the queues the broker reads: a RocksDB queue whole, file queues (or some)."""
    if store.parts.queue_store != ROCKSDB_STORE:
        return rebuild_consumequeue(store, topic, queue_id, **options)
    if topic is not None or queue_id is not None:
        store.parts.refuse_partial_rocks_queue("rebuild consumequeue")
    return rebuild_rocks_queue(store, **options)


def rebuild_rocks_queue(
    store: Store, dry_run: bool = False, keep_backup: bool = True, progress=None, memory: int = DEFAULT_MEMORY
) -> RebuildResult:
    """Rebuild the whole RocksDB consume queue from the commitlog and swap it in."""
    refuse_dropping_lmq_queues(store)
    t0 = time.monotonic()
    with (
        writing(store, dry_run, "rebuild consumequeue", understood=ROCKS_QUEUE_KINDS) as (interrupted, store),
        _build_area(store, dry_run, "consumequeue", keep_backup) as txn,
    ):
        root = txn.area(store.consumequeue_dir)  # on its filesystem, which a top-level link may make another
        build = dispatch_records(
            store, root / "files", build_cq=True, build_index=False, progress=progress, memory=memory
        )
        files = root / "files" / "consumequeue"
        size = store.consumequeue_file_size
        queues = [ConsumeQueue(t, q, files / t / str(q), size) for t, q in sorted(build.queued)]
        staged = root / "consumequeue"
        kept = _left_dead(store, set(build.queued), build.warnings)
        written = write_rocks_queue(store, queues, staged, _reput_end(queues), kept)
        shutil.rmtree(root / "files")
        result = RebuildResult(
            kind="consumequeue",
            store=str(store.root),
            dryRun=dry_run,
            records=build.records,
            entries=sum(written.values()),
            warnings=build.warnings,
            interrupted=interrupted,
        )
        _diff_databases(store, staged, result)
        if result.changed:
            txn.replace(store.consumequeue_dir, staged)
            _check_staged(store, txn, "consumequeue", (), store.consumequeue_dir, memory)
            if not dry_run:
                result.backup = txn.commit().get("backup")
    result.seconds = time.monotonic() - t0
    return result


def _diff_databases(store: Store, staged: Path, result: RebuildResult):
    """Per queue, how the units change from the live database to the staged one (a key's value counts as
    changed when it differs; a queue's min/max entries too); the checkpoint as [before, after]. A live
    database that cannot be read is replaced whole, and said so."""
    new = ReadOnlyDB(staged, (R.UNIT_CF, R.OFFSET_CF))
    try:
        old = ReadOnlyDB(store.consumequeue_dir, (R.UNIT_CF, R.OFFSET_CF))
    except StoreError as e:
        old = None
        result.warnings.append(f"the live RocksDB consume queue cannot be read ({e}): it is replaced whole")
    try:
        diffs: dict[tuple[str, int], QueueDiff] = {}
        for cf in (R.UNIT_CF, R.OFFSET_CF):
            prefix, queue = None, None
            for key, before, after in _merged(old.items(cf) if old is not None else iter(()), new.items(cf)):
                if cf == R.OFFSET_CF or not (
                    prefix is not None and len(key) == len(prefix) + 8 and key.startswith(prefix)
                ):
                    queue, prefix = _queue_of(cf, key), key[:-8]  # a unit key: its queue's prefix, then 8 bytes
                if queue is None:  # the checkpoint
                    if before != after:
                        result.checkpoint["rocksdbCheckpoint"] = [
                            R.INT64.unpack_from(v)[0] if v else None for v in (before, after)
                        ]
                    continue
                d = diffs.setdefault(queue, QueueDiff(queue[0], queue[1], 0, 0, 0, 0, 0))
                if cf == R.UNIT_CF:
                    d.before += before is not None
                    d.after += after is not None
                d.added += before is None
                d.removed += after is None
                d.changed += before is not None and after is not None and before != after
        for queue, d in sorted(diffs.items()):
            if d.added or d.removed or d.changed:
                result.queues.append(d)
            else:
                result.unchangedQueues += 1
    finally:
        new.close()
        if old is not None:
            old.close()


def _queue_of(cf: str, key: bytes) -> tuple[str, int] | None:
    """(topic, queueId) of a unit or offset key; None for the checkpoint (or a key of another layout)."""
    try:
        if cf == R.OFFSET_CF:
            topic, _, qid = R.parse_offset_key(key)
            return None if topic == R.CHECKPOINT_TOPIC else (topic, qid)
        topic, rest = R.split_topic(key)
        return topic, R.INT32.unpack_from(rest)[0]
    except (ValueError, UnicodeDecodeError, IndexError):
        return None


def _merged(a, b):
    """(key, value in a or None, value in b or None) over two key-ordered iterators, in key order."""
    x, y = next(a, None), next(b, None)
    while x is not None or y is not None:
        if y is None or (x is not None and x[0] < y[0]):
            yield x[0], x[1], None
            x = next(a, None)
        elif x is None or y[0] < x[0]:
            yield y[0], None, y[1]
            y = next(b, None)
        else:
            yield x[0], x[1], y[1]
            x, y = next(a, None), next(b, None)


@dataclasses.dataclass
class ConversionResult:
    to: str  # "rocksdb" or "file"
    store: str
    dryRun: bool
    queues: int
    units: int
    checkpoint: int | None  # the RocksDB queue's dispatch checkpoint (written, or read)
    interrupted: dict | None = None
    backup: str | None = None
    seconds: float = 0.0
    notes: list = dataclasses.field(default_factory=list)  # what the way back could not keep exactly


def convert_queues(
    store: Store, to: str, dry_run: bool = False, keep_backup: bool = True, progress=None, memory: int = DEFAULT_MEMORY
) -> ConversionResult:
    """Convert the consume queues offline: the file queues into a RocksDB queue (`to="rocksdb"`: an upgrade to
    storeType=defaultRocksDB) or the RocksDB queue into file queues (`to="file"`: the way back). The new queue is
    staged, checked unit for unit against the old one and with verify (as the broker of the new storeType
    reads the store), and swapped in whole; the old one goes to the backup. broker.conf's storeType is the
    operator's to change: rmqctl does not edit it."""
    if to not in ("rocksdb", "file"):
        raise UsageError("--to must be rocksdb or file")
    source = FILE_STORE if to == "rocksdb" else ROCKSDB_STORE
    if store.parts.queue_store != source:
        raise UsageError(
            f"the broker reads {store.parts.queue_store} consume queues here (storeType): nothing to convert to {to}"
        )
    t0 = time.monotonic()
    target = dataclasses.replace(store.config, storeType=ROCKSDB_STORE if to == "rocksdb" else FILE_STORE)
    with (
        writing(store, dry_run, "convert consumequeue", understood=ROCKS_QUEUE_KINDS) as (interrupted, store),
        _build_area(store, dry_run, "consumequeue", keep_backup) as txn,
    ):
        area = txn.area(store.consumequeue_dir)  # on its filesystem, which a top-level link may make another
        staged, notes = area / "consumequeue", []
        if to == "rocksdb":
            queues = store.consume_queues()
            checkpoint = _reput_end(queues)
            written = write_rocks_queue(store, queues, staged, checkpoint)
        else:
            written = _files_from_rocks(store, area, progress, memory, notes)
            checkpoint = store.rocks_queues.checkpoint
        result = ConversionResult(
            to, str(store.root), dry_run, len(written), sum(written.values()), checkpoint, interrupted, notes=notes
        )
        txn.replace(store.consumequeue_dir, staged)
        _check_staged(Store(store.root, target), txn, "consumequeue", (), store.consumequeue_dir, memory)
        if not dry_run:
            result.backup = txn.commit().get("backup")
    result.seconds = time.monotonic() - t0
    return result


def _reput_end(queues: list[ConsumeQueue]) -> int:
    """Where dispatch got to: max(offset + size) over every queue's last entry (the file store's reput
    resumes there; the RocksDB queue's checkpoint holds it)."""
    end = 0
    for cq in queues:
        for qoffs, units in _entries(cq):
            end = max(end, int(units["commitLogOffset"][-1]) + int(units["size"][-1]))
    return end


def _files_from_rocks(store: Store, staging: Path, progress, memory: int, notes: list) -> dict:
    """File queues for the RocksDB queue's units: dispatched from the commitlog by the broker's rules (so the
    files are the bytes the broker writes), then required to hold exactly the RocksDB queue's live units.
    Units below the commitlog's min offset (the cleanup deleted their records; the broker's compaction filter
    drops them in its time) are not served and not written: the dispatch fills a queue's first file before its
    first live unit with fillPreBlank's units. A queue with no live unit left keeps its max offset by its last
    unit (_dead_queue), as the broker's own cleanup leaves such a file queue."""
    build = dispatch_records(store, staging, build_cq=True, build_index=False, progress=progress, memory=memory)
    size = store.consumequeue_file_size
    rocks, min_phy = store.rocks_queues, store.commitlog.min_offset
    queues = {(q.topic, q.queue_id) for q in rocks.queues()} | set(build.queued)
    written = {}
    for topic, qid in sorted(queues):
        cq = ConsumeQueue(topic, qid, staging / "consumequeue" / topic / str(qid), size)
        files = [(qoffs, units) for qoffs, units in _entries(cq)] if cq.directory.is_dir() else []
        got = np.concatenate([q for q, _ in files]) if files else np.empty(0, np.int64)
        want = []
        for qoffs, units in rocks.units(topic, qid):
            live = ~record_expired(units["commitLogOffset"], min_phy)
            if live.any():
                want.append((qoffs[live], units[live]))
        want_q = np.concatenate([q for q, _ in want]) if want else np.empty(0, np.int64)
        same = (
            np.array_equal(got, want_q)
            and all(
                np.array_equal(
                    np.concatenate([u[c] for _, u in files]).astype(np.int64),
                    np.concatenate([u[c] for _, u in want]).astype(np.int64),
                )
                for c in ("commitLogOffset", "size", "tagsCode")
            )
            if len(got)
            else not len(want_q)
        )
        if not same:
            raise StoreError(
                f"{topic}/{qid}: the RocksDB queue's units are not those the commitlog's dispatch "
                "gives (run `rmqctl verify`, or `rmqctl rebuild consumequeue` first); nothing was "
                "changed",
                store.consumequeue_dir,
            )
        if len(got):
            written[(topic, qid)] = len(got)
        elif (queue := rocks.queue(topic, qid)) is not None and queue.max_offset:
            written[(topic, qid)] = _dead_queue(rocks, queue, cq.directory, size, notes)
    return written


def _dead_queue(rocks, queue, directory: Path, size: int, notes: list) -> int:
    """A file queue for a RocksDB queue whose every unit lies below the commitlog: its last unit alone, after
    fillPreBlank's units (ConsumeQueueWriter.put), so the queue keeps its max offset and its maxPhysicOffset
    stays below the commitlog, as the broker's own cleanup leaves such a file queue (pre-blank units alone would
    make it Integer.MAX_VALUE: 4.9's reput would wait there, 5.x's recovery would dispatch nothing below it).
    Once the broker's compaction has dropped that unit, only its commitlog offset is left (the offset column
    family's max): the unit is written with size 1 and tagsCode 0, which the broker reads alike (never served,
    below every live offset), and `notes` says so."""
    phy, last = queue.max_entry
    unit = rocks.unit(queue.topic, queue.queue_id, last)
    if unit is None or unit[0] != phy:
        unit = (phy, 1, 0)
        notes.append(
            f"{queue.topic}/{queue.queue_id}: every unit lies below the commitlog and the RocksDB queue no longer "
            f"holds its last one: kept its max offset {last + 1} with a unit at commitlog offset {phy} of size 1"
        )
    writer = ConsumeQueueWriter(directory, size)
    try:
        writer.put(unit[0], unit[1], unit[2], last)
    finally:
        writer.close()
    return 1
