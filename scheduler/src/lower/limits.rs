//! How large a kernel lowering accepts, and the stack it runs on.
//!
//! Lowering's passes (and code generation after them) walk expressions and statements
//! recursively, so the stack they need grows with the depth of the trees they build. Two
//! things make those trees deep: inlining, which substitutes each inlined function's definition
//! into its consumers (a chain of 10,000 inlined functions is one expression 10,000 deep), and
//! computed functions, each of which wraps the loop nest in its storage, bounds and production.
//! Both are checked before any pass, against `MAX_EXPR_DEPTH` and `MAX_COMPUTED_FUNCS`, and the
//! passes run on a thread with `STACK_BYTES` of stack, which the deepest accepted kernel stays
//! far from. Past a limit lowering fails with `LowerError::TooLarge`, never a stack overflow.

use super::LowerError;
use crate::schedule::validate::{Placement, Plan};
use std::collections::HashMap;
use strata_dsl::ir::{CallTarget, Expr, Func, Pipeline};

/// The deepest expression lowering accepts once inlined functions are substituted: as deep as
/// the parser allows a single expression (`strata_dsl::parser::MAX_TREE_DEPTH`).
pub const MAX_EXPR_DEPTH: usize = strata_dsl::parser::MAX_TREE_DEPTH;

/// The most expression nodes one definition may have once inlined functions are substituted.
/// Inlining copies a callee into every call, so a "diamond" of functions that each read the
/// previous one twice doubles in size per level: 24 levels took 30 s and 1 GB to lower.
pub const MAX_EXPR_NODES: u64 = 1 << 20;

/// The most functions a schedule may compute (rather than inline), the output included. Each
/// nests the loop IR a few levels deeper; lowering time also grows faster than linearly with
/// their number (bounds inference), so this is kept where compiling stays within seconds.
pub const MAX_COMPUTED_FUNCS: usize = 256;

/// The stack lowering runs on: address space reserved, touched only as deep as the kernel
/// needs. The deepest accepted chain of inlined functions lowers (and compiles) within 16 MiB
/// unoptimized; the rest is margin for trees of other shapes.
pub const STACK_BYTES: usize = 256 << 20;

/// Refuses a plan whose lowering would build trees deeper than the limits allow.
pub fn check_limits(plan: &Plan) -> Result<(), LowerError> {
    check_limits_within(plan, MAX_EXPR_NODES)
}

/// [`check_limits`] with at most `max_expr_nodes` nodes per definition once inlined functions
/// are substituted (at most `MAX_EXPR_NODES`): the tuner's space asks for less than lowering
/// accepts, in the same walk.
pub fn check_limits_within(plan: &Plan, max_expr_nodes: u64) -> Result<(), LowerError> {
    let max_expr_nodes = max_expr_nodes.min(MAX_EXPR_NODES);
    let pipeline = plan.pipeline();
    let is_inline = |name: &str| {
        plan.funcs
            .get(name)
            .is_some_and(|p| p.compute == Placement::Inline)
    };
    let computed = pipeline
        .funcs
        .iter()
        .filter(|f| !is_inline(&f.name))
        .count();
    if computed > MAX_COMPUTED_FUNCS {
        return Err(LowerError::TooLarge(format!(
            "the schedule computes {computed} functions; lowering accepts at most \
             {MAX_COMPUTED_FUNCS} (inline some of them)"
        )));
    }
    let mut depths: HashMap<&str, usize> = HashMap::new();
    for func in callees_first(pipeline) {
        let depth = inlined_depth(func, &|callee| {
            if is_inline(callee) {
                depths.get(callee).copied().unwrap_or(0)
            } else {
                0
            }
        });
        if depth > MAX_EXPR_DEPTH {
            return Err(LowerError::TooLarge(format!(
                "`{}` is an expression {depth} deep once the functions it inlines are \
                 substituted; lowering accepts at most {MAX_EXPR_DEPTH} (compute some of them \
                 with `compute_root()`)",
                func.name
            )));
        }
        depths.insert(&func.name, depth);
    }
    let sizes = inlined_sizes(plan);
    match sizes.into_iter().find(|(_, nodes)| *nodes > max_expr_nodes) {
        Some((func, largest)) => Err(LowerError::TooLarge(format!(
            "`{func}` has {largest} or more expression nodes once the functions it inlines are \
             substituted; lowering accepts at most {max_expr_nodes} (compute some of them \
             with `compute_root()`)"
        ))),
        None => Ok(()),
    }
}

/// The function of `plan` whose definition is largest once the functions it inlines are
/// substituted, and an upper bound of its nodes; `None` for no functions (what
/// [`check_limits_within`] compares with its bound).
pub fn largest_inlined(plan: &Plan) -> Option<(&str, u64)> {
    inlined_sizes(plan)
        .into_iter()
        .max_by_key(|(_, nodes)| *nodes)
}

/// Each function's definition's size once the functions it inlines are substituted (an upper
/// bound of its nodes, saturating; its largest definition), callees first.
fn inlined_sizes(plan: &Plan) -> Vec<(&str, u64)> {
    let is_inline = |name: &str| {
        plan.funcs
            .get(name)
            .is_some_and(|p| p.compute == Placement::Inline)
    };
    let mut sizes: HashMap<&str, Size> = HashMap::new();
    let mut largest = Vec::new();
    for func in callees_first(plan.pipeline()) {
        let inlined = |callee: &str| {
            is_inline(callee)
                .then(|| sizes.get(callee).copied())
                .flatten()
        };
        let value = size(&func.value, &inlined);
        let nodes = func
            .updates
            .iter()
            .flat_map(|u| u.args.iter().chain([&u.value]))
            .map(|e| size(e, &inlined).nodes)
            .fold(value.nodes, u64::max);
        largest.push((func.name.as_str(), nodes));
        sizes.insert(&func.name, value);
    }
    largest
}

/// An expression's size once inlined: its nodes, and how many of them are variables (where an
/// inlined call's arguments are substituted).
#[derive(Clone, Copy, Default)]
struct Size {
    nodes: u64,
    vars: u64,
}

/// An upper bound of `e`'s size after inlining (saturating): an inlined call is its callee's
/// definition with each variable replaced by the largest argument.
fn size(e: &Expr, inlined: &dyn Fn(&str) -> Option<Size>) -> Size {
    let mut total = Size { nodes: 1, vars: 0 };
    let mut largest_arg = Size::default();
    let mut add = |c: &Expr| {
        let s = size(c, inlined);
        total.nodes = total.nodes.saturating_add(s.nodes);
        total.vars = total.vars.saturating_add(s.vars);
        largest_arg.nodes = largest_arg.nodes.max(s.nodes);
        largest_arg.vars = largest_arg.vars.max(s.vars);
    };
    match e {
        Expr::Var(_) | Expr::RVar(_) => return Size { nodes: 1, vars: 1 },
        Expr::Const(_) | Expr::Size(_) | Expr::Param(..) => {}
        Expr::Call(call) => {
            call.args.iter().for_each(&mut add);
            if let Some(callee) = inlined(&call.name).filter(|_| call.target == CallTarget::Func) {
                let grown = callee
                    .vars
                    .saturating_mul(largest_arg.nodes.saturating_sub(1));
                return Size {
                    nodes: callee.nodes.saturating_add(grown),
                    vars: callee.vars.saturating_mul(largest_arg.vars.max(1)),
                };
            }
        }
        Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => add(a),
        Expr::Binary(_, a, b) => [a, b].into_iter().for_each(|c| add(c)),
        Expr::Select(c, t, f) => [c, t, f].into_iter().for_each(|c| add(c)),
        Expr::Intrinsic(_, args) => args.iter().for_each(add),
        Expr::Reduce(r) => {
            r.rvars
                .iter()
                .for_each(|v| [&v.lo, &v.hi].into_iter().for_each(&mut add));
            add(&r.body);
        }
    }
    total
}

/// The depth of `func`'s deepest expression with each call replaced by the callee's
/// definition (`inlined(callee)` deep, 0 for a callee that stays a call) bound to its arguments.
fn inlined_depth(func: &Func, inlined: &dyn Fn(&str) -> usize) -> usize {
    let mut deepest = depth(&func.value, inlined);
    for update in &func.updates {
        for e in update.args.iter().chain([&update.value]) {
            deepest = deepest.max(depth(e, inlined));
        }
    }
    deepest
}

/// An upper bound of `e`'s depth after inlining: an inlined call's arguments replace variables
/// (leaves) of the callee's definition, so they add their own depth less one at worst.
/// Recursive, but only as deep as the parser's tree limit.
fn depth(e: &Expr, inlined: &dyn Fn(&str) -> usize) -> usize {
    let mut children = 0;
    let mut visit = |c: &Expr| children = children.max(depth(c, inlined));
    match e {
        Expr::Const(_) | Expr::Var(_) | Expr::RVar(_) | Expr::Size(_) | Expr::Param(..) => {}
        Expr::Call(call) => {
            call.args.iter().for_each(&mut visit);
            let callee = inlined(&call.name);
            if call.target == CallTarget::Func && callee > 0 {
                return callee + children.saturating_sub(1);
            }
        }
        Expr::Neg(a) | Expr::Not(a) | Expr::Cast(_, a) => visit(a),
        Expr::Binary(_, a, b) => [a, b].into_iter().for_each(|c| visit(c)),
        Expr::Select(c, t, f) => [c, t, f].into_iter().for_each(|c| visit(c)),
        Expr::Intrinsic(_, args) => args.iter().for_each(visit),
        Expr::Reduce(r) => {
            r.rvars
                .iter()
                .for_each(|v| [&v.lo, &v.hi].into_iter().for_each(&mut visit));
            visit(&r.body);
        }
    }
    children + 1
}

/// The functions of `pipeline`, each after every function it reads. Depth-first with an
/// explicit stack: a chain of many thousands of functions must not overflow the stack.
fn callees_first(pipeline: &Pipeline) -> Vec<&Func> {
    let index: HashMap<&str, usize> = pipeline
        .funcs
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.as_str(), i))
        .collect();
    let callees: Vec<Vec<usize>> = pipeline
        .funcs
        .iter()
        .map(|f| {
            f.callees()
                .iter()
                .filter_map(|c| index.get(c.as_str()).copied())
                .collect()
        })
        .collect();
    let mut seen = vec![false; pipeline.funcs.len()];
    let mut order = Vec::new();
    for start in 0..pipeline.funcs.len() {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        let mut path = vec![(start, 0)];
        while let Some((node, next)) = path.last_mut() {
            let node = *node;
            match callees[node].get(*next) {
                Some(&callee) => {
                    *next += 1;
                    if !seen[callee] {
                        seen[callee] = true;
                        path.push((callee, 0));
                    }
                }
                None => {
                    path.pop();
                    order.push(&pipeline.funcs[node]);
                }
            }
        }
    }
    order
}

/// Runs `f` on a thread with `STACK_BYTES` of stack, or on this thread if none can start.
pub fn on_big_stack<T: Send>(f: impl Fn() -> T + Sync) -> T {
    strata_dsl::with_stack(STACK_BYTES, f)
}
