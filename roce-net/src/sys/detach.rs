//! A descriptor's last close, made by a short-lived process of its own
//! ([`close_elsewhere`]): the packet socket whose close waits for an RCU grace
//! period (docs/architecture.md, decision 17).
//!
//! On x86-64 both processes are made with `clone(CLONE_VM)`: they share this
//! process's memory instead of copying its page tables, so making them costs
//! neither a copy of those tables nor, afterwards, a copy-on-write fault for
//! each page this process writes again (the two forks it replaced were about
//! 5% of an 8-NIC apply's CPU time, docs/benchmarks.md). What they run is
//! written for that: each runs on a stack of its own in a private mapping
//! that also holds everything it reads (the descriptors, the delay, a copy of
//! every datagram to send again), makes nothing but system calls through the
//! `syscall` instruction (no C library call: glibc's wrappers write `errno`
//! into the thread-local storage of the thread that made them, which may be
//! gone by then), and the grandchild unmaps that mapping as its last act
//! before it exits. This process never touches the mapping again once the
//! child exists, except to unmap it when the child says no grandchild was
//! made. Elsewhere two raw `clone(SIGCHLD)` forks do the same with copies.

use std::os::fd::IntoRawFd;
use std::time::Duration;

/// What the process that closes a descriptor ([`close_elsewhere`]) does with
/// it first: after `delay` (at most a minute), send each of `resend` once
/// more on it (the announcer's second copy of each announcement). The
/// datagrams are copied for that process: the caller's may go at once.
pub(crate) struct LastUse<'a> {
    /// How long to wait before sending again.
    pub delay: Duration,
    /// Each datagram with the link-layer address it goes to.
    pub resend: &'a [(libc::sockaddr_ll, Vec<u8>)],
}

/// Close `fd` in a short-lived process of its own (a grandchild, which
/// nobody waits for) instead of in this one; in this one if that process
/// cannot be made.
///
/// For a packet socket: closing one waits for an RCU grace period
/// (`packet_release` calls `synchronize_net()`, 5-20 ms here), and a process
/// that closes it, or exits holding it, is not done until that wait is over
/// (docs/architecture.md, decision 17). This process waits only for its child,
/// which makes the grandchild, lets go of its copy and exits. The child
/// closes every other descriptor it inherited before it makes the
/// grandchild, so the grandchild never holds any of them, and once this
/// function has waited for the child nothing of this process stays open
/// because of it: a pipe's reader sees end-of-file, a lock taken with `flock`
/// is this process's to let go, a file system it wrote to can be remounted
/// read-only. The grandchild waits until this process and the child have
/// closed their copies (the end of a pipe only they hold; at most a second,
/// should a fork of another thread hold it too), so that its close is the last
/// one and the one that waits; with `last`, it first waits `last.delay` and
/// sends `last.resend` on it; then it closes it and exits. In a process that
/// would inherit that orphan (the first process of a PID namespace, or a child
/// subreaper: it would stay a zombie), `fd` is closed here, with the wait, and
/// nothing is sent again.
///
/// Every signal of the calling thread is blocked across the clones, so no
/// handler runs in a child; the children make nothing but system calls: safe
/// in a process with other threads (a Python interpreter, a test harness).
pub(crate) fn close_elsewhere(fd: std::os::fd::OwnedFd, last: Option<LastUse<'_>>) {
    if reaps_orphans() {
        // The grandchild would become this process's child, and nothing here
        // would reap it: close here and wait (no second copy).
        drop(fd);
        return;
    }
    let raw = fd.into_raw_fd();
    let mut pipe = [-1 as libc::c_int; 2];
    // SAFETY: a valid array of two descriptors for pipe2 to fill.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        // SAFETY: raw came from into_raw_fd and is closed once.
        unsafe { libc::close(raw) };
        return;
    }
    let [read_end, write_end] = pipe;
    // The kernel's signal set (64 signals on x86-64 and aarch64), every bit
    // set: glibc's `pthread_sigmask` would leave its own two signals (32 and
    // 33) unblocked, and their handlers read the thread's TLS.
    let all: u64 = !0;
    let mut old: u64 = 0;
    let set = libc::SIG_SETMASK as usize;
    let size = std::mem::size_of::<u64>();
    // SAFETY: valid 8-byte sets; blocks every signal of this thread until it
    // is restored below (SIGKILL and SIGSTOP excepted, by the kernel), so no
    // handler runs in a child.
    unsafe {
        sc(
            libc::SYS_rt_sigprocmask,
            [
                set,
                std::ptr::addr_of!(all) as usize,
                std::ptr::addr_of_mut!(old) as usize,
                size,
                0,
                0,
            ],
        )
    };
    let child = detach(raw, read_end, last.as_ref());
    // SAFETY: restores the mask saved above.
    unsafe {
        sc(
            libc::SYS_rt_sigprocmask,
            [set, std::ptr::addr_of!(old) as usize, 0, size, 0, 0],
        )
    };
    // SAFETY: each came from into_raw_fd or pipe2 above and is closed once
    // here: this process's copies (the grandchild's socket is the last one),
    // or, when no child could be made, the socket itself.
    unsafe {
        libc::close(raw);
        libc::close(write_end);
        libc::close(read_end);
    }
    if let Some(reaped) = child {
        reaped.wait();
    }
}

/// A child made by [`detach`], to be waited for, and what to do once it has
/// exited.
struct Child {
    pid: libc::pid_t,
    /// The shared mapping, unmapped here when the child says it made no
    /// grandchild (exit status 1); otherwise the grandchild's to unmap.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    map: Option<vm::Mapping>,
}

impl Child {
    fn wait(self) {
        let mut status = 0;
        loop {
            // SAFETY: waits for our own child only; status is a valid pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut status, libc::__WALL) };
            if r >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        if let Some(map) = self.map {
            // Unmapped only when it is known that no grandchild uses it (a
            // child killed before it could say leaves it mapped: a leak, not a
            // fault in a process still running on it).
            if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == vm::NO_GRANDCHILD {
                map.unmap();
            }
        }
    }
}

/// Whether an orphaned descendant of this process would become its own child:
/// it is the first process of its PID namespace (a container's entry point)
/// or a child subreaper (`PR_SET_CHILD_SUBREAPER`). Such a process reaps only
/// the children it waits for, so a grandchild left to it would stay a zombie.
fn reaps_orphans() -> bool {
    let mut flag: libc::c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER stores one int through the pointer given.
    let subreaper = unsafe {
        libc::prctl(
            libc::PR_GET_CHILD_SUBREAPER,
            std::ptr::addr_of_mut!(flag) as libc::c_ulong,
        )
    } == 0
        && flag != 0;
    // SAFETY: getpid has no preconditions.
    subreaper || unsafe { libc::getpid() } == 1
}

/// A system call, without the C library: its result, or `-errno`.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
unsafe fn sc(nr: libc::c_long, a: [usize; 6]) -> isize {
    let ret: isize;
    // SAFETY (the caller's): a system call taking these arguments. The
    // `syscall` instruction clobbers rcx and r11 and nothing else.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
            in("r10") a[3], in("r8") a[4], in("r9") a[5],
            lateout("rcx") _, lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// A system call through glibc's `syscall()` (which sets `errno` in a forked
/// copy of this process): its result, or `-errno`.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
unsafe fn sc(nr: libc::c_long, a: [usize; 6]) -> isize {
    // SAFETY (the caller's): a system call taking these arguments.
    let r = unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) } as isize;
    if r < 0 {
        -(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as isize)
    } else {
        r
    }
}

/// In a child: close every descriptor but `a` and `b`: `close_range(2)`
/// (Linux 5.9); before it (RHEL 8's 4.18), each descriptor `/proc/self/fd`
/// lists; without `/proc`, one `close` per possible descriptor below the limit
/// of open files, at most 65536. System calls only.
fn close_all_but(a: libc::c_int, b: libc::c_int) {
    let (lo, hi) = (a.min(b) as usize, a.max(b) as usize);
    let range = |first: usize, last: usize| {
        // SAFETY: close_range only closes this process's descriptors.
        first > last || unsafe { sc(libc::SYS_close_range, [first, last, 0, 0, 0, 0]) } == 0
    };
    if (lo == 0 || range(0, lo - 1))
        && range(lo + 1, hi.wrapping_sub(1))
        && range(hi + 1, u32::MAX as usize)
    {
        return;
    }
    if close_listed_but(lo, hi) {
        return;
    }
    // SAFETY: rlimit64 is plain old data; all-zero is valid.
    let mut lim: libc::rlimit64 = unsafe { std::mem::zeroed() };
    // SAFETY: this process (pid 0), no new limit, a valid pointer for the old.
    let got = unsafe {
        sc(
            libc::SYS_prlimit64,
            [
                0,
                libc::RLIMIT_NOFILE as usize,
                0,
                std::ptr::addr_of_mut!(lim) as usize,
                0,
                0,
            ],
        )
    };
    let max = if got == 0 {
        lim.rlim_cur.min(65536) as usize
    } else {
        1024
    };
    let mut fd = 0;
    while fd < max {
        if fd != lo && fd != hi {
            // SAFETY: closing a descriptor of this (child) process.
            unsafe { sc(libc::SYS_close, [fd, 0, 0, 0, 0, 0]) };
        }
        fd += 1;
    }
}

/// In a child: close each descriptor `/proc/self/fd` lists but `lo`, `hi`
/// and the directory's own; `false` when it cannot be read. System calls
/// only, on a buffer on this stack; the kernel lists descriptors by number,
/// so closing those already read leaves the rest of the listing as it was.
fn close_listed_but(lo: usize, hi: usize) -> bool {
    const DIR: &[u8] = b"/proc/self/fd\0";
    let flags = (libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) as usize;
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let dir = unsafe {
        sc(
            libc::SYS_openat,
            [
                libc::AT_FDCWD as usize,
                DIR.as_ptr() as usize,
                flags,
                0,
                0,
                0,
            ],
        )
    };
    if dir < 0 {
        return false;
    }
    let dir = dir as usize;
    let mut buf = std::mem::MaybeUninit::<[u8; 4096]>::uninit();
    let at = buf.as_mut_ptr() as usize;
    loop {
        // SAFETY: the kernel writes at most 4096 bytes of whole records.
        let n = unsafe { sc(libc::SYS_getdents64, [dir, at, 4096, 0, 0, 0]) };
        if n <= 0 {
            break;
        }
        // SAFETY: the first n bytes were written by the kernel just now.
        let got = unsafe { std::slice::from_raw_parts(at as *const u8, n as usize) };
        let mut off = 0;
        // linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1),
        // then the NUL-terminated name.
        while let Some(&[r0, r1]) = got.get(off + 16..off + 18) {
            let reclen = usize::from(u16::from_ne_bytes([r0, r1]));
            let name = got.get(off + 19..off + reclen).unwrap_or(&[]);
            let mut fd = 0usize;
            let mut digits = 0;
            for &c in name.iter().take_while(|&&c| c != 0) {
                if !c.is_ascii_digit() || digits == 9 {
                    digits = 0;
                    break;
                }
                fd = fd * 10 + usize::from(c - b'0');
                digits += 1;
            }
            if digits > 0 && fd != lo && fd != hi && fd != dir {
                // SAFETY: closing a descriptor of this (child) process.
                unsafe { sc(libc::SYS_close, [fd, 0, 0, 0, 0, 0]) };
            }
            if reclen == 0 {
                break;
            }
            off += reclen;
        }
    }
    // SAFETY: the directory opened above.
    unsafe { sc(libc::SYS_close, [dir, 0, 0, 0, 0, 0]) };
    true
}

/// The grandchild's work, on what `job` points to: wait until every other
/// copy of the descriptor is closed (end of file on the pipe, at most a
/// second), send the datagrams again after the delay, close. System calls
/// only.
///
/// # Safety
/// `job` points to a valid [`Job`] whose datagrams are valid for as long as
/// this runs.
unsafe fn last_use(job: *const Job) {
    // SAFETY: the caller's.
    let j = unsafe { &*job };
    let mut pfd = libc::pollfd {
        fd: j.read_end,
        events: libc::POLLIN,
        revents: 0,
    };
    let pfd_at = std::ptr::addr_of_mut!(pfd) as usize;
    // ppoll writes the time left back into it.
    let mut second = libc::timespec {
        tv_sec: 1,
        tv_nsec: 0,
    };
    let second_at = std::ptr::addr_of_mut!(second) as usize;
    // SAFETY: one valid pollfd and timespec, no signal mask (`ppoll`: every
    // architecture has it, not all have `poll`); nothing is ever written to
    // the pipe, so it wakes at end of file (every writer gone) or after 1 s.
    unsafe { sc(libc::SYS_ppoll, [pfd_at, 1, second_at, 0, 0, 0]) };
    if j.count > 0 {
        let delay_at = std::ptr::addr_of!(j.delay) as usize;
        // SAFETY: a valid timespec; signals are blocked, so it sleeps the
        // whole delay.
        unsafe { sc(libc::SYS_nanosleep, [delay_at, 0, 0, 0, 0, 0]) };
        let mut i = 0;
        while i < j.count {
            // SAFETY: count datagrams, each valid for its length (the caller's).
            let d = unsafe { &*j.datagrams.add(i) };
            let to = std::ptr::addr_of!(d.to) as usize;
            let len = std::mem::size_of::<libc::sockaddr_ll>();
            // SAFETY: a valid buffer and address; a failure is ignored (the
            // first copy went out).
            unsafe {
                sc(
                    libc::SYS_sendto,
                    [j.fd as usize, d.data as usize, d.len, 0, to, len],
                )
            };
            i += 1;
        }
    }
    // SAFETY: this process's copy, the last one.
    unsafe { sc(libc::SYS_close, [j.fd as usize, 0, 0, 0, 0, 0]) };
}

/// Everything the child and the grandchild read.
#[repr(C)]
struct Job {
    /// The descriptor to close last.
    fd: libc::c_int,
    /// The pipe's read end, at end of file once the others closed their copies.
    read_end: libc::c_int,
    /// How long to wait before sending again.
    delay: libc::timespec,
    /// The datagrams to send again, `count` of them.
    datagrams: *const Datagram,
    count: usize,
    /// The length of the shared mapping the job sits in (x86-64), which the
    /// grandchild unmaps as it exits; 0 for a forked copy.
    map_len: usize,
}

/// One datagram to send again, as the grandchild reads it.
#[repr(C)]
struct Datagram {
    to: libc::sockaddr_ll,
    data: *const u8,
    len: usize,
}

fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs().min(60) as libc::time_t,
        tv_nsec: libc::c_long::from(d.subsec_nanos() as i32),
    }
}

/// Make the child (which makes the grandchild) in a shared mapping; `None`
/// when no child could be made (the caller then closes the descriptor itself).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn detach(fd: libc::c_int, read_end: libc::c_int, last: Option<&LastUse<'_>>) -> Option<Child> {
    let resend = last.map_or(&[][..], |l| l.resend);
    let delay = last.map_or(Duration::ZERO, |l| l.delay);
    let map = vm::Mapping::new(fd, read_end, delay, resend)?;
    match map.spawn_child() {
        Some(pid) => Some(Child {
            pid,
            map: Some(map),
        }),
        None => {
            map.unmap();
            None
        }
    }
}

/// Two raw `clone(SIGCHLD)` forks (no `pthread_atfork` handler runs), the
/// children working on their copies of `job`.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn detach(fd: libc::c_int, read_end: libc::c_int, last: Option<&LastUse<'_>>) -> Option<Child> {
    let resend = last.map_or(&[][..], |l| l.resend);
    let datagrams: Vec<Datagram> = resend
        .iter()
        .map(|(to, data)| Datagram {
            to: *to,
            data: data.as_ptr(),
            len: data.len(),
        })
        .collect();
    let job = Job {
        fd,
        read_end,
        delay: timespec(last.map_or(Duration::ZERO, |l| l.delay)),
        datagrams: datagrams.as_ptr(),
        count: datagrams.len(),
        map_len: 0,
    };
    let fork = || {
        // SAFETY: clone with only an exit signal copies this process like
        // fork(2); the zero stack means the child runs on its copy of this
        // stack.
        unsafe { sc(libc::SYS_clone, [libc::SIGCHLD as usize, 0, 0, 0, 0, 0]) }
    };
    let child = fork();
    if child == 0 {
        close_all_but(read_end, fd);
        if fork() == 0 {
            // SAFETY: this process's copy of job and the datagrams.
            unsafe { last_use(&job) };
        }
        // SAFETY: ends this (child or grandchild) process only; no Rust code
        // runs after a fork of a process that may have other threads.
        unsafe { sc(libc::SYS_exit_group, [0; 6]) };
    }
    (child > 0).then_some(Child {
        pid: child as libc::pid_t,
    })
}

/// The shared mapping and the two `clone(CLONE_VM)` processes on it.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod vm {
    use super::{close_all_but, last_use, timespec, Datagram, Job};
    use std::time::Duration;

    /// The child's exit status when it could not make the grandchild (what
    /// [`clone_and_exit`]'s `setle` gives for a failed clone).
    pub(super) const NO_GRANDCHILD: libc::c_int = 1;
    /// Each process's stack (the functions they run use a few hundred bytes).
    const STACK: usize = 64 * 1024;
    /// x86-64's page size, of the guard pages below each stack.
    const PAGE: usize = 4096;
    /// Where the two stacks and the job sit in the mapping: a guard page, the
    /// grandchild's stack, a guard page, the child's stack, the job.
    const GRANDCHILD_STACK_TOP: usize = PAGE + STACK;
    const CHILD_STACK_TOP: usize = 2 * PAGE + 2 * STACK;
    const JOB_AT: usize = CHILD_STACK_TOP;

    /// A private anonymous mapping holding the stacks, the job and a copy of
    /// every datagram.
    pub(super) struct Mapping {
        base: *mut u8,
        len: usize,
    }

    impl Mapping {
        /// Map and fill it; `None` when the kernel refuses the mapping.
        pub(super) fn new(
            fd: libc::c_int,
            read_end: libc::c_int,
            delay: Duration,
            resend: &[(libc::sockaddr_ll, Vec<u8>)],
        ) -> Option<Mapping> {
            let dgram_at = JOB_AT + std::mem::size_of::<Job>().next_multiple_of(16);
            let bytes_at = dgram_at + resend.len() * std::mem::size_of::<Datagram>();
            let total: usize = bytes_at + resend.iter().map(|(_, d)| d.len()).sum::<usize>();
            let len = total.next_multiple_of(PAGE);
            // SAFETY: a fresh private anonymous mapping; checked below.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                return None;
            }
            let map = Mapping {
                base: base.cast(),
                len,
            };
            // SAFETY: two whole pages inside the mapping; a stack overflow
            // then faults instead of writing the other stack or the job.
            unsafe {
                libc::mprotect(base, PAGE, libc::PROT_NONE);
                libc::mprotect(map.at(GRANDCHILD_STACK_TOP).cast(), PAGE, libc::PROT_NONE);
            }
            let dgrams: *mut Datagram = map.at(dgram_at).cast();
            let mut bytes = map.at(bytes_at);
            for (i, (to, data)) in resend.iter().enumerate() {
                // SAFETY: the mapping holds the datagram array and every
                // datagram's bytes at the offsets computed above; it is fresh,
                // so nothing else refers to it.
                unsafe {
                    std::ptr::copy_nonoverlapping(data.as_ptr(), bytes, data.len());
                    dgrams.add(i).write(Datagram {
                        to: *to,
                        data: bytes,
                        len: data.len(),
                    });
                    bytes = bytes.add(data.len());
                }
            }
            // SAFETY: JOB_AT is 16-aligned and the job fits before dgram_at.
            unsafe {
                map.at(JOB_AT).cast::<Job>().write(Job {
                    fd,
                    read_end,
                    delay: timespec(delay),
                    datagrams: dgrams,
                    count: resend.len(),
                    map_len: len,
                });
            }
            Some(map)
        }

        fn at(&self, offset: usize) -> *mut u8 {
            // SAFETY: offsets given are inside the mapping.
            unsafe { self.base.add(offset) }
        }

        /// The child, `clone(CLONE_VM | CLONE_VFORK)`: this thread waits until
        /// it has exited, so it has made the grandchild (or failed to) by the
        /// time this returns its pid.
        pub(super) fn spawn_child(&self) -> Option<libc::pid_t> {
            let flags = (libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD) as usize;
            // SAFETY: the stack and the job are in this mapping, which nothing
            // else uses; child runs system calls only.
            let pid = unsafe {
                clone_run(
                    flags,
                    self.at(CHILD_STACK_TOP),
                    child,
                    self.at(JOB_AT).cast(),
                )
            };
            (pid > 0).then_some(pid as libc::pid_t)
        }

        pub(super) fn unmap(self) {
            // SAFETY: this mapping, which no process uses any more.
            unsafe { libc::munmap(self.base.cast(), self.len) };
        }
    }

    /// The child: let go of every descriptor but the two the grandchild
    /// needs, make the grandchild on its own stack in the same mapping (the
    /// grandchild unmaps it as it exits), and exit: 0, or
    /// [`NO_GRANDCHILD`].
    extern "C" fn child(job: *mut Job) -> libc::c_int {
        // SAFETY: the job the parent wrote, which nothing changes until the
        // grandchild is done with it.
        let (fd, read_end) = unsafe { ((*job).fd, (*job).read_end) };
        close_all_but(read_end, fd);
        let base = job.cast::<u8>().wrapping_sub(JOB_AT);
        // SAFETY: as above.
        let len = unsafe { (*job).map_len };
        // SAFETY: the grandchild's stack is in the mapping, below its guard
        // page; grandchild runs system calls only. This process exits in
        // there, never back on its stack, which the grandchild may unmap at
        // once.
        unsafe {
            clone_and_exit(
                (libc::CLONE_VM | libc::SIGCHLD) as usize,
                base.wrapping_add(GRANDCHILD_STACK_TOP),
                grandchild,
                job,
                base,
                len,
            )
        }
    }

    /// The grandchild: [`last_use`], then (in [`clone_run`]) unmap the
    /// mapping and exit.
    extern "C" fn grandchild(job: *mut Job) -> libc::c_int {
        // SAFETY: the job and datagrams in the mapping, which only this
        // process uses from now on.
        unsafe { last_use(job) };
        0
    }

    /// What the new process runs after `clone`: `f(job)` (r13, r12) on
    /// the stack the kernel gave it, then it unmaps r15 bytes at r14 (none
    /// for 0: it may be running on them, so after `f` returns only registers
    /// are used) and exits with `f`'s result.
    macro_rules! new_process {
        () => {
            concat!(
                "xor ebp, ebp\n",
                "mov rdi, r12\n",
                "call r13\n",
                "mov ebx, eax\n",
                "test r15, r15\n",
                "jz 4f\n",
                "mov rdi, r14\n",
                "mov rsi, r15\n",
                "mov eax, {munmap}\n",
                "syscall\n",
                "4:\n",
                "mov edi, ebx\n",
                "mov eax, {exit}\n",
                "syscall\n",
                "ud2\n",
            )
        };
    }

    /// `clone(flags, stack)`; the new process runs `f(job)` on that stack and
    /// exits with its result ([`new_process`]). Returns the new pid, or
    /// `-errno`.
    ///
    /// # Safety
    /// `stack` is the 16-byte-aligned top of memory that only the new process
    /// uses; `f` makes system calls only (no C library call, no
    /// thread-local storage, no panic) on memory nothing else changes.
    unsafe fn clone_run(
        flags: usize,
        stack: *mut u8,
        f: extern "C" fn(*mut Job) -> libc::c_int,
        job: *mut Job,
    ) -> isize {
        let ret: isize;
        // SAFETY (the caller's). In this process, the system call's result
        // is all: rcx and r11 clobbered. In the new one (rax = 0) the kernel
        // has set rsp to `stack`; r12-r15 are kept across the system call and
        // across `f` (callee-saved), which returns to the exit and never to
        // Rust code here.
        unsafe {
            std::arch::asm!(
                "syscall",
                "test rax, rax",
                "jnz 2f",
                new_process!(),
                "2:",
                munmap = const libc::SYS_munmap,
                exit = const libc::SYS_exit,
                inlateout("rax") libc::SYS_clone as isize => ret,
                in("rdi") flags,
                in("rsi") stack,
                in("rdx") 0usize,
                in("r10") 0usize,
                in("r8") 0usize,
                in("r12") job,
                in("r13") f,
                in("r14") 0usize,
                in("r15") 0usize,
                lateout("rcx") _,
                lateout("r11") _,
            );
        }
        ret
    }

    /// `clone(flags, stack)`, the new process as in [`clone_run`] but
    /// unmapping `unmap_len` bytes at `unmap` before it exits; this process
    /// then exits at once, with status 0 when the new one was made and
    /// [`NO_GRANDCHILD`] when not, using registers only: the new process may
    /// unmap the memory this one's stack is in as soon as it runs.
    ///
    /// # Safety
    /// As [`clone_run`]; `unmap` and `unmap_len` are the mapping holding
    /// `stack`, the job and this process's stack, which nothing else uses.
    unsafe fn clone_and_exit(
        flags: usize,
        stack: *mut u8,
        f: extern "C" fn(*mut Job) -> libc::c_int,
        job: *mut Job,
        unmap: *mut u8,
        unmap_len: usize,
    ) -> ! {
        // SAFETY (the caller's), as in clone_run; neither process comes back.
        unsafe {
            std::arch::asm!(
                "syscall",
                "test rax, rax",
                "jz 3f",
                "xor edi, edi",
                "test rax, rax",
                "setle dil",
                "mov eax, {exit}",
                "syscall",
                "ud2",
                "3:",
                new_process!(),
                munmap = const libc::SYS_munmap,
                exit = const libc::SYS_exit,
                in("rax") libc::SYS_clone as isize,
                in("rdi") flags,
                in("rsi") stack,
                in("rdx") 0usize,
                in("r10") 0usize,
                in("r8") 0usize,
                in("r12") job,
                in("r13") f,
                in("r14") unmap,
                in("r15") unmap_len,
                options(noreturn),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    /// The fallback for kernels without `close_range` (RHEL 8's 4.18)
    /// closes every descriptor `/proc/self/fd` lists but the two kept, the
    /// ones above 65536 included (the capped loop after it would miss those).
    /// Run in a forked child, which then reports on the pipe it kept.
    #[test]
    fn the_proc_listing_closes_all_but_the_two_kept() {
        let mut p = [-1 as libc::c_int; 2];
        // SAFETY: a valid array for pipe2 to fill.
        assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        let (r, w) = (p[0], p[1]);
        // SAFETY: plain descriptor calls on descriptors of this process.
        let (kept, other, high) = unsafe {
            let kept = libc::dup(w);
            let other = libc::dup(w);
            let high = libc::fcntl(w, libc::F_DUPFD_CLOEXEC, 70_000);
            (kept, other, high)
        };
        assert!(kept >= 0 && other >= 0, "dup failed");
        // SAFETY: the child makes system calls only and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let listed = super::close_listed_but(w as usize, kept as usize);
            // SAFETY: F_GETFD on descriptors of this child.
            let open = |fd: libc::c_int| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0;
            let ok = listed
                && open(w)
                && open(kept)
                && !open(other)
                && !open(r)
                && (high < 0 || !open(high));
            let byte = [u8::from(ok)];
            // SAFETY: one byte to the pipe kept; then this child ends.
            unsafe {
                libc::write(w, byte.as_ptr().cast(), 1);
                libc::_exit(0);
            }
        }
        assert!(pid > 0, "fork failed");
        // SAFETY: this process's copies, closed once; reading one byte.
        let got = unsafe {
            libc::close(w);
            libc::close(kept);
            libc::close(other);
            if high >= 0 {
                libc::close(high);
            }
            let mut b = [9u8];
            let n = libc::read(r, b.as_mut_ptr().cast(), 1);
            let mut st = 0;
            libc::waitpid(pid, &mut st, 0);
            libc::close(r);
            (n, b[0])
        };
        assert_eq!(
            got,
            (1, 1),
            "a descriptor other than the two kept stayed open"
        );
    }
}
