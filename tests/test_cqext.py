"""ConsumeQueueExt (rmqctl.cqext) on a store RocketMQ 4.9.7's own code wrote with enableConsumeQueueExt=true
(tests/java/CqExtWrite4.java): verify reads it and finds it sound, each damage verify names is what RocketMQ
reads back from a changed copy (its ConsumeQueue.getExt, or a load that fails), and the writers that write
consume queues keep off the store while the others run."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from rmqctl import schema as S

import oracle
from conftest import broker_conf, jsonl, one_line_error, patch, run

HARNESS = Path(__file__).parent / "java" / "CqExtWrite4.java"
MESSAGES = 120  # 40 per queue: 2 consume queue files of 30 units, 3 ext files of 19 units each
CONF = (
    "enableConsumeQueueExt=true\nmappedFileSizeCommitLog=1048576\nmappedFileSizeConsumeQueue=600\n"
    "mappedFileSizeConsumeQueueExt=400\nbrokerIP1=127.0.0.1\n"
)
EXT = Path("consumequeue_ext") / "ExtTopicA" / "0"


def rocketmq_units(oracle_home: Path, root: Path, conf: Path, log: Path, *mode) -> list[str]:
    """CqExtWrite4's lines: one per consume queue unit (with what ConsumeQueue.getExt returns), then 'loaded ...'."""
    return oracle.run_harness4(oracle_home, HARNESS, [root, conf, MESSAGES, *mode], log)


@pytest.fixture(scope="module")
def written(java_oracle, tmp_path_factory):
    """(store root, broker.conf, RocketMQ's lines) of the store RocketMQ wrote; tests change copies only."""
    out = tmp_path_factory.mktemp("cqext")
    root = out / "store"
    root.mkdir()
    conf = out / "broker.conf"
    conf.write_text(CONF)
    lines = rocketmq_units(java_oracle, root, conf, out / "store.log")
    assert lines[-1] == "loaded true" and len(lines) == MESSAGES + 1
    return root, conf, lines


def test_verify_reads_the_ext_units_rocketmq_wrote_and_finds_them_sound(written):
    root, conf, lines = written
    ext_units = [line for line in lines[:-1] if int(line.split()[6]) <= S.CQ_EXT_MAX_ADDRESS]
    assert len(ext_units) == MESSAGES  # every unit's tags live in its ext unit
    res = run("verify", "--store", root, "--broker-config", conf)
    assert (res.exit_code, res.stdout) == (0, "")
    assert res.stderr.startswith("verify: 120 records") and res.stderr.rstrip().endswith(": sound"), res.stderr
    parts = json.loads(run("info", "--store", root, "--broker-config", conf, "--format", "json").stdout)["parts"]
    assert {"kind": "consumequeue-ext", "read": True}.items() <= next(
        p for p in parts if p["kind"] == "consumequeue-ext"
    ).items()


def test_dump_shows_what_rocketmq_reads_from_each_ext_unit(written):
    """dump consumequeue: each unit's ext address looked up, as ConsumeQueue.getExt returns it (bitmap sizes are 0)."""
    root, conf, lines = written
    want = [line.split()[1:] for line in lines[:-1]]
    got = []
    for topic, queue_id in (("ExtTopicA", 0), ("ExtTopicA", 1), ("ExtTopicB", 0)):
        res = run("dump", "consumequeue", topic, queue_id, "--store", root, "--broker-config", conf)
        for r in jsonl(res.stdout):
            ext = f"{r['extTagsCode']}:{r['extMsgStoreTime']}:0"
            got.append(
                [
                    topic,
                    str(queue_id),
                    *map(str, (r["queueOffset"], r["commitLogOffset"], r["size"], r["tagsCode"])),
                    ext,
                ]
            )
    assert got == want


def changed_tags(root: Path):
    patch(root / EXT / "00000000000000000000", 40 + 2, struct.pack(">q", 12345))


def changed_time(root: Path):
    patch(root / EXT / "00000000000000000000", 40 + 10, struct.pack(">q", 1))


def zeroed_size(root: Path):
    patch(root / EXT / "00000000000000000000", 40, struct.pack(">h", 0))


def last_file_gone(root: Path):
    os.unlink(root / EXT / "00000000000000000800")


def file_cut_short(root: Path):
    os.truncate(root / EXT / "00000000000000000400", 300)


def walk_past_the_end(root: Path):
    patch(root / EXT / "00000000000000000800", 0, struct.pack(">h", 32767))


def queue_dir_gone(root: Path):
    shutil.rmtree(root / "consumequeue_ext" / "ExtTopicB")


def address(offset: int) -> bytes:
    """ConsumeQueueExt.decorate: the tagsCode of the ext unit at `offset`."""
    return struct.pack(">q", offset - (1 << 63))


def last_entry_at_the_first_unit(root: Path):
    """ExtTopicA/0's last entry (39: file ...600, position 180) names the first ext unit: the load's
    truncateByMaxAddress cuts the ext files after it."""
    patch(root / "consumequeue" / "ExtTopicA" / "0" / "00000000000000000600", 180 + 12, address(0))


def unit_past_the_file(root: Path):
    """Entry 2 names offset 390, where a unit of size 20 would run past the 400-byte file."""
    patch(root / "consumequeue" / "ExtTopicA" / "0" / "00000000000000000000", 40 + 12, address(390))
    patch(root / EXT / "00000000000000000000", 390, struct.pack(">h", 20))


def last_entry_plain_before_it_an_address(root: Path):
    """Entry 39 holds a plain tag, entry 38 the address of the second unit: recover's maxExtAddr is entry 38's."""
    cq = root / "consumequeue" / "ExtTopicA" / "0" / "00000000000000000600"
    patch(cq, 180 + 12, struct.pack(">q", 2598904))
    patch(cq, 160 + 12, address(20))


def last_entry_unit_throws(root: Path):
    """The last entry names a unit running past its file: truncateByMaxAddress throws inside recover."""
    patch(root / "consumequeue" / "ExtTopicA" / "0" / "00000000000000000600", 180 + 12, address(390))
    patch(root / EXT / "00000000000000000000", 390, struct.pack(">h", 20))


def gap_and_walk_past_the_end(root: Path):
    os.unlink(root / EXT / "00000000000000000400")
    walk_past_the_end(root)


def not_enabled(root: Path):
    """broker.conf without the extension (the ext files cut short, which such a broker never loads)."""
    (root.parent / "off.conf").write_text(CONF.replace("enableConsumeQueueExt=true", "enableConsumeQueueExt=false"))
    file_cut_short(root)


# change -> (verify's first finding: kind, severity, text), the units RocketMQ reads differently from the written
# store (each line's ext part as CqExtWrite4 prints it) or, for a load that fails, None
CASES = {
    "tags": (changed_tags, ("cq-ext-tags", "error", "ExtTopicA/0 entry 2:"), {"A 0 2": "12345:"}),
    "store-time": (changed_time, ("cq-ext-store-time", "warning", "ExtTopicA/0 entry 2:"), {"A 0 2": ":1:0"}),
    "zeroed-size": (zeroed_size, ("cq-ext-missing", "warning", "ExtTopicA/0 entry 2:"), {"A 0 2": "none"}),
    "last-file-gone": (last_file_gone, ("cq-ext-missing", "warning", "entry 38:"), {"A 0 38": "none", "A 0 39": "none"}),
    "file-cut-short": (file_cut_short, ("file-size", "error", "300 bytes, not 400 (mappedFileSizeConsumeQueueExt)"), None),
    "walk-past-the-end": (walk_past_the_end, ("cq-ext-recovery", "error", "position 0"), None),
    "queue-dir-gone": (queue_dir_gone, ("cq-ext-missing", "warning", "ExtTopicB/0 entry 0:"), {f"B 0 {i}": "none" for i in range(40)}),
    "truncated-by-the-last-entry": (
        last_entry_at_the_first_unit,
        ("cq-ext-truncated", "warning", "deletes 2 extension file(s)"),
        {**{f"A 0 {i}": "none" for i in range(1, 39)}, "A 0 39": "2598902:"},
    ),
    "unit-past-the-file": (unit_past_the_file, ("cq-ext-unreadable", "error", "ExtTopicA/0 entry 2:"), {"A 0 2": "throws"}),
    "last-entry-plain": (
        last_entry_plain_before_it_an_address,
        ("cq-ext-truncated", "warning", "deletes 2 extension file(s)"),
        {**{f"A 0 {i}": "none" for i in range(2, 38)}, "A 0 38": "0:"},
    ),
    "last-entry-unit-throws": (last_entry_unit_throws, ("cq-ext-recovery", "error", "truncateByMaxAddress throws"), None),
    "gap-and-walk-past-the-end": (gap_and_walk_past_the_end, ("cq-ext-recovery", "error", "position 0"), None),
    "not-enabled": (
        not_enabled,
        ("cq-ext-missing", "warning", "enableConsumeQueueExt=false"),
        {f"{t} {q} {i}": "none" for t, q in (("A", 0), ("A", 1), ("B", 0)) for i in range(40)},
    ),
}  # fmt: skip
EXT_KINDS = ("cq-ext-missing", "cq-ext-unreadable", "cq-ext-tags", "cq-ext-store-time")


def entries_counted(finding: dict) -> int:
    more = re.search(r"\((\d+) more such entries in the queue\)$", finding["detail"])
    return 1 + (int(more.group(1)) if more else 0)


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_damage_is_what_rocketmq_reads(written, tmp_path, java_oracle, case):
    """verify on a changed copy against RocketMQ 4.9.7 loading another copy of it (CqExtWrite4 --read): verify's
    first finding, and as many entries in its ext findings as RocketMQ reads differently (the ext unit getExt
    returns, none, or an exception), or a load that fails where verify says the broker does not load; dump
    consumequeue shows each changed entry as RocketMQ read it."""
    root, written_conf, lines = written
    change, (kind, severity, detail), changed = CASES[case]
    copy = Path(shutil.copytree(root, tmp_path / "store"))
    change(copy)
    conf = tmp_path / "off.conf" if (tmp_path / "off.conf").exists() else written_conf
    res = run("verify", "--store", copy, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 1, res.stderr
    found = jsonl(res.stdout)
    assert any((f["kind"], f["severity"]) == (kind, severity) and detail in f["detail"] for f in found), found
    read = rocketmq_units(java_oracle, Path(shutil.copytree(copy, tmp_path / "java")), conf, tmp_path / "log", "--read")
    if changed is None:
        assert read == ["loaded false"]
        return
    assert read[-1] == "loaded true"
    differ = {}  # the entries holding an address that RocketMQ reads differently
    for line in read[:-1]:
        _, topic, queue_id, qoff, _, _, tags, ext = line.split()
        if line not in lines and int(tags) <= S.CQ_EXT_MAX_ADDRESS:
            differ[f"{topic[-1]} {queue_id} {qoff}"] = ext
    assert differ.keys() == changed.keys() and all(want in differ[k] for k, want in changed.items()), differ
    assert sum(entries_counted(f) for f in found if f["kind"] in EXT_KINDS) == len(differ)
    dumped = {}  # dump consumequeue shows each changed entry's ext unit as RocketMQ read it
    for key, ext in differ.items():
        topic, queue_id, qoff = key.split()
        if (topic, queue_id) not in dumped:
            res = run("dump", "consumequeue", f"ExtTopic{topic}", queue_id, "--store", copy, "--broker-config", conf)
            dumped[topic, queue_id] = {r["queueOffset"]: r for r in jsonl(res.stdout)}
        row = dumped[topic, queue_id][int(qoff)]
        if "extTagsCode" in row:
            assert f"{row['extTagsCode']}:{row['extMsgStoreTime']}:0" == ext, row
        else:
            assert {"unreadable": "throws"}.get(row["extUnit"], "none") == ext, row


@pytest.mark.parametrize(
    "writer",
    [
        ("rebuild", "consumequeue", "--dry-run"),
        ("repair", "--dry-run"),
        ("clean", "--apply"),
        ("append", "--topic", "ExtTopicA", "--body", "x"),
    ],
)
def test_writers_of_consume_queues_keep_off_and_say_why(written, tmp_path, writer):
    root, conf, _ = written
    copy = Path(shutil.copytree(root, tmp_path / "store"))
    res = run(*writer, "--store", copy, "--broker-config", conf)
    one_line_error(res, "consumequeue_ext", "ConsumeQueueExt", "read but not written by this version", "writes nothing")
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in root.iterdir())


@pytest.mark.parametrize("writer", [("rebuild", "consumequeue"), ("append", "--topic", "TopicTest", "--body", "x")])
def test_writers_of_consume_queues_keep_off_a_store_whose_broker_turns_the_ext_units_on(store_copy, tmp_path, writer):
    """enableConsumeQueueExt=true before the first unit: the broker would write ext units and their addresses as
    tagsCodes; rmqctl writes neither, so its queue writers refuse; rebuild index runs."""
    root = store_copy("a-basic")
    conf = tmp_path / "broker.conf"
    conf.write_text(broker_conf("a-basic").read_text() + "enableConsumeQueueExt=true\n")
    before = sorted(p.name for p in root.iterdir())
    res = run(*writer, "--store", root, "--broker-config", conf)
    one_line_error(res, "consumequeue_ext", "ConsumeQueueExt", "read but not written by this version", "writes nothing")
    assert sorted(p.name for p in root.iterdir()) == before
    assert run("rebuild", "index", "--store", root, "--broker-config", conf).exit_code == 0


def test_rebuild_index_runs_beside_the_ext_units(written, tmp_path):
    root, conf, _ = written
    copy = Path(shutil.copytree(root, tmp_path / "store"))
    res = run("rebuild", "index", "--store", copy, "--broker-config", conf)
    assert res.exit_code == 0, res.stderr
    assert "identical to the store's" in res.stderr


def test_an_ext_file_deleted_after_the_listing_is_no_finding_and_no_crash(written, tmp_path):
    """A running broker deletes a queue's expired ext files with its consume queue files: a file gone between the
    listing and the lookup gives GONE (never reported), not a FileGone traceback, nor a 'missing' warning."""
    from rmqctl.cqext import FOUND, GONE, queue_ext

    root, conf, lines = written
    copy = Path(shutil.copytree(root, tmp_path / "store"))
    ext = queue_ext(copy, "ExtTopicA", 0, 400)
    addresses = [int(line.split()[6]) for line in lines if line.startswith("unit ExtTopicA 0 ")]
    for f in ext.files:
        f.release()
    os.unlink(ext.files[0].path)
    got = ext.units(np.array(addresses, np.int64))
    assert got.outcome.tolist() == [GONE] * 19 + [FOUND] * 21  # 19 units in the first file (400 - 4 bytes kept)
    assert ext.fields(addresses[0]) == {"extUnit": "deleted since listed"}
    ext.close()


@pytest.mark.parametrize("version", ["4", "5"])
def test_without_the_size_setting_a_short_or_empty_file_is_a_finding_not_a_refusal(written, tmp_path, version):
    """broker.conf without mappedFileSizeConsumeQueueExt: the files' names tell the size (as for consume queue
    files), so a short file is a finding, not 'inconsistent sizes' exit 2, and dump of another queue runs; an
    empty last file is what 4.x refuses and 5.x's load deletes; every file empty is the default size's findings."""
    root, _, _ = written
    conf = tmp_path / "broker.conf"
    conf.write_text(f"{CONF.replace('mappedFileSizeConsumeQueueExt=400', '')}rocketmqVersion={version}\n")
    copy = Path(shutil.copytree(root, tmp_path / "store"))
    file_cut_short(copy)
    (copy / EXT / "00000000000000001200").touch()
    res = run("verify", "--store", copy, "--broker-config", conf, "--format", "jsonl")
    sizes = sorted(f["file"].rsplit("/", 1)[1] for f in jsonl(res.stdout) if f["kind"] == "file-size")
    assert res.exit_code == 1 and sizes == ["00000000000000000400"] + ["00000000000000001200"] * (version == "4")
    assert run("dump", "consumequeue", "ExtTopicB", 0, "--store", copy, "--broker-config", conf).exit_code == 0
    for f in (copy / "consumequeue_ext").glob("*/*/0*"):
        os.truncate(f, 0)
    res = run("verify", "--store", copy, "--broker-config", conf, "--format", "jsonl")
    assert res.exit_code == 1 and "Traceback" not in res.stderr and "internal error" not in res.stderr
