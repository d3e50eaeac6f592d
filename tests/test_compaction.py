"""Compaction topics (rmqctl.compaction): dump and verify of compaction/compactionLog and compactionCq, held against
a store that RocketMQ 5.3.3's own code wrote and compacted (tests/java/CompactionWrite5.java: DefaultMessageStore
with a cleanup.policy=COMPACTION topic, its CompactionService copying records while the reput dispatches, then
CompactionLog.doCompaction twice) and against what that store serves through DefaultMessageStore.getMessage."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rmqctl import schema as S
from rmqctl.compaction import CompactionQueue, file_sizes, position_checkpoint
from rmqctl.config import BrokerConfig, load_config
from rmqctl.store import Store, offset_to_name

from conftest import held_lock, jsonl, patch, run
from test_batchcq import oracle_classpath

HARNESS = Path(__file__).parent / "java" / "CompactionWrite5.java"
TOPIC = "CompactTopic"
CQ_SIZE, LOG_CONFIG = 8 * S.BCQ_UNIT_SIZE, 6000  # the harness's MessageStoreConfig: 7 units and an end unit per CQ file


def rocketmq_compaction(oracle: Path, root: Path, out: Path, *mode: str) -> dict:
    """tests/java/CompactionWrite5.java on `root` (writes and compacts; `--read`: reopens and reads), with
    read5.sh's class path and JVM options; its truth file."""
    return rocketmq_compactions(oracle, [(root, out)], *mode)[0]


def rocketmq_compactions(oracle: Path, runs: list[tuple[Path, Path]], *mode: str) -> list[dict]:
    """rocketmq_compaction on several (root, out) at once, one JVM each."""
    env_sh = f'. "{oracle}/lib/env.sh" && printf "%s\\n" "${{JVM_OPENS[@]}}"'
    opens = subprocess.run(["bash", "-c", env_sh], capture_output=True, text=True, check=True).stdout.split()
    # MessageStoreConfig's fields name RocksDB types: the classes read5.sh puts on the path for file stores
    classpath = f"{oracle_classpath(oracle)}:{oracle}/lib/rocksdbjni-classes-8.11.4.jar"
    env = {**os.environ, "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"}  # short runs: C1 alone costs less CPU
    jvms = []
    for root, out in runs:
        out.mkdir(parents=True, exist_ok=True)
        command = ["java", f"-Duser.home={out / 'java-home'}", *opens, "-cp", classpath, str(HARNESS), str(root)]
        log = open(out / "harness.log", "w")
        jvms.append(
            (
                subprocess.Popen([*command, str(out / "truth.json"), *mode], stdout=log, stderr=log, cwd=out, env=env),
                log,
            )
        )
    for jvm, log in jvms:
        jvm.wait(timeout=300)
        log.close()
    for (jvm, _), (_, out) in zip(jvms, runs):
        assert jvm.returncode == 0, (out / "harness.log").read_text()[-3000:]
    return [json.loads((out / "truth.json").read_text()) for _, out in runs]


@pytest.fixture(scope="module")
def written(java_oracle, tmp_path_factory):
    """(store root, broker.conf, truth) of the store RocketMQ wrote; tests change copies only."""
    out = tmp_path_factory.mktemp("compaction")
    root = out / "store"
    root.mkdir()
    truth = rocketmq_compaction(java_oracle, root, out)
    conf = out / "broker.conf"
    conf.write_text(f"compactionCqMappedFileSize={CQ_SIZE}\ncompactionMappedFileSize={LOG_CONFIG}\n")
    return root, conf, truth


def copy_of(written, tmp_path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(written[0], root)
    return root


def test_file_sizes_follow_compaction_logs_rule(written):
    """getCompactionLogSize: at least 5 CQ sizes; the lower multiple when within half a CQ size above it."""
    sizes = lambda log, cq: file_sizes(BrokerConfig(compactionMappedFileSize=log, compactionCqMappedFileSize=cq))  # noqa: E731
    assert sizes(100 * 1024 * 1024, 10 * 1024 * 1024) == (104857460, 10485746)  # 227951 units; 10 x that + 140
    assert sizes(8192, CQ_SIZE) == (22 * CQ_SIZE, CQ_SIZE)  # 8192 = 22 x 368 + 96
    assert sizes(1000, CQ_SIZE) == (5 * CQ_SIZE, CQ_SIZE)
    assert sizes(23 * CQ_SIZE - 10, CQ_SIZE) == (23 * CQ_SIZE, CQ_SIZE)
    _, conf, truth = written
    # 6000 = 16 x 368 + 112, 112 < 184: the lower multiple, as RocketMQ's CompactionLog computed it
    assert (
        file_sizes(load_config(conf))
        == (truth["compactionLogFileSize"], truth["compactionCqFileSize"])
        == (16 * CQ_SIZE, CQ_SIZE)
    )


def dump(root, conf, queue_id: int, *more) -> list[dict]:
    return jsonl(
        run("dump", "compaction", TOPIC, str(queue_id), *more, "--store", root, "--broker-config", conf).stdout
    )


def test_dump_is_what_rocketmq_wrote_and_serves(written):
    """Every record of the log, every unit of the CQ, the files and the position checkpoint as RocketMQ wrote
    them, and the records in the order DefaultMessageStore.getMessage serves them (compaction dropped some
    queue offsets: older values of a repeated key, keyless messages, tombstones)."""
    root, conf, truth = written
    store = Store(root, load_config(conf))
    assert position_checkpoint(store) == (truth["positionCheckpoint"], None)
    for q in truth["queues"]:
        served = q["messages"]
        assert q["loaded"] and served and [m["queueOffset"] for m in served] == [m["servedQueueOffset"] for m in served]
        assert len(served) < q["maxOffset"] - q["minOffset"]  # compaction dropped some
        queue = CompactionQueue(store, TOPIC, q["queueId"])
        assert [f.name for f in queue.log.files] == q["logFiles"]
        assert [f.name for f in queue.cq.files.files] == q["cqFiles"]
        rows = dump(root, conf, q["queueId"])
        records = [r for r in rows if "end" not in r]
        # a full file ends in a BLANK; the last file a compaction writes (the one before the file being
        # appended to) in zeros, which dump leaves out: CompactionAppendEndMsgCallback writes nothing
        ends = [(r["file"], r["end"]) for r in rows if "end" in r]
        assert ends and all(end == "blank" for _, end in ends) and q["logFiles"][-2] not in dict(ends)
        assert all(r["inPlace"] and (r["topic"], r["queueId"]) == (TOPIC, q["queueId"]) for r in records)
        fields = ("queueOffset", "physicalOffset", "storeSize", "keys", "storeTimestamp", "msgId")
        assert [{k: r[k] for k in fields} for r in records] == [{k: m[k] for k in fields} for m in served]
        cq_rows = dump(root, conf, q["queueId"], "--cq")
        assert sorted(u["file"] for u in cq_rows if "end" in u) == sorted(f for f, _ in ends)
        units = [u for u in cq_rows if "end" not in u]
        mine = [
            {
                "queueOffset": u["msgBaseOffset"],
                "pos": u["commitLogOffset"],
                "size": u["size"],
                "tagsCode": u["tagsCode"],
                "batchNum": u["batchSize"],
                "compactedOffset": u["compactedOffset"],
            }
            for u in units
        ]
        assert mine == q["units"]
        assert [u["storeTime"] for u in units] == [m["storeTimestamp"] for m in served]


def test_verify_takes_rocketmqs_compaction_as_sound(written):
    root, conf, _ = written
    res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert (res.exit_code, res.stdout) == (0, "")


def test_verify_finds_what_the_broker_would_trip_on(written, tmp_path):
    root, conf, truth = copy_of(written, tmp_path), written[1], written[2]
    served = truth["queues"][0]["messages"]
    log = root / "compaction" / "compactionLog" / TOPIC / "0"
    cq = root / "compaction" / "compactionCq" / TOPIC / "0"
    last = truth["queues"][0]["cqFiles"][-1]
    patch(
        log / offset_to_name(0), served[1]["physicalOffset"] + 28, S.INT64.pack(5)
    )  # the second record's PHYSICALOFFSET
    patch(cq / offset_to_name(0), 2 * S.BCQ_UNIT_SIZE + 8, S.INT32.pack(7))  # the third unit's size
    (cq / last).unlink()
    (root / "compaction" / "position-checkpoint").write_text("{")
    res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
    found = [(f["kind"], f["file"], f["detail"]) for f in jsonl(res.stdout)]
    third = served[2]
    cut = max(u["pos"] + u["size"] for u in truth["queues"][0]["units"] if u["pos"] < int(last))
    assert res.exit_code == 1
    assert sorted(found) == sorted(
        [
            (
                "compaction-checkpoint",
                "compaction/position-checkpoint",
                "compaction position checkpoint: ends in the middle of the document",
            ),
            (
                "compaction-cq-mismatch",
                f"compaction/compactionCq/{TOPIC}/0/{offset_to_name(0)}",
                f"{TOPIC}/0 compaction CQ unit at {third['physicalOffset']}: size 7, the record's {third['storeSize']}",
            ),
            (
                "compaction-file-mismatch",
                f"compaction/compactionLog/{TOPIC}/0/{last}",
                f"{TOPIC}/0: log file {last} has no CQ file of that name: the broker's load deletes it with its "
                f"records (the log is cut at {cut}, the end of the CQ's last record)",
            ),
            (
                "compaction-physical-offset",
                f"compaction/compactionLog/{TOPIC}/0/{offset_to_name(0)}",
                f"{TOPIC}/0 compaction log: PHYSICALOFFSET 5, but the record is at {served[1]['physicalOffset']}",
            ),
        ]
    )


def cut_to(path: Path, length: int):
    path.write_bytes(path.read_bytes()[:length])


def verify_and_reopen(written, java_oracle, tmp_path, cases: dict) -> tuple[dict, dict]:
    """Each case's change made to a copy of the store: verify's compaction findings' details, and what RocketMQ
    makes of the copy (CompactionWrite5 --read, the JVMs at once), by case."""
    found = {}
    for case, change in cases.items():
        root = tmp_path / case / "store"
        shutil.copytree(written[0], root)
        change(root)
        res = run("verify", "--store", root, "--broker-config", written[1], "--format", "jsonl")
        found[case] = [f["detail"] for f in jsonl(res.stdout) if f["kind"].startswith("compaction")]
    rereads = rocketmq_compactions(java_oracle, [(tmp_path / c / "store", tmp_path / c) for c in cases], "--read")
    return found, dict(zip(cases, rereads))


def test_damage_is_what_rocketmq_makes_of_it(written, java_oracle, tmp_path):
    """Each changed copy reopened by RocketMQ (CompactionWrite5 --read): a log file past the CQ's last record
    without its CQ file is deleted with its records (TopicPartitionLog.recover), another unpaired file fails the
    store's load (sanityCheck), a CQ file of the wrong length drops its queue (MappedFileQueue.doLoad), records
    whose units were zeroed are cut from the log (SparseConsumeQueue.recover, then TopicPartitionLog.recover),
    and a record whose body changed is served as it is (nothing checks the compaction log's CRCs)."""
    _, conf, truth = written
    q0, q1 = truth["queues"]
    cq_dir = lambda root, queue_id: root / "compaction" / "compactionCq" / TOPIC / str(queue_id)  # noqa: E731
    body_at = q1["messages"][1]["physicalOffset"] + q1["messages"][1]["storeSize"] // 2  # a byte of its body
    cases = {
        "last": lambda root: (cq_dir(root, 0) / q0["cqFiles"][-1]).unlink(),
        "first": lambda root: (cq_dir(root, 0) / q0["cqFiles"][0]).unlink(),
        "cut": lambda root: cut_to(cq_dir(root, 1) / q1["cqFiles"][-1], 100),
        "tail": lambda root: patch(
            cq_dir(root, 0) / q0["cqFiles"][-1], 2 * S.BCQ_UNIT_SIZE, bytes(S.BCQ_UNIT_SIZE * 2)
        ),
        "flip": lambda root: patch(
            root / "compaction" / "compactionLog" / TOPIC / "1" / offset_to_name(0), body_at, b"#"
        ),
    }
    found, seen = verify_and_reopen(written, java_oracle, tmp_path, cases)

    cut = max(u["pos"] + u["size"] for u in q0["units"] if u["pos"] < int(q0["cqFiles"][-1]))
    assert found["last"] == [
        f"{TOPIC}/0: log file {q0['logFiles'][-1]} has no CQ file of that name: the broker's load deletes it with "
        f"its records (the log is cut at {cut}, the end of the CQ's last record)"
    ]
    kept = [m for m in q0["messages"] if m["physicalOffset"] < int(q0["cqFiles"][-1])]
    assert seen["last"]["queues"][0]["messages"] == kept and len(kept) < len(q0["messages"])
    assert not (
        tmp_path / "last" / "store" / "compaction" / "compactionLog" / TOPIC / "0" / q0["logFiles"][-1]
    ).exists()

    assert found["first"] == [
        f"{TOPIC}/0: log file {q0['logFiles'][0]} has no CQ file of that name: the broker's load fails on this "
        "queue and the store does not start"
    ]
    assert seen["first"] == {"loadReturned": False}

    assert found["cut"] == [
        f"{TOPIC}/1: file is 100 bytes, not {CQ_SIZE}: the broker's load drops this queue and serves none of it"
    ]
    assert seen["cut"]["queues"] == [{**q0, "loaded": True}, {"queueId": 1, "loaded": False}]

    tail = [m for m in q0["messages"] if m["physicalOffset"] >= int(q0["cqFiles"][-1])][2:]  # its last file's 3rd, 4th
    end = q0["units"][-3]["pos"] + q0["units"][-3]["size"]
    assert len(tail) == 2 and found["tail"] == [
        f"{TOPIC}/0 compaction log: no CQ unit names the record at {m['physicalOffset']} (queue offset "
        f"{m['queueOffset']}): the broker's load cuts the log at {end}, the end of the CQ's last record, and loses it"
        for m in tail
    ]
    assert seen["tail"]["queues"][0]["messages"] == [m for m in q0["messages"] if m not in tail]

    flipped = seen["flip"]["queues"][1]["messages"]
    assert [m["bodyCrcOk"] for m in flipped] == [m != flipped[1] for m in flipped]
    record = q1["messages"][1]
    stored, computed = flipped[1]["bodyCRC"], flipped[1]["bodyCrcComputed"]
    assert stored == record["bodyCRC"] and computed != stored
    assert found["flip"] == [
        f"{TOPIC}/1 compaction log: body CRC {stored} stored, {computed} computed over the {record['bodyLength']}-byte "
        "body: the body changed after it was written; the broker serves it as it is"
    ]


def queue_dirs(root: Path, queue_id: int) -> tuple[Path, Path]:
    """A queue's compaction log folder and CQ folder."""
    return tuple(root / "compaction" / sub / TOPIC / str(queue_id) for sub in ("compactionLog", "compactionCq"))


def test_what_a_crash_leaves_is_what_rocketmq_makes_of_it(written, java_oracle, tmp_path):
    """Files a crash or a hand leaves, each copy reopened by RocketMQ: a NAME.delete (CompactionLog.replaceFiles)
    fails the store's load (DefaultMappedFile parses its name) and one of another length drops its queue; an
    all-zero log file rolled without its CQ file (TopicPartitionLog.roll) is deleted, losing nothing; a zero-length
    last file is deleted by MappedFileQueue.doLoad before files pair (its log file then unpaired: deleted or a
    failed load), but not when a folder such as compacting/ sorts after it (its length drops the queue); a queue
    without its CQ or log folder is skipped; a file of the wrong length drops the queue before files pair."""
    q0, q1 = written[2]["queues"]
    log0, cq0 = lambda r: queue_dirs(r, 0)[0], lambda r: queue_dirs(r, 0)[1]  # noqa: E731
    log1, cq1 = lambda r: queue_dirs(r, 1)[0], lambda r: queue_dirs(r, 1)[1]  # noqa: E731
    last0, next0 = q0["logFiles"][-1], offset_to_name(int(q0["logFiles"][-1]) + written[2]["compactionLogFileSize"])
    cases = {
        "dotdelete": lambda r: shutil.copy(log0(r) / q0["logFiles"][0], log0(r) / f"{q0['logFiles'][0]}.delete"),
        "shortdelete": lambda r: (log0(r) / f"{q0['logFiles'][0]}.delete").write_bytes(b"x" * 10),
        "rollcrash": lambda r: (
            (log0(r) / next0).write_bytes(bytes(written[2]["compactionLogFileSize"])),
            cut_to(cq1(r) / q1["cqFiles"][-1], 100),
            (cq1(r) / q1["cqFiles"][0]).unlink(),
        ),
        "zcq": lambda r: (cut_to(cq0(r) / last0, 0), shutil.rmtree(log1(r))),
        "zlog": lambda r: cut_to(log0(r) / last0, 0),
        "compacting": lambda r: ((log0(r) / next0).touch(), (log0(r) / "compacting").mkdir(), shutil.rmtree(cq1(r))),
    }
    found, seen = verify_and_reopen(written, java_oracle, tmp_path, cases)
    dropped = {"queueId": 1, "loaded": False}
    fails = f"{TOPIC}/0: file name is not a number: the store does not start"
    assert (found["dotdelete"], seen["dotdelete"]) == ([fails], {"loadReturned": False})
    assert found["shortdelete"] == [
        f"{TOPIC}/0: file is 10 bytes, not {written[2]['compactionLogFileSize']}: the broker's load drops this queue "
        "and serves none of it"
    ]
    assert seen["shortdelete"]["queues"] == [{"queueId": 0, "loaded": False}, {**q1, "loaded": True}]
    assert found["rollcrash"] == [
        f"{TOPIC}/1: file is 100 bytes, not {CQ_SIZE}: the broker's load drops this queue and serves none of it"
    ]
    assert seen["rollcrash"]["queues"] == [{**q0, "loaded": True}, dropped]
    assert not (tmp_path / "rollcrash" / "store" / "compaction" / "compactionLog" / TOPIC / "0" / next0).exists()

    cut = max(u["pos"] + u["size"] for u in q0["units"] if u["pos"] < int(last0))
    assert found["zcq"] == [
        f"{TOPIC}/0: log file {last0} has no CQ file of that name: the broker's load deletes it with its records (the "
        f"log is cut at {cut}, the end of the CQ's last record)",
        f"{TOPIC}/1: no compaction log folder: the broker's load skips this queue and never serves it",
    ]
    kept = [m for m in q0["messages"] if m["physicalOffset"] < int(last0)]
    assert seen["zcq"]["queues"][0]["messages"] == kept and len(kept) < len(q0["messages"])
    assert seen["zcq"]["queues"][1] == dropped
    assert found["zlog"][0] == (
        f"{TOPIC}/0: CQ file {last0} has no log file of that name: the broker's load fails on this queue and the "
        "store does not start"
    )
    assert seen["zlog"] == {"loadReturned": False}
    assert found["compacting"] == [  # by file: compactionCq/ first
        f"{TOPIC}/1: no compaction CQ folder: the broker's load skips this queue and never serves it",
        f"{TOPIC}/0: file is 0 bytes, not {written[2]['compactionLogFileSize']}: the broker's load drops this queue "
        "and serves none of it",
    ]
    assert seen["compacting"]["queues"] == [{"queueId": 0, "loaded": False}, dropped]


def test_a_running_brokers_newest_files_may_be_in_flight(written, tmp_path):
    """On a store whose lock a broker holds, a newest log file without its CQ file and a NAME.delete may be a
    roll or a compaction's swap under way: warnings saying so, not errors; the same files in a stopped store are
    errors."""
    root, conf = copy_of(written, tmp_path), written[1]
    log0, cq0 = queue_dirs(root, 0)
    last0 = written[2]["queues"][0]["cqFiles"][-1]
    (cq0 / last0).unlink()
    shutil.copy(queue_dirs(root, 1)[0] / offset_to_name(0), queue_dirs(root, 1)[0] / f"{offset_to_name(0)}.delete")

    def compaction_findings():
        res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
        return [(f["severity"], f["file"].rsplit("/", 2)[-2:]) for f in jsonl(res.stdout) if "compaction" in f["kind"]]

    stopped = compaction_findings()
    with held_lock(root):
        running = compaction_findings()
    files = [["0", last0], ["1", f"{offset_to_name(0)}.delete"]]
    assert stopped == [("error", f) for f in files]
    assert running == [("warning", f) for f in files]
