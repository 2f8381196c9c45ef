//! Inlines every function the plan computes inline: each call `g(a, b)` is replaced by `g`'s
//! definition with its variables replaced by `a, b` (at the Pipeline level, before any loops
//! exist). Establishes: no remaining function is placed `Inline`, and no call names one.

use crate::schedule::validate::{Placement, Plan};
use strata_dsl::ir::*;

/// The pipeline with inlined functions substituted into their consumers and removed.
pub fn inline_functions(plan: &Plan) -> Pipeline {
    let pipeline = plan.pipeline();
    let is_inline = |name: &str| {
        plan.funcs
            .get(name)
            .is_some_and(|p| p.compute == Placement::Inline)
    };
    let inlined: Vec<&Func> = pipeline
        .funcs
        .iter()
        .filter(|f| is_inline(&f.name))
        .collect();
    let funcs = pipeline
        .funcs
        .iter()
        .filter(|f| !is_inline(&f.name))
        .map(|f| Func {
            value: substitute_calls(&f.value, &inlined),
            updates: f
                .updates
                .iter()
                .map(|u| Update {
                    args: u
                        .args
                        .iter()
                        .map(|a| substitute_calls(a, &inlined))
                        .collect(),
                    value: substitute_calls(&u.value, &inlined),
                    ..u.clone()
                })
                .collect(),
            ..f.clone()
        })
        .collect();
    Pipeline {
        funcs,
        ..pipeline.clone()
    }
}

/// Replaces calls to any of `inlined` inside `e`, repeatedly (an inlined function may call another).
fn substitute_calls(e: &Expr, inlined: &[&Func]) -> Expr {
    match e {
        Expr::Call(call) => {
            let args: Vec<Expr> = call
                .args
                .iter()
                .map(|a| substitute_calls(a, inlined))
                .collect();
            match inlined
                .iter()
                .find(|f| f.name == call.name && call.target == CallTarget::Func)
            {
                Some(func) => {
                    let body = substitute_calls(&func.value, inlined);
                    bind_vars(&body, &func.vars, &args)
                }
                None => Expr::Call(Call {
                    args,
                    ..call.clone()
                }),
            }
        }
        other => other.map_children(&mut |c| substitute_calls(c, inlined)),
    }
}

/// Replaces each pure variable `vars[i]` in `e` by `values[i]`.
pub fn bind_vars(e: &Expr, vars: &[String], values: &[Expr]) -> Expr {
    match e {
        Expr::Var(name) => match vars.iter().position(|v| v == name) {
            Some(i) => values[i].clone(),
            None => e.clone(),
        },
        other => other.map_children(&mut |c| bind_vars(c, vars, values)),
    }
}
