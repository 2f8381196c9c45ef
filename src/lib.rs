//! strata: a compute-and-schedule compiler in the line of Halide and TVM. A kernel says *what*
//! to compute, as pure functions over index variables in strata's kernel language (a `.strata`
//! file, or inline with [`kernel!`]); a [`Schedule`] says *how* (tiling, vectorization,
//! parallelism, where producers are computed); [`compile`] lowers both to machine code for this
//! CPU; the [`tuner`] searches schedules and keeps every measurement in a [`tuning_db::Db`],
//! from which [`compile_tuned`] takes the winner. Whatever the schedule, the answer is the
//! reference evaluator's ([`evaluate`]): exactly for integers, within reassociation for floats.
//!
//! This crate is the one to depend on: it re-exports the rungs, each its own crate, as modules:
//!
//! | module | crate | what it holds |
//! |---|---|---|
//! | [`dsl`] | strata-dsl | the kernel language: parser, checker, [`Pipeline`], [`Buffer`], [`Args`], the reference evaluator |
//! | [`scheduler`] | strata-scheduler | [`Schedule`] (Rust API and text form), its rules, lowering to the loop IR, the loop-IR interpreter |
//! | [`jit`] | strata-jit | code generation (Cranelift; LLVM with the feature `llvm`) and [`CompiledKernel`]'s checked call |
//! | [`tuner`] | strata-tuner | the search: [`tuner::tune()`], [`tuner::TuneOptions`], measurement in worker processes |
//! | [`tuning_db`] | strata-tuning-db | the SQLite store of every measurement: [`tuning_db::Db`], reports, export/import |
//!
//! and adds [`compile`], [`compile_with`], [`compile_tuned`], [`io`] (`.npy` and PNG files) and,
//! with the cargo feature `ndarray`, `nd` (ndarray views). The guide (`docs/guide.md` in the
//! repository) lists every language feature and schedule directive.
//!
//! # Compile a kernel with a schedule, run it, check it
//!
//! ```
//! use strata::{Args, Buffer, Schedule, Value};
//!
//! let source = "kernel saxpy(X: f32[N], Y: f32[N], a: f32) -> Z: f32[N] {
//!     Z(i) = a * X(i) + Y(i);
//! }";
//! let kernel = strata::parse_kernel(source, "saxpy")?;
//!
//! // Chunks of 64 elements on the thread pool, each 8 lanes wide. The same schedule in Rust:
//! // `schedule.func("Z").split("i", "io", "ii", 64).vectorize("ii", 8).parallel("io")`.
//! let schedule: Schedule = "Z: split(i, io, ii, 64).vectorize(ii, 8).parallel(io)".parse()?;
//! // No sizes fixed: the compiled kernel runs on any N.
//! let compiled = strata::compile(&kernel, &schedule, &strata::Sizes::new())?;
//!
//! let n = 1000;
//! let x = Buffer::from_vec(&[n], (0..n).map(|i| i as f32).collect())?;
//! let y = Buffer::from_vec(&[n], vec![1.0f32; n])?;
//! let args = Args::new().buffer("X", x).buffer("Y", y).scalar("a", Value::F32(2.0));
//! let threads = 2;
//! let z = compiled.run(&args, threads)?; // buffers are checked against the signature first
//!
//! let reference = strata::evaluate(&kernel, &args)?;
//! assert_eq!(z.as_slice::<f32>(), reference.as_slice::<f32>());
//! assert_eq!(z.as_slice::<f32>().unwrap()[3], 7.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same kernel inline, checked when your program compiles (errors point at the token):
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
//!
//! # Tune, then use the winner
//!
//! ```no_run
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // The tuner measures each candidate in a child process: this same program, started
//!     // again with `--strata-worker` and `STRATA_WORKER` set. This call, first in `main`,
//!     // serves those requests and exits in the child; in your run it returns at once.
//!     strata::tuner::run_worker_if_requested();
//!
//!     let source = "kernel scale(X: f32[N], alpha: f32) -> Y: f32[N] { Y(i) = alpha * X(i); }";
//!     let kernel = strata::parse_kernel(source, "scale")?;
//!     let sizes = strata::sizes(&[("N", 1 << 20)]);
//!     let db = strata::tuning_db::Db::open("strata.db")?;
//!     let options = strata::tuner::TuneOptions { trials: Some(50), ..Default::default() };
//!     strata::tuner::tune(&db, &kernel, source, &sizes, &options)?;
//!
//!     // Later, in any program: the winner for this kernel, shape, machine and backend, or the
//!     // default schedule with a warning (`strata tune` on the command line fills the same db).
//!     let (compiled, from) = strata::compile_tuned(&db, &kernel, &sizes, options.threads)?;
//!     println!("{from:?}");
//!     # let _ = compiled;
//!     Ok(())
//! }
//! ```

#![warn(missing_docs)]

#[doc(inline)]
pub use strata_dsl as dsl;
pub use strata_dsl::{
    evaluate, parse_kernel, parse_kernel_file, parse_kernels, sizes, Args, Buffer, Diagnostic,
    Dtype, EvalError, KernelHash, Pipeline, Sizes, Value,
};
#[doc(inline)]
pub use strata_jit as jit;
pub use strata_jit::{
    time_runs, Backend, CallError, CodegenOptions, CompiledKernel, Timing, Timings,
};
pub use strata_macros::kernel;
#[doc(inline)]
pub use strata_scheduler as scheduler;
pub use strata_scheduler::{lower::lower, LoweredKernel, Schedule};
#[doc(inline)]
pub use strata_tuner as tuner;
#[doc(inline)]
pub use strata_tuning_db as tuning_db;

pub use strata_jit::CompileError;

pub mod io;
#[cfg(feature = "ndarray")]
pub mod nd;
/// Borrowed views: a compiled kernel runs on the caller's memory, checked as owned buffers are.
///
/// ```
/// let scale = strata::kernel! {
///     kernel scale(X: f32[N], alpha: f32) -> Y: f32[N] { Y(i) = alpha * X(i); }
/// };
/// let kernel = strata::compile(&scale, &strata::Schedule::new(), &strata::Sizes::new())?;
/// let (x, mut y) = (vec![1.0f32, 2.0, 3.0], vec![0.0f32; 3]);
/// let args = strata::ViewArgs::new()
///     .buffer("X", strata::BufferView::new(&x, &[3])?)
///     .scalar("alpha", strata::Value::F32(2.0));
/// kernel.run_views_into(&args, strata::BufferViewMut::new(&mut y, &[3])?, 1)?;
/// assert_eq!(y, [2.0, 4.0, 6.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use strata_dsl::buffer::BufferView;
pub use strata_dsl::buffer::{BufferViewMut, ViewArgs};

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
        /// The winning schedule, as compiled.
        schedule: Schedule,
        /// The median time in seconds of the measurement that made it the winner.
        median_s: Option<f64>,
    },
    /// No winner: the default schedule, and why (which part of the lookup differed).
    Default {
        /// Why no winner was used, as the warning printed says it.
        reason: String,
    },
}

/// Compiles `pipeline` for `sizes` with Cranelift and the tuning database's winning schedule
/// for this kernel, shape, machine (`threads` is part of the machine) and Cranelift, or with
/// the default schedule and a warning on stderr when the database has none. A kernel with
/// scalar parameters takes the winner of the one set of values it was tuned with (its
/// parameters are run-time values, unknown here); tuned with several sets, the default.
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
    let no_values = std::collections::BTreeMap::new();
    let key = tuner::tune::tuning_key(pipeline, sizes, &no_values, threads, options.backend);
    // A stored winner whose schedule does not fit the kernel is skipped for the next.
    let from = match usable_winner_any_params(db, pipeline, key) {
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

/// The usable winner for `key`, whose parameters are not known at compile time: a kernel
/// with scalar parameters takes the winner tuned with the one set of values it was tuned with
/// (any schedule gives every value the same answer; those values are what it was fast for).
/// Tuned with several sets, it is a miss naming them: the caller cannot say which is meant.
#[allow(clippy::result_large_err)] // the cold path of a once-per-kernel lookup
fn usable_winner_any_params(
    db: &tuning_db::Db,
    pipeline: &Pipeline,
    mut key: tuning_db::TuningKey,
) -> Result<tuner::tune::UsableWinner, tuning_db::Miss> {
    match tuner::tune::usable_winner(db, pipeline, &key) {
        Err(tuning_db::Miss::Params { tuned_params, .. }) if tuned_params.len() == 1 => {
            key.params = tuned_params[0].clone();
            tuner::tune::usable_winner(db, pipeline, &key)
        }
        other => other,
    }
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
