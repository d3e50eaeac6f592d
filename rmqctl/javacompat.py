"""The few Java behaviours the store's bytes depend on: String.hashCode, UtilAll.crc32, the property CRC
digits, MessageDecoder's property string codec, and String.split / Long.parseLong / Integer.parseInt as the
broker applies them to property and configuration text."""

from __future__ import annotations

import datetime as dt
import re
import zlib

CRC_DIGITS = 10  # MessageDecoder.createCrc32 writes ten

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"
CRC32_PROPERTY = "__CRC32#"


def java_string_hash(s: str) -> int:
    """Java String.hashCode: h = 31*h + c over UTF-16 code units, as a signed int32."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def crc31(data) -> int:
    """UtilAll.crc32: CRC32 & 0x7FFFFFFF (31 bits); crc32 of nothing is 0."""
    return zlib.crc32(data) & 0x7FFFFFFF


def crc_digits(crc: int) -> str:
    """MessageDecoder.createCrc32: the decimal written least-significant digit first, right-padded with 0."""
    out = bytearray(CRC_DIGITS)
    put_crc_digits(crc, out, 0)
    return out.decode("ascii")


def put_crc_digits(crc, out, at):
    """crc_digits as ASCII codes into out[at:at + 10] (also compiled, for the record encoder's kernel)."""
    for k in range(CRC_DIGITS):
        out[at + k] = 48 + crc % 10 if crc > 0 else 48  # 48: '0'
        crc //= 10


def crc_from_digits(text: str) -> int:
    """The reading side (checkMessageAndReturnSize): iterate the digits from last to first."""
    v = 0
    for ch in reversed(text):
        v = v * 10 + (ord(ch) - ord("0"))
    return v


def parse_properties(text: str) -> dict[str, str]:
    """MessageDecoder.string2messageProperties: split on 0x02, skip segments shorter than 3 chars, split at
    the first 0x01 which must be strictly inside the segment; later duplicates win."""
    out: dict[str, str] = {}
    for seg in text.split(PROPERTY_SEPARATOR):
        if len(seg) < 3:
            continue
        i = seg.find(NAME_VALUE_SEPARATOR)
        if 0 < i < len(seg) - 1:
            out[seg[:i]] = seg[i + 1 :]
    return out


def encode_properties(props, trailing_separator: bool) -> str:
    """MessageDecoder.messageProperties2String: name 0x01 value 0x02 per pair. 4.9.x puts separators only
    between pairs; 5.x ends every pair with one. Pairs with a null value are skipped."""
    pairs = [f"{k}{NAME_VALUE_SEPARATOR}{v}" for k, v in props if v is not None]
    if trailing_separator:
        return "".join(p + PROPERTY_SEPARATOR for p in pairs)
    return PROPERTY_SEPARATOR.join(pairs)


def decode_utf8(data: bytes) -> str:
    """Java's new String(bytes, UTF_8), which replaces malformed input rather than failing. Python's decoder
    cuts malformed input as Java does except around 0xED: Java takes ED as any E1..EF lead, and a whole encoded
    surrogate (ED A0..BF 80..BF) as one malformed sequence (one U+FFFD where Python gives three), so those take
    the port of the JDK's loop."""
    if b"\xed" not in data:
        return data.decode("utf-8", "replace")
    return "".join(_java_utf8_chars(data))


def _continuation(b: int) -> bool:
    return (b & 0xC0) == 0x80


def _java_utf8_chars(data: bytes):
    """JDK 17's String.decodeUTF8_UTF16, a character (or U+FFFD per malformed sequence) at a time."""
    i, n = 0, len(data)
    while i < n:
        b1 = data[i]
        if b1 < 0x80:
            yield chr(b1)
            i += 1
        elif b1 >> 5 == 0b110 and b1 & 0x1E:
            ok = i + 1 < n and _continuation(data[i + 1])
            yield chr((b1 & 0x1F) << 6 | data[i + 1] & 0x3F) if ok else REPLACEMENT
            i += 2 if ok else 1
        elif b1 >> 4 == 0b1110:
            step, char = _three(data, i, b1)
            yield char
            i += step
        elif b1 >> 3 == 0b11110:
            step, char = _four(data, i, b1)
            yield char
            i += step
        else:
            yield REPLACEMENT
            i += 1


REPLACEMENT = "\ufffd"


def _three(data: bytes, i: int, b1: int) -> tuple[int, str]:
    n = len(data)
    bad_second = n - i > 1 and ((b1 == 0xE0 and data[i + 1] & 0xE0 == 0x80) or not _continuation(data[i + 1]))
    if n - i < 3:  # at the end: a bad second byte alone, else the rest as one sequence
        return (1 if bad_second else n - i), REPLACEMENT
    if bad_second:
        return 1, REPLACEMENT
    if not _continuation(data[i + 2]):
        return 2, REPLACEMENT
    c = (b1 & 0x0F) << 12 | (data[i + 1] & 0x3F) << 6 | data[i + 2] & 0x3F
    return 3, REPLACEMENT if 0xD800 <= c <= 0xDFFF else chr(c)


def _four(data: bytes, i: int, b1: int) -> tuple[int, str]:
    n = len(data)
    b2 = data[i + 1] if i + 1 < n else None
    bad_second = b1 > 0xF4 or (
        b2 is not None
        and ((b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and b2 & 0xF0 != 0x80) or not _continuation(b2))
    )
    if bad_second:
        return 1, REPLACEMENT
    if i + 2 < n and not _continuation(data[i + 2]):
        return 2, REPLACEMENT
    if n - i < 4:
        return n - i, REPLACEMENT
    if not _continuation(data[i + 3]):
        return 3, REPLACEMENT
    return 4, chr((b1 & 0x07) << 18 | (b2 & 0x3F) << 12 | (data[i + 2] & 0x3F) << 6 | data[i + 3] & 0x3F)


def java_long(value: int) -> int:
    """A Java long's wrap-around of an integer's value."""
    return (value + 2**63) % 2**64 - 2**63


def java_div(a: int, b: int) -> int:
    """Java's integer division, which truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def java_split(text: str, separator: str) -> list[str]:
    """String.split(separator) (limit 0) for a one-character separator: the text itself when it has no
    separator, else the parts without the trailing empty ones (so "," gives none)."""
    if separator not in text:
        return [text]
    parts = text.split(separator)
    while parts and not parts[-1]:
        parts.pop()
    return parts


def parse_long(text: str, bits: int = 64) -> int | None:
    """Long.parseLong (Integer.parseInt with bits=32): an optional sign and decimal digits (Character.digit
    takes any Unicode decimal digit of one UTF-16 char: one outside the BMP is two surrogates, neither a digit)
    within the type's range; None where Java throws."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all(c.isdecimal() and ord(c) < 0x10000 for c in digits):
        return None
    value = int(digits)  # int() reads any Unicode decimal digit, as Character.digit does
    value = -value if text[:1] == "-" else value
    return value if -(1 << (bits - 1)) <= value < (1 << (bits - 1)) else None


def parse_int(text: str) -> int | None:
    """Integer.parseInt; None where Java throws."""
    return parse_long(text, 32)


PROPERTIES_WHITESPACE = " \t\f"
PROPERTIES_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def java_properties(data: bytes) -> dict[str, str]:
    """java.util.Properties.load(InputStream), as the broker reads broker.conf: ISO-8859-1 bytes; a line whose
    first non-blank character is # or ! is a comment; a line ending in an odd number of backslashes goes on in
    the next (its leading blanks dropped); the key ends at the first unescaped '=', ':' or blank, then blanks,
    one '=' or ':' and blanks are skipped; the value is the rest, trailing blanks kept; \\uXXXX, \\t, \\n, \\r,
    \\f and \\x (for any other x: x) are unescaped; a later key wins."""
    out: dict[str, str] = {}
    lines = data.decode("latin-1").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(PROPERTIES_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 and i < len(lines):  # a continued line
            line = line[:-1] + lines[i].lstrip(PROPERTIES_WHITESPACE)
            i += 1
        if (len(line) - len(line.rstrip("\\"))) % 2:  # (a backslash ending the file: dropped)
            line = line[:-1]
        key, value = _split_property(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _split_property(line: str) -> tuple[str, str]:
    """A logical line's key and its value, both still escaped (Properties.load's separator rules)."""
    k = 0
    while k < len(line):
        c = line[k]
        if c == "\\":
            k += 2
            continue
        if c in "=:" or c in PROPERTIES_WHITESPACE:
            break
        k += 1
    key, sep, rest = line[:k], line[k : k + 1], line[k:]
    if sep and sep in PROPERTIES_WHITESPACE:
        rest = rest.lstrip(PROPERTIES_WHITESPACE)
        if rest[:1] in ("=", ":") and rest:
            rest = rest[1:]
    elif sep:  # '=' or ':'
        rest = rest[1:]
    return key, rest.lstrip(PROPERTIES_WHITESPACE)


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out, k = [], 0
    while k < len(text):
        c = text[k]
        if c != "\\" or k + 1 == len(text):
            out.append(c)
            k += 1
            continue
        nxt = text[k + 1]
        if nxt == "u":
            digits = text[k + 2 : k + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"malformed \\uxxxx encoding: {text[k : k + 6]!r}")  # as Properties.load throws
            out.append(chr(int(digits, 16)))
            k += 6
        else:
            out.append(PROPERTIES_ESCAPES.get(nxt, nxt))
            k += 2
    return "".join(out)


TIME_FORMS = (
    "epoch milliseconds, an ISO date-time (2026-11-22T03:13:00+00:00; the local zone without one) or mqadmin's "
    "2026-11-22#03:13:00:000"
)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
MQADMIN_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})#(\d{2}):(\d{2}):(\d{2}):(\d{3})")  # yyyy-MM-dd#HH:mm:ss:SSS


def parse_time(text: str) -> dt.datetime | None:
    """A time as an operator gives it, timezone-aware (None: text of no such form): epoch milliseconds (as
    mqadmin tries Long.parseLong first); an ISO 8601 date-time (`Z` for UTC); or mqadmin's
    `yyyy-MM-dd#HH:mm:ss:SSS` (resetOffsetByTime's UtilAll.parseDate). Without a zone it is the local zone's wall
    time, as SimpleDateFormat reads it in the JVM's default zone: where that zone repeats the hour (clocks
    falling back) Java's lenient calendar takes the later instant, standard time, and where it skips it (clocks
    springing forward) the time moved forward over the gap: the later of the two readings both times."""
    text = text.strip()
    ms = parse_long(text)
    if ms is not None:
        try:
            return (EPOCH + dt.timedelta(milliseconds=ms)).astimezone()
        except OverflowError:  # (a long past the years datetime holds: parse_time_ms takes it)
            return None
    mqadmin = MQADMIN_TIME.fullmatch(text)
    try:
        if mqadmin:
            *fields, millis = map(int, mqadmin.groups())
            when = dt.datetime(*fields, millis * 1000)
        else:
            when = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        return None
    if when.tzinfo is not None:
        return when
    readings = [when.replace(fold=fold).astimezone() for fold in (0, 1)]
    return max(readings, key=lambda w: w.timestamp())


def parse_time_ms(text: str) -> int | None:
    """parse_time's epoch milliseconds; a long as Long.parseLong reads it over its whole range (mqadmin and the
    broker take any: Long.MAX_VALUE for "the end")."""
    ms = parse_long(text.strip())
    if ms is not None:
        return ms
    when = parse_time(text)
    return epoch_ms(when) if when is not None else None


def epoch_ms(when: dt.datetime) -> int:
    """An aware datetime's epoch milliseconds, exactly (no float)."""
    return (when - EPOCH) // dt.timedelta(milliseconds=1)
