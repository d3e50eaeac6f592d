"""consumers, offset-by-time, delay-offsets, config checks and restore, diff, and the startup estimate, on copies
of the real fixture stores (config files written in the broker's own fastjson format)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

import oracle
from conftest import (
    ALL_FIXTURES,
    CLEAN_FIXTURES,
    broker_conf,
    cleaned_copy,
    copy_store,
    held_lock,
    jsonl,
    one_line_error,
    patch,
    run,
    tmpfs_at,
    truth,
)
from test_recovery import expected_start
from rmqctl import Store, load_config
from rmqctl import schema as S
from rmqctl.configfiles import read_epochs
from rmqctl.views.offsets import CommitLogTimes, offset_by_time_v4, offset_by_time_v5, queue_view

# ConsumerOffsetManager.encode(prettyFormat=true): fastjson, tab-indented, queue ids as unquoted int keys
CONSUMER_OFFSETS = """{
\t"offsetTable":{
\t\t"TopicTest@groupA":{0:10,1:173,2:500
\t\t},
\t\t"GoneTopic@groupA":{0:3
\t\t},
\t\t"OrderTopic@groupB":{0:0,3:158
\t\t}
\t}
}"""


def conf(name):
    return load_config(broker_conf(name))


def write_config(store: Path, name: str, text: str, bak: str | None = None):
    (store / "config").mkdir(exist_ok=True)
    (store / "config" / name).write_text(text)
    if bak is not None:
        (store / "config" / (name + ".bak")).write_text(bak)


def times_by_queue(name: str) -> dict:
    """(topic, queueId) -> [(queueOffset, storeTimestamp)] from the truth files."""
    msgs = {m["commitLogOffset"]: m for m in truth(name, "truth-messages.jsonl")}
    out: dict = {}
    for u in truth(name, "truth-consumequeue.jsonl"):
        m = msgs.get(u["commitLogOffset"])
        if m is not None:
            out.setdefault((u["topic"], u["queueId"]), []).append((u["queueOffset"], m["storeTimestamp"]))
    return {k: sorted(v) for k, v in out.items()}


# -- consumers ------------------------------------------------------------------------------------------------
def test_consumers_lag_and_out_of_range_offsets(store_copy):
    s = store_copy("a-basic")
    write_config(s, "consumerOffset.json", CONSUMER_OFFSETS)
    (s / "consumequeue" / "TopicTest" / "0" / "00000000000000000000").unlink()  # cleaned up: min is now 64
    res = run("consumers", "--store", s, "--broker-config", broker_conf("a-basic"), "--format", "jsonl")
    assert res.exit_code == 1
    rows = {(r["group"], r["topic"], r["queueId"]): r for r in jsonl(res.stdout)}
    times = dict(times_by_queue("a-basic")[("TopicTest", 0)])
    behind = rows[("groupA", "TopicTest", 0)]
    assert (behind["status"], behind["minOffset"], behind["maxOffset"]) == ("behind-min", 64, 182)
    assert behind["lag"] == 182 - 64 and behind["oldestUnconsumed"] == times[64]
    done = rows[("groupA", "TopicTest", 1)]
    assert (done["status"], done["lag"], done["oldestUnconsumed"]) == ("ok", 0, None)
    assert rows[("groupA", "TopicTest", 2)]["status"] == "ahead-of-max"
    gone = rows[("groupA", "GoneTopic", 0)]  # (no topics.json here to say it was deleted)
    assert (gone["status"], gone["minOffset"], gone["maxOffset"], gone["lag"]) == ("ahead-of-max", 0, 0, 0)
    assert gone["note"].startswith("no consumequeue files: a queue never written to (min = max = 0); above")
    order = rows[("groupB", "OrderTopic", 0)]
    assert (
        order["lag"] == order["maxOffset"]
        and order["oldestUnconsumed"] == dict(times_by_queue("a-basic")[("OrderTopic", 0)])[0]
    )


def test_consumers_per_group_totals_the_lag(store_copy):
    s = store_copy("a-basic")
    write_config(s, "consumerOffset.json", CONSUMER_OFFSETS)
    res = run("consumers", "--per-group", "--store", s, "--broker-config", broker_conf("a-basic"), "--format", "jsonl")
    assert res.exit_code == 1 and res.stderr == ""  # groupA's offsets past the max and of a gone topic
    assert res.stdout == (
        '{"group":"groupA","topics":2,"queues":4,"lag":172,"oldestUnconsumed":1795314213876,'
        '"oldestUnconsumedText":"2026-11-22T02:23:33.876+00:00","notOk":2}\n'
        '{"group":"groupB","topics":1,"queues":2,"lag":151,"oldestUnconsumed":1795314213718,'
        '"oldestUnconsumedText":"2026-11-22T02:23:33.718+00:00","notOk":0}\n'
    )
    per_queue = jsonl(run("consumers", "--store", s, "--broker-config", broker_conf("a-basic")).stdout)
    assert sum(r["lag"] or 0 for r in per_queue if r["group"] == "groupA") == 172


def test_consumers_without_an_offset_file_say_so(store_copy):
    s = store_copy("a-basic")
    res = run("consumers", "--store", s, "--broker-config", broker_conf("a-basic"), "--format", "table")
    assert (res.exit_code, res.stdout) == (0, "")
    assert res.stderr == (
        f"rmqctl: {s / 'config' / 'consumerOffset.json'}: no such file (nor its .bak): no consumer "
        "group has committed an offset in this store, so there is no lag to show\n"
    )
    write_config(s, "consumerOffset.json", '{\n\t"offsetTable":{}\n}')
    res = run("consumers", "--store", s, "--broker-config", broker_conf("a-basic"))
    assert (res.exit_code, res.stdout) == (0, "")
    assert res.stderr == f"rmqctl: {s / 'config' / 'consumerOffset.json'}: no committed offset\n"


@pytest.mark.parametrize(
    "damage",
    [
        "",
        '{\n\t"offsetTable":{\n\t\t"TopicTest@groupA":{0:1',
        "not json at all",
        # ConsumerOffsetManager's decode (fastjson into a ConcurrentHashMap) throws on a null offset
        '{"offsetTable":{"TopicTest@groupA":{0:50,1:null}}}',
    ],
)
def test_consumers_take_the_bak_when_the_file_is_damaged(store_copy, damage):
    s = store_copy("a-basic")
    write_config(s, "consumerOffset.json", damage, bak=CONSUMER_OFFSETS)
    res = run("consumers", "--store", s, "--format", "jsonl")
    rows = jsonl(res.stdout)
    assert {r["source"] for r in rows} == {str(s / "config" / "consumerOffset.json.bak")}
    assert len(rows) == 6 and "loads" in res.stderr and "older persist" in res.stderr


# what an operator's hand may leave in consumerOffset.json, beside what the broker writes: fastjson's typed decode
# takes single quotes, unquoted names, comments, extra commas between topics (not between queue ids, where it needs
# none), a byte order mark, 01, +1 and 12L; not hex numbers, text after the document, or a missing comma between topics
HAND_EDITED = [
    CONSUMER_OFFSETS,
    "{'offsetTable':{'TopicTest@groupA':{0:12,1:13}}}",
    '{offsetTable:{"TopicTest@groupA":{0:12,1:13,},},}',
    '{"offsetTable":{,,"TopicTest@groupA":{0:12,1:13},,"OrderTopic@groupB":{0:1}}}',
    '{/* reset by hand */"offsetTable":{"TopicTest@groupA":{0:12 // was 10\n,1:13}}}',
    '{"offsetTable":{"TopicTest@groupA":{"0":"12",1:13}}}',
    "{'offsetTable':{'Topic\\x41@g\\u0041':{0:1}}}",
    '\ufeff{"offsetTable":{"TopicTest@groupA":{0:01,1:+1,2:12L}}}',
    '{"offsetTable":{"TopicTest@groupA":{0:12,,1:13}}}',
    '{"offsetTable":{"TopicTest@groupA":{,0:12}}}',
    '{"offsetTable":{"TopicTest@groupA":{0:0x10}}}',
    '{"offsetTable":{"TopicTest@groupA":{0:12}}} and more',
    '{"offsetTable":{"TopicTest@groupA":{0:12 1:13}}}',  # (no comma needed between queue ids)
    '{"offsetTable":{"TopicTest@groupA":{0:12} "OrderTopic@groupB":{0:1}}}',
    '{"offsetTable":{"TopicTest@groupA":{0:12,1:13,,}}}',
    # a bean property named in another case or with _ or - (fastjson's smartMatch), or exactly twice (the last wins)
    '{"offset_table":{"TopicTest@groupA":{0:12,1:13}}}',
    '{"OFFSET-TABLE":{"TopicTest@groupA":{0:12}}}',
    '{"offsetTable":{"TopicTest@groupA":{0:5}},"offsetTable":{"TopicTest@groupA":{0:9}}}',
    '{"OFFSET-TABLE":{"TopicTest@groupA":{0:12}},"OffsetTable":{"TopicTest@groupA":{0:9}}}',  # (none exact: the first)
]


def test_offset_files_decode_as_the_brokers_decode_does(tmp_path, java_oracle):
    """Each text as ConsumerOffsetManager's decode reads it (fastjson 1.2.83's typed parse, run here): the same
    offsets, or refused by both (then the broker loads the .bak: a hand-edited file rmqctl took for undecodable
    made it name the .bak's older offsets as the ones the broker loads)."""
    from rmqctl.configfiles import committed_offsets, parse_fastjson
    from test_batchcq import oracle_classpath

    files = []
    for i, text in enumerate(HAND_EDITED):
        files.append(tmp_path / f"{i}.json")
        files[-1].write_text(text)
    harness = Path(__file__).parent / "java" / "FastjsonParse.java"
    java = subprocess.run(
        ["java", "-cp", oracle_classpath(java_oracle), str(harness), *map(str, files)],
        capture_output=True,
        text=True,
        check=True,
    )
    want = [
        sorted((k, int(q), o) for k, queues in json.loads(line[3:]).items() for q, o in queues.items())
        if line.startswith("OK ")
        else None
        for line in java.stdout.splitlines()
    ]
    got = []
    for text in HAND_EDITED:
        try:
            offsets, notes = committed_offsets(parse_fastjson(text))
            got.append(sorted((f"{c.topic}@{c.group}", c.queueId, c.offset) for c in offsets) if not notes else notes)
        except json.JSONDecodeError:
            got.append(None)
    assert got == want and want.count(None) == 6


GOOD_BAK = b'{"offsetTable":{"BAK@g":{0:1}}}'
# consumerOffset.json texts (each beside GOOD_BAK) as a crash, a disk or a hand may leave them: bytes that are not
# UTF-8, control characters (NUL, EOI) around or inside the document, blank text, queue ids and offsets in every
# form fastjson's typed decode converts or throws on, a key given twice, a document that is not an object
LOADS = {
    "not UTF-8 in a name": b'{"offsetTable":{"T@g\xff":{0:100}}}',
    "not UTF-8 after it": b'{"offsetTable":{"T@g":{0:100}}}\xff',
    "NULs after it": b'{"offsetTable":{"T@g":{0:12}}}' + b"\0" * 16,
    "EOI after it": b'{"offsetTable":{"T@g":{0:12}}}\x1a',
    "VT before it": b'\x0b{"offsetTable":{"T@g":{0:12}}}',
    "control before a topic": b'{"offsetTable":{\x0b"T@g":{0:12}}}',
    "control before an offset": b'{"offsetTable":{"T@g":{0:\x0b12}}}',
    "control before a queue id": b'{"offsetTable":{"T@g":{0:12,\x0b1:13}}}',
    "control before a colon": b'{"offsetTable"\x0b:{"T@g":{0:12}}}',
    "NUL before a brace": b'{"offsetTable":{"T@g":{0:12}}\x00}',
    "blank": b"  \n",
    "tab": b"\t",
    "VTs": b"\x0b\x0b",
    "no-break space": "\xa0".encode(),
    "zeros": b"\0" * 64,
    "an array": b"[1,2]",
    "a number": b"12",
    "queue id 1.0 as text": b'{"offsetTable":{"T@g":{"1.0":12}}}',
    "queue id 1.5 as text": b'{"offsetTable":{"T@g":{"1.5":12}}}',
    "queue id 1.5": b'{"offsetTable":{"T@g":{1.5:12}}}',
    "queue id true": b'{"offsetTable":{"T@g":{true:12}}}',
    "queue id 1e3": b'{"offsetTable":{"T@g":{1e3:12}}}',
    "queue id 1L": b'{"offsetTable":{"T@g":{1L:12}}}',
    "queue id 1,0": b'{"offsetTable":{"T@g":{"1,0":12}}}',
    "queue id with a space": b'{"offsetTable":{"T@g":{" 1":12}}}',
    "queue id 1_0": b'{"offsetTable":{"T@g":{"1_0":12}}}',
    "queue id 2^31": b'{"offsetTable":{"T@g":{2147483648:12}}}',
    "queue id -2^31": b'{"offsetTable":{"T@g":{-2147483648:12}}}',
    "offset 1,000": b'{"offsetTable":{"T@g":{0:"1,000"}}}',
    "offset 2^63": b'{"offsetTable":{"T@g":{0:9223372036854775808}}}',
    "offset 2^63 as text": b'{"offsetTable":{"T@g":{0:"9223372036854775808"}}}',
    "offset -2^63": b'{"offsetTable":{"T@g":{0:-9223372036854775808}}}',
    "offset with a space": b'{"offsetTable":{"T@g":{0:" 12"}}}',
    "offset 1_000": b'{"offsetTable":{"T@g":{0:"1_000"}}}',
    "offset 12.7": b'{"offsetTable":{"T@g":{0:12.7}}}',
    "offset 12.5 as text": b'{"offsetTable":{"T@g":{0:"12.5"}}}',
    "offset 1e19": b'{"offsetTable":{"T@g":{0:1e19}}}',
    "offset true": b'{"offsetTable":{"T@g":{0:true}}}',
    "offset null as text": b'{"offsetTable":{"T@g":{0:"null"}}}',
    "offset +12 as text": b'{"offsetTable":{"T@g":{0:"+12"}}}',
    "a queue table null": b'{"offsetTable":{"T@g":null}}',
    "a queue id twice": b'{"offsetTable":{"T@g":{0:"x",0:5}}}',
}


def test_offset_files_load_as_the_brokers_config_manager_loads_them(tmp_path, java_oracle):
    """RocketMQ's own ConfigManager.load with ConsumerOffsetManager's decode (tests/java/ConfigLoad.java, on
    fastjson 1.2.83) against rmqctl's read of each text of LOADS: the same file taken and the same offsets (a
    file rmqctl took for undecodable that the broker loads made `config restore` put the older .bak over it)."""
    from rmqctl.configfiles import committed_offsets, read_config
    from test_batchcq import oracle_classpath

    roots = [tmp_path / str(i) for i in range(len(LOADS))]
    for root, text in zip(roots, LOADS.values()):
        (root / "config").mkdir(parents=True)
        (root / "config" / "consumerOffset.json").write_bytes(text)
        (root / "config" / "consumerOffset.json.bak").write_bytes(GOOD_BAK)
    harness = Path(__file__).parent / "java" / "ConfigLoad.java"
    dirs = [str(root / "config") for root in roots]
    java = subprocess.run(
        ["java", "-cp", oracle_classpath(java_oracle), str(harness), *dirs], capture_output=True, text=True, check=True
    )
    want = {}
    for name, line in zip(LOADS, java.stdout.splitlines()):
        source, _, table = line.partition(" ")
        offsets = json.loads(table) if table else None
        want[name] = (source, sorted((k, int(q), o) for k, qs in (offsets or {}).items() for q, o in qs.items()))
    got = {}
    for name, root in zip(LOADS, roots):
        c = read_config(root, "consumerOffset.json")
        entries, _ = committed_offsets(c.document)
        got[name] = (c.loaded_from, sorted((f"{e.topic}@{e.group}", e.queueId, e.offset) for e in entries))
    assert got == want
    assert sum(source == "main" for source, _ in want.values()) == 20


# one property spelt two ways: fastjson's choice depends on the class it decodes into (ASM-made code for a class on
# the class path keeps the first, reflection lets a later smart match win), so rmqctl refuses to pick
MIXED_SPELLINGS = [
    '{"offsetTable":{"TopicTest@groupA":{0:5}},"offset_table":{"TopicTest@groupA":{0:9}}}',
    '{"Offset_Table":{"TopicTest@groupA":{0:7}},"offsetTable":{"TopicTest@groupA":{0:5}}}',
]


@pytest.mark.parametrize("text", MIXED_SPELLINGS)
def test_an_offset_table_spelt_two_ways_is_refused_in_one_line_naming_the_file(store_copy, text):
    s = store_copy("a-basic")
    write_config(s, "consumerOffset.json", text, bak=CONSUMER_OFFSETS)
    res = run("consumers", "--store", s, "--format", "jsonl")
    line = one_line_error(res, str(s / "config" / "consumerOffset.json"), "the property offsetTable is named 2 times")
    assert "does not guess" in line and res.stdout == ""


def test_an_offset_of_0_on_a_queue_never_written_is_ok_as_the_broker_answers_it(store_copy):
    """A push consumer commits 0 on its group's %RETRY% queue and on an empty queue of its topic, which have no
    consumequeue files: the broker answers min = max = 0 there (getMaxOffsetInQueue; consumerProgress shows a
    Diff of 0). `consumers` said no-queue and exited 1, so a cron check alarmed on every push consumer group."""
    s = store_copy("a-basic")
    offsets = '{"offsetTable":{"%RETRY%groupA@groupA":{0:0},"TopicTest@groupA":{7:0},"TopicTest@groupB":{7:4}}}'
    write_config(s, "consumerOffset.json", offsets)
    topics = {"topicConfigTable": {"TopicTest": {"topicName": "TopicTest", "readQueueNums": 8, "writeQueueNums": 8}}}
    write_config(s, "topics.json", json.dumps(topics))
    res = run("consumers", "--store", s, "--broker-config", broker_conf("a-basic"), "--format", "jsonl")
    rows = {(r["group"], r["topic"], r["queueId"]): r for r in jsonl(res.stdout)}
    fields = ("status", "minOffset", "maxOffset", "lag")
    assert [tuple(rows[k][f] for f in fields) for k in sorted(rows)] == [
        ("ok", 0, 0, 0),
        ("ok", 0, 0, 0),
        ("ahead-of-max", 0, 0, 0),
    ]
    assert res.exit_code == 1  # (groupB's 4 is above the max: the broker resets its pull to 0)
    write_config(s, "consumerOffset.json", offsets.replace("{7:4}", "{7:0}"))
    assert run("consumers", "--store", s, "--broker-config", broker_conf("a-basic")).exit_code == 0


def test_a_property_spelt_two_ways_is_one_finding_and_stops_only_what_needs_it(store_copy):
    """verify names it and goes on; a .bak the broker does not read while its file is sound is no obstacle to
    consumers or config restore; clean plans without the offsets unless --protect-unconsumed needs them."""
    s = store_copy("a-basic")
    conf = broker_conf("a-basic")
    write_config(s, "consumerOffset.json", MIXED_SPELLINGS[0], bak=CONSUMER_OFFSETS)
    verified = run("verify", "--store", s, "--broker-config", conf, "--format", "jsonl")
    kinds = [f["kind"] for f in jsonl(verified.stdout)]
    assert verified.exit_code == 1 and kinds == ["config-ambiguous-name", "config-bak-differs"], verified.stderr
    planned = run("clean", "--store", s, "--broker-config", conf, "--format", "jsonl")
    assert planned.exit_code == 0 and "the unconsumed messages a deletion takes are not counted" in planned.stderr
    one_line_error(run("clean", "--store", s, "--broker-config", conf, "--protect-unconsumed"), "named 2 times")
    write_config(s, "consumerOffset.json", CONSUMER_OFFSETS, bak=MIXED_SPELLINGS[0])
    assert run("consumers", "--store", s, "--broker-config", conf).exit_code in (0, 1)


def test_offsets_on_a_store_without_queues_are_not_taken_for_a_missing_offset_file(store_copy):
    """Every queue gone (a store before any dispatch): each committed offset is a row at min = max = 0, and the
    offset file is read, not reported missing (the no-queue rows' topics once took the place of the files read)."""
    s = store_copy("a-basic")
    shutil.rmtree(s / "consumequeue")
    write_config(s, "consumerOffset.json", '{"offsetTable":{"TopicTest@groupA":{0:0}}}')
    res = run("consumers", "--store", s, "--format", "jsonl")
    assert [(r["status"], r["maxOffset"]) for r in jsonl(res.stdout)] == [("ok", 0)]
    assert "no such file" not in res.stderr and res.exit_code == 0, res.stderr


def test_consumers_read_a_hand_edited_offset_file_as_the_broker_loads_it(store_copy):
    s = store_copy("a-basic")
    write_config(s, "consumerOffset.json", HAND_EDITED[4], bak=CONSUMER_OFFSETS)
    res = run("consumers", "--store", s, "--format", "jsonl")
    rows = jsonl(res.stdout)
    assert {r["source"] for r in rows} == {str(s / "config" / "consumerOffset.json")}
    assert sorted((r["queueId"], r["offset"]) for r in rows) == [(0, 12), (1, 13)] and res.stderr == ""


@pytest.mark.parametrize("blank", ["null", " null \n"])
def test_a_null_offset_file_is_loaded_with_nothing_in_it(store_copy, blank):
    """fastjson reads null as null: ConfigManager.load takes the file, its decode keeps no offset, and the .bak is
    not read (blank text, which its decode throws on, is another matter: LOADS below)."""
    s = store_copy("a-basic")
    write_config(s, "consumerOffset.json", blank, bak=CONSUMER_OFFSETS)
    res = run("consumers", "--store", s, "--broker-config", broker_conf("a-basic"))
    assert (res.exit_code, res.stdout) == (0, "")
    assert res.stderr == f"rmqctl: {s / 'config' / 'consumerOffset.json'}: no committed offset\n"


# -- offset-by-time ---------------------------------------------------------------------------------------------
def lower_rule(units, ts):
    """5.x LOWER on a queue whose store times never decrease: the first message at or after ts; past the last
    message, the max offset."""
    return next((q for q, t in units if t >= ts), units[-1][0] + 1)


def upper_rule(units, ts):
    """5.x UPPER: the last message at or before ts; before the first message, 0."""
    return max((q for q, t in units if t <= ts), default=0)


@pytest.mark.parametrize("name", CLEAN_FIXTURES)
def test_offset_by_time_5x_on_every_queue(name):
    store = Store(Path(broker_conf(name)).parent / "store", conf(name))
    times = CommitLogTimes(store)
    checked = 0
    for (topic, qid), units in times_by_queue(name).items():
        assert all(a[1] <= b[1] for a, b in zip(units, units[1:]))
        first, last = units[0][1], units[-1][1]
        middle = units[len(units) // 2][1]
        view = queue_view(store, store.consume_queue(topic, qid), times.min_offset)
        for ts in (first - 1000, first, first + 1, middle, middle + 1, last - 1, last, last + 1000):
            assert offset_by_time_v5(view, times, ts, "lower") == lower_rule(units, ts), (topic, qid, ts)
            assert offset_by_time_v5(view, times, ts, "upper") == upper_rule(units, ts), (topic, qid, ts)
            checked += 1
    assert checked > 50


def test_offset_by_time_49_picks_the_file_by_modification_time(store_copy):
    """4.9 takes the first consumequeue file modified at or after the time, then the message nearest the
    time in it (ties to the earlier side). With each file's mtime at its last message's store time, as a live
    broker leaves it, that is the nearest message of the queue."""
    s = store_copy("a-basic")
    store = Store(s, conf("a-basic"))
    times = CommitLogTimes(store)
    for (topic, qid), units in times_by_queue("a-basic").items():
        cq = store.consume_queue(topic, qid)
        for _, f, written, arr in cq.units():
            last = arr[written - 1]
            ms = times.store_time(int(last["commitLogOffset"]), int(last["size"]))
            os.utime(f.path, ns=(ms * 1_000_000, ms * 1_000_000))
        view = queue_view(store, cq, times.min_offset)
        per_file = 1280 // S.CQ_UNIT_SIZE
        for ts in (units[0][1] - 5, units[len(units) // 3][1] + 1, units[-1][1], units[-1][1] + 5):
            got = offset_by_time_v4(view, times, ts)
            f = next(
                (i for i in range(0, len(units), per_file) if units[min(i + per_file, len(units)) - 1][1] >= ts),
                (len(units) - 1) // per_file * per_file,
            )
            in_file = units[f : f + per_file]
            exact = [q for q, t in in_file if t == ts]
            if exact:
                assert got in exact
            else:
                # the search ends between the last message before ts and the first after it
                left = max((u for u in in_file if u[1] < ts), default=None)
                right = min((u for u in in_file if u[1] > ts), default=None)
                if left is None or right is None:
                    best = right or left
                else:
                    best = right if abs(ts - left[1]) > abs(ts - right[1]) else left
                assert got == best[0], (topic, qid, ts)


def test_offset_by_time_cli_every_queue_and_errors():
    # 5.x's rule on a 4.9 store: the operator's word
    res = run(
        "offset-by-time",
        "TopicTest",
        "1795314214328",
        "--store",
        Path(broker_conf("a-basic")).parent / "store",
        "--format",
        "jsonl",
        "--rocketmq-version",
        "5",
    )
    rows = jsonl(res.stdout)
    assert res.exit_code == 0 and [r["queueId"] for r in rows] == [0, 1, 2, 3]
    assert all(r["storeTimestamp"] >= 1795314214328 for r in rows)
    bad = run("offset-by-time", "TopicTest", "0", "yesterday", "--store", Path(broker_conf("a-basic")).parent / "store")
    assert bad.exit_code == 2 and "is not a time: epoch milliseconds, an ISO date-time" in bad.stderr
    none = run("offset-by-time", "NoSuchTopic", "0", "0", "--store", Path(broker_conf("a-basic")).parent / "store")
    assert none.exit_code == 2 and "no such consumequeue" in none.stderr


def test_a_queue_of_a_known_topic_with_no_files_answers_0_as_the_broker_s_empty_queue(tmp_path):
    """getOffsetInQueueByTime of a queue with nothing on disk: findConsumeQueue makes it, empty, and the search
    answers 0, for a topic with other queues or one only topics.json names; a topic the store knows nowhere is
    refused (a mistyped name is no empty queue)."""
    root = copy_store("a-basic", tmp_path)

    def asked(topic: str) -> tuple[int, list[dict]]:
        res = run("offset-by-time", topic, "7", "1795314214328", "--store", root, "--format", "jsonl")
        return res.exit_code, jsonl(res.stdout) if res.exit_code == 0 else res.stderr

    code, rows = asked("TopicTest")
    assert code == 0 and [(r["queueId"], r["queueOffset"], r["minOffset"], r["maxOffset"]) for r in rows] == [
        (7, 0, 0, 0)
    ]
    assert "answers 0" in rows[0]["rule"]
    assert asked("ConfiguredTopic")[0] == 2
    (root / "config" / "topics.json").write_text(json.dumps({"topicConfigTable": {"ConfiguredTopic": {}}}))
    code, rows = asked("ConfiguredTopic")
    assert code == 0 and rows[0]["queueOffset"] == 0


# -- delay-offsets ----------------------------------------------------------------------------------------------
def test_delay_offsets_against_the_schedule_queues():
    store = Path(broker_conf("b-mixed")).parent / "store"
    units = [u for u in truth("b-mixed", "truth-consumequeue.jsonl") if u["topic"] == "SCHEDULE_TOPIC_XXXX"]
    committed = {1: 2}  # the fixture's delayOffset.json
    at = min(u["tagsCode"] for u in units) - 1  # before the first delivery, after every store time
    res = run(
        "delay-offsets", "--store", store, "--broker-config", broker_conf("b-mixed"), "--at", at, "--format", "jsonl"
    )
    rows = {r["level"]: r for r in jsonl(res.stdout)}
    for level in {u["queueId"] + 1 for u in units}:
        mine = sorted((u["queueOffset"], u["tagsCode"]) for u in units if u["queueId"] == level - 1)
        pending = [t for q, t in mine if q >= committed.get(level, 0)]
        assert rows[level]["pending"] == len(pending) and rows[level]["due"] == 0
        assert rows[level]["nextDelivery"] == (min(pending) if pending else None)
    # at epoch 0 every delivery time is later than now plus its level's delay: correctDeliverTimestamp makes each due
    res = run("delay-offsets", "--store", store, "--broker-config", broker_conf("b-mixed"), "--at", "0")
    assert all(r["due"] == r["pending"] for r in jsonl(res.stdout))
    later = jsonl(
        run(
            "delay-offsets", "--store", store, "--broker-config", broker_conf("b-mixed"), "--at", "2099-01-01T00:00:00Z"
        ).stdout
    )
    assert all(r["due"] == r["pending"] for r in later)


SCHEDULE_DELIVER4 = Path(__file__).parent / "java" / "ScheduleDeliver4.java"


@pytest.mark.tmpfs
@pytest.mark.parametrize("covers_the_head", [True, False])
def test_delay_offsets_a_cleaned_unit_at_commitlog_offset_0_reads_the_record_at_the_min(
    tmp_path, java_oracle, covers_the_head
):
    """b-mixed cleaned of its first commitlog file, level 3's one unit made to point at commitlog offset 0 (as the
    store's first record, had it been scheduled). RocketMQ 4.9.7's lookMessageByOffset(0, size) reads `size`
    bytes at the commitlog's min instead (returnFirstOnNotFound): when they hold that whole record, which is no
    scheduled message, messageTimeup throws on its missing REAL_QID and the schedule service retries the unit
    for good (the level is stuck; pending); when the record there is longer, nothing decodes and the service goes
    on, as for every other cleaned offset (not pending). Run here: the 4.9.7 store's own schedule service."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        root, conf = cleaned_copy("b-mixed", mnt, 1)
        store = Store(root, load_config(conf))
        min_phy = store.commitlog.min_offset
        head = store.read_message(min_phy)[1].storeSize
        store.close()
        unit = root / "consumequeue" / "SCHEDULE_TOPIC_XXXX" / "2" / "00000000000000000000"
        tags = S.CQ_UNIT.unpack_from(unit.read_bytes(), 0)[2]
        size = head if covers_the_head else head - 1
        patch(unit, 0, S.CQ_UNIT.pack(0, size, tags))
        res = run("delay-offsets", "--store", root, "--broker-config", conf, "--at", "2099-01-01", "--format", "jsonl")
        assert res.exit_code == 0, res.stderr
        level = {r["level"]: r for r in jsonl(res.stdout)}[3]
        copy = Path(shutil.copytree(root, tmp_path / "broker"))
        log = tmp_path / "store.log"
        lines = oracle.run_harness4(java_oracle, SCHEDULE_DELIVER4, [copy, conf, 3, f"0:{size}"], log)
    retries = log.read_text().count("messageTimeup execute error, offset = 0")
    if covers_the_head:
        assert lines[0] == "probe 0 MixedTopic null null" and retries >= 2
        assert (level["pending"], level["due"], level["stuckAt"], level["nextDelivery"]) == (1, 1, 0, tags)
        assert res.stderr == (
            "rmqctl: level 3: the schedule service stops at queue offset 0 for good: the unit there points at "
            f"commitlog offset 0, below the min {min_phy}, so CommitLog.getMessage reads the record at {min_phy} "
            "instead, which is no scheduled message (no REAL_TOPIC and REAL_QID); RocketMQ 4.9 retries it every "
            "100 ms\n"
        )
    else:
        assert lines[0] == "probe 0 null" and retries == 0
        assert (level["pending"], level["due"], level["stuckAt"]) == (0, 0, None) and res.stderr == ""
    assert not [line for line in lines if line.startswith("delivered")]  # nothing of level 3 went out


def test_delay_offsets_a_delivery_time_past_now_plus_the_delay_is_due_now(tmp_path, java_oracle):
    """b-mixed's level-3 unit (10 s) given a delivery time a day ahead (the clock stepped back since it was
    written): correctDeliverTimestamp delivers it at once, which RocketMQ 4.9.7's own schedule service, run here,
    does; rmqctl counts it due and says why (it said due tomorrow)."""
    import time

    root = copy_store("b-mixed", tmp_path)
    conf = broker_conf("b-mixed")
    unit = root / "consumequeue" / "SCHEDULE_TOPIC_XXXX" / "2" / "00000000000000000000"
    offset, size, _ = S.CQ_UNIT.unpack_from(unit.read_bytes(), 0)
    now = int(time.time() * 1000)
    patch(unit, 0, S.CQ_UNIT.pack(offset, size, now + 86_400_000))
    res = run("delay-offsets", "--store", root, "--broker-config", conf, "--at", str(now), "--format", "jsonl")
    level = {r["level"]: r for r in jsonl(res.stdout)}[3]
    assert (level["pending"], level["due"], level["nextDelivery"]) == (1, 1, now)
    assert "level 3: 1 message(s) due later than now plus the level's delay (10000 ms" in res.stderr
    lines = oracle.run_harness4(java_oracle, SCHEDULE_DELIVER4, [root, conf, 3], tmp_path / "store.log")
    assert '"offsetTable":{' in lines[-1] and "3:1" in lines[-1]  # level 3's one message went out


# -- config files in verify, and their restore -------------------------------------------------------------------
def verify_findings(s, name="a-basic"):
    res = run("verify", "--store", s, "--broker-config", broker_conf(name), "--format", "jsonl")
    return res.exit_code, jsonl(res.stdout)


@pytest.mark.parametrize("damage", ["", '{\n\t"offsetTable":{\n\t\t"TopicTest@groupA":{0:1', "\0\0\0\0"])
def test_verify_reports_a_damaged_config_file(store_copy, damage):
    s = store_copy("a-basic")
    write_config(s, "consumerOffset.json", damage, bak=CONSUMER_OFFSETS)
    code, found = verify_findings(s)
    config = [f for f in found if f["kind"].startswith("config-")]
    assert code == 1 and config[0]["kind"] == "config-damaged" and config[0]["file"] == "config/consumerOffset.json"
    assert "consumerOffset.json.bak instead" in config[0]["detail"]
    if damage.startswith("{"):
        assert "ends in the middle" in config[0]["detail"]


def test_verify_config_load_fails_and_unknown_topics(store_copy):
    s = store_copy("a-basic")
    write_config(s, "topics.json", '{"topicConfigTable":{"{": }', bak="not json")
    write_config(s, "consumerOffset.json", CONSUMER_OFFSETS)
    code, found = verify_findings(s)
    kinds = {f["kind"]: f for f in found if f["kind"].startswith("config-")}
    assert code == 1 and "does not start" in kinds["config-load-fails"]["detail"]
    assert "GoneTopic" in kinds["config-offset-unknown-topic"]["detail"]
    assert kinds["config-offset-unknown-topic"]["severity"] == "warning"


def test_config_restore_plan_apply_and_lock(store_copy):
    s = store_copy("a-basic")
    write_config(s, "consumerOffset.json", '{"offsetTable":{"TopicTest@g":{0:', bak=CONSUMER_OFFSETS)
    write_config(s, "delayOffset.json", '{"offsetTable":{}}')
    before = (s / "config" / "consumerOffset.json").read_bytes()
    plan = jsonl(run("config", "restore", "--store", s, "--format", "jsonl").stdout)
    assert {p["name"]: p["action"] for p in plan} == {"consumerOffset.json": "restore", "delayOffset.json": "keep"}
    assert (s / "config" / "consumerOffset.json").read_bytes() == before  # a plan changes nothing
    with held_lock(s):
        locked = run("config", "restore", "--store", s, "--apply")
    assert locked.exit_code == 2 and (s / "config" / "consumerOffset.json").read_bytes() == before
    done = run("config", "restore", "--store", s, "--apply")
    assert done.exit_code == 0
    assert (s / "config" / "consumerOffset.json").read_text() == CONSUMER_OFFSETS
    backups = list(s.glob(".rmqctl-backup-*/config/consumerOffset.json"))
    assert len(backups) == 1 and backups[0].read_bytes() == before
    assert not list(s.glob(".rmqctl-config-*")) and not (s / ".rmqctl-intent").exists()
    _, found = verify_findings(s)
    assert [f["kind"] for f in found if f["kind"].startswith("config-")] == ["config-offset-unknown-topic"]


# -- diff -----------------------------------------------------------------------------------------------------
def test_diff_identical_prefix_and_diverged(store_copy, tmp_path):
    a = store_copy("a-basic")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    same = run("diff", a, b, "--broker-config", broker_conf("a-basic"), "--format", "jsonl")
    assert same.exit_code == 0 and json.loads(same.stdout)["relation"] == "identical"
    msgs = sorted(truth("a-basic", "truth-messages.jsonl"), key=lambda m: m["commitLogOffset"])
    cut = msgs[-5]  # B lost its last five messages (a slave behind its master)
    f = b / "commitlog" / cut["file"]
    patch(f, cut["filePosition"], bytes(f.stat().st_size - cut["filePosition"]))
    behind = json.loads(run("diff", a, b, "--broker-config", broker_conf("a-basic"), "--format", "jsonl").stdout)
    assert behind["relation"] == "b-prefix-of-a" and behind["commonTo"] == cut["commitLogOffset"]
    assert behind["messageA"]["msgId"] == cut["msgId"] and behind["messageB"] is None
    lagging = {(q["topic"], q["queueId"]) for q in behind["queues"] if q["relation"] != "identical"}
    assert lagging <= {(m["topic"], m["queueId"]) for m in msgs[-5:]}
    victim = msgs[100]
    patch(b / "commitlog" / victim["file"], victim["filePosition"] + 60, b"\xff")
    diverged = run("diff", a, b, "--broker-config", broker_conf("a-basic"), "--format", "jsonl")
    out = json.loads(diverged.stdout)
    assert diverged.exit_code == 1 and out["relation"] == "diverged"
    assert out["firstDifference"] == victim["commitLogOffset"] + 60
    assert (
        out["messageA"]["offset"] == victim["commitLogOffset"]
        and out["messageA"]["differenceAt"] == out["firstDifference"]
    )


def epoch_file(entries: list[tuple[int, int]], crc_ok=True) -> str:
    body = "".join(f"{e}-{o}\n" for e, o in entries)
    crc = zlib.crc32(body.encode()) & 0x7FFFFFFF
    return f"{len(entries)}\n{crc if crc_ok else crc + 1}\n{body}"


def test_epochs_tell_which_epoch_each_tail_belongs_to(store_copy, tmp_path):
    a = store_copy("a-basic")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    (a / "epochFileCheckpoint").write_text(epoch_file([(1, 0), (2, 1_000_000)]))
    (b / "epochFileCheckpoint").write_text(epoch_file([(1, 0), (3, 2_000_000)], crc_ok=False))  # fails its CRC
    (b / "epochFileCheckpoint.bak").write_text(epoch_file([(1, 0)]))
    (b / "brokerIdentity").write_text("DefaultCluster#broker-a#2")
    assert [e.epoch for e in read_epochs(a)[0]] == [1, 2]
    entries, source = read_epochs(b)
    assert [e.epoch for e in entries] == [1] and source.endswith(".bak")
    out = json.loads(run("diff", a, b, "--broker-config", broker_conf("a-basic"), "--format", "jsonl").stdout)
    assert out["b"]["identity"] == {
        "clusterName": "DefaultCluster",
        "brokerName": "broker-a",
        "brokerId": 2,
        "loaded": True,
    }
    assert any(n.startswith("A: tail at") and "epoch 2" in n for n in out["notes"])
    assert any(n.startswith("B: tail at") and "epoch 1" in n for n in out["notes"])


# -- startup estimate ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_info_estimates_the_startup(name):
    store = Path(broker_conf(name)).parent / "store"
    res = run("info", "--store", store, "--broker-config", broker_conf(name), "--format", "json")
    st = json.loads(res.stdout)["startup"]
    abnormal = (store / "abort").exists()
    assert st["recovery"] == ("abnormal" if abnormal else "normal")
    if not abnormal:  # where the broker's normal recovery starts, from its truth files (test_recovery)
        assert st["firstFile"] == expected_start(name)
    assert st["commitlogBytes"] > 0 and st["measuredMBps"] > 0 and st["estimatedSeconds"] >= 0
    assert st["consumequeueFiles"] == sum(1 for p in (store / "consumequeue").rglob("*") if p.is_file())
    table = run("info", "--store", store, "--broker-config", broker_conf(name), "--format", "table")
    assert "(estimate)" in table.stdout and "recovery from" in table.stdout


@pytest.mark.tmpfs
def test_diff_against_a_cleaned_copy_gives_each_side_the_queue_offsets_rocketmq_serves(tmp_path, java_oracle):
    """A copy whose oldest commitlog files the cleanup deleted against the copy it was taken from: the units
    both hold are the same (identical queues), and each side's min and max are what RocketMQ serves there."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        before = copy_store("a-basic", tmp_path / "before")
        root, conf = cleaned_copy("a-basic", mnt, 20)
        served, _, _ = oracle.served(java_oracle, 4, root, conf, tmp_path / "oracle")
        res = run("diff", before, root, "--broker-config", conf, "--format", "json")
        assert res.exit_code == 0, res.stderr
        queues = json.loads(res.stdout)["queues"]
        assert {q["relation"] for q in queues} == {"identical"}
        assert {(q["topic"], q["queueId"]): (q["minOffsetB"], q["maxOffsetB"]) for q in queues} == served
        assert all(q["minOffsetA"] == 0 and q["maxOffsetA"] == q["maxOffsetB"] for q in queues)


@pytest.mark.tmpfs
def test_offset_by_time_after_a_cleanup_stays_inside_the_queue_5x(tmp_path, java_oracle):
    """5.x's ConsumeQueueStore.getOffsetInQueueByTime clamps the queue's answer into [min, max]: after a cleanup
    the search over the first file can land on a unit the cleanup left dead (the file's start, or 0), and a
    consumer reset to the earliest time starts at the queue's min as RocketMQ 5.3.3 serves it."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        root, conf = cleaned_copy("c-v5-features", mnt, 3)
        served, _, _ = oracle.served(java_oracle, 5, root, conf, tmp_path / "oracle")
        got = {}
        args = ("offset-by-time", "--store", root, "--broker-config", conf, "--format", "jsonl")
        for topic in sorted({t for t, _ in served}):
            for boundary in ("lower", "upper"):
                res = run(*args, "--boundary", boundary, topic, "0")
                assert res.exit_code == 0, res.stderr
                for row in jsonl(res.stdout):
                    got[(topic, row["queueId"], boundary)] = row["queueOffset"]
        assert got == {(t, q, b): lo for (t, q), (lo, _) in served.items() for b in ("lower", "upper")}
        assert any(lo > 0 for lo, _ in served.values())


@pytest.mark.tmpfs
def test_delay_offsets_after_a_cleanup_count_no_message_it_deleted(tmp_path):
    """b-mixed with its first commitlog file cleaned: the schedule queues of levels 3 and 18 hold only units
    whose records went with it (4.9 keeps such a queue's min at 0). The schedule service finds no message
    there (lookMessageByOffset returns null) and delivers nothing: none of them is pending."""
    with tmpfs_at(tmp_path / "mnt", "64m") as mnt:
        root, conf = cleaned_copy("b-mixed", mnt, 1)
        res = run("delay-offsets", "--store", root, "--broker-config", conf, "--at", "2099-01-01", "--format", "jsonl")
        assert res.exit_code == 0, res.stderr
        rows = {r["level"]: r for r in jsonl(res.stdout)}
        for level, max_offset in ((3, 1), (18, 2)):
            assert rows[level] == {
                "level": level,
                "delay": {3: "10s", 18: "2h"}[level],
                "queueId": level - 1,
                "offset": None,
                "minOffset": 0,
                "maxOffset": max_offset,
                "pending": 0,
                "due": 0,
                "stuckAt": None,
                "nextDelivery": None,
                "nextDeliveryText": None,
                "oldestPendingStore": None,
                "oldestPendingStoreText": None,
            }


def test_after_a_crash_the_queues_are_those_the_recovery_leaves(tmp_path):
    """A torn last record and an abort file: the broker's recovery truncates the consume queue's unit that
    points past the commitlog's new end (truncateDirtyLogicFiles), so offset-by-time and the consumers' max
    answer from the 90 units left, not the 91 on disk. RocketMQ 5.3.3's own getOffsetInQueueByTime and
    getMaxOffsetInQueue on this very store (the offsets review's harness, after load() and its reput): max 90,
    LOWER 70, UPPER 71, and a committed offset 91 is OFFSET_OVERFLOW_BADLY, moved to 90."""
    store = copy_store("c-v5-features", tmp_path / "c")
    last = store / "commitlog" / "00000000000000393216"
    with open(last, "r+b") as f:
        f.seek(58280 + 541)
        f.write(bytes(541))
    (store / "abort").write_bytes(b"")
    (store / "config").mkdir(exist_ok=True)
    (store / "config" / "consumerOffset.json").write_text('{"offsetTable":{"TopicV5@G1":{3:91},"TopicV5@G2":{3:45}}}')
    conf = broker_conf("c-v5-features")
    at = ["--store", store, "--broker-config", conf, "--format", "jsonl"]
    answers = [
        jsonl(run("offset-by-time", "TopicV5", "3", "1795314256955", "--boundary", b, *at).stdout)[0]
        for b in ("lower", "upper")
    ]
    assert [(a["queueOffset"], a["maxOffset"]) for a in answers] == [(70, 90), (71, 90)]
    rows = {r["group"]: r for r in jsonl(run("consumers", *at).stdout) if r["topic"] == "TopicV5"}
    assert (rows["G1"]["maxOffset"], rows["G1"]["status"], rows["G2"]["lag"]) == (90, "ahead-of-max", 45)


@pytest.mark.parametrize("version", [4, 5])
def test_after_a_clean_stop_a_lost_commitlog_tail_moves_the_queues_max_too(tmp_path, java_oracle, version):
    """The same torn last record without `abort`: the normal recovery cuts the commitlog there too and
    truncates the units past it. consumers and offset-by-time answered from the 91 units on disk (only a crashed
    store's load was modelled); now from the max RocketMQ's own load serves (4.9.7 and 5.3.3 on this store)."""
    store = copy_store("c-v5-features", tmp_path / "c")
    with open(store / "commitlog" / "00000000000000393216", "r+b") as f:
        f.seek(58280 + 541)
        f.write(bytes(541))
    (store / "config").mkdir(exist_ok=True)
    (store / "config" / "consumerOffset.json").write_text('{"offsetTable":{"TopicV5@G1":{3:91}}}')
    conf = broker_conf("c-v5-features")
    queues, _, _ = oracle.served(java_oracle, version, store, conf, tmp_path / "out")
    at = ["--store", store, "--broker-config", conf, "--format", "jsonl", "--rocketmq-version", str(version)]
    answer = jsonl(run("offset-by-time", "TopicV5", "3", "1795314256955", *at).stdout)[0]
    row = next(r for r in jsonl(run("consumers", *at).stdout) if r["topic"] == "TopicV5")
    # (4.9.7 cuts this 5.x store earlier still: at its first record 4.9 cannot read)
    assert answer["maxOffset"] == row["maxOffset"] == queues[("TopicV5", 3)][1] == {4: 75, 5: 90}[version]
    assert row["status"] == "ahead-of-max"


def test_with_enable_lmq_the_broker_reads_only_lmq_consumer_offsets(tmp_path):
    """enableLmq: BrokerController makes an LmqConsumerOffsetManager, which loads lmqConsumerOffset.json alone
    and serves an LMQ group's offset from its lmqOffsetTable (queue 0). The offsets review wrote these files with
    RocketMQ 4.9.7's own managers and read them back: %LMQ%alpha 1, %LMQ%beta 5 (the pull moved to 2), GB 49;
    consumerOffset.json, written with enableLmq=false, is never read (GSTALE does not exist for the broker)."""
    store = copy_store("b-mixed", tmp_path / "b")
    config = store / "config"
    config.mkdir(exist_ok=True)
    (config / "lmqConsumerOffset.json").write_text(
        '{"lmqOffsetTable":{"%LMQ%beta@%LMQ%beta":5,"%LMQ%alpha@%LMQ%alpha":1},"offsetTable":{"MixedTopic@GB":{0:49}}}'
    )
    (config / "consumerOffset.json").write_text('{"offsetTable":{"MixedTopic@GB":{0:3},"MixedTopic@GSTALE":{0:10}}}')
    r = run("consumers", "--store", store, "--broker-config", broker_conf("b-mixed"), "--format", "jsonl")
    rows = {(c["group"], c["topic"], c["queueId"]): (c["offset"], c["status"]) for c in jsonl(r.stdout)}
    assert rows == {
        ("%LMQ%alpha", "%LMQ%alpha", 0): (1, "ok"),
        ("%LMQ%beta", "%LMQ%beta", 0): (5, "ahead-of-max"),
        ("GB", "MixedTopic", 0): (49, "ok"),
    }
    assert "consumerOffset.json: not loaded by this broker (enableLmq=true)" in r.stderr


def test_config_manager_v2_keeps_the_tables_where_rmqctl_does_not_read_them(store_copy, tmp_path):
    """configManagerVersion=v2 (5.3+ BrokerController): topics, groups and offsets live in config/rdb only, and the
    JSON files beside it are never loaded: consumers and diff say so and answer nothing (they showed the JSON's
    offsets); verify checks the rest and names the database as not read."""
    import rocksdict

    s = store_copy("a-basic")
    write_config(s, "consumerOffset.json", CONSUMER_OFFSETS)
    db = rocksdict.Rdict(str(s / "config" / "rdb"))
    db[b"k"] = b"v"
    db.close()
    conf = tmp_path / "broker.conf"
    conf.write_text(broker_conf("a-basic").read_text() + "configManagerVersion=v2\n")
    rdb = s / "config" / "rdb"
    res = run("consumers", "--store", s, "--broker-config", conf)
    assert (res.exit_code, res.stdout) == (2, "")
    assert res.stderr == (
        f"rmqctl: {rdb}: configManagerVersion=v2: the broker keeps offsetTable here (ConfigStorage), not in "
        "consumerOffset.json; this version does not read it\n"
    )
    assert run("diff", s, s, "--broker-config", conf).exit_code == 2
    res = run("verify", "--store", s, "--broker-config", conf)
    assert res.exit_code == 0 and f"sound as far as read; not read: {rdb}" in res.stderr
    assert "configManagerVersion=v2 keeps topics, subscription groups and consumer offsets here" in res.stderr


def test_diff_compares_the_offsets_an_lmq_broker_loads(store_copy, tmp_path):
    """With enableLmq the broker loads lmqConsumerOffset.json (LmqConsumerOffsetManager): diff compares those
    (it compared consumerOffset.json and called two stores whose loaded offsets differ identical)."""
    a = store_copy("a-basic")
    b = Path(shutil.copytree(a, tmp_path / "b"))
    for root, offset in ((a, 5), (b, 150)):
        write_config(root, "lmqConsumerOffset.json", '{"offsetTable":{"TopicTest@g1":{0:%d}}}' % offset)
    conf = tmp_path / "broker.conf"
    conf.write_text(broker_conf("a-basic").read_text() + "enableLmq=true\n")
    res = run("diff", a, b, "--broker-config", conf, "--format", "table")
    assert res.exit_code == 1
    assert "lmqConsumerOffset.json); differ: TopicTest@g1 queue 0" in res.stdout


def test_a_bad_unit_in_a_file_the_queue_recovery_never_walks_ends_nothing(store_copy, tmp_path, java_oracle):
    """ConsumeQueue.recover walks a queue from its third-last file: a zeroed unit in an older file stays, and the
    units after it are served. a-basic's queues rebuilt in 20-unit files (TopicTest/0: 10 files), unit 10 of the
    first zeroed: RocketMQ 4.9.7 serves up to 182 (run here); rmqctl ended the queue at the bad unit (max 10),
    so offset-by-time and consumers answered from a queue of 10."""
    root = store_copy("a-basic")
    conf = tmp_path / "broker.conf"
    conf.write_text(
        broker_conf("a-basic").read_text().replace("mappedFileSizeConsumeQueue=1280", "mappedFileSizeConsumeQueue=400")
    )
    shutil.rmtree(root / "consumequeue")
    assert run("rebuild", "consumequeue", "--store", root, "--broker-config", conf).exit_code == 0
    patch(root / "consumequeue" / "TopicTest" / "0" / "00000000000000000000", 10 * S.CQ_UNIT_SIZE, bytes(20))
    queues, _, _ = oracle.served(java_oracle, 4, root, conf, tmp_path / "read4")
    assert queues[("TopicTest", 0)] == (0, 182)
    res = run("offset-by-time", "TopicTest", "0", "2099-01-01", "--store", root, "--broker-config", conf)
    assert (json.loads(res.stdout)["minOffset"], json.loads(res.stdout)["maxOffset"]) == (0, 182)
    info = json.loads(run("info", "--store", root, "--broker-config", conf, "--format", "json").stdout)
    row = next(q for q in info["consumequeue"]["queues"] if (q["topic"], q["queueId"]) == ("TopicTest", 0))
    assert (row["minOffset"], row["maxOffset"]) == (0, 182) and "maxOffsetOnDisk" not in row
