"""The columnar engine against the per-record reference (record.read_record + message_dict, one dict and one
orjson line per message): `dump commitlog` output byte for byte on every fixture, on randomly damaged copies,
and on generated records that take every path of the compiled writer (IPv6 hosts, control characters, text
that is not UTF-8, properties named twice); the Arrow batches field by field."""

from __future__ import annotations

import gc
import io
import threading

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ALL_FIXTURES, FIXTURES, broker_conf, copy_store, patch, run
from rmqctl import schema as S
from rmqctl.cli.render import render
from rmqctl.config import BrokerConfig, load_config
from rmqctl.errors import where
from rmqctl.engine import jsonl
from rmqctl.engine.jsonl import chunk_lines
from rmqctl.engine.walk import ARROW_BATCH_BYTES, walk_files
from rmqctl.views import inspect
from rmqctl.views.filters import TRANSACTION_STATES, MessageFilter
from rmqctl.engine.columns import SCALARS, Arenas, record_schema
from rmqctl.record import Message, decompression_limit, encode_record, message_dict, property_crc_state
from rmqctl import store as store_module
from rmqctl.store import Store, offset_to_name

FILE_SIZE = 1 << 20


def reference_dump(
    store: Store,
    body="utf8",
    raw_properties=False,
    decompress=None,
    start=None,
    end=None,
    topic=None,
    queue_id=None,
    limit=None,
    matching=None,
) -> tuple[bytes, list[str]]:
    """What `dump commitlog --format jsonl` printed before the engine: one message_dict per record, the
    content filters (`matching`) matched record by record."""
    scan = store.scan()
    lines = []
    for f, m in scan.records(start, end):
        if topic is not None and m.topicBytes != topic.encode():
            continue
        if queue_id is not None and m.queueId != queue_id:
            continue
        if matching is not None and not matching.matches(m):
            continue
        lines.append(orjson.dumps(message_dict(m, f.name, f.start, body, raw_properties, decompress)) + b"\n")
        if limit is not None and len(lines) >= limit:
            break
    warnings = [f"{where(f.path, f.start + pos)}: {e.detail}; rest of the file skipped" for f, pos, e in scan.errors]
    return b"".join(lines), warnings


def engine_dump(store: Store, **options) -> tuple[bytes, list[str]]:
    """The dump's bytes, each block copied as it comes (with views=True, as the CLI writes them)."""
    warnings = []
    out = b"".join([bytes(b) for b in inspect.dump_commitlog_lines(store, warn=warnings.append, **options)])
    return out, warnings


def reference_rows(store: Store) -> list[dict]:
    """The Arrow rows the reference decoder implies for every record."""
    rows = []
    for f, m in store.scan().records():
        d = message_dict(m, f.name, f.start, "none")
        props = m.properties
        crc = property_crc_state(f.buf, m.position, m)
        row = {name: d[name] for name, _ in SCALARS}
        if m.dledger is not None:
            row["dledger"] = m.dledger
        row.update(
            body=m.body,
            propertiesBytes=m.propertiesBytes,
            properties=list(props.items()),
            tags=props.get("TAGS"),
            tranMsg=props.get("TRAN_MSG"),
            producerGroup=props.get("PGROUP"),
            keys=None if m.keys is None else [w for w in m.keys.split(" ") if w],
            multiDispatch=props.get("INNER_MULTI_DISPATCH"),
            multiQueueOffset=props.get("INNER_MULTI_QUEUE_OFFSET"),
            crcOk=m.body_crc_ok() and (crc is None or crc[0] == crc[1]),
        )
        rows.append(row)
    return rows


def assert_batches_are_the_references(store: Store, jobs: int = 1):
    table = store.scan().table(check_crc=True, jobs=jobs)
    assert table.schema == record_schema(store.dledger is not None)
    assert table.to_pylist() == reference_rows(store)
    assert table.column("crcOk").null_count == 0
    assert store.scan().table().column("crcOk").null_count == len(table)


def fixture_store(name: str, root=None) -> Store:
    return Store(root or FIXTURES / name / "store", load_config(str(broker_conf(name))))


# e-dledger: DLedger entries around the records (the engine walks entry bodies; each line has its `dledger`)
ENGINE_FIXTURES = ALL_FIXTURES + ["f-timer5", "e-dledger"]


@pytest.mark.parametrize("name", ENGINE_FIXTURES)
@pytest.mark.parametrize("body", ["utf8", "base64", "hex", "none"])
def test_dump_is_the_references_on_every_fixture(name, body):
    store = fixture_store(name)
    for options in ({}, {"raw_properties": True, "decompress": decompression_limit(4 << 20)}):
        want = reference_dump(store, body, **options)
        assert want[0]
        assert engine_dump(store, body=body, **options) == want


@pytest.mark.parametrize("name", ENGINE_FIXTURES)
def test_threads_write_the_lines_in_commitlog_order(name, monkeypatch):
    """Batches of three records, their lines written on three threads: the same bytes in the same order as the
    reference, with --limit stopping mid-batch and a damaged file's warning; blocks handed on as views of the
    writers' buffers too, each copied as it comes (as the command line writes them)."""
    monkeypatch.setattr(jsonl, "DUMP_ROWS", 3)
    store = fixture_store(name)
    for limit in (None, 7):
        want = reference_dump(store, "base64", limit=limit)
        for jobs in (1, 3):
            for views in (False, True):
                assert engine_dump(store, body="base64", limit=limit, jobs=jobs, views=views) == want


@pytest.mark.parametrize("name", ENGINE_FIXTURES)
def test_arrow_batches_are_the_references(name):
    assert_batches_are_the_references(fixture_store(name))


@pytest.mark.parametrize("name", ["b-mixed", "e-dledger"])
def test_batches_built_on_threads_come_in_commitlog_order(name, monkeypatch):
    """Batches of three records, their columns built on three threads: the reference's rows in its order."""
    store = fixture_store(name)
    scan = type(store.scan())
    chunks = scan.chunks
    monkeypatch.setattr(scan, "chunks", lambda self, *args, **batch: chunks(self, *args, **batch, rows=3))
    assert len(list(store.scan().batches(jobs=3))) > 6
    assert_batches_are_the_references(store, jobs=3)


@pytest.mark.parametrize("name", ["b-mixed", "d-crashed", "e-dledger"])
def test_batches_on_one_thread_paged_or_not_are_the_references(name, monkeypatch, tmp_path):
    """One thread walking: with a second core the store's pager maps the pages in ahead (a step of 4 KiB here,
    many per file) and gives them back, with one core the walk faults its own: the reference's rows either way,
    and no file of the store mapped once the walk is over."""
    from rmqctl.engine import kernels, walk

    monkeypatch.setattr(walk, "PAGE_AHEAD", 4096)
    asked = []
    ahead = store_module.Pager.ahead
    monkeypatch.setattr(store_module.Pager, "ahead", lambda *a: asked.append(a[2]) or ahead(*a))
    for cores in (1, 2):
        monkeypatch.setattr(kernels, "available_cores", lambda: cores)
        # (a copy: the process's maps are looked at, and other tests in this process may map the fixture's files)
        store = fixture_store(name, copy_store(name, tmp_path / str(cores)))
        assert_batches_are_the_references(store)
        assert bool(asked) == (cores == 2)
        store.close()  # (the reference's reading maps the files until then)
        gc.collect()  # (and its damage's tracebacks hold views until collected)
        rows = sum(b.num_rows for b in store.scan().batches())
        gc.collect()  # (this walk's damage holds views in its tracebacks too, as above)
        assert rows and mapped_files(store) == []


def test_a_paged_walk_closed_on_the_pagers_own_thread_does_not_wait_for_it(tmp_path, monkeypatch):
    """The garbage collector closes an abandoned walk on whichever thread allocates, the pager's own included:
    the walk's end must not wait there for requests only that thread serves (it hung, and every paged walk after)."""
    store = generated_store(tmp_path / "store", files=3)
    abandoned = store.scan().chunks(paged=True)
    next(abandoned)
    real, closed = store_module._madvise, threading.Event()

    def closing_here(*args):
        if threading.current_thread().name == "rmqctl-pager" and not closed.is_set():
            closed.set()
            abandoned.close()
        return real(*args)

    monkeypatch.setattr(store_module, "_madvise", closing_here)
    store_module.PAGER.behind(store.scan().queue.files[2].buf, 0, 4096)
    assert closed.wait(30)
    walked = []
    walker = threading.Thread(target=lambda: walked.append(sum(len(c) for c in store.scan().chunks(paged=True))))
    walker.start()
    walker.join(60)
    assert walked == [sum(1 for _ in store.scan().records())]


def test_without_a_pager_thread_a_paged_walk_gives_its_pages_back_itself(tmp_path, monkeypatch):
    """A process that cannot start another thread (its limit reached): the pages go back on the walking thread."""
    store = generated_store(tmp_path / "store", files=2)
    monkeypatch.setattr(store_module, "PAGER", store_module.Pager())
    start = threading.Thread.start

    def refused(thread):
        if thread.name == "rmqctl-pager":
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", refused)
    records = sum(1 for _ in store.scan().records())
    store.close()  # (the reference's reading maps the files until then)
    assert sum(len(c) for c in store.scan().chunks(paged=True)) == records
    assert mapped_files(store) == []


def test_a_file_deleted_once_mapped_is_let_go(tmp_path, monkeypatch):
    """The broker removes a file between its mapping and the paged walk's look at its data extents: the walk
    passes it to `gone` and lets go of its mapping (it held the deleted file's space until the store closed)."""
    from rmqctl.engine import walk

    store = generated_store(tmp_path / "store", files=2)
    second = store.scan().queue.files[1]
    extents = walk.data_extents

    def deleted_first(path, lo, hi):
        if path == second.path:
            path.unlink()
        return extents(path, lo, hi)

    monkeypatch.setattr(walk, "data_extents", deleted_first)
    gone = []
    scan = store.scan()
    chunks = walk.walk_files(
        scan.queue.files, FILE_SIZE, None, None, True, scan._refused_at, gone=gone.append, paged=True
    )
    assert sum(len(c) for c in chunks) > 0 and gone == [second]
    assert mapped_files(store) == []


def test_batches_are_bounded():
    store = fixture_store("b-mixed")
    scan = store.scan()
    chunks = list(walk_files(scan.queue.files, scan.queue.file_size, None, None, True, scan._refused_at, rows=7))
    assert max(len(c) for c in chunks) == 7
    assert sum(len(c) for c in chunks) == sum(1 for _ in store.scan().records())
    small = list(walk_files(scan.queue.files, scan.queue.file_size, None, None, True, scan._refused_at, max_bytes=4096))
    assert all((c.column("position")[-1] - c.column("position")[0]) < 4096 for c in small)


@pytest.mark.parametrize("jobs", [1, 2])
def test_arrow_batches_end_at_each_arrow_batch_bytes_of_their_file(tmp_path, jobs):
    """A scan's batch runs from the first record at or past a multiple of ARROW_BATCH_BYTES of its file to the
    first at or past the next, on one thread and on several."""
    size = 5 * ARROW_BATCH_BYTES // 2
    data, starts = bytearray(), []
    while len(data) + 2100 < size:
        starts.append(len(data))
        data += kib_record(len(starts) - 1, len(data))
    data += S.BLANK.pack(size - len(data), S.MAGIC_BLANK)
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / offset_to_name(0)).write_bytes(bytes(data).ljust(size, b"\0"))
    store = Store(tmp_path, BrokerConfig(mappedFileSizeCommitLog=size))
    firsts = [b.column("position")[0].as_py() for b in store.scan().batches(jobs=jobs)]
    assert firsts == [min(p for p in starts if p >= cell) for cell in range(0, size, ARROW_BATCH_BYTES)]
    assert sum(b.num_rows for b in store.scan().batches(jobs=jobs)) == len(starts)


@pytest.mark.parametrize("name", ["b-mixed", "e-dledger"])
def test_dump_ranges_are_the_references(name):
    store = fixture_store(name)
    lines = reference_dump(store)[0].splitlines()
    first = orjson.loads(lines[len(lines) // 3])
    last = orjson.loads(lines[2 * len(lines) // 3])
    for options in (
        {"start": first["commitLogOffset"], "end": last["commitLogOffset"]},
        {"start": first["commitLogOffset"] + 1},
        {"topic": first["topic"]},
        {"topic": first["topic"], "queue_id": first["queueId"]},
        {"limit": 7},
        {"topic": "no such topic"},
        {"end": 1},
    ):
        assert engine_dump(store, **options) == reference_dump(store, **options), options


def filters_of(store: Store) -> list[MessageFilter]:
    """Content filters that pick a few records of this store, and some that pick none."""
    messages = [m for _, m in store.scan().records()]
    times = sorted(m.storeTimestamp for m in messages)
    out = [
        MessageFilter(since=times[len(times) // 4]),
        MessageFilter(until=times[len(times) // 2]),
        MessageFilter(since=times[len(times) // 3], until=times[2 * len(times) // 3]),
    ]
    out += [MessageFilter(transaction=state) for state in TRANSACTION_STATES.values()]
    for m in (messages[len(messages) // 3], messages[len(messages) // 2], messages[-1]):
        out += [MessageFilter(tag=m.tags or "TagA"), MessageFilter(msg_id=m.msg_id)]
        out += [MessageFilter(properties={name: value}) for name, value in list(m.properties.items())[:3]]
        if m.uniq_key:
            out.append(MessageFilter(msg_id=m.uniq_key, since=m.storeTimestamp))
        if m.keys:
            out += [MessageFilter(key=word, tag=m.tags) for word in m.keys.split(" ")]
    out += [
        MessageFilter(tag="no such tag"),
        MessageFilter(key=""),
        MessageFilter(key="a b"),
        MessageFilter(properties={"\udcff": "x"}),
        MessageFilter(tag="\ud800"),
    ]
    return out


@pytest.mark.parametrize("name", ENGINE_FIXTURES)
def test_content_filters_are_the_references(name):
    """--since/--until/--tag/--key/--property/--msgid/--sys-flag on the engine's columns: the lines the
    reference decoder's record-by-record match gives, on every fixture."""
    store = fixture_store(name)
    for condition in filters_of(store):
        want = reference_dump(store, "base64", matching=condition)
        assert engine_dump(store, body="base64", where=condition) == want, condition
    where = MessageFilter(since=0, transaction=S.TRANSACTION_NOT_TYPE)
    assert engine_dump(store, where=where, limit=5, topic="TopicTest") == reference_dump(
        store, matching=where, limit=5, topic="TopicTest"
    )


def test_cli_filters_print_what_they_printed(tmp_path):
    """The CLI's filtered dump in jsonl and json: what rendering the reference's objects printed."""
    name = "b-mixed"
    store = fixture_store(name)
    rows = [orjson.loads(line) for line in reference_dump(store, matching=MessageFilter(tag="TagF"))[0].splitlines()]
    assert rows
    args = [
        "dump",
        "commitlog",
        "--store",
        FIXTURES / name / "store",
        "--broker-config",
        broker_conf(name),
        "--tag",
        "TagF",
    ]
    for fmt in ("jsonl", "json"):
        want = io.StringIO()
        render(iter(rows), fmt, out=want)
        assert run(*args, "--format", fmt).stdout == want.getvalue()


def test_cli_json_and_csv_are_the_references(tmp_path):
    """json and csv render the objects of the JSON lines, as they rendered message_dict's."""
    name = "c-v5-features"
    store = fixture_store(name)
    rows = [orjson.loads(line) for line in reference_dump(store, "hex", raw_properties=True)[0].splitlines()]
    args = [
        "dump",
        "commitlog",
        "--store",
        FIXTURES / name / "store",
        "--broker-config",
        broker_conf(name),
        "--body",
        "hex",
        "--raw-properties",
    ]
    for fmt in ("json", "csv"):
        want = io.StringIO()
        render(iter(rows), fmt, out=want)
        assert run(*args, "--format", fmt).stdout == want.getvalue().replace("\r\n", "\n")  # as click's Result reads


@pytest.mark.parametrize("name, data_dir", [("b-mixed", "commitlog"), ("e-dledger", "dledger-n0/data")])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 200_000), st.binary(min_size=1, max_size=6)), min_size=1, max_size=4))
def test_damaged_copies_dump_as_the_reference(tmp_path_factory, name, data_dir, patches):
    """Random bytes written over a copy (over DLedger entry headers and bodies too): the same lines and the
    same damage reports, and the same Arrow rows."""
    root = copy_store(name, tmp_path_factory.mktemp("damaged"))
    path = sorted((root / data_dir).iterdir())[0]
    size = path.stat().st_size
    for at, data in patches:
        patch(path, at % size, data)
    store = fixture_store(name, root)
    for body in ("utf8", "none"):
        assert engine_dump(store, body=body) == reference_dump(store, body)
    table = store.scan().table()
    assert table.drop_columns(["crcOk"]).to_pylist() == [
        {k: v for k, v in row.items() if k != "crcOk"} for row in reference_rows(store)
    ]
    store.close()


def message(topic: bytes, props: bytes, body: bytes, sysflag: int, port: int, queue_offset: int) -> Message:
    m = Message()
    v6_born, v6_store = sysflag & S.BORNHOST_V6_FLAG, sysflag & S.STOREHOSTADDRESS_V6_FLAG
    m.magicCode = S.MAGIC_V2 if len(topic) > 127 else S.MAGIC_V1
    m.bodyCRC, m.queueId, m.flag, m.queueOffset, m.sysFlag = 12345, 3, -7, queue_offset, sysflag
    m.bornTimestamp, m.storeTimestamp = 1_700_000_000_000, -1
    m.bornIp = bytes(range(1, 17)) if v6_born else bytes([10, 0, 0, 255])
    m.storeIp = bytes(16) if v6_store else bytes([192, 168, 0, 1])
    m.bornPort, m.storePort = port, 10911
    m.reconsumeTimes, m.preparedTransactionOffset = 0, -(1 << 63)
    m.body, m.topicBytes, m.propertiesBytes = body, topic, props
    m.bodyLength = len(body)
    return m


TEXT = st.one_of(
    st.text(max_size=12),
    st.binary(max_size=8),
    st.sampled_from([b'\x00\x1f\x7f"\\/', "é😀\u2028".encode(), b"\xed\xa0\x80", b"\xc3"]),
)


def as_bytes(value) -> bytes:
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            TEXT,
            st.lists(st.tuples(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "a", "é", ""]), TEXT), max_size=5),
            st.booleans(),
            TEXT,
            st.sampled_from([0, S.BORNHOST_V6_FLAG, S.STOREHOSTADDRESS_V6_FLAG, 0x30, S.COMPRESSED_FLAG]),
            st.integers(-(1 << 31), (1 << 31) - 1),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_generated_records_dump_as_the_reference(tmp_path_factory, records):
    root = tmp_path_factory.mktemp("generated") / "store"
    (root / "commitlog").mkdir(parents=True)
    data = bytearray()
    for n, (topic, pairs, trailing, body, sysflag, port) in enumerate(records):
        props = b"\x02".join(as_bytes(k) + b"\x01" + as_bytes(v) for k, v in pairs) + (b"\x02" if trailing else b"")
        m = message(as_bytes(topic)[:127], props, as_bytes(body), sysflag, port, n)
        m.physicalOffset = len(data)
        data += encode_record(m)
    data += S.BLANK.pack(FILE_SIZE - len(data), S.MAGIC_BLANK)
    (root / "commitlog" / offset_to_name(0)).write_bytes(bytes(data).ljust(FILE_SIZE, b"\0"))
    store = Store(root, BrokerConfig(mappedFileSizeCommitLog=FILE_SIZE))
    for body in ("utf8", "base64", "hex", "none"):
        assert engine_dump(store, body=body, raw_properties=True) == reference_dump(store, body, raw_properties=True)
    assert_batches_are_the_references(store)
    for condition in filters_of(store):
        assert engine_dump(store, where=condition) == reference_dump(store, matching=condition), condition


def test_a_line_longer_than_a_block(tmp_path):
    """A record whose line does not fit the writer's block gets a block of its own size."""
    root = tmp_path / "store"
    (root / "commitlog").mkdir(parents=True)
    m = message(b"T", b"", b"\x01" * 30000, 0, 1, 0)
    m.physicalOffset = 0
    data = encode_record(m)
    (root / "commitlog" / offset_to_name(0)).write_bytes(data.ljust(FILE_SIZE, b"\0"))
    store = Store(root, BrokerConfig(mappedFileSizeCommitLog=FILE_SIZE))
    chunk = next(store.scan().chunks())
    lines = b"".join(chunk_lines(chunk, np.arange(1), "utf8", False, None, block=1024))
    assert lines == reference_dump(store)[0]


def kib_record(queue_offset: int, offset: int) -> bytes:
    m = message(b"T", b"KEYS\x01a b", bytes(1000), 0, 1, queue_offset)
    m.physicalOffset = offset
    return encode_record(m)


def generated_store(root, files: int, damaged_after: int | None = None) -> Store:
    """`files` commitlog files of FILE_SIZE full of 1 KiB records; with `damaged_after`, the first file's records
    end after that many at bytes that are not a record."""
    (root / "commitlog").mkdir(parents=True)
    for k in range(files):
        data, n = bytearray(), 0
        while damaged_after is None or n < damaged_after:
            record = kib_record(n, k * FILE_SIZE + len(data))
            if len(data) + len(record) + S.BLANK.size > FILE_SIZE:
                break
            data, n = data + record, n + 1
        if damaged_after is None:
            data += S.BLANK.pack(FILE_SIZE - len(data), S.MAGIC_BLANK)
        else:
            data += S.INT32.pack(80) + b"\x99" * 76
        (root / "commitlog" / offset_to_name(k * FILE_SIZE)).write_bytes(bytes(data).ljust(FILE_SIZE, b"\0"))
    return Store(root, BrokerConfig(mappedFileSizeCommitLog=FILE_SIZE))


def mapped_files(store: Store) -> list[str]:
    """The store's commitlog (or DLedger data) files this process maps, as the kernel lists them (a MappedFile may have let go of
    a mapping a view still holds)."""
    directory = str(store.scan().queue.files[0].path.parent)
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if directory in line})


def small_batches(monkeypatch, store: Store, rows: int):
    scan = type(store.scan())
    chunks = scan.chunks
    monkeypatch.setattr(scan, "chunks", lambda self, *args, **batch: chunks(self, *args, **batch, rows=rows))


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_batch_held_is_never_written_over(monkeypatch, jobs):
    """A scan's batches reuse blocks of memory (columns.Arenas): a batch still held, whole or as one of its
    columns, keeps its block; the batches after it are written elsewhere."""
    store = fixture_store("a-basic")
    small_batches(monkeypatch, store, rows=7)
    kept = [(b, b.column("msgId"), b.column("body").slice(1)) for b in store.scan().batches(jobs=jobs)]
    assert len(kept) > 2 * Arenas.MOST
    columns = [(body, msgid) for _, msgid, body in kept]
    del kept  # the batches go, two of their columns stay
    made = [(b.column("body").slice(1), b.column("msgId")) for b in store.scan().batches(jobs=jobs)]  # reusing
    rows, at = reference_rows(store), 0
    for (body, msgid), (again, _) in zip(columns, made):
        n = len(msgid)
        assert msgid.to_pylist() == [r["msgId"] for r in rows[at : at + n]]
        assert body.to_pylist() == again.to_pylist() == [r["body"] for r in rows[at + 1 : at + n]]
        at += n
    assert at == len(rows)


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_a_walk_on_threads_leaves_no_file_mapped(tmp_path, monkeypatch, jobs):
    """Batches still pending on worker threads view a file the walk has left: its mapping goes with the last of
    them, not with Store.close() (every file of the store stayed mapped: memory grew with the store)."""
    store = generated_store(tmp_path / "store", files=8)
    small_batches(monkeypatch, store, rows=16)
    scan = store.scan()
    rows = sum(b.num_rows for b in scan.batches(jobs=jobs))
    assert mapped_files(store) == []
    assert [f for f in scan.queue.files if f._map is not None] == []
    assert rows == sum(1 for _ in store.scan().records())
    store.close()
    end = 3 * FILE_SIZE + 5000  # a walk cut short by `end` lets its last file go too
    assert sum(b.num_rows for b in scan.batches(end=end, jobs=jobs)) > 0
    assert mapped_files(store) == []
    stopped = scan.batches(jobs=jobs)  # a caller that stops early (--limit, a closed pipe)
    first = next(stopped)
    stopped.close()
    del first
    assert mapped_files(store) == []
    store.close()


def test_a_dledger_walk_on_threads_leaves_no_file_mapped(tmp_path, monkeypatch):
    store = fixture_store("e-dledger", copy_store("e-dledger", tmp_path))  # a path no other test maps
    small_batches(monkeypatch, store, rows=3)
    scan = store.scan()
    assert len(list(scan.batches(jobs=3))) > 6
    stopped = scan.batches(jobs=3)
    next(stopped)
    stopped.close()
    assert (mapped_files(store), [f for f in scan.queue.files if f._map is not None]) == ([], [])
    store.close()


def test_damage_is_told_with_the_batches_before_it(tmp_path, monkeypatch):
    """With the walk running batches ahead on threads, `errors` still fills as the batches reach the damage:
    the same errors after each batch as with one thread."""
    store = generated_store(tmp_path / "store", files=1, damaged_after=40)
    damage = 40 * len(kib_record(0, 0))
    small_batches(monkeypatch, store, rows=3)
    seen = {}
    for jobs in (1, 3):
        scan = store.scan()
        seen[jobs] = [(b.column("commitLogOffset")[-1].as_py(), len(scan.errors)) for b in scan.batches(jobs=jobs)]
        assert [(f.name, pos) for f, pos, _ in scan.errors] == [(offset_to_name(0), damage)]
    assert seen[3] == seen[1]
    assert seen[1][-1][1] == 0  # the damage is told once the last batch before it is out


@pytest.mark.parametrize("stop", [None, 16])
def test_damage_in_every_file_is_told_in_order_also_when_stopped_early(tmp_path, monkeypatch, stop):
    """Damage in each of three files, the walk running batches ahead on threads: after each batch `errors` holds
    what it holds with one thread, in commitlog order, and a consumer that stops early keeps what it was told
    (the damage handed out was taken back and told again with a later batch)."""
    store = generated_store(tmp_path / "store", files=3, damaged_after=40)
    small_batches(monkeypatch, store, rows=3)
    seen, told = {}, {}
    for jobs in (1, 2):
        scan = store.scan()
        batches = scan.batches(jobs=jobs)
        seen[jobs] = []
        for n, batch in enumerate(batches, 1):
            seen[jobs].append((batch.column("commitLogOffset")[-1].as_py(), len(scan.errors)))
            if n == stop:
                batches.close()
                break
        told[jobs] = [(f.name, pos) for f, pos, _ in scan.errors]
    assert seen[2] == seen[1] and told[2] == told[1]
    assert told[1] == sorted(told[1]) and len(told[1]) == (3 if stop is None else 1)


def test_a_dump_on_threads_reads_a_file_the_cleaner_deleted_through_its_batch(tmp_path, monkeypatch):
    """A record left to the reference (a property that is not UTF-8) is rendered on a writer thread after the
    walk let its file go, and the broker's cleaner deleted it: the batch's own view keeps the mapping, so the
    dump neither maps the file again (FileGone, or a mapping kept until the store closes) nor stops."""
    root, written = tmp_path / "store", 0
    (root / "commitlog").mkdir(parents=True)
    for k in range(2):
        data, n = bytearray(), 0
        while True:
            m = message(b"T", b"KEYS\x01a\xffb" if k == 0 else b"KEYS\x01a b", bytes(1000), 0, 1, n)
            m.physicalOffset = k * FILE_SIZE + len(data)
            record = encode_record(m)
            if len(data) + len(record) + S.BLANK.size > FILE_SIZE:
                break
            data, n = data + record, n + 1
        data += S.BLANK.pack(FILE_SIZE - len(data), S.MAGIC_BLANK)
        (root / "commitlog" / offset_to_name(k * FILE_SIZE)).write_bytes(bytes(data).ljust(FILE_SIZE, b"\0"))
        written += n
    store = Store(root, BrokerConfig(mappedFileSizeCommitLog=FILE_SIZE))
    head = store.scan().queue.files[0]
    released = threading.Event()
    release, reference_line = type(head).release, jsonl.reference_line

    def release_then_delete(self):
        release(self)
        if self.name == offset_to_name(0) and self.path.exists():
            self.path.unlink()  # the cleaner, just after the walk left the head
            released.set()

    def after_the_release(*args, **kwargs):
        released.wait(10)
        return reference_line(*args, **kwargs)

    monkeypatch.setattr(type(head), "release", release_then_delete)
    monkeypatch.setattr(jsonl, "reference_line", after_the_release)
    lines = sum(block.count(b"\n") for block in inspect.dump_commitlog_lines(store, jobs=2))
    assert released.is_set() and lines == written
    assert mapped_files(store) == []
