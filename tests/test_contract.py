"""The CLI contract held over every command at once (../shared/spec/cli-contract.md): one table of command
lines, each with the exit code it must give (0 done, 1 findings, 2 bad input or refused), run through click as
the console script does; Ctrl-C (a real SIGINT to the real console script) gives 130 in every command; and every
read command, Spark's included, leaves every byte, name and mtime of the store it read as it was."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import click
import pytest

import oracle
from conftest import FIXTURES, SYSCALL_READ, SYSCALL_WRITE, blocked_in, run, truth
from test_compaction import CQ_SIZE, LOG_CONFIG, TOPIC, rocketmq_compaction
from test_rocksdbstore import index_entries, write_db
from rmqctl.budget import block_sigint_here
from rmqctl.cli.main import cli
from rmqctl.engine import ordered_map

REPO = Path(__file__).resolve().parents[1]
CONSOLE_SCRIPT = Path(sys.executable).with_name("rmqctl")
INTERRUPT_GUARD = 600  # seconds a command may take to reach its first output: far above any here (too slow past it)


def every_command() -> set[str]:
    """Every command line name (`dump commitlog`, `metaq verify`, ...) the CLI has."""
    names = set()

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
        else:
            names.add(" ".join(path))

    walk(cli, [])
    return names


class Stores:
    """Writable copies of the fixtures the table runs on: a-basic (4.9.7), f-timer5 (its timer wheel unpacked),
    d-crashed (verify finds its damage), c-v5-features (5.3.3; four commitlog files: Spark's tasks), j-batchcq
    (5.3.3's BatchCQ topic), a compaction topic's store RocketMQ 5.3.3 wrote, b-mixed with a RocksDB message
    store (5.4) built from its records, g-metaq and a copy of it with one
    record's data changed (verify finds it)."""

    def __init__(self, base: Path):
        self.base = base
        self.rocketmq = self.copy("a-basic")
        self.timer = self.copy("f-timer5")
        with gzip.open(self.timer / "timerwheel.gz") as src, open(self.timer / "timerwheel", "wb") as dst:
            shutil.copyfileobj(src, dst)
        (self.timer / "timerwheel.gz").unlink()
        self.crashed = self.copy("d-crashed")
        self.v5 = self.copy("c-v5-features")
        self.batchcq = self.copy("j-batchcq")
        # a compaction topic's store as RocketMQ 5.3.3's own CompactionLog writes it (tests/test_compaction.py)
        self.compaction = base / "compaction" / "store"
        self.compaction.mkdir(parents=True)
        rocketmq_compaction(oracle.home(), self.compaction, base / "compaction")
        self.compaction_conf = base / "compaction" / "broker.conf"
        self.compaction_conf.write_text(
            f"compactionCqMappedFileSize={CQ_SIZE}\ncompactionMappedFileSize={LOG_CONFIG}\n"
        )
        self.rocksdbstore = self.copy("b-mixed")  # with the 5.4 RocksDB message store its records' index makes
        messages = truth("b-mixed", "truth-messages.jsonl")
        write_db(
            self.rocksdbstore / "rocksdbstore",
            {"default": dict(e for m in messages for e in index_entries(m)), "timer": {}, "trans": {}},
        )
        self.metaq = self.copy("g-metaq")
        self.metaq_damaged = self.copy("g-metaq", "g-metaq-damaged")
        with open(self.metaq_damaged / "meta-test-0" / "00000000000000000000.meta", "r+b") as segment:
            segment.seek(20)  # the first record's first data byte: its checksum no longer matches
            byte = segment.read(1)
            segment.seek(20)
            segment.write(bytes([byte[0] ^ 0xFF]))
        self.not_a_store = base / "not-a-store"
        self.not_a_store.mkdir()
        (self.not_a_store / "notes.txt").write_text("not a store\n")

    def copy(self, name: str, as_name: str | None = None) -> Path:
        target = self.base / (as_name or name)
        shutil.copytree(FIXTURES / name / "store", target)
        for p in [target, *target.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        return target


def fixture_conf(name: str) -> Path:
    return FIXTURES / name / ("server.ini" if name == "g-metaq" else "broker.conf")


def rows(s: Stores, out: Path, conf=fixture_conf) -> list[tuple[str, str, list, int]]:
    """(command, what the row is, arguments after the command's name, the exit code it must give). "read" rows
    must change no byte of their store. Expected values come from the fixtures' truth files; `conf(name)` is
    the broker or server config file given for fixture `name`."""
    first = truth("a-basic", "truth-messages.jsonl")[0]
    key = first["properties"]["KEYS"].split()[0]
    a = ["--store", s.rocketmq, "--broker-config", conf("a-basic")]
    t = ["--store", s.timer, "--broker-config", conf("f-timer5")]
    d = ["--store", s.crashed, "--broker-config", conf("d-crashed")]
    v5 = ["--store", s.v5, "--broker-config", conf("c-v5-features")]
    v5_key = truth("c-v5-features", "truth-messages.jsonl")[0]["properties"]["KEYS"].split()[0]
    j = ["--store", s.batchcq, "--broker-config", conf("j-batchcq")]
    m = ["--store", s.metaq, "--server-config", conf("g-metaq")]
    bad = ["--store", s.not_a_store]
    return [
        ("info", "read", [*a], 0),
        ("info", "bad", [*bad], 2),
        ("verify", "read", [*a], 0),
        ("verify", "findings", [*d], 1),
        ("verify", "bad", [*bad], 2),
        ("dump commitlog", "read", [*a, "--limit", "3"], 0),
        ("dump commitlog", "bad", [*bad], 2),
        ("dump consumequeue", "read", [first["topic"], first["queueId"], *a], 0),
        ("dump consumequeue", "bad", [first["topic"], first["queueId"], *bad], 2),
        ("dump batchconsumequeue", "read", ["BatchTopic", 0, *j], 0),
        ("dump batchconsumequeue", "bad", ["NoSuchTopic", 0, *j], 2),
        ("dump compaction", "read", [TOPIC, 0, "--store", s.compaction, "--broker-config", s.compaction_conf], 0),
        ("dump compaction", "bad", ["NoSuchTopic", 0, *j], 2),
        ("dump index", "read", [*a], 0),
        ("dump index", "bad", [*bad], 2),
        ("dump rocksdbstore", "read", ["--store", s.rocksdbstore, "--broker-config", conf("b-mixed")], 0),
        ("dump rocksdbstore", "bad", [*bad], 2),
        ("dump checkpoint", "read", [*a], 0),
        ("dump checkpoint", "bad", [*bad], 2),
        ("dump timerlog", "read", [*t], 0),
        ("dump timerlog", "bad", [*a], 2),
        ("dump timerwheel", "read", [*t], 0),
        ("dump timerwheel", "bad", [*a], 2),
        ("locate", "read", [first["commitLogOffset"], *a], 0),
        ("locate", "bad", [-5, *a], 2),
        ("msgid decode", "read", [first["msgId"], *a], 0),
        ("msgid decode", "bad", ["not-an-id", *a], 2),
        ("msgid lookup", "read", [first["msgId"], *a], 0),
        ("msgid lookup", "bad", [first["msgId"], *bad], 2),
        ("query key", "read", [first["topic"], key, *a], 0),
        ("query key", "findings", [first["topic"], "NO-SUCH-KEY", "--exit-status", *a], 1),
        ("query key", "bad", [first["topic"], key, *bad], 2),
        ("offset-by-time", "read", [first["topic"], first["queueId"], first["storeTimestamp"], *a], 0),
        ("offset-by-time", "bad", [first["topic"], first["queueId"], "not-a-time", *a], 2),
        ("consumers", "read", [*a], 0),
        ("consumers", "bad", [*bad], 2),
        ("delay-offsets", "read", [*a], 0),
        ("delay-offsets", "bad", [*bad], 2),
        ("diff", "read", [s.rocketmq, s.rocketmq, "--broker-config", conf("a-basic")], 0),
        ("diff", "findings", [s.crashed, s.rocketmq], 1),
        ("diff", "bad", [s.rocketmq, s.not_a_store], 2),
        ("clean", "read", [*a, "--at", "2023-11-15T00:00:00"], 0),
        ("clean", "bad", [*a, "--at", "yesterday"], 2),
        ("config restore", "read", [*a], 0),
        ("config restore", "bad", [*bad, "--apply"], 2),
        ("restore", "read", [*a], 0),
        ("restore", "bad", ["no-such-backup", *a], 2),
        ("rebuild consumequeue", "read", [*a, "--dry-run"], 0),
        ("rebuild consumequeue", "bad", [*bad], 2),
        ("rebuild index", "read", [*a, "--dry-run"], 0),
        ("rebuild index", "bad", [*bad], 2),
        ("repair", "read", [*a, "--dry-run"], 0),
        ("repair", "bad", [*bad], 2),
        ("convert consumequeue", "read", [*a, "--to", "rocksdb", "--dry-run"], 0),
        ("convert consumequeue", "bad", [*bad, "--to", "rocksdb"], 2),
        ("append", "write", [*a, "--topic", "Contract", "--body", "x"], 0),
        ("append", "bad", [*a, "--topic", "../x", "--body", "x"], 2),
        ("metaq info", "read", [*m], 0),
        ("metaq info", "bad", ["--store", s.base / "missing"], 2),
        ("metaq verify", "read", [*m], 0),
        ("metaq verify", "findings", ["--store", s.metaq_damaged, "--server-config", conf("g-metaq")], 1),
        ("metaq verify", "bad", ["--store", s.base / "missing"], 2),
        ("metaq dump", "read", [*m, "--limit", "3"], 0),
        ("metaq dump", "bad", ["--store", s.base / "missing"], 2),
        ("metaq locate", "read", [0, "--topic", "meta-test", "--partition", 0, *m], 0),
        ("metaq locate", "bad", [0, "--topic", "nope", "--partition", 0, *m], 2),
        ("metaq clean", "read", [*m], 0),
        ("metaq clean", "bad", [*m, "--at", "yesterday"], 2),
        ("metaq repair", "read", [*m, "--dry-run"], 0),
        ("metaq repair", "bad", ["--store", s.base / "missing"], 2),
        ("metaq append", "write", [*m, "--topic", "meta-test", "--partition", 0, "--payload", "x"], 0),
        ("metaq append", "bad", [*m, "--topic", "../x", "--partition", 0, "--payload", "x"], 2),
        ("spark schema", "read", [], 0),
        ("spark schema", "bad", ["--format", "xml"], 2),
        ("spark stats", "read", [*v5], 0),
        ("spark stats", "bad", [*bad], 2),
        ("spark query", "read", [*v5, "--key", v5_key], 0),
        ("spark query", "bad", [*bad, "--key", v5_key], 2),
        ("spark verify", "read", [*v5], 0),
        ("spark verify", "findings", [*d], 1),
        ("spark verify", "bad", [*bad], 2),
        ("spark export", "read", [*v5, "--out", out / "export"], 0),
        ("spark export", "bad", [*bad, "--out", out / "export-bad"], 2),
    ]


# sha256 of each file version already hashed, by everything the kernel changes when a file's bytes change (a
# write or a store through a mapping sets mtime and ctime; ctime cannot be set back): the stores hold sparse
# 1 GiB files, and hashing every one before and after each of the table's rows was most of this module's time
DIGESTS: dict[tuple, str] = {}


def snapshot(root: Path) -> dict[str, tuple]:
    """sha256, mtime and size of every file, and every directory, under root."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        digest = None
        if p.is_file() and not p.is_symlink():
            version = (str(p), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            if version not in DIGESTS:
                DIGESTS[version] = hashlib.sha256(p.read_bytes()).hexdigest()
            digest = DIGESTS[version]
        out[p.relative_to(root).as_posix()] = (digest, st.st_mtime_ns, st.st_size)
    return out


@pytest.fixture(scope="module")
def table(tmp_path_factory, spark):
    """Every row run once, in-process through click: (row, result, the stores' snapshots before and after)."""
    base = tmp_path_factory.mktemp("contract")
    stores = Stores(base / "stores")
    results = []
    for command, kind, args, want in rows(stores, base / "out"):
        before = snapshot(stores.base)
        res = run(*command.split(), *args)
        results.append(((command, kind, args, want), res, before, snapshot(stores.base)))
    return results


def test_every_command_gives_its_exit_code(table):
    """Each command done (0), with findings where it has them (1), and on bad input or a refusal (2: one line,
    no traceback); every command of the CLI has a row of each kind it has."""
    covered = {}
    for (command, kind, args, want), res, _, _ in table:
        covered.setdefault(command, set()).add(want)
        assert res.exit_code == want, (command, kind, res.exit_code, res.stderr[-2000:])
        assert "Traceback" not in res.stderr, (command, kind, res.stderr)
        if want == 2:
            lines = [line for line in res.stderr.splitlines() if line.strip()]
            assert lines and ("rmqctl:" in lines[-1] or "Error:" in lines[-1]), (command, kind, res.stderr)
    assert set(covered) == every_command()
    assert all({0, 2} <= codes for codes in covered.values()), covered


def test_read_commands_change_no_byte(table):
    """Every read command (plans and --dry-run included, Spark's too) leaves every file of every store as it
    was: content, size, mtime, and no file added or removed."""
    read = 0
    for (command, kind, args, want), res, before, after in table:
        if kind in ("read", "findings"):
            read += 1
            assert after == before, (command, kind, sorted(set(before.items()) ^ set(after.items()))[:5])
    assert read >= len(every_command())


def full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is already full: the first write to it blocks until the other end is read."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    with contextlib.suppress(BlockingIOError):
        while True:
            os.write(w, bytes(65536))
    os.set_blocking(w, True)
    return r, w


def interrupt(argv: list, fifo: Path, cwd: Path) -> subprocess.CompletedProcess:
    """Run the real console script with its config file a FIFO nobody writes and its stdout and stderr on full
    pipes, so it blocks reading its config or on its first output; once it sits in that read(2) or write(2),
    send SIGINT (Ctrl-C), then drain both pipes. An event waited for, not a clock: INTERRUPT_GUARD only ends a
    run that never blocks."""
    pipes = [full_pipe(), full_pipe()]
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [str(CONSOLE_SCRIPT), *map(str, argv)],
        stdin=subprocess.DEVNULL,
        stdout=pipes[0][1],
        stderr=pipes[1][1],
        cwd=cwd,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    for _, w in pipes:
        os.close(w)
    reads_config = str(fifo) in map(str, argv)
    began, writer = time.monotonic(), None
    while proc.poll() is None:
        if reads_config and writer is None:
            with contextlib.suppress(OSError):  # ENXIO until the command opens its config for reading
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        if (
            blocked_in(proc.pid, SYSCALL_READ, path=fifo)
            if reads_config
            else blocked_in(proc.pid, SYSCALL_WRITE, fds=(1, 2))
        ):
            break
        if time.monotonic() - began > INTERRUPT_GUARD:
            proc.kill()
            pytest.fail(f"too slow: {argv[:2]} neither read its config nor wrote in {INTERRUPT_GUARD} s")
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    outputs = [b"", b""]

    def drain(k: int):
        with os.fdopen(pipes[k][0], "rb") as f:
            outputs[k] = f.read()

    readers = [threading.Thread(target=drain, args=(k,)) for k in (0, 1)]  # both at once: either may block it
    for reader in readers:
        reader.start()
    try:
        proc.wait(timeout=INTERRUPT_GUARD)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"too slow: {argv[:2]} did not stop in {INTERRUPT_GUARD} s after SIGINT")
    for reader in readers:
        reader.join()
    if writer is not None:
        os.close(writer)
    return subprocess.CompletedProcess(argv, proc.returncode, outputs[0], outputs[1].replace(b"\0", b"").decode())


def test_ctrl_c_exits_130_in_every_command(tmp_path):
    """SIGINT while each command is busy (reading its config, or blocked on its first output): exit 130,
    `rmqctl: interrupted`, no traceback, in every command of the CLI, through the installed console script."""
    stores = Stores(tmp_path / "stores")
    fifo = tmp_path / "config-fifo"
    os.mkfifo(fifo)
    seen = set()
    for command, kind, args, want in rows(stores, tmp_path / "out", conf=lambda name: fifo):
        if want != 0 or command in seen:
            continue
        seen.add(command)
        res = interrupt([*command.split(), *args], fifo, tmp_path)
        assert res.returncode == 130, (command, res.returncode, res.stderr[-2000:])
        assert "rmqctl: interrupted" in res.stderr and "Traceback" not in res.stderr, (command, res.stderr[-2000:])
    assert seen == every_command()


def test_block_sigint_here_blocks_it_in_its_thread_only():
    """The initializer every thread a command starts runs first: SIGINT blocked there, the caller's mask untouched."""
    masks = []

    def body():
        block_sigint_here()
        masks.append(signal.pthread_sigmask(signal.SIG_BLOCK, set()))

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert signal.SIGINT in masks[0]
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())


def test_the_threads_a_walk_runs_on_block_sigint():
    """ordered_map's threads (dump's, inspect's, the walks') start with SIGINT blocked, whatever their caller's mask."""
    masks = list(ordered_map(lambda _: signal.pthread_sigmask(signal.SIG_BLOCK, set()), range(8), jobs=2))
    assert all(signal.SIGINT in mask for mask in masks)


def test_only_the_main_thread_takes_ctrl_c(tmp_path):
    """A SIGINT handed to another thread would leave a main thread blocked in a read waiting for ever: the console
    script blocks SIGINT in every thread but the main one (numpy's OpenBLAS pool included, here started as a user
    who sets OPENBLAS_NUM_THREADS would). Read from /proc while the command waits on a FIFO config."""
    fifo = tmp_path / "config-fifo"
    os.mkfifo(fifo)
    store = FIXTURES / "a-basic" / "store"
    proc = subprocess.Popen(
        [str(CONSOLE_SCRIPT), "locate", "0", "--store", str(store), "--broker-config", str(fifo)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="4"),
    )
    try:
        writer = None
        while writer is None and proc.poll() is None:
            with contextlib.suppress(OSError):  # ENXIO until the command opens its config for reading
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        blocked = sigint_blocked(proc.pid)
    finally:
        proc.kill()
        proc.wait()
        if writer is not None:
            os.close(writer)
    assert len(blocked) > 1  # numpy's threads are there to be judged
    assert blocked.pop(proc.pid) is False
    assert all(blocked.values())


def test_append_waiting_on_input_takes_ctrl_c_only_in_the_main_thread(tmp_path):
    """The threads a command starts once running (append's parse pool) block SIGINT too: a running
    `append --jsonl -` that has acknowledged a line and waits for the next."""
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerIP1=192.168.0.10\n")
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        [str(CONSOLE_SCRIPT), "append", "--store", str(tmp_path / "store"), "--broker-config", str(conf)]
        + ["--create", "--jsonl", "-"],
        stdin=read_end,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    os.close(read_end)
    try:
        os.write(write_end, b'{"topic":"T","body":"b"}\n')
        assert proc.stdout.readline()  # acknowledged: the parse thread ran, and append waits for more
        blocked = sigint_blocked(proc.pid)
    finally:
        os.close(write_end)
        proc.wait(60)
    assert proc.returncode == 0
    assert blocked.pop(proc.pid) is False
    assert all(blocked.values()), blocked


def sigint_blocked(pid: int) -> dict[int, bool]:
    """Whether each thread of process `pid` blocks SIGINT (its SigBlk in /proc)."""
    blocked = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        status = dict(line.split(":\t", 1) for line in (task / "status").read_text().splitlines() if ":\t" in line)
        blocked[int(task.name)] = bool(int(status["SigBlk"], 16) & (1 << (signal.SIGINT - 1)))
    return blocked
