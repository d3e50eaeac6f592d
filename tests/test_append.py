"""append: byte-identical copies of real RocketMQ stores, the broker's append rules one by one, refusals, the
lock, and durability under SIGKILL."""

from __future__ import annotations

import base64
import dataclasses
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import (
    CLEAN_FIXTURES,
    FIXTURES,
    broker_conf,
    copy_store,
    held_lock,
    jsonl,
    one_line_error,
    patch,
    run,
    tmpfs_at,
    truth,
)
from rmqctl import schema as S
from rmqctl.config import load_config
from rmqctl.javacompat import crc31, crc_digits, java_string_hash, parse_properties
from rmqctl.maintenance.append import Appender, NewMessage, delete_property, java_hashmap_order, timer_as_sent
from rmqctl.record import Blank, RecordError, property_crc_state, read_record
from rmqctl.store import Store

REPO = Path(__file__).resolve().parents[1]


def write_conf(path: Path, base: str | None = None, **settings) -> Path:
    """A broker.conf: a fixture's, with some settings changed or added."""
    lines = (FIXTURES / base / "broker.conf").read_text().splitlines() if base else ["brokerIP1=192.168.0.10"]
    lines = [l for l in lines if l.split("=", 1)[0] not in settings]
    lines += [f"{k}={v}" for k, v in settings.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def append_ok(store: Path, conf: Path, *args, input=None) -> list[dict]:
    """Append into `store`, making it a new store when it is not one yet (--create)."""
    res = run("append", "--store", store, "--broker-config", conf, "--create", *args, input=input)
    assert res.exit_code == 0, res.stderr
    return jsonl(res.stdout)


def dump(store: Path, conf: Path, *args) -> list[dict]:
    res = run(
        "dump",
        "commitlog",
        "--store",
        store,
        "--broker-config",
        conf,
        "--format",
        "jsonl",
        "--body",
        "base64",
        "--raw-properties",
        *args,
    )
    assert res.exit_code == 0, res.stderr
    return jsonl(res.stdout)


def cq(store: Path, conf: Path, topic: str, qid: int) -> list[dict]:
    res = run("dump", "consumequeue", topic, qid, "--store", store, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    return jsonl(res.stdout)


def nonzero_files(root: Path, sub: str) -> dict[str, bytes]:
    return {
        p.relative_to(root / sub).as_posix(): p.read_bytes()
        for p in sorted((root / sub).rglob("*"))
        if p.is_file() and p.read_bytes().strip(b"\0")
    }


def index_contents(root: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted((root / "index").iterdir())]


# -- the round trip: dump | append reproduces the broker's own files -------------------------------------------


@pytest.mark.parametrize("name", CLEAN_FIXTURES)
def test_round_trip_is_byte_identical(tmp_path, name):
    src = FIXTURES / name / "store"
    conf = broker_conf(name)
    lines = run(
        "dump",
        "commitlog",
        "--store",
        src,
        "--broker-config",
        conf,
        "--format",
        "jsonl",
        "--body",
        "base64",
        "--raw-properties",
    ).stdout
    new = tmp_path / "store"
    acks = append_ok(new, conf, "--jsonl", "-", "--keep-timestamps", input=lines)
    want = truth(name, "truth-messages.jsonl")
    assert [(a["commitLogOffset"], a["queueOffset"], a["msgId"]) for a in acks] == [
        (w["commitLogOffset"], w["queueOffset"], w["msgId"]) for w in want
    ]
    for sub in ("commitlog", "consumequeue"):
        assert nonzero_files(new, sub) == nonzero_files(src, sub), sub
    assert index_contents(new) == index_contents(src)


@pytest.mark.parametrize("name", CLEAN_FIXTURES)
def test_parquet_round_trip_is_byte_identical(tmp_path, name):
    """Store.scan().table() written as Parquet, then `append --parquet --keep-timestamps`: the broker's own files."""
    import pyarrow.parquet as pq

    src = FIXTURES / name / "store"
    conf = broker_conf(name)
    store = Store(src, load_config(conf))
    try:
        pq.write_table(store.scan().table(), tmp_path / "messages.parquet")
    finally:
        store.close()
    new = tmp_path / "store"
    acks = append_ok(new, conf, "--parquet", tmp_path / "messages.parquet", "--keep-timestamps")
    want = truth(name, "truth-messages.jsonl")
    assert [(a["commitLogOffset"], a["queueOffset"], a["msgId"]) for a in acks] == [
        (w["commitLogOffset"], w["queueOffset"], w["msgId"]) for w in want
    ]
    for sub in ("commitlog", "consumequeue"):
        assert nonzero_files(new, sub) == nonzero_files(src, sub), sub
    assert index_contents(new) == index_contents(src)


def test_a_file_that_is_not_parquet_is_one_line(tmp_path):
    (tmp_path / "x.parquet").write_bytes(b"not parquet at all")
    res = run("append", "--store", tmp_path / "store", "--create", "--parquet", tmp_path / "x.parquet")
    one_line_error(res, "x.parquet", "cannot read it as Parquet")
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize(
    "column, values, says",
    [
        ("body", lambda t: [b.decode("latin-1") for b in t["body"].to_pylist()], "column body holds str '"),
        (
            "queueId",
            lambda t: [str(q) for q in t["queueId"].to_pylist()],
            "column queueId holds str '2', not an integer",
        ),
        ("storeHost", lambda t: [7] * t.num_rows, "column storeHost holds int '7', not text"),
    ],
)
def test_a_parquet_column_of_another_type_is_one_line(tmp_path, column, values, says):
    """A column written as another type than the scan's (a text body, a queueId as text): refused at its first
    row in one line, never an internal error; the rows before it are appended and acknowledged."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    store = Store(FIXTURES / "a-basic" / "store", load_config(broker_conf("a-basic")))
    try:
        table = store.scan().table().slice(0, 3)
    finally:
        store.close()
    good = pq.ParquetWriter(tmp_path / "a.parquet", table.schema)
    good.write_table(table)
    good.close()
    bad = table.set_column(table.schema.get_field_index(column), column, pa.array(values(table)))
    pq.write_table(bad, tmp_path / "b.parquet")
    res = run("append", "--store", tmp_path / "store", "--create", "--parquet", tmp_path)
    one_line_error(res, "b.parquet", f"row 1: {says}")
    assert "nothing after it was appended" in res.stderr and len(jsonl(res.stdout)) == 3


def test_round_trip_rebuilds_properties_in_store_style(tmp_path):
    """Without --raw-properties the stored bytes follow the `properties` order in the store's style: 4.x
    separators between pairs, reproducing a 4.9.7 store whose records hold no duplicate keys."""
    src = FIXTURES / "a-basic" / "store"
    conf = broker_conf("a-basic")
    lines = run(
        "dump",
        "commitlog",
        "--store",
        src,
        "--broker-config",
        conf,
        "--format",
        "jsonl",
        "--body",
        "base64",
        "--limit",
        "300",
    ).stdout
    new = tmp_path / "store"
    append_ok(new, conf, "--jsonl", "-", "--keep-timestamps", "--rocketmq-version", "4", input=lines)
    got = {m["commitLogOffset"]: m["propertiesString"] for m in dump(new, conf)}
    want = {w["commitLogOffset"]: w["propertiesString"] for w in truth("a-basic", "truth-messages.jsonl")[:300]}
    assert got == want


# -- single messages -----------------------------------------------------------------------------------------


def test_single_message_then_dump(tmp_path):
    conf = write_conf(tmp_path / "broker.conf", "a-basic")
    store = tmp_path / "store"
    [ack] = append_ok(
        store,
        conf,
        "--topic",
        "TopicTest",
        "--queue-id",
        "2",
        "--tags",
        "TagA",
        "--keys",
        "K1 K2",
        "--property",
        "color=red",
        "--body",
        "héllo",
        "--born-host",
        "10.0.0.7:5555",
        "--born-timestamp",
        "1700000000000",
        "--store-timestamp",
        "1700000000123",
        "--flag",
        "7",
    )
    assert ack == {
        "commitLogOffset": 0,
        "queueOffset": 0,
        "msgId": "C0A8000A00002A9F0000000000000000",
        "file": "00000000000000000000",
        "position": 0,
    }
    [m] = dump(store, conf)
    assert m["topic"] == "TopicTest" and m["queueId"] == 2 and m["flag"] == 7
    assert m["bornHost"] == "10.0.0.7:5555" and m["storeHost"] == "192.168.0.10:10911"
    assert (m["bornTimestamp"], m["storeTimestamp"]) == (1700000000000, 1700000000123)
    assert base64.b64decode(m["body"]) == "héllo".encode()
    assert m["bodyCRC"] == crc31("héllo".encode())
    assert m["magicCode"] == S.MAGIC_V1 and m["physicalOffset"] == 0
    assert m["properties"] == {"TAGS": "TagA", "KEYS": "K1 K2", "color": "red"}
    # a broker builds the string from its HashMap; 4.x puts separators only between pairs
    assert m["propertiesString"] == "color\x01red\x02KEYS\x01K1 K2\x02TAGS\x01TagA"
    [unit] = cq(store, conf, "TopicTest", 2)
    assert (unit["commitLogOffset"], unit["size"], unit["tagsCode"]) == (0, m["storeSize"], java_string_hash("TagA"))
    hits = jsonl(
        run("query", "key", "TopicTest", "K2", "--store", store, "--broker-config", conf, "--format", "jsonl").stdout
    )
    assert [h["commitLogOffset"] for h in hits] == [0]
    cp = Store(store, load_config(conf)).checkpoint()
    assert (
        cp["fileSize"] == S.CHECKPOINT_FILE_SIZE
        and cp["physicMsgTimestamp"] == cp["logicsMsgTimestamp"] == 1700000000123
    )


def test_transient_properties_are_never_stored(tmp_path):
    conf = write_conf(tmp_path / "broker.conf", "a-basic")
    append_ok(tmp_path / "s", conf, "--topic", "T", "--property", "__RMQ.TRANSIENT.x=1", "--property", "k=v")
    assert dump(tmp_path / "s", conf)[0]["properties"] == {"k": "v"}


def test_options_reproduce_a_broker_written_lmq_record(tmp_path):
    """b-mixed's first LMQ message: the 4.9.7 store added INNER_MULTI_QUEUE_OFFSET, dropped WAIT and rebuilt
    the string from its HashMap. The same message through `append` gives the same bytes."""
    [want] = [w for w in truth("b-mixed", "truth-messages.jsonl") if w.get("label", "").startswith("lmq")][:1]
    conf = broker_conf("b-mixed")
    props = [
        a for k, v in want["properties"].items() if k != "INNER_MULTI_QUEUE_OFFSET" for a in ("--property", f"{k}={v}")
    ] + ["--property", "WAIT=true"]
    store = tmp_path / "store"
    append_ok(
        store,
        conf,
        "--topic",
        want["topic"],
        "--queue-id",
        want["queueId"],
        "--born-host",
        want["bornHost"],
        "--store-host",
        want["storeHost"],
        "--born-timestamp",
        want["bornTimestamp"],
        "--store-timestamp",
        want["storeTimestamp"],
        "--body-file",
        "-",
        *props,
        input=base64.b64decode(want["body"]),
    )
    [m] = dump(store, conf)
    assert m["propertiesString"] == want["propertiesString"]
    raw = (store / "commitlog" / "00000000000000000000").read_bytes()[: m["storeSize"]]
    orig = (FIXTURES / "b-mixed" / "store" / "commitlog" / want["file"]).read_bytes()
    orig = orig[want["filePosition"] : want["filePosition"] + want["storeSize"]]
    assert raw[:20] == orig[:20] and raw[36:] == orig[36:]  # all but QUEUEOFFSET/PHYSICALOFFSET (new store)
    assert {(u["topic"], u["queueId"], u["queueOffset"]) for u in want["cqEntries"]} == {
        (t, 0, 0) for t in ("%LMQ%alpha", "%LMQ%beta", "LmqParentTopic")
    }
    for t in ("%LMQ%alpha", "%LMQ%beta", "LmqParentTopic"):
        assert [u["commitLogOffset"] for u in cq(store, conf, t, 0)] == [0]


# -- the BLANK and the roll ------------------------------------------------------------------------------------


def test_roll_over_writes_blank_and_creates_next_file_at_full_size(tmp_path):
    conf = write_conf(
        tmp_path / "broker.conf",
        mappedFileSizeCommitLog=4096,
        mappedFileSizeConsumeQueue=200,
        maxHashSlotNum=8,
        maxIndexNum=16,
    )
    store = tmp_path / "store"
    lines = "".join(
        json.dumps(
            {
                "topic": "RollTopic",
                "queueId": 0,
                "body": "x" * 900,
                "properties": {"KEYS": f"k{i}"},
                "storeTimestamp": 1700000000000 + i,
            }
        )
        + "\n"
        for i in range(9)
    )
    acks = append_ok(store, conf, "--jsonl", "-", "--keep-timestamps", input=lines)
    size = 91 + 900 + len("RollTopic") + len("KEYS\x01k0")
    assert [a["queueOffset"] for a in acks] == list(range(9))
    per_file = (4096 - 8) // size  # a record needs 8 bytes to spare
    first = acks[per_file]
    assert (first["file"], first["position"], first["commitLogOffset"]) == ("00000000000000004096", 0, 4096)
    f0 = (store / "commitlog" / "00000000000000000000").read_bytes()
    assert len(f0) == 4096
    end = per_file * size
    assert S.BLANK.unpack_from(f0, end) == (4096 - end, S.MAGIC_BLANK)
    assert f0[end + 8 :] == bytes(4096 - end - 8)  # only the 8 bytes are written
    for p in (store / "commitlog").iterdir():
        assert p.stat().st_size == 4096
    m = read_record((store / "commitlog" / "00000000000000004096").read_bytes(), 0, 4096)
    assert m.physicalOffset == 4096 and m.queueOffset == per_file
    assert [u["commitLogOffset"] for u in cq(store, conf, "RollTopic", 0)] == [a["commitLogOffset"] for a in acks]
    assert len(list((store / "consumequeue" / "RollTopic" / "0").iterdir())) == 1  # 9 units of 10 per CQ file
    assert len(list((store / "index").iterdir())) == 1  # 9 keys, no UNIQ_KEY: 9 of the file's 15 entries
    # appending again continues after the last record of the second file
    [ack] = append_ok(store, conf, "--topic", "RollTopic", "--body", "y")
    assert ack["queueOffset"] == 9 and ack["commitLogOffset"] == acks[-1]["commitLogOffset"] + size


# -- 5.x records: V2 magic and the property CRC -------------------------------------------------------------------


def test_v2_topic_on_5x_store_and_refused_on_4x(tmp_path):
    retry = "%RETRY%" + "g" * 130
    conf5 = broker_conf("c-v5-features")
    [ack] = append_ok(tmp_path / "s5", conf5, "--topic", retry, "--body", "b")
    [m] = dump(tmp_path / "s5", conf5)
    assert m["magicCode"] == S.MAGIC_V2 and m["topic"] == retry
    raw = (tmp_path / "s5" / "commitlog" / "00000000000000000000").read_bytes()
    head = S.RECORD_HEADS[(False, False)][0].size
    assert S.TOPIC_LEN_V2.unpack_from(raw, head + 1)[0] == len(retry)
    # a 127-character topic keeps V1 (the boundary); so does every topic in a 4.x store
    append_ok(tmp_path / "s5", conf5, "--topic", "T" * 127, "--body", "b")
    assert dump(tmp_path / "s5", conf5)[1]["magicCode"] == S.MAGIC_V1
    conf4 = broker_conf("a-basic")
    one_line_error(
        run(
            "append", "--store", tmp_path / "s4", "--broker-config", conf4, "--create", "--topic", retry, "--body", "b"
        ),
        "4.x store",
        "127",
    )


def test_jsonl_copies_take_v2_topics_that_a_producer_could_not_send(tmp_path):
    conf5 = broker_conf("c-v5-features")
    line = json.dumps({"topic": "V2-" + "z" * 200, "body": "b"}) + "\n"
    append_ok(tmp_path / "s", conf5, "--jsonl", "-", input=line)
    assert dump(tmp_path / "s", conf5)[0]["magicCode"] == S.MAGIC_V2
    one_line_error(
        run("append", "--store", tmp_path / "s", "--broker-config", conf5, "--create", "--topic", "V2-" + "z" * 200),
        "longer than the 127",
    )


def test_property_crc_replaces_a_supplied_one(tmp_path):
    conf = broker_conf("c-v5-features")
    store = tmp_path / "store"
    append_ok(
        store, conf, "--topic", "TopicV5", "--property", "__CRC32#=1234567890", "--property", "a=b", "--body", "x"
    )
    append_ok(store, conf, "--topic", "TopicV5", "--body", "empty properties")
    buf = (store / "commitlog" / "00000000000000000000").read_bytes()
    first = read_record(buf, 0, len(buf))
    second = read_record(buf, first.storeSize, len(buf))
    for rec in (first, second):
        stored, computed = property_crc_state(buf, rec.position, rec)
        assert stored == computed
        trailer = buf[rec.position + rec.storeSize - 20 : rec.position + rec.storeSize]
        crc = crc31(buf[rec.position : rec.position + rec.storeSize - 20])
        assert trailer == b"__CRC32#\x01" + crc_digits(crc).encode() + b"\x02"
    assert (
        first.properties_string == "a\x01b\x02__CRC32#\x01" + crc_digits(property_crc_state(buf, 0, first)[1]) + "\x02"
    )
    assert len(second.propertiesBytes) == 20  # empty property map: only the CRC pair
    # verbatim strings: a stale CRC pair anywhere is deleted (MessageUtils.deleteProperty) and replaced
    line = json.dumps({"topic": "TopicV5", "body": "y", "propertiesString": "__CRC32#\x010000000001\x02k\x01v"}) + "\n"
    append_ok(store, conf, "--jsonl", "-", input=line)
    third = read_record(
        buf := (store / "commitlog" / "00000000000000000000").read_bytes(), first.storeSize + second.storeSize, len(buf)
    )
    assert third.properties_string.startswith("k\x01v\x02__CRC32#\x01")
    assert property_crc_state(buf, third.position, third)[0] == property_crc_state(buf, third.position, third)[1]


# -- transactions, delay --------------------------------------------------------------------------------------------


def test_prepared_and_rollback_take_queue_offset_zero_and_no_consumequeue_entry(tmp_path):
    conf = write_conf(tmp_path / "broker.conf", "a-basic")
    store = tmp_path / "store"
    seq = [("0", "N1"), ("4", "P1"), ("0", "N2"), ("12", "R1"), ("8", "C1"), ("4", "P2")]
    acks = [
        append_ok(store, conf, "--topic", "Tx", "--sys-flag", flag, "--keys", key, "--body", key)[0]
        for flag, key in seq
    ]
    assert [a["queueOffset"] for a in acks] == [0, 0, 1, 0, 2, 0]
    assert [u["commitLogOffset"] for u in cq(store, conf, "Tx", 0)] == [acks[i]["commitLogOffset"] for i in (0, 2, 4)]

    def found(key):
        return [
            h["commitLogOffset"]
            for h in jsonl(
                run("query", "key", "Tx", key, "--store", store, "--broker-config", conf, "--format", "jsonl").stdout
            )
        ]

    assert found("P1") == [acks[1]["commitLogOffset"]]  # PREPARED is indexed
    assert found("R1") == []  # ROLLBACK is not


@pytest.mark.parametrize("as_property", [False, True])
def test_delay_level_reproduces_the_49_store_rewrite(tmp_path, as_property):
    """b-mixed's delay-level messages were rewritten by RocketMQ 4.9.7 itself; the same producer message with
    --delay-level, or with the DELAY property a producer's setDelayTimeLevel sets (stored as given before),
    gives the same record (topic, queue, properties) and the same delivery-time tagsCode."""
    conf = broker_conf("b-mixed")
    msgs = [w for w in truth("b-mixed", "truth-messages.jsonl") if w.get("label", "").startswith("delay-level")]
    store = tmp_path / "store"
    for w in msgs:
        level = int(w["label"].split("-")[-1])
        props = [
            a
            for k, v in w["properties"].items()
            if k not in ("DELAY", "REAL_TOPIC", "REAL_QID")
            for a in ("--property", f"{k}={v}")
        ]
        [ack] = append_ok(
            store,
            conf,
            "--topic",
            w["properties"]["REAL_TOPIC"],
            "--queue-id",
            w["properties"]["REAL_QID"],
            "--born-host",
            w["bornHost"],
            "--born-timestamp",
            w["bornTimestamp"],
            "--store-timestamp",
            w["storeTimestamp"],
            "--body-file",
            "-",
            *props,
            # (last, as setDelayTimeLevel puts it after the producer's other properties)
            *(("--property", f"DELAY={level}") if as_property else ("--delay-level", level)),
            input=base64.b64decode(w["body"]),
        )
        [m] = [d for d in dump(store, conf) if d["commitLogOffset"] == ack["commitLogOffset"]]
        assert (m["topic"], m["queueId"], m["propertiesString"]) == (w["topic"], w["queueId"], w["propertiesString"])
        assert ack["queueOffset"] == w["queueOffset"]
        [unit] = [
            u for u in cq(store, conf, m["topic"], m["queueId"]) if u["commitLogOffset"] == ack["commitLogOffset"]
        ]
        assert unit["tagsCode"] == w["cqEntries"][0]["tagsCode"]


# -- refusals -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,needles",
    [
        (["--topic", "bad topic"], ["illegal characters"]),
        (["--topic", "bad topic", "--delay-level", "1"], ["illegal characters"]),  # checked before the rewrite
        (["--topic", "T" * 128], ["longer than the 127"]),
        (["--topic", "SCHEDULE_TOPIC_XXXX"], ["topic SCHEDULE_TOPIC_XXXX is forbidden"]),  # (isNotAllowedSendTopic)
        (["--topic", "RMQ_SYS_TRANS_HALF_TOPIC", "--delay-level", "1"], ["RMQ_SYS_TRANS_HALF_TOPIC is forbidden"]),
        (["--topic", "%DLQ%" + "g" * 251], ["longer than the 255"]),
        (["--topic", "T", "--body", "x" * 2000], ["over maxMessageSize=1000"]),
        (["--topic", "T", "--property", "k=" + "v" * 33000], ["properties are", "32767"]),
        (["--topic", "T", "--born-host", "nowhere"], ["bornHost", "ip:port"]),
        (["--topic", "T", "--sys-flag", "0x80"], ["inner-batch"]),
        (["--topic", "T", "--property", "novalue"], ["NAME=VALUE"]),
        (["--topic", "T", "--queue-id", str(1 << 31)], ["queueId", "int32"]),
        ([], ["--topic", "--jsonl"]),
    ],
)
def test_invalid_input_is_one_line_exit_2(tmp_path, args, needles):
    conf = write_conf(tmp_path / "broker.conf", "a-basic", maxMessageSize=1000)
    res = run("append", "--store", tmp_path / "store", "--broker-config", conf, "--create", *args)
    one_line_error(res, *needles)
    assert not (tmp_path / "store" / "commitlog").exists()


def test_a_record_larger_than_a_commitlog_file_is_refused(tmp_path):
    conf = write_conf(tmp_path / "broker.conf", mappedFileSizeCommitLog=4096)
    one_line_error(
        run(
            "append",
            "--store",
            tmp_path / "s",
            "--broker-config",
            conf,
            "--create",
            "--topic",
            "T",
            "--body",
            "x" * 4000,
        ),
        "cannot fit a 4096-byte commitlog file",
    )


def test_writing_needs_an_explicit_store(tmp_path, monkeypatch):
    monkeypatch.delenv("ROCKETMQ_STORE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    one_line_error(run("append", "--topic", "T"), "--store")
    assert not (tmp_path / "store").exists()


def test_bad_jsonl_line_names_the_line_and_keeps_what_came_before(tmp_path):
    conf = write_conf(tmp_path / "broker.conf", "a-basic")
    good = [json.dumps({"topic": "J", "body": f"m{i}"}) for i in range(3)]
    text = "\n".join(good[:2] + ["{not json", good[2]]) + "\n"
    res = run("append", "--store", tmp_path / "s", "--broker-config", conf, "--create", "--jsonl", "-", input=text)
    one_line_error(res, "line 3", "not valid JSON")
    assert len(jsonl(res.stdout)) == 2
    assert [m["body"] for m in dump(tmp_path / "s", conf)] == ["bTA=", "bTE="]  # m0, m1; nothing after line 3
    text = good[0] + "\n" + json.dumps({"topic": "J", "body": "x", "bodyEncoding": "none"}) + "\n"
    one_line_error(
        run("append", "--store", tmp_path / "s", "--broker-config", conf, "--create", "--jsonl", "-", input=text),
        "line 2",
        "--body none",
    )
    assert len(dump(tmp_path / "s", conf)) == 3


def test_torn_tail_is_refused_pointing_to_repair(store_copy):
    store = store_copy("d-crashed")
    before = {p: p.read_bytes() for p in (store / "commitlog").iterdir()}
    res = run(
        "append", "--store", store, "--broker-config", broker_conf("d-crashed"), "--topic", "TopicTest", "--body", "x"
    )
    one_line_error(res, "00000000000000720896", "at commitlog offset 782999", "rmqctl repair")
    assert {p: p.read_bytes() for p in (store / "commitlog").iterdir()} == before


def test_garbage_after_the_end_is_refused(store_copy):
    store = store_copy("c-v5-features")
    last = sorted((store / "commitlog").iterdir())[-1]
    with open(last, "r+b") as f:
        f.seek(100_000)
        f.write(b"\x42" * 16)
    res = run("append", "--store", store, "--broker-config", broker_conf("c-v5-features"), "--topic", "TopicV5")
    one_line_error(res, last.name, "at commitlog offset 452578", "torn or garbage tail")


def test_after_a_crash_units_the_recovery_would_dispatch_again_are_not_appended_over(store_copy, java_oracle, tmp_path):
    """A crash lost a queue's last consumequeue file: the broker's abnormal recovery (`abort`) dispatches those
    32 units again. append dispatched only past the queues' end and moved the checkpoint on: 31 acknowledged
    messages no longer served, and the new one served at 129 where append said 160. It now refuses, naming the
    queue and `rebuild consumequeue`; after that rebuild the append lands where it says, as RocketMQ serves it."""
    import oracle

    store, conf = store_copy("a-basic"), broker_conf("a-basic")
    (store / "consumequeue" / "OrderTopic" / "1" / "00000000000000002560").unlink()
    (store / "abort").touch()
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    append = (
        "append",
        "--store",
        store,
        "--broker-config",
        conf,
        "--topic",
        "OrderTopic",
        "--queue-id",
        "1",
        "--body",
        "x",
    )
    one_line_error(
        run(*append), "OrderTopic/1: 32 dispatched message(s)", "queue offsets 128..159", "rebuild consumequeue"
    )
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
    assert run("rebuild", "consumequeue", "--store", store, "--broker-config", conf, "--no-backup").exit_code == 0
    res = run(*append, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    [acked] = jsonl(res.stdout)
    assert acked["queueOffset"] == 160
    queues, units, _ = oracle.served(java_oracle, 4, store, conf, tmp_path / "served")
    assert queues[("OrderTopic", 1)] == (0, 161)
    assert ("OrderTopic", 1, 160, acked["commitLogOffset"]) in {u[:4] for u in units}


def test_an_index_file_cut_short_is_refused_not_written_into(store_copy):
    """The last index file cut short (a full disk at its creation): one line naming it, exit 2, nothing written."""
    store = store_copy("a-basic")
    last = sorted((store / "index").iterdir())[-1]
    last.write_bytes(last.read_bytes()[:1000])
    before = {p: p.read_bytes() for d in ("commitlog", "index") for p in (store / d).iterdir()}
    res = run(
        "append", "--store", store, "--broker-config", broker_conf("a-basic"), "--topic", "TopicTest", "--body", "x"
    )
    one_line_error(res, str(last), "file is 1000 bytes, not", "rmqctl verify")
    assert {p: p.read_bytes() for d in ("commitlog", "index") for p in (store / d).iterdir()} == before


def test_lock_held_by_another_process(tmp_path):
    conf = write_conf(tmp_path / "broker.conf", "a-basic")
    store = tmp_path / "store"
    store.mkdir()
    with held_lock(store):
        one_line_error(run("append", "--store", store, "--broker-config", conf, "--topic", "T"), "locked")
        assert not (store / "commitlog").exists()
    append_ok(store, conf, "--topic", "T")


def test_dry_run_writes_nothing(store_copy):
    store = store_copy("a-basic")
    before = {p: p.stat().st_mtime_ns for p in store.rglob("*")}
    res = run(
        "append", "--store", store, "--broker-config", broker_conf("a-basic"), "--topic", "TopicTest", "--dry-run"
    )
    assert res.exit_code == 0, res.stderr
    assert jsonl(res.stdout)[0]["commitLogOffset"] == 2580536
    assert {p: p.stat().st_mtime_ns for p in store.rglob("*")} == before


# -- an existing store: offsets continue, the commitlog is the truth ---------------------------------------------


@pytest.mark.parametrize("name", CLEAN_FIXTURES)
def test_append_onto_a_fixture_continues_every_queue(store_copy, name):
    store = store_copy(name)
    conf = broker_conf(name)
    summary = json.loads((FIXTURES / name / "truth-after-shutdown.json").read_text())["reloadCheck"]
    queues = [k.rsplit("/", 1) for k, v in summary["cqMaxOffsets"].items() if v and not k.startswith("SCHEDULE")]
    lines = "".join(
        json.dumps({"topic": t, "queueId": int(q), "body": "after", "properties": {"KEYS": "APPENDED"}}) + "\n"
        for t, q in queues
    )
    acks = append_ok(store, conf, "--jsonl", "-", input=lines)
    assert [a["queueOffset"] for a in acks] == [summary["cqMaxOffsets"][f"{t}/{q}"] for t, q in queues]
    assert acks[0]["commitLogOffset"] == summary["maxPhyOffset"]
    for (t, q), a in zip(queues, acks):
        assert cq(store, conf, t, int(q))[-1]["commitLogOffset"] == a["commitLogOffset"]
    res = run("verify", "--store", store, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stdout[-2000:]


def test_records_past_the_consumequeue_are_dispatched_first(store_copy):
    """A kill between the commitlog fsync and the dispatch leaves records the consumequeues lack: the next
    append dispatches them first (the broker's reput) and continues their queue offsets."""
    store = store_copy("a-basic")
    conf = broker_conf("a-basic")
    last = truth("a-basic", "truth-messages.jsonl")[-1]
    qdir = store / "consumequeue" / last["topic"] / str(last["queueId"])
    newest = sorted(qdir.iterdir())[-1]
    data = bytearray(newest.read_bytes())
    pos = (last["queueOffset"] * 20) % len(data)
    data[pos : pos + 20] = bytes(20)  # the last record's unit was never written
    newest.write_bytes(bytes(data))
    [ack] = append_ok(store, conf, "--topic", last["topic"], "--queue-id", last["queueId"], "--body", "x")
    assert ack["queueOffset"] == last["queueOffset"] + 1
    units = cq(store, conf, last["topic"], last["queueId"])
    assert [u["commitLogOffset"] for u in units[-2:]] == [last["commitLogOffset"], ack["commitLogOffset"]]
    assert nonzero_files(store, "index") != {}
    hits = jsonl(
        run(
            "query",
            "key",
            last["topic"],
            last["uniqKey"],
            "--store",
            store,
            "--broker-config",
            conf,
            "--format",
            "jsonl",
        ).stdout
    )
    assert [h["commitLogOffset"] for h in hits] == [last["commitLogOffset"]]


def zero_units(store: Path, name: str, units: list[dict]):
    """Zero these consumequeue units (truth-consumequeue.jsonl rows) of a copy of fixture `name`."""
    size = load_config(broker_conf(name)).mappedFileSizeConsumeQueue
    per = size // S.CQ_UNIT_SIZE
    for u in units:
        path = store / "consumequeue" / u["topic"] / str(u["queueId"]) / f"{u['queueOffset'] // per * size:020d}"
        patch(path, u["queueOffset"] % per * S.CQ_UNIT_SIZE, bytes(S.CQ_UNIT_SIZE))


@pytest.mark.parametrize("lost", ["the last unit", "the last 300 units", "consumequeue/"])
def test_the_catch_up_writes_what_rocketmqs_reput_writes(tmp_path, java_oracle, lost):
    """The last record's unit was never written (or no consumequeue is left), and the index holds every record:
    the broker's reput dispatches them again, and IndexService.buildIndex skips only records *below* the
    index's endPhyOffset, so the last record's keys go in a second time. An append of nothing (the catch-up
    alone) leaves consumequeue and index byte for byte as RocketMQ 4.9.7's own start (read4.sh --keep-copy)
    leaves them."""
    conf = broker_conf("a-basic")
    ours = copy_store("a-basic", tmp_path / "ours")
    if lost == "consumequeue/":
        shutil.rmtree(ours / "consumequeue")
    else:  # (300: some queues' last file is left all zero, behind a file that is not full)
        units = sorted(truth("a-basic", "truth-consumequeue.jsonl"), key=lambda u: u["commitLogOffset"])
        zero_units(ours, "a-basic", units[-1:] if lost == "the last unit" else units[-300:])
    theirs = tmp_path / "theirs"
    shutil.copytree(ours, theirs)
    res = run("append", "--store", ours, "--broker-config", conf, "--jsonl", "/dev/null")
    assert res.exit_code == 0, res.stderr
    out = tmp_path / "read4"
    subprocess.run([java_oracle / "read4.sh", "--keep-copy", theirs, conf, out], check=True, capture_output=True)
    broker = out / "store-copy"
    assert json.loads((out / "recovered-summary.json").read_text())["dispatched"]
    for part in ("consumequeue", "index"):
        assert nonzero_files(ours, part) == nonzero_files(broker, part), part
    assert nonzero_files(broker, "index") != nonzero_files(FIXTURES / "a-basic" / "store", "index")
    times = S.CHECKPOINT_HEAD.size
    assert (ours / "checkpoint").read_bytes()[:times] == (broker / "checkpoint").read_bytes()[:times]


def test_the_catch_up_reads_v2_records_as_the_recovery_walk_read_them(tmp_path):
    """A 4.x-style store (no version configured) with records of topics over 127 bytes (V2 magic) the queues lack,
    and a full last index file (the catch-up then indexes record by record): the catch-up reads those records
    as the recovery walk accepted them, and leaves what an append under 5.x rules leaves."""
    conf = broker_conf("a-basic")
    base = copy_store("a-basic", tmp_path / "base")
    long_topic = "L" * 130
    lines = "".join(
        json.dumps({"topic": long_topic, "queueId": 0, "body": f"x{i}", "properties": {"KEYS": f"K{i}"}}) + "\n"
        for i in range(3)
    )
    append_ok(base, conf, "--rocketmq-version", "5", "--jsonl", "-", input=lines)
    for p in (base / "consumequeue" / long_topic / "0").iterdir():
        p.write_bytes(bytes(len(p.read_bytes())))
    newest = sorted((base / "index").iterdir())[-1]
    header = bytearray(newest.read_bytes()[: S.INDEX_HEADER_SIZE])
    header[36:40] = (512).to_bytes(4, "big")  # indexCount = maxIndexNum: full
    patch(newest, 0, bytes(header))
    stores = {}
    for name, version in (("default", ()), ("five", ("--rocketmq-version", "5"))):
        stores[name] = tmp_path / name
        shutil.copytree(base, stores[name])
        res = run("append", "--store", stores[name], "--broker-config", conf, *version, "--jsonl", "/dev/null")
        assert res.exit_code == 0, res.output
    assert nonzero_files(stores["default"], "consumequeue") == nonzero_files(stores["five"], "consumequeue")
    # (a new index file is named by the time it is made)
    assert index_contents(stores["default"]) == index_contents(stores["five"])
    assert len(cq(stores["default"], conf, long_topic, 0)) == 3


def test_the_catch_up_into_an_intact_index_reserves_no_index_file(tmp_path):
    """consumequeue/ lost, the index intact: buildIndex skips every record, so the catch-up needs room for the
    consumequeue files alone; on a filesystem with little more than that it must not refuse for index files
    it never creates."""
    conf = broker_conf("b-mixed")
    mnt = tmp_path / "mnt"
    with tmpfs_at(mnt, "4m"):
        store = copy_store("b-mixed", mnt)
        shutil.rmtree(store / "consumequeue")
        used = int(
            subprocess.run(["df", "-k", "--output=used", mnt], capture_output=True, text=True).stdout.split()[-1]
        )
        subprocess.run(["mount", "-o", f"remount,size={used + 120}k", mnt], check=True)
        res = run("append", "--store", store, "--broker-config", conf, "--jsonl", "/dev/null")
        assert res.exit_code == 0, res.output
        assert nonzero_files(store, "consumequeue") == nonzero_files(FIXTURES / "b-mixed" / "store", "consumequeue")


def test_a_lost_consumequeue_directory_is_rebuilt_as_the_broker_wrote_it(store_copy):
    """With no consumequeue at all the dispatch point is the commitlog's start: every record is dispatched
    again (LMQ, transactions, delay tagsCodes included) and the files come out as RocketMQ wrote them."""
    store = store_copy("b-mixed")
    conf = broker_conf("b-mixed")
    shutil.rmtree(store / "consumequeue")
    [ack] = append_ok(store, conf, "--topic", "TxRawTopic", "--body", "x")
    fixture = nonzero_files(FIXTURES / "b-mixed" / "store", "consumequeue")
    rebuilt = nonzero_files(store, "consumequeue")
    changed = "TxRawTopic/0/00000000000000000000"
    assert {k: v for k, v in rebuilt.items() if k != changed} == {k: v for k, v in fixture.items() if k != changed}
    unit = S.CQ_UNIT.pack(
        ack["commitLogOffset"], dump(store, conf, "--from", ack["commitLogOffset"])[0]["storeSize"], 0
    )
    n = ack["queueOffset"] * S.CQ_UNIT_SIZE
    assert rebuilt[changed][:n] == fixture[changed][:n] and rebuilt[changed][n : n + 20] == unit


def test_consumequeue_past_the_commitlog_end_is_refused(store_copy):
    store = store_copy("a-basic")
    last = truth("a-basic", "truth-messages.jsonl")[-1]
    with open(store / "commitlog" / last["file"], "r+b") as f:  # the consumequeue now points past the end
        f.seek(last["filePosition"])
        f.write(bytes(last["storeSize"]))
    one_line_error(
        run("append", "--store", store, "--broker-config", broker_conf("a-basic"), "--topic", "TopicTest"),
        "past the commitlog's end",
        "rmqctl repair",
    )


# -- the Java behaviours the bytes depend on --------------------------------------------------------------------


def test_hashmap_order_model_matches_every_fixture_record():
    """Every property string in the fixtures came from a HashMap: re-putting its keys in stored order into
    the same map must give the stored order back (the model of buckets, resizes and chains)."""
    n = 0
    for name in CLEAN_FIXTURES:
        for w in truth(name, "truth-messages.jsonl"):
            keys = [seg.split("\x01", 1)[0] for seg in w["propertiesString"].split("\x02") if "\x01" in seg]
            keys = [k for k in keys if k != "__CRC32#"]
            if len(keys) == len(set(keys)):
                assert java_hashmap_order(keys, 16) == keys, w["propertiesString"]
                n += 1
    assert n > 2800
    # 13 keys: the 16-slot table grows to 32 and the order follows the 32 buckets
    keys = [f"key{i}" for i in range(13)]

    def bucket(k):
        h = java_string_hash(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & 31

    assert java_hashmap_order(keys, 16) == sorted(keys, key=lambda k: (bucket(k), keys.index(k)))


def test_delete_property_like_message_utils():
    assert delete_property("a\x011\x02__CRC32#\x01x\x02b\x012", "__CRC32#") == "a\x011\x02b\x012"
    assert delete_property("__CRC32#\x01x", "__CRC32#") == ""
    assert delete_property("a\x01__CRC32#\x02b\x012", "__CRC32#") == "a\x01__CRC32#\x02b\x012"  # a value, kept
    assert delete_property("x__CRC32#\x01v\x02", "__CRC32#") == "x__CRC32#\x01v\x02"


CTRL_C_IN_A_COMMIT = """
import os, signal, sys
from rmqctl.config import load_config
from rmqctl.maintenance.append import Appender, NewMessage
app = Appender(sys.argv[1], load_config(sys.argv[2]), create=True)
app.open()
fsync = app._tail.flush
def flush_and_ctrl_c():  # Ctrl-C reaches the process as the commit makes its records durable
    os.kill(os.getpid(), signal.SIGINT)
    fsync()
app._tail.flush = flush_and_ctrl_c
for i in range(50):
    app.append(NewMessage(topic="Interrupted", body=b"x" * i, properties=[("KEYS", f"k{i}")]))
try:
    app.commit()
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted after the commit")
app.close()
"""


def test_ctrl_c_in_a_commit_lands_after_it(tmp_path):
    """Ctrl-C while a commit encodes, syncs and dispatches is held until the commit is over: the store holds the
    whole batch, dispatched (no half-dispatched block, no mapping a traceback kept open), and then the process
    is interrupted."""
    conf = write_conf(tmp_path / "broker.conf", mappedFileSizeCommitLog=1 << 20, mappedFileSizeConsumeQueue=600)
    store = tmp_path / "store"
    res = subprocess.run([sys.executable, "-c", CTRL_C_IN_A_COMMIT, store, conf], capture_output=True, text=True)
    assert res.stdout.split("\n")[0] == "interrupted after the commit", res.stderr
    assert len(cq(store, conf, "Interrupted", 0)) == 50
    verified = run("verify", "--store", store, "--broker-config", conf)
    assert verified.exit_code == 0, verified.output


def test_library_appender(tmp_path):
    conf = load_config(write_conf(tmp_path / "broker.conf", "c-v5-features"))
    with Appender(tmp_path / "s", conf, clock=lambda: 1700000000000, create=True) as app:
        assert (app.version, app.version_source) == (5, "5.x-only config key enabledAppendPropCRC")
        a = app.append(NewMessage(topic="Lib", body=b"1", properties=[("TAGS", "t")]))
        b = app.append(NewMessage(topic="Lib", body=b"2"))
        done = app.commit()
    assert done == [a, b] and (a.queueOffset, b.queueOffset) == (0, 1)
    recs = list(Store(tmp_path / "s", conf).scan().records())
    assert [m.storeTimestamp for _, m in recs] == [1700000000000] * 2
    assert parse_properties(recs[0][1].properties_string)["TAGS"] == "t"


def test_version_is_detected_from_the_records(tmp_path):
    """With nothing in the config, the property style of the store's last records decides."""
    for name, version in (("a-basic", 4), ("c-v5-features", 5)):
        store = copy_store(name, tmp_path / name)
        full = load_config(broker_conf(name))
        geometry = {k: getattr(full, k) for k in ("mappedFileSizeCommitLog", "maxHashSlotNum", "maxIndexNum")}
        with Appender(store, load_config(None, **geometry), dry_run=True) as app:
            assert (app.version, app.version_source) == (version, "the store's records")


# -- durability: SIGKILL at random moments --------------------------------------------------------------------------


def test_records_taken_back_after_an_error_lose_their_first_totalsize_first(tmp_path, monkeypatch):
    """A commit that fails after its records are in the map (here its dispatch) takes them back to zeros, none
    acknowledged; the zeroing begins with the first record's TOTALSIZE, so a kill in the middle of it leaves the
    data ending there, never a first record whose later fields are zero and whose head still reads."""
    from rmqctl.errors import StoreError
    from rmqctl.maintenance import append

    conf = write_conf(tmp_path / "broker.conf", mappedFileSizeCommitLog=1 << 20)
    store = tmp_path / "store"
    append_ok(store, conf, "--topic", "T", "--body", "old")
    writes = []

    class Logged:  # a file's map whose writes are logged
        def __init__(self, real):
            self.real = real

        def __setitem__(self, key, value):
            writes.append((key.start, key.stop, bytes(value).strip(b"\0") == b""))
            self.real[key] = value

        def __getattr__(self, name):
            return getattr(self.real, name)

    real_take_back = append.CommitLogTail.take_back

    def take_back(self):
        for f in self.files.values():
            f.map = Logged(f.map)
        real_take_back(self)

    def dispatch_fails(*args, **kwargs):
        raise StoreError("the dispatch failed", store)

    monkeypatch.setattr(append.CommitLogTail, "take_back", take_back)
    monkeypatch.setattr(append.CommitLogTail, "dispatched", dispatch_fails)
    with pytest.raises(StoreError, match="the dispatch failed"):
        with Appender(store, load_config(conf)) as app:
            for i in range(3):
                app.append(NewMessage(topic="T", body=b"new %d" % i))
            app.commit()
    begun = min(a for a, _, _ in writes)
    assert writes[0][:2] == (begun, begun + 4) and all(zeros for _, _, zeros in writes), writes
    assert [base64.b64decode(m["body"]) for m in dump(store, conf)] == [b"old"], "the store is as it was"


def test_sigkill_keeps_every_acknowledged_message(tmp_path):
    """Kill `append --jsonl` (files of 16 KiB: a roll every few batches) at its k-th copy of encoded records into
    the commitlog, k drawn with a printed seed (a count of work done, not a clock), before, inside and after the
    write of each of two batches: every message it acknowledged is in the store afterwards, whole and with its
    CRC; what follows is the old tail, a garbage tail (the batch without its first TOTALSIZE) or whole
    unacknowledged records, each seen; the store goes on (after `repair` where the tail is garbage)."""
    seed = 20240601
    rng = random.Random(seed)
    conf = write_conf(
        tmp_path / "broker.conf",
        mappedFileSizeCommitLog=16384,
        mappedFileSizeConsumeQueue=400,
        maxHashSlotNum=16,
        maxIndexNum=64,
    )
    messages = tmp_path / "messages.jsonl"
    messages.write_text(
        "".join(
            json.dumps(
                {
                    "topic": f"K{i % 3}",
                    "queueId": i % 2,
                    "body": f"message {i} " * 40,
                    "properties": {"KEYS": f"seq-{i}"},
                }
            )
            + "\n"
            for i in range(100)
        )
    )
    # the forked children inherit its kernels
    assert len(append_ok(tmp_path / "warm", conf, "--jsonl", messages)) == 100
    outcomes = set()
    for call in rng.sample(range(2, 25), 2):
        for phase in ("before", "inside", "after"):
            store, acks = tmp_path / f"{phase}-{call}" / "store", tmp_path / f"{phase}-{call}" / "acks.jsonl"
            store.parent.mkdir()
            assert _append_killed_in_encode(store, conf, messages, call, phase, acks), (phase, call, seed)
            done = jsonl(acks.read_text())
            files = {p.name: p.read_bytes() for p in (store / "commitlog").iterdir()}
            for a in done:
                buf = files[a["file"]]
                m = read_record(buf, a["position"], len(buf))
                assert not isinstance(m, Blank) and m.body_crc_ok() and m.physicalOffset == a["commitLogOffset"]
                i = int(m.properties["KEYS"].split("-")[1])
                assert m.body == f"message {i} ".encode() * 40 and m.topic == f"K{i % 3}", (phase, call, seed)
                assert m.queueOffset == a["queueOffset"], (phase, call, seed)
            outcome = _past_the_acknowledged(store, done, 16384)
            outcomes.add(outcome)
            if outcome == "torn":
                assert run("repair", "--store", store, "--broker-config", conf).exit_code == 0, (call, seed)
            res = run("append", "--store", store, "--broker-config", conf, "--topic", "K0", "--body", "after")
            assert res.exit_code == 0, (phase, call, seed, res.stderr)
    assert outcomes == {"old", "torn", "new"}, f"kills drawn with seed {seed} left only {outcomes}"


def _append_killed_in_encode(store: Path, conf: Path, messages: Path, call: int, phase: str, acks: Path) -> bool:
    """`rmqctl append --jsonl` (acknowledging every 4 messages) in a forked child that SIGKILLs itself at its
    `call`-th copy of a file's encoded records into the commitlog's map: before it writes ("before"), after the
    whole batch is in the page cache and before the fsync that would acknowledge it ("after"), or with every
    byte of the batch but its last in the file and its first TOTALSIZE not yet ("inside": the state a kill in
    the middle of the copy leaves, the kernel keeping every byte written before it; the last byte alone missing
    once left a record whose properties ended in a zero, which read as a message; the TOTALSIZE that goes last
    now keeps it out). True if it was killed, False if it finished."""
    from rmqctl.cli import append_cmds
    from rmqctl.maintenance import append
    from test_rebuild import cli_main

    pid = os.fork()
    if pid == 0:
        sys.stdout = open(acks, "w")
        append_cmds.BATCH_MESSAGES = 4
        calls = [0]
        real = append.into_file

        def into_file(m, lo, staged):  # every path of append puts a file's records into its map through this
            calls[0] += 1
            if calls[0] == call and phase == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            if calls[0] == call and phase == "inside":  # every write into_file makes but its last, the TOTALSIZE
                writes = _writes_of(real, lo, staged)
                assert writes[-1] == (lo, lo + 4) and sorted(writes)[0][0] == lo, writes
                for a, b in writes[:-1]:
                    m[a:b] = staged[a - lo : b - lo]
                os.kill(os.getpid(), signal.SIGKILL)
            real(m, lo, staged)
            if calls[0] == call:
                os.kill(os.getpid(), signal.SIGKILL)

        append.into_file = into_file
        try:
            cli_main(
                ["append", "--store", str(store), "--broker-config", str(conf), "--create", "--jsonl", str(messages)]
            )
            os._exit(0)
        except BaseException:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status):
        assert os.WEXITSTATUS(status) == 0, "append failed in the child"
    return os.WIFSIGNALED(status)


def _writes_of(into_file, lo: int, staged) -> list[tuple[int, int]]:
    """The spans into_file writes, in its order."""

    class Spans:
        def __init__(self):
            self.log = []

        def __setitem__(self, key, value):
            self.log.append((key.start, key.stop))

    spans = Spans()
    into_file(spans, lo, staged)
    return spans.log


def _past_the_acknowledged(store: Path, acked: list[dict], file_size: int) -> str:
    """What lies after the last acknowledged record: "old" (zeros, or the BLANK that ends a file and the next
    file's zeros), "new" (whole records with their CRCs, then zeros) or "torn" (anything else)."""
    files = {int(p.name): p.read_bytes() for p in (store / "commitlog").iterdir()}
    offset = max((a["commitLogOffset"] + len_of(files, a) for a in acked), default=0)
    whole = 0
    while offset - offset % file_size in files:
        buf, pos = files[offset - offset % file_size], offset % file_size
        if not buf[pos:].strip(b"\0"):
            return "new" if whole else "old"
        try:
            m = read_record(buf, pos, len(buf))
        except RecordError:
            return "torn"
        if isinstance(m, Blank):
            offset += file_size - pos
            continue
        if not m.body_crc_ok():
            return "torn"
        whole += 1
        offset += m.storeSize
    return "new" if whole else "old"


def len_of(files: dict[int, bytes], ack: dict) -> int:
    """The storeSize of an acknowledged record (its first four bytes)."""
    return int.from_bytes(files[int(ack["file"])][ack["position"] : ack["position"] + 4], "big")


def test_append_killed_before_inside_and_after_a_write_keeps_the_acknowledged_and_recovers(tmp_path, java_oracle):
    """SIGKILL `append` at counted encodes (no clock, so the same kills on a busy machine): before a batch is
    written, in the middle of its last record, and after it is written but before the fsync that acknowledges
    it. Each kind must leave its outcome: the old commitlog, whole unacknowledged records (new), and a torn
    tail. Every acknowledged message is whole; the next append continues after the old and the new (the new
    records dispatched first, as the broker's reput would); it refuses a torn tail in one line naming repair,
    which cuts it, after which append continues; verify then finds nothing, and RocketMQ loads the repaired store."""
    import oracle

    conf = write_conf(
        tmp_path / "broker.conf",
        mappedFileSizeCommitLog=4096,
        mappedFileSizeConsumeQueue=400,
        maxHashSlotNum=16,
        maxIndexNum=64,
    )
    messages = tmp_path / "messages.jsonl"
    messages.write_text(
        "".join(
            json.dumps(
                {
                    "topic": f"K{i % 3}",
                    "queueId": i % 2,
                    "body": f"message {i} " * 30,
                    "properties": {"KEYS": f"seq-{i}"},
                }
            )
            + "\n"
            for i in range(40)
        )
    )
    assert len(append_ok(tmp_path / "warm", conf, "--jsonl", messages)) == 40  # the forked children inherit its kernels
    outcome_of = {}
    for call in (2, 5, 9):
        for phase in ("before", "inside", "after"):
            store = tmp_path / f"{phase}-{call}" / "store"
            acks = store.parent / "acks.jsonl"
            store.parent.mkdir()
            assert _append_killed_in_encode(store, conf, messages, call, phase, acks), (phase, call)
            acked = jsonl(acks.read_text())
            assert acked, (phase, call)
            files = {p.name: p.read_bytes() for p in (store / "commitlog").iterdir()}
            for a in acked:
                m = read_record(files[a["file"]], a["position"], len(files[a["file"]]))
                i = int(m.properties["KEYS"].split("-")[1])
                assert m.body_crc_ok() and m.body == f"message {i} ".encode() * 30 and m.queueOffset == a["queueOffset"]
            outcome = outcome_of[phase, call] = _past_the_acknowledged(store, acked, 4096)
            res = run("append", "--store", store, "--broker-config", conf, "--topic", "K0", "--body", "after")
            if outcome == "torn":
                one_line_error(res, "torn or garbage tail", "rmqctl repair")
                assert run("repair", "--store", store, "--broker-config", conf).exit_code == 0
                res = run("append", "--store", store, "--broker-config", conf, "--topic", "K0", "--body", "after")
            assert res.exit_code == 0, (phase, call, res.stderr)
            stored = {m["commitLogOffset"] for m in dump(store, conf)}
            assert {a["commitLogOffset"] for a in acked} <= stored, (phase, call)
            assert run("verify", "--store", store, "--broker-config", conf).exit_code == 0, (phase, call)
    assert {phase: {outcome_of[phase, call] for call in (2, 5, 9)} for phase in ("before", "inside", "after")} == {
        "before": {"old"},
        "inside": {"torn"},
        "after": {"new"},
    }, outcome_of
    reading = oracle.read(java_oracle, 4, tmp_path / "inside-5" / "store", conf, tmp_path / "oracle")
    oracle.assert_loads_as_rmqctl_reads(reading, tmp_path / "inside-5" / "store", conf)


# -- the example store ------------------------------------------------------------------------------------------


def test_example_store_is_what_regenerate_builds(tmp_path):
    """examples/store is exactly what `rmqctl append` makes of examples/messages.jsonl (rebuilt, compared)."""
    examples = REPO / "examples"
    subprocess.run(["bash", str(examples / "regenerate.sh"), str(tmp_path / "store")], check=True, capture_output=True)
    checked_in = {
        p.relative_to(examples / "store"): p.read_bytes() for p in (examples / "store").rglob("*") if p.is_file()
    }
    rebuilt = {
        p.relative_to(tmp_path / "store"): p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file()
    }
    assert rebuilt.keys() == checked_in.keys() and rebuilt == checked_in
    conf = examples / "broker.conf"
    msgs = dump(examples / "store", conf)
    assert len(msgs) == len((examples / "messages.jsonl").read_text().splitlines())
    assert len(list((examples / "store" / "commitlog").iterdir())) == 2  # it rolls over once


def test_regenerate_uses_the_venvs_python_not_the_first_python3(tmp_path):
    """With a venv active and a python3 first on PATH that lacks rmqctl's dependencies (a bare venv's),
    regenerate.sh runs the active venv's interpreter. The active venv is the one running the tests (a venv made
    from it with --system-site-packages would see the base Python's packages, not this venv's); outside a venv,
    one that sees the interpreter's own site-packages."""
    bare = tmp_path / "bare"
    venv = Path(sys.prefix)
    if sys.prefix == sys.base_prefix:
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    assert subprocess.run([str(bare / "bin" / "python3"), "-c", "import click"], capture_output=True).returncode != 0
    env = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    env.update(PATH=f"{bare / 'bin'}:{os.environ['PATH']}", VIRTUAL_ENV=str(venv))
    res = subprocess.run(
        ["bash", str(REPO / "examples" / "regenerate.sh"), str(tmp_path / "store")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "store" / "commitlog").is_dir()


def test_compiled_encoder_writes_what_the_reference_encoder_writes():
    """engine.encode (append's batches) against record.encode_record and javacompat.crc_digits: every host
    layout, V1 and V2 topics, empty and large bodies, with and without the `__CRC32#` trailer."""
    from rmqctl.engine.encode import encode_batch
    from rmqctl.record import Message, encode_record

    rng = random.Random(31)
    for crc_trailer in (False, True):
        rows, parts, expected, pos = [], [], bytearray(), 0
        for i in range(200):
            combo = i % 4
            born_ip, store_ip = rng.randbytes(16 if combo & 1 else 4), rng.randbytes(16 if combo & 2 else 4)
            v2 = i % 7 == 0
            m = Message()
            m.magicCode = S.MAGIC_V2 if v2 else S.MAGIC_V1
            m.body = rng.randbytes(rng.choice([0, 1, 7, 1024, 70000]))
            m.bodyCRC = crc31(m.body)
            m.topicBytes = ("T" * (200 if v2 else rng.randint(1, 127))).encode()
            props = "KEYS\x01k%d\x02" % i + ("__CRC32#\x01" + "0" * 10 + "\x02" if crc_trailer else "")
            m.propertiesBytes = props.encode()
            m.queueId, m.flag, m.queueOffset, m.physicalOffset = rng.randrange(1 << 31), -i, rng.randrange(1 << 62), pos
            m.sysFlag = (S.BORNHOST_V6_FLAG if combo & 1 else 0) | (S.STOREHOSTADDRESS_V6_FLAG if combo & 2 else 0)
            m.bornTimestamp, m.storeTimestamp = rng.randrange(1 << 62), -rng.randrange(1 << 62)
            m.bornIp, m.bornPort, m.storeIp, m.storePort = born_ip, rng.randrange(1 << 16), store_ip, 10911
            m.reconsumeTimes, m.preparedTransactionOffset = i, rng.randrange(1 << 40)
            record = bytearray(encode_record(m))
            size = len(record)
            if crc_trailer:
                crc = crc31(memoryview(record)[: size - S.CRC32_RESERVED_LEN])
                record[size - 11 : size - 1] = crc_digits(crc).encode("ascii")
            rows.append(
                (
                    pos,
                    size,
                    m.magicCode,
                    m.queueId,
                    m.flag,
                    m.queueOffset,
                    m.physicalOffset,
                    m.sysFlag,
                    m.bornTimestamp,
                    m.bornPort,
                    m.storeTimestamp,
                    m.storePort,
                    m.reconsumeTimes,
                    m.preparedTransactionOffset,
                    len(m.body),
                    len(m.topicBytes),
                    len(m.propertiesBytes),
                    combo,
                )
            )
            parts += [born_ip, store_ip, m.body, m.topicBytes, m.propertiesBytes]
            expected += record
            pos += size
        out = bytearray(len(expected))
        encode_batch(out, rows, parts, crc_trailer)
        assert out == expected


@pytest.fixture
def small_tmpfs(tmp_path):
    """A fresh 56 MiB tmpfs, unmounted afterwards."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=56m", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


def allocated(root: Path) -> int:
    """Bytes of disk the files under `root` hold (what du counts)."""
    return sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


@pytest.mark.tmpfs
def test_a_new_store_of_one_message_reserves_tens_of_mib_not_the_whole_geometry(small_tmpfs):
    """The default geometry (1 GiB commitlog files, index files of 5 M slots and 20 M entries) fits a 56 MiB
    tmpfs: a file takes its blocks a step ahead of what is written, an index file its slot table and the
    entries it holds; the next append reads the sparse tail without allocating it."""
    store = small_tmpfs / "store"
    for n in range(2):
        res = run(
            "append",
            "--store",
            store,
            "--create",
            "--topic",
            "T",
            "--body",
            "x",
            "--keys",
            "K",
            "--store-host",
            "10.0.0.1:10911",
        )
        assert res.exit_code == 0, res.stderr
        assert jsonl(res.stdout)[0]["queueOffset"] == n
        assert allocated(store) <= 64 << 20
    assert (store / "commitlog" / "00000000000000000000").stat().st_size == 1 << 30


@pytest.mark.tmpfs
def test_new_consumequeue_files_take_the_blocks_their_check_reserved(tmp_path):
    """The check before a commit (reserve_free_space) keeps the reservation of each consumequeue file planned as
    an unnamed file; the file created next links one in (the same inode, its blocks already reserved) instead
    of reserving them again. The rest of the check (an index file's, the checkpoint's) is given back at once,
    files of another size take nothing, and free() gives back what was not taken. On a tmpfs of its own: the free
    blocks counted are this test's alone (another test writing beside it on a shared disk moves them)."""
    from rmqctl.maintenance.writers import Reserved, WritableFile, reserve_free_space

    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        spare = Reserved(6_000_000)
        spare.planned = 2
        before = os.statvfs(mnt).f_bfree
        reserve_free_space(mnt, [6_000_000, 6_000_000, 6_000_000, S.CHECKPOINT_FILE_SIZE], keep=spare)
        held = {os.fstat(fd).st_ino for fd, _ in spare.files}
        assert len(held) == 2
        other = WritableFile(mnt / "ix" / "other", 12_000_000, create=True, spare=spare)
        f = WritableFile(mnt / "cq" / "00000000000000000000", 6_000_000, create=True, spare=spare)
        try:
            assert other.path.stat().st_ino not in held and f.path.stat().st_ino in held and len(spare.files) == 1
            assert f.path.stat().st_blocks * 512 >= 6_000_000
            spare.free()
            assert spare.files == []
        finally:
            f.close()
            other.close()
        assert before - os.statvfs(mnt).f_bfree < (18_000_000 + 4096) // os.statvfs(mnt).f_bsize + 16


@pytest.mark.tmpfs
def test_a_consumequeue_directory_on_another_mount_still_takes_new_files(tmp_path):
    """consumequeue/ bind-mounted from elsewhere on the same filesystem (one device, another mount): the check's
    reservation, made in the store's root, cannot be linked there (EXDEV); the new queue's file is made in its
    own directory instead, and the message is acknowledged once, as without the mount."""
    store = tmp_path / "store"
    first = run("append", "--store", store, "--create", "--topic", "T", "--body", "x", "--store-host", "10.0.0.1:10911")
    assert first.exit_code == 0, first.stderr
    shutil.copytree(store / "consumequeue", tmp_path / "cq")
    subprocess.run(["mount", "--bind", str(tmp_path / "cq"), str(store / "consumequeue")], check=True)
    try:
        res = subprocess.run(
            [sys.executable, "-m", "rmqctl", "append", "--store", store, "--jsonl", "-"],
            input=json.dumps({"topic": "NEW", "storeHost": "10.0.0.1:10911", "body": "eA=="}) + "\n",
            capture_output=True,
            text=True,
        )
        assert res.returncode == 0, res.stderr
        assert [a["queueOffset"] for a in jsonl(res.stdout)] == [0]
        assert (store / "consumequeue" / "NEW" / "0" / "00000000000000000000").exists()
    finally:
        subprocess.run(["umount", "-l", str(store / "consumequeue")], check=True)
    assert [m.topic for _, m in Store(store).scan().records()] == ["T", "NEW"]


def test_a_non_blocking_input_is_waited_for(tmp_path):
    """A pipe whose producer set O_NONBLOCK (the flag is shared with the reader): a read that finds it empty
    waits for the next line, as on a blocking pipe, instead of failing."""
    r, w = os.pipe()
    os.set_blocking(r, False)
    line = json.dumps({"topic": "T", "storeHost": "10.0.0.1:10911", "body": "eA=="}) + "\n"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmqctl", "append", "--store", tmp_path / "s", "--create", "--jsonl", "-"],
        stdin=r,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(r)
    try:
        os.write(w, line.encode())
        assert json.loads(proc.stdout.readline())["queueOffset"] == 0  # read, committed, then the pipe is empty
        threading.Event().wait(0.5)  # (so that the next read finds it empty)
        os.write(w, line.encode())
    finally:
        os.close(w)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert [a["queueOffset"] for a in jsonl(out)] == [1]


@pytest.mark.tmpfs
def test_consumequeue_files_that_do_not_fit_stop_the_first_commit(small_tmpfs, tmp_path):
    """Messages for 12 queues on a 56 MiB tmpfs: their consumequeue files (6 MB each) cannot all be reserved, so
    the first commit stops before anything is durable: one line, exit 2, no acknowledgement, and the store it
    was making is gone with every block it reserved."""
    (tmp_path / "in.jsonl").write_text(
        "".join(
            json.dumps({"topic": f"T{i % 12}", "storeHost": "10.0.0.1:10911", "body": "x" * 100}) + "\n"
            for i in range(120)
        )
    )
    store = small_tmpfs / "store"
    free = os.statvfs(small_tmpfs).f_bavail
    res = subprocess.run(
        [sys.executable, "-m", "rmqctl", "append", "--store", store, "--create", "--jsonl", tmp_path / "in.jsonl"],
        capture_output=True,
        text=True,
    )
    errors = res.stderr.splitlines()
    assert res.returncode == 2 and len(errors) == 1 and "no space left" in errors[0], res.stderr
    assert res.stdout == "" and not store.exists()
    assert os.statvfs(small_tmpfs).f_bavail == free


@pytest.mark.tmpfs
def test_a_disk_filling_up_mid_copy_is_one_line_and_keeps_what_was_acknowledged(small_tmpfs, tmp_path):
    """Appending 100 KiB messages until the tmpfs is full: the step that finds no room is refused with one line
    and exit 2 (never a SIGBUS through a mapping), every acknowledged message is in the store, nothing else."""
    lines = tmp_path / "big.jsonl"
    body = base64.b64encode(b"y" * 100_000).decode()
    with open(lines, "w") as f:
        for i in range(400):
            f.write(
                json.dumps(
                    {
                        "topic": "Big",
                        "queueId": i % 2,
                        "bodyEncoding": "base64",
                        "body": body,
                        "storeHost": "10.0.0.1:10911",
                        "properties": {"KEYS": f"K{i}"},
                    }
                )
                + "\n"
            )
    store = small_tmpfs / "store"
    res = subprocess.run(
        [sys.executable, "-m", "rmqctl", "append", "--store", store, "--create", "--jsonl", lines],
        capture_output=True,
        text=True,
    )
    errors = res.stderr.splitlines()
    assert res.returncode == 2 and len(errors) == 1 and "no space left" in errors[0], res.stderr
    acked = jsonl(res.stdout)
    assert 0 < len(acked) < 400
    stored = run("dump", "commitlog", "--store", store, "--format", "jsonl", "--body", "none")
    assert [m["commitLogOffset"] for m in jsonl(stored.stdout)] == [a["commitLogOffset"] for a in acked]
    assert run("verify", "--store", store).exit_code == 0


# -- acknowledgements never wait on input that may never come --------------------------------------------------------


# the console command with smaller blocks and reads, so that a pipe (at most 1 MiB without privileges) holds the
# whole input before rmqctl reads it: where each block ends is then the input's doing, not the scheduler's
SMALL_BLOCKS = (
    "import sys; from rmqctl.cli.launch import main; from rmqctl.cli import append_cmds as a; "
    "a.BATCH_BYTES, a.READ_CHUNK = int(sys.argv.pop(1)), int(sys.argv.pop(1)); main()"
)
BLOCK = 64 << 10


@pytest.mark.parametrize(
    "line_size, lines, tail, read_chunk",
    [
        (1024, BLOCK // 1024, 0, BLOCK),  # exactly BATCH_BYTES of lines, then silence
        (1024, BLOCK // 1024, 500, BLOCK),  # exactly BATCH_BYTES of lines and half a line, then silence
        (1000, BLOCK // 1000 + 1, 0, 10000),  # a read takes the lines across BATCH_BYTES to the end, then silence
    ],
)
def test_a_producer_waiting_for_its_acknowledgements_gets_them_all(tmp_path, line_size, lines, tail, read_chunk):
    """A producer sends its lines on a pipe (all in the pipe before rmqctl reads), keeps the pipe open and waits
    for one acknowledgement per whole line: they all come while the input stays open; then it sends the rest
    of its last line, closes, and the store holds exactly the messages sent, in order."""
    conf = write_conf(tmp_path / "broker.conf", mappedFileSizeCommitLog=1 << 20)
    bodies = [f"{i:08d}".ljust(line_size - len('{"topic":"T","body":""}\n'), "x") for i in range(lines + 1)]
    sent = b"".join(json.dumps({"topic": "T", "body": b}, separators=(",", ":")).encode() + b"\n" for b in bodies)
    assert len(sent) == (lines + 1) * line_size
    first, rest = sent[: lines * line_size + tail], sent[lines * line_size + tail :]
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 1 << 20)
    os.write(write_end, first)
    proc = subprocess.Popen(
        [sys.executable, "-c", SMALL_BLOCKS, str(BLOCK), str(read_chunk), "append", "--store", str(tmp_path / "s")]
        + ["--broker-config", str(conf), "--create", "--jsonl", "-"],
        stdin=read_end,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    os.close(read_end)
    acks, all_acked = [], threading.Event()

    def read_acks():
        for line in proc.stdout:
            acks.append(json.loads(line))
            if len(acks) == lines:
                all_acked.set()

    reader = threading.Thread(target=read_acks, daemon=True)
    reader.start()
    try:
        # a guard only: the work takes a second or two; without its acknowledgements the producer waits for ever
        assert all_acked.wait(120), f"{len(acks)} of {lines} acknowledged while the input stayed open"
    finally:
        os.write(write_end, rest)
        os.close(write_end)
        proc.wait(120)
        reader.join(120)
    assert proc.returncode == 0, proc.stderr.read().decode()
    assert [a["queueOffset"] for a in acks] == list(range(lines + 1))
    stored = dump(tmp_path / "s", conf)
    assert [base64.b64decode(m["body"]).decode() for m in stored] == bodies


@pytest.mark.parametrize("source", ["file", "pipe"])
def test_lines_longer_than_a_read_are_read_whole(tmp_path, source):
    """Reads go into the block's room in place; a line longer than the room doubles it (here lines of up to
    five reads, beside short ones), from a file or from a pipe: every message is stored whole, in order."""
    conf = write_conf(tmp_path / "broker.conf", mappedFileSizeCommitLog=1 << 20)
    bodies = [("%06d" % i).ljust((i % 7) * 3000 + 10, "y") for i in range(60)]
    sent = b"".join(json.dumps({"topic": "T", "body": b}).encode() + b"\n" for b in bodies)
    (tmp_path / "in.jsonl").write_bytes(sent)
    cmd = [sys.executable, "-c", SMALL_BLOCKS, "8192", "4096", "append", "--store", str(tmp_path / "s")]
    cmd += [
        "--broker-config",
        str(conf),
        "--create",
        "--jsonl",
        str(tmp_path / "in.jsonl") if source == "file" else "-",
    ]
    r = subprocess.run(
        cmd, input=sent if source == "pipe" else None, capture_output=True, env=dict(os.environ, PYTHONPATH=str(REPO))
    )
    assert r.returncode == 0, r.stderr.decode()
    assert [json.loads(a)["queueOffset"] for a in r.stdout.splitlines()] == list(range(len(bodies)))
    assert [base64.b64decode(m["body"]).decode() for m in dump(tmp_path / "s", conf)] == bodies


def test_a_delay_the_broker_cannot_parse_fails_the_send(tmp_path):
    """getDelayTimeLevel's Integer.parseInt throws on the producer's DELAY: the broker stores nothing."""
    store = tmp_path / "store"
    res = run("append", "--store", store, "--create", "--topic", "T", "--body", "x", "--property", "DELAY=soon")
    assert res.exit_code == 2 and "DELAY 'soon' is not a number" in res.stderr and not store.exists()


NOW = 1_796_011_080_320


@pytest.mark.parametrize(
    ("sent", "out_ms"),
    [
        (("TIMER_DELAY_SEC", "60"), NOW + 60_000 - 320),  # rounded down to timerPrecisionMs
        (("TIMER_DELAY_MS", "2680"), NOW + 2680 - 1000),  # a multiple of it: one precision earlier
        (("TIMER_DELIVER_MS", str(NOW + 5000)), NOW + 5000 - 320),
    ],
)
def test_a_timer_message_waits_in_the_timer_wheel_as_the_5x_send_hook_puts_it(sent, out_ms):
    """HookUtils.handleScheduleMessage (5.x): a TIMER_* property sends the message to rmq_sys_wheel_timer, queue
    0, with TIMER_OUT_MS and REAL_TOPIC/REAL_QID; append stored it in its own topic, served at once."""
    msg = NewMessage(topic="TopicX", body=b"t", queue_id=2, properties=[sent])
    got = timer_as_sent(msg, load_config(None), 5, NOW, 0)
    assert (got.topic, got.queue_id) == ("rmq_sys_wheel_timer", 0)
    assert dict(got.properties) == {
        sent[0]: sent[1],
        "TIMER_OUT_MS": str(out_ms),
        "REAL_TOPIC": "TopicX",
        "REAL_QID": "2",
    }
    # what the hook leaves alone: 4.x, a time already passed, a rolled timer message, a PREPARED one
    assert timer_as_sent(msg, load_config(None), 4, NOW, 0) == msg
    assert (
        timer_as_sent(
            dataclasses.replace(msg, properties=[("TIMER_DELIVER_MS", str(NOW))]), load_config(None), 5, NOW, 0
        ).topic
        == "TopicX"
    )
    assert (
        timer_as_sent(
            dataclasses.replace(msg, properties=[sent, ("TIMER_OUT_MS", "1")]), load_config(None), 5, NOW, 0
        ).topic
        == "TopicX"
    )
    assert (
        timer_as_sent(
            dataclasses.replace(msg, sys_flag=S.TRANSACTION_PREPARED_TYPE), load_config(None), 5, NOW, 0
        ).topic
        == "TopicX"
    )
    # a delay level wins: the TIMER_* properties are dropped
    assert timer_as_sent(msg, load_config(None), 5, NOW, 3).properties == []


def test_a_timer_message_the_5x_broker_rejects_is_refused(tmp_path):
    """Too far ahead (timerMaxDelaySec), the wheel disabled, a time that is no number: one line, nothing written."""
    conf = write_conf(tmp_path / "broker.conf", "c-v5-features")
    store = copy_store("c-v5-features", tmp_path / "s")
    for prop, extra, words in (
        ("TIMER_DELIVER_MS=1996010000000", {}, "more than timerMaxDelaySec=259200 s ahead"),
        ("TIMER_DELAY_SEC=5", {"timerWheelEnable": "false"}, "timerWheelEnable=false"),
        ("TIMER_DELAY_MS=soon", {}, "TIMER_DELAY_MS 'soon' is not a number"),
    ):
        c = write_conf(tmp_path / "b2.conf", "c-v5-features", **extra) if extra else conf
        before = {p: p.read_bytes() for p in (store / "commitlog").iterdir()}
        res = run(
            "append", "--store", store, "--broker-config", c, "--topic", "TopicX", "--body", "x", "--property", prop
        )
        one_line_error(res, words)
        assert {p: p.read_bytes() for p in (store / "commitlog").iterdir()} == before


def test_a_prepared_message_keeps_the_delay_its_producer_set(tmp_path):
    """The broker rewrites only NOT and COMMIT messages to SCHEDULE_TOPIC_XXXX; a PREPARED one keeps the DELAY
    its producer's setDelayTimeLevel put (its COMMIT copy is delayed by it). --delay-level dropped it."""
    conf = write_conf(tmp_path / "broker.conf", "a-basic")
    append_ok(tmp_path / "s", conf, "--topic", "Tx", "--body", "p", "--sys-flag", "0x4", "--delay-level", "2")
    [m] = dump(tmp_path / "s", conf)
    assert (m["topic"], m["properties"]["DELAY"]) == ("Tx", "2")


def test_rebuild_index_writes_a_file_cut_short_at_full_size_and_append_goes_on(store_copy):
    """An index file cut short with its entries whole (the broker maps it at full size): rebuild index said
    "identical" and left it short, so append refused it. The rebuilt file is full size, as RocketMQ writes it."""
    store, conf = store_copy("a-basic"), broker_conf("a-basic")
    last = sorted((store / "index").iterdir())[-1]
    size = last.stat().st_size
    os.truncate(last, 5000)
    append = ("append", "--store", store, "--broker-config", conf, "--topic", "TopicTest", "--body", "x")
    one_line_error(run(*append), "file is 5000 bytes", "rmqctl repair pads")
    res = run("rebuild", "index", "--store", store, "--broker-config", conf, "--format", "jsonl", "--no-backup")
    assert res.exit_code == 0, res.stderr
    assert [d["headerChanged"] for d in jsonl(res.stdout)][-1] == "fileLength"
    assert {p.stat().st_size for p in (store / "index").iterdir()} == {size}
    assert run(*append).exit_code == 0
