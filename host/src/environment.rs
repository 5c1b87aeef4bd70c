//! What host a result was measured on.

pub use linerate_results::system::Environment;

/// Kernel, core count and CPU model.
pub fn describe() -> Environment {
    let kernel = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    Environment {
        kernel,
        cpus: crate::cores::online(),
        cpu_model,
    }
}
