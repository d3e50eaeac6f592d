"""broker.conf read as the broker reads it: java.util.Properties.load (ISO-8859-1, comments, continuations,
escapes, the value's trailing blanks kept), then MixAll.properties2Object (Integer.parseInt and
Boolean.parseBoolean on the value as it stands, a failure keeping the default; 5.x trims a String, 4.9.7 does
not). Checked against RocketMQ's own loading where the store shows it (read4.sh)."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from conftest import broker_conf, copy_store, jsonl, run

from rmqctl.config import load_config
from rmqctl.javacompat import java_properties


@pytest.mark.parametrize(
    "text, parsed",
    [
        (b"a=1", {"a": "1"}),
        (b"a = 1 ", {"a": "1 "}),  # the value's trailing blanks are kept
        (b"a:1\nb 2\n\tc\t=\t3", {"a": "1", "b": "2", "c": "3"}),
        (b"  # a=1\n! b=2\nc=3", {"c": "3"}),
        (b"a=x\\\n   y\\\\", {"a": "xy\\"}),  # a continued line; an escaped backslash ends none
        (b"a\\=b=c\\u0041\\t", {"a=b": "cA\t"}),
        (b"a\na=\na:=b", {"a": "=b"}),  # a later key wins; one separator only
        (b"k=\xe9", {"k": "\xe9"}),  # ISO-8859-1, not UTF-8
    ],
)
def test_properties_load_as_java_reads_them(text, parsed):
    assert java_properties(text) == parsed


def test_values_the_broker_cannot_parse_keep_their_defaults(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "fileReservedTime=48 \nmaxMessageSize=4m\nmessageIndexEnable=TRUE\nmessageIndexSafe=true \n"
        "deleteWhen= 04 \nmappedFileSizeConsumeQueue=+1280\n"
    )
    cfg = load_config(conf)
    assert (cfg.fileReservedTime, cfg.maxMessageSize, cfg.mappedFileSizeConsumeQueue) == (72, 4 << 20, 1280)
    assert (cfg.messageIndexEnable, cfg.messageIndexSafe) == (True, False)
    assert cfg.deleteWhen == "04" and cfg.untrimmed == {"deleteWhen": "04 "}
    assert cfg.notes == [
        "fileReservedTime='48 ' is not a number to the broker, which keeps its default 72",
        "maxMessageSize='4m' is not a number to the broker, which keeps its default 4194304",
        "messageIndexSafe='true ' is false to the broker (Boolean.parseBoolean: blanks included)",
        "deleteWhen='04 ': 5.x trims the blanks around it, 4.9.7 keeps them",
    ]


def test_a_queue_file_size_with_a_trailing_blank_is_the_default_to_the_broker(store_copy, java_oracle, tmp_path):
    """'mappedFileSizeConsumeQueue=1280 ': Integer.parseInt fails, the broker takes 6,000,000 and RocketMQ 4.9.7's
    load refuses the 1280-byte files; rmqctl said the store was sound (it trimmed the value)."""
    root = store_copy("a-basic")
    conf = tmp_path / "ws.conf"
    conf.write_text(
        broker_conf("a-basic")
        .read_text()
        .replace("mappedFileSizeConsumeQueue=1280\n", "mappedFileSizeConsumeQueue=1280 \n")
    )
    res = run("verify", "--store", root, "--broker-config", conf)
    assert res.exit_code == 2 and "file is 1280 bytes but mappedFileSizeConsumeQueue=6000000" in res.stderr
    out = tmp_path / "read4"
    env = {**os.environ, "JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"}
    subprocess.run(
        [str(java_oracle / "read4.sh"), "--no-dispatch", str(root), str(conf), str(out)], capture_output=True, env=env
    )
    assert json.loads((out / "recovered-summary.json").read_text())["loadReturned"] is False


def test_clean_keeps_files_the_broker_keeps_when_a_number_has_a_blank(tmp_path):
    """'fileReservedTime=48 ' is 72 h to the broker: files 60 h old are not due (clean planned their deletion)."""
    root = copy_store("a-basic", tmp_path)
    old = time.time() - 60 * 3600
    for f in sorted((root / "commitlog").iterdir())[:5]:
        os.utime(f, (old, old))
    conf = tmp_path / "frt.conf"
    conf.write_text(broker_conf("a-basic").read_text().replace("fileReservedTime=72", "fileReservedTime=48 "))
    hour = time.strftime("%H")
    res = run("clean", "--store", root, "--broker-config", conf, "--delete-when", hour, "--format", "jsonl")
    assert res.exit_code == 0, res.stderr
    assert not [r for r in jsonl(res.stdout) if r.get("action") == "delete" and r.get("why") == "age"]
    assert "fileReservedTime='48 ' is not a number to the broker" in res.stderr


def test_delete_when_with_a_blank_never_fires_on_4_9_7(tmp_path):
    """4.9.7's properties2Object keeps 'deleteWhen=04 ' as it is: isItTimeToDo's Integer.parseInt fails on
    '04 ' every hour, so no pass is time-based; 5.x trims it."""
    root = copy_store("a-basic", tmp_path)
    conf = tmp_path / "dw.conf"
    hour = time.strftime("%H")
    conf.write_text(broker_conf("a-basic").read_text() + f"\ndeleteWhen={hour} \n")
    res = run("clean", "--store", root, "--broker-config", conf)
    assert res.exit_code == 2  # (as for any deleteWhen the broker's cleaner throws on)
    assert f"deleteWhen={hour + ' '!r}: Integer.parseInt fails" in res.stderr.splitlines()[-1]
    assert "RocketMQ 4.x rules" in res.stderr
