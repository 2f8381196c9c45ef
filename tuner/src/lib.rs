//! strata-tuner: searches schedules for a kernel on this CPU. The search space is derived from
//! the pipeline (`space`), candidates come from a strategy (`strategy`, with the cost model of
//! `model`), each is measured in a worker process (`worker`), and every result goes into the
//! tuning database as it is made (`tune`). `strata tune` is [`tune()`] with options from its
//! flags; from Rust, call it directly.
//!
//! # The worker hook: call [`run_worker_if_requested`] first in `main`
//!
//! A candidate schedule is untrusted work: it may crash the process, hang, or compute a wrong
//! answer. So [`tune()`] compiles and runs every candidate in a child process, a *worker*, and
//! records whatever happened there before going on. By default ([`WorkerCommand::default`])
//! the worker is **the program that called `tune`**, started again with the argument
//! `--strata-worker` and the environment variable `STRATA_WORKER` set (both are needed, so
//! neither a stray variable nor a stray argument changes what your program does).
//! [`run_worker_if_requested`] recognizes such a start, serves the tuner's requests on
//! stdin/stdout and exits; in every other start it returns at once and costs nothing. A
//! program that tunes must therefore call it before anything else in `main`; without it the
//! children run your `main` from the top (tuning again, starting workers of their own) and
//! never answer, and every candidate is recorded as a crash or a timeout. Test harnesses and programs that cannot do this point
//! [`TuneOptions::worker`] at another program that calls the hook, the `strata` binary for
//! one (`WorkerCommand { program: "strata".into(), ..Default::default() }`, taken from your
//! `PATH`; it must be built from the same strata version, since the two exchange JSON). Only tuning needs a worker: using the results (`strata::compile_tuned`) does not.
//!
//! ```no_run
//! use strata_tuner::{run_worker_if_requested, tune, TuneOptions};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     run_worker_if_requested(); // in a worker: serves the tuner and exits
//!
//!     let source = "kernel scale(X: f32[N], alpha: f32) -> Y: f32[N] { Y(i) = alpha * X(i); }";
//!     let kernel = strata_dsl::parse_kernel(source, "scale.strata")?;
//!     let sizes = strata_dsl::sizes(&[("N", 1 << 20)]);
//!     let db = strata_tuning_db::Db::open("strata.db")?;
//!     let options = TuneOptions {
//!         trials: Some(50),
//!         ..Default::default()
//!     };
//!     let result = tune(&db, &kernel, source, &sizes, &options)?;
//!     println!("{result:?}");
//!     Ok(())
//! }
//! ```

#![warn(missing_docs)]

pub mod learned;
pub mod model;
pub mod space;
pub mod strategy;
pub mod tune;
pub mod worker;

pub use strategy::StrategyKind;
pub use tune::{tune, StopReason, TuneError, TuneOptions, TuneResult};
pub use worker::{run_worker_if_requested, WorkerCommand};
