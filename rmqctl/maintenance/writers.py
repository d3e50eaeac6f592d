"""Writers for the files the broker derives from the commitlog: consumequeue files (ConsumeQueue
.putMessagePositionInfo) and index files (IndexService.buildIndex / IndexFile.putKey), byte-for-byte as the
broker writes them. They work on real files through writable mmaps in any directory, so `append` writes into
the store and `rebuild` into a temporary directory that is swapped in afterwards. Nothing is durable until
flush() (msync + fsync of files and directories)."""

from __future__ import annotations

import datetime as dt
import errno
import gc
import mmap
import os
import resource
import time
from pathlib import Path

import numpy as np

from .. import schema as S
from ..config import BrokerConfig
from ..errors import DiskFullError, StoreError, UsageError
from ..dispatch import batch_unit, cq_targets, index_key_hash, index_keys, tags_code
from ..engine import put_index_keys
from ..record import Message
from ..recovery import BCQ_UNIT, CQ_UNIT, walk_queue
from ..rules import bcq_already_built, cq_already_built, cq_put_order, index_slot, index_time_diff
from ..txn import fsync_dir
from ..store import INDEX_FILE_NAME, offset_of_name, offset_to_name, valid_topic_dir_name


# how far ahead of the write position a growing file (commitlog, index entries) has its blocks reserved
RESERVE_AHEAD = 8 << 20


def reserve(fd: int, size: int, path: Path, start: int = 0):
    """posix_fallocate bytes [start, size) of the file. A write through a mapping into a hole of a full
    filesystem is a SIGBUS; once the blocks are reserved it cannot fail, so a full disk is found here, as one
    error, before any byte is written there."""
    if size <= start:
        return
    try:
        os.posix_fallocate(fd, start, size - start)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFullError(f"no space left on the device for the file's {size} bytes", path) from None
        raise


def reserve_free_space(directory: Path, file_sizes: list[int], keep: Reserved | None = None):
    """Check that files of these sizes can still be allocated on `directory`'s filesystem by reserving their
    blocks (each file rounded up to whole blocks) in unnamed files, all at once: a writer calls this before a
    step it cannot undo. Freed on return, except, with `keep`, one unnamed file for each of the first
    keep.planned sizes (new_file_sizes' consumequeue files), held there for those files to take
    (create_full_size) instead of reserving their blocks again."""
    block = os.statvfs(directory).f_bsize
    # kept files hold a descriptor each, beside every queue's open file: at most a quarter of the process's limit
    kept = (
        file_sizes[: min(keep.planned, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 4)] if keep is not None else []
    )
    rest = sum(-(-n // block) * block for n in file_sizes[len(kept) :] if n > 0)
    if keep is not None:
        keep.free()  # a reservation left from before is given back first
    held = Reserved(0)
    try:
        for size, into in [(n, keep) for n in kept] + [(rest, held)] * (rest > 0):
            try:
                fd = os.open(directory, os.O_TMPFILE | os.O_RDWR, 0o644)
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                    raise
                return _check_free_count(directory, file_sizes, block, keep)
            into.files.append((fd, os.fstat(fd).st_dev))
            reserve(fd, size, directory)
    except BaseException:
        if keep is not None:
            keep.free()
        raise
    finally:
        held.free()


def _check_free_count(directory: Path, file_sizes: list[int], block: int, keep: Reserved | None):
    """reserve_free_space on a filesystem without unnamed files: the free count is the best answer."""
    if keep is not None:
        keep.free()
    size = sum(-(-n // block) * block for n in file_sizes if n > 0)
    st = os.statvfs(directory)
    if st.f_bavail * st.f_frsize < size:
        raise DiskFullError(f"no space left on the device for {size} bytes", directory) from None


class Reserved:
    """Unnamed files each holding the blocks of one file of `file_size` bytes (reserve_free_space's, kept):
    create_full_size links one in as a new file of that size on its filesystem, so its blocks are reserved
    once. free() closes the others, which gives their blocks back; nothing of them is ever seen in the store."""

    def __init__(self, file_size: int):
        self.file_size = file_size
        self.planned = 0  # how many of them new_file_sizes' list begins with
        self.files: list[tuple[int, int]] = []  # (fd, filesystem)

    def take(self, directory: Path, size: int) -> int | None:
        """An unnamed file holding the blocks of a file of `size` bytes on `directory`'s filesystem, or None."""
        if size != self.file_size or not self.files:
            return None
        dev = os.stat(directory).st_dev
        for k, (fd, on) in enumerate(self.files):
            if on == dev:
                del self.files[k]
                return fd
        return None

    def free(self):
        for fd, _ in self.files:
            os.close(fd)
        self.files.clear()


def create_full_size(path: Path, size: int, reserved: int, spare: Reserved | None = None) -> int:
    """Create `path` sparse (all zero) at `size` bytes, its first `reserved` bytes' blocks reserved, so that it
    appears whole or not at all: an unnamed O_TMPFILE in the directory (or one `spare` holds, its blocks
    already reserved) is sized, then linked in under its name. A kill in between leaves nothing; a short file
    would make the broker (and our own writers) refuse the store. Returns an O_RDWR fd."""
    fd = spare.take(path.parent, size) if spare is not None and reserved == size else None
    if fd is not None:
        try:
            return _link_sized(fd, path, size, 0)  # its blocks are reserved already (walking them again is not free)
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise
            # the reservation was made in the store's root, another mount than this directory's (a bind mount of
            # one filesystem): its blocks only proved there was room, so a file of this directory's takes its place
    try:
        fd = os.open(path.parent, os.O_TMPFILE | os.O_RDWR, 0o644)
    except OSError as e:
        if e.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            raise
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)  # a filesystem without O_TMPFILE
        try:
            os.ftruncate(fd, size)
            reserve(fd, reserved, path)
        except BaseException:
            os.close(fd)
            os.unlink(path)
            raise
        return fd
    return _link_sized(fd, path, size, reserved)


def _link_sized(fd: int, path: Path, size: int, reserved: int) -> int:
    """The unnamed file `fd` sized, its first `reserved` bytes' blocks reserved, then linked in as `path`
    (closed if any step fails)."""
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.ftruncate(fd, size)
        reserve(fd, reserved, path)
        # a directory fd makes Python call linkat(..., AT_SYMLINK_FOLLOW), which links the file the /proc
        # entry names; EEXIST if the name is taken, like O_EXCL
        os.link(f"/proc/self/fd/{fd}", path.name, dst_dir_fd=dir_fd, follow_symlinks=True)
    except OSError as e:
        os.close(fd)
        raise OSError(e.errno, e.strerror, str(path)) from None  # named by the file made, not /proc/self/fd/N
    except BaseException:
        os.close(fd)
        raise
    finally:
        os.close(dir_fd)
    return fd


class WritableFile:
    """A fixed-size file mapped read-write, created all zero at full size like the broker's. Writes through
    the mapping never meet a full disk: the blocks under them are reserved first, the whole file (an existing
    file's holes too) or, with `ahead`, the first `ahead` bytes and then by reserve_to as the writes move on
    (a file that fills over time takes its disk space as it goes, not all at once)."""

    def __init__(self, path: Path, size: int, create: bool, ahead: int | None = None, spare: Reserved | None = None):
        self.path = path
        self.created = create
        self.size = size
        first = size if ahead is None else min(size, ahead)
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = create_full_size(path, size, first, spare)
        else:
            self.fd = os.open(path, os.O_RDWR)
        self.reserved = first if create else 0
        try:
            st = os.fstat(self.fd)
            if not create and st.st_size < size:
                raise StoreError(
                    f"file is {st.st_size} bytes, not {size}: rmqctl does not write into a file cut short "
                    "(rmqctl verify names the damage; rmqctl repair pads a last file whose data is whole)",
                    path,
                )
            if not create and ahead is None and st.st_blocks * 512 < size:
                # holes (a copied or broker-made sparse file)
                reserve(self.fd, size, path)
            if not create and ahead is None:
                self.reserved = size
            self.map = mmap.mmap(self.fd, size)
        except BaseException:
            os.close(self.fd)
            raise
        self.dirty = create
        self.released = 0  # release_below's mark

    def reserve_to(self, upto: int):
        """Blocks reserved up to `upto` (and RESERVE_AHEAD beyond), before anything is written below it."""
        if upto > self.reserved:
            end = min(self.size, upto + RESERVE_AHEAD)
            reserve(self.fd, end, self.path, self.reserved)
            self.reserved = end

    def flush(self):
        """msync the mapping, then fsync the file (its size and metadata too)."""
        if self.dirty:
            self.map.flush()
            os.fsync(self.fd)
            self.dirty = False

    def release_below(self, upto: int):
        """Drop this process's mapping of the whole pages below `upto`, durable and never to be written again
        (the data stays in the file and the page cache; a read maps it back): the resident set of a long
        append stays a block's, not the file's."""
        end = upto - upto % mmap.PAGESIZE
        if end > self.released and not self.dirty:
            self.map.madvise(mmap.MADV_DONTNEED, self.released, end - self.released)
            self.released = end

    @property
    def closed(self) -> bool:
        return self.map is None

    def close(self):
        """Flush, unmap and close: a file released once full keeps no page of it in this process."""
        if self.map is None:
            return
        self.flush()
        try:
            self.map.close()
        except BufferError:
            # a view of the map left in a reference cycle (numba's compiling of a kernel keeps its arguments in
            # frames of exceptions it handles): collected, the map closes
            gc.collect()
            self.map.close()
        os.close(self.fd)
        self.map = None


def truncate_dirty_files(files: list, stop: tuple[int, int], directory: Path) -> tuple[list, int]:
    """MappedFileQueue.truncateDirtyFiles after a queue's recovery: writing resumes where the recovery's walk
    stopped (file index, position), and the files past that one are deleted, as the broker's start deletes
    them. They may hold nothing: units there are units the broker drops (append refuses such a queue first).
    Returns the files kept and the write position in the last."""
    k, pos = stop
    past = files[k + 1 :]
    for _, f in past:
        if np.frombuffer(f.map, np.uint8).any():
            raise StoreError(
                "the broker's recovery of this consume queue stops in an earlier file and deletes this one, which "
                "holds units; run `rmqctl verify`, then `rmqctl rebuild consumequeue`",
                f.path,
            )
    for _, f in past:
        f.close()
        f.path.unlink()
    if past:
        fsync_dir(directory)
    return files[: k + 1], pos


class ConsumeQueueWriter:
    """One consumequeue: consumequeue/{topic}/{queueId}/ of `file_size`-byte files of 20-byte units."""

    def __init__(self, directory: Path, file_size: int, spare: Reserved | None = None):
        self.directory = directory
        self.file_size = file_size
        self.spare = spare  # blocks reserved for its new files (Dispatcher.spare)
        self.files: list[tuple[int, WritableFile]] = []
        names = (
            sorted(p.name for p in directory.iterdir() if offset_of_name(p.name) is not None)
            if directory.is_dir()
            else []
        )
        for name in names:
            self.files.append((int(name), WritableFile(directory / name, file_size, create=False)))
        self.wrote = 0  # write position in the last file
        self.max_physic_offset = -1
        self._recover()
        for _, f in self.files[:-1]:  # only the last file is written to
            f.close()

    def _recover(self):
        """ConsumeQueue.recover: maxPhysicOffset as the broker's walk sets it (recovery.walk_queue), and the write
        position where that walk stopped (truncate_dirty_files)."""
        if not self.files:
            return
        units = [np.frombuffer(f.map, dtype=S.CQ_DTYPE, count=self.file_size // S.CQ_UNIT_SIZE) for _, f in self.files]
        self.max_physic_offset, _, stop = walk_queue(len(units), self.file_size, CQ_UNIT, units.__getitem__)
        del units
        self.files, self.wrote = truncate_dirty_files(self.files, stop, self.directory)

    @property
    def max_queue_offset(self) -> int:
        """maxOffsetInQueue: the next queue offset."""
        if not self.files:
            return 0
        return (self.files[-1][0] + self.wrote) // S.CQ_UNIT_SIZE

    def _last_file(self, expect: int) -> tuple[int, WritableFile, bool]:
        """MappedFileQueue.getLastMappedFile(expect): the last file unless full; the first file at
        expect - expect % size; `first_in_queue` when this call created the queue's first file."""
        if self.files and self.wrote < self.file_size:
            start, f = self.files[-1]
            return start, f, False
        first = not self.files
        start = expect - expect % self.file_size if first else self.files[-1][0] + self.file_size
        if self.files:  # the full file is synced and unmapped, as the broker's flush leaves it
            self.files[-1][1].close()
        f = WritableFile(self.directory / offset_to_name(start), self.file_size, create=True, spare=self.spare)
        self.files.append((start, f))
        self.wrote = 0
        return start, f, first

    def open_first(self):
        """The first file of a queue whose first unit has queue offset 0, as put() of that unit creates it: so a
        batch can go to the queue's file in one compiled pass from its first unit on."""
        if not self.files:
            self._last_file(0)

    def put(self, offset: int, size: int, tags: int, cq_offset: int) -> str:
        """putMessagePositionInfo. Returns what happened: 'written', 'already-built' or 'duplicate'; a
        written entry may also be 'out-of-order' (the broker's "[BUG]logic queue order maybe wrong")."""
        if cq_already_built(offset, size, self.max_physic_offset):
            return "already-built"
        expect = cq_offset * S.CQ_UNIT_SIZE
        start, f, first_in_queue = self._last_file(expect)
        if first_in_queue and cq_offset != 0 and self.wrote == 0:
            # fillPreBlank: (0, Integer.MAX_VALUE, 0) units from the file start up to the expected slot
            blank = S.CQ_UNIT.pack(0, S.PRE_BLANK_SIZE, 0)
            upto = expect % self.file_size
            f.map[0:upto] = blank * (upto // S.CQ_UNIT_SIZE)
            self.wrote = upto
        status = cq_put_order(cq_offset, start + self.wrote)
        if status == "duplicate":
            return status
        self.max_physic_offset = offset + size
        f.map[self.wrote : self.wrote + S.CQ_UNIT_SIZE] = S.CQ_UNIT.pack(offset, size, tags)
        f.dirty = True
        self.wrote += S.CQ_UNIT_SIZE
        return status

    def put_run(self, offsets: np.ndarray, sizes: np.ndarray, tags: np.ndarray, first_cq_offset: int) -> bool:
        """put() for units at consecutive queue offsets from `first_cq_offset`, in bulk: only when put() would
        write every one of them as a plain append (the first may still create the queue's first file with
        its pre-blank fill), i.e. their commitlog ends increase, the first is not already built and the
        queue continues at `first_cq_offset`. Otherwise writes nothing and returns False."""
        if not len(offsets):
            return True
        ends = offsets.astype(np.int64) + sizes
        if np.any(ends[1:] <= ends[:-1]) or int(ends[0]) <= self.max_physic_offset:
            return False
        if self.files and self.max_queue_offset != first_cq_offset:
            return False
        self.put(int(offsets[0]), int(sizes[0]), int(tags[0]), first_cq_offset)  # "written", after the checks above
        units = np.empty(len(offsets) - 1, S.CQ_DTYPE)
        units["commitLogOffset"], units["size"], units["tagsCode"] = offsets[1:], sizes[1:], tags[1:]
        data = units.tobytes()
        done = 0
        while done < len(data):
            _, f, _ = self._last_file(0)  # the queue's first file exists: this is the next one when full
            chunk = data[done : done + self.file_size - self.wrote]
            f.map[self.wrote : self.wrote + len(chunk)] = chunk
            f.dirty = True
            self.wrote += len(chunk)
            done += len(chunk)
        self.max_physic_offset = int(ends[-1])
        return True

    def close(self):
        for _, f in self.files:
            f.close()


# parts of a store (rmqctl.parts kinds) the Dispatcher keeps as the broker's dispatch does, beside consumequeue/
# and index/: a writer that only dispatches records handles a store holding them
DISPATCH_PARTS = frozenset({"batchconsumequeue"})


class BatchConsumeQueueWriter:
    """One BatchConsumeQueue: batchconsumequeue/{topic}/{queueId}/ of `file_size`-byte files of 46-byte units,
    each appended where the last file's units end (putBatchMessagePositionInfo; a new queue starts at file 0)."""

    def __init__(self, directory: Path, file_size: int):
        if file_size % S.BCQ_UNIT_SIZE:
            # MappedFile.appendMessage refuses the unit that does not fit and the file is never full: the
            # broker's dispatch retries forever; rmqctl writes nothing
            raise UsageError(
                f"mapperFileSizeBatchConsumeQueue={file_size} is not a multiple of {S.BCQ_UNIT_SIZE}: "
                "a broker with it cannot fill a batchconsumequeue file"
            )
        self.directory, self.file_size = directory, file_size
        names = (
            sorted(p.name for p in directory.iterdir() if offset_of_name(p.name) is not None)
            if directory.is_dir()
            else []
        )
        self.files = [(int(n), WritableFile(directory / n, file_size, create=False)) for n in names]
        self.wrote, self.max_phy = 0, -1  # write position in the last file; maxMsgPhyOffsetInCommitLog
        if self.files:
            self.wrote, self.max_phy = self._recover()
        for _, f in self.files[:-1]:
            f.close()

    def _recover(self) -> tuple[int, int]:
        """BatchConsumeQueue.recover: maxMsgPhyOffsetInCommitLog as the broker's walk sets it
        (recovery.walk_queue), and the write position where that walk stopped (truncate_dirty_files)."""
        count = self.file_size // S.BCQ_UNIT_SIZE
        units = [np.frombuffer(f.map, dtype=S.BCQ_DTYPE, count=count) for _, f in self.files]
        max_phy, _, stop = walk_queue(len(units), self.file_size, BCQ_UNIT, units.__getitem__)
        del units
        self.files, wrote = truncate_dirty_files(self.files, stop, self.directory)
        return wrote, max_phy

    def put(self, unit: tuple[int, int, int, int, int, int]) -> str:
        """putBatchMessagePositionInfo of (commitLogOffset, size, tagsCode, storeTime, msgBaseOffset, batchSize):
        'written', or 'already-built' for a record at or below the last unit's."""
        if bcq_already_built(unit[0], self.max_phy):
            return "already-built"
        if not self.files or self.wrote == self.file_size:
            start = self.files[-1][0] + self.file_size if self.files else 0
            if self.files:
                self.files[-1][1].close()
            self.files.append(
                (start, WritableFile(self.directory / offset_to_name(start), self.file_size, create=True))
            )
            self.wrote = 0
        f = self.files[-1][1]
        f.map[self.wrote : self.wrote + S.BCQ_UNIT_SIZE] = S.BCQ_UNIT.pack(*unit, S.BCQ_INVALID_POS, 0)
        f.dirty = True
        self.wrote += S.BCQ_UNIT_SIZE
        self.max_phy = unit[0]
        return "written"

    def close(self):
        for _, f in self.files:
            f.close()


class IndexFileWriter:
    """One index file (IndexFile.java): header fields are written through as they change, like the
    broker's IndexHeader setters do."""

    def __init__(self, path: Path, slot_num: int, index_num: int, create: bool, end_phy: int = 0, end_ts: int = 0):
        self.path = path
        self.slot_num = slot_num
        self.index_num = index_num
        self.entries_at = S.INDEX_HEADER_SIZE + slot_num * S.HASH_SLOT_SIZE
        # the header and slot table are written anywhere: reserved whole; entries as they are put
        self.file = WritableFile(path, S.index_file_size(slot_num, index_num), create, ahead=self.entries_at)
        h = S.INDEX_HEADER.unpack_from(self.file.map, 0)
        self.begin_ts, self.end_ts, self.begin_phy, self.end_phy, self.hash_slot_count, count = h
        self.index_count = max(count, 1)  # in memory it starts at 1; load() forces <= 0 to 1
        if create:
            # the constructor presets begin/end from the previous file's end values
            if end_phy > 0:
                self.begin_phy = self.end_phy = end_phy
            if end_ts > 0:
                self.begin_ts = self.end_ts = end_ts
            self._write_header(count=0)

    def _write_header(self, count: int | None = None):
        S.INDEX_HEADER.pack_into(
            self.file.map,
            0,
            self.begin_ts,
            self.end_ts,
            self.begin_phy,
            self.end_phy,
            self.hash_slot_count,
            self.index_count if count is None else count,
        )
        self.file.dirty = True

    @property
    def full(self) -> bool:
        return self.index_count >= self.index_num

    def reserve_entries(self, n: int):
        """Blocks for the next `n` entries (as many as fit)."""
        self.file.reserve_to(self.entries_at + min(self.index_num, self.index_count + n) * S.INDEX_ENTRY_SIZE)

    def put_key(self, key_hash: int, phy_offset: int, store_ts: int) -> bool:
        """IndexFile.putKey; False when the file is full."""
        if self.full:
            return False
        self.reserve_entries(1)
        m = self.file.map
        slot_pos = S.INDEX_HEADER_SIZE + index_slot(key_hash, self.slot_num) * S.HASH_SLOT_SIZE
        slot_value = S.INT32.unpack_from(m, slot_pos)[0]
        if slot_value <= 0 or slot_value > self.index_count:
            slot_value = 0
        diff = index_time_diff(store_ts, self.begin_ts)
        entry_pos = S.INDEX_HEADER_SIZE + self.slot_num * S.HASH_SLOT_SIZE + self.index_count * S.INDEX_ENTRY_SIZE
        S.INDEX_ENTRY.pack_into(m, entry_pos, key_hash, phy_offset, diff, slot_value)
        S.INT32.pack_into(m, slot_pos, self.index_count)
        if self.index_count <= 1:
            self.begin_phy = phy_offset
            self.begin_ts = store_ts
        if slot_value == 0:
            self.hash_slot_count += 1
        self.index_count += 1
        self.end_phy = phy_offset
        self.end_ts = store_ts
        self._write_header()
        return True

    def put_keys(self, key_hashes: np.ndarray, phys: np.ndarray, timestamps: np.ndarray) -> int:
        """put_key for as many of the keys as fit, in one compiled loop (engine.index.put_keys);
        returns how many were put."""
        first = self.index_count
        self.reserve_entries(len(key_hashes))
        k, used = put_index_keys(
            np.frombuffer(self.file.map, np.uint8),
            self.slot_num,
            self.index_num,
            first,
            self.begin_ts,
            key_hashes,
            phys,
            timestamps,
        )
        if k <= 0:
            return 0
        if first <= 1:
            self.begin_phy, self.begin_ts = int(phys[0]), int(timestamps[0])
        self.hash_slot_count += used
        self.index_count += k
        self.end_phy, self.end_ts = int(phys[k - 1]), int(timestamps[k - 1])
        self.file.dirty = True
        self._write_header()
        return k


def index_file_name(millis: int) -> str:
    """UtilAll.timeMillisToHumanString: yyyyMMddHHmmssSSS in local time."""
    t = dt.datetime.fromtimestamp(millis / 1000)
    return t.strftime("%Y%m%d%H%M%S") + f"{millis % 1000:03d}"


class IndexWriter:
    """IndexService: the list of index files in a directory, putting keys into the last one and rolling
    over to a new file (named by the current time) when it is full."""

    def __init__(self, directory: Path, slot_num: int, index_num: int, clock=None, by_store_time: bool = False):
        self.directory = directory
        self.slot_num = slot_num
        self.index_num = index_num
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.by_store_time = by_store_time  # name a new file by its first message's store time (reproducible copies)
        names = (
            sorted(p.name for p in directory.iterdir() if INDEX_FILE_NAME.match(p.name)) if directory.is_dir() else []
        )
        self.files = [IndexFileWriter(directory / n, slot_num, index_num, create=False) for n in names]
        for f in self.files[:-1]:  # only the last file takes keys
            f.file.close()
        self.completed_end_ts = 0  # endTimestamp of the newest full file: the checkpoint's indexMsgTimestamp
        self.file_size = S.index_file_size(slot_num, index_num)

    def _last(self, store_ts: int) -> IndexFileWriter:
        """The file taking keys; a new one when full, for a message stored at `store_ts`."""
        if self.files and not self.files[-1].full:
            return self.files[-1]
        prev = self.files[-1] if self.files else None
        name = index_file_name(store_ts if self.by_store_time else self.clock())
        if prev is not None and name <= prev.path.name:
            # two files in one millisecond: keep names unique and in creation order
            name = index_file_name(
                int(dt.datetime.strptime(prev.path.name[:14], "%Y%m%d%H%M%S").timestamp() * 1000)
                + int(prev.path.name[14:])
                + 1
            )
        self.directory.mkdir(parents=True, exist_ok=True)
        f = IndexFileWriter(
            self.directory / name,
            self.slot_num,
            self.index_num,
            create=True,
            end_phy=prev.end_phy if prev else 0,
            end_ts=prev.end_ts if prev else 0,
        )
        if prev is not None:
            self.completed_end_ts = prev.end_ts
            prev.file.close()  # full: synced and unmapped
        self.files.append(f)
        return f

    def build(self, m: Message, phy_offset: int):
        """IndexService.buildIndex for one record."""
        f = self._last(m.storeTimestamp)
        if phy_offset < f.end_phy:
            return  # already indexed
        for key in index_keys(m):
            h = index_key_hash(key)
            while not f.put_key(h, phy_offset, m.storeTimestamp):
                f = self._last(m.storeTimestamp)

    def build_many(
        self,
        key_hashes: np.ndarray,
        phys: np.ndarray,
        timestamps: np.ndarray,
        last_message: int | None,
        last_ts: int = 0,
    ):
        """build() for many messages at once when none of them is already indexed (their commitlog offsets
        increase past the last file's endPhyOffset): their keys in order, rolling over as build() does, then
        the file the broker creates when a message (with keys or not; `last_message` is the newest one's
        offset, `last_ts` its store time) comes after a full one."""
        done = 0
        while done < len(key_hashes):
            done += self._last(int(timestamps[done])).put_keys(key_hashes[done:], phys[done:], timestamps[done:])
        if last_message is not None and (
            not self.files or (self.files[-1].full and last_message > self.files[-1].end_phy)
        ):
            self._last(last_ts)

    def reserve_keys(self, keys: int):
        """Blocks for `keys` more entries in the last file (new files reserve theirs as they are created)."""
        if self.files and not self.files[-1].full:
            self.files[-1].reserve_entries(keys)

    def new_file_size(self, keys: int) -> int:
        """What a new file holding (up to) `keys` entries reserves."""
        return min(
            self.file_size,
            S.INDEX_HEADER_SIZE
            + self.slot_num * S.HASH_SLOT_SIZE
            + min(keys, self.index_num) * S.INDEX_ENTRY_SIZE
            + RESERVE_AHEAD,
        )

    def flush(self):
        for f in self.files:
            f.file.flush()

    def close(self):
        for f in self.files:
            f.file.close()


class Dispatcher:
    """The broker's dispatch of one record into consumequeues and index, writing under `root` (the store,
    or a build directory laid out like one)."""

    def __init__(
        self,
        root: Path,
        config: BrokerConfig,
        cq_file_size: int,
        slot_num: int,
        index_num: int,
        v5: bool,
        build_cq: bool = True,
        build_index: bool = True,
        index_clock=None,
        queue_filter=None,
        index_by_store_time: bool = False,
        batch_topics: frozenset = frozenset(),
        batch_file_size: int = 0,
        batch_root: Path | None = None,
    ):
        self.root = root
        self.config = config
        self.v5 = v5  # the broker's dispatch rules: 5.x's (rules.multi_dispatched_topic) or 4.9's
        self.cq_file_size = cq_file_size
        self.queues: dict[tuple[str, int], ConsumeQueueWriter] = {}
        # topics whose own queue is a BatchConsumeQueue (batchcq.batch_topics), and those queues' writers
        self.batch_topics, self.batch_file_size = batch_topics, batch_file_size
        # where batchconsumequeue/ is built: beside consumequeue/ unless that is on another filesystem (txn.area)
        self.batch_root = batch_root or root / "batchconsumequeue"
        self.batch_queues: dict[tuple[str, int], BatchConsumeQueueWriter] = {}
        self.build_cq = build_cq
        self.queue_filter = queue_filter
        self.spare = Reserved(cq_file_size)  # blocks a writer reserved for the consumequeue files it creates next
        self.index = (
            IndexWriter(root / "index", slot_num, index_num, index_clock, index_by_store_time)
            if build_index and config.messageIndexEnable
            else None
        )
        self.logics_ts = 0
        self.events: list[tuple[str, str, int, int]] = []  # (status, queue, cq offset, commitlog offset) oddities

    def queue(self, topic: str, qid: int) -> ConsumeQueueWriter:
        w = self.queues.get((topic, qid))
        if w is None:
            w = ConsumeQueueWriter(self.root / "consumequeue" / topic / str(qid), self.cq_file_size, self.spare)
            self.queues[(topic, qid)] = w
        return w

    def batch_queue(self, topic: str, qid: int) -> BatchConsumeQueueWriter:
        w = self.batch_queues.get((topic, qid))
        if w is None:
            w = BatchConsumeQueueWriter(self.batch_root / topic / str(qid), self.batch_file_size)
            self.batch_queues[(topic, qid)] = w
        return w

    def dispatch_batch(self, m: Message) -> bool:
        """The record's unit into its topic's BatchConsumeQueue; False when the broker writes none."""
        unit = batch_unit(m, self.config)
        if unit is None or (self.queue_filter and not self.queue_filter(m.topic, m.queueId)):
            return False
        if not valid_topic_dir_name(m.topic):
            raise StoreError(
                f"topic {m.topic!r} of the record at commitlog offset {unit[0]} cannot be a "
                "batchconsumequeue directory name; refusing to dispatch it",
                self.batch_root,
            )
        if self.batch_queue(m.topic, m.queueId).put(unit) == "written":
            self.logics_ts = m.storeTimestamp
        return True

    def dispatch(self, m: Message, phy_offset: int):
        if self.build_cq:
            targets = cq_targets(m, self.config, self.v5)
            if targets and m.topic in self.batch_topics:
                self.dispatch_batch(m)
                targets = targets[1:]  # its LMQ copies (multi-dispatch) still go to consumequeue/
            if targets:
                code = tags_code(m, self.config)
                for topic, qid, qoff in targets:
                    if not valid_topic_dir_name(topic):  # a record's topic (or LMQ name) must not lead out of the store
                        raise StoreError(
                            f"topic {topic!r} of the record at commitlog offset {phy_offset} cannot be a "
                            "consumequeue directory name; refusing to dispatch it",
                            self.root / "consumequeue",
                        )
                    if self.queue_filter and not self.queue_filter(topic, qid):
                        continue
                    status = self.queue(topic, qid).put(phy_offset, m.storeSize, code, qoff)
                    if status != "written":
                        self.events.append((status, f"{topic}/{qid}", qoff, phy_offset))
                    if status in ("written", "out-of-order"):
                        self.logics_ts = m.storeTimestamp
        if self.index is not None:
            self.index.build(m, phy_offset)

    def flush(self):
        """msync every written file, then fsync the directories that gained files."""
        dirs = set()
        for w in [*self.queues.values(), *self.batch_queues.values()]:
            for _, f in w.files:
                f.flush()
                if f.created:
                    dirs.update((f.path.parent, f.path.parent.parent, f.path.parent.parent.parent))
        if self.index is not None:
            self.index.flush()
            dirs.add(self.index.directory)
        for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
            if d.is_dir():
                fsync_dir(d)

    def close(self):
        self.spare.free()
        self.flush()
        for w in [*self.queues.values(), *self.batch_queues.values()]:
            w.close()
        if self.index is not None:
            self.index.close()


def space_needed(d: "Dispatcher", records: list[tuple[int, Message]]) -> list[int]:
    """The sizes of the new files that `d` dispatching `records` (offset, record) may create: new_file_sizes of
    their consumequeue entries and index keys."""
    units: dict[tuple[str, int], list[int]] = {}
    keys = 0
    for _, m in records:
        if d.build_cq:
            for topic, qid, qoff in cq_targets(m, d.config, d.v5):
                units.setdefault((topic, qid), [qoff, 0])[1] += 1
        if d.index is not None:
            keys += len(index_keys(m))
    return new_file_sizes(d, units, keys)


def new_file_sizes(d: "Dispatcher", units: dict[tuple[str, int], list[int]], keys: int) -> list[int]:
    """The sizes of the new files that `d` may create (at most one file more than it needs per queue or
    index) for `units` ((topic, queueId) -> [first queue offset, entries]) and `keys` index keys:
    consumequeue files for the units past each queue's last file, index files for the keys past the last
    one's room. Reserved before the commitlog is made durable, so a full disk stops a write before it
    changes anything."""
    per_file = d.cq_file_size // S.CQ_UNIT_SIZE
    sizes = []
    for (topic, qid), (first, n) in units.items():
        if d.queue_filter and not d.queue_filter(topic, qid):
            continue
        w = d.queue(topic, qid)
        # a new queue's first file starts with pre-blank units up to its first offset
        room = (d.cq_file_size - w.wrote) // S.CQ_UNIT_SIZE if w.files else -(first % per_file)
        sizes += [d.cq_file_size] * -(-max(0, n - room) // per_file)
    d.spare.planned = len(sizes)  # the consumequeue files, whose reservations they take (reserve_free_space)
    if d.index is not None:
        ix = d.index
        room = ix.files[-1].index_num - ix.files[-1].index_count if ix.files else 0
        # entry 0 is unused; a record after a full file opens one more
        sizes += [ix.new_file_size(keys)] * -(-max(0, keys - room + 1) // (ix.index_num - 1))
    return sizes
