//! Unplaced functions follow a producer into its consumer's loop. A schedule that computes a
//! producer `p` inside a loop of `g` (`mu_sum0: compute_at(Y, r)`) needs every function
//! between them (reading `p`, read by `g`) computed inside that loop too. A pure function
//! holding a reduction (`mu(r) = (sum(c in 0..C) X(r, c)) / f32(C)`) left unplaced used to be
//! inlined by default, so the schedule was legal; now that such a function is computed at
//! root by default (`default_compute`), it read `p` outside the loop and the schedule was
//! refused ("`mu` also reads this function outside it"). Establishes: each function holding a
//! reduction between a producer computed in a loop and that loop's function, that the
//! schedule does not place, is computed (and stored) in the same loop. Inlining it instead
//! would redo its reduction for every point of the consumer (layernorm's variance, C times
//! per row).
//!
//! Validation keeps the defaults where following does not give a legal plan (a function
//! between is also read outside the loop), so the error is the one the schedule's own
//! placements give, which says the function is at root by default.

use super::{Schedule, StageRef};
use crate::lift_reductions::Lifted;
use crate::plan::{FuncPlan, Placement};
use std::collections::{BTreeMap, BTreeSet};
use strata_dsl::ir::Pipeline;

/// Whether the schedule places `name` (a `compute_...` or `store_...` on its pure line).
pub(crate) fn is_placed(schedule: &Schedule, name: &str) -> bool {
    schedule
        .directives(name, StageRef::Pure)
        .iter()
        .any(|d| d.is_placement())
}

/// `funcs` with the functions between placed producers and their loops moved into those
/// loops, or `None` where nothing moves.
pub(crate) fn follow_placed_producers(
    lifted: &Lifted,
    schedule: &Schedule,
    funcs: &BTreeMap<String, FuncPlan>,
) -> Option<BTreeMap<String, FuncPlan>> {
    let mut levels: BTreeMap<String, Vec<Placement>> = BTreeMap::new();
    for (producer, plan) in funcs {
        let Placement::At { func: g, .. } = &plan.compute else {
            continue;
        };
        if !is_placed(schedule, producer) {
            continue;
        }
        for f in between(&lifted.pipeline, producer, g) {
            if may_follow(lifted, schedule, funcs, &f) {
                levels.entry(f).or_default().push(plan.compute.clone());
            }
        }
    }
    let mut followed = funcs.clone();
    let mut moved = false;
    for (f, candidates) in levels {
        if let (Some(level), Some(plan)) = (innermost(&candidates, funcs), followed.get_mut(&f)) {
            plan.compute = level.clone();
            plan.store = level;
            moved = true;
        }
    }
    moved.then_some(followed)
}

/// A function the schedule leaves unplaced that is computed at root only because it holds a
/// reduction (it was inlined by default before). A function with an update was at root by
/// default before too: a producer placed below it stays refused (and the error says how to
/// place it).
fn may_follow(
    lifted: &Lifted,
    schedule: &Schedule,
    funcs: &BTreeMap<String, FuncPlan>,
    name: &str,
) -> bool {
    let holds_reduction = lifted.anonymous.iter().any(|(_, holder)| holder == name);
    let pure = lifted
        .pipeline
        .func(name)
        .is_some_and(|f| f.updates.is_empty());
    holds_reduction
        && pure
        && name != lifted.pipeline.output.name
        && !is_placed(schedule, name)
        && funcs
            .get(name)
            .is_some_and(|p| p.compute == Placement::Root)
}

/// The functions other than `producer` and `consumer` that read `producer` (through any
/// chain of calls) and that `consumer` reads (likewise).
fn between(pipeline: &Pipeline, producer: &str, consumer: &str) -> Vec<String> {
    // The call graph once, both ways: asking every function what it reaches (one walk of
    // the graph each) made validating a schedule of the 84-function local Laplacian take
    // seconds, and the tuner validates every seed and candidate.
    let mut reads: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut read_by: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for f in &pipeline.funcs {
        let callees = f.callees();
        for callee in &callees {
            read_by.entry(callee.clone()).or_default().push(&f.name);
        }
        reads.insert(&f.name, callees);
    }
    let below_consumer = reachable(consumer, |name| {
        reads
            .get(name)
            .map(|c| c.iter().map(String::as_str).collect())
    });
    let above_producer = reachable(producer, |name| read_by.get(name).cloned());
    pipeline
        .funcs
        .iter()
        .map(|f| f.name.as_str())
        .filter(|f| *f != producer && *f != consumer)
        .filter(|f| below_consumer.contains(f) && above_producer.contains(f))
        .map(str::to_string)
        .collect()
}

/// Every function reached from `from` (itself only through a cycle) following `next`.
fn reachable<'p>(from: &'p str, next: impl Fn(&str) -> Option<Vec<&'p str>>) -> BTreeSet<&'p str> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from];
    while let Some(name) = todo.pop() {
        for f in next(name).unwrap_or_default() {
            if seen.insert(f) {
                todo.push(f);
            }
        }
    }
    seen
}

/// The one level of `candidates`, or the innermost where all are loops of one stage; `None`
/// where they name different stages (no one loop is inside every other).
fn innermost(candidates: &[Placement], funcs: &BTreeMap<String, FuncPlan>) -> Option<Placement> {
    let Some(Placement::At { func, stage, .. }) = candidates.first() else {
        return None;
    };
    let dims = &funcs.get(func)?.stages.get(*stage)?.dims;
    let mut deepest: Option<(usize, &Placement)> = None;
    for level in candidates {
        let Placement::At {
            func: f,
            stage: s,
            var,
        } = level
        else {
            return None;
        };
        if f != func || s != stage {
            return None;
        }
        let depth = dims.iter().position(|d| d.name == *var)?;
        if deepest.is_none_or(|(d, _)| depth > d) {
            deepest = Some((depth, level));
        }
    }
    deepest.map(|(_, level)| level.clone())
}
