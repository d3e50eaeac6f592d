"""The commitlog half of `verify`: one chunk of one commitlog file checked record by record.

The records themselves are walked and checked by a compiled kernel (rmqctl.engine.check_walk), which
releases the GIL, so chunks run in threads, each over its own read-only mapping. This module runs the walk,
classifies what the kernel stops at (a BLANK, or bytes that `record.read_record` refuses, up to the next
record start) and turns the kernel's per-record flags into findings. Records whose dispatch data needs the
rules the kernel does not carry (SCHEDULE_TOPIC_XXXX delay, LMQ multi-dispatch, inner batches, malformed
UTF-8 in hashed text) go through `record.read_record` and the broker rules of `rmqctl.dispatch`, which the
tests also use as the reference for the kernel.

A chunk can start anywhere in a file: it then finds the first record start itself (magic, PHYSICALOFFSET
equal to the position, a length that adds up), and the caller checks that the previous chunk's walk ended
exactly there. Damage ends the walk; the scan finds the next record start after it the same way, so one
torn record costs one finding, not the rest of the file.
"""

from __future__ import annotations

import dataclasses
import mmap
import zlib

import numpy as np

from .. import schema as S
from ..config import BrokerConfig
from ..dispatch import cq_targets, index_key_hash, index_keys, reput_stuck_at, tags_code
from ..javacompat import CRC32_PROPERTY, crc_from_digits, decode_utf8
from ..engine import T_AT, T_COUNT, T_FIRST, T_LEN, T_WELL_FORMED, TOPIC_COLUMNS, rehash
from .. import engine as K
from ..record import (
    DECOMPRESSION_FACTOR,
    DecompressionLimitError,
    Message,
    RecordError,
    decompression_limit,
    read_record,
)
from ..errors import FileGone
from ..engine import data_extents, next_record_start
from ..recovery import blank_past_end
from ..rules import blank_fails, property_failure
from ..store import PAGER, give_back_pages, map_in_pages, valid_topic_dir_name

CRC_MASK = 0x7FFFFFFF
MASK64 = (1 << 64) - 1
# the tagsCode of a record whose properties fail the broker's check (it dispatches none): no unit is compared with it
UNKNOWN_TAGS = np.iinfo(np.int64).min
# what a record whose properties fail the check costs, by the finding's kind
PROPERTY_FAILURE_COSTS = {
    "unparsable-property": "the broker's record check throws on it: a recovery walking this record truncates "
    "the commitlog here, and the broker's dispatch of it fails",
    "dup-info": "a recovery walking this record truncates the commitlog here (dispatch does not check it)",
}
AVERAGE_RECORD = 512  # first guess of the bytes per record, for the kernel's output arrays (they grow)


@dataclasses.dataclass
class Task:
    """One chunk: records starting in [claim_from, stop) of one file are checked; the walk starts at
    `begin` (a known record start when `forced`, else the first record start found from there)."""

    path: str
    name: str
    file_start: int
    file_size: int
    begin: int
    forced: bool
    claim_from: int
    stop: int
    config: BrokerConfig
    allow_v2: bool = True  # the store's broker reads the V2 magic (5.1+; recovery.allow_v2)
    check_crc: bool = True
    want_tags: bool = True
    want_keys: bool = True
    # walked again for its record columns alone (verify's windows): its first walk reported the findings
    columns_only: bool = False
    records: int = 0  # how many records the walk finds, when known (a walk again): its arrays sized to fit
    # on a live store, where the snapshot's commitlog end falls in this file: bytes from there may be moving
    moving_from: int | None = None
    # DLedger: the committed position as the checkpoint tells it (commitlog offset), which RocketMQ's reput
    # passed over (None: unknown)
    reput_end: int | None = None
    # a core is left over from the walks: the pages come in ahead of the walk and go back after it on the
    # pager's thread (store.PAGER), not on the walking thread (each costs it as much again as the walk)
    paged: bool = False
    # the RocksDB index records' digest of the records (rocksdb.IndexDigest): the offsets it takes, [lo, hi]
    index_digest: tuple[int, int] | None = None


@dataclasses.dataclass
class Region:
    """Bytes at `start` that are not a record, up to `resync` (the next record start) or, without one,
    to the file's last non-zero byte (`last_nonzero`, -1 when all zero). `cause` is read_record's kind."""

    start: int
    cause: str
    detail: str
    resync: int | None
    last_nonzero: int
    zero_head: bool


@dataclasses.dataclass
class ChunkResult:
    task: Task
    first: int | None  # first record start found (None: none)
    handoff: int  # where the walk stopped: the next chunk must start exactly here
    # per checked (claimed, well-formed) record, int64 arrays:
    pos: np.ndarray  # in-file position
    size: np.ndarray
    queue_id: np.ndarray
    queue_offset: np.ndarray
    sysflag: np.ndarray
    store_ts: np.ndarray
    topic: np.ndarray  # index into `topics`
    tags: np.ndarray  # the tagsCode the broker's dispatch computes (0 when not asked for)
    topics: list[str]  # a name per distinct topic bytes (two can decode to one name)
    key_record: np.ndarray  # index keys: record (index into the arrays above) and IndexService hash
    key_hash: np.ndarray
    lmq: list[tuple[int, str, int, int]]  # extra consumequeue targets: (record, topic, queueId, queueOffset)
    inner_num: dict[int, int]  # record -> INNER_NUM of inner-batch records (queue offset advances by it)
    findings: list[tuple[str, str, int, str]]  # (kind, severity, position, detail)
    regions: list[Region]
    blank: tuple[int, int] | None  # (position, storeSize) of the BLANK ending the file
    bytes: int
    count: int  # records checked: len(pos), also after verify's windows drop the columns (checks/windows.py)
    start: int  # the first checked record's position (-1: none)
    end: int  # one past the last checked record's bytes, in the file (0: none)
    newest: int  # the largest storeTimestamp of the checked records (0: none)
    record_bytes: int  # the checked records' bytes
    queues: object = None  # what the queue-offset check needs of the records (checks/queues.summarize)
    # the checked records' RocksDB index records digest (Task.index_digest): records, sum (mod 2^64), doubtful
    digest: tuple[int, int, int] = (0, 0, 0)


def open_map(path: str):
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            if size == 0:
                return b""
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise FileGone(
            "deleted while verify read the store (a running broker removed this expired file)", path
        ) from None


def scan_chunk(task: Task) -> ChunkResult:
    buf = open_map(task.path)
    limit = min(len(buf), task.file_size)
    extents = data_extents(task.path, 0, limit) if limit else []
    data_end = extents[-1][1] if extents else 0
    spans = [(max(lo, task.begin), min(hi, task.stop)) for lo, hi in extents]
    if not task.paged:  # the chunk's pages come in and go back on this thread, the others running meanwhile
        map_in_pages(buf, spans)
        result = _Scanner(task, buf, limit, data_end).run()
        give_back_pages(buf, task.begin, result.handoff)
        return result
    ahead = PAGER.ahead(buf, spans)
    result = None
    try:
        result = _Scanner(task, buf, limit, data_end).run()
    finally:
        PAGER.behind(buf, task.begin, result.handoff if result else limit, ahead)
    return result


def _grown(a: np.ndarray, used: int) -> np.ndarray:
    """`a` (columns by row) with twice the room, the first `used` entries kept."""
    out = np.empty((a.shape[0], 2 * a.shape[1]), a.dtype)
    out[:, :used] = a[:, :used]
    return out


class _Scanner:
    def __init__(self, task: Task, buf, limit: int, data_end: int | None = None):
        self.t = task
        self.buf = buf
        self.limit = limit
        # past the file's last data extent there are only holes: zeros, never searched (on tmpfs, touching a
        # hole through the map allocates it; on a full one that is a SIGBUS)
        self.data_end = limit if data_end is None else data_end
        self.u8 = np.frombuffer(buf, dtype=np.uint8, count=limit) if limit else np.zeros(0, np.uint8)
        self.allow_v2 = task.allow_v2
        cfg = task.config
        self.options = (
            (K.CHECK_CRC if task.check_crc else 0)
            | (K.WANT_TAGS if task.want_tags else 0)
            | (K.WANT_KEYS if task.want_keys else 0)
            | (K.LMQ if cfg.enableMultiDispatch else 0)
            | (K.FORCE_PROPERTY_CRC if cfg.forceVerifyPropCRC and self.allow_v2 else 0)
            | (K.ALLOW_V2 if self.allow_v2 else 0)
            | (K.DUP_INFO if cfg.duplicationEnable and self.allow_v2 else 0)
            | (K.INDEX_DIGEST if task.index_digest is not None and not task.columns_only else 0)
        )
        guess = task.records + 1 if task.records else max(64, (task.stop - task.claim_from) // AVERAGE_RECORD)
        self.records = np.empty((K.RECORD_COLUMNS, guess), np.int64)
        self.keys = np.empty((2, max(3 * guess, 2 * K.MOST_KEYS) if task.want_keys else 0), np.int64)
        self.topics = np.empty((TOPIC_COLUMNS, 64), np.int64)
        self.table = np.zeros(128, np.int64)
        self.state = np.zeros(K.STATE_SLOTS, np.int64)
        if task.index_digest is not None:
            self.state[K.S_DIGEST_FROM], self.state[K.S_DIGEST_TO] = task.index_digest
        self.findings: list[tuple[str, str, int, str]] = []
        self.regions: list[Region] = []
        self.blank = None

    # -- the walk ------------------------------------------------------------------------------------------
    def run(self) -> ChunkResult:
        t = self.t
        pos = t.begin if t.forced else self.resync(t.begin)
        first = pos
        while pos is not None and pos < t.stop:
            status, end = self.walk(pos)
            if status == K.ENDED and (end >= t.stop or end >= self.limit):
                if end == self.limit == t.file_size and t.stop >= self.limit:
                    self.missing_blank(end)
                pos = end
                break
            pos = self.after_stop(end)
        return self.result(first, pos if pos is not None else self.limit)

    def walk(self, pos: int) -> tuple[int, int]:
        """The kernel's walk from `pos`, its outputs grown as it asks. Returns (ENDED or BROKEN, where)."""
        t, state = self.t, self.state
        state[K.S_POS] = pos
        while True:
            status = K.check_walk(self.u8, self.limit, t.stop, t.claim_from, *self.record_kernel_args())
            if status != K.FULL:
                return status, int(state[K.S_POS])
            self.grow()

    def record_kernel_args(self) -> tuple:
        """What every record kernel takes after its walk's own arguments: the chunk's file start, the options,
        and the outputs it fills (as they are now: `grow` replaces them)."""
        return self.t.file_start, self.options, self.records, self.keys, self.topics, self.table, self.state

    def grow(self):
        """Room for the kernel's outputs when it returned FULL."""
        n, n_keys, n_topics = (int(self.state[k]) for k in (K.S_RECORDS, K.S_KEYS, K.S_TOPICS))
        if n == self.records.shape[1]:
            self.records = _grown(self.records, n)
        while self.t.want_keys and n_keys + K.MOST_KEYS > self.keys.shape[1]:
            self.keys = _grown(self.keys, n_keys)
        if 2 * n_topics >= len(self.table):
            self.topics = _grown(self.topics, n_topics)
            self.table = np.zeros(2 * len(self.table), np.int64)
            rehash(self.topics, n_topics, self.table)

    def after_stop(self, x: int) -> int | None:
        """The walk stopped at `x`: a BLANK ends the file; anything else is damage, reported from `x` up to
        the next record start, where the walk goes on."""
        t = self.t
        if x + 8 <= self.limit:
            size, magic = S.BLANK.unpack_from(self.buf, x)
            if magic == S.MAGIC_BLANK:
                if x >= t.claim_from:
                    self.blank = (x, size)
                    left = t.file_size - x
                    if blank_fails(size, left, self.allow_v2):
                        self.findings.append(("blank-past-end", "error", x, blank_past_end(size, left)))
                    elif size != left:
                        self.findings.append(
                            (
                                "blank-size",
                                "error",
                                x,
                                f"the BLANK record claims {size} bytes but {left} remain in the file",
                            )
                        )
                nxt = self.resync(x + 8)
                if nxt is not None and x >= t.claim_from:
                    self.findings.append(
                        (
                            "data-after-blank",
                            "error",
                            x,
                            f"a record starts at position {nxt} after the BLANK record at {x}: the broker "
                            f"skips everything after a BLANK, so it never reads it",
                        )
                    )
                return nxt
        try:
            rec = read_record(self.buf, x, self.limit, self.allow_v2)
        except RecordError as e:
            cause, detail = e.kind, e.detail
        else:  # the bytes changed since the kernel read them: past a live snapshot's end, a record being written
            if t.moving_from is None or x < t.moving_from:  # whole records do not change: the kernel is wrong
                raise AssertionError(f"the verify kernel refused the record at {x} that read_record accepts: {rec!r}")
            self.findings.append(
                (
                    "moving-tail",
                    "info",
                    x,
                    "a record was being written here while verify read it; the check of this file ends before it",
                )
            )
            return None
        nxt = self.resync(x + 1)
        if x >= t.claim_from:
            last = -1 if nxt is not None else self.last_nonzero(x)
            head = bytes(self.buf[x : min(x + 8, self.limit)])
            self.regions.append(Region(x, cause, detail, nxt, last, not head.strip(b"\0")))
        return nxt

    def missing_blank(self, end: int):
        if end >= self.t.claim_from:
            self.regions.append(
                Region(
                    end,
                    "truncated-record",
                    "the last record ends at the end of the file, with no room for the BLANK record",
                    None,
                    -1,
                    True,
                )
            )

    def resync(self, pos: int) -> int | None:
        """The first position >= pos where a record starts (recovery.next_record_start), searched up to the
        file's data end."""
        t = self.t
        return next_record_start(
            self.buf, pos, self.limit, min(self.limit, self.data_end), t.file_start, t.file_size, self.allow_v2
        )

    def last_nonzero(self, pos: int) -> int:
        return _last_nonzero(self.u8, pos, min(self.limit, self.data_end))

    # -- findings and the reference path ---------------------------------------------------------------------
    def result(self, first, handoff) -> ChunkResult:
        t, state = self.t, self.state
        n, n_keys, n_topics = (int(state[k]) for k in (K.S_RECORDS, K.S_KEYS, K.S_TOPICS))
        rec = self.records[:, :n]
        topics = self.topics[:, :n_topics]
        # the name of each topic (different bytes can decode to the same name: the caller merges by name)
        names = [
            decode_utf8(bytes(self.buf[at : at + length]))
            for at, length in zip(topics[T_AT].tolist(), topics[T_LEN].tolist())
        ]
        ref = _Reread(t, self.buf, self.limit, self.findings, self.keys[:, :n_keys])
        ref.flagged(rec)
        if not t.columns_only:
            topic_findings(self.findings.append, self.buf, topics, names)
        return ChunkResult(
            task=t,
            first=first,
            handoff=handoff,
            pos=rec[K.POS],
            size=rec[K.SIZE],
            queue_id=rec[K.QUEUE_ID],
            queue_offset=rec[K.QUEUE_OFFSET],
            sysflag=rec[K.SYSFLAG],
            store_ts=rec[K.STORE_TS],
            topic=rec[K.TOPIC],
            tags=rec[K.TAGS_CODE],
            topics=names,
            key_record=np.concatenate(ref.key_record),
            key_hash=np.concatenate(ref.key_hash),
            lmq=ref.lmq,
            inner_num=ref.inner,
            findings=self.findings,
            regions=self.regions,
            blank=self.blank,
            bytes=max(0, min(t.stop, self.limit) - t.claim_from),
            count=n,
            start=int(rec[K.POS, 0]) if n else -1,
            end=int((rec[K.POS] + rec[K.SIZE]).max()) if n else 0,
            newest=int(rec[K.STORE_TS].max()) if n else 0,
            record_bytes=int(rec[K.SIZE].sum()),
            digest=(int(state[K.S_DIGESTED]), int(state[K.S_DIGEST_SUM]) & MASK64, int(state[K.S_DIGEST_DOUBTFUL])),
        )


def _last_nonzero(u8: np.ndarray, pos: int, end: int) -> int:
    """The last non-zero byte in [pos, end) (-1: none); preallocated tails are long zero runs."""
    step = 1 << 22
    while end > pos:
        lo = max(pos, end - step)
        chunk = u8[lo:end]
        if np.count_nonzero(chunk):
            return lo + int(np.flatnonzero(chunk)[-1])
        end = lo
    return -1


class _Reread:
    """The reference path: the records the kernel flagged, read again by `record.read_record`, for their
    findings and for the dispatch data the kernel does not carry (tags code, keys, LMQ targets, INNER_NUM)."""

    def __init__(self, task: Task, buf, limit: int, findings: list, keys: np.ndarray):
        self.t, self.buf, self.limit, self.findings = task, buf, limit, findings
        self.key_record, self.key_hash = [keys[0]], [keys[1]]  # the kernel's (record, hash) of the index keys
        self.lmq: list = []
        self.inner: dict[int, int] = {}

    def read(self, pos) -> Message:
        return read_record(self.buf, int(pos), self.limit, self.t.allow_v2)

    def flagged(self, rec: np.ndarray):
        """`rec`'s flagged records (their tags codes set in place)."""
        t, tags, flags = self.t, rec[K.TAGS_CODE], rec[K.FLAGS]
        for i in np.flatnonzero(flags).tolist():
            f = int(flags[i])
            if t.columns_only and not f & (K.F_REFERENCE | K.F_INNER_BATCH):
                continue
            m = self.read(rec[K.POS, i])
            if not t.columns_only:
                record_findings(self.findings.append, self.buf, t.file_start, m, f, t)
            if f & K.F_REFERENCE:
                tags[i] = _tags_code(m, t.config, t.allow_v2)
                if t.want_keys:
                    hashes = [index_key_hash(k) for k in index_keys(m)]
                    self.key_record.append(np.full(len(hashes), i, np.int64))
                    self.key_hash.append(np.array(hashes, dtype=np.int64))
                self.lmq += [(i, name, qid, qoff) for name, qid, qoff in _lmq_targets(m, t.config, t.allow_v2)]
                if not t.columns_only and (stuck := reput_stuck_at(m, t.config, t.allow_v2)) is not None:
                    self.findings.append(("reput-stuck", "error", m.position, stuck))
            if f & K.F_INNER_BATCH:
                self.inner[i] = _int_or(m.properties.get("INNER_NUM"), 1)
        if not t.columns_only:
            # (a compression type the decoder does not know is the sysflag finding already)
            for i in np.flatnonzero((rec[K.SYSFLAG] & S.COMPRESSED_FLAG != 0) & (flags & K.F_SYSFLAG == 0)).tolist():
                compressed_findings(self.findings.append, self.read(rec[K.POS, i]), t.config)


def record_findings(add, buf, file_start: int, head: Message, f: int, t: Task):
    """The findings of a record the kernel flagged (`f`), in the order the checks run, to `add`."""
    pos, size, sysflag = head.position, head.storeSize, head.sysFlag
    if f & K.F_PHYSICAL_OFFSET:
        start = file_start + pos
        add(
            (
                "physical-offset",
                "error",
                pos,
                f"PHYSICALOFFSET field is {head.physicalOffset} but the record starts "
                f"at {start} (stale or misplaced data)",
            )
        )
    if f & K.F_SYSFLAG:
        what = (
            f"unknown bits 0x{sysflag & ~S.KNOWN_SYSFLAG_BITS & 0xFFFFFFFF:x}"
            if sysflag & ~S.KNOWN_SYSFLAG_BITS
            else f"compression type {(sysflag & S.COMPRESSION_TYPE_MASK) >> 8} (the decoder knows 0..3)"
        )
        add(("sysflag", "error", pos, f"sysFlag 0x{sysflag & 0xFFFFFFFF:x} has {what}"))
    if f & K.F_EMPTY_TOPIC:
        add(("topic-invalid", "error", pos, "empty topic"))
    if f & K.F_DROPPED_SEGMENTS:
        text = decode_utf8(head.propertiesBytes)
        dropped = [seg for seg in text.split("\x02") if seg and not (0 < seg.find("\x01"))]
        add(("properties", "warning", pos, f"property segment(s) the broker's parser drops: {dropped[:3]!r}"))
    if f & K.F_PROPERTIES_UTF8:
        try:
            head.propertiesBytes.decode("utf-8")
        except UnicodeDecodeError as e:
            add(
                (
                    "properties",
                    "warning",
                    pos,
                    f"properties are not valid UTF-8 ({e.reason} at byte {e.start}): "
                    f"the broker reads replacement characters there",
                )
            )
    verified = False
    if f & (K.F_PROPERTY_CRC | K.F_PROPERTY_CRC_TEXT):
        stored = crc_from_digits(head.properties[CRC32_PROPERTY])
        with memoryview(buf) as mv:
            computed = zlib.crc32(mv[pos : pos + size - S.CRC32_RESERVED_LEN]) & CRC_MASK
        verified = stored == computed
        if not verified:
            add(
                (
                    "property-crc",
                    "error",
                    pos,
                    f"__CRC32# property says {stored}, the record's first "
                    f"{size - S.CRC32_RESERVED_LEN} bytes give {computed}",
                )
            )
    if f & K.F_NO_PROPERTY_CRC:
        add(
            (
                "property-crc",
                "error",
                pos,
                "no __CRC32# property, which forceVerifyPropCRC requires: the broker's recovery rejects this record",
            )
        )
    if f & (K.F_PARSED_PROPERTIES | K.F_PROPERTIES_UTF8):
        parse_findings(add, head, t)
    if f & K.F_BODY_CRC and not verified:
        got = zlib.crc32(head.body) & CRC_MASK
        add(
            (
                "body-crc",
                "error",
                pos,
                f"body CRC {head.bodyCRC} stored, {got} computed over the "
                f"{head.bodyLength}-byte body: the body changed after it was written",
            )
        )


def compressed_findings(add, m: Message, config: BrokerConfig):
    """A compressed body a consumer cannot decompress, or that inflates past the decompression limit
    (inflated no further than that: a few stored bytes can claim gigabytes)."""
    limit = decompression_limit(config.maxMessageSize)
    try:
        m.decompressed_body(limit)
    except DecompressionLimitError as e:
        add(
            (
                "decompressed-size",
                "warning",
                m.position,
                f"the compressed body {e}: maxMessageSize x {DECOMPRESSION_FACTOR}",
            )
        )
    except ValueError as e:  # the consumer's decode fails too
        add(
            (
                "compressed-body",
                "error",
                m.position,
                f"the {m.bodyLength}-byte compressed body does not decompress: {e}",
            )
        )


def topic_findings(add, buf, topics: np.ndarray, names: list[str]):
    """Per distinct topic of the chunk (by its bytes): not UTF-8, or not usable as a directory name."""
    for k, name in enumerate(names):
        pos = int(topics[T_FIRST, k])
        if not topics[T_WELL_FORMED, k]:
            at = int(topics[T_AT, k])
            raw = bytes(buf[at : at + int(topics[T_LEN, k])])
            add(
                ("topic-invalid", "warning", pos, f"topic bytes {raw!r} are not valid UTF-8: the broker reads {name!r}")
            )
        if name and not valid_topic_dir_name(name):
            add(
                (
                    "topic-invalid",
                    "error",
                    pos,
                    f"topic {name!r} cannot be a consumequeue directory name ({int(topics[T_COUNT, k])} record(s))",
                )
            )


def _int_or(text, default: int) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return default


def parse_findings(add, head: Message, t: Task):
    """The finding of a record whose properties fail the broker's check (failed_properties), to `add`."""
    failure = failed_properties(head, t.allow_v2, t.config.duplicationEnable)
    if failure is not None:
        kind, detail = failure
        add((kind, "error", head.position, f"{detail}: {PROPERTY_FAILURE_COSTS[kind]}"))


def failed_properties(m: Message, v5: bool, dup_info: bool) -> tuple[str, str] | None:
    """What fails checkMessageAndReturnSize in a sound record's properties (rules.property_failure), as (kind,
    detail), else None."""
    return property_failure(m.topic, bool(m.propertiesBytes), m.properties, v5, dup_info)


def _tags_code(m, config: BrokerConfig, v5: bool) -> int:
    """The dispatcher's tagsCode of a record, UNKNOWN_TAGS where the broker's check of the record fails (it
    computes none: its dispatch fails)."""
    if failed_properties(m, v5, False) is not None:
        return UNKNOWN_TAGS
    return tags_code(m, config)


def _lmq_targets(m, config: BrokerConfig, v5: bool) -> list[tuple[str, int, int]]:
    try:
        return cq_targets(m, config, v5)[1:]
    except ValueError:  # an INNER_MULTI_QUEUE_OFFSET that is not a number: the broker's dispatch throws too
        return []
