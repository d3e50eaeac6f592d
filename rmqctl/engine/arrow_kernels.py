"""The engine's Arrow columns, built in machine code from the decode's spans: text and bytes gathered into
one buffer with Arrow's offsets, hosts and msgIds written as text, the properties as map entries (a name
given twice keeps its first place and its last value, as the reference's dict does) and the KEYS words
(rules.next_key_word); and what `dump commitlog`'s content filters ask of the spans (any property's value,
a KEYS word)."""

from __future__ import annotations

import numpy as np

from .decode import (
    COLUMN, CRC_OK, CRC_TEXT, CRC_UNCHECKED, NAME_BYTES, NAME_LENGTHS, POSITION, PROPERTIES_NOT_UTF8, TEXT_FLAGS,
    TOPIC_NOT_UTF8, decode_head_row, finish_row,
)  # fmt: skip
from ..rules import RECORD as OK
from .kernels import copy_span, find_name, kernel, look_up, move_bytes, property_segment, read_properties
from .jsonl_kernels import put_ipv4, put_msgid
from .record import next_key_word


@kernel
def gather(u8, lo, hi, out, offsets):
    """Copy the spans u8[lo[i]:hi[i]] (lo < 0 or hi <= lo: empty) one after another into `out`, writing
    len(lo) + 1 Arrow offsets. Returns the bytes written."""
    o = 0
    offsets[0] = 0
    for i in range(len(lo)):
        a, b = lo[i], hi[i]
        if a >= 0 and b > a:
            o = copy_span(out, o, u8, a, b - a)
        offsets[i + 1] = o
    return o


@kernel
def msgid_texts(u8, position, store_ip_at, store_ip_len, out, offsets):
    """Each record's msgId (put_msgid)."""
    o = 0
    offsets[0] = 0
    for i in range(len(position)):
        o = put_msgid(out, o, u8, position[i], store_ip_at[i], store_ip_len[i])
        offsets[i + 1] = o
    return o


@kernel(counted=False)
def record_entries(u8, lo, hi, entries, values):
    """The pairs of the property string u8[lo:hi] as map entries (spans: `entries` rows name start, name end,
    value start, value end), in order, a repeated name keeping its first place and taking the later value (the
    reference's dict); and, in the same pass, read_properties' lookup of PROPERTY_NAMES (`values`: rows
    value_lo, value_hi). Returns (the entries written, any byte >= 0x80)."""
    name_lo, name_hi, value_lo, value_hi = entries[0], entries[1], entries[2], entries[3]
    values[:, :] = -1
    n = 0
    non_ascii = False
    i = lo
    while i < hi:
        j, sep, _, seg_non_ascii = property_segment(u8, i, hi)
        non_ascii |= seg_non_ascii
        if sep >= 0:
            look_up(u8, i, sep, j, NAME_BYTES, NAME_LENGTHS, values[0], values[1])
            seen = find_name(u8, name_lo, name_hi, 0, n, i, sep)
            if seen >= 0:
                value_lo[seen], value_hi[seen] = sep + 1, j
            else:
                name_lo[n], name_hi[n], value_lo[n], value_hi[n] = i, sep, sep + 1, j
                n += 1
        i = j + 1
    return n, non_ascii


@kernel
def property_values(u8, props_at, props_len, names, name_lens, value_lo, value_hi):
    """The value span of each name (property_names) in each record's property string, as MessageDecoder
    parses it (a later pair wins): value_lo[r, k] / value_hi[r, k], -1 where record r has no name k."""
    lo = np.empty(len(name_lens), np.int64)
    hi = np.empty(len(name_lens), np.int64)
    for r in range(len(props_at)):
        read_properties(u8, props_at[r], props_at[r] + props_len[r], names, name_lens, lo, hi)
        value_lo[r, :] = lo
        value_hi[r, :] = hi


@kernel
def holds_word(u8, lo, hi, word, out):
    """Whether each KEYS value u8[lo[r]:hi[r]] (lo < 0: no KEYS) has `word` among the words the broker
    indexes (rules.next_key_word)."""
    for r in range(len(lo)):
        out[r] = False
        if lo[r] < 0:
            continue
        a, b = next_key_word(u8, lo[r], hi[r])
        while a < b and not out[r]:
            if b - a == len(word):
                out[r] = True
                for c in range(b - a):
                    if u8[a + c] != word[c]:
                        out[r] = False
                        break
            a, b = next_key_word(u8, b, hi[r])


# A record batch's Arrow buffers, written in one pass over a chunk's rows (engine/columns.py lays them out and
# wraps them): the spans gathered as stored (`spans`: per column, the decode's column of its first byte, of its
# end or length, and whether that is a length), then the hosts' and msgId's text, the properties' map entries
# and the KEYS words. A span column's rows are null where its first byte is -1 (a property the record lacks).
# Per-row offsets (and validity bits) come in this order, after the spans':
BORN_HOST, STORE_HOST, MSG_ID, PROPERTY_MAP, KEY_LIST = range(5)  # (+ the number of span columns)
# data sections, after the spans': the hosts' and msgId's text, the entries' names and values, the KEYS words
ENTRY_NAMES, ENTRY_VALUES, KEY_WORDS = 3, 4, 5
NDATA_AFTER_SPANS = 6
NROWS_AFTER_SPANS = 5
CRC_VALID, CRC_VALUE = 5, 6  # the crcOk column's validity and value bits, after the spans' bit rows
NBITS_AFTER_SPANS = 7
# what a batch holds that the kernel leaves to the reference's Python (flags: rare, and slow to do right here)
BORN_V6, STORE_V6, TOPIC_TEXT, PROPERTIES_TEXT, CRC_AS_TEXT = 1, 2, 4, 8, 16
HOST_ROOM = 27 + 8  # "255.255.255.255:-2147483648", and put_ipv4's word stores past it
KEYS_LO, KEYS_HI = COLUMN["lo:KEYS"], COLUMN["hi:KEYS"]
PROPS_AT, PROPS_LEN = COLUMN["propertiesAt"], COLUMN["propertiesLength"]
COMBO, STORE_IP = COLUMN["combo"], COLUMN["storeHost.ip"]
HOST_COLUMNS = ((COLUMN["bornHost.ip"], COLUMN["bornHost.port"]), (COLUMN["storeHost.ip"], COLUMN["storeHost.port"]))


@kernel(inlined=True)
def span_end(cols, r, spans, k):
    """Where row r's span of span column k ends (spans[k]: its first byte's column, its end's or length's
    column, 1 for a length)."""
    end = cols[r, spans[k, 1]]
    return cols[r, spans[k, 0]] + max(end, 0) if spans[k, 2] else end


@kernel
def batch_layout(cols, spans, at):
    """The data sections of a batch (their starts, 64-byte aligned, in `at`; at[-1] the total) and the room
    its map entries and KEYS words need: returns (entries, words, most entries of one record)."""
    ns = len(spans)
    size = np.zeros(len(at) - 1, np.int64)
    entries = words = most = 0
    for r in range(len(cols)):
        for k in range(ns):
            lo = cols[r, spans[k, 0]]
            if lo >= 0:
                size[k] += max(span_end(cols, r, spans, k) - lo, 0)
        size[ns + BORN_HOST] += HOST_ROOM
        size[ns + STORE_HOST] += HOST_ROOM
        size[ns + MSG_ID] += 2 * (16 if cols[r, COMBO] & 2 else 4) + 24
        pairs = cols[r, PROPS_LEN] // 3 + 1
        entries += pairs
        most = max(most, pairs)
        size[ns + ENTRY_NAMES] += cols[r, PROPS_LEN]
        size[ns + ENTRY_VALUES] += cols[r, PROPS_LEN]
        if cols[r, KEYS_LO] >= 0:
            size[ns + KEY_WORDS] += cols[r, KEYS_HI] - cols[r, KEYS_LO]
            words += (cols[r, KEYS_HI] - cols[r, KEYS_LO]) // 2 + 1
    at[0] = 0
    for k in range(len(size)):
        at[k + 1] = at[k] + ((size[k] + 63) & ~63)
    return entries, words, most


@kernel(inlined=True)
def set_bit(bits, row, r):
    bits[row, r >> 3] |= np.uint8(1 << (r & 7))


SHORT_SPAN = 64  # bytes: a shorter span is copied a word at a time here, a call of the C library's memcpy costs more


@kernel(inlined=True)
def put_span(data, at, used, k, u8, lo, hi):
    """u8[lo:hi] appended to data section k; returns its new length."""
    if hi > lo:
        move_bytes(data, at[k] + used[k], u8, lo, hi - lo)
        used[k] += hi - lo
    return used[k]


@kernel(inlined=True)
def put_entries(u8, n, scratch, data, at, used, ns, items, entries):
    """A record's n map entries (record_entries, in `scratch`) appended to the names' and values' sections;
    returns the entries."""
    for e in range(n):
        items[0, entries + 1] = put_span(data, at, used, ns + ENTRY_NAMES, u8, scratch[0, e], scratch[1, e])
        items[1, entries + 1] = put_span(data, at, used, ns + ENTRY_VALUES, u8, scratch[2, e], scratch[3, e])
        entries += 1
    return entries


@kernel(inlined=True)
def put_words(u8, lo, hi, data, at, used, ns, items, words):
    """The words the broker indexes (rules.next_key_word) of the KEYS value u8[lo:hi], appended; returns the words."""
    a, b = next_key_word(u8, lo, hi)
    while a < b:
        items[2, words + 1] = put_span(data, at, used, ns + KEY_WORDS, u8, a, b)
        words += 1
        a, b = next_key_word(u8, b, hi)
    return words


@kernel(inlined=True)
def start_columns(buffers):
    """A batch's buffers before its first row: no bytes, no bits, each offsets row at 0."""
    _, _, _, _, _, offsets, bits, items, _, _, _, _, counts = buffers
    counts[:] = 0
    bits[:, :] = 0
    offsets[:, 0] = 0
    items[:, 0] = 0


# A batch's buffers go to the kernels that fill them as one tuple (columns.BatchBuffers.kernel_buffers): from32,
# from64, spans, ints32, ints64, offsets, bits, items, data, at, scratch, values, counts.


@kernel(inlined=True)
def put_row(u8, cols, r, file_start, buffers, row_entries):
    """Row r of every buffer of a batch, from the decode's row r of `cols` and its `row_entries` map entries in
    `scratch` (record_entries): ints32[k] / ints64[k] the decode's
    columns from32[k] / from64[k] (ints64's last row: commitLogOffset, the position plus `file_start`), `offsets`
    each text and binary column's Arrow offsets (rows: the spans, then BORN_HOST ...), `bits` their validity (and
    crcOk's), `items` the map entries' names' and values' and the KEYS words' offsets, `data` their bytes (section
    k from at[k]); `scratch` (4, most entries of a record) holds a record's entries while its repeats are merged.
    counts: the bytes of each data section, the set bits of each bit row, the entries, the words, the flags."""
    from32, from64, spans, ints32, ints64, offsets, bits, items, data, at, scratch, _, counts = buffers
    ns = len(spans)
    nd = len(at) - 1
    nb = len(bits)
    used = counts[:nd]
    present = counts[nd : nd + nb]
    for k in range(len(from32)):
        ints32[k, r] = cols[r, from32[k]]
    for k in range(len(from64)):
        ints64[k, r] = cols[r, from64[k]]
    pos = cols[r, POSITION]
    ints64[len(from64), r] = pos + file_start
    for k in range(ns):
        lo = cols[r, spans[k, 0]]
        if lo >= 0:
            set_bit(bits, k, r)
            present[k] += 1
            put_span(data, at, used, k, u8, lo, span_end(cols, r, spans, k))
        offsets[k, r + 1] = used[k]
    combo = cols[r, COMBO]
    flags = counts[nd + nb + 2] | combo & (BORN_V6 | STORE_V6)
    for side in range(2):
        k = ns + side
        used[k] = (
            put_ipv4(data, at[k] + used[k], u8, cols[r, HOST_COLUMNS[side][0]], cols[r, HOST_COLUMNS[side][1]]) - at[k]
        )
        offsets[k, r + 1] = used[k]
    k = ns + MSG_ID
    used[k] = put_msgid(data, at[k] + used[k], u8, pos, cols[r, STORE_IP], 16 if combo & 2 else 4) - at[k]
    offsets[k, r + 1] = used[k]
    entries = put_entries(u8, row_entries, scratch, data, at, used, ns, items, counts[nd + nb])
    offsets[ns + PROPERTY_MAP, r + 1] = entries
    counts[nd + nb] = entries
    words = counts[nd + nb + 1]
    if cols[r, KEYS_LO] >= 0:
        set_bit(bits, ns + KEY_LIST, r)
        present[ns + KEY_LIST] += 1
        words = put_words(u8, cols[r, KEYS_LO], cols[r, KEYS_HI], data, at, used, ns, items, words)
    offsets[ns + KEY_LIST, r + 1] = words
    counts[nd + nb + 1] = words
    crc = cols[r, CRC_OK]
    if crc != CRC_UNCHECKED:
        set_bit(bits, ns + CRC_VALID, r)
        present[ns + CRC_VALID] += 1
    if crc == 1:
        set_bit(bits, ns + CRC_VALUE, r)
    text = cols[r, TEXT_FLAGS]
    flags |= (TOPIC_TEXT if text & TOPIC_NOT_UTF8 else 0) | (PROPERTIES_TEXT if text & PROPERTIES_NOT_UTF8 else 0)
    counts[nd + nb + 2] = flags | (CRC_AS_TEXT if crc == CRC_TEXT else 0)


@kernel(counted=False)
def batch_columns(u8, cols, file_start, buffers):
    """Every buffer of a batch (put_row) from the rows of `cols` a walk decoded, its buffers laid out by
    batch_layout: for rows taken out of a walk's order (Chunk.select)."""
    start_columns(buffers)
    scratch, values = buffers[10], buffers[11]
    for r in range(len(cols)):
        lo = cols[r, PROPS_AT]
        n, _ = record_entries(u8, lo, lo + cols[r, PROPS_LEN], scratch, values)
        put_row(u8, cols, r, file_start, buffers, n)


# A walk that wants a batch's Arrow buffers fills them as it decodes (decode_columns, decode_columns_at): each record
# is written out while its lines are in the caches, and no layout pass goes over the batch first. The buffers are
# sized ahead by an estimate; a record that may not fit them (room_for_row: put_row's most) stops the batch with
# ROOM, and the caller grows them and goes on from that record.
ROOM = -1
MSG_ID_ROOM = 2 * (16 + 4 + 8)  # an IPv6 store host, its port and PHYSICALOFFSET as hex


@kernel(inlined=True)
def room_for_row(cols, r, buffers):
    """Whether what put_row writes of row r fits what is left of the buffers."""
    _, _, spans, _, _, _, bits, items, _, at, _, _, counts = buffers
    ns = len(spans)
    used = counts[: len(at) - 1]
    entries, words = counts[len(at) - 1 + len(bits)], counts[len(at) + len(bits)]
    for k in range(ns):
        lo = cols[r, spans[k, 0]]
        if lo >= 0 and used[k] + max(span_end(cols, r, spans, k) - lo, 0) > at[k + 1] - at[k]:
            return False
    for k in range(ns + BORN_HOST, ns + MSG_ID + 1):
        if used[k] + (MSG_ID_ROOM if k == ns + MSG_ID else HOST_ROOM) > at[k + 1] - at[k]:
            return False
    props = cols[r, PROPS_LEN]
    for k in (ns + ENTRY_NAMES, ns + ENTRY_VALUES):
        if used[k] + props > at[k + 1] - at[k]:
            return False
    if entries + props // 3 + 1 >= items.shape[1]:
        return False
    if cols[r, KEYS_LO] >= 0:
        keys = cols[r, KEYS_HI] - cols[r, KEYS_LO]
        k = ns + KEY_WORDS
        if used[k] + keys > at[k + 1] - at[k] or words + keys // 2 + 1 >= items.shape[1]:
            return False
    return True


@kernel(inlined=True)
def decode_row(u8, pos, limit, allow_v2, check_crc, cols, n, file_start, buffers):
    """decode_record's row n of the record at `pos` (ending by `limit`) and its row of the Arrow buffers
    (put_row), its property string parsed once for both (record_entries). Returns (outcome, size): ROOM when
    the row may not fit the buffers."""
    scratch, values = buffers[10], buffers[11]
    outcome, size = decode_head_row(u8, pos, limit, allow_v2, cols, n)
    if outcome != OK:
        return outcome, size
    lo, props = cols[n, PROPS_AT], cols[n, PROPS_LEN]
    if props // 3 + 1 > scratch.shape[1]:
        return ROOM, size
    entries, non_ascii = record_entries(u8, lo, lo + props, scratch, values)
    finish_row(u8, check_crc, non_ascii, values[0], values[1], cols, n)
    if not room_for_row(cols, n, buffers):
        return ROOM, size
    put_row(u8, cols, n, file_start, buffers, entries)
    return OK, size
