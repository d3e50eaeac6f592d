"""The RocksDB consume queue (storeType=defaultRocksDB), read through rocksdict read-only: every read path against
what RocketMQ 5.3.3 itself read back from its own database (i-rocksdb-cq's truth files and ldb scans), and the
store never written, its LOCK never taken."""

from __future__ import annotations

import fcntl
import hashlib
import json
import marshal
import os
import random
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
import rocksdict

import oracle
from conftest import broker_conf, cleaned_copy, copy_store, fixture_dir, one_line_error, run, tmpfs_at, truth
from rmqctl import rocksdbcq
from rmqctl.config import load_config
from rmqctl.rocksdb import MARSHAL_VERSION, READ_CACHE_BYTES, NewDB, Pairs
from rmqctl.recovery import recovered_queues_end
from rmqctl.store import Store

ROCKS = "i-rocksdb-cq"
STORE = fixture_dir(ROCKS) / "store"


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def tree(root: Path) -> dict:
    return {
        str(p.relative_to(root)): (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir",
            p.stat().st_mtime_ns,
        )
        for p in sorted(root.rglob("*"))
    }


def rocks_store(root: Path = STORE) -> Store:
    return Store(root, load_config(broker_conf(ROCKS)))


def ldb_scan(name: str) -> dict[bytes, bytes]:
    """The fixture's `ldb scan --key_hex --value_hex` of one column family."""
    out = {}
    for line in (fixture_dir(ROCKS) / f"truth-rocksdb-ldb-{name}.txt").read_text().splitlines():
        if line.startswith("0x"):
            k, v = line.split(" : ")
            out[bytes.fromhex(k[2:])] = bytes.fromhex(v[2:])
    return out


def test_every_unit_as_rocketmq_read_it():
    rocks = rocks_store().rocks_queues
    got = []
    for q in rocks.queues():
        for qoffs, units in rocks.units(q.topic, q.queue_id, batch=7):  # small batches: the batching is exercised
            got += [
                (
                    q.topic,
                    q.queue_id,
                    int(o),
                    int(u["commitLogOffset"]),
                    int(u["size"]),
                    int(u["tagsCode"]),
                    int(u["storeTimestamp"]),
                )
                for o, u in zip(qoffs, units)
            ]
    want = [
        (t["topic"], t["queueId"], t["queueOffset"], t["commitLogOffset"], t["size"], t["tagsCode"], t["storeTime"])
        for t in truth(ROCKS, "truth-consumequeue.jsonl")
    ]
    assert sorted(got) == sorted(want) and len(got) == 653


def test_keys_and_values_are_ldbs():
    rocks = rocks_store().rocks_queues
    assert dict(rocks.db.items(rocksdbcq.UNIT_CF)) == ldb_scan("default")
    assert dict(rocks.db.items(rocksdbcq.OFFSET_CF)) == ldb_scan("offset")
    key = rocksdbcq.unit_key("RocksTopicA", 0, 0)
    assert key.hex() == "0000000b01526f636b73546f706963410100000000010000000000000000"
    assert ldb_scan("offset")[rocksdbcq.offset_key("RocksTopicA", rocksdbcq.MAX, 0)] == bytes.fromhex(
        "00000000000564af000000000000003e"
    )


def test_info_min_max_and_the_dispatch_checkpoint():
    res = run("info", "--store", STORE, "--broker-config", broker_conf(ROCKS), "--format", "json")
    assert res.exit_code == 0 and res.stderr == ""
    cq = json.loads(res.stdout)["consumequeue"]
    summary = json.loads((fixture_dir(ROCKS) / "truth-summary.json").read_text())
    assert [
        (q["topic"], q["queueId"], q["minOffset"], q["maxOffset"], q["maxPhysicOffset"]) for q in cq["queues"]
    ] == sorted(
        (q["topic"], q["queueId"], q["minOffset"], q["maxOffset"], q["rocksdbMaxPhyOffsetInQueue"])
        for q in summary["consumeQueues"]
    )
    assert (cq["dispatchCheckpoint"], cq["entries"], cq["topics"]) == (360649, 653, 6)
    table = run("info", "--store", STORE, "--broker-config", broker_conf(ROCKS), "--format", "table").stdout
    assert "RocksDB consume queue (6 topics, 653 entries, dispatched to 360649)" in table
    # 5.x's recoverNormally: the newest file whose first record is at or before the dispatch checkpoint (360649)
    assert (
        "startup    normal recovery from 00000000000000327680: 0.0 MB in 1 commitlog file(s), 0 consumequeue "
        "file(s), 0.0 MB to dispatch;"
    ) in table


def test_min_offset_follows_the_commitlogs_min_as_the_broker_corrects_it():
    rocks = rocks_store().rocks_queues
    q = rocks.queue("RocksTopicA", 1)
    units = [t for t in truth(ROCKS, "truth-consumequeue.jsonl") if (t["topic"], t["queueId"]) == ("RocksTopicA", 1)]
    cut = units[10]["commitLogOffset"]
    # the min entry (at 0) points below the commitlog: the first unit at or past it
    assert rocks.min_offset(q, cut) == 10
    assert rocks.min_offset(q, units[-1]["commitLogOffset"] + 1) == q.max_offset  # every unit gone


def test_dump_consumequeue_units_with_their_store_time():
    res = run(
        "dump",
        "consumequeue",
        "RocksTopicA",
        "1",
        "--resolve",
        "--store",
        STORE,
        "--broker-config",
        broker_conf(ROCKS),
        "--format",
        "jsonl",
    )
    assert res.exit_code == 0, res.stderr
    rows = jsonl(res.stdout)
    want = [t for t in truth(ROCKS, "truth-consumequeue.jsonl") if (t["topic"], t["queueId"]) == ("RocksTopicA", 1)]
    assert [(r["queueOffset"], r["commitLogOffset"], r["size"], r["tagsCode"], r["storeTimestamp"]) for r in rows] == [
        (t["queueOffset"], t["commitLogOffset"], t["size"], t["tagsCode"], t["storeTime"]) for t in want
    ]
    assert all(r["ok"] for r in rows)
    assert rows[0] == {
        "queueOffset": 0,
        "commitLogOffset": 33272,
        "size": 815,
        "tagsCode": 2598922,
        "storeTimestamp": 1795867571254,
        "storeTime": "2026-11-28T12:06:11.254+00:00",
        "resolved": {"topic": "RocksTopicA", "queueId": 1, "queueOffset": 0},
        "ok": True,
        "problem": None,
    }
    res = run("dump", "consumequeue", "NoSuchTopic", "0", "--store", STORE)
    assert one_line_error(res) == (
        f"rmqctl: {STORE}/consumequeue: no queue NoSuchTopic/0 in the RocksDB consume queue (no unit, no min/max)"
    )


def test_locate_a_queue_offset():
    res = run("locate", "5", "--topic", "RocksTopicA", "--queue-id", "1", "--store", STORE, "--format", "jsonl")
    assert jsonl(res.stdout) == [
        {
            "topic": "RocksTopicA",
            "queueId": 1,
            "queueOffset": 5,
            "database": f"{STORE}/consumequeue",
            "columnFamily": "default",
            "key": "0000000b01526f636b73546f706963410100000001010000000000000005",
            "exists": True,
            "commitLogOffset": 62156,
            "size": 555,
            "tagsCode": 2598922,
            "storeTimestamp": 1795867571269,
            "storeTime": "2026-11-28T12:06:11.269+00:00",
        }
    ]
    res = run("locate", "61", "--topic", "RocksTopicA", "--queue-id", "1", "--store", STORE, "--format", "jsonl")
    assert jsonl(res.stdout)[0]["exists"] is False


@pytest.mark.parametrize("boundary", ["lower", "upper"])
def test_offset_by_time_is_the_brokers_search_over_store_times(boundary):
    units = sorted(
        (t["queueOffset"], t["storeTime"])
        for t in truth(ROCKS, "truth-consumequeue.jsonl")
        if (t["topic"], t["queueId"]) == ("Rocks-Bench-3", 2)
    )
    for qoff, stored in units:
        res = run(
            "offset-by-time",
            "Rocks-Bench-3",
            "2",
            stored,
            "--boundary",
            boundary,
            "--store",
            STORE,
            "--format",
            "jsonl",
        )
        [row] = jsonl(res.stdout)
        same = [o for o, t in units if t == stored]
        assert row["queueOffset"] == (same[0] if boundary == "lower" else same[-1]), (qoff, stored)
        assert row["storeTimestamp"] == stored
    after = units[-1][1] + 1
    [row] = jsonl(run("offset-by-time", "Rocks-Bench-3", "2", after, "--store", STORE, "--format", "jsonl").stdout)
    assert (row["queueOffset"], row["maxOffset"], row["storeTimestamp"]) == (len(units), len(units), None)
    [row] = jsonl(run("offset-by-time", "Rocks-Bench-3", "2", 0, "--store", STORE, "--format", "jsonl").stdout)
    assert row["queueOffset"] == 0


def test_consumer_lag(tmp_path):
    root = copy_store(ROCKS, tmp_path)
    (root / "config").mkdir()
    # storeType=defaultRocksDB: the broker merges the JSON file into its (here empty) RocksDB offsets only when
    # the file's DataVersion is newer (rmqctl.rocksdbconfig)
    (root / "config" / "consumerOffset.json").write_text(
        json.dumps(
            {"offsetTable": {"RocksTopicA@g1": {"0": 10, "1": 70}, "Gone@g1": {"0": 1}}, "dataVersion": {"counter": 1}}
        )
    )
    res = run("consumers", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
    rows = {(r["topic"], r["queueId"]): r for r in jsonl(res.stdout)}
    tenth = next(
        t["storeTime"]
        for t in truth(ROCKS, "truth-consumequeue.jsonl")
        if (t["topic"], t["queueId"], t["queueOffset"]) == ("RocksTopicA", 0, 10)
    )
    r = rows[("RocksTopicA", 0)]
    assert (r["minOffset"], r["maxOffset"], r["lag"], r["oldestUnconsumed"], r["status"]) == (0, 63, 53, tenth, "ok")
    r = rows[("RocksTopicA", 1)]
    assert (r["maxOffset"], r["lag"], r["status"]) == (61, 0, "ahead-of-max")
    assert rows[("Gone", 0)]["status"] == "deleted-topic"  # in no queue and not among the broker's topics


def test_reads_change_nothing_and_take_no_lock(tmp_path):
    """Every read path on a copy while another process holds RocksDB's LOCK as the broker does (fcntl): the
    reads succeed and no byte, name or mtime under the store changes."""
    root = copy_store(ROCKS, tmp_path)
    before = tree(root)
    fd = os.open(root / "consumequeue" / "LOCK", os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        msg_id = truth(ROCKS, "truth-messages.jsonl")[0]["msgId"]
        for args in (
            ["info"],
            ["dump", "consumequeue", "RocksTopicA", "0"],
            ["consumers"],
            ["verify"],
            ["offset-by-time", "RocksTopicA", "0", "0"],
            ["locate", "3", "--topic", "RocksTopicA"],
            ["msgid", "lookup", msg_id],
        ):
            res = run(*args, "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
            assert res.exit_code in (0, 1) and (res.stdout or args[0] in ("consumers", "verify")), (args, res.stderr)
    finally:
        os.close(fd)
    assert tree(root) == before


ROCKS_WHAT = "RocksDB consume queue (the broker's queue store, storeType=defaultRocksDB)"
CONVERT_INSTEAD = "convert consumequeue --to file first and back with --to rocksdb after"
REFUSALS = [
    (
        ["repair"],
        "read but not written by this version, so repair writes nothing to this store; instead: rebuild "
        "consumequeue rebuilds the RocksDB queue whole from the commitlog; to repair the rest, " + CONVERT_INSTEAD,
    ),
    (
        ["append", "--topic", "RocksTopicA", "--body", "x"],
        f"read but not written by this version, so append writes nothing to this store; instead: {CONVERT_INSTEAD}",
    ),
    (
        ["rebuild", "index"],
        f"read but not written by this version, so rebuild index writes nothing to this store; instead: {CONVERT_INSTEAD}",
    ),
    (
        ["rebuild", "consumequeue", "--topic", "RocksTopicA"],
        "rebuilt whole only, so rebuild consumequeue of some queues writes nothing to this store; instead: rebuild "
        "consumequeue without --topic and --queue-id rebuilds the RocksDB queue whole, or " + CONVERT_INSTEAD,
    ),
    (
        ["rebuild", "consumequeue", "--topic", "RocksTopicA", "--queue-id", "0"],
        "rebuilt whole only, so rebuild consumequeue of some queues writes nothing to this store; instead: rebuild "
        "consumequeue without --topic and --queue-id rebuilds the RocksDB queue whole, or " + CONVERT_INSTEAD,
    ),
]


@pytest.mark.parametrize("dry_run", [False, True], ids=["apply", "dry-run"])
@pytest.mark.parametrize("args,why", REFUSALS, ids=[" ".join(a[:3]) for a, _ in REFUSALS])
def test_writers_refuse_a_queue_they_do_not_write(tmp_path, args, why, dry_run):
    """One line naming the part, why, and what to do instead; exit 2; not a byte written (nor a file touched)."""
    root = copy_store(ROCKS, tmp_path)
    before = tree(root)
    res = run(*args, *(["--dry-run"] if dry_run else []), "--store", root, "--broker-config", broker_conf(ROCKS))
    assert one_line_error(res) == f"rmqctl: {root}/consumequeue: {ROCKS_WHAT}: {why}"
    assert tree(root) == before


def test_config_restore_writes_the_config_files_only(tmp_path):
    """config restore never touches a queue: a RocksDB consume queue does not keep it off the store (a file the
    broker keeps in JSON even with storeType=defaultRocksDB: delayOffset.json)."""
    root = copy_store(ROCKS, tmp_path)
    sound = '{"offsetTable":{1:1700000000000}}'
    (root / "config").mkdir()
    (root / "config" / "delayOffset.json").write_text(sound[:12])
    (root / "config" / "delayOffset.json.bak").write_text(sound)
    before = tree(root / "consumequeue")
    res = run(
        "config", "restore", "--apply", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl"
    )
    assert res.exit_code == 0, res.stderr
    assert (root / "config" / "delayOffset.json").read_text() == sound and tree(root / "consumequeue") == before


# -- verify --------------------------------------------------------------------------------------------------
def rewrite(root: Path, change):
    """Change a store copy's RocksDB consume queue with RocksDB itself (read-write: the test's copy only)."""
    path = root / "consumequeue"
    db = rocksdict.Rdict(
        str(path),
        options=rocksdict.Options(raw_mode=True),
        column_families={"offset": rocksdict.Options(raw_mode=True)},
    )
    try:
        change(db, db.get_column_family("offset"))
    finally:
        db.close()
        (path / "rocksdict-config.json").unlink()


def findings(root: Path, name: str = ROCKS) -> tuple[int, list[tuple[str, str, str]]]:
    res = run("verify", "--store", root, "--broker-config", broker_conf(name), "--format", "jsonl")
    assert res.exit_code in (0, 1), res.stderr
    return res.exit_code, [(r["kind"], r["severity"], r["detail"]) for r in jsonl(res.stdout)]


@pytest.mark.parametrize("name", [ROCKS, "k-combine-cq"])
def test_verify_a_sound_store_finds_nothing(name):
    assert findings(fixture_dir(name) / "store", name) == (0, [])


def crash_at(cut: int, checkpoint: int):
    """A crash's loss of the RocksDB writes since the last flush (they skip the WAL): the units of the records from
    `cut` on, the max entries and the checkpoint (set to `checkpoint`) all behind together (a `rewrite` change)."""
    units = truth(ROCKS, "truth-consumequeue.jsonl")

    def crash(db, offsets):
        for t in units:
            if t["commitLogOffset"] >= cut:
                del db[rocksdbcq.unit_key(t["topic"], t["queueId"], t["queueOffset"])]
        for key in {(t["topic"], t["queueId"]) for t in units}:
            kept = [t for t in units if (t["topic"], t["queueId"]) == key and t["commitLogOffset"] < cut]
            last = max(kept, key=lambda t: t["queueOffset"])
            offsets[rocksdbcq.offset_key(*key[:1], rocksdbcq.MAX, key[1])] = rocksdbcq.OFFSET_VALUE.pack(
                last["commitLogOffset"], last["queueOffset"]
            )
        offsets[rocksdbcq.offset_key(rocksdbcq.CHECKPOINT_TOPIC, rocksdbcq.MAX, 0)] = rocksdbcq.INT64.pack(checkpoint)

    return crash


CRASH_CUT = 300361  # the first record at or past 300,000: Rocks-Bench-3/1 queue offset 38


def test_verify_a_queue_behind_after_a_crash_is_redispatch_not_damage(tmp_path):
    """With the checkpoint where the broker writes it (the end of the last record dispatched) and no abort file,
    5.3.3's recoverNormally dispatches the records past it again, not the one at it: that one is lost
    (tests/test_reput.py has RocketMQ load this store), the rest are only behind."""
    root = copy_store(ROCKS, tmp_path)
    rewrite(root, crash_at(CRASH_CUT, CRASH_CUT))
    code, found = findings(root)
    assert code == 1 and {(k, s) for k, s, _ in found} == {
        ("rocksdb-cq-behind", "info"),
        ("cq-missing-entries", "info"),
        ("cq-missing-entries", "error"),
    }
    assert (
        f"the RocksDB consume queue's dispatch checkpoint is at {CRASH_CUT}, the commitlog ends at 360649 "
        f"({360649 - CRASH_CUT} bytes on): at its next start the broker dispatches again the records that start "
        "after the checkpoint, not one that starts at it"
    ) in found[0][2]
    assert [d for k, s, d in found if s == "error"] == [
        "Rocks-Bench-3/1: 1 dispatched message(s) have no consumequeue entry (queue offsets 38..38, commitlog "
        f"offsets {CRASH_CUT}..{CRASH_CUT}; the queue ends at 38); the broker will not dispatch them again: consumers "
        "never see them"
    ]


def test_verify_damage_in_the_rocksdb_queue(tmp_path):
    root = copy_store(ROCKS, tmp_path)

    def damage(db, offsets):
        key = rocksdbcq.unit_key("RocksTopicA", 0, 3)
        db[key] = db[key][:8] + rocksdbcq.INT32.pack(12) + db[key][12:]  # size
        del db[rocksdbcq.unit_key("RocksTopicA", 2, 7)]  # a hole
        fifth = db[rocksdbcq.unit_key("rocks_orders", 1, 5)]
        offsets[rocksdbcq.offset_key("rocks_orders", rocksdbcq.MIN, 1)] = fifth[:8] + rocksdbcq.INT64.pack(5)
        fifty = db[rocksdbcq.unit_key("Rocks-Bench-3", 0, 51)]
        offsets[rocksdbcq.offset_key("Rocks-Bench-3", rocksdbcq.MAX, 0)] = fifty[:8] + rocksdbcq.INT64.pack(51)

    rewrite(root, damage)
    code, found = findings(root)
    assert code == 1
    assert sorted(found) == sorted(
        [
            (
                "cq-entry-invalid",
                "error",
                "RocksTopicA/2: 1 queue offset(s) between 0 and 52 have no unit; consumers find nothing there",
            ),
            (
                "rocksdb-cq-below-min",
                "info",
                "rocks_orders/1: 5 unit(s) below the queue's min offset 5 (queue offsets "
                "0..4) are still in the database; the broker never serves them, its compaction filter drops them when "
                "RocksDB compacts them (they survive it in apache/rocketmq#10959)",
            ),
            (
                "cq-entry-mismatch",
                "error",
                "RocksTopicA/0 entry 3 (commitlog offset 8122): size 12 but the record is 512 bytes",
            ),
            (
                "cq-missing-entries",
                "error",
                "RocksTopicA/2: 1 dispatched message(s) have no consumequeue entry (queue "
                "offsets 7..7, commitlog offsets 43841..43841; the queue has no unit there); the broker will not dispatch them "
                "again: consumers never see them",
            ),
            (
                "rocksdb-cq-offset-table",
                "error",
                "Rocks-Bench-3/0: the offset column family's max is queue offset 51 at "
                "commitlog offset 357334, but the last unit is at queue offset 52",
            ),
        ]
    )


def test_verify_a_double_write_copy_that_disagrees(tmp_path):
    name = "k-combine-cq"
    root = copy_store(name, tmp_path)

    def diverge(db, offsets):
        key = rocksdbcq.unit_key("CombTopicA", 1, 4)
        db[key] = db[key][:20] + rocksdbcq.INT64.pack(5)  # store time
        key = rocksdbcq.unit_key("comb_orders", 2, 9)
        db[key] = db[key][:12] + rocksdbcq.INT64.pack(77) + db[key][20:]  # tagsCode
        del db[rocksdbcq.unit_key("comb_orders", 3, 39)]

    rewrite(root, diverge)
    code, found = findings(root, name)
    assert code == 1 and [k for k, _, _ in found] == ["rocksdb-cq-double-write"] * 3
    assert found[0][2] == (
        "CombTopicA/1: 1 unit(s) of the file queue differ in the RocksDB copy (first at queue offset "
        "4: file (offset, size, tagsCode, store time) (26450, 871, 2598922, 1795870653116), RocksDB "
        "(26450, 871, 2598922, 5))"
    )
    assert found[2][2].endswith("RocksDB no unit)")


@pytest.mark.parametrize("damage", ["manifest", "table"])
def test_a_double_write_copy_rocksdb_cannot_read_is_one_finding_and_verify_goes_on(tmp_path, damage):
    """The broker reads the file queues (5.3.3 never opens the copy): a copy RocksDB refuses (its MANIFEST's
    checksum, a table file gone) is one double-write finding naming RocksDB's error, and every other check
    still runs (a file queue's damage is found beside it)."""
    name = "k-combine-cq"
    root = copy_store(name, tmp_path)
    if damage == "manifest":
        with open(next((root / "consumequeue").glob("MANIFEST-*")), "r+b") as f:
            f.seek(20)
            f.write(b"garbage!")
    else:
        next((root / "consumequeue").glob("*.sst")).unlink()
    unit = root / "consumequeue" / "CombTopicA" / "1" / f"{0:020d}"
    with open(unit, "r+b") as f:  # the first unit's size, in a file queue
        f.seek(8)
        f.write(struct.pack(">i", 7))
    code, found = findings(root, name)
    copy = [d for k, _, d in found if k == "rocksdb-cq-double-write"]
    assert code == 1 and len(copy) == 1 and copy[0].startswith("the RocksDB copy cannot be read (RocksDB cannot")
    assert any(k != "rocksdb-cq-double-write" for k, _, _ in found), found


def test_verify_a_double_write_store_after_the_broker_deleted_the_oldest_commitlog_files(tmp_path, java_oracle):
    """k-combine-cq with its first three commitlog files deleted, as the broker's cleanup deletes them (rmqctl
    clean does not write double-write stores): both copies keep units whose records are gone, the RocksDB one
    with their store time, the file one with none to read. Neither store serves them; verify finds nothing
    (it reported every queue's copy as differing), and info gives RocketMQ's min and max offsets."""
    name = "k-combine-cq"
    root = copy_store(name, tmp_path)
    for start in (0, 65536, 131072):
        (root / "commitlog" / f"{start:020d}").unlink()
    code, found = findings(root, name)
    assert (code, found) == (0, [])
    served, _, _ = oracle.served(java_oracle, 5, root, broker_conf(name), tmp_path / "oracle")
    res = run("info", "--store", root, "--broker-config", broker_conf(name), "--format", "json")
    queues = json.loads(res.stdout)["consumequeue"]["queues"]
    assert {(q["topic"], q["queueId"]): (q["minOffset"], q["maxOffset"]) for q in queues} == served
    assert any(lo > 0 for lo, _ in served.values())


def views(tmp: Path) -> list[Path]:
    """The views RocksDB databases are opened through, left under TMPDIR `tmp` (in this user's directory)."""
    return [v for d in tmp.iterdir() for v in (d.iterdir() if d.name == f"rmqctl-rocksdb-{os.getuid()}" else [d])]


def test_the_view_of_symlinks_goes_with_the_command(tmp_path):
    """The temporary view the database is opened through is removed when the command ends (a store is not
    closed by every command: the view goes at exit)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "rmqctl",
            "dump",
            "consumequeue",
            "RocksTopicA",
            "0",
            "--store",
            STORE,
            "--format",
            "jsonl",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 63, res.stderr
    assert views(tmp) == []


def one_queue_store(root: Path, units: int) -> Path:
    """A store of one RocksDB queue (RocksTopicA/0) of `units` units, written with the broker's options."""
    (root / "commitlog").mkdir(parents=True)
    (root / "lock").touch()  # a store root a broker has started on
    db = NewDB(root / "consumequeue", rocksdbcq.family_options())
    value = (
        rocksdbcq.INT64.pack(0) + rocksdbcq.INT32.pack(100) + rocksdbcq.INT64.pack(0) + rocksdbcq.INT64.pack(1 << 40)
    )
    db.put(rocksdbcq.UNIT_CF, ((rocksdbcq.unit_key("RocksTopicA", 0, i), value) for i in range(units)))
    db.put(
        rocksdbcq.OFFSET_CF,
        [(rocksdbcq.offset_key("RocksTopicA", rocksdbcq.MAX, 0), rocksdbcq.OFFSET_VALUE.pack(0, units - 1))],
    )
    db.finish()
    return root


def test_a_killed_readers_view_is_removed_by_the_next_reader(tmp_path):
    """SIGKILL leaves no chance to remove the view: the next reader removes the views of dead processes."""
    root = one_queue_store(tmp_path / "store", 20_000)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    # its output fills the pipe nobody reads: the dump stops mid-queue, its database open
    reader = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rmqctl",
            "dump",
            "consumequeue",
            "RocksTopicA",
            "0",
            "--store",
            root,
            "--format",
            "jsonl",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    while not views(tmp) and reader.poll() is None:
        time.sleep(0.05)
    reader.kill()
    reader.wait()
    assert reader.returncode == -9 and [v.name.split("-")[0] for v in views(tmp)] == [str(reader.pid)]
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "rmqctl",
            "dump",
            "consumequeue",
            "RocksTopicA",
            "0",
            "--store",
            STORE,
            "--format",
            "jsonl",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 63, res.stderr
    assert views(tmp) == []


def test_reading_a_queue_holds_rocksdbs_memory_within_its_cache(tmp_path):
    """A full scan leaves RocksDB's block cache and its tables' index and filter blocks within READ_CACHE_BYTES:
    a reader's memory does not grow with the database (RocksDB's defaults cache every block a scan reads, up to
    32 MiB, and hold each table's index and filters outside any cache)."""
    root = one_queue_store(tmp_path / "store", 400_000)
    rocks = rocksdbcq.RocksConsumeQueues(root / "consumequeue")
    try:
        assert sum(len(q) for q, _ in rocks.units("RocksTopicA", 0)) == 400_000
        for i in range(0, 400_000, 1000):
            assert rocks.unit("RocksTopicA", 0, i) is not None
        assert sum(rocks.db.memory().values()) <= READ_CACHE_BYTES
    finally:
        rocks.close()


# -- rebuild -------------------------------------------------------------------------------------------------
def damage_two_units(db, offsets):
    key = rocksdbcq.unit_key("RocksTopicA", 0, 3)
    db[key] = db[key][:8] + rocksdbcq.INT32.pack(12) + db[key][12:]
    del db[rocksdbcq.unit_key("RocksTopicA", 2, 7)]


def ldb(db: Path, cf: str, tmp_path: Path) -> list[str]:
    """`ldb scan` of a copy (ldb may write into what it opens) in the fixture's format."""
    copy = tmp_path / f"ldb-{cf}"
    shutil.copytree(db, copy)
    res = subprocess.run(
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
    )
    shutil.rmtree(copy)
    return res.stdout.splitlines()


def test_rebuild_of_a_sound_queue_changes_nothing(tmp_path):
    root = copy_store(ROCKS, tmp_path)
    before = tree(root)
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
    assert (res.exit_code, res.stdout) == (0, "")
    assert res.stderr == "rmqctl: 15 queue(s) rebuilt from 603 records: identical to the store's, nothing to change\n"
    assert tree(root) == before


def test_rebuild_writes_the_brokers_keys_and_values_and_rocketmq_reads_them(tmp_path, java_oracle):
    root = copy_store(ROCKS, tmp_path)
    rewrite(root, damage_two_units)
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert jsonl(res.stdout) == [
        {
            "topic": "RocksTopicA",
            "queueId": 0,
            "unitsBefore": 63,
            "unitsAfter": 63,
            "added": 0,
            "removed": 0,
            "changed": 1,
        },
        {
            "topic": "RocksTopicA",
            "queueId": 2,
            "unitsBefore": 52,
            "unitsAfter": 53,
            "added": 1,
            "removed": 0,
            "changed": 0,
        },
    ]
    # RocksDB's files only
    assert sorted(p.name for p in (root / "consumequeue").iterdir() if not p.name.endswith((".sst", ".log"))) == [
        "CURRENT",
        "IDENTITY",
        "LOCK",
        "MANIFEST-000005",
        "OPTIONS-000007",
    ]
    for cf in ("default", "offset"):
        want = (fixture_dir(ROCKS) / f"truth-rocksdb-ldb-{cf}.txt").read_text().splitlines()[1:]
        assert ldb(root / "consumequeue", cf, tmp_path) == want
    assert findings(root) == (0, [])
    out = tmp_path / "read5"
    proc = subprocess.run(
        [str(java_oracle / "read5.sh"), "--no-dispatch", str(root), str(broker_conf(ROCKS)), str(out)],
        capture_output=True,
        text=True,
    )
    summary = json.loads((out / "recovered-summary.json").read_text())
    assert (summary["loadReturned"], summary["messageCount"], summary["rocksdbMaxPhyOffsetInConsumeQueue"]) == (
        True,
        603,
        360649,
    ), proc.stdout[-2000:]
    lines = jsonl((out / "messages-read.jsonl").read_text())
    fields = ("topic", "queueId", "queueOffset", "commitLogOffset", "size", "tagsCode", "storeTime")
    assert sorted(tuple(l[f] for f in fields) for l in lines) == sorted(
        tuple(t[f] for f in fields) for t in truth(ROCKS, "truth-consumequeue.jsonl")
    )
    assert all(l["ok"] for l in lines)


def test_restore_puts_the_replaced_database_back(tmp_path):
    root = copy_store(ROCKS, tmp_path)
    rewrite(root, damage_two_units)
    damaged = all_units(root)
    assert run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf(ROCKS)).exit_code == 0
    assert all_units(root) != damaged
    backup = next(p.name for p in root.iterdir() if p.name.startswith(".rmqctl-backup-"))
    res = run("restore", backup, "--store", root, "--broker-config", broker_conf(ROCKS))
    assert res.exit_code == 0, res.stderr
    assert all_units(root) == damaged


def test_rebuild_replaces_a_database_it_cannot_read(tmp_path):
    root = copy_store(ROCKS, tmp_path)
    (root / "consumequeue" / "MANIFEST-000005").unlink()
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert "the live RocksDB consume queue cannot be read" in res.stderr and "it is replaced whole" in res.stderr
    assert findings(root) == (0, [])


def test_sigkill_during_rebuild_leaves_the_old_database_or_the_new(tmp_path):
    """Killed before counted filesystem steps (test_rebuild.cli_kills, in new interpreters: RocksDB's threads do
    not survive a fork; half up to the commit point, half after it), then the next writer's recovery rule: the queue reads as the damaged one it was before the commit
    point and as the rebuilt one after it, never a mix."""
    from test_rebuild import cli_kills, fresh

    whole = copy_store(ROCKS, tmp_path / "whole")
    rewrite(whole, damage_two_units)
    old_units = all_units(whole)
    assert run("rebuild", "consumequeue", "--store", whole, "--broker-config", broker_conf(ROCKS)).exit_code == 0
    new_units = all_units(whole)
    assert new_units != old_units and new_units == sorted(
        (t["topic"], t["queueId"], t["queueOffset"], t["commitLogOffset"], t["size"], t["tagsCode"], t["storeTime"])
        for t in truth(ROCKS, "truth-consumequeue.jsonl")
    )
    cli_kills(
        fresh(ROCKS, tmp_path / "runs", lambda root: rewrite(root, damage_two_units)),
        lambda r: ["rebuild", "consumequeue", "--store", str(r), "--broker-config", str(broker_conf(ROCKS))],
        old_units,
        new_units,
        runs=6,
        seed=11,
        state_of=all_units,
        new_process=True,
    )


def all_units(root: Path) -> list[tuple]:
    rocks = rocks_store(root).rocks_queues
    try:
        return sorted(
            (
                q.topic,
                q.queue_id,
                int(o),
                int(u["commitLogOffset"]),
                int(u["size"]),
                int(u["tagsCode"]),
                int(u["storeTimestamp"]),
            )
            for q in rocks.queues()
            for qoffs, units in rocks.units(q.topic, q.queue_id)
            for o, u in zip(qoffs, units)
        )
    finally:
        rocks.close()


# -- convert --------------------------------------------------------------------------------------------------
V5 = "c-v5-features"


def files_of(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "consumequeue").rglob("*")) if p.is_file()}


def rocks_conf(tmp_path: Path) -> Path:
    conf = tmp_path / "rocks.conf"
    conf.write_text(broker_conf(V5).read_text() + "\nstoreType=defaultRocksDB\n")
    return conf


def test_convert_to_rocksdb_and_back_gives_the_file_queues_byte_for_byte(tmp_path, java_oracle):
    root = copy_store(V5, tmp_path)
    before = files_of(root)
    res = run(
        "convert",
        "consumequeue",
        "--to",
        "rocksdb",
        "--store",
        root,
        "--broker-config",
        broker_conf(V5),
        "--format",
        "jsonl",
    )
    assert res.exit_code == 0, res.stderr
    assert jsonl(res.stdout) == [{"to": "rocksdb", "queues": 9, "units": 489, "checkpoint": 452578}]
    assert res.stderr.startswith("rmqctl: 9 queue(s), 489 unit(s) converted to rocksdb; the old queues kept in ")
    assert res.stderr.endswith("; set storeType=defaultRocksDB in broker.conf before the broker starts\n")
    assert not [p for p in (root / "consumequeue").iterdir() if p.is_dir()]  # the database alone
    conf = rocks_conf(tmp_path)
    res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert (res.exit_code, res.stdout) == (0, "")
    units = sorted(
        (t["topic"], t["queueId"], t["queueOffset"], t["commitLogOffset"], t["size"], t["tagsCode"])
        for t in truth(V5, "truth-consumequeue.jsonl")
    )
    out = tmp_path / "read5"
    subprocess.run(
        [str(java_oracle / "read5.sh"), "--no-dispatch", str(root), str(conf), str(out)], capture_output=True, text=True
    )
    summary = json.loads((out / "recovered-summary.json").read_text())
    assert (summary["loadReturned"], summary["storeClass"].rsplit(".", 1)[-1]) == (True, "RocksDBMessageStore")
    lines = jsonl((out / "messages-read.jsonl").read_text())
    fields = ("topic", "queueId", "queueOffset", "commitLogOffset", "size", "tagsCode")
    assert sorted(tuple(line[f] for f in fields) for line in lines) == units and all(line["ok"] for line in lines)
    res = run("convert", "consumequeue", "--to", "file", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert files_of(root) == before


def oracle_queues(java_oracle: Path, root: Path, conf: Path, out: Path) -> tuple[list, list]:
    """What RocketMQ 5.3.3 loads from the store: each queue's (topic, queueId, minOffset, maxOffset), and the
    (topic, queueId, queueOffset, commitLogOffset, size, tagsCode) of every message it reads."""
    subprocess.run(
        [str(java_oracle / "read5.sh"), "--no-dispatch", str(root), str(conf), str(out)], capture_output=True
    )
    summary = json.loads((out / "recovered-summary.json").read_text())
    assert summary["loadReturned"] is True
    queues = sorted((q["topic"], q["queueId"], q["minOffset"], q["maxOffset"]) for q in summary["consumeQueues"])
    fields = ("topic", "queueId", "queueOffset", "commitLogOffset", "size", "tagsCode")
    lines = jsonl((out / "messages-read.jsonl").read_text())
    assert all(line["ok"] for line in lines)
    return queues, sorted(tuple(line[f] for f in fields) for line in lines)


@pytest.mark.tmpfs
@pytest.mark.parametrize("name, expired", [(V5, 2), ("example", 1)])
def test_convert_after_a_cleanup_leaves_out_the_dead_units_and_rocketmq_reads_the_same_queues(
    tmp_path, java_oracle, name, expired
):
    """The broker's cleanup deleted the first commitlog files; the file queues still hold units pointing there
    (a queue file goes only when all of it is dead; in the example store whole queues are dead). Converting
    writes the live units, each queue's max where it was and its min at its first live unit (past the max
    when none is left): RocketMQ reads the same min and max offsets and the same messages from the RocksDB
    queue as from the file queues, and verify finds nothing."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:  # near-empty: age alone decides the cleanup
        root, conf = cleaned_copy(name, mnt, expired)
        queues, messages = oracle_queues(java_oracle, root, conf, tmp_path / "files")
        assert any(q[2] > 0 for q in queues)  # queues that start past units the cleanup left dead
        res = run("convert", "consumequeue", "--to", "rocksdb", "--store", root, "--broker-config", conf)
        assert res.exit_code == 0, res.stderr
        rocks = tmp_path / "rocks.conf"
        rocks.write_text(conf.read_text() + "\nstoreType=defaultRocksDB\n")
        assert run("verify", "--store", root, "--broker-config", rocks).exit_code == 0
        assert oracle_queues(java_oracle, root, rocks, tmp_path / "rocks") == (queues, messages)


@pytest.mark.tmpfs
@pytest.mark.parametrize("name, expired", [(V5, 3), ("example", 1), (ROCKS, 3)])
def test_convert_to_file_after_a_cleanup_keeps_every_queue_and_rocketmq_reads_the_same(
    tmp_path, java_oracle, name, expired
):
    """The way back after a cleanup: a RocksDB queue (the broker's own, i-rocksdb-cq, whose dead units its
    compaction has not dropped yet, or one converted from a cleaned store's file queues) into file queues.
    Units below the commitlog's min are not served and not written; a queue with none left keeps its max
    offset by its last unit (after fillPreBlank's units; of size 1 where the RocksDB queue no longer holds it,
    said in a note), so no queue's maxPhysicOffset passes the commitlog's end (pre-blank units alone make it
    Integer.MAX_VALUE). RocketMQ 5.3.3 reads the same queues, min and max offsets and messages from the file
    queues as from the RocksDB queue."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        root, conf = cleaned_copy(name, mnt, expired)
        files, rocks = tmp_path / "file.conf", tmp_path / "rocks.conf"
        lines = [l for l in conf.read_text().splitlines() if not l.startswith("storeType=")]
        files.write_text("\n".join(lines + ["storeType=default"]) + "\n")
        rocks.write_text("\n".join(lines + ["storeType=defaultRocksDB"]) + "\n")
        if name != ROCKS:
            res = run("convert", "consumequeue", "--to", "rocksdb", "--store", root, "--broker-config", files)
            assert res.exit_code == 0, res.stderr
        before = oracle_queues(java_oracle, root, rocks, tmp_path / "rocks")
        res = run("convert", "consumequeue", "--to", "file", "--store", root, "--broker-config", rocks)
        assert res.exit_code == 0, res.stderr
        assert ("rmqctl: note: " in res.stderr) == (name != ROCKS)  # (the broker's own still holds the units)
        assert run("verify", "--store", root, "--broker-config", files).exit_code == 0
        store = Store(root, load_config(files))
        try:
            assert (
                0 <= recovered_queues_end(store).max_phy <= store.commitlog.files[-1].start + store.commitlog.file_size
            )
        finally:
            store.close()
        assert oracle_queues(java_oracle, root, files, tmp_path / "files") == before


@pytest.mark.tmpfs
def test_rebuild_of_a_rocksdb_queue_after_a_cleanup_keeps_the_queues_it_left_dead(tmp_path, java_oracle):
    """The example store after a cleanup that left OrderTopic/0 and TopicTest/0 without a live unit, its queues
    in RocksDB: a rebuild from the commitlog keeps those two queues (no record feeds them), so RocketMQ 5.3.3
    reads the same queues, min and max offsets and messages before and after."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        root, conf = cleaned_copy("example", mnt, 1)
        rocks = tmp_path / "rocks.conf"
        rocks.write_text(conf.read_text() + "\nstoreType=defaultRocksDB\n")
        res = run("convert", "consumequeue", "--to", "rocksdb", "--store", root, "--broker-config", conf)
        assert res.exit_code == 0, res.stderr
        before = oracle_queues(java_oracle, root, rocks, tmp_path / "before")
        assert {("OrderTopic", 0, 4, 4), ("TopicTest", 0, 6, 6)} <= set(before[0])
        res = run("rebuild", "consumequeue", "--store", root, "--broker-config", rocks, "--no-backup")
        assert res.exit_code == 0, res.stderr
        assert oracle_queues(java_oracle, root, rocks, tmp_path / "after") == before


@pytest.mark.tmpfs
def test_rebuild_of_an_unreadable_rocksdb_queue_says_the_dead_queues_restart(tmp_path):
    """The same store with its RocksDB queue unreadable (CURRENT gone): the rebuild is the repair, and it says
    that the queues the cleanup left without a record, known only to the old database, restart at 0."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        root, conf = cleaned_copy("example", mnt, 1)
        rocks = tmp_path / "rocks.conf"
        rocks.write_text(conf.read_text() + "\nstoreType=defaultRocksDB\n")
        assert (
            run("convert", "consumequeue", "--to", "rocksdb", "--store", root, "--broker-config", conf).exit_code == 0
        )
        (root / "consumequeue" / "CURRENT").unlink()
        res = run("rebuild", "consumequeue", "--store", root, "--broker-config", rocks, "--no-backup")
        assert res.exit_code == 0, res.stderr
        assert "cannot be kept, and restarts at queue offset 0" in res.stderr


def test_convert_dry_run_writes_nothing_and_refuses_the_wrong_way(tmp_path):
    root = copy_store(V5, tmp_path)
    before = tree(root)
    res = run(
        "convert",
        "consumequeue",
        "--to",
        "rocksdb",
        "--dry-run",
        "--store",
        root,
        "--broker-config",
        broker_conf(V5),
        "--format",
        "jsonl",
    )
    assert res.exit_code == 0 and "(dry run: nothing written)" in res.stderr
    assert tree(root) == before
    res = run("convert", "consumequeue", "--to", "file", "--store", root, "--broker-config", broker_conf(V5))
    assert one_line_error(res) == (
        "rmqctl: the broker reads default consume queues here (storeType): nothing to convert to file"
    )


def test_convert_refuses_a_rocksdb_queue_the_commitlog_does_not_give(tmp_path):
    root = copy_store(ROCKS, tmp_path)
    rewrite(root, damage_two_units)
    before = tree(root)
    res = run("convert", "consumequeue", "--to", "file", "--store", root, "--broker-config", broker_conf(ROCKS))
    one_line_error(res, "RocksTopicA/0: the RocksDB queue's units are not those the commitlog's dispatch gives")
    assert tree(root) == before


def test_sigkill_during_convert_leaves_the_file_queues_or_the_rocksdb_queue(tmp_path):
    """Killed before counted filesystem steps (half up to the commit point, half after it), then the next
    writer's recovery rule: the file queues as they were before the commit point, the whole RocksDB queue after."""
    from test_rebuild import cli_kills, fresh

    before = files_of(copy_store(V5, tmp_path / "before"))

    def state(root: Path):
        names = [p for p in (root / "consumequeue").iterdir()]
        if all(p.is_dir() for p in names):
            return "files", files_of(root) == before
        assert not any(p.is_dir() for p in names), "file queues and a database mixed"
        rocks = Store(root, load_config(rocks_conf(tmp_path))).rocks_queues
        try:
            return "rocksdb", sum(len(q) for r in rocks.queues() for q, _ in rocks.units(r.topic, r.queue_id))
        finally:
            rocks.close()

    argv = lambda r: [
        "convert",
        "consumequeue",
        "--to",
        "rocksdb",
        "--broker-config",
        str(broker_conf(V5)),  # noqa: E731
        "--store",
        str(r),
    ]
    whole = copy_store(V5, tmp_path / "whole")
    assert run(*argv(whole)).exit_code == 0 and state(whole) == ("rocksdb", 489)
    cli_kills(
        fresh(V5, tmp_path / "runs"),
        argv,
        ("files", True),
        ("rocksdb", 489),
        runs=6,
        seed=12,
        state_of=state,
        new_process=True,
    )


# -- clean ----------------------------------------------------------------------------------------------------
def test_clean_deletes_commitlog_files_and_says_what_the_broker_does_to_the_rocksdb_queue(tmp_path):
    root = copy_store(ROCKS, tmp_path)
    queue_files = {p.name: p.read_bytes() for p in (root / "consumequeue").iterdir()}
    args = ["clean", "--store", root, "--broker-config", broker_conf(ROCKS), "--now", "--file-reserved-time", "0"]
    plan = json.loads(run(*args, "--format", "json").stdout)
    note = (
        "the RocksDB consume queue: nothing is deleted from it by hand; with the commitlog's min offset at 327680, "
        "the broker's compaction filter drops units below it when RocksDB next compacts them, and each queue's "
        "min offset moves to its first unit at or past it (getMinOffsetInQueue corrects it)"
    )
    assert note in plan["notes"] and plan["minPhyOffsetAfter"] == 327680
    want = {}
    for t in sorted(truth(ROCKS, "truth-consumequeue.jsonl"), key=lambda t: -t["queueOffset"]):
        if t["commitLogOffset"] >= 327680:
            want[f"{t['topic']}/{t['queueId']}"] = t["queueOffset"]
    assert plan["cqMinOffsetsAfter"] == want
    assert all(f["file"].startswith(("commitlog/", "index/")) for f in plan["files"])
    res = run(*args, "--apply", "--format", "json")
    assert res.exit_code == 0, res.stderr
    assert {p.name: p.read_bytes() for p in (root / "consumequeue").iterdir()} == queue_files
    code, found = findings(root)
    assert code == 0 and {k for k, _, _ in found} == {"rocksdb-cq-below-min"}
    res = run("clean", "--protect-unconsumed", "--store", root, "--broker-config", broker_conf(ROCKS))
    one_line_error(res, "--protect-unconsumed reads file consume queues")


def test_pairs_are_found_in_marshal_s_bytes_exactly():
    """A batch's pairs are marshalled a step at a time and found in those bytes by a kernel: every key and value
    comes back as it went in (empty, NUL and 0x80+ bytes, a value longer than 64 KiB, no pairs at all), over
    several steps end to end."""
    rnd = random.Random(7)
    pairs = [
        (bytes(rnd.randrange(256) for _ in range(rnd.randrange(40))), b"\0\x80" * rnd.randrange(9)) for _ in range(500)
    ]
    pairs += [(b"", b""), (b"long", bytes(range(256)) * 300)]
    assert list(Pairs.of(pairs).items()) == pairs and len(Pairs.of([])) == 0
    steps = [marshal.dumps(pairs[i : i + 64], MARSHAL_VERSION) for i in range(0, len(pairs), 64)]
    assert list(Pairs.unmarshalled(steps, len(pairs)).items()) == pairs


@pytest.mark.parametrize(
    "step,count",
    [
        ([(b"k", "text")], 1),  # not bytes
        ([(b"k",)], 1),  # not a pair
        ([(b"k", b"v", b"w")], 1),
        ([b"k"], 1),
        ([(b"k", b"v")], 2),  # fewer pairs than said
        ([(b"k", b"v"), (b"l", b"w")], 1),  # more
    ],
)
def test_bytes_not_of_marshalled_pairs_are_refused_whole(step, count):
    """Anything but marshalled lists of (bytes, bytes) holding the pairs counted is refused, never read as pairs."""
    with pytest.raises(TypeError, match="not \\(bytes, bytes\\)"):
        Pairs.unmarshalled([marshal.dumps(step, MARSHAL_VERSION)], count)
    whole = marshal.dumps([(b"key", b"value")], MARSHAL_VERSION)
    for cut in range(1, len(whole)):  # cut short anywhere
        with pytest.raises(TypeError):
            Pairs.unmarshalled([whole[:cut]], 1)


def test_batches_hold_every_pair_in_key_order_whatever_the_step(tmp_path, monkeypatch):
    """A family drained in steps smaller than a batch and not dividing it: every pair once, in key order, each
    batch full but the last, and a batch smaller than a step too."""
    from conftest import write_rocksdb
    from rmqctl import rocksdb

    pairs = {b"k%05d" % i: b"v" * (i % 7) for i in range(100)}
    write_rocksdb(tmp_path / "db", {"default": {}, "cf": pairs}, "none")
    for step, size in ((3, 7), (64, 10), (8192, 100), (5, 200)):
        monkeypatch.setattr(rocksdb, "BATCH_STEP", step)
        with rocksdb.ReadOnlyDB(tmp_path / "db", ("cf",)) as db:
            got = list(db.batches("cf", size))
        assert [len(p) for p in got] == [size] * (100 // size) + [100 % size] * (100 % size > 0)
        assert [kv for p in got for kv in p.items()] == sorted(pairs.items())


def test_a_torn_tail_is_no_double_write_difference(tmp_path):
    """A crash tore the commitlog's last records: their units' store time cannot be read from the file side (no
    record), which is the torn tail's finding, not a difference between the two queue stores."""
    name = "k-combine-cq"
    root = copy_store(name, tmp_path)
    last = sorted((root / "commitlog").iterdir())[-1]
    data = bytearray(last.read_bytes())
    data[25433:] = bytes(len(data) - 25433)
    last.write_bytes(bytes(data))
    (root / "abort").write_text("999")
    code, found = findings(root, name)
    kinds = [k for k, _, _ in found]
    assert code == 1 and "torn-tail" in kinds and "rocksdb-cq-double-write" not in kinds
