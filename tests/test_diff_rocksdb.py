"""diff on stores whose broker reads the RocksDB consume queue (storeType=defaultRocksDB): copies of
i-rocksdb-cq (written by RocketMQ 5.3.3), one changed with RocksDB itself (rocksdict) where a test needs a
difference. The queues are read through the store's one queue abstraction (rmqctl.rocksdbcq), as `consumers` and
`dump consumequeue` read them."""

from __future__ import annotations

import shutil

from conftest import broker_conf, copy_store, one_line_error, run
from rmqctl import rocksdbcq
from test_rocksdbconfig import OFFSETS, separate
from test_rocksdbcq import rewrite

ROCKS = "i-rocksdb-cq"


def pair(tmp_path):
    a = copy_store(ROCKS, tmp_path / "a")
    b = tmp_path / "b" / "store"
    shutil.copytree(a, b)
    return a, b


def table_lines(tmp_path, differ: int) -> list[str]:
    """The commitlog, queue and config lines of a diff of the pair; neither copy has a config database, so each
    side's broker would load empty tables."""
    side = {s: tmp_path / s / "store" for s in ("a", "b")}
    return [
        "commitlog: identical; compared [0, 360649)",
        f"consumequeues: 15 queue(s) compared unit by unit, {differ} differ (A: RocksDB consume queue, B: RocksDB "
        "consume queue)",
        *(
            f"{name}: identical; A 0 entries ({side['a']}/config/{db}), B 0 ({side['b']}/config/{db})"
            for name, db in (
                ("consumerOffset.json", "consumerOffsets"),
                ("topics.json", "topics"),
                ("subscriptionGroup.json", "subscriptionGroups"),
            )
        ),
    ]


def test_identical_copies_compare_every_rocksdb_queue(tmp_path):
    a, b = pair(tmp_path)
    res = run("diff", a, b, "--broker-config", broker_conf(ROCKS), "--format", "table")
    assert (res.exit_code, res.stderr) == (0, "")
    assert res.stdout.splitlines() == table_lines(tmp_path, 0)


def test_a_unit_changed_in_rocksdb_is_a_difference(tmp_path):
    a, b = pair(tmp_path)

    def shrink(db, offsets):  # unit 3 of RocksTopicA/0: its size field 12
        key = rocksdbcq.unit_key("RocksTopicA", 0, 3)
        db[key] = db[key][:8] + rocksdbcq.INT32.pack(12) + db[key][12:]

    rewrite(b, shrink)
    res = run("diff", a, b, "--broker-config", broker_conf(ROCKS), "--format", "table")
    assert (res.exit_code, res.stderr) == (1, "")
    assert res.stdout.splitlines() == [
        *table_lines(tmp_path, 1),
        "consumequeues that differ",
        "topic        queueId  minOffsetA  maxOffsetA  minOffsetB  maxOffsetB  firstDifference  relation",
        "RocksTopicA        0           0          63           0          63                3  diverged",
    ]


def test_a_queue_with_a_missing_unit_is_one_line_and_exit_2(tmp_path):
    """A hole between a queue's first and last unit: diff compares contiguous queues only, and says so."""
    a, b = pair(tmp_path)
    rewrite(b, lambda db, offsets: db.delete(rocksdbcq.unit_key("RocksTopicA", 2, 7)))
    res = run("diff", a, b, "--broker-config", broker_conf(ROCKS), "--format", "table")
    one_line_error(
        res,
        str(b / "consumequeue"),
        "RocksTopicA/2 has no unit at queue offset 7",
        "diff compares contiguous queues only",
    )


def test_file_queues_say_what_was_compared(store_copy, tmp_path):
    a = store_copy("a-basic")
    b = copy_store("a-basic", tmp_path / "b")
    res = run("diff", a, b, "--broker-config", broker_conf("a-basic"), "--format", "table")
    assert res.exit_code == 0
    assert res.stdout.splitlines()[1] == (
        "consumequeues: 12 queue(s) compared unit by unit, 0 differ (A: file consume queues, B: file consume queues)"
    )


def test_offsets_kept_in_rocksdb_that_differ_are_named(tmp_path):
    """Each side's consumer offsets as its broker loads them from its config database (test_rocksdbconfig's)."""
    a, b = pair(tmp_path)
    for root in (a, b):
        (root / "config").mkdir()
    separate(a)
    separate(b, offsets={**OFFSETS, "RocksTopicA@g1": {"0": 11, "1": 70}})
    res = run("diff", a, b, "--broker-config", broker_conf(ROCKS), "--format", "table")
    assert res.exit_code == 1
    assert res.stdout.splitlines()[2] == (
        f"consumerOffset.json: different; A 3 entries ({a / 'config' / 'consumerOffsets'}), B 3 "
        f"({b / 'config' / 'consumerOffsets'}); differ: RocksTopicA@g1 queue 0"
    )
