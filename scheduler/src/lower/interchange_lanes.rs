//! Lane-loop interchange: moves the serial tail of a vectorized loop outside the loops around
//! it. When a vectorized loop has a tail, vectorization leaves a `lanes` loop for the partial
//! vector, and unswitching lifts its version test out of the reduction loops, so the tail reads
//!
//! ```text
//! for c { for ky { for kx { let f = .. ; lanes for xi { let x = ..; if (x <= 53) S1 }
//!                           let f = .. ; lanes for xi { let x = ..; if (x <= 53) S2 } } } }
//! ```
//!
//! Every access there depends on `xi`, so nothing stays in registers and each step loads and
//! stores its accumulator. This pass turns such a nest into
//!
//! ```text
//! lanes for xi { let x = ..; if (x <= 53) { for c { for ky { for kx { let f = ..; S1
//!                                                                        let f = ..; S2 } } } } }
//! ```
//!
//! where each statement's accumulator is invariant in the reduction loops and code generation
//! keeps it in a register. It is legal because the iterations of a lanes loop are independent
//! (it comes from a vectorized loop, and the language lets an update touch only its own point
//! along a pure variable), so each element still sees its updates in the same order.
//!
//! Applies to a maximal nest of serial loops, lets and blocks whose only other statements are
//! lanes loops with one header (variable, bounds, leading lets and guard), none of which
//! mentions a variable bound inside the nest.
//! Establishes: no such nest is left with its lanes loops inside.

use crate::ir::{Expr, ForKind, Stmt};

/// Interchanges every qualifying nest of `s`, outermost first.
pub fn interchange_lanes(s: &Stmt) -> Stmt {
    super::rewrite_serial_loops(s, &interchange)
}

/// What every lanes loop of a nest shares: `lanes for var in [min, min + extent) { lets; if
/// (guard) ... }`.
#[derive(Clone, PartialEq)]
struct LanesHeader {
    var: String,
    min: Expr,
    extent: Expr,
    lets: Vec<(String, Expr)>,
    guard: Option<Expr>,
}

fn interchange(nest: &Stmt) -> Option<Stmt> {
    let mut header = None;
    let mut bound = Vec::new();
    scan(nest, &mut header, &mut bound)?;
    let header = header?;
    if mentions_any(&header, &bound) {
        return None;
    }
    let mut inner = strip_lanes(nest);
    if let Some(guard) = &header.guard {
        inner = Stmt::If {
            cond: guard.clone(),
            then_case: Box::new(inner),
            else_case: None,
        };
    }
    for (name, value) in header.lets.iter().rev() {
        inner = Stmt::Let {
            name: name.clone(),
            value: value.clone(),
            body: Box::new(inner),
        };
    }
    Some(Stmt::For {
        var: header.var,
        min: header.min,
        extent: header.extent,
        kind: ForKind::Lanes,
        body: Box::new(inner),
    })
}

/// Checks that `s` is made of serial loops, lets, blocks and lanes loops sharing one header;
/// collects the header and the names bound in the nest. `None` when it is not such a nest.
fn scan(s: &Stmt, header: &mut Option<LanesHeader>, bound: &mut Vec<String>) -> Option<()> {
    match s {
        Stmt::For {
            kind: ForKind::Serial,
            var,
            body,
            ..
        } => {
            bound.push(var.clone());
            scan(body, header, bound)
        }
        Stmt::Let { name, body, .. } => {
            bound.push(name.clone());
            scan(body, header, bound)
        }
        Stmt::Block(stmts) => stmts.iter().try_for_each(|s| scan(s, header, bound)),
        Stmt::For {
            kind: ForKind::Lanes,
            ..
        } => {
            let this = lanes_header(s);
            match header {
                Some(h) if *h != this => None,
                _ => {
                    *header = Some(this);
                    Some(())
                }
            }
        }
        _ => None,
    }
}

fn lanes_header(s: &Stmt) -> LanesHeader {
    let Stmt::For {
        var,
        min,
        extent,
        body,
        ..
    } = s
    else {
        unreachable!("lanes_header is called on loops")
    };
    let (lets, inner) = leading_lets(body);
    let guard = match inner {
        Stmt::If {
            cond,
            else_case: None,
            ..
        } => Some(cond.clone()),
        _ => None,
    };
    LanesHeader {
        var: var.clone(),
        min: min.clone(),
        extent: extent.clone(),
        lets,
        guard,
    }
}

/// The lets at the top of `s` and the statement under them.
fn leading_lets(mut s: &Stmt) -> (Vec<(String, Expr)>, &Stmt) {
    let mut lets = Vec::new();
    while let Stmt::Let { name, value, body } = s {
        lets.push((name.clone(), value.clone()));
        s = body;
    }
    (lets, s)
}

/// Whether the header depends on, or rebinds, a name bound inside the nest.
fn mentions_any(header: &LanesHeader, bound: &[String]) -> bool {
    let mut exprs: Vec<&Expr> = vec![&header.min, &header.extent];
    exprs.extend(header.lets.iter().map(|(_, v)| v));
    exprs.extend(header.guard.iter());
    let rebinds = header.lets.iter().any(|(n, _)| bound.contains(n)) || bound.contains(&header.var);
    rebinds || exprs.iter().any(|e| bound.iter().any(|b| e.uses_var(b)))
}

/// `s` with each lanes loop replaced by its body under the shared lets and guard.
fn strip_lanes(s: &Stmt) -> Stmt {
    match s {
        Stmt::For {
            kind: ForKind::Lanes,
            body,
            ..
        } => {
            let (_, inner) = leading_lets(body);
            match inner {
                Stmt::If {
                    then_case,
                    else_case: None,
                    ..
                } => then_case.as_ref().clone(),
                other => other.clone(),
            }
        }
        other => other.map(&mut |e| e.clone(), &mut strip_lanes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Type;
    use strata_dsl::Value;

    fn for_(var: &str, min: Expr, kind: ForKind, body: Stmt) -> Stmt {
        Stmt::For {
            var: var.into(),
            min,
            extent: Expr::int(4),
            kind,
            body: Box::new(body),
        }
    }

    fn store(index: Expr) -> Stmt {
        Stmt::Store {
            buffer: "out".into(),
            index,
            value: Expr::Const(Value::F32(1.0)),
        }
    }

    /// `for c { lanes for xi in [min, ..) { out[xi] = 1 } }`
    fn nest(lanes_min: Expr) -> Stmt {
        let lanes = for_("xi", lanes_min, ForKind::Lanes, store(Expr::var("xi")));
        for_("c", Expr::int(0), ForKind::Serial, lanes)
    }

    #[test]
    fn the_lanes_loop_moves_outside() {
        let out = interchange_lanes(&nest(Expr::int(0)));
        let Stmt::For {
            var, kind, body, ..
        } = &out
        else {
            panic!("{out}")
        };
        assert_eq!((var.as_str(), *kind), ("xi", ForKind::Lanes), "{out}");
        assert!(
            matches!(body.as_ref(), Stmt::For { var, .. } if var == "c"),
            "{out}"
        );
    }

    #[test]
    fn a_header_that_depends_on_the_nest_stays_inside() {
        let inner_dependent = Expr::Var("c".into(), Type::I32);
        let s = nest(inner_dependent);
        assert_eq!(interchange_lanes(&s), s);
    }
}
