"""Broker rules that every engine applies, each written once: the Python paths call these functions and the
compiled kernels (rmqctl.native) compile these same functions, so a rule changed here changes everywhere.
They take plain integers and byte sequences (bytes, or a numpy uint8 array inside a kernel).

Sources: IndexService.buildIndex / IndexFile.indexKeyHashMethod, putKey, selectPhyOffset, ConsumeQueue.recover
(store module).
"""
from __future__ import annotations

INTEGER_MIN_VALUE = -(1 << 31)
INTEGER_MAX_VALUE = (1 << 31) - 1
KEY_SEPARATOR = 0x20  # MessageConst.KEY_SEPARATOR, " ": between the words of the KEYS property


def index_key_hash(hash_code):
    """IndexFile.indexKeyHashMethod: Math.abs(String.hashCode of `topic#key`). Math.abs(Integer.MIN_VALUE)
    is Integer.MIN_VALUE, which the broker turns into 0."""
    return 0 if hash_code == INTEGER_MIN_VALUE else abs(hash_code)


def index_slot(key_hash, slot_num):
    """IndexFile.putKey / selectPhyOffset: the hash slot a key hash chains from (of a stored keyHash too,
    which a damaged file may hold negative)."""
    return index_key_hash(key_hash) % slot_num


def index_time_diff(store_timestamp, begin_timestamp):
    """IndexFile.putKey: an entry's timeDiff, the seconds from the file's beginTimestamp to the record's
    storeTimestamp; 0 without a beginTimestamp or before it, at most Integer.MAX_VALUE."""
    diff = store_timestamp - begin_timestamp
    if begin_timestamp <= 0 or diff < 0:
        return 0
    return min(diff // 1000, INTEGER_MAX_VALUE)


def cq_unit_valid(commit_log_offset, size):
    """ConsumeQueue.recover / correctMinOffset: a unit holds a message when its commitlog offset is >= 0 and
    its size > 0 (a pre-blank unit too). Element by element on numpy arrays."""
    return (commit_log_offset >= 0) & (size > 0)


def written_units(units) -> int:
    """How many units of a consumequeue file (a numpy array of schema.CQ_DTYPE) ConsumeQueue.recover
    accepts: those before the first that is not valid."""
    invalid = (~cq_unit_valid(units["commitLogOffset"], units["size"])).nonzero()[0]
    return int(invalid[0]) if len(invalid) else len(units)


def next_key_word(data, start, end):
    """IndexService.buildIndex splits KEYS on KEY_SEPARATOR and indexes every non-empty word: the next word
    of data[start:end] as (first, end), (end, end) when there is none. The separator byte never occurs
    inside a multi-byte UTF-8 character, so splitting the bytes splits the decoded text the same way."""
    lo = start
    while lo < end and data[lo] == KEY_SEPARATOR:
        lo += 1
    hi = lo
    while hi < end and data[hi] != KEY_SEPARATOR:
        hi += 1
    return lo, hi


def key_words(data: bytes) -> list[bytes]:
    """Every word the broker indexes from a KEYS value (its UTF-8 bytes)."""
    words = []
    lo, hi = next_key_word(data, 0, len(data))
    while lo < hi:
        words.append(data[lo:hi])
        lo, hi = next_key_word(data, hi, len(data))
    return words
