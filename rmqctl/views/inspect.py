"""Read-only views of a store: dump (commitlog, consumequeue, index, checkpoint), locate, info.
Each function returns plain dicts (the JSON shapes of the CLI contract) so notebooks and the CLI share them."""

from __future__ import annotations

import datetime as dt
import inspect
import queue
from typing import Callable, Iterator

import numpy as np
import orjson

from .. import batchcq, compaction, cqext, dledger, rocksdbconfig, rocksdbcq, rocksdbstore
from .. import schema as S
from ..engine import decode_records, ordered_map, walk_files
from ..dispatch import tags_code
from ..errors import FileGone, StoreError, where
from ..record import Blank, Message, RecordError, read_record
from ..rules import BLANK, index_slot, pre_blank, queue_kind, record_head
from ..live import head_moved
from ..queueload import loaded_queues, loaded_state
from ..recovery import recovered_queues_end, start_file
from ..store import ConsumeQueue, Store, offset_to_name
from .filters import MessageFilter
from .timer import pending_summary


def dump_commitlog(store: Store, *selection, **options) -> Iterator[dict]:
    """Every message record in commitlog order, as `dump commitlog` prints it: the objects of
    dump_commitlog_lines, which takes the same arguments (one writer of the contract and one list of what
    chooses the records: offsets, topic, queue, limit, `where` filters; `decompress`: inflate compressed
    bodies up to that many bytes; damage is passed to `warn`)."""
    for block in dump_commitlog_lines(store, *selection, **options, views=False):
        for line in block.splitlines():
            yield orjson.loads(line)


def dump_commitlog_lines(
    store: Store,
    start: int | None = None,
    end: int | None = None,
    topic: str | None = None,
    queue_id: int | None = None,
    limit: int | None = None,
    body: str = "utf8",
    raw_properties: bool = False,
    decompress: int | None = None,
    warn=None,
    where: MessageFilter | None = None,
    jobs: int | None = None,
    views: bool = False,
) -> Iterator[bytes]:
    """`dump commitlog --format jsonl`: blocks of JSON lines, one per message record in commitlog order, from
    the engine's columns (a DLedger store's entry bodies too). Damage ends the walk of that file (as it ends
    the broker's) and is passed to `warn` as one line naming file and offset. The walk decodes batches on
    this thread while `jobs` threads (default: all cores) write their lines; the blocks come in order.
    `views=True`: blocks are views of the writers' buffers, valid until the next block is asked for (for a
    caller that writes each at once: the copy of every byte, ~0.1 s a GiB, is saved)."""
    from ..engine import BLOCK, DUMP_BYTES, DUMP_ROWS, chunk_lines  # the kernels load with the walks
    from ..engine import available_cores  # (numba: it loads with the kernels)

    if limit == 0:
        return
    scan = store.scan()
    jobs = jobs or available_cores()
    # a writer fills a buffer of the pool; this thread hands its blocks on (views, or copies made here: from
    # one malloc arena, reusing its memory, where copies made on the writer threads gave each arena's pages
    # back to the system and faulted them in again, batch after batch) and gives it back
    buffers: queue.SimpleQueue = queue.SimpleQueue()
    for _ in range(2 * jobs + 1):  # one more than ordered_map keeps pending
        buffers.put(np.empty(BLOCK, np.uint8))

    def selected():
        left, reported = limit, 0
        # the batches pending on writer threads keep their pages
        for chunk in scan.chunks(
            start, end, rows=DUMP_ROWS, max_bytes=DUMP_BYTES, resident=(2 * jobs + 1) * DUMP_BYTES
        ):
            if reported < len(scan.errors):
                reported = _report_damage(scan.errors, reported, warn)
            rows = select_records(chunk, topic, queue_id, where)
            if left is not None:
                rows = rows[:left]
                left -= len(rows)
            yield chunk, rows
            if left == 0:
                return
        _report_damage(scan.errors, reported, warn)

    def lines(batch) -> tuple:
        out = buffers.get()
        return out, list(chunk_lines(*batch, body, raw_properties, decompress, out=out))

    for out, blocks in ordered_map(lines, selected(), jobs):
        yield from (blocks if views else [bytes(b) for b in blocks])
        buffers.put(out)


# help() and the API docs show what dump_commitlog takes: dump_commitlog_lines' parameters but `views`
_LINES = inspect.signature(dump_commitlog_lines)
dump_commitlog.__signature__ = _LINES.replace(
    parameters=[p for p in _LINES.parameters.values() if p.name != "views"], return_annotation="Iterator[dict]"
)


def select_records(chunk, topic: str | None, queue_id: int | None, where: MessageFilter | None = None) -> np.ndarray:
    """The rows of `chunk` whose topic is `topic` (its UTF-8 bytes), whose queue id is `queue_id` and that
    `where` matches."""
    keep = np.ones(len(chunk), bool) if where is None else where.select(chunk)
    if queue_id is not None:
        keep &= chunk.column("queueId") == queue_id
    if topic is not None:
        at = chunk.column("topicAt")
        keep &= chunk.spans_equal(at, at + chunk.column("topicLength"), topic.encode("utf-8"))
    return np.flatnonzero(keep)


def _report_damage(errors, reported: int, warn) -> int:
    if warn:
        for ef, pos, e in errors[reported:]:
            warn(f"{where(ef.path, ef.start + pos)}: {e.detail}; rest of the file skipped")
    return len(errors)


def dump_consumequeue(store: Store, topic: str, queue_id: int, resolve: bool = False) -> Iterator[dict]:
    """Every unit of one queue (file units with their file and position, and where a tagsCode is a ConsumeQueueExt
    address the unit's tagsCode and store time; RocksDB units with their store time)."""
    if store.rocks_queues is not None:
        yield from dump_rocks_queue(store, topic, queue_id, resolve)
        return
    cq = store.consume_queue(topic, queue_id)
    if not cq.directory.is_dir():
        if (store.root / batchcq.DIRECTORY / topic).is_dir():  # a BatchCQ topic: its units, as the broker's CqUnit
            for row in dump_batchconsumequeue(store, topic, queue_id, resolve):  # names them for its consumers
                yield {"queueOffset": row["msgBaseOffset"], "batchNum": row["batchSize"], **row}
            return
        raise StoreError("no such consumequeue", cq.directory)
    ext = _loaded_ext(store, cq)
    try:
        yield from _file_units(store, cq, ext, resolve)
    finally:
        if ext is not None:
            ext.close()


def _loaded_ext(store: Store, cq: ConsumeQueue) -> cqext.QueueExt | None:
    """The queue's ConsumeQueueExt files as the broker's load leaves them (None: it has none)."""
    if store.config.enableConsumeQueueExt is False or not (store.root / cqext.EXT_DIR / cq.topic).is_dir():
        return None
    size = cqext.file_size(store.root, store.config.mappedFileSizeConsumeQueueExt)
    return cqext.loaded_queue_ext(store.root, cq, size, store.version.major, store.live is not None)[0]


def _no_ext(store: Store) -> str:
    """Why a tagsCode that is an address has no unit in a dump row."""
    said = store.config.enableConsumeQueueExt is False
    return "not read: enableConsumeQueueExt=false" if said else "not found"


def _file_units(store: Store, cq: ConsumeQueue, ext: cqext.QueueExt | None, resolve: bool) -> Iterator[dict]:
    topic, queue_id = cq.topic, cq.queue_id
    for qoff, f, pos, off, size, tags in cq.entries():
        row = {
            "queueOffset": qoff,
            "file": f.name,
            "position": pos,
            "commitLogOffset": off,
            "size": size,
            "tagsCode": tags,
        }
        if tags <= S.CQ_EXT_MAX_ADDRESS:  # the tags live in a ConsumeQueueExt unit
            row.update(ext.fields(tags) if ext is not None else {"extUnit": _no_ext(store)})
        if pre_blank(off, size, tags):
            row["preBlank"] = True
        elif resolve:
            row.update(resolve_entry(store, topic, queue_id, qoff, off, size))
        yield row


def dump_rocks_queue(store: Store, topic: str, queue_id: int, resolve: bool = False) -> Iterator[dict]:
    rocks = store.rocks_queues
    found = rocks.queue(topic, queue_id) is not None
    for qoffs, units in rocks.units(topic, queue_id):
        found = True
        for qoff, off, size, tags, stored in zip(
            qoffs.tolist(),
            units["commitLogOffset"].tolist(),
            units["size"].tolist(),
            units["tagsCode"].tolist(),
            units["storeTimestamp"].tolist(),
        ):
            row = {
                "queueOffset": qoff,
                "commitLogOffset": off,
                "size": size,
                "tagsCode": tags,
                "storeTimestamp": stored,
                "storeTime": ms_text(stored),
            }
            if resolve:
                row.update(resolve_entry(store, topic, queue_id, qoff, off, size))
            yield row
    if not found:
        raise StoreError(
            f"no queue {topic}/{queue_id} in the RocksDB consume queue (no unit, no min/max)", store.consumequeue_dir
        )


def dump_batchconsumequeue(store: Store, topic: str, queue_id: int, resolve: bool = False) -> Iterator[dict]:
    """Every written unit of one BatchConsumeQueue; with `resolve`, each against the unit its record makes."""
    q = batchcq.queue(store, topic, queue_id)
    for f, written, arr in q.units():
        for i in range(written):
            u = arr[i]
            row = {"file": f.name, "position": i * S.BCQ_UNIT_SIZE, **{k: int(u[k]) for k in S.BCQ_DTYPE.names}}
            if resolve:
                row.update(_resolve_batch_unit(store, u, topic, queue_id))
            yield row
        f.release()


def _resolve_batch_unit(store: Store, u, topic: str, queue_id: int) -> dict:
    """A BatchCQ unit against the unit its record makes (ok, problem); a unit whose record the cleanup deleted
    is `expired`, as resolve_entry says of a consumequeue's (the broker's min moves past it)."""
    try:
        problems = batchcq.unit_problems(
            u, store.read_message(int(u["commitLogOffset"]))[1], topic, queue_id, store.config
        )
    except StoreError as e:
        if store.expired(int(u["commitLogOffset"])):
            return {"ok": None, "expired": True, "problem": None}
        problems = [str(e)]
    return {"ok": not problems, "problem": "; ".join(problems) or None}


def dump_compaction(store: Store, topic: str, queue_id: int, cq: bool = False) -> Iterator[dict]:
    """A compaction topic's queue: its compaction log's records (where each is, and whether its PHYSICALOFFSET
    says so), each file's BLANK end; with `cq`, its compaction CQ's units instead (the end unit marked)."""
    q = compaction.CompactionQueue(store, topic, queue_id)
    if not q.log_dir.is_dir() and not q.cq.directory.is_dir():
        raise StoreError("no such compaction queue", q.log_dir)
    if cq:
        for f, pos, u in compaction.cq_units(q):
            yield {"file": f.name, "position": pos, **u, **({"end": True} if compaction.end_unit(u) else {})}
        return
    for r in q.records():
        at = r.file.start + r.position
        row = {"file": r.file.name, "position": r.position, "offset": at}
        if r.message is None:
            if r.end != "zeros":
                yield {**row, "end": r.end}
            continue
        m = r.message
        yield {
            **row,
            "storeSize": m.storeSize,
            "topic": m.topic,
            "queueId": m.queueId,
            "queueOffset": m.queueOffset,
            "physicalOffset": m.physicalOffset,
            "inPlace": m.physicalOffset == at,
            "storeTimestamp": m.storeTimestamp,
            "keys": m.keys,
            "msgId": m.msg_id,
        }


def dump_rocksdbstore(store: Store, kinds: tuple[str, ...] | None = None) -> Iterator[dict]:
    """The 5.4 RocksDB message store's keys of each kind (default: every kind its layout keeps) in key order:
    records, bookkeeping keys, and keys of neither (with their bytes and the problem). A kind asked for that
    is not read here is said before any key, never answered with nothing."""
    parts = [p for p in store.parts.parts if p.kind == "rocksdb-message-store"]
    if not parts:
        raise StoreError(
            "no RocksDB message store (rocksdbstore/): the broker writes one only with "
            "indexRocksDBEnable, timerRocksDBEnable or transRocksDBEnable",
            store.root,
        )
    unread = next((p for p in parts if not p.read), None)
    if unread is not None:
        raise StoreError(f"{unread.what}: not read ({unread.why})", unread.path)
    db = store.message_rocksdb
    absent = next((k for k in kinds or () if k not in db.kinds), None)
    if absent == rocksdbstore.TIMER:
        raise StoreError(
            "timer records: not read (the split layout keeps none here; TimerMessageRocksDBStore keeps them in "
            "kvStore/, another layout)",
            store.root / "kvStore",
        )
    if absent is not None:
        raise StoreError(f"{absent} records: not read (the split layout here has no {absent} database)", db.directory)
    for kind in kinds or db.kinds:
        for e in db.entries(kind):
            yield e.row()


def resolve_entry(store: Store, topic: str, queue_id: int, qoff: int, off: int, size: int) -> dict:
    """What the entry points at, and whether it agrees (topic, queueId, queueOffset, size)."""
    try:
        _, m = store.read_message(off)
    except StoreError as e:
        if store.expired(off):
            return {"resolved": None, "ok": None, "expired": True, "problem": None}
        return {"resolved": None, "ok": False, "problem": str(e)}
    problems = []
    if m.storeSize != size:
        problems.append(f"size {size} != record storeSize {m.storeSize}")
    if m.topic != topic and topic not in lmq_queues(m):
        problems.append(f"record topic {m.topic!r}")
    if m.queueId != queue_id and not topic.startswith("%LMQ%"):
        problems.append(f"record queueId {m.queueId}")
    if m.queueOffset != qoff and topic == m.topic:
        problems.append(f"record queueOffset {m.queueOffset}")
    return {
        "resolved": {"topic": m.topic, "queueId": m.queueId, "queueOffset": m.queueOffset},
        "ok": not problems,
        "problem": "; ".join(problems) or None,
    }


def lmq_queues(m: Message) -> list[str]:
    v = m.properties.get("INNER_MULTI_DISPATCH")
    return v.split(",") if v else []


def index_header_dict(ix) -> dict:
    h = dict(ix.header)
    h["file"] = ix.name
    h["entries"] = ix.entry_count
    h["fileSize"] = ix.length
    return h


def dump_index(
    store: Store, name: str | None = None, entries: bool = True, warn: Callable[[str], None] | None = None
) -> Iterator[dict]:
    """Index headers, then (with entries) every used entry with its slot and chain link. A file shorter than its
    geometry reads as zeros past its end, as the broker maps it; `warn` is told of each."""
    files = store.index_files()
    if name is not None:
        files = [ix for ix in files if ix.name == name or str(ix.path) == name]
        if not files:
            raise StoreError("no such index file", store.index_dir / name)
    for ix in files:
        if ix.length < ix.expected_length and warn is not None:
            warn(
                f"{ix.path}: index file is {ix.length} bytes, not {ix.expected_length}: read as zeros past its end, "
                "as the broker maps it (rmqctl rebuild index writes it again)"
            )
        yield {"kind": "header", **index_header_dict(ix)}
        if not entries:
            continue
        arr = ix.entries()
        for n in range(1, min(ix.index_count, len(arr))):
            e = arr[n]
            yield {
                "kind": "entry",
                "file": ix.name,
                "index": n,
                "keyHash": int(e["keyHash"]),
                "slot": index_slot(int(e["keyHash"]), ix.slot_num),
                "phyOffset": int(e["phyOffset"]),
                "timeDiff": int(e["timeDiff"]),
                "prevIndex": int(e["prevIndex"]),
            }


def dump_checkpoint(store: Store) -> dict:
    cp = store.checkpoint()
    if cp is None:
        raise StoreError("no checkpoint file", store.checkpoint_path)
    out = dict(cp)
    for k in ("physicMsgTimestamp", "logicsMsgTimestamp", "indexMsgTimestamp"):
        out[k + "Text"] = ms_text(cp[k])
    return out


def ms_text(ms: int) -> str | None:
    if ms <= 0:
        return None
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds")
    except (OverflowError, ValueError, OSError):
        return None


def _locate_batch(q: batchcq.BatchConsumeQueue, queue_offset: int) -> dict:
    """A queue offset of a BatchCQ topic: the unit the broker finds for it, whose batch covers it (and may start
    earlier) unless the units' msgBaseOffsets are damaged, which a note then says."""
    out = {"topic": q.topic, "queueId": q.queue_id, "queueOffset": queue_offset}
    found = q.unit_covering(queue_offset)
    if found is None:
        return {**out, "exists": False, "nothingThere": "no unit's batch covers this queue offset"}
    f, pos, unit = found
    index = queue_offset - unit["msgBaseOffset"]
    covers = 0 <= index < unit["batchSize"]
    return {
        **out,
        "file": f.name,
        "fileFromOffset": f.start,
        "position": pos,
        "exists": True,
        **unit,
        "indexInBatch": index,
        **(
            {}
            if covers
            else {
                "note": "its batch does not cover this queue offset (damaged msgBaseOffsets: run "
                "`rmqctl verify`); the broker's search finds this unit all the same"
            }
        ),
    }


def _locate_unit(store: Store, cq: ConsumeQueue, offset: int) -> dict:
    """A consumequeue offset: its unit on disk, and where the broker's load moves the queue's max
    (loaded_state), the unit its recovery truncates or the one its dispatch writes (_dispatched_at_load)."""
    size = cq.files.file_size
    byte = offset * S.CQ_UNIT_SIZE
    f = cq.files.find(byte)
    out = {
        "topic": cq.topic,
        "queueId": cq.queue_id,
        "queueOffset": offset,
        "file": f.name if f else offset_to_name(byte - byte % size),
        "fileFromOffset": byte - byte % size,
        "position": byte % size,
        "exists": f is not None,
    }
    if f is not None:
        buf = f.buf
        if byte - f.start + S.CQ_UNIT_SIZE <= len(buf):
            off, sz, tags = S.CQ_UNIT.unpack_from(buf, byte - f.start)
            out.update(commitLogOffset=off, size=sz, tagsCode=tags, written=sz > 0 and off >= 0)
            if pre_blank(off, sz, tags):
                out["preBlank"] = True
    end, last_phy = _queue_end(cq)
    loaded = loaded_state(store) if _load_may_move(store, out, end) else None
    loaded_max = loaded.max_offset.get(f"{cq.topic}/{cq.queue_id}") if loaded is not None else None
    if loaded_max is not None and offset >= loaded_max and out.get("written"):
        out["nothingThere"] = (
            f"the broker's recovery truncates this unit (it points past where the commitlog's recovery ends; "
            f"the queue's max after its load is {loaded_max})"
        )
    elif loaded_max is not None and end <= offset < loaded_max:
        _dispatched_at_load(store, cq, out, max(last_phy, loaded.walk_start), loaded.end)
    elif not out.get("written"):
        out["nothingThere"] = "outside the queue's written units"
    elif out.get("preBlank"):
        out["nothingThere"] = "a pre-blank unit (fillPreBlank's, before the queue's first unit): no record"
    elif store.expired(out["commitLogOffset"]):
        _expired_unit(store, out, cq.loaded_range(store.commitlog.min_offset, store.version.major)[0])
    return out


def _load_may_move(store: Store, unit: dict, end: int) -> bool:
    """Whether the broker's load may move this unit (so its recovery is worth walking): one past the queue's end
    on disk (its dispatch may write it), or one on disk pointing where the recovery's walk goes (from
    recovery.start_file on: it may truncate it)."""
    files = store.commitlog.files
    if unit["queueOffset"] >= end:
        return True
    if not unit.get("written") or not files:
        return False
    start = start_file(store, store.crashed(), lambda: recovered_queues_end(store).max_phy)
    return unit["commitLogOffset"] >= files[start].start


def _queue_end(cq: ConsumeQueue) -> tuple[int, int]:
    """(the queue offset past its last written unit on disk, that unit's commitLogOffset; 0, -1: none)."""
    end, phy = 0, -1
    for first, f, written, arr in cq.units():
        if written:
            end, phy = first + written, int(arr["commitLogOffset"][written - 1])
        f.release()
    return end, phy


def _dispatched_at_load(store: Store, cq: ConsumeQueue, out: dict, start: int, stop: int):
    """A unit past the queue's end on disk that the broker's recovery dispatches into it: the record it writes
    it for, the queue's record whose QUEUEOFFSET is the offset, among those its walk passes in [start, stop)."""
    qoff = out["queueOffset"]
    for chunk in store.scan().chunks(start=start, end=stop):
        hits = np.flatnonzero((chunk.column("queueId") == cq.queue_id) & (chunk.column("queueOffset") == qoff))
        for pos in chunk.column("position")[hits].tolist():
            m = read_record(chunk.buf, pos, len(chunk.u8))
            if m.topic == cq.topic:
                out.update(commitLogOffset=m.physicalOffset, size=m.storeSize, tagsCode=tags_code(m, store.config))
                out.update(written=False, dispatchedAtLoad=True)
                out["note"] = "not on disk yet: the broker's recovery dispatches this unit at its next start"
                return
    out["nothingThere"] = "outside the queue's written units (and no record the broker's recovery dispatches)"


def locate(store: Store, offset: int, topic: str | None = None, queue_id: int | None = None) -> dict:
    """Where a commitlog offset (or, with topic/queueId, a consumequeue offset) lives, and whether a record
    starts there."""
    if topic is not None and store.rocks_queues is not None:
        return locate_rocks_unit(store, offset, topic, queue_id or 0)
    if topic is not None and topic in batchcq.batch_topics(store):
        return _locate_batch(batchcq.queue(store, topic, queue_id or 0), offset)
    if topic is not None:
        return _locate_unit(store, store.consume_queue(topic, queue_id or 0), offset)
    q = store.commitlog
    size = q.file_size
    f = q.find(offset)
    out = {
        "offset": offset,
        "file": f.name if f else offset_to_name(offset - offset % size),
        "fileFromOffset": f.start if f else offset - offset % size,
        "position": offset % size if not f else offset - f.start,
        "exists": f is not None,
        "recordStart": False,
    }
    if f is not None:
        try:
            buf = f.buf
        except FileGone as e:  # (on a live store: the broker's expired head, deleted since it was listed)
            head_moved(store.live, f, e)
            return {**out, "exists": False, "nothingThere": "its file was deleted by the running broker: expired"}
        try:
            rec = read_record(buf, out["position"], min(len(buf), size))
        except RecordError as e:
            out["detail"] = e.detail
        else:
            if isinstance(rec, Blank):
                out.update(recordStart=True, kind="BLANK", storeSize=rec.storeSize)
            else:
                out.update(
                    recordStart=True,
                    kind=rec.version,
                    storeSize=rec.storeSize,
                    topic=rec.topic,
                    queueId=rec.queueId,
                    queueOffset=rec.queueOffset,
                    msgId=rec.msg_id,
                    physicalOffsetMatches=rec.physicalOffset == offset,
                )
        if store.dledger is not None:
            out.update(_entry_at(store, f, out["position"]))
        elif not out["recordStart"]:
            prev = _record_containing(store, f, out["position"])
            if prev is not None:
                out["insideRecordAt"] = f.start + prev
    if not out["recordStart"] and "insideRecordAt" not in out and store.dledger is None:
        out["nothingThere"] = _outside_commitlog(store, offset)
    return out


def _outside_commitlog(store: Store, offset: int) -> str | None:
    """Why no record can be at `offset` when it lies outside the commitlog's data, else None."""
    files = store.commitlog.files
    if not files:
        return "the commitlog holds no file"
    if offset < files[0].start:
        return f"before the first commitlog file ({files[0].start}): deleted by cleanup, or never in this store"
    end, _ = commitlog_end(store)
    if end is None or offset >= end:
        return f"past the end of the commitlog's data ({end or 0})"
    return None


def locate_rocks_unit(store: Store, offset: int, topic: str, queue_id: int) -> dict:
    """Where a queue offset lives in the RocksDB consume queue: its key, and the unit when there is one."""
    key = rocksdbcq.unit_key(topic, queue_id, offset)
    out = {
        "topic": topic,
        "queueId": queue_id,
        "queueOffset": offset,
        "database": str(store.consumequeue_dir),
        "columnFamily": rocksdbcq.UNIT_CF,
        "key": key.hex(),
    }
    unit = store.rocks_queues.unit(topic, queue_id, offset)
    out["exists"] = unit is not None
    if unit is not None:
        off, size, tags, stored = unit
        out.update(commitLogOffset=off, size=size, tagsCode=tags, storeTimestamp=stored, storeTime=ms_text(stored))
        if store.expired(off):  # the compaction filter drops such a unit in its time
            rocks = store.rocks_queues
            _expired_unit(store, out, rocks.min_offset(rocks.queue(topic, queue_id), store.commitlog.min_offset))
    else:
        out["nothingThere"] = "no unit at this queue offset"
    return out


def _expired_unit(store: Store, out: dict, served: int):
    """A queue's unit whose record went with the cleanup (a file queue keeps it until its whole file goes):
    outside the data, as the broker serves the queue only from its min, `served`."""
    out["expired"] = True
    out["nothingThere"] = (
        f"its record (commitlog offset {out['commitLogOffset']}) went with the cleanup (the commitlog starts at "
        f"{store.commitlog.min_offset}); the broker serves this queue from queue offset {served}"
    )


def _entry_at(store: Store, f, pos: int) -> dict:
    """DLedger mode: the entry whose bytes cover `pos`, and the record in its body (at entry pos + 48)."""
    for found in dledger.entry_slices(f.buf, min(len(f.buf), store.commitlog.file_size), dledger.ENTRY_SLICE):
        if found.end > pos:  # the slice holding the entries at or before pos
            break
    k = int(np.searchsorted(found.position, pos, side="right")) - 1
    if k < 0 or pos >= found.position[k] + found.size[k]:
        return {}
    out = {"dledgerEntry": found.entry(k, f.start)}
    body = int(found.position[k]) + S.DLEDGER_BODY_OFFSET
    if pos != body:
        out["insideRecordAt" if pos > body else "insideEntryHeaderOf"] = f.start + body
    return out


def _record_containing(store: Store, f, pos: int) -> int | None:
    """The start of the record (or BLANK) that covers `pos`, walking the file from its start on the compiled
    walk; None when its records stop at damage before reaching `pos`, or end before it."""
    size = store.commitlog.file_size
    stopped, end = [], 0  # where the engine stopped at bytes that are not a record; where the last record ends

    def refused(_, at: int, limit: int):
        stopped.append(at)

    for chunk in walk_files([f], size, None, f.start + pos + 1, True, refused):
        starts = chunk.column("position")
        ends = starts + chunk.column("storeSize")
        k = int(np.searchsorted(ends, pos, side="right"))  # the first record ending past pos
        if k < len(starts) and starts[k] <= pos:
            return int(starts[k])
        end = int(ends[-1])
    if stopped or end > pos:
        return None
    try:  # the walk ended at a BLANK, or at the file's end
        blank = read_record(f.buf, end, min(len(f.buf), size))
    except RecordError:
        return None
    return end if isinstance(blank, Blank) and pos < end + blank.storeSize else None


def files_with_data(store: Store) -> list:
    """The commitlog files that hold data (preallocated files are all zero); on a running broker's store, one
    it deleted while this ran is noted in its snapshot and left out."""
    out = []
    for f in store.commitlog.files:
        try:
            if not f.is_all_zero():
                out.append(f)
        except FileGone as e:
            head_moved(store.live, f, e)
    return out


# Past this many bytes of records in the commitlog's last file its end is found on the compiled walk: the
# reference reads a record in microseconds, and a full file holds a million; the kernels load in a
# millisecond from the ahead-of-time module (numba's own load takes a fraction of a second).
COMPILED_END_FROM = 16 << 20
PAGE = 4096


def end_kernels(store: Store, data_files: list | None = None) -> tuple:
    """The compiled kernels commitlog_end runs on this store: none while the last file holding data has
    less than COMPILED_END_FROM bytes of records (a small store's `info` starts without numba), and none on a
    DLedger store (its entries are read by the reference)."""
    if data_files is None:
        data_files = files_with_data(store)
    if not data_files or store.live is not None or store.dledger is not None:
        return ()
    buf = data_files[-1].buf
    written = len(buf) > COMPILED_END_FROM + PAGE and buf[COMPILED_END_FROM : COMPILED_END_FROM + PAGE] != bytes(PAGE)
    return (decode_records,) if written else ()


def commitlog_end(store: Store, data_files: list | None = None) -> tuple[int | None, list]:
    """The commitlog's max offset as the broker computes it after loading (the end of the last record of the
    last file holding data), or None when no file holds data; and the damage met on the way. The records are
    read on the compiled walk where end_kernels asks for it, else by the reference: the same walk."""
    if data_files is None:
        data_files = files_with_data(store)
    if not data_files:
        return None, []
    if store.live is not None:
        return store.live.commitlog_end, []
    last = data_files[-1]
    scan = store.scan()
    end = None
    if end_kernels(store, data_files):
        for chunk in scan.chunks(start=last.start):
            if len(chunk):
                end = chunk.file.start + chunk.end
    else:
        for _, m in scan.records(start=last.start):
            end = last.start + m.position + m.storeSize
    return _rolled_over(store, last, end), scan.errors


def _rolled_over(store: Store, last, end: int | None) -> int | None:
    """Where the recovery's walk ends when the last file holding data ends in a BLANK and the next file (the
    all-zero one the broker pre-allocated) is there: the BLANK moves it to that file, whose first bytes stop it at
    its start (CommitLog.recoverNormally / recoverAbnormally). That start is processOffset, truncateDirtyFiles
    keeps the file, and getMaxOffset is its start; without a next file the walk stops at the BLANK."""
    cl = store.commitlog
    nxt = next((f for f in cl.files if f.start == last.start + cl.file_size), None)
    if end is None or nxt is None or store.dledger is not None:
        return end
    buf = last.buf
    return nxt.start if record_head(buf, end - last.start, min(len(buf), cl.file_size), True)[0] == BLANK else end


def info(store: Store, end: tuple[int | None, list] | None = None) -> dict:
    """One screen about a store: files and offset ranges per component, queues with min/max offsets,
    checkpoint, abort and lock state, index files, and anything odd. `end`: commitlog_end's answer, when the
    caller has it already."""
    odd: list[str] = []
    cl = store.commitlog
    data_files = files_with_data(store)
    files = [f for f in cl.files if f in data_files or f.path.exists()]
    odd += [f"stray file in commitlog: {p.name}" for p in cl.strays]
    odd += [
        f"commitlog file {f.name} is {f.length} bytes, not {cl.file_size}" for f in files if f.length != cl.file_size
    ]
    odd += [
        f"commitlog gap or overlap: {a.name} then {b.name}"
        for a, b in zip(files, files[1:])
        if b.start != a.start + cl.file_size
    ]
    max_offset, errors = end if end is not None else commitlog_end(store, data_files)
    odd += [f"{where(ef.name, ef.start + pos)}: {e.detail}" for ef, pos, e in errors]
    preallocated = len(files) - len(data_files)
    index = []
    for ix in store.index_files():
        h = ix.header
        index.append(
            {
                "file": ix.name,
                "entries": ix.entry_count,
                "beginTimestamp": h["beginTimestamp"],
                "endTimestamp": h["endTimestamp"],
                "beginPhyOffset": h["beginPhyOffset"],
                "endPhyOffset": h["endPhyOffset"],
            }
        )
        if ix.length != ix.expected_length:
            odd.append(f"index file {ix.name} is {ix.length} bytes, geometry says {ix.expected_length}")
    live = store.live
    abort = store.abort_exists()
    dledger_part = _dledger_info(store, odd) if store.dledger is not None else None
    configs = rocksdbconfig.describe(store)
    if store.crashed():
        odd.append("abort file present: the broker's last exit was not clean; it will run abnormal recovery")
    return {
        "store": str(store.root),
        "brokerVersion": store.version.to_dict(),
        "empty": store.is_empty,
        "commitlog": {
            "dirs": [str(d) for d in store.commitlog_dirs],
            "fileSize": cl.file_size,
            "files": len(files),
            "preallocatedEmptyFiles": preallocated,
            "minOffset": files[0].start if files else 0,
            "maxOffset": max_offset or (files[0].start if files else 0),
            "firstFile": files[0].name if files else None,
            "lastFile": files[-1].name if files else None,
        },
        "parts": store.parts.to_list(),
        **({"rocksdbConfigs": configs} if configs else {}),
        "consumequeue": _queues_info(store),
        "index": {"files": index, "geometry": dict(zip(("maxHashSlotNum", "maxIndexNum"), store.index_geometry))},
        "checkpoint": dump_checkpoint(store) if store.checkpoint_path.exists() else None,
        **({"dledger": dledger_part} if dledger_part is not None else {}),
        "abort": abort,
        "lockHeldBy": live.pid if live is not None else None,
        "lockHeldByRmqctl": live is not None and live.by_rmqctl,
        "timer": pending_summary(store),
        **({"rocksdbStore": _rocksdb_store_info(store)} if store.message_rocksdb is not None else {}),
        "odd": odd,
    }


def _rocksdb_store_info(store: Store) -> dict:
    """The 5.4 RocksDB message store: its records of each kind and where dispatch to it got."""
    db = store.message_rocksdb
    return {
        "path": str(db.directory),
        "records": db.counts(),
        "lastOffsetPy": {k: db.bookkeeping(k, rocksdbstore.LAST_OFFSET_PY) for k in ("index", "trans")},
    }


def _queues_info(store: Store) -> dict:
    """The broker's consume queues with their min/max offsets after its load, or, when this version does not read
    them, what they are and why not (no queue is reported as absent). Where the load's recovery moves a queue's
    max (queueload.loaded_queues: its truncation, its dispatch), every queue also has its max on disk and
    `recoveryEnd` says where the commitlog's recovery ends."""
    if not store.parts.queues_read:
        part = store.parts.find("consumequeue")
        return {"read": False, "what": part.what, "why": part.why, "queues": []}
    loaded = loaded_queues(store) if store.live is None else None
    if store.rocks_queues is not None:
        return _rocks_queues_info(store, loaded)
    moved = loaded.max_offset if loaded is not None else {}
    queues = []
    batch = batchcq.batch_topics(store)
    min_phy, version = store.commitlog.min_offset, store.version.major
    for cq in [*store.consume_queues(), *batchcq.batch_consume_queues(store)]:
        # a file queue's min is the broker's, past the units its cleanup left dead; its max the broker's after
        # its recovery truncated the units past the commitlog's end and dispatched the ones it lacked
        lo, on_disk = cq.loaded_range(min_phy, version) if isinstance(cq, ConsumeQueue) else cq.offset_range()
        queues.append(_queue_row(cq.topic, cq.queue_id, len(cq.files.files), lo, moved, on_disk, batch))
    # the queues the recovery's dispatch writes files for: an empty directory is listed already (its min is
    # the dispatch's), a missing one is not
    made = dict(loaded.made) if loaded is not None else {}
    for q in queues:
        q["minOffset"] = made.pop(f"{q['topic']}/{q['queueId']}", q["minOffset"])
    for name, lo in made.items():
        topic, queue_id = name.rsplit("/", 1)
        queues.append(_queue_row(topic, int(queue_id), 0, lo, moved, 0, batch))
    queues.sort(key=lambda q: (q["topic"], q["queueId"]))
    return {
        "read": True,
        "fileSize": store.consumequeue_file_size,
        "queues": _on_disk_where_moved(queues),
        "topics": len({q["topic"] for q in queues}),
        "entries": sum(q["maxOffset"] - q["minOffset"] for q in queues),
        **_recovery_fields(queues, loaded),
    }


def _queue_row(topic: str, queue_id: int, files: int, lo: int, moved: dict, on_disk: int, batch) -> dict:
    return {
        "topic": topic,
        "queueId": queue_id,
        "files": files,
        "minOffset": lo,
        "maxOffset": moved.get(f"{topic}/{queue_id}", on_disk),
        "maxOffsetOnDisk": on_disk,
        "kind": queue_kind(topic, batch),
    }


def _recovery_fields(queues: list[dict], loaded) -> dict:
    """`recoveryEnd` where the load moves a queue's max; `redispatchCounted: false` where its recovery dispatches
    records whose units the maxes leave out (the RocksDB queue's)."""
    out = {}
    if queues and "maxOffsetOnDisk" in queues[0]:
        out["recoveryEnd"] = loaded.end
    if loaded is not None and not loaded.redispatch_counted:
        out["redispatchCounted"] = False
    return out


def _on_disk_where_moved(queues: list[dict]) -> list[dict]:
    """The queues, each with its max on disk beside the max after recovery only when the recovery moves one."""
    if all(q["maxOffset"] == q["maxOffsetOnDisk"] for q in queues):
        for q in queues:
            del q["maxOffsetOnDisk"]
    return queues


def _rocks_queues_info(store: Store, loaded) -> dict:
    """The RocksDB queue: every queue's min/max as the broker computes them (the max after its recovery's
    truncation, `loaded`), with the commitLogOffset of the unit before the max, and the dispatch checkpoint."""
    rocks = store.rocks_queues
    min_phy = store.commitlog.min_offset
    moved, moved_phy = (loaded.max_offset, loaded.max_phy) if loaded is not None else ({}, {})
    queues = []
    for q in rocks.queues():
        name = f"{q.topic}/{q.queue_id}"
        queues.append(
            {
                "topic": q.topic,
                "queueId": q.queue_id,
                "minOffset": rocks.min_offset(q, min_phy),
                "maxOffset": moved.get(name, q.max_offset),
                "maxOffsetOnDisk": q.max_offset,
                "maxPhysicOffset": moved_phy[name] if name in moved_phy else q.max_entry[0] if q.max_entry else None,
            }
        )
    return {
        "read": True,
        "kind": "rocksdb",
        "directory": str(store.consumequeue_dir),
        "queues": _on_disk_where_moved(queues),
        "topics": len({q["topic"] for q in queues}),
        "entries": sum(q["maxOffset"] - q["minOffset"] for q in queues),
        "dispatchCheckpoint": rocks.checkpoint,
        **_recovery_fields(queues, loaded),
    }


def _dledger_info(store: Store, odd: list[str]) -> dict:
    """DLedger mode: the entry range, the checkpoint and term, and what the recovery at start would do."""
    layout = store.dledger
    state = dledger.read_state(layout.checkpoint_path)
    term = dledger.read_state(layout.currterm_path)
    index = store.dledger_index
    r = dledger.recover(store.commitlog, index, state)
    if r.stop is not None:
        odd.append(f"DLedger's recovery at start stops at {r.cut} ({r.stop.detail}) and truncates the log there")
    if r.exits:
        odd.append("DLedger's recovery would stop more than a file before the last data file: DLedger exits at start")
    if index.files and index.file_size != dledger.DEFAULT_INDEX_FILE_SIZE:
        odd.append(
            f"DLedger index files of {index.file_size} bytes: a stock broker (DLedgerCommitLog leaves "
            f"mappedFileSizeForEntryIndex at DLedger's {dledger.DEFAULT_INDEX_FILE_SIZE}) refuses them at load and exits"
        )
    return {
        "home": str(layout.home),
        "indexFileSize": index.file_size,
        "indexFiles": len(index.files),
        "beginIndex": r.begin_index,
        "endIndex": r.end_index,
        "endTerm": r.end_term,
        "committedIndex": r.committed_index,
        "committedPos": r.committed_pos,
        "checkpoint": {k: dledger.state_long(state, k) for k in ("endIndex", "committedIndex")} if state else None,
        "currTerm": dledger.state_long(term, "currTerm"),
        "voteLeader": (term or {}).get("voteLeader"),
        "recoveryCut": r.cut,
    }
