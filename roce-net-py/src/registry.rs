//! The registry of the Python classes `roce_net` registered at import:
//! dataclasses by serde struct name, exception classes by error kind. Filled
//! once by `_register` (`crate::convert::register`), read by the serializer
//! (`crate::ser`), the error mapping (`crate::errors`) and the route sequence.
//! Below all of them; it uses none.

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::collections::HashMap;
use std::sync::OnceLock;

/// A registered dataclass: the class and the defaults of fields that have one.
pub(crate) struct ClassInfo {
    pub(crate) cls: Py<PyAny>,
    pub(crate) defaults: Vec<(Py<PyString>, Py<PyAny>)>,
}

/// Classes by serde struct name, error classes by `ErrorKind::name()`.
pub struct Registry {
    pub(crate) classes: HashMap<String, ClassInfo>,
    pub(crate) errors: HashMap<String, Py<PyAny>>,
    pub(crate) base_error: Py<PyAny>,
    pub(crate) object_new: Py<PyAny>,
}

static REGISTRY: OnceLock<Registry> = OnceLock::new();

/// Keep `reg` as the registry. A second import (e.g. importlib.reload) keeps
/// the first registry: the classes handed out already must stay the ones the
/// registry builds.
pub(crate) fn install(reg: Registry) {
    let _ = REGISTRY.set(reg);
}

/// The registry, or an error saying the package was imported the wrong way.
pub fn registry() -> PyResult<&'static Registry> {
    REGISTRY.get().ok_or_else(|| {
        PyRuntimeError::new_err(
            "roce_net._roce_net was used before roce_net registered its types; import roce_net, not roce_net._roce_net",
        )
    })
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
