"""The construct declarations against the real stores: every record, BLANK, consumequeue unit, index header,
slot and entry, and checkpoint of every fixture parses and builds back to the same bytes, and agrees with the
fast paths derived from the declarations (struct formats, numpy dtypes, read_record / encode_record)."""

from __future__ import annotations

import ipaddress
import json
import struct

import numpy as np
import pytest

from conftest import ALL_FIXTURES, FIXTURES, broker_conf, truth
from rmqctl import schema as S
from rmqctl.config import load_config
from rmqctl.views.msgid import decode_offset_id, decode_unique_id
from rmqctl.record import Blank, RecordError, encode_record, read_record
from rmqctl.store import Store

HOST_COMBINATIONS = [(b, s) for b in (False, True) for s in (False, True)]


def open_store(name: str) -> Store:
    return Store(FIXTURES / name / "store", load_config(broker_conf(name)))


def host_flags(born_v6: bool, store_v6: bool) -> int:
    return (S.BORNHOST_V6_FLAG if born_v6 else 0) | (S.STOREHOSTADDRESS_V6_FLAG if store_v6 else 0)


def torn_offsets(name: str) -> set[int]:
    """Records the crashed fixture damaged on purpose (corruption.json): only the torn tail is unreadable."""
    path = FIXTURES / name / "corruption.json"
    if not path.exists():
        return set()
    return {json.loads(path.read_text())["tornTail"]["messageCommitLogOffset"]}


# ---- the derived fast structs are the declarations, compiled -----------------------------------------------


@pytest.mark.parametrize(
    "schema,compiled",
    [
        (S.ConsumeQueueUnit, S.CQ_UNIT),
        (S.IndexHeader, S.INDEX_HEADER),
        (S.HashSlot, S.HASH_SLOT),
        (S.IndexEntry, S.INDEX_ENTRY),
        (S.BlankRecord, S.BLANK),
    ],
    ids=["cq-unit", "index-header", "hash-slot", "index-entry", "blank"],
)
def test_compiled_struct_matches_declaration(schema, compiled):
    assert compiled.size == schema.sizeof()
    values = tuple(range(1, len(S.fixed_fields(schema)) + 1))
    if schema is S.BlankRecord:
        values = (1234, S.MAGIC_BLANK)
    data = compiled.pack(*values)
    parsed = schema.parse(data)
    assert tuple(parsed[n] for n, _ in S.fixed_fields(schema)) == values
    assert schema.build(parsed) == data


@pytest.mark.parametrize("schema,dtype", [(S.ConsumeQueueUnit, S.CQ_DTYPE), (S.IndexEntry, S.INDEX_ENTRY_DTYPE)])
def test_numpy_dtype_matches_declaration(schema, dtype):
    assert dtype.itemsize == schema.sizeof()
    assert list(dtype.names) == [n for n, _ in S.fixed_fields(schema)]
    fields = S.fixed_fields(schema)
    data = schema.build({n: (i + 1) * (-1) ** i for i, (n, _) in enumerate(fields)})
    row = np.frombuffer(data, dtype=dtype)[0]
    assert [int(row[n]) for n, _ in fields] == [(i + 1) * (-1) ** i for i in range(len(fields))]


def test_checkpoint_head_matches_declaration():
    assert S.Checkpoint.sizeof() == S.CHECKPOINT_FILE_SIZE
    names = [n for n, _ in S.fixed_fields(S.Checkpoint)]
    assert len(names) == len(S.CHECKPOINT_HEAD.unpack(bytes(S.CHECKPOINT_HEAD.size)))
    assert names[:3] == list(S.CHECKPOINT_FIELDS_49)
    data = S.Checkpoint.build(dict(zip(names, range(11, 16))))
    assert S.CHECKPOINT_HEAD.unpack_from(data) == tuple(range(11, 16))


def record_values(flags: int, magic: int, body_len: int, topic_len: int, props_len: int) -> dict:
    """Every field of a record, for building one through the declaration."""
    return {
        "storeSize": 200,
        "magicCode": magic,
        "bodyCRC": 3,
        "queueId": 4,
        "flag": 5,
        "queueOffset": 6,
        "physicalOffset": 7,
        "sysFlag": flags,
        "bornTimestamp": 8,
        "bornHost": {"ip": bytes(range(16 if flags & S.BORNHOST_V6_FLAG else 4)), "port": 9},
        "storeTimestamp": 10,
        "storeHost": {"ip": bytes(range(100, 116 if flags & S.STOREHOSTADDRESS_V6_FLAG else 104)), "port": 11},
        "reconsumeTimes": 12,
        "preparedTransactionOffset": 13,
        "bodyLength": body_len,
        "body": bytes(max(body_len, 0)),
        "topicLength": topic_len,
        "topic": b"T" * max(topic_len, 0),
        "propertiesLength": props_len,
        "properties": b"p" * max(props_len, 0),
    }


@pytest.mark.parametrize("born_v6,store_v6", HOST_COMBINATIONS)
def test_record_heads_match_declaration(born_v6, store_v6):
    """RECORD_HEADS packs exactly what the declaration builds, field for field, up to bodyLength."""
    head, names = S.RECORD_HEADS[(born_v6, store_v6)]
    values = record_values(host_flags(born_v6, store_v6), S.MAGIC_V1, 0, 0, 0)
    flat = [values[n] if "." not in n else values[n.split(".")[0]][n.split(".")[1]] for n in names]
    built = S.CommitLogRecord.build(values)
    assert built[: head.size] == head.pack(*flat)
    assert names[-1] == "bodyLength"
    declared = []
    for sc in S.CommitLogRecord.subcons[: len(names)]:
        declared += [f"{sc.name}.ip", f"{sc.name}.port"] if sc.name in ("bornHost", "storeHost") else [sc.name]
    assert list(names) == declared[: len(names)]


@pytest.mark.parametrize("born_v6,store_v6", HOST_COMBINATIONS)
@pytest.mark.parametrize("v2", [False, True])
@pytest.mark.parametrize("body,topic,props", [(0, 1, 0), (10, 9, 151), (65000, 127, 32767), (-1, 0, -5)])
def test_record_length_matches_declaration(born_v6, store_v6, v2, body, topic, props):
    flags = host_flags(born_v6, store_v6)
    values = record_values(flags, S.MAGIC_V2 if v2 else S.MAGIC_V1, body, topic, props)
    built = S.CommitLogRecord.build(values)
    assert S.record_length(flags, body, topic, props, v2) == len(built)
    parsed = S.CommitLogRecord.parse(built)
    assert (parsed.bodyLength, parsed.topicLength, parsed.propertiesLength) == (body, topic, props)
    assert S.CommitLogRecord.build(parsed) == built


# ---- every byte of every fixture --------------------------------------------------------------------------


def message_fields(m) -> dict:
    return {
        "storeSize": m.storeSize,
        "magicCode": m.magicCode,
        "bodyCRC": m.bodyCRC,
        "queueId": m.queueId,
        "flag": m.flag,
        "queueOffset": m.queueOffset,
        "physicalOffset": m.physicalOffset,
        "sysFlag": m.sysFlag,
        "bornTimestamp": m.bornTimestamp,
        "bornHost": {"ip": m.bornIp, "port": m.bornPort},
        "storeTimestamp": m.storeTimestamp,
        "storeHost": {"ip": m.storeIp, "port": m.storePort},
        "reconsumeTimes": m.reconsumeTimes,
        "preparedTransactionOffset": m.preparedTransactionOffset,
        "bodyLength": m.bodyLength,
        "body": m.body,
        "topicLength": len(m.topicBytes),
        "topic": m.topicBytes,
        "propertiesLength": len(m.propertiesBytes),
        "properties": m.propertiesBytes,
    }


def parsed_fields(p) -> dict:
    out = {}
    for sc in S.CommitLogRecord.subcons:
        v = p[sc.name]
        out[sc.name] = {"ip": v.ip, "port": v.port} if sc.name in ("bornHost", "storeHost") else v
    return out


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_every_record_round_trips(name):
    store = open_store(name)
    scan = store.scan()
    messages = 0
    blanks = []
    for f, rec in scan.entries():
        buf = f.buf
        if isinstance(rec, Blank):
            data = bytes(buf[rec.position : rec.position + S.END_FILE_MIN_BLANK_LENGTH])
            parsed = S.BlankRecord.parse(data)
            assert S.BlankRecord.build(parsed) == data
            assert (parsed.storeSize, parsed.magicCode) == S.BLANK.unpack(data)
            # the BLANK claims the rest of the file, and only its 8 bytes were written
            assert rec.position + parsed.storeSize == store.commitlog.file_size
            assert not any(buf[rec.position + 8 : store.commitlog.file_size])
            blanks.append((f.start + rec.position, parsed.storeSize))
            continue
        data = bytes(buf[rec.position : rec.position + rec.storeSize])
        parsed = S.CommitLogRecord.parse(data)
        where = f"{f.name}@{rec.position}"
        assert S.CommitLogRecord.build(parsed) == data, where
        assert parsed_fields(parsed) == message_fields(rec), where
        assert encode_record(rec) == data, where
        # the BLANK-less record length formula agrees with what the declaration consumed
        assert S.record_length(
            rec.sysFlag, rec.bodyLength, parsed.topicLength, parsed.propertiesLength, rec.magicCode == S.MAGIC_V2
        ) == len(data), where
        messages += 1
    assert [f.start + pos for f, pos, _ in scan.errors] == sorted(torn_offsets(name))
    assert messages == len(truth(name, "truth-messages.jsonl")) - len(torn_offsets(name))
    files = json.loads((FIXTURES / name / "truth-summary.json").read_text())["commitLogFiles"]
    assert blanks == [(f["blankMagicAt"], f["blankTotalSizeField"]) for f in files if "blankMagicAt" in f]


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_every_consumequeue_unit_round_trips(name):
    store = open_store(name)
    units = 0
    for cq in store.consume_queues():
        for f in cq.files.files:
            buf = bytes(f.buf)
            assert len(buf) % S.CQ_UNIT_SIZE == 0
            arr = np.frombuffer(buf, dtype=S.CQ_DTYPE)
            for i in range(len(arr)):
                data = buf[i * S.CQ_UNIT_SIZE : (i + 1) * S.CQ_UNIT_SIZE]
                parsed = S.ConsumeQueueUnit.parse(data)
                assert S.ConsumeQueueUnit.build(parsed) == data
                fields = (parsed.commitLogOffset, parsed.size, parsed.tagsCode)
                assert fields == S.CQ_UNIT.unpack(data) == tuple(int(arr[i][n]) for n in S.CQ_DTYPE.names)
                units += 1
    assert units >= len(truth(name, "truth-consumequeue.jsonl"))


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_every_index_header_slot_and_entry_round_trips(name):
    store = open_store(name)
    files = store.index_files()
    assert files
    for ix in files:
        buf = bytes(ix.mf.buf)
        assert len(buf) == ix.expected_length
        head = buf[: S.INDEX_HEADER_SIZE]
        parsed = S.IndexHeader.parse(head)
        assert S.IndexHeader.build(parsed) == head
        assert tuple(parsed[n] for n, _ in S.fixed_fields(S.IndexHeader)) == S.INDEX_HEADER.unpack(head)
        assert dict(ix.header) == {n: parsed[n] for n, _ in S.fixed_fields(S.IndexHeader)}
        slots = ix.slots()
        for i in range(ix.slot_num):
            data = buf[S.INDEX_HEADER_SIZE + i * 4 : S.INDEX_HEADER_SIZE + (i + 1) * 4]
            slot = S.HashSlot.parse(data)
            assert S.HashSlot.build(slot) == data
            assert slot.indexNumber == S.HASH_SLOT.unpack(data)[0] == int(slots[i])
        entries = ix.entries()
        assert len(entries) == ix.index_num
        base = S.INDEX_HEADER_SIZE + ix.slot_num * S.HASH_SLOT_SIZE
        for n in range(ix.index_num):
            data = buf[base + n * S.INDEX_ENTRY_SIZE : base + (n + 1) * S.INDEX_ENTRY_SIZE]
            entry = S.IndexEntry.parse(data)
            assert S.IndexEntry.build(entry) == data
            values = tuple(entry[k] for k, _ in S.fixed_fields(S.IndexEntry))
            assert values == S.INDEX_ENTRY.unpack(data) == tuple(int(entries[n][k]) for k in S.INDEX_ENTRY_DTYPE.names)
        # entry 0 is never written; nothing past indexCount-1 is either
        assert not any(buf[base : base + S.INDEX_ENTRY_SIZE])
        assert not any(buf[base + ix.index_count * S.INDEX_ENTRY_SIZE :])


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_checkpoint_round_trips(name):
    store = open_store(name)
    data = store.checkpoint_path.read_bytes()
    assert len(data) == S.CHECKPOINT_FILE_SIZE
    parsed = S.Checkpoint.parse(data)
    assert S.Checkpoint.build(parsed) == data
    names = [n for n, _ in S.fixed_fields(S.Checkpoint)]
    assert tuple(parsed[n] for n in names) == S.CHECKPOINT_HEAD.unpack_from(data)
    cp = store.checkpoint()
    assert {n: cp[n] for n in names} == {n: parsed[n] for n in names}
    if json.loads((FIXTURES / name / "truth-summary.json").read_text())["rocketmqVersion"].startswith("4."):
        # 4.9 knows only the first three longs; the rest of the page stays zero
        assert not any(data[8 * len(S.CHECKPOINT_FIELDS_49) :])


# ---- the fast decoder refuses rather than crashes --------------------------------------------------------


def sample_records() -> list[bytes]:
    """One real record per host combination and magic (IPv4, IPv6 born/store, V2)."""
    out = {}
    for name in ("a-basic", "b-mixed", "c-v5-features"):
        for f, m in open_store(name).scan().records():
            key = (m.sysFlag & (S.BORNHOST_V6_FLAG | S.STOREHOSTADDRESS_V6_FLAG), m.magicCode)
            if key not in out or m.storeSize < len(out[key]):
                out[key] = bytes(f.buf[m.position : m.position + m.storeSize])
    assert len(out) >= 5
    return list(out.values())


def test_truncated_records_raise_record_error_not_struct_error():
    """Every cut of a real record, with and without storeSize claiming the cut length, is a RecordError
    (a storeSize shorter than the header used to read sysFlag past the data: struct.error)."""
    for data in sample_records():
        for cut in range(len(data)):
            for variant in (data[:cut], struct.pack(">i", cut)[: min(cut, 4)] + data[4:cut]):
                with pytest.raises(RecordError):
                    read_record(variant, 0, len(variant))


# ---- message ids -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_message_ids_round_trip_and_agree_with_msgid_decoders(name):
    """Every record's offset msgId and UNIQ_KEY through OffsetMsgId / UniqKey, against the record and
    against rmqctl.views.msgid's decoders and RocketMQ's own reading (uniqKeyInfo)."""
    info = {w["commitLogOffset"]: w.get("uniqKeyInfo") for w in truth(name, "truth-messages.jsonl")}
    for f, m in open_store(name).scan().records():
        raw = bytes.fromhex(m.msg_id)
        parsed = S.OffsetMsgId.parse(raw, ipLength=len(m.storeIp))
        assert S.OffsetMsgId.build(parsed, ipLength=len(m.storeIp)) == raw
        assert (parsed.storeHost.ip, parsed.storeHost.port, parsed.physicalOffset) == (
            m.storeIp,
            m.storePort,
            m.physicalOffset,
        )
        decoded = decode_offset_id(m.msg_id)
        assert (ipaddress.ip_address(decoded["host"]).packed, decoded["port"], decoded["offset"]) == (
            parsed.storeHost.ip,
            parsed.storeHost.port,
            parsed.physicalOffset,
        )
        if not m.uniq_key:
            continue
        raw = bytes.fromhex(m.uniq_key)
        ip_len = 16 if len(raw) == 28 else 4
        key = S.UniqKey.parse(raw, ipLength=ip_len)
        assert S.UniqKey.build(key, ipLength=ip_len) == raw
        unique = decode_unique_id(m.uniq_key, now_ms=m.storeTimestamp)
        assert (
            ipaddress.ip_address(unique["ip"]).packed,
            unique["pid"],
            unique["classLoaderHash"],
            unique["counter"],
        ) == (key.ip, key.pid, key.classLoaderHash, key.counter)
        truth_info = info[f.start + m.position]
        assert key.pid == truth_info["pid"]
        assert ipaddress.ip_address(key.ip) == ipaddress.ip_address(truth_info["ip"].split("%")[0])
