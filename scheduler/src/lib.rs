//! strata-scheduler: the mid rung of strata, lowering.
//!
//! The lowering of a Pipeline plus a Schedule (the schedule language is the crate
//! strata-schedule, re-exported here as `schedule`; lowering starts from the `Plan` its
//! validation makes) into the loop-nest IR (`ir`) as a fixed list of named passes
//! (`lower`), with the simplifier (`simplify`), a printer and an interpreter that runs lowered
//! IR on buffers (the second oracle after the reference evaluator).
//!
//! The public surface is what a caller of lowering needs: [`lower::lower`] (and
//! [`lower::lower_passes`], the IR after each pass), [`lower::bind_sizes`],
//! [`lower::LowerError`], lowering's size limits ([`lower::limits`], which the tuner checks
//! candidates against), the IR types ([`ir`], [`LoweredKernel`]), the interpreter
//! ([`interp::interpret`]) and the warnings about a lowered kernel ([`warnings`]); the IR
//! prints itself (`Display`, `ir_print.rs`) and describes its call ([`LoweredKernel::call_signature`],
//! `signature.rs`). The passes and the simplifier are internal to the crate; their own tests are unit tests beside them (`lower/bounds_tests.rs`,
//! `lower/unswitch_tests.rs`, `simplify/tests.rs`), everything else is tested through `lower`.
//!
//! A [`Schedule`] is built with the chaining API (`schedule.func("out").tile(..)`) or parsed
//! from its text form, one line per function stage; every directive is described in
//! [`Directive`] and in the guide (`docs/guide.md`). An illegal schedule is an error naming the
//! function, the directive and the rule broken ([`schedule::errors::Rule`]).
//!
//! ```
//! use strata_scheduler::Schedule;
//!
//! let kernel = strata_dsl::parse_kernel(
//!     "kernel scale(X: f32[N], alpha: f32) -> Y: f32[N] { Y(i) = alpha * X(i); }",
//!     "scale.strata",
//! )?;
//! let schedule: Schedule = "Y: split(i, io, ii, 16).vectorize(ii, 4)".parse()?;
//! let lowered = strata_scheduler::lower::lower(&kernel, &schedule)?;
//! println!("{lowered}"); // the loop nest, as `strata lower --stage loops` prints it
//!
//! // The loop-IR interpreter agrees with the reference evaluator.
//! let x = strata_dsl::Buffer::from_vec(&[40], vec![1.5f32; 40])?;
//! let args = strata_dsl::Args::new()
//!     .buffer("X", x)
//!     .scalar("alpha", strata_dsl::Value::F32(2.0));
//! let y = strata_scheduler::interp::interpret(&lowered, &args)?;
//! assert_eq!(y.as_slice::<f32>().unwrap(), &[3.0f32; 40][..]);
//!
//! // Illegal: `k` is no variable of `Y`.
//! let bad: Schedule = "Y: vectorize(k, 4)".parse()?;
//! assert!(strata_scheduler::lower::lower(&kernel, &bad).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod features;
pub mod interp;
pub mod ir;
mod ir_print;
pub mod lower;
mod scope;
mod signature;
pub(crate) mod simplify;
pub mod warnings;

/// The schedule language (the crate strata-schedule): schedules, their text form, validation
/// to a [`schedule::validate::Plan`], the contract lowering starts from.
pub use strata_schedule as schedule;

pub use ir::{Expr, ForKind, LoweredKernel, Stmt, Type};
pub use schedule::{Directive, Line, LoopLevel, Schedule, StageRef, TailStrategy};
