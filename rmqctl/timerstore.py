"""The 5.x timer files of a store, read-only: `timerlog/` (a MappedFileQueue of 52-byte units), `timerwheel`
(one 32-byte slot per precision step, 14 days round) and `config/timercheck`.

Units are read the way TimerMessageStore.recoverAndRevise reads them: from the start of each file in 52-byte
steps, a BLANK magic ends the file, and a unit whose size is not 52 or whose magic has bits above 0xF ends
the data (the broker truncates the timerlog there when its recovery reaches it).

Sources (rocketmq-all-5.3.3, store/src/main/java/org/apache/rocketmq/store/): timer/TimerLog.java,
timer/TimerWheel.java, timer/Slot.java, timer/TimerCheckpoint.java, timer/TimerMessageStore.java,
config/MessageStoreConfig.java (setTimerPrecisionMs).
"""

from __future__ import annotations

import dataclasses
import mmap
import struct
from functools import cached_property
from pathlib import Path

import numpy as np

from .config import JAVA_DEFAULTS
from . import schema as S
from .store import MappedFile, MappedFileQueue, Store, check_configured_size, infer_file_size

DEFAULT_TIMERLOG_SIZE = JAVA_DEFAULTS["mappedFileSizeTimerLog"]
WHEEL_FILE_SIZE = S.TIMER_WHEEL_SLOTS * S.WHEEL_SLOT_SIZE
PRECISION_CANDIDATES = (100, 200, 500, 1000)
UNIT_FIELDS = tuple(n for n, _ in S.fixed_fields(S.TimerLogUnit))
TIMERCHECK_FIELDS = tuple(n for n, _ in S.fixed_fields(S.TimerCheckpoint))


def field_offset(schema, name: str) -> int:
    """Where a field of a fixed layout starts, from the declaration."""
    pos = 0
    for field, code in S.fixed_fields(schema):
        if field == name:
            return pos
        pos += struct.calcsize(">" + code[-1])
    raise KeyError(name)


# recovery tells a BLANK from a unit by the int at the same place in both layouts
MAGIC_AT = field_offset(S.TimerLogBlank, "magic")
assert MAGIC_AT == field_offset(S.TimerLogUnit, "magic")


def precision_ms(configured: int) -> int:
    """MessageStoreConfig.setTimerPrecisionMs: the largest of 100/200/500/1000 not above the setting."""
    chosen = PRECISION_CANDIDATES[0]
    for c in PRECISION_CANDIDATES[1:]:
        if configured < c:
            return chosen
        chosen = c
    return chosen


def magic_ok(magic):
    """TimerMessageStore.isMagicOK: only the four flag bits may be set (works on arrays too)."""
    return (magic | 0xF) == 0xF


def slot_index(time_ms, precision: int):
    """TimerWheel.getSlotIndex (works on arrays too)."""
    return time_ms // precision % S.TIMER_WHEEL_SLOTS


def delayed_ms(units: np.ndarray) -> np.ndarray:
    """The time units are filed under: currWriteTimeMs + delayedTimeOffsetMs (the roll time for ROLL units)."""
    return units["currWriteTimeMs"].astype(np.int64) + units["delayedTimeOffsetMs"].astype(np.int64)


def delta(magic):
    """How a unit moves its slot's num: a DELETE unit counts -1 (TimerMessageStore.doEnqueue)."""
    return np.where(np.asarray(magic) & S.TIMER_MAGIC_DELETE, -1, 1)


@dataclasses.dataclass
class TimerLogFile:
    """One timerlog file as the recovery walk reads it."""

    file: MappedFile
    units: np.ndarray  # TIMERLOG_UNIT_DTYPE, every unit before the end of this file's data
    blank: int | None  # position of the BLANK ending the file
    stop: int | None  # position of the first bytes that are neither a unit nor the BLANK (None: BLANK or file end)
    stop_zero: bool  # those bytes are zeros (the end of the data in the last file)

    @property
    def end(self) -> int:
        """Position after the last unit."""
        return len(self.units) * S.TIMERLOG_UNIT_SIZE


def last_unit_at(file_size: int) -> int:
    """TimerLog.getOffsetForLastUnit: where a file's last whole unit starts, room for the BLANK after it kept."""
    unit, blank = S.TIMERLOG_UNIT_SIZE, S.TIMERLOG_MIN_BLANK
    return file_size - (file_size - blank) % unit - blank - unit


class TimerLog:
    """timerlog/: files named by their start offset, all mappedFileSizeTimerLog long."""

    def __init__(self, directory: Path, file_size: int | None):
        probe = MappedFileQueue([directory], 0)
        if file_size:
            check_configured_size(probe.files, file_size, "mappedFileSizeTimerLog")
        else:
            file_size = infer_file_size([probe.files], "timerlog", "mappedFileSizeTimerLog", DEFAULT_TIMERLOG_SIZE)
        probe.file_size = file_size
        self.directory = directory
        # MappedFileQueue.doLoad (5.x) deletes a zero-length last file and loads the rest
        self.deleted_at_load = probe.files.pop() if probe.files and probe.files[-1].length == 0 else None
        self.queue = probe
        self.file_size = file_size

    @property
    def files(self) -> list[MappedFile]:
        return self.queue.files

    def unit_at(self, pos: int) -> np.void | None:
        """The 52 bytes at timerlog offset `pos` when they read as a unit (size 52, a unit's magic, not a BLANK),
        wherever they lie: the dequeue follows prevPos to any position, whether a walk reached it or not."""
        f = self.queue.find(pos) if pos >= 0 else None
        if f is None or pos - f.start + S.TIMERLOG_UNIT_SIZE > min(len(f.buf), self.file_size):
            return None
        unit = np.frombuffer(f.buf, S.TIMERLOG_UNIT_DTYPE, count=1, offset=pos - f.start)[0]
        reads = unit["size"] == S.TIMERLOG_UNIT_SIZE and magic_ok(unit["magic"]) and unit["magic"] != S.MAGIC_BLANK
        return unit if reads else None

    def last_offset_py(self, f: MappedFile) -> int | None:
        """The offsetPy of the unit in file f's last unit slot (last_unit_at), None where the slot holds none
        (a size or magic the timer's cleaner takes for "error data")."""
        at = last_unit_at(self.file_size)
        if len(f.buf) < at + S.TIMERLOG_UNIT_SIZE:
            return None
        unit = np.frombuffer(f.buf, S.TIMERLOG_UNIT_DTYPE, count=1, offset=at)[0]
        if unit["size"] != S.TIMERLOG_UNIT_SIZE or not magic_ok(unit["magic"]):
            return None
        return int(unit["offsetPy"])

    @cached_property
    def walk(self) -> list[TimerLogFile]:
        return [self.read_file(f) for f in self.files]

    def read_file(self, f: MappedFile) -> TimerLogFile:
        """One file's units, up to its BLANK or the first bytes that are not a unit."""
        buf = f.buf
        limit = min(len(buf), self.file_size)
        n = limit // S.TIMERLOG_UNIT_SIZE
        arr = np.frombuffer(buf, dtype=S.TIMERLOG_UNIT_DTYPE, count=n) if n else np.empty(0, S.TIMERLOG_UNIT_DTYPE)
        blank_at = np.flatnonzero(arr["magic"] == S.MAGIC_BLANK)
        bad = np.flatnonzero((arr["size"] != S.TIMERLOG_UNIT_SIZE) | ~magic_ok(arr["magic"]))
        first_blank = int(blank_at[0]) if len(blank_at) else n
        first_bad = int(bad[0]) if len(bad) else n
        blank = stop = None
        if first_blank <= first_bad and first_blank < n:
            count, blank = first_blank, first_blank * S.TIMERLOG_UNIT_SIZE
        elif first_bad < n:
            count, stop = first_bad, first_bad * S.TIMERLOG_UNIT_SIZE
        else:
            count = n
            tail = n * S.TIMERLOG_UNIT_SIZE
            # fewer than 52 bytes left: a BLANK, or the broker's read runs off the buffer there and stops
            if tail < limit:
                if (
                    tail + S.TIMERLOG_MIN_BLANK <= limit
                    and S.INT32.unpack_from(buf, tail + MAGIC_AT)[0] == S.MAGIC_BLANK
                ):
                    blank = tail
                else:
                    stop = tail
        stop_zero = stop is not None and not any(buf[stop:limit])
        return TimerLogFile(f, arr[:count], blank, stop, stop_zero)

    def damaged(self) -> list[TimerLogFile]:
        """Files whose units stop at bytes that are not the end of the data: not a unit, or zeros that later
        units follow."""
        out = []
        for i, w in enumerate(self.walk):
            later = any(len(x.units) or x.blank is not None for x in self.walk[i + 1 :])
            if w.stop is not None and (not w.stop_zero or later):
                out.append(w)
        return out

    def positions(self) -> tuple[np.ndarray, np.ndarray]:
        """(timerlog offset, unit) of every unit in order, to the end of each file's data."""
        if not self.walk:
            return np.empty(0, np.int64), np.empty(0, S.TIMERLOG_UNIT_DTYPE)
        pos = [w.file.start + np.arange(len(w.units), dtype=np.int64) * S.TIMERLOG_UNIT_SIZE for w in self.walk]
        return np.concatenate(pos), np.concatenate([w.units for w in self.walk])

    @cached_property
    def data_end(self) -> int:
        """The timerlog offset after the last unit: where the broker's recovery puts the flushed position."""
        for w in reversed(self.walk):
            if len(w.units) or w.blank is not None:
                return w.file.start + (w.end if w.blank is None else self.file_size)
        return self.files[0].start if self.files else 0


class TimerWheel:
    """timerwheel: TIMER_WHEEL_SLOTS slots of 32 bytes. Mapped read-only."""

    def __init__(self, path: Path):
        self.path = path
        self.length = path.stat().st_size
        self._map = None

    @property
    def loadable(self) -> bool:
        """The TimerWheel constructor takes the file: its full size, or empty (it sizes it, all zeros); another
        length throws ("Timer wheel length ... != expected") and the broker does not start."""
        return self.length in (0, WHEEL_FILE_SIZE)

    @property
    def slots(self) -> np.ndarray:
        """Every slot that fits in the file (a short file yields fewer); an empty file's, as the broker sizes
        it: every slot zero."""
        if not self.length:
            return np.zeros(S.TIMER_WHEEL_SLOTS, S.WHEEL_SLOT_DTYPE)
        if self._map is None:
            with open(self.path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        n = min(self.length, WHEEL_FILE_SIZE) // S.WHEEL_SLOT_SIZE
        return np.frombuffer(self._map, dtype=S.WHEEL_SLOT_DTYPE, count=n) if n else np.empty(0, S.WHEEL_SLOT_DTYPE)

    def used(self) -> np.ndarray:
        return used_slots(self.slots)


def used_slots(s: np.ndarray) -> np.ndarray:
    """Indexes of the slots ever written (a slot keeps its values after its time has passed)."""
    return np.flatnonzero((s["timeDivPrecision"] != 0) | (s["lastPos"] != 0) | (s["num"] != 0))


def loaded_slots(wheel: TimerWheel | None) -> np.ndarray:
    """The wheel's slots as the broker's TimerWheel opens them: a missing file is made, and an empty one sized,
    every slot zero."""
    return wheel.slots if wheel is not None else np.zeros(S.TIMER_WHEEL_SLOTS, S.WHEEL_SLOT_DTYPE)


class TimerFiles:
    """The timer files of one store; each part is None when its file does not exist."""

    def __init__(self, store: Store):
        self.store = store
        self.root = store.root
        self.timerlog_dir = self.root / "timerlog"
        self.wheel_path = self.root / "timerwheel"
        self.timercheck_path = self.root / "config" / "timercheck"
        configured = precision_ms(store.config.timerPrecisionMs)
        # without a broker.conf the data tells: the precision that files a slot's units under its time
        self.precision = configured if store.config.source else (self.infer_precision() or configured)

    @property
    def present(self) -> bool:
        return self.timerlog_dir.is_dir() or self.wheel_path.exists() or self.timercheck_path.exists()

    @cached_property
    def timerlog(self) -> TimerLog | None:
        if not self.timerlog_dir.is_dir():
            return None
        return TimerLog(self.timerlog_dir, self.store.config.mappedFileSizeTimerLog)

    @cached_property
    def wheel(self) -> TimerWheel | None:
        return TimerWheel(self.wheel_path) if self.wheel_path.is_file() else None

    def infer_precision(self) -> int | None:
        """The one precision under which the newest unit of a used slot is filed at that slot's time."""
        if self.wheel is None or self.timerlog is None:
            return None
        pos, units = self.timerlog.positions()
        slots = self.wheel.slots
        for i in self.wheel.used()[:100].tolist():
            j = int(np.searchsorted(pos, slots[i]["lastPos"]))
            if j < len(pos) and pos[j] == slots[i]["lastPos"]:
                due = int(delayed_ms(units[j : j + 1])[0])
                fits = [p for p in PRECISION_CANDIDATES if due // p == int(slots[i]["timeDivPrecision"])]
                if len(fits) == 1:
                    return fits[0]
        return None

    def timercheck(self) -> dict | None:
        """The 7 longs (zeros past a short file, as the broker's 4096-byte map reads them) and fileSize."""
        if not self.timercheck_path.is_file():
            return None
        data = self.timercheck_path.read_bytes()
        head = data[: S.TIMERCHECK_HEAD.size].ljust(S.TIMERCHECK_HEAD.size, b"\0")
        return {**dict(zip(TIMERCHECK_FIELDS, S.TIMERCHECK_HEAD.unpack(head))), "fileSize": len(data)}

    def positions(self) -> tuple[np.ndarray, np.ndarray]:
        if self.timerlog is None:
            return np.empty(0, np.int64), np.empty(0, S.TIMERLOG_UNIT_DTYPE)
        return self.timerlog.positions()


@dataclasses.dataclass
class TimerRecovery:
    """TimerMessageStore.recover at the broker's next start, as far as the timer files tell it. The walk of
    recoverAndRevise(checkTimerLog=true) from the start of the file holding lastTimerLogFlushPos - fileSize stops
    at the first bytes that are not a unit and truncates the timerlog there (`process_offset`), revising the slot
    of every unit it passes (TimerWheel.reviseSlot(time, IGNORE, pos, true): lastPos becomes the unit; a slot
    holding another time is put anew, firstPos the unit too). Where a pending slot's lastPos is past that end
    (checkPhyPos), the same revisions again from the file holding the least firstPos of those slots. `slots` is
    the wheel as those revisions leave it, `revised` the indexes of the slots they change."""

    process_offset: int
    dropped: int  # units at or past process_offset, which the truncation drops
    slots: np.ndarray
    revised: np.ndarray


def timer_recovery(timer: TimerFiles, check: dict | None) -> TimerRecovery | None:
    """The recovery of `timer`'s files (None without a timerlog, or with a wheel or a timerlog file the broker
    refuses; a missing wheel is made empty, as the broker makes it); pending slots are those at or after
    timercheck's lastReadTimeMs (the broker's currReadTimeMs is no earlier)."""
    log, wheel = timer.timerlog, timer.wheel
    if log is None or not log.files or (wheel is not None and not wheel.loadable):
        return None
    if any(f.length != log.file_size for f in log.files):
        return None  # MappedFileQueue.doLoad refuses the timerlog: the broker does not start, nor recover it
    walk = log.walk
    begin = max(0, (check["lastTimerLogFlushPos"] if check else 0) - log.file_size)
    first = max((i for i, w in enumerate(walk) if w.file.start <= begin), default=0)
    process, dropped = walk[first].file.start, 0
    for i, w in enumerate(walk[first:], first):
        if w.stop is not None:
            process = w.file.start + w.stop
            # (a unit whose head was damaged counts: its message was filed)
            dropped = _units_after(log, w) + (not w.stop_zero) + sum(len(x.units) for x in walk[i + 1 :])
            break
        process = w.file.start + (w.blank if w.blank is not None else w.end)
    pos, units = log.positions()
    before = loaded_slots(wheel)  # (the file's, read-only)
    slots = before.copy()
    walked = (pos >= walk[first].file.start) & (pos < process)
    order = [np.flatnonzero(walked)]
    read_ms = check["lastReadTimeMs"] if check else 0
    pending = slots["timeDivPrecision"] * timer.precision >= read_ms
    past = pending & (slots["lastPos"] > process) & (slots["timeDivPrecision"] != 0)
    if past.any():
        least = int(slots["firstPos"][past].min())
        if least < process:
            start = least - least % log.file_size
            order.append(np.flatnonzero((pos >= start) & (pos < process)))
    seq = np.concatenate(order)
    _revise(slots, pos[seq], delayed_ms(units[seq]), timer.precision)
    changed = np.flatnonzero((slots["lastPos"] != before["lastPos"]) | (slots["firstPos"] != before["firstPos"]))
    return TimerRecovery(process, dropped, slots, changed)


def _units_after(log: TimerLog, w: TimerLogFile) -> int:
    """The units in w's file past where its walk stopped."""
    return units_after(log, w.file, w.stop)


def units_after(log: TimerLog, f: MappedFile, at: int) -> int:
    """The units in file f after the bytes at `at` (what reads as one: size 52 and a unit's magic)."""
    n = min(len(f.buf), log.file_size) // S.TIMERLOG_UNIT_SIZE
    arr = np.frombuffer(f.buf, dtype=S.TIMERLOG_UNIT_DTYPE, count=n)[at // S.TIMERLOG_UNIT_SIZE + 1 :]
    return int(((arr["size"] == S.TIMERLOG_UNIT_SIZE) & magic_ok(arr["magic"]) & (arr["magic"] != S.MAGIC_BLANK)).sum())


def blank_too_early(log: TimerLog, w: TimerLogFile) -> bool:
    """TimerLog.append writes its BLANK only where a unit and the BLANK no longer fit: one with room for another
    unit after it is damage (a unit's magic overwritten), and the walk skips the rest of its file."""
    return w.blank is not None and w.blank + S.TIMERLOG_UNIT_SIZE + S.TIMERLOG_MIN_BLANK <= log.file_size


def _revise(slots: np.ndarray, pos: np.ndarray, due: np.ndarray, precision: int):
    """TimerWheel.reviseSlot(due, IGNORE, pos, true) for each unit in order, on `slots`: the last unit of a
    slot's index sets its lastPos; its firstPos stays where the slot held that time throughout, else is the
    first unit of the last run of units of that time."""
    if not len(pos):
        return
    index, time = slot_index(due, precision), due // precision
    order = np.lexsort((np.arange(len(pos)), index))
    index, time, pos = index[order], time[order], pos[order]
    starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
    ends = np.r_[starts[1:], len(index)] - 1
    last_time = np.repeat(time[ends], ends - starts + 1)
    other = np.where(time != last_time, np.arange(len(index)), -1)
    last_other = np.maximum.reduceat(other, starts)
    k = index[starts]
    same = (last_other < 0) & (slots["timeDivPrecision"][k] == time[ends])
    run = np.where(last_other >= 0, last_other + 1, starts)
    # (a slot put anew keeps its num and magic: the three-argument putSlot writes time, firstPos, lastPos only)
    slots["firstPos"][k] = np.where(same, slots["firstPos"][k], pos[run])
    slots["timeDivPrecision"][k] = time[ends]
    slots["lastPos"][k] = pos[ends]
