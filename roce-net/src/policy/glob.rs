//! Name globs, the one matcher for both kinds roce-net reads:
//!
//! * the policy's NIC names ([`glob_match`]): `*` matches any run of
//!   characters, `?` one character, everything else itself;
//! * fnmatch(3) without flags ([`fnmatch`]), as systemd's `strv_fnmatch`
//!   (`[Match] Name=`), netplan's `match: name:` and ifupdown's `source` use
//!   it: also bracket expressions (`[a-z]`, `[!0-9]`, `[^x]`) and `\` escapes.
//!
//! Matching is linear in practice and O(pattern × name) at worst: each `*` is
//! tried greedily and only the last one is ever backtracked to (a later `*`
//! can absorb whatever an earlier one would have), so a pattern like
//! `*a*a*a*a*b` against a long run of `a` cannot explode the way a recursive
//! matcher does.

/// One element of a parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// `*`.
    Star,
    /// `?`.
    Any,
    /// A literal character.
    Char(char),
    /// A bracket expression: its ranges (single characters as `c..=c`), negated.
    Class(Vec<(char, char)>, bool),
}

impl Token {
    fn matches(&self, c: char) -> bool {
        match self {
            Token::Star => true,
            Token::Any => true,
            Token::Char(x) => *x == c,
            Token::Class(ranges, neg) => ranges.iter().any(|(a, b)| *a <= c && c <= *b) != *neg,
        }
    }
}

/// The bracket expression starting at `p[0] == '['`: the token and its length,
/// or `None` when it is not closed (then `[` is a literal, as in fnmatch).
fn class(p: &[char]) -> Option<(Token, usize)> {
    let mut i = 1;
    let neg = matches!(p.get(i), Some('!') | Some('^'));
    if neg {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((Token::Class(ranges, neg), i + 1));
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            ranges.push((p[i], p[i + 2]));
            i += 3;
        } else {
            ranges.push((p[i], p[i]));
            i += 1;
        }
    }
    None
}

fn parse(pattern: &str, fnmatch: bool) -> Vec<Token> {
    let p: Vec<char> = pattern.chars().collect();
    let mut out = Vec::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            // Runs of `*` are one `*`.
            '*' if out.last() == Some(&Token::Star) => i += 1,
            '*' => {
                out.push(Token::Star);
                i += 1;
            }
            '?' => {
                out.push(Token::Any);
                i += 1;
            }
            '[' if fnmatch => match class(&p[i..]) {
                Some((t, len)) => {
                    out.push(t);
                    i += len;
                }
                None => {
                    out.push(Token::Char('['));
                    i += 1;
                }
            },
            '\\' if fnmatch && i + 1 < p.len() => {
                out.push(Token::Char(p[i + 1]));
                i += 2;
            }
            c => {
                out.push(Token::Char(c));
                i += 1;
            }
        }
    }
    out
}

/// Greedy matching with one backtrack point: the last `*` and the name
/// position it was last tried at.
fn matches(p: &[Token], n: &[char]) -> bool {
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some(Token::Star) => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(t) if t.matches(n[ni]) => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|t| *t == Token::Star)
}

/// True when `name` matches the policy glob `pattern` (`*` = any run, `?` = one
/// character; `[` and `\` are themselves).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let n: Vec<char> = name.chars().collect();
    matches(&parse(pattern, false), &n)
}

/// fnmatch(3) without flags: `*`, `?`, bracket expressions (`[a-z]`, `[!0-9]`;
/// an unclosed `[` is literal) and `\` escapes.
pub(crate) fn fnmatch(pattern: &str, name: &str) -> bool {
    let n: Vec<char> = name.chars().collect();
    matches(&parse(pattern, true), &n)
}

/// True when the pattern contains glob characters.
pub(crate) fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?'])
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn globs() {
        assert!(glob_match("r*", "r1"));
        assert!(glob_match("r*", "r"));
        assert!(glob_match("*", "eth0.100"));
        assert!(glob_match("mlx5_?", "mlx5_3"));
        assert!(!glob_match("mlx5_?", "mlx5_10"));
        assert!(glob_match("en*f?np*", "ens1f0np0"));
        assert!(!glob_match("r*", "eth0"));
        assert!(glob_match("r1", "r1"));
        assert!(!glob_match("r1", "r10"));
        assert!(glob_match("*1", "r1"));
        assert!(!glob_match("*1", "r12"));
        // The policy's globs have no brackets: `[` is a character.
        assert!(glob_match("r[0]*", "r[0]x"));
        assert!(!glob_match("r[0]*", "r0x"));
    }

    #[test]
    fn fnmatch_globs() {
        assert!(fnmatch("en*", "ens1f0np0"));
        assert!(fnmatch("r[0-3]", "r2"));
        assert!(!fnmatch("r[!0-3]", "r2"));
        assert!(fnmatch("r[^0-3]", "r7"));
        assert!(fnmatch("r?.100", "r0.100"));
        assert!(!fnmatch("r*", "eth0"));
        assert!(fnmatch("*", ""));
        assert!(!fnmatch("?", ""));
        assert!(fnmatch("[]]x", "]x"));
        assert!(fnmatch("r[", "r["));
        assert!(fnmatch("a\\*", "a*"));
        assert!(!fnmatch("a\\*", "ab"));
        assert!(fnmatch("*.conf", "10-x.conf"));
        assert!(!fnmatch("*.conf", "10-x.conf~"));
        assert!(fnmatch("a*b*c", "aXbYbZc"));
        assert!(!fnmatch("a*b*c", "aXbYbZ"));
    }

    /// The recursive matcher this replaces tried every split of the name for
    /// every `*`: this pattern against 200 `a`s is C(200, 7) ≈ 2·10^12 steps
    /// there (hours). Here it is at most pattern × name.
    #[test]
    fn many_stars_against_a_long_name_are_linear() {
        let name = "a".repeat(200);
        assert!(!fnmatch("*a*a*a*a*a*a*b", &name));
        assert!(!glob_match("*a*a*a*a*a*a*b", &name));
        assert!(fnmatch("*a*a*a*a*a*a*a", &name));
        let long = "a".repeat(100_000);
        assert!(!fnmatch("*a*a*a*a*a*a*b", &long));
    }
}
