//! Validation of a schedule without specializations (one version of a specialized one): the
//! rfactors and wrappers made, every line checked, each function's placement, storage, stage
//! loops, storage order and folds resolved into a `Plan`, then the checks that need the whole
//! plan (placements enclose their consumers' uses, no storage races, unrolling bounded).

use crate::lift_reductions::Lifted;
use crate::limits::MAX_SPLIT_FACTOR;
use crate::loops::{stage_loops, Dim, StageLoops};
use crate::ForKind;
use crate::{Directive, LoopLevel, Schedule, StageRef};
use std::collections::{BTreeMap, BTreeSet};
use strata_dsl::ir::{Expr, Func, Pipeline};

use crate::errors::{directive_error, stage_suffix, unknown, Rule, ScheduleError};
use crate::limits::MAX_UNROLLED_COPIES;
use crate::plan::{effective_consumers, Fold, FuncPlan, Placement, Plan};

/// `validate` for a schedule without specializations.
pub(crate) fn validate_plain(lifted: &Lifted, schedule: &Schedule) -> Result<Plan, ScheduleError> {
    // Rfactors first (each consumes its directives: the merge's lines keep only their own),
    // then wrappers, which may wrap an intermediate's reads.
    let (factored, schedule) = crate::rfactor::apply_rfactors(lifted, schedule)?;
    let schedule = &schedule;
    let wrapped = crate::wrap::apply_wrappers(&factored, schedule)?;
    let lifted = &wrapped;
    let pipeline = &lifted.pipeline;
    check_lines(pipeline, schedule)?;
    let mut funcs = BTreeMap::new();
    for func in &pipeline.funcs {
        let stages = func_stage_loops(pipeline, func, schedule)?;
        funcs.insert(
            func.name.clone(),
            FuncPlan {
                name: func.name.clone(),
                compute: Placement::Root,
                store: Placement::Root,
                stages,
                storage_order: storage_order(pipeline, func, schedule)?,
                folds: folds(pipeline, func, schedule)?,
            },
        );
    }
    let mut defaulted = BTreeSet::new();
    for func in &pipeline.funcs {
        let (compute, store) = explicit_placement(lifted, func, schedule, &funcs)?;
        if compute.is_none() && store.is_none() {
            defaulted.insert(func.name.clone());
        }
        let plan = funcs
            .get_mut(&func.name)
            .ok_or_else(|| unknown(&func.name, pipeline))?;
        plan.compute = compute.unwrap_or_else(|| default_compute(func, lifted));
        plan.store = store.unwrap_or_else(|| plan.compute.clone());
    }
    let mut bounded = funcs.clone();
    if crate::inline_bound::root_past_inline_bound(pipeline, &mut bounded, &defaulted) {
        if let Ok(plan) = followed_plan(lifted, schedule, bounded) {
            return Ok(plan);
        }
    }
    followed_plan(lifted, schedule, funcs)
}

/// The plan of `funcs` with unplaced functions following placed producers into their loops
/// (`follow`); where following gives no legal plan, the defaults' plan gives the schedule's
/// own error.
fn followed_plan(
    lifted: &Lifted,
    schedule: &Schedule,
    funcs: BTreeMap<String, FuncPlan>,
) -> Result<Plan, ScheduleError> {
    if let Some(followed) = crate::follow::follow_placed_producers(lifted, schedule, &funcs) {
        if let Ok(plan) = checked_plan(lifted, schedule, followed) {
            return Ok(plan);
        }
    }
    checked_plan(lifted, schedule, funcs)
}

/// The plan of `funcs` once lifted reductions are placed, checked against every rule that
/// reads more than one function's placement.
fn checked_plan(
    lifted: &Lifted,
    schedule: &Schedule,
    mut funcs: BTreeMap<String, FuncPlan>,
) -> Result<Plan, ScheduleError> {
    resolve_anonymous(lifted, schedule, &mut funcs);
    check_inline_has_no_loops(&funcs, schedule)?;
    let plan = Plan {
        lifted: lifted.clone(),
        funcs,
    };
    for func in &lifted.pipeline.funcs {
        check_encloses(&plan, func, schedule)?;
    }
    crate::races::check_storage_races(&plan, schedule)?;
    check_unrolled_copies(&plan.funcs)?;
    Ok(plan)
}

/// Refuses a stage unrolled into more than `MAX_UNROLLED_COPIES` copies of its body. A loop
/// whose extent only bounds inference finds (`StageLoops::deferred`) counts once here;
/// lowering checks again once it knows that extent (`lower::constant_extents`).
pub fn check_unrolled_copies(funcs: &BTreeMap<String, FuncPlan>) -> Result<(), ScheduleError> {
    for fp in funcs.values() {
        let around = copies_around(funcs, &fp.compute);
        for loops in &fp.stages {
            let copies = around.saturating_mul(unrolled_copies(&loops.dims));
            if copies > MAX_UNROLLED_COPIES {
                return Err(ScheduleError::TooManyUnrolledCopies {
                    func: fp.name.clone(),
                    stage: stage_ref(loops.stage),
                    copies,
                });
            }
        }
    }
    Ok(())
}

/// How many copies unrolled loops make of whatever is computed at `placement`: the unrolled
/// loops of the consumer stage out to the placement's loop, then those around that consumer.
fn copies_around(funcs: &BTreeMap<String, FuncPlan>, placement: &Placement) -> u64 {
    let mut copies = 1u64;
    let mut at = placement;
    // Placements form no cycle (`check_encloses`); the bound only guards against a bug.
    for _ in 0..funcs.len() {
        let Placement::At { func, stage, var } = at else {
            break;
        };
        let Some(consumer) = funcs.get(func) else {
            break;
        };
        if let Some(loops) = consumer.stages.get(*stage) {
            let outside = loops.dims.iter().position(|d| d.name == *var);
            let enclosing = &loops.dims[..outside.map_or(0, |i| i + 1)];
            copies = copies.saturating_mul(unrolled_copies(enclosing));
        }
        at = &consumer.compute;
    }
    copies
}

/// The product of the extents of the unrolled loops among `dims`.
fn unrolled_copies(dims: &[Dim]) -> u64 {
    dims.iter()
        .filter(|d| d.kind == ForKind::Unrolled)
        .map(|d| d.const_extent.map_or(1, |e| e.max(1) as u64))
        .fold(1, u64::saturating_mul)
}

fn check_lines(pipeline: &Pipeline, schedule: &Schedule) -> Result<(), ScheduleError> {
    for line in &schedule.lines {
        let func = pipeline
            .func(&line.func)
            .ok_or_else(|| unknown(&line.func, pipeline))?;
        if let StageRef::Update(i) = line.stage {
            if i >= func.updates.len() {
                return Err(ScheduleError::UnknownStage {
                    func: func.name.clone(),
                    index: i,
                    count: func.updates.len(),
                });
            }
            if let Some(d) = line.directives.iter().find(|d| d.is_per_function()) {
                let rule = if d.is_placement() {
                    Rule::PlacementOnUpdate
                } else {
                    Rule::PerFunctionOnUpdate
                };
                return Err(directive_error(&func.name, line.stage, d, rule));
            }
        }
    }
    Ok(())
}

/// The constant extent of a reduction domain `lo..hi` when both bounds are constants.
fn const_extent(lo: &Expr, hi: &Expr) -> Option<i64> {
    match (lo, hi) {
        (Expr::Const(a), Expr::Const(b)) => Some(b.as_i64()? - a.as_i64()?),
        _ => None,
    }
}

fn func_stage_loops(
    pipeline: &Pipeline,
    func: &Func,
    schedule: &Schedule,
) -> Result<Vec<StageLoops>, ScheduleError> {
    let is_output = func.name == pipeline.output.name;
    let stages =
        std::iter::once(StageRef::Pure).chain((0..func.updates.len()).map(StageRef::Update));
    stages
        .map(|stage| {
            stage_loops(
                pipeline,
                func,
                stage,
                is_output,
                &schedule.directives(&func.name, stage),
                &const_extent,
            )
        })
        .collect()
}

/// The buffer order `reorder_storage` asks for (each directive reorders the dimensions it
/// names among their current places, as `reorder` does loops), as positions in `func.vars`.
fn storage_order(
    pipeline: &Pipeline,
    func: &Func,
    schedule: &Schedule,
) -> Result<Vec<usize>, ScheduleError> {
    let mut order: Vec<usize> = (0..func.vars.len()).collect();
    for d in schedule.directives(&func.name, StageRef::Pure) {
        let Directive::ReorderStorage(vars) = d else {
            continue;
        };
        let fail = |rule| directive_error(&func.name, StageRef::Pure, d, rule);
        if func.name == pipeline.output.name {
            return Err(fail(Rule::StorageOfOutput));
        }
        let mut wanted = Vec::new();
        for var in vars {
            let position = (func.vars.iter().position(|v| v == var)).ok_or_else(|| {
                fail(Rule::UnknownDimension {
                    var: var.clone(),
                    dims: func.vars.clone(),
                })
            })?;
            if wanted.contains(&position) {
                return Err(fail(Rule::ReorderRepeats { var: var.clone() }));
            }
            wanted.push(position);
        }
        let mut slots: Vec<usize> = (0..order.len())
            .filter(|&i| wanted.contains(&order[i]))
            .collect();
        slots.sort_unstable();
        for (slot, position) in slots.into_iter().zip(wanted) {
            order[slot] = position;
        }
    }
    Ok(order)
}

/// The dimensions `fold_storage` folds, each checked: a dimension of a function the kernel
/// stores, folded once, by an extent in range. Whether the extent is large enough only bounds
/// inference knows (`lower::fold_storage`).
fn folds(
    pipeline: &Pipeline,
    func: &Func,
    schedule: &Schedule,
) -> Result<Vec<Fold>, ScheduleError> {
    let mut folds: Vec<Fold> = Vec::new();
    for d in schedule.directives(&func.name, StageRef::Pure) {
        let Directive::FoldStorage { var, extent } = d else {
            continue;
        };
        let fail = |rule| directive_error(&func.name, StageRef::Pure, d, rule);
        if func.name == pipeline.output.name {
            return Err(fail(Rule::FoldOfOutput));
        }
        let dim = (func.vars.iter().position(|v| v == var)).ok_or_else(|| {
            fail(Rule::UnknownDimension {
                var: var.clone(),
                dims: func.vars.clone(),
            })
        })?;
        if !(1..=MAX_SPLIT_FACTOR).contains(extent) {
            return Err(fail(Rule::FoldOutOfRange { extent: *extent }));
        }
        if folds.iter().any(|f| f.dim == dim) {
            return Err(fail(Rule::FoldedTwice { var: var.clone() }));
        }
        folds.push(Fold {
            dim,
            extent: *extent,
            directive: d.to_string(),
        });
    }
    Ok(folds)
}

/// Pure functions are inlined; the output, functions with updates and functions holding an
/// inline reduction inside a larger expression (`rstd(r) = 1 / sqrt(sum(c in 0..C) ...)`,
/// whose sum lifting makes a function of its own) are computed at root. Inlined,
/// such a function would repeat its whole reduction for every element of every consumer
/// (layernorm: O(C^2) work per row); Halide users expect reductions computed once.
fn default_compute(func: &Func, lifted: &Lifted) -> Placement {
    let holds_reduction = lifted.anonymous.iter().any(|(_, c)| *c == func.name);
    if func.name == lifted.pipeline.output.name || !func.updates.is_empty() || holds_reduction {
        Placement::Root
    } else {
        Placement::Inline
    }
}

type Explicit = (Option<Placement>, Option<Placement>);

/// The compute and store placements a function's line asks for, checked one by one.
fn explicit_placement(
    lifted: &Lifted,
    func: &Func,
    schedule: &Schedule,
    funcs: &BTreeMap<String, FuncPlan>,
) -> Result<Explicit, ScheduleError> {
    let pipeline = &lifted.pipeline;
    let mut compute: Option<(Placement, &Directive)> = None;
    let mut store: Option<(Placement, &Directive)> = None;
    let is_output = func.name == pipeline.output.name;
    for d in schedule
        .directives(&func.name, StageRef::Pure)
        .into_iter()
        .filter(|d| d.is_placement())
    {
        let fail = |rule| directive_error(&func.name, StageRef::Pure, d, rule);
        if is_output {
            return Err(fail(Rule::PlacementOfOutput));
        }
        let placement = match d {
            Directive::ComputeInline if !func.updates.is_empty() => {
                return Err(fail(Rule::InlineWithUpdate))
            }
            Directive::ComputeInline => Placement::Inline,
            Directive::ComputeRoot | Directive::StoreRoot => Placement::Root,
            Directive::ComputeAt(level) | Directive::StoreAt(level) => {
                resolve_level(pipeline, level, funcs).map_err(fail)?
            }
            _ => continue,
        };
        let slot = if matches!(d, Directive::StoreRoot | Directive::StoreAt(_)) {
            &mut store
        } else {
            &mut compute
        };
        if let Some((_, first)) = slot {
            return Err(fail(Rule::PlacedTwice {
                first: first.to_string(),
            }));
        }
        *slot = Some((placement, d));
    }
    if let Some((s, d)) = &store {
        let fail = |rule| directive_error(&func.name, StageRef::Pure, d, rule);
        let c = compute
            .as_ref()
            .map_or_else(|| default_compute(func, lifted), |(c, _)| c.clone());
        if c == Placement::Inline {
            return Err(fail(Rule::ScheduledInline));
        }
        if !store_encloses(s, &c, funcs) {
            return Err(fail(Rule::StoreInsideCompute {
                compute: compute.as_ref().map(|(_, d)| d.to_string()),
            }));
        }
    }
    Ok((compute.map(|c| c.0), store.map(|s| s.0)))
}

/// A function computed inline has no loops: loop directives on its line would be ignored.
fn check_inline_has_no_loops(
    funcs: &BTreeMap<String, FuncPlan>,
    schedule: &Schedule,
) -> Result<(), ScheduleError> {
    for (name, _) in funcs.iter().filter(|(_, p)| p.compute == Placement::Inline) {
        let directives = schedule.directives(name, StageRef::Pure);
        // A wrap only redirects the function's reads; an inlined consumer may have one.
        let shapes_storage_or_loops =
            |d: &&Directive| !d.is_placement() && !matches!(d, Directive::Wrap { .. });
        if let Some(d) = directives.into_iter().find(shapes_storage_or_loops) {
            return Err(directive_error(
                name,
                StageRef::Pure,
                d,
                Rule::ScheduledInline,
            ));
        }
    }
    Ok(())
}

/// Resolves `g[.update(i)], v` to a loop of that stage, refusing vectorized loops.
fn resolve_level(
    pipeline: &Pipeline,
    level: &LoopLevel,
    funcs: &BTreeMap<String, FuncPlan>,
) -> Result<Placement, Rule> {
    let name = format!("{}{}", level.func, stage_suffix(level.stage));
    let Some(stage) = funcs
        .get(&level.func)
        .and_then(|plan| plan.stages.get(level.stage.index()))
    else {
        return Err(Rule::UnknownLevelStage {
            name,
            stages: stage_names(pipeline),
        });
    };
    let names: Vec<String> = stage.dims.iter().map(|d| d.name.clone()).collect();
    let at = names
        .iter()
        .position(|n| n == &level.var)
        .ok_or_else(|| Rule::UnknownLoopLevel {
            var: level.var.clone(),
            loops: names.clone(),
        })?;
    if stage.dims[..=at]
        .iter()
        .any(|d| d.kind == ForKind::Vectorized)
    {
        return Err(Rule::InsideVector {
            var: level.var.clone(),
        });
    }
    Ok(Placement::At {
        func: level.func.clone(),
        stage: level.stage.index(),
        var: level.var.clone(),
    })
}

/// Every stage of every function, as a schedule names them: `f`, `f.update(0)`, ...
fn stage_names(pipeline: &Pipeline) -> Vec<String> {
    let stages = |f: &Func| {
        let updates = (0..f.updates.len())
            .map(|i| format!("{}{}", f.name, stage_suffix(StageRef::Update(i))));
        std::iter::once(f.name.clone())
            .chain(updates)
            .collect::<Vec<_>>()
    };
    pipeline.funcs.iter().flat_map(stages).collect()
}

/// Whether storage at `store` is at or outside computation at `compute`.
fn store_encloses(
    store: &Placement,
    compute: &Placement,
    funcs: &BTreeMap<String, FuncPlan>,
) -> bool {
    match (store, compute) {
        (Placement::Root, _) => true,
        (_, Placement::Root | Placement::Inline) => false,
        (
            Placement::At {
                func: sf,
                stage: ss,
                var: sv,
            },
            Placement::At {
                func: cf,
                stage: cs,
                var: cv,
            },
        ) => {
            let Some(stage) = funcs.get(sf).and_then(|p| p.stages.get(*ss)) else {
                return false;
            };
            let pos = |v: &str| stage.dims.iter().position(|d| d.name == v);
            sf == cf && ss == cs && pos(sv) <= pos(cv)
        }
        (Placement::Inline, _) => false,
    }
}

/// Where `consumer` is computed at root because the schedule leaves it unplaced: why, and how
/// to move it into the loop `target` names, in words.
fn root_by_default(
    plan: &Plan,
    schedule: &Schedule,
    consumer: &str,
    target: &Placement,
) -> Option<String> {
    let at_root = plan.funcs.get(consumer)?.compute == Placement::Root;
    let func = plan.pipeline().func(consumer)?;
    let lifted = plan.lifted.anonymous.iter().any(|(a, _)| a == consumer);
    let output = consumer == plan.pipeline().output.name;
    if !at_root || lifted || output || crate::follow::is_placed(schedule, consumer) {
        return None;
    }
    let Placement::At {
        func: g,
        stage,
        var,
    } = target
    else {
        return None;
    };
    let level = format!("compute_at({g}{}, {var})", stage_suffix(stage_ref(*stage)));
    Some(if func.updates.is_empty() {
        format!("a function holding a reduction is: place it in that loop with `{consumer}: {level}`, or inline it with `{consumer}: compute_inline()`")
    } else {
        format!("a function with an update is: place it in that loop with `{consumer}: {level}`")
    })
}

/// Functions lifting created default to the innermost non-vector loop of their one consumer.
fn resolve_anonymous(lifted: &Lifted, schedule: &Schedule, funcs: &mut BTreeMap<String, FuncPlan>) {
    for (name, _) in &lifted.anonymous {
        if crate::follow::is_placed(schedule, name) {
            continue;
        }
        let consumers = effective_consumers(&lifted.pipeline, funcs, name);
        let placement = match consumers.as_slice() {
            [(consumer, stage)] => innermost_loop(funcs, consumer, *stage),
            _ => None,
        };
        if let (Some(placement), Some(plan)) = (placement, funcs.get_mut(name)) {
            plan.store = placement.clone();
            plan.compute = placement;
        }
    }
}

fn innermost_loop(
    funcs: &BTreeMap<String, FuncPlan>,
    consumer: &str,
    stage: usize,
) -> Option<Placement> {
    let dims = &funcs.get(consumer)?.stages.get(stage)?.dims;
    let first_vector = dims
        .iter()
        .position(|d| d.kind == ForKind::Vectorized)
        .unwrap_or(dims.len());
    let var = dims[..first_vector].last()?.name.clone();
    Some(Placement::At {
        func: consumer.to_string(),
        stage,
        var,
    })
}

/// Checks a `compute_at` loop encloses every use of the function.
fn check_encloses(plan: &Plan, func: &Func, schedule: &Schedule) -> Result<(), ScheduleError> {
    let Some(fp) = plan.funcs.get(&func.name) else {
        return Ok(());
    };
    let Placement::At {
        func: g,
        stage,
        var,
    } = &fp.compute
    else {
        return Ok(());
    };
    let directive = schedule
        .directives(&func.name, StageRef::Pure)
        .into_iter()
        .find(|d| matches!(d, Directive::ComputeAt(_)))
        .map(|d| d.to_string())
        .unwrap_or_else(|| format!("(default) compute_at({g}, {var})"));
    let fail = |rule| ScheduleError::Directive {
        func: func.name.clone(),
        stage: StageRef::Pure,
        directive: directive.clone(),
        rule,
    };
    if plan
        .funcs
        .get(g)
        .is_some_and(|p| p.compute == Placement::Inline)
    {
        return Err(fail(Rule::AtInlined { func: g.clone() }));
    }
    let mut chain = vec![func.name.clone()];
    let target = Placement::At {
        func: g.clone(),
        stage: *stage,
        var: var.clone(),
    };
    for (consumer, consumer_stage) in effective_consumers(plan.pipeline(), &plan.funcs, &func.name)
    {
        let inside = consumer == *g && consumer_stage == *stage
            || nested_inside(plan, &consumer, &target, &mut chain).map_err(fail)?;
        if !inside {
            let legal = legal_levels(plan, &func.name);
            let default_root = root_by_default(plan, schedule, &consumer, &target);
            return Err(fail(Rule::NotEnclosing {
                consumer,
                default_root,
                legal,
            }));
        }
    }
    if nested_inside(
        plan,
        g,
        &Placement::At {
            func: func.name.clone(),
            stage: 0,
            var: String::new(),
        },
        &mut vec![func.name.clone()],
    )
    .map_err(fail)?
        || g == &func.name
    {
        return Err(fail(Rule::Cycle {
            chain: vec![func.name.clone(), g.clone(), func.name.clone()],
        }));
    }
    Ok(())
}

/// Whether `func` is computed inside `level` (at it, deeper in the same stage, or inside a
/// function computed there), following compute_at chains.
fn nested_inside(
    plan: &Plan,
    func: &str,
    level: &Placement,
    chain: &mut Vec<String>,
) -> Result<bool, Rule> {
    if chain.iter().any(|c| c == func) && chain.len() > 1 {
        chain.push(func.to_string());
        return Err(Rule::Cycle {
            chain: chain.clone(),
        });
    }
    let Some(fp) = plan.funcs.get(func) else {
        return Ok(false);
    };
    let Placement::At {
        func: g,
        stage,
        var,
    } = &fp.compute
    else {
        return Ok(false);
    };
    if let Placement::At {
        func: lf,
        stage: ls,
        var: lv,
    } = level
    {
        if g == lf && stage == ls {
            if lv.is_empty() {
                return Ok(true);
            }
            let dims = &plan.funcs[g].stages[*stage].dims;
            let pos = |v: &str| dims.iter().position(|d| d.name == v);
            return Ok(pos(var) >= pos(lv));
        }
    }
    chain.push(func.to_string());
    let result = nested_inside(plan, g, level, chain);
    chain.pop();
    result
}

/// What a `compute_at` of `name` could name instead: the loops of its only consumer's stage
/// outside any vectorized loop (`resolve_level` refuses the others), written with the stage
/// (`g.update(0)`) as a schedule names it, or root.
fn legal_levels(plan: &Plan, name: &str) -> String {
    match effective_consumers(plan.pipeline(), &plan.funcs, name).as_slice() {
        [(consumer, stage)] => {
            let dims = &plan.funcs[consumer].stages[*stage].dims;
            let loops: Vec<String> = dims
                .iter()
                .take_while(|d| d.kind != ForKind::Vectorized)
                .map(|d| d.name.clone())
                .collect();
            format!(
                "compute_root(), or compute_at({consumer}{}, v) for v in {}",
                stage_suffix(stage_ref(*stage)),
                loops.join(", ")
            )
        }
        _ => "compute_root(), or a loop of a function inside which every consumer is computed"
            .to_string(),
    }
}

/// The stage a `Plan` numbers `stage` (0: the pure definition, `i + 1`: update `i`).
pub fn stage_ref(stage: usize) -> StageRef {
    match stage.checked_sub(1) {
        None => StageRef::Pure,
        Some(i) => StageRef::Update(i),
    }
}
