"""verify's check of the 5.4 RocksDB message store (rmqctl.rocksdbstore): every index, timer and transaction
record against the commitlog record it names, and the bookkeeping keys against the log, in batches of a
bounded number of keys: the engine (engine/rocksdbstore.py) parses a batch and compares each record with the bytes
of the commitlog record it names; what it cannot show to agree is checked again here by the reference, which
names what is wrong.

What each record must agree with is what the broker builds it from: an index record from the dispatched
record's topic, KEYS word, TAGS or UNIQ_KEY and store time (IndexRocksDBStore.buildIndex; a rollback record is
never indexed); a timer record from its timer message's UNIQ_KEY and size (TimerMessageRocksDBStore); a
transaction record from the half message's REAL_TOPIC, __transactionId__ and size (TransMessageRocksDBStore).
Records naming offsets below the commitlog's first file are expired (the broker deletes them by the hour), not
damage."""
from __future__ import annotations

import itertools

import numpy as np

from .. import engine as E
from ..errors import StoreError
from ..findings import CONSUMEQUEUE, INDEX, TIMER, Findings
from ..record import Message
from ..rocksdbstore import INDEX as INDEX_KIND, KINDS, LAST_OFFSET_PY, TIMER as TIMER_KIND, TRANS, Entry, entry
from ..schema import TRANSACTION_ROLLBACK_TYPE
from ..store import Store

KIND_CODES = {INDEX_KIND: E.STORE_INDEX, TIMER_KIND: E.STORE_TIMER, TRANS: E.STORE_TRANS}

GROUPS = {INDEX_KIND: INDEX, TIMER_KIND: TIMER, TRANS: CONSUMEQUEUE}
KEY_SEPARATOR = " "  # MessageConst.KEY_SEPARATOR: KEYS words
BATCH = 1 << 16  # keys checked at a time: memory stays flat in the database's size


def check_rocksdb_store(store: Store) -> Findings:
    """The RocksDB message store's findings (none without the part, or where it is not read: info names it)."""
    db, found = store.message_rocksdb, Findings()
    if db is None:
        return found
    for kind in KINDS:
        items = db.items(kind)
        while batch := list(itertools.islice(items, BATCH)):
            _check_batch(found, store, db, kind, batch)
        if kind != TIMER_KIND:
            _check_last_offset(found, store, db, kind)
    return found


def _check_batch(found: Findings, store: Store, db, kind: str, batch: list[tuple[bytes, bytes]]):
    """A batch of keys: what the engine cannot show to agree (keys of neither layout, records past the end,
    expired or differing) goes to the reference."""
    keys, values = zip(*batch)
    rest = [entry(kind, keys[i], values[i]) for i in np.flatnonzero(~agreed(store, kind, keys, values)).tolist()]
    for e in rest:
        if e.problem is not None:
            found.add(GROUPS[kind], "rocksdb-store-key", "error", db.directory, None, None,
                      f"RocksDB message store {kind} key {e.key.hex()}: {e.problem}")
    _check_records(found, store, db.directory, [e for e in rest if e.record is not None])


def agreed(store, kind: str, keys: tuple[bytes, ...], values: tuple[bytes, ...]) -> np.ndarray:
    """Which keys the engine shows to be records of `kind` agreeing with the live commitlog record they name."""
    key_bytes, key_ends = _joined(keys)
    value_bytes, value_ends = _joined(values)
    cols = np.zeros((len(keys), E.STORE_NCOLUMNS), np.int64)
    rows = np.flatnonzero(E.parse_store_keys(KIND_CODES[kind], key_bytes, key_ends, value_bytes, value_ends, cols))
    rows = rows[np.argsort(cols[rows, E.STORE_OFFSET], kind="stable")]  # the commitlog read forward
    out = np.zeros(len(keys), bool)
    offsets = cols[rows, E.STORE_OFFSET]
    q = store.commitlog
    for f in q.files:
        mine = rows[(offsets >= max(f.start, q.min_offset)) & (offsets < f.start + q.file_size)]
        if len(mine) and f.path.exists():
            u8 = np.frombuffer(f.buf, np.uint8)
            out[mine] = E.agree_store_records(KIND_CODES[kind], u8, min(len(u8), q.file_size), cols[mine, E.STORE_OFFSET] - f.start,
                                key_bytes, cols, mine)
            del u8
    return out


def _joined(parts: tuple[bytes, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The byte strings end to end, and where each ends."""
    ends = np.cumsum(np.fromiter(map(len, parts), np.int64, len(parts)))
    return np.frombuffer(b"".join(parts), np.uint8), ends


def _check_records(found: Findings, store: Store, where, batch: list[Entry]):
    """The reference's check of records, in commitlog order, each record they name read once (an index keeps 3
    or more records per message)."""
    end = _log_end(store)
    batch.sort(key=lambda e: e.record["offsetPy"])
    at, m, err = None, None, None
    for e in batch:
        off = e.record["offsetPy"]
        if off != at:
            at, m, err = off, None, None
            if 0 <= off < end and not store.expired(off):
                try:
                    _, m = store.read_message(off)
                except StoreError as problem:
                    err = problem
        _check_record(found, store, where, e, m, err, end)


def _check_record(found: Findings, store: Store, where, e: Entry, m: Message | None, err: StoreError | None,
                  end: int):
    off = e.record["offsetPy"]
    name = f"RocksDB message store {e.kind} record {_label(e)}"
    if m is None and err is None:
        if not store.expired(off):
            found.add(GROUPS[e.kind], "rocksdb-store-past-end", "error", where, None, None,
                      f"{name} names commitlog offset {off}, past the end of the commitlog ({end})")
        return
    if err is not None:
        found.add(GROUPS[e.kind], "rocksdb-store-bad-target", "error", where, None, off, f"{name}: {err}")
        return
    wrong = MISMATCHES[e.kind](e.record, m)
    if wrong:
        found.add(GROUPS[e.kind], "rocksdb-store-mismatch", "error", where, None, off,
                  f"{name} at commitlog offset {off}: " + "; ".join(wrong))


def _log_end(store) -> int:
    """Where the commitlog's files end: an offset at or past it is in no file."""
    return store.commitlog.files[-1].start + store.commitlog.file_size if store.commitlog.files else 0


def _label(e: Entry) -> str:
    r = e.record
    if e.kind == INDEX_KIND:
        return f"{r['topic']}@{r['type']}@{r.get('key', r['uniqKey'])}"
    return f"{r.get('topic', '')}{'@' if 'topic' in r else ''}{r['uniqKey']}"


def _index_mismatch(r: dict, m: Message) -> list[str]:
    wrong = []
    if m.topic != r["topic"]:
        wrong.append(f"topic {r['topic']!r}, the record's {m.topic!r}")
    if m.uniq_key != r["uniqKey"]:
        wrong.append(f"uniqKey {r['uniqKey']}, the record's {m.uniq_key}")
    if r["type"] == "K" and r["key"] not in (m.keys or "").split(KEY_SEPARATOR):
        wrong.append(f"key {r['key']!r} is not among the record's KEYS {m.keys!r}")
    if r["type"] == "T" and r["key"] != m.properties.get("TAGS"):
        wrong.append(f"tag {r['key']!r}, the record's TAGS {m.properties.get('TAGS')!r}")
    if r["storeTime"] != m.storeTimestamp:
        wrong.append(f"storeTime {r['storeTime']}, the record's {m.storeTimestamp}")
    if m.transaction_type == TRANSACTION_ROLLBACK_TYPE:
        wrong.append("the record is a transaction rollback, which the broker never indexes")
    return wrong


def _size_mismatch(r: dict, m: Message) -> list[str]:
    return [f"sizePy {r['sizePy']}, the record's storeSize {m.storeSize}"] if m.storeSize != r["sizePy"] else []


def _timer_mismatch(r: dict, m: Message) -> list[str]:
    wrong = [f"uniqKey {r['uniqKey']}, the record's {m.uniq_key}"] if m.uniq_key != r["uniqKey"] else []
    return wrong + _size_mismatch(r, m)


def _trans_mismatch(r: dict, m: Message) -> list[str]:
    topic, txid = m.properties.get("REAL_TOPIC"), m.properties.get("__transactionId__")
    wrong = [f"topic {r['topic']!r}, the record's REAL_TOPIC {topic!r}"] if topic != r["topic"] else []
    if txid != r["uniqKey"]:
        wrong.append(f"uniqKey {r['uniqKey']}, the record's __transactionId__ {txid}")
    return wrong + _size_mismatch(r, m)


MISMATCHES = {INDEX_KIND: _index_mismatch, TIMER_KIND: _timer_mismatch, TRANS: _trans_mismatch}


def _check_last_offset(found: Findings, store: Store, db, kind: str):
    """lastOffsetPy: the offset of the newest record dispatched to this kind; dispatch resumes after it."""
    last = db.bookkeeping(kind, LAST_OFFSET_PY)
    if last is None or last <= 0 or store.expired(last):
        return
    if last >= _log_end(store):
        found.add(GROUPS[kind], "rocksdb-store-bookkeeping", "error", db.directory, None, None,
                  f"RocksDB message store {kind} lastOffsetPy {last} is past the end of the commitlog "
                  f"({_log_end(store)}): dispatch to it would resume there")
        return
    try:
        store.read_message(last)
    except StoreError as err:
        found.add(GROUPS[kind], "rocksdb-store-bookkeeping", "error", db.directory, None, last,
                  f"RocksDB message store {kind} lastOffsetPy {last}: {err}")
