//! strata-jit: the low rung of strata. Compiles lowered loop IR to machine code with Cranelift
//! (128-bit SIMD) or, with the cargo feature `llvm`, with LLVM (vectors as wide as the host
//! has), both calling one parallel-for runtime, and runs it safely: every buffer is checked
//! against the kernel's signature before any generated code runs.

pub mod backend;
pub mod codegen;
pub mod driver;
pub mod fast_math;
pub mod kernel;
#[cfg(feature = "llvm")]
pub mod llvm;
pub mod roofline;
pub mod runtime;
pub mod vmath;

pub use backend::Backend;
pub use codegen::{CodegenError, CodegenOptions};
pub use driver::{compile_pipeline, lower_for, CompileError};
pub use kernel::{CallError, CompiledKernel};
