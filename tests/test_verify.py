"""verify: clean fixtures are sound, d-crashed shows exactly its two corruptions (and their consequences),
and every kind of damage injected into a copy of a fixture is found as the right finding."""

from __future__ import annotations

import dataclasses
import json
import mmap
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import (
    CLEAN_FIXTURES,
    FIXTURES,
    broker_conf,
    held_lock,
    copy_store,
    index_entry_at,
    jsonl,
    patch,
    run,
    truth,
)
from rmqctl import schema as S
from rmqctl.config import BrokerConfig, load_config
from rmqctl.dispatch import index_key_hash, index_keys, tags_code
from rmqctl.checks import commitlog as verify_commitlog
from rmqctl.checks.verify import verify
from rmqctl.javacompat import crc31, crc_digits
from rmqctl.checks.scan import Task, scan_chunk
from rmqctl.record import Message, encode_record, read_record
from rmqctl import store as store_module
from rmqctl.store import MADV_POPULATE_READ, PAGER, Store


def open_store(name: str, root: Path | None = None) -> Store:
    return Store(root or FIXTURES / name / "store", load_config(broker_conf(name)))


def findings(name: str, root: Path, *args) -> tuple[int, list[dict]]:
    r = run("verify", "--store", root, "--broker-config", broker_conf(name), "--format", "jsonl", "--jobs", "1", *args)
    return r.exit_code, jsonl(r.stdout)


def kinds(found: list[dict]) -> set[str]:
    return {f["kind"] for f in found}


def messages(store: Store):
    """(file, message, commitlog offset) of every record, read with the reference decoder."""
    return [(f, m, f.start + m.position) for f, m in store.scan().records()]


def flip(path: Path, pos: int):
    with open(path, "r+b") as fh:
        fh.seek(pos)
        b = fh.read(1)
        fh.seek(pos)
        fh.write(bytes([b[0] ^ 0xFF]))


# -- the fixtures as they are ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CLEAN_FIXTURES)
@pytest.mark.parametrize("extra", [(), ("--deep",), ("--jobs", "2")])
def test_clean_fixture_is_sound(name, extra):
    r = run(
        "verify",
        "--store",
        FIXTURES / name / "store",
        "--broker-config",
        broker_conf(name),
        "--format",
        "jsonl",
        *extra,
    )
    assert r.exit_code == 0, r.stdout
    assert jsonl(r.stdout) == []
    assert re.fullmatch(r"verify: \d+ records, [\d.]+ MB of commitlog in [\d.]+ s \(\d job\(s\)\): sound\n", r.stderr)


def test_d_crashed_reports_both_corruptions_and_only_their_consequences():
    corruption = json.loads((FIXTURES / "d-crashed" / "corruption.json").read_text())
    torn, flipped = corruption["tornTail"], corruption["flippedBodyByte"]
    code, found = findings("d-crashed", FIXTURES / "d-crashed" / "store")
    assert code == 1
    by_kind = {f["kind"]: f for f in found}
    assert by_kind["body-crc"]["commitLogOffset"] == flipped["messageCommitLogOffset"]
    assert by_kind["body-crc"]["file"] == flipped["file"]
    # RocketMQ's abnormal recovery starts after the first file: the damage there stays
    assert "does not re-check this file" in by_kind["body-crc"]["detail"]
    tail = by_kind["torn-tail"]
    assert tail["commitLogOffset"] == torn["messageCommitLogOffset"] and tail["file"] == torn["file"]
    assert tail["detail"].startswith(
        f"{torn['zeroedFromCommitLogOffset'] - torn['messageCommitLogOffset']} invalid bytes "
        f"at commitlog offset {torn['messageCommitLogOffset']}"
    )
    assert "truncates the commitlog at 782999" in tail["detail"]
    info = by_kind["abnormal-recovery"]
    assert info["severity"] == "info" and "00000000000000655360" in info["detail"]
    for f in found:
        if f["kind"] in ("body-crc", "torn-tail", "abnormal-recovery"):
            continue
        # everything else points at the torn record and says it is a consequence of it
        assert f["commitLogOffset"] == torn["messageCommitLogOffset"], f
        assert "a direct consequence of the torn-tail at 782999" in f["detail"], f
    assert kinds(found) == {"body-crc", "torn-tail", "abnormal-recovery", "cq-entry-past-end", "index-entry-past-end"}


def test_library_result_and_jsonl_shape():
    result = verify(open_store("d-crashed"), jobs=1)
    assert result.exit_code == 1 and not result.truncated
    assert result.stats["records"] == len(truth("d-crashed", "truth-recovered-messages.jsonl"))  # the torn one gone
    code, found = findings("d-crashed", FIXTURES / "d-crashed" / "store")
    assert [f.to_dict() for f in result.findings] == found
    for f in found:
        assert set(f) == {"kind", "severity", "file", "position", "commitLogOffset", "detail"}
        assert f["severity"] in ("error", "warning", "info")


# -- the fast path against the reference rules -----------------------------------------------------------------


@pytest.mark.parametrize("name", CLEAN_FIXTURES + ["d-crashed"])
def test_scanner_dispatch_data_equals_reference_rules(name):
    """topic, tagsCode and index key hashes of every record, vectorised, equal rmqctl.dispatch's answer."""
    store = open_store(name)
    cfg = store.config
    want = {
        off: (m.topic, tags_code(m, cfg), sorted(index_key_hash(k) for k in index_keys(m)))
        for f, m, off in messages(store)
    }
    got = {}
    size = store.commitlog.file_size
    for f in store.commitlog.files:
        r = scan_chunk(Task(str(f.path), f.name, f.start, size, 0, True, 0, size, cfg))
        keys = {}
        for i, h in zip(r.key_record.tolist(), r.key_hash.tolist()):
            keys.setdefault(i, []).append(h)
        for i, p in enumerate(r.pos.tolist()):
            got[f.start + p] = (r.topics[r.topic[i]], int(r.tags[i]), sorted(keys.get(i, [])))
    assert got == want


@pytest.mark.parametrize("name", ["a-basic", "d-crashed"])
def test_small_chunks_find_the_same(name, monkeypatch):
    """Chunks that start mid-file find the record starts themselves; the result does not change."""
    whole = verify(open_store(name), jobs=1)
    monkeypatch.setattr(verify_commitlog, "CHUNK", 4096)
    for jobs in (1, 2):
        split = verify(open_store(name), jobs=jobs)
        assert [f.to_dict() for f in split.findings] == [f.to_dict() for f in whole.findings]
        assert split.stats["records"] == whole.stats["records"]


# -- injected damage --------------------------------------------------------------------------------------------


def test_flipped_body_byte(store_copy):
    root = store_copy("a-basic")
    f, m, off = messages(open_store("a-basic", root))[700]
    body_at = m.position + S.RECORD_HEADS[(False, False)][0].size
    flip(f.path, body_at + 5)
    code, found = findings("a-basic", root)
    assert code == 1
    assert [(x["kind"], x["commitLogOffset"]) for x in found] == [("body-crc", off)]
    assert found[0]["position"] == m.position


def test_flipped_physical_offset_byte_the_body_crc_cannot_see(store_copy):
    root = store_copy("a-basic")
    f, m, off = messages(open_store("a-basic", root))[321]
    flip(f.path, m.position + 28 + 6)  # PHYSICALOFFSET
    code, found = findings("a-basic", root)
    assert code == 1
    assert [(x["kind"], x["commitLogOffset"]) for x in found] == [("physical-offset", off)]


def test_duplicated_queue_offset(store_copy):
    root = store_copy("a-basic")
    recs = messages(open_store("a-basic", root))
    first = recs[100]
    same_queue = [r for r in recs[101:] if (r[1].topic, r[1].queueId) == (first[1].topic, first[1].queueId)]
    f, m, off = same_queue[0]
    patch(f.path, m.position + 20, S.INT64.pack(first[1].queueOffset))
    code, found = findings("a-basic", root)
    assert code == 1
    qo = [x for x in found if x["kind"] == "queue-offset"]
    assert len(qo) == 1 and qo[0]["commitLogOffset"] == off and "duplicate" in qo[0]["detail"]
    # the consumequeue entry that still points at the record now disagrees with it, and says why
    assert {x["kind"] for x in found} == {"queue-offset", "cq-entry-mismatch"}
    assert all("queue-offset finding" in x["detail"] for x in found if x["kind"] == "cq-entry-mismatch")


def test_property_crc_mismatch_on_v5_store(store_copy):
    root = store_copy("c-v5-features")
    f, m, off = messages(open_store("c-v5-features", root))[40]
    flip(f.path, m.position + 16)  # FLAG: covered by the property CRC, not by the body CRC
    code, found = findings("c-v5-features", root)
    assert code == 1
    assert [(x["kind"], x["commitLogOffset"]) for x in found] == [("property-crc", off)]


def test_truncated_last_file(store_copy):
    root = store_copy("a-basic")
    store = open_store("a-basic", root)
    f, m, off = messages(store)[-1]
    cut = m.position + m.storeSize // 2
    os.truncate(f.path, cut)
    code, found = findings("a-basic", root)
    assert code == 1
    assert kinds(found) == {"file-size", "torn-tail", "cq-entry-past-end", "index-entry-past-end"}
    tail = next(x for x in found if x["kind"] == "torn-tail")
    assert tail["commitLogOffset"] == off and tail["detail"].startswith(
        f"{cut - m.position} invalid bytes at commitlog offset {off}"
    )
    for x in found:
        if x["kind"].endswith("past-end"):
            assert x["commitLogOffset"] == off and f"consequence of the torn-tail at {off}" in x["detail"]


def test_zeroed_region_mid_file(store_copy):
    root = store_copy("a-basic")
    recs = messages(open_store("a-basic", root))
    in_file = [r for r in recs if r[0].name == recs[300][0].name]
    a, b = in_file[3], in_file[6]  # zero from the start of record a to the start of record b
    patch(a[0].path, a[1].position, bytes(b[1].position - a[1].position))
    code, found = findings("a-basic", root)
    assert code == 1
    zeroed = [x for x in found if x["kind"] == "zeroed-region"]
    assert len(zeroed) == 1 and zeroed[0]["commitLogOffset"] == a[2]
    assert zeroed[0]["detail"].startswith(f"{b[2] - a[2]} invalid bytes at commitlog offset {a[2]}")
    assert f"the next record starts at {b[2]}" in zeroed[0]["detail"]
    # the lost records' queue offsets and their consumequeue/index entries are consequences
    for x in found:
        if x is not zeroed[0]:
            assert f"the zeroed-region at {a[2]}" in x["detail"], x


def test_deleted_middle_file(store_copy):
    root = store_copy("a-basic")
    gone = root / "commitlog" / "00000000000000655360"
    gone.unlink()
    code, found = findings("a-basic", root)
    assert code == 1
    gap = [x for x in found if x["kind"] == "file-gap"]
    assert len(gap) == 1 and gap[0]["commitLogOffset"] == 655360
    for x in found:
        if x is not gap[0]:
            assert "the file-gap at 655360" in x["detail"], x
    assert {"queue-offset", "cq-entry-bad-target", "index-entry-bad-target"} <= kinds(found)


def test_short_middle_file(store_copy):
    root = store_copy("a-basic")
    short = root / "commitlog" / "00000000000000131072"
    os.truncate(short, 1000)
    code, found = findings("a-basic", root)
    assert code == 1
    size = [x for x in found if x["kind"] == "file-size"]
    assert len(size) == 1 and size[0]["file"] == "commitlog/00000000000000131072"
    assert "is 1000 bytes, not 65536" in size[0]["detail"]


def test_short_file_without_config_uses_the_name_spacing(store_copy):
    root = store_copy("a-basic")
    os.truncate(root / "commitlog" / "00000000000000131072", 1000)
    r = run("verify", "--store", root, "--format", "jsonl", "--only", "commitlog")
    assert r.exit_code == 1
    assert "file-size" in kinds(jsonl(r.stdout))


def test_stray_file(store_copy):
    root = store_copy("a-basic")
    (root / "commitlog" / "00000000000000065536.bak").write_bytes(b"x" * 10)
    code, found = findings("a-basic", root)
    assert code == 1
    assert [(x["kind"], x["file"]) for x in found] == [("stray-file", "commitlog/00000000000000065536.bak")]


def test_swapped_consumequeue_entries(store_copy):
    root = store_copy("a-basic")
    path = root / "consumequeue" / "TopicTest" / "1" / "00000000000000000000"
    data = bytearray(path.read_bytes())
    data[20:40], data[40:60] = data[40:60], data[20:40]
    path.write_bytes(bytes(data))
    code, found = findings("a-basic", root)
    assert code == 1
    assert sorted((x["kind"], x["position"]) for x in found) == [("cq-entry-mismatch", 20), ("cq-entry-mismatch", 40)]
    assert all("TopicTest/1 entry" in x["detail"] for x in found)


def _drop_last_entries(root: Path, topic: str, queue_id: int, count: int):
    last = sorted((root / "consumequeue" / topic / str(queue_id)).iterdir())[-1]
    data = bytearray(last.read_bytes())
    used = max(i for i in range(0, len(data), 20) if any(data[i : i + 20]))
    data[used + 20 - 20 * count : used + 20] = bytes(20 * count)
    last.write_bytes(bytes(data))


def test_consumequeue_behind_the_commitlog(store_copy):
    root = store_copy("a-basic")
    _, m, _ = messages(open_store("a-basic", root))[-1]
    _drop_last_entries(root, m.topic, m.queueId, 1)  # the newest message: the broker's reput redoes it
    code, found = findings("a-basic", root)
    assert code == 1
    assert [(x["kind"], x["severity"]) for x in found] == [("cq-missing-entries", "warning")]
    assert "1 dispatched message(s)" in found[0]["detail"] and "dispatches them again" in found[0]["detail"]


def test_consumequeue_missing_entries_the_broker_never_redoes(store_copy):
    root = store_copy("a-basic")
    recs = messages(open_store("a-basic", root))
    newest = (recs[-1][1].topic, recs[-1][1].queueId)
    topic, qid = next((m.topic, m.queueId) for _, m, _ in reversed(recs) if (m.topic, m.queueId) != newest)
    _drop_last_entries(root, topic, qid, 1)
    code, found = findings("a-basic", root)
    assert [(x["kind"], x["severity"]) for x in found] == [("cq-missing-entries", "error")]
    assert "will not dispatch them again" in found[0]["detail"]


@pytest.mark.parametrize("deleted", [True, False])
def test_a_deleted_topics_records_are_not_lost_messages(store_copy, deleted):
    """mqadmin deleteTopic takes the topic out of topics.json and removes its queues; its records stay in the
    commitlog until the cleanup deletes their files. Their missing units are no loss (info), unless the broker
    still has the topic (error), or its next start dispatches them again (4.9.7's reput from the queues' max:
    the records past the other queues' end, a warning either way)."""
    root = store_copy("a-basic")
    shutil.rmtree(root / "consumequeue" / "OrderTopic")
    kept = {"BenchTopic-7", "TopicTest", "SCHEDULE_TOPIC_XXXX"} | (set() if deleted else {"OrderTopic"})
    table = {t: {"topicName": t, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6} for t in sorted(kept)}
    (root / "config" / "topics.json").write_text(json.dumps({"topicConfigTable": table}))
    code, found = findings("a-basic", root)
    lost = "info" if deleted else "error"
    assert code == 1 and sorted(x["severity"] for x in found) == sorted([lost] * 4 + ["warning"])
    said = "OrderTopic is not among the broker's topics (topics.json): deleted, its queues removed"
    assert all((said in x["detail"]) == (x["severity"] == "info") for x in found)


@pytest.mark.parametrize(
    "name, removed",
    [
        ("a-basic", "OrderTopic/1"),  # a queue of a topic whose other queues are there: not deleted
        ("b-mixed", "RMQ_SYS_TRANS_OP_HALF_TOPIC"),  # 4.9.7 writes the op topic without ever configuring it
    ],
)
def test_a_topic_missing_from_topics_json_is_not_deleted_while_the_broker_writes_it(store_copy, name, removed):
    """Out of topics.json yet not deleted: a topic with a queue still on disk (deleteTopic removes them all), or
    a system topic the broker writes with no topic config: its missing units stay errors."""
    root = store_copy(name)
    shutil.rmtree(root / "consumequeue" / removed)
    topic = removed.split("/")[0]
    kept = {p.name for p in (root / "consumequeue").iterdir()} - {topic}
    table = {t: {"topicName": t} for t in sorted(kept)}
    (root / "config" / "topics.json").write_text(json.dumps({"topicConfigTable": table}))
    code, found = findings(name, root)
    lost = [x for x in found if x["kind"] == "cq-missing-entries" and x["detail"].startswith(topic)]
    assert code == 1 and lost and {x["severity"] for x in lost} <= {"error", "warning"}
    assert "error" in {x["severity"] for x in lost}


def test_index_chain_turned_into_a_loop(store_copy):
    root = store_copy("a-basic")
    store = open_store("a-basic", root)
    ix = store.index_files()[2]
    n = 200
    patch(ix.path, index_entry_at(store, n) + 16, S.INT32.pack(n))  # prevIndex pointing at itself
    code, found = findings("a-basic", root)
    assert code == 1
    assert [(x["kind"], x["file"]) for x in found] == [("index-chain", f"index/{ix.name}")]
    assert "a loop" in found[0]["detail"]


def test_index_entry_with_a_foreign_key_and_deep_missing_key(store_copy):
    root = store_copy("a-basic")
    store = open_store("a-basic", root)
    ix = store.index_files()[0]
    slots, _ = store.index_geometry
    pos = index_entry_at(store, 10)
    old = S.INT32.unpack_from(ix.path.read_bytes(), pos)[0]
    patch(ix.path, pos, S.INT32.pack(old + slots))  # same slot, different key hash
    code, found = findings("a-basic", root)
    assert code == 1 and kinds(found) == {"index-entry-mismatch"}
    code, found = findings("a-basic", root, "--deep")
    assert kinds(found) == {"index-entry-mismatch", "index-missing-key"}


def test_a_deleted_index_is_a_finding_without_deep(store_copy):
    """index/ deleted (or emptied): verify names it, as it would name a missing consumequeue."""
    root = store_copy("a-basic")
    shutil.rmtree(root / "index")
    res = run("verify", "--store", root, "--broker-config", broker_conf("a-basic"), "--format", "jsonl")
    assert res.exit_code == 1
    assert res.stdout == (
        '{"kind":"index-missing","severity":"warning","file":"index","position":null,'
        '"commitLogOffset":0,"detail":"no index file, but the commitlog holds 5833 key(s) to index: '
        "the broker's lookups by key find none of them; rmqctl rebuild index makes the files\"}\n"
    )
    (root / "index").mkdir()
    code, found = findings("a-basic", root)
    assert code == 1 and kinds(found) == {"index-missing"}
    assert run("rebuild", "index", "--store", root, "--broker-config", broker_conf("a-basic")).exit_code == 0
    assert findings("a-basic", root) == (0, [])


# -- options, interface -----------------------------------------------------------------------------------------


def test_quiet_max_findings_only_and_range():
    d = FIXTURES / "d-crashed" / "store"
    r = run("verify", "--store", d, "--quiet")
    assert r.exit_code == 1 and r.stdout == "" and r.stderr == ""
    code, found = findings("d-crashed", d, "--max-findings", "2")
    assert code == 1 and len(found) == 2
    code, found = findings("d-crashed", d, "--only", "index")
    # (info: the index file holding them is newer than the checkpoint, and the broker deletes it after the crash)
    assert code == 0 and kinds(found) == {"index-entry-past-end"} and {f["severity"] for f in found} == {"info"}
    code, found = findings("d-crashed", d, "--only", "consumequeue")
    assert kinds(found) == {"cq-entry-past-end"}
    code, found = findings("d-crashed", d, "--only", "commitlog", "--from", "65536", "--to", "700000")
    assert code == 0 and [f["kind"] for f in found] == ["abnormal-recovery"]
    code, found = findings("d-crashed", d, "--only", "commitlog", "--to", "65536")
    assert kinds(found) == {"body-crc", "abnormal-recovery"}


def test_cannot_run_exits_2(tmp_path):
    r = run("verify", "--store", tmp_path / "missing")
    assert r.exit_code == 2 and "does not exist" in r.stderr
    r = run("verify", "--store", FIXTURES / "a-basic" / "store", "--jobs", "0")
    assert r.exit_code == 2


def test_says_when_a_broker_holds_the_lock(store_copy):
    root = store_copy("b-mixed")
    with held_lock(root) as holder:
        r = run("verify", "--store", root, "--broker-config", broker_conf("b-mixed"), "--format", "jsonl")
        assert r.exit_code == 0
        assert r.stderr.splitlines()[0] == (
            f"rmqctl: live: a broker (pid {holder.pid}) holds the store lock: verify judges the store as it was when "
            "it began; what the broker writes meanwhile is its work in flight, not damage"
        )
        live = [f for f in jsonl(r.stdout) if f["kind"] == "live"]
        assert len(live) == 1 and live[0]["severity"] == "info" and f"pid {holder.pid}" in live[0]["detail"]


# -- fuzz ------------------------------------------------------------------------------------------------------

FUZZ_FIXTURES = ["b-mixed", "c-v5-features"]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """One writable copy of each fuzzed fixture, copied again for every example."""
    return {name: copy_store(name, tmp_path_factory.mktemp(name)) for name in FUZZ_FIXTURES}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(FUZZ_FIXTURES),
    pick=st.integers(0, 10**6),
    flips=st.lists(st.tuples(st.integers(0, 10**9), st.integers(1, 255)), max_size=6),
    truncate=st.one_of(st.none(), st.floats(0, 1)),
)
def test_fuzz_never_crashes(pristine, name, pick, flips, truncate):
    """Random byte flips and truncations of any file: verify reports, never raises, never exits 2."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        shutil.copytree(pristine[name], root)
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != "lock")
        target = files[pick % len(files)]
        data = bytearray(target.read_bytes())
        for at, mask in flips:
            if data:
                data[at % len(data)] ^= mask
        if truncate is not None:
            data = data[: int(len(data) * truncate)]
        target.write_bytes(bytes(data))
        r = run("verify", "--store", root, "--broker-config", broker_conf(name), "--format", "jsonl", "--jobs", "1")
        assert r.exit_code in (0, 1), (target, r.stderr)
        if r.exit_code == 1:
            assert jsonl(r.stdout)


def test_blank_with_the_wrong_size(store_copy):
    root = store_copy("a-basic")
    path = root / "commitlog" / "00000000000000131072"
    data = path.read_bytes()
    store = open_store("a-basic", root)
    blank_at = max(m.position + m.storeSize for f, m, _ in messages(store) if f.name == path.name)
    assert S.BLANK.unpack_from(data, blank_at) == (65536 - blank_at, S.MAGIC_BLANK)
    patch(path, blank_at, S.INT32.pack(65536 - blank_at - 4))
    code, found = findings("a-basic", root)
    assert [(x["kind"], x["commitLogOffset"]) for x in found] == [("blank-size", 131072 + blank_at)]


def test_missing_blank_in_a_full_file(store_copy):
    root = store_copy("a-basic")
    path = root / "commitlog" / "00000000000000131072"
    store = open_store("a-basic", root)
    blank_at = max(m.position + m.storeSize for f, m, _ in messages(store) if f.name == path.name)
    patch(path, blank_at, bytes(8))
    code, found = findings("a-basic", root)
    assert [(x["kind"], x["commitLogOffset"]) for x in found] == [("missing-blank", 131072 + blank_at)]
    assert f"{65536 - blank_at} zero bytes" in found[0]["detail"]


def test_garbage_after_the_last_record(store_copy):
    root = store_copy("a-basic")
    f, m, off = messages(open_store("a-basic", root))[-1]
    end = m.position + m.storeSize
    patch(f.path, end + 100, b"\x13\x37" * 50)
    code, found = findings("a-basic", root)
    assert [(x["kind"], x["commitLogOffset"]) for x in found] == [("torn-tail", off + m.storeSize)]
    assert found[0]["detail"].startswith(f"200 invalid bytes at commitlog offset {off + m.storeSize}")


def test_tags_code_and_prepared_record_in_the_consumequeue(store_copy):
    root = store_copy("b-mixed")
    recs = messages(open_store("b-mixed", root))
    scheduled = next((f, m, o) for f, m, o in recs if m.topic == "SCHEDULE_TOPIC_XXXX")
    qdir = root / "consumequeue" / "SCHEDULE_TOPIC_XXXX" / str(scheduled[1].queueId)
    unit = next(qdir.iterdir())
    at = scheduled[1].queueOffset * 20 % 640
    patch(unit, at + 12, S.INT64.pack(S.INT64.unpack_from(unit.read_bytes(), at + 12)[0] + 1000))
    prepared = next((f, m, o) for f, m, o in recs if m.sysFlag & S.TRANSACTION_MASK == S.TRANSACTION_PREPARED_TYPE)
    other = next((f, m, o) for f, m, o in recs if m.topic == "TxRawTopic" and not m.sysFlag & S.TRANSACTION_MASK)
    tx = root / "consumequeue" / "TxRawTopic" / str(other[1].queueId) / "00000000000000000000"
    at = other[1].queueOffset * 20
    patch(tx, at, S.INT64.pack(prepared[2]) + S.INT32.pack(prepared[1].storeSize))
    code, found = findings("b-mixed", root)
    assert code == 1
    mismatch = {x["commitLogOffset"]: x["detail"] for x in found if x["kind"] == "cq-entry-mismatch"}
    assert "but the dispatcher computes" in mismatch[scheduled[2]]
    assert "the record is PREPARED, which the broker never dispatches" in mismatch[prepared[2]]
    # the normal record whose unit now names the PREPARED one is not reported twice
    assert kinds(found) == {"cq-entry-mismatch"} and len(found) == 2


def test_index_header_hash_slot_count(store_copy):
    root = store_copy("a-basic")
    ix = open_store("a-basic", root).index_files()[1]
    patch(ix.path, 32, S.INT32.pack(ix.header["hashSlotCount"] - 1))
    code, found = findings("a-basic", root)
    assert [(x["kind"], x["position"]) for x in found] == [("index-header", 32)]


def test_checkpoint_ahead_and_index_lost_on_abnormal_recovery(store_copy):
    root = store_copy("a-basic")
    newest = max(m.storeTimestamp for _, m, _ in messages(open_store("a-basic", root)))
    cp = bytearray((root / "checkpoint").read_bytes())
    cp[0:16] = S.INT64.pack(newest + 10_000) * 2
    (root / "checkpoint").write_bytes(bytes(cp))
    (root / "abort").write_bytes(b"")
    code, found = findings("a-basic", root)
    assert code == 1
    assert kinds(found) == {"checkpoint-ahead", "abnormal-recovery", "index-lost-on-recovery"}
    lost = next(x for x in found if x["kind"] == "index-lost-on-recovery")
    assert lost["file"] == "index/20261122022334543" and "will not be found by key" in lost["detail"]
    info = next(x for x in found if x["kind"] == "abnormal-recovery")
    assert info["commitLogOffset"] == 2555904 and "it finds nothing to cut" in info["detail"]


def test_index_slot_holding_an_older_entry(store_copy):
    root = store_copy("a-basic")
    store = open_store("a-basic", root)
    ix = store.index_files()[3]
    slots, _ = store.index_geometry
    slot_values = np.frombuffer(ix.path.read_bytes(), dtype=">i4", count=slots, offset=S.INDEX_HEADER_SIZE)
    s = int(np.flatnonzero(slot_values > 1)[0])
    prev = S.INT32.unpack_from(ix.path.read_bytes(), S.INDEX_HEADER_SIZE + slots * 4 + int(slot_values[s]) * 20 + 16)[0]
    assert prev > 0
    patch(ix.path, S.INDEX_HEADER_SIZE + s * S.HASH_SLOT_SIZE, S.INT32.pack(prev))  # the entry before the newest
    code, found = findings("a-basic", root)
    assert [(x["kind"], x["position"]) for x in found] == [("index-slot", S.INDEX_HEADER_SIZE + s * 4)]
    assert "newest entry" in found[0]["detail"]


def test_json_csv_and_table_formats():
    d = FIXTURES / "d-crashed" / "store"
    r = run("verify", "--store", d, "--format", "json")
    assert r.exit_code == 1 and [f["kind"] for f in json.loads(r.stdout)][:2] == ["body-crc", "torn-tail"]
    r = run("verify", "--store", d, "--format", "csv")
    assert r.stdout.splitlines()[0] == "severity,kind,file,position,commitLogOffset,detail"
    r = run("verify", "--store", d, "--format", "table")
    assert "torn-tail" in r.stdout and "commitlog offset 782999" in r.stdout
    r = run("verify", "--store", FIXTURES / "a-basic" / "store", "--format", "json")
    assert r.exit_code == 0 and json.loads(r.stdout) == []


def test_interrupted_write_is_reported(store_copy):
    """A rebuild killed after its commit point leaves an intent: verify says the store is mid-change."""
    from rmqctl import txn

    store = store_copy("b-mixed")
    staging = store / ".rmqctl-rebuild-test"
    staging.mkdir()
    res = run("verify", "--store", store, "--broker-config", broker_conf("b-mixed"), "--format", "jsonl")
    rows = [r for r in jsonl(res.stdout) if r["kind"] == "interrupted-write"]
    assert res.exit_code == 1 and rows and rows[0]["severity"] == "warning"
    assert txn.pending(store) is not None


def test_a_sound_store_says_so_in_one_line_and_quiet_says_nothing():
    """Piped or not, verify ends with its one-line summary on stderr; --quiet (cron) prints nothing."""
    args = ("verify", "--store", FIXTURES / "b-mixed" / "store", "--broker-config", broker_conf("b-mixed"))
    res = run(*args, "--jobs", "1")
    assert res.exit_code == 0 and res.stdout == ""
    assert (
        re.sub(r"in [\d.]+ s", "in T s", res.stderr)
        == "verify: 421 records, 0.5 MB of commitlog in T s (1 job(s)): sound\n"
    )
    res = run(*args, "--quiet")
    assert res.exit_code == 0 and res.stdout == "" and res.stderr == ""


# -- the commitlog kernel on crafted records ---------------------------------------------------------------------


def _crafted_record(
    pos: int,
    topic: bytes,
    props: bytes,
    body: bytes = b"payload",
    *,
    sysflag: int = 0,
    magic: int = S.MAGIC_V1,
    physical: int | None = None,
    body_crc: int | None = None,
    property_crc: bool = False,
    queue: tuple[int, int] = (1, 7),
) -> bytes:
    """One record at `pos` in `queue` (queueId, queueOffset), its CRCs right unless given; `property_crc`
    appends a correct 5.x __CRC32#."""
    m = Message()
    m.magicCode, m.bodyCRC, m.queueId, m.flag = magic, crc31(body) if body_crc is None else body_crc, queue[0], 0
    m.queueOffset, m.physicalOffset, m.sysFlag = queue[1], pos if physical is None else physical, sysflag
    m.bornTimestamp = m.storeTimestamp = 1_700_000_000_000
    v6 = lambda flag: bytes(16) if sysflag & flag else bytes(4)  # noqa: E731
    m.bornIp, m.bornPort, m.storeIp, m.storePort = v6(S.BORNHOST_V6_FLAG), 1, v6(S.STOREHOSTADDRESS_V6_FLAG), 2
    m.reconsumeTimes = m.preparedTransactionOffset = 0
    m.body, m.topicBytes = body, topic
    m.propertiesBytes = props + (b"__CRC32#\x01" + b"0" * 10 + b"\x02" if property_crc else b"")
    data = bytearray(encode_record(m))
    if property_crc:
        digits = crc_digits(crc31(bytes(data[: -S.CRC32_RESERVED_LEN]))).encode()
        data[-11:-1] = digits
    return bytes(data)


def _props(*pairs: tuple[bytes, bytes]) -> bytes:
    return b"\x02".join(k + b"\x01" + v for k, v in pairs)


def assert_chunk_is_the_reference(r, buf: bytes, cfg: BrokerConfig):
    """Every record of a chunk result decoded as read_record and the rules of rmqctl.dispatch decode it:
    topic, queue, store time, tagsCode and its index keys in order."""
    keys = {}
    for i, h in zip(r.key_record.tolist(), r.key_hash.tolist()):
        keys.setdefault(i, []).append(h)
    for i, pos in enumerate(r.pos.tolist()):
        m = read_record(buf, pos, len(buf))
        assert (r.topics[r.topic[i]], int(r.queue_id[i]), int(r.queue_offset[i]), int(r.store_ts[i])) == (
            m.topic,
            m.queueId,
            m.queueOffset,
            m.storeTimestamp,
        )
        assert int(r.tags[i]) == tags_code(m, cfg), m.properties
        assert keys.get(i, []) == [index_key_hash(k) for k in index_keys(m)], m.properties


def test_kernel_against_the_reference_on_crafted_records(tmp_path):
    """Every path of the kernel (non-ASCII and malformed text, v6 hosts, V2 topics, the property CRC in its
    forms, the schedule topic, inner batches, rollback, damage to each checked field) gives the findings
    and the dispatch data rmqctl.dispatch and read_record give."""
    rollback = S.TRANSACTION_ROLLBACK_TYPE
    specs = [  # (expected finding kinds, record arguments)
        ((), dict(topic=b"TopicTest", props=_props((b"TAGS", b"TagA"), (b"KEYS", b"k1  k2 "), (b"UNIQ_KEY", b"U1")))),
        ((), dict(topic="主题".encode(), props=_props((b"TAGS", "标签".encode()), (b"KEYS", "键 😀".encode())))),
        (("properties",), dict(topic=b"T", props=_props((b"KEYS", b"bad\xffkey"), (b"TAGS", b"\xc3")))),
        (("topic-invalid",), dict(topic=b"T\xc3", props=_props((b"KEYS", b"k")))),
        ((), dict(topic=b"SCHEDULE_TOPIC_XXXX", props=_props((b"DELAY", b"3"), (b"TAGS", b"t")))),
        ((), dict(topic=b"T", props=_props((b"DELAY", b"x")))),
        ((), dict(topic=b"T", props=_props((b"TAGS", b"t")), property_crc=True)),
        (("property-crc",), dict(topic=b"T", props=_props((b"__CRC32#", b"123"), (b"KEYS", b"k")))),
        (("property-crc",), dict(topic=b"T", props=_props((b"__CRC32#", "١٢".encode())))),
        (("property-crc",), dict(topic=b"T", props=_props((b"__CRC32#", b"9" * 40)))),
        (("properties",), dict(topic=b"T", props=b"abc\x02\x01xy\x02" + _props((b"TAGS", b"t")))),
        (("properties",), dict(topic=b"T", props=b"\x00no-separator")),
        (("properties",), dict(topic=b"T", props=_props((b"TAGS", b"\xe2\x82")))),
        (
            (),
            dict(topic=b"T6", props=_props((b"KEYS", b"v6")), sysflag=S.BORNHOST_V6_FLAG | S.STOREHOSTADDRESS_V6_FLAG),
        ),
        ((), dict(topic=b"T2", props=_props((b"KEYS", b"v2")), magic=S.MAGIC_V2)),
        ((), dict(topic=b"T", props=_props((b"KEYS", b"rolled back"), (b"UNIQ_KEY", b"U")), sysflag=rollback)),
        ((), dict(topic=b"T", props=_props((b"INNER_NUM", b"3")), sysflag=S.INNER_BATCH_FLAG)),
        (("topic-invalid",), dict(topic=b"", props=_props((b"TAGS", b"t")))),
        (("topic-invalid",), dict(topic=b"a/b", props=b"")),
        (("sysflag",), dict(topic=b"T", props=b"", sysflag=0x1000)),
        (("sysflag",), dict(topic=b"T", props=b"", sysflag=S.COMPRESSED_FLAG | 0x400)),
        (("physical-offset",), dict(topic=b"T", props=b"", physical=5)),
        (("body-crc",), dict(topic=b"T", props=b"", body_crc=1)),
        ((), dict(topic=b"T", props=b"", body=b"")),
    ]
    data = bytearray()
    expected = {}
    for kinds_at, spec in specs:
        expected[len(data)] = sorted(kinds_at)
        data += _crafted_record(len(data), **spec)
    file_size = len(data) + 64
    data += S.BLANK.pack(file_size - len(data), S.MAGIC_BLANK)
    path = tmp_path / f"{0:020d}"
    path.write_bytes(bytes(data).ljust(file_size, b"\0"))
    cfg = BrokerConfig(mappedFileSizeCommitLog=file_size, forceVerifyPropCRC=False)
    r = scan_chunk(Task(str(path), path.name, 0, file_size, 0, True, 0, file_size, cfg))
    assert r.pos.tolist() == list(expected) and not r.regions and r.blank == (len(data) - 8, 64)
    found = {}
    for kind, _, pos, _ in r.findings:
        found.setdefault(pos, []).append(kind)
    assert {p: sorted(found.get(p, [])) for p in expected} == expected
    assert_chunk_is_the_reference(r, bytes(data), cfg)
    assert r.inner_num == {specs.index(next(s for s in specs if s[1].get("sysflag") == S.INNER_BATCH_FLAG)): 3}


def test_queue_offsets_with_inner_batches_and_lmq_queues(tmp_path):
    """Queue offsets go up by one, by INNER_NUM after an inner batch, and LMQ queues count on their own:
    one wrong field is told from a gap or a duplicate, in own and LMQ queues alike."""
    lmq = lambda queues, offsets: _props((b"INNER_MULTI_DISPATCH", queues), (b"INNER_MULTI_QUEUE_OFFSET", offsets))  # noqa: E731
    specs = [
        dict(topic=b"TA", props=b"", queue=(0, 0)),
        dict(topic=b"TA", props=lmq(b"%LMQ%x,%LMQ%y", b"0,5"), queue=(0, 1)),
        dict(topic=b"TA", props=lmq(b"%LMQ%x,%LMQ%y", b"1,6"), queue=(0, 2)),
        dict(topic=b"TA", props=_props((b"INNER_NUM", b"3")), queue=(0, 3), sysflag=S.INNER_BATCH_FLAG),
        dict(topic=b"TA", props=b"", queue=(0, 6)),
        dict(topic=b"TA", props=b"", queue=(0, 9)),  # one field off: 7 expected, 8 follows
        dict(topic=b"TA", props=lmq(b"%LMQ%x", b"5"), queue=(0, 8)),  # the LMQ queue jumps from 1 to 5
        dict(topic=b"TB", props=b"", queue=(1, 0)),
        dict(topic=b"TB", props=b"", queue=(1, 0)),  # a duplicate at the end of its queue
    ]
    data = bytearray()
    starts = []
    for spec in specs:
        starts.append(len(data))
        data += _crafted_record(len(data), **spec)
    file_size = len(data) + 64
    data += S.BLANK.pack(file_size - len(data), S.MAGIC_BLANK)
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / f"{0:020d}").write_bytes(bytes(data).ljust(file_size, b"\0"))
    cfg = BrokerConfig(mappedFileSizeCommitLog=file_size, enableMultiDispatch=True, enableLmq=True)
    found = [f for f in verify(Store(tmp_path, cfg), only="commitlog", jobs=1).findings if f.kind == "queue-offset"]
    assert [(f.commitLogOffset, f.detail.split(";")[0]) for f in found] == [
        (
            starts[5],
            f"record at {starts[5]} in TA/0 has queue offset 9, but the records around it make it 7 (a jump ahead)",
        ),
        (
            starts[6],
            f"queue %LMQ%x/0 jumps from offset 1 (record at {starts[2]}) to 5 (record at {starts[6]}): 3 missing",
        ),
        (
            starts[8],
            f"queue TB/1 goes back from offset 0 (record at {starts[7]}) to 0 (record at {starts[8]}): "
            f"duplicate queue offsets",
        ),
    ]


def test_kernel_outputs_grow(tmp_path):
    """More topics, records and index keys than the kernel's first arrays hold: the walk stops, its
    outputs grow and it goes on, with the reference's answer for every record."""
    many_words = _props((b"KEYS", b" ".join(b"k%d" % i for i in range(5000))), (b"UNIQ_KEY", b"U"))
    data = bytearray()
    for i in range(1200):
        data += _crafted_record(len(data), b"T%d" % i, many_words if i % 200 == 0 else _props((b"TAGS", b"t%d" % i)))
    file_size = len(data) + 8
    data += S.BLANK.pack(8, S.MAGIC_BLANK)
    path = tmp_path / f"{0:020d}"
    path.write_bytes(bytes(data))
    cfg = BrokerConfig(mappedFileSizeCommitLog=file_size)
    r = scan_chunk(Task(str(path), path.name, 0, file_size, 0, True, 0, file_size, cfg))
    assert len(r.pos) == 1200 and len(r.key_hash) > 30000 and not r.findings and not r.regions
    assert_chunk_is_the_reference(r, bytes(data), cfg)


# -- pages mapped in ahead of the walk ----------------------------------------------------------------------------


def mapped_kib(m: mmap.mmap) -> int:
    """The resident KiB of mapping m in this process (/proc/self/smaps)."""
    at = np.frombuffer(m, np.uint8).ctypes.data
    lines = Path("/proc/self/smaps").read_text().splitlines()
    for k, line in enumerate(lines):
        if re.match(r"^[0-9a-f]+-", line) and int(line.split("-", 1)[0], 16) == at:
            return next(int(v.split()[1]) for v in lines[k + 1 :] if v.startswith("Rss:"))
    raise AssertionError("mapping not found")


def served(r):
    deadline = time.monotonic() + 30
    while not PAGER.done(r):
        assert time.monotonic() < deadline, "the pager did not serve its request"
        time.sleep(0.01)


def mapping(path: Path, size: int) -> mmap.mmap:
    path.write_bytes(os.urandom(size))
    with open(path, "rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


FAULT_AROUND_KIB = 64  # a populate maps whole fault-around windows, aligned on the virtual address


@pytest.fixture
def populating():
    probe = mmap.mmap(-1, mmap.PAGESIZE)
    try:
        probe.madvise(MADV_POPULATE_READ)
    except OSError:
        pytest.skip("the kernel has no MADV_POPULATE_READ (Linux 5.14)")
    finally:
        probe.close()


def test_the_pager_maps_pages_in_ahead_and_gives_them_back(tmp_path, populating):
    """Pages come in for the spans asked, go back for the range given back, and a file cut short under the
    request (a broker's cleanup) only ends the mapping in early: no SIGBUS."""
    m = mapping(tmp_path / "f", 16 << 20)
    assert mapped_kib(m) == 0
    served(PAGER.ahead(m, [(0, 4 << 20), (12 << 20, 16 << 20)]))
    assert 8 << 10 <= mapped_kib(m) <= (8 << 10) + 2 * FAULT_AROUND_KIB
    served(PAGER.behind(m, 0, len(m)))
    assert mapped_kib(m) == 0
    os.truncate(tmp_path / "f", 2 << 20)
    served(PAGER.ahead(m, [(0, 16 << 20)]))
    assert 2 << 10 <= mapped_kib(m) <= (2 << 10) + FAULT_AROUND_KIB
    served(PAGER.behind(m, 0, len(m)))
    m.close()


def test_a_pager_behind_holds_a_few_requests_and_their_maps_at_most(tmp_path, monkeypatch, populating):
    """While the pager is stuck, its requests keep their maps (closing one raises); past MOST_PENDING, pages are
    not mapped in ahead and are given back by the caller itself. Its thread does not take Ctrl-C."""
    stuck, calls = threading.Event(), []
    real = store_module._madvise

    def slow(at, size, advice):
        if threading.current_thread().name == "rmqctl-pager":
            calls.append(advice)
            assert stuck.wait(30)
        return real(at, size, advice)

    monkeypatch.setattr(store_module, "_madvise", slow)
    pager = store_module.Pager()
    maps = [mapping(tmp_path / f"f{k}", 1 << 20) for k in range(store_module.Pager.MOST_PENDING + 1)]
    held = [pager.ahead(m, [(0, len(m))]) for m in maps[:-1]]
    assert all(held) and pager.ahead(maps[-1], [(0, len(maps[-1]))]) is None
    with pytest.raises(BufferError):
        maps[0].close()
    last = maps[-1]
    bytes(last[: 1 << 20])  # read here: mapped by this thread
    assert mapped_kib(last) > 0
    assert pager.behind(last, 0, len(last)) is None and mapped_kib(last) == 0
    while not calls:
        time.sleep(0.01)
    tid = next(t.native_id for t in threading.enumerate() if t.name == "rmqctl-pager" and t.is_alive())
    status = Path(f"/proc/self/task/{tid}/status").read_text()
    blocked = int(re.search(r"^SigBlk:\s*([0-9a-f]+)", status, re.M).group(1), 16)
    assert blocked & (1 << (signal.SIGINT - 1))
    stuck.set()
    for r in held:
        deadline = time.monotonic() + 30
        while not pager.done(r):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    for m in maps:
        m.close()


@pytest.mark.parametrize("name", ["a-basic", "d-crashed"])
def test_a_walk_paged_ahead_finds_what_one_faulting_its_pages_finds(name):
    """The same chunks, pages mapped in on the pager's thread or by the walk itself: the same results."""
    store = open_store(name)
    size = store.commitlog.file_size
    for f in store.commitlog.files:
        for begin in (0, 4096):
            task = Task(str(f.path), f.name, f.start, size, begin, begin == 0, begin, size, store.config)
            paged = scan_chunk(dataclasses.replace(task, paged=True))
            own = scan_chunk(task)
            assert repr(dataclasses.replace(paged, task=task)) == repr(own)


def test_only_a_single_walk_is_paged(monkeypatch):
    """The pager takes a core of its own: a walk is paged only with one walking thread and a second core."""
    for jobs, cores, paged in ((1, 2, True), (1, 1, False), (2, 4, False)):
        monkeypatch.setattr(verify_commitlog, "available_cores", lambda: cores)
        store = open_store("a-basic")
        ctx = verify_commitlog.Context(store, {"commitlog"}, None, None, False, jobs, {})
        assert {t.paged for chunks in verify_commitlog.plan(ctx) for t in chunks} == {paged}


def test_a_cut_says_what_the_index_keeps_past_it(tmp_path, java_oracle):
    """The broker's recovery truncates the commitlog and the consumequeues at a damaged record, never the index:
    keys of the dropped records stay, and buildIndex skips what it then writes below the last index file's
    endPhyOffset. The cut's finding says so, with the endPhyOffset of the last file RocketMQ 5.3.3 keeps."""
    import subprocess

    root = copy_store("c-v5-features", tmp_path / "c")
    shutil.rmtree(root / "consumequeue")  # (its normal recovery then re-checks from the first file)
    path = root / "commitlog" / f"{131072:020d}"
    data = bytearray(path.read_bytes())
    data[135665 - 131072 + 300] ^= 0xFF
    path.write_bytes(bytes(data))
    code, found = findings("c-v5-features", root)
    [cut] = [f for f in found if f["commitLogOffset"] == 135665 and "truncates the commitlog at 135665" in f["detail"]]
    out = tmp_path / "out"
    conf = broker_conf("c-v5-features")
    subprocess.run([str(java_oracle / "read5.sh"), "--keep-copy", str(root), str(conf), str(out)], capture_output=True)
    last = sorted((out / "store-copy" / "index").iterdir())[-1].read_bytes()
    end = S.INDEX_HEADER.unpack_from(last, 0)[3]  # endPhyOffset
    assert end > 135665 and f"the index keeps its entries up to {end}" in cut["detail"]


def test_a_unit_dispatched_again_past_a_lost_file_lands_at_the_queues_end(tmp_path, java_oracle):
    """A queue's last consumequeue file lost (no crash): the reput at start dispatches the record past the queues'
    end again, but ConsumeQueue.putMessagePositionInfo appends its unit at the queue's end (128), not at its own
    queue offset (159). verify says where it lands, as RocketMQ 4.9.7 serves it."""
    import subprocess

    root = copy_store("a-basic", tmp_path / "a")
    (root / "consumequeue" / "OrderTopic" / "1" / f"{2560:020d}").unlink()
    code, found = findings("a-basic", root)
    [again] = [f for f in found if f["severity"] == "warning" and f["kind"] == "cq-missing-entries"]
    assert "their units written from queue offset 128, the queue's end, not at their own 159" in again["detail"]
    out = tmp_path / "out"
    subprocess.run(
        [str(java_oracle / "read4.sh"), str(root), str(broker_conf("a-basic")), str(out)], capture_output=True
    )
    read = [json.loads(line) for line in (out / "messages-read.jsonl").read_text().splitlines()]
    served = {(r["queueOffset"], r["commitLogOffset"]) for r in read if (r["topic"], r["queueId"]) == ("OrderTopic", 1)}
    assert (128, again["commitLogOffset"]) in served
