"""Compiled loops (numba) for the paths that touch every record of a commitlog: one pass over the bytes in
machine code instead of a Python step or a dozen numpy passes per record. Kernels run without the GIL
(threads scale on them) and are cached on disk after their first compilation.

The layouts the kernels read come from rmqctl.schema (offsets are computed from its declarations at import
and become compile-time constants); the broker rules they apply are those of rmqctl.dispatch, which stays
the reference the tests compare the kernels with. Kernels read untrusted bytes: every read is checked
against the caller's limit explicitly (numba does not bounds-check).

The shared pieces are here: big-endian (Java) integers read and written, zlib's crc32 callable from a kernel, Java's String.hashCode over the UTF-16
code units of UTF-8 bytes, and the lookup of properties (MessageDecoder.string2messageProperties).
"""
from __future__ import annotations

import ctypes.util
import hashlib
import os
from pathlib import Path

import llvmlite.binding as llvm
import numba
import numpy as np
from numba import types


def _drop_stale_caches(here: Path = Path(__file__).parent):
    """numba keys a cached kernel on its own module's file, but compiles into it the kernels it calls from
    other modules and the schema constants it reads: after a change to those it would go on running the
    old code. One stamp over this package's sources and the schema empties the cache when any changes."""
    sources = sorted(here.glob("*.py")) + [here.parent / "schema.py"]
    try:
        stamp = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()
    except OSError:  # imported from a zip (spark-submit --py-files): nothing on disk to cache next to
        return
    cache = here / "__pycache__"
    marker = cache / "rmqctl-native.stamp"
    try:
        if marker.read_text() == stamp:
            return
    except OSError:
        pass
    try:
        for p in cache.glob("*.nb[ic]"):
            p.unlink()
        cache.mkdir(exist_ok=True)
        marker.write_text(stamp)
    except OSError:
        pass  # a read-only installation: numba caches in its user-wide directory, which a reinstall renews


_drop_stale_caches()


def available_cores() -> int:
    """The CPUs this process may run on: how many threads the kernels get by default."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def kernel(fn):
    """A compiled function: no GIL, cached next to its module, no Python exceptions on integer division.
    Where no cache directory is writable (a read-only installation without a writable home or
    NUMBA_CACHE_DIR) it is compiled afresh in every process instead."""
    options = dict(nogil=True, error_model="numpy")
    try:
        return numba.njit(cache=True, **options)(fn)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        return numba.njit(**options)(fn)


def _zlib_crc32():
    # the zlib that CPython's own zlib module uses (libz.so.1), linked by symbol name (a ctypes pointer
    # would keep kernels out of the disk cache); the address goes in as an integer, which the ABI passes
    # like a pointer
    llvm.load_library_permanently(ctypes.util.find_library("z") or "libz.so.1")
    return types.ExternalFunction("crc32", types.uint64(types.uint64, types.uintp, types.uint32))


zlib_crc32 = _zlib_crc32()
MASK32 = 0xFFFFFFFF


@kernel
def be16(u8, at):
    """The big-endian (Java) short at u8[at], signed."""
    v = (np.int64(u8[at]) << 8) | np.int64(u8[at + 1])
    return v - ((v >> 15) << 16)


@kernel
def be32(u8, at):
    """The big-endian int at u8[at], signed."""
    v = (np.int64(u8[at]) << 24) | (np.int64(u8[at + 1]) << 16) | (np.int64(u8[at + 2]) << 8) | np.int64(u8[at + 3])
    return v - ((v >> 31) << 32)


@kernel
def be64(u8, at):
    """The big-endian long at u8[at]."""
    v = np.int64(0)
    for k in range(8):
        v = (v << 8) | np.int64(u8[at + k])
    return v


@kernel
def put_be32(u8, at, v):
    for k in range(4):
        u8[at + k] = (v >> (24 - 8 * k)) & 0xFF


@kernel
def put_be64(u8, at, v):
    for k in range(8):
        u8[at + k] = (v >> (56 - 8 * k)) & 0xFF


@kernel
def crc32(u8, lo, hi):
    """zlib.crc32 of u8[lo:hi] (the caller has checked lo <= hi <= len(u8))."""
    if hi <= lo:
        return 0
    return np.int64(zlib_crc32(0, u8[lo:].ctypes.data, hi - lo))  # int64 on both paths (int64 | uint64 would type as float64)


@kernel
def java_hash(u8, lo, hi, h):
    """Continue Java's String.hashCode `h` over the string that UTF-8 bytes u8[lo:hi] decode to, as UTF-16
    code units (a supplementary character is a surrogate pair). Returns (hash in [0, 2^32), well_formed): for
    malformed UTF-8 (which Java replaces with U+FFFD in ways a kernel does not reproduce) the hash is not
    meaningful and the caller takes the reference path."""
    h &= MASK32
    i = lo
    while i < hi:
        b = u8[i]
        if b < 0x80:
            h = (h * 31 + b) & MASK32
            i += 1
            continue
        if 0xC2 <= b <= 0xDF:
            n, cp, low, high = 1, b & 0x1F, 0x80, 0xBF
        elif 0xE0 <= b <= 0xEF:
            n, cp = 2, b & 0x0F
            low = 0xA0 if b == 0xE0 else 0x80
            high = 0x9F if b == 0xED else 0xBF  # no UTF-8-encoded surrogates
        elif 0xF0 <= b <= 0xF4:
            n, cp = 3, b & 0x07
            low = 0x90 if b == 0xF0 else 0x80
            high = 0x8F if b == 0xF4 else 0xBF
        else:
            return h, False
        if i + n >= hi:  # the sequence runs past the end
            return h, False
        c = u8[i + 1]
        if c < low or c > high:
            return h, False
        cp = (cp << 6) | (c & 0x3F)
        for k in range(2, n + 1):
            c = u8[i + k]
            if c < 0x80 or c > 0xBF:
                return h, False
            cp = (cp << 6) | (c & 0x3F)
        if cp >= 0x10000:
            cp -= 0x10000
            h = (h * 31 + 0xD800 + (cp >> 10)) & MASK32
            h = (h * 31 + 0xDC00 + (cp & 0x3FF)) & MASK32
        else:
            h = (h * 31 + cp) & MASK32
        i += n + 1
    return h, True


# Topics interned by their bytes: `table` (a power of two long, at most half full) holds topic number + 1
# (0: free) by the topic's Java hash; column t of `topics` says where topic t was first seen and what it is.
T_FIRST, T_AT, T_LEN, T_HASH, T_WELL_FORMED, T_COUNT = range(6)  # first record, bytes at, length, hash, UTF-8 ok, records
TOPIC_COLUMNS = 6


@kernel
def first_slot(h, table):
    return ((h * 0x9E3779B1) >> 7) & (len(table) - 1)


@kernel
def rehash(topics, n, table):
    """Enter topics 0..n-1 into an empty `table` (when it grows)."""
    for t in range(n):
        slot = first_slot(topics[T_HASH, t], table)
        while table[slot]:
            slot = (slot + 1) & (len(table) - 1)
        table[slot] = t + 1


@kernel
def topic_id(u8, at, length, pos, table, topics, count):
    """The id of the topic u8[at:at+length] (its bytes), added with `pos` as its first record when new, and
    the topic count after it. The caller keeps `table` at most half full and `topics` wide enough."""
    h, well_formed = java_hash(u8, at, at + length, 0)
    mask = len(table) - 1
    slot = first_slot(h, table)
    while True:
        t = table[slot] - 1
        if t < 0:
            break
        if topics[T_HASH, t] == h and topics[T_LEN, t] == length:
            other = topics[T_AT, t]
            same = True
            for k in range(length):
                if u8[other + k] != u8[at + k]:
                    same = False
                    break
            if same:
                topics[T_COUNT, t] += 1
                return t, count
        slot = (slot + 1) & mask
    t = count
    table[slot] = t + 1
    topics[T_FIRST, t], topics[T_AT, t], topics[T_LEN, t] = pos, at, length
    topics[T_HASH, t], topics[T_WELL_FORMED, t], topics[T_COUNT, t] = h, 1 if well_formed else 0, 1
    return t, count + 1


def property_names(*names: str) -> tuple[np.ndarray, np.ndarray]:
    """The names a kernel looks up, as a zero-padded byte matrix and their lengths."""
    raw = [n.encode() for n in names]
    table = np.zeros((len(raw), max(len(r) for r in raw)), np.uint8)
    for i, r in enumerate(raw):
        table[i, : len(r)] = np.frombuffer(r, np.uint8)
    return table, np.array([len(r) for r in raw], np.int64)


@kernel
def read_properties(u8, lo, hi, names, name_lens, value_lo, value_hi):
    """find_properties, and what a verifier reports about the string, in one pass over its bytes. Returns
    (number of pairs, any byte >= 0x80, a non-empty segment whose first 0x01 is missing or first: a segment
    the broker's parser drops that is more than a short or valueless pair)."""
    for k in range(len(name_lens)):
        value_lo[k] = -1
        value_hi[k] = -1
    pairs = 0
    non_ascii = False
    dropped = False
    i = lo
    while i < hi:
        # the segment [i, j) and its first 0x01 (the first 0x01 from i on, as the broker's indexOf finds it,
        # makes a pair only when it lies inside the segment)
        j = i
        sep1 = -1
        while j < hi:
            b = u8[j]
            if b < 3 or b >= 0x80:
                if b == 2:
                    break
                if b >= 0x80:
                    non_ascii = True
                elif b == 1 and sep1 < 0:
                    sep1 = j
            j += 1
        if j > i and sep1 <= i:
            dropped = True
        if j - i >= 3 and i < sep1 < j - 1:
            pairs += 1
            for k in range(len(name_lens)):
                n = name_lens[k]
                if sep1 - i == n:
                    same = True
                    for c in range(n):
                        if u8[i + c] != names[k, c]:
                            same = False
                            break
                    if same:
                        value_lo[k] = sep1 + 1
                        value_hi[k] = j
        i = j + 1
    return pairs, non_ascii, dropped


@kernel
def find_properties(u8, lo, hi, names, name_lens, value_lo, value_hi):
    """MessageDecoder.string2messageProperties over the property bytes u8[lo:hi]: segments end at 0x02; a
    segment of 3+ bytes is a pair when its first 0x01 (searched from the segment start, possibly past it)
    lies after a non-empty name and before a non-empty value; later pairs overwrite earlier ones. Writes
    the value span of each wanted name (-1, -1 when absent) and returns the number of pairs."""
    return read_properties(u8, lo, hi, names, name_lens, value_lo, value_hi)[0]
