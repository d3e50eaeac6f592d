"""A new file set, staged and checked before it is swapped in: what rebuild and repair share. Both hold the
lock and finish an interrupted run first (`writing`), stage a changed checkpoint, and run verify's checks on
the store as the swap will leave it (`verify_staged`, through `post_commit_view`); a dry run plans the same
swap without committing it (`DryRunPlan`), so it is checked the same way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
from pathlib import Path


from .. import schema as S
from ..batchcq import DIRECTORY as BATCH_DIRECTORY
from ..budget import DEFAULT_MEMORY
from ..timerstore import TimerFiles, field_offset
from ..store import IndexFile, Store, elsewhere, in_store, refuse_links_outside
from .writers import Dispatcher
from ..txn import Transaction, locked_for_writing, pending
from ..checks.verify import verify


@contextlib.contextmanager
def writing(store: Store, dry_run: bool, writer: str, extra_dirs=(), understood: frozenset[str] = frozenset()):
    """Hold the broker's lock for the whole run and apply the recovery rule first. Yields what an earlier
    killed run left (and what was done about it) and the store to work on: reopened when the recovery
    changed files or a snapshot of another holder's store was taken, so nothing read before it is used. A dry
    run writes nothing and takes no lock: it previews a running broker's store (as its snapshot) or a
    read-only copy, and only reports leftovers (with `lockHeldBy` when a process holds the lock: then they
    may be that process's run in progress, not an interrupted one). A store holding
    a part this version does not read is refused first (`writer` names the command; `understood`: the kinds of
    part it writes), dry runs included: their plan would be wrong."""
    store.parts.refuse_writer(writer, understood)
    extra_dirs = [*extra_dirs, *elsewhere(store)]  # a killed run's staging beside them is its too
    if dry_run:
        left = pending(store.root, extra_dirs)
        holder = store.lock_holder()
        yield ({**left, "lockHeldBy": holder} if left is not None and holder is not None else left), store
        return
    with locked_for_writing(store.root, extra_dirs) as done:
        refuse_links_outside(store)
        # a snapshot taken while another process held the lock (before --wait got it) is where the store
        # ended then: the writer reads the store as it is now that nothing else writes it
        if done or store.__dict__.get("live") is not None:
            store.close()
            store = Store(store.root, store.config)
        yield done, store


def store_transaction(store: Store, kind: str, command: str, keep_backup: bool = True) -> Transaction:
    """A transaction on `store` whose staging for a directory on another filesystem (store.elsewhere) goes
    beside that directory, where `writing` looks for a killed run's staging."""
    return Transaction(store.root, kind, command, keep_backup, beside=elsewhere(store))


def stage_checkpoint(store: Store, txn: Transaction | None, result_fields: dict, **values) -> None:
    """Write a copy of the checkpoint with some fields changed into the staging area and plan its swap.
    Records [before, after] of every field that changes in `result_fields`. No checkpoint file: nothing
    (the broker creates it at start)."""
    cp = store.checkpoint()
    if cp is None:
        return
    changes = {k: v for k, v in values.items() if cp[k] != v}
    if not changes:
        return
    result_fields.update({k: [cp[k], v] for k, v in changes.items()})
    if txn is None:
        return
    data = bytearray(store.checkpoint_path.read_bytes())
    data.extend(bytes(max(0, S.CHECKPOINT_FILE_SIZE - len(data))))
    for k, v in changes.items():
        S.INT64.pack_into(data, S.CHECKPOINT_AT[k], v)
    staged = txn.area(store.root) / "checkpoint"
    staged.write_bytes(bytes(data))
    txn.replace(store.checkpoint_path, staged)


class DryRunPlan:
    """A dry run's stand-in for a Transaction: its staging directory (a temporary one outside the store)
    and the swap a real run would plan, for `post_commit_view`; it has no commit."""

    def __init__(self, staging: Path):
        self.staging = staging
        self.ops: list[dict] = []

    def area(self, near: Path) -> Path:
        return self.staging

    def replace(self, target: Path, staged: Path):
        self.ops.append({"op": "replace", "target": str(target.resolve()), "staged": str(staged.resolve())})

    def remove(self, target: Path):
        self.ops.append({"op": "remove", "target": str(target.resolve())})


@dataclasses.dataclass
class Build:
    """What one dispatch run produced and what it was asked to produce (for the checks of the result)."""

    dispatcher: Dispatcher
    records: int
    queued: dict  # (topic, qid) -> consumequeue entries dispatched to it
    keys: int  # index keys put
    warnings: list[str]
    queued_batch: dict = dataclasses.field(default_factory=dict)  # (topic, qid) -> batchconsumequeue units


def post_commit_view(store: Store, txn: Transaction) -> Path:
    """The store as the transaction will leave it, as symlinks in the transaction's staging directory (so
    a killed run's view goes with its staging): the live files, the staged ones in place of those replaced,
    the removed ones left out (commitlog files of every commitlog directory together in view/commitlog)."""
    view = Path(tempfile.mkdtemp(prefix="view-", dir=txn.staging))

    def link(src: Path, dst: Path):
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
            for child in src.iterdir():
                link(child, dst / child.name)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.symlink_to(src.resolve())

    def place(target: Path) -> Path:
        target = target.resolve()
        if target.parent in {d.resolve() for d in store.commitlog_dirs}:
            return view / "commitlog" / target.name
        return view / in_store(store, target)

    (view / "commitlog").mkdir()
    for d in store.commitlog_dirs:
        for f in d.iterdir() if d.is_dir() else ():
            if f.is_file():
                link(f, view / "commitlog" / f.name)
    names = [
        "consumequeue",
        BATCH_DIRECTORY,
        "index",
        "checkpoint",
        "abort",
        "lock",
        "timerlog",
        "timerwheel",
        "config",
    ]
    if store.dledger is not None:  # its index, checkpoint and currterm (the data files are in view/commitlog)
        names.append(store.dledger.home.name)
    for name in names:
        if (store.root / name).exists():
            link(store.root / name, view / name)
    for op in txn.ops:
        at = place(Path(op["target"]))
        if at.is_dir() and not at.is_symlink():
            shutil.rmtree(at)
        elif at.is_symlink() or at.exists():
            at.unlink()
        if op["op"] == "replace":
            link(Path(op["staged"]), at)
    return view


def verify_staged(
    store: Store,
    txn: "Transaction | DryRunPlan",
    only: str | None,
    within: tuple[str, ...] = (),
    accepted=lambda finding: False,
    memory: int = DEFAULT_MEMORY,
) -> list[str]:
    """verify (checks/verify.py, the checks of `only`) on the state the transaction will leave: its errors,
    except those verify calls consequences of commitlog damage (no rebuild or repair of these files can
    change them), those outside `within` (path prefixes relative to the store) when given, and those
    `accepted`. It is verify's own run over the staged store, within `memory` as verify is."""
    view = post_commit_view(store, txn)
    try:
        if store.dledger is not None:
            config = dataclasses.replace(
                store.config,
                storePathCommitLog=None,
                storePathRootDir=None,
                enableDLegerCommitLog=True,
                dLegerSelfId=store.dledger.home.name[len("dledger-") :],
                storePathDLedgerCommitLog=str(view / "commitlog"),
            )
        else:
            config = dataclasses.replace(
                store.config, storePathCommitLog=str(view / "commitlog"), storePathRootDir=None
            )
        staged = Store(view, config)
        findings = verify(staged, only=only, memory=memory).findings
    finally:
        shutil.rmtree(view)
    return [
        f"{f.file}: {f.kind}: {f.detail}"
        for f in findings
        if f.severity == "error"
        and "a direct consequence of" not in f.detail
        and not accepted(f)
        and (not within or (f.file or "").startswith(within))
    ]


def index_count_check(build: Build, index_dir: Path, slots: int, num: int) -> list[str]:
    """As many entries in the files' headers as keys dispatched."""
    total = sum(IndexFile(p, slots, num).entry_count for p in sorted(index_dir.iterdir()))
    return [] if total == build.keys else [f"{total} index entries written for {build.keys} keys dispatched"]


def last_full_end(files: list[IndexFile]) -> int:
    """The checkpoint's indexMsgTimestamp: the endTimestamp of the last full index file (the broker sets it
    when it flushes a full file at rollover; every file here is durable, so a full last file counts too)."""
    full = [ix for ix in files if ix.index_count >= ix.index_num]
    return full[-1].header["endTimestamp"] if full else 0


def stage_timercheck(store: Store, txn, changes: dict) -> None:
    """A copy of config/timercheck with `changes` (field -> (before, after)) planned into `txn`'s swap."""
    if not changes or txn is None:
        return
    path = TimerFiles(store).timercheck_path
    data = bytearray(path.read_bytes())
    data.extend(bytes(max(0, S.TIMERCHECK_FILE_SIZE - len(data))))
    for name, (_, after) in changes.items():
        S.INT64.pack_into(data, field_offset(S.TimerCheckpoint, name), after)
    staged = txn.area(store.root) / "timercheck"
    staged.write_bytes(bytes(data))
    txn.replace(path, staged)
