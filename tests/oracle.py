"""RocketMQ's own store code as the judge of what rmqctl writes (../shared/java-oracle, restored at
$RMQ_JAVA_ORACLE): read4.sh / read5.sh load a copy of a store with DefaultMessageStore.load(), walk it with
checkMessageAndReturnSize(checkCRC=true) and read every consumequeue unit back through MessageDecoder.

A store is read twice, by two JVMs at once: as rmqctl left it, without the dispatch (RocketMQ reads exactly
the consumequeues rmqctl wrote), and with its consumequeue directory removed and the dispatch of a broker's
start on (RocketMQ writes every unit itself, from the commitlog). Both readings must agree unit for unit:
every consumequeue byte rmqctl wrote is one RocketMQ would write."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from rmqctl.config import load_config
from rmqctl.views.inspect import info
from rmqctl.store import Store

ENV = "RMQ_JAVA_ORACLE"
PROBLEM_KINDS = ("crcFailures", "bugLines", "lengthNotMatched", "logicQueueOrderMaybeWrong")


def home() -> Path:
    """The restored oracle. Without $RMQ_JAVA_ORACLE: a skip locally (a failure under CI=true, as every skip:
    tests/conftest.py), where .ci/run restores it; set but not a restored oracle: always a failure."""
    where = os.environ.get(ENV)
    if not where:
        pytest.skip(f"${ENV} is not set: ../shared/java-oracle/restore DIR, then export {ENV}=DIR")
    path = Path(where)
    if not (path / "read4.sh").is_file() or not (path / "read5.sh").is_file():
        pytest.fail(f"${ENV}={where} holds no restored oracle (read4.sh, read5.sh)")
    return path


@dataclass
class Reading:
    """What one RocketMQ version made of a store: recovered-summary.json and messages-read.jsonl of the
    store as rmqctl left it (no dispatch), and of the same store with consumequeues RocketMQ dispatched itself."""

    summary: dict
    lines: list[dict]
    own_summary: dict
    own_lines: list[dict]
    store_log: str  # the store's own log of the first reading


def read(oracle: Path, version: int, store: Path, conf: Path, out: Path) -> Reading:
    """read4.sh / read5.sh (they copy the store first), the two runs in parallel."""
    own = out / "store-without-consumequeue"
    shutil.copytree(store, own, ignore=lambda d, names: ["consumequeue"] if Path(d) == store else [])
    runs = {}
    # short runs: C1 alone costs a quarter less CPU
    env = {**os.environ, "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"}
    for mode, source, flags in (("rmqctl's", store, ["--no-dispatch"]), ("RocketMQ's own", own, [])):
        dest = out / f"read{version}-{len(runs)}"
        runs[mode] = (
            dest,
            subprocess.Popen(
                [str(oracle / f"read{version}.sh"), *flags, str(source), str(conf), str(dest)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=env,
            ),
        )
    results = []
    for mode, (dest, proc) in runs.items():
        log = proc.communicate()[0]
        summary_path = dest / "recovered-summary.json"
        assert summary_path.is_file(), (
            f"read{version}.sh ({mode} consumequeues) wrote no summary (exit {proc.returncode}):\n{log[-3000:]}"
        )
        summary = json.loads(summary_path.read_text())
        lines_path = dest / "messages-read.jsonl"
        lines = [json.loads(l) for l in lines_path.read_text().splitlines()] if lines_path.is_file() else []
        results += [summary, lines]
    shutil.rmtree(own)
    return Reading(*results, (out / f"read{version}-0" / "store.log").read_text(errors="replace"))


def served(oracle: Path, version: int, store: Path, conf: Path, out: Path) -> tuple[dict, list, dict]:
    """What RocketMQ serves from a store after its load (read4.sh / read5.sh --no-dispatch): each queue's
    (min, max) (5.3.3 says getMinOffsetInQueue and getMaxOffsetInQueue itself; 4.9.7's reader reads every unit
    from getMinOffsetInQueue to the max, so its lines tell), every unit it reads as (topic, queueId,
    queueOffset, commitLogOffset, size, ok), and the summary."""
    cmd = [str(oracle / f"read{version}.sh"), "--no-dispatch", str(store), str(conf), str(out)]
    subprocess.run(cmd, capture_output=True)
    summary = json.loads((out / "recovered-summary.json").read_text())
    assert summary["loadReturned"], summary
    lines = [json.loads(l) for l in (out / "messages-read.jsonl").read_text().splitlines()]
    queues: dict = {}
    for line in lines:
        key = (line["topic"], line["queueId"])
        lo, hi = queues.get(key, (line["queueOffset"], 0))
        queues[key] = (min(lo, line["queueOffset"]), max(hi, line["queueOffset"] + 1))
    if "consumeQueues" in summary:
        queues = {(q["topic"], q["queueId"]): (q["minOffset"], q["maxOffset"]) for q in summary["consumeQueues"]}
    fields = ("topic", "queueId", "queueOffset", "commitLogOffset", "size", "ok")
    return queues, sorted(tuple(line[f] for f in fields) for line in lines), summary


def rmqctl_view(store_dir: Path, conf: Path) -> dict:
    """The same store as rmqctl reads it: records, the commitlog's end, and every consumequeue unit the broker
    would serve (from the queue's min offset, at or above the commitlog's first offset) with the record it
    points at, in the shape of messages-read.jsonl."""
    store = Store(store_dir, load_config(conf))
    records = sum(1 for _ in store.scan().records())
    cl = info(store)["commitlog"]
    units = []
    for cq in store.consume_queues():
        lo, _ = cq.offset_range()
        for qoff, _, _, phy, size, tags in cq.entries():
            if qoff < lo or phy < cl["minOffset"]:
                continue
            _, m = store.read_message(phy)
            unit = {
                "topic": cq.topic,
                "queueId": cq.queue_id,
                "queueOffset": qoff,
                "commitLogOffset": phy,
                "size": size,
                "tagsCode": tags,
                "msgTopic": m.topic,
                "msgQueueId": m.queueId,
                "msgQueueOffset": m.queueOffset,
                "msgId": m.msg_id,
                "keys": m.keys,
                "tags": m.tags,
            }
            if m.bodyLength > 0:  # MessageDecoder leaves an empty body null
                unit["body"] = base64.b64encode(bytes(m.body)).decode()
            units.append({**unit, "ok": True})
    store.close()
    return {
        "messageCount": records,
        "maxPhyOffset": cl["maxOffset"],
        "minPhyOffset": cl["minOffset"],
        "units": sorted(units, key=unit_key),
    }


def unit_key(line: dict) -> tuple:
    return line["topic"], line["queueId"], line["queueOffset"]


def problems(summary: dict) -> dict:
    """Everything in a summary that says RocketMQ did not take the store as sound; {} when it did."""
    found = {k: summary.get(k) for k in ("error", "walkStops", "walkCheckFailures") if summary.get(k)}
    if not summary.get("loadReturned"):
        found["loadReturned"] = summary.get("loadReturned")
    if summary["messagesRead"]["linesWithProblems"]:
        found["messagesRead"] = summary["messagesRead"]["problemExamples"]
    for kind in PROBLEM_KINDS:
        if summary["diagnostics"][kind]["count"]:
            found[kind] = summary["diagnostics"][kind]["examples"]
    return found


def assert_loads_as_rmqctl_reads(reading: Reading, store_dir: Path, conf: Path, known_damage: set[int] = frozenset()):
    """RocketMQ loads the store (recovery included) and reads what rmqctl reads: the same record count, the
    same commitlog end, no CRC failure, no problem or [BUG] line, every consumequeue unit with the same
    record, and the same units when it dispatches the commitlog itself. `known_damage`: commitlog offsets of
    records the broker keeps although their body CRC fails (damage in a file recovery does not re-check)."""
    view = rmqctl_view(store_dir, conf)
    for name, summary, lines in (
        ("on rmqctl's consumequeues", reading.summary, reading.lines),
        ("on consumequeues it dispatched itself", reading.own_summary, reading.own_lines),
    ):
        where = f"RocketMQ {summary.get('rocketmqVersion')} {name}"
        found = problems(summary)
        if known_damage:
            found = accept_known_damage(found, summary, lines, known_damage)
        assert not found, f"{where}: {found}"
        assert not summary["abnormalRecovery"], f"{where}: abort left in the store"
        assert (summary["messageCount"], summary["maxPhyOffset"], summary["minPhyOffset"]) == (
            view["messageCount"],
            view["maxPhyOffset"],
            view["minPhyOffset"],
        ), where
        got = sorted((as_sound(l) if l["commitLogOffset"] in known_damage else l for l in lines), key=unit_key)
        assert len(got) == len(view["units"]), (
            f"{where}: {len(got)} consumequeue units read, rmqctl reads {len(view['units'])}"
        )
        for g, w in zip(got, view["units"]):
            assert g == w, f"{where}, {unit_key(w)}: (RocketMQ, rmqctl) differ in {differences(g, w)}"


def assert_same_units(got: list[dict], want: list[dict], what: str):
    """Two messages-read readings unit for unit; the first difference, briefly."""
    if got == want:
        return
    g, w = {unit_key(l): l for l in got}, {unit_key(l): l for l in want}
    missing, extra = sorted(w.keys() - g.keys()), sorted(g.keys() - w.keys())
    changed = [(k, differences(g[k], w[k])) for k in sorted(g.keys() & w.keys()) if g[k] != w[k]]
    raise AssertionError(
        f"{what}: {len(got)} units read, {len(want)} expected; missing {missing[:3]} "
        f"({len(missing)}), extra {extra[:3]} ({len(extra)}), changed {changed[:2]} ({len(changed)})"
    )


def accept_known_damage(found: dict, summary: dict, lines: list[dict], offsets: set[int]) -> dict:
    """Drop the findings that are exactly the known damaged records (one CRC failure each, as a body CRC
    problem line, a walk check failure and CRC log lines naming nothing else)."""
    bad = {l["commitLogOffset"] for l in lines if not l["ok"]}
    assert bad == offsets and all(l.get("problem") == "body CRC mismatch" for l in lines if not l["ok"]), bad
    assert summary["walkCheckFailures"] == len(offsets)
    rest = {k: v for k, v in found.items() if k not in ("walkCheckFailures", "messagesRead", "crcFailures")}
    return rest


def as_sound(line: dict) -> dict:
    """A line of a known damaged record, without its CRC problem."""
    return {**{k: v for k, v in line.items() if k != "problem"}, "ok": True}


def differences(got: dict, want: dict) -> dict:
    """The fields two lines disagree on, long values shortened."""
    short = lambda v: v[:40] + "..." if isinstance(v, str) and len(v) > 40 else v  # noqa: E731
    return {
        k: (short(got.get(k)), short(want.get(k)))
        for k in sorted(got.keys() | want.keys())
        if got.get(k) != want.get(k)
    }


def run_harness4(oracle: Path, harness: Path, args: list, log: Path) -> list[str]:
    """A Java source file of tests/java run on RocketMQ 4.9.7's classes (read4.sh's class path and JVM flags, from
    the oracle's own env.sh), the store's log to `log`; its stdout lines."""
    script = f'. "{oracle}/lib/env.sh" && printf "%s\\n" "$(oracle_debian_cp)" "${{JVM_OPENS[@]}}"'
    debian, *opens = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.split()
    jars = [f"{oracle}/lib/rocketmq-4.jar", f"{oracle}/lib/fastjson-1.2.83.jar", debian]
    cmd = ["java", *opens, f"-Duser.home={log.parent}", f"-Dorg.slf4j.simpleLogger.logFile={log}"]
    java = subprocess.run(
        [*cmd, "-cp", ":".join(jars), str(harness), *map(str, args)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"},  # short runs: C1 alone costs less CPU
    )
    return java.stdout.splitlines()
