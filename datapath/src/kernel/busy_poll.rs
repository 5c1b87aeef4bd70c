//! SO_BUSY_POLL, which nix does not wrap: the one raw setsockopt of the
//! kernel backends.

use std::os::fd::{AsRawFd, BorrowedFd};

/// Asks the kernel to busy-poll the device queue for up to `usecs` on
/// blocking receives of this socket.
pub(super) fn set(fd: BorrowedFd<'_>, usecs: i32) -> std::io::Result<()> {
    // SAFETY: the descriptor is open (borrowed), and the option value is a
    // c_int that lives across the call, with its size given.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_BUSY_POLL,
            (&usecs as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
