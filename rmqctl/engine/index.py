"""The bulk IndexFile.putKey of a rebuild in one compiled loop, writing entries and slots into the mapped
file (verify's index checks are in engine/checks.py)."""

from __future__ import annotations


from .. import schema as S
from .kernels import be32, kernel, put_be32, put_be64
from .record import index_slot, index_time_diff

INDEX_HEADER_SIZE, HASH_SLOT_SIZE, INDEX_ENTRY_SIZE = S.INDEX_HEADER_SIZE, S.HASH_SLOT_SIZE, S.INDEX_ENTRY_SIZE
KEY_HASH_AT, PHY_OFFSET_AT, TIME_DIFF_AT, PREV_INDEX_AT = (
    S.INDEX_ENTRY_DTYPE.fields[name][1] for name in ("keyHash", "phyOffset", "timeDiff", "prevIndex")
)


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
        slot_pos = INDEX_HEADER_SIZE + index_slot(h, slot_num) * HASH_SLOT_SIZE
        prev = be32(m, slot_pos)
        if prev <= 0 or prev > count:
            prev = 0
            used += 1
        diff = index_time_diff(timestamps[j], begin_ts)
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
