"""The bad day: wrong targets, damage the broker keeps, short files, a verify that can go green again, and
the small answers scripts branch on (issue 11). Every case runs on a copy of a real fixture store."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, broker_conf, jsonl, run

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
