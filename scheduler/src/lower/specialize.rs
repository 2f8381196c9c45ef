//! Specialization (`Directive::Specialize`): puts the loop nests of a kernel's versions (one
//! lowering per combination of its stages' cases, `schedule::specialize::versions`) under the
//! conditions that choose them. Establishes: exactly one version runs per call, the one whose
//! cases' conditions are the first to hold for each specialized stage, in the order written
//! (as Halide tries specializations); each version's realizations and bounds are its own.
//!
//! The conditions read only sizes and scalar parameters, so they are decided once, outside
//! every loop: where Halide puts the `if` around the specialized stage, strata hoists it to the
//! top of the kernel (unswitching it out of every loop) and lowers the rest of the kernel in
//! each branch too. The cost is code size, bounded by `MAX_VERSIONS`; in return every branch's
//! producers are computed over exactly the region that branch reads, and the condition is
//! known inside its branch: a size that a condition makes a multiple of a split's factor
//! leaves that split without a tail (`with_known_multiples`).
//!
//! Before -> after (`out: split(x, xo, xi, 16).specialize(W % 16 == 0).vectorize(xi)`):
//!
//! ```text
//! <out's loop nest, split by 16 with a guarded tail>
//!   -->
//! if W % 16 == 0:
//!   <out's loop nest, split by 16, vectorized, no tail guard>
//! else:
//!   <out's loop nest, split by 16 with a guarded tail>
//! ```

use crate::ir::{Expr, Stmt};
use crate::schedule::loops::Step;
use crate::schedule::specialize::{Version, Versions};
use crate::schedule::validate::Plan;
use strata_dsl::{BinOp, Expr as DslExpr, Pipeline};

/// The statement running `bodies[i]` (the body lowered for `versions.versions[i]`) where its
/// conditions select it: for each specialized stage in turn, `if c1 .. else if c2 .. else ..`
/// over its cases, the general case last.
pub fn choose(versions: &Versions, pipeline: &Pipeline, bodies: &[Stmt]) -> Stmt {
    let conds = conditions(versions, pipeline);
    let body_of = |choice: &[usize]| {
        let i = versions.versions.iter().position(|v| v.choice == choice);
        i.and_then(|i| bodies.get(i)).cloned().unwrap_or(Stmt::NoOp)
    };
    chain(&conds, &mut Vec::new(), &body_of)
}

/// Each specialized stage's conditions as loop-IR expressions, its cases in order.
fn conditions(versions: &Versions, pipeline: &Pipeline) -> Vec<Vec<Expr>> {
    let conv = super::loop_nest::Converter {
        pipeline,
        func: &pipeline.output.name,
        stage: 0,
    };
    (versions.split.stages.iter())
        .map(|stage| stage.cases.iter().map(|c| conv.expr(&c.checked)).collect())
        .collect()
}

/// The conditions that read only sizes (a scalar parameter's is not known before the call),
/// each with the function it specializes, for the call to check
/// (`LoweredKernel::conditions`): one that wraps would choose a version the sizes do not.
pub fn size_conditions(versions: &Versions, pipeline: &Pipeline) -> Vec<(String, Expr)> {
    let stages = versions.split.stages.iter();
    let mut out = Vec::new();
    for (stage, conds) in stages.zip(conditions(versions, pipeline)) {
        for cond in conds {
            let mut reads_param = false;
            cond.for_each(&mut |e| reads_param |= matches!(e, Expr::Param(..)));
            if !reads_param {
                out.push((stage.func.clone(), cond));
            }
        }
    }
    out
}

/// The choice among the cases of stage `prefix.len()` and every later one.
fn chain(conds: &[Vec<Expr>], prefix: &mut Vec<usize>, body_of: &dyn Fn(&[usize]) -> Stmt) -> Stmt {
    let Some(cases) = conds.get(prefix.len()) else {
        return body_of(prefix);
    };
    let mut branch = |c: usize| {
        prefix.push(c);
        let s = chain(conds, prefix, body_of);
        prefix.pop();
        s
    };
    let mut out = branch(cases.len());
    for (c, cond) in cases.iter().enumerate().rev() {
        out = Stmt::If {
            cond: cond.clone(),
            then_case: Box::new(branch(c)),
            else_case: Some(Box::new(out)),
        };
    }
    out
}

/// `version`'s plan, knowing that its cases' conditions hold: a split of one of the output's
/// dimensions by a factor dividing `k`, where a condition says `E % k == 0` of exactly that
/// dimension's extent `E`, has no partial last piece, so it runs without a tail
/// (`StageLoops::exact`: no guard, no shifted last piece, `E / factor` pieces).
pub fn with_known_multiples(versions: &Versions, version: &Version) -> Plan {
    let mut plan = version.plan.clone();
    let stages = versions.split.stages.iter().zip(&version.choice);
    let facts: Vec<(&DslExpr, i64)> = stages
        .filter_map(|(stage, &c)| stage.cases.get(c))
        .flat_map(|case| conjuncts(&case.checked))
        .filter_map(multiple_of)
        .collect();
    let output = &plan.lifted.pipeline.output;
    let (name, extents) = (output.name.clone(), output.extents.clone());
    let Some(vars) = plan.pipeline().func(&name).map(|f| f.vars.clone()) else {
        return plan;
    };
    let Some(loops) = plan.funcs.get_mut(&name).and_then(|f| f.stages.first_mut()) else {
        return plan;
    };
    let mut exact = Vec::new();
    let mut split: Vec<&String> = Vec::new();
    for (i, step) in loops.steps.iter().enumerate() {
        let Step::Split { old, factor, .. } = step else {
            continue;
        };
        // Only a variable's first split is of the variable itself: a later `old` of the same
        // name is a loop that split made (`vectorize(x, 8)` keeps `x` for the outer loop).
        if split.contains(&old) {
            continue;
        }
        split.push(old);
        let Some(extent) = vars
            .iter()
            .position(|v| v == old)
            .and_then(|d| extents.get(d))
        else {
            continue;
        };
        if facts.iter().any(|(e, k)| *e == extent && k % *factor == 0) {
            exact.push(i);
        }
    }
    loops.exact = exact;
    plan
}

/// The conjuncts of a condition (`a && b` is `a` and `b`).
fn conjuncts(e: &DslExpr) -> Vec<&DslExpr> {
    match e {
        DslExpr::Binary(BinOp::And, a, b) => [conjuncts(a), conjuncts(b)].concat(),
        other => vec![other],
    }
}

/// `(E, k)` for a condition `E % k == 0` (or `0 == E % k`), `k` a positive constant.
fn multiple_of(e: &DslExpr) -> Option<(&DslExpr, i64)> {
    let DslExpr::Binary(BinOp::Eq, a, b) = e else {
        return None;
    };
    let (modulo, zero) = match (&**a, &**b) {
        (DslExpr::Const(z), m) | (m, DslExpr::Const(z)) => (m, z.as_i64()?),
        _ => return None,
    };
    let DslExpr::Binary(BinOp::Mod, value, k) = modulo else {
        return None;
    };
    let DslExpr::Const(k) = &**k else {
        return None;
    };
    let k = k.as_i64()?;
    (zero == 0 && k > 0).then_some((&**value, k))
}
