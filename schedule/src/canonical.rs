//! Canonical schedules: the same schedule without the directives that change nothing.
//!
//! A directive changes nothing when the schedule without it lowers to the same loop nest:
//! `reorder(y, x)` of loops already in that order, a `store_at` at the compute level,
//! `compute_root()` of a function computed at root anyway, a placement repeating the default.
//! (A `split` by 1 is kept: it renames loops, so the plans differ.) Such directives only make schedules
//! that compile to the same code look different: the tuner canonicalizes each candidate
//! before hashing, recording and printing it, so the database holds one record per distinct
//! loop nest and a winner reads as what it does.
//!
//! The test is validation itself, not a list of rules: lowering is a function of the validated
//! plans (`specialize::versions`: each function's placement, storage and final loops, for
//! every version of the kernel), so a directive is dropped only where the schedule without it
//! validates to equal plans, and the loop nest, the answer and the machine code cannot change
//! (lowering's tests check that the lowered kernels agree on random schedules).
//! Validation is cheap (no bounds inference), so the tuner can afford it for every candidate.
//! Directives are tried last first (a later directive may name the loops an earlier one makes;
//! once it is gone the earlier one may go too), until nothing more goes.
//!
//! ```text
//! C: split(j, jo, ji, 32).reorder(i, jo, ji).vectorize(ji, 8)
//!   -->
//! C: split(j, jo, ji, 32).vectorize(ji, 8)        (i, jo, ji was the order already)
//! ```
//!
//! Not dropped, because the loop nest differs: a `parallel` loop nested inside another one
//! (the runtime does run it in parallel: its chunks are stolen by idle workers).

use super::specialize::{versions, Version, Versions};
use super::{Line, Schedule, StageRef};
use crate::errors::ScheduleError;
use crate::lift_reductions::{lift_reductions, Lifted};
use strata_dsl::{Expr, Pipeline};

/// `schedule` without the directives whose removal leaves every validated plan unchanged
/// (see the module doc). Errors only where `schedule` itself is refused.
pub fn canonicalize(pipeline: &Pipeline, schedule: &Schedule) -> Result<Schedule, ScheduleError> {
    canonicalize_lifted(&lift_reductions(pipeline), schedule)
}

/// `canonicalize` for a pipeline already lifted (`schedule::lift_reductions`), as the tuner's
/// space holds it.
pub fn canonicalize_lifted(
    lifted: &Lifted,
    schedule: &Schedule,
) -> Result<Schedule, ScheduleError> {
    let reference = versions(lifted, schedule)?;
    let mut current = schedule.clone();
    // Until nothing more goes: dropping a directive can make an earlier one droppable
    // (a `split` once the `reorder` naming its loops is gone).
    loop {
        let before = current.clone();
        for (line, directive) in positions(&before).into_iter().rev() {
            let candidate = without(&current, line, directive);
            if same_plans(lifted, &candidate, &reference) {
                current = candidate;
            }
        }
        current = non_empty(&current);
        if current == before {
            return Ok(current);
        }
    }
}

fn same_plans(lifted: &Lifted, schedule: &Schedule, reference: &Versions) -> bool {
    versions(lifted, &non_empty(schedule)).is_ok_and(|v| what_lowers(&v) == what_lowers(reference))
}

/// What lowering reads of `versions`: each version's plan, and the conditions that choose
/// between them (not the directives as written, which `Split` also keeps).
fn what_lowers(versions: &Versions) -> (Vec<&Version>, Vec<(&str, StageRef, Vec<&Expr>)>) {
    let stages = versions.split.stages.iter();
    let conditions = stages
        .map(|s| {
            (
                s.func.as_str(),
                s.stage,
                s.cases.iter().map(|c| &c.checked).collect(),
            )
        })
        .collect();
    (versions.versions.iter().collect(), conditions)
}

/// `schedule` without its empty lines (a line naming a function is a claim it exists).
fn non_empty(schedule: &Schedule) -> Schedule {
    let mut out = schedule.clone();
    out.lines.retain(|l| !l.directives.is_empty());
    out
}

/// Every (line, directive) index pair of `schedule`, in the order written.
fn positions(schedule: &Schedule) -> Vec<(usize, usize)> {
    let lines = schedule.lines.iter().enumerate();
    lines
        .flat_map(|(l, line)| (0..line.directives.len()).map(move |d| (l, d)))
        .collect()
}

/// `schedule` without directive `directive` of line `line` (the line stays, maybe empty, so
/// the indices of the directives still to try keep their meaning).
fn without(schedule: &Schedule, line: usize, directive: usize) -> Schedule {
    let mut out = schedule.clone();
    let Line { directives, .. } = &mut out.lines[line];
    directives.remove(directive);
    out
}
