//! CPU accounting per core from /proc/stat, as netperf does: user, system,
//! softirq and irq time of every core over the measured window. Network
//! work done in softirq is charged to no process, so per-process figures
//! (iperf3's) would miss it. What a result makes of these figures (CPU %
//! of a set of cores, service demand) is in `results::parts`.

use anyhow::{Context, Result};
pub use linerate_results::system::{CoreUse, Host};

/// One core's cumulative jiffies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreTimes {
    user: u64,
    nice: u64,
    system: u64,
    idle: u64,
    iowait: u64,
    irq: u64,
    softirq: u64,
    steal: u64,
}

/// Every core's times at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuSample {
    cores: Vec<(usize, CoreTimes)>,
}

impl CpuSample {
    /// Reads /proc/stat.
    pub fn read() -> Result<Self> {
        let text = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
        Ok(Self::parse(&text))
    }

    fn parse(text: &str) -> Self {
        let cores = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let id = f.next()?.strip_prefix("cpu")?.parse::<usize>().ok()?;
                let v: Vec<u64> = f.map(|x| x.parse().unwrap_or(0)).collect();
                let g = |i: usize| v.get(i).copied().unwrap_or(0);
                Some((
                    id,
                    CoreTimes {
                        user: g(0),
                        nice: g(1),
                        system: g(2),
                        idle: g(3),
                        iowait: g(4),
                        irq: g(5),
                        softirq: g(6),
                        steal: g(7),
                    },
                ))
            })
            .collect();
        Self { cores }
    }

    /// Use of every core between `earlier` and `self`.
    pub fn since(&self, earlier: &Self) -> Vec<CoreUse> {
        self.cores
            .iter()
            .filter_map(|(id, now)| {
                let (_, then) = earlier.cores.iter().find(|(i, _)| i == id)?;
                let d = |a: u64, b: u64| a.saturating_sub(b) as f64;
                let user = d(now.user, then.user) + d(now.nice, then.nice);
                let system = d(now.system, then.system);
                let irq = d(now.irq, then.irq);
                let softirq = d(now.softirq, then.softirq);
                let steal = d(now.steal, then.steal);
                let idle = d(now.idle, then.idle) + d(now.iowait, then.iowait);
                let busy = user + system + irq + softirq + steal;
                let total = busy + idle;
                let pct = |x: f64| if total > 0.0 { 100.0 * x / total } else { 0.0 };
                Some(CoreUse {
                    core: *id,
                    user: pct(user),
                    system: pct(system),
                    softirq: pct(softirq),
                    irq: pct(irq),
                    steal: pct(steal),
                    busy: pct(busy),
                    host: None,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_core_percentages() {
        let a =
            CpuSample::parse("cpu 1 1 1 1\ncpu0 100 0 50 850 0 0 0 0\ncpu1 0 0 0 1000 0 0 0 0\n");
        let b = CpuSample::parse(
            "cpu 1 1 1 1\ncpu0 150 0 100 850 0 0 100 0\ncpu1 0 0 0 1200 0 0 0 0\n",
        );
        let u = b.since(&a);
        assert_eq!(u.len(), 2);
        assert!((u[0].busy - 100.0).abs() < 1e-9);
        assert!((u[0].softirq - 50.0).abs() < 1e-9);
        assert!((u[1].busy).abs() < 1e-9);
    }
}
