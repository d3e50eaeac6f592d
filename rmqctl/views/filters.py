"""Which messages `dump commitlog` prints: store time range, tag, key, property, msgId and transaction state.

The commitlog is in offset order, not store-time order (a slow producer's older timestamp can follow a newer
one), so a time range is found by scanning every record and keeping those inside it; `--from/--to` bound the
scan by offset when the range is known.

`matches` is the definition, on one decoded record (the reference); `select` gives the same answer for a
whole batch of the engine's columns at once."""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import schema as S
from ..rules import key_words
from ..errors import UsageError
from ..record import Message, read_record
from .time_range import check_time_range

TRANSACTION_STATES = {
    "not": S.TRANSACTION_NOT_TYPE,
    "prepared": S.TRANSACTION_PREPARED_TYPE,
    "commit": S.TRANSACTION_COMMIT_TYPE,
    "rollback": S.TRANSACTION_ROLLBACK_TYPE,
}


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
        check_time_range(since, until)
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

    def has_text_terms(self) -> bool:
        return self.tag is not None or self.key is not None or bool(self.properties) or self.msg_id is not None

    def select(self, chunk) -> np.ndarray:
        """matches() of every record of an engine batch (rmqctl.engine.Chunk), on its columns: times and
        sysFlag as numbers, property values as the bytes of MessageDecoder's parse. Records whose property
        text is not well-formed UTF-8 (which Java decodes with replacement) go through matches() itself."""
        # start-up time: the engine (pyarrow, the kernels) loads with the commands that walk
        from ..engine import PROPERTIES_NOT_UTF8, holds_word, msgid_column, property_names, property_values

        col = chunk.column
        keep = np.ones(len(chunk), bool)
        if self.since is not None:
            keep &= col("storeTimestamp") >= self.since
        if self.until is not None:
            keep &= col("storeTimestamp") <= self.until
        if self.transaction is not None:
            keep &= (col("sysFlag") & S.TRANSACTION_MASK) == self.transaction
        if not self.has_text_terms() or not keep.any():
            return keep
        terms = [(name, _utf8(value) if _utf8(name) is not None else None) for name, value in self.properties.items()]
        if self.tag is not None:
            terms.append(("TAGS", _utf8(self.tag)))
        names = sorted({name for name, value in terms if value is not None} | {"KEYS", "UNIQ_KEY"})
        table, lengths = property_names(*names)
        lo, hi = (np.empty((len(chunk), len(names)), np.int64) for _ in range(2))
        property_values(
            chunk.u8,
            np.ascontiguousarray(col("propertiesAt")),
            np.ascontiguousarray(col("propertiesLength")),
            table,
            lengths,
            lo,
            hi,
        )
        span = {name: (lo[:, k], hi[:, k]) for k, name in enumerate(names)}
        for name, value in terms:
            keep &= value is not None and chunk.spans_equal(*span[name], value)  # None: no well-formed text has it
        if self.key is not None:
            word = _utf8(self.key)
            found = np.zeros(len(chunk), bool)
            if word is not None:
                holds_word(
                    chunk.u8,
                    np.ascontiguousarray(span["KEYS"][0]),
                    np.ascontiguousarray(span["KEYS"][1]),
                    np.frombuffer(word, np.uint8),
                    found,
                )
            keep &= found
        if self.msg_id is not None:
            by_offset = np.asarray(
                msgid_column(chunk, (col("combo") & 2) != 0).to_numpy(zero_copy_only=False) == self.msg_id, bool
            )
            unique = _utf8(self.msg_id)
            keep &= by_offset | (unique is not None and chunk.spans_equal(*span["UNIQ_KEY"], unique))
        for r in np.flatnonzero((col("textFlags") & PROPERTIES_NOT_UTF8) != 0):
            keep[r] = self.matches(read_record(chunk.buf, int(col("position")[r]), len(chunk.u8)))
        return keep


def _utf8(text: str) -> bytes | None:
    """The UTF-8 bytes of a filter's text; None when it has none (a lone surrogate), which no well-formed
    property text equals."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None
