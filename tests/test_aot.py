"""The ahead-of-time compiled entries of a dump (rmqctl/engine/aot.py): built from numba's own kernels, they
write what numba's kernels write, byte for byte, on every fixture (content filters included); they run without numba, release the GIL,
hand any call their signature does not cover to numba, and a failed build leaves the command on numba."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ALL_FIXTURES, FIXTURES, broker_conf, run

from rmqctl.config import load_config
from rmqctl.engine import kernels as native
from rmqctl.engine import aot

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def built():
    """The module of this installation (the first dump on the command line builds it as well)."""
    if aot.module() is None:
        assert aot.build() is not None, "building the entries failed (a C compiler and Python's headers?)"
    assert aot.module() is not None


def dump_without_numba(store: Path, conf: Path, *options: str) -> tuple[int, bytes, bytes]:
    """`rmqctl dump commitlog` in a new process, as the console command runs: (exit code, stdout, stderr);
    checks that numba never loaded."""
    code = (
        "import atexit, os, sys; atexit.register(lambda: os.write(2, b'numba:%d' % ('numba' in sys.modules))); "
        "from rmqctl.cli.launch import main; main()"
    )
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "dump",
            "commitlog",
            "--store",
            str(store),
            "--broker-config",
            str(conf),
            *options,
        ],
        capture_output=True,
        cwd=REPO,
    )
    assert r.stderr.endswith(b"numba:0"), r.stderr.decode()
    return r.returncode, r.stdout, r.stderr.removesuffix(b"numba:0")


def dump_with_numba(store: Path, conf: Path, *options: str) -> tuple[int, bytes, bytes]:
    """The same command here, where the kernels are numba's (load_numba put them in every module)."""
    native.load_numba()
    r = run("dump", "commitlog", "--store", store, "--broker-config", conf, *options)
    return r.exit_code, r.stdout_bytes, r.stderr_bytes


def first_record(store: Path, conf: Path) -> dict:
    return json.loads(dump_with_numba(store, conf, "--limit", "1", "--body", "none")[1])


@pytest.mark.parametrize("name", ALL_FIXTURES + ["e-dledger"])
def test_the_entries_write_what_numbas_kernels_write(built, name):
    store, conf = FIXTURES / name / "store", broker_conf(name)
    first = first_record(store, conf)
    properties = first["properties"]
    filters = (
        ("--tag", properties.get("TAGS", "TagA"), "--key", (properties.get("KEYS") or "none").split()[0]),
        ("--property", "WAIT=true", "--msgid", first["msgId"]),
    )
    for options in (
        ("--body", "base64"),
        ("--body", "none", "--jobs", "2"),
        ("--body", "hex", "--queue-id", "1"),
        ("--raw-properties", "--from", "1"),
        *filters,
    ):
        want = dump_with_numba(store, conf, *options)
        assert want[1] or "--queue-id" in options or options in filters
        assert dump_without_numba(store, conf, *options) == want


def append_without(modules: tuple[str, ...], store: Path, conf: Path, *args) -> tuple[int, bytes, bytes]:
    """`rmqctl append --create --keep-timestamps *args` in a new process, as the console command runs on a warm
    installation: (exit code, stdout, stderr); checks that none of `modules` ever loaded."""
    code = (
        "import atexit, os, sys; atexit.register(lambda: os.write(2, b'loaded:' + ','.join(m for m in MODULES "
        "if m in sys.modules).encode())); from rmqctl.cli.launch import main; main()"
    ).replace("MODULES", repr(modules))
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "append",
            "--store",
            str(store),
            "--broker-config",
            str(conf),
            "--create",
            "--keep-timestamps",
            *map(str, args),
        ],
        capture_output=True,
        cwd=REPO,
    )
    assert r.stderr.endswith(b"loaded:"), r.stderr.decode()
    return r.returncode, r.stdout, r.stderr.removesuffix(b"loaded:")


@pytest.mark.parametrize("name", ["a-basic", "b-mixed", "c-v5-features"])
def test_a_warm_append_runs_the_entries_and_writes_what_numba_writes(built, tmp_path, name):
    """A real store's dump appended to a new store by the entries alone (no numba in the process: every kernel
    append calls is in ENTRIES; no pyarrow for JSON lines; no pandas for Parquet, which pyarrow's scalars would
    load) and by numba's kernels here: the same acknowledgements and the same files, from JSON lines and from
    the Parquet file of the store the lines made."""
    import pyarrow.parquet as pq

    from rmqctl.store import Store
    from test_append_columns import store_files

    conf = broker_conf(name)
    lines = tmp_path / "lines.jsonl"
    lines.write_bytes(dump_with_numba(FIXTURES / name / "store", conf, "--body", "base64", "--raw-properties")[1])
    code, out, err = append_without(("numba", "pyarrow"), tmp_path / "aot", conf, "--jsonl", lines)
    assert (code, err) == (0, b"")
    want = run(
        "append",
        "--store",
        tmp_path / "numba",
        "--broker-config",
        conf,
        "--create",
        "--keep-timestamps",
        "--jsonl",
        lines,
    )
    assert want.exit_code == 0 and out.decode() == want.stdout and out
    assert store_files(tmp_path / "aot") == store_files(tmp_path / "numba")
    store = Store(tmp_path / "aot", load_config(conf))
    try:
        pq.write_table(store.scan().table(), tmp_path / "rows.parquet", row_group_size=50)
    finally:
        store.close()
    code, out, err = append_without(
        ("numba", "pandas"), tmp_path / "aot-rows", conf, "--parquet", tmp_path / "rows.parquet"
    )
    assert (code, err) == (0, b"")
    want = run(
        "append",
        "--store",
        tmp_path / "numba-rows",
        "--broker-config",
        conf,
        "--create",
        "--keep-timestamps",
        "--parquet",
        tmp_path / "rows.parquet",
    )
    assert want.exit_code == 0 and out.decode() == want.stdout and out
    assert store_files(tmp_path / "aot-rows") == store_files(tmp_path / "numba-rows")


def test_an_entry_hands_any_other_call_to_numba(built):
    """An entry unboxes what its signature says without checking; the Entry checks, and a call it does not
    cover (other dtypes, a non-contiguous or read-only array where it writes) goes to numba's kernel."""
    code = """
import sys, numpy as np
from rmqctl.engine import aot, jsonl_kernels as jsonl
aot.install()
cols = np.zeros((4, 64), np.int64)
print(jsonl.line_bound(cols, 1, 20), 'numba' in sys.modules)
print(jsonl.line_bound(cols.astype(np.int32), 1, 20), 'numba' in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    first, second = out.splitlines()
    assert first.split()[1] == "False" and second.split()[1] == "True"
    assert first.split()[0] == second.split()[0]
    checks = aot.Entry(None, aot.ENTRIES["write_lines"][2], None).checks
    u8, out_param = checks[0], checks[10]
    buf = bytearray(64)
    writable = __import__("numpy").frombuffer(buf, "u1")
    read_only = __import__("numpy").frombuffer(bytes(64), "u1")
    assert u8(read_only) and u8(writable) and out_param(writable)
    assert not out_param(read_only) and not out_param(writable[::2]) and not u8(writable.view("i1"))


def test_the_entries_release_the_gil(built):
    """Threads run entries side by side: while one thread is inside the decode, the main thread runs. The GIL
    changes hands only where a thread lets it go (a switch interval of 1000 s: the main thread's sleep(0), the
    entry's release), so a main-thread stamp strictly inside a decode's window can only come from the entry
    letting the GIL go: an entry that held it would give none, whatever the machine's load. The worker decodes
    until a stamp lands inside one of its windows; a busy machine only makes that take more decodes, and the
    count bound (far above what an idle machine needs) is the last guard."""
    code = """
import sys, threading, time, numpy as np
from pathlib import Path
from rmqctl.engine import aot, batch as B, decode as D
aot.install()
head = np.fromfile(next(Path('examples/store/commitlog').iterdir()), np.uint8)
size = int.from_bytes(head[:4].tobytes(), 'big')
u8 = np.tile(head[:size], 40000)
u8.flags.writeable = False
cols = np.empty((40000, D.NCOLUMNS), np.int64)
stamps, calls = [], []
def work():
    while len(calls) < CALLS:
        t = time.perf_counter()
        n, _, _ = B.decode(u8, 0, len(u8), False, True, 1 << 40, cols)
        t1 = time.perf_counter()
        calls.append(n)
        if any(t < s < t1 for s in stamps[-1000:]):
            return
sys.setswitchinterval(1000)
worker = threading.Thread(target=work)
worker.start()
while worker.is_alive():
    stamps.append(time.perf_counter())
    time.sleep(0)
print(len(calls), set(calls))
""".replace("CALLS", str(GIL_CALLS))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    calls, counts = out.split(" ", 1)
    assert counts.strip() == "{40000}"
    assert int(calls) < GIL_CALLS, f"no main-thread stamp inside any of {GIL_CALLS} decodes: the entry holds the GIL"


# decodes before the GIL test says the entry holds the GIL: an idle machine needs one or two
GIL_CALLS = 2000


def test_a_failed_build_leaves_the_command_on_numba(tmp_path):
    """Without a C compiler the module cannot be built: the dump runs on numba's kernels, writes the same,
    and the failure is remembered (the next run does not try again)."""
    shutil.copytree(REPO / "rmqctl", tmp_path / "rmqctl", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path), CC="/nonexistent/cc", XDG_CACHE_HOME=str(tmp_path / "cache"))
    store, conf = FIXTURES / "a-basic" / "store", broker_conf("a-basic")
    cache = tmp_path / "rmqctl" / "engine" / "__pycache__"

    def dump() -> tuple[int, bytes, bytes]:
        r = subprocess.run(
            [sys.executable, "-m", "rmqctl", "dump", "commitlog", "--store", str(store), "--broker-config", str(conf)],
            capture_output=True,
            env=env,
            cwd=tmp_path,
        )
        return r.returncode, r.stdout, r.stderr

    first = dump()
    [failed] = cache.glob(f"{aot.MODULE}-*")
    assert failed.suffix == ".failed" and failed.read_text()
    stamp = failed.stat().st_mtime_ns
    assert dump() == first == dump_with_numba(store, conf)
    assert failed.stat().st_mtime_ns == stamp  # not tried again
    # no build directory left behind: only the lock the builds take turns on
    assert [p.name for p in cache.glob(".*")] == [f".{failed.stem}.lock"]


def test_without_source_files_there_is_no_module(monkeypatch):
    """Imported from a zip (spark-submit --py-files) the package has no source stamp: no module is looked for
    or built, and a dump runs on numba's kernels."""
    monkeypatch.setattr(aot, "SOURCES_STAMP", None)
    monkeypatch.setattr(aot, "_module", None)
    assert (aot.stamp(), aot.failed(), aot.module(), aot.build()) == (None, True, None, None)
    store, conf = FIXTURES / "a-basic" / "store", broker_conf("a-basic")
    r = run("dump", "commitlog", "--store", store, "--broker-config", conf, "--limit", "1")
    assert (r.exit_code, len(r.stdout.splitlines())) == (0, 1)
