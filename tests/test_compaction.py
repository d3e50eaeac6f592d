"""Compaction topics (rmqctl.compaction): dump and verify of compaction/compactionLog and compactionCq.

No RocketMQ code here writes a compaction log (the broker's CompactionService needs a running broker and its
scheduler), so `write_compaction` below lays one out from real j-batchcq records step by step as RocketMQ
5.3.3's CompactionLog.CompactionAppendMessageCallback and SparseConsumeQueue.putEndPositionInfo do; what was
checked against RocketMQ itself and what was not is said in formats/compaction.md."""

from __future__ import annotations

from rmqctl import schema as S
from rmqctl.compaction import file_sizes
from rmqctl.config import BrokerConfig, load_config
from rmqctl.dispatch import tags_code
from rmqctl.store import Store, offset_to_name

from conftest import broker_conf, jsonl, patch, run

NAME = "j-batchcq"
CQ_SIZE, LOG_CONFIG = 8 * S.BCQ_UNIT_SIZE, 8192  # the CQ file fills after 7 units; the log is 22 CQ sizes
BLANK_MAGIC = -875286124  # MessageDecoder.BLANK_MAGIC_CODE


def conf_with_compaction(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text(
        broker_conf(NAME).read_text() + f"compactionCqMappedFileSize={CQ_SIZE}\ncompactionMappedFileSize={LOG_CONFIG}\n"
    )
    return conf


def write_compaction(root, conf, topic: str, queue_id: int) -> list[tuple[int, int]]:
    """The queue's records copied as CompactionAppendMessageCallback.doAppend does. Returns (log position,
    commitlog offset) per record."""
    config = load_config(conf)
    log_size, cq_size = file_sizes(config)
    store = Store(root, config)
    records = [(f, m) for f, m in store.scan().records() if (m.topic, m.queueId) == (topic, queue_id)]
    log_dir = root / "compaction" / "compactionLog" / topic / str(queue_id)
    cq_dir = root / "compaction" / "compactionCq" / topic / str(queue_id)
    log_dir.mkdir(parents=True)
    cq_dir.mkdir(parents=True)
    start, log, cq, placed = 0, bytearray(log_size), bytearray(cq_size), []
    pos = wrote = 0

    def flush():
        (log_dir / offset_to_name(start)).write_bytes(log)
        (cq_dir / offset_to_name(start)).write_bytes(cq)

    for f, m in records:
        data = bytearray(f.buf[m.position : m.position + m.storeSize])
        if wrote + S.BCQ_UNIT_SIZE >= cq_size or len(data) + 8 > log_size - pos:  # the CQ or the log would fill
            cq[wrote : wrote + S.BCQ_UNIT_SIZE] = S.BCQ_UNIT.pack(-1, 0, 0, 0, 0, 0, S.BCQ_INVALID_POS, 0)
            log[pos : pos + 8] = S.INT32.pack(log_size - pos) + S.INT32.pack(BLANK_MAGIC)
            flush()
            start, log, cq, pos, wrote = start + log_size, bytearray(log_size), bytearray(cq_size), 0, 0
        data[28:36] = S.INT64.pack(start + pos)  # PHYSICALOFFSET: the place in the compaction log
        log[pos : pos + len(data)] = data
        cq[wrote : wrote + S.BCQ_UNIT_SIZE] = S.BCQ_UNIT.pack(
            start + pos, len(data), tags_code(m, config), m.storeTimestamp, m.queueOffset, 1, S.BCQ_INVALID_POS, 0
        )
        placed.append((start + pos, f.start + m.position))
        pos, wrote = pos + len(data), wrote + S.BCQ_UNIT_SIZE
    flush()
    return placed


def test_file_sizes_follow_compaction_logs_rule():
    """getCompactionLogSize: at least 5 CQ sizes; the lower multiple when within half a CQ size above it."""
    sizes = lambda log, cq: file_sizes(BrokerConfig(compactionMappedFileSize=log, compactionCqMappedFileSize=cq))  # noqa: E731
    assert sizes(100 * 1024 * 1024, 10 * 1024 * 1024) == (104857460, 10485746)  # 227951 units; 10 x that + 140
    assert sizes(LOG_CONFIG, CQ_SIZE) == (22 * CQ_SIZE, CQ_SIZE)  # 8192 = 22 x 368 + 96
    assert sizes(1000, CQ_SIZE) == (5 * CQ_SIZE, CQ_SIZE)
    assert sizes(23 * CQ_SIZE - 10, CQ_SIZE) == (23 * CQ_SIZE, CQ_SIZE)


def test_dump_shows_each_record_in_its_place_and_each_files_end(store_copy, tmp_path):
    root, conf = store_copy(NAME), conf_with_compaction(tmp_path)
    placed = write_compaction(root, conf, "PlainTopic", 0)
    rows = jsonl(run("dump", "compaction", "PlainTopic", "0", "--store", root, "--broker-config", conf).stdout)
    messages = [r for r in rows if "end" not in r]
    assert [r["offset"] for r in messages] == [p for p, _ in placed] and all(r["inPlace"] for r in messages)
    assert [r["queueOffset"] for r in messages] == list(range(29))  # the queue offsets stay the commitlog's
    ends = [r for r in rows if "end" in r]
    assert ends and all(r["end"] == "blank" for r in ends)
    units = jsonl(run("dump", "compaction", "PlainTopic", "0", "--cq", "--store", root, "--broker-config", conf).stdout)
    real = [u for u in units if "end" not in u]
    assert [u["commitLogOffset"] for u in real] == [p for p, _ in placed]
    assert {u["batchSize"] for u in real} == {1} and len(units) - len(real) == len(ends)


def test_verify_takes_the_brokers_layout_as_sound(store_copy, tmp_path):
    root, conf = store_copy(NAME), conf_with_compaction(tmp_path)
    write_compaction(root, conf, "PlainTopic", 0)
    res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
    assert (res.exit_code, res.stdout) == (0, "")


def test_verify_finds_what_the_broker_would_trip_on(store_copy, tmp_path):
    root, conf = store_copy(NAME), conf_with_compaction(tmp_path)
    placed = write_compaction(root, conf, "PlainTopic", 0)
    sizes = {
        r["offset"]: r["storeSize"]
        for r in jsonl(run("dump", "compaction", "PlainTopic", "0", "--store", root, "--broker-config", conf).stdout)
        if "end" not in r
    }
    log_size, _ = file_sizes(load_config(conf))
    log = root / "compaction" / "compactionLog" / "PlainTopic" / "0"
    cq = root / "compaction" / "compactionCq" / "PlainTopic" / "0"
    patch(log / offset_to_name(0), placed[1][0] + 28, S.INT64.pack(5))  # the second record's PHYSICALOFFSET
    patch(cq / offset_to_name(0), 2 * S.BCQ_UNIT_SIZE + 8, S.INT32.pack(7))  # the third unit's size
    (cq / offset_to_name(log_size)).unlink()
    (root / "compaction" / "position-checkpoint").write_text("{")
    res = run("verify", "--store", root, "--broker-config", conf, "--format", "jsonl")
    found = [(f["kind"], f["file"], f["detail"]) for f in jsonl(res.stdout)]
    second_log = f"compaction/compactionLog/PlainTopic/0/{offset_to_name(log_size)}"
    assert res.exit_code == 1
    assert sorted(found) == sorted(
        [
            (
                "compaction-checkpoint",
                "compaction/position-checkpoint",
                "compaction position checkpoint: ends in the middle of the document",
            ),
            (
                "compaction-cq-mismatch",
                f"compaction/compactionCq/PlainTopic/0/{offset_to_name(0)}",
                f"PlainTopic/0 compaction CQ unit at {placed[2][0]}: size 7, the record's {sizes[placed[2][0]]}",
            ),
            (
                "compaction-file-mismatch",
                second_log,
                f"PlainTopic/0: log file {offset_to_name(log_size)} has no CQ file of that name: the broker's load "
                "refuses this queue",
            ),
            (
                "compaction-physical-offset",
                f"compaction/compactionLog/PlainTopic/0/{offset_to_name(0)}",
                f"PlainTopic/0 compaction log: PHYSICALOFFSET 5, but the record is at {placed[1][0]}",
            ),
        ]
    )
