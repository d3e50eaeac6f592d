"""rmqctl: inspect, verify and repair Apache RocketMQ broker stores offline.

The library under the CLI, for notebooks and scripts:

    from rmqctl import Store, load_config
    store = Store("/data/store", load_config("broker.conf"))
    for file, msg in store.scan().records():
        print(msg.topic, msg.queueOffset, msg.msg_id)

Operations (rmqctl.checks.*) return plain results; nothing here prints. The names below are loaded on first
use, so `import rmqctl.schema` (or any low layer) loads no operation and no compiled kernel.
"""

from __future__ import annotations

import importlib

_HOMES = {
    "BrokerConfig": "config",
    "load_config": "config",
    "LockHeldError": "errors",
    "RmqError": "errors",
    "StoreError": "errors",
    "UsageError": "errors",
    "Finding": "findings",
    "store_lock": "lock",
    "dump_checkpoint": "views.inspect",
    "dump_commitlog": "views.inspect",
    "dump_consumequeue": "views.inspect",
    "dump_index": "views.inspect",
    "info": "views.inspect",
    "locate": "views.inspect",
    "decode_ids": "views.msgid",
    "lookup": "views.msgid",
    "query_key": "views.query",
    "VerifyResult": "checks.verify",
    "verify": "checks.verify",
    "Blank": "record",
    "Message": "record",
    "RecordError": "record",
    "read_record": "record",
    "Store": "store",
}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # the next lookup does not come here
    return value


def __dir__():
    return sorted(set(globals()) | set(_HOMES))


__all__ = sorted(_HOMES)
