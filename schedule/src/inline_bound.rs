//! The default stops inlining where it would multiply work. A pure function the schedule does
//! not place is inlined (Halide's default), but a function that reads an inlined function at
//! several points (a stencil), itself inlined into another stencil, repeats the work below it
//! for every point above: down a pyramid the expression of the last level triples with every
//! level (a 10-level interpolation was refused as too large). So where a function's
//! expression, with the inlined functions it reads substituted, would pass
//! [`DEFAULT_INLINE_NODES`] nodes, the largest inlined function it reads at two or more call
//! sites, if the schedule leaves it to the defaults, is computed at root instead (and again,
//! until the expression fits or no such function is left); a rooted function is one node to
//! its readers. A chain that reads each function once (`h(i) = g(i) + 1`) multiplies nothing
//! and stays inlined however long.
//!
//! Establishes: no function's expression passes `DEFAULT_INLINE_NODES` nodes while it reads
//! some function the defaults inline at several points. Validation keeps the plain defaults when
//! the bounded ones make the schedule illegal (a producer it computes inside a loop would be
//! read from the root), so no schedule that was legal is refused.

use crate::plan::{FuncPlan, Placement};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use strata_dsl::ir::{CallTarget, Expr, Func, Pipeline};

/// The most nodes a function left to the defaults may stand for once inlined, when it reads
/// an inlined function at several points (the examples' inlined stencils are far below it).
pub const DEFAULT_INLINE_NODES: u64 = 1024;

/// Moves to root the functions in `defaulted` that inlining would make multiply work (see the
/// module doc): for each function, producers first, while its expression with the inlined
/// functions substituted passes the bound, the largest inlined function it reads at several
/// points is computed at root instead. Whether any moved.
pub(crate) fn root_past_inline_bound(
    pipeline: &Pipeline,
    funcs: &mut BTreeMap<String, FuncPlan>,
    defaulted: &BTreeSet<String>,
) -> bool {
    let mut size: HashMap<String, u64> = HashMap::new();
    let mut moved = false;
    for func in pipeline.topo_order() {
        let nodes = loop {
            let (nodes, repeated) = inlined_size(func, &size);
            if nodes <= DEFAULT_INLINE_NODES {
                break nodes;
            }
            let largest = repeated
                .into_iter()
                .filter(|g| defaulted.contains(g))
                .max_by_key(|g| (size[g], std::cmp::Reverse(g.clone())));
            let Some(g) = largest else {
                break nodes;
            };
            if let Some(plan) = funcs.get_mut(&g) {
                plan.compute = Placement::Root;
                plan.store = Placement::Root;
            }
            size.remove(&g);
            moved = true;
        };
        if funcs
            .get(&func.name)
            .is_some_and(|p| p.compute == Placement::Inline)
        {
            size.insert(func.name.clone(), nodes);
        }
    }
    moved
}

/// The nodes of `func`'s definitions with the inlined functions it reads (those in `size`)
/// substituted, and the inlined functions it reads at two or more call sites.
fn inlined_size(func: &Func, size: &HashMap<String, u64>) -> (u64, Vec<String>) {
    let mut nodes = 0u64;
    let mut sites: BTreeMap<String, u32> = BTreeMap::new();
    func.for_each_expr(&mut |e| {
        let own = match e {
            Expr::Call(c) if c.target == CallTarget::Func => match size.get(&c.name) {
                Some(&n) => {
                    *sites.entry(c.name.clone()).or_default() += 1;
                    n
                }
                None => 1,
            },
            _ => 1,
        };
        nodes = nodes.saturating_add(own);
    });
    let repeated = sites.into_iter().filter(|&(_, n)| n >= 2).map(|(g, _)| g);
    (nodes, repeated.collect())
}
