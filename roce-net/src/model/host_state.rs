use super::{
    Address, Interface, Neighbor, RdmaDevice, Route, Rule, SysctlView, VerbsView, Warning,
};
use crate::error::{Error, ErrorKind, Result};
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

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
    /// The lines of roce-net's own names file
    /// (`iproute2/rt_tables.d/roce-net.conf`) among them: the names roce-net
    /// registered, which it may rename or remove (an admin's names in other
    /// files it never touches). `None` (absent from the JSON) when that file
    /// names no table, or in a snapshot taken before roce-net recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_table_names: Option<BTreeMap<u32, String>>,
    /// RDMA devices.
    pub rdma: Vec<RdmaDevice>,
    /// The same devices as libibverbs reports them, when the snapshot was taken
    /// with the verbs view (`roce-net snapshot --verbs`); compared with `rdma` by
    /// the doctor. Absent from the JSON when not taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbs: Option<VerbsView>,
    /// Parts that could not be read.
    #[serde(default)]
    pub warnings: Vec<Warning>,
}

/// How [`HostState::write_to`] / [`HostState::save`] write a snapshot.
///
/// The default is what ships best: compact JSON, uncompressed. Both forms and
/// their gzip-compressed versions are the same document (see docs/cli.md,
/// "Snapshot schema") and [`HostState::load`] reads all four.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SnapshotFormat {
    /// Indented JSON, one value per line (for people; about 3.5x larger).
    pub pretty: bool,
    /// gzip-compress the JSON (RFC 1952; `gzip -d` and `zcat` read it).
    pub gzip: bool,
}

impl SnapshotFormat {
    /// The deflate level used when compressing: 1 (fastest). Snapshots are highly
    /// repetitive, so level 1 already shrinks them 8-10x; higher levels cost
    /// several times the CPU for a few percent.
    pub const GZIP_LEVEL: u32 = 1;

    /// The format a file name asks for: gzip when it ends in `.gz`.
    pub fn for_path(path: &Path, pretty: bool) -> SnapshotFormat {
        SnapshotFormat {
            pretty,
            gzip: path.extension().is_some_and(|e| e == "gz"),
        }
    }
}

/// Read a whole snapshot stream, bounded, decompressing gzip when it starts with
/// gzip's magic bytes.
fn read_snapshot_bytes<R: Read>(r: R, limit: u64) -> Result<Vec<u8>> {
    let too_big = || {
        Error::new(
            ErrorKind::Parse,
            format!(
                "snapshot is larger than {limit} bytes (uncompressed); not a roce-net \
                 snapshot, or a host far beyond what roce-net reads in one piece"
            ),
        )
    };
    let mut raw = Vec::new();
    r.take(limit + 1)
        .read_to_end(&mut raw)
        .map_err(|e| Error::io(e, "reading snapshot"))?;
    if raw.len() as u64 > limit {
        return Err(too_big());
    }
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    let mut out = Vec::with_capacity(raw.len().saturating_mul(8));
    MultiGzDecoder::new(raw.as_slice())
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::io(e, "decompressing gzip snapshot").with_kind(ErrorKind::Parse))?;
    if out.len() as u64 > limit {
        return Err(too_big());
    }
    Ok(out)
}

impl HostState {
    /// The JSON schema version this library writes and reads.
    pub const SCHEMA_VERSION: u32 = 1;

    /// The largest snapshot [`HostState::load`] reads, in bytes of JSON (after
    /// decompression): 1 GiB, about ten full Internet routing tables.
    pub const MAX_SNAPSHOT_BYTES: u64 = 1 << 30;

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
            own_table_names: None,
            rdma: Vec::new(),
            verbs: None,
            warnings: Vec::new(),
        }
    }

    /// Parse a snapshot from JSON text (compact or pretty).
    ///
    /// A document of another schema version gets a clear error naming both
    /// versions rather than a field-by-field one.
    pub fn from_json(text: &str) -> Result<HostState> {
        Self::from_json_slice(text.as_bytes())
    }

    /// Parse a snapshot from JSON bytes (compact or pretty), as [`HostState::from_json`].
    pub fn from_json_slice(bytes: &[u8]) -> Result<HostState> {
        // One pass in the common case: parse straight into the typed snapshot, then
        // check the version it declares. Only when that fails is the document
        // probed for its schema_version, so the error can say "other version"
        // instead of naming the first field that changed.
        match serde_json::from_slice::<HostState>(bytes) {
            Ok(st) if st.schema_version == Self::SCHEMA_VERSION => st.check().map(|()| st),
            Ok(st) => Err(Self::version_error(u64::from(st.schema_version))),
            Err(e) => {
                #[derive(Deserialize)]
                struct Probe {
                    schema_version: Option<serde_json::Value>,
                }
                match serde_json::from_slice::<Probe>(bytes) {
                    Err(_) if e.is_syntax() || e.is_eof() => Err(Error::new(
                        ErrorKind::Parse,
                        format!("snapshot is not valid JSON ({e}); is the file truncated?"),
                    )),
                    Ok(Probe {
                        schema_version: Some(v),
                    }) => match v.as_u64() {
                        Some(n) if n != u64::from(Self::SCHEMA_VERSION) => {
                            Err(Self::version_error(n))
                        }
                        _ => Err(Error::new(
                            ErrorKind::Parse,
                            format!("snapshot does not match the schema: {e}"),
                        )),
                    },
                    Ok(Probe {
                        schema_version: None,
                    }) => Err(Error::new(
                        ErrorKind::Parse,
                        "not a roce-net snapshot: no schema_version field",
                    )),
                    Err(_) => Err(Error::new(
                        ErrorKind::Parse,
                        format!("snapshot does not match the schema: {e}"),
                    )),
                }
            }
        }
    }

    /// What the schema's types let through but no kernel could have reported: a
    /// prefix longer than its address family, an interface name the kernel would
    /// refuse (a NUL, `/`, `:`, whitespace, more than 15 bytes, a bad `\xNN`
    /// escape). A snapshot is read to plan changes on a host; a value like these
    /// would reach a plan, a rendering or a message unchecked.
    fn check(&self) -> Result<()> {
        let bad = |at: String, msg: String| {
            Err(Error::new(
                ErrorKind::Parse,
                format!(
                    "snapshot does not match the schema: {at}: {msg}; capture the snapshot \
                     again with `roce-net snapshot`"
                ),
            ))
        };
        let name = |at: String, n: &str| -> Result<()> {
            let ok = super::ifname::ifname_to_kernel(n)
                .map(|raw| super::ifname::ifname_is_valid(&raw))
                .unwrap_or(false);
            if ok {
                Ok(())
            } else {
                bad(
                    at,
                    format!(
                        "{} is not an interface name the kernel accepts (1-15 bytes, no \
                         NUL, '/', ':' or whitespace)",
                        crate::input::excerpt(n, 32)
                    ),
                )
            }
        };
        for (i, l) in self.interfaces.iter().enumerate() {
            name(format!("interfaces[{i}].name"), &l.name)?;
            if let Some(m) = &l.master {
                name(format!("interfaces[{i}].master"), m)?;
            }
        }
        for (i, a) in self.addresses.iter().enumerate() {
            name(format!("addresses[{i}].ifname"), &a.ifname)?;
            let max = if a.address.is_ipv4() { 32 } else { 128 };
            if a.prefix_len > max {
                return bad(
                    format!("addresses[{i}].prefix_len"),
                    format!(
                        "{} is longer than {max} bits, the most an {} address has",
                        a.prefix_len,
                        if max == 32 { "IPv4" } else { "IPv6" }
                    ),
                );
            }
        }
        for (i, n) in self.neighbors.iter().enumerate() {
            name(format!("neighbors[{i}].ifname"), &n.ifname)?;
        }
        for (i, r) in self.routes.iter().enumerate() {
            if let Some(d) = &r.dev {
                name(format!("routes[{i}].dev"), d)?;
            }
            for (j, nh) in r.multipath.iter().enumerate() {
                if let Some(d) = &nh.dev {
                    name(format!("routes[{i}].multipath[{j}].dev"), d)?;
                }
            }
        }
        for (i, r) in self.rules.iter().enumerate() {
            for (field, v) in [("iif", &r.iif), ("oif", &r.oif)] {
                if let Some(d) = v {
                    name(format!("rules[{i}].{field}"), d)?;
                }
            }
        }
        Ok(())
    }

    fn version_error(n: u64) -> Error {
        Error::new(
            ErrorKind::Parse,
            format!(
                "snapshot has schema_version {n}, this roce-net reads version {}; \
                 capture it again with this version",
                Self::SCHEMA_VERSION
            ),
        )
    }

    /// Serialise to pretty JSON (for people; files and pipes get
    /// [`HostState::write_to`], compact by default).
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Stream the snapshot into `w` in `format`: JSON serialised straight into a
    /// buffered writer (no intermediate string), optionally gzip-compressed, with a
    /// final newline. The writer is flushed (and a gzip stream finished) before
    /// this returns, so an error writing the last bytes is reported.
    pub fn write_to<W: Write>(&self, w: W, format: SnapshotFormat) -> std::io::Result<()> {
        fn json<W: Write>(st: &HostState, mut w: W, pretty: bool) -> std::io::Result<W> {
            if pretty {
                serde_json::to_writer_pretty(&mut w, st)?;
            } else {
                serde_json::to_writer(&mut w, st)?;
            }
            w.write_all(b"\n")?;
            Ok(w)
        }
        let buf = BufWriter::with_capacity(1 << 16, w);
        if format.gzip {
            // The serialiser writes a few bytes at a time; deflate wants large
            // blocks (fed byte-sized writes it runs ~20x slower), so it gets its
            // input through a buffer of its own.
            let gz = GzEncoder::new(buf, Compression::new(SnapshotFormat::GZIP_LEVEL));
            let input = json(self, BufWriter::with_capacity(1 << 16, gz), format.pretty)?;
            let gz = input.into_inner().map_err(|e| e.into_error())?;
            gz.finish()?.flush()
        } else {
            json(self, buf, format.pretty)?.flush()
        }
    }

    /// Write the snapshot to a file in `format` (see [`HostState::write_to`]). The
    /// file is written under a random temporary name in the same directory
    /// (never through a link planted there) and renamed into place, so a reader
    /// never sees half a snapshot and a failed write leaves any previous file
    /// untouched.
    pub fn save(&self, path: &Path, format: SnapshotFormat) -> Result<()> {
        // A random temporary name, never a link (files/atomic.rs): the
        // directory may be another account's.
        crate::files::atomic::replace_with(path, &mut |f| self.write_to(&*f, format))
    }

    /// Read a snapshot from a stream holding JSON (compact or pretty) or gzip-
    /// compressed JSON, told apart by the gzip magic bytes (`1f 8b`). At most
    /// [`HostState::MAX_SNAPSHOT_BYTES`] are read, before and after decompression.
    pub fn read_from<R: Read>(r: R) -> Result<HostState> {
        let bytes = read_snapshot_bytes(r, Self::MAX_SNAPSHOT_BYTES)?;
        Self::from_json_slice(&bytes)
    }

    /// Read a snapshot file, JSON or gzip-compressed JSON (see
    /// [`HostState::read_from`]); errors name the file.
    pub fn load(path: &Path) -> Result<HostState> {
        let f = crate::input::open_input(path, crate::input::InputKind::Snapshot)?;
        Self::read_from(f).map_err(|e| e.context(format!("in snapshot {}", path.display())))
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

    /// The name roce-net's own names file gives table `id` when the name is
    /// this namespace's: it ends with the interface of one of roce-net's
    /// routes (`protocol`) in that table here. Names are host-wide but table
    /// numbers per namespace, so only such a name is this namespace's to
    /// rename or remove (another namespace's NICs, an admin's names in other
    /// files, are never touched).
    pub(crate) fn own_table_name_here(&self, id: u32, protocol: u8) -> Option<&str> {
        let name = self.own_table_names.as_ref()?.get(&id)?;
        self.routes
            .iter()
            .any(|r| {
                r.table == id
                    && r.protocol == protocol
                    && r.dev.as_deref().is_some_and(|d| name.ends_with(d))
            })
            .then_some(name.as_str())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> HostState {
        let mut st = HostState::empty("gpu-7");
        st.table_names.insert(1001, "roce0".into());
        st.warnings.push(Warning {
            source: "sysfs".into(),
            message: "quote \" and newline \n survive".into(),
        });
        st
    }

    fn bytes(st: &HostState, pretty: bool, gzip: bool) -> Vec<u8> {
        let mut v = Vec::new();
        st.write_to(&mut v, SnapshotFormat { pretty, gzip })
            .unwrap();
        v
    }

    #[test]
    fn all_four_formats_read_back_to_the_same_snapshot() {
        let st = sample();
        for (pretty, gzip) in [(false, false), (true, false), (false, true), (true, true)] {
            let b = bytes(&st, pretty, gzip);
            assert_eq!(b.starts_with(&[0x1f, 0x8b]), gzip);
            assert_eq!(
                HostState::read_from(b.as_slice()).unwrap(),
                st,
                "{pretty} {gzip}"
            );
        }
    }

    #[test]
    fn compact_is_one_line_and_pretty_is_the_library_s_pretty_json() {
        let st = sample();
        let compact = String::from_utf8(bytes(&st, false, false)).unwrap();
        assert_eq!(compact.lines().count(), 1);
        assert!(compact.ends_with("}\n"));
        assert_eq!(compact.trim_end(), serde_json::to_string(&st).unwrap());
        let pretty = String::from_utf8(bytes(&st, true, false)).unwrap();
        assert_eq!(pretty, st.to_json() + "\n");
    }

    #[test]
    fn gzip_is_standard_gzip() {
        // Multi-member streams (`cat a.gz b.gz`, what some tools append) decode
        // as one; a decoder that stopped after the first member would see
        // trailing garbage here.
        let st = sample();
        let json = serde_json::to_vec(&st).unwrap();
        let (a, b) = json.split_at(json.len() / 2);
        let mut two = Vec::new();
        for part in [a, b] {
            let mut e = GzEncoder::new(Vec::new(), Compression::default());
            e.write_all(part).unwrap();
            two.extend(e.finish().unwrap());
        }
        assert_eq!(HostState::read_from(two.as_slice()).unwrap(), st);
    }

    #[test]
    fn reads_are_bounded_before_and_after_decompression() {
        let st = sample();
        let plain = bytes(&st, false, false);
        let limit = plain.len() as u64 - 1;
        let e = read_snapshot_bytes(plain.as_slice(), limit).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Parse);
        assert!(
            e.message().contains(&format!("larger than {limit} bytes")),
            "{e}"
        );
        // A small gzip stream that inflates past the limit (a "zip bomb") is
        // refused after reading at most limit + 1 bytes of it.
        let mut enc = GzEncoder::new(Vec::new(), Compression::best());
        enc.write_all(&vec![b' '; 1 << 20]).unwrap();
        let bomb = enc.finish().unwrap();
        assert!(bomb.len() < 4096);
        let e = read_snapshot_bytes(bomb.as_slice(), 1 << 16).unwrap_err();
        assert!(e.message().contains("larger than 65536 bytes"), "{e}");
        assert_eq!(
            read_snapshot_bytes(plain.as_slice(), plain.len() as u64).unwrap(),
            plain
        );
    }

    #[test]
    fn broken_inputs_get_clear_errors() {
        let st = sample();
        let gz = bytes(&st, false, true);
        let e = HostState::read_from(&gz[..gz.len() / 2]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Parse);
        assert!(e.to_string().contains("decompressing gzip snapshot"), "{e}");
        let plain = bytes(&st, false, false);
        let e = HostState::read_from(&plain[..plain.len() / 2]).unwrap_err();
        assert!(e.message().contains("is the file truncated?"), "{e}");
        let mut v: serde_json::Value = serde_json::from_slice(&plain).unwrap();
        v["schema_version"] = 2.into();
        let e = HostState::from_json(&v.to_string()).unwrap_err();
        assert!(
            e.message()
                .contains("schema_version 2, this roce-net reads version 1"),
            "{e}"
        );
        // Another version whose fields changed too: still named by its version.
        v["routes"] = "moved".into();
        let e = HostState::from_json(&v.to_string()).unwrap_err();
        assert!(e.message().contains("schema_version 2,"), "{e}");
        v["schema_version"] = 1.into();
        let e = HostState::from_json(&v.to_string()).unwrap_err();
        assert!(
            e.message()
                .starts_with("snapshot does not match the schema"),
            "{e}"
        );
        let e = HostState::from_json(r#"{"hostname": "x"}"#).unwrap_err();
        assert!(e.message().contains("no schema_version field"), "{e}");
    }

    /// The schema's types took `prefix_len: 200` and a NUL in an interface name.
    #[test]
    fn impossible_prefixes_and_interface_names_are_refused() {
        let mut st = sample();
        st.interfaces.push(crate::model::Interface {
            index: 2,
            name: "r1".into(),
            kind: None,
            mac: None,
            mtu: 1500,
            admin_up: true,
            oper_state: Default::default(),
            carrier: None,
            master: None,
            stats: Default::default(),
            ethtool_stats: None,
            qos: None,
        });
        st.addresses.push(crate::model::Address {
            ifname: "r1".into(),
            ifindex: 2,
            address: "198.18.0.1".parse().unwrap(),
            prefix_len: 24,
            scope: crate::model::Scope::Universe,
            label: None,
            secondary: false,
            flags: Vec::new(),
        });
        let good = serde_json::to_value(&st).unwrap();
        assert!(HostState::from_json(&good.to_string()).is_ok());
        let refused = |v: serde_json::Value| {
            let e = HostState::from_json(&v.to_string()).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Parse, "{e}");
            e.to_string()
        };
        let mut v = good.clone();
        v["addresses"][0]["prefix_len"] = 200.into();
        let e = refused(v);
        assert!(
            e.contains("addresses[0].prefix_len: 200 is longer than 32 bits"),
            "{e}"
        );
        let mut v = good.clone();
        v["addresses"][0]["address"] = "2001:db8::1".into();
        v["addresses"][0]["prefix_len"] = 129.into();
        assert!(refused(v).contains("longer than 128 bits"));
        for (field, bad) in [
            ("name", "r\u{0}1"),
            ("name", "r\\x001"),
            ("name", "a/b"),
            ("name", "0123456789abcdef"),
            ("name", "r\\q"),
        ] {
            let mut v = good.clone();
            v["interfaces"][0][field] = bad.into();
            let e = refused(v);
            assert!(
                e.contains("interfaces[0].name:") && e.contains("not an interface name"),
                "{e}"
            );
        }
        let mut v = good.clone();
        v["addresses"][0]["ifname"] = "r\u{0}".into();
        assert!(refused(v).contains("addresses[0].ifname"));
        // Escaped raw bytes the kernel allows stay fine.
        let mut v = good;
        v["interfaces"][0]["name"] = "r\\xff".into();
        assert!(HostState::from_json(&v.to_string()).is_ok());
    }

    #[test]
    fn save_writes_atomically_in_the_format_the_name_asks_for() {
        let dir = tempfile::tempdir().unwrap();
        let st = sample();
        let gz = dir.path().join("h.json.gz");
        st.save(&gz, SnapshotFormat::for_path(&gz, false)).unwrap();
        assert!(std::fs::read(&gz).unwrap().starts_with(&[0x1f, 0x8b]));
        assert_eq!(HostState::load(&gz).unwrap(), st);
        let js = dir.path().join("h.json");
        st.save(&js, SnapshotFormat::for_path(&js, true)).unwrap();
        assert_eq!(std::fs::read_to_string(&js).unwrap(), st.to_json() + "\n");
        // Only the two snapshots: no temporary file left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        // A directory that does not exist: an error naming the file, nothing written.
        let missing = dir.path().join("no/such/dir/h.json");
        let e = st.save(&missing, SnapshotFormat::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.to_string().contains("no/such/dir/h.json"), "{e}");
    }
}
