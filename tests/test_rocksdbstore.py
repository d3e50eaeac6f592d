"""The 5.4 RocksDB message store (rocksdbstore/: index, timer, transaction records). No RocketMQ code here writes
it, so the test stores are built from a real fixture's commitlog: every record's entries computed from the
fixture's truth file by the rules of IndexRocksDBStore / TimerMessageRocksDBStore / TransMessageRocksDBStore
(written out here, apart from rmqctl's decoder) and written with RocksDB itself; Debian's `ldb` is the
independent reader rmqctl's dump is compared with."""

from __future__ import annotations

from collections import Counter

import gc
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import rocksdict

from conftest import broker_conf, copy_store, one_line_error, run, tmpfs_at, truth, write_rocksdb
from rmqctl import recovery
from rmqctl.checks import rocksdbstore as rocksdbstore_check, verify as verify_module
from rmqctl.checks.rocksdbstore import Reading, RecordRuns, agreed, check_runs, parsed
from rmqctl.checks.verify import verify
from rmqctl.checks.windows import window_records
from rmqctl.config import load_config
from rmqctl.errors import StoreError
from rmqctl.rocksdb import Pairs
from rmqctl.rocksdbstore import entry
from rmqctl.store import Store

BASE = "b-mixed"
HOUR = 3600 * 1000
LONG_MAX = (1 << 63) - 1


def _three_digests(db: Path, held: list) -> tuple:
    """The digests of the database's table files read directly, of every pair `held` (what its files hold, older
    versions too) and of RocksDB's own iteration."""
    from rmqctl.rocksdb import ReadOnlyDB

    direct, every, live = (rocksdbstore_check.IndexDigest(0, LONG_MAX) for _ in range(3))
    with ReadOnlyDB(db, ()) as rdb:
        list(direct.table_groups(rdb.tables("default")))
        for pairs in rdb.batches("default", 4096):
            live.add_pairs(pairs)
    every.add_pairs(Pairs.of(held))
    return direct, every, live


TX_ID = "7F00000100012A9F0000000000000TX1"
TIMER_OUT_MS = 1795314232000  # the appended timer message's due time
TIMER_UNIQ = "7F00000100012A9F000000000000TMR1"
CHECKPOINTS = {b"sys_topic_scan_offset_checkpoint": 1234, b"timeline_checkpoint": 1795314222000}


def q(v: int) -> bytes:
    return struct.pack(">q", v)


def index_entries(m: dict) -> list[tuple[bytes, bytes]]:
    """IndexRocksDBStore.buildIndex + IndexRocksDBRecord.getKeyBytes for one record of the truth file."""
    props, topic, t = m.get("properties") or {}, m["topic"], m["storeTimestamp"]
    uniq = props.get("UNIQ_KEY")
    if not uniq or (m.get("sysFlagInfo") or {}).get("transaction") == "ROLLBACK":  # (dump rows: sysFlag only)
        return []
    middles = [f"@{topic}@K@{k}@{uniq}@" for k in sorted({w for w in props.get("KEYS", "").split(" ") if w})]
    if props.get("TAGS"):
        middles.append(f"@{topic}@T@{props['TAGS']}@{uniq}@")
    middles.append(f"@{topic}@U@{uniq}@")
    return [(q(t // HOUR * HOUR) + s.encode() + q(m["commitLogOffset"]), q(t)) for s in middles]


def expected(half: dict, timed: dict) -> dict[str, dict[bytes, bytes]]:
    messages = truth(BASE, "truth-messages.jsonl") + [half, timed]
    index = dict(e for m in messages for e in index_entries(m))
    last = max((m for m in messages if index_entries(m)), key=lambda m: m["commitLogOffset"])
    index[b"lastOffsetPy"], index[b"lastStoreTimeStamp"] = q(last["commitLogOffset"]), q(last["storeTimestamp"])
    # TimerMessageRocksDBStore.scanSysTimerTopic: delayTime is the timer message's TIMER_OUT_MS
    timer = {
        q(int(m["properties"]["TIMER_OUT_MS"])) + m["properties"]["UNIQ_KEY"].encode(): struct.pack(
            ">iq", m["storeSize"], m["commitLogOffset"]
        )
        for m in messages
        if "TIMER_OUT_MS" in (m.get("properties") or {})
    }
    timer.update(CHECKPOINTS)
    timer = {k: (q(v) if isinstance(v, int) else v) for k, v in timer.items()}
    off = half["commitLogOffset"]
    trans = {
        q(off) + f"@TxBizTopic@{TX_ID}".encode(): struct.pack(">ii", 0, half["storeSize"]),
        b"lastOffsetPy": q(off),
    }
    return {"default": index, "timer": timer, "trans": trans}


def write_db(path: Path, families: dict[str, dict[bytes, bytes]]):
    """A database as MessageRocksDBStorage keeps it: the column families named, LZ4 (RocksDBOptionsFactory)."""
    write_rocksdb(path, families, "lz4")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict]:
    """b-mixed with one transaction half message appended (carrying __transactionId__, which the fixture's
    4.x-style halves lack) and one timer message (TIMER_OUT_MS: the fixture has none), and the RocksDB message
    store their records make."""
    root = copy_store(BASE, tmp_path_factory.mktemp("rdb"))
    appended = []
    for topic, props, body in (
        ("TxBizTopic", ["REAL_TOPIC=TxBizTopic", f"__transactionId__={TX_ID}"], "half"),
        (
            "rmq_sys_wheel_timer",
            ["REAL_TOPIC=TopicTest", "REAL_QID=0", f"UNIQ_KEY={TIMER_UNIQ}", f"TIMER_OUT_MS={TIMER_OUT_MS}"],
            "timed",
        ),
    ):
        res = run(
            "append",
            "--store",
            root,
            "--broker-config",
            broker_conf(BASE),
            "--topic",
            topic,
            *[a for p in props for a in ("--property", p)],
            "--body",
            body,
        )
        assert res.exit_code == 0, res.stderr
        off = json.loads(res.stdout.splitlines()[-1])["commitLogOffset"]
        dumped = run(
            "dump",
            "commitlog",
            "--store",
            root,
            "--broker-config",
            broker_conf(BASE),
            "--from",
            off,
            "--limit",
            1,
            "--format",
            "jsonl",
        )
        appended.append(json.loads(dumped.stdout.splitlines()[0]))
    want = expected(*appended)
    write_db(root / "rocksdbstore", want)
    return root, want


def copy_of(built, tmp_path: Path) -> Path:
    target = tmp_path / "store"
    shutil.copytree(built[0], target)
    return target


def ldb_scan(db: Path, cf: str, tmp_path: Path) -> dict[bytes, bytes]:
    copy = tmp_path / f"ldb-{cf}"
    shutil.copytree(db, copy)
    out = subprocess.run(
        [
            "ldb",
            f"--db={copy}",
            "--ignore_unknown_options",
            f"--column_family={cf}",
            "scan",
            "--key_hex",
            "--value_hex",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    shutil.rmtree(copy)
    pairs = (line.split(" : ") for line in out.splitlines() if " : " in line)
    return {bytes.fromhex(k[2:]): bytes.fromhex(v[2:]) for k, v in pairs}


def reencode(row: dict) -> tuple[bytes, bytes]:
    """The bytes a dumped row stands for, by the layouts above (not rmqctl's)."""
    if "bookkeeping" in row:
        return row["bookkeeping"].encode(), q(row["value"])
    if row["kind"] == "index":
        word = "" if row["type"] == "U" else f"{row['key']}@"
        middle = f"@{row['topic']}@{row['type']}@{word}{row['uniqKey']}@"
        return q(row["hour"]) + middle.encode() + q(row["offsetPy"]), q(row["storeTime"])
    if row["kind"] == "timer":
        return q(row["delayTime"]) + row["uniqKey"].encode(), struct.pack(">iq", row["sizePy"], row["offsetPy"])
    return (
        q(row["offsetPy"]) + f"@{row['topic']}@{row['uniqKey']}".encode(),
        struct.pack(">ii", row["checkTimes"], row["sizePy"]),
    )


def dump(root: Path, *args) -> tuple[int, list[dict]]:
    res = run("dump", "rocksdbstore", "--store", root, "--broker-config", broker_conf(BASE), "--format", "jsonl", *args)
    return res.exit_code, [json.loads(line) for line in res.stdout.splitlines()]


@pytest.mark.parametrize("kind,cf", [("index", "default"), ("timer", "timer"), ("trans", "trans")])
def test_dump_is_what_ldb_reads(built, tmp_path, kind, cf):
    code, rows = dump(built[0], "--kind", kind)
    assert code == 0 and rows and {r["kind"] for r in rows} == {kind}
    assert dict(reencode(r) for r in rows) == ldb_scan(built[0] / "rocksdbstore", cf, tmp_path) == built[1][cf]


def test_dump_decodes_each_field(built):
    _, rows = dump(built[0], "--kind", "trans")
    off = next(r["offsetPy"] for r in rows if "bookkeeping" not in r)
    assert rows == [
        {
            "kind": "trans",
            "offsetPy": off,
            "topic": "TxBizTopic",
            "uniqKey": TX_ID,
            "sizePy": rows[0]["sizePy"],
            "checkTimes": 0,
        },
        {"kind": "trans", "bookkeeping": "lastOffsetPy", "value": off},
    ]
    _, index = dump(built[0], "--kind", "index")
    types = {r["type"] for r in index if "type" in r}
    assert types == {"K", "T", "U"}
    assert all(r["hour"] == r["storeTime"] // HOUR * HOUR for r in index if "hour" in r)


def findings(root: Path, conf: Path | None = None) -> list[tuple[str, str]]:
    res = run("verify", "--store", root, "--broker-config", conf or broker_conf(BASE), "--format", "jsonl")
    assert res.exit_code in (0, 1) and "Traceback" not in res.stderr, res.stderr
    return [(r["kind"], r["detail"]) for r in map(json.loads, res.stdout.splitlines())]


def test_verify_a_sound_store_finds_nothing_of_it(built):
    assert [f for f in findings(built[0]) if f[0].startswith("rocksdb-store")] == []


def rewrite(root: Path, cf: str, change, compression: str | None = None):
    """The store's database changed by `change` (what is written lands in a table file at the close, compressed
    with rocksdict's default or `compression`)."""
    path = root / "rocksdbstore"
    options = rocksdict.Options(raw_mode=True)
    if compression is not None:
        options.set_compression_type(getattr(rocksdict.DBCompressionType, compression)())
    db = rocksdict.Rdict(
        str(path), options=options, column_families={c: rocksdict.Options(raw_mode=True) for c in ("timer", "trans")}
    )
    try:
        change(db if cf == "default" else db.get_column_family(cf))
    finally:
        db.close()
        (path / "rocksdict-config.json").unlink()


def test_verify_damage(built, tmp_path):
    root = copy_of(built, tmp_path)
    index = built[1]["default"]
    key = next(k for k in index if b"@TxBizTopic@U@" in k)
    timer_key = next(k for k in built[1]["timer"] if k not in CHECKPOINTS)

    def index_damage(db):
        db[key[:-8] + q(10**9)] = index[key]  # past the log
        db[key.replace(b"@TxBizTopic@", b"@OtherTopic@")] = index[key]  # another topic
        db[b"\x00garbage"] = b"x"

    rewrite(root, "default", index_damage)
    rewrite(root, "timer", lambda db: db.__setitem__(timer_key, struct.pack(">iq", 7, 44538)))
    got = findings(root)
    kinds = sorted(k for k, _ in got if k.startswith("rocksdb-store"))
    assert kinds == [
        "rocksdb-store-key",
        "rocksdb-store-mismatch",
        "rocksdb-store-mismatch",
        "rocksdb-store-past-end",
    ], got
    details = " | ".join(d for k, d in got if k == "rocksdb-store-mismatch")
    assert "topic 'OtherTopic', the record's 'TxBizTopic'" in details and "sizePy 7, the record's storeSize" in details


def test_records_checked_beside_on_the_reading_s_thread_find_what_the_caller_s_thread_finds(built, tmp_path):
    """A stopped store's records are held against the commitlog on the reading's own thread, through a Store of
    its own, while verify's other checks run: the same findings, in the same order, as checked by the caller
    (a live store's way)."""
    root = copy_of(built, tmp_path)
    timer_key = next(k for k in built[1]["timer"] if k not in CHECKPOINTS)
    rewrite(root, "timer", lambda db: db.__setitem__(timer_key, struct.pack(">iq", 7, 44538)))
    got = []
    for beside in (2, 0):
        store = Store(root, load_config(broker_conf(BASE)))
        try:
            reading = rocksdbstore_check.start_reading(store, 1 << 20, beside=beside)
            found = rocksdbstore_check.check_rocksdb_store(store, reading)
            assert (reading.checked is not None) == bool(beside)
            got.append([(f.kind, f.commitLogOffset, f.detail) for f in found])
        finally:
            store.close()
    assert got[0] == got[1] and any(kind == "rocksdb-store-mismatch" for kind, *_ in got[0])


def test_closing_a_reading_ends_its_check_beside_at_the_next_window(built, monkeypatch):
    """verify closes the reading when a check after the walk fails or Ctrl-C comes: a check on the reading's
    thread then begins no further window (it waited through every window of the commitlog)."""
    began, held = threading.Event(), []
    agreed = rocksdbstore_check.agreed

    def slow(*args):
        held.append(args)
        began.set()
        time.sleep(0.5)
        return agreed(*args)

    monkeypatch.setattr(rocksdbstore_check, "agreed", slow)
    store = Store(built[0], load_config(broker_conf(BASE)))
    try:
        reading = rocksdbstore_check.start_reading(store, 1 << 20, beside=1)
        assert began.wait(30)
        reading.close()
        windows = [w for w in rocksdbstore_check.windows(store) if w[2] is not None]
        assert len(held) == 1 and len(windows) > 1 and reading.checked is not None
    finally:
        store.close()


def test_a_bookkeeping_key_of_a_records_length_is_a_key_finding(built, tmp_path):
    """sys_topic_scan_offset_checkpoint is 32 bytes, a timer record key's length: with a value that is no int64
    the engine takes it for a record and the reference reads it as the damaged checkpoint it is (a finding,
    not a crash)."""
    root = copy_of(built, tmp_path)
    rewrite(root, "timer", lambda db: db.__setitem__(b"sys_topic_scan_offset_checkpoint", struct.pack(">iq", 100, 0)))
    got = [(k, d) for k, d in findings(root) if k.startswith("rocksdb-store")]
    assert got == [
        (
            "rocksdb-store-key",
            "RocksDB message store timer key 7379735f746f7069635f7363616e5f6f66667365745f636865636b706f696e74: "
            "sys_topic_scan_offset_checkpoint holds 12 bytes, not an int64",
        )
    ]


def test_a_layout_not_read_is_named_and_nothing_is_guessed(tmp_path):
    root = copy_store(BASE, tmp_path)
    write_db(root / "rocksdbstore", {"default": {b"lastOffsetPy": q(1)}, "timer": {b"a" * 9: b"b" * 12}})
    one_line_error(
        run("dump", "rocksdbstore", "--store", root), "column families default, timer", "not the one-database layout"
    )
    info = json.loads(run("info", "--store", root, "--broker-config", broker_conf(BASE), "--format", "json").stdout)
    part = next(p for p in info["parts"] if p["kind"] == "rocksdb-message-store")
    assert not part["read"] and "not the one-database layout" in part["why"] and "rocksdbStore" not in info
    assert not [f for f in findings(root) if f[0].startswith("rocksdb-store")]


def test_info_counts_each_kind(built):
    res = run("info", "--store", built[0], "--broker-config", broker_conf(BASE), "--format", "json")
    rs = json.loads(res.stdout)["rocksdbStore"]
    want = {
        k: sum(1 for key in built[1][cf] if key not in (b"lastOffsetPy", b"lastStoreTimeStamp", *CHECKPOINTS))
        for k, cf in (("index", "default"), ("timer", "timer"), ("trans", "trans"))
    }
    assert rs["records"] == want
    assert rs["lastOffsetPy"] == {
        "index": struct.unpack(">q", built[1]["default"][b"lastOffsetPy"])[0],
        "trans": struct.unpack(">q", built[1]["trans"][b"lastOffsetPy"])[0],
    }


def test_dispatch_resumes_at_the_least_dispatch_store(built, tmp_path):
    root = copy_of(built, tmp_path)
    rewrite(root, "trans", lambda db: db.__setitem__(b"lastOffsetPy", q(44538)))
    store = Store(root, load_config(broker_conf(BASE)))
    assert recovery.dispatch_start(store, 10**9) == 44538
    assert recovery.dispatch_start(store, 100) == 100
    conf = tmp_path / "off.conf"  # the broker ignores a store it does not use
    conf.write_text(broker_conf(BASE).read_text() + "\ntransRocksDBEnable=false\n")
    index_last = struct.unpack(">q", built[1]["default"][b"lastOffsetPy"])[0]
    assert 44538 < index_last and recovery.dispatch_start(Store(root, load_config(conf)), 10**9) == index_last


def without_index_files(built, tmp_path: Path) -> tuple[Path, Path]:
    root = copy_of(built, tmp_path)
    for p in (root / "index").iterdir():
        p.unlink()
    conf = tmp_path / "broker.conf"
    conf.write_text(broker_conf(BASE).read_text() + "\nindexRocksDBEnable=true\nindexFileWriteEnable=false\n")
    return root, conf


def test_an_empty_index_dir_by_design_is_no_finding(built, tmp_path):
    root, conf = without_index_files(built, tmp_path)
    assert "index-missing" not in {k for k, _ in findings(root, conf)}
    assert "index-missing" in {k for k, _ in findings(root)}  # written index files expected: their absence is


def test_query_key_and_msgid_lookup_use_the_rocksdb_index(built, tmp_path):
    root, conf = without_index_files(built, tmp_path)
    m = next(
        m for m in truth(BASE, "truth-messages.jsonl") if m["topic"] == "MixedTopic" and m["properties"].get("KEYS")
    )
    key = m["properties"]["KEYS"].split(" ")[0]
    res = run("query", "key", "MixedTopic", key, "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    offsets = [json.loads(line)["commitLogOffset"] for line in res.stdout.splitlines()]
    want = sorted(
        x["commitLogOffset"]
        for x in truth(BASE, "truth-messages.jsonl")
        if x["topic"] == "MixedTopic" and key in x["properties"].get("KEYS", "").split(" ")
    )
    assert offsets == want
    uniq = m["properties"]["UNIQ_KEY"]
    res = run("msgid", "lookup", uniq, "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0 and [json.loads(l)["commitLogOffset"] for l in res.stdout.splitlines()] == [
        m["commitLogOffset"]
    ]


def test_the_rocksdb_index_answers_at_most_max_msgs_num_batch_and_nothing_for_max_0(built, tmp_path):
    """IndexRocksDBStore.queryOffset caps maxNum at maxMsgsNumBatch and answers nothing (null) for maxNum <= 0, as
    the index files' IndexService.queryOffset caps it (found by the lookups review: 17 offsets with
    maxMsgsNumBatch=5, and every match but the last for --max -1)."""
    root, conf = without_index_files(built, tmp_path)
    words = Counter(
        w
        for m in truth(BASE, "truth-messages.jsonl")
        if m["topic"] == "MixedTopic"
        for w in m["properties"].get("KEYS", "").split(" ")
        if w
    )
    key = words.most_common(1)[0][0]  # (many messages: more than the cap)
    two = tmp_path / "two.conf"
    two.write_text(Path(conf).read_text() + "\nmaxMsgsNumBatch=2\n")
    res = run("query", "key", "MixedTopic", key, "--store", root, "--broker-config", two, "--format", "jsonl")
    assert words[key] > 2
    assert res.exit_code == 0 and len(res.stdout.splitlines()) == 2
    for max_num in ("0", "-1"):
        res = run("query", "key", "MixedTopic", key, "--max", max_num, "--store", root, "--broker-config", conf)
        assert res.stdout == ""


def test_info_line_and_a_dump_meeting_a_garbage_key(built, tmp_path):
    root = copy_of(built, tmp_path)
    rewrite(root, "trans", lambda db: db.__setitem__(b"\x00\x00\x00\x00\x00\x00\x00\x01junk", b"\x01"))
    res = run("info", "--store", root, "--broker-config", broker_conf(BASE), "--format", "table")
    text = " ".join(res.stdout.split())  # the table's line wraps at the terminal's width
    n = {
        cf: sum(1 for k in built[1][cf] if k not in (b"lastOffsetPy", b"lastStoreTimeStamp", *CHECKPOINTS))
        for cf in ("default", "timer", "trans")
    }
    last = {cf: struct.unpack(">q", built[1][cf][b"lastOffsetPy"])[0] for cf in ("default", "trans")}
    assert (
        f"rocksdb {root / 'rocksdbstore'}: {n['default']} index, {n['timer']} timer, {n['trans'] + 1} "
        f"transaction record(s); lastOffsetPy index {last['default']}, trans {last['trans']}"
    ) in text
    res = run("dump", "rocksdbstore", "--kind", "trans", "--store", root, "--format", "jsonl")
    assert res.exit_code == 1 and res.stderr == (
        "rmqctl: 1 key(s) of the RocksDB message store are not of their kind's layout (first: trans key "
        "00000000000000016a756e6b: a 12-byte key with a 1-byte value is not a transaction record)\n"
    )


def test_abnormal_recovery_starts_where_every_dispatch_store_matches(built, tmp_path):
    root = copy_of(built, tmp_path)
    (root / "abort").write_bytes(b"")
    conf = load_config(broker_conf(BASE))
    assert recovery.recovery_start(Store(root, conf)) == 1  # both lastOffsetPy lie in the second file
    rewrite(root, "trans", lambda db: db.__setitem__(b"lastOffsetPy", q(44538)))
    assert recovery.recovery_start(Store(root, conf)) == 0
    detail = next(d for k, d in findings(root) if k == "abnormal-recovery")
    assert "Abnormal recovery starts at 00000000000000000000" in detail


def test_a_last_offset_off_the_log_is_a_finding(built, tmp_path):
    root = copy_of(built, tmp_path)
    rewrite(root, "default", lambda db: db.__setitem__(b"lastOffsetPy", q(10**9)))
    got = [(k, d) for k, d in findings(root) if k.startswith("rocksdb-store")]
    assert got == [
        (
            "rocksdb-store-bookkeeping",
            f"RocksDB message store index lastOffsetPy {10**9} is past the end "
            "of the commitlog (524288): dispatch to it would resume there",
        )
    ]


def _changed(kind: str, key: bytes, value: bytes) -> list[tuple[bytes, bytes]]:
    """The record with its uniq key's last character changed, with its number (storeTime or sizePy) off by one,
    and with the key's head (hour bucket, delayTime) off by a minute (the bucket: by three hours, past what any
    zone's clock change allows)."""
    at = len(key) - 10 if kind == "index" else len(key) - 1
    other = key[:at] + bytes([key[at] ^ 1]) + key[at + 1 :]
    number = {"index": (0, ">q"), "timer": (0, ">i"), "trans": (4, ">i")}[kind]
    moved = bytearray(value)
    struct.pack_into(number[1], moved, number[0], struct.unpack_from(number[1], value, number[0])[0] + 1)
    out = [(other, value), (key, bytes(moved))]
    if kind != "trans":
        step = 3 * HOUR if kind == "index" else 60_000
        out.append((q(struct.unpack_from(">q", key)[0] + step) + key[8:], value))
    return out


@pytest.mark.parametrize("kind", ["index", "timer", "trans"])
def test_the_engine_agrees_with_every_sound_record_and_no_changed_one(built, kind):
    """The compiled check passes exactly the keys the reference finds sound, so the reference is not what passes
    them; a changed uniq key or number is never passed (the reference then names it)."""
    store = Store(built[0], load_config(broker_conf(BASE)))
    items = list(store.message_rocksdb.items(kind))
    records = [i for i, (k, v) in enumerate(items) if entry(kind, k, v).record is not None]
    assert records and sorted(_agreed_keys(store, kind, items)) == sorted(items[i][0] for i in records)
    changed = [c for i in records for c in _changed(kind, *items[i])]
    assert _agreed_keys(store, kind, changed) == []
    store.close()


def _agreed_keys(store: Store, kind: str, items: list[tuple[bytes, bytes]]) -> list[bytes]:
    records, _ = parsed(kind, Pairs.of(items))
    return [records.entry(i).key for i in np.flatnonzero(agreed(store, records)).tolist()]


def split_copy(built, tmp_path: Path) -> Path:
    """The built store in the split layout (apache/rocketmq e75c9060): the same index and transaction keys,
    each kind in a database of its own with only `default` (IndexMessageRocksDBStorage,
    TransMessageRocksDBStorage), no one-database directory."""
    root = copy_of(built, tmp_path)
    shutil.rmtree(root / "rocksdbstore")
    write_db(root / "RocksDBIndexStore", {"default": built[1]["default"]})
    write_db(root / "RocksDBTransStore", {"default": built[1]["trans"]})
    return root


def test_the_split_layout_is_read_as_ldb_reads_it_and_verified(built, tmp_path):
    root = split_copy(built, tmp_path)
    for kind, name, cf in (("index", "RocksDBIndexStore", "default"), ("trans", "RocksDBTransStore", "trans")):
        code, rows = dump(root, "--kind", kind)
        assert code == 0 and rows and {r["kind"] for r in rows} == {kind}
        assert dict(reencode(r) for r in rows) == ldb_scan(root / name, "default", tmp_path) == built[1][cf]
    info = json.loads(run("info", "--store", root, "--broker-config", broker_conf(BASE), "--format", "json").stdout)
    parts = sorted(
        (p["path"].rsplit("/", 1)[1], p["read"]) for p in info["parts"] if p["kind"] == "rocksdb-message-store"
    )
    assert parts == [("RocksDBIndexStore", True), ("RocksDBTransStore", True)]
    assert set(info["rocksdbStore"]["records"]) == {"index", "trans"}
    assert [f for f in findings(root) if f[0].startswith("rocksdb-store")] == []
    key, value = next((k, v) for k, v in built[1]["trans"].items() if k != b"lastOffsetPy")
    db = rocksdict.Rdict(str(root / "RocksDBTransStore"), options=rocksdict.Options(raw_mode=True))
    db[key] = value[:4] + struct.pack(">i", 7)
    db.close()
    (root / "RocksDBTransStore" / "rocksdict-config.json").unlink()
    got = [d for k, d in findings(root) if k.startswith("rocksdb-store")]
    assert len(got) == 1 and "sizePy 7, the record's storeSize" in got[0]


def test_query_key_uses_the_split_layout_s_index(built, tmp_path):
    root = split_copy(built, tmp_path)
    for p in (root / "index").iterdir():
        p.unlink()
    conf = tmp_path / "broker.conf"
    conf.write_text(broker_conf(BASE).read_text() + "\nindexRocksDBEnable=true\nindexFileWriteEnable=false\n")
    m = next(
        m for m in truth(BASE, "truth-messages.jsonl") if m["topic"] == "MixedTopic" and m["properties"].get("KEYS")
    )
    key = m["properties"]["KEYS"].split(" ")[0]
    res = run("query", "key", "MixedTopic", key, "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0 and m["commitLogOffset"] in [
        json.loads(x)["commitLogOffset"] for x in res.stdout.splitlines()
    ]


def test_a_split_database_of_another_layout_or_both_layouts_are_named_and_not_read(built, tmp_path):
    root = copy_store(BASE, tmp_path / "other")
    write_db(root / "RocksDBIndexStore", {"default": {b"lastOffsetPy": q(1)}, "timer": {}})
    one_line_error(
        run("dump", "rocksdbstore", "--store", root),
        "split layout (index database): not read",
        "column families default, timer: not the split layout's one family",
    )
    assert not [f for f in findings(root) if f[0].startswith("rocksdb-store")]
    both = split_copy(built, tmp_path / "both")
    write_db(both / "rocksdbstore", built[1])
    info = json.loads(run("info", "--store", both, "--broker-config", broker_conf(BASE), "--format", "json").stdout)
    parts = [(p["read"], p["why"]) for p in info["parts"] if p["kind"] == "rocksdb-message-store"]
    assert (
        len(parts) == 3
        and all(not read and "both the one-database and the split layout" in why for read, why in parts)
        and "rocksdbStore" not in info
    )


def _damage(db: Path, how: str):
    """One way a RocksDB directory is found damaged: a file its MANIFEST needs gone or its bytes changed, or a
    column family dropped (a database that is no longer the one-database layout)."""
    if how == "drop trans":
        handle = rocksdict.Rdict(
            str(db),
            options=rocksdict.Options(raw_mode=True),
            column_families={c: rocksdict.Options(raw_mode=True) for c in ("timer", "trans")},
        )
        handle.drop_column_family("trans")
        handle.close()
        (db / "rocksdict-config.json").unlink()
        return
    name, action = how.split(" ")
    path = next(p for p in sorted(db.iterdir()) if p.name.startswith(name) or p.suffix == name)
    if action == "gone":
        path.unlink()
    else:
        data = bytearray(path.read_bytes())
        for at in range(0, len(data), max(1, len(data) // 16)):
            data[at] ^= 0x5A
        path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "how",
    [
        "CURRENT gone",
        "CURRENT changed",
        "MANIFEST- gone",
        "MANIFEST- changed",
        ".sst gone",
        ".sst changed",
        "drop trans",
    ],
)
def test_a_damaged_database_is_one_line_or_findings_never_a_crash(built, tmp_path, how):
    """Every command meeting the damage answers (exit 0/1) or says it in one line (exit 2), never a traceback;
    verify never passes a database it could not read (a dropped family is a layout not read, named by info)."""
    root = copy_of(built, tmp_path)
    _damage(root / "rocksdbstore", how)
    conf = broker_conf(BASE)
    for args in (
        ["verify"],
        ["info"],
        ["dump", "rocksdbstore"],
        ["query", "key", "TopicTest", "k"],
        ["msgid", "lookup", "C0A8000A00002A9F0000000000000000"],
    ):
        res = run(*args, "--store", root, "--broker-config", conf)
        assert "Traceback" not in res.stderr and res.exit_code in (0, 1, 2), (args, res.exit_code, res.stderr)
        if res.exit_code == 2:
            one_line_error(res, "rocksdbstore")
    assert run("verify", "--store", root, "--broker-config", conf).exit_code != 0 or how == "drop trans"


def test_the_hour_bucket_is_the_store_time_s_hour_in_any_zone(built, tmp_path):
    """IndexRocksDBRecord.getKeyBytes keys a record by MixAll.dealTimeToHourStamps(storeTime), whose body (and
    so its zone) no stored apache/rocketmq revision holds: a bucket floored in a zone half an hour off UTC
    passes, so does one floored on a fall-back night (the repeated hour resolved to its first occurrence, up to
    2 h before the store time) and one floored into a shifted hour (up to an hour after); one 3 h off the store
    time is a finding."""
    root = copy_of(built, tmp_path)
    index = built[1]["default"]
    keys = [k for k in index if b"@U@" in k][:4]
    store_times = [struct.unpack(">q", index[k])[0] for k in keys]
    half_hour = 30 * 60 * 1000
    india = (store_times[0] + 11 * half_hour) // HOUR * HOUR - 11 * half_hour  # UTC+05:30
    fall_back = store_times[1] // HOUR * HOUR - HOUR  # 01:xx standard time floored to 01:00 daylight time
    shifted = store_times[2] // HOUR * HOUR + HOUR - 60_000
    late = store_times[3] // HOUR * HOUR - 3 * HOUR

    def buckets(db):
        for key, bucket in zip(keys, (india, fall_back, shifted, late)):
            del db[key]
            db[q(bucket) + key[8:]] = index[key]

    rewrite(root, "default", buckets)
    got = [d for k, d in findings(root) if k.startswith("rocksdb-store")]
    assert got == [
        f"RocksDB message store index record {keys[3][9:-9].decode()} at commitlog "
        f"offset {struct.unpack('>q', keys[3][-8:])[0]}: hour bucket {late} is not the hour its storeTime "
        f"{store_times[3]} falls in"
    ]


def test_a_timer_record_s_delay_time_is_its_message_s_timer_out_ms(built, tmp_path):
    """TimerMessageRocksDBStore.scanSysTimerTopic keys the record by Long.parseLong(TIMER_OUT_MS) of the timer
    message it names."""
    root = copy_of(built, tmp_path)
    key, value = next((k, v) for k, v in built[1]["timer"].items() if k not in CHECKPOINTS)
    rewrite(root, "timer", lambda db: (db.__delitem__(key), db.__setitem__(q(TIMER_OUT_MS + 1000) + key[8:], value)))
    got = [d for k, d in findings(root) if k.startswith("rocksdb-store")]
    offset = struct.unpack(">q", value[4:])[0]
    assert got == [
        f"RocksDB message store timer record {key[8:].decode()} at commitlog offset {offset}: delayTime "
        f"{TIMER_OUT_MS + 1000}, the record's TIMER_OUT_MS '{TIMER_OUT_MS}'"
    ]


def test_the_runs_are_spilled_to_scratch_and_removed(built, tmp_path, monkeypatch):
    """verify's merge spills each sorted batch among this user's RocksDB views and leaves nothing behind."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    store = Store(built[0], load_config(broker_conf(BASE)))
    runs = RecordRuns(store.message_rocksdb)
    runs.read()
    views = tmp_path / f"rmqctl-rocksdb-{os.getuid()}"
    assert runs.error is None and runs.directory.parent == views and len(runs.runs) == 3  # a run per kind here
    assert {p.name for p in runs.directory.iterdir()} >= {"0-offsets", "0-keys", "2-values"}
    runs.close()
    store.close()
    assert not runs.directory.exists()
    assert [f for f in findings(built[0]) if f[0].startswith("rocksdb-store")] == []
    assert not [p for p in views.iterdir() if "-rocksdbstore-" in p.name]


def test_a_run_changed_under_verify_is_an_error_not_a_pass(built):
    """A run's columns are parsed again from its spilled keys: keys that no longer parse (the scratch files
    changed while verify ran) are one error naming the scratch directory, never records passed or misread."""
    store = Store(built[0], load_config(broker_conf(BASE)))
    runs = RecordRuns(store.message_rocksdb)
    try:
        runs.read()
        keys = runs.directory / "0-keys"
        keys.write_bytes(b"\xff" * keys.stat().st_size)  # no longer UTF-8 between the @s
        with pytest.raises(StoreError, match="verify's spilled run 0 changed while it was read"):
            check_runs(store, runs)
    finally:
        runs.close()
        store.close()


@pytest.mark.parametrize("frozen", [True, False])
@pytest.mark.parametrize("how", [None, ".sst changed"])
def test_verify_leaves_the_collector_as_it_found_it(built, tmp_path, how, frozen):
    """The reading pauses the collector only while it reads, and never freezes or unfreezes: whether the
    launcher (or a library user) froze the objects it holds, and whether the collector runs, are the same after
    verify, also when the reading raises (a damaged table). (Frozen objects that die leave the frozen
    generation, so its count is compared with none, not with the count before.)"""
    root = copy_of(built, tmp_path)
    if how:
        _damage(root / "rocksdbstore", how)
    if frozen:
        gc.freeze()
    before = (gc.isenabled(), gc.get_freeze_count() > 0)
    raised = None
    try:
        store = Store(root, load_config(broker_conf(BASE)))
        try:
            verify(store)
        except StoreError as err:
            raised = err
        finally:
            store.close()
        assert (gc.isenabled(), gc.get_freeze_count() > 0) == before == (True, frozen)
        assert (raised is not None) == bool(how)  # the damaged table is said (in one line by the CLI)
    finally:
        gc.unfreeze()


def test_a_split_layout_with_one_database_not_read_is_not_read_anywhere(built, tmp_path):
    """The index database readable, the transaction one with an extra family: the split layout is read whole
    or not at all, so info lists every split part as not read naming the other database, dump says so in one
    line, verify checks none of it, and dispatch resumes as if it were absent (as for a one-database store
    not read)."""
    root = split_copy(built, tmp_path)
    shutil.rmtree(root / "RocksDBTransStore")
    write_db(root / "RocksDBTransStore", {"default": built[1]["trans"], "timer": {}})
    conf = broker_conf(BASE)
    info = json.loads(run("info", "--store", root, "--broker-config", conf, "--format", "json").stdout)
    parts = {Path(p["path"]).name: (p["read"], p["why"]) for p in info["parts"] if p["kind"] == "rocksdb-message-store"}
    problem = "column families default, timer: not the split layout's one family (default)"
    assert (
        parts
        == {
            "RocksDBIndexStore": (
                False,
                f"RocksDBTransStore/ beside it is not read ({problem}): the split layout is read whole or not at all",
            ),
            "RocksDBTransStore": (False, problem),
        }
        and "rocksdbStore" not in info
    )
    for kind in ("index", "trans"):
        one_line_error(run("dump", "rocksdbstore", "--kind", kind, "--store", root), "not read")
    assert not [f for f in findings(root) if f[0].startswith("rocksdb-store")]


def test_dump_of_timer_records_on_the_split_layout_says_they_are_not_read(built, tmp_path):
    """The split layout keeps no timer database here: TimerMessageRocksDBStore's records are in kvStore/,
    another layout, not read; asked for them, dump says so rather than printing nothing."""
    root = split_copy(built, tmp_path)
    one_line_error(run("dump", "rocksdbstore", "--kind", "timer", "--store", root), "kvStore", "not read")
    code, rows = dump(root)
    assert code == 0 and rows and {r["kind"] for r in rows} == {"index", "trans"}


def test_a_record_naming_the_last_offset_a_long_holds_is_past_the_end(built, tmp_path):
    """offsetPy Long.MAX_VALUE is past every file, in the last window like any other offset past the end."""
    root = copy_of(built, tmp_path)
    index = built[1]["default"]
    key = next(k for k in index if b"@U@" in k)
    rewrite(root, "default", lambda db: db.__setitem__(key[:-8] + q(LONG_MAX), index[key]))
    got = [d for k, d in findings(root) if k.startswith("rocksdb-store")]
    assert got == [
        f"RocksDB message store index record {key[9:-9].decode()} names commitlog offset {LONG_MAX}, past the "
        "end of the commitlog (524288)"
    ]


def test_a_negative_offset_is_named_per_record(built, tmp_path):
    """A negative offsetPy is no expired record (no cleanup makes one, and the store's first file starts at 0
    here): verify names each such record."""
    root = copy_of(built, tmp_path)
    index = built[1]["default"]
    keys = [k for k in index if b"@U@" in k]

    def damage(db):
        db[keys[0][:-8] + q(-1)] = index[keys[0]]
        db[keys[1][:-8] + q(-(1 << 40))] = index[keys[1]]

    rewrite(root, "default", damage)
    got = sorted(d for k, d in findings(root) if k.startswith("rocksdb-store"))
    assert got == sorted(
        f"RocksDB message store index record {k[9:-9].decode()} names commitlog offset {off}, which is negative: "
        "no record starts there"
        for k, off in ((keys[0], -1), (keys[1], -(1 << 40)))
    ), got


def test_runs_of_a_few_keys_each_hold_no_file_each_and_find_the_same(built, tmp_path):
    """The merge over hundreds of runs (a run a key here, as a database of tens of millions of keys makes
    hundreds of 65,536-key runs) keeps no file open per run and finds exactly what one run per kind finds:
    damage, records past the end and at Long.MAX_VALUE, and a negative offset."""
    root = copy_of(built, tmp_path)
    index = built[1]["default"]
    keys = [k for k in index if b"@U@" in k]

    def damage(db):
        db[keys[0][:-8] + q(10**9)] = index[keys[0]]  # past the log
        db[keys[1][:-8] + q(LONG_MAX)] = index[keys[1]]
        db[keys[2][:-8] + q(-1)] = index[keys[2]]  # negative: named, not expired
        db[keys[3][:-30] + b"0" * 21 + keys[3][-9:]] = index[keys[3]]  # another uniq key

    rewrite(root, "default", damage)
    store = Store(root, load_config(broker_conf(BASE)))

    def merged(batch: int) -> tuple[int, int, list[str]]:
        open_before = len(os.listdir("/proc/self/fd"))
        runs = RecordRuns(store.message_rocksdb, batch)
        runs.read()
        opened = len(os.listdir("/proc/self/fd")) - open_before
        try:
            return len(runs.runs), opened, [f.detail for f in check_runs(store, runs)]
        finally:
            runs.close()

    try:
        store.message_rocksdb.open()
        few, many = merged(1 << 16), merged(1)
    finally:
        store.close()
    assert few[0] == 3 and many[0] > 300 and many[1] <= few[1] + 1, (few[:2], many[:2])
    assert many[2] == few[2] and len(few[2]) == 4 and sum("past the end" in d for d in few[2]) == 2, few[2]
    assert sum("which is negative" in d for d in few[2]) == 1, few[2]


def test_runs_within_the_memory_stay_there_and_find_what_spilled_runs_find(built, tmp_path):
    """Runs are kept in memory while they fit its budget and spilled past it: all kept (no file written), none
    kept, or the first few kept and the rest spilled, the same findings in the same order (damage in every
    kind, records past the end, a negative offset)."""
    root = copy_of(built, tmp_path)
    index, timer = built[1]["default"], built[1]["timer"]
    keys = [k for k in index if b"@U@" in k or b"@K@" in k]
    timed = next(k for k in timer if k not in CHECKPOINTS)

    def damage(db):
        for key in keys[::5]:
            db[key] = q(struct.unpack(">q", index[key])[0] + 1)  # storeTime off by one
        db[keys[0][:-8] + q(10**9)] = index[keys[0]]  # past the log
        db[keys[2][:-8] + q(-1)] = index[keys[2]]  # negative

    rewrite(root, "default", damage)
    rewrite(
        root, "timer", lambda db: db.__setitem__(timed, struct.pack(">iq", 1, struct.unpack(">q", timer[timed][4:])[0]))
    )
    store = Store(root, load_config(broker_conf(BASE)))

    def checked(memory: int) -> tuple[int, int, list[str]]:
        runs = RecordRuns(store.message_rocksdb, 64, memory)
        runs.read()
        try:
            spilled = len({p.name.split("-")[0] for p in runs.directory.iterdir()})
            details = [f.detail for f in check_runs(store, runs)]
            assert runs._kept_bytes == 0 and not runs._kept  # every kept run given back once read to its end
            return len(runs.runs), spilled, details
        finally:
            runs.close()

    try:
        store.message_rocksdb.open()
        kept, spilled, some = checked(1 << 30), checked(0), checked(20_000)
    finally:
        store.close()
    assert kept[0] == spilled[0] == some[0] > 10 and (kept[1], spilled[1]) == (0, spilled[0]), (kept[:2], spilled[:2])
    assert 0 < some[1] < some[0], some[:2]
    assert kept[2] == spilled[2] == some[2] and len(kept[2]) == len(keys[::5]) + 3, kept[2]


def test_windows_checked_on_threads_find_what_one_thread_finds_in_its_order(built, tmp_path, monkeypatch):
    """check_runs with jobs > 1 holds the next windows against the commitlog on threads: over many small windows
    (a few records each) with changed records in every kind spread across them, it files exactly the findings
    one thread files, in the same order."""
    root = copy_of(built, tmp_path)
    index, timer = built[1]["default"], built[1]["timer"]
    keys = [k for k in index if b"@U@" in k or b"@K@" in k][::7]
    timed = next(k for k in timer if k not in CHECKPOINTS)

    def damage(db):
        for key in keys:
            db[key] = q(struct.unpack(">q", index[key])[0] + 1)  # storeTime off by one

    rewrite(root, "default", damage)
    rewrite(
        root, "timer", lambda db: db.__setitem__(timed, struct.pack(">iq", 1, struct.unpack(">q", timer[timed][4:])[0]))
    )
    monkeypatch.setattr(rocksdbstore_check, "WINDOW", 4096)
    store = Store(root, load_config(broker_conf(BASE)))

    def details(jobs: int) -> list[str]:
        runs = RecordRuns(store.message_rocksdb, 16)
        runs.read()
        try:
            return [f.detail for f in check_runs(store, runs, jobs)]
        finally:
            runs.close()

    try:
        one, three = details(1), details(3)
    finally:
        store.close()
    assert len(one) == len(keys) + 1 and len(keys) > 20 and three == one, (len(one), len(keys))
    assert len(rocksdbstore_check.windows(store)) > 100


def test_slices_are_bounded_and_together_every_record_in_order(built):
    """Where no file is, the records are taken about a batch at a time (each run's share), in commitlog order,
    every one once."""
    store = Store(built[0], load_config(broker_conf(BASE)))
    line = (int(np.iinfo(np.int64).min), LONG_MAX)
    try:
        whole, sliced = RecordRuns(store.message_rocksdb, 64), RecordRuns(store.message_rocksdb, 64)
        whole.read(), sliced.read()
        every = whole.between(*line)
        slices = list(sliced.slices(*line))
        runs = len(sliced.runs)
        whole.close(), sliced.close()
    finally:
        store.close()
    assert runs > 10 and len(slices) > 10 and max(len(s.offsets) for s in slices) <= 2 * 64
    joined = np.concatenate([s.offsets for s in slices])
    assert np.array_equal(joined, every.offsets) and len(joined) > 1000


def test_the_reading_thread_blocks_sigint(built):
    """verify's RocksDB reading runs in a thread of its own with SIGINT blocked, whatever its caller's mask:
    Ctrl-C is the main thread's."""
    store = Store(built[0], load_config(broker_conf(BASE)))
    db, masks = store.message_rocksdb, []
    real_batches = db.batches

    def batches(kind, size):
        masks.append(signal.pthread_sigmask(signal.SIG_BLOCK, set()))
        return real_batches(kind, size)

    db.batches = batches
    try:
        reading = Reading(db)
        assert len(reading.wait().runs) == 3
        reading.close()
    finally:
        store.close()
    assert masks and all(signal.SIGINT in m for m in masks)


@pytest.mark.parametrize("cut", ["offsets", "values"])
def test_a_run_cut_short_is_an_error_not_a_pass(built, cut):
    """A run's file shorter than what was written (its disk failed under it) is one error naming the scratch
    directory: its records are never taken as fewer."""
    store = Store(built[0], load_config(broker_conf(BASE)))
    runs = RecordRuns(store.message_rocksdb)
    try:
        runs.read()
        spilled = runs.directory / f"0-{cut}"
        os.truncate(spilled, 8)
        with pytest.raises(StoreError, match="verify's spilled run 0 holds fewer (records|bytes) than were written"):
            check_runs(store, runs)
    finally:
        runs.close()
        store.close()


def test_a_run_whose_offsets_changed_is_an_error_not_a_pass(built):
    """The offsets a run is windowed by are its keys' own, parsed again: offsets changed under verify (still in
    order) are an error, never records checked against other records."""
    store = Store(built[0], load_config(broker_conf(BASE)))
    runs = RecordRuns(store.message_rocksdb)
    try:
        runs.read()
        spilled = runs.directory / "0-offsets"
        (np.fromfile(spilled, np.int64) + 1).tofile(spilled)
        with pytest.raises(StoreError, match="verify's spilled run 0 changed while it was read"):
            check_runs(store, runs)
    finally:
        runs.close()
        store.close()


@pytest.mark.tmpfs
def test_scratch_that_fills_up_is_one_line_not_a_pass(built, tmp_path, monkeypatch):
    """The runs past verify's memory are spilled through writes that raise when the scratch filesystem is full
    (a 16 KiB tmpfs here, every run past the memory): verify stops with one line and exit 2, never a run cut
    short and checked as if whole."""
    monkeypatch.setattr(  # every run past no memory, the index records' too (no digest)
        verify_module,
        "start_reading",
        lambda store, memory, digest, *when: rocksdbstore_check.start_reading(store, 0, False, *when),
    )
    with tmpfs_at(tmp_path / "scratch", "16k") as scratch:
        monkeypatch.setattr(tempfile, "tempdir", str(scratch))
        res = run("verify", "--store", built[0], "--broker-config", broker_conf(BASE))
        line = one_line_error(res, "No space left on device")
    assert res.exit_code == 2, line


@pytest.mark.parametrize("whole", [True, False])
def test_the_runs_and_the_record_table_share_verify_s_memory(built, monkeypatch, whole):
    """verify's --memory bounds the record table and the RocksDB message store's runs kept in memory together
    (both live until the checks after the walk), never the whole budget twice: half each, or an eighth for the
    runs where the index records are summed instead (a whole walk: IndexDigest)."""
    asked = {}

    def reading(store, memory, digest, *when):
        asked["runs"] = memory
        return rocksdbstore_check.start_reading(store, memory, digest, *when)

    def table(memory):
        asked["table"] = memory
        return window_records(memory)

    monkeypatch.setattr(verify_module, "start_reading", reading)
    monkeypatch.setattr(verify_module, "window_records", table)
    store = Store(built[0], load_config(broker_conf(BASE)))
    try:
        verify_module.verify(store, memory=64 << 20, **({} if whole else {"start": 0}))
    finally:
        store.close()
    assert asked == ({"runs": 8 << 20, "table": 56 << 20} if whole else {"runs": 32 << 20, "table": 32 << 20})


def _table_db(
    path: Path, version: int, compression: str, flushes: int, tail: int = 0, layout: str = "plain", checksum="xxh3"
):
    """A database of index records in `version` and `compression`, written in `flushes` table files, each
    rewriting every record with another store time and deleting one (its value in that file dropped), then
    `tail` records left only in its WAL (a writer that did not flush). `layout`: plain, "hash" (data blocks with
    the hash map RocketMQ's option factories ask for) or "index-restarts" (index entries delta-encoded).
    Returns every pair the table files hold, older versions too."""
    o = rocksdict.Options(raw_mode=True)
    table = rocksdict.BlockBasedOptions()
    table.set_format_version(version)
    table.set_checksum_type(getattr(rocksdict.ChecksumType, checksum)())
    if layout == "hash":
        table.set_data_block_index_type(rocksdict.DataBlockIndexType.binary_and_hash())
    elif layout == "index-restarts":
        table.set_index_block_restart_interval(16)
    o.set_block_based_table_factory(table)
    o.set_compression_type(getattr(rocksdict.DBCompressionType, compression)())
    o.create_if_missing(True)
    db, held = rocksdict.Rdict(str(path), options=o), []

    def record(i):
        hour = 3600000 * (i % 7)
        return q(hour) + b"@T@K@key-%d@u-%d@" % (i, i) + q(i * 100), hour

    for f in range(flushes):
        for i in range(3000):
            key, hour = record(i)
            db[key] = q(hour + f + 1)
            if i:
                held.append((key, q(hour + f + 1)))
        del db[record(0)[0]]
        db.flush()
    db.close()
    (path / "rocksdict-config.json").unlink()
    if tail:  # written by a process killed before it closed the database: the values are only in its WAL
        code = (
            "import os, sys, rocksdict; db = rocksdict.Rdict(sys.argv[1], options=rocksdict.Options(raw_mode=True)); "
            f"[db.put(b'tail%d' % i, b'v') for i in range({tail})]; os._exit(0)"
        )
        subprocess.run([sys.executable, "-c", code, str(path)], check=True)
        (path / "rocksdict-config.json").unlink(missing_ok=True)
    return held


LONG_MAX = (1 << 63) - 1


@pytest.mark.parametrize(
    "version, compression, layout, checksum",
    [(6, c, layout, "xxh3") for c in ("none", "lz4", "lz4hc", "zstd") for layout in ("plain", "hash", "index-restarts")]
    + [(v, "lz4", "plain", "xxh3") for v in (2, 4, 5)]
    + [(5, "zstd", "hash", "xxh3")]
    + [(v, "lz4", "plain", c) for v in (2, 6) for c in ("crc32c", "xxhash", "xxhash64", "no_checksum")],
)
@pytest.mark.parametrize("flushes", [1, 3])
def test_the_table_files_read_directly_give_the_digest_of_every_value_they_hold(
    tmp_path, version, compression, layout, flushes, checksum
):
    """The digest of the table files read directly (sstable, engine.table_index_digest) is the digest of
    every pair they hold, older versions of a rewritten key too (what a digest may take: each live record is
    among them), and in a database written once, that of RocksDB's own iteration."""

    held = _table_db(tmp_path / "db", version, compression, flushes=flushes, layout=layout, checksum=checksum)
    direct, every, live = _three_digests(tmp_path / "db", held)
    assert direct.found == every.found and direct.found.count == flushes * 2999 and not direct.found.doubtful
    assert (direct.found == live.found) == (flushes == 1)


@pytest.mark.parametrize("group_bytes", [1, 5000, 1 << 30])
def test_a_table_is_read_directly_in_groups_of_its_blocks(tmp_path, monkeypatch, group_bytes):
    """sstable.groups hands the kernel every data block once, in order, as many at a time as fit GROUP_BYTES
    (one at least); the digest is the same however they are grouped, and a block failing its checksum in a
    later group is refused."""
    from rmqctl import sstable

    monkeypatch.setattr(sstable, "GROUP_BYTES", group_bytes)
    held = _table_db(tmp_path / "db", 6, "lz4", flushes=1)
    direct, every, _ = _three_digests(tmp_path / "db", held)
    assert direct.found == every.found and not direct.found.doubtful
    (path,) = (tmp_path / "db").glob("*.sst")
    t = sstable.read_table(path)
    parts = [(offsets, sizes) for _, offsets, sizes, *_ in sstable.groups(t)]
    assert np.array_equal(np.concatenate([o for o, _ in parts]), t.offsets) and len(t.offsets) > 2
    assert all(len(o) == 1 or sizes.sum() <= group_bytes for o, sizes in parts)
    expected = {1: len(t.offsets), 1 << 30: 1}.get(group_bytes)
    assert len(parts) == expected if expected else 1 < len(parts) < len(t.offsets)
    data = bytearray(path.read_bytes())
    data[int(t.offsets[-2] + t.sizes[-2]) + 1] ^= 0xFF  # the stored checksum of the last but one block
    path.write_bytes(bytes(data))
    with pytest.raises(sstable.Unreadable, match="fails its checksum"):
        for _ in sstable.groups(sstable.read_table(path)):
            pass


@pytest.mark.parametrize("how", ["snappy", "wal"])
def test_tables_not_read_directly_leave_the_reading_to_rocksdb(tmp_path, how):
    """A table compressed another way, or values still in the memtables (a WAL replayed at the opening): no
    direct reading at all (None), so the digest takes RocksDB's own iteration."""
    from rmqctl.rocksdb import ReadOnlyDB

    _table_db(tmp_path / "db", 5, "snappy" if how == "snappy" else "lz4", flushes=1, tail=5 if how == "wal" else 0)
    with ReadOnlyDB(tmp_path / "db", ()) as db:
        assert db.tables("default") is None


def test_a_database_opened_for_default_alone_names_the_family_it_does_not_have(tmp_path):
    """The split layout's databases hold only `default`: one that has gained a family since it was found (a
    layout changed under rmqctl) is refused in one line that says so."""
    from rmqctl.rocksdb import ReadOnlyDB

    db = rocksdict.Rdict(str(tmp_path / "db"), options=rocksdict.Options(raw_mode=True))
    db.create_column_family("timer", rocksdict.Options(raw_mode=True))
    db.close()
    with pytest.raises(
        StoreError, match=r"column family 'timer', which this part does not have \(it has only default\)"
    ):
        ReadOnlyDB(tmp_path / "db", ())


def _digest_outcome(root: Path, monkeypatch, digest: bool = True) -> tuple[bool | None, list, bool]:
    """Whether the index records' digest proved them (None: not taken), verify's findings of the store, and
    whether the digest read the table files directly."""
    seen = {}
    real = rocksdbstore_check.check_rocksdb_store

    def check(store, reading, jobs):
        out = real(store, reading, jobs)
        seen["proved"] = reading.digest.proves() if reading.digest is not None else None
        seen["direct"] = reading.digest is not None and reading.digest.direct
        return out

    monkeypatch.setattr(verify_module, "check_rocksdb_store", check)
    reading = rocksdbstore_check.start_reading
    monkeypatch.setattr(verify_module, "start_reading", lambda s, m, d, *when: reading(s, m, d and digest, *when))
    store = Store(root, load_config(broker_conf(BASE)))
    try:
        found = sorted((f.kind, f.detail) for f in verify(store).findings if f.kind.startswith("rocksdb-store"))
    finally:
        store.close()
    return seen["proved"], found, seen["direct"]


@pytest.mark.parametrize("compression", ["lz4", "snappy"])
@pytest.mark.parametrize("change", ["none", "topic", "store time", "extra", "missing", "garbage", "hour"])
def test_the_digest_proves_a_sound_index_and_nothing_else(built, tmp_path, monkeypatch, change, compression):
    """The index records' digest proves them where the database holds exactly the records buildIndex makes,
    and proves nothing after any change, where verify's findings are those of the records held one by one
    against the commitlog (the digest not taken). The change lands in a table file of its own, compressed with
    LZ4 (read directly, beside the older one) or Snappy (the digest then takes RocksDB's iteration, where the
    table is compressed at all)."""
    root = copy_of(built, tmp_path)
    index = built[1]["default"]
    key = next(k for k in index if b"@TxBizTopic@U@" in k)
    changes = {
        "none": lambda db: None,
        "topic": lambda db: (db.delete(key), db.__setitem__(key.replace(b"@TxBizTopic@", b"@Other@"), index[key])),
        "store time": lambda db: db.__setitem__(key, q(struct.unpack(">q", index[key])[0] + 1)),
        "extra": lambda db: db.__setitem__(key[:-8] + q(10**9), index[key]),
        "missing": lambda db: db.delete(key),
        "garbage": lambda db: db.__setitem__(b"\x00garbage", b"x"),
        "hour": lambda db: (
            db.delete(key),
            db.__setitem__(q(struct.unpack(">q", key[:8])[0] - 7200000) + key[8:], index[key]),
        ),
    }
    rewrite(root, "default", changes[change], compression)
    proved, found, direct = _digest_outcome(root, monkeypatch)
    # a missing record: not what buildIndex makes, unless the table files read directly still hold its older
    # value beside the deletion (then every live record is still among those buildIndex makes: sound)
    assert proved == (change == "none" or (change == "missing" and direct)), found
    assert direct or compression == "snappy"
    assert found == _digest_outcome(root, monkeypatch, digest=False)[1]
    assert bool(found) == (change not in ("none", "missing")), found


@pytest.mark.parametrize("block", [0, -1])
def test_a_table_block_failing_its_checksum_is_rocksdb_s_error_not_a_digest(built, tmp_path, monkeypatch, block):
    """A data block whose checksum RocksDB's reader refuses (one byte of its stored checksum changed: its
    values still decode) is never read directly into a digest that proves: verify says RocksDB's corruption
    in one line, as without the digest."""
    from rmqctl import sstable

    root = copy_of(built, tmp_path)
    path = next(p for p in (root / "rocksdbstore").glob("*.sst") if sstable.read_table(p).family == "default")
    t = sstable.read_table(path)
    data = bytearray(path.read_bytes())
    data[int(t.offsets[block] + t.sizes[block]) + 1] ^= 0xFF
    path.write_bytes(bytes(data))
    for digest in (True, False):
        with pytest.raises(StoreError, match="checksum mismatch"):
            _digest_outcome(root, monkeypatch, digest)


@pytest.mark.parametrize("compression", ["lz4", "lz4hc"])
def test_liblz4_and_the_compiled_decoder_make_the_same_blocks(tmp_path, compression):
    """Where the machine has liblz4 (RocksDB's own LZ4 decoder) the table blocks are decoded by it; the compiled
    decoder, which reads them where it is missing, makes the same bytes of every block RocksDB writes, and both
    refuse a block cut short (crafted streams can part them: liblz4 keeps LZ4's end-of-block rules, which the
    compiled one does not check, and takes a match at distance 0). Which one reads is the machine's: liblz4
    wherever it can be loaded."""
    import ctypes.util

    from rmqctl import sstable
    from rmqctl.engine import kernels, sstable as engine_sstable

    assert kernels.LZ4_LIBRARY == ("lz4" if ctypes.util.find_library("lz4") else None)
    missing = (("no-such-lz4", "libno-such-lz4.so.1", "LZ4_decompress_safe", kernels.LZ4_LIBRARIES[0][3]),)
    assert kernels.first_library(missing) is None
    if kernels.LZ4_LIBRARY is None:
        pytest.skip("liblz4 is not installed (.ci/run installs it with rocksdb-tools)")
    _table_db(tmp_path / "db", 6, compression, flushes=2)
    blocks = 0
    for path in (tmp_path / "db").glob("*.sst"):
        t, u8 = sstable.read_table(path), np.fromfile(path, np.uint8)
        for offset, size in zip(t.offsets.tolist(), t.sizes.tolist()):
            want, at = engine_sstable.varint(u8, offset, offset + size)
            compiled, linked = np.zeros(want, np.uint8), np.ones(want, np.uint8)
            assert engine_sstable._lz4(u8, at, offset + size, compiled, want)
            assert engine_sstable._lz4_linked(u8, at, offset + size, linked, want)
            assert np.array_equal(compiled, linked)
            for cut in (1, 5, (offset + size - at) // 2):
                assert not engine_sstable._lz4(u8, at, offset + size - cut, compiled, want)
                assert not engine_sstable._lz4_linked(u8, at, offset + size - cut, linked, want)
            blocks += 1
    assert blocks > 10


def _varint64(value: int) -> bytes:
    """`value` as RocksDB's varint64 (its 64 bits unsigned, 7 a byte, low first)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def test_an_lz4_block_claiming_a_size_no_block_has_is_refused_before_it_is_decoded():
    """A block's size varint may hold 64 bits: one with bit 63 set (negative) reached liblz4 as a small int32
    capacity, which then wrote past the scratch it was given (a review found it), and one claiming more than LZ4
    makes of the block's bytes asked for gigabytes. Both are refused before a byte is decoded or allocated, and
    the linked decoder refuses bounds its arrays do not hold."""
    from rmqctl.engine import kernels, sstable as engine_sstable

    stream = bytes([0xF0, 48 - 15]) + b"x" * 48  # one LZ4 sequence: 48 literals
    for claimed in (-(1 << 63) + 48, 256 * len(stream) + 1):
        block = _varint64(claimed) + stream
        u8 = np.frombuffer(block + bytes([engine_sstable.LZ4]) + bytes(4), np.uint8)  # then the trailer
        assert engine_sstable._decoded(u8, 0, len(block), np.empty(0, np.uint8))[0] == engine_sstable.UNREADABLE
    u8 = np.frombuffer(_varint64(48) + stream + bytes([engine_sstable.LZ4]) + bytes(4), np.uint8)
    code, contents, _ = engine_sstable._decoded(u8, 0, len(u8) - engine_sstable.TRAILER, np.empty(0, np.uint8))
    assert code == engine_sstable.READ and contents.tobytes() == b"x" * 48
    if kernels.LZ4_LIBRARY is None:
        pytest.skip("liblz4 is not installed (.ci/run installs it with rocksdb-tools)")
    src, room = np.frombuffer(stream, np.uint8), np.zeros(64, np.uint8)
    for want in (-(1 << 63) + 48, 48):  # (48 is more than the 8 bytes given)
        assert not engine_sstable._lz4_linked(src, 0, len(stream), room[:8], want)
    assert not engine_sstable._lz4_linked(src, 0, len(stream) + 1, room, 48)  # past the source
    assert not room.any()
    assert engine_sstable._lz4_linked(src, 0, len(stream), room, 48) and room[:48].tobytes() == b"x" * 48


def _stored_block(pairs: list[tuple[bytes, bytes]]) -> bytes:
    """A block of these (key, value) pairs, keys whole (one restart point), as BlockBuilder lays it out."""
    body = b"".join(_varint64(0) + _varint64(len(k)) + _varint64(len(v)) + k + v for k, v in pairs)
    return body + struct.pack("<II", 0, 1)


def _crafted_table(path: Path, checksum: int, metaindex=None, data=None, data_block=None, index_block=None):
    """A block-based table (format_version 5) written by hand: one data block (or `data_block`'s bytes), the
    index naming it (or the `data` handle in its place, or `index_block`'s bytes), the properties and the
    metaindex, all stored, with XXH3 checksums (checksum 4) or none (0); the footer names the `metaindex`
    handle where one is given."""
    from rmqctl import sstable

    out = bytearray()

    def add(contents: bytes) -> tuple[int, int]:
        at = len(out)
        out.extend(contents + b"\0")
        out.extend(struct.pack("<I", sstable.CHECKSUMS[checksum](out[at:]) if checksum else 0))
        return at, len(contents)

    internal = struct.pack("<Q", 1 << 8 | 1)  # (sequence 1, a value)
    block = add(data_block or _stored_block([(b"k" + internal, b"v")]))
    index = add(index_block or _stored_block([(b"k" + internal, b"".join(map(_varint64, data or block)))]))
    properties = {
        b"rocksdb.block.based.table.index.type": bytes(4),
        b"rocksdb.column.family.name": b"default",
        b"rocksdb.num.entries": _varint64(1),
    }
    props = add(_stored_block(sorted(properties.items())))
    meta = add(_stored_block([(b"rocksdb.properties", b"".join(map(_varint64, props)))]))
    handles = b"".join(map(_varint64, (*(metaindex or meta), *index))).ljust(40, b"\0")
    path.write_bytes(bytes(out) + bytes([checksum]) + handles + struct.pack("<IQ", 5, sstable.MAGIC))


@pytest.mark.parametrize("checksum", [0, 4])
@pytest.mark.parametrize("handle", [((1 << 63) - 8, 4), (1 << 62, 1 << 62), (-8, 4)])
@pytest.mark.parametrize("where", ["metaindex", "data"])
def test_a_block_named_past_the_file_is_unreadable_whatever_its_handle_sums_to(tmp_path, checksum, handle, where):
    """A block handle is two varint64s, so a crafted one's offset + size can wrap int64 and pass a bound
    written as a sum: a review read past the file that way (segfaults, where no checksum stood in the way). A
    metadata or data block named past the file is Unreadable, and the kernels refuse such a handle themselves."""
    from rmqctl import sstable
    from rmqctl.engine import sstable as engine_sstable, xxh3

    path = tmp_path / "t.sst"
    _crafted_table(path, checksum)
    assert sstable.read_table(path).entries == 1  # (the table as written reads)
    _crafted_table(path, checksum, **{where: handle})
    with pytest.raises(sstable.Unreadable):
        sstable.read_table(path)
    u8 = np.frombuffer(path.read_bytes(), np.uint8)
    offsets, sizes = np.full(2, handle[0], np.int64), np.full(2, handle[1], np.int64)
    assert engine_sstable._decoded(u8, *handle, np.empty(0, np.uint8))[0] == engine_sstable.UNREADABLE
    assert xxh3.block_checksums(u8, offsets, sizes)[1].tolist() == [-1, -1]
    assert sstable._zstd_blocks(u8, offsets, sizes)[1].tolist() == [-1, -1]


@pytest.mark.parametrize(
    "shared, non_shared, length", [(0, 1 << 62, 1 << 62), (0, 9, (1 << 63) - 4), (-8, 9, 8), (0, -8, 8), (0, 9, -8)]
)
@pytest.mark.parametrize("block", ["data", "index"])
def test_an_entry_whose_lengths_wrap_or_are_negative_is_unreadable(tmp_path, shared, non_shared, length, block):
    """An entry's three lengths are varint64s: one whose key and value lengths wrap int64 when summed, or any
    negative one, passed a bound written as a sum (a negative shared length made the key be written before its
    array). Such an entry in a data block leaves the digest doubtful (RocksDB's reading follows); in the index,
    the table is Unreadable."""
    from rmqctl import sstable
    from rmqctl.engine import sstable as engine_sstable

    entry = b"".join(map(_varint64, (shared, non_shared, length))) + b"k" * 9 + struct.pack("<Q", 1 << 63)
    raw = entry + struct.pack("<II", 0, 1)
    key = np.zeros(64, np.uint8)  # (a metaindex's keys may be empty: no least length stands in the way)
    assert engine_sstable.next_entry(np.frombuffer(raw, np.uint8), 0, len(entry), key[8:], 0, 0)[0] == -1
    assert not key.any()
    path = tmp_path / "t.sst"
    if block == "index":
        _crafted_table(path, 4, index_block=raw)
        with pytest.raises(sstable.Unreadable):
            sstable.read_table(path)
        return
    _crafted_table(path, 4, data_block=raw)
    digest = rocksdbstore_check.IndexDigest(0, None)
    list(digest.table_groups([sstable.read_table(path)]))
    assert digest.direct and digest.found.doubtful == 1


def test_a_zstd_frame_claiming_another_size_is_unreadable_not_allocated(tmp_path):
    """A ZSTD block (in a table without checksums) whose frame header claims a content size other than the
    block's is not decoded (zstandard would allocate whatever it claims): the digest proves nothing and RocksDB
    reads the database."""
    from rmqctl import sstable
    from rmqctl.rocksdb import ReadOnlyDB

    _table_db(tmp_path / "db", 5, "zstd", flushes=1, checksum="no_checksum")
    path = next((tmp_path / "db").glob("*.sst"))
    t = sstable.read_table(path)
    raw = bytearray(path.read_bytes())
    at = int(t.offsets[0])
    while raw[at] & 0x80:  # the block's size, a varint, before the frame
        at += 1
    at += 1
    assert raw[at : at + 4] == b"\x28\xb5\x2f\xfd"  # ZSTD's frame magic
    raw[at + 4] = 0xE0  # frame header: single segment, an 8-byte content size
    raw[at + 5 : at + 13] = struct.pack("<Q", 1 << 40)
    path.write_bytes(bytes(raw))
    digest = rocksdbstore_check.IndexDigest(0, LONG_MAX)
    with ReadOnlyDB(tmp_path / "db", ()) as db:
        list(digest.table_groups(db.tables("default")))
    assert digest.found.doubtful and not digest.proves()


@pytest.mark.parametrize("claimed", [-1, -(1 << 40), 1 << 40])
def test_a_zstd_block_claiming_a_size_no_block_has_is_unreadable(claimed):
    """A ZSTD block's size varint, before a frame that does not say its own size: a negative one reached
    zstandard as its output cap (a SystemError, a traceback out of verify), a huge one an allocation of that
    size. Both are Unreadable before anything is decoded."""
    import zstandard

    from rmqctl import sstable

    frame = zstandard.ZstdCompressor(write_content_size=False).compress(b"x" * 100)
    block = _varint64(claimed) + frame
    with pytest.raises(sstable.Unreadable):
        sstable._zstd(np.frombuffer(block + bytes(5), np.uint8), 0, len(block))


def test_a_range_deletion_leaves_the_values_it_deletes_to_the_digest(tmp_path):
    """IndexRocksDBStore deletes expired hours with a range deletion, which RocksDB counts among a table's
    entries and keeps in a block of its own: the direct reading still adds up, and takes the values it deletes
    (still sound for a digest: every live record is among them)."""

    held = _table_db(tmp_path / "db", 6, "lz4", flushes=1)
    o = rocksdict.Options(raw_mode=True)
    db = rocksdict.Rdict(str(tmp_path / "db"), options=o)
    db.delete_range(q(0), q(3600000 * 2))  # the first two hours
    db.flush()
    db.close()
    (tmp_path / "db" / "rocksdict-config.json").unlink()
    direct, every, live = _three_digests(tmp_path / "db", held)
    assert direct.found == every.found and live.found.count < every.found.count


def test_the_compiled_xxh3_is_xxhash_s_for_every_length_class():
    """engine.xxh3_64 (RocksDB's default block checksum, computed per block in compiled code) against the
    xxhash package's XXH3_64bits, for every length from 0 to 600 (each of its paths: 0, 1-3, 4-8, 9-16,
    17-128, 129-240, longer) and lengths across its 1024-byte blocks, at an aligned and an unaligned start."""
    import xxhash

    from rmqctl import engine as E

    data = np.random.default_rng(7).integers(0, 256, 12000, dtype=np.uint8)
    lengths = [*range(601), 1023, 1024, 1025, 2047, 2048, 2049, 4096, 4097, 11000]
    got = [int(E.xxh3_64(data, lo, n)) for n in lengths for lo in (0, 3)]
    assert got == [xxhash.xxh3_64_intdigest(data[lo : lo + n].tobytes()) for n in lengths for lo in (0, 3)]


def test_the_walk_s_digest_of_a_record_is_the_digest_of_the_index_keys_build_index_makes_of_it():
    """engine record_digest (the walk: the hash of the fields a record's index records share taken once) sums
    what the database's reading sums of the keys IndexRocksDBStore.buildIndex makes of the record: one K key
    per distinct non-empty KEYS word, a T key, a U key; for every length of each text field (each place a
    field may end in an 8-byte word)."""
    from rmqctl.engine import rocksdbstore as R

    rng, offset, store_time = np.random.default_rng(11), 4096, 1_700_000_123_456
    hour = struct.pack(">q", store_time - store_time % 3_600_000)
    cols = np.zeros((1, R.NCOLUMNS), np.int64)
    for topic_len, word_len, uniq_len in [(t, w, u) for t in range(1, 18) for w in range(1, 18) for u in (1, 8, 9, 32)]:
        topic, word, other, tags, uniq = (
            bytes(rng.integers(0x21, 0x3F, n, dtype=np.uint8)) for n in (topic_len, word_len, 3, 5, uniq_len)
        )
        keys = b" ".join((word, other, b"", word))  # a repeated word and an empty one make no keys
        fields = topic + keys + tags + uniq
        at = np.cumsum([0, len(topic), len(keys), len(tags), len(uniq)])
        walked = R.record_digest(
            np.frombuffer(fields, np.uint8), 0, len(topic), True, at[1], at[2], at[2], at[3], at[3], at[4],
            offset, store_time, 0, 0, 1 << 62,
        )  # fmt: skip
        count, total = 0, 0
        for middle in (b"K@" + word, b"K@" + other, b"T@" + tags, b"U"):
            key = np.frombuffer(
                hour + b"@" + topic + b"@" + middle + b"@" + uniq + b"@" + struct.pack(">q", offset), np.uint8
            )
            c, h, doubtful, split = R._key_digest(key, 0, len(key), store_time, 0, 1 << 62, cols)
            assert split and not doubtful
            count, total = count + c, (total + int(h)) % (1 << 64)
        assert (walked[0], int(walked[1]), walked[2]) == (count, total, 0), (topic_len, word_len, uniq_len)


def _until(done, seconds: float = 60):
    """Wait for `done()` (a thread's progress) up to `seconds`."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "the reading made no progress"
        time.sleep(0.01)


def test_a_reading_begun_later_takes_one_step_of_each_kind_at_once_and_the_rest_once_begun(built, monkeypatch):
    """verify begins the reading once its walk is done where the walk takes every core: until then the reading
    has taken the first step of each kind (a group of the index's table blocks, a batch of each other kind's
    keys: the kernels they need load while the walk runs); begun, it reads the rest; closed unbegun, it ends
    without reading further."""
    from rmqctl import sstable

    monkeypatch.setattr(sstable, "GROUP_BYTES", 1)  # a table block a step
    store = Store(built[0], load_config(broker_conf(BASE)))
    later = closed = None
    try:
        later = rocksdbstore_check.start_reading(store, 1 << 20, digest=True, at_once=False)
        _until(lambda: len(later.runs.runs) == 2)  # a run of timer, and one of trans: their first steps
        first = later.digest.found.count
        time.sleep(0.5)  # (time to misbehave)
        assert later.digest.found.count == first and gc.isenabled()  # the caller's walk collects as usual
        assert later.runs.error is None and later.digest._listed and first > 0 and len(later.runs.runs) == 2
        later.begin()
        assert later.wait().digest.found.count > first and len(later.runs.runs) == 2
        closed = rocksdbstore_check.start_reading(store, 1 << 20, digest=True, at_once=False)
        _until(lambda: len(closed.runs.runs) == 2)
        closed.close()
        assert closed.digest.found.count == first and not closed.runs.runs
    finally:
        for reading in (later, closed):
            if reading is not None:
                reading.close()
        store.close()
