"""`append --jsonl`'s input read column-wise, compiled: the lines of a block (the `dump commitlog --format jsonl` shape)
parsed into the columns engine.encode gathers records from, without a Python step per line.

The kernel takes only what it reads exactly as orjson and cli.append_cmds.message_from_json would: flat objects
whose known fields are strings without escapes (topic, hosts, body, bodyEncoding) or integers of at most 18
digits, properties as an object of strings (or propertiesString), ASCII only, unknown fields holding a string,
number, true, false or null. Any other line (escapes in a topic, nested values, duplicate names, non-ASCII, a
hex body, anything malformed) stops the kernel there: the caller sends that line through the per-line path,
which reads it (or refuses it, naming the line) as before, and the kernel goes on after it.
"""

from __future__ import annotations

import numpy as np

from ..javacompat import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR
from .jsonl_kernels import needs_escape
from .kernels import HIGH_BITS, T_AT, T_LEN, kernel, load8, topic_id

# the names the kernel reads; every other name's value is skipped (message_from_json ignores it)
NAMES = (
    "topic",
    "queueId",
    "flag",
    "sysFlag",
    "bornTimestamp",
    "storeTimestamp",
    "reconsumeTimes",
    "preparedTransactionOffset",
    "bodyLength",
    "bornHost",
    "storeHost",
    "body",
    "bodyEncoding",
    "propertiesString",
    "properties",
)
(
    TOPIC,
    QUEUE_ID,
    FLAG,
    SYSFLAG,
    BORN_TS,
    STORE_TS,
    RECONSUME,
    PREPARED,
    BODY_LENGTH,
    BORN_HOST,
    STORE_HOST,
    BODY,
    BODY_ENCODING,
    PROPERTIES_STRING,
    PROPERTIES,
) = range(len(NAMES))
INTEGERS = (QUEUE_ID, FLAG, SYSFLAG, BORN_TS, STORE_TS, RECONSUME, PREPARED, BODY_LENGTH)  # ints[row, name]
NAME_BYTES = np.frombuffer("".join(NAMES).encode(), np.uint8).copy()
NAME_ENDS = np.cumsum([0] + [len(n) for n in NAMES]).astype(np.int64)
BASE64_TEXT = np.frombuffer(b"base64", np.uint8).copy()
UTF8_TEXT = np.frombuffer(b"utf8", np.uint8).copy()
NAME_VALUE, SEPARATOR = ord(NAME_VALUE_SEPARATOR), ord(PROPERTY_SEPARATOR)
MOST_PAIRS = 64  # properties of a line read here; more go the per-line way
MOST_DISTINCT = 1024  # distinct topics and hosts in a block; the interning tables are twice as long
# what each base64 character stands for; 64: not base64
BASE64_VALUE = np.full(256, 64, np.uint8)
BASE64_VALUE[np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", np.uint8)] = np.arange(
    64
)
SHORT_ESCAPES = np.zeros(256, np.uint8)  # \" \\ \/ \b \f \n \r \t: the byte they stand for
for _c, _v in zip(b'"\\/bfnrt', b'"\\/\b\f\n\r\t'):
    SHORT_ESCAPES[_c] = _v
HEX_VALUE = np.full(256, 16, np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    HEX_VALUE[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    HEX_VALUE[_c] = 10 + _i


@kernel
def skip_space(u8, i, hi):
    while i < hi and (u8[i] == 32 or u8[i] == 9 or u8[i] == 13):
        i += 1
    return i


@kernel
def plain_string(u8, i, hi):
    """The end (the closing quote) of the string whose text starts at u8[i], when it is printable ASCII without
    escapes; -1 otherwise. Words without a quote, backslash, control or non-ASCII byte are passed whole."""
    while i + 8 <= hi:
        w = load8(u8, i)
        if needs_escape(w) or w & HIGH_BITS:
            break
        i += 8
    while i < hi:
        c = u8[i]
        if c == 34:
            return i
        if c == 92 or c < 32 or c >= 128:
            return -1
        i += 1
    return -1


@kernel
def decoded_string(u8, i, hi, out, o):
    """Decode the string whose text starts at u8[i] into out[o:], escapes included (those of ASCII characters
    only): (index past the closing quote, end in out), or (-1, o) for what the kernel leaves."""
    while i < hi:
        c = u8[i]
        if c == 34:
            return i + 1, o
        if c < 32 or c >= 128:
            return -1, o
        if c == 92:
            if i + 1 >= hi:
                return -1, o
            e = u8[i + 1]
            if e == 117:  # \uXXXX
                if i + 6 > hi:
                    return -1, o
                v = 0
                for k in range(2, 6):
                    d = HEX_VALUE[u8[i + k]]
                    if d == 16:
                        return -1, o
                    v = v * 16 + d
                if v >= 128:
                    return -1, o
                out[o] = v
                i += 6
            elif SHORT_ESCAPES[e] != 0:
                out[o] = SHORT_ESCAPES[e]
                i += 2
            else:
                return -1, o
        else:
            out[o] = c
            i += 1
        o += 1
    return -1, o


@kernel
def skipped_value(u8, i, hi):
    """Past a string, number, true, false or null at u8[i] (validated as JSON), or -1 (other values, or malformed)."""
    if i >= hi:
        return -1
    c = u8[i]
    if c == 34:
        i += 1
        while i < hi:
            c = u8[i]
            if c == 34:
                return i + 1
            if c < 32 or c >= 128:
                return -1
            if c == 92:
                if i + 1 >= hi:
                    return -1
                if u8[i + 1] == 117:
                    if i + 6 > hi:
                        return -1
                    for k in range(2, 6):
                        if HEX_VALUE[u8[i + k]] == 16:
                            return -1
                    i += 6
                    continue
                if SHORT_ESCAPES[u8[i + 1]] == 0:
                    return -1
                i += 2
                continue
            i += 1
        return -1
    if c == 116:
        return _literal(u8, i, hi, 114, 117, 101, 0)
    if c == 102:
        return _literal(u8, i, hi, 97, 108, 115, 101)
    if c == 110:
        return _literal(u8, i, hi, 117, 108, 108, 0)
    return number_end(u8, i, hi)


@kernel
def _literal(u8, i, hi, a, b, c, d):
    """Past `true`, `false` or `null` at u8[i] (its letters after the first: a, b, c and d, 0 for none), or -1."""
    n = 4 if d == 0 else 5
    if i + n > hi or u8[i + 1] != a or u8[i + 2] != b or u8[i + 3] != c or (d != 0 and u8[i + 4] != d):
        return -1
    return i + n


@kernel
def number_end(u8, i, hi):
    """Past a JSON number at u8[i] (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?), or -1."""
    if i < hi and u8[i] == 45:
        i += 1
    if i >= hi or not 48 <= u8[i] <= 57:
        return -1
    if u8[i] == 48:
        i += 1
    else:
        while i < hi and 48 <= u8[i] <= 57:
            i += 1
    if i < hi and u8[i] == 46:
        i += 1
        if i >= hi or not 48 <= u8[i] <= 57:
            return -1
        while i < hi and 48 <= u8[i] <= 57:
            i += 1
    if i < hi and (u8[i] == 101 or u8[i] == 69):
        i += 1
        if i < hi and (u8[i] == 43 or u8[i] == 45):
            i += 1
        if i >= hi or not 48 <= u8[i] <= 57:
            return -1
        while i < hi and 48 <= u8[i] <= 57:
            i += 1
    return i


@kernel
def small_integer(u8, i, hi):
    """(past, value) of an integer of at most 18 digits at u8[i] (no fraction, no exponent), or (-1, 0)."""
    negative = i < hi and u8[i] == 45
    j = i + 1 if negative else i
    end = number_end(u8, i, hi)
    if end < 0 or end - j > 18:
        return -1, 0
    v = 0
    for k in range(j, end):
        c = u8[k]
        if c < 48 or c > 57:  # a fraction or an exponent
            return -1, 0
        v = v * 10 + (c - 48)
    return end, -v if negative else v


@kernel
def name_number(u8, lo, hi):
    """The index in NAMES of the name u8[lo:hi], or -1."""
    for n in range(len(NAME_ENDS) - 1):
        a = NAME_ENDS[n]
        if NAME_ENDS[n + 1] - a != hi - lo:
            continue
        same = True
        for k in range(hi - lo):
            if NAME_BYTES[a + k] != u8[lo + k]:
                same = False
                break
        if same:
            return n
    return -1


@kernel
def base64_decoded(u8, lo, hi, out, o):
    """RFC 4648 base64 u8[lo:hi] into out[o:] as base64.b64decode(validate=True) decodes it: the end in out, or -1
    for text it would refuse or read otherwise (a length not a multiple of 4, padding other than at the end,
    nonzero bits under the padding: all left to the reference)."""
    n = hi - lo
    if n % 4:
        return -1
    pad = 0
    if n and u8[hi - 1] == 61:
        pad = 2 if u8[hi - 2] == 61 else 1
    full = n - (4 if pad else 0)
    for i in range(lo, lo + full, 4):
        a, b, c, d = BASE64_VALUE[u8[i]], BASE64_VALUE[u8[i + 1]], BASE64_VALUE[u8[i + 2]], BASE64_VALUE[u8[i + 3]]
        if a | b | c | d >= 64:
            return -1
        v = (np.int64(a) << 18) | (np.int64(b) << 12) | (np.int64(c) << 6) | np.int64(d)
        out[o], out[o + 1], out[o + 2] = (v >> 16) & 0xFF, (v >> 8) & 0xFF, v & 0xFF
        o += 3
    if pad:
        i = lo + full
        a, b = BASE64_VALUE[u8[i]], BASE64_VALUE[u8[i + 1]]
        c = BASE64_VALUE[u8[i + 2]] if pad == 1 else 0
        if a | b | c >= 64 or (pad == 2 and b & 15) or (pad == 1 and c & 3):
            return -1
        v = (np.int64(a) << 18) | (np.int64(b) << 12) | (np.int64(c) << 6)
        out[o] = (v >> 16) & 0xFF
        o += 1
        if pad == 1:
            out[o] = (v >> 8) & 0xFF
            o += 1
    return o


@kernel
def properties_object(u8, i, hi, out, o, trailing, pairs):
    """The object of string properties at u8[i] (past its `{`) written as MessageDecoder.messageProperties2String
    writes the map (name 0x01 value 0x02; 4.x: separators between pairs, `trailing`: after each): (past the
    `}`, end in out), or (-1, o) for what the kernel leaves (a duplicate name, a separator in a name or value,
    a value not a string, more than MOST_PAIRS pairs)."""
    n = 0
    i = skip_space(u8, i, hi)
    if i < hi and u8[i] == 125:
        return i + 1, o
    while True:
        if i >= hi or u8[i] != 34 or n == MOST_PAIRS:
            return -1, o
        if n and not trailing:
            out[o] = SEPARATOR
            o += 1
        name_at = o
        i, o = decoded_string(u8, i + 1, hi, out, o)
        if i < 0:
            return -1, o
        pairs[0, n], pairs[1, n] = name_at, o - name_at
        for p in range(n):  # a later duplicate would replace the first's value in the first's place
            if pairs[1, p] == o - name_at:
                same = True
                for k in range(o - name_at):
                    if out[pairs[0, p] + k] != out[name_at + k]:
                        same = False
                        break
                if same:
                    return -1, o
        n += 1
        i = skip_space(u8, i, hi)
        if i >= hi or u8[i] != 58:
            return -1, o
        i = skip_space(u8, i + 1, hi)
        if i >= hi or u8[i] != 34:
            return -1, o
        out[o] = NAME_VALUE
        o += 1
        i, o = decoded_string(u8, i + 1, hi, out, o)
        if i < 0:
            return -1, o
        for k in range(name_at, o):
            if (out[k] == NAME_VALUE and k != pairs[0, n - 1] + pairs[1, n - 1]) or out[k] == SEPARATOR:
                return -1, o
        if trailing:
            out[o] = SEPARATOR
            o += 1
        i = skip_space(u8, i, hi)
        if i < hi and u8[i] == 44:
            i = skip_space(u8, i + 1, hi)
            continue
        if i < hi and u8[i] == 125:
            return i + 1, o
        return -1, o


@kernel
def parse_line(u8, i, hi, r, trailing, ints, present, spans, body_out, body_off, props_out, props_off, pairs):
    """Line u8[i:hi] (past its leading spaces, at its `{`) into row r; False for a line the kernel leaves."""
    seen = 0
    o = props_off[r]  # properties are written from here on, then moved to the row's start
    object_at = object_end = string_at = string_end = o
    i = skip_space(u8, i + 1, hi)
    if i < hi and u8[i] == 125:
        return False  # no topic
    while True:
        if i >= hi or u8[i] != 34:
            return False
        end = plain_string(u8, i + 1, hi)
        if end < 0:
            return False
        n = name_number(u8, i + 1, end)
        i = skip_space(u8, end + 1, hi)
        if i >= hi or u8[i] != 58:
            return False
        i = skip_space(u8, i + 1, hi)
        if n >= 0 and seen & (1 << n):
            return False  # a duplicate: the last one counts
        if n >= 0 and i + 4 <= hi and u8[i] == 110 and u8[i + 1] == 117 and u8[i + 2] == 108 and u8[i + 3] == 108:
            i += 4  # null: as if absent
        elif n < 0:
            i = skipped_value(u8, i, hi)
        elif n == PROPERTIES:
            if i >= hi or u8[i] != 123:
                return False
            object_at = o
            i, o = properties_object(u8, i + 1, hi, props_out, o, trailing, pairs)
            object_end = o
            seen |= 1 << n
        elif n == PROPERTIES_STRING:
            if i >= hi or u8[i] != 34:
                return False
            string_at = o
            i, o = decoded_string(u8, i + 1, hi, props_out, o)
            string_end = o
            seen |= 1 << n
        elif n == TOPIC or n == BORN_HOST or n == STORE_HOST or n == BODY or n == BODY_ENCODING:
            if i >= hi or u8[i] != 34:
                return False
            end = plain_string(u8, i + 1, hi)
            if end < 0:
                return False
            spans[r, n, 0], spans[r, n, 1] = i + 1, end - i - 1
            i = end + 1
            seen |= 1 << n
        else:
            i, v = small_integer(u8, i, hi)
            ints[r, n] = v
            seen |= 1 << n
        if i < 0:
            return False
        i = skip_space(u8, i, hi)
        if i < hi and u8[i] == 44:
            i = skip_space(u8, i + 1, hi)
            continue
        if i < hi and u8[i] == 125:
            break
        return False
    if skip_space(u8, i + 1, hi) != hi or not seen & (1 << TOPIC):
        return False
    # propertiesString wins over the object (message_from_json)
    at, stop = (string_at, string_end) if seen & (1 << PROPERTIES_STRING) else (object_at, object_end)
    base = props_off[r]
    for k in range(stop - at):
        props_out[base + k] = props_out[at + k]
    props_off[r + 1] = base + stop - at
    present[r] = seen
    return body_into(u8, r, seen, spans, ints, body_out, body_off)


@kernel
def body_into(u8, r, seen, spans, ints, body_out, body_off):
    """record.decode_body for row r (base64, utf8 or no encoding: a text without escapes is its UTF-8), checked
    against bodyLength when given; False for what the kernel leaves."""
    o = body_off[r]
    lo, n = spans[r, BODY, 0], spans[r, BODY, 1]
    base64 = False
    if seen & (1 << BODY_ENCODING):
        a, m = spans[r, BODY_ENCODING, 0], spans[r, BODY_ENCODING, 1]
        if m == 6 and all_equal(u8, a, BASE64_TEXT):
            base64 = True
        elif not (m == 4 and all_equal(u8, a, UTF8_TEXT)):
            return False
    if not seen & (1 << BODY):
        end = o
    elif base64:
        end = base64_decoded(u8, lo, lo + n, body_out, o)
        if end < 0:
            return False
    else:
        for k in range(n):
            body_out[o + k] = u8[lo + k]
        end = o + n
    if seen & (1 << BODY_LENGTH) and ints[r, BODY_LENGTH] != end - o:
        return False
    body_off[r + 1] = end
    return True


@kernel
def all_equal(u8, at, word):
    for k in range(len(word)):
        if u8[at + k] != word[k]:
            return False
    return True


@kernel
def parse_block(
    u8,
    lo,
    hi,
    max_rows,
    max_bytes,
    trailing,
    ints,
    present,
    spans,
    body_out,
    body_off,
    props_out,
    props_off,
    ids,
    topic_table,
    topics,
    host_table,
    hosts,
    counts,
):
    """Parse the lines of u8[lo:hi] (whole lines) into rows until max_rows rows or max_bytes bytes, or a line the
    kernel leaves. Returns (where it stopped, lines read, rows, whether it stopped at a line it leaves: that line
    starts where it stopped). Topics and hosts are interned: ids[row] = (topic, born host, store host), -1 for
    an absent host; counts = (topics, hosts) so far."""
    pairs = np.empty((2, MOST_PAIRS), np.int64)
    i, lines, r = lo, 0, 0
    while i < hi and r < max_rows and i - lo < max_bytes:
        end = i
        while end < hi and u8[end] != 10:
            end += 1
        j = i
        while j < end and (u8[j] == 32 or u8[j] == 9 or u8[j] == 13 or u8[j] == 11 or u8[j] == 12):
            j += 1
        if j == end:  # a blank line
            i, lines = min(end + 1, hi), lines + 1
            continue
        start = skip_space(u8, i, end)
        if u8[start] != 123 or counts[0] >= MOST_DISTINCT or counts[1] >= MOST_DISTINCT - 1:
            return i, lines, r, True
        if not parse_line(
            u8, start, end, r, trailing, ints, present, spans, body_out, body_off, props_out, props_off, pairs
        ):
            return i, lines, r, True
        ids[r, 0], counts[0] = topic_id(u8, spans[r, TOPIC, 0], spans[r, TOPIC, 1], r, topic_table, topics, counts[0])
        for k, n in ((1, BORN_HOST), (2, STORE_HOST)):
            ids[r, k] = -1
            if present[r] & (1 << n):
                ids[r, k], counts[1] = topic_id(u8, spans[r, n, 0], spans[r, n, 1], r, host_table, hosts, counts[1])
        i, lines, r = min(end + 1, hi), lines + 1, r + 1
    return i, lines, r, False


def interned_texts(u8: np.ndarray, table: np.ndarray, count: int) -> list[str]:
    """The texts topic_id interned (ASCII: the kernel takes no other), by id."""
    return [u8[table[T_AT, t] : table[T_AT, t] + table[T_LEN, t]].tobytes().decode("ascii") for t in range(count)]
