"""Which messages `dump commitlog` prints: store time range, tag, key, property, msgId and transaction state.

The commitlog is in offset order, not store-time order (a slow producer's older timestamp can follow a newer
one), so a time range is found by scanning every record and keeping those inside it; `--from/--to` bound the
scan by offset when the range is known."""
from __future__ import annotations

import dataclasses

from .. import schema as S
from ..rules import key_words
from ..errors import UsageError
from ..record import Message

TRANSACTION_STATES = {"not": S.TRANSACTION_NOT_TYPE, "prepared": S.TRANSACTION_PREPARED_TYPE,
                      "commit": S.TRANSACTION_COMMIT_TYPE, "rollback": S.TRANSACTION_ROLLBACK_TYPE}


@dataclasses.dataclass
class MessageFilter:
    since: int | None = None  # storeTimestamp, epoch ms, inclusive
    until: int | None = None  # storeTimestamp, epoch ms, inclusive
    tag: str | None = None
    key: str | None = None  # a KEYS word
    properties: dict[str, str] = dataclasses.field(default_factory=dict)
    msg_id: str | None = None  # an offset msgId or a UNIQ_KEY
    transaction: int | None = None  # sysFlag & TRANSACTION_MASK

    @classmethod
    def parse(cls, since=None, until=None, tag=None, key=None, properties=(), msg_id=None, sys_flags=()):
        props = {}
        for item in properties:
            name, eq, value = item.partition("=")
            if not eq or not name:
                raise UsageError(f"--property {item!r}: expected NAME=VALUE")
            props[name] = value
        transaction = None
        for item in sys_flags:
            name, _, value = item.partition("=")
            if name != "transaction" or value not in TRANSACTION_STATES:
                raise UsageError(f"--sys-flag {item!r}: expected transaction={'|'.join(TRANSACTION_STATES)}")
            transaction = TRANSACTION_STATES[value]
        if since is not None and until is not None and until < since:
            raise UsageError("--until is before --since")
        return cls(since, until, tag, key, props, msg_id.upper() if msg_id else None, transaction)

    def matches(self, m: Message) -> bool:
        if self.since is not None and m.storeTimestamp < self.since:
            return False
        if self.until is not None and m.storeTimestamp > self.until:
            return False
        if self.transaction is not None and m.sysFlag & S.TRANSACTION_MASK != self.transaction:
            return False
        if self.tag is not None and m.tags != self.tag:
            return False
        if self.key is not None and self.key.encode("utf-8") not in key_words((m.keys or "").encode("utf-8")):
            return False
        if any(m.properties.get(name) != value for name, value in self.properties.items()):
            return False
        return self.msg_id is None or self.msg_id in (m.msg_id, m.uniq_key)
