//! A golden file of the low rung with LLVM: the LLVM IR strata generates for one kernel
//! (blur3x3_u16, its output vectorized by 8, at a fixed shape), before LLVM's optimizations,
//! so a change to the LLVM backend's code generation shows up as a diff of the IR. Optimized
//! IR depends on the host CPU (its vector widths and features decide what LLVM's passes do),
//! and so do the `target-cpu` and `target-features` attributes, whose values are replaced by
//! placeholders here; what remains is the same on every x86-64 host (an integer kernel: no
//! fused multiply-add to choose). Refresh an intended change with `INSTA_UPDATE=always`.
//! Built with `--features llvm`.
#![cfg(feature = "llvm")]

mod common;

use strata_jit::{Backend, CodegenOptions, CompiledKernel};
use strata_scheduler::lower::bind_sizes;

#[test]
fn blur3x3_u16_llvm_ir() {
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/kernels/blur3x3_u16.strata"
    ))
    .unwrap();
    let (_, lowered) = common::lower_source(&source, "out: vectorize(x, 8)");
    let lowered = bind_sizes(&lowered, &strata_dsl::sizes(&[("H", 10), ("W", 18)])).unwrap();
    let options = CodegenOptions {
        backend: Backend::Llvm,
        verify: true,
        keep_text: true,
        opt_level: "none",
        ..CodegenOptions::default()
    };
    let kernel = CompiledKernel::new(&lowered, &options).unwrap_or_else(|e| panic!("{e}"));
    insta::assert_snapshot!(without_host(&kernel.ir().join("\n")));
}

/// `ir` with the values of the host-dependent attributes replaced by `<host>`.
fn without_host(ir: &str) -> String {
    let mut text = ir.to_string();
    for key in ["\"target-cpu\"=\"", "\"target-features\"=\""] {
        let mut from = 0;
        while let Some(at) = text[from..].find(key) {
            let start = from + at + key.len();
            let end = start + text[start..].find('"').expect("an attribute value ends");
            text.replace_range(start..end, "<host>");
            from = start + "<host>".len();
        }
    }
    text
}
