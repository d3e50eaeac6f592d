"""The engine's one face: the compiled record walk over a commitlog (and DLedger entries), the checks, the
dispatch and the encoders, in bounded batches of columns. Every layer above engine/ (store, views, checks,
maintenance, metaq, spark, cli) takes what it calls from here, never from a module inside; the modules are
the engine's own business (tests/test_imports.py holds it). The library's entry points are
Store.scan().chunks() / .batches() / .table().

The names load on first use (PEP 562): importing rmqctl.engine loads neither numba nor a kernel module, so
a command loads compiled code only when it reaches for it."""

from __future__ import annotations

from importlib import import_module

# By job: (module here, the names it offers above). "face=own" renames where a module's own name is taken by a
# module of this package (walk, decode, dispatch, ...: a submodule, once imported, is an attribute here too).
JOBS = (
    # the one record walk over files, in chunks, and how it finds its way past damage
    ("walk", "walk_files walk_entry_files data_extents next_record_start Chunk"),
    # a record's columns, decoded from its bytes
    ("batch", "decode_records=decode"),
    ("decode", "COLUMN NCOLUMNS CRC_OK PROPERTIES_NOT_UTF8"),
    ("views", "ColumnViews"),
    ("columns", "DLEDGER_FIELD SCALARS record_batch span_column msgid_column"),
    ("arrow_kernels", "property_values holds_word"),
    # dump's JSON Lines
    ("jsonl", "dump_kernels chunk_lines BLOCK DUMP_BYTES DUMP_ROWS"),
    ("ordered", "ordered_map"),
    # verify's one pass over the records (its options, record columns, state slots and outcomes) and the checks
    # of the queues and the index against it
    (
        "checks",
        "check_walk=walk CHECK_CRC WANT_TAGS WANT_KEYS LMQ FORCE_PROPERTY_CRC ALLOW_V2 DUP_INFO "
        "POS SIZE QUEUE_ID QUEUE_OFFSET SYSFLAG STORE_TS TOPIC TAGS_CODE FLAGS RECORD_COLUMNS MOST_KEYS "
        "S_POS S_RECORDS S_KEYS S_TOPICS S_DIGEST_FROM S_DIGEST_TO S_DIGESTED S_DIGEST_SUM S_DIGEST_DOUBTFUL "
        "STATE_SLOTS ENDED BROKEN FULL INDEX_DIGEST "
        "F_PHYSICAL_OFFSET F_SYSFLAG F_EMPTY_TOPIC F_DROPPED_SEGMENTS F_PROPERTIES_UTF8 F_PROPERTY_CRC "
        "F_PROPERTY_CRC_TEXT F_NO_PROPERTY_CRC F_BODY_CRC F_REFERENCE F_INNER_BATCH F_PARSED_PROPERTIES "
        "queue_breaks hash_slots index_entries slot_chains index_targets ext_units_end "
        "E_NO_RECORD E_PAST_END E_TIME E_WRONG_KEY",
    ),
    # DLedger entries: their heads, the bodies they hold, and why a walk of them stopped
    (
        "dledger",
        "entry_heads walk_bodies ENTRY_REACHED=REACHED ENTRY_FILE_END=FILE_END ENTRY_BLANK=BLANK "
        "ENTRY_ZERO_SIZE=ZERO_SIZE ENTRY_SHORT_HEAD=SHORT_HEAD ENTRY_ILLEGAL_MAGIC=ILLEGAL_MAGIC "
        "ENTRY_SMALL_SIZE=SMALL_SIZE",
    ),
    # what the broker dispatches from records (rebuild, append), what append writes, and index slots
    ("dispatch", "dispatch_walk=walk dispatch_decode=decode put_units_in_order"),
    (
        "encode",
        "encode_batch encode_records encode_columns encode_column_block IP_BYTES queue_offsets ack_lines ACK_BOUND",
    ),
    ("index", "put_index_keys=put_keys"),
    ("record", "index_slots"),
    # a batch of RocksDB pairs found in one buffer
    ("pairs", "pair_spans PAIR_KEY_LO=KEY_LO PAIR_KEY_HI=KEY_HI PAIR_VALUE_LO=VALUE_LO PAIR_VALUE_HI=VALUE_HI"),
    # the 5.4 RocksDB message store's keys, parsed in batches and held against the records they name
    (
        "rocksdbstore",
        "parse_store_keys=parse agree_store_records=agree STORE_INDEX=INDEX STORE_TIMER=TIMER "
        "STORE_TRANS=TRANS STORE_NCOLUMNS=NCOLUMNS STORE_OFFSET=OFFSET "
        "in_hour_bucket java_long gather_store_run=gathered order_store_rows=ordered_rows STORE_VALUE_SLOT=VALUE_SLOT "
        "index_digest table_index_digest=table_digest",
    ),
    # RocksDB's table files: blocks, their entries, an index's data block handles
    (
        "sstable",
        "sst_varint=varint sst_meta_block=meta_block SST_READ=READ "
        "SST_DECODED_BY_CALLER=DECODED_BY_CALLER SST_TRAILER=TRAILER SST_ZSTD=ZSTD",
    ),
    # XXH3, RocksDB's default block checksum
    ("xxh3", "xxh3_64=xxh3 xxh3_block_checksums=block_checksums"),
    # append's compiled reading of dump-shaped JSON lines into columns
    (
        "jsonl_parse",
        "parse_block interned_texts PARSED_NAMES=NAMES PARSE_MOST_DISTINCT=MOST_DISTINCT "
        "PARSED_QUEUE_ID=QUEUE_ID PARSED_FLAG=FLAG PARSED_SYSFLAG=SYSFLAG PARSED_BORN_TS=BORN_TS "
        "PARSED_STORE_TS=STORE_TS PARSED_RECONSUME=RECONSUME PARSED_PREPARED=PREPARED",
    ),
    # the kernels' machinery: threads, topic table, numba's loading and the ahead-of-time module
    (
        "kernels",
        "available_cores when_loaded rehash property_names T_AT T_COUNT T_FIRST T_LEN T_WELL_FORMED TOPIC_COLUMNS",
    ),
    ("aot", "ready_kernels"),
)
FACE = {
    face: (module, own or face)
    for module, names in JOBS
    for face, _, own in (name.partition("=") for name in names.split())
}
__all__ = sorted(FACE)


def __getattr__(name: str):
    if name not in FACE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, own = FACE[name]
    value = getattr(import_module(f".{module}", __name__), own)  # on first use: see the docstring
    globals()[name] = value
    return value


def __dir__():
    return __all__
