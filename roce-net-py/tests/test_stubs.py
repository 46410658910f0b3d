"""The hand-written stubs match the built module (names and signatures).

Signatures (parameter names, positional / keyword-only, defaults) of every
function and method, ``Host(...)`` included, are stubtest's job
(``test_stubtest_passes``, and scripts/test-python.sh); a hand-written copy of one
of them here would only repeat it.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import roce_net
from conftest import cannot_run

PYI = Path(roce_net.__file__).parent / "_roce_net.pyi"


def _stub_names() -> set:
    tree = ast.parse(PYI.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_stub_names_match_runtime():
    from roce_net import _roce_net

    runtime = {n for n in _roce_net.__all__}
    assert _stub_names() - {"_Path", "__all__"} == runtime


def test_stubtest_passes():
    if importlib.util.find_spec("mypy") is None:
        cannot_run("mypy is needed for stubtest (pip install mypy)")
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "roce_net"],
        capture_output=True,
        text=True,
        cwd="/",
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_package_is_typed():
    assert (Path(roce_net.__file__).parent / "py.typed").exists()
