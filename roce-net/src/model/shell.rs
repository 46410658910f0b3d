//! One word of a command printed for people to run (fix commands, hints).

/// `s` as one word for a POSIX shell: unchanged when the shell reads it as one
/// word as it is (letters, digits and `._-:@%+=,/`), else in single quotes
/// (`'` written as `'\''`). Host, namespace and path names in the commands
/// roce-net suggests come from snapshots and the command line, so they are
/// quoted rather than trusted.
pub fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-:@%+=,/".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn plain_words_stay_others_are_single_quoted() {
        assert_eq!(shell_word("rnt-demo-1-0-host"), "rnt-demo-1-0-host");
        assert_eq!(shell_word("/tmp/a.b/c"), "/tmp/a.b/c");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$(reboot)"), "'$(reboot)'");
    }
}
