//! Helpers shared by the integration tests that compile kernels from source.

use strata_dsl::{parse_kernel, Pipeline};
use strata_jit::{CodegenOptions, CompiledKernel};
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;

/// Parses, schedules, lowers and compiles `source` with Cranelift's verifier on, keeping the
/// CLIF text for the test's checks; panics with the source, schedule and error on any failure.
pub fn compile(source: &str, schedule: &str) -> (Pipeline, CompiledKernel) {
    let pipeline =
        parse_kernel(source, "test.strata").unwrap_or_else(|e| panic!("{source}\n{e:?}"));
    let parsed = parse_schedule(schedule).unwrap_or_else(|e| panic!("{schedule}\n{e:?}"));
    let lowered = lower(&pipeline, &parsed).unwrap_or_else(|e| panic!("{source}\n{schedule}\n{e}"));
    let options = CodegenOptions {
        verify: true,
        keep_text: true,
        ..CodegenOptions::default()
    };
    let compiled = CompiledKernel::new(&lowered, &options)
        .unwrap_or_else(|e| panic!("{source}\n{schedule}\n{e}\n{lowered}"));
    (pipeline, compiled)
}
