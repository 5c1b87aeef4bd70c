//! The C program and the Rust loader share two map value layouts
//! (`struct steer_config`, `struct steer_stats`). These tests read them
//! from the compiled object's BTF, so that a field added or moved on one
//! side and not the other fails here instead of corrupting a run.

use libbpf_rs::btf::{
    types::{Array, Int, MemberAttr, Struct},
    Btf, HasSize,
};

use crate::{
    generator::{GEN_CONFIG_LAYOUT, GEN_CONFIG_SIZE, GEN_FLOW_LAYOUT, GEN_FLOW_SIZE, GEN_OBJECT},
    program::{CONFIG_LAYOUT, CONFIG_SIZE, OBJECT, RX_FLOW_LAYOUT, RX_FLOW_SIZE},
    stats::{STATS_FIELDS, STATS_SIZE},
};

/// (name, byte offset, byte size) of each member of a C struct.
fn members(btf: &Btf<'_>, name: &str) -> (usize, Vec<(String, usize, usize)>) {
    let s: Struct<'_> = btf
        .type_by_name(name)
        .unwrap_or_else(|| panic!("struct {name} is not in the program's BTF"));
    let fields = s
        .iter()
        .map(|m| {
            let offset = match m.attr {
                MemberAttr::Normal { offset } => offset as usize / 8,
                MemberAttr::BitField { .. } => panic!("{name} has a bit field"),
            };
            let int = |t: libbpf_rs::btf::BtfType<'_>| {
                Int::try_from(t.skip_mods_and_typedefs())
                    .ok()
                    .map(|i| i.size())
            };
            // An integer, or an array of integers (its whole size).
            let size = btf
                .type_by_id::<libbpf_rs::btf::BtfType<'_>>(m.ty)
                .and_then(|t| match Array::try_from(t.skip_mods_and_typedefs()) {
                    Ok(a) => int(a.contained_type()).map(|s| s * a.capacity()),
                    Err(t) => int(t),
                })
                .unwrap_or_else(|| panic!("{name}: a member that is not an integer"));
            let field = m.name.map(|n| n.to_string_lossy().into_owned());
            (field.unwrap_or_default(), offset, size)
        })
        .collect();
    (s.size(), fields)
}

#[test]
fn config_layout_matches_the_program() {
    let btf = Btf::from_raw("steer", OBJECT)
        .expect("reading BTF")
        .expect("the object has BTF");
    let (size, fields) = members(&btf, "steer_config");
    assert_eq!(size, CONFIG_SIZE, "size of struct steer_config");
    let want: Vec<(String, usize, usize)> = CONFIG_LAYOUT
        .iter()
        .map(|(n, o, s)| (n.to_string(), *o, *s))
        .collect();
    assert_eq!(fields, want, "struct steer_config vs CONFIG_LAYOUT");
}

#[test]
fn stats_layout_matches_the_program() {
    let btf = Btf::from_raw("steer", OBJECT)
        .expect("reading BTF")
        .expect("the object has BTF");
    let (size, fields) = members(&btf, "steer_stats");
    assert_eq!(size, STATS_SIZE, "size of struct steer_stats");
    let want: Vec<(String, usize, usize)> = STATS_FIELDS
        .iter()
        .enumerate()
        .map(|(i, n)| (n.to_string(), i * 8, 8))
        .collect();
    assert_eq!(fields, want, "struct steer_stats vs STATS_FIELDS");
}

fn check(object: &[u8], name: &str, size: usize, layout: &[(&str, usize, usize)]) {
    let btf = Btf::from_raw("obj", object)
        .expect("reading BTF")
        .expect("the object has BTF");
    let (got_size, fields) = members(&btf, name);
    assert_eq!(got_size, size, "size of struct {name}");
    let want: Vec<(String, usize, usize)> = layout
        .iter()
        .map(|(n, o, s)| (n.to_string(), *o, *s))
        .collect();
    assert_eq!(fields, want, "struct {name} vs its Rust layout");
}

#[test]
fn generator_layouts_match_the_program() {
    check(
        GEN_OBJECT,
        "gen_config",
        GEN_CONFIG_SIZE,
        &GEN_CONFIG_LAYOUT,
    );
    check(GEN_OBJECT, "gen_flow", GEN_FLOW_SIZE, &GEN_FLOW_LAYOUT);
}

#[test]
fn rx_flow_layout_matches_the_program() {
    check(OBJECT, "rx_flow", RX_FLOW_SIZE, &RX_FLOW_LAYOUT);
}

#[test]
fn softirq_time_layout_matches_the_program() {
    use crate::softirq::{SOFTIRQ_OBJECT, TIME_LAYOUT, TIME_SIZE};
    check(SOFTIRQ_OBJECT, "softirq_time", TIME_SIZE, &TIME_LAYOUT);
}
