"""Compiled loops (numba) for the paths that touch every record of a commitlog: one pass over the bytes in
machine code instead of a Python step or a dozen numpy passes per record. Kernels run without the GIL
(threads scale on them) and are cached on disk after their first compilation.

The layouts the kernels read come from rmqctl.schema (offsets are computed from its declarations at import
and become compile-time constants); the broker rules they apply are those of rmqctl.dispatch, which stays
the reference the tests compare the kernels with. Kernels read untrusted bytes: every read is checked
against the caller's limit explicitly (numba does not bounds-check).

The shared pieces are here: big-endian (Java) integers read and written, a hardware-accelerated CRC-32 callable
from a kernel (ISA-L's, else libdeflate's, else zlib's), Java's String.hashCode over the UTF-16
code units of UTF-8 bytes, and the lookup of properties (MessageDecoder.string2messageProperties).

numba itself loads with the first kernel a process calls, not with the modules that declare them (`Lazy`):
importing numba and its compiler registries takes ~0.5 s, which a command that runs no kernel (`info`,
`locate`, `--help`) would pay for nothing.
"""

from __future__ import annotations

import ctypes
import gc
import hashlib
import importlib
import os
import sys
import threading
import types as pytypes
from pathlib import Path

import numpy as np

# numba's and llvmlite's modules the kernels' intrinsics are written with, set by load_numba
types = ir = None
_declared: list["Lazy"] = []  # every numba object of the package, in declaration order
_loading = threading.RLock()
_loaded = False
_after_load: list = []  # callbacks (when_loaded)


class Lazy:
    """A numba object (a kernel, an intrinsic, an external function) declared at import and made when the
    process first needs numba: calling it, or asking it for any attribute, loads numba once (load_numba).
    Kernels compile against the made objects (load_numba puts them in place of their Lazy in rmqctl's
    modules), so a Lazy is only ever called from Python."""

    def __init__(self, make, name: str, module: str | None):
        self._make, self._value, self.__name__, self.declared_in = make, None, name, module
        self.entry = None  # its ahead-of-time compiled entry, when engine.aot installed one
        _declared.append(self)

    def resolve(self):
        if not _loaded:
            load_numba()
        return self._value

    def __call__(self, *args):
        if self.entry is not None and not _loaded:
            return self.entry(*args)
        return self.resolve()(*args)

    def __getattr__(self, name: str):
        if name.startswith("__"):  # (protocol probes: copy, pickle, inspect)
            raise AttributeError(name)
        return getattr(self.resolve(), name)

    def __repr__(self):
        return f"<{self.__name__}: {'made' if self._value is not None else 'numba not loaded yet'}>"


def numba_object(make, name: str, module: str | None = None):
    """make() now if numba is loaded, else a Lazy that makes it with numba."""
    with _loading:
        return make() if _loaded else Lazy(make, name, module)


def made(value):
    """What a (possibly Lazy) object is once numba is loaded."""
    return value._value if isinstance(value, Lazy) else value


def when_loaded(callback):
    """Call `callback()` once numba is loaded (now, if it is): the command line freezes what loaded then."""
    with _loading:
        if _loaded:
            callback()
        else:
            _after_load.append(callback)


def load_numba():
    """Import numba, link the CRC library, make every declared object (in declaration order: a kernel's
    callees before it), and put them in place of their Lazy in every loaded rmqctl module, then load numba's
    typing and lowering registries (~0.3 s, paid here rather than in the first scan's time). The cyclic
    collector pauses meanwhile: the load makes some 10^5 long-lived objects and no garbage."""
    global _loaded, types, ir
    with _loading:
        if _loaded:
            return
        collecting = gc.isenabled()
        gc.disable()
        try:
            # (start-up: numba loads here, once, and only in processes that run a kernel)
            import llvmlite.binding as llvm
            import llvmlite.ir
            import numba
            from numba.core.compiler_lock import global_compiler_lock
            from numba.core.registry import cpu_target

            types, ir = numba.types, llvmlite.ir
            for path in filter(None, (CRC32_PATH, LZ4_PATH)):
                llvm.load_library_permanently(path)
            for lazy in _declared:
                if lazy._value is None:
                    lazy._value = lazy._make()
            for module in list(sys.modules.values()):
                if getattr(module, "__name__", "").startswith("rmqctl"):
                    space = module.__dict__
                    for key, value in list(space.items()):
                        if isinstance(value, Lazy):
                            space[key] = value._value
            # under numba's own compiler lock, as numba refreshes inside every compile or cache load: a scan
            # thread already calling a made kernel would otherwise advance the same registry generators at once
            # ("generator already executing")
            with global_compiler_lock:
                cpu_target.target_context.refresh()
            # numba's typing of an array argument asks whether it is a masked array, which imports numpy.ma
            # (lazily loaded by numpy 2): ~20 ms, paid here rather than in the first kernel call's time
            import numpy.ma  # noqa: F401

            _loaded = True
        finally:
            if collecting:
                gc.enable()
        for callback in _after_load:
            callback()


def _drop_stale_caches(linked: str, here: Path = Path(__file__).parent):
    """numba keys a cached kernel on its own module's file, but compiles into it the kernels it calls from
    other modules and the schema constants it reads: after a change to those it would go on running the
    old code. One stamp over this package's sources and the schema empties the cache when any changes, and
    so does a change of the libraries `linked` into them (a machine that gains or loses ISA-L, libdeflate or
    liblz4).
    Returns the stamp (None when the sources are not files), which engine.aot's module is keyed on too."""
    sources = sorted(here.glob("*.py")) + [here.parent / name for name in ("schema.py", "rules.py", "javacompat.py")]
    try:
        stamp = hashlib.sha256(b"".join(p.read_bytes() for p in sources) + linked.encode()).hexdigest()
    except OSError:  # imported from a zip (spark-submit --py-files): nothing on disk to cache next to
        return None
    cache = here / "__pycache__"
    marker = cache / "rmqctl-native.stamp"
    try:
        if marker.read_text() == stamp:
            return stamp
    except OSError:
        pass
    try:
        for p in cache.glob("*.nb[ic]"):
            p.unlink()
        cache.mkdir(exist_ok=True)
        marker.write_text(stamp)
    except OSError:
        pass  # a read-only installation: numba caches in its user-wide directory, which a reinstall renews
    return stamp


def available_cores() -> int:
    """The CPUs this process may run on: how many threads the kernels get by default."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _jit(fn, counted: bool = True, inlined: bool = False):
    import numba  # (start-up: called from load_numba, or once it ran)

    options = dict(
        nogil=True,
        error_model="numpy",
        **({} if counted else {"_nrt": False}),
        **({"inline": "always"} if inlined else {}),
    )
    try:
        return numba.njit(cache=True, **options)(fn)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        return numba.njit(**options)(fn)


def kernel(fn=None, *, counted: bool = True, inlined: bool = False):
    """A compiled function: no GIL, cached next to its module, no Python exceptions on integer division.
    Where no cache directory is writable (a read-only installation without a writable home or
    NUMBA_CACHE_DIR) it is compiled afresh in every process instead. `counted=False` compiles it without
    reference counting, for a per-record loop that allocates nothing (views of its arguments at most):
    counted, every call it makes with an array costs two atomic operations. `inlined=True` compiles it into
    each kernel that calls it (numba's own inlining; LLVM leaves calls between kernels as calls), for a
    small step a line writer takes dozens of times per record, where the call costs as much as the step."""
    if fn is None:
        return lambda f: kernel(f, counted=counted, inlined=inlined)
    return numba_object(lambda: _jit(fn, counted, inlined), fn.__name__, fn.__module__)


def intrinsic(fn):
    """numba.extending.intrinsic, made when numba loads."""
    return numba_object(lambda: importlib.import_module("numba.extending").intrinsic(fn), fn.__name__)


def compiled(*kernels) -> bool:
    """Whether numba's disk cache holds these kernels; if not, their first call compiles them (seconds)."""
    for k in kernels:
        index = getattr(getattr(getattr(k, "_cache", None), "_cache_file", None), "_index_path", None)
        if index is None or not os.path.exists(index):  # no cache (compiled in every run) or not yet cached
            return False
    return True


def compile_rule(rule, **callees):
    """A broker rule of rmqctl.rules compiled from its one definition; the rules it calls are given as their
    compiled kernels (numba calls only compiled functions)."""

    def make():
        space = {**rule.__globals__, **{name: made(callee) for name, callee in callees.items()}}
        bound = pytypes.FunctionType(rule.__code__, space, rule.__name__, rule.__defaults__)
        bound.__qualname__, bound.__module__, bound.__doc__ = rule.__qualname__, rule.__module__, rule.__doc__
        return _jit(bound)

    return numba_object(make, rule.__name__)


# CRC-32 implementations a kernel can call, fastest first: ISA-L's (libisal2: AVX-512 carry-less multiply where
# the CPU has it), libdeflate's (carry-less multiply) and zlib's own
# (libz.so.1, which CPython's zlib module uses), linked by symbol name (a ctypes
# pointer would keep kernels out of the disk cache); the address goes in as an integer, which the ABI passes
# like a pointer. All compute the same CRC (zlib.crc32's). Signatures are written with numba.types.
CRC32_LIBRARIES = (
    ("isal", "libisal.so.2", "crc32_gzip_refl", lambda t: t.uint32(t.uint32, t.uintp, t.uint64)),
    ("deflate", "libdeflate.so.0", "libdeflate_crc32", lambda t: t.uint32(t.uint32, t.uintp, t.uintp)),
    ("z", "libz.so.1", "crc32", lambda t: t.uint64(t.uint64, t.uintp, t.uint32)),
)


def _library_paths(name: str, soname: str):
    yield soname
    # (only where the usual soname does not load: ctypes.util loads subprocess and shutil, ~7 ms of every
    # command's start-up, and find_library runs ldconfig)
    import ctypes.util

    found = ctypes.util.find_library(name)
    if found and found != soname:
        yield found


def first_library(libraries) -> tuple | None:
    """(name, path, symbol, signature) of the first of the `libraries` this machine can load, None if none."""
    for name, soname, symbol, signature in libraries:
        for path in _library_paths(name, soname):
            try:
                ctypes.CDLL(path)
            except OSError:  # not installed
                continue
            return name, path, symbol, signature
    return None


def _crc32_library(libraries=CRC32_LIBRARIES) -> tuple:
    """(name, path, symbol, signature) of the first CRC-32 library this machine can load."""
    found = first_library(libraries)
    if found is None:
        raise ImportError("neither libdeflate nor zlib (libz.so.1) can be loaded")
    return found


CRC32_LIBRARY, CRC32_PATH, _crc32_symbol, _crc32_signature = _crc32_library()
native_crc32 = numba_object(lambda: types.ExternalFunction(_crc32_symbol, _crc32_signature(types)), "native_crc32")
# LZ4's block decoder, where the machine has liblz4 (RocksDB's own LZ4 decodes with it; twice as fast as
# engine/sstable's compiled one, which decodes where it is missing): LZ4_decompress_safe(src, dst,
# compressedSize, dstCapacity), which reads and writes within those bounds and answers the bytes it made
LZ4_LIBRARIES = (("lz4", "liblz4.so.1", "LZ4_decompress_safe", lambda t: t.int32(t.uintp, t.uintp, t.int32, t.int32)),)
LZ4_LIBRARY, LZ4_PATH, *_ = first_library(LZ4_LIBRARIES) or (None, None)
native_lz4 = numba_object(lambda: types.ExternalFunction(LZ4_LIBRARIES[0][2], LZ4_LIBRARIES[0][3](types)), "native_lz4")
trailing_zeros = numba_object(
    lambda: importlib.import_module("numba.cpython.unsafe.numbers").trailing_zeros, "trailing_zeros"
)
leading_zeros = numba_object(
    lambda: importlib.import_module("numba.cpython.unsafe.numbers").leading_zeros, "leading_zeros"
)
SOURCES_STAMP = _drop_stale_caches(f"{CRC32_LIBRARY}+{LZ4_LIBRARY}")
MASK32 = 0xFFFFFFFF


def _word_at(context, builder, sig, args, bits: int):
    """The address of the `bits`-wide integer at u8[at] (args: the byte array, the index), for an unaligned
    load or store."""
    data = context.make_array(sig.args[0])(context, builder, args[0]).data
    return builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(bits).as_pointer())


@intrinsic
def load8(typingctx, u8, at):
    """The 8 bytes at u8[at] as one machine word, in memory order (an unaligned load: the writers move text
    a word at a time instead of a byte at a time). The caller checks at + 8 <= len(u8)."""

    def codegen(context, builder, sig, args):
        return builder.load(_word_at(context, builder, sig, args, 64), align=1)

    return types.uint64(u8, at), codegen


@intrinsic
def store8(typingctx, u8, at, word):
    """load8's store: the word's 8 bytes at u8[at], unaligned. The caller checks at + 8 <= len(u8)."""

    def codegen(context, builder, sig, args):
        builder.store(args[2], _word_at(context, builder, sig, args, 64), align=1)
        return context.get_dummy_value()

    return types.none(u8, at, types.uint64), codegen


@intrinsic
def move_bytes(typingctx, out, o, src, lo, n):
    """src[lo:lo + n] to out[o:o + n] as LLVM's memcpy (the C library's, vector-wide: copy_span's word loop moves
    a ~1 KiB body at a fifth of its speed). The caller checks both spans lie inside their arrays and n >= 0."""

    def codegen(context, builder, sig, args):
        cgutils = importlib.import_module("numba.core.cgutils")
        to = builder.gep(context.make_array(sig.args[0])(context, builder, args[0]).data, [args[1]])
        frm = builder.gep(context.make_array(sig.args[2])(context, builder, args[2]).data, [args[3]])
        cgutils.raw_memcpy(builder, to, frm, args[4], 1)
        return context.get_dummy_value()

    return types.none(out, o, src, lo, n), codegen


@intrinsic
def store_byte_at(typingctx, address, byte):
    """One byte at a process address (of a mapping the caller holds open and has checked the bounds of): for a
    kernel that writes into several mapped files in one pass, which numba cannot take as one array."""

    def codegen(context, builder, sig, args):
        i8 = ir.IntType(8)
        pointer = builder.inttoptr(args[0], i8.as_pointer())
        builder.store(builder.trunc(args[1], i8), pointer)
        return context.get_dummy_value()

    return types.none(types.int64, types.int64), codegen


@intrinsic
def prefetch(typingctx, u8, at):
    """Ask the CPU to bring the cache line of u8[at] in ahead of its use. A hint: it never faults, so `at`
    needs no bounds check."""

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic(
            "llvm.prefetch", [data.type], ir.FunctionType(ir.VoidType(), [data.type, i32, i32, i32])
        )
        builder.call(fn, [builder.gep(data, [args[1]]), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.none(u8, at), codegen


def _big_endian(bits: int):
    """An intrinsic reading the big-endian (Java) signed integer of `bits` at u8[at] as an int64: one
    unaligned load and a byte swap. The caller checks at + bits / 8 <= len(u8)."""

    @intrinsic
    def load(typingctx, u8, at):
        def codegen(context, builder, sig, args):
            value = builder.bswap(builder.load(_word_at(context, builder, sig, args, bits), align=1))
            return value if bits == 64 else builder.sext(value, ir.IntType(64))

        return types.int64(u8, at), codegen

    return load


be16, be32, be64 = _big_endian(16), _big_endian(32), _big_endian(64)


@kernel
def put_be32(u8, at, v):
    for k in range(4):
        u8[at + k] = (v >> (24 - 8 * k)) & 0xFF


@kernel
def put_be64(u8, at, v):
    for k in range(8):
        u8[at + k] = (v >> (56 - 8 * k)) & 0xFF


@kernel
def copy_span(out, o, src, lo, n):
    """src[lo:lo + n] to out[o:o + n], a word at a time, touching no byte outside either span (numba's slice
    assignment is a generic strided loop, several times slower)."""
    k = 0
    while k + 8 <= n:
        store8(out, o + k, load8(src, lo + k))
        k += 8
    while k < n:
        out[o + k] = src[lo + k]
        k += 1
    return o + n


@kernel
def crc32(u8, lo, hi):
    """zlib.crc32 of u8[lo:hi] (the caller has checked lo <= hi <= len(u8))."""
    if hi <= lo:
        return 0
    # (the address: a slice of u8 would be a new, reference-counted array on every call)
    # int64 on both paths (int64 | uint64 would type as float64)
    return np.int64(native_crc32(0, u8.ctypes.data + lo, hi - lo))


@kernel(counted=False)
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


@kernel(counted=False)
def well_formed_utf8(u8, lo, hi):
    """Whether Java decodes u8[lo:hi] without replacement (java_hash's well_formed): ASCII passes 8 bytes a
    step, and java_hash checks from the first word with a byte >= 0x80 (a character starts there)."""
    i = lo
    while i + 8 <= hi:
        if load8(u8, i) & HIGH_BITS != 0:
            return java_hash(u8, i, hi, 0)[1]
        i += 8
    return java_hash(u8, i, hi, 0)[1]


# Topics interned by their bytes: `table` (a power of two long, at most half full) holds topic number + 1
# (0: free) by the topic's Java hash; column t of `topics` says where topic t was first seen and what it is.
# first record, bytes at, length, hash, UTF-8 ok, records
T_FIRST, T_AT, T_LEN, T_HASH, T_WELL_FORMED, T_COUNT = range(6)
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


HIGH_BITS = np.uint64(0x8080808080808080)
THREES = np.uint64(0x0303030303030303)
THREE = np.uint64(3)


@kernel(counted=False)
def next_special(u8, j, hi):
    """The first position in [j, hi) of a byte below 3 or at least 0x80 (hi: none), 8 bytes a step: in a word,
    such a byte has the high bit of itself or of itself - 3 set; a borrow only runs on past the first of them."""
    while j + 8 <= hi:
        w = load8(u8, j)
        special = ((w - THREES) | w) & HIGH_BITS
        if special != 0:
            return j + np.int64(trailing_zeros(special) >> THREE)
        j += 8
    while j < hi:
        b = u8[j]
        if b < 3 or b >= 0x80:
            return j
        j += 1
    return hi


@kernel(counted=False)
def property_segment(u8, i, hi):
    """MessageDecoder.string2messageProperties' view of the segment starting at u8[i] (segments end at 0x02):
    (its end, where its name/value separator is or -1 when it is no pair, its first 0x01 or -1, any byte
    >= 0x80). A segment is a pair when its first 0x01 (the broker's indexOf from the segment start, which
    makes a pair only inside the segment) lies after a non-empty name and before a non-empty value."""
    j = i
    sep1 = -1
    non_ascii = False
    while True:
        j = next_special(u8, j, hi)
        if j >= hi:
            break
        b = u8[j]
        if b == 2:
            break
        if b >= 0x80:
            non_ascii = True
        elif b == 1 and sep1 < 0:
            sep1 = j
        j += 1
    pair = sep1 if j - i >= 3 and i < sep1 < j - 1 else -1
    return j, pair, sep1, non_ascii


@kernel(counted=False)
def find_name(u8, name_lo, name_hi, first, count, lo, hi):
    """Which of the names u8[name_lo[e]:name_hi[e]], e in [first, count), is u8[lo:hi]; -1 when none."""
    for e in range(first, count):
        if name_hi[e] - name_lo[e] == hi - lo:
            same = True
            for c in range(hi - lo):
                if u8[name_lo[e] + c] != u8[lo + c]:
                    same = False
                    break
            if same:
                return e
    return -1


@kernel(inlined=True)
def look_up(u8, i, sep, j, names, name_lens, value_lo, value_hi):
    """The pair u8[i:j] (its separator at `sep`) as the value of the name of `names` it has, if any: a later
    pair takes the place of an earlier one (value_lo[k] / value_hi[k])."""
    for k in range(len(name_lens)):
        n = name_lens[k]
        if sep - i == n:
            same = True
            for c in range(n):
                if u8[i + c] != names[k, c]:
                    same = False
                    break
            if same:
                value_lo[k] = sep + 1
                value_hi[k] = j


@kernel(counted=False)
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
        j, sep, sep1, seg_non_ascii = property_segment(u8, i, hi)
        non_ascii |= seg_non_ascii
        if j > i and sep1 <= i:
            dropped = True
        if sep >= 0:
            pairs += 1
            look_up(u8, i, sep, j, names, name_lens, value_lo, value_hi)
        i = j + 1
    return pairs, non_ascii, dropped


@kernel
def find_properties(u8, lo, hi, names, name_lens, value_lo, value_hi):
    """MessageDecoder.string2messageProperties over the property bytes u8[lo:hi]: segments end at 0x02; a
    segment of 3+ bytes is a pair when its first 0x01 (searched from the segment start, possibly past it)
    lies after a non-empty name and before a non-empty value; later pairs overwrite earlier ones. Writes
    the value span of each wanted name (-1, -1 when absent) and returns the number of pairs."""
    return read_properties(u8, lo, hi, names, name_lens, value_lo, value_hi)[0]
