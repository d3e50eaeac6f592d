"""5.x timer files on copies of f-timer5 (written by RocketMQ 5.3.3's TimerMessageStore): the dumps against
TimerLog/TimerWheel's own readings, verify silent on the sound store and exact on injected damage, info's
pending summary, and what repair and clean say about units their commitlog change leaves dangling."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, broker_conf, copy_store, jsonl, patch, run, truth
from rmqctl import schema as S
from rmqctl.config import load_config
from rmqctl.recovery import recovery_start
from rmqctl.store import Store
from rmqctl.timerstore import TimerFiles, field_offset, precision_ms, slot_index, timer_recovery
from rmqctl.views.timer import queue_resume

NAME = "f-timer5"
CONF = broker_conf(NAME)
READ_MS = json.loads((FIXTURES / NAME / "truth-summary.json").read_text())["timer"]["timercheck"]["lastReadTimeMs"]


@pytest.fixture
def timer_store(tmp_path):
    """A writable copy of f-timer5 with its wheel gunzipped, as the broker left it."""
    root = copy_store(NAME, tmp_path)
    with gzip.open(root / "timerwheel.gz") as src, open(root / "timerwheel", "wb") as dst:
        shutil.copyfileobj(src, dst)
    (root / "timerwheel.gz").unlink()
    return root


def verify_rows(root, *extra):
    r = run("verify", "--store", root, "--broker-config", CONF, "--format", "jsonl", *extra)
    return r.exit_code, jsonl(r.stdout)


def units():
    return truth(NAME, "truth-timerlog.jsonl")


def pending_unit(pred=lambda u: True):
    return next(u for u in units() if u["delayedTimeMs"] >= READ_MS and u["magic"] == 1 and pred(u))


def unit_field(root, pos: int, name: str, value: int):
    fmt = dict(S.fixed_fields(S.TimerLogUnit))[name]
    data = (S.INT64 if fmt.endswith("q") else S.INT32).pack(value)
    patch(root / "timerlog" / f"{pos - pos % 8192:020d}", pos % 8192 + field_offset(S.TimerLogUnit, name), data)


def damage_timer_record(root):
    """Break the body CRC of the first pending timer record in the file the broker's abnormal recovery
    starts from, and leave an abort file: the recovery cuts the commitlog at that record."""
    st = Store(root, load_config(CONF))
    start = st.commitlog.files[recovery_start(st)]
    victim = min(
        (u for u in units() if u["offsetPy"] >= start.start and u["delayedTimeMs"] >= READ_MS),
        key=lambda u: u["offsetPy"],
    )
    f = st.commitlog.find(victim["offsetPy"])
    record = next(m for m in truth(NAME, "truth-messages.jsonl") if m["commitLogOffset"] == victim["offsetPy"])
    body_at = victim["offsetPy"] - f.start + record["layout"]["body"]
    patch(f.path, body_at, bytes([f.buf[body_at] ^ 0xFF]))
    (root / "abort").touch()
    return victim, f.path


# ---- dumps ------------------------------------------------------------------------------------------------------


def test_dump_timerlog_equals_timerlog_reading(timer_store):
    r = run("dump", "timerlog", "--store", timer_store, "--broker-config", CONF, "--format", "jsonl")
    assert r.exit_code == 0
    assert jsonl(r.stdout) == units()  # every field, and each unit's record


def test_dump_timerwheel_equals_timerwheel_reading(timer_store):
    r = run("dump", "timerwheel", "--store", timer_store, "--broker-config", CONF, "--format", "jsonl")
    got, want = jsonl(r.stdout), truth(NAME, "truth-timerwheel.jsonl")
    assert r.exit_code == 0 and len(got) == len(want) == 256
    for g, w in zip(got, want):
        assert (g["slotIndex"], g["fileOffset"], g["timeDivPrecision"], g["timeMs"]) == (
            w["slotIndex"],
            w["fileOffset"],
            w["timeField"],
            w["timeMs"],
        )
        assert {k: g[k] for k in w["getSlot"]} == w["getSlot"]
        assert g["chain"] == w["chainFromLastPos"] and g["chainProblem"] is None


def test_dump_of_a_timer_file_that_is_not_there_says_so(tmp_path):
    """The fixture as stored (its wheel gzipped): no timerwheel, so nothing to dump: one line and exit 2, not
    an empty listing; without timerlog/ the same for the units."""
    root = copy_store(NAME, tmp_path)
    r = run("dump", "timerwheel", "--store", root, "--broker-config", CONF)
    assert (r.exit_code, r.stdout) == (2, "")
    assert (
        r.stderr
        == f"rmqctl: {root / 'timerwheel'}: no timerwheel file: no wheel slot to dump (dump timerlog shows the units)\n"
    )
    shutil.rmtree(root / "timerlog")
    r = run("dump", "timerlog", "--store", root, "--broker-config", CONF)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"rmqctl: {root / 'timerlog'}: no timerlog directory: no timer unit to dump\n"


def test_dump_filters_by_slot_and_time(timer_store):
    roll = [u for u in units() if u["magic"] & S.TIMER_MAGIC_ROLL]
    slot = roll[0]["delayedTimeMs"] // 1000 % S.TIMER_WHEEL_SLOTS
    args = ("--store", timer_store, "--broker-config", CONF, "--format", "jsonl")
    by_slot = jsonl(run("dump", "timerlog", "--slot", slot, *args).stdout)
    assert [u["pos"] for u in by_slot] == [
        u["pos"] for u in units() if u["delayedTimeMs"] // 1000 % S.TIMER_WHEEL_SLOTS == slot
    ]
    assert [s["slotIndex"] for s in jsonl(run("dump", "timerwheel", "--slot", slot, *args).stdout)] == [slot]
    t = units()[10]["delayedTimeMs"]
    window = jsonl(run("dump", "timerlog", "--begin", t, "--end", t + 60_000, "--no-resolve", *args).stdout)
    assert window and all(t <= u["delayedTimeMs"] <= t + 60_000 and "message" not in u for u in window)
    assert len(window) == sum(t <= u["delayedTimeMs"] <= t + 60_000 for u in units())


def test_dump_without_timer_files_is_refused():
    r = run("dump", "timerlog", "--store", FIXTURES / "c-v5-features" / "store")
    assert r.exit_code == 2 and "no timer files" in r.stderr


def test_precision_rounds_as_the_setter():
    assert [precision_ms(v) for v in (50, 100, 150, 499, 500, 999, 1000, 5000)] == [
        100,
        100,
        100,
        200,
        500,
        500,
        1000,
        1000,
    ]


# ---- info -------------------------------------------------------------------------------------------------------


def test_info_counts_pending_timer_messages_by_hour(timer_store):
    r = run("info", "--store", timer_store, "--broker-config", CONF, "--format", "json")
    t = json.loads(r.stdout)["timer"]
    delivered = sum(1 for m in truth(NAME, "truth-messages.jsonl") if m["timerRole"].startswith("delivered"))
    assert t["units"] == 300 and t["pending"] == 300 - delivered and t["notYetInWheel"] == 0
    assert sum(h["count"] for h in t["byHour"]) == t["pending"]
    for h in t["byHour"]:
        assert h["hour"][:13] == h["oldest"][:13] == h["newest"][:13] and h["oldest"] <= h["newest"]


# ---- verify -----------------------------------------------------------------------------------------------------


def test_sound_timer_store_verifies_clean(timer_store):
    assert verify_rows(timer_store) == (0, [])
    assert verify_rows(timer_store, "--only", "timer") == (0, [])


def test_a_timer_store_converted_to_the_rocksdb_queue_reads_and_verifies_as_before(timer_store, tmp_path):
    """A 5.x broker with the timer wheel may keep its queues in RocksDB (storeType=defaultRocksDB), the
    rmq_sys_wheel_timer queue with them: info and verify read the timer part against that queue as against its
    file queue (convert wrote such a store, then neither would read it)."""
    before = json.loads(run("info", "--store", timer_store, "--broker-config", CONF, "--format", "json").stdout)
    res = run("convert", "consumequeue", "--to", "rocksdb", "--store", timer_store, "--broker-config", CONF)
    assert res.exit_code == 0, res.stderr
    rocks = tmp_path / "rocks.conf"
    rocks.write_text(CONF.read_text() + "\nstoreType=defaultRocksDB\n")
    res = run("info", "--store", timer_store, "--broker-config", rocks, "--format", "json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["timer"] == before["timer"]
    res = run("verify", "--store", timer_store, "--broker-config", rocks, "--format", "jsonl")
    assert (res.exit_code, res.stdout) == (0, ""), res.stderr


def test_store_with_an_empty_wheel_verifies_clean(tmp_path):
    """What a 5.x broker never sent a timer message leaves: an all-zero wheel and a timercheck with only its
    read time and data version."""
    root = copy_store("c-v5-features", tmp_path)
    with open(root / "timerwheel", "wb") as f:
        f.truncate(S.TIMER_WHEEL_SLOTS * S.WHEEL_SLOT_SIZE)
    (root / "config").mkdir(exist_ok=True)
    check = bytearray(S.TIMERCHECK_FILE_SIZE)
    S.TIMERCHECK_HEAD.pack_into(check, 0, 1795000000000, 0, 0, 0, 0, 1795000000123, 1)
    (root / "config" / "timercheck").write_bytes(bytes(check))
    r = run("verify", "--store", root, "--broker-config", broker_conf("c-v5-features"), "--format", "jsonl")
    assert r.exit_code == 0, r.stdout


def test_unit_past_the_commitlog_end(timer_store):
    u = pending_unit()
    unit_field(timer_store, u["pos"], "offsetPy", 10**9)
    code, rows = verify_rows(timer_store)
    assert code == 1
    assert [(f["kind"], f["severity"], f["file"], f["position"], f["commitLogOffset"]) for f in rows] == [
        ("timer-reference", "warning", f"timerlog/{u['file']}", u["filePosition"], 10**9)
    ]
    assert "past the end of the commitlog" in rows[0]["detail"]


def test_unit_whose_record_is_damaged(timer_store):
    """A pending unit pointing at a record whose magic is broken: found in the window that holds the record,
    and named a consequence of that damage."""
    u = pending_unit()
    f = Store(timer_store, load_config(CONF)).commitlog.find(u["offsetPy"])
    patch(f.path, u["offsetPy"] - f.start + S.MAGIC_AT, S.INT32.pack(1))
    code, rows = verify_rows(timer_store)
    assert code == 1
    [row] = [r for r in rows if r["kind"] == "timer-reference"]
    assert (row["file"], row["position"], row["commitLogOffset"]) == (
        f"timerlog/{u['file']}",
        u["filePosition"],
        u["offsetPy"],
    )
    assert (
        f"is not the start of a record; a direct consequence of the illegal-magic at {u['offsetPy']}" in row["detail"]
    )


def test_unit_with_a_wrong_size_or_topic(timer_store):
    u = pending_unit()
    delivered = next(m for m in truth(NAME, "truth-messages.jsonl") if m["topic"] != S.TIMER_TOPIC)
    v = pending_unit(lambda x: x["pos"] != u["pos"])
    unit_field(timer_store, u["pos"], "sizePy", u["sizePy"] + 1)
    unit_field(timer_store, v["pos"], "offsetPy", delivered["commitLogOffset"])
    unit_field(timer_store, v["pos"], "sizePy", delivered["storeSize"])
    _, rows = verify_rows(timer_store)
    found = {(f["file"], f["position"]): f["detail"] for f in rows if f["kind"] == "timer-reference"}
    assert set(found) == {(f"timerlog/{u['file']}", u["filePosition"]), (f"timerlog/{v['file']}", v["filePosition"])}
    assert "bytes" in found[(f"timerlog/{u['file']}", u["filePosition"])]
    assert delivered["topic"] in found[(f"timerlog/{v['file']}", v["filePosition"])]


def test_broken_chain(timer_store):
    slot = next(s for s in truth(NAME, "truth-timerwheel.jsonl") if s["timeMs"] >= READ_MS and s["num"] >= 3)
    middle = slot["chainFromLastPos"][1]
    unit_field(timer_store, middle, "prevPos", slot["lastPos"] + 52)  # forwards: a cycle for the dequeue
    code, rows = verify_rows(timer_store)
    chain = [f for f in rows if f["kind"] == "timer-chain"]
    assert code == 1 and len(chain) == 1
    assert (chain[0]["severity"], chain[0]["file"], chain[0]["position"]) == (
        "error",
        f"timerlog/{middle - middle % 8192:020d}",
        middle % 8192,
    )
    assert f"slot {slot['slotIndex']}" in chain[0]["detail"] and "not strictly backwards" in chain[0]["detail"]


def test_chain_into_nothing(timer_store):
    slot = next(s for s in truth(NAME, "truth-timerwheel.jsonl") if s["timeMs"] >= READ_MS and s["num"] >= 2)
    oldest = slot["chainFromLastPos"][-1]
    unit_field(timer_store, oldest, "prevPos", 5)  # backwards, but not on a unit
    _, rows = verify_rows(timer_store)
    assert [(f["kind"], f["file"], f["position"]) for f in rows] == [
        ("timer-chain", f"timerlog/{oldest - oldest % 8192:020d}", oldest % 8192)
    ]


def test_slot_count_disagreeing_with_its_chain(timer_store):
    slot = next(s for s in truth(NAME, "truth-timerwheel.jsonl") if s["timeMs"] >= READ_MS)
    patch(
        timer_store / "timerwheel", slot["fileOffset"] + field_offset(S.WheelSlot, "num"), S.INT32.pack(slot["num"] + 2)
    )
    code, rows = verify_rows(timer_store)
    assert code == 1
    assert [(f["kind"], f["severity"], f["file"], f["position"]) for f in rows] == [
        ("timer-slot-count", "warning", "timerwheel", slot["fileOffset"])
    ]
    assert f"num is {slot['num'] + 2} but its chain holds {slot['num']}" in rows[0]["detail"]


def test_done_slots_are_info_only(timer_store):
    slot = next(s for s in truth(NAME, "truth-timerwheel.jsonl") if s["timeMs"] < READ_MS)
    patch(timer_store / "timerwheel", slot["fileOffset"] + field_offset(S.WheelSlot, "lastPos"), S.INT64.pack(10**6))
    code, rows = verify_rows(timer_store)
    assert code == 0 and [(f["kind"], f["severity"], f["position"]) for f in rows] == [
        ("timer-chain", "info", slot["fileOffset"])
    ]


def test_timercheck_ahead_of_the_data(timer_store):
    """A flushed position past the data: the broker's recovery resumes the timer queue from the last unit's
    record (a warning: nothing is lost); an enqueued offset past the queue: an error."""
    path = timer_store / "config" / "timercheck"
    patch(path, field_offset(S.TimerCheckpoint, "lastTimerLogFlushPos"), S.INT64.pack(16384 + 52))
    patch(path, field_offset(S.TimerCheckpoint, "lastTimerQueueOffset"), S.INT64.pack(301))
    code, rows = verify_rows(timer_store)
    assert code == 1
    assert [(f["kind"], f["severity"], f["file"], f["position"]) for f in rows] == [
        ("timercheck-ahead", "warning", "config/timercheck", 8),
        ("timercheck-ahead", "error", "config/timercheck", 16),
    ]
    assert "15628" in rows[0]["detail"] and "resumes the timer queue at 300" in rows[0]["detail"]
    assert "rmq_sys_wheel_timer/0 at 300" in rows[1]["detail"]


def test_garbage_inside_the_timerlog(timer_store):
    patch(timer_store / "timerlog" / f"{0:020d}", 52 * 3, S.INT32.pack(7))
    code, rows = verify_rows(timer_store)
    bad = [f for f in rows if f["kind"] == "timerlog-unit"]
    assert code == 1 and [(f["file"], f["position"]) for f in bad] == [(f"timerlog/{0:020d}", 156)]
    assert "truncates the timerlog at 156" in bad[0]["detail"]
    dumped = run("dump", "timerlog", "--store", timer_store, "--broker-config", CONF, "--format", "jsonl")
    assert dumped.exit_code == 2 and f"{0:020d} at offset 156: not a timerlog unit" in dumped.stderr
    assert [u["pos"] for u in jsonl(dumped.stdout)] == [0, 52, 104] + [u["pos"] for u in units() if u["pos"] >= 8192]


@pytest.mark.parametrize("length", [S.TIMER_WHEEL_SLOTS * S.WHEEL_SLOT_SIZE // 2, 32000])
def test_wheel_of_the_wrong_length(timer_store, length):
    """The broker's TimerWheel refuses it and the broker does not start: one error, no recovery modelled (a wheel
    shorter than the slots its recovery revises crashed verify and info)."""
    with open(timer_store / "timerwheel", "r+b") as f:
        f.truncate(length)
    _, rows = verify_rows(timer_store)
    assert [(f["kind"], f["severity"], f["file"]) for f in rows if f["kind"].startswith("timer")] == [
        ("timer-file", "error", "timerwheel")
    ]
    assert run("info", "--store", timer_store, "--broker-config", CONF).exit_code == 0


def test_recovery_cut_would_leave_units_dangling(timer_store):
    """A damaged record in the last file: the broker's recovery cuts there, and the pending units of the
    records it cuts off are named before anything is cut."""
    victim, path = damage_timer_record(timer_store)
    _, rows = verify_rows(timer_store)
    doomed = {f["commitLogOffset"] for f in rows if f["kind"] == "timer-reference" and "cuts off" in f["detail"]}
    want = {u["offsetPy"] for u in units() if u["offsetPy"] >= victim["offsetPy"]}
    assert want and doomed == want


# ---- repair and clean --------------------------------------------------------------------------------------------


def test_repair_reports_dangling_units_and_lowers_timercheck(timer_store):
    victim, path = damage_timer_record(timer_store)
    r = run("repair", "--store", timer_store, "--broker-config", CONF, "--format", "jsonl", "--no-backup")
    assert r.exit_code == 0, r.stderr
    rows = jsonl(r.stdout)
    cut = victim["offsetPy"]
    lost = [u for u in units() if u["offsetPy"] >= cut and u["delayedTimeMs"] >= READ_MS]
    dangling = [x for x in rows if x["action"] == "timer-dangling"]
    assert sorted(x["commitLogOffset"] for x in dangling) == sorted(u["offsetPy"] for u in lost)
    queue_end = victim["message"]["queueOffset"]
    assert {x["detail"] for x in rows if x["target"] == "config/timercheck"} == {
        f"lastTimerQueueOffset 300 -> {queue_end} (as TimerMessageStore.recover lowers it)",
        f"masterTimerQueueOffset 300 -> {queue_end} (as TimerMessageStore.recover lowers it)",
    }
    check = S.TIMERCHECK_HEAD.unpack((timer_store / "config" / "timercheck").read_bytes()[:56])
    assert check[2:4] == (queue_end, queue_end)
    # the units themselves stay as the broker keeps them: verify names each one, as a warning
    code, findings = verify_rows(timer_store)
    assert code == 1 and {f["kind"] for f in findings} == {"timer-reference"}
    warned = [f["commitLogOffset"] for f in findings if f["severity"] == "warning"]
    assert sorted(warned) == sorted(u["offsetPy"] for u in lost)
    done = [f["commitLogOffset"] for f in findings if f["severity"] == "info"]  # delivered already: harmless
    assert sorted(done) == sorted(
        u["offsetPy"] for u in units() if u["offsetPy"] >= cut and u["delayedTimeMs"] < READ_MS
    )


def test_clean_reports_pending_units_below_the_new_minimum(timer_store):
    old = 1_000_000_000
    for f in sorted((timer_store / "commitlog").iterdir())[:-1]:
        os.utime(f, (old, old))
    r = run("clean", "--store", timer_store, "--broker-config", CONF, "--now", "--until-ok", "--format", "json")
    plan = json.loads(r.stdout)
    new_min = plan["minPhyOffsetAfter"]
    want = sorted(u["pos"] for u in units() if u["offsetPy"] < new_min and u["delayedTimeMs"] >= READ_MS)
    assert want and sorted(u["pos"] for u in plan["timerUnitsLost"]) == want
    assert f"{len(want)} pending timer message(s)" in r.stderr


def test_without_broker_config_the_files_give_the_geometry(timer_store):
    """mappedFileSizeTimerLog from the file sizes, timerPrecisionMs from what the slots' units are filed under."""
    r = run("dump", "timerlog", "--store", timer_store, "--format", "jsonl")
    assert r.exit_code == 0 and jsonl(r.stdout) == units()
    assert run("verify", "--quiet", "--store", timer_store).exit_code == 0


# ---- the timer's recovery against RocketMQ 5.3.3's own (tests/java/TimerRecover5.java) ------------------------


def zero(path, start: int, end: int):
    patch(path, start, bytes(end - start))


def _torn_tail(root):  # the last 5 units of the data gone (a page the crash did not write)
    zero(root / "timerlog" / f"{8192:020d}", 7436 - 5 * 52, 7436)


def _last_pos_past_the_end(root):  # a slot's lastPos written, its unit not
    patch(root / "timerwheel", 518306 * S.WHEEL_SLOT_SIZE + 16, S.INT64.pack(16004))


def _garbage_unit(root):  # a unit's size field overwritten early in the timerlog
    patch(root / "timerlog" / f"{0:020d}", 52 * 3, S.INT32.pack(7))


def _crash(root):  # the last 20 units gone, timercheck flushed before them, the broker killed
    zero(root / "timerlog" / f"{8192:020d}", 7436 - 20 * 52, 7436)
    check = root / "config" / "timercheck"
    patch(check, field_offset(S.TimerCheckpoint, "lastTimerLogFlushPos"), S.INT64.pack(15628 - 20 * 52))
    for name in ("lastTimerQueueOffset", "masterTimerQueueOffset"):
        patch(check, field_offset(S.TimerCheckpoint, name), S.INT64.pack(280))
    (root / "abort").touch()


def _no_wheel(root):  # the broker makes an empty wheel, and its recovery files the units it walks again
    (root / "timerwheel").unlink()


def _empty_wheel(root):  # sized by the broker, all zero (rmqctl crashed on it)
    os.truncate(root / "timerwheel", 0)


def _empty_last_timerlog(root):  # the load deletes a zero-length last file
    os.truncate(root / "timerlog" / f"{8192:020d}", 0)


def _slot_time_off(root):  # put anew by the recovery, its num kept (the three-argument putSlot)
    at = 432039 * S.WHEEL_SLOT_SIZE
    patch(root / "timerwheel", at, S.INT64.pack(S.INT64.unpack_from((root / "timerwheel").read_bytes(), at)[0] + 1))


def _last_unit_sizepy_long(root):  # reviseQueueOffset's read of sizePy bytes decodes the record all the same
    last = root / "timerlog" / f"{8192:020d}"
    at = 7436 - 52 + field_offset(S.TimerLogUnit, "sizePy")
    patch(last, at, S.INT32.pack(S.INT32.unpack_from(last.read_bytes(), at)[0] + 8))
    patch(root / "config" / "timercheck", field_offset(S.TimerCheckpoint, "lastTimerQueueOffset"), S.INT64.pack(100))


def _master_behind(root):  # the enqueue resumes at 100: the messages of 100..299 are filed again
    patch(root / "config" / "timercheck", field_offset(S.TimerCheckpoint, "masterTimerQueueOffset"), S.INT64.pack(100))


def rocketmq_timer_recovery(oracle, root, work) -> tuple[int, int, dict]:
    """(queue offset, process offset, {slot: (timeDivPrecision, firstPos, lastPos)}) as 5.3.3's recovery leaves
    a copy of `root`."""
    from test_batchcq import oracle_classpath

    shutil.copytree(root, work / "copy")
    env_sh = f'. "{oracle}/lib/env.sh" && printf "%s\\n" "${{JVM_OPENS[@]}}"'
    opens = subprocess.run(["bash", "-c", env_sh], capture_output=True, text=True, check=True).stdout.split()
    classpath = f"{oracle_classpath(oracle)}:{oracle}/lib/rocksdbjni-classes-8.11.4.jar"
    harness = Path(__file__).parent / "java" / "TimerRecover5.java"
    out = subprocess.run(
        ["java", f"-Duser.home={work}", *opens, "-cp", classpath, str(harness), str(work / "copy"), str(CONF)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"},
    ).stdout.splitlines()
    fields = {line.split()[0]: int(line.split()[1]) for line in out if not line.startswith("slot ")}
    slots = {
        int(i): (int(t), int(f), int(l))
        for _, i, t, f, l, _ in (line.split() for line in out if line.startswith("slot "))
    }
    return fields["queueOffset"], fields["processOffset"], slots


@pytest.mark.parametrize(
    "damage",
    [
        _torn_tail,
        _last_pos_past_the_end,
        _garbage_unit,
        _crash,
        _no_wheel,
        _empty_wheel,
        _empty_last_timerlog,
        _slot_time_off,
        _last_unit_sizepy_long,
        _master_behind,
    ],
    ids=lambda d: d.__name__[1:],
)
def test_the_timer_recovery_is_rocketmqs_and_verify_says_what_it_does(timer_store, java_oracle, tmp_path, damage):
    """TimerMessageStore.recover truncates the timerlog at its first bytes that are not a unit, revises the slots
    of the units it walks, and resumes the timer queue one past the last unit's record, filing the messages of
    the units it lost again. rmqctl's model (timer_recovery, queue_resume) gives 5.3.3's numbers and slots, and
    verify no longer says those messages are never delivered (no timer error)."""
    damage(timer_store)
    queue_offset, process_offset, slots = rocketmq_timer_recovery(java_oracle, timer_store, tmp_path)
    store = Store(timer_store, load_config(CONF))
    timer = TimerFiles(store)
    check = timer.timercheck()
    recovery = timer_recovery(timer, check)
    assert (queue_resume(store, timer, check, recovery.process_offset).offset, recovery.process_offset) == (
        queue_offset,
        process_offset,
    )
    ours = recovery.slots
    held = np.flatnonzero(ours["timeDivPrecision"] > 0)
    held = held[slot_index(ours["timeDivPrecision"][held] * timer.precision, timer.precision) == held]
    assert {
        int(i): (int(ours[i]["timeDivPrecision"]), int(ours[i]["firstPos"]), int(ours[i]["lastPos"])) for i in held
    } == slots
    _, rows = verify_rows(timer_store)
    assert not [f for f in rows if f["kind"].startswith("timer") and f["severity"] == "error"]


def test_a_timercheck_that_makes_the_broker_file_messages_again_is_said(timer_store):
    """masterTimerQueueOffset below the last unit's record (5.3.3 resumes the timer queue at 100, tested above)
    or no timercheck at all (it resumes at the queue's first offset, the review's harness): the broker enqueues
    those timer messages again and delivers them twice; verify said sound."""
    _master_behind(timer_store)
    _, rows = verify_rows(timer_store)
    behind = [f for f in rows if f["kind"] == "timercheck-behind"]
    assert [f["severity"] for f in behind] == ["warning"] and "queue offsets 100..299" in behind[0]["detail"]
    (timer_store / "config" / "timercheck").unlink()
    _, rows = verify_rows(timer_store)
    assert any(f["kind"] == "timercheck-behind" and "no timercheck" in f["detail"] for f in rows)


def test_a_chain_through_units_past_damage_in_their_file_is_followed(timer_store):
    """Units 10..12 of the first timerlog file zeroed, the checkpoint's flush position past the data: the walk
    of that file stops at the zeros, but the broker's dequeue follows prevPos to any position and reads the
    units after them (5.3.3's TimerLog.getTimerMessage, the timer review's harness). verify said 122 chains
    point where no unit is; only those into the zeroed units do."""
    zero(timer_store / "timerlog" / f"{0:020d}", 10 * 52, 13 * 52)
    patch(
        timer_store / "config" / "timercheck",
        field_offset(S.TimerCheckpoint, "lastTimerLogFlushPos"),
        S.INT64.pack(30000),
    )
    _, rows = verify_rows(timer_store)
    nowhere = [f["detail"] for f in rows if f["kind"] == "timer-chain" and "where no timerlog unit is" in f["detail"]]
    assert nowhere and all(any(f" is {p}, " in d for p in (520, 572, 624)) for d in nowhere), nowhere


def test_units_a_revised_slot_drops_from_its_chain_are_said_lost(timer_store, java_oracle, tmp_path):
    """A BLANK magic over unit 50 of the first timerlog file: the recovery's walk of that file ends there, and a
    slot whose newest unit lies past it is revised back to its newest unit before it (5.3.3's slots, tested
    here): the units after drop out of the chain the dequeue reads. verify said the revision was info."""
    patch(timer_store / "timerlog" / f"{0:020d}", 50 * 52 + 12, S.INT32.pack(S.MAGIC_BLANK))
    _, _, slots = rocketmq_timer_recovery(java_oracle, timer_store, tmp_path)
    store = Store(timer_store, load_config(CONF))
    recovery = timer_recovery(TimerFiles(store), TimerFiles(store).timercheck())
    assert {i: int(recovery.slots[i]["lastPos"]) for i in slots} == {i: last for i, (_, _, last) in slots.items()}
    _, rows = verify_rows(timer_store)
    lost = [f for f in rows if f["kind"] == "timer-chain" and "drop out of the chain" in f["detail"]]
    assert lost and all(f["severity"] == "error" for f in lost)


def test_a_blank_with_room_for_another_unit_is_named(timer_store):
    """TimerLog.append writes its BLANK only where a unit no longer fits: one over unit 50 of the first file is
    damage, and the walk skips the 106 units after it. verify named its consequences, not the BLANK."""
    patch(timer_store / "timerlog" / f"{0:020d}", 50 * 52 + 12, S.INT32.pack(S.MAGIC_BLANK))
    _, rows = verify_rows(timer_store)
    blank = [f for f in rows if f["kind"] == "timerlog-unit" and "a BLANK at timerlog offset 2600" in f["detail"]]
    assert [f["severity"] for f in blank] == ["error"] and "106 unit(s)" in blank[0]["detail"]
