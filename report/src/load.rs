//! Reads a sweep directory for its report: the sweep file, the options
//! and the records that belong to it.

use super::data::Kept;
use crate::sweep::{
    saved::{check_values, Size, SweepOptions, MAX_OPTIONS, MAX_SPEC, OPTIONS, RESULTS, SPEC},
    spec::SweepSpec,
    store::{self},
};
use anyhow::{Context, Result};
use std::path::Path;

/// A sweep directory as a report reads it.
pub(super) struct Loaded {
    pub(super) spec: SweepSpec,
    pub(super) kept: Kept,
    /// How it was run (--quick, --repeats).
    pub(super) opts: SweepOptions,
    /// Lines of results.jsonl that are not records of the sweep.
    pub(super) skipped: usize,
}

/// Reads the sweep file and the records of `dir` (lines of results.jsonl
/// that are not records are left out, with a warning).
pub(super) fn load(dir: &Path) -> Result<Loaded> {
    // Regular files only, never through a link.
    let Some(text) = linerate_host::files::read_regular(&dir.join(SPEC), MAX_SPEC, false)? else {
        anyhow::bail!(
            "{} holds no {SPEC}: is it a sweep directory?",
            dir.display()
        );
    };
    let text = String::from_utf8(text)
        .with_context(|| format!("{} is not UTF-8", dir.join(SPEC).display()))?;
    let spec = SweepSpec::parse(&text, &dir.join(SPEC).display().to_string())?;
    let size = Size::of(&spec, false)?;
    let mut kept = Kept::new(&spec);
    let loaded = store::load(
        &dir.join(RESULTS),
        &size.per_part,
        store::Mode::Report,
        |r| check_values(&spec, r),
        |r| kept.add(r),
    )?;
    for w in &loaded.warnings {
        eprintln!("linerate: warning: {w}");
    }
    let opts = linerate_host::files::read_text(&dir.join(OPTIONS), MAX_OPTIONS, false)
        .ok()
        .and_then(|t| serde_json::from_str::<SweepOptions>(&t).ok())
        .unwrap_or_default();
    Ok(Loaded {
        spec,
        kept,
        opts,
        skipped: loaded.skipped,
    })
}
