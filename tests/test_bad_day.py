"""The bad day: wrong targets, damage the broker keeps, short files, a verify that can go green again, and
the small answers scripts branch on (issue 11). Every case runs on a copy of a real fixture store."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, broker_conf, jsonl, run, truth

A_CONF = broker_conf("a-basic")


def one_line_exit_2(res, *needles) -> str:
    assert res.exit_code == 2, (res.stdout, res.stderr)
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert all(n in lines[0] for n in needles), lines[0]
    return lines[0]


# -- 1. something that is not a store never passes as sound ------------------------------------------------


def not_stores(tmp_path: Path, store: Path) -> dict[str, Path]:
    empty = tmp_path / "empty"
    empty.mkdir()
    etc_like = tmp_path / "etc"
    etc_like.mkdir()
    (etc_like / "hosts").write_text("127.0.0.1 localhost\n")
    (etc_like / "ssl").mkdir()
    bare = tmp_path / "bare"  # a commitlog directory and nothing a broker's start leaves
    (bare / "commitlog").mkdir(parents=True)
    return {"empty": empty, "etc": etc_like, "commitlog": store / "commitlog", "bare": bare}


@pytest.mark.parametrize("command", [["verify", "--quiet"], ["verify"], ["info"], ["clean", "--check"],
                                     ["dump", "commitlog"], ["repair", "--dry-run"]])
def test_a_directory_that_is_not_a_store_is_exit_2(tmp_path, store_copy, command):
    store = store_copy("a-basic")
    for name, path in not_stores(tmp_path, store).items():
        line = one_line_exit_2(run(*command, "--store", path), "not a RocketMQ store root")
        if name == "commitlog":
            assert f"the store root is {store}" in line
        elif name == "bare":
            assert "neither lock nor checkpoint" in line
        else:
            assert "no commitlog/ directory" in line


def test_an_empty_store_is_sound_and_said_to_be_empty(store_copy):
    """A new broker's store: commitlog/ and consumequeue/ present, no data, lock and checkpoint."""
    store = store_copy("a-basic")
    for sub in ("commitlog", "consumequeue", "index"):
        shutil.rmtree(store / sub)
    (store / "commitlog").mkdir()
    (store / "consumequeue").mkdir()
    assert run("verify", "--quiet", "--store", store, "--broker-config", A_CONF).exit_code == 0
    res = run("verify", "--store", store, "--broker-config", A_CONF)
    assert res.exit_code == 0 and "is an empty store" in res.stderr, res.stderr
    res = run("info", "--store", store, "--broker-config", A_CONF, "--format", "json")
    assert res.exit_code == 0 and json.loads(res.stdout)["empty"] is True


# -- 4. nothing is created by a typo ----------------------------------------------------------------------


def test_append_to_a_misspelt_store_creates_nothing(tmp_path, store_copy):
    store = store_copy("a-basic")
    typo = store.parent / "stroe"
    one_line_exit_2(run("append", "--store", typo, "--broker-config", A_CONF, "--topic", "TopicTest", "--body", "x"),
                    "does not exist", "--create")
    assert not typo.exists()
    etc_like = not_stores(tmp_path, store)["etc"]
    before = sorted(p.name for p in etc_like.iterdir())
    one_line_exit_2(run("append", "--store", etc_like, "--broker-config", A_CONF, "--topic", "T", "--body", "x"),
                    "not a RocketMQ store root", "--create")
    assert sorted(p.name for p in etc_like.iterdir()) == before  # no lock file either


def test_append_creates_a_store_only_when_asked_or_into_an_empty_directory(tmp_path):
    new = tmp_path / "new" / "store"
    res = run("append", "--store", new, "--broker-config", A_CONF, "--create", "--topic", "T", "--body", "x")
    assert res.exit_code == 0, res.stderr
    assert (new / "commitlog" / f"{0:020d}").exists() and (new / "lock").exists()
    empty = tmp_path / "empty"
    empty.mkdir()  # what the conformance round trip does before `dump | append --jsonl -`
    res = run("append", "--store", empty, "--broker-config", A_CONF, "--topic", "T", "--body", "x")
    assert res.exit_code == 0, res.stderr
    assert run("verify", "--quiet", "--store", empty, "--broker-config", A_CONF).exit_code == 0


def test_a_failed_append_takes_away_the_store_it_made(tmp_path):
    new = tmp_path / "new"
    one_line_exit_2(run("append", "--store", new, "--broker-config", A_CONF, "--create", "--topic", "bad topic!",
                        "--body", "x"), "topic")
    assert not new.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_exit_2(run("append", "--store", empty, "--broker-config", A_CONF, "--topic", "bad topic!", "--body", "x"),
                    "topic")
    assert list(empty.iterdir()) == []


# -- 2. repair does not refuse because of damage the broker keeps --------------------------------------------

D_CONF = broker_conf("d-crashed")
FLIPPED = 4638  # TopicTest/1@1, in the first commitlog file: before the file abnormal recovery starts from


def crashed_with_a_flipped_queue_id(store_copy) -> Path:
    """d-crashed (torn tail, a body byte flipped at 32655) plus a queueId byte of an early record flipped
    (1 -> 3): its body CRC still passes, so RocketMQ 4.9.7's abnormal recovery cuts the tail and keeps it as
    is (checked with the Java oracle: read4.sh reads the same 599 consumequeue units from this store as from
    the store `rmqctl repair` leaves, and from d-crashed itself)."""
    store = store_copy("d-crashed")
    patch_byte(store / "commitlog" / f"{0:020d}", FLIPPED + 15, 0x02)
    return store


def patch_byte(path: Path, pos: int, xor: int):
    with open(path, "r+b") as fh:
        fh.seek(pos)
        b = fh.read(1)[0]
        fh.seek(pos)
        fh.write(bytes([b ^ xor]))


def test_repair_keeps_the_damage_the_broker_keeps_and_says_so(store_copy):
    store = crashed_with_a_flipped_queue_id(store_copy)
    res = run("repair", "--store", store, "--broker-config", D_CONF, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    rows = jsonl(res.stdout)
    kept = {(r["target"], r["commitLogOffset"]) for r in rows if r["action"] == "not-cut"}
    assert ("consumequeue/TopicTest/1/00000000000000000000", FLIPPED) in kept
    assert {r["detail"].split(":")[0] for r in rows if r["action"] == "not-cut"} >= {"queue-offset", "cq-entry-mismatch"}
    assert all("--scan-all" in r["detail"] for r in rows if r["action"] == "not-cut")
    # what RocketMQ's recovery keeps: every record but the torn one, every consumequeue unit before it
    got = jsonl(run("dump", "commitlog", "--store", store, "--broker-config", D_CONF, "--body", "none",
                    "--format", "jsonl").stdout)
    assert [m["commitLogOffset"] for m in got] == [w["commitLogOffset"] for w in truth("d-crashed", "truth-recovered-messages.jsonl")]
    assert next(m for m in got if m["commitLogOffset"] == FLIPPED)["queueId"] == 3  # kept as it is
    want = truth("d-crashed", "truth-recovered-consumequeue.jsonl")
    have = []
    for topic, qid in sorted({(w["topic"], w["queueId"]) for w in want}):
        units = jsonl(run("dump", "consumequeue", topic, qid, "--store", store, "--broker-config", D_CONF,
                          "--format", "jsonl").stdout)
        have += [{"topic": topic, "queueId": qid, **{k: u[k] for k in ("queueOffset", "commitLogOffset", "size", "tagsCode")}}
                 for u in units]
    key = lambda u: (u["topic"], u["queueId"], u["queueOffset"])
    assert sorted(have, key=key) == sorted(want, key=key)
    assert not (store / "abort").exists()


def test_only_findings_the_store_had_before_are_accepted(store_copy):
    from rmqctl.config import load_config
    from rmqctl.ops.baseline import Preexisting
    from rmqctl.ops.verify import Finding, verify
    from rmqctl.store import Store

    s = Store(crashed_with_a_flipped_queue_id(store_copy), load_config(D_CONF))
    before = [f for f in verify(s).findings if f.kind == "cq-entry-mismatch"]
    accept = Preexisting(s)
    assert accept(before[0]) and accept.kept == [before[0]]
    assert not accept(Finding("cq-entry-mismatch", "error", before[0].file, 40, FLIPPED, "created by the change"))
