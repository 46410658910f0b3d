use super::{Address, Interface, Neighbor, RdmaDevice, Route, Rule, SysctlView};
use crate::error::{Error, ErrorKind, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Something that could not be read, so the snapshot is partial there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Warning {
    /// What was being read (a path, or a netlink object class).
    pub source: String,
    /// What went wrong.
    pub message: String,
}

/// One typed, serialisable snapshot of a host's (or a namespace's) networking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HostState {
    /// Schema version of this document; see [`HostState::SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Host name (`uname -n`) at capture time.
    pub hostname: String,
    /// Network namespace name, when captured through `Host::netns`.
    pub netns: Option<String>,
    /// Capture time, seconds since the Unix epoch.
    pub captured_at: u64,
    /// Links.
    pub interfaces: Vec<Interface>,
    /// IP addresses.
    pub addresses: Vec<Address>,
    /// Neighbour table entries.
    pub neighbors: Vec<Neighbor>,
    /// Routes in every table.
    pub routes: Vec<Route>,
    /// Policy rules.
    pub rules: Vec<Rule>,
    /// Sysctls.
    pub sysctls: SysctlView,
    /// Routing table names (`rt_tables`, `rt_tables.d/*.conf`).
    pub table_names: BTreeMap<u32, String>,
    /// RDMA devices.
    pub rdma: Vec<RdmaDevice>,
    /// Parts that could not be read.
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

impl HostState {
    /// The JSON schema version this library writes and reads.
    pub const SCHEMA_VERSION: u32 = 1;

    /// An empty snapshot (useful for tests and builders).
    pub fn empty(hostname: &str) -> HostState {
        HostState {
            schema_version: Self::SCHEMA_VERSION,
            hostname: hostname.to_string(),
            netns: None,
            captured_at: 0,
            interfaces: Vec::new(),
            addresses: Vec::new(),
            neighbors: Vec::new(),
            routes: Vec::new(),
            rules: Vec::new(),
            sysctls: SysctlView::default(),
            table_names: BTreeMap::new(),
            rdma: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Parse a snapshot from JSON, checking the schema version first so a document
    /// from another version gets a clear error rather than a field-by-field one.
    pub fn from_json(text: &str) -> Result<HostState> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            Error::new(
                ErrorKind::Parse,
                format!("snapshot is not valid JSON ({e}); is the file truncated?"),
            )
        })?;
        match v.get("schema_version").and_then(|s| s.as_u64()) {
            Some(n) if n == u64::from(Self::SCHEMA_VERSION) => {}
            Some(n) => {
                return Err(Error::new(
                    ErrorKind::Parse,
                    format!(
                        "snapshot has schema_version {n}, this roce-net reads version {}; \
                         capture it again with this version",
                        Self::SCHEMA_VERSION
                    ),
                ))
            }
            None => {
                return Err(Error::new(
                    ErrorKind::Parse,
                    "not a roce-net snapshot: no schema_version field",
                ))
            }
        }
        serde_json::from_value(v).map_err(|e| {
            Error::new(
                ErrorKind::Parse,
                format!("snapshot does not match the schema: {e}"),
            )
        })
    }

    /// Serialise to pretty JSON.
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Read a snapshot file.
    pub fn load(path: &Path) -> Result<HostState> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(e, format!("reading snapshot {}", path.display())))?;
        Self::from_json(&text).map_err(|e| e.context(format!("in snapshot {}", path.display())))
    }

    /// Look up an interface by name.
    pub fn interface(&self, name: &str) -> Option<&Interface> {
        self.interfaces.iter().find(|i| i.name == name)
    }

    /// Look up an interface by index.
    pub fn interface_by_index(&self, index: u32) -> Option<&Interface> {
        self.interfaces.iter().find(|i| i.index == index)
    }

    /// Addresses on one interface.
    pub fn addresses_of<'a>(
        &'a self,
        ifname: &'a str,
    ) -> impl Iterator<Item = &'a super::Address> + 'a {
        self.addresses.iter().filter(move |a| a.ifname == ifname)
    }

    /// The name of a routing table: from rt_tables, else its number.
    pub fn table_name(&self, id: u32) -> String {
        match self.table_names.get(&id) {
            Some(n) => n.clone(),
            None => match id {
                super::RT_TABLE_MAIN => "main".into(),
                super::RT_TABLE_LOCAL => "local".into(),
                super::RT_TABLE_DEFAULT => "default".into(),
                n => n.to_string(),
            },
        }
    }
}
