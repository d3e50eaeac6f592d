"""The broker's dispatch of a whole commitlog file in one compiled pass: for every record, what
CommitLogDispatcherBuildConsumeQueue and CommitLogDispatcherBuildIndex take from it (queue, queue offset,
tagsCode, the IndexService hash of every `topic#key`).

rmqctl.dispatch is the reference. A record the kernel does not decide itself is flagged for it: one with a
DELAY property (the schedule topic's tagsCode), with INNER_MULTI_DISPATCH when multi-dispatch is on (LMQ
queues), or whose topic, TAGS, KEYS or UNIQ_KEY is not well-formed UTF-8 (Java replaces malformed bytes;
well-formed text is hashed here over its UTF-16 code units exactly as String.hashCode does).
"""
from __future__ import annotations

import re
import struct

import numpy as np

from .. import schema as S
from . import (T_AT, T_HASH, T_LEN, T_WELL_FORMED, TOPIC_COLUMNS, be16, be32, be64, find_properties, java_hash, kernel,
               property_names, rehash, topic_id)


def _head_offsets() -> tuple[dict[str, int], tuple, tuple, tuple]:
    """From schema.RECORD_HEADS: offsets of the fields that sit at one place in every host layout, and per
    layout (index: born_v6 * 2 + store_v6) where STORETIMESTAMP and BODYLENGTH are and the head's size."""
    layouts = {}
    for (born_v6, store_v6), (head, names) in S.RECORD_HEADS.items():
        pos, offsets = 0, {}
        for name, (count, code) in zip(names, re.findall(r"(\d*)([a-zA-Z])", head.format[1:])):
            offsets[name] = pos
            pos += struct.calcsize(">" + count + code)
        layouts[born_v6 * 2 + store_v6] = offsets, pos
    fixed = {name: layouts[0][0][name] for name in ("storeSize", "magicCode", "queueId", "queueOffset",
                                                     "physicalOffset", "sysFlag")}
    assert all(o[name] == at for o, _ in layouts.values() for name, at in fixed.items())
    order = sorted(layouts)
    return (fixed, tuple(layouts[c][0]["storeTimestamp"] for c in order),
            tuple(layouts[c][0]["bodyLength"] for c in order), tuple(layouts[c][1] for c in order))


_FIXED, STORE_TS_AT, BODY_LEN_AT, HEAD_SIZE = _head_offsets()
MIN_RECORD_SIZE = min(HEAD_SIZE) + S.TOPIC_LEN_V1.size + S.PROPS_LEN.size  # empty body, topic and properties
MAGIC_AT, QUEUE_ID_AT, QUEUE_OFFSET_AT = _FIXED["magicCode"], _FIXED["queueId"], _FIXED["queueOffset"]
PHY_AT, SYSFLAG_AT = _FIXED["physicalOffset"], _FIXED["sysFlag"]
assert _FIXED["storeSize"] == 0 and MAGIC_AT == 4
TOPIC_LEN_V1, TOPIC_LEN_V2, PROPS_LEN = S.TOPIC_LEN_V1.size, S.TOPIC_LEN_V2.size, S.PROPS_LEN.size
BORN_V6, STORE_V6 = S.BORNHOST_V6_FLAG, S.STOREHOSTADDRESS_V6_FLAG
MAGIC_V1, MAGIC_V2 = S.MAGIC_V1, S.MAGIC_V2
TRANSACTION_MASK, ROLLBACK = S.TRANSACTION_MASK, S.TRANSACTION_ROLLBACK_TYPE
NOT_TYPE, COMMIT_TYPE = S.TRANSACTION_NOT_TYPE, S.TRANSACTION_COMMIT_TYPE
# property lookups: indexes into WANTED
TAGS, KEYS, UNIQ_KEY, DELAY, MULTI_DISPATCH = range(5)
WANTED, WANTED_LENS = property_names("TAGS", "KEYS", "UNIQ_KEY", "DELAY", "INNER_MULTI_DISPATCH")
HASH_SEPARATOR = ord("#")  # IndexService.buildKey: topic + "#" + key
SPACE = ord(" ")  # MessageConst.KEY_SEPARATOR


@kernel
def _grown(a, n):
    """`a` with room for at least n + 1 items."""
    if n < len(a):
        return a
    bigger = np.empty(2 * len(a), a.dtype)
    bigger[: len(a)] = a
    return bigger


@kernel
def walk(u8, limit, allow_v2):
    """The header walk over u8[:limit] from its start (each TOTALSIZE says where the next record starts)
    up to a BLANK, the end, or bytes that cannot start a record. Returns (record starts, where it
    stopped)."""
    starts = np.empty(limit // MIN_RECORD_SIZE + 1, np.int64)  # untouched pages cost nothing
    n, pos = 0, 0
    while pos + 8 <= limit:
        size, magic = be32(u8, pos), be32(u8, pos + MAGIC_AT)
        if (magic != MAGIC_V1 and not (allow_v2 and magic == MAGIC_V2)) or size < MIN_RECORD_SIZE or pos + size > limit:
            break
        starts[n] = pos
        n += 1
        pos += size
    return starts[:n], pos


@kernel
def decode(u8, starts, multi_dispatch, with_keys, size, phy, store_ts, queue_id, queue_offset, sysflag, topic, tags,
           reference):
    """Decode the records at `starts` (from walk) up to the first whose lengths do not add up (left to
    read_record), filling per record (arrays as long as `starts`): size, PHYSICALOFFSET, STORETIMESTAMP,
    queueId, queueOffset, sysFlag, topic id, tagsCode, reference flag. Returns the topics ((start, length)
    of each id's first occurrence), the index keys (record, IndexService hash), UNIQ_KEY first then each
    KEYS word, none for ROLLBACK or reference records, and how many records were decoded."""
    n = len(starts)
    key_record = np.empty(max(16, 3 * n), np.int64)
    key_hash = np.empty(max(16, 3 * n), np.int64)
    keys = 0
    table = np.zeros(128, np.int64)
    topics = np.empty((TOPIC_COLUMNS, len(table) // 2), np.int64)
    n_topics = 0
    value_lo = np.empty(len(WANTED_LENS), np.int64)
    value_hi = np.empty(len(WANTED_LENS), np.int64)
    i = 0
    while i < n:
        pos = starts[i]
        rec_size, magic = be32(u8, pos), be32(u8, pos + MAGIC_AT)
        end = pos + rec_size
        flags = be32(u8, pos + SYSFLAG_AT)
        layout = (2 if flags & BORN_V6 else 0) + (1 if flags & STORE_V6 else 0)
        head = HEAD_SIZE[layout]
        if head > rec_size:
            break
        body_len = be32(u8, pos + BODY_LEN_AT[layout])
        v2 = magic == MAGIC_V2
        width = TOPIC_LEN_V2 if v2 else TOPIC_LEN_V1
        at = pos + head + body_len
        if body_len < 0 or at + width > end:
            break
        topic_len = be16(u8, at) if v2 else np.int64(np.int8(u8[at]))
        topic_lo = at + width
        props_at = topic_lo + topic_len
        if topic_len < 0 or props_at + PROPS_LEN > end:
            break
        props_len = be16(u8, props_at)
        props_lo = props_at + PROPS_LEN
        if props_lo + max(props_len, 0) != end:  # MessageExtEncoder.calMsgLength
            break
        size[i], phy[i], tags[i], reference[i] = rec_size, be64(u8, pos + PHY_AT), 0, False
        store_ts[i] = be64(u8, pos + STORE_TS_AT[layout])
        queue_id[i], queue_offset[i], sysflag[i] = be32(u8, pos + QUEUE_ID_AT), be64(u8, pos + QUEUE_OFFSET_AT), flags
        if 2 * (n_topics + 1) > len(table):  # keep the table at most half full
            wider = np.empty((TOPIC_COLUMNS, len(table)), np.int64)
            wider[:, :n_topics] = topics[:, :n_topics]
            topics, table = wider, np.zeros(2 * len(table), np.int64)
            rehash(topics, n_topics, table)
        t, n_topics = topic_id(u8, topic_lo, topic_len, pos, table, topics, n_topics)
        topic[i] = t
        topic_hash, ok = topics[T_HASH, t], topics[T_WELL_FORMED, t] == 1
        r = i
        i += 1
        find_properties(u8, props_lo, end, WANTED, WANTED_LENS, value_lo, value_hi)
        if not ok or value_lo[DELAY] >= 0 or (multi_dispatch and value_lo[MULTI_DISPATCH] >= 0):
            reference[r] = True
            continue
        if value_lo[TAGS] >= 0:
            h, ok = java_hash(u8, value_lo[TAGS], value_hi[TAGS], 0)
            if not ok:
                reference[r] = True
                continue
            tags[r] = h - (h >> 31 << 32)
        if not with_keys or flags & TRANSACTION_MASK == ROLLBACK:
            continue
        prefix = (topic_hash * 31 + HASH_SEPARATOR) & 0xFFFFFFFF
        first_key = keys
        for which in (UNIQ_KEY, KEYS):
            lo, hi = value_lo[which], value_hi[which]
            while lo < hi:
                if which == KEYS:  # every non-empty word between spaces
                    while lo < hi and u8[lo] == SPACE:
                        lo += 1
                    word_end = lo
                    while word_end < hi and u8[word_end] != SPACE:
                        word_end += 1
                else:
                    word_end = hi
                if word_end == lo:
                    break
                h, ok = java_hash(u8, lo, word_end, prefix)
                if not ok:
                    reference[r] = True
                    break
                key_record, key_hash = _grown(key_record, keys), _grown(key_hash, keys)
                signed = h - (h >> 31 << 32)
                key_record[keys] = r
                key_hash[keys] = 0 if signed == -(1 << 31) else abs(signed)  # IndexFile.indexKeyHashMethod
                keys += 1
                lo = word_end
            if reference[r]:
                keys = first_key  # the reference path indexes this record
                break
    return topics[T_AT : T_LEN + 1, :n_topics].T.copy(), key_record[:keys], key_hash[:keys], i
