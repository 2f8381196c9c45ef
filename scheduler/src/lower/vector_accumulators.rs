//! Vector accumulators for vectorized reductions. Vectorizing a reduction loop leaves, in the
//! loop around the vector, a step that folds each vector into the scalar target:
//!
//! ```text
//! for c.o { s[0] = s[0] + reduce_add(e[ramp(c.o * 8, 1, 8)]) }
//! ```
//!
//! which spends a horizontal reduction per step and chains every step through one scalar.
//! This pass gives the loop a vector accumulator instead, combined into the target once:
//!
//! ```text
//! allocate s.vacc: f32[8] {
//!   s.vacc[ramp(0, 1, 8)] = x8(0.0)
//!   for c.o { s.vacc[ramp(0, 1, 8)] = s.vacc[ramp(0, 1, 8)] + e[ramp(c.o * 8, 1, 8)] }
//!   s[0] = s[0] + reduce_add(s.vacc[ramp(0, 1, 8)])
//! }
//! ```
//!
//! Code generation keeps the accumulator in registers (its index is loop-invariant). Lane `j`
//! folds the elements `j, j + 8, ...` in order, so integer and min/max results are exact (see
//! `UpdateFreedom::vectorizable_reduction` for NaN) and float sums are reassociated.
//!
//! Applies to a serial loop whose body folds into a buffer only through such steps, all with
//! one index (invariant in the loop), one operation and one width, and holds no allocation or
//! parallel loop. Establishes: no such loop folds a vector into a scalar on every iteration.

use crate::ir::{Expr, ForKind, ReduceOp, Stmt, Type};

/// Gives every qualifying loop of `s` its vector accumulators, outermost loop first.
pub fn vector_accumulators(s: &Stmt) -> Stmt {
    super::rewrite_serial_loops(s, &with_accumulators)
}

/// One fold step: `buffer[index] = buffer[index] op reduce_op(vector)`.
#[derive(Clone, PartialEq)]
struct Fold {
    buffer: String,
    index: Expr,
    op: ReduceOp,
    ty: Type,
}

fn fold_step(s: &Stmt) -> Option<(Fold, &Expr)> {
    let Stmt::Store {
        buffer,
        index,
        value,
    } = s
    else {
        return None;
    };
    let (op, current, reduced) = ReduceOp::matching(value)?;
    let Expr::VectorReduce { op: inner, value } = reduced else {
        return None;
    };
    let reads_target =
        matches!(current, Expr::Load { buffer: b, index: i, .. } if b == buffer && **i == *index);
    (reads_target && *inner == op).then(|| {
        let fold = Fold {
            buffer: buffer.clone(),
            index: index.clone(),
            op,
            ty: value.ty(),
        };
        (fold, value.as_ref())
    })
}

fn with_accumulators(l: &Stmt) -> Option<Stmt> {
    // Looked for before anything is copied: this runs on every serial loop, outermost first,
    // and copying each loop whole (`lets_out_of_stores`) to find nothing made the pass
    // quadratic in nesting depth times body size (2.5 s of a bilateral grid's lowering with
    // its stencils inlined into the output).
    if !reduces_a_vector(l) {
        return None;
    }
    let l = &lets_out_of_stores(l);
    let Stmt::For { var, body, .. } = l else {
        return None;
    };
    let mut folds = Vec::new();
    let mut bound = vec![var.clone()];
    collect(body, &mut folds, &mut bound)?;
    let mut candidates: Vec<Fold> = Vec::new();
    for f in folds {
        if !candidates.iter().any(|c| c.buffer == f.buffer) {
            candidates.push(f);
        }
    }
    let chosen: Vec<Fold> = candidates
        .into_iter()
        .filter(|f| qualifies(f, body, &bound))
        .collect();
    if chosen.is_empty() {
        return None;
    }
    let mut out = l.clone();
    for fold in chosen.iter().rev() {
        out = accumulate(fold, out);
    }
    Some(out)
}

/// `s` with the lets common-subexpression elimination put in a store's value (`dp[ko] = let
/// t = ramp(..) in dp[ko] + reduce_add(a[t] * b[t])`) moved around the store as statement lets,
/// so the fold step under them is seen (a factored reduction's fold indexes its pieces). Only
/// where the store's index does not read the name, which the move would bind there.
fn lets_out_of_stores(s: &Stmt) -> Stmt {
    match s {
        Stmt::Store {
            buffer,
            index,
            value: Expr::Let { name, value, body },
        } if !index.uses_var(name) => Stmt::Let {
            name: name.clone(),
            value: (**value).clone(),
            body: Box::new(lets_out_of_stores(&Stmt::Store {
                buffer: buffer.clone(),
                index: index.clone(),
                value: (**body).clone(),
            })),
        },
        other => other.map(&mut |e| e.clone(), &mut lets_out_of_stores),
    }
}

/// Collects the fold steps in `s` and the names it binds; `None` if `s` holds an allocation
/// or a parallel loop.
fn collect(s: &Stmt, folds: &mut Vec<Fold>, bound: &mut Vec<String>) -> Option<()> {
    if let Some((fold, _)) = fold_step(s) {
        folds.push(fold);
        return Some(());
    }
    match s {
        Stmt::Allocate { .. }
        | Stmt::For {
            kind: ForKind::Parallel,
            ..
        } => None,
        Stmt::For { var, body, .. } => {
            bound.push(var.clone());
            collect(body, folds, bound)
        }
        Stmt::Let { name, body, .. } => {
            bound.push(name.clone());
            collect(body, folds, bound)
        }
        other => other
            .children()
            .into_iter()
            .try_for_each(|c| collect(c, folds, bound)),
    }
}

/// Whether `fold`'s buffer is touched in `body` only by fold steps like `fold`, at an index
/// that no name bound in the loop changes.
fn qualifies(fold: &Fold, body: &Stmt, bound: &[String]) -> bool {
    if bound.iter().any(|b| fold.index.uses_var(b)) {
        return false;
    }
    let mut ok = true;
    body.for_each(&mut |s| match fold_step(s) {
        Some((f, vector)) if f.buffer == fold.buffer => {
            ok &= f == *fold && !reads(vector, &fold.buffer);
        }
        _ => {
            let writes = matches!(s, Stmt::Store { buffer, .. } if *buffer == fold.buffer);
            ok &= !writes && !s.exprs().iter().any(|e| reads(e, &fold.buffer));
        }
    });
    ok
}

/// Whether some expression of `s` reduces a vector's lanes (every fold step does).
fn reduces_a_vector(s: &Stmt) -> bool {
    let mut found = false;
    s.for_each(&mut |s| {
        for e in s.exprs() {
            e.for_each(&mut |x| found |= matches!(x, Expr::VectorReduce { .. }));
        }
    });
    found
}

fn reads(e: &Expr, buffer: &str) -> bool {
    let mut found = false;
    e.for_each(&mut |x| found |= matches!(x, Expr::Load { buffer: b, .. } if b == buffer));
    found
}

/// Wraps the loop `l` with a vector accumulator for `fold`.
fn accumulate(fold: &Fold, l: Stmt) -> Stmt {
    let name = format!("{}.vacc", fold.buffer);
    let lanes = fold.ty.lanes;
    let whole = Expr::Ramp {
        base: Box::new(Expr::int(0)),
        stride: Box::new(Expr::int(1)),
        lanes,
    };
    let acc = Expr::Load {
        buffer: name.clone(),
        index: Box::new(whole.clone()),
        ty: fold.ty,
    };
    let init = Stmt::Store {
        buffer: name.clone(),
        index: whole.clone(),
        value: Expr::Broadcast {
            value: Box::new(Expr::Const(fold.op.identity(fold.ty.dtype))),
            lanes,
        },
    };
    let step = |vector: &Expr| Stmt::Store {
        buffer: name.clone(),
        index: whole.clone(),
        value: fold.op.apply(acc.clone(), vector.clone()),
    };
    let looped = replace_folds(&l, fold, &step);
    let target = Expr::Load {
        buffer: fold.buffer.clone(),
        index: Box::new(fold.index.clone()),
        ty: fold.ty.with_lanes(1),
    };
    let combine = Stmt::Store {
        buffer: fold.buffer.clone(),
        index: fold.index.clone(),
        value: fold.op.apply(
            target,
            Expr::VectorReduce {
                op: fold.op,
                value: Box::new(acc),
            },
        ),
    };
    Stmt::Allocate {
        buffer: name,
        dtype: fold.ty.dtype,
        size: Expr::int(lanes as i32),
        body: Box::new(Stmt::Block(vec![init, looped, combine])),
    }
}

fn replace_folds(s: &Stmt, fold: &Fold, step: &dyn Fn(&Expr) -> Stmt) -> Stmt {
    match fold_step(s) {
        Some((f, vector)) if f == *fold => step(vector),
        _ => s.map(&mut |e| e.clone(), &mut |c| replace_folds(c, fold, step)),
    }
}
