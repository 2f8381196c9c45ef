//! Lifts inline reductions out of expressions, so every reduction is an update definition the
//! schedule can address (Halide turns `sum()` into an anonymous Func the same way).
//!
//! - A definition whose whole value is a reduction, `C(i, j) = sum(k in 0..K) body`, becomes an
//!   initialization and a new first update: `C(i, j) = 0; for (k in 0..K) C(i, j) += body;`
//!   (`prod` uses `*=`, `max`/`min` use `C(i, j) = max(C(i, j), body)`). Its schedule names the
//!   update as `C.update(0)`.
//! - A reduction nested inside a larger expression becomes a new function named
//!   `<func>_<op><n>` (e.g. `P_sum0`) over the variables the reduction uses, and the expression
//!   calls it. Such functions are listed in `Lifted::anonymous`: by default they are computed at
//!   the innermost loop of their consumer.
//!
//! Establishes: no `Expr::Reduce` remains anywhere in the pipeline.

use strata_dsl::ir::*;
use strata_dsl::Value;

/// A pipeline without inline reductions, and the names of the functions lifting created.
#[derive(Clone, Debug, PartialEq)]
pub struct Lifted {
    /// The pipeline, inline reductions made functions of their own.
    pub pipeline: Pipeline,
    /// Functions made from nested reductions, with the function that consumes each.
    pub anonymous: Vec<(String, String)>,
}

/// Lifts every inline reduction of `pipeline` into update definitions.
pub fn lift_reductions(pipeline: &Pipeline) -> Lifted {
    let mut lifter = Lifter {
        taken: pipeline
            .funcs
            .iter()
            .map(|f| f.name.clone())
            .chain(pipeline.inputs.iter().map(|i| i.name.clone()))
            .collect(),
        new_funcs: Vec::new(),
        anonymous: Vec::new(),
    };
    let mut funcs = Vec::new();
    for func in &pipeline.funcs {
        funcs.push(lifter.lift_func(func));
        funcs.append(&mut lifter.new_funcs);
    }
    Lifted {
        pipeline: Pipeline {
            funcs,
            ..pipeline.clone()
        },
        anonymous: lifter.anonymous,
    }
}

struct Lifter {
    /// Every name in use, so new functions get fresh ones.
    taken: Vec<String>,
    /// Functions created while lifting the current function (placed before it).
    new_funcs: Vec<Func>,
    anonymous: Vec<(String, String)>,
}

/// The identity a reduction starts from.
fn identity(op: ReduceOp, dtype: strata_dsl::Dtype) -> Value {
    match op {
        ReduceOp::Sum => Value::zero(dtype),
        ReduceOp::Prod => Value::I64(1).cast(dtype),
        ReduceOp::Max => Value::lowest(dtype),
        ReduceOp::Min => Value::highest(dtype),
    }
}

/// The update `target op= body` that folds one more element into a reduction's accumulator,
/// over the reduction's domain (its variables and its `where` predicate).
fn fold_update(
    op: ReduceOp,
    domain: (Vec<RVar>, Option<Expr>),
    target: Call,
    body: Expr,
) -> Update {
    let (rvars, predicate) = domain;
    let args = target.args.clone();
    let (op, value) = match op {
        ReduceOp::Sum => (UpdateOp::Add, body),
        ReduceOp::Prod => (UpdateOp::Mul, body),
        ReduceOp::Max => (
            UpdateOp::Assign,
            Expr::Intrinsic(Intrinsic::Max, vec![Expr::Call(target), body]),
        ),
        ReduceOp::Min => (
            UpdateOp::Assign,
            Expr::Intrinsic(Intrinsic::Min, vec![Expr::Call(target), body]),
        ),
    };
    Update {
        rvars,
        predicate,
        args,
        op,
        value,
    }
}

impl Lifter {
    fn lift_func(&mut self, func: &Func) -> Func {
        let mut updates = Vec::new();
        let value = match &func.value {
            Expr::Reduce(r) => {
                let dtype = r.body.dtype();
                let target = Call {
                    target: CallTarget::Func,
                    name: func.name.clone(),
                    args: func.vars.iter().map(|v| Expr::Var(v.clone())).collect(),
                    dtype,
                };
                let body = self.lift_expr(&r.body, &func.name, &func.vars, &r.rvars);
                let domain = (r.rvars.clone(), r.predicate.as_deref().cloned());
                updates.push(fold_update(r.op, domain, target, body));
                Expr::Const(identity(r.op, dtype))
            }
            other => self.lift_expr(other, &func.name, &func.vars, &[]),
        };
        for update in &func.updates {
            let pure: Vec<String> = func
                .vars
                .iter()
                .zip(&update.args)
                .filter(|(v, a)| matches!(a, Expr::Var(n) if n == *v))
                .map(|(v, _)| v.clone())
                .collect();
            let lift =
                |this: &mut Self, e: &Expr| this.lift_expr(e, &func.name, &pure, &update.rvars);
            updates.push(Update {
                rvars: update.rvars.clone(),
                predicate: update.predicate.clone(),
                args: update.args.iter().map(|a| lift(self, a)).collect(),
                op: update.op,
                value: lift(self, &update.value),
            });
        }
        Func {
            value,
            updates,
            ..func.clone()
        }
    }

    /// Replaces each reduction inside `e` by a call to a new function. `vars` and `rvars` are
    /// the variables in scope.
    fn lift_expr(&mut self, e: &Expr, consumer: &str, vars: &[String], rvars: &[RVar]) -> Expr {
        match e {
            Expr::Reduce(r) => self.lift_reduce(r, consumer, vars, rvars),
            Expr::Call(call) => Expr::Call(Call {
                args: call
                    .args
                    .iter()
                    .map(|a| self.lift_expr(a, consumer, vars, rvars))
                    .collect(),
                ..call.clone()
            }),
            Expr::Neg(a) => Expr::Neg(Box::new(self.lift_expr(a, consumer, vars, rvars))),
            Expr::Not(a) => Expr::Not(Box::new(self.lift_expr(a, consumer, vars, rvars))),
            Expr::Cast(t, a) => Expr::Cast(*t, Box::new(self.lift_expr(a, consumer, vars, rvars))),
            Expr::Binary(op, a, b) => Expr::binary(
                *op,
                self.lift_expr(a, consumer, vars, rvars),
                self.lift_expr(b, consumer, vars, rvars),
            ),
            Expr::Select(c, t, f) => Expr::Select(
                Box::new(self.lift_expr(c, consumer, vars, rvars)),
                Box::new(self.lift_expr(t, consumer, vars, rvars)),
                Box::new(self.lift_expr(f, consumer, vars, rvars)),
            ),
            Expr::Intrinsic(op, args) => Expr::Intrinsic(
                *op,
                args.iter()
                    .map(|a| self.lift_expr(a, consumer, vars, rvars))
                    .collect(),
            ),
            Expr::Const(_) | Expr::Var(_) | Expr::RVar(_) | Expr::Size(_) | Expr::Param(..) => {
                e.clone()
            }
        }
    }

    fn lift_reduce(&mut self, r: &Reduce, consumer: &str, vars: &[String], rvars: &[RVar]) -> Expr {
        // The new function's variables: those of the scope the reduction uses (in its body,
        // its bounds and its predicate; `Expr::for_each` of the reduction visits all three).
        let whole = Expr::Reduce(r.clone());
        let used = |name: &str, want_rvar: bool| {
            let mut found = false;
            whole.for_each(&mut |x| match x {
                Expr::Var(n) if !want_rvar && n == name => found = true,
                Expr::RVar(n) if want_rvar && n == name => found = true,
                _ => {}
            });
            found
        };
        let mut params: Vec<Expr> = vars
            .iter()
            .filter(|v| used(v, false))
            .map(|v| Expr::Var(v.clone()))
            .collect();
        params.extend(
            rvars
                .iter()
                .filter(|rv| used(&rv.name, true))
                .map(|rv| Expr::RVar(rv.name.clone())),
        );
        let new_vars: Vec<String> = params.iter().map(param_name).collect();
        let name = self.fresh_name(&format!("{consumer}_{}", r.op.name()));
        let dtype = r.body.dtype();
        // Inside the new function, the outer reduction variables are pure variables.
        let Expr::Reduce(r) = rvars_to_vars(&whole, &new_vars) else {
            return whole;
        };
        let body = self.lift_expr(&r.body, &name, &new_vars, &r.rvars);
        let target = Call {
            target: CallTarget::Func,
            name: name.clone(),
            args: new_vars.iter().map(|v| Expr::Var(v.clone())).collect(),
            dtype,
        };
        self.new_funcs.push(Func {
            name: name.clone(),
            dtype,
            vars: new_vars,
            value: Expr::Const(identity(r.op, dtype)),
            updates: vec![fold_update(
                r.op,
                (r.rvars.clone(), r.predicate.as_deref().cloned()),
                target,
                body,
            )],
        });
        self.anonymous.push((name.clone(), consumer.to_string()));
        Expr::Call(Call {
            target: CallTarget::Func,
            name,
            args: params,
            dtype,
        })
    }

    fn fresh_name(&mut self, base: &str) -> String {
        let name = (0..)
            .map(|i| format!("{base}{i}"))
            .find(|n| !self.taken.contains(n))
            .unwrap_or_else(|| base.to_string());
        self.taken.push(name.clone());
        name
    }
}

fn param_name(e: &Expr) -> String {
    match e {
        Expr::Var(n) | Expr::RVar(n) => n.clone(),
        _ => String::new(),
    }
}

/// Turns references to the reduction variables named in `names` into pure variables.
fn rvars_to_vars(e: &Expr, names: &[String]) -> Expr {
    match e {
        Expr::RVar(n) if names.contains(n) => Expr::Var(n.clone()),
        Expr::Reduce(r) => Expr::Reduce(Reduce {
            op: r.op,
            rvars: (r.rvars.iter())
                .map(|v| RVar {
                    name: v.name.clone(),
                    lo: rvars_to_vars(&v.lo, names),
                    hi: rvars_to_vars(&v.hi, names),
                })
                .collect(),
            predicate: (r.predicate.as_deref()).map(|p| Box::new(rvars_to_vars(p, names))),
            body: Box::new(rvars_to_vars(&r.body, names)),
        }),
        Expr::Call(call) => Expr::Call(Call {
            args: call.args.iter().map(|a| rvars_to_vars(a, names)).collect(),
            ..call.clone()
        }),
        Expr::Neg(a) => Expr::Neg(Box::new(rvars_to_vars(a, names))),
        Expr::Not(a) => Expr::Not(Box::new(rvars_to_vars(a, names))),
        Expr::Cast(t, a) => Expr::Cast(*t, Box::new(rvars_to_vars(a, names))),
        Expr::Binary(op, a, b) => {
            Expr::binary(*op, rvars_to_vars(a, names), rvars_to_vars(b, names))
        }
        Expr::Select(c, t, f) => Expr::Select(
            Box::new(rvars_to_vars(c, names)),
            Box::new(rvars_to_vars(t, names)),
            Box::new(rvars_to_vars(f, names)),
        ),
        Expr::Intrinsic(op, args) => {
            Expr::Intrinsic(*op, args.iter().map(|a| rvars_to_vars(a, names)).collect())
        }
        Expr::Const(_) | Expr::Var(_) | Expr::RVar(_) | Expr::Size(_) | Expr::Param(..) => {
            e.clone()
        }
    }
}
