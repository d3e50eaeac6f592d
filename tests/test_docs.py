"""The docs are kept true by tests, sqlite-utils style: every command has help text and a section in the guide
(a new command without docs fails), every command in the README runs on a copy of the example store and shows
the output it shows, every Python block of docs/python-api.md runs, the architecture page names the layers
tests/test_imports.py enforces, and every rmqctl path the docs name exists."""

from __future__ import annotations

import gzip
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from conftest import FIXTURES, run
from rmqctl.cli.main import cli
from test_imports import LAYERS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = {p.name: p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
SETUP_COMMANDS = 2  # the README's set-up commands install rmqctl: the only fenced commands not run here
# the README's commands go through this interpreter and this checkout, whatever `rmqctl` is on PATH
PRELUDE = 'set -o pipefail\nrmqctl() { "$RMQCTL_PYTHON" -m rmqctl "$@"; }\n'


def all_commands(group: click.Group = cli, prefix: tuple = ()):
    for name, cmd in sorted(group.commands.items()):
        path = prefix + (name,)
        if isinstance(cmd, click.Group):
            yield from all_commands(cmd, path)
        else:
            yield path, cmd


COMMANDS = list(all_commands())


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_command_has_help(path, cmd):
    assert cmd.help and len(cmd.help.strip()) > 20, f"rmqctl {' '.join(path)} has no help text"
    res = run(*path, "--help")
    assert res.exit_code == 0 and "Usage:" in res.stdout
    for param in cmd.params:
        if isinstance(param, click.Option) and not param.hidden and param.name not in ("help",):
            assert param.help, f"rmqctl {' '.join(path)} {param.opts[0]} has no help"


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_command_is_documented_in_the_guide(path):
    """The guide has every command, and spark.md every spark command."""
    page = "spark.md" if path[0] == "spark" else "guide.md"
    assert f"rmqctl {' '.join(path)}" in DOCS[page], f"docs/{page} does not document `rmqctl {' '.join(path)}`"


def test_contract_options_on_every_command():
    """--store, --broker-config and --format are accepted after every command's name (cli-contract)."""
    for path, cmd in COMMANDS:
        if path[0] == "spark":
            continue  # spark commands take several --store; checked in test_spark
        names = {o for p in cmd.params for o in getattr(p, "opts", [])}
        assert {"--store", "--broker-config", "--format"} <= names, " ".join(path)


def fenced(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block."""
    return re.findall(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M)


def shell_lines(body: str) -> list[str]:
    """The commands of a block: continuation lines joined, blank lines dropped."""
    return [line for line in body.replace("\\\n", " ").splitlines() if line.strip()]


def console_steps(body: str) -> list[tuple[str, list[str]]]:
    """(command, the output lines shown after it) of a console block."""
    steps = []
    for line in body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def shown(expected: list[str], actual: list[str]) -> bool:
    """The output shown is the output, line for line; a `...` line stands for one or more lines."""
    pattern = "\n".join(".+?" if line == "..." else re.escape(line) for line in expected)
    return re.fullmatch(pattern, "\n".join(actual), re.S) is not None


def run_shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "RMQCTL_PYTHON": sys.executable,
        "TZ": "UTC",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    env.pop("ROCKETMQ_STORE", None)
    return subprocess.run(
        ["bash", "-c", PRELUDE + command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def expected_exit(command: str) -> int:
    """0, or what a trailing `# exit N` comment says."""
    m = re.search(r"#\s*exit (\d+)\s*$", command)
    return int(m.group(1)) if m else 0


def test_readme_blocks_are_the_setup_commands_and_examples():
    """Two plain blocks, the set-up commands (the second is what .ci/run runs); every other block is run below."""
    blocks = fenced(README)
    setup = [body.strip() for lang, body in blocks if lang == ""]
    assert len(setup) == SETUP_COMMANDS and all(cmd.startswith("python3 -m pip install") for cmd in setup), setup
    assert setup[1] in (ROOT / ".ci" / "run").read_text().splitlines()
    assert {lang for lang, _ in blocks} == {"", "sh", "console"}
    assert len(README.splitlines()) <= 200


def test_every_readme_command_runs_on_a_copy_of_the_example_store(tmp_path):
    """Each command of the README in order, in a directory holding a copy of examples/: its exit code (0, or
    its `# exit N`), no traceback, and for a console block the output shown."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    ran = 0
    for lang, body in fenced(README):
        steps = (
            console_steps(body) if lang == "console" else [(c, None) for c in shell_lines(body)] if lang == "sh" else []
        )
        for command, output in steps:
            res = run_shell(command, tmp_path)
            assert res.returncode == expected_exit(command), f"{command}\n{res.stderr}"
            assert "Traceback" not in res.stderr, f"{command}\n{res.stderr}"
            if output is not None:
                actual = [line.rstrip() for line in res.stdout.rstrip("\n").splitlines()]
                assert shown(output, actual), f"{command}\nshows:\n" + "\n".join(output) + "\nprints:\n" + res.stdout
            ran += 1
    assert ran >= 10


def test_python_api_examples_run_on_a_copy_of_the_example_store(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    blocks = [body for lang, body in fenced(DOCS["python-api.md"]) if lang == "python"]
    assert len(blocks) >= 3
    for block in blocks:
        res = subprocess.run(
            [sys.executable, "-c", block],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))},
        )
        assert res.returncode == 0, f"{block}\n{res.stderr}"


def test_architecture_names_the_layers_the_import_test_enforces():
    line = next(line for line in DOCS["architecture.md"].splitlines() if line.startswith("Layers: "))
    assert line == "Layers: " + " < ".join(name for name, _ in LAYERS)
    rows = [line.split("|")[1].strip() for line in DOCS["architecture.md"].splitlines() if line.startswith("| ")]
    assert [name for name, _ in LAYERS] == [row for row in rows if row in {name for name, _ in LAYERS}]


@pytest.mark.parametrize("page", ["README.md", *[f"docs/{name}" for name in DOCS], "CHANGELOG.md"])
def test_every_path_the_docs_name_exists(page):
    """Paths in backquotes: `rmqctl/x.py`, and a module named within its wing on architecture.md's table."""
    text = (ROOT / page).read_text()
    named = set(re.findall(r"`((?:rmqctl|tests|benchmarks|examples|formats)/[\w./-]*\w)`", text))
    named |= {
        f"rmqctl/{m}" for m in re.findall(r"`((?:engine|views|checks|maintenance|metaq|spark|cli)/\w+\.py)`", text)
    }
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"{page} names paths that do not exist: {missing}"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", ["README.md", *[f"docs/{name}" for name in DOCS], "CHANGELOG.md"])
def test_every_link_between_the_docs_leads_somewhere(page):
    """A relative link names a file that exists and, with #anchor, a heading of that file."""
    source = ROOT / page
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", source.read_text()):
        if re.match(r"\w+://", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (source.parent / path).resolve() if path else source
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.is_file():
            headings = re.findall(r"^#+ (.*)$", linked.read_text(), re.M)
            if anchor not in {slug(h) for h in headings}:
                broken.append(target)
    assert not broken, f"{page} links to what is not there: {broken}"


# -- every --help example runs ------------------------------------------------------------------------------------

# what an example's placeholder paths stand for in the test's directory: the example store, or the fixture that
# holds what the command reads (a batch queue, the 5.x timer store, a MetaQ data path)
STAND_INS = {
    ("dump", "batchconsumequeue"): "j-batchcq",
    ("dump", "timerlog"): "f-timer5",
    ("dump", "timerwheel"): "f-timer5",
}
# examples whose subject no store here holds, with the one-line refusal that says so (exit 2)
REFUSED = {
    "rmqctl config restore consumerOffset.json": "no such config file",  # the example store keeps no config backups
    "rmqctl convert consumequeue --to file": "nothing to convert to file",  # its queues are files already
    "rmqctl dump compaction": "no such compaction queue",  # no fixture holds a compaction log
    "rmqctl dump rocksdbstore": "no RocksDB message store",  # nor a 5.4 RocksDB message store
    "rmqctl restore .rmqctl-backup-": "not a backup directory of this store",  # names a backup a run made
}

# examples that print nothing here: the backups they list (the example store has none)
SILENT = {"rmqctl config restore --store /data/store", "rmqctl restore --store /data/store"}


def help_examples() -> list[tuple[tuple, str]]:
    """(command path, example) for every `rmqctl ...` line of a command's help (its unwrapped example block)."""
    return [
        (path, line.strip())
        for path, cmd in COMMANDS
        for line in cmd.help.splitlines()
        if line.startswith(("    rmqctl ", "rmqctl "))
    ]


def stand_in(path: tuple, example: str, here: Path) -> str:
    """The example with its placeholder paths made real under `here`."""
    return real_paths(example, here, STAND_INS.get(path))


def real_paths(example: str, here: Path, fixture: str | None) -> str:
    """A documented command with its placeholder paths made real under `here`: the example store, or a copy of
    `fixture` for the store and broker.conf."""
    store, conf = (
        (f"{fixture}/store", f"{fixture}/broker.conf") if fixture else ("examples/store", "examples/broker.conf")
    )
    if fixture and not (here / fixture).exists():
        shutil.copytree(FIXTURES / fixture, here / fixture)
        packed = here / fixture / "store" / "timerwheel.gz"
        if packed.exists():  # the fixture keeps its timer wheel gzipped, as a broker never would
            with gzip.open(packed) as src, open(packed.with_suffix(""), "wb") as dst:
                shutil.copyfileobj(src, dst)
            packed.unlink()
    for placeholder, real in (
        ("/etc/rocketmq/broker.conf", conf),
        ("/etc/rmqctl/", ""),
        ("/var/log/", ""),
        ("/data/store-copy", "store-copy/store"),
        ("/data/store", store),
        ("/data/meta", "meta/store"),
        ("/data/copy", "meta-copy"),
        ("/data/master/store", "master/store"),
        ("/data/slave/store", "slave/store"),
        ("/data/a/store", "examples/store"),
        ("/data/b/store", "slave/store"),
        ("/data/export", "export"),
        ("/data/day", "day"),
        ("server.ini", "meta/server.ini"),
        (" a.conf", f" {conf}"),
        (" b.conf", f" {conf}"),
        ("--store old ", f"--store {store} "),
        ("--store new ", "--store new/store "),
        (" broker.conf", f" {conf}"),
        (" messages.jsonl", " examples/messages.jsonl"),
    ):
        example = example.replace(placeholder, real)
    return example


def run_example(example: str) -> tuple[int, str, str]:
    """One example in-process (the CLI runner): `A | B` feeds A's output to B (rmqctl in-process, else the real
    program, `less` read as the terminal), `A || echo ...` takes A's exit 0 or 1 as the example's success."""
    first, _, rest = example.partition(" | ")
    first, _, fallback = first.partition(" || ")
    res = run(*shlex.split(first)[1:])
    code, out, err = res.exit_code, res.stdout, res.stderr
    if fallback:
        assert code in (0, 1) and fallback == 'echo "exit $?"', f"{example}: exit {code}\n{err}"
        out, code = out + (f"exit {code}\n" if code else ""), 0
    if rest and code == 0:
        if rest.startswith("rmqctl "):
            res = run(*shlex.split(rest)[1:], input=out)
            code, out, err = res.exit_code, res.stdout, err + res.stderr
        elif rest != "less":
            piped = subprocess.run(shlex.split(rest), input=out, capture_output=True, text=True, timeout=600)
            code, out, err = piped.returncode, piped.stdout, err + piped.stderr
    return code, out, err


def example_workspace(here: Path, monkeypatch):
    """`here` as the documented commands' working directory: copies of examples/, of the example store as diff's
    two stores, and of the MetaQ fixture."""
    shutil.copytree(ROOT / "examples", here / "examples")
    for other in ("master", "slave"):  # diff's two stores: the same copy as the example store before any example
        shutil.copytree(ROOT / "examples" / "store", here / other / "store")
    shutil.copytree(FIXTURES / "g-metaq", here / "meta")
    for p in here.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    monkeypatch.chdir(here)
    monkeypatch.setenv("TZ", "UTC")


def test_every_help_example_runs_on_a_copy_of_the_example_store(tmp_path, monkeypatch, spark):
    """Each `rmqctl ...` line of every command's --help, in order, in a directory holding copies of examples/ (more
    copies as diff's stores and spark's second) and of the fixtures the timer, batch-queue and MetaQ examples
    read: exit 0 with output on stdout or stderr (none with --quiet or SILENT), or the anticipated one-line refusal where no store here holds
    the example's subject (REFUSED); never a traceback."""
    example_workspace(tmp_path, monkeypatch)
    examples = help_examples()
    assert len({path for path, _ in examples}) == len(COMMANDS) and len(examples) > 60
    for path, example in examples:
        code, out, err = run_example(stand_in(path, example, tmp_path))
        assert "Traceback" not in err, f"{example}\n{err}"
        refusal = next((needle for start, needle in REFUSED.items() if example.startswith(start)), None)
        if refusal:
            assert code == 2 and refusal in err and len(err.strip().splitlines()) == 1, f"{example}: exit {code}\n{err}"
        else:
            silent = "--quiet" in example or example in SILENT
            assert code == 0 and (out.strip() or err.strip() or silent), f"{example}: exit {code}\n{err}"


# a crontab line: five schedule fields and the user, then the command
CRON = re.compile(r"^(?:\S+\s+){5}root\s+(rmqctl .*)$")
# shell that the in-process runner does not speak: these lines run in bash, as written
SHELL_ONLY = re.compile(r";|\|\||&&|\s\d?>(?=[/&])")  # a redirection to a file, not jq's `>`
# the store a guide command reads, where its comment names a kind the example store is not
GUIDE_STAND_INS = {"enableDLegerCommitLog=true": "e-dledger", "storeType=defaultRocksDB": "i-rocksdb-cq"}
# the store whose output the guide's console blocks show
CONSOLE_STORE = "a-basic"


def documented_commands(text: str) -> list[tuple[str, list[str] | None]]:
    """(command, the output shown after it or None) for every rmqctl command of a page's shell and console blocks,
    crontab lines included (their command)."""
    steps = []
    for lang, body in fenced(text):
        if lang not in ("", "sh", "console"):
            continue
        if body.startswith("$ "):
            steps += console_steps(body)
            continue
        for line in shell_lines(body):
            cron = CRON.match(line)
            if cron or line.startswith("rmqctl "):
                steps.append((cron.group(1) if cron else line, None))
    return steps


@pytest.mark.parametrize("page", ["guide.md", "spark.md"])
def test_every_command_of_the_docs_runs_on_a_copy_of_the_example_store(page, tmp_path, monkeypatch, spark):
    """Each rmqctl command of the page's fenced blocks, in order, with its placeholder paths on copies of the
    example store (or of the fixture its comment names): in process where it is a plain command or pipe, in bash
    where it uses more shell (crontab lines), its own rmqctl part then in process too; exit 0, or 1 for a check that
    reports (verify, clean --check), or the anticipated refusal (REFUSED); never a traceback; a console block's
    command in bash on the store whose output it shows, printing that output."""
    example_workspace(tmp_path, monkeypatch)
    shutil.copytree(ROOT / "examples" / "store", tmp_path / "store-copy" / "store")
    steps = documented_commands(DOCS[page])
    assert len(steps) >= (20 if page == "guide.md" else 4)
    for command, output in steps:
        fixture = next((f for hint, f in GUIDE_STAND_INS.items() if hint in command), None)
        real = real_paths(re.sub(r"\s+#\s.*$", "", command), tmp_path, fixture)
        if output is not None:  # as the reader's terminal shows it: the table, the format a terminal gets
            real = real_paths(command, tmp_path, CONSOLE_STORE) + " --format table"
            res = run_shell(real, tmp_path)
            assert res.returncode == 0 and "Traceback" not in res.stderr, f"{command}\n{res.stderr}"
            actual = [line.rstrip() for line in res.stdout.rstrip("\n").splitlines()]
            want = [real_paths(line, tmp_path, CONSOLE_STORE) for line in "\n".join(output).rstrip().splitlines()]
            assert shown(want, actual), f"{command}\nshows:\n" + "\n".join(want) + "\nprints:\n" + res.stdout
            continue
        if SHELL_ONLY.search(real):
            res = run_shell(real, tmp_path)
            assert "Traceback" not in res.stderr, f"{command}\n{res.stderr}"
            real = SHELL_ONLY.split(real)[0]
        code, out, err = run_example(real)
        assert "Traceback" not in err, f"{command}\n{err}"
        refusal = next((needle for start, needle in REFUSED.items() if command.startswith(start)), None)
        if refusal:
            assert code == 2 and refusal in err and len(err.strip().splitlines()) == 1, f"{command}: exit {code}\n{err}"
        else:
            checks = ("rmqctl verify ", "rmqctl clean --check")
            assert code == 0 or (code == 1 and command.startswith(checks)), f"{command}: exit {code}\n{err}"
