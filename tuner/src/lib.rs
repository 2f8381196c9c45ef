//! strata-tuner: searches schedules for a kernel on this CPU. The search space is derived from
//! the pipeline (`space`), candidates come from a strategy (`strategy`, with the cost model of
//! `model`), each is measured in a worker process (`worker`), and every result goes into the
//! tuning database as it is made (`tune`).

pub mod model;
pub mod space;
pub mod strategy;
pub mod tune;
pub mod worker;

pub use strategy::StrategyKind;
pub use tune::{tune, StopReason, TuneError, TuneOptions, TuneResult};
pub use worker::{run_worker_if_requested, WorkerCommand};
