//! A golden file of the low rung: the Cranelift IR of one kernel (blur3x3_u16, its output
//! vectorized by 8, at a fixed shape), so a change to code generation shows up as a diff of
//! the IR, not only as a different answer or time. An integer kernel on purpose: the only
//! host-dependent choice code generation makes is whether to fuse float multiply-adds, so its
//! IR is the same on every x86-64 host. Refresh an intended change with `INSTA_UPDATE=always`.

mod common;

use strata_scheduler::lower::bind_sizes;

#[test]
fn blur3x3_u16_clif() {
    let source = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/kernels/blur3x3_u16.strata"
    ))
    .unwrap();
    let schedule = "out: vectorize(x, 8)";
    let (_, lowered) = common::lower_source(&source, schedule);
    let lowered = bind_sizes(&lowered, &strata_dsl::sizes(&[("H", 10), ("W", 18)])).unwrap();
    let kernel = common::compile_lowered(&source, schedule, &lowered);
    insta::assert_snapshot!(kernel.clif().join("\n"));
}
