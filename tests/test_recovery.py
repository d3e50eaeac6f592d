"""Where the broker's normal commitlog recovery starts, written once (recovery.normal_recovery_start) and
read by verify's recovery plan, info's startup estimate and append: checked against what RocketMQ itself
wrote (the fixtures' truth files)."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, broker_conf

from rmqctl.config import load_config
from rmqctl.recovery import normal_recovery_start
from rmqctl.store import Store
from rmqctl.views.startup import estimate_startup

PREALLOCATED = {"d-crashed": 1}  # copied while running: the next, all-zero commitlog file too (fixtures README)


def summary(name: str) -> dict:
    return json.loads((FIXTURES / name / "truth-summary.json").read_text())


def truth_files(name: str) -> list[tuple[str, int]]:
    """(name, fileFromOffset) of every commitlog file the broker's next start maps."""
    files = [(f["file"], f["fileFromOffset"]) for f in summary(name)["commitLogFiles"]]
    size = summary(name)["commitLogFiles"][0]["fileSize"]
    for _ in range(PREALLOCATED.get(name, 0)):
        files.append((f"{files[-1][1] + size:020d}", files[-1][1] + size))
    return files


def queues_end(name: str) -> int:
    """maxPhyOffsetOfConsumeQueue as the broker reported it: the largest maxPhysicOffset of its queues."""
    return max(q["maxPhysicOffset"] for q in summary(name)["consumeQueues"])


def expected_start(name: str) -> str:
    """4.9.7's recoverNormally: the third file from the last. 5.3.3's: the newest file after the first whose
    fileFromOffset <= maxPhyOffsetOfConsumeQueue, else the first."""
    files = truth_files(name)
    if summary(name)["rocketmqVersion"].startswith("4."):
        return files[max(len(files) - 3, 0)][0]
    end = queues_end(name)
    return next((files[i][0] for i in range(len(files) - 1, 0, -1) if files[i][1] <= end), files[0][0])


def open_store(name: str) -> Store:
    return Store(FIXTURES / name / "store", load_config(broker_conf(name)))


@pytest.mark.parametrize("name", ["a-basic", "d-crashed", "b-mixed", "c-v5-features"])
def test_normal_recovery_starts_where_the_broker_starts(name):
    store = open_store(name)
    files = store.commitlog.files
    assert [f.name for f in files] == [n for n, _ in truth_files(name)]
    start = normal_recovery_start(store, lambda: queues_end(name))
    assert files[start].name == expected_start(name)


def test_5x_starts_past_the_third_file_from_the_last_when_the_queues_reach_further():
    """The two versions' rules differ on c-v5-features: the test above would not notice a 4.9 rule there."""
    files = truth_files("c-v5-features")
    assert expected_start("c-v5-features") != files[len(files) - 3][0]


@pytest.mark.parametrize("name", ["a-basic", "b-mixed", "c-v5-features"])
def test_the_startup_estimate_scans_from_the_same_file(name):
    """info's estimate finds the queues' end in the store itself; with no abort file it names the same file."""
    store = open_store(name)
    assert not store.crashed()
    assert estimate_startup(store).firstFile == expected_start(name)
