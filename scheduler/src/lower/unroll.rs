//! Unrolling: replaces each loop marked unrolled (constant extent) by copies of its body, one
//! per iteration, each with the loop variable bound to its value. Establishes: no unrolled loop
//! remains.

use crate::ir::{Expr, ForKind, Stmt};

/// Unrolls every unrolled loop of `s`.
pub fn unroll(s: &Stmt) -> Stmt {
    match s {
        Stmt::For {
            var,
            min,
            extent,
            kind: ForKind::Unrolled,
            body,
        } => {
            let body = unroll(body);
            match extent.as_int() {
                Some(n) => Stmt::block(
                    (0..n.max(0))
                        .map(|i| Stmt::Let {
                            name: var.clone(),
                            value: Expr::add(min.clone(), Expr::int(i as i32)),
                            body: Box::new(body.clone()),
                        })
                        .collect(),
                ),
                // `constant_extents` made every unrolled extent a literal; a loop left
                // unrolled fails `verify` loudly rather than running serially unasked.
                None => Stmt::For {
                    var: var.clone(),
                    min: min.clone(),
                    extent: extent.clone(),
                    kind: ForKind::Unrolled,
                    body: Box::new(body),
                },
            }
        }
        other => other.map(&mut |e| e.clone(), &mut unroll),
    }
}
