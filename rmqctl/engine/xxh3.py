"""XXH3_64bits with seed 0 and the default secret (xxHash 0.8, as RocksDB bundles it in util/xxhash.h): the
checksum RocksDB's block-based tables take by default (kXXH3), computed per block here rather than in a
Python call per 4 KiB block. Held to the xxhash package's xxh3_64_intdigest for every length class by
tests/test_rocksdbstore.py."""

from __future__ import annotations

import numpy as np

from .kernels import kernel, load8

U64 = np.uint64
M32 = U64(0xFFFFFFFF)
PRIME32_1, PRIME32_2, PRIME32_3 = U64(0x9E3779B1), U64(0x85EBCA77), U64(0xC2B2AE3D)
PRIME64_1, PRIME64_2, PRIME64_3 = U64(0x9E3779B185EBCA87), U64(0xC2B2AE3D27D4EB4F), U64(0x165667B19E3779F9)
PRIME64_4, PRIME64_5 = U64(0x85EBCA77C2B2AE63), U64(0x27D4EB2F165667C5)
PRIME_MX1, PRIME_MX2 = U64(0x165667919E3779F9), U64(0x9FB21C651E98DF25)
SECRET = np.frombuffer(
    bytes.fromhex(
        "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671fcb79e64eccc0e578825ad07dccff7221"
        "b8084674f743248ee03590e6813a264c3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
        "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364eac5ac8334d3ebc3c581a0fffa1363eb"
        "170ddd51b7f0da49d3165526 29d4689e2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e".replace(
            " ", ""
        )
    ),
    np.uint8,
)
SECRET_SIZE, STRIPE, STRIPES_PER_BLOCK = 192, 64, (192 - 64) // 8
MIDSIZE_START, MIDSIZE_LAST, SECRET_SIZE_MIN, LASTACC_START, MERGEACCS_START = 3, 17, 136, 7, 11


@kernel(counted=False, inlined=True)
def _le32(u8, at):
    return U64(u8[at]) | (U64(u8[at + 1]) << U64(8)) | (U64(u8[at + 2]) << U64(16)) | (U64(u8[at + 3]) << U64(24))


@kernel(counted=False, inlined=True)
def _rotl(x, r):
    return (x << U64(r)) | (x >> U64(64 - r))


@kernel(counted=False, inlined=True)
def _swap64(x):
    out = U64(0)
    for k in range(8):
        out = (out << U64(8)) | ((x >> U64(8 * k)) & U64(0xFF))
    return out


@kernel(counted=False, inlined=True)
def _fold(a, b):
    """The 128-bit product of a and b, its halves xored (XXH3_mul128_fold64)."""
    a_lo, a_hi, b_lo, b_hi = a & M32, a >> U64(32), b & M32, b >> U64(32)
    lo_lo, hi_lo, lo_hi, hi_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi, a_hi * b_hi
    cross = (lo_lo >> U64(32)) + (hi_lo & M32) + lo_hi
    upper = (hi_lo >> U64(32)) + (cross >> U64(32)) + hi_hi
    return ((cross << U64(32)) | (lo_lo & M32)) ^ upper


@kernel(counted=False, inlined=True)
def _avalanche64(h):
    h ^= h >> U64(33)
    h *= PRIME64_2
    h ^= h >> U64(29)
    h *= PRIME64_3
    return h ^ (h >> U64(32))


@kernel(counted=False, inlined=True)
def _avalanche(h):
    h ^= h >> U64(37)
    h *= PRIME_MX1
    return h ^ (h >> U64(32))


@kernel(counted=False, inlined=True)
def _mix16(u8, at, s):
    return _fold(load8(u8, at) ^ load8(SECRET, s), load8(u8, at + 8) ^ load8(SECRET, s + 8))


@kernel(counted=False)
def _short(u8, lo, n):
    """Lengths 0 to 16."""
    if n > 8:
        low = load8(u8, lo) ^ (load8(SECRET, 24) ^ load8(SECRET, 32))
        high = load8(u8, lo + n - 8) ^ (load8(SECRET, 40) ^ load8(SECRET, 48))
        return _avalanche(U64(n) + _swap64(low) + high + _fold(low, high))
    if n >= 4:
        x = (_le32(u8, lo + n - 4) + (_le32(u8, lo) << U64(32))) ^ (load8(SECRET, 8) ^ load8(SECRET, 16))
        x ^= _rotl(x, 49) ^ _rotl(x, 24)
        x *= PRIME_MX2
        x ^= (x >> U64(35)) + U64(n)
        x *= PRIME_MX2
        return x ^ (x >> U64(28))
    if n > 0:
        combined = (U64(u8[lo]) << U64(16)) | (U64(u8[lo + (n >> 1)]) << U64(24)) | U64(u8[lo + n - 1])
        combined |= U64(n) << U64(8)
        return _avalanche64(combined ^ (_le32(SECRET, 0) ^ _le32(SECRET, 4)))
    return _avalanche64(load8(SECRET, 56) ^ load8(SECRET, 64))


@kernel(counted=False)
def _middle(u8, lo, n):
    """Lengths 17 to 240."""
    acc = U64(n) * PRIME64_1
    if n <= 128:
        pairs = (n - 1) // 32  # 0 to 3: the 16-byte pairs from both ends
        for k in range(pairs, -1, -1):
            acc += _mix16(u8, lo + 16 * k, 32 * k)
            acc += _mix16(u8, lo + n - 16 * (k + 1), 32 * k + 16)
        return _avalanche(acc)
    for k in range(8):
        acc += _mix16(u8, lo + 16 * k, 16 * k)
    acc = _avalanche(acc)
    for k in range(8, n // 16):
        acc += _mix16(u8, lo + 16 * k, 16 * (k - 8) + MIDSIZE_START)
    acc += _mix16(u8, lo + n - 16, SECRET_SIZE_MIN - MIDSIZE_LAST)
    return _avalanche(acc)


@kernel(counted=False, inlined=True)
def _stripe(acc, u8, at, s):
    for i in range(8):
        value = load8(u8, at + 8 * i)
        key = value ^ load8(SECRET, s + 8 * i)
        acc[i ^ 1] += value
        acc[i] += (key & M32) * (key >> U64(32))


@kernel
def _long(u8, lo, n):
    """Lengths over 240: stripes of 64 bytes into 8 accumulators, scrambled every 1024 bytes."""
    acc = np.array([PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3, PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1])
    block = STRIPE * STRIPES_PER_BLOCK
    blocks = (n - 1) // block
    for b in range(blocks):
        for s in range(STRIPES_PER_BLOCK):
            _stripe(acc, u8, lo + b * block + s * STRIPE, s * 8)
        for i in range(8):
            a = acc[i]
            a ^= a >> U64(47)
            a ^= load8(SECRET, SECRET_SIZE - STRIPE + 8 * i)
            acc[i] = a * PRIME32_1
    for s in range(((n - 1) - block * blocks) // STRIPE):
        _stripe(acc, u8, lo + blocks * block + s * STRIPE, s * 8)
    _stripe(acc, u8, lo + n - STRIPE, SECRET_SIZE - STRIPE - LASTACC_START)
    result = U64(n) * PRIME64_1
    for k in range(4):
        result += _fold(
            acc[2 * k] ^ load8(SECRET, MERGEACCS_START + 16 * k),
            acc[2 * k + 1] ^ load8(SECRET, MERGEACCS_START + 16 * k + 8),
        )
    return _avalanche(result)


@kernel
def xxh3(u8, lo, n):
    """XXH3_64bits of u8[lo:lo + n] (seed 0). The caller checks lo + n <= len(u8)."""
    if n <= 16:
        return _short(u8, lo, n)
    if n <= 240:
        return _middle(u8, lo, n)
    return _long(u8, lo, n)


LAST_BYTE_PRIME = U64(0x6B9083D9)  # format.cc ModifyChecksumForLastByte


@kernel
def block_checksums(u8, offsets, sizes):
    """RocksDB's kXXH3 checksum of each block at u8[offsets[b]:offsets[b] + sizes[b]] and the compression type
    byte after it (format.cc ComputeBuiltinChecksum: the hash's low 32 bits of all but that byte, xored with it
    times a prime), and the checksum stored after them (-1 where the block runs past u8)."""
    computed, stored = np.zeros(len(offsets), np.int64), np.full(len(offsets), -1, np.int64)
    for b in range(len(offsets)):
        at, n = offsets[b], sizes[b]
        if at < 0 or n < 0 or at > len(u8) - 5 or n > len(u8) - 5 - at:  # (no sum: a crafted handle may wrap it)
            continue
        h = (xxh3(u8, at, n) & M32) ^ ((U64(u8[at + n]) * LAST_BYTE_PRIME) & M32)
        computed[b] = np.int64(h)
        stored[b] = np.int64(_le32(u8, at + n + 1))
    return computed, stored
