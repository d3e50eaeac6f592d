"""formats/ pages against the code: every byte table against the construct declarations in rmqctl/schema.py
(names, order, offsets, sizes, types; the commitlog record also against RECORD_HEADS and record_length),
every hex sample against a fresh print and against the fixture bytes, and the pages' invariants against
every fixture."""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import json
import re
import struct
from pathlib import Path

import pytest

from conftest import ALL_FIXTURES, FIXTURES, broker_conf, truth
from rmqctl import schema as S
from rmqctl.config import load_config
from rmqctl.views.annotate import spans
from rmqctl.record import property_crc_state
from rmqctl.store import Store

FORMATS = Path(__file__).resolve().parents[1] / "formats"
PAGES = sorted(p for p in FORMATS.glob("*.md") if p.name != "README.md")

# table marker -> (declaration, parse parameters of its first and second size variant)
FIXED_TABLES = {
    "blank-record": (S.BlankRecord, {}, None),
    "consumequeue-unit": (S.ConsumeQueueUnit, {}, None),
    "batchconsumequeue-unit": (S.BatchConsumeQueueUnit, {}, None),
    "consumequeue-ext-unit": (S.ConsumeQueueExtUnit, {}, None),
    "index-header": (S.IndexHeader, {}, None),
    "hash-slot": (S.HashSlot, {}, None),
    "index-entry": (S.IndexEntry, {}, None),
    "checkpoint": (S.Checkpoint, {}, None),
    "timerlog-unit": (S.TimerLogUnit, {}, None),
    "timerlog-blank": (S.TimerLogBlank, {}, None),
    "wheel-slot": (S.WheelSlot, {}, None),
    "timercheck": (S.TimerCheckpoint, {}, None),
    "offset-msgid": (S.OffsetMsgId, {"ipLength": 4}, {"ipLength": 16}),
    "uniq-key": (S.UniqKey, {"ipLength": 4}, {"ipLength": 16}),
    "dledger-entry-header": (S.DLedgerEntryHeader, {}, None),
    "dledger-blank": (S.DLedgerBlank, {}, None),
    "dledger-index-unit": (S.DLedgerIndexUnit, {}, None),
    "rocksdb-key-head": (S.RocksDBKeyHead, {}, None),
    "rocksdb-index-value": (S.RocksDBIndexValue, {}, None),
    "rocksdb-timer-value": (S.RocksDBTimerValue, {}, None),
    "rocksdb-trans-value": (S.RocksDBTransValue, {}, None),
}
HOST_COLUMNS = {
    "IPv4 hosts": (False, False),
    "born IPv6 (0x10)": (True, False),
    "store IPv6 (0x20)": (False, True),
    "both IPv6 (0x30)": (True, True),
}


def load_samples():
    spec = importlib.util.spec_from_file_location("formats_samples", FORMATS / "samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SAMPLES = load_samples()


def tables() -> dict[str, list[dict]]:
    """Every `<!-- table: NAME -->` table of every page, as rows keyed by the header cells."""
    out = {}
    for page in PAGES:
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.fullmatch(r"<!-- table: (\S+) -->", line.strip())
            if not m:
                continue
            assert m.group(1) not in out, f"table {m.group(1)} appears twice"
            head = [c.strip() for c in lines[i + 1].strip().strip("|").split("|")]
            rows = []
            for row in lines[i + 3 :]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(head, (c.strip() for c in row.strip().strip("|").split("|")))))
            out[m.group(1)] = rows
    return out


TABLES = tables()


def cell_name(cell: str) -> str:
    return cell.strip("`")


def variants(cell: str) -> tuple[str, str | None]:
    """'4 / 16' -> ('4', '16'); '1 (V2: 2)' -> ('1', '2'); anything else -> (cell, None)."""
    m = re.fullmatch(r"(\S+) / (\S+)", cell) or re.fullmatch(r"(\S+) \(V2: (\S+)\)", cell)
    return (m.group(1), m.group(2)) if m else (cell, None)


def evaluate(expr: str, values: dict) -> int:
    """An offset or size cell: an integer, a length field name, or a sum of both."""
    total = 0
    for term in expr.replace("`", "").split("+"):
        term = term.strip()
        total += int(term) if term.isdigit() else values[term]
    return total


def test_every_declaration_has_a_table():
    named = set(FIXED_TABLES) | {"commitlog-record"}
    assert set(S.SCHEMAS) <= named
    assert named <= set(TABLES), f"missing tables: {named - set(TABLES)}"


def test_readme_lists_every_page():
    readme = (FORMATS / "README.md").read_text()
    for page in PAGES:
        assert f"]({page.name})" in readme, page.name


@pytest.mark.parametrize("name", sorted(FIXED_TABLES))
def test_fixed_layout_table_matches_declaration(name):
    schema, params, wide = FIXED_TABLES[name]
    rows = TABLES[name]
    size = schema.sizeof(**params)
    blanks = {
        S.BlankRecord: lambda: S.BLANK.pack(size, S.MAGIC_BLANK),
        S.TimerLogBlank: lambda: S.TIMERLOG_BLANK.pack(size, 0, S.MAGIC_BLANK),
        S.DLedgerBlank: lambda: S.DLEDGER_BLANK.pack(S.DLEDGER_BLANK_MAGIC, size),
    }
    data = blanks[schema]() if schema in blanks else bytes(size)
    layout = spans(schema, data, **params)
    assert [cell_name(r["field"]) for r in rows] == [sp.name for sp in layout]
    for r, sp in zip(rows, layout):
        assert int(r["offset"]) == sp.offset, (name, sp.name)
        first, second = variants(r["size"])
        assert int(first) == sp.size, (name, sp.name)
        assert r["type"] == sp.type, (name, sp.name)
        if second is not None:
            assert wide is not None, f"{name}.{sp.name}: a second size but no second variant"
            wide_layout = {w.name: w for w in spans(schema, bytes(schema.sizeof(**wide)), **wide)}
            assert int(second) == wide_layout[sp.name].size, (name, sp.name)
    assert sum(sp.size for sp in layout) == size


def open_store(name: str) -> Store:
    return Store(FIXTURES / name / "store", load_config(broker_conf(name)))


def record_kinds() -> dict[tuple, list[bytes]]:
    """Real records by (born IPv6, store IPv6, V2)."""
    out: dict[tuple, list[bytes]] = {}
    for name in ("a-basic", "b-mixed", "c-v5-features"):
        for f, m in open_store(name).scan().records():
            key = (
                bool(m.sysFlag & S.BORNHOST_V6_FLAG),
                bool(m.sysFlag & S.STOREHOSTADDRESS_V6_FLAG),
                m.magicCode == S.MAGIC_V2,
            )
            out.setdefault(key, []).append(bytes(f.buf[m.position : m.position + m.storeSize]))
    return out


RECORDS = record_kinds()


def head_offsets(born_v6: bool, store_v6: bool) -> dict[str, int]:
    """Field offsets of schema.RECORD_HEADS, from its struct format alone, plus where the body starts."""
    head, names = S.RECORD_HEADS[(born_v6, store_v6)]
    codes = re.findall(r"\d*[a-zA-Z]", head.format.lstrip(">"))
    assert len(codes) == len(names)
    out, pos = {}, 0
    for n, code in zip(names, codes):
        out[n] = pos
        pos += struct.calcsize(">" + code)
    out["body"] = pos
    return out


def test_commitlog_table_matches_declaration_on_real_records():
    """The table's IPv4/V1 offsets and sizes, evaluated with each record's own lengths, are where the
    declaration finds every field; the IPv6 and V2 widths are those of real IPv6 and V2 records."""
    rows = TABLES["commitlog-record"]
    assert len(RECORDS[(False, False, False)]) > 1000
    for data in RECORDS[(False, False, False)]:
        layout = spans(S.CommitLogRecord, data)
        values = {sp.name: sp.value for sp in layout}
        assert [cell_name(r["field"]) for r in rows] == [sp.name for sp in layout]
        for r, sp in zip(rows, layout):
            assert evaluate(r["offset"], values) == sp.offset, sp.name
            assert evaluate(variants(r["size"])[0], values) == sp.size, sp.name
            assert variants(r["type"])[0] == sp.type, sp.name
    wide = {sp.name: sp for sp in spans(S.CommitLogRecord, RECORDS[(True, True, False)][0])}
    v2 = {sp.name: sp for sp in spans(S.CommitLogRecord, RECORDS[(False, False, True)][0])}
    for r in rows:
        field = cell_name(r["field"])
        _, size_alt = variants(r["size"])
        _, type_alt = variants(r["type"])
        if " / " in r["size"]:  # IPv4 / IPv6 width
            assert int(size_alt) == wide[field].size, field
        if "(V2:" in r["size"]:
            assert int(size_alt) == v2[field].size and type_alt == v2[field].type, field
    # the fixed part is also exactly schema.RECORD_HEADS for IPv4 hosts
    offsets = head_offsets(False, False)
    for r in rows:
        field = cell_name(r["field"])
        if field in offsets:
            assert int(r["offset"]) == offsets[field], field


def test_commitlog_ipv6_offsets_match_record_heads():
    rows = TABLES["commitlog-record-ipv6"]
    assert rows
    for column, combo in HOST_COLUMNS.items():
        offsets = head_offsets(*combo)
        for r in rows:
            assert int(r[column]) == offsets[cell_name(r["field"])], (column, r["field"])
    for (born_v6, store_v6, _), records in RECORDS.items():  # and real records agree
        layout = {sp.name: sp.offset for sp in spans(S.CommitLogRecord, records[0])}
        column = next(c for c, combo in HOST_COLUMNS.items() if combo == (born_v6, store_v6))
        for r in rows:
            assert int(r[column]) == layout[cell_name(r["field"])], (column, r["field"])


def test_commitlog_length_constants_match_record_length():
    rows = TABLES["commitlog-record-length"]
    assert len(rows) == 4
    for r in rows:
        born_v6, store_v6 = HOST_COLUMNS[r["hosts"]]
        flags = (S.BORNHOST_V6_FLAG if born_v6 else 0) | (S.STOREHOSTADDRESS_V6_FLAG if store_v6 else 0)
        assert int(r["V1"]) == S.record_length(flags, 0, 0, 0, False)
        assert int(r["V2"]) == S.record_length(flags, 0, 0, 0, True)
        assert S.record_length(flags, 5, 7, 11, False) == int(r["V1"]) + 23


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_annotation_offsets_equal_rocketmq_layout(name):
    """Where the annotation (a walk of the declaration) puts each variable field is where RocketMQ's own
    decode found it (the truth's `layout`)."""
    store = open_store(name)
    want = {w["commitLogOffset"]: w["layout"] for w in truth(name, "truth-messages.jsonl")}
    checked = 0
    for f, m in store.scan().records():
        layout = {
            sp.name: sp.offset for sp in spans(S.CommitLogRecord, bytes(f.buf[m.position : m.position + m.storeSize]))
        }
        for field, offset in want[f.start + m.position].items():
            ours = field + ".ip" if field in ("bornHost", "storeHost") else field  # a host starts with its ip
            assert layout[ours] == offset, (f.start + m.position, field)
        checked += 1
    assert checked >= len(want) - 1


# ---- samples ------------------------------------------------------------------------------------------------


def page_samples() -> list[tuple[Path, str, str]]:
    out = []
    for page in PAGES:
        out += [(page, name, block) for name, block in SAMPLES.page_blocks(page.read_text()).items()]
    return out


def test_every_sample_is_on_its_page():
    on_pages = {(p.name, n) for p, n, _ in page_samples()}
    assert on_pages == {(page, n) for n, (page, _) in SAMPLES.SAMPLES.items()}


@pytest.mark.parametrize("page,name,block", page_samples(), ids=[n for _, n, _ in page_samples()])
def test_sample_is_what_rmqctl_prints_now(page, name, block):
    assert block == SAMPLES.render(name), f"stale sample {name} in {page.name}: run python formats/samples.py --write"


HEADER = re.compile(r"# (\S+) store/(\S+) \+(\d+): ")
ID_HEADER = re.compile(r"# (\S+) (msgId|UNIQ_KEY) ([0-9A-F]+): .* of the record at (\d+)$")
HEX_LINE = re.compile(r"\s*(\d+)  ((?:[0-9a-f]{2} )*[0-9a-f]{2})(?=\s|$)")


@pytest.mark.parametrize("page,name,block", page_samples(), ids=[n for _, n, _ in page_samples()])
def test_sample_bytes_are_the_fixture_bytes(page, name, block):
    """Read independently of rmqctl: every hex byte shown is the byte at that place in the fixture file (or,
    for an id, of the id, which must be the id of the record named)."""
    source: bytes | None = None
    base = 0
    checked = 0
    for line in block.splitlines():
        if m := HEADER.match(line):
            path = FIXTURES / m.group(1) / "store" / m.group(2)
            source = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            base = int(m.group(3))
            continue
        if m := ID_HEADER.match(line):
            fixture, kind, ident, offset = m.group(1), m.group(2), m.group(3), int(m.group(4))
            record = next(w for w in truth(fixture, "truth-messages.jsonl") if w["commitLogOffset"] == offset)
            assert ident == (record["msgId"] if kind == "msgId" else record["uniqKey"])
            source, base = bytes.fromhex(ident), 0
            continue
        if m := HEX_LINE.match(line):
            assert source is not None, line
            shown = bytes.fromhex(m.group(2))
            at = base + int(m.group(1))
            assert source[at : at + len(shown)] == shown, line
            checked += len(shown)
    assert checked > 0


ANNOTATION = re.compile(r"\s*\d+  (?:[0-9a-f]{2} )*[0-9a-f]{2}\s+(\w+(?:\.\w+)?)\s+(\S+)")
# the annotated fields of a commitlog record whose printed value is the truth file's value as it stands
TRUTH_FIELDS = {
    "storeSize": "storeSize",
    "bodyCRC": "bodyCRC",
    "queueId": "queueId",
    "flag": "flag",
    "queueOffset": "queueOffset",
    "physicalOffset": "physicalOffsetField",
    "bornTimestamp": "bornTimestamp",
    "storeTimestamp": "storeTimestamp",
    "reconsumeTimes": "reconsumeTimes",
    "preparedTransactionOffset": "preparedTransactionOffset",
    "bodyLength": "bodyLength",
    "topicLength": "topicLength",
    "propertiesLength": "propertiesLength",
}


@pytest.mark.parametrize(
    "page,name,block",
    [s for s in page_samples() if s[1].startswith("commitlog")],
    ids=[n for _, n, _ in page_samples() if n.startswith("commitlog")],
)
def test_commitlog_sample_values_are_the_truth(page, name, block):
    """Read independently of rmqctl: every value a commitlog sample prints beside a field is the value
    RocketMQ's MessageDecoder read for that record (the fixture's truth-messages.jsonl)."""
    head = next(m for line in block.splitlines() if (m := HEADER.match(line)))
    fixture, file, pos = head.group(1), head.group(2), int(head.group(3))
    offset = int(Path(file).name) + pos
    record = next(w for w in truth(fixture, "truth-messages.jsonl") if w["commitLogOffset"] == offset)
    printed = {m.group(1): m.group(2) for line in block.splitlines() if (m := ANNOTATION.match(line))}
    checked = {field: printed[field] for field in TRUTH_FIELDS if field in printed}
    assert checked == {field: str(record[key]) for field, key in TRUTH_FIELDS.items() if field in printed}
    topic = printed["topic"][1:-1]  # a long topic is shown cut, ending in …
    assert topic == record["topic"] or (topic.endswith("…") and record["topic"].startswith(topic[:-1]))
    assert len(checked) >= 10


# ---- the pages' invariants, on every fixture ------------------------------------------------------------------


def written_by_49(name: str) -> bool:
    return json.loads((FIXTURES / name / "truth-summary.json").read_text())["rocketmqVersion"].startswith("4.")


def torn_offsets(name: str) -> set[int]:
    path = FIXTURES / name / "corruption.json"
    return {json.loads(path.read_text())["tornTail"]["messageCommitLogOffset"]} if path.exists() else set()


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_commitlog_invariants(name):
    store = open_store(name)
    size = store.commitlog.file_size
    crc_appended = store.config.enabledAppendPropCRC
    for f, m in store.scan().records():
        where = f.start + m.position
        assert m.physicalOffset == where
        assert m.position + m.storeSize + S.END_FILE_MIN_BLANK_LENGTH <= size, where
        if m.transaction_type in (S.TRANSACTION_PREPARED_TYPE, S.TRANSACTION_ROLLBACK_TYPE):
            assert m.queueOffset == 0, where
        if m.magicCode == S.MAGIC_V1:
            assert len(m.topicBytes) <= 127, where
        props = m.propertiesBytes
        if written_by_49(name):  # separators only between pairs, no CRC trailer
            assert not props.endswith(b"\x02") and b"__CRC32#" not in props, where
        elif crc_appended:  # 5.x: every pair ends with 0x02, the last 20 bytes are the CRC pair
            assert props.endswith(b"\x02") and props[-20:-11] == b"__CRC32#\x01", where
            stored, computed = property_crc_state(f.buf, m.position, m)
            assert stored == computed, where


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_consumequeue_invariants(name):
    store = open_store(name)
    for cq in store.consume_queues():
        previous = -1
        for qoff, f, pos, off, size, tags in cq.entries():
            byte = qoff * S.CQ_UNIT_SIZE
            assert (f.name, pos) == (f"{byte - byte % cq.files.file_size:020d}", byte % cq.files.file_size)
            assert off > previous
            previous = off
            if off in torn_offsets(name):
                continue
            _, m = store.read_message(off)
            assert m.storeSize == size
            assert m.transaction_type not in (S.TRANSACTION_PREPARED_TYPE, S.TRANSACTION_ROLLBACK_TYPE)
            if not cq.topic.startswith("%LMQ%"):
                assert (m.topic, m.queueId, m.queueOffset) == (cq.topic, cq.queue_id, qoff)


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_index_invariants(name):
    store = open_store(name)
    for ix in store.index_files():
        h, entries, slots, count = ix.header, ix.entries(), ix.slots(), ix.index_count
        assert count <= ix.index_num
        assert int((slots != 0).sum()) == h["hashSlotCount"]
        assert int(entries[1]["phyOffset"]) == h["beginPhyOffset"]
        assert int(entries[count - 1]["phyOffset"]) == h["endPhyOffset"]
        # every used entry is on exactly one chain: the chain of the slot its own hash falls in
        seen = []
        for slot in map(int, (slots != 0).nonzero()[0]):
            n = int(slots[slot])
            while n > 0:
                assert 0 < n < count
                assert int(entries[n]["keyHash"]) % ix.slot_num == slot
                seen.append(n)
                prev = int(entries[n]["prevIndex"])
                assert prev < n  # older entries have smaller numbers
                n = prev
        assert sorted(seen) == list(range(1, count))


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_checkpoint_invariants(name):
    data = open_store(name).checkpoint_path.read_bytes()
    assert len(data) == S.CHECKPOINT_FILE_SIZE and not any(data[40:])
    if written_by_49(name):
        assert not any(data[24:40])


def test_samples_say_what_they_need_without_shared(tmp_path):
    """formats/samples.py away from ../shared: one line naming the fixtures it reads, exit 2, no traceback."""
    import shutil
    import subprocess
    import sys

    shutil.copytree(FORMATS, tmp_path / "repo" / "formats")
    res = subprocess.run(
        [sys.executable, str(tmp_path / "repo" / "formats" / "samples.py")],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(FORMATS.parent), "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == (
        f"formats/samples.py needs the fixture stores at {tmp_path / 'shared' / 'fixtures'} "
        "(../shared/fixtures beside the repository)\n"
    )


# ---- MetaQ (formats/metaq.md, rmqctl/schema_metaq.py) ------------------------------------------------------------


def test_metaq_table_matches_declaration_on_real_records():
    """The metaq-record table against the declaration laid over real g-metaq records, with and without an
    attribute (without one, the attribute rows are absent and the payload starts at 20)."""
    from rmqctl import schema_metaq as MQ

    rows = TABLES["metaq-record"]
    seen = set()
    for w in truth("g-metaq", "truth-messages.jsonl")[:200]:
        raw = (FIXTURES / "g-metaq" / "store" / w["segment"]).read_bytes()
        data = raw[w["segmentPosition"] : w["segmentPosition"] + w["recordSize"]]
        layout = spans(MQ.MetaqRecord, data)
        values = {sp.name.rsplit(".", 1)[-1]: sp.value for sp in layout if isinstance(sp.value, int)}
        has_attr = bool(w["flag"] & MQ.ATTRIBUTE_FLAG)
        table = [r for r in rows if has_attr or not cell_name(r["field"]).startswith("attribute.")]
        assert [cell_name(r["field"]) for r in table] == [sp.name for sp in layout]
        for r, sp in zip(table, layout):
            assert r["type"] == sp.type, sp.name
            if sp.name == "payload" and not has_attr:
                assert (sp.offset, sp.size) == (MQ.HEADER_LEN, w["msgLen"])
                continue
            offset, size = (eval(r[c].replace("`", ""), {"__builtins__": {}}, values) for c in ("offset", "size"))
            assert (offset, size) == (sp.offset, sp.size), sp.name
        assert sum(sp.size for sp in layout) == MQ.HEADER_LEN + w["msgLen"] == w["recordSize"]
        seen.add(has_attr)
    assert seen == {True, False}
    assert MQ.HEADER.size == sum(int(r["size"]) for r in rows[:4]) == MQ.HEADER_LEN


def test_metaq_invariants():
    """formats/metaq.md's invariants on the g-metaq fixture, read without rmqctl's store code: contiguous
    20-digit segments, checksums, and the roll rule (a segment ends with the write that reached maxSegmentSize)."""
    import zlib

    summary = json.loads((FIXTURES / "g-metaq" / "truth-summary.json").read_text())
    limit = summary["maxSegmentSize"]
    records = truth("g-metaq", "truth-messages.jsonl")
    for part in summary["partitions"]:
        segs = part["segments"]
        for a, b in zip(segs, segs[1:]):
            assert a["startOffset"] + a["size"] == b["startOffset"]
        for s in segs:
            path = FIXTURES / "g-metaq" / "store" / s["file"]
            assert path.name == f"{s['startOffset']:020d}.meta" and path.stat().st_size == s["size"]
        for s in segs[:-1]:
            last_write = max(w["appendLocation"]["offset"] for w in records if w["segment"] == s["file"])
            assert s["size"] >= limit > last_write - s["startOffset"]
    for w in records[:300]:
        raw = (FIXTURES / "g-metaq" / "store" / w["segment"]).read_bytes()
        data = raw[w["segmentPosition"] + 20 : w["segmentPosition"] + w["recordSize"]]
        assert zlib.crc32(data) & 0x7FFFFFFF == w["checksum"]


# ---- configs in RocksDB (formats/rocksdb-config.md, rmqctl/rocksdbconfig.py) --------------------------------------
def test_rocksdb_config_table_matches_the_kinds():
    from rmqctl.rocksdbconfig import KINDS  # here: only this page's test reads the config databases' declaration

    lines = (FORMATS / "rocksdb-config.md").read_text().splitlines()
    body = itertools.takewhile(lambda line: line.startswith("|"), lines[lines.index("<!-- config-databases -->") + 3 :])
    rows = [[cell_name(c.strip()) for c in line.strip().strip("|").split("|")][:4] for line in body]
    assert rows == [[k.file, k.separate, k.data_cf, k.version_cf] for k in KINDS.values()]
