//! Vectorization: turns each loop marked vectorized (constant extent `w`) into vector
//! expressions. The loop variable becomes `ramp(min, 1, w)`; every expression that depends on it
//! becomes a `w`-lane vector (scalars meeting vectors are broadcast; ramps stay ramps through
//! `+`, `-` and `*` by a scalar, so contiguous accesses stay dense loads and stores).
//!
//! A tail guard inside the loop that depends on the loop variable (`if (x < x.min + x.extent)`)
//! is handled by versioning: when the guard holds for the last lane, the vector version runs
//! without it, otherwise the loop runs serially with the guard. A loop whose body cannot be
//! widened (a store of a vector to one address, storage allocated inside, a loop inside it
//! vectorized already) stays serial.
//! Establishes: no vectorized loop remains; vector types appear only in their bodies' place.

use crate::ir::{Expr, ForKind, ReduceOp, Stmt, UnOp};
use std::collections::HashMap;
use strata_dsl::BinOp;

use crate::ir::{SerialReason, SerialVector};

/// Vectorizes every vectorized loop of `s`, noting in `serial` each one that stays serial.
pub fn vectorize_noting(s: &Stmt, serial: &mut Vec<SerialVector>) -> Stmt {
    match s {
        Stmt::For {
            var,
            min,
            extent,
            kind: ForKind::Vectorized,
            body,
        } => {
            let body = vectorize_noting(body, serial);
            match extent.as_int().filter(|&w| w >= 1 && w <= u16::MAX as i64) {
                Some(w) => match vectorize_loop(var, min, w as u16, &body) {
                    Ok(vector) => vector,
                    Err((scalar, reason)) => {
                        serial.push(SerialVector {
                            loop_name: var.clone(),
                            reason,
                        });
                        scalar
                    }
                },
                // `constant_extents` made every vectorized extent a literal within
                // `MAX_LANES`; a loop left vectorized fails `verify` loudly.
                None => Stmt::For {
                    var: var.clone(),
                    min: min.clone(),
                    extent: extent.clone(),
                    kind: ForKind::Vectorized,
                    body: Box::new(body),
                },
            }
        }
        other => other.map(&mut |e| e.clone(), &mut |c| vectorize_noting(c, serial)),
    }
}

/// Whether `s` holds a vector expression or a lanes loop (what vectorizing a loop leaves).
fn holds_vectors(s: &Stmt) -> bool {
    let mut found = false;
    s.for_each(&mut |x| {
        found |= matches!(
            x,
            Stmt::For {
                kind: ForKind::Lanes,
                ..
            }
        );
        found |= x.exprs().iter().any(|e| {
            let mut vector = false;
            e.for_each(&mut |sub| vector |= sub.ty().is_vector());
            vector
        });
    });
    found
}

fn serial(var: &str, min: &Expr, extent: &Expr, body: Stmt) -> Stmt {
    Stmt::For {
        var: var.to_string(),
        min: min.clone(),
        extent: extent.clone(),
        kind: ForKind::Serial,
        body: Box::new(body),
    }
}

/// The loop widened to `lanes` lanes, or, where its body cannot be, the serial loop and why.
fn vectorize_loop(
    var: &str,
    min: &Expr,
    lanes: u16,
    body: &Stmt,
) -> Result<Stmt, (Stmt, SerialReason)> {
    let extent = Expr::int(lanes as i32);
    let stays_serial = |reason| Err((serial(var, min, &extent, body.clone()), reason));
    if lanes == 1 {
        // What the schedule asked for (one lane), not a fallback.
        return Ok(serial(var, min, &extent, body.clone()));
    }
    // A loop inside was vectorized already: widening its vectors again would need vectors of
    // vectors (`ramp(ramp(..), x4(1), 2)`), which no backend has. The inner loop keeps the
    // vectors and this one runs serially, as any loop whose body cannot be widened.
    if holds_vectors(body) {
        return stays_serial(SerialReason::InnerLoopVectorized);
    }
    let guards = lane_guards(body, var, &mut HashMap::new(), &mut Vec::new());
    let Some(guards) = guards else {
        return stays_serial(SerialReason::LaneDependentCondition);
    };
    let fast_body = if guards.is_empty() {
        body.clone()
    } else {
        drop_guards(body, var, &mut HashMap::new())
    };
    let ramp = Expr::Ramp {
        base: Box::new(min.clone()),
        stride: Box::new(Expr::int(1)),
        lanes,
    };
    let mut widener = Widener {
        lanes,
        vars: HashMap::from([(var.to_string(), ramp)]),
    };
    let Some(vector) = widener.stmt(&fast_body) else {
        return stays_serial(SerialReason::BodyNotWidenable);
    };
    if guards.is_empty() {
        return Ok(vector);
    }
    // Every guard is increasing in the loop variable: true at the last lane means true at all.
    let last = Expr::add(min.clone(), Expr::int(lanes as i32 - 1));
    let all_lanes = guards
        .iter()
        .map(|g| g.substitute(var, &last))
        .reduce(|a, b| Expr::binary(BinOp::And, a, b))
        .unwrap_or(Expr::Const(strata_dsl::Value::Bool(true)));
    // The serial version of a vectorized reduction carries its accumulator from lane to lane,
    // so only a loop whose every store moves with `var` becomes a (reorderable) lanes loop.
    let kind = if stores_move_with(body, var, &mut HashMap::new()) {
        ForKind::Lanes
    } else {
        ForKind::Serial
    };
    let lanes_loop = Stmt::For {
        var: var.to_string(),
        min: min.clone(),
        extent,
        kind,
        body: Box::new(body.clone()),
    };
    Ok(Stmt::If {
        cond: all_lanes,
        then_case: Box::new(vector),
        else_case: Some(Box::new(lanes_loop)),
    })
}

/// The conditions of `if`s in `body` that depend on `var` (lets expanded), or `None` if one of
/// them is not of the increasing form `lhs < rhs` / `lhs <= rhs` that versioning handles, or
/// depends on a loop inside the vectorized one (`inner`), so cannot be tested outside it.
fn lane_guards(
    s: &Stmt,
    var: &str,
    lets: &mut HashMap<String, Expr>,
    inner: &mut Vec<String>,
) -> Option<Vec<Expr>> {
    match s {
        Stmt::Let { name, value, body } => {
            lets.insert(name.clone(), expand(value, lets));
            lane_guards(body, var, lets, inner)
        }
        Stmt::For {
            var: loop_var,
            body,
            ..
        } => {
            inner.push(loop_var.clone());
            let found = lane_guards(body, var, lets, inner);
            inner.pop();
            found
        }
        Stmt::If {
            cond,
            then_case,
            else_case,
        } => {
            let cond = expand(cond, lets);
            let mut found = Vec::new();
            if cond.uses_var(var) {
                let testable = inner.iter().all(|v| !cond.uses_var(v));
                if else_case.is_some() || !testable || !increasing_guard(&cond, var) {
                    return None;
                }
                found.push(cond);
            }
            found.extend(lane_guards(then_case, var, lets, inner)?);
            if let Some(e) = else_case {
                found.extend(lane_guards(e, var, lets, inner)?);
            }
            Some(found)
        }
        other => {
            let mut found = Vec::new();
            for child in other.children() {
                found.extend(lane_guards(child, var, lets, inner)?);
            }
            Some(found)
        }
    }
}

/// Whether the index of every store in `s` depends on `var` (lets expanded).
fn stores_move_with(s: &Stmt, var: &str, lets: &mut HashMap<String, Expr>) -> bool {
    match s {
        Stmt::Let { name, value, body } => {
            lets.insert(name.clone(), expand(value, lets));
            stores_move_with(body, var, lets)
        }
        Stmt::Store { index, .. } => expand(index, lets).uses_var(var),
        other => other
            .children()
            .into_iter()
            .all(|c| stores_move_with(c, var, lets)),
    }
}

/// `body` with every `if` whose condition depends on `var` replaced by its then-branch.
fn drop_guards(s: &Stmt, var: &str, lets: &mut HashMap<String, Expr>) -> Stmt {
    match s {
        Stmt::Let { name, value, body } => {
            lets.insert(name.clone(), expand(value, lets));
            Stmt::Let {
                name: name.clone(),
                value: value.clone(),
                body: Box::new(drop_guards(body, var, lets)),
            }
        }
        Stmt::If {
            cond,
            then_case,
            else_case: None,
        } if expand(cond, lets).uses_var(var) => drop_guards(then_case, var, lets),
        other => other.map(&mut |e| e.clone(), &mut |c| drop_guards(c, var, lets)),
    }
}

/// Substitutes the let-bound variables of `lets` into `e`.
fn expand(e: &Expr, lets: &HashMap<String, Expr>) -> Expr {
    match e {
        Expr::Var(name, _) => lets.get(name).cloned().unwrap_or_else(|| e.clone()),
        other => other.map_children(&mut |c| expand(c, lets)),
    }
}

/// A conjunction of `lhs < rhs` or `lhs <= rhs` with `rhs` free of `var` and `lhs` increasing
/// in `var`.
fn increasing_guard(cond: &Expr, var: &str) -> bool {
    match cond {
        Expr::Binary(BinOp::And, a, b) => increasing_guard(a, var) && increasing_guard(b, var),
        Expr::Binary(BinOp::Lt | BinOp::Le, lhs, rhs) => !rhs.uses_var(var) && increasing(lhs, var),
        other => !other.uses_var(var),
    }
}

/// Whether `e` is non-decreasing in `var`: sums, and products with a non-negative constant, of
/// `var`, terms free of `var`, and `min`/`max` of such.
fn increasing(e: &Expr, var: &str) -> bool {
    if !e.uses_var(var) {
        return true;
    }
    match e {
        Expr::Var(name, _) => name == var,
        Expr::Binary(BinOp::Add, a, b) => increasing(a, var) && increasing(b, var),
        Expr::Binary(BinOp::Sub, a, b) => increasing(a, var) && !b.uses_var(var),
        Expr::Binary(BinOp::Mul, a, b) => {
            (increasing(a, var) && b.as_int().is_some_and(|c| c >= 0))
                || (increasing(b, var) && a.as_int().is_some_and(|c| c >= 0))
        }
        Expr::Intrinsic(strata_dsl::Intrinsic::Min | strata_dsl::Intrinsic::Max, args) => {
            args.iter().all(|a| increasing(a, var))
        }
        _ => false,
    }
}

/// How a widened let is bound: the `(name, value)` to bind, and what uses of the let's name
/// become (`None`: still a scalar variable). A ramp or broadcast stays visible as one (its
/// scalar part gets the let, as `name.base` or `name.scalar`), so accesses through it are still
/// recognisably dense; any other vector is bound as a vector variable.
fn vector_let(name: &str, value: Expr) -> ((String, Expr), Option<Expr>) {
    match value {
        Expr::Ramp {
            base,
            stride,
            lanes,
        } => {
            let scalar = format!("{name}.base");
            let var = Expr::Var(scalar.clone(), base.ty());
            (
                (scalar, *base),
                Some(Expr::Ramp {
                    base: Box::new(var),
                    stride,
                    lanes,
                }),
            )
        }
        Expr::Broadcast { value, lanes } => {
            let scalar = format!("{name}.scalar");
            let var = Expr::Var(scalar.clone(), value.ty());
            (
                (scalar, *value),
                Some(Expr::Broadcast {
                    value: Box::new(var),
                    lanes,
                }),
            )
        }
        other if other.ty().is_vector() => {
            let var = Expr::Var(name.to_string(), other.ty());
            ((name.to_string(), other), Some(var))
        }
        other => ((name.to_string(), other), None),
    }
}

/// Rewrites a loop body for `lanes` lanes at once.
struct Widener {
    lanes: u16,
    /// Variables whose values are vectors: the loop variable (a ramp) and vector lets.
    vars: HashMap<String, Expr>,
}

impl Widener {
    fn stmt(&mut self, s: &Stmt) -> Option<Stmt> {
        Some(match s {
            Stmt::Store {
                buffer,
                index,
                value,
            } => {
                let scalar_index = index;
                let index = self.expr(index);
                if !index.ty().is_vector() {
                    if let Some(folded) = self.vector_fold(buffer, scalar_index, &index, value) {
                        return Some(folded);
                    }
                }
                let value = self.expr(value);
                match (index.ty().is_vector(), value.ty().is_vector()) {
                    (true, _) => Stmt::Store {
                        buffer: buffer.clone(),
                        index,
                        value: self.broadcast(value),
                    },
                    (false, false) => Stmt::Store {
                        buffer: buffer.clone(),
                        index,
                        value,
                    },
                    (false, true) => return None,
                }
            }
            Stmt::Let { name, value, body } => {
                let value = self.expr(value);
                let (bound, shape) = vector_let(name, value);
                let previous = self.vars.remove(name);
                if let Some(shape) = shape {
                    self.vars.insert(name.clone(), shape);
                }
                let body = self.stmt(body);
                self.vars.remove(name);
                if let Some(p) = previous {
                    self.vars.insert(name.clone(), p);
                }
                Stmt::Let {
                    name: bound.0,
                    value: bound.1,
                    body: Box::new(body?),
                }
            }
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => {
                let (min, extent) = (self.expr(min), self.expr(extent));
                if min.ty().is_vector() || extent.ty().is_vector() {
                    return None;
                }
                Stmt::For {
                    var: var.clone(),
                    min,
                    extent,
                    kind: *kind,
                    body: Box::new(self.stmt(body)?),
                }
            }
            Stmt::If {
                cond,
                then_case,
                else_case,
            } => {
                let cond = self.expr(cond);
                if cond.ty().is_vector() {
                    return None;
                }
                let then_case = Box::new(self.stmt(then_case)?);
                let else_case = match else_case {
                    Some(e) => Some(Box::new(self.stmt(e)?)),
                    None => None,
                };
                Stmt::If {
                    cond,
                    then_case,
                    else_case,
                }
            }
            Stmt::Block(stmts) => {
                Stmt::Block(stmts.iter().map(|c| self.stmt(c)).collect::<Option<_>>()?)
            }
            Stmt::Produce { func, body } => Stmt::Produce {
                func: func.clone(),
                body: Box::new(self.stmt(body)?),
            },
            Stmt::NoOp => Stmt::NoOp,
            Stmt::Allocate { .. } | Stmt::Realize { .. } | Stmt::Provide { .. } => return None,
        })
    }

    /// A vectorized reduction's step `buf[i] = buf[i] op e` with `i` fixed across the lanes:
    /// `buf[i] = buf[i] op reduce_op(e as a vector)` (`e` broadcast if it does not vary).
    /// Validation allows a reduction loop to be vectorized only where this is the update's
    /// shape.
    fn vector_fold(
        &mut self,
        buffer: &str,
        original_index: &Expr,
        index: &Expr,
        value: &Expr,
    ) -> Option<Stmt> {
        let (op, target, operand) = ReduceOp::matching(value)?;
        let is_target = |e: &Expr| {
            matches!(e, Expr::Load { buffer: b, index: i, .. }
                if b == buffer && **i == *original_index)
        };
        let operand = match (is_target(target), is_target(operand)) {
            (true, false) => operand,
            (false, true) if matches!(op, ReduceOp::Add | ReduceOp::Mul) => target,
            _ => return None,
        };
        // An operand invariant in the loop still folds once per lane (`out(x) += 1` over
        // four lanes adds 4): broadcast it, or the step would run once per vector.
        let operand = self.expr(operand);
        let lanes = self.broadcast(operand);
        let current = Expr::Load {
            buffer: buffer.to_string(),
            index: Box::new(index.clone()),
            ty: value.ty(),
        };
        let reduced = Expr::VectorReduce {
            op,
            value: Box::new(lanes),
        };
        Some(Stmt::Store {
            buffer: buffer.to_string(),
            index: index.clone(),
            value: op.apply(current, reduced),
        })
    }

    fn broadcast(&self, e: Expr) -> Expr {
        if e.ty().is_vector() {
            e
        } else {
            Expr::Broadcast {
                value: Box::new(e),
                lanes: self.lanes,
            }
        }
    }

    fn expr(&mut self, e: &Expr) -> Expr {
        match e {
            Expr::Var(name, _) => self.vars.get(name).cloned().unwrap_or_else(|| e.clone()),
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                self.binary(*op, a, b)
            }
            Expr::Load { buffer, index, ty } => {
                let index = self.expr(index);
                let ty = if index.ty().is_vector() {
                    ty.with_lanes(self.lanes)
                } else {
                    *ty
                };
                Expr::Load {
                    buffer: buffer.clone(),
                    index: Box::new(index),
                    ty,
                }
            }
            Expr::Let { name, value, body } => {
                let value = self.expr(value);
                let previous = self.vars.remove(name);
                if value.ty().is_vector() {
                    self.vars
                        .insert(name.clone(), Expr::Var(name.clone(), value.ty()));
                }
                let body = self.expr(body);
                self.vars.remove(name);
                if let Some(p) = previous {
                    self.vars.insert(name.clone(), p);
                }
                Expr::Let {
                    name: name.clone(),
                    value: Box::new(value),
                    body: Box::new(body),
                }
            }
            other => self.lanewise(other),
        }
    }

    /// Ops whose operands are widened together: any vector operand makes all of them vectors.
    fn lanewise(&mut self, e: &Expr) -> Expr {
        let widened = e.map_children(&mut |c| self.expr(c));
        if !widened.children().iter().any(|c| c.ty().is_vector()) {
            return widened;
        }
        let lanes = self.lanes;
        let widened = widened.map_children(&mut |c| self.broadcast(c.clone()));
        match widened {
            Expr::Cast(t, a) => Expr::Cast(t.with_lanes(lanes), a),
            Expr::Unary(UnOp::Neg, a) => match *a {
                Expr::Ramp {
                    base,
                    stride,
                    lanes,
                } => Expr::Ramp {
                    base: Box::new(Expr::Unary(UnOp::Neg, base)),
                    stride: Box::new(Expr::Unary(UnOp::Neg, stride)),
                    lanes,
                },
                other => Expr::Unary(UnOp::Neg, Box::new(other)),
            },
            other => other,
        }
    }

    /// `a op b`, keeping ramps as ramps where the result is still linear.
    fn binary(&self, op: BinOp, a: Expr, b: Expr) -> Expr {
        let scalar = |e: &Expr| !e.ty().is_vector();
        match (op, &a, &b) {
            (
                BinOp::Add | BinOp::Sub,
                Expr::Ramp {
                    base,
                    stride,
                    lanes,
                },
                s,
            ) if scalar(s) => Expr::Ramp {
                base: Box::new(Expr::binary(op, (**base).clone(), s.clone())),
                stride: stride.clone(),
                lanes: *lanes,
            },
            (
                BinOp::Add,
                s,
                Expr::Ramp {
                    base,
                    stride,
                    lanes,
                },
            ) if scalar(s) => Expr::Ramp {
                base: Box::new(Expr::add(s.clone(), (**base).clone())),
                stride: stride.clone(),
                lanes: *lanes,
            },
            (
                BinOp::Mul,
                Expr::Ramp {
                    base,
                    stride,
                    lanes,
                },
                s,
            )
            | (
                BinOp::Mul,
                s,
                Expr::Ramp {
                    base,
                    stride,
                    lanes,
                },
            ) if scalar(s) => Expr::Ramp {
                base: Box::new(Expr::mul((**base).clone(), s.clone())),
                stride: Box::new(Expr::mul((**stride).clone(), s.clone())),
                lanes: *lanes,
            },
            _ if scalar(&a) && scalar(&b) => Expr::binary(op, a, b),
            _ => Expr::binary(op, self.broadcast(a), self.broadcast(b)),
        }
    }
}
