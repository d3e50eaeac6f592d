"""Store parts (rmqctl.parts): what a store holds, which parts this version reads; read commands name the parts
they do not read, verify never reports them as missing, writers refuse a store holding one and write nothing.
On real stores: RocketMQ 5.3.3's RocksDB consume queue (i-rocksdb-cq), develop's double write (k-combine-cq),
5.3.3's BatchConsumeQueue (j-batchcq)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import broker_conf, copy_store, fixture_dir, one_line_error, run
from rmqctl.config import load_config
from rmqctl.store import Store

ROCKS = "i-rocksdb-cq"


def tree(root: Path) -> dict:
    """Every file and directory under root, with its bytes' digest: any write shows."""
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir")
        for p in sorted(root.rglob("*"))
    }


def test_the_parts_of_a_rocksdb_store():
    store = Store(fixture_dir(ROCKS) / "store", load_config(broker_conf(ROCKS)))
    parts = store.parts
    assert [(p.kind, p.read, p.understood) for p in parts.parts] == [
        ("commitlog", True, True),
        ("index", True, True),
        ("checkpoint", True, True),
        ("consumequeue", True, False),
        ("compaction", True, True),
    ]
    assert parts.queue_store == "defaultRocksDB" and parts.queues_read and not parts.file_queues_read
    assert parts.find("compaction").what == "compaction topics: none (an empty position-checkpoint)"


def test_without_broker_conf_the_files_say_rocksdb():
    parts = Store(fixture_dir(ROCKS) / "store").parts
    assert parts.queue_store == "defaultRocksDB"
    assert parts.find("consumequeue").what == (
        "RocksDB consume queue (the broker's queue store, storeType not given; the files say defaultRocksDB)"
    )


def test_double_write_reads_the_file_queues_and_the_rocksdb_copy_beside_them():
    store = Store(fixture_dir("k-combine-cq") / "store", load_config(broker_conf("k-combine-cq")))
    assert store.parts.file_queues_read and store.parts.queue_store == "default" and store.parts.unread == []
    copy = store.parts.find("rocksdb-consumequeue")
    assert (copy.what, copy.read, copy.understood) == (
        "RocksDB consume queue (the double-write copy, rocksdbCQDoubleWriteEnable=true)",
        True,
        False,
    )
    assert len(store.consume_queues()) == 15 and store.rocks_queues is None


def test_a_broker_queue_store_not_read_is_named_and_never_reported_missing(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("storeType=tieredRocksDB\n")
    root = fixture_dir("a-basic") / "store"
    line = (
        f"{root}/consumequeue: consume queues of storeType=tieredRocksDB: not read (a storeType this version does "
        "not know)"
    )
    res = run("info", "--store", root, "--broker-config", conf, "--format", "json")
    d = json.loads(res.stdout)
    assert d["consumequeue"] == {
        "read": False,
        "what": "consume queues of storeType=tieredRocksDB",
        "why": "a storeType this version does not know",
        "queues": [],
    }
    assert res.stderr == f"rmqctl: note: {line}\n"
    res = run("info", "--store", root, "--broker-config", conf, "--format", "table")
    assert (
        "startup    normal recovery: not estimated: the consume queues, where dispatch resumes, are not read"
        in res.stdout
    )
    assert (
        f"not read   {root}/consumequeue: consume queues of storeType=tieredRocksDB (a storeType this version does not know)"
        in res.stdout
    )
    assert "consumequeues (" not in res.stdout
    res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert (res.exit_code, res.stdout, re.sub(r"in \d+\.\d\d s \(\d+ job", "in S s (J job", res.stderr)) == (
        0,
        "",
        (
            "verify: 2000 records, 2.6 MB of commitlog in S s (J job(s)): sound as far as read; not read: "
            f"{root}/consumequeue (consume queues of storeType=tieredRocksDB)\n"
            f"rmqctl: note: {line}\n"
        ),
    )
    one_line_error(run("verify", "--store", root, "--broker-config", conf, "--only", "consumequeue"), line)
    for args in (
        ["dump", "consumequeue", "TopicTest", "0"],
        ["consumers"],
        ["offset-by-time", "TopicTest", "0", "0"],
        ["locate", "0", "--topic", "TopicTest", "--queue-id", "0"],
    ):
        assert one_line_error(run(*args, "--store", root, "--broker-config", conf)) == f"rmqctl: {line}"


COMBINE = "k-combine-cq"
WRITERS = [
    (["rebuild", "consumequeue"], "rebuild consumequeue"),
    (["rebuild", "consumequeue", "--dry-run"], "rebuild consumequeue"),
    (["rebuild", "index"], "rebuild index"),
    (["rebuild", "index", "--dry-run"], "rebuild index"),
    (["repair"], "repair"),
    (["repair", "--dry-run"], "repair"),
    (["clean"], "clean"),
    (["clean", "--apply"], "clean"),
    (["clean", "--check"], "clean"),  # config restore writes config/ only: a RocksDB queue does not keep it off
    (["restore", ".rmqctl-backup-20261128000000000"], "restore"),
    (["append", "--topic", "CombTopicA", "--body", "x"], "append"),
    (["append", "--topic", "CombTopicA", "--body", "x", "--dry-run"], "append"),
]


@pytest.mark.parametrize("args,writer", WRITERS, ids=[" ".join(a) for a, _ in WRITERS])
def test_every_writer_refuses_and_writes_nothing(tmp_path, args, writer):
    root = copy_store(COMBINE, tmp_path)
    before = tree(root)
    res = run(*args, "--store", root, "--broker-config", broker_conf(COMBINE))
    assert one_line_error(res) == (
        f"rmqctl: {root}/consumequeue: RocksDB consume queue (the double-write copy, rocksdbCQDoubleWriteEnable=true): "
        f"read but not written by this version, so {writer} writes nothing to this store"
    )
    assert tree(root) == before


def test_batch_consume_queues_are_read_and_kept_by_the_dispatching_writers_only():
    """BatchCQ topics are read (tests/test_batchcq.py); rebuild and append keep them as the broker's dispatch
    does, every other writer refuses a store holding them."""
    name = "j-batchcq"
    res = run(
        "verify", "--store", fixture_dir(name) / "store", "--broker-config", broker_conf(name), "--format", "jsonl"
    )
    assert (res.exit_code, res.stdout) == (0, "")
    assert res.stderr.splitlines()[1:] == [] and res.stderr.endswith(": sound\n")  # verify's summary, no note
    parts = Store(fixture_dir(name) / "store").parts
    assert parts.find("batchconsumequeue").read and parts.topics_not_read == frozenset()
    parts.refuse_writer("rebuild consumequeue", frozenset({"batchconsumequeue"}))  # nothing raised
    res = run("repair", "--dry-run", "--store", fixture_dir(name) / "store", "--broker-config", broker_conf(name))
    assert one_line_error(res) == (
        f"rmqctl: {fixture_dir(name)}/store/batchconsumequeue: batch consume queues (topics "
        "with queue.type=BatchCQ): read but not written by this version, so repair writes "
        "nothing to this store"
    )


def test_an_unknown_directory_is_named_and_keeps_writers_off(tmp_path):
    root = copy_store("a-basic", tmp_path)
    (root / "consumequeue.old").mkdir()
    res = run("info", "--store", root, "--format", "json")
    assert res.stderr == (
        f"rmqctl: note: {root}/consumequeue.old: a directory rmqctl does not know: not read (no "
        "RocketMQ version rmqctl knows keeps it in a store root)\n"
    )
    res = run("rebuild", "index", "--dry-run", "--store", root)
    one_line_error(res, "consumequeue.old: a directory rmqctl does not know: not read by this version", "rebuild index")


def test_an_unknown_file_is_listed_but_no_writer_is_kept_off(tmp_path):
    root = copy_store("a-basic", tmp_path)
    (root / "notes.txt").write_text("x")
    parts = Store(root).parts
    assert [(p.kind, p.blocks_writers) for p in parts.unread] == [("unknown-file", False)]
    parts.refuse_writer("repair")  # nothing raised
    res = run("info", "--store", root, "--format", "json")
    assert res.stderr == ""


def test_stale_file_queues_and_config_rdb_are_parts_not_read_compaction_topics_and_config_dbs_are_read(tmp_path):
    root = copy_store(ROCKS, tmp_path)
    (root / "compaction" / "compactionLog" / "T" / "0").mkdir(parents=True)
    (root / "compaction" / "compactionLog" / "T" / "0" / "00000000000000000000").write_bytes(b"\0" * 8)
    (root / "config" / "consumerOffsets").mkdir(parents=True)
    shutil.copy(root / "consumequeue" / "CURRENT", root / "config" / "consumerOffsets" / "CURRENT")
    (root / "config" / "rdb").mkdir()  # configManagerVersion=V2's ConfigStorage
    shutil.copy(root / "consumequeue" / "CURRENT", root / "config" / "rdb" / "CURRENT")
    (root / "consumequeue" / "OldTopic" / "0").mkdir(parents=True)
    (root / "RocksDBMessageStore").mkdir()
    parts = Store(root, load_config(broker_conf(ROCKS))).parts
    assert parts.find("compaction").read and not parts.find("compaction").understood  # read; no writer keeps it
    assert parts.find("rocksdb-config").read and not parts.find("rocksdb-config").understood
    assert sorted((p.kind, p.what) for p in parts.unread) == [
        ("consumequeue-files", "file consume queues beside the RocksDB one"),
        ("rocksdb-config-other", "RocksDB config database rdb"),
        ("rocksdb-message-store", "RocksDB message store (5.4+: index, timer, transactions)"),
    ]


def test_an_unknown_store_type_is_not_read(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("storeType=tieredRocksDB\n")
    store = Store(fixture_dir("a-basic") / "store", load_config(conf))
    assert not store.parts.queues_read
    assert store.parts.find("consumequeue").line() == (
        f"{fixture_dir('a-basic')}/store/consumequeue: consume queues of storeType=tieredRocksDB: not read (a storeType "
        "this version does not know)"
    )


def test_a_compaction_checkpoint_that_cannot_be_read_is_not_taken_for_an_empty_one(tmp_path):
    """Layout detection reads position-checkpoint to tell an idle compaction part; a path it cannot read (here a
    directory) is not known to be empty, and raised IsADirectoryError out of the layout instead."""
    from rmqctl.parts import empty_offset_map

    (tmp_path / "position-checkpoint").mkdir()
    (tmp_path / "empty").write_text('{"queueOffsetMap":{}}')
    assert (empty_offset_map(tmp_path / "position-checkpoint"), empty_offset_map(tmp_path / "empty")) == (False, True)
