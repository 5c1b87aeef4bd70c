//! The raw system calls that nix, rustix and the scheduler crate do not
//! wrap: of busy polling SO_BUSY_POLL, SO_PREFER_BUSY_POLL,
//! SO_BUSY_POLL_BUDGET, SO_INCOMING_NAPI_ID and the epoll ioctl
//! EPIOCSPARAMS; of scheduling sched_setattr (a thread's own slice).
//! Every unsafe block of the kernel backends' busy polling and of thread
//! scheduling is here.

use std::{
    io,
    os::fd::{AsRawFd, BorrowedFd, RawFd},
};

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets an int-valued SOL_SOCKET option.
fn set_int(fd: BorrowedFd<'_>, option: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: the descriptor is open (borrowed), and the option value is a
    // c_int that lives across the call, with its size given.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
}

/// `struct sched_attr` of sched_setattr(2) (SCHED_ATTR_SIZE_VER1).
#[repr(C)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
    sched_util_min: u32,
    sched_util_max: u32,
}

/// sched_setattr(2): thread `tid` (0: the calling thread) to SCHED_OTHER
/// at `nice` with a slice of its own of `slice_ns` (`sched_runtime`; Linux
/// 6.12+, EEVDF, which clamps it to 0.1-100 ms; earlier kernels ignore it).
pub fn set_fair_slice(tid: i32, nice: i32, slice_ns: u64) -> io::Result<()> {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: libc::SCHED_OTHER as u32,
        sched_flags: 0,
        sched_nice: nice,
        sched_priority: 0,
        sched_runtime: slice_ns,
        sched_deadline: 0,
        sched_period: 0,
        sched_util_min: 0,
        sched_util_max: 0,
    };
    // SAFETY: `attr` is a sched_attr of the size its `size` field gives,
    // alive across the call, which only reads it; flags 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            tid,
            &attr as *const SchedAttr,
            0 as libc::c_uint,
        )
    };
    check(if rc == 0 { 0 } else { -1 })
}

/// SO_BUSY_POLL: a blocking receive on this socket busy-polls the device
/// queue's NAPI for up to `usecs` before it sleeps.
pub fn set_busy_poll(fd: BorrowedFd<'_>, usecs: u32) -> io::Result<()> {
    set_int(
        fd,
        libc::SO_BUSY_POLL,
        usecs.min(i32::MAX as u32) as libc::c_int,
    )
}

/// SO_PREFER_BUSY_POLL: the application pledges to busy-poll, the NAPI
/// keeps its interrupts masked (until gro-flush-timeout passes unpolled).
pub fn set_prefer_busy_poll(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_int(fd, libc::SO_PREFER_BUSY_POLL, libc::c_int::from(on))
}

/// SO_BUSY_POLL_BUDGET: packets one busy poll may process.
pub fn set_busy_poll_budget(fd: BorrowedFd<'_>, budget: u16) -> io::Result<()> {
    set_int(fd, libc::SO_BUSY_POLL_BUDGET, libc::c_int::from(budget))
}

/// SO_INCOMING_NAPI_ID: the NAPI the socket's last packet came through
/// (0: none yet, or none the kernel records for this socket).
pub fn incoming_napi_id(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut id: libc::c_uint = 0;
    let mut len = std::mem::size_of::<libc::c_uint>() as libc::socklen_t;
    // SAFETY: the descriptor is open (borrowed); `id` and `len` live across
    // the call and `len` holds the size of `id`.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_INCOMING_NAPI_ID,
            (&mut id as *mut libc::c_uint).cast(),
            &mut len,
        )
    })?;
    Ok(id)
}

/// EPIOCSPARAMS: per-epoll busy polling (Linux 6.9+): `usecs` of busy
/// polling in epoll_wait, `budget` packets per poll, and whether the
/// epoll context prefers busy polling (masks the NAPI's interrupts).
pub fn set_epoll_params(
    epoll: BorrowedFd<'_>,
    usecs: u32,
    budget: u16,
    prefer: bool,
) -> io::Result<()> {
    let params = libc::epoll_params {
        busy_poll_usecs: usecs,
        busy_poll_budget: budget,
        prefer_busy_poll: u8::from(prefer),
        __pad: 0,
    };
    // SAFETY: the descriptor is an open epoll instance (borrowed); the
    // ioctl reads a `struct epoll_params` that lives across the call.
    let rc = unsafe { libc::ioctl(epoll.as_raw_fd(), libc::EPIOCSPARAMS, &params) };
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Borrows a descriptor an AF_XDP port owns, for the options above.
pub(crate) fn borrow<'a>(fd: RawFd) -> BorrowedFd<'a> {
    // SAFETY: callers pass the descriptor of a port they hold, which stays
    // open across the setsockopt calls the borrow is used for.
    unsafe { BorrowedFd::borrow_raw(fd) }
}
