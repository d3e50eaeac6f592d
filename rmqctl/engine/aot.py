"""The entry kernels of a dump, compiled ahead of time into one extension module that loads in a millisecond
without numba.

A process that calls a kernel through numba pays ~0.6 s before its first record: numba's import and its
typing and lowering registries, then the cached kernel's load. For `dump commitlog` that is as long as
decoding and writing 1 GiB. So the kernels a dump calls from Python (ENTRIES) are built once per
installation, on the command line's first dump (ready_kernels), with numba's own AOT compiler
(numba.pycc, which needs the C compiler Python's headers build with) from the very kernels numba runs: the
module holds the same machine code, callees and rules compiled from their one definition. Each entry is a
call of its kernel compiled with the kernels' options (no GIL, numpy's error model).

The module is keyed on everything its code depends on (`stamp`): the package's kernel sources, schema and
rules (kernels.SOURCES_STAMP, which also keys numba's cache), this CPU, Python, numpy and the CRC library
linked in. A changed key builds a new module; a build that fails (no compiler, a numba without pycc) is
remembered for that key and the process runs numba's kernels, as it would without this module.

A compiled entry unboxes its arguments as its signature says without checking them (numba's dispatcher
would pick or compile another specialization), so `Entry` checks every call's arguments against the
signature and hands any other call to numba.

The long-term path, now that numba.pycc is deprecated (pending since numba 0.57, still shipped and working in
0.68): keep the kernels in numba, with one definition each, and keep two ways to have them built before a
record is read. First, numba's own disk cache, which every command falls back to and which the first run of
each command fills (saying so in one line on a terminal: ready_kernels). Second, for the
start-up-bound entries of a dump, this module; when pycc goes, it is built the way pycc builds it, from
numba's compiled libraries (the kernels' LLVM modules emitted as one native object and linked by the C
compiler), or by numba's announced successor (PIXIE) once released. Rejected: rewriting the kernels in C or
Cython (a second definition of every rule, which the house forbids) and shipping prebuilt binaries (they are
specific to the CPU, Python and numpy the stamp names, and `stamp` would refuse most of them).
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from .kernels import CRC32_LIBRARY, CRC32_PATH, SOURCES_STAMP, Lazy, compiled, load_numba

MODULE = "_rmqctl_entries"
# entry name: (kernel's module, kernel, numba signature): a dump's walk of commitlog files (decode) or of
# DLedger entries (entry_heads, decode_at), its line writer, and its content filters' column kernels. u8: a
# file's bytes (a read-only mapping), out: bytes written, i64x1/i64x2: int64 arrays (the decode's columns,
# rows, positions).
ENTRIES = {
    "decode": ("rmqctl.engine.batch", "decode", "UniTuple(int64, 3)(u8, int64, int64, boolean, boolean, int64, i64x2)"),
    "decode_at": (
        "rmqctl.engine.batch",
        "decode_at",
        "UniTuple(int64, 3)(u8, i64x1, i64x1, int64, boolean, boolean, int64, i64x2)",
    ),
    "write_lines": (
        "rmqctl.engine.jsonl_kernels",
        "write_lines",
        "Tuple((int64, int64, boolean))(u8, i64x2, i64x2, i64x1, int64, u8, int64, int64, boolean, boolean,"
        " out, i64x2)",
    ),
    "line_bound": ("rmqctl.engine.jsonl_kernels", "line_bound", "int64(i64x2, int64, int64)"),
    "entry_heads": ("rmqctl.engine.dledger", "entry_heads", "UniTuple(int64, 3)(u8, int64, int64, int64, i64x1)"),
    "property_values": (
        "rmqctl.engine.arrow_kernels",
        "property_values",
        "none(u8, i64x1, i64x1, u8x2, i64x1, i64x2, i64x2)",
    ),
    "holds_word": ("rmqctl.engine.arrow_kernels", "holds_word", "none(u8, i64x1, i64x1, u8, b1x1)"),
    "msgid_texts": ("rmqctl.engine.arrow_kernels", "msgid_texts", "int64(u8, i64x1, i64x1, i64x1, out, i32x1)"),
    # append's: parse a block of JSON lines, encode its records, acknowledge them, dispatch them to consumequeue
    # and index (a start-up of ~0.6 s for numba is as long as appending 70 k messages)
    "parse_block": (
        "rmqctl.engine.jsonl_parse",
        "parse_block",
        "Tuple((int64, int64, int64, boolean))(u8, int64, int64, int64, int64, boolean, i64x2, i64x1, i64x3,"
        " out, i64x1, out, i64x1, i64x2, i64x1, i64x2, i64x1, i64x2, i64x1)",
    ),
    "encode_columns": (
        "rmqctl.engine.encode",
        "encode_columns",
        "int64(out, i64x2, i64x2, u8, u8, i64x1, u8, i64x1, u8, i64x1, boolean, u8)",
    ),
    "queue_offsets": ("rmqctl.engine.encode", "queue_offsets", "i64x1(i64x1, i64x1, b1x1)"),
    "encode_records": ("rmqctl.engine.encode", "encode_records", "int64(out, i64x2, u8, boolean)"),
    "ack_lines": ("rmqctl.engine.encode", "ack_lines", "int64(i64x1, i64x1, i64x1, i64x1, u8x2, i64x1, u8x2, out)"),
    "dispatch_walk": ("rmqctl.engine.dispatch", "walk", "Tuple((i64x1, int64))(u8, int64, boolean, int64, int64)"),
    "dispatch_decode": (
        "rmqctl.engine.dispatch",
        "decode",
        "Tuple((i64x2, i64x1, i64x1, int64))(u8, i64x1, boolean, boolean, boolean, i64x1, i64x1, i64x1,"
        " i64x1, i64x1, i64x1, i64x1, i64x1, b1x1)",
    ),
    "put_units_in_order": (
        "rmqctl.engine.dispatch",
        "put_units_in_order",
        "int64(i64x1, i64x1, int64, i64x1, i64x1, i64x1, i64x1)",
    ),
    "put_index_keys": (
        "rmqctl.engine.index",
        "put_keys",
        "UniTuple(int64, 2)(out, int64, int64, int64, int64, i64x1, i64x1, i64x1)",
    ),
}
# the array types of the signatures: (dtype, dimensions, writable)
ARRAYS = {
    "u8": (np.uint8, 1, False),
    "u8x2": (np.uint8, 2, False),
    "out": (np.uint8, 1, True),
    "b1x1": (np.bool_, 1, True),
    "i32x1": (np.int32, 1, True),
    "i64x1": (np.int64, 1, True),
    "i64x2": (np.int64, 2, True),
    "i64x3": (np.int64, 3, True),
}
SCALARS = {"int64": (int, np.integer), "boolean": (bool, np.bool_)}


def _cpu() -> bytes:
    """What the compiled code was built for: the model and instruction set extensions of this machine's CPU."""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            lines = f.read(1 << 16).split(b"\n")
    except OSError:
        return os.uname().machine.encode()
    identity = (b"model name", b"flags", b"CPU implementer", b"CPU part", b"Features")  # (x86; ARM)
    return b"\n".join(sorted({line for line in lines if line.startswith(identity)}))


def stamp() -> str | None:
    """The module's key; None when the package's sources are not files (a zip): no module then."""
    if SOURCES_STAMP is None:
        return None
    parts = (
        SOURCES_STAMP,
        Path(__file__).read_text(),
        sys.version,
        np.__version__,
        CRC32_LIBRARY,
        CRC32_PATH,
        os.uname().machine,
    )
    return hashlib.sha256("\0".join(parts).encode() + _cpu()).hexdigest()[:24]


def directories() -> list[Path]:
    """Where the module may be: next to numba's cache of the kernels, else the user's cache directory."""
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [Path(__file__).parent / "__pycache__", Path(home) / "rmqctl"]


class Entry:
    """An entry of the module: calls whose arguments fit its signature run it, any other call numba's kernel."""

    def __init__(self, compiled, signature: str, kernel: Lazy):
        self.compiled, self.kernel = compiled, kernel
        params = signature[signature.rindex("(") + 1 : -1]  # (the last group: parameter names hold no parentheses)
        self.checks = tuple(_check(p.strip()) for p in params.split(","))

    def __call__(self, *args):
        if len(args) == len(self.checks) and all(check(a) for check, a in zip(self.checks, args)):
            return self.compiled(*args)
        return self.kernel.resolve()(*args)


def _check(param: str):
    if param in SCALARS:
        kinds = SCALARS[param]
        return lambda a: isinstance(a, kinds)
    dtype, ndim, writable = ARRAYS[param]
    dtype = np.dtype(dtype)
    return lambda a: (
        type(a) is np.ndarray
        and a.dtype == dtype
        and a.ndim == ndim
        and a.flags.c_contiguous
        and a.flags.aligned
        and (a.flags.writeable or not writable)
    )


_module = None  # the loaded module, False when there is none for this stamp


def module():
    """The built module for this installation's stamp, loaded (None when there is none)."""
    global _module
    if _module is None:
        key = stamp()
        _module = key is not None and _load(key) or False
    return _module or None


def _load(key: str):
    for directory in directories():
        path = directory / f"{MODULE}-{key}.so"
        if not path.exists():
            continue
        try:
            ctypes.CDLL(CRC32_PATH, mode=ctypes.RTLD_GLOBAL)  # the CRC symbol the kernels call, by name
            loader = importlib.machinery.ExtensionFileLoader(MODULE, str(path))
            loaded = importlib.util.module_from_spec(
                importlib.util.spec_from_file_location(MODULE, path, loader=loader)
            )
            loader.exec_module(loaded)
            return loaded
        except (ImportError, OSError):  # not a module this process can load: numba's kernels run instead
            continue
    return None


def install() -> bool:
    """Give each entry kernel its compiled entry (Lazy.entry) when the module is built; whether it is."""
    if module() is None:
        return False
    for exported, (module_name, kernel_name, signature) in ENTRIES.items():
        kernel = getattr(importlib.import_module(module_name), kernel_name)
        if isinstance(kernel, Lazy) and kernel.entry is None:
            kernel.entry = Entry(getattr(_module, exported), signature, kernel)
    return True


def covers(kernels) -> bool:
    """Whether every one of `kernels` is a declared kernel (numba is not loaded) with an entry in ENTRIES."""
    names = {(m, k) for m, k, _ in ENTRIES.values()}
    return all(isinstance(k, Lazy) and (k.declared_in, k.__name__) in names for k in kernels)


def ready_kernels(kernels, on_first_run) -> None:
    """Ready the compiled kernels a command calls: this module where it covers them, built on the first run
    that needs it; else numba's, whose first run compiles them. `on_first_run()` is called before a first
    run's compiling (seconds), so the caller can say why it pauses."""
    if not kernels:
        return
    ahead = covers(kernels)
    if ahead and install():
        return
    first_run = not failed() if ahead else not compiled(*kernels)
    if not first_run:
        return
    on_first_run()
    if ahead:
        build()
        install()


def failed() -> bool:
    """Whether the module cannot be built here: a build failed for this stamp, or there is no stamp."""
    key = stamp()
    return key is None or any((d / f"{MODULE}-{key}.failed").exists() for d in directories())


def build() -> Path | None:
    """Build the module for this stamp (numba compiles the kernels first, tens of seconds without its cache),
    check that it loads, and put it in the first writable directory, atomically; None, remembered, when it
    cannot be built or loaded. Older modules of this installation (next to the package) are removed; a
    shared user cache keeps other installations' modules. Processes that start the same build at once (cron
    jobs after an upgrade, a test run's workers) take turns on a lock: the first builds, the others wait for
    it and load what it built (or run on numba's kernels if it failed), instead of each compiling."""
    key = stamp()
    if key is None:
        return None
    for rank, directory in enumerate(directories()):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            lock = os.open(directory / f".{MODULE}-{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)
            except OSError:  # a filesystem without locks (NFS without its lock service): build alone, as before
                pass
            target = directory / f"{MODULE}-{key}.so"
            if _loaded(target):
                return target  # built by the process that held the lock before
            if (directory / f"{MODULE}-{key}.failed").exists():
                return None  # or found unbuildable by it
            try:
                work = Path(tempfile.mkdtemp(prefix=f".{MODULE}-", dir=directory))
            except OSError:
                continue
            return _build_in(work, directory, key, rank)
        finally:
            os.close(lock)  # (and with it the lock)
    return None


def _loaded(target: Path) -> Path | None:
    """`target`, loaded as this process's module; None when it does not load here."""
    global _module
    _module = None
    return target if target.exists() and module() is not None else None


def _build_in(work: Path, directory: Path, key: str, rank: int) -> Path | None:
    """build's work in `work`, for `directory` (under its lock)."""
    target = directory / f"{MODULE}-{key}.so"
    try:
        _compile(work)
        os.replace(next(work.glob(f"{MODULE}*")), target)
        if _loaded(target) is None:
            raise ImportError(f"{target} was built but does not load here")
        for old in [*directory.glob(f"{MODULE}-*"), *directory.glob(f".{MODULE}-*.lock")] if rank == 0 else ():
            if old.stem not in (target.stem, f".{target.stem}"):
                old.unlink(missing_ok=True)
        return target
    except Exception as e:  # noqa: BLE001 (any failure of an optional build: numba's own, the compiler's)
        target.unlink(missing_ok=True)
        (directory / f"{MODULE}-{key}.failed").write_text(f"{type(e).__name__}: {e}\n")
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _compile(out: Path):
    # (start-up: numba and its AOT compiler load only to build the module, once)
    import llvmlite.binding as llvm
    from numba import from_dtype, types

    load_numba()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from numba.pycc import CC, compiler  # (as numba's: only to build; it warns of a pending deprecation)

    class EntryFlags(compiler.Flags):
        """The kernels' options (rmqctl.engine.kernels.kernel) for the entries: no GIL, numpy's error model."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True
            self.error_model = "numpy"

    spelled = {
        name: types.Array(from_dtype(np.dtype(dtype)), ndim, "C", readonly=not writable)
        for name, (dtype, ndim, writable) in ARRAYS.items()
    }
    cc = CC(MODULE)
    cc.output_dir = str(out)
    cc.target_cpu = llvm.get_host_cpu_name()
    for exported, (module_name, kernel_name, signature) in ENTRIES.items():
        kernel = getattr(importlib.import_module(module_name), kernel_name)
        params = [f"a{i}" for i in range(kernel.py_func.__code__.co_argcount)]
        space = {"kernel": kernel}
        exec(f"def {exported}({', '.join(params)}):\n    return kernel({', '.join(params)})", space)
        cc.export(exported, _signature(signature, types, spelled))(space[exported])
    plain, scratch = compiler.Flags, tempfile.tempdir
    compiler.Flags = EntryFlags
    tempfile.tempdir = str(out)  # pycc's own build directory goes there too, and with it when the build fails
    try:
        cc.compile()
    finally:
        compiler.Flags, tempfile.tempdir = plain, scratch


def _signature(text: str, types, spelled: dict):
    """A numba signature from its text, with the array names of ARRAYS."""
    return eval(text, {"__builtins__": {}}, {**vars(types), **spelled})  # noqa: S307 (ENTRIES: this module's text)
