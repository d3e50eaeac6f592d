"""MetaQ (Metamorphosis 1.4.6.2) segment stores: `rmqctl metaq ...` on copies of the g-metaq fixture, which the
broker's own MessageStore wrote, against its truth files and against the broker's rules read from the source."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from conftest import FIXTURES, jsonl, patch, run, truth

from rmqctl import schema_metaq as M
from rmqctl.metaq.config import load_server_config, parse_delete_policy
from rmqctl.metaq.store import MetaqStore, SegmentScan, crc31
from rmqctl.errors import UsageError

FIXTURE = FIXTURES / "g-metaq"
SERVER_INI = FIXTURE / "server.ini"
TRUTH = truth("g-metaq", "truth-messages.jsonl")
SUMMARY = json.loads((FIXTURE / "truth-summary.json").read_text())


def metaq(*args, input=None):
    return run("metaq", *args, input=input)


@pytest.fixture
def data_path(tmp_path) -> Path:
    """A writable copy of the fixture's data path."""
    target = tmp_path / "store"
    shutil.copytree(FIXTURE / "store", target)
    for p in [target, *target.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return target


def last_segment(store: Path, part: str) -> Path:
    return sorted((store / part).glob("*.meta"))[-1]


def verify_rows(store: Path) -> tuple[int, list[dict]]:
    r = metaq("verify", "--store", store, "--server-config", SERVER_INI, "--format", "jsonl")
    return r.exit_code, jsonl(r.stdout)


# ---- reading --------------------------------------------------------------------------------------------------


def test_dump_equals_the_truth_field_for_field():
    r = metaq(
        "dump", "--store", FIXTURE / "store", "--server-config", SERVER_INI, "--format", "jsonl", "--body", "base64"
    )
    assert r.exit_code == 0, r.stderr
    got = {(d["topic"], d["partition"], d["offset"]): d for d in jsonl(r.stdout)}
    assert len(got) == len(TRUTH) == SUMMARY["messageCount"]
    for w in TRUTH:
        d = got[(w["topic"], w["partition"], w["offset"])]
        for k in (
            "segment",
            "segmentPosition",
            "msgLen",
            "checksum",
            "id",
            "idHex",
            "flag",
            "attribute",
            "payloadLength",
            "payload",
        ):
            assert d[k] == w[k], (k, w["offset"])
        assert d["payloadEncoding"] == "base64"


def test_dump_filters_and_text_payloads():
    r = metaq(
        "dump",
        "--store",
        FIXTURE / "store",
        "--topic",
        "trade-events",
        "--partition",
        "1",
        "--from",
        "1000",
        "--limit",
        "3",
        "--format",
        "jsonl",
    )
    rows = jsonl(r.stdout)
    want = [w for w in TRUTH if w["topic"] == "trade-events" and w["partition"] == 1 and w["offset"] >= 1000][:3]
    assert [d["offset"] for d in rows] == [w["offset"] for w in want]
    for d, w in zip(rows, want):
        raw = base64.b64decode(w["payload"])
        assert (d["payload"].encode() if d["payloadEncoding"] == "utf8" else base64.b64decode(d["payload"])) == raw


def test_empty_attribute_and_empty_payload_are_told_apart():
    store = MetaqStore(FIXTURE / "store")
    empty_attr = [w for w in TRUTH if w["attribute"] == ""]
    empty_payload = [w for w in TRUTH if w["payloadLength"] == 0]
    assert empty_attr and empty_payload
    rows = {
        (d["topic"], d["partition"], d["offset"]): d
        for d in jsonl(metaq("dump", "--store", store.root, "--format", "jsonl").stdout)
    }
    for w in empty_attr + empty_payload:
        d = rows[(w["topic"], w["partition"], w["offset"])]
        assert (d["flag"], d["attribute"], d["payloadLength"]) == (w["flag"], w["attribute"], w["payloadLength"])


def test_info_matches_the_truth_summary():
    r = metaq("info", "--store", FIXTURE / "store", "--server-config", SERVER_INI, "--format", "json")
    info = json.loads(r.stdout)[0]
    assert info["maxSegmentSize"] == SUMMARY["maxSegmentSize"]
    by_dir = {p["dir"]: p for p in info["partitions"]}
    segs = {s["segment"]: s for s in info["segments"]}
    for want in SUMMARY["partitions"]:
        got = by_dir[want["dir"]]
        assert (got["minOffset"], got["maxOffset"], got["messageCount"], got["odd"]) == (
            want["minOffset"],
            want["maxOffset"],
            want["messageCount"],
            [],
        )
        for s in want["segments"]:
            assert (segs[s["file"]]["startOffset"], segs[s["file"]]["size"], segs[s["file"]]["messageCount"]) == (
                s["startOffset"],
                s["size"],
                s["messageCount"],
            )


def test_locate():
    w = TRUTH[5]
    args = ["--topic", w["topic"], "--partition", w["partition"], "--store", FIXTURE / "store", "--format", "jsonl"]
    at = jsonl(metaq("locate", w["offset"], *args).stdout)[0]
    assert (at["segment"], at["segmentPosition"], at["recordStart"], at["id"]) == (
        w["segment"],
        w["segmentPosition"],
        True,
        w["id"],
    )
    inside = jsonl(metaq("locate", w["offset"] + 3, *args).stdout)[0]
    assert not inside["recordStart"] and inside["recordOffset"] == w["offset"]
    end = next(p for p in SUMMARY["partitions"] if p["topic"] == w["topic"] and p["partition"] == w["partition"])
    past = jsonl(metaq("locate", end["maxOffset"], *args).stdout)[0]
    assert past["segment"] is None and "next append" in past["detail"]


def test_locate_in_an_emptied_first_segment(data_path):
    """The fuzz run's crash (store 958 of seed 20241124): the first segment cut to 0 bytes, `locate 0` finds it
    and no record in it: one row saying so, and --hex one line and exit 2, never an internal error."""
    store = data_path
    first = sorted((store / "meta-test-0").iterdir())[0]
    os.truncate(first, 0)
    args = ["--topic", "meta-test", "--partition", 0, "--store", store, "--format", "jsonl"]
    res = metaq("locate", 0, *args)
    assert res.exit_code == 0 and "past the end of the segment" in jsonl(res.stdout)[0]["detail"], res.stderr
    res = metaq("locate", 0, *args, "--hex")
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1 and first.name in lines[0] and "internal error" not in lines[0]


def test_verify_is_clean_on_the_fixture():
    assert verify_rows(FIXTURE / "store") == (0, [])
    assert metaq("verify", "--quiet", "--store", FIXTURE / "store", "--server-config", SERVER_INI).exit_code == 0


# ---- verify: every damage kind, on copies ----------------------------------------------------------------------


def truth_of(part: str) -> list[dict]:
    topic, number = part.rsplit("-", 1)
    return [w for w in TRUTH if w["topic"] == topic and w["partition"] == int(number)]


def last_record(part: str) -> dict:
    return truth_of(part)[-1]


def first_record_of(segment: str) -> dict:
    return next(w for w in TRUTH if w["segment"] == segment)


def flip(path: Path, pos: int):
    """Invert one stored byte (the checksum can no longer match)."""
    patch(path, pos, bytes([path.read_bytes()[pos] ^ 0xFF]))


def kinds(rows: list[dict]) -> list[str]:
    return [r["kind"] for r in rows]


def test_verify_flipped_payload_byte_in_the_last_segment(data_path):
    w = truth_of("meta-test-1")[-3]
    seg = data_path / w["segment"]
    flip(seg, w["segmentPosition"] + M.HEADER_LEN + w["msgLen"] - 1)
    code, rows = verify_rows(data_path)
    assert code == 1 and kinds(rows) == ["checksum-mismatch"]
    assert rows[0]["commitLogOffset"] == w["offset"] and rows[0]["file"] == w["segment"]
    assert "truncates" in rows[0]["detail"] and "2 intact record(s) after it" in rows[0]["detail"]


def test_verify_flipped_byte_in_an_earlier_segment_is_never_seen_by_the_broker(data_path):
    w = first_record_of("trade-events-0/00000000000000033150.meta")
    flip(data_path / w["segment"], w["segmentPosition"] + M.HEADER_LEN)
    code, rows = verify_rows(data_path)
    assert code == 1 and kinds(rows) == ["checksum-mismatch"]
    assert rows[0]["commitLogOffset"] == w["offset"] and "recovers only the last segment" in rows[0]["detail"]


def test_verify_torn_tail(data_path):
    seg = last_segment(data_path, "trade-events-1")
    w = last_record("trade-events-1")
    os.truncate(seg, seg.stat().st_size - 5)
    code, rows = verify_rows(data_path)
    assert code == 1 and kinds(rows) == ["torn-tail"] and rows[0]["commitLogOffset"] == w["offset"]
    os.truncate(seg, w["segmentPosition"] + 7)  # a header cut short
    assert kinds(verify_rows(data_path)[1]) == ["torn-tail"]


def test_verify_gap_between_segments(data_path):
    (data_path / "meta-test-0" / "00000000000000033264.meta").unlink()
    code, rows = verify_rows(data_path)
    assert code == 1 and kinds(rows) == ["gap"]
    assert (
        rows[0]["file"] == "meta-test-0/00000000000000066043.meta" and "does not load meta-test-0" in rows[0]["detail"]
    )


def test_verify_overlapping_segment(data_path):
    part = data_path / "meta-test-1"
    (part / "00000000000000033185.meta").rename(part / "00000000000000033000.meta")
    code, rows = verify_rows(data_path)
    assert code == 1 and sorted(kinds(rows)) == ["gap", "overlap"]


def test_verify_negative_length(data_path):
    w = truth_of("trade-events-0")[-4]
    patch(data_path / w["segment"], w["segmentPosition"], (-7).to_bytes(4, "big", signed=True))
    code, rows = verify_rows(data_path)
    assert code == 1 and kinds(rows) == ["negative-length"] and rows[0]["commitLogOffset"] == w["offset"]


def test_verify_zero_filled_tail_and_undecodable_attribute(data_path):
    seg = last_segment(data_path, "meta-test-0")
    with open(seg, "ab") as f:
        f.write(bytes(45))  # two all-zero "records" the broker keeps, then 5 bytes it cuts
    w = next(w for w in truth_of("meta-test-1") if w["flag"] == 1 and w["attribute"])
    path = data_path / w["segment"]
    data = bytearray(
        path.read_bytes()[w["segmentPosition"] + M.HEADER_LEN : w["segmentPosition"] + M.HEADER_LEN + w["msgLen"]]
    )
    data[0:4] = (w["msgLen"]).to_bytes(4, "big")  # attrLen larger than the data, checksum recomputed
    patch(
        path,
        w["segmentPosition"] + 4,
        crc31(bytes(data)).to_bytes(4, "big")
        + path.read_bytes()[w["segmentPosition"] + 8 : w["segmentPosition"] + M.HEADER_LEN]
        + bytes(data),
    )
    code, rows = verify_rows(data_path)
    assert code == 1 and sorted(kinds(rows)) == ["torn-tail", "undecodable", "zero-records"]
    zero = next(r for r in rows if r["kind"] == "zero-records")
    assert zero["detail"].startswith("2 all-zero")


def test_verify_names_the_loader_refuses(data_path):
    (data_path / "meta-test-x").mkdir()
    (data_path / "meta-test-0" / "junk.meta").write_bytes(b"")
    code, rows = verify_rows(data_path)
    assert code == 1 and sorted(kinds(rows)) == ["bad-partition-dir", "bad-segment-name"]


# ---- repair ------------------------------------------------------------------------------------------------------


def broker_recovery_length(part: str, cut_at: int) -> int:
    """From the truth, independently of rmqctl: the broker keeps the last segment's records up to the first
    one that is not whole and valid before `cut_at` (a segment position), and truncates there."""
    seg = truth_of(part)[-1]["segment"]
    kept = 0
    for w in (w for w in TRUTH if w["segment"] == seg):
        if w["segmentPosition"] + w["recordSize"] > cut_at or w["segmentPosition"] >= cut_at:
            break
        kept = w["segmentPosition"] + w["recordSize"]
    return kept


def test_repair_a_torn_copy_keeps_what_the_broker_keeps(data_path):
    seg = last_segment(data_path, "trade-events-0")
    original = seg.read_bytes()
    torn = len(original) - 100
    os.truncate(seg, torn)
    before = {p: p.read_bytes() for p in data_path.rglob("*.meta") if p != seg}
    r = metaq("repair", "--store", data_path, "--dry-run", "--format", "jsonl")
    assert r.exit_code == 0 and seg.stat().st_size == torn
    r = metaq("repair", "--store", data_path, "--server-config", SERVER_INI, "--format", "jsonl")
    assert r.exit_code == 0, r.stderr
    want = broker_recovery_length("trade-events-0", torn)
    assert seg.read_bytes() == original[:want]
    assert {p: p.read_bytes() for p in data_path.rglob("*.meta") if p != seg and ".rmqctl" not in p.parts} == before
    row = next(x for x in jsonl(r.stdout) if x["action"] == "truncate")
    assert (row["sizeBefore"], row["sizeAfter"]) == (torn, want)
    backup = next((data_path / "trade-events-0" / ".rmqctl").glob(".rmqctl-backup-*/" + seg.name))
    assert backup.read_bytes() == original[:torn]
    assert verify_rows(data_path) == (0, [])


def test_repair_cuts_at_a_bad_checksum_and_keeps_earlier_damage(data_path):
    w = truth_of("meta-test-0")[-5]
    flip(data_path / w["segment"], w["segmentPosition"] + M.HEADER_LEN)
    early = first_record_of("meta-test-0/00000000000000033264.meta")
    flip(data_path / early["segment"], early["segmentPosition"] + M.HEADER_LEN)
    r = metaq(
        "repair", "--store", data_path, "--topic", "meta-test", "--partition", "0", "--no-backup", "--format", "jsonl"
    )
    rows = {x["action"]: x for x in jsonl(r.stdout)}
    assert r.exit_code == 0 and set(rows) == {"truncate", "not-cut"}
    assert (data_path / w["segment"]).stat().st_size == w["segmentPosition"]
    assert not list((data_path / "meta-test-0" / ".rmqctl").glob(".rmqctl-backup-*"))
    assert kinds(verify_rows(data_path)[1]) == ["checksum-mismatch"]  # the earlier one, as the broker keeps it


def test_repair_refuses_a_partition_the_broker_does_not_load(data_path):
    (data_path / "meta-test-0" / "00000000000000033264.meta").unlink()
    r = metaq("repair", "--store", data_path, "--format", "jsonl")
    assert (
        r.exit_code == 2
        and next(x for x in jsonl(r.stdout) if x["partition"] == 0 and x["topic"] == "meta-test")["action"] == "refused"
    )


@pytest.fixture
def segment_holder():
    """Another process holding a segment open, as a running broker does (RandomAccessFile "rw")."""
    procs = []

    def hold(path: Path):
        p = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"f = open({str(path)!r}, 'r+b'); print('open', flush=True); import time; time.sleep(120)",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert p.stdout.readline().strip() == "open"
        procs.append(p)
        return p

    yield hold
    for p in procs:
        p.kill()
        p.wait()


def test_writers_refuse_while_a_broker_holds_the_segments(data_path, segment_holder):
    seg = last_segment(data_path, "meta-test-0")
    os.truncate(seg, seg.stat().st_size - 3)
    holder = segment_holder(seg)
    for args in (
        ("repair",),
        ("clean", "--apply", "--delete-policy", "delete,1s"),
        ("append", "--topic", "meta-test", "--partition", "0", "--payload", "x"),
    ):
        r = (
            metaq(*args, "--store", data_path, "--topic", "meta-test", "--partition", "0")
            if args[0] != "append"
            else metaq(*args, "--store", data_path)
        )
        assert r.exit_code == 2 and f"process {holder.pid}" in r.stderr, (args, r.stderr)
    assert len(list((data_path / "meta-test-0").glob("*.meta"))) == 4


# ---- append --------------------------------------------------------------------------------------------------------


def test_dump_then_append_into_an_empty_directory_gives_identical_segments(tmp_path):
    dumped = metaq("dump", "--store", FIXTURE / "store", "--body", "base64", "--format", "jsonl").stdout
    out = tmp_path / "copy"
    r = metaq(
        "append", "--jsonl", "-", "--store", out, "--server-config", SERVER_INI, "--format", "jsonl", input=dumped
    )
    assert r.exit_code == 0, r.stderr
    acks = jsonl(r.stdout)
    assert [(a["offset"], a["id"]) for a in acks] == [(w["offset"], w["id"]) for w in TRUTH]
    want = sorted(p.relative_to(FIXTURE / "store") for p in (FIXTURE / "store").rglob("*.meta"))
    got = sorted(p.relative_to(out) for p in out.rglob("*.meta") if ".rmqctl" not in p.parts)
    assert got == want
    for rel in want:
        assert (out / rel).read_bytes() == (FIXTURE / "store" / rel).read_bytes(), rel


def test_append_single_messages_and_a_batch_as_the_broker_writes_them(data_path):
    from rmqctl.metaq.append import Appender, NewMessage

    end = next(p for p in SUMMARY["partitions"] if p["dir"] == "meta-test-1")["maxOffset"]
    r = metaq(
        "append",
        "--store",
        data_path,
        "--server-config",
        SERVER_INI,
        "--topic",
        "meta-test",
        "--partition",
        "1",
        "--payload",
        "héllo",
        "--attribute",
        "",
        "--format",
        "jsonl",
    )
    ack = jsonl(r.stdout)[0]
    assert r.exit_code == 0 and ack["offset"] == end and ack["msgLen"] == 4 + 0 + len("héllo".encode())
    with Appender(data_path, load_server_config(SERVER_INI)) as app:
        acks = app.append(
            [NewMessage("meta-test", 1, b"a" * 10, id=7), NewMessage("meta-test", 1, b"b", b"k=v", id=-8)]
        )
    first = end + M.HEADER_LEN + 4 + len("héllo".encode())
    assert [a.offset for a in acks] == [first, first + M.HEADER_LEN + 10] and {a.batchOffset for a in acks} == {first}
    rows = jsonl(
        metaq(
            "dump", "--store", data_path, "--topic", "meta-test", "--partition", "1", "--from", end, "--format", "jsonl"
        ).stdout
    )
    assert [(d["id"], d["flag"], d["attribute"], d["payload"]) for d in rows[1:]] == [
        (7, 0, None, "a" * 10),
        (-8, 1, "k=v", "b"),
    ]
    assert (rows[0]["flag"], rows[0]["attribute"], rows[0]["payload"]) == (1, "", "héllo")
    assert rows[0]["id"] != 0 and verify_rows(data_path) == (0, [])


def test_append_rolls_after_the_write_that_reaches_max_segment_size(tmp_path):
    from rmqctl.metaq.append import Appender, NewMessage

    cfg = load_server_config(SERVER_INI)
    cfg.maxSegmentSize = 100
    with Appender(tmp_path, cfg) as app:
        app.append([NewMessage("t", 0, b"x" * 70)])  # 90 bytes: no roll
        app.append([NewMessage("t", 0, b"y" * 10), NewMessage("t", 0, b"z" * 10)])  # 150: roll after both
        app.append([NewMessage("t", 0, b"w")])
    names = sorted(p.name for p in (tmp_path / "t-0").glob("*.meta"))
    assert names == ["00000000000000000000.meta", "00000000000000000150.meta"]
    assert (tmp_path / "t-0" / names[1]).stat().st_size == 21
    # dump | append must group the batch again: rolling after its first record would split the segment
    ini = tmp_path / "small.ini"
    ini.write_text("[system]\nmaxSegmentSize=100\n")
    dumped = metaq("dump", "--store", tmp_path, "--body", "hex", "--format", "jsonl").stdout
    r = metaq("append", "--jsonl", "-", "--store", tmp_path / "copy", "--server-config", ini, input=dumped)
    assert r.exit_code == 0, r.stderr
    for name in names:
        assert (tmp_path / "copy" / "t-0" / name).read_bytes() == (tmp_path / "t-0" / name).read_bytes()


def test_append_refuses_a_torn_tail(data_path):
    seg = last_segment(data_path, "trade-events-1")
    os.truncate(seg, seg.stat().st_size - 1)
    r = metaq("append", "--store", data_path, "--topic", "trade-events", "--partition", "1", "--payload", "x")
    assert r.exit_code == 2 and "metaq repair" in r.stderr and "Traceback" not in r.stderr


# ---- clean ---------------------------------------------------------------------------------------------------------


def age(path: Path, hours: float):
    t = time.time() - hours * 3600
    os.utime(path, (t, t))


def test_clean_delete_policy_by_real_mtimes(data_path):
    segs = sorted((data_path / "meta-test-0").glob("*.meta"))
    for p, h in zip(segs, (200, 170, 100, 300)):  # the last is old too, and is never deleted
        age(p, h)
    plan = metaq(
        "clean",
        "--store",
        data_path,
        "--server-config",
        SERVER_INI,
        "--topic",
        "meta-test",
        "--partition",
        "0",
        "--format",
        "jsonl",
    )
    assert [r["action"] for r in jsonl(plan.stdout)] == ["delete", "delete", "keep", "keep"]
    assert len(list((data_path / "meta-test-0").glob("*.meta"))) == 4
    assert metaq("clean", "--check", "--store", data_path, "--server-config", SERVER_INI).exit_code == 1
    r = metaq("clean", "--apply", "--store", data_path, "--server-config", SERVER_INI, "--format", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert sorted(p.name for p in (data_path / "meta-test-0").glob("*.meta")) == [segs[2].name, segs[3].name]
    assert not list((data_path / "meta-test-0" / ".rmqctl").glob(".rmqctl-*"))  # no backup, no staging left
    assert verify_rows(data_path) == (0, [])
    assert metaq("clean", "--check", "--store", data_path, "--server-config", SERVER_INI).exit_code == 0


def test_clean_leaves_what_the_broker_loads(data_path):
    """After `clean --apply` deleted every old segment but the last of each partition, each partition is what
    MessageStore.loadSegments reads as the truth says the broker wrote it: the kept segment byte for byte, named
    by its start offset, and its records (from that start, the new minOffset) exactly the truth's."""
    for p in data_path.rglob("*.meta"):
        age(p, 200)  # deletePolicy delete,168
    r = metaq("clean", "--apply", "--store", data_path, "--server-config", SERVER_INI, "--format", "jsonl")
    assert r.exit_code == 0, r.stderr
    for part in SUMMARY["partitions"]:
        last = part["segments"][-1]
        kept = sorted(p.relative_to(data_path).as_posix() for p in (data_path / part["dir"]).glob("*.meta"))
        assert kept == [last["file"]] and int(Path(last["file"]).stem) == last["startOffset"]
        assert (data_path / last["file"]).read_bytes() == (FIXTURE / "store" / last["file"]).read_bytes()
        rows = jsonl(
            metaq(
                "dump",
                "--store",
                data_path,
                "--topic",
                part["topic"],
                "--partition",
                part["partition"],
                "--body",
                "base64",
                "--format",
                "jsonl",
            ).stdout
        )
        want = [w for w in truth_of(part["dir"]) if w["segment"] == last["file"]]
        assert len(want) == last["messageCount"] and want[0]["offset"] == last["startOffset"]
        assert [(d["offset"], d["id"], d["payload"]) for d in rows] == [
            (w["offset"], w["id"], w["payload"]) for w in want
        ]
    assert verify_rows(data_path) == (0, [])


def test_clean_archive_renames_or_zips(data_path):
    part = data_path / "trade-events-1"
    segs = sorted(part.glob("*.meta"))
    content = segs[0].read_bytes()
    for p in segs:
        age(p, 30)
    age(segs[1], 1)
    r = metaq(
        "clean",
        "--apply",
        "--delete-policy",
        "archive,24h",
        "--store",
        data_path,
        "--topic",
        "trade-events",
        "--partition",
        "1",
        "--format",
        "jsonl",
    )
    rows = jsonl(r.stdout)
    assert [x["action"] for x in rows] == ["archive", "keep", "archive", "keep"]
    assert "leaves a hole" in rows[2]["reason"]
    assert (part / (segs[0].name + ".arc")).read_bytes() == content and not segs[0].exists()
    assert kinds(verify_rows(data_path)[1]) == ["gap"]  # what the broker's next start refuses
    other = data_path / "meta-test-1"
    first = sorted(other.glob("*.meta"))[0]
    content = first.read_bytes()
    age(first, 2)
    r = metaq(
        "clean",
        "--apply",
        "--delete-policy",
        "archive,60m,true",
        "--store",
        data_path,
        "--topic",
        "meta-test",
        "--partition",
        "1",
    )
    assert r.exit_code == 0 and not first.exists()
    with zipfile.ZipFile(other / (first.name + ".zip")) as z:
        assert z.namelist() == [first.name] and z.read(first.name) == content


def test_clean_uses_the_topic_section_policy(tmp_path, data_path):
    ini = tmp_path / "server.ini"
    ini.write_text(
        SERVER_INI.read_text().replace("[topic=trade-events]", "[topic=trade-events]\ndeletePolicy=delete,1s")
    )
    for p in data_path.rglob("*.meta"):
        age(p, 1)
    rows = jsonl(metaq("clean", "--store", data_path, "--server-config", ini, "--format", "jsonl").stdout)
    assert {r["action"] for r in rows if r["topic"] == "meta-test"} == {"keep"}
    assert [r["action"] for r in rows if r["segment"].startswith("trade-events-0")] == ["delete"] * 3 + ["keep"]


# ---- configuration ---------------------------------------------------------------------------------------------


def test_delete_policy_parsed_as_the_broker_parses_it():
    assert parse_delete_policy("delete,168").max_reserved_ms == 168 * 3600_000
    assert parse_delete_policy("delete,30m").max_reserved_ms == 1800_000
    assert parse_delete_policy("delete,5s,").max_reserved_ms == 5000
    a = parse_delete_policy("archive,2h,TRUE")
    assert (a.action, a.max_reserved_ms) == ("zip", 7200_000)
    assert parse_delete_policy("archive,2,no").action == "archive"
    for bad in ("delete", "purge,1", "delete, 1", "delete,1d", "delete,99999999999"):
        with pytest.raises(UsageError):
            parse_delete_policy(bad)


def test_server_ini_as_metaconfig_reads_it(tmp_path):
    cfg = load_server_config(SERVER_INI)
    assert (cfg.maxSegmentSize, cfg.deletePolicy, cfg.deleteWhen, cfg.brokerId) == (
        32768,
        "delete,168",
        "0 0 6,18 * * ?",
        0,
    )
    ini = tmp_path / "s.ini"
    ini.write_text(
        "[system]\nmaxSegmentSize = 64*1024\n# c\ndeleteWhen=0 0 3 * * ?\n[topic=x]\ndeletePolicy=archive,1\n"
    )
    cfg = load_server_config(ini)
    assert (
        cfg.maxSegmentSize == 65536
        and cfg.topic("x").deletePolicy == "archive,1"
        and cfg.topic("x").deleteWhen == "0 0 3 * * ?"
    )
    ini.write_text("[system]\ndeletePolicy=remove,1\n")
    r = metaq("verify", "--store", FIXTURE / "store", "--server-config", ini)
    assert r.exit_code == 2 and "unknown policy" in r.stderr


def test_every_metaq_command_takes_the_shared_options():
    from rmqctl.cli.metaq_cmds import metaq as group

    for name, cmd in group.commands.items():
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
        assert {"--store", "--server-config", "--broker-config", "--format"} <= opts, name


def test_segment_scan_is_the_recovery_walk():
    seg = FIXTURE / "store" / "meta-test-0" / "00000000000000000000.meta"
    scan = SegmentScan(seg.read_bytes(), seg.stat().st_size).run()
    segment = next(s for p in SUMMARY["partitions"] for s in p["segments"] if s["file"] == "meta-test-0/" + seg.name)
    assert scan.stop is None and scan.valid_up_to == segment["size"] and scan.count == segment["messageCount"]


def partition_state(store: Path, part: str) -> dict:
    """What the broker would load of a partition: its .meta files and their bytes."""
    return {p.name: p.read_bytes() for p in sorted((store / part).glob("*.meta"))}


def torn_copy(tmp_path: Path, name: str) -> Path:
    """A data path holding only meta-test-1, its last segment torn."""
    target = tmp_path / name
    shutil.copytree(FIXTURE / "store" / "meta-test-1", target / "meta-test-1")
    for p in [target, *target.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    seg = last_segment(target, "meta-test-1")
    os.truncate(seg, seg.stat().st_size - 4)
    return target


def repair_partition(root: Path):
    from rmqctl.metaq.repair import repair

    repair(MetaqStore(root), "meta-test", 1)


def test_repair_killed_at_every_step_leaves_old_or_new(tmp_path):
    """SIGKILL before the filesystem mutations of a repair, then the next writer's recovery: the partition is
    always wholly the torn one or wholly the repaired one."""
    from rmqctl.metaq.lock import partition_lock
    from test_rebuild import commit_point, run_killed_at

    old = partition_state(torn_copy(tmp_path, "old"), "meta-test-1")
    done = torn_copy(tmp_path, "new")
    commit = commit_point(lambda: repair_partition(done))
    new = partition_state(done, "meta-test-1")
    assert old != new
    seen = set()
    for n in range(1, commit + 12):
        if n < commit - 2 and n % 3:
            continue  # before the commit point every third step; from just before it on, every step
        root = torn_copy(tmp_path, f"kill{n}")
        killed = run_killed_at(n, lambda: repair_partition(root))
        with partition_lock(root / "meta-test-1"):
            pass
        got = partition_state(root, "meta-test-1")
        assert got in (old, new), n
        seen.add("new" if got == new else "old")
        shutil.rmtree(root)
        if not killed:
            break
    assert seen == {"old", "new"}


def test_an_interrupted_repair_is_reported_then_rolled_forward(tmp_path):
    """Killed just after its commit point (the intent file), a repair leaves the swap pending: verify names
    it, and the next writing command finishes it before doing its own work."""
    from test_rebuild import commit_point, run_killed_at

    commit = commit_point(lambda: repair_partition(torn_copy(tmp_path, "probe")))
    data_path = torn_copy(tmp_path, "store")
    seg = last_segment(data_path, "meta-test-1")
    torn = seg.stat().st_size
    assert run_killed_at(commit + 1, lambda: repair_partition(data_path))
    assert (data_path / "meta-test-1" / ".rmqctl" / ".rmqctl-intent").exists()
    code, rows = verify_rows(data_path)
    assert "pending-intent" in kinds(rows)
    r = metaq("append", "--store", data_path, "--topic", "meta-test", "--partition", "1", "--payload", "after")
    assert r.exit_code == 0, r.stderr
    want = broker_recovery_length("meta-test-1", torn)
    rows = jsonl(
        metaq("dump", "--store", data_path, "--topic", "meta-test", "--partition", "1", "--format", "jsonl").stdout
    )
    assert rows[-1]["payload"] == "after" and rows[-1]["segmentPosition"] == want
    assert verify_rows(data_path) == (0, [])


def test_delete_when_is_quartz_cron():
    import datetime as dt

    from rmqctl.metaq.cron import next_fire

    at = dt.datetime(2026, 11, 24, 23, 30)  # a Tuesday
    assert next_fire("0 0 6,18 * * ?", at) == dt.datetime(2026, 11, 25, 6, 0)
    assert next_fire("0 */15 * * * ?", at) == dt.datetime(2026, 11, 24, 23, 45)
    assert next_fire("30 0 3 ? * SAT", at) == dt.datetime(2026, 11, 28, 3, 0, 30)
    assert next_fire("0 0 12 1 JUL ? 2027", at) == dt.datetime(2027, 7, 1, 12, 0)
    assert next_fire("0 0 0 L * ?", at) is None  # valid Quartz, not evaluated
    for bad in ("0 0 6 * *", "0 0 25 * * ?", "0 0 6 * * MON", "0 0 6 ? * ?"):
        with pytest.raises(UsageError):
            next_fire(bad, at)


def test_delete_when_ranges_wrap_as_quartz_reads_them():
    """CronExpression.addToSet: a range ending before it starts wraps past the field's end (22-2 in hours,
    FRI-MON), stepped too; only a year range cannot wrap. rmqctl refused such a deleteWhen, and with it every
    metaq command given the config."""
    import datetime as dt

    from rmqctl.metaq.cron import next_fire

    at = dt.datetime(2026, 11, 24, 23, 30)  # a Tuesday
    assert next_fire("0 0 22-2 * * ?", at) == dt.datetime(2026, 11, 25, 0, 0)
    assert next_fire("0 0 12 ? * FRI-MON", at) == dt.datetime(2026, 11, 27, 12, 0)
    assert next_fire("0 50-10/10 23 * * ?", at) == dt.datetime(2026, 11, 24, 23, 50)
    assert next_fire("0 0 0 30-2 * ?", at) == dt.datetime(2026, 11, 30, 0, 0)
    assert next_fire("0 0 0 1 NOV-JAN ?", at) == dt.datetime(2026, 12, 1, 0, 0)
    with pytest.raises(UsageError):
        next_fire("0 0 0 ? * * 2030-2020", at)


def test_clean_at_the_next_delete_job(tmp_path, data_path):
    """`--at next` judges ages at the next 04:00, whatever the time of day: segments 2 h older than that moment
    go, segments half an hour older stay (deletePolicy 1 h), in every partition's older segments."""
    import datetime as dt

    from rmqctl.metaq.cron import next_fire

    ini = tmp_path / "server.ini"
    ini.write_text("[system]\ndeletePolicy=delete,1h\ndeleteWhen=0 0 4 * * ?\n")
    fire = next_fire("0 0 4 * * ?", dt.datetime.now())
    parts = sorted(p.name for p in data_path.iterdir())
    old_parts = parts[::2]
    for part in parts:
        hours = 2 if part in old_parts else 0.5
        for seg in (data_path / part).glob("*.meta"):
            t = (fire - dt.timedelta(hours=hours)).timestamp()
            os.utime(seg, (t, t))
    rows = jsonl(
        metaq("clean", "--store", data_path, "--server-config", ini, "--at", "next", "--format", "jsonl").stdout
    )
    evaluated = dt.datetime.fromisoformat(rows[0]["evaluatedAt"]).astimezone().replace(tzinfo=None)
    assert evaluated == fire and (fire.hour, fire.minute) == (4, 0)
    last = {(r["topic"], r["partition"]): r["segment"] for r in rows}  # rows come in segment order
    actions = {f"{r['topic']}-{r['partition']}": set() for r in rows}
    for r in rows:
        if r["segment"] != last[(r["topic"], r["partition"])]:
            actions[f"{r['topic']}-{r['partition']}"].add(r["action"])
    assert actions == {part: {"delete"} if part in old_parts else {"keep"} for part in parts}
    ini.write_text("[system]\ndeleteWhen=0 0 4 * *\n")
    r = metaq("clean", "--store", data_path, "--server-config", ini)
    assert r.exit_code == 2 and "6 or 7 fields" in r.stderr


# ---- bad input: one line, exit 2 -------------------------------------------------------------------------------


def test_dump_reports_damage_with_file_and_offset_and_dumps_the_rest(data_path):
    seg = last_segment(data_path, "meta-test-0")
    w = last_record("meta-test-0")
    os.truncate(seg, seg.stat().st_size - 2)
    r = metaq("dump", "--store", data_path, "--format", "jsonl", "--body", "none")
    assert r.exit_code == 2 and len(jsonl(r.stdout)) == len(TRUTH) - 1
    assert f"{seg} at offset {w['offset']}: torn-tail" in r.stderr and "Traceback" not in r.stderr


def test_bad_input_is_one_line_and_exit_2(tmp_path, data_path):
    cases = [
        (("info", "--store", tmp_path / "missing"), "no such data path"),
        (("append", "--store", data_path, "--jsonl", "-"), "--jsonl line 1"),
        (
            ("append", "--store", data_path, "--topic", "../x", "--partition", "0", "--payload", "p"),
            "cannot be a partition",
        ),
        (("clean", "--store", data_path, "--at", "yesterday"), "--at 'yesterday' is not a time"),
        (("clean", "--store", data_path, "--delete-policy", "delete,1x"), "not an int"),
        (("locate", "5", "--topic", "nope", "--partition", "0", "--store", data_path), "no partition directory nope-0"),
    ]
    for args, said in cases:
        r = metaq(*args, input='{"topic": "t"}\n')
        assert r.exit_code == 2, (args, r.stdout)
        assert said in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
    r = metaq(
        "append",
        "--store",
        data_path,
        "--jsonl",
        "-",
        input='{"topic": "meta-test", "partition": 0, "payload": "x", "flag": 1}\n',
    )
    assert r.exit_code == 2 and "attribute bit" in r.stderr


def test_a_sound_data_path_says_so_on_stderr_even_piped():
    r = metaq("verify", "--store", FIXTURE / "store", "--server-config", SERVER_INI)
    assert (r.exit_code, r.stdout) == (0, "")
    assert r.stderr == "metaq verify: 4 partition(s), 1000 records, 486704 bytes: sound\n"


def test_a_directory_that_is_not_a_data_path_is_refused(tmp_path):
    """No {topic}-{partition}/ directory (an empty directory, /tmp's "name-suffix" directories), or a RocketMQ
    store root: one line and exit 2, not a sound empty data path or a finding per directory; `rmqctl info` on a
    MetaQ data path points to `rmqctl metaq`."""
    (tmp_path / "systemd-private-abc").mkdir()
    r = metaq("verify", "--store", tmp_path)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        f"rmqctl: {tmp_path}: not a MetaQ data path: no {{topic}}-{{partition}}/ directory (the broker "
        "makes one for each partition it serves)\n"
    )
    rocketmq = FIXTURES / "a-basic" / "store"
    r = metaq("info", "--store", rocketmq)
    assert (r.exit_code, r.stdout) == (2, "")
    assert (
        r.stderr
        == f"rmqctl: {rocketmq}: a RocketMQ store root, not a MetaQ data path: rmqctl info --store {rocketmq} reads it\n"
    )
    r = run("info", "--store", FIXTURE / "store")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        f"rmqctl: {FIXTURE / 'store'}: not a RocketMQ store root: no commitlog/ directory (a broker "
        "creates commitlog/, consumequeue/ and lock at its first start); it is a MetaQ data path: "
        f"rmqctl metaq info --store {FIXTURE / 'store'}\n"
    )
    r = metaq(
        "verify", "--store", FIXTURE / "store", "--server-config", SERVER_INI, "--topic", "nope", "--format", "jsonl"
    )
    assert r.exit_code == 1 and kinds(jsonl(r.stdout)) == ["no-partitions"]


def test_writers_need_an_explicit_data_path(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    shutil.copytree(FIXTURE / "store", tmp_path / "meta")
    assert metaq("verify", "--quiet").exit_code == 0  # MetaConfig's default dataPath, ~/meta
    for args in (("repair",), ("clean", "--apply"), ("append", "--topic", "t", "--partition", "0", "--payload", "x")):
        r = metaq(*args)
        assert r.exit_code == 2 and "name the data path" in r.stderr, args


def test_verify_lists_the_cut_first_and_counts_what_it_drops(data_path):
    part = truth_of("trade-events-1")
    seg = data_path / part[-1]["segment"]
    bad = [w for w in part if w["segment"] == part[-1]["segment"]][-6:-1:2]  # three records, one intact between
    for w in bad:
        flip(seg, w["segmentPosition"] + M.HEADER_LEN)
    code, rows = verify_rows(data_path)
    assert kinds(rows) == ["checksum-mismatch"] * 3
    assert [r["commitLogOffset"] for r in rows] == [w["offset"] for w in bad]
    assert "truncates" in rows[0]["detail"] and "3 intact record(s)" in rows[0]["detail"]
    assert all("never reads it" in r["detail"] for r in rows[1:])


def test_locate_hex_annotates_the_record_over_its_stored_bytes():
    w = next(w for w in TRUTH if w["attribute"] and w["payloadLength"])
    args = ["--topic", w["topic"], "--partition", w["partition"], "--store", FIXTURE / "store", "--hex"]
    r = metaq("locate", hex(w["offset"]), *args)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"offset {w['offset']}: position {w['segmentPosition']} in {w['segment']}"
    stored = (FIXTURE / "store" / w["segment"]).read_bytes()[w["segmentPosition"] :]
    checked = 0
    for line in lines[1:]:
        if line[:6].strip().isdigit() and line[8:56].strip():
            at, shown = int(line[:6]), bytes.fromhex(line[8:56])
            assert stored[at : at + len(shown)] == shown, line
            checked += len(shown)
    assert checked > M.HEADER_LEN
    assert any("attribute.text" in line for line in lines)
    r = metaq("locate", w["offset"] + 1, *args)
    assert r.exit_code == 2 and f"inside the record at offset {w['offset']}" in r.stderr


# ---- against what Metamorphosis itself wrote and read ----------------------------------------------------------
# The truth files hold what the broker's own MessageStore, MessageUtils and FileMessageSet produced for the fixture;
# tests/java/metaq/ holds the broker's loader itself (MessageStoreManager and what it needs, from the tags
# metamorphosis-all-1.4.6.2 and gecko-1.1.4), which reads what every rmqctl writer leaves.

# the Debian jars the vendored Metamorphosis sources compile and run against (.ci/run installs their packages)
METAQ_JARS = {
    "commons-logging": "libcommons-logging-java",
    "commons-lang": "libcommons-lang-java",
    "commons-io": "libcommons-io-java",
    "ini4j": "libini4j-java",
    "quartz2": "libquartz2-java",
    "slf4j-api": "libslf4j-java",
    "jackson-core-asl": "libjackson-json-java",
}


@pytest.fixture(scope="session")
def metaq_loader(tmp_path_factory):
    """A function running tests/java/metaq/MetaqLoad (Metamorphosis 1.4.6.2's MessageStoreManager.init and a
    consumer's fetches) on data paths: {data path: (partitions, messages)}, each data path read as the broker
    reads it at start, recovery included (it truncates a torn last segment: pass copies)."""
    jars = [Path("/usr/share/java") / f"{name}.jar" for name in METAQ_JARS]
    missing = [METAQ_JARS[j.stem] for j in jars if not j.is_file()]
    if missing or not shutil.which("javac"):
        pytest.skip(f"the MetaQ loader needs javac and the Debian packages {' '.join(missing)}")
    sources = Path(__file__).parent / "java" / "metaq"
    classes = tmp_path_factory.mktemp("metaq-loader")
    classpath = ":".join(map(str, [classes, *jars]))
    # the Metamorphosis sources are GBK (their Chinese comments)
    subprocess.run(
        ["javac", "-nowarn", "-encoding", "GBK", "-d", classes, "-cp", classpath, *sorted(sources.rglob("*.java"))],
        check=True,
        capture_output=True,
    )

    def load(*paths: Path) -> dict[Path, tuple[list, list]]:
        # user.home: MetaConfig's default data path (~/meta), which the broker creates, kept out of $HOME
        proc = subprocess.run(
            ["java", f"-Duser.home={classes}", "-cp", classpath, "MetaqLoad", SERVER_INI, *paths],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        seen: dict[Path, tuple[list, list]] = {}
        for line in jsonl(proc.stdout):
            if "dataPath" in line:
                partitions, messages = seen.setdefault(Path(line["dataPath"]), ([], []))
            elif "message" in line:
                attribute = None if line["attribute"] is None else base64.b64decode(line["attribute"]).decode()
                messages.append(
                    (
                        line["topic"],
                        line["partition"],
                        line["message"],
                        line["id"],
                        line["flag"],
                        attribute,
                        line["payload"],
                    )
                )
            else:
                partitions.append((line["topic"], line["partition"], line["minOffset"], line["maxOffset"]))
        assert list(seen) == list(paths)
        return seen

    return load


def rmqctl_reading(store: Path) -> tuple[list, list]:
    """What rmqctl reads in a data path, in MetaqLoad's terms: each partition's offset range (metaq info) and
    every message (metaq dump)."""
    r = metaq("info", "--store", store, "--server-config", SERVER_INI, "--format", "json")
    assert r.exit_code in (0, 1), r.stderr
    partitions = sorted(
        (p["topic"], p["partition"], p["minOffset"], p["maxOffset"]) for p in json.loads(r.stdout)[0]["partitions"]
    )
    r = metaq("dump", "--store", store, "--server-config", SERVER_INI, "--body", "base64", "--format", "jsonl")
    assert r.exit_code in (0, 1), r.stderr
    messages = [
        (d["topic"], d["partition"], d["offset"], d["id"], d["flag"], d["attribute"], d["payload"])
        for d in jsonl(r.stdout)
    ]
    return partitions, messages


def segment_bytes(store: Path) -> dict[Path, bytes]:
    return {p.relative_to(store): p.read_bytes() for p in store.rglob("*.meta") if ".rmqctl" not in p.parts}


def appended_copy(tmp_path: Path) -> Path:
    """The fixture (which `metaq dump | metaq append` into an empty data path reproduces byte for byte:
    test_dump_then_append_into_an_empty_directory_gives_identical_segments), then single messages (an empty and a
    UTF-8 attribute, an empty payload) and enough 1000-byte messages to roll meta-test-1 and a new partition's
    segments."""
    out = tmp_path / "appended"
    shutil.copytree(FIXTURE / "store", out)
    for p in [out, *out.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    for extra in (("--payload", "héllo", "--attribute", ""), ("--payload", "", "--attribute", "ключ=v")):
        r = metaq(
            "append", "--store", out, "--server-config", SERVER_INI, "--topic", "meta-test", "--partition", "1", *extra
        )
        assert r.exit_code == 0, r.stderr
    lines = [
        json.dumps(
            {
                "topic": topic,
                "partition": part,
                "payload": base64.b64encode(bytes([i % 256]) * 1000).decode(),
                "payloadEncoding": "base64",
            }
        )
        for i in range(80)
        for topic, part in (("meta-test", 1), ("trade-events", 2))
    ]
    r = metaq("append", "--jsonl", "-", "--store", out, "--server-config", SERVER_INI, input="\n".join(lines) + "\n")
    assert r.exit_code == 0, r.stderr
    assert len(list((out / "trade-events-2").glob("*.meta"))) == 3
    return out


def cleaned_copy(tmp_path: Path) -> Path:
    """`metaq clean --apply` after every segment aged past deletePolicy delete,168."""
    out = tmp_path / "cleaned"
    shutil.copytree(FIXTURE / "store", out)
    for p in out.rglob("*.meta"):
        age(p, 200)
    r = metaq("clean", "--apply", "--store", out, "--server-config", SERVER_INI)
    assert r.exit_code == 0, r.stderr
    return out


def test_metaqs_own_loader_reads_every_writers_output_as_rmqctl_does(data_path, metaq_loader):
    """Metamorphosis's MessageStoreManager loads the fixture and what `metaq append`, `metaq clean` and `metaq
    repair` wrote, and reads record for record what rmqctl reads (offset ranges, offsets, ids, flags, attributes,
    payloads), its recovery cutting nothing; on each damaged copy it cuts exactly what `metaq repair` cut."""
    written = [data_path, appended_copy(data_path.parent), cleaned_copy(data_path.parent)]
    damaged = damaged_last_segments(data_path)
    for how, root, _, _ in damaged:
        shutil.copytree(root, root.with_name(root.name + "-broker"))
        r = metaq("repair", "--store", root, "--no-backup")
        assert r.exit_code == 0, (how, r.stderr)
    written += [root for _, root, _, _ in damaged]
    before = {store: segment_bytes(store) for store in written}
    brokers = [root.with_name(root.name + "-broker") for _, root, _, _ in damaged]
    loaded = metaq_loader(*written, *brokers)
    for store in written:
        partitions, messages = rmqctl_reading(store)
        assert loaded[store] == (partitions, messages), store.name
        assert segment_bytes(store) == before[store], store.name  # the broker's recovery found nothing to cut
    assert len(loaded[data_path][1]) == len(TRUTH)
    appended = loaded[written[1]][1]
    assert set(loaded[data_path][1]) < set(appended) and len(appended) == len(TRUTH) + 2 + 160
    assert loaded[written[2]][0] == sorted(
        (p["topic"], p["partition"], p["segments"][-1]["startOffset"], p["maxOffset"]) for p in SUMMARY["partitions"]
    )
    for (how, root, _, _), broker in zip(damaged, brokers):
        assert loaded[broker] == loaded[root], how
        assert segment_bytes(broker) == segment_bytes(root), how


def damaged_last_segments(store: Path) -> list[tuple[str, Path, str, int]]:
    """One damage of each kind in the last segment of each partition (a copy per case), with the length
    FileMessageSet.recover (metamorphosis-all-1.4.6.2) leaves: it walks validateMessage from position 0 and
    truncates at the first position where fewer than 20 header bytes are left, header + msgLen runs past the
    file's end, msgLen is negative or CRC32(data) & 0x7FFFFFFF differs from the checksum; records (positions
    and sizes) come from the truth file."""
    cases = []
    for i, (part, how) in enumerate(
        [
            ("meta-test-0", "torn"),
            ("meta-test-1", "header"),
            ("trade-events-0", "flip"),
            ("trade-events-1", "negative"),
            ("meta-test-0", "zeros"),
            ("meta-test-1", "huge"),
        ]
    ):
        root = store.parent / f"case{i}"
        shutil.copytree(store, root)
        seg = last_segment(root, part)
        size = seg.stat().st_size
        w = truth_of(part)[-3]
        if how == "torn":
            os.truncate(seg, size - 17)
            kept = broker_recovery_length(part, size - 17)
        elif how == "header":  # 11 of w's 20 header bytes left
            os.truncate(seg, w["segmentPosition"] + 11)
            kept = w["segmentPosition"]
        elif how == "flip":  # w's checksum no longer matches
            flip(seg, w["segmentPosition"] + M.HEADER_LEN + 1)
            kept = w["segmentPosition"]
        elif how == "negative":
            patch(seg, w["segmentPosition"], (-1).to_bytes(4, "big", signed=True))
            kept = w["segmentPosition"]
        elif how == "zeros":  # two all-zero records are valid (msgLen 0, CRC32 of nothing 0); 17 bytes are no header
            with open(seg, "ab") as f:
                f.write(bytes(57))
            kept = size + 2 * M.HEADER_LEN
        else:  # msgLen 2^30 runs past the end
            patch(seg, w["segmentPosition"], (1 << 30).to_bytes(4, "big"))
            kept = w["segmentPosition"]
        cases.append((how, root, part, kept))
    return cases


def test_repair_keeps_what_the_brokers_recovery_keeps(data_path):
    """Each damage in a last segment: rmqctl metaq repair leaves exactly the prefix FileMessageSet.recover keeps
    and every other segment as the broker wrote it."""
    for how, root, part, kept in damaged_last_segments(data_path):
        damaged = {seg: seg.read_bytes() for seg in root.rglob("*.meta")}
        r = metaq("repair", "--store", root, "--no-backup", "--format", "jsonl")
        assert r.exit_code == 0, (how, r.stderr)
        last = last_segment(root, part)
        for seg, before in damaged.items():
            want = before[:kept] if seg == last else (FIXTURE / "store" / seg.relative_to(root)).read_bytes()
            assert seg.read_bytes() == want, (how, seg.name)
        if how != "zeros":  # the broker keeps the two empty records; verify reports them
            assert verify_rows(root) == (0, []), how


def test_appended_records_are_the_brokers_bytes(tmp_path):
    """Every message of the fixture, from the truth file's fields (what MessageUtils.decodeMessage read back:
    id, flag, attribute, payload) and in the broker's append calls, written by rmqctl's Appender into an empty
    data path: every segment is byte for byte the one Metamorphosis's MessageStore wrote (negative ids, empty and
    UTF-8 attributes, empty payloads and three-message batches included)."""
    from rmqctl.metaq.append import Appender, NewMessage

    calls: dict[tuple, list] = {}
    for w in TRUTH:
        attribute = None if not w["hasAttribute"] else w["attribute"].encode()
        message = NewMessage(w["topic"], w["partition"], base64.b64decode(w["payload"]), attribute, id=w["id"])
        calls.setdefault((w["topic"], w["partition"], w["appendCall"]), []).append(message)
    assert sorted({len(c) for c in calls.values()}) == [1, 3]
    out = tmp_path / "data"
    with Appender(out, load_server_config(SERVER_INI)) as app:
        for batch in calls.values():
            app.append(batch)
    want = sorted(p.relative_to(FIXTURE / "store") for p in (FIXTURE / "store").rglob("*.meta"))
    assert sorted(p.relative_to(out) for p in out.rglob("*.meta") if ".rmqctl" not in p.parts) == want
    for rel in want:
        assert (out / rel).read_bytes() == (FIXTURE / "store" / rel).read_bytes(), rel


def test_append_warns_where_the_broker_would_refuse_the_put(data_path):
    r = metaq(
        "append",
        "--store",
        data_path,
        "--server-config",
        SERVER_INI,
        "--topic",
        "meta-test",
        "--partition",
        "2",
        "--payload",
        "x",
    )
    assert r.exit_code == 0 and "numPartitions 2" in r.stderr
    r = metaq(
        "append",
        "--store",
        data_path,
        "--server-config",
        SERVER_INI,
        "--topic",
        "other",
        "--partition",
        "0",
        "--payload",
        "x",
    )
    assert r.exit_code == 0 and "matches no [topic=...] section" in r.stderr
    r = metaq(
        "append",
        "--store",
        data_path,
        "--server-config",
        SERVER_INI,
        "--topic",
        "meta-test",
        "--partition",
        "1",
        "--payload",
        "x",
    )
    assert r.exit_code == 0 and "warning" not in r.stderr


def test_append_refuses_what_no_broker_could_store(data_path):
    for row, said in (
        ('{"topic": "meta-test", "partition": 0, "payload": "x", "id": 9223372036854775808}', "Java long"),
        ('{"topic": "meta-test", "partition": 0, "payload": "x", "flag": 4294967296}', "Java int"),
    ):
        r = metaq("append", "--store", data_path, "--jsonl", "-", input=row + "\n")
        assert r.exit_code == 2 and said in r.stderr, r.stderr
    (data_path / "meta-test-1" / "x.meta").write_bytes(b"")
    r = metaq("append", "--store", data_path, "--topic", "meta-test", "--partition", "1", "--payload", "x")
    assert r.exit_code == 2 and "NumberFormatException" in r.stderr
