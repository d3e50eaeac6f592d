"""`dump commitlog`'s JSON Lines, written from the engine's columns in machine code: the same bytes that
orjson makes of record.message_dict (keys in its order, compact, UTF-8 text as is, `"` `\\` and control
characters escaped as orjson escapes them). Records whose line needs what the kernel does not carry (IPv6
hosts, text that is not well-formed UTF-8 and that Java decodes with replacement, a property name given
twice, more than MOST_PAIRS pairs, a compressed body with --decompress) stop the kernel at that record; the
caller writes its line with the reference (message_dict) and goes on.
"""

from __future__ import annotations

import numpy as np

from .. import schema as S
from .kernels import (
    HIGH_BITS,
    THREE,
    find_name,
    kernel,
    load8,
    property_segment,
    store8,
    trailing_zeros,
    well_formed_utf8,
)
from .decode import (
    BODY_AT,
    COLUMN,
    COMBO,
    HEAD_NAMES,
    POSITION,
    PROPS_AT,
    PROPS_LEN,
    TEXT_FLAGS,
    TOPIC_AT,
    TOPIC_LEN,
    VALUE_SPANS,
    PROPERTY_NAMES,
)
from ..schema import PHYSICAL_OFFSET_AT

BODY_NONE, BODY_UTF8, BODY_BASE64, BODY_HEX = range(4)
BODY_MODES = {"none": BODY_NONE, "utf8": BODY_UTF8, "base64": BODY_BASE64, "hex": BODY_HEX}
MOST_PAIRS = 64
UNIQ_KEY_LO = VALUE_SPANS + 2 * PROPERTY_NAMES.index("UNIQ_KEY")

# the numbers written as they are, in message_dict's order (the record's) around the hosts: storeSize to
# bornTimestamp, then reconsumeTimes, preparedTransactionOffset and bodyLength
HEAD_FIELDS = tuple(S.RECORD_AT)
FIRST_NUMBERS = HEAD_FIELDS[: HEAD_FIELDS.index("bornHost.ip")]
LATER_NUMBERS = HEAD_FIELDS[HEAD_FIELDS.index("reconsumeTimes") : HEAD_FIELDS.index("headSize")]


def _literals():
    """The constant text between the values, one piece after another in a byte array, and where each begins."""
    pieces = ['{"file":"', '","position":', ',"commitLogOffset":']
    pieces += [f',"{name}":' for name in FIRST_NUMBERS]
    pieces += [',"bornHost":"', '","storeTimestamp":', ',"storeHost":"', '"']
    pieces += [f',"{name}":' for name in LATER_NUMBERS]
    pieces += [
        ',"body":',
        ',"bodyEncoding":"none"',
        ',"bodyEncoding":"utf8"',
        ',"bodyEncoding":"base64"',
        ',"bodyEncoding":"hex"',
        ',"topic":"',
        '","properties":{',
        '},"msgId":"',
        '","uniqKey":',
        "null",
        ',"propertiesString":"',
        "}\n",
    ]
    pieces += [(',"dledger":{' if k == 0 else ",") + f'"{name}":' for k, name in enumerate(S.DLEDGER_DUMP_FIELDS)]
    pieces += ["}"]
    data = np.frombuffer("".join(pieces).encode() + bytes(8), np.uint8).copy()  # + 8: put_literal reads words
    starts = np.cumsum([0] + [len(p.encode()) for p in pieces]).astype(np.int64)
    return pieces, data, starts


PIECES, LITERAL_BYTES, LITERAL_STARTS = _literals()
(L_FILE, L_POSITION, L_OFFSET) = range(3)
L_FIRST = 3
L_BORN = L_FIRST + len(FIRST_NUMBERS)
L_STORE_TS, L_STORE_HOST, L_QUOTE = L_BORN + 1, L_BORN + 2, L_BORN + 3
L_LATER = L_BORN + 4
L_BODY = L_LATER + len(LATER_NUMBERS)
L_ENCODING = L_BODY + 1  # + body mode
L_TOPIC, L_PROPERTIES, L_MSGID, L_UNIQ, L_NULL, L_RAW, L_END = range(L_ENCODING + 4, L_ENCODING + 11)
L_DLEDGER = L_END + 1  # the entry's fields (the first opens the object), then the closing brace
ENTRY_FIELD_COUNT = len(S.DLEDGER_DUMP_FIELDS)
FIRST_COLUMNS = np.array([COLUMN[n] for n in FIRST_NUMBERS], np.int64)
LATER_COLUMNS = np.array([COLUMN[n] for n in LATER_NUMBERS], np.int64)
STORE_TS, BORN_IP, BORN_PORT, STORE_IP, STORE_PORT = (
    HEAD_NAMES.index(n) for n in ("storeTimestamp", "bornHost.ip", "bornHost.port", "storeHost.ip", "storeHost.port")
)
BODY_LENGTH = HEAD_NAMES.index("bodyLength")
SYSFLAG = HEAD_NAMES.index("sysFlag")
COMPRESSED = S.COMPRESSED_FLAG

HEX_DIGITS = np.frombuffer(b"0123456789abcdef", np.uint8).copy()
BASE64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", np.uint8).copy()
# orjson's short escapes: \b \t \n \f \r; every other byte < 0x20 is \u00XX
SHORT_ESCAPE = np.zeros(32, np.uint8)
for _code, _letter in ((8, "b"), (9, "t"), (10, "n"), (12, "f"), (13, "r")):
    SHORT_ESCAPE[_code] = ord(_letter)


@kernel(inlined=True)
def put_literal(out, o, k):
    """Literal k, a word at a time (it may write up to 7 bytes past its end: lines have room to spare)."""
    lo, hi = LITERAL_STARTS[k], LITERAL_STARTS[k + 1]
    for i in range(0, hi - lo, 8):
        store8(out, o + i, load8(LITERAL_BYTES, lo + i))
    return o + hi - lo


ZERO_DIGITS = np.uint64(0x3030303030303030)  # '0' in every byte
HUNDRED_MILLION = np.uint64(10**8)
LANES_OF_100, LANES_OF_10 = np.uint64(0x0000007F0000007F), np.uint64(0x000F000F000F000F)


@kernel
def eight_digits(v):
    """The 8 decimal digits of v < 10^8 (with its leading zeros, not yet ASCII) as the bytes of one word, first
    digit first in memory. Two 4-digit lanes split into pairs, then four pairs into digits, all lanes with one
    multiply: (a * 10486) >> 20 is a // 100 for a < 10^4, (b * 103) >> 10 is b // 10 for b < 100."""
    x = (v // np.uint64(10000)) | ((v % np.uint64(10000)) << np.uint64(32))
    hundreds = ((x * np.uint64(10486)) >> np.uint64(20)) & LANES_OF_100
    x = hundreds | ((x - hundreds * np.uint64(100)) << np.uint64(16))
    tens = ((x * np.uint64(103)) >> np.uint64(10)) & LANES_OF_10
    return tens | ((x - tens * np.uint64(10)) << np.uint64(8))


@kernel
def put_leading(out, o, digits):
    """eight_digits' word of a value > 0 without its leading zeros (up to 7 bytes past them may be written)."""
    skip = trailing_zeros(digits) >> THREE
    store8(out, o, (digits + ZERO_DIGITS) >> (skip << THREE))
    return o + 8 - np.int64(skip)


@kernel(inlined=True)
def put_int(out, o, v):
    """The decimal text of the int64 v, up to 8 digits a step (up to 7 bytes past it may be written)."""
    if v < 0:
        out[o] = 45  # '-'
        o += 1
        mag = np.uint64(-(v + 1)) + np.uint64(1)
    else:
        mag = np.uint64(v)
    if mag < np.uint64(10):
        out[o] = 48 + np.uint8(mag)
        return o + 1
    if mag < HUNDRED_MILLION:
        return put_leading(out, o, eight_digits(mag))
    high = mag // HUNDRED_MILLION
    if high < HUNDRED_MILLION:
        o = put_leading(out, o, eight_digits(high))
    else:  # (2^64 < 10^20: the top holds at most 4 digits)
        top = high // HUNDRED_MILLION
        o = put_leading(out, o, eight_digits(top))
        store8(out, o, eight_digits(high - top * HUNDRED_MILLION) + ZERO_DIGITS)
        o += 8
    store8(out, o, eight_digits(mag - high * HUNDRED_MILLION) + ZERO_DIGITS)
    return o + 8


ONE = np.uint64(1)
ONES = np.uint64(0x0101010101010101)
LETTERS = np.uint64(0x4141414141414141)  # 'A's: the bytes of a word past a short text, which need no escape
QUOTES = np.uint64(0x2222222222222222)
BACKSLASHES = np.uint64(0x5C5C5C5C5C5C5C5C)
SPACES = np.uint64(0x2020202020202020)


@kernel
def needs_escape(w):
    """Whether any of the 8 bytes of word w is below 0x20, '"' or '\\' (the bytes JSON escapes): the exact
    "has a byte less than n" and "has a zero byte" tests on machine words."""
    quote, backslash = w ^ QUOTES, w ^ BACKSLASHES
    return (((w - SPACES) & ~w) | ((quote - ONES) & ~quote) | ((backslash - ONES) & ~backslash)) & HIGH_BITS != 0


@kernel(inlined=True)
def put_escaped(out, o, u8, lo, hi):
    """Well-formed UTF-8 text as the inside of a JSON string, escaped as orjson escapes it: words that need
    no escape are copied whole (up to 7 bytes past the text may be written: lines have room to spare)."""
    i = lo
    while i < hi:
        n = min(hi - i, 8)
        if i + 8 <= len(u8):  # a whole word can be read here (a short text's word is masked to its bytes)
            w = load8(u8, i)
            if n < 8:
                keep = (ONE << np.uint64(8 * n)) - ONE
                w = (w & keep) | (LETTERS & ~keep)
            if not needs_escape(w):
                store8(out, o, w)  # bytes past the text are overwritten by what follows it
                o += n
                i += n
                continue
        for j in range(i, i + n):
            o = put_escaped_byte(out, o, u8[j])
        i += n
    return o


@kernel
def put_escaped_byte(out, o, b):
    if b >= 0x20 and b != 34 and b != 92:
        out[o] = b
        return o + 1
    out[o] = 92
    if b == 34 or b == 92:
        out[o + 1] = b
        return o + 2
    if SHORT_ESCAPE[b]:
        out[o + 1] = SHORT_ESCAPE[b]
        return o + 2
    out[o + 1], out[o + 2], out[o + 3] = 117, 48, 48  # u00
    out[o + 4] = HEX_DIGITS[b >> 4]
    out[o + 5] = HEX_DIGITS[b & 15]
    return o + 6


def _hex_pairs(digits: bytes) -> np.ndarray:
    """Every byte value's two hex digits as a little-endian pair of bytes."""
    return np.array([digits[b >> 4] | digits[b & 15] << 8 for b in range(256)], np.uint64)


HEX_PAIRS, HEX_UPPER_PAIRS = _hex_pairs(b"0123456789abcdef"), _hex_pairs(b"0123456789ABCDEF")
# numba types uint64 with int64 as float64: word arithmetic keeps every operand (shift counts too) uint64
HEX_SHIFTS = tuple(np.uint64(k) for k in (16, 32, 48))


@kernel
def put_hex(out, o, u8, lo, hi, pairs):
    """u8[lo:hi] as hex digits (`pairs`: HEX_PAIRS or HEX_UPPER_PAIRS), four bytes to one word store."""
    s16, s32, s48 = HEX_SHIFTS
    i = lo
    while i + 4 <= hi:
        store8(out, o, pairs[u8[i]] | (pairs[u8[i + 1]] << s16) | (pairs[u8[i + 2]] << s32) | (pairs[u8[i + 3]] << s48))
        o += 8
        i += 4
    for i in range(i, hi):
        out[o] = pairs[u8[i]] & 0xFF
        out[o + 1] = pairs[u8[i]] >> 8
        o += 2
    return o


@kernel(inlined=True)
def put_msgid(out, o, u8, position, store_ip_at, store_ip_len):
    """MessageDecoder.createMessageId: the store host's address and port, then PHYSICALOFFSET, as upper-case
    hex (the record's own bytes: the port as the int it is stored as)."""
    o = put_hex(out, o, u8, store_ip_at, store_ip_at + store_ip_len + 4, HEX_UPPER_PAIRS)
    return put_hex(out, o, u8, position + PHYSICAL_OFFSET_AT, position + PHYSICAL_OFFSET_AT + 8, HEX_UPPER_PAIRS)


# base64 two characters at a time: the text of every 12-bit value, as a little-endian pair of bytes
BASE64_PAIRS = np.array([int(BASE64[v >> 6]) | int(BASE64[v & 63]) << 8 for v in range(4096)], np.uint64)
BYTE, TWELVE_BITS = np.uint64(0xFF), np.uint64(0xFFF)
SHIFTS = tuple(np.uint64(k) for k in (8, 12, 16, 24, 32, 36, 40, 48))


@kernel
def put_base64(out, o, u8, lo, hi):
    """RFC 4648 base64 of u8[lo:hi]: six bytes to eight characters from one word load and one word store
    (up to 7 bytes past the text may be written: lines have room to spare), then three at a time."""
    s8, s12, s16, s24, s32, s36, s40, s48 = SHIFTS
    i = lo
    while i + 6 <= hi and i + 8 <= len(u8):
        w = load8(u8, i)  # the bytes in memory order, the first lowest: read as a big-endian 48-bit number
        v = (
            ((w & BYTE) << s40)
            | (((w >> s8) & BYTE) << s32)
            | (((w >> s16) & BYTE) << s24)
            | (((w >> s24) & BYTE) << s16)
            | (((w >> s32) & BYTE) << s8)
            | ((w >> s40) & BYTE)
        )
        store8(
            out,
            o,
            BASE64_PAIRS[(v >> s36) & TWELVE_BITS]
            | (BASE64_PAIRS[(v >> s24) & TWELVE_BITS] << s16)
            | (BASE64_PAIRS[(v >> s12) & TWELVE_BITS] << s32)
            | (BASE64_PAIRS[v & TWELVE_BITS] << s48),
        )
        o += 8
        i += 6
    while i + 3 <= hi:
        v = (np.int64(u8[i]) << 16) | (np.int64(u8[i + 1]) << 8) | np.int64(u8[i + 2])
        out[o] = BASE64[v >> 18]
        out[o + 1] = BASE64[(v >> 12) & 63]
        out[o + 2] = BASE64[(v >> 6) & 63]
        out[o + 3] = BASE64[v & 63]
        o += 4
        i += 3
    rest = hi - i
    if rest:
        v = np.int64(u8[i]) << 16
        if rest == 2:
            v |= np.int64(u8[i + 1]) << 8
        out[o] = BASE64[v >> 18]
        out[o + 1] = BASE64[(v >> 12) & 63]
        out[o + 2] = BASE64[(v >> 6) & 63] if rest == 2 else 61  # '='
        out[o + 3] = 61
        o += 4
    return o


# each byte value's decimal text and a '.' as one little-endian word, and that text's length
OCTET_WORDS = np.array([int.from_bytes(f"{b}.".encode().ljust(8, b"\0"), "little") for b in range(256)], np.uint64)
OCTET_LENGTHS = np.array([len(f"{b}.") for b in range(256)], np.int64)


@kernel(inlined=True)
def put_ipv4(out, o, u8, at, port):
    """ "a.b.c.d:port", each address byte one word store (the host may write up to 7 bytes past its text)."""
    for k in range(4):
        b = u8[at + k]
        store8(out, o, OCTET_WORDS[b])
        o += OCTET_LENGTHS[b]
    out[o - 1] = 58  # ':' in place of the last '.'
    return put_int(out, o, port)


@kernel
def property_pairs(u8, lo, hi, name_lo, sep_at, value_hi):
    """The pairs of the property string u8[lo:hi] in order (name start, separator, value end), or -1 when
    there are more than the arrays hold or a name comes twice (message_dict's dict keeps the first place
    and the last value: the reference writes those)."""
    n = 0
    i = lo
    while i < hi:
        j, sep, _, _ = property_segment(u8, i, hi)
        if sep >= 0:
            if n == len(name_lo):
                return -1
            if find_name(u8, name_lo, sep_at, 0, n, i, sep) >= 0:
                return -1
            name_lo[n], sep_at[n], value_hi[n] = i, sep, j
            n += 1
        i = j + 1
    return n


@kernel
def line_bound(cols, r, name_len):
    """The most bytes record r's line can take (every text byte escaped to 6)."""
    body = max(cols[r, BODY_LENGTH], 0)
    return 1100 + name_len + 6 * cols[r, TOPIC_LEN] + 14 * cols[r, PROPS_LEN] + 6 * body


@kernel(counted=False)
def write_lines(
    u8, cols, entries, rows, first, file_name, file_start, body_mode, raw_properties, decompress, out, pairs
):
    """Write the lines of cols[rows[first:]] into `out` until the next one may not fit or needs the
    reference; `entries` (DLedger: a row's entry fields, else no rows) adds a `dledger` object; `pairs` is
    room for a record's property pairs (3 x MOST_PAIRS: the kernel allocates nothing). Returns (rows
    written, bytes written, that next row needs the reference)."""
    name_lo, sep_at, value_hi = pairs[0], pairs[1], pairs[2]
    o = 0
    for i in range(first, len(rows)):
        r = rows[i]
        if line_bound(cols, r, len(file_name)) > len(out) - o:
            return i - first, o, False
        props_lo = cols[r, PROPS_AT]
        props_hi = props_lo + cols[r, PROPS_LEN]
        if cols[r, COMBO] != 0 or cols[r, TEXT_FLAGS] != 0 or (decompress and cols[r, SYSFLAG] & COMPRESSED):
            return i - first, o, True
        pairs = property_pairs(u8, props_lo, props_hi, name_lo, sep_at, value_hi)
        if pairs < 0:
            return i - first, o, True
        pos = cols[r, POSITION]
        o = put_literal(out, o, L_FILE)
        for k in range(len(file_name)):
            out[o + k] = file_name[k]
        o += len(file_name)
        o = put_literal(out, o, L_POSITION)
        o = put_int(out, o, pos)
        o = put_literal(out, o, L_OFFSET)
        o = put_int(out, o, file_start + pos)
        for k in range(len(FIRST_COLUMNS)):
            o = put_literal(out, o, L_FIRST + k)
            o = put_int(out, o, cols[r, FIRST_COLUMNS[k]])
        o = put_literal(out, o, L_BORN)
        o = put_ipv4(out, o, u8, cols[r, BORN_IP], cols[r, BORN_PORT])
        o = put_literal(out, o, L_STORE_TS)
        o = put_int(out, o, cols[r, STORE_TS])
        o = put_literal(out, o, L_STORE_HOST)
        o = put_ipv4(out, o, u8, cols[r, STORE_IP], cols[r, STORE_PORT])
        o = put_literal(out, o, L_QUOTE)
        for k in range(len(LATER_COLUMNS)):
            o = put_literal(out, o, L_LATER + k)
            o = put_int(out, o, cols[r, LATER_COLUMNS[k]])
        o = put_literal(out, o, L_BODY)
        body_lo = cols[r, BODY_AT]
        body_hi = body_lo + max(cols[r, BODY_LENGTH], 0)
        mode = body_mode
        if mode == BODY_UTF8 and not well_formed_utf8(u8, body_lo, body_hi):
            mode = BODY_BASE64  # not UTF-8: the contract falls back to base64
        if mode == BODY_NONE:
            o = put_literal(out, o, L_NULL)
        else:
            out[o] = 34
            o += 1
            if mode == BODY_UTF8:
                o = put_escaped(out, o, u8, body_lo, body_hi)
            elif mode == BODY_BASE64:
                o = put_base64(out, o, u8, body_lo, body_hi)
            else:
                o = put_hex(out, o, u8, body_lo, body_hi, HEX_PAIRS)
            out[o] = 34
            o += 1
        o = put_literal(out, o, L_ENCODING + mode)
        o = put_literal(out, o, L_TOPIC)
        topic_lo = cols[r, TOPIC_AT]
        o = put_escaped(out, o, u8, topic_lo, topic_lo + cols[r, TOPIC_LEN])
        o = put_literal(out, o, L_PROPERTIES)
        for p in range(pairs):
            if p:
                out[o] = 44  # ','
                o += 1
            out[o] = 34
            o = put_escaped(out, o + 1, u8, name_lo[p], sep_at[p])
            out[o], out[o + 1], out[o + 2] = 34, 58, 34  # ":"
            o = put_escaped(out, o + 3, u8, sep_at[p] + 1, value_hi[p])
            out[o] = 34
            o += 1
        o = put_literal(out, o, L_MSGID)
        o = put_msgid(out, o, u8, pos, cols[r, STORE_IP], 4)  # (an IPv6 store host went to the reference)
        o = put_literal(out, o, L_UNIQ)
        uniq_lo = cols[r, UNIQ_KEY_LO]
        if uniq_lo < 0:
            o = put_literal(out, o, L_NULL)
        else:
            out[o] = 34
            o = put_escaped(out, o + 1, u8, uniq_lo, cols[r, UNIQ_KEY_LO + 1])
            out[o] = 34
            o += 1
        if len(entries):
            for k in range(ENTRY_FIELD_COUNT):
                o = put_literal(out, o, L_DLEDGER + k)
                o = put_int(out, o, entries[r, k])
            o = put_literal(out, o, L_DLEDGER + ENTRY_FIELD_COUNT)
        if raw_properties:
            o = put_literal(out, o, L_RAW)
            o = put_escaped(out, o, u8, props_lo, props_hi)
            out[o] = 34
            o += 1
        o = put_literal(out, o, L_END)
    return len(rows) - first, o, False
