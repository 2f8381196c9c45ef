//! strata-scheduler: the mid rung of strata.
//!
//! Schedules as data (`schedule`), their validation against a pipeline, and the lowering of a
//! Pipeline plus a Schedule into the loop-nest IR (`ir`) as a fixed list of named passes
//! (`lower`), with the simplifier (`simplify`), a printer and an interpreter that runs lowered
//! IR on buffers (the second oracle after the reference evaluator).

pub mod generate;
pub mod generate_pipeline;
pub mod interp;
pub mod ir;
pub mod ir_print;
pub mod lower;
pub mod schedule;
pub mod signature;
pub mod simplify;

pub use ir::{Expr, ForKind, LoweredKernel, Stmt, Type};
pub use schedule::{Directive, Line, LoopLevel, Schedule, StageRef, TailStrategy};
