"""5.x timer messages: the timerlog units and wheel slots decoded and resolved to their commitlog records
(`dump timerlog`, `dump timerwheel`), pending timer messages per hour (`info`), and what a commitlog cut or
cleanup leaves dangling (`repair`, `clean`). verify's timer checks are in checks/timer.py.

A timer message waits in the commitlog under `rmq_sys_wheel_timer`; TimerMessageStore files it as a 52-byte
timerlog unit in the wheel slot of its delivery time (ROLL units: of a roll time within the next
timerRollWindowSlot), chaining the slot's units newest first through prevPos. The broker's dequeue walks a
slot's chain from lastPos when the slot's time comes, reads each unit's record (offsetPy, sizePy) and
re-puts it to REAL_TOPIC/REAL_QID; a unit whose record is gone is dropped (`dequeue_get_msg_miss`). Slots
before timercheck's lastReadTimeMs are done: the broker never reads them again.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Callable, Iterator

import numpy as np

from .. import schema as S
from ..errors import StoreError
from ..javacompat import java_string_hash
from ..store import Store
from ..timerstore import UNIT_FIELDS, TimerFiles, delayed_ms, slot_index, timer_recovery

MAGIC_NAMES = ((S.TIMER_MAGIC_DEFAULT, "default"), (S.TIMER_MAGIC_ROLL, "roll"), (S.TIMER_MAGIC_DELETE, "delete"))
HOUR_MS = 3_600_000


def timer_files(store: Store) -> TimerFiles:
    timer = TimerFiles(store)
    if not timer.present:
        raise StoreError("no timer files (timerlog/, timerwheel, config/timercheck): no 5.x timer use", store.root)
    return timer


def record_of(store: Store, offset_py: int, size_py: int) -> tuple[dict | None, str | None]:
    """The commitlog record a unit points at, as the dump shows it, and what is wrong with the reference."""
    try:
        _, m = store.read_message(offset_py)
    except StoreError as e:
        return None, str(e)
    props = m.properties
    real_topic = props.get("REAL_TOPIC")
    msg = {
        "topic": m.topic,
        "storeSize": m.storeSize,
        "queueOffset": m.queueOffset,
        "uniqKey": m.uniq_key,
        "realTopic": real_topic,
        "realQueueId": props.get("REAL_QID"),
        "timerOutMs": props.get("TIMER_OUT_MS"),
        "realTopicHashComputed": java_string_hash(real_topic) if real_topic is not None else None,
    }
    problems = []
    if m.storeSize != size_py:
        problems.append(f"sizePy {size_py} but the record is {m.storeSize} bytes")
    if m.topic != S.TIMER_TOPIC:
        problems.append(f"the record's topic is {m.topic!r}, not {S.TIMER_TOPIC}")
    return msg, "; ".join(problems) or None


def unit_dict(pos: int, unit, file_size: int) -> dict:
    row = {"pos": pos, "file": f"{pos - pos % file_size:020d}", "filePosition": pos % file_size}
    row.update({name: int(unit[name]) for name in UNIT_FIELDS})
    row["magicInfo"] = {name: bool(row["magic"] & bit) for bit, name in MAGIC_NAMES}
    row["delayedTimeMs"] = row["currWriteTimeMs"] + row["delayedTimeOffsetMs"]
    return row


@dataclasses.dataclass(frozen=True)
class SlotFilter:
    """What the timer dumps keep: the units or slots of wheel slot `slot` whose delivery (slot) time is in
    [begin, end] (epoch ms, inclusive); None: any."""

    slot: int | None = None
    begin: int | None = None
    end: int | None = None

    def keep(self, times: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Which of the units or slots at `times` in wheel slots `slots` are kept."""
        keep = np.ones(len(times), dtype=bool)
        if self.begin is not None:
            keep &= times >= self.begin
        if self.end is not None:
            keep &= times <= self.end
        if self.slot is not None:
            keep &= slots == self.slot
        return keep


def dump_timerlog(
    store: Store, which: SlotFilter = SlotFilter(), resolve: bool = True, warn: Callable[[str], None] | None = None
) -> Iterator[dict]:
    """Every timerlog unit in order (the recovery walk's units) that `which` keeps (by the wheel slot it is
    filed in and its delayed time), each with the record it points at. Bytes that end a file's units early
    (not the end of the data) go to `warn`."""
    timer = timer_files(store)
    log = timer.timerlog
    if log is None:
        raise StoreError("no timerlog directory: no timer unit to dump", timer.timerlog_dir)
    damaged = log.damaged()
    for w in log.walk:
        units = w.units
        times = delayed_ms(units)
        keep = which.keep(times, slot_index(times, timer.precision))
        for i in np.flatnonzero(keep).tolist():
            row = unit_dict(w.file.start + i * S.TIMERLOG_UNIT_SIZE, units[i], log.file_size)
            if resolve:
                row["message"], problem = record_of(store, row["offsetPy"], row["sizePy"])
                if problem:
                    row["problem"] = problem
            yield row
        if warn and w in damaged:
            warn(
                f"{w.file.path} at offset {w.file.start + w.stop}: not a timerlog unit (size or magic); "
                f"rest of the file skipped"
            )


class Units:
    """Every unit of the timerlog by position (positions ascend: the recovery walk's order); `at` reads one the
    walk did not reach (past damage in its file) too, below `limit` (where the broker's recovery truncates the
    timerlog: nothing past it is read)."""

    def __init__(self, timer: TimerFiles):
        self.pos, self.units = timer.positions()
        self.log = timer.timerlog
        self.limit: int | None = None

    def at(self, pos: int) -> np.void | None:
        i = int(np.searchsorted(self.pos, pos))
        if i < len(self.pos) and self.pos[i] == pos:
            return self.units[i]
        if self.log is None or (self.limit is not None and pos >= self.limit):
            return None
        return self.log.unit_at(pos)


def chain(timer: TimerFiles, last_pos: int, units: Units) -> tuple[list[int], str | None]:
    """The unit positions of a slot's chain from lastPos through prevPos, and why it ended early (None: at
    -1). Stops at a position that holds no unit or a prevPos that does not go strictly backwards (so it
    always ends)."""
    out: list[int] = []
    pos = last_pos
    while pos != -1:
        unit = units.at(pos)
        if unit is None:
            where = "lastPos" if not out else f"prevPos of the unit at {out[-1]}"
            return out, f"{where} is {pos}, where no timerlog unit is ({_why_no_unit(timer, pos)})"
        out.append(pos)
        prev = int(unit["prevPos"])
        if prev != -1 and prev >= pos:
            return out, f"prevPos of the unit at {pos} is {prev}: not strictly backwards (a chain must end at -1)"
        pos = prev
    return out, None


def _why_no_unit(timer: TimerFiles, pos: int) -> str:
    log = timer.timerlog
    if log is None or not log.files:
        return "there is no timerlog"
    if pos < log.files[0].start:
        return f"below the timerlog's first file {log.files[0].name}: deleted by the timer cleanup"
    if pos >= log.data_end:
        return f"past the end of the timerlog data at {log.data_end}"
    if pos % log.file_size % S.TIMERLOG_UNIT_SIZE:
        return "not on a 52-byte unit boundary"
    return "no unit there (a BLANK, a gap or damage)"


def slot_dict(index: int, slot, precision: int) -> dict:
    row = {"slotIndex": index, "fileOffset": index * S.WHEEL_SLOT_SIZE}
    row.update({name: int(slot[name]) for name in slot.dtype.names})
    row["timeMs"] = row["timeDivPrecision"] * precision
    return row


def dump_timerwheel(store: Store, which: SlotFilter = SlotFilter()) -> Iterator[dict]:
    """Every used wheel slot that `which` keeps (by its index and time) with the unit chain the dequeue would
    walk from its lastPos."""
    timer = timer_files(store)
    if timer.wheel is None:
        raise StoreError("no timerwheel file: no wheel slot to dump (dump timerlog shows the units)", timer.wheel_path)
    if which.slot is not None and not 0 <= which.slot < S.TIMER_WHEEL_SLOTS:
        raise StoreError(f"slot {which.slot} is outside the wheel (0..{S.TIMER_WHEEL_SLOTS - 1})", timer.wheel_path)
    slots = timer.wheel.slots
    used = timer.wheel.used()
    used = used[which.keep(slots["timeDivPrecision"][used].astype(np.int64) * timer.precision, used)]
    units = Units(timer)
    for i in used.tolist():
        row = slot_dict(i, slots[i], timer.precision)
        row["chain"], row["chainProblem"] = chain(timer, row["lastPos"], units)
        yield row


# ---- info ----------------------------------------------------------------------------------------------------


def pending_summary(store: Store) -> dict | None:
    """Timer messages still waiting, by delivery hour (UTC): units of slots at or after timercheck's
    lastReadTimeMs (DELETE markers aside; a ROLL unit counts at its record's TIMER_OUT_MS), and the messages
    of the timer topic's queue not filed into the wheel yet, both as the broker's timer recovery leaves them
    (units past where it truncates the timerlog are gone, their messages filed again from where it resumes the
    queue). None without timer files."""
    timer = TimerFiles(store)
    if not timer.present:
        return None
    check = timer.timercheck()
    recovery = timer_recovery(timer, check) if check is not None else None
    resume = queue_resume(store, timer, check, recovery.process_offset) if recovery is not None else None
    check = check or {}
    read_ms = check.get("lastReadTimeMs", 0)
    pos, units = timer.positions()
    if recovery is not None:
        kept = pos < recovery.process_offset
        pos, units = pos[kept], units[kept]
    due = delayed_ms(units)
    pending = (due >= read_ms) & ~(units["magic"] & S.TIMER_MAGIC_DELETE).astype(bool)
    due = due.copy()
    for i in np.flatnonzero(pending & (units["magic"] & S.TIMER_MAGIC_ROLL).astype(bool)).tolist():
        msg, _ = record_of(store, int(units[i]["offsetPy"]), int(units[i]["sizePy"]))
        if msg and (msg.get("timerOutMs") or "").isdigit():
            due[i] = int(msg["timerOutMs"])
    times = np.sort(due[pending])
    hours = []
    if len(times):
        starts = times - times % HOUR_MS
        for h in np.unique(starts).tolist():
            sel = times[starts == h]
            hours.append(
                {"hour": _iso(h), "count": len(sel), "oldest": _iso(int(sel[0])), "newest": _iso(int(sel[-1]))}
            )
    queue_max = timer_queue_end(store) or 0
    return {
        "timerlogFiles": len(timer.timerlog.files) if timer.timerlog else 0,
        "units": len(pos),
        "lastReadTimeMs": read_ms,
        "pending": int(pending.sum()),
        "oldest": _iso(int(times[0])) if len(times) else None,
        "newest": _iso(int(times[-1])) if len(times) else None,
        "notYetInWheel": max(0, queue_max - (resume.offset if resume else check.get("lastTimerQueueOffset", 0))),
        "byHour": hours,
    }


REVISE_TRIES = 20000  # reviseQueueOffset's maxCount


@dataclasses.dataclass(frozen=True)
class QueueResume:
    """Where the broker's timer enqueue resumes in rmq_sys_wheel_timer/0 after its recovery (currQueueOffset)."""

    offset: int
    from_last_unit: bool  # one past the queue offset of the last unit's record (else timercheck's lastTimerQueueOffset)
    filed_to: int | None = None  # one past the queue offset of the last unit's record, where reviseQueueOffset finds it


def queue_resume(store: Store, timer: TimerFiles, check: dict, process_offset: int) -> QueueResume:
    """TimerMessageStore.recover's currQueueOffset: reviseQueueOffset reads the record of the unit that ends at
    the recovered timerlog end (getMessageByCommitOffset: sizePy bytes at offsetPy, inside their file, decoded:
    a sizePy short of the record fails, a longer one reads it all the same), takes its queue offset (searched
    down in its queue, at most 20000 steps, for the unit naming that record), and resumes one past it; no such
    record: timercheck's lastTimerQueueOffset. At most masterTimerQueueOffset, then within the queue's
    [min, max]."""
    units = Units(timer)
    unit = units.at(process_offset - S.TIMERLOG_UNIT_SIZE)
    found = None
    if unit is not None:
        offset_py, size_py = int(unit["offsetPy"]), int(unit["sizePy"])
        try:
            _, m = store.read_message(offset_py)
        except StoreError:
            m = None
        f = store.commitlog.find(offset_py) if m is not None else None
        inside = f is not None and offset_py - f.start + size_py <= min(len(f.buf), store.commitlog.file_size)
        if inside and m.storeSize <= size_py:
            found = m.queueOffset
            for q in range(m.queueOffset, max(-1, m.queueOffset - REVISE_TRIES), -1):
                if _timer_queue_unit(store, m.queueId, q) == (offset_py, size_py):
                    found = q
                    break
    offset = found + 1 if found is not None else check["lastTimerQueueOffset"]
    offset = min(offset, check["masterTimerQueueOffset"])
    lo_hi = _timer_queue_range(store)
    if lo_hi is not None:
        offset = min(max(offset, lo_hi[0]), lo_hi[1])
    return QueueResume(offset, found is not None, found + 1 if found is not None else None)


def _timer_queue_unit(store: Store, queue_id: int, q: int) -> tuple[int, int] | None:
    """(commitLogOffset, size) of a timer queue's unit at queue offset q, None where it has none."""
    if store.rocks_queues is not None:
        unit = store.rocks_queues.unit(S.TIMER_TOPIC, queue_id, q)
        return (unit[0], unit[1]) if unit is not None else None
    cq = store.consume_queue(S.TIMER_TOPIC, queue_id)
    at = q * S.CQ_UNIT_SIZE
    for f in cq.files.files if cq.directory.is_dir() else []:
        if f.start <= at < f.start + len(f.buf) - S.CQ_UNIT_SIZE + 1:
            off, size = S.CQ_UNIT.unpack_from(f.buf, at - f.start)[:2]
            return (off, size) if off or size else None
    return None


def _timer_queue_range(store: Store) -> tuple[int, int] | None:
    rocks = store.rocks_queues
    if rocks is not None:
        q = rocks.queue(S.TIMER_TOPIC, 0)
        return (rocks.min_offset(q, store.commitlog.min_offset), q.max_offset) if q is not None else None
    cq = store.consume_queue(S.TIMER_TOPIC, 0)
    return cq.offset_range() if cq.directory.is_dir() else None


def timer_queue_end(store: Store) -> int | None:
    """One past the last queue offset of rmq_sys_wheel_timer/0, where timer messages wait to be filed; None
    without that consumequeue (the broker's recovery then has nothing to hold timercheck against either). With
    storeType=defaultRocksDB the queue is the RocksDB queue's."""
    if store.rocks_queues is not None:
        q = store.rocks_queues.queue(S.TIMER_TOPIC, 0)
        return q.max_offset if q is not None else None
    cq = store.consume_queue(S.TIMER_TOPIC, 0)
    return cq.offset_range()[1] if cq.directory.is_dir() else None


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds")


@dataclasses.dataclass
class Dangling:
    """Timer units a commitlog change leaves pointing at nothing, and the timercheck change the broker's own
    recovery would make."""

    units: list[dict]  # pending units whose record is gone: pos, file, offsetPy, slotIndex, delayedTimeMs
    slots: list[int]  # wheel slots holding them
    timercheck: dict  # field -> (before, after)


def dangling_after(store: Store, lo: int | None, hi: int | None, queue_max: int | None = None) -> Dangling | None:
    """Pending units whose offsetPy falls outside [lo, hi) once the commitlog keeps only that range (a cut
    at `hi`, or a cleanup raising the minimum to `lo`), and, with the timer queue's new end `queue_max`,
    TimerMessageStore.recover's clamp of the enqueued queue offsets. None without timer files."""
    timer = TimerFiles(store)
    if not timer.present:
        return None
    check = timer.timercheck()
    read_ms = check["lastReadTimeMs"] if check else 0
    pos, units = timer.positions()
    off = units["offsetPy"].astype(np.int64)
    due = delayed_ms(units)
    gone = np.zeros(len(off), dtype=bool)
    if lo is not None:
        gone |= off < lo
    if hi is not None:
        gone |= off >= hi
    lost = np.flatnonzero(gone & (due >= read_ms))
    size = timer.timerlog.file_size if timer.timerlog is not None else 1
    rows = [
        {
            "pos": int(pos[i]),
            "file": f"{int(pos[i]) - int(pos[i]) % size:020d}",
            "offsetPy": int(off[i]),
            "slotIndex": int(slot_index(int(due[i]), timer.precision)),
            "delayedTimeMs": int(due[i]),
        }
        for i in lost.tolist()
    ]
    changes = {}
    if check is not None and queue_max is not None:
        for name in ("lastTimerQueueOffset", "masterTimerQueueOffset"):
            if check[name] > queue_max:
                changes[name] = (check[name], queue_max)
    return Dangling(rows, sorted({r["slotIndex"] for r in rows}), changes)


def dangling_rows(d: Dangling | None, why: str) -> list[dict]:
    """One report row per dangling unit, for repair's and clean's listings."""
    if d is None:
        return []
    return [
        {
            "pos": u["pos"],
            "file": u["file"],
            "offsetPy": u["offsetPy"],
            "slotIndex": u["slotIndex"],
            "due": _iso(u["delayedTimeMs"]),
            "detail": f"pending timer unit at timerlog offset {u['pos']} (slot {u['slotIndex']}, due "
            f"{_iso(u['delayedTimeMs'])}) points at {u['offsetPy']}, {why}; left as the broker leaves "
            f"it: its dequeue drops the message",
        }
        for u in d.units
    ]
