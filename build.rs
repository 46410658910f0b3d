//! The CLI's build script: link GCC's unwinder into the executable instead of
//! loading `libgcc_s.so.1` at every start.
//!
//! Rust's standard library asks the linker for `-lgcc_s` on `*-linux-gnu`
//! (its unwinder, for panics and backtraces). Loading that library is a
//! measurable part of a short-lived CLI's start: an 8-NIC `apply` costs about
//! 5% less CPU time without it (docs/benchmarks.md), most of it the library's
//! constructor probing the CPU with `cpuid`, which traps to the hypervisor in a
//! virtual machine. So when the linker is the C compiler Cargo uses by default
//! (`cc`, GCC's driver), a linker script named `libgcc_s.so` in this build's
//! output directory, searched before the system's, stands for the static
//! `libgcc_eh.a` of the same GCC: the unwinder Rust itself links for
//! `crt-static` targets, and the one `cargo zigbuild`'s portable binary
//! already carries (zig links its own, so with a linker of the user's choice,
//! `RUSTC_LINKER`, nothing is done), nor for a target other than the host's.
//! When GCC has no `libgcc_eh.a`, nothing is done either, and the executable
//! needs `libgcc_s.so.1` as before.
//!
//! `tests/it/cli.rs` checks the built CLI needs no `libgcc_s`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return;
    };
    // Only the host's own GCC is asked: for another target (`-m32`, a cross
    // compiler) its libgcc_eh.a would be the wrong one.
    // Why the unwinder is what it is, for the CLI's tests (tests/it/cli.rs).
    let unwinder = |why: &str| println!("cargo:rustc-env=ROCE_NET_UNWINDER={why}");
    if !target.ends_with("-linux-gnu") || target != host {
        return unwinder("shared: another target");
    }
    if std::env::var_os("RUSTC_LINKER").is_some() {
        return unwinder("shared: a linker of the user's choice");
    }
    let Some(eh) = gcc_file("libgcc_eh.a") else {
        return unwinder("shared: no libgcc_eh.a");
    };
    // Run again when GCC's file moves (an upgrade to another version
    // directory), instead of linking against a path that is gone.
    println!("cargo:rerun-if-changed={}", eh.display());
    let script = format!("INPUT(\"{}\")\n", eh.display());
    match std::fs::write(out.join("libgcc_s.so"), script) {
        Ok(()) => {
            println!("cargo:rustc-link-search=native={}", out.display());
            unwinder("static");
        }
        Err(_) => unwinder("shared: the linker script could not be written"),
    }
}

/// Where GCC's driver (`cc`, the linker rustc calls on Linux by default)
/// finds `name`; `None` when it cannot say (it echoes the bare name back).
fn gcc_file(name: &str) -> Option<PathBuf> {
    let o = Command::new("cc")
        .arg(format!("-print-file-name={name}"))
        .output()
        .ok()?;
    let text = String::from_utf8(o.stdout).ok()?;
    let path = Path::new(text.trim());
    (o.status.success() && path.is_absolute() && path.is_file()).then(|| path.to_path_buf())
}
