"""Shared test helpers: the real RocketMQ fixture stores (read-only, copied before any change) and a CLI
runner that goes through click exactly as the console script does."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings as hypothesis_settings


from rmqctl import schema as S
from rmqctl.cli.main import cli

UNDER_CI = os.environ.get("CI", "").lower() == "true"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # torture.py's mutators and scratch rule

# every hypothesis test draws the same examples on every run (its seed is the test's name), and a failure prints
# the blob that replays it
hypothesis_settings.register_profile("seeded", derandomize=True, print_blob=True)
hypothesis_settings.load_profile("seeded")


def _skip_fails_under_ci(report, what: str):
    """Under CI=true a skip is a failure: CI provides everything a test needs, so a skip there means a test
    that proved nothing."""
    if UNDER_CI and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"{what} skipped under CI=true, where nothing may skip: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _skip_fails_under_ci(outcome.get_result(), item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _skip_fails_under_ci(outcome.get_result(), collector.nodeid)


# the test files that take longest (each minutes of one worker: a JVM, Spark, compiles, the torture run), started
# first: two workers, a file at a time (pyproject.toml), then end together instead of one finishing a long file alone
LONGEST_FIRST = (
    "test_reliability.py",
    "test_verify_windows.py",
    "test_spark.py",
    "test_spark_cluster.py",
    "test_append.py",
    "test_docs.py",
    "test_native.py",
    "test_contract.py",
    "test_append_columns.py",
    "test_aot.py",
    "test_repair.py",
    "test_spark_connect.py",
)


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # (stable: the rest keep their order)


FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
CLEAN_FIXTURES = ["a-basic", "b-mixed", "c-v5-features"]
ALL_FIXTURES = CLEAN_FIXTURES + ["d-crashed"]


def fixture_dir(name: str) -> Path:
    return FIXTURES / name


def broker_conf(name: str) -> Path:
    return FIXTURES / name / "broker.conf"


def truth(name: str, file: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name / file).read_text().splitlines() if line.strip()]


def write_rocksdb(path: Path, families: dict[str, dict[bytes, bytes]], compression: str):
    """A RocksDB database with exactly these column families and entries, in block format version 5 (what
    RocketMQ's option factories set, and what Debian's ldb reads) with `compression` (a rocksdict
    DBCompressionType name); the broker's databases as no RocketMQ code here writes them."""
    import rocksdict  # here: only the RocksDB tests load the binding

    def options():
        o = rocksdict.Options(raw_mode=True)
        table = rocksdict.BlockBasedOptions()
        table.set_format_version(5)
        o.set_block_based_table_factory(table)
        o.set_compression_type(getattr(rocksdict.DBCompressionType, compression)())
        return o

    opts = options()
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    db = rocksdict.Rdict(str(path), options=opts, column_families={cf: options() for cf in families if cf != "default"})
    for cf, items in families.items():
        handle = db if cf == "default" else db.get_column_family(cf)
        for k, v in items.items():
            handle[k] = v
        handle.flush()
    db.close()
    (path / "rocksdict-config.json").unlink()


def copy_store(name: str, dest: Path) -> Path:
    """A writable copy of a fixture store (the originals are read-only)."""
    target = dest / "store"
    shutil.copytree(FIXTURES / name / "store", target)
    for p in [target, *target.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return target


@contextlib.contextmanager
def held_lock(store: Path):
    """Another process holds the broker's lock (fcntl on byte 0 of {store}/lock) while the block runs;
    yields that process (its pid is what rmqctl should name)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import fcntl, os, time\n"
                f"fd = os.open({str(Path(store) / 'lock')!r}, os.O_RDWR | os.O_CREAT)\n"
                "fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)\n"
                "print('locked', flush=True)\n"
                "time.sleep(120)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def terminal_output(master: int, idle: float = 600):
    """What a child writes to the pseudo-terminal `master`, chunk by chunk, until it closes its side. Writing
    nothing for `idle` seconds fails the test as too slow: a last guard against a hang, far above the work."""
    while True:
        ready, _, _ = select.select([master], [], [], idle)
        if not ready:
            pytest.fail(f"too slow: nothing written to the terminal for {idle} s")
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            return
        if not data:
            return
        yield data


@contextlib.contextmanager
def tmpfs_at(mnt: Path, size: str):
    """A fresh tmpfs of `size` (mount's size=, e.g. 32m) mounted at `mnt` while the block runs (needs root)."""
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


EXAMPLE = Path(__file__).resolve().parents[1] / "examples"


def cleaned_copy(name: str, dest: Path, expired: int) -> tuple[Path, Path]:
    """(store, broker.conf) of a copy of fixture `name` (or "example": examples/store) in `dest` (a near-empty
    tmpfs, so age alone decides) whose first `expired` commitlog files are 100 hours old and the rest an hour,
    after rmqctl's clean did the broker's cleanup on it (--now --until-ok --apply): the state most production
    stores are in, consume queues still holding units below the commitlog's new minimum."""
    if name == "example":
        root, conf = Path(shutil.copytree(EXAMPLE / "store", dest / "store")), EXAMPLE / "broker.conf"
    else:
        root, conf = copy_store(name, dest), broker_conf(name)
    files = sorted((root / "commitlog").iterdir())
    for i, f in enumerate(files):
        t = time.time() - (100 if i < expired else 1) * 3600
        os.utime(f, (t, t))
    res = run("clean", "--store", root, "--broker-config", conf, "--now", "--until-ok", "--apply")
    assert res.exit_code == 0 and sorted((root / "commitlog").iterdir()) == files[expired:], res.stderr
    return root, conf


SYSCALL_READ = ("0", "63")  # read(2)'s number on x86-64 and arm64
SYSCALL_WRITE = ("1", "64")  # write(2)'s


def blocked_in(pid: int, syscalls: tuple[str, ...], fds=None, path: Path | None = None) -> bool:
    """Whether the process sits in one of `syscalls` on one of `fds` (or on a descriptor open on `path`), read
    from /proc. A signal sent then interrupts the syscall; one sent a moment earlier, before the process enters
    it, only sets Python's flag, and a read the process enters next waits for ever (CPython checks the flag
    between bytecodes, not inside read(2))."""
    with contextlib.suppress(OSError, ValueError):
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
        if len(fields) < 2 or fields[0] not in syscalls:
            return False
        fd = int(fields[1], 16)
        if fds is not None:
            return fd in fds
        return os.readlink(f"/proc/{pid}/fd/{fd}") == os.path.realpath(path)
    return False


def run(*args, input=None):
    """Invoke the CLI in-process; returns the click Result (exit_code, stdout, stderr)."""
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


def one_line_error(res, *needles) -> str:
    """Exit 2 with one line on stderr, no traceback, holding every needle; returns the line."""
    assert res.exit_code == 2, (res.stdout, res.stderr)
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert all(n in lines[0] for n in needles), lines[0]
    return lines[0]


def append_like_last(root: Path, conf: Path, topics: list[bytes], magic: int | None = None) -> list[int]:
    """Write copies of a store copy's last message under other topics after it (queue 0, queue offset 0,
    PHYSICALOFFSET = their place), as a broker would have written them. Returns their commitlog offsets."""
    import copy

    from rmqctl.config import load_config
    from rmqctl.record import encode_record
    from rmqctl.store import Store

    store = Store(root, load_config(conf))
    f, last = None, None
    for f, last in store.scan().records():
        pass
    pos, data, offsets = last.position + last.storeSize, b"", []
    for topic in topics:
        m = copy.copy(last)
        m.topicBytes, m.queueId, m.queueOffset = topic, 0, 0
        m.magicCode = last.magicCode if magic is None else magic
        m.physicalOffset = f.start + pos + len(data)
        offsets.append(m.physicalOffset)
        data += encode_record(m)
    assert pos + len(data) + 8 <= store.commitlog.file_size
    path = f.path
    store.close()
    patch(path, pos, data)
    return offsets


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def store_copy(tmp_path):
    """Factory: store_copy("a-basic") -> a writable copy under tmp_path."""
    return lambda name: copy_store(name, tmp_path)


def patch(path: Path, pos: int, data: bytes):
    """Overwrite bytes of a (copied) store file in place."""
    with open(path, "r+b") as fh:
        fh.seek(pos)
        fh.write(data)


def index_entry_at(store, n: int) -> int:
    """Where entry n of an index file of `store` starts."""
    slots, _ = store.index_geometry
    return S.INDEX_HEADER_SIZE + slots * S.HASH_SLOT_SIZE + n * S.INDEX_ENTRY_SIZE


@pytest.fixture(scope="session")
def java_oracle():
    """RocketMQ's own store code, restored once per session at $RMQ_JAVA_ORACLE (tests/oracle.py): a skip
    without it locally (a failure under CI=true, as every skip)."""
    import oracle

    return oracle.home()


@pytest.fixture
def crash_dir(tmp_path):
    """Where the kill tests copy stores: tmpfs while it has room (each copy is fsynced many times over; a
    SIGKILL does not lose the page cache, so what is tested does not depend on the disk), else the test's own
    directory on disk (benchmarks/torture.py's rule: a full tmpfs makes a test slower, never a failure)."""
    from torture import scratch  # here: the benchmark module loads the engine, which most tests never need

    where = scratch()
    if where == Path(tempfile.gettempdir()):
        yield tmp_path
        return
    d = Path(tempfile.mkdtemp(prefix="rmqctl-test-", dir=where))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole run (tests/test_spark.py's and the CLI's `spark` commands in
    tests/test_contract.py, which find it active): the JVM starts once."""
    from rmqctl.spark import session  # here: pyspark loads only in a run that has Spark tests

    s = session("local[2]", conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"})
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()
