//! What validation resolves a schedule into: a `Plan`, each function's placement, storage
//! level, stage loops, storage order and folds, against the lifted pipeline.

use super::super::loops::StageLoops;
use crate::lift_reductions::Lifted;
use std::collections::BTreeMap;
use strata_dsl::ir::Pipeline;

/// Where a function is computed (or stored).
#[derive(Clone, Debug, PartialEq)]
pub enum Placement {
    /// Computed inline at each use, with no storage of its own.
    Inline,
    /// Computed (or stored) at root, outside every loop.
    Root,
    /// Inside the loop `var` of stage `stage` of `func`.
    At {
        /// The consumer function.
        func: String,
        /// The consumer's stage: 0 the pure definition, `i + 1` update `i`.
        stage: usize,
        /// The loop of that stage.
        var: String,
    },
}

/// How one function is scheduled.
#[derive(Clone, Debug, PartialEq)]
pub struct FuncPlan {
    /// The function's name.
    pub name: String,
    /// Where the function is computed.
    pub compute: Placement,
    /// Where the function's buffer is allocated.
    pub store: Placement,
    /// Loops of each stage: the pure definition, then each update.
    pub stages: Vec<StageLoops>,
    /// The order of the buffer's dimensions, outermost first, as positions among the
    /// function's variables (`reorder_storage`; the definition's order by default).
    pub storage_order: Vec<usize>,
    /// The dimensions `fold_storage` folds (lowering also folds others on its own).
    pub folds: Vec<Fold>,
}

/// One `fold_storage`: a dimension of the function's buffer and its number of slots.
#[derive(Clone, Debug, PartialEq)]
pub struct Fold {
    /// The dimension's position among the function's variables.
    pub dim: usize,
    /// The number of slots the dimension is folded into.
    pub extent: i64,
    /// The directive as written, for lowering's errors.
    pub directive: String,
}

/// A validated schedule, resolved against a (lifted) pipeline.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The pipeline with reductions lifted, rfactor intermediates and wrappers.
    pub lifted: Lifted,
    /// Each function's plan, by name.
    pub funcs: BTreeMap<String, FuncPlan>,
}

impl Plan {
    /// The pipeline the plan schedules (the lifted one).
    pub fn pipeline(&self) -> &Pipeline {
        &self.lifted.pipeline
    }
}
