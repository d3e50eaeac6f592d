"""Where in the commitlog the messages stored in a time range are.

The broker stamps storeTimestamp inside the commitlog's put lock (CommitLog.asyncPutMessage in 5.3.3 and
putMessage in 4.9.7: "in order to ensure an orderly global"), so store times rise with the offset unless the
broker's clock stepped back. The messages of one file were then stored between its first record and the first
record of the next file: one record read per file says which files may hold a range (`file_spans`), and a
walk of only those files finds the records inside it exactly (`offset_range`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import schema as S
from ..errors import FileGone, UsageError
from ..live import head_moved
from ..record import Message, RecordError, read_record
from ..store import MappedFile, Store


def check_time_range(since: int | None, until: int | None):
    """A range of store times (--since, --until) that holds nothing is a usage error, not an empty answer."""
    if since is not None and until is not None and until < since:
        raise UsageError("--until is before --since")


@dataclasses.dataclass(frozen=True)
class FileSpan:
    file: MappedFile
    first: int | None  # storeTimestamp of its first record; None when it does not start with one
    last: int | None  # the first record's time of the next file: no later record of this file is newer; None: unknown

    def may_hold(self, since: int | None, until: int | None) -> bool:
        """False only when every message of the file was stored outside [since, until] (epoch ms, inclusive)."""
        if since is not None and self.last is not None and self.last < since:
            return False
        return not (until is not None and self.first is not None and self.first > until)


def first_store_time(f: MappedFile, file_size: int, allow_v2: bool = True, live=None) -> int | None:
    """The storeTimestamp of the record a commitlog file starts with, None when it starts with none (or, on a
    `live` store, the broker deleted the file, its expired head, while it was read: head_moved)."""
    try:
        rec = read_record(f.buf, 0, min(len(f.buf), file_size), allow_v2)
    except RecordError:
        return None
    except FileGone as e:
        head_moved(live, f, e)
        return None
    return rec.storeTimestamp if isinstance(rec, Message) else None


def file_spans(store: Store) -> list[FileSpan]:
    """Every commitlog file of a plain store with the store times its messages lie between."""
    files = store.commitlog.files
    size = store.commitlog.file_size
    firsts = [first_store_time(f, size, live=store.live) for f in files]
    return [
        FileSpan(f, first, firsts[i + 1] if i + 1 < len(files) else None)
        for i, (f, first) in enumerate(zip(files, firsts))
    ]


def offset_range(store: Store, since: int | None, until: int | None) -> tuple[int, int] | None:
    """[start, end): from the first record stored in [since, until] to the end of the last one (of their DLedger
    entries in a DLedger store), found by walking the files that may hold the range (every file of a DLedger
    store, entry by entry); None when no record is in the range. Records between the two stored outside the range (a clock that stepped back) lie inside it
    too."""
    inside = lambda t: (since is None or t >= since) & (until is None or t <= until)
    scan = store.scan()
    if store.dledger is not None:  # whole entries: the range a DLedger walk checks is in entry positions
        at, length = S.DLEDGER_DUMP_FIELDS.index("entryFilePosition"), S.DLEDGER_DUMP_FIELDS.index("entrySize")
        first = last = None  # the first and the last entry inside: (its offset, its end)
        for chunk in scan.chunks():
            hits = np.flatnonzero(inside(chunk.column("storeTimestamp")))
            for entry in chunk.entries[hits[[0, -1]]] if len(hits) else ():
                start = chunk.file.start + int(entry[at])
                last = (start, start + int(entry[length]))
                first = first or last
        return (first[0], last[1]) if first else None
    size = store.commitlog.file_size

    def inside_file(span: FileSpan) -> tuple[int, int] | None:
        found = None
        for chunk in scan.chunks(span.file.start, span.file.start + size):
            hits = np.flatnonzero(inside(chunk.column("storeTimestamp")))
            if len(hits):
                at = chunk.column("position")[hits[[0, -1]]] + chunk.file.start
                end = int(at[1] + chunk.column("storeSize")[hits[-1]])
                found = (int(at[0]) if found is None else found[0], end)
        return found

    # walked from both ends, each only as far as its first file with a record inside
    candidates = [span for span in file_spans(store) if span.may_hold(since, until)]
    first = next(filter(None, map(inside_file, candidates)), None)
    if first is None:
        return None
    last = next(filter(None, map(inside_file, reversed(candidates))))
    return first[0], last[1]


def narrow(
    store: Store, since: int | None, until: int | None, start: int | None = None, end: int | None = None
) -> tuple[int | None, int | None]:
    """The commitlog range [start, end) narrowed to the records stored in [since, until] (offset_range); an
    empty range when no record is."""
    if since is None and until is None:
        return start, end
    found = offset_range(store, since, until)
    if found is None:
        return 0, 0
    lo, hi = max(found[0], start or 0), found[1] if end is None else min(found[1], end)
    return (lo, hi) if lo < hi else (0, 0)
