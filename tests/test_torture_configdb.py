"""The torture suite's cases for issue 32's parts, run count-bound (no clocks): every damage benchmarks/torture.py
does to a RocksDB config database, under every read command of its fuzz run, and SIGKILL at filesystem steps of
the BatchCQ rebuild (the store afterwards is the old or the new, never a mix)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from conftest import jsonl, run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import torture  # noqa: E402  (benchmarks/ is not a package: after its path)

ROCKS = "i-rocksdb-cq"


def settled(res) -> bool:
    """A result of the CLI contract: exit 0/1, or 2 with one line naming what it refuses; never a traceback."""
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        return False
    if res.exit_code == 2:
        return len(res.stderr.splitlines()) == 1 and res.stderr.startswith("rmqctl: ")
    return res.exit_code in (0, 1) and "Traceback" not in res.stderr


@pytest.mark.parametrize("damage", torture.CONFIG_DAMAGE)
def test_a_damaged_config_database_is_refused_or_reported_never_a_crash(damage, tmp_path):
    profile = torture.Profile(ROCKS)
    root = torture.copy_store(ROCKS, tmp_path / "store")
    db = torture.config_database(root, profile.conf, damage, random.Random(damage))
    assert torture.reads_config_databases(profile.conf)
    results = {tuple(map(str, argv[:2])): run(*argv) for argv in profile.commands(root)}
    assert [argv for argv, res in results.items() if not settled(res)] == []
    verify = results[("verify", "--store")]
    reported = (
        verify.exit_code == 2
        and str(db) in verify.stderr
        or verify.exit_code == 1
        and any(f["kind"] == "config-load-fails" for f in jsonl(verify.stdout))
    )
    assert reported, (verify.exit_code, verify.stdout[-500:], verify.stderr)
    consumers = results[("consumers", "--store")]
    assert consumers.exit_code == 2 and str(db) in consumers.stderr


def test_a_stale_config_database_changes_no_verdict_of_a_file_store(tmp_path):
    """storeType=default: the broker never opens the database, so verify says what it says without it."""
    profile = torture.Profile("j-batchcq")
    root = torture.copy_store("j-batchcq", tmp_path / "store")
    argv = next(filter(torture.judges, profile.commands(root)))
    before = run(*argv)
    torture.config_database(root, profile.conf, "garbage value", random.Random(0))
    assert not torture.reads_config_databases(profile.conf)
    after = run(*argv)
    assert (after.exit_code, jsonl(after.stdout)) == (before.exit_code, jsonl(before.stdout))


def test_sigkill_at_filesystem_steps_of_the_batchcq_rebuild_leaves_old_or_new(crash_dir):
    name = "rebuild batchconsumequeue"
    steps = torture.writer_steps(name, crash_dir)
    plan = sorted({1, steps // 2, steps})  # the first step, one in the middle, the last
    row = torture.crash_trials(name, plan, random.Random(0), crash_dir)
    assert (row["step kills"], row["mixed"], row["lost acked"], row["next write failed"]) == (len(plan), 0, 0, 0), (
        json.dumps(row)
    )
