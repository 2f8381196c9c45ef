//! The syntax tree: what the parser read, with a span on everything, before names are resolved
//! and types checked. `check` turns it into a `Pipeline`.

use crate::diagnostic::Span;
use crate::dtype::Dtype;
use crate::ir::{Boundary, ReduceOp, UpdateOp};
use crate::value::BinOp;

/// A name as written, with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    /// The name.
    pub name: String,
    /// Where it was written.
    pub span: Span,
}

/// `kernel name(params) -> out: type[extents] { statements }`
#[derive(Clone, Debug, PartialEq)]
pub struct KernelAst {
    /// The kernel's name.
    pub name: Ident,
    /// The parameters, in the order written.
    pub params: Vec<ParamAst>,
    /// The output declaration.
    pub output: OutputAst,
    /// The statements, in the order written.
    pub stmts: Vec<StmtAst>,
}

/// `A: f32[M, K] with clamp_edge` (a buffer) or `alpha: f32` (a scalar).
#[derive(Clone, Debug, PartialEq)]
pub struct ParamAst {
    /// The parameter's name.
    pub name: Ident,
    /// The element type.
    pub dtype: Dtype,
    /// Where the type was written.
    pub dtype_span: Span,
    /// `None` for a scalar parameter.
    pub shape: Option<Vec<ExprAst>>,
    /// The `with` boundary condition and where it was written; `None` when there is none.
    pub boundary: Option<(BoundaryAst, Span)>,
}

/// A boundary condition as written; the constant is checked against the input's type later.
#[derive(Clone, Debug, PartialEq)]
pub enum BoundaryAst {
    /// `clamp_edge`, `mirror` or `mirror_interior`.
    Known(Boundary),
    /// `constant(value)`: reads outside the input give `value`.
    Constant(ExprAst),
}

/// `-> out: u16[H - 2, W - 2]`
#[derive(Clone, Debug, PartialEq)]
pub struct OutputAst {
    /// The output's name.
    pub name: Ident,
    /// The element type.
    pub dtype: Dtype,
    /// The extents, one per dimension.
    pub extents: Vec<ExprAst>,
    /// Where the declaration was written.
    pub span: Span,
}

/// `for (r in 0..N, ... where p) target(args) op value;` (the `for` part optional).
#[derive(Clone, Debug, PartialEq)]
pub struct StmtAst {
    /// The reduction variables of the `for` part (empty without one).
    pub rvars: Vec<RVarAst>,
    /// The domain's `where` predicate.
    pub predicate: Option<ExprAst>,
    /// The function defined or updated.
    pub target: Ident,
    /// The arguments of the target (its variables, or indices for an update).
    pub args: Vec<ExprAst>,
    /// The operator: `=`, `+=`, ...
    pub op: UpdateOp,
    /// Where the operator was written.
    pub op_span: Span,
    /// The right-hand side.
    pub value: ExprAst,
    /// Where the statement was written.
    pub span: Span,
}

/// `k in lo..hi`
#[derive(Clone, Debug, PartialEq)]
pub struct RVarAst {
    /// The variable's name.
    pub name: Ident,
    /// The lower bound, inclusive.
    pub lo: ExprAst,
    /// The upper bound, exclusive.
    pub hi: ExprAst,
}

/// An expression as written, with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct ExprAst {
    /// What the expression is.
    pub kind: ExprAstKind,
    /// Where it was written.
    pub span: Span,
}

/// The kinds of expression.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprAstKind {
    /// An integer literal and its type suffix, if any.
    Int(u128, Option<Dtype>),
    /// A float literal as written and its type suffix, if any.
    Float(String, Option<Dtype>),
    /// A negated literal (`-3`), kept whole so `-128i8` is in range.
    NegInt(u128, Option<Dtype>),
    /// A negated float literal (`-1.5`), kept whole like `NegInt`.
    NegFloat(String, Option<Dtype>),
    /// `true` or `false`.
    Bool(bool),
    /// A name (a variable, a size, a scalar parameter), resolved by the checker.
    Name(String),
    /// A call: of a function or input (indices), or of an intrinsic.
    Call(Ident, Vec<ExprAst>),
    /// `-e`.
    Neg(Box<ExprAst>),
    /// `!e`.
    Not(Box<ExprAst>),
    /// `a op b`.
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
