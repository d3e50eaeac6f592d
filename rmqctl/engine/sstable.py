"""RocksDB's block-based table files (.sst) read in compiled code: a block's contents (stored, or LZ4; a
ZSTD block is decoded by the caller, rmqctl.sstable), its
prefix-compressed entries, and an index block's data block handles (RocksDB table/format.cc,
table/block_based/block_builder.cc, data_block_footer.cc, util/compression.cc).

What a file holds, in file order, every version of a key it keeps: never what the database answers for a key
(that is RocksDB's merge of its files and memtables). rmqctl.sstable says where this is enough. Every kernel
checks every length against its buffer and answers "cannot read" (a negative code) for anything else: a
block compressed another way, a data block footer with features this reader does not know, a short varint.
"""

from __future__ import annotations

import numpy as np

from .kernels import LZ4_LIBRARY, kernel, move_bytes, native_lz4

NO_COMPRESSION, LZ4, LZ4HC, ZSTD = 0, 4, 5, 7  # CompressionType values in a block's trailer
BLOCK_SCRATCH = 1 << 16  # the first size of what a block is decoded into
# LZ4 makes at most ~255 bytes of each byte it reads (a match length's extra bytes add 255 each): a block
# claiming more is refused before anything is allocated for it
LZ4_MOST_RATIO = 256
TRAILER = 5  # BlockBasedTable::kBlockTrailerSize: compression type, then a 4-byte checksum
HASH_INDEX_BIT, UNIFORM_BIT, SEPARATED_KV_BIT = 1 << 31, 1 << 29, 1 << 28  # DataBlockFooter's packed bits
MAX_RESTARTS = (1 << 28) - 1
INTERNAL_BYTES = 8  # an internal key's trailer: (sequence << 8 | type), little-endian
# ValueType (db/dbformat.h): what a data entry is
TYPE_DELETION, TYPE_VALUE, TYPE_SINGLE_DELETION = 0x0, 0x1, 0x7
# the codes a kernel answers besides its result (DECODED_BY_CALLER: a ZSTD block, rmqctl.sstable's to decode)
READ, UNREADABLE, UNKNOWN_TYPE, DECODED_BY_CALLER = 0, -1, -2, -3


@kernel(counted=False)
def varint(u8, at, end):
    """(the varint64 at u8[at], where the next field starts), or (0, -1) when it does not end by `end`."""
    value, shift = 0, 0
    while at < end and shift <= 63:
        b = u8[at]
        at += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, at
        shift += 7
    return 0, -1


@kernel(counted=False)
def le32(u8, at):
    return u8[at] | (u8[at + 1] << 8) | (u8[at + 2] << 16) | (np.int64(u8[at + 3]) << 24)


@kernel(counted=False)
def _lz4_length(src, ip, hi, n):
    """A token's 4-bit length `n`, and when it is 15 the bytes after it added while they are 255: (the length,
    where the sequence goes on; -1 when it runs past hi)."""
    if n < 15:
        return n, ip
    while ip < hi:
        b = src[ip]
        ip += 1
        n += b
        if b != 255:
            return n, ip
    return n, -1


@kernel(counted=False)
def _lz4(src, lo, hi, dst, want):
    """LZ4's block format decoded from src[lo:hi] into dst[:want]; whether it makes exactly `want` bytes."""
    ip, op = lo, 0
    while ip < hi:
        token = src[ip]
        ip += 1
        literals, ip = _lz4_length(src, ip, hi, token >> 4)
        if ip < 0 or ip + literals > hi or op + literals > want:
            return False
        move_bytes(dst, op, src, ip, literals)
        ip += literals
        op += literals
        if ip == hi:  # the last sequence holds only literals
            break
        if ip + 2 > hi:
            return False
        back = src[ip] | (np.int64(src[ip + 1]) << 8)
        ip += 2
        if back == 0 or back > op:
            return False
        length, ip = _lz4_length(src, ip, hi, token & 15)
        length += 4
        if ip < 0 or op + length > want:
            return False
        if back >= length:
            move_bytes(dst, op, dst, op - back, length)
        else:
            for k in range(length):  # (overlapping: a byte at a time)
                dst[op + k] = dst[op + k - back]
        op += length
    return op == want


@kernel(counted=False)
def _lz4_linked(src, lo, hi, dst, want):
    """_lz4 by liblz4 (kernels.native_lz4): whether it makes exactly `want` bytes of src[lo:hi] in dst[:want].
    liblz4 reads and writes only within the bounds it is given, so they are checked here first (its sizes are
    int32s: a larger one would wrap)."""
    if not (0 <= lo <= hi <= len(src) and hi - lo < 1 << 31 and 0 <= want <= len(dst) and want < 1 << 31):
        return False
    return native_lz4(src.ctypes.data + lo, dst.ctypes.data, hi - lo, want) == want


lz4_block = _lz4_linked if LZ4_LIBRARY else _lz4  # the decoder blocks are read with


@kernel
def _decoded(u8, offset, size, scratch):
    """The contents of the block at u8[offset:offset + size], decoded or copied into `scratch` (grown when
    short): (code, contents, scratch)."""
    if (
        offset < 0 or size < 0 or offset > len(u8) - TRAILER or size > len(u8) - TRAILER - offset
    ):  # (no sum: it may wrap)
        return UNREADABLE, scratch[:0], scratch
    kind = u8[offset + size]
    want, at = size, offset
    if kind == LZ4 or kind == LZ4HC:
        want, at = varint(u8, offset, offset + size)  # format_version >= 2: the size before the LZ4 block
    elif kind != NO_COMPRESSION:
        return DECODED_BY_CALLER if kind == ZSTD else UNREADABLE, scratch[:0], scratch
    # (a varint may hold 64 bits: a negative size, or one LZ4 cannot make of this many bytes, is no block's)
    if at < 0 or not 0 <= want < 1 << 31 or (kind != NO_COMPRESSION and want > LZ4_MOST_RATIO * (offset + size - at)):
        return UNREADABLE, scratch[:0], scratch
    if want > len(scratch):
        scratch = np.empty(2 * want, np.uint8)
    if kind == NO_COMPRESSION:
        move_bytes(scratch, 0, u8, offset, size)
    elif not lz4_block(u8, at, offset + size, scratch, want):
        return UNREADABLE, scratch[:0], scratch
    return READ, scratch[:want], scratch


@kernel(counted=False)
def entries_end(block):
    """Where a block's entries end (its restart array begins), -1 for a footer with a feature not read here. A
    data block of kDataBlockBinaryAndHash (RocketMQ's option factories set it) keeps its hash map between the
    restart array and the footer: its buckets, then their count as a uint16."""
    n = len(block)
    if n < 4:
        return -1
    packed = le32(block, n - 4)
    if packed & SEPARATED_KV_BIT:
        return -1
    tail = n - 4
    if packed & HASH_INDEX_BIT:
        buckets = block[tail - 2] | (np.int64(block[tail - 1]) << 8) if tail >= 2 else 0
        if buckets == 0 or buckets + 2 > tail:
            return -1
        tail -= 2 + buckets
    restarts = packed & ~(HASH_INDEX_BIT | UNIFORM_BIT)
    end = tail - 4 * restarts
    return end if 0 < restarts <= MAX_RESTARTS and end >= 0 else -1


@kernel
def _block_items(block):
    """Every (key, value) of a metaindex or properties block: (code, keys end to end, rows (key_lo, key_hi,
    value_lo, value_hi)), values as spans of the block."""
    end = entries_end(block)
    cap = max(16, len(block) // 3)  # (an entry takes 3 bytes at least)
    keys, key = np.empty(max(len(block), 64), np.uint8), np.empty(len(block), np.uint8)
    spans = np.empty((cap, 4), np.int64)
    at, n, used, key_len = 0, 0, 0, 0
    while 0 <= at < end and n < cap:
        at, key_len, value_at, length = next_entry(block, at, end, key, key_len, 0)
        if at < 0:
            break
        if used + key_len > len(keys):
            grown = np.empty(2 * (used + key_len), np.uint8)
            move_bytes(grown, 0, keys, 0, used)
            keys = grown
        move_bytes(keys, used, key, 0, key_len)
        spans[n, 0], spans[n, 1], spans[n, 2], spans[n, 3] = used, used + key_len, value_at, value_at + length
        used += key_len
        n += 1
    code = READ if at == end else UNREADABLE
    return code, keys, spans[:n]


@kernel(counted=False, inlined=True)
def _spans(at, key_len, value_len, end):
    """Whether an entry's key of key_len bytes, then its value of value_len, lie in [at, end) (0 <= at <= end):
    lengths compared, never summed, since a crafted varint64 may wrap a sum past the check, or be negative."""
    return 0 <= key_len <= end - at and 0 <= value_len <= end - at - key_len


@kernel
def _index_handles(block, delta_encoded):
    """The data block handles of an index block (format_version >= 4: values delta-encoded without their
    lengths when the index's property says so): (code, rows (offset, size))."""
    end = entries_end(block)
    cap = max(16, len(block) // 2)
    handles = np.empty((cap, 2), np.int64)
    offsets, sizes = handles[:, 0], handles[:, 1]
    if end < 0:
        return UNREADABLE, handles[:0]
    at, n = 0, 0
    while at < end:
        shared, at = varint(block, at, end)
        non_shared, at = varint(block, at, end) if at >= 0 else (0, -1)
        length = 0
        if not delta_encoded and at >= 0:
            length, at = varint(block, at, end)
        if at < 0 or shared < 0 or not _spans(at, non_shared, length, end) or n == cap:
            return UNREADABLE, handles[:0]
        value_end = end if delta_encoded else at + non_shared + length
        at += non_shared
        if delta_encoded and shared > 0 and n > 0:  # IndexValue: the size's change, the offset follows on
            change, at = varint(block, at, value_end)
            offsets[n] = offsets[n - 1] + sizes[n - 1] + TRAILER
            sizes[n] = sizes[n - 1] + ((change >> 1) ^ -(change & 1))
        else:
            offsets[n], at = varint(block, at, value_end)
            sizes[n], at = varint(block, at, value_end) if at >= 0 else (0, -1)
        if at < 0:
            return UNREADABLE, handles[:0]
        if not delta_encoded:
            at = value_end
        n += 1
    return READ, handles[:n]


@kernel
def meta_block(u8, offset, size, index, delta_encoded):
    """A metaindex, properties or index block at u8[offset:offset + size] (stored or LZ4, its trailer after it)
    read in one call, so that a table's metadata costs one kernel: (code, its contents, keys end to end, rows).
    A metaindex or properties block's rows are its pairs (_block_items: spans of the keys and the contents);
    an index block's (`index`) its data block handles (_index_handles)."""
    code, block, _ = _decoded(u8, offset, size, np.empty(0, np.uint8))
    if code == READ and index:
        code, rows = _index_handles(block, delta_encoded)
        return code, block, block[:0], rows
    if code == READ:
        code, keys, rows = _block_items(block)
        return code, block, keys, rows
    return code, block, block[:0], np.empty((0, 4), np.int64)


@kernel
def block_at(u8, b, offsets, sizes, decoded, decoded_lo, decoded_hi, scratch):
    """Data block b of a table file u8 (at offsets[b], sizes[b]; those of decoded_lo[b] >= 0 decoded by the caller:
    decoded[decoded_lo[b]:decoded_hi[b]], a compression not decoded here): (code, its contents, where its
    entries end, scratch: what it is decoded into, grown when short)."""
    if decoded_lo[b] >= 0:
        code, block = READ, decoded[decoded_lo[b] : decoded_hi[b]]
    else:
        code, block, scratch = _decoded(u8, offsets[b], sizes[b], scratch)
    end = entries_end(block) if code == READ else -1
    return (code if end >= 0 else UNREADABLE), block, end, scratch


@kernel(counted=False, inlined=True)
def next_entry(block, at, end, key, key_len, least):
    """The entry at block[at] of a block whose entries end at `end` and whose keys are `least` bytes at least,
    its key made in `key` from the one before it (key[:key_len]; `key` as long as the block at least: a key
    since the last restart point is made of that many of its bytes at most): (where the next entry starts, -1
    when this one does not decode; the key's length; where its value starts; the value's length). A data
    block's key is an internal key: the user key, then 8 bytes whose first is its ValueType."""
    shared, at = varint(block, at, end)
    non_shared, at = varint(block, at, end) if at >= 0 else (0, -1)
    length, at = varint(block, at, end) if at >= 0 else (0, -1)
    if (
        at < 0
        or not 0 <= shared <= key_len
        or not _spans(at, non_shared, length, end)
        or shared + non_shared < least
        or shared + non_shared > len(key)
    ):
        return -1, 0, 0, 0
    move_bytes(key, shared, block, at, non_shared)
    at += non_shared
    return at + length, shared + non_shared, at, length
