"""The commitlog half of `verify`: one chunk of one commitlog file checked record by record, fast.

Only one zlib.crc32 call per body and, where the consumequeues do not name the record starts, the walk from
record to record (each TOTALSIZE says where the next one starts) run in Python; every other per-record step
is a numpy operation over the whole chunk: fields are gathered at the record starts through stride-1 views
of the mapped file; the length formula, PHYSICALOFFSET and sysFlag are checked for all records at once; the
property strings of the chunk are parsed together (segments found from the positions of the 0x01/0x02
separators, TAGS/KEYS/UNIQ_KEY picked by comparing key bytes as words, Java String.hashCode of ASCII values
as an exact int64 dot product with powers of 31). Records that need more than that (non-ASCII text,
SCHEDULE_TOPIC_XXXX delay, LMQ multi-dispatch, inner batches, very long keys) go through
`record.read_record` and the broker rules of `rmqctl.dispatch`, which the tests also use as the reference
for the fast path.

A chunk can start anywhere in a file: it then finds the first record start itself (magic, PHYSICALOFFSET
equal to the position, a length that adds up), and the caller checks that the previous chunk's walk ended
exactly there. Damage ends the walk; the scan finds the next record start after it the same way, so one
torn record costs one finding, not the rest of the file.
"""
from __future__ import annotations

import dataclasses
import mmap
import re
import zlib

import numpy as np

from .. import schema as S
from ..config import BrokerConfig
from ..dispatch import cq_targets, index_key_hash, index_keys, tags_code
from ..javacompat import CRC32_PROPERTY, crc_from_digits, decode_utf8, java_string_hash
from ..record import Blank, RecordError, read_record
from ..store import valid_topic_dir_name

CRC_MASK = 0x7FFFFFFF
BATCH = 8192  # records whose properties and bodies are checked together
KEYWORDS = ("TAGS", "KEYS", "UNIQ_KEY", "DELAY", CRC32_PROPERTY, "INNER_MULTI_DISPATCH", "INNER_NUM")
FAST_TEXT = 64  # topics and keys up to this many bytes are hashed vectorised; longer ones go the slow way
PAD = FAST_TEXT + 8  # zero bytes around the property blob so fixed-width gathers never leave it
SEARCH_PREFIX = b"\xda\xa3\x20"  # common first three bytes of MAGIC_V1 and MAGIC_V2 (big-endian)
BLANK_BYTES = S.INT32.pack(S.MAGIC_BLANK)
SIZE = S.INT32


def _field_offsets() -> dict[str, tuple[int, ...]]:
    """Offset of each head field per host combination (index = sysFlag bits 4..5 as 0..3), from the
    struct formats that schema.RECORD_HEADS derives from the construct declaration."""
    out: dict[str, list[int]] = {}
    for combo in range(4):
        head, names = S.RECORD_HEADS[(bool(combo & 1), bool(combo & 2))]
        pos = 0
        for name, (count, code) in zip(names, re.findall(r"(\d*)([a-zA-Z])", head.format[1:])):
            out.setdefault(name, []).append(pos)
            pos += S.struct.calcsize(">" + count + code)
        out.setdefault("headSize", []).append(pos)
    return {k: tuple(v) for k, v in out.items()}


OFFSETS = _field_offsets()
# fields before the born host sit at the same place in every layout
for _name in ("magicCode", "bodyCRC", "queueId", "queueOffset", "physicalOffset", "sysFlag"):
    assert len(set(OFFSETS[_name])) == 1
HEAD_SIZE = np.array(OFFSETS["headSize"], dtype=np.int64)
HOSTS_LEN = HEAD_SIZE - 72  # B + S of each layout: the length formula is 74 + B + S + T + ...
HEAD_ROW = int(HEAD_SIZE.max())  # one gather per record reads the whole head, whatever its layout


def _head_dtype(combo: int) -> np.dtype:
    """The head of one host combination as a numpy record of HEAD_ROW bytes (schema.RECORD_HEADS' struct)."""
    head, names = S.RECORD_HEADS[(bool(combo & 1), bool(combo & 2))]
    codes = re.findall(r"(\d*)([a-zA-Z])", head.format[1:])
    formats = [f"S{count}" if code == "s" else f">{'i' if code.islower() else 'u'}{S.struct.calcsize('>' + code)}"
               for count, code in codes]
    return np.dtype({"names": list(names), "formats": formats, "itemsize": HEAD_ROW,
                     "offsets": [OFFSETS[name][combo] for name in names]})


HEAD_DTYPES = [_head_dtype(combo) for combo in range(4)]
TAIL_ROW = 40  # bytes read from the topic length on: topics up to 37 bytes come with the properties length
POW31 = np.array([pow(31, k, 1 << 32) for k in range(FAST_TEXT + 2)], dtype=np.uint64)
POW31_WINDOW = {w: POW31[:w][::-1].astype(np.int64) for w in (8, 16, 32, 64)}  # right-aligned windows


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
    check_crc: bool = True
    want_tags: bool = True
    want_keys: bool = True
    hints: np.ndarray | None = None  # likely record starts in [begin, stop), ascending (from the consumequeues)


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
    pos: np.ndarray  # in-file positions of the checked (claimed, well-formed) records
    size: np.ndarray
    queue_id: np.ndarray
    queue_offset: np.ndarray
    sysflag: np.ndarray
    store_ts: np.ndarray
    topic: np.ndarray  # index into `topics`
    tags: np.ndarray  # the tagsCode the broker's dispatch computes (0 when not asked for)
    topics: list[str]
    key_record: np.ndarray  # index keys: record (index into the arrays above) and IndexService hash
    key_hash: np.ndarray
    lmq: list[tuple[int, str, int, int]]  # extra consumequeue targets: (record, topic, queueId, queueOffset)
    inner_num: dict[int, int]  # record -> INNER_NUM of inner-batch records (queue offset advances by it)
    findings: list[tuple[str, str, int, str]]  # (kind, severity, position, detail)
    regions: list[Region]
    blank: tuple[int, int] | None  # (position, storeSize) of the BLANK ending the file
    trailing_separator: int  # records whose properties end with 0x02 (5.x style)
    bytes: int


class _Views:
    """Big-endian integers at any byte position of a buffer (stride-1 views: no copy, one gather)."""

    def __init__(self, buf, limit: int):
        self.limit = limit
        self.u8 = np.frombuffer(buf, dtype=np.uint8, count=limit) if limit else np.zeros(0, np.uint8)
        self.i1 = self._view(buf, ">i1")
        self.i2 = self._view(buf, ">i2")
        self.i4 = self._view(buf, ">i4")
        self.i8 = self._view(buf, ">i8")

    def _view(self, buf, dtype):
        width = np.dtype(dtype).itemsize
        n = max(self.limit - width + 1, 0)
        if not n:
            return np.zeros(0, dtype)
        return np.ndarray(shape=(n,), dtype=dtype, buffer=buf, offset=0, strides=(1,))


def _at(view: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """view[pos] as int64, with positions outside the view read at its edge (such records fail the
    length check anyway; this only keeps a garbage length from indexing out of bounds)."""
    if len(view) == 0:
        return np.zeros(len(pos), dtype=np.int64)
    if len(pos) and (pos.min() < 0 or pos.max() >= len(view)):
        pos = np.clip(pos, 0, len(view) - 1)
    return view[pos].astype(np.int64)


def open_map(path: str):
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        if size == 0:
            return b""
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def scan_chunk(task: Task) -> ChunkResult:
    buf = open_map(task.path)
    limit = min(len(buf), task.file_size)
    return _Scanner(task, buf, limit).run()


class _Scanner:
    def __init__(self, task: Task, buf, limit: int):
        self.t = task
        self.buf = buf
        self.limit = limit
        self.v = _Views(buf, limit)
        self.allow_v2 = task.config.rocketmqVersion != 4
        self.parts: list[dict] = []
        self.findings: list[tuple[str, str, int, str]] = []
        self.regions: list[Region] = []
        self.blank = None
        self.bytes = 0

    # -- the walk ------------------------------------------------------------------------------------------
    def run(self) -> ChunkResult:
        t = self.t
        pos = t.begin if t.forced else self.resync(t.begin)
        first = pos
        while pos is not None and pos < t.stop:
            starts, heads, end = self.chain(pos)
            good, cut = self.decode(starts, heads)
            if good is not None:
                self.check(good)
            if cut is None:
                if end >= t.stop or end >= self.limit:
                    if end == self.limit == t.file_size and t.stop >= self.limit:
                        self.missing_blank(end)
                    pos = end
                    break
                cut = end
            pos = self.after_stop(cut)
        self.bytes = max(0, min(t.stop, self.limit) - t.claim_from)
        return self.result(first, pos if pos is not None else self.limit)

    def chain(self, pos: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Record starts from `pos` by TOTALSIZE alone, until a size that cannot be right or `stop`, with
        their heads (HEAD_ROW bytes each). Where the hints (the record starts the consumequeues name) follow
        each other exactly by the sizes the commitlog holds, the walk takes them in one vectorised step;
        elsewhere it reads size by size."""
        parts = []  # (starts, their heads or None)
        buf, limit, stop = self.buf, self.limit, self.t.stop
        hints = self.t.hints if self.t.hints is not None else np.zeros(0, np.int64)
        unpack = SIZE.unpack_from
        while pos < stop and pos + 8 <= limit:
            k = int(np.searchsorted(hints, pos))
            if k < len(hints) and hints[k] == pos:
                run, heads, pos, broken = self._hinted(hints, k)
                parts.append((run, heads))
                if broken:
                    break
                continue
            bound = min(stop, int(hints[k])) if k < len(hints) else stop
            starts = []
            add = starts.append
            broken = False
            while pos < bound and pos + 8 <= limit:
                size = unpack(buf, pos)[0]
                if size < 8 or pos + size > limit:
                    broken = True
                    break
                add(pos)
                pos += size
            parts.append((np.array(starts, dtype=np.int64), None))
            if broken:
                break
        if len(parts) == 1 and parts[0][1] is not None:
            return parts[0][0], parts[0][1], pos
        starts = np.concatenate([p for p, _ in parts]) if parts else np.zeros(0, np.int64)
        return starts, _rows(buf, limit, starts, HEAD_ROW), pos

    def _hinted(self, hints: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, int, bool]:
        """The longest run of hints from hints[k] in which each record ends where the next one starts.
        Returns the run, its heads, where the walk goes on, and whether a size there cannot be right."""
        limit, stop = self.limit, self.t.stop
        h = hints[k : int(np.searchsorted(hints, stop))]
        h = h[h + 8 <= limit]
        heads = _rows(self.buf, limit, h, HEAD_ROW)
        size = heads.view(HEAD_DTYPES[0])["storeSize"].ravel().astype(np.int64)
        fits = (size >= 8) & (h + size <= limit)
        links = fits[:-1] & (h[:-1] + size[:-1] == h[1:])
        breaks = np.flatnonzero(~links)
        m = int(breaks[0]) if len(breaks) else len(h) - 1
        if not fits[m]:
            return h[:m], heads[:m], int(h[m]), True
        return h[: m + 1], heads[: m + 1], int(h[m] + size[m]), False

    def decode(self, starts: np.ndarray, rows: np.ndarray):
        """The length formula and field bounds for every record at once (read_record's checks), from the
        records' starts and heads. Returns the well-formed prefix of the chain (fields as arrays) and the
        position where it breaks (None: it does not)."""
        if not len(starts):
            return None, None
        v = self.v
        head = rows.view(HEAD_DTYPES[0]).ravel()  # fields up to sysFlag sit at the same place in every layout
        size = head["storeSize"].astype(np.int64)
        magic = head["magicCode"]
        is_v2 = magic == S.MAGIC_V2
        combo = (head["sysFlag"] >> 4) & 3
        head_len = HEAD_SIZE[combo]
        body_len = head["bodyLength"].astype(np.int64)
        store_ts = head["storeTimestamp"].astype(np.int64)
        if combo.any():
            for c in (1, 2, 3):
                sel = np.flatnonzero(combo == c)
                if len(sel):
                    other = rows[sel].view(HEAD_DTYPES[c]).ravel()
                    body_len[sel], store_ts[sel] = other["bodyLength"], other["storeTimestamp"]
        width = is_v2 + 1
        topic_len_at = starts + head_len + np.maximum(body_len, 0)
        # the topic length, the topic and (for short topics) the properties length, with one gather
        tail = _rows(self.buf, self.limit, topic_len_at, TAIL_ROW)
        topic_len = tail[:, 0].view(np.int8).astype(np.int64)
        if is_v2.any():
            topic_len = np.where(is_v2, tail[:, 0].view(np.int8).astype(np.int64) << 8 | tail[:, 1], topic_len)
        topic_at = topic_len_at + width
        props_len_col = width + topic_len
        near = (topic_len >= 0) & (props_len_col + 2 <= TAIL_ROW)
        flat_at = np.arange(len(starts), dtype=np.int64) * TAIL_ROW + np.where(near, props_len_col, 0)
        tail_bytes = tail.reshape(-1)
        props_len = tail_bytes[flat_at].view(np.int8).astype(np.int64) << 8 | tail_bytes[flat_at + 1]
        if not near.all():
            far = np.flatnonzero(~near)
            props_len[far] = _at(v.i2, topic_at[far] + topic_len[far])
        expected = (74 + HOSTS_LEN[combo] + width) + np.maximum(body_len, 0) + topic_len + np.maximum(props_len, 0)
        # every gather above stays inside the record when the formula adds up and no length is negative
        ok = ((magic == S.MAGIC_V1) | (is_v2 & self.allow_v2)) & (size >= head_len + 3) & (topic_len >= 0)
        ok &= (expected == size) & (topic_len_at + width + 2 <= starts + size)
        bad = np.flatnonzero(~ok)
        n = int(bad[0]) if len(bad) else len(starts)
        cut = int(starts[n]) if n < len(starts) else None
        if n == 0:
            return None, cut
        sl = slice(0, n)
        good = {
            "pos": starts[sl], "size": size[sl], "head": head[sl], "sysflag": head["sysFlag"][sl].astype(np.int64),
            "combo": combo[sl], "body_len": body_len[sl], "store_ts": store_ts[sl], "body_at": starts[sl] + head_len[sl],
            "topic_at": topic_at[sl], "topic_len": topic_len[sl], "props_len": np.maximum(props_len[sl], 0),
            "tail": tail[sl], "v2": is_v2[sl],
        }
        good["end"] = good["pos"] + good["size"]
        return good, cut

    def after_stop(self, x: int) -> int | None:
        """The walk stopped at `x`: a BLANK ends the file; anything else is damage, reported from `x` up to
        the next record start, where the walk goes on."""
        t = self.t
        if x + 8 <= self.limit:
            size, magic = S.BLANK.unpack_from(self.buf, x)
            if magic == S.MAGIC_BLANK:
                if x >= t.claim_from:
                    self.blank = (x, size)
                    if size != t.file_size - x:
                        self.findings.append(("blank-size", "error", x,
                                              f"the BLANK record claims {size} bytes but {t.file_size - x} remain in the file"))
                nxt = self.resync(x + 8)
                if nxt is not None and x >= t.claim_from:
                    self.findings.append(("data-after-blank", "error", x,
                                          f"a record starts at position {nxt} after the BLANK record at {x}: the broker "
                                          f"skips everything after a BLANK, so it never reads it"))
                return nxt
        try:
            rec = read_record(self.buf, x, self.limit, self.allow_v2)
        except RecordError as e:
            cause, detail = e.kind, e.detail
        else:
            # read_record accepts what the vectorised check refused: trust the reference decoder
            if isinstance(rec, Blank):
                return self.resync(x + 8)
            self.check_one(x)
            return x + rec.storeSize
        nxt = self.resync(x + 1)
        if x >= t.claim_from:
            last = -1 if nxt is not None else self.last_nonzero(x)
            head = bytes(self.buf[x : min(x + 8, self.limit)])
            self.regions.append(Region(x, cause, detail, nxt, last, not head.strip(b"\0")))
        return nxt

    def missing_blank(self, end: int):
        if end >= self.t.claim_from:
            self.regions.append(Region(end, "truncated-record", "the last record ends at the end of the file, with no "
                                       "room for the BLANK record", None, -1, True))

    def resync(self, pos: int) -> int | None:
        """The first position >= pos where a record starts: V1/V2 magic with PHYSICALOFFSET equal to the
        position and a length that adds up, or a BLANK whose size reaches the end of the file."""
        buf, limit, start = self.buf, self.limit, self.t.file_start
        best = None
        p = pos + 4
        while True:
            at = buf.find(SEARCH_PREFIX, p, limit)
            if at < 0:
                break
            cand = at - 4
            p = at + 1
            if cand < pos or cand + 36 > limit or buf[at + 3] not in (0xA7, 0xAB):
                continue
            if S.INT64.unpack_from(buf, cand + 28)[0] != start + cand:
                continue
            try:
                if not isinstance(read_record(buf, cand, limit, self.allow_v2), Blank):
                    best = cand
                    break
            except RecordError:
                continue
        p = pos + 4
        while True:
            at = buf.find(BLANK_BYTES, p, best + 4 if best is not None else limit)
            if at < 0:
                break
            cand = at - 4
            p = at + 1
            if cand >= pos and SIZE.unpack_from(buf, cand)[0] == self.t.file_size - cand:
                return cand
        return best

    def last_nonzero(self, pos: int) -> int:
        """The last non-zero byte at or after `pos` (-1: none); preallocated tails are long zero runs."""
        u8 = self.v.u8
        end = self.limit
        step = 1 << 22
        while end > pos:
            lo = max(pos, end - step)
            chunk = u8[lo:end]
            if np.count_nonzero(chunk):
                return lo + int(np.flatnonzero(chunk)[-1])
            end = lo
        return -1

    # -- checks on well-formed records ---------------------------------------------------------------------
    def check_one(self, pos: int):
        starts = np.array([pos], dtype=np.int64)
        good, cut = self.decode(starts, _rows(self.buf, self.limit, starts, HEAD_ROW))
        if good is not None:
            self.check(good)

    def check(self, r: dict):
        t = self.t
        claimed = r["pos"] >= t.claim_from
        if not claimed.all():
            r = {k: a[claimed] for k, a in r.items()}
        n = len(r["pos"])
        if not n:
            return
        pos = r["pos"]
        head = r["head"]
        r["queue_id"] = head["queueId"].astype(np.int32)
        r["queue_offset"] = head["queueOffset"].astype(np.int64)
        self.field_checks(r, head["physicalOffset"])
        slow = r["topic_len"] > FAST_TEXT
        tags = np.zeros(n, dtype=np.int64)
        trailing = 0
        batches = []
        # properties and bodies batch by batch: their copies and temporaries stay small and in cache
        for lo in range(0, n, BATCH):
            b = {k: a[lo : lo + BATCH] for k, a in r.items()}
            props = _Properties(self.buf, self.limit, b)
            self.property_checks(b, props)
            slow[lo : lo + BATCH] |= props.needs_slow(t.config, t.want_tags, t.want_keys)
            prop_crc_ok = self.property_crc(b, props)
            if t.check_crc:
                self.body_crc(b, b["head"]["bodyCRC"].astype(np.int64), prop_crc_ok)
            if t.want_tags:
                tags[lo : lo + BATCH] = props.tags_codes()
            trailing += props.trailing_separator
            if t.want_keys:
                batches.append((lo, b, props))
        topic_id, topics = self.topics(r, slow)  # whole chain: one finding per bad topic
        keys = [props.index_keys(b, topic_id[lo : lo + BATCH], topics, ~slow[lo : lo + BATCH]) for lo, b, props in batches]
        key_record = np.concatenate([rec + lo for (lo, _, _), (rec, _) in zip(batches, keys)] or [np.zeros(0, np.int32)])
        key_hash = np.concatenate([h for _, h in keys] or [np.zeros(0, np.int32)])
        lmq, inner = [], {}
        for i in np.flatnonzero(slow | ((r["sysflag"] & S.INNER_BATCH_FLAG) != 0)).tolist():
            m = read_record(self.buf, int(pos[i]), self.limit, self.allow_v2)
            if slow[i]:
                topic_id[i] = _topic_index(topics, m.topic)
                tags[i] = _tags_code(m, t.config)
                if t.want_keys:
                    hashes = [index_key_hash(k) for k in index_keys(m)]
                    key_record = np.concatenate([key_record, np.full(len(hashes), i, np.int32)])
                    key_hash = np.concatenate([key_hash, np.array(hashes, dtype=np.int32)])
                lmq += [(i, name, qid, qoff) for name, qid, qoff in _lmq_targets(m, t.config)]
            if r["sysflag"][i] & S.INNER_BATCH_FLAG:
                inner[i] = _int_or(m.properties.get("INNER_NUM"), 1)
        base = sum(len(p["pos"]) for p in self.parts)
        self.parts.append({
            "pos": pos, "size": r["size"].astype(np.int32), "queue_id": r["queue_id"], "queue_offset": r["queue_offset"],
            "sysflag": r["sysflag"].astype(np.int32), "store_ts": r["store_ts"], "topic": topic_id, "topics": topics,
            "tags": tags, "key_record": key_record + base, "key_hash": key_hash,
            "lmq": [(i + base, *rest) for i, *rest in lmq], "inner": {i + base: k for i, k in inner.items()},
            "trailing": trailing,
        })

    def field_checks(self, r: dict, phys: np.ndarray):
        start = self.t.file_start
        pos = r["pos"]
        for i in np.flatnonzero(phys != start + pos).tolist():
            self.findings.append(("physical-offset", "error", int(pos[i]),
                                  f"PHYSICALOFFSET field is {int(phys[i])} but the record starts at {start + int(pos[i])} "
                                  f"(stale or misplaced data)"))
        flags = r["sysflag"]
        compression = (flags & S.COMPRESSION_TYPE_MASK) >> 8
        weird = ((flags & ~S.KNOWN_SYSFLAG_BITS) != 0) | (((flags & S.COMPRESSED_FLAG) != 0) & (compression > 3))
        for i in np.flatnonzero(weird).tolist():
            f = int(flags[i])
            what = (f"unknown bits 0x{f & ~S.KNOWN_SYSFLAG_BITS & 0xFFFFFFFF:x}" if f & ~S.KNOWN_SYSFLAG_BITS
                    else f"compression type {(f & S.COMPRESSION_TYPE_MASK) >> 8} (the decoder knows 0..3)")
            self.findings.append(("sysflag", "error", int(pos[i]), f"sysFlag 0x{f & 0xFFFFFFFF:x} has {what}"))
        for i in np.flatnonzero(r["topic_len"] == 0).tolist():
            self.findings.append(("topic-invalid", "error", int(pos[i]), "empty topic"))

    def property_checks(self, r: dict, props: "_Properties"):
        for i in props.malformed_records().tolist():
            text = decode_utf8(bytes(self.buf[int(r["end"][i] - r["props_len"][i]) : int(r["end"][i])]))
            dropped = [seg for seg in text.split("\x02") if seg and not (0 < seg.find("\x01"))]
            self.findings.append(("properties", "warning", int(r["pos"][i]),
                                  f"property segment(s) the broker's parser drops: {dropped[:3]!r}"))
        for i in np.flatnonzero(props.non_ascii).tolist():
            try:
                bytes(self.buf[int(r["end"][i] - r["props_len"][i]) : int(r["end"][i])]).decode("utf-8")
            except UnicodeDecodeError as e:
                self.findings.append(("properties", "warning", int(r["pos"][i]),
                                      f"properties are not valid UTF-8 ({e.reason} at byte {e.start}): the broker "
                                      f"reads replacement characters there"))

    def property_crc(self, r: dict, props: "_Properties") -> np.ndarray:
        """The 5.x `__CRC32#` check over the first storeSize-20 bytes. Returns which records it verified."""
        cfg = self.t.config
        verified = np.zeros(len(r["pos"]), dtype=bool)
        if not self.t.check_crc:
            return verified
        values = props.values(CRC32_PROPERTY)
        mv = memoryview(self.buf)
        for i, text in values.items():
            p, size = int(r["pos"][i]), int(r["size"][i])
            stored = crc_from_digits(text)
            computed = zlib.crc32(mv[p : p + size - S.CRC32_RESERVED_LEN]) & CRC_MASK
            if stored == computed:
                verified[i] = True
            else:
                self.findings.append(("property-crc", "error", p,
                                      f"__CRC32# property says {stored}, the record's first {size - S.CRC32_RESERVED_LEN} "
                                      f"bytes give {computed}"))
        if cfg.forceVerifyPropCRC and self.allow_v2:
            for i in np.flatnonzero(~props.has(CRC32_PROPERTY)).tolist():
                self.findings.append(("property-crc", "error", int(r["pos"][i]),
                                      "no __CRC32# property, which forceVerifyPropCRC requires: the broker's recovery "
                                      "rejects this record"))
        mv.release()
        return verified

    def body_crc(self, r: dict, stored: np.ndarray, skip: np.ndarray):
        todo = np.flatnonzero((r["body_len"] > 0) & ~skip)
        if not len(todo):
            return
        starts = r["body_at"][todo]
        ends = starts + r["body_len"][todo]
        with memoryview(self.buf) as mv:
            # map() keeps the per-record loop in C: slice, crc32, collect
            got = np.fromiter(map(zlib.crc32, map(mv.__getitem__, map(slice, starts.tolist(), ends.tolist()))),
                              dtype=np.int64, count=len(todo)) & CRC_MASK
        for k in np.flatnonzero(got != stored[todo]).tolist():
            i = int(todo[k])
            self.findings.append(("body-crc", "error", int(r["pos"][i]),
                                  f"body CRC {int(stored[i])} stored, {int(got[k])} computed over the {int(r['body_len'][i])}-byte "
                                  f"body: the body changed after it was written"))

    def topics(self, r: dict, slow: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """A topic index per record: topics up to FAST_TEXT bytes grouped exactly by their bytes (masked
        64-bit words), longer ones decoded one by one."""
        n = len(r["pos"])
        out = np.zeros(n, dtype=np.int32)
        topics: list[str] = []
        fast = np.flatnonzero(~slow)
        if len(fast):
            lengths = r["topic_len"][fast]
            width = max(1, int((lengths.max() + 7) // 8)) * 8
            if 1 + width <= TAIL_ROW and not r["v2"][fast].any():  # the topics are in decode's rows already
                raw = np.ascontiguousarray((r["tail"] if len(fast) == n else r["tail"][fast])[:, 1 : 1 + width])
            else:
                raw = _rows(self.buf, self.limit, r["topic_at"][fast], width)
            words = _text_words(raw, lengths)
            mixed = words[:, 0].copy()
            for k in range(1, words.shape[1]):
                mixed = mixed * np.uint64(0x9E3779B97F4A7C15) + words[:, k]
            _, first, inverse = np.unique(mixed, return_index=True, return_inverse=True)
            inverse = inverse.ravel()
            if (words != words[first][inverse]).any():  # two topics mixed to one value: group them exactly
                _, first, inverse = np.unique(words, axis=0, return_index=True, return_inverse=True)
                inverse = inverse.ravel()
            for i in fast[first].tolist():
                a = int(r["topic_at"][i])
                topics.append(decode_utf8(bytes(self.buf[a : a + int(r["topic_len"][i])])))
            out[fast] = inverse
        for i in np.flatnonzero(slow).tolist():
            a = int(r["topic_at"][i])
            out[i] = _topic_index(topics, decode_utf8(bytes(self.buf[a : a + int(r["topic_len"][i])])))
        for k, name in enumerate(topics):
            if "\ufffd" in name:
                i = int(np.flatnonzero(out == k)[0])
                a = int(r["topic_at"][i])
                raw = bytes(self.buf[a : a + int(r["topic_len"][i])])
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    self.findings.append(("topic-invalid", "warning", int(r["pos"][i]),
                                          f"topic bytes {raw!r} are not valid UTF-8: the broker reads {name!r}"))
            if name and not valid_topic_dir_name(name):
                bad = np.flatnonzero(out == k)
                self.findings.append(("topic-invalid", "error", int(r["pos"][bad[0]]),
                                      f"topic {name!r} cannot be a consumequeue directory name ({len(bad)} record(s))"))
        return out, topics

    def result(self, first, handoff) -> ChunkResult:
        parts = self.parts
        cat = (lambda k, dt: np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, dt))
        topics: list[str] = []
        topic_arrays = []
        for p in parts:
            remap = np.array([_topic_index(topics, name) for name in p["topics"]], dtype=np.int32)
            topic_arrays.append(remap[p["topic"]] if len(remap) else p["topic"])
        return ChunkResult(
            task=self.t, first=first, handoff=handoff,
            pos=cat("pos", np.int64), size=cat("size", np.int32), queue_id=cat("queue_id", np.int32),
            queue_offset=cat("queue_offset", np.int64), sysflag=cat("sysflag", np.int32),
            store_ts=cat("store_ts", np.int64),
            topic=np.concatenate(topic_arrays) if topic_arrays else np.zeros(0, np.int32), tags=cat("tags", np.int64),
            topics=topics, key_record=cat("key_record", np.int32), key_hash=cat("key_hash", np.int32),
            lmq=[x for p in parts for x in p["lmq"]], inner_num={k: v for p in parts for k, v in p["inner"].items()},
            findings=self.findings, regions=self.regions, blank=self.blank,
            trailing_separator=sum(p["trailing"] for p in parts), bytes=max(self.bytes, 0),
        )


def _topic_index(topics: list[str], name: str) -> int:
    try:
        return topics.index(name)
    except ValueError:
        topics.append(name)
        return len(topics) - 1


def _int_or(text, default: int) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return default


def _tags_code(m, config: BrokerConfig) -> int:
    try:
        return tags_code(m, config)
    except Exception:  # a DELAY the broker cannot parse: its dispatch of the record fails; no code to compare
        return 0


def _lmq_targets(m, config: BrokerConfig) -> list[tuple[str, int, int]]:
    try:
        return cq_targets(m, config)[1:]
    except ValueError:  # an INNER_MULTI_QUEUE_OFFSET that is not a number: the broker's dispatch throws too
        return []


def _text_words(raw: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Texts of up to FAST_TEXT bytes (`raw`: an (n, 8k) uint8 array holding one text from each row's
    start, overwritten) as rows of little-endian 64-bit words, bytes past each text's length zeroed, plus
    the length as a last column: equal rows <=> equal texts."""
    raw *= np.arange(raw.shape[1], dtype=np.int32)[None, :] < lengths[:, None].astype(np.int32)
    words = raw.view("<u8").reshape(len(raw), raw.shape[1] // 8)
    return np.concatenate([words, lengths.astype(np.uint64)[:, None]], axis=1)


def _rows(buf, limit: int, starts: np.ndarray, width: int, out: np.ndarray | None = None) -> np.ndarray:
    """`width` bytes from each start (zero outside the buffer), as an (n, width) uint8 array (written into
    `out`, a contiguous (n, width) uint8 array, when given)."""
    n = len(starts)
    room = limit - width + 1
    inside = (starts < room) & (starts >= 0) if n and room > 0 else np.zeros(n, dtype=bool)
    whole = np.ndarray(shape=(max(room, 0),), dtype=np.dtype((np.void, width)), buffer=buf, offset=0, strides=(1,)) \
        if room > 0 else None
    if n and inside.all():
        if out is None:
            return whole[starts].view(np.uint8).reshape(n, width)
        out.reshape(-1).view(np.dtype((np.void, width)))[:] = whole[starts]
        return out
    if out is None:
        out = np.empty((n, width), dtype=np.uint8)
    if not n:
        return out
    # rows reaching past either end of the buffer byte by byte, the others whole
    edge = np.flatnonzero(~inside)
    if len(edge) < n:
        keep = np.flatnonzero(inside)
        out[keep] = whole[starts[keep]].view(np.uint8).reshape(len(keep), width)
    idx = starts[edge][:, None] + np.arange(width)[None, :]
    part = np.frombuffer(buf, dtype=np.uint8, count=limit)[np.clip(idx, 0, limit - 1)] if limit else \
        np.zeros(idx.shape, np.uint8)
    part[(idx >= limit) | (idx < 0)] = 0
    out[edge] = part
    return out


class _PropertyRows:
    """The property strings of a batch of records (the last `lengths` bytes before each record end)
    copied into one array of fixed-width rows, one width per size class (records grouped by class), each
    string right-aligned behind a 0x02 with zeros before it, PAD zero bytes around everything."""

    def __init__(self, buf, limit: int, ends: np.ndarray, lengths: np.ndarray):
        self.begin = np.zeros(len(ends), dtype=np.int64)  # where record k's string starts in `data`
        width_of = np.maximum(32, (lengths + 1 + 31) // 32 * 32)
        per_class = np.bincount(width_of // 32)
        widths = (np.flatnonzero(per_class) * 32).tolist()
        counts = per_class[per_class > 0].tolist()
        self.data = np.zeros(PAD + sum(w * c for w, c in zip(widths, counts)) + 1 + PAD, dtype=np.uint8)
        self.data[-PAD - 1] = 2
        self.classes = []  # (first byte, width, records in row order)
        at = PAD
        for width, count in zip(widths, counts):
            sel = np.flatnonzero(width_of == width)
            flat = self.data[at : at + count * width]
            rows = _rows(buf, limit, ends[sel] - width, width, out=flat.reshape(count, width))
            # zero what precedes each string (the tail of its topic and the length field), then a 0x02
            start_col = width - lengths[sel]
            prefix = start_col - 1
            rows *= np.arange(width, dtype=np.uint16)[None, :] >= start_col.astype(np.uint16)[:, None]  # widths < 2^16
            first = np.arange(count, dtype=np.int64) * width
            flat[first + prefix] = 2
            self.begin[sel] = at + first + start_col
            self.classes.append((at, width, sel))
            at += count * width

    def owner(self, positions: np.ndarray) -> np.ndarray:
        """The record whose row holds each position (positions inside the rows)."""
        out = np.full(len(positions), -1, dtype=np.int64)
        for base, width, records in self.classes:
            inside = np.flatnonzero((positions >= base) & (positions < base + len(records) * width))
            out[inside] = records[(positions[inside] - base) // width]
        return out


def java_hash_ascii(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Java String.hashCode (as uint32) of ASCII substrings data[start:start+length], length <= FAST_TEXT:
    each row right-aligned in a fixed window and dotted with 31^k mod 2^32. Every product is below 2^40 and
    every sum below 2^47, so int64 arithmetic is exact; the result is taken mod 2^32."""
    out = np.zeros(len(starts), dtype=np.uint64)
    for width in (8, 16, 32, 64):
        sel = np.flatnonzero((lengths <= width) & (lengths > width // 2 if width > 8 else lengths >= 0))
        if not len(sel):
            continue
        ends = starts[sel] + lengths[sel]
        rows = _rows(data, len(data), ends - width, width)
        rows *= np.arange(width, dtype=np.int32)[None, :] >= (width - lengths[sel])[:, None].astype(np.int32)
        dot = np.einsum("ij,j->i", rows, POW31_WINDOW[width], dtype=np.int64, casting="unsafe")
        out[sel] = dot.astype(np.uint64) & np.uint64(0xFFFFFFFF)
    return out


class _Properties:
    """The property strings of a batch of records, parsed together the way
    MessageDecoder.string2messageProperties parses each: split on 0x02, key up to the first 0x01 (which
    must not be first), later duplicates win, a segment whose value is empty is dropped."""

    def __init__(self, buf, limit: int, r: dict):
        self.r = r
        n = len(r["pos"])
        rows = self.rows = _PropertyRows(buf, limit, r["end"], r["props_len"])
        self.begin = rows.begin
        self.end = self.begin + r["props_len"]
        data = self.data = rows.data
        self.non_ascii = np.zeros(n, dtype=bool)
        if data.max(initial=0) >= 0x80:
            self.non_ascii[rows.owner(np.flatnonzero(data >= 0x80))] = True
        has_props = r["props_len"] > 0
        self.trailing_separator = int(np.count_nonzero(data[self.end[has_props] - 1] == 2))
        # every 0x02 starts a segment, which ends at the next 0x02 (or the end of the record's string)
        is_sep = data - np.uint8(1)
        seps = np.flatnonzero(np.less(is_sep, 2, out=is_sep.view(bool)))  # 0x01 or 0x02, in place: one buffer
        kinds = data[seps]
        twos = np.flatnonzero(kinds == 2)
        self.seg_start = seps[twos] + 1
        nxt = np.minimum(twos + 1, len(seps) - 1)
        nxt_kind, nxt_at = kinds[nxt], seps[nxt]
        # a segment is sound when its first 0x01 comes after at least one key character, or when it is
        # empty; one that begins with zero filler is the space between two records' strings
        sound = ((nxt_kind == 1) & (nxt_at > self.seg_start)) | ((nxt_kind == 2) & (nxt_at == self.seg_start))
        self.unsound = self.seg_start[~sound & (data[self.seg_start] != 0)]
        self.key_len = np.where(nxt_kind == 1, nxt_at - self.seg_start, -1)  # bytes before the first 0x01
        self._found: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def malformed_records(self) -> np.ndarray:
        recs = self.rows.owner(self.unsound)
        return np.unique(recs[(recs >= 0) & ~self.non_ascii[np.maximum(recs, 0)]])

    def _lookup(self, key: str):
        """(records, value starts, value ends) for `key`, the last non-empty occurrence per record."""
        if key in self._found:
            return self._found[key]
        want = key.encode()
        starts = self.seg_start
        cand = np.flatnonzero(self.key_len == len(want))  # segments whose key has the length of this one
        data = self.data
        for j in range(0, len(want), 8):
            chunk = want[j : j + 8]
            rows = _rows(data, len(data), starts[cand] + j, 8).view("<u8").ravel()
            mask = np.uint64((1 << (8 * len(chunk))) - 1)
            cand = cand[(rows & mask) == np.uint64(int.from_bytes(chunk, "little"))]
        recs = self.rows.owner(starts[cand])
        value_start = starts[cand] + len(want) + 1  # after the 0x01
        nxt = np.minimum(cand + 1, len(starts) - 1)
        value_end = np.minimum(np.where(cand + 1 < len(starts), starts[nxt] - 1, len(data)), self.end[recs])
        keep = value_end > value_start
        recs, value_start, value_end = recs[keep], value_start[keep], value_end[keep]
        # rows are in size-class order, not record order: sort by record, keeping the string order
        order = np.lexsort((value_start, recs))
        recs, value_start, value_end = recs[order], value_start[order], value_end[order]
        last = np.append(recs[1:] != recs[:-1], True) if len(recs) else np.zeros(0, bool)
        found = (recs[last], value_start[last], value_end[last])
        self._found[key] = found
        return found

    def has(self, key: str) -> np.ndarray:
        out = np.zeros(len(self.r["pos"]), dtype=bool)
        out[self._lookup(key)[0]] = True
        return out

    def values(self, key: str) -> dict[int, str]:
        recs, a, b = self._lookup(key)
        blob = self.data
        return {int(i): decode_utf8(blob[x:y].tobytes()) for i, x, y in zip(recs.tolist(), a.tolist(), b.tolist())}

    def needs_slow(self, config: BrokerConfig, tags: bool, keys: bool) -> np.ndarray:
        """Records whose dispatch needs more than the vectorised TAGS/KEYS/UNIQ_KEY hashes: LMQ targets,
        the schedule topic's delay, non-ASCII text, texts too long for the vectorised hash."""
        slow = np.zeros(len(self.r["pos"]), dtype=bool)
        if config.enableMultiDispatch:
            slow[self._lookup("INNER_MULTI_DISPATCH")[0]] = True
        if tags or keys:
            slow |= self.non_ascii
        if tags:
            slow[self._lookup("DELAY")[0]] = True  # only the schedule topic uses it; the slow path checks the topic
            recs, a, b = self._lookup("TAGS")
            slow[recs[(b - a) > FAST_TEXT]] = True
        if keys:
            recs, a, b = self._lookup("UNIQ_KEY")
            slow[recs[(b - a) > FAST_TEXT]] = True
            recs, _, length = self.key_words()
            slow[recs[length > FAST_TEXT]] = True
        return slow

    def key_words(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(record, start, length) of every non-empty word of KEYS split on ' ' (String.split(" "))."""
        if "words" in self._found:
            return self._found["words"]
        recs, a, b = self._lookup("KEYS")
        spaces = np.flatnonzero(self.data == 0x20)
        if not len(spaces):
            out = (recs, a, b - a)
        else:
            lo, hi = np.searchsorted(spaces, a), np.searchsorted(spaces, b)
            count = hi - lo
            which = np.repeat(np.arange(len(recs)), count + 1)
            nth = np.arange(len(which)) - np.repeat(np.concatenate([[0], np.cumsum(count + 1)[:-1]]), count + 1)
            before = spaces[np.clip(lo[which] + nth - 1, 0, len(spaces) - 1)]
            after = spaces[np.clip(lo[which] + nth, 0, len(spaces) - 1)]
            start = np.where(nth == 0, a[which], before + 1)
            end = np.where(nth == count[which], b[which], after)
            words = end > start
            out = (recs[which][words], start[words], (end - start)[words])
        out = (out[0].astype(np.int64), out[1].astype(np.int64), out[2].astype(np.int64))
        self._found["words"] = out
        return out

    def tags_codes(self) -> np.ndarray:
        """String.hashCode of TAGS, sign-extended; 0 without TAGS (the schedule rule is the slow path's)."""
        out = np.zeros(len(self.r["pos"]), dtype=np.int64)
        recs, a, b = self._lookup("TAGS")
        fast = (b - a) <= FAST_TEXT
        h = java_hash_ascii(self.data, a[fast], b[fast] - a[fast]).astype(np.int64)
        out[recs[fast]] = np.where(h >= 1 << 31, h - (1 << 32), h)
        return out

    def index_keys(self, r: dict, topic_id: np.ndarray, topics: list[str], fast: np.ndarray):
        """(record, hash) of every `topic#key` IndexService.buildIndex puts for the fast records: UNIQ_KEY,
        then each non-empty KEYS word; nothing for ROLLBACK records."""
        rollback = (r["sysflag"] & S.TRANSACTION_MASK) == S.TRANSACTION_ROLLBACK_TYPE
        keep = fast & ~rollback
        uniq, a, b = self._lookup("UNIQ_KEY")
        words, word_start, word_len = self.key_words()
        rec = np.concatenate([uniq, words])
        start = np.concatenate([a, word_start])
        length = np.concatenate([b - a, word_len])
        sel = keep[rec]
        rec, start, length = rec[sel], start[sel], length[sel]
        key_hash = java_hash_ascii(self.data, start, length)
        topic_hash = np.array([java_string_hash(t) & 0xFFFFFFFF for t in topics], dtype=np.uint64)[topic_id[rec]] \
            if len(rec) else np.zeros(0, np.uint64)
        # hash(topic + "#" + key) = hash(topic)*31^(len+1) + '#'*31^len + hash(key), mod 2^32
        full = (topic_hash * POW31[length + 1] + np.uint64(ord("#")) * POW31[length] + key_hash) & np.uint64(0xFFFFFFFF)
        signed = full.astype(np.int64)
        signed = np.where(signed >= 1 << 31, signed - (1 << 32), signed)
        index_hash = np.where(signed == -(1 << 31), 0, np.abs(signed))  # IndexFile.indexKeyHashMethod
        order = np.argsort(rec, kind="stable")
        return rec[order].astype(np.int32), index_hash[order].astype(np.int32)
