"""checkMessageAndReturnSize past a record's structure: the properties it parses (a DELAY of the schedule topic,
5.x's INNER_BASE / INNER_NUM, DUP_INFO with duplicationEnable) and 5.3.2+'s check of a BLANK's size. Where the
check fails, the broker's recovery truncates the commitlog: verify must predict the cut RocketMQ makes, checked
with RocketMQ's own recovery (read4.sh / read5.sh) on the same changed copy."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from conftest import broker_conf, copy_store, jsonl, patch, run

from rmqctl import schema as S
from rmqctl.javacompat import CRC32_PROPERTY, crc31, crc_digits

CUT = re.compile(r"truncates the commitlog at (\d+)")


def rocketmq_recovers_to(oracle: Path, version: int, root: Path, conf: Path, out: Path, dispatch=False) -> dict:
    """RocketMQ's recovery of a copy of the store (read4.sh / read5.sh; with `dispatch`, its reput of every
    record, on a store without consumequeues): its summary."""
    subprocess.run(
        [str(oracle / f"read{version}.sh"), *([] if dispatch else ["--no-dispatch"]), str(root), str(conf), str(out)],
        capture_output=True,
        env={**os.environ, "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"},
    )
    return json.loads((out / "recovered-summary.json").read_text())


def predicted_cut(root: Path, conf: Path) -> tuple[list[tuple[str, int]], int | None]:
    """verify's findings (kind, commitLogOffset) and the commitlog offset its recovery plan truncates at."""
    found = jsonl(run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl").stdout)
    cuts = {int(m.group(1)) for f in found for m in [CUT.search(f["detail"])] if m}
    assert len(cuts) <= 1, cuts
    return [(f["kind"], f["commitLogOffset"]) for f in found], next(iter(cuts), None)


def replace_in_record(path: Path, pos: int, old: bytes, new: bytes, crc_trailer: bool = False):
    """`old` in the record at `pos` replaced by `new` (as long), its __CRC32# value made right again."""
    data = bytearray(path.read_bytes())
    size = S.INT32.unpack_from(data, pos)[0]
    at = data.index(old, pos, pos + size)
    assert len(old) == len(new)
    data[at : at + len(old)] = new
    if crc_trailer:
        digits_at = pos + size - 1 - S.CRC32_RESERVED_LEN + len(CRC32_PROPERTY) + 2
        assert data[digits_at - len(CRC32_PROPERTY) - 1 : digits_at - 1] == CRC32_PROPERTY.encode()
        crc = crc31(data[pos : pos + size - S.CRC32_RESERVED_LEN])
        data[digits_at : digits_at + 10] = crc_digits(crc).encode()
    patch(path, 0, bytes(data))


def conf_with(tmp_path: Path, name: str, extra: str) -> Path:
    conf = tmp_path / "broker.conf"
    conf.write_text(broker_conf(name).read_text() + "\n" + extra + "\n")
    return conf


def test_a_delay_the_broker_cannot_parse_is_where_4_9_7_recovery_cuts(store_copy, java_oracle, tmp_path):
    """A SCHEDULE_TOPIC_XXXX record whose DELAY is not a number: Integer.parseInt throws inside the check, which
    fails the record; 4.9.7's recovery truncates there. verify said the commitlog was sound but for a tagsCode."""
    root = store_copy("b-mixed")
    replace_in_record(root / "commitlog" / f"{0:020d}", 46606, b"DELAY\x013", b"DELAY\x01x")
    found, cut = predicted_cut(root, broker_conf("b-mixed"))
    assert found == [("unparsable-property", 46606)]
    summary = rocketmq_recovers_to(java_oracle, 4, root, broker_conf("b-mixed"), tmp_path / "read4")
    assert cut == summary["maxPhyOffset"] == 46606


def test_inner_base_that_does_not_parse_is_where_5_3_3_recovery_cuts(store_copy, java_oracle, tmp_path):
    """5.x's setBatchSizeIfNeeded parses INNER_BASE and INNER_NUM of any record that has both; a throw fails the
    check (the property CRC made right, so only the parse can fail)."""
    root = store_copy("c-v5-features")
    path, pos = root / "commitlog" / f"{393216:020d}", 835
    replace_in_record(path, pos, b"TRACE_ON\x01true", b"INNER_NUM\x01999", crc_trailer=True)
    replace_in_record(path, pos, b"MSG_REGION\x01DefaultRegion", b"INNER_BASE\x01notanumber123", crc_trailer=True)
    found, cut = predicted_cut(root, broker_conf("c-v5-features"))
    assert found == [("unparsable-property", 393216 + pos)]
    summary = rocketmq_recovers_to(java_oracle, 5, root, broker_conf("c-v5-features"), tmp_path / "read5")
    assert cut == summary["maxPhyOffset"] == 393216 + pos
    # 4.9.7 has no setBatchSizeIfNeeded: the same record passes its check
    res = run("verify", "--store", root, "--broker-config", broker_conf("c-v5-features"), "--rocketmq-version", "4")
    assert "unparsable-property" not in res.stdout


def test_a_blank_claiming_past_its_file_fails_5_3_3_recovery(store_copy, java_oracle, tmp_path):
    """5.3.2+ reads `remaining < totalSize - 4` before the magic: a BLANK claiming more than its file has left
    fails, and abnormal recovery truncates there (verify said it found nothing to cut)."""
    root = store_copy("c-v5-features")
    patch(root / "commitlog" / f"{262144:020d}", 130889, S.INT32.pack(191))  # 183 bytes are left
    (root / "abort").touch()
    found, cut = predicted_cut(root, broker_conf("c-v5-features"))
    assert ("blank-past-end", 262144 + 130889) in found
    summary = rocketmq_recovers_to(java_oracle, 5, root, broker_conf("c-v5-features"), tmp_path / "read5")
    assert summary["abnormalRecovery"] and cut == summary["maxPhyOffset"] == 262144 + 130889
    # a BLANK claiming less than the rest is taken by every version: the old finding, no cut
    patch(root / "commitlog" / f"{262144:020d}", 130889, S.INT32.pack(175))
    found, cut = predicted_cut(root, broker_conf("c-v5-features"))
    assert ("blank-size", 262144 + 130889) in found and cut is None


def test_duplication_enable_makes_recovery_cut_at_a_record_without_dup_info(store_copy, java_oracle, tmp_path):
    """duplicationEnable: 5.x's recovery checks DUP_INFO (checkDupInfo), which no record of this store has; the
    normal recovery cuts at the first record of the file it starts from."""
    root = store_copy("c-v5-features")
    conf = conf_with(tmp_path, "c-v5-features", "duplicationEnable=true")
    found, cut = predicted_cut(root, conf)
    assert {kind for kind, _ in found} == {"dup-info"}
    summary = rocketmq_recovers_to(java_oracle, 5, root, conf, tmp_path / "read5")
    assert cut == summary["maxPhyOffset"] == 393216


def test_an_lmq_name_with_a_path_is_skipped_by_5x_and_refused_before_anything_is_written(store_copy, tmp_path):
    """5.3.3's multiDispatchLmqQueue skips a queue name holding '/': append dispatches the rest and verify
    expects no unit there. Under 4.9 rules it is refused, before the commitlog is written (append used to
    make the record durable, then refuse its dispatch)."""
    root = store_copy("c-v5-features")
    conf = conf_with(tmp_path, "c-v5-features", "enableLmq=true\nenableMultiDispatch=true")
    props = ["--property", "INNER_MULTI_DISPATCH=%LMQ%a/b,%LMQ%c", "--property", "INNER_MULTI_QUEUE_OFFSET=0,0"]
    res = run("append", "--store", root, "--broker-config", conf, "--topic", "TopicV5", "--body", "x", *props)
    assert res.exit_code == 0, res.stderr
    assert (root / "consumequeue" / "%LMQ%c" / "0").is_dir() and not (root / "consumequeue" / "%LMQ%a").exists()
    assert run("verify", "--store", root, "--broker-config", conf).exit_code == 0
    root = copy_store("a-basic", tmp_path / "4.9.7")
    conf = conf_with(tmp_path, "a-basic", "enableLmq=true\nenableMultiDispatch=true")
    before = {p: p.read_bytes() for p in (root / "commitlog").iterdir()}
    res = run("append", "--store", root, "--broker-config", conf, "--topic", "TopicTest", "--body", "y", *props)
    assert res.exit_code == 2 and "'%LMQ%a/b'" in res.stderr
    assert {p: p.read_bytes() for p in (root / "commitlog").iterdir()} == before
    assert run("verify", "--store", root, "--broker-config", conf).exit_code == 0


def test_retry_topics_are_not_multi_dispatched_by_5x(store_copy, java_oracle, tmp_path):
    """MultiDispatchUtils.isNeedHandleMultiDispatch: no LMQ units for a %RETRY% record (a consumer's send-back
    keeps the INNER_MULTI_* properties); checked against RocketMQ 5.3.3 dispatching the store itself."""
    root = store_copy("c-v5-features")
    conf = conf_with(tmp_path, "c-v5-features", "enableLmq=true\nenableMultiDispatch=true")
    props = ["--property", "INNER_MULTI_DISPATCH=%LMQ%x", "--property", "INNER_MULTI_QUEUE_OFFSET=0"]
    res = run("append", "--store", root, "--broker-config", conf, "--topic", "%RETRY%grp", "--body", "x", *props)
    assert res.exit_code == 0, res.stderr
    assert not (root / "consumequeue" / "%LMQ%x").exists()
    own = tmp_path / "own"
    shutil.copytree(root, own, ignore=lambda d, names: ["consumequeue"] if Path(d) == root else [])
    summary = rocketmq_recovers_to(java_oracle, 5, own, conf, tmp_path / "read5", dispatch=True)
    assert any(q["topic"] == "%RETRY%grp" for q in summary["consumeQueues"])
    assert not any(q["topic"] == "%LMQ%x" for q in summary["consumeQueues"])
    assert run("verify", "--store", root, "--broker-config", conf).exit_code == 0


def test_append_refuses_what_the_check_fails_and_keeps_every_acknowledged_message(store_copy, java_oracle, tmp_path):
    """append wrote and acknowledged a record with a DELAY the broker's check throws on; RocketMQ's recovery then
    truncated there, losing it and every acknowledged message after it. Now the line is refused with its number,
    the lines before it stay acknowledged, and RocketMQ reads all of them."""
    root = store_copy("b-mixed")
    lines = tmp_path / "three.jsonl"
    lines.write_text(
        '{"topic":"MixedTopic","queueId":0,"body":"first"}\n'
        '{"topic":"SCHEDULE_TOPIC_XXXX","queueId":0,"body":"bad","properties":{"DELAY":"abc"}}\n'
        '{"topic":"MixedTopic","queueId":0,"body":"third"}\n'
    )
    res = run("append", "--store", root, "--broker-config", broker_conf("b-mixed"), "--jsonl", lines)
    assert res.exit_code == 2 and len(jsonl(res.stdout)) == 1
    assert "line 2: DELAY 'abc' of a SCHEDULE_TOPIC_XXXX record, which Integer.parseInt refuses" in res.stderr
    summary = rocketmq_recovers_to(java_oracle, 4, root, broker_conf("b-mixed"), tmp_path / "read4")
    assert summary["messageCount"] == 421 + 1 and predicted_cut(root, broker_conf("b-mixed")) == ([], None)
    five = copy_store("c-v5-features", tmp_path / "five")
    props = ["--property", "INNER_BASE=notanumber", "--property", "INNER_NUM=1"]
    res = run(
        "append",
        "--store",
        five,
        "--broker-config",
        broker_conf("c-v5-features"),
        "--topic",
        "TopicV5",
        "--body",
        "x",
        *props,
    )
    assert res.exit_code == 2 and "INNER_BASE 'notanumber', which Long.parseLong refuses" in res.stderr
