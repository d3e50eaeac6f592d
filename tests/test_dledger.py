"""DLedger-mode stores (e-dledger, written by RocketMQ 4.9.7's DLedgerCommitLog over DLedger 0.3.1.2): the
records and entries against the truth files, verify clean and precise on damaged copies, rebuild byte for
byte, repair equal to DLedgerMmapFileStore.recover, and append / clean refused."""

from __future__ import annotations

import itertools
import random
import json
import shutil

import pytest

from conftest import FIXTURES, broker_conf, copy_store, jsonl, patch, run, truth
from rmqctl import dledger as D
from rmqctl import schema as S
from rmqctl.config import load_config
from rmqctl.store import Store

NAME = "e-dledger"
CONF = broker_conf(NAME)
STORE = FIXTURES / NAME / "store"
ENTRIES = truth(NAME, "truth-dledger-entries.jsonl")
FIELDS = ("topic", "queueId", "queueOffset", "storeSize", "bodyCRC", "storeTimestamp", "msgId", "dledger", "file")


@pytest.fixture
def copy(tmp_path):
    """Factory: a fresh writable copy of the store at each call."""
    made = itertools.count()
    return lambda: copy_store(NAME, tmp_path / str(next(made)))


def dump(store) -> list[dict]:
    r = run("dump", "commitlog", "--store", store, "--broker-config", CONF, "--format", "jsonl", "--body", "base64")
    assert r.exit_code == 0, r.stderr
    return jsonl(r.stdout)


def verify(store, *extra) -> tuple[int, list[dict]]:
    r = run("verify", "--store", store, "--broker-config", CONF, "--format", "jsonl", *extra)
    return r.exit_code, jsonl(r.stdout)


def test_dump_equals_truth_with_the_entry_fields():
    want = truth(NAME, "truth-messages.jsonl")
    got = dump(STORE)
    assert [g["commitLogOffset"] for g in got] == [w["commitLogOffset"] for w in want]
    for g, w in zip(got, want):
        assert {k: g[k] for k in FIELDS} == {k: w[k] for k in FIELDS}
        assert g["position"] == w["filePosition"] and g["physicalOffset"] == w["physicalOffsetField"]
        assert g["body"] == w["body"] and g["properties"] == w["properties"]
        assert g["commitLogOffset"] == w["dledger"]["entryPos"] + S.DLEDGER_BODY_OFFSET


def test_entries_and_index_units_equal_dledger_reading():
    """The entry walk and the index units against DLedgerMmapFileStore.get(i) and its unit."""
    store = Store(STORE, load_config(CONF))
    got = []
    for f in store.commitlog.files:
        found = D.walk_entries(f.buf, store.commitlog.file_size)
        assert found.stop is None
        for k in range(len(found)):
            got.append(
                {
                    "file": f.name,
                    "filePosition": int(found.position[k]),
                    **{n: int(getattr(found, n)[k]) for n in D.HEADER_FIELDS},
                }
            )
    assert got == [{k: e[k] for k in got[0]} for e in ENTRIES]
    iq = store.dledger_index
    for e in ENTRIES:
        unit_file = iq.find(e["index"] * S.DLEDGER_INDEX_UNIT_SIZE)
        unit = D.index_units(unit_file.buf, iq.file_size // S.DLEDGER_INDEX_UNIT_SIZE)[
            e["indexUnit"]["filePosition"] // 32
        ]
        assert unit_file.name == e["indexUnit"]["file"]
        assert {n: int(unit[n]) for n in D.INDEX_FIELDS} == {n: e["indexUnit"][n] for n in D.INDEX_FIELDS}


def test_detected_from_the_layout_without_broker_conf():
    plain = Store(STORE)
    assert plain.dledger is not None and plain.dledger.home.name == "dledger-n0"
    assert sum(1 for _ in plain.scan().records()) == len(ENTRIES)


@pytest.mark.parametrize("entry_slice", [None, 3000])
def test_info_locate_and_lookups(entry_slice, monkeypatch):
    if entry_slice is not None:
        monkeypatch.setattr(D, "ENTRY_SLICE", entry_slice)
    summary = json.loads((FIXTURES / NAME / "truth-summary.json").read_text())["dledger"]
    r = run("info", "--store", STORE, "--broker-config", CONF, "--format", "json")
    info = json.loads(r.stdout)
    assert info["commitlog"]["maxOffset"] == summary["dataMaxWrotePosition"]
    d = info["dledger"]
    assert (d["beginIndex"], d["endIndex"], d["committedIndex"], d["committedPos"]) == (
        summary["ledgerBeginIndex"],
        summary["ledgerEndIndex"],
        summary["committedIndex"],
        summary["committedPos"],
    )
    e = ENTRIES[7]
    loc = json.loads(
        run("locate", e["pos"] + 10, "--store", STORE, "--broker-config", CONF, "--format", "json").stdout
    )[0]
    assert loc["insideEntryHeaderOf"] == e["messageOffset"] and loc["dledgerEntry"]["index"] == 7
    msg = truth(NAME, "truth-messages.jsonl")[7]
    got = jsonl(
        run(
            "msgid",
            "lookup",
            msg["msgId"],
            "--store",
            STORE,
            "--broker-config",
            CONF,
            "--body",
            "none",
            "--format",
            "jsonl",
        ).stdout
    )
    assert [g["commitLogOffset"] for g in got] == [msg["commitLogOffset"]]
    key = msg["properties"]["KEYS"].split(" ")[0]
    hits = jsonl(
        run("query", "key", msg["topic"], key, "--store", STORE, "--broker-config", CONF, "--format", "jsonl").stdout
    )
    assert msg["commitLogOffset"] in {h["commitLogOffset"] for h in hits}


def test_verify_is_clean():
    code, findings = verify(STORE, "--deep")
    assert (code, findings) == (0, [])


@pytest.mark.parametrize("entry_slice", [None, 3000])
def test_rebuild_consumequeue_and_index_byte_identical(copy, entry_slice, monkeypatch):
    """Byte for byte what the broker wrote, also when the entries are walked a few at a time."""
    if entry_slice is not None:
        monkeypatch.setattr(D, "ENTRY_SLICE", entry_slice)
    store = copy()
    shutil.rmtree(store / "consumequeue")
    shutil.rmtree(store / "index")
    for kind in ("consumequeue", "index"):
        r = run("rebuild", kind, "--store", store, "--broker-config", CONF, "--no-backup")
        assert r.exit_code == 0, r.stderr
    for p in sorted((STORE / "consumequeue").rglob("*")):
        if p.is_file():
            assert (store / p.relative_to(STORE)).read_bytes() == p.read_bytes(), p
    want = sorted((STORE / "index").iterdir())
    got = sorted((store / "index").iterdir())  # named by their creation time: compared in order
    assert [p.read_bytes() for p in got] == [p.read_bytes() for p in want]
    assert (store / "checkpoint").read_bytes() == (STORE / "checkpoint").read_bytes()
    assert verify(store) == (0, [])


def _data(store, e) -> str:
    return store / "dledger-n0" / "data" / e["file"]


LAST_OF_FILE_1 = [e for e in ENTRIES if e["file"] == ENTRIES[100]["file"]][-1]


def flip_body_byte(store):
    e = ENTRIES[100]
    path, at = _data(store, e), e["filePosition"] + S.DLEDGER_BODY_OFFSET + 200
    patch(path, at, bytes([path.read_bytes()[at] ^ 0xFF]))
    return "body-crc", e["messageOffset"], f"dledger-n0/data/{e['file']}", e["filePosition"] + S.DLEDGER_BODY_OFFSET


def wrong_pos(store):
    e = ENTRIES[100]
    patch(_data(store, e), e["filePosition"] + S.DLEDGER_POS_AT, S.INT64.pack(e["pos"] + 1))
    return "dledger-entry-pos", e["pos"], f"dledger-n0/data/{e['file']}", e["filePosition"]


def unit_disagrees(store):
    e = ENTRIES[100]
    u = e["indexUnit"]
    patch(store / "dledger-n0" / "index" / u["file"], u["filePosition"] + 12, S.INT32.pack(e["size"] + 1))
    return "dledger-index-unit", e["pos"], f"dledger-n0/index/{u['file']}", u["filePosition"]


def size_past_file(store):
    e = LAST_OF_FILE_1
    patch(_data(store, e), e["filePosition"] + 4, S.INT32.pack(70_000))
    return "bad-length", e["pos"], f"dledger-n0/data/{e['file']}", e["filePosition"]


def torn_last_entry(store):
    """The last entry's header cut after its index (term, pos, ... and the body never reached the disk)."""
    e = ENTRIES[-1]
    patch(_data(store, e), e["filePosition"] + 16, bytes(e["size"] - 16))
    return "dledger-entry-pos", e["pos"], f"dledger-n0/data/{e['file']}", e["filePosition"]


@pytest.mark.parametrize("damage", [flip_body_byte, wrong_pos, unit_disagrees, size_past_file, torn_last_entry])
def test_damage_found_at_its_offset(copy, damage):
    store = copy()
    kind, offset, file, position = damage(store)
    code, findings = verify(store)
    assert code == 1
    first = min((f for f in findings if f["severity"] == "error"), key=lambda f: f["commitLogOffset"] or 1 << 62)
    assert (first["kind"], first["commitLogOffset"], first["file"], first["position"]) == (kind, offset, file, position)


def test_verify_predicts_dledger_recovery_cut(copy):
    """A wrong pos in the last data file: DLedger's recovery (from the third file from the last) stops there and
    truncates the entries after it; the same damage in an earlier file is never re-checked."""
    store = copy()
    e = ENTRIES[-10]
    patch(_data(store, e), e["filePosition"] + S.DLEDGER_POS_AT, S.INT64.pack(e["pos"] + 1))
    _, findings = verify(store)
    first = next(f for f in findings if f["commitLogOffset"] == e["pos"])
    assert (
        f"stops at the entry at {e['pos']}" in first["detail"] and "dropping the 10 record(s) from" in first["detail"]
    )
    store = copy()
    wrong_pos(store)
    _, findings = verify(store)
    assert "DLedger's recovery starts at 00000000000000262144 and does not re-check" in findings[0]["detail"]


@pytest.mark.parametrize("field,value", [("magic", 7), ("size", 20)])
def test_a_damaged_entry_header_is_one_finding_since_the_reput_read_on(copy, field, value):
    """An entry header with a wrong magic or size in the last data file: RocketMQ's reput read only the record
    in its body and stepped by the record's size + 48 (DLedgerCommitLog.checkMessageAndReturnSize), so it
    dispatched that record and every one after it: their units and index entries are the reput's, not
    damage. The header is (one finding at its place), and DLedger's recovery will truncate there at the next
    start, dropping that record and every later one, all counted."""
    store = copy()
    e = ENTRIES[-10]
    patch(_data(store, e), e["filePosition"] + (0 if field == "magic" else 4), S.INT32.pack(value))
    code, findings = verify(store)
    errors = [f for f in findings if f["severity"] == "error"]
    assert code == 1 and [(f["kind"], f["commitLogOffset"]) for f in errors] == [
        ("illegal-magic" if field == "magic" else "bad-length", e["pos"]),
        ("dledger-checkpoint", None),  # committedIndex past the entries the recovery keeps: lost by this replica
    ]
    assert "the broker's reput reads the record in it and on" in errors[0]["detail"]
    notes = " ".join(f["detail"] for f in findings)
    assert f"stops at the entry at {e['pos']}" in notes and "dropping the 10 record(s) from" in notes


def test_a_damaged_entry_header_past_the_committed_entry_stops_the_walk(copy):
    """The reput reads no further than the committed position (DLedgerCommitLog.getMaxOffset): an entry header
    damaged past the checkpoint's committedIndex was never passed over, so verify does not read on there."""
    store = copy()
    e = ENTRIES[-3]
    (store / "dledger-n0" / "checkpoint").write_text(f"committedIndex={ENTRIES[-5]['index']}\nendIndex=499\n")
    patch(_data(store, e), e["filePosition"], S.INT32.pack(7))
    _, findings = verify(store)
    [header] = [f for f in findings if f["commitLogOffset"] == e["pos"]]  # (a torn tail: nothing readable after)
    assert "entry magic 7" in header["detail"] and "reads the record in it and on" not in header["detail"]


def _drop_units(store, phy_offsets: set[int]):
    """Zero the consumequeue units of the records at these commitlog offsets (never dispatched)."""
    for f in (store / "consumequeue").glob("*/*/*"):
        data = bytearray(f.read_bytes())
        for at in range(0, len(data), S.CQ_UNIT_SIZE):
            if S.CQ_UNIT.unpack_from(data, at)[0] in phy_offsets:
                data[at : at + S.CQ_UNIT_SIZE] = bytes(S.CQ_UNIT_SIZE)
        f.write_bytes(bytes(data))


def test_records_the_group_has_not_committed_are_not_yet_dispatched(copy):
    """The reput stops at the committed position (DLedgerCommitLog.getMaxOffset): the records past the
    checkpoint's committedIndex that have no consumequeue unit were never dispatched, and are dispatched once
    the group commits them: info, exit 0. A record before where the reput resumes that lacks its unit is lost."""
    store = copy()
    (store / "dledger-n0" / "checkpoint").write_text(f"committedIndex={ENTRIES[-11]['index']}\nendIndex=499\n")
    last = [m["commitLogOffset"] for m in truth(NAME, "truth-messages.jsonl")[-10:]]
    _drop_units(store, set(last))
    code, findings = verify(store)
    missing = [f for f in findings if f["kind"] == "cq-missing-entries"]
    assert code == 0 and missing and {f["severity"] for f in missing} == {"info"}
    assert sum(int(f["detail"].split(": ")[1].split()[0]) for f in missing) == 10
    assert all("once the group commits them" in f["detail"] for f in missing)
    store = copy()
    (store / "dledger-n0" / "checkpoint").write_text(f"committedIndex={ENTRIES[-11]['index']}\nendIndex=499\n")
    _drop_units(store, {last[0]})  # the queues go on past it: the reput has passed it for good
    code, findings = verify(store)
    [lost] = [f for f in findings if f["kind"] == "cq-missing-entries"]
    assert code != 0 and lost["severity"] == "error" and lost["commitLogOffset"] == last[0]


def test_repair_torn_copy_keeps_what_dledger_recovery_keeps(copy):
    store = copy()
    torn_last_entry(store)
    last = ENTRIES[-1]
    r = run("repair", "--store", store, "--broker-config", CONF, "--format", "jsonl")
    assert r.exit_code == 0, r.stderr
    # the data: byte for byte up to the cut, zero after it
    data = _data(store, last).read_bytes()
    original = _data(STORE, last).read_bytes()
    assert data[: last["filePosition"]] == original[: last["filePosition"]]
    assert not any(data[last["filePosition"] :])
    # the index units: entries 0..498 as written, nothing after
    index = b"".join(p.read_bytes() for p in sorted((store / "dledger-n0" / "index").iterdir()))
    units = S.DLEDGER_INDEX_UNIT_SIZE * last["index"]
    assert index[:units] == b"".join(p.read_bytes() for p in sorted((STORE / "dledger-n0" / "index").iterdir()))[:units]
    assert not any(index[units:])
    assert (store / "dledger-n0" / "checkpoint").read_text() == "committedIndex=498\nendIndex=498\n"
    assert [m["commitLogOffset"] for m in dump(store)] == [e["messageOffset"] for e in ENTRIES[:-1]]
    assert verify(store) == (0, [])
    assert run("repair", "--store", store, "--broker-config", CONF).exit_code == 0  # nothing left to cut


def test_repair_rewrites_the_units_recovery_rewrites(copy):
    """An index unit that disagrees with its entry (from the recovery's start file on) is rewritten from it."""
    store = copy()
    e = ENTRIES[-20]
    u = e["indexUnit"]
    unit_path = store / "dledger-n0" / "index" / u["file"]
    patch(unit_path, u["filePosition"] + 12, S.INT32.pack(e["size"] + 1))
    r = run("repair", "--store", store, "--broker-config", CONF, "--format", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert unit_path.read_bytes() == (STORE / "dledger-n0" / "index" / u["file"]).read_bytes()
    assert verify(store) == (0, [])


@pytest.mark.parametrize("command", [["append", "--topic", "T", "--body", "x"], ["clean"]])
def test_append_and_clean_refuse(copy, command):
    store = copy()
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    r = run(*command, "--store", store, "--broker-config", CONF)
    assert r.exit_code == 2
    assert "DLedger" in r.stderr and "refusing" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before


def test_old_commitlog_beside_the_dledger_log_is_refused(copy):
    store = copy()
    (store / "commitlog").mkdir()
    (store / "commitlog" / "00000000000000000000").write_bytes(bytes(65536))
    r = run("dump", "commitlog", "--store", store, "--broker-config", CONF)
    assert r.exit_code == 2 and "old commitlog before its DLedger log" in r.stderr


def test_recovery_that_dledger_refuses_is_refused(copy):
    """A bad first entry in the third file from the last: DLedger's recovery starts a file earlier, stops
    there, more than a file before the last file, and exits; verify says so and repair changes nothing."""
    store = copy()
    e = next(x for x in ENTRIES if x["file"] == "00000000000000262144")
    patch(_data(store, e), S.DLEDGER_POS_AT, S.INT64.pack(e["pos"] + 1))
    _, findings = verify(store)
    assert any(
        f["kind"] == "dledger-recovery" and f["severity"] == "error" and f["commitLogOffset"] == e["pos"]
        for f in findings
    )
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    r = run("repair", "--store", store, "--broker-config", CONF)
    assert r.exit_code == 2 and "processOffset is too small" in r.stderr
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before


def test_verify_compares_the_entries_a_data_file_at_a_time(monkeypatch):
    """The layer check (index continuity, terms, index units) holds one data file's entries and the entry
    before them, with that file's map released, not a table of the whole log's entries."""
    from rmqctl.checks import dledger as verify_dledger
    from rmqctl.checks.verify import verify as run_verify

    seen = []
    real = verify_dledger._neighbours

    def neighbours(run, i, before, pos, index, term):
        seen.append((i, len(pos), sum(f._map is not None for f in run.files), before is not None))
        return real(run, i, before, pos, index, term)

    monkeypatch.setattr(verify_dledger, "_neighbours", neighbours)
    store = Store(STORE, load_config(str(CONF)))
    assert not run_verify(store, jobs=1).findings
    per_file = [len(D.walk_entries(f.buf, f.length)) for f in store.commitlog.files]
    assert [i for i, *_ in seen] == list(range(len(per_file))) and len(per_file) > 3
    assert [n for _, n, _, _ in seen] == per_file
    assert all(mapped <= 1 for _, _, mapped, _ in seen) and all(b for *_, b in seen[1:])


def _reference_entries(buf, limit: int) -> tuple[list[int], int, tuple | None, str | None]:
    """The entry walk as MmapFileList's readers step, a field at a time: positions, end, BLANK, stop kind."""
    positions, p = [], 0
    while p + S.DLEDGER_MIN_BLANK <= limit:
        magic, size = S.DLEDGER_BLANK.unpack_from(buf, p)
        if magic == S.DLEDGER_BLANK_MAGIC:
            return positions, p, (p, size), None
        if size == 0:
            break
        if p + S.DLEDGER_ENTRY_HEADER.size > limit:
            return positions, p, None, "truncated-entry"
        if magic != S.DLEDGER_MAGIC:
            return positions, p, None, "illegal-magic"
        if size < S.DLEDGER_ENTRY_HEADER.size or p + size > limit:
            return positions, p, None, "bad-length"
        positions.append(p)
        p += size
    return positions, p, None, None


@pytest.mark.parametrize("seed", range(6))
def test_entry_walk_in_slices_is_the_whole_walk(seed):
    """The compiled entry walk equals the reference on every data file, whole and damaged, and its slices
    (cut at entry starts about `size` bytes apart) add up to it, only the last saying how the file ends."""
    rnd = random.Random(seed)
    for path in sorted((STORE / "dledger-n0" / "data").iterdir()):
        buf = bytearray(path.read_bytes())
        for _ in range(seed % 3):
            at = rnd.randrange(len(buf))
            buf[at : at + 4] = rnd.randbytes(4)
        buf, limit = bytes(buf), len(buf) - rnd.choice([0, 0, rnd.randrange(300)])
        positions, end, blank, stop = _reference_entries(buf, limit)
        whole = D.walk_entries(buf, limit)
        assert (whole.position.tolist(), whole.end, whole.blank) == (positions, end, blank)
        assert (whole.stop.kind if whole.stop else None) == stop
        heads = [S.DLEDGER_ENTRY_HEADER.unpack_from(buf, p) for p in positions]
        assert [list(h) for h in heads] == [
            [int(getattr(whole, n)[k]) for n in D.HEADER_FIELDS] for k in range(len(positions))
        ]
        parts = list(D.entry_slices(buf, limit, rnd.choice([1, 700, 5000])))
        assert sum((p.position.tolist() for p in parts), []) == positions
        assert (parts[-1].end, parts[-1].blank, parts[-1].stop) == (whole.end, whole.blank, whole.stop)
        assert all(p.blank is None and p.stop is None for p in parts[:-1])


@pytest.mark.parametrize("damage", [None, flip_body_byte, wrong_pos, size_past_file, torn_last_entry])
def test_verify_in_small_chunks_and_slices_finds_the_same(copy, damage, monkeypatch):
    """Data files verified in chunks that start at entry starts (found by a walk of the entry heads), and
    the layer checked a slice of entries at a time, report exactly what one task per file does."""
    from rmqctl.checks import commitlog as verify_commitlog

    store = copy()
    if damage is not None:
        damage(store)
    whole = verify(store)
    monkeypatch.setattr(verify_commitlog, "CHUNK", 2000)
    monkeypatch.setattr(D, "ENTRY_SLICE", 3000)
    for jobs in ("1", "2"):
        assert verify(store, "--jobs", jobs) == whole


def test_dump_walks_entries_a_slice_at_a_time(copy, monkeypatch):
    """The engine's walk of the entries in slices a few entries long gives the same lines and the same
    report of a damaged file end."""
    store = copy()
    size_past_file(store)

    def lines():
        r = run("dump", "commitlog", "--store", store, "--broker-config", CONF, "--format", "jsonl", "--body", "base64")
        return r.exit_code, r.stdout, r.stderr

    whole = lines()
    monkeypatch.setattr(D, "ENTRY_SLICE", 3000)
    assert "entry size 70000 runs past the end of the file" in whole[2]
    assert lines() == whole


def test_repair_reports_the_damage_dledger_recovery_keeps(copy):
    """A record whose body CRC fails inside a sound entry below the cut: DLedger's recovery never reads it, so
    repair keeps it and reports it (notCut), found on the compiled walk with the reference deciding."""
    from rmqctl.config import load_config
    from rmqctl.maintenance.repair import repair
    from rmqctl.store import Store

    store = copy()
    torn_last_entry(store)
    e = ENTRIES[3]
    patch(_data(store, e), e["filePosition"] + 48 + 120, b"\xee")  # inside its body
    result = repair(Store(store, load_config(CONF)), dry_run=True)
    assert [(b.kind, b.commitLogOffset) for b in result.notCut] == [("body-crc", e["messageOffset"])]


@pytest.mark.parametrize("value, severity", [("499x", "error"), ("4_99", "error"), ("  ", "warning")])
def test_a_committed_index_dledger_cannot_read(copy, value, severity):
    """DLedgerMmapFileStore.recover reads committedIndex with Long.valueOf of the trimmed text: a blank one is
    skipped (nothing counts as committed), anything else that is no number throws and the broker's load fails
    (rmqctl warned, and Python's int() took '4_99')."""
    store = copy()
    (store / "dledger-n0" / "checkpoint").write_text(f"committedIndex={value}\nendIndex=499\n")
    _, found = verify(store)
    assert [(f["kind"], f["severity"]) for f in found if f["kind"] == "dledger-checkpoint"] == [
        ("dledger-checkpoint", severity)
    ]


def test_after_a_crash_the_index_keys_the_broker_loses_are_named(tmp_path, java_oracle):
    """With `abort`, a DLedger broker deletes the index files newer than the checkpoint's indexMsgTimestamp, as any
    broker does, but DLedgerCommitLog.recover dispatches nothing: keys are indexed again only from where the reput
    resumes. verify said nothing; it now names each file 4.9.7 deletes, with the keys lost."""
    import subprocess

    root = copy_store(NAME, tmp_path / "e")
    index_dir = root / "dledger-n0" / "index"
    # a stock broker maps DLedger index files at DLedger's default size: the fixture's 8 KiB files as one such file
    parts = sorted(index_dir.iterdir())
    with open(index_dir / f"{0:020d}.merged", "wb") as merged:
        merged.truncate(D.DEFAULT_INDEX_FILE_SIZE)
        for p in parts:
            merged.seek(int(p.name))
            merged.write(p.read_bytes())
    for p in parts:
        p.unlink()
    (index_dir / f"{0:020d}.merged").rename(index_dir / f"{0:020d}")
    (root / "abort").touch()
    res = run("verify", "--store", root, "--broker-config", CONF, "--format", "jsonl")
    named = {f["file"].rsplit("/", 1)[1] for f in jsonl(res.stdout) if f["kind"] == "index-lost-on-recovery"}
    out = tmp_path / "out"
    subprocess.run([str(java_oracle / "read4.sh"), "--keep-copy", str(root), str(CONF), str(out)], capture_output=True)
    assert json.loads((out / "recovered-summary.json").read_text())["loadReturned"]
    kept = {p.name for p in (out / "store-copy" / "index").iterdir()}
    deleted = {p.name for p in (root / "index").iterdir()} - kept
    assert named == deleted and deleted


def test_an_empty_commitlog_directory_beside_the_dledger_log_is_still_a_dledger_store(store_copy):
    """DLedgerCommitLog's cleanup deletes old commitlog files but leaves commitlog/; without a broker.conf rmqctl
    took that for an empty plain store: verify reported every unit, repair would delete them all, and append
    wrote a plain commitlog the broker then refuses, the acknowledged message lost."""
    root = store_copy("e-dledger")
    (root / "commitlog").mkdir()
    info = json.loads(run("info", "--store", root, "--format", "json").stdout)
    assert info["empty"] is False and info["commitlog"]["dirs"] == [str(root / "dledger-n0" / "data")]
    assert run("verify", "--store", root).exit_code == 0
    before = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    res = run("append", "--store", root, "--topic", "TopicTest", "--body", "x", "--store-host", "10.0.0.1:10911")
    assert res.exit_code == 2 and "DLedger" in res.stderr
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*")) == before


def test_after_a_crash_units_a_dledger_store_lost_are_lost(store_copy):
    """DLedgerCommitLog's recoverAbnormally is its recover, which dispatches nothing, and the reput resumes from
    the queues' end: DLedgerTopic/0's last 5 units zeroed with `abort` present stay missing (RocketMQ 4.9.7 served
    495 units, the review's harness). verify said the broker dispatches them again."""
    root = store_copy(NAME)
    cq = root / "consumequeue" / "DLedgerTopic" / "0" / "00000000000000000000"
    patch(cq, 39 * S.CQ_UNIT_SIZE, bytes(5 * S.CQ_UNIT_SIZE))
    (root / "abort").touch()
    found = jsonl(run("verify", "--store", root, "--broker-config", CONF, "--format", "jsonl").stdout)
    missing = [f for f in found if f["kind"] == "cq-missing-entries"]
    assert [f["severity"] for f in missing] == ["error"]
    assert "queue offsets 39..43" in missing[0]["detail"] and "consumers never see them" in missing[0]["detail"]


def test_repair_keeps_a_torn_last_entry_as_dledger_does(store_copy):
    """The last entry's body torn (its header sound, 520 bytes zeroed), with `abort`: DLedger's recovery never
    reads bodies and keeps the entry, the broker's reput skips its record. repair stopped with "no record
    starts at ..." (its checkpoint step read the torn body); it now keeps it, as the broker does."""
    root = store_copy(NAME)
    store = Store(root, load_config(CONF))
    f, m = list(store.scan().records())[-1]
    store.close()
    patch(f.path, m.position + 520, bytes(520))
    (root / "abort").touch()
    res = run("repair", "--store", root, "--broker-config", CONF, "--dry-run")
    assert res.exit_code == 0, res.stderr
    assert "finding(s) are kept" in res.stderr and "dry run: nothing written" in res.stderr


def test_an_entry_torn_past_its_magic_and_size_is_not_taken_for_the_last(store_copy):
    """The last entry's header keeps its magic and size, the rest zeros: DLedger's recovery ends the log at entry
    498. verify took the torn entry's index field (0) for the last entry: "committedIndex 499 is past the last
    entry 0" and 499 extra index units."""
    root = store_copy(NAME)
    store = Store(root, load_config(CONF))
    f, m = list(store.scan().records())[-1]
    store.close()
    entry = m.position - S.DLEDGER_BODY_OFFSET
    patch(f.path, entry + 8, bytes(S.DLEDGER_BODY_OFFSET - 8 + m.storeSize))
    found = jsonl(run("verify", "--store", root, "--broker-config", CONF, "--format", "jsonl").stdout)
    details = [x["detail"] for x in found if x["kind"] == "dledger-checkpoint"]
    assert any("past the last entry 498" in d for d in details), details
    assert sum(x["kind"] == "dledger-index-extra" for x in found) <= 1


def test_repair_makes_the_index_files_dledgers_recovery_makes(copy):
    """A lost DLedger index file: DLedger's recovery appends the units it no longer finds, in a new file past the
    last (the last file lost), or, where the files left end before the first unit it rewrites, in place of all of
    them (rebuildWithPos: the data's head cleaned, the file holding its first unit lost). repair said "nothing to
    repair"; it now makes the files DLedger makes (the same as a 4.9.7 DLedgerCommitLog harness made them)."""
    index = "dledger-n0/index"
    store = copy()
    (store / index / f"{8192:020d}").unlink()
    assert run("repair", "--store", store, "--broker-config", CONF).exit_code == 0
    assert (store / index / f"{8192:020d}").read_bytes() == (STORE / index / f"{8192:020d}").read_bytes()
    assert verify(store) == (0, [])

    store = copy()
    head = [e for e in ENTRIES if int(e["file"]) >= 262144][0]  # the first entry once the first 4 files are gone
    for name in sorted({e["file"] for e in ENTRIES if int(e["file"]) < 262144}):
        (store / "dledger-n0" / "data" / name).unlink()
    (store / index / f"{8192:020d}").unlink()
    res = run("repair", "--store", store, "--broker-config", CONF, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert sorted(p.name for p in (store / index).iterdir()) == [f"{8192:020d}"]
    made, written = (store / index / f"{8192:020d}").read_bytes(), (STORE / index / f"{8192:020d}").read_bytes()
    at = head["indexUnit"]["filePosition"]
    assert head["indexUnit"]["file"] == f"{8192:020d}" and at > 0
    assert made[at:] == written[at:] and not any(made[:at])
    assert verify(store) == (0, [])


def test_repair_counts_every_message_past_the_cut(copy):
    """The cut at an entry whose magic is bad, the next entry's size bad too: the walk past the cut reads
    nothing more of that file. repair said "0 record(s)" past the cut; the records its consumequeue units name
    count too (as for a plain commitlog), so the report says every message that goes."""
    from rmqctl.maintenance.repair import repair

    store = copy()
    last = [e for e in ENTRIES if e["file"] == ENTRIES[-1]["file"]]
    cut, after = last[10], last[11]
    patch(_data(store, cut), cut["filePosition"], S.INT32.pack(7))
    patch(_data(store, after), after["filePosition"] + 4, S.INT32.pack(3))
    r = repair(Store(store, load_config(CONF)), dry_run=True)
    assert r.cutOffset == cut["pos"] and r.recordsCut == len(last) - 10
    assert sum(r.recordsCutByQueue.values()) == len(last) - 10 and "unknown" not in r.recordsCutByQueue
