"""Every kind of finding rmqctl reports, once: its name, what it means, and the group it is sorted into.
verify, repair and append name damage with these kinds and nothing else (tests/test_findings.py checks the
source against this registry), and the commitlog damage a finding stands for is kept in `Damage` so later
findings can name their cause.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

# finding groups, in output order
FILES, RECORDS, QUEUES, CONSUMEQUEUE, INDEX, CHECKPOINT, CONFIG, TIMER = range(8)

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
    "blank-past-end": "a BLANK claiming more than the rest of its file, which 5.3.2+'s recovery fails on",
    "data-after-blank": "non-zero bytes after the BLANK record that ends a file",
    "body-crc": "a body whose CRC is not the one stored in the record",
    "property-crc": "a __CRC32# property missing or not matching the record (forceVerifyPropCRC)",
    "unparsable-property": "a DELAY, INNER_BASE or INNER_NUM the broker's record check parses and throws on",
    "reput-stuck": "a record whose dispatch throws, which the broker's reput retries for good",
    "dup-info": "a record without the two-part DUP_INFO that 5.x's recovery asks for (duplicationEnable)",
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
    "queue-dir-unread": "a queue directory named as no queue id is (03): the broker never reads or cleans it",
    "rocksdb-cq-offset-table": "a RocksDB queue's max (offset column family) that is not its last unit",
    "rocksdb-cq-below-min": "RocksDB queue units below the queue's min offset, never served (apache/rocketmq#10959)",
    "rocksdb-cq-double-write": "a double-write store whose RocksDB copy disagrees with its file queues",
    "rocksdb-cq-behind": "a RocksDB queue's dispatch checkpoint behind the commitlog: the records after it re-dispatched at start",
    # ConsumeQueueExt units (enableConsumeQueueExt): where a unit's tagsCode is an extension address
    "cq-ext-missing": "an entry whose extension address leads to no unit: delivered unfiltered by tag",
    "cq-ext-unreadable": "an entry whose extension unit runs past what its file reads: the lookup throws",
    "cq-ext-tags": "an extension unit whose tagsCode is not the dispatcher's for the entry's record",
    "cq-ext-store-time": "an extension unit whose msgStoreTime is not the entry's record's store time",
    "cq-ext-recovery": "extension files whose recovery walk runs past a file's end: the broker's load fails",
    "cq-ext-truncated": "extension files the broker's load deletes after the unit of a queue's last entry",
    # batchconsumequeue units (5.x, topics with queue.type=BatchCQ)
    "bcq-unit-mismatch": "a BatchConsumeQueue unit other than the one the broker writes for its record",
    "bcq-unit-bad-target": "a BatchConsumeQueue unit pointing where no record of its queue starts",
    "bcq-offset-gap": "a BatchConsumeQueue unit whose msgBaseOffset is not where the previous unit's batch ends",
    "bcq-missing-units": "dispatched records of a BatchCQ topic with no unit in their queue",
    "bcq-queue-type": "a topic's queues where its queue.type does not put them: the 5.x broker does not start",
    # compaction topics (5.x, cleanup.policy=COMPACTION): compaction/compactionLog and compactionCq
    "compaction-file-mismatch": "a compaction log file without its CQ file of the same name, or the reverse",
    "compaction-file-size": "a compaction log or CQ file whose length is not its mapped file size",
    "compaction-file-name": "a file in a compaction log or CQ folder whose name is not a number (NAME.delete)",
    "compaction-folder-missing": "a compaction queue with a log folder and no CQ folder, or the reverse",
    "compaction-body-crc": "a compaction log record whose body is not the one its BODYCRC was computed over",
    "compaction-physical-offset": "a compaction log record whose PHYSICALOFFSET is not its place in the log",
    "compaction-record": "bytes in a compaction log that are not a record of its queue",
    "compaction-record-unindexed": "a compaction log record no CQ unit names: never served, or cut at load",
    "compaction-cq-bad-target": "a compaction CQ unit pointing where no compaction log record starts",
    "compaction-cq-mismatch": "a compaction CQ unit other than the one the broker writes for its record",
    "compaction-checkpoint": "a compaction position-checkpoint that does not read",
    # the 5.4 RocksDB message store (rocksdbstore/: index, timer and transaction records)
    "rocksdb-store-key": "a RocksDB message store key or value that is not of its kind's layout",
    "rocksdb-store-past-end": "a RocksDB message store record naming an offset past the end of the commitlog",
    "rocksdb-store-bad-target": "a RocksDB message store record naming an offset where no record starts",
    "rocksdb-store-mismatch": "a RocksDB message store record whose topic, key, uniq key, time or size is not its "
    "record's",
    "rocksdb-store-bookkeeping": "a RocksDB message store lastOffsetPy past the commitlog's end or off a record",
    # index files
    "index-header": "an index header whose counts or begin/end values disagree with its entries",
    "index-slot": "a hash slot that does not hold the newest entry of its hash",
    "index-chain": "a prevIndex link that does not lead to the previous entry of the same slot",
    "index-order": "index entries out of commitlog order",
    "index-entry-past-end": "an index entry pointing past the end of the commitlog",
    "index-entry-bad-target": "an index entry pointing where no record starts",
    "index-entry-mismatch": "an index entry whose key hash or timeDiff disagrees with its record",
    "index-missing-key": "a key of a record that the index does not hold (--deep)",
    "index-missing": "no index file although records with keys were dispatched: no key lookup finds them",
    "index-lost-on-recovery": "index entries the broker's next abnormal recovery drops",
    # checkpoint, abort, recovery
    "checkpoint-missing": "no checkpoint file although the commitlog holds records",
    "checkpoint-size": "a checkpoint file of another size than the broker maps",
    "checkpoint-ahead": "a checkpoint timestamp later than the newest record",
    "abnormal-recovery": "where a crashed broker's recovery starts and what it cuts (info)",
    # a running broker's store (rmqctl/live.py)
    "live": "a running broker's store: what verify judged and what it left to the broker's work in flight (info)",
    "moving-tail": "a record being written while it was read: the check ends before it (info)",
    # the broker's config/ files (consumer offsets, topics, subscriptions)
    "config-load-fails": "a config file (and its .bak) the broker cannot load: it refuses to start",
    "config-damaged": "a config file that does not parse; the broker falls back to its .bak",
    "config-bak-damaged": "a .bak config file that does not parse",
    "config-bak-differs": "a .bak config file that differs from the file it backs (info)",
    "config-offset-entry": "a consumer offset entry no consumer's offset is read from",
    "config-ambiguous-name": "a config property named in two spellings, of which the broker's pick is not known",
    "config-offset-unknown-topic": "a consumer offset for a topic the store does not hold",
    # the 5.x timer store (timerlog/, timerwheel, config/timercheck)
    "timer-file": "a timer file the broker refuses, maps at another size or is missing",
    "timerlog-unit": "bytes that are not a timerlog unit before the end of the timerlog data",
    "timer-reference": "a timerlog unit whose offsetPy/sizePy is not its timer record, or that recovery cuts off",
    "timer-chain": "a wheel slot whose unit chain is broken, misplaced or holds units of another time",
    "timer-slot-count": "a pending wheel slot whose num disagrees with its chain",
    "timercheck-ahead": "a timercheck position past the timerlog data or the timer queue's end",
    "timercheck-behind": "a timercheck (or none) that makes the broker file timer messages again: delivered twice",
    # DLedger-mode stores (rmqctl/dledger.py): the entries around the records, DLedger's index and checkpoint
    "truncated-entry": "a DLedger entry header that runs past the end of its data file",
    "dledger-entry-pos": "a DLedger entry whose pos field is not where it lies",
    "dledger-entry-size": "a DLedger entry whose size is not bodyLength plus the 48-byte header",
    "dledger-entry-body": "a DLedger entry whose body length differs from its record's storeSize",
    "dledger-entry-index": "a DLedger entry index that does not follow the previous one by one",
    "dledger-entry-term": "a DLedger entry term lower than the previous entry's",
    "dledger-blank-size": "a DLedger BLANK that does not claim the rest of its data file",
    "dledger-index-file": "DLedger index files the store cannot map (names, sizes)",
    "dledger-index-unit": "a DLedger index unit that disagrees with its entry",
    "dledger-index-extra": "DLedger index units past the last entry",
    "dledger-checkpoint": "a DLedger checkpoint whose endIndex or committedIndex disagrees with the data",
    "dledger-recovery": "what DLedger's recovery does at the next start (info), or that it refuses to start",
    # MetaQ (Metamorphosis) segment stores, `rmqctl metaq verify`
    "bad-partition-dir": "a data-path directory that is not {topic}-{partition}",
    "bad-segment-name": "a segment file whose name is not a long offset: loadSegments fails",
    "segment-name": "a segment name that parses but is not the broker's 20-digit form",
    "pending-intent": "an interrupted rmqctl run left in a partition (as interrupted-write in a RocketMQ store)",
    "empty-partition": "a partition directory without segment files (info)",
    "no-partitions": "no {topic}-{partition} directories in the data path",
    "gap": "bytes between two segments that no segment covers: validateSegments throws",
    "overlap": "a segment that starts inside the previous one: validateSegments throws",
    "negative-length": "a record header whose msgLen is negative",
    "checksum-mismatch": "a record whose checksum does not match its data",
    "undecodable": "a record whose checksum is right but whose data does not decode",
    "zero-records": "all-zero records the broker's check passes and serves as empty messages",
}

# read_record's reasons for refusing bytes, as the finding kinds above
RECORD_ERROR_KINDS = {
    "zeros": "zeroed-region",
    "illegal-magic": "illegal-magic",
    "bad-length": "bad-length",
    "truncated-record": "truncated-record",
}


@dataclasses.dataclass
class Finding:
    kind: str
    severity: str
    file: str | None  # relative to the store root (a check names a Path; verify makes it relative)
    position: int | None  # inside `file`
    commitLogOffset: int | None  # the commitlog offset the finding is about, when there is one
    detail: str
    group: int = dataclasses.field(default=FILES, compare=False, repr=False)  # where it sorts (not in its row)

    def to_dict(self) -> dict:
        """The finding's row, as every command prints it (FINDING_COLUMNS orders a table's columns)."""
        return {name: getattr(self, name) for name in FINDING_FIELDS}


# the row of a finding: its fields in JSON order, and the columns of a table or CSV of findings
FINDING_FIELDS = ("kind", "severity", "file", "position", "commitLogOffset", "detail")
FINDING_COLUMNS = ["severity", "kind", "file", "position", "commitLogOffset", "detail"]


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


class Findings(list):
    """Findings in the order a check found them: each check returns one (`add` names a finding where it is,
    a path), verify merges them into the run's, whose `root` makes every path relative to the store root
    as they arrive, and prints them `sorted`."""

    def __init__(self, root: Path | None = None, found=()):
        super().__init__()
        self.root = root
        self += found

    def add(
        self,
        group: int,
        kind: str,
        severity: str,
        path: Path | str | None,
        position: int | None,
        offset: int | None,
        detail: str,
    ) -> Finding:
        f = Finding(kind, severity, path, position, offset, detail, group)
        self += [f]
        return f

    def __iadd__(self, found):
        for f in found:
            if self.root is not None and isinstance(f.file, Path):
                try:
                    f.file = f.file.relative_to(self.root).as_posix()
                except ValueError:
                    f.file = str(f.file)
            self.append(f)
        return self

    def sorted(self) -> list[Finding]:
        """In output order: by group, then commitlog offset, file and position."""
        return sorted(self, key=_order)

    def about_commitlog(self) -> list[Finding]:
        """The commitlog's file and record damage found so far, in the order found: what recovery re-checks."""
        return [f for f in self if f.group in (FILES, RECORDS) and f.commitLogOffset is not None]


def _order(f: Finding):
    return f.group, -1 if f.commitLogOffset is None else f.commitLogOffset, f.file or "", f.position or 0
