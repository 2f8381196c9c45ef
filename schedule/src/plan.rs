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

    /// Where `name` can be computed inside: its consumer's stage when it has one; with
    /// several (a softmax's exponentials feed the sum and the output), the nearest stage every
    /// consumer is computed within, following their placements. `None` when nothing reads
    /// `name` or the consumers share no stage.
    pub fn host(&self, name: &str) -> Option<Host> {
        let consumers = effective_consumers(self.pipeline(), &self.funcs, name);
        let chains: Vec<Vec<Enclosing>> = consumers
            .iter()
            .map(|(f, s)| self.enclosing_stages(f, *s))
            .collect();
        let shared = |e: &&Enclosing| {
            let same = |c: &Enclosing| c.func == e.func && c.stage == e.stage;
            chains.iter().all(|chain| chain.iter().any(same))
        };
        let host = chains.first()?.iter().find(shared)?;
        let dims = &self.funcs.get(&host.func)?.stages.get(host.stage)?.dims;
        let enclosing_loops = chains
            .iter()
            .filter_map(|c| {
                c.iter()
                    .find(|e| e.func == host.func && e.stage == host.stage)
            })
            .map(|e| match &e.entered_by {
                Some(var) => dims
                    .iter()
                    .position(|d| &d.name == var)
                    .map_or(0, |p| p + 1),
                None => dims.len(),
            })
            .min()?;
        Some(Host {
            func: host.func.clone(),
            stage: host.stage,
            enclosing_loops,
        })
    }

    /// `(func, stage)` and then each stage it is computed inside, outward, with the loop
    /// through which the nest is entered there.
    fn enclosing_stages(&self, func: &str, stage: usize) -> Vec<Enclosing> {
        let mut chain = vec![Enclosing {
            func: func.to_string(),
            stage,
            entered_by: None,
        }];
        let mut current = func;
        while let Some(Placement::At { func, stage, var }) =
            self.funcs.get(current).map(|p| &p.compute)
        {
            if chain.iter().any(|e| &e.func == func) {
                break; // defensive: placements never form a cycle in a validated plan
            }
            chain.push(Enclosing {
                func: func.clone(),
                stage: *stage,
                entered_by: Some(var.clone()),
            });
            current = func;
        }
        chain
    }
}

/// The stage a producer can be computed inside ([`Plan::host`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    /// The function.
    pub func: String,
    /// Its stage: 0 the pure definition, `i + 1` update `i`.
    pub stage: usize,
    /// How many of that stage's loops, outermost first, enclose every consumer.
    pub enclosing_loops: usize,
}

/// A stage a consumer is computed within, and the loop of it the consumer's nest is in
/// (`None` for the consumer's own stage).
struct Enclosing {
    func: String,
    stage: usize,
    entered_by: Option<String>,
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
