"""Every store rmqctl writes, loaded by RocketMQ's own store code (tests/oracle.py): append onto a 4.9.7 and a
5.3.3 store and into a new one (--create), rebuild of consumequeues and index from nothing and from damaged ones,
repair of a crash, a torn record and short last files, clean --apply, restore of a backup, and config restore. RocketMQ must recover the result cleanly and read back
every consumequeue unit as rmqctl reads it, and every message rmqctl wrote as it was sent."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import shutil

import pytest

import oracle
from conftest import broker_conf, copy_store, fixture_dir, jsonl, patch, run, tmpfs_at
from rmqctl import schema as S
from rmqctl.config import load_config
from rmqctl.views.inspect import info
from rmqctl.store import Store

# the 4.9.7 and the 5.3.3 fixture, the reader of that version, and a topic each already has
VERSIONS = {"a-basic": 4, "c-v5-features": 5}
TOPIC = {"a-basic": "TopicTest", "c-v5-features": "TopicV5"}
BOTH = pytest.mark.parametrize("name", list(VERSIONS))
# rebuild also on b-mixed (4.9.7): LMQ multi-dispatch, delay levels, transactions, IPv6 hosts
REBUILT = pytest.mark.parametrize("name", ["a-basic", "b-mixed", "c-v5-features"])
CRASHED = "d-crashed"
FLIPPED = 32655  # d-crashed/corruption.json: a flipped body byte in the first file, which recovery keeps


@pytest.fixture(scope="session")
def pristine(java_oracle, tmp_path_factory):
    """RocketMQ's reading of an unchanged fixture, read once per session."""
    cache = {}

    def reading(name: str) -> oracle.Reading:
        if name not in cache:
            cache[name] = oracle.read(
                java_oracle,
                VERSIONS.get(name, 4),
                copy_store(name, tmp_path_factory.mktemp(name)),
                broker_conf(name),
                tmp_path_factory.mktemp(f"{name}-read"),
            )
        return cache[name]

    return reading


def judge(java_oracle, tmp_path, name: str, store, known_damage=frozenset()) -> oracle.Reading:
    """RocketMQ (the fixture's version) loads `store`, a changed copy of fixture `name`, as rmqctl reads it."""
    reading = oracle.read(java_oracle, VERSIONS.get(name, 4), store, broker_conf(name), tmp_path / "oracle")
    oracle.assert_loads_as_rmqctl_reads(reading, store, broker_conf(name), known_damage)
    return reading


def ok(*args, input=None) -> list[dict]:
    res = run(*args, "--format", "jsonl", input=input)
    assert res.exit_code == 0, res.stderr
    return jsonl(res.stdout)


def store_info(store, name: str) -> dict:
    return info(Store(store, load_config(broker_conf(name))))


# -- append -----------------------------------------------------------------------------------------------------


def append(store, name: str, *args, input=None) -> list[dict]:
    return ok("append", "--store", store, "--broker-config", broker_conf(name), *args, input=input)


def append_lines(store, name: str, messages: list[dict]) -> list[dict]:
    """One `append --jsonl` run: the messages go into one batch, committed together."""
    lines = "".join(json.dumps(m) + "\n" for m in messages)
    acks = append(store, name, "--jsonl", "-", input=lines)
    assert len(acks) == len(messages)
    return acks


def assert_read_as_sent(reading: oracle.Reading, acks: list[dict], sent: list[dict]):
    """Each acknowledged message is read by RocketMQ where rmqctl put it, with what was sent."""
    at = {l["commitLogOffset"]: l for l in reading.lines}
    for ack, msg in zip(acks, sent):
        line = at.get(ack["commitLogOffset"])
        assert line, f"RocketMQ reads no consumequeue unit for {ack}"
        props = msg.get("properties", {})
        want = {
            "topic": msg["topic"],
            "queueId": msg["queueId"],
            "queueOffset": ack["queueOffset"],
            "msgTopic": msg["topic"],
            "msgQueueId": msg["queueId"],
            "msgQueueOffset": ack["queueOffset"],
            "msgId": ack["msgId"],
            "keys": props.get("KEYS"),
            "tags": props.get("TAGS"),
            "body": base64.b64encode(msg["body"].encode()).decode(),
        }
        assert {k: line.get(k) for k in want} == want


def message(topic: str, queue_id: int, body: str, tags=None, keys=None, **user) -> dict:
    props = {**({"TAGS": tags} if tags else {}), **({"KEYS": keys} if keys else {}), **user}
    return {"topic": topic, "queueId": queue_id, "body": body, "properties": props}


@BOTH
def test_append_single_messages(java_oracle, tmp_path, name):
    store = copy_store(name, tmp_path)
    sent = [
        message(TOPIC[name], 1, "héllo, RocketMQ", tags="TagZ", keys="ORACLE-1 ORACLE-2", color="red"),
        message(TOPIC[name], 3, "no tags, no keys"),
        message("OracleNewTopic", 2, "a queue that did not exist", tags="TagN", keys="NEW-1"),
    ]
    acks = []
    for m in sent:
        args = ["--topic", m["topic"], "--queue-id", m["queueId"], "--body", m["body"]]
        for k, v in m["properties"].items():
            args += {"TAGS": ["--tags", v], "KEYS": ["--keys", v]}.get(k, ["--property", f"{k}={v}"])
        acks += append(store, name, *args)
    assert acks[2]["queueOffset"] == 0
    assert_read_as_sent(judge(java_oracle, tmp_path, name, store), acks, sent)


@BOTH
def test_append_a_batch(java_oracle, tmp_path, name):
    store = copy_store(name, tmp_path)
    sent = [
        message(
            TOPIC[name],
            i % 4,
            f"batch body {i} " + "x" * (i * 37 % 500),
            tags=f"Tag{'ABC'[i % 3]}",
            keys=f"BATCH-{i:03d} USER-{i % 7}",
            **({"shade": str(i)} if i % 2 else {}),
        )
        for i in range(40)
    ]
    if VERSIONS[name] == 5:  # a topic of 150 characters: V2 records (2-byte topic length)
        sent += [message("V2Topic-" + "v" * 142, 0, "a V2 record", tags="TagV", keys="V2-KEY")]
    acks = append_lines(store, name, sent)
    assert_read_as_sent(judge(java_oracle, tmp_path, name, store), acks, sent)


@BOTH
def test_append_create_makes_a_store_the_broker_loads(java_oracle, tmp_path, name):
    """`append --create` into a directory that is no store yet, with the fixture's geometry and its broker's
    record style: RocketMQ of that version loads the new store and reads every message as it was sent."""
    store = tmp_path / "new-store"
    sent = [
        message(
            f"Created{i % 3}",
            i % 2,
            f"a message of a new store {i} " + "y" * (i * 53 % 700),
            tags=f"Tag{'XYZ'[i % 3]}",
            keys=f"NEW-{i:03d}",
        )
        for i in range(30)
    ]
    lines = "".join(json.dumps(m) + "\n" for m in sent)
    acks = append(store, name, "--create", "--rocketmq-version", str(VERSIONS[name]), "--jsonl", "-", input=lines)
    assert len(acks) == len(sent) and acks[0]["commitLogOffset"] == 0
    reading = judge(java_oracle, tmp_path, name, store)
    assert reading.summary["messageCount"] == len(sent)
    assert_read_as_sent(reading, acks, sent)


@BOTH
def test_append_rolls_the_commitlog_file(java_oracle, tmp_path, name):
    """A message bigger than the room left in the last file: the file ends in a BLANK record, the message
    starts the next file."""
    store = copy_store(name, tmp_path)
    cl = store_info(store, name)["commitlog"]
    left = cl["fileSize"] - cl["maxOffset"] % cl["fileSize"]
    sent = [message(TOPIC[name], 0, "r" * (left - 100), tags="TagRoll", keys="ROLL-1")]
    acks = append_lines(store, name, sent)
    next_file = cl["maxOffset"] - cl["maxOffset"] % cl["fileSize"] + cl["fileSize"]
    assert (acks[0]["commitLogOffset"], acks[0]["position"]) == (next_file, 0)
    assert_read_as_sent(judge(java_oracle, tmp_path, name, store), acks, sent)


@BOTH
def test_append_opens_a_new_index_file(java_oracle, tmp_path, name):
    """More keys than the last index file has room for: the index rolls to a new file."""
    store = copy_store(name, tmp_path)
    before = store_info(store, name)["index"]
    room = before["geometry"]["maxIndexNum"] - 1 - before["files"][-1]["entries"]
    sent = [
        message(TOPIC[name], i % 4, f"keyed {i}", tags="TagK", keys=f"IDX-{i}-A IDX-{i}-B")
        for i in range(room // 2 + 5)
    ]
    acks = append_lines(store, name, sent)
    assert len(store_info(store, name)["index"]["files"]) == len(before["files"]) + 1
    assert_read_as_sent(judge(java_oracle, tmp_path, name, store), acks, sent)


# -- rebuild ----------------------------------------------------------------------------------------------------


def rebuild(store, name: str, what: str, *args) -> list[dict]:
    return ok("rebuild", what, "--store", store, "--broker-config", broker_conf(name), "--no-backup", *args)


@REBUILT
def test_rebuild_consumequeue_and_index_from_nothing(java_oracle, pristine, tmp_path, name):
    """Both directories removed, then rebuilt: RocketMQ reads every unit exactly as from the broker's own."""
    store = copy_store(name, tmp_path)
    shutil.rmtree(store / "consumequeue")
    shutil.rmtree(store / "index")
    rebuild(store, name, "consumequeue")
    rebuild(store, name, "index")
    assert len(list((store / "index").iterdir())) == len(list((fixture_dir(name) / "store" / "index").iterdir()))
    oracle.assert_same_units(
        judge(java_oracle, tmp_path, name, store).lines, pristine(name).lines, "rebuilt vs broker-written"
    )


@REBUILT
def test_rebuild_of_damaged_consumequeue_and_index(java_oracle, pristine, tmp_path, name):
    """A zeroed unit, a unit pointing elsewhere, a lost consumequeue file, a cut one, a garbage index slot and
    a cut index file, then both rebuilt."""
    store = copy_store(name, tmp_path)
    queues = sorted(p for p in (store / "consumequeue").glob("*/*") if p.is_dir())
    first = sorted(queues[0].iterdir())[0]
    data = bytearray(first.read_bytes())
    data[2 * S.CQ_UNIT_SIZE : 3 * S.CQ_UNIT_SIZE] = bytes(S.CQ_UNIT_SIZE)
    data[4 * S.CQ_UNIT_SIZE : 4 * S.CQ_UNIT_SIZE + 8] = (123456).to_bytes(8, "big")
    first.write_bytes(bytes(data))
    cut = sorted(queues[1].iterdir())[-1]
    os.truncate(cut, cut.stat().st_size // 2)
    sorted(queues[-1].iterdir())[0].unlink()
    index = sorted((store / "index").iterdir())
    data = bytearray(index[0].read_bytes())
    data[S.INDEX_HEADER_SIZE : S.INDEX_HEADER_SIZE + 8] = b"\xde\xad\xbe\xef" * 2
    index[0].write_bytes(bytes(data))
    os.truncate(index[-1], index[-1].stat().st_size // 3)
    rebuild(store, name, "consumequeue")
    rebuild(store, name, "index")
    oracle.assert_same_units(
        judge(java_oracle, tmp_path, name, store).lines, pristine(name).lines, "rebuilt vs broker-written"
    )


# -- repair -----------------------------------------------------------------------------------------------------


def repair(store, name: str, *args) -> list[dict]:
    return ok("repair", "--store", store, "--broker-config", broker_conf(name), "--no-backup", *args)


def last_record(store, name: str) -> tuple:
    """(file path, position, size) of the store's last record."""
    s = Store(store, load_config(broker_conf(name)))
    f, m = list(s.scan().records())[-1]
    return f.path, m.position, m.storeSize


def test_repair_of_d_crashed(java_oracle, pristine, tmp_path):
    """The torn tail cut, the flipped byte in the first file kept (as the broker keeps it): RocketMQ reads
    the repaired store as it reads the crashed one after its own recovery, now without an abnormal one."""
    store = copy_store(CRASHED, tmp_path)
    plan = repair(store, CRASHED)
    reading = oracle.read(java_oracle, 4, store, broker_conf(CRASHED), tmp_path / "oracle")
    assert pristine(CRASHED).summary["abnormalRecovery"]
    oracle.assert_same_units(
        reading.lines, pristine(CRASHED).lines, "the repaired d-crashed vs RocketMQ's own recovery"
    )
    oracle.assert_loads_as_rmqctl_reads(reading, store, broker_conf(CRASHED), known_damage={FLIPPED})
    assert [r["commitLogOffset"] for r in plan if r["action"] in ("cut", "not-cut")] == [782999, FLIPPED]


def test_repair_scan_all_of_d_crashed(java_oracle, tmp_path):
    """--scan-all cuts at the flipped byte: what is left has no damage at all."""
    store = copy_store(CRASHED, tmp_path)
    plan = repair(store, CRASHED, "--scan-all", "--yes")
    assert [r["commitLogOffset"] for r in plan if r["action"] == "cut"] == [FLIPPED]
    reading = judge(java_oracle, tmp_path, CRASHED, store)
    assert reading.summary["maxPhyOffset"] == FLIPPED


@BOTH
def test_repair_of_a_torn_last_record(java_oracle, tmp_path, name):
    store = copy_store(name, tmp_path)
    path, pos, size = last_record(store, name)
    with open(path, "r+b") as fh:
        fh.seek(pos + size // 2)
        fh.write(bytes(size - size // 2))
    (store / "abort").touch()
    repair(store, name)
    reading = judge(java_oracle, tmp_path, name, store)
    assert reading.summary["maxPhyOffset"] == int(path.name) + pos


@BOTH
def test_repair_of_a_half_cut_last_file(java_oracle, tmp_path, name):
    """The last file cut in the middle of its last record (a copy that stopped short)."""
    store = copy_store(name, tmp_path)
    path, pos, size = last_record(store, name)
    os.truncate(path, pos + size // 2)
    repair(store, name)
    reading = judge(java_oracle, tmp_path, name, store)
    assert reading.summary["maxPhyOffset"] == int(path.name) + pos


@BOTH
def test_repair_of_a_zero_byte_last_file(java_oracle, tmp_path, name):
    store = copy_store(name, tmp_path)
    last = sorted((store / "commitlog").iterdir())[-1]
    os.truncate(last, 0)
    repair(store, name)
    judge(java_oracle, tmp_path, name, store)


def test_repair_keeps_a_header_byte_the_broker_keeps(java_oracle, tmp_path):
    """d-crashed with an early record's queueId flipped (its body CRC still passes, its consumequeue entry now
    disagrees): the repair goes ahead, keeping what it did not cause, and RocketMQ reads the repaired store
    unit for unit as it reads the damaged one after its own abnormal recovery."""
    store = copy_store(CRASHED, tmp_path)
    flipped = 4638  # TopicTest/1@1 in the first file; byte 15 is the low byte of its queueId
    patch(
        store / "commitlog" / f"{0:020d}",
        flipped + 15,
        bytes([(store / "commitlog" / f"{0:020d}").read_bytes()[flipped + 15] ^ 2]),
    )
    damaged = oracle.read(java_oracle, 4, store, broker_conf(CRASHED), tmp_path / "damaged")
    assert damaged.summary["abnormalRecovery"]
    plan = repair(store, CRASHED)
    assert flipped in [r["commitLogOffset"] for r in plan if r["action"] == "not-cut"]
    reading = oracle.read(java_oracle, 4, store, broker_conf(CRASHED), tmp_path / "oracle")
    assert not reading.summary["abnormalRecovery"]
    oracle.assert_same_units(reading.lines, damaged.lines, "the repaired store vs RocketMQ's own recovery of it")


@BOTH
def test_repair_of_short_consumequeue_and_index_files(java_oracle, tmp_path, name):
    """A queue's last consumequeue file and the last index file cut short (the index keeping every entry its
    header counts): the broker refuses the first; after repair (and a consumequeue rebuild for the units lost
    with the cut) RocketMQ loads the store and reads it as rmqctl does."""
    store = copy_store(name, tmp_path)
    queue = max(
        (d for d in (store / "consumequeue").glob("*/*") if d.is_dir()),
        key=lambda d: sum(f.stat().st_size for f in d.iterdir()),
    )
    os.truncate(sorted(queue.iterdir())[-1], 50)
    s = Store(store, load_config(broker_conf(name)))
    ix = s.index_files()[-1]
    os.truncate(ix.path, S.INDEX_HEADER_SIZE + ix.slot_num * S.HASH_SLOT_SIZE + ix.index_count * S.INDEX_ENTRY_SIZE)
    s.close()
    plan = repair(store, name)
    assert {r["action"] for r in plan} >= {"pad"}
    ok("rebuild", "consumequeue", "--store", store, "--broker-config", broker_conf(name), "--no-backup")
    judge(java_oracle, tmp_path, name, store)


# -- clean --apply ----------------------------------------------------------------------------------------------


@BOTH
@pytest.mark.tmpfs
def test_clean_apply_of_expired_files(java_oracle, tmp_path, name):
    """The first half of the commitlog files 100 hours old (fileReservedTime 72), the rest an hour old, on a
    near-empty tmpfs (so age alone decides, not how full this machine's disk is): cleaned with --now, the
    consumequeue and index files below the new minimum go too; RocketMQ starts from the new minimum."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        store = copy_store(name, mnt)
        files = sorted((store / "commitlog").iterdir())
        now = dt.datetime.now()
        for i, f in enumerate(files):  # the copy keeps the fixture's mtimes, which age with it: set them all
            t = (now - dt.timedelta(hours=100 if i < len(files) // 2 else 1)).timestamp()
            os.utime(f, (t, t))
        ok(
            "clean",
            "--store",
            store,
            "--broker-config",
            broker_conf(name),
            "--rocketmq-version",
            str(VERSIONS[name]),
            "--now",
            "--file-reserved-time",
            "72",
            "--until-ok",
            "--apply",
        )
        assert sorted((store / "commitlog").iterdir()) == files[len(files) // 2 :]
        reading = judge(java_oracle, tmp_path, name, store)
        assert reading.summary["minPhyOffset"] == int(files[len(files) // 2].name)


# -- restore ----------------------------------------------------------------------------------------------------


def test_restore_puts_back_what_rebuild_replaced(java_oracle, tmp_path):
    """The last three index files gone, `rebuild index` replaces every index file and keeps the old ones in
    a backup; `restore BACKUP` puts them back in one swap: the store is again what it was before the rebuild,
    byte for byte, and RocketMQ loads it as rmqctl reads it."""
    name = "a-basic"
    store = copy_store(name, tmp_path)
    for p in sorted((store / "index").iterdir())[-3:]:
        p.unlink()
    before = {p.relative_to(store): p.read_bytes() for p in store.rglob("*") if p.is_file() and p.name != "lock"}
    ok("rebuild", "index", "--store", store, "--broker-config", broker_conf(name))
    backups = [p.name for p in store.iterdir() if p.name.startswith(".rmqctl-backup-")]
    assert len(backups) == 1 and len(list((store / "index").iterdir())) == 12
    ok("restore", backups[0], "--store", store, "--broker-config", broker_conf(name), "--no-backup")
    after = {
        p.relative_to(store): p.read_bytes()
        for p in store.rglob("*")
        if p.is_file() and p.name != "lock" and not p.relative_to(store).parts[0].startswith(".rmqctl-backup-")
    }
    assert after == before
    judge(java_oracle, tmp_path, name, store)


# -- config restore ---------------------------------------------------------------------------------------------


def test_config_restore_of_a_cut_delay_offset_file(java_oracle, tmp_path):
    """RocketMQ 4.9.7's load() reads config/delayOffset.json (ScheduleMessageService): after the restore it
    loads the file itself, without falling back to the .bak."""
    store = copy_store("b-mixed", tmp_path)
    config = store / "config" / "delayOffset.json"
    shutil.copyfile(config, config.with_name("delayOffset.json.bak"))
    config.write_bytes(config.read_bytes()[: config.stat().st_size // 2])
    ok("config", "restore", "delayOffset.json", "--store", store, "--broker-config", broker_conf("b-mixed"), "--apply")
    reading = judge(java_oracle, tmp_path, "b-mixed", store)
    loads = [l for l in reading.store_log.splitlines() if "delayOffset.json" in l]
    assert len(loads) == 1 and loads[0].endswith("/config/delayOffset.json OK"), loads
