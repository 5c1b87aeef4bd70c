//! The XDP steering program's counters (the C program's `struct steer_stats`).

/// The steering program's counters, summed over all CPUs (a counter
/// missing from a result written before it existed reads as 0).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SteerStats {
    /// Frames the program looked at.
    pub seen: u64,
    /// Frames redirected into an AF_XDP socket.
    pub redirected: u64,
    /// Test frames for which no socket was registered on their queue (passed to the kernel).
    pub redirect_failed: u64,
    /// Frames passed to the kernel stack.
    pub passed: u64,
    /// Frames too short for the headers they announce (passed to the kernel).
    pub malformed: u64,
    /// Requests answered by the program itself (XDP_TX responder).
    pub responded: u64,
    /// Test frames dropped on purpose (loss injection).
    pub dropped: u64,
    /// Test frames counted per flow and dropped (the XDP-only receiver).
    pub counted: u64,
    /// Frames on the test ports without a linerate header (XDP-only receiver).
    pub foreign: u64,
}

impl SteerStats {
    /// Counters accumulated between `earlier` and `self`.
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            seen: self.seen.saturating_sub(earlier.seen),
            redirected: self.redirected.saturating_sub(earlier.redirected),
            redirect_failed: self.redirect_failed.saturating_sub(earlier.redirect_failed),
            passed: self.passed.saturating_sub(earlier.passed),
            malformed: self.malformed.saturating_sub(earlier.malformed),
            responded: self.responded.saturating_sub(earlier.responded),
            dropped: self.dropped.saturating_sub(earlier.dropped),
            counted: self.counted.saturating_sub(earlier.counted),
            foreign: self.foreign.saturating_sub(earlier.foreign),
        }
    }
}

impl std::ops::Add for SteerStats {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self {
            seen: self.seen + o.seen,
            redirected: self.redirected + o.redirected,
            redirect_failed: self.redirect_failed + o.redirect_failed,
            passed: self.passed + o.passed,
            malformed: self.malformed + o.malformed,
            responded: self.responded + o.responded,
            dropped: self.dropped + o.dropped,
            counted: self.counted + o.counted,
            foreign: self.foreign + o.foreign,
        }
    }
}
