"""verify's compiled check of the 5.4 RocksDB message store's records (checks/rocksdbstore.py): a batch of keys
and values parsed into columns (`parse`), then each record compared with the commitlog record it names, byte
for byte, in the commitlog file's own buffer (`agree`).

The index records also have a shorter way, in no order: `index_digest` sums a hash of each parsed record, and
`record_digest` the same hash of each record IndexRocksDBStore.buildIndex makes of a commitlog record (summed
by verify's walk).
Equal sums and counts say that the database holds exactly the records the broker builds (but for a 2^-64
chance), so that every one of them agrees; any other outcome says nothing, and the records are then held
against the commitlog one by one as above.

Both kernels only ever say "certainly as the reference says": `parse` marks a row it cannot parse as its kind's
record, `agree` a record it cannot show to agree (damage, text that is not well-formed UTF-8, any difference),
and the caller hands exactly those rows to the reference (rocksdbstore.entry, store.read_message and the
checks' own comparison), which names what is wrong. So findings and their wording come from one place.
"""

from __future__ import annotations

import numpy as np

from .. import schema as S
from .kernels import (
    be32,
    be64,
    kernel,
    leading_zeros,
    load8,
    move_bytes,
    prefetch,
    property_names,
    read_properties,
    THREE,
    trailing_zeros,
    well_formed_utf8,
)
from ..rules import RECORD
from ..schema import STORE_TIMESTAMP_AT, SYSFLAG_AT
from .record import LINE, decode_tail, head_outcome
from .sstable import (
    BLOCK_SCRATCH,
    INTERNAL_BYTES,
    READ,
    TYPE_DELETION,
    TYPE_SINGLE_DELETION,
    TYPE_VALUE,
    UNKNOWN_TYPE,
    UNREADABLE,
    block_at,
    next_entry,
)

INDEX, TIMER, TRANS = 0, 1, 2  # the kinds, as rmqctl.rocksdbstore.KINDS orders them
AT = ord("@")  # IndexRocksDBRecord.KEY_SPLIT
INDEX_TYPES = np.array([ord("K"), ord("T"), ord("U")], np.uint8)
KEY_SEPARATOR = ord(" ")  # MessageConst.KEY_SEPARATOR
NAMES, NAME_LENGTHS = property_names("KEYS", "TAGS", "UNIQ_KEY", "REAL_TOPIC", "__transactionId__", "TIMER_OUT_MS")
P_KEYS, P_TAGS, P_UNIQ, P_REAL_TOPIC, P_TXID, P_TIMER_OUT = range(6)
# the columns `parse` fills: offsetPy, storeTime (index) or sizePy, the index TYPE, spans into the keys, and
# the key's int64 head (index: the hour bucket, timer: delayTime)
OFFSET, NUMBER, TYPE, TOPIC_LO, TOPIC_HI, KEY_LO, KEY_HI, UNIQ_LO, UNIQ_HI, HEAD = range(10)
NCOLUMNS = 10
VALUE_SLOT = 12  # the longest value of a record (timer: int32 sizePy, int64 offsetPy)
HOUR_MS = 3600 * 1000
LONG_MAX = (1 << 63) - 1
# Rows are in commitlog order but a record apart (~1 KiB and more): the hardware prefetcher does not foresee
# them, so `agree` asks for the head of the record PREFETCH_ROWS rows on, and for every line of the one half
# as far on (its head in by then, so its TOTALSIZE is read without a stall), as the walk does (record.py).
PREFETCH_ROWS = 32
PREFETCH_MOST = 1 << 16  # bytes asked for one record at most (a huge or damaged TOTALSIZE)


@kernel(counted=False)
def in_hour_bucket(hour, store_time):
    """Whether `hour` can be the hour bucket IndexRocksDBRecord.getKeyBytes keys the store time by
    (MixAll.dealTimeToHourStamps, whose body is in no stored apache/rocketmq revision, so its zone and way of
    flooring are not known). Floored to the hour in any zone, the bucket is on a whole minute (every zone's
    offset from UTC is) and starts within the hour before the store time, except across a zone's clock change:
    the night clocks fall back, the repeated local hour can resolve to its first occurrence (an hour earlier,
    so up to 2 h before), and a floor into a skipped or shifted hour can land after the store time (less than
    an hour). Only a bucket outside all of those is not the store time's."""
    return -HOUR_MS < store_time - hour < 2 * HOUR_MS and hour % 60000 == 0


@kernel(counted=False)
def java_long(u8, lo, hi):
    """Long.parseLong of u8[lo:hi] (an optional sign, then decimal digits, within a long): (parsed, value).
    TimerMessageRocksDBStore.getDelayTime parses TIMER_OUT_MS so; a value it cannot parse is never a record."""
    if lo < 0 or hi <= lo:
        return False, 0
    negative = u8[lo] == ord("-")
    i = lo + 1 if negative or u8[lo] == ord("+") else lo
    if i == hi:
        return False, 0
    value = 0
    limit = LONG_MAX + 1 if negative else LONG_MAX
    while i < hi:
        digit = u8[i] - ord("0")
        if digit < 0 or digit > 9 or value > (limit - digit) // 10:
            return False, 0
        value = value * 10 + digit
        i += 1
    return True, -value if negative else value


ONES, LOWS = np.uint64(0x0101010101010101), np.uint64(0x7F7F7F7F7F7F7F7F)


@kernel(counted=False, inlined=True)
def _bytes_equal(word, byte):
    """The high bit of each of the word's 8 bytes that is `byte`, and no other bit (no borrow runs between
    lanes: each lane's low 7 bits are added apart from its high bit)."""
    x = word ^ (ONES * np.uint64(byte))
    return ~(((x & LOWS) + LOWS) | x | LOWS)


@kernel(counted=False)
def _find(u8, lo, hi, byte):
    """The first position of `byte` in u8[lo:hi], -1 if none (8 bytes a step; words load in memory order,
    little-endian, so the lowest lane found is the first)."""
    i = lo
    while i + 8 <= hi:
        found = _bytes_equal(load8(u8, i), byte)
        if found != 0:
            return i + np.int64(trailing_zeros(found) >> THREE)
        i += 8
    for i in range(i, hi):
        if u8[i] == byte:
            return i
    return -1


@kernel(counted=False)
def _find_last(u8, lo, hi, byte):
    """The last position of `byte` in u8[lo:hi], -1 if none (8 bytes a step, the highest lane found last)."""
    i = hi
    while i - 8 >= lo:
        found = _bytes_equal(load8(u8, i - 8), byte)
        if found != 0:
            return i - 1 - np.int64(leading_zeros(found) >> THREE)
        i -= 8
    for i in range(i - 1, lo - 1, -1):
        if u8[i] == byte:
            return i
    return -1


@kernel(counted=False)
def _index_spans(keys, a, b, cols, n):
    """int64 hour | "@topic@TYPE@key@uniqKey@" (no key for U) | int64 offsetPy, as rocksdbstore.decode_index
    splits it, its texts as they are (_parse_index: well-formed too)."""
    if b - a < 18 or keys[a + 8] != AT or keys[b - 9] != AT:
        return False
    lo, hi = a + 9, b - 9  # the middle's words, between its first and last @
    first = _find(keys, lo, hi, AT)
    if first < 0 or first + 2 >= hi or keys[first + 2] != AT:  # (the TYPE, one byte between two @)
        return False
    kind, second = keys[first + 1], first + 2
    if not (kind == INDEX_TYPES[0] or kind == INDEX_TYPES[1] or kind == INDEX_TYPES[2]):
        return False
    last = max(_find_last(keys, second + 1, hi, AT), second)
    if (kind == INDEX_TYPES[2]) != (last == second):
        return False
    cols[n, TYPE] = kind
    cols[n, TOPIC_LO], cols[n, TOPIC_HI] = lo, first
    cols[n, KEY_LO], cols[n, KEY_HI] = second + 1, last
    cols[n, UNIQ_LO], cols[n, UNIQ_HI] = last + 1, hi
    cols[n, OFFSET] = be64(keys, b - 8)
    cols[n, HEAD] = be64(keys, a)
    return True


@kernel(counted=False)
def _parse_index(keys, a, b, cols, n):
    """An index key parsed (_index_spans) whose texts Java decodes as they are."""
    return _index_spans(keys, a, b, cols, n) and well_formed_utf8(keys, a + 8, b - 8)


@kernel(counted=False)
def _parse_trans(keys, a, b, cols, n):
    """int64 offsetPy | "@topic@uniqKey" (both not empty), as rocksdbstore.decode_trans."""
    if b - a <= 8 or keys[a + 8] != AT or not well_formed_utf8(keys, a + 8, b):
        return False
    mid = _find(keys, a + 9, b, AT)
    if mid <= a + 9 or mid == b - 1 or _find(keys, mid + 1, b, AT) >= 0:
        return False
    cols[n, TOPIC_LO], cols[n, TOPIC_HI] = a + 9, mid
    cols[n, UNIQ_LO], cols[n, UNIQ_HI] = mid + 1, b
    cols[n, OFFSET] = be64(keys, a)
    return True


@kernel
def parse(kinds, keys, key_lo, key_hi, values, value_lo, value_hi, cols):
    """Row i of `cols` for key i (keys[key_lo[i]:key_hi[i]], its value likewise); returns whether each row is
    a record of its kind, kinds[i] (False: a bookkeeping key, which no record's lengths match, or bytes of
    neither, left to the reference)."""
    n = len(key_lo)
    ok = np.zeros(n, np.bool_)
    for i in range(n):
        a, b, v, w, kind = key_lo[i], key_hi[i], value_lo[i], value_hi[i], kinds[i]
        if kind == INDEX:
            ok[i] = w - v == 8 and _parse_index(keys, a, b, cols, i)
            if ok[i]:
                cols[i, NUMBER] = be64(values, v)  # storeTime
        elif kind == TIMER:  # int64 delayTime | uniqKey -> int32 sizePy | int64 offsetPy
            ok[i] = w - v == 12 and b - a > 8 and well_formed_utf8(keys, a + 8, b)
            if ok[i]:
                cols[i, UNIQ_LO], cols[i, UNIQ_HI] = a + 8, b
                cols[i, NUMBER], cols[i, OFFSET] = be32(values, v), be64(values, v + 4)
                cols[i, HEAD] = be64(keys, a)  # delayTime
        else:  # -> int32 checkTimes | int32 sizePy
            ok[i] = w - v == 8 and _parse_trans(keys, a, b, cols, i)
            if ok[i]:
                cols[i, NUMBER] = be32(values, v + 4)
    return ok


@kernel(counted=False)
def _same(u8, lo, hi, keys, k_lo, k_hi):
    """u8[lo:hi] == keys[k_lo:k_hi] (lo -1: a property not there, never equal)."""
    if lo < 0 or hi - lo != k_hi - k_lo:
        return False
    for i in range(hi - lo):
        if u8[lo + i] != keys[k_lo + i]:
            return False
    return True


@kernel(counted=False)
def _among_words(u8, lo, hi, keys, k_lo, k_hi):
    """keys[k_lo:k_hi] is one of the KEYS words u8[lo:hi] split at each space (no KEYS: one empty word)."""
    if lo < 0:
        return k_hi == k_lo
    start = lo
    for i in range(lo, hi + 1):
        if i == hi or u8[i] == KEY_SEPARATOR:
            if _same(u8, start, i, keys, k_lo, k_hi):
                return True
            start = i + 1
    return False


@kernel(counted=False)
def _decode(u8, pos, limit, lo, hi):
    """The record at `pos` as read_record accepts it, its property value spans into lo / hi. Returns (sound and
    its properties well-formed UTF-8, size, host layout, topic start, topic length)."""
    outcome, size, combo, body_len, v2, _ = head_outcome(u8, pos, limit, True)
    if outcome != RECORD:
        return False, 0, 0, 0, 0
    topic_at, topic_len, props_len, _ = decode_tail(u8, pos, size, combo, body_len, v2)
    if topic_at < 0:
        return False, 0, 0, 0, 0
    props_at = pos + size - max(props_len, 0)
    _, non_ascii, _ = read_properties(u8, props_at, pos + size, NAMES, NAME_LENGTHS, lo, hi)
    if non_ascii and not well_formed_utf8(u8, props_at, pos + size):
        return False, 0, 0, 0, 0
    return True, size, combo, topic_at, topic_len


@kernel(counted=False)
def _fields_agree(kind, u8, pos, size, combo, topic_at, topic_len, keys, cols, r, lo, hi):
    """Row r against the sound record at `pos` (_decode's findings)."""
    same_uniq = P_TXID if kind == TRANS else P_UNIQ  # a transaction record's uniqKey is the __transactionId__
    if not _same(u8, lo[same_uniq], hi[same_uniq], keys, cols[r, UNIQ_LO], cols[r, UNIQ_HI]):
        return False
    if kind == TIMER:
        parsed, delay = java_long(u8, lo[P_TIMER_OUT], hi[P_TIMER_OUT])
        return cols[r, NUMBER] == size and parsed and delay == cols[r, HEAD]
    if kind == TRANS:
        return cols[r, NUMBER] == size and _same(
            u8, lo[P_REAL_TOPIC], hi[P_REAL_TOPIC], keys, cols[r, TOPIC_LO], cols[r, TOPIC_HI]
        )
    if be32(u8, pos + SYSFLAG_AT) & S.TRANSACTION_MASK == S.TRANSACTION_ROLLBACK_TYPE:
        return False
    if cols[r, NUMBER] != be64(u8, pos + STORE_TIMESTAMP_AT[combo]) or not in_hour_bucket(
        cols[r, HEAD], cols[r, NUMBER]
    ):
        return False
    if not (
        well_formed_utf8(u8, topic_at, topic_at + topic_len)
        and _same(u8, topic_at, topic_at + topic_len, keys, cols[r, TOPIC_LO], cols[r, TOPIC_HI])
    ):
        return False
    if cols[r, TYPE] == INDEX_TYPES[0]:
        return _among_words(u8, lo[P_KEYS], hi[P_KEYS], keys, cols[r, KEY_LO], cols[r, KEY_HI])
    if cols[r, TYPE] == INDEX_TYPES[1]:
        return _same(u8, lo[P_TAGS], hi[P_TAGS], keys, cols[r, KEY_LO], cols[r, KEY_HI])
    return True


@kernel(counted=False)
def _prefetch_record(u8, limit, positions, j):
    """Ask for the head of the record PREFETCH_ROWS rows past row j and for every line of the record half as
    far on (a hint: wrong or damaged sizes cost nothing but the hint)."""
    n = len(positions)
    prefetch(u8, positions[min(j + PREFETCH_ROWS, n - 1)])
    at = positions[min(j + PREFETCH_ROWS // 2, n - 1)]
    if at < 0 or at + 4 > limit:
        return
    end = min(at + min(max(be32(u8, at), 0), PREFETCH_MOST), limit)
    for line in range(at - at % LINE, end, LINE):
        prefetch(u8, line)


@kernel
def agree(kind, u8, limit, positions, keys, cols, rows):
    """Whether the record at each positions[j] of the commitlog file u8 (read no further than `limit`) certainly
    agrees with the parsed row rows[j] of `cols`, as the reference would find: read_record accepts it and every
    field the broker builds the record of it is the same. A record named by consecutive rows is decoded once
    (sorted positions: once per record)."""
    out = np.zeros(len(rows), np.bool_)
    lo = np.empty(len(NAME_LENGTHS), np.int64)
    hi = np.empty(len(NAME_LENGTHS), np.int64)
    at = -1
    sound, size, combo, topic_at, topic_len = False, 0, 0, 0, 0
    for j in range(len(rows)):
        if positions[j] != at:
            at = positions[j]
            _prefetch_record(u8, limit, positions, j)
            sound, size, combo, topic_at, topic_len = _decode(u8, at, limit, lo, hi)
        out[j] = sound and _fields_agree(kind, u8, at, size, combo, topic_at, topic_len, keys, cols, rows[j], lo, hi)
    return out


GATHER_AHEAD = 16  # rows: `gathered` asks for the lines of the row this far on in `order` (a random one)


@kernel
def gathered(order, keys, key_lo, key_hi, values, value_lo, value_hi, cols):
    """The parsed rows `order` (their records in commitlog order) taken out of a batch: their offsetPy, their
    keys end to end in that order, where each starts and ends there, each value in a zero-padded
    VALUE_SLOT-byte row and its length. The columns are not taken: a run's are parsed again from its keys
    when it is read (copied row by row in this random order, they cost three times the rest)."""
    m = len(order)
    total = 0
    for j in range(m):
        total += key_hi[order[j]] - key_lo[order[j]]
    out_keys, offsets = np.empty(total, np.uint8), np.empty(m, np.int64)
    out_lo, out_hi = np.empty(m, np.int64), np.empty(m, np.int64)
    slots, value_len = np.zeros((m, VALUE_SLOT), np.uint8), np.empty(m, np.int8)
    at = 0
    for j in range(m):
        if j + GATHER_AHEAD < m:  # (a hint: the rows are a batch's in random order, each a cache miss)
            ahead = order[j + GATHER_AHEAD]
            prefetch(keys, key_lo[ahead])
            prefetch(values, value_lo[ahead])
            prefetch(cols, ahead * NCOLUMNS + OFFSET)
        i = order[j]
        a, b, v = key_lo[i], key_hi[i], value_lo[i]
        move_bytes(out_keys, at, keys, a, b - a)  # (numba's slice copy and a byte loop move a byte a step)
        offsets[j] = cols[i, OFFSET]
        out_lo[j] = at
        at += b - a
        out_hi[j] = at
        move_bytes(slots[j], 0, values, v, min(value_hi[i] - v, VALUE_SLOT))
        value_len[j] = value_hi[i] - v
    return offsets, out_lo, out_hi, out_keys, slots, value_len


@kernel
def ordered_rows(order, shift, offsets, kinds, key_lo, key_hi, values, value_len):
    """The rows `order` of records joined from several runs, in that order, each row's key positions moved by
    its shift (where its run's keys start among the joined keys): offsets, kinds, key_lo, key_hi, values,
    value_len, as `gathered` returns them (the columns are parsed from the keys once they are joined)."""
    m = len(order)
    out_offsets, out_kinds = np.empty(m, np.int64), np.empty(m, np.int8)
    out_lo, out_hi = np.empty(m, np.int64), np.empty(m, np.int64)
    out_values, out_len = np.empty((m, VALUE_SLOT), np.uint8), np.empty(m, np.int8)
    for j in range(m):
        i = order[j]
        d = shift[i]
        out_offsets[j], out_kinds[j] = offsets[i], kinds[i]
        out_lo[j], out_hi[j] = key_lo[i] + d, key_hi[i] + d
        move_bytes(out_values[j], 0, values[i], 0, VALUE_SLOT)
        out_len[j] = value_len[i]
    return out_offsets, out_kinds, out_lo, out_hi, out_values, out_len


# the digest's hash: xxHash64's round and avalanche over an index record's fields, each text field hashed alone
# (8 bytes a step: little-endian words, the tail zero-padded; its length in the seed). The fields a commitlog
# record's index records share (topic, uniq key, offset, store time) are mixed first, each by a multiplication
# of its own, side by side: the walk mixes them once for all the records it makes of one (_record_base), and
# each record's own (TYPE, key) after them; the processor runs the independent multiplications together.
PRIME1, PRIME2, PRIME3 = np.uint64(0x9E3779B185EBCA87), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9)
SEED = np.uint64(0x27D4EB2F165667C5)
NO_TEXT = np.uint64(0)  # the key field of a U record, which has none


@kernel(counted=False, inlined=True)
def _round(h, word):
    h = h + word * PRIME2
    h = (h << np.uint64(31)) | (h >> np.uint64(33))
    return h * PRIME1


@kernel(counted=False, inlined=True)
def _half_turn(word):
    return (word << np.uint64(32)) | (word >> np.uint64(32))


@kernel(counted=False, inlined=True)
def _text(u8, lo, hi):
    """The hash of the bytes u8[lo:hi] and their count."""
    h, i = SEED + np.uint64(hi - lo) * PRIME3, lo
    while i + 8 <= hi:
        h = _round(h, load8(u8, i))
        i += 8
    tail, shift = np.uint64(0), np.uint64(0)
    if i < hi and hi >= 8:  # the last hi - i bytes of the word ending at hi, as the loop below takes them
        tail = load8(u8, hi - 8) >> np.uint64(8 * (8 - (hi - i)))
        i = hi
    while i < hi:
        tail |= np.uint64(u8[i]) << shift
        shift += np.uint64(8)
        i += 1
    return _round(h, tail)


@kernel(counted=False, inlined=True)
def _record_base(topic, uniq, offset, store_time):
    """The hash state of the fields all index records made of one commitlog record share (the hour bucket left
    out: its zone is not known, see in_hour_bucket), its texts' hashes given."""
    texts = (topic * PRIME1) ^ _half_turn(uniq * PRIME2)
    return _round(texts, (np.uint64(offset) * PRIME3) ^ _half_turn(np.uint64(store_time) * PRIME2))


@kernel(counted=False, inlined=True)
def _index_hash(base, kind, key):
    """The hash of the index record of TYPE `kind` and key text hash `key` (NO_TEXT for U) after `base`."""
    h = _round(base ^ np.uint64(kind), key)
    h ^= h >> np.uint64(33)
    h *= PRIME2
    h ^= h >> np.uint64(29)
    h *= PRIME3
    return h ^ (h >> np.uint64(32))


@kernel(counted=False)
def _key_digest(key, a, b, store_time, min_offset, last_offset, cols):
    """(records, hash, doubtful, whether it splits as an index record) of the index key key[a:b] holding
    `store_time` (_index_spans, into row 0 of `cols`): a record naming an offset below the commitlog's
    `min_offset` is expired and left out (if it parses as one: _parse_index); one naming a negative offset or
    one past `last_offset` (lastOffsetPy: the broker indexes in order and writes it with each batch), or whose
    hour bucket is not its store time's, is doubtful (the digest then proves nothing). Its texts are hashed as
    they are: text Java would not decode sums to what no walk makes (record_digest takes only well-formed
    texts), and the digest proves nothing."""
    if not _index_spans(key, a, b, cols, 0):
        return 0, np.uint64(0), 0, False
    offset, kind = cols[0, OFFSET], cols[0, TYPE]
    if 0 <= offset < min_offset:
        return 0, np.uint64(0), 0, well_formed_utf8(key, a + 8, b - 8)
    if offset < 0 or offset > last_offset or not in_hour_bucket(cols[0, HEAD], store_time):
        return 0, np.uint64(0), 1, True
    topic, uniq = _text(key, cols[0, TOPIC_LO], cols[0, TOPIC_HI]), _text(key, cols[0, UNIQ_LO], cols[0, UNIQ_HI])
    text = _text(key, cols[0, KEY_LO], cols[0, KEY_HI]) if kind != INDEX_TYPES[2] else NO_TEXT
    return 1, _index_hash(_record_base(topic, uniq, offset, store_time), kind, text), 0, True


@kernel
def index_digest(keys, key_lo, key_hi, values, value_lo, value_hi, ok, min_offset, last_offset):
    """(records, the sum of their hashes, doubtful) of the index keys `ok` of a batch (those `parse` parsed;
    _key_digest)."""
    count, total, doubtful, cols = 0, np.uint64(0), 0, np.zeros((1, NCOLUMNS), np.int64)
    for i in range(len(ok)):
        if ok[i]:
            store_time = be64(values, value_lo[i])
            c, h, d, _ = _key_digest(keys, key_lo[i], key_hi[i], store_time, min_offset, last_offset, cols)
            count, total, doubtful = count + c, total + h, doubtful + d
    return count, total, doubtful


@kernel(counted=False)
def _named(key, n, names, name_lo, name_hi):
    """Whether key[:n] is one of the names (names[name_lo[k]:name_hi[k]])."""
    for k in range(len(name_lo)):
        if _same(key, 0, n, names, name_lo[k], name_hi[k]):
            return True
    return False


@kernel
def table_digest(u8, offsets, sizes, decoded, decoded_lo, decoded_hi, min_offset, last_offset, names, name_lo, name_hi):
    """index_digest of every value in these data blocks of a table file (engine/sstable.py decodes them), in one
    pass, nothing gathered; a key that parses as no record is doubtful unless it is one of the bookkeeping
    `names` holding an int64 (a value of a table file may be an older version: never one to name). Returns
    (code, values, deletions, records, sum, doubtful): a deletion is counted and left out (a digest may take
    older values), any other type is UNKNOWN_TYPE."""
    scratch, key = np.empty(BLOCK_SCRATCH, np.uint8), np.empty(BLOCK_SCRATCH, np.uint8)
    cols = np.zeros((1, NCOLUMNS), np.int64)
    values, deletions, count, total, doubtful = 0, 0, 0, np.uint64(0), 0
    for b in range(len(offsets)):
        code, block, end, scratch = block_at(u8, b, offsets, sizes, decoded, decoded_lo, decoded_hi, scratch)
        if len(key) < len(block):  # (next_entry makes a key in it: as long as the block at least)
            key = np.empty(len(block), np.uint8)
        at, key_len = 0, 0
        while code == READ and at < end:
            at, key_len, value_at, length = next_entry(block, at, end, key, key_len, INTERNAL_BYTES)
            user, kind = key_len - INTERNAL_BYTES, key[max(key_len - INTERNAL_BYTES, 0)]
            if at < 0:
                code = UNREADABLE
            elif kind == TYPE_DELETION or kind == TYPE_SINGLE_DELETION:
                deletions += 1
            elif kind != TYPE_VALUE:
                code = UNKNOWN_TYPE
            else:
                values += 1
                framed = False
                if length == 8:  # (a key that splits as no record adds nothing here)
                    c, h, d, framed = _key_digest(key, 0, user, be64(block, value_at), min_offset, last_offset, cols)
                    count, total, doubtful = count + c, total + h, doubtful + d
                if not framed:
                    doubtful += 0 if length == 8 and _named(key, user, names, name_lo, name_hi) else 1
        if code != READ:
            return code, values, deletions, count, total, doubtful
    return READ, values, deletions, count, total, doubtful


@kernel(counted=False)
def _seen_word(u8, first, lo, hi):
    """Whether the KEYS word u8[lo:hi] was already among the words from `first` up to lo (buildIndex keeps a set)."""
    start = first
    while start < lo:
        end = _find(u8, start, lo, KEY_SEPARATOR)  # (found at lo - 1 at the latest)
        if end - start == hi - lo and _same(u8, start, end, u8, lo, hi):
            return True
        start = end + 1
    return False


@kernel(counted=False)
def record_digest(
    u8,
    topic_at,
    topic_len,
    readable,
    keys_lo,
    keys_hi,
    tags_lo,
    tags_hi,
    uniq_lo,
    uniq_hi,
    offset,
    store_time,
    sysflag,
    lowest,
    highest,
):
    """(records, the sum of their hashes, doubtful) of the index records IndexRocksDBStore.buildIndex makes of
    one commitlog record naming `offset` (its texts in u8; value spans -1 where a property is not there): none
    for an offset outside [lowest, highest] (expired, or past lastOffsetPy: not yet indexed), a rollback, an
    empty topic or UNIQ_KEY, a store time <= 0; else one K record per distinct non-empty KEYS word (split at
    each space), one T record of a non-empty TAGS, one U record. A record whose texts Java would not decode as
    they are (not `readable`: not well-formed UTF-8) is doubtful: its keys are not known. verify's walk sums
    this for every record it checks (engine/checks.walk)."""
    total = np.uint64(0)
    if offset < lowest or offset > highest:
        return 0, total, 0
    if not readable:
        return 0, total, 1
    rollback = sysflag & S.TRANSACTION_MASK == S.TRANSACTION_ROLLBACK_TYPE
    if rollback or topic_len == 0 or uniq_lo < 0 or uniq_hi == uniq_lo or store_time <= 0:
        return 0, total, 0
    topic, uniq, count = _text(u8, topic_at, topic_at + topic_len), _text(u8, uniq_lo, uniq_hi), 1
    base = _record_base(topic, uniq, offset, store_time)
    start = keys_lo
    while 0 <= start <= keys_hi:  # each word up to a space or the end
        end = _find(u8, start, keys_hi, KEY_SEPARATOR)
        end = keys_hi if end < 0 else end
        if end > start and not _seen_word(u8, keys_lo, start, end):
            count += 1
            total += _index_hash(base, INDEX_TYPES[0], _text(u8, start, end))
        start = end + 1
    if tags_lo >= 0 and tags_hi > tags_lo:
        count += 1
        total += _index_hash(base, INDEX_TYPES[1], _text(u8, tags_lo, tags_hi))
    total += _index_hash(base, INDEX_TYPES[2], NO_TEXT)
    return count, total, 0
