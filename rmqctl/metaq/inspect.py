"""Read-only MetaQ operations: `info` (partitions, segments, offsets, counts, oddities), `dump` (every record
under Metamorphosis's field names, decoded as MessageUtils.decodeMessage decodes it) and `locate`."""

from __future__ import annotations

import base64
from typing import Callable, Iterator

from .. import schema_metaq as M
from ..errors import StoreError, UsageError
from ..views.annotate import annotate
from ..record import encode_body
from .store import DecodeError, MetaqStore, Partition, Record, SegmentScan, attribute_text, decode_data


def record_dict(part: Partition, seg_start: int, seg_rel: str, rec: Record, body: str) -> dict:
    """The `metaq dump` object of one record. `attribute` is the text decodeMessage gives (None without the
    flag bit); `attributeBytes` (base64) is added only when that text does not give back the stored bytes."""
    attr_raw, payload = decode_data(rec.msgLen, rec.flag, rec.data)
    text, enc = encode_body(payload, body)
    d = {
        "topic": part.topic,
        "partition": part.partition,
        "offset": seg_start + rec.position,
        "segment": seg_rel,
        "segmentPosition": rec.position,
        "msgLen": rec.msgLen,
        "checksum": rec.checksum,
        "id": rec.id,
        "idHex": f"{rec.id & 0xFFFFFFFFFFFFFFFF:016x}",
        "flag": rec.flag,
        "attribute": None if attr_raw is None else attribute_text(attr_raw),
        "payloadLength": len(payload),
        "payload": text,
        "payloadEncoding": enc,
    }
    if attr_raw is not None and attribute_text(attr_raw).encode("utf-8") != attr_raw:
        d["attributeBytes"] = base64.b64encode(attr_raw).decode("ascii")
    return d


def dump(
    store: MetaqStore,
    topic: str | None = None,
    partition: int | None = None,
    start: int | None = None,
    end: int | None = None,
    limit: int | None = None,
    body: str = "utf8",
    warn: Callable[[str], None] = lambda m: None,
) -> Iterator[dict]:
    """Every valid record of the selected partitions, in partition then offset order. Damage (a record that
    fails the recovery check, data decodeMessage refuses) is passed to `warn` with file and offset; the rest
    of that segment is skipped (the broker cannot walk past a bad length either) and the next one is read."""
    if limit is not None and limit < 0:
        raise UsageError("--limit must not be negative")
    n = 0
    for part in store.select(topic, partition):
        for seg in part.segments:
            if (start is not None and seg.end <= start) or (end is not None and seg.start >= end):
                continue
            rel = store.relative(seg.path)
            scan = SegmentScan(seg.read(), seg.size)
            for rec in scan:
                off = seg.start + rec.position
                if (start is not None and off < start) or (end is not None and off >= end):
                    continue
                if limit is not None and n >= limit:
                    return
                try:
                    yield record_dict(part, seg.start, rel, rec, body)
                except DecodeError as e:
                    warn(f"{seg.path} at offset {off}: {e}")
                    continue
                n += 1
            if scan.stop is not None:
                warn(
                    f"{seg.path} at offset {seg.start + scan.stop.position}: {scan.stop.problem}: {scan.stop.detail}; "
                    f"{seg.size - scan.stop.position} bytes to the end of the segment not read"
                )


def partition_info(store: MetaqStore, part: Partition) -> tuple[dict, list[dict]]:
    """One partition's summary row and one row per segment (offset range, size, message count)."""
    segs, odd = [], [o.detail for o in part.oddities]
    total = 0
    for i, seg in enumerate(part.segments):
        scan = SegmentScan(seg.read(), seg.size).run()
        total += scan.count
        row = {
            "topic": part.topic,
            "partition": part.partition,
            "segment": store.relative(seg.path),
            "startOffset": seg.start,
            "endOffset": seg.end,
            "size": seg.size,
            "messageCount": scan.count,
            "last": i == len(part.segments) - 1,
        }
        if scan.stop is not None:
            row["invalidFrom"] = seg.start + scan.stop.position
            odd.append(
                f"{row['segment']}: {scan.stop.problem} at offset {row['invalidFrom']}"
                + (" (the broker's recovery truncates there)" if row["last"] else "")
            )
        segs.append(row)
    for a, b in part.contiguity():
        odd.append(
            f"{store.relative(b.path)} starts at {b.start}, not at {a.end} where "
            f"{store.relative(a.path)} ends: the broker refuses to load this partition"
        )
    if not part.segments:
        odd.append("no segments: the broker creates 00000000000000000000.meta at its first use")
    summary = {
        "topic": part.topic,
        "partition": part.partition,
        "dir": part.name,
        "segments": len(part.segments),
        "minOffset": part.min_offset,
        "maxOffset": part.max_offset,
        "messageCount": total,
        "sizeInBytes": sum(s.size for s in part.segments),
        "odd": odd,
    }
    return summary, segs


def info(store: MetaqStore, topic: str | None = None, partition: int | None = None) -> dict:
    parts, segs = [], []
    for part in store.select(topic, partition):
        p, s = partition_info(store, part)
        parts.append(p)
        segs += s
    return {
        "dataPath": str(store.root),
        "maxSegmentSize": store.config.maxSegmentSize,
        "partitions": parts,
        "segments": segs,
        "odd": [f"{store.relative(o.path)}: {o.detail}" for o in store.oddities],
    }


def locate(store: MetaqStore, offset: int, topic: str, partition: int) -> dict:
    """Which segment holds `offset` (MessageStore.findSegment), at which position, and whether a record starts
    there (else the record it falls inside, or that it is past the valid data)."""
    part = store.partition(topic, partition)
    out = {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "segment": None,
        "segmentPosition": None,
        "recordStart": False,
    }
    if not part.segments or offset < part.min_offset:
        out["detail"] = f"before the partition's first offset {part.min_offset}"
        return out
    if offset >= part.max_offset:
        out["detail"] = (
            f"at or past the partition's end {part.max_offset}: the next append goes to {part.max_offset}"
            if offset == part.max_offset
            else f"past the partition's end {part.max_offset}"
        )
        return out
    seg = part.find(offset)
    if seg is None:
        out["detail"] = "in a gap between segments"
        return out
    pos = offset - seg.start
    out.update(segment=store.relative(seg.path), segmentPosition=pos)
    scan = SegmentScan(seg.read(), seg.size)
    for rec in scan:
        if rec.position == pos:
            out.update(recordStart=True, msgLen=rec.msgLen, id=rec.id, detail="a record starts here")
            return out
        if rec.position < pos < rec.position + rec.size:
            out["detail"] = f"inside the record at offset {seg.start + rec.position} ({rec.size} bytes)"
            out["recordOffset"] = seg.start + rec.position
            return out
    stop = scan.stop
    # every record valid and none reaches `pos`: the segment ends before it (an empty or cut segment)
    out["detail"] = (
        f"past the segment's valid records: {stop.problem} at offset {seg.start + stop.position}"
        if stop
        else f"past the end of the segment's {scan.valid_up_to} bytes of records"
    )
    return out


def record_hex(store: MetaqStore, offset: int, topic: str, partition: int) -> list[str]:
    """The record starting at message `offset`, annotated field by field over its bytes; an offset where no
    record starts is refused in one line, with what `locate` says about it."""
    where = locate(store, offset, topic, partition)
    if not where["recordStart"]:
        raise StoreError(
            f"no record starts at offset {offset}: {where['detail']}",
            store.root / (where["segment"] or f"{topic}-{partition}"),
        )
    seg = store.partition(topic, partition).find(offset)
    pos = where["segmentPosition"]
    buf = seg.read()
    data = bytes(buf[pos : pos + M.HEADER_LEN + where["msgLen"]])
    return [f"offset {offset}: position {pos} in {where['segment']}", *annotate(M.MetaqRecord, data)]
