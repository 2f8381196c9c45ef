//! The high rung's printer: a Pipeline as kernel-language text that parses back to the same
//! Pipeline. The form is canonical (one statement per line, four-space indent, minimal
//! parentheses, literals typed by suffix where context would not give the same type), so printing
//! is also how kernels are hashed.

use crate::dtype::Dtype;
use crate::ir::*;
use crate::value::Value;
use std::fmt::{self, Write};

impl fmt::Display for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} {{", self.signature())?;
        for func in &self.funcs {
            // The checker reads the output's definition with its declared type as the context.
            let declared = (func.name == self.output.name).then_some(func.dtype);
            write!(f, "    {}({}) = ", func.name, func.vars.join(", "))?;
            write_expr(f, &func.value, REDUCTION, declared)?;
            writeln!(f, ";")?;
            for update in &func.updates {
                writeln!(f, "    {}", print_update(func, update))?;
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

fn print_update(func: &Func, update: &Update) -> String {
    let mut text = String::new();
    if !update.rvars.is_empty() {
        let domain = print_domain(&update.rvars, update.predicate.as_ref());
        let _ = write!(text, "for ({domain}) ");
    }
    let args: Vec<String> = update.args.iter().map(Expr::to_string).collect();
    let value = Typed(&update.value, Some(func.dtype));
    let _ = write!(
        text,
        "{}({}) {} {value};",
        func.name,
        args.join(", "),
        update.op.symbol(),
    );
    text
}

/// An expression and the type the checker gives unsuffixed literals there (see `write_expr`).
struct Typed<'a>(&'a Expr, Option<Dtype>);

impl fmt::Display for Typed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(f, self.0, REDUCTION, self.1)
    }
}

/// `r in 0..N, s in r..N where p`.
fn print_domain(rvars: &[RVar], predicate: Option<&Expr>) -> String {
    let parts: Vec<String> = rvars
        .iter()
        .map(|r| format!("{} in {}..{}", r.name, r.lo, r.hi))
        .collect();
    match predicate {
        Some(p) => format!("{} where {p}", parts.join(", ")),
        None => parts.join(", "),
    }
}

/// Precedence of unary operators; binary operators use `BinOp::precedence` (1 to 5).
const UNARY: u8 = 6;
const PRIMARY: u8 = 7;
/// Reductions extend rightwards, so they bind loosest and are parenthesized as operands.
const REDUCTION: u8 = 0;

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_expr(f, self, REDUCTION, None)
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
/// `hint` is the type the checker gives an unsuffixed literal at this place (the context type it
/// passes down in `check`), so a literal that would read back as another type keeps its suffix.
fn write_expr(
    f: &mut fmt::Formatter<'_>,
    e: &Expr,
    min_prec: u8,
    hint: Option<Dtype>,
) -> fmt::Result {
    let parens = precedence(e) < min_prec;
    if parens {
        f.write_char('(')?;
    }
    write_bare(f, e, hint)?;
    if parens {
        f.write_char(')')?;
    }
    Ok(())
}

/// Writes comma-separated items; `hints` gives each one's literal context.
fn write_list(
    f: &mut fmt::Formatter<'_>,
    items: &[&Expr],
    hints: impl Fn(&Expr) -> Option<Dtype>,
) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_expr(f, item, REDUCTION, hints(item))?;
    }
    Ok(())
}

/// Whether `e` prints as an unsuffixed literal or arithmetic of them, which the checker types
/// from context (`ExprAst::is_flexible` of the printed text).
fn is_flexible(e: &Expr) -> bool {
    match e {
        Expr::Const(v) => matches!(v, Value::I32(_) | Value::F32(_)),
        Expr::Neg(a) => is_flexible(a),
        Expr::Binary(op, a, b) => {
            !op.is_comparison() && !op.is_logical() && is_flexible(a) && is_flexible(b)
        }
        _ => false,
    }
}

/// The contexts `check`'s `unify` gives operands that share one type: `hint` to typed ones, and
/// to literals the typed operands' type, or `hint` when there are none.
fn unify_hints(operands: &[&Expr], hint: Option<Dtype>) -> impl Fn(&Expr) -> Option<Dtype> {
    let common = operands.iter().find(|e| !is_flexible(e)).map(|e| e.dtype());
    let literal_hint = common.or(hint);
    move |e| if is_flexible(e) { literal_hint } else { hint }
}

fn write_bare(f: &mut fmt::Formatter<'_>, e: &Expr, hint: Option<Dtype>) -> fmt::Result {
    match e {
        Expr::Const(v) => {
            // `i32` and `f32` print bare (see `Value`'s Display); bare, they take the context's
            // type, as `f64(...)` gives a literal inside it.
            let bare_type = match v {
                Value::I32(_) => hint.filter(|t| t.is_numeric()).unwrap_or(Dtype::I32),
                Value::F32(_) => hint.filter(|t| t.is_float()).unwrap_or(Dtype::F32),
                _ => v.dtype(),
            };
            if bare_type == v.dtype() {
                write!(f, "{v}")
            } else {
                write!(f, "{v}{}", v.dtype())
            }
        }
        Expr::Var(name) | Expr::RVar(name) | Expr::Size(name) | Expr::Param(name, _) => {
            f.write_str(name)
        }
        Expr::Call(call) => {
            write!(f, "{}(", call.name)?;
            let args: Vec<&Expr> = call.args.iter().collect();
            write_list(f, &args, |_| Some(Dtype::I32))?;
            f.write_char(')')
        }
        Expr::Neg(a) => {
            f.write_char('-')?;
            // `-` and a literal read back as one negative literal. A negated zero (from `--0`)
            // is written `--0` again: the negation of the literal `-0`, which is 0.
            if matches!(**a, Expr::Const(v) if v.dtype().is_int() && v.as_i64() == Some(0)) {
                f.write_char('-')?;
            }
            write_expr(f, a, UNARY, hint)
        }
        Expr::Not(a) => {
            f.write_char('!')?;
            write_expr(f, a, UNARY, Some(Dtype::Bool))
        }
        Expr::Binary(op, a, b) => {
            let (hint_a, hint_b) = if op.is_logical() {
                (Some(Dtype::Bool), Some(Dtype::Bool))
            } else {
                let hints = unify_hints(&[a, b], if op.is_comparison() { None } else { hint });
                (hints(a), hints(b))
            };
            // Left-associative: a right operand of equal precedence needs parentheses, and
            // comparisons do not chain, so their left operand does too.
            let left_prec = op.precedence() + u8::from(op.is_comparison());
            write_expr(f, a, left_prec, hint_a)?;
            write!(f, " {} ", op.symbol())?;
            write_expr(f, b, op.precedence() + 1, hint_b)
        }
        Expr::Select(c, t, e) => {
            f.write_str("select(")?;
            write_expr(f, c, REDUCTION, Some(Dtype::Bool))?;
            f.write_str(", ")?;
            write_list(f, &[t, e], unify_hints(&[t, e], hint))?;
            f.write_char(')')
        }
        Expr::Cast(to, a) => {
            write!(f, "{to}(")?;
            write_expr(f, a, REDUCTION, Some(*to))?;
            f.write_char(')')
        }
        Expr::Intrinsic(op, args) => {
            write!(f, "{}(", op.name())?;
            // The checker's hints: f32 for the f32-only functions, else the context's float.
            let hint = if op.needs_f32() {
                Some(Dtype::F32)
            } else if op.needs_float() {
                Some(hint.filter(|t| t.is_float()).unwrap_or(Dtype::F32))
            } else {
                hint
            };
            let args: Vec<&Expr> = args.iter().collect();
            write_list(f, &args, unify_hints(&args, hint))?;
            f.write_char(')')
        }
        Expr::Reduce(r) => {
            write!(
                f,
                "{}({}) ",
                r.op.name(),
                print_domain(&r.rvars, r.predicate.as_deref())
            )?;
            write_expr(f, &r.body, REDUCTION, hint)
        }
    }
}
