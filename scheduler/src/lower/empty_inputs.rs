//! Empty inputs with a `constant(v)` boundary: such an input has no element, so every read of
//! it is `v` (the reference's answer), but its boundary's read, `select(inside, X(clamped), v)`,
//! still loads from it (code generation evaluates both sides of a `select`), and the call check
//! demanded the clamped index (`-1` for an extent of 0) of it. Each such input the kernel reads
//! versions the kernel on whether it is empty:
//!
//! ```text
//! <body reading select(0 <= i - 1 && i - 1 < N, X(clamp(i - 1, 0, N - 1)), 7.0)>
//!   -->
//! if 0 < N:
//!   <body>
//! else:
//!   <body reading select(0 <= i - 1 && i - 1 < N, 7.0, 7.0)>
//! ```
//!
//! Establishes: no read of such an input runs when it is empty, and, since the condition is one
//! of the sizes, the call checks (`access_sites`: an `if` conditions every site under it)
//! demand no extent of an empty one. The condition is decided once per call, outside every
//! loop, so the non-empty version's loops are what they were. The cost is code size: one copy
//! of the kernel per combination, so at most `MAX_VERSIONED` inputs are versioned; an empty
//! input past that limit is refused by the call (`CallError::ReadsEmptyInput`).

use crate::ir::{Expr, Stmt};
use strata_dsl::ir::{Boundary, InputKind, Pipeline};
use strata_dsl::Value;

/// The most inputs the kernel is versioned on (2^4 copies of its body at most).
pub const MAX_VERSIONED: usize = 4;

/// `s`, versioned on every input of `pipeline` with a `constant(v)` boundary that `s` reads and
/// that can be empty (see the module doc).
pub fn version_empty_inputs(s: &Stmt, pipeline: &Pipeline) -> Stmt {
    let mut out = s.clone();
    for (input, nonempty, value) in versioned_inputs(s, pipeline) {
        let empty_case = read_as_constant(&out, &input, value);
        out = Stmt::If {
            cond: nonempty,
            then_case: Box::new(out),
            else_case: Some(Box::new(empty_case)),
        };
    }
    out
}

/// The inputs to version on: name, the condition that it is not empty, its constant.
fn versioned_inputs(s: &Stmt, pipeline: &Pipeline) -> Vec<(String, Expr, Value)> {
    let mut found = Vec::new();
    for input in &pipeline.inputs {
        let InputKind::Buffer {
            shape,
            boundary: Some(Boundary::Constant(value)),
        } = &input.kind
        else {
            continue;
        };
        let nonempty = shape
            .iter()
            .map(|e| Expr::lt(Expr::int(0), super::loop_nest::extent_expr(e)))
            .reduce(super::access_sites::and);
        let Some(nonempty) = nonempty.map(|c| crate::simplify::simplify_expr(&c)) else {
            continue; // zero-dimensional: one element, never empty
        };
        if nonempty != Expr::Const(Value::Bool(true)) && reads(s, &input.name) {
            found.push((input.name.clone(), nonempty, *value));
        }
    }
    found.truncate(MAX_VERSIONED);
    found
}

/// Whether `s` reads `input`.
fn reads(s: &Stmt, input: &str) -> bool {
    let mut found = false;
    s.for_each_expr(&mut |e| found |= matches!(e, Expr::Call { func, .. } if func == input));
    found
}

/// `s` with every read of `input` replaced by `value`.
fn read_as_constant(s: &Stmt, input: &str, value: Value) -> Stmt {
    s.map(&mut |e| constant_expr(e, input, value), &mut |c| {
        read_as_constant(c, input, value)
    })
}

fn constant_expr(e: &Expr, input: &str, value: Value) -> Expr {
    match e {
        Expr::Call { func, .. } if func == input => Expr::Const(value),
        other => other.map_children(&mut |c| constant_expr(c, input, value)),
    }
}
