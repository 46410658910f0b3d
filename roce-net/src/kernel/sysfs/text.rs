//! Small helpers for sysfs attribute text.
use crate::model::Warning;
use std::io::{self, Read};
use std::path::Path;

/// Read a sysfs attribute, with surrounding whitespace (the trailing newline) removed.
///
/// sysfs attributes are at most a page, so one small buffer and one `read` usually
/// suffice; this keeps a 2048-slot GID scan cheap.
pub(crate) fn read_attr(path: &Path) -> io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut buf = Vec::with_capacity(64);
    f.read_to_end(&mut buf)?;
    let s = String::from_utf8(buf)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "content is not valid UTF-8"))?;
    Ok(s.trim().to_string())
}

/// Record a warning about a path.
pub(crate) fn warn(warnings: &mut Vec<Warning>, path: &Path, message: String) {
    warnings.push(Warning {
        source: path.display().to_string(),
        message,
    });
}

/// The name part of the kernel's `<number>: <name>` enum text (`4: ACTIVE` ->
/// `ACTIVE`, `5: LinkUp` -> `LinkUp`); `None` when the text has another shape.
pub fn strip_enum_prefix(s: &str) -> Option<&str> {
    let (num, name) = s.split_once(':')?;
    let name = name.trim();
    if num.trim().is_empty() || !num.trim().bytes().all(|b| b.is_ascii_digit()) || name.is_empty() {
        return None;
    }
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn enum_prefix() {
        assert_eq!(strip_enum_prefix("4: ACTIVE"), Some("ACTIVE"));
        assert_eq!(strip_enum_prefix("5: LinkUp"), Some("LinkUp"));
        assert_eq!(strip_enum_prefix("3: Disabled"), Some("Disabled"));
        assert_eq!(strip_enum_prefix("LinkUp"), None);
        assert_eq!(strip_enum_prefix("x: LinkUp"), None);
        assert_eq!(strip_enum_prefix("4:"), None);
    }
}
