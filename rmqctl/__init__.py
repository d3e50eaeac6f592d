"""rmqctl: inspect, verify and repair Apache RocketMQ broker stores offline.

The library under the CLI, for notebooks and scripts:

    from rmqctl import Store, load_config
    store = Store("/data/store", load_config("broker.conf"))
    for file, msg in store.scan().records():
        print(msg.topic, msg.queueOffset, msg.msg_id)

Operations (rmqctl.ops.*) return plain results; nothing here prints.
"""
from .config import BrokerConfig, load_config
from .errors import LockHeldError, RmqError, StoreError, UsageError
from .lock import store_lock
from .ops.inspect import dump_checkpoint, dump_commitlog, dump_consumequeue, dump_index, info, locate
from .ops.msgid import decode_ids, lookup
from .ops.query import query_key
from .record import Blank, Message, RecordError, read_record
from .store import Store



def __getattr__(name: str):
    # verify loads the compiled kernels (numba); commands and notebooks that never verify do not pay for them
    if name in ("Finding", "VerifyResult", "verify"):
        from .ops import verify

        return getattr(verify, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Blank", "BrokerConfig", "Finding", "VerifyResult", "verify", "LockHeldError", "Message", "RecordError", "RmqError", "Store", "StoreError",
    "UsageError", "decode_ids", "dump_checkpoint", "dump_commitlog", "dump_consumequeue", "dump_index", "info",
    "load_config", "locate", "lookup", "query_key", "read_record", "store_lock",
]
