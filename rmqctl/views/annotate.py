"""Which bytes are which field: any layout declared in `rmqctl.schema`, laid over real bytes.

The offsets come from walking the construct declaration itself (the branch each IfThenElse/Switch took,
the length each Bytes field read), so an annotation cannot disagree with the schema. The formats/ pages
print their hex samples with this; it is also the quickest way to look at a damaged record by eye.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass

from construct import Bytes, Const, Container, FormatField, IfThenElse, Padded, Renamed, Struct, Switch
from construct.core import evaluate

from .. import schema as S
from ..errors import StoreError
from ..rules import BAD_LENGTH, BLANK, RECORD, record_head

SYSFLAG_BITS = [
    (S.COMPRESSED_FLAG, "COMPRESSED"),
    (S.MULTI_TAGS_FLAG, "MULTI_TAGS"),
    (S.BORNHOST_V6_FLAG, "BORNHOST_V6"),
    (S.STOREHOSTADDRESS_V6_FLAG, "STOREHOSTADDRESS_V6"),
    (S.NEED_UNWRAP_FLAG, "NEED_UNWRAP"),
    (S.INNER_BATCH_FLAG, "INNER_BATCH"),
]
TRANSACTION_NAMES = {
    S.TRANSACTION_NOT_TYPE: None,
    S.TRANSACTION_PREPARED_TYPE: "PREPARED",
    S.TRANSACTION_COMMIT_TYPE: "COMMIT",
    S.TRANSACTION_ROLLBACK_TYPE: "ROLLBACK",
}
COMPRESSION_NAMES = {1: "LZ4", 2: "ZSTD", 3: "ZLIB"}
# fields holding epoch milliseconds, shown as UTC time as well
TIMESTAMP_FIELDS = {
    "bornTimestamp",
    "storeTimestamp",
    "beginTimestamp",
    "endTimestamp",
    "physicMsgTimestamp",
    "logicsMsgTimestamp",
    "indexMsgTimestamp",
    "currWriteTimeMs",
    "lastReadTimeMs",
    "dataVersionTimestamp",
}
TIMER_MAGIC_BITS = [(S.TIMER_MAGIC_DEFAULT, "DEFAULT"), (S.TIMER_MAGIC_ROLL, "ROLL"), (S.TIMER_MAGIC_DELETE, "DELETE")]
PADDING = "(padding)"
FORMAT_TYPES = {
    "b": "int8",
    "h": "int16",
    "i": "int32",
    "l": "int32",
    "q": "int64",
    "B": "uint8",
    "H": "uint16",
    "I": "uint32",
    "L": "uint32",
    "Q": "uint64",
}


@dataclass(frozen=True)
class Span:
    """One field as laid out in the bytes: offset from the start of the struct, width, dotted name
    (bornHost.ip), the parsed value and the wire type (int32, bytes, padding...)."""

    offset: int
    size: int
    name: str
    value: object
    type: str


def spans(schema: Struct, data: bytes, **params) -> list[Span]:
    """Every leaf field of `schema` parsed over `data`, in byte order. `params` are the declaration's
    parse parameters (ipLength for the message id layouts)."""
    parsed = schema.parse(data, **params)
    ctx = Container(parsed)
    ctx._params = Container(params)
    out: list[Span] = []
    _walk(schema, parsed, ctx, 0, "", out)
    return out


def _chosen(sc, ctx):
    """The construct that actually consumed the bytes: through names, constants and the branch taken."""
    while True:
        if isinstance(sc, IfThenElse):
            sc = sc.thensubcon if evaluate(sc.condfunc, ctx) else sc.elsesubcon
        elif isinstance(sc, Switch):
            sc = sc.cases.get(evaluate(sc.keyfunc, ctx), sc.default)
        elif isinstance(sc, (Renamed, Const)):
            sc = sc.subcon
        else:
            return sc


def _walk(struct: Struct, parsed, ctx, pos: int, prefix: str, out: list[Span]) -> int:
    for sc in struct.subcons:
        node = _chosen(sc, ctx)
        if isinstance(node, Struct):
            sub = parsed[sc.name]
            sub_ctx = Container(sub)
            sub_ctx._ = ctx
            sub_ctx._params = ctx._params
            pos = _walk(node, sub, sub_ctx, pos, f"{prefix}{sc.name}.", out)
            continue
        size = node._sizeof(ctx, "(annotate)")
        out.append(Span(pos, size, prefix + (sc.name or PADDING), parsed[sc.name] if sc.name else None, _type(node)))
        pos += size
    return pos


def _type(node) -> str:
    if isinstance(node, FormatField):
        return FORMAT_TYPES[node.fmtstr[-1]]
    if isinstance(node, Bytes):
        return "bytes"
    if isinstance(node, Padded):
        return "padding"
    raise TypeError(f"no wire type for {node!r}")


def describe(name: str, value, raw: bytes) -> str:
    """A short reading of a field's value for the annotation column."""
    leaf = name.rsplit(".", 1)[-1]
    if value is None:
        return "all zero" if not any(raw) else f"{len(raw)} bytes, not all zero"
    if leaf == "ip":
        return str(ipaddress.ip_address(value))
    if isinstance(value, bytes):
        return _text(value)
    if leaf == "magicCode":
        return f"0x{value & 0xFFFFFFFF:08x} {S.MAGIC_NAMES.get(value, 'unknown magic')}"
    if leaf == "sysFlag":
        return sysflag_text(value)
    if leaf == "magic":  # timerlog unit or BLANK, wheel slot
        if value == S.MAGIC_BLANK:
            return f"0x{value & 0xFFFFFFFF:08x} BLANK"
        return "|".join(n for bit, n in TIMER_MAGIC_BITS if value & bit) or str(value)
    if leaf in TIMESTAMP_FIELDS and value > 0:
        return f"{value} = {_utc(value)}"
    return str(value)


def sysflag_text(flag: int) -> str:
    names = [n for bit, n in SYSFLAG_BITS if flag & bit]
    tx = TRANSACTION_NAMES.get(flag & S.TRANSACTION_MASK)
    if tx:
        names.append(f"TRANSACTION_{tx}")
    kind = (flag & S.COMPRESSION_TYPE_MASK) >> 8
    if kind:
        names.append(f"COMPRESSION={COMPRESSION_NAMES.get(kind, kind)}")
    return f"0x{flag:x}" + (f" {'|'.join(names)}" if names else "")


def _utc(ms: int) -> str:
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return "?"


def _text(value: bytes, limit: int = 44) -> str:
    """UTF-8 text with the property separators visible, or a byte count for binary data."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return f"{len(value)} bytes, not UTF-8"
    if any(ord(c) < 32 and c not in "\x01\x02" for c in text):
        return f"{len(value)} bytes, binary"
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return '"' + shown.replace("\x01", "\\u0001").replace("\x02", "\\u0002") + '"'


def annotate(schema: Struct, data: bytes, width: int = 16, keep: int = 2, **params) -> list[str]:
    """Annotated hex, one line per field (`offset  hex  field  value`); long fields wrap at `width`
    bytes and keep their first and last `keep` lines."""
    lines = []
    for sp in spans(schema, data, **params):
        raw = data[sp.offset : sp.offset + sp.size]
        chunks = [raw[i : i + width] for i in range(0, len(raw), width)] or [b""]
        if len(chunks) > 2 * keep + 1:
            skipped = sum(len(c) for c in chunks[keep:-keep])
            chunks = chunks[:keep] + [None] + chunks[-keep:]
        offset = sp.offset
        for i, chunk in enumerate(chunks):
            if chunk is None:
                lines.append(f"{'':>6}  … {skipped} more bytes …")
                offset += skipped
                continue
            label = f"{sp.name:<26} {describe(sp.name, sp.value, raw)}" if i == 0 else ""
            lines.append(f"{offset:>6}  {chunk.hex(' '):<{3 * width + 1}}{label}".rstrip())
            offset += len(chunk)
    return lines


def record_hex(store, offset: int) -> list[str]:
    """The record starting at commitlog `offset` (a message or the BLANK at a file's end), annotated field by
    field. Bytes that are no record say so in one line, as `locate` does."""
    f = store.commitlog.find(offset)
    if f is None:
        raise StoreError(f"commitlog offset {offset} is outside the commitlog", store.commitlog_dirs[0])
    pos = offset - f.start
    buf, limit = f.buf, min(len(f.buf), store.commitlog.file_size)
    if pos + 8 > limit:
        raise StoreError("fewer than 8 bytes left in the file: no record starts here", f.path, pos)
    size, magic = S.BLANK.unpack_from(buf, pos)
    head = [f"commitlog offset {offset}: position {pos} in {f.name}"]
    verdict = record_head(buf, pos, limit, True)[0]
    if verdict == BLANK:
        return head + annotate(S.BlankRecord, bytes(buf[pos : pos + S.BLANK.size]))
    if verdict not in (RECORD, BAD_LENGTH):  # a head that cannot be read; a record the broker refuses is shown
        raise StoreError(f"no record starts here (storeSize {size}, magic {magic:#010x})", f.path, pos)
    return head + annotate(S.CommitLogRecord, bytes(buf[pos : pos + size]))
