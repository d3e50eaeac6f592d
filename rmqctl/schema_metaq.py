"""The MetaQ (Metamorphosis 1.4.6.2) segment record, declared once with construct.

A segment file `{dataPath}/{topic}-{partition}/{20-digit start offset}.meta` is a run of these records and
nothing else (no header, no pre-allocation, no end-of-file filler). All integers are big-endian (Java
ByteBuffer). Sources (tag metamorphosis-all-1.4.6.2 of killme2008/Metamorphosis):
metamorphosis-commons/.../utils/MessageUtils.java (makeMessageBuffer, decodeMessage, encodePayload),
.../utils/CheckSum.java, .../utils/MessageFlagUtils.java, metamorphosis-server/.../store/FileMessageSet.java.

As in `rmqctl.schema`, the fast path (`HEADER`) is compiled from the declaration, never typed by hand.
"""

from __future__ import annotations

import struct

from construct import Bytes, IfThenElse, Int32sb, Int64sb, Struct, this

from .schema import compile_struct

HEADER_LEN = 20  # MessageUtils.HEADER_LEN
ATTRIBUTE_FLAG = 0x1  # MessageFlagUtils: bit 0 of flag = the data starts with attrLen + attribute
MAX_READ_BUFFER_SIZE = 2097152  # MessageUtils.MAX_READ_BUFFER_SIZE: decodeMessage refuses a longer msgLen
SEGMENT_SUFFIX = ".meta"  # MessageStore.FILE_SUFFIX

# The 20-byte header (makeMessageBuffer: putInt(data.length), putInt(crc), putLong(id), putInt(flag)).
MetaqRecordHeader = Struct(
    "msgLen" / Int32sb,  # length of the data after the header (attribute part + payload)
    "checksum" / Int32sb,  # CheckSum.crc32(data) = CRC32 & 0x7FFFFFFF
    "id" / Int64sb,  # IdWorker.nextId() of the broker that stored it
    "flag" / Int32sb,  # MessageFlagUtils: bit 0 = has attribute
)


def _attribute_part_length(ctx) -> int:
    return 4 + ctx.attribute.attrLen if ctx.flag & ATTRIBUTE_FLAG else 0


# A whole record: the header, then msgLen bytes of data. With flag & 1 the data is attrLen, the attribute
# (UTF-8) and the payload (MessageUtils.encodePayload); otherwise it is the payload alone.
MetaqRecord = Struct(
    *MetaqRecordHeader.subcons,
    "attribute"
    / IfThenElse(
        this.flag & ATTRIBUTE_FLAG,
        Struct("attrLen" / Int32sb, "text" / Bytes(lambda ctx: max(ctx.attrLen, 0))),
        Struct(),
    ),
    "payload" / Bytes(lambda ctx: max(ctx.msgLen - _attribute_part_length(ctx), 0)),
)

SCHEMAS = {"metaq-record": MetaqRecord}

HEADER: struct.Struct = compile_struct(MetaqRecordHeader)
ATTR_LEN: struct.Struct = compile_struct(Struct("attrLen" / Int32sb))

assert HEADER.size == HEADER_LEN
