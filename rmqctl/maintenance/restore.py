"""`restore`: put back what a rebuild, repair or config restore replaced, from the backup directory it
kept (`{store}/.rmqctl-backup-<time>/`), as one transaction of txn.py.

The backup's manifest (`.rmqctl-backup.json`, written by txn.apply_intent) says, per step of the run, which
live item it replaced or removed and where the old one went. Restoring swaps each old item back into place
(the staged side of the swap is the backup item itself, so nothing is copied and a kill at any moment leaves
the store as it was or as restored), takes away items the run added, and keeps what it replaces in a new
backup directory: a restore can itself be restored. The emptied backup directory is then deleted.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import StoreError
from ..store import Store, elsewhere
from .staging import store_transaction, writing
from ..txn import BACKUP_MANIFEST, BACKUP_PREFIX, at_root, fsync_dir


@dataclasses.dataclass
class Backup:
    name: str
    path: str
    command: str | None  # None: no manifest (kept by an rmqctl older than `restore`)
    created: str | None
    items: int  # old items kept in it


@dataclasses.dataclass
class RestoreResult:
    store: str
    backup: str
    command: str
    dryRun: bool
    steps: list  # {"action": "put-back" | "take-away", "target": ...}
    interrupted: dict | None = None
    newBackup: str | None = None


def list_backups(store: Store) -> list[Backup]:
    out = []
    for p in sorted(store.root.iterdir()):
        if p.is_dir() and p.name.startswith(BACKUP_PREFIX):
            manifest = _manifest(p, store.root, required=False)
            items = sum(1 for s in (manifest or {}).get("steps", []) if os.path.lexists(s["backup"]))
            out.append(
                Backup(p.name, str(p), manifest and manifest["command"], manifest and manifest["created"], items)
            )
    return out


def _manifest(path: Path, root: Path, required: bool = True) -> dict | None:
    try:
        manifest = json.loads((path / BACKUP_MANIFEST).read_text())
    except FileNotFoundError:
        if required:
            raise StoreError(
                f"no {BACKUP_MANIFEST}: not a backup this rmqctl can restore (an older one kept it without "
                "saying what each item replaced); move its items back by hand",
                path,
            ) from None
        return None
    except ValueError:
        raise StoreError(f"{BACKUP_MANIFEST} is not valid JSON", path) from None
    # its paths are absolute: a backup of a store copied or moved since names the old place
    return at_root(manifest, root, _written_in(manifest, path.name) or root)


def _written_in(manifest: dict, backup_name: str) -> Path | None:
    """The store root a manifest older than its "root" field was written under: the directory holding the
    backup directory, in the recorded path of a step of the store's own."""
    for step in manifest.get("steps", []):
        recorded = Path(step["backup"])
        home = next((a for a in recorded.parents if a.name == backup_name), None)
        if home is not None and Path(step["target"]).is_relative_to(home.parent):
            return home.parent
    return None


def restore(store: Store, backup: str, dry_run: bool = False, keep_backup: bool = True) -> RestoreResult:
    """Put back the items of `backup` (its name in the store root, or its path) under the broker's lock."""
    # a RocksDB queue is put back whole (its directory), as rebuild replaced it
    with writing(store, dry_run, "restore", understood=frozenset({"consumequeue"})) as (interrupted, store):
        path = Path(backup) if os.sep in backup else store.root / backup
        if (
            not path.is_dir()
            or not path.name.startswith(BACKUP_PREFIX)
            or path.resolve().parent != store.root.resolve()
        ):
            raise StoreError(f"not a backup directory of this store ({BACKUP_PREFIX}<time> in {store.root})", path)
        manifest = _manifest(path, store.root)
        inside = [*(Path(r) for r in store.allowed_roots()), *(d.resolve() for d in store.commitlog_dirs)]
        steps = []
        for step in manifest["steps"]:
            target, old = Path(step["target"]), Path(step["backup"])
            if not any(target.is_relative_to(d) for d in inside):
                raise StoreError(
                    f"{BACKUP_MANIFEST} names {target}, outside the store, its commitlog directories and "
                    "its top-level links: refused",
                    path,
                )
            if os.path.lexists(old):
                steps.append({"action": "put-back", "target": str(target), "from": str(old)})
            elif step["op"] == "replace" and step.get("existed") is False and os.path.lexists(target):
                steps.append({"action": "take-away", "target": str(target)})
        result = RestoreResult(str(store.root), path.name, manifest["command"], dry_run, steps, interrupted)
        if dry_run:
            return result
        if steps:
            txn = store_transaction(store, "restore", f"restore {path.name}", keep_backup)
            try:
                for s in steps:
                    if s["action"] == "put-back":
                        txn.replace(Path(s["target"]), Path(s["from"]))
                    else:
                        txn.remove(Path(s["target"]))
                result.newBackup = txn.commit().get("backup")
            finally:
                txn.discard()
        beside = [d.parent / path.name for d in elsewhere(store) if (d.parent / path.name).is_dir()]
        if not any(p.is_file() and p.name != BACKUP_MANIFEST for b in (path, *beside) for p in b.rglob("*")):
            for b in dict.fromkeys(beside):  # its emptied part beside a directory on another filesystem
                shutil.rmtree(b)
                fsync_dir(b.parent)
            # used up (now, or by a run killed before this): renamed first, so a kill while deleting leaves a
            # leftover the next writing command's recovery deletes, never a backup without its manifest
            done = Path(tempfile.mkdtemp(prefix=".rmqctl-restore-", dir=store.root))
            os.rename(path, done / path.name)
            fsync_dir(store.root)
            shutil.rmtree(done)
            fsync_dir(store.root)
    return result
