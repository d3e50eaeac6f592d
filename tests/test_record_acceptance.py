"""Record acceptance is written once (rules.record_head / record_tail: what checkMessageAndReturnSize makes of
the bytes at a record's start) and every walk derives from it: the Python reference (record.read_record), the
compiled rule itself, the decoder behind dump and the engine's batches, verify's walk and rebuild's dispatch.
A table of crafted records, each judged by every walk."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest

from rmqctl import engine, rules
from rmqctl import schema as S
from rmqctl.engine import record as compiled
from rmqctl.javacompat import crc31
from rmqctl.record import Message, RecordError, encode_record, read_record

PACKAGE = Path(__file__).resolve().parents[1] / "rmqctl"
V6 = S.BORNHOST_V6_FLAG | S.STOREHOSTADDRESS_V6_FLAG


def record(v2=False, sysflag=0, body=b"hello", topic=b"TopicTest", props=b"KEYS\x01k1 k2\x02TAGS\x01a\x02") -> bytes:
    m = Message()
    ip = bytes(16) if sysflag & V6 else bytes([10, 0, 0, 1])
    (m.magicCode, m.bodyCRC, m.queueId, m.flag, m.queueOffset, m.physicalOffset, m.sysFlag, m.bornTimestamp,
     m.bornIp, m.bornPort, m.storeTimestamp, m.storeIp, m.storePort, m.reconsumeTimes, m.preparedTransactionOffset,
     m.body, m.topicBytes, m.propertiesBytes) = (
        S.MAGIC_V2 if v2 else S.MAGIC_V1, crc31(body), 1, 0, 7, 0, sysflag, 1_700_000_000_000, ip, 4321,
        1_700_000_000_001, ip, 10911, 0, 0, body, topic, props)  # fmt: skip
    return encode_record(m)


def put(data: bytes, at: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


GOOD = record()
HEAD = S.HEAD_SIZE[0]
TOPIC_LENGTH_AT = HEAD + len(b"hello")
PROPS_LENGTH_AT = TOPIC_LENGTH_AT + 1 + len(b"TopicTest")
CASES = [  # (name, bytes, allow V2, what read_record says)
    ("good V1", GOOD, True, "ok"),
    ("good V2", record(v2=True), True, "ok"),
    ("good, IPv6 hosts", record(sysflag=V6), True, "ok"),
    ("good, no body nor properties", record(body=b"", props=b""), True, "ok"),
    ("body CRC wrong (not acceptance's business)", put(GOOD, HEAD, ">B", GOOD[HEAD] ^ 0xFF), True, "ok"),
    ("V2 where 4.9 reads", record(v2=True), False, "illegal-magic"),
    ("bad magic v1", put(GOOD, S.MAGIC_AT, ">i", S.MAGIC_V1 ^ 0x100), True, "illegal-magic"),
    ("bad magic v2", put(record(v2=True), S.MAGIC_AT, ">i", S.MAGIC_V2 ^ 0x1), True, "illegal-magic"),
    ("zeros", bytes(128), True, "zeros"),
    ("blank", struct.pack(">ii", 128, S.MAGIC_BLANK) + bytes(120), True, "blank"),
    ("short: 5 bytes", GOOD[:5], True, "truncated-record"),
    ("size past the file's end", GOOD[:-1], True, "truncated-record"),
    ("size zero", put(GOOD, 0, ">i", 0), True, "truncated-record"),
    ("size under the smallest head", put(GOOD, 0, ">i", 40), True, "bad-length"),
    ("IPv6 head longer than the size", put(record(body=b"", props=b""), S.SYSFLAG_AT, ">i", V6), True, "bad-length"),
    ("bodyLength past the size", put(GOOD, S.BODY_LENGTH_AT[0], ">i", 10_000), True, "bad-length"),
    ("no room for the topic length", put(GOOD, S.BODY_LENGTH_AT[0], ">i", len(GOOD) - HEAD), True, "bad-length"),
    ("topic length past the size", put(GOOD, TOPIC_LENGTH_AT, ">b", 127), True, "bad-length"),
    ("negative topic length", put(GOOD, TOPIC_LENGTH_AT, ">b", -1), True, "bad-length"),
    ("properties length past the size", put(GOOD, PROPS_LENGTH_AT, ">h", 30_000), True, "bad-length"),
    ("size not calMsgLength", put(GOOD + b"\0", 0, ">i", len(GOOD) + 1), True, "bad-length"),
]
IDS = [c[0] for c in CASES]


def python_verdict(data: bytes, allow_v2: bool) -> str:
    try:
        return "blank" if not isinstance(read_record(data, 0, len(data), allow_v2), Message) else "ok"
    except RecordError as e:
        return e.kind


@pytest.mark.parametrize("name,data,allow_v2,expected", CASES, ids=IDS)
def test_the_reference_reads_each_record_as_the_broker(name, data, allow_v2, expected):
    assert python_verdict(data, allow_v2) == expected


@pytest.mark.parametrize("name,data,allow_v2,expected", CASES, ids=IDS)
def test_the_compiled_rule_is_the_rule(name, data, allow_v2, expected):
    u8 = np.frombuffer(data, np.uint8)
    head = rules.record_head(data, 0, len(data), allow_v2)
    assert tuple(compiled.head_outcome(u8, 0, len(data), allow_v2)) == head
    if head[0] == rules.RECORD:
        _, size, combo, body_len, v2, _ = head
        assert tuple(compiled.decode_tail(u8, 0, size, combo, body_len, v2)) == rules.record_tail(
            data, 0, size, combo, body_len, v2
        )


@pytest.mark.parametrize("name,data,allow_v2,expected", CASES, ids=IDS)
def test_every_walk_reaches_the_same_verdict(name, data, allow_v2, expected):
    u8 = np.frombuffer(data, np.uint8)
    limit = len(data)
    # the decoder behind dump and the engine's batches: the refusal's kind where it stops
    cols = np.zeros((4, engine.NCOLUMNS), np.int64)
    n, _, outcome = engine.decode_records(u8, 0, limit, allow_v2, True, 1 << 62, cols)
    assert ("ok" if n else rules.VERDICT_KINDS[outcome]) == expected
    # verify's walk and rebuild's dispatch: whether the record is taken
    assert verify_walk(u8, allow_v2)[0] == (expected == "ok")
    starts, _ = engine.dispatch_walk(u8, limit, allow_v2, 0, limit)
    arrays = [np.zeros(len(starts), np.int64) for _ in range(8)]  # size .. tagsCode
    decoded = engine.dispatch_decode(u8, starts, allow_v2, False, True, *arrays, np.zeros(len(starts), np.bool_))[3]
    assert decoded == (1 if expected == "ok" else 0)


def verify_walk(u8: np.ndarray, allow_v2: bool) -> tuple[bool, int]:
    """(whether verify's walk took the record, its flags)."""
    records = np.zeros((engine.RECORD_COLUMNS, 4), np.int64)
    keys = np.zeros((2, 2 * engine.MOST_KEYS), np.int64)
    topics, table = np.zeros((engine.TOPIC_COLUMNS, 64), np.int64), np.zeros(128, np.int64)
    state = np.zeros(engine.STATE_SLOTS, np.int64)
    options = engine.CHECK_CRC | engine.WANT_KEYS | (engine.ALLOW_V2 if allow_v2 else 0)
    engine.check_walk(u8, len(u8), len(u8), 0, 0, options, records, keys, topics, table, state)
    taken = state[engine.S_RECORDS] == 1
    return bool(taken), int(records[engine.FLAGS, 0]) if taken else 0


def test_a_wrong_crc_is_the_crc_checks_finding_not_a_refusal():
    bad = CASES[IDS.index("body CRC wrong (not acceptance's business)")][1]
    for data, crc_ok in ((GOOD, True), (bad, False)):
        assert read_record(data, 0, len(data)).body_crc_ok() == crc_ok
        cols = np.zeros((4, engine.NCOLUMNS), np.int64)
        engine.decode_records(np.frombuffer(data, np.uint8), 0, len(data), True, True, 1 << 62, cols)
        assert cols[0, engine.CRC_OK] == (1 if crc_ok else 0)
        assert bool(verify_walk(np.frombuffer(data, np.uint8), True)[1] & engine.F_BODY_CRC) == (not crc_ok)


# the writers that put a magic into a record, and how each picks it: by the version it writes, never by comparing
WRITERS = {
    "maintenance/append.py": "S.MAGIC_V2 if v2 else S.MAGIC_V1",
    "maintenance/append_batch.py": "np.where(v2, S.MAGIC_V2, S.MAGIC_V1)",
}


def test_record_acceptance_is_defined_in_rules_alone():
    """Which magic is a message's is named in rules.py only (schema.py declares the codes; the writers pick
    one to write); no other module defines a head or tail check."""
    named, defined = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        lines = [line for line in path.read_text().splitlines() if re.search(r"\bMAGIC_V1\b", line)]
        if rel not in ("schema.py", "rules.py") and not (lines and all(WRITERS.get(rel, "\0") in x for x in lines)):
            named += [f"{rel}: {line.strip()}" for line in lines]
        if rel != "rules.py" and re.search(
            r"^def (record_head|record_tail|record_magic|message_magic|head_outcome|"
            r"decode_tail)\b",
            path.read_text(),
            re.M,
        ):
            defined.append(rel)
    assert (named, defined) == ([], [])
