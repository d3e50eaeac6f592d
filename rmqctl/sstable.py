"""A RocksDB database's table files (.sst) read directly, in compiled code (engine/sstable.py), for one use:
verify's digest of the 5.4 message store's index records (checks/rocksdbstore.py, engine.table_index_digest).
That takes every value a column family's table files hold, in file order and with any older version of a key
they still keep; that is what a digest needs (it proves that the database's records are the ones the broker builds, or proves
nothing, and then RocksDB's own reading follows), never what the database answers for a key.

It reads the block-based table of RocksDB's format versions 2 to 6 (table/format.cc): the footer, the
metaindex, the properties, a binary-search index and the data blocks, stored or compressed with LZ4 or ZSTD
(what RocketMQ's option factories set: LZ4, and ZSTD at the bottommost level). Anything else
(another magic number or format version, a partitioned or hashed index, another compression, a compression
dictionary, merge operands, separated values, a block that does not decode, entries that do not add up to the
table's own count, a block whose checksum RocksDB's reader would refuse) is Unreadable: the caller uses RocksDB,
which names the damage. Every block read is verified as RocksDB verifies it (CRC32c, xxHash, xxHash64 or XXH3,
format 6's context modifier and footer checksum).
"""

from __future__ import annotations

import dataclasses
import mmap
import struct
from pathlib import Path
from typing import Iterator

import crc32c
import numpy as np
import xxhash
import zstandard

from . import engine as E

MAGIC = 0x88E241B785F4CFF7  # kBlockBasedTableMagicNumber
FORMAT_VERSIONS = range(2, 7)  # 2: LZ4 blocks carry their size; 6: the footer's metaindex size, no index handle
FOOTER = 53  # checksum type, 40 bytes of part 2, format_version, magic
EXTENDED_MAGIC = b"\x3e\x00\x7a\x00"
BINARY_SEARCH_INDEX = 0  # BlockBasedTableOptions::kBinarySearch
# data blocks decoded per call of the kernel: up to this many stored bytes of them (each call hands the GIL back
# and forth with verify's other threads, and its ZSTD blocks are decoded into memory first)
GROUP_BYTES = 4 << 20


MASK32 = (1 << 32) - 1
CRC32C_MASK_DELTA = 0xA282EAD8  # crc32c::Mask: rotated right 15 bits, plus this
LAST_BYTE_PRIME = 0x6B9083D9  # format.cc ModifyChecksumForLastByte (XXH3: the last byte outside the hash)


def _xxh3(data) -> int:
    return (xxhash.xxh3_64_intdigest(data[:-1]) & MASK32) ^ ((data[-1] * LAST_BYTE_PRIME) & MASK32)


def _crc32c(data) -> int:
    c = crc32c.crc32c(data)
    return (((c >> 15) | (c << 17)) + CRC32C_MASK_DELTA) & MASK32


XXH3 = 4  # ChecksumType kXXH3
# ChecksumType (a table's footer) -> format.cc ComputeBuiltinChecksum of a block and the byte after it (its
# compression type); kNoChecksum (0): none to verify, as RocksDB verifies none
CHECKSUMS = {1: _crc32c, 2: xxhash.xxh32_intdigest, 3: lambda data: xxhash.xxh64_intdigest(data) & MASK32, 4: _xxh3}


class Unreadable(Exception):
    """A table file this reader does not read (the caller reads the database through RocksDB instead)."""


@dataclasses.dataclass(frozen=True)
class Table:
    """One table file: its column family, its entry count (rocksdb.num.entries) and its data blocks."""

    path: Path
    family: str
    entries: int
    offsets: np.ndarray
    sizes: np.ndarray
    checksum: int  # its ChecksumType
    context: int  # format_version 6's base_context_checksum (0: none)


def _mapped(path: Path) -> np.ndarray:
    try:
        with open(path, "rb") as f:
            return np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), np.uint8)
    except (OSError, ValueError) as e:  # (ValueError: an empty file cannot be mapped)
        raise Unreadable(f"{path}: {e}") from None


def _context_modifier(context: int, offsets):
    """format_version 6's ChecksumModifierForContext for blocks at `offsets` (an int or an array; 0 without a
    base context checksum): what the stored checksum has added to the computed one."""
    return (context ^ (((offsets & MASK32) + (offsets >> 32)) & MASK32)) if context else offsets * 0


def _verified(u8: np.ndarray, offsets: np.ndarray, sizes: np.ndarray, checksum: int, context: int):
    """Unreadable unless each block at u8[offset:offset + size] has the checksum RocksDB's reader verifies
    (reader_common.cc VerifyBlockChecksum: of the block and its compression type, less format 6's modifier
    for its place in the file, ChecksumModifierForContext). XXH3, RocksDB's default, in compiled code for a
    batch of data blocks; one block (a table's metadata: no kernel loaded for it) and the other types a call of
    their C code per block."""
    if checksum == 0:
        return
    modifier = _context_modifier(context, offsets)
    if checksum == XXH3 and len(offsets) > 1:
        computed, stored = E.xxh3_block_checksums(u8, offsets, sizes)
    else:
        computed, stored, mv = np.zeros_like(offsets), np.full_like(offsets, -1), memoryview(u8)
        for b, (offset, size) in enumerate(zip(offsets.tolist(), sizes.tolist())):
            end = offset + size
            if 0 <= offset and 0 <= size and end + E.SST_TRAILER <= len(u8):
                computed[b] = CHECKSUMS[checksum](mv[offset : end + 1])
                stored[b] = int.from_bytes(mv[end + 1 : end + 5], "little")
    bad = np.flatnonzero((stored < 0) | (((stored - modifier) & MASK32) != computed))
    if len(bad):
        raise Unreadable(f"the block at {offsets[bad[0]]} fails its checksum, or runs past the file")


def _inside(n: int, offsets: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Whether each block (and its trailer) lies inside a file of n bytes, worked out so that a crafted handle
    (a varint holds 64 bits) cannot wrap the sum and pass."""
    return (offsets >= 0) & (sizes >= 0) & (offsets <= n - E.SST_TRAILER) & (sizes <= n - E.SST_TRAILER - offsets)


def _meta_block(u8: np.ndarray, offset: int, size: int, index: bool = False, delta_encoded: bool = False):
    """A metaindex, properties or index block read (engine.sst_meta_block; its checksum verified by the caller):
    (its contents, keys, rows). A ZSTD one (an index block is compressed as the data is) is decoded here and
    read as a stored block."""
    if not _inside(len(u8), np.array([offset]), np.array([size]))[0]:
        raise Unreadable(f"the block at {offset} runs past the file")
    code, contents, keys, rows = E.sst_meta_block(u8, offset, size, index, delta_encoded)
    if code == E.SST_DECODED_BY_CALLER:
        stored = np.frombuffer(_zstd(u8, offset, size) + bytes(E.SST_TRAILER), np.uint8)  # (its type byte: 0)
        code, contents, keys, rows = E.sst_meta_block(stored, 0, len(stored) - E.SST_TRAILER, index, delta_encoded)
    if code != E.SST_READ:
        raise Unreadable(f"the block at {offset} does not decode")
    return contents, keys, rows


def _items(u8: np.ndarray, offset: int, size: int) -> dict[bytes, bytes]:
    """The (key, value) pairs of a metaindex or properties block."""
    block, keys, rows = _meta_block(u8, offset, size)
    return {keys[a:b].tobytes(): block[c:d].tobytes() for a, b, c, d in rows.tolist()}


def _handle(raw: bytes, at: int = 0) -> tuple[int, int, int]:
    """The block handle (two varint64s) at raw[at:]: (offset, size, where the bytes after it start)."""
    u8 = np.frombuffer(raw, np.uint8)
    offset, at = E.sst_varint(u8, at, len(u8))
    size, at = E.sst_varint(u8, at, len(u8)) if at >= 0 else (0, -1)
    if at < 0:
        raise Unreadable("a block handle does not decode")
    return offset, size, at


def _number(props: dict[bytes, bytes], name: bytes) -> int:
    """A property written as a varint64 (0 when the table has none)."""
    raw = np.frombuffer(props.get(name, b"\0"), np.uint8)
    value, at = E.sst_varint(raw, 0, len(raw))
    if at < 0:
        raise Unreadable(f"property {name.decode()} does not decode")
    return value


def read_table(path: Path) -> Table:
    """The table file's column family, entry count and data block handles (Unreadable: not one read here)."""
    u8 = _mapped(path)
    n = len(u8)
    if n < FOOTER or struct.unpack_from("<Q", u8, n - 8)[0] != MAGIC:
        raise Unreadable(f"{path}: not a block-based table")
    version = struct.unpack_from("<I", u8, n - 12)[0]
    if version not in FORMAT_VERSIONS:
        raise Unreadable(f"{path}: format_version {version}")
    checksum, part2, index, context = int(u8[n - FOOTER]), n - FOOTER + 1, None, 0
    if checksum != 0 and checksum not in CHECKSUMS:
        raise Unreadable(f"{path}: checksum type {checksum}")
    if version >= 6:
        if bytes(u8[part2 : part2 + 4]) != EXTENDED_MAGIC:
            raise Unreadable(f"{path}: footer without its extended magic")
        stored, context, meta_size = struct.unpack_from("<III", u8, part2 + 4)
        _footer_verified(u8, checksum, stored, context, path)
        meta = (n - FOOTER - E.SST_TRAILER - meta_size, meta_size)
    else:
        handles = bytes(u8[part2 : part2 + 40])  # the metaindex's handle, then the index's
        *meta, after = _handle(handles)
        index = _handle(handles, after)[:2]
    _verified(u8, np.array([meta[0]]), np.array([meta[1]]), checksum, context)
    blocks = _items(u8, *meta)
    if b"rocksdb.compression_dict" in blocks or b"rocksdb.properties" not in blocks:
        raise Unreadable(f"{path}: a compression dictionary, or no properties")
    if index is None:
        if b"rocksdb.index" not in blocks:
            raise Unreadable(f"{path}: no index block")
        index = _handle(blocks[b"rocksdb.index"])[:2]
    _verified(u8, np.array([index[0]]), np.array([index[1]]), checksum, context)
    properties = _handle(blocks[b"rocksdb.properties"])[:2]
    _verified(u8, np.array([properties[0]]), np.array([properties[1]]), checksum, context)
    props = _items(u8, *properties)
    index_type = props.get(b"rocksdb.block.based.table.index.type", b"\0\0\0\0")
    if (
        len(index_type) != 4
        or struct.unpack("<I", index_type)[0] != BINARY_SEARCH_INDEX
        or _number(props, b"rocksdb.merge.operands")
        or _number(props, b"rocksdb.separate.key.value.in.data.block")
        or b"rocksdb.column.family.name" not in props
    ):
        raise Unreadable(f"{path}: an index, merge operands or values not read here")
    delta_encoded = bool(_number(props, b"rocksdb.index.value.is.delta.encoded"))
    handles = _meta_block(u8, *index, index=True, delta_encoded=delta_encoded)[2]
    offsets, sizes = np.ascontiguousarray(handles[:, 0]), np.ascontiguousarray(handles[:, 1])
    if not _inside(n, offsets, sizes).all():
        raise Unreadable(f"{path}: the index names a data block past the file's end")
    family = props[b"rocksdb.column.family.name"].decode("utf-8", "replace")
    # a range deletion is counted among the entries, and kept in a block of its own (never read: a digest
    # may take the values it deletes)
    entries = _number(props, b"rocksdb.num.entries") - _number(props, b"rocksdb.num.range-deletions")
    return Table(path, family, entries, offsets, sizes, checksum, context)


def _footer_verified(u8: np.ndarray, checksum: int, stored: int, context: int, path: Path):
    """format_version 6's footer checksum (format.cc Footer::DecodeFrom): of the footer with the field zeroed,
    plus the context modifier for the footer's offset; its base context checksum never makes the modifier 0."""
    if checksum == 0:
        return
    at = len(u8) - FOOTER
    footer = bytearray(u8[at:])
    footer[5:9] = bytes(4)
    if context == 0 or (CHECKSUMS[checksum](bytes(footer)) + _context_modifier(context, at)) & MASK32 != stored:
        raise Unreadable(f"{path}: the footer fails its checksum")


def _zstd_blocks(u8: np.ndarray, offsets: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, ...]:
    """The ZSTD blocks among these decoded here (the kernel decodes the others): their contents end to end,
    and where each block's are (-1: a block the kernel decodes)."""
    lo, hi = np.full(len(offsets), -1, np.int64), np.full(len(offsets), -1, np.int64)
    parts, at = [], 0
    inside = _inside(len(u8), offsets, sizes)  # (read_table refused the others)
    kinds = u8[np.where(inside, offsets + sizes, 0)]  # each block's compression type: its trailer's first byte
    for b in np.flatnonzero(inside & (kinds == E.SST_ZSTD)).tolist():
        parts.append(_zstd(u8, int(offsets[b]), int(sizes[b])))
        lo[b], hi[b] = at, at + len(parts[-1])
        at = hi[b]
    return np.frombuffer(b"".join(parts), np.uint8), lo, hi


def _zstd(u8: np.ndarray, offset: int, size: int) -> bytes:
    """A ZSTD block's contents (zstandard): format_version >= 2 puts the size before the ZSTD frame."""
    block = u8[offset : offset + size]
    want, start = E.sst_varint(block, 0, len(block))
    frame = block[max(start, 0) :].tobytes()
    try:  # (a frame that says its size is decoded to that size whatever the cap: it must say `want`)
        declared = zstandard.frame_content_size(frame)
        contents = None
        # (a varint64 may be negative, or claim more than any block: RocksDB reads a varint32)
        if 0 <= want < 1 << 31 and declared in (want, -1):
            contents = zstandard.ZstdDecompressor().decompress(frame, max_output_size=want)
    except (zstandard.ZstdError, MemoryError):
        contents = None
    if start < 0 or contents is None or len(contents) != want:
        raise Unreadable(f"the ZSTD block at {offset} does not decode")
    return contents


def groups(table: Table) -> Iterator[tuple]:
    """The table's data blocks, GROUP_BYTES of them at a time (one block at least), as a compiled reader of them
    takes them (the file's bytes, the blocks' offsets and sizes, and the ZSTD ones among them decoded:
    _zstd_blocks)."""
    u8 = _mapped(table.path)
    ends = np.cumsum(table.sizes)
    lo = 0
    while lo < len(table.offsets):
        hi = max(lo + 1, int(np.searchsorted(ends, ends[lo] - table.sizes[lo] + GROUP_BYTES, "right")))
        offsets, sizes, lo = table.offsets[lo:hi], table.sizes[lo:hi], hi
        _verified(u8, offsets, sizes, table.checksum, table.context)
        yield (u8, offsets, sizes, *_zstd_blocks(u8, offsets, sizes))


def check_count(table: Table, counted: int):
    """Unreadable unless a reading of the table's blocks met as many entries as its properties count."""
    if counted != table.entries:
        raise Unreadable(f"{table.path}: {counted} entries where its properties count {table.entries}")
