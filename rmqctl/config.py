"""Broker configuration: the broker.conf keys rmqctl uses, with RocketMQ's defaults (MessageStoreConfig)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from .errors import UsageError
from .javacompat import java_properties, parse_long

DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
TIME_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclasses.dataclass
class BrokerConfig:
    storePathRootDir: str | None = None
    storePathCommitLog: str | None = None
    mappedFileSizeCommitLog: int | None = None  # None: infer from the files, else 1 GiB
    mappedFileSizeConsumeQueue: int | None = None  # None: infer, else 300000 * 20
    # ConsumeQueueExt (consumequeue_ext/): whether the broker reads it (None: not said; the store's files decide) and
    # its files' size (None: infer from the files, else 48 MiB)
    enableConsumeQueueExt: bool | None = None
    mappedFileSizeConsumeQueueExt: int | None = None
    mapperFileSizeBatchConsumeQueue: int | None = None  # (the broker's spelling) None: infer, else 300000 * 46
    compactionMappedFileSize: int = 100 * 1024 * 1024  # compaction topics' log files (rmqctl.compaction.file_sizes)
    compactionCqMappedFileSize: int = 10 * 1024 * 1024
    maxHashSlotNum: int | None = None  # None: infer from the index files, else 5,000,000
    maxIndexNum: int | None = None  # None: infer, else 20,000,000
    deleteWhen: str = "04"
    fileReservedTime: int = 72
    diskMaxUsedSpaceRatio: int = 75
    diskSpaceCleanForciblyRatio: int = 85
    diskSpaceWarningLevelRatio: int = 90
    cleanFileForciblyEnable: bool = True
    deleteFileBatchMax: int = 10
    deleteCommitLogFilesInterval: int = 100  # ms the commitlog cleaner sleeps after each deletion
    enabledAppendPropCRC: bool = False
    forceVerifyPropCRC: bool = False
    autoMessageVersionOnTopicLen: bool = True
    messageDelayLevel: str = DEFAULT_DELAY_LEVELS
    maxMessageSize: int = 4 * 1024 * 1024
    brokerIP1: str | None = None
    listenPort: int = 10911
    enableLmq: bool = False
    enableMultiDispatch: bool = False
    messageIndexEnable: bool = True
    messageIndexSafe: bool = False
    checkCRCOnRecover: bool = True
    # 5.x recovery also fails a record without a two-part DUP_INFO property (checkDupInfo)
    duplicationEnable: bool = False
    # 5.5.0+: abnormal recovery also stops at a record whose PHYSICALOFFSET is not its position, only when
    # this is true (apache/rocketmq#10017, #10038; off unless broker.conf says so)
    checkCommitLogOffsetOnRecover: bool = False
    maxMsgsNumBatch: int = 64
    mappedFileSizeTimerLog: int | None = None  # None: infer from the timerlog files, else 100 MiB
    timerPrecisionMs: int = 1000  # read through the setter's rounding (rmqctl.timerstore.precision_ms)
    # 5.x's send hook for a timer message (HookUtils.handleScheduleMessage): append's rewrite of TIMER_* properties
    timerWheelEnable: bool = True
    timerMaxDelaySec: int = 3600 * 24 * 3
    timerCongestNumEachSlot: int = 2**31 - 1
    # DLedger mode: the commitlog is DLedger's entry store in {root}/dledger-{dLegerSelfId}/data
    enableDLegerCommitLog: bool = False
    dLegerSelfId: str | None = None
    storePathDLedgerCommitLog: str | None = None
    # Which broker reads the store (4, 5 or 5.5, as --rocketmq-version): decides the rules that differ by
    # version (rmqctl.brokerversion). None: what the store's files tell.
    rocketmqVersion: str | None = None
    # Where the consume queues live: "default" (files), "defaultRocksDB" (a RocksDB database in consumequeue/).
    # None: not said; the store's files decide (rmqctl.parts).
    storeType: str | None = None
    # storeType=defaultRocksDB keeps topics, subscription groups and consumer offsets in RocksDB (5.2+): one
    # database config/metadata when true, one per kind when false. None: not said; the store's files decide.
    useSingleRocksDBForAllConfigs: bool | None = None
    # 5.3+ BrokerConfig: "v2" keeps topics, subscription groups and consumer offsets in config/rdb (ConfigStorage)
    configManagerVersion: str = "v1"
    rocksdbCQDoubleWriteEnable: bool = False  # develop's CombineConsumeQueueStore: files and RocksDB both written
    rocksdbCompressionType: str = "lz4"  # the RocksDB queue's compression (RocksDB library names), ZSTD at the bottom
    bottomMostCompressionTypeForConsumeQueueStore: str = "zstd"
    # 5.4's RocksDB message store (rmqctl.rocksdbstore). None: not said; the store's rocksdbstore/ decides.
    # With indexFileWriteEnable=false no index/ file is written.
    indexRocksDBEnable: bool | None = None
    timerRocksDBEnable: bool | None = None
    transRocksDBEnable: bool | None = None
    indexFileWriteEnable: bool = True
    # 5.x BatchConsumeQueue: find a queue offset's or a time's file through its caches (true), else file by file
    searchBcqByCacheEnable: bool = True
    source: str | None = None  # the broker.conf this came from
    # what the broker reads differently from what broker.conf seems to say (a number it cannot parse, ...)
    notes: list[str] = dataclasses.field(default_factory=list)
    # String values with blanks around them, as broker.conf has them: 4.9.7 reads them so (5.x trims them)
    untrimmed: dict[str, str] = dataclasses.field(default_factory=dict)

    def delay_level_table(self) -> dict[int, int]:
        """ScheduleMessageService.parseDelayLevel: level (1-based) -> delay in ms."""
        table = {}
        for level, tok in enumerate(self.messageDelayLevel.split(" "), start=1):
            unit = TIME_UNITS_MS.get(tok[-1:])
            if unit is None or not tok[:-1].isdigit():
                raise UsageError(f"messageDelayLevel: cannot parse {tok!r}")
            table[level] = int(tok[:-1]) * unit
        return table

    @property
    def store_host(self) -> str | None:
        return f"{self.brokerIP1}:{self.listenPort}" if self.brokerIP1 else None


_FIELDS = {f.name: f for f in dataclasses.fields(BrokerConfig)}
# MessageStoreConfig's defaults where rmqctl keeps None (not said: the files decide): what the broker takes
# when broker.conf holds a value it cannot parse
JAVA_DEFAULTS = {
    "mappedFileSizeCommitLog": 1024 * 1024 * 1024,
    "mappedFileSizeConsumeQueue": 300_000 * 20,
    "mappedFileSizeConsumeQueueExt": 48 * 1024 * 1024,
    "mapperFileSizeBatchConsumeQueue": 300_000 * 46,
    "maxHashSlotNum": 5_000_000,
    "maxIndexNum": 20_000_000,
    "mappedFileSizeTimerLog": 100 * 1024 * 1024,
}
LONG_FIELDS = frozenset({"timerPrecisionMs"})  # a long in MessageStoreConfig; every other number is an int
RMQCTL_KEYS = frozenset({"rocketmqVersion"})  # rmqctl's own keys, not the broker's


def _coerce(name: str, raw: str, notes: list[str]):
    """MixAll.properties2Object's reading of one broker.conf value: Boolean.parseBoolean, Integer.parseInt
    (Long.parseLong for a long) on the value as it stands, a failure keeping the default without a word (said
    here in `notes`); a String trimmed, as 5.x does (4.9.7 keeps its blanks: said in `notes`)."""
    kind = _FIELDS[name].type
    if "bool" in kind:
        if raw.lower() != "true" and raw.strip().lower() == "true":
            notes.append(f"{name}={raw!r} is false to the broker (Boolean.parseBoolean: blanks included)")
        return raw.lower() == "true"
    if "int" in kind:
        value = parse_long(raw, 64 if name in LONG_FIELDS else 32)
        if value is None:
            value = JAVA_DEFAULTS.get(name, _FIELDS[name].default)
            notes.append(f"{name}={raw!r} is not a number to the broker, which keeps its default {value}")
        return value
    if raw != raw.strip() and name not in RMQCTL_KEYS:
        notes.append(f"{name}={raw!r}: 5.x trims the blanks around it, 4.9.7 keeps them")
    return raw.strip()


def split_paths(value: str) -> list[Path]:
    """A comma-separated store path setting (MessageStoreConfig.MULTI_PATH_SPLITTER), as paths."""
    return [Path(p.strip()).expanduser() for p in value.split(",") if p.strip()]


def read_properties(path: Path) -> dict[str, str]:
    """A properties file as the broker's Properties.load reads it (javacompat.java_properties)."""
    try:
        return java_properties(path.read_bytes())
    except OSError as e:
        raise UsageError(f"{path}: cannot read broker config: {e.strerror}") from None
    except ValueError as e:  # Properties.load throws: the broker does not start
        raise UsageError(f"{path}: {e} (the broker's Properties.load throws on it)") from None


def load_config(path: str | os.PathLike | None = None, **overrides) -> BrokerConfig:
    cfg = BrokerConfig()
    if path is not None:
        props = read_properties(Path(path))
        for k, v in props.items():
            if k in _FIELDS and k not in ("source", "notes", "untrimmed"):
                setattr(cfg, k, _coerce(k, v, cfg.notes))
                if "str" in _FIELDS[k].type and v != v.strip() and k not in RMQCTL_KEYS:
                    cfg.untrimmed[k] = v
        cfg.source = str(path)
    for k, v in overrides.items():
        if v is not None:
            setattr(cfg, k, v)
    return cfg
