//! Loop-invariant hoisting of lets (Halide's `LICM` for let statements).

use super::interval::{bounds, Scope};
use super::loop_interval;
use super::subst::{buffers_read, buffers_written};
use crate::ir::{Expr, ForKind, Stmt};

/// Moves each `let` at the top of a loop body (directly inside the loop, or after other lets)
/// out of the loop when its value:
/// - uses neither the loop variable nor a let kept inside the loop;
/// - reads no buffer that the loop writes (`Store` or `Provide`);
/// - reads no memory at all unless the loop provably runs (its extent is at least 1): a load
///   hoisted out of a loop that runs zero times could read out of bounds;
///
/// and when moving it captures nothing: its name is not the loop variable, is not used by the
/// loop's min or extent, and is not used by the value of a let it moves past. Inner loops go
/// first, so a let climbs as far as it can.
pub fn hoist_loop_invariants(s: &Stmt) -> Stmt {
    hoist_in(s, &mut Scope::new())
}

fn hoist_in(s: &Stmt, scope: &mut Scope) -> Stmt {
    match s {
        Stmt::For {
            var,
            min,
            extent,
            kind,
            body,
        } => {
            scope.push(var, loop_interval(min, extent, scope));
            let body = hoist_in(body, scope);
            scope.pop();
            let runs = bounds(extent, scope).is_some_and(|b| b.lo >= 1);
            let header = Header {
                var,
                min,
                extent,
                kind: *kind,
                runs,
            };
            lift(&header, body)
        }
        Stmt::Let { name, value, body } => {
            scope.push(name, bounds(value, scope));
            let body = hoist_in(body, scope);
            scope.pop();
            Stmt::Let {
                name: name.clone(),
                value: value.clone(),
                body: Box::new(body),
            }
        }
        _ => s.map(&mut |e| e.clone(), &mut |c| hoist_in(c, scope)),
    }
}

/// A loop without its body.
struct Header<'a> {
    var: &'a str,
    min: &'a Expr,
    extent: &'a Expr,
    kind: ForKind,
    runs: bool,
}

/// The lets at the top of a loop body: those that leave, and those that stay.
#[derive(Default)]
struct Split {
    lifted: Vec<(String, Expr)>,
    kept: Vec<(String, Expr)>,
}

fn lift(header: &Header, body: Stmt) -> Stmt {
    let written = buffers_written(&body);
    let mut split = Split::default();
    let mut rest = body;
    while let Stmt::Let { name, value, body } = rest {
        let movable = can_lift(header, &split, &written, &name, &value);
        let side = if movable {
            &mut split.lifted
        } else {
            &mut split.kept
        };
        side.push((name, value));
        rest = *body;
    }
    let body = wrap(split.kept, rest);
    let h = header;
    let inner = Stmt::For {
        var: h.var.to_string(),
        min: h.min.clone(),
        extent: h.extent.clone(),
        kind: h.kind,
        body: Box::new(body),
    };
    wrap(split.lifted, inner)
}

fn can_lift(
    h: &Header,
    split: &Split,
    written: &std::collections::HashSet<String>,
    name: &str,
    value: &Expr,
) -> bool {
    let depends = value.uses_var(h.var) || split.kept.iter().any(|(k, _)| value.uses_var(k));
    let captures = name == h.var
        || h.min.uses_var(name)
        || h.extent.uses_var(name)
        || split
            .kept
            .iter()
            .any(|(k, v)| k == name || v.uses_var(name))
        || split.lifted.iter().any(|(l, _)| l == name);
    let clobbered = buffers_read(value).iter().any(|b| written.contains(b));
    let unsafe_read = value.reads_memory() && !h.runs;
    !(depends || captures || clobbered || unsafe_read)
}

/// `lets` around `body`, the first outermost.
fn wrap(lets: Vec<(String, Expr)>, body: Stmt) -> Stmt {
    lets.into_iter()
        .rev()
        .fold(body, |body, (name, value)| Stmt::Let {
            name,
            value,
            body: Box::new(body),
        })
}
