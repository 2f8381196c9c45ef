//! strata-jit: the low rung of strata. Compiles lowered loop IR to machine code with Cranelift
//! (128-bit SIMD, a parallel-for runtime) and runs it safely: every buffer is checked against
//! the kernel's signature before any generated code runs.

pub mod codegen;
pub mod driver;
pub mod kernel;
pub mod roofline;
pub mod runtime;
pub mod vmath;

pub use codegen::{CodegenError, CodegenOptions};
pub use driver::{compile_pipeline, lower_for, CompileError};
pub use kernel::{CallError, CompiledKernel};
