"""What the broker derives from a record when it dispatches it: the consumequeue tagsCode, which queues get
an entry (CommitLogDispatcherBuildConsumeQueue + LMQ multi-dispatch), and which index keys are put
(CommitLogDispatcherBuildIndex / IndexService.buildIndex). Shared by append, rebuild and verify."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import rules
from . import schema as S
from .config import BrokerConfig
from .javacompat import java_string_hash, parse_int, parse_long
from .record import Message
from .rules import SCHEDULE_TOPIC


@lru_cache(maxsize=16)
def _delays(spec: str) -> np.ndarray:
    """messageDelayLevel as rules.delivery_tags_code takes it: level k's delay in ms at [k], -1 where the
    table has no level k, the highest level last."""
    table = BrokerConfig(messageDelayLevel=spec).delay_level_table()
    delays = np.full(max(table, default=0) + 1, -1, np.int64)
    for level, ms in table.items():
        delays[level] = ms
    return delays


def tags_code(m: Message, config: BrokerConfig) -> int:
    """checkMessageAndReturnSize: rules.tags_code of TAGS; for SCHEDULE_TOPIC_XXXX with a DELAY property,
    rules.delivery_tags_code of its level."""
    props = m.properties
    tags = props.get("TAGS") or ""
    code = rules.tags_code(java_string_hash(tags), len(tags))
    delay = props.get("DELAY")
    if delay is not None and m.topicBytes == SCHEDULE_TOPIC.encode():
        level = parse_int(delay)
        if level is None:
            return code  # Integer.parseInt throws: the broker's dispatch of this record fails
        code = int(rules.delivery_tags_code(code, level, _delays(config.messageDelayLevel), m.storeTimestamp))
    return code


def dispatch_failure(m: Message, v5: bool) -> tuple[str, str] | None:
    """What fails the reput's checkMessageAndReturnSize (no CRC, no DUP_INFO check) on a record that parses:
    rules.property_failure, as (kind, detail); None when it dispatches. The reput then dispatches nothing more
    of that file (DefaultMessageStore.doReput: doNext = false; DLedger's: nothing of that entry)."""
    return rules.property_failure(m.topic, bool(m.propertiesBytes), m.properties, v5, False)


def reput_stuck_at(m: Message, config: BrokerConfig, v5: bool) -> str | None:
    """Why the reput never gets past this record (rules.multi_dispatch_throws, with multi-dispatch on): its
    dispatch throws on an INNER_MULTI_QUEUE_OFFSET part, and the reput retries it for good; None: it does not."""
    if not is_dispatched(m) or not config.enableMultiDispatch or not rules.multi_dispatched_topic(m.topic, v5):
        return None
    props = m.properties
    part = rules.multi_dispatch_throws(
        props.get("INNER_MULTI_DISPATCH", ""), props.get("INNER_MULTI_QUEUE_OFFSET", ""), v5
    )
    if part is None:
        return None
    return (
        f"INNER_MULTI_QUEUE_OFFSET part {part!r} is not a long: the broker's dispatch throws on this record and "
        "its reput retries it for good, so nothing from here on reaches a consume queue or the index"
    )


def dispatched_type(sys_flag: int) -> bool:
    """Only NOT and COMMIT transaction types get consumequeue entries (CommitLogDispatcherBuildConsumeQueue).
    Element by element on numpy arrays."""
    kind = sys_flag & S.TRANSACTION_MASK
    return (kind == S.TRANSACTION_NOT_TYPE) | (kind == S.TRANSACTION_COMMIT_TYPE)


def is_dispatched(m: Message) -> bool:
    """dispatched_type of a record."""
    return dispatched_type(m.sysFlag)


def cq_targets(m: Message, config: BrokerConfig, v5: bool) -> list[tuple[str, int, int]]:
    """(topic, queueId, queueOffset) of every consumequeue entry the broker (5.x when `v5`) writes for this
    record: its own queue, then (multi-dispatch on, rules.multi_dispatched_topic) rules.multi_dispatch_targets
    of its INNER_MULTI_DISPATCH queues. Empty for PREPARED/ROLLBACK."""
    if not is_dispatched(m):
        return []
    out = [(m.topic, m.queueId, m.queueOffset)]
    if config.enableMultiDispatch and rules.multi_dispatched_topic(m.topic, v5):
        props = m.properties
        out += rules.multi_dispatch_targets(
            props.get("INNER_MULTI_DISPATCH", ""),
            props.get("INNER_MULTI_QUEUE_OFFSET", ""),
            m.queueId,
            config.enableLmq,
            v5,
        )
    return out


def batch_unit(m: Message, config: BrokerConfig) -> tuple[int, int, int, int, int, int] | None:
    """The BatchConsumeQueue unit the broker writes for a record of a BatchCQ topic (putBatchMessagePositionInfo),
    as (commitLogOffset, size, tagsCode, storeTime, msgBaseOffset, batchSize); None when it writes none.
    checkMessageAndReturnSize's setBatchSizeIfNeeded: INNER_BASE and INNER_NUM when the record has both, else its
    queue offset and 1."""
    if not is_dispatched(m):
        return None
    props = m.properties
    base, num = props.get("INNER_BASE"), props.get("INNER_NUM")
    if base is not None and num is not None:
        base, num = parse_long(base, 64), parse_long(num, 16)
        if base is None or num is None:
            return None  # Long/Short.parseLong throws: the broker's dispatch of this record fails
    else:
        base, num = m.queueOffset, 1
    if base < 0 or num < 0:
        return None  # putMessagePositionInfoWrapper refuses the request
    return m.physicalOffset, m.storeSize, tags_code(m, config), m.storeTimestamp, base, num


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
