"""query key, msgid decode/lookup, locate and info against what RocketMQ itself answered."""

from __future__ import annotations

import ipaddress
import json
import shutil

import pytest

import oracle
from conftest import ALL_FIXTURES, CLEAN_FIXTURES, FIXTURES, broker_conf, copy_store, jsonl, patch, run, truth
from rmqctl import schema as S
from rmqctl.config import load_config
from rmqctl.dispatch import index_key_hash
from rmqctl.views.msgid import decode_ids
from rmqctl.views.query import offsets_by_file, query_key, query_offsets
from rmqctl.store import Store


def open_store(name: str) -> Store:
    return Store(FIXTURES / name / "store", load_config(broker_conf(name)))


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_query_offsets_equal_index_service(name):
    """The raw chain walk returns exactly IndexService.queryOffset's list, in its order."""
    store = open_store(name)
    for q in truth(name, "truth-index.jsonl"):
        got = query_offsets(store, q["topic"], q["key"], q["maxNum"], q["begin"], q["end"])
        assert got == q["indexServiceQueryOffset"]["phyOffsets"], (q["topic"], q["key"], q["begin"], q["end"])


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_query_key_drops_only_collisions(name):
    store = open_store(name)
    messages = {m["commitLogOffset"]: m for m in truth(name, "truth-messages.jsonl")}

    def carries(off, topic, key):
        m = messages.get(off)
        return (
            m is not None
            and m["topic"] == topic
            and (key == m.get("uniqKey") or key in (m.get("keys") or "").split(" "))
        )

    for q in truth(name, "truth-index.jsonl"):
        r = query_key(store, q["topic"], q["key"], q["maxNum"], q["begin"], q["end"])
        raw = q["indexServiceQueryOffset"]["phyOffsets"]
        torn = {off for off, _ in r.unreadable}
        assert torn <= {782999}  # only d-crashed's torn last record cannot be read
        want = sorted({o for o in raw if carries(o, q["topic"], q["key"]) and o not in torn})
        assert [s + m.position for _, s, m in r.messages] == want
        assert sorted(set(r.collisions)) == sorted(
            {o for o in raw if o in messages and not carries(o, q["topic"], q["key"])}
        )


def test_query_key_cli_prints_dump_shape():
    q = truth("a-basic", "truth-index.jsonl")[0]
    res = run(
        "query",
        "key",
        q["topic"],
        q["key"],
        "--store",
        FIXTURES / "a-basic" / "store",
        "--broker-config",
        broker_conf("a-basic"),
        "--format",
        "jsonl",
        "--body",
        "none",
    )
    assert res.exit_code == 0
    rows = jsonl(res.stdout)
    assert [r["commitLogOffset"] for r in rows] == q["queryMessage"]["phyOffsets"]
    assert all(r["topic"] == q["topic"] and q["key"] in r["properties"]["KEYS"].split(" ") for r in rows)


def test_query_key_tells_no_such_key_from_no_index_to_look_in(tmp_path):
    """No match: exit 0 (1 with -e) and a line saying so; no index file at all: nothing to look in, exit 2."""
    conf = broker_conf("a-basic")
    res = run(
        "query", "key", "TopicTest", "NO-SUCH-KEY", "--store", FIXTURES / "a-basic" / "store", "--broker-config", conf
    )
    assert (res.exit_code, res.stdout) == (0, "")
    assert res.stderr == f"rmqctl: no message of TopicTest with key NO-SUCH-KEY in {FIXTURES / 'a-basic' / 'store'}\n"
    store = copy_store("a-basic", tmp_path)
    shutil.rmtree(store / "index")
    q = truth("a-basic", "truth-index.jsonl")[0]
    res = run("query", "key", q["topic"], q["key"], "--store", store, "--broker-config", conf)
    assert (res.exit_code, res.stdout) == (2, "")
    assert res.stderr == (
        f"rmqctl: {store / 'index'}: no index file: nothing to look a key up in (rmqctl rebuild "
        "index makes them from the commitlog)\n"
    )


def test_a_zero_length_index_file_is_searched_as_zeros_as_the_broker_does(tmp_path):
    """The broker maps an index file READ_WRITE at its full size, which fills a file cut short with zeros: its
    header is all zero, so queryOffset finds nothing in it and, asked from a time after 0, stops there (its
    beginTimestamp 0 is before the time asked). rmqctl answers the same and names the file on stderr."""
    store = copy_store("a-basic", tmp_path)
    files = sorted((store / "index").iterdir())
    whole = open_store("a-basic")
    queries = [
        q
        for q in truth("a-basic", "truth-index.jsonl")
        if len(q["indexServiceQueryOffset"]["phyOffsets"]) < q["maxNum"]
    ]
    found = {id(q): offsets_by_file(whole, q["topic"], q["key"], q["maxNum"], q["begin"], q["end"]) for q in queries}
    files[-1].write_bytes(b"")
    cut = Store(store, load_config(broker_conf("a-basic")))
    lost = 0
    for q in queries:
        want = [] if q["begin"] > 0 else [o for o, name in found[id(q)] if name != files[-1].name]
        assert query_offsets(cut, q["topic"], q["key"], q["maxNum"], q["begin"], q["end"]) == want, q
        lost += len(found[id(q)]) - len(want)
    assert lost  # the file held entries some query found
    q = queries[0]
    res = run("query", "key", q["topic"], q["key"], "--store", store, "--broker-config", broker_conf("a-basic"))
    assert res.exit_code == 0
    size = files[-2].stat().st_size
    assert res.stderr.splitlines()[0] == (
        f"rmqctl: warning: index file {files[-1].name} is 0 bytes, not {size}: the broker reads it as zeros past "
        "its end, so keys indexed there are not found (rmqctl rebuild index writes it again)"
    )


def test_a_uniq_key_is_found_under_the_topic_its_copy_names_though_its_directory_is_gone(tmp_path):
    """A scheduled message's copy in SCHEDULE_TOPIC_XXXX names its topic (REAL_TOPIC): the delivered message is
    found under it, though the topic's consumequeue directory is gone (a deleted topic) and no config names it."""
    store = copy_store("b-mixed", tmp_path)
    uniq = "FD000000000000000000000000000002482F5FFD2B276CA91D4F005D"
    want = sorted(
        m["commitLogOffset"]
        for m in truth("b-mixed", "truth-messages.jsonl")
        if m["properties"].get("UNIQ_KEY") == uniq
    )
    shutil.rmtree(store / "consumequeue" / "DelayTopic")
    assert not (store / "config" / "topics.json").exists()
    res = run("msgid", "lookup", uniq, "--store", store, "--broker-config", broker_conf("b-mixed"), "--format", "jsonl")
    assert res.exit_code == 0
    assert [(r["commitLogOffset"], r["topic"]) for r in jsonl(res.stdout)] == list(
        zip(want, ["SCHEDULE_TOPIC_XXXX", "DelayTopic"])
    )


@pytest.mark.parametrize("name", CLEAN_FIXTURES)
def test_msgid_decode_matches_truth(name):
    store = open_store(name)
    msgs = truth(name, "truth-messages.jsonl")[::23]
    rows = decode_ids([m["msgId"] for m in msgs], store)
    for m, row in zip(msgs, rows):
        assert row["offset"]["offset"] == m["commitLogOffset"]
        host, port = m["storeHost"].rsplit(":", 1)
        assert ipaddress.ip_address(row["offset"]["host"]) == ipaddress.ip_address(host.strip("[]"))
        assert row["offset"]["port"] == int(port)
        assert row["confirmedAs"] == "offset"
    with_uniq = [m for m in msgs if m.get("uniqKey")]
    for m in with_uniq:
        # RocketMQ's time guess depends on "now": pin it to a moment just after the store was written
        (row,) = decode_ids([m["uniqKey"]], store, now_ms=m["storeTimestamp"] + 60_000)
        info = m["uniqKeyInfo"]
        assert row["unique"]["pid"] == info["pid"]
        assert ipaddress.ip_address(row["unique"]["ip"]) == ipaddress.ip_address(info["ip"].split("%")[0])
        assert row["unique"]["timestamp"] == info["nearlyTime"]
        assert row["confirmedAs"] == "unique"


def test_msgid_decode_reads_stdin_and_rejects_garbage():
    res = run("msgid", "decode", "-", "--format", "jsonl", input="C0A8000A00002A9F0000000000000000\nnot-an-id\n")
    assert res.exit_code == 2 and "'not-an-id'" in res.stderr
    a, b = jsonl(res.stdout)
    assert a["offset"] == {"host": "192.168.0.10", "port": 10911, "offset": 0} and a["confirmedAs"] is None
    assert b["offset"] is None and b["unique"] is None


def test_msgid_lookup_by_offset_and_unique_key():
    m = truth("b-mixed", "truth-messages.jsonl")[7]
    args = [
        "--store",
        FIXTURES / "b-mixed" / "store",
        "--broker-config",
        broker_conf("b-mixed"),
        "--format",
        "jsonl",
        "--body",
        "none",
    ]
    by_offset = jsonl(run("msgid", "lookup", m["msgId"], *args).stdout)
    by_uniq = jsonl(run("msgid", "lookup", m["uniqKey"], *args).stdout)
    assert [r["commitLogOffset"] for r in by_offset] == [m["commitLogOffset"]]
    assert m["commitLogOffset"] in [r["commitLogOffset"] for r in by_uniq]
    missing = run("msgid", "lookup", "C0A8000A00002A9F00000000DEADBEEF", *args)
    assert missing.exit_code == 1


def test_locate_commitlog_and_queue_offsets():
    store = ["--store", FIXTURES / "a-basic" / "store", "--broker-config", broker_conf("a-basic"), "--format", "jsonl"]
    m = truth("a-basic", "truth-messages.jsonl")[60]
    (row,) = jsonl(run("locate", m["commitLogOffset"], *store).stdout)
    assert (row["file"], row["position"], row["recordStart"]) == (m["file"], m["filePosition"], True)
    (inside,) = jsonl(run("locate", m["commitLogOffset"] + 5, *store).stdout)
    assert inside["recordStart"] is False and inside["insideRecordAt"] == m["commitLogOffset"]
    cq = [e for e in truth("a-basic", "truth-consumequeue.jsonl") if (e["topic"], e["queueId"]) == ("OrderTopic", 2)][
        70
    ]
    (q,) = jsonl(run("locate", cq["queueOffset"], "--topic", "OrderTopic", "--queue-id", 2, *store).stdout)
    assert (q["commitLogOffset"], q["size"], q["tagsCode"]) == (cq["commitLogOffset"], cq["size"], cq["tagsCode"])
    assert q["file"] == f"{(70 * 20) // 1280 * 1280:020d}"


def test_locate_outside_the_data_says_so_with_exit_1():
    store = ["--store", FIXTURES / "a-basic" / "store", "--broker-config", broker_conf("a-basic"), "--format", "jsonl"]
    res = run("locate", 99999999, *store)
    assert res.exit_code == 1 and jsonl(res.stdout)[0]["exists"] is False
    assert res.stderr == "rmqctl: commitlog offset 99999999: past the end of the commitlog's data (2580536)\n"
    res = run("locate", 2580536, *store)  # inside the last file, after its last record
    assert res.exit_code == 1 and jsonl(res.stdout)[0]["exists"] is True
    assert res.stderr == "rmqctl: commitlog offset 2580536: past the end of the commitlog's data (2580536)\n"
    res = run("locate", 500, "--topic", "TopicTest", *store)
    assert res.exit_code == 1
    assert res.stderr == "rmqctl: TopicTest/0 queue offset 500: outside the queue's written units\n"
    assert run("locate", 2580535, *store).exit_code == 0  # the last record's last byte


def test_locate_a_pre_blank_unit_names_it_with_exit_1(tmp_path):
    """A queue whose first file holds fillPreBlank's units before its first unit (a queue rebuilt or converted
    after a cleanup): such a unit is no record (neither a written message nor one the cleanup deleted)."""
    root = copy_store("a-basic", tmp_path)
    patch(root / "consumequeue" / "TopicTest" / "0" / f"{0:020d}", 0, S.CQ_UNIT.pack(0, S.PRE_BLANK_SIZE, 0))
    res = run("locate", 0, "--topic", "TopicTest", "--store", root, "--broker-config", broker_conf("a-basic"))
    assert res.exit_code == 1 and jsonl(res.stdout)[0]["preBlank"] is True
    assert res.stderr == (
        "rmqctl: TopicTest/0 queue offset 0: a pre-blank unit (fillPreBlank's, before the queue's first unit): "
        "no record\n"
    )


def test_info_summarises_the_crashed_store():
    res = run(
        "info",
        "--store",
        FIXTURES / "d-crashed" / "store",
        "--broker-config",
        broker_conf("d-crashed"),
        "--format",
        "json",
    )
    assert res.exit_code == 0
    (d,) = jsonl(res.stdout)
    assert d["abort"] is True and d["commitlog"]["preallocatedEmptyFiles"] == 1
    # the entries RocketMQ serves after its abnormal recovery truncates the unit of the torn last record
    summary = json.loads((FIXTURES / "d-crashed" / "truth-recovered-summary.json").read_text())
    assert d["consumequeue"]["entries"] == summary["cqEntryCount"]
    assert any("782999" in line for line in d["odd"])


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_index_geometry_inferred_without_broker_config(name):
    """Without maxHashSlotNum/maxIndexNum the geometry comes from the data, and queries still agree."""
    conf = load_config(broker_conf(name))
    store = Store(FIXTURES / name / "store")
    assert store.index_geometry == (conf.maxHashSlotNum, conf.maxIndexNum)
    q = truth(name, "truth-index.jsonl")[0]
    assert (
        query_offsets(store, q["topic"], q["key"], q["maxNum"], q["begin"], q["end"])
        == q["indexServiceQueryOffset"]["phyOffsets"]
    )


def test_locate_inside_a_blank_and_past_damage(tmp_path):
    """An offset inside the BLANK that ends a file is inside it; one past bytes that are not a record is in
    no record (the walk from the file's start stops there)."""
    root = copy_store("a-basic", tmp_path)
    store = ["--store", root, "--broker-config", broker_conf("a-basic"), "--format", "jsonl"]
    messages = truth("a-basic", "truth-messages.jsonl")
    file = messages[0]["file"]
    last = [m for m in messages if m["file"] == file][-1]
    blank = last["commitLogOffset"] + last["storeSize"]
    (row,) = jsonl(run("locate", blank + 3, *store).stdout)
    assert row["recordStart"] is False and row["insideRecordAt"] == blank
    second = [m for m in messages if m["file"] == file][1]
    patch(root / "commitlog" / file, second["filePosition"] + 4, b"\0\0\0\0")  # its magic
    (row,) = jsonl(run("locate", last["commitLogOffset"] + 5, *store).stdout)
    assert row["recordStart"] is False and "insideRecordAt" not in row


def test_query_key_on_a_crashed_store_names_the_index_files_the_broker_deletes(tmp_path):
    """After a crash, IndexService.load deletes every index file whose endTimestamp is after the checkpoint's
    indexMsgTimestamp; the answers found in them are ones the restarted broker may not find (the lookups review
    counted 1,491 such key queries on this store): each such file is named with how many answers it gave."""
    store = copy_store("d-crashed", tmp_path / "d")
    with open(store / "checkpoint", "r+b") as f:
        f.seek(16)
        f.write(S.INT64.pack(1795314228700))  # indexMsgTimestamp: the newest index files end after it
    query = ["query", "key", "BenchTopic-7", "HOT", "--max", "2", "--store", store, "--format", "jsonl"]
    conf = ["--broker-config", broker_conf("d-crashed")]
    r = run(*query, *conf)
    assert r.exit_code == 0 and len(jsonl(r.stdout)) == 2
    warned = [line for line in r.stderr.splitlines() if "which the broker deletes at its next start" in line]
    assert len(warned) == 2 and sum(int(line.split()[2]) for line in warned) == 2
    (store / "abort").unlink()  # a clean stop: the broker keeps them
    assert "deletes at its next start" not in run(*query, *conf).stderr


def test_a_looping_index_chain_is_said_and_a_negative_max_refused(tmp_path):
    """The newest index file's chain for TopicTest#USER-11 (its first entries are other keys', then one of its
    own) given a loop. Between the first two: RocketMQ 4.9.7's selectPhyOffset spins there for good (the query
    review's harness never returned; it stops only at maxNum); rmqctl stopped after the file's entries without a
    word, and now says so and searches no older file. Between its own entry and the one before: the loop holds
    a match, and the broker fills maxNum with it from this file alone, as rmqctl now does. --max -1, where the
    broker throws (Illegal Capacity), is a usage error."""
    at = lambda root: ["--store", root, "--broker-config", broker_conf("a-basic"), "--format", "jsonl"]  # noqa: E731
    slots, base = 100, S.INDEX_HEADER_SIZE + 100 * S.HASH_SLOT_SIZE
    key_hash = index_key_hash("TopicTest#USER-11")

    def chain_of(root):
        index = sorted((root / "index").iterdir())[-1]
        data = index.read_bytes()
        chain = [S.INT32.unpack_from(data, S.INDEX_HEADER_SIZE + key_hash % slots * S.HASH_SLOT_SIZE)[0]]
        while len(chain) < 8:
            chain.append(S.INDEX_ENTRY.unpack_from(data, base + chain[-1] * S.INDEX_ENTRY_SIZE)[3])
        own = [S.INDEX_ENTRY.unpack_from(data, base + i * S.INDEX_ENTRY_SIZE)[0] == key_hash for i in chain]
        return index, chain, own.index(True)

    loop = lambda index, a, b: patch(index, base + a * S.INDEX_ENTRY_SIZE + 16, S.INT32.pack(b))  # noqa: E731
    spinning = copy_store("a-basic", tmp_path / "spins")
    index, chain, mine = chain_of(spinning)
    assert mine >= 2
    loop(index, chain[1], chain[0])
    res = run("query", "key", "TopicTest", "USER-11", *at(spinning))
    assert res.exit_code == 0 and f"index file {index.name}: the chain of entries for this key loops" in res.stderr
    assert jsonl(res.stdout) == []  # (nothing before the loop, and no older file searched)
    res = run("query", "key", "TopicTest", "USER-11", "--max", "-1", *at(spinning))
    assert res.exit_code == 2 and "Traceback" not in res.stderr

    filling = copy_store("a-basic", tmp_path / "fills")
    index, chain, mine = chain_of(filling)
    loop(index, chain[mine], chain[mine - 1])
    by_file = offsets_by_file(
        Store(filling, load_config(broker_conf("a-basic"))), "TopicTest", "USER-11", 64, 0, 1 << 62
    )
    assert len(by_file) == 64 and {name for _, name in by_file} == {index.name}
    res = run("query", "key", "TopicTest", "USER-11", *at(filling))
    assert res.exit_code == 0 and "loops" not in res.stderr and len(jsonl(res.stdout)) == 1


def test_locate_a_queue_offset_as_the_broker_leaves_the_queue_after_its_load(tmp_path, java_oracle):
    """d-crashed: OrderTopic/2's unit 39 points at the torn record, which the recovery cuts: RocketMQ 4.9.7's
    load truncates the queue at 39 (its max), and locate said the unit is there (exit 0). a-basic with `abort`
    and TopicTest/0's last 4 units zeroed: the recovery's dispatch writes them again, and locate said "outside
    the queue's written units"; it now names the record the broker writes unit 178 for, as the unit on disk
    was before (the query review's harness: getCommitLogOffsetInQueue gives the same)."""
    crashed = copy_store("d-crashed", tmp_path / "d")
    queues = oracle.served(java_oracle, 4, crashed, broker_conf("d-crashed"), tmp_path / "out")[0]
    assert queues[("OrderTopic", 2)][1] == 39
    at = ["--store", crashed, "--broker-config", broker_conf("d-crashed"), "--format", "jsonl"]
    res = run("locate", "39", "--topic", "OrderTopic", "--queue-id", "2", *at)
    assert res.exit_code == 1 and "the broker's recovery truncates this unit" in jsonl(res.stdout)[0]["nothingThere"]
    root = copy_store("a-basic", tmp_path / "a")
    (root / "abort").touch()
    unit_file = root / "consumequeue" / "TopicTest" / "0" / "00000000000000002560"
    before = S.CQ_UNIT.unpack_from(unit_file.read_bytes(), 1000)
    patch(unit_file, 1000, bytes(4 * S.CQ_UNIT_SIZE))
    res = run("locate", "178", "--topic", "TopicTest", "--queue-id", "0", "--store", root, "--format", "jsonl")
    row = jsonl(res.stdout)[0]
    assert res.exit_code == 0 and row["dispatchedAtLoad"]
    assert (row["commitLogOffset"], row["size"], row["tagsCode"]) == before
