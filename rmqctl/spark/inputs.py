"""Which stores a Spark job reads, resolved once on the driver: each path (a store root or a commitlog
directory) becomes a root plus the BrokerConfig its executors use, with the geometry already settled so every
executor reads the files the same way the CLI does. Needs neither pyspark nor pyarrow, so the CLI can
check its input before it starts a JVM."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ..config import BrokerConfig, load_config
from ..errors import StoreError, UsageError
from ..store import FILE_NAME, Store

# Data source options that override the broker config (the same keys as broker.conf).
GEOMETRY_KEYS = ("mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "maxHashSlotNum", "maxIndexNum")


@dataclasses.dataclass(frozen=True)
class StoreInput:
    root: str  # absolute path of the store root: the `store` column
    config: BrokerConfig

    def store(self) -> Store:
        return Store(self.root, self.config)


@dataclasses.dataclass
class StoreSelection:
    """The stores a job reads, as the command line or a notebook names them, and how to say that to the data
    sources: absolute paths, since executors do not share the driver's working directory."""

    paths: list[str]
    broker_configs: list[str] = dataclasses.field(default_factory=list)
    overrides: dict[str, int | None] = dataclasses.field(default_factory=dict)

    def resolve(self) -> list[StoreInput]:
        return resolve_inputs(self.paths, self.broker_configs, self.overrides)

    def load_paths(self) -> list[str]:
        return [str(Path(p).expanduser().resolve()) for p in self.paths]

    def options(self) -> dict[str, str]:
        opts = {k: str(v) for k, v in self.overrides.items() if v is not None}
        if self.broker_configs:
            opts["brokerConfig"] = json.dumps([str(Path(c).expanduser().resolve()) for c in self.broker_configs])
        return opts


def resolve_inputs(
    paths: list[str], broker_configs: list[str] | None = None, overrides: dict[str, int | None] | None = None
) -> list[StoreInput]:
    """One StoreInput per path. `broker_configs` holds one file for every store, or one per path (paired in
    order). A commitlog directory is read as the commitlog of its parent (storePathCommitLog)."""
    if not paths:
        raise UsageError("no store given: name at least one store root or commitlog directory")
    configs = list(broker_configs or [])
    if len(configs) > 1 and len(configs) != len(paths):
        raise UsageError(f"{len(configs)} broker configs for {len(paths)} stores: give one for all, or one per store")
    out = []
    for i, raw in enumerate(paths):
        conf_path = configs[i] if len(configs) > 1 else (configs[0] if configs else None)
        config = load_config(conf_path, **(overrides or {}))
        path = Path(raw).expanduser().resolve()
        if not path.is_dir():
            raise StoreError("store directory does not exist", path)
        if not (path / "commitlog").is_dir() and _holds_commitlog_files(path):
            config = dataclasses.replace(config, storePathCommitLog=str(path))
            path = path.parent
        out.append(StoreInput(str(path), config))
    return out


def _holds_commitlog_files(path: Path) -> bool:
    return any(FILE_NAME.match(p.name) for p in path.iterdir() if p.is_file())


def settle_commitlog_geometry(inp: StoreInput) -> tuple[StoreInput, Store]:
    """The store with its commitlog file size fixed (configured, else inferred and checked on the driver), so
    executors neither infer it again nor could infer it differently."""
    store = inp.store()
    size = store.commitlog.file_size
    settled = StoreInput(inp.root, dataclasses.replace(inp.config, mappedFileSizeCommitLog=size))
    return settled, store


def option_list(options, single: str, plural: str) -> list[str]:
    """Spark passes load(path) as option `path` and load([p, q]) as option `paths` (a JSON array)."""
    if options.get(plural):
        return list(json.loads(options[plural]))
    if options.get(single):
        return [options[single]]
    return []


def option_bool(options, key: str, default: bool = False) -> bool:
    value = str(options.get(key, str(default))).strip().lower()
    if value not in ("true", "false"):
        raise UsageError(f"option {key}: expected true or false, got {options.get(key)!r}")
    return value == "true"


def inputs_from_options(options) -> list[StoreInput]:
    """The data source options: path(s), brokerConfig (one path, or a JSON array of one per path) and
    geometry overrides under their broker.conf names."""
    configs_text = options.get("brokerConfig")
    configs: list[str] = []
    if configs_text:
        configs = json.loads(configs_text) if configs_text.lstrip().startswith("[") else [configs_text]
    overrides = {}
    for key in GEOMETRY_KEYS:
        if options.get(key) is not None:
            try:
                overrides[key] = int(options[key])
            except ValueError:
                raise UsageError(f"option {key}: {options[key]!r} is not an integer") from None
    return resolve_inputs(option_list(options, "path", "paths"), configs, overrides)
