//! A serde `Serializer` that builds Python objects directly.
//!
//! Like `pythonize`, but tuned for large snapshots: field names and enum variant
//! names are `&'static str`, so each becomes one interned Python string, cached
//! per thread and reused for every object (no allocation, hash computed once);
//! registered structs become frozen dataclass instances (see `convert`).

use crate::registry::{new_instance, set_slot};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};
use pyo3::BoundObject;
use serde::ser::{self, Serialize};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

/// A Python error carried through serde.
#[derive(Debug)]
pub struct SerError(pub PyErr);

impl fmt::Display for SerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for SerError {}

impl ser::Error for SerError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        SerError(pyo3::exceptions::PyValueError::new_err(msg.to_string()))
    }
}

impl From<PyErr> for SerError {
    fn from(e: PyErr) -> Self {
        SerError(e)
    }
}

type R<'py> = Result<Bound<'py, PyAny>, SerError>;

/// Hashes the (address, length) key of a static name: both are already unique
/// and well spread, so a multiply-xor beats SipHash here.
#[derive(Default)]
struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

type Names =
    HashMap<(usize, usize), (Py<PyString>, bool), std::hash::BuildHasherDefault<AddrHasher>>;

thread_local! {
    /// Interned names by the address and length of their static text, with
    /// whether the name is one of [`SHARED_FIELDS`] (decided once per name).
    static NAMES: RefCell<Names> = RefCell::new(Names::default());
}

/// The interned Python string for a static name, and whether values of a field
/// of that name share their strings.
fn name_info<'py>(py: Python<'py>, s: &'static str) -> (Bound<'py, PyString>, bool) {
    let key = (s.as_ptr() as usize, s.len());
    NAMES.with(|m| {
        let mut m = m.borrow_mut();
        let (n, share) = m
            .entry(key)
            .or_insert_with(|| (PyString::intern(py, s).unbind(), SHARED_FIELDS.contains(&s)));
        (n.bind(py).clone(), *share)
    })
}

/// The interned Python string for a static name.
fn name<'py>(py: Python<'py>, s: &'static str) -> Bound<'py, PyString> {
    name_info(py, s).0
}

/// The dataclass attribute of a serde field: the field's name, or with a
/// trailing underscore when that name is a Python keyword (`from` -> `from_`),
/// as scripts/gen_python_types.py names it; dicts keep the JSON key.
fn attr_name(key: &'static str) -> &'static str {
    match key {
        "from" => "from_",
        "class" => "class_",
        "def" => "def_",
        "del" => "del_",
        "elif" => "elif_",
        "except" => "except_",
        "finally" => "finally_",
        "global" => "global_",
        "import" => "import_",
        "is" => "is_",
        "lambda" => "lambda_",
        "nonlocal" => "nonlocal_",
        "not" => "not_",
        "or" => "or_",
        "and" => "and_",
        "pass" => "pass_",
        "raise" => "raise_",
        "try" => "try_",
        "with" => "with_",
        "yield" => "yield_",
        "assert" => "assert_",
        _ => key,
    }
}

/// Serialise a value into Python objects.
pub fn to_python<'py, T: Serialize + ?Sized>(
    py: Python<'py>,
    v: &T,
) -> PyResult<Bound<'py, PyAny>> {
    v.serialize(Ser { py, share: false }).map_err(|e| e.0)
}

/// Fields whose string values repeat across many objects (interface names,
/// scopes): one Python string per distinct value is shared (see [`shared_str`]).
const SHARED_FIELDS: &[&str] = &[
    "dev",
    "scope",
    "ifname",
    "master",
    "oper_state",
    "netdev",
    "iif",
    "oif",
];

/// At most this many distinct shared strings are kept; the cache starts over
/// when it is full (a namespace rarely has more interface names than this).
const SHARED_MAX: usize = 4096;

/// Short keys: the multiply-xor hasher beats SipHash here too.
type Shared = HashMap<Box<str>, Py<PyString>, std::hash::BuildHasherDefault<AddrHasher>>;

thread_local! {
    /// Shared strings by value (values of [`SHARED_FIELDS`] only).
    static SHARED: RefCell<Shared> = RefCell::new(Shared::default());
}

/// The shared Python string for a repeated short value: 100k routes through one
/// device then hold one `"v0"`, not 100k copies.
fn shared_str<'py>(py: Python<'py>, v: &str) -> Bound<'py, PyString> {
    SHARED.with(|m| {
        let mut m = m.borrow_mut();
        if let Some(s) = m.get(v) {
            return s.bind(py).clone();
        }
        if m.len() >= SHARED_MAX {
            m.clear();
        }
        let s = PyString::new(py, v);
        m.insert(v.into(), s.clone().unbind());
        s
    })
}

/// The serializer (one per value; cheap to copy).
#[derive(Clone, Copy)]
pub struct Ser<'py> {
    py: Python<'py>,
    /// The value is one of [`SHARED_FIELDS`]: share its strings.
    share: bool,
}

impl<'py> Ser<'py> {
    fn obj<T: IntoPyObject<'py>>(self, v: T) -> R<'py>
    where
        PyErr: From<T::Error>,
    {
        Ok(v.into_pyobject(self.py)
            .map_err(PyErr::from)?
            .into_any()
            .into_bound())
    }

    fn wrap(self, variant: &'static str, v: Bound<'py, PyAny>) -> R<'py> {
        let d = PyDict::new(self.py);
        d.set_item(name(self.py, variant), v)?;
        Ok(d.into_any())
    }
}

/// Sequences and tuples: collected, then one tuple.
pub struct SeqSer<'py> {
    py: Python<'py>,
    items: Vec<Bound<'py, PyAny>>,
    variant: Option<&'static str>,
}

impl<'py> SeqSer<'py> {
    fn finish(self) -> R<'py> {
        let t = PyTuple::new(self.py, self.items)?.into_any();
        match self.variant {
            Some(v) => Ser {
                py: self.py,
                share: false,
            }
            .wrap(v, t),
            None => Ok(t),
        }
    }
}

/// Maps: a dict.
pub struct MapSer<'py> {
    py: Python<'py>,
    dict: Bound<'py, PyDict>,
    key: Option<Bound<'py, PyAny>>,
}

/// Structs: a registered dataclass instance or a dict.
pub struct StructSer<'py> {
    py: Python<'py>,
    target: Target<'py>,
    variant: Option<&'static str>,
}

enum Target<'py> {
    Instance(Bound<'py, PyAny>),
    Dict(Bound<'py, PyDict>),
}

impl<'py> StructSer<'py> {
    fn new(
        py: Python<'py>,
        struct_name: &'static str,
        variant: Option<&'static str>,
    ) -> Result<Self, SerError> {
        let target = match new_instance(py, struct_name)? {
            Some(obj) => Target::Instance(obj),
            None => Target::Dict(PyDict::new(py)),
        };
        Ok(StructSer {
            py,
            target,
            variant,
        })
    }

    fn field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SerError> {
        let is_instance = matches!(self.target, Target::Instance(_));
        let (k, share) = name_info(self.py, if is_instance { attr_name(key) } else { key });
        let v = value.serialize(Ser { py: self.py, share })?;
        match &self.target {
            Target::Instance(o) => set_slot(o, &k, &v)?,
            Target::Dict(d) => d.set_item(k, v)?,
        }
        Ok(())
    }

    fn finish(self) -> R<'py> {
        let v = match self.target {
            Target::Instance(o) => o,
            Target::Dict(d) => d.into_any(),
        };
        match self.variant {
            Some(var) => Ser {
                py: self.py,
                share: false,
            }
            .wrap(var, v),
            None => Ok(v),
        }
    }
}

/// `fn serialize_x(self, v: T) -> R { self.obj(v) }` for each `serialize_x: T`.
macro_rules! to_object {
    ($($method:ident: $ty:ty,)*) => {
        $(
            fn $method(self, v: $ty) -> R<'py> {
                self.obj(v)
            }
        )*
    };
}

impl<'py> ser::Serializer for Ser<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = SerError;
    type SerializeSeq = SeqSer<'py>;
    type SerializeTuple = SeqSer<'py>;
    type SerializeTupleStruct = SeqSer<'py>;
    type SerializeTupleVariant = SeqSer<'py>;
    type SerializeMap = MapSer<'py>;
    type SerializeStruct = StructSer<'py>;
    type SerializeStructVariant = StructSer<'py>;

    // Numbers, booleans and characters become the Python object pyo3 makes of them.
    to_object! {
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128,
        serialize_f32: f32,
        serialize_f64: f64,
        serialize_char: char,
    }
    fn serialize_str(self, v: &str) -> R<'py> {
        if self.share && v.len() <= 32 {
            return Ok(shared_str(self.py, v).into_any());
        }
        Ok(PyString::new(self.py, v).into_any())
    }
    fn serialize_bytes(self, v: &[u8]) -> R<'py> {
        Ok(PyBytes::new(self.py, v).into_any())
    }
    fn serialize_none(self) -> R<'py> {
        Ok(self.py.None().into_bound(self.py))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> R<'py> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> R<'py> {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _name: &'static str) -> R<'py> {
        self.serialize_none()
    }
    fn serialize_unit_variant(self, _name: &'static str, _i: u32, variant: &'static str) -> R<'py> {
        Ok(name(self.py, variant).into_any())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> R<'py> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        value: &T,
    ) -> R<'py> {
        let v = value.serialize(self)?;
        self.wrap(variant, v)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqSer<'py>, SerError> {
        Ok(SeqSer {
            py: self.py,
            items: Vec::with_capacity(len.unwrap_or(0)),
            variant: None,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqSer<'py>, SerError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<SeqSer<'py>, SerError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SeqSer<'py>, SerError> {
        Ok(SeqSer {
            py: self.py,
            items: Vec::with_capacity(len),
            variant: Some(variant),
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<MapSer<'py>, SerError> {
        Ok(MapSer {
            py: self.py,
            dict: PyDict::new(self.py),
            key: None,
        })
    }
    fn serialize_struct(
        self,
        struct_name: &'static str,
        _len: usize,
    ) -> Result<StructSer<'py>, SerError> {
        StructSer::new(self.py, struct_name, None)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<StructSer<'py>, SerError> {
        // The variant's fields go into a dict (variant names are not class names).
        Ok(StructSer {
            py: self.py,
            target: Target::Dict(PyDict::new(self.py)),
            variant: Some(variant),
        })
    }
}

impl<'py> ser::SerializeSeq for SeqSer<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = SerError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        self.items.push(value.serialize(Ser {
            py: self.py,
            share: false,
        })?);
        Ok(())
    }
    fn end(self) -> R<'py> {
        self.finish()
    }
}

/// Tuples, tuple structs and tuple variants are sequences: each of serde's
/// traits for them (`trait: method`) forwards its element to
/// [`ser::SerializeSeq`].
macro_rules! as_sequence {
    ($($trait:ident: $method:ident,)*) => {
        $(
            impl<'py> ser::$trait for SeqSer<'py> {
                type Ok = Bound<'py, PyAny>;
                type Error = SerError;
                fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
                    ser::SerializeSeq::serialize_element(self, value)
                }
                fn end(self) -> R<'py> {
                    self.finish()
                }
            }
        )*
    };
}

as_sequence! {
    SerializeTuple: serialize_element,
    SerializeTupleStruct: serialize_field,
    SerializeTupleVariant: serialize_field,
}

impl<'py> ser::SerializeMap for MapSer<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = SerError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), SerError> {
        self.key = Some(key.serialize(Ser {
            py: self.py,
            share: false,
        })?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerError> {
        let k = self
            .key
            .take()
            .ok_or_else(|| <SerError as ser::Error>::custom("map value without a key"))?;
        self.dict.set_item(
            k,
            value.serialize(Ser {
                py: self.py,
                share: false,
            })?,
        )?;
        Ok(())
    }
    fn end(self) -> R<'py> {
        Ok(self.dict.into_any())
    }
}

impl<'py> ser::SerializeStruct for StructSer<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = SerError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SerError> {
        self.field(key, value)
    }
    fn end(self) -> R<'py> {
        self.finish()
    }
}

impl<'py> ser::SerializeStructVariant for StructSer<'py> {
    type Ok = Bound<'py, PyAny>;
    type Error = SerError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SerError> {
        self.field(key, value)
    }
    fn end(self) -> R<'py> {
        self.finish()
    }
}
