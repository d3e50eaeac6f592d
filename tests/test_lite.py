"""Lite topics (RIP-83, 5.4+): the LMQ queues `%LMQ%$parent$lite` a lite topic's messages are dispatched to.
They expire after an idle TTL with their offsets, so a vanished one is normal in verify and consumers, and
info names them. The store is a copy of b-mixed (LMQ on) with a message appended to a lite queue."""

from __future__ import annotations

import json
import shutil

from rmqctl.rules import lite_topic, queue_kind

from conftest import broker_conf, jsonl, run

CONF = broker_conf("b-mixed")
LITE = "%LMQ%$LiteParent$u1"


def with_lite_message(store_copy):
    root = store_copy("b-mixed")
    res = run(
        "append",
        "--store",
        root,
        "--broker-config",
        CONF,
        "--topic",
        "LiteParent",
        "--body",
        "hi",
        "--property",
        f"INNER_MULTI_DISPATCH={LITE},%LMQ%plain1",
    )
    assert res.exit_code == 0, res.stderr
    return root, jsonl(res.stdout)[0]["commitLogOffset"]


def test_lite_names():
    assert lite_topic(LITE) == ("LiteParent", "u1")
    assert [lite_topic(n) for n in ("%LMQ%plain", "%LMQ%$onlyparent", "%LMQ%$$x", "Topic$a$b")] == [None] * 4
    assert [queue_kind(n, {"B"}) for n in (LITE, "%LMQ%plain", "B", "T")] == ["lite", "LMQ", "BatchCQ", "topic"]


def test_info_classifies_lite_queues(store_copy):
    root, _ = with_lite_message(store_copy)
    queues = json.loads(run("info", "--store", root, "--broker-config", CONF, "--format", "json").stdout)
    kinds = {q["topic"]: q["kind"] for q in queues["consumequeue"]["queues"]}
    assert (kinds[LITE], kinds["%LMQ%plain1"], kinds["LiteParent"]) == ("lite", "LMQ", "topic")
    table = run("info", "--store", root, "--broker-config", CONF, "--format", "table").stdout
    assert "consumequeues (16 topics, 426 entries, 3 LMQ, 1 lite)" in table


def test_a_vanished_lite_queue_is_normal_a_vanished_lmq_queue_is_not(store_copy):
    root, offset = with_lite_message(store_copy)
    for name in (LITE, "%LMQ%plain1"):
        shutil.rmtree(root / "consumequeue" / name)
    res = run("verify", "--store", root, "--broker-config", CONF, "--format", "jsonl")
    assert res.exit_code == 1
    assert [(f["kind"], f["file"]) for f in jsonl(res.stdout)] == [("cq-missing-entries", "consumequeue/%LMQ%plain1/0")]


def test_consumers_take_an_expired_lite_queue_as_normal(store_copy):
    root, _ = with_lite_message(store_copy)
    shutil.rmtree(root / "consumequeue" / LITE)
    (root / "config" / "lmqConsumerOffset.json").write_text(json.dumps({"offsetTable": {f"{LITE}@g1": {"0": 1}}}))
    res = run("consumers", "--store", root, "--broker-config", CONF, "--format", "jsonl")
    rows = jsonl(res.stdout)
    assert res.exit_code == 0, res.stderr
    assert [(r["topic"], r["status"], r["note"]) for r in rows] == [
        (
            LITE,
            "lite-expired",
            "a lite topic's queue (RIP-83): it expires after an idle TTL, so a vanished one is normal",
        )
    ]
    (root / "config" / "lmqConsumerOffset.json").write_text(json.dumps({"offsetTable": {"%LMQ%gone@g1": {"0": 1}}}))
    gone = run("consumers", "--store", root, "--broker-config", CONF, "--format", "jsonl")
    row = jsonl(gone.stdout)[0]  # an LMQ queue never written: the broker answers max 0 and resets the pull there
    assert gone.exit_code == 1 and (row["status"], row["maxOffset"], row["lag"]) == ("ahead-of-max", 0, 0)
