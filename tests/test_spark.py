"""The Spark pipeline on a real local SparkSession (one for the whole test session: it takes seconds to start):
the data sources against `dump` and RocketMQ's truth files, and the `rmqctl spark` commands."""

from __future__ import annotations

import base64
import json
import os
import site
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import ALL_FIXTURES, FIXTURES, append_like_last, broker_conf, copy_store, fixture_dir, jsonl, run, truth

pytest.importorskip("pyspark")
pa_dataset = pytest.importorskip("pyarrow.dataset")

pytestmark = pytest.mark.spark

DUMP_ONLY = {"body", "bodyEncoding"}
REPO = Path(__file__).resolve().parents[1]


def store_root(name: str) -> str:
    return str((fixture_dir(name) / "store").resolve())


def dump_rows(name: str) -> list[dict]:
    """`rmqctl dump commitlog --format jsonl --body base64`: what the CLI prints (d-crashed exits 2 after
    printing every readable message)."""
    r = run(
        "dump",
        "commitlog",
        "--store",
        fixture_dir(name) / "store",
        "--broker-config",
        broker_conf(name),
        "--format",
        "jsonl",
        "--body",
        "base64",
    )
    assert r.exit_code == (2 if name == "d-crashed" else 0), r.stderr
    return jsonl(r.stdout)


def as_utc(when):
    """A timestamp from collect() (naive, local time) or from pyarrow (aware, UTC) as an aware UTC datetime."""
    import datetime as dt

    return (when if when.tzinfo else when.astimezone()).astimezone(dt.timezone.utc)


def assert_same_message(row: dict, dumped: dict, store: str):
    """A DataFrame (or Parquet) row against the dump object: every dump field (the store times under
    `<name>Ms`, and as the same instant in the timestamp column), the stored body bytes, the derived
    tags/keys columns."""
    import datetime as dt

    assert row["store"] == store
    for k, v in dumped.items():
        if k in ("bornTimestamp", "storeTimestamp"):
            assert row[f"{k}Ms"] == v, (k, dumped["commitLogOffset"])
            assert as_utc(row[k]) == dt.datetime.fromtimestamp(v / 1000, dt.timezone.utc), dumped["commitLogOffset"]
        elif k not in DUMP_ONLY:
            assert row[k] == v, (k, dumped["commitLogOffset"])
    assert base64.b64encode(bytes(row["body"])).decode() == dumped["body"]
    props = dumped["properties"]
    assert row["tags"] == props.get("TAGS")
    keys = props.get("KEYS")
    assert row["keys"] == (None if keys is None else [k for k in keys.split(" ") if k])


def assert_sysflag_as_java_reads_it(rows: list[dict], name: str):
    """sysFlag's named columns against the truth file's sysFlagInfo (MessageSysFlag's reading, in Java):
    transaction under the names `dump commitlog --sys-flag transaction=...` takes."""
    info = {t["commitLogOffset"]: t["sysFlagInfo"] for t in truth(name, "truth-messages.jsonl")}
    for row in rows:
        want = dict(info[row["commitLogOffset"]])
        assert row["transactionType"] == want.pop("transaction").removesuffix("_TYPE").lower()
        want.setdefault("compressionType", None)
        assert {k: row[k] for k in want} == want, row["commitLogOffset"]


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_dataframe_rows_equal_dump(spark, name):
    df = (
        spark.read.format("rocketmq")
        .option("brokerConfig", str(broker_conf(name)))
        .option("verifyCrc", "true")
        .load(str(fixture_dir(name) / "store"))
    )
    rows = sorted((r.asDict() for r in df.collect()), key=lambda r: r["commitLogOffset"])
    dumped = dump_rows(name)
    assert len(rows) == len(dumped) > 0
    for row, d in zip(rows, dumped):
        row["properties"] = dict(row["properties"])
        assert_same_message(row, d, store_root(name))
    assert_sysflag_as_java_reads_it(rows, name)
    bad_crc = [r["commitLogOffset"] for r in rows if not r["crcOk"]]
    corruption = FIXTURES / name / "corruption.json"
    flipped = (
        [json.loads(corruption.read_text())["flippedBodyByte"]["messageCommitLogOffset"]] if corruption.exists() else []
    )
    assert bad_crc == flipped


def test_commitlog_directory_and_pushdown(spark):
    """A commitlog directory (with the geometry as an option) reads as its store; a topic and offset filter
    reads only the files in range and gives what filtering the dump gives."""
    name = "a-basic"
    commitlog = fixture_dir(name) / "store" / "commitlog"
    df = spark.read.format("rocketmq").option("mappedFileSizeCommitLog", "65536").load(str(commitlog))
    lo, hi = 100_000, 300_000
    picked = df.filter("topic = 'OrderTopic' AND commitLogOffset >= 100000 AND commitLogOffset < 300000")
    assert picked.rdd.getNumPartitions() == len(range(lo // 65536, (hi - 1) // 65536 + 1))
    rows = picked.collect()
    assert {r.store for r in rows} == {store_root(name)}
    got = sorted(r.commitLogOffset for r in rows)
    want = [
        d["commitLogOffset"] for d in dump_rows(name) if d["topic"] == "OrderTopic" and lo <= d["commitLogOffset"] < hi
    ]
    assert got == want and got


def test_consumequeue_and_index_sources(spark):
    name = "b-mixed"
    cq = (
        spark.read.format("rocketmq-consumequeue")
        .option("brokerConfig", str(broker_conf(name)))
        .load(str(fixture_dir(name) / "store"))
    )
    fields = ["topic", "queueId", "queueOffset", "commitLogOffset", "size", "tagsCode"]
    got = sorted(tuple(r[f] for f in fields) for r in cq.collect())
    assert got == sorted(tuple(t[f] for f in fields) for t in truth(name, "truth-consumequeue.jsonl"))

    ix = (
        spark.read.format("rocketmq-index")
        .option("brokerConfig", str(broker_conf(name)))
        .load(str(fixture_dir(name) / "store"))
    )
    r = run(
        "dump",
        "index",
        "--store",
        fixture_dir(name) / "store",
        "--broker-config",
        broker_conf(name),
        "--format",
        "jsonl",
    )
    entries = [{k: v for k, v in e.items() if k != "kind"} for e in jsonl(r.stdout) if e["kind"] == "entry"]
    got = sorted(
        ({k: v for k, v in row.asDict().items() if k != "store"} for row in ix.collect()),
        key=lambda e: (e["file"], e["index"]),
    )
    assert got == entries and got


def test_consumequeue_source_of_a_rocksdb_store(spark):
    """storeType=defaultRocksDB: the units of the RocksDB consume queue, with the store time they carry."""
    name = "i-rocksdb-cq"
    df = (
        spark.read.format("rocketmq-consumequeue").option("brokerConfig", str(broker_conf(name))).load(store_root(name))
    )
    got = sorted(
        (r.topic, r.queueId, r.queueOffset, r.commitLogOffset, r.size, r.tagsCode, r.storeTimestamp, r.file)
        for r in df.collect()
    )
    assert got == sorted(
        (
            t["topic"],
            t["queueId"],
            t["queueOffset"],
            t["commitLogOffset"],
            t["size"],
            t["tagsCode"],
            t["storeTime"],
            None,
        )
        for t in truth(name, "truth-consumequeue.jsonl")
    )


def test_export_two_stores_parquet_equals_dump(spark, tmp_path):
    """`spark export` of two stores (each with its broker.conf), read back with pyarrow: every message of both
    stores, each under its own `store`, equal to what dump prints; Spark reads the topic directories back
    to the same topics (b-mixed has %RETRY%, %DLQ% and UTF-8 topic names)."""
    names = ["b-mixed", "c-v5-features"]
    out = tmp_path / "export"
    args = ["spark", "export", "--out", out]
    for name in names:
        args += ["--store", fixture_dir(name) / "store"]
    for name in names:
        args += ["--broker-config", broker_conf(name)]
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    summary = jsonl(r.stdout)
    table = pa_dataset.dataset(out, format="parquet", partitioning="hive").to_table()
    by_offset = {(row["store"], row["commitLogOffset"]): row for row in table.to_pylist()}
    assert len(by_offset) == table.num_rows
    from_spark = {
        (r["store"], r["topic"]): r["count"]
        for r in spark.read.parquet(str(out)).groupBy("store", "topic").count().collect()
    }
    assert from_spark == {(s["store"], s["topic"]): s["messages"] for s in summary}
    for name in names:
        dumped = dump_rows(name)
        store = store_root(name)
        assert sum(s["messages"] for s in summary if s["store"] == store) == len(dumped)
        assert sum(1 for s, _ in by_offset if s == store) == len(dumped)
        for d in dumped:
            row = dict(by_offset[(store, d["commitLogOffset"])])
            row["properties"] = dict(row["properties"])
            assert_same_message(row, d, store)


def test_export_as_orc_holds_the_same_messages(spark, tmp_path):
    """--format orc: the same messages under the same topic directories, read back by Spark's ORC reader."""
    name = "b-mixed"
    out = tmp_path / "export"
    r = run(
        "spark",
        "export",
        "--out",
        out,
        "--format",
        "orc",
        "--store",
        fixture_dir(name) / "store",
        "--broker-config",
        broker_conf(name),
    )
    assert r.exit_code == 0, r.stderr
    files = sorted(p.name for p in out.rglob("part-*"))
    assert files and all(f.endswith(".snappy.orc") for f in files)
    df = spark.read.orc(str(out))
    got = sorted((row["topic"], row["commitLogOffset"]) for row in df.select("topic", "commitLogOffset").collect())
    assert got == sorted((d["topic"], d["commitLogOffset"]) for d in dump_rows(name))
    assert {s["topic"]: s["messages"] for s in jsonl(r.stdout)} == {
        row["topic"]: row["count"] for row in df.groupBy("topic").count().collect()
    }


def test_stats_totals_equal_truth(spark):
    """One stats run over all four stores: per store, topic and queue, the counts, bytes, store times and
    distinct keys RocketMQ's truth gives (for d-crashed: what RocketMQ recovers)."""
    args = ["spark", "stats", "--format", "jsonl"]
    for name in ALL_FIXTURES:
        args += ["--store", fixture_dir(name) / "store"]
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    got = {(s["store"], s["topic"], s["queueId"]): s for s in jsonl(r.stdout)}
    want = {}
    for name in ALL_FIXTURES:
        records = truth(name, "truth-recovered-messages.jsonl" if name == "d-crashed" else "truth-messages.jsonl")
        groups = defaultdict(list)
        for t in records:
            groups[(store_root(name), t["topic"], t["queueId"])].append(t)
        for key, ts in groups.items():
            want[key] = {
                "store": key[0],
                "topic": key[1],
                "queueId": key[2],
                "messages": len(ts),
                "bytes": sum(t["storeSize"] for t in ts),
                "bodyBytes": sum(t["bodyLength"] for t in ts),
                "firstStoreTimestamp": min(t["storeTimestamp"] for t in ts),
                "lastStoreTimestamp": max(t["storeTimestamp"] for t in ts),
                "distinctKeys": len({k for t in ts for k in (t.get("keys") or "").split(" ") if k}),
            }
    assert got == want

    r = run("spark", "stats", "--by", "hour", "--format", "jsonl", "--store", fixture_dir("a-basic") / "store")
    hourly = Counter()
    for s in jsonl(r.stdout):
        assert s["hour"].endswith(":00:00.000+00:00")
        hourly[s["topic"], s["queueId"]] += s["messages"]
    assert hourly == Counter({k[1:]: v["messages"] for k, v in want.items() if k[0] == store_root("a-basic")})


def test_stats_and_query_take_a_time_range(spark):
    """--since/--until (ISO or epoch ms, inclusive) keep the messages the truth file has in that range."""
    import datetime as dt

    name = "b-mixed"
    msgs = truth(name, "truth-messages.jsonl")
    stamps = sorted({t["storeTimestamp"] for t in msgs})
    lo, hi = stamps[len(stamps) // 3], stamps[2 * len(stamps) // 3]
    iso = dt.datetime.fromtimestamp(lo / 1000, dt.timezone.utc).isoformat(timespec="milliseconds")
    r = run(
        "spark", "stats", "--format", "jsonl", "--store", fixture_dir(name) / "store", "--since", iso, "--until", hi
    )
    assert r.exit_code == 0, r.stderr
    assert sum(s["messages"] for s in jsonl(r.stdout)) == sum(lo <= t["storeTimestamp"] <= hi for t in msgs)
    keyed = next(t for t in msgs if t["storeTimestamp"] == hi and t.get("keys"))
    key = keyed["keys"].split(" ")[0]
    found = [
        m["commitLogOffset"]
        for m in jsonl(
            run(
                "spark",
                "query",
                "--key",
                key,
                "--format",
                "jsonl",
                "--store",
                fixture_dir(name) / "store",
                "--until",
                hi,
            ).stdout
        )
    ]
    assert keyed["commitLogOffset"] in found
    later = [
        m["commitLogOffset"]
        for m in jsonl(
            run(
                "spark",
                "query",
                "--key",
                key,
                "--format",
                "jsonl",
                "--store",
                fixture_dir(name) / "store",
                "--since",
                hi + 1,
            ).stdout
        )
    ]
    assert keyed["commitLogOffset"] not in later


def test_query_key_equals_index_lookup(spark):
    """A key found by scanning every store gives the messages `query key` finds through the index files."""
    uniq = next(t for t in truth("c-v5-features", "truth-messages.jsonl") if t["uniqKey"])
    cases = [
        (["a-basic", "b-mixed"], "TopicTest", "USER-09"),
        (["b-mixed"], "主题-トピック-🚀", "键一"),
        (["c-v5-features"], uniq["topic"], uniq["uniqKey"]),
    ]
    for stores, topic, key in cases:
        args = ["spark", "query", "--key", key, "--topic", topic, "--body", "base64", "--format", "jsonl"]
        for name in stores:
            args += ["--store", fixture_dir(name) / "store"]
        r = run(*args)
        assert r.exit_code == 0, r.stderr
        got = jsonl(r.stdout)
        want = []
        for name in stores:
            q = run(
                "query",
                "key",
                topic,
                key,
                "--store",
                fixture_dir(name) / "store",
                "--broker-config",
                broker_conf(name),
                "--body",
                "base64",
                "--format",
                "jsonl",
            )
            want += [{"store": store_root(name), **m} for m in jsonl(q.stdout)]
        assert got == want and got, (topic, key)


def test_spark_verify_reports_what_verify_reports(spark):
    """All four stores in one `spark verify`: per store, verify's own findings, in its order."""
    args = ["spark", "verify", "--format", "jsonl"]
    for name in ALL_FIXTURES:
        args += ["--store", fixture_dir(name) / "store"]
    for name in ALL_FIXTURES:
        args += ["--broker-config", broker_conf(name)]
    r = run(*args)
    assert r.exit_code == 1, r.stderr  # d-crashed is damaged
    got = defaultdict(list)
    for f in jsonl(r.stdout):
        got[f.pop("store")].append(f)
    for name in ALL_FIXTURES:
        v = run(
            "verify", "--store", fixture_dir(name) / "store", "--broker-config", broker_conf(name), "--format", "jsonl"
        )
        assert v.exit_code == (1 if name == "d-crashed" else 0), v.stderr
        assert got[store_root(name)] == jsonl(v.stdout), name
    assert {f["kind"] for f in got[store_root("d-crashed")]} >= {"body-crc", "torn-tail"}


def test_spark_verify_of_rocksdb_queue_stores_reports_what_verify_reports(spark, tmp_path):
    """RocksDB consume queues (i-rocksdb-cq sound, damaged, behind after a crash; k-combine-cq's double write
    diverged) in one `spark verify`: per store, verify's own findings, in its order; and a store whose queues
    are not read, which is sound only as far as read."""
    from rmqctl import rocksdbcq as R
    from test_rocksdbcq import rewrite  # the damage is test_rocksdbcq's, made with RocksDB itself

    def damage(db, offsets):
        key = R.unit_key("RocksTopicA", 0, 3)
        db[key] = db[key][:8] + R.INT32.pack(12) + db[key][12:]
        del db[R.unit_key("RocksTopicA", 2, 7)]
        offsets[R.offset_key("Rocks-Bench-3", R.MAX, 0)] = db[R.unit_key("Rocks-Bench-3", 0, 51)][:8] + R.INT64.pack(51)

    def behind(db, offsets):
        offsets[R.offset_key(R.CHECKPOINT_TOPIC, R.MAX, 0)] = R.INT64.pack(300_000)

    def diverge(db, offsets):
        key = R.unit_key("CombTopicA", 1, 4)
        db[key] = db[key][:20] + R.INT64.pack(5)

    stores = []
    for name, change in (
        ("i-rocksdb-cq", None),
        ("i-rocksdb-cq", damage),
        ("i-rocksdb-cq", behind),
        ("k-combine-cq", diverge),
    ):
        root = copy_store(name, tmp_path / str(len(stores)))
        if change is not None:
            rewrite(root, change)
        stores.append((root.resolve(), broker_conf(name)))
    tiered = tmp_path / "tiered.conf"
    tiered.write_text("storeType=tieredRocksDB\n")
    unread = fixture_dir("a-basic") / "store"
    r = run(
        "spark",
        "verify",
        "--format",
        "jsonl",
        *(a for root, _ in stores for a in ("--store", root)),
        "--store",
        unread,
        *(a for _, conf in stores for a in ("--broker-config", conf)),
        "--broker-config",
        tiered,
    )
    assert r.exit_code == 1, r.stderr
    assert (
        f"spark verify: {unread}: 2000 records, 2.6 MB of commitlog in 40 task(s): sound as far as read; not "
        f"read: {unread}/consumequeue (consume queues of storeType=tieredRocksDB)"
    ) in r.stderr.splitlines()
    got = defaultdict(list)
    for f in jsonl(r.stdout):
        got[f.pop("store")].append(f)
    kinds = []
    for root, conf in stores:
        v = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
        assert got[str(root)] == jsonl(v.stdout), root
        kinds.append(sorted({f["kind"] for f in got[str(root)]}))
    assert kinds == [
        [],
        ["cq-entry-invalid", "cq-entry-mismatch", "cq-missing-entries", "rocksdb-cq-offset-table"],
        ["rocksdb-cq-behind"],
        ["rocksdb-cq-double-write"],
    ]


def test_spark_commands_take_the_contract_options():
    """--store (repeatable here), --broker-config and --format after every spark command's name."""
    from rmqctl.cli.spark_cmds import spark_group

    for name, cmd in spark_group.commands.items():
        if name == "schema":  # prints the column declaration: it reads no store and starts no Spark
            assert [p.name for p in cmd.params] == ["fmt"]
            continue
        params = {o: p for p in cmd.params for o in getattr(p, "opts", [])}
        assert {"--store", "--broker-config", "--format", "--master"} <= set(params), name
        assert params["--store"].multiple and params["--broker-config"].multiple, name


def test_errors_are_one_line(spark):
    r = run("spark", "stats", "--store", "/nonexistent/store")
    assert r.exit_code == 2 and r.stderr.strip() == "rmqctl: /nonexistent/store: store directory does not exist"
    r = run(
        "spark",
        "stats",
        "--store",
        fixture_dir("a-basic") / "store",
        "--store",
        fixture_dir("b-mixed") / "store",
        "--broker-config",
        broker_conf("a-basic"),
        "--broker-config",
        broker_conf("b-mixed"),
        "--broker-config",
        broker_conf("c-v5-features"),
    )
    assert r.exit_code == 2 and "3 broker configs for 2 stores" in r.stderr
    # a failure inside an executor comes back as the one line the library raised there
    from rmqctl.errors import StoreError
    from rmqctl.spark.jobs import spark_errors

    torn = json.loads((FIXTURES / "d-crashed" / "corruption.json").read_text())["tornTail"]
    df = spark.read.format("rocketmq").option("failOnDamage", "true").load(store_root("d-crashed"))
    with pytest.raises(StoreError) as e, spark_errors():
        df.collect()
    assert str(e.value).startswith(
        f"{store_root('d-crashed')}/{torn['file']} at commitlog offset {torn['messageCommitLogOffset']}: "
    )


def test_missing_pyspark_says_how_to_install(tmp_path):
    """A real interpreter that has every dependency of rmqctl but pyspark (a venv whose site-packages links
    to all of this one's entries except pyspark's): `rmqctl spark ...` says how to install, exit 2."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    own = Path(
        subprocess.run(
            [python, "-c", "import site; print(site.getsitepackages()[0])"], check=True, capture_output=True, text=True
        ).stdout.strip()
    )
    for source in map(Path, site.getsitepackages()):
        for entry in source.iterdir():
            if (
                not entry.name.lower().startswith(("pyspark", "rmqctl", "__editable__"))
                and not (own / entry.name).exists()
            ):
                (own / entry.name).symlink_to(entry)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    assert subprocess.run([python, "-c", "import pyspark"], env=env, capture_output=True).returncode == 1
    r = subprocess.run(
        [python, "-m", "rmqctl", "spark", "stats", "--store", fixture_dir("a-basic") / "store"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr == "rmqctl: this needs pyspark, which is not installed: pip install 'rmqctl[spark]'\n"
    assert r.stdout == ""


def test_spark_log_stays_out_of_a_redirected_stderr(tmp_path):
    """At the default --log-level, a stderr redirected to a file gets no stage bars and no WARN/INFO lines
    (Spark's start-up banner included): only the JVM's own notice of its incubator module, which no logger
    config governs."""
    err = tmp_path / "stderr.txt"
    with open(err, "w") as f:
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "rmqctl",
                "spark",
                "stats",
                "--store",
                store_root("a-basic"),
                "--broker-config",
                broker_conf("a-basic"),
                "--master",
                "local[2]",
            ],
            stdout=subprocess.PIPE,
            stderr=f,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )
    assert r.returncode == 0 and jsonl(r.stdout)
    lines = [line for line in err.read_text().splitlines() if not line.startswith("WARNING: Using incubator modules")]
    assert lines == []


def test_timerlog_source_equals_timerlog_reading(spark):
    """Every unit of f-timer5's timerlog as TimerLog reads it, and joined on offsetPy with the `rocketmq`
    source, each unit's real topic."""
    root = store_root("f-timer5")
    conf = str(broker_conf("f-timer5"))
    units = spark.read.format("rocketmq-timerlog").option("brokerConfig", conf).load(root)
    fields = ("pos", "prevPos", "magic", "currWriteTimeMs", "delayedTimeMs", "offsetPy", "sizePy", "realTopicHash")
    want = truth("f-timer5", "truth-timerlog.jsonl")
    assert sorted(tuple(r[f] for f in fields) for r in units.collect()) == sorted(
        tuple(u[f] for f in fields) for u in want
    )
    messages = spark.read.format("rocketmq").option("brokerConfig", conf).load(root)
    joined = units.join(messages, units.offsetPy == messages.commitLogOffset).select(
        "pos", "slotIndex", messages.properties["REAL_TOPIC"].alias("realTopic")
    )
    assert sorted((r["pos"], r["realTopic"]) for r in joined.collect()) == sorted(
        (u["pos"], u["message"]["realTopic"]) for u in want
    )
    assert {r["slotIndex"] for r in joined.collect()} == {u["delayedTimeMs"] // 1000 % 1209600 for u in want}


def test_dledger_store(spark, tmp_path):
    """A DLedger store (e-dledger): the consumequeue source reads its units and `spark verify` says what `verify`
    says (nothing); the `rocketmq` source walks the entry bodies on the engine: every message as dump prints it
    and as RocketMQ wrote it (truth-messages.jsonl), with its entry in `dledger`; `spark export` holds the same."""
    name = "e-dledger"
    conf, root = str(broker_conf(name)), store_root(name)
    units = spark.read.format("rocketmq-consumequeue").option("brokerConfig", conf).load(root)
    assert units.count() == len(truth(name, "truth-consumequeue.jsonl"))
    r = run("spark", "verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert (r.exit_code, r.stdout.strip()) == (0, ""), r.stderr
    df = spark.read.format("rocketmq").option("brokerConfig", conf).option("verifyCrc", "true").load(root)
    rows = sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: r["commitLogOffset"])
    dumped = dump_rows(name)
    want = truth(name, "truth-messages.jsonl")
    assert len(rows) == len(dumped) == len(want) > 0 and all(r["crcOk"] for r in rows)
    for row, d, w in zip(rows, dumped, want):
        assert_same_message(row, d, root)
        assert row["dledger"] == d["dledger"] == w["dledger"]
        assert (row["commitLogOffset"], row["position"], row["msgId"]) == (
            w["commitLogOffset"],
            w["filePosition"],
            w["msgId"],
        )
        assert base64.b64encode(bytes(row["body"])).decode() == w["body"]
    out = tmp_path / "export"
    r = run("spark", "export", "--out", out, "--store", root, "--broker-config", conf)
    assert r.exit_code == 0, r.stderr
    exported = sorted(
        pa_dataset.dataset(out, format="parquet", partitioning="hive").to_table().to_pylist(),
        key=lambda r: r["commitLogOffset"],
    )
    assert [(e["commitLogOffset"], e["dledger"], e["body"]) for e in exported] == [
        (r["commitLogOffset"], r["dledger"], bytes(r["body"])) for r in rows
    ]


def test_export_round_trips_topics_too_long_for_a_directory_name(spark, tmp_path):
    """5.x V2 records carry topics up to 32767 bytes; a directory name holds 255. Records with 300-byte,
    400-byte (UTF-8) and 20000-byte topics, written after the last record of a c-v5-features copy as the
    broker writes them: all exported, each in a directory of its own, and the `topic` column exact for each, as
    Spark reads the export back (its partition column is `topicDir`, which holds the shortened names)."""
    from rmqctl import schema as S

    root = copy_store("c-v5-features", tmp_path)
    conf = broker_conf("c-v5-features")
    topics = ["L" * 300, "é" * 200, "Q" * 20000]
    append_like_last(root, conf, [t.encode() for t in topics], S.MAGIC_V2)
    out = tmp_path / "export"
    r = run("spark", "export", "--store", root, "--broker-config", conf, "--out", out)
    assert r.exit_code == 0, r.stderr
    summary = {s["topic"]: s["messages"] for s in jsonl(r.stdout)}
    fixture_messages = len(truth("c-v5-features", "truth-messages.jsonl"))
    assert all(summary[t] == 1 for t in topics) and sum(summary.values()) == fixture_messages + 3
    dirs = [p.name for p in out.iterdir() if p.is_dir()]
    assert len(dirs) == len(summary) and all(len(d.encode()) <= 255 for d in dirs)
    table = pa_dataset.dataset(out, format="parquet", partitioning="hive").to_table()
    names = table.column("topic").to_pylist()
    assert {t: names.count(t) for t in topics} == {t: 1 for t in topics}
    read = spark.read.parquet(str(out))
    counted = {r["topic"]: r["count"] for r in read.groupBy("topic").count().collect()}
    assert counted == summary
    # only the long ones shortened
    assert read.where("topic = topicDir").count() == fixture_messages and read.count() == fixture_messages + 3


def test_export_keeps_hostile_topics_inside_out(spark, tmp_path):
    """Records whose topics read `../../evi` and `../../../` (topic bytes patched in place, same length; the
    body CRC does not cover them) are exported under escaped partition directories inside --out."""
    from conftest import copy_store, patch
    from rmqctl.store import Store

    store = copy_store("a-basic", tmp_path)
    records = Store(store).scan().records()
    for topic in (b"../../evi", b"../../../"):
        f, m = next((f, m) for f, m in records if m.topic == "TopicTest")
        patch(f.path, m.position + m.storeSize - len(m.propertiesBytes) - 2 - len(topic), topic)
    out = tmp_path / "nest" / "export"
    r = run("spark", "export", "--store", store, "--broker-config", broker_conf("a-basic"), "--out", out)
    assert r.exit_code == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "nest").iterdir()) == ["export"]
    assert all(p.parent == out for p in out.glob("topicDir=*"))
    topics = {row["topic"] for row in spark.read.parquet(str(out)).select("topic").distinct().collect()}
    assert {"../../evi", "../../../"} <= topics


def test_metaq_source_rows_equal_metaq_dump(spark, tmp_path):
    """The `metaq` source over two data paths (the g-metaq fixture and a copy with a torn last segment): one
    task per segment, every record equal to `metaq dump`, the torn tail ending its segment as dump ends it."""
    import shutil

    fixture = fixture_dir("g-metaq") / "store"
    copy = tmp_path / "meta"
    shutil.copytree(fixture, copy)
    last = sorted((copy / "meta-test-1").glob("*.meta"))[-1]
    last.chmod(0o644)
    with open(last, "r+b") as f:
        f.truncate(last.stat().st_size - 10)
    df = spark.read.format("metaq").load([str(fixture), str(copy)])
    assert df.rdd.getNumPartitions() == 2 * 16
    rows = df.collect()
    for root in (fixture, copy):
        dumped = jsonl(run("metaq", "dump", "--store", root, "--body", "base64", "--format", "jsonl").stdout)
        got = sorted(
            (r.asDict() for r in rows if r.store == str(root.resolve())),
            key=lambda r: (r["topic"], r["partition"], r["offset"]),
        )
        assert len(got) == len(dumped) == (1000 if root == fixture else 999)
        for row, d in zip(got, dumped):
            assert bytes(row.pop("payload")) == base64.b64decode(d["payload"])
            assert all(row[k] == d[k] for k in row if k != "store"), d["offset"]
    with pytest.raises(Exception, match="torn-tail"):
        spark.read.format("metaq").option("failOnDamage", "true").load(str(copy)).collect()


def word_hashing_to_integer_min_value(topic: str) -> str:
    """A KEYS word whose index key `topic#word` has String.hashCode Integer.MIN_VALUE, whose Math.abs the
    broker cannot take: eight letters (seeded), then a character and a digit or letter solved for the hash."""
    import random
    import string

    from rmqctl.javacompat import java_string_hash

    rnd = random.Random(0)
    while True:
        head = "".join(rnd.choices(string.ascii_lowercase, k=8))
        h = java_string_hash(f"{topic}#{head}") & 0xFFFFFFFF
        rest = ((1 << 31) - h * 31 * 31) % (1 << 32)  # = 31 * second-last + last
        for last in range(0x30, 0x7B):
            second, r = divmod(rest - last, 31)
            if r == 0 and 0x80 <= second <= 0xFFFF and not 0xD800 <= second <= 0xDFFF:
                return f"{head}{chr(second)}{chr(last)}"


def test_the_integer_min_value_key_hash_is_one_rule_everywhere(spark, tmp_path):
    """rules.index_key_hash (Math.abs(Integer.MIN_VALUE) becomes 0) seen by every engine: the writer that
    appends and indexes, the lookup, verify's index kernels, rebuild's kernels (the same bytes again) and the
    Spark index source's slots."""
    from conftest import copy_store
    from rmqctl.javacompat import java_string_hash

    name, topic = "a-basic", "TopicTest"
    word = word_hashing_to_integer_min_value(topic)
    assert java_string_hash(f"{topic}#{word}") == -(1 << 31)
    root = copy_store(name, tmp_path)
    args = ["--store", root, "--broker-config", broker_conf(name), "--format", "jsonl"]
    appended = run("append", *args, "--topic", topic, "--keys", f"other {word}", "--body", "min value")
    assert appended.exit_code == 0, appended.stderr
    offset = jsonl(appended.stdout)[0]["commitLogOffset"]
    entries = [e for e in jsonl(run("dump", "index", *args).stdout) if e.get("phyOffset") == offset]
    assert [(e["keyHash"], e["slot"]) for e in entries][-1] == (0, 0)  # KEYS words in order: ours is last
    found = jsonl(run("query", "key", *args, topic, word).stdout)
    assert [m["commitLogOffset"] for m in found] == [offset]
    assert run("verify", *args).exit_code == 0
    index_files = sorted((root / "index").iterdir())
    before = [p.read_bytes() for p in index_files]
    rebuilt = run("rebuild", "index", *args, "--no-backup")
    assert rebuilt.exit_code == 0, rebuilt.stderr
    assert [p.read_bytes() for p in sorted((root / "index").iterdir())] == before
    rows = spark.read.format("rocketmq-index").option("brokerConfig", str(broker_conf(name))).load(str(root)).collect()
    assert [(r["keyHash"], r["slot"]) for r in rows if r["phyOffset"] == offset][-1] == (0, 0)


def test_the_schedule_tags_code_is_one_rule_everywhere(spark, tmp_path):
    """rules.delivery_tags_code (a DELAY level above the table's highest is clamped to it; the tagsCode is then
    storeTimestamp + that level's delay) seen by every engine on one record: the writer that appends and
    dispatches it, verify (its kernel hands DELAY records to dispatch.tags_code), `spark verify`, rebuild (the
    same units again) and the Spark consumequeue source."""
    name, topic, queue_id = "a-basic", "SCHEDULE_TOPIC_XXXX", 17
    root = copy_store(name, tmp_path)
    args = ["--store", root, "--broker-config", broker_conf(name), "--format", "jsonl"]
    # a copy of a stored delayed message (a producer's send to SCHEDULE_TOPIC_XXXX is refused, as the broker does)
    line = {
        "topic": topic,
        "queueId": queue_id,
        "properties": {"TAGS": "TagD", "DELAY": "99", "REAL_TOPIC": "TopicTest", "REAL_QID": "0"},
    }
    appended = run("append", *args, "--jsonl", "-", input=json.dumps(line) + "\n")
    assert appended.exit_code == 0, appended.stderr
    offset = jsonl(appended.stdout)[0]["commitLogOffset"]
    stored = [m for m in jsonl(run("dump", "commitlog", *args, "--from", str(offset)).stdout)][0]
    two_hours = 7_200_000  # level 18, the highest of the default messageDelayLevel
    want = stored["storeTimestamp"] + two_hours
    units = jsonl(run("dump", "consumequeue", *args, topic, str(queue_id)).stdout)
    assert [(u["commitLogOffset"], u["tagsCode"]) for u in units] == [(offset, want)]
    assert run("verify", *args).exit_code == 0
    spark_verify = run("spark", "verify", *args)
    assert (spark_verify.exit_code, spark_verify.stdout.strip()) == (0, ""), spark_verify.stderr
    queue_dir = root / "consumequeue" / topic / str(queue_id)
    before = [p.read_bytes() for p in sorted(queue_dir.iterdir())]
    rebuilt = run("rebuild", "consumequeue", *args, "--no-backup")
    assert rebuilt.exit_code == 0, rebuilt.stderr
    assert [p.read_bytes() for p in sorted(queue_dir.iterdir())] == before
    rows = spark.read.format("rocketmq-consumequeue").option("brokerConfig", str(broker_conf(name))).load(str(root))
    assert [(r["commitLogOffset"], r["tagsCode"]) for r in rows.where(f"topic = '{topic}'").collect()] == [
        (offset, want)
    ]


def documented_schema() -> list[tuple[str, str]]:
    """(column, Spark type) of docs/spark.md's table of the `rocketmq` source's columns."""
    text = (REPO / "docs" / "spark.md").read_text()
    table = text[text.index("| column | type | holds |") :].split("\n\n")[0].splitlines()[2:]
    return [tuple(cell.strip().strip("`") for cell in line.strip("|").split("|")[:2]) for line in table]


def test_one_schema_declaration_for_source_export_cli_and_docs(spark, tmp_path):
    """docs/spark.md's table is the DataFrame schema, `rmqctl spark schema` and (the directory adding
    `topicDir`) the Parquet files' schema as Spark and pyarrow read it."""
    import pyarrow.parquet as pq

    documented = documented_schema()
    name = "c-v5-features"
    df = spark.read.format("rocketmq").load(store_root(name))
    assert [(f.name, f.dataType.simpleString()) for f in df.schema] == documented
    shown = jsonl(run("spark", "schema", "--format", "jsonl").stdout)
    assert [(c["column"], c["type"]) for c in shown] == documented and all(c["holds"] for c in shown)
    out = tmp_path / "export"
    assert run("spark", "export", "--store", store_root(name), "--out", out).exit_code == 0
    assert [(f.name, f.dataType.simpleString()) for f in spark.read.parquet(str(out)).schema] == documented + [
        ("topicDir", "string")
    ]
    arrow = pq.read_schema(next(out.glob("topicDir=*/*.parquet")))
    assert [(f.name, str(f.type)) for f in arrow][:20] == [
        ("store", "string"),
        ("file", "string"),
        ("position", "int32"),
        ("commitLogOffset", "int64"),
        ("storeSize", "int32"),
        ("magicCode", "int32"),
        ("bodyCRC", "int32"),
        ("queueId", "int32"),
        ("flag", "int32"),
        ("queueOffset", "int64"),
        ("physicalOffset", "int64"),
        ("sysFlag", "int32"),
        ("bornTimestamp", "timestamp[us, tz=UTC]"),
        ("bornTimestampMs", "int64"),
        ("bornHost", "string"),
        ("storeTimestamp", "timestamp[us, tz=UTC]"),
        ("storeTimestampMs", "int64"),
        ("storeHost", "string"),
        ("reconsumeTimes", "int32"),
        ("preparedTransactionOffset", "int64"),
    ]
    assert str(arrow.field("properties").type) == "map<string, string ('properties')>"


def file_of(offset: int, size: int = 65536) -> int:
    return offset // size


def test_time_filters_are_pushed_and_prune_files(spark):
    """`where topic = ... and storeTimestamp between ...` shows its filters pushed in explain(), plans only the
    commitlog files whose store times can hold the range (a-basic has 40), and gives what filtering the dump
    gives; storeTimestampMs comparisons are pushed too."""
    import datetime as dt

    name = "a-basic"
    dumped = dump_rows(name)
    stamps = sorted(d["storeTimestamp"] for d in dumped)
    lo, hi = stamps[900], stamps[1100]
    iso = lambda ms: dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    df = spark.read.format("rocketmq").option("brokerConfig", str(broker_conf(name))).load(store_root(name))
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    try:
        picked = df.where(
            f"topic = 'TopicTest' and storeTimestamp between timestamp'{iso(lo)}' and timestamp'{iso(hi)}'"
        )
        plan = picked._jdf.queryExecution().explainString(
            spark._jvm.org.apache.spark.sql.execution.ExplainMode.fromString("formatted")
        )
        rows = picked.select("commitLogOffset").collect()
    finally:
        spark.conf.unset("spark.sql.session.timeZone")
    pushed = next(line for line in plan.splitlines() if line.startswith("PushedFilters:"))
    assert "EqualTo(topic,TopicTest)" in pushed and "GreaterThanOrEqual(storeTimestamp," in pushed
    assert "LessThanOrEqual(storeTimestamp," in pushed
    holding = {file_of(d["commitLogOffset"]) for d in dumped if lo <= d["storeTimestamp"] <= hi}
    planned = picked.rdd.getNumPartitions()
    # the files holding the range, and at most the file before it (its last records may share lo's millisecond)
    assert len(holding) <= planned <= len(holding) + 1 < 40
    want = [d["commitLogOffset"] for d in dumped if d["topic"] == "TopicTest" and lo <= d["storeTimestamp"] <= hi]
    assert sorted(r.commitLogOffset for r in rows) == want and want
    by_ms = df.where(f"storeTimestampMs > {lo} and storeTimestampMs < {hi}")
    assert by_ms.rdd.getNumPartitions() <= planned
    assert by_ms.count() == sum(lo < d["storeTimestamp"] < hi for d in dumped)
    assert df.where(f"storeTimestampMs > {stamps[-1]}").rdd.getNumPartitions() == 1  # only the last file can
    assert (
        spark.read.format("rocketmq")
        .option("pruneByStoreTime", "false")
        .load(store_root(name))
        .where(f"storeTimestampMs > {stamps[-1]}")
        .rdd.getNumPartitions()
        == 40
    )


def test_export_by_date_or_flat_within_a_time_range(spark, tmp_path):
    """--partition-by date: date=<UTC store date>/ directories that Spark reads back as a date column; --partition-by
    none: files straight in OUT; with --since/--until only the messages stored in range, as the dump has them."""
    import datetime as dt

    name = "b-mixed"
    dumped = dump_rows(name)
    stamps = sorted(d["storeTimestamp"] for d in dumped)
    lo, hi = stamps[100], stamps[300]
    inside = [d for d in dumped if lo <= d["storeTimestamp"] <= hi]
    by_date = tmp_path / "by-date"
    r = run(
        "spark",
        "export",
        "--store",
        store_root(name),
        "--broker-config",
        broker_conf(name),
        "--out",
        by_date,
        "--partition-by",
        "date",
        "--since",
        lo,
        "--until",
        hi,
    )
    assert r.exit_code == 0, r.stderr
    days = {dt.datetime.fromtimestamp(d["storeTimestamp"] / 1000, dt.timezone.utc).date().isoformat() for d in inside}
    assert sorted(p.name for p in by_date.iterdir()) == ["_SUCCESS", *sorted(f"date={day}" for day in days)]
    assert [(s["date"], s["messages"]) for s in jsonl(r.stdout)] == [(day, len(inside)) for day in sorted(days)]
    read = spark.read.parquet(str(by_date))
    assert dict(read.dtypes)["date"] == "date" and dict(read.dtypes)["topic"] == "string"
    assert sorted(x.commitLogOffset for x in read.select("commitLogOffset").collect()) == [
        d["commitLogOffset"] for d in inside
    ]
    flat = tmp_path / "flat"
    r = run(
        "spark",
        "export",
        "--store",
        store_root(name),
        "--broker-config",
        broker_conf(name),
        "--out",
        flat,
        "--partition-by",
        "none",
        "--format",
        "orc",
    )
    assert r.exit_code == 0, r.stderr
    assert jsonl(r.stdout) == [
        {"store": store_root(name), "messages": len(dumped), "files": len(list(flat.glob("part-*.orc")))}
    ]
    assert all(p.is_file() for p in flat.iterdir())
    got = {(x.topic, x.commitLogOffset) for x in spark.read.orc(str(flat)).select("topic", "commitLogOffset").collect()}
    assert got == {(d["topic"], d["commitLogOffset"]) for d in dumped}


def test_export_reruns_need_overwrite_and_replace_the_previous_export(spark, tmp_path):
    """A second export into a non-empty OUT is refused (exit 2, one line) unless --overwrite; then the previous
    files are gone, the new ones in place and _SUCCESS written again."""
    name = "a-basic"
    out = tmp_path / "export"
    args = ["spark", "export", "--store", store_root(name), "--broker-config", broker_conf(name), "--out", out]
    assert run(*args, "--partition-by", "none").exit_code == 0
    before = sorted(p.name for p in out.iterdir())
    (out / "stale.txt").write_text("from before")
    r = run(*args)
    assert (r.exit_code, r.stderr) == (2, f"rmqctl: {out} exists and is not empty; pass --overwrite to replace it\n")
    assert sorted(p.name for p in out.iterdir()) == sorted(before + ["stale.txt"])
    r = run(*args, "--overwrite", "--until", 0)
    assert r.exit_code == 0 and jsonl(r.stdout) == []
    assert sorted(p.name for p in out.iterdir()) == ["_SUCCESS"]
    r = run(*args, "--overwrite", "--since", 5, "--until", 4)
    assert (r.exit_code, r.stderr) == (2, "rmqctl: --until is before --since\n")


def test_spark_verify_within_a_time_range_is_verify_within_it(spark):
    """`spark verify --since/--until` reports what `verify --since/--until` reports: on d-crashed, a range
    holding the flipped body byte finds it, a range after it does not (and no torn tail: the range ends at
    its last message)."""
    name = "d-crashed"
    flipped = json.loads((FIXTURES / name / "corruption.json").read_text())["flippedBodyByte"]["messageCommitLogOffset"]
    dumped = dump_rows(name)
    at = next(d["storeTimestamp"] for d in dumped if d["commitLogOffset"] == flipped)
    after = next(d["storeTimestamp"] for d in dumped if d["storeTimestamp"] > at)
    for since, until, kinds in ((at - 1, at, {"body-crc", "abnormal-recovery"}), (after, None, {"abnormal-recovery"})):
        window = ["--since", since] + (["--until", until] if until else [])
        args = ["--store", store_root(name), "--broker-config", broker_conf(name), "--format", "jsonl", *window]
        v = run("verify", *args)
        s = run("spark", "verify", *args)
        assert s.exit_code == v.exit_code == (1 if "body-crc" in kinds else 0), s.stderr
        assert {f["kind"] for f in jsonl(v.stdout)} == kinds
        assert [{k: x for k, x in f.items() if k != "store"} for f in jsonl(s.stdout)] == jsonl(v.stdout)


def test_a_store_time_spark_cannot_hold_is_null_and_outside_every_timestamp_range(spark, tmp_path):
    """A record whose storeTimestamp is year ~318000 (patched into a copy, mid-file): `storeTimestamp` is null,
    `storeTimestampMs` keeps it, and a pushed timestamp range leaves the row out as Spark's own comparison with
    null would. Out of the broker's order as it is, pruning by store time skips its file: pruneByStoreTime=false
    reads it."""
    import re
    import struct

    from conftest import copy_store, patch
    from rmqctl import schema as S
    from rmqctl.store import Store

    root = copy_store("a-basic", tmp_path)
    head, names = S.RECORD_HEADS[(False, False)]
    fields = re.findall(r"\d*[a-zA-Z]", head.format.lstrip("<>!=@"))
    at = struct.calcsize(">" + "".join(fields[: names.index("storeTimestamp")]))
    f, m = [(f, m) for f, m in Store(root).scan().records() if not m.sysFlag & S.BORNHOST_V6_FLAG][10]
    far = 10**16
    patch(f.path, m.position + at, struct.pack(">q", far))
    # out of the broker's order: only a read that does not prune by store time finds it (docs/spark.md)
    df = spark.read.format("rocketmq").option("pruneByStoreTime", "false").load(str(root))
    assert spark.read.format("rocketmq").load(str(root)).where(f"storeTimestampMs >= {far}").count() == 0
    late = df.where(f"storeTimestampMs >= {far}").select("commitLogOffset", "storeTimestamp").collect()
    assert [(r.commitLogOffset, r.storeTimestamp) for r in late] == [(f.start + m.position, None)]
    assert df.where("storeTimestamp is null").count() == 1
    assert (
        df.where("storeTimestamp >= timestamp'2000-01-01 00:00:00'").count()
        == df.where(f"storeTimestampMs < {far}").count()
    )


def test_partition_runs_keep_every_row_once_whatever_the_grouping(tmp_path):
    """A batch's runs of equal partition values, nulls (a time Spark cannot hold) a run of their own: an
    ungrouped batch's rows reach the same files, in commitlog order within each, as a grouped one's."""
    pa = pytest.importorskip("pyarrow")
    from rmqctl.spark.export import PartitionFiles, runs

    values = pa.array(["b", "b", None, None, "a", "b", None, "a"])
    starts, run_values = runs(values)
    assert starts.tolist() == [0, 2, 4, 5, 6, 7, 8] and run_values == ["b", None, "a", "b", None, "a"]
    assert runs(pa.array([], pa.string()))[1] == []
    schema = pa.schema([("topic", pa.string()), ("n", pa.int64())])
    batch = pa.RecordBatch.from_arrays([values, pa.array(range(8))], schema=schema)
    files = PartitionFiles(tmp_path, "part-00000", schema, partition_by="topic")
    files.add(batch)
    written = {value: name for value, name, _ in files.close()}
    read = {value: pa.parquet.read_table(tmp_path / name).column("n").to_pylist() for value, name in written.items()}
    assert read == {"b": [0, 1, 5], None: [2, 3, 6], "a": [4, 7]}


def test_export_tasks_spread_a_store_over_the_cores_in_runs_of_whole_files():
    """Tasks take consecutive files of one store: up to 1 GiB, split between the session's cores when that
    leaves none idle, but never below 256 MiB (a store of small files stays one task, one file per topic)."""
    from rmqctl.spark.export import task_runs
    from rmqctl.spark.filesource import FilePart

    def files(source, count, size):
        return [FilePart((source, k), source=source, start=k * size, end=(k + 1) * size) for k in range(count)]

    mib = 1 << 20
    big, small = files("a", 8, 128 * mib), files("b", 40, 64 << 10)
    assert [len(t) for t in task_runs(big, cores=1)] == [8]
    assert [len(t) for t in task_runs(big, cores=2)] == [4, 4]
    assert [len(t) for t in task_runs(big, cores=8)] == [2, 2, 2, 2]
    assert [len(t) for t in task_runs(small, cores=2)] == [40]
    assert [len(t) for t in task_runs(files("c", 20, 128 * mib), cores=1)] == [8, 8, 4]
    mixed = task_runs(small + big, cores=2)
    assert [{part.source for part in t} for t in mixed] == [{"b"}, {"a"}, {"a"}]
    assert [part for t in mixed for part in t] == small + big


def test_a_rare_topic_does_not_keep_every_batch_in_memory(tmp_path):
    """A topic with one row in a hundred holds a slice of every batch, and a slice keeps its whole batch
    alive: past the memory bound its rows are written (as more row groups), so the Arrow memory held stays
    within the bound plus a batch, and every row still reaches its topic's file once, in order."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    from rmqctl.spark.export import PartitionFiles

    schema = pa.schema([("topic", pa.string()), ("n", pa.int64()), ("body", pa.binary())])
    rows, body = 1000, b"x" * 1000
    files = None
    peak = 0
    for b in range(64):  # 64 batches of about 1 MiB: 99 rows of the common topic to one of the rare one
        topics = ["rare" if (b * rows + i) % 100 == 0 else "common" for i in range(rows)]
        order = sorted(range(rows), key=lambda i: topics[i] != "common")  # grouped, as message_batches does
        batch = pa.RecordBatch.from_arrays(
            [pa.array([topics[i] for i in order]), pa.array([b * rows + i for i in order]), pa.array([body] * rows)],
            schema=schema,
        )
        if files is None:
            bound = pa.total_allocated_bytes() + (8 << 20)
            files = PartitionFiles(tmp_path, "part-00000", schema, row_group_bytes=4 << 20, pending_bytes=bound)
        files.add(batch)
        del batch
        peak = max(peak, pa.total_allocated_bytes())
    written = {value: name for value, name, _ in files.close()}
    assert peak <= bound + (2 << 20)
    rare = pq.ParquetFile(tmp_path / written["rare"])
    assert rare.metadata.num_row_groups > 1
    for topic, name in written.items():
        n = pq.read_table(tmp_path / name).column("n").to_pylist()
        assert n == [k for k in range(64 * rows) if (k % 100 == 0) == (topic == "rare")]


def test_exported_parquet_keeps_statistics_on_every_column_but_the_opaque_bytes(tmp_path):
    """Row-group statistics on every column, nested ones (the properties map, keys, the DLedger entry)
    included, but on body and propertiesBytes, which nobody prunes by."""
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    from rmqctl.config import load_config
    from rmqctl.spark.columns import arrow_schema, commitlog_columns, message_batches, struct
    from rmqctl.spark.export import NO_STATISTICS, PartitionFiles
    from rmqctl.store import Store

    store = Store(store_root("e-dledger"), load_config(str(broker_conf("e-dledger"))))
    schema = arrow_schema(struct(commitlog_columns([store])))
    files = PartitionFiles(tmp_path, "part-00000", schema, partition_by="none")
    for batch in message_batches(store.scan(), 0, 1 << 62, schema, "s", False, None):
        files.add(batch)
    ((_, name, rows),) = files.close()
    group = pq.ParquetFile(tmp_path / name).metadata.row_group(0)
    stats = {group.column(i).path_in_schema: group.column(i).is_stats_set for i in range(group.num_columns)}
    assert rows and any("." in path for path in stats)
    assert {path for path, kept in stats.items() if not kept} == {p for p in stats if p.split(".")[0] in NO_STATISTICS}


def test_export_sizes_files_and_round_trips_through_append(spark, tmp_path):
    """A store of small commitlog files goes to one task, one file per topic unless --max-records-per-file cuts
    it; every file holds at most that many messages, and `append --parquet` of the export puts every message
    back (each topic's queues in their order)."""
    import pyarrow.parquet as pq

    name = "a-basic"
    out = tmp_path / "export"
    r = run(
        "spark",
        "export",
        "--out",
        out,
        "--store",
        fixture_dir(name) / "store",
        "--broker-config",
        broker_conf(name),
        "--max-records-per-file",
        300,
    )
    assert r.exit_code == 0, r.stderr
    summary = jsonl(r.stdout)
    files = sorted(out.rglob("*.parquet"))
    rows = [pq.ParquetFile(f).metadata.num_rows for f in files]
    assert max(rows) == 300 and sum(rows) == sum(s["messages"] for s in summary) == len(dump_rows(name))
    assert len(files) == sum(-(-s["messages"] // 300) for s in summary) == sum(s["files"] for s in summary)
    copy = tmp_path / "copy"
    r = run(
        "append",
        "--store",
        copy,
        "--create",
        "--broker-config",
        broker_conf(name),
        "--parquet",
        out,
        "--keep-timestamps",
    )
    assert r.exit_code == 0, r.stderr
    assert len(jsonl(r.stdout)) == len(dump_rows(name))
    copied = Counter(
        (m["topic"], m["queueId"])
        for m in jsonl(run("dump", "commitlog", "--store", copy, "--format", "jsonl", "--body", "none").stdout)
    )
    assert copied == Counter((m["topic"], m["queueId"]) for m in dump_rows(name))
    assert run("verify", "--store", copy, "--broker-config", broker_conf(name)).exit_code == 0


# -- the terminal: a quiet session, Ctrl-C ---------------------------------------------------------------------
JVM_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector"  # the JVM's own, before any log4j config


def test_a_new_session_is_quiet(tmp_path):
    """rmqctl.spark.session() in a fresh process: no Spark banner, no WARN line on stderr, only the JVM's own
    start-up notice, which no log setting reaches."""
    code = "from rmqctl.spark import session\nprint(session().range(3).count())\n"
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])),
    )
    assert (p.returncode, p.stdout) == (0, "3\n"), p.stderr
    assert [line for line in p.stderr.splitlines() if line != JVM_NOTICE] == []


def test_ctrl_c_on_export_is_one_line_exit_130_and_no_out(tmp_path):
    """A real Ctrl-C: SIGINT to the terminal's foreground process group once the stage bar shows. One line,
    exit 130, and the --out directory the run created is gone (no py4j or worker tracebacks)."""
    import pty
    import signal

    from conftest import terminal_output

    out = tmp_path / "new" / "out"
    master, slave = pty.openpty()
    args = [
        "spark",
        "export",
        "--store",
        fixture_dir("a-basic") / "store",
        "--broker-config",
        broker_conf("a-basic"),
        "--out",
        out,
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmqctl", *map(str, args)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        close_fds=True,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])),
    )
    os.close(slave)
    screen, sent = b"", False
    for data in terminal_output(master):
        screen += data
        if not sent and b"[Stage" in screen:
            os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
            sent, screen = True, b""
    os.close(master)
    assert sent
    try:
        assert proc.wait(timeout=600) == 130
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("too slow: spark export did not stop in 600 s after SIGINT")
    assert screen.decode().replace("\r\x1b[K", "").strip("\r\n ").splitlines()[-1:] == ["rmqctl: interrupted"]
    assert "Traceback" not in screen.decode() and not (tmp_path / "new").exists()


def test_spark_verify_and_verify_give_one_verdict(spark):
    """Both front ends exit by checks/baseline.judge: 0 on a sound store and on info notes alone (d-crashed
    after its flipped byte: only the abnormal-recovery note), 1 on damage and on a listing cut by
    --max-findings, even of info notes."""
    name = "d-crashed"
    flipped = json.loads((FIXTURES / name / "corruption.json").read_text())["flippedBodyByte"]["messageCommitLogOffset"]
    dumped = dump_rows(name)
    at = next(d["storeTimestamp"] for d in dumped if d["commitLogOffset"] == flipped)
    after = next(d["storeTimestamp"] for d in dumped if d["storeTimestamp"] > at)
    cases = (
        ("a-basic", [], 0),
        (name, ["--since", after], 0),
        (name, [], 1),
        (name, ["--since", after, "--max-findings", 0], 1),
    )
    for store, extra, want in cases:
        args = ["--store", store_root(store), "--broker-config", broker_conf(store), "--format", "jsonl", *extra]
        v, s = run("verify", *args), run("spark", "verify", *args)
        assert (v.exit_code, s.exit_code) == (want, want), (store, extra, v.stderr, s.stderr)
