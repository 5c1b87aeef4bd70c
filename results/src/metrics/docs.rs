//! docs/metrics.md, generated from the lists.

/// A counter of a family: a field of its snapshot, declared with the
/// worker counters in `datapath::stats` (that family is declared there).
use linerate_counters::stats::Counter;

use super::lists::{
    figures, refused_counters, CPU_FAMILY, INTERFACE, LATENCY_FAMILY, RUN_ACTIVE, STEERING,
    STEERING_FAMILY, WORKER_COUNTERS, XSK_EVENTS, XSK_FAMILY,
};

#[cfg(test)]
pub(super) fn counter_table<T>(o: &mut String, head: &str, list: &[Counter<T>], exported: bool) {
    use std::fmt::Write as _;
    if exported {
        let _ = writeln!(
            o,
            "| {head} | unit | on /metrics | meaning |\n|---|---|---|---|"
        );
    } else {
        let _ = writeln!(o, "| {head} | unit | meaning |\n|---|---|---|");
    }
    for c in list {
        if exported {
            let _ = writeln!(
                o,
                "| `{}` | {} | `{}_total` | {} |",
                c.name, c.unit, c.exported, c.about
            );
        } else {
            let _ = writeln!(o, "| `{}` | {} | {} |", c.name, c.unit, c.about);
        }
    }
    o.push('\n');
}

/// docs/metrics.md, generated from the list (by its test).
#[cfg(test)]
pub fn markdown() -> String {
    use std::fmt::Write as _;
    let mut o = String::from(
        "# Metrics\n\n\
         <!-- Generated from results/src/metrics/lists.rs: change the list there, then\n\
         `LINERATE_WRITE_DOCS=1 cargo test -p linerate metrics_page` rewrites this page. -->\n\n\
         Every figure a result holds and every counter linerate keeps, by the name a sweep file\n\
         uses (`metrics` of a `[[table]]`, `y` of a `[[figure]]`, `ours` of a `[[reference]]`,\n\
         `metric` and `cpu` of a `[[goal]]`): the dotted path of the field in the `--json`\n\
         result. A sweep file naming anything else is refused before it runs. MB = 10^6 bytes.\n\n\
         ## Figures\n\n\
         | name | unit | tests | meaning |\n|---|---|---|---|\n",
    );
    for f in figures() {
        let _ = writeln!(
            o,
            "| `{}` | {} | {} | {} |",
            f.name,
            f.unit,
            f.read.tests().describe(),
            f.about
        );
    }
    for c in refused_counters() {
        let _ = writeln!(
            o,
            "| `frames.{}` | {} | stream | {}: the receivers' whole run (`counters.rx.{}`) |",
            c.name, c.unit, c.about, c.name
        );
    }
    o.push_str(
        "\n## Counters\n\n\
         ### Worker counters\n\n\
         Every worker (sender, receiver, rr client, responder) keeps these; every result\n\
         lists them per worker (`workers[].window`, `workers[].total`). In sweep files:\n\
         `counters.tx.NAME` and `counters.rx.NAME`, the whole run summed over the senders'\n\
         (rr: clients') or the receivers' (responders') workers, and `counters.tx.NAME_per_s`,\n\
         `counters.rx.NAME_per_s` over the window. An agent's /metrics exports them per worker\n\
         (label `queue`, after the run's), live during a run and the run's totals after it.\n\n",
    );
    counter_table(&mut o, "NAME", WORKER_COUNTERS, true);
    let _ = write!(
        o,
        "### AF_XDP socket statistics\n\n\
         XDP_STATISTICS of each worker's socket (`workers[].xsk`), known once it ended. In sweep\n\
         files: `xsk.tx.NAME`, `xsk.rx.NAME`, summed over the side's workers. On /metrics:\n\
         `{}_total` per worker, label `event`.\n\n",
        XSK_FAMILY.0
    );
    counter_table(&mut o, "NAME", XSK_EVENTS, false);
    let _ = write!(
        o,
        "### Steering program\n\n\
         The XDP program's counters over the run: a stream's `xdp.NAME` (on the receiving\n\
         interface), rr's `xdp.client.NAME` and `xdp.responder.NAME`. On /metrics:\n\
         `{}_total`, label `action`.\n\n",
        STEERING_FAMILY.0
    );
    counter_table(&mut o, "NAME", STEERING, false);
    o.push_str(
        "### Interfaces\n\n\
         The interfaces' own counters over the run (`ip -s link`): `interfaces.tx.NAME` (the\n\
         sending interface), `interfaces.rx.NAME` (the receiving one).\n\n",
    );
    counter_table(&mut o, "NAME", INTERFACE, false);
    let _ = write!(
        o,
        "## /metrics\n\n\
         An agent's `GET /metrics` (OpenMetrics text) holds the families below. Once the\n\
         agent had a run, every series carries that run's labels first: `run` (the agent's\n\
         run id), `pair` (the fleet pair the run request named, docs/fleet.md; no such\n\
         label for a one-pair run: Prometheus reads an absent label as `pair=\"\"`), `role`\n\
         (`tx` or `rx`: the run's, a worker's own on worker series) and `interface` (this\n\
         host's). Before its first run an agent serves its cores alone.\n\n\
         | family | labels after the run's | meaning |\n|---|---|---|\n\
         | `{}` | test | {} |\n\
         | `linerate_worker_*_total` | queue | the worker counters above |\n\
         | `{}_total` | queue, event | {} |\n\
         | `{}_total` | action | {} |\n\
         | `{}_total` | core, mode | {} |\n\
         | `{}` | quantile | {} |\n\n\
         `linerate fleet prometheus` writes a Prometheus configuration that scrapes every\n\
         agent of a fleet (docs/fleet.md); `deploy/grafana/linerate.json` is a dashboard of\n\
         these series.\n",
        RUN_ACTIVE.0,
        RUN_ACTIVE.1,
        XSK_FAMILY.0,
        XSK_FAMILY.1,
        STEERING_FAMILY.0,
        STEERING_FAMILY.1,
        CPU_FAMILY.0,
        CPU_FAMILY.1,
        LATENCY_FAMILY.0,
        LATENCY_FAMILY.1,
    );
    o
}
