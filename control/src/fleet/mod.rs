//! Many pairs from one controller (docs/fleet.md): `linerate fleet
//! up|status|down` makes lab pairs with their agents on this host and
//! writes their inventory ([`command`], [`host`]); `stream|rr --fleet`
//! runs on every pair of an inventory at once; `fleet prometheus` prints
//! the scrape configuration of an inventory's agents ([`prometheus`]).

pub mod command;
mod host;
pub mod prometheus;
pub mod run;
