"""The broker's recovery model (CommitLog.recoverAbnormally, 4.9 and 5.x): which magic its readers accept
(rules.message_magic, by version), where abnormal recovery starts (isMappedFileMatchedRecover), how checkMessageAndReturnSize checks each record,
the walk to the first failure (the cut), and what lies past it; and the consume queues' own recovery, where the
broker's dispatch resumes (`recovered_queues_end`, `first_redispatched`). verify reports it, repair applies it, append
starts from it; none of them writes it again.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Callable, Iterable, Iterator, Protocol

import numpy as np

from . import schema as S
from .brokerversion import BrokerVersion
from .findings import RECORD_ERROR_KINDS
from .javacompat import CRC32_PROPERTY, crc31, decode_utf8
from .errors import FileGone
from .engine import (
    PROPERTIES_NOT_UTF8,
    Chunk,
    available_cores,
    data_extents,
    property_names,
    property_values,
    walk_files,
)
from .batchcq import BatchConsumeQueue, batch_consume_queues, bcq_unit_valid
from .record import Blank, Message, RecordError, property_crc_state, read_record
from .rules import (
    RECOVERED_QUEUE_FILES,
    batch_size_failure,
    blank_fails,
    checked_properties,
    cq_unit_valid,
    message_magic,
    record_expired,
    valid_prefix,
)
from .schema import MAGIC_AT, QUEUE_ID_AT, QUEUE_OFFSET_AT, STORE_TIMESTAMP_AT, SYSFLAG_AT
from .store import ConsumeQueue, MappedFile, Store

CHUNK = 1 << 20
RELEASE_BYTES = 64 << 20  # how much of a file a record-by-record walk keeps resident behind it
CRC_KINDS = ("body-crc", "property-crc")
NORMAL_RECOVERY_FILES = 3  # 4.9 recoverNormally starts at the third-last commitlog file
# a queue unit as recovery reads it (walk_queue): its size, its validity, the maxPhysicOffset it sets
CQ_UNIT = (
    S.CQ_UNIT_SIZE,
    lambda a: cq_unit_valid(a["commitLogOffset"], a["size"]),
    lambda u: int(u["commitLogOffset"]) + int(u["size"]),
)
BCQ_UNIT = (S.BCQ_UNIT_SIZE, bcq_unit_valid, lambda u: int(u["commitLogOffset"]))
# what checkMessageAndReturnSize fails on whatever checkCRCOnRecover says
RECOVERY_SEES = (
    "torn-tail",
    "zeroed-region",
    "illegal-magic",
    "bad-length",
    "truncated-record",
    "missing-blank",
    "blank-past-end",
    "unparsable-property",
    "dup-info",
)
# the properties whose values checkMessageAndReturnSize parses (checked_properties, batch_size_failure)
PARSED_NAMES = property_names("DELAY", "INNER_BASE", "INNER_NUM")


def blank_past_end(size: int, left: int) -> str:
    """The detail of a BLANK that rules.blank_fails."""
    return (
        f"the BLANK record claims {size} bytes but {left} remain in the file: 5.3.2+'s recovery fails on it "
        "(it reads remaining < totalSize - 4 as damage)"
    )


def allow_v2(store: Store) -> bool:
    """4.9 readers take V2 magic for an illegal one; 5.x's read it."""
    return store.version.major != 4


@dataclasses.dataclass
class BadRecord:
    commitLogOffset: int
    file: str
    position: int
    kind: str
    detail: str
    storeSize: int | None = None
    topic: str | None = None
    queueId: int | None = None
    queueOffset: int | None = None


@dataclasses.dataclass
class Walk:
    """The broker's recovery loop from one file: where it stops and what it kept."""

    cut: int  # processOffset
    zero_from: int  # end of the last valid record (or of a BLANK ending the last file)
    stop: BadRecord | None  # the record it stopped at (None: clean end of data)
    last_message: int  # start of the last valid message (-1: none)


class RecordTally:
    """What a recovery walk (files in commitlog order) needs to remember of the records it passed, in
    constant memory: how many, where the last one starts, and both as of the first bad record found."""

    def __init__(self):
        self.count, self.last = 0, -1
        self.at_first_bad: tuple[int, int] | None = None  # (count, last) when the first bad record was found

    def add(self, chunk: Chunk):
        """The records of a chunk the walk passed."""
        self.count += len(chunk)
        self.last = chunk.file.start + int(chunk.column("position")[-1])

    def bad_found(self):
        if self.at_first_bad is None:
            self.at_first_bad = (self.count, self.last)


# ---- the broker's checks -----------------------------------------------------------------------------------


class RecoveryChecker:
    """checkMessageAndReturnSize(checkCRC) for one store's settings; for `abnormal` recovery on 5.5.0+ with
    checkCommitLogOffsetOnRecover, also the record's PHYSICALOFFSET against its position (position_checked)."""

    def __init__(self, store: Store, abnormal: bool = False):
        cfg = store.config
        self.v2 = allow_v2(store)
        self.position = abnormal and position_checked(store.version, cfg)
        self.crc = cfg.checkCRCOnRecover
        self.prop_crc = cfg.forceVerifyPropCRC and self.v2  # 5.2.0+ only
        self.dup_info = cfg.duplicationEnable and self.v2  # 5.x recovery's checkDupInfo
        self.size = store.commitlog.file_size

    def check(self, f: MappedFile, pos: int) -> tuple[Message | Blank | None, BadRecord | None]:
        """(record, None) when the broker accepts it; (message or None, BadRecord) when it fails. A message
        is returned with a CRC failure: its structure is sound, so a lenient walk can go on after it."""
        buf = f.buf
        try:
            rec = read_record(buf, pos, min(len(buf), self.size), self.v2)
        except RecordError as e:
            bad = BadRecord(
                commitLogOffset=f.start + pos,
                file=f.name,
                position=pos,
                kind=RECORD_ERROR_KINDS[e.kind],
                detail=e.detail,
                storeSize=e.size,
            )
            self._describe_torn(bad, buf, pos)
            return None, bad
        if isinstance(rec, Blank):
            failure = self._blank(rec, pos)
            if failure is None:
                return rec, None
            kind, detail = failure
            return rec, BadRecord(f.start + pos, f.name, pos, kind, detail, storeSize=rec.storeSize)
        failure = self._position(f, pos, rec) or self._checked(buf, pos, rec)
        if failure is None:
            return rec, None
        kind, detail = failure
        return rec, BadRecord(
            commitLogOffset=f.start + pos,
            file=f.name,
            position=pos,
            kind=kind,
            detail=detail,
            storeSize=rec.storeSize,
            topic=rec.topic,
            queueId=rec.queueId,
            queueOffset=rec.queueOffset,
        )

    def _blank(self, rec: Blank, pos: int) -> tuple[str, str] | None:
        """5.3.2+ (apache/rocketmq#9002): `remaining < totalSize - 4` fails before the magic is read, a BLANK too."""
        left = self.size - pos
        return (
            ("blank-past-end", blank_past_end(rec.storeSize, left))
            if blank_fails(rec.storeSize, left, self.v2)
            else None
        )

    def _position(self, f: MappedFile, pos: int, rec: Message) -> tuple[str, str] | None:
        if self.position and rec.physicalOffset != f.start + pos:
            return "physical-offset", (
                f"PHYSICALOFFSET field is {rec.physicalOffset} but the record starts at "
                f"{f.start + pos} (5.5.0's abnormal recovery stops here)"
            )
        return None

    def _checked(self, buf, pos: int, rec: Message) -> tuple[str, str] | None:
        """checkMessageAndReturnSize's checks of a sound message, in its order: the body CRC, the properties
        (rules.checked_properties), the property CRC, the batch size (rules.batch_size_failure)."""
        if self.crc and not self.prop_crc and not rec.body_crc_ok():
            return "body-crc", f"body CRC {rec.bodyCRC} stored, {crc31(rec.body)} computed"
        props = rec.properties
        failure = checked_properties(rec.topic, bool(rec.propertiesBytes), props, self.v2, self.dup_info)
        if failure is not None:
            return failure
        if self.crc and self.prop_crc:
            state = property_crc_state(buf, pos, rec)
            if state is None:
                return "property-crc", "no __CRC32# property (forceVerifyPropCRC)"
            if state[0] != state[1]:
                return "property-crc", f"property CRC {state[0]} stored, {state[1]} computed"
        return batch_size_failure(props, self.v2)

    def _describe_torn(self, bad: BadRecord, buf, pos: int):
        """What a record that does not parse still tells: its queue from the fixed head, when the magic is
        a message's."""
        if pos + QUEUE_OFFSET_AT + S.INT64.size > len(buf):
            return
        magic = S.INT32.unpack_from(buf, pos + MAGIC_AT)[0]
        if message_magic(magic, True):
            bad.queueId = S.INT32.unpack_from(buf, pos + QUEUE_ID_AT)[0]
            bad.queueOffset = S.INT64.unpack_from(buf, pos + QUEUE_OFFSET_AT)[0]


class AcceptedRecords:
    """checkMessageAndReturnSize's walk on the compiled engine, from file `first` up to file `upto`: what it
    passes, a chunk at a time, each with the failure right after it. `walk()` yields (file index, the records
    passed (a Chunk, or None), the BadRecord after them, or None). It ends at the first failure, or at the
    BLANK of the last file (`blank_at`: its position there); with `past_crc` a CRC failure does not end it
    (the record's structure is sound: it is the first record passed after it) and anything else ends only
    its file. `checker_of(i)` is file i's check (a recovery checks CRCs only from its start file).
    The engine decodes and checks the CRCs; what it cannot settle alone goes to the checker (the reference),
    which decides (record_failures), and at the bytes where the engine stopped (or a file's end without a
    BLANK, where the broker's loop reads on and fails)."""

    def __init__(
        self,
        store: Store,
        first: int,
        checker_of: Callable[[int], RecoveryChecker],
        *,
        upto: int | None = None,
        past_crc: bool = False,
    ):
        self.store, self.first, self.checker_of, self.past_crc = store, first, checker_of, past_crc
        self.upto = len(store.commitlog.files) if upto is None else upto
        self.blank_at: int | None = None

    def walk(self) -> Iterator[tuple[int, Chunk | None, BadRecord | None]]:
        for i in range(self.first, self.upto):
            ended = None
            for chunk, ended in self._file(i):
                yield i, chunk, ended
            if ended is not None and not self.past_crc:
                return

    def _goes_on(self, bad: BadRecord) -> bool:
        return self.past_crc and bad.kind in CRC_KINDS

    def _file(self, i: int) -> Iterator[tuple[Chunk | None, BadRecord | None]]:
        f, checker = self.store.commitlog.files[i], self.checker_of(i)
        size = self.store.commitlog.file_size
        refused = []  # where the engine stopped at bytes that are not a record
        end = 0  # where the last record passed ends

        def stopped_at(_, pos: int, limit: int):
            refused.append(pos)

        self.blank_at = None
        # one thread walks: a second core maps the pages in ahead of it and gives them back (store.Pager)
        paged = available_cores() > 1
        for chunk in walk_files([f], size, None, None, checker.v2, stopped_at, checker.crc, paged=paged):
            start = 0
            for row, bad in record_failures(chunk, checker, self._goes_on):
                yield (chunk.select(slice(start, row)) if row > start else None), bad
                if not self._goes_on(bad):
                    return
                start = row
            yield chunk.select(slice(start, None)), None
            end = chunk.end
        if not refused and end < min(f.length, size):
            _, bad = checker.check(f, end)  # the BLANK (5.3.2+ fails one claiming more than the file has left)
            f.release()  # (as below)
            if bad is None:
                self.blank_at = end
                return
            yield None, bad
            return
        pos = refused[0] if refused else end
        _, bad = checker.check(f, pos)
        f.release()  # (the walk had let the file go; the reference's look mapped it again)
        if bad is None:
            raise AssertionError(f"{f.path} at {pos}: the engine refused a record the reference reads")
        yield None, bad


def record_failures(
    chunk: Chunk, checker: RecoveryChecker, goes_on: Callable[[BadRecord], bool]
) -> Iterator[tuple[int, BadRecord]]:
    """The rows of a chunk the engine decoded that `checker` fails, in order, up to the first that does not
    `go on`: the engine settles every other row, and the checker (the reference) reads only the rows the engine
    cannot settle alone (a CRC found failing or not read, a property CRC forceVerifyPropCRC asks for and the
    record lacks, a PHYSICALOFFSET off its position, V2 magic where the checker refuses it)."""
    f = chunk.file
    suspect = np.zeros(len(chunk), bool)
    if not checker.v2:  # (a walk that reads V2 magic, for a checker that refuses it: a 4.x broker's)
        suspect |= chunk.column("v2") == 1
    if checker.crc:
        suspect |= chunk.column("crcOk") != 1
        if checker.prop_crc:  # (a property string Java decodes with replacement is the reference's to read)
            no_crc = chunk.column(f"lo:{CRC32_PROPERTY}") < 0
            suspect |= no_crc | (chunk.column("textFlags") & PROPERTIES_NOT_UTF8 != 0)
    if checker.position:
        suspect |= chunk.column("physicalOffset") != chunk.column("position") + f.start
    suspect |= parsed_properties(chunk, checker)
    positions = chunk.column("position")
    for row in np.flatnonzero(suspect).tolist():
        _, bad = checker.check(f, int(positions[row]))
        if bad is not None:
            yield row, bad
            if not goes_on(bad):
                return


def parsed_properties(chunk: Chunk, checker: RecoveryChecker) -> np.ndarray:
    """The rows whose properties checkMessageAndReturnSize parses beyond the lookups (checked_properties,
    batch_size_failure): a DELAY (the reference checks the topic), 5.x's INNER_BASE with INNER_NUM, any
    property string with checkDupInfo, and property strings Java decodes with replacement."""
    props_len = chunk.column("propertiesLength")
    if checker.dup_info:
        return props_len > 0
    lo = np.empty((len(chunk), len(PARSED_NAMES[1])), np.int64)
    hi = np.empty_like(lo)
    at = np.ascontiguousarray(chunk.column("propertiesAt"))
    property_values(chunk.u8, at, np.ascontiguousarray(props_len), *PARSED_NAMES, lo, hi)
    rows = (lo[:, 0] >= 0) | (chunk.column("textFlags") & PROPERTIES_NOT_UTF8 != 0)
    if checker.v2:
        rows |= (lo[:, 1] >= 0) & (lo[:, 2] >= 0)
    return rows


def position_checked(version: BrokerVersion, config) -> bool:
    """5.5.0's abnormal recovery also stops at a record whose PHYSICALOFFSET is not its position, when
    checkCommitLogOffsetOnRecover says so (apache/rocketmq#10017; #10038 names the switch the check runs under,
    off by default)."""
    return version.at_least(5, 5) and config.checkCommitLogOffsetOnRecover


def recovery_fails_on(kind: str, config, version: BrokerVersion, abnormal: bool) -> bool:
    """Would the recovery's checkMessageAndReturnSize(checkCRC = checkCRCOnRecover) fail on a finding of this
    kind?"""
    if kind in RECOVERY_SEES:
        return True
    if kind == "physical-offset":
        return abnormal and position_checked(version, config)
    if not config.checkCRCOnRecover:
        return False
    prop = config.forceVerifyPropCRC and version.major == 5
    return kind == ("property-crc" if prop else "body-crc")


def start_file(store: Store, abnormal: bool, queues_end: Callable[[], int]) -> int:
    """The index of the commitlog file the broker's next recovery starts from: recoverAbnormally's
    (recovery_start) when `abort` is there, else recoverNormally's (normal_recovery_start, `queues_end()` the
    consumequeues' end)."""
    return recovery_start(store) if abnormal else normal_recovery_start(store, queues_end)


def normal_recovery_start(store: Store, queues_end: Callable[[], int]) -> int:
    """The index of the commitlog file the broker's normal recovery (no abort file) starts from. 4.9's
    recoverNormally: the third from the last. 5.x: the newest file after the first that matches, else the
    first. 5.0-5.3.3's match: fileFromOffset <= maxPhyOffsetOfConsumeQueue. 5.4+ (apache/rocketmq 9d9431dc1c
    and 86e8ed630b: CommitLog.isMappedFileMatchedRecover(mappedFile, true)): the file's first record passes
    checkMessageAndReturnSize with a store time not 0, not after indexMsgTimestamp when the index is safe
    (index_safe_limit), and its PHYSICALOFFSET is at or before where dispatch resumes (dispatch_start, with
    5.4's RocksDB stores). `queues_end()` is the consumequeues' end, asked for only in 5.x."""
    files = store.commitlog.files
    if store.version.major != 5:
        return max(0, len(files) - NORMAL_RECOVERY_FILES)
    end = dispatch_start(store, queues_end())
    if not store.version.at_least(5, 4):
        return next((i for i in range(len(files) - 1, 0, -1) if files[i].start <= end), 0)
    return dispatched_file_start(store, end)


def dispatched_file_start(store: Store, end: int) -> int:
    """5.4+'s isMappedFileMatchedRecover by offset, newest file first (0 when none matches): the first record
    passes (recovery_head), is not newer than indexMsgTimestamp when the index is safe (index_safe_limit), and
    its PHYSICALOFFSET is at or before `end`, where dispatch resumes."""
    files = store.commitlog.files
    checker, limit = RecoveryChecker(store), index_safe_limit(store)
    for i in range(len(files) - 1, 0, -1):
        head = recovery_head(checker, files[i])
        if head is not None and (limit is None or head[1] <= limit) and head[0] <= end:
            return i
    return 0


def recovery_head(checker: "RecoveryChecker", f: MappedFile) -> tuple[int, int] | None:
    """(PHYSICALOFFSET, store time) of a file's first record when 5.4+'s isMappedFileMatchedRecover takes it
    (86e8ed630b): checkMessageAndReturnSize accepts it and it is a message with a store time not 0 (a BLANK,
    a torn or CRC-failing record, zeros: None)."""
    record, bad = checker.check(f, 0)
    if bad is not None or not isinstance(record, Message) or record.storeTimestamp == 0:
        return None
    return record.physicalOffset, record.storeTimestamp


def index_safe_limit(store: Store) -> int | None:
    """The checkpoint's indexMsgTimestamp when messageIndexEnable and messageIndexSafe (a start file's first
    record must not be newer), else None."""
    cfg = store.config
    if not (cfg.messageIndexEnable and cfg.messageIndexSafe):
        return None
    return (store.checkpoint() or {"indexMsgTimestamp": 0})["indexMsgTimestamp"]


def rocksdb_dispatch_ends(store: Store) -> list[int]:
    """The lastOffsetPy of each RocksDB dispatch store the broker uses (5.4's index and transaction stores,
    each only when enabled and > 0: IndexRocksDBStoreAdapter.getDispatchFromPhyOffset); enabled when broker.conf
    says so, else when the store holds them."""
    db = store.message_rocksdb
    if db is None:
        return []
    enabled = {"index": store.config.indexRocksDBEnable, "trans": store.config.transRocksDBEnable}
    return [last for kind, last in db.dispatched_to().items() if enabled[kind] is not False]


def dispatch_start(store: Store, queues_end: int) -> int:
    """Where dispatch resumes at start: the minimum over every dispatch store, the consume queues' end and the
    RocksDB stores' lastOffsetPy (5.4's CommitLogDispatchStore.getDispatchFromPhyOffset, the least wins)."""
    return min([queues_end, *rocksdb_dispatch_ends(store)])


# ---- the consume queues' recovery: where dispatch resumes ----------------------------------------------------


@dataclasses.dataclass(frozen=True)
class QueueRecovery:
    """What ConsumeQueue.recover (BatchConsumeQueue.recover for a BatchCQ topic) makes of one queue."""

    name: str  # topic/queueId
    files: list[MappedFile]
    file_size: int
    max_phy: int  # getMaxPhysicOffset after recover: -1 when its walk passed no valid unit
    last_unit: tuple[MappedFile, int] | None  # the unit that set it: file and position
    stop: tuple[int, int] | None  # (file index, position) where the walk stopped: the queue's written end
    names_a_record: bool = False  # max_phy is a record's start (a BatchCQ unit's), not the end of one

    def reaches_past(self, end: int) -> bool:
        """Whether the queue holds a unit for bytes at or past the commitlog's `end`, where no record is."""
        return self.max_phy >= end if self.names_a_record else self.max_phy > end

    def drops_units(self) -> bool:
        """Whether bytes that are not zero follow the stop: units the broker's recovery truncates away
        (truncateDirtyFiles deletes the later files, and the next unit written overwrites the rest)."""
        if self.stop is None:
            return False
        k, pos = self.stop
        for f, start in [(self.files[k], pos)] + [(f, 0) for f in self.files[k + 1 :]]:
            try:  # (each file let go once looked at: a store's queues may be more than its open files)
                if nonzero_data(f, start):
                    return True
            finally:
                f.release()
        return False

    def walked_bytes(self) -> int:
        """How many bytes of the queue's files its recovery reads: from its third-last file to the stop."""
        if self.stop is None:
            return 0
        return (self.stop[0] - max(0, len(self.files) - RECOVERED_QUEUE_FILES)) * self.file_size + self.stop[1]

    def truncated_max_phy(self, phy_offset: int) -> int:
        """maxPhysicOffset after ConsumeQueue.truncateDirtyLogicFiles(phyOffset) (truncated)."""
        return self.truncated(phy_offset)[0]

    def truncated(self, phy_offset: int, written=None) -> tuple[int, int]:
        """(maxPhysicOffset, the queue's max offset) after ConsumeQueue.truncateDirtyLogicFiles(phyOffset) (4.9.7,
        5.3.3; BatchConsumeQueue's for a BatchCQ queue), which recoverNormally and recoverAbnormally run on every
        queue when the queues' end reaches the commitlog's: from the last file recover kept, a file whose first
        unit points at or past phyOffset goes and the previous one is looked at; the first unit of the file that
        stays is kept unchecked (an all-zero file keeps a (0, 0) unit: maxPhysicOffset 0), then units while valid
        and before phyOffset. The max offset is one past the last unit kept (a BatchCQ unit's msgBaseOffset +
        batchSize). (phyOffset, 0) when every file goes. `written`: what the recovery's dispatch wrote into the
        queue first (queueload.QueueWrites: its units over the files' bytes, and the files it created)."""
        batch = self.names_a_record
        dtype = S.BCQ_DTYPE if batch else S.CQ_DTYPE
        files = [(f.start, f) for f in self.files[: self.stop[0] + 1]] if self.stop else []
        files += [(start, None) for start in (written.new_files if written is not None else ())]
        for start, f in reversed(files):
            try:
                buf = f.buf if f is not None else bytes(self.file_size)
            except FileGone:  # (a running broker's expired head, deleted since it was listed)
                continue
            arr = np.frombuffer(buf, dtype=dtype, count=min(len(buf), self.file_size) // dtype.itemsize)
            if written is not None:
                arr = written.over(start, arr)
            if not len(arr) or int(arr[0]["commitLogOffset"]) >= phy_offset:
                del arr, buf
                if f is not None:
                    f.release()
                continue
            rest = arr[1:]
            valid = bcq_unit_valid if batch else lambda a: cq_unit_valid(a["commitLogOffset"], a["size"])
            n = valid_prefix(rest, lambda a: valid(a) & (a["commitLogOffset"] < phy_offset))
            u = rest[n - 1] if n else arr[0]
            if batch:
                out = int(u["commitLogOffset"]), int(u["msgBaseOffset"]) + int(u["batchSize"])
            else:
                out = int(u["commitLogOffset"]) + int(u["size"]), (start + (n + 1) * S.CQ_UNIT_SIZE) // S.CQ_UNIT_SIZE
            if f is not None:
                f.release()
            return out
        return phy_offset, 0


@dataclasses.dataclass(frozen=True)
class QueuesEnd:
    """recoverConsumeQueue's result, ConsumeQueueStore.getMaxPhyOffsetInConsumeQueue (5.x's dispatchFromPhyOffset
    before the RocksDB message stores are asked): the greatest maxPhysicOffset over every queue (-1: none), which
    queue holds it (None for the RocksDB consume queue's checkpoint, or no queue), and every file queue's recovery."""

    max_phy: int
    holder: QueueRecovery | None
    queues: tuple[QueueRecovery, ...]


def walk_queue(count: int, file_size: int, unit: tuple, units_of) -> tuple[int, tuple[int, int] | None, tuple | None]:
    """ConsumeQueue.recover / BatchConsumeQueue.recover's walk (4.9.7, 5.3.3; develop's is 5.3.3's) over a queue of
    `count` files: from its third-last file (or its first), units are read while they are valid, and only a file
    valid to its end leads on to the next; the last valid unit sets maxPhysicOffset. `unit` (CQ_UNIT, BCQ_UNIT):
    its size, its validity (offset >= 0 && size > 0 for a consumequeue, pre-blank units included; BatchCQ also wants
    msgBaseOffset >= 0 && batchSize > 0; the tagsCode, an extension address or not, plays no part), what it sets
    maxPhysicOffset to (offset + size; a BatchCQ unit its record's offset alone). `units_of(k)`: file k's unit
    array (None: the file is gone), read UNIT_BLOCK units at a time. Returns (maxPhysicOffset, -1 without a valid
    unit; (file index, position) of the unit that set it; (file index, position) where the walk stopped)."""
    unit_size, valid, phy_of = unit
    max_phy, last, stop = -1, None, None
    for k in range(max(0, count - RECOVERED_QUEUE_FILES), count):
        arr = units_of(k)
        if arr is None:
            continue
        n = valid_prefix(arr, valid)
        if n:
            max_phy, last = phy_of(arr[n - 1]), (k, (n - 1) * unit_size)
        stop = (k, n * unit_size)
        if n < file_size // unit_size:
            break
    return max_phy, last, stop


def recover_queue(files: list[MappedFile], file_size: int, name: str, unit: tuple, units_of) -> QueueRecovery:
    """walk_queue over a queue's mapped files, each let go once walked."""
    max_phy, last, stop = walk_queue(len(files), file_size, unit, units_of)
    for f in files[max(0, len(files) - RECOVERED_QUEUE_FILES) :]:
        f.release()
    at = (files[last[0]], last[1]) if last else None
    return QueueRecovery(name, files, file_size, max_phy, at, stop, names_a_record=unit is BCQ_UNIT)


def recover_consume_queue(cq: ConsumeQueue) -> QueueRecovery:
    """ConsumeQueue.recover of one consumequeue (on a live store, as of its snapshot: ConsumeQueue.unit_arrays)."""
    first = max(0, len(cq.files.files) - RECOVERED_QUEUE_FILES)
    arrays = {k: arr for k, _, arr in cq.indexed_unit_arrays(first)}  # views on the maps: nothing read yet
    return recover_queue(cq.files.files, cq.files.file_size, f"{cq.topic}/{cq.queue_id}", CQ_UNIT, arrays.get)


def recover_batch_queue(q: BatchConsumeQueue) -> QueueRecovery:
    """BatchConsumeQueue.recover of one queue: its maxPhysicOffset is the last unit's record offset, no size."""
    files, size = q.files.files, q.files.file_size

    def units_of(k: int) -> np.ndarray | None:
        try:
            buf = files[k].buf
        except FileGone:  # (a running broker's expired head, deleted since it was listed)
            return None
        return np.frombuffer(buf, dtype=S.BCQ_DTYPE, count=min(len(buf), size) // S.BCQ_UNIT_SIZE)

    return recover_queue(files, size, f"{q.topic}/{q.queue_id}", BCQ_UNIT, units_of)


def recovered_queues_end(store: Store) -> QueuesEnd:
    """Where the broker's consume queues end at its next start (DefaultMessageStore.recover: recoverConsumeQueue
    in 4.9.7, ConsumeQueueStore.recover + getMaxPhyOffsetInConsumeQueue in 5.3.3 and develop): every file queue
    recovered (recover_consume_queue), BatchCQ queues too from 5.0 (4.9 loads no batchconsumequeue/), the greatest
    maxPhysicOffset wins, -1 without any. A RocksDB consume queue (storeType=defaultRocksDB): its dispatch
    checkpoint (RocksDBConsumeQueueOffsetTable.getMaxPhyOffset, 0 without one). One queue's files at a time."""
    rocks = store.rocks_queues
    if rocks is not None:
        return QueuesEnd(rocks.checkpoint or 0, None, ())
    queues = [recover_consume_queue(cq) for cq in store.consume_queues()]
    if store.version.major >= 5:
        queues += [recover_batch_queue(q) for q in batch_consume_queues(store)]
    holder = max(queues, key=lambda q: q.max_phy, default=None)
    return QueuesEnd(holder.max_phy if holder is not None else -1, holder, tuple(queues))


def recovered_rocks_queue_max(store: Store, process_offset: int) -> dict[str, tuple[int, int | None]]:
    """RocksDBConsumeQueueStore.truncateDirty(processOffset) (5.3.3, develop), which runs when the dispatch
    checkpoint is past the commitlog's recovered end: every queue whose max entry points at or past it gets the
    max correctMaxCqOffset gives, {topic/queueId: (max offset, the commitLogOffset of the unit before it)}.
    RocksDBConsumeQueueTable.binarySearchInCQ from the max to the min (getMinCqOffset) for processOffset keeps the
    last unit it probed below it, which on an exact hit need not be the one just before; none: the min. A queue
    whose min unit lies past processOffset is left (the broker's check throws)."""
    rocks, min_phy, out = store.rocks_queues, store.commitlog.min_offset, {}
    if (rocks.checkpoint or 0) <= process_offset:
        return out
    for q in rocks.queues():
        if q.max_entry is None or q.max_entry[0] < process_offset:
            continue
        low = least = rocks.min_offset(q, min_phy)
        if q.min_entry is not None and not record_expired(q.min_entry[0], min_phy):
            least_phy = q.min_entry[0]  # (the min entry the broker keeps in its heap)
        else:
            unit = rocks.unit(q.topic, q.queue_id, least)
            least_phy = unit[0] if unit is not None else None
        if least_phy is None or least_phy > process_offset:
            continue
        high, found = q.max_entry[1], None
        while high >= low:
            mid = low + ((high - low) >> 1)
            unit = rocks.unit(q.topic, q.queue_id, mid)
            if unit is None or unit[0] < process_offset:
                found = found if unit is None else (mid, unit[0])
                low = mid + 1
            elif unit[0] == process_offset:
                break
            else:
                high = mid - 1
        out[f"{q.topic}/{q.queue_id}"] = (found[0] + 1, found[1]) if found is not None else (least + 1, least_phy)
    return out


def first_redispatched(store: Store, ends: QueuesEnd, process_offset: int) -> int:
    """The first commitlog offset the broker's next normal start dispatches again (`ends`: recovered_queues_end;
    `process_offset`: where its commitlog recovery ends). 4.9.7: DefaultMessageStore.start's reput from the
    greatest maxPhysicOffset over the queues, after recoverNormally's truncateDirtyLogicFiles(processOffset) when
    the queues reach processOffset, and at least the commitlog's min offset (and 0). 5.x: recoverNormally dispatches
    the records whose offset is greater than dispatchFromPhyOffset (dispatch_start), not the one at it: a record
    at exactly a consumequeue's end (offset + size) is not dispatched again."""
    files = store.commitlog.files
    min_offset = files[0].start if files else 0
    if store.version.major >= 5:
        return max(dispatch_start(store, ends.max_phy) + 1, min_offset)
    top = ends.max_phy
    if top >= process_offset:
        top = max([q.truncated_max_phy(process_offset) for q in ends.queues] + [-1])
    return max(top, min_offset, 0)


def recovery_start(store: Store) -> int:
    """isMappedFileMatchedRecover, newest file first: the index of the file the broker's abnormal recovery
    starts from (0 when none matches). The first record's store time must be at or before the checkpoint's
    minimum (with indexMsgTimestamp when the index is safe), and every RocksDB dispatch store must match it.
    On a RocksDB consume queue (storeType=defaultRocksDB, not double-written) the times are not read: 5.0-5.3.3
    takes the newest file whose first record's PHYSICALOFFSET is at or before the queue's max physical offset
    (CommitLog.isMappedFileMatchedRecover with isEnableRocksDBStore; getMaxPhyOffset answers 0 without its
    key), 5.4+ its offset as normal recovery does (dispatched_file_start)."""
    cfg = store.config
    if abnormal_start_by_offset(store):
        # RocksDBConsumeQueueStore.isMappedFileMatchedRecover (develop): the offset against its dispatch
        # checkpoint, whatever the checkpoint file's times
        checkpoint = store.rocks_queues.checkpoint or 0
        if store.version.at_least(5, 4):
            return dispatched_file_start(store, dispatch_start(store, checkpoint))
        return _first_offset_start(store, checkpoint)
    cp = store.checkpoint() or {"physicMsgTimestamp": 0, "logicsMsgTimestamp": 0, "indexMsgTimestamp": 0}
    minimum = max(0, min(cp["physicMsgTimestamp"], cp["logicsMsgTimestamp"]) - 3000)
    if cfg.messageIndexEnable and cfg.messageIndexSafe:
        minimum = min(minimum, cp["indexMsgTimestamp"])
    files = store.commitlog.files
    rocksdb_ends = rocksdb_dispatch_ends(store)
    first_time = _checked_head_time(store) if store.version.at_least(5, 4) else _head_time(store)
    for i in range(len(files) - 1, -1, -1):
        ts = first_time(files[i])
        # and every RocksDB dispatch store matches it (isMappedFileMatchedRecover: start <= its lastOffsetPy)
        if ts is not None and ts != 0 and ts <= minimum and all(files[i].start <= last for last in rocksdb_ends):
            return i
    return 0


def abnormal_start_by_offset(store: Store) -> bool:
    """Whether the abnormal recovery's start file is chosen by its first record's offset against the RocksDB
    consume queue's (storeType=defaultRocksDB, not double-written), not by store times (recovery_start)."""
    return store.rocks_queues is not None and not store.config.rocksdbCQDoubleWriteEnable


def _first_offset_start(store: Store, max_phy: int) -> int:
    """5.0-5.3.3's abnormal start on a RocksDB consume queue, newest file first (0 when none matches): a
    message's magic at the file's start and its PHYSICALOFFSET at or before `max_phy`."""
    files, v2 = store.commitlog.files, allow_v2(store)
    for i in range(len(files) - 1, -1, -1):
        buf = files[i].buf
        if len(buf) < S.PHYSICAL_OFFSET_AT + S.INT64.size:
            continue
        if message_magic(S.INT32.unpack_from(buf, MAGIC_AT)[0], v2):
            if S.INT64.unpack_from(buf, S.PHYSICAL_OFFSET_AT)[0] <= max_phy:
                return i
    return 0


def _head_time(store: Store) -> Callable[[MappedFile], int | None]:
    """The store time of a file's first record as 4.9.7-5.3.3's isMappedFileMatchedRecover reads it: only
    its magic checked (None when it is not a message's)."""
    v2 = allow_v2(store)

    def first_time(f: MappedFile) -> int | None:
        buf = f.buf
        if len(buf) < SYSFLAG_AT + S.INT32.size or not message_magic(S.INT32.unpack_from(buf, MAGIC_AT)[0], v2):
            return None
        sysflag = S.INT32.unpack_from(buf, SYSFLAG_AT)[0]
        ts_at = STORE_TIMESTAMP_AT[1 if sysflag & S.BORNHOST_V6_FLAG else 0]  # the store host comes after it
        return S.INT64.unpack_from(buf, ts_at)[0] if ts_at + S.INT64.size <= len(buf) else None

    return first_time


def _checked_head_time(store: Store) -> Callable[[MappedFile], int | None]:
    """5.4+ (86e8ed630b): the first record must pass checkMessageAndReturnSize (recovery_head)."""
    checker = RecoveryChecker(store)

    def first_time(f: MappedFile) -> int | None:
        head = recovery_head(checker, f)
        return None if head is None else head[1]

    return first_time


class ProgressReporter:
    """Tells `progress` how many commitlog bytes are checked, counted from the first file's start, as each
    chunk of records is passed."""

    def __init__(self, progress: Callable[[int], None] | None, files):
        self.progress, self.base = progress, files[0].start if files else 0

    def passed(self, chunk: Chunk):
        if self.progress is not None:
            self.progress(chunk.file.start + chunk.end - self.base)


class PassedRecords(Protocol):
    """What a walk tells of the records it passes, a chunk at a time (ProgressReporter, queueload.Redispatch)."""

    def passed(self, chunk: Chunk) -> None: ...


def walk(
    store: Store, checker: RecoveryChecker, first: int, seen: RecordTally, reporter: PassedRecords | None = None
) -> Walk:
    """CommitLog.recoverAbnormally's loop from file `first` (on the compiled walk: AcceptedRecords); the
    records it passes, in order, go to `reporter`."""
    files = store.commitlog.files
    if not files:
        return Walk(cut=0, zero_from=0, stop=None, last_message=-1)
    accepted = AcceptedRecords(store, first, lambda _: checker)
    last_message = -1
    for i, chunk, bad in accepted.walk():
        if chunk is not None:
            _passed(chunk, seen, reporter)
            last_message = seen.last
        if bad is not None:
            cut = files[i].start + bad.position
            if bad.kind == "zeroed-region" and zero_from(store, i, bad.position):
                bad = None  # the clean end of the data
            return Walk(cut=cut, zero_from=cut, stop=bad, last_message=last_message)
    cut = files[-1].start + accepted.blank_at
    return Walk(cut=cut, zero_from=cut + S.END_FILE_MIN_BLANK_LENGTH, stop=None, last_message=last_message)


def check_earlier_files(
    store: Store, checker: RecoveryChecker, upto: int, seen: RecordTally, reporter: ProgressReporter | None = None
) -> list[BadRecord]:
    """Files the broker's recovery does not re-check: every bad record, going on after a CRC failure (the
    structure is sound) and at the next file after anything else."""
    found = []
    for _, chunk, bad in AcceptedRecords(store, 0, lambda _: checker, upto=upto, past_crc=True).walk():
        if chunk is not None:
            _passed(chunk, seen, reporter)
        if bad is not None:
            found.append(bad)
            seen.bad_found()
    return found


def _passed(chunk: Chunk, seen: RecordTally, reporter: PassedRecords | None):
    seen.add(chunk)
    if reporter is not None:
        reporter.passed(chunk)


def give_back(f: MappedFile, passed: int, pos: int) -> int:
    """Once a walk is RELEASE_BYTES past `passed`, the pages behind it go back (MappedFile.drop_pages), so a
    walk through a large file keeps only about that much of it resident; returns the new mark."""
    if pos - passed < RELEASE_BYTES:
        return passed
    f.drop_pages(passed, pos)
    return pos


def zero_from(store: Store, index: int, pos: int) -> bool:
    """True when everything from file `index` position `pos` on is zero (preallocated space)."""
    files = store.commitlog.files
    return not nonzero_data(files[index], pos) and not any(nonzero_data(f, 0) for f in files[index + 1 :])


def nonzero_data(f: MappedFile, start: int) -> bool:
    """Whether a byte from `start` on is not zero, reading only what the filesystem holds data for: a hole
    reads as zeros, and touching it through the mapping would make tmpfs allocate it (a file reserved ahead
    in steps stays sparse)."""
    return any(last_nonzero(f.buf, lo, hi) >= 0 for lo, hi in data_extents(f.path, start, len(f.buf)))


def last_nonzero(buf, start: int, end: int | None = None) -> int:
    """Position of the last non-zero byte in [start, end) (end: the buffer's), or -1. Chunks from the end:
    preallocated tails are long runs of zeros."""
    end = len(buf) if end is None else end
    while end > start:
        lo = max(start, end - CHUNK)
        chunk = np.frombuffer(buf, dtype=np.uint8, count=end - lo, offset=lo)
        nz = np.flatnonzero(chunk)
        if len(nz):
            return lo + int(nz[-1])
        end = lo
    return -1


DESCRIBED_PAST = 20  # the records past the cut a report shows one by one


@dataclasses.dataclass
class PastTheCut:
    """What lies past a cut, in constant memory: how many records, by queue, and the first DESCRIBED_PAST.
    Each record is counted under `queue_of(offset, its own "topic/queueId", None for a torn record)`."""

    queue_of: Callable[[int, str | None], str]
    count: int = 0
    by_queue: Counter = dataclasses.field(default_factory=Counter)
    first: list = dataclasses.field(default_factory=list)  # (commitlog offset, Message | BadRecord)

    def add(self, chunk: Chunk, allow_v2: bool):
        """The records of a chunk the engine decoded; only the ones described are read as objects."""
        f, u8 = chunk.file, chunk.u8
        names: dict[bytes, str] = {}  # (a topic's text, as the reference decodes it)
        rows = zip(
            chunk.column("position").tolist(),
            chunk.column("topicAt").tolist(),
            chunk.column("topicLength").tolist(),
            chunk.column("queueId").tolist(),
        )
        for pos, topic_at, topic_len, queue_id in rows:
            raw = u8[topic_at : topic_at + topic_len].tobytes()
            topic = names.get(raw) or names.setdefault(raw, decode_utf8(raw))
            self.by_queue[self.queue_of(f.start + pos, f"{topic}/{queue_id}")] += 1
            if len(self.first) < DESCRIBED_PAST:
                self.first.append((f.start + pos, read_record(chunk.buf, pos, len(u8), allow_v2)))
        self.count += len(chunk)

    def add_named(self, offset: int):
        """A record a consumequeue unit points at where the walk could not read."""
        self.count += 1
        self.by_queue[self.queue_of(offset, None)] += 1

    def add_torn(self, bad: BadRecord):
        self.count += 1
        self.by_queue[self.queue_of(bad.commitLogOffset, None)] += 1
        if len(self.first) < DESCRIBED_PAST:
            self.first.append((bad.commitLogOffset, bad))


def records_past(
    store: Store,
    checker: RecoveryChecker,
    cut: int,
    queue_of: Callable[[int, str | None], str],
    named: Iterable[int] = (),
) -> PastTheCut:
    """What lies past the cut, leniently, file by file: records that still parse (whatever their CRC), and
    the first that does not (a torn record) as far as its head reads; then the records at `named` offsets
    (those consumequeue units point at) past where a file's walk stopped: a file's records after a region that
    does not parse are known only from their units. On the compiled walk, from the start of the cut's file
    (the cut is where a walk from there stopped: the records before it read)."""
    past = PastTheCut(queue_of)
    size = store.commitlog.file_size
    unread: dict[int, int] = {}  # file start -> the first offset of it not read
    for f in store.commitlog.files:
        if f.start + size <= cut:
            continue
        stopped = []

        def refused(_, pos: int, limit: int):
            stopped.append(pos)

        for chunk in walk_files([f], size, max(cut, f.start), None, checker.v2, refused):
            past.add(chunk, checker.v2)
        if stopped:
            _, bad = checker.check(f, stopped[0])
            f.release()  # (as AcceptedRecords lets it go)
            torn = bad.kind != "zeroed-region"
            if torn:
                past.add_torn(bad)
            unread[f.start] = f.start + stopped[0] + torn
    for offset in named:
        if offset >= unread.get(offset - offset % size, offset + 1):
            past.add_named(offset)
    return past
