"""The 5.4 RocksDB message store (RIP-82, opt-in: indexRocksDBEnable, timerRocksDBEnable, transRocksDBEnable):
index, timer and transaction records in RocksDB. Read through rmqctl.rocksdb, never written here. Two layouts:

* one database (`rocksdbstore/`, MessageRocksDBStorage) with the column families `default` (the message
  index), `timer` and `trans`;
* the split layout (apache/rocketmq e75c9060): a database per kind, each with only `default`, holding the
  same keys and values: `RocksDBIndexStore/` (IndexRocksDBStore.ROCKSDB_INDEX_DIRECTORY,
  IndexMessageRocksDBStorage) and `RocksDBTransStore/` (TransMessageRocksDBStore, TransMessageRocksDBStorage).
  Its timer records are in no database of this store that the sources name: that version's timer store
  (TimerMessageRocksDBStore) keeps TimerMessageRecords in `kvStore/`, another layout, not read here.

The layout is what the databases' column families say, never assumed: a database whose families are not its
layout's is a layout this version does not read (named by every command, never guessed at).

Sources (apache/rocketmq, RIP-82 files): rocksdb/MessageRocksDBStorage.java (directory `rocksdbstore`, the column
families, the bookkeeping keys lastOffsetPy / lastStoreTimeStamp and the timer checkpoint keys, written with the
WAL), index/rocksdb/IndexRocksDBRecord.java and IndexRocksDBStore.java (index key and value; one record per KEYS
word, one for TAGS, one for the uniq key; rollback records not indexed), timer/rocksdb/TimerRocksDBRecord.java,
transaction/TransRocksDBRecord.java and TransMessageRocksDBStore.java (the half message's REAL_TOPIC and
__transactionId__), index/rocksdb/IndexRocksDBStoreAdapter.java (dispatch restarts from lastOffsetPy when > 0).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterator

from . import schema as S
from .errors import StoreError
from .rocksdb import Pairs, ReadOnlyDB, column_families

# MessageRocksDBStorage.ROCKSDB_MESSAGE_DIRECTORY; the spec's earlier name for the same store is read too
DIRECTORIES = ("rocksdbstore", "RocksDBMessageStore")
# the split layout (apache/rocketmq e75c9060: IndexRocksDBStore.ROCKSDB_INDEX_DIRECTORY and the transaction
# store's directory), a database per kind with only `default`
SPLIT_DIRECTORIES = {"RocksDBIndexStore": "index", "RocksDBTransStore": "trans"}
SPLIT_FAMILY = "default"
INDEX, TIMER, TRANS = "index", "timer", "trans"
KINDS = (INDEX, TIMER, TRANS)
FAMILIES = {INDEX: "default", TIMER: "timer", TRANS: "trans"}  # one database: the kind's column family
# MessageConst.INDEX_KEY_TYPE / INDEX_TAG_TYPE / INDEX_UNIQUE_TYPE: the TYPE between the topic and the key
INDEX_TYPES = {"K": "key", "T": "tag", "U": "uniqKey"}
SPLIT = "@"  # IndexRocksDBRecord.KEY_SPLIT, also the transaction key's
LAST_OFFSET_PY, LAST_STORE_TIMESTAMP = b"lastOffsetPy", b"lastStoreTimeStamp"
TIMER_CHECKPOINTS = (b"sys_topic_scan_offset_checkpoint", b"timeline_checkpoint")
BOOKKEEPING = {INDEX: (LAST_OFFSET_PY, LAST_STORE_TIMESTAMP), TIMER: TIMER_CHECKPOINTS, TRANS: (LAST_OFFSET_PY,)}
INT64 = S.compile_struct(S.RocksDBKeyHead)  # (and the bookkeeping values: one int64)
INDEX_VALUE = S.compile_struct(S.RocksDBIndexValue)  # storeTime
TIMER_VALUE = S.compile_struct(S.RocksDBTimerValue)  # sizePy, offsetPy
TRANS_VALUE = S.compile_struct(S.RocksDBTransValue)  # checkTimes, sizePy


class RecordProblem(ValueError):
    """A key or value that is not of its kind's layout."""


@dataclasses.dataclass(frozen=True)
class Entry:
    """One key of a column family: a record (`record`), a bookkeeping key (`name`, `value`), or bytes of
    neither (`problem`)."""

    kind: str
    key: bytes
    raw: bytes
    record: dict | None = None
    name: str | None = None
    value: int | None = None
    problem: str | None = None

    def row(self) -> dict:
        if self.record is not None:
            return {"kind": self.kind, **self.record}
        if self.name is not None:
            return {"kind": self.kind, "bookkeeping": self.name, "value": self.value}
        return {"kind": self.kind, "keyHex": self.key.hex(), "valueHex": self.raw.hex(), "problem": self.problem}


def decode_index(key: bytes, value: bytes) -> dict:
    """int64 hour | "@topic@TYPE@key@uniqKey@" (no key for TYPE U) | int64 offsetPy -> int64 storeTime."""
    if len(key) < 2 * INT64.size + 2 or len(value) != INDEX_VALUE.size:
        raise RecordProblem(f"a {len(key)}-byte key with a {len(value)}-byte value is not an index record")
    try:
        middle = key[8:-8].decode("utf-8")
    except UnicodeDecodeError:
        raise RecordProblem("the key's middle is not UTF-8") from None
    if not (middle.startswith(SPLIT) and middle.endswith(SPLIT)):
        raise RecordProblem("the key's middle is not @...@")
    words = middle[1:-1].split(SPLIT)
    if len(words) < 3 or words[1] not in INDEX_TYPES or (words[1] == "U") != (len(words) == 3):
        raise RecordProblem(f"the key's middle {middle!r} is not @topic@TYPE@key@uniqKey@ with TYPE K, T or U")
    record = {"hour": INT64.unpack_from(key)[0], "topic": words[0], "type": words[1]}
    if words[1] != "U":
        record["key"] = SPLIT.join(words[2:-1])
    return {
        **record,
        "uniqKey": words[-1],
        "offsetPy": INT64.unpack_from(key, len(key) - 8)[0],
        "storeTime": INDEX_VALUE.unpack(value)[0],
    }


def decode_timer(key: bytes, value: bytes) -> dict:
    """int64 delayTime | uniqKey -> int32 sizePy | int64 offsetPy."""
    if len(key) <= INT64.size or len(value) != TIMER_VALUE.size:
        raise RecordProblem(f"a {len(key)}-byte key with a {len(value)}-byte value is not a timer record")
    try:
        uniq = key[8:].decode("utf-8")
    except UnicodeDecodeError:
        raise RecordProblem("the uniq key is not UTF-8") from None
    size, offset = TIMER_VALUE.unpack(value)
    return {"delayTime": INT64.unpack_from(key)[0], "uniqKey": uniq, "offsetPy": offset, "sizePy": size}


def decode_trans(key: bytes, value: bytes) -> dict:
    """int64 offsetPy | "@topic@uniqKey" -> int32 checkTimes | int32 sizePy."""
    if len(key) <= INT64.size or len(value) != TRANS_VALUE.size:
        raise RecordProblem(f"a {len(key)}-byte key with a {len(value)}-byte value is not a transaction record")
    try:
        words = key[8:].decode("utf-8").split(SPLIT)
    except UnicodeDecodeError:
        raise RecordProblem("the key's suffix is not UTF-8") from None
    if len(words) != 3 or words[0] or not words[1] or not words[2]:
        raise RecordProblem("the key's suffix is not @topic@uniqKey")
    checks, size = TRANS_VALUE.unpack(value)
    return {
        "offsetPy": INT64.unpack_from(key)[0],
        "topic": words[1],
        "uniqKey": words[2],
        "sizePy": size,
        "checkTimes": checks,
    }


DECODERS = {INDEX: decode_index, TIMER: decode_timer, TRANS: decode_trans}


def entry(kind: str, key: bytes, value: bytes) -> Entry:
    if key in BOOKKEEPING[kind]:
        if len(value) != INT64.size:
            return Entry(kind, key, value, problem=f"{key.decode()} holds {len(value)} bytes, not an int64")
        return Entry(kind, key, value, name=key.decode(), value=INT64.unpack(value)[0])
    try:
        return Entry(kind, key, value, record=DECODERS[kind](key, value))
    except RecordProblem as e:
        return Entry(kind, key, value, problem=str(e))


def message_rocksdb(parts: list) -> MessageRocksDB | None:
    """The store's message store from its parts (parts.py): its one database, or the split layout's databases
    (read whole or not at all: parts.py); None when there is none or a part of it is not read."""
    if not parts or not all(p.read for p in parts):
        return None
    if parts[0].path.name not in SPLIT_DIRECTORIES:
        return MessageRocksDB.one(parts[0].path)
    return MessageRocksDB({SPLIT_DIRECTORIES[p.path.name]: p.path for p in parts}, split=True)


def split_layout_problem(directory: Path) -> str | None:
    """Why the split layout's database in `directory` is not read (None: it is): it must hold only `default`."""
    found = column_families(directory)
    if found == [SPLIT_FAMILY]:
        return None
    return f"column families {', '.join(found)}: not the split layout's one family (default)"


def layout_problem(directory: Path) -> str | None:
    """Why the database in `directory` is not of the one-database layout (None: it is)."""
    found = column_families(directory)
    if sorted(found) == sorted(FAMILIES.values()):
        return None
    return f"column families {', '.join(found)}: not the one-database layout (default, timer, trans) this version reads"


class MessageRocksDB:
    """The store's RocksDB message store in either layout (`directories`: each kind's database), opened
    read-only on first use; `kinds` the kinds it keeps. A database not of its layout: exit 2 naming it."""

    def __init__(self, directories: dict[str, Path], split: bool):
        self.directories = directories
        self.split = split
        self.kinds = tuple(k for k in KINDS if k in directories)
        # where findings and info name it: the one database, or the store's directory holding the split ones
        self.directory = next(iter(directories.values())) if not split else next(iter(directories.values())).parent
        self._dbs: dict[Path, ReadOnlyDB] = {}

    @classmethod
    def one(cls, directory: Path) -> MessageRocksDB:
        return cls({kind: directory for kind in KINDS}, split=False)

    def where(self, kind: str) -> Path:
        return self.directories[kind]

    def _handle(self, kind: str) -> tuple[ReadOnlyDB, str]:
        directory = self.directories[kind]
        if directory not in self._dbs:  # (ReadOnlyDB refuses any other column families: a layout changed since)
            families = () if self.split else (FAMILIES[TIMER], FAMILIES[TRANS])
            self._dbs[directory] = ReadOnlyDB(directory, families)
        return self._dbs[directory], SPLIT_FAMILY if self.split else FAMILIES[kind]

    def open(self):
        """Every database opened now (a reader in another thread then only reads)."""
        for kind in self.kinds:
            self._handle(kind)

    def items(self, kind: str) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) of the kind in key order."""
        db, family = self._handle(kind)
        return db.items(family)

    def batches(self, kind: str, size: int) -> Iterator[Pairs]:
        """The kind's keys and values in key order, `size` at a time (rocksdb.Pairs)."""
        db, family = self._handle(kind)
        return db.batches(family, size)

    def tables(self, kind: str):
        """The kind's live table files as rmqctl.sstable reads them (rocksdb.ReadOnlyDB.tables), or None."""
        db, family = self._handle(kind)
        return db.tables(family)

    def entries(self, kind: str) -> Iterator[Entry]:
        """Every key of the kind in key order, decoded one at a time (memory flat in its size)."""
        for key, value in self.items(kind):
            yield entry(kind, key, value)

    def bookkeeping(self, kind: str, name: bytes) -> int | None:
        if kind not in self.directories:
            return None
        db, family = self._handle(kind)
        raw = db.get(family, name)
        if raw is None:
            return None
        if len(raw) != INT64.size:
            raise StoreError(
                f"RocksDB message store: {kind} {name.decode()} holds {len(raw)} bytes, not an int64", self.where(kind)
            )
        return INT64.unpack(raw)[0]

    def dispatched_to(self) -> dict[str, int]:
        """The kinds whose dispatch restarts from their lastOffsetPy (IndexRocksDBStoreAdapter and the trans one:
        only a value > 0 counts)."""
        out = {}
        for kind in (INDEX, TRANS):
            last = self.bookkeeping(kind, LAST_OFFSET_PY)
            if last is not None and last > 0:
                out[kind] = last
        return out

    def counts(self) -> dict[str, int]:
        """Records of each kind it keeps (bookkeeping keys not counted)."""
        return {kind: sum(1 for e in self.entries(kind) if e.name is None) for kind in self.kinds}

    def index_offsets(self, topic: str, key: str, max_num: int, begin: int, end: int) -> list[int]:
        """IndexRocksDBStore.queryOffset without an index type: the offsetPy of up to `max_num` records of `topic`
        stored in [begin, end] whose KEYS word is `key`, else (none) whose uniq key is; every hour read in turn,
        one key at a time."""
        for t in ("K", "U"):
            middle = f"{SPLIT}{topic}{SPLIT}{t}{SPLIT}{key}{SPLIT}".encode("utf-8")
            found = [
                off
                for off, stored in self._index_matches(lambda k: k[8 : 8 + len(middle)] == middle)
                if begin <= stored <= end
            ]
            if found:
                return found[:max_num]
        return []

    def uniq_offsets(self, uniq_key: str) -> list[int]:
        """The offsetPy of every uniq-key record (TYPE U) of `uniq_key`, under any topic."""
        tail = f"{SPLIT}U{SPLIT}{uniq_key}{SPLIT}".encode("utf-8")
        return [off for off, _ in self._index_matches(lambda k: k[:-8].endswith(tail))]

    def _index_matches(self, match) -> Iterator[tuple[int, int]]:
        for k, v in self.items(INDEX):
            if len(k) > 16 and len(v) == INT64.size and match(k):
                yield INT64.unpack_from(k, len(k) - 8)[0], INT64.unpack(v)[0]

    def close(self):
        for db in self._dbs.values():
            db.close()
        self._dbs.clear()
