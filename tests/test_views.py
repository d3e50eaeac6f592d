"""What a person sees at a terminal: rmqctl run in a real pseudo-terminal of 80 and of 200 columns (the screen
captured as it is written), on the fixture stores. Nothing is cut: ids, file names and numbers appear whole."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios

import pytest

from conftest import FIXTURES, broker_conf, run, truth

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
RMQCTL = [sys.executable, "-m", "rmqctl"]


def on_terminal(args, columns: int) -> str:
    """Run rmqctl with its stdout and stderr on a pseudo-terminal of `columns` x 50; the screen's text."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen([*RMQCTL, *map(str, args)], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n")


def store(name):
    return FIXTURES / name / "store"


def width_ok(screen: str, columns: int):
    """Every line fits, but one holding a single value with no space in it, which is shown whole."""
    from rich.cells import cell_len

    for line in screen.splitlines():
        assert cell_len(line) <= columns or " " not in line.split(":", 1)[-1].strip(), line


@pytest.mark.parametrize("columns", [80, 200])
def test_info_on_a_terminal(columns):
    screen = on_terminal(["info", "--store", store("b-mixed"), "--broker-config", broker_conf("b-mixed")], columns)
    width_ok(screen, columns)
    for name in sorted(p.name for p in (store("b-mixed") / "index").iterdir()):
        assert name in screen  # index file names whole
    assert "00000000000000262144" in screen and "startup" in screen
    ids = [int(m) for m in re.findall(r"SCHEDULE_TOPIC_XXXX\W+(\d+)", screen)]
    assert ids == sorted(ids) == [0, 2, 17]  # numerically, not 0, 17, 2


@pytest.mark.parametrize("columns", [80, 200])
def test_one_message_is_a_block(columns):
    m = truth("c-v5-features", "truth-messages.jsonl")[0]
    screen = on_terminal(["msgid", "lookup", m["msgId"], "--store", store("c-v5-features"), "--broker-config",
                          broker_conf("c-v5-features")], columns)
    width_ok(screen, columns)
    lines = screen.splitlines()
    assert re.match(rf"msgId:\s+{m['msgId']}$", lines[0])
    assert any(re.match(rf"topic:\s+{re.escape(m['topic'])}$", line) for line in lines)
    for name, value in m["properties"].items():
        assert f"  {name} = {value}" in lines or len(f"  {name} = {value}") > columns
    assert any(line.startswith("storeTimestamp:") and "T" in line for line in lines)  # with its time


def test_dump_commitlog_limit_and_binary_body_preview():
    screen = on_terminal(["dump", "commitlog", "--limit", "3", "--store", store("a-basic")], 80)
    width_ok(screen, 80)
    ids = [m["msgId"] for m in sorted(truth("a-basic", "truth-messages.jsonl"), key=lambda m: m["commitLogOffset"])[:3]]
    assert [re.match(r"msgId:\s+(\S+)", line).group(1) for line in screen.splitlines() if line.startswith("msgId:")] == ids
    assert "bytes, not UTF-8; first 64 shown" in screen


@pytest.mark.parametrize("columns", [80, 200])
def test_checkpoint_and_locate_on_a_terminal(columns):
    screen = on_terminal(["dump", "checkpoint", "--store", store("a-basic")], columns)
    width_ok(screen, columns)
    assert re.search(r"physicMsgTimestamp:\s+\d{13}$", screen, re.M)
    screen = on_terminal(["locate", "0x5e2", "--store", store("a-basic")], columns)
    assert re.search(r"recordStart:\s+yes$", screen, re.M) and "C0A8000A00002A9F00000000000005E2" in screen


def test_a_wide_table_becomes_blocks_on_a_narrow_terminal():
    screen = on_terminal(["dump", "index", "--headers-only", "--store", store("a-basic")], 80)
    width_ok(screen, 80)
    assert re.search(r"^beginPhyOffset:\s+\d+$", screen, re.M)
    wide = on_terminal(["dump", "index", "--headers-only", "--store", store("a-basic")], 200)
    assert "┃ kind" in wide or "│ header" in wide  # a table where it fits


def test_table_on_a_pipe_is_full_width_without_colour():
    p = subprocess.run([*RMQCTL, "info", "--format", "table", "--store", store("b-mixed")], capture_output=True, text=True)
    assert p.returncode == 0 and "\x1b[" not in p.stdout
    assert "RMQ_SYS_TRANS_OP_HALF_TOPIC" in p.stdout and "主题-トピック-🚀" in p.stdout


def test_empty_cells_and_booleans():
    res = run("dump", "consumequeue", "TopicTest", "0", "--store", store("a-basic"), "--resolve", "--format", "csv")
    assert "None" not in res.stdout and "True" not in res.stdout


# -- annotated hex -------------------------------------------------------------------------------------------------
def hex_of(name, offset) -> str:
    res = run("locate", offset, "--hex", "--store", store(name), "--broker-config", broker_conf(name))
    assert res.exit_code == 0, res.stderr
    return res.stdout


def first(name, pred):
    return next(m for m in sorted(truth(name, "truth-messages.jsonl"), key=lambda m: m["commitLogOffset"]) if pred(m))


def test_hex_view_of_v1_v2_ipv6_property_crc_and_blank():
    v1 = first("a-basic", lambda m: True)
    out = hex_of("a-basic", v1["commitLogOffset"])
    assert re.search(r"^\s+4  da a3 20 a7\s+magicCode\s+0xdaa320a7 V1$", out, re.M)
    assert re.search(rf"storeSize\s+{v1['storeSize']}$", out, re.M)
    v2 = first("c-v5-features", lambda m: m["magicCode"] == -626843477)
    out = hex_of("c-v5-features", hex(v2["commitLogOffset"]))
    assert "V2" in out and re.search(r"topicLength\s+\d+$", out, re.M)
    v6 = first("b-mixed", lambda m: m["sysFlag"] & 0x10)
    out = hex_of("b-mixed", v6["commitLogOffset"])
    assert re.search(r"bornHost\.ip\s+[0-9a-f:]+$", out, re.M) and "BORNHOST_V6" in out
    crc = first("c-v5-features", lambda m: "__CRC32#" in m["properties"])
    out = hex_of("c-v5-features", crc["commitLogOffset"])
    digits = crc["properties"]["__CRC32#"].encode()
    kept = "".join(line[8:56].replace(" ", "") for line in out.splitlines()[-2:])
    assert (b"#\x01" + digits + b"\x02").hex() in kept  # the property CRC: the last bytes, always shown
    last = max(truth("a-basic", "truth-messages.jsonl"), key=lambda m: (m["file"], m["filePosition"]))
    full = [m for m in truth("a-basic", "truth-messages.jsonl") if m["file"] == "00000000000000000000"]
    end = max(m["commitLogOffset"] + m["storeSize"] for m in full)
    out = hex_of("a-basic", end)
    assert re.search(r"magicCode\s+0xcbd43194 BLANK$", out, re.M)
    assert last["file"] != "00000000000000000000"
    bad = run("locate", end + 3, "--hex", "--store", store("a-basic"))
    assert bad.exit_code == 2 and "no record starts here" in bad.stderr

