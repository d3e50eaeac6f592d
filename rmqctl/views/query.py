"""Key lookups through the index files (IndexService.queryOffset), resolved to messages with a key check
that drops the hash collisions the broker leaves to its clients."""

from __future__ import annotations

import collections
import dataclasses

from ..dispatch import index_key_hash
from ..rules import index_dropped_after_crash, key_words
from ..errors import StoreError
from ..record import Message, message_dict
from ..store import Store

MAX_MSGS_NUM_BATCH = 64
LONG_MAX = (1 << 63) - 1


@dataclasses.dataclass
class KeyQueryResult:
    topic: str
    key: str
    phy_offsets: list[int]  # IndexService.queryOffset's raw answer: newest file first, newest entry first
    messages: list[tuple[str, int, Message]]  # (file name, file start, message), ascending, collisions dropped
    collisions: list[int]  # offsets whose record does not carry the key
    unreadable: list[tuple[int, str]]  # offsets that do not lead to a record
    expired: list[int]  # offsets of messages the broker already deleted (Store.expired): not damage
    # (index file, offsets from it) of the files the broker deletes at its next start after a crash
    dropped: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    # (index file, its length, the length its geometry makes) of the files searched that are cut short: the broker
    # reads them as zeros past their end, so what was indexed there is not found
    short: list[tuple[str, int, int]] = dataclasses.field(default_factory=list)
    # index files whose chain for the key loops (a damaged prev): the broker's query spins there for good
    looped: list[str] = dataclasses.field(default_factory=list)


def capped(store: Store, max_num: int) -> int:
    """maxNum as both index stores take it: at most maxMsgsNumBatch."""
    return min(max_num, store.config.maxMsgsNumBatch or MAX_MSGS_NUM_BATCH)


def query_offsets(
    store: Store, topic: str, key: str, max_num: int = MAX_MSGS_NUM_BATCH, begin: int = 0, end: int = LONG_MAX
) -> list[int]:
    """IndexService.queryOffset: maxNum capped at maxMsgsNumBatch; files newest to oldest, each searched if
    its time range overlaps [begin, end]; stop at a file that begins before `begin` or when full."""
    return [off for off, _ in offsets_by_file(store, topic, key, max_num, begin, end)]


def offsets_by_file(
    store: Store, topic: str, key: str, max_num: int, begin: int, end: int, looped: list[str] | None = None
) -> list[tuple[int, str]]:
    """query_offsets, each offset with the name of the index file it was found in; the files whose chain for
    the key loops are added to `looped` (the broker's query never returns there)."""
    max_num = capped(store, max_num)
    key_hash = index_key_hash(f"{topic}#{key}")
    out: list[int] = []
    names: list[str] = []
    for ix in reversed(store.index_files()):
        h = ix.header
        if is_time_matched(h["beginTimestamp"], h["endTimestamp"], begin, end):
            spins = ix.select_phy_offsets(key_hash, max_num, begin, end, out)
            names += [ix.name] * (len(out) - len(names))
            if spins:  # (the broker's query never gets past this file)
                if looped is not None:
                    looped.append(ix.name)
                break
        if h["beginTimestamp"] < begin or len(out) >= max_num:
            break
    return list(zip(out, names))


def is_time_matched(file_begin: int, file_end: int, begin: int, end: int) -> bool:
    """IndexFile.isTimeMatched."""
    return (
        (begin < file_begin and end > file_end) or (file_begin <= begin <= file_end) or (file_begin <= end <= file_end)
    )


def carries_key(m: Message, topic: str, key: str) -> bool:
    if m.topic != topic:
        return False
    keys = m.keys
    return key == m.uniq_key or (keys is not None and key.encode() in key_words(keys.encode()))


def query_key(
    store: Store, topic: str, key: str, max_num: int = MAX_MSGS_NUM_BATCH, begin: int = 0, end: int = LONG_MAX
) -> KeyQueryResult:
    """The messages of `topic` carrying `key`. A store with no index file has nothing to look in: that is
    refused, not answered as "no such key"."""
    rocks = store.message_rocksdb if not store.index_files() else None
    if rocks is not None and "index" not in rocks.kinds:  # (a split layout without its index database)
        rocks = None
    if rocks is not None:  # 5.4, indexFileWriteEnable=false: the RocksDB index is the one the broker reads
        # IndexRocksDBStore.queryOffset: no answer for maxNum <= 0, else at most maxMsgsNumBatch
        offsets = rocks.index_offsets(topic, key, capped(store, max_num), begin, end) if max_num > 0 else []
        dropped, short, looped = [], [], []
    else:
        if not store.index_files():  # (messageIndexEnable only stops new entries: the broker searches what is there)
            why = (
                "rmqctl rebuild index makes them from the commitlog"
                if store.config.messageIndexEnable
                else "messageIndexEnable=false: the broker writes none"
            )
            raise StoreError(f"no index file: nothing to look a key up in ({why})", store.index_dir)
        looped = []
        by_file = offsets_by_file(store, topic, key, max_num, begin, end, looped)
        offsets, dropped = [off for off, _ in by_file], _dropped_after_crash(store, by_file)
        short = [
            (ix.name, ix.length, ix.expected_length) for ix in store.index_files() if ix.length < ix.expected_length
        ]
    found, collisions, unreadable, expired = {}, [], [], []
    for off in offsets:
        if off in found:
            continue  # a key listed twice in one message is indexed twice
        try:
            f, m = store.read_message(off)
        except StoreError as e:
            if store.expired(off):
                expired.append(off)
            else:
                unreadable.append((off, str(e)))
            continue
        if carries_key(m, topic, key):
            found[off] = (f.name, f.start, m)
        else:
            collisions.append(off)
    messages = [found[o] for o in sorted(found)]
    return KeyQueryResult(topic, key, offsets, messages, collisions, unreadable, expired, dropped, short, looped)


def _dropped_after_crash(store: Store, by_file: list[tuple[int, str]]) -> list[tuple[str, int]]:
    """The index files of these answers the broker deletes at its next start after a crash, with how many."""
    cp = store.checkpoint() if store.crashed() else None
    if cp is None:
        return []
    answered = collections.Counter(name for _, name in by_file)
    return [
        (ix.name, answered[ix.name])
        for ix in sorted(store.index_files(), key=lambda ix: ix.name)
        if answered[ix.name] and index_dropped_after_crash(ix.header["endTimestamp"], cp["indexMsgTimestamp"])
    ]


def query_key_rows(
    store: Store,
    topic: str,
    key: str,
    max_num: int = MAX_MSGS_NUM_BATCH,
    begin: int = 0,
    end: int = LONG_MAX,
    body: str = "utf8",
) -> tuple[list[dict], KeyQueryResult]:
    r = query_key(store, topic, key, max_num, begin, end)
    return [message_dict(m, name, start, body) for name, start, m in r.messages], r
