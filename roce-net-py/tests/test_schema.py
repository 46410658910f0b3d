"""The Python mirror against what the Rust binding exports (``_roce_net._schema()``).

The binding lists every library type it returns (``exported_types!`` in
``roce-net-py/src/schema.rs``) and exports their JSON Schema (schemars, derived
from the same serde attributes that write the JSON), each struct's serde name
and field order, and the library's error kinds. These tests fail on any drift:
a struct renamed or added in Rust, a field added, removed, renamed, reordered,
made optional or omittable, or given another type, an error kind added or
renamed. ``_register`` already refuses to import a package whose class or
exception names are out of step (tested here too). ``_types.py`` is generated
from the same schema (``scripts/gen_python_types.py``, checked by
``test_codegen.py``); these checks read the classes back as Python sees them, so
they hold the generator to the schema too.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import keyword
import re
import typing
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

import roce_net
from roce_net import _roce_net, _types

SCHEMA: Dict[str, Any] = _roce_net._schema()
DEFS: Dict[str, Any] = SCHEMA["definitions"]
TYPES: Dict[str, Dict[str, Any]] = {t["name"]: t for t in SCHEMA["types"]}
CLASSES: Dict[str, type] = {c._RUST: c for c in _types._ALL}  # type: ignore[attr-defined]
STRUCTS = sorted(n for n, t in TYPES.items() if t["shape"] == "class" and t["fields"] is not None)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def _ref(schema: Dict[str, Any]) -> Optional[str]:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[1] if isinstance(ref, str) else None


def _is_string(schema: Any) -> bool:
    """A schema every value of which is a JSON string (enums of names, IpNet, ...)."""
    if not isinstance(schema, dict):
        return False
    name = _ref(schema)
    if name is not None:
        return _is_string(DEFS[name])
    alts = schema.get("oneOf") or schema.get("anyOf")
    if alts:
        return all(_is_string(a) for a in alts)
    return schema.get("type") == "string"


def _ref_type(name: str) -> Any:
    if name in CLASSES:
        return CLASSES[name]
    d = DEFS[name]
    if "properties" in d:
        pytest.fail(f"the schema reaches the struct {name} but no class in _types.py has _RUST = {name!r}")
    if _is_string(d):
        return str
    return Any  # an enum with data (a dict, or a str for its unit variants)


def expected_type(schema: Any) -> Any:
    """The Python annotation a field of this JSON Schema must have."""
    if schema is True or schema == {}:
        return Any
    name = _ref(schema)
    if name is not None:
        return _ref_type(name)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            alts = [a for a in schema[key] if a != {"type": "null"}]
            t = expected_type(alts[0]) if len(alts) == 1 else (str if _is_string(schema) else Any)
            return Optional[t] if len(alts) < len(schema[key]) else t
    if "const" in schema and isinstance(schema["const"], str):
        return str
    ty = schema.get("type")
    nullable = isinstance(ty, list) and "null" in ty
    if isinstance(ty, list):
        rest = [t for t in ty if t != "null"]
        assert len(rest) == 1, schema
        ty = rest[0]
    t: Any
    if ty == "integer":
        t = int
    elif ty == "boolean":
        t = bool
    elif ty == "string":
        t = str
    elif ty == "number":
        t = float
    elif ty == "array":
        if "prefixItems" in schema:
            t = Tuple[tuple(expected_type(i) for i in schema["prefixItems"])]
        elif schema.get("minItems") is not None and schema.get("minItems") == schema.get("maxItems"):
            t = Tuple[(expected_type(schema["items"]),) * schema["minItems"]]
        else:
            t = Tuple[expected_type(schema["items"]), ...]
    elif ty == "object":
        pattern = schema.get("patternProperties", {})
        if list(pattern) == [r"^\d+$"]:
            t = Dict[int, expected_type(pattern[r"^\d+$"])]
        else:
            extra = schema.get("additionalProperties", True)
            t = Dict[str, Any if extra is True else expected_type(extra)]
    else:
        raise AssertionError(f"unexpected schema {schema}")
    return Optional[t] if nullable else t


def same_type(actual: Any, expected: Any) -> bool:
    if actual == expected:
        return True
    # HostState.routes is a lazy Sequence[Route] (RouteSeq), not a tuple.
    if typing.get_origin(actual) is collections.abc.Sequence and typing.get_origin(expected) is tuple:
        args = typing.get_args(expected)
        return len(args) == 2 and args[1] is Ellipsis and typing.get_args(actual) == args[:1]
    return False


def json_name(attr: str) -> str:
    """The serde field of a Python attribute (``from_`` is ``from``)."""
    return attr[:-1] if attr.endswith("_") and keyword.iskeyword(attr[:-1]) else attr


def py_fields(cls: type) -> List[dataclasses.Field]:  # type: ignore[type-arg]
    return [f for f in dataclasses.fields(cls) if not f.name.startswith("_")]


def has_default(f: dataclasses.Field) -> bool:  # type: ignore[type-arg]
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


def json_default(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# --- which types have classes ------------------------------------------------------


def test_every_exported_struct_has_exactly_one_class():
    exported = {n for n, t in TYPES.items() if t["shape"] == "class"}
    assert set(CLASSES) == exported
    assert len(CLASSES) == len(_types._ALL), "two classes claim the same Rust struct"
    for name in (n for n, t in TYPES.items() if t["shape"] == "plain"):
        assert name not in CLASSES, f"{name} is plain data in exported_types! but has a class"


def test_serde_names_are_the_schema_names():
    """The name serde writes a struct under (what the native serializer looks up)
    is the name of its schema definition, so the fields checked below are its own."""
    for name in STRUCTS:
        t = TYPES[name]
        assert t["serde_name"] == name == t["schema_name"], t
        assert name in DEFS, name


def test_every_struct_in_the_schema_has_a_class():
    """A struct the binding can return anywhere (also nested in an enum) is a class,
    never a dict; the schema has no other struct definitions."""
    structs = {n for n, d in DEFS.items() if "properties" in d}
    assert structs - set(CLASSES) == set()
    for name, d in DEFS.items():
        if "oneOf" in d and all("op" in a.get("properties", {}) for a in d["oneOf"]):
            assert name in CLASSES, f"{name} is an internally tagged enum (a struct to serde)"


# --- each class against its struct ---------------------------------------------------


@pytest.mark.parametrize("name", STRUCTS)
def test_class_fields_are_the_struct_fields(name):
    cls = CLASSES[name]
    d = DEFS[name]
    rust: List[str] = TYPES[name]["fields"]
    props: Dict[str, Any] = d["properties"]
    required = set(d.get("required", ()))
    fields = py_fields(cls)
    # A field named after a Python keyword is that name plus "_" (from_).
    names = [json_name(f.name) for f in fields]

    assert set(names) == set(rust), f"{cls.__name__}: Python {names} vs Rust {rust}"
    assert set(props) == set(rust), f"{name}: schema and serde disagree"
    # Rust's order, except that a dataclass needs its defaulted fields last.
    py_default = {json_name(f.name) for f in fields if has_default(f)}
    want = [n for n in rust if n not in py_default] + [n for n in rust if n in py_default]
    assert names == want, f"{cls.__name__} field order"

    hints = typing.get_type_hints(cls)
    for f in fields:
        p = props[json_name(f.name)]
        where = f"{cls.__name__}.{f.name}"
        omittable = json_name(f.name) not in required
        assert same_type(hints[f.name], expected_type(p)), (
            f"{where}: annotated {hints[f.name]}, Rust has {expected_type(p)} ({p})"
        )
        if omittable or "default" in p:
            assert has_default(f), f"{where}: serde may omit it, so it needs a default"
        else:
            assert not has_default(f), f"{where}: has a default but serde always requires it"
        if "default" in p:
            assert json_default(f.default) == p["default"], where
        elif omittable:
            assert f.default in (None, ()), where
    # to_dict() leaves out exactly what serde leaves out.
    omitted = {n for n in rust if n not in required}
    assert {json_name(n) for n in cls._OMIT_EMPTY} == omitted, f"{cls.__name__}._OMIT_EMPTY"  # type: ignore[attr-defined]


def test_change_covers_every_variant():
    """Change mirrors an internally tagged enum: ``op`` names the variant, and
    CHANGE_FIELDS[op] lists exactly that variant's fields, in Rust's order."""
    variants: Dict[str, Dict[str, Any]] = {}
    order: Dict[str, Tuple[str, ...]] = {}
    for alt in DEFS["Change"]["oneOf"]:
        props = dict(alt["properties"])
        op = props.pop("op")["const"]
        variants[op] = props
        assert set(alt["required"]) == set(props) | {"op"}, f"{op}: omittable fields"
        order[op] = tuple(n for n in alt["required"] if n != "op")
    assert _types.CHANGE_FIELDS == order

    cls = _types.Change
    names = [f.name for f in py_fields(cls)]
    everything = {n for props in variants.values() for n in props}
    assert names[0] == "op" and set(names[1:]) == everything
    hints = typing.get_type_hints(cls)
    for f in py_fields(cls)[1:]:
        kinds = {repr(expected_type(props[f.name])): expected_type(props[f.name])
                 for props in variants.values() if f.name in props}
        inner = next(iter(kinds.values())) if len(kinds) == 1 else Any
        if typing.get_origin(inner) is typing.Union:
            inner = next(a for a in typing.get_args(inner) if a is not type(None))
        assert f.default is None and hints[f.name] == Optional[inner], (
            f"Change.{f.name}: annotated {hints[f.name]}, variants have {list(kinds)}"
        )


# --- errors -------------------------------------------------------------------------


def test_every_kind_has_a_class():
    kinds = SCHEMA["error_kinds"]
    assert kinds and all(serde == name for serde, name in kinds)
    names = [name for _, name in kinds]
    assert sorted(roce_net.ERROR_CLASSES) == sorted(names)
    classes = list(roce_net.ERROR_CLASSES.values())
    assert len(set(classes)) == len(classes), "two kinds share an exception class"
    for kind, cls in roce_net.ERROR_CLASSES.items():
        assert issubclass(cls, roce_net.RoceNetError) and cls is not roce_net.RoceNetError, kind
        assert getattr(roce_net, cls.__name__) is cls and cls.__name__ in roce_net.__all__
        e = cls("text", kind=kind, errno=1, extack="x", context=["c"])
        assert (e.kind, e.errno, e.extack, e.context, str(e)) == (kind, 1, "x", ("c",), "text")
    assert issubclass(roce_net.RoceNetPermissionError, PermissionError)
    assert issubclass(roce_net.RoceNetTimeoutError, TimeoutError)


# --- the import-time check ---------------------------------------------------------


def _registration() -> Tuple[Dict[str, Any], Dict[str, Any]]:
    classes = {c._RUST: (c, _types._defaults(c)) for c in _types._ALL}  # type: ignore[attr-defined]
    return classes, dict(roce_net.ERROR_CLASSES)


def test_register_accepts_the_package_as_it_is():
    classes, errors = _registration()
    _roce_net._register(classes, errors, roce_net.RoceNetError)  # a no-op the second time


@pytest.mark.parametrize(
    "change, says",
    [
        # A class whose Rust struct was renamed (fib::Decision -> FibDecision).
        (lambda c, e: c.__setitem__("Decision", c.pop("FibDecision")), "FibDecision"),
        (lambda c, e: c.pop("Route"), "`Route`"),
        (lambda c, e: e.pop("timeout"), "`timeout`"),
        (lambda c, e: e.__setitem__("rebooted", roce_net.RoceNetError), "`rebooted`"),
    ],
    ids=["renamed-struct", "missing-class", "missing-exception", "unknown-kind"],
)
def test_register_refuses_drift(change, says):
    classes, errors = _registration()
    change(classes, errors)
    with pytest.raises(TypeError, match="out of step with the library") as ei:
        _roce_net._register(classes, errors, roce_net.RoceNetError)
    assert says in str(ei.value)


# --- docs ---------------------------------------------------------------------------


def test_docs_list_every_class_and_error():
    """docs/python.md names every result class and maps every kind to its class."""
    if not DOCS.exists():
        pytest.fail(f"{DOCS} not found: run the tests from the repository")
    text = DOCS.read_text()
    section = text.split("## Result objects", 1)[1].split("\n- ", 1)[0]
    section = re.sub(r"\([^)]*\)", "", section)  # "(the Rust `Warning`)"
    listed = set(re.findall(r"`([A-Z]\w+)`", section)) - {"Policy", "Host", "Lab"}
    assert listed == {c.__name__ for c in _types._ALL}
    errors = text.split("\n## Errors", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `(\w+)` \| `(\w+)`", errors, re.M))
    assert rows == {k: c.__name__ for k, c in roce_net.ERROR_CLASSES.items()}
