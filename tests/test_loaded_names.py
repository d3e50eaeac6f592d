"""Names in a store that the broker's loaders parse with Java's Integer.parseInt / Long.parseLong: what they
skip, what they load whatever its form, and what fails the load; and messageIndexEnable, which only stops new
index entries (the broker still searches and, after a crash, deletes the files it has)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import broker_conf, copy_store as store_copy_of, jsonl, run


def rocketmq_loads(oracle: Path, version: int, root: Path, conf: Path, out: Path) -> dict:
    """RocketMQ's load of a copy of the store (read4.sh / read5.sh --no-dispatch): its summary."""
    env = {**os.environ, "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"}
    cmd = [str(oracle / f"read{version}.sh"), "--no-dispatch", str(root), str(conf), str(out)]
    subprocess.run(cmd, capture_output=True, env=env)
    return json.loads((out / "recovered-summary.json").read_text())


def findings(root: Path, name: str, conf: Path | None = None) -> tuple[int, list[tuple[str, str, str]]]:
    res = run("verify", "--store", root, "--broker-config", conf or broker_conf(name), "--format", "jsonl")
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    return res.exit_code, [(f["kind"], f["severity"], f["file"]) for f in jsonl(res.stdout)]


def test_queue_directories_integer_parse_int_refuses_are_skipped(store_copy):
    """DefaultMessageStore.loadConsumeQueue skips a queue directory whose name does not parse ('--1', '²');
    rmqctl crashed on them."""
    root = store_copy("a-basic")
    for name in ("--1", "\u00b2", "x"):
        (root / "consumequeue" / "TopicTest" / name).mkdir()
    assert findings(root, "a-basic") == (0, [])


def test_index_names_as_long_parse_long_reads_them(store_copy, java_oracle, tmp_path):
    """IndexService.load skips a file whose name Long.parseLong refuses (rmqctl said the broker loads it), a
    directory too, but fails opening a directory whose name is a number and stops there: no index file after it
    is loaded (4.9.7's DefaultMessageStore.load ignores what IndexService.load returns; 5.3.3's fails with it)."""
    root = store_copy("a-basic")
    first = sorted((root / "index").iterdir())[0]
    (root / "index" / f"{first.name}.bak").write_bytes(first.read_bytes())
    code, found = findings(root, "a-basic")
    assert (code, found) == (1, [("stray-file", "warning", f"index/{first.name}.bak")])
    assert rocketmq_loads(java_oracle, 4, root, broker_conf("a-basic"), tmp_path / "skipped")["loadReturned"]
    (root / "index" / "sub").mkdir()
    assert findings(root, "a-basic") == (code, found)
    assert rocketmq_loads(java_oracle, 4, root, broker_conf("a-basic"), tmp_path / "sub")["loadReturned"]
    (root / "index" / "123").mkdir()
    code, found = findings(root, "a-basic")
    assert ("stray-file", "error", "index/123") in found and code == 1
    assert rocketmq_loads(java_oracle, 4, root, broker_conf("a-basic"), tmp_path / "dir")["loadReturned"]
    assert "load index file OK" in (tmp_path / "sub" / "store.log").read_text()
    assert "load index file OK" not in (tmp_path / "dir" / "store.log").read_text()
    five = store_copy_of("c-v5-features", tmp_path / "five")
    (five / "index" / "123").mkdir()
    assert ("stray-file", "error", "index/123") in findings(five, "c-v5-features")[1]
    assert not rocketmq_loads(java_oracle, 5, five, broker_conf("c-v5-features"), tmp_path / "five-read")[
        "loadReturned"
    ]


def test_a_compaction_queue_directory_that_does_not_parse_fails_the_load(store_copy):
    """CompactionStore.load rethrows Integer.parseInt's exception for a compactionLog/{topic}/ directory: the
    broker's load fails. rmqctl skipped it (verify said sound) or crashed on '²'."""
    root = store_copy("c-v5-features")
    topic = root / "compaction" / "compactionLog" / "CT"
    for name in ("tmp", "\u00b2"):
        (topic / name).mkdir(parents=True)
    code, found = findings(root, "c-v5-features")
    assert code == 1
    assert sorted(found) == [
        ("stray-file", "error", f"compaction/compactionLog/{topic.name}/tmp"),
        ("stray-file", "error", f"compaction/compactionLog/{topic.name}/\u00b2"),
    ]


def test_message_index_enable_false_keeps_the_index_searched_and_its_crash_loss_said(store_copy, tmp_path):
    """messageIndexEnable only gates the index dispatcher: queryMessage still searches the files (rmqctl refused),
    and IndexService.load still deletes, after a crash, files newer than indexMsgTimestamp, which nothing
    re-indexes then (verify said nothing)."""
    root = store_copy("a-basic")
    conf = tmp_path / "broker.conf"
    conf.write_text(broker_conf("a-basic").read_text() + "\nmessageIndexEnable=false\n")
    on = jsonl(
        run("query", "key", "TopicTest", "USER-02", "--store", root, "--broker-config", broker_conf("a-basic")).stdout
    )
    off = jsonl(run("query", "key", "TopicTest", "USER-02", "--store", root, "--broker-config", conf).stdout)
    assert off == on and len(on) == 8
    (root / "abort").touch()
    found = jsonl(run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl").stdout)
    lost = [f for f in found if f["kind"] == "index-lost-on-recovery"]
    assert lost and all("re-indexes nothing (messageIndexEnable=false)" in f["detail"] for f in lost)
