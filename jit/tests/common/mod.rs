//! Helpers shared by the integration tests that compile kernels from source.

use strata_dsl::{parse_kernel, Pipeline};
use strata_jit::{CodegenOptions, CompiledKernel};
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::LoweredKernel;

/// Parses `source`, applies `schedule` and lowers; panics with both and the error on failure.
pub fn lower_source(source: &str, schedule: &str) -> (Pipeline, LoweredKernel) {
    let pipeline =
        parse_kernel(source, "test.strata").unwrap_or_else(|e| panic!("{source}\n{e:?}"));
    let parsed = parse_schedule(schedule).unwrap_or_else(|e| panic!("{schedule}\n{e:?}"));
    let lowered = strata_jit::lower_for(&pipeline, &parsed, &Default::default())
        .unwrap_or_else(|e| panic!("{source}\n{schedule}\n{e}"));
    (pipeline, lowered)
}

/// Compiles a lowered kernel with Cranelift's verifier on, keeping the CLIF and machine code
/// text for the test's checks; `source` and `schedule` only label a failure.
pub fn compile_lowered(source: &str, schedule: &str, lowered: &LoweredKernel) -> CompiledKernel {
    let options = CodegenOptions {
        verify: true,
        keep_text: true,
        ..CodegenOptions::default()
    };
    CompiledKernel::new(lowered, &options)
        .unwrap_or_else(|e| panic!("{source}\n{schedule}\n{e}\n{lowered}"))
}

/// Compiles a lowered kernel with every backend built in (Cranelift first), verifier on.
#[allow(
    dead_code,
    reason = "not every test file that includes this module compiles this way"
)]
pub fn compile_with_every_backend(
    source: &str,
    schedule: &str,
    lowered: &LoweredKernel,
) -> Vec<CompiledKernel> {
    strata_jit::Backend::built()
        .into_iter()
        .map(|backend| {
            let options = CodegenOptions {
                backend,
                verify: true,
                ..CodegenOptions::default()
            };
            CompiledKernel::new(lowered, &options)
                .unwrap_or_else(|e| panic!("{backend}: {source}\n{schedule}\n{e}\n{lowered}"))
        })
        .collect()
}

/// Parses, schedules, lowers and compiles `source`.
#[allow(
    dead_code,
    reason = "not every test file that includes this module compiles this way"
)]
pub fn compile(source: &str, schedule: &str) -> (Pipeline, CompiledKernel) {
    let (pipeline, lowered) = lower_source(source, schedule);
    let compiled = compile_lowered(source, schedule, &lowered);
    (pipeline, compiled)
}

/// The loop-IR interpreter running `lowered` and each of `kernels` (its compiled forms) on
/// each thread count give `expected` within `tolerance`; a failure names which, and `context`.
#[allow(
    dead_code,
    reason = "not every test file that includes this module compiles this way"
)]
pub fn all_agree(
    lowered: &LoweredKernel,
    kernels: &[CompiledKernel],
    args: &strata_dsl::Args,
    expected: &strata_dsl::Buffer,
    tolerance: f64,
    threads: &[usize],
    context: &str,
) {
    use strata_dsl::random::agree;
    let interpreted = strata_scheduler::interp::interpret(lowered, args)
        .unwrap_or_else(|e| panic!("interp {context}: {e}"));
    agree(&interpreted, expected, tolerance).unwrap_or_else(|e| panic!("interp {context}: {e}"));
    for kernel in kernels {
        for &threads in threads {
            let backend = kernel.backend();
            let got = (kernel.run(args, threads))
                .unwrap_or_else(|e| panic!("{backend} {context}, {threads} threads: {e}"));
            agree(&got, expected, tolerance)
                .unwrap_or_else(|e| panic!("{backend} {context}, {threads} threads: {e}"));
        }
    }
}
