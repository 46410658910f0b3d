//! What the binding hands to Python, exported so the Python side is checked
//! against it (as pydantic-core's Python tests check against the error list its
//! Rust core exports).
//!
//! One list, [`exported_types!`] below, names every library type a function of
//! this module may return. From it come:
//!
//! - the [`Exported`] trait that [`crate::convert::to_py`] requires, so returning
//!   a type that is not listed does not compile;
//! - `_schema()`: the JSON Schema of every listed type (schemars, serialize
//!   contract: the fields serde writes, which it may omit, which may be null),
//!   plus each struct's serde name and field order as serde's own derive
//!   declares them (captured from its `Deserialize` impl);
//! - `_from_json(name, text)`: the typed parser behind every `X.from_json`;
//! - the import-time check in `_register` that `roce_net._types` has one class
//!   per listed struct and no other, and `roce_net._errors` one exception class
//!   per library `ErrorKind` and no other.
//!
//! `scripts/gen_python_types.py` writes `roce_net/_types.py` from `_schema()`
//! (`roce-net-py/tests/test_codegen.py` fails when regenerating would change it);
//! `roce-net-py/tests/test_schema.py` checks each class's fields (names, order,
//! optionality, which may be omitted, types) against `_schema()` independently,
//! and that every struct the schema reaches has a class or is declared plain data
//! there.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde::de::{self, Deserialize, Visitor};
use serde::Serialize;
use std::borrow::Cow;

/// A value the binding may turn into Python objects: a type listed in
/// [`exported_types!`], a sequence or option of one, or a string.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is returned to Python but is not listed in `exported_types!`",
    note = "add it to `exported_types!` in roce-net-py/src/schema.rs and run \
            scripts/gen_python_types.py, which writes its dataclass; see docs/python.md"
)]
pub trait Exported: Serialize {}

impl<T: Exported> Exported for [T] {}
impl<T: Exported> Exported for Vec<T> {}
impl<T: Exported> Exported for Option<T> {}
impl Exported for String {}
impl Exported for str {}

/// How Python sees a listed type.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A serde struct (or an internally tagged enum, which serde writes as a
    /// struct named after the enum): a frozen dataclass whose `_RUST` is its name.
    Class,
    /// Plain data (a string or a dict): an enum returned as it is.
    Plain,
}

/// One listed type, by function pointers (the list is a static table).
pub struct ExportedType {
    /// `Class` or `Plain`.
    pub shape: Shape,
    /// The schemars name (the key of its definition in `_schema()`).
    pub schema_name: fn() -> Cow<'static, str>,
    /// Adds its schema to the generator's definitions.
    subschema: fn(&mut SchemaGenerator) -> schemars::Schema,
    /// Its serde struct name and fields, as its `Deserialize` derive declares
    /// them; `None` for enums and maps.
    pub serde_struct: fn() -> Option<(&'static str, &'static [&'static str])>,
    /// Parse JSON text into it and build its Python value.
    pub parse: for<'py> fn(Python<'py>, &str, &str) -> PyResult<Bound<'py, PyAny>>,
}

impl ExportedType {
    const fn of<T>(shape: Shape) -> ExportedType
    where
        T: JsonSchema + Exported + de::DeserializeOwned,
    {
        ExportedType {
            shape,
            schema_name: T::schema_name,
            subschema: subschema::<T>,
            serde_struct: serde_struct::<T>,
            parse: parse::<T>,
        }
    }

    /// The name Python registers it by: the serde struct name, or the schema
    /// name for an enum (internally tagged enums are written under their name).
    pub fn python_name(&self) -> Cow<'static, str> {
        match (self.serde_struct)() {
            Some((name, _)) => Cow::Borrowed(name),
            None => (self.schema_name)(),
        }
    }
}

/// Lists every library type the binding returns to Python (`class`: becomes a
/// dataclass of `roce_net._types`; `plain`: stays a str / dict), nested ones
/// included, each once.
macro_rules! exported_types {
    (class { $($c:ty),* $(,)? } plain { $($p:ty),* $(,)? }) => {
        $(impl Exported for $c {})*
        $(impl Exported for $p {})*
        /// Every type [`exported_types!`] lists.
        pub static TYPES: &[ExportedType] = &[
            $(ExportedType::of::<$c>(Shape::Class),)*
            $(ExportedType::of::<$p>(Shape::Plain),)*
        ];
    };
}

use roce_net as r;
exported_types! {
    class {
        // Snapshots.
        r::HostState, r::Interface, r::LinkStats, r::Address, r::Neighbor, r::Route,
        r::NextHop, r::Rule, r::SysctlView, r::ConfValues, r::InterfaceConf, r::Tuning,
        r::RdmaDevice, r::RdmaPort, r::GidEntry, r::Warning, r::Qos, r::DcbApp, r::RdmaCmPort,
        // The verbs view (`snapshot --verbs`, `verbs_view`).
        r::VerbsView, r::VerbsDevice, r::VerbsPort, r::VerbsGid, r::NoRdma,
        // Plans.
        r::Plan, r::Change, r::DesiredState, r::NicDesired,
        // Host calls.
        r::RouteDecision, r::ArpProbeResult, r::ArpReply, r::NdProbeResult, r::NdReply,
        r::ApplyReport, r::RollbackReport,
        // Analysis.
        r::Finding, r::Subject, r::Remediation, r::Summary, r::NcclAdvice, r::NcclVar,
        r::GidPick, r::GidChoice, r::PickOutcome, r::PortRef,
        r::FleetReport, r::HostSummary, r::FibDecision,
        // Views (`gids`, `ibdev2netdev`).
        r::GidRow, r::Ibdev2NetdevRow,
        // Persistence.
        r::RenderedFile, r::WriteReport, r::FileDiff, r::RemoveReport, r::AppliedPersist,
        // Labs.
        r::LabNic,
        // RDMA probes (`probe_rdma`, `probe_rdma_server`).
        r::RdmaProbeReport, r::RdmaServerReport, r::RejectedConnection, r::EndpointSummary,
        r::Latency, r::Bandwidth,
        r::ProbeFailure,
        // The cluster mesh (`mesh_node`, `mesh_plan`, `mesh_run`, `mesh_report`).
        r::MeshNode, r::MeshNic, r::MeshInventory, r::MeshPlan, r::MeshOptions, r::MeshLevels,
        r::MeshRdmaWorkload, r::MeshNodePlan, r::NodeSchedule, r::ScheduledProbe,
        r::MeshNodeResult, r::NicSeen, r::ProbeRecord, r::LevelResult, r::ResponderReport,
        r::AnsweredProbe, r::MeshReport, r::MeshReportNode, r::MeshSummary, r::MeshFault,
        r::MeshUnprobedNic,
    }
    plain {
        // "confirmed", "nothing_pending" or {"rolled_back": RollbackReport}.
        r::WatchdogOutcome,
        // A probe failure's raw value: {"type": "errno", "errno": .., "name": ..}, ...
        r::FailureValue,
    }
}

/// The listed type Python registers under `name`.
pub fn find(name: &str) -> Option<&'static ExportedType> {
    TYPES.iter().find(|t| t.python_name() == name)
}

fn subschema<T: JsonSchema>(g: &mut SchemaGenerator) -> schemars::Schema {
    g.subschema_for::<T>()
}

/// Parse JSON into `T` (serde validates) and build its Python value.
fn parse<'py, T>(py: Python<'py>, name: &str, text: &str) -> PyResult<Bound<'py, PyAny>>
where
    T: de::DeserializeOwned + Exported,
{
    let v: T = serde_json::from_str(text).map_err(|e| {
        crate::errors::py_err(roce_net::Error::new(
            roce_net::ErrorKind::Parse,
            format!("not a valid {name}: {e}"),
        ))
    })?;
    crate::ser::to_python(py, &v)
}

/// `T`'s serde struct name and fields, read from its derived `Deserialize`
/// (which passes them to `deserialize_struct`); `None` when it is not a struct.
fn serde_struct<T: de::DeserializeOwned>() -> Option<(&'static str, &'static [&'static str])> {
    let mut seen = None;
    let _ = T::deserialize(StructProbe(&mut seen));
    seen
}

/// A deserializer that records the struct name and fields it is asked for and
/// then stops (every call fails).
struct StructProbe<'a>(&'a mut Option<(&'static str, &'static [&'static str])>);

impl<'de> de::Deserializer<'de> for StructProbe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("schema probe"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = Some((name, fields));
        Err(de::Error::custom("schema probe"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
        enum identifier ignored_any
    }
}

/// The schema export (see `_schema()`).
fn schema_json() -> serde_json::Value {
    use serde_json::{json, Map, Value};
    let mut g = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let mut types = Vec::new();
    for t in TYPES {
        (t.subschema)(&mut g);
        let (serde_name, fields) = match (t.serde_struct)() {
            Some((n, f)) => (Value::from(n), Value::from(f.to_vec())),
            None => (Value::Null, Value::Null),
        };
        types.push(json!({
            "name": t.python_name(),
            "schema_name": (t.schema_name)(),
            "shape": match t.shape { Shape::Class => "class", Shape::Plain => "plain" },
            "serde_name": serde_name,
            "fields": fields,
        }));
    }
    let defs: Map<String, Value> = g.take_definitions(true);
    json!({
        "types": types,
        "definitions": defs,
        "error_kinds": error_kinds(),
    })
}

/// Every library `ErrorKind`, by serde name, with `ErrorKind::name()` (the
/// `kind` attribute of the exception): the enum's JSON Schema lists every
/// variant, so a new kind shows up here without anyone listing it.
pub fn error_kinds() -> Vec<(String, &'static str)> {
    let schema = schemars::schema_for!(roce_net::ErrorKind);
    let mut names: Vec<String> = Vec::new();
    if let Some(list) = schema.get("enum").and_then(|v| v.as_array()) {
        names.extend(list.iter().filter_map(|v| v.as_str().map(str::to_owned)));
    }
    if let Some(list) = schema.get("oneOf").and_then(|v| v.as_array()) {
        for alt in list {
            if let Some(s) = alt.get("const").and_then(|v| v.as_str()) {
                names.push(s.to_owned());
            }
            if let Some(e) = alt.get("enum").and_then(|v| v.as_array()) {
                names.extend(e.iter().filter_map(|v| v.as_str().map(str::to_owned)));
            }
        }
    }
    names
        .into_iter()
        .map(|n| {
            let kind = roce_net::ErrorKind::deserialize(de::value::StrDeserializer::<
                de::value::Error,
            >::new(&n))
            .map(roce_net::ErrorKind::name)
            .unwrap_or("?");
            (n, kind)
        })
        .collect()
}

/// `_schema()`: what the binding returns, for the Python side to be checked
/// against: `types` (every listed type: `name` as Python registers it, `shape`
/// "class" or "plain", `schema_name`, `serde_name` and `fields` in declaration
/// order for structs), `definitions` (JSON Schema 2020-12 `$defs`, serialize
/// contract) and `error_kinds` (`[serde name, ErrorKind::name()]`).
#[pyfunction]
#[pyo3(name = "_schema")]
pub fn schema(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let text = schema_json().to_string();
    py.import("json")?.call_method1("loads", (text,))
}

/// Check what `roce_net` registers against the list: one class per listed
/// struct (by serde name) and none for anything else; one exception class per
/// error kind and none for an unknown kind. Fails the import otherwise.
pub fn check_registration<'a>(
    classes: impl Iterator<Item = &'a str> + Clone,
    errors: impl Iterator<Item = &'a str> + Clone,
) -> PyResult<()> {
    let mut problems = Vec::new();
    for t in TYPES.iter().filter(|t| t.shape == Shape::Class) {
        let name = t.python_name();
        if !classes.clone().any(|c| c == name) {
            problems.push(format!(
                "the library returns the struct `{name}` but roce_net/_types.py has no class \
                 with _RUST = {name:?} (it would become a dict): run scripts/gen_python_types.py"
            ));
        }
    }
    for c in classes {
        if !TYPES
            .iter()
            .any(|t| t.shape == Shape::Class && t.python_name() == c)
        {
            problems.push(format!(
                "roce_net/_types.py registers a class for `{c}`, which no exported library \
                 type is called (renamed in Rust? see exported_types! in roce-net-py/src/schema.rs)"
            ));
        }
    }
    let kinds = error_kinds();
    for (serde_name, name) in &kinds {
        if serde_name != name {
            problems.push(format!(
                "ErrorKind `{serde_name}` is called {name:?} by ErrorKind::name()"
            ));
        }
        if !errors.clone().any(|e| e == *name) {
            problems.push(format!(
                "the library's ErrorKind `{name}` has no exception class in \
                 roce_net/_errors.py ERROR_CLASSES (it would raise the bare RoceNetError)"
            ));
        }
    }
    for e in errors {
        if !kinds.iter().any(|(_, n)| *n == e) {
            problems.push(format!(
                "roce_net/_errors.py ERROR_CLASSES has `{e}`, which is no ErrorKind of the library"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(PyTypeError::new_err(format!(
            "roce_net: the Python types are out of step with the library:\n  {}",
            problems.join("\n  ")
        )))
    }
}
