//! The noise floor between two cores, as `linerate doctor` measures it, to
//! hold against `/work/shared/tools/floor.c`:
//! `cargo run --release -p linerate-datapath --example floor -- FROM TO SECONDS`.

use std::time::Duration;

use linerate_datapath::noise::{measure, FloorPlan};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [from, to, secs] = args.as_slice() else {
        return Err("usage: floor FROM_CORE TO_CORE SECONDS".into());
    };
    let plan = FloorPlan::new(
        from.parse()?,
        to.parse()?,
        Duration::from_secs_f64(secs.parse()?),
    );
    let f = measure(&plan)?;
    for (name, h) in [("spin", f.spin), ("wake", f.wake)] {
        println!(
            "{name}: p50 {:.2} us, p99 {:.2} us, p99.9 {:.2} us, max {:.1} us ({} of {} stamps)",
            h.p50_us, h.p99_us, h.p999_us, h.max_us, h.received, h.sent
        );
    }
    for (core, g) in [(plan.from_core, f.from_gaps), (plan.to_core, f.to_gaps)] {
        println!(
            "gaps core {core}: {:.3} % over 1 us, {} over 1 ms, max {:.1} us",
            g.pct(),
            g.over_1ms,
            g.max_ns as f64 / 1e3
        );
    }
    Ok(())
}
