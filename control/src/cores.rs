//! Core lists: parsing "0,2-3" and the default placement.

use anyhow::{bail, Result};

/// Cores online.
pub fn online() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Parses a list such as `0`, `0,2` or `0-3,6`.
pub fn parse_list(s: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || anyhow::anyhow!("{part:?} is not a core number or range (e.g. 0,2-3)");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().map_err(|_| bad())?),
        }
    }
    if out.is_empty() {
        bail!("empty core list");
    }
    Ok(out)
}

/// Whether the default placement crosses the queues over the cores: when
/// there are too few cores to give every sender and every receiver one of
/// its own (and more than one queue), each core sends one queue and
/// receives another, so that no core idles while another is the
/// bottleneck. Measured on two cores with two queues: 1.4x the frames/s of
/// both senders on one core and both receivers on the other.
pub fn crossed(queues: usize, ncpu: usize) -> bool {
    queues > 1 && 2 * queues > ncpu
}

/// Whether any core hosts both a sender and a receiver.
pub fn shared(tx_cores: &[usize], rx_cores: &[usize]) -> bool {
    tx_cores.iter().any(|c| rx_cores.contains(c))
}

/// One core per queue: from `list` when given (reused round-robin when it
/// is shorter), else queue q of role `offset` (0 sender, 1 receiver) goes
/// to core (2q + offset) mod ncpu, so on two cores the sender gets core 0
/// and the receiver core 1; with `crossed` to core (q + offset) mod ncpu,
/// so that queue q's receiver shares a core with queue q+1's sender.
pub fn for_queues(
    list: Option<&str>,
    queues: usize,
    ncpu: usize,
    offset: usize,
    crossed: bool,
) -> Result<Vec<usize>> {
    let cores = match list {
        Some(s) => parse_list(s)?,
        None if crossed => (0..queues).map(|q| (q + offset) % ncpu).collect(),
        None => (0..queues).map(|q| (2 * q + offset) % ncpu).collect(),
    };
    if let Some(&c) = cores.iter().find(|&&c| c >= ncpu) {
        bail!(
            "core {c} does not exist: this machine has cores 0 to {}",
            ncpu - 1
        );
    }
    Ok((0..queues).map(|q| cores[q % cores.len()]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists() {
        assert_eq!(parse_list("0").unwrap(), vec![0]);
        assert_eq!(parse_list("0,2-4").unwrap(), vec![0, 2, 3, 4]);
        assert!(parse_list("x").is_err());
        assert!(parse_list("3-1").is_err());
        assert!(parse_list("").is_err());
    }

    #[test]
    fn default_placement_splits_roles() {
        assert_eq!(for_queues(None, 1, 2, 0, false).unwrap(), vec![0]);
        assert_eq!(for_queues(None, 1, 2, 1, false).unwrap(), vec![1]);
        assert_eq!(for_queues(None, 2, 4, 1, false).unwrap(), vec![1, 3]);
        assert_eq!(for_queues(Some("1"), 2, 2, 0, false).unwrap(), vec![1, 1]);
        assert!(for_queues(Some("5"), 1, 2, 0, false).is_err());
    }

    #[test]
    fn too_few_cores_cross_the_queues() {
        assert!(!crossed(1, 2));
        assert!(crossed(2, 2));
        assert!(!crossed(2, 4));
        assert!(crossed(3, 4));
        // Two queues on two cores: each core sends one and receives the other.
        assert_eq!(for_queues(None, 2, 2, 0, true).unwrap(), vec![0, 1]);
        assert_eq!(for_queues(None, 2, 2, 1, true).unwrap(), vec![1, 0]);
        // Three on four: every receiver beside another queue's sender.
        assert_eq!(for_queues(None, 3, 4, 0, true).unwrap(), vec![0, 1, 2]);
        assert_eq!(for_queues(None, 3, 4, 1, true).unwrap(), vec![1, 2, 3]);
    }
}
