//! What only the LLVM backend promises: vectors keep the schedule's width in the machine code
//! (one zmm register for 16 f32 lanes on an AVX-512 host, ymm with AVX2), and a register tile's
//! accumulators stay in registers across the reduction loop. Built with `--features llvm`.
#![cfg(feature = "llvm")]

mod common;
use strata_jit::{Backend, CodegenOptions, CompiledKernel};

fn compile_llvm(source: &str, schedule: &str, fixed: &[(&str, i64)]) -> CompiledKernel {
    let pipeline = strata_dsl::parse_kernel(source, "test.strata").unwrap();
    let schedule = strata_scheduler::schedule::text::parse_schedule(schedule).unwrap();
    let lowered = strata_jit::lower_for(&pipeline, &schedule, &strata_dsl::sizes(fixed))
        .unwrap_or_else(|e| panic!("{e}"));
    let options = CodegenOptions {
        backend: Backend::Llvm,
        verify: true,
        keep_text: true,
        ..CodegenOptions::default()
    };
    CompiledKernel::new(&lowered, &options).unwrap_or_else(|e| panic!("{e}"))
}

/// The register name the host's widest vectors use (`None` off x86-64).
fn widest_register() -> Option<&'static str> {
    match Backend::Llvm.vector_bytes() {
        64 if cfg!(target_arch = "x86_64") => Some("zmm"),
        32 if cfg!(target_arch = "x86_64") => Some("ymm"),
        _ => None,
    }
}

#[test]
fn sixteen_f32_lanes_use_the_widest_registers() {
    let Some(register) = widest_register() else {
        return;
    };
    let source = "kernel s(X: f32[N]) -> Y: f32[N] { Y(i) = X(i) * 3.0 + 1.0; }";
    let compiled = compile_llvm(source, "Y: vectorize(i, 16)", &[]);
    let asm = compiled.asm().join("\n");
    assert!(
        asm.contains(&format!("%{register}")),
        "no {register} register in:\n{asm}"
    );
}

/// An 8 x 32 f32 tile of C (16 zmm accumulators with AVX-512): the k loop loads B and
/// broadcasts A but neither loads nor stores C.
#[test]
fn tile_accumulators_stay_in_registers() {
    if widest_register() != Some("zmm") {
        return;
    }
    let source = "kernel matmul(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] {
        C(i, j) = sum(k in 0..K) A(i, k) * B(k, j); }";
    let schedule = "C: tile(i, j, io, jo, ii, ji, 8, 32).vectorize(ji).unroll(ii)
        C.update(0): tile(i, j, io, jo, ii, ji, 8, 32).reorder(k, ii, ji).vectorize(ji).unroll(ii)";
    let compiled = compile_llvm(source, schedule, &[("M", 64), ("N", 64), ("K", 64)]);
    let asm = compiled.asm().join("\n");
    let fmas = asm.lines().filter(|l| l.contains("vfmadd")).count();
    assert!(fmas >= 16, "expected 16 fmas per k step:\n{asm}");
    // The loop holding the fmas: from its label to its backward branch.
    let lines: Vec<&str> = asm.lines().collect();
    let first_fma = lines.iter().position(|l| l.contains("vfmadd")).unwrap();
    let start = (0..first_fma)
        .rev()
        .find(|&i| lines[i].starts_with(".LBB"))
        .unwrap();
    let end = (first_fma..lines.len())
        .find(|&i| lines[i].trim_start().starts_with("j"))
        .unwrap();
    let body = lines[start..=end].join("\n");
    let stores = body
        .lines()
        .filter(|l| l.contains("vmovups") && l.contains("%zmm") && l.trim_end().ends_with(')'))
        .count();
    assert_eq!(stores, 0, "C is stored inside the k loop:\n{body}");
}
