//! Wrappers (`f: wrap(g, gw)`, Halide's `g.in(f)`, TVM's `cache_read`; see `Directive::Wrap`):
//! the first step of validation. Each `wrap` adds the function `gw(v..) = g(v..)` to the
//! (lifted) pipeline and turns the consumer's calls of `g` into calls of `gw`, so everything
//! after it (placement, bounds inference, storage, loop directives on `gw`) treats the wrapper
//! as an ordinary pure function: a copy, which never changes a value wherever it is computed.
//!
//! Wraps apply in the order written (lines, then directives along a line), each to the
//! pipeline the earlier ones made: `C: wrap(B, Bp)` then `Bp: wrap(B, Bq)` copies twice.

use super::{Directive, Schedule, StageRef};
use crate::errors::{directive_error, unknown, Rule, ScheduleError};
use crate::lift_reductions::Lifted;
use strata_dsl::ir::{
    is_reserved, Call, CallTarget, Expr, Func, InputKind, Pipeline, RVar, Update,
};

/// `lifted` with every wrapper of `schedule` made and its consumer's calls redirected.
pub fn apply_wrappers(lifted: &Lifted, schedule: &Schedule) -> Result<Lifted, ScheduleError> {
    let mut out = lifted.clone();
    for line in &schedule.lines {
        for d in &line.directives {
            let Directive::Wrap { producer, wrapper } = d else {
                continue;
            };
            let fail = |rule| directive_error(&line.func, line.stage, d, rule);
            if line.stage != StageRef::Pure {
                return Err(fail(Rule::PerFunctionOnUpdate));
            }
            out.pipeline = wrap_one(&out.pipeline, &line.func, producer, wrapper)
                .map_err(|e| e.map_or_else(|| unknown(&line.func, &out.pipeline), fail))?;
        }
    }
    Ok(out)
}

/// `pipeline` with `consumer`'s calls of `producer` redirected to the new function `wrapper`,
/// placed just before the consumer (producers stay before their consumers). `Err(None)`: no
/// function `consumer`.
fn wrap_one(
    pipeline: &Pipeline,
    consumer: &str,
    producer: &str,
    wrapper: &str,
) -> Result<Pipeline, Option<Rule>> {
    let at = (pipeline.funcs.iter())
        .position(|f| f.name == consumer)
        .ok_or(None)?;
    let func = &pipeline.funcs[at];
    if producer == consumer {
        return Err(Some(Rule::WrapSelf));
    }
    let target = read_target(func, producer)?;
    check_wrapper_name(pipeline, wrapper)?;
    let vars = wrapper_vars(pipeline, func, producer, target);
    let copy = Func {
        name: wrapper.to_string(),
        dtype: producer_dtype(pipeline, producer, target),
        vars: vars.clone(),
        value: Expr::Call(Call {
            target,
            name: producer.to_string(),
            args: vars.iter().map(|v| Expr::Var(v.clone())).collect(),
            dtype: producer_dtype(pipeline, producer, target),
        }),
        updates: Vec::new(),
    };
    let mut out = pipeline.clone();
    out.funcs[at] = redirect_func(func, producer, target, wrapper);
    out.funcs.insert(at, copy);
    Ok(out)
}

/// Whether `func` reads `producer` as a function or an input buffer (directly, in any stage),
/// or the rule naming what it does read.
fn read_target(func: &Func, producer: &str) -> Result<CallTarget, Option<Rule>> {
    let reads = reads_of(func);
    match reads.iter().find(|c| c.name == producer) {
        Some(call) => Ok(call.target),
        None => {
            let mut names: Vec<String> = Vec::new();
            for c in reads.iter().filter(|c| c.name != func.name) {
                if !names.contains(&c.name) {
                    names.push(c.name.clone());
                }
            }
            Err(Some(Rule::WrapNotRead {
                producer: producer.to_string(),
                reads: names,
            }))
        }
    }
}

/// Every call (of a function or an input) in `func`'s definitions, in the order written.
fn reads_of(func: &Func) -> Vec<Call> {
    let mut calls = Vec::new();
    func.for_each_expr(&mut |e| {
        if let Expr::Call(call) = e {
            calls.push(call.clone());
        }
    });
    calls
}

/// A wrapper's name must be a plain name no function, input, size or variable already has:
/// one name, one meaning, in the schedule and in the printed loop IR.
fn check_wrapper_name(pipeline: &Pipeline, name: &str) -> Result<(), Option<Rule>> {
    let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain || is_reserved(name) {
        return Err(Some(Rule::WrapperNameInvalid {
            name: name.to_string(),
        }));
    }
    match name_owner(pipeline, name) {
        Some(by) => Err(Some(Rule::WrapperNameTaken {
            name: name.to_string(),
            by,
        })),
        None => Ok(()),
    }
}

/// What already uses `name` in `pipeline`, in words, or `None`.
pub(super) fn name_owner(pipeline: &Pipeline, name: &str) -> Option<String> {
    if pipeline.func(name).is_some() {
        return Some(format!("the function `{name}`"));
    }
    if let Some(input) = pipeline.input(name) {
        let kind = match input.kind {
            InputKind::Buffer { .. } => "input",
            InputKind::Scalar => "scalar parameter",
        };
        return Some(format!("the {kind} `{name}`"));
    }
    if pipeline.size_vars().iter().any(|s| s == name) {
        return Some(format!("the size `{name}`"));
    }
    let has_var = |f: &&Func| {
        f.vars.iter().any(|v| v == name)
            || f.updates
                .iter()
                .flat_map(|u| &u.rvars)
                .any(|r| r.name == name)
    };
    (pipeline.funcs.iter().find(has_var)).map(|f| format!("a variable of `{}`", f.name))
}

/// The wrapper's variables: a function's own; for an input, the variable the consumer indexes
/// each dimension with when every call has the same bare variable there (so `B(k, j)` gives
/// `k, j`, the names a schedule of the copy reads naturally), else `_0`, `_1`, ...
fn wrapper_vars(
    pipeline: &Pipeline,
    consumer: &Func,
    producer: &str,
    target: CallTarget,
) -> Vec<String> {
    if target == CallTarget::Func {
        return pipeline
            .func(producer)
            .map(|f| f.vars.clone())
            .unwrap_or_default();
    }
    let calls: Vec<Call> = reads_of(consumer)
        .into_iter()
        .filter(|c| c.name == producer)
        .collect();
    let rank = calls.first().map_or(0, |c| c.args.len());
    let mut vars: Vec<String> = Vec::new();
    for d in 0..rank {
        let bare = |c: &Call| match c.args.get(d) {
            Some(Expr::Var(v) | Expr::RVar(v)) => Some(v.clone()),
            _ => None,
        };
        let first = calls.first().and_then(bare);
        let same = first.filter(|v| calls.iter().all(|c| bare(c).as_ref() == Some(v)));
        let mut name = same
            .filter(|v| !vars.contains(v))
            .unwrap_or_else(|| format!("_{d}"));
        while vars.contains(&name) {
            name.push('_');
        }
        vars.push(name);
    }
    vars
}

fn producer_dtype(pipeline: &Pipeline, producer: &str, target: CallTarget) -> strata_dsl::Dtype {
    match target {
        CallTarget::Func => pipeline.func(producer).map(|f| f.dtype),
        CallTarget::Input => pipeline.input(producer).map(|i| i.dtype),
    }
    .unwrap_or(strata_dsl::Dtype::I32)
}

/// `func` with every call of `producer` (as `target`) reading `wrapper` instead.
fn redirect_func(func: &Func, producer: &str, target: CallTarget, wrapper: &str) -> Func {
    let redirect = |e: &Expr| redirect(e, producer, target, wrapper);
    Func {
        value: redirect(&func.value),
        updates: (func.updates.iter())
            .map(|u| Update {
                rvars: (u.rvars.iter())
                    .map(|r| RVar {
                        lo: redirect(&r.lo),
                        hi: redirect(&r.hi),
                        ..r.clone()
                    })
                    .collect(),
                args: u.args.iter().map(redirect).collect(),
                value: redirect(&u.value),
                ..u.clone()
            })
            .collect(),
        ..func.clone()
    }
}

fn redirect(e: &Expr, producer: &str, target: CallTarget, wrapper: &str) -> Expr {
    let inner = e.map_children(&mut |c| redirect(c, producer, target, wrapper));
    match inner {
        Expr::Call(call) if call.name == producer && call.target == target => Expr::Call(Call {
            target: CallTarget::Func,
            name: wrapper.to_string(),
            ..call
        }),
        other => other,
    }
}
