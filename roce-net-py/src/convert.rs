//! Rust values -> Python objects, through serde.
//!
//! Every result is serialised by [`crate::ser`] (a serde serializer that builds
//! Python objects), with one twist: a serde struct whose name is registered (from
//! `roce_net._types`, at import) becomes an instance of the registered frozen
//! dataclass instead of a dict. The instance is allocated with
//! `object.__new__` and its slots are filled with `PyObject_GenericSetAttr`, which
//! skips the frozen `__setattr__` and the Python-level `__init__`: that keeps a
//! 100k-route snapshot fast. Lists become tuples (immutable, hashable).
//!
//! The registry (`crate::registry`) ties Rust struct names to Python classes;
//! [`register`] fills it at import. Which names must have a class is decided by `exported_types!` (crate::schema), checked when the package
//! registers; binding a new part of the library is: list its result type there,
//! regenerate `_types.py` (`scripts/gen_python_types.py` writes its dataclass),
//! and call [`to_py`] on it.

use crate::registry::{ClassInfo, Registry};
use crate::schema::Exported;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::collections::HashMap;

/// The JSON text of a roce_net record passed from Python (`what`: its class,
/// for the message): anything without a `to_json` method is a `TypeError`
/// naming what was expected and what came, not an `AttributeError` from inside.
pub fn record_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    match obj.getattr("to_json") {
        Ok(m) if m.is_callable() => m.call0()?.extract(),
        _ => Err(PyTypeError::new_err(format!(
            "expected a roce_net.{what}, got {}",
            obj.get_type().name()?
        ))),
    }
}

/// `_register(classes, errors, base_error)`: called once by `roce_net._types`.
///
/// `classes` maps a serde struct name to `(cls, {field: default})`; `errors` maps an
/// error kind name to an exception class. Raises `TypeError` (so the import fails)
/// when they do not cover exactly the exported structs and the library's error
/// kinds (`crate::schema::check_registration`).
#[pyfunction]
#[pyo3(name = "_register")]
pub fn register(
    py: Python<'_>,
    classes: &Bound<'_, PyDict>,
    errors: &Bound<'_, PyDict>,
    base_error: Bound<'_, PyAny>,
) -> PyResult<()> {
    let mut reg = Registry {
        classes: HashMap::new(),
        errors: HashMap::new(),
        base_error: base_error.unbind(),
        object_new: py
            .import("builtins")?
            .getattr("object")?
            .getattr("__new__")?
            .unbind(),
    };
    for (k, v) in classes.iter() {
        let name: String = k.extract()?;
        let (cls, defaults): (Bound<'_, PyAny>, Bound<'_, PyDict>) = v.extract()?;
        let defaults = defaults
            .iter()
            .map(|(f, d)| Ok((f.cast_into::<PyString>()?.unbind(), d.unbind())))
            .collect::<PyResult<Vec<_>>>()?;
        reg.classes.insert(
            name,
            ClassInfo {
                cls: cls.unbind(),
                defaults,
            },
        );
    }
    for (k, v) in errors.iter() {
        reg.errors.insert(k.extract()?, v.unbind());
    }
    crate::schema::check_registration(
        reg.classes.keys().map(String::as_str),
        reg.errors.keys().map(String::as_str),
    )?;
    crate::registry::install(reg);
    Ok(())
}

/// A Rust value as typed Python objects (dataclasses, tuples, dicts, str, int, ...).
///
/// Only for types listed in `exported_types!` (crate::schema), whose Python
/// mirror is checked against their schema.
pub fn to_py<'py, T: Exported + ?Sized>(py: Python<'py>, v: &T) -> PyResult<Bound<'py, PyAny>> {
    crate::ser::to_python(py, v)
}

/// The widest `indent` a `to_json` accepts (a guard against a huge allocation).
pub const MAX_INDENT: usize = 64;

/// `InvalidInputError` for an `indent` wider than [`MAX_INDENT`].
pub fn check_indent(indent: Option<usize>) -> PyResult<()> {
    match indent.filter(|n| *n > MAX_INDENT) {
        Some(n) => Err(crate::errors::py_err(roce_net::Error::new(
            roce_net::ErrorKind::InvalidInput,
            format!(
                "to_json: indent {n} is more than {MAX_INDENT} spaces; \
                 give 0 to {MAX_INDENT}, or None for compact JSON"
            ),
        ))),
        None => Ok(()),
    }
}

/// JSON text as the library's serializer writes it: compact (no whitespace)
/// without `indent`, else one value per line indented by `indent` spaces (2 is
/// serde_json's `to_string_pretty`, what the library's `to_json`s write).
pub fn json_text<T: serde::Serialize + ?Sized>(v: &T, indent: Option<usize>) -> PyResult<String> {
    let text = match indent {
        None => serde_json::to_string(v),
        Some(n) => {
            let pad = " ".repeat(n);
            let mut out = Vec::new();
            let fmt = serde_json::ser::PrettyFormatter::with_indent(pad.as_bytes());
            let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
            v.serialize(&mut ser)
                // serde_json writes UTF-8 only.
                .map(|()| String::from_utf8_lossy(&out).into_owned())
        }
    };
    text.map_err(|e| PyValueError::new_err(format!("serialising to JSON: {e}")))
}
