"""Where `append` starts: the record style (RocketMQ 4 or 5) the config or the store asks for, and the
broker's normal recovery and reput at start (recoverNormally from the recovery start file, checking each
record as checkMessageAndReturnSize does, to the first failure; the consume queues' recovery,
recovery.recovered_queues_end; the index's end): the append point, the records still to dispatch before it, and
each queue's next offset.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path


from ..brokerversion import FIVE_ONLY_CONFIG_KEYS, parse_release, store_entries_version
from ..config import BrokerConfig, read_properties
from ..errors import StoreError, UsageError
from ..javacompat import PROPERTY_SEPARATOR
from ..record import read_record
from ..recovery import (
    AcceptedRecords,
    QueuesEnd,
    RecoveryChecker,
    normal_recovery_start,
    recovered_queues_end,
    zero_from,
)
from ..checks.consumequeue import DISPATCHED_AGAIN
from ..checks.verify import redispatched_missing
from ..store import Store
from .batchdispatch import dispatch_range, queue_ends


@dataclasses.dataclass
class AppendPoint:
    """Where appending starts, as the broker's normal recovery and reput find it."""

    end: int  # the append point (commitlog offset)
    reput_from: int  # the dispatch point: where the consume queues end (recovered_queues_end), or the commitlog starts
    catch_up_from: int | None  # the first record at or past reput_from: [catch_up_from, end) is dispatched first
    allow_v2: bool  # whether the recovery walk read V2 magic (a 4.x broker's refuses it)
    next_offsets: dict[tuple[str, int], int]  # queue -> next offset, from the records to catch up
    last_store_host: str | None
    style_votes: dict[int, int]  # version -> records whose property style / magic says so


def config_version(config: BrokerConfig, requested: int | None) -> tuple[int, str]:
    """The record style the config asks for, and what says so: a requested version, rocketmqVersion, a
    5.x-only key; else 4 ("default", which the store's records may still overrule)."""
    if requested is not None:
        return checked_version(config, requested, "requested"), "requested"
    if config.rocketmqVersion is not None:
        return checked_version(config, config.rocketmqVersion, "rocketmqVersion"), "rocketmqVersion"
    keys = set(read_properties(Path(config.source))) if config.source else set()
    named = [
        k
        for k in FIVE_ONLY_CONFIG_KEYS
        if k in keys or (k in ("enabledAppendPropCRC", "forceVerifyPropCRC") and getattr(config, k))
    ]
    if named:
        return 5, f"5.x-only config key {named[0]}"
    return 4, "default"


def checked_version(config: BrokerConfig, version, where: str) -> int:
    """The record style (4 or 5) of a version given as 4, 5 or 5.5."""
    v = parse_release(version, where)[0]
    if v < 5 and (config.enabledAppendPropCRC or config.forceVerifyPropCRC):
        raise UsageError(f"{where} says RocketMQ 4, but the config enables the 5.x property CRC")
    return v


def store_version(root: Path, votes: dict[int, int]) -> tuple[int, str] | None:
    """The record style the store itself shows (its records' magic and property style, or 5.x-only files
    in its root), when the config did not say."""
    if votes.get(5, 0) or votes.get(4, 0):
        return (5 if votes.get(5, 0) > votes.get(4, 0) else 4), "the store's records"
    if store_entries_version(root) is not None:
        return 5, "5.x files in the store root"
    return None


def _require_whole_files(files: list, size: int):
    """Every commitlog file of the configured size, each starting where the previous one ends, as load requires."""
    for f in files:
        if f.length != size:
            raise StoreError(
                f"file is {f.length} bytes, not mappedFileSizeCommitLog={size}; the broker would refuse to load it",
                f.path,
            )
    for a, b in zip(files, files[1:]):
        if b.start != a.start + size:
            raise StoreError(
                f"gap in the commitlog before {b.name} (previous file {a.name}); run `rmqctl verify`", b.path
            )


def _index_end(store: Store, config: BrokerConfig) -> int:
    """The last index file's endPhyOffset (-1: no entry, or messageIndexEnable=false)."""
    if config.messageIndexEnable:
        ix = store.index_files()
        if ix and ix[-1].index_count > 1:
            return ix[-1].header["endPhyOffset"]
    return -1


def _require_queues_kept(ends: QueuesEnd):
    """No consume queue whose recovery drops units: the broker's would truncate them away (acknowledged messages
    no consumer finds again), and the units appended would land on top of them."""
    for q in ends.queues:
        if q.drops_units():
            k, pos = q.stop
            raise StoreError(
                f"consumequeue {q.name}: the broker's recovery stops here (a unit that is not valid) and drops the "
                "units after it; run `rmqctl verify`, then `rmqctl rebuild consumequeue`, before appending",
                q.files[k].path,
                position=pos,
            )


def _require_nothing_redispatched_below(store: Store, reput_from: int):
    """After a crash the broker's abnormal recovery dispatches again the units its queues lack from its start
    file on; append dispatches only past the queues' end (`reput_from`) and moves the checkpoint on, which
    moves that start past them: units it would lose are refused."""
    if not store.crashed():
        return
    missing = redispatched_missing(store, reput_from)
    if missing:
        first = missing[0]
        raise StoreError(
            f"abort: {first.detail.split('; ' + DISPATCHED_AGAIN)[0]}, which the broker's abnormal recovery dispatches again but "
            f"append would not (it dispatches from {reput_from}, the queues' end); run `rmqctl rebuild "
            "consumequeue` first",
            store.root / first.file,
        )


def _require_dispatched_within(store: Store, ends: QueuesEnd, index_end: int, end: int):
    """Neither the consume queues nor the index reach past the commitlog's end (the append point)."""
    past = next((q for q in ends.queues if q.reaches_past(end)), None)
    if past is not None or ends.max_phy > end:
        f, pos = past.last_unit if past is not None else (None, None)
        raise StoreError(
            f"{f'consumequeue {past.name}' if past else 'the RocksDB consume queue checkpoint'} reaches "
            f"commitlog offset {past.max_phy if past else ends.max_phy}, "
            f"{'at or past' if past and past.names_a_record else 'past'} the commitlog's end {end}; "
            "run `rmqctl repair` first",
            f.path if f is not None else store.consumequeue_dir,
            position=pos,
        )
    if index_end >= end:
        raise StoreError(
            f"the index holds commitlog offset {index_end}, past the commitlog end {end}; run `rmqctl repair` first",
            store.index_dir,
        )


def _count_styles(chunk, votes: dict[int, int]):
    """The record style each record shows: V2 magic is 5.x's; otherwise a property string ending in the
    separator is 5.x's (MessageDecoder.messageProperties2String), one without is 4.x's."""
    v2 = chunk.column("v2") == 1
    length = chunk.column("propertiesLength")
    with_properties = ~v2 & (length > 0)
    last_bytes = chunk.u8[(chunk.column("propertiesAt") + length - 1)[with_properties]]
    fives = int((last_bytes == ord(PROPERTY_SEPARATOR)).sum())
    votes[5] += int(v2.sum()) + fives
    votes[4] += len(last_bytes) - fives


def append_point(store: Store, config: BrokerConfig, version: int, version_source: str) -> AppendPoint:
    """recoverNormally's walk, from its start file (recovery.normal_recovery_start) or the dispatch point, if
    earlier, to the first record that fails checkMessageAndReturnSize; then everything after it must be zeros."""
    files = store.commitlog.files
    size = store.commitlog.file_size
    _require_whole_files(files, size)
    ends, index_end = recovered_queues_end(store), _index_end(store, config)
    _require_queues_kept(ends)
    min_offset = files[0].start if files else 0
    # from the queues' end itself, as 4.9's reput: 5.x's recovery dispatches only past it, which would leave a
    # record at exactly a consumequeue's end without its unit and the queue offsets after it out of step
    reput_from = max(ends.max_phy, min_offset)
    recover_idx = normal_recovery_start(store, lambda: ends.max_phy)
    start_idx = recover_idx
    for i, f in enumerate(files):
        if f.start <= reput_from < f.start + size:
            start_idx = min(start_idx, i)
    # checkMessageAndReturnSize: with checkCRCOnRecover from the recovery start file, as the reput
    # reads (no CRC) before it; a 4.x store reads V2 magic as illegal
    strict, lenient = RecoveryChecker(store), RecoveryChecker(store)
    lenient.crc = False
    strict.v2 = lenient.v2 = not (version_source != "default" and version < 5)
    strict.prop_crc = strict.prop_crc and strict.v2
    catch_up_from = None
    votes = {4: 0, 5: 0}
    last = None  # (file, position) of the last record in the recovery's files
    accepted = AcceptedRecords(store, start_idx, lambda i: strict if i >= recover_idx else lenient)
    stop = None  # (file index, the record the walk failed on)
    for i, chunk, bad in accepted.walk():
        if bad is not None:
            stop = (i, bad)
        if chunk is None:
            continue
        positions = chunk.column("position")
        if catch_up_from is None and positions[-1] + chunk.file.start >= reput_from:
            catch_up_from = int(positions[positions + chunk.file.start >= reput_from][0]) + chunk.file.start
        if i >= recover_idx:
            _count_styles(chunk, votes)
            last = (chunk.file, int(positions[-1]))
    end = files[-1].start + size if files else 0
    if stop is not None:
        i, bad = stop
        end = bad.commitLogOffset
        if not zero_from(store, i, bad.position):
            raise StoreError(
                f"the commitlog does not end cleanly: {bad.detail}, and non-zero bytes follow "
                "(a torn or garbage tail); run `rmqctl repair` before appending",
                files[i].path,
                end,
            )
    last_host = None
    if last is not None:
        f, pos = last
        last_host = read_record(f.buf, pos, min(len(f.buf), size), strict.v2).store_host
        f.release()
    _require_dispatched_within(store, ends, index_end, end)
    _require_nothing_redispatched_below(store, reput_from)
    next_offsets: dict[tuple[str, int], int] = {}
    if catch_up_from is not None:  # the queues' next offsets past the records they lack
        for _, b in dispatch_range(store, catch_up_from, end, config, strict.v2, with_keys=False):
            for queue, after in queue_ends(b).items():
                next_offsets[queue] = max(next_offsets.get(queue, 0), after)
    return AppendPoint(
        end=end,
        reput_from=reput_from,
        catch_up_from=catch_up_from,
        allow_v2=strict.v2,
        next_offsets=next_offsets,
        last_store_host=last_host,
        style_votes=votes,
    )
