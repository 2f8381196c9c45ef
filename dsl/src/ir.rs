//! The Pipeline: strata's high rung. A kernel as typed pure functions over index variables, each
//! with a pure definition and optional update definitions, in value semantics: a definition says
//! what a value is, never when or where it is stored. Names are resolved and every expression has
//! a known type. Schedules never appear here.

use crate::dtype::Dtype;
use crate::value::{BinOp, Value};

/// One kernel: its inputs, its output and the functions that compute it.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    /// The kernel's name.
    pub name: String,
    /// Buffer and scalar inputs, in the order the signature declares them.
    pub inputs: Vec<Input>,
    /// The result.
    pub output: Output,
    /// Every function, in the order of their first definition; the output is one of them.
    pub funcs: Vec<Func>,
}

/// A kernel argument.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    /// The argument's name.
    pub name: String,
    /// Its element type (a buffer's) or type (a scalar's).
    pub dtype: Dtype,
    /// A buffer or a scalar.
    pub kind: InputKind,
}

/// Whether an input is a buffer or a scalar.
#[derive(Clone, Debug, PartialEq)]
pub enum InputKind {
    /// A row-major buffer (last index contiguous); reads outside it follow the boundary condition.
    Buffer {
        /// The declared extents, outermost first.
        shape: Vec<Extent>,
        /// The `with ...` boundary condition, if any (without one, reads stay inside).
        boundary: Option<Boundary>,
    },
    /// A scalar parameter such as `alpha: f32`.
    Scalar,
}

/// An input buffer's extent: a size variable, bound when the kernel is called, or a constant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Extent {
    /// A size variable (`M`).
    Size(String),
    /// A constant extent (`3`).
    Const(i64),
}

/// What reading an input outside its extents gives (Halide's `BoundaryConditions`).
#[derive(Clone, Debug, PartialEq)]
pub enum Boundary {
    /// Each index is clamped into `0..extent` (`repeat_edge`).
    ClampEdge,
    /// Any index outside gives this value (`constant_exterior`).
    Constant(Value),
    /// Reflection that repeats the edge: `.. 1 0 | 0 1 .. n-1 | n-1 n-2 ..` (`mirror_image`).
    Mirror,
    /// Reflection about the edge element: `.. 2 1 | 0 1 .. n-1 | n-2 ..` (`mirror_interior`).
    MirrorInterior,
}

/// The kernel's result: the function it names, its type and extents (expressions of sizes).
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// The output function's name.
    pub name: String,
    /// Its element type.
    pub dtype: Dtype,
    /// Its extents, outermost first, as expressions of sizes.
    pub extents: Vec<Expr>,
}

/// A function `name(vars) = value`, then its updates in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    /// The function's name.
    pub name: String,
    /// Its element type.
    pub dtype: Dtype,
    /// The pure variables, outermost first (the last one is innermost by default).
    pub vars: Vec<String>,
    /// The pure definition's value.
    pub value: Expr,
    /// The update definitions, applied in order after the pure one.
    pub updates: Vec<Update>,
}

/// `for (rvars where predicate) name(args) op value;`: for every point of the reduction domain
/// (and of the pure variables that appear bare in `args`) where the predicate holds, rewrite one
/// element. Pure variables loop outside the reduction variables; reduction variables run in
/// declaration order, the last innermost.
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    /// The reduction domain, outermost first (empty for an update over pure variables only).
    pub rvars: Vec<RVar>,
    /// The domain's `where` predicate (Halide's `RDom::where`): points where it is false are
    /// skipped. It reads only variables, sizes, scalar parameters and constants.
    pub predicate: Option<Expr>,
    /// The target's index, one expression per dimension.
    pub args: Vec<Expr>,
    /// How the value combines with the target.
    pub op: UpdateOp,
    /// The value.
    pub value: Expr,
}

/// How an update combines with the element it targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UpdateOp {
    /// `f(args) = value` (`value` may read `f`).
    Assign,
    /// `f(args) += value`, meaning `f(args) = f(args) + value`.
    Add,
    /// `f(args) -= value`.
    Sub,
    /// `f(args) *= value`.
    Mul,
}

impl UpdateOp {
    /// The operator as written (`=`, `+=`, `-=`, `*=`).
    pub fn symbol(self) -> &'static str {
        match self {
            UpdateOp::Assign => "=",
            UpdateOp::Add => "+=",
            UpdateOp::Sub => "-=",
            UpdateOp::Mul => "*=",
        }
    }

    /// The binary operator an update applies between the old element and its value.
    pub fn combiner(self) -> Option<BinOp> {
        match self {
            UpdateOp::Assign => None,
            UpdateOp::Add => Some(BinOp::Add),
            UpdateOp::Sub => Some(BinOp::Sub),
            UpdateOp::Mul => Some(BinOp::Mul),
        }
    }
}

/// A reduction variable `name in lo..hi` (half open; empty when `hi <= lo`). The bounds are
/// affine in the variables around the domain (the definition's pure variables, enclosing
/// reduction variables) and in the reduction variables declared before this one, plus sizes and
/// constants: `k in i + 1..M` is a triangular domain.
#[derive(Clone, Debug, PartialEq)]
pub struct RVar {
    /// The variable's name.
    pub name: String,
    /// The first value.
    pub lo: Expr,
    /// One past the last value.
    pub hi: Expr,
}

/// A typed expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A constant of its value's type.
    Const(Value),
    /// A pure variable of the enclosing definition (`i32`).
    Var(String),
    /// A reduction variable of an enclosing reduction or update (`i32`).
    RVar(String),
    /// A size variable (`i32`).
    Size(String),
    /// A scalar parameter.
    Param(String, Dtype),
    /// A read of a function or an input buffer at integer indices.
    Call(Call),
    /// `-x`.
    Neg(Box<Expr>),
    /// `!x`.
    Not(Box<Expr>),
    /// `a op b`, operands of one type.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `select(cond, then, else)`.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `type(x)`: a conversion, as Rust's `as`.
    Cast(Dtype, Box<Expr>),
    /// A built-in function applied to its arguments.
    Intrinsic(Intrinsic, Vec<Expr>),
    /// An inline reduction `sum(k in 0..K) body`.
    Reduce(Reduce),
}

/// A read `name(args)` of a function or an input.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// What `name` is.
    pub target: CallTarget,
    /// The function or input read.
    pub name: String,
    /// The index, one expression per dimension, outermost first.
    pub args: Vec<Expr>,
    /// The value's type.
    pub dtype: Dtype,
}

/// What a call reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallTarget {
    /// A function of the kernel.
    Func,
    /// An input buffer (reads outside follow its boundary condition).
    Input,
}

/// An inline reduction `op(rvars where predicate) body`.
#[derive(Clone, Debug, PartialEq)]
pub struct Reduce {
    /// How values combine.
    pub op: ReduceOp,
    /// The domain, outermost first.
    pub rvars: Vec<RVar>,
    /// The domain's `where` predicate, as `Update::predicate`.
    pub predicate: Option<Box<Expr>>,
    /// The value reduced, at each point of the domain.
    pub body: Box<Expr>,
}

/// Inline reductions; each starts from its identity (0, 1, the type's lowest or highest value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `sum`, from 0.
    Sum,
    /// `prod`, from 1.
    Prod,
    /// `max`, from the type's lowest value.
    Max,
    /// `min`, from the type's highest value.
    Min,
}

impl ReduceOp {
    /// The reduction's name as written (`sum`, `prod`, `max`, `min`).
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }

    /// The reduction called `name`, if one is.
    pub fn from_name(name: &str) -> Option<ReduceOp> {
        [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min]
            .into_iter()
            .find(|op| op.name() == name)
    }
}

/// Built-in functions other than casts and `select`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    /// `min(a, b)`: `a < b ? a : b`.
    Min,
    /// `max(a, b)`.
    Max,
    /// `abs(x)`, of the same type.
    Abs,
    /// `clamp(x, lo, hi)`.
    Clamp,
    /// `floor(x)` (floats).
    Floor,
    /// `ceil(x)` (floats).
    Ceil,
    /// `round(x)`, half to even (floats).
    Round,
    /// `sqrt(x)` (floats).
    Sqrt,
    /// `exp(x)` (floats).
    Exp,
    /// `log(x)` (floats).
    Log,
    /// `pow(x, y)` (floats).
    Pow,
    /// `sin(x)` (floats).
    Sin,
    /// `cos(x)` (floats).
    Cos,
    /// `tanh(x)` (floats).
    Tanh,
    /// `fast_exp`, `fast_log`, `fast_pow`: f32 only, a few ulp, computed bit for bit alike by
    /// every executor (`crate::fast_math` holds the one definition).
    FastExp,
    /// `fast_log(x)`, see `FastExp`.
    FastLog,
    /// `fast_pow(x, y)`, see `FastExp`.
    FastPow,
}

impl Intrinsic {
    /// Every intrinsic.
    pub const ALL: [Intrinsic; 17] = [
        Intrinsic::Min,
        Intrinsic::Max,
        Intrinsic::Abs,
        Intrinsic::Clamp,
        Intrinsic::Floor,
        Intrinsic::Ceil,
        Intrinsic::Round,
        Intrinsic::Sqrt,
        Intrinsic::Exp,
        Intrinsic::Log,
        Intrinsic::Pow,
        Intrinsic::Sin,
        Intrinsic::Cos,
        Intrinsic::Tanh,
        Intrinsic::FastExp,
        Intrinsic::FastLog,
        Intrinsic::FastPow,
    ];

    /// The name as written in kernels.
    pub fn name(self) -> &'static str {
        match self {
            Intrinsic::Min => "min",
            Intrinsic::Max => "max",
            Intrinsic::Abs => "abs",
            Intrinsic::Clamp => "clamp",
            Intrinsic::Floor => "floor",
            Intrinsic::Ceil => "ceil",
            Intrinsic::Round => "round",
            Intrinsic::Sqrt => "sqrt",
            Intrinsic::Exp => "exp",
            Intrinsic::Log => "log",
            Intrinsic::Pow => "pow",
            Intrinsic::Sin => "sin",
            Intrinsic::Cos => "cos",
            Intrinsic::Tanh => "tanh",
            Intrinsic::FastExp => "fast_exp",
            Intrinsic::FastLog => "fast_log",
            Intrinsic::FastPow => "fast_pow",
        }
    }

    /// The intrinsic called `name`, if one is.
    pub fn from_name(name: &str) -> Option<Intrinsic> {
        Intrinsic::ALL.into_iter().find(|i| i.name() == name)
    }

    /// How many arguments it takes.
    pub fn arity(self) -> usize {
        match self {
            Intrinsic::Min | Intrinsic::Max | Intrinsic::Pow | Intrinsic::FastPow => 2,
            Intrinsic::Clamp => 3,
            _ => 1,
        }
    }

    /// Whether the function is only defined on floats.
    pub fn needs_float(self) -> bool {
        !matches!(
            self,
            Intrinsic::Min | Intrinsic::Max | Intrinsic::Abs | Intrinsic::Clamp
        )
    }

    /// Whether the function is only defined on `f32`: the fast approximations, whose one
    /// definition (`crate::fast_math`) is a sequence of `f32` operations.
    pub fn needs_f32(self) -> bool {
        matches!(
            self,
            Intrinsic::FastExp | Intrinsic::FastLog | Intrinsic::FastPow
        )
    }
}

/// Every name a kernel may not use for its own functions, variables or inputs.
pub fn is_reserved(name: &str) -> bool {
    Dtype::from_name(name).is_some()
        || Intrinsic::from_name(name).is_some()
        || ReduceOp::from_name(name).is_some()
        || matches!(
            name,
            "kernel" | "for" | "in" | "where" | "with" | "select" | "true" | "false"
        )
}

impl Expr {
    /// Rebuilds this expression with each direct child replaced by `f(child)`.
    pub fn map_children(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> Expr {
        match self {
            Expr::Const(_) | Expr::Var(_) | Expr::RVar(_) | Expr::Size(_) | Expr::Param(..) => {
                self.clone()
            }
            Expr::Call(call) => Expr::Call(Call {
                args: call.args.iter().map(|a| f(a)).collect(),
                ..call.clone()
            }),
            Expr::Neg(a) => Expr::Neg(Box::new(f(a))),
            Expr::Not(a) => Expr::Not(Box::new(f(a))),
            Expr::Cast(t, a) => Expr::Cast(*t, Box::new(f(a))),
            Expr::Binary(op, a, b) => {
                let a = f(a);
                Expr::binary(*op, a, f(b))
            }
            Expr::Select(c, t, e) => {
                let c = f(c);
                let t = f(t);
                Expr::Select(Box::new(c), Box::new(t), Box::new(f(e)))
            }
            Expr::Intrinsic(op, args) => Expr::Intrinsic(*op, args.iter().map(|a| f(a)).collect()),
            Expr::Reduce(r) => Expr::Reduce(Reduce {
                body: Box::new(f(&r.body)),
                ..r.clone()
            }),
        }
    }

    /// The expression's type.
    pub fn dtype(&self) -> Dtype {
        match self {
            Expr::Const(v) => v.dtype(),
            Expr::Var(_) | Expr::RVar(_) | Expr::Size(_) => Dtype::I32,
            Expr::Param(_, t) | Expr::Cast(t, _) => *t,
            Expr::Call(call) => call.dtype,
            Expr::Neg(e) => e.dtype(),
            Expr::Not(_) => Dtype::Bool,
            Expr::Binary(op, a, _) => {
                if op.is_comparison() || op.is_logical() {
                    Dtype::Bool
                } else {
                    a.dtype()
                }
            }
            Expr::Select(_, t, _) => t.dtype(),
            Expr::Intrinsic(_, args) => args[0].dtype(),
            Expr::Reduce(r) => r.body.dtype(),
        }
    }

    /// Whether the expression reads a pure or reduction variable (a domain bound that does is
    /// not an expression of sizes alone: the domain is not a box).
    pub fn reads_vars(&self) -> bool {
        let mut found = false;
        self.for_each(&mut |e| found |= matches!(e, Expr::Var(_) | Expr::RVar(_)));
        found
    }

    /// `a op b`.
    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    /// Calls `visit` on this expression and every expression inside it, parents first.
    pub fn for_each(&self, visit: &mut dyn FnMut(&Expr)) {
        visit(self);
        match self {
            Expr::Const(_) | Expr::Var(_) | Expr::RVar(_) | Expr::Size(_) | Expr::Param(..) => {}
            Expr::Call(call) => call.args.iter().for_each(|a| a.for_each(visit)),
            Expr::Neg(e) | Expr::Not(e) | Expr::Cast(_, e) => e.for_each(visit),
            Expr::Binary(_, a, b) => {
                a.for_each(visit);
                b.for_each(visit);
            }
            Expr::Select(c, t, f) => {
                c.for_each(visit);
                t.for_each(visit);
                f.for_each(visit);
            }
            Expr::Intrinsic(_, args) => args.iter().for_each(|a| a.for_each(visit)),
            Expr::Reduce(r) => {
                for rv in &r.rvars {
                    rv.lo.for_each(visit);
                    rv.hi.for_each(visit);
                }
                if let Some(p) = &r.predicate {
                    p.for_each(visit);
                }
                r.body.for_each(visit);
            }
        }
    }
}

impl Func {
    /// Every expression of every definition: the pure value, then each update's bounds,
    /// predicate, targets and value.
    pub fn for_each_expr(&self, visit: &mut dyn FnMut(&Expr)) {
        self.value.for_each(visit);
        for update in &self.updates {
            for rv in &update.rvars {
                rv.lo.for_each(visit);
                rv.hi.for_each(visit);
            }
            if let Some(p) = &update.predicate {
                p.for_each(visit);
            }
            update.args.iter().for_each(|a| a.for_each(visit));
            update.value.for_each(visit);
        }
    }

    /// Names of the functions this one reads (itself included when an update reads it).
    pub fn callees(&self) -> Vec<String> {
        let mut names = Vec::new();
        self.for_each_expr(&mut |e| {
            if let Expr::Call(call) = e {
                if call.target == CallTarget::Func && !names.contains(&call.name) {
                    names.push(call.name.clone());
                }
            }
        });
        names
    }
}

impl Pipeline {
    /// Whether some definition computes with float arithmetic: an arithmetic operator, a math
    /// function or a reduction on floats, or an update of a float function that combines
    /// (`+=`, `-=`, `*=`). Such values may differ in their last bits between schedules and
    /// rungs (reassociated sums, `a * b + c` fused into one multiply-add, vector `exp`), so an
    /// integer made from one may differ by a unit ([`crate::random::Tolerance`]). Reads,
    /// constants, casts and selects are exact.
    pub fn computes_with_floats(&self) -> bool {
        let mut found = false;
        let mut visit = |e: &Expr| {
            found |= e.dtype().is_float()
                && matches!(e, Expr::Binary(..) | Expr::Intrinsic(..) | Expr::Reduce(_));
        };
        for func in &self.funcs {
            func.for_each_expr(&mut visit);
        }
        let combines =
            |f: &Func| f.dtype.is_float() && f.updates.iter().any(|u| u.op != UpdateOp::Assign);
        found || self.funcs.iter().any(combines)
    }

    /// The function called `name`, if there is one.
    pub fn func(&self, name: &str) -> Option<&Func> {
        self.funcs.iter().find(|f| f.name == name)
    }

    /// The scalar parameter called `name`, or an error naming the kernel's parameters
    /// (`kernel `k` has no scalar parameter `x` (its parameters: a, b)`).
    pub fn scalar_param(&self, name: &str) -> Result<&Input, String> {
        let scalars = || (self.inputs.iter()).filter(|i| matches!(i.kind, InputKind::Scalar));
        if let Some(input) = scalars().find(|i| i.name == name) {
            return Ok(input);
        }
        let names: Vec<&str> = scalars().map(|i| i.name.as_str()).collect();
        let names = match names.is_empty() {
            true => "none".to_string(),
            false => names.join(", "),
        };
        Err(format!(
            "kernel `{}` has no scalar parameter `{name}` (its parameters: {names})",
            self.name
        ))
    }

    /// The input called `name`, if there is one.
    pub fn input(&self, name: &str) -> Option<&Input> {
        self.inputs.iter().find(|i| i.name == name)
    }

    /// The output function (always present in a checked pipeline).
    pub fn output_func(&self) -> Option<&Func> {
        self.func(&self.output.name)
    }

    /// The size variables, in the order the inputs declare them.
    pub fn size_vars(&self) -> Vec<String> {
        let mut sizes: Vec<String> = Vec::new();
        for input in &self.inputs {
            if let InputKind::Buffer { shape, .. } = &input.kind {
                for extent in shape {
                    if let Extent::Size(name) = extent {
                        if !sizes.contains(name) {
                            sizes.push(name.clone());
                        }
                    }
                }
            }
        }
        sizes
    }

    /// Functions ordered so every producer comes before its consumers (the checker rejects
    /// cycles, so this always exists); ties keep definition order.
    pub fn topo_order(&self) -> Vec<&Func> {
        let mut done: Vec<&str> = Vec::new();
        while done.len() < self.funcs.len() {
            let before = done.len();
            for f in &self.funcs {
                let ready = !done.contains(&f.name.as_str())
                    && f.callees()
                        .iter()
                        .all(|c| c == &f.name || done.contains(&c.as_str()));
                if ready {
                    done.push(&f.name);
                }
            }
            if done.len() == before {
                break; // unreachable for a checked pipeline
            }
        }
        done.iter().filter_map(|name| self.func(name)).collect()
    }
}
