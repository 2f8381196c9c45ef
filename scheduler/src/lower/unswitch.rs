//! Loop unswitching: a loop whose whole body is an `if` on a condition that does not change
//! across the loop becomes that `if` around two copies of the loop. Tail guards and the
//! all-lanes test of vectorization end up inside reduction loops (`for c { for ky { if (x + 7 <=
//! x.max) ... } }`); moving them out lets the fast version run with no test in its hot loops,
//! and lets code generation keep its accumulators in registers (they are no longer accessed
//! conditionally). Unrolling leaves a block of such `if`s, one per copy, all on the same
//! condition: a block of `if`s on one condition that reads no memory becomes one `if` first.
//! Establishes: no loop's body is an `if` invariant in that loop.

use crate::ir::Stmt;

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
            match body {
                Stmt::If {
                    cond,
                    then_case,
                    else_case,
                } if !cond.uses_var(var) => {
                    let copy = |inner: Stmt| Stmt::For {
                        var: var.clone(),
                        min: min.clone(),
                        extent: extent.clone(),
                        kind: *kind,
                        body: Box::new(inner),
                    };
                    Stmt::If {
                        cond,
                        then_case: Box::new(copy(*then_case)),
                        else_case: else_case.map(|e| Box::new(copy(*e))),
                    }
                }
                body => Stmt::For {
                    var: var.clone(),
                    min: min.clone(),
                    extent: extent.clone(),
                    kind: *kind,
                    body: Box::new(body),
                },
            }
        }
        Stmt::Block(stmts) => merge_ifs(stmts.iter().map(unswitch).collect()),
        other => other.map(&mut |e| e.clone(), &mut unswitch),
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
