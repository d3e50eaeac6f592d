"""Entry point: import every command module of this package (each registers itself on the groups in
`base`), then run the root group."""
from __future__ import annotations

import importlib
import pkgutil

from . import __path__ as _pkg_path
from .base import cli


def _load_commands():
    for info in pkgutil.iter_modules(_pkg_path):
        if info.name not in ("base", "main"):
            importlib.import_module(f"{__package__}.{info.name}")


_load_commands()


def main():
    cli(prog_name="rmqctl")
