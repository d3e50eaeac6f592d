"""The engine's decode of one record, as read_record reads it, into a row of `cols` (one column per field
below, a record's fields side by side): the head fields as numbers, where the variable parts lie (topic,
properties, body and both host addresses, as offsets into the file's buffer) and the spans of the property
values the broker reads (MessageDecoder's parsing, later pairs winning). Bytes are not copied here: readers
take what they need from the buffer with these spans.

A record's outcome is read_record's (engine/record.py): OK, BLANK, or the kind of refusal, in its order of
checks. The walk along a file (following TOTALSIZE as CommitLog.getData + checkMessageAndReturnSize do) and
along DLedger entries, a batch at a time, is engine/batch.py.
"""

from __future__ import annotations

import re

import numpy as np

from .. import schema as S
from ..javacompat import CRC32_PROPERTY
from .kernels import be32, be64, crc32, kernel, property_names, read_properties, well_formed_utf8
from ..rules import BAD_LENGTH, RECORD as OK
from ..schema import BODY_CRC_AT, HEAD_SIZE, PHYSICAL_OFFSET_AT, RECORD_AT as OFFSETS
from .record import decode_tail, head_outcome
from .checks import CRC_MASK, PROPERTY_CRC_COVERS, crc_digits, is_ascii

# The head fields, in the declaration's order; an address field holds where its bytes are in the buffer.
HEAD_NAMES = S.RECORD_HEADS[(False, False)][1]
HEAD_FIELD_AT = np.array([OFFSETS[name] for name in HEAD_NAMES], np.int64)
HEAD_FIELD_WIDTH = np.array(
    [
        S.struct.calcsize(">" + code)
        for code in re.findall(r"\d*[a-zA-Z]", S.RECORD_HEADS[(False, False)][0].format[1:])
    ],
    np.int64,
)
HEAD_FIELD_IS_ADDRESS = np.array([name.endswith(".ip") for name in HEAD_NAMES])

# The properties the engine looks up, by index; their value spans are columns.
PROPERTY_NAMES = (
    "TAGS",
    "KEYS",
    "UNIQ_KEY",
    "TRAN_MSG",
    "PGROUP",
    "INNER_MULTI_DISPATCH",
    "INNER_MULTI_QUEUE_OFFSET",
    CRC32_PROPERTY,
)
NAME_BYTES, NAME_LENGTHS = property_names(*PROPERTY_NAMES)
CRC_PROPERTY_INDEX = PROPERTY_NAMES.index(CRC32_PROPERTY)

# the columns after the head fields
EXTRA = (
    "position",
    "combo",
    "v2",
    "topicAt",
    "topicLength",
    "propertiesAt",
    "propertiesLength",
    "bodyAt",
    "textFlags",
    "crcOk",
) + tuple(f"{side}:{name}" for name in PROPERTY_NAMES for side in ("lo", "hi"))
COLUMN_NAMES = HEAD_NAMES + EXTRA
COLUMN = {name: i for i, name in enumerate(COLUMN_NAMES)}
NCOLUMNS = len(COLUMN_NAMES)
NHEAD = len(HEAD_NAMES)
POSITION, COMBO, V2, TOPIC_AT, TOPIC_LEN, PROPS_AT, PROPS_LEN, BODY_AT, TEXT_FLAGS, CRC_OK = range(NHEAD, NHEAD + 10)
VALUE_SPANS = NHEAD + 10
BODY_LEN = COLUMN["bodyLength"]
# textFlags bits: the topic / the property string is not well-formed UTF-8 (Java decodes it with replacement)
TOPIC_NOT_UTF8, PROPERTIES_NOT_UTF8 = 1, 2
# crcOk: 1 both stored CRCs hold, 0 one does not, -1 not checked, -2 a __CRC32# text the kernel does not read
CRC_UNCHECKED, CRC_TEXT = -1, -2


@kernel
def record_crc_ok(u8, pos, size, body_at, body_len, crc_lo, crc_hi):
    """The stored CRCs hold: the body CRC (only when bodyLength > 0) and the `__CRC32#` property CRC where the
    record has one (over all but the reserved tail). CRC_TEXT for a non-ASCII __CRC32# value."""
    if body_len > 0 and crc32(u8, body_at, body_at + body_len) & CRC_MASK != be32(u8, pos + BODY_CRC_AT):
        return 0
    if crc_lo < 0:
        return 1
    if not is_ascii(u8, crc_lo, crc_hi):
        return CRC_TEXT
    return 1 if crc_digits(u8, crc_lo, crc_hi) == crc32(u8, pos, pos + size + PROPERTY_CRC_COVERS) & CRC_MASK else 0


@kernel(counted=False)
def decode_record(u8, pos, limit, allow_v2, check_crc, cols, n, value_lo, value_hi):
    """Decode the record at `pos` (ending by `limit`) into row n of `cols`, as read_record reads it.
    Returns (outcome, size): OK when the row holds the record, else BLANK or the refusal's kind."""
    outcome, size = decode_head_row(u8, pos, limit, allow_v2, cols, n)
    if outcome != OK:
        return outcome, size
    _, non_ascii, _ = read_properties(u8, cols[n, PROPS_AT], pos + size, NAME_BYTES, NAME_LENGTHS, value_lo, value_hi)
    finish_row(u8, check_crc, non_ascii, value_lo, value_hi, cols, n)
    return OK, size


@kernel(inlined=True)
def decode_head_row(u8, pos, limit, allow_v2, cols, n):
    """decode_record's row n but for what the properties say (finish_row): the head fields, where the variable
    parts lie. Returns (outcome, size)."""
    outcome, size, combo, body_len, v2, _ = head_outcome(u8, pos, limit, allow_v2)
    if outcome != OK:
        return outcome, size
    topic_at, topic_len, props_len, _ = decode_tail(u8, pos, size, combo, body_len, v2)
    if topic_at < 0:
        return BAD_LENGTH, size
    props_len = max(props_len, 0)
    for f in range(NHEAD):
        at = pos + HEAD_FIELD_AT[f, combo]
        if HEAD_FIELD_IS_ADDRESS[f]:
            cols[n, f] = at
        elif HEAD_FIELD_WIDTH[f] == 8:
            cols[n, f] = be64(u8, at)
        else:
            cols[n, f] = be32(u8, at)
    props_at = pos + size - props_len
    cols[n, POSITION] = pos
    cols[n, COMBO] = combo
    cols[n, V2] = 1 if v2 else 0
    cols[n, TOPIC_AT] = topic_at
    cols[n, TOPIC_LEN] = topic_len
    cols[n, PROPS_AT] = props_at
    cols[n, PROPS_LEN] = props_len
    cols[n, BODY_AT] = pos + HEAD_SIZE[combo]
    return OK, size


@kernel(inlined=True)
def finish_row(u8, check_crc, non_ascii, value_lo, value_hi, cols, n):
    """The rest of decode_record's row n (after decode_head_row), from its property lookup: value_lo / value_hi
    the spans of PROPERTY_NAMES' values, `non_ascii` a byte >= 0x80 in the property string."""
    pos, props_at, topic_at = cols[n, POSITION], cols[n, PROPS_AT], cols[n, TOPIC_AT]
    end = props_at + cols[n, PROPS_LEN]
    text = 0
    if non_ascii and not well_formed_utf8(u8, props_at, end):
        text |= PROPERTIES_NOT_UTF8
    if not well_formed_utf8(u8, topic_at, topic_at + cols[n, TOPIC_LEN]):
        text |= TOPIC_NOT_UTF8
    cols[n, TEXT_FLAGS] = text
    for k in range(len(NAME_LENGTHS)):
        cols[n, VALUE_SPANS + 2 * k] = value_lo[k]
        cols[n, VALUE_SPANS + 2 * k + 1] = value_hi[k]
    if check_crc:
        crc_lo, crc_hi = value_lo[CRC_PROPERTY_INDEX], value_hi[CRC_PROPERTY_INDEX]
        cols[n, CRC_OK] = record_crc_ok(u8, pos, end - pos, cols[n, BODY_AT], cols[n, BODY_LEN], crc_lo, crc_hi)
    else:
        cols[n, CRC_OK] = CRC_UNCHECKED


@kernel
def likely_record_start(u8, lo, hi, limit, file_start, allow_v2):
    """The first position in [lo, hi) where a record seems to start: a head the decoder accepts whose
    PHYSICALOFFSET is that position's commitlog offset (`file_start` + position, as the broker writes it);
    -1 when none. A guess, for walks that start a file's segments in parallel: a segment is kept only where
    the walk before it ends exactly at its start."""
    for p in range(lo, min(hi, limit - PHYSICAL_OFFSET_AT - 8 + 1)):
        if be64(u8, p + PHYSICAL_OFFSET_AT) == file_start + p and head_outcome(u8, p, limit, allow_v2)[0] == OK:
            return p
    return -1
