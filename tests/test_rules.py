"""rmqctl.rules: each broker rule once, the same function in Python and compiled into the kernels."""

from __future__ import annotations

import ast
import random
import subprocess
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqctl import rules
from rmqctl.javacompat import decode_utf8
from rmqctl import schema as S
from rmqctl.engine import record as compiled

INT32 = st.integers(-(1 << 31), (1 << 31) - 1)


def test_index_key_hash_is_math_abs_with_integer_min_value_as_zero():
    assert rules.index_key_hash(-(1 << 31)) == 0  # Math.abs(Integer.MIN_VALUE) stays negative: the broker uses 0
    assert rules.index_key_hash(-5) == 5 and rules.index_key_hash(7) == 7
    assert rules.index_slot(-(1 << 31), 5_000_000) == 0
    assert rules.index_slot(-12, 5) == 2


@settings(max_examples=200, deadline=None)
@given(INT32, st.integers(1, 10_000_000), st.integers(-(1 << 40), 1 << 41), st.integers(-(1 << 40), 1 << 41))
def test_the_kernels_compile_the_same_rules(h, slots, store_ts, begin_ts):
    assert compiled.index_key_hash(h) == rules.index_key_hash(h)
    assert compiled.key_hash_of(h & 0xFFFFFFFF) == rules.index_key_hash(h)
    assert compiled.index_slot(h, slots) == rules.index_slot(h, slots)
    assert list(compiled.index_slots(np.array([h, ~h], np.int32), slots)) == [
        rules.index_slot(h, slots),
        rules.index_slot(~h, slots),
    ]
    assert compiled.index_time_diff(store_ts, begin_ts) == rules.index_time_diff(store_ts, begin_ts)
    assert compiled.tags_code(h, slots % 3) == rules.tags_code(h, slots % 3)


def test_index_time_diff_clamps():
    assert rules.index_time_diff(5_000, 0) == 0  # no beginTimestamp
    assert rules.index_time_diff(5_000, 6_000) == 0  # before the file began
    assert rules.index_time_diff(6_999, 5_000) == 1
    assert rules.index_time_diff(1 << 62, 1) == (1 << 31) - 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", " ", "  ", "é", "订单", "😀"]), max_size=10))
def test_key_words_split_the_text_as_the_broker_does(parts):
    text = "".join(parts)
    want = [w for w in text.split(" ") if w]
    raw = text.encode()
    assert [w.decode() for w in rules.key_words(raw)] == want
    u8 = np.frombuffer(raw + b"\0", np.uint8)
    words = []
    a, b = compiled.next_key_word(u8, 0, len(raw))
    while a < b:
        words.append(u8[a:b].tobytes().decode())
        a, b = compiled.next_key_word(u8, b, len(raw))
    assert words == want


def test_written_units_stop_at_the_first_unit_recover_refuses():
    units = np.zeros(6, S.CQ_DTYPE)
    units["commitLogOffset"] = [0, 100, 200, -1, 300, 0]
    units["size"] = [100, 100, 100, 100, 100, 0]
    assert list(rules.cq_unit_valid(units["commitLogOffset"], units["size"])) == [True, True, True, False, True, False]
    assert rules.written_units(units) == 3
    assert rules.written_units(units[:3]) == 3
    assert rules.cq_unit_valid(0, S.PRE_BLANK_SIZE)  # a pre-blank unit is written


def test_tags_code_and_the_schedule_topics_delivery_time():
    """tagsString2tagsCode: 0 for no or empty TAGS; a DELAY level is clamped to the highest level, and a
    level <= 0 keeps the tags' code (checkMessageAndReturnSize, computeDeliverTimestamp)."""
    assert rules.tags_code(12345, 0) == 0 and rules.tags_code(-7, 3) == -7
    delays = np.array([-1, 1000, 5000, -1], np.int64)  # levels 1..3, level 3 missing from the table
    assert rules.delivery_tags_code(9, 2, delays, 100) == 5100
    assert rules.delivery_tags_code(9, 99, delays, 100) == 100 + rules.DEFAULT_DELIVERY_DELAY  # clamped to 3
    assert rules.delivery_tags_code(9, 0, delays, 100) == 9 and rules.delivery_tags_code(9, -4, delays, 100) == 9
    assert rules.delivery_tags_code(9, 5, np.array([-1], np.int64), 100) == 9  # no table: max level 0


def test_multi_dispatch_targets_split_as_java_does():
    """INNER_MULTI_DISPATCH / INNER_MULTI_QUEUE_OFFSET: String.split(",") (trailing empty parts dropped),
    as many queues as offsets or none, Long.parseLong stopping at the first bad offset, %LMQ% queues at 0."""
    for v5 in (False, True):
        assert rules.multi_dispatch_targets("%LMQ%a,b,", "4,5", 3, True, v5) == [("%LMQ%a", 0, 4), ("b", 3, 5)]
        assert rules.multi_dispatch_targets("%LMQ%a", "4", 3, False, v5) == [("%LMQ%a", 3, 4)]
        assert rules.multi_dispatch_targets("a,b", "4", 3, True, v5) == []
        assert rules.multi_dispatch_targets("a,b,c", "1, 2,3", 3, True, v5) == [("a", 3, 1)]  # " 2": Java throws
        assert rules.multi_dispatch_targets(" ", "1", 3, True, v5) == []
        assert rules.multi_dispatch_targets(",", ",", 0, True, v5) == []
        assert rules.multi_dispatch_targets("a", "+\u0663", 1, True, v5) == [("a", 1, 3)]  # any Nd digit


def test_multi_dispatch_in_5x_skips_a_path_and_the_system_topics():
    """5.3.3's ConsumeQueue.multiDispatchLmqQueue skips a queue name holding File.separator before it parses
    its offset; MultiDispatchUtils.isNeedHandleMultiDispatch dispatches no retry, rmq_sys_ or schedule topic.
    4.9.7 does neither."""
    assert rules.multi_dispatch_targets("%LMQ%a/b,%LMQ%c", "x,7", 3, True, True) == [("%LMQ%c", 0, 7)]
    assert rules.multi_dispatch_targets("%LMQ%a/b,%LMQ%c", "x,7", 3, True, False) == []  # parseLong("x") throws
    for topic in ("%RETRY%group", "rmq_sys_TRACE", "SCHEDULE_TOPIC_XXXX"):
        assert not rules.multi_dispatched_topic(topic, True) and rules.multi_dispatched_topic(topic, False)
    assert rules.multi_dispatched_topic("%DLQ%group", True) and rules.multi_dispatched_topic("Topic", True)


def test_record_expired_is_a_record_below_the_commitlog_min():
    offsets = np.array([0, 99, 100, 101], np.int64)
    assert rules.record_expired(offsets, 100).tolist() == [True, True, False, False]
    assert rules.record_expired(0, 0) is False  # a store never cleaned: offset 0 is its first record


def _names_the_commitlog_min(node: ast.AST) -> bool:
    """The spellings the tree gives the commitlog's min offset: min_phy, x.min_phy, and run/ctx/times/commitlog
    .min_offset (Context, the timer check's context, CommitLogTimes, Store.commitlog)."""
    if isinstance(node, ast.Name):
        return node.id == "min_phy"
    if not isinstance(node, ast.Attribute):
        return False
    if node.attr == "min_phy":
        return True
    owner = node.value
    owner_name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
    return node.attr == "min_offset" and owner_name in {"run", "ctx", "times", "commitlog"}


def test_a_record_below_the_commitlog_min_is_judged_in_rules_alone():
    """rules.record_expired is the one home of "this unit's record was cleaned": no other module compares an
    offset with the commitlog's min inline."""
    inline = []
    for path in sorted(Path(rules.__file__).parent.rglob("*.py")):
        if path.name == "rules.py" and path.parent.name == "rmqctl":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(
                _names_the_commitlog_min(side) for side in [node.left, *node.comparators]
            ):
                inline.append(f"{path.name}:{node.lineno}")
    assert inline == []


def test_malformed_utf8_is_replaced_as_java_replaces_it():
    """Keys, topics and property values that are not well-formed UTF-8 are decoded as the broker decodes them
    (new String(bytes, UTF_8): a key's index hash is its String's hashCode). Python's decoder cuts malformed
    input otherwise around 0xED (an encoded surrogate is one U+FFFD for Java, three for Python): 4,000 byte
    strings rich in lead, continuation and invalid bytes, against this JVM."""
    rnd = random.Random(20261130)
    pool = [
        0x41,
        0x80,
        0x8F,
        0x90,
        0x9F,
        0xA0,
        0xBF,
        0xC0,
        0xC1,
        0xC2,
        0xDF,
        0xE0,
        0xE1,
        0xED,
        0xEF,
        0xF0,
        0xF4,
        0xF5,
        0xFF,
    ]
    inputs = [bytes(rnd.choice(pool) for _ in range(rnd.randint(1, 7))) for _ in range(4000)]
    harness = Path(__file__).parent / "java" / "Utf8Decode.java"
    java = subprocess.run(
        ["java", str(harness)],
        input="".join(b.hex() + "\n" for b in inputs),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    ours = [decode_utf8(b).encode("utf-16-be", "surrogatepass").hex() for b in inputs]
    assert ours == java
    assert sum(b.decode("utf-8", "replace") != decode_utf8(b) for b in inputs) > 20  # (where Python's own differs)
