"""MetaQ (Metamorphosis 1.4.x) segment stores, read and written with the broker's own rules.

Layers as for RocketMQ: `rmqctl.schema_metaq` declares the record; `config` (server.ini, deletePolicy) and
`store` (partitions, segments, the recovery check, decoding) are the store model; `inspect`, `verify`,
`repair`, `clean` and `append` are operations returning results; `lock` keeps writers and a running broker
apart. The CLI is `rmqctl/cli/metaq_cmds.py`, the Spark source `rmqctl/spark/metaq.py`.
"""
