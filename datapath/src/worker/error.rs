//! Why a worker could not start or stopped early, and which AF_XDP errors
//! mean its interface went away.

use crate::binding::XskError;

/// Why a worker could not start or stopped early.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// Entering the namespace failed.
    #[error("{0}")]
    Netns(std::io::Error),
    /// Pinning to a core failed.
    #[error("pinning to core {0} failed: the core does not exist or is not allowed (see `nproc`)")]
    Pin(usize),
    /// AF_XDP setup or I/O failed.
    #[error(transparent)]
    Xsk(#[from] XskError),
    /// The frame could not be built.
    #[error(transparent)]
    Frame(#[from] crate::frame::FrameError),
    /// The caller's hook after binding failed (e.g. registering in XSKMAP).
    #[error("{0}")]
    Hook(String),
    /// The thread ended without a word.
    #[error("worker thread ended before reporting (panicked?)")]
    Vanished,
}

/// Whether an AF_XDP I/O error means the interface went away (deleted or
/// down): the worker then ends with what it counted, and control reports
/// the fault.
pub(crate) fn device_gone(e: &XskError) -> bool {
    matches!(e, XskError::Io(io) if matches!(io.raw_os_error(), Some(libc::ENXIO | libc::ENODEV | libc::ENETDOWN)))
}

/// `Ok(true)` to go on, `Ok(false)` when the interface is gone, the error
/// otherwise.
pub(crate) fn alive<T>(r: Result<T, XskError>) -> Result<bool, WorkerError> {
    match r {
        Ok(_) => Ok(true),
        Err(e) if device_gone(&e) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
