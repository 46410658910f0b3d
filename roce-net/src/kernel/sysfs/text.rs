//! Small helpers for sysfs attribute text.
use crate::model::Warning;
use std::io;
use std::path::Path;

/// Read a sysfs attribute, with surrounding whitespace (the trailing newline) removed.
///
/// The kernel fills an attribute from one page at most; the read is bounded
/// (`crate::input::read_attribute`: a regular file of at most 4 KiB, opened without
/// blocking), so a FIFO or a huge file planted under a `--sysfs-root` is an error,
/// not a hang or a flood.
pub(crate) fn read_attr(path: &Path) -> io::Result<String> {
    let buf = read_attr_bytes(path)?;
    let s = String::from_utf8(buf)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "content is not valid UTF-8"))?;
    Ok(s.trim().to_string())
}

/// [`read_attr`] as raw bytes with surrounding ASCII whitespace removed (for
/// attributes that hold an interface name, which need not be UTF-8).
pub(crate) fn read_attr_bytes(path: &Path) -> io::Result<Vec<u8>> {
    let buf = crate::input::read_attribute(path)?;
    Ok(buf.trim_ascii().to_vec())
}

/// Record a warning about a path (bounded and escaped: see `crate::model::Warning::about_file`).
pub(crate) fn warn(warnings: &mut Vec<Warning>, path: &Path, message: String) {
    warnings.push(crate::model::Warning::about_file(path, message));
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
