"""`clean` against the broker's own cleaner: a real 32 MiB tmpfs per test holding a copy of a-basic with chosen
commitlog ages and ballast, replaying what RocketMQ 4.9.7 deleted pass by pass (clean-truth/*.json), then the
4.9 / 5.x rule differences, durability under SIGKILL, the lock and --protect-unconsumed."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import random
import shutil
import time
from pathlib import Path

import pytest

import oracle
from conftest import FIXTURES, broker_conf, copy_store, held_lock, jsonl, run, tmpfs_at, truth
from rmqctl.maintenance.clean_rules import (
    CleanSettings,
    DiskUsage,
    DeleteWhenError,
    is_time_to_do,
    java_disk_ratio,
    java_parse_int,
    space_check,
)

pytestmark = pytest.mark.tmpfs

TRUTH = FIXTURES / "clean-truth"
SCENARIOS = ["F1-age", "F2-forced", "F3-ratio", "F4-multi-hour", "F4b-multi-hour-second-token"]
CONF = broker_conf("a-basic")
PAGES = 8192  # a 32 MiB tmpfs of 4 KiB pages
USED_AFTER_COPY = 715  # clean-truth/README.md: the copy of a-basic takes 715 pages
CL_SIZE = 65536
REF = dt.datetime(2026, 11, 22, 3, 13, 0, tzinfo=dt.timezone.utc)  # local hour 3, as in the truth runs


# -- the setup of clean-truth/README.md --------------------------------------------------------------------


@pytest.fixture
def tmpfs(tmp_path):
    """A fresh 32 MiB tmpfs, unmounted afterwards."""
    with tmpfs_at(tmp_path / "mnt", "32m") as mnt:
        yield mnt


def used_pages(mnt: Path) -> int:
    st = os.statvfs(mnt)
    return st.f_blocks - st.f_bfree


def make_store(mnt: Path, ages: list[float], ballast_pages: int = 0, now: dt.datetime = REF) -> Path:
    """a-basic copied in full (not sparse), commitlog mtimes = now - age (hours, in offset order), ballast of
    real zero pages beside the store."""
    store = mnt / "store"
    if store.exists():
        shutil.rmtree(store)
    shutil.copytree(FIXTURES / "a-basic" / "store", store)  # copy2: data in full, mtimes kept
    for p in [store, *store.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    assert used_pages(mnt) == USED_AFTER_COPY
    files = sorted((store / "commitlog").iterdir())
    assert len(files) == len(ages) == 40
    for f, age in zip(files, ages):
        t = (now - dt.timedelta(hours=age)).timestamp()
        os.utime(f, (t, t))
    if ballast_pages:
        with open(mnt / "ballast.bin", "wb") as b:
            b.write(bytes(ballast_pages * 4096))
            b.flush()
            os.fsync(b.fileno())
    return store


def ballast_for(target: float) -> int:
    """clean-truth/README.md step 4: ceil(target x 8192) minus the pages used after the copy."""
    return math.ceil(target * PAGES) - USED_AFTER_COPY


def clean(store: Path, *args, version: str = "5", at: dt.datetime = REF):
    res = run(
        "clean", "--store", store, "--broker-config", CONF, "--rocketmq-version", version, "--at", at.isoformat(), *args
    )
    assert "Traceback" not in res.stderr
    return res


def clean_json(store: Path, *args, **kw) -> dict:
    res = clean(store, "--format", "json", *args, **kw)
    assert res.exit_code in (0, 1), res.stderr
    return json.loads(res.stdout)


def names(files: list[str]) -> list[str]:
    """commitlog/NAME -> NAME, consumequeue/T/Q/NAME -> T/Q/NAME, index/NAME -> NAME (the truth's spelling)."""
    return [f.split("/", 1)[1] for f in files]


def listing(store: Path) -> dict[str, list[str]]:
    cq = store / "consumequeue"
    return {
        "commitlog": sorted(p.name for p in (store / "commitlog").iterdir()),
        "consumequeue": sorted(str(p.relative_to(cq)) for p in cq.rglob("*") if p.is_file()),
        "index": sorted(p.name for p in (store / "index").iterdir()),
    }


# -- invariants the broker needs to load the store -----------------------------------------------------------

ORIGINAL_CQ = {
    (r["topic"], r["queueId"], r["queueOffset"]): r["commitLogOffset"]
    for r in truth("a-basic", "truth-consumequeue.jsonl")
}
ORIGINAL = listing(FIXTURES / "a-basic" / "store")
INDEX_END = {
    name: end
    for name, _, end in json.loads((TRUTH / "F1-age.json").read_text())["loadStart"]["stateAfterStart"]["indexFiles"]
}


def cq_last_unit(rel: str) -> int:
    """commitLogOffset of the last slot of an (original, full) consumequeue file T/Q/NAME."""
    topic, qid, name = rel.split("/")
    return ORIGINAL_CQ[(topic, int(qid), int(name) // 20 + 63)]


def assert_loadable(store: Path):
    """What load() and recovery need, and what a kill may leave: commitlog files a contiguous suffix of the
    original ending at its last file; per queue a contiguous suffix of its files (never empty); index files a
    suffix; anything gone lies wholly below the new minimum offset."""
    now = listing(store)
    cl = now["commitlog"]
    assert cl and cl == ORIGINAL["commitlog"][-len(cl) :], "commitlog files are not a contiguous suffix"
    assert all((store / "commitlog" / n).stat().st_size == CL_SIZE for n in cl)
    min_off = int(cl[0])
    by_queue: dict[str, list[str]] = {}
    for rel in ORIGINAL["consumequeue"]:
        by_queue.setdefault(rel.rsplit("/", 1)[0], []).append(rel)
    for queue, files in by_queue.items():
        left = [f for f in files if f in now["consumequeue"]]
        assert left and left == files[-len(left) :], f"{queue}: consumequeue files are not a contiguous suffix"
        for gone in files[: len(files) - len(left)]:
            assert cq_last_unit(gone) < min_off, f"{gone} deleted though it points at or above {min_off}"
    idx = now["index"]
    assert idx and idx == ORIGINAL["index"][-len(idx) :]
    for gone in ORIGINAL["index"][: len(ORIGINAL["index"]) - len(idx)]:
        assert INDEX_END[gone] < min_off
    res = run("verify", "--store", store, "--broker-config", CONF)
    assert res.exit_code == 0, res.stdout + res.stderr
    res = run("info", "--store", store, "--broker-config", CONF, "--format", "json")
    assert res.exit_code == 0, res.stderr


# -- 1. the five recorded scenarios, pass by pass ---------------------------------------------------------------


def scenario_setup(tmpfs: Path, name: str):
    t = json.loads((TRUTH / f"{name}.json").read_text())
    ref = dt.datetime.fromisoformat(t["setup"]["referenceTimeUtc"].replace("Z", "+00:00"))
    ages = [m["ageHours"] for m in t["setup"]["commitlogMtimes"]]
    store = make_store(tmpfs, ages, t["setup"]["ballastBytes"] // 4096, now=ref)
    assert used_pages(tmpfs) * 4096 == t["setup"]["usageAfterSetup"]["usedBytes"]
    b = t["brokerSettings"]
    args = [
        "--delete-when",
        b["deleteWhen"],
        "--file-reserved-time",
        str(b["fileReservedTime"]),
        "--disk-max-used-space-ratio",
        str(b["diskMaxUsedSpaceRatio"]),
        "--clean-file-forcibly-enable",
        str(b["cleanFileForciblyEnable"]).lower(),
        "--until-ok",
    ]
    assert ref.hour == t["clock"]["atOpen"]["hourOfDay"]  # the runs' local hour (UTC), files aged against ref
    return t, store, args, ref


@pytest.mark.parametrize("apply", [False, True], ids=["plan", "apply"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_replays_rocketmq_cleaner(tmpfs, name, apply):
    """RocketMQ 4.9.7's passes (clean-truth): the disk ratio it read before each pass, the commitlog files it
    deleted (oldest first, 10 per pass, stopping at the first kept, never the last), then the consumequeue
    and index files wholly below the new minimum, the min offsets, and when it stopped."""
    t, store, args, at = scenario_setup(tmpfs, name)
    got = clean_json(store, *args, *(["--apply"] if apply else []), version="4", at=at)
    want = t["passes"]
    assert len(got["passes"]) == len(want)
    for g, w in zip(got["passes"], want):
        where = f"{name} pass {w['pass']}"
        assert g["commitLogRatio"] == w["diskMeasuredBefore"]["commitLogRatio"], where
        assert names(g["deleted"]["commitlog"]) == w["deleted"]["commitlog"], where
        assert names(g["deleted"]["consumequeue"]) == w["deleted"]["consumequeue"], where
        assert names(g["deleted"]["index"]) == w["deleted"]["index"], where
        assert g["minPhyOffsetAfter"] == w["minPhyOffsetAfter"], where
        assert g["cqMinOffsetsAfter"] == w["cqMinOffsetsAfter"], where
        assert g["cleanImmediately"] == w["cleanImmediatelyAfter"], where
    final = [p["filesAfter"] for p in want if isinstance(p["filesAfter"], dict)][-1]
    expected = {k: sorted(final[k]) for k in ("commitlog", "consumequeue", "index")}
    kept = expected if apply else {k: ORIGINAL[k] for k in expected}
    assert listing(store) == kept
    assert got["minPhyOffsetAfter"] == want[-1]["minPhyOffsetAfter"]
    if apply:
        assert_loadable(store)


def test_plan_rows_say_why(tmpfs):
    """F1 as rows: each deleted file with its age, the batch limit and the first file kept, CQ and index
    files with the offsets that condemn them."""
    t, store, args, at = scenario_setup(tmpfs, "F1-age")
    res = clean(store, *args, "--format", "jsonl", version="4", at=at)
    assert res.exit_code == 0, res.stderr
    rows = jsonl(res.stdout)
    p1 = [r for r in rows if r["pass"] == 1 and r["kind"] == "commitlog"]
    assert [r["why"] for r in p1] == ["age"] * 10 + ["batch-limit"]
    assert all(r["ageHours"] == 60.0 for r in p1[:10]) and p1[10]["file"] == "commitlog/00000000000000655360"
    stop = [r for r in rows if r["pass"] == 4]
    assert stop == [r for r in stop if r["action"] == "keep"] and stop[0]["why"] == "not-expired"
    # 30 s later: pass 4
    assert stop[0]["file"] == "commitlog/00000000000001638400" and round(stop[0]["ageHours"], 1) == 2.0
    cq = [r for r in rows if r["kind"] == "consumequeue" and r["action"] == "delete"]
    assert all(r["lastUnitOffset"] < 1310720 and r["why"] == "below-min-offset" for r in cq) and len(cq) == 12
    assert "nothing else goes:" in res.stderr and "not-expired" in res.stderr
    assert "min commitlog offset: 0 -> 1638400" in res.stderr


# -- 2. the rules, 4.9 vs 5.x, on the real disk -----------------------------------------------------------------

OLD, YOUNG = 100.0, 2.0  # OLD is past fileReservedTime 72 h (broker.conf) and 48 h

# (id, version, disk target, old files, extra options, expected first pass: triggers, commitlog whys, disk full)
RULES = [
    # deleteWhen is the local hour: time-up; only files older than fileReservedTime; 10 per pass
    ("hour-match", "5", 0.60, 25, ["--delete-when", "03"], ["time"], ["age"] * 10 + ["batch-limit"], False),
    ("hour-second-token", "5", 0.60, 3, ["--delete-when", "01;03"], ["time"], ["age"] * 3 + ["not-expired"], False),
    ("hour-no-match", "5", 0.60, 40, ["--delete-when", "04;05"], [], [], False),
    # 0.61 > diskMaxUsedSpaceRatio clamped up to 10 (from 5): space, expired files only
    (
        "max-ratio-clamp-10",
        "5",
        0.60,
        2,
        ["--disk-max-used-space-ratio", "5"],
        ["space"],
        ["age", "age", "not-expired"],
        False,
    ),
    # 78%: above 75, below 85: expired files only
    ("ratio-78", "5", 0.78, 12, [], ["space"], ["age"] * 10 + ["batch-limit"], False),
    ("ratio-78-nothing-expired", "5", 0.78, 0, [], ["space"], ["not-expired"], False),
    ("ratio-78-max-95", "5", 0.78, 12, ["--disk-max-used-space-ratio", "99"], [], [], False),
    # 87%: above 85: forced, regardless of age
    ("forced-87", "5", 0.87, 0, [], ["space", "forced"], ["forced"] * 10 + ["batch-limit"], False),
    ("forced-87-disabled", "5", 0.87, 0, ["--clean-file-forcibly-enable", "false"], ["space"], ["not-expired"], False),
    # 5.x clamps diskSpaceCleanForciblyRatio to <= 85; 4.9 takes the value as is (system property)
    (
        "forcibly-95-clamped-5x",
        "5",
        0.87,
        0,
        ["--disk-space-clean-forcibly-ratio", "95"],
        ["space", "forced"],
        ["forced"] * 10 + ["batch-limit"],
        False,
    ),
    (
        "forcibly-95-unclamped-49",
        "4",
        0.87,
        0,
        ["--disk-space-clean-forcibly-ratio", "95"],
        ["space"],
        ["not-expired"],
        False,
    ),
    # 93%: above 90: the disk is marked full (the broker rejects writes) and cleaning is forced
    ("warning-93", "5", 0.93, 0, [], ["space", "forced"], ["forced"] * 10 + ["batch-limit"], True),
    ("warning-93-49", "4", 0.93, 0, [], ["space", "forced"], ["forced"] * 10 + ["batch-limit"], True),
    # 5.x clamps diskSpaceWarningLevelRatio to <= 90, 4.9 does not
    (
        "warning-99-clamped-5x",
        "5",
        0.93,
        0,
        ["--disk-space-warning-level-ratio", "99"],
        ["space", "forced"],
        ["forced"] * 10 + ["batch-limit"],
        True,
    ),
    (
        "warning-99-unclamped-49",
        "4",
        0.93,
        0,
        ["--disk-space-warning-level-ratio", "99"],
        ["space", "forced"],
        ["forced"] * 10 + ["batch-limit"],
        False,
    ),
    # ... and to >= 35
    (
        "warning-20-clamped-5x",
        "5",
        0.60,
        0,
        ["--disk-space-warning-level-ratio", "20"],
        ["space", "forced"],
        ["forced"] * 10 + ["batch-limit"],
        True,
    ),
    # deleteFileBatchMax (5.x): the per-pass limit; below 1 means 1
    (
        "batch-3",
        "5",
        0.87,
        0,
        ["--delete-file-batch-max", "3"],
        ["space", "forced"],
        ["forced"] * 3 + ["batch-limit"],
        False,
    ),
    ("batch-0", "5", 0.87, 0, ["--delete-file-batch-max", "0"], ["space", "forced"], ["forced", "batch-limit"], False),
    # manual delete (mqadmin deleteExpiredCommitLog): any hour, expired files only
    ("manual", "5", 0.60, 4, ["--now"], ["manual"], ["age"] * 4 + ["not-expired"], False),
]


@pytest.mark.parametrize("rid,version,target,old,opts,triggers,whys,disk_full", RULES, ids=[r[0] for r in RULES])
def test_rules(tmpfs, rid, version, target, old, opts, triggers, whys, disk_full):
    """Each rule's first pass on a disk filled to `target` (rounded up to the percent, as the broker reads
    it): which rule fires, which commitlog files go and why, whether the disk is marked full. Defaults
    otherwise: deleteWhen 04 (not the hour, 03), fileReservedTime 48 h."""
    store = make_store(tmpfs, [OLD] * old + [YOUNG] * (40 - old), ballast_for(target))
    base = ["--file-reserved-time", "48"] + ([] if "--delete-when" in opts else ["--delete-when", "04"])
    got = clean_json(store, *base, *opts, version=version)
    p = got["passes"][0]
    assert p["commitLogRatio"] == math.ceil(100 * math.ceil(target * PAGES) / PAGES) / 100
    fired = [
        k
        for k, on in (
            ("time", p["timeUp"]),
            ("space", p["spaceToDelete"]),
            ("forced", p["cleanAtOnce"]),
            ("manual", p["manual"]),
        )
        if on
    ]
    assert fired == triggers
    rows = [r for r in got["files"] if r["pass"] == 1 and r["kind"] == "commitlog"]
    assert [r["why"] for r in rows] == whys
    deleted = [r["file"] for r in rows if r["action"] == "delete"]
    assert deleted == [f"commitlog/{i * CL_SIZE:020d}" for i in range(len(deleted))]  # oldest first, no holes
    assert p["diskFull"] == disk_full
    check = clean(store, *base, *opts, "--check", version=version)
    assert check.exit_code == (1 if any(r["action"] == "delete" for r in got["files"]) else 0), check.stderr
    if disk_full:
        assert "rejects writes" in check.stderr


def test_ratio_is_read_like_java(tmpfs):
    """used = total - free; ceil(100 used / (used + usable)) / 100, compared with a strict '>'."""
    store = make_store(tmpfs, [YOUNG] * 40, 6440 - USED_AFTER_COPY)  # 6440 / 8192 = 78.61% -> 0.79
    assert clean_json(store)["passes"][0]["commitLogRatio"] == 0.79
    (tmpfs / "ballast.bin").unlink()
    with open(tmpfs / "ballast.bin", "wb") as b:  # exactly 75% -> 0.75, not > 0.75: no space rule
        b.write(bytes((6144 - USED_AFTER_COPY) * 4096))
    p = clean_json(store)["passes"][0]
    assert p["commitLogRatio"] == 0.75 and p["spaceToDelete"] is False


def test_multi_pass_simulates_freed_space(tmpfs):
    """A plan-only run of several passes credits each planned deletion with its blocks, so the space rule
    ends where the applied run ends (F2 above: 0.89, 0.86, 0.84)."""
    store = make_store(tmpfs, [YOUNG] * 40, ballast_for(0.88))
    plan = clean_json(store, "--passes", "3", "--file-reserved-time", "48")
    assert [p["commitLogRatio"] for p in plan["passes"]] == [0.89, 0.86, 0.84]
    assert listing(store) == ORIGINAL
    applied = clean_json(store, "--passes", "3", "--file-reserved-time", "48", "--apply")
    assert [p["commitLogRatio"] for p in applied["passes"]] == [0.89, 0.86, 0.84]
    assert [p["deleted"] for p in applied["passes"]] == [p["deleted"] for p in plan["passes"]]


def test_disk_usage_asks_what_if_the_disk_were_that_full(tmpfs):
    """--disk-usage 0.9 on a near-empty tmpfs: the plan measures 0.90 and forces the oldest 10 files out, as the
    applied run on a disk really that full does; --apply refuses the what-if."""
    store = make_store(tmpfs, [YOUNG] * 40)
    res = clean(store, "--disk-usage", "0.9", "--file-reserved-time", "48", "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert [r["file"] for r in jsonl(res.stdout) if r["action"] == "delete" and r["kind"] == "commitlog"] == [
        f"commitlog/{n}" for n in ORIGINAL["commitlog"][:10]
    ]
    lines = res.stderr.splitlines()
    assert lines[1] == (
        "pass 1 at 2026-11-22T03:13:00.000+00:00 (hour 3): commitlog disk 0.90; "
        "space, forced; deletes 10 commitlog, 0 consumequeue, 2 index; min offset 655360"
    )
    assert lines[-1] == "note: what if: every disk taken as 0.90 full (--disk-usage), not as measured"
    assert listing(store) == ORIGINAL
    really = make_store(tmpfs, [YOUNG] * 40, ballast_for(0.90))
    applied = clean_json(really, "--file-reserved-time", "48", "--apply")
    assert applied["passes"][0]["commitLogRatio"] > 0.85  # forcibly, as the what-if said
    assert [names(p["deleted"]["commitlog"]) for p in applied["passes"]] == [ORIGINAL["commitlog"][:10]]
    res = clean(really, "--disk-usage", "0.9", "--apply")
    assert (res.exit_code, res.stderr) == (
        2,
        "rmqctl: --disk-usage is a what-if for a plan: a ratio from 0 to 1, without --apply\n",
    )


def test_a_plan_on_a_terminal_is_one_line_per_file(tmpfs):
    """The table format: a title, a header, then one line per file the pass looked at, whatever the width of
    the `detail` column."""
    store = make_store(tmpfs, [OLD] * 40)
    rows = jsonl(clean(store, "--delete-when", "03", "--format", "jsonl").stdout)
    lines = clean(store, "--delete-when", "03", "--format", "table").stdout.splitlines()
    assert len(lines) == len(rows) + 2 and lines[0] == "clean plan"
    assert lines[1].split() == ["pass", "kind", "file", "action", "why", "detail"]
    assert lines[2].split()[:5] == ["1", "commitlog", "commitlog/00000000000000000000", "delete", "age"]


def test_an_applied_run_gives_each_pass_the_time_it_ran(tmpfs):
    """Without --at, an applied run's passes run one after the other at once: each is stamped with the time it
    ran, not the plan's 10-second steps of the broker's timer."""
    store = make_store(tmpfs, [YOUNG] * 40)
    before = dt.datetime.now().astimezone()
    res = run(
        "clean", "--store", store, "--broker-config", CONF, "--passes", "3", "--apply", "--verbose", "--format", "json"
    )
    after = dt.datetime.now().astimezone()
    assert res.exit_code == 0, res.stderr
    stamps = [dt.datetime.fromisoformat(p["at"]) for p in json.loads(res.stdout)["passes"]]
    assert len(stamps) == 3 and all(before <= t <= after + dt.timedelta(milliseconds=1) for t in stamps)
    assert stamps == sorted(stamps)


def test_until_ok_runs_until_a_pass_deletes_nothing(tmpfs):
    store = make_store(tmpfs, [OLD] * 40, ballast_for(0.80))
    got = clean_json(store, "--until-ok", "--file-reserved-time", "48", "--apply")
    counts = [len(p["deleted"]["commitlog"]) for p in got["passes"]]
    # space rule until the disk reads <= 0.75, then no rule fires and the run stops
    assert counts[-1] == 0 and all(counts[:-1]) and got["passes"][-1]["spaceToDelete"] is False
    assert got["passes"][-2]["commitLogRatio"] > 0.75
    assert_loadable(store)


def test_consumequeue_min_offset_49_vs_5x(tmpfs):
    """With every commitlog file but the last gone, TopicTest/3 has no entry at or above the minimum: 4.9
    leaves its min offset where it was (121, F4 pass 4), 5.x moves it to the end of the queue."""
    t, store, args, at = scenario_setup(tmpfs, "F4-multi-hour")
    v4 = clean_json(store, *args, version="4", at=at)
    v5 = clean_json(store, *args, version="5", at=at)
    assert v4["cqMinOffsetsAfter"]["TopicTest/3"] == 121
    end_of_queue = 1 + max(q for (topic, qid, q) in ORIGINAL_CQ if (topic, qid) == ("TopicTest", 3))
    assert v5["cqMinOffsetsAfter"]["TopicTest/3"] == end_of_queue
    assert {k: v for k, v in v5["cqMinOffsetsAfter"].items() if k != "TopicTest/3"} == {
        k: v for k, v in v4["cqMinOffsetsAfter"].items() if k != "TopicTest/3"
    }
    assert [p["deleted"] for p in v5["passes"]] == [p["deleted"] for p in v4["passes"]]


def test_last_files_are_never_deleted(tmpfs):
    """Forced at 93% then by age, everything goes but the last commitlog file, each queue's last file (though
    all its entries are below the minimum) and the last index file; rows say so."""
    store = make_store(tmpfs, [OLD] * 40, ballast_for(0.93))
    got = clean_json(store, "--until-ok", "--disk-max-used-space-ratio", "10", "--apply")
    left = listing(store)
    assert left["commitlog"] == ORIGINAL["commitlog"][-1:] and left["index"] == ORIGINAL["index"][-1:]
    last_per_queue = {}
    for rel in ORIGINAL["consumequeue"]:
        last_per_queue[rel.rsplit("/", 1)[0]] = rel
    assert left["consumequeue"] == sorted(last_per_queue.values())
    # the last index file holds entries up to the end, so it is not even a candidate
    assert {r["kind"] for r in got["files"] if r["why"] == "last-file"} == {"commitlog", "consumequeue"}
    assert got["passes"][0]["diskFull"] and not got["passes"][-1]["diskFull"]
    assert not any("WARNING" in line for line in got["remaining"])
    assert_loadable(store)


# -- 3. deleteWhen parsing ------------------------------------------------------------------------------------


def test_delete_when_with_a_space_is_a_configuration_error(tmpfs):
    """ "04; 05": Integer.parseInt(" 05") throws, so the broker's commitlog cleaner never deletes anything
    (at 03:00 the first token does not match and the second throws). Reported, exit 2; --apply refuses."""
    store = make_store(tmpfs, [OLD] * 40, ballast_for(0.93))
    res = clean(store, "--delete-when", "04; 05", "--format", "jsonl")
    assert res.exit_code == 2
    assert "deleteWhen" in res.stderr and '" 05"' in res.stderr and jsonl(res.stdout) == []
    assert "disk not measured" in res.stderr  # the exception comes before the space check: even 93% is left
    res = clean(store, "--delete-when", "04; 05", "--apply")
    assert res.exit_code == 2 and "deleteWhen" in res.stderr
    assert listing(store) == ORIGINAL
    conf = tmpfs.parent / "broker.conf"
    conf.write_text(CONF.read_text().replace("deleteWhen=04", "deleteWhen=04; 05"))
    res = run("clean", "--store", store, "--broker-config", conf, "--at", REF.isoformat())
    assert res.exit_code == 2 and "deleteWhen" in res.stderr


@pytest.mark.parametrize(
    "text,value", [("04", 4), ("+4", 4), ("-0", 0), ("\u0660\u0664", 4), ("2147483647", 2147483647)]
)
def test_java_parse_int_accepts(text, value):
    assert java_parse_int(text) == value


@pytest.mark.parametrize("text", [" 05", "05 ", "", "+", "4_0", "0x4", "2147483648", "4.0", "\U0001d7d2"])
def test_java_parse_int_rejects(text):
    with pytest.raises(ValueError, match="For input string"):
        java_parse_int(text)


@pytest.mark.parametrize(
    "when,hour,expected",
    [
        ("04", 4, True),
        ("04", 5, False),
        ("04;05", 5, True),
        ("4", 4, True),
        ("04;", 4, True),
        (";", 4, False),
        ("04; 05", 4, True),  # the first token matches before the bad one is parsed
        ("04; 05", 5, DeleteWhenError),
        ("", 4, DeleteWhenError),
        ("04;;05", 5, DeleteWhenError),
    ],
)
def test_is_time_to_do(when, hour, expected):
    if expected is DeleteWhenError:
        with pytest.raises(DeleteWhenError):
            is_time_to_do(when, hour)
    else:
        assert is_time_to_do(when, hour) is expected


def test_delete_when_uses_the_local_hour_of_at(tmpfs):
    """--at's offset is the broker's local zone: 03:13Z is 05:13 at +02:00."""
    store = make_store(tmpfs, [OLD] * 40)
    at = REF.astimezone(dt.timezone(dt.timedelta(hours=2)))
    p = clean_json(store, "--delete-when", "05", at=at)["passes"][0]
    assert p["hour"] == 5 and p["timeUp"] is True
    p = clean_json(store, "--delete-when", "03", at=at)["passes"][0]
    assert p["timeUp"] is False


# -- 4. isSpaceToDelete on two file systems (pure) ------------------------------------------------------------


def disk(ratio):
    return DiskUsage("/x", ratio)


@pytest.mark.parametrize(
    "version,commitlog,logics,spacefull,immediately,full",
    [
        # 4.9 returns as soon as the commitlog path is over diskMaxUsedSpaceRatio; the CQ path is not looked at
        ("4", 0.80, 0.95, True, False, False),
        # 5.x looks at the CQ path before diskMaxUsedSpaceRatio: its 0.95 marks the disk full and forces
        ("5", 0.80, 0.95, True, True, True),
        ("4", 0.50, 0.87, True, True, False),
        ("5", 0.50, 0.87, True, True, False),
        ("4", 0.50, 0.60, False, False, False),
        ("5", -1.0, 0.60, True, False, False),  # a commitlog path that cannot be measured reads -1: space rule
    ],
)
def test_space_check_paths(version, commitlog, logics, spacefull, immediately, full):
    s = CleanSettings(version=int(version))
    got = space_check(s, [disk(commitlog)], lambda: disk(logics), disk_full=False)
    assert (got.spaceToDelete, got.cleanImmediately, got.diskFull) == (spacefull, immediately, full)


def test_space_check_uses_the_least_used_commitlog_dir():
    s = CleanSettings(version=5)
    got = space_check(s, [disk(0.95), disk(0.50)], lambda: disk(0.50), disk_full=False)
    assert got.commitLogRatio == 0.50 and not got.spaceToDelete


@pytest.mark.parametrize(
    "used,usable,expected",
    [(0, 100, 0.0), (7209, 983, 0.89), (6390, 1802, 0.79), (6144, 2048, 0.75), (1, 999_999, 0.01), (8192, 0, 1.0)],
)
def test_java_disk_ratio(used, usable, expected):
    assert java_disk_ratio(used + usable + 7, usable + 7, usable) == expected  # free > usable: reserved blocks


# -- 5. applying safely -----------------------------------------------------------------------------------------


def test_refuses_while_the_broker_holds_the_lock(tmpfs):
    """Another process holds the broker's fcntl lock on byte 0 of {store}/lock: --apply exits 2 and deletes
    nothing; the plan still prints, naming the holder."""
    store = make_store(tmpfs, [OLD] * 40)
    with held_lock(store) as holder:
        res = clean(store, "--delete-when", "03", "--apply")
        assert res.exit_code == 2 and "locked" in res.stderr and "Traceback" not in res.stderr
        assert listing(store) == ORIGINAL
        res = clean(store, "--delete-when", "03", "--format", "jsonl")
        assert res.exit_code == 0 and f"held by pid {holder.pid}" in res.stderr
        assert len([r for r in jsonl(res.stdout) if r["action"] == "delete"]) == 12
    assert clean(store, "--delete-when", "03", "--apply").exit_code == 0


def test_writing_needs_an_explicit_store(tmpfs, monkeypatch):
    monkeypatch.delenv("ROCKETMQ_STORE", raising=False)
    monkeypatch.setenv("HOME", str(tmpfs))
    make_store(tmpfs, [OLD] * 40)
    res = run("clean", "--broker-config", CONF, "--apply")
    assert res.exit_code == 2 and "--store" in res.stderr


def test_never_follows_a_symlink_out_of_the_store(tmpfs):
    """A commitlog file that is a symlink to a file elsewhere stops the scan and is left alone."""
    store = make_store(tmpfs, [OLD] * 40)
    outside = tmpfs / "outside"
    outside.mkdir()
    third = store / "commitlog" / f"{2 * CL_SIZE:020d}"
    shutil.move(third, outside / third.name)
    third.symlink_to(outside / third.name)
    applied = clean(store, "--delete-when", "03", "--until-ok", "--apply", "--format", "json")
    got = json.loads(applied.stdout)
    assert [r["why"] for r in got["files"] if r["kind"] == "commitlog"] == ["age", "age", "unsafe-path", "unsafe-path"]
    assert (outside / third.name).exists() and third.is_symlink()
    # the broker would unlink the link and go on: a cron --apply or --check that freed nothing exited 0 in silence
    said = f"rmqctl: clean stops at 1 file(s) it does not delete, commitlog/{third.name} first: a symlink"
    assert applied.exit_code == 2 and said in applied.stderr
    check = clean(store, "--delete-when", "03", "--check", "--quiet")
    assert check.exit_code == 2 and check.stderr.startswith(said) and check.stdout == ""


def test_never_deletes_through_a_symlinked_directory(tmpfs):
    """A consumequeue directory that resolves outside the store keeps its files (its scan stops at once);
    the other queues are cleaned as usual."""
    store = make_store(tmpfs, [OLD] * 40)
    qdir = store / "consumequeue" / "TopicTest" / "0"
    shutil.move(qdir, tmpfs / "q0")
    qdir.symlink_to(tmpfs / "q0")
    applied = clean(store, "--delete-when", "03", "--until-ok", "--apply", "--format", "json")
    got = json.loads(applied.stdout)
    assert applied.exit_code == 2 and "consumequeue/TopicTest/0/00000000000000000000 first" in applied.stderr
    assert sorted(p.name for p in (tmpfs / "q0").iterdir()) == [f"{i * 1280:020d}" for i in range(3)]
    unsafe = {r["file"] for r in got["files"] if r["why"] == "unsafe-path"}
    assert unsafe == {"consumequeue/TopicTest/0/00000000000000000000"}
    others = [r for r in got["files"] if r["kind"] == "consumequeue" and r["action"] == "delete"]
    assert len(others) == 22 and not any("TopicTest/0/" in r["file"] for r in others)


def test_log_has_one_line_per_deletion(tmpfs, tmp_path):
    store = make_store(tmpfs, [OLD] * 12 + [YOUNG] * 28)
    log = tmp_path / "clean.log"
    log.write_text("earlier line\n")
    got = clean_json(store, "--delete-when", "03", "--until-ok", "--apply", "--log", log)
    lines = log.read_text().splitlines()
    deleted = [r for r in got["files"] if r["action"] == "delete"]
    assert lines[0] == "earlier line" and len(lines) == 1 + len(deleted)
    assert all(f" deleted {d['file']} why={d['why']} " in line for d, line in zip(deleted, lines[1:]))


def test_cron_cases(tmpfs, tmp_path, monkeypatch):
    """What cron sees: --check exits 1 only when a pass would delete something (not for the whole deleteWhen
    hour), 0 when nothing goes and 2 on a config error; --apply with nothing to do prints nothing unless
    --verbose; --quiet prints nothing; --log names the store by its absolute path even when given relative."""
    store = make_store(tmpfs, [YOUNG] * 40)
    in_the_hour = ["--delete-when", "03", "--format", "jsonl"]  # REF is hour 3: the time rule fires
    nothing = clean(store, *in_the_hour, "--check")
    assert nothing.exit_code == 0 and "; time; deletes 0 commitlog," in nothing.stderr  # fires, nothing goes
    assert clean(store, "--delete-when", "04; 05", "--check").exit_code == 2
    quiet_apply = clean(store, *in_the_hour, "--apply")
    assert (quiet_apply.exit_code, quiet_apply.stdout, quiet_apply.stderr) == (0, "", "")
    verbose = clean(store, *in_the_hour, "--apply", "--verbose")
    assert verbose.exit_code == 0 and "nothing else goes" in verbose.stderr
    make_store(tmpfs, [OLD] * 3 + [YOUNG] * 37)
    fires = clean(store, *in_the_hour, "--check")
    assert fires.exit_code == 1 and fires.stdout
    quiet = clean(store, *in_the_hour, "--check", "--quiet")
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (1, "", "")
    monkeypatch.chdir(tmpfs)
    log = tmp_path / "clean.log"
    applied = run(
        "clean",
        "--store",
        "store",
        "--broker-config",
        CONF,
        "--at",
        REF.isoformat(),
        *in_the_hour,
        "--apply",
        "--quiet",
        "--log",
        log,
    )
    assert (applied.exit_code, applied.stdout, applied.stderr) == (0, "", "")
    lines = log.read_text().splitlines()
    assert len(lines) == 3 and all(f" store={store} " in line for line in lines)


def test_sigkill_during_apply_leaves_a_loadable_store(tmpfs, tmp_path):
    """Kill `clean --apply` before its n-th filesystem mutation (test_rebuild's counted kill: n drawn with a seeded
    generator from the mutations of an uninterrupted run, so the same kills on a busy machine): the store loads
    (contiguous files, only files wholly below the new minimum gone or lingering), the log names every deletion
    but the one in flight, which is either not begun ("old": as many files gone as logged) or durable before its
    log line ("new": one more), both seen over the kill points, and a second run finishes exactly where an
    uninterrupted run ends (F4: 1 + 12 + 1 files)."""
    from test_rebuild import cli_main, mutation_count, run_killed_at

    t = json.loads((TRUTH / "F4-multi-hour.json").read_text())
    final = [p["filesAfter"] for p in t["passes"] if isinstance(p["filesAfter"], dict)][-1]
    expected = {k: sorted(final[k]) for k in ("commitlog", "consumequeue", "index")}

    def argv(store: Path, log: Path) -> list[str]:
        return [
            "clean",
            "--store",
            str(store),
            "--broker-config",
            str(CONF),
            "--rocketmq-version",
            "4",
            "--delete-when",
            "03",
            "--file-reserved-time",
            "48",
            "--until-ok",
            "--apply",
            "--at",
            REF.isoformat(),
            "--log",
            str(log),
            "--format",
            "jsonl",
            "--delete-interval",
            "4",
        ]

    store = make_store(tmpfs, [OLD] * 40)
    total, _ = mutation_count(lambda: cli_main(argv(store, tmp_path / "whole.log")))
    assert len((tmp_path / "whole.log").read_text().splitlines()) == 74 and total > 74
    seed = 20240601
    outcomes = []
    for n in sorted(random.Random(seed).sample(range(1, total + 1), 8)):
        store = make_store(tmpfs, [OLD] * 40)
        log = tmp_path / f"kill-{n}.log"
        assert run_killed_at(n, lambda: cli_main(argv(store, log))), (n, seed)
        assert_loadable(store)
        done = len(log.read_text().splitlines()) if log.exists() else 0
        gone = sum(len(ORIGINAL[k]) - len(v) for k, v in listing(store).items())
        assert gone in (done, done + 1), (n, seed, done, gone)
        outcomes.append("old" if gone == done else "new")
        res = clean(store, "--delete-when", "03", "--file-reserved-time", "48", "--until-ok", "--apply", version="4")
        assert res.exit_code == 0, res.stderr
        assert listing(store) == expected
        assert_loadable(store)
    assert set(outcomes) == {"old", "new"}, f"kill points drawn with seed {seed} gave only {outcomes}"


# -- 6. consumers ----------------------------------------------------------------------------------------------


def first_unit_in_file(topic: str, qid: int, file_index: int) -> int:
    """The queue offset of the first message of topic/qid stored in commitlog file `file_index`."""
    lo, hi = file_index * CL_SIZE, (file_index + 1) * CL_SIZE
    return min(q for (t, i, q), p in ORIGINAL_CQ.items() if (t, i) == (topic, qid) and lo <= p < hi)


def write_consumer_offsets(store: Path, offsets: dict[str, dict[int, int]]):
    """As fastjson writes it: integer map keys unquoted."""
    inner = ",".join(f'"{k}":{{' + ",".join(f"{q}:{o}" for q, o in v.items()) + "}" for k, v in offsets.items())
    (store / "config" / "consumerOffset.json").write_text('{"offsetTable":{' + inner + "}}")


def test_unconsumed_messages_reported_and_protected(tmpfs):
    """cg1 has consumed TopicTest up to its messages in commitlog file 5 on queue 2 (and everything on the
    other queues); cg2 all of OrderTopic. Without protection the report counts what the run deletes per
    group/topic/queue; with --protect-unconsumed exactly the files holding unconsumed messages stay."""
    store = make_store(tmpfs, [OLD] * 40)
    max_q = {
        key: 1 + max(q for (t, i, q) in ORIGINAL_CQ if (t, i) == key) for key in {(t, i) for (t, i, _) in ORIGINAL_CQ}
    }
    committed = first_unit_in_file("TopicTest", 2, 5)
    write_consumer_offsets(
        store,
        {
            "TopicTest@cg1": {
                0: max_q[("TopicTest", 0)],
                1: max_q[("TopicTest", 1)],
                2: committed,
                3: max_q[("TopicTest", 3)],
            },
            "OrderTopic@cg2": {q: max_q[("OrderTopic", q)] for q in range(4)},
        },
    )
    args = ["--delete-when", "03", "--until-ok"]
    plain = clean_json(store, *args)
    report = {(u["group"], u["topic"], u["queueId"]): u for u in plain["unconsumed"]}
    lost = [
        q
        for (t, i, q), p in ORIGINAL_CQ.items()
        if (t, i) == ("TopicTest", 2) and q >= committed and p < plain["minPhyOffsetAfter"]
    ]
    u = report[("cg1", "TopicTest", 2)]
    assert u["deleted"] == len(lost) > 0 and u["firstDeletedQueueOffset"] == committed
    assert all(v["deleted"] == 0 for k, v in report.items() if k != ("cg1", "TopicTest", 2))
    res = clean(store, *args, "--format", "jsonl")
    assert f"group cg1 TopicTest/2: {len(lost)} of" in res.stderr

    got = clean_json(store, *args, "--protect-unconsumed", "--apply")
    rows = [r for r in got["files"] if r["kind"] == "commitlog"]
    # pass 1 deletes files 0..4 and stops at file 5; pass 2 stops there at once and ends the run
    assert [r["why"] for r in rows] == ["age"] * 5 + ["protected"] * 2 and len(got["passes"]) == 2
    protected = [r for r in rows if r["why"] == "protected"]
    in_file5 = [
        q
        for (t, i, q), p in ORIGINAL_CQ.items()
        if (t, i) == ("TopicTest", 2) and q >= committed and 5 * CL_SIZE <= p < 6 * CL_SIZE
    ]
    assert protected and all(
        r["file"] == f"commitlog/{5 * CL_SIZE:020d}" and r["unconsumed"] == len(in_file5) for r in protected
    )
    assert listing(store)["commitlog"] == ORIGINAL["commitlog"][5:]
    assert all(u["deleted"] == 0 for u in got["unconsumed"])
    assert_loadable(store)


@pytest.mark.tmpfs
def test_clean_of_a_crashed_store_keeps_the_last_file_holding_data(tmp_path, java_oracle):
    """d-crashed was copied while its broker ran: after the last file holding data lies the all-zero next file
    the broker pre-allocated. The broker's load removes that file (truncateDirtyFiles) before its cleaner runs,
    so the last file the cleaner never deletes is the one holding data. With every file but the pre-allocated
    one expired, clean deletes all but that file, and RocketMQ recovers its messages."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        root = copy_store("d-crashed", mnt)
        files = sorted((root / "commitlog").iterdir())
        for i, f in enumerate(files):
            t = time.time() - (100 if i < len(files) - 1 else 1) * 3600
            os.utime(f, (t, t))
        res = run(
            "clean", "--store", root, "--broker-config", broker_conf("d-crashed"), "--now", "--until-ok", "--apply"
        )
        assert res.exit_code == 0, res.stderr
        assert sorted((root / "commitlog").iterdir()) == files[-2:]
        _, units, summary = oracle.served(java_oracle, 4, root, broker_conf("d-crashed"), tmp_path / "oracle")
        start = int(files[-2].name)
        kept = [m for m in truth("d-crashed", "truth-recovered-messages.jsonl") if m["commitLogOffset"] >= start]
        assert (summary["minPhyOffset"], summary["messageCount"]) == (start, len(kept))
        assert sorted(u[3] for u in units if u[5]) == sorted(m["commitLogOffset"] for m in kept)


# -- what the broker's load makes of a queue's files (review) --------------------------------------------------


def old_copy(tmp_path) -> Path:
    """a-basic with every commitlog file 100 hours old."""
    store = copy_store("a-basic", tmp_path / "s")
    for f in (store / "commitlog").iterdir():
        t = (REF - dt.timedelta(hours=100)).timestamp()
        os.utime(f, (t, t))
    return store


def planned(store: Path, version: str) -> tuple[dict, list[str]]:
    """The plan of clean --now --until-ok, and the files it deletes."""
    d = clean_json(store, "--now", "--until-ok", version=version)
    return d, [f["file"] for f in d["files"] if f["action"] == "delete"]


def test_a_zero_length_last_queue_file_is_no_queues_last_file(tmp_path):
    """A failed creation on a full disk leaves an empty next file: 5.1.3+ deletes it at load, so the file
    before it stays the queue's last, which no cleaner deletes (its 54 entries name live records); 4.x does not
    start on it, so clean plans nothing and says why."""
    store = old_copy(tmp_path)
    queue = store / "consumequeue" / "TopicTest" / "0"
    (queue / "00000000000000003840").write_bytes(b"")
    d, deleted = planned(store, "5.5")
    assert "consumequeue/TopicTest/0/00000000000000001280" in deleted
    assert "consumequeue/TopicTest/0/00000000000000002560" not in deleted
    assert any("TopicTest/0: a zero-length last file, which the broker deletes at load" in n for n in d["notes"])
    d, again = planned(store, "5")  # 5.0-5.1.2 refuse to start on it: said, and planned as 5.1.3+ loads it
    assert again == deleted and any("5.0-5.1.2 refuse to start" in n for n in d["notes"])
    res = clean(store, "--now", "--until-ok", version="4")
    assert res.exit_code == 2 and "00000000000000003840" in res.stderr and "4.x refuses" in res.stderr
    (queue / "00000000000000001280").write_bytes(bytes(100))  # a file of another length: no version loads it
    res = clean(store, "--now", "--until-ok", version="5.5")
    assert res.exit_code == 2 and "00000000000000001280: the broker's load of this queue fails: 100 bytes" in res.stderr


def test_a_queue_directory_named_as_no_queue_id_is_never_cleaned(tmp_path):
    """Integer.parseInt reads "03" as 3, but the broker opens queue 3 at TopicTest/3: it never reads or deletes
    files under TopicTest/03, and neither does clean; verify says so."""
    store = old_copy(tmp_path)
    shutil.copytree(store / "consumequeue" / "TopicTest" / "0", store / "consumequeue" / "TopicTest" / "03")
    _, deleted = planned(store, "5")
    assert deleted and not [p for p in deleted if "/03/" in p]
    res = run("verify", "--store", store, "--broker-config", CONF, "--format", "jsonl", "--only", "consumequeue")
    [unread] = [f for f in jsonl(res.stdout) if f["kind"] == "queue-dir-unread"]
    assert unread["file"] == "consumequeue/TopicTest/03" and "from TopicTest/3" in unread["detail"]


def test_delete_when_with_a_bad_token_still_fires_at_the_hour_before_it(tmp_path):
    """UtilAll.isItTimeToDo returns at the first token equal to the hour before parsing the next: "03; 04" fires
    at hour 03 (and --apply deletes), and throws at every other hour."""
    store = old_copy(tmp_path)
    res = clean(store, "--delete-when", "03; 04", "--format", "json")  # (exit 2: a configuration error)
    d = json.loads(res.stdout)
    assert d["passes"][0]["timeUp"] is True and [f for f in d["files"] if f["action"] == "delete"]
    assert "every hour but 03" in d["configError"]
    assert clean(store, "--delete-when", "03; 04", "--apply").exit_code == 0
    res = clean(store, "--delete-when", "03; 04", "--apply", at=REF + dt.timedelta(hours=1))
    assert res.exit_code == 2 and "before any token names hour 4" in res.stderr


def test_a_hard_linked_file_frees_nothing_in_the_plan(tmpfs):
    """The broker measures the disk after every deletion: a commitlog file also linked elsewhere (a backup)
    frees nothing, so the forced cleanup goes on; the plan credits it nothing either."""
    store = make_store(tmpfs, [1.0] * 40, ballast_for(0.89))
    _, alone = planned(store, "5")
    backup = tmpfs / "backup"
    backup.mkdir()
    for f in (store / "commitlog").iterdir():
        os.link(f, backup / f.name)
    _, linked = planned(store, "5")
    assert alone and len(linked) > len(alone)


def test_the_timer_cleaner_deletes_timerlog_files_below_the_min_offset(tmp_path):
    """TimerMessageStore's cleaner (5.x, every 30 s): a timerlog file but the last whose last unit's offsetPy
    is below the commitlog's new min offset goes (deleteExpiredFileByOffsetForTimerLog; RocketMQ 5.3.3's own
    cleaner deleted this one in the review's harness); a 4.x broker has no timer."""
    store = copy_store("f-timer5", tmp_path / "s")
    for f in (store / "commitlog").iterdir():
        t = (REF - dt.timedelta(hours=100)).timestamp()
        os.utime(f, (t, t))
    res = run(
        "clean",
        "--store",
        store,
        "--broker-config",
        broker_conf("f-timer5"),
        "--now",
        "--until-ok",
        "--at",
        REF.isoformat(),
        "--format",
        "json",
        "--apply",
    )
    d = json.loads(res.stdout)
    timer = [(f["file"], f["action"]) for f in d["files"] if f["kind"] == "timerlog"]
    assert res.exit_code == 0 and timer == [("timerlog/00000000000000000000", "delete")]
    assert sorted(p.name for p in (store / "timerlog").iterdir()) == ["00000000000000008192"]
    assert "offsetPy" in [f for f in d["files"] if f["kind"] == "timerlog"][0]


def test_a_file_that_expires_while_the_pass_sleeps_between_deletions_goes_in_it(tmpfs):
    """deleteExpiredFileByTime reads the clock at each file and sleeps deleteCommitLogFilesInterval (100 ms)
    after each deletion: a file 250 ms short of fileReservedTime at the pass's start, after four deletions, is
    old enough when its turn comes."""
    short = 72 - 0.25 / 3600
    store = make_store(tmpfs, [100.0] * 4 + [short] + [1.0] * 35)
    _, deleted = planned(store, "5")
    assert deleted[:5] == [f"commitlog/{k * CL_SIZE:020d}" for k in range(5)]
    assert f"commitlog/{5 * CL_SIZE:020d}" not in deleted


def test_an_index_file_shorter_than_its_header_reads_as_zeros(tmp_path):
    """The broker maps an index file READ_WRITE at its full size, which extends a short one with zeros: its
    endPhyOffset is 0 (the newest file here, so never deleted) and the cleanup goes on around it."""
    store = old_copy(tmp_path)
    (store / "index" / "20991231235959999").write_bytes(b"")
    d, deleted = planned(store, "5")
    assert [p for p in deleted if p.startswith("index/")] and "index/20991231235959999" not in deleted
    assert any("20991231235959999: shorter than an index header" in n for n in d["notes"])


@pytest.mark.parametrize("version, topic_test_0", [("4", 141), ("5", 180)])
def test_a_zero_file_after_one_ending_in_a_blank_is_the_last_file(tmp_path, java_oracle, version, topic_test_0):
    """The last file holding data ends in its BLANK and the next, all zero, is there (a crash right after the
    roll): the recovery's walk moves on into that file and stops at its start, so truncateDirtyFiles keeps it and
    it is the last file the cleaner never deletes. rmqctl took the BLANK-ended file for the last and kept it, with
    other minimum offsets (the clean review's harness ran RocketMQ's own clean services on this store: every
    older file goes; TopicTest/0's min 141 by 4.9.7's rule, 180 by 5.3.3's). RocketMQ 4.9.7's load says where
    the commitlog ends: the zero file's start, which `info` now says too."""
    store = copy_store("a-basic", tmp_path / "a")
    last = sorted((store / "commitlog").iterdir())[-1]
    with open(last, "r+b") as f:
        f.write(bytes(CL_SIZE))
    for unit_file in (p for p in (store / "consumequeue").rglob("*") if p.is_file()):
        data = bytearray(unit_file.read_bytes())
        for at in range(0, len(data), 20):
            if int.from_bytes(data[at : at + 8], "big") >= int(last.name):
                data[at : at + 20] = bytes(20)  # the units of the messages that file held: never written
        unit_file.write_bytes(bytes(data))
    for f in (store / "commitlog").iterdir():
        t = (REF - dt.timedelta(hours=100)).timestamp()
        os.utime(f, (t, t))
    read = oracle.served(java_oracle, 4, store, CONF, tmp_path / "out")[2]
    res = run("info", "--store", store, "--broker-config", CONF, "--format", "json")
    assert res.exit_code == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["commitlog"]["maxOffset"] == read["maxPhyOffset"] == int(last.name)
    got = clean_json(store, "--now", "--until-ok", "--apply", version=version)
    assert sorted(p.name for p in (store / "commitlog").iterdir()) == [last.name]
    assert got["minPhyOffsetAfter"] == int(last.name) and got["cqMinOffsetsAfter"]["TopicTest/0"] == topic_test_0
