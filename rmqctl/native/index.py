"""Compiled loops over index files (IndexFile.java): the bulk putKey of a rebuild, and the two checks of
verify that touch every entry (are the chains exactly what putKey builds, does every entry point at a
record one of whose keys hashes to it), one pass each instead of a sort or a binary search per entry.

Entries are numbered as in the file: entry k (k >= 1) is row k - 1 of the arrays passed in.
"""
from __future__ import annotations

import numpy as np

from .. import schema as S
from . import kernel
from .dispatch import be32

INDEX_HEADER_SIZE, HASH_SLOT_SIZE, INDEX_ENTRY_SIZE = S.INDEX_HEADER_SIZE, S.HASH_SLOT_SIZE, S.INDEX_ENTRY_SIZE
KEY_HASH_AT, PHY_OFFSET_AT, TIME_DIFF_AT, PREV_INDEX_AT = (S.INDEX_ENTRY_DTYPE.fields[name][1] for name in
                                                          ("keyHash", "phyOffset", "timeDiff", "prevIndex"))
MAX_TIME_DIFF = 0x7FFFFFFF


@kernel
def put_be32(u8, at, v):
    for k in range(4):
        u8[at + k] = (v >> (24 - 8 * k)) & 0xFF


@kernel
def put_be64(u8, at, v):
    for k in range(8):
        u8[at + k] = (v >> (56 - 8 * k)) & 0xFF


@kernel
def slot_of(key_hash, slots):
    """IndexFile's slot of a stored hash: abs(hash) % slots, Integer.MIN_VALUE counting as 0."""
    h = abs(key_hash) if key_hash != -(1 << 31) else 0
    return h % slots


@kernel
def put_keys(m, slot_num, index_num, count, begin_ts, key_hash, phys, timestamps):
    """IndexFile.putKey for keys in order into an index file mapped as bytes `m`, starting at entry
    `count` (1 for a new file), until the file is full. The first entry of a file takes its timeDiff
    against the preset beginTimestamp, later ones against the first entry's timestamp, as putKey's order of
    updates does. Returns (keys put, hash slots newly used)."""
    k = min(len(key_hash), index_num - count)
    if k <= 0:
        return 0, 0
    entries_at = INDEX_HEADER_SIZE + slot_num * HASH_SLOT_SIZE
    used = 0
    for j in range(k):
        h = key_hash[j]
        slot_pos = INDEX_HEADER_SIZE + (h % slot_num) * HASH_SLOT_SIZE
        prev = be32(m, slot_pos)
        if prev <= 0 or prev > count:
            prev = 0
            used += 1
        diff = timestamps[j] - begin_ts
        if begin_ts <= 0 or diff < 0:
            diff = 0
        else:
            diff = min(diff // 1000, MAX_TIME_DIFF)
        e = entries_at + count * INDEX_ENTRY_SIZE
        put_be32(m, e + KEY_HASH_AT, h)
        put_be64(m, e + PHY_OFFSET_AT, phys[j])
        put_be32(m, e + TIME_DIFF_AT, diff)
        put_be32(m, e + PREV_INDEX_AT, prev)
        put_be32(m, slot_pos, count)
        if count <= 1:
            begin_ts = timestamps[j]
        count += 1
    return k, used


@kernel
def chains_sound(key_hash, prev_index, slot_values, slots):
    """True when the slots and chains are exactly what putKey builds: every prevIndex points backwards
    (0 at a chain's start) at an entry of the same slot that no other entry links to, there is one chain
    start per slot used, and each used slot (and no other) holds an entry of its own that nothing links to:
    its chain's newest entry."""
    m = len(key_hash)
    total = m + 1
    entry_slot = np.zeros(total, np.int64)
    linked = np.zeros(total, np.bool_)
    used = np.zeros(slots, np.bool_)
    used_count = 0
    for k in range(m):
        s = slot_of(key_hash[k], slots)
        entry_slot[k + 1] = s
        if not used[s]:
            used[s] = True
            used_count += 1
    starts = 0
    for k in range(m):
        p = prev_index[k]
        if p < 0 or p > k:  # entry k + 1 may only link to entries 0..k
            return False
        if p == 0:
            starts += 1
        elif entry_slot[p] != entry_slot[k + 1] or linked[p]:
            return False
        else:
            linked[p] = True
    if starts != used_count:
        return False
    for s in range(len(slot_values)):
        v = slot_values[s]
        valid = 0 < v < total
        if valid != used[s] or (valid and (entry_slot[v] != s or linked[v])):
            return False
    return True


@kernel
def match_entries(phy, key_hash, rec_off, rec_key_record, rec_key_hash, rec_store_ts, begin_ts,
                  first_base):
    """Each entry against the records (sorted by offset; their keys sorted by record): the record starting
    at its phyOffset (-1: none), whether one of that record's keys has its hash, and the timeDiff putKey
    gives it: seconds from `begin_ts`, for entry 1 from `first_base` (-1: unknown, reported as -1)."""
    m = len(phy)
    record = np.full(m, -1, np.int64)
    key_ok = np.zeros(m, np.bool_)
    want = np.full(m, -1, np.int64)
    n = len(rec_off)
    key_start = np.zeros(n + 1, np.int64)  # keys of record r: key_start[r]..key_start[r + 1]
    for k in range(len(rec_key_record)):
        key_start[rec_key_record[k] + 1] += 1
    for r in range(n):
        key_start[r + 1] += key_start[r]
    j = 0
    for k in range(m):
        o = phy[k]
        if k == 0 or o < phy[k - 1]:  # the first entry, or one out of commitlog order: search
            j = np.searchsorted(rec_off, o)
        while j < n and rec_off[j] < o:  # entries in commitlog order: a merge with the records
            j += 1
        if j >= n or rec_off[j] != o:
            continue
        record[k] = j
        for q in range(key_start[j], key_start[j + 1]):
            if rec_key_hash[q] == key_hash[k]:
                key_ok[k] = True
                break
        base = first_base if k == 0 else begin_ts
        if base == -1:
            continue
        if base <= 0:
            want[k] = 0
        else:
            want[k] = min(max((rec_store_ts[j] - base) // 1000, 0), MAX_TIME_DIFF)
    return record, key_ok, want
