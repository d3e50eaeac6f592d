"""RocketMQ's own record checker as a second yardstick: java-oracle's bench.sh times RocketMQ 4.9.7's
CommitLog.checkMessageAndReturnSize(checkCRC=true, readBody=true), one JVM thread, over the same commitlog
files, in the same run as rmqctl's figures. Runs only when $RMQ_JAVA_ORACLE names a restored oracle
(../shared/java-oracle/restore DIR). MB = 10^6 bytes of whole commitlog files, as bench.sh counts them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

WARM_UP_SECS = 2.0


def rocketmq_check(commitlog_dir: Path, file_size: int, messages: int) -> dict | None:
    """bench.sh's JSON line (msgsPerS, checkMessageMBs, wholeFileCrcMBs, messages, ...), or None (said why)
    without an oracle. RocketMQ must count the same `messages` as rmqctl."""
    home = os.environ.get("RMQ_JAVA_ORACLE")
    if not home:
        print("RMQ_JAVA_ORACLE is not set: no ratio to RocketMQ's checkMessageAndReturnSize")
        return None
    res = subprocess.run(
        [str(Path(home) / "bench.sh"), str(commitlog_dir), str(file_size), str(WARM_UP_SECS)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        raise SystemExit(f"bench.sh failed (exit {res.returncode}): {res.stderr[-1000:]}")
    java = json.loads(res.stdout.strip().splitlines()[-1])
    if java["messages"] != messages:
        raise SystemExit(f"RocketMQ's checker passed {java['messages']} messages, rmqctl counts {messages}")
    return java


def describe(java: dict | None) -> str:
    """RocketMQ's figures, one line."""
    if java is None:
        return ""
    return (
        f"RocketMQ {java['rocketmqVersion']} checkMessageAndReturnSize (Java {java['java']}, 1 thread): "
        f"{java['checkMessageMBs']:.0f} MB/s, {java['msgsPerS'] / 1e6:.2f} M msgs/s over {java['messages']} messages; "
        f"java.util.zip.CRC32 whole files {java['wholeFileCrcMBs']:.0f} MB/s"
    )


def ratio(java: dict | None, mb_per_s: float, msgs_per_s: float) -> str:
    """rmqctl's figure over RocketMQ's checker, msgs/s and MB/s ('' without an oracle)."""
    if java is None:
        return ""
    return f" {msgs_per_s / java['msgsPerS']:5.2f}x / {mb_per_s / java['checkMessageMBs']:5.2f}x RocketMQ (msgs/MB)"
