//! The syntax tree: what the parser read, with a span on everything, before names are resolved
//! and types checked. `check` turns it into a `Pipeline`.

use crate::diagnostic::Span;
use crate::dtype::Dtype;
use crate::ir::{Boundary, ReduceOp, UpdateOp};
use crate::value::BinOp;

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// `kernel name(params) -> out: type[extents] { statements }`
#[derive(Clone, Debug, PartialEq)]
pub struct KernelAst {
    pub name: Ident,
    pub params: Vec<ParamAst>,
    pub output: OutputAst,
    pub stmts: Vec<StmtAst>,
}

/// `A: f32[M, K] with clamp_edge` (a buffer) or `alpha: f32` (a scalar).
#[derive(Clone, Debug, PartialEq)]
pub struct ParamAst {
    pub name: Ident,
    pub dtype: Dtype,
    pub dtype_span: Span,
    /// `None` for a scalar parameter.
    pub shape: Option<Vec<ExprAst>>,
    pub boundary: Option<(BoundaryAst, Span)>,
}

/// A boundary condition as written; the constant is checked against the input's type later.
#[derive(Clone, Debug, PartialEq)]
pub enum BoundaryAst {
    Known(Boundary),
    Constant(ExprAst),
}

/// `-> out: u16[H - 2, W - 2]`
#[derive(Clone, Debug, PartialEq)]
pub struct OutputAst {
    pub name: Ident,
    pub dtype: Dtype,
    pub extents: Vec<ExprAst>,
    pub span: Span,
}

/// `for (r in 0..N, ... where p) target(args) op value;` (the `for` part optional).
#[derive(Clone, Debug, PartialEq)]
pub struct StmtAst {
    pub rvars: Vec<RVarAst>,
    /// The domain's `where` predicate.
    pub predicate: Option<ExprAst>,
    pub target: Ident,
    pub args: Vec<ExprAst>,
    pub op: UpdateOp,
    pub op_span: Span,
    pub value: ExprAst,
    pub span: Span,
}

/// `k in lo..hi`
#[derive(Clone, Debug, PartialEq)]
pub struct RVarAst {
    pub name: Ident,
    pub lo: ExprAst,
    pub hi: ExprAst,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExprAst {
    pub kind: ExprAstKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprAstKind {
    Int(u128, Option<Dtype>),
    Float(String, Option<Dtype>),
    /// A negated literal (`-3`), kept whole so `-128i8` is in range.
    NegInt(u128, Option<Dtype>),
    NegFloat(String, Option<Dtype>),
    Bool(bool),
    Name(String),
    Call(Ident, Vec<ExprAst>),
    Neg(Box<ExprAst>),
    Not(Box<ExprAst>),
    Binary(BinOp, Box<ExprAst>, Box<ExprAst>),
    /// `op(rvars where predicate) body`.
    Reduce(ReduceOp, Vec<RVarAst>, Option<Box<ExprAst>>, Box<ExprAst>),
}

impl ExprAst {
    /// An unsuffixed literal, or arithmetic of them: its type comes from its context.
    pub fn is_flexible(&self) -> bool {
        match &self.kind {
            ExprAstKind::Int(_, None)
            | ExprAstKind::Float(_, None)
            | ExprAstKind::NegInt(_, None)
            | ExprAstKind::NegFloat(_, None) => true,
            ExprAstKind::Neg(e) => e.is_flexible(),
            ExprAstKind::Binary(op, a, b) => {
                !op.is_comparison() && !op.is_logical() && a.is_flexible() && b.is_flexible()
            }
            _ => false,
        }
    }
}
