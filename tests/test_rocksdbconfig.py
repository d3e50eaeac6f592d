"""Topics, subscription groups and consumer offsets kept in RocksDB (storeType=defaultRocksDB, 5.2+), on a copy
of i-rocksdb-cq (written by RocketMQ 5.3.3 with storeType=defaultRocksDB).

No RocketMQ code here writes these databases, so they are built with rocksdict with the broker's column family
names, keys and values (RocksDB{ConsumerOffset,TopicConfig,SubscriptionGroup}Manager, ConfigRocksDBStorage),
the entries taken from a real broker's JSON (k-combine-cq's topics.json, the fastjson shape of the others), and
Debian's `ldb` reads every database as an independent reader: what rmqctl reads must be what ldb scans. The
separate layout is also opened the way RocketMQ 5.3.3's ConfigRocksDBStorage opens it (its options, rocksdbjni,
fastjson into RocketMQ's classes: tests/java/ConfigDbRead.java).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import broker_conf, copy_store, fixture_dir, jsonl, one_line_error, run, tmpfs_at, truth, write_rocksdb
from test_batchcq import oracle_classpath
from rmqctl import Store, load_config
from rmqctl.parts import CONFIG_DATABASES
from rmqctl.rocksdbconfig import KINDS, METADATA, load
from rmqctl.views.diff import diff_configs

ROCKS = "i-rocksdb-cq"
VERSION_KEY = b"kvDataVersionKey"
OFFSETS = {"RocksTopicA@g1": {"0": 10, "1": "70"}, "Gone@g1": {"0": 1}}  # "70": a number written as a string
GROUP = {
    "groupName": "g1",
    "consumeEnable": True,
    "consumeFromMinEnable": True,
    "consumeBroadcastEnable": False,
    "consumeMessageOrderly": False,
    "retryQueueNums": 1,
    "retryMaxTimes": 16,
    "brokerId": 0,
    "whichBrokerWhenConsumeSlowly": 1,
    "notifyConsumerIdsChangedEnable": True,
    "groupSysFlag": 0,
    "consumeTimeoutMinute": 15,
    "subscriptionDataSet": [],
    "attributes": {},
}


def topic_configs() -> dict:
    """A real 5.3.3 TopicConfig (k-combine-cq's topics.json) for each topic of i-rocksdb-cq."""
    real = json.loads((fixture_dir("k-combine-cq") / "store" / "config" / "topics.json").read_text())
    template = next(iter(real["topicConfigTable"].values()))
    truth = [json.loads(line) for line in (fixture_dir(ROCKS) / "truth-consumequeue.jsonl").read_text().splitlines()]
    return {t: {**template, "topicName": t} for t in sorted({u["topic"] for u in truth})}


def value(entry) -> bytes:
    return json.dumps(entry, separators=(",", ":")).encode()


def version(counter: int) -> bytes:
    return value({"counter": counter, "stateVersion": 0, "timestamp": 1795870652926})


def build(directory: Path, families: dict[str, dict[bytes, bytes]]):
    """A config database as ConfigRocksDBStorage keeps it: ConfigHelper's options (5.3.3), no compression."""
    write_rocksdb(directory, families, "none")


def tables(offsets=None, topics=None, groups=None) -> dict:
    """file name -> (key -> value bytes) of each kind as the managers write them."""
    return {
        "consumerOffset.json": {k.encode(): value({"offsetTable": v}) for k, v in (offsets or OFFSETS).items()},
        "topics.json": {k.encode(): value(v) for k, v in (topics or topic_configs()).items()},
        "subscriptionGroup.json": {k.encode(): value(v) for k, v in (groups or {"g1": GROUP}).items()},
    }


def separate(root: Path, counters=(3, 3, 3), **kw):
    """5.2-5.3.3's layout: a database per kind (ConfigRocksDBStorage opens default, kvDataVersion, forbidden)."""
    for (name, entries), counter in zip(tables(**kw).items(), counters):
        build(
            root / "config" / KINDS[name].separate,
            {"default": entries, "kvDataVersion": {VERSION_KEY: version(counter)}, "forbidden": {}},
        )


def single(root: Path, counter=5, extra: dict | None = None, **kw):
    """useSingleRocksDBForAllConfigs: config/metadata with a data and a version column family per kind."""
    families = {}
    for name, entries in tables(**kw).items():
        kind = KINDS[name]
        families[kind.data_cf] = entries
        families[kind.version_cf] = {VERSION_KEY: version(counter)}
    build(root / "config" / "metadata", {**families, **(extra or {})})


def ldb(db: Path, cf: str, tmp_path: Path) -> dict[str, str]:
    """`ldb scan` of one column family of a copy (ldb may write into what it opens): key -> value text."""
    copy = tmp_path / f"ldb-{db.name}-{cf}"
    shutil.copytree(db, copy)
    res = subprocess.run(
        ["ldb", f"--db={copy}", "--ignore_unknown_options", f"--column_family={cf}", "scan"],
        capture_output=True,
        text=True,
        check=True,
    )
    shutil.rmtree(copy)
    return dict(line.split(" : ", 1) for line in res.stdout.splitlines())


def store(root: Path, conf: str | None = None) -> Store:
    return Store(root, load_config(conf or broker_conf(ROCKS)))


@pytest.fixture
def root(tmp_path):
    r = copy_store(ROCKS, tmp_path / "copy")
    (r / "config").mkdir()
    return r


# -- what is read, checked against ldb --------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["separate", "single"])
def test_each_table_reads_as_ldb_scans_it(root, tmp_path, layout):
    (separate if layout == "separate" else single)(root)
    for name, kind in KINDS.items():
        db, cf = (
            (root / "config" / kind.separate, "default")
            if layout == "separate"
            else (root / "config" / "metadata", kind.data_cf)
        )
        scanned = {k: json.loads(v) for k, v in ldb(db, cf, tmp_path).items()}
        if kind.replaces:
            scanned = {k: v["offsetTable"] for k, v in scanned.items()}
        loaded = load(root, store(root).config, kind)
        assert loaded.table == scanned and len(scanned) == len(tables()[name])
        assert loaded.counter == (3 if layout == "separate" else 5)
        version_cf = "kvDataVersion" if layout == "separate" else kind.version_cf
        assert json.loads(ldb(db, version_cf, tmp_path)["kvDataVersionKey"])["counter"] == loaded.counter


def rocketmq_read(oracle, db: Path, kind: str) -> subprocess.CompletedProcess:
    """tests/java/ConfigDbRead.java on `db`: RocketMQ's options and classes with rocksdbjni (read5.sh's jar)."""
    jar = subprocess.run(
        ["bash", "-c", f'. "{oracle}/lib/env.sh" && oracle_rocksdbjni'], capture_output=True, text=True, check=True
    ).stdout.strip()
    harness = Path(__file__).parent / "java" / "ConfigDbRead.java"
    home = db.parents[2] / "java-home"  # outside the store: RocketMQ's classes log below user.home
    return subprocess.run(
        ["java", f"-Duser.home={home}", "-cp", f"{oracle_classpath(oracle)}:{jar}", str(harness), str(db), kind],
        capture_output=True,
        text=True,
    )


def test_rocketmqs_reader_reads_what_rmqctl_reads(root, java_oracle):
    separate(root)
    for name, kind in (
        ("consumerOffset.json", "offsets"),
        ("topics.json", "topics"),
        ("subscriptionGroup.json", "groups"),
    ):
        res = rocketmq_read(java_oracle, root / "config" / KINDS[name].separate, kind)
        assert res.returncode == 0, res.stderr
        head, *lines = res.stdout.splitlines()
        theirs = {k: json.loads(v) for k, v in (line.split("\t", 1) for line in lines)}
        loaded = load(root, store(root).config, KINDS[name])
        ours = (
            {k: {q: int(o) for q, o in v.items()} for k, v in loaded.table.items()}
            if kind == "offsets"
            else loaded.table
        )
        assert (head, theirs) == (f"#version {loaded.counter}", ours)


def test_rocketmqs_reader_fails_where_rmqctl_refuses(root, java_oracle):
    offsets = tables()["consumerOffset.json"]
    offsets[b"RocksTopicA@g1"] = b'{"offsetTable":{0:'
    build(
        root / "config" / "consumerOffsets",
        {"default": offsets, "kvDataVersion": {VERSION_KEY: version(3)}, "forbidden": {}},
    )
    assert rocketmq_read(java_oracle, root / "config" / "consumerOffsets", "offsets").returncode != 0
    res = run("consumers", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
    one_line_error(res, "column family default key 'RocksTopicA@g1' is not JSON")


def test_consumers_read_offsets_from_rocksdb_as_from_the_json_file(root, tmp_path):
    single(root)
    from_db = jsonl(
        run("consumers", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl").stdout
    )
    json_root = copy_store(ROCKS, tmp_path / "json")
    (json_root / "config").mkdir()
    (json_root / "config" / "consumerOffset.json").write_text(
        json.dumps({"offsetTable": OFFSETS, "dataVersion": {"counter": 1}})
    )
    from_json = jsonl(
        run("consumers", "--store", json_root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl").stdout
    )
    assert len(from_db) == 3 and {r["source"] for r in from_db} == {str(root / "config" / "metadata")}
    strip = [{k: v for k, v in r.items() if k != "source"} for r in from_db]
    assert strip == [{k: v for k, v in r.items() if k != "source"} for r in from_json]
    rows = {(r["topic"], r["queueId"]): r for r in from_db}
    assert (rows[("RocksTopicA", 1)]["offset"], rows[("RocksTopicA", 1)]["status"]) == (70, "ahead-of-max")
    assert rows[("Gone", 0)]["status"] == "deleted-topic"  # in no queue and not among the broker's topics
    # an lmqConsumerOffset.json beside is unread for RocksDB's sake, not for enableLmq's (the note said enableLmq)
    (root / "config" / "lmqConsumerOffset.json").write_text('{"offsetTable":{}}')
    res = run("consumers", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
    assert "lmqConsumerOffset.json: not loaded by this broker (it keeps consumer offsets in RocksDB" in res.stderr


def test_config_verify_knows_topics_from_rocksdb(root):
    offsets = {**OFFSETS, "Elsewhere@g1": {"0": 0}}
    separate(root, offsets=offsets, topics={**topic_configs(), "Elsewhere": {"topicName": "Elsewhere"}})
    res = run("verify", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
    unknown = [f for f in jsonl(res.stdout) if f.get("kind") == "config-offset-unknown-topic"]
    # Elsewhere is a topic the database holds
    assert [f["detail"] for f in unknown] == [
        "offsets of g1 for topic 'Gone', which has no consumequeue and is not in topics.json"
    ]


# -- which database and which version wins ----------------------------------------------------------------------
def test_a_newer_separate_database_is_migrated_over_the_metadata_one(root):
    single(root, counter=5, offsets={"RocksTopicA@g1": {"0": 1}})
    separate(root, counters=(9, 2, 2), offsets={"RocksTopicA@g1": {"0": 20}, "Old@g1": {"0": 4}})
    loaded = load(root, store(root).config, KINDS["consumerOffset.json"])
    assert loaded.table == {"RocksTopicA@g1": {"0": 20}, "Old@g1": {"0": 4}}  # put over the metadata entries
    assert loaded.counter == 11 and loaded.path == root / "config" / "metadata"
    topics = load(root, store(root).config, KINDS["topics.json"])
    assert topics.counter == 5 and "not newer: already migrated, ignored" in topics.sources[-1]


def test_info_says_where_each_config_is_kept_and_what_load_read(root):
    single(root, counter=5)
    separate(root, counters=(9, 2, 2))
    res = run("info", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "table")
    lines = [line for line in res.stdout.splitlines() if line.startswith("config ")]
    meta, sep = root / "config" / "metadata", root / "config"
    assert lines == [
        f"config     consumerOffset.json in RocksDB {meta}: 2 entries, DataVersion 11; load() reads {meta} (DataVersion "
        f"5); then {sep / 'consumerOffsets'} (DataVersion 9, newer: migrated over it)",
        f"config     topics.json in RocksDB {meta}: {len(topic_configs())} entries, DataVersion 5; load() reads {meta} "
        f"(DataVersion 5); then {sep / 'topics'} (DataVersion 2, not newer: already migrated, ignored)",
        f"config     subscriptionGroup.json in RocksDB {meta}: 1 entries, DataVersion 5; load() reads {meta} "
        f"(DataVersion 5); then {sep / 'subscriptionGroups'} (DataVersion 2, not newer: already migrated, ignored)",
    ]


def test_the_broker_conf_picks_the_layout(root, tmp_path):
    single(root, counter=5, offsets={"RocksTopicA@g1": {"0": 1}})
    separate(root, counters=(3, 3, 3))
    conf = tmp_path / "broker.conf"
    conf.write_text(broker_conf(ROCKS).read_text() + "\nuseSingleRocksDBForAllConfigs=false\n")
    loaded = load(root, load_config(conf), KINDS["consumerOffset.json"])
    # the metadata database is not the broker's then
    assert loaded.path == root / "config" / "consumerOffsets" and loaded.table == {k: v for k, v in OFFSETS.items()}


def test_a_newer_json_file_replaces_the_offsets_and_an_older_one_is_not_merged(root):
    separate(root, counters=(3, 3, 3))
    path = root / "config" / "consumerOffset.json"
    path.write_text('{"dataVersion":{"counter":7},"offsetTable":{"RocksTopicA@g2":{0:5}}}')  # fastjson int keys
    loaded = load(root, store(root).config, KINDS["consumerOffset.json"])
    assert loaded.table == {"RocksTopicA@g2": {"0": 5}} and loaded.counter == 8
    path.write_text('{"dataVersion":{"counter":2},"offsetTable":{"RocksTopicA@g2":{0:5}}}')
    assert load(root, store(root).config, KINDS["consumerOffset.json"]).table == OFFSETS


def test_a_json_only_store_of_the_default_store_type_ignores_a_stale_database(tmp_path):
    root = copy_store("j-batchcq", tmp_path)
    separate(root)
    info = json.loads(
        run("info", "--store", root, "--broker-config", broker_conf("j-batchcq"), "--format", "json").stdout
    )
    assert "rocksdbConfigs" not in info  # storeType=default: the broker's managers are the JSON ones
    assert store(root, broker_conf("j-batchcq")).parts.find("rocksdb-config").read


# -- fail closed ------------------------------------------------------------------------------------------------
def test_an_unknown_column_family_is_named_not_read(root):
    single(root, extra={"lmqOffset": {b"k": b"{}"}})
    res = run("consumers", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
    one_line_error(res, str(root / "config" / "metadata"), "'lmqOffset'", "a layout this version does not read")
    info = run("info", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "table").stdout
    assert "config     consumerOffset.json in RocksDB: not read (" in info


def test_a_missing_column_family_reads_as_the_broker_reads_it_empty(root):
    families = {
        KINDS["topics.json"].data_cf: tables()["topics.json"],
        KINDS["topics.json"].version_cf: {VERSION_KEY: version(4)},
    }
    build(root / "config" / "metadata", families)  # no offsets ever committed: no consumerOffset family yet
    res = run("consumers", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
    assert (res.exit_code, res.stdout) == (0, "")
    assert res.stderr == f"rmqctl: {root / 'config' / 'metadata'}: no committed offset\n"


@pytest.mark.parametrize("damage", ["garbage-value", "garbage-version", "no-current"])
def test_damage_is_one_line_and_exit_2(root, damage):
    offsets = tables()["consumerOffset.json"]
    if damage == "garbage-value":
        offsets[b"RocksTopicA@g1"] = b'{"offsetTable":{0:'
    counter = b"not json" if damage == "garbage-version" else version(3)
    build(
        root / "config" / "consumerOffsets",
        {"default": offsets, "kvDataVersion": {VERSION_KEY: counter}, "forbidden": {}},
    )
    if damage == "no-current":
        (root / "config" / "consumerOffsets" / "CURRENT").unlink()
    res = run("consumers", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
    needle = {
        "garbage-value": "column family default key 'RocksTopicA@g1' is not JSON",
        "garbage-version": "column family kvDataVersion key kvDataVersionKey is not JSON",
        "no-current": "without its CURRENT file",
    }[damage]
    one_line_error(res, str(root / "config" / "consumerOffsets"), needle)


# -- writers ----------------------------------------------------------------------------------------------------
def test_config_restore_refuses_a_config_kept_in_rocksdb(root):
    separate(root)
    (root / "config" / "consumerOffset.json").write_text('{"offsetTable":{')
    (root / "config" / "consumerOffset.json.bak").write_text('{"offsetTable":{}}')
    before = (root / "config" / "consumerOffset.json").read_bytes()
    res = run("config", "restore", "--store", root, "--broker-config", broker_conf(ROCKS))
    one_line_error(
        res,
        str(root / "config" / "consumerOffset.json"),
        "keeps consumerOffset.json's table in RocksDB",
        "config restore writes nothing",
    )
    assert (root / "config" / "consumerOffset.json").read_bytes() == before


def config_bytes(root: Path) -> dict[str, bytes]:
    """Every file below config/ (the databases and the JSON files): what a writer that writes no config keeps."""
    return {str(f.relative_to(root)): f.read_bytes() for f in sorted((root / "config").rglob("*")) if f.is_file()}


@pytest.fixture
def root_on_tmpfs(tmp_path):
    """`root` on a near-empty tmpfs: a cleanup there is decided by age alone, not by how full this machine's disk is."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        r = copy_store(ROCKS, mnt)
        (r / "config").mkdir()
        yield r


@pytest.mark.tmpfs
def test_clean_reads_the_config_databases_and_writes_none_and_rocketmq_loads_the_result(
    root_on_tmpfs, tmp_path, java_oracle
):
    """The first two commitlog files ten days old, the rest an hour old: a manual clean deletes those two and no
    config database."""
    root = root_on_tmpfs
    separate(root)
    before = config_bytes(root)
    files = sorted((root / "commitlog").iterdir())
    old = files[:2]
    for f in files:  # the first two ten days old, past fileReservedTime=72 h, go on a manual delete; the rest
        t = time.time() - (10 * 86400 if f in old else 3600)  # an hour old (the fixture's own mtimes age)
        os.utime(f, (t, t))
    args = ("clean", "--store", root, "--broker-config", broker_conf(ROCKS), "--now", "--format", "jsonl")
    planned = run(*args, "--dry-run")
    assert planned.exit_code == 0, planned.stderr
    deleted = [r["file"] for r in jsonl(planned.stdout) if r["action"] == "delete" and r["kind"] == "commitlog"]
    assert deleted == [f"commitlog/{f.name}" for f in old]
    applied = run(*args, "--apply")
    assert applied.exit_code == 0, applied.stderr
    assert [r["file"] for r in jsonl(applied.stdout) if r["action"] == "delete"] == [
        r["file"] for r in jsonl(planned.stdout) if r["action"] == "delete"
    ]
    assert not any(f.exists() for f in old) and config_bytes(root) == before
    out = tmp_path / "read5"
    proc = subprocess.run(
        [str(java_oracle / "read5.sh"), "--no-dispatch", str(root), str(broker_conf(ROCKS)), str(out)],
        capture_output=True,
        text=True,
    )
    summary = json.loads((out / "recovered-summary.json").read_text())
    # mappedFileSizeCommitLog=65536
    kept = [
        t
        for t in jsonl((fixture_dir(ROCKS) / "truth-consumequeue.jsonl").read_text())
        if t["commitLogOffset"] >= 2 * 65536
    ]
    assert (summary["loadReturned"], summary["minPhyOffset"]) == (True, 2 * 65536), proc.stdout[-2000:]
    read = jsonl((out / "messages-read.jsonl").read_text())
    assert sorted(r["commitLogOffset"] for r in read) == sorted(t["commitLogOffset"] for t in kept)
    assert all(r["ok"] for r in read)


def test_rebuild_consumequeue_reads_beside_the_config_databases_and_writes_none(root):
    separate(root)
    before = config_bytes(root)
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
    assert (res.exit_code, res.stdout) == (0, "")
    assert res.stderr == "rmqctl: 15 queue(s) rebuilt from 603 records: identical to the store's, nothing to change\n"
    assert config_bytes(root) == before


def test_repair_restore_and_append_run_beside_the_config_databases_and_write_none(tmp_path):
    """c-v5-features: a 5.3.3 store of file queues (repair writes those), with config databases beside them and
    its last record's second half zeroed by a crash."""
    name = "c-v5-features"
    root = copy_store(name, tmp_path / "copy")
    (root / "config").mkdir()
    separate(root)
    before = config_bytes(root)
    last = max(t["commitLogOffset"] for t in truth(name, "truth-consumequeue.jsonl"))
    size = next(t["size"] for t in truth(name, "truth-consumequeue.jsonl") if t["commitLogOffset"] == last)
    file_size = 131072  # mappedFileSizeCommitLog
    with open(root / "commitlog" / f"{last - last % file_size:020d}", "r+b") as fh:
        fh.seek(last % file_size + size // 2)
        fh.write(bytes(size - size // 2))
    (root / "abort").touch()
    args = ("repair", "--store", root, "--broker-config", broker_conf(name), "--format", "jsonl")
    planned = run(*args, "--dry-run")
    assert planned.exit_code == 0, planned.stderr
    assert [(r["action"], r["commitLogOffset"]) for r in jsonl(planned.stdout) if r["action"] == "cut"] == [
        ("cut", last)
    ]
    repaired = run(*args)
    assert repaired.exit_code == 0, repaired.stderr
    assert jsonl(repaired.stdout) == jsonl(planned.stdout)
    assert config_bytes(root) == before
    # restore (of repair's backup) and append never write a config either
    backup = next(p.name for p in root.iterdir() if p.name.startswith(".rmqctl-backup-"))
    restored = run("restore", backup, "--store", root, "--broker-config", broker_conf(name))
    assert restored.exit_code == 0, restored.stderr
    assert run(*args).exit_code == 0  # the torn tail is back: cut it again before appending
    appended = run(
        "append",
        "--store",
        root,
        "--broker-config",
        broker_conf(name),
        "--topic",
        "RocksTopicA",
        "--body",
        "beside the config databases",
        "--format",
        "jsonl",
    )
    assert appended.exit_code == 0, appended.stderr
    assert config_bytes(root) == before


def test_a_database_the_finder_does_not_know_still_keeps_every_writer_off(root):
    separate(root)
    build(root / "config" / "rdb", {"default": {b"k": b"v"}})  # configManagerVersion=V2's database: not read
    res = run("clean", "--store", root, "--broker-config", broker_conf(ROCKS), "--dry-run")
    one_line_error(
        res,
        str(root / "config" / "rdb"),
        "RocksDB config database rdb: not read by this version",
        "so clean writes nothing to this store",
    )


def test_verify_reports_a_database_the_brokers_load_fails_on_as_a_finding(root):
    offsets = tables()["consumerOffset.json"]
    offsets[b"RocksTopicA@g1"] = b"[1,2]"
    build(root / "config" / "consumerOffsets", {"default": offsets, "kvDataVersion": {VERSION_KEY: version(3)}})
    res = run("verify", "--store", root, "--broker-config", broker_conf(ROCKS), "--format", "jsonl")
    found = [f for f in jsonl(res.stdout) if f.get("kind") == "config-load-fails"]
    assert res.exit_code == 1 and [(f["severity"], f["detail"]) for f in found] == [
        (
            "error",
            "column family default key 'RocksTopicA@g1' is not an offset table ([1, 2]): the broker's load of "
            "this database fails",
        )
    ]


def test_the_parts_finder_knows_the_same_databases():
    assert set(CONFIG_DATABASES) == {METADATA, *(k.separate for k in KINDS.values())}


# -- diff -------------------------------------------------------------------------------------------------------
def test_diff_compares_the_tables_each_broker_loads_rocksdb_or_json(tmp_path):
    a, b = copy_store(ROCKS, tmp_path / "a"), copy_store(ROCKS, tmp_path / "b")
    (a / "config").mkdir()
    (b / "config").mkdir()
    single(a)
    (b / "config" / "consumerOffset.json").write_text(
        json.dumps({"offsetTable": OFFSETS, "dataVersion": {"counter": 7}})
    )
    separate(b, offsets={"RocksTopicA@g1": {"0": 12}})  # the newer JSON file (7 > 3) replaces these
    assert [(c.config, c.entriesA, c.entriesB, c.same) for c in diff_configs(store(a), store(b))] == [
        ("consumerOffset.json", 3, 3, True),
        ("topics.json", len(topic_configs()), len(topic_configs()), True),
        ("subscriptionGroup.json", 1, 1, True),
    ]
    (b / "config" / "consumerOffset.json").write_text(
        json.dumps(
            {
                "offsetTable": {**OFFSETS, "RocksTopicA@g1": {"0": 11, "1": 70}, "New@g2": {"3": 0}},
                "dataVersion": {"counter": 7},
            }
        )
    )
    offsets = diff_configs(store(a), store(b))[0]
    assert (offsets.sourceA, offsets.sourceB) == (str(a / "config" / "metadata"), str(b / "config" / "consumerOffsets"))
    assert (offsets.onlyInA, offsets.onlyInB, offsets.differ) == ([], ["New@g2 queue 3"], ["RocksTopicA@g1 queue 0"])


def test_diff_prints_each_config_table(store_copy, tmp_path):
    a = store_copy("a-basic")
    b = copy_store("a-basic", tmp_path / "b")
    for root, offsets in ((a, "{0:10,1:5}"), (b, "{0:10,1:6,2:1}")):
        (root / "config" / "consumerOffset.json").write_text('{"offsetTable":{"TopicTest@g":' + offsets + "}}")
    res = run("diff", a, b, "--broker-config", broker_conf("a-basic"), "--format", "table")
    assert res.exit_code == 1
    assert [line for line in res.stdout.splitlines() if ".json:" in line] == [
        f"consumerOffset.json: different; A 2 entries ({a / 'config' / 'consumerOffset.json'}), B 3 "
        f"({b / 'config' / 'consumerOffset.json'}); only in B: TopicTest@g queue 2; differ: TopicTest@g queue 1"
    ]
