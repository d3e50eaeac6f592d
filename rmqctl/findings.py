"""Every kind of finding rmqctl reports, once: its name, what it means, and the group it is sorted into.
verify, repair and append name damage with these kinds and nothing else (tests/test_findings.py checks the
source against this registry), and the commitlog damage a finding stands for is kept in `Damage` so later
findings can name their cause.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

# finding groups, in output order
FILES, RECORDS, QUEUES, CONSUMEQUEUE, INDEX, CHECKPOINT, CONFIG = range(7)

KINDS: dict[str, str] = {
    # files of a MappedFileQueue (commitlog, consumequeue, index)
    "stray-file": "a name that is not a 20-digit offset (or a directory) where the broker lists its files",
    "file-size": "a file whose length is not the mapped file size the broker maps",
    "file-misaligned": "a file whose start offset is not a multiple of the file size",
    "file-gap": "offsets between two files that no file covers",
    "file-overlap": "a file that starts inside the previous one",
    "interrupted-write": "an rmqctl rebuild, repair or clean killed mid-way (its intent or staging is left)",
    "symlink-outside": "a symlink in the store leading out of it (the broker follows it, rmqctl's writers refuse to)",
    # commitlog records
    "zeroed-region": "zero bytes where a record should start, with records after them",
    "illegal-magic": "a record head whose magic code is neither a message's nor a BLANK's",
    "bad-length": "a storeSize or inner length that does not add up",
    "truncated-record": "a record that runs past the end of its file",
    "torn-tail": "invalid bytes after the last record with nothing valid after them",
    "missing-blank": "a file that ends without the BLANK record the broker writes at its end",
    "blank-size": "a BLANK record whose size is not the rest of its file",
    "data-after-blank": "non-zero bytes after the BLANK record that ends a file",
    "body-crc": "a body whose CRC is not the one stored in the record",
    "property-crc": "a __CRC32# property missing or not matching the record (forceVerifyPropCRC)",
    "physical-offset": "a PHYSICALOFFSET field that is not where the record starts",
    "sysflag": "a sysFlag with bits or combinations the broker never writes",
    "topic-invalid": "a topic that is empty or cannot be a consumequeue directory name",
    "properties": "a property segment the broker's parser drops or cannot decode",
    "compressed-body": "a compressed body that does not decompress (the consumer's decode fails too)",
    "decompressed-size": "a compressed body inflating past maxMessageSize x 8, never inflated further",
    "queue-offset": "a QUEUEOFFSET that breaks its queue's run of one more per message",
    # consumequeue units
    "cq-entry-invalid": "a unit among the written ones that is not an entry",
    "cq-stale-units": "units after a queue's last entry that hold data",
    "cq-entry-past-end": "an entry pointing past the end of the commitlog",
    "cq-entry-bad-target": "an entry pointing where no record starts",
    "cq-entry-mismatch": "an entry whose size, queue or tagsCode disagrees with its record",
    "cq-missing-entries": "dispatched records with no entry in their queue",
    # index files
    "index-header": "an index header whose counts or begin/end values disagree with its entries",
    "index-slot": "a hash slot that does not hold the newest entry of its hash",
    "index-chain": "a prevIndex link that does not lead to the previous entry of the same slot",
    "index-order": "index entries out of commitlog order",
    "index-entry-past-end": "an index entry pointing past the end of the commitlog",
    "index-entry-bad-target": "an index entry pointing where no record starts",
    "index-entry-mismatch": "an index entry whose key hash or timeDiff disagrees with its record",
    "index-missing-key": "a key of a record that the index does not hold (--deep)",
    "index-lost-on-recovery": "index entries the broker's next abnormal recovery drops",
    # checkpoint, abort, recovery
    "checkpoint-missing": "no checkpoint file although the commitlog holds records",
    "checkpoint-size": "a checkpoint file of another size than the broker maps",
    "checkpoint-ahead": "a checkpoint timestamp later than the newest record",
    "abnormal-recovery": "where a crashed broker's recovery starts and what it cuts (info)",
    # the broker's config/ files (consumer offsets, topics, subscriptions)
    "config-load-fails": "a config file (and its .bak) the broker cannot load: it refuses to start",
    "config-damaged": "a config file that does not parse; the broker falls back to its .bak",
    "config-bak-damaged": "a .bak config file that does not parse",
    "config-bak-differs": "a .bak config file that differs from the file it backs (info)",
    "config-offset-entry": "a consumer offset entry the broker's decode drops",
    "config-offset-unknown-topic": "a consumer offset for a topic the store does not hold",
}

# read_record's reasons for refusing bytes, as the finding kinds above
RECORD_ERROR_KINDS = {"zeros": "zeroed-region", "illegal-magic": "illegal-magic", "bad-length": "bad-length",
                      "truncated-record": "truncated-record"}


@dataclasses.dataclass
class Finding:
    kind: str
    severity: str
    file: str | None  # relative to the store root
    position: int | None  # inside `file`
    commitLogOffset: int | None  # the commitlog offset the finding is about, when there is one
    detail: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class Damage:
    """Commitlog ranges that are damaged or missing, so later findings can name their cause."""

    def __init__(self):
        self.ranges: list[tuple[int, int, str, int]] = []  # (start, end, kind, reported at)

    def add(self, start: int, end: int, kind: str, at: int):
        self.ranges.append((start, max(end, start + 1), kind, at))

    def cause(self, offset: int, end: int | None = None) -> str | None:
        """'the <kind> at <offset>' when [offset, end) touches a damaged range."""
        end = offset + 1 if end is None else end
        hits = [(not lo <= offset < hi, at, kind) for lo, hi, kind, at in self.ranges if offset < hi and lo < end]
        if not hits:
            return None
        _, at, kind = min(hits)  # the range holding the offset itself first
        return f"the {kind} at {at}"


class Collector:
    def __init__(self, root: Path):
        self.root = root
        self.items: list[tuple[int, Finding]] = []

    def add(self, order: int, kind: str, severity: str, path: Path | str | None, position: int | None,
            offset: int | None, detail: str) -> Finding:
        if isinstance(path, Path):
            try:
                path = path.relative_to(self.root).as_posix()
            except ValueError:
                path = str(path)
        f = Finding(kind, severity, path, position, offset, detail)
        self.items.append((order, f))
        return f

    def sorted(self) -> list[Finding]:
        """In output order: by group, then commitlog offset, file and position."""
        return [f for _, f in sorted(self.items, key=_order)]


def _order(item: tuple[int, Finding]):
    group, f = item
    return group, -1 if f.commitLogOffset is None else f.commitLogOffset, f.file or "", f.position or 0
