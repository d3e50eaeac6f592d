"""Reading a store's RocksDB databases (the consume queue of storeType=defaultRocksDB; the same door for the
other RocksDB parts), read-only and without writing a byte into the store; and making a new database in an
empty directory (a writer's staging area), never opening a store's own for writing.

Through rocksdict (RocksDB with LZ4 and ZSTD built in), opened with RocksDB's read-only mode: no LOCK taken
(a running broker holds it), the WAL replayed into memory only. rocksdict writes a small file of its own
(rocksdict-config.json) into any directory it opens, so the database is opened through a view: a temporary
directory outside the store holding symlinks to the database's files. The view is made and removed here; the
views live in one directory per user under $TMPDIR, each named after the process that made it, so a view whose
process was killed before it could remove it is removed by the next one opened.
"""

from __future__ import annotations

import dataclasses
import itertools
import marshal
import os
import shutil
import stat
import tempfile
import weakref
from pathlib import Path
from typing import Iterator

import numpy as np

from . import engine as E, sstable
from .errors import StoreError

# the database's own files (RocksDB filename.cc); LOCK and the info LOGs are left out of the view
VIEW_SKIPS = ("LOCK", "LOG")
BINDING_FILE = "rocksdict-config.json"  # what rocksdict writes into every directory it opens
# Java's CompressionType.getCompressionType(libraryName): RocksDB library names; any other is NO_COMPRESSION
COMPRESSIONS = {"snappy": "snappy", "z": "zlib", "bzip2": "bz2", "lz4": "lz4", "lz4hc": "lz4hc", "zstd": "zstd"}
WRITE_BATCH = 1 << 16
# a reader's RocksDB memory, whatever the database's size: one block cache this big holds the blocks being read
# and every table's index and filter blocks (RocksDB's default keeps those outside any cache, one set per open
# table, so they grow with the data, and gives each database a 32 MiB cache that a scan fills)
READ_CACHE_BYTES = 4 << 20
BATCH_STEP = 2048  # pairs drained from RocksDB's iterator per call while a batch is gathered (its list in cache)
# what the memtables hold: the table files are all the data only when both are 0
MEMTABLE_ENTRIES = ("rocksdb.num-entries-active-mem-table", "rocksdb.num-entries-imm-mem-tables")
MARSHAL_VERSION = 2  # the layout engine/pairs.py reads (no references: every object written where it stands)


def rocksdict():
    """The binding, imported when a RocksDB part is read (a file-queue store never loads it)."""
    try:
        import rocksdict as binding  # here: loads RocksDB's native library, only for RocksDB parts
    except ImportError:
        raise StoreError(
            "reading a RocksDB part needs the rocksdict package (pip install rocksdict; rmqctl's own install brings it)"
        ) from None
    return binding


def _raise(e: Exception):
    raise e


def _views() -> Path:
    """This user's directory of views ($TMPDIR/rmqctl-rocksdb-<uid>), rid of the views of dead processes."""
    base = Path(tempfile.gettempdir()) / f"rmqctl-rocksdb-{os.getuid()}"
    try:
        base.mkdir(mode=0o700, exist_ok=True)
        found = os.lstat(base)
    except OSError as e:
        raise StoreError(
            f"cannot make the directory a RocksDB database is opened through: {e.strerror}", base
        ) from None
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():  # a symlink or another user's: not ours
        raise StoreError(
            "is not a directory of this user's: a RocksDB database is opened through a view made there "
            "(set TMPDIR to another directory)",
            base,
        )
    for view in base.iterdir():
        pid = view.name.split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(view, ignore_errors=True)
    return base


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process has the pid
        return True
    return True


def scratch_directory(purpose: str) -> Path:
    """A new directory among this user's views, for what a reader of a database spills (removed by its maker,
    or with the views of dead processes)."""
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-{purpose}-", dir=_views()))


class ReadOnlyDB:
    """One RocksDB database opened read-only through a view; `column_families` must be exactly its column
    families (`default` may be there unnamed: RocksDB always has it), besides any of `optional` (families a
    writer creates only when it first writes to them). `families` names those it has."""

    def __init__(self, directory: Path, column_families: tuple[str, ...] | None, optional: tuple[str, ...] = ()):
        self.directory = directory
        self.families: tuple[str, ...] = ()
        self._view = scratch_directory("view")
        # the view goes when this object does, or at exit for one never closed (a command's store is not)
        self._remove_view = weakref.finalize(self, shutil.rmtree, str(self._view), True)
        self._db = None
        try:
            self._link_files()
            if column_families is None:  # only listed (column_families), not opened
                self.families = tuple(self._list())
                return
            self._open(column_families, optional)
        except BaseException:
            self.close()
            raise

    def _link_files(self):
        try:
            names = os.listdir(self.directory)
        except OSError as e:
            raise StoreError(f"cannot list the RocksDB directory: {e.strerror}", self.directory) from None
        for name in names:
            path = self.directory / name
            if name.startswith(VIEW_SKIPS) or path.is_dir():
                continue
            os.symlink(path.resolve(), self._view / name)
        if "CURRENT" not in names:
            raise StoreError(
                "RocksDB database without its CURRENT file (it names the live MANIFEST): cannot be read", self.directory
            )

    def _list(self) -> list[str]:
        rd = rocksdict()
        return self._call(rd.Rdict.list_cf, str(self._view), rd.Options(raw_mode=True))

    def _open(self, column_families: tuple[str, ...], optional: tuple[str, ...]):
        rd = rocksdict()
        found = self._list()
        missing = [cf for cf in column_families if cf not in found]
        if missing:
            raise StoreError(
                f"RocksDB database has no column family {missing[0]!r} (it has {', '.join(found)}): not the "
                "layout this part has",
                self.directory,
            )
        known = (*column_families, *optional)
        unknown = [cf for cf in found if cf not in known and cf != "default"]
        if unknown:  # a layout this version does not know: read none of it rather than part of it
            raise StoreError(
                f"RocksDB database has column family {unknown[0]!r}, which this part does not have (it has "
                f"{', '.join(known) or 'only default'}): a layout this version does not read",
                self.directory,
            )
        cache = rd.Cache(READ_CACHE_BYTES)
        families = {cf: _bounded_options(cache) for cf in found if cf != "default"}
        self._db = self._call(
            rd.Rdict,
            str(self._view),
            options=_bounded_options(cache),
            column_families=families,
            access_type=rd.AccessType.read_only(False),
        )
        self._families = {cf: (self._db if cf == "default" else self._db.get_column_family(cf)) for cf in found}
        self.families = tuple(found)

    def _call(self, fn, *args, **kwargs):
        """A call into RocksDB; its errors (corruption, a missing file) as one line naming the directory."""
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # rocksdict raises plain Exceptions carrying RocksDB's Status text
            text = str(e).replace(str(self._view), str(self.directory)).splitlines()
            raise StoreError(
                f"RocksDB cannot read this database: {text[0] if text else type(e).__name__}", self.directory
            ) from None

    def get(self, cf: str, key: bytes) -> bytes | None:
        return self._call(self._families[cf].get, key)

    def items(self, cf: str, lo: bytes = b"", hi: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of `cf` with lo <= key < hi, in the bytewise order (the iteration runs in RocksDB's
        own iterator, bounded there)."""
        family, last = self._families[cf], None
        items = self._call(family.items, from_key=lo, read_opt=self._bounded(hi))
        try:
            for last in items:
                yield last
        except Exception as e:  # RocksDB's Status met mid-way, as the opening's errors
            self._call(_raise, e)
        self._check_ended(family, hi, lo if last is None else last[0] + b"\0")

    def batches(self, cf: str, size: int) -> Iterator[Pairs]:
        """The pairs of `cf` in key order, `size` at a time, each batch as one buffer (Pairs): RocksDB's iterator
        drained a step per call and each step marshalled in one call, no Python step per pair beyond the
        iterator's own. As `items`, its end checked."""
        if size <= 0:
            raise ValueError(f"a batch of {size} pairs")
        family, last = self._families[cf], None
        # RocksDB's own readahead (it grows to 256 KiB a table file): a fixed larger one is a buffer per open
        # table file, which a database with many level-0 files would multiply
        items = self._call(family.items, read_opt=self._bounded(None))
        try:
            ended = False
            while not ended:
                steps, count = [], 0
                while count < size:
                    step = list(itertools.islice(items, min(BATCH_STEP, size - count)))
                    if not step:
                        ended = True
                        break
                    steps.append(marshal.dumps(step, MARSHAL_VERSION))
                    count += len(step)
                if count:
                    pairs = Pairs.unmarshalled(steps, count)
                    last = pairs.key(count - 1)
                    del steps, step  # (not held twice while the caller waits)
                    yield pairs
        except Exception as e:  # RocksDB's Status met mid-way, as the opening's errors
            self._call(_raise, e)
        self._check_ended(family, None, b"" if last is None else last + b"\0")

    def tables(self, cf: str) -> list[sstable.Table] | None:
        """`cf`'s live table files, as rmqctl.sstable reads them directly (any older version of a key they keep
        too: never what the database answers), or None where those are not all its data or a table is not one
        sstable reads: entries in the memtables (a WAL replayed at the opening: the writer did not flush)."""
        family = self._families[cf]
        if any(self._call(family.property_int_value, name) for name in MEMTABLE_ENTRIES):
            return None
        try:
            tables = [
                sstable.read_table(self.directory / f["name"].lstrip("/")) for f in self._call(self._db.live_files)
            ]
        except sstable.Unreadable:
            return None
        return [t for t in tables if t.family == cf]

    def _check_ended(self, family, hi: bytes | None, after: bytes):
        """rocksdict's items() ends silently where RocksDB's iterator meets an error (a block whose checksum
        fails reads as the end of the data): an iterator seeking to where it ended must find the end too,
        with a clean status, or the read is cut short and says so."""
        ahead = self._call(family.iter, self._bounded(hi))
        self._call(ahead.seek, after)
        if ahead.valid():
            raise StoreError(
                "RocksDB cannot read this database: its iteration stopped before the last key", self.directory
            )
        self._call(ahead.status)

    def memory(self) -> dict[str, int]:
        """RocksDB's own memory for this database (bytes): its block cache and what its open tables hold
        outside it; both stay within READ_CACHE_BYTES whatever the database's size."""
        return {
            "block-cache": self._call(self._db.property_int_value, "rocksdb.block-cache-usage"),
            "table-readers": self._call(self._db.property_int_value, "rocksdb.estimate-table-readers-mem"),
        }

    @staticmethod
    def _bounded(hi: bytes | None):
        read = rocksdict().ReadOptions()
        read.fill_cache(False)  # a scan reads each block once: caching it would only evict the index and filters
        if hi is not None:
            read.set_iterate_upper_bound(hi)
        return read

    def close(self):
        if self._db is not None:
            self._db.close()
            self._db = None
        self._remove_view()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@dataclasses.dataclass(frozen=True)
class Pairs:
    """A batch of (key, value) pairs in one buffer: key i is data[key_lo[i]:key_hi[i]], its value
    data[value_lo[i]:value_hi[i]]."""

    data: np.ndarray  # uint8
    key_lo: np.ndarray
    key_hi: np.ndarray
    value_lo: np.ndarray
    value_hi: np.ndarray

    @classmethod
    def unmarshalled(cls, steps: list[bytes], count: int) -> Pairs:
        """The pairs of marshalled lists of (bytes, bytes) pairs, `count` in all."""
        data = np.frombuffer(b"".join(steps), np.uint8)
        whole, spans = E.pair_spans(data, count)
        if not whole:  # rocksdict in raw mode gives bytes: another type is this program's error, not the data's
            raise TypeError("RocksDB's pairs were not (bytes, bytes)")
        return cls(data, *spans)

    @classmethod
    def of(cls, pairs: list[tuple[bytes, bytes]]) -> Pairs:
        """The pairs of a list, as a batch of them is read."""
        return cls.unmarshalled([marshal.dumps(pairs, MARSHAL_VERSION)], len(pairs))

    def __len__(self) -> int:
        return len(self.key_lo)

    def key(self, i: int) -> bytes:
        return self.data[self.key_lo[i] : self.key_hi[i]].tobytes()

    def value(self, i: int) -> bytes:
        return self.data[self.value_lo[i] : self.value_hi[i]].tobytes()

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        return ((self.key(i), self.value(i)) for i in range(len(self)))


def column_families(directory: Path) -> list[str]:
    """The column families of the database in `directory`, as its MANIFEST lists them (nothing opened)."""
    with ReadOnlyDB(directory, None) as listing:
        return list(listing.families)


def _bounded_options(cache):
    """A column family's read options: its tables' blocks, index and filters all in the one bounded `cache`."""
    rd = rocksdict()
    table = rd.BlockBasedOptions()
    table.set_block_cache(cache)
    table.set_cache_index_and_filter_blocks(True)
    options = rd.Options(raw_mode=True)
    options.set_block_based_table_factory(table)
    return options


def compression(library_name: str):
    """The rocksdict compression type of a broker.conf compression name (RocketMQ's CompressionType lookup)."""
    return getattr(rocksdict().DBCompressionType, COMPRESSIONS.get(library_name, "none"))()


class NewDB:
    """A new database made in an empty directory with the given column families (name -> rocksdict Options
    in raw mode), written without the WAL and flushed on `finish`, which leaves only RocksDB's own files."""

    def __init__(self, directory: Path, families: dict):
        rd = rocksdict()
        if directory.exists() and any(directory.iterdir()):
            raise StoreError("a new RocksDB database needs an empty directory", directory)
        self.directory = directory
        options = families["default"]
        options.create_if_missing(True)
        options.create_missing_column_families(True)
        self._db = rd.Rdict(
            str(directory), options=options, column_families={n: o for n, o in families.items() if n != "default"}
        )
        self._families = {n: (self._db if n == "default" else self._db.get_column_family(n)) for n in families}
        self._write = rd.WriteOptions()
        self._write.disable_wal = True

    def put(self, cf: str, items):
        """Write (key, value) pairs into column family `cf`, a batch at a time."""
        rd = rocksdict()
        handle = self._db.get_column_family_handle(cf)
        batch = rd.WriteBatch(raw_mode=True)
        for key, value in items:
            batch.put(key, value, handle)
            if batch.len() >= WRITE_BATCH:
                self._db.write(batch, self._write)
                batch = rd.WriteBatch(raw_mode=True)
        if not batch.is_empty():
            self._db.write(batch, self._write)

    def finish(self):
        """Flush every column family to SST files, close, and remove what is not RocksDB's."""
        for family in self._families.values():
            family.flush()
        self._db.close()
        (self.directory / BINDING_FILE).unlink(missing_ok=True)
        for p in self.directory.iterdir():
            if p.name.startswith(VIEW_SKIPS[1]):  # the info LOGs: the broker writes its own elsewhere
                p.unlink()
