"""Found by the torture suite's crash trials of `restore`: a store copied or moved after an rmqctl write
(another disk, another mount point) acts on itself (the intent of a killed run and a backup's manifest record
absolute paths; reading them in the copy must never touch the place they were written in), and a restore
killed while it deletes its used-up backup leaves nothing the next restore refuses."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import broker_conf, copy_store, jsonl, one_line_error, run

REPO = Path(__file__).resolve().parents[1]


def files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "lock"
    }


def index_names(root: Path) -> list[str]:
    return sorted(os.listdir(root / "index"))


def test_restore_in_a_copied_store_puts_back_into_the_copy(tmp_path):
    conf = broker_conf("a-basic")
    original = copy_store("a-basic", tmp_path / "a")
    for p in sorted((original / "index").iterdir())[-3:]:
        p.unlink()
    kept = index_names(original)
    assert run("rebuild", "index", "--store", original, "--broker-config", conf).exit_code == 0
    backup = next(p.name for p in original.iterdir() if p.name.startswith(".rmqctl-backup-"))
    copy = tmp_path / "b" / "store"
    shutil.copytree(original, copy)
    before = files(original)
    res = run("restore", backup, "--store", copy, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert all(row["target"].startswith(str(copy.resolve())) for row in jsonl(res.stdout))
    assert index_names(copy) == kept
    assert files(original) == before


def test_a_manifest_naming_a_path_outside_the_store_is_refused(tmp_path):
    conf = broker_conf("a-basic")
    store = copy_store("a-basic", tmp_path)
    sorted((store / "index").iterdir())[-1].unlink()
    assert run("rebuild", "index", "--store", store, "--broker-config", conf).exit_code == 0
    backup = next(p for p in store.iterdir() if p.name.startswith(".rmqctl-backup-"))
    manifest = json.loads((backup / ".rmqctl-backup.json").read_text())
    victim = tmp_path / "victim"
    victim.mkdir()
    manifest["steps"][0]["target"] = str(victim)
    (backup / ".rmqctl-backup.json").write_text(json.dumps(manifest))
    before = files(store)
    one_line_error(run("restore", backup.name, "--store", store), "outside the store")
    assert victim.is_dir() and not any(victim.iterdir()) and files(store) == before


def test_a_killed_runs_intent_in_a_copied_store_completes_in_the_copy(tmp_path):
    """rebuild index killed right after its commit point (the intent written, nothing applied); the store is
    copied; the next writing command on the copy rolls the run forward there, the original is untouched."""
    conf = broker_conf("a-basic")
    original = copy_store("a-basic", tmp_path / "a")
    for p in sorted((original / "index").iterdir())[-3:]:
        p.unlink()
    killed = (
        "import os, sys\n"
        "import rmqctl.txn as txn\n"
        "txn.apply_intent = lambda root, intent: os._exit(9)\n"
        "from rmqctl.cli.main import cli\n"
        "cli(sys.argv[1:], prog_name='rmqctl')\n"
    )
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            killed,
            "rebuild",
            "index",
            "--store",
            str(original),
            "--broker-config",
            str(conf),
            "--no-backup",
        ],
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 9 and (original / ".rmqctl-intent").exists(), res.stderr
    copy = tmp_path / "b" / "store"
    shutil.copytree(original, copy)
    before = files(original)
    res = run("append", "--store", copy, "--broker-config", conf, "--topic", "After", "--body", "x")
    assert res.exit_code == 0, res.stderr
    assert files(original) == before and (original / ".rmqctl-intent").exists()
    assert not (copy / ".rmqctl-intent").exists() and len(index_names(copy)) == len(index_names(original)) + 3
    res = run("verify", "--store", copy, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stdout


def test_a_used_up_backup_left_by_a_killed_restore_is_deleted_by_the_next(tmp_path):
    """Killed after putting everything back, before deleting the emptied backup (its manifest alone is left):
    the next restore of it has nothing to put back, deletes it and succeeds."""
    conf = broker_conf("a-basic")
    store = copy_store("a-basic", tmp_path)
    sorted((store / "index").iterdir())[-1].unlink()
    assert run("rebuild", "index", "--store", store, "--broker-config", conf).exit_code == 0
    backup = next(p for p in store.iterdir() if p.name.startswith(".rmqctl-backup-"))
    shutil.rmtree(store / "index")
    (backup / "index").rename(store / "index")  # what the killed restore had done
    res = run("restore", backup.name, "--store", store, "--format", "jsonl")
    assert res.exit_code == 0 and not jsonl(res.stdout), res.stderr
    assert not backup.exists() and not [p for p in store.iterdir() if p.name.startswith(".rmqctl-")]


def test_restore_on_a_full_disk_refuses_in_one_line_and_leaves_nothing(tmp_path):
    """restore only renames, but its intent file needs a block: on a full tmpfs that write fails. One line
    naming the intent file, exit 2, the store unchanged and no half-written intent left for verify to warn
    about (found by the torture suite's disk-full trials of restore)."""
    conf = broker_conf("a-basic")
    mnt = tmp_path / "full"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], check=True)
    try:
        store = copy_store("a-basic", mnt)
        sorted((store / "index").iterdir())[-1].unlink()
        assert run("rebuild", "index", "--store", store, "--broker-config", conf).exit_code == 0
        backup = next(p.name for p in store.iterdir() if p.name.startswith(".rmqctl-backup-"))
        with open(mnt / "filler", "wb") as f:  # every block taken
            with contextlib.suppress(OSError):
                while True:
                    f.write(bytes(1 << 16))
                    f.flush()
        before = files(store)
        one_line_error(run("restore", backup, "--store", store), ".rmqctl-intent.tmp", "no space left")
        assert files(store) == before and not (store / ".rmqctl-intent.tmp").exists()
        res = run("verify", "--store", store, "--broker-config", conf, "--format", "jsonl")
        assert res.exit_code == 0, res.stdout
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)
