"""``roce_net/_types.py`` is generated (``scripts/gen_python_types.py``) from the
schema the binding exports and ``roce-net-py/codegen/_types.py.in``: these tests
fail when regenerating would change the committed file, and show that the
generator follows the schema (a field added in Rust appears, a class for a
struct that is gone is refused) rather than copying the file it checks.
"""

from __future__ import annotations

import copy
import re
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict

import pytest

from roce_net import _roce_net

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gen_python_types.py"
COMMITTED = ROOT / "roce-net-py" / "python" / "roce_net" / "_types.py"


def _generator() -> ModuleType:
    if not SCRIPT.exists():
        pytest.fail(f"{SCRIPT} not found: run the tests from the repository")
    spec = importlib.util.spec_from_file_location("gen_python_types", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_python_types", mod)
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()


def template_without(cls: str) -> str:
    """The template with the hand-written part of one class taken out."""
    text = GEN.TEMPLATE.read_text()
    out = re.sub(rf'\nclass {cls}:\n(    .*\n|\n(?=    ))*', "\n", text, count=1)
    assert f"class {cls}:" not in out
    return out


def schema() -> Dict[str, Any]:
    s: Dict[str, Any] = _roce_net._schema()
    return copy.deepcopy(s)


def test_regenerating_changes_nothing():
    """The committed _types.py is exactly what the generator writes for the schema
    of the installed (just built) module: run scripts/gen_python_types.py after
    changing a Rust type or roce-net-py/codegen/_types.py.in."""
    text = GEN.generate(schema())
    committed = COMMITTED.read_text()
    if text != committed:
        import difflib

        diff = "".join(difflib.unified_diff(
            committed.splitlines(keepends=True), text.splitlines(keepends=True),
            "committed _types.py", "generated", n=1))
        pytest.fail(f"_types.py is not what scripts/gen_python_types.py writes; rerun it:\n{diff[:4000]}")


def test_the_installed_types_are_the_committed_ones():
    """The wheel under test carries the committed file (a stale wheel would make
    the comparison above meaningless)."""
    from roce_net import _types

    assert Path(_types.__file__).read_text() == COMMITTED.read_text()


def test_a_field_added_in_rust_appears_in_the_class():
    s = schema()
    link = s["definitions"]["LinkStats"]
    link["properties"]["rx_crc_errors"] = {"type": "integer", "format": "uint64",
                                           "description": "CRC errors."}
    link["required"].append("rx_crc_errors")
    next(t for t in s["types"] if t["name"] == "LinkStats")["fields"].append("rx_crc_errors")
    text = GEN.generate(s)
    assert "    #: CRC errors.\n    rx_crc_errors: int\n" in text
    assert text != COMMITTED.read_text()


def test_an_omittable_field_gets_a_default_and_is_omitted_from_json():
    s = schema()
    d = s["definitions"]["Latency"]
    d["properties"]["jitter_us"] = {"type": ["number", "null"]}
    next(t for t in s["types"] if t["name"] == "Latency")["fields"].append("jitter_us")
    text = GEN.generate(s)
    assert '_OMIT_EMPTY: ClassVar[FrozenSet[str]] = frozenset({"jitter_us"})' in text
    assert "    jitter_us: Optional[float] = None\n" in text


def test_a_template_class_for_a_struct_rust_no_longer_exports_is_refused():
    s = schema()
    s["types"] = [t for t in s["types"] if t["name"] != "Summary"]
    with pytest.raises(GEN.SchemaError, match=r"\['Summary'\].*exported_types!"):
        GEN.generate(s)


def test_a_nested_struct_that_is_not_exported_is_refused():
    """A struct reachable from an exported one gets a class or the generator stops
    (it would otherwise reach Python as a dict)."""
    s = schema()
    s["types"] = [t for t in s["types"] if t["name"] != "LinkStats"]
    with pytest.raises(GEN.SchemaError, match="the struct LinkStats is not in exported_types!"):
        GEN.generate(s, template_without("LinkStats"))


def test_a_struct_without_a_template_class_gets_its_rust_name_and_doc():
    """Its docstring is the Rust doc comment, Markdown code spans as reST literals."""
    text = GEN.generate(schema(), template_without("Qos"))
    doc = text.split("class Qos(_Record):\n", 1)[1].split('"""', 2)[1]
    assert schema()["definitions"]["Qos"]["description"].startswith("The QoS a NIC reports through DCB (`DCB_CMD_IEEE_GET`).")
    assert doc.startswith("The QoS a NIC reports through DCB (``DCB_CMD_IEEE_GET``).\n\n    ``dcb_available == false``")


def test_the_script_checks_and_fails_on_drift(tmp_path, capsys):
    import json

    s = schema()
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(s))
    assert GEN.main(["--check", "--schema", str(path)]) == 0
    s["definitions"]["NoRdma"]["properties"]["hint"] = {"type": "string"}
    s["definitions"]["NoRdma"]["required"].append("hint")
    next(t for t in s["types"] if t["name"] == "NoRdma")["fields"].append("hint")
    path.write_text(json.dumps(s))
    assert GEN.main(["--check", "--schema", str(path)]) == 1
    out = capsys.readouterr()
    assert "+    hint: str" in out.out
    assert "is not what scripts/gen_python_types.py writes" in out.err
