//! strata: a compute-and-schedule compiler. Kernels are pure functions over index variables,
//! written in strata's kernel language (the `dsl` rung) either in `.strata` files or inline with
//! `kernel!`; later rungs schedule, compile and tune them.
//!
//! ```
//! let scale = strata::kernel! {
//!     kernel scale(X: f32[N], alpha: f32) -> Y: f32[N] {
//!         Y(i) = alpha * X(i);
//!     }
//! };
//! let x = strata::Buffer::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).unwrap();
//! let args = strata::Args::new().buffer("X", x).scalar("alpha", strata::Value::F32(2.0));
//! let y = strata::evaluate(&scale, &args).unwrap();
//! assert_eq!(y.as_slice::<f32>().unwrap(), &[2.0, 4.0, 6.0]);
//! ```

pub use strata_dsl as dsl;
pub use strata_dsl::{
    evaluate, parse_kernel, parse_kernel_file, parse_kernels, sizes, Args, Buffer, Diagnostic,
    Dtype, EvalError, KernelHash, Pipeline, Sizes, Value,
};
pub use strata_jit as jit;
pub use strata_jit::{Backend, CallError, CodegenOptions, CompiledKernel};
pub use strata_macros::kernel;
pub use strata_scheduler as scheduler;
pub use strata_scheduler::{lower::lower, LoweredKernel, Schedule};
pub use strata_tuner as tuner;
pub use strata_tuning_db as tuning_db;

pub use strata_jit::CompileError;

pub mod io;
#[cfg(feature = "ndarray")]
pub mod nd;
pub use strata_dsl::buffer::{BufferView, BufferViewMut, ViewArgs};

/// Lowers `pipeline` under `schedule` and compiles it for this CPU with Cranelift. The result
/// runs on any shape; `fixed` sizes (e.g. `strata::sizes(&[("M", 512)])`, or `&Sizes::new()`
/// for none) are fixed first, which lets the code use their values as constants (and makes
/// the kernel refuse other shapes).
pub fn compile(
    pipeline: &Pipeline,
    schedule: &Schedule,
    fixed: &Sizes,
) -> Result<CompiledKernel, CompileError> {
    compile_with(pipeline, schedule, fixed, &CodegenOptions::default())
}

/// [`compile`] with code generation `options`, among them the backend:
///
/// ```
/// # let pipeline = strata::kernel! {
/// #     kernel scale(X: f32[N], alpha: f32) -> Y: f32[N] { Y(i) = alpha * X(i); }
/// # };
/// let options = strata::CodegenOptions {
///     backend: strata::Backend::Cranelift,
///     ..Default::default()
/// };
/// let kernel =
///     strata::compile_with(&pipeline, &strata::Schedule::new(), &strata::Sizes::new(), &options)?;
/// assert_eq!(kernel.backend(), strata::Backend::Cranelift);
/// # Ok::<(), strata::CompileError>(())
/// ```
///
/// A backend this build lacks (`Backend::Llvm` without the cargo feature `llvm`) is
/// `CompileError::Codegen(strata::jit::CodegenError::NotBuilt(..))`.
pub fn compile_with(
    pipeline: &Pipeline,
    schedule: &Schedule,
    fixed: &Sizes,
    options: &CodegenOptions,
) -> Result<CompiledKernel, CompileError> {
    strata_jit::compile_pipeline(pipeline, schedule, fixed, options)
}

/// Where the schedule `compile_tuned` used came from.
#[derive(Clone, Debug)]
pub enum TunedFrom {
    /// The tuning database's winner for this kernel, shape, machine and backend (its median
    /// time).
    Winner {
        schedule: Schedule,
        median_s: Option<f64>,
    },
    /// No winner: the default schedule, and why (which part of the lookup differed).
    Default { reason: String },
}

/// Compiles `pipeline` for `sizes` with Cranelift and the tuning database's winning schedule
/// for this kernel, shape, machine (`threads` is part of the machine) and Cranelift, or with
/// the default schedule and a warning on stderr when the database has none.
pub fn compile_tuned(
    db: &tuning_db::Db,
    pipeline: &Pipeline,
    sizes: &Sizes,
    threads: usize,
) -> Result<(CompiledKernel, TunedFrom), CompileError> {
    compile_tuned_with(db, pipeline, sizes, threads, &CodegenOptions::default())
}

/// [`compile_tuned`] with code generation `options`: the winner looked up is the one tuned
/// with `options.backend` (a schedule fast with one backend may be slow with another, so a
/// winner is never borrowed across backends).
pub fn compile_tuned_with(
    db: &tuning_db::Db,
    pipeline: &Pipeline,
    sizes: &Sizes,
    threads: usize,
    options: &CodegenOptions,
) -> Result<(CompiledKernel, TunedFrom), CompileError> {
    // Refused before the lookup, whose warnings would be about a kernel that cannot compile.
    if !options.backend.is_built() {
        let why = strata_jit::CodegenError::NotBuilt(options.backend);
        return Err(CompileError::Codegen(why));
    }
    let key = tuner::tune::tuning_key(pipeline, sizes, threads, options.backend);
    // A stored winner whose schedule does not fit the kernel is skipped for the next.
    let from = match tuner::tune::usable_winner(db, pipeline, &key) {
        Ok(usable) => {
            for why in &usable.skipped {
                eprintln!("warning: {why}");
            }
            match usable.found {
                Some((schedule, w)) => TunedFrom::Winner {
                    schedule,
                    median_s: w.measurement.median_s,
                },
                None => TunedFrom::Default {
                    reason: "no stored winner fits the kernel".into(),
                },
            }
        }
        Err(miss) => TunedFrom::Default {
            reason: miss.to_string(),
        },
    };
    let schedule = match &from {
        TunedFrom::Winner { schedule, .. } => schedule.clone(),
        TunedFrom::Default { reason } => {
            eprintln!(
                "warning: using the default schedule for `{}`: {reason}",
                pipeline.name
            );
            Schedule::new()
        }
    };
    Ok((compile_with(pipeline, &schedule, sizes, options)?, from))
}

/// Used by the code `kernel!` expands to; not part of the public API.
#[doc(hidden)]
pub mod __macro_support {
    use strata_dsl::Pipeline;

    /// Rebuilds a kernel from the canonical text `kernel!` produced at compile time. The macro
    /// and this function share one parser, so the text always parses; failing here is a strata
    /// bug, reported as such.
    pub fn kernel_from_canonical_text(text: &str) -> Pipeline {
        match strata_dsl::parse_kernel(text, "kernel!") {
            Ok(pipeline) => pipeline,
            Err(e) => panic!("strata bug: kernel! produced text its parser rejects:\n{e}"),
        }
    }
}
