//! Per-message overhead, as document 000 derives it: time per message
//! against message size is a line, `t = overhead + size / rate`; its
//! intercept is the system's overhead per message and its slope the
//! inverse of the asymptotic rate. The fit alone: `linerate overhead` and
//! the sweep report's fits read the points from results.

use serde::Serialize;

/// The least-squares line through (size, time per message) points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OverheadFit {
    /// Intercept: time per message of size 0, in microseconds.
    pub overhead_us: f64,
    /// 1 / slope: the rate large messages tend to, MB/s (10^6 B/s).
    pub asymptotic_mb_s: f64,
    /// Coefficient of determination of the fit.
    pub r_squared: f64,
    /// Points fitted.
    pub points: usize,
}

/// Fits `time_s = overhead + size_bytes / rate`. Needs at least two
/// distinct sizes.
pub fn fit(points: &[(f64, f64)]) -> Option<OverheadFit> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    Some(OverheadFit {
        overhead_us: intercept * 1e6,
        asymptotic_mb_s: if slope > 0.0 {
            1.0 / slope / 1e6
        } else {
            f64::INFINITY
        },
        r_squared: if syy > 0.0 {
            sxy * sxy / (sxx * syy)
        } else {
            1.0
        },
        points: points.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_a_known_line() {
        // 575 us per message plus 10 MB/s, as document 000's C10.
        let pts: Vec<(f64, f64)> = [64.0, 1024.0, 8192.0, 32768.0, 65500.0]
            .iter()
            .map(|&s| (s, 575e-6 + s / 10e6))
            .collect();
        let f = fit(&pts).unwrap();
        assert!((f.overhead_us - 575.0).abs() < 1e-6, "{f:?}");
        assert!((f.asymptotic_mb_s - 10.0).abs() < 1e-9, "{f:?}");
        assert!((f.r_squared - 1.0).abs() < 1e-12);
    }

    #[test]
    fn noisy_points_fit_close() {
        let pts: Vec<(f64, f64)> = (1..=20)
            .map(|i| {
                let s = i as f64 * 4096.0;
                let noise = if i % 2 == 0 { 1.0 + 1e-3 } else { 1.0 - 1e-3 };
                (s, (2e-6 + s / 1e9) * noise)
            })
            .collect();
        let f = fit(&pts).unwrap();
        assert!((f.overhead_us - 2.0).abs() < 0.2, "{f:?}");
        assert!((f.asymptotic_mb_s - 1000.0).abs() < 5.0, "{f:?}");
    }

    #[test]
    fn needs_two_sizes() {
        assert!(fit(&[(1.0, 1.0)]).is_none());
        assert!(fit(&[(1.0, 1.0), (1.0, 2.0)]).is_none());
    }
}
