"""The MetaQ broker's `server.ini`, read as Metamorphosis 1.4.6.2 reads it (MetaConfig.populateSystemConf /
populateTopicsConfig over ini4j), and its `deletePolicy` as DeletePolicyFactory / DiscardDeletePolicy /
ArchiveDeletePolicy parse it. Only the settings the store needs: maxSegmentSize, deletePolicy, deleteWhen,
brokerId, dataPath, and the per-topic overrides in `[topic=NAME]` sections.
"""

from __future__ import annotations

import ast
import dataclasses
import operator
import os
import re
from pathlib import Path

from ..errors import UsageError
from ..javacompat import java_split, parse_int
from . import cron

DEFAULT_MAX_SEGMENT_SIZE = 1 * 1024 * 1024 * 1024  # MetaConfig.maxSegmentSize
DEFAULT_DELETE_POLICY = "delete,168"  # MetaConfig.deletePolicy
DEFAULT_DELETE_WHEN = "0 0 6,18 * * ?"  # MetaConfig.deleteWhen (a Quartz cron expression)


@dataclasses.dataclass(frozen=True)
class DeletePolicy:
    """A parsed deletePolicy: `delete,<age>` deletes, `archive,<age>[,<compress>]` renames to `.arc` or zips."""

    name: str  # "delete" or "archive"
    max_reserved_ms: int
    compress: bool = False
    text: str = ""

    def can_delete(self, mtime_ms: int, now_ms: int) -> bool:
        """DiscardDeletePolicy.canDelete: strictly older than the reserved time, by file mtime."""
        return now_ms - mtime_ms > self.max_reserved_ms

    @property
    def action(self) -> str:
        if self.name == "delete":
            return "delete"
        return "zip" if self.compress else "archive"


def _java_int(text: str, what: str) -> int:
    """Integer.parseInt: an optional sign and decimal digits, nothing else, within int range."""
    value = parse_int(text)
    if value is None:
        raise UsageError(f"{what}: {text!r} is not an int (the broker fails to start with it)")
    return value


def parse_delete_policy(text: str) -> DeletePolicy:
    """DeletePolicyFactory.getDeletePolicy: split on ',' (Java drops trailing empty parts), the name picks
    the class, the rest is init(): an age with suffix m, s or h (hours without one), then for archive
    Boolean.valueOf(compress). Anything the broker refuses at start is a UsageError."""
    parts = java_split(text, ",")
    name = parts[0] if parts else ""
    if name not in ("delete", "archive"):
        raise UsageError(f"deletePolicy {text!r}: unknown policy {name!r} (UnknownDeletePolicyException)")
    if len(parts) < 2:
        raise UsageError(f"deletePolicy {text!r}: no reserved time (the broker fails to start with it)")
    age = parts[1]
    units = {"m": 60_000, "s": 1000, "h": 3_600_000}
    if age and age[-1] in units:
        ms = _java_int(age[:-1], f"deletePolicy {text!r}") * units[age[-1]]
    else:
        ms = _java_int(age, f"deletePolicy {text!r}") * 3_600_000
    compress = name == "archive" and len(parts) >= 3 and parts[2].lower() == "true"
    return DeletePolicy(name, ms, compress, text)


_ARITH = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def _aviator_int(text: str, what: str) -> int:
    """MetaConfig.getInt evaluates the value with Aviator (`1024*1024` is allowed) and takes intValue():
    integer literals and + - * / % over them, truncated to a Java int."""

    def ev(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH | {ast.Div: None}:
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Div):  # Java long division truncates toward zero
                q = abs(a) // abs(b)
                return q if (a >= 0) == (b >= 0) else -q
            return _ARITH[type(node.op)](a, b)
        raise ValueError

    try:
        value = ev(ast.parse(text.strip(), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError):
        raise UsageError(f"{what}: {text!r} is not an integer expression") from None
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def read_ini(path: Path) -> dict[str, dict[str, str]]:
    """ini4j as MetaConfig uses it: [section] headers, key=value (or key:value), ';' and '#' comment lines,
    names and values trimmed; a later key in a section wins."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise UsageError(f"{path}: line {n}: unterminated section header")
            current = sections.setdefault(line[1:-1].strip(), {})
            continue
        m = re.match(r"([^=:]+)[=:](.*)", line)
        if not m or current is None:
            raise UsageError(f"{path}: line {n}: not a key=value line inside a section")
        current[m.group(1).strip()] = m.group(2).strip()
    return sections


@dataclasses.dataclass(frozen=True)
class TopicSettings:
    deletePolicy: str
    deleteWhen: str
    numPartitions: int = 1


@dataclasses.dataclass
class MetaqConfig:
    """The store-relevant part of MetaConfig (defaults as in the class)."""

    brokerId: int = 0
    dataPath: str | None = None
    maxSegmentSize: int = DEFAULT_MAX_SEGMENT_SIZE
    numPartitions: int = 1
    deletePolicy: str = DEFAULT_DELETE_POLICY
    deleteWhen: str = DEFAULT_DELETE_WHEN
    topics: dict[str, TopicSettings] = dataclasses.field(default_factory=dict)
    source: str | None = None

    def topic(self, topic: str) -> TopicSettings:
        """A topic's settings: its [topic=...] section, else the [system] ones (TopicConfig's defaults)."""
        return self.topics.get(topic) or TopicSettings(self.deletePolicy, self.deleteWhen, self.numPartitions)

    def put_refusal(self, topic: str, partition: int) -> str | None:
        """Why the broker would refuse a put to this partition (MessageStoreManager.getOrCreateMessageStore:
        the topic must match a [topic=...] section, `*` as a wildcard; the partition must be below
        numPartitions), or None. Only meaningful with a server.ini."""
        if self.source is None:
            return None
        if not any(re.fullmatch(t.replace("*", ".*"), topic) for t in self.topics):
            return f"topic {topic!r} matches no [topic=...] section of {self.source} (IllegalTopicException)"
        n = self.topic(topic).numPartitions
        if not 0 <= partition < n:
            return f"partition {partition} is not below numPartitions {n} (WrongPartitionException)"
        return None

    def delete_policy(self, topic: str) -> DeletePolicy:
        return parse_delete_policy(self.topic(topic).deletePolicy)


def load_server_config(path: str | os.PathLike | None) -> MetaqConfig:
    """server.ini -> MetaqConfig; None -> the defaults."""
    if path is None:
        return MetaqConfig()
    p = Path(path)
    try:
        sections = read_ini(p)
    except OSError as e:
        raise UsageError(f"cannot read the server config: {e.strerror}", p) from None
    system = sections.get("system", {})
    cfg = MetaqConfig(source=str(p))
    if system.get("brokerId"):
        cfg.brokerId = _aviator_int(system["brokerId"], f"{p}: brokerId")
    if system.get("dataPath"):
        cfg.dataPath = system["dataPath"]
    if system.get("maxSegmentSize"):
        cfg.maxSegmentSize = _aviator_int(system["maxSegmentSize"], f"{p}: maxSegmentSize")
    if system.get("numPartitions"):
        cfg.numPartitions = _aviator_int(system["numPartitions"], f"{p}: numPartitions")
    for key in ("deletePolicy", "deleteWhen"):
        if system.get(key):
            setattr(cfg, key, system[key])
    for name, section in sections.items():
        if name.startswith("topic="):
            n = section.get("numPartitions")
            cfg.topics[name[len("topic=") :]] = TopicSettings(
                section.get("deletePolicy") or cfg.deletePolicy,
                section.get("deleteWhen") or cfg.deleteWhen,
                _aviator_int(n, f"{p}: [{name}] numPartitions") if n else cfg.numPartitions,
            )
    # the broker refuses a bad one at start
    for settings in [TopicSettings(cfg.deletePolicy, cfg.deleteWhen), *cfg.topics.values()]:
        parse_delete_policy(settings.deletePolicy)
        try:
            cron.parse(settings.deleteWhen)
        except cron.Unsupported:
            pass  # valid Quartz (L, W, #); only its next run is not computed here
    if cfg.maxSegmentSize <= 0:
        raise UsageError(f"{p}: maxSegmentSize {cfg.maxSegmentSize} must be positive")
    return cfg
