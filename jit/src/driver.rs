//! The one path from a kernel and a schedule to machine code: lower, bind the sizes
//! fixed in advance (if any), compile. `strata::compile`, the command line, the tuner's worker
//! and the tests all come through here, so a kernel runs the same code whoever compiles it.

use crate::backend::{CodegenError, CodegenOptions};
use crate::kernel::CompiledKernel;
use strata_dsl::{Pipeline, Sizes};
use strata_scheduler::lower::{bind_sizes, lower, LowerError};
use strata_scheduler::{LoweredKernel, Schedule};

/// Why a kernel could not be compiled with a schedule.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The schedule is illegal for the kernel, or lowering refused it (the error names the
    /// function, the directive and the rule).
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// Code generation failed (a backend not built, or a bug).
    #[error(transparent)]
    Codegen(#[from] CodegenError),
}

/// Lowers `pipeline` under `schedule` and, when `fixed` names sizes, binds them in the loop nest
/// (`bind_sizes`) (their values become constants, and the kernel refuses other shapes).
pub fn lower_for(
    pipeline: &Pipeline,
    schedule: &Schedule,
    fixed: &Sizes,
) -> Result<LoweredKernel, LowerError> {
    let lowered = lower(pipeline, schedule)?;
    if fixed.is_empty() {
        return Ok(lowered);
    }
    bind_sizes(&lowered, fixed)
}

/// `lower_for`, then compiled for this CPU with `options`.
pub fn compile_pipeline(
    pipeline: &Pipeline,
    schedule: &Schedule,
    fixed: &Sizes,
    options: &CodegenOptions,
) -> Result<CompiledKernel, CompileError> {
    let lowered = lower_for(pipeline, schedule, fixed)?;
    Ok(CompiledKernel::new(&lowered, options)?)
}
