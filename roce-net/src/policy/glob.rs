//! Interface-name globs: `*` matches any run of characters, `?` one character.

/// True when `name` matches `pattern` (`*` = any run, `?` = one character).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0usize, 0usize);
    // Position of the last `*` and the name position it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
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
    }
}
