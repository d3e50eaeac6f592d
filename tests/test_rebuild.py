"""rebuild consumequeue / rebuild index: byte-identical to what RocketMQ wrote, answers the fixture's key
queries like IndexService did, reports before it writes, refuses unsafe data, and survives SIGKILL at any
moment (the old or the new state, never a mix)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
from conftest import (
    ALL_FIXTURES,
    CLEAN_FIXTURES,
    FIXTURES,
    append_like_last,
    broker_conf,
    cleaned_copy,
    held_lock,
    copy_store,
    jsonl,
    one_line_error,
    patch,
    run,
    tmpfs_at,
    truth,
)
from rmqctl import schema as S
from rmqctl.maintenance.batchdispatch import dispatch_file
from rmqctl.config import BrokerConfig, load_config
from rmqctl.dispatch import cq_targets, dispatch_failure, index_key_hash, index_keys, reput_stuck_at, tags_code
from rmqctl.errors import StoreError
from rmqctl.lock import store_lock
from rmqctl import txn
from rmqctl.views.query import query_offsets
from rmqctl.maintenance.rebuild import dispatch_records, rebuild_consumequeue, rebuild_index
from rmqctl.record import Blank, Message, RecordError, encode_record, read_record
from rmqctl.store import Store, offset_to_name


# -- helpers shared with test_repair ------------------------------------------------------------------------


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def index_contents(root: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted((root / "index").iterdir())] if (root / "index").is_dir() else []


def state(root: Path) -> dict:
    """Everything a broker would read, with index files keyed by position (their names are creation times);
    the lock and backup directories left out, staging leftovers and the intent file kept in."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel == "lock" or rel.startswith(txn.BACKUP_PREFIX):
            continue
        if p.is_dir():
            out[rel + "/"] = None
        elif rel.startswith("index/"):
            out[f"index#{sorted(x.name for x in p.parent.iterdir()).index(p.name)}"] = p.read_bytes()
        else:
            out[rel] = p.read_bytes()
    return out


def recover(root: Path):
    """What any later writing rmqctl command does first: take the lock, finish or undo an interrupted run."""
    with txn.locked_for_writing(root):
        pass


def test_the_lock_only_locks_and_writers_finish_an_interrupted_run(store_copy):
    """store_lock leaves an interrupted run's staging alone; locked_for_writing (every writer's first
    step) rolls it back and says so."""
    root = store_copy("a-basic")
    left = root / ".rmqctl-rebuild-killed"
    left.mkdir()
    with store_lock(root):
        assert left.is_dir()
    with txn.locked_for_writing(root) as done:
        assert done["action"] == "rolled back" and not left.exists()
    with txn.locked_for_writing(root) as done:
        assert done is None


MUTATIONS = [
    (os, "rename"),
    (os, "unlink"),
    (os, "rmdir"),
    (os, "fsync"),
    (os, "pwrite"),
    (os, "ftruncate"),
    (os, "mkdir"),
    (shutil, "rmtree"),
    (txn, "exchange"),
]


def run_killed_at(n: int, fn) -> bool:
    """Run fn in a forked child that SIGKILLs itself just before its n-th filesystem mutation. True if it
    was killed, False if it finished first."""
    pid = os.fork()
    if pid == 0:
        arm_kill(n)
        try:
            fn()
            os._exit(0)
        except BaseException:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status):
        assert os.WEXITSTATUS(status) == 0, "the operation failed in the child"
    return os.WIFSIGNALED(status)


def commit_point(fn) -> int:
    """The number of the filesystem mutation that publishes the intent file (the commit point)."""
    calls = [0, None]
    saved = [(m, n, getattr(m, n)) for m, n in MUTATIONS]

    def wrap(name, orig):
        def mutation(*a, **k):
            calls[0] += 1
            if name == "rename" and str(a[1]).endswith(txn.INTENT_NAME) and calls[1] is None:
                calls[1] = calls[0]
            return orig(*a, **k)

        return mutation

    for m, n, o in saved:
        setattr(m, n, wrap(n, o))
    try:
        fn()
    finally:
        for m, n, o in saved:
            setattr(m, n, o)
    assert calls[1] is not None
    return calls[1]


def sweep_kills(prepare, operation, old: dict, new: dict, every: int = 7) -> dict:
    """Kill `operation` before each of its filesystem mutations in turn (every one from just before the
    commit point on, every `every`-th before it), recover, and require the old or the new state."""
    probe = prepare()
    commit = commit_point(lambda: operation(probe))
    outcomes = {"old": 0, "new": 0, "points": 0}
    n = 1
    while True:
        if n < commit - 2 and n % every:
            n += 1
            continue
        root = prepare()
        killed = run_killed_at(n, lambda: operation(root))
        pending_intent = (root / txn.INTENT_NAME).exists()
        recover(root)
        got = state(root)
        assert got in (old, new), f"mixed state after a kill before mutation {n}"
        assert not pending_intent or got == new, "a committed intent must roll forward"
        outcomes["old" if got == old else "new"] += 1
        outcomes["points"] += 1
        shutil.rmtree(root.parent)
        if not killed:
            return outcomes
        n += 1


def mutation_count(fn) -> tuple[int, int]:
    """How many filesystem mutations fn makes when nothing kills it, and the number of the one that publishes
    the intent file (its commit point); in a forked child, as the kills run."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        calls = arm_kill(0)
        try:
            fn()
            os.write(write_end, f"{calls[0]} {calls[1]}".encode())
            os._exit(0)
        except BaseException:
            os._exit(3)
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    counts = os.read(read_end, 64).split()
    os.close(read_end)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the operation failed in the child"
    return int(counts[0]), int(counts[1])


def cli_main(argv: list[str]):
    """The command line as the console script runs it (click's main, its exit codes); a failure raises."""
    from rmqctl.cli.main import cli  # here: importing the CLI loads every command's module, which most tests skip

    try:
        cli.main(args=argv, prog_name="rmqctl")
    except SystemExit as e:
        if e.code:
            raise


def arm_kill(n: int) -> list[int]:
    """Wrap this process's filesystem mutations: calls[0] counts them, calls[1] is the number of the one that
    publishes the intent file (the commit point); just before the n-th (0: never) the process SIGKILLs itself."""
    calls = [0, 0]

    def wrap(name, orig):
        def mutation(*a, **k):
            calls[0] += 1
            if name == "rename" and str(a[1]).endswith(txn.INTENT_NAME) and not calls[1]:
                calls[1] = calls[0]
            if calls[0] == n:
                os.kill(os.getpid(), signal.SIGKILL)
            return orig(*a, **k)

        return mutation

    for mod, name in MUTATIONS:
        setattr(mod, name, wrap(name, getattr(mod, name)))
    return calls


def cli_in_a_new_process(argv: list[str], n: int) -> tuple[bool, int, int]:
    """The command line in a new interpreter, SIGKILLed before its n-th filesystem mutation (0: never), for
    commands whose libraries do not survive a fork (RocksDB's threads): (killed, mutations, commit point)."""
    here = Path(__file__).resolve().parent
    code = f"import test_rebuild as t\ncalls = t.arm_kill({n})\nt.cli_main({argv!r})\nprint('mutations', *calls)"
    # a TMPDIR of its own: a reader's RocksDB view left by an earlier killed run would otherwise be removed in
    # this one, and its mutations shift the count the kill points were drawn from
    with tempfile.TemporaryDirectory() as tmp:
        res = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            cwd=here,
            env=dict(os.environ, TMPDIR=tmp, PYTHONPATH=os.pathsep.join([str(here.parent), str(here)])),
        )
    if res.returncode == -signal.SIGKILL:
        return True, 0, 0
    assert res.returncode == 0, res.stderr[-3000:]
    _, total, commit = res.stdout.splitlines()[-1].split()
    return False, int(total), int(commit)


def cli_kills(prepare, argv, old, new, runs: int, seed: int, state_of=state, new_process: bool = False):
    """SIGKILL the command line (in a forked child, or a new interpreter with `new_process`) before its n-th
    filesystem mutation, n drawn with a seeded generator (a count, not a clock: the same kills on a busy
    machine), half of them up to its commit point and half after it; recover, and require the old state after
    the first kind and the new after the second (`state_of` says what a store's state is; by default every
    byte a broker reads)."""
    if new_process:
        killed_at, count = (
            (lambda n, r: cli_in_a_new_process(argv(r), n)[0]),
            (lambda r: cli_in_a_new_process(argv(r), 0)[1:]),
        )
    else:
        killed_at = lambda n, r: run_killed_at(n, lambda: cli_main(argv(r)))  # noqa: E731
        count = lambda r: mutation_count(lambda: cli_main(argv(r)))  # noqa: E731
    rng = random.Random(seed)
    warm, probe = prepare(), prepare()
    assert not killed_at(0, warm)  # a first run fills the compiled kernels' cache
    total, commit = count(probe)
    assert 1 < commit < total, (commit, total)
    points = rng.sample(range(1, commit + 1), min(runs // 2, commit))
    points += rng.sample(range(commit + 1, total + 1), min(runs - runs // 2, total - commit))
    for n in sorted(points):
        root = prepare()
        assert killed_at(n, root)
        recover(root)
        want = "old" if n <= commit else "new"
        assert state_of(root) == (old if want == "old" else new), (
            f"not the {want} state after a SIGKILL before mutation {n} of {total}, commit at {commit} (seed {seed})"
        )
        shutil.rmtree(root.parent)


def fresh(name: str, base: Path, mutate=None):
    """A factory of store copies under `base`, each in its own directory."""
    counter = [0]

    def prepare() -> Path:
        counter[0] += 1
        d = base / f"c{counter[0]}"
        d.mkdir(parents=True)
        root = copy_store(name, d)
        if mutate:
            mutate(root)
        return root

    return prepare


def open_store(root: Path, name: str) -> Store:
    return Store(root, load_config(broker_conf(name)))


def is_consistent(root: Path, name: str) -> bool:
    """The consumequeues and index are exactly what dispatching this commitlog gives (and nothing is
    pending): what `verify`'s consumequeue/index checks require, judged by the broker's own rules."""
    cq = rebuild_consumequeue(open_store(root, name), dry_run=True)
    ix = rebuild_index(open_store(root, name), dry_run=True)
    return not cq.changed and not ix.changed and txn.pending(root) is None


# -- the vectorised dispatch against dispatch.py, record by record ------------------------------------------


def reference_dispatch(buf, limit: int, config: BrokerConfig):
    """What dispatch.py decides for every record of a file: (positions, cq entries, index key hashes, stop);
    None where a record stops the reput for good (reput_stuck_at)."""
    pos, positions, cq, keys = 0, [], [], []
    while pos < limit:
        try:
            m = read_record(buf, pos, limit)
        except RecordError:
            break
        if isinstance(m, Blank) or dispatch_failure(m, True) is not None:  # (the reput's check fails it)
            break
        if reput_stuck_at(m, config, True) is not None:
            return None
        r = len(positions)
        positions.append(pos)
        code = tags_code(m, config)
        cq += [(r, t, q, o, code) for t, q, o in cq_targets(m, config, True)]
        keys += [(r, index_key_hash(k)) for k in index_keys(m)]
        pos += m.storeSize
    return positions, cq, keys, pos


def assert_same_dispatch(buf, limit: int, config: BrokerConfig) -> int:
    want = reference_dispatch(buf, limit, config)
    if want is None:
        with pytest.raises(StoreError, match="INNER_MULTI_QUEUE_OFFSET part"):
            dispatch_file(buf, limit, config, allow_v2=True)
        return 0
    got = dispatch_file(buf, limit, config, allow_v2=True)
    positions, cq, keys, stop = want
    assert got.position.tolist() == positions and got.stop == stop
    assert [
        (int(r), got.topics[int(t)], int(q), int(o), int(c))
        for r, t, q, o, c in zip(got.cq_record, got.cq_topic, got.cq_qid, got.cq_qoff, got.cq_tags)
    ] == cq
    assert list(zip(got.key_record.tolist(), got.key_hash.tolist())) == keys
    return got.reference_records


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_vectorised_dispatch_equals_the_reference_on_every_fixture_file(name):
    store = open_store(FIXTURES / name / "store", name)
    for f in store.commitlog.files:
        assert_same_dispatch(f.buf, min(len(f.buf), store.commitlog.file_size), store.config)


NAMES = ["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "INNER_MULTI_DISPATCH", "INNER_MULTI_QUEUE_OFFSET", "X", "", "TAGSX"]
VALUES = [
    "",
    "a",
    "TagA",
    " ",
    "x y  z ",
    " lead",
    "trail ",
    "键 キー2 🔑",
    "v\x01w",
    "3",
    "99",
    "%LMQ%x,%LMQ%y",
    "%LMQ%x",
    "0,1",
    "7",
    "A" * 40,
]
SEGMENTS = st.one_of(
    st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES)).map("\x01".join),
    st.sampled_from(["", "ab", "\x01a", "a\x01", "\x01", "é\x01x"]),
)
PROPERTIES = st.tuples(st.lists(SEGMENTS, max_size=8), st.booleans()).map(
    lambda t: "\x02".join(t[0]) + ("\x02" if t[1] and t[0] else "")
)


def synthetic(rng_props: list[str], sysflags: list[int], topics: list[str]) -> bytes:
    records, pos = [], 0
    for i, (props, flag, topic) in enumerate(zip(rng_props, sysflags, topics)):
        m = Message()
        v2 = len(topic) > 127
        m.magicCode, m.bodyCRC, m.queueId, m.flag = S.MAGIC_V2 if v2 else S.MAGIC_V1, 0, i % 3, 0
        m.queueOffset, m.physicalOffset, m.sysFlag = i, pos, flag
        m.bornTimestamp, m.storeTimestamp, m.reconsumeTimes, m.preparedTransactionOffset = (
            1,
            1_700_000_000_000 + i * 1500,
            0,
            0,
        )
        m.bornIp = bytes(16 if flag & S.BORNHOST_V6_FLAG else 4)
        m.storeIp = bytes(16 if flag & S.STOREHOSTADDRESS_V6_FLAG else 4)
        m.bornPort = m.storePort = 1
        m.body = b"\x01\x02 body" * (i % 3)
        m.bodyLength = len(m.body)
        m.topicBytes, m.propertiesBytes = topic.encode(), props.encode()
        records.append(encode_record(m))
        pos += len(records[-1])
    return b"".join(records) + S.BLANK.pack(64, S.MAGIC_BLANK) + bytes(56)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            PROPERTIES,
            st.sampled_from(
                [0, S.TRANSACTION_PREPARED_TYPE, S.TRANSACTION_COMMIT_TYPE, S.TRANSACTION_ROLLBACK_TYPE, 0x30, 0x12]
            ),
            st.sampled_from(["T", "SCHEDULE_TOPIC_XXXX", "主题", "%RETRY%g", "L" * 130, "T\x02KEYS\x01k"]),
        ),
        min_size=1,
        max_size=12,
    ),
    st.booleans(),
)
def test_vectorised_dispatch_equals_the_reference_on_any_properties(records, multi_dispatch):
    """Duplicated, empty and half pairs, separators in values (and in a topic), spaced KEYS, non-ASCII, DELAY,
    LMQ, every transaction type, IPv6 hosts and V2 topics: the same entries and keys, in the same order."""
    buf = synthetic(*map(list, zip(*records)))
    config = BrokerConfig(enableMultiDispatch=multi_dispatch, enableLmq=multi_dispatch)
    assert_same_dispatch(buf, len(buf), config)


# -- byte-identical rebuilds -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", CLEAN_FIXTURES)
def test_rebuild_from_nothing_is_byte_identical(name, tmp_path):
    root = copy_store(name, tmp_path)
    shutil.rmtree(root / "consumequeue")
    shutil.rmtree(root / "index")
    cp = bytearray((root / "checkpoint").read_bytes())
    cp[16:24] = bytes(8)  # indexMsgTimestamp: must be set again from the rebuilt files
    (root / "checkpoint").write_bytes(bytes(cp))
    conf = broker_conf(name)

    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    rows = jsonl(res.stdout)
    assert rows and all(r["unitsBefore"] == 0 and r["added"] == r["unitsAfter"] for r in rows)
    res = run("rebuild", "index", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr

    fixture = FIXTURES / name / "store"
    assert tree(root / "consumequeue") == tree(fixture / "consumequeue")
    assert index_contents(root) == index_contents(fixture)
    names = sorted(p.name for p in (root / "index").iterdir())
    assert all(len(n) == 17 and n.isdigit() for n in names) and len(set(names)) == len(names)
    store = open_store(root, name)
    assert store.checkpoint()["indexMsgTimestamp"] == Store(fixture).checkpoint()["indexMsgTimestamp"] > 0
    # only the old checkpoint was replaced; the other run's backup holds just the manifest (what restore takes away)
    kept = [sorted(tree(p)) for p in sorted(root.iterdir()) if p.name.startswith(".rmqctl")]
    assert sorted(kept) == [[".rmqctl-backup.json"], [".rmqctl-backup.json", "checkpoint"]]

    for q in truth(name, "truth-index.jsonl"):
        got = query_offsets(store, q["topic"], q["key"], q["maxNum"], q["begin"], q["end"])
        assert got == q["indexServiceQueryOffset"]["phyOffsets"], (q["topic"], q["key"])
    q = truth(name, "truth-index.jsonl")[0]
    res = run(
        "query",
        "key",
        q["topic"],
        q["key"],
        "--store",
        root,
        "--broker-config",
        conf,
        "--format",
        "jsonl",
        "--max",
        q["maxNum"],
    )
    assert sorted(r["commitLogOffset"] for r in jsonl(res.stdout)) == q["queryMessage"]["phyOffsets"]


@pytest.mark.parametrize("name", CLEAN_FIXTURES)
def test_rebuild_of_a_sound_store_changes_nothing(name, tmp_path):
    root = copy_store(name, tmp_path)
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in root.rglob("*") if p.name != "lock"}
    for what in ("consumequeue", "index"):
        res = run("rebuild", what, "--store", root, "--broker-config", broker_conf(name), "--format", "jsonl")
        assert res.exit_code == 0, res.stderr
        assert "identical" in res.stderr
    after = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in root.rglob("*") if p.name != "lock"}
    assert after == before


# -- dry run, diffs, subsets, backups ----------------------------------------------------------------------


def damage_queues(root: Path):
    """Three kinds of damage: a changed tagsCode, a lost file (units to add), a stray unit (one to remove)."""
    f = root / "consumequeue" / "TopicTest" / "1" / "00000000000000000000"
    data = bytearray(f.read_bytes())
    S.CQ_UNIT.pack_into(data, 5 * 20, *S.CQ_UNIT.unpack_from(data, 5 * 20)[:2], 12345)
    f.write_bytes(bytes(data))
    (root / "consumequeue" / "OrderTopic" / "2" / "00000000000000002560").unlink()
    last = sorted((root / "consumequeue" / "BenchTopic-7" / "0").iterdir())[-1]
    data = bytearray(last.read_bytes())
    units = [S.CQ_UNIT.unpack_from(data, i) for i in range(0, len(data), 20)]
    n = next(i for i, u in enumerate(units) if u[1] <= 0)
    S.CQ_UNIT.pack_into(data, n * 20, units[n - 1][0] + 10, units[n - 1][1], 0)
    last.write_bytes(bytes(data))


def test_dry_run_reports_the_diff_and_writes_nothing(tmp_path):
    root = copy_store("a-basic", tmp_path)
    damage_queues(root)
    snapshot = tree(tmp_path)
    stats = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    res = run(
        "rebuild",
        "consumequeue",
        "--store",
        root,
        "--broker-config",
        broker_conf("a-basic"),
        "--dry-run",
        "--format",
        "jsonl",
    )
    assert res.exit_code == 0, res.stderr
    assert tree(tmp_path) == snapshot and {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == stats
    rows = {(r["topic"], r["queueId"]): r for r in jsonl(res.stdout)}
    assert set(rows) == {("TopicTest", 1), ("OrderTopic", 2), ("BenchTopic-7", 0)}
    assert (rows[("TopicTest", 1)]["changed"], rows[("TopicTest", 1)]["added"], rows[("TopicTest", 1)]["removed"]) == (
        1,
        0,
        0,
    )
    assert rows[("OrderTopic", 2)]["added"] > 0 and rows[("OrderTopic", 2)]["removed"] == 0
    assert (rows[("BenchTopic-7", 0)]["removed"], rows[("BenchTopic-7", 0)]["added"]) == (1, 0)
    assert "dry run" in res.stderr


def test_rebuild_keeps_the_replaced_files_unless_told_not_to(tmp_path):
    root = copy_store("a-basic", tmp_path / "a")
    damage_queues(root)
    damaged = tree(root / "consumequeue")
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf("a-basic"))
    assert res.exit_code == 0, res.stderr
    assert tree(root / "consumequeue") == tree(FIXTURES / "a-basic" / "store" / "consumequeue")
    backups = [p for p in root.iterdir() if p.name.startswith(txn.BACKUP_PREFIX)]
    assert len(backups) == 1 and tree(backups[0] / "consumequeue") == damaged
    assert str(backups[0]) in res.stderr

    root = copy_store("a-basic", tmp_path / "b")
    damage_queues(root)
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf("a-basic"), "--no-backup")
    assert res.exit_code == 0, res.stderr
    assert tree(root / "consumequeue") == tree(FIXTURES / "a-basic" / "store" / "consumequeue")
    assert not [p for p in root.iterdir() if p.name.startswith(".rmqctl")]


def test_subset_rebuild_touches_only_the_selected_queues(tmp_path):
    root = copy_store("a-basic", tmp_path)
    damage_queues(root)
    stray = root / "consumequeue" / "TopicTest" / "7"
    stray.mkdir()
    shutil.copy(root / "consumequeue" / "TopicTest" / "0" / "00000000000000000000", stray)
    untouched = {
        p: p.stat().st_ino for p in (root / "consumequeue").rglob("*") if "TopicTest" not in p.parts and p.is_file()
    }
    conf = broker_conf("a-basic")
    fixture = FIXTURES / "a-basic" / "store" / "consumequeue"

    res = run(
        "rebuild",
        "consumequeue",
        "--topic",
        "TopicTest",
        "--queue-id",
        "1",
        "--store",
        root,
        "--broker-config",
        conf,
        "--format",
        "jsonl",
    )
    assert res.exit_code == 0, res.stderr
    assert [(r["topic"], r["queueId"]) for r in jsonl(res.stdout)] == [("TopicTest", 1)]
    assert tree(root / "consumequeue" / "TopicTest" / "1") == tree(fixture / "TopicTest" / "1")
    assert stray.is_dir()

    res = run(
        "rebuild", "consumequeue", "--topic", "TopicTest", "--store", root, "--broker-config", conf, "--format", "jsonl"
    )
    assert res.exit_code == 0, res.stderr
    assert [(r["topic"], r["queueId"], r["removed"]) for r in jsonl(res.stdout)] == [("TopicTest", 7, 64)]
    assert "TopicTest/7" in res.stderr and not stray.exists()
    assert tree(root / "consumequeue" / "TopicTest") == tree(fixture / "TopicTest")
    # the other topics' damage and files were left exactly as they were
    assert {p: p.stat().st_ino for p in untouched} == untouched
    assert tree(root / "consumequeue" / "OrderTopic") != tree(fixture / "OrderTopic")


def test_a_deleted_topic_directory_is_rebuilt_as_the_dry_run_promised(tmp_path):
    """consumequeue/OrderTopic/ deleted: the topic's rebuild brings it back byte for byte, as its dry run said."""
    root = copy_store("a-basic", tmp_path)
    shutil.rmtree(root / "consumequeue" / "OrderTopic")
    args = (
        "rebuild",
        "consumequeue",
        "--topic",
        "OrderTopic",
        "--store",
        root,
        "--broker-config",
        broker_conf("a-basic"),
        "--format",
        "jsonl",
    )
    planned = run(*args, "--dry-run")
    assert planned.exit_code == 0, planned.stderr
    res = run(*args)
    assert res.exit_code == 0, res.stderr
    assert res.stdout == planned.stdout and [r["added"] for r in jsonl(res.stdout)] == [151, 160, 171, 158]
    backup = next(p for p in root.iterdir() if p.name.startswith(txn.BACKUP_PREFIX))
    assert res.stderr == (
        f"rmqctl: 4 queue(s) rebuilt from 2000 records (640 entries): changed; replaced files kept in {backup}\n"
    )
    assert tree(root / "consumequeue") == tree(FIXTURES / "a-basic" / "store" / "consumequeue")
    assert run("verify", "--store", root, "--broker-config", broker_conf("a-basic")).exit_code == 0


def test_rebuild_after_cleanup_fills_the_queue_heads_with_pre_blank_units(tmp_path):
    """The broker's cleaner deleted the oldest commitlog files: each queue's first surviving message has a
    queueOffset > 0, so its first consumequeue file starts at that file boundary with (0, MAX, 0) units."""
    root = copy_store("a-basic", tmp_path)
    size = 65536
    cut = 25 * size
    for f in sorted((root / "commitlog").iterdir())[:25]:
        f.unlink()
    shutil.rmtree(root / "consumequeue")
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf("a-basic"))
    assert res.exit_code == 0, res.stderr

    cq_size = 1280
    first = {}
    for w in truth("a-basic", "truth-consumequeue.jsonl"):
        if w["commitLogOffset"] >= cut:
            key = (w["topic"], w["queueId"])
            first[key] = min(first.get(key, 1 << 62), w["queueOffset"])
    assert len(first) == 12 and min(first.values()) > 0 and max(first.values()) * 20 >= cq_size
    blank = S.CQ_UNIT.pack(0, S.PRE_BLANK_SIZE, 0)
    for (topic, qid), q0 in first.items():
        orig = FIXTURES / "a-basic" / "store" / "consumequeue" / topic / str(qid)
        start = q0 * 20 - q0 * 20 % cq_size
        want = {}
        for f in sorted(orig.iterdir()):
            if int(f.name) >= start:
                data = bytearray(f.read_bytes())
                if int(f.name) == start:
                    data[: q0 * 20 - start] = blank * (q0 - start // 20)
                want[f.name] = bytes(data)
        got = {f.name: f.read_bytes() for f in sorted((root / "consumequeue" / topic / str(qid)).iterdir())}
        assert got == want, (topic, qid)
    rows = jsonl(
        run(
            "dump",
            "consumequeue",
            "TopicTest",
            0,
            "--store",
            root,
            "--broker-config",
            broker_conf("a-basic"),
            "--format",
            "jsonl",
        ).stdout
    )
    assert rows[0]["preBlank"] and not any(
        r.get("preBlank") for r in rows if r["queueOffset"] >= first[("TopicTest", 0)]
    )


# -- refusals ----------------------------------------------------------------------------------------------


def append_record_with_topic(root: Path, topic: bytes) -> int:
    """Append a copy of the last message under another topic, as a broker would have written it."""
    return append_like_last(root, broker_conf("a-basic"), [topic])[0]


@pytest.mark.parametrize("bad_topic", [b"../../x", b".."])
def test_a_topic_that_is_not_a_directory_name_is_refused(tmp_path, bad_topic):
    root = copy_store("a-basic", tmp_path / "a" / "b")
    offset = append_record_with_topic(root, bad_topic)
    outside = sorted(p for p in tmp_path.rglob("*") if root not in p.parents and p != root)
    before = tree(root)
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf("a-basic"))
    assert res.exit_code == 2
    assert (
        bad_topic.decode() in res.stderr
        and "commitlog" in res.stderr
        and f"position {offset % 65536} in " in res.stderr
    )
    assert "Traceback" not in res.stderr
    assert tree(root) == before and not [p for p in root.iterdir() if p.name.startswith(".rmqctl")]
    assert sorted(p for p in tmp_path.rglob("*") if root not in p.parents and p != root) == outside
    # the index holds no directory names: rebuilding it is fine, and the record's keys are indexed
    res = run("rebuild", "index", "--store", root, "--broker-config", broker_conf("a-basic"), "--dry-run")
    assert res.exit_code == 0, res.stderr


def test_rebuild_refuses_while_the_lock_is_held(tmp_path):
    root = copy_store("b-mixed", tmp_path)
    shutil.rmtree(root / "consumequeue")
    with held_lock(root):
        res = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf("b-mixed"))
        assert res.exit_code == 2 and "locked" in res.stderr
        assert not (root / "consumequeue").exists()


def test_writing_needs_an_explicit_store(tmp_path, monkeypatch):
    monkeypatch.delenv("ROCKETMQ_STORE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    for argv in (["rebuild", "consumequeue"], ["rebuild", "index"], ["repair"]):
        res = run(*argv, "--broker-config", broker_conf("a-basic"))
        assert res.exit_code == 2 and "--store" in res.stderr


# -- crash safety ----------------------------------------------------------------------------------------


def _without(*names):
    def mutate(root: Path):
        for n in names:
            shutil.rmtree(root / n)

    return mutate


def _expected_new(tmp_path: Path, name: str, mutate, operation) -> tuple[dict, dict]:
    prepare = fresh(name, tmp_path / "expected", mutate)
    old_root, new_root = prepare(), prepare()
    operation(new_root)
    assert is_consistent(new_root, name)
    return state(old_root), state(new_root)


@pytest.mark.parametrize("what", ["consumequeue", "index"])
def test_rebuild_killed_before_any_filesystem_step_leaves_old_or_new(crash_dir, what):
    name = "b-mixed"

    damage = _without(what)
    ops = {
        "consumequeue": lambda r: rebuild_consumequeue(open_store(r, name), keep_backup=False),
        "index": lambda r: rebuild_index(open_store(r, name), keep_backup=False),
    }
    old, new = _expected_new(crash_dir, name, damage, ops[what])
    outcomes = sweep_kills(fresh(name, crash_dir / "sweep", damage), ops[what], old, new)
    assert outcomes["old"] and outcomes["new"]


def test_rebuild_cli_killed_at_random_steps_leaves_old_or_new(crash_dir):
    name = "c-v5-features"
    conf = broker_conf(name)
    old, new = _expected_new(
        crash_dir, name, _without("consumequeue"), lambda r: rebuild_consumequeue(open_store(r, name))
    )
    prepare = fresh(name, crash_dir / "runs-cq", _without("consumequeue"))
    cli_kills(
        prepare,
        lambda r: ["rebuild", "consumequeue", "--store", str(r), "--broker-config", str(conf)],
        old,
        new,
        runs=10,
        seed=4,
    )
    old_i, new_i = _expected_new(crash_dir / "i", name, _without("index"), lambda r: rebuild_index(open_store(r, name)))
    prepare = fresh(name, crash_dir / "runs-index", _without("index"))
    cli_kills(
        prepare,
        lambda r: ["rebuild", "index", "--store", str(r), "--broker-config", str(conf)],
        old_i,
        new_i,
        runs=10,
        seed=5,
    )


# -- memory: batches within the budget, files released as they are done -------------------------------------

BUDGET_FIXTURES = ALL_FIXTURES + ["e-dledger", "f-timer5"]
FIXED_CLOCK = lambda: 1_700_000_000_000  # noqa: E731  index file names are creation times


def _built(store: Store, where: Path, memory: int) -> dict[str, bytes]:
    dispatch_records(
        store, where, build_cq=True, build_index=store.config.messageIndexEnable, index_clock=FIXED_CLOCK, memory=memory
    )
    return tree(where)


@pytest.mark.parametrize("name", BUDGET_FIXTURES)
def test_a_tiny_memory_budget_builds_the_same_bytes(name, tmp_path):
    """With a budget of one byte every batch is the smallest (budget.MIN_BATCH_RECORDS records), so files
    are dispatched in many batches: the consumequeues and index files are byte for byte those of one batch
    per file."""
    store = open_store(FIXTURES / name / "store", name)
    large = _built(store, tmp_path / "large", 1 << 30)
    assert large and large == _built(store, tmp_path / "tiny", 1)


def test_the_working_set_is_one_batch_one_commitlog_file_and_one_file_per_queue(tmp_path, monkeypatch):
    """On a store of 40 commitlog files (~50 records each), a budget of 16 records per batch: no batch holds more records than
    the budget allows, one commitlog file is mapped at a time, and each queue and the index have only their
    last file open; the output is the same as with a large budget."""
    import rmqctl.maintenance.rebuild as rebuild_module

    store = open_store(FIXTURES / "a-basic" / "store", "a-basic")
    budget = 16 * rebuild_module.DISPATCH_BYTES_PER_RECORD
    seen = []
    real_dispatch_file = rebuild_module.dispatch_file
    open_writers = []

    def observed(buf, limit, config, allow_v2, with_keys=True, jobs=None, starts=None, file=None):
        seen.append((len(starts), sum(f._map is not None for f in store.commitlog.files)))
        for w in list(open_writers[0].queues.values()):
            assert sum(not f.closed for _, f in w.files) <= 1
        if open_writers[0].index is not None:
            assert sum(not f.file.closed for f in open_writers[0].index.files) <= 1
        return real_dispatch_file(
            buf, limit, config, allow_v2, with_keys=with_keys, jobs=jobs, starts=starts, file=file
        )

    real_dispatcher = rebuild_module.Dispatcher

    def dispatcher(*args, **kwargs):
        open_writers.append(real_dispatcher(*args, **kwargs))
        return open_writers[-1]

    monkeypatch.setattr(rebuild_module, "dispatch_file", observed)
    monkeypatch.setattr(rebuild_module, "Dispatcher", dispatcher)
    small = _built(store, tmp_path / "small", budget)
    assert len(store.commitlog.files) == 40 and len(seen) > 3 * 40
    assert max(n for n, _ in seen) <= 16 and max(mapped for _, mapped in seen) == 1
    assert all(f._map is None for f in store.commitlog.files)
    monkeypatch.setattr(rebuild_module, "dispatch_file", real_dispatch_file)
    assert small == _built(store, tmp_path / "large", 1 << 30)


@pytest.mark.tmpfs
@pytest.mark.parametrize("name, version, expired", [("example", 4, 1), ("c-v5-features", 5, 3)])
def test_rebuild_after_a_cleanup_keeps_the_queues_it_left_dead_and_rocketmq_serves_the_same(
    tmp_path, java_oracle, name, version, expired
):
    """After the broker's cleanup a queue whose records are all gone keeps its last file, and with it its max
    offset (the offset producers go on from, and consumers' committed offsets stay inside). No record feeds
    it any more, yet a rebuild keeps it as the cleanup left it: RocketMQ serves the same queues, min and max
    offsets and units from the rebuilt store as from the cleaned one."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        root, conf = cleaned_copy(name, mnt, expired)
        before = oracle.served(java_oracle, version, root, conf, tmp_path / "before")[:2]
        res = run("rebuild", "consumequeue", "--store", root, "--broker-config", conf, "--no-backup")
        assert res.exit_code == 0 and "no record in the commitlog feeds it" not in res.stderr, res.stderr
        assert run("verify", "--store", root, "--broker-config", conf).exit_code == 0
        assert oracle.served(java_oracle, version, root, conf, tmp_path / "after")[:2] == before


def test_rebuild_keeps_a_batch_queue_the_cleanup_left_dead(tmp_path, java_oracle):
    """j-batchcq after the broker's cleanup (its first three commitlog files deleted by hand: rmqctl clean does
    not write BatchCQ stores) with BatchTopic/7 holding only units whose records went: the rebuild keeps that
    queue as it was, and RocketMQ 5.3.3 serves it the same min and max before and after."""
    root = copy_store("j-batchcq", tmp_path)
    for start in (0, 131072, 262144):
        (root / "commitlog" / f"{start:020d}").unlink()
    first = offset_to_name(0)
    dead = root / "batchconsumequeue" / "BatchTopic" / "7"
    dead.mkdir()
    shutil.copyfile(root / "batchconsumequeue" / "BatchTopic" / "0" / first, dead / first)
    units = (dead / first).read_bytes()
    conf = broker_conf("j-batchcq")
    before = oracle.served(java_oracle, 5, root, conf, tmp_path / "before")[0][("BatchTopic", 7)]
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", conf, "--no-backup")
    assert res.exit_code == 0, res.stderr
    assert (dead / first).read_bytes() == units and before[1] > 0
    assert oracle.served(java_oracle, 5, root, conf, tmp_path / "after")[0][("BatchTopic", 7)] == before


def test_rebuild_of_a_plain_queue_in_a_batchcq_store_checks_the_batch_queues_it_leaves(tmp_path):
    """j-batchcq with a unit of a plain queue zeroed: the rebuild changes only that queue. The store the staged
    check verifies holds the BatchCQ queues it leaves as they are (it held none, and the check found every
    BatchCQ record's unit missing and refused the rebuild)."""
    root = copy_store("j-batchcq", tmp_path)
    plain = root / "consumequeue" / "PlainTopic" / "0" / offset_to_name(0)
    unit = plain.read_bytes()[20:40]
    patch(plain, 20, bytes(20))
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf("j-batchcq"), "--no-backup")
    assert res.exit_code == 0, res.stderr
    assert plain.read_bytes()[20:40] == unit


def test_rebuild_keeps_the_dead_head_of_a_batch_queue_and_rocketmq_serves_the_same_min(tmp_path, java_oracle):
    """j-batchcq without its first commitlog file (deleted by hand, as the broker's cleanup would): both BatchCQ
    queues lead with units whose records went with it. RocketMQ 5.3.3 serves each from past its first file's dead
    units only (BatchConsumeQueue.correctMinOffset: BatchTopic/0 from 56, though its units up to 84 are dead), so
    consumers may sit at those offsets. A rebuild, here of a queue with a live unit zeroed, keeps that dead head
    where it was and puts the rebuilt units after it: the queues come back byte for byte, and RocketMQ serves the
    same min and max as before the damage (a rebuild from the records alone started BatchTopic/0 at 85)."""
    root = copy_store("j-batchcq", tmp_path)
    (root / "commitlog" / offset_to_name(0)).unlink()
    conf = broker_conf("j-batchcq")
    before = oracle.served(java_oracle, 5, root, conf, tmp_path / "before")[0]
    assert (before[("BatchTopic", 0)], before[("BatchTopic", 1)]) == ((56, 436), (62, 322))
    queue = root / "batchconsumequeue" / "BatchTopic" / "0"
    patch(queue / offset_to_name(4 * 1472), 5 * S.BCQ_UNIT_SIZE, bytes(S.BCQ_UNIT_SIZE))
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", conf, "--no-backup")
    assert res.exit_code == 0, res.stderr
    for q in (0, 1):
        fixture = FIXTURES / "j-batchcq" / "store" / "batchconsumequeue" / "BatchTopic" / str(q)
        rebuilt = root / "batchconsumequeue" / "BatchTopic" / str(q)
        assert {f.name: f.read_bytes() for f in rebuilt.iterdir()} == {
            f.name: f.read_bytes() for f in fixture.iterdir()
        }
    assert oracle.served(java_oracle, 5, root, conf, tmp_path / "after")[0] == before


def test_rebuild_says_it_brings_back_a_deleted_topics_queues(tmp_path):
    """A topic deleted (out of topics.json, its queues removed) whose records are still in the commitlog: the
    rebuild dispatches them as the broker would and says, per queue, that it brings a deleted topic back."""
    root = copy_store("a-basic", tmp_path)
    shutil.rmtree(root / "consumequeue" / "OrderTopic")
    table = {t: {"topicName": t} for t in ("BenchTopic-7", "TopicTest", "SCHEDULE_TOPIC_XXXX")}
    (root / "config" / "topics.json").write_text(json.dumps({"topicConfigTable": table}))
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf("a-basic"), "--dry-run")
    assert res.exit_code == 0, res.stderr
    said = [line for line in res.stderr.splitlines() if "is not among the broker's topics" in line]
    assert [line.split(":")[2].strip() for line in said] == [f"consumequeue OrderTopic/{q}" for q in range(4)]


def redispatched_by_rocketmq(root: Path, conf: Path, tmp_path: Path, java_oracle: Path) -> Path:
    """consumequeue/ and index/ taken out of `root` and of a copy of it, which RocketMQ 4.9.7 then loads and
    dispatches from scratch (read4.sh --keep-copy): its output directory (store-copy/: what it wrote)."""
    broker = tmp_path / "broker"
    shutil.copytree(root, broker)
    for part in ("consumequeue", "index"):
        shutil.rmtree(root / part)
        shutil.rmtree(broker / part)
    out = tmp_path / "read4"
    subprocess.run(
        [str(java_oracle / "read4.sh"), "--keep-copy", str(broker), str(conf), str(out)], capture_output=True
    )
    return out


def test_rebuild_stops_a_file_at_a_record_the_reputs_check_fails_as_rocketmq_does(tmp_path, java_oracle):
    """A SCHEDULE_TOPIC_XXXX record whose DELAY Integer.parseInt refuses fails checkMessageAndReturnSize: RocketMQ
    4.9.7's reput dispatches nothing more of that file (and its recovery cuts the log there). The rebuilt index and
    consumequeues equal those RocketMQ dispatches itself; before, the record's keys and the next one's went in."""
    root = copy_store("a-basic", tmp_path)
    conf = broker_conf("a-basic")
    common = ("--store", root, "--broker-config", conf, "--body", "x")
    assert run("append", *common, "--topic", "TopicTest", "--keys", "LATE-1", "--delay-level", "3").exit_code == 0
    assert run("append", *common, "--topic", "TopicTest", "--keys", "LATE-2").exit_code == 0
    store = Store(root, load_config(conf))
    last, m = next(
        (f, r)
        for f, r in store.scan().records()
        if r.topic == "SCHEDULE_TOPIC_XXXX" and r.properties["KEYS"] == "LATE-1"
    )
    at = (root / "commitlog" / last.name).read_bytes().index(b"DELAY\x013\x02", m.position)
    store.close()
    with open(root / "commitlog" / last.name, "r+b") as f:
        f.seek(at + len("DELAY\x01"))
        f.write(b"x")
    out = redispatched_by_rocketmq(root, conf, tmp_path, java_oracle)
    assert json.loads((out / "recovered-summary.json").read_text())["maxPhyOffset"] == last.start + m.position

    res = run("rebuild", "index", "--store", root, "--broker-config", conf)
    assert res.exit_code == 0, res.stderr
    assert (
        f"{root / 'commitlog' / last.name} at commitlog offset {last.start + m.position}: DELAY 'x' of a "
        "SCHEDULE_TOPIC_XXXX record, which Integer.parseInt refuses; the rest of that file is not dispatched"
    ) in res.stderr
    assert index_contents(root) == index_contents(out / "store-copy")
    assert run("rebuild", "consumequeue", "--store", root, "--broker-config", conf).exit_code == 0
    assert tree(root / "consumequeue") == tree(out / "store-copy" / "consumequeue")


@pytest.mark.parametrize("name", ["b-mixed", "i-rocksdb-cq"])
def test_rebuild_without_a_broker_conf_keeps_off_the_lmq_queues_it_would_remove(store_copy, name):
    """Without broker.conf multi-dispatch is off, and the rebuild would remove the LMQ queues the broker's
    enableMultiDispatch dispatched (file or RocksDB queues): it refuses and names one; with the conf it runs."""
    root = store_copy(name)
    before = tree(root)
    res = run("rebuild", "consumequeue", "--store", root, "--rocketmq-version", 5 if name != "b-mixed" else 4)
    assert res.exit_code == 2 and res.stdout == ""
    assert "LMQ queue(s) (%LMQ%" in res.stderr and "give the broker's broker.conf" in res.stderr
    assert tree(root) == before
    if (FIXTURES / name / "broker.conf").is_file():
        ok = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf(name), "--dry-run")
        assert ok.exit_code == 0, ok.stderr


@pytest.mark.parametrize("by", [8, -8])
def test_rebuild_reads_on_past_a_record_whose_totalsize_disagrees_as_rocketmqs_reput_does(tmp_path, java_oracle, by):
    """A record in a-basic's first file (outside the 3 files the normal recovery checks) whose TOTALSIZE is `by`
    bytes off: RocketMQ 4.9.7's reput skips it, reads on where its fields end, and its offset, moved by the
    TOTALSIZE, rolls to the next file at the BLANK. The rebuilt index equals the one it dispatches itself (rmqctl
    dropped the rest of that file's keys, and said the broker does too)."""
    root = copy_store("a-basic", tmp_path)
    conf = broker_conf("a-basic")
    victim = sorted(
        (m for m in truth("a-basic", "truth-messages.jsonl") if m["file"] == "00000000000000000000"),
        key=lambda m: m["filePosition"],
    )[10]
    f = root / "commitlog" / victim["file"]
    patch(f, victim["filePosition"], S.INT32.pack(victim["storeSize"] + by))
    out = redispatched_by_rocketmq(root, conf, tmp_path, java_oracle)
    read = json.loads((out / "recovered-summary.json").read_text())["messagesRead"]
    assert read["problemExamples"] == ["BenchTopic-7/3@0: no commitlog data at 0"]  # its unit: the pre-blank
    res = run("rebuild", "index", "--store", root, "--broker-config", conf)
    assert res.exit_code == 0, res.stderr
    assert f"{f} at commitlog offset {victim['commitLogOffset']}: " in res.stderr
    said = next(line for line in res.stderr.splitlines() if "reads on where its fields end" in line)
    assert said.endswith("run `rmqctl repair` or `rmqctl verify`")
    assert index_contents(root) == index_contents(out / "store-copy")


def test_a_reput_offset_left_in_a_gap_reads_the_file_after_it_from_its_start(tmp_path):
    """A record whose TOTALSIZE is 8 bytes long moves the reput's offset (it reads on where the fields end), and
    a first file ending in zeros where its BLANK was carries it past that file's end; with the second file gone,
    the offset lies before the third, whose walk began at a negative position and read before its mapping (a
    review: a segfault). The third file is dispatched from its start, as any file after a gap is, and with the
    second file's records gone the queue offsets do not follow on: rebuild says so in one line and changes
    nothing."""
    root = copy_store("a-basic", tmp_path)
    messages = sorted(truth("a-basic", "truth-messages.jsonl"), key=lambda m: m["commitLogOffset"])
    first = [m for m in messages if m["file"] == "00000000000000000000"]
    patch(root / "commitlog" / first[0]["file"], first[10]["filePosition"], S.INT32.pack(first[10]["storeSize"] + 8))
    last = first[-1]
    patch(root / "commitlog" / last["file"], last["filePosition"] + last["storeSize"], bytes(8))  # (its BLANK)
    (root / "commitlog" / offset_to_name(65536)).unlink()
    before = tree(root)
    res = run("rebuild", "consumequeue", "--store", root, "--broker-config", broker_conf("a-basic"))
    third = min(m["commitLogOffset"] for m in messages if m["file"] == offset_to_name(131072))
    one_line_error(res, "verify finds the rebuilt consumequeue wrong, nothing was changed", f"at {third};")
    assert tree(root) == before


def test_a_record_the_reput_never_gets_past_is_an_error_and_no_writer_dispatches_it(tmp_path):
    """An INNER_MULTI_QUEUE_OFFSET part Long.parseLong refuses: ConsumeQueue.multiDispatchLmqQueue throws, and
    RocketMQ's reput (4.9.7, 5.3.3) retries that record for good, dispatching nothing after it. verify says so
    (it predicted the broker dispatches the rest again), and rebuild refuses, naming the record."""
    root = copy_store("b-mixed", tmp_path)
    conf = broker_conf("b-mixed")
    store = Store(root, load_config(conf))
    f, m = next((f, r) for f, r in store.scan().records() if "INNER_MULTI_QUEUE_OFFSET" in r.properties)
    at = (root / "commitlog" / f.name).read_bytes().index(b"INNER_MULTI_QUEUE_OFFSET\x01", m.position)
    store.close()
    patch(root / "commitlog" / f.name, at + len("INNER_MULTI_QUEUE_OFFSET\x01"), b"x")
    found = jsonl(run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl").stdout)
    stuck = [x for x in found if x["kind"] == "reput-stuck"]
    assert [(x["severity"], x["commitLogOffset"]) for x in stuck] == [("error", f.start + m.position)]
    before = tree(root)
    for part in ("consumequeue", "index"):
        res = run("rebuild", part, "--store", root, "--broker-config", conf)
        assert res.exit_code == 2 and res.stderr.startswith(
            f"rmqctl: {root / 'commitlog' / f.name} at commitlog offset {f.start + m.position}: "
            "INNER_MULTI_QUEUE_OFFSET part 'x"
        )
    assert tree(root) == before
