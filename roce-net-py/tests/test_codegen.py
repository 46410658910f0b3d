"""``roce_net/_types.py`` is generated (``scripts/gen_python_types.py``) from the
schema the binding exports and ``roce-net-py/codegen/_types.py.in``, and so is the
block of ``roce_net/__init__.py`` that imports the result classes and lists them
in ``__all__``: these tests fail when regenerating would change either committed
file, and show that the generator follows the schema (a field added in Rust
appears, a class for a struct that is gone is refused, a new struct is exported)
rather than copying the files it checks.
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
COMMITTED_INIT = ROOT / "roce-net-py" / "python" / "roce_net" / "__init__.py"


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


def test_regenerating_changes_nothing_in_init():
    """The block of the committed __init__.py between the markers is exactly what
    the generator writes (the imports of the result classes and their ``__all__``
    entries); the rest of the file is left as it is."""
    committed = COMMITTED_INIT.read_text()
    text = GEN.generate_init(schema())
    if text != committed:
        import difflib

        diff = "".join(difflib.unified_diff(
            committed.splitlines(keepends=True), text.splitlines(keepends=True),
            "committed __init__.py", "generated", n=1))
        pytest.fail(f"__init__.py's block is not what scripts/gen_python_types.py writes; rerun it:\n{diff[:4000]}")


def test_the_installed_types_are_the_committed_ones():
    """The wheel under test carries the committed files (a stale wheel would make
    the comparisons above meaningless)."""
    import roce_net
    from roce_net import _types

    assert Path(_types.__file__).read_text() == COMMITTED.read_text()
    assert Path(roce_net.__file__).read_text() == COMMITTED_INIT.read_text()


def _block(init: str) -> str:
    return init.split(GEN.INIT_BEGIN, 1)[1].split(GEN.INIT_END, 1)[0]


def test_the_init_block_follows_the_schema():
    """A struct the binding newly exports is imported and listed in ``__all__``
    under its Python name, one that is gone leaves both; the block names exactly
    the generated classes and ``*_FIELDS`` constants; nothing outside the block
    changes."""
    import roce_net

    s = schema()
    s["definitions"]["MtuProbe"] = {
        "description": "A probe of the path MTU.",
        "type": "object",
        "properties": {"mtu": {"type": "integer"}},
        "required": ["mtu"],
    }
    s["types"].append({"name": "MtuProbe", "shape": "class", "fields": ["mtu"]})
    s["types"] = [t for t in s["types"] if t["name"] != "LabNic"]
    committed = COMMITTED_INIT.read_text()
    text = GEN.generate_init(s, template=template_without("LabNic"))
    block = _block(text)
    assert "    MtuProbe,\n" in block and '    "MtuProbe",\n' in block
    assert "LabNic" not in block and "LabNic" in _block(committed)
    # The Python name of a renamed struct (Warning -> SnapshotWarning).
    assert '    "SnapshotWarning",\n' in block and '"Warning"' not in block
    before, after = committed.split(GEN.INIT_BEGIN)[0], committed.split(GEN.INIT_END)[1]
    assert text == before + GEN.INIT_BEGIN + block + GEN.INIT_END + after

    # As committed: the classes _types registers, and its constants, each once.
    from roce_net import _types

    listed = re.findall(r'^    "(\w+)",$', _block(committed), re.M)
    imported = re.findall(r"^    (\w+),$", _block(committed), re.M)
    assert listed == imported
    consts = [n for n in vars(_types) if n.endswith("_FIELDS") and not n.startswith("_")]
    assert consts == ["CHANGE_FIELDS"]
    assert sorted(listed) == sorted([c.__name__ for c in _types._ALL] + consts)
    # No name is listed twice (by hand above the block and by the generator in it).
    assert len(roce_net.__all__) == len(set(roce_net.__all__))


def test_the_init_block_needs_its_markers():
    init = COMMITTED_INIT.read_text()
    for broken in (init.replace(GEN.INIT_BEGIN, ""), init.replace(GEN.INIT_END, ""),
                   init + GEN.INIT_BEGIN + GEN.INIT_END):
        with pytest.raises(GEN.MarkerError, match="# BEGIN result types.*# END result types"):
            GEN.generate_init(schema(), broken)


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


def test_the_script_checks_and_rewrites_the_init_block(tmp_path, monkeypatch, capsys):
    """--check fails when a name is missing from __init__.py's block; without it
    the script puts the block back (here on copies of the two files)."""
    import json

    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema()))
    types_copy, init_copy = tmp_path / "_types.py", tmp_path / "__init__.py"
    types_copy.write_text(COMMITTED.read_text())
    committed = COMMITTED_INIT.read_text()
    init_copy.write_text(committed.replace('    "Qos",\n', "", 1))
    monkeypatch.setattr(GEN, "OUTPUT", types_copy)
    monkeypatch.setattr(GEN, "INIT", init_copy)
    assert GEN.main(["--check", "--schema", str(path)]) == 1
    out = capsys.readouterr()
    assert '+    "Qos",' in out.out
    assert f"{init_copy} is not what scripts/gen_python_types.py writes" in out.err
    assert GEN.main(["--schema", str(path)]) == 0
    assert init_copy.read_text() == committed
    assert types_copy.read_text() == COMMITTED.read_text()
    init_copy.write_text(committed.replace(GEN.INIT_END, ""))
    assert GEN.main(["--check", "--schema", str(path)]) == 2
    assert "# END result types" in capsys.readouterr().err
