//! The native half of the `roce_net` Python package (`roce_net._roce_net`).
//!
//! Thin: each function calls the library with the GIL released for I/O and turns
//! results into the frozen dataclasses of `roce_net._types` (see [`convert`]) and
//! errors into `roce_net.RoceNetError` subclasses (see [`errors`]).

use pyo3::prelude::*;

mod convert;
mod doctor;
mod errors;
mod host;
mod lab;
mod mesh;
mod native;
mod persist;
mod plan;
mod policy;
mod rdma;
mod registry;
mod routes;
mod schema;
mod ser;
mod state;
mod views;

/// The extension module.
#[pymodule]
fn _roce_net(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SCHEMA_VERSION", roce_net::HostState::SCHEMA_VERSION)?;
    m.add_function(wrap_pyfunction!(convert::register, m)?)?;
    m.add_function(wrap_pyfunction!(schema::schema, m)?)?;
    m.add_class::<state::NativeState>()?;
    m.add_class::<routes::RouteSeq>()?;
    m.add_class::<plan::NativePlan>()?;
    m.add_class::<host::Host>()?;
    m.add_function(wrap_pyfunction!(state::from_json, m)?)?;
    m.add_function(wrap_pyfunction!(state::load_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(state::parse_snapshot, m)?)?;
    m.add_function(wrap_pyfunction!(state::save_snapshot, m)?)?;
    m.add_class::<policy::Policy>()?;
    m.add_function(wrap_pyfunction!(policy::plan, m)?)?;
    m.add_function(wrap_pyfunction!(policy::render_diff, m)?)?;
    m.add_function(wrap_pyfunction!(policy::describe, m)?)?;
    m.add_function(wrap_pyfunction!(policy::notes, m)?)?;
    m.add_function(wrap_pyfunction!(persist::render_persistence, m)?)?;
    m.add_function(wrap_pyfunction!(persist::write_persistence, m)?)?;
    m.add_function(wrap_pyfunction!(persist::persistence_backends, m)?)?;
    m.add_class::<lab::Lab>()?;
    m.add_function(wrap_pyfunction!(doctor::doctor, m)?)?;
    m.add_function(wrap_pyfunction!(doctor::nccl_env, m)?)?;
    m.add_function(wrap_pyfunction!(doctor::nccl_check, m)?)?;
    m.add_function(wrap_pyfunction!(doctor::fleet_report, m)?)?;
    m.add_function(wrap_pyfunction!(doctor::render_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(doctor::route_lookup, m)?)?;
    rdma::add(m)?;
    mesh::add(m)?;
    views::add(m)?;
    Ok(())
}
