#!/usr/bin/env python3
"""verify of a store whose topics use the 5.x store parts against the same store without them, in one run: the
bench store of bench_verify.py (3 topics x 4 queues), and a copy where one topic is a BatchCQ topic
(topics.json queue.type=BatchCQ, its queues rebuilt into batchconsumequeue/ by `rmqctl rebuild consumequeue`).
Target (issue 32): verify with the parts within 1.2x of verify without them; peak RSS printed beside.

    python benchmarks/bench_parts.py [--size-mib 256] [--dir /tmp/rmqctl-bench-parts] [--repeat 3]

Each figure is the best of --repeat runs, each verify in a fresh interpreter, the page cache warm for both.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from bench_verify import TOPICS, build_store, store_arguments

from rmqctl.cli.main import cli

VERIFY = (
    "import resource, time; from rmqctl.config import load_config; from rmqctl.store import Store; "
    "from rmqctl.checks.verify import verify; from rmqctl.engine import kernels; kernels.load_numba(); "
    "s = Store({store!r}, load_config({conf!r})); t = time.perf_counter(); r = verify(s, jobs=1); "
    "print(time.perf_counter() - t, r.exit_code, r.stats['records'], "
    "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
)


def with_batch_topic(plain: Path, conf: Path, dest: Path) -> Path:
    """A copy of the store where TOPICS[0] is a BatchCQ topic, its units written by rmqctl's rebuild."""
    from click.testing import CliRunner  # only for the one rebuild this bench runs in-process

    if not (dest / "batchconsumequeue").is_dir():
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(plain, dest)
        (dest / "config").mkdir(exist_ok=True)
        (dest / "config" / "topics.json").write_text(
            json.dumps(
                {"topicConfigTable": {TOPICS[0]: {"topicName": TOPICS[0], "attributes": {"queue.type": "BatchCQ"}}}}
            )
        )
        shutil.rmtree(dest / "consumequeue" / TOPICS[0])
        res = CliRunner().invoke(
            cli, ["rebuild", "consumequeue", "--store", str(dest), "--broker-config", str(conf), "--no-backup"]
        )
        assert res.exit_code == 0, res.output
    return dest


def best(store: Path, conf: Path, repeat: int) -> tuple[float, int, int]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", VERIFY.format(store=str(store), conf=str(conf))],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert out[1] == "0", f"verify found problems in {store} (exit {out[1]})"
        runs.append((float(out[0]), int(out[2]), int(out[3])))
    return min(runs)


def main():
    args = store_arguments(__doc__, "/tmp/rmqctl-bench-parts", size_mib=256)
    root = Path(args.dir)
    conf = build_store(root / "plain", args.size_mib << 20)
    parts = with_batch_topic(root / "plain" / "store", conf, root / "parts" / "store")
    without_s, records, without_kib = best(root / "plain" / "store", conf, args.repeat)
    with_s, _, with_kib = best(parts, conf, args.repeat)
    print(f"verify --jobs 1, {records} records ({args.size_mib} MiB commitlog), best of {args.repeat}:")
    print(
        f"  without the parts (3 topics in consumequeue/):       {without_s:.2f} s, peak RSS {without_kib // 1024} MiB"
    )
    print(f"  with {TOPICS[0]} a BatchCQ topic (batchconsumequeue/): {with_s:.2f} s, peak RSS {with_kib // 1024} MiB")
    print(f"  ratio {with_s / without_s:.2f}x (target <= 1.2x)")


if __name__ == "__main__":
    main()
