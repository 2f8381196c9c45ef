//! The mid rung's printer: loop IR as indented, readable text with stable names, so printed IR
//! diffs cleanly between runs and golden files catch unintended changes.
//!
//! ```text
//! for out.s0.y in [0, H - 2) {
//!   vectorized for out.s0.x.v in [0, 8) {
//!     out[...] = ...
//!   }
//! }
//! ```

use crate::ir::*;
use std::fmt::{self, Write};
use strata_dsl::Value;

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(f, self, 0)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.lanes > 1 {
            write!(f, "{}x{}", self.dtype, self.lanes)
        } else {
            write!(f, "{}", self.dtype)
        }
    }
}

fn precedence(e: &Expr) -> u8 {
    match e {
        Expr::Binary(op, ..) => op.precedence(),
        Expr::Unary(..) => 6,
        Expr::Let { .. } => 0,
        Expr::Const(v) if v.as_f64() < 0.0 => 6,
        _ => 7,
    }
}

fn write_expr(f: &mut fmt::Formatter<'_>, e: &Expr, min_prec: u8) -> fmt::Result {
    let parens = precedence(e) < min_prec;
    if parens {
        f.write_char('(')?;
    }
    write_bare(f, e)?;
    if parens {
        f.write_char(')')?;
    }
    Ok(())
}

fn write_args(f: &mut fmt::Formatter<'_>, args: &[&Expr]) -> fmt::Result {
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_expr(f, a, 0)?;
    }
    Ok(())
}

fn write_bare(f: &mut fmt::Formatter<'_>, e: &Expr) -> fmt::Result {
    match e {
        Expr::Const(Value::I32(v)) => write!(f, "{v}"),
        Expr::Const(v) => write!(f, "{v}"),
        Expr::Var(name, _) | Expr::Param(name, _) => f.write_str(name),
        Expr::Call { func, args, .. } => {
            write!(f, "{func}(")?;
            write_args(f, &args.iter().collect::<Vec<_>>())?;
            f.write_char(')')
        }
        Expr::Load { buffer, index, ty } => {
            write!(f, "{buffer}[")?;
            write_expr(f, index, 0)?;
            if ty.is_vector() {
                write!(f, "] as {ty}")
            } else {
                f.write_char(']')
            }
        }
        Expr::Unary(UnOp::Neg, a) => {
            f.write_char('-')?;
            write_expr(f, a, 6)
        }
        Expr::Unary(UnOp::Not, a) => {
            f.write_char('!')?;
            write_expr(f, a, 6)
        }
        Expr::Binary(op, a, b) => {
            let left = op.precedence() + u8::from(op.is_comparison());
            write_expr(f, a, left)?;
            write!(f, " {} ", op.symbol())?;
            write_expr(f, b, op.precedence() + 1)
        }
        Expr::Select(c, t, e) => {
            f.write_str("select(")?;
            write_args(f, &[c, t, e])?;
            f.write_char(')')
        }
        Expr::Cast(t, a) => {
            write!(f, "{t}(")?;
            write_expr(f, a, 0)?;
            f.write_char(')')
        }
        Expr::Intrinsic(op, args) => {
            write!(f, "{}(", op.name())?;
            write_args(f, &args.iter().collect::<Vec<_>>())?;
            f.write_char(')')
        }
        Expr::Ramp {
            base,
            stride,
            lanes,
        } => {
            f.write_str("ramp(")?;
            write_args(f, &[base, stride])?;
            write!(f, ", {lanes})")
        }
        Expr::Broadcast { value, lanes } => {
            write!(f, "x{lanes}(")?;
            write_expr(f, value, 0)?;
            f.write_char(')')
        }
        Expr::VectorReduce { op, value } => {
            write!(f, "reduce_{}(", op.name())?;
            write_expr(f, value, 0)?;
            f.write_char(')')
        }
        Expr::Let { name, value, body } => {
            write!(f, "let {name} = ")?;
            write_expr(f, value, 1)?;
            f.write_str(" in ")?;
            write_expr(f, body, 0)
        }
    }
}

impl fmt::Display for Stmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        write_stmt(&mut out, self, 0);
        f.write_str(out.trim_end())
    }
}

fn kind_prefix(kind: ForKind) -> &'static str {
    match kind {
        ForKind::Serial => "",
        ForKind::Parallel => "parallel ",
        ForKind::Vectorized => "vectorized ",
        ForKind::Unrolled => "unrolled ",
        ForKind::Lanes => "lanes ",
    }
}

fn line(out: &mut String, depth: usize, text: impl fmt::Display) {
    let _ = writeln!(out, "{:width$}{text}", "", width = depth * 2);
}

fn block(out: &mut String, depth: usize, header: String, body: &Stmt) {
    line(out, depth, format!("{header} {{"));
    write_stmt(out, body, depth + 1);
    line(out, depth, "}");
}

fn write_stmt(out: &mut String, s: &Stmt, depth: usize) {
    match s {
        Stmt::For {
            var,
            min,
            extent,
            kind,
            body,
        } => {
            let end = Expr::add(min.clone(), extent.clone());
            let end = if min.as_int() == Some(0) {
                extent.clone()
            } else {
                end
            };
            block(
                out,
                depth,
                format!("{}for {var} in [{min}, {end})", kind_prefix(*kind)),
                body,
            )
        }
        Stmt::Let { name, value, body } => {
            line(out, depth, format!("let {name} = {value}"));
            write_stmt(out, body, depth);
        }
        Stmt::Block(stmts) => stmts.iter().for_each(|s| write_stmt(out, s, depth)),
        Stmt::If {
            cond,
            then_case,
            else_case,
        } => {
            line(out, depth, format!("if ({cond}) {{"));
            write_stmt(out, then_case, depth + 1);
            if let Some(e) = else_case {
                line(out, depth, "} else {");
                write_stmt(out, e, depth + 1);
            }
            line(out, depth, "}");
        }
        Stmt::Realize {
            func,
            dtype,
            region,
            body,
        } => {
            let dims: Vec<String> = region
                .iter()
                .map(|r| format!("[{}, {}]", r.min, r.extent))
                .collect();
            block(
                out,
                depth,
                format!("realize {func}: {dtype}{}", dims.join("")),
                body,
            )
        }
        Stmt::Produce { func, body } => block(out, depth, format!("produce {func}"), body),
        Stmt::Provide { func, args, value } => {
            let args: Vec<String> = args.iter().map(Expr::to_string).collect();
            line(out, depth, format!("{func}({}) = {value}", args.join(", ")))
        }
        Stmt::Allocate {
            buffer,
            dtype,
            size,
            body,
        } => block(
            out,
            depth,
            format!("allocate {buffer}: {dtype}[{size}]"),
            body,
        ),
        Stmt::Store {
            buffer,
            index,
            value,
        } => line(out, depth, format!("{buffer}[{index}] = {value}")),
        Stmt::NoOp => {}
    }
}

impl fmt::Display for LoweredKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let buffer = |b: &BufferArg| {
            let ext: Vec<String> = b.extents.iter().map(Expr::to_string).collect();
            format!("{}: {}[{}]", b.name, b.dtype, ext.join(", "))
        };
        let mut args: Vec<String> = self.inputs.iter().map(buffer).collect();
        args.extend(self.params.iter().map(|(n, t)| format!("{n}: {t}")));
        writeln!(
            f,
            "kernel {}({}) -> {} {{",
            self.name,
            args.join(", "),
            buffer(&self.output)
        )?;
        let mut body = String::new();
        write_stmt(&mut body, &self.body, 1);
        write!(f, "{body}}}")
    }
}
