"""Broker configuration: the broker.conf keys rmqctl uses, with RocketMQ's defaults (MessageStoreConfig)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from .errors import UsageError

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
    rocksdbCQDoubleWriteEnable: bool = False  # develop's CombineConsumeQueueStore: files and RocksDB both written
    rocksdbCompressionType: str = "lz4"  # the RocksDB queue's compression (RocksDB library names), ZSTD at the bottom
    bottomMostCompressionTypeForConsumeQueueStore: str = "zstd"
    # 5.4's RocksDB message store (rmqctl.rocksdbstore). None: not said; the store's rocksdbstore/ decides.
    # With indexFileWriteEnable=false no index/ file is written.
    indexRocksDBEnable: bool | None = None
    timerRocksDBEnable: bool | None = None
    transRocksDBEnable: bool | None = None
    indexFileWriteEnable: bool = True
    source: str | None = None  # the broker.conf this came from

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


def _coerce(name: str, raw: str):
    kind = _FIELDS[name].type
    raw = raw.strip()
    if "bool" in kind:
        return raw.lower() == "true"  # Boolean.parseBoolean
    if "int" in kind:
        try:
            return int(raw)
        except ValueError:
            raise UsageError(f"broker config: {name}={raw!r} is not an integer") from None
    return raw


def split_paths(value: str) -> list[Path]:
    """A comma-separated store path setting (MessageStoreConfig.MULTI_PATH_SPLITTER), as paths."""
    return [Path(p.strip()).expanduser() for p in value.split(",") if p.strip()]


def read_properties(path: Path) -> dict[str, str]:
    """java.util.Properties-style key=value lines with # and ! comments (no line continuations needed
    for the keys rmqctl reads)."""
    out = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"{path}: cannot read broker config: {e.strerror}") from None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        for sep in ("=", ":"):
            if sep in line:
                k, v = line.split(sep, 1)
                out[k.strip()] = v.strip()
                break
    return out


def load_config(path: str | os.PathLike | None = None, **overrides) -> BrokerConfig:
    cfg = BrokerConfig()
    if path is not None:
        props = read_properties(Path(path))
        for k, v in props.items():
            if k in _FIELDS and k != "source":
                setattr(cfg, k, _coerce(k, v))
        cfg.source = str(path)
    for k, v in overrides.items():
        if v is not None:
            setattr(cfg, k, v)
    return cfg
