"""verify in windows of commitlog offsets finds exactly what the whole-store pass finds: every fixture and
randomly damaged copies (benchmarks/torture.py's mutators), checked with windows of 1, 2, 3 and 7 records
against one window holding every record (the differential proof of ops/verify_windows.py)."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from rmqctl.config import load_config
from rmqctl.errors import StoreError
from rmqctl.ops.verify import verify
from rmqctl.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import torture  # noqa: E402

ROCKETMQ = [name for name in torture.fixtures() if name != "g-metaq"]
WINDOWS = (1, 2, 3, 7)
WHOLE = 1 << 40


def _findings(root: Path, conf, window: int, **kw) -> list[tuple]:
    store = Store(root, load_config(str(conf)) if conf else None)
    result = verify(store, window=window, jobs=1, **kw)
    return [(f.kind, f.severity, f.file, f.position, f.commitLogOffset, f.detail) for f in result.findings]


def _same(root: Path, conf, **kw):
    try:
        whole = _findings(root, conf, WHOLE, **kw)
    except StoreError:
        return
    for window in WINDOWS:
        assert _findings(root, conf, window, **kw) == whole, f"window of {window} record(s)"


@pytest.mark.parametrize("name", ROCKETMQ)
def test_fixture_windows_find_the_same(name, tmp_path):
    root = torture.copy_store(name, tmp_path / "store")
    _same(root, torture.conf_of(name), deep=True)
    _same(root, torture.conf_of(name), only="consumequeue")


@pytest.mark.parametrize("name", ["b-mixed", "d-crashed"])
@pytest.mark.parametrize("limits", [dict(start=3000), dict(end=9000), dict(start=2000, end=20000, deep=True)])
def test_ranges_windows_find_the_same(name, limits, tmp_path):
    root = torture.copy_store(name, tmp_path / "store")
    _same(root, torture.conf_of(name), **limits)


@pytest.mark.parametrize("seed", range(12))
def test_damaged_copy_windows_find_the_same(seed, tmp_path):
    rng = random.Random(seed)
    name = ROCKETMQ[seed % len(ROCKETMQ)]
    root = torture.copy_store(name, tmp_path / "store")
    outside = tmp_path / "outside"
    outside.mkdir()
    torture.mutate(root, rng, outside, torture.Profile(name))
    _same(root, torture.conf_of(name), deep=True)


def test_memory_sizes_the_window():
    from rmqctl.ops.verify_windows import BYTES_PER_RECORD, FIXED_BYTES, window_records

    assert window_records(256 << 20) == ((256 << 20) - FIXED_BYTES) // BYTES_PER_RECORD
    assert window_records(1 << 20) == 1  # below the fixed part: still one record at a time


def test_memory_option_on_the_command_line(tmp_path):
    import subprocess

    root = torture.copy_store("a-basic", tmp_path / "store")
    conf = str(torture.conf_of("a-basic"))
    small = subprocess.run(["rmqctl", "verify", "--store", str(root), "--broker-config", conf, "--memory", "1M",
                            "--format", "jsonl"], capture_output=True, text=True)
    default = subprocess.run(["rmqctl", "verify", "--store", str(root), "--broker-config", conf, "--format", "jsonl"],
                             capture_output=True, text=True)
    assert (small.returncode, small.stdout) == (default.returncode, default.stdout)
    bad = subprocess.run(["rmqctl", "verify", "--store", str(root), "--memory", "lots"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--memory" in bad.stderr
