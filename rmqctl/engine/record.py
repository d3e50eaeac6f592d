"""A commitlog record's layout and read_record's acceptance rules for the kernels (verify's walk, rebuild's
dispatch): field offsets per host layout, computed at import from the struct formats schema.RECORD_HEADS
derives from the construct declaration (constants for the compiler), the head and tail checks in
read_record's order, and IndexService's hash of a key.

A layout ("combo") is born v6 + 2 * store v6, the two sysFlag bits that widen the hosts.
"""
from __future__ import annotations

import re

import numpy as np

from .. import rules
from .. import schema as S
from .kernels import MASK32, be16, be32, compile_rule, java_hash, kernel, prefetch


def _field_offsets() -> dict[str, tuple[int, ...]]:
    """Offset of each head field per host combination (index: born v6 + 2 * store v6), from the struct
    formats schema.RECORD_HEADS derives from the construct declaration; "headSize" is the head's length."""
    out: dict[str, list[int]] = {}
    for combo in range(4):
        head, names = S.RECORD_HEADS[(bool(combo & 1), bool(combo & 2))]
        pos = 0
        for name, (count, code) in zip(names, re.findall(r"(\d*)([a-zA-Z])", head.format[1:])):
            out.setdefault(name, []).append(pos)
            pos += S.struct.calcsize(">" + count + code)
        assert pos == head.size
        out.setdefault("headSize", []).append(pos)
    return {k: tuple(v) for k, v in out.items()}


OFFSETS = _field_offsets()
# fields up to sysFlag sit at the same place in every layout
MAGIC_AT, BODY_CRC_AT, QUEUE_ID_AT, QUEUE_OFFSET_AT, PHYSICAL_OFFSET_AT, SYSFLAG_AT = (
    OFFSETS[name][0] for name in ("magicCode", "bodyCRC", "queueId", "queueOffset", "physicalOffset", "sysFlag"))
assert OFFSETS["storeSize"] == (0,) * 4
assert all(len(set(OFFSETS[n])) == 1 for n in ("magicCode", "bodyCRC", "queueId", "queueOffset", "physicalOffset", "sysFlag"))
HEAD_SIZE = OFFSETS["headSize"]
STORE_TIMESTAMP_AT = OFFSETS["storeTimestamp"]
BODY_LENGTH_AT = OFFSETS["bodyLength"]
SMALLEST_HEAD = min(HEAD_SIZE)
# record_length's fixed part per layout: 74 + bornHost + storeHost
FIXED_LENGTH = tuple(S.record_length((S.BORNHOST_V6_FLAG if c & 1 else 0) | (S.STOREHOSTADDRESS_V6_FLAG if c & 2 else 0),
                                     0, 0, 0) - 1 for c in range(4))
BORN_V6, STORE_V6 = S.BORNHOST_V6_FLAG, S.STOREHOSTADDRESS_V6_FLAG
MAGIC_V1, MAGIC_V2 = S.MAGIC_V1, S.MAGIC_V2


@kernel
def signed32(h):
    return h - (1 << 32) if h >= 1 << 31 else h


# A walk by TOTALSIZE is a chain of dependent loads, each record's head a cache miss the hardware prefetcher
# does not foresee (records are not a fixed stride): without a prefetch, most of a decode's time per ~1 KiB
# record is spent waiting for memory. So at each record a walk asks for the lines of the record PREFETCH_AHEAD
# on: its head and the lines before it (the previous record's topic and properties), in while the records
# between are decoded (docs/performance.md).
PREFETCH_AHEAD = 3  # records
PREFETCH_BEFORE, PREFETCH_AFTER, LINE = 256, 128, 64  # bytes asked for around that record's start


@kernel
def prefetch_ahead(u8, pos, limit):
    """Ask for the lines of the record PREFETCH_AHEAD records past the one at `pos` (`limit`: where the
    bytes end), following TOTALSIZE while it stays inside; a hint, so wrong sizes cost nothing but the hint."""
    at = pos
    for _ in range(PREFETCH_AHEAD):
        if at < 0 or at + 4 > limit:
            return
        at += be32(u8, at)
    for k in range(-PREFETCH_BEFORE, PREFETCH_AFTER, LINE):
        prefetch(u8, at + k)


# what read_record makes of the bytes at a position: a record, the BLANK filler, or the kind of its refusal
# (RecordError.kind, in read_record's order of checks)
OK, BLANK, ZEROS, ILLEGAL_MAGIC, TRUNCATED, BAD_LENGTH = range(6)
OUTCOME_KINDS = ("ok", "blank", "zeros", "illegal-magic", "truncated-record", "bad-length")
MAGIC_BLANK = S.MAGIC_BLANK


@kernel
def head_outcome(u8, pos, limit, allow_v2):
    """record.read_record's checks up to the body, on the record at `pos` (pos <= limit). Returns (outcome,
    size, combo, body length, V2): OK when the head is sound, else BLANK or the refusal's kind."""
    if limit - pos < 8:
        return TRUNCATED, 0, 0, 0, False
    size = be32(u8, pos)
    magic = be32(u8, pos + MAGIC_AT)
    v2 = magic == MAGIC_V2
    if magic == MAGIC_BLANK:
        return BLANK, size, 0, 0, False
    if magic != MAGIC_V1 and not (v2 and allow_v2):
        return (ZEROS if size == 0 and magic == 0 else ILLEGAL_MAGIC), size, 0, 0, v2
    if size <= 0 or pos + size > limit:
        return TRUNCATED, size, 0, 0, v2
    if size < SMALLEST_HEAD:
        return BAD_LENGTH, size, 0, 0, v2
    sysflag = be32(u8, pos + SYSFLAG_AT)
    combo = (1 if sysflag & BORN_V6 else 0) | (2 if sysflag & STORE_V6 else 0)
    if HEAD_SIZE[combo] > size:
        return BAD_LENGTH, size, 0, 0, v2
    body_len = be32(u8, pos + BODY_LENGTH_AT[combo])
    if body_len > 0 and HEAD_SIZE[combo] + body_len > size:
        return BAD_LENGTH, size, 0, 0, v2
    return OK, size, combo, body_len, v2


@kernel
def decode_head(u8, pos, limit, allow_v2):
    """head_outcome for walks that stop at anything but a record (pos + 8 <= limit). Returns (size, combo,
    body length, V2), size 0 when the decoder refuses the record (or it is the BLANK)."""
    outcome, size, combo, body_len, v2 = head_outcome(u8, pos, limit, allow_v2)
    if outcome != OK:
        return 0, 0, 0, v2
    return size, combo, body_len, v2


@kernel
def decode_tail(u8, pos, size, combo, body_len, v2):
    """The rest of read_record's checks (after decode_head accepted the record): topic and properties
    lengths and the length formula. Returns (topic start, topic length, properties length), topic start
    -1 when the decoder refuses the record."""
    end = pos + size
    p = pos + HEAD_SIZE[combo] + max(body_len, 0)
    width = 2 if v2 else 1
    if p + width > end:
        return -1, 0, 0
    topic_len = be16(u8, p) if v2 else np.int64(np.int8(u8[p]))
    p += width
    if topic_len < 0 or p + topic_len + 2 > end:
        return -1, 0, 0
    props_len = be16(u8, p + topic_len)
    if props_len > 0 and p + topic_len + 2 + props_len > end:
        return -1, 0, 0
    if FIXED_LENGTH[combo] + width + max(body_len, 0) + topic_len + max(props_len, 0) != size:
        return -1, 0, 0
    return p, topic_len, props_len


# the broker's rules, compiled from their one definition
index_key_hash = compile_rule(rules.index_key_hash)
index_slot = compile_rule(rules.index_slot, index_key_hash=index_key_hash)
next_key_word = compile_rule(rules.next_key_word)
index_time_diff = compile_rule(rules.index_time_diff)
tags_code = compile_rule(rules.tags_code)


@kernel
def key_hash_of(h):
    """rules.index_key_hash of a String.hashCode given as [0, 2^32)."""
    return index_key_hash(signed32(h))


@kernel
def index_slots(key_hashes, slot_num):
    """rules.index_slot of every key hash."""
    out = np.empty(len(key_hashes), np.int64)
    for k in range(len(key_hashes)):
        out[k] = index_slot(np.int64(key_hashes[k]), slot_num)
    return out


@kernel
def index_hash(u8, lo, hi, topic_hash):
    """IndexService's hash of `topic#key` for the key u8[lo:hi] (well-formed UTF-8), as indexKeyHashMethod."""
    h, _ = java_hash(u8, lo, hi, (topic_hash * 31 + 35) & MASK32)  # 35: '#'
    return key_hash_of(h)
