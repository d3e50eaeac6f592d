"""What the broker derives from a record when it dispatches it: the consumequeue tagsCode, which queues get
an entry (CommitLogDispatcherBuildConsumeQueue + LMQ multi-dispatch), and which index keys are put
(CommitLogDispatcherBuildIndex / IndexService.buildIndex). Shared by append, rebuild and verify."""
from __future__ import annotations

import re
from functools import lru_cache

from . import rules
from . import schema as S
from .config import BrokerConfig
from .javacompat import java_string_hash
from .record import Message

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
LMQ_PREFIX = "%LMQ%"
MULTI_DISPATCH_SEPARATOR = ","


@lru_cache(maxsize=16)
def _delay_table(spec: str) -> tuple[dict[int, int], int]:
    table = BrokerConfig(messageDelayLevel=spec).delay_level_table()
    return table, max(table) if table else 0


def tags_code(m: Message, config: BrokerConfig) -> int:
    """checkMessageAndReturnSize: String.hashCode of TAGS (0 without tags); for SCHEDULE_TOPIC_XXXX with a
    DELAY property, the delivery time storeTimestamp + delay of the (clamped) level."""
    props = m.properties
    tags = props.get("TAGS")
    code = java_string_hash(tags) if tags else 0
    delay = props.get("DELAY")
    if delay is not None and m.topicBytes == b"SCHEDULE_TOPIC_XXXX":
        table, max_level = _delay_table(config.messageDelayLevel)
        try:
            level = int(delay)
        except ValueError:
            return code  # Integer.parseInt throws: the broker's dispatch of this record fails
        level = min(level, max_level)
        if level > 0:
            code = m.storeTimestamp + table.get(level, 1000)
    return code


def is_dispatched(m: Message) -> bool:
    """Only NOT and COMMIT transaction types get consumequeue entries."""
    return m.sysFlag & S.TRANSACTION_MASK in (S.TRANSACTION_NOT_TYPE, S.TRANSACTION_COMMIT_TYPE)


def cq_targets(m: Message, config: BrokerConfig) -> list[tuple[str, int, int]]:
    """(topic, queueId, queueOffset) of every consumequeue entry the broker writes for this record: its own
    queue, then each INNER_MULTI_DISPATCH queue at the aligned INNER_MULTI_QUEUE_OFFSET (LMQ queues use
    queueId 0). Empty for PREPARED/ROLLBACK."""
    if not is_dispatched(m):
        return []
    out = [(m.topic, m.queueId, m.queueOffset)]
    if config.enableMultiDispatch:
        props = m.properties
        queues, offsets = props.get("INNER_MULTI_DISPATCH", ""), props.get("INNER_MULTI_QUEUE_OFFSET", "")
        if queues.strip() and offsets.strip():
            names, offs = java_split(queues), java_split(offsets)
            if len(names) == len(offs):  # else the broker logs "[bug]" and dispatches only the main queue
                for name, off in zip(names, offs):
                    offset = parse_long(off)
                    if offset is None:
                        break  # Long.parseLong throws: the queues from here on get no entry
                    qid = 0 if config.enableLmq and name.startswith(LMQ_PREFIX) else m.queueId
                    out.append((name, qid, offset))
    return out


def java_split(text: str) -> list[str]:
    """String.split(",") (limit 0): the text itself when there is no separator, else the parts without the
    trailing empty ones (so "," gives none)."""
    if MULTI_DISPATCH_SEPARATOR not in text:
        return [text]
    parts = text.split(MULTI_DISPATCH_SEPARATOR)
    while parts and not parts[-1]:
        parts.pop()
    return parts


_LONG = re.compile(r"[+-]?[0-9]+")


def parse_long(text: str) -> int | None:
    """Long.parseLong: an optional sign and decimal digits within 64 bits (no spaces, no underscores)."""
    if not _LONG.fullmatch(text):
        return None
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 63) else None


def index_keys(m: Message) -> list[str]:
    """IndexService.buildIndex: nothing for ROLLBACK; UNIQ_KEY first, then every non-empty KEYS word, each
    as `topic#key`, duplicates kept."""
    if m.sysFlag & S.TRANSACTION_MASK == S.TRANSACTION_ROLLBACK_TYPE:
        return []
    topic = m.topic
    props = m.properties
    out = []
    uniq = props.get("UNIQ_KEY")
    if uniq is not None:
        out.append(f"{topic}#{uniq}")
    keys = props.get("KEYS")
    if keys:
        out.extend(f"{topic}#{k.decode()}" for k in rules.key_words(keys.encode()))
    return out


def index_key_hash(key: str) -> int:
    """IndexFile.indexKeyHashMethod of the key `topic#key`."""
    return rules.index_key_hash(java_string_hash(key))
