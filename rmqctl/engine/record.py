"""A commitlog record's layout and acceptance for the kernels (verify's walk, the decoder, rebuild's dispatch):
the field offsets schema derives from the construct declaration (constants for the compiler), the acceptance
rules.record_head / record_tail compiled from their one definition, and IndexService's hash of a key.

A layout ("combo") is born v6 + 2 * store v6, the two sysFlag bits that widen the hosts.
"""

from __future__ import annotations

import numpy as np

from .. import rules
from ..rules import RECORD
from .kernels import MASK32, be16, be32, compile_rule, java_hash, kernel, prefetch


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


# A walk that reads every byte of its records (the Arrow batch copies each body) asks instead for the lines
# STREAM_AHEAD bytes past each record, as many as the record is long: over the walk, every line once, each
# several records before it is read. The chain above stalls on its own deepest load (prefetched only one
# record earlier): three quarters of the decode's time were spent there.
STREAM_AHEAD = 4096  # bytes
STREAM_MOST = 1 << 20  # bytes asked for at one record at most (a huge or damaged TOTALSIZE)


@kernel
def prefetch_stream(u8, pos, limit):
    """Ask for the lines of [pos + STREAM_AHEAD, pos + STREAM_AHEAD + the TOTALSIZE at pos) inside `limit`;
    a hint, so a wrong size costs nothing but the hint."""
    if pos < 0 or pos + 4 > limit:
        return
    lo = pos + STREAM_AHEAD
    hi = min(lo + min(max(be32(u8, pos), 0), STREAM_MOST), limit)
    for at in range(lo - lo % LINE, hi, LINE):
        prefetch(u8, at)


@kernel
def be8(u8, at):
    """rules.be8 for a kernel: the signed byte at u8[at]."""
    return np.int64(np.int8(u8[at]))


# record acceptance, compiled from its one definition (rules.record_head, rules.record_tail)
head_outcome = compile_rule(
    rules.record_head,
    be32=be32,
    record_magic=compile_rule(rules.record_magic, message_magic=compile_rule(rules.message_magic)),
)
decode_tail = compile_rule(rules.record_tail, be8=be8, be16=be16)


@kernel
def decode_head(u8, pos, limit, allow_v2):
    """head_outcome for walks that stop at anything but a record (pos + 8 <= limit). Returns (size, combo,
    body length, V2), size 0 when the decoder refuses the record (or it is the BLANK)."""
    outcome, size, combo, body_len, v2, _ = head_outcome(u8, pos, limit, allow_v2)
    if outcome != RECORD:
        return 0, 0, 0, v2
    return size, combo, body_len, v2


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
