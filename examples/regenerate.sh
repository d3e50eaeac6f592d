#!/usr/bin/env bash
# Rebuilds the example store from examples/messages.jsonl with examples/broker.conf, byte for byte as
# checked in: `rmqctl append --keep-timestamps` keeps each message's store time and names index files by
# it (in UTC). Usage: examples/regenerate.sh [OUT_DIR]   (default: examples/store, replaced)
# Python: $PYTHON if set, else the active venv's ($VIRTUAL_ENV), else python3 on PATH.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/store}"
python="${PYTHON:-${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}}"
rm -rf "$out"
TZ=UTC PYTHONPATH="$here/..${PYTHONPATH:+:$PYTHONPATH}" "${python:-python3}" -m rmqctl append --create --store "$out" \
    --broker-config "$here/broker.conf" --jsonl "$here/messages.jsonl" --keep-timestamps > /dev/null
echo "rebuilt $out from $(wc -l < "$here/messages.jsonl") messages" >&2
