"""Every finding kind rmqctl's source names is registered once in rmqctl/findings.py, and every registered
kind is named somewhere: read from the source with ast, so a new check cannot invent a kind on the side."""

from __future__ import annotations

import ast
from pathlib import Path

from rmqctl import rules
from rmqctl.findings import KINDS, RECORD_ERROR_KINDS

PACKAGE = Path(__file__).resolve().parents[1] / "rmqctl"
SEVERITIES = {"error", "warning", "info"}


def _strings(node) -> list[str]:
    """The string constants an expression can evaluate to (through `a if c else b`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    return []


def named_kinds() -> dict[str, set[str]]:
    """kind -> files naming it: the kind argument of report()/add() with a group, calls and tuples
    (kind, severity, ...), and constants assigned to a variable called `kind`."""
    out: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            found = []
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("report", "add")
                and len(node.args) >= 3
                and _strings(node.args[2])
                and set(_strings(node.args[2])) <= SEVERITIES
            ):
                found = _strings(node.args[1])
            # Finding("kind", "error", ...) and its kin
            elif (
                isinstance(node, ast.Call)
                and len(node.args) >= 2
                and _strings(node.args[1])
                and set(_strings(node.args[1])) <= SEVERITIES
            ):
                found = [s for s in _strings(node.args[0]) if s not in SEVERITIES]
            elif (
                isinstance(node, ast.Tuple)
                and len(node.elts) >= 2
                and _strings(node.elts[1])
                and set(_strings(node.elts[1])) <= SEVERITIES
            ):
                found = [s for s in _strings(node.elts[0]) if s not in SEVERITIES]
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == "kind":
                        found += _strings(node.value)
                    elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        found += [
                            s
                            for t, v in zip(target.elts, node.value.elts)
                            if isinstance(t, ast.Name) and t.id == "kind"
                            for s in _strings(v)
                        ]
            for kind in found:
                out.setdefault(kind, set()).add(rel)
    return out


def test_every_kind_named_in_the_source_is_registered():
    named = named_kinds()
    assert len(named) > 30  # the scan itself works
    unknown = {k: sorted(v) for k, v in named.items() if k not in KINDS}
    assert not unknown, f"register these finding kinds in rmqctl/findings.py: {unknown}"


def test_every_registered_kind_is_named_somewhere():
    """No dead entry: each kind is a string somewhere in the package (some are built by other records, such
    as MetaQ's segment oddities and record checks)."""
    strings = {
        node.value
        for path in PACKAGE.rglob("*.py")
        if path.name != "findings.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    mapped = set(RECORD_ERROR_KINDS.values())
    assert not [k for k in KINDS if k not in strings and k not in mapped]


def test_read_records_refusals_map_to_registered_kinds():
    """read_record refuses with the acceptance rule's verdicts (rules.VERDICT_KINDS, all but a record and a
    BLANK): each maps to a finding kind verify registers, and none is left unmapped."""
    builds = [
        ast.unparse(node.args[0])
        for node in ast.walk(ast.parse((PACKAGE / "record.py").read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "RecordError"
    ]
    assert builds == ["rules.VERDICT_KINDS[verdict]"]
    refusals = {kind for verdict, kind in enumerate(rules.VERDICT_KINDS) if verdict not in (rules.RECORD, rules.BLANK)}
    assert refusals == set(RECORD_ERROR_KINDS)
    assert set(RECORD_ERROR_KINDS.values()) <= set(KINDS)
