#!/usr/bin/env python3
"""The annotated hex samples of the formats/ pages, printed by rmqctl from the real fixture stores.

    python formats/samples.py              # print every sample
    python formats/samples.py NAME...      # print some
    python formats/samples.py --write      # refresh the sample blocks in the pages
    python formats/samples.py --check      # exit 1 when a page's block differs from a fresh print

It reads the fixture stores in ../shared/fixtures (beside the repository) and says so in one line, exit 2,
when they are not there.

A page holds each sample between `<!-- sample NAME -->` and `<!-- /sample -->`. A block starts with a line
`# FIXTURE store/PATH +POSITION: what` (or `# FIXTURE msgId|UNIQ_KEY ID: what`); the annotated lines under
it give offsets from that position. tests/test_formats.py checks the pages against a fresh print and every
hex byte against the fixture file.
"""

from __future__ import annotations

import gzip
import re
import sys
from functools import lru_cache
from pathlib import Path

from rmqctl import dledger
from rmqctl.batchcq import batch_consume_queues
from rmqctl import schema as S
from rmqctl import schema_metaq as MQ
from rmqctl.config import load_config
from rmqctl.javacompat import java_string_hash
from rmqctl.views.annotate import annotate
from rmqctl.record import Blank
from rmqctl.rules import index_key_hash, index_slot
from rmqctl.store import Store
from rmqctl.timerstore import TimerFiles, slot_index

PAGES = Path(__file__).resolve().parent
FIXTURES = PAGES.parents[1] / "shared" / "fixtures"
BLOCK = re.compile(r"(<!-- sample (\S+) -->\n)(.*?)(<!-- /sample -->)", re.S)


@lru_cache(maxsize=None)
def store(fixture: str) -> Store:
    return Store(FIXTURES / fixture / "store", load_config(FIXTURES / fixture / "broker.conf"))


def where(fixture: str, path: Path, position: int, what: str) -> str:
    return f"# {fixture} store/{path.relative_to(store(fixture).root).as_posix()} +{position}: {what}"


def record(fixture: str, offset: int, what: str) -> list[str]:
    f, m = store(fixture).read_message(offset)
    data = bytes(f.buf[m.position : m.position + m.storeSize])
    return [where(fixture, f.path, m.position, what), *annotate(S.CommitLogRecord, data)]


def blank(fixture: str, file_index: int) -> list[str]:
    st = store(fixture)
    f = st.commitlog.files[file_index]
    rec = next(r for g, r in st.scan().entries(f.start, f.start + st.commitlog.file_size) if isinstance(r, Blank))
    data = bytes(f.buf[rec.position : rec.position + S.END_FILE_MIN_BLANK_LENGTH])
    rest = f.buf[rec.position + S.END_FILE_MIN_BLANK_LENGTH : st.commitlog.file_size]
    return [
        where(fixture, f.path, rec.position, "BLANK record, the end of this commitlog file"),
        *annotate(S.BlankRecord, data),
        f"# then {len(rest)} bytes to the end of the file, {'all zero' if not any(rest) else 'NOT all zero'}:"
        f" {rec.position} + storeSize {rec.storeSize} = file size {st.commitlog.file_size}",
    ]


def cq_unit(fixture: str, topic: str, queue_id: int, queue_offset: int) -> list[str]:
    st = store(fixture)
    cq = st.consume_queue(topic, queue_id)
    byte = queue_offset * S.CQ_UNIT_SIZE
    f = cq.files.find(byte)
    pos = byte - f.start
    data = bytes(f.buf[pos : pos + S.CQ_UNIT_SIZE])
    off, size, tags_code = S.CQ_UNIT.unpack(data)
    _, m = st.read_message(off)
    return [
        where(fixture, f.path, pos, f"unit of queueOffset {queue_offset} ({queue_offset} x 20 = byte {byte})"),
        *annotate(S.ConsumeQueueUnit, data),
        f"# -> the record at {off}: topic {m.topic}, queueId {m.queueId}, queueOffset {m.queueOffset},"
        f" storeSize {m.storeSize}; TAGS {m.tags!r}.hashCode() = {java_string_hash(m.tags or '')}",
    ]


def bcq_unit(fixture: str, topic: str, queue_id: int, index: int) -> list[str]:
    """Unit `index` of a BatchConsumeQueue, and the record it names."""
    q = next(q for q in batch_consume_queues(store(fixture)) if (q.topic, q.queue_id) == (topic, queue_id))
    f = q.files.files[index // q.units_per_file]
    pos = index % q.units_per_file * S.BCQ_UNIT_SIZE
    data = bytes(f.buf[pos : pos + S.BCQ_UNIT_SIZE])
    off, _, _, _, base, batch, _, _ = S.BCQ_UNIT.unpack(data)
    _, m = store(fixture).read_message(off)
    return [
        where(fixture, f.path, pos, f"unit {index} of {topic}/{queue_id}: queue offsets {base}..{base + batch - 1}"),
        *annotate(S.BatchConsumeQueueUnit, data),
        f"# -> the record at {off}: queueOffset {m.queueOffset}, INNER_NUM {m.properties.get('INNER_NUM')}, "
        f"INNER_BASE {m.properties.get('INNER_BASE')}, storeSize {m.storeSize}, storeTimestamp {m.storeTimestamp}",
    ]


def index_header(fixture: str, file_index: int) -> list[str]:
    ix = store(fixture).index_files()[file_index]
    data = bytes(ix.mf.buf[: S.INDEX_HEADER_SIZE])
    return [
        where(fixture, ix.path, 0, f"IndexHeader ({ix.entry_count} entries: indexCount - 1)"),
        *annotate(S.IndexHeader, data),
    ]


def index_chain(fixture: str, file_index: int, topic: str, key: str, steps: int) -> list[str]:
    """A lookup by hand: the key's hash, its slot, then the chain newest first through prevIndex."""
    st = store(fixture)
    ix = st.index_files()[file_index]
    full = f"{topic}#{key}"
    key_hash = index_key_hash(java_string_hash(full))
    slot = index_slot(key_hash, ix.slot_num)
    slot_pos = S.INDEX_HEADER_SIZE + slot * S.HASH_SLOT_SIZE
    data = bytes(ix.mf.buf[slot_pos : slot_pos + S.HASH_SLOT_SIZE])
    out = [
        f'# key "{full}": String.hashCode() = {java_string_hash(full)}, abs = {key_hash},'
        f" slot = {key_hash} % {ix.slot_num} = {slot}",
        where(fixture, ix.path, slot_pos, f"hash slot {slot} (40 + {slot} x 4)"),
        *annotate(S.HashSlot, data),
    ]
    n = S.HASH_SLOT.unpack(data)[0]
    base = S.INDEX_HEADER_SIZE + ix.slot_num * S.HASH_SLOT_SIZE
    for _ in range(steps):
        pos = base + n * S.INDEX_ENTRY_SIZE
        data = bytes(ix.mf.buf[pos : pos + S.INDEX_ENTRY_SIZE])
        h, phy, diff, prev = S.INDEX_ENTRY.unpack(data)
        _, m = st.read_message(phy)
        keys = ([m.uniq_key] if m.uniq_key else []) + [k for k in (m.keys or "").split(" ") if k]
        holds = f"{m.topic}, index keys {keys}"
        verdict = (
            "same hash, and the record carries the key"
            if h == key_hash and m.topic == topic and key in keys
            else ("same hash, another key: a collision" if h == key_hash else "another hash sharing the slot")
        )
        out += [
            where(fixture, ix.path, pos, f"entry {n} (40 + {ix.slot_num} x 4 + {n} x 20)"),
            *annotate(S.IndexEntry, data),
            f"# -> {phy}: {holds}; {verdict}; time = beginTimestamp + {diff} x 1000",
        ]
        if prev <= 0:
            out.append("# prevIndex 0: end of the chain")
            break
        n = prev
    return out


def checkpoint(fixture: str, what: str) -> list[str]:
    path = store(fixture).checkpoint_path
    return [where(fixture, path, 0, what), *annotate(S.Checkpoint, path.read_bytes(), keep=1)]


def dledger_entry(fixture: str, entry_pos: int, what: str) -> list[str]:
    """A DLedger entry header, then where its record starts (the record's commitlog offset)."""
    st = store(fixture)
    f = st.commitlog.find(entry_pos)
    pos = entry_pos - f.start
    data = bytes(f.buf[pos : pos + S.DLEDGER_BODY_OFFSET])
    _, m = st.read_message(entry_pos + S.DLEDGER_BODY_OFFSET)
    return [
        where(fixture, f.path, pos, what),
        *annotate(S.DLedgerEntryHeader, data),
        f"# -> the record at {entry_pos} + {S.DLEDGER_BODY_OFFSET} = {entry_pos + S.DLEDGER_BODY_OFFSET}: storeSize "
        f"{m.storeSize} = bodyLength, PHYSICALOFFSET {m.physicalOffset}, topic {m.topic}, queueOffset {m.queueOffset}",
    ]


def dledger_blank(fixture: str, file_index: int) -> list[str]:
    st = store(fixture)
    f = st.commitlog.files[file_index]
    at, size = dledger.walk_entries(f.buf, st.commitlog.file_size).blank
    data = bytes(f.buf[at : at + S.DLEDGER_MIN_BLANK])
    rest = f.buf[at + S.DLEDGER_MIN_BLANK : st.commitlog.file_size]
    return [
        where(fixture, f.path, at, "DLedger BLANK, the end of this data file"),
        *annotate(S.DLedgerBlank, data),
        f"# then {len(rest)} bytes to the end of the file, {'all zero' if not any(rest) else 'NOT all zero'}:"
        f" {at} + size {size} = file size {st.commitlog.file_size}",
    ]


def dledger_unit(fixture: str, entry_index: int) -> list[str]:
    st = store(fixture)
    off = entry_index * S.DLEDGER_INDEX_UNIT_SIZE
    f = st.dledger_index.find(off)
    data = bytes(f.buf[off - f.start : off - f.start + S.DLEDGER_INDEX_UNIT_SIZE])
    return [
        where(fixture, f.path, off - f.start, f"index unit of entry {entry_index} ({entry_index} x 32 = byte {off})"),
        *annotate(S.DLedgerIndexUnit, data),
    ]


def msg_ids(fixture: str, offset: int) -> list[str]:
    _, m = store(fixture).read_message(offset)
    out = []
    for kind, value, schema, fixed in (("msgId", m.msg_id, S.OffsetMsgId, 12), ("UNIQ_KEY", m.uniq_key, S.UniqKey, 12)):
        raw = bytes.fromhex(value)
        source = "storeHost + physicalOffset" if kind == "msgId" else "the UNIQ_KEY property"
        out += [
            f"# {fixture} {kind} {value}: {len(value)} hex chars, {source} of the record at {offset}",
            *annotate(schema, raw, ipLength=len(raw) - fixed),
        ]
    return out


def timer_unit(fixture: str, pos: int, what: str) -> list[str]:
    st = store(fixture)
    log = TimerFiles(st).timerlog
    f = log.queue.find(pos)
    data = bytes(f.buf[pos - f.start : pos - f.start + S.TIMERLOG_UNIT_SIZE])
    _, _, _, written, offset, offset_py, size_py, _, _ = S.TIMERLOG_UNIT.unpack(data)
    _, m = st.read_message(offset_py)
    real = m.properties["REAL_TOPIC"]
    return [
        where(fixture, f.path, pos - f.start, what),
        *annotate(S.TimerLogUnit, data),
        f"# filed at {written} + {offset} = {written + offset}: slot {written + offset} / 1000 % "
        f"{S.TIMER_WHEEL_SLOTS} = {slot_index(written + offset, 1000)}",
        f"# -> the record at {offset_py}: topic {m.topic}, storeSize {m.storeSize}, REAL_TOPIC {real} "
        f"(hashCode {java_string_hash(real)}), REAL_QID {m.properties['REAL_QID']}, TIMER_OUT_MS "
        f"{m.properties['TIMER_OUT_MS']}",
    ]


def timer_blank(fixture: str, file_index: int) -> list[str]:
    log = TimerFiles(store(fixture)).timerlog
    w = log.walk[file_index]
    data = bytes(w.file.buf[w.blank : w.blank + S.TIMERLOG_MIN_BLANK])
    rest = w.file.buf[w.blank + S.TIMERLOG_MIN_BLANK : log.file_size]
    return [
        where(fixture, w.file.path, w.blank, f"timerlog BLANK after {len(w.units)} units ({len(w.units)} x 52)"),
        *annotate(S.TimerLogBlank, data),
        f"# then {len(rest)} bytes to the end of the file, {'all zero' if not any(rest) else 'NOT all zero'}",
    ]


def wheel_slot(fixture: str, index: int) -> list[str]:
    """From store/timerwheel.gz: the fixture keeps the 38 MB wheel gzipped; the bytes are RocketMQ's."""
    data = gzip.decompress((FIXTURES / fixture / "store" / "timerwheel.gz").read_bytes())
    at = index * S.WHEEL_SLOT_SIZE
    return [
        f"# {fixture} store/timerwheel.gz +{at}: slot {index} ({index} x 32), read gunzipped",
        *annotate(S.WheelSlot, data[at : at + S.WHEEL_SLOT_SIZE]),
    ]


def timercheck(fixture: str) -> list[str]:
    path = TimerFiles(store(fixture)).timercheck_path
    return [
        where(fixture, path, 0, "config/timercheck: seven longs"),
        *annotate(S.TimerCheckpoint, path.read_bytes(), keep=1),
    ]


def metaq_record(fixture: str, rel: str, position: int, what: str) -> list[str]:
    """A MetaQ record: its 20-byte header says how long the rest is."""
    raw = (FIXTURES / fixture / "store" / rel).read_bytes()
    size = MQ.HEADER_LEN + MQ.HEADER.unpack_from(raw, position)[0]
    return [f"# {fixture} store/{rel} +{position}: {what}", *annotate(MQ.MetaqRecord, raw[position : position + size])]


SAMPLES = {
    "commitlog-v1-ipv4": (
        "commitlog-record.md",
        lambda: record("a-basic", 1548700, "RocketMQ 4.9.7, V1, IPv4 hosts, 4.x properties (no trailing separator)"),
    ),
    "commitlog-ipv6": (
        "commitlog-record.md",
        lambda: record("b-mixed", 42916, "RocketMQ 4.9.7, sysFlag 0x30: both hosts IPv6, 16 + 4 bytes each"),
    ),
    "commitlog-v5-crc": (
        "commitlog-record.md",
        lambda: record(
            "c-v5-features", 22080, "RocketMQ 5.3.3, IPv6 born host, 5.x properties ending in the __CRC32# pair"
        ),
    ),
    "commitlog-v5-crc-only": (
        "commitlog-record.md",
        lambda: record("c-v5-features", 396849, "RocketMQ 5.3.3, empty body and empty property map: only the CRC pair"),
    ),
    "commitlog-v2": (
        "commitlog-record.md",
        lambda: record("c-v5-features", 400993, "RocketMQ 5.3.3, V2 magic: a 128-character topic, 2-byte topicLength"),
    ),
    "blank": ("blank-record.md", lambda: blank("a-basic", 0)),
    "consumequeue-units": (
        "consumequeue.md",
        lambda: cq_unit("a-basic", "TopicTest", 2, 0) + cq_unit("a-basic", "TopicTest", 2, 64),
    ),
    "batchconsumequeue-units": (
        "batchconsumequeue.md",
        lambda: bcq_unit("j-batchcq", "BatchTopic", 0, 0) + bcq_unit("j-batchcq", "BatchTopic", 0, 1),
    ),
    "index-header": ("index.md", lambda: index_header("a-basic", 0) + index_header("a-basic", 1)),
    "index-chain": ("index.md", lambda: index_chain("a-basic", 0, "TopicTest", "USER-35", 8)),
    "checkpoint-49": ("checkpoint.md", lambda: checkpoint("a-basic", "RocketMQ 4.9.7 checkpoint: three longs")),
    "checkpoint-5x": ("checkpoint.md", lambda: checkpoint("c-v5-features", "RocketMQ 5.3.3 checkpoint: five longs")),
    "dledger-entry": (
        "dledger.md",
        lambda: (
            dledger_entry("e-dledger", 0, "the first entry: index 0, term 0, pos 0")
            + dledger_entry("e-dledger", 454805 - 1120, "the last entry (index 499), in the last data file")
        ),
    ),
    "dledger-blank": ("dledger.md", lambda: dledger_blank("e-dledger", 0)),
    "dledger-index-unit": ("dledger.md", lambda: dledger_unit("e-dledger", 0) + dledger_unit("e-dledger", 256)),
    "msgid-ipv4": ("msgid.md", lambda: msg_ids("a-basic", 1548700)),
    "msgid-ipv6": ("msgid.md", lambda: msg_ids("b-mixed", 42916)),
    "timerlog-unit": (
        "timer.md",
        lambda: timer_unit("f-timer5", 0, "the first timerlog unit: DEFAULT, first of its slot"),
    ),
    "timerlog-roll": ("timer.md", lambda: timer_unit("f-timer5", 7384, "a ROLL unit, chained to the one at 2184")),
    "timerlog-blank": ("timer.md", lambda: timer_blank("f-timer5", 0)),
    "wheel-slot": ("timer.md", lambda: wheel_slot("f-timer5", 518306)),
    "timercheck": ("timer.md", lambda: timercheck("f-timer5")),
    "metaq-plain": (
        "metaq.md",
        lambda: metaq_record(
            "g-metaq", "meta-test-0/00000000000000000000.meta", 0, "offset 0: flag 0, the data is the payload"
        ),
    ),
    "metaq-attribute": (
        "metaq.md",
        lambda: metaq_record(
            "g-metaq",
            "meta-test-0/00000000000000066043.meta",
            27223,
            "offset 66043 + 27223 = 93266: flag 1, a UTF-8 attribute, then the payload",
        ),
    ),
    "metaq-empty-attribute": (
        "metaq.md",
        lambda: metaq_record(
            "g-metaq", "meta-test-0/00000000000000000000.meta", 24817, "offset 24817: flag 1 with the empty attribute"
        ),
    ),
    "metaq-empty": (
        "metaq.md",
        lambda: metaq_record(
            "g-metaq", "meta-test-0/00000000000000000000.meta", 23735, "offset 23735: an empty payload, no attribute"
        ),
    ),
}


def render(name: str) -> str:
    """A sample's block as it appears in its page: the command, then what it prints."""
    return "```text\n" + f"$ python formats/samples.py {name}\n" + "\n".join(SAMPLES[name][1]()) + "\n```\n"


def page_blocks(text: str) -> dict[str, str]:
    return {m.group(2): m.group(3) for m in BLOCK.finditer(text)}


def refresh(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + render(m.group(2)) + m.group(4), text)


def main(argv: list[str]) -> int:
    if not FIXTURES.is_dir():
        print(
            f"formats/samples.py needs the fixture stores at {FIXTURES} (../shared/fixtures beside the repository)",
            file=sys.stderr,
        )
        return 2
    names = [a for a in argv if not a.startswith("--")]
    unknown = [n for n in names if n not in SAMPLES]
    if unknown:
        print(f"unknown sample(s) {', '.join(unknown)}; known: {', '.join(SAMPLES)}", file=sys.stderr)
        return 2
    if "--write" in argv or "--check" in argv:
        stale = []
        for page in sorted({p for p, _ in SAMPLES.values()}):
            path = PAGES / page
            text = path.read_text()
            fresh = refresh(text)
            if fresh != text:
                stale.append(page)
                if "--write" in argv:
                    path.write_text(fresh)
        if stale:
            print(f"{'rewrote' if '--write' in argv else 'stale'}: {', '.join(stale)}", file=sys.stderr)
        return 1 if stale and "--check" in argv else 0
    for name in names or SAMPLES:
        print(render(name).removeprefix("```text\n").removesuffix("```\n"), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
