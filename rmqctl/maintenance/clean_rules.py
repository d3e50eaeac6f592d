"""The broker's cleanup rules, decided without touching the store: when a pass fires (deleteWhen, disk
ratios, manual), which commitlog, consumequeue and index files it deletes and in what order, and how each
queue's minimum offset moves (correctMinOffset). Everything here works on what maintenance/clean.py loaded from the
store and on the disk figures its meter reads; maintenance/clean.py applies the decisions (see its docstring for the
broker sources).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Callable

import numpy as np

from .. import schema as S
from ..config import BrokerConfig
from ..errors import UsageError
from ..javacompat import TIME_FORMS, epoch_ms, java_split, parse_int, parse_time
from ..rules import CorrectMinOffsetFailed, corrected_min_logic


MAX_MANUAL_DELETE_FILE_TIMES = 20  # CleanCommitLogService: what executeDeleteFilesManually arms
DELETE_FILES_BATCH_MAX_49 = 10  # MappedFileQueue.DELETE_FILES_BATCH_MAX, hard-coded in 4.x
CLEAN_RESOURCE_INTERVAL_MS = 10_000  # MessageStoreConfig.cleanResourceInterval: the clean task's period
_DEFAULTS = BrokerConfig()


FILE_KINDS = ("commitlog", "consumequeue", "index", "timerlog")  # what the cleaners delete, in a pass's order


class DeleteWhenError(UsageError):
    """deleteWhen that Integer.parseInt rejects: the broker's commitlog cleaner throws on every run."""


def java_parse_int(text: str) -> int:
    """Integer.parseInt (javacompat.parse_int), raising ValueError with Java's message where Java throws."""
    value = parse_int(text)
    if value is None:
        raise ValueError(f'For input string: "{text}"')
    return value


def is_time_to_do(when: str, hour: int) -> bool:
    """UtilAll.isItTimeToDo: the first token equal to the hour wins; a token that does not parse before
    that throws (NumberFormatException), and the broker's cleaner does nothing in that run."""
    for token in java_split(when, ";"):
        try:
            value = java_parse_int(token)
        except ValueError as e:
            raise DeleteWhenError(
                f"deleteWhen={when!r}: Integer.parseInt fails ({e}) before any token names hour {hour}; the "
                "broker's commitlog cleaner throws NumberFormatException in that hour's runs and deletes nothing"
            ) from None
        if value == hour:
            return True
    return False


def check_delete_when(when: str):
    """A deleteWhen is sound only if every token parses: otherwise every hour not matched by a token before
    the bad one throws. Raises DeleteWhenError naming those hours."""
    throws = []
    for hour in range(24):
        try:
            is_time_to_do(when, hour)
        except DeleteWhenError as e:
            throws.append(hour)
            why = str(e).split(" before any token")[0]
    if throws:
        named = (
            "every hour"
            if len(throws) == 24
            else "every hour but " + ", ".join(f"{h:02d}" for h in range(24) if h not in throws)
        )
        raise DeleteWhenError(
            f"{why}: the broker's commitlog cleaner throws NumberFormatException at {named} and deletes "
            "nothing then (disk full or not)"
        )


def java_disk_ratio(total: int, free: int, usable: int) -> float:
    """UtilAll.getDiskPartitionSpaceUsedPercent (4.9.2+, the df algorithm): used = total - free,
    ceil(100 * used / (used + usable)) / 100; -1 when the file system reports no size."""
    if total <= 0:
        return -1.0
    used = total - free
    entire = used + usable
    if entire == 0:
        return -1.0  # ArithmeticException, caught: -1
    percent = used * 100 // entire + (1 if used * 100 % entire else 0)
    return percent / 100.0


@dataclasses.dataclass
class CleanSettings:
    """The settings the cleaner reads, with RocketMQ's defaults (BrokerConfig's). Ratios are percents as in
    broker.conf."""

    version: int = 5
    deleteWhen: str = _DEFAULTS.deleteWhen
    fileReservedTime: int = _DEFAULTS.fileReservedTime
    diskMaxUsedSpaceRatio: int = _DEFAULTS.diskMaxUsedSpaceRatio
    diskSpaceCleanForciblyRatio: int = _DEFAULTS.diskSpaceCleanForciblyRatio
    diskSpaceWarningLevelRatio: int = _DEFAULTS.diskSpaceWarningLevelRatio
    cleanFileForciblyEnable: bool = _DEFAULTS.cleanFileForciblyEnable
    deleteFileBatchMax: int = _DEFAULTS.deleteFileBatchMax
    deleteCommitLogFilesInterval: int = _DEFAULTS.deleteCommitLogFilesInterval
    notes: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def from_config(cls, cfg: BrokerConfig, version: int, **overrides) -> "CleanSettings":
        """broker.conf values, then explicit overrides (None = not given), under `version`'s rules (4 or 5: the
        store's, Store.version). 4.9 has no
        diskSpace*Ratio / deleteFileBatchMax settings: from broker.conf they are ignored (and said so); given
        as options, the thresholds stand for 4.9's -Drocketmq.broker.diskSpace*Ratio system properties."""
        s = cls(version=version)
        for name in (
            "deleteWhen",
            "fileReservedTime",
            "diskMaxUsedSpaceRatio",
            "diskSpaceCleanForciblyRatio",
            "diskSpaceWarningLevelRatio",
            "cleanFileForciblyEnable",
            "deleteFileBatchMax",
            "deleteCommitLogFilesInterval",
        ):
            setattr(s, name, getattr(cfg, name))
        if version == 4:
            s.deleteWhen = cfg.untrimmed.get("deleteWhen", s.deleteWhen)  # (4.9.7's properties2Object trims nothing)
            for name in ("diskSpaceCleanForciblyRatio", "diskSpaceWarningLevelRatio", "deleteFileBatchMax"):
                if getattr(cfg, name) != getattr(_DEFAULTS, name):
                    s.notes.append(f"{name}={getattr(cfg, name)} in the broker config is not a 4.9 setting; ignored")
                setattr(s, name, getattr(_DEFAULTS, name))
        for name, value in overrides.items():
            if value is None:
                continue
            if not hasattr(s, name) or name in ("version", "notes"):
                raise UsageError(f"unknown clean setting {name}")
            if version == 4 and name == "deleteFileBatchMax":
                raise UsageError("deleteFileBatchMax is a 5.x setting; RocketMQ 4.9 deletes at most 10 files per pass")
            setattr(s, name, value)
            if version == 4 and name in ("diskSpaceCleanForciblyRatio", "diskSpaceWarningLevelRatio"):
                s.notes.append(f"{name}={value}% applied as 4.9's -Drocketmq.broker.{name}={value / 100} (no clamp)")
        return s

    # The values the cleaner compares with (doubles, as Java computes them).
    @property
    def max_used_ratio(self) -> float:
        """getDiskMaxUsedSpaceRatio() clamps to [10, 95], then / 100.0 (both versions)."""
        return min(max(self.diskMaxUsedSpaceRatio, 10), 95) / 100.0

    @property
    def forcibly_ratio(self) -> float:
        r = self.diskSpaceCleanForciblyRatio / 100.0
        return r if self.version == 4 else min(max(r, 0.30), 0.85)

    @property
    def warning_ratio(self) -> float:
        r = self.diskSpaceWarningLevelRatio / 100.0
        return r if self.version == 4 else min(max(r, 0.35), 0.90)

    @property
    def batch_max(self) -> int:
        """How many files one pass may delete; the broker checks `deleted >= max` after each deletion, so
        anything below 1 means 1."""
        limit = DELETE_FILES_BATCH_MAX_49 if self.version == 4 else self.deleteFileBatchMax
        return max(limit, 1)

    @property
    def reserved_ms(self) -> int:
        return self.fileReservedTime * 60 * 60 * 1000

    def as_dict(self) -> dict:
        return {
            "rocketmqVersion": self.version,
            "deleteWhen": self.deleteWhen,
            "fileReservedTime": self.fileReservedTime,
            "diskMaxUsedSpaceRatio": self.max_used_ratio,
            "diskSpaceCleanForciblyRatio": self.forcibly_ratio,
            "diskSpaceWarningLevelRatio": self.warning_ratio,
            "cleanFileForciblyEnable": self.cleanFileForciblyEnable,
            "deleteFileBatchMax": self.batch_max,
        }


@dataclasses.dataclass
class Clock:
    """The broker's clock: System.currentTimeMillis for file ages and Calendar.HOUR_OF_DAY in the JVM's
    zone for deleteWhen. In a plan, pass k runs at start + (k-1) x cleanResourceInterval, as the broker's timer
    would; `live` (an applied run, whose passes run one after the other at once) reads the real clock at each
    pass instead, so no pass is given a time it did not run at."""

    start: dt.datetime  # timezone-aware; its zone is the "local" zone of the hour
    live: bool = False

    @classmethod
    def parse(cls, text: str | None, live: bool = False) -> "Clock":
        """A time as every time option takes it (javacompat.parse_time; its offset is the zone of the hour).
        None: now, and with `live` the time each pass runs."""
        if text is None:
            return cls(dt.datetime.now().astimezone(), live)
        when = parse_time(text)
        if when is None:
            raise UsageError(f"--at {text!r} is not a time: {TIME_FORMS}")
        return cls(when)

    def at(self, pass_no: int) -> tuple[int, int, str]:
        """(epoch ms, local hour, ISO text) of pass `pass_no` (1-based)."""
        when = (
            dt.datetime.now().astimezone()
            if self.live
            else self.start + dt.timedelta(milliseconds=(pass_no - 1) * CLEAN_RESOURCE_INTERVAL_MS)
        )
        return epoch_ms(when), when.hour, when.isoformat(timespec="milliseconds")


@dataclasses.dataclass
class DiskUsage:
    path: str
    ratio: float  # as the broker reads it (rounded up to a whole percent), -1 when it cannot measure
    totalBytes: int = 0
    usedBytes: int = 0
    usableBytes: int = 0


@dataclasses.dataclass
class SpaceCheck:
    """isSpaceToDelete: what it measured and what it concluded."""

    commitLogRatio: float  # the minimum over the commitlog directories
    logicsRatio: float | None  # None when 5.x returned before measuring the consumequeue path
    spaceToDelete: bool
    cleanImmediately: bool
    diskFull: bool  # the running flag after the check: the broker rejects writes while it is set
    reasons: list[str]
    disks: list[DiskUsage]


def space_check(
    settings: CleanSettings, commitlog_disks: list[DiskUsage], measure_logics: Callable[[], DiskUsage], disk_full: bool
) -> SpaceCheck:
    """CleanCommitLogService.isSpaceToDelete of 4.9.7 and of 5.x (replicasPerDiskPartition = 1)."""
    warning, forcibly, limit = settings.warning_ratio, settings.forcibly_ratio, settings.max_used_ratio
    reasons: list[str] = []
    physic = 100.0
    for d in commitlog_disks:
        physic = min(physic, d.ratio)
    disks = list(commitlog_disks)
    clean_immediately = False

    def assess(name: str, ratio: float) -> str:
        """The warning / forcibly / ok ladder both versions apply to each path."""
        nonlocal clean_immediately, disk_full
        if ratio > warning:
            disk_full, clean_immediately = True, True
            reasons.append(
                f"{name} disk {ratio:.2f} > {warning:.2f} (diskSpaceWarningLevelRatio): disk marked full, "
                "the broker rejects writes; clean immediately"
            )
            return "warning"
        if ratio > forcibly:
            clean_immediately = True
            reasons.append(f"{name} disk {ratio:.2f} > {forcibly:.2f} (diskSpaceCleanForciblyRatio): clean immediately")
            return "forcibly"
        disk_full = False
        return "ok"

    def over_limit(name: str, ratio: float) -> bool:
        if ratio < 0 or ratio > limit:
            reasons.append(
                f"{name} disk {ratio:.2f} > {limit:.2f} (diskMaxUsedSpaceRatio)"
                if ratio >= 0
                else f"{name} disk cannot be measured (-1)"
            )
            return True
        return False

    if settings.version == 4:
        assess("commitlog", physic)
        if over_limit("commitlog", physic):
            return SpaceCheck(physic, None, True, clean_immediately, disk_full, reasons, disks)
        logics = measure_logics()
        disks.append(logics)
        assess("consumequeue", logics.ratio)
        spacefull = over_limit("consumequeue", logics.ratio)
        return SpaceCheck(physic, logics.ratio, spacefull, clean_immediately, disk_full, reasons, disks)

    if assess("commitlog", physic) != "ok":
        return SpaceCheck(physic, None, True, clean_immediately, disk_full, reasons, disks)
    logics = measure_logics()
    disks.append(logics)
    if assess("consumequeue", logics.ratio) != "ok":
        return SpaceCheck(physic, logics.ratio, True, clean_immediately, disk_full, reasons, disks)
    spacefull = over_limit("commitlog", physic) or over_limit("consumequeue", logics.ratio)
    return SpaceCheck(physic, logics.ratio, spacefull, clean_immediately, disk_full, reasons, disks)


@dataclasses.dataclass
class FileDecision:
    """One file the cleaner looked at in one pass, what it does with it, and why.

    why: age | forced | below-min-offset (delete); not-expired | batch-limit | last-file | protected |
    unsafe-path | unreadable (keep)."""

    passNo: int
    kind: str  # commitlog | consumequeue | index
    file: str  # relative to the store root when inside it
    path: Path
    action: str  # delete | keep
    why: str
    detail: str
    blocks: int = 0
    extra: dict = dataclasses.field(default_factory=dict)

    def row(self) -> dict:
        named = {name: getattr(self, name) for name in ("kind", "file", "action", "why", "detail")}
        return {"pass": self.passNo, **named, **self.extra}


@dataclasses.dataclass
class PassResult:
    passNo: int
    at: str
    hour: int
    timeUp: bool | None  # None: deleteWhen threw
    space: SpaceCheck | None  # None: the pass ended at deleteWhen
    manual: bool
    cleanAtOnce: bool
    decisions: list[FileDecision]
    minPhyOffsetAfter: int
    consumeQueueRan: bool
    cqMinOffsetsAfter: dict[str, int]
    brokerException: str | None = None

    @property
    def fired(self) -> bool:
        return bool(self.timeUp or (self.space and self.space.spaceToDelete) or self.manual)

    def deleted(self, kind: str | None = None) -> list[FileDecision]:
        return [d for d in self.decisions if d.action == "delete" and (kind is None or d.kind == kind)]

    def triggers(self) -> list[str]:
        out = []
        if self.timeUp:
            out.append("time")
        if self.space and self.space.spaceToDelete:
            out.append("space")
        if self.cleanAtOnce:
            out.append("forced")
        if self.manual:
            out.append("manual")
        return out

    def as_dict(self) -> dict:
        def space(name: str, none=None):  # what the space check found; `none` when the pass ended at deleteWhen
            return none if self.space is None else getattr(self.space, name)

        return {
            "pass": self.passNo,
            "at": self.at,
            "hour": self.hour,
            "timeUp": self.timeUp,
            "spaceToDelete": space("spaceToDelete"),
            "manual": self.manual,
            "cleanImmediately": space("cleanImmediately"),
            "cleanAtOnce": self.cleanAtOnce,
            "diskFull": space("diskFull"),
            "commitLogRatio": space("commitLogRatio"),
            "logicsRatio": space("logicsRatio"),
            "reasons": space("reasons", []),
            "disks": [dataclasses.asdict(d) for d in space("disks", [])],
            "deleted": {k: [d.file for d in self.deleted(k)] for k in FILE_KINDS},
            "minPhyOffsetAfter": self.minPhyOffsetAfter,
            "consumeQueueRan": self.consumeQueueRan,
            "cqMinOffsetsAfter": self.cqMinOffsetsAfter,
            "brokerException": self.brokerException,
        }


@dataclasses.dataclass
class Unconsumed:
    """Messages of one group/topic/queue at or after the group's committed offset."""

    group: str
    topic: str
    queueId: int
    consumerOffset: int
    maxOffset: int
    unconsumed: int  # still in the store before the run
    deleted: int = 0  # of those, how many the run deletes
    firstDeletedQueueOffset: int | None = None


@dataclasses.dataclass(eq=False)
class CleanFile:
    path: Path
    name: str
    start: int  # commitlog: physical offset; consumequeue: byte offset in the logical queue
    blocks: int
    mtime_ms: int
    unsafe: str | None  # why it may not be deleted (symlink, outside the store), None if it may


@dataclasses.dataclass(eq=False)
class QueueSegment:
    """A consumequeue file: its commitLogOffset column and the broker's read position after load."""

    file: CleanFile
    offsets: np.ndarray  # commitLogOffset of every 20-byte slot (a view on the map: read only where looked at)
    read_pos: int  # bytes: the file size for all but the last file, the written units for the last


@dataclasses.dataclass(eq=False)
class QueueState:
    topic: str
    queue_id: int
    segments: list[QueueSegment]
    min_logic: int = 0  # ConsumeQueue.minLogicOffset, in bytes

    @property
    def key(self) -> str:
        return f"{self.topic}/{self.queue_id}"

    @property
    def min_offset(self) -> int:
        return self.min_logic // S.CQ_UNIT_SIZE

    @property
    def max_offset(self) -> int:
        last = self.segments[-1] if self.segments else None
        return (last.file.start + last.read_pos) // S.CQ_UNIT_SIZE if last else 0


@dataclasses.dataclass
class StoreState:
    """What the cleaner decides on, as maintenance/clean.py loads it from the store (after the broker's load: every
    queue's minimum offset corrected against the commitlog's)."""

    root: Path
    commitlog_dirs: list[Path]
    consumequeue_dir: Path
    file_size: int  # mappedFileSizeCommitLog
    cq_file_size: int  # mappedFileSizeConsumeQueue
    commitlog: list[CleanFile]
    queues: list[QueueState]
    index: list[tuple[CleanFile, int]]  # (file, endPhyOffset) in load order
    unconsumed: list[Unconsumed]
    unconsumed_offsets: list[np.ndarray]  # per Unconsumed: (queue offsets, commitlog offsets) not yet consumed
    notes: list[str]
    timerlog: list[tuple[CleanFile, int | None]] = dataclasses.field(
        default_factory=list
    )  # (file, last unit's offsetPy)


class QueueMinOffsetFailed(Exception):
    """5.x correctMinOffset on an empty last file: ByteBuffer.position(-20) throws, the CQ task's run() catches
    it and that pass skips the remaining queues and the index files."""


class Cleaner:
    """The cleaner's state across passes within one run, as it is after the broker's load()/start():
    lastPhysicalMinOffset = 0, every queue's minLogicOffset corrected against the commitlog minimum, the
    manual-delete counter armed by --now."""

    def __init__(
        self,
        state: StoreState,
        settings: CleanSettings,
        clock: Clock,
        meter,
        manual: bool = False,
        protect_unconsumed: bool = False,
    ):
        """`meter` measures a directory's disk (DiskUsage) and is told of each file a plan releases."""
        self.state = state
        self.settings = settings
        self.clock = clock
        self.meter = meter
        self.protect_unconsumed = protect_unconsumed
        self.manual_left = MAX_MANUAL_DELETE_FILE_TIMES if manual else 0
        self.disk_full = False
        self.last_physical_min = 0
        self.notes: list[str] = list(state.notes)
        self.file_size = state.file_size
        self.commitlog = list(state.commitlog)
        self.queues = state.queues
        self.index = list(state.index)
        self.timerlog = list(state.timerlog)
        self.min_before = self.min_phy_offset
        self.cq_min_before = self.cq_min_offsets()
        self.unconsumed, self._unconsumed_offsets = state.unconsumed, state.unconsumed_offsets
        self.protected = unconsumed_per_file(self._unconsumed_offsets, self.file_size)

    # -- state --------------------------------------------------------------------------------------------
    @property
    def min_phy_offset(self) -> int:
        """MappedFileQueue.getMinOffset: the first file's start, -1 without files."""
        return self.commitlog[0].start if self.commitlog else -1

    def cq_min_offsets(self) -> dict[str, int]:
        return {q.key: q.min_offset for q in self.queues}

    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.state.root))
        except ValueError:
            return str(path)

    # -- one pass -----------------------------------------------------------------------------------------
    def plan_pass(self, pass_no: int) -> PassResult:
        now_ms, hour, at = self.clock.at(pass_no)
        decisions: list[FileDecision] = []
        time_up = space = None
        manual = clean_at_once = False
        try:
            time_up = is_time_to_do(self.settings.deleteWhen, hour)
        except DeleteWhenError:
            pass  # the broker's run() catches the exception: no space check, no deletion in this pass
        else:
            space = space_check(
                self.settings,
                [self.meter.measure(d) for d in self.state.commitlog_dirs],
                lambda: self.meter.measure(self.state.consumequeue_dir),
                self.disk_full,
            )
            self.disk_full = space.diskFull
            manual = self.manual_left > 0
            if time_up or space.spaceToDelete or manual:
                if manual:
                    self.manual_left -= 1
                clean_at_once = self.settings.cleanFileForciblyEnable and space.cleanImmediately
                decisions += self._delete_commitlog(pass_no, now_ms, clean_at_once, space)
        ran, exception = False, None
        min_off = self.min_phy_offset
        if min_off > self.last_physical_min:  # CleanConsumeQueueService
            self.last_physical_min = min_off
            ran = True
            try:
                for q in self.queues:
                    decisions += delete_consumequeue(self, pass_no, q, min_off)
                    correct_min_offset(q, min_off, self.settings.version)
                decisions += delete_index(self, pass_no, min_off)
            except QueueMinOffsetFailed as e:
                exception = str(e)
            decisions += delete_timerlog(self, pass_no, min_off)  # (the timer's own cleaner, every 30 s)
        return PassResult(
            passNo=pass_no,
            at=at,
            hour=hour,
            timeUp=time_up,
            space=space,
            manual=manual,
            cleanAtOnce=clean_at_once,
            decisions=decisions,
            minPhyOffsetAfter=self.min_phy_offset,
            consumeQueueRan=ran,
            cqMinOffsetsAfter=self.cq_min_offsets(),
            brokerException=exception,
        )

    def remove(self, files: list, item, decision: FileDecision):
        files[:] = [x for x in files if x is not item]
        self.meter.release(decision.path, decision.blocks)

    def decision(self, pass_no: int, kind: str, f, action: str, why: str, detail: str, extra=None) -> FileDecision:
        """What the pass does with file `f` (a store file with its path and blocks), and why."""
        extra = {} if extra is None else extra
        return FileDecision(pass_no, kind, self.rel(f.path), f.path, action, why, detail, f.blocks, extra)

    def _delete_commitlog(
        self, pass_no: int, now_ms: int, clean_at_once: bool, space: SpaceCheck
    ) -> list[FileDecision]:
        """MappedFileQueue.deleteExpiredFileByTime (+ --protect-unconsumed): oldest first, never the last,
        stop at the first kept file, at most batch_max deletions."""
        s = self.settings
        out: list[FileDecision] = []
        deleted = 0
        for f in self.commitlog[:-1]:
            # the broker reads the clock at each file, after sleeping deleteCommitLogFilesInterval per deletion
            checked_ms = now_ms + deleted * max(s.deleteCommitLogFilesInterval, 0)
            age_h = (checked_ms - f.mtime_ms) / 3_600_000
            extra = {
                "fromOffset": f.start,
                "ageHours": round(age_h, 3),
                "mtime": f.mtime_ms,
                "unconsumed": self.protected.get(f.start, 0),
            }
            expired = checked_ms >= f.mtime_ms + s.reserved_ms
            kept = self._commitlog_kept(expired or clean_at_once, f, age_h, extra["unconsumed"])
            if kept is not None:
                out.append(self.decision(pass_no, "commitlog", f, "keep", *kept, extra))
                return out
            if expired:
                why, detail = "age", f"age {age_h:.1f} h >= fileReservedTime {s.fileReservedTime} h"
            else:
                why, detail = (
                    "forced",
                    (
                        f"age {age_h:.1f} h < {s.fileReservedTime} h but ratio "
                        f"{space.commitLogRatio:.2f} forces it (cleanFileForciblyEnable, clean immediately)"
                    ),
                )
            d = self.decision(pass_no, "commitlog", f, "delete", why, detail, extra)
            out.append(d)
            self.remove(self.commitlog, f, d)
            deleted += 1
            if deleted >= s.batch_max:
                nxt = self.commitlog[0] if len(self.commitlog) > 1 else None
                if nxt is not None:
                    detail = f"{s.batch_max} files deleted this pass (deleteFileBatchMax); the next pass goes on"
                    out.append(
                        self.decision(
                            pass_no, "commitlog", nxt, "keep", "batch-limit", detail, {"fromOffset": nxt.start}
                        )
                    )
                    return out
                break
        if self.commitlog:
            last = self.commitlog[-1]
            extra = {"fromOffset": last.start, "ageHours": round((now_ms - last.mtime_ms) / 3_600_000, 3)}
            detail = "the last commitlog file is never deleted"
            out.append(self.decision(pass_no, "commitlog", last, "keep", "last-file", detail, extra))
        return out

    def _commitlog_kept(self, due: bool, f, age_h: float, unconsumed: int) -> tuple[str, str] | None:
        """Why a commitlog file the scan reaches is kept, ending the scan (why, detail); None: it goes."""
        if not due:
            return "not-expired", (
                f"age {age_h:.1f} h < fileReservedTime {self.settings.fileReservedTime} h and "
                "nothing forces; the scan stops here (no holes)"
            )
        if self.protect_unconsumed and unconsumed:
            return "protected", f"holds {unconsumed} unconsumed message(s) (--protect-unconsumed); the scan stops here"
        if f.unsafe:
            return "unsafe-path", f"{f.unsafe}; the scan stops here"
        return None

    # -- after the run ------------------------------------------------------------------------------------
    def finish_unconsumed(self):
        """How many unconsumed messages the run deleted: those below the new minimum offset."""
        new_min = self.min_phy_offset
        for u, arr in zip(self.unconsumed, self._unconsumed_offsets):
            gone = arr[1] < new_min if new_min >= 0 else np.zeros(arr.shape[1], bool)
            u.deleted = int(gone.sum())
            u.firstDeletedQueueOffset = int(arr[0][gone][0]) if u.deleted else None


def delete_consumequeue(cleaner: Cleaner, pass_no: int, q: QueueState, min_off: int) -> list[FileDecision]:
    """MappedFileQueue.deleteExpiredFileByOffset(min, 20): the last slot of each file but the last."""
    out: list[FileDecision] = []
    for seg in list(q.segments[:-1]):
        f = seg.file
        if seg.read_pos < cleaner.state.cq_file_size:
            detail = "its last slot cannot be read (short file); the scan of this queue stops"
            out.append(cleaner.decision(pass_no, "consumequeue", f, "keep", "unreadable", detail))
            return out
        last_unit = int(seg.offsets[-1])
        if last_unit >= min_off:
            return out
        extra = {"queue": q.key, "lastUnitOffset": last_unit}
        if f.unsafe:
            out.append(cleaner.decision(pass_no, "consumequeue", f, "keep", "unsafe-path", f.unsafe, extra))
            return out
        detail = f"last unit points at {last_unit} < min offset {min_off}"
        d = cleaner.decision(pass_no, "consumequeue", f, "delete", "below-min-offset", detail, extra)
        out.append(d)
        cleaner.remove(q.segments, seg, d)
    last = q.segments[-1] if q.segments else None
    if (
        last is not None
        and len(q.segments) == 1
        and last.read_pos
        and int(last.offsets[last.read_pos // S.CQ_UNIT_SIZE - 1]) < min_off
    ):
        detail = f"every entry is below min offset {min_off}, but a queue's last file is never deleted"
        out.append(cleaner.decision(pass_no, "consumequeue", last.file, "keep", "last-file", detail, {"queue": q.key}))
    return out


def delete_index(cleaner: Cleaner, pass_no: int, min_off: int) -> list[FileDecision]:
    """IndexService.deleteExpiredFile: only if the first file ends below min; never the last file."""
    out: list[FileDecision] = []
    if not cleaner.index or cleaner.index[0][1] >= min_off:
        return out
    for item in list(cleaner.index[:-1]):
        f, end = item
        if end >= min_off:
            return out
        if f.unsafe:
            out.append(cleaner.decision(pass_no, "index", f, "keep", "unsafe-path", f.unsafe, {"endPhyOffset": end}))
            return out
        detail = f"endPhyOffset {end} < min offset {min_off}"
        d = cleaner.decision(pass_no, "index", f, "delete", "below-min-offset", detail, {"endPhyOffset": end})
        out.append(d)
        cleaner.remove(cleaner.index, item, d)
    f, end = cleaner.index[-1]
    if end < min_off:
        detail = f"endPhyOffset {end} < min offset {min_off}, but the last index file is never deleted"
        out.append(cleaner.decision(pass_no, "index", f, "keep", "last-file", detail, {"endPhyOffset": end}))
    return out


def delete_timerlog(cleaner: Cleaner, pass_no: int, min_off: int) -> list[FileDecision]:
    """MappedFileQueue.deleteExpiredFileByOffsetForTimerLog (TimerMessageStore's cleaner, 5.x): in order, every
    file but the last whose last unit's offsetPy is below min; it stops at the first that is not, or whose last
    slot holds no unit."""
    out: list[FileDecision] = []
    for item in list(cleaner.timerlog[:-1]):
        f, offset_py = item
        if offset_py is None or offset_py >= min_off:
            return out
        if f.unsafe:
            out.append(
                cleaner.decision(pass_no, "timerlog", f, "keep", "unsafe-path", f.unsafe, {"offsetPy": offset_py})
            )
            return out
        detail = f"last unit's offsetPy {offset_py} < min offset {min_off}"
        d = cleaner.decision(pass_no, "timerlog", f, "delete", "below-min-offset", detail, {"offsetPy": offset_py})
        out.append(d)
        cleaner.remove(cleaner.timerlog, item, d)
    return out


def unconsumed_per_file(offsets: list, file_size: int) -> dict[int, int]:
    """commitlog file start -> how many unconsumed messages (any group) it holds, from each queue's (queue
    offsets, commitlog offsets) of its unconsumed messages."""
    if not offsets:
        return {}
    phys = np.concatenate([a[1] for a in offsets])
    starts, counts = np.unique(phys - phys % file_size, return_counts=True)
    return dict(zip(starts.tolist(), counts.tolist()))


def remaining(cleaner: Cleaner, last: PassResult) -> list[str]:
    """Why nothing else goes, read off the cleaner after its last pass."""
    out = []
    s = cleaner.settings
    if last.timeUp is None:
        out.append(
            f"commitlog: deleteWhen={s.deleteWhen!r} does not parse before a token names hour {last.hour}, so "
            "the broker's cleaner throws before deciding anything"
        )
    elif not last.fired:
        sp = last.space
        out.append(
            f"commitlog: no rule fires at {last.at}: hour {last.hour} is not in deleteWhen {s.deleteWhen!r}; "
            f"disk {sp.commitLogRatio:.2f}"
            + (f" / consumequeue {sp.logicsRatio:.2f}" if sp.logicsRatio is not None else "")
            + f" <= diskMaxUsedSpaceRatio {s.max_used_ratio:.2f}; no manual delete"
        )
    else:
        stop = [d for d in last.decisions if d.kind == "commitlog" and d.action == "keep"]
        if stop:
            out.append(f"commitlog: {stop[0].file} kept ({stop[0].why}): {stop[0].detail}")
        elif not cleaner.commitlog:
            out.append("commitlog: no files")
    kept_queues = [q.key for q in cleaner.queues if len(q.segments) > 1]
    only_last = len(cleaner.queues) - len(kept_queues)
    out.append(
        f"consumequeue: {len(kept_queues)} queue(s) keep files whose last entry is at or above min offset "
        f"{cleaner.min_phy_offset}; {only_last} queue(s) are down to their last file (never deleted)"
    )
    if cleaner.index:
        first_end = cleaner.index[0][1]
        if len(cleaner.index) == 1:
            out.append("index: only the last index file is left (never deleted)")
        else:
            out.append(
                f"index: the first file {cleaner.index[0][0].name} ends at {first_end} >= min offset "
                f"{cleaner.min_phy_offset}"
            )
    if last.space and last.space.diskFull:
        out.append(
            f"WARNING: disk ratio {last.space.commitLogRatio:.2f} > {s.warning_ratio:.2f} "
            "(diskSpaceWarningLevelRatio): the broker marks the disk full and rejects writes"
        )
    elif last.space and last.space.spaceToDelete and last.fired and not last.deleted("commitlog"):
        out.append(
            "the disk stays above diskMaxUsedSpaceRatio and nothing more is deletable by the broker's rules "
            "(the broker logs: disk space will be full soon, but delete file failed.)"
        )
    return out


# -- ConsumeQueue.correctMinOffset ----------------------------------------------------------------------


def correct_min_offset(q: QueueState, min_phy: int, version: int):
    """Move the queue's minimum offset as the broker's correctMinOffset does (rules.corrected_min_logic)."""
    if not q.segments:
        return
    first, last = q.segments[0], q.segments[-1]
    readable = last.read_pos // S.CQ_UNIT_SIZE
    try:
        q.min_logic = corrected_min_logic(
            version,
            q.min_logic,
            first.file.start,
            first.offsets[: first.read_pos // S.CQ_UNIT_SIZE],
            last.file.start + last.read_pos,
            int(last.offsets[readable - 1]) if readable else None,
            min_phy,
        )
    except CorrectMinOffsetFailed as e:
        raise QueueMinOffsetFailed(f"{q.key}: {e} {last.file.name} (IllegalArgumentException)") from e
