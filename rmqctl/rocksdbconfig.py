"""Topics, subscription groups and consumer offsets as a broker with storeType=defaultRocksDB keeps them
(5.2+): in RocksDB, read the way the broker's load() reads them, into the same documents the JSON files hold,
so every reader of config/*.json reads these through `broker_config` without a second parser of the values.

Two layouts. One database per kind (config/consumerOffsets, config/topics, config/subscriptionGroups): entries
in the default column family, the DataVersion (JSON) under key `kvDataVersionKey` in `kvDataVersion`, and
`forbidden`. Or, with useSingleRocksDBForAllConfigs, one database config/metadata with a column family per kind
and one for its DataVersion. Keys are the table's keys (`topic@group`, topic, group name) in UTF-8; values are
the JSON of one table entry (fastjson: integer map keys may be unquoted, large numbers written as strings).

load() per kind: the entries of its database; then the JSON file, when present and its DataVersion counter is
greater (offsets: the JSON table replaces the loaded one; topics and groups: its entries are put over them);
then, in the single layout, the separate database beside it, when its counter is greater still (its entries are
put over them: the broker migrates it and leaves it in place).

Sources (apache/rocketmq): broker/.../config/v1/RocksDB{ConsumerOffset,TopicConfig,SubscriptionGroup}Manager.java,
RocksDBConfigManager.java, common/.../config/ConfigRocksDBStorage.java (5.3.3 and develop), BrokerController
(isEnableRocksDBStore picks these managers); the single layout's topic families from RocksDBTopicConfigManager
at 04ed937d. A database with any other family is not read.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .configfiles import ConfigFile, ConfigText, bean_field, config_dir, parse_fastjson, read_config, topic_names
from .errors import ConfigNotRead, StoreError
from .parts import ROCKSDB_STORE
from .rocksdb import ReadOnlyDB

METADATA = "metadata"
VERSION_KEY = b"kvDataVersionKey"
SEPARATE_DATA, SEPARATE_VERSION, FORBIDDEN = "default", "kvDataVersion", "forbidden"


@dataclasses.dataclass(frozen=True)
class Kind:
    """One config the RocksDB managers keep: the JSON file it stands for and where each layout keeps it."""

    file: str  # the JSON config file of the same table
    separate: str  # its own database under config/
    data_cf: str  # its column families in config/metadata
    version_cf: str
    table: str  # the table's key in the JSON document
    replaces: bool  # a newer JSON file replaces the table (offsets) rather than being put over it

    @property
    def keeps_forbidden(self) -> bool:
        return self.file == "subscriptionGroup.json"


KINDS = {
    k.file: k
    for k in (
        Kind("consumerOffset.json", "consumerOffsets", "consumerOffset", "consumerOffsetVersion", "offsetTable", True),
        Kind("topics.json", "topics", "topic", "topicVersion", "topicConfigTable", False),
        Kind(
            "subscriptionGroup.json",
            "subscriptionGroups",
            "subscriptionGroup",
            "subscriptionGroupVersion",
            "subscriptionGroupTable",
            False,
        ),
    )
}
# every family either layout may hold; ConfigRocksDBStorage creates them as it first writes to them (develop)
SEPARATE_FAMILIES = (SEPARATE_VERSION, FORBIDDEN)
METADATA_FAMILIES = (FORBIDDEN, *(cf for k in KINDS.values() for cf in (k.data_cf, k.version_cf)))


@dataclasses.dataclass
class Table:
    """One kind as one database holds it."""

    path: Path
    counter: int  # its DataVersion counter (0 when it has none, as the broker's new DataVersion)
    entries: dict
    forbidden: dict


def _decoded(raw: bytes, where: str, path: Path):
    try:
        return parse_fastjson(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise StoreError(f"{where} is not JSON ({e}): the broker's load of this database fails", path) from None


def counter_of(version, where: str, path: Path) -> int:
    """DataVersion.counter (an AtomicLong: a number, or a string where fastjson wrote it as one)."""
    value = bean_field(version, "counter", 0) if isinstance(version, dict) else None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise StoreError(f"{where} holds no DataVersion counter: {version!r}", path) from None


def _offsets_of(wrapper, where: str, path: Path) -> dict:
    """RocksDBOffsetSerializeWrapper's queue table (an empty one where the value names none)."""
    table = bean_field(wrapper, "offsetTable", {}) if isinstance(wrapper, dict) else None
    if not isinstance(table, dict):
        raise StoreError(
            f"{where} is not an offset table ({wrapper!r}): the broker's load of this database fails", path
        )
    return table


def read_table(directory: Path, kind: Kind, single: bool) -> Table:
    """The entries and DataVersion of `kind` in one database (config/metadata when `single`)."""
    data_cf, version_cf = (kind.data_cf, kind.version_cf) if single else (SEPARATE_DATA, SEPARATE_VERSION)
    with ReadOnlyDB(directory, (), METADATA_FAMILIES if single else SEPARATE_FAMILIES) as db:
        raw = db.get(version_cf, VERSION_KEY) if version_cf in db.families else None
        where = f"column family {version_cf} key {VERSION_KEY.decode()}"
        counter = counter_of(_decoded(raw, where, directory), where, directory) if raw else 0
        tables = {}
        for cf in (data_cf, FORBIDDEN) if kind.keeps_forbidden else (data_cf,):
            tables[cf] = {}
            for key, value in db.items(cf) if cf in db.families else ():
                try:
                    name = key.decode("utf-8")
                except UnicodeDecodeError:
                    raise StoreError(f"column family {cf}: key {key.hex()} is not UTF-8 text", directory) from None
                where = f"column family {cf} key {name!r}"
                entry = _decoded(value, where, directory)
                tables[cf][name] = _offsets_of(entry, where, directory) if kind.replaces and cf == data_cf else entry
    return Table(directory, counter, tables[data_cf], tables.get(FORBIDDEN, {}))


@dataclasses.dataclass
class Loaded:
    """What the broker's load() makes of one kind, and from where, in order of application."""

    kind: Kind
    path: Path  # the database the broker keeps it in now
    counter: int
    table: dict
    forbidden: dict
    sources: list[str]

    def document(self) -> dict:
        """The JSON config file's document of the same table."""
        doc = {self.kind.table: self.table, "dataVersion": {"counter": self.counter}}
        if self.kind.keeps_forbidden:
            doc["forbiddenTable"] = self.forbidden
        return doc

    def config_file(self) -> ConfigFile:
        return ConfigFile(
            self.kind.file,
            ConfigText(self.path, True, 0, self.document()),
            ConfigText(self.path.with_name(self.path.name + ".bak"), False, 0),
        )


def single_database(root: Path, config) -> bool:
    """useSingleRocksDBForAllConfigs, or when not given, whether config/metadata is there."""
    if config.useSingleRocksDBForAllConfigs is not None:
        return config.useSingleRocksDBForAllConfigs
    return (config_dir(root) / METADATA).is_dir()


def load(root: Path, config, kind: Kind) -> Loaded:
    """The broker's load() of `kind`: its database, the JSON file when newer, the separate database when newer."""
    single = single_database(root, config)
    home = config_dir(root) / (METADATA if single else kind.separate)
    start = read_table(home, kind, single) if home.is_dir() else Table(home, 0, {}, {})
    out = Loaded(
        kind,
        home,
        start.counter,
        dict(start.entries),
        dict(start.forbidden),
        [f"{home} (DataVersion {start.counter})" if home.is_dir() else f"{home}: absent (empty)"],
    )
    _merge_json(root, out)
    separate = config_dir(root) / kind.separate
    if single and separate.is_dir():
        older = read_table(separate, kind, False)
        if older.counter > out.counter:
            out.table.update(older.entries)
            out.forbidden.update(older.forbidden)
            out.counter = older.counter + 2  # assignNewOne, nextVersion, then updateDataVersion's own
            out.sources.append(f"{separate} (DataVersion {older.counter}, newer: migrated over it)")
        else:
            out.sources.append(f"{separate} (DataVersion {older.counter}, not newer: already migrated, ignored)")
    return out


def _merge_json(root: Path, out: Loaded):
    """The managers' merge(): when the JSON file or its .bak is there, the file's DataVersion (ConfigManager's
    loadDataVersion reads the file itself; absent or empty: counter 0), and when that is greater, the table
    as ConfigManager.load reads it; the database's DataVersion then becomes the file's, plus one."""
    c = read_config(root, out.kind.file)
    if not (c.main.exists or c.bak.exists):
        return
    if c.main.size and not c.main.sound:
        raise StoreError(
            f"{c.main.error}: the broker keeping {out.kind.file}'s table in RocksDB reads this file's "
            "DataVersion at start, fails, and does not start",
            c.main.path,
        )
    doc = c.main.document if isinstance(c.main.document, dict) else {}
    counter = counter_of(bean_field(doc, "dataVersion") or {}, f"{out.kind.file}'s dataVersion", c.main.path)
    if counter <= out.counter:
        out.sources.append(f"{c.main.path} (DataVersion {counter}, not newer: not merged)")
        return
    table = bean_field(doc, out.kind.table) or {}
    if not isinstance(table, dict):
        raise StoreError(f"{out.kind.table} is not an object", c.main.path)
    out.table = dict(table) if out.kind.replaces else {**out.table, **table}
    if out.kind.keeps_forbidden and isinstance(forbidden := bean_field(doc, "forbiddenTable"), dict):
        out.forbidden.update(forbidden)
    out.counter = counter + 1
    out.sources.append(f"{c.main.path} (DataVersion {counter}, newer: merged over it)")


def kept_in_rocksdb(store, name: str) -> bool:
    """The broker of this store keeps config file `name`'s table in RocksDB."""
    # MessageStoreConfig.isEnableRocksDBStore picks the RocksDB managers: storeType, configured or as the files show
    return name in KINDS and store.parts.queue_store == ROCKSDB_STORE


OFFSET_FILES = ("consumerOffset.json", "lmqConsumerOffset.json")


def consumer_offsets_file(store) -> str:
    """The consumer-offset config the broker loads (BrokerController): its RocksDB table where the store keeps it
    there (RocksDBConsumerOffsetManager), else lmqConsumerOffset.json with enableLmq (LmqConsumerOffsetManager),
    else consumerOffset.json."""
    lmq = store.config.enableLmq and not kept_in_rocksdb(store, OFFSET_FILES[0])
    return OFFSET_FILES[1] if lmq else OFFSET_FILES[0]


CONFIG_STORAGE = "rdb"  # configManagerVersion=v2's database under config/ (5.3.3 broker/.../config/v2/ConfigStorage)


def broker_config(store, name: str) -> ConfigFile:
    """Config `name` as the store's broker loads it: from RocksDB where it keeps it there, else the JSON file.
    ConfigNotRead where configManagerVersion=v2 keeps it in config/rdb (BrokerController: the V2 managers read only
    that), which this version does not read."""
    if name in KINDS and store.config.configManagerVersion == "v2":
        raise ConfigNotRead(
            f"configManagerVersion=v2: the broker keeps {KINDS[name].table} here (ConfigStorage), not in "
            f"{name}; this version does not read it",
            config_dir(store.root) / CONFIG_STORAGE,
        )
    if kept_in_rocksdb(store, name):
        return load(store.root, store.config, KINDS[name]).config_file()
    return read_config(store.root, name)


def configured_topics(store) -> frozenset[str] | None:
    """The topics the broker has (topics.json's topicConfigTable, or its RocksDB table); None where the store
    keeps none or it cannot be read: then no topic counts as deleted (rules.deleted_topic)."""
    try:
        names = topic_names(broker_config(store, "topics.json").document)
    except StoreError:
        return None
    return frozenset(names) if names is not None else None


def describe(store) -> list[dict]:
    """For `info`: where each kind is kept and what load() read, or why it cannot be read."""
    if not any(kept_in_rocksdb(store, name) for name in KINDS):
        return []
    out = []
    for kind in KINDS.values():
        try:
            loaded = load(store.root, store.config, kind)
        except StoreError as e:
            out.append({"config": kind.file, "read": False, "why": str(e)})
            continue
        out.append(
            {
                "config": kind.file,
                "database": str(loaded.path),
                "dataVersion": loaded.counter,
                "entries": len(loaded.table),
                "sources": loaded.sources,
                "read": True,
            }
        )
    return out
