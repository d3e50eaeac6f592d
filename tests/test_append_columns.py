"""append's column-wise path (engine.jsonl_parse, maintenance.append_batch) against the per-message path it
stands in for: the same stores byte for byte and the same acknowledgements, on real stores' dumps and on the
benchmark's messages, and RocketMQ's own code loading what it wrote; the kernel's reading of a line against
orjson + message_from_json, line by line, on lines made to trip it."""

from __future__ import annotations

import base64
import json

import numpy as np
import orjson
import pytest

import oracle
from conftest import FIXTURES, broker_conf, jsonl, one_line_error, run
from rmqctl.cli.append_cmds import message_from_json
from rmqctl.config import load_config
from rmqctl.errors import UsageError
from rmqctl.maintenance.append import Appender, dumps_appended
from rmqctl.maintenance.append_batch import parsed_lines, stage_columns

FIXTURE_NAMES = ("a-basic", "b-mixed", "c-v5-features")


def store_files(root) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "lock"
    }


def one_by_one(store, conf, lines: bytes, keep_timestamps: bool, clock=None) -> str:
    """The per-message path: each line through message_from_json and Appender.append; acknowledgements as text."""
    app = Appender(store, load_config(conf), keep_index_time=keep_timestamps, create=True, clock=clock)
    app.open()
    try:
        for line in lines.splitlines():
            if line.strip():
                app.append(message_from_json(orjson.loads(line), keep_timestamps), producer_topic_rules=False)
        return "".join(dumps_appended(a) for a in app.commit())
    finally:
        app.close()


def by_columns(store, conf, lines: bytes, keep_timestamps: bool, clock=None) -> tuple[str, int]:
    """The column-wise path alone over the lines (every line must be one it takes): acknowledgements as text and
    the number of blocks it took."""
    app = Appender(store, load_config(conf), keep_index_time=keep_timestamps, create=True, clock=clock)
    app.open()
    u8 = np.frombuffer(lines, np.uint8)
    lo = blocks = 0
    try:
        while lo < len(lines):
            lo, _, columns, stopped = parsed_lines(app, u8, lo, len(lines), 700, 1 << 20, keep_timestamps)
            assert not stopped and columns is not None and stage_columns(app, columns)
            blocks += 1
        return app.commit_lines(), blocks
    finally:
        app.close()


def bench_lines(n: int, store_timestamps: bool) -> bytes:
    """benchmarks/bench_append.py's messages (4 topics x 4 queues, TAGS and two KEYS, 1 KiB bodies)."""
    body = base64.b64encode((b"abcdefghijklmnopqrstuvwxyz" * 40)[:1024]).decode()
    out = []
    for i in range(n):
        line = {
            "topic": ["OrderTopic", "PaymentTopic", "AuditTopic", "BenchTopic-7"][i % 4],
            "queueId": (i // 4) % 4,
            "bornTimestamp": 1_700_000_000_000 + i,
            "bornHost": "10.0.0.1:40000",
            "storeHost": "192.168.0.10:10911",
            "properties": {"TAGS": f"Tag{'ABCDE'[i % 5]}", "KEYS": f"ORDER-{i:09d} USER-{i % 9973:05d}"},
            "bodyEncoding": "base64",
            "body": body,
        }
        if store_timestamps:
            line["storeTimestamp"] = 1_700_000_100_000 + i // 3
        out.append(json.dumps(line))
    return ("\n".join(out) + "\n").encode()


def scanned_table(tmp_path, conf, n: int):
    """The scan's table of a store holding the benchmark's first n messages (the Parquet a copy reads)."""
    from rmqctl.store import Store

    source = tmp_path / "source"
    assert (
        run(
            "append",
            "--store",
            source,
            "--broker-config",
            conf,
            "--create",
            "--jsonl",
            "-",
            "--keep-timestamps",
            input=bench_lines(n, True),
        ).exit_code
        == 0
    )
    store = Store(source, load_config(conf))
    try:
        return store.scan().table()
    finally:
        store.close()


def by_rows(tmp_path, conf, table, parquet) -> str:
    """`append --parquet` of the table written to `parquet` (into tmp_path/fast) against message_from_row and
    Appender.append row by row (into tmp_path/slow): the same acknowledgements, which it returns."""
    from rmqctl.cli.append_cmds import message_from_row

    res = run(
        "append",
        "--store",
        tmp_path / "fast",
        "--broker-config",
        conf,
        "--create",
        "--parquet",
        parquet,
        "--keep-timestamps",
    )
    assert res.exit_code == 0, res.stderr
    app = Appender(tmp_path / "slow", load_config(conf), keep_index_time=True, create=True)
    with app:
        for row in table.to_pylist():
            app.append(message_from_row(row, True), producer_topic_rules=False)
        want = "".join(dumps_appended(a) for a in app.commit())
    assert res.stdout == want
    return want


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_the_command_writes_what_the_per_message_path_writes(tmp_path, name):
    """A real store's dump, through `append --jsonl` (column-wise where it can, per line where not) and through
    Appender.append line by line: the same files, byte for byte, and the same acknowledgements."""
    conf = broker_conf(name)
    lines = run(
        "dump",
        "commitlog",
        "--store",
        FIXTURES / name / "store",
        "--broker-config",
        conf,
        "--format",
        "jsonl",
        "--body",
        "base64",
        "--raw-properties",
    ).stdout.encode()
    res = run(
        "append",
        "--store",
        tmp_path / "fast",
        "--broker-config",
        conf,
        "--create",
        "--jsonl",
        "-",
        "--keep-timestamps",
        input=lines,
    )
    assert res.exit_code == 0, res.stderr
    want = one_by_one(tmp_path / "slow", conf, lines, True)
    assert res.stdout == want
    assert store_files(tmp_path / "fast") == store_files(tmp_path / "slow")


@pytest.mark.parametrize("version", [4, 5])
def test_columns_alone_write_what_the_per_message_path_writes(tmp_path, version):
    """The benchmark's messages, every block column-wise (five blocks; no storeTimestamp: both paths take the
    same clock), on a 4.x and a 5.x store (the `__CRC32#` trailer, trailing separators): the same files."""
    conf = tmp_path / "broker.conf"
    crc = "enabledAppendPropCRC=true\n" if version == 5 else ""
    conf.write_text(f"brokerIP1=192.168.0.10\nrocketmqVersion={version}\n{crc}mappedFileSizeCommitLog=1048576\n")
    lines = bench_lines(3000, store_timestamps=False)
    got, blocks = by_columns(tmp_path / "fast", conf, lines, False, clock=lambda: 1_700_000_200_000)
    want = one_by_one(tmp_path / "slow", conf, lines, False, clock=lambda: 1_700_000_200_000)
    assert blocks == 5 and got == want
    assert len(list((tmp_path / "fast" / "commitlog").iterdir())) == 4  # blocks that roll to the next file
    assert store_files(tmp_path / "fast") == store_files(tmp_path / "slow")


def test_rocketmq_loads_what_the_columns_wrote(tmp_path, java_oracle):
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerIP1=192.168.0.10\nmappedFileSizeCommitLog=1048576\n")
    lines = bench_lines(2000, store_timestamps=True)
    res = run(
        "append",
        "--store",
        tmp_path / "s",
        "--broker-config",
        conf,
        "--create",
        "--jsonl",
        "-",
        "--keep-timestamps",
        input=lines,
    )
    assert res.exit_code == 0, res.stderr
    assert len(jsonl(res.stdout)) == 2000
    reading = oracle.read(java_oracle, 4, tmp_path / "s", conf, tmp_path / "oracle")
    oracle.assert_loads_as_rmqctl_reads(reading, tmp_path / "s", conf)


GOOD = {
    "topic": "T",
    "queueId": 1,
    "flag": 2,
    "sysFlag": 0,
    "bornTimestamp": 5,
    "storeTimestamp": 6,
    "bornHost": "1.2.3.4:5",
    "storeHost": "6.7.8.9:10",
    "properties": {"A": "b", "KEYS": "k1 k2"},
    "bodyEncoding": "base64",
    "body": "aGVsbG8=",
}
TRICKY = [
    '{"topic":"T"}',
    '{ "topic" : "T" , "body" : "x" }\r',
    '{"topic":"T","body":"aGk=","bodyEncoding":"base64"}',
    '{"topic":"T","body":"aGk","bodyEncoding":"base64"}',
    '{"topic":"T","body":"aGl=","bodyEncoding":"base64"}',
    '{"topic":"T","body":"a=Gk","bodyEncoding":"base64"}',
    '{"topic":"T","body":"aGk=","bodyEncoding":"hex"}',
    '{"topic":"T","body":"x","bodyLength":1}',
    '{"topic":"T","body":"x","bodyLength":2}',
    '{"topic":"T","bodyEncoding":"none"}',
    '{"topic":"T","queueId":01}',
    '{"topic":"T","queueId":1.0}',
    '{"topic":"T","queueId":-0}',
    '{"topic":"T","queueId":true}',
    '{"topic":"T","queueId":"1"}',
    '{"topic":"T","queueId":123456789012345678901}',
    '{"topic":"T","queueId":null,"storeHost":null}',
    '{"topic":"T","topic":"U"}',
    '{"topic":"T\\u0041"}',
    '{"topic":"T","x":{"a":1}}',
    '{"topic":"T","x":[1]}',
    '{"topic":"T","x":"\\ud800","y":-1.5e+3,"z":true,"w":false,"v":null}',
    '{"topic":"T","x":tru}',
    '{"topic":"T","x":"\\q"}',
    '{"topic":"T",}',
    '{"topic":"T"} x',
    '{"topic":"T"',
    '{"topic":"T","x":1 2}',
    '{"topic":"T","properties":{"A":"1","B":"2","A":"3"}}',
    '{"topic":"T","properties":{"A":"\\u0001"}}',
    '{"topic":"T","properties":{"A\\n":"\\"q\\" \\\\ \\/ \\t"}}',
    '{"topic":"T","properties":{"A":1}}',
    '{"topic":"T","properties":{"A":null}}',
    '{"topic":"T","properties":[]}',
    '{"topic":"T","properties":{}}',
    '{"topic":"T","properties":{"A":"1"},"propertiesString":"B\\u00012\\u0002"}',
    '{"propertiesString":"B\\u00012","topic":"T","properties":{"A":"1"}}',
    '{"topic":"T","propertiesString":"\\u00e9"}',
    '{"topic":"caf\u00e9"}',
    '{"topic":"T","body":"\u00e9"}',
    '{"topic":"T","body":"a\\u0000b"}',
    "{}",
    "[]",
    "1",
    '{"topic":"T","body":"aGk=","bodyEncoding":"base64","bodyLength":2}',
    '{"topic":"T","bodyEncoding":"utf8","body":"x"}',
    '{"topic":"T","bornHost":"[2001:db8::1]:9"}',
    '{"topic":"T","flag":-2147483649}',
    '\x0b{"topic":"T"}',
    json.dumps(GOOD),
    json.dumps({**GOOD, "properties": {f"P{i}": str(i) for i in range(70)}}),
]


def reference_row(line: str, version: int):
    """What the per-message path reads from a line (None where it refuses it), in the kernel's terms."""
    try:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = json.loads(line)
        m = message_from_json(obj, keep_timestamps=True)
    except (UsageError, ValueError):
        return None
    from rmqctl.javacompat import encode_properties

    props = m.properties_string if m.properties_string is not None else encode_properties(m.properties, version >= 5)
    return (
        m.topic,
        m.queue_id,
        m.flag,
        m.sys_flag,
        m.born_timestamp,
        m.store_timestamp,
        m.reconsume_times,
        m.prepared_transaction_offset,
        m.born_host,
        m.store_host,
        m.body,
        props.encode("utf-8", "surrogatepass"),
    )


@pytest.mark.parametrize("version", [4, 5])
@pytest.mark.parametrize("line", TRICKY)
def test_the_kernel_reads_a_line_as_message_from_json_or_leaves_it(line, version):
    class Store:  # what parsed_lines asks of the appender
        pass

    app = Store()
    app.version = version
    data = line.encode("utf-8", "surrogatepass") + b"\n"
    end, lines, c, stopped = parsed_lines(app, np.frombuffer(data, np.uint8), 0, len(data), 8, 1 << 20, True)
    want = reference_row(line, version)
    if stopped:
        assert c is None and end == 0
        return
    assert want is not None, "the kernel took a line the per-message path refuses"
    assert lines == 1 and len(c) == 1
    t, born, store = c.ids[0]
    got = (
        c.topics[t],
        int(c.queue_id[0]),
        int(c.flag[0]),
        int(c.sys_flag[0]),
        int(c.born_ts[0]) if c.born_given[0] else None,
        int(c.store_ts[0]) if c.store_given[0] else None,
        int(c.reconsume[0]),
        int(c.prepared[0]),
        c.hosts[born] if born >= 0 else None,
        c.hosts[store] if store >= 0 else None,
        c.body[c.body_off[0] : c.body_off[1]].tobytes(),
        c.props[c.props_off[0] : c.props_off[1]].tobytes(),
    )
    assert got == want


def test_the_kernel_takes_the_common_lines():
    """The lines a copy is made of are read column-wise, not left to the per-line path."""

    class Store:
        version = 5

    data = bench_lines(50, True) + json.dumps(GOOD).encode() + b"\n\n  \n"
    end, lines, c, stopped = parsed_lines(Store(), np.frombuffer(data, np.uint8), 0, len(data), 100, 1 << 20, True)
    assert (end, lines, len(c), stopped) == (len(data), 53, 51, False)


@pytest.mark.parametrize("version", [4, 5])
def test_parquet_columns_write_what_the_per_row_path_writes(tmp_path, version):
    """A scan's table of the benchmark's messages (the Parquet a copy reads), through `append --parquet` and
    through message_from_row + Appender.append row by row: the same files and acknowledgements."""
    import pyarrow.parquet as pq

    crc = "enabledAppendPropCRC=true\n" if version == 5 else ""
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerIP1=192.168.0.10\nrocketmqVersion={version}\n{crc}mappedFileSizeCommitLog=1048576\n")
    table = scanned_table(tmp_path, conf, 3000)
    pq.write_table(table, tmp_path / "m.parquet", row_group_size=1000)
    by_rows(tmp_path, conf, table, tmp_path / "m.parquet")
    assert store_files(tmp_path / "fast") == store_files(tmp_path / "slow") == store_files(tmp_path / "source")


def test_the_library_commit_returns_a_blocks_messages_as_appended(tmp_path):
    """Appender.commit() (the library's call) gives a block's messages as the Appended the command prints."""
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerIP1=192.168.0.10\n")
    lines = bench_lines(20, True)
    app = Appender(tmp_path / "s", load_config(conf), keep_index_time=True, create=True)
    with app:
        _, _, columns, _ = parsed_lines(app, np.frombuffer(lines, np.uint8), 0, len(lines), 100, 1 << 20, True)
        assert stage_columns(app, columns)
        got = [a.as_dict() for a in app.commit()]
    want = [orjson.loads(line) for line in one_by_one(tmp_path / "slow", conf, lines, True).splitlines()]
    assert got == want and len(got) == 20


def test_blocks_parsed_ahead_write_what_the_per_message_path_writes_up_to_a_bad_line(tmp_path, monkeypatch):
    """--jsonl from a file in blocks of 4 KiB, a thread parsing the next block while the last one is written and
    committed: lines the kernel leaves to the per-line path (an escaped topic) keep their places, a bad line deep
    in the file is the one named, and the records, queues and acknowledgements are those of the per-message path
    over the lines before it (the whole store that of the same commits over those lines): the blocks parsed ahead
    of the bad line add nothing."""
    from rmqctl.cli import append_cmds

    for name, value in (("BATCH_BYTES", 4096), ("READ_CHUNK", 4096), ("BATCH_MESSAGES", 7)):
        monkeypatch.setattr(append_cmds, name, value)
    conf = broker_conf("a-basic")
    lines = [
        json.dumps(
            {
                "topic": f"J{i % 3}",
                "queueId": i % 2,
                "bornTimestamp": 1_700_000_000_000 + i,
                "storeTimestamp": 1_700_000_100_000 + i,
                "body": f"m{i}" * (i % 50),
            }
        )
        for i in range(600)
    ]
    for i in range(5, 600, 37):
        lines[i] = lines[i].replace('"topic": "J', '"topic": "\\u004a')  # the same topic, for the per-line path
    lines[450] = "{not json"
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    res = run(
        "append",
        "--store",
        tmp_path / "ahead",
        "--broker-config",
        conf,
        "--create",
        "--keep-timestamps",
        "--jsonl",
        tmp_path / "in.jsonl",
    )
    one_line_error(res, "in.jsonl: line 451: not valid JSON")
    before = "\n".join(lines[:450]).encode()
    assert res.stdout == one_by_one(tmp_path / "slow", conf, before, True)
    ahead, slow = store_files(tmp_path / "ahead"), store_files(tmp_path / "slow")
    assert {k: v for k, v in ahead.items() if not k.startswith("index/")} == {
        k: v for k, v in slow.items() if not k.startswith("index/")
    }
    # the index file is named when a commit first needs it: compared with the same commits over the good lines
    whole = run(
        "append",
        "--store",
        tmp_path / "whole",
        "--broker-config",
        conf,
        "--create",
        "--keep-timestamps",
        "--jsonl",
        "-",
        input=before,
    )
    assert whole.stdout == res.stdout and store_files(tmp_path / "whole") == ahead
    pad = -(len(before) + 2) % 4096  # blanks, so that the input ends where a block does
    (tmp_path / "good.jsonl").write_bytes(before + b"\n" + b" " * pad + b"\n")
    good = run(
        "append",
        "--store",
        tmp_path / "good",
        "--broker-config",
        conf,
        "--create",
        "--keep-timestamps",
        "--jsonl",
        tmp_path / "good.jsonl",
    )
    assert good.stdout == res.stdout and store_files(tmp_path / "good") == ahead


def test_parquet_nulls_are_read_as_the_per_row_path_reads_them(tmp_path):
    """Rows with null hosts, queue ids, flags and reconsume counts (the column path reads them from the Arrow
    buffers and validity bitmaps, sliced batches included): `append --parquet` writes what message_from_row and
    Appender.append write row by row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rmqctl.maintenance.append_batch import arrow_columns

    conf = tmp_path / "broker.conf"
    conf.write_text("brokerIP1=192.168.0.10\nrocketmqVersion=4\nmappedFileSizeCommitLog=1048576\n")
    table = scanned_table(tmp_path, conf, 2000)
    for name, every in (("bornHost", 3), ("queueId", 5), ("flag", 7), ("reconsumeTimes", 4)):
        values = table.column(name).to_pylist()
        i = table.schema.get_field_index(name)
        table = table.set_column(
            i,
            name,
            pa.array([None if r % every == 1 else v for r, v in enumerate(values)], table.schema.field(name).type),
        )
    batch = table.to_batches()[0]
    whole, part = arrow_columns(batch, True), arrow_columns(batch.slice(7, 100), True)
    for field in ("queue_id", "flag", "born_ts", "born_given", "store_ts", "store_given", "reconsume", "prepared"):
        assert (getattr(part, field) == getattr(whole, field)[7:107]).all(), field

    def named(c, rows):  # each row's topic and hosts (ids index each batch's own dictionaries)
        return [(c.topics[t], c.hosts[b] if b >= 0 else None, c.hosts[s] if s >= 0 else None) for t, b, s in rows]

    assert named(part, part.ids) == named(whole, whole.ids[7:107])
    assert sum(b < 0 for _, b, _ in whole.ids) == batch.column("bornHost").null_count > 0
    pq.write_table(table, tmp_path / "m.parquet", row_group_size=300)
    by_rows(tmp_path, conf, table, tmp_path / "m.parquet")
    assert store_files(tmp_path / "fast") == store_files(tmp_path / "slow")


def test_parquet_properties_map_is_read_only_where_the_bytes_may_be_null(tmp_path):
    """`append --parquet` reads the `properties` map column only when a row may lack propertiesBytes (the row
    groups' statistics say none does, or there are none): rows without the bytes are appended from their map,
    as message_from_row reads them, and files with and without statistics append alike."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rmqctl.cli.append_cmds import _needed

    conf = tmp_path / "broker.conf"
    conf.write_text("brokerIP1=192.168.0.10\nrocketmqVersion=4\nmappedFileSizeCommitLog=1048576\n")
    table = scanned_table(tmp_path, conf, 600)
    pq.write_table(table, tmp_path / "whole.parquet", row_group_size=200)
    pq.write_table(table, tmp_path / "bare.parquet", row_group_size=200, write_statistics=False)
    assert not _needed(pq.read_metadata(tmp_path / "whole.parquet"), "properties")
    assert _needed(pq.read_metadata(tmp_path / "bare.parquet"), "properties")
    i = table.schema.get_field_index("propertiesBytes")
    raw = table.column(i).to_pylist()
    holed = table.set_column(i, "propertiesBytes", pa.array([None if r == 450 else v for r, v in enumerate(raw)]))
    pq.write_table(holed, tmp_path / "holed.parquet", row_group_size=200)
    assert _needed(pq.read_metadata(tmp_path / "holed.parquet"), "properties")
    acks = {}
    for name, t in (("whole", table), ("bare", table), ("holed", holed)):
        acks[name] = by_rows(tmp_path / name, conf, t, tmp_path / f"{name}.parquet")
        assert store_files(tmp_path / name / "fast") == store_files(tmp_path / name / "slow")
    assert acks["whole"] == acks["bare"] == acks["holed"]
