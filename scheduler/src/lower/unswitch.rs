//! Loop unswitching: a loop whose whole body is an `if` (under lets it does not read) on a
//! condition that does not change across the loop becomes that `if` around two copies of the
//! loop. Tail guards and the
//! all-lanes test of vectorization end up inside reduction loops (`for c { for ky { if (x + 7 <=
//! x.max) ... } }`); moving them out lets the fast version run with no test in its hot loops,
//! and lets code generation keep its accumulators in registers (they are no longer accessed
//! conditionally). Unrolling leaves a block of such `if`s, one per copy, all on the same
//! condition: a block of `if`s on one condition that reads no memory becomes one `if` first.
//! Establishes: no loop's body is an `if` invariant in that loop.

use crate::ir::{Expr, ForKind, Stmt};

/// Unswitches every loop of `s`, innermost first.
pub fn unswitch(s: &Stmt) -> Stmt {
    match s {
        Stmt::For {
            var,
            min,
            extent,
            kind,
            body,
        } => {
            let body = unswitch(body);
            let copy = |inner: Stmt| Stmt::For {
                var: var.clone(),
                min: min.clone(),
                extent: extent.clone(),
                kind: *kind,
                body: Box::new(inner),
            };
            // A vector tail's lanes loop keeps the `if`s under its lets: `interchange_lanes`
            // moves that loop, as it is, out of the reduction loops around it.
            let peel_lets = *kind != ForKind::Lanes;
            match invariant_if(&body, var, peel_lets) {
                Some((cond, then_case, else_case)) => Stmt::If {
                    cond,
                    then_case: Box::new(copy(then_case)),
                    else_case: else_case.map(|e| Box::new(copy(e))),
                },
                None => copy(body),
            }
        }
        Stmt::Block(stmts) => merge_ifs(stmts.iter().map(unswitch).collect()),
        other => other.map(&mut |e| e.clone(), &mut unswitch),
    }
}

/// A loop body that is an `if`, under lets its condition does not read, whose condition does
/// not read the loop's variable `var`: the condition, and the body with the `if` replaced by
/// each of its cases. A guard on an outer loop's variable stays under the lets a split or
/// vectorization puts first (`let x.base = xo * 16 in if (yo < n) ..`; a factored reduction's
/// piece guard, `rfactor.rs`).
fn invariant_if(body: &Stmt, var: &str, peel_lets: bool) -> Option<(Expr, Stmt, Option<Stmt>)> {
    match body {
        Stmt::If {
            cond,
            then_case,
            else_case,
        } if !cond.uses_var(var) => Some((
            cond.clone(),
            (**then_case).clone(),
            else_case.as_deref().cloned(),
        )),
        Stmt::Let { name, value, body } if peel_lets => {
            let (cond, then_case, else_case) = invariant_if(body, var, peel_lets)?;
            if cond.uses_var(name) {
                return None;
            }
            let under_let = |s: Stmt| Stmt::Let {
                name: name.clone(),
                value: value.clone(),
                body: Box::new(s),
            };
            Some((cond, under_let(then_case), else_case.map(under_let)))
        }
        _ => None,
    }
}

/// `if (c) a1 else b1; if (c) a2 else b2; ...` as `if (c) { a1; a2 } else { b1; b2 }` when every
/// statement is an `if` on the same condition and the condition reads no memory (so the
/// statements between cannot change it).
fn merge_ifs(stmts: Vec<Stmt>) -> Stmt {
    let first_cond = match stmts.first() {
        Some(Stmt::If { cond, .. }) => cond.clone(),
        _ => return Stmt::block(stmts),
    };
    let reads_memory = first_cond.reads_memory();
    let same = stmts
        .iter()
        .all(|s| matches!(s, Stmt::If { cond, .. } if *cond == first_cond));
    if reads_memory || !same || stmts.len() < 2 {
        return Stmt::block(stmts);
    }
    let (mut thens, mut elses) = (Vec::new(), Vec::new());
    for s in stmts {
        if let Stmt::If {
            then_case,
            else_case,
            ..
        } = s
        {
            thens.push(*then_case);
            elses.extend(else_case.map(|e| *e));
        }
    }
    let else_case = (!elses.is_empty()).then(|| Box::new(Stmt::block(elses)));
    Stmt::If {
        cond: first_cond,
        then_case: Box::new(Stmt::block(thens)),
        else_case,
    }
}
