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
//! The registry ties Rust struct names to Python classes. Which names must have a
//! class is decided by `exported_types!` (crate::schema), checked when the package
//! registers; binding a new part of the library is: list its result type there,
//! regenerate `_types.py` (`scripts/gen_python_types.py` writes its dataclass),
//! and call [`to_py`] on it.

use crate::schema::Exported;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::collections::HashMap;
use std::sync::OnceLock;

/// A registered dataclass: the class and the defaults of fields that have one.
struct ClassInfo {
    cls: Py<PyAny>,
    defaults: Vec<(Py<PyString>, Py<PyAny>)>,
}

/// Classes by serde struct name, error classes by `ErrorKind::name()`.
pub struct Registry {
    classes: HashMap<String, ClassInfo>,
    pub(crate) errors: HashMap<String, Py<PyAny>>,
    pub(crate) base_error: Py<PyAny>,
    object_new: Py<PyAny>,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

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

/// The registry, or an error saying the package was imported the wrong way.
pub fn registry() -> PyResult<&'static Registry> {
    REGISTRY.get().ok_or_else(|| {
        PyRuntimeError::new_err(
            "roce_net._roce_net was used before roce_net registered its types; import roce_net, not roce_net._roce_net",
        )
    })
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
    // A second import (e.g. importlib.reload) keeps the first registry: the classes
    // handed out already must stay the ones the registry builds.
    let _ = REGISTRY.set(reg);
    Ok(())
}

/// A fresh instance of the class registered for `struct_name` (its defaulted
/// fields already set), or `None` when the name is not registered.
pub fn new_instance<'py>(
    py: Python<'py>,
    struct_name: &str,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let reg = registry()?;
    let Some(info) = reg.classes.get(struct_name) else {
        return Ok(None);
    };
    let obj = reg.object_new.bind(py).call1((info.cls.bind(py),))?;
    for (f, d) in &info.defaults {
        set_slot(&obj, f.bind(py), d.bind(py))?;
    }
    Ok(Some(obj))
}

/// The class registered for `struct_name`, if any.
pub fn registered_class<'py>(
    py: Python<'py>,
    struct_name: &str,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(registry()?
        .classes
        .get(struct_name)
        .map(|info| info.cls.bind(py).clone()))
}

/// Set one slot of a frozen dataclass instance, bypassing its `__setattr__`.
pub fn set_slot(
    obj: &Bound<'_, PyAny>,
    name: &Bound<'_, PyString>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    // SAFETY: all three are valid, owned references for the duration of the call;
    // PyObject_GenericSetAttr only stores `value` (taking its own reference).
    let rc =
        unsafe { pyo3::ffi::PyObject_GenericSetAttr(obj.as_ptr(), name.as_ptr(), value.as_ptr()) };
    if rc != 0 {
        let err = PyErr::take(obj.py())
            .unwrap_or_else(|| PyRuntimeError::new_err("setting a dataclass slot failed"));
        return Err(PyTypeError::new_err(format!(
            "roce_net: {}.{} cannot be set ({err}); the Python types are out of step with the library",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default(),
            name
        )));
    }
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
