"""The house rules of rmqctl's code, read from the source with ast: the import graph has no cycle and no arrow
from a lower layer to a higher one, an import inside a function says why, and classes and functions stay a
size a reader can hold (compiled kernels excepted: they are one loop the compiler needs whole).

Run as a script to print the layered import graph: `python tests/test_imports.py`.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rmqctl"

# Layers, lowest first: one per wing of the house (docs/architecture.md). A module may import from its own layer
# or a lower one, never a higher one.
LAYERS = [
    (
        "core",
        (
            "rmqctl.errors",
            "rmqctl.javacompat",
            "rmqctl.schema",
            "rmqctl.schema_metaq",
            "rmqctl.config",
            "rmqctl.configfiles",
            "rmqctl.budget",
            "rmqctl.findings",
        ),
    ),
    ("rules", ("rmqctl.rules", "rmqctl.dispatch", "rmqctl.record", "rmqctl.txn", "rmqctl.lock")),
    ("engine", ("rmqctl.engine", "rmqctl.engine.*")),
    (
        "store",
        (
            "rmqctl.parts",
            "rmqctl.rocksdb",
            "rmqctl.rocksdbcq",
            "rmqctl.rocksdbconfig",
            "rmqctl.rocksdbstore",
            "rmqctl.sstable",
            "rmqctl.store",
            "rmqctl.live",
            "rmqctl.brokerversion",
            "rmqctl.batchcq",
            "rmqctl.cqext",
            "rmqctl.compaction",
            "rmqctl.dledger",
            "rmqctl.timerstore",
            "rmqctl.recovery",
            "rmqctl.queueload",
        ),
    ),
    ("views", ("rmqctl.views", "rmqctl.views.*")),
    ("checks", ("rmqctl.checks", "rmqctl.checks.*")),
    ("maintenance", ("rmqctl.maintenance", "rmqctl.maintenance.*")),
    # MetaQ's store model sits with its operations: one package per store kind, above RocketMQ's it reuses
    ("metaq", ("rmqctl.metaq", "rmqctl.metaq.*")),
    ("spark", ("rmqctl.spark", "rmqctl.spark.*")),
    ("cli", ("rmqctl.cli", "rmqctl.cli.*", "rmqctl.__main__", "rmqctl")),
]
CLASS_LINES, FUNCTION_LINES = 200, 80
COMPILED = {"kernel"}  # decorators that compile a function (rmqctl.engine.kernels.kernel)
# in-function imports in files another issue is rewriting (engine, #10): record.py's optional codecs
IMPORTS_OWNED_ELSEWHERE = {"rmqctl/record.py"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(module: str) -> int:
    """The most specific pattern that matches decides (an exact name before a package's star)."""
    best = None
    for rank, (_, patterns) in enumerate(LAYERS):
        for pat in patterns:
            if pat == module or (pat.endswith(".*") and module.startswith(pat[:-1])):
                weight = len(pat) - (2 if pat.endswith(".*") else 0) + (0 if pat.endswith(".*") else 1000)
                if best is None or weight > best[0]:
                    best = (weight, rank)
    assert best is not None, f"{module}: no layer; give it one in tests/test_imports.py"
    return best[1]


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """Absolute rmqctl module names an ImportFrom brings in (a submodule when the name is one)."""
    if node.level:
        base = module.split(".")
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        out.append(sub if sub in MODULES else target)
    return out


def imports() -> list[tuple[str, str, int, bool]]:
    """(importer, imported, line, inside a function) for every import of an rmqctl module."""
    out = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        in_function = {
            id(n)
            for f in ast.walk(tree)
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            for n in ast.walk(f)
            if n is not f
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = _resolve(module, path.name == "__init__.py", node)
            else:
                continue
            for target in targets:
                while target and target not in MODULES:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    out.append((module, target, node.lineno, id(node) in in_function))
    return out


def cycles(edges) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for a, b, *_ in edges:
        graph.setdefault(a, set()).add(b)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_has_no_cycle():
    edges = imports()
    assert len(edges) > 100  # the graph was read
    assert cycles(edges) == []


# packages a base dependency brings in itself, imported by their own name
BROUGHT_IN = {"llvmlite": "numba"}


def test_every_package_a_command_imports_is_a_base_dependency():
    """A plain `pip install` (no extra) has every third-party package the commands import, at the top of a
    module or inside a function (a filtered dump's Arrow columns failed with ModuleNotFoundError once: pyarrow
    was only in the extras). Only the Spark front end may need its extra."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {dep.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip() for dep in project["dependencies"]}
    missing = set()
    for module, path in MODULES.items():
        if module.startswith("rmqctl.spark"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            for top in {n.split(".")[0] for n in names}:
                if top not in sys.stdlib_module_names and top != "rmqctl" and BROUGHT_IN.get(top, top) not in base:
                    missing.add((module, top))
    assert not missing, sorted(missing)


def test_no_import_points_up_a_layer():
    upward = [
        f"{a} ({LAYERS[layer(a)][0]}) line {line} imports {b} ({LAYERS[layer(b)][0]})"
        for a, b, line, _ in imports()
        if layer(b) > layer(a)
    ]
    assert upward == []


ENGINE = next(rank for rank, (name, _) in enumerate(LAYERS) if name == "engine")


def test_above_the_engine_only_its_face_is_imported():
    """store, views, checks, maintenance, metaq, spark and cli reach compiled code through rmqctl.engine
    alone: the modules inside engine/ can change without a layer above noticing."""
    inside = [
        f"{a} line {line} imports {b}"
        for a, b, line, _ in imports()
        if layer(a) > ENGINE and b.startswith("rmqctl.engine.")
    ]
    assert inside == []


def test_the_engine_face_offers_every_name_it_lists():
    """Each name resolves to its module's object; none is also a module of engine/ (a submodule, once
    imported, would shadow it on the package)."""
    import rmqctl.engine as engine  # the face, under test here

    submodules = {m.rpartition(".")[2] for m in MODULES if m.startswith("rmqctl.engine.")}
    assert set(engine.FACE) & submodules == set()
    for name, (module, own) in engine.FACE.items():
        assert f"rmqctl.engine.{module}" in MODULES, name
        assert getattr(engine, name) is getattr(sys.modules[f"rmqctl.engine.{module}"], own), name
    with pytest.raises(AttributeError):
        _ = engine.no_such_operation


def test_an_import_inside_a_function_says_why():
    """Only optional extras (pyspark) and start-up time justify one; a comment on its line, or heading its
    block of imports, says which."""
    silent = []
    for module, path in MODULES.items():
        rel = path.relative_to(ROOT).as_posix()
        if rel in IMPORTS_OWNED_ELSEWHERE:
            continue
        lines = path.read_text().split("\n")
        tree = ast.parse("\n".join(lines))
        for f in ast.walk(tree):
            if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(f):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    above = node.lineno - 2  # the comment may head a block of imports
                    while lines[above].strip().startswith(("from ", "import ")):
                        above -= 1
                    if "#" not in lines[node.lineno - 1] and not lines[above].strip().startswith("#"):
                        silent.append(f"{rel}:{node.lineno}")
    assert silent == [], "say why each of these imports is inside a function, or move it to the top"


def test_classes_and_functions_stay_small():
    """A class a reader can hold is about 200 lines, a function about 80; a compiled kernel is exempt: it is
    one loop the compiler needs whole."""
    big = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            size = getattr(node, "end_lineno", 0) - getattr(node, "lineno", 0) + 1
            if isinstance(node, ast.ClassDef) and size > CLASS_LINES:
                big.append(f"class {module}.{node.name}: {size} lines")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and size > FUNCTION_LINES:
                decorators = {ast.unparse(d).split("(")[0].rpartition(".")[2] for d in node.decorator_list}
                if not decorators & COMPILED:
                    big.append(f"def {module}.{node.name}: {size} lines")
    assert big == []


def test_every_command_module_is_registered():
    """cli/main.py names its command modules; one left out would silently lose its commands."""
    main = (PACKAGE / "cli" / "main.py").read_text()
    named = {
        alias.name
        for node in ast.walk(ast.parse(main))
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None
        for alias in node.names
    }
    present = {p.stem for p in (PACKAGE / "cli").glob("*.py")} - {
        "__init__",
        "app",
        "options",
        "render",
        "main",
        "launch",
    }
    assert named == present


def test_importing_the_schema_loads_no_operation():
    """The package facade is lazy: the lowest layer loads without operations, kernels or the CLI."""
    code = "import sys, rmqctl.schema; print(' '.join(m for m in sys.modules if m.startswith(('rmqctl', 'numba'))))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    assert "rmqctl.schema" in loaded
    assert not [
        m
        for m in loaded
        if m.startswith(
            (
                "rmqctl.views",
                "rmqctl.checks",
                "rmqctl.maintenance",
                "rmqctl.cli",
                "rmqctl.spark",
                "rmqctl.engine.kernels",
                "numba",
            )
        )
    ]


if __name__ == "__main__":
    for rank, (name, _) in enumerate(LAYERS):
        print(f"{name}:")
        for module in sorted(m for m in MODULES if layer(m) == rank):
            deps = sorted({b for a, b, *_ in imports() if a == module})
            print(f"  {module} -> {', '.join(deps) or '-'}")


def test_the_command_runs_with_the_collector_on_and_its_load_frozen():
    """cli/launch.py pauses the cyclic GC while the CLI loads, then freezes what loaded and turns it back on:
    the command itself runs with a working collector."""
    code = (
        "import atexit, gc, sys; sys.argv = ['rmqctl', '--version']; "
        "atexit.register(lambda: print(gc.isenabled(), gc.get_freeze_count() > 10000)); "
        "from rmqctl.cli.launch import main; main()"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout.split()
    assert out[-2:] == ["True", "True"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="Linux's /proc")
def test_the_command_starts_no_openblas_pool_unless_asked():
    """cli/launch.py keeps numpy's OpenBLAS from starting its pool of spinning threads (no command does linear
    algebra): the command runs with one thread; a user's OPENBLAS_NUM_THREADS is kept."""
    code = (
        "import atexit, os, sys; sys.argv = ['rmqctl', '--version']; "
        "atexit.register(lambda: print(len(os.listdir('/proc/self/task')), os.environ['OPENBLAS_NUM_THREADS'])); "
        "from rmqctl.cli.launch import main; main()"
    )

    def run(**env):
        environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"} | env
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=environ)
        return r.stdout.split()[-2:]

    assert run() == ["1", "1"]
    assert run(OPENBLAS_NUM_THREADS="2")[1] == "2"


def test_launch_names_the_modules_each_command_comes_from():
    """cli/launch.py loads only the modules of the command named (COMMAND_MODULES): it names, for every top-level
    command, each module its commands (and subcommands) come from, as main.py registers them."""
    import click

    from rmqctl.cli.main import cli

    # read in a process of its own: importing launch blocks SIGINT and sets OPENBLAS_NUM_THREADS, as the console
    # command needs, which would reach every later test of this process (and what they start)
    code = "import json; from rmqctl.cli.launch import COMMAND_MODULES; print(json.dumps(COMMAND_MODULES))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    COMMAND_MODULES = json.loads(out)

    def modules(command) -> set[str]:
        found = {command.callback.__module__} if command.callback else set()
        for sub in command.commands.values() if isinstance(command, click.Group) else ():
            found |= modules(sub)
        return found - {"rmqctl.cli.app"}

    registered = {name: sorted(m.rpartition(".")[2] for m in modules(c)) for name, c in cli.commands.items()}
    assert {name: sorted(m) for name, m in COMMAND_MODULES.items()} == registered


def test_a_command_loads_its_own_modules_only():
    """`rmqctl append` runs with append_cmds loaded and no other command module; --help loads them all."""
    code = (
        "import atexit, sys; sys.argv = ['rmqctl'] + sys.argv[1:]; "
        "atexit.register(lambda: print(sorted(m for m in sys.modules if m.endswith('_cmds')))); "
        "from rmqctl.cli.launch import main; main()"
    )

    def loaded(*args):
        r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT)
        return r.stdout.splitlines()[-1]

    assert loaded("append", "--help") == "['rmqctl.cli.append_cmds']"
    assert loaded("--help").count("_cmds") == len(list((PACKAGE / "cli").glob("*_cmds.py")))


HEAPS_OF_THREADS = """
import atexit, ctypes, sys, threading
def heaps():
    held = []
    def allocate():
        held.extend(bytearray(2000) for _ in range(1000))  # (past pymalloc's 512 bytes: from malloc)
    threads = [threading.Thread(target=allocate) for _ in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    libc = ctypes.CDLL(None)
    libc.open_memstream.restype = ctypes.c_void_p
    text, size = ctypes.c_char_p(), ctypes.c_size_t()
    stream = libc.open_memstream(ctypes.byref(text), ctypes.byref(size))
    libc.malloc_info(0, ctypes.c_void_p(stream))
    libc.fclose(ctypes.c_void_p(stream))
    print(text.value.decode().count("<heap nr="))
if sys.argv[1] == "command":
    atexit.register(heaps)
    sys.argv = ["rmqctl", "--version"]
    from rmqctl.cli.launch import main; main()
else:
    heaps()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas")
def test_the_command_makes_its_threads_share_one_heap():
    """cli/launch.py (budget.one_heap) keeps the threads' allocations in one glibc arena, which release_freed
    can hand back; in a process left alone each thread that allocates gets its own."""
    heaps = {
        mode: int(
            subprocess.run(
                [sys.executable, "-c", HEAPS_OF_THREADS, mode], capture_output=True, text=True, cwd=ROOT, check=True
            ).stdout.split()[-1]
        )
        for mode in ("command", "library")
    }
    assert heaps == {"command": 1, "library": heaps["library"]} and heaps["library"] > 1


def test_numba_loads_with_the_first_kernel_a_process_calls():
    """numba and its registries (~0.5 s) load with the first kernel call, not with the modules that declare
    kernels: a command that runs none (`dump checkpoint`; `info` and `consumers` run the broker's CRC-checking
    recovery walk) starts without it; the first call loads it and every loaded module then holds the compiled kernel in place of its
    declaration."""
    code = (
        "import atexit, sys; from rmqctl.engine import batch as B; "
        "atexit.register(lambda: print('numba' in sys.modules, type(B.decode).__name__)); "
        "sys.argv = ['rmqctl', 'dump', 'checkpoint', '--store', 'examples/store']; "
        "from rmqctl.cli.launch import main; main()"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.stdout.split()[-2:] == ["False", "Lazy"]
    code = (
        "import sys, zlib, numpy as np; from rmqctl.engine.kernels import crc32; from rmqctl.engine import batch as B, decode as D; "
        "print(crc32(np.frombuffer(b'abc', np.uint8), 0, 3) == zlib.crc32(b'abc'), 'numba' in sys.modules, "
        "type(B.decode).__name__, type(D.decode_record).__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.split() == ["True", "True", "CPUDispatcher", "CPUDispatcher"]
