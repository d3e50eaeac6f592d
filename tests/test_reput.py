"""Where the broker's dispatch resumes at its next start, written once (recovery.recovered_queues_end and
first_redispatched) and read by append and verify: every queue of the fixtures against the maxPhysicOffset
RocketMQ itself reported, and stores where the formulations it replaces were wrong (each file's last unit, every
file read, pre-blank units skipped, a record at the queues' end dispatched again), each against what RocketMQ
4.9.7 / 5.3.3 dispatches when it loads them (read4.sh / read5.sh: tests/oracle.py)."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, broker_conf, copy_store, one_line_error, patch, run, truth
from test_rocksdbcq import CRASH_CUT, crash_at, rewrite

from rmqctl import schema as S
from rmqctl.config import load_config
from rmqctl.recovery import first_redispatched, recovered_queues_end
from rmqctl.store import Store
from rmqctl.views.startup import estimate_startup

PRE_BLANK = S.CQ_UNIT.pack(0, S.PRE_BLANK_SIZE, 0)
# a record a queue already holds, as the broker logs it when dispatch reaches it again (ConsumeQueue and
# BatchConsumeQueue.putMessagePositionInfo)
REPEATED = re.compile(
    r"repeatedly,? maxPhysicOffset=\d+ phyOffset=(\d+)|repeatedly, maxMsgPhyOffsetInCommitLog:\d+ offset:(\d+)"
)


def summary(name: str) -> dict:
    return json.loads((FIXTURES / name / "truth-summary.json").read_text())


def open_store(store_dir: Path, name: str) -> Store:
    return Store(store_dir, load_config(broker_conf(name)))


@pytest.mark.parametrize("name", ["a-basic", "b-mixed", "c-v5-features", "j-batchcq", "k-combine-cq"])
def test_every_queue_ends_where_the_broker_said(name):
    """Each file queue's (and BatchCQ queue's) maxPhysicOffset is the one RocketMQ reported for it, and the
    store's end the greatest of them."""
    said = {(q["topic"], q["queueId"]): q["maxPhysicOffset"] for q in summary(name)["consumeQueues"]}
    ends = recovered_queues_end(open_store(FIXTURES / name / "store", name))
    got = {(q.name.rsplit("/", 1)[0], int(q.name.rsplit("/", 1)[1])): q.max_phy for q in ends.queues}
    assert got and got == {k: said[k] for k in got}
    assert ends.max_phy == max(said.values())


def test_a_rocksdb_consume_queue_ends_at_its_checkpoint():
    checkpoint = summary("i-rocksdb-cq")["rocksdbMaxPhyOffsetInConsumeQueue (offset CF key CHECKPOINT_TOPIC)"]
    ends = recovered_queues_end(open_store(FIXTURES / "i-rocksdb-cq" / "store", "i-rocksdb-cq"))
    assert (ends.max_phy, ends.holder, ends.queues) == (checkpoint, None, ())


# -- stores the broker recovers differently from "every file's last unit" ---------------------------------------


def cq_file(store: Path, queue: str, first_unit: int, size: int) -> Path:
    return store / "consumequeue" / queue / f"{first_unit * S.CQ_UNIT_SIZE // size * size:020d}"


def zero_unit(store: Path, queue: str, unit: int, size: int, unit_size: int = S.CQ_UNIT_SIZE, kind="consumequeue"):
    """Zero the unit with this index (a queue offset for a consumequeue) of a copied store's queue."""
    path = store / kind / queue / f"{unit * unit_size // size * size:020d}"
    patch(path, unit * unit_size % size, bytes(unit_size))


def older_unit_zeroed(store: Path):
    """OrderTopic/1 (which holds the last record) loses a unit in its second-last file: its recovery stops there
    and drops its last file, so the queues end where the next queue's last record ends."""
    zero_unit(store, "OrderTopic/1", 94, 1280)


def hole_in_last_file(store: Path):
    """A unit zeroed in OrderTopic/1's last file with valid units after it (verify read the last of them)."""
    zero_unit(store, "OrderTopic/1", 155, 1280)


def pre_blank_last(store: Path):
    """A queue whose last written units are pre-blank (fillPreBlank, then a crash): maxPhysicOffset 0 +
    Integer.MAX_VALUE, so the reput starts past the commitlog and OrderTopic/1's missing last unit stays missing."""
    (store / "consumequeue" / "OrderTopic" / "7").mkdir()
    (store / "consumequeue" / "OrderTopic" / "7" / f"{0:020d}").write_bytes(PRE_BLANK * 3 + bytes(1280 - 60))
    zero_unit(store, "OrderTopic/1", 159, 1280)


def empty_last_file(store: Path):
    """A queue whose full first file is followed by an all-zero one: recover ends it at its last unit (the
    commitlog's end), but truncateDirtyLogicFiles keeps a (0, 0) unit of the empty file (maxPhysicOffset 0), so the
    reput starts at the next queue's end and OrderTopic/1's missing last unit is dispatched again."""
    last = cq_file(store, "OrderTopic/1", 159, 1280).read_bytes()
    before = (store / "consumequeue" / "OrderTopic" / "1" / f"{1280:020d}").read_bytes()
    queue = store / "consumequeue" / "OrderTopic" / "9"
    queue.mkdir()
    (queue / f"{0:020d}").write_bytes((before + last)[32 * 20 : 96 * 20])  # units 96..159: full, ending at the end
    (queue / f"{1280:020d}").write_bytes(bytes(1280))
    zero_unit(store, "OrderTopic/1", 159, 1280)


def two_queues_behind(store: Path):
    """5.x: TopicV5/2 and TopicV5/3 each lose their last unit; the queues end at TopicV5/2's lost record, which
    recoverNormally does not dispatch (only records past dispatchFromPhyOffset), but TopicV5/3's after it."""
    zero_unit(store, "TopicV5/2", 90, 640)
    zero_unit(store, "TopicV5/3", 90, 640)


def batch_file_damaged(store: Path):
    """A unit zeroed in the first of BatchTopic/0's seven files, a file its recovery (from the third-last) never
    reads: the queues still end at its last record, and nothing is dispatched again."""
    zero_unit(store, "BatchTopic/0", 3, 1472, S.BCQ_UNIT_SIZE, "batchconsumequeue")


def replaced_formulations(store: Path) -> tuple[int, int]:
    """Where the queues ended by the two formulations the rule replaced, over every file of every queue: append's
    (each file's last unit before its first invalid one) and verify's (each file's last valid unit, past holes), both
    skipping pre-blank units; with each BatchCQ queue's last unit, its files walked from the first."""
    ends = [-1, -1]
    for path in (store / "consumequeue").glob("*/*/*"):
        units = [S.CQ_UNIT.unpack_from(path.read_bytes(), pos)[:2] for pos in range(0, path.stat().st_size, 20)]
        valid = [off >= 0 and size > 0 for off, size in units]
        first_invalid = valid.index(False) if False in valid else len(units)
        for k, upto in enumerate((first_invalid, len(units))):
            real = [off + size for (off, size), ok in zip(units[:upto], valid) if ok and size != S.PRE_BLANK_SIZE]
            ends[k] = max([ends[k], *real[-1:]])
    for queue in (store / "batchconsumequeue").glob("*/*"):
        for path in sorted(queue.iterdir()):
            data = path.read_bytes()
            units = [struct.unpack_from(">qiqqqh", data, pos) for pos in range(0, len(data), S.BCQ_UNIT_SIZE)]
            written = next(
                (i for i, u in enumerate(units) if not (u[0] >= 0 and u[1] > 0 and u[4] >= 0 and u[5] > 0)), len(units)
            )
            if written:
                ends = [max(e, units[written - 1][0]) for e in ends]
            if written < len(units):
                break
    return ends[0], ends[1]


def units_on_disk(store: Path) -> set[tuple[str, int, int, int]]:
    """(topic, queueId, queue offset, commitLogOffset) of every unit in the files, read from the bytes (a BatchCQ
    unit's queue offset: its msgBaseOffset)."""
    out = set()
    for kind, unit in (("consumequeue", S.CQ_UNIT_SIZE), ("batchconsumequeue", S.BCQ_UNIT_SIZE)):
        for path in (store / kind).glob("*/*/*"):
            data = path.read_bytes()
            for pos in range(0, len(data) - unit + 1, unit):
                off, size = struct.unpack_from(">qi", data, pos)
                qoff = (
                    (int(path.name) + pos) // unit
                    if unit == S.CQ_UNIT_SIZE
                    else struct.unpack_from(">q", data, pos + 28)[0]
                )
                if size > 0:
                    out.add((path.parent.parent.name, int(path.parent.name), qoff, off))
    return out


def first_dispatched_by_rocketmq(oracle: Path, version: int, store: Path, conf: Path, out: Path) -> int | None:
    """The first commitlog offset RocketMQ dispatched when it loaded the store (read4.sh / read5.sh: load(), then
    the reput of start()): a unit it added, or a record it found its queue already held ("... repeatedly" in its
    log); None when it dispatched nothing."""
    before = units_on_disk(store)
    subprocess.run([str(oracle / f"read{version}.sh"), str(store), str(conf), str(out)], capture_output=True)
    result = json.loads((out / "recovered-summary.json").read_text())
    assert result["loadReturned"] and result["dispatched"], result
    lines = [json.loads(line) for line in (out / "messages-read.jsonl").read_text().splitlines()]
    added = [
        l["commitLogOffset"]
        for l in lines
        if l["size"] > 0 and (l["topic"], l["queueId"], l["queueOffset"], l["commitLogOffset"]) not in before
    ]
    repeated = [int(a or b) for a, b in REPEATED.findall((out / "store.log").read_text(errors="replace"))]
    return min(added + repeated, default=None)


def first_record_from(name: str, offset: int) -> int | None:
    return next(
        (m["commitLogOffset"] for m in truth(name, "truth-messages.jsonl") if m["commitLogOffset"] >= offset), None
    )


def recheck_conf(name: str, tmp_path: Path) -> Path:
    """The fixture's broker.conf with recheckReputOffsetFromCq=true (5.x: start() reputs again from the queues'
    greatest maxPhysicOffset, which recoverNormally's dispatch has already moved to the commitlog's end)."""
    conf = tmp_path / "recheck.conf"
    conf.write_text(broker_conf(name).read_text() + "\nrecheckReputOffsetFromCq=true\n")
    return conf


CASES = {
    # name: (fixture, RocketMQ version, change, the first record RocketMQ dispatches again[, broker.conf])
    "an older file's unit zeroed": ("a-basic", 4, older_unit_zeroed, 2578559),
    "units past a hole": ("a-basic", 4, hole_in_last_file, 2578559),
    "a pre-blank last unit": ("a-basic", 4, pre_blank_last, None),
    "an empty last file": ("a-basic", 4, empty_last_file, 2578559),
    "5.x: not the record at the end": ("c-v5-features", 5, two_queues_behind, 451496),
    "a BatchCQ file recovery never reads": ("j-batchcq", 5, batch_file_damaged, None),
    # start()'s doRecheckReputOffsetFromCq reads the queues' max after recovery has dispatched to the end
    "5.x recheckReputOffsetFromCq: still not the record at the end": (
        "c-v5-features",
        5,
        two_queues_behind,
        451496,
        recheck_conf,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_dispatch_resumes_where_rocketmq_resumes_it(case, tmp_path, java_oracle):
    """rmqctl's rule, RocketMQ's own load and reput, and the number each test case was built for agree, and the
    replaced formulation (each file's last unit, the record there included) does not."""
    name, version, change, expected, *conf = CASES[case]
    conf = conf[0](name, tmp_path) if conf else broker_conf(name)
    store = copy_store(name, tmp_path)
    change(store)
    s = Store(store, load_config(conf))
    ends = recovered_queues_end(s)
    end = summary(name)["maxPhyOffset"]
    predicted = first_record_from(name, first_redispatched(s, ends, end))
    s.close()
    seen = first_dispatched_by_rocketmq(java_oracle, version, store, conf, tmp_path / "read")
    assert seen == predicted == expected
    assert {first_record_from(name, max(old, 0)) for old in replaced_formulations(store)} != {expected}


# -- what append and verify make of it ----------------------------------------------------------------------------


def test_append_refuses_a_queue_whose_recovery_drops_units(store_copy):
    """The broker's recovery would truncate OrderTopic/1 at the zeroed unit (its last file deleted): append
    refuses rather than write on top of it."""
    store = store_copy("a-basic")
    older_unit_zeroed(store)
    line = one_line_error(run("append", "--store", store, "--broker-config", broker_conf("a-basic"), "--topic", "T"))
    assert line == (
        f"rmqctl: position 600 in {store}/consumequeue/OrderTopic/1/00000000000000001280: consumequeue OrderTopic/1: "
        "the broker's recovery stops here (a unit that is not valid) and drops the units after it; run "
        "`rmqctl verify`, then `rmqctl rebuild consumequeue`, before appending"
    )


def test_append_refuses_a_pre_blank_queue_end(store_copy):
    store = store_copy("a-basic")
    (store / "consumequeue" / "OrderTopic" / "7").mkdir()
    (store / "consumequeue" / "OrderTopic" / "7" / f"{0:020d}").write_bytes(PRE_BLANK * 3 + bytes(1280 - 60))
    line = one_line_error(run("append", "--store", store, "--broker-config", broker_conf("a-basic"), "--topic", "T"))
    assert line == (
        f"rmqctl: position 40 in {store}/consumequeue/OrderTopic/7/00000000000000000000: consumequeue OrderTopic/7 "
        "reaches commitlog offset 2147483647, past the commitlog's end 2580536; run `rmqctl repair` first"
    )


def test_verify_tells_the_record_at_the_queues_end_apart_on_5x(store_copy):
    """5.x's recovery dispatches only past the queues' end: TopicV5/2's lost record (at the end) is never
    dispatched again, TopicV5/3's (after it) is."""
    store = store_copy("c-v5-features")
    two_queues_behind(store)
    res = run("verify", "--store", store, "--broker-config", broker_conf("c-v5-features"), "--format", "jsonl")
    missing = [json.loads(l) for l in res.stdout.splitlines() if '"cq-missing-entries"' in l]
    assert sorted((f["severity"], f["commitLogOffset"]) for f in missing) == [("error", 450382), ("warning", 451496)]


def test_the_startup_estimate_counts_what_5x_dispatches_again(store_copy):
    """info's estimate of the bytes dispatched again: from 451496, the first record RocketMQ dispatches again
    (the case above), to the commitlog's end; not from the lost record at the queues' end."""
    store = store_copy("c-v5-features")
    two_queues_behind(store)
    s = open_store(store, "c-v5-features")
    try:
        assert estimate_startup(s).dispatchBytes == summary("c-v5-features")["maxPhyOffset"] - 451496
    finally:
        s.close()


@pytest.mark.parametrize("checkpoint, lost", [(CRASH_CUT, True), (CRASH_CUT - 1, False)])
def test_a_rocksdb_queue_behind_loses_the_record_at_its_checkpoint(checkpoint, lost, tmp_path, java_oracle):
    """RocketMQ 5.3.3 loading a RocksDB queue left behind by a crash, without its abort file: the record at the
    checkpoint (where the broker writes it: the end of the last record dispatched) is not dispatched again, and
    reading its queue meets the hole; a checkpoint a byte before it, and every unit is there again."""
    root = copy_store("i-rocksdb-cq", tmp_path)
    rewrite(root, crash_at(CRASH_CUT, checkpoint))
    s = open_store(root, "i-rocksdb-cq")
    assert (first_redispatched(s, recovered_queues_end(s), 360649) > CRASH_CUT) == lost
    s.close()
    out = tmp_path / "read"
    subprocess.run(
        [str(java_oracle / "read5.sh"), str(root), str(broker_conf("i-rocksdb-cq")), str(out)], capture_output=True
    )
    result = json.loads((out / "recovered-summary.json").read_text())
    lines = [json.loads(line) for line in (out / "messages-read.jsonl").read_text().splitlines()]
    if lost:  # (its unit at queue offset 38 missing below the queue's max: RocketMQ's own iterator returns null)
        assert "CqUnit" in result["error"] and [(l["topic"], l["queueId"], l["queueOffset"]) for l in lines[-1:]] == [
            ("Rocks-Bench-3", 1, 37)
        ]
    else:
        assert "error" not in result and result["messagesRead"]["lines"] == 653


def test_append_refuses_a_batchcq_unit_at_the_commitlogs_end(store_copy):
    """A BatchCQ unit names its record's start: one at the commitlog's end names no record (5.3.3's recovery
    truncates it away); appending there would give BatchTopic's consumers the new record."""
    store = store_copy("j-batchcq")
    patch(store / "commitlog" / f"{393216:020d}", 482208 - 393216, bytes(484))  # the last record, lost
    shutil.rmtree(store / "index")
    conf = broker_conf("j-batchcq")
    line = one_line_error(run("append", "--store", store, "--broker-config", conf, "--topic", "PlainTopic"))
    assert "consumequeue BatchTopic/0 reaches commitlog offset 482208, at or past the commitlog's end 482208" in line


def test_append_lets_each_queue_file_go(store_copy):
    """append's check of every queue's recovery keeps no file mapped: a store of more queues than the process
    may open files is appended to."""
    store = store_copy("a-basic")
    first = truth("a-basic", "truth-messages.jsonl")[0]
    unit = S.CQ_UNIT.pack(first["commitLogOffset"], first["storeSize"], 0)
    for q in range(300):
        (store / "consumequeue" / "ManyQ" / str(q)).mkdir(parents=True)
        (store / "consumequeue" / "ManyQ" / str(q) / f"{0:020d}").write_bytes(unit + bytes(1280 - len(unit)))
    res = subprocess.run(
        ["sh", "-c", 'ulimit -n 200 && exec "$0" -m rmqctl append "$@"', sys.executable, "--store", store,
         "--broker-config", broker_conf("a-basic"), "--topic", "TopicTest", "--body", "x", "--dry-run"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr


def test_verify_after_a_5x_crash_counts_only_the_start_file_on(store_copy):
    """5.3.3's recoverAbnormally dispatches every record from its start file and the reput then starts at the
    commitlog's end: units lost before that file are never written again (read5.sh: the 121 units of
    [262144, 391573] stay missing), those from it on are. 4.9 would also reput from the queues' end."""
    store = store_copy("c-v5-features")
    for u in truth("c-v5-features", "truth-consumequeue.jsonl"):
        if u["commitLogOffset"] >= 262144:
            name = f"{u['queueOffset'] // 32 * 640:020d}"
            patch(store / "consumequeue" / u["topic"] / str(u["queueId"]) / name, u["queueOffset"] % 32 * 20, bytes(20))
    checkpoint = bytearray((store / "checkpoint").read_bytes())
    struct.pack_into(">qq", checkpoint, 0, 1795314260003, 1795314260003)  # recovery starts at file 393216
    (store / "checkpoint").write_bytes(bytes(checkpoint))
    (store / "abort").touch()
    res = run("verify", "--store", store, "--broker-config", broker_conf("c-v5-features"), "--format", "jsonl")
    missing = [json.loads(l) for l in res.stdout.splitlines() if '"cq-missing-entries"' in l]
    assert missing and {m["severity"] for m in missing} == {"error", "warning"}
    assert all((m["severity"] == "error") == (m["commitLogOffset"] < 393216) for m in missing)
