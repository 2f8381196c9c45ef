//! Storage shared across a parallel loop: a function stored outside a parallel loop but
//! computed inside it (`s: compute_at(P, f).store_root()` with `P: parallel(f)`) has every
//! iteration, on any thread, write the one buffer at once. A function with an update reads
//! and writes its elements (`s(r) += ..`, computed again for each column of row `r`): two
//! iterations accumulating into the same element lose each other's sums, and the answer is
//! wrong. Such a schedule is refused, naming the loop.
//!
//! A pure function stored so is allowed: each element is written once per iteration that
//! needs it, always with the same value (a stencil's halo rows computed by two tiles), so a
//! reader sees that value whichever write lands last.

use super::{Directive, Schedule, StageRef};
use crate::errors::{directive_error, Rule, ScheduleError};
use crate::plan::{FuncPlan, Placement, Plan};
use crate::ForKind;
use std::collections::BTreeMap;

/// Refuses a function with an update stored outside a parallel loop it is computed inside.
pub fn check_storage_races(plan: &Plan, schedule: &Schedule) -> Result<(), ScheduleError> {
    for (name, fp) in &plan.funcs {
        let pure = plan
            .pipeline()
            .func(name)
            .is_none_or(|f| f.updates.is_empty());
        if pure {
            continue;
        }
        let Some((g, var)) = parallel_between(&fp.store, &fp.compute, &plan.funcs) else {
            continue;
        };
        let directives = schedule.directives(name, StageRef::Pure);
        let store = directives
            .into_iter()
            .find(|d| matches!(d, Directive::StoreRoot | Directive::StoreAt(_)));
        // Storage outside the compute level is only ever asked for by a store directive.
        if let Some(d) = store {
            let rule = Rule::StoredOutsideParallelLoop { func: g, var };
            return Err(directive_error(name, StageRef::Pure, d, rule));
        }
    }
    Ok(())
}

/// The first parallel loop (its function and variable) strictly inside `store` that encloses
/// `compute`, walking out from `compute` through the consumers' placements.
fn parallel_between(
    store: &Placement,
    compute: &Placement,
    funcs: &BTreeMap<String, FuncPlan>,
) -> Option<(String, String)> {
    let mut level = compute.clone();
    for _ in 0..=funcs.len() {
        let Placement::At { func, stage, var } = &level else {
            return None;
        };
        let dims = &funcs.get(func)?.stages.get(*stage)?.dims;
        let upto = dims.iter().position(|d| d.name == *var)?;
        let from = match store {
            Placement::At {
                func: sf,
                stage: ss,
                var: sv,
            } if sf == func && ss == stage => dims.iter().position(|d| d.name == *sv)? + 1,
            _ => 0,
        };
        let inside = dims.get(from..=upto).unwrap_or_default();
        if let Some(d) = inside.iter().find(|d| d.kind == ForKind::Parallel) {
            return Some((func.clone(), d.name.clone()));
        }
        if from > 0 {
            return None;
        }
        level = funcs.get(func)?.compute.clone();
    }
    None
}
