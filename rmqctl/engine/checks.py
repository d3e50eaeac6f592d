"""verify's kernels: the commitlog walk (one pass over a chunk of a file, record by record), the queue-offset
continuity of every queue, and the index file checks (entries, slots and chains, entries against records).

`walk` follows TOTALSIZE from record to record and decodes each record as record.read_record does (the same
checks in the same order: magic, storeSize, host widths from sysFlag, body, topic and properties lengths,
the length formula); where that decoder would refuse the record it stops, and the caller (checks.scan)
classifies the bytes there with read_record itself. For every well-formed record it claims, it checks what
CommitLog.checkMessageAndReturnSize and the dispatchers check or derive: PHYSICALOFFSET, sysFlag bits,
the property string (segments the broker drops, UTF-8), the `__CRC32#` property CRC and the body CRC (zlib
by symbol), the topic (interned by its bytes), the tagsCode and the index key hashes (Java's
String.hashCode over UTF-16 units of the UTF-8 text). The outcome of each check is a bit in the record's
`flags`; the caller builds findings from the few flagged records. Records whose dispatch needs rules the
kernel does not carry (the schedule topic's DELAY, LMQ multi-dispatch, malformed UTF-8 in a hashed text,
inner batches) are flagged for the reference path (record.read_record + rmqctl.dispatch).

`queue_breaks` finds where a queue's offsets do not go up by one (INNER_NUM after an inner batch) in one
pass per target; `index_entries`, `hash_slots`, `slot_chains` and `index_targets` do in one pass each what
checks.links needs of an index file; the findings themselves are built in checks.verify / verify_links.

Layouts come from rmqctl.schema (record heads through engine/record.py, index entries from
INDEX_ENTRY_DTYPE, computed at import, constants for the compiler). The kernels read untrusted bytes: every commitlog
read is inside a record whose bounds were checked against `limit`; index reads stay within the entries
and slots the file holds (the callers bound the counts).
"""

from __future__ import annotations

import numpy as np

from .. import schema as S
from ..javacompat import CRC32_PROPERTY
from .kernels import (
    MASK32,
    T_HASH,
    T_WELL_FORMED,
    be32,
    be64,
    crc32,
    java_hash,
    kernel,
    property_names,
    read_properties,
    topic_id,
    well_formed_utf8,
)
from ..schema import (
    BODY_CRC_AT,
    HEAD_SIZE,
    PHYSICAL_OFFSET_AT,
    QUEUE_ID_AT,
    QUEUE_OFFSET_AT,
    STORE_TIMESTAMP_AT,
    SYSFLAG_AT,
)
from .record import (
    decode_head,
    decode_tail,
    index_hash,
    index_slot,
    index_time_diff,
    prefetch_ahead,
    next_key_word,
    signed32,
    tags_code,
)
from .rocksdbstore import record_digest

UNKNOWN_SYSFLAG_BITS = ~S.KNOWN_SYSFLAG_BITS
COMPRESSED, COMPRESSION_MASK = S.COMPRESSED_FLAG, S.COMPRESSION_TYPE_MASK
INNER_BATCH, TRANSACTION_MASK, ROLLBACK = S.INNER_BATCH_FLAG, S.TRANSACTION_MASK, S.TRANSACTION_ROLLBACK_TYPE
PROPERTY_CRC_COVERS = -S.CRC32_RESERVED_LEN  # the property CRC covers all but the reserved tail
CRC_MASK = 0x7FFFFFFF

# the properties the kernel looks up, by index
NAME_BYTES, NAME_LENGTHS = property_names(
    "TAGS", "KEYS", "UNIQ_KEY", "DELAY", CRC32_PROPERTY, "INNER_MULTI_DISPATCH", "INNER_BASE", "INNER_NUM"
)
TAGS, KEYS, UNIQ_KEY, DELAY, CRC32, MULTI_DISPATCH, INNER_BASE, INNER_NUM = range(8)

# options (DUP_INFO: 5.x recovery's checkDupInfo, duplicationEnable)
CHECK_CRC, WANT_TAGS, WANT_KEYS, LMQ, FORCE_PROPERTY_CRC, ALLOW_V2, DUP_INFO, INDEX_DIGEST = (1 << k for k in range(8))

# flags of a record
F_PHYSICAL_OFFSET = 1  # PHYSICALOFFSET is not the record's offset
F_SYSFLAG = 2  # unknown sysFlag bits or compression type
F_EMPTY_TOPIC = 4
F_DROPPED_SEGMENTS = 8  # ASCII properties with a segment the broker's parser drops
F_PROPERTIES_UTF8 = 16  # properties that are not valid UTF-8
F_PROPERTY_CRC = 32  # __CRC32# does not match
F_PROPERTY_CRC_TEXT = 64  # a __CRC32# value the kernel does not evaluate (non-ASCII): the caller compares
F_NO_PROPERTY_CRC = 128  # forceVerifyPropCRC and no __CRC32#
F_BODY_CRC = 256  # the body CRC does not match (computed unless the property CRC verified the record)
F_REFERENCE = 512  # tagsCode / index keys / LMQ targets come from the reference path
F_INNER_BATCH = 1024  # an inner batch: its queue offset advances by INNER_NUM
F_PARSED_PROPERTIES = 2048  # properties the broker's check parses (rules.checked_properties, batch_size_failure)

MOST_KEYS = (1 << 15) // 2 + 2  # index keys one record can have: UNIQ_KEY and the words of a 32767-byte string

# record columns (rows of `records`)
POS, SIZE, QUEUE_ID, QUEUE_OFFSET, SYSFLAG, STORE_TS, TOPIC, TAGS_CODE, FLAGS = range(9)
RECORD_COLUMNS = 9
# state slots: walk position, records, keys, topics, the RocksDB index records' digest of the records
# (INDEX_DIGEST: the offsets it takes, then its records, the sum of their hashes as an int64's bits, and the
# doubtful ones; rocksdbstore.record_digest), then the walk's scratch (the value spans of the properties looked
# up: it allocates nothing)
S_POS, S_RECORDS, S_KEYS, S_TOPICS, S_DIGEST_FROM, S_DIGEST_TO, S_DIGESTED, S_DIGEST_SUM, S_DIGEST_DOUBTFUL = range(9)
S_VALUES = 9
STATE_SLOTS = S_VALUES + 2 * len(NAME_LENGTHS)
# walk outcome
ENDED, BROKEN, FULL = range(3)


@kernel
def crc_digits(u8, lo, hi):
    """javacompat.crc_from_digits of ASCII u8[lo:hi], or -1 when it lies outside [0, 2^31) (once past
    2^40 in size the value only grows, so no exact arithmetic is needed for the comparison)."""
    v = np.int64(0)
    for k in range(hi - 1, lo - 1, -1):
        v = v * 10 + (np.int64(u8[k]) - 48)
        if v > (1 << 40) or v < -(1 << 40):
            return -1
    return v if 0 <= v <= CRC_MASK else -1


@kernel
def is_ascii(u8, lo, hi):
    for k in range(lo, hi):
        if u8[k] >= 0x80:
            return False
    return True


@kernel(counted=False)
def walk(u8, limit, stop, claim_from, file_start, options, records, keys, topics, table, state):
    """Walk from state[S_POS] while records start before `stop`, checking those at or after `claim_from`
    into `records` (columns by row), their index keys into `keys` (record, hash) and their topics into
    `topics` / `table` (open addressing on the topic's Java hash). Returns ENDED (state[S_POS] is where
    the walk ended: at or past `stop`, or too close to `limit` for a record head), BROKEN (the record at
    state[S_POS] is one read_record refuses) or FULL (an output must grow before the walk goes on)."""
    allow_v2 = (options & ALLOW_V2) != 0
    check_crc = (options & CHECK_CRC) != 0
    want_tags = (options & WANT_TAGS) != 0
    want_keys = (options & WANT_KEYS) != 0
    value_lo = state[S_VALUES : S_VALUES + len(NAME_LENGTHS)]
    value_hi = state[S_VALUES + len(NAME_LENGTHS) : S_VALUES + 2 * len(NAME_LENGTHS)]
    pos = state[S_POS]
    n = state[S_RECORDS]
    property_crc_seen = False  # the previous record had __CRC32#: this one likely has too
    while pos < stop and pos + 8 <= limit:
        if not check_crc:  # the CRC reads every body, streaming the lines in (asking too cost 5%); without it, ask
            prefetch_ahead(u8, pos, limit)
        size, combo, body_len, v2 = decode_head(u8, pos, limit, allow_v2)
        if size == 0:
            state[S_POS], state[S_RECORDS] = pos, n
            return BROKEN
        claimed = pos >= claim_from
        if claimed and (
            n == records.shape[1]
            or state[S_TOPICS] * 2 >= len(table)
            or (want_keys and state[S_KEYS] + MOST_KEYS > keys.shape[1])
        ):
            state[S_POS], state[S_RECORDS] = pos, n
            return FULL
        # the body's CRC first: reading it streams the memory on to the topic, properties and next record
        body_crc_ok = True
        body_crc_done = claimed and check_crc and body_len > 0 and not property_crc_seen
        if body_crc_done:
            body_at = pos + HEAD_SIZE[combo]
            body_crc_ok = crc32(u8, body_at, body_at + body_len) & CRC_MASK == be32(u8, pos + BODY_CRC_AT)
        topic_at, topic_len, props_len, _ = decode_tail(u8, pos, size, combo, body_len, v2)
        if topic_at < 0:
            state[S_POS], state[S_RECORDS] = pos, n
            return BROKEN
        if not claimed:
            pos += size
            continue
        props_len = max(props_len, 0)
        end = pos + size
        sysflag = be32(u8, pos + SYSFLAG_AT)
        flags = 0
        if be64(u8, pos + PHYSICAL_OFFSET_AT) != file_start + pos:
            flags |= F_PHYSICAL_OFFSET
        if (sysflag & UNKNOWN_SYSFLAG_BITS) != 0 or (
            (sysflag & COMPRESSED) != 0 and (sysflag & COMPRESSION_MASK) >> 8 > 3
        ):
            flags |= F_SYSFLAG
        if topic_len == 0:
            flags |= F_EMPTY_TOPIC
        if sysflag & INNER_BATCH:
            flags |= F_INNER_BATCH
        t, state[S_TOPICS] = topic_id(u8, topic_at, topic_len, pos, table, topics, state[S_TOPICS])
        lo = end - props_len
        _, non_ascii, dropped = read_properties(u8, lo, end, NAME_BYTES, NAME_LENGTHS, value_lo, value_hi)
        if non_ascii:
            if not well_formed_utf8(u8, lo, end):
                flags |= F_PROPERTIES_UTF8
        elif dropped:
            flags |= F_DROPPED_SEGMENTS
        if check_crc:
            verified = False
            property_crc_seen = value_lo[CRC32] >= 0
            if value_lo[CRC32] >= 0:
                if is_ascii(u8, value_lo[CRC32], value_hi[CRC32]):
                    stored = crc_digits(u8, value_lo[CRC32], value_hi[CRC32])
                    if stored == crc32(u8, pos, end + PROPERTY_CRC_COVERS) & CRC_MASK:
                        verified = True
                    else:
                        flags |= F_PROPERTY_CRC
                else:
                    flags |= F_PROPERTY_CRC_TEXT
            elif options & FORCE_PROPERTY_CRC:
                flags |= F_NO_PROPERTY_CRC
            if not verified and body_len > 0:
                if not body_crc_done:
                    body_at = pos + HEAD_SIZE[combo]
                    body_crc_ok = crc32(u8, body_at, body_at + body_len) & CRC_MASK == be32(u8, pos + BODY_CRC_AT)
                if not body_crc_ok:
                    flags |= F_BODY_CRC
        if (
            value_lo[DELAY] >= 0
            or (allow_v2 and value_lo[INNER_BASE] >= 0 and value_lo[INNER_NUM] >= 0)
            or ((options & DUP_INFO) != 0 and props_len > 0)
        ):
            flags |= F_PARSED_PROPERTIES
        if (options & LMQ) and value_lo[MULTI_DISPATCH] >= 0:
            flags |= F_REFERENCE
        tags = 0
        if want_tags:
            if value_lo[DELAY] >= 0:
                flags |= F_REFERENCE  # only the schedule topic uses it: the reference path checks the topic
            elif value_lo[TAGS] >= 0:
                h, well_formed = java_hash(u8, value_lo[TAGS], value_hi[TAGS], 0)
                if well_formed:
                    tags = tags_code(signed32(h), value_hi[TAGS] - value_lo[TAGS])
                else:
                    flags |= F_REFERENCE
        if want_keys and not flags & F_REFERENCE and (sysflag & TRANSACTION_MASK) != ROLLBACK:
            if (
                not topics[T_WELL_FORMED, t]
                or (value_lo[UNIQ_KEY] >= 0 and not well_formed_utf8(u8, value_lo[UNIQ_KEY], value_hi[UNIQ_KEY]))
                or (value_lo[KEYS] >= 0 and not well_formed_utf8(u8, value_lo[KEYS], value_hi[KEYS]))
            ):
                flags |= F_REFERENCE
            else:
                k = state[S_KEYS]
                topic_hash = topics[T_HASH, t]
                if value_lo[UNIQ_KEY] >= 0:
                    keys[0, k], keys[1, k] = n, index_hash(u8, value_lo[UNIQ_KEY], value_hi[UNIQ_KEY], topic_hash)
                    k += 1
                if value_lo[KEYS] >= 0:
                    a = value_lo[KEYS]
                    b = value_hi[KEYS]
                    a, e = next_key_word(u8, a, b)
                    while a < e:
                        keys[0, k], keys[1, k] = n, index_hash(u8, a, e, topic_hash)
                        k += 1
                        a, e = next_key_word(u8, e, b)
                state[S_KEYS] = k
        if options & INDEX_DIGEST:
            count, total, doubtful = record_digest(
                u8, topic_at, topic_len, topics[T_WELL_FORMED, t] and not flags & F_PROPERTIES_UTF8,
                value_lo[KEYS], value_hi[KEYS], value_lo[TAGS], value_hi[TAGS], value_lo[UNIQ_KEY], value_hi[UNIQ_KEY],
                file_start + pos, be64(u8, pos + STORE_TIMESTAMP_AT[combo]), sysflag,
                state[S_DIGEST_FROM], state[S_DIGEST_TO],
            )  # fmt: skip
            state[S_DIGESTED] += count
            state[S_DIGEST_SUM] = np.int64(np.uint64(state[S_DIGEST_SUM]) + total)
            state[S_DIGEST_DOUBTFUL] += doubtful
        records[POS, n], records[SIZE, n] = pos, size
        records[QUEUE_ID, n], records[QUEUE_OFFSET, n] = be32(u8, pos + QUEUE_ID_AT), be64(u8, pos + QUEUE_OFFSET_AT)
        records[SYSFLAG, n], records[STORE_TS, n] = sysflag, be64(u8, pos + STORE_TIMESTAMP_AT[combo])
        records[TOPIC, n], records[TAGS_CODE, n], records[FLAGS, n] = t, tags, flags
        n += 1
        pos = end
    state[S_POS], state[S_RECORDS] = pos, n
    return ENDED


@kernel
def queue_breaks(queue, qoff, ri, order, queues, inner_records, inner_steps):
    """Where a queue's offsets do not go up by one (by INNER_NUM after an inner batch: `inner_steps` of the
    records in the sorted `inner_records`). Targets are taken in `order` (empty: as they come), which
    must be commitlog order within each queue; `queue` numbers them below `queues`. Returns the targets
    (before, at, after) around each break: `at` does not continue `before`, `after` is the next target of
    the queue (-1: none); and per queue its first, second and last target (-1: none), which is all a later
    run of records needs of this one."""
    first = np.full(queues, -1, np.int64)
    second = np.full(queues, -1, np.int64)
    last = np.full(queues, -1, np.int64)
    waiting = np.full(queues, -1, np.int64)  # the break whose `after` is its queue's next target
    before = np.empty(len(queue), np.int64)
    at = np.empty(len(queue), np.int64)
    after = np.empty(len(queue), np.int64)
    m = 0
    for t in range(len(queue)):
        i = order[t] if len(order) else t
        q = queue[i]
        if waiting[q] >= 0:
            after[waiting[q]] = i
            waiting[q] = -1
        p = last[q]
        last[q] = i
        if p < 0:
            first[q] = i
            continue
        if second[q] < 0:
            second[q] = i
        step = 1
        if len(inner_records):
            j = np.searchsorted(inner_records, ri[p])
            if j < len(inner_records) and inner_records[j] == ri[p]:
                step = inner_steps[j]
        if qoff[i] != qoff[p] + step:
            before[m], at[m], after[m] = p, i, -1
            waiting[q] = m
            m += 1
    return before[:m], at[:m], after[:m], first, second, last


# -- index files ------------------------------------------------------------------------------------------------
ENTRY_SIZE = S.INDEX_ENTRY_DTYPE.itemsize
KEY_HASH_AT, PHY_OFFSET_AT, TIME_DIFF_AT, PREV_INDEX_AT = (
    S.INDEX_ENTRY_DTYPE.fields[name][1] for name in ("keyHash", "phyOffset", "timeDiff", "prevIndex")
)
assert S.INDEX_ENTRY_DTYPE.itemsize == S.INDEX_ENTRY_SIZE and S.HASH_SLOT_SIZE == 4


@kernel
def index_entries(u8, base, count, slots):
    """Entries 1..count-1 of an index file whose entry 0 starts at u8[base] (the caller has checked that
    they lie inside u8): keyHash, phyOffset, timeDiff, prevIndex, and the slot of each keyHash
    (indexKeyHashMethod's abs, modulo the slot count)."""
    n = max(count - 1, 0)
    key_hash = np.empty(n, np.int32)
    phy = np.empty(n, np.int64)
    diff = np.empty(n, np.int32)
    prev = np.empty(n, np.int32)
    slot = np.empty(n, np.int32)
    for k in range(n):
        p = base + (k + 1) * ENTRY_SIZE
        h = be32(u8, p + KEY_HASH_AT)
        key_hash[k], phy[k] = h, be64(u8, p + PHY_OFFSET_AT)
        diff[k], prev[k] = be32(u8, p + TIME_DIFF_AT), be32(u8, p + PREV_INDEX_AT)
        slot[k] = index_slot(h, slots)
    return key_hash, phy, diff, prev, slot


@kernel
def hash_slots(u8, base, held, slots):
    """The `held` slot values at u8[base] (big-endian int32), as `slots` values (0 past the file)."""
    out = np.zeros(slots, np.int32)
    for s in range(held):
        out[s] = be32(u8, base + 4 * s)
    return out


@kernel
def slot_chains(u8, base, count, slot_values, broken):
    """IndexFile.putKey's links replayed over entries 1..count-1 (entry 0 at u8[base], checked to lie inside
    u8 by the caller): each entry should link to the newest earlier entry of its slot (0 at a chain's
    start), and each slot hold its newest entry (0 when unused). Returns the newest entry of each slot, how
    many entries link elsewhere (the first len(broken) fill `broken`'s rows: entry, prevIndex, expected,
    slot) and how many slots hold something else in 1..count-1 or a value outside it while in use. Holds 4
    bytes per slot, nothing per entry."""
    slots = len(slot_values)
    newest = np.zeros(slots, np.int32)
    wrong = 0
    for e in range(1, count):
        p = base + e * ENTRY_SIZE
        slot = index_slot(be32(u8, p + KEY_HASH_AT), slots)
        prev = be32(u8, p + PREV_INDEX_AT)
        if prev != newest[slot]:
            if wrong < len(broken):
                broken[wrong, 0], broken[wrong, 1], broken[wrong, 2], broken[wrong, 3] = e, prev, newest[slot], slot
            wrong += 1
        newest[slot] = e
    disagree = 0
    for s in range(slots):
        v = slot_values[s]
        if (v if 0 < v < max(count, 1) else 0) != newest[s]:
            disagree += 1
    return newest, wrong, disagree


# entry outcomes (bits) of index_targets
E_LIVE = 1  # inside the checked commitlog range
E_PAST_END = 2  # at or past the commitlog's end
E_NO_RECORD = 4  # no record starts there
E_WRONG_KEY = 8  # no key of its record hashes to the entry's keyHash
E_TIME = 16  # timeDiff disagrees with the record's storeTimestamp


@kernel
def lower_bound(values, x, at, last):
    """The first index i where values[i] >= x (values ascending), knowing that the answer for `last` was
    `at`: a search that moves forward looks from `at` on, one that moves back searches the whole array."""
    if x < last:
        return np.searchsorted(values, x)
    for _ in range(64):  # a short step forward (the usual case) without a search
        if at == len(values) or values[at] >= x:
            return at
        at += 1
    return at + np.searchsorted(values[at:], x)


@kernel
def index_targets(phy, key_hash, diff, lo, hi, logical_end, rec_off, rec_keys, store_ts, begin, first_base):
    """Each index entry against the records: E_* bits and the index of the record it points at (-1: none).
    [lo, hi) is the commitlog range checked; rec_keys (record << 32 | key hash, sorted) are the keys the
    records give; timeDiff is counted from `begin` (for entry 1 from `first_base`; -1: not checkable)."""
    outcome = np.zeros(len(phy), np.uint8)
    record = np.full(len(phy), -1, np.int64)
    at = 0
    last = np.int64(-(1 << 62))
    key_at = 0
    last_key = np.int64(-(1 << 62))
    for k in range(len(phy)):
        o = phy[k]
        if o < lo or o >= hi:
            continue
        outcome[k] = E_LIVE
        at = lower_bound(rec_off, o, at, last)
        last = o
        if at == len(rec_off) or rec_off[at] != o:
            outcome[k] |= E_PAST_END if o >= logical_end else E_NO_RECORD
            continue
        if o >= logical_end:
            outcome[k] |= E_PAST_END
        record[k] = at
        h = key_hash[k]
        if h >= 0:
            first_key = np.int64(at) << 32
            key_at = lower_bound(rec_keys, first_key, key_at, last_key)
            last_key = first_key
            q = key_at
            while q < len(rec_keys) and rec_keys[q] >> 32 == at and rec_keys[q] & MASK32 != h:
                q += 1
            if q == len(rec_keys) or rec_keys[q] != first_key + h:
                outcome[k] |= E_WRONG_KEY
        base = first_base if k == 0 else begin
        if base != -1:
            want = index_time_diff(store_ts[at], base)
            if diff[k] != want:
                outcome[k] |= E_TIME
    return outcome, record


@kernel
def ext_units_end(u8, limit):
    """ConsumeQueueExt.recover's walk of one file: from position 0, from unit to unit by each unit's int16
    size while it is > 0 (CqExtUnit.readBySkip). Returns (where it stopped, whether RocketMQ's walk reads
    there without an exception: a size it cannot read, 2 bytes past `limit`, or a unit stepping past
    `limit` make ByteBuffer throw, and the broker's load with it)."""
    pos = 0
    while True:
        if pos + 2 > limit:
            return pos, False
        size = (np.int64(u8[pos]) << 8) | np.int64(u8[pos + 1])
        if size >= 32768:
            size -= 65536
        if size <= 0:
            return pos, True
        if pos + size > limit:
            return pos, False
        pos += size
