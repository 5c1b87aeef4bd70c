//! Core lists: parsing "0,2-3" and the default placement.

use anyhow::{bail, Result};

/// Cores online.
pub fn online() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The highest core number a list may name at all: a CPU set holds
/// CPU_SETSIZE (1024) cores.
pub const MAX_CORE: usize = 1023;

/// The ranges of a list such as `0`, `0,2` or `0-3,6`, checked for form
/// and against [`MAX_CORE`] but not expanded: a list names at most
/// [`MAX_CORE`]+1 cores, whatever its numbers say.
pub fn ranges(s: &str) -> Result<Vec<(usize, usize)>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || anyhow::anyhow!("{part:?} is not a core number or range (e.g. 0,2-3)");
        let num = |n: &str| -> Result<usize> {
            let n = n.trim();
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            match n.parse::<usize>() {
                Ok(c) if c <= MAX_CORE => Ok(c),
                _ => bail!(
                    "core {n} does not exist: a core list names cores 0 to {MAX_CORE} at most, and this machine has cores 0 to {} (in the list {s:?})",
                    online() - 1
                ),
            }
        };
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let c = num(part)?;
                (c, c)
            }
        };
        if a > b {
            return Err(bad());
        }
        out.push((a, b));
    }
    if out.is_empty() {
        bail!("empty core list {s:?}: give cores such as 0 or 0,2-3");
    }
    Ok(out)
}

/// Checks that every core of a list exists on a machine with `ncpu`
/// cores, without expanding it.
pub fn check_list(s: &str, ncpu: usize) -> Result<Vec<(usize, usize)>> {
    let r = ranges(s)?;
    if let Some(&(_, hi)) = r.iter().find(|&&(_, hi)| hi >= ncpu) {
        bail!(
            "core {hi} does not exist: this machine has cores 0 to {} (in the list {s:?})",
            ncpu - 1
        );
    }
    Ok(r)
}

/// Parses a list such as `0`, `0,2` or `0-3,6` for a machine with `ncpu`
/// cores: checked first, then expanded.
pub fn parse_list(s: &str, ncpu: usize) -> Result<Vec<usize>> {
    Ok(check_list(s, ncpu)?
        .into_iter()
        .flat_map(|(a, b)| a..=b)
        .collect())
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
pub use linerate_results::system::cores_shared as shared;

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
        Some(s) => parse_list(s, ncpu)?,
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
        assert_eq!(parse_list("0", 8).unwrap(), vec![0]);
        assert_eq!(parse_list("0,2-4", 8).unwrap(), vec![0, 2, 3, 4]);
        assert!(parse_list("x", 8).is_err());
        assert!(parse_list("3-1", 8).is_err());
        assert!(parse_list("", 8).is_err());
        assert!(parse_list("-1", 8).is_err());
        assert!(parse_list("+1", 8).is_err());
    }

    #[test]
    fn huge_ranges_are_refused_before_they_expand() {
        // These used to allocate 800 GB or overflow the capacity.
        for s in [
            "0-99999999999",
            "0-18446744073709551615",
            "0-99999999999999999999999",
        ] {
            let e = ranges(s).unwrap_err().to_string();
            assert!(e.contains(s) && e.contains("does not exist"), "{e}");
        }
        assert_eq!(ranges("0-1023").unwrap(), vec![(0, 1023)]);
        let e = check_list("0-1023", 2).unwrap_err().to_string();
        assert!(
            e.contains("core 1023 does not exist")
                && e.contains("cores 0 to 1 (in the list \"0-1023\")"),
            "{e}"
        );
        assert_eq!(check_list("1,0-1", 2).unwrap(), vec![(1, 1), (0, 1)]);
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
