//! Compiles the XDP programs and the softirq clock with clang through libbpf-cargo's skeleton
//! builder; the objects are embedded in the library.

use std::{env, path::PathBuf};

use libbpf_cargo::SkeletonBuilder;

/// (source, object): the steering program and the frame generator.
const PROGRAMS: [(&str, &str); 3] = [
    ("src/bpf/steer.bpf.c", "steer.bpf.o"),
    ("src/bpf/gen.bpf.c", "gen.bpf.o"),
    ("src/bpf/softirq.bpf.c", "softirq.bpf.o"),
];

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let arch = env::var("CARGO_CFG_TARGET_ARCH").expect("target arch is set by cargo");
    // Debian keeps asm/types.h under the multiarch include directory.
    let multiarch = match arch.as_str() {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        other => other,
    };
    for (src, obj) in PROGRAMS {
        if let Err(err) = SkeletonBuilder::new()
            .source(src)
            .obj(out.join(obj))
            .clang_args([
                format!("-I/usr/include/{multiarch}"),
                "-Wall".to_string(),
                "-O2".to_string(),
            ])
            .build()
        {
            panic!(
                "building {src} failed: {err:#}\n\
                 hint: run `scripts/install-deps` (clang, llvm, libelf-dev) first"
            );
        }
        println!("cargo:rerun-if-changed={src}");
    }
}
