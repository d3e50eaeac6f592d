"""The Arrow batches of a walk whose files are cut into cells walked on threads (engine.walk_segments): the
reference's rows, and the very batches and damage of the walk on one thread, wherever a cell's first record
is guessed wrong."""

from __future__ import annotations

import pytest

from rmqctl import schema as S
from rmqctl.config import BrokerConfig
from rmqctl.engine.walk import walk_files
from rmqctl.record import encode_record
from rmqctl.store import Store, offset_to_name
from test_engine import (
    ENGINE_FIXTURES,
    FILE_SIZE,
    assert_batches_are_the_references,
    fixture_store,
    generated_store,
    kib_record,
    mapped_files,
    message,
    reference_rows,
)


def small_cells(monkeypatch, store: Store, rows: int, cell: int):
    scan = type(store.scan())
    chunks = scan.chunks
    monkeypatch.setattr(
        scan, "chunks", lambda self, *args, **batch: chunks(self, *args, **{**batch, "rows": rows, "max_bytes": cell})
    )


def walked(store: Store, jobs: int, **bounds) -> tuple[list, list]:
    """Each batch's rows (its first and last offset) with the damage told by the time it is handed out, and
    all the damage told."""
    scan = store.scan()
    seen = []
    for batch in scan.batches(jobs=jobs, **bounds):
        offsets = batch.column("commitLogOffset").to_pylist()
        seen.append((offsets[0], offsets[-1], batch.num_rows, len(scan.errors)))
    return seen, [(f.name, pos, e.detail) for f, pos, e in scan.errors]


def assert_the_walk_on_one_thread(store: Store, **bounds) -> list:
    """The batches of a walk on threads are those of one thread (returned)."""
    one = walked(store, 1, **bounds)
    for jobs in (2, 3):
        assert walked(store, jobs, **bounds) == one
    return one[0]


@pytest.mark.parametrize("name", [name for name in ENGINE_FIXTURES if name != "e-dledger"])
@pytest.mark.parametrize("cell", [700, 4096, 1 << 20])
def test_cells_on_threads_are_the_walk_on_one_thread(name, cell, monkeypatch):
    """Cells smaller than a record, a few records, a whole file: the reference's rows, and the batches and
    damage of one thread."""
    store = fixture_store(name)
    small_cells(monkeypatch, store, rows=5, cell=cell)
    assert assert_the_walk_on_one_thread(store)
    assert_batches_are_the_references(store, jobs=3)


def store_of(root, records: list[bytes], sparse: bool = False) -> Store:
    (root / "commitlog").mkdir(parents=True)
    data = b"".join(records)
    path = root / "commitlog" / offset_to_name(0)
    if sparse:  # the file's tail a hole, as the broker preallocates it
        path.write_bytes(data)
        with open(path, "r+b") as f:
            f.truncate(FILE_SIZE)
    else:
        path.write_bytes((data + S.BLANK.pack(FILE_SIZE - len(data), S.MAGIC_BLANK)).ljust(FILE_SIZE, b"\0"))
    return Store(root, BrokerConfig(mappedFileSizeCommitLog=FILE_SIZE))


def kib_records(n: int, physical=lambda k, at: at) -> list[bytes]:
    out, at = [], 0
    for k in range(n):
        out.append(kib_record(k, physical(k, at)))
        at += len(out[-1])
    return out


def a_record_inside_a_body(root, inner_topic: bytes) -> tuple[Store, int]:
    """30 records, the 13th's body holding what looks like a record starting where it lies (its PHYSICALOFFSET
    its own offset), of `inner_topic`; and that offset."""
    records = kib_records(30)
    inner_at = sum(map(len, records[:12])) + S.HEAD_SIZE[0]  # (the 13th record's body starts there)
    inner = message(inner_topic, b"", bytes(300), 0, 1, 0)
    inner.physicalOffset = inner_at
    body = encode_record(inner)
    outer = message(b"T", b"KEYS\x01a b", body + bytes(1000 - len(body)), 0, 1, 12)
    outer.physicalOffset = inner_at - S.HEAD_SIZE[0]
    records[12] = encode_record(outer)
    return store_of(root, records), inner_at


def test_a_record_inside_a_body_is_not_a_cell_start(tmp_path, monkeypatch):
    """The guess for the cell of a record-like header inside a body begins there, and the cell is walked again
    from where the walk before it ended."""
    store, inner_at = a_record_inside_a_body(tmp_path / "store", b"T")
    small_cells(monkeypatch, store, rows=4, cell=inner_at - 10)
    assert_the_walk_on_one_thread(store)
    assert_batches_are_the_references(store, jobs=2)


@pytest.mark.parametrize("jobs", [1, 2])
def test_what_fails_in_a_dropped_guess_is_not_the_walks(tmp_path, jobs):
    """`built` runs on the records of a guess the walk then drops (a record inside a body): a failure there is
    not the walk's, which hands out its own rows and raises nothing."""
    store, inner_at = a_record_inside_a_body(tmp_path / "store", b"PHANTOM")
    files, cell = store.commitlog.files, inner_at - 10

    def strict(chunk):
        topics = {bytes(chunk.u8[a : a + n]) for a, n in zip(chunk.column("topicAt"), chunk.column("topicLength"))}
        if b"PHANTOM" in topics:
            raise ValueError("built on a record the walk does not hold")
        return len(chunk)

    walk = walk_files(files, FILE_SIZE, None, None, True, print, rows=4, max_bytes=cell, built=strict, jobs=jobs)
    assert sum(walk) == 30


def test_records_whose_physical_offset_is_not_theirs(tmp_path, monkeypatch):
    """No cell's first record can be guessed (every other PHYSICALOFFSET is off): each is walked after the one
    before it, with the same batches."""
    records = kib_records(40, physical=lambda k, at: at + (8 if k % 2 else 0))
    store = store_of(tmp_path / "store", records)
    small_cells(monkeypatch, store, rows=7, cell=2500)
    assert_the_walk_on_one_thread(store)
    assert_batches_are_the_references(store, jobs=2)


@pytest.mark.parametrize("sparse", [False, True])
def test_damage_and_the_end_of_the_data_in_a_later_cell(tmp_path, monkeypatch, sparse):
    """A walk that ends at damage, at the zeros after the last record, or at a hole, in a cell after the
    first: the damage told after the same batch, and no cell past it handed out."""
    store = generated_store(tmp_path / "damaged", files=2, damaged_after=300)
    small_cells(monkeypatch, store, rows=50, cell=16 << 10)
    assert_the_walk_on_one_thread(store)
    assert walked(store, 2)[1] and walked(store, 2)[1][0][:2] == (offset_to_name(0), 300 * len(kib_record(0, 0)))
    store = store_of(tmp_path / "store", kib_records(300), sparse=sparse)  # (the same cells: chunks is patched)
    assert_the_walk_on_one_thread(store)
    assert sum(n for _, _, n, _ in walked(store, 2)[0]) == 300


def test_start_and_end_inside_one_batch(tmp_path, monkeypatch):
    """The records that start in [start, end) and only those, when both lie in one batch (the rows before
    `start` of the batch that `end` cuts were handed out too)."""
    store = generated_store(tmp_path / "store", files=2)
    size = len(kib_record(0, 0))
    want = [r["commitLogOffset"] for r in reference_rows(store)]
    for start, end in [(3 * size + 5, 7 * size), (FILE_SIZE + size, FILE_SIZE + 2 * size + 1), (10, 11)]:
        expected = [o for o in want if start <= o < end]
        for jobs in (1, 2):
            table = store.scan().table(start, end, jobs=jobs)
            assert table.column("commitLogOffset").to_pylist() == expected, (start, end, jobs)
        small_cells(monkeypatch, store, rows=3, cell=4 * size)
        assert_the_walk_on_one_thread(store, start=start, end=end)
        monkeypatch.undo()


def test_cells_on_threads_leave_no_file_mapped(tmp_path, monkeypatch):
    store = generated_store(tmp_path / "store", files=4)
    small_cells(monkeypatch, store, rows=16, cell=64 << 10)
    want = len(reference_rows(store))
    store.close()  # (the reference's walk maps them)
    scan = store.scan()
    assert sum(b.num_rows for b in scan.batches(jobs=2)) == want
    assert mapped_files(store) == []
    stopped = scan.batches(jobs=2)
    next(stopped)
    stopped.close()
    assert mapped_files(store) == []
    store.close()
