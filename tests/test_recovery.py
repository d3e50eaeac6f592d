"""Where the broker's normal commitlog recovery starts, written once (recovery.normal_recovery_start) and
read by verify's recovery plan, info's startup estimate and append: checked against what RocketMQ itself
wrote (the fixtures' truth files)."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from conftest import FIXTURES, broker_conf, patch

from rmqctl.config import load_config
from rmqctl.record import Blank, Message
from rmqctl.recovery import (
    CRC_KINDS,
    AcceptedRecords,
    RecoveryChecker,
    normal_recovery_start,
    records_past,
    recovery_start,
)
from rmqctl.store import Store
from rmqctl.views.startup import estimate_startup

PREALLOCATED = {"d-crashed": 1}  # copied while running: the next, all-zero commitlog file too (fixtures README)


def summary(name: str) -> dict:
    return json.loads((FIXTURES / name / "truth-summary.json").read_text())


def truth_files(name: str) -> list[tuple[str, int]]:
    """(name, fileFromOffset) of every commitlog file the broker's next start maps."""
    files = [(f["file"], f["fileFromOffset"]) for f in summary(name)["commitLogFiles"]]
    size = summary(name)["commitLogFiles"][0]["fileSize"]
    for _ in range(PREALLOCATED.get(name, 0)):
        files.append((f"{files[-1][1] + size:020d}", files[-1][1] + size))
    return files


def queues_end(name: str) -> int:
    """maxPhyOffsetOfConsumeQueue as the broker reported it: the largest maxPhysicOffset of its queues."""
    return max(q["maxPhysicOffset"] for q in summary(name)["consumeQueues"])


def expected_start(name: str) -> str:
    """4.9.7's recoverNormally: the third file from the last. 5.3.3's: the newest file after the first whose
    fileFromOffset <= maxPhyOffsetOfConsumeQueue, else the first."""
    files = truth_files(name)
    if summary(name)["rocketmqVersion"].startswith("4."):
        return files[max(len(files) - 3, 0)][0]
    end = queues_end(name)
    return next((files[i][0] for i in range(len(files) - 1, 0, -1) if files[i][1] <= end), files[0][0])


def open_store(name: str) -> Store:
    return Store(FIXTURES / name / "store", load_config(broker_conf(name)))


@pytest.mark.parametrize("name", ["a-basic", "d-crashed", "b-mixed", "c-v5-features"])
def test_normal_recovery_starts_where_the_broker_starts(name):
    store = open_store(name)
    files = store.commitlog.files
    assert [f.name for f in files] == [n for n, _ in truth_files(name)]
    start = normal_recovery_start(store, lambda: queues_end(name))
    assert files[start].name == expected_start(name)


def test_5x_starts_past_the_third_file_from_the_last_when_the_queues_reach_further():
    """The two versions' rules differ on c-v5-features: the test above would not notice a 4.9 rule there."""
    files = truth_files("c-v5-features")
    assert expected_start("c-v5-features") != files[len(files) - 3][0]


@pytest.mark.parametrize("name", ["a-basic", "b-mixed", "c-v5-features"])
def test_the_startup_estimate_scans_from_the_same_file(name):
    """info's estimate finds the queues' end in the store itself; with no abort file it names the same file."""
    store = open_store(name)
    assert not store.crashed()
    assert estimate_startup(store).firstFile == expected_start(name)


@pytest.mark.parametrize("name", ["a-basic", "b-mixed", "c-v5-features", "j-batchcq", "k-combine-cq", "i-rocksdb-cq"])
def test_the_startup_estimate_dispatches_what_rocketmq_had_left_to_dispatch(name):
    """Bytes dispatched again at the next start: none where RocketMQ's own load found nothing behind
    (dispatchBehindBytes). On j-batchcq the queues' end is the start of the last record (a BatchCQ unit names
    its record): 5.x dispatches only the records past it, so its record is not counted."""
    store = open_store(name)
    try:
        assert estimate_startup(store).dispatchBytes == summary(name)["dispatchBehindBytes"] == 0
    finally:
        store.close()


def record_by_record(store: Store, checker_of, past_crc: bool) -> tuple[list[int], list[tuple]]:
    """The reference's walk: checker.check at each record, as the broker's loop steps (past_crc: as repair
    checks the files before the recovery's, going on after a CRC failure and at the next file after others)."""
    files = store.commitlog.files
    accepted, failures = [], []
    for i in range(len(files)):
        f, pos = files[i], 0
        while True:  # (the broker's loop reads on at a file's end: no BLANK there is a failure)
            rec, bad = checker_of(i).check(f, pos)
            if bad is not None:
                failures.append((i, pos, bad.kind, bad.detail))
                if not past_crc:
                    return accepted, failures
                if bad.kind not in CRC_KINDS:
                    break
            if isinstance(rec, Blank):
                break
            accepted.append(f.start + pos)
            pos += rec.storeSize
    return accepted, failures


def engine_walk(store: Store, checker_of, past_crc: bool) -> tuple[list[int], list[tuple]]:
    accepted, failures = [], []
    for i, chunk, bad in AcceptedRecords(store, 0, checker_of, past_crc=past_crc).walk():
        if chunk is not None:
            accepted += (chunk.column("position") + chunk.file.start).tolist()
        if bad is not None:
            failures.append((i, bad.position, bad.kind, bad.detail))
    return accepted, failures


DAMAGE = [
    b"\x00",  # a body or header byte changed: a CRC, a length, a magic
    b"\xff\xff\xff\xff",
    bytes(64),  # a zeroed region
    b"\xda\xa3\x20\xa7",  # MESSAGE_MAGIC_CODE_V2 where a 4.x record's magic was
]


@pytest.mark.parametrize("name", ["a-basic", "b-mixed", "c-v5-features", "d-crashed"])
def test_the_compiled_recovery_walk_stops_where_the_reference_stops(name, store_copy):
    """AcceptedRecords (the engine decides, the reference settles what it cannot) against checkMessageAndReturnSize
    record by record, on damaged copies, with and without CRC checks, the property CRC and 5.5.0's position rule."""
    rng = random.Random(f"recovery-walk-{name}")
    root = store_copy(name)
    conf = load_config(broker_conf(name))
    files = sorted((root / "commitlog").iterdir())
    stops = []
    for trial in range(12):
        path = rng.choice(files)
        data = path.read_bytes()
        used = len(data.rstrip(b"\x00")) or 1
        at = rng.randrange(used)
        if trial % 4 == 3:  # at a record's magic: V2 for a 4.x reader, garbage for any
            store = Store(root, conf)
            heads = [c.file.start + int(p) for c in store.scan().chunks() for p in c.column("position")]
            store.close()
            f_start = int(path.name)
            at = rng.choice([h - f_start + 4 for h in heads if f_start <= h < f_start + len(data)] or [at])
        patch(path, at, rng.choice(DAMAGE))
        for crc, prop_crc, position in [(True, False, False), (False, False, False), (True, True, True)]:
            store = Store(root, conf)
            checker = RecoveryChecker(store)
            checker.crc, checker.prop_crc, checker.position = crc, prop_crc and checker.v2, position
            lenient = RecoveryChecker(store)
            lenient.crc = False
            start = len(store.commitlog.files) // 2
            checker_of = lambda i: checker if i >= start else lenient  # noqa: E731
            for past_crc in (False, True):
                want = record_by_record(store, checker_of, past_crc)
                assert engine_walk(store, checker_of, past_crc) == want, (path.name, at, crc, prop_crc, position)
                stops += want[1]
            store.close()
        path.write_bytes(data)  # the next trial damages the fixture afresh
    # the damage made the walks stop, and at kinds the engine settles alone as well as at the reference's
    assert {"body-crc", "illegal-magic"} <= {stop[2] for stop in stops} or name == "c-v5-features", stops


def past_record_by_record(store: Store, checker: RecoveryChecker, cut: int) -> list:
    """The reference: every record past the cut as read_record reads it, each file up to its first torn one."""
    out = []
    size = store.commitlog.file_size
    for f in store.commitlog.files:
        if f.start + size <= cut:
            continue
        pos = max(0, cut - f.start)
        while pos < min(len(f.buf), size):
            rec, bad = checker.check(f, pos)
            if isinstance(rec, Blank) or (rec is None and bad.kind == "zeroed-region"):
                break
            out.append((f.start + pos, rec if rec is not None else bad))
            if rec is None:
                break
            pos += rec.storeSize
    return out


def _summary(r):
    if isinstance(r, Message):
        return ("message", r.topic, r.queueId, r.queueOffset, r.storeSize)
    return ("torn", r.kind, r.detail, r.queueId)


@pytest.mark.parametrize("name", ["a-basic", "b-mixed", "c-v5-features"])
def test_what_lies_past_a_cut_is_counted_as_the_reference_reads_it(name, store_copy):
    rng = random.Random(f"past-{name}")
    root = store_copy(name)
    conf = load_config(broker_conf(name))
    store = Store(root, conf)
    starts = [c.file.start + int(p) for c in store.scan().chunks() for p in c.column("position")]
    store.close()
    for trial in range(6):
        cut = rng.choice(starts)
        damaged = rng.choice([s for s in starts if s > cut] or [cut])
        size = conf.mappedFileSizeCommitLog
        path = root / "commitlog" / f"{damaged - damaged % size:020d}"
        data = path.read_bytes()
        if trial % 2:
            patch(path, damaged % size + 4, b"\0\0\0\0")  # a torn record past the cut
        store = Store(root, conf)
        checker = RecoveryChecker(store, abnormal=True)
        want = past_record_by_record(store, checker, cut)
        got = records_past(store, checker, cut, lambda offset, own: own or "unknown")
        assert got.count == len(want)
        assert got.by_queue == Counter(
            f"{r.topic}/{r.queueId}" if isinstance(r, Message) else "unknown" for _, r in want
        )
        assert [(o, _summary(r)) for o, r in got.first] == [(o, _summary(r)) for o, r in want[:20]]
        store.close()
        path.write_bytes(data)  # (the cut is where a walk from its file's start stops: no damage before it)


def _with_bad_first_crc(store_copy, name: str, file_index: int):
    """A copy of `name` whose commitlog file `file_index` starts with a record failing its body CRC (the
    store's record is otherwise sound, its magic too), and its broker.conf."""
    root = store_copy(name)
    first = sorted((root / "commitlog").iterdir())[file_index]
    crc = int.from_bytes(first.read_bytes()[8:12], "big")
    patch(first, 8, ((crc + 1) & 0xFFFFFFFF).to_bytes(4, "big"))
    return root, broker_conf(name)


@pytest.mark.parametrize("version,start", [("5", 3), ("5.5", 2)])
def test_5_4_normal_recovery_does_not_start_at_a_file_whose_first_record_fails(store_copy, version, start):
    """5.4+'s isMappedFileMatchedRecover(mappedFile, true) runs checkMessageAndReturnSize on the file's first
    record (apache/rocketmq 86e8ed630b); 5.3.3's compares only the file's start with the queues' end."""
    root, conf = _with_bad_first_crc(store_copy, "c-v5-features", 3)
    store = Store(root, load_config(conf, rocketmqVersion=version))
    assert normal_recovery_start(store, lambda: queues_end("c-v5-features")) == start


@pytest.mark.parametrize("version,start", [("5", 3), ("5.5", 2)])
def test_5_4_abnormal_recovery_does_not_start_at_a_file_whose_first_record_fails(store_copy, version, start):
    """The same first-record check in recoverAbnormally's choice; 5.3.3 reads only the magic and store time.
    The checkpoint's times are moved past every record, so the newest sound file matches."""
    root, conf = _with_bad_first_crc(store_copy, "c-v5-features", 3)
    patch(root / "checkpoint", 0, (1 << 62).to_bytes(8, "big") * 2)
    store = Store(root, load_config(conf, rocketmqVersion=version))
    assert recovery_start(store) == start


def test_5_4_normal_recovery_start_waits_for_a_safe_index(store_copy):
    """With messageIndexSafe, 5.4+'s normal recovery also wants the first record not newer than the
    checkpoint's indexMsgTimestamp; 5.3.3 ignores it there."""
    root = store_copy("c-v5-features")
    patch(root / "checkpoint", 16, (0).to_bytes(8, "big"))
    conf = broker_conf("c-v5-features")
    for version, start in (("5", 3), ("5.5", 0)):
        store = Store(root, load_config(conf, rocketmqVersion=version, messageIndexSafe=True))
        assert normal_recovery_start(store, lambda: queues_end("c-v5-features")) == start


def test_abnormal_recovery_on_a_rocksdb_queue_starts_by_its_dispatch_checkpoint(store_copy):
    """On a RocksDB consume queue isMappedFileMatchedRecover compares the first record's offset with the queue's
    max physical offset (5.3.3: CommitLog's isEnableRocksDBStore branch; 5.4+: RocksDBConsumeQueueStore's), not
    store times: on i-rocksdb-cq (logicsMsgTimestamp 0) the time rule would fall back to the first file, the
    offset rule takes the newest file starting at or before the checkpoint (RocketMQ 5.3.3's log: "recover from
    this mapped file .../00000000000000327680")."""
    root = store_copy("i-rocksdb-cq")
    (root / "abort").write_text("4242")
    conf = broker_conf("i-rocksdb-cq")
    for version, start in (("5", 5), ("5.5", 5)):
        store = Store(root, load_config(conf, rocketmqVersion=version))
        assert store.rocks_queues.checkpoint >= store.commitlog.files[5].start
        assert recovery_start(store) == start
