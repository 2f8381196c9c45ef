//! strata-jit: the low rung of strata. Compiles lowered loop IR to machine code with Cranelift
//! (128-bit SIMD) or, with the cargo feature `llvm`, with LLVM (vectors as wide as the host
//! has), both calling one parallel-for runtime, and runs it safely: every buffer is checked
//! against the kernel's signature before any generated code runs.
//!
//! [`compile_pipeline`] lowers a Pipeline under a Schedule (through `strata-scheduler`) and
//! compiles it; the [`CompiledKernel`] it returns runs on owned buffers ([`CompiledKernel::run`])
//! or on borrowed memory ([`CompiledKernel::run_views`]). A call with a buffer of the wrong
//! type, rank or extent is a [`CallError`], never a read out of bounds.
//!
//! ```
//! use strata_dsl::{Args, Buffer, Sizes, Value};
//! use strata_scheduler::Schedule;
//!
//! let kernel = strata_dsl::parse_kernel(
//!     "kernel scale(X: f32[N], alpha: f32) -> Y: f32[N] { Y(i) = alpha * X(i); }",
//!     "scale.strata",
//! )?;
//! let mut schedule = Schedule::new();
//! schedule.func("Y").vectorize("i", 8);
//! let compiled = strata_jit::compile_pipeline(
//!     &kernel,
//!     &schedule,
//!     &Sizes::new(), // no size fixed: runs on any N
//!     &strata_jit::CodegenOptions::default(), // Cranelift
//! )?;
//!
//! let x = Buffer::from_vec(&[10], (0..10).map(|i| i as f32).collect())?;
//! let args = Args::new().buffer("X", x).scalar("alpha", Value::F32(0.5));
//! let y = compiled.run(&args, 1)?;
//! assert_eq!(y.as_slice::<f32>(), strata_dsl::evaluate(&kernel, &args)?.as_slice::<f32>());
//!
//! // The wrong element type is refused before any code runs.
//! let wrong = Args::new()
//!     .buffer("X", Buffer::from_vec(&[10], vec![0i32; 10])?)
//!     .scalar("alpha", Value::F32(0.5));
//! assert!(compiled.run(&wrong, 1).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod backend;
mod cranelift;
pub mod driver;
mod emit;
pub mod fast_math;
pub mod kernel;
#[cfg(feature = "llvm")]
mod llvm;
pub mod profile;
mod promote;
mod registry;
pub mod roofline;
pub mod runtime;
pub mod timing;
pub mod vmath;

pub use backend::{Backend, CodeGenerator, CodegenError, CodegenOptions, MachineCode};
pub use driver::{compile_pipeline, lower_for, CompileError};
pub use kernel::{CallError, CompiledKernel};
pub use timing::{time_runs, Timing, Timings};
