"""BatchConsumeQueue (rmqctl.batchcq) on j-batchcq, a store RocketMQ 5.3.3 wrote with a BatchCQ topic: dump against
the truth RocketMQ read back, verify's unit checks on the real units and on damaged copies, and `rebuild
consumequeue` writing the broker's bytes, which RocketMQ 5.3.3 then loads."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rmqctl import schema as S
from rmqctl.batchcq import batch_consume_queues, batch_topics, bcq_binary_search, binary_search_right
from rmqctl.config import load_config
from rmqctl.store import Store

import oracle
from conftest import FIXTURES, broker_conf, copy_store, jsonl, patch, run, truth
from oracle import problems

NAME = "j-batchcq"
STORE = FIXTURES / NAME / "store"
CONF = broker_conf(NAME)


def truth_units(topic: str, queue_id: int) -> list[dict]:
    return [r for r in truth(NAME, "truth-consumequeue.jsonl") if (r["topic"], r["queueId"]) == (topic, queue_id)]


def test_the_store_model_finds_the_batchcq_queues_and_their_offsets():
    store = Store(STORE, load_config(CONF))
    assert batch_topics(store) == {"BatchTopic"}
    summary = json.loads((FIXTURES / NAME / "truth-summary.json").read_text())
    want = {
        (q["topic"], q["queueId"]): (q["minOffset"], q["maxOffset"])
        for q in summary["consumeQueues"]
        if q["cqType"] == "BatchCQ"
    }
    assert {(q.topic, q.queue_id): q.offset_range() for q in batch_consume_queues(store)} == want


@pytest.mark.parametrize("queue_id", [0, 1])
def test_dump_batchconsumequeue_matches_what_rocketmq_read(queue_id):
    res = run(
        "dump", "batchconsumequeue", "BatchTopic", queue_id, "--store", STORE, "--broker-config", CONF, "--resolve"
    )
    assert res.exit_code == 0, res.stderr
    rows = jsonl(res.stdout)
    want = truth_units("BatchTopic", queue_id)
    assert len(rows) == len(want) > 100
    for row, t in zip(rows, want):
        assert (row["file"], row["position"]) == (t["cqFile"], t["filePosition"])
        assert {
            k: row[k]
            for k in (
                "commitLogOffset",
                "size",
                "tagsCode",
                "storeTime",
                "msgBaseOffset",
                "compactedOffset",
                "reserved",
            )
        } == {
            k: t[k]
            for k in (
                "commitLogOffset",
                "size",
                "tagsCode",
                "storeTime",
                "msgBaseOffset",
                "compactedOffset",
                "reserved",
            )
        }
        assert row["batchSize"] == t["batchNum"] and row["ok"] is True
    assert any(r["batchSize"] > 1 for r in rows)  # inner batches: a unit covers several queue offsets


def test_dump_consumequeue_of_a_batchcq_topic_reads_its_batch_queue_as_rocketmq_does():
    """A consumer's view: `dump consumequeue` of a BatchCQ topic gives its units with the broker's CqUnit names
    (queueOffset = msgBaseOffset, batchNum), as RocketMQ's ConsumeQueueInterface read them."""
    for queue_id in (0, 1):
        res = run(
            "dump", "consumequeue", "BatchTopic", queue_id, "--store", STORE, "--broker-config", CONF, "--resolve"
        )
        assert res.exit_code == 0, res.stderr
        fields = ("commitLogOffset", "size", "tagsCode", "msgBaseOffset", "batchNum")
        got = [tuple(r[k] for k in fields) for r in jsonl(res.stdout)]
        assert got == [tuple(t[k] for k in fields) for t in truth_units("BatchTopic", queue_id)] and len(got) > 100
        assert all(r["queueOffset"] == r["msgBaseOffset"] and r["ok"] for r in jsonl(res.stdout))


def test_dump_batchconsumequeue_of_no_queue_is_one_line():
    res = run("dump", "batchconsumequeue", "BatchTopic", 7, "--store", STORE)
    assert res.exit_code == 2
    assert res.stderr == f"rmqctl: {STORE}/batchconsumequeue/BatchTopic/7: no such batchconsumequeue\n"


def test_verify_reads_batchcq_topics_from_their_own_queues():
    """Before: every BatchTopic record was a cq-missing-entries error (no consumequeue/BatchTopic)."""
    res = run("verify", "--store", STORE, "--broker-config", CONF, "--format", "jsonl")
    assert (res.exit_code, res.stdout) == (0, "")


def unit_at(root, queue_id: int, file: str, index: int) -> tuple:
    return root / "batchconsumequeue" / "BatchTopic" / str(queue_id) / file, index * S.BCQ_UNIT_SIZE


def test_verify_checks_each_unit_against_its_record(store_copy):
    root = store_copy(NAME)
    path, pos = unit_at(root, 0, "00000000000000000000", 2)
    patch(path, pos + 8, S.INT32.pack(999))  # size
    path, pos = unit_at(root, 0, "00000000000000000000", 5)
    patch(path, pos + 28, S.INT64.pack(77))  # msgBaseOffset
    res = run("verify", "--store", root, "--broker-config", CONF, "--format", "jsonl")
    found = [(f["kind"], f["position"], f["commitLogOffset"], f["detail"]) for f in jsonl(res.stdout)]
    assert res.exit_code == 1
    assert found == [
        ("bcq-unit-mismatch", 92, 12255, "BatchTopic/0 unit at msgBaseOffset 3: size 999, the record's 712"),
        (
            "bcq-offset-gap",
            230,
            14020,
            "BatchTopic/0: msgBaseOffset 77 where the previous unit's batch ends at 6: "
            "consumers cannot read the queue offsets between",
        ),
        ("bcq-unit-mismatch", 230, 14020, "BatchTopic/0 unit at msgBaseOffset 77: msgBaseOffset 77, the record's 6"),
        (
            "bcq-offset-gap",
            276,
            14493,
            "BatchTopic/0: msgBaseOffset 7 where the previous unit's batch ends at 78: "
            "consumers cannot read the queue offsets between",
        ),
    ]


def test_verify_finds_records_without_a_unit(store_copy):
    """The last two units of BatchTopic/1 zeroed: their records are below the other queue's last unit, where
    the broker's dispatch resumes, so it never writes them again."""
    root = store_copy(NAME)
    path, pos = unit_at(root, 1, "00000000000000007360", 16)
    patch(path, pos, bytes(2 * S.BCQ_UNIT_SIZE))
    res = run("verify", "--store", root, "--broker-config", CONF, "--format", "jsonl")
    found = [(f["kind"], f["severity"], f["commitLogOffset"], f["detail"]) for f in jsonl(res.stdout)]
    assert found == [
        (
            "bcq-missing-units",
            "error",
            477994,
            "BatchTopic/1: 2 dispatched record(s) have no batchconsumequeue unit (commitlog offsets "
            "477994..478468); the broker will not dispatch them again: consumers never see them",
        )
    ]


def rocketmq_533_loads(oracle: Path, root: Path, out: Path) -> bool:
    """Whether RocketMQ 5.3.3's load() returns true on the store (read5.sh --no-dispatch, on its own copy)."""
    subprocess.run(
        [str(oracle / "read5.sh"), "--no-dispatch", str(root), str(CONF), str(out)],
        capture_output=True,
        env={"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1", "PATH": "/usr/bin:/bin"},
    )
    return json.loads((out / "recovered-summary.json").read_text())["loadReturned"]


def test_verify_finds_a_file_of_another_size_that_rocketmq_does_not_load(store_copy, java_oracle, tmp_path):
    """A BatchCQ file grown by 30 bytes (found by the torture suite's fuzzing): MappedFileQueue.load refuses it, so
    RocketMQ 5.3.3's load returns false; verify says so (it took the configured size and said sound)."""
    root = store_copy(NAME)
    path = root / "batchconsumequeue" / "BatchTopic" / "1" / "00000000000000002944"
    with open(path, "ab") as f:
        f.write(bytes(30))
    res = run("verify", "--store", root, "--broker-config", CONF, "--format", "jsonl")
    found = [(f["kind"], f["severity"], f["file"], f["detail"]) for f in jsonl(res.stdout)]
    assert found == [
        (
            "file-size",
            "error",
            "batchconsumequeue/BatchTopic/1/00000000000000002944",
            "file is 1502 bytes, not 1472 (mapperFileSizeBatchConsumeQueue): the broker's load refuses it",
        )
    ]
    assert rocketmq_533_loads(java_oracle, root, tmp_path / "read5") is False


def test_an_empty_last_file_is_no_finding_where_rocketmq_5_deletes_it(store_copy, java_oracle, tmp_path):
    """A 0-byte last BatchCQ file (a broker that died between creating the file and mapping it): RocketMQ 5's
    MappedFileQueue.doLoad deletes it ("size is 0, auto delete") and loads the store, so verify stays sound."""
    root = store_copy(NAME)
    (root / "batchconsumequeue" / "BatchTopic" / "0" / "00000000000000010304").touch()
    res = run("verify", "--store", root, "--broker-config", CONF)
    assert (res.exit_code, res.stdout) == (0, ""), res.stdout
    assert rocketmq_533_loads(java_oracle, root, tmp_path / "read5") is True


def rebuilt_copy(store_copy):
    """A copy whose consume queues are gone, rebuilt by rmqctl."""
    root = store_copy(NAME)
    for part in ("batchconsumequeue", "consumequeue"):
        subprocess.run(["rm", "-rf", str(root / part)], check=True)
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", CONF)
    assert res.exit_code == 0, res.stderr
    return root


def files_of(root, part: str) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / part).rglob("*")) if p.is_file()}


def test_rebuild_writes_the_brokers_bytes(store_copy):
    root = rebuilt_copy(store_copy)
    for part in ("batchconsumequeue", "consumequeue"):
        assert files_of(root, part) == files_of(STORE, part), part
    assert (root / "checkpoint").read_bytes() == (STORE / "checkpoint").read_bytes()
    again = run("rebuild", "consumequeue", "--store", root, "--broker-config", CONF)
    assert again.stderr.endswith("8 queue(s) rebuilt from 583 records: identical to the store's, nothing to change\n")


def test_rebuild_refuses_inner_batches_whose_topic_lost_its_batchcq_config(store_copy):
    """With BatchTopic gone from topics.json and batchconsumequeue/, its inner batches would go to consumequeues
    whose units do not match their queue offsets: the rebuild names the first one and writes nothing; the other
    topics still rebuild."""
    root = store_copy(NAME)
    topics = json.loads((root / "config" / "topics.json").read_text())
    del topics["topicConfigTable"]["BatchTopic"]
    (root / "config" / "topics.json").write_text(json.dumps(topics))
    for leftover in (root / "config").glob("topics.json.bak"):
        leftover.unlink()
    shutil.rmtree(root / "batchconsumequeue")
    before = files_of(root, ".")
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", CONF)
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == (
        f"rmqctl: position 518 in {root}/commitlog/00000000000000000000: BatchTopic's records are inner batches "
        "(sysFlag INNER_BATCH), which only a BatchConsumeQueue serves, but neither topics.json "
        "(queue.type=BatchCQ) nor batchconsumequeue/ makes BatchTopic a BatchCQ topic: a consumequeue of them "
        "would not match their queue offsets; restore the topic's config (`rmqctl config restore`, or its "
        "attributes in topics.json) and run the rebuild again\n"
    )
    assert files_of(root, ".") == before
    plain = run("rebuild", "consumequeue", "--store", root, "--broker-config", CONF, "--topic", "PlainTopic")
    assert plain.exit_code == 0, plain.stderr


def test_rocketmq_533_loads_the_rebuilt_store(store_copy, java_oracle, tmp_path):
    root = rebuilt_copy(store_copy)
    out = tmp_path / "read5"
    proc = subprocess.run(
        [str(java_oracle / "read5.sh"), "--no-dispatch", str(root), str(CONF), str(out)],
        capture_output=True,
        text=True,
        env={"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1", "PATH": "/usr/bin:/bin"},
    )
    summary = json.loads((out / "recovered-summary.json").read_text())
    assert problems(summary) == {}, proc.stdout[-2000:]
    read = [json.loads(line) for line in (out / "messages-read.jsonl").read_text().splitlines()]
    for queue_id in (0, 1):
        got = [
            (r["commitLogOffset"], r["size"], r["tagsCode"], r["batchNum"], r["msgBaseOffset"])
            for r in read
            if (r["topic"], r["queueId"], r.get("cqType")) == ("BatchTopic", queue_id, "BatchCQ")
        ]
        want = [
            (t["commitLogOffset"], t["size"], t["tagsCode"], t["batchNum"], t["msgBaseOffset"])
            for t in truth_units("BatchTopic", queue_id)
        ]
        assert got == want


def test_append_refuses_a_batchcq_topic_and_keeps_its_queues(store_copy):
    """The broker assigns a BatchCQ topic's queue offsets from its batch offset table; rmqctl does not write
    them. Other topics of the store append as usual, and the batch queues stay the broker's."""
    root = store_copy(NAME)
    refused = run("append", "--store", root, "--broker-config", CONF, "--topic", "BatchTopic", "--body", "x")
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr == (
        "rmqctl: topic 'BatchTopic' is a BatchCQ topic (queue.type=BatchCQ): its queue offsets "
        "are the broker's batch offsets, which rmqctl does not assign; nothing was appended\n"
    )
    ok = run("append", "--store", root, "--broker-config", CONF, "--topic", "PlainTopic", "--body", "x")
    assert ok.exit_code == 0, ok.stderr
    assert files_of(root, "batchconsumequeue") == files_of(STORE, "batchconsumequeue")
    assert run("verify", "--store", root, "--broker-config", CONF).exit_code == 0


def test_append_catches_up_a_batchcq_queue_into_its_own_files(store_copy):
    """The last records' units never reached the queues (a broker killed before its reput wrote them): append's
    catch-up dispatches them, a BatchCQ topic's into batchconsumequeue/ as the broker's bytes (never a file
    consumequeue unit), before its own message goes through the batch dispatch."""
    root = store_copy(NAME)
    store = Store(root, load_config(CONF))
    # the units of the last three records of the BatchCQ queue that ends last, and of every record after them
    cut = max(
        int(arr[:written]["commitLogOffset"][-3])
        for q in batch_consume_queues(store)
        for _, written, arr in list(q.units())[-1:]
    )
    zeroed = 0
    for part, dtype in (("consumequeue", S.CQ_DTYPE), ("batchconsumequeue", S.BCQ_DTYPE)):
        for f in (p for p in (root / part).rglob("*") if p.is_file()):
            units = np.fromfile(f, dtype)
            late = units["commitLogOffset"] >= cut
            zeroed += int(np.count_nonzero(late))
            units[late] = np.zeros(1, dtype)
            units.tofile(f)
    assert zeroed > 0
    ok = run("append", "--store", root, "--broker-config", CONF, "--topic", "PlainTopic", "--body", "x")
    assert ok.exit_code == 0, ok.stderr
    assert files_of(root, "batchconsumequeue") == files_of(STORE, "batchconsumequeue")
    assert not (root / "consumequeue" / "BatchTopic").exists()
    assert run("verify", "--store", root, "--broker-config", CONF).exit_code == 0


def test_consumers_read_batchcq_queues_in_queue_offsets(store_copy):
    root = store_copy(NAME)
    (root / "config" / "consumerOffset.json").write_text(
        json.dumps({"offsetTable": {"BatchTopic@g1": {"0": 2, "1": 322}}})
    )
    res = run("consumers", "--store", root, "--broker-config", CONF, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    rows = {r["queueId"]: r for r in jsonl(res.stdout)}
    # offset 2 is the second message of the inner batch at 8935 (msgBaseOffset 1, batchSize 2)
    assert (rows[0]["minOffset"], rows[0]["maxOffset"], rows[0]["lag"], rows[0]["oldestUnconsumed"]) == (
        0,
        436,
        434,
        truth_units("BatchTopic", 0)[1]["storeTime"],
    )
    assert (rows[1]["lag"], rows[1]["oldestUnconsumed"], rows[1]["status"]) == (0, None, "ok")


def oracle_classpath(oracle) -> str:
    """read5.sh's class path (RocketMQ 5.3.3's classes and what they load), from the oracle's own env.sh."""
    script = f'. "{oracle}/lib/env.sh" && printf "%s" "$(oracle_debian_cp)"'
    debian = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    jars = ["rocketmq-5.jar", "fastjson-1.2.83.jar", "stubs-5.jar", "otel-api-context-1.29.0.jar"]
    return ":".join([f"{oracle}/lib/{j}" for j in jars] + [debian])


def bcq_search(java_oracle, asked: list[str]) -> list[str]:
    """tests/java/BcqSearch.java's answer to each line asked (RocketMQ 5.3.3's own searches)."""
    harness = Path(__file__).parent / "java" / "BcqSearch.java"
    java = subprocess.run(
        ["java", "-cp", oracle_classpath(java_oracle), str(harness)],
        input="\n".join(asked) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    return java.stdout.splitlines()


def test_binary_search_right_is_rocketmqs(java_oracle):
    """Every file of both queues, each unit's storeTime and its neighbours as targets: the unit
    BatchConsumeQueue.binarySearchRight (5.3.3, run here) stops at for LOWER and UPPER."""
    store = Store(STORE, load_config(CONF))
    asked, got = [], []
    for q in batch_consume_queues(store):
        for f, written, arr in q.units():
            for t in sorted({int(t) + d for t in arr["storeTime"][:written] for d in (-1, 0, 1)}):
                asked.append(f"{f.path} {written} {t}")
                got.append(
                    tuple(binary_search_right(arr["storeTime"], 0, written - 1, t, b) for b in ("lower", "upper"))
                )
    want = [tuple(int(x) for x in line.split()) for line in bcq_search(java_oracle, asked)]
    assert len(got) > 300 and got == want
    assert any(upper == -1 for _, upper in got)  # the broker's UPPER between two units' times


def test_the_unit_search_by_queue_offset_is_rocketmqs_on_damaged_units_too(java_oracle, tmp_path):
    """getBatchMsgIndexBuffer's binarySearch on msgBaseOffset (5.3.3, run here), on a queue file as written and on
    copies whose bases were damaged (one set off, two swapped, a run set equal): for every queue offset around
    them, the unit it returns is bcq_binary_search's (locate and the lag views name that unit: on damaged units
    the one the broker serves, not the one whose batch covers the offset)."""
    store = Store(STORE, load_config(CONF))
    q = batch_consume_queues(store)[0]
    f, written, arr = next(q.units())
    rng, asked, got, sorted_answers = random.Random(7), [], [], []
    for variant in range(8):
        units = arr[:written].copy()
        bases = units["msgBaseOffset"]
        if variant % 4 == 1:
            bases[rng.randrange(written)] = rng.randrange(int(bases[-1]) + 5)
        elif variant % 4 == 2:
            i, j = rng.sample(range(written), 2)
            bases[i], bases[j] = bases[j], bases[i]
        elif variant % 4 == 3:
            i = rng.randrange(written - 5)
            bases[i : i + 5] = bases[i]
        path = tmp_path / f"units-{variant}"
        path.write_bytes(units.tobytes())
        for target in range(-1, int(bases.max()) + 3):
            asked.append(f"base {path} {written} {target}")
            got.append(bcq_binary_search(bases, written - 1, target))
            sorted_answers.append(int(np.searchsorted(bases, target, side="right")) - 1)
    assert len(got) > 400 and got == [int(line) for line in bcq_search(java_oracle, asked)]
    assert got != sorted_answers  # (the search a sorted array takes would answer otherwise on damaged units)


@pytest.mark.parametrize("by_cache", [True, False])
def test_offset_by_time_is_rocketmqs_with_and_without_the_time_cache(store_copy, java_oracle, tmp_path, by_cache):
    """Every unit's storeTime and its neighbours, LOWER and UPPER, both queues: RocketMQ 5.3.3's loaded store's
    getOffsetInQueueByTime (tests/java/BcqByTime.java) against rmqctl's, with searchBcqByCacheEnable as the
    broker.conf says. Without the cache the broker picks the file searchTimeFromFiles finds, and a time between
    two files' units answered the earlier file's last batch (136 where the broker answers 137)."""
    from rmqctl.views.offsets import offset_by_time

    root = store_copy(NAME)
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF.read_text() + f"\nsearchBcqByCacheEnable={str(by_cache).lower()}\n")
    script = f'. "{java_oracle}/lib/env.sh" && printf "%s\\n" "${{JVM_OPENS[@]}}"'
    opens = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.split()
    jars = [f"{java_oracle}/lib/{j}" for j in ("oracle-tools-5.jar", "rocksdbjni-classes-8.11.4.jar")]
    store = Store(root, load_config(conf))
    for queue_id in (0, 1):
        times = sorted(
            {t + d for u in truth_units("BatchTopic", queue_id) for t in [u["storeTime"]] for d in (-1, 0, 1)}
        )
        java = subprocess.run(
            ["java", *opens, f"-Duser.home={tmp_path}", f"-Dorg.slf4j.simpleLogger.logFile={tmp_path / 'java.log'}"]
            + [
                "-cp",
                ":".join([oracle_classpath(java_oracle), *jars]),
                str(Path(__file__).parent / "java" / "BcqByTime.java"),
            ]
            + [str(root), str(conf), "BatchTopic", str(queue_id), *map(str, times)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"},
        )
        want = [tuple(map(int, line.split())) for line in java.stdout.splitlines()]
        got = [
            (t, *(offset_by_time(store, "BatchTopic", queue_id, t, 5, b)[0].queueOffset for b in ("lower", "upper")))
            for t in times
        ]
        assert got == want and len(want) == len(times)


def test_offset_by_time_on_a_batchcq_queue():
    """The unit's msgBaseOffset: a time inside an inner batch's store time answers the batch's first offset."""
    first, second = truth_units("BatchTopic", 0)[:2]
    at = lambda ms, *more: jsonl(run("offset-by-time", "BatchTopic", "0", str(ms), "--store", STORE, *more).stdout)[0]  # noqa: E731
    assert (at(first["storeTime"] - 1000)["queueOffset"], at(second["storeTime"])["queueOffset"]) == (0, 1)
    row = at(second["storeTime"] + 1)
    assert (row["queueOffset"], row["rule"]) == (3, "5.x BatchConsumeQueue.getOffsetInQueueByTime, BoundaryType.LOWER")
    assert at(10**13)["queueOffset"] == 435  # past the last unit: its msgBaseOffset (the batch at 435)
    four = run("offset-by-time", "BatchTopic", "0", "0", "--store", STORE, "--rocketmq-version", "4")
    assert four.exit_code == 2 and "a BatchConsumeQueue is 5.x's" in four.stderr


def crashed_with_a_lost_tail(store_copy, cut: int = 335306) -> Path:
    """A copy of the fixture after a crash (`abort`) whose commitlog lost everything from `cut` on (zeros): the
    broker's recovery ends there, and truncateDirtyLogicFiles cuts BatchTopic's queues back to it (5.3.3
    deletes queue 0's last three files)."""
    root = store_copy(NAME)
    (root / "abort").touch()
    for f in sorted((root / "commitlog").iterdir()):
        start = int(f.name)
        with open(f, "r+b") as out:
            size = out.seek(0, 2)
            if start + size > cut:
                out.seek(max(cut - start, 0))
                out.write(bytes(size - max(cut - start, 0)))
    return root


def test_offset_by_time_and_consumers_read_a_batchcq_queue_as_the_brokers_recovery_leaves_it(
    store_copy, java_oracle, tmp_path
):
    """After the crash, RocketMQ 5.3.3's load (run here) keeps BatchTopic/0's units before the commitlog's new
    end: its max is 294. rmqctl read the files as they were (max 436) and answered offsets of messages the
    broker no longer has, for offset-by-time and consumers alike."""
    root = crashed_with_a_lost_tail(store_copy)
    out = tmp_path / "read5"
    subprocess.run(
        [str(java_oracle / "read5.sh"), str(root), str(CONF), str(out)],
        capture_output=True,
        env={"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1", "PATH": "/usr/bin:/bin"},
    )
    summary = json.loads((out / "recovered-summary.json").read_text())
    assert summary["abnormalRecovery"] is True
    java = {(q["topic"], q["queueId"]): q for q in summary["consumeQueues"] if q["cqType"] == "BatchCQ"}
    units = [
        json.loads(line)
        for line in (out / "messages-read.jsonl").read_text().splitlines()
        if '"cqType": "BatchCQ"' in line or '"cqType":"BatchCQ"' in line
    ]
    for queue_id in (0, 1):
        q = java[("BatchTopic", queue_id)]
        kept = [u for u in units if u["queueId"] == queue_id and u["topic"] == "BatchTopic"]
        last = max(kept, key=lambda u: u["msgBaseOffset"])
        rows = jsonl(run("offset-by-time", "BatchTopic", str(queue_id), "1" + "0" * 13, "--store", root).stdout)
        assert [(r["minOffset"], r["maxOffset"], r["queueOffset"]) for r in rows] == [
            (q["minOffset"], q["maxOffset"], last["msgBaseOffset"])  # past every unit: the last one's batch
        ]
    assert java[("BatchTopic", 0)]["maxOffset"] == 294
    (root / "config" / "consumerOffset.json").write_text('{"offsetTable":{"BatchTopic@g":{0:100}}}')
    rows = jsonl(run("consumers", "--store", root, "--format", "jsonl").stdout)
    assert [(r["maxOffset"], r["lag"]) for r in rows] == [(294, 194)]


def test_locate_a_queue_offset_inside_an_inner_batch():
    res = run("locate", "2", "--topic", "BatchTopic", "--store", STORE, "--format", "jsonl")
    assert jsonl(res.stdout) == [
        {
            "topic": "BatchTopic",
            "queueId": 0,
            "queueOffset": 2,
            "file": "00000000000000000000",
            "fileFromOffset": 0,
            "position": 46,
            "exists": True,
            "commitLogOffset": 8935,
            "size": 1303,
            "tagsCode": 0,
            "storeTime": 1795867584837,
            "msgBaseOffset": 1,
            "batchSize": 2,
            "compactedOffset": -1,
            "reserved": 0,
            "indexInBatch": 1,
        }
    ]
    past = run("locate", "436", "--topic", "BatchTopic", "--store", STORE, "--format", "jsonl")
    assert past.exit_code == 1  # (the documented exit code where nothing is there, as for a plain queue)
    assert jsonl(past.stdout) == [
        {
            "topic": "BatchTopic",
            "queueId": 0,
            "queueOffset": 436,
            "exists": False,
            "nothingThere": "no unit's batch covers this queue offset",
        }
    ]


def test_the_spark_source_reads_every_unit():
    pytest.importorskip("pyspark")
    from rmqctl.spark import session  # the optional extra

    spark = session("local[1]", conf={"spark.ui.enabled": "false"})
    rows = spark.read.format("rocketmq-batchconsumequeue").option("brokerConfig", str(CONF)).load(str(STORE)).collect()
    fields = ("topic", "queueId", "commitLogOffset", "size", "tagsCode", "storeTime", "msgBaseOffset")
    got = sorted((*(r[f] for f in fields), r.batchSize, r.file, r.position) for r in rows)
    want = sorted(
        (*(t[f] for f in fields), t["batchNum"], t["cqFile"], t["filePosition"])
        for t in truth(NAME, "truth-consumequeue.jsonl")
        if t["topic"] == "BatchTopic"
    )
    assert got == want and len(got) == 383


def test_dump_of_a_queue_names_its_units_that_do_not_resolve(store_copy):
    """`dump consumequeue` and `dump batchconsumequeue --resolve` print every unit, then one line with how many
    do not agree with their records and the queue offset of the first, and exit 1."""
    root = store_copy(NAME)
    for index in (2, 5):
        path, pos = unit_at(root, 0, "00000000000000000000", index)
        patch(path, pos + 8, S.INT32.pack(999))  # size
    for command in ("consumequeue", "batchconsumequeue"):
        res = run("dump", command, "BatchTopic", 0, "--store", root, "--broker-config", CONF, "--resolve")
        assert res.exit_code == 1 and len(jsonl(res.stdout)) > 100
        assert res.stderr == "rmqctl: 2 unit(s) of BatchTopic/0 do not resolve (first at queue offset 3)\n"


def test_after_the_broker_deleted_the_oldest_commitlog_files_info_and_verify_read_the_queues_as_it_does(
    tmp_path, java_oracle
):
    """The broker's cleanup deleted j-batchcq's first two commitlog files (rmqctl clean does not write BatchCQ
    stores; the batch queues' files are all kept, none lying wholly below the new min). Its load corrects each
    batch queue's min past the first file's units below the commitlog (BatchConsumeQueue.correctMinOffset):
    info gives RocketMQ 5.3.3's min and max, and verify reports no unit the cleanup left as damage."""
    root = copy_store(NAME, tmp_path)
    for name in ("00000000000000000000", "00000000000000131072"):
        (root / "commitlog" / name).unlink()
    served, _, _ = oracle.served(java_oracle, 5, root, CONF, tmp_path / "oracle")
    res = run("info", "--store", root, "--broker-config", CONF, "--format", "json")
    assert res.exit_code == 0, res.stderr
    shown = {
        (q["topic"], q["queueId"]): (q["minOffset"], q["maxOffset"])
        for q in json.loads(res.stdout)["consumequeue"]["queues"]
    }
    assert shown == served and served[("BatchTopic", 0)][0] > 0
    res = run("verify", "--store", root, "--broker-config", CONF, "--format", "jsonl")
    assert (res.exit_code, res.stdout) == (0, ""), res.stdout[:2000]


@pytest.mark.parametrize("topic,batch", [("BatchTopic", False), ("PlainTopic", True)])
def test_a_topic_whose_queue_type_disagrees_with_its_queues_is_a_broker_that_does_not_start(
    store_copy, java_oracle, tmp_path, topic, batch
):
    """BatchTopic's queue.type=BatchCQ taken away, or PlainTopic given it: ConsumeQueueStore.load's
    queueTypeShouldBe throws and RocketMQ 5.3.3's load() fails (run here); verify said sound."""
    root = store_copy(NAME)
    topics = json.loads((root / "config" / "topics.json").read_text())
    attributes = topics["topicConfigTable"][topic]["attributes"]
    if batch:
        attributes["queue.type"] = "BatchCQ"
    else:
        attributes.pop("queue.type")
    (root / "config" / "topics.json").write_text(json.dumps(topics))
    found = jsonl(run("verify", "--store", root, "--broker-config", CONF, "--format", "jsonl").stdout)
    typed = [f for f in found if f["kind"] == "bcq-queue-type"]
    where = "batchconsumequeue" if not batch else "consumequeue"
    assert [(f["severity"], f["file"]) for f in typed] == [("error", f"{where}/{topic}")]
    out = tmp_path / "read5"
    subprocess.run(
        [str(java_oracle / "read5.sh"), "--no-dispatch", str(root), str(CONF), str(out)],
        capture_output=True,
        env={"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1", "PATH": "/usr/bin:/bin"},
    )
    assert json.loads((out / "recovered-summary.json").read_text())["loadReturned"] is False


def test_topic_config_names_in_another_spelling_are_read_as_the_brokers_fastjson_reads_them(
    store_copy, java_oracle, tmp_path
):
    """topics.json's topicConfigTable and a topic's attributes spelt as fastjson's smartMatch also takes them
    (topic_config_table, Attributes): RocketMQ 5.3.3 loads the store (run here) with BatchTopic a BatchCQ topic,
    and verify finds its queues sound (it said the broker does not start: bcq-queue-type)."""
    root = store_copy(NAME)
    topics = json.loads((root / "config" / "topics.json").read_text())
    table = topics.pop("topicConfigTable")
    for conf in table.values():
        conf["Attributes"] = conf.pop("attributes")
    (root / "config" / "topics.json").write_text(json.dumps({"topic_config_table": table, **topics}))
    verified = run("verify", "--store", root, "--broker-config", CONF, "--format", "jsonl")
    assert verified.exit_code in (0, 1) and [f for f in jsonl(verified.stdout) if f["kind"] == "bcq-queue-type"] == []
    out = tmp_path / "read5"
    subprocess.run(
        [str(java_oracle / "read5.sh"), "--no-dispatch", str(root), str(CONF), str(out)],
        capture_output=True,
        env={"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1", "PATH": "/usr/bin:/bin"},
    )
    summary = json.loads((out / "recovered-summary.json").read_text())
    assert summary["loadReturned"] is True and summary["topicConfigs"]["batchCqTopics"] == ["BatchTopic"]


def test_dump_resolve_calls_units_whose_records_were_cleaned_expired(store_copy):
    """j-batchcq with its first commitlog file deleted, as the broker's cleanup does (its batch queues are not
    cleaned: ConsumeQueueStore corrects their min): the units pointing there are expired, not damage, as a plain
    queue's are, and the dump exits 0 (it exited 1, naming 44)."""
    root = store_copy(NAME)
    first = sorted((root / "commitlog").iterdir())[0]
    first.unlink()
    res = run("dump", "batchconsumequeue", "BatchTopic", 0, "--resolve", "--store", root, "--broker-config", CONF)
    rows = jsonl(res.stdout)
    assert res.exit_code == 0 and res.stderr == ""
    assert sum(r.get("expired", False) for r in rows) > 0
    assert all(r["ok"] or r.get("expired") for r in rows)
