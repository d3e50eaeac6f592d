"""The compiled kernels' shared pieces against the Python reference (javacompat) they replace."""

import base64
import contextlib
import ctypes.util
import mmap
import os
import re
import random
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import given, settings, strategies as st

from rmqctl.javacompat import java_string_hash, parse_properties
from rmqctl.engine.kernels import copy_span, crc32, find_properties, java_hash, property_names, well_formed_utf8
from rmqctl.engine.jsonl_kernels import put_base64, put_escaped, put_int
from rmqctl.engine.record import prefetch_ahead
from rmqctl.store import give_back_pages


def as_u8(data: bytes) -> np.ndarray:
    return np.frombuffer(data + b"\0", np.uint8)  # never empty; the kernels get explicit bounds


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_java_hash_of_utf8_is_string_hashcode(text):
    raw = text.encode("utf-8", "surrogatepass")
    h, ok = java_hash(as_u8(raw), 0, len(raw), 0)
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert not ok  # lone surrogates encoded as UTF-8 are malformed for Java's decoder
    else:
        assert ok and h == java_string_hash(text) & 0xFFFFFFFF


def test_java_hash_continues_a_hash():
    topic, key = "TopicTest", "订单-1😀"
    raw = key.encode()
    start = (java_string_hash(topic) * 31 + ord("#")) & 0xFFFFFFFF
    h, ok = java_hash(as_u8(raw), 0, len(raw), start)
    assert ok and h == java_string_hash(f"{topic}#{key}") & 0xFFFFFFFF


def test_java_hash_refuses_malformed_utf8():
    for bad in (b"\xc3", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"a\xe4\xb8", b"\x80"):
        assert not java_hash(as_u8(bad), 0, len(bad), 0)[1], bad


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "K", "", "a b", "\x01", "\x02", "é", "x"]), max_size=12))
def test_find_properties_is_string2messageProperties(parts):
    raw = "".join(parts).encode()
    names, lens = property_names("TAGS", "KEYS", "UNIQ_KEY")
    lo, hi = np.empty(3, np.int64), np.empty(3, np.int64)
    u8 = as_u8(b"\x01\x02" + raw)  # bytes before lo must not count
    pairs = find_properties(u8, 2, 2 + len(raw), names, lens, lo, hi)
    expected = parse_properties(raw.decode())
    got = {n: u8[a:b].tobytes().decode() for n, a, b in zip(("TAGS", "KEYS", "UNIQ_KEY"), lo, hi) if a >= 0}
    assert got == {n: v for n, v in expected.items() if n in ("TAGS", "KEYS", "UNIQ_KEY")}
    segments = [s for s in raw.decode().split("\x02") if len(s) >= 3 and 0 < s.find("\x01") < len(s) - 1]
    assert pairs == len(segments)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [b"abcdefgh", b"x", b"\x00", b"\x01", b"\x02", b"\x03", b"\x7f", b"\x80", b"\x82", b"\x83", b"\xff"]
        ),
        max_size=16,
    ).map(b"".join),
    st.integers(0, 40),
)
def test_next_special_is_a_byte_loop(data, start):
    """The 8-bytes-a-step search for the property string's special bytes finds what a byte loop finds."""
    from rmqctl.engine.kernels import next_special

    start = min(start, len(data))
    want = next((k for k in range(start, len(data)) if data[k] < 3 or data[k] >= 0x80), len(data))
    assert next_special(as_u8(data + b"\x00" * 8), start, len(data)) == want  # (bytes past hi must not count)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"@", b" ", b"abcdefgh", b"x", b"\x00", b"\x3f", b"\x40\x40", b"\xc0", b"\xff"]), max_size=16
    ).map(b"".join),
    st.integers(0, 40),
    st.integers(0, 40),
    st.sampled_from([ord("@"), ord(" ")]),
)
def test_the_word_searches_for_a_byte_are_byte_loops(data, lo, hi, byte):
    """The 8-bytes-a-step searches that split a RocksDB index key and a KEYS property find the first and the
    last `byte` a byte loop finds in data[lo:hi] (bytes on either side must not count)."""
    from rmqctl.engine.rocksdbstore import _find, _find_last

    lo, hi = min(lo, len(data)), min(max(lo, hi), len(data))
    target, inside = bytes([byte]), data[lo:hi]
    u8 = as_u8(target * 9 + data + target * 9)
    want = (9 + lo + inside.find(target), 9 + lo + inside.rfind(target)) if target in inside else (-1, -1)
    assert (_find(u8, 9 + lo, 9 + hi, byte), _find_last(u8, 9 + lo, 9 + hi, byte)) == want


def test_the_crc32_library_falls_back_to_zlib():
    """ISA-L where the machine has it, else libdeflate; a machine without either links zlib's crc32, which
    computes the same."""
    from rmqctl.engine import kernels as native

    missing = ("no-such-crc", "libno-such-crc.so.0", "no_such_crc32", native.CRC32_LIBRARIES[0][3])
    assert native._crc32_library((missing,) + native.CRC32_LIBRARIES[2:])[0] == "z"
    found = [name for name in ("isal", "deflate") if ctypes.util.find_library(name)]
    assert native.CRC32_LIBRARY == (found[0] if found else "z")


@pytest.mark.parametrize(
    "library", [lib[0] for lib in __import__("rmqctl.engine.kernels").engine.kernels.CRC32_LIBRARIES]
)
def test_every_crc32_library_computes_zlibs(library):
    """Each library a kernel may link (whichever this machine has) gives zlib.crc32's value, continued from a
    previous CRC as the kernels never do but zlib allows."""
    from rmqctl.engine import kernels as native

    name, fallback, symbol, _ = next(lib for lib in native.CRC32_LIBRARIES if lib[0] == library)
    try:
        lib = ctypes.CDLL(ctypes.util.find_library(name) or fallback)
    except OSError:
        pytest.skip(f"{fallback} is not installed here")
    function = getattr(lib, symbol)
    function.restype = ctypes.c_ulong
    data = random.Random(20240601).randbytes(1 << 20)
    for lo, hi, start in ((0, 0, 0), (0, 1, 0), (3, 1000, 0), (5, len(data), 0), (7, 70000, 0x12345678)):
        buf = ctypes.create_string_buffer(data[lo:hi], hi - lo)
        got = function(ctypes.c_ulong(start), buf, ctypes.c_ulong(hi - lo)) & 0xFFFFFFFF
        assert got == zlib.crc32(data[lo:hi], start), (library, lo, hi)


def test_crc32_is_zlibs():
    data = bytes(range(256)) * 40
    u8 = as_u8(data)
    for lo, hi in ((0, 0), (0, 1), (3, 1000), (17, len(data))):
        assert crc32(u8, lo, hi) == zlib.crc32(data[lo:hi])


def test_a_changed_kernel_source_empties_the_kernel_cache(tmp_path):
    """numba would keep a caller's compiled code after a callee or the schema changed; the package's own
    stamp over its sources drops every cached kernel then, and only then."""
    from rmqctl.engine import kernels as native

    here = tmp_path / "rmqctl" / "engine"
    here.mkdir(parents=True)
    package = Path(native.__file__).parent
    for p in package.glob("*.py"):
        (here / p.name).write_bytes(p.read_bytes())
    for shared in ("schema.py", "rules.py", "javacompat.py"):
        (here.parent / shared).write_bytes((package.parent / shared).read_bytes())
    cache = here / "__pycache__"
    cache.mkdir()
    compiled = [cache / "dispatch.decode-85.py311.nbi", cache / "dispatch.decode-85.py311.1.nbc"]
    for p in compiled:
        p.write_bytes(b"x")
    native._drop_stale_caches("deflate", here)  # no stamp yet: whatever is cached may be stale
    assert not any(p.exists() for p in compiled)
    for p in compiled:
        p.write_bytes(b"x")
    native._drop_stale_caches("deflate", here)  # sources unchanged: the cache stays
    assert all(p.exists() for p in compiled)
    native._drop_stale_caches("z", here)  # another CRC library is linked into the kernels
    assert not any(p.exists() for p in compiled)
    for p in compiled:
        p.write_bytes(b"x")
    (here.parent / "schema.py").write_text((here.parent / "schema.py").read_text() + "\n# changed\n")
    native._drop_stale_caches("z", here)
    assert not any(p.exists() for p in compiled)
    for p in compiled:
        p.write_bytes(b"x")
    (here.parent / "rules.py").write_text((here.parent / "rules.py").read_text() + "\n# changed\n")
    native._drop_stale_caches("z", here)  # a broker rule the kernels compile changed
    assert not any(p.exists() for p in compiled)
    for p in compiled:
        p.write_bytes(b"x")
    (here.parent / "javacompat.py").write_text((here.parent / "javacompat.py").read_text() + "\n# changed\n")
    native._drop_stale_caches("z", here)  # a Java name the kernels compile in (__CRC32#) may have changed
    assert not any(p.exists() for p in compiled)


@pytest.mark.tmpfs
def test_a_read_only_installation_without_a_cache_directory_still_runs(tmp_path):
    """numba refuses to cache where no directory is writable; the kernels are then compiled afresh per
    process, and the command runs as usual, quietly. Read-only for root too: a read-only bind mount."""
    repo = Path(__file__).resolve().parents[1]
    copy, ro = tmp_path / "copy", tmp_path / "ro"
    shutil.copytree(repo / "rmqctl", copy / "rmqctl", ignore=shutil.ignore_patterns("__pycache__"))
    ro.mkdir()
    subprocess.run(["mount", "--bind", str(copy), str(ro)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True)
        env = dict(os.environ, PYTHONPATH=str(ro), HOME="/proc/no-home", XDG_CACHE_HOME="/proc/no-cache")
        env.pop("NUMBA_CACHE_DIR", None)
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "rmqctl",
                "verify",
                "--store",
                repo / "examples" / "store",
                "--broker-config",
                repo / "examples" / "broker.conf",
            ],
            env=env,
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
    finally:
        subprocess.run(["umount", "-l", str(ro)], check=True)
    # quietly: verify's own one-line summary and nothing about caches or compiling
    assert (r.returncode, r.stdout) == (0, "")
    assert re.fullmatch(r"verify: 38 records, 0\.1 MB of commitlog in [0-9.]+ s \(\d+ job\(s\)\): sound\n", r.stderr)


def test_a_first_run_on_a_terminal_says_it_compiles(tmp_path):
    """The first dump of an installation compiles the kernels: one line on a terminal says so, instead of a
    silent pause; two first dumps started at once both say so, but only one compiles (the other waits for its
    build and loads it); the next run finds them cached and says nothing, and so does the first append (the
    one build serves every command: `append` names the encoder in the same line when it is the first)."""
    repo = Path(__file__).resolve().parents[1]
    shutil.copytree(repo / "rmqctl", tmp_path / "rmqctl", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    example = ["--store", repo / "examples" / "store", "--broker-config", repo / "examples" / "broker.conf"]
    append = ["--store", tmp_path / "store", "--create", "--topic", "T", "--body", "1", "--store-host", "1.2.3.4:5"]

    def on_terminals(*commands) -> list[tuple[str, float]]:
        """Each command run at once on a terminal of its own: what each said there and the CPU seconds it took."""
        started = []
        try:
            for args in commands:
                master, slave = os.openpty()
                started.append((master, slave))
                proc = subprocess.Popen(
                    [sys.executable, "-m", "rmqctl", *map(str, args)],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=slave,
                    cwd=tmp_path,
                )
                started[-1] += (proc,)
            said = []
            for master, _, proc in started:
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
                assert proc.returncode == 0
                os.set_blocking(master, False)
                try:
                    text = os.read(master, 4096).decode()
                except BlockingIOError:
                    text = ""
                said.append((text, usage.ru_utime + usage.ru_stime))
            return said
        finally:
            for master, slave, *proc in started:
                if proc and proc[0].returncode is None:
                    proc[0].kill()
                    proc[0].wait()
                os.close(slave)
                os.close(master)

    dump = ["dump", "commitlog", *example, "--body", "none"]
    (first, cpu_first), (second, cpu_second) = on_terminals(dump, dump)
    assert first.splitlines() == second.splitlines() == ["rmqctl: compiling the decoder once (a few seconds)"]
    assert min(cpu_first, cpu_second) < max(cpu_first, cpu_second) / 4, (cpu_first, cpu_second)
    assert on_terminals(dump)[0][0] == ""
    assert on_terminals(["append", *append])[0][0] == ""


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from('ab"\\\x00\x01\x08\x1f\x7fé😀 '), max_size=40), st.integers(0, 7))
def test_escaped_text_is_orjsons_at_every_alignment(text, shift):
    """The writer's word-at-a-time copy escapes exactly the bytes orjson escapes, wherever they fall in a word."""
    raw = text.encode()
    # the text at every offset of an 8-byte word; ending the buffer, or followed by bytes that need escapes
    for after in (b"", b'"\\\x00\x01' * 4):
        u8 = np.frombuffer(bytes(shift) + raw + after, np.uint8)
        out = np.zeros(6 * len(raw) + 16, np.uint8)
        end = put_escaped(out, 0, u8, shift, shift + len(raw))
        assert out[:end].tobytes() == orjson.dumps(text)[1:-1]


@contextlib.contextmanager
def page_before_a_guard():
    """A page of bytes (a uint8 array) followed by a page that cannot be read: a read past the page is SIGSEGV."""
    page = mmap.PAGESIZE
    area = mmap.mmap(-1, 2 * page)
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    address = ctypes.addressof(ctypes.c_char.from_buffer(area))
    assert libc.mprotect(ctypes.c_void_p(address + page), page, 0) == 0
    u8 = np.frombuffer(area, np.uint8)
    try:
        yield u8
    finally:
        del u8
        assert libc.mprotect(ctypes.c_void_p(address + page), page, 3) == 0  # readable again, so it can be unmapped


def test_spans_are_copied_without_touching_bytes_outside_them():
    """copy_span reads a mapping's last bytes without touching the page after them, and writes no byte past
    its span."""
    page = mmap.PAGESIZE
    with page_before_a_guard() as src:
        src[page - 19 : page] = np.arange(1, 20, dtype=np.uint8)
        for n in range(20):
            out = np.zeros(n + 6, np.uint8)
            assert copy_span(out, 3, src, page - n, n) == 3 + n
            assert (
                out[3 : 3 + n].tobytes() == src[page - n : page].tobytes()
                and not out[:3].any()
                and not out[3 + n :].any()
            )


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.integers(0, 7), st.booleans())
def test_base64_is_rfc4648_at_every_length_and_alignment(raw, shift, followed):
    """Six bytes a word where a whole word can be read, three at a time where not (a mapping's end)."""
    u8 = np.frombuffer(bytes(shift) + raw + (b"\xff" * 8 if followed else b"") + b"\0", np.uint8)
    out = np.zeros(2 * len(raw) + 16, np.uint8)
    end = put_base64(out, 0, u8, shift, shift + len(raw))
    assert out[:end].tobytes() == base64.b64encode(raw)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.integers(-(1 << 63), (1 << 63) - 1),
        st.sampled_from(
            [0, 9, 10, 99, 100, 10**8 - 1, 10**8, 10**16 - 1, 10**16, (1 << 63) - 1, -(1 << 63), -1, -(10**8)]
        ),
    )
)
def test_int_text_is_pythons_at_every_magnitude(v):
    """Up to 8 digits a step, leading zeros cut from the first group only."""
    out = np.zeros(40, np.uint8)
    end = put_int(out, 3, v)
    assert out[3:end].tobytes() == str(v).encode()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40), st.integers(0, 7))
def test_well_formed_utf8_is_java_hashs_verdict(raw, shift):
    """The ASCII words skipped 8 bytes a step leave the verdict to java_hash from the first other byte."""
    u8 = np.frombuffer(bytes(shift) + raw + b"\0", np.uint8)
    assert well_formed_utf8(u8, shift, shift + len(raw)) == java_hash(u8, shift, shift + len(raw), 0)[1]


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=1, max_size=200))
def test_asking_ahead_follows_any_sizes_without_reading_outside(raw):
    """prefetch_ahead follows the size fields of untrusted bytes (negative, huge, pointing past the end) and
    only reads inside them: at every position of a buffer whose next page is not readable, it returns."""
    page = mmap.PAGESIZE
    with page_before_a_guard() as u8:
        u8[page - len(raw) : page] = np.frombuffer(raw, np.uint8)
        for pos in range(page - len(raw), page + 1):
            prefetch_ahead(u8, pos, page)


def _resident_kib(address: int) -> int:
    """Rss of the mapping of this process that starts at `address` (/proc/self/smaps)."""
    lines = Path("/proc/self/smaps").read_text().splitlines()
    for i, line in enumerate(lines):
        start = line.split("-", 1)[0]
        if start != line and all(c in "0123456789abcdef" for c in start) and int(start, 16) == address:
            return next(int(l.split()[1]) for l in lines[i + 1 :] if l.startswith("Rss:"))
    raise AssertionError("mapping not found")


def test_given_back_pages_leave_the_mapping_and_read_again(tmp_path):
    """give_back_pages drops the read pages of a file mapping (they stay in the page cache: reading again
    gives the same bytes) without the mapping being closed."""
    path = tmp_path / "f"
    data = random.Random(64).randbytes(64 * mmap.PAGESIZE)
    path.write_bytes(data)
    with open(path, "rb") as fh:
        m = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    address = np.frombuffer(m, np.uint8).ctypes.data
    assert bytes(m[:]) == data
    assert _resident_kib(address) >= 64 * mmap.PAGESIZE // 1024
    give_back_pages(m, 5, 32 * mmap.PAGESIZE)  # (from the page holding byte 5)
    assert _resident_kib(address) <= 32 * mmap.PAGESIZE // 1024
    give_back_pages(m)
    assert _resident_kib(address) == 0
    assert bytes(m[:]) == data
    m.close()


def test_numbas_registries_load_under_its_compiler_lock():
    """Loading numba refreshes its typing and lowering registries; numba refreshes them again inside every
    compile and cache load, holding its compiler lock. A scan thread calling a made kernel while another
    thread loads numba must wait for that lock, not advance the same registry generators at once ("generator
    already executing") nor wait on a second lock (a deadlock)."""
    probe = (
        "from numba.core.compiler_lock import global_compiler_lock\n"
        "from numba.core.registry import cpu_target\n"
        "from rmqctl.engine import kernels\n"
        "context, held = cpu_target.target_context, []\n"
        "refresh = context.refresh\n"
        "context.refresh = lambda: (held.append(global_compiler_lock.is_locked()), refresh())\n"
        "kernels.load_numba()\n"
        "print(bool(held) and all(held))\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert r.stdout == "True\n"
