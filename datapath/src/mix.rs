//! Traffic mixes: frames of several sizes in a fixed proportion (IMIX).
//!
//! A mix is a list of `size:weight` parts; a sender cycles through one
//! deterministic sequence of `sum(weights)` frames in which each size comes
//! `weight` times, interleaved (smooth weighted round robin, as nginx
//! balances upstreams) rather than in runs, so that any stretch of the
//! stream carries the mix. Sizes count the FCS, as every frame size in
//! linerate does (RFC 2544).

use std::fmt;

use crate::frame::FCS_LEN;

/// The longest sequence a mix may have (the sum of its weights): the size
/// of the generator's pattern array.
pub const MAX_PATTERN: usize = 64;

/// Simple IMIX: 64, 594 and 1518-byte frames (FCS included), 7:4:1.
pub const IMIX: [(usize, u32); 3] = [(64, 7), (594, 4), (1518, 1)];

/// Frames of several sizes in a fixed proportion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeMix {
    parts: Vec<(usize, u32)>,
    pattern: Vec<usize>,
}

/// Why text is not a traffic mix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MixError {
    /// A part that is not `SIZE:WEIGHT`.
    #[error("{0:?} is not SIZE:WEIGHT (e.g. 64:7): give frame sizes in bytes with whole-number weights, as in 64:7,594:4,1518:1, or `imix`")]
    BadPart(String),
    /// A weight of 0.
    #[error("{0:?}: a weight of 0 sends no frames of that size; leave the size out")]
    ZeroWeight(String),
    /// A size given twice.
    #[error("frame size {0} is given twice: give each size once with its whole weight")]
    Repeated(usize),
    /// A sequence longer than [`MAX_PATTERN`].
    #[error("the weights add up to {0}: a mix cycles through at most {MAX_PATTERN} frames, so give smaller weights (e.g. 7:4:1)")]
    TooLong(u64),
}

impl SizeMix {
    /// Simple IMIX (64:7, 594:4, 1518:1).
    pub fn imix() -> Self {
        Self::new(IMIX.to_vec()).expect("simple IMIX is a valid mix")
    }

    /// Frames of one size.
    pub fn single(frame_size: usize) -> Self {
        Self::new(vec![(frame_size, 1)]).expect("one size is a valid mix")
    }

    /// A mix of `(frame size, weight)` parts.
    pub fn new(mut parts: Vec<(usize, u32)>) -> Result<Self, MixError> {
        let total: u64 = parts.iter().map(|&(_, w)| u64::from(w)).sum();
        if total > MAX_PATTERN as u64 {
            return Err(MixError::TooLong(total));
        }
        for (i, &(size, weight)) in parts.iter().enumerate() {
            if weight == 0 {
                return Err(MixError::ZeroWeight(format!("{size}:0")));
            }
            if parts[..i].iter().any(|&(s, _)| s == size) {
                return Err(MixError::Repeated(size));
            }
        }
        if parts.is_empty() {
            return Err(MixError::BadPart(String::new()));
        }
        if let [(_, weight)] = &mut parts[..] {
            // One size: its weight says nothing.
            *weight = 1;
        }
        let pattern = interleave(&parts);
        Ok(Self { parts, pattern })
    }

    /// `imix`, one size (`64`), or a list of `SIZE:WEIGHT` parts
    /// (`64:7,594:4,1518:1`). Sizes are checked against the link by the
    /// caller ([`crate::geometry::Geometry::check_frame`]).
    pub fn parse(text: &str) -> Result<Self, MixError> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("imix") {
            return Ok(Self::imix());
        }
        let parts = text
            .split(',')
            .map(|part| {
                let bad = || MixError::BadPart(part.trim().to_string());
                let (size, weight) = part.split_once(':').unwrap_or((part, "1"));
                let size = size.trim().parse::<usize>().map_err(|_| bad())?;
                let weight = weight.trim().parse::<u32>().map_err(|_| bad())?;
                Ok((size, weight))
            })
            .collect::<Result<Vec<_>, MixError>>()?;
        Self::new(parts)
    }

    /// The parts, `(frame size, weight)`, in the order given.
    pub fn parts(&self) -> &[(usize, u32)] {
        &self.parts
    }

    /// Whether the mix has a single size.
    pub fn is_single(&self) -> bool {
        self.parts.len() == 1
    }

    /// The frame sizes (FCS included) a sender cycles through, in order.
    pub fn pattern(&self) -> &[usize] {
        &self.pattern
    }

    /// The size of frame `seq` of a flow.
    #[inline]
    pub fn size_of(&self, seq: u64) -> usize {
        self.pattern[(seq % self.pattern.len() as u64) as usize]
    }

    /// The largest frame, FCS included.
    pub fn max_frame(&self) -> usize {
        self.parts.iter().map(|&(s, _)| s).max().unwrap_or(0)
    }

    /// The smallest frame, FCS included.
    pub fn min_frame(&self) -> usize {
        self.parts.iter().map(|&(s, _)| s).min().unwrap_or(0)
    }

    /// The mean frame size, FCS included.
    pub fn mean_frame(&self) -> f64 {
        self.pattern.iter().sum::<usize>() as f64 / self.pattern.len() as f64
    }

    /// Bytes handed to sockets (frames without FCS) by the first `frames`
    /// frames of a flow: what a receiver and `ip -s link` count.
    pub fn descriptor_bytes(&self, frames: u64) -> u64 {
        let n = self.pattern.len() as u64;
        let per_cycle: u64 = self.pattern.iter().map(|&s| (s - FCS_LEN) as u64).sum();
        let rest: u64 = self.pattern[..(frames % n) as usize]
            .iter()
            .map(|&s| (s - FCS_LEN) as u64)
            .sum();
        frames / n * per_cycle + rest
    }
}

impl fmt::Display for SizeMix {
    /// `64` for one size, else `64:7,594:4,1518:1`: text [`SizeMix::parse`]
    /// reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [(size, _)] = self.parts[..] {
            return write!(f, "{size}");
        }
        let parts: Vec<String> = self.parts.iter().map(|(s, w)| format!("{s}:{w}")).collect();
        f.write_str(&parts.join(","))
    }
}

/// Smooth weighted round robin: each step every part gains its weight,
/// the part with the most (the first on a tie) is taken and pays the total.
fn interleave(parts: &[(usize, u32)]) -> Vec<usize> {
    let total: i64 = parts.iter().map(|&(_, w)| i64::from(w)).sum();
    let mut credit = vec![0i64; parts.len()];
    (0..total)
        .map(|_| {
            for (c, &(_, w)) in credit.iter_mut().zip(parts) {
                *c += i64::from(w);
            }
            let best = (0..parts.len())
                .max_by_key(|&i| (credit[i], std::cmp::Reverse(i)))
                .unwrap_or(0);
            credit[best] -= total;
            parts[best].0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn imix_is_seven_four_one_interleaved() {
        let m = SizeMix::parse("imix").unwrap();
        assert_eq!(m, SizeMix::parse("64:7,594:4,1518:1").unwrap());
        assert_eq!(m.pattern().len(), 12);
        assert_eq!(
            m.pattern(),
            [64, 594, 64, 64, 594, 64, 1518, 64, 594, 64, 594, 64]
        );
        assert_eq!(m.to_string(), "64:7,594:4,1518:1");
        assert_eq!((m.min_frame(), m.max_frame()), (64, 1518));
        // (7*64 + 4*594 + 1518) / 12
        assert!((m.mean_frame() - 4342.0 / 12.0).abs() < 1e-9);
        // Without FCS: 7*60 + 4*590 + 1514 per 12 frames.
        assert_eq!(m.descriptor_bytes(12), 4294);
        assert_eq!(m.descriptor_bytes(25), 2 * 4294 + 60);
    }

    #[test]
    fn one_size_is_a_mix_of_one() {
        let m = SizeMix::parse("128").unwrap();
        assert!(m.is_single());
        assert_eq!(m.pattern(), [128]);
        assert_eq!(m.to_string(), "128");
        assert_eq!(m.descriptor_bytes(3), 3 * 124);
    }

    #[test]
    fn bad_mixes_say_what_to_give() {
        for (text, want) in [
            ("64:x", "is not SIZE:WEIGHT"),
            ("", "is not SIZE:WEIGHT"),
            ("64:7,,1518:1", "is not SIZE:WEIGHT"),
            ("64:0,128:1", "a weight of 0"),
            ("64:1,64:2", "given twice"),
            ("64:60,128:5", "add up to 65"),
            ("64:4294967295,128:4294967295", "add up to 8589934590"),
        ] {
            let e = SizeMix::parse(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    proptest! {
        /// The sequence holds each size exactly `weight` times, and reads
        /// back from its text.
        #[test]
        fn pattern_holds_each_size_its_weight(parts in proptest::collection::btree_map(64usize..9018, 1u32..8, 1..6)) {
            let parts: Vec<(usize, u32)> = parts.into_iter().collect();
            let m = SizeMix::new(parts.clone()).unwrap();
            for &(s, w) in &parts {
                let w = if parts.len() == 1 { 1 } else { w };
                prop_assert_eq!(m.pattern().iter().filter(|&&p| p == s).count(), w as usize);
            }
            prop_assert_eq!(SizeMix::parse(&m.to_string()).unwrap(), m.clone());
            let n = m.pattern().len() as u64;
            let by_frame: u64 = (0..3 * n + 1).map(|i| (m.size_of(i) - FCS_LEN) as u64).sum();
            prop_assert_eq!(m.descriptor_bytes(3 * n + 1), by_frame);
        }
    }
}
