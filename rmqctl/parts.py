"""What a store holds: every part found in a store root, and which of them this version of rmqctl reads.

The one place that decides it (fail closed). Read commands name each part they do not read, in one line (what
it is, why it is not read), and never report its absence as damage; every writer refuses a store holding a part
it does not understand, so nothing is written beside (or into) a part rmqctl cannot see.

A part is found by a finder, registered with `@finder(patterns)`: the patterns (fnmatch) are the root entries
it explains; root entries no finder explains are unknown parts. To teach rmqctl a new part, register (or extend)
a finder and mark what this version reads with `read=True`.

Sources: DefaultMessageStore.java, StorePathConfigHelper.java, queue/RocksDBConsumeQueueStore.java,
queue/CombineConsumeQueueStore.java (develop), kv/CompactionStore.java, RocksDBMessageStore (5.4), the RocksDB
config managers (broker/config/v2, 5.2+) of apache/rocketmq; RocksDB's own file names (filename.cc).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from pathlib import Path
from typing import Callable

from .config import BrokerConfig
from .configfiles import AmbiguousProperty, bean_field, read_text
from .errors import StoreError
from .rocksdbstore import DIRECTORIES as ONE_DATABASE_DIRECTORIES, SPLIT_DIRECTORIES

FILE_STORE, ROCKSDB_STORE = "default", "defaultRocksDB"  # MessageStoreConfig.storeType values
# the files a RocksDB database keeps in its directory (RocksDB filename.cc); CURRENT names the live MANIFEST
ROCKSDB_FILES = (
    "CURRENT",
    "IDENTITY",
    "LOCK",
    "LOG",
    "LOG.old.*",
    "MANIFEST-*",
    "OPTIONS-*",
    "*.sst",
    "*.log",
    "*.blob",
    "*.dbtmp",
)
ROCKSDB_MARKS = ("CURRENT", "MANIFEST-*", "*.sst")  # any of these makes a directory a RocksDB database
# the RocksDB consume queue's kinds (the broker's queue store; develop's double-write copy)
ROCKS_QUEUE_PARTS = frozenset({"consumequeue", "rocksdb-consumequeue"})
# what to do instead, for a writer kept off a store whose broker reads a RocksDB consume queue
ROCKS_QUEUE_INSTEAD = {
    "repair": "rebuild consumequeue rebuilds the RocksDB queue whole from the commitlog; to repair the rest, convert "
    "consumequeue --to file first and back with --to rocksdb after",
    "rebuild consumequeue": "rebuild consumequeue without --topic and --queue-id rebuilds the RocksDB queue whole, "
    "or convert consumequeue --to file first and back with --to rocksdb after",
}
ROCKS_QUEUE_DEFAULT_INSTEAD = "convert consumequeue --to file first and back with --to rocksdb after"


@dataclasses.dataclass(frozen=True)
class Part:
    """One part of a store. `read`: this version reads it, otherwise `why` says why not. `write`: its writers
    understand it (None: as `read`). `blocks_writers`: a part writers do not understand keeps writers off the
    store (an unknown plain file in the root does not: no writer touches it). `written_by`: the writers that
    write it or what it holds (None: any writer may, so every writer that does not understand it refuses);
    the others only read it, or never touch it, and run beside it."""

    kind: str  # the finder's name for it: "commitlog", "consumequeue", "rocksdb-consumequeue", ...
    path: Path
    what: str  # one phrase for people
    read: bool
    why: str = ""
    blocks_writers: bool = True
    topics: frozenset[str] = frozenset()  # topics whose queues live in this part rather than in consumequeue/
    write: bool | None = None
    written_by: frozenset[str] | None = None

    @property
    def understood(self) -> bool:
        """The writers of this version understand it."""
        return self.read if self.write is None else self.write

    def line(self) -> str:
        """What it is and why it is not read, in one line."""
        return f"{self.path}: {self.what}: not read ({self.why})"

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "path": str(self.path),
            "what": self.what,
            "read": self.read,
            **({"why": self.why} if not self.read else {}),
        }


@dataclasses.dataclass(frozen=True)
class Finder:
    name: str
    claims: tuple[str, ...]  # fnmatch patterns of the root entries it explains
    find: Callable[["Layout"], list[Part]]


@dataclasses.dataclass(frozen=True)
class Layout:
    """What a finder looks at: the root, the broker config, and the commitlog directories the store uses."""

    root: Path
    config: BrokerConfig
    commitlog_dirs: tuple[Path, ...]


FINDERS: list[Finder] = []


def finder(*claims: str):
    """Register a part finder explaining the root entries matching `claims`."""

    def register(fn: Callable[[Layout], list[Part]]):
        FINDERS.append(Finder(fn.__name__, claims, fn))
        return fn

    return register


def entry_finder(name: str, present: Callable[[Path], bool] = Path.is_dir):
    """Register a part finder of the one root entry `name`, called with the layout and the entry's path when
    `present` holds for it (no part otherwise)."""

    def register(fn: Callable[[Layout, Path], list[Part]]):
        def find(layout: Layout) -> list[Part]:
            base = layout.root / name
            return fn(layout, base) if present(base) else []

        FINDERS.append(Finder(fn.__name__, (name,), find))
        return fn

    return register


def listing(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        return []


def matches(name: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def is_rocksdb_dir(path: Path) -> bool:
    """A directory holding a RocksDB database (or what is left of one: an SST without its CURRENT still is)."""
    return any(matches(n, ROCKSDB_MARKS) for n in listing(path))


def has_content(path: Path) -> bool:
    """A directory with anything in it below (empty subdirectories do not count)."""
    for _, _, files in os.walk(path):
        if files:
            return True
    return False


class StoreParts:
    """The parts of one store, and what follows from them for readers and writers."""

    def __init__(self, parts: list[Part], queue_store: str):
        self.parts = parts
        self.queue_store = queue_store  # which consume queues the broker reads: FILE_STORE or ROCKSDB_STORE

    @property
    def unread(self) -> list[Part]:
        return [p for p in self.parts if not p.read]

    @property
    def unread_named(self) -> list[Part]:
        """The parts not read that every read command names (an unknown plain file in the root is not one)."""
        return [p for p in self.unread if p.blocks_writers]

    @property
    def topics_not_read(self) -> frozenset[str]:
        """Topics whose queues live in a part not read: their messages are not missing from consumequeue/."""
        return frozenset().union(*(p.topics for p in self.unread))

    def find(self, kind: str) -> Part | None:
        return next((p for p in self.parts if p.kind == kind), None)

    @property
    def queues_read(self) -> bool:
        """The consume queues the broker reads are read by this version."""
        cq = self.find("consumequeue")
        return cq is None or cq.read

    @property
    def file_queues_read(self) -> bool:
        """The broker reads file consume queues, and this version reads them."""
        return self.queues_read and self.queue_store == FILE_STORE

    def require_queues(self):
        """Raise (exit 2) where the broker's consume queues are a part this version does not read."""
        cq = self.find("consumequeue")
        if cq is not None and not cq.read:
            raise StoreError(f"{cq.what}: not read ({cq.why})", cq.path)

    def require_file_queues(self):
        """Raise (exit 2) for a command that reads file consume queues only, on a store whose broker reads another
        kind."""
        self.require_queues()
        cq = self.find("consumequeue")
        if self.queue_store != FILE_STORE:
            raise StoreError(f"{cq.what}: this command reads file consume queues only", cq.path)

    def refuse_writer(self, writer: str, understood: frozenset[str] = frozenset()):
        """Writers call this before anything else, dry runs included: exit 2 naming the first part that keeps
        `writer` off: one its writers do not understand, not among the kinds `understood`, that `writer` may
        write (`Part.written_by`)."""
        blocking = [
            p
            for p in self.parts
            if p.blocks_writers
            and not p.understood
            and p.kind not in understood
            and (p.written_by is None or writer in p.written_by)
        ]
        if blocking:
            p = blocking[0]
            more = (
                f" (and {len(blocking) - 1} more such part(s): `rmqctl info` lists them)" if len(blocking) > 1 else ""
            )
            how = "read but not written by this version" if p.read else f"not read by this version ({p.why})"
            raise StoreError(
                f"{p.what}: {how}, so {writer} writes nothing to this store{more}{self._instead(p, writer)}", p.path
            )

    def refuse_partial_rocks_queue(self, writer: str):
        """A writer of some queues only, on a store whose broker reads a RocksDB consume queue: exit 2."""
        p = self.find("consumequeue")
        raise StoreError(
            f"{p.what}: rebuilt whole only, so {writer} of some queues writes nothing to this store"
            f"{self._instead(p, writer)}",
            p.path,
        )

    def _instead(self, part: Part, writer: str) -> str:
        if part.kind != "consumequeue" or self.queue_store != ROCKSDB_STORE:
            return ""
        return f"; instead: {ROCKS_QUEUE_INSTEAD.get(writer, ROCKS_QUEUE_DEFAULT_INSTEAD)}"

    def to_list(self) -> list[dict]:
        return [p.to_dict() for p in self.parts]


def find_parts(layout: Layout) -> StoreParts:
    """Every part of the store, by the registered finders, then the root entries none of them explains."""
    parts: list[Part] = []
    for f in FINDERS:
        parts.extend(f.find(layout))
    claims = [c for f in FINDERS for c in f.claims]
    # commitlog directories the config names may sit in the root under any name
    own = {d.resolve() for d in layout.commitlog_dirs}
    for name in listing(layout.root):
        path = layout.root / name
        if not matches(name, claims) and path.resolve() not in own:
            parts.append(unknown_part(path))
    return StoreParts(parts, queue_store(layout))


def unknown_part(path: Path) -> Part:
    if path.is_dir():
        return Part(
            "unknown",
            path,
            "a directory rmqctl does not know",
            False,
            "no RocketMQ version rmqctl knows keeps it in a store root",
        )
    return Part(
        "unknown-file",
        path,
        "a file rmqctl does not know",
        False,
        "no RocketMQ version rmqctl knows keeps it in a store root; no writer touches it",
        blocks_writers=False,
    )


@finder(
    "commitlog",
    "index",
    "checkpoint",
    "abort",
    "abort.bak",
    "lock",
    "timerlog",
    "timerwheel",
    "dledger-*",
    "epochFileCheckpoint",
    "epochFileCheckpoint.bak",
    "lost+found",
    ".rmqctl-*",
)
def classic(layout: Layout) -> list[Part]:
    """The parts every 4.x/5.x store has (and rmqctl's own staging, backups and intent)."""
    out = [Part("commitlog", d, "commitlog", True) for d in layout.commitlog_dirs if d.is_dir()]
    for name, what in (
        ("index", "index files"),
        ("checkpoint", "store checkpoint"),
        ("timerlog", "timer log"),
        ("timerwheel", "timer wheel"),
    ):
        if (layout.root / name).exists():
            out.append(Part(name, layout.root / name, what, True))
    return out


# the RocksDB config databases of storeType=defaultRocksDB (rmqctl.rocksdbconfig reads them; no writer writes them)
CONFIG_DATABASES = ("metadata", "consumerOffsets", "topics", "subscriptionGroups")
# the writers that write config/ (its JSON files): the only ones a config database keeps off; the others (clean,
# rebuild, repair, append, restore) never write a config and read one through rmqctl.rocksdbconfig
CONFIG_WRITERS = frozenset({"config restore"})


@entry_finder("config")
def config_dir(layout: Layout, base: Path) -> list[Part]:
    """config/: the JSON config files, and the RocksDB config databases (5.2+) beside them; any other
    RocksDB database there (config/rdb of configManagerVersion=V2) is not read."""
    out = [Part("config", base, "config files (JSON)", True)]
    for name in listing(base):
        if not ((base / name).is_dir() and is_rocksdb_dir(base / name)):
            continue
        if name in CONFIG_DATABASES:
            out.append(
                Part(
                    "rocksdb-config",
                    base / name,
                    f"RocksDB config database {name}",
                    True,
                    write=False,
                    written_by=CONFIG_WRITERS,
                )
            )
        else:
            out.append(
                Part(
                    "rocksdb-config-other",
                    base / name,
                    f"RocksDB config database {name}",
                    False,
                    "configManagerVersion=v2 keeps topics, subscription groups and consumer offsets here"
                    if name == "rdb" and layout.config.configManagerVersion == "v2"
                    else "not one of the RocksDB config managers' databases this version reads",
                )
            )
    return out


def queue_store(layout: Layout) -> str:
    """Which consume queues the broker reads: storeType from broker.conf, or when it is not given, the RocksDB
    database when consumequeue/ holds one and no file queue (with both, the default: files)."""
    store_type = layout.config.storeType
    if store_type is not None:
        return store_type
    names = listing(layout.root / "consumequeue")
    rocks = any(matches(n, ROCKSDB_MARKS) for n in names)
    has_files = any((layout.root / "consumequeue" / n).is_dir() for n in names)
    return ROCKSDB_STORE if rocks and not has_files else FILE_STORE


@finder("consumequeue")
def consumequeue(layout: Layout) -> list[Part]:
    """consumequeue/: file queues (topic directories), a RocksDB database, or both (double write or a
    migration). The part of kind "consumequeue" is the one the broker reads."""
    base = layout.root / "consumequeue"
    names = listing(base)
    store = queue_store(layout)
    has_files = any((base / n).is_dir() for n in names)
    rocks = any(matches(n, ROCKSDB_MARKS) for n in names)
    said = f"storeType={store}" if layout.config.storeType else f"storeType not given; the files say {store}"
    if store not in (FILE_STORE, ROCKSDB_STORE):
        return [
            Part("consumequeue", base, f"consume queues of {said}", False, "a storeType this version does not know")
        ]
    if store == ROCKSDB_STORE:
        out = [
            Part("consumequeue", base, f"RocksDB consume queue (the broker's queue store, {said})", True, write=False)
        ]
        if has_files:
            out.append(
                Part(
                    "consumequeue-files",
                    base,
                    "file consume queues beside the RocksDB one",
                    False,
                    f"the broker ({said}) reads the RocksDB queue, not these",
                )
            )
        return out
    out = [Part("consumequeue", base, "file consume queues", True)] if base.is_dir() else []
    if rocks:
        role = (
            "the double-write copy, rocksdbCQDoubleWriteEnable=true"
            if layout.config.rocksdbCQDoubleWriteEnable
            else "beside the file queues the broker reads: a double write or a migration"
        )
        out.append(Part("rocksdb-consumequeue", base, f"RocksDB consume queue ({role})", True, write=False))
    return out


@entry_finder("batchconsumequeue", has_content)
def batch_consume_queue(layout: Layout, base: Path) -> list[Part]:
    topics = frozenset(n for n in listing(base) if (base / n).is_dir())
    # read (rmqctl.batchcq); written by rebuild consumequeue and dispatched to by append, which say so (`understood`)
    return [
        Part(
            "batchconsumequeue",
            base,
            "batch consume queues (topics with queue.type=BatchCQ)",
            True,
            topics=topics,
            write=False,
        )
    ]


# the writers that write consume queues, or delete or restore their files: ConsumeQueueExt keeps them off (a
# broker with enableConsumeQueueExt writes, truncates and deletes its units with theirs); rebuild index and
# config restore touch no queue and run beside it
QUEUE_WRITERS = frozenset({"append", "rebuild consumequeue", "convert consumequeue", "repair", "clean", "restore"})


@finder("consumequeue_ext")
def consume_queue_ext(layout: Layout) -> list[Part]:
    """Read (rmqctl.cqext: verify resolves every consume queue unit's address), not written: found where it has
    files, or where broker.conf turns it on before its first unit (the broker's dispatch would write units there
    and put their addresses in the tagsCodes rmqctl writes plain)."""
    base = layout.root / "consumequeue_ext"
    if not has_content(base) and layout.config.enableConsumeQueueExt is not True:
        return []
    return [
        Part(
            "consumequeue-ext",
            base,
            "consume queue extension units (ConsumeQueueExt, enableConsumeQueueExt=true)",
            True,
            write=False,
            written_by=QUEUE_WRITERS,
        )
    ]


@entry_finder("compaction")
def compaction(layout: Layout, base: Path) -> list[Part]:
    """Every 5.x broker writes compaction/position-checkpoint; with an empty offset map and no compaction log
    there are no compaction topics: nothing to read."""
    names = listing(base)
    checkpoint = base / "position-checkpoint"
    if set(names) <= {"position-checkpoint"} and (not names or empty_offset_map(checkpoint)):
        return [Part("compaction", base, "compaction topics: none (an empty position-checkpoint)", True)]
    # read (rmqctl.compaction: dump compaction, verify); no writer keeps it as the broker's CompactionService does
    return [Part("compaction", base, "compaction topics (cleanup.policy=COMPACTION)", True, write=False)]


def empty_offset_map(path: Path) -> bool:
    try:
        text = read_text(path)
        return text.sound and bean_field(text.document, "queueOffsetMap") == {}
    except (OSError, AmbiguousProperty):  # (not known to be empty: read as a compaction store, which says so)
        return False


@finder(*ONE_DATABASE_DIRECTORIES)
def rocksdb_message_store(layout: Layout) -> list[Part]:
    """The 5.4 RocksDB message store (rmqctl.rocksdbstore): read where its column families are the one-database
    layout; no writer keeps it (the broker re-dispatches to it from its lastOffsetPy)."""
    out = []
    for name in ONE_DATABASE_DIRECTORIES:
        base = layout.root / name
        if not base.exists():
            continue
        what = "RocksDB message store (5.4+: index, timer, transactions)"
        problem = _both_layouts(layout) or rocksdb_layout_problem(base, split=False)
        out.append(Part("rocksdb-message-store", base, what, problem is None, problem or "", write=False))
    return out


@finder(*SPLIT_DIRECTORIES)
def rocksdb_message_store_split(layout: Layout) -> list[Part]:
    """The split layout of the RocksDB message store: a database per kind, each with only `default`
    (IndexMessageRocksDBStorage / TransMessageRocksDBStorage), read where every one is that layout. It is read
    whole or not at all: its databases together say where dispatch resumes (the least lastOffsetPy), so one
    not read leaves the others' answers incomplete."""
    bases = {name: layout.root / name for name in SPLIT_DIRECTORIES if (layout.root / name).exists()}
    problems = {name: _both_layouts(layout) or rocksdb_layout_problem(base, split=True) for name, base in bases.items()}
    unread = next(((name, why) for name, why in problems.items() if why is not None), None)
    out = []
    for name, base in bases.items():
        problem = problems[name]
        if problem is None and unread is not None:
            problem = f"{unread[0]}/ beside it is not read ({unread[1]}): the split layout is read whole or not at all"
        out.append(
            Part(
                "rocksdb-message-store",
                base,
                f"RocksDB message store, split layout ({SPLIT_DIRECTORIES[name]} database)",
                problem is None,
                problem or "",
                write=False,
            )
        )
    return out


def _both_layouts(layout: Layout) -> str | None:
    """Both layouts side by side: which one the broker reads cannot be told from the files, so neither is read."""
    if any((layout.root / n).exists() for n in ONE_DATABASE_DIRECTORIES) and any(
        (layout.root / n).exists() for n in SPLIT_DIRECTORIES
    ):
        return "both the one-database and the split layout are here: which one the broker reads cannot be told"
    return None


def rocksdb_layout_problem(base: Path, split: bool) -> str | None:
    """Why this version does not read the RocksDB message store's database in `base` (None: it does, or
    RocksDB cannot list it: damage, which its readers meet and name in one line, never a store silently not
    checked)."""
    from .rocksdbstore import layout_problem, split_layout_problem  # here: no part, no RocksDB loaded

    if not is_rocksdb_dir(base):
        return "no RocksDB database in it"
    try:
        return (split_layout_problem if split else layout_problem)(base)
    except StoreError:
        return None
