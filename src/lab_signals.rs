//! `roce-net lab` interrupted: hang-up, interrupt and terminate are taken by one
//! thread (`sigwait`), which removes what the lab built ([`roce_net::Lab::interrupt`]
//! and the temporary directories it made), says what it removed (or what it
//! could not, with the command that does), and exits with 128 + the signal.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The lab's temporary directories, removed on a signal.
static DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// Set once a signal was taken: the lab's own error is not reported then.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

const SIGNALS: [libc::c_int; 3] = [libc::SIGHUP, libc::SIGINT, libc::SIGTERM];

fn dirs() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    DIRS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Make a directory with `make` and have it removed if the lab is
/// interrupted. The list stays locked while it is made: the thread that takes
/// a signal arriving in between waits for the directory to be listed, where
/// before it found the list empty and left the directory behind (seen once in
/// CI: SIGTERM 30 ms after start, "nothing had been built yet", two directories
/// left).
pub(crate) fn make_dir_removed_on_signal<E>(
    make: impl FnOnce() -> Result<PathBuf, E>,
) -> Result<PathBuf, E> {
    let mut list = dirs();
    let path = make()?;
    list.push(path.clone());
    Ok(path)
}

/// The lab is kept: a signal from now on removes nothing.
pub(crate) fn forget_dirs() {
    dirs().clear();
}

fn signal_name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// Hold the three signals in this thread and every thread it starts from now
/// on, and start the thread that takes them.
pub(crate) fn clean_up_on_signals() {
    // SAFETY: sigset manipulation on a local value; pthread_sigmask on this
    // thread (threads started later inherit the mask).
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    let spawned = std::thread::Builder::new()
        .name("lab-signals".into())
        .spawn(move || {
            let mut sig: libc::c_int = 0;
            // SAFETY: sigwait on the set held above, into a local.
            if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
                return;
            }
            INTERRUPTED.store(true, Ordering::SeqCst);
            let r = roce_net::Lab::interrupt();
            let mut removed: Vec<String> = Vec::new();
            if !r.removed.is_empty() {
                removed.push(format!("namespaces {}", r.removed.join(" ")));
            }
            let mut gone_dirs = Vec::new();
            let mut left: Vec<String> = r
                .failed
                .iter()
                .map(|(ns, e)| format!("namespace {ns} ({e}; remove it with `ip netns del {ns}`)"))
                .collect();
            for d in dirs().drain(..) {
                match std::fs::remove_dir_all(&d) {
                    Ok(()) => gone_dirs.push(d.display().to_string()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => left.push(format!(
                        "directory {} ({e}; remove it with `rm -r {}`)",
                        d.display(),
                        roce_net::shell_word(&d.to_string_lossy())
                    )),
                }
            }
            if !gone_dirs.is_empty() {
                removed.push(format!("directories {}", gone_dirs.join(" ")));
            }
            let mut msg = format!("roce-net lab: interrupted by {}: ", signal_name(sig));
            if removed.is_empty() {
                msg.push_str("nothing had been built yet");
            } else {
                msg.push_str(&format!("removed {}", removed.join(" and ")));
            }
            if !left.is_empty() {
                msg.push_str(&format!("; NOT removed: {}", left.join("; ")));
            }
            eprintln!("{}", roce_net::terminal_safe(&msg));
            std::process::exit(128 + sig);
        });
    if spawned.is_err() {
        // No thread, no cleanup: let the signals act as before.
        // SAFETY: unblock the set held above on this thread.
        unsafe {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}

/// After an interrupt the lab's next step fails; the thread that took the
/// signal reports and exits: wait for it instead of reporting that failure.
pub(crate) fn wait_if_interrupted() {
    if INTERRUPTED.load(Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
}
