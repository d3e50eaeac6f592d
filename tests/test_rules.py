"""rmqctl.rules: each broker rule once, the same function in Python and compiled into the kernels."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqctl import rules
from rmqctl import schema as S
from rmqctl.native import record as compiled

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
    assert list(compiled.index_slots(np.array([h, ~h], np.int32), slots)) == [rules.index_slot(h, slots),
                                                                             rules.index_slot(~h, slots)]
    assert compiled.index_time_diff(store_ts, begin_ts) == rules.index_time_diff(store_ts, begin_ts)


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
