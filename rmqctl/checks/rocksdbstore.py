"""verify's check of the 5.4 RocksDB message store (rmqctl.rocksdbstore): every index, timer and transaction
record against the commitlog record it names, and the bookkeeping keys against the log. One key is held at a
time, records in batches of a bounded size; each commitlog record a batch names is read once.

What each record must agree with is what the broker builds it from: an index record from the dispatched
record's topic, KEYS word, TAGS or UNIQ_KEY and store time (IndexRocksDBStore.buildIndex; a rollback record is
never indexed); a timer record from its timer message's UNIQ_KEY and size (TimerMessageRocksDBStore); a
transaction record from the half message's REAL_TOPIC, __transactionId__ and size (TransMessageRocksDBStore).
Records naming offsets below the commitlog's first file are expired (the broker deletes them by the hour), not
damage."""
from __future__ import annotations

from ..errors import StoreError
from ..findings import CONSUMEQUEUE, INDEX, TIMER
from ..record import Message
from ..rocksdbstore import INDEX as INDEX_KIND, KINDS, LAST_OFFSET_PY, TIMER as TIMER_KIND, TRANS, Entry
from ..schema import TRANSACTION_ROLLBACK_TYPE
from .context import Context

GROUPS = {INDEX_KIND: INDEX, TIMER_KIND: TIMER, TRANS: CONSUMEQUEUE}
KEY_SEPARATOR = " "  # MessageConst.KEY_SEPARATOR: KEYS words
BATCH = 1 << 16  # records checked at a time, in commitlog order: memory stays flat in the database's size


def check_rocksdb_store(ctx: Context):
    """Every finding into the run's report (nothing without the part, or where it is not read: info names it)."""
    db = ctx.store.message_rocksdb
    if db is None:
        return
    for kind in KINDS:
        batch: list[Entry] = []
        for e in db.entries(kind):
            if e.problem is not None:
                ctx.report(GROUPS[kind], "rocksdb-store-key", "error", db.directory, None, None,
                           f"RocksDB message store {kind} key {e.key.hex()}: {e.problem}")
            elif e.record is not None:
                batch.append(e)
                if len(batch) >= BATCH:
                    _check_records(ctx, db.directory, batch)
                    batch = []
        _check_records(ctx, db.directory, batch)
        if kind != TIMER_KIND:
            _check_last_offset(ctx, db, kind)


def _check_records(ctx: Context, where, batch: list[Entry]):
    """A batch of records in commitlog order, each record they name read once (an index keeps 3 or more
    records per message)."""
    store, end = ctx.store, _log_end(ctx.store)
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
        _check_record(ctx, where, e, m, err, end)


def _check_record(ctx: Context, where, e: Entry, m: Message | None, err: StoreError | None, end: int):
    off = e.record["offsetPy"]
    name = f"RocksDB message store {e.kind} record {_label(e)}"
    if m is None and err is None:
        if not ctx.store.expired(off):
            ctx.report(GROUPS[e.kind], "rocksdb-store-past-end", "error", where, None, None,
                       f"{name} names commitlog offset {off}, past the end of the commitlog ({end})")
        return
    if err is not None:
        ctx.report(GROUPS[e.kind], "rocksdb-store-bad-target", "error", where, None, off, f"{name}: {err}")
        return
    wrong = MISMATCHES[e.kind](e.record, m)
    if wrong:
        ctx.report(GROUPS[e.kind], "rocksdb-store-mismatch", "error", where, None, off,
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


def _check_last_offset(ctx: Context, db, kind: str):
    """lastOffsetPy: the offset of the newest record dispatched to this kind; dispatch resumes after it."""
    last = db.bookkeeping(kind, LAST_OFFSET_PY)
    store = ctx.store
    if last is None or last <= 0 or store.expired(last):
        return
    if last >= _log_end(store):
        ctx.report(GROUPS[kind], "rocksdb-store-bookkeeping", "error", db.directory, None, None,
                   f"RocksDB message store {kind} lastOffsetPy {last} is past the end of the commitlog "
                   f"({_log_end(store)}): dispatch to it would resume there")
        return
    try:
        store.read_message(last)
    except StoreError as err:
        ctx.report(GROUPS[kind], "rocksdb-store-bookkeeping", "error", db.directory, None, last,
                   f"RocksDB message store {kind} lastOffsetPy {last}: {err}")
