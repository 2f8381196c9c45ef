//! Specializations (`Directive::Specialize`, Halide's `f.specialize(cond)`): a schedule with
//! them is a family of plain schedules, one per combination of cases (a *version*), each
//! validated like any schedule. This module splits a schedule into its general case and each
//! specialized stage's cases, checks every condition against the pipeline (a bool expression of
//! sizes, scalar parameters and constants), and validates every version; lowering
//! (`lower::specialize`) lowers each and chooses between them at run time.
//!
//! A case's directives are the stage's loop directives written before its `specialize` (on
//! earlier lines and earlier on its own line, as Halide copies the stage's schedule when
//! `specialize` is called), then those after it on its line. Directives that apply to the whole
//! function (placement, `wrap`, `reorder_storage`, `fold_storage`) belong to the general case
//! only, and every version keeps them: the cases of a function differ only in its loops.

use super::plain::validate_plain;
use crate::errors::{directive_error, Rule, ScheduleError};
use crate::lift_reductions::Lifted;
pub use crate::limits::MAX_VERSIONS;
use crate::plan::{Placement, Plan};
use crate::{Directive, Line, Schedule, StageRef};

/// One case of a specialized stage.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The condition as written.
    pub cond: String,
    /// The condition, checked against the pipeline.
    pub checked: strata_dsl::Expr,
    /// The stage's loop directives in this case: those inherited, then its own.
    pub directives: Vec<Directive>,
}

/// A stage with specializations, and its cases in the order they are tried.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecializedStage {
    /// The function whose stage it is.
    pub func: String,
    /// The stage specialized.
    pub stage: StageRef,
    /// Its cases, in the order they are tried.
    pub cases: Vec<Case>,
}

/// A schedule split into its general case and its specialized stages.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// The schedule without any specialization: what runs when no condition holds.
    pub general: Schedule,
    /// The specialized stages, in the order written.
    pub stages: Vec<SpecializedStage>,
}

/// One version: for each specialized stage (in `Split::stages`' order), the index of its case,
/// or `cases.len()` for the general case; and its validated plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Version {
    /// For each specialized stage, the index of its case (`cases.len()` for the general case).
    pub choice: Vec<usize>,
    /// The version's validated plan.
    pub plan: Plan,
}

/// Every version of a schedule, the general one (all general cases) last.
#[derive(Clone, Debug, PartialEq)]
pub struct Versions {
    /// The schedule split into its general case and its specialized stages.
    pub split: Split,
    /// Every version, the general one last.
    pub versions: Vec<Version>,
}

impl Versions {
    /// The plan of the version with all general cases.
    pub fn general(&self) -> &Plan {
        let last = self.versions.last();
        // `versions` validates at least the general version.
        &last.expect("at least the general version").plan
    }
}

/// Whether `schedule` specializes any stage.
pub fn has_specializations(schedule: &Schedule) -> bool {
    schedule
        .lines
        .iter()
        .flat_map(|l| &l.directives)
        .any(|d| matches!(d, Directive::Specialize(_)))
}

/// Splits `schedule` and validates each of its versions against `lifted`.
pub fn versions(lifted: &Lifted, schedule: &Schedule) -> Result<Versions, ScheduleError> {
    let split = split(lifted, schedule)?;
    let general = validate_plain(lifted, &split.general)?;
    check_not_inline(&split, &general)?;
    let radices: Vec<usize> = split.stages.iter().map(|s| s.cases.len() + 1).collect();
    let mut versions = Vec::new();
    for choice in choices(&radices) {
        let general_choice = choice.iter().zip(&radices).all(|(c, r)| c + 1 == *r);
        let plan = if general_choice {
            general.clone()
        } else {
            validate_plain(lifted, &version_schedule(&split, &choice))?
        };
        same_functions(&split, &choice, &plan, &general)?;
        versions.push(Version { choice, plan });
    }
    Ok(Versions { split, versions })
}

/// Every choice vector for these radices, in order (the last all general).
fn choices(radices: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for &r in radices {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                (0..r).map(move |c| {
                    let mut v = prefix.clone();
                    v.push(c);
                    v
                })
            })
            .collect();
    }
    out
}

/// The plain schedule of one version: the general schedule, each specialized stage's loop
/// directives replaced by those of its chosen case.
pub fn version_schedule(split: &Split, choice: &[usize]) -> Schedule {
    let mut schedule = split.general.clone();
    for (stage, &c) in split.stages.iter().zip(choice) {
        let Some(case) = stage.cases.get(c) else {
            continue;
        };
        for line in &mut schedule.lines {
            if line.func == stage.func && line.stage == stage.stage {
                line.directives.retain(|d| d.is_per_function());
            }
        }
        schedule.lines.push(Line {
            func: stage.func.clone(),
            stage: stage.stage,
            directives: case.directives.clone(),
        });
    }
    schedule
}

/// Splits the lines of `schedule` (see the module doc), checking the conditions and the rules
/// of where `specialize` may stand.
pub fn split(lifted: &Lifted, schedule: &Schedule) -> Result<Split, ScheduleError> {
    let mut general = Schedule::new();
    let mut stages: Vec<SpecializedStage> = Vec::new();
    for line in &schedule.lines {
        let mut general_part = Vec::new();
        let mut case: Option<(usize, usize)> = None;
        for d in &line.directives {
            let fail = |rule| directive_error(&line.func, line.stage, d, rule);
            match (d, case) {
                (Directive::Specialize(_), Some(_)) => {
                    return Err(fail(Rule::NestedSpecialization))
                }
                (Directive::Specialize(cond), None) => {
                    let inherited: Vec<Directive> = general
                        .directives(&line.func, line.stage)
                        .into_iter()
                        .chain(&general_part)
                        .filter(|d| !d.is_per_function())
                        .cloned()
                        .collect();
                    case = Some(find_case(lifted, &mut stages, line, d, cond, inherited)?);
                }
                (d, Some(_)) if d.is_per_function() || matches!(d, Directive::Rfactor { .. }) => {
                    return Err(fail(Rule::SpecializedPerFunction))
                }
                (d, Some((s, c))) => stages[s].cases[c].directives.push(d.clone()),
                (d, None) => general_part.push(d.clone()),
            }
        }
        if !general_part.is_empty() || case.is_none() {
            general.lines.push(Line {
                func: line.func.clone(),
                stage: line.stage,
                directives: general_part,
            });
        }
    }
    Ok(Split { general, stages })
}

/// The (stage, case) indices of `cond`'s case of the line's stage, made (with `inherited`
/// directives) if it is new.
fn find_case(
    lifted: &Lifted,
    stages: &mut Vec<SpecializedStage>,
    line: &Line,
    d: &Directive,
    cond: &str,
    inherited: Vec<Directive>,
) -> Result<(usize, usize), ScheduleError> {
    let fail = |rule| directive_error(&line.func, line.stage, d, rule);
    let s = match stages
        .iter()
        .position(|s| s.func == line.func && s.stage == line.stage)
    {
        Some(s) => s,
        None => {
            stages.push(SpecializedStage {
                func: line.func.clone(),
                stage: line.stage,
                cases: Vec::new(),
            });
            stages.len() - 1
        }
    };
    if let Some(c) = stages[s].cases.iter().position(|c| c.cond == cond) {
        return Ok((s, c));
    }
    let checked = check_condition(lifted, cond).map_err(|message| fail(message))?;
    stages[s].cases.push(Case {
        cond: cond.to_string(),
        checked,
        directives: inherited,
    });
    let versions = stages
        .iter()
        .map(|s| s.cases.len() + 1)
        .fold(1usize, usize::saturating_mul);
    if versions > MAX_VERSIONS {
        return Err(fail(Rule::TooManyVersions { versions }));
    }
    Ok((s, stages[s].cases.len() - 1))
}

/// `cond` parsed and checked with the kernel language's own parser and checker.
fn check_condition(lifted: &Lifted, cond: &str) -> Result<strata_dsl::Expr, Rule> {
    let ast = strata_dsl::parser::parse_expr(cond);
    let checked = ast.and_then(|ast| strata_dsl::check::check_condition(&lifted.pipeline, &ast));
    checked.map_err(|d| Rule::BadCondition { message: d.message })
}

/// Every version computes the same functions (lowering inlines and flattens them once): an
/// `rfactor` written after a `specialize` on the general case's lines would make an
/// intermediate function the case lacks.
fn same_functions(
    split: &Split,
    choice: &[usize],
    plan: &Plan,
    general: &Plan,
) -> Result<(), ScheduleError> {
    if plan.pipeline() == general.pipeline() {
        return Ok(());
    }
    let stages = split.stages.iter().zip(choice);
    let Some((stage, case)) = stages
        .filter_map(|(s, &c)| Some((s, s.cases.get(c)?)))
        .next()
    else {
        return Ok(());
    };
    let d = Directive::Specialize(case.cond.clone());
    Err(directive_error(
        &stage.func,
        stage.stage,
        &d,
        Rule::SpecializedPerFunction,
    ))
}

/// A function computed inline has no loops of its own, so no case to choose between.
fn check_not_inline(split: &Split, general: &Plan) -> Result<(), ScheduleError> {
    for stage in &split.stages {
        let inline = general
            .funcs
            .get(&stage.func)
            .is_some_and(|f| f.compute == Placement::Inline);
        if let (true, Some(case)) = (inline, stage.cases.first()) {
            let d = Directive::Specialize(case.cond.clone());
            return Err(directive_error(
                &stage.func,
                stage.stage,
                &d,
                Rule::ScheduledInline,
            ));
        }
    }
    Ok(())
}
