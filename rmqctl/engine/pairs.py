"""A batch of RocksDB's (key, value) pairs found in one buffer. rmqctl.rocksdb drains rocksdict's iterator a
step at a time and has marshal write each step's list of pairs in one C call (format version 2); `pair_spans`
then finds every key and value in those bytes, so a batch costs no Python step per pair beyond the
iterator's own.

The layout marshal writes at version 2 (CPython's Python/marshal.c, w_object; version 2 writes no
references, so every object is written out where it stands): a list is '[' then its length, a tuple '(' then
its length, a bytes object 's' then its length and its bytes, each length an int32 in little-endian order.
Bytes of any other layout (a step that is not of (bytes, bytes) pairs) are refused whole.
"""

from __future__ import annotations

import numpy as np

from .kernels import kernel

LIST, TUPLE, BYTES = ord("["), ord("("), ord("s")  # marshal's TYPE_LIST, TYPE_TUPLE, TYPE_STRING
HEAD = 5  # a type byte and an int32 length
KEY_LO, KEY_HI, VALUE_LO, VALUE_HI = range(4)


@kernel(counted=False)
def _le32(u8, at):
    """The little-endian int32 at u8[at] as marshal's r_long reads it (the caller checks at + 4 <= len(u8))."""
    value = np.int64(u8[at]) | np.int64(u8[at + 1]) << 8 | np.int64(u8[at + 2]) << 16 | np.int64(u8[at + 3]) << 24
    return value - (1 << 32) if value >= 1 << 31 else value


@kernel
def pair_spans(buf, count):
    """Where each pair's key and value lie in `buf`, marshalled lists of (bytes, bytes) pairs end to end, which
    must hold exactly `count` pairs: (whole, spans), spans[KEY_LO, i] to spans[KEY_HI, i] pair i's key, and its
    value likewise; `whole` False when the bytes are not such lists covering `buf` exactly."""
    spans = np.zeros((4, count), np.int64)
    n, at, end = 0, 0, len(buf)
    while at < end:
        if at + HEAD > end or buf[at] != LIST:
            return False, spans
        items = _le32(buf, at + 1)
        at += HEAD
        for _ in range(items):
            if n == count or at + HEAD > end or buf[at] != TUPLE or _le32(buf, at + 1) != 2:
                return False, spans
            at += HEAD
            for part in range(2):
                if at + HEAD > end or buf[at] != BYTES:
                    return False, spans
                size = _le32(buf, at + 1)
                at += HEAD
                if size < 0 or size > end - at:
                    return False, spans
                spans[2 * part, n], spans[2 * part + 1, n] = at, at + size
                at += size
            n += 1
    return n == count, spans
