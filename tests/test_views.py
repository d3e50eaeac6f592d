"""What a person sees at a terminal: rmqctl run in a real pseudo-terminal of 80 and of 200 columns (the screen
captured as it is written), on the fixture stores. Nothing is cut: ids, file names and numbers appear whole."""

from __future__ import annotations

import fcntl
import os
import pty
import json
import re
import shutil
import struct
import subprocess
import sys
import termios
import tracemalloc

import numpy as np
import pytest

import oracle
from conftest import FIXTURES, broker_conf, cleaned_copy, copy_store, patch, run, terminal_output, tmpfs_at, truth
from rmqctl import schema as S
from rmqctl.config import load_config
from rmqctl.queueload import ReplayedQueue
from rmqctl.recovery import QueueRecovery
from rmqctl.store import Store

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
RMQCTL = [sys.executable, "-m", "rmqctl"]


def on_terminal(args, columns: int) -> str:
    """Run rmqctl with its stdout and stderr on a pseudo-terminal of `columns` x 50; the screen's text."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen(
        [*RMQCTL, *map(str, args)], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
    )
    os.close(slave)
    chunks = list(terminal_output(master))
    proc.wait()
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
    width_ok(screen.split("\nconsumequeues")[0], columns)  # the summary folds; the tables are a line per record
    for name in sorted(p.name for p in (store("b-mixed") / "index").iterdir()):
        assert name in screen  # index file names whole
    assert "00000000000000262144" in screen and "startup" in screen
    ids = [int(m) for m in re.findall(r"SCHEDULE_TOPIC_XXXX\W+(\d+)", screen)]
    assert ids == sorted(ids) == [0, 2, 17]  # numerically, not 0, 17, 2


@pytest.mark.parametrize("columns", [80, 200])
def test_one_message_is_a_block(columns):
    m = truth("c-v5-features", "truth-messages.jsonl")[0]
    screen = on_terminal(
        [
            "msgid",
            "lookup",
            m["msgId"],
            "--store",
            store("c-v5-features"),
            "--broker-config",
            broker_conf("c-v5-features"),
        ],
        columns,
    )
    width_ok(screen, columns)
    lines = screen.splitlines()
    assert re.match(rf"msgId:\s+{m['msgId']}$", lines[0])
    assert any(re.match(rf"topic:\s+{re.escape(m['topic'])}$", line) for line in lines)
    for name, value in m["properties"].items():
        assert f"  {name} = {value}" in lines or len(f"  {name} = {value}") > columns
    assert any(line.startswith("storeTimestamp:") and "T" in line for line in lines)  # with its time


def test_dump_commitlog_is_one_line_per_message_and_long_shows_the_body():
    screen = on_terminal(["dump", "commitlog", "--limit", "3", "--store", store("a-basic")], 200)
    assert screen == (
        "commitLogOffset  storeTime                      topic      queueId  queueOffset  storeSize  tags  keys        "
        "             msgId                             uniqKey\n"
        "              0  2026-11-22T02:23:33.638+00:00  TopicTest        2            0       1506  TagE  ORDER-00000 "
        "USER-09 HOT  C0A8000A00002A9F0000000000000000  C000020247C55FFD2B276CA8FA5E0000\n"
        "           1506  2026-11-22T02:23:33.674+00:00  TopicTest        0            0       1724  TagD  ORDER-00001 "
        "USER-11      C0A8000A00002A9F00000000000005E2  C000020247C55FFD2B276CA8FB240001\n"
        "           3230  2026-11-22T02:23:33.676+00:00  TopicTest        0            1        469  TagD  ORDER-00002 "
        "USER-09      C0A8000A00002A9F0000000000000C9E  C000020247C55FFD2B276CA8FB2B0002\n"
    )
    screen = on_terminal(["dump", "commitlog", "--limit", "3", "--long", "--store", store("a-basic")], 80)
    width_ok(screen, 80)
    ids = [m["msgId"] for m in sorted(truth("a-basic", "truth-messages.jsonl"), key=lambda m: m["commitLogOffset"])[:3]]
    assert [
        re.match(r"msgId:\s+(\S+)", line).group(1) for line in screen.splitlines() if line.startswith("msgId:")
    ] == ids
    assert "bytes, not UTF-8; first 64 shown" in screen
    assert re.search(r"^magicCode:\s+0xdaa320a7 \(V1\)$", screen, re.M)


@pytest.mark.parametrize("columns", [80, 200])
def test_checkpoint_and_locate_on_a_terminal(columns):
    screen = on_terminal(["dump", "checkpoint", "--store", store("a-basic")], columns)
    width_ok(screen, columns)
    assert re.search(r"physicMsgTimestamp:\s+\d{13}$", screen, re.M)
    screen = on_terminal(["locate", "0x5e2", "--store", store("a-basic")], columns)
    assert re.search(r"recordStart:\s+yes$", screen, re.M) and "C0A8000A00002A9F00000000000005E2" in screen


def test_a_wide_listing_stays_one_line_per_record_on_a_narrow_terminal():
    """182 units with --resolve: 183 lines (a header and one per unit), however narrow the terminal."""
    args = [
        "dump",
        "consumequeue",
        "TopicTest",
        "0",
        "--resolve",
        "--store",
        store("a-basic"),
        "--broker-config",
        broker_conf("a-basic"),
    ]
    res = run(*args, "--format", "table")
    lines = res.stdout.splitlines()
    assert res.exit_code == 0 and len(lines) == 183
    assert lines[:2] == [
        "queueOffset  file                  position  commitLogOffset  size  tagsCode  resolved                           "
        "                  ok   problem",
        "          0  00000000000000000000         0             1506  1724   2598922  "
        '{"topic":"TopicTest","queueId":0,"queueOffset":0}    yes  -',
    ]
    screen = on_terminal(args, 80)
    assert screen.count("\n") == 183  # each line wider than 80: the terminal wraps it, nothing is cut or folded
    assert screen == res.stdout  # the same lines as at 200 columns or on a pipe
    res = run(*args, "--long")
    assert res.stdout.startswith("queueOffset:     0\nfile:            00000000000000000000\n")
    assert res.stdout.count("\n\n") == 181


def test_long_is_a_table_format():
    res = run("dump", "checkpoint", "--long", "--format", "jsonl", "--store", store("a-basic"))
    assert (res.exit_code, res.stdout) == (2, "")
    assert res.stderr == "rmqctl: --long shows records as key: value blocks; it does not go with --format jsonl\n"


def test_info_says_a_checkpoint_time_that_is_not_set(store_copy):
    from rmqctl import schema as S

    root = store_copy("a-basic")
    data = bytearray((root / "checkpoint").read_bytes())
    S.INT64.pack_into(data, S.CHECKPOINT_AT["indexMsgTimestamp"], 0)
    (root / "checkpoint").write_bytes(bytes(data))
    res = run("info", "--store", root, "--broker-config", broker_conf("a-basic"), "--format", "table")
    assert [line for line in res.stdout.splitlines() if line.startswith("checkpoint ")] == [
        "checkpoint physic 2026-11-22T02:23:33.782+00:00  logics 2026-11-22T02:23:34.554+00:00  index not set (0)"
    ]


def test_table_on_a_pipe_is_full_width_without_colour():
    p = subprocess.run(
        [*RMQCTL, "info", "--format", "table", "--store", store("b-mixed")], capture_output=True, text=True
    )
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
    for outside in (10**15, hex(10**15)):  # past the data: as `locate` without --hex, where it would be, exit 1
        plain = run("locate", outside, "--store", store("a-basic"))
        hexed = run("locate", outside, "--hex", "--store", store("a-basic"))
        assert (hexed.exit_code, hexed.stdout, hexed.stderr) == (1, plain.stdout, plain.stderr), hexed


def test_off_a_terminal_no_bar_is_made():
    """Off a terminal progress() makes no tqdm bar at all: tqdm takes a lock shared with forked processes even
    for a disabled bar, and a forked writer killed while it held it hung every later one."""
    code = (
        "import sys; from rmqctl.cli.render import progress; "
        "bar = progress(10, 'x'); bar.update(4); bar.n = 6; bar.refresh(); bar.close(); "
        "print(type(bar).__name__, bar.n, 'tqdm' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.split() == ["NoBar", "6", "False"], r


def test_repair_shows_a_bar_only_on_a_terminal():
    """repair --scan-all checks every commitlog file: a tqdm bar on a terminal's stderr, nothing of it when
    stderr is a file (cron, logs)."""
    args = [
        "repair",
        "--scan-all",
        "--dry-run",
        "--store",
        store("d-crashed"),
        "--broker-config",
        broker_conf("d-crashed"),
    ]
    screen = on_terminal(args, 80)
    assert re.search(r"repair:\s+\d+%\|", screen), screen
    piped = subprocess.run([*RMQCTL, *map(str, args)], capture_output=True, text=True)
    assert piped.returncode == 0 and "dry run" in piped.stderr and "%|" not in piped.stderr


@pytest.mark.tmpfs
@pytest.mark.parametrize("name, version, expired", [("a-basic", 4, 20), ("c-v5-features", 5, 3)])
def test_info_after_a_cleanup_gives_each_queue_the_offsets_rocketmq_serves(
    tmp_path, java_oracle, name, version, expired
):
    """The cleanup deleted the oldest commitlog files; a consumequeue file goes only when all of it is dead, so
    the queues still start with units below the commitlog's minimum (in 5.x whole queues are dead). info gives
    each queue the min and max offsets RocketMQ serves after its load (correctMinOffset), not the first unit."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        root, conf = cleaned_copy(name, mnt, expired)
        served, _, summary = oracle.served(java_oracle, version, root, conf, tmp_path / "oracle")
        assert not summary["messagesRead"]["linesWithProblems"], summary["messagesRead"]
        res = run("info", "--store", root, "--broker-config", conf, "--format", "json")
        assert res.exit_code == 0, res.stderr
        queues = json.loads(res.stdout)["consumequeue"]["queues"]
        shown = {(q["topic"], q["queueId"]): (q["minOffset"], q["maxOffset"]) for q in queues}
        assert any(lo > 0 for lo, _ in served.values())  # queues that start past units the cleanup left dead
        assert shown == served


def test_info_on_a_crashed_store_shows_each_queue_max_after_the_brokers_recovery():
    """d-crashed's last record is torn: RocketMQ 4.9.7's abnormal recovery ends the commitlog before it and
    truncateDirtyLogicFiles drops its unit (OrderTopic/2@39). info gives the max the broker serves after its
    load, beside the max on disk, and the maxes agree with what RocketMQ itself recovered (truth-recovered-*)."""
    store, conf = FIXTURES / "d-crashed" / "store", broker_conf("d-crashed")
    res = run("info", "--store", store, "--broker-config", conf, "--format", "table")
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    at = lines.index(
        "consumequeues (3 topics, 599 entries; maxOffset after the broker's recovery, which ends the commitlog at "
        "782999)"
    )
    assert lines[at + 1 : at + 14] == [
        "topic         queueId  files  minOffset  maxOffset  maxOffsetOnDisk",
        "BenchTopic-7        0      1          0         50               50",
        "BenchTopic-7        1      1          0         61               61",
        "BenchTopic-7        2      1          0         47               47",
        "BenchTopic-7        3      1          0         52               52",
        "OrderTopic          0      1          0         51               51",
        "OrderTopic          1      1          0         46               46",
        "OrderTopic          2      1          0         39               40",
        "OrderTopic          3      1          0         60               60",
        "TopicTest           0      1          0         43               43",
        "TopicTest           1      1          0         46               46",
        "TopicTest           2      1          0         49               49",
        "TopicTest           3      1          0         55               55",
    ]
    recovered: dict = {}
    for u in truth("d-crashed", "truth-recovered-consumequeue.jsonl"):
        key = (u["topic"], u["queueId"])
        recovered[key] = max(recovered.get(key, 0), u["queueOffset"] + 1)
    res = run("info", "--store", store, "--broker-config", conf, "--format", "json")
    queues = json.loads(res.stdout)["consumequeue"]["queues"]
    assert {(q["topic"], q["queueId"]): q["maxOffset"] for q in queues} == recovered


def test_info_on_a_healthy_store_has_no_max_on_disk_column():
    res = run("info", "--store", FIXTURES / "a-basic" / "store", "--broker-config", broker_conf("a-basic"))
    queues = json.loads(res.stdout)["consumequeue"]["queues"]
    assert queues and all("maxOffsetOnDisk" not in q for q in queues)
    table = run("info", "--store", FIXTURES / "a-basic" / "store", "--format", "table").stdout
    assert "topic         queueId  files  minOffset  maxOffset\n" in table


@pytest.mark.parametrize(
    "name, torn",
    [
        ("c-v5-features", ("TopicV5", 3, 90, 91)),  # file consume queues
        ("j-batchcq", ("BatchTopic", 0, 435, 436)),  # BatchConsumeQueue.truncateDirtyLogicFiles
        ("i-rocksdb-cq", ("Rocks-Bench-3", 3, 39, 40)),  # RocksDBConsumeQueueStore.truncateDirty
    ],
)
def test_info_on_a_torn_5x_store_gives_the_queue_maxes_rocketmq_5_recovers(tmp_path, java_oracle, name, torn):
    """A copy of a 5.3.3 store with abort and its last record's second half zeroed: read5.sh's (min, max) after
    load() is info's for every queue, and the queue of the torn record loses its last unit."""
    conf = broker_conf(name)
    root = copy_store(name, tmp_path)
    store = Store(root, load_config(conf))
    *_, (f, last) = store.scan().records()
    store.close()
    half = last.storeSize // 2
    patch(f.path, last.position + half, bytes(last.storeSize - half))
    (root / "abort").write_bytes(b"")
    served, units, summary = oracle.served(java_oracle, 5, root, conf, tmp_path / "oracle")
    assert summary["abnormalRecovery"]
    res = run("info", "--store", root, "--broker-config", conf, "--format", "json")
    queues = json.loads(res.stdout)["consumequeue"]["queues"]
    assert {(q["topic"], q["queueId"]): (q["minOffset"], q["maxOffset"]) for q in queues} == served
    moved = [q for q in queues if q["maxOffset"] != q["maxOffsetOnDisk"]]
    assert [(q["topic"], q["queueId"], q["maxOffset"], q["maxOffsetOnDisk"]) for q in moved] == [torn]
    if name == "i-rocksdb-cq":  # the RocksDB queue's maxPhysicOffset: its unit before the max after recovery
        offsets = {(t, qid, o): phy for t, qid, o, phy, _, _ in units}
        assert moved[0]["maxPhysicOffset"] == offsets[(torn[0], torn[1], torn[2] - 1)]


def flip_body_byte(root, conf, at: int):
    """Invert one byte in the middle of the record at commitlog offset `at` (its body): its CRC fails."""
    store = Store(root, load_config(conf))
    f = next(f for f in store.commitlog.files if f.start <= at < f.start + store.commitlog.file_size)
    pos = at - f.start
    size = struct.unpack_from(">i", f.buf, pos)[0]
    byte = f.buf[pos + size // 2]
    store.close()
    patch(f.path, pos + size // 2, bytes([byte ^ 0xFF]))


def queue_file(root, kind: str, topic: str, queue_id: int):
    return sorted((root / kind / topic / str(queue_id)).iterdir())[-1]


def zero_last_units(path, dtype, count: int):
    """Zero the last `count` written units of a consume queue file."""
    units = np.fromfile(path, dtype)
    written = int(np.count_nonzero(units["size"]))
    units[written - count : written] = np.zeros(count, dtype)
    units.tofile(path)


def served_and_shown(java_oracle, tmp_path, version: int, root, conf, *options) -> tuple[dict, dict, dict]:
    """(RocketMQ's (min, max) per queue after load(), info's, info's consumequeue part)."""
    served, _, _ = oracle.served(java_oracle, version, root, conf, tmp_path / "oracle")
    res = run("info", "--store", root, "--broker-config", conf, *options, "--format", "json")
    assert res.exit_code == 0, res.stderr
    cq = json.loads(res.stdout)["consumequeue"]
    return served, {(q["topic"], q["queueId"]): (q["minOffset"], q["maxOffset"]) for q in cq["queues"]}, cq


@pytest.mark.parametrize("name, version, at", [("j-batchcq", 5, 476172), ("d-crashed", 4, 768886)])
def test_info_ends_the_queues_where_the_brokers_recovery_walk_stops(tmp_path, java_oracle, name, version, at):
    """A record before the commitlog's last fails its body CRC: the broker's recovery walk (checkMessageAndReturnSize
    with checkCRCOnRecover; j-batchcq: a clean shutdown's recoverNormally, d-crashed: recoverAbnormally from its
    start file) ends the commitlog there, and truncateDirtyLogicFiles drops every unit from that record on, not
    only the units past the last record on disk. info's maxes are RocketMQ's own."""
    conf = broker_conf(name)
    root = copy_store(name, tmp_path)
    flip_body_byte(root, conf, at)
    served, shown, cq = served_and_shown(java_oracle, tmp_path, version, root, conf)
    assert cq["recoveryEnd"] == at
    assert shown == served


def test_info_after_a_crash_of_a_5_3_rocksdb_queue_store_walks_from_the_checkpoints_file(tmp_path, java_oracle):
    """i-rocksdb-cq with abort and a body byte flipped in its second file: RocketMQ 5.3.3 starts the abnormal
    recovery at the newest file whose first record's offset is within the RocksDB queue's max physical offset
    (327680), past the damage, so nothing is cut; the store time rule would start at the first file and cut
    every queue at the flipped record."""
    conf = broker_conf("i-rocksdb-cq")
    root = copy_store("i-rocksdb-cq", tmp_path)
    flip_body_byte(root, conf, 67651)
    (root / "abort").write_bytes(b"")
    served, shown, cq = served_and_shown(java_oracle, tmp_path, 5, root, conf)
    assert shown == served and cq["entries"] == 653


def test_info_table_of_a_store_whose_recovery_stops_at_a_crc_failure(tmp_path):
    conf = broker_conf("j-batchcq")
    root = copy_store("j-batchcq", tmp_path)
    flip_body_byte(root, conf, 476172)
    res = run("info", "--store", root, "--broker-config", conf, "--format", "table")
    lines = res.stdout.splitlines()
    at = lines.index(
        "consumequeues (3 topics, 947 entries, 2 BatchCQ; maxOffset after the broker's recovery, which ends the "
        "commitlog at 476172)"
    )
    assert lines[at + 1 : at + 10] == [
        "topic       queueId  files  minOffset  maxOffset  maxOffsetOnDisk  kind",
        "BatchTopic        0      7          0        429              436  BatchCQ",
        "BatchTopic        1      6          0        319              322  BatchCQ",
        "Plain-Two         0      1          0         60               60  topic",
        "Plain-Two         1      1          0         41               41  topic",
        "PlainTopic        0      1          0         29               29  topic",
        "PlainTopic        1      1          0         17               17  topic",
        "PlainTopic        2      1          0         24               24  topic",
        "PlainTopic        3      1          0         28               29  topic",
    ]


def test_info_counts_the_units_abnormal_recovery_dispatches_again(tmp_path, java_oracle):
    """d-crashed (4.9.7, abort) with TopicTest/3's last unit zeroed: recoverAbnormally dispatches every record it
    walks before it truncates, so the queue gets that unit back (55, not the 54 on disk), as RocketMQ's load does."""
    conf = broker_conf("d-crashed")
    root = copy_store("d-crashed", tmp_path)
    zero_last_units(queue_file(root, "consumequeue", "TopicTest", 3), S.CQ_DTYPE, 1)
    served, shown, cq = served_and_shown(java_oracle, tmp_path, 4, root, conf)
    assert shown == served
    assert [q for q in cq["queues"] if (q["topic"], q["queueId"]) == ("TopicTest", 3)] == [
        {"topic": "TopicTest", "queueId": 3, "files": 1, "minOffset": 0, "maxOffset": 55, "maxOffsetOnDisk": 54,
         "kind": "topic"}
    ]  # fmt: skip
    table = run("info", "--store", root, "--broker-config", conf, "--format", "table").stdout.splitlines()
    assert "TopicTest           3      1          0         55               54" in table


def test_info_shows_a_queue_abnormal_recovery_makes(tmp_path, java_oracle):
    """d-crashed without TopicTest/3's directory: the recovery's dispatch makes the queue (findOrCreateConsumeQueue)
    with every unit of the records it walks; info lists it, with no file on disk."""
    conf = broker_conf("d-crashed")
    root = copy_store("d-crashed", tmp_path)
    shutil.rmtree(root / "consumequeue" / "TopicTest" / "3")
    served, shown, _ = served_and_shown(java_oracle, tmp_path, 4, root, conf)
    assert shown == served
    table = run("info", "--store", root, "--broker-config", conf, "--format", "table").stdout.splitlines()
    assert "TopicTest           3      0          0         55                0" in table


def test_info_lists_an_emptied_queue_the_recovery_fills_once(tmp_path, java_oracle):
    """d-crashed with TopicTest/3's files removed but its directory kept: the queue is listed from the directory
    and filled by the recovery's dispatch; one row, not a second one for the queue the dispatch makes."""
    conf = broker_conf("d-crashed")
    root = copy_store("d-crashed", tmp_path)
    for f in (root / "consumequeue" / "TopicTest" / "3").iterdir():
        f.unlink()
    served, shown, cq = served_and_shown(java_oracle, tmp_path, 4, root, conf)
    assert shown == served
    rows = [
        (q["files"], q["minOffset"], q["maxOffset"])
        for q in cq["queues"]
        if (q["topic"], q["queueId"]) == ("TopicTest", 3)
    ]
    assert rows == [(0, 0, 55)] and cq["entries"] == 599


def test_info_on_a_crashed_store_with_a_queue_file_cut_short_answers(tmp_path):
    """d-crashed with TopicTest/3's file cut to 10 units: the recovery's dispatch writes the queue's units past
    the file's end. The broker's load refuses a queue file of another length (MappedFileQueue.load: "length not
    matched"), so no max after its recovery is RocketMQ's to compare with; info must still answer with the
    files' own max, not crash on the units written past the cut. Found by the torture suite's fuzzing."""
    conf = broker_conf("d-crashed")
    root = copy_store("d-crashed", tmp_path)
    with open(queue_file(root, "consumequeue", "TopicTest", 3), "r+b") as f:
        f.truncate(10 * S.CQ_UNIT_SIZE)
    res = run("info", "--store", root, "--broker-config", conf, "--format", "json")
    assert res.exit_code == 0, res.stderr
    rows = [
        q for q in json.loads(res.stdout)["consumequeue"]["queues"] if (q["topic"], q["queueId"]) == ("TopicTest", 3)
    ]
    assert [q["maxOffsetOnDisk"] for q in rows] == [10]


def test_info_counts_the_batchcq_units_abnormal_recovery_dispatches_again(tmp_path, java_oracle):
    """j-batchcq (5.3.3) with abort and BatchTopic/0's last two units zeroed: putBatchMessagePositionInfo writes
    them again during the recovery walk (436, not 434)."""
    conf = broker_conf("j-batchcq")
    root = copy_store("j-batchcq", tmp_path)
    zero_last_units(queue_file(root, "batchconsumequeue", "BatchTopic", 0), S.BCQ_DTYPE, 2)
    (root / "abort").write_bytes(b"")
    served, shown, cq = served_and_shown(java_oracle, tmp_path, 5, root, conf)
    assert shown == served
    assert [(q["maxOffset"], q["maxOffsetOnDisk"]) for q in cq["queues"] if q["topic"] == "BatchTopic"] == [
        (436, 434),
        (322, 322),
    ]


def test_redispatched_units_are_kept_for_two_files_whatever_their_number():
    """The recovery's dispatch of 200,000 units into a queue of 1,000-unit files: what it keeps is bounded by two
    files' units (the only ones info reads: made_min's first file, truncated's last), not one Python object per
    unit; unit by unit (put) and a run at a time (put_run) write the same units."""
    file_size, count = 1_000 * S.CQ_UNIT_SIZE, 200_000
    offsets = np.arange(count, dtype=np.int64) * 100 + 1_000
    sizes, cq_offsets = np.full(count, 100, np.int64), np.arange(count, dtype=np.int64) + 3

    def queue():
        return ReplayedQueue(QueueRecovery("T/0", [], file_size, -1, None, None))

    tracemalloc.start()
    one_by_one = queue()
    for args in zip(offsets.tolist(), sizes.tolist(), cq_offsets.tolist()):
        one_by_one.put(*args)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert held < 256 * 1024  # (a dict entry and a 1-unit array per unit held 200,000 Python objects)
    in_runs = queue()
    in_runs.put_run(offsets, sizes, cq_offsets)
    for q in (one_by_one, in_runs):
        assert (q.written.count, q.end, q.max_phy, q.last_max) == (
            count + 3,
            (count + 3) * 20,
            offsets[-1] + 100,
            count + 3,
        )
        first, last = q.written.first, q.written.last
        assert (first.start, first.n, list(first.units["size"][:4])) == (0, 1_000, [S.PRE_BLANK_SIZE] * 3 + [100])
        assert (last.start, last.n) == (200 * file_size, 3)
    assert (in_runs.written.last.units[:3] == one_by_one.written.last.units[:3]).all()
    assert (in_runs.written.first.units[:1000] == one_by_one.written.first.units[:1000]).all()


def test_info_memory_does_not_grow_with_the_number_of_sparse_queue_files(tmp_path):
    """10 and 200 queues, each one sparse 6,000,000-byte file holding 8 units (a-basic's commitlog): info lets
    each queue's files go once read and reads them only up to their end of data, so its peak RSS is the same for
    both. Keeping them mapped and read whole held every file's pages (about 1.3 GB for 200). Measured after a
    first run, whose kernel compiling (a fresh installation's) is not the queues' memory."""
    conf = tmp_path / "broker.conf"
    conf.write_text(
        broker_conf("a-basic")
        .read_text()
        .replace("mappedFileSizeConsumeQueue=1280", "mappedFileSizeConsumeQueue=6000000")
    )
    units = [
        u for u in truth("a-basic", "truth-consumequeue.jsonl") if (u["topic"], u["queueId"]) == ("BenchTopic-7", 0)
    ]
    body = np.array([(u["commitLogOffset"], u["size"], u["tagsCode"]) for u in units[:8]], S.CQ_DTYPE).tobytes()
    measure = (
        "import resource, sys; from rmqctl.config import load_config; from rmqctl.store import Store; "
        "from rmqctl.views.inspect import info; "
        "out = info(Store(sys.argv[1], load_config(sys.argv[2]))); "
        "print(len(out['consumequeue']['queues']), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )

    def peak_kib(queues: int) -> int:
        root = tmp_path / str(queues) / "store"
        if not root.exists():
            root = copy_store("a-basic", tmp_path / str(queues))
            shutil.rmtree(root / "consumequeue")
        for queue_id in range(queues):
            (root / "consumequeue" / "Many" / str(queue_id)).mkdir(parents=True, exist_ok=True)
            with open(root / "consumequeue" / "Many" / str(queue_id) / ("0" * 20), "wb") as f:
                f.write(body)
                f.truncate(6_000_000)
        res = subprocess.run([sys.executable, "-c", measure, root, conf], capture_output=True, text=True, check=True)
        listed, peak = map(int, res.stdout.split())
        assert listed == queues
        return peak

    peak_kib(10)  # (compiles what a fresh installation has not)
    few, many = peak_kib(10), peak_kib(200)
    assert many - few < 150 * 1024, (few, many)


def test_info_truncates_from_5_4_on_when_the_recoverys_dispatch_reaches_its_end(tmp_path, java_oracle):
    """c-v5-features with abort, the last record's unit (TopicV5/3@90) zeroed and a unit in the middle of another
    queue pointing past the commitlog's end. Before the recovery's dispatch no queue reaches the end, so 5.3.3's
    CommitLog does not truncate (read5.sh agrees: the other queue keeps its 31). From apache/rocketmq 9d9431dc1c
    (5.4) ConsumeQueueStore.truncateDirty checks after the dispatch, which gave TopicV5/3 its unit back: the
    truncation runs and the other queue ends before the unit that points past the end."""
    conf = broker_conf("c-v5-features")
    root = copy_store("c-v5-features", tmp_path)
    zero_last_units(queue_file(root, "consumequeue", "TopicV5", 3), S.CQ_DTYPE, 1)
    other = next(p for p in (root / "consumequeue").iterdir() if p.name.startswith("LongTopic200"))
    units = np.fromfile(queue_file(root, "consumequeue", other.name, 0), S.CQ_DTYPE)
    units[5]["commitLogOffset"] = 452578 + 4096
    units.tofile(queue_file(root, "consumequeue", other.name, 0))
    (root / "abort").write_bytes(b"")
    served, shown, cq = served_and_shown(java_oracle, tmp_path, 5, root, conf)
    assert shown == served
    assert shown[(other.name, 0)] == (0, 31) and shown[("TopicV5", 3)] == (0, 91)
    res = run("info", "--store", root, "--broker-config", conf, "--rocketmq-version", "5.5", "--format", "json")
    queues = json.loads(res.stdout)["consumequeue"]["queues"]
    assert {(q["topic"], q["queueId"]): (q["minOffset"], q["maxOffset"]) for q in queues} == {
        **shown,
        (other.name, 0): (0, 5),
    }


@pytest.mark.tmpfs
def test_locate_a_queue_offset_whose_record_the_cleanup_deleted(tmp_path):
    """The unit is still in its consumequeue file, but its record went with the cleanup: locate says so and
    where the broker serves the queue from (87: RocketMQ 4.9.7's getMinOffsetInQueue), with exit 1 as for any
    offset outside the data; the first live unit is found as before."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        root, conf = cleaned_copy("a-basic", mnt, 20)
        args = ("locate", "--store", root, "--broker-config", conf, "--topic", "BenchTopic-7", "--format", "jsonl")
        dead = run(*args, "86")
        assert dead.exit_code == 1
        why = (
            "its record (commitlog offset 1301850) went with the cleanup (the commitlog starts at 1310720); the "
            "broker serves this queue from queue offset 87"
        )
        assert json.loads(dead.stdout) == {
            "topic": "BenchTopic-7",
            "queueId": 0,
            "queueOffset": 86,
            "file": "00000000000000001280",
            "fileFromOffset": 1280,
            "position": 440,
            "exists": True,
            "commitLogOffset": 1301850,
            "size": 965,
            "tagsCode": 2598922,
            "written": True,
            "expired": True,
            "nothingThere": why,
        }
        assert dead.stderr == f"rmqctl: BenchTopic-7/0 queue offset 86: {why}\n"
        live = run(*args, "87")
        assert live.exit_code == 0 and live.stderr == ""
        assert json.loads(live.stdout)["commitLogOffset"] == 1322011 and "expired" not in json.loads(live.stdout)


@pytest.mark.tmpfs
def test_locate_a_rocksdb_queue_unit_whose_record_the_cleanup_deleted(tmp_path):
    """The same in the broker's own RocksDB queue (i-rocksdb-cq, all but its last commitlog file cleaned): its
    compaction filter has not dropped the unit yet; RocketMQ 5.3.3 serves RocksTopicA/0 from 52."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        root, conf = cleaned_copy("i-rocksdb-cq", mnt, 5)
        args = ("locate", "--store", root, "--broker-config", conf, "--topic", "RocksTopicA", "--format", "jsonl")
        dead = run(*args, "3")
        why = (
            "its record (commitlog offset 8122) went with the cleanup (the commitlog starts at 327680); the "
            "broker serves this queue from queue offset 52"
        )
        got = json.loads(dead.stdout)
        assert (dead.exit_code, got["commitLogOffset"], got["expired"], got["nothingThere"]) == (1, 8122, True, why)
        assert dead.stderr == f"rmqctl: RocksTopicA/0 queue offset 3: {why}\n"
        live = run(*args, "52")
        assert live.exit_code == 0 and live.stderr == "" and "expired" not in json.loads(live.stdout)
