"""repair: RocketMQ 4.9.7's abnormal recovery of d-crashed reproduced as a plan and applied (the torn record
cut, the flipped byte in the first file reported but kept), --scan-all, consumequeues and index truncated
exactly to what the broker would have written for the records kept, and SIGKILL at any moment."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, broker_conf, held_lock, copy_store, jsonl, one_line_error, run, truth
from rmqctl import schema as S
from rmqctl import txn
from rmqctl.views.query import query_offsets
from rmqctl.maintenance.repair import repair
from rmqctl.store import IndexFile
from test_rebuild import (
    cli_kills,
    commit_point,
    fresh,
    is_consistent,
    open_store,
    recover,
    run_killed_at,
    state,
    sweep_kills,
    tree,
)

CRASHED = "d-crashed"
TORN = 782999  # corruption.json: the record whose second half was zeroed
FLIPPED = 32655  # corruption.json: the record with a flipped body byte, in the first file
CL_SIZE = 65536


def kept_offsets(root: Path, name: str) -> list[int]:
    res = run(
        "dump",
        "commitlog",
        "--store",
        root,
        "--broker-config",
        broker_conf(name),
        "--format",
        "jsonl",
        "--body",
        "none",
    )
    return [r["commitLogOffset"] for r in jsonl(res.stdout)]


def cq_entries(root: Path, name: str) -> list[tuple]:
    out = []
    for cq in open_store(root, name).consume_queues():
        out += [(cq.topic, cq.queue_id, q, off, size, tags) for q, _, _, off, size, tags in cq.entries()]
    return sorted(out)


def test_repair_cuts_exactly_the_torn_record(tmp_path):
    root = copy_store(CRASHED, tmp_path)
    conf = broker_conf(CRASHED)
    original = FIXTURES / CRASHED / "store"

    before = tree(tmp_path)
    res = run("repair", "--store", root, "--broker-config", conf, "--dry-run", "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert tree(tmp_path) == before
    plan = jsonl(res.stdout)
    assert [(r["action"], r["commitLogOffset"]) for r in plan if r["action"] in ("cut", "not-cut")] == [
        ("cut", TORN),
        ("not-cut", FLIPPED),
    ]
    assert "body-crc" in next(r["detail"] for r in plan if r["action"] == "not-cut")
    assert "--scan-all would cut at 32655" in res.stderr and "OrderTopic/2 (1)" in res.stderr

    res = run("repair", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert jsonl(res.stdout) == plan
    backup = next(p for p in root.iterdir() if p.name.startswith(".rmqctl-backup-"))
    assert res.stderr == (
        "rmqctl: cut at commitlog offset 782999: 974 bytes, 1 record(s); queues: OrderTopic/2 (1)\n"
        "rmqctl: bad record(s) before the recovery start are reported, not cut; --scan-all would cut at 32655, losing "
        "574 more record(s), 750344 more bytes\n"
        "rmqctl: 1 finding(s) were kept (damaged records and what follows from them), as the broker's recovery "
        "keeps them: verify still reports them; `rmqctl verify --write-baseline FILE` records them as accepted, then "
        "`verify --baseline FILE` exits 1 only for new damage\n"
        f"rmqctl: repaired; replaced files kept in {backup}\n"
    )

    # the commitlog: the torn record's bytes zeroed, the preallocated file gone, everything else as it was
    assert kept_offsets(root, CRASHED) == [
        m["commitLogOffset"] for m in truth(CRASHED, "truth-recovered-messages.jsonl")
    ]
    names = sorted(p.name for p in (root / "commitlog").iterdir())
    assert names == sorted(p.name for p in (original / "commitlog").iterdir())[:-1]
    last = (root / "commitlog" / "00000000000000720896").read_bytes()
    orig_last = (original / "commitlog" / "00000000000000720896").read_bytes()
    cut = TORN - 720896
    assert len(last) == CL_SIZE and last[:cut] == orig_last[:cut] and not last[cut:].strip(b"\0")
    for n in names[:-1]:
        assert (root / "commitlog" / n).read_bytes() == (original / "commitlog" / n).read_bytes()
    assert not (root / "abort").exists()
    assert (root / "checkpoint").read_bytes() == (original / "checkpoint").read_bytes()

    # consumequeues: what RocketMQ's own recovery kept
    want = sorted(
        (w["topic"], w["queueId"], w["queueOffset"], w["commitLogOffset"], w["size"], w["tagsCode"])
        for w in truth(CRASHED, "truth-recovered-consumequeue.jsonl")
    )
    assert cq_entries(root, CRASHED) == want

    # index: the full files untouched, the last one without the torn record's three keys
    files = sorted((root / "index").iterdir())
    assert [p.name for p in files] == sorted(p.name for p in (original / "index").iterdir())
    for p in files[:-1]:
        assert p.read_bytes() == (original / "index" / p.name).read_bytes()
    ix, ox = IndexFile(files[-1], 100, 512), IndexFile(original / "index" / files[-1].name, 100, 512)
    assert ix.entry_count == ox.entry_count - 3
    assert np.array_equal(ix.entries()[1 : ix.index_count], ox.entries()[1 : ix.index_count])
    assert ix.header["endPhyOffset"] == 781880 and not np.any(ix.entries()["phyOffset"] >= TORN)
    store = open_store(root, CRASHED)
    messages = {m["commitLogOffset"]: m for m in truth(CRASHED, "truth-messages.jsonl")}

    def carries(off, topic, key):
        m = messages.get(off)
        return (
            off != TORN
            and m is not None
            and m["topic"] == topic
            and (key == m.get("uniqKey") or key in (m.get("keys") or "").split(" "))
        )

    for q in truth(CRASHED, "truth-recovered-index.jsonl"):
        got = query_offsets(store, q["topic"], q["key"], q["maxNum"], q["begin"], q["end"])
        want = q["indexServiceQueryOffset"]["phyOffsets"]
        assert {o for o in got if carries(o, q["topic"], q["key"])} == {
            o for o in want if carries(o, q["topic"], q["key"])
        }

    # the result is what dispatching the repaired commitlog gives, and a second repair has nothing to cut
    assert is_consistent(root, CRASHED)
    res = run("repair", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 0 and "nothing to repair" in res.stderr
    assert [r["action"] for r in jsonl(res.stdout)] == ["not-cut"]


def test_repaired_store_verifies_but_for_the_flipped_byte(tmp_path):
    root = copy_store(CRASHED, tmp_path)
    assert run("repair", "--store", root, "--broker-config", broker_conf(CRASHED)).exit_code == 0
    res = run("verify", "--store", root, "--broker-config", broker_conf(CRASHED), "--format", "jsonl")
    errors = [f for f in jsonl(res.stdout) if f.get("severity", "error") == "error"]
    assert res.exit_code == 1 and errors
    assert all(FLIPPED <= (f.get("commitLogOffset") or -1) < FLIPPED + 2045 for f in errors), errors


def test_scan_all_cuts_at_the_first_bad_record_anywhere(tmp_path):
    root = copy_store(CRASHED, tmp_path)
    res = run(
        "repair", "--scan-all", "--yes", "--store", root, "--broker-config", broker_conf(CRASHED), "--format", "jsonl"
    )
    assert res.exit_code == 0, res.stderr
    rows = jsonl(res.stdout)
    assert rows[0]["action"] == "cut" and rows[0]["commitLogOffset"] == FLIPPED and "body-crc" in rows[0]["detail"]
    assert "would cut at 782999" in res.stderr and "574 more record(s)" in res.stderr
    assert kept_offsets(root, CRASHED) == [
        m["commitLogOffset"] for m in truth(CRASHED, "truth-messages.jsonl") if m["commitLogOffset"] < FLIPPED
    ]
    assert sorted(p.name for p in (root / "commitlog").iterdir()) == ["00000000000000000000"]
    assert is_consistent(root, CRASHED)
    assert open_store(root, CRASHED).checkpoint()["indexMsgTimestamp"] == 0  # no full index file any more


def test_repair_of_a_sound_store(tmp_path):
    root = copy_store("a-basic", tmp_path / "a")
    before = tree(root)
    res = run("repair", "--store", root, "--broker-config", broker_conf("a-basic"), "--format", "jsonl")
    assert res.exit_code == 0 and jsonl(res.stdout) == [] and "nothing to repair" in res.stderr
    assert tree(root) == before and not [p for p in root.iterdir() if p.name.startswith(".rmqctl")]

    root = copy_store("a-basic", tmp_path / "b")
    (root / "abort").touch()
    res = run("repair", "--store", root, "--broker-config", broker_conf("a-basic"), "--format", "jsonl", "--no-backup")
    assert res.exit_code == 0, res.stderr
    assert [(r["action"], r["target"]) for r in jsonl(res.stdout)] == [("remove", "abort")]
    assert tree(root) == before and not [p for p in root.iterdir() if p.name.startswith(".rmqctl")]


def flip(root: Path, offset: int, file_size: int):
    """One commitlog byte XORed, at a global offset."""
    path = root / "commitlog" / f"{offset // file_size * file_size:020d}"
    with open(path, "r+b") as f:
        f.seek(offset % file_size)
        b = f.read(1)[0]
        f.seek(offset % file_size)
        f.write(bytes([b ^ 0xFF]))


def test_without_abort_repair_applies_the_normal_recovery_and_keeps_what_it_does_not_recheck(tmp_path):
    """No `abort`: the broker runs recoverNormally, from the third file from the last (4.9), and serves a body
    whose CRC fails in an earlier file as it is. repair cut there from the checkpoint's start instead: 1737
    acknowledged records deleted. Now it keeps them and says what --scan-all would cut."""
    root = copy_store("a-basic", tmp_path)
    flip(root, 329837, 327680)  # a body byte of the record at 329744, in the second of 42 files
    before = tree(root)
    res = run("repair", "--store", root, "--broker-config", broker_conf("a-basic"), "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert [(r["action"], r["commitLogOffset"]) for r in jsonl(res.stdout)] == [("not-cut", 329744)]
    assert "--scan-all would cut at 329744, losing 1737 more record(s)" in res.stderr
    assert tree(root) == before
    assert repair(open_store(root, "a-basic"), dry_run=True).mode == "normal"


def test_without_abort_repair_cuts_where_the_normal_recovery_cuts(tmp_path, java_oracle):
    """No `abort`, damage inside the normal recovery's files but before the abnormal start: the broker
    truncates there (611026); repair kept it and said the broker would. Now the repaired store loads as
    RocketMQ 4.9.7's own recovery of the damaged one leaves it."""
    import oracle

    root = copy_store(CRASHED, tmp_path / "store")
    (root / "abort").unlink()
    (root / "commitlog" / "00000000000000786432").unlink()  # the torn tail's file: no later damage
    flip(root, 611119, CL_SIZE)
    damaged = oracle.served(java_oracle, 4, root, broker_conf(CRASHED), tmp_path / "damaged")
    res = run("repair", "--store", root, "--broker-config", broker_conf(CRASHED), "--format", "jsonl", "--no-backup")
    assert res.exit_code == 0, res.stderr
    assert [r["commitLogOffset"] for r in jsonl(res.stdout) if r["action"] == "cut"] == [611026]
    repaired = oracle.served(java_oracle, 4, root, broker_conf(CRASHED), tmp_path / "repaired")
    assert repaired[2]["maxPhyOffset"] == damaged[2]["maxPhyOffset"] == 611026
    assert repaired[:2] == damaged[:2]


def test_abort_is_kept_while_its_abnormal_recovery_would_dispatch_missing_entries(tmp_path, java_oracle):
    """After a crash, units lost from a consumequeue's tail (unflushed pages) are dispatched again by the
    abnormal recovery that `abort` asks for; repair removed `abort`, and the broker's normal start reputs only
    past the queues' end: queue offsets lost, the next record written into their slots. repair now keeps
    `abort` and says why; the broker then loads the repaired store with the queues of its own recovery."""
    import oracle

    root = copy_store(CRASHED, tmp_path / "store")
    cq = root / "consumequeue" / "TopicTest" / "1" / "00000000000000000000"
    units = cq.read_bytes()
    end = next(
        i for i in range(0, len(units), S.CQ_UNIT_SIZE) if units[i : i + S.CQ_UNIT_SIZE] == bytes(S.CQ_UNIT_SIZE)
    )
    with open(cq, "r+b") as f:
        f.seek(end - 3 * S.CQ_UNIT_SIZE)
        f.write(bytes(3 * S.CQ_UNIT_SIZE))
    damaged = oracle.served(java_oracle, 4, root, broker_conf(CRASHED), tmp_path / "damaged")
    res = run("repair", "--store", root, "--broker-config", broker_conf(CRASHED), "--format", "jsonl", "--no-backup")
    assert res.exit_code == 0, res.stderr
    kept = [r for r in jsonl(res.stdout) if r["target"] == "abort"]
    assert [r["action"] for r in kept] == ["keep"] and "TopicTest/1: 3 dispatched message(s)" in kept[0]["detail"]
    assert (root / "abort").exists()
    repaired = oracle.served(java_oracle, 4, root, broker_conf(CRASHED), tmp_path / "repaired")
    assert repaired[0][("TopicTest", 1)] == damaged[0][("TopicTest", 1)] == (0, end // S.CQ_UNIT_SIZE)
    assert repaired[:2] == damaged[:2]


def test_records_past_a_region_that_does_not_parse_are_counted_from_their_units(tmp_path):
    """A zeroed page in a file's middle: the records after it do not parse, but their consumequeue units name
    them. The report counted the one record at the cut where the cut drops 46."""
    root = copy_store("c-v5-features", tmp_path)
    (root / "abort").touch()
    with open(root / "commitlog" / "00000000000000393216", "r+b") as f:
        f.seek(20480)
        f.write(bytes(4096))
    r = repair(open_store(root, "c-v5-features"), dry_run=True)
    dropped = [m for m in truth("c-v5-features", "truth-messages.jsonl") if m["commitLogOffset"] >= r.cutOffset]
    assert r.recordsCut == len(dropped) == 46
    assert sum(r.recordsCutByQueue.values()) == 46


def test_an_index_file_cut_short_is_left_to_rebuild_index(tmp_path):
    """repair does not guess what a cut index file held: one line naming it and `rmqctl rebuild index`, exit 2,
    nothing changed."""
    root = copy_store("a-basic", tmp_path)
    last = sorted((root / "index").iterdir())[-1]
    whole = last.read_bytes()
    for length, what in ((1000, "too short for the"), (0, "shorter than its header: what it indexed is lost")):
        last.write_bytes(whole[:length])
        before = tree(root)
        res = run("repair", "--store", root, "--broker-config", broker_conf("a-basic"))
        one_line_error(res, str(last), f"index file is {length} bytes, {what}", "rmqctl rebuild index")
        assert tree(root) == before


def test_a_torn_last_record_is_cut_from_the_checkpoint_start(tmp_path):
    root = copy_store("a-basic", tmp_path)
    offsets = kept_offsets(root, "a-basic")
    last = offsets[-1]
    path = root / "commitlog" / f"{last - last % CL_SIZE:020d}"
    data = bytearray(path.read_bytes())
    size = S.INT32.unpack_from(data, last % CL_SIZE)[0]
    data[last % CL_SIZE + size // 2 : last % CL_SIZE + size] = bytes(size - size // 2)
    path.write_bytes(bytes(data))
    (root / "abort").touch()
    r = repair(open_store(root, "a-basic"))
    assert r.cutOffset == last and r.stoppedAt.commitLogOffset == last and r.recordsCut == 1 and not r.notCut
    assert kept_offsets(root, "a-basic") == offsets[:-1]
    assert is_consistent(root, "a-basic")


def cut_points() -> list[int]:
    """Records where the index rolls over (the first record of each later index file, whose keys may be split
    across two files, and the one after it), the first record of the commitlog, and one mid-file."""
    store = open_store(FIXTURES / "a-basic" / "store", "a-basic")
    offsets = [f.start + m.position for f, m in store.scan().records()]
    points = {0, offsets[len(offsets) // 2]}
    for ix in store.index_files()[1:4]:
        begin = ix.header["beginPhyOffset"]
        points |= {begin, offsets[offsets.index(begin) + 1]}
    return sorted(points)


@pytest.mark.parametrize("cut", cut_points())
def test_any_cut_leaves_consumequeues_and_index_as_the_broker_would_write_them(tmp_path, cut):
    """Undoing index entries (slot back to prevIndex, counts, end offset and time; a file emptied or removed
    as the broker would have created it or not) gives byte for byte what dispatching the kept records gives."""
    _cut_as_the_broker_would(tmp_path, cut)


def _cut_as_the_broker_would(tmp_path: Path, cut: int):
    root = copy_store("a-basic", tmp_path)
    path = root / "commitlog" / f"{cut - cut % CL_SIZE:020d}"
    data = bytearray(path.read_bytes())
    data[cut % CL_SIZE + 100] ^= 0xFF  # inside the body: a CRC failure
    path.write_bytes(bytes(data))
    r = repair(open_store(root, "a-basic"), scan_all=True)
    assert r.cutOffset == cut and r.stoppedAt.kind == "body-crc"
    assert kept_offsets(root, "a-basic") == [
        o for o in kept_offsets(FIXTURES / "a-basic" / "store", "a-basic") if o < cut
    ]
    assert is_consistent(root, "a-basic")


def test_index_entries_meet_the_cut_a_block_at_a_time(tmp_path, monkeypatch):
    """The entries at or past the cut are found with a mask of SCAN_BLOCK entries, not one as long as the
    index file (20 million entries in a full one): with blocks of 2, a cut in the second index file still
    leaves what the broker would write."""
    import rmqctl.maintenance.repair as repair_module

    blocks = []
    real_first = repair_module._first
    monkeypatch.setattr(repair_module, "SCAN_BLOCK", 2)
    monkeypatch.setattr(
        repair_module,
        "_first",
        lambda values, test: real_first(values, lambda block: blocks.append(len(block)) or test(block)),
    )
    offsets = kept_offsets(FIXTURES / "a-basic" / "store", "a-basic")
    begin = open_store(FIXTURES / "a-basic" / "store", "a-basic").index_files()[1].header["beginPhyOffset"]
    _cut_as_the_broker_would(tmp_path, offsets[offsets.index(begin) + 1])
    assert len(blocks) > 100 and max(blocks) == 2


def test_repair_refuses_while_the_lock_is_held(tmp_path):
    root = copy_store(CRASHED, tmp_path)
    before = tree(root)
    with held_lock(root):
        res = run("repair", "--store", root, "--broker-config", broker_conf(CRASHED))
        assert res.exit_code == 2 and "locked" in res.stderr and "Traceback" not in res.stderr
    assert tree(root) == before


# -- crash safety ----------------------------------------------------------------------------------------


def _old_new(tmp_path: Path) -> tuple[dict, dict]:
    prepare = fresh(CRASHED, tmp_path / "expected")
    old_root, new_root = prepare(), prepare()
    repair(open_store(new_root, CRASHED), keep_backup=False)
    assert is_consistent(new_root, CRASHED)
    return state(old_root), state(new_root)


def test_repair_killed_before_any_filesystem_step_leaves_old_or_new(crash_dir):
    old, new = _old_new(crash_dir)
    operation = lambda r: repair(open_store(r, CRASHED), keep_backup=False)  # noqa: E731
    outcomes = sweep_kills(fresh(CRASHED, crash_dir / "sweep"), operation, old, new, every=5)
    assert outcomes["old"] and outcomes["new"] and outcomes["points"] > 30


def test_the_recovery_itself_can_be_killed_and_resumed(crash_dir):
    """Killed right after its commit point, then the recovery killed before each of its own steps: every
    later recovery still ends in the new state."""
    old, new = _old_new(crash_dir)
    prepare = fresh(CRASHED, crash_dir / "runs")
    operation = lambda r: repair(open_store(r, CRASHED), keep_backup=False)  # noqa: E731
    probe = prepare()
    commit = commit_point(lambda: operation(probe))
    m = 1
    while True:
        root = prepare()
        assert run_killed_at(commit + 1, lambda: operation(root))
        assert txn.pending(root)["state"] == "committed"
        killed = run_killed_at(m, lambda: recover(root))
        recover(root)
        assert state(root) == new, f"recovery killed before its step {m}"
        shutil.rmtree(root.parent)
        if not killed:
            break
        m += 1
    assert m > 10


def test_repair_cli_killed_at_random_steps_leaves_old_or_new(crash_dir):
    old, new = _old_new(crash_dir)
    conf = broker_conf(CRASHED)
    cli_kills(
        fresh(CRASHED, crash_dir / "runs"),
        lambda r: ["repair", "--store", str(r), "--broker-config", str(conf)],
        old,
        new,
        runs=12,
        seed=7,
    )


def test_an_interrupted_run_is_reported_and_finished_by_the_next_writing_command(crash_dir):
    old, new = _old_new(crash_dir)
    prepare = fresh(CRASHED, crash_dir / "runs")
    operation = lambda r: repair(open_store(r, CRASHED), keep_backup=False)  # noqa: E731
    probe = prepare()
    commit = commit_point(lambda: operation(probe))
    root = prepare()
    assert run_killed_at(commit + 2, lambda: operation(root))
    res = run("repair", "--store", root, "--broker-config", broker_conf(CRASHED), "--dry-run")
    assert res.exit_code == 0 and "interrupted rmqctl run is pending (committed)" in res.stderr
    res = run("rebuild", "index", "--store", root, "--broker-config", broker_conf(CRASHED))
    assert res.exit_code == 0 and "finished an interrupted `repair` run first" in res.stderr, res.stderr
    assert state(root) == new

    root = prepare()
    assert run_killed_at(commit - 1, lambda: operation(root))
    assert txn.pending(root)["state"] == "uncommitted"
    res = run(
        "rebuild", "consumequeue", "--topic", "NoSuchTopic", "--store", root, "--broker-config", broker_conf(CRASHED)
    )
    assert res.exit_code == 0 and "removed what an interrupted run left" in res.stderr
    assert state(root) == old


def test_a_staged_commitlog_file_is_read_back_up_to_the_cut(tmp_path):
    """The staged check (repair's _records_end, on the compiled walk): a sound file's records read up to the
    cut; damage before the cut stops them there; a cut past the file's BLANK is not reached."""
    from rmqctl.config import load_config
    from rmqctl.maintenance.repair import _records_end
    from rmqctl.store import MappedFile, Store

    root = copy_store("a-basic", tmp_path)
    store = Store(root, load_config(broker_conf("a-basic")))
    first = store.commitlog.files[0]
    chunk = next(store.scan().chunks())
    starts = (chunk.column("position") + first.start).tolist()
    cut = starts[len(starts) // 2]
    staged = MappedFile(first.path, first.start)
    assert _records_end(store, staged, cut) >= cut
    blank = int(chunk.column("position")[-1] + chunk.column("storeSize")[-1]) + first.start
    assert _records_end(store, MappedFile(first.path, first.start), first.start + store.commitlog.file_size) == blank
    damaged = starts[len(starts) // 4]
    with open(first.path, "r+b") as fh:
        fh.seek(damaged - first.start + 4)
        fh.write(b"\0\0\0\0")  # the magic
    assert _records_end(store, MappedFile(first.path, first.start), cut) == damaged
    store.close()


def test_the_damage_kept_below_a_cut_includes_v2_records_a_4x_broker_refuses(tmp_path):
    """_damage_kept decodes with the scan (which reads V2 magic); a 4.x broker's checker refuses V2 magic, so
    every V2 record below the cut is damage kept, though its CRCs hold."""
    from rmqctl.config import load_config
    from rmqctl.maintenance.repair import _damage_kept
    from rmqctl.store import Store

    config = load_config(broker_conf("c-v5-features"))
    config.rocketmqVersion = "4"
    store = Store(copy_store("c-v5-features", tmp_path), config)
    v2 = [
        c.file.start + int(p)
        for c in store.scan().chunks()
        for p, magic_v2 in zip(c.column("position"), c.column("v2"))
        if magic_v2
    ]
    end = store.commitlog.files[-1].start + store.commitlog.file_size
    kept = _damage_kept(store, end)
    assert v2 and [b.commitLogOffset for b in kept if b.kind == "illegal-magic"] == v2
