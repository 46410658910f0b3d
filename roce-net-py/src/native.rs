//! The native original kept beside a Python value: `HostState` and `Plan`
//! dataclasses carry their Rust value (`NativeState`, `NativePlan`) in a hidden
//! `_native` slot, so handing one back to the library skips a JSON round trip.
//! Below `state.rs` and `plan.rs`, which both attach one; it uses neither.

use pyo3::prelude::*;
use pyo3::types::PyString;

/// Set the hidden `_native` slot of a frozen dataclass instance.
pub fn attach_native(obj: &Bound<'_, PyAny>, native: Bound<'_, PyAny>) -> PyResult<()> {
    let py = obj.py();
    // The dataclass is frozen; object.__setattr__ is how its own __init__ sets fields.
    py.import("builtins")?
        .getattr("object")?
        .getattr("__setattr__")?
        .call1((obj, PyString::new(py, "_native"), native))?;
    Ok(())
}
