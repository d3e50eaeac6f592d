"""Which RocketMQ owns a store (rmqctl.brokerversion): read from the fixtures RocketMQ 4.9.7 and 5.3.3 wrote, the
newest evidence winning, the operator's word overriding, one stderr line when nothing tells; and the rules that
follow it (offset-by-time, clean, 5.5.0's abnormal recovery)."""

from __future__ import annotations

import json
import os

import pytest

from rmqctl import schema as S
from rmqctl.config import load_config
from rmqctl.schema import PHYSICAL_OFFSET_AT
from rmqctl.errors import UsageError
from rmqctl.store import Store

from conftest import FIXTURES, broker_conf, jsonl, patch, run

ROCKETMQ_FIXTURES = [
    "a-basic",
    "b-mixed",
    "c-v5-features",
    "d-crashed",
    "e-dledger",
    "f-timer5",
    "i-rocksdb-cq",
    "j-batchcq",
    "k-combine-cq",
]
ASSUMED_NOTE = (
    "rmqctl: note: nothing in the store tells which RocketMQ wrote it; assuming RocketMQ 5.x rules (say "
    "--rocketmq-version 4, 5 or 5.5 if the store's broker is another)\n"
)


def writer_major(name: str) -> int:
    """4 for the fixtures RocketMQ 4.9.7 wrote, else 5 (5.3.3 and a develop snapshot)."""
    return (
        4 if json.loads((FIXTURES / name / "truth-summary.json").read_text())["rocketmqVersion"].startswith("4.") else 5
    )


@pytest.mark.parametrize("name", ROCKETMQ_FIXTURES)
def test_every_fixture_tells_its_writer_with_or_without_its_config(name):
    root = FIXTURES / name / "store"
    for config in (load_config(broker_conf(name)), None):
        version = Store(root, config).version
        assert (version.major, version.assumed) == (writer_major(name), False), version


def test_the_newest_evidence_wins(store_copy):
    """A 5.x broker that took over a 4.9 store reads it with 5.x rules, whatever its old records say."""
    root = store_copy("a-basic")
    assert Store(root).version.label == "4.x"
    (root / "abort").write_text("4242")
    assert (Store(root).version.label, Store(root).version.evidence) == ("5.x", "the PID in the abort file")
    (root / "abort").write_text("")  # 4.9's abort file is empty: it tells nothing
    assert Store(root).version.label == "4.x"
    (root / "RocksDBMessageStore").mkdir()
    assert (Store(root).version.label, Store(root).version.evidence) == (
        "5.4+",
        "RocksDBMessageStore in the store root",
    )
    with open(root / "checkpoint", "r+b") as f:  # a 5.1.1+ broker's confirmPhyOffset
        f.seek(32)
        f.write(S.INT64.pack(1234))
    assert Store(root).version.label == "5.4+"  # the newest of the two


def test_the_operators_word_overrides(tmp_path):
    root = FIXTURES / "c-v5-features" / "store"
    for given, label in (("4", "4.x"), ("5", "5.x"), ("5.5", "5.5")):
        version = Store(root, load_config(None, rocketmqVersion=given)).version
        assert (version.label, version.evidence, version.assumed) == (label, "--rocketmq-version says so", False)
    conf = tmp_path / "broker.conf"
    conf.write_text("rocketmqVersion=6\n")
    with pytest.raises(UsageError, match="rocketmqVersion must be one of 4, 5, 5.5, not '6'"):
        _ = Store(root, load_config(conf)).version


def empty_store(tmp_path):
    """A store a broker started once and never wrote to: nothing tells its version."""
    root = tmp_path / "store"
    (root / "commitlog").mkdir(parents=True)
    (root / "lock").touch()
    return root


def test_an_assumed_version_is_said_once_on_stderr_and_shown_in_info(tmp_path):
    root = empty_store(tmp_path)
    res = run("info", "--store", root, "--format", "json")
    assert res.exit_code == 0 and res.stderr == ASSUMED_NOTE
    assert json.loads(res.stdout)["brokerVersion"] == {
        "version": "5.x",
        "evidence": "nothing in the store tells which RocketMQ wrote it",
        "assumed": True,
    }
    table = run("info", "--store", root, "--format", "table")
    assert (
        "version    RocketMQ 5.x rules (assumed: nothing in the store tells which RocketMQ wrote it)"
        in table.stdout.splitlines()
    )
    told = run("info", "--store", root, "--format", "json", "--rocketmq-version", "4")
    assert told.stderr == "" and json.loads(told.stdout)["brokerVersion"]["version"] == "4.x"
    assert run("clean", "--store", root, "--quiet").stderr == ""  # --quiet: nothing but errors


def test_info_names_the_version_and_why():
    res = run("info", "--store", FIXTURES / "a-basic" / "store", "--format", "table")
    assert res.stderr == ""
    assert (
        "version    RocketMQ 4.x rules (config/delayOffset.json without 5.0's dataVersion)" in res.stdout.splitlines()
    )


def test_records_of_the_4x_style_alone_are_an_assumption(store_copy):
    """5.0.0-5.1.4 write a record's properties as 4.9 does (5.2.0 is the first to end them with the separator):
    with nothing else telling, 4.x rules are assumed and said so on stderr; a config file 4.9.7 wrote (no
    TopicConfig.attributes, no DelayOffsetSerializeWrapper.dataVersion) tells 4.x, one 5.0+ wrote tells 5.x."""
    root = store_copy("a-basic")
    (root / "config" / "delayOffset.json").unlink()
    version = Store(root).version
    assert (version.label, version.evidence, version.assumed) == (
        "4.x",
        "the records' 4.x property style, which 5.0-5.1 also write",
        True,
    )
    res = run("info", "--store", root, "--format", "json")
    assert res.stderr == (
        "rmqctl: note: the records' 4.x property style, which 5.0-5.1 also write; assuming RocketMQ 4.x rules "
        "(say --rocketmq-version 4, 5 or 5.5 if the store's broker is another)\n"
    )
    topics = root / "config" / "topics.json"
    topics.write_text('{"dataVersion":{"counter":1,"timestamp":1},"topicConfigTable":{"TopicTest":{"order":false,'
                      '"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest",'
                      '"topicSysFlag":0,"writeQueueNums":4}}}')  # fmt: skip
    assert (Store(root).version.evidence, Store(root).version.assumed) == (
        "config/topics.json without 5.0's attributes",
        False,
    )
    topics.write_text(topics.read_text().replace('{"order"', '{"attributes":{},"order"'))
    assert (Store(root).version.label, Store(root).version.evidence) == (
        "5.x",
        "attributes in config/topics.json (5.0+)",
    )
    topics.unlink()
    (root / "config" / "delayOffset.json").write_text(
        '{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":1},"offsetTable":{}}'
    )
    assert (Store(root).version.label, Store(root).version.assumed) == ("5.x", False)


def test_offset_by_time_on_a_49_store_applies_49s_rule_by_default(store_copy):
    """4.9.7 picks the consumequeue file by its modification time and answers the nearest message: the store
    says it is 4.9's, so that rule applies without --rocketmq-version (it used to default to 5.x's)."""
    root = store_copy("a-basic")
    queue = root / "consumequeue" / "TopicTest" / "0"
    for f in queue.iterdir():  # files modified long after every message: the first file is picked
        os.utime(f, (2_000_000_000, 2_000_000_000))
    rows = jsonl(run("offset-by-time", "TopicTest", "0", "1795314214300", "--store", root).stdout)
    told = jsonl(
        run("offset-by-time", "TopicTest", "0", "1795314214300", "--store", root, "--rocketmq-version", "4").stdout
    )
    five = jsonl(
        run("offset-by-time", "TopicTest", "0", "1795314214300", "--store", root, "--rocketmq-version", "5").stdout
    )
    assert rows == told and rows[0]["rule"].startswith("4.9 ")
    assert five[0]["rule"].startswith("5.x ") and five[0]["queueOffset"] != rows[0]["queueOffset"]


def test_clean_on_a_49_store_applies_49s_rules_by_default():
    res = run("clean", "--store", FIXTURES / "a-basic" / "store", "--broker-config", broker_conf("a-basic"))
    assert res.exit_code == 0 and res.stderr.startswith("clean (plan only), RocketMQ 4.x rules:")


def last_record(root) -> tuple:
    """(commitlog file, position) of the store's last message."""
    store = Store(root)
    f, m = list(store.scan().records())[-1]
    return f.path, m.position


def test_55_abnormal_recovery_stops_at_a_record_out_of_place(store_copy, tmp_path):
    """5.5.0 (apache/rocketmq#10017): abnormal recovery also stops at a record whose PHYSICALOFFSET is not its
    position, when checkCommitLogOffsetOnRecover is on (#10038 names the switch; off by default). Before 5.5,
    or with the switch off, the same record is only a finding."""
    root = store_copy("c-v5-features")
    path, pos = last_record(root)
    patch(path, pos + PHYSICAL_OFFSET_AT, S.INT64.pack(7))
    (root / "abort").write_text("4242")
    plain = broker_conf("c-v5-features")
    checked = tmp_path / "broker-checked.conf"
    checked.write_text(plain.read_text() + "\ncheckCommitLogOffsetOnRecover=true\n")
    for version, conf, stops in (("5", checked, False), ("5.5", plain, False), ("5.5", checked, True)):
        res = run(
            "verify", "--store", root, "--broker-config", conf, "--rocketmq-version", version, "--format", "jsonl"
        )
        found = [f for f in jsonl(res.stdout) if f["kind"] == "physical-offset"]
        assert len(found) == 1 and res.exit_code == 1
        assert ("stops at this one: it truncates the commitlog at" in found[0]["detail"]) == stops, found[0]["detail"]
