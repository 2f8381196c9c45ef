//! What validation resolves a schedule into: a `Plan`, each function's placement, storage
//! level, stage loops, storage order and folds, against the lifted pipeline.

use crate::lift_reductions::Lifted;
use crate::loops::StageLoops;
use std::collections::BTreeMap;
use strata_dsl::ir::{CallTarget, Expr, Func, Pipeline};

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

/// The (function, stage) pairs that read `name`, looking through inlined functions.
pub fn effective_consumers(
    pipeline: &Pipeline,
    funcs: &BTreeMap<String, FuncPlan>,
    name: &str,
) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for func in &pipeline.funcs {
        if func.name == name {
            continue;
        }
        let inlined = funcs
            .get(&func.name)
            .is_some_and(|p| p.compute == Placement::Inline);
        for stage in stages_reading(func, name) {
            if inlined {
                for c in effective_consumers(pipeline, funcs, &func.name) {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            } else if !out.contains(&(func.name.clone(), stage)) {
                out.push((func.name.clone(), stage));
            }
        }
    }
    out
}

/// The stages of `func` whose definitions call `name`.
fn stages_reading(func: &Func, name: &str) -> Vec<usize> {
    let reads = |e: &Expr| {
        let mut found = false;
        e.for_each(&mut |x| {
            found |= matches!(x, Expr::Call(c) if c.target == CallTarget::Func && c.name == name)
        });
        found
    };
    let mut stages = Vec::new();
    if reads(&func.value) {
        stages.push(0);
    }
    for (i, u) in func.updates.iter().enumerate() {
        if reads(&u.value) || u.args.iter().any(reads) {
            stages.push(i + 1);
        }
    }
    stages
}
