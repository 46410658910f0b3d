//! libibverbs loaded at run time (`dlopen`), so a binary built with the `verbs`
//! feature starts, and answers "no libibverbs", on a host without rdma-core.
//!
//! The handle is never closed: providers (`libmlx5`, ...) register destructors and
//! rdma-core does not support unloading. One handle per library path, for the
//! life of the process.

use super::ffi::*;
use crate::model::{NoRdma, NoRdmaReason};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// The soname rdma-core has shipped since its first release (ABI 1.1).
pub const DEFAULT_LIBRARY: &str = "libibverbs.so.1";

type DevList = unsafe extern "C" fn(*mut c_int) -> *mut *mut c_void;

/// The resolved libibverbs entry points.
pub(crate) struct Lib {
    /// What was loaded (the path or soname given to `dlopen`).
    pub name: String,
    pub get_device_list: DevList,
    pub free_device_list: unsafe extern "C" fn(*mut *mut c_void),
    pub get_device_name: unsafe extern "C" fn(*mut c_void) -> *const c_char,
    pub get_device_guid: unsafe extern "C" fn(*mut c_void) -> u64,
    pub open_device: unsafe extern "C" fn(*mut c_void) -> *mut ibv_context,
    pub close_device: unsafe extern "C" fn(*mut ibv_context) -> c_int,
    pub query_device: unsafe extern "C" fn(*mut ibv_context, *mut ibv_device_attr) -> c_int,
    pub query_port: unsafe extern "C" fn(*mut ibv_context, u8, *mut ibv_port_attr) -> c_int,
    pub query_gid: unsafe extern "C" fn(*mut ibv_context, u8, c_int, *mut ibv_gid) -> c_int,
    /// `_ibv_query_gid_ex` (rdma-core >= 32, IBVERBS_1.11).
    pub query_gid_ex: Option<
        unsafe extern "C" fn(*mut ibv_context, u32, u32, *mut ibv_gid_entry, u32, usize) -> c_int,
    >,
    /// `_ibv_query_gid_table` (rdma-core >= 32, IBVERBS_1.11).
    pub query_gid_table: Option<
        unsafe extern "C" fn(*mut ibv_context, *mut ibv_gid_entry, usize, u32, usize) -> isize,
    >,
    pub alloc_pd: unsafe extern "C" fn(*mut ibv_context) -> *mut c_void,
    pub dealloc_pd: unsafe extern "C" fn(*mut c_void) -> c_int,
    pub reg_mr: unsafe extern "C" fn(*mut c_void, *mut c_void, usize, c_int) -> *mut ibv_mr,
    pub dereg_mr: unsafe extern "C" fn(*mut ibv_mr) -> c_int,
    pub create_cq: unsafe extern "C" fn(
        *mut ibv_context,
        c_int,
        *mut c_void,
        *mut c_void,
        c_int,
    ) -> *mut ibv_cq,
    pub destroy_cq: unsafe extern "C" fn(*mut ibv_cq) -> c_int,
    pub create_qp: unsafe extern "C" fn(*mut c_void, *mut ibv_qp_init_attr) -> *mut ibv_qp,
    pub modify_qp: unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int) -> c_int,
    pub destroy_qp: unsafe extern "C" fn(*mut ibv_qp) -> c_int,
    /// Only the tests read it (to check roce-net's own table of names).
    #[cfg(test)]
    pub wc_status_str: unsafe extern "C" fn(u32) -> *const c_char,
}

/// `dlerror()` as text.
fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string owned by libc,
    // valid until the next dl* call on this thread; it is copied at once.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown dlopen error".to_string()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

fn no_library(detail: String) -> NoRdma {
    NoRdma {
        reason: NoRdmaReason::NoLibrary,
        detail,
    }
}

/// A symbol's address as the function pointer type `T`.
///
/// # Safety
/// `T` must be the `extern "C" fn` type of the symbol `p` points to.
unsafe fn cast<T: Copy>(p: *mut c_void) -> T {
    debug_assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: same size (a code pointer on every Linux target); the caller
    // guarantees the type.
    unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) }
}

impl Lib {
    /// Load `name` (a soname searched by the dynamic loader, or a path) and
    /// resolve every entry point. Cached: each name is loaded once.
    pub fn load(name: Option<&Path>) -> Result<&'static Lib, NoRdma> {
        static CACHE: OnceLock<Mutex<HashMap<String, &'static Lib>>> = OnceLock::new();
        let name = name
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|| DEFAULT_LIBRARY.to_string());
        let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
        let mut map = cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = map.get(&name) {
            return Ok(l);
        }
        let lib = Lib::open(&name)?;
        let lib: &'static Lib = Box::leak(Box::new(lib));
        map.insert(name, lib);
        Ok(lib)
    }

    fn open(name: &str) -> Result<Lib, NoRdma> {
        let c = CString::new(name)
            .map_err(|_| no_library(format!("library name {name:?} contains a NUL byte")))?;
        // SAFETY: a valid C string; RTLD_NOW resolves everything up front so a
        // broken library fails here, not at the first call.
        let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if h.is_null() {
            return Err(no_library(format!(
                "cannot load {name}: {}; install rdma-core's libibverbs \
                 (Debian/Ubuntu: libibverbs1 and ibverbs-providers; RHEL: libibverbs)",
                dl_error()
            )));
        }
        let sym = |s: &str| -> *mut c_void {
            let cs = CString::new(s).unwrap_or_default();
            // SAFETY: h is a live handle (never closed); cs is a valid C string.
            unsafe { libc::dlsym(h, cs.as_ptr()) }
        };
        let need = |s: &str| -> Result<*mut c_void, NoRdma> {
            let p = sym(s);
            if p.is_null() {
                Err(no_library(format!(
                    "{name} has no symbol {s}: it is not libibverbs, or one older than rdma-core's ABI 1.1"
                )))
            } else {
                Ok(p)
            }
        };
        // SAFETY (every transmute below): each symbol is the libibverbs function
        // of that name, whose C prototype (verbs.h) the Rust type spells out.
        unsafe {
            Ok(Lib {
                name: name.to_string(),
                get_device_list: cast::<DevList>(need("ibv_get_device_list")?),
                free_device_list: cast(need("ibv_free_device_list")?),
                get_device_name: cast(need("ibv_get_device_name")?),
                get_device_guid: cast(need("ibv_get_device_guid")?),
                open_device: cast(need("ibv_open_device")?),
                close_device: cast(need("ibv_close_device")?),
                query_device: cast(need("ibv_query_device")?),
                query_port: cast(need("ibv_query_port")?),
                query_gid: cast(need("ibv_query_gid")?),
                query_gid_ex: {
                    let p = sym("_ibv_query_gid_ex");
                    (!p.is_null()).then(|| cast(p))
                },
                query_gid_table: {
                    let p = sym("_ibv_query_gid_table");
                    (!p.is_null()).then(|| cast(p))
                },
                alloc_pd: cast(need("ibv_alloc_pd")?),
                dealloc_pd: cast(need("ibv_dealloc_pd")?),
                reg_mr: cast(need("ibv_reg_mr")?),
                dereg_mr: cast(need("ibv_dereg_mr")?),
                create_cq: cast(need("ibv_create_cq")?),
                destroy_cq: cast(need("ibv_destroy_cq")?),
                create_qp: cast(need("ibv_create_qp")?),
                modify_qp: cast(need("ibv_modify_qp")?),
                destroy_qp: cast(need("ibv_destroy_qp")?),
                #[cfg(test)]
                wc_status_str: cast(need("ibv_wc_status_str")?),
            })
        }
    }

    /// `ibv_wc_status_str(status)`.
    #[cfg(test)]
    pub fn status_str(&self, status: u32) -> String {
        // SAFETY: returns a pointer to a static string (or "unknown").
        unsafe {
            let p = (self.wc_status_str)(status);
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }

    /// The devices libibverbs lists (name, node GUID). The list is freed before
    /// returning: per ibv_get_device_list(3), device pointers that were not
    /// opened are invalid after that, so none is kept (see [`Lib::open_by_name`]).
    pub fn devices(&self) -> Result<Vec<DeviceRef>, i32> {
        let mut n: c_int = 0;
        // SAFETY: n is a valid out pointer.
        let list = unsafe {
            *libc::__errno_location() = 0;
            (self.get_device_list)(&mut n)
        };
        if list.is_null() {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            return Err(if e == 0 { libc::ENOSYS } else { e });
        }
        let mut out = Vec::new();
        for i in 0..usize::try_from(n).unwrap_or(0) {
            // SAFETY: the list holds n device pointers followed by NULL.
            let d = unsafe { *list.add(i) };
            if d.is_null() {
                break;
            }
            // SAFETY: d is a device from the list; the name is a NUL-terminated
            // array inside the device structure.
            let name = unsafe {
                let p = (self.get_device_name)(d);
                if p.is_null() {
                    continue;
                }
                CStr::from_ptr(p).to_string_lossy().into_owned()
            };
            // SAFETY: as above.
            let guid = unsafe { (self.get_device_guid)(d) };
            out.push(DeviceRef {
                name,
                guid: u64::from_be(guid),
            });
        }
        // SAFETY: list came from get_device_list and is freed once.
        unsafe { (self.free_device_list)(list) };
        Ok(out)
    }

    /// Open the device named `name` from a fresh list (freed after opening, which
    /// ibv_get_device_list(3) allows). The caller owns the context and closes it
    /// with `close_device`.
    pub fn open_by_name(&self, name: &str) -> Result<*mut ibv_context, i32> {
        let mut n: c_int = 0;
        // SAFETY: n is a valid out pointer.
        let list = unsafe { (self.get_device_list)(&mut n) };
        if list.is_null() {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            return Err(if e == 0 { libc::ENOSYS } else { e });
        }
        let mut ctx: *mut ibv_context = std::ptr::null_mut();
        let mut err = libc::ENODEV;
        for i in 0..usize::try_from(n).unwrap_or(0) {
            // SAFETY: the list holds n device pointers.
            let d = unsafe { *list.add(i) };
            if d.is_null() {
                break;
            }
            // SAFETY: d is a listed device.
            let dn = unsafe {
                let p = (self.get_device_name)(d);
                if p.is_null() {
                    continue;
                }
                CStr::from_ptr(p).to_string_lossy().into_owned()
            };
            if dn == name {
                // SAFETY: d is a listed device and the list is still alive.
                ctx = unsafe {
                    *libc::__errno_location() = 0;
                    (self.open_device)(d)
                };
                if ctx.is_null() {
                    err = std::io::Error::last_os_error()
                        .raw_os_error()
                        .filter(|e| *e != 0)
                        .unwrap_or(libc::EIO);
                }
                break;
            }
        }
        // SAFETY: opened contexts stay valid after the list is freed.
        unsafe { (self.free_device_list)(list) };
        if ctx.is_null() {
            Err(err)
        } else {
            Ok(ctx)
        }
    }
}

/// A listed device.
pub(crate) struct DeviceRef {
    /// `ibv_get_device_name`.
    pub name: String,
    /// `ibv_get_device_guid`, host byte order.
    pub guid: u64,
}

/// The node GUID as sysfs prints it (`%04x:%04x:%04x:%04x`).
pub(crate) fn guid_text(g: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        (g >> 48) & 0xffff,
        (g >> 32) & 0xffff,
        (g >> 16) & 0xffff,
        g & 0xffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_is_formatted_as_sysfs_does() {
        assert_eq!(guid_text(0xb83f_d203_0010_00a0), "b83f:d203:0010:00a0");
        assert_eq!(guid_text(1), "0000:0000:0000:0001");
    }

    #[test]
    fn a_missing_library_is_no_library_with_the_loader_message() {
        let e = Lib::load(Some(Path::new(
            "/nonexistent/roce-net-test/libibverbs.so.1",
        )))
        .err()
        .expect("must fail");
        assert_eq!(e.reason, NoRdmaReason::NoLibrary);
        assert!(
            e.detail
                .contains("/nonexistent/roce-net-test/libibverbs.so.1"),
            "{}",
            e.detail
        );
        assert!(e.detail.contains("No such file"), "{}", e.detail);
        assert!(e.detail.contains("libibverbs1"), "{}", e.detail);
    }

    #[test]
    fn a_library_that_is_not_libibverbs_is_no_library() {
        let e = Lib::load(Some(Path::new("libc.so.6")))
            .err()
            .expect("must fail");
        assert_eq!(e.reason, NoRdmaReason::NoLibrary);
        assert!(
            e.detail.contains("has no symbol ibv_get_device_list"),
            "{}",
            e.detail
        );
    }

    /// The installed libibverbs (libibverbs1, installed by scripts/test.sh) loads
    /// and every required entry point resolves.
    #[test]
    fn the_installed_libibverbs_loads() {
        let l = Lib::load(None).unwrap_or_else(|e| panic!("{}", e.detail));
        assert_eq!(l.name, DEFAULT_LIBRARY);
        // rdma-core 44 has the GID table calls.
        assert!(l.query_gid_table.is_some() && l.query_gid_ex.is_some());
        assert_eq!(l.status_str(12), "transport retry counter exceeded");
    }
}
