"""Swapping rebuilt or repaired files into a store so that a kill at any moment leaves the old or the new
state, never a mix, and the recovery rule that finishes (or undoes) a run that was killed.

How a writing operation changes a store (`rebuild`, `repair`):

1. It builds every replacement in a staging directory inside the store, `{store}/.rmqctl-<kind>-XXXX`
   (on the same filesystem as what it replaces, so renames work), and fsyncs it. The store is untouched.
2. **Commit point**: it writes the intent file `{store}/.rmqctl-intent` (JSON: every step, with absolute
   paths and the store root they were written under: read in a store copied or moved since, they are taken
   to where it is now, `at_root`) under a temporary name, fsyncs it, renames it into place and fsyncs the store directory.
3. It applies the steps: *replace* swaps the staged item and the live one with one
   `renameat2(RENAME_EXCHANGE)` (a directory or a file changes in a single atomic step), then moves the old
   one (now at the staged path) into the backup directory `{store}/.rmqctl-backup-<time>/`; *remove* renames
   the live item into the backup directory. Parent directories are fsynced after each step.
   With the backup kept, `.rmqctl-backup.json` in the store's backup directory lists every step (target,
   where its old item went, whether the target existed before): `rmqctl restore` (maintenance/restore.py) reads it.
4. With `--no-backup` it deletes the backup directory (the new state is durable by then), deletes the
   staging directory, then the intent file, and fsyncs the store directory.

Recovery rule (`complete_pending`, run under the broker lock by every writing command through
`locked_for_writing`, reported by `pending`):

* no intent file: anything named `.rmqctl-rebuild-*`, `.rmqctl-repair-*`, `.rmqctl-config-*`,
  `.rmqctl-clean-*` or `.rmqctl-intent.tmp` is an uncommitted build: deleted (rolled back; the store never saw it).
* an intent file: the run committed; its steps are re-applied (rolled forward). Every step is idempotent:
  a replacement that already happened is recognised by the staged item's inode number, recorded in the
  intent, now being the live one.

A broker must not be started while an intent is pending (between commit and completion the live files may
be part old, part new); the next rmqctl writing command, or `rmqctl repair --dry-run`'s report, shows it.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import errno
import json
import os
import shutil
import tempfile
from pathlib import Path

from .errors import DiskFullError, StoreError
from .lock import store_lock

INTENT_NAME = ".rmqctl-intent"
INTENT_TMP = INTENT_NAME + ".tmp"
STAGING_PREFIXES = (".rmqctl-rebuild-", ".rmqctl-repair-", ".rmqctl-config-", ".rmqctl-clean-", ".rmqctl-restore-")
BACKUP_MANIFEST = ".rmqctl-backup.json"
BACKUP_PREFIX = ".rmqctl-backup-"
RENAME_EXCHANGE = 2  # linux/fs.h
AT_FDCWD = -100

_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)


def fsync_dir(path: Path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (renameat2 RENAME_EXCHANGE). False when the filesystem or kernel cannot."""
    if _renameat2 is None:
        return False
    if _renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def fsync_tree(path: Path):
    """fsync every file and directory under `path` (deepest first), then `path` itself."""
    for dirpath, dirnames, filenames in os.walk(path, topdown=False):
        for name in filenames:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(dirpath))


def _exists(p: Path) -> bool:
    return os.path.lexists(p)


def _inode(p: Path) -> tuple[int, int]:
    st = os.lstat(p)
    return st.st_dev, st.st_ino


def _make_parents(path: Path):
    """Create the missing directories above `path`, each made durable in its parent."""
    missing = []
    for parent in path.parents:
        if parent.is_dir():
            break
        missing.append(parent)
    for d in reversed(missing):
        d.mkdir()
        fsync_dir(d.parent)


def _rename(src: Path, dst: Path):
    _make_parents(dst)
    os.rename(src, dst)
    fsync_dir(src.parent)
    fsync_dir(dst.parent)


class Transaction:
    """One atomic change of a store: staged replacements and removals, committed by the intent file."""

    def __init__(
        self,
        root: Path,
        kind: str,
        command: str,
        keep_backup: bool = True,
        base: Path | None = None,
        beside: list[Path] = (),
    ):
        self.root = Path(root).resolve()
        # the store's directories on other filesystems (store.elsewhere): staging for what lies under one of
        # them goes beside it, never into a directory the broker lists (a topic's, a commitlog's)
        self.beside = [Path(d).resolve() for d in beside]
        # backups keep their path relative to `base` (the store root unless the caller's files live above
        # `root`, as MetaQ's segments do around its partition's .rmqctl directory)
        self.base = Path(base).resolve() if base is not None else self.root
        self.kind = kind
        self.command = command
        self.keep_backup = keep_backup
        self.staging = Path(tempfile.mkdtemp(prefix=f".rmqctl-{kind}-", dir=self.root))
        self._areas: dict[int, Path] = {os.stat(self.root).st_dev: self.staging}
        stamp = dt.datetime.now().strftime("%Y%m%d%H%M%S%f")[:17]
        self.backup_name = BACKUP_PREFIX + stamp
        self.ops: list[dict] = []
        self.committed = False

    # -- building -----------------------------------------------------------------------------------------
    def area(self, near: Path) -> Path:
        """A staging directory on the same filesystem as `near` (the store's own, unless `near` lives on
        another filesystem, e.g. a commitlog directory elsewhere: then one in its parent directory). A `near`
        not made yet (a topic's consumequeue directory a rebuild brings back) is where its nearest existing
        parent is."""
        near = next(p for p in (Path(near), *Path(near).parents) if p.exists())
        dev = os.stat(near).st_dev
        if dev not in self._areas:
            real = Path(near).resolve()
            parent = next((d.parent for d in self.beside if d == real or d in real.parents), real.parent)
            if os.stat(parent).st_dev != dev:
                raise StoreError("is a mount point: no directory on its filesystem to stage a replacement in", near)
            self._areas[dev] = Path(tempfile.mkdtemp(prefix=self.staging.name + "-", dir=parent))
        return self._areas[dev]

    def _backup_path(self, target: Path) -> Path:
        """Where the replaced or removed item is kept: the backup directory on the item's filesystem, under
        its path relative to the store (or its absolute path, for a directory elsewhere: a commitlog directory
        the config names, or what a top-level symlink leads to)."""
        base = self.area(target).parent / self.backup_name
        try:
            rel = target.resolve().relative_to(self.base)
        except ValueError:
            rel = Path(str(target.resolve()).lstrip("/"))
        return base / rel

    def replace(self, target: Path, staged: Path):
        """`target` becomes the staged file or directory (added if `target` does not exist yet)."""
        self.ops.append(
            {
                "op": "replace",
                "target": str(target.resolve()),
                "staged": str(staged.resolve()),
                "backup": str(self._backup_path(target)),
            }
        )

    def remove(self, target: Path):
        self.ops.append({"op": "remove", "target": str(target.resolve()), "backup": str(self._backup_path(target))})

    # -- commit -------------------------------------------------------------------------------------------
    def commit(self) -> dict:
        """Make the staged state durable, write the intent (the commit point), apply it, clean up."""
        for area in self._areas.values():
            fsync_tree(area)
        for op in self.ops:
            op["existed"] = _exists(Path(op["target"]))  # for `restore`: an item the run added is taken away
            if op["op"] == "replace":
                op["inode"] = list(_inode(Path(op["staged"])))
        intent = {
            "version": 1,
            "command": self.command,
            "pid": os.getpid(),
            "root": str(self.root),
            "base": str(self.base),
            "created": dt.datetime.now().isoformat(timespec="milliseconds"),
            "staging": [str(a) for a in self._areas.values()],
            "backups": sorted({str(a.parent / self.backup_name) for a in self._areas.values()}),
            "keepBackup": self.keep_backup,
            "ops": self.ops,
        }
        tmp = self.root / INTENT_TMP
        try:
            with open(tmp, "w") as f:
                json.dump(intent, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:  # before the commit point: the store is untouched; leave no half intent behind
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFullError(
                    "no space left on the device for the intent file: nothing was changed", tmp
                ) from None
            raise
        os.rename(tmp, self.root / INTENT_NAME)
        fsync_dir(self.root)
        self.committed = True
        return apply_intent(self.root, intent)

    def discard(self):
        """Give up before the commit point: the store was never touched."""
        if self.committed:
            return
        for area in self._areas.values():
            shutil.rmtree(area, ignore_errors=True)
        for area in self._areas.values():
            if area.parent.is_dir():
                fsync_dir(area.parent)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.discard()
        return False


def _apply_op(op: dict):
    target, backup = Path(op["target"]), Path(op["backup"])
    if op["op"] == "remove":
        if _exists(target):
            _rename(target, backup)
        return
    staged = Path(op["staged"])
    inode = tuple(op["inode"])
    if _exists(target) and _inode(target) == inode:
        if _exists(staged):  # swapped already; the old item still sits at the staged path
            _rename(staged, backup)
        return
    if not _exists(staged):
        raise StoreError("intent step cannot be completed: the staged copy is gone and the live one is not it", target)
    if not _exists(target):
        _rename(staged, target)
        return
    if exchange(staged, target):
        fsync_dir(target.parent)
        fsync_dir(staged.parent)
        _rename(staged, backup)
    else:  # no RENAME_EXCHANGE here: two renames, still idempotent (a missing target is finished above)
        _rename(target, backup)
        _rename(staged, target)


def apply_intent(root: Path, intent: dict) -> dict:
    """Roll a committed intent forward (idempotent), then remove staging, backup (unless kept) and intent."""
    for op in intent["ops"]:
        _apply_op(op)
    if intent["keepBackup"]:
        _write_manifest(Path(root), intent)
    for area in intent["staging"]:
        if os.path.isdir(area):
            shutil.rmtree(area)
            fsync_dir(Path(area).parent)
    backups = [b for b in intent["backups"] if os.path.isdir(b)]
    if not intent["keepBackup"]:
        for b in backups:
            shutil.rmtree(b)
            fsync_dir(Path(b).parent)
        backups = []
    os.unlink(Path(root) / INTENT_NAME)
    fsync_dir(Path(root))
    own = [b for b in backups if Path(b).parent == Path(root)]  # the one `restore` lists, with the manifest
    return {"command": intent["command"], "steps": len(intent["ops"]), "backup": (own or backups or [None])[0]}


def _write_manifest(root: Path, intent: dict):
    """What `restore` needs to undo the run, kept in the store's own backup directory: each step's target,
    where its old item went (if it had one) and whether the target existed before. Rewritten whole on a
    roll-forward, so it is complete once the intent is gone."""
    if not intent["backups"]:
        return
    # in the store's own backup directory even when every item went to one beside a directory elsewhere (a
    # commitlog directory the config names, a top-level symlink's target): `restore` lists the store's
    home = Path(root) / Path(intent["backups"][0]).name
    home.mkdir(exist_ok=True)
    manifest = {
        "version": 1,
        "command": intent["command"],
        "created": intent["created"],
        "root": str(Path(root).resolve()),
        "base": intent.get("base", str(Path(root).resolve())),
        "steps": [{k: op[k] for k in ("op", "target", "backup", "existed") if k in op} for op in intent["ops"]],
    }
    tmp = home / (BACKUP_MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, home / BACKUP_MANIFEST)
    fsync_dir(home)
    fsync_dir(root)


def read_intent(root: Path) -> dict | None:
    p = Path(root) / INTENT_NAME
    try:
        text = p.read_text()
    except FileNotFoundError:
        return None
    try:
        intent = json.loads(text)
    except ValueError:
        raise StoreError("unreadable intent file: finish or undo the interrupted rmqctl run by hand", p) from None
    return at_root(intent, root, Path(intent["staging"][0]).parent if intent.get("staging") else Path(root))


def at_root(record: dict, root: Path, written_in: Path) -> dict:
    """An intent or a backup manifest, its absolute paths taken to where the store is now. A store copied or
    moved since it was written (another disk, another mount point) must act on itself, never on the place
    it was written in: that may be another store by now, or one a broker runs. `written_in`: the store root
    it was written in, for a record older than its own "root" field. A path outside the store (a commitlog
    directory elsewhere) stays as it is: the broker's config still names it."""
    old_root = Path(record.get("root") or written_in)
    old_base = Path(record.get("base") or old_root)
    new_root = Path(root).resolve()
    new_base = Path(os.path.normpath(new_root / os.path.relpath(old_base, old_root)))
    if (old_root, old_base) == (new_root, new_base):
        return record

    def here(path: str) -> str:
        try:
            return str(new_base / Path(path).relative_to(old_base))
        except ValueError:
            return path

    moved = dict(record, root=str(new_root), base=str(new_base))
    for key in ("staging", "backups"):
        if key in moved:
            moved[key] = [here(x) for x in moved[key]]
    for key in ("ops", "steps"):
        if key in moved:
            moved[key] = [
                {k: here(v) if k in ("target", "staged", "backup") else v for k, v in op.items()} for op in moved[key]
            ]
    return moved


def leftover_staging(root: Path, extra_dirs=()) -> list[Path]:
    """Staging directories of runs that never reached their commit point: in the store root, and beside each
    of `extra_dirs` (the store's directories on other filesystems) those named after one of the root's
    (Transaction.area), so another store's staging in a shared parent is never taken for ours."""
    own = sorted(p for p in Path(root).iterdir() if p.name.startswith(STAGING_PREFIXES))
    out = list(own)
    for d in dict.fromkeys(Path(x).resolve().parent for x in extra_dirs):
        if d.is_dir() and d != Path(root).resolve():
            out += sorted(p for p in d.iterdir() if any(p.name.startswith(o.name + "-") for o in own))
    tmp = Path(root) / INTENT_TMP
    if tmp.exists():
        out.append(tmp)
    return out


def pending(root: Path, extra_dirs=()) -> dict | None:
    """What an interrupted run left behind, read-only: for verify and dry runs to report."""
    intent = read_intent(root)
    if intent is not None:
        return {
            "state": "committed",
            "command": intent["command"],
            "steps": len(intent["ops"]),
            "action": "will be completed (rolled forward) by the next rmqctl writing command",
        }
    left = leftover_staging(root, extra_dirs)
    if left:
        return {
            "state": "uncommitted",
            "paths": [str(p) for p in left],
            "action": "will be deleted (rolled back) by the next rmqctl writing command; the store is unchanged",
        }
    return None


def complete_pending(root: Path, extra_dirs=()) -> dict | None:
    """The recovery rule. Call with the broker lock held. Returns what was done, or None."""
    intent = read_intent(root)
    if intent is not None:
        done = apply_intent(Path(root), intent)
        return {"state": "committed", "action": "completed", **done}
    left = leftover_staging(root, extra_dirs)
    for p in left:
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()
        fsync_dir(p.parent)
    if left:
        return {"state": "uncommitted", "action": "rolled back", "paths": [str(p) for p in left]}
    return None


@contextlib.contextmanager
def locked_for_writing(root: Path, extra_dirs=()):
    """What every writing command does first, in this one place: take the broker's lock for the whole run,
    then finish or undo a write an earlier rmqctl run was killed in (`complete_pending`), so it starts
    from a store wholly in its old or its new state. Yields what was done about that (or None)."""
    with store_lock(root):
        yield complete_pending(root, extra_dirs)
