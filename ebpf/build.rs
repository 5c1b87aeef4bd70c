//! Compiles the XDP steering program with clang through libbpf-cargo's
//! skeleton builder; the object is embedded in the library.

use std::{env, path::PathBuf};

use libbpf_cargo::SkeletonBuilder;

const SRC: &str = "src/bpf/steer.bpf.c";

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let arch = env::var("CARGO_CFG_TARGET_ARCH").expect("target arch is set by cargo");
    // Debian keeps asm/types.h under the multiarch include directory.
    let multiarch = match arch.as_str() {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        other => other,
    };
    if let Err(err) = SkeletonBuilder::new()
        .source(SRC)
        .obj(out.join("steer.bpf.o"))
        .clang_args([
            format!("-I/usr/include/{multiarch}"),
            "-Wall".to_string(),
            "-O2".to_string(),
        ])
        .build()
    {
        panic!(
            "building {SRC} failed: {err:#}\n\
             hint: run `scripts/install-deps` (clang, llvm, libelf-dev) first"
        );
    }
    println!("cargo:rerun-if-changed={SRC}");
}
