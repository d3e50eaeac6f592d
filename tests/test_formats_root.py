"""formats/store-root.md and formats/staging.md against what they describe: every entry of the fixture store
roots and every config file rmqctl knows is in the store-root table; every name rmqctl's transactions leave in a
store, and every key of the intent file txn.py writes, is in the staging page."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ALL_FIXTURES, FIXTURES
from rmqctl.configfiles import JSON_CONFIG_FILES
from rmqctl import txn

FORMATS = Path(__file__).resolve().parents[1] / "formats"


def table_after(page: str, marker: str) -> list[str]:
    """The first cells of the table following `<!-- marker -->`."""
    lines = (FORMATS / page).read_text().splitlines()
    at = lines.index(f"<!-- {marker} -->")
    rows = []
    for line in lines[at + 3 :]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1].strip())
    return rows


def test_store_root_page_names_every_root_entry_and_config_file():
    cells = " ".join(table_after("store-root.md", "root-files"))
    named = set(re.findall(r"`([^`]+)`", cells))
    for fixture in ALL_FIXTURES:
        for entry in (FIXTURES / fixture / "store").iterdir():
            if entry.name in ("commitlog", "consumequeue", "index", "config"):
                continue  # pages of their own, and config/ by its files below
            assert entry.name in named or any(n.startswith(entry.name + "/") for n in named), (
                f"{fixture}: {entry.name} is not in store-root.md"
            )
    for name in JSON_CONFIG_FILES:
        assert f"config/{name}" in named or name in named, f"config/{name} is not in store-root.md"
    assert "config/*.json.bak" in named


def test_staging_page_names_every_file_and_intent_key():
    names = " ".join(table_after("staging.md", "staging-names"))
    for prefix in txn.STAGING_PREFIXES:
        assert f"`{prefix}XXXX/`" in names
    assert f"`{txn.INTENT_NAME}`" in names and f"`{txn.INTENT_TMP}`" in names
    assert f"`{txn.BACKUP_PREFIX}<time>/`" in names
    # the keys of the intent dict literal that Transaction.commit writes
    tree = ast.parse(Path(txn.__file__).read_text())
    intent = next(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(getattr(t, "id", None) == "intent" for t in node.targets)
        and isinstance(node.value, ast.Dict)
    )
    written = [k.value for k in intent.keys]
    documented = [
        re.sub(r"`(\w+)`", r"\1", c) for c in table_after("staging.md", "intent-keys") if not c.startswith("`op:")
    ]
    assert documented == written
