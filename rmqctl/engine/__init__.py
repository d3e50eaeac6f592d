"""The one record walk over a commitlog, compiled, in bounded batches of columns: `walk` (the decode into
per-record spans and fields), `columns` (those batches as Arrow), `jsonl` (dump's JSON Lines from them).
The library's entry points are Store.scan().chunks() / .batches() / .table()."""
