"""Checks of the broker's config/*.json files (their restore from `.bak` is maintenance/config_restore.py).

A crash or a full disk leaves these files empty, cut or not JSON at all (4.9 writes `.tmp`, copies the old
file to `.bak`, deletes, renames, and never fsyncs). `ConfigManager.load` then takes the `.bak`, which holds
the previous persist: consumer offsets silently move back. When the `.bak` does not decode either, `load()`
fails and the broker does not start.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..configfiles import AmbiguousProperty, ConfigFile, committed_offsets, present_configs, spelt_twice, topic_names
from ..errors import ConfigNotRead, StoreError
from ..rocksdbconfig import KINDS, broker_config, kept_in_rocksdb
from ..store import Store, queue_keys


@dataclasses.dataclass
class ConfigProblem:
    kind: str
    severity: str
    path: Path
    detail: str


def described(c: ConfigFile) -> str:
    return c.main.error or ("empty" if c.main.exists else "missing")


def config_problems(store: Store) -> list[ConfigProblem]:
    """What `ConfigManager.load` makes of each config file, and offsets that name nothing the store holds."""
    out = []
    for c in present_configs(store.root):
        if kept_in_rocksdb(store, c.name):
            continue  # the broker's RocksDB manager reads it: checked with the database, below
        if c.load_fails:
            out.append(
                ConfigProblem(
                    "config-load-fails",
                    "error",
                    c.main.path,
                    f"{described(c)}, and its .bak {c.bak.error}: ConfigManager.load returns false and "
                    "the broker does not start",
                )
            )
        elif c.main.exists and not c.main.sound and c.bak.sound:
            out.append(
                ConfigProblem(
                    "config-damaged",
                    "error",
                    c.main.path,
                    f"{described(c)}: the broker loads {c.bak.path.name} instead, the previous persist "
                    f"(older values); `rmqctl config restore {c.name}` puts it back in place",
                )
            )
        elif c.main.exists and not c.main.sound and not c.bak.exists:
            out.append(
                ConfigProblem(
                    "config-damaged",
                    "error",
                    c.main.path,
                    f"{described(c)} and no .bak: the broker starts with this table empty",
                )
            )
        elif c.main.sound and c.bak.exists and c.bak.size and not c.bak.sound:
            out.append(
                ConfigProblem(
                    "config-bak-damaged",
                    "warning",
                    c.bak.path,
                    f"{c.bak.error}: harmless while {c.name} is sound, but nothing to fall back to",
                )
            )
        elif c.main.sound and c.bak.sound and c.main.document != c.bak.document:
            out.append(ConfigProblem("config-bak-differs", "info", c.bak.path, _difference(c)))
        if (mixed := spelt_twice(c.document)) is not None:
            where = c.main.path if c.loaded_from == "main" else c.bak.path
            out.append(ConfigProblem("config-ambiguous-name", "error", where, mixed.detail))
    loaded = {}
    for name in KINDS:
        try:
            loaded[name] = broker_config(store, name)
        except ConfigNotRead:  # (named among the parts not read)
            continue
        except StoreError as e:  # a database or file the broker's load() fails on
            out.append(ConfigProblem("config-load-fails", "error", Path(e.path), e.detail))
    if "consumerOffset.json" in loaded and "topics.json" in loaded:
        out += _offset_problems(store, loaded["consumerOffset.json"], loaded["topics.json"])
    return out


def _difference(c: ConfigFile) -> str:
    a, b = c.main.document, c.bak.document
    if isinstance(a, dict) and isinstance(b, dict):
        changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        return f".bak is the previous persist; it differs in {', '.join(changed)}"
    return ".bak is the previous persist and differs"


def _offset_problems(store: Store, cfg: ConfigFile, topics: ConfigFile) -> list[ConfigProblem]:
    if cfg.document is None:
        return []
    try:
        entries, notes = committed_offsets(cfg.document, lmq=cfg.name == "lmqConsumerOffset.json")
    except AmbiguousProperty:  # (config_problems named it)
        return []
    path = cfg.main.path if cfg.loaded_from == "main" else cfg.bak.path
    out = [
        ConfigProblem(
            "config-offset-entry",
            "warning",
            path,
            n + ": the broker keeps it, but no consumer's offset is read from it",
        )
        for n in notes
    ]
    if not store.parts.queues_read:
        return out  # which topics have queues is not known: no topic is reported as having none
    try:
        known = topic_names(topics.document)
    except AmbiguousProperty:  # (named by config_problems: which topics the broker has is not known)
        known = None
    queues = {topic for topic, _ in queue_keys(store)}
    for topic in sorted({e.topic for e in entries}):
        if topic not in queues and (known is None or topic not in known):
            groups = sorted({e.group for e in entries if e.topic == topic})
            out.append(
                ConfigProblem(
                    "config-offset-unknown-topic",
                    "warning",
                    path,
                    f"offsets of {', '.join(groups)} for topic {topic!r}, which has no consumequeue"
                    + ("" if known is None else " and is not in topics.json"),
                )
            )
    return out
