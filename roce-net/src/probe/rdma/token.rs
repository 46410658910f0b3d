//! The probe's access control: a shared token both ends prove they hold
//! before either sends anything that identifies it.
//!
//! The proof is a challenge-response over two fresh nonces, HMAC-SHA256 keyed
//! by the token (RFC 2104), one label per direction so a proof cannot be sent
//! back as the other end's:
//!
//! ```text
//! client  Greeting{nonce_c}                               (nothing identifying)
//! server  Challenge{nonce_s, HMAC(token, "server" | nonce_c | nonce_s)}
//! client  checks it, then Hello{endpoint, params, HMAC(token, "client" | nonce_c | nonce_s)}
//! server  checks it, then Hello{endpoint}
//! ```
//!
//! Without a token the key is empty: both ends run the same exchange, and a
//! token on one end only fails the check on both (each end tells which of the
//! two it was). The token authenticates the ends to each other; it does not
//! encrypt: whoever is on the path sees the exchange, as with perftest.

use crate::error::{Error, ErrorKind, Result};
use crate::input::{read_input, InputKind};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::path::Path;

/// The fewest bytes a token may have (128 bits): a proof a stranger obtains
/// from a server must not be worth guessing the token from offline.
pub const TOKEN_MIN_BYTES: usize = 16;
/// The most bytes a token may have.
pub const TOKEN_MAX_BYTES: usize = 1024;
/// Bytes of a nonce (sent as hex).
const NONCE_BYTES: usize = 16;

/// The secret both ends of a probe must hold: `roce-net probe rdma
/// --token-file` (or `ROCE_NET_PROBE_TOKEN`), `token=` in Python, `token` in
/// Ansible. Its bytes are never shown (`Debug` prints `ProbeToken(..)`).
#[derive(Clone, PartialEq, Eq)]
pub struct ProbeToken(Vec<u8>);

impl std::fmt::Debug for ProbeToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProbeToken(..)")
    }
}

impl ProbeToken {
    /// A token from its bytes: `InvalidInput` unless it has
    /// [`TOKEN_MIN_BYTES`] to [`TOKEN_MAX_BYTES`] bytes. `openssl rand -hex 32`
    /// makes a good one.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<ProbeToken> {
        let b = bytes.into();
        if b.len() < TOKEN_MIN_BYTES || b.len() > TOKEN_MAX_BYTES {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "a probe token of {} bytes: give {TOKEN_MIN_BYTES} to {TOKEN_MAX_BYTES} \
                     bytes (for example `openssl rand -hex 32`)",
                    b.len()
                ),
            ));
        }
        Ok(ProbeToken(b))
    }

    /// The token in the file at `path` (a regular file, read bounded; one
    /// trailing newline, `\n` or `\r\n`, is not part of it).
    pub fn from_file(path: &Path) -> Result<ProbeToken> {
        let mut b = read_input(path, InputKind::ProbeToken)?;
        if b.ends_with(b"\n") {
            b.pop();
            if b.ends_with(b"\r") {
                b.pop();
            }
        }
        ProbeToken::new(b).map_err(|e| {
            Error::new(
                ErrorKind::InvalidInput,
                format!("{}: {}", path.display(), e.message()),
            )
        })
    }
}

/// Which end a proof is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prover {
    Client,
    Server,
}

impl Prover {
    fn label(self) -> &'static [u8] {
        match self {
            Prover::Client => b"roce-net-rdma-probe 2 client\0",
            Prover::Server => b"roce-net-rdma-probe 2 server\0",
        }
    }
}

type HmacSha256 = Hmac<Sha256>;

fn mac(token: Option<&ProbeToken>, who: Prover, client: &str, server: &str) -> HmacSha256 {
    let key = token.map(|t| t.0.as_slice()).unwrap_or_default();
    // HMAC takes a key of any length (RFC 2104); this cannot fail.
    let mut m = <HmacSha256 as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
    m.update(who.label());
    m.update(client.as_bytes());
    m.update(b"\0");
    m.update(server.as_bytes());
    m
}

/// `who`'s proof over the two nonces, as hex.
pub(crate) fn proof(token: Option<&ProbeToken>, who: Prover, client: &str, server: &str) -> String {
    hex(&mac(token, who, client, server).finalize().into_bytes())
}

/// Whether `proof` is `who`'s proof with `token` (compared in constant time).
pub(crate) fn verify(
    token: Option<&ProbeToken>,
    who: Prover,
    client: &str,
    server: &str,
    proof: &str,
) -> bool {
    match unhex(proof) {
        Some(b) => mac(token, who, client, server).verify_slice(&b).is_ok(),
        None => false,
    }
}

/// A fresh nonce from the kernel's random pool, as hex; `None` when the pool
/// cannot be read.
pub(crate) fn nonce() -> Option<String> {
    let mut b = [0u8; NONCE_BYTES];
    crate::sys::getrandom(&mut b).then(|| hex(&b))
}

/// Whether `s` has the shape of a nonce (what a peer sends is checked before use).
pub(crate) fn is_nonce(s: &str) -> bool {
    s.len() == 2 * NONCE_BYTES && s.bytes().all(|c| c.is_ascii_hexdigit())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231, test case 2 ("Jefe"), through the same HMAC type the proofs use.
    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        let mut m = <HmacSha256 as Mac>::new_from_slice(b"Jefe").unwrap();
        m.update(b"what do ya want for nothing?");
        assert_eq!(
            hex(&m.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    /// The proof is HMAC-SHA256 over label, client nonce, NUL, server nonce,
    /// as Python's own `hmac` module computes it (the real library as judge).
    #[test]
    fn the_proof_is_what_pythons_hmac_computes() {
        let t = ProbeToken::new(b"0123456789abcdef-shared".to_vec()).unwrap();
        let (c, s) = (
            "00112233445566778899aabbccddeeff",
            "ffeeddccbbaa99887766554433221100",
        );
        let script = format!(
            "import hmac, hashlib\n\
             for label in (b'client', b'server'):\n\
             \x20   msg = b'roce-net-rdma-probe 2 ' + label + b'\\x00{c}\\x00{s}'\n\
             \x20   print(hmac.new(b'0123456789abcdef-shared', msg, hashlib.sha256).hexdigest())\n"
        );
        let out = std::process::Command::new("python3")
            .args(["-c", &script])
            .output()
            .expect("running python3");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let want: Vec<&str> = text.lines().collect();
        assert_eq!(
            want,
            [
                proof(Some(&t), Prover::Client, c, s),
                proof(Some(&t), Prover::Server, c, s)
            ]
        );
    }

    #[test]
    fn a_proof_verifies_only_for_the_same_token_end_and_nonces() {
        let t = ProbeToken::new(vec![7u8; 32]).unwrap();
        let other = ProbeToken::new(vec![8u8; 32]).unwrap();
        let (c, s) = (nonce().unwrap(), nonce().unwrap());
        assert!(is_nonce(&c) && c != s);
        let p = proof(Some(&t), Prover::Client, &c, &s);
        assert!(verify(Some(&t), Prover::Client, &c, &s, &p));
        // Another token, none, the other end's label, other nonces, garbage.
        assert!(!verify(Some(&other), Prover::Client, &c, &s, &p));
        assert!(!verify(None, Prover::Client, &c, &s, &p));
        assert!(!verify(Some(&t), Prover::Server, &c, &s, &p));
        assert!(!verify(Some(&t), Prover::Client, &s, &c, &p));
        assert!(!verify(Some(&t), Prover::Client, &c, &s, "zz"));
        assert!(!verify(Some(&t), Prover::Client, &c, &s, &"é".repeat(32)));
        // Without a token both ends agree on the empty key.
        let q = proof(None, Prover::Server, &c, &s);
        assert!(verify(None, Prover::Server, &c, &s, &q));
    }

    #[test]
    fn tokens_are_bounded_read_from_a_file_and_never_shown() {
        assert!(ProbeToken::new(vec![1u8; TOKEN_MIN_BYTES - 1]).is_err());
        assert!(ProbeToken::new(vec![1u8; TOKEN_MAX_BYTES + 1]).is_err());
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("token");
        std::fs::write(&p, "0123456789abcdef0123\r\n").unwrap();
        let t = ProbeToken::from_file(&p).unwrap();
        assert_eq!(
            t,
            ProbeToken::new(b"0123456789abcdef0123".to_vec()).unwrap()
        );
        assert_eq!(format!("{t:?}"), "ProbeToken(..)");
        std::fs::write(&p, "short\n").unwrap();
        let e = ProbeToken::from_file(&p).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.message().contains("a probe token of 5 bytes"), "{e}");
        std::fs::write(&p, vec![b'x'; 5000]).unwrap();
        assert_eq!(
            ProbeToken::from_file(&p).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        assert!(ProbeToken::from_file(&d.path().join("none")).is_err());
    }
}
