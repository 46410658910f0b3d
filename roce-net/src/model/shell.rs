//! The commands roce-net prints for people to run (fix commands, hints, fleet
//! `ssh` lines), quoted for every shell they pass through.
//!
//! Interface, host, namespace and path names come from the kernel, snapshots
//! (possibly from other nodes or a support bundle) and the command line. The
//! kernel allows `;`, `$`, `(`, `` ` ``, `'`, `|`, `&` and control characters in
//! an interface name, so every name in a printed command is one [`shell_word`];
//! a command that runs in a network namespace is rewritten by [`in_netns`], and
//! one that runs on another host is handed to `ssh` by [`over_ssh`], quoted once
//! more for the remote shell `ssh` passes it to.

/// `s` as one word for a POSIX shell, printable on a terminal:
///
/// - unchanged when the shell reads it as one word as it is (letters, digits and
///   `._-:@%+=,/`);
/// - else in single quotes (`'` written as `'\''`);
/// - a name with control characters (ESC, BEL, ...) is written as
///   `"$(printf '…\033…')"`: the command still names the real object, and the
///   terminal shows `\033` instead of obeying it;
/// - a name ending in a newline (which no interface or host name can have, but a
///   snapshot can) cannot be rebuilt that way (the shell drops trailing newlines
///   of `$(…)`): it is written single-quoted with its control characters escaped
///   as text (`'r0\n'`), visibly not the name, so the command fails rather than
///   acting on another object.
pub fn shell_word(s: &str) -> String {
    shell_word_bytes(s.as_bytes())
}

/// An interface name (the model's escaped form, [`super::ifname_from_kernel`]:
/// `\xNN` for control and non-UTF-8 bytes, `\\` for a backslash) as one shell
/// word naming the kernel's interface: its exact bytes, as [`shell_word`] writes
/// them (control and non-UTF-8 bytes through `printf`). A name whose escapes do
/// not decode (a hand-made snapshot) is quoted as it is, naming nothing.
pub fn ifname_word(name: &str) -> String {
    match super::ifname_to_kernel(name) {
        Ok(b) => shell_word_bytes(&b),
        Err(_) => shell_word(name),
    }
}

/// [`shell_word`] of raw bytes (a kernel name need not be UTF-8).
pub(crate) fn shell_word_bytes(b: &[u8]) -> String {
    let plain = !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"._-:@%+=,/".contains(c));
    if plain {
        return String::from_utf8_lossy(b).into_owned();
    }
    if let Ok(s) = std::str::from_utf8(b) {
        if !s.chars().any(char::is_control) {
            return format!("'{}'", s.replace('\'', r"'\''"));
        }
    }
    if b.ends_with(b"\n") {
        let shown = crate::input::escape_cut(b, usize::MAX, false).0;
        return format!("'{}'", shown.replace('\'', r"'\''"));
    }
    let octal = |fmt: &mut String, bytes: &[u8]| {
        for x in bytes {
            fmt.push_str(&format!("\\{x:03o}"));
        }
    };
    let mut fmt = String::new();
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => fmt.push_str(r"\\"),
                '%' => fmt.push_str("%%"),
                '\'' => fmt.push_str(r"'\''"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    octal(&mut fmt, c.encode_utf8(&mut buf).as_bytes());
                }
                c => fmt.push(c),
            }
        }
        octal(&mut fmt, chunk.invalid());
    }
    format!("\"$(printf '{fmt}')\"")
}

/// `cmd` (a command as roce-net prints it) run in the network namespace `ns`,
/// where the finding it fixes is: `ip ARGS` becomes `ip -n NS ARGS`,
/// `roce-net ARGS` becomes `roce-net --netns NS ARGS`, anything else runs under
/// `ip netns exec NS` (a `|` filter after it runs where the output is read).
/// `None` (the machine's own namespace) leaves it unchanged.
pub fn in_netns(ns: Option<&str>, cmd: &str) -> String {
    let Some(ns) = ns else {
        return cmd.to_string();
    };
    let ns = shell_word(ns);
    if let Some(args) = cmd.strip_prefix("ip ") {
        format!("ip -n {ns} {args}")
    } else if let Some(args) = cmd.strip_prefix("roce-net ") {
        format!("roce-net --netns {ns} {args}")
    } else {
        format!("ip netns exec {ns} {cmd}")
    }
}

/// `ssh HOST 'CMD'`: `ssh` joins its arguments and hands them to a shell on
/// `host`, so the command is quoted as one word for the local shell and arrives
/// as it was printed for the remote one (a command of plain words only, which
/// both shells read alike, is left unquoted: `ssh gpu2 ip link set dev ens1 up`).
/// A host name starting with `-` comes after `--`, so `ssh` cannot take it for
/// an option.
pub fn over_ssh(host: &str, cmd: &str) -> String {
    let dashes = if host.starts_with('-') { "-- " } else { "" };
    let remote = if cmd.split(' ').all(|w| shell_word(w) == w) {
        cmd.to_string()
    } else {
        shell_word(cmd)
    };
    format!("ssh {dashes}{} {remote}", shell_word(host))
}

#[cfg(test)]
mod tests {
    use super::{ifname_word, in_netns, over_ssh, shell_word};

    #[test]
    fn plain_words_stay_others_are_single_quoted() {
        assert_eq!(shell_word("rnt-demo-1-0-host"), "rnt-demo-1-0-host");
        assert_eq!(shell_word("/tmp/a.b/c"), "/tmp/a.b/c");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$(reboot)"), "'$(reboot)'");
    }

    #[test]
    fn control_characters_are_rebuilt_by_printf_and_never_printed_raw() {
        let w = shell_word("r0\u{1b}]0;pwned\u{7}%s\\'");
        assert_eq!(w, r#""$(printf 'r0\033]0;pwned\007%%s\\'\''')""#);
        assert!(!w.chars().any(char::is_control));
        let w = shell_word("r0\n");
        assert_eq!(w, r"'r0\n'");
    }

    /// Interface names are the model's escaped form: the word names the
    /// kernel's bytes (ESC, a non-UTF-8 byte, a backslash).
    #[test]
    fn interface_names_are_written_as_the_kernel_has_them() {
        assert_eq!(ifname_word("r0"), "r0");
        assert_eq!(
            ifname_word(r"r\x1b]0;x\x07"),
            r#""$(printf 'r\033]0;x\007')""#
        );
        assert_eq!(ifname_word(r"r\xff"), r#""$(printf 'r\377')""#);
        assert_eq!(ifname_word(r"a\\b"), r"'a\b'");
        assert_eq!(ifname_word(r"bad\q"), r"'bad\q'");
    }

    #[test]
    fn netns_and_ssh_wrap_the_command() {
        assert_eq!(in_netns(None, "ip link"), "ip link");
        assert_eq!(in_netns(Some("a b"), "ip link"), "ip -n 'a b' link");
        assert_eq!(
            in_netns(Some("n"), "sysctl -w x=1"),
            "ip netns exec n sysctl -w x=1"
        );
        assert_eq!(
            in_netns(Some("n"), "roce-net show"),
            "roce-net --netns n show"
        );
        assert_eq!(
            over_ssh("h", "ip -n n link set dev 'a;b' up"),
            r"ssh h 'ip -n n link set dev '\''a;b'\'' up'"
        );
        assert_eq!(over_ssh("-oX=y", "true"), "ssh -- -oX=y true");
        assert_eq!(over_ssh("h", "ip -n n link"), "ssh h ip -n n link");
        assert_eq!(over_ssh("h", "cat /x/*/y"), "ssh h 'cat /x/*/y'");
    }
}
