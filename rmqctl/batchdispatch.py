"""The broker's dispatch of a whole commitlog file at once, vectorised with numpy: what dispatch.py decides
record by record (which consumequeue entries, their tagsCode, which index keys and their hashes), computed
over every record of the file together so a rebuild costs a few times a plain header walk instead of a
Python decode per record.

dispatch.py stays the reference. This path handles the common records exactly and hands every other one
to it (read_record + cq_targets / tags_code / index_keys): a record whose topic, TAGS, KEYS or UNIQ_KEY is
not ASCII (Java hashes UTF-16 code units, not bytes), one with a DELAY property (schedule-topic tagsCode)
or, with multi-dispatch on, INNER_MULTI_DISPATCH (LMQ queues). A record that does not pass read_record's
checks ends the batch, as it ends the reference scan of that file.

How the properties are read without decoding each record: the bytes from each record's topic to its
properties' end are gathered into one array; the 0x02 separators split it into segments and the first 0x01
of a segment splits name from value, exactly as MessageDecoder.string2messageProperties splits the decoded
string (0x01/0x02 never occur inside a UTF-8 sequence); a pair counts only with a non-empty name and value,
and the last TAGS / KEYS / UNIQ_KEY of a record wins. Java's String.hashCode of any slice of that array is
O(1) from a prefix sum of byte * 31^-i (31 is invertible modulo 2^32), and "topic#key" is composed from
the topic's and the key's hashes.
"""
from __future__ import annotations

import dataclasses
import struct
from array import array

import numpy as np

from . import schema as S
from .config import BrokerConfig
from .dispatch import cq_targets, index_key_hash, index_keys, tags_code
from .record import Message, read_record

CHUNK = 8192  # records decoded together: small enough for the gathered bytes to stay in cache
INV31 = pow(31, -1, 1 << 32)
HASH_SEPARATOR = 35  # '#', between topic and key in IndexService.buildKey
PROPERTY_NAMES = {name: name.encode() for name in ("TAGS", "KEYS", "UNIQ_KEY", "DELAY", "INNER_MULTI_DISPATCH")}


def _head_fields() -> tuple[np.dtype, dict]:
    """From schema.RECORD_HEADS: a numpy dtype for the fields every record has at fixed positions (up to
    BORNTIMESTAMP), and per (born_v6, store_v6) the positions of STORETIMESTAMP and BODY length."""
    fmt, names = S.RECORD_HEADS[(False, False)]
    codes = fmt.format[1:]
    fields, pos = [], 0
    for name, code in zip(names, _split_codes(codes)):
        if name == "bornHost.ip":
            break
        width = struct.calcsize(">" + code)
        fields.append((name, f">i{width}", pos))
        pos += width
    dtype = np.dtype({"names": [f[0] for f in fields], "formats": [f[1] for f in fields],
                      "offsets": [f[2] for f in fields], "itemsize": pos})
    where = {}
    for key, (head, head_names) in S.RECORD_HEADS.items():
        offsets, p = {}, 0
        for name, code in zip(head_names, _split_codes(head.format[1:])):
            offsets[name] = p
            p += struct.calcsize(">" + code)
        where[key] = (offsets["storeTimestamp"], offsets["bodyLength"], head.size)
    return dtype, where


def _split_codes(codes: str) -> list[str]:
    out, count = [], ""
    for ch in codes:
        if ch.isdigit():
            count += ch
        else:
            out.append(count + ch)
            count = ""
    return out


HEAD_DTYPE, HOST_LAYOUTS = _head_fields()


class Counts:
    """0, 1, 2, ... as int64, grown on demand."""

    def __init__(self):
        self.values = np.arange(1 << 16, dtype=np.int64)

    def get(self, n: int) -> np.ndarray:
        if len(self.values) < n:
            self.values = np.arange(max(n, 2 * len(self.values)), dtype=np.int64)
        return self.values[:n]


COUNTS = Counts()


class Powers:
    """31^i and 31^-i modulo 2^32, grown on demand."""

    def __init__(self):
        self.up = np.ones(1, np.uint32)
        self.down = np.ones(1, np.uint32)

    def get(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if len(self.up) < n:
            size = max(n, 2 * len(self.up))
            self.up = np.cumprod(np.concatenate([[1], np.full(size - 1, 31)]).astype(np.uint32), dtype=np.uint32)
            self.down = np.cumprod(np.concatenate([[1], np.full(size - 1, INV31)]).astype(np.uint32), dtype=np.uint32)
        return self.up, self.down


POWERS = Powers()


def _be(u8: np.ndarray, pos: np.ndarray, fmt: str) -> np.ndarray:
    """Big-endian integers of type `fmt` at byte positions `pos` (clipped into the buffer: callers mask
    out records whose fields would lie outside them)."""
    width = np.dtype(fmt).itemsize
    idx = pos[:, None] + np.arange(width)
    np.clip(idx, 0, len(u8) - 1, out=idx)
    return u8[idx].view(fmt).reshape(-1).astype(np.int64)


def walk(buf, limit: int, allow_v2: bool) -> tuple[np.ndarray, int]:
    """The header walk: record starts up to a BLANK or to bytes that cannot start a record (those are left
    to read_record, which says what they are). Returns the starts and where the walk stopped."""
    starts = array("q")
    unpack = S.BLANK.unpack_from
    v1, v2 = S.MAGIC_V1, S.MAGIC_V2 if allow_v2 else S.MAGIC_V1
    pos = 0
    while pos + 8 <= limit:
        size, magic = unpack(buf, pos)
        if (magic != v1 and magic != v2) or size <= 0 or pos + size > limit:
            break
        starts.append(pos)
        pos += size
    return np.frombuffer(starts, dtype=np.int64), pos


@dataclasses.dataclass
class FileDispatch:
    """What dispatching the records of one file gives, in record order."""

    position: np.ndarray  # record start in the file
    size: np.ndarray
    phy: np.ndarray  # PHYSICALOFFSET field: what DispatchRequest carries
    store_ts: np.ndarray
    # consumequeue entries: record index, topic (index into `topics`), queueId, queueOffset, tagsCode
    cq_record: np.ndarray
    cq_topic: np.ndarray
    cq_qid: np.ndarray
    cq_qoff: np.ndarray
    cq_tags: np.ndarray
    topics: list[str]
    # index keys: record index and IndexService hash (abs of String.hashCode of topic#key)
    key_record: np.ndarray
    key_hash: np.ndarray
    stop: int  # where the records ended (BLANK, end of data, or a record read_record refuses)
    reference_records: int  # records that went through dispatch.py


def dispatch_file(buf, limit: int, config: BrokerConfig, allow_v2: bool, with_keys: bool = True) -> FileDispatch:
    starts, stop = walk(buf, limit, allow_v2)
    u8 = np.frombuffer(buf, dtype=np.uint8, count=limit)
    parts = []
    for lo in range(0, len(starts), CHUNK):
        part = _decode(u8, starts[lo : lo + CHUNK], config, with_keys)
        parts.append(part)
        if part.bad is not None:  # read_record will say what it is; nothing after it is dispatched
            stop = int(starts[lo + part.bad])
            break
    return _assemble(parts, buf, limit, config, allow_v2, stop)


@dataclasses.dataclass
class _Chunk:
    position: np.ndarray
    size: np.ndarray
    phy: np.ndarray
    store_ts: np.ndarray
    queue_id: np.ndarray
    queue_offset: np.ndarray
    sysflag: np.ndarray
    topic_key: np.ndarray  # (hash, length) packed: equal for equal topics (checked byte for byte)
    topic_span: tuple  # gathered array, start, length: to read topic names
    tags_code: np.ndarray
    reference: np.ndarray  # records dispatch.py must handle
    key_record: np.ndarray
    key_hash: np.ndarray
    bad: int | None  # first record read_record refuses, relative to the chunk


def _decode(u8: np.ndarray, pos: np.ndarray, config: BrokerConfig, with_keys: bool) -> _Chunk:
    n = len(pos)
    idx = pos[:, None] + np.arange(HEAD_DTYPE.itemsize)
    np.clip(idx, 0, len(u8) - 1, out=idx)
    head = u8[idx].view(HEAD_DTYPE).reshape(-1)
    size = head["storeSize"].astype(np.int64)
    magic = head["magicCode"]
    sysflag = head["sysFlag"].astype(np.int64)
    combo = ((sysflag & S.BORNHOST_V6_FLAG) != 0) * 2 + ((sysflag & S.STOREHOSTADDRESS_V6_FLAG) != 0)
    ts_at = np.empty(n, np.int64)
    body_len_at = np.empty(n, np.int64)
    head_size = np.empty(n, np.int64)
    for (born_v6, store_v6), (ts_off, bl_off, hsize) in HOST_LAYOUTS.items():
        sel = combo == born_v6 * 2 + store_v6
        ts_at[sel], body_len_at[sel], head_size[sel] = ts_off, bl_off, hsize
    store_ts = _be(u8, pos + ts_at, ">i8")
    body_len = _be(u8, pos + body_len_at, ">i4")
    v2 = magic == S.MAGIC_V2
    topic_len_at = pos + head_size + np.maximum(body_len, 0)
    topic_len = np.where(v2, _be(u8, topic_len_at, ">i2"), _be(u8, topic_len_at, ">i1"))
    topic_start = topic_len_at + np.where(v2, S.TOPIC_LEN_V2.size, S.TOPIC_LEN_V1.size)
    props_len = _be(u8, topic_start + np.maximum(topic_len, 0), ">i2")
    props_start = topic_start + np.maximum(topic_len, 0) + S.PROPS_LEN.size
    expected = props_start - pos + np.maximum(props_len, 0)  # MessageExtEncoder.calMsgLength, from the layout
    ok = (expected == size) & (topic_len >= 0) & (head_size <= size)
    bad = None
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        n = bad
        pos, size, sysflag, store_ts = pos[:n], size[:n], sysflag[:n], store_ts[:n]
        head, topic_len, topic_start, props_start, props_len = head[:n], topic_len[:n], topic_start[:n], props_start[:n], props_len[:n]

    # gather topic .. end of properties of every record into one array
    span_len = props_start + np.maximum(props_len, 0) - topic_start
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(span_len, out=offsets[1:])
    total = int(offsets[-1])
    where = np.repeat(topic_start - offsets[:-1], span_len)
    where += COUNTS.get(total)
    gathered = u8[where]
    del where
    topic_lo, topic_hi = offsets[:-1], offsets[:-1] + topic_len
    props_lo, props_hi = topic_hi + S.PROPS_LEN.size, offsets[1:]
    for i in range(S.PROPS_LEN.size):  # the length field between topic and properties is not text
        gathered[topic_hi + i] = 0

    up, down = POWERS.get(total + 1)
    prefix = np.zeros(total + 1, np.uint32)
    np.cumsum(gathered.astype(np.uint32) * down[:total], dtype=np.uint32, out=prefix[1:])

    def java_hash(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """String.hashCode of gathered[lo:hi] (ASCII): sum of c_i * 31^(hi-1-i) modulo 2^32."""
        return (prefix[hi] - prefix[lo]) * up[np.maximum(hi - 1, 0)]

    # Java hashes UTF-16 code units: a record with any non-ASCII byte in its topic or properties goes to
    # dispatch.py
    highest = np.zeros(n, np.uint8)
    filled = span_len > 0
    if total:
        highest[filled] = np.maximum.reduceat(gathered, offsets[:-1][filled])
    reference = highest >= 0x80

    # properties: segments between 0x02 separators, name/value at a segment's first 0x01 (separator bytes
    # in the topic or the properties' length field do not count)
    def separators(byte: int) -> np.ndarray:
        at = np.flatnonzero(gathered == byte)
        owner = np.searchsorted(offsets, at, side="right") - 1
        return at[at >= props_lo[owner]]

    sep2, sep1 = separators(2), separators(1)
    # segments are disjoint and in order: the i-th start goes with the i-th end
    seg_lo = np.sort(np.concatenate([props_lo, sep2 + 1]))
    seg_hi = np.sort(np.concatenate([sep2, props_hi]))
    first1 = np.searchsorted(sep1, seg_lo)
    split = np.full(len(seg_lo), -1, np.int64)
    inside = first1 < len(sep1)
    split[inside] = sep1[first1[inside]]
    pair = (split > seg_lo) & (split < seg_hi - 1)  # a non-empty name and a non-empty value
    seg_lo, seg_hi, split = seg_lo[pair], seg_hi[pair], split[pair]
    seg_record = np.searchsorted(offsets, seg_lo, side="right") - 1
    def last_value(name: bytes) -> tuple[np.ndarray, np.ndarray]:
        """(value start, value end) of the last `name` pair of each record; -1 where it has none."""
        lo_out = np.full(n, -1, np.int64)
        hi_out = np.full(n, -1, np.int64)
        cand = np.flatnonzero(split - seg_lo == len(name))
        if len(cand):
            key = gathered[seg_lo[cand][:, None] + np.arange(len(name))]
            cand = cand[(key == np.frombuffer(name, np.uint8)).all(axis=1)]
        # segments are in record order: the last one written per record wins
        lo_out[seg_record[cand]] = split[cand] + 1
        hi_out[seg_record[cand]] = seg_hi[cand]
        return lo_out, hi_out

    tags_lo, tags_hi = last_value(PROPERTY_NAMES["TAGS"])
    keys_lo, keys_hi = last_value(PROPERTY_NAMES["KEYS"])
    uniq_lo, uniq_hi = last_value(PROPERTY_NAMES["UNIQ_KEY"])
    reference |= last_value(PROPERTY_NAMES["DELAY"])[0] >= 0
    if config.enableMultiDispatch:
        reference |= last_value(PROPERTY_NAMES["INNER_MULTI_DISPATCH"])[0] >= 0

    has_tags = tags_lo >= 0
    tags = np.zeros(n, np.int64)
    tags[has_tags] = java_hash(tags_lo[has_tags], tags_hi[has_tags]).view(np.int32)
    topic_hash = java_hash(topic_lo, topic_hi)

    # index keys: UNIQ_KEY, then every non-empty word of KEYS, as topic#key; none for ROLLBACK
    indexed = (sysflag & S.TRANSACTION_MASK) != S.TRANSACTION_ROLLBACK_TYPE
    wanted = indexed & ~reference & with_keys
    word_lo, word_hi, word_record = _words(gathered, keys_lo, keys_hi, wanted)
    has_uniq = (uniq_lo >= 0) & wanted
    uniq_records = np.flatnonzero(has_uniq)
    key_record = np.concatenate([uniq_records, word_record])
    key_lo = np.concatenate([uniq_lo[has_uniq], word_lo])
    key_hi = np.concatenate([uniq_hi[has_uniq], word_hi])
    rank = np.concatenate([np.full(len(uniq_records), -1, np.int64), word_lo])  # UNIQ_KEY first, then in order
    order = np.lexsort((rank, key_record))
    key_record, key_lo, key_hi = key_record[order], key_lo[order], key_hi[order]
    key_len = (key_hi - key_lo).astype(np.uint32)
    whole = (topic_hash[key_record] * up[key_len + 1] + np.uint32(HASH_SEPARATOR) * up[key_len]
             + java_hash(key_lo, key_hi))
    signed = whole.view(np.int32).astype(np.int64)
    key_hash = np.where(signed == -(1 << 31), 0, np.abs(signed))

    return _Chunk(pos, size, head["physicalOffset"].astype(np.int64), store_ts, head["queueId"].astype(np.int64),
                  head["queueOffset"].astype(np.int64), sysflag,
                  (topic_hash.astype(np.int64) << 16) | topic_len.astype(np.int64),
                  (gathered, topic_lo, topic_len), tags, reference, key_record, key_hash, bad)


def _words(gathered: np.ndarray, lo: np.ndarray, hi: np.ndarray, use: np.ndarray):
    """The non-empty space-separated words of each record's KEYS value: (start, end, record)."""
    sel = np.flatnonzero(use & (lo >= 0))
    if not len(sel):
        empty = np.empty(0, np.int64)
        return empty, empty, empty
    lengths = hi[sel] - lo[sel]
    offsets = np.zeros(len(sel) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    owner = np.repeat(np.arange(len(sel)), lengths)
    where = lo[sel][owner] + (np.arange(int(offsets[-1])) - offsets[owner])
    word = gathered[where] != 0x20
    # a word starts where a non-space follows a space or the value's start, ends before a space or the end
    starts = word & np.concatenate([[True], (~word[:-1]) | (owner[1:] != owner[:-1])]) if len(word) else word
    ends = word & np.concatenate([(~word[1:]) | (owner[1:] != owner[:-1]), [True]]) if len(word) else word
    return where[starts], where[ends] + 1, sel[owner[starts]]


def _assemble(parts: list[_Chunk], buf, limit: int, config: BrokerConfig, allow_v2: bool, stop: int) -> FileDispatch:
    """Join the chunks, name the topics, and send the records the vector path does not handle through
    dispatch.py, merging their entries and keys in record order."""
    if not parts:
        e = np.empty(0, np.int64)
        return FileDispatch(e, e, e, e, e, e, e, e, e, [], e, e, stop, 0)
    cat = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
    position, size, phy, store_ts = cat("position"), cat("size"), cat("phy"), cat("store_ts")
    qid, qoff, sysflag, tags, reference = cat("queue_id"), cat("queue_offset"), cat("sysflag"), cat("tags_code"), cat("reference")
    base = np.cumsum([0] + [len(p.position) for p in parts])
    key_record = np.concatenate([p.key_record + b for p, b in zip(parts, base)])
    key_hash = cat("key_hash")

    # topics: equal (hash, length) must mean equal bytes; a collision sends the records to dispatch.py
    topics: list[str] = []
    topic_ids = {}
    topic_index = np.empty(len(position), np.int64)
    for p, b in zip(parts, base):
        gathered, lo, length = p.topic_span
        _, first, inverse = np.unique(p.topic_key, return_index=True, return_inverse=True)
        grouped = np.argsort(inverse, kind="stable")
        counts = np.bincount(inverse, minlength=len(first))
        ends = np.cumsum(counts)
        for f, lo_g, hi_g in zip(first, ends - counts, ends):
            members = grouped[lo_g:hi_g]
            raw = gathered[lo[f] : lo[f] + length[f]].tobytes()
            width = int(length[f])
            same = (gathered[lo[members][:, None] + np.arange(width)] == np.frombuffer(raw, np.uint8)).all(axis=1) \
                if width else np.ones(len(members), bool)
            reference[b + members[~same]] = True
            name = raw.decode("utf-8", "replace")
            topic_index[b + members] = topic_ids.setdefault(name, len(topics))
            if topic_ids[name] == len(topics):
                topics.append(name)

    dispatched = ((sysflag & S.TRANSACTION_MASK) == S.TRANSACTION_NOT_TYPE) | \
                 ((sysflag & S.TRANSACTION_MASK) == S.TRANSACTION_COMMIT_TYPE)
    vec = dispatched & ~reference
    cq = [(np.flatnonzero(vec), topic_index[vec], qid[vec], qoff[vec], tags[vec])]
    keep = ~reference[key_record]
    keys = [(key_record[keep], np.zeros(int(keep.sum()), np.int64), key_hash[keep])]

    ref = np.flatnonzero(reference)
    for r in ref.tolist():
        m: Message = read_record(buf, int(position[r]), limit, allow_v2)
        code = tags_code(m, config)
        for topic, q, o in cq_targets(m, config):
            t = topic_ids.setdefault(topic, len(topics))
            if t == len(topics):
                topics.append(topic)
            cq.append((np.array([r]), np.array([t]), np.array([q]), np.array([o]), np.array([code])))
        hashes = [index_key_hash(k) for k in index_keys(m)]
        keys.append((np.full(len(hashes), r, np.int64), np.arange(len(hashes), dtype=np.int64),
                     np.array(hashes, dtype=np.int64)))
    cq_cols = [np.concatenate([c[i] for c in cq]).astype(np.int64) for i in range(5)]
    k_rec, k_rank, k_hash = (np.concatenate([k[i] for k in keys]).astype(np.int64) for i in range(3))
    if len(ref):  # merge the reference records' entries and keys in, in record order
        order = np.argsort(cq_cols[0], kind="stable")
        cq_cols = [c[order] for c in cq_cols]
        k_order = np.lexsort((k_rank, k_rec))
        k_rec, k_hash = k_rec[k_order], k_hash[k_order]
    return FileDispatch(position, size, phy, store_ts, *cq_cols, topics, k_rec, k_hash, stop, len(ref))

