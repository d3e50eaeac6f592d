"""The bad day: wrong targets, damage the broker keeps, short files, a verify that can go green again, and
the small answers scripts branch on (issue 11). Every case runs on a copy of a real fixture store."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, SYSCALL_READ, blocked_in, broker_conf, jsonl, one_line_error, run, truth

A_CONF = broker_conf("a-basic")


# -- 1. something that is not a store never passes as sound ------------------------------------------------


def not_stores(tmp_path: Path, store: Path) -> dict[str, Path]:
    empty = tmp_path / "empty"
    empty.mkdir()
    etc_like = tmp_path / "etc"
    etc_like.mkdir()
    (etc_like / "hosts").write_text("127.0.0.1 localhost\n")
    (etc_like / "ssl").mkdir()
    bare = tmp_path / "bare"  # a commitlog directory and nothing a broker's start leaves
    (bare / "commitlog").mkdir(parents=True)
    return {"empty": empty, "etc": etc_like, "commitlog": store / "commitlog", "bare": bare}


@pytest.mark.parametrize(
    "command",
    [["verify", "--quiet"], ["verify"], ["info"], ["clean", "--check"], ["dump", "commitlog"], ["repair", "--dry-run"]],
)
def test_a_directory_that_is_not_a_store_is_exit_2(tmp_path, store_copy, command):
    store = store_copy("a-basic")
    for name, path in not_stores(tmp_path, store).items():
        line = one_line_error(run(*command, "--store", path), "not a RocketMQ store root")
        if name == "commitlog":
            assert f"the store root is {store}" in line
        elif name == "bare":
            assert "neither lock nor checkpoint" in line
        else:
            assert "no commitlog/ directory" in line


def test_an_empty_store_is_sound_and_said_to_be_empty(store_copy):
    """A new broker's store: commitlog/ and consumequeue/ present, no data, lock and checkpoint."""
    store = store_copy("a-basic")
    for sub in ("commitlog", "consumequeue", "index"):
        shutil.rmtree(store / sub)
    (store / "commitlog").mkdir()
    (store / "consumequeue").mkdir()
    assert run("verify", "--quiet", "--store", store, "--broker-config", A_CONF).exit_code == 0
    res = run("verify", "--store", store, "--broker-config", A_CONF)
    assert res.exit_code == 0 and "is an empty store" in res.stderr, res.stderr
    res = run("info", "--store", store, "--broker-config", A_CONF, "--format", "json")
    assert res.exit_code == 0 and json.loads(res.stdout)["empty"] is True


# -- 4. nothing is created by a typo ----------------------------------------------------------------------


def test_append_to_a_misspelt_store_creates_nothing(tmp_path, store_copy):
    store = store_copy("a-basic")
    typo = store.parent / "stroe"
    one_line_error(
        run("append", "--store", typo, "--broker-config", A_CONF, "--topic", "TopicTest", "--body", "x"),
        "does not exist",
        "--create",
    )
    assert not typo.exists()
    etc_like = not_stores(tmp_path, store)["etc"]
    before = sorted(p.name for p in etc_like.iterdir())
    one_line_error(
        run("append", "--store", etc_like, "--broker-config", A_CONF, "--topic", "T", "--body", "x"),
        "not a RocketMQ store root",
        "--create",
    )
    assert sorted(p.name for p in etc_like.iterdir()) == before  # no lock file either


def test_append_creates_a_store_only_when_asked_or_into_an_empty_directory(tmp_path):
    new = tmp_path / "new" / "store"
    res = run("append", "--store", new, "--broker-config", A_CONF, "--create", "--topic", "T", "--body", "x")
    assert res.exit_code == 0, res.stderr
    assert (new / "commitlog" / f"{0:020d}").exists() and (new / "lock").exists()
    empty = tmp_path / "empty"
    empty.mkdir()  # what the conformance round trip does before `dump | append --jsonl -`
    res = run("append", "--store", empty, "--broker-config", A_CONF, "--topic", "T", "--body", "x")
    assert res.exit_code == 0, res.stderr
    assert run("verify", "--quiet", "--store", empty, "--broker-config", A_CONF).exit_code == 0


def test_a_failed_append_takes_away_the_store_it_made(tmp_path):
    new = tmp_path / "new"
    one_line_error(
        run("append", "--store", new, "--broker-config", A_CONF, "--create", "--topic", "bad topic!", "--body", "x"),
        "topic",
    )
    assert not new.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_error(
        run("append", "--store", empty, "--broker-config", A_CONF, "--topic", "bad topic!", "--body", "x"), "topic"
    )
    assert list(empty.iterdir()) == []


# -- 2. repair does not refuse because of damage the broker keeps --------------------------------------------

D_CONF = broker_conf("d-crashed")
FLIPPED = 4638  # TopicTest/1@1, in the first commitlog file: before the file abnormal recovery starts from


def crashed_with_a_flipped_queue_id(store_copy) -> Path:
    """d-crashed (torn tail, a body byte flipped at 32655) plus a queueId byte of an early record flipped
    (1 -> 3): its body CRC still passes, so RocketMQ 4.9.7's abnormal recovery cuts the tail and keeps it as
    is (checked with the Java oracle: read4.sh reads the same 599 consumequeue units from this store as from
    the store `rmqctl repair` leaves, and from d-crashed itself)."""
    store = store_copy("d-crashed")
    patch_byte(store / "commitlog" / f"{0:020d}", FLIPPED + 15, 0x02)
    return store


def patch_byte(path: Path, pos: int, xor: int):
    with open(path, "r+b") as fh:
        fh.seek(pos)
        b = fh.read(1)[0]
        fh.seek(pos)
        fh.write(bytes([b ^ xor]))


def test_repair_keeps_the_damage_the_broker_keeps_and_says_so(store_copy):
    store = crashed_with_a_flipped_queue_id(store_copy)
    res = run("repair", "--store", store, "--broker-config", D_CONF, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    rows = jsonl(res.stdout)
    kept = {(r["target"], r["commitLogOffset"]) for r in rows if r["action"] == "not-cut"}
    assert ("consumequeue/TopicTest/1/00000000000000000000", FLIPPED) in kept
    assert {r["detail"].split(":")[0] for r in rows if r["action"] == "not-cut"} >= {
        "queue-offset",
        "cq-entry-mismatch",
    }
    assert all("--scan-all" in r["detail"] for r in rows if r["action"] == "not-cut")
    # what RocketMQ's recovery keeps: every record but the torn one, every consumequeue unit before it
    got = jsonl(
        run(
            "dump", "commitlog", "--store", store, "--broker-config", D_CONF, "--body", "none", "--format", "jsonl"
        ).stdout
    )
    assert [m["commitLogOffset"] for m in got] == [
        w["commitLogOffset"] for w in truth("d-crashed", "truth-recovered-messages.jsonl")
    ]
    assert next(m for m in got if m["commitLogOffset"] == FLIPPED)["queueId"] == 3  # kept as it is
    want = truth("d-crashed", "truth-recovered-consumequeue.jsonl")
    have = []
    for topic, qid in sorted({(w["topic"], w["queueId"]) for w in want}):
        units = jsonl(
            run(
                "dump", "consumequeue", topic, qid, "--store", store, "--broker-config", D_CONF, "--format", "jsonl"
            ).stdout
        )
        have += [
            {
                "topic": topic,
                "queueId": qid,
                **{k: u[k] for k in ("queueOffset", "commitLogOffset", "size", "tagsCode")},
            }
            for u in units
        ]
    key = lambda u: (u["topic"], u["queueId"], u["queueOffset"])
    assert sorted(have, key=key) == sorted(want, key=key)
    assert not (store / "abort").exists()


def test_only_findings_the_store_had_before_are_accepted(store_copy):
    from rmqctl.config import load_config
    from rmqctl.checks.verify import Finding, Preexisting, verify
    from rmqctl.store import Store

    s = Store(crashed_with_a_flipped_queue_id(store_copy), load_config(D_CONF))
    before = [f for f in verify(s).findings if f.kind == "cq-entry-mismatch"]
    accept = Preexisting(s)
    assert accept(before[0]) and accept.kept == [before[0]]
    assert not accept(Finding("cq-entry-mismatch", "error", before[0].file, 40, FLIPPED, "created by the change"))


# -- 3. a short or zero-length file ----------------------------------------------------------------------------


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def repair_rows(store: Path, conf: Path, *args) -> list[dict]:
    res = run("repair", "--store", store, "--broker-config", conf, "--format", "jsonl", *args)
    assert res.exit_code == 0, res.stderr
    return jsonl(res.stdout)


def test_a_short_last_commitlog_file_is_padded_and_cut_as_recovery_would(store_copy):
    """kill -9 or a full disk left the last file 20000 bytes long, inside a record. RocketMQ 4.9.7 refuses to
    load the store; after the repair it loads it and reads 1997 messages up to commitlog offset 2575615 (Java
    oracle, read4.sh), which is what this test checks with the truth files."""
    store = store_copy("a-basic")
    last = sorted((store / "commitlog").iterdir())[-1]
    with open(last, "r+b") as fh:
        fh.truncate(20000)
    assert run("verify", "--quiet", "--store", store, "--broker-config", A_CONF).exit_code == 1
    rows = repair_rows(store, A_CONF)
    assert ("pad", f"commitlog/{last.name}") in {(r["action"], r["target"]) for r in rows}
    cut = next(r["commitLogOffset"] for r in rows if r["action"] == "cut")
    assert cut == 2575615 and last.stat().st_size == 65536
    assert run("verify", "--quiet", "--store", store, "--broker-config", A_CONF).exit_code == 0
    got = jsonl(run("dump", "commitlog", "--store", store, "--broker-config", A_CONF, "--body", "none").stdout)
    want = [w for w in truth("a-basic", "truth-messages.jsonl") if w["commitLogOffset"] < cut]
    assert [m["commitLogOffset"] for m in got] == [w["commitLogOffset"] for w in want] and len(want) == 1997


def test_a_zero_length_last_commitlog_file_is_removed(store_copy):
    store = store_copy("a-basic")
    files = sorted((store / "commitlog").iterdir())
    empty = store / "commitlog" / f"{int(files[-1].name) + 65536:020d}"
    empty.touch()
    before = tree(store)
    rows = repair_rows(store, A_CONF)
    assert [(r["action"], r["target"]) for r in rows] == [("remove", f"commitlog/{empty.name}")]
    assert not empty.exists()
    assert {k: v for k, v in tree(store).items() if not k.startswith(".rmqctl-backup-")} == {
        k: v for k, v in before.items() if k != f"commitlog/{empty.name}"
    }
    assert run("verify", "--quiet", "--store", store, "--broker-config", A_CONF).exit_code == 0


def test_a_short_file_before_the_last_is_a_gap_and_never_padded(store_copy):
    store = store_copy("a-basic")
    middle = sorted((store / "commitlog").iterdir())[10]
    with open(middle, "r+b") as fh:
        fh.truncate(30000)
    before = tree(store)
    for args in ([], ["--dry-run"]):
        one_line_error(run("repair", "--store", store, "--broker-config", A_CONF, *args), middle.name, "a gap")
    assert tree(store) == before


def test_short_consumequeue_and_index_files_are_padded(store_copy):
    store = store_copy("a-basic")
    queue = sorted((store / "consumequeue" / "TopicTest" / "0").iterdir())[-1]
    with open(queue, "r+b") as fh:
        fh.truncate(50)  # two units and part of a third
    index = sorted((store / "index").iterdir())[-1]
    with open(index, "r+b") as fh:
        fh.truncate(40 + 100 * 4 + 213 * 20)  # the header, the slots and every entry it counts
    units = queue.read_bytes()[:40]
    entries = index.read_bytes()
    rows = repair_rows(store, A_CONF)
    assert {(r["action"], r["target"]) for r in rows} >= {
        ("pad", f"consumequeue/TopicTest/0/{queue.name}"),
        ("pad", f"index/{index.name}"),
    }
    assert queue.read_bytes() == units + bytes(1280 - 40)
    assert index.read_bytes() == entries + bytes(10680 - len(entries))
    # the units lost with the file's end stay missing, as they were: rebuild consumequeue puts them back
    res = run("verify", "--store", store, "--broker-config", A_CONF, "--format", "jsonl")
    assert {f["kind"] for f in jsonl(res.stdout) if f["severity"] == "error"} == {"cq-missing-entries"}
    assert run("rebuild", "consumequeue", "--store", store, "--broker-config", A_CONF).exit_code == 0
    assert run("verify", "--quiet", "--store", store, "--broker-config", A_CONF).exit_code == 0


# -- 6. exit codes and small wrong answers -----------------------------------------------------------------------

A_STORE = FIXTURES / "a-basic" / "store"


def test_ctrl_c_exits_130_not_1(store_copy):
    """SIGINT to `append --jsonl -` waiting for its input (holding the store's lock): 130, as shells report
    Ctrl-C, and the lock is let go."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from rmqctl.config import load_config
    from rmqctl.store import Store

    store = store_copy("a-basic")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rmqctl",
            "append",
            "--jsonl",
            "-",
            "--store",
            str(store),
            "--broker-config",
            str(A_CONF),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    s = Store(store, load_config(A_CONF))
    deadline = time.monotonic() + 600  # a last guard, far above a start whose kernels compile on a busy machine
    while s.lock_holder() != proc.pid and proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("too slow: append took no lock in 600 s")
        time.sleep(0.05)
    assert s.lock_holder() == proc.pid, proc.stderr.read()
    while not blocked_in(proc.pid, SYSCALL_READ, fds=(0,)) and proc.poll() is None:  # waiting for its input
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("too slow: append did not wait for its input in 600 s")
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("too slow: append did not stop in 600 s after SIGINT")
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert s.lock_holder() is None


def test_query_key_says_nothing_found_with_exit_1_when_asked():
    base = ["query", "key", "TopicTest", "NO-SUCH-KEY", "--store", A_STORE, "--broker-config", A_CONF]
    plain = run(*base)
    assert plain.exit_code == 0 and plain.stdout == ""  # the CLI contract: no match is not an error
    res = run(*base, "--exit-status")
    assert res.exit_code == 1 and res.stdout == "" and "no message of TopicTest with key NO-SUCH-KEY" in res.stderr
    hit = truth("a-basic", "truth-messages.jsonl")[0]
    assert (
        run(
            "query", "key", hit["topic"], hit["uniqKey"], "--store", A_STORE, "--broker-config", A_CONF, "--exit-status"
        ).exit_code
        == 0
    )


def test_dump_consumequeue_resolve_exits_1_on_an_entry_that_does_not_resolve(store_copy):
    store = crashed_with_a_flipped_queue_id(store_copy)
    res = run(
        "dump",
        "consumequeue",
        "TopicTest",
        1,
        "--resolve",
        "--store",
        store,
        "--broker-config",
        D_CONF,
        "--format",
        "jsonl",
    )
    assert res.exit_code == 1, res.stderr
    assert [r["queueOffset"] for r in jsonl(res.stdout) if r["ok"] is False] == [1]
    assert "first at queue offset 1" in res.stderr
    ok = run("dump", "consumequeue", "TopicTest", 0, "--resolve", "--store", store, "--broker-config", D_CONF)
    assert ok.exit_code == 0, ok.stderr


def test_msgid_decode_of_garbage_is_a_usage_error():
    one_line_error(run("msgid", "decode", "hello-world"), "'hello-world' is not a message id")
    good = truth("a-basic", "truth-messages.jsonl")[0]["msgId"]
    one_line_error(run("msgid", "decode", good, "hello-world"), "hello-world")
    assert run("msgid", "decode", good).exit_code == 0


def test_dump_limit_zero_prints_nothing_and_negative_is_refused():
    base = ["dump", "commitlog", "--store", A_STORE, "--broker-config", A_CONF, "--body", "none", "--format", "jsonl"]
    res = run(*base, "--limit", 0)
    assert res.exit_code == 0 and res.stdout == ""
    assert len(jsonl(run(*base, "--limit", 3).stdout)) == 3
    one_line_error(run(*base, "--limit", -1), "--limit")


def test_max_findings_reports_the_true_total():
    store = FIXTURES / "d-crashed" / "store"
    full = run("verify", "--store", store, "--broker-config", D_CONF, "--format", "jsonl")
    total = len(jsonl(full.stdout))
    res = run("verify", "--store", store, "--broker-config", D_CONF, "--format", "jsonl", "--max-findings", 1)
    assert res.exit_code == 1 and len(jsonl(res.stdout)) == 1
    assert f"showing 1 of {total}" in res.stderr and total > 1


def test_offsets_are_worded_one_way(store_copy):
    """A commitlog offset is `commitlog offset N`; a byte inside a file is `position N in FILE`."""
    from rmqctl.config import load_config
    from rmqctl.errors import StoreError
    from rmqctl.store import Store

    s = Store(A_STORE, load_config(A_CONF))
    with pytest.raises(StoreError) as e:
        s.read_message(5)
    assert str(e.value).startswith(f"position 5 in {s.commitlog.files[0].path}: no record starts at commitlog offset 5")
    store = store_copy("d-crashed")
    line = one_line_error(
        run("append", "--store", store, "--broker-config", D_CONF, "--topic", "T", "--body", "x"),
        "torn or garbage tail",
    )
    assert "00000000000000720896 at commitlog offset 782999: " in line


# -- 5. a nightly verify can go green again; --scan-all asks first; restore ----------------------------------


def test_a_baseline_turns_a_repaired_store_green_until_something_new_appears(store_copy, tmp_path):
    store = store_copy("d-crashed")
    assert run("repair", "--store", store, "--broker-config", D_CONF).exit_code == 0
    verify = ["verify", "--store", store, "--broker-config", D_CONF, "--format", "jsonl"]
    assert run(*verify, "--quiet").exit_code == 1  # the body CRC the broker keeps
    base = tmp_path / "accepted.jsonl"
    res = run(*verify, "--write-baseline", base)
    assert res.exit_code == 0 and "wrote 1 finding(s)" in res.stderr
    [line] = jsonl(base.read_text())
    assert (line["kind"], line["file"], line["commitLogOffset"]) == ("body-crc", f"commitlog/{0:020d}", 32655)
    res = run(*verify, "--baseline", base)
    assert res.exit_code == 0 and [f["accepted"] for f in jsonl(res.stdout)] == [True]
    assert run(*verify, "--quiet", "--baseline", base).exit_code == 0
    patch_byte(store / "commitlog" / f"{65536:020d}", 3000, 0xFF)  # new damage: a body byte of another record
    res = run(*verify, "--baseline", base)
    assert res.exit_code == 1
    new = [f for f in jsonl(res.stdout) if not f.get("accepted") and f["severity"] == "error"]
    assert [f["kind"] for f in new] == ["body-crc"] and new[0]["file"] == f"commitlog/{65536:020d}"
    base.write_text("not json\n")
    one_line_error(run(*verify, "--baseline", base), "line 1", "--write-baseline")


def test_scan_all_says_what_it_drops_and_needs_yes(store_copy):
    store = store_copy("d-crashed")
    before = tree(store)
    line = one_line_error(run("repair", "--scan-all", "--store", store, "--broker-config", D_CONF), "--yes")
    assert "cuts the commitlog at commitlog offset 32655" in line and "574 record(s) more" in line
    assert tree(store) == before
    assert run("repair", "--scan-all", "--dry-run", "--store", store, "--broker-config", D_CONF).exit_code == 0
    assert run("repair", "--scan-all", "--yes", "--store", store, "--broker-config", D_CONF).exit_code == 0
    assert tree(store) != before


def live(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in tree(root).items() if not k.startswith(".rmqctl-backup-")}


def test_restore_puts_back_what_repair_and_rebuild_replaced(store_copy):
    store = store_copy("d-crashed")
    original = live(store)
    assert run("repair", "--store", store, "--broker-config", D_CONF).exit_code == 0
    repaired = live(store)
    [backup] = jsonl(run("restore", "--store", store, "--format", "jsonl").stdout)
    assert backup["command"] == "repair" and backup["items"] == 5
    res = run("restore", backup["backup"], "--store", store, "--dry-run")
    assert res.exit_code == 0 and live(store) == repaired
    res = run("restore", backup["backup"], "--store", store, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert live(store) == original
    assert not (store / backup["backup"]).exists()
    # the restore kept what it replaced: restoring that backup redoes the repair
    [again] = jsonl(run("restore", "--store", store, "--format", "jsonl").stdout)
    assert again["command"] == f"restore {backup['backup']}"
    assert run("restore", again["backup"], "--store", store).exit_code == 0
    assert live(store) == repaired
    # a whole directory swapped by a rebuild comes back too
    shutil.rmtree(store / "consumequeue")
    gone = live(store)
    assert run("rebuild", "consumequeue", "--store", store, "--broker-config", D_CONF).exit_code == 0
    rebuilt = [
        b
        for b in jsonl(run("restore", "--store", store, "--format", "jsonl").stdout)
        if b["command"] == "rebuild consumequeue"
    ]
    assert run("restore", rebuilt[0]["backup"], "--store", store).exit_code == 0
    assert live(store) == gone


def test_restore_refuses_what_is_not_a_backup_and_a_held_lock(store_copy):
    from conftest import held_lock

    store = store_copy("d-crashed")
    one_line_error(run("restore", "commitlog", "--store", store), "not a backup directory")
    assert run("repair", "--store", store, "--broker-config", D_CONF).exit_code == 0
    [backup] = jsonl(run("restore", "--store", store, "--format", "jsonl").stdout)
    with held_lock(store):
        one_line_error(run("restore", backup["backup"], "--store", store), "locked")
