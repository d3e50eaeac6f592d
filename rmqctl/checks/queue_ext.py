"""verify's check of ConsumeQueueExt (rmqctl.cqext): each queue's extension files as the broker's load leaves them
(what keeps that load from succeeding, what it deletes), and every consume queue unit whose tagsCode is an
extension address looked up as the broker looks it up and held against its record, tallied per queue."""

from __future__ import annotations

import numpy as np

from .. import cqext
from .. import schema as S
from ..cqext import FOUND, MISSING, THROWS, QueueExt, real_offsets
from ..rules import SCHEDULE_TOPIC
from ..findings import CONSUMEQUEUE, Findings
from ..store import ConsumeQueue
from .context import Context
from .links import _queue_file_checks


class QueueExts:
    """The queues' extension files for one verify: loaded at `begin` (`load`), looked into window by window
    (`add`; each lookup maps a file only while it reads it), closed at `finish`."""

    def __init__(self, run: Context, cq_file_size: int):
        self.run = run
        self.exts: dict[tuple[str, int], QueueExt | None] = {}
        self.size: int | None = None  # mappedFileSizeConsumeQueueExt, settled at the first queue that has files
        self.tally = ExtTally(cq_file_size)
        self.said = run.store.config.enableConsumeQueueExt
        # the broker reads them: enableConsumeQueueExt, or where broker.conf does not say, the store's
        # consumequeue_ext/ (a broker writes it only with the setting on); file consume queues only
        self.read = (self.said if self.said is not None else run.store.parts.find("consumequeue-ext") is not None) and (
            run.store.rocks_queues is None
        )

    def load(self, cq: ConsumeQueue) -> Findings:
        """The queue's extension files as the broker's load leaves them (kept for the lookups), and what keeps that
        load from succeeding or what it deletes (ConsumeQueue.recover returns before them for a queue of no file)."""
        if not self.read or not cq.files.files:
            return Findings()
        store = self.run.store
        if self.size is None:
            self.size = cqext.file_size(store.root, store.config.mappedFileSizeConsumeQueueExt)
        live = self.run.live is not None
        ext, deleted = cqext.loaded_queue_ext(store.root, cq, self.size, store.version.major, live)
        self.exts[(cq.topic, cq.queue_id)] = ext
        if ext is None:
            return Findings()
        found = ext_file_findings(self.run, ext)
        if ext.truncation_throws:
            found.add(
                CONSUMEQUEUE, "cq-ext-recovery", "error", ext.directory, None, None,
                f"{cq.topic}/{cq.queue_id}'s last extension address leads to a unit that runs past what its file reads: "
                "ConsumeQueue.recover's truncateByMaxAddress throws reading it, so a broker with "
                "enableConsumeQueueExt=true does not start",
            )  # fmt: skip
        if deleted:
            found.add(
                CONSUMEQUEUE, "cq-ext-truncated", "warning", deleted[0].path, None, None,
                f"{cq.topic}/{cq.queue_id}'s last extension unit its recovery passes ends at offset {ext.cut}: the "
                f"broker's load (ConsumeQueue.recover, truncateByMaxAddress) deletes {len(deleted)} extension "
                f"file(s) from here, and every entry whose unit is past it is delivered unfiltered by tag",
            )  # fmt: skip
        return found

    def add(self, key, queue: str, path, units, addresses, want_tags, want_time, offsets):
        """Entries of queue `key` whose tagsCode is an address, with what the dispatcher computes for their records."""
        why = (
            None if self.read
            else "broker.conf says enableConsumeQueueExt=false" if self.said is False
            else "the store has no consumequeue_ext files"
        )  # fmt: skip
        self.tally.add(self.exts.get(key), why, queue, path, units, addresses, want_tags, want_time, offsets)

    def finish(self) -> Findings:
        for ext in filter(None, self.exts.values()):
            ext.close()
        return self.tally.finish()


def ext_file_findings(run: Context, ext: QueueExt) -> Findings:
    """What keeps a broker with enableConsumeQueueExt=true from loading the queue's ext files: what
    MappedFileQueue.load refuses, and an exception in ConsumeQueueExt.recover's walk (the load fails, the broker
    does not start)."""
    found = _queue_file_checks(run, ext.queue, ext.file_size, "consumequeue_ext", "mappedFileSizeConsumeQueueExt", None)
    broken = ext.broken_walk
    refused = any(f.kind in ("file-size", "stray-file") for f in found)  # (the load fails before the walk)
    if broken is not None and not refused:
        f, at = broken
        found.add(
            CONSUMEQUEUE, "cq-ext-recovery", "error", f.path, at, None,
            f"ConsumeQueueExt.recover's walk from unit to unit by their sizes reads past the file's end at "
            f"position {at}: the load throws, so a broker with enableConsumeQueueExt=true does not start",
        )  # fmt: skip
    return found


class ExtTally:
    """The consume queue units whose tagsCode is a ConsumeQueueExt address, looked up as the broker looks them up
    and held against the record: per queue and kind, how many disagree and the first of them."""

    def __init__(self, file_size: int):
        self.file_size = file_size  # the consume queue files' (a unit's position in its file)
        self.tally: dict[tuple[str, str], list] = {}  # (queue, kind) -> [count, path, unit, offset, detail]

    def add(
        self, ext: QueueExt | None, why: str | None, queue: str, path, units, addresses, want_tags, want_time, offsets
    ):
        """`ext`: the queue's files (None: it has none); `why`: why the broker reads none (None: it reads them)."""
        if why is not None or ext is None:
            why = why or "the queue has no consumequeue_ext files"
            every = np.ones(len(units), bool)
            self._count(queue, "cq-ext-missing", path, units, offsets, every, lambda k: (
                f"tagsCode {int(addresses[k])} is a ConsumeQueueExt address, and {why}"
            ))  # fmt: skip
            return
        got = ext.units(addresses)
        real = real_offsets(addresses)
        where = lambda k: f"tagsCode {int(addresses[k])} is the ConsumeQueueExt address of offset {int(real[k])}"
        self._count(queue, "cq-ext-missing", path, units, offsets, got.outcome == MISSING, lambda k: (
            f"{where(k)}, where ConsumeQueueExt.get finds no unit"
        ))  # fmt: skip
        self._count(queue, "cq-ext-unreadable", path, units, offsets, got.outcome == THROWS, lambda k: (
            f"{where(k)}, where the unit runs past what the file reads: ConsumeQueueExt.get throws reading it"
        ))  # fmt: skip
        found = got.outcome == FOUND
        tags = found & (got.tags_code != want_tags)
        self._count(queue, "cq-ext-tags", path, units, offsets, tags, lambda k: (
            f"{where(k)}, whose unit holds tagsCode {int(got.tags_code[k])} where the dispatcher computes "
            f"{int(want_tags[k])}"
        ))  # fmt: skip
        self._count(queue, "cq-ext-store-time", path, units, offsets, found & ~tags & (got.store_time != want_time), lambda k: (
            f"{where(k)}, whose unit holds msgStoreTime {int(got.store_time[k])} where the record's storeTimestamp "
            f"is {int(want_time[k])}"
        ))  # fmt: skip

    def _count(self, queue, kind, path, units, offsets, sel, detail):
        if not sel.any():
            return
        k = int(np.flatnonzero(sel)[0])
        t = self.tally.get((queue, kind))
        if t is None:
            self.tally[(queue, kind)] = [int(sel.sum()), path, int(units[k]), int(offsets[k]), detail(k)]
        else:
            t[0] += int(sel.sum())

    def finish(self) -> Findings:
        found = Findings()
        for (queue, kind), (count, path, unit, offset, detail) in sorted(self.tally.items()):
            outcomes = SCHEDULE_EXT_OUTCOMES if queue.startswith(SCHEDULE_TOPIC + "/") else EXT_OUTCOMES
            severity, then = outcomes[kind]
            more = f" ({count - 1} more such entries in the queue)" if count > 1 else ""
            found.add(CONSUMEQUEUE, kind, severity, path, unit * S.CQ_UNIT_SIZE % self.file_size, offset,
                      f"{queue} entry {unit}: {detail}: {then}{more}")  # fmt: skip
        return found


# what each disagreement does to delivery (DefaultMessageStore.getMessage): (severity, what follows)
EXT_OUTCOMES = {
    "cq-ext-missing": (
        "warning",
        "the broker delivers the message without filtering it by tag (isTagsCodeLegal false; the consumer's "
        "client filters it)",
    ),
    "cq-ext-unreadable": ("error", "a pull that reaches the entry fails, and the consumer stays at it"),
    "cq-ext-tags": (
        "error",
        "the broker filters the message by the unit's tagsCode, so a consumer subscribed to its tag does not get it",
    ),
    "cq-ext-store-time": ("warning", "RocketMQ does not deliver by it; the unit was not written with this record"),
}
# in SCHEDULE_TOPIC_XXXX the unit's tagsCode is the delivery time the schedule service reads
# (ScheduleMessageService.DeliverDelayedMessageTimerTask)
SCHEDULE_EXT_OUTCOMES = {
    **EXT_OUTCOMES,
    "cq-ext-missing": (
        "info",
        "the schedule service computes the delivery time again from the record's store time (computeDeliverTimestamp)",
    ),
    "cq-ext-unreadable": ("error", "the schedule service's task fails at the entry, and the level retries it for good"),
    "cq-ext-tags": (
        "error",
        "the schedule service delivers the message when the unit's tagsCode says (at once where that is further "
        "off than the level's delay), not after its own delay",
    ),
}
