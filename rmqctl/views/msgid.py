"""Message ids: the offset msgId (MessageDecoder.createMessageId / decodeMessageId) and the client's
UNIQ_KEY (MessageClientIDSetter). Both are 32 hex chars (IPv4) or 56 (IPv6), so only the store can say
which one an id is."""

from __future__ import annotations

import datetime as dt
import ipaddress
import time

from .. import schema as S
from ..configfiles import bean_field
from ..errors import StoreError
from ..record import Message, read_record
from ..rocksdbconfig import broker_config
from ..store import Store, queue_keys
from .query import carries_key, query_offsets


def _bytes(msg_id: str) -> bytes | None:
    if len(msg_id) not in (32, 56):
        return None
    try:
        return bytes.fromhex(msg_id)
    except ValueError:
        return None


def decode_offset_id(msg_id: str) -> dict | None:
    """decodeMessageId: store ip (4 bytes for 32 hex chars, else 16), int32 port, int64 offset."""
    raw = _bytes(msg_id)
    if raw is None:
        return None
    parsed = S.OffsetMsgId.parse(raw, ipLength=4 if len(raw) == 16 else 16)
    return {
        "host": str(ipaddress.ip_address(parsed.storeHost.ip)),
        "port": parsed.storeHost.port,
        "offset": parsed.physicalOffset,
    }


def month_start(ms: int) -> dt.datetime:
    # naive local time: .timestamp() then goes through mktime, so DST is applied like Calendar does
    local = dt.datetime.fromtimestamp(ms / 1000)
    return local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def nearly_time(span_ms: int, now_ms: int) -> int:
    """MessageClientIDSetter.getNearlyTimeFromID: start of the current local month + span, or of the
    previous month when that would not be in the past."""
    start = month_start(now_ms)
    start_ms = int(start.timestamp() * 1000)
    if start_ms + span_ms >= now_ms:
        prev = (start - dt.timedelta(days=1)).replace(day=1)
        start_ms = int(prev.timestamp() * 1000)
    return start_ms + span_ms


def decode_unique_id(msg_id: str, now_ms: int | None = None) -> dict | None:
    """UNIQ_KEY: ip (4/16) + int16 pid + int32 classLoader hash + uint32 ms since month start + uint16 counter."""
    raw = _bytes(msg_id)
    if raw is None:
        return None
    key = S.UniqKey.parse(raw, ipLength=16 if len(raw) == 28 else 4)
    return {
        "ip": str(ipaddress.ip_address(key.ip)),
        "pid": key.pid,
        "classLoaderHash": key.classLoaderHash,
        "timestamp": nearly_time(key.spanMS, now_ms if now_ms is not None else int(time.time() * 1000)),
        "counter": key.counter,
    }


def find_by_offset_id(store: Store, msg_id: str) -> tuple[str, int, Message] | None:
    """The record at the id's offset, if its own offset msgId is this id (same store host and offset)."""
    decoded = decode_offset_id(msg_id)
    if decoded is None or decoded["offset"] < 0:
        return None
    try:
        f, m = store.read_message(decoded["offset"])
    except StoreError:
        return None
    return (f.name, f.start, m) if m.msg_id == msg_id.upper() else None


ORIGIN_TOPICS = ("RETRY_TOPIC", "REAL_TOPIC")  # MessageConst: where a retry or scheduled copy came from


def find_by_unique_id(store: Store, msg_id: str, topics: list[str] | None = None) -> list[tuple[str, int, Message]]:
    """Records whose UNIQ_KEY is this id: through the index under every known topic (index keys are
    topic#key) and every topic a copy found names as its origin (a retry or scheduled copy's RETRY_TOPIC or
    REAL_TOPIC: its topic may be deleted, its directory gone), else by walking the commitlog."""
    key = msg_id.upper()
    found: dict[int, tuple[str, int, Message]] = {}
    if store.index_paths():
        to_search = list(topics or known_topics(store))
        searched = set(to_search)
        while to_search:
            topic = to_search.pop()
            for off in query_offsets(store, topic, key):
                try:
                    f, m = store.read_message(off)
                except StoreError:
                    continue
                if carries_key(m, topic, key) and m.uniq_key == key:
                    found[off] = (f.name, f.start, m)
                    origins = {m.properties.get(p) for p in ORIGIN_TOPICS} - searched - {None} if not topics else ()
                    searched.update(origins)
                    to_search += origins
        if found:
            return [found[o] for o in sorted(found)]
    elif store.message_rocksdb is not None and "index" in store.message_rocksdb.kinds:
        # 5.4 without index files: the RocksDB index's uniq-key records
        for off in store.message_rocksdb.uniq_offsets(key):
            try:
                f, m = store.read_message(off)
            except StoreError:
                continue
            if m.uniq_key == key and (not topics or m.topic in topics):
                found[off] = (f.name, f.start, m)
        if found:
            return [found[o] for o in sorted(found)]
    for chunk in store.scan().chunks():  # the engine finds the few records; the reference decodes them
        hits = chunk.spans_equal(chunk.column("lo:UNIQ_KEY"), chunk.column("hi:UNIQ_KEY"), key.encode())
        for pos in chunk.column("position")[hits]:
            m = read_record(chunk.buf, int(pos), len(chunk.u8))
            if not topics or m.topic in topics:
                found[chunk.file.start + m.position] = (chunk.file.name, chunk.file.start, m)
    return [found[o] for o in sorted(found)]


def known_topics(store: Store) -> list[str]:
    """Topics named by consumequeue directories and config/topics.json (system topics included)."""
    topics = {topic for topic, _ in queue_keys(store)}
    cfg = broker_config(store, "topics.json").document or {}
    topics.update((bean_field(cfg, "topicConfigTable") or {}).keys())
    return sorted(topics)


def decode_ids(ids: list[str], store: Store | None = None, now_ms: int | None = None) -> list[dict]:
    out = []
    for raw_id in ids:
        msg_id = raw_id.strip()
        row = {
            "id": msg_id,
            "offset": decode_offset_id(msg_id),
            "unique": decode_unique_id(msg_id, now_ms),
            "confirmedAs": None,
        }
        if store is not None and (row["offset"] or row["unique"]):
            if find_by_offset_id(store, msg_id):
                row["confirmedAs"] = "offset"
            elif find_by_unique_id(store, msg_id):
                row["confirmedAs"] = "unique"
        out.append(row)
    return out


def expired_offset(store: Store, msg_id: str) -> int | None:
    """The commitlog offset an offset msgId names when the broker already deleted that message (Store.expired)."""
    decoded = decode_offset_id(msg_id)
    return decoded["offset"] if decoded is not None and store.expired(decoded["offset"]) else None


def lookup(store: Store, msg_id: str) -> list[tuple[str, int, Message]]:
    """msgid lookup: the record for an offset msgId, else every record carrying it as UNIQ_KEY."""
    hit = find_by_offset_id(store, msg_id)
    if hit:
        return [hit]
    return find_by_unique_id(store, msg_id)
