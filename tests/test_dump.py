"""`dump commitlog|consumequeue|index|checkpoint` against what RocketMQ itself read back from each fixture
(truth-messages.jsonl, truth-consumequeue.jsonl, truth-summary.json, truth-after-shutdown.json)."""

from __future__ import annotations

import base64
import ipaddress
import json

import pytest

from conftest import ALL_FIXTURES, CLEAN_FIXTURES, FIXTURES, broker_conf, copy_store, jsonl, run, truth
from rmqctl import schema as S
from rmqctl.config import load_config
from rmqctl.record import encode_record
from rmqctl.rules import index_slot
from rmqctl.store import Store

SAME_NAME_FIELDS = [
    "file",
    "storeSize",
    "magicCode",
    "bodyCRC",
    "queueId",
    "flag",
    "queueOffset",
    "sysFlag",
    "bornTimestamp",
    "storeTimestamp",
    "reconsumeTimes",
    "preparedTransactionOffset",
    "bodyLength",
    "topic",
    "properties",
    "propertiesString",
    "msgId",
    "uniqKey",
]


def store_args(name: str) -> list:
    return ["--store", FIXTURES / name / "store", "--broker-config", broker_conf(name), "--format", "jsonl"]


def load_json(name: str, file: str) -> dict:
    return json.loads((FIXTURES / name / file).read_text())


def raw_host(text: str) -> str:
    """'a.b.c.d:port' / '[v6]:port' -> hex of ip bytes + int32 port, the truth's *HostRaw form."""
    host, _, port = text.rpartition(":")
    return (ipaddress.ip_address(host.strip("[]")).packed + int(port).to_bytes(4, "big")).hex()


def corruption(name: str) -> dict:
    path = FIXTURES / name / "corruption.json"
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_dump_commitlog_matches_truth(name):
    res = run("dump", "commitlog", *store_args(name), "--body", "base64", "--raw-properties")
    got = {g["commitLogOffset"]: g for g in jsonl(res.stdout)}
    damage = corruption(name)
    torn = damage.get("tornTail", {}).get("messageCommitLogOffset")
    flipped = damage.get("flippedBodyByte", {}).get("messageCommitLogOffset")
    # a clean store dumps with exit 0; the crashed one prints everything readable, then exits 2 naming the tear
    assert res.exit_code == (2 if torn is not None else 0), res.stderr
    if torn is not None:
        assert damage["tornTail"]["file"].split("/")[-1] in res.stderr
    want = truth(name, "truth-messages.jsonl")
    assert len(got) == len(want) - (torn is not None)
    for w in want:
        off = w["commitLogOffset"]
        if off == torn:
            assert off not in got
            continue
        g = got[off]
        for field in SAME_NAME_FIELDS:
            assert g[field] == w[field], (off, field)
        assert (g["position"], g["physicalOffset"]) == (w["filePosition"], w["physicalOffsetField"]), off
        assert raw_host(g["bornHost"]) == w["bornHostRaw"] and raw_host(g["storeHost"]) == w["storeHostRaw"], off
        assert g["bodyEncoding"] == "base64"
        if off == flipped:  # the flipped byte is on disk; the truth holds the body as it was written
            assert g["body"] != w["body"] and g["bodyCRC"] == w["bodyCRC"]
        else:
            assert g["body"] == w["body"], off


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_dump_consumequeue_matches_truth(name):
    want = truth(name, "truth-consumequeue.jsonl")
    queues = sorted({(w["topic"], w["queueId"]) for w in want})
    store = Store(FIXTURES / name / "store", load_config(broker_conf(name)))
    on_disk = {(cq.topic, cq.queue_id) for cq in store.consume_queues()}
    assert on_disk == set(queues)
    for topic, qid in queues:
        res = run("dump", "consumequeue", topic, qid, *store_args(name))
        assert res.exit_code == 0, res.stderr
        rows = jsonl(res.stdout)
        size = store.consumequeue_file_size
        for r in rows:  # where each unit lives: file = 20-digit byte offset of its first unit
            byte = r["queueOffset"] * S.CQ_UNIT_SIZE
            assert (r["file"], r["position"]) == (f"{byte - byte % size:020d}", byte % size)
        got = [
            (r["queueOffset"], r["commitLogOffset"], r["size"], r["tagsCode"]) for r in rows if not r.get("preBlank")
        ]
        exp = [
            (w["queueOffset"], w["commitLogOffset"], w["size"], w["tagsCode"])
            for w in want
            if (w["topic"], w["queueId"]) == (topic, qid)
        ]
        assert got == exp, (topic, qid)


INDEX_HEADER_FIELDS = [n for n, _ in S.fixed_fields(S.IndexHeader)]


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_dump_index_headers_match_truth_summary(name):
    res = run("dump", "index", "--headers-only", *store_args(name))
    assert res.exit_code == 0, res.stderr
    got = jsonl(res.stdout)
    want = load_json(name, "truth-summary.json")["indexFiles"]
    assert [g["file"] for g in got] == [w["file"] for w in want]
    for g, w in zip(got, want):
        assert {k: g[k] for k in INDEX_HEADER_FIELDS} == {k: w[k] for k in INDEX_HEADER_FIELDS}, w["file"]
        assert g["entries"] == w["indexCount"] - 1  # entry 0 is never used
        assert g["kind"] == "header"


@pytest.mark.parametrize("name", ["a-basic", "c-v5-features"])
def test_dump_index_entries_are_the_file_bytes(name):
    """Each entry row is the 20 bytes at its position, through the declaration; slots point at chain heads."""
    rows = jsonl(run("dump", "index", *store_args(name)).stdout)
    store = Store(FIXTURES / name / "store", load_config(broker_conf(name)))
    files = {ix.name: ix for ix in store.index_files()}
    heads = {}
    for r in rows:
        ix = files[r["file"]]
        if r["kind"] == "header":
            continue
        base = S.INDEX_HEADER_SIZE + ix.slot_num * S.HASH_SLOT_SIZE + r["index"] * S.INDEX_ENTRY_SIZE
        entry = S.IndexEntry.parse(ix.mf.buf[base : base + S.INDEX_ENTRY_SIZE])
        assert {k: r[k] for k in entry if not k.startswith("_")} == {
            k: v for k, v in entry.items() if not k.startswith("_")
        }
        assert r["slot"] == index_slot(r["keyHash"], ix.slot_num)
        assert 0 <= r["prevIndex"] < r["index"]
        heads[(r["file"], r["slot"])] = r["index"]  # the newest entry of a slot is the chain head
    for (file, slot), newest in heads.items():
        assert int(files[file].slots()[slot]) == newest


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_dump_checkpoint_matches_truth(name):
    res = run("dump", "checkpoint", *store_args(name))
    assert res.exit_code == 0, res.stderr
    (got,) = jsonl(res.stdout)
    if name in CLEAN_FIXTURES:
        want = load_json(name, "truth-after-shutdown.json")["checkpoint"]
    else:  # the crashed copy: the checkpoint file as it was copied from the running broker
        want = corruption(name)["checkpointAtCopy"]
    fields = [k for k in want if k not in ("present",)]
    assert {k: got[k] for k in fields} == {k: want[k] for k in fields}
    # 4.9 writes three longs; the 5.x fields read as the zeros the page holds
    for k in ("masterFlushedOffset", "confirmPhyOffset"):
        assert got[k] == want.get(k, 0)


def test_record_shorter_than_its_header_at_file_end_is_reported(tmp_path):
    """A record start fewer than 40 bytes before the end of a file, claiming a tiny storeSize: one line
    naming file and offset, exit 2, everything before it still printed (was a struct.error traceback)."""
    store = copy_store("a-basic", tmp_path)
    conf = broker_conf("a-basic")
    s = Store(store, load_config(conf))
    last = s.commitlog.files[-1]
    records = [m for _, m in s.scan().records(start=last.start)]
    end = records[-1].position + records[-1].storeSize
    file_size = s.commitlog.file_size
    # a valid filler record that ends 30 bytes before the end of the file, then a 16-byte "record"
    filler = records[-1]
    filler.physicalOffset = last.start + end
    grow = (file_size - 30 - end) - filler.storeSize
    filler.body = filler.body + bytes(grow) if grow >= 0 else filler.body[:grow]
    filler.bodyLength = len(filler.body)
    data = encode_record(filler)
    assert end + len(data) == file_size - 30
    s.close()
    with open(last.path, "r+b") as fh:
        fh.seek(end)
        fh.write(data + S.BLANK.pack(16, S.MAGIC_V1))
    res = run("dump", "commitlog", "--store", store, "--broker-config", conf, "--format", "jsonl", "--body", "none")
    assert res.exit_code == 2
    assert "Traceback" not in res.stderr
    assert f"{last.path} at commitlog offset {last.start + file_size - 30}" in res.stderr
    assert len(jsonl(res.stdout)) == len(truth("a-basic", "truth-messages.jsonl")) + 1


def _dump(name, *args):
    res = run(
        "dump",
        "commitlog",
        "--store",
        FIXTURES / name / "store",
        "--broker-config",
        broker_conf(name),
        "--format",
        "jsonl",
        *args,
    )
    assert res.exit_code == 0, res.stderr
    return jsonl(res.stdout)


def test_decompress_equals_rocketmq_decoded_bodies():
    """lz4, zstd, zlib with a type, and the legacy flag alone: the body the client sees."""
    want = {m["commitLogOffset"]: m for m in truth("b-mixed", "truth-messages.jsonl") if m.get("bodyDecompressed")}
    got = {
        r["commitLogOffset"]: r for r in _dump("b-mixed", "--body", "base64", "--decompress") if "bodyDecompressed" in r
    }
    assert set(got) == set(want) and len(want) >= 4
    for off, m in want.items():
        assert got[off]["bodyDecompressed"] == m["bodyDecompressed"]
        assert got[off]["body"] == m["body"]  # the stored bytes stay the stored bytes


def test_raw_properties_is_the_stored_text():
    want = {m["commitLogOffset"]: m["propertiesString"] for m in truth("c-v5-features", "truth-messages.jsonl")}
    got = {
        r["commitLogOffset"]: r["propertiesString"]
        for r in _dump("c-v5-features", "--body", "none", "--raw-properties")
    }
    assert got == want


def test_filters_select_like_the_truth():
    msgs = truth("a-basic", "truth-messages.jsonl")
    lo, hi = msgs[100]["commitLogOffset"], msgs[300]["commitLogOffset"]
    rows = _dump("a-basic", "--body", "none", "--from", lo, "--to", hi, "--topic", "OrderTopic", "--queue-id", 2)
    want = [
        m["commitLogOffset"]
        for m in msgs
        if lo <= m["commitLogOffset"] < hi and m["topic"] == "OrderTopic" and m["queueId"] == 2
    ]
    assert [r["commitLogOffset"] for r in rows] == want and want
    assert len(_dump("a-basic", "--body", "none", "--limit", 7)) == 7


def test_body_renderings_and_utf8_fallback():
    msgs = truth("a-basic", "truth-messages.jsonl")[:40]
    rows = _dump("a-basic", "--limit", 40)
    for m, r in zip(msgs, rows):
        raw = base64.b64decode(m["body"])
        try:
            assert (r["bodyEncoding"], r["body"]) == ("utf8", raw.decode("utf-8"))
        except UnicodeDecodeError:
            assert (r["bodyEncoding"], r["body"]) == ("base64", m["body"])
    assert {r["bodyEncoding"] for r in rows} == {"utf8", "base64"}
    hexed = _dump("a-basic", "--limit", 3, "--body", "hex")
    assert [bytes.fromhex(r["body"]) for r in hexed] == [base64.b64decode(m["body"]) for m in msgs[:3]]


def test_dump_filters_match_the_truth_file():
    """--since/--until (ISO with a zone, local ISO, epoch ms), --tag, --key, --property, --msgid, --sys-flag
    and hex --from: each keeps exactly the truth file's messages with that field, in offset order."""
    import datetime as dt

    name = "b-mixed"
    msgs = sorted(truth(name, "truth-messages.jsonl"), key=lambda m: m["commitLogOffset"])
    stamps = sorted({m["storeTimestamp"] for m in msgs})
    lo, hi = stamps[len(stamps) // 3], stamps[2 * len(stamps) // 3]

    def offsets(*opts):
        r = run(
            "dump",
            "commitlog",
            "--store",
            FIXTURES / name / "store",
            "--broker-config",
            broker_conf(name),
            "--format",
            "jsonl",
            "--body",
            "none",
            *opts,
        )
        assert r.exit_code == 0, r.stderr
        return [m["commitLogOffset"] for m in jsonl(r.stdout)]

    def want(pred):
        return [m["commitLogOffset"] for m in msgs if pred(m)]

    in_range = want(lambda m: lo <= m["storeTimestamp"] <= hi)
    assert 0 < len(in_range) < len(msgs)
    utc = dt.datetime.fromtimestamp(lo / 1000, dt.timezone.utc).isoformat(timespec="milliseconds")
    local = dt.datetime.fromtimestamp(hi / 1000).isoformat(timespec="milliseconds")  # no zone: local time
    assert offsets("--since", lo, "--until", hi) == offsets("--since", utc, "--until", local) == in_range
    assert offsets("--tag", "TX") == want(lambda m: m["properties"].get("TAGS") == "TX") != []
    assert offsets("--key", "FILLALL") == want(lambda m: "FILLALL" in m["properties"].get("KEYS", "").split(" ")) != []
    assert (
        offsets("--property", "TAGS=TagF", "--property", "WAIT=true")
        == want(lambda m: m["properties"].get("TAGS") == "TagF" and m["properties"].get("WAIT") == "true")
        != []
    )
    one = msgs[7]
    assert offsets("--msgid", one["msgId"]) == [one["commitLogOffset"]]
    assert offsets("--msgid", one["uniqKey"].lower()) == want(lambda m: m["uniqKey"] == one["uniqKey"])
    assert offsets("--sys-flag", "transaction=prepared") == want(
        lambda m: m["sysFlagInfo"]["transaction"] == "PREPARED"
    )
    assert len(offsets("--sys-flag", "transaction=prepared")) == 2
    assert offsets("--from", hex(one["commitLogOffset"]), "--limit", "1") == [one["commitLogOffset"]]
    bad = run("dump", "commitlog", "--store", FIXTURES / name / "store", "--since", "yesterday")
    assert bad.exit_code == 2 and "is not a time: epoch milliseconds, an ISO date-time" in bad.stderr
    bad = run("dump", "commitlog", "--store", FIXTURES / name / "store", "--sys-flag", "transaction=maybe")
    assert bad.exit_code == 2 and "transaction=not|prepared|commit|rollback" in bad.stderr


def test_query_key_takes_the_same_time_forms():
    name = "a-basic"
    m = next(m for m in truth(name, "truth-messages.jsonl") if m["properties"].get("KEYS"))
    key, ts = m["properties"]["KEYS"].split(" ")[0], m["storeTimestamp"]
    iso = dt_iso(ts)
    for begin, end in ((ts, ts), (iso, iso)):
        r = run(
            "query",
            "key",
            m["topic"],
            key,
            "--store",
            FIXTURES / name / "store",
            "--broker-config",
            broker_conf(name),
            "--format",
            "jsonl",
            "--begin",
            begin,
            "--end",
            end,
        )
        assert r.exit_code == 0 and m["commitLogOffset"] in [x["commitLogOffset"] for x in jsonl(r.stdout)]
    r = run(
        "query",
        "key",
        m["topic"],
        key,
        "--store",
        FIXTURES / name / "store",
        "--broker-config",
        broker_conf(name),
        "--format",
        "jsonl",
        "--since",
        dt_iso(ts + 1),
    )
    assert m["commitLogOffset"] not in [x["commitLogOffset"] for x in jsonl(r.stdout)]


def dt_iso(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds")
