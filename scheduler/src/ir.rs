//! The loop IR: strata's mid rung. Statements are loop nests over named variables, realizations
//! (storage for a function over a box), stores and lets; expressions are typed, possibly vectors
//! (`lanes > 1`), with ramps and broadcasts. Lowering starts with multi-dimensional `Call` /
//! `Provide` / `Realize` and flattens them to `Load` / `Store` / `Allocate` over flat indices.

use strata_dsl::{BinOp, Dtype, Intrinsic, Value};

/// An element type and a vector width (1 for scalars).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    /// The element type.
    pub dtype: Dtype,
    /// The number of lanes (1 for a scalar).
    pub lanes: u16,
}

impl Type {
    /// A scalar `i32`: the type of every index and loop variable.
    pub const I32: Type = Type::scalar(Dtype::I32);
    /// A scalar `bool`: the type of conditions.
    pub const BOOL: Type = Type::scalar(Dtype::Bool);

    /// One lane of `dtype`.
    pub const fn scalar(dtype: Dtype) -> Type {
        Type { dtype, lanes: 1 }
    }

    /// The same element type with `lanes` lanes.
    pub fn with_lanes(self, lanes: u16) -> Type {
        Type { lanes, ..self }
    }

    /// More than one lane.
    pub fn is_vector(self) -> bool {
        self.lanes > 1
    }
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-x`.
    Neg,
    /// `!x` (booleans).
    Not,
}

/// A typed loop-IR expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A scalar constant.
    Const(Value),
    /// A loop variable, let-bound variable or size variable.
    Var(String, Type),
    /// A scalar parameter of the kernel.
    Param(String, Dtype),
    /// A read of a function or input at a multi-dimensional index (before flattening).
    Call {
        /// The function or input read.
        func: String,
        /// The index, one expression per dimension, outermost first.
        args: Vec<Expr>,
        /// The value's type.
        ty: Type,
    },
    /// A read of a flat buffer (after flattening); a vector index reads one element per lane.
    Load {
        /// The buffer read.
        buffer: String,
        /// The flat element index (a vector of indices for a vector load).
        index: Box<Expr>,
        /// The value's type.
        ty: Type,
    },
    /// `op x`.
    Unary(UnOp, Box<Expr>),
    /// `a op b`, operands of one type (the kernel language's semantics: wrapping, Euclidean
    /// division).
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `select(cond, then, else)`, lane by lane for vectors.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A conversion to the type, as Rust's `as`.
    Cast(Type, Box<Expr>),
    /// A math function or `min`/`max`/`abs`/... applied to the arguments.
    Intrinsic(Intrinsic, Vec<Expr>),
    /// `base, base + stride, ..., base + (lanes - 1) * stride`.
    Ramp {
        /// The first lane's value (scalar).
        base: Box<Expr>,
        /// The difference between neighbouring lanes (scalar).
        stride: Box<Expr>,
        /// The number of lanes.
        lanes: u16,
    },
    /// A scalar repeated in every lane.
    Broadcast {
        /// The scalar.
        value: Box<Expr>,
        /// The number of lanes.
        lanes: u16,
    },
    /// `let name = value in body`.
    Let {
        /// The variable bound.
        name: String,
        /// Its value.
        value: Box<Expr>,
        /// The expression it is bound in.
        body: Box<Expr>,
    },
    /// The lanes of a vector combined into one scalar by `op`, first lane first
    /// (vectorized reductions).
    VectorReduce {
        /// The combination.
        op: ReduceOp,
        /// The vector whose lanes are combined.
        value: Box<Expr>,
    },
}

/// An associative combination a vectorized reduction folds its lanes with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `a + b`.
    Add,
    /// `a * b`.
    Mul,
    /// `min(a, b)`.
    Min,
    /// `max(a, b)`.
    Max,
}

impl ReduceOp {
    /// `a op b` as an expression of the loop IR.
    pub fn apply(self, a: Expr, b: Expr) -> Expr {
        use strata_dsl::Intrinsic;
        match self {
            ReduceOp::Add => Expr::binary(BinOp::Add, a, b),
            ReduceOp::Mul => Expr::binary(BinOp::Mul, a, b),
            ReduceOp::Min => Expr::Intrinsic(Intrinsic::Min, vec![a, b]),
            ReduceOp::Max => Expr::Intrinsic(Intrinsic::Max, vec![a, b]),
        }
    }

    /// `a op b` when `e` is one: the op and its operands.
    pub fn matching(e: &Expr) -> Option<(ReduceOp, &Expr, &Expr)> {
        use strata_dsl::Intrinsic;
        match e {
            Expr::Binary(BinOp::Add, a, b) => Some((ReduceOp::Add, a, b)),
            Expr::Binary(BinOp::Mul, a, b) => Some((ReduceOp::Mul, a, b)),
            Expr::Intrinsic(Intrinsic::Min, args) if args.len() == 2 => {
                Some((ReduceOp::Min, &args[0], &args[1]))
            }
            Expr::Intrinsic(Intrinsic::Max, args) if args.len() == 2 => {
                Some((ReduceOp::Max, &args[0], &args[1]))
            }
            _ => None,
        }
    }

    /// The value `x` with `x op y == y` for every `y` of type `dtype`.
    pub fn identity(self, dtype: strata_dsl::Dtype) -> Value {
        match self {
            ReduceOp::Add => Value::I64(0).cast(dtype),
            ReduceOp::Mul => Value::I64(1).cast(dtype),
            ReduceOp::Min => Value::highest(dtype),
            ReduceOp::Max => Value::lowest(dtype),
        }
    }

    /// The operation's name as the printed IR writes it (`add`, `mul`, `min`, `max`).
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Add => "add",
            ReduceOp::Mul => "mul",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        }
    }
}

/// How a loop runs (the schedule's loop kinds, and `Lanes`, which only lowering makes).
pub use crate::schedule::ForKind;

/// The box of a function a realization covers, per dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    /// The first index.
    pub min: Expr,
    /// How many indices (`min .. min + extent`).
    pub extent: Expr,
}

/// A loop-IR statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `for var in min .. min + extent { body }`, run as `kind` says.
    For {
        /// The loop variable (`i32`).
        var: String,
        /// The first value.
        min: Expr,
        /// How many iterations.
        extent: Expr,
        /// How the iterations run.
        kind: ForKind,
        /// The loop body.
        body: Box<Stmt>,
    },
    /// `let name = value` over `body`.
    Let {
        /// The variable bound.
        name: String,
        /// Its value, computed once.
        value: Expr,
        /// The statement it is bound in.
        body: Box<Stmt>,
    },
    /// The statements in order.
    Block(Vec<Stmt>),
    /// `if cond { then_case } else { else_case }`.
    If {
        /// A scalar `bool`.
        cond: Expr,
        /// Runs when `cond` holds.
        then_case: Box<Stmt>,
        /// Runs otherwise, if present.
        else_case: Option<Box<Stmt>>,
    },
    /// Storage for `func` over `region`, live in `body` (before flattening).
    Realize {
        /// The function stored.
        func: String,
        /// Its element type.
        dtype: Dtype,
        /// The box stored, per dimension.
        region: Vec<Range>,
        /// Where the storage is live.
        body: Box<Stmt>,
    },
    /// Marks the statements that compute `func` (for reading and for passes that need to know).
    Produce {
        /// The function computed.
        func: String,
        /// The statements computing it.
        body: Box<Stmt>,
    },
    /// A write of a function at a multi-dimensional index (before flattening).
    Provide {
        /// The function written.
        func: String,
        /// The index, one expression per dimension, outermost first.
        args: Vec<Expr>,
        /// The value written.
        value: Expr,
    },
    /// A flat buffer of `size` elements, live in `body` (after flattening).
    Allocate {
        /// The buffer's name.
        buffer: String,
        /// Its element type.
        dtype: Dtype,
        /// Its number of elements.
        size: Expr,
        /// Where the buffer is live.
        body: Box<Stmt>,
    },
    /// A write of a flat buffer; a vector index writes one element per lane.
    Store {
        /// The buffer written.
        buffer: String,
        /// The flat element index (a vector of indices for a vector store).
        index: Expr,
        /// The value written.
        value: Expr,
    },
    /// Nothing.
    NoOp,
}

impl Expr {
    /// The `i32` constant `v`.
    pub fn int(v: i32) -> Expr {
        Expr::Const(Value::I32(v))
    }

    /// The `i32` variable `name` (an index, a loop variable, a size).
    pub fn var(name: impl Into<String>) -> Expr {
        Expr::Var(name.into(), Type::I32)
    }

    /// `a op b`.
    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    /// `a + b`.
    pub fn add(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Add, a, b)
    }

    /// `a - b`.
    pub fn sub(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Sub, a, b)
    }

    /// `a * b`.
    pub fn mul(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Mul, a, b)
    }

    /// `min(a, b)`.
    pub fn min(a: Expr, b: Expr) -> Expr {
        Expr::Intrinsic(Intrinsic::Min, vec![a, b])
    }

    /// `max(a, b)`.
    pub fn max(a: Expr, b: Expr) -> Expr {
        Expr::Intrinsic(Intrinsic::Max, vec![a, b])
    }

    /// `a < b`.
    pub fn lt(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Lt, a, b)
    }

    /// `a <= b`.
    pub fn le(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Le, a, b)
    }

    /// The constant integer value, if this is an integer constant.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Expr::Const(v) => v.as_i64().filter(|_| v.dtype().is_int()),
            _ => None,
        }
    }

    /// The expression's type.
    pub fn ty(&self) -> Type {
        match self {
            Expr::Const(v) => Type::scalar(v.dtype()),
            Expr::Var(_, t)
            | Expr::Call { ty: t, .. }
            | Expr::Load { ty: t, .. }
            | Expr::Cast(t, _) => *t,
            Expr::Param(_, d) => Type::scalar(*d),
            Expr::Unary(UnOp::Neg, a) => a.ty(),
            Expr::Unary(UnOp::Not, a) => Type::BOOL.with_lanes(a.ty().lanes),
            Expr::Binary(op, a, _) => {
                let t = a.ty();
                if op.is_comparison() || op.is_logical() {
                    Type::BOOL.with_lanes(t.lanes)
                } else {
                    t
                }
            }
            Expr::Select(_, t, _) => t.ty(),
            Expr::Intrinsic(_, args) => args[0].ty(),
            Expr::Ramp { base, lanes, .. } => base.ty().with_lanes(*lanes),
            Expr::Broadcast { value, lanes } => value.ty().with_lanes(*lanes),
            Expr::Let { body, .. } => body.ty(),
            Expr::VectorReduce { value, .. } => value.ty().with_lanes(1),
        }
    }

    /// The direct sub-expressions, in evaluation order.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Const(_) | Expr::Var(..) | Expr::Param(..) => vec![],
            Expr::Call { args, .. } | Expr::Intrinsic(_, args) => args.iter().collect(),
            Expr::Load { index, .. } => vec![index],
            Expr::Unary(_, a) | Expr::Cast(_, a) => vec![a],
            Expr::Binary(_, a, b) => vec![a, b],
            Expr::Select(c, t, f) => vec![c, t, f],
            Expr::Ramp { base, stride, .. } => vec![base, stride],
            Expr::Broadcast { value, .. } | Expr::VectorReduce { value, .. } => vec![value],
            Expr::Let { value, body, .. } => vec![value, body],
        }
    }

    /// Calls `f` on each direct sub-expression, in `children`'s order, without collecting
    /// them (bounds inference walks every node of large bound expressions).
    pub fn for_each_child(&self, f: &mut dyn FnMut(&Expr)) {
        match self {
            Expr::Const(_) | Expr::Var(..) | Expr::Param(..) => {}
            Expr::Call { args, .. } | Expr::Intrinsic(_, args) => args.iter().for_each(f),
            Expr::Load { index: a, .. }
            | Expr::Unary(_, a)
            | Expr::Cast(_, a)
            | Expr::Broadcast { value: a, .. }
            | Expr::VectorReduce { value: a, .. } => f(a),
            Expr::Binary(_, a, b)
            | Expr::Ramp {
                base: a, stride: b, ..
            }
            | Expr::Let {
                value: a, body: b, ..
            } => {
                f(a);
                f(b)
            }
            Expr::Select(c, t, e) => {
                f(c);
                f(t);
                f(e)
            }
        }
    }

    /// This expression with the free occurrences of `name` replaced by `value` (a `let` that
    /// binds `name` shadows it in its body). Not capture-avoiding: for a `value` whose free
    /// variables no `let` inside binds (constants, loop variables, sizes); the simplifier's
    /// `subst_expr` is the capture-avoiding one.
    pub fn substitute(&self, name: &str, value: &Expr) -> Expr {
        match self {
            Expr::Var(n, _) if n == name => value.clone(),
            Expr::Let {
                name: bound,
                value: v,
                body,
            } => Expr::Let {
                name: bound.clone(),
                value: Box::new(v.substitute(name, value)),
                body: Box::new(if bound == name {
                    (**body).clone()
                } else {
                    body.substitute(name, value)
                }),
            },
            other => other.map_children(&mut |c| c.substitute(name, value)),
        }
    }

    /// Rebuilds this node with each direct sub-expression replaced by `f(child)`.
    pub fn map_children(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> Expr {
        let b = |e: &Expr, f: &mut dyn FnMut(&Expr) -> Expr| Box::new(f(e));
        match self {
            Expr::Const(_) | Expr::Var(..) | Expr::Param(..) => self.clone(),
            Expr::Call { func, args, ty } => Expr::Call {
                func: func.clone(),
                args: args.iter().map(|a| f(a)).collect(),
                ty: *ty,
            },
            Expr::Intrinsic(op, args) => Expr::Intrinsic(*op, args.iter().map(|a| f(a)).collect()),
            Expr::Load { buffer, index, ty } => Expr::Load {
                buffer: buffer.clone(),
                index: b(index, f),
                ty: *ty,
            },
            Expr::Unary(op, a) => Expr::Unary(*op, b(a, f)),
            Expr::Cast(t, a) => Expr::Cast(*t, b(a, f)),
            Expr::Binary(op, x, y) => {
                let x = b(x, f);
                Expr::Binary(*op, x, b(y, f))
            }
            Expr::Select(c, t, e) => {
                let c = b(c, f);
                let t = b(t, f);
                Expr::Select(c, t, b(e, f))
            }
            Expr::Ramp {
                base,
                stride,
                lanes,
            } => {
                let base = b(base, f);
                Expr::Ramp {
                    base,
                    stride: b(stride, f),
                    lanes: *lanes,
                }
            }
            Expr::Broadcast { value, lanes } => Expr::Broadcast {
                value: b(value, f),
                lanes: *lanes,
            },
            Expr::VectorReduce { op, value } => Expr::VectorReduce {
                op: *op,
                value: b(value, f),
            },
            Expr::Let { name, value, body } => {
                let value = b(value, f);
                Expr::Let {
                    name: name.clone(),
                    value,
                    body: b(body, f),
                }
            }
        }
    }

    /// Calls `visit` on this expression and every expression inside it, parents first.
    pub fn for_each(&self, visit: &mut dyn FnMut(&Expr)) {
        visit(self);
        self.for_each_child(&mut |child| child.for_each(visit));
    }

    /// Whether evaluating this expression reads a buffer (a load, or a call before flattening):
    /// the only expressions that can fail, and whose value a store can change.
    pub fn reads_memory(&self) -> bool {
        let mut found = false;
        self.for_each(&mut |e| found |= matches!(e, Expr::Load { .. } | Expr::Call { .. }));
        found
    }

    /// Whether the variable `name` occurs free in this expression.
    pub fn uses_var(&self, name: &str) -> bool {
        match self {
            Expr::Var(n, _) => n == name,
            Expr::Let {
                name: bound,
                value,
                body,
            } => value.uses_var(name) || (bound != name && body.uses_var(name)),
            _ => {
                let mut found = false;
                self.for_each_child(&mut |c| found = found || c.uses_var(name));
                found
            }
        }
    }
}

impl Stmt {
    /// The statements in order as one statement: blocks among them spliced in, no-ops dropped
    /// (one statement is itself, none is `NoOp`).
    pub fn block(stmts: Vec<Stmt>) -> Stmt {
        let mut flat = Vec::new();
        for s in stmts {
            match s {
                Stmt::NoOp => {}
                Stmt::Block(inner) => flat.extend(inner),
                other => flat.push(other),
            }
        }
        match flat.len() {
            0 => Stmt::NoOp,
            1 => flat.pop().unwrap_or(Stmt::NoOp),
            _ => Stmt::Block(flat),
        }
    }

    /// The expressions held directly by this statement (not those of nested statements).
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            Stmt::For { min, extent, .. } => vec![min, extent],
            Stmt::Let { value, .. } => vec![value],
            Stmt::If { cond, .. } => vec![cond],
            Stmt::Realize { region, .. } => {
                region.iter().flat_map(|r| [&r.min, &r.extent]).collect()
            }
            Stmt::Provide { args, value, .. } => {
                args.iter().chain(std::iter::once(value)).collect()
            }
            Stmt::Allocate { size, .. } => vec![size],
            Stmt::Store { index, value, .. } => vec![index, value],
            Stmt::Block(_) | Stmt::Produce { .. } | Stmt::NoOp => vec![],
        }
    }

    /// The directly nested statements.
    pub fn children(&self) -> Vec<&Stmt> {
        match self {
            Stmt::For { body, .. }
            | Stmt::Let { body, .. }
            | Stmt::Realize { body, .. }
            | Stmt::Produce { body, .. }
            | Stmt::Allocate { body, .. } => vec![body],
            Stmt::Block(stmts) => stmts.iter().collect(),
            Stmt::If {
                then_case,
                else_case,
                ..
            } => {
                let mut v: Vec<&Stmt> = vec![then_case];
                v.extend(else_case.as_deref());
                v
            }
            Stmt::Provide { .. } | Stmt::Store { .. } | Stmt::NoOp => vec![],
        }
    }

    /// Rebuilds this statement with every held expression replaced by `fe(expr)` and every
    /// nested statement by `fs(stmt)`.
    pub fn map(
        &self,
        fe: &mut dyn FnMut(&Expr) -> Expr,
        fs: &mut dyn FnMut(&Stmt) -> Stmt,
    ) -> Stmt {
        match self {
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => Stmt::For {
                var: var.clone(),
                min: fe(min),
                extent: fe(extent),
                kind: *kind,
                body: Box::new(fs(body)),
            },
            Stmt::Let { name, value, body } => Stmt::Let {
                name: name.clone(),
                value: fe(value),
                body: Box::new(fs(body)),
            },
            Stmt::Block(stmts) => Stmt::block(stmts.iter().map(|s| fs(s)).collect()),
            Stmt::If {
                cond,
                then_case,
                else_case,
            } => Stmt::If {
                cond: fe(cond),
                then_case: Box::new(fs(then_case)),
                else_case: else_case.as_ref().map(|e| Box::new(fs(e))),
            },
            Stmt::Realize {
                func,
                dtype,
                region,
                body,
            } => Stmt::Realize {
                func: func.clone(),
                dtype: *dtype,
                region: region
                    .iter()
                    .map(|r| Range {
                        min: fe(&r.min),
                        extent: fe(&r.extent),
                    })
                    .collect(),
                body: Box::new(fs(body)),
            },
            Stmt::Produce { func, body } => Stmt::Produce {
                func: func.clone(),
                body: Box::new(fs(body)),
            },
            Stmt::Provide { func, args, value } => Stmt::Provide {
                func: func.clone(),
                args: args.iter().map(|a| fe(a)).collect(),
                value: fe(value),
            },
            Stmt::Allocate {
                buffer,
                dtype,
                size,
                body,
            } => Stmt::Allocate {
                buffer: buffer.clone(),
                dtype: *dtype,
                size: fe(size),
                body: Box::new(fs(body)),
            },
            Stmt::Store {
                buffer,
                index,
                value,
            } => Stmt::Store {
                buffer: buffer.clone(),
                index: fe(index),
                value: fe(value),
            },
            Stmt::NoOp => Stmt::NoOp,
        }
    }

    /// Calls `visit` on this statement and every statement inside it, parents first.
    pub fn for_each(&self, visit: &mut dyn FnMut(&Stmt)) {
        visit(self);
        for child in self.children() {
            child.for_each(visit);
        }
    }

    /// Calls `visit` on every expression anywhere in this statement (each whole, parents first).
    pub fn for_each_expr(&self, visit: &mut dyn FnMut(&Expr)) {
        self.for_each(&mut |s| {
            for e in s.exprs() {
                e.for_each(visit);
            }
        });
    }
}

/// A buffer argument of a lowered kernel: row-major, extents as expressions of the sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferArg {
    /// The argument's name in the kernel.
    pub name: String,
    /// Its element type.
    pub dtype: Dtype,
    /// Its extents, outermost first, as expressions of the sizes.
    pub extents: Vec<Expr>,
}

/// A kernel lowered to loops: its arguments and the statement that computes its output.
#[derive(Clone, Debug, PartialEq)]
pub struct LoweredKernel {
    /// The kernel's name.
    pub name: String,
    /// Buffer inputs, in signature order.
    pub inputs: Vec<BufferArg>,
    /// Scalar parameters, in signature order.
    pub params: Vec<(String, Dtype)>,
    /// The output buffer.
    pub output: BufferArg,
    /// The size variables (bound from the input buffers' shapes at call time).
    pub sizes: Vec<String>,
    /// For each buffer input, the boxes the body reads (as expressions of the sizes; an input
    /// may have several, one per group of sites under the same loops); a caller's buffer must
    /// cover each. Inputs with a boundary condition are only read inside their extents.
    pub input_regions: Vec<(String, Vec<Range>)>,
    /// The boxes of the output the body reads and writes (as expressions of the sizes), which
    /// must lie inside the output's extents: an update reading its own function outside the
    /// region it defines (`out(r - 1, x)` at `r = 0`) is refused before running. Empty when
    /// not computed (hand-built kernels), then nothing is checked.
    pub output_region: Vec<Vec<Range>>,
    /// The bounds of every reduction domain, as expressions of the sizes: the call refuses
    /// sizes where one would wrap `i32` (as the reference does).
    pub domain_bounds: Vec<Expr>,
    /// The `specialize` conditions that read only sizes, each with the function it
    /// specializes: the call refuses sizes where one would wrap `i32` (it would choose the
    /// wrong version).
    pub conditions: Vec<(String, Expr)>,
    /// The loops the schedule vectorized that lowering had to leave serial, and why (a
    /// warning for whoever wrote the schedule; empty for hand-built kernels).
    pub serial_vectors: Vec<SerialVector>,
    /// The loop nest.
    pub body: Stmt,
}

/// A loop the schedule vectorized that runs serially, and why: lowering keeps the answer right
/// but not the speed asked for, so `run` and `lower` warn (`crate::warnings`; found by the `vectorize` pass).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SerialVector {
    /// The loop's IR name (`out.s0.xo`).
    pub loop_name: String,
    /// Why its body could not be widened.
    pub reason: SerialReason,
}

/// Why a vectorized loop stays serial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SerialReason {
    /// A loop inside it is vectorized already (vectors of vectors do not exist).
    InnerLoopVectorized,
    /// A condition inside depends on the loop's variable in a way versioning cannot test once
    /// for all lanes (a `where` predicate, a guard reading an inner loop).
    LaneDependentCondition,
    /// The body cannot be widened: storage allocated inside, a loop whose bounds depend on the
    /// lane, or a value varying by lane stored to one address.
    BodyNotWidenable,
}

impl std::fmt::Display for SerialReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SerialReason::InnerLoopVectorized => "a loop inside it is vectorized already",
            SerialReason::LaneDependentCondition => {
                "a condition inside depends on its variable in a way no single test covers \
                 every lane of"
            }
            SerialReason::BodyNotWidenable => {
                "its body cannot be widened (storage allocated inside it, a loop bound or \
                 branch that differs by lane, or a lane-varying value stored to one address)"
            }
        })
    }
}
