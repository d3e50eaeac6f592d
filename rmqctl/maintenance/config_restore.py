"""The restore of damaged config/*.json files from their `.bak` (`rmqctl config restore`), as one transaction."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

from ..configfiles import present_configs
from ..errors import StoreError, UsageError
from ..parts import ROCKS_QUEUE_PARTS
from ..rocksdbconfig import kept_in_rocksdb
from ..store import Store
from ..checks.config import described
from ..txn import locked_for_writing
from .staging import store_transaction


# config restore is the writer a config database keeps off (parts.CONFIG_WRITERS); it understands them: it writes
# JSON files only, and refuses (below) each one whose table the broker keeps in a RocksDB config database. It never
# writes a queue, so a RocksDB consume queue does not keep it off either
CONFIG_DATABASES_UNTOUCHED = frozenset({"rocksdb-config"}) | ROCKS_QUEUE_PARTS


@dataclasses.dataclass
class RestorePlan:
    name: str
    action: str  # restore | keep | impossible
    reason: str
    path: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def plan_restore(store: Store, names: list[str] | None = None) -> list[RestorePlan]:
    """For each damaged config file with a sound .bak: put the .bak's content in its place."""
    configs = {c.name: c for c in present_configs(store.root)}
    if names:
        unknown = [n for n in names if n not in configs]
        if unknown:
            raise UsageError(f"no such config file in {store.root / 'config'}: {', '.join(unknown)}")
    for name in names or sorted(configs):
        if kept_in_rocksdb(store, name) and not configs[name].main.sound:
            raise StoreError(
                f"the broker keeps {name}'s table in RocksDB and merges this file only when its "
                "DataVersion is newer: config restore writes nothing",
                configs[name].main.path,
            )
    store.parts.refuse_writer("config restore", CONFIG_DATABASES_UNTOUCHED)
    out = []
    for name in names or sorted(configs):
        c = configs[name]
        if c.main.sound:
            out.append(RestorePlan(name, "keep", "sound", str(c.main.path)))
        elif c.bak.sound:
            out.append(RestorePlan(name, "restore", f"{described(c)}; {c.bak.path.name} is sound", str(c.main.path)))
        else:
            why = c.bak.error if c.bak.exists else "no .bak"
            out.append(RestorePlan(name, "impossible", f"{described(c)}; .bak: {why or 'empty'}", str(c.main.path)))
    return out


def restore_configs(store: Store, plan: list[RestorePlan], keep_backup: bool = True) -> dict | None:
    """Apply a plan's restores as one transaction (staged copy of each .bak, intent file, swap; the damaged
    files go to the backup directory), under the broker's lock, after finishing an interrupted run."""
    todo = [p for p in plan if p.action == "restore"]
    if not todo:
        return None
    store.parts.refuse_writer("config restore", CONFIG_DATABASES_UNTOUCHED)
    with locked_for_writing(store.root), store_transaction(store, "config", "config restore", keep_backup) as txn:
        for p in todo:
            target = Path(p.path)
            staged = txn.area(target.parent) / target.name
            shutil.copyfile(target.with_name(target.name + ".bak"), staged)
            os.chmod(staged, os.stat(target).st_mode & 0o777 if target.exists() else 0o644)
            txn.replace(target, staged)
        return txn.commit()
