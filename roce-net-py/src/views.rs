//! The read-only RDMA views of the CLI for Python: `show_gids` (`roce-net gids`,
//! mlnx-tools' show_gids), `ibdev2netdev` (`roce-net ibdev2netdev`, OFED's
//! script) and their text renderings, each the library function the CLI calls.

use crate::convert::to_py;
use crate::errors::{py_err, IntoPyResult};
use crate::state::native_state;
use pyo3::prelude::*;
use roce_net::{Error, ErrorKind, GidFilter, GidRow, Ibdev2NetdevRow};

/// `show_gids(state, device=None, port=None)`: the rows mlnx-tools' show_gids
/// prints for the snapshot, as `GidRow`s (what `roce-net --json gids` prints).
/// A device or port the snapshot lacks is `NotFoundError`; a port without a
/// device is `InvalidInputError`.
#[pyfunction]
#[pyo3(signature = (state, device=None, port=None))]
pub fn show_gids<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyAny>,
    device: Option<String>,
    port: Option<u32>,
) -> PyResult<Bound<'py, PyAny>> {
    let st = native_state(state)?;
    let filter = GidFilter { device, port };
    let rows = py.detach(move || roce_net::show_gids(&st, &filter)).py()?;
    to_py(py, &rows)
}

/// `ibdev2netdev(state)`: every RDMA port with a netdev, as
/// `Ibdev2NetdevRow`s (what `roce-net --json ibdev2netdev` prints).
#[pyfunction]
pub fn ibdev2netdev<'py>(
    py: Python<'py>,
    state: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let st = native_state(state)?;
    let rows = py.detach(move || roce_net::ibdev2netdev(&st));
    to_py(py, &rows)
}

/// The rows handed in (result objects or their `to_dict()`), validated by serde.
fn rows<T: serde::de::DeserializeOwned>(
    what: &str,
    row_type: &str,
    source: &str,
    rows: &Bound<'_, PyAny>,
) -> PyResult<Vec<T>> {
    let mut out = Vec::new();
    for (i, row) in rows.try_iter()?.enumerate() {
        let row = row?;
        let plain = if row.hasattr("to_dict")? {
            row.call_method0("to_dict")?
        } else {
            row
        };
        let v = pythonize::depythonize::<T>(&plain).map_err(|e| {
            py_err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{what}: row {i} is not a {row_type}: {e}; pass the rows {source}() \
                     returned (or their to_dict())"
                ),
            ))
        })?;
        out.push(v);
    }
    Ok(out)
}

/// `render_show_gids(rows)`: the rows as show_gids prints them (what
/// `roce-net gids` prints): header, one tab-separated line per GID,
/// `n_gids_found=N`.
#[pyfunction]
pub fn render_show_gids(rows: &Bound<'_, PyAny>) -> PyResult<String> {
    let rows: Vec<GidRow> = self::rows("render_show_gids", "GidRow", "show_gids", rows)?;
    Ok(roce_net::render_show_gids(&rows))
}

/// `render_ibdev2netdev(rows, verbose=False)`: the rows as `ibdev2netdev`
/// (`-v`: with PCI address, device id, part number, product, firmware, port
/// state) prints them; empty text for no rows, as the script prints nothing.
#[pyfunction]
#[pyo3(signature = (rows, verbose=false))]
pub fn render_ibdev2netdev(rows: &Bound<'_, PyAny>, verbose: bool) -> PyResult<String> {
    let rows: Vec<Ibdev2NetdevRow> = self::rows(
        "render_ibdev2netdev",
        "Ibdev2NetdevRow",
        "ibdev2netdev",
        rows,
    )?;
    Ok(roce_net::render_ibdev2netdev(&rows, verbose))
}

/// Register the functions on the module.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(show_gids, m)?)?;
    m.add_function(wrap_pyfunction!(ibdev2netdev, m)?)?;
    m.add_function(wrap_pyfunction!(render_show_gids, m)?)?;
    m.add_function(wrap_pyfunction!(render_ibdev2netdev, m)?)?;
    Ok(())
}
