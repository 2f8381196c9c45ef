//! The high rung's printer: a Pipeline as kernel-language text that parses back to the same
//! Pipeline. The form is canonical (one statement per line, four-space indent, minimal
//! parentheses, literals typed by suffix where context would not give the same type), so printing
//! is also how kernels are hashed.

use crate::ir::*;
use std::fmt::{self, Write};

impl fmt::Display for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} {{", self.signature())?;
        for func in &self.funcs {
            writeln!(
                f,
                "    {}({}) = {};",
                func.name,
                func.vars.join(", "),
                func.value
            )?;
            for update in &func.updates {
                writeln!(f, "    {}", print_update(&func.name, update))?;
            }
        }
        write!(f, "}}")
    }
}

impl Pipeline {
    /// `kernel name(inputs) -> out: type[extents]`.
    pub fn signature(&self) -> String {
        let inputs: Vec<String> = self.inputs.iter().map(print_input).collect();
        let extents: Vec<String> = self.output.extents.iter().map(Expr::to_string).collect();
        format!(
            "kernel {}({}) -> {}: {}[{}]",
            self.name,
            inputs.join(", "),
            self.output.name,
            self.output.dtype,
            extents.join(", ")
        )
    }
}

fn print_input(input: &Input) -> String {
    let InputKind::Buffer { shape, boundary } = &input.kind else {
        return format!("{}: {}", input.name, input.dtype);
    };
    let extents: Vec<String> = shape
        .iter()
        .map(|e| match e {
            Extent::Size(name) => name.clone(),
            Extent::Const(c) => c.to_string(),
        })
        .collect();
    let boundary = match boundary {
        None => String::new(),
        Some(Boundary::ClampEdge) => " with clamp_edge".into(),
        Some(Boundary::Mirror) => " with mirror".into(),
        Some(Boundary::MirrorInterior) => " with mirror_interior".into(),
        Some(Boundary::Constant(v)) => format!(" with constant({v})"),
    };
    format!(
        "{}: {}[{}]{}",
        input.name,
        input.dtype,
        extents.join(", "),
        boundary
    )
}

fn print_update(name: &str, update: &Update) -> String {
    let mut text = String::new();
    if !update.rvars.is_empty() {
        let _ = write!(text, "for ({}) ", print_rvars(&update.rvars));
    }
    let args: Vec<String> = update.args.iter().map(Expr::to_string).collect();
    let _ = write!(
        text,
        "{name}({}) {} {};",
        args.join(", "),
        update.op.symbol(),
        update.value
    );
    text
}

fn print_rvars(rvars: &[RVar]) -> String {
    let parts: Vec<String> = rvars
        .iter()
        .map(|r| format!("{} in {}..{}", r.name, r.lo, r.hi))
        .collect();
    parts.join(", ")
}

/// Precedence of unary operators; binary operators use `BinOp::precedence` (1 to 5).
const UNARY: u8 = 6;
const PRIMARY: u8 = 7;
/// Reductions extend rightwards, so they bind loosest and are parenthesized as operands.
const REDUCTION: u8 = 0;

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(f, self, REDUCTION)
    }
}

fn precedence(e: &Expr) -> u8 {
    match e {
        Expr::Binary(op, ..) => op.precedence(),
        Expr::Neg(_) | Expr::Not(_) => UNARY,
        Expr::Reduce(_) => REDUCTION,
        _ => PRIMARY,
    }
}

/// Writes `e`, in parentheses if it binds more loosely than its context needs (`min_prec`).
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

fn write_list(f: &mut fmt::Formatter<'_>, items: &[Expr]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_expr(f, item, REDUCTION)?;
    }
    Ok(())
}

fn write_bare(f: &mut fmt::Formatter<'_>, e: &Expr) -> fmt::Result {
    match e {
        Expr::Const(v) => write!(f, "{v}"),
        Expr::Var(name) | Expr::RVar(name) | Expr::Size(name) | Expr::Param(name, _) => {
            f.write_str(name)
        }
        Expr::Call(call) => {
            write!(f, "{}(", call.name)?;
            write_list(f, &call.args)?;
            f.write_char(')')
        }
        Expr::Neg(a) => {
            f.write_char('-')?;
            write_expr(f, a, UNARY)
        }
        Expr::Not(a) => {
            f.write_char('!')?;
            write_expr(f, a, UNARY)
        }
        Expr::Binary(op, a, b) => {
            // Left-associative: a right operand of equal precedence needs parentheses, and
            // comparisons do not chain, so their left operand does too.
            let left_prec = op.precedence() + u8::from(op.is_comparison());
            write_expr(f, a, left_prec)?;
            write!(f, " {} ", op.symbol())?;
            write_expr(f, b, op.precedence() + 1)
        }
        Expr::Select(c, t, e) => {
            f.write_str("select(")?;
            write_list(f, &[(**c).clone(), (**t).clone(), (**e).clone()])?;
            f.write_char(')')
        }
        Expr::Cast(to, a) => {
            write!(f, "{to}(")?;
            write_expr(f, a, REDUCTION)?;
            f.write_char(')')
        }
        Expr::Intrinsic(op, args) => {
            write!(f, "{}(", op.name())?;
            write_list(f, args)?;
            f.write_char(')')
        }
        Expr::Reduce(r) => {
            write!(f, "{}({}) ", r.op.name(), print_rvars(&r.rvars))?;
            write_expr(f, &r.body, REDUCTION)
        }
    }
}
