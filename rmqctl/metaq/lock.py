"""What keeps rmqctl's MetaQ writers and a running broker apart.

Metamorphosis 1.4.6.2 takes no lock on its data: there is no FileLock, tryLock or lock file anywhere in the
broker. What a running broker does hold is every segment of every partition it loaded, open through a
`RandomAccessFile(file, "rw")` channel from load until close (MessageStore.Segment). So a writer here:

1. refuses while any other process has a `.meta` file of the partition open (read from /proc/*/fd);
2. takes rmqctl's own lock, an fcntl lock on `{partition}/.rmqctl/lock` (the same `store_lock` as for
   RocketMQ), so two rmqctl writers never overlap, and finishes or undoes an interrupted rmqctl run there.

`.rmqctl/` is a directory inside the partition directory: loadSegments takes only regular files ending in
`.meta`, so the broker never sees it (a directory beside the partitions would change how the broker's
loadDataDir batches its partitions).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from .. import schema_metaq as M
from ..errors import LockHeldError
from ..txn import fsync_dir, locked_for_writing
from .store import RMQCTL_DIR


def segment_holders(partition_dir: Path) -> dict[int, str]:
    """pid -> a segment file of `partition_dir` that another process has open (root sees every process)."""
    base = os.path.realpath(partition_dir) + os.sep
    holders: dict[int, str] = {}
    me = os.getpid()
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit() or int(pid_dir.name) == me:
            continue
        try:
            fds = os.listdir(pid_dir / "fd")
        except OSError:  # gone, or not ours to read
            continue
        for fd in fds:
            try:
                target = os.readlink(pid_dir / "fd" / fd)
            except OSError:
                continue
            if target.startswith(base) and target.endswith(M.SEGMENT_SUFFIX) and os.sep not in target[len(base) :]:
                holders[int(pid_dir.name)] = target
                break
    return holders


def refuse_if_open(partition_dir: Path):
    holders = segment_holders(partition_dir)
    if holders:
        pid, path = next(iter(holders.items()))
        raise LockHeldError(
            f"process {pid} has segment {Path(path).name} open: a MetaQ broker holds every segment "
            "open while it runs (it takes no lock file); stop it first",
            partition_dir,
        )


@contextlib.contextmanager
def partition_lock(partition_dir: Path):
    """Hold rmqctl's lock on one partition (after checking no broker has it open); yields `.rmqctl/`."""
    refuse_if_open(partition_dir)
    own = Path(partition_dir) / RMQCTL_DIR
    if not own.is_dir():
        own.mkdir()
        fsync_dir(Path(partition_dir))
    with locked_for_writing(own):
        yield own
