"""Commitlog records: the fast decoder and encoder, both compiled from `schema.CommitLogRecord`."""

from __future__ import annotations

import base64
import ipaddress
import zlib
from functools import lru_cache

from . import rules
from . import schema as S
from .javacompat import CRC32_PROPERTY, crc31, crc_from_digits, decode_utf8, parse_properties


class RecordError(ValueError):
    """A record that the broker's checkMessageAndReturnSize would refuse. `kind` names the finding."""

    def __init__(self, kind: str, detail: str, size: int | None = None):
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.size = size  # the TOTALSIZE field, when it could be read


class Blank:
    """The 8-byte end-of-file filler; `storeSize` is the number of bytes it claims (rest of the file)."""

    __slots__ = ("position", "storeSize")

    def __init__(self, position: int, store_size: int):
        self.position = position
        self.storeSize = store_size


class Message:
    """One decoded record. Byte fields stay bytes; text fields are decoded the way Java decodes them."""

    __slots__ = (
        "storeSize", "magicCode", "bodyCRC", "queueId", "flag", "queueOffset", "physicalOffset", "sysFlag",
        "bornTimestamp", "bornIp", "bornPort", "storeTimestamp", "storeIp", "storePort", "reconsumeTimes",
        "preparedTransactionOffset", "bodyLength", "body", "topicBytes", "propertiesBytes",
        "position", "_props", "dledger",
    )  # fmt: skip

    def __init__(self):
        self._props = None
        self.dledger = None  # in a DLedger store: the entry holding this record (index, term, entryPos, ...)

    # -- derived views ---------------------------------------------------------------------------------
    @property
    def topic(self) -> str:
        return decode_utf8(self.topicBytes)

    @property
    def properties_string(self) -> str:
        return decode_utf8(self.propertiesBytes)

    @property
    def properties(self) -> dict[str, str]:
        if self._props is None:
            self._props = parse_properties(self.properties_string) if self.propertiesBytes else {}
        return self._props

    @property
    def version(self) -> str:
        return "V2" if self.magicCode == S.MAGIC_V2 else "V1"

    @property
    def transaction_type(self) -> int:
        return self.sysFlag & S.TRANSACTION_MASK

    @property
    def tags(self) -> str | None:
        return self.properties.get("TAGS")

    @property
    def keys(self) -> str | None:
        return self.properties.get("KEYS")

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get("UNIQ_KEY")

    @property
    def born_host(self) -> str:
        return format_host(self.bornIp, self.bornPort)

    @property
    def store_host(self) -> str:
        return format_host(self.storeIp, self.storePort)

    @property
    def msg_id(self) -> str:
        return message_id(self.storeIp, self.storePort, self.physicalOffset)

    def body_crc_ok(self) -> bool:
        """checkMessageAndReturnSize: only checked when bodyLen > 0."""
        return self.bodyLength <= 0 or crc31(self.body) == self.bodyCRC

    def decompressed_body(self, limit: int) -> bytes | None:
        """The body as the client sees it (MessageDecoder decompress; type bits 8..10, 0 = legacy zlib), None
        when not compressed; ValueError when it does not decompress. At most `limit` bytes are ever inflated:
        a few stored bytes can claim gigabytes, so a longer body raises DecompressionLimitError instead of
        being allocated."""
        if not self.sysFlag & S.COMPRESSED_FLAG:
            return None
        kind = (self.sysFlag & S.COMPRESSION_TYPE_MASK) >> 8
        try:
            if kind in (0, 3):
                inflater = zlib.decompressobj()
                out = inflater.decompress(self.body, limit + 1)
                done = inflater.eof
            elif kind == 1:
                import lz4.frame

                inflater = lz4.frame.LZ4FrameDecompressor()
                out = inflater.decompress(self.body, max_length=limit + 1)
                done = inflater.eof
            elif kind == 2:
                import zstandard

                try:
                    with zstandard.ZstdDecompressor().stream_reader(self.body) as reader:
                        parts, got = [], 0
                        while got <= limit and (part := reader.read(limit + 1 - got)):
                            parts.append(part)
                            got += len(part)
                except zstandard.ZstdError as e:  # a truncated frame too
                    raise ValueError(str(e)) from None
                out, done = b"".join(parts), True
            else:
                raise ValueError(f"unknown compression type {kind}")
        except (zlib.error, RuntimeError) as e:  # zlib's and LZ4's errors
            raise ValueError(str(e)) from None
        if len(out) > limit:
            raise DecompressionLimitError(f"inflates to more than {limit} bytes (the decompression limit)")
        if not done:
            raise ValueError("incomplete or truncated compressed stream")
        return out


class DecompressionLimitError(ValueError):
    """A compressed body that inflates past the limit it was read with."""


DECOMPRESSION_FACTOR = 8


def decompression_limit(max_message_size: int) -> int:
    """The default cap on a decompressed body: the broker's maxMessageSize bounds the compressed body, and a
    client's compression rarely gains more than this factor on real payloads."""
    return max_message_size * DECOMPRESSION_FACTOR


@lru_cache(maxsize=4096)
def format_host(ip: bytes, port: int) -> str:
    addr = ipaddress.ip_address(ip)
    return f"[{addr}]:{port}" if addr.version == 6 else f"{addr}:{port}"


def message_id(store_ip: bytes, store_port: int, offset: int) -> str:
    """MessageDecoder.createMessageId: store ip + port + PHYSICALOFFSET, uppercase hex."""
    return (
        (store_ip + store_port.to_bytes(4, "big", signed=True) + offset.to_bytes(8, "big", signed=True)).hex().upper()
    )


def parse_host(text: str) -> tuple[bytes, int]:
    """'a.b.c.d:port' or '[v6]:port' (any textual IPv6 form) -> (raw ip bytes, port)."""
    h, _, port = text.rpartition(":")
    if not h:
        raise ValueError(f"host {text!r} is not ip:port")
    return ipaddress.ip_address(h.strip("[]").split("%")[0]).packed, int(port)


# read_record's detail of each refusal (rules.record_head / record_tail's `why`)
REFUSAL_DETAILS = {
    rules.FEW_BYTES: "{left} bytes left, too few for a record header",
    rules.PAST_END: "storeSize {size} runs past the end of the data ({left} bytes left)",
    rules.SHORT_HEAD: "storeSize {size} is shorter than the record header",
    rules.BODY_PAST: "bodyLength {body_len} runs past storeSize {size}",
    rules.TOPIC_LENGTH_CUT: "storeSize {size} ends inside the topic length",
    rules.TOPIC_PAST: "topic length {topic_len} does not fit storeSize {size}",
    rules.PROPERTIES_PAST: "properties length {props_len} runs past storeSize {size}",
    rules.LENGTH_FORMULA: "storeSize {size} but the fields add up to {expected}",
}


def read_record(buf, pos: int, end: int, allow_v2: bool = True) -> Message | Blank:
    """Decode the record at `pos` of `buf` (which must not be read past `end`), as checkMessageAndReturnSize
    parses it (rules.record_head and record_tail), without the CRC checks. Raises RecordError for anything
    the broker would refuse."""
    verdict, size, combo, body_len, v2, why = rules.record_head(buf, pos, end, allow_v2)
    if verdict == rules.BLANK:
        return Blank(pos, size)
    if verdict != rules.RECORD:
        magic = S.INT32.unpack_from(buf, pos + S.MAGIC_AT)[0] if why != rules.FEW_BYTES else 0
        raise refusal(
            verdict,
            why,
            None if why == rules.FEW_BYTES else size,
            left=end - pos,
            body_len=body_len,
            magic=magic & 0xFFFFFFFF,
        )
    topic_at, topic_len, props_len, why = rules.record_tail(buf, pos, size, combo, body_len, v2)
    head, _ = S.RECORD_HEADS[(bool(combo & 1), bool(combo & 2))]
    m = Message()
    (m.storeSize, m.magicCode, m.bodyCRC, m.queueId, m.flag, m.queueOffset, m.physicalOffset, m.sysFlag,
     m.bornTimestamp, m.bornIp, m.bornPort, m.storeTimestamp, m.storeIp, m.storePort, m.reconsumeTimes,
     m.preparedTransactionOffset, m.bodyLength) = head.unpack_from(buf, pos)  # fmt: skip
    if topic_at < 0:
        expected = S.record_length(m.sysFlag, body_len, topic_len, props_len, v2)
        raise refusal(rules.BAD_LENGTH, why, size, topic_len=topic_len, props_len=props_len, expected=expected)
    body_at = pos + head.size
    m.body = bytes(buf[body_at : body_at + max(body_len, 0)])
    m.topicBytes = bytes(buf[topic_at : topic_at + topic_len])
    props_at = topic_at + topic_len + S.PROPS_LEN.size
    m.propertiesBytes = bytes(buf[props_at : props_at + max(props_len, 0)])
    m.position = pos
    return m


def refusal(verdict: int, why: int, size: int | None, **fields) -> RecordError:
    """The RecordError of a refused record: its finding kind, and the detail its refusal's check gives."""
    detail = (
        "zero bytes where a record should start"
        if verdict == rules.ZEROS
        else "illegal magic code 0x{magic:08x}"
        if verdict == rules.ILLEGAL_MAGIC
        else REFUSAL_DETAILS[why]
    )
    return RecordError(rules.VERDICT_KINDS[verdict], detail.format(size=size, **fields), size)


def property_crc_state(buf, pos: int, m: Message) -> tuple[int, int] | None:
    """(stored, computed) for a record carrying `__CRC32#`, else None. The CRC covers storeSize-20 bytes."""
    stored = m.properties.get(CRC32_PROPERTY)
    if stored is None:
        return None
    return crc_from_digits(stored), crc31(buf[pos : pos + m.storeSize - S.CRC32_RESERVED_LEN])


def encode_body(body: bytes, how: str) -> tuple[str | None, str]:
    """The dump contract's body rendering: (text, encoding actually used)."""
    if how == "none":
        return None, "none"
    if how == "utf8":
        try:
            return body.decode("utf-8"), "utf8"
        except UnicodeDecodeError:
            how = "base64"
    if how == "hex":
        return body.hex(), "hex"
    return base64.b64encode(body).decode("ascii"), "base64"


def decode_body(text: str | None, encoding: str | None) -> bytes:
    if text is None or encoding == "none":
        return b""
    if encoding in (None, "utf8"):
        return text.encode("utf-8")
    if encoding == "base64":
        return base64.b64decode(text, validate=True)
    if encoding == "hex":
        return bytes.fromhex(text)
    raise ValueError(f"unknown bodyEncoding {encoding!r}")


def message_dict(
    m: Message,
    file: str,
    file_from: int,
    body: str = "utf8",
    raw_properties: bool = False,
    decompress_limit: int | None = None,
) -> dict:
    """The `dump commitlog` object: where the record is, every stored field under RocketMQ's name, and the
    derived msgId / uniqKey; with a `decompress_limit`, a compressed body decompressed up to that size."""
    text, enc = encode_body(m.body, body)
    d = {
        "file": file,
        "position": m.position,
        "commitLogOffset": file_from + m.position,
        "storeSize": m.storeSize,
        "magicCode": m.magicCode,
        "bodyCRC": m.bodyCRC,
        "queueId": m.queueId,
        "flag": m.flag,
        "queueOffset": m.queueOffset,
        "physicalOffset": m.physicalOffset,
        "sysFlag": m.sysFlag,
        "bornTimestamp": m.bornTimestamp,
        "bornHost": m.born_host,
        "storeTimestamp": m.storeTimestamp,
        "storeHost": m.store_host,
        "reconsumeTimes": m.reconsumeTimes,
        "preparedTransactionOffset": m.preparedTransactionOffset,
        "bodyLength": m.bodyLength,
        "body": text,
        "bodyEncoding": enc,
        "topic": m.topic,
        "properties": m.properties,
        "msgId": m.msg_id,
        "uniqKey": m.uniq_key,
    }
    if m.dledger is not None:
        d["dledger"] = dict(m.dledger)
    if raw_properties:
        d["propertiesString"] = m.properties_string
    if decompress_limit is not None and m.sysFlag & S.COMPRESSED_FLAG:
        try:
            d["bodyDecompressed"], d["bodyDecompressedEncoding"] = encode_body(
                m.decompressed_body(decompress_limit), body
            )
        except DecompressionLimitError as e:
            d["bodyDecompressed"], d["bodyDecompressedEncoding"] = None, f"over-limit: {e}"
        except ValueError as e:  # a corrupt compressed body is data, not a crash
            d["bodyDecompressed"], d["bodyDecompressedEncoding"] = None, f"error: {e}"
    return d


def encode_record(m: Message) -> bytes:
    """Build a record's bytes from a Message with every field set (the inverse of read_record)."""
    v2 = m.magicCode == S.MAGIC_V2
    head, _ = S.RECORD_HEADS[(bool(m.sysFlag & S.BORNHOST_V6_FLAG), bool(m.sysFlag & S.STOREHOSTADDRESS_V6_FLAG))]
    body, topic, props = m.body, m.topicBytes, m.propertiesBytes
    size = S.record_length(m.sysFlag, len(body), len(topic), len(props), v2)
    tl = S.TOPIC_LEN_V2 if v2 else S.TOPIC_LEN_V1
    return b"".join((
        head.pack(size, m.magicCode, m.bodyCRC, m.queueId, m.flag, m.queueOffset, m.physicalOffset, m.sysFlag,
                  m.bornTimestamp, m.bornIp, m.bornPort, m.storeTimestamp, m.storeIp, m.storePort,
                  m.reconsumeTimes, m.preparedTransactionOffset, len(body)),
        body, tl.pack(len(topic)), topic, S.PROPS_LEN.pack(len(props)), props,
    ))  # fmt: skip
