"""Read beside a running broker: a real RocketMQ 4.9.7 store (../shared/java-oracle's live-broker.sh) puts
messages, dispatches them, and deletes its expired head files while every read command and the Python API run
beside it. Required: no internal error, no traceback, no false alarm (verify exits 0, lookups of a message that
exists find it), then a clean stop after which verify finds the store sound and RocketMQ's own reload
(read4.sh) agrees with rmqctl's reading. Bounded by counts (rounds of reads, lines of the broker's progress),
not clocks; the random choices are seeded."""

from __future__ import annotations

import dataclasses
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import broker_conf, copy_store, held_lock, jsonl, patch, run, tmpfs_at, truth
from rmqctl import schema as S
from rmqctl.checks.verify import verify
from rmqctl.config import load_config
from rmqctl.schema import MAGIC_AT
from rmqctl.store import Store

ROUNDS = 15
RATE = 150  # msgs/s: 1 MiB commitlog files fill in about two seconds
RESERVED_MS = 10_000  # files older than this are deleted every 5 s after the broker's first 20 s
MANUAL_S = 15  # and every 15 s executeDeleteFilesManually() deletes all but the newest
QUEUES = {"TopicA": 4, "TopicB": 2, "TopicC": 8}
PROGRESS = re.compile(r"deletedCl=(\d+)")


@pytest.fixture(scope="module")
def broker(tmp_path_factory, java_oracle):
    """A running live-broker.sh on a near-empty tmpfs (its cleaner goes by age, not by how full this machine's
    disk is: above diskSpaceWarningLevelRatio it deletes files its flush has not reached and never reports),
    returned once it has deleted its first expired file (its progress lines say so); stopped cleanly through
    DIR/STOP by the test that wants it stopped, killed at the end otherwise."""
    with tmpfs_at(tmp_path_factory.mktemp("live") / "mnt", "512m") as home:
        yield from _running_broker(home, java_oracle)


def _running_broker(home: Path, java_oracle: Path):
    proc = subprocess.Popen(
        [str(java_oracle / "live-broker.sh"), str(home), "600", str(RATE), str(RESERVED_MS), str(MANUAL_S)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen = []
    for line in proc.stdout:
        seen.append(line)
        found = PROGRESS.search(line)
        if found and int(found.group(1)) > 0:
            break
    else:
        pytest.fail(f"live-broker.sh ended before deleting a file:\n{''.join(seen[-20:])}")
    yield proc, home
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def cli(home: Path, *args):
    """A read command on the live store: never an internal error, a traceback or a warning on stderr."""
    res = run(*args, "--store", home / "store", "--broker-config", home / "broker.conf", "--format", "jsonl")
    assert "internal error" not in res.stderr and "Traceback" not in res.stderr, (args, res.stderr)
    assert res.exit_code in (0, 1), (args, res.exit_code, res.stderr)
    return res


def expired(home: Path, offset: int) -> bool:
    """Deleted by the broker since it was read (a lookup of it may rightly find nothing)."""
    return Store(home / "store", load_config(home / "broker.conf")).expired(offset)


def newest_records(home: Path) -> list[dict]:
    end = json.loads(cli(home, "info").stdout)["commitlog"]["maxOffset"]
    return jsonl(cli(home, "dump", "commitlog", "--from", max(0, end - 100_000), "--body", "none").stdout)


def lookups(home: Path, pick: dict):
    """locate, msgid lookup (offset msgId and UNIQ_KEY) and query key find the message just read, unless the
    broker deleted it meanwhile."""
    offset = pick["commitLogOffset"]
    res = cli(home, "locate", offset)
    assert res.exit_code == 0, res.stderr
    for msg_id in (pick["msgId"], pick["uniqKey"]):
        res = cli(home, "msgid", "lookup", msg_id, "--body", "none")
        assert res.exit_code == 0 or expired(home, offset), (msg_id, res.stderr)
    key = (pick["properties"].get("KEYS") or pick["uniqKey"]).split()[0]
    res = cli(home, "query", "key", pick["topic"], key, "--body", "none")
    assert res.exit_code == 0 and res.stderr == "", res.stderr
    assert offset in {m["commitLogOffset"] for m in jsonl(res.stdout)} or expired(home, offset), key


def test_every_read_beside_a_running_broker(broker):
    proc, home = broker
    rng = random.Random(33)
    for _ in range(ROUNDS):
        records = newest_records(home)
        assert records, "the newest 100 KB of the commitlog hold no record"
        lookups(home, rng.choice(records))
        for args in (
            ["dump", "commitlog", "--body", "none"],
            ["dump", "index"],
            ["dump", "checkpoint"],
            ["verify"],
            ["verify", "--deep"],
        ):
            res = cli(home, *args)
            assert res.exit_code == 0, (args, res.stdout[-2000:], res.stderr)
        topic = rng.choice(sorted(QUEUES))
        res = cli(home, "dump", "consumequeue", topic, rng.randrange(QUEUES[topic]), "--resolve")
        assert res.exit_code == 0, res.stderr
        info = json.loads(cli(home, "info").stdout)  # (the JVM is exec'd: it has the script's pid)
        assert info["lockHeldBy"] == proc.pid and info["abort"] and not any("abort" in o for o in info["odd"])
        store = Store(home / "store", load_config(home / "broker.conf"))
        table = store.scan().table()
        offsets = table.column("commitLogOffset").to_pylist()
        last_end = offsets[-1] + table.column("storeSize")[-1].as_py()
        end, file_size = store.live.commitlog_end, store.commitlog.file_size
        # the scan reads up to the snapshot's last whole record, or to the BLANK that closes its last file
        assert offsets == sorted(offsets) and (last_end == end or (end % file_size == 0 and last_end < end))
    assert proc.poll() is None, "the broker stopped during the reads"


def test_clean_stop_then_rocketmq_agrees(broker, java_oracle, tmp_path):
    """After the broker's clean shutdown: verify finds the store sound, and RocketMQ's reload of it reads the
    same records, commitlog range and consumequeue units as rmqctl."""
    import oracle

    proc, home = broker
    (home / "STOP").touch()
    proc.stdout.read()
    assert proc.wait() == 0
    store, conf = home / "store", home / "broker.conf"
    assert not (store / "abort").exists()
    res = run("verify", "--store", store, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stdout + res.stderr
    reading = oracle.read(java_oracle, 4, store, conf, tmp_path)
    view = oracle.rmqctl_view(store, conf)
    for what, summary, lines in (
        ("on the broker's consumequeues", reading.summary, reading.lines),
        ("on consumequeues it dispatched itself", reading.own_summary, reading.own_lines),
    ):
        assert summary["loadReturned"] and not summary["abnormalRecovery"], what
        assert not {k: v for k, v in oracle.problems(summary).items() if k != "messagesRead"}, what
        assert (summary["messageCount"], summary["maxPhyOffset"], summary["minPhyOffset"]) == (
            view["messageCount"],
            view["maxPhyOffset"],
            view["minPhyOffset"],
        ), what
        # units of messages the cleaner deleted stay in a queue's first file: RocketMQ cannot read them either
        expired = [l for l in lines if l["commitLogOffset"] < view["minPhyOffset"]]
        assert all(not l["ok"] for l in expired), what
        served = [l for l in lines if l["commitLogOffset"] >= view["minPhyOffset"]]
        assert view["units"]
        oracle.assert_same_units(sorted(served, key=oracle.unit_key), view["units"], what)


# -- the same rules on stopped stores: expired is not broken; a held lock is a running broker -----------------


def cleaned(tmp_path: Path, name: str, files: int = 2) -> Path:
    """A copy of a fixture whose first commitlog files were deleted as the broker's cleaner deletes them (its
    consumequeue units and index entries pointing there stay)."""
    root = copy_store(name, tmp_path)
    for f in sorted((root / "commitlog").iterdir())[:files]:
        f.unlink()
    return root


def expired_message(name: str, below: int) -> dict:
    return next(m for m in truth(name, "truth-messages.jsonl") if m.get("keys") and m["commitLogOffset"] < below)


def test_expired_is_not_broken(tmp_path):
    root, conf = cleaned(tmp_path, "a-basic"), broker_conf("a-basic")
    first = 2 * 65536
    res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert (res.exit_code, res.stdout) == (0, "")
    res = run(
        "dump",
        "consumequeue",
        "TopicTest",
        "0",
        "--resolve",
        "--store",
        root,
        "--broker-config",
        conf,
        "--format",
        "jsonl",
    )
    assert res.exit_code == 0 and res.stderr == ""
    rows = jsonl(res.stdout)
    gone = [r for r in rows if r["commitLogOffset"] < first]
    assert gone and all(r == {**r, "resolved": None, "ok": None, "expired": True, "problem": None} for r in gone)
    assert all(r["ok"] for r in rows if r["commitLogOffset"] >= first)
    m = expired_message("a-basic", first)
    key = m["keys"].split()[0]
    res = run("query", "key", m["topic"], key, "--store", root, "--broker-config", conf)
    # nothing found, and no warning about the index entries of the deleted message
    assert (res.exit_code, res.stdout, res.stderr) == (
        0,
        "",
        f"rmqctl: no message of {m['topic']} with key {key} in {root}\n",
    )
    res = run("msgid", "lookup", m["msgId"], "--store", root, "--broker-config", conf)
    assert res.exit_code == 1 and res.stderr == (
        f"rmqctl: no message with id {m['msgId']} in {root}: as an offset msgId it names commitlog offset "
        f"{m['commitLogOffset']}, below the commitlog's first file (expired: the broker deleted it)\n"
    )


def test_index_keys_of_expired_messages_are_not_lost_on_recovery(tmp_path):
    """After a kill -9 (abort) with an indexMsgTimestamp that makes the broker drop its index files, the keys
    it loses are those of messages it still holds, not of the ones it already deleted."""
    root, conf = cleaned(tmp_path, "d-crashed"), broker_conf("d-crashed")
    patch(root / "checkpoint", S.CHECKPOINT_AT["indexMsgTimestamp"], bytes(8))
    res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
    lost = [f for f in jsonl(res.stdout) if f["kind"] == "index-lost-on-recovery"]
    assert lost and all(f["commitLogOffset"] >= 2 * 65536 for f in lost)
    held = sum(int(re.search(r": (\d+) key\(s\)", f["detail"]).group(1)) for f in lost)
    first = Store(root, load_config(conf)).commitlog.min_offset
    begin = int(re.search(r"re-indexes only from (\d+)", lost[0]["detail"]).group(1))
    dump = run("dump", "index", "--store", root, "--broker-config", conf, "--format", "jsonl")
    entries = [e for e in jsonl(dump.stdout) if e["kind"] == "entry"]
    assert any(e["phyOffset"] < first for e in entries)
    assert held == sum(1 for e in entries if first <= e["phyOffset"] < begin)


def test_a_lock_held_by_another_process_is_a_running_broker(tmp_path):
    """`info` and verify call the abort file of a broker holding the lock its running marker (any holder that
    is not an rmqctl: the safe reading); without the lock it is an unclean exit."""
    root, conf = copy_store("d-crashed", tmp_path), broker_conf("d-crashed")
    res = run("info", "--store", root, "--broker-config", conf, "--format", "table")
    assert "state      broker stopped; abort PRESENT (unclean exit), lock free\n" in res.stdout
    with held_lock(root) as holder:
        end = Store(root, load_config(conf)).live.commitlog_end
        res = run("info", "--store", root, "--broker-config", conf, "--format", "table")
        assert (
            f"state      broker running (pid {holder.pid}): abort is its running marker; read as the store was "
            f"when this began (commitlog to offset {end})\n"
        ) in res.stdout
        assert "odd:" not in res.stdout
        res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
        kinds = {f["kind"] for f in jsonl(res.stdout)}
        assert "live" in kinds and "abnormal-recovery" not in kinds and "torn-tail" not in kinds


def test_dry_runs_take_no_lock_and_writers_wait(tmp_path):
    root, conf = copy_store("d-crashed", tmp_path), broker_conf("d-crashed")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    with held_lock(root) as holder:
        for argv in (["repair", "--dry-run"], ["rebuild", "index", "--dry-run"]):
            res = run(*argv, "--store", root, "--broker-config", conf, "--format", "jsonl")
            assert res.exit_code == 0, res.stderr
            assert res.stderr.splitlines()[0] == (
                f"rmqctl: live: a broker (pid {holder.pid}) is running: this dry run planned from the store as it was "
                "when it began; the plan may change before the broker stops"
            )
        res = run("repair", "--wait", "0.2", "--store", root, "--broker-config", conf)
        assert (res.exit_code, res.stderr) == (
            2,
            f"rmqctl: {root / 'lock'}: the store is locked: a broker (or another rmqctl) is using it (waited 0.2 s)\n",
        )
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    releasing = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import fcntl, os, sys\n"
                f"fd = os.open({str(root / 'lock')!r}, os.O_RDWR)\n"
                "fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)\n"
                "print('locked', flush=True)\n"
                "sys.stdin.readline()\n"
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert releasing.stdout.readline().strip() == "locked"
    waiter = subprocess.Popen(
        [sys.executable, "-m", "rmqctl", "repair", "--wait", "600", "--store", str(root), "--broker-config", str(conf)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    releasing.communicate("\n")  # the holder goes: the waiting repair takes the lock and runs
    out, err = waiter.communicate()
    assert waiter.returncode == 0, err
    assert not (root / "abort").exists()


def test_a_writer_keeps_its_lock_while_it_reads(tmp_path):
    """fcntl locks go when any descriptor of the file closes: asking who holds the lock (as every read of a
    store does now) must not open and close the lock file of a process that holds it."""
    import os

    from rmqctl.lock import store_lock

    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    ask = [sys.executable, "-c", f"from rmqctl.lock import lock_holder; print(lock_holder({str(root / 'lock')!r}))"]
    with store_lock(root):
        store = Store(root, load_config(conf))
        assert store.live is None and store.lock_holder() is None  # this process's own lock is no broker
        assert sum(1 for _ in store.scan().records()) == 2000
        assert subprocess.run(ask, capture_output=True, text=True).stdout.strip() == str(os.getpid())
    assert subprocess.run(ask, capture_output=True, text=True).stdout.strip() == "None"


def test_an_engine_and_reference_disagreement_inside_the_store_is_an_error(tmp_path):
    """The walk's fallback (the engine stopped, the reference reads a record there) means a moving tail only
    past a live snapshot's end; on a stopped store, or before that end, whole records do not change: it is an
    rmqctl bug, never a quiet early end. Called at a real record, as the engine would after refusing it."""
    from rmqctl.checks.scan import Task, _Scanner

    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    config = load_config(conf)
    store = Store(root, config)
    walk = store.scan(allow_v2=False)
    first = walk.queue.files[0]
    with pytest.raises(AssertionError, match="the engine refused a record the reference reads"):
        walk._refused_at(first, 0, walk.queue.file_size)
    task = Task(
        path=str(first.path),
        name=first.name,
        file_start=first.start,
        file_size=walk.queue.file_size,
        begin=0,
        forced=True,
        claim_from=0,
        stop=walk.queue.file_size,
        config=config,
    )
    with pytest.raises(AssertionError, match="the verify kernel refused the record at 0"):
        _Scanner(task, first.buf, walk.queue.file_size).after_stop(0)
    moving = _Scanner(dataclasses.replace(task, moving_from=0), first.buf, walk.queue.file_size)
    assert moving.after_stop(0) is None and [k for k, *_ in moving.findings] == ["moving-tail"]
    store.close()
    with held_lock(root):
        live = Store(root, config)
        walk = live.scan(allow_v2=False)
        with pytest.raises(AssertionError):  # before the snapshot's end: records there are whole
            walk._refused_at(walk.queue.files[0], 0, walk.queue.file_size)
        live.close()


def test_damage_before_a_live_stores_last_record_is_not_in_flight(tmp_path):
    """Bytes in the last commitlog file that are no record, with whole records after them, are damage: the
    snapshot's end is past them and verify beside a running broker reports them (exit 1), not 'in flight'."""
    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    config = load_config(conf)
    with held_lock(root):
        store = Store(root, config)
        end = store.live.commitlog_end
        last = store.commitlog.files[-1]
        offsets = [rec.physicalOffset for _, rec in store.scan(allow_v2=False).records(start=last.start)]
        store.close()
        middle = offsets[len(offsets) // 2]
        patch(last.path, middle - last.start + MAGIC_AT, bytes(4))
        assert Store(root, config).live.commitlog_end == end
        res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
        assert res.exit_code == 1
        assert any(f["severity"] == "error" and f["commitLogOffset"] == middle for f in jsonl(res.stdout))


def test_a_unit_past_a_live_snapshot_in_mid_queue_is_damage(tmp_path):
    """A live queue loses only its trailing run of units past the snapshot's end (the broker's dispatch since):
    a unit past the end with units inside it after it is damage, the queue is read on past it and verify
    reports it."""
    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    config = load_config(conf)
    stopped = sum(len(arr) for _, _, _, arr in Store(root, config).consume_queue("TopicTest", 0).units())
    qfile = sorted((root / "consumequeue" / "TopicTest" / "0").iterdir())[-1]
    with held_lock(root):
        store = Store(root, config)
        end = store.live.commitlog_end
        patch(qfile, 2 * S.CQ_UNIT_SIZE, S.INT64.pack(end + 4096))
        assert sum(len(arr) for _, _, _, arr in store.consume_queue("TopicTest", 0).units()) == stopped
        store.close()
        res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
        assert res.exit_code == 1
        assert any(
            f["severity"] == "error" and f["file"].endswith(qfile.name) and f["position"] == 2 * S.CQ_UNIT_SIZE
            for f in jsonl(res.stdout)
        )


def test_a_writer_that_waited_for_the_lock_reads_the_store_afresh(tmp_path):
    """A snapshot taken while another process held the lock (a writer waiting with --wait) is where the store
    ended then: once the writer holds the lock it works on the store as it is, not on that snapshot."""
    from rmqctl.maintenance.staging import writing

    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    store = Store(root, load_config(conf))
    with held_lock(root):
        assert store.live is not None
    with writing(store, False, "rebuild") as (_, current):
        assert current is not store and current.live is None
        assert sum(1 for _ in current.scan().records()) == 2000
    res = run("rebuild", "consumequeue", "--wait", "5", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr


def test_a_lock_held_by_another_rmqctl_keeps_the_crash_checks(tmp_path):
    """Another rmqctl writing a crashed store holds its lock: that is no running broker, `abort` still means an
    unclean exit, and verify keeps the abnormal-recovery prediction. The holder runs as a script named
    rmqctl, as the console script does."""
    root, conf = copy_store("d-crashed", tmp_path), broker_conf("d-crashed")
    script = tmp_path / "bin" / "rmqctl"
    script.parent.mkdir()
    script.write_text(
        "import fcntl, os, sys\n"
        f"fd = os.open({str(root / 'lock')!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)\n"
        "print('locked', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    holder = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        res = run("info", "--store", root, "--broker-config", conf, "--format", "table")
        assert (
            f"state      another rmqctl (pid {holder.pid}) is writing the store; abort PRESENT (unclean exit)\n"
            in res.stdout
        )
        res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
        kinds = {f["kind"] for f in jsonl(res.stdout)}
        assert "abnormal-recovery" in kinds and "live" in kinds
        assert res.stderr.startswith(f"rmqctl: live: another rmqctl (pid {holder.pid}) holds the store lock: ")
    finally:
        holder.communicate("\n")


def test_a_holder_whose_pid_is_not_visible_is_still_a_holder():
    """F_GETLK reports pid 0 for a holder in another pid namespace: still a running broker, not a free lock."""
    from rmqctl.cli.info_cmds import _broker_state

    held = {"lockHeldBy": 0, "lockHeldByRmqctl": False, "abort": True, "commitlog": {"maxOffset": 65536}}
    assert _broker_state(held) == (
        "broker running (pid not visible): abort is its running marker; read as the "
        "store was when this began (commitlog to offset 65536)"
    )


def test_the_record_at_a_live_index_files_end_may_be_partly_indexed(tmp_path):
    """IndexService.buildIndex moves the header's endPhyOffset at each key it puts: beside a running broker
    the record at endPhyOffset may have only some of its keys indexed yet, which verify --deep must not call
    missing. Made here by taking the newest index file's last entry back out of its count."""
    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    newest = sorted((root / "index").iterdir())[-1]
    for field in ("indexCount", "hashSlotCount"):  # the last entry took a new slot: the header as before it
        at = S.INDEX_HEADER_AT[field]
        patch(newest, at, S.INT32.pack(S.INT32.unpack_from(newest.read_bytes(), at)[0] - 1))
    with held_lock(root):
        res = run("verify", "--deep", "--store", root, "--broker-config", conf, "--format", "jsonl")
        assert res.exit_code == 0, res.stdout


def test_clean_plans_without_a_file_the_broker_deleted_since_the_listing(tmp_path):
    """The broker's own cleaner deletes the commitlog's head and an index file while `clean` reads the store to
    plan: the plan leaves them out and the snapshot notes the deletions (it was an error line, exit 2). On a
    stopped store a file that vanishes mid-read stays an error."""
    from rmqctl.errors import FileGone
    from rmqctl.maintenance.clean import load_state
    from rmqctl.maintenance.clean_rules import CleanSettings

    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    config = load_config(conf)
    with held_lock(root):
        store = Store(root, config)
        head, index = store.commitlog.files[0], store.index_paths()[0]
        assert store.live is not None and len(store.commitlog.files) > 1
        head.path.unlink()
        index.unlink()
        state = load_state(store, CleanSettings.from_config(config, 4))
        assert head.path not in [f.path for f in state.commitlog] and state.commitlog
        assert index not in [f.path for f, _ in state.index]
        assert [getattr(f, "path", f) for f, _, _ in store.live.moved] == [head.path]  # (the index listed anew)
        store.close()
    store = Store(root, config)
    store.commitlog.files[0].path.unlink()
    with pytest.raises(FileGone):
        load_state(store, CleanSettings.from_config(config, 4))
    store.close()


@pytest.mark.parametrize("when", ["__init__", "check"])
def test_a_queue_file_the_broker_deletes_during_verify_is_its_expired_head(tmp_path, monkeypatch, when):
    """The broker's CleanConsumeQueueService deletes a queue's head file while verify reads the queue (before
    its units are read, or between their two reads): verify goes on without it, notes it with what moved and
    finds nothing (it started the whole run again, at most three times, and then ended with exit 2)."""
    from rmqctl.checks.consumequeue import QueueSummary

    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    head = root / "consumequeue" / "OrderTopic" / "0" / "00000000000000000000"
    original = getattr(QueueSummary, when)

    def broker_deletes_first(self, *args):  # the deletion lands right before this step reads the queue
        cq = self.cq if when == "check" else args[1]
        if cq.files.files and cq.files.files[0].path == head and head.exists():
            head.unlink()
        return original(self, *args)

    monkeypatch.setattr(QueueSummary, when, broker_deletes_first)
    with held_lock(root):
        store = Store(root, load_config(conf))
        result = verify(store, jobs=1)
        assert not head.exists() and result.restarted_after == []
        assert [(f.kind, f.severity) for f in result.findings if f.severity != "info"] == []
        assert head in [getattr(f, "path", f) for f, _, _ in store.live.moved]
        store.close()


def test_an_offset_committed_after_the_snapshot_is_not_ahead_of_the_queue(tmp_path):
    """`consumers` beside a running broker reads consumerOffset.json after the snapshot that bounds the queues:
    a consumer that committed a message the broker wrote and dispatched since is within the queue as it is
    now, not "ahead-of-max" (exit 1 on a healthy store). Played on a-basic: its last record (OrderTopic/1,
    queue offset 159) and its unit are held back until the snapshot is taken, then written as the broker would."""
    from rmqctl.views.offsets import consumers

    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    (root / "config" / "consumerOffset.json").write_text('{"offsetTable":{"OrderTopic@groupA":{1:160}}}')
    record, at, size = root / "commitlog" / "00000000000002555904", 22655, 1977
    unit_at = 159 * S.CQ_UNIT_SIZE  # in the queue's files of 1280 bytes (mappedFileSizeConsumeQueue)
    queue, pos = root / "consumequeue" / "OrderTopic" / "1" / f"{unit_at // 1280 * 1280:020d}", unit_at % 1280
    held = [(record, at, record.read_bytes()[at : at + size]), (queue, pos, queue.read_bytes()[pos : pos + 20])]
    for path, pos, data in held:
        patch(path, pos, bytes(len(data)))
    with held_lock(root):
        store = Store(root, load_config(conf))
        assert store.live is not None  # (the snapshot, taken before the broker writes)
        for path, pos, data in held:
            patch(path, pos, data)
        rows, _ = consumers(store)
        assert [(r.topic, r.queueId, r.offset, r.maxOffset, r.status, r.lag, r.note) for r in rows] == [
            ("OrderTopic", 1, 160, 159, "ok", 0, "committed after this read's snapshot; the queue's max is 160 now")
        ]
        store.close()


def test_reporting_what_moved_takes_no_snapshot(tmp_path):
    """report_moved runs in a finally, after the command (or its error): it reports the snapshot the command
    took and never takes one itself, which could raise over the command's own error."""
    from rmqctl.cli.options import StoreContext

    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    ctx = StoreContext(str(root), str(conf), "jsonl", True, writes=True)
    store = ctx.writable_store()
    with held_lock(root):
        ctx.report_moved()
        assert "live" not in store.__dict__


def test_a_dry_run_beside_the_locks_holder_does_not_call_its_staging_interrupted(tmp_path):
    """Staging found while another process holds the lock may be that process's run in progress."""
    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    (root / ".rmqctl-rebuild-1").mkdir()
    with held_lock(root) as holder:
        res = run("rebuild", "index", "--dry-run", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert (
        f"rmqctl: note: another process holds the lock (pid {holder.pid}): what it staged (uncommitted) may be "
        "its run in progress; if that run was interrupted, it will be deleted (rolled back) by the next rmqctl "
        "writing command; the store is unchanged\n"
    ) in res.stderr
    assert "interrupted rmqctl run is pending" not in res.stderr


def test_an_index_header_that_never_holds_still_is_refused(tmp_path):
    """freeze_index reads the header until two reads of it agree; when the header changes during every read
    there is no consistent view of the file: a StoreError naming it, never a silent mixed copy. The writer is
    played by the buffer itself, which counts up the header's indexCount at each read of it."""
    from rmqctl.errors import StoreError
    from rmqctl.live import freeze_index

    slots = 8
    path = tmp_path / "20261122022334543"

    class Written(bytearray):
        def __getitem__(self, at):
            if isinstance(at, slice) and at.start in (None, 0):
                count_at = S.INDEX_HEADER_AT["indexCount"]
                S.INT32.pack_into(self, count_at, S.INT32.unpack_from(self, count_at)[0] + 1)
            return bytearray.__getitem__(self, at)

    buf = Written(S.INDEX_HEADER_SIZE + slots * S.HASH_SLOT_SIZE + 4 * S.INDEX_ENTRY_SIZE)
    with pytest.raises(StoreError, match=f"{path}: the index file's header changed during each of 1000 reads of it"):
        freeze_index(path, buf, slots)


def test_an_index_file_written_during_the_slots_copy_is_read_as_at_its_header(tmp_path):
    """The broker indexes a key while freeze_index copies the hash slots (after the header): the copy is the
    file as its header counts it, the new entry's slot followed back to the entry it replaced. The writer is
    played by the buffer, which at the read of the slots writes entry 2 (prevIndex 1), sets slot 3 to it and
    counts it in the header, in IndexFile.putKey's order."""
    from rmqctl.live import freeze_index

    slots = 8
    path = tmp_path / "20261122022334543"
    count_at, entries_at = S.INDEX_HEADER_AT["indexCount"], S.INDEX_HEADER_SIZE + slots * S.HASH_SLOT_SIZE
    slot_at = S.INDEX_HEADER_SIZE + 3 * S.HASH_SLOT_SIZE
    prev_at = S.INDEX_ENTRY_AT["prevIndex"]

    class Written(bytearray):
        def __getitem__(self, at):
            if isinstance(at, slice) and at.start == S.INDEX_HEADER_SIZE:
                S.INT32.pack_into(self, entries_at + 2 * S.INDEX_ENTRY_SIZE + prev_at, 1)
                S.INT32.pack_into(self, slot_at, 2)
                S.INT32.pack_into(self, count_at, 3)
            return bytearray.__getitem__(self, at)

    buf = Written(entries_at + 4 * S.INDEX_ENTRY_SIZE)
    S.INT32.pack_into(buf, count_at, 2)
    S.INT32.pack_into(buf, slot_at, 1)
    frozen = freeze_index(path, buf, slots)
    assert S.INT32.unpack_from(frozen.buf, count_at)[0] == 2
    assert S.INT32.unpack_from(frozen.buf, slot_at)[0] == 1
    assert bytes(frozen.buf[entries_at + 2 * S.INDEX_ENTRY_SIZE : entries_at + 3 * S.INDEX_ENTRY_SIZE]) == bytes(
        S.INDEX_ENTRY_SIZE
    )


def test_an_index_file_deleted_under_a_live_read_is_noted(tmp_path):
    """An index file the broker deletes (its expired head) after the snapshot listed it is left out of the
    read, and the snapshot's `moved` says so (the CLI prints it), as for commitlog and consumequeue files."""
    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    with held_lock(root):
        store = Store(root, load_config(conf))
        listed = store.index_paths()
        assert store.live is not None
        listed[0].unlink()
        assert store.open_index_file(listed[0]) is None  # as index_files() opens what it listed
        assert [(getattr(f, "path", f), pos) for f, pos, _ in store.live.moved] == [(listed[0], 0)]
        store.close()


def _sound_and_noted(store, result, deleted):
    """verify went on without restarting, found nothing, and what moved names each file deleted under it."""
    assert result.restarted_after == []
    assert [(f.kind, f.severity, f.detail) for f in result.findings if f.severity != "info"] == []
    noted = {Path(getattr(f, "path", f)) for f, _, _ in store.live.moved}
    assert set(deleted) <= noted and not any(p.exists() for p in deleted)


def test_a_commitlog_file_deleted_between_its_mapping_and_its_extents_is_the_expired_head(tmp_path, monkeypatch):
    """The broker's cleaner may delete the head file after verify mapped it and before verify asks the
    filesystem where its data is (SEEK_DATA): its records are expired (the head moved), as the units and index
    entries pointing there are; not `No such file or directory` and exit 2, and no run started again."""
    from rmqctl.checks import scan

    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    head = sorted((root / "commitlog").iterdir())[0]
    mapped = scan.open_map

    def map_then_lose_the_head(path):
        buf = mapped(path)
        if str(path) == str(head) and head.exists():
            head.unlink()  # as the cleaner does, between the map and data_extents
        return buf

    monkeypatch.setattr(scan, "open_map", map_then_lose_the_head)
    with held_lock(root):
        store = Store(root, load_config(conf))
        result = verify(store)
        _sound_and_noted(store, result, [head])
        store.close()


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("when", ["walk", "windows"])
def test_commitlog_head_files_the_broker_deletes_during_verify_are_expired(tmp_path, monkeypatch, jobs, when):
    """The broker's cleaner deletes the first three commitlog files while verify walks the commitlog (at the
    walk of the third: the first two are walked already) or after the walk, before the windows walk them again
    for their columns: their records are expired, with the units and index entries pointing into them; nothing
    is found, nothing is started again (a verify longer than the cleaner's cycle ended with exit 2 after three
    restarts). A file that is not at the head, or the last one, is not the cleaner's: verify starts again."""
    from rmqctl.checks import commitlog

    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    heads = sorted((root / "commitlog").iterdir())[:3]
    walked = commitlog.scan_chunk

    def cleaner_runs(task):
        if when == "walk" and Path(task.path) == heads[2] or when == "windows" and task.columns_only:
            for p in heads:
                p.unlink(missing_ok=True)
        return walked(task)

    monkeypatch.setattr(commitlog, "scan_chunk", cleaner_runs)
    with held_lock(root):
        store = Store(root, load_config(conf))
        result = verify(store, jobs=jobs, deep=True, window=100 if when == "windows" else None)
        _sound_and_noted(store, result, heads)
        assert (result.stats["records"] < 2000) == (when == "walk")  # (walked before they went: checked)
        store.close()


def test_a_commitlog_file_gone_past_the_head_restarts_verify(tmp_path, monkeypatch):
    """A file deleted behind a head that is still there is not the broker's cleaning (it goes from the head):
    verify starts again on a new snapshot, which sees the hole and names it."""
    from rmqctl.checks import commitlog

    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    middle = sorted((root / "commitlog").iterdir())[5]
    walked = commitlog.scan_chunk

    def someone_deletes(task):
        if Path(task.path) == middle:
            middle.unlink(missing_ok=True)
        return walked(task)

    monkeypatch.setattr(commitlog, "scan_chunk", someone_deletes)
    with held_lock(root):
        store = Store(root, load_config(conf))
        result = verify(store, jobs=1)
        store.close()
    assert [Path(p) for p in result.restarted_after] == [middle]
    assert "file-gap" in {f.kind for f in result.findings}


@pytest.mark.parametrize("commitlog_head", ["deleted", "shut down but still there"])
def test_an_index_file_the_broker_deletes_during_verify_is_expired(tmp_path, monkeypatch, commitlog_head):
    """The broker's cleaner deletes head commitlog files, then the index file whose entries all point below the
    new min offset (IndexService.deleteExpiredFile), while verify --deep checks the index: the file is left out
    with its entries, the keys it held are of expired records, also when the commitlog file they are in is
    still there (destroyed while referenced); nothing is found, nothing started again."""
    from rmqctl.checks.index import IndexCheck

    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    first_index = sorted((root / "index").iterdir())[0]
    end = S.INT64.unpack_from(first_index.read_bytes(), 24)[0]  # IndexHeader.endPhyOffset
    files = sorted((root / "commitlog").iterdir())
    heads = [p for p in files if int(p.name) <= end]  # up to the one holding its last entry's record
    original = IndexCheck.window

    def cleaner_runs(self, w):
        # (a head file still referenced when the cleaner destroys it stays up to 120 s, while CommitLog.getMinOffset
        # has moved past it and the index file goes by that min)
        for p in (heads if commitlog_head == "deleted" else []) + [first_index]:
            p.unlink(missing_ok=True)
        return original(self, w)

    monkeypatch.setattr(IndexCheck, "window", cleaner_runs)
    with held_lock(root):
        store = Store(root, load_config(conf))
        result = verify(store, deep=True)
        _sound_and_noted(store, result, [first_index])
        store.close()


def test_a_queue_file_the_broker_is_creating_is_no_finding(tmp_path):
    """A running broker creates a queue's next file empty and then maps it at its full size: verify listing the
    queue between the two is no false alarm; the same empty file in a stopped store is one."""
    root, conf = copy_store("a-basic", tmp_path), broker_conf("a-basic")
    queue = next(q for q in sorted((root / "consumequeue").glob("*/*")) if any(q.iterdir()))
    last = max(int(p.name) for p in queue.iterdir())
    size = load_config(conf).mappedFileSizeConsumeQueue
    (queue / f"{last + size:020d}").touch()
    with held_lock(root):
        res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
        assert res.exit_code == 0, res.stdout
    res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 1 and "file-size" in {f["kind"] for f in jsonl(res.stdout)}


def test_reads_that_open_a_file_again_take_a_head_the_broker_deleted_for_expired(tmp_path):
    """The broker's cleaner deletes the commitlog's head after rmqctl listed it: the store times consumers and
    offset-by-time read, verify --since's file spans, locate and diff's comparison met the deleted file as an
    error (exit 2, "deleted while rmqctl read the store"); on a live store it is the expired head, noted, and
    the read goes on. On a stopped store it stays an error."""
    from rmqctl.errors import FileGone
    from rmqctl.views.diff import first_difference
    from rmqctl.views.inspect import locate
    from rmqctl.views.offsets import CommitLogTimes
    from rmqctl.views.time_range import file_spans

    root, config = copy_store("a-basic", tmp_path), load_config(broker_conf("a-basic"))
    other = Store(Path(__import__("shutil").copytree(root, tmp_path / "copy")), config)
    with held_lock(root):
        store = Store(root, config)
        head = store.commitlog.files[0]
        head.path.unlink()
        assert CommitLogTimes(store).store_time(head.start, 100) == -1
        assert file_spans(store)[0].first is None
        assert locate(store, head.start)["exists"] is False
        assert first_difference(store, other, head.start, head.start + 2 * store.commitlog.file_size) is None
        assert {getattr(f, "path", f) for f, *_ in store.live.moved} == {head.path}
        store.close()
    stopped = Store(other.root, config)
    stopped.commitlog.files[0].path.unlink()
    with pytest.raises(FileGone):
        CommitLogTimes(stopped).store_time(stopped.commitlog.files[0].start, 100)
    stopped.close()
