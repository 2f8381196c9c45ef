//! Warnings for legal but wasteful schedules, read off the lowered loop nest: producers
//! recomputed for nothing ([`recomputed`]), and vectorized loops lowering had to leave serial
//! ([`serial_vectors`]).
//!
//! A producer computed inside a loop of its consumer that its values do not depend on computes
//! the same values in every iteration of that loop. `ss(r) = sum(c in 0..C) X(r, c)^2` under
//! `ss: compute_at(Y, c)`, with `Y(r, c)` reading `ss(r)`, sums each row once per element of
//! the row (C times the work: O(C^2) per row):
//!
//! ```text
//! for Y.s0.r in [0, R) {
//!   for Y.s0.c in [0, C) {          <- ss's values do not depend on Y.s0.c
//!     produce ss { ... X[Y.s0.r * C + ss.s1.c] ... }
//!     Y[...] = ... ss[0] ...
//! ```
//!
//! The warning names the producer, the consumer's loops it is recomputed across and where to
//! compute it instead. It is conservative: a loop counts only when nothing the producer reads
//! changes with it (no variable derived from the loop, no buffer written elsewhere in the
//! loop). A tail guard between the loop and the producer (`if (c < C)`) does not excuse it:
//! each iteration the guard lets through still recomputes the same values.

use crate::ir::SerialVector;
use crate::ir::{Expr, LoweredKernel, Stmt};
use std::collections::BTreeSet;
use std::fmt;

/// A producer recomputed across loops of its consumer.
#[derive(Clone, Debug, PartialEq)]
pub struct Recomputed {
    /// The producer.
    pub func: String,
    /// The loops (IR names, outermost first) each of whose iterations recomputes it alike.
    pub loops: Vec<String>,
    /// How many times each value is computed, where the loops' extents are constants.
    pub times: Option<i64>,
    /// The innermost enclosing loop it does depend on (IR name), or `None`: at root.
    pub instead: Option<String>,
}

impl fmt::Display for Recomputed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let loops: Vec<String> = self.loops.iter().map(|l| display_loop(l)).collect();
        write!(
            f,
            "`{}` computes the same values in every iteration of {}",
            self.func,
            loops.join(" and ")
        )?;
        if let Some(n) = self.times {
            write!(f, " ({n} times each)")?;
        }
        match &self.instead {
            Some(l) => write!(f, "; compute it at {} instead", display_loop(l)),
            None => f.write_str("; compute it at root instead (compute_root())"),
        }
    }
}

/// `Y.s0.c` as a reader of schedules writes it: "`Y`'s loop `c`" (`Y.update(0)`'s for s1).
fn display_loop(ir_name: &str) -> String {
    match stage_loop(ir_name) {
        Some((func, 0, var)) => format!("`{func}`'s loop `{var}` (compute_at({func}, {var}))"),
        Some((func, n, var)) => format!("`{func}.update({})`'s loop `{var}`", n - 1),
        None => format!("loop `{ir_name}`"),
    }
}

/// `Y.s1.c` split into the function, the stage (0 pure, n update n - 1) and the variable.
fn stage_loop(ir_name: &str) -> Option<(&str, usize, &str)> {
    let mut parts = ir_name.splitn(3, '.');
    let (func, stage, var) = (parts.next()?, parts.next()?, parts.next()?);
    Some((func, stage.strip_prefix('s')?.parse().ok()?, var))
}

/// A vectorized loop lowered as a serial one, as a reader of schedules names it.
pub struct SerialVectorWarning<'a>(pub &'a SerialVector);

impl fmt::Display for SerialVectorWarning<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let SerialVector { loop_name, reason } = self.0;
        match stage_loop(loop_name) {
            Some((func, 0, var)) => write!(f, "`{func}: vectorize({var})`")?,
            Some((func, n, var)) => write!(f, "`{func}.update({}): vectorize({var})`", n - 1)?,
            None => write!(f, "vectorizing loop `{loop_name}`")?,
        }
        write!(f, " runs as a serial loop: {reason}")
    }
}

/// The warnings of every vectorized loop `kernel` runs serially.
pub fn serial_vectors(kernel: &LoweredKernel) -> Vec<SerialVectorWarning<'_>> {
    kernel
        .serial_vectors
        .iter()
        .map(SerialVectorWarning)
        .collect()
}

/// Every producer of `kernel` recomputed across loops of its consumer (see the module doc).
pub fn recomputed(kernel: &LoweredKernel) -> Vec<Recomputed> {
    let mut out = Vec::new();
    walk(&kernel.body, &mut Vec::new(), &mut out);
    out
}

/// An enclosing loop on the way down: its variable, its extent, its body, and the names
/// whose values change with it (the variable, lets derived from it) seen so far.
struct Frame<'a> {
    var: &'a str,
    extent: &'a Expr,
    body: &'a Stmt,
    varying: BTreeSet<String>,
}

fn walk<'a>(s: &'a Stmt, frames: &mut Vec<Frame<'a>>, out: &mut Vec<Recomputed>) {
    match s {
        Stmt::For {
            var, extent, body, ..
        } => {
            let varying = BTreeSet::from([var.clone()]);
            frames.push(Frame {
                var,
                extent,
                body,
                varying,
            });
            walk(body, frames, out);
            frames.pop();
        }
        Stmt::Let { name, value, body } => {
            let marked: Vec<bool> = frames.iter().map(|f| uses_any(value, &f.varying)).collect();
            for (f, m) in frames.iter_mut().zip(&marked) {
                if *m {
                    f.varying.insert(name.clone());
                }
            }
            walk(body, frames, out);
        }
        Stmt::Produce { func, body } => {
            if let Some(r) = recomputed_produce(func, s, frames) {
                out.push(r);
            }
            walk(body, frames, out);
        }
        other => {
            for child in other.children() {
                walk(child, frames, out);
            }
        }
    }
}

/// The loops, innermost outwards until the first that changes what `produce` computes,
/// across which `func` is recomputed alike; `None` if there are none.
fn recomputed_produce(func: &str, produce: &Stmt, frames: &[Frame]) -> Option<Recomputed> {
    let reads = loaded_buffers(produce);
    let mut loops = Vec::new();
    let mut times = Some(1i64);
    let mut instead = None;
    let written_here = stored_buffers(produce);
    for frame in frames.iter().rev() {
        let written_elsewhere = &stored_buffers(frame.body) - &written_here;
        let changes = stmt_uses_any(produce, &frame.varying)
            || reads.iter().any(|b| written_elsewhere.contains(b));
        if changes {
            instead = Some(frame.var.to_string());
            break;
        }
        times = times.and_then(|t| frame.extent.as_int().and_then(|e| t.checked_mul(e)));
        loops.insert(0, frame.var.to_string());
    }
    let trivial = times.is_some_and(|t| t <= 1);
    (!loops.is_empty() && !trivial).then(|| Recomputed {
        func: func.to_string(),
        loops,
        times,
        instead,
    })
}

fn uses_any(e: &Expr, names: &BTreeSet<String>) -> bool {
    names.iter().any(|n| e.uses_var(n))
}

fn stmt_uses_any(s: &Stmt, names: &BTreeSet<String>) -> bool {
    let mut found = false;
    s.for_each(&mut |x| found |= x.exprs().iter().any(|e| uses_any(e, names)));
    found
}

fn loaded_buffers(s: &Stmt) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    s.for_each_expr(&mut |e| {
        if let Expr::Load { buffer, .. } | Expr::Call { func: buffer, .. } = e {
            out.insert(buffer.clone());
        }
    });
    out
}

/// The buffers `s` writes.
fn stored_buffers(s: &Stmt) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    s.for_each(&mut |x| match x {
        Stmt::Store { buffer, .. } | Stmt::Provide { func: buffer, .. } => {
            out.insert(buffer.clone());
        }
        _ => {}
    });
    out
}
