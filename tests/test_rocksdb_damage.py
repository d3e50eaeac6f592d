"""A damaged RocksDB consume queue (i-rocksdb-cq's, on a copy) met by every command that reads it: a
database RocksDB cannot open or read is one stderr line naming the directory and exit 2, never a traceback;
a database RocksDB does read after the damage (a WAL whose torn tail it drops by design) gives the right
answer; and no byte of the store changes either way."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import rocksdict

from conftest import broker_conf, copy_store, one_line_error, run, truth
from rmqctl import rocksdbcq

ROCKS = "i-rocksdb-cq"
READERS = [
    ["info"],
    ["verify"],
    ["dump", "consumequeue", "RocksTopicA", "0"],
    ["locate", "3", "--topic", "RocksTopicA"],
    ["consumers"],
    ["offset-by-time", "RocksTopicA", "0", "0"],
]


def tree(root: Path) -> dict:
    return {
        str(p.relative_to(root)): (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir",
            p.stat().st_mtime_ns,
        )
        for p in sorted(root.rglob("*"))
    }


def read_write(cq: Path, change, families=("offset",)):
    """Change the copy's database with RocksDB itself (read-write: the test's copy only), leaving no file
    of the binding behind."""
    db = rocksdict.Rdict(
        str(cq),
        options=rocksdict.Options(raw_mode=True),
        column_families={cf: rocksdict.Options(raw_mode=True) for cf in families},
    )
    try:
        change(db)
    finally:
        db.close()
        (cq / "rocksdict-config.json").unlink()


def flip(path: Path, at: int):
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def drop_offset_family(cq: Path):
    read_write(cq, lambda db: db.drop_column_family("offset"))


def add_unknown_family(cq: Path):
    read_write(cq, lambda db: db.create_column_family("timer", rocksdict.Options(raw_mode=True)))


DAMAGES = {
    "CURRENT missing": (lambda cq: (cq / "CURRENT").unlink(), "without its CURRENT file"),
    "CURRENT names no MANIFEST": (lambda cq: (cq / "CURRENT").write_text("MANIFEST-000099\n"), "RocksDB cannot read"),
    "MANIFEST missing": (lambda cq: (cq / "MANIFEST-000005").unlink(), "RocksDB cannot read"),
    "MANIFEST damaged": (lambda cq: flip(cq / "MANIFEST-000005", 100), "RocksDB cannot read"),
    # RocksDB recovers the MANIFEST's whole records: no offset CF
    "MANIFEST cut": (
        lambda cq: (cq / "MANIFEST-000005").write_bytes((cq / "MANIFEST-000005").read_bytes()[:50]),
        "no column family 'offset'",
    ),
    "SST missing": (lambda cq: (cq / "000009.sst").unlink(), "RocksDB cannot read"),
    "SST zeroed": (lambda cq: (cq / "000009.sst").write_bytes(b"\0" * 16353), "RocksDB cannot read"),
    "SST block damaged": (lambda cq: flip(cq / "000009.sst", 200), "RocksDB cannot read"),
    "SST cut": (
        lambda cq: (cq / "000008.sst").write_bytes((cq / "000008.sst").read_bytes()[:1000]),
        "RocksDB cannot read",
    ),
    "no offset column family": (drop_offset_family, "no column family 'offset'"),
    "an unknown column family": (add_unknown_family, "column family 'timer', which this part does not have"),
}
# info answers from the `offset` column family alone (min/max, checkpoint): a damaged block of the units'
# SST (000009.sst holds the `default` CF) is not read there, and the answer is the undamaged store's
UNITS_UNREAD = {("SST block damaged", "info")}


@pytest.mark.parametrize("args", READERS, ids=lambda a: " ".join(a[:2]))
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_database_is_one_line_and_exit_2(tmp_path, damage, args):
    root = copy_store(ROCKS, tmp_path)
    # a committed offset: consumers reads the queue's min/max and the unit at it. storeType=defaultRocksDB: the
    # broker takes the JSON file's offsets only when its DataVersion is newer than its (here absent) RocksDB ones
    (root / "config").mkdir()
    (root / "config" / "consumerOffset.json").write_text(
        '{"offsetTable": {"RocksTopicA@g1": {"0": 10}}, "dataVersion": {"counter": 1}}'
    )
    undamaged = run(*args, "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "json")
    change, needle = DAMAGES[damage]
    change(root / "consumequeue")
    before = tree(root)
    res = run(*args, "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "json")
    if (damage, args[0]) in UNITS_UNREAD:  # the queue's part of the answer (the rest holds start-up estimates)
        assert (res.exit_code, res.stderr) == (0, "")
        assert json.loads(res.stdout)["consumequeue"] == json.loads(undamaged.stdout)["consumequeue"]
    else:
        one_line_error(res, f"{root}/consumequeue", needle)
    assert "rmqctl-rocksdb-" not in res.stderr  # the view's name never shows
    assert tree(root) == before


def with_torn_wal(cq: Path) -> Path:
    """The copy's database with a WAL that holds writes no SST has (every unit of RocksTopicA queue 0
    written again, as the broker's dispatch writes them: same keys and values), its last record cut. The
    files are taken while the database is still open, as a crash leaves them (closing would flush the WAL)."""
    units = [t for t in truth(ROCKS, "truth-consumequeue.jsonl") if (t["topic"], t["queueId"]) == ("RocksTopicA", 0)]

    def write_again(db):
        for t in units:
            db.put(rocksdbcq.unit_key(t["topic"], t["queueId"], t["queueOffset"]), bytes.fromhex(t["rocksdbValueHex"]))
        shutil.copytree(cq, crashed)

    crashed = cq.with_name("crashed")
    read_write(cq, write_again)
    shutil.rmtree(cq)
    crashed.rename(cq)
    (cq / "rocksdict-config.json").unlink(missing_ok=True)
    wal = max((p for p in cq.glob("*.log") if p.stat().st_size), key=lambda p: p.name)
    wal.write_bytes(wal.read_bytes()[:-7])
    return wal


def test_a_torn_wal_tail_is_dropped_as_rocksdb_does_and_the_answers_stay_right(tmp_path):
    root = copy_store(ROCKS, tmp_path)
    wal = with_torn_wal(root / "consumequeue")
    assert wal.stat().st_size > 0
    before = tree(root)
    conf = broker_conf(ROCKS)
    res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert (res.exit_code, res.stdout, "Traceback" in res.stderr) == (0, "", False), res.stderr
    res = run("dump", "consumequeue", "RocksTopicA", "0", "--store", root, "--broker-config", conf, "--format", "jsonl")
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    want = [t for t in truth(ROCKS, "truth-consumequeue.jsonl") if (t["topic"], t["queueId"]) == ("RocksTopicA", 0)]
    assert res.exit_code == 0 and [(r["queueOffset"], r["commitLogOffset"], r["storeTimestamp"]) for r in rows] == [
        (t["queueOffset"], t["commitLogOffset"], t["storeTime"]) for t in want
    ]
    for args in READERS:
        res = run(*args, "--store", root, "--broker-config", conf)
        assert res.exit_code in (0, 1) and "Traceback" not in res.stderr, (args, res.stderr)
    assert tree(root) == before
