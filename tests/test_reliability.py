"""Reliability: bounded decompression, a full disk on a real tmpfs for every writer, the broker's real lock (a
JVM's FileChannel.lock), symlinks and topic names that would lead out of the store, and the torture suite's
quick run (benchmarks/torture.py) kept true."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import lz4.frame
import pytest
import zstandard

from conftest import FIXTURES, broker_conf, copy_store, jsonl, run, tmpfs_at
from rmqctl import schema as S
from rmqctl.record import DecompressionLimitError, Message

REPO = Path(__file__).resolve().parents[1]
MiB = 1 << 20

COMPRESSORS = {  # sysFlag: how a client compresses (legacy zlib, typed zlib, lz4 frame, zstd)
    0x1: zlib.compress,
    0x301: zlib.compress,
    0x101: lz4.frame.compress,
    0x201: lambda b: zstandard.ZstdCompressor().compress(b),
}


def store_files(root: Path) -> dict[str, str]:
    """sha256 of every file under the store (rmqctl's own lock file aside)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "lock"
    }


def write_conf(path: Path, base: str, **settings) -> Path:
    lines = [l for l in broker_conf(base).read_text().splitlines() if l.split("=", 1)[0] not in settings]
    path.write_text("\n".join(lines + [f"{k}={v}" for k, v in settings.items()]) + "\n")
    return path


# -- bounded decompression -------------------------------------------------------------------------------------


@pytest.mark.parametrize("sys_flag", sorted(COMPRESSORS))
def test_dump_decompresses_up_to_the_limit_and_reports_more(tmp_path, sys_flag):
    store = copy_store("a-basic", tmp_path)
    conf = broker_conf("a-basic")
    body = bytes(range(256)) * 4096  # 1 MiB
    (tmp_path / "body").write_bytes(COMPRESSORS[sys_flag](body))
    res = run(
        "append",
        "--store",
        store,
        "--broker-config",
        conf,
        "--topic",
        "Zip",
        "--body-file",
        tmp_path / "body",
        "--sys-flag",
        hex(sys_flag),
    )
    assert res.exit_code == 0, res.stderr
    offset = jsonl(res.stdout)[0]["commitLogOffset"]
    for cap, expect in ((MiB, body), (MiB - 1, None)):
        res = run(
            "dump",
            "commitlog",
            "--store",
            store,
            "--broker-config",
            conf,
            "--from",
            offset,
            "--decompress",
            "--body",
            "base64",
            "--max-decompressed-size",
            cap,
            "--format",
            "jsonl",
        )
        assert res.exit_code == 0, res.stderr
        row = jsonl(res.stdout)[0]
        if expect is None:
            assert row["bodyDecompressed"] is None and row["bodyDecompressedEncoding"].startswith("over-limit")
            assert str(cap) in row["bodyDecompressedEncoding"]
        else:
            import base64

            assert base64.b64decode(row["bodyDecompressed"]) == expect


@pytest.mark.parametrize("sys_flag", sorted(COMPRESSORS))
def test_a_decompression_bomb_is_never_allocated(sys_flag):
    """1 GiB of zeros compressed to a few kilobytes, decompressed with the default limit (32 MiB) in a
    process whose address space cannot hold the gigabyte: refused with DecompressionLimitError."""
    code = (
        "import resource, sys, zlib, lz4.frame, zstandard\n"
        "from rmqctl.record import Message, DecompressionLimitError, decompression_limit\n"
        f"flag = {sys_flag}\n"
        "gib = 1 << 30\n"
        "if flag in (1, 0x301):\n"
        "    c = zlib.compressobj(9); body = b''.join(c.compress(bytes(1 << 24)) for _ in range(64)) + c.flush()\n"
        "elif flag == 0x101:\n"
        "    c = lz4.frame.LZ4FrameCompressor(); body = c.begin() + b''.join(c.compress(bytes(1 << 24)) for _ in range(64)) + c.flush()\n"
        "else:\n"
        "    body = zstandard.ZstdCompressor().compress(bytes(gib))\n"
        "vm = int([l for l in open('/proc/self/status') if l.startswith('VmSize')][0].split()[1]) * 1024\n"
        "resource.setrlimit(resource.RLIMIT_AS, (vm + 512 * (1 << 20), resource.RLIM_INFINITY))\n"
        "m = Message(); m.sysFlag = flag; m.body = body\n"
        "try:\n"
        "    m.decompressed_body(decompression_limit(4 << 20))\n"
        "except DecompressionLimitError as e:\n"
        "    print('refused', len(body), e)\n"
    )
    if sys_flag == 0x201:
        pytest.importorskip("zstandard")
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert out.returncode == 0 and out.stdout.startswith("refused"), out.stderr[-2000:]


def test_verify_reports_bodies_over_the_limit_and_bodies_that_do_not_decompress(tmp_path):
    store = copy_store("a-basic", tmp_path)
    conf = write_conf(tmp_path / "broker.conf", "a-basic", maxMessageSize=16384)  # limit 128 KiB
    (tmp_path / "big").write_bytes(zlib.compress(bytes(200_000)))
    (tmp_path / "junk").write_bytes(b"not zlib at all")
    (tmp_path / "fine").write_bytes(zlib.compress(b"x" * 1000))
    offsets = {}
    for name in ("big", "junk", "fine"):
        res = run(
            "append",
            "--store",
            store,
            "--broker-config",
            conf,
            "--topic",
            "Zip",
            "--body-file",
            tmp_path / name,
            "--sys-flag",
            "0x1",
        )
        assert res.exit_code == 0, res.stderr
        offsets[name] = jsonl(res.stdout)[0]["commitLogOffset"]
    res = run("verify", "--store", store, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 1
    got = {(f["kind"], f["commitLogOffset"]) for f in jsonl(res.stdout)}
    assert got == {("decompressed-size", offsets["big"]), ("compressed-body", offsets["junk"])}


def test_verify_passes_the_fixtures_compressed_bodies():
    res = run(
        "verify",
        "--store",
        FIXTURES / "b-mixed" / "store",
        "--broker-config",
        broker_conf("b-mixed"),
        "--format",
        "jsonl",
    )
    assert not [f for f in jsonl(res.stdout) if f["kind"] in ("decompressed-size", "compressed-body")]


def test_library_limit_is_exact():
    m = Message()
    m.sysFlag, m.body = 0x1, zlib.compress(b"y" * 5000)
    assert m.decompressed_body(5000) == b"y" * 5000
    with pytest.raises(DecompressionLimitError):
        m.decompressed_body(4999)
    m.body = zlib.compress(b"y" * 5000)[:-6]
    with pytest.raises(ValueError, match="truncated"):
        m.decompressed_body(10_000)


# -- the broker's real lock: a JVM running DefaultMessageStore's lock code --------------------------------------------

BROKER_LOCK_JAVA = """
import java.io.File;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileLock;

/** DefaultMessageStore's lock, line for line: start() takes tryLock(0, 1, false) on {store}/lock, writes "lock"
 *  and forces it, and holds it until shutdown. `probe` only tries and says whether it got the lock. */
public class BrokerLock {
    public static void main(String[] args) throws Exception {
        File file = new File(args[1], "lock");
        RandomAccessFile lockFile = new RandomAccessFile(file, "rw");
        FileLock lock = lockFile.getChannel().tryLock(0, 1, false);
        if (args[0].equals("probe")) {
            System.out.println(lock == null ? "null" : "acquired");
            return;
        }
        if (lock == null || lock.isShared() || !lock.isValid()) {
            System.out.println("Lock failed,MQ already started");
            System.exit(3);
        }
        lockFile.getChannel().write(ByteBuffer.wrap("lock".getBytes()));
        lockFile.getChannel().force(true);
        System.out.println("locked");
        System.out.flush();
        System.in.read();  // held until the test closes our stdin (the broker: until shutdown)
        lock.release();
        lockFile.close();
    }
}
"""


@pytest.fixture(scope="module")
def broker_lock_class(tmp_path_factory):
    """The Java program above, compiled now with the installed JDK's javac."""
    out = tmp_path_factory.mktemp("java")
    (out / "BrokerLock.java").write_text(BROKER_LOCK_JAVA)
    subprocess.run(["javac", "-d", str(out), str(out / "BrokerLock.java")], check=True, timeout=120)
    return out


def java(classes: Path, *args, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        ["java", "-cp", str(classes), "BrokerLock", *map(str, args)],
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        **kwargs,
    )


def writers(store: Path, conf: Path, scratch: Path) -> dict[str, list]:
    """Every writing command on `store` (given a cut config file with a sound .bak, so restore has work)."""
    (scratch / "one.jsonl").write_text(json.dumps({"topic": "LockTest", "body": "x"}) + "\n")
    (store / "config" / "topics.json.bak").write_text('{"topicConfigTable":{}}')
    (store / "config" / "topics.json").write_text('{"topicConf')
    base = ["--store", store, "--broker-config", conf]
    return {
        "append": ["append", *base, "--topic", "LockTest", "--body", "x"],
        "append --jsonl": ["append", *base, "--jsonl", scratch / "one.jsonl"],
        "rebuild consumequeue": ["rebuild", "consumequeue", *base],
        "rebuild index": ["rebuild", "index", *base],
        "repair": ["repair", *base],
        "clean --apply": ["clean", *base, "--now", "--file-reserved-time", "0", "--apply"],
        "config restore --apply": ["config", "restore", "--store", store, "--apply"],
    }


def test_every_writer_refuses_while_a_jvm_holds_the_brokers_lock(tmp_path, broker_lock_class):
    store = copy_store("d-crashed", tmp_path)  # repair and rebuild would change it
    conf = broker_conf("d-crashed")
    holder = java(broker_lock_class, "hold", store)
    try:
        assert holder.stdout.readline().strip() == "locked"
        commands = writers(store, conf, tmp_path)
        before = store_files(store)
        for name, args in commands.items():
            res = run(*args)
            lines = [l for l in res.stderr.splitlines() if l.strip()]
            assert res.exit_code == 2 and len(lines) == 1 and "locked" in lines[0], (name, res.stderr)
            assert store_files(store) == before, name
        assert (store / "lock").read_bytes() == b"lock"  # what the JVM wrote, untouched
    finally:
        holder.stdin.close()
        assert holder.wait(600) == 0


def test_the_jvm_cannot_lock_while_rmqctl_writes_and_two_writers_never_both_proceed(tmp_path, broker_lock_class):
    """`append --jsonl -` holds the lock while it waits for input: the broker's tryLock gets null, and every
    other writing command refuses; once it ends, the JVM gets the lock."""
    store = copy_store("a-basic", tmp_path)
    conf = broker_conf("a-basic")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    first = subprocess.Popen(
        [sys.executable, "-m", "rmqctl", "append", "--store", str(store), "--broker-config", str(conf), "--jsonl", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        first.stdin.write(json.dumps({"topic": "First", "body": "held"}).encode() + b"\n")
        first.stdin.flush()
        assert json.loads(first.stdout.readline())["commitLogOffset"] > 0  # it runs, lock in hand
        probe = java(broker_lock_class, "probe", store)
        assert probe.communicate(timeout=600)[0].strip() == "null"
        commands = writers(store, conf, tmp_path)
        before = store_files(store)
        for name, args in commands.items():
            res = run(*args)
            assert res.exit_code == 2 and "locked" in res.stderr, (name, res.stderr)
        assert store_files(store) == before
    finally:
        first.stdin.close()
        assert first.wait(600) == 0
    probe = java(broker_lock_class, "probe", store)
    assert probe.communicate(timeout=600)[0].strip() == "acquired"


# -- paths: symlinks and record topics never lead a writer out of the store -------------------------------------------


def test_a_symlinked_store_is_resolved_once_and_said_so(tmp_path):
    store = copy_store("a-basic", tmp_path)
    link = tmp_path / "current"
    link.symlink_to(store)
    res = run("append", "--store", link, "--broker-config", broker_conf("a-basic"), "--topic", "T", "--body", "x")
    assert res.exit_code == 0, res.stderr
    assert f"store {link} is a symlink; using {store}" in res.stderr
    res = run("verify", "--store", link, "--broker-config", broker_conf("a-basic"), "--format", "jsonl")
    assert res.exit_code == 0 and "is a symlink" in res.stderr


def test_symlinks_out_of_the_store_are_reported_and_never_followed_by_writers(tmp_path):
    store = copy_store("a-basic", tmp_path)
    conf = broker_conf("a-basic")
    outside = tmp_path / "outside"
    outside.mkdir()
    # the last commitlog file (append writes there) and a consumequeue directory, moved out and linked back
    last = sorted((store / "commitlog").iterdir())[-1]
    os.rename(last, outside / last.name)
    last.symlink_to(outside / last.name)
    queue = store / "consumequeue" / "TopicTest" / "0"
    os.rename(queue, outside / "queue0")
    queue.symlink_to(outside / "queue0")
    (store / "inside-link").symlink_to(store / "checkpoint")  # a link within the store is fine
    commands = writers(store, conf, tmp_path)
    before_out, before_in = store_files(outside), store_files(store)
    res = run("verify", "--store", store, "--broker-config", conf, "--format", "jsonl")
    found = {(f["kind"], f["file"]) for f in jsonl(res.stdout) if f["kind"] == "symlink-outside"}
    assert res.exit_code == 1 and {Path(f).name for _, f in found} == {last.name, "0"}, res.stdout
    for name, args in commands.items():
        if name.startswith(("clean", "config")):
            continue  # clean never deletes through a link (tests/test_clean.py); restore renames the link itself
        res = run(*args)
        lines = [l for l in res.stderr.splitlines() if l.strip()]
        assert res.exit_code == 2 and len(lines) == 1 and "outside the store" in lines[0], (name, res.stderr)
    assert store_files(outside) == before_out and store_files(store) == before_in


@pytest.fixture
def other_disk(tmp_path):
    """A second filesystem (a real 64 MiB tmpfs), as an operator's second disk."""
    with tmpfs_at(tmp_path / "disk2", "64m") as mnt:
        yield mnt


def linked_out(store: Path, name: str, disk: Path) -> Path:
    """store/NAME moved to DISK/NAME and linked back, as an operator puts a store part on another disk."""
    real = disk / name
    shutil.copytree(store / name, real)
    shutil.rmtree(store / name)
    (store / name).symlink_to(real)
    return real


@pytest.mark.tmpfs
def test_writers_follow_the_stores_own_top_level_links_to_another_disk(tmp_path, other_disk):
    """consumequeue/ and commitlog/ on another filesystem through symlinks: rebuild (whole and one topic),
    append and restore work through them, stage and keep backups on that filesystem (renames cannot cross
    one), and leave the links in place; verify finds the store sound."""
    store = copy_store("a-basic", tmp_path)
    conf = broker_conf("a-basic")
    cq = linked_out(store, "consumequeue", other_disk)
    linked_out(store, "commitlog", other_disk)
    fixture_cq = store_files(FIXTURES / "a-basic" / "store" / "consumequeue")
    (cq / "TopicTest" / "1" / "00000000000000000000").write_bytes(bytes(1280))  # a queue gone wrong
    res = run("rebuild", "consumequeue", "--store", store, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert [(r["topic"], r["queueId"]) for r in jsonl(res.stdout)] == [("TopicTest", 1)]
    assert (store / "consumequeue").is_symlink() and store_files(cq) == fixture_cq
    backups = sorted(other_disk.glob(".rmqctl-backup-*"))
    assert len(backups) == 1 and (backups[0] / str(cq).lstrip("/") / "TopicTest" / "1").is_dir()
    own = next(store.glob(".rmqctl-backup-*"))
    assert (
        res.stderr
        == f"rmqctl: 12 queue(s) rebuilt from 2000 records (2000 entries): changed; replaced files kept in {own}\n"
    )
    assert not list(other_disk.glob(".rmqctl-rebuild-*")) and not list(store.glob(".rmqctl-rebuild-*"))

    shutil.rmtree(cq / "OrderTopic")
    res = run(
        "rebuild",
        "consumequeue",
        "--topic",
        "OrderTopic",
        "--store",
        store,
        "--broker-config",
        conf,
        "--no-backup",
        "--format",
        "jsonl",
    )
    assert res.exit_code == 0, res.stderr
    assert store_files(cq) == fixture_cq
    res = run("append", "--store", store, "--broker-config", conf, "--topic", "TopicTest", "--body", "x")
    assert res.exit_code == 0, res.stderr
    assert (store / "commitlog").is_symlink()
    assert run("verify", "--store", store, "--broker-config", conf).exit_code == 0
    res = run("restore", own.name, "--store", store, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert (store / "consumequeue").is_symlink()
    assert (cq / "TopicTest" / "1" / "00000000000000000000").read_bytes() == bytes(1280)  # the damaged queue back


@pytest.mark.tmpfs
def test_repair_through_linked_queues_keeps_its_backup_beside_them(tmp_path, other_disk):
    """d-crashed with consumequeue/ and index/ on another disk: repair truncates files under both links; its
    staging and backup go beside the links' targets (the disk's top), never into a directory the broker
    lists (a topic's), and restore takes the repair back."""
    store = copy_store("d-crashed", tmp_path)
    conf = broker_conf("d-crashed")
    cq, index = linked_out(store, "consumequeue", other_disk), linked_out(store, "index", other_disk)
    before = {**store_files(cq), **{f"index/{k}": v for k, v in store_files(index).items()}}
    res = run("repair", "--store", store, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert {r["target"].split("/")[0] for r in jsonl(res.stdout) if r["action"] == "truncate"} == {
        "consumequeue",
        "index",
    }
    assert [p.name for p in cq.rglob(".rmqctl-*")] == [] and [p.name for p in index.rglob(".rmqctl-*")] == []
    assert [p.name.split("-2")[0] for p in other_disk.iterdir() if p.name.startswith(".rmqctl")] == [".rmqctl-backup"]
    own = next(store.glob(".rmqctl-backup-*"))
    res = run("restore", own.name, "--store", store, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert {**store_files(cq), **{f"index/{k}": v for k, v in store_files(index).items()}} == before


def test_a_top_level_link_into_another_store_is_refused(tmp_path):
    """consumequeue/ linked to another store's: writing through it would change that store; every writer
    refuses in one line and changes nothing."""
    store = copy_store("a-basic", tmp_path / "a")
    other = copy_store("a-basic", tmp_path / "b")
    shutil.rmtree(store / "consumequeue")
    (store / "consumequeue").symlink_to(other / "consumequeue")
    before = store_files(other)
    res = run("rebuild", "consumequeue", "--store", store, "--broker-config", broker_conf("a-basic"))
    assert (res.exit_code, res.stdout) == (2, "")
    assert res.stderr == (
        f"rmqctl: {store / 'consumequeue'}: is a symlink to {other / 'consumequeue'}, outside the "
        "store: rmqctl's writers do not follow it; they follow only the store's own top-level "
        "directories (commitlog/, consumequeue/, index/, ...) linked to a directory that is not "
        "part of another store\n"
    )
    assert store_files(other) == before


def test_a_recorded_topic_that_would_leave_the_store_is_never_dispatched(tmp_path):
    """A record whose topic reads `../../evi` past the consumequeues' end: append's catch-up (the broker's
    reput) refuses it, naming the record, and writes nothing outside the store."""
    from conftest import patch
    from rmqctl.store import Store

    store = copy_store("a-basic", tmp_path / "deep")
    conf = broker_conf("a-basic")
    res = run("append", "--store", store, "--broker-config", conf, "--topic", "TopicTest", "--body", "x")
    offset = jsonl(res.stdout)[0]["commitLogOffset"]
    f = Store(store).commitlog.find(offset)
    _, m = Store(store).read_message(offset)
    patch(f.path, m.position + m.storeSize - len(m.propertiesBytes) - 2 - 9, b"../../evi")
    for q in (store / "consumequeue" / "TopicTest").iterdir():  # the queue loses its last unit: reput from there
        shutil.rmtree(q)
    res = run("append", "--store", store, "--broker-config", conf, "--topic", "T", "--body", "y")
    assert res.exit_code == 2 and f"commitlog offset {offset}" in res.stderr and "'../../evi'" in res.stderr
    assert not (tmp_path / "evi").exists() and not (tmp_path / "deep" / "evi").exists()


# -- the torture suite's quick run keeps the figures true --------------------------------------------------------------


# every fixture with a store, named here rather than listed from the directory the run lists too
STORE_FIXTURES = [
    "a-basic",
    "b-mixed",
    "c-v5-features",
    "d-crashed",
    "e-dledger",
    "f-timer5",
    "g-metaq",
    "i-rocksdb-cq",
    "j-batchcq",
    "k-combine-cq",
]


# the quick run's last guard, said as too slow: a 2-core machine also running stress-ng and other test runs
# stretches the run many times over, and the guard sits well above even that
TORTURE_GUARD = 4 * 3600


@pytest.mark.tmpfs
def test_torture_quick_figures_are_all_zero(tmp_path):
    """benchmarks/torture.py --quick, as CI runs it, with its fixed seed: 300 fuzzed stores through every read
    command with no crash, none too slow and no damage verify missed, no decoder failure, no mixed state or lost
    acknowledged message after any kill and the next write and verify sound after it, no byte changed by a read
    command, and every writer on a full disk refusing cleanly. Its own time guards sit far above the work (600 s
    of CPU for a command); the wall limit here is the last guard, said as too slow."""
    out = tmp_path / "figures.json"
    try:
        res = subprocess.run(
            [sys.executable, str(REPO / "benchmarks" / "torture.py"), "--quick", "--json", str(out)],
            capture_output=True,
            text=True,
            timeout=TORTURE_GUARD,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"torture.py --quick too slow: not done after {e.timeout} s")
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    figures = json.loads(out.read_text())
    fuzz, readonly = figures["fuzz"], figures["readonly"]
    assert fuzz["stores"] == 300 and fuzz["crashes"] == fuzz["too slow"] == fuzz["missed"] == 0, fuzz["examples"]
    assert fuzz["must_report"] > 0 and fuzz["worker growth"] < 256 << 20
    assert figures["hypothesis"]["failures"] == 0, figures["hypothesis"]["first"]
    assert set(figures["hypothesis"]["per decoder"]) == {
        "record",
        "properties",
        "msgId",
        "decompression",
        "commitlog",
        "consumequeue",
        "index",
        "checkpoint",
        "config json",
        "timerlog",
        "dledger data",
        "metaq segment",
    }
    assert readonly["fixtures"] == STORE_FIXTURES and readonly["commands"] > 10 * len(STORE_FIXTURES)
    assert readonly["files changed"] == readonly["crashes"] == readonly["too slow"] == 0
    writers = {r["writer"] for r in figures["crash"]}
    assert writers == {
        "append",
        "rebuild consumequeue",
        "rebuild batchconsumequeue",
        "rebuild index",
        "repair",
        "clean --apply",
        "config restore",
        "restore",
    }
    assert {r["writer"] for r in figures["diskfull"]} == writers
    for r in figures["crash"]:
        assert r["step kills"] > 0 and r["mixed"] == r["lost acked"] == 0, r
        assert r["next write failed"] == r["verify after"] == 0, r
    for r in figures["diskfull"]:
        # clean only deletes (what frees a full disk): it must succeed there; every other writer needs room
        assert (r["refused"] == 0) == (r["writer"] == "clean --apply"), r
        assert r["not one line / exit 2"] == 0 and r["mixed"] == r["lost acked"] == r["unloadable"] == 0
        assert r["ok with room"] == r["trials"]


def test_an_index_chain_with_a_cycle_ends(tmp_path):
    """Every entry of an index file links to the next one, round and round (the fuzzer's hang): a key lookup
    visits each entry at most once and answers."""
    import struct

    from conftest import index_entry_at
    from rmqctl.config import load_config
    from rmqctl.store import Store

    store = copy_store("a-basic", tmp_path)
    ix = sorted((store / "index").iterdir())[0]
    data = bytearray(ix.read_bytes())
    count = S.INDEX_HEADER.unpack_from(data, 0)[-1]
    st = Store(store, load_config(str(broker_conf("a-basic"))))
    for k in range(1, count):
        struct.pack_into(">i", data, index_entry_at(st, k) + S.INDEX_ENTRY_SIZE - 4, k % (count - 1) + 1)
    ix.write_bytes(bytes(data))
    res = run("query", "key", "TopicTest", "no-such-key", "--store", store, "--broker-config", broker_conf("a-basic"))
    assert res.exit_code == 0 and not jsonl(res.stdout)
