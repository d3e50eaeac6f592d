"""Which RocketMQ owns a store, where the rules differ by version (recovery, cleanup, offset-by-time, the
property CRC, 5.5's recovery rule): what the operator says (--rocketmq-version, rocketmqVersion in the
config), else what the store's files tell, else an assumption the commands say on stderr.

The evidence names the oldest release that writes it; the newest evidence wins, since a 5.x broker that took
over a 4.9 store reads it with 5.x rules (its old records keep their old style).
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

from . import schema as S
from .config import BrokerConfig, read_properties
from .configfiles import AmbiguousProperty, bean_field, read_config
from .errors import StoreError, UsageError
from .javacompat import CRC32_PROPERTY, PROPERTY_SEPARATOR

CHOICES = ("4", "5", "5.5")  # what --rocketmq-version takes: 4.9 rules, 5.x rules, 5.5.0's
RELEASES = {"4": (4, 9), "5": (5, 0), "5.5": (5, 5)}
ASSUMED = (5, 0)  # nothing tells: the rules of the release line every current broker runs
SAMPLE_RECORDS = 32  # records read from the start of the newest commitlog files
SAMPLE_FILES = 3  # newest commitlog files tried for them (the last may be preallocated zeros)

# MessageStoreConfig keys that exist only in RocketMQ 5.x: a broker.conf naming one is a 5.x broker's.
FIVE_ONLY_CONFIG_KEYS = (
    "enabledAppendPropCRC",
    "forceVerifyPropCRC",
    "autoMessageVersionOnTopicLen",
    "timerWheelEnable",
    "timerPrecisionMs",
)
# store-root entries only a 5.x broker makes, with the release that first does
FIVE_ONLY_ENTRIES = (
    ("rocksdbstore", (5, 4)),
    ("RocksDBMessageStore", (5, 4)),
    ("config/metadata", (5, 4)),
    ("batchconsumequeue", (5, 0)),
    ("compaction", (5, 0)),
    ("timerlog", (5, 0)),
    ("timerwheel", (5, 0)),
    ("abort.bak", (5, 0)),
    ("config/timercheck", (5, 0)),
)
CHECKPOINT_5X = ((24, "masterFlushedOffset", (5, 0)), (32, "confirmPhyOffset", (5, 1)))


@dataclasses.dataclass(frozen=True)
class BrokerVersion:
    release: tuple[int, int]  # the oldest release the evidence allows, e.g. (4, 9), (5, 0), (5, 4)
    evidence: str  # what says so
    assumed: bool = False  # nothing said so: the commands that depend on it say so on stderr

    @property
    def major(self) -> int:
        return self.release[0]

    def at_least(self, major: int, minor: int = 0) -> bool:
        return self.release >= (major, minor)

    @property
    def label(self) -> str:
        """4.x (4.9's rules), 5.x, 5.5 (its recovery rule), or the oldest 5.x release the evidence names (5.4+)."""
        if self.release in ((4, 9), (5, 0)):
            return f"{self.major}.x"
        return "5.5" if self.release == RELEASES["5.5"] else f"{self.release[0]}.{self.release[1]}+"

    def to_dict(self) -> dict:
        return {"version": self.label, "evidence": self.evidence, "assumed": self.assumed}

    def note(self) -> str:
        """The one stderr line for an assumed version."""
        return (
            f"note: {self.evidence}; assuming RocketMQ {self.label} rules (say --rocketmq-version 4, 5 or 5.5 "
            f"if the store's broker is another)"
        )


def parse_release(value, where: str = "--rocketmq-version") -> tuple[int, int]:
    """4, 5 or 5.5 (text or number) as a release."""
    release = RELEASES.get(str(value).strip())
    if release is None:
        raise UsageError(f"{where} must be one of {', '.join(CHOICES)}, not {value!r}")
    return release


def record_style(m) -> tuple[bool, bool, int]:
    """What a record's bytes tell of its writer: (V2 magic, a property CRC, its properties' style: 0 none,
    5 ending in the separator, 4 not)."""
    props = bytes(m.propertiesBytes)
    style = 0 if not props else 5 if props.endswith(PROPERTY_SEPARATOR.encode()) else 4
    return m.magicCode == S.MAGIC_V2, CRC32_PROPERTY in m.properties, style


def infer(root: Path, config: BrokerConfig, records) -> BrokerVersion:
    """The operator's word, else the newest evidence in the store, else ASSUMED. `records(n)` yields the
    record_style of up to n records from the start of each of the newest commitlog files."""
    if config.rocketmqVersion is not None:
        where = "--rocketmq-version" if config.source is None else f"rocketmqVersion in {config.source}"
        return BrokerVersion(parse_release(config.rocketmqVersion, "rocketmqVersion"), f"{where} says so")
    found = [
        e
        for e in (
            store_entries_version(root),
            _from_checkpoint(root),
            _from_abort(root),
            _from_config(config),
            _from_config_files(root),
            _from_records(records),
        )
        if e is not None
    ]
    if not found:
        return BrokerVersion(ASSUMED, "nothing in the store tells which RocketMQ wrote it", assumed=True)
    release, evidence = max(found, key=lambda e: e[0])
    # (the first of equals: a config file's word on 4.x before the records', which 5.0-5.1 share)
    return BrokerVersion(release, evidence, assumed=evidence == RECORDS_4X_STYLE)


def store_entries_version(root: Path) -> tuple[tuple[int, int], str] | None:
    """The newest release an entry of the store root names (RocksDB parts, BatchCQ, compaction, timer)."""
    for name, release in FIVE_ONLY_ENTRIES:
        if (root / name).exists():
            return release, f"{name} in the store root"
    return None


def _from_checkpoint(root: Path) -> tuple[tuple[int, int], str] | None:
    """Fields 5.x added to the checkpoint: zero unless the broker used them (HA), so only a value tells."""
    try:
        with open(root / "checkpoint", "rb") as f:
            head = f.read(40)
    except OSError:
        return None
    for at, name, release in reversed(CHECKPOINT_5X):
        if len(head) >= at + 8 and S.INT64.unpack_from(head, at)[0] != 0:
            return release, f"the checkpoint's {name}"
    return None


def _from_abort(root: Path) -> tuple[tuple[int, int], str] | None:
    """5.0+ writes its PID into the abort file; 4.9 leaves it empty (which tells nothing)."""
    try:
        text = (root / "abort").read_bytes()[:32]
    except OSError:
        return None
    return ((5, 0), "the PID in the abort file") if text.strip().isdigit() else None


def _from_config(config: BrokerConfig) -> tuple[tuple[int, int], str] | None:
    keys = set(read_properties(Path(config.source))) if config.source else set()
    named = [k for k in FIVE_ONLY_CONFIG_KEYS if k in keys]
    return ((5, 0), f"the 5.x-only key {named[0]} in {config.source}") if named else None


def _from_config_files(root: Path) -> tuple[tuple[int, int], str] | None:
    """The broker's own config files: 5.0 added TopicConfig.attributes (written for every topic, {} when none)
    and DelayOffsetSerializeWrapper.dataVersion (ScheduleMessageService.encode sets it); 4.9.7 writes neither,
    so a file without them is a 4.x broker's (the newest evidence still wins: a 5.x broker rewrites them)."""
    said = None
    for name, field in (("topics.json", "attributes"), ("delayOffset.json", "dataVersion")):
        doc = read_config(root, name).document
        if name == "topics.json":
            try:
                table = bean_field(doc, "topicConfigTable")
            except AmbiguousProperty:  # (which table the broker takes is not known: no evidence from it)
                continue
            doc = next(iter(table.values()), None) if isinstance(table, dict) and table else None
        if not isinstance(doc, dict):
            continue  # absent, undecodable, or no topic to tell
        if field in doc:
            return (5, 0), f"{field} in config/{name} (5.0+)"
        said = said or ((4, 9), f"config/{name} without 5.0's {field}")
    return said


RECORDS_4X_STYLE = "the records' 4.x property style, which 5.0-5.1 also write"


def _from_records(records) -> tuple[tuple[int, int], str] | None:
    """V2 magic (5.1+), a property CRC (5.2+), properties ending in the separator (5.x); properties without it
    are 4.x's or 5.0-5.1's (taken as 4.x, and said to be assumed, only if nothing else shows)."""
    newest = None
    try:
        sample = list(itertools.islice(records(SAMPLE_RECORDS), SAMPLE_RECORDS * SAMPLE_FILES))
    except StoreError:
        return None  # files the model cannot map yet (verify reports them): the records tell nothing here
    for v2, crc, style in sample:
        if v2:
            found = (5, 1), "records with the V2 magic"
        elif crc:
            found = (5, 2), "records with a property CRC"
        elif style:
            found = ((5, 0), "the records' 5.x property style") if style == 5 else ((4, 9), RECORDS_4X_STYLE)
        else:
            continue
        newest = found if newest is None or found[0] > newest[0] else newest
    return newest
