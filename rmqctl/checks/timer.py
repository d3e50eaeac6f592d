"""verify's timer checks: the timerlog files, every pending unit against the commitlog record it names, the
wheel's slot chains and timercheck, a window of records at a time (see views/timer.py for the layout)."""

from __future__ import annotations

import numpy as np

from .. import schema as S
from ..findings import TIMER, Findings
from ..rules import record_expired
from ..store import Store
from ..timerstore import (
    TimerFiles,
    TimerRecovery,
    blank_too_early,
    delayed_ms,
    delta,
    field_offset,
    loaded_slots,
    slot_index,
    timer_recovery,
    units_after,
    used_slots,
)
from ..views.timer import QueueResume, Units, _iso, chain, queue_resume, timer_queue_end
from .context import Context, Records


class TimerCheck:
    """verify's timer checks on a run's context and its commitlog records: `begin` (the files), `window` per
    window of records (checks/windows.py), `finish` (the wheel's chains, timercheck); each returns its
    findings. A store without timer files, or with the empty wheel and timercheck of a 5.x broker never sent
    a timer message, has none."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.timer = TimerFiles(ctx.store)
        if not self.timer.present:
            return
        self.check = self.timer.timercheck()
        self.read_ms = self.check["lastReadTimeMs"] if self.check else 0
        # the broker's timer recovery at its next start: the timerlog past process_offset is truncated, the
        # slots it walks revised, and the enqueue resumes where `resume` says
        self.recovery = timer_recovery(self.timer, self.check)
        self.resume = (
            queue_resume(ctx.store, self.timer, self.check, self.recovery.process_offset)
            if self.recovery is not None and self.check is not None
            else None
        )
        self.units = Units(self.timer)
        if self.recovery is not None:  # the units the truncation leaves
            kept = self.units.pos < self.recovery.process_offset
            self.units.pos, self.units.units = self.units.pos[kept], self.units.units[kept]
            self.units.limit = self.recovery.process_offset
        self.offsets = self.units.units["offsetPy"].astype(np.int64) if len(self.units.pos) else np.zeros(0, np.int64)

    def begin(self) -> Findings:
        found = Findings()
        if self.timer.present:
            _check_files(found, self.timer, self.check, self.recovery, self.resume)
        return found

    def window(self, w) -> Findings:
        """The units pointing into window `w` against its records."""
        found = Findings()
        if self.timer.present and len(self.offsets):
            mine = w.holds(self.offsets)
            if mine.any():
                _check_units(
                    found, self.ctx, w.rec, self.timer, self.units.pos[mine], self.units.units[mine], self.read_ms
                )
        return found

    def finish(self) -> Findings:
        found = Findings()
        if not self.timer.present:
            return found
        _check_slots(found, self.timer, self.units, self.read_ms, self.recovery, self.resume)
        if self.check is not None:
            _check_timercheck(found, self.ctx.store, self.timer, self.check, self.resume)
        return found


def _rel(timer: TimerFiles, pos: int) -> tuple[str, int]:
    size = timer.timerlog.file_size
    return f"timerlog/{pos - pos % size:020d}", pos % size


def _refiled(resume: QueueResume | None) -> str | None:
    """What the broker's recovery does for timer messages whose units are gone, when it files them again."""
    if resume is None or not resume.from_last_unit:
        return None
    return (
        f"the broker's recovery resumes the timer queue at {resume.offset}, one past the record of the last "
        "unit left, and files the messages from there again"
    )


def _check_files(
    found: Findings, timer: TimerFiles, check: dict | None, recovery: TimerRecovery | None, resume: QueueResume | None
):
    wheel = timer.wheel
    if wheel is None:
        found.add(
            TIMER,
            "timer-file",
            "warning",
            timer.wheel_path,
            None,
            None,
            "no timerwheel: the broker makes an empty one, and its recovery files again only the units its "
            "timerlog walk passes (from the file before the one holding lastTimerLogFlushPos): a pending message "
            "filed earlier is never delivered (the slots after recovery follow)",
        )
    elif not wheel.loadable:
        found.add(
            TIMER,
            "timer-file",
            "error",
            timer.wheel_path,
            None,
            None,
            f"timerwheel is {wheel.length} bytes, not {S.TIMER_WHEEL_SLOTS * S.WHEEL_SLOT_SIZE} (1209600 slots of "
            f"32): a 5.3.3 broker refuses to start (Timer wheel length != expected)",
        )
    if check is None and timer.timerlog is not None and timer.timerlog.data_end > 0:
        found.add(
            TIMER,
            "timercheck-behind",
            "warning",
            timer.timercheck_path,
            None,
            None,
            "no timercheck: the broker's checkpoint starts at zeros, so its recovery resumes the timer queue at its "
            "first offset and files again every timer message the timerlog holds already: delivered twice",
        )
    if check is not None and check["fileSize"] != S.TIMERCHECK_FILE_SIZE:
        found.add(
            TIMER,
            "timer-file",
            "warning",
            timer.timercheck_path,
            None,
            None,
            f"timercheck is {check['fileSize']} bytes; the broker maps {S.TIMERCHECK_FILE_SIZE}",
        )
    log = timer.timerlog
    if log is None:
        return
    _check_timerlog_files(found, log)
    _check_timerlog_units(found, log, check, recovery, resume)


def _check_timerlog_files(found: Findings, log):
    """The timerlog's file names, sizes and contiguity (its MappedFileQueue's load)."""
    size = log.file_size
    problems = [(p, "not a 20-digit offset name: the broker's timerlog load fails on it") for p in log.queue.strays]
    problems += [
        (f.path, f"file is {f.length} bytes, not mappedFileSizeTimerLog {size}: the broker's timerlog load refuses it")
        for f in log.files
        if f.length != size
    ]
    problems += [
        (b.path, f"timerlog {b.name} does not follow {a.name} (which covers {a.start}..{a.start + size})")
        for a, b in zip(log.files, log.files[1:])
        if b.start != a.start + size
    ]
    for path, detail in problems:
        found.add(TIMER, "timer-file", "error", path, None, None, detail)
    if log.deleted_at_load is not None:
        found.add(
            TIMER,
            "timer-file",
            "info",
            log.deleted_at_load.path,
            None,
            None,
            "0 bytes, the last file: the broker's load deletes it (MappedFileQueue.doLoad) and reads the files before",
        )


def _check_timerlog_units(
    found: Findings, log, check: dict | None, recovery: TimerRecovery | None, resume: QueueResume | None
):
    """Where the timerlog's walk stops before the end of its data, and whether the broker's recovery sees it
    (timerstore.timer_recovery): it truncates there, and files again the messages of the units it drops when
    it resumes the timer queue from the last unit left (views/timer.queue_resume)."""
    for w in log.walk:
        if blank_too_early(log, w):
            at = w.file.start + w.blank
            skipped = units_after(log, w.file, w.blank)
            found.add(
                TIMER,
                "timerlog-unit",
                "error" if skipped else "warning",
                w.file.path,
                w.blank,
                None,
                f"a BLANK at timerlog offset {at} with room for another unit after it: the broker writes one only "
                f"where a unit no longer fits (a unit's magic overwritten?); the recovery's walk skips the rest of "
                f"the file, {skipped} unit(s)",
            )
    for w in log.damaged():
        at = w.file.start + w.stop
        if recovery is not None and at > recovery.process_offset:
            continue  # in what the truncation at the first stop drops
        later = sum(len(x.units) for x in log.walk[log.walk.index(w) + 1 :])
        what = "zero bytes" if w.stop_zero else "bytes that are not a timerlog unit (size 52, magic 0..15)"
        refiled = _refiled(resume)
        if recovery is not None and recovery.process_offset == at:
            note = f"the broker's recovery stops here and truncates the timerlog at {at}, dropping {recovery.dropped} unit(s)"
            note += f"; {refiled}" if refiled else " and their timer messages"
        else:
            note = (
                f"the broker's recovery starts after this file and does not see it; readers stop here, and the "
                f"{later} unit(s) after it are still read through their slots' chains"
            )
        found.add(
            TIMER,
            "timerlog-unit",
            "warning" if refiled and recovery is not None and recovery.process_offset == at else "error",
            w.file.path,
            w.stop,
            None,
            f"{what} at timerlog offset {at}, before the end of the data and with no BLANK; {note}",
        )


def _check_units(
    found: Findings, ctx: Context, rec: Records, timer: TimerFiles, pos: np.ndarray, units: np.ndarray, read_ms: int
):
    """Each unit's commitlog reference against the record table: a record starts there, of sizePy bytes,
    in the timer topic; and whether the broker's recovery cut would take it."""
    if not len(pos):
        return
    off = units["offsetPy"].astype(np.int64)
    size = units["sizePy"].astype(np.int64)
    due = delayed_ms(units)
    idx = rec.find(off) if len(rec.off) else np.full(len(off), -1)
    timer_topic = rec.topics.index(S.TIMER_TOPIC) if S.TIMER_TOPIC in rec.topics else -2
    hit = idx >= 0  # a record starts at the unit's offsetPy
    safe = np.where(hit, idx, 0)
    wrong = (
        ~hit
        | (rec.size[safe] != size if len(rec.off) else True)
        | (rec.topic[safe] != timer_topic if len(rec.off) else True)
    )
    cut = ctx.recovery_cut
    doomed = hit & (off >= cut) if cut is not None else np.zeros(len(off), bool)
    for i in np.flatnonzero((wrong | doomed) & ctx.in_range(off)).tolist():
        o, p, pending = int(off[i]), int(pos[i]), bool(due[i] >= read_ms)
        file, at = _rel(timer, p)
        state = (
            "pending: the broker's dequeue reads it at " + _iso(int(due[i]))
            if pending
            else "its slot is done (before lastReadTimeMs): the broker never reads it again"
        )
        if not hit[i]:
            if record_expired(o, ctx.min_offset):
                if not pending:
                    continue  # cleaned up after delivery: normal
                what = f"below the commitlog's first offset {ctx.min_offset} (its file was cleaned up)"
            elif o >= ctx.logical_end:
                what = f"past the end of the commitlog data at {ctx.logical_end}"
            else:
                cause = ctx.damage.cause(o)
                j = rec.containing(o)
                what = (
                    "not the start of a record"
                    + (f" (inside the record at {int(rec.off[j])})" if j >= 0 else "")
                    + (f"; a direct consequence of {cause}" if cause else "")
                )
            detail = f"unit's offsetPy {o} (sizePy {int(size[i])}) is {what}; {state}"
            if pending:
                detail += ", finds no record and drops the timer message"
        elif doomed[i] and not wrong[i]:
            detail = (
                f"unit points at the record at {o}, which the broker's recovery cuts off (it truncates the "
                f"commitlog at {cut}); then the unit points past the end; {state}"
            )
        else:
            k = int(idx[i])
            problems = []
            if int(rec.size[k]) != int(size[i]):
                problems.append(f"sizePy is {int(size[i])} but the record there is {int(rec.size[k])} bytes")
            if int(rec.topic[k]) != timer_topic:
                problems.append(f"the record there is of topic {rec.topics[int(rec.topic[k])]}, not {S.TIMER_TOPIC}")
            detail = f"unit's offsetPy {o}: " + "; ".join(problems) + f"; {state}"
        found.add(TIMER, "timer-reference", "warning" if pending else "info", file, at, o, detail)


def _check_slots(
    found: Findings,
    timer: TimerFiles,
    units: Units,
    read_ms: int,
    recovery: TimerRecovery | None,
    resume: QueueResume | None,
):
    """Each used slot as the broker's recovery leaves it (its revisions: timerstore.timer_recovery): in its own
    place, its chain well formed (units of this slot, prevPos strictly backwards to -1, within the timerlog
    the recovery keeps), firstPos its oldest unit, num the chain's count. Slots whose time has passed are never
    read again: their findings are info."""
    wheel = timer.wheel
    if wheel is None and recovery is None:
        return
    before = loaded_slots(wheel)
    slots = recovery.slots if recovery is not None else before
    precision = timer.precision
    wheel_path = "timerwheel"
    revised = set(recovery.revised.tolist()) if recovery is not None else set()
    for i in sorted(revised):
        _revised_slot(found, timer, units, i, before[i], slots[i], read_ms)
    emptied: list[int] = []
    for i in sorted(set(used_slots(before).tolist()) | revised):
        s = slots[i]
        time_ms = int(s["timeDivPrecision"]) * precision
        pending = time_ms >= read_ms
        severity = "error" if pending else "info"
        when = f"slot {i} ({_iso(time_ms)})" + ("" if pending else ", already done")
        if int(slot_index(time_ms, precision)) != i:
            _chain_finding(
                found,
                severity,
                wheel_path,
                i * S.WHEEL_SLOT_SIZE,
                f"{when} holds time {time_ms}, whose slot is {int(slot_index(time_ms, precision))}: the broker never "
                f"finds it",
            )
            continue
        positions, problem = chain(timer, int(s["lastPos"]), units)
        if problem and pending and not positions and recovery is not None and s["lastPos"] >= recovery.process_offset:
            emptied.append(i)  # every unit of the slot is in what the truncation drops
            continue
        if problem:
            # at the unit holding the bad prevPos, or at the slot when lastPos itself is bad
            file, at = _rel(timer, positions[-1]) if positions else (wheel_path, i * S.WHEEL_SLOT_SIZE)
            _chain_finding(
                found,
                severity,
                file,
                at,
                f"{when}: {problem}; the dequeue stops there and the slot's older units are never delivered"
                if pending
                else f"{when}: {problem}",
            )
            continue
        _check_chain(found, timer, units, (i, s), positions, when, pending)
    if emptied:
        refiled = _refiled(resume)
        _chain_finding(
            found,
            "warning" if refiled else "error",
            wheel_path,
            emptied[0] * S.WHEEL_SLOT_SIZE,
            f"{len(emptied)} pending slot(s) (slot {emptied[0]} first) have no unit left below where the broker's "
            f"recovery truncates the timerlog ({recovery.process_offset}): the dequeue reads none of them; "
            + (refiled if refiled else "their messages are never delivered"),
        )


def _revised_slot(found: Findings, timer: TimerFiles, units: Units, i: int, was, after, read_ms: int):
    """A slot the recovery revises: its lastPos moves to the newest unit of its time the walk passes. Where it
    moves back past units of the slot that the walk did not reach (after damage in their file), those drop out
    of the chain the dequeue reads: their messages are lost, if the slot is still to be read."""
    old, new = int(was["lastPos"]), int(after["lastPos"])
    detail = f"slot {i}: lastPos is {old}; the broker's recovery revises it to {new}, the slot's newest unit its timerlog walk passes"
    positions, _ = (
        chain(timer, old, units) if old > new and was["timeDivPrecision"] == after["timeDivPrecision"] else ([], None)
    )
    dropped = [p for p in positions if p > new]
    pending = int(after["timeDivPrecision"]) * timer.precision >= read_ms
    if dropped and pending:
        detail += (
            f": the {len(dropped)} unit(s) of the slot after it (the newest at {dropped[0]}) drop out of the chain "
            "the dequeue reads, and their messages are never delivered"
        )
    _chain_finding(found, "error" if dropped and pending else "info", "timerwheel", i * S.WHEEL_SLOT_SIZE, detail)


def _chain_finding(found: Findings, severity: str, file, at: int, detail: str) -> None:
    """A slot whose chain of units the broker's dequeue does not walk as the slot says, at the slot or the unit."""
    found.add(TIMER, "timer-chain", severity, file, at, None, detail)


def _check_chain(found: Findings, timer: TimerFiles, units: Units, slot, positions: list, when: str, pending: bool):
    """The well-formed chain of a slot (its index and itself, as the broker's recovery leaves it; its units at
    `positions`) against the slot: each unit filed for the slot's time, firstPos its oldest unit, num its count."""
    precision, wheel_path, (i, s) = timer.precision, "timerwheel", slot
    severity = "error" if pending else "info"
    chain_units = np.array([units.at(p) for p in positions], dtype=S.TIMERLOG_UNIT_DTYPE)
    foreign = [
        p
        for p, u in zip(positions, chain_units)
        if (int(u["currWriteTimeMs"]) + int(u["delayedTimeOffsetMs"])) // precision != int(s["timeDivPrecision"])
    ]
    if foreign:
        file, at = _rel(timer, foreign[0])
        _chain_finding(
            found,
            severity,
            file,
            at,
            f"{when}: the unit at {foreign[0]} on its chain is filed for another time"
            + (f" ({len(foreign)} such units)" if len(foreign) > 1 else ""),
        )
    if positions and positions[-1] != int(s["firstPos"]):
        _chain_finding(
            found,
            "warning" if pending else "info",
            wheel_path,
            i * S.WHEEL_SLOT_SIZE,
            f"{when}: firstPos is {int(s['firstPos'])} but its chain ends at {positions[-1]}",
        )
    count = int(delta(chain_units["magic"]).sum()) if len(chain_units) else 0
    if pending and count != int(s["num"]):
        found.add(
            TIMER,
            "timer-slot-count",
            "warning",
            wheel_path,
            i * S.WHEEL_SLOT_SIZE,
            None,
            f"{when}: num is {int(s['num'])} but its chain holds {count} (DELETE units count -1): the broker's "
            f"timer metrics and congestion counts are off by {int(s['num']) - count}",
        )


def _check_timercheck(found: Findings, store: Store, timer: TimerFiles, check: dict, resume: QueueResume | None):
    """timercheck against the data: the flushed timerlog position and the enqueued queue offset."""
    path = timer.timercheck_path
    end = timer.timerlog.data_end if timer.timerlog is not None else 0
    flushed = check["lastTimerLogFlushPos"]
    if flushed > end:
        refiled = _refiled(resume)
        fate = (
            refiled
            if refiled
            else "the messages they filed are never delivered (the broker's recovery resumes the timer queue at "
            "timercheck's lastTimerQueueOffset, past them)"
        )
        found.add(
            TIMER,
            "timercheck-ahead",
            "warning" if refiled else "error",
            path,
            field_offset(S.TimerCheckpoint, "lastTimerLogFlushPos"),
            None,
            f"lastTimerLogFlushPos {flushed} is past the end of the timerlog data at {end}: units the broker "
            f"flushed are gone; {fate}",
        )
    if resume is not None and resume.filed_to is not None and resume.offset < resume.filed_to:
        found.add(
            TIMER,
            "timercheck-behind",
            "warning",
            path,
            field_offset(S.TimerCheckpoint, "masterTimerQueueOffset"),
            None,
            f"the broker's recovery resumes the timer queue at {resume.offset} (masterTimerQueueOffset "
            f"{check['masterTimerQueueOffset']} caps it), below {resume.filed_to}, one past the record of the last "
            f"timerlog unit: the timer messages of queue offsets {resume.offset}..{resume.filed_to - 1} are filed "
            "again, and delivered twice",
        )
    queue_max = timer_queue_end(store)
    enqueued = check["lastTimerQueueOffset"]
    if queue_max is not None and enqueued > queue_max:
        found.add(
            TIMER,
            "timercheck-ahead",
            "error",
            path,
            field_offset(S.TimerCheckpoint, "lastTimerQueueOffset"),
            None,
            f"lastTimerQueueOffset {enqueued} is past the end of consumequeue {S.TIMER_TOPIC}/0 at {queue_max}: "
            f"the checkpoint counts timer messages the store no longer holds (the broker's recovery lowers it to "
            f"{queue_max})",
        )


# ---- after a commitlog cut or cleanup ------------------------------------------------------------------------
