//! `roce_net::Error` -> a `roce_net.RoceNetError` subclass chosen by its kind.
//!
//! The exception classes are defined in Python (`roce_net/_errors.py`) and
//! registered at import; this maps `ErrorKind::name()` to the class and fills
//! `kind`, `message`, `errno`, `extack` and `context`.

use crate::registry::registry;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// Convert a library error into the matching Python exception.
pub fn py_err(e: roce_net::Error) -> PyErr {
    Python::attach(|py| build(py, &e).unwrap_or_else(|build_err| build_err))
}

fn build(py: Python<'_>, e: &roce_net::Error) -> PyResult<PyErr> {
    let reg = match registry() {
        Ok(r) => r,
        Err(_) => return Ok(PyRuntimeError::new_err(e.to_string())),
    };
    let kind = e.kind().name();
    let cls = reg.errors.get(kind).unwrap_or(&reg.base_error).bind(py);
    let kwargs = PyDict::new(py);
    kwargs.set_item("kind", kind)?;
    kwargs.set_item("message", e.message())?;
    kwargs.set_item("errno", e.errno_value())?;
    kwargs.set_item("extack", e.extack())?;
    kwargs.set_item("context", PyTuple::new(py, e.context_chain())?)?;
    let exc = cls.call((e.to_string(),), Some(&kwargs))?;
    Ok(PyErr::from_value(exc))
}

/// `Result<T, roce_net::Error>` -> `PyResult<T>`.
pub trait IntoPyResult<T> {
    /// Map the error with [`py_err`].
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, roce_net::Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(py_err)
    }
}
