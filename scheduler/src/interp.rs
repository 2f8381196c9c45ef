//! The loop-IR interpreter: the second oracle. It runs a [`LoweredKernel`] (or any partially
//! lowered statement) on buffers, one scalar lane at a time, and must agree exactly with the
//! reference evaluator (`strata_dsl::evaluate`) on every program both accept.
//!
//! Semantics:
//! - Scalars follow `strata_dsl::Value` (wrapping integers, Euclidean `/` and `%`, division by
//!   zero gives 0, casts as Rust's `as`); intrinsics map to the same Rust functions as the
//!   reference evaluator (`round` is `round_ties_even`, `log` is `ln`, `clamp(x, lo, hi)` is
//!   `min(max(x, lo), hi)`).
//! - A value is a scalar or a vector ([`VValue`]). Vector operations are lane-wise and need the
//!   same number of lanes on both sides; a scalar meeting a vector is an error (the IR broadcasts
//!   explicitly). Two exceptions: a scalar `select` condition picks a whole branch, and the
//!   arguments of a multi-dimensional `Call`/`Provide` may mix scalars and vectors (a scalar
//!   argument is the same in every lane).
//! - A scalar `select` evaluates only the branch it picks, and scalar `&&` / `||` short-circuit,
//!   as in the reference evaluator; vector ones evaluate every operand.
//! - Every loop runs serially, whatever its `ForKind`; `min` and `extent` are evaluated once on
//!   entry and an extent of 0 or less runs nothing. Loop variables are `i32`.
//! - Buffers are found by name, innermost first: `Allocate` (flat, zero-filled) and `Realize`
//!   (a box given by its region, zero-filled, indexed relative to the region's mins) shadow the
//!   inputs and the output, and live only inside their body. `Load`/`Store` index any buffer
//!   flat; `Call`/`Provide` index it multi-dimensionally, row-major, the last index contiguous.
//!   Inputs are read-only.
//! - Loads and stores check the element type against the buffer's; nothing is converted
//!   silently. Every out-of-bounds access, unknown name, type confusion or non-integer index is
//!   an [`InterpError`], never a panic.

use crate::ir::{Expr, LoweredKernel, ReduceOp, Stmt, Type, UnOp};
use std::collections::{BTreeMap, HashMap};
use strata_dsl::buffer::filled;
use strata_dsl::{Args, BinOp, Buffer, CallError, Dtype, Intrinsic, Value};

/// The most elements one buffer of the interpreter may hold.
pub const MAX_ELEMENTS: i64 = 1 << 26;

/// A value of the loop IR: one scalar, or a vector of lanes.
#[derive(Clone, Debug, PartialEq)]
pub enum VValue {
    /// One scalar.
    Scalar(Value),
    /// A vector of lanes (`VValue::vector` makes a single lane a scalar).
    Vector(Vec<Value>),
}

impl VValue {
    /// A scalar.
    pub fn scalar(v: Value) -> VValue {
        VValue::Scalar(v)
    }

    /// A vector of `lanes` (a single lane is a scalar, as `Type` has it).
    pub fn vector(lanes: Vec<Value>) -> VValue {
        match <[Value; 1]>::try_from(lanes) {
            Ok([v]) => VValue::Scalar(v),
            Err(lanes) => VValue::Vector(lanes),
        }
    }

    /// The lanes (one for a scalar).
    pub fn lanes(&self) -> &[Value] {
        match self {
            VValue::Scalar(v) => std::slice::from_ref(v),
            VValue::Vector(lanes) => lanes,
        }
    }

    /// The number of lanes (1 for a scalar).
    pub fn lane_count(&self) -> usize {
        self.lanes().len()
    }

    /// Whether this is a vector rather than a scalar.
    pub fn is_vector(&self) -> bool {
        matches!(self, VValue::Vector(_))
    }

    /// The scalar, or `None` for a vector.
    pub fn as_scalar(&self) -> Option<Value> {
        match self {
            VValue::Scalar(v) => Some(*v),
            VValue::Vector(_) => None,
        }
    }

    /// The element type (of the first lane; `None` for an empty vector).
    pub fn dtype(&self) -> Option<Dtype> {
        self.lanes().first().map(|v| v.dtype())
    }

    fn map(&self, f: impl FnMut(Value) -> Result<Value, InterpError>) -> IResult<VValue> {
        let lanes: IResult<Vec<Value>> = self.lanes().iter().copied().map(f).collect();
        Ok(self.rebuild(lanes?))
    }

    /// A value of the same shape (scalar or vector) as `self` holding `lanes`.
    fn rebuild(&self, lanes: Vec<Value>) -> VValue {
        match self {
            VValue::Scalar(_) => VValue::Scalar(lanes[0]),
            VValue::Vector(_) => VValue::Vector(lanes),
        }
    }
}

impl From<Value> for VValue {
    fn from(v: Value) -> VValue {
        VValue::Scalar(v)
    }
}

/// Why the interpreter stopped.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum InterpError {
    /// The arguments do not fit the kernel's signature (the check every executor shares).
    #[error(transparent)]
    Call(#[from] CallError),
    #[error("unbound variable `{0}`")]
    /// A variable read that nothing binds (no loop, `let` or scalar parameter).
    UnboundVar(String),
    #[error("unknown buffer `{0}`")]
    /// A buffer the program names that is neither an argument nor allocated in scope.
    UnknownBuffer(String),
    #[error("missing scalar parameter `{0}`")]
    /// A scalar parameter the arguments do not give.
    MissingParam(String),
    /// A flat access has one index, min 0 and the buffer's length as its extent.
    #[error(
        "`{buffer}` accessed at {index:?}, outside its box (mins {mins:?}, extents {extents:?})"
    )]
    OutOfBounds {
        /// The buffer accessed.
        buffer: String,
        /// The index, one per dimension.
        index: Vec<i64>,
        /// The buffer's mins, one per dimension.
        mins: Vec<i64>,
        /// The buffer's extents, one per dimension.
        extents: Vec<i64>,
    },
    #[error("`{buffer}` accessed with {found} indices but it has {rank} dimensions")]
    /// A buffer accessed with a number of indices other than its rank.
    WrongRank {
        /// The buffer accessed.
        buffer: String,
        /// The number of indices given.
        found: usize,
        /// The buffer's number of dimensions.
        rank: usize,
    },
    #[error("{what} is {value:?}, not an integer")]
    /// A value that must be an integer (an index, a loop bound) and is not.
    NotInteger {
        /// What the value is, in words.
        what: String,
        /// The value found.
        value: Value,
    },
    #[error("{what} has {found} lanes where {expected} are needed")]
    /// A value with the wrong number of lanes.
    LaneMismatch {
        /// What the value is, in words.
        what: String,
        /// The lanes needed.
        expected: usize,
        /// The lanes found.
        found: usize,
    },
    #[error("type confusion: {0}")]
    /// A value of a type the operation does not take.
    Type(String),
    #[error("`{buffer}` has a bad size {size:?} (limit {MAX_ELEMENTS} elements)")]
    /// A buffer allocated with a negative extent or more than `MAX_ELEMENTS` elements.
    BadSize {
        /// The buffer allocated.
        buffer: String,
        /// Its extents.
        size: Vec<i64>,
    },
    #[error("`{buffer}`: {source}")]
    /// The memory for a buffer could not be allocated (`ShapeError::OutOfMemory` names the
    /// bytes).
    OutOfMemory {
        /// The buffer allocated.
        buffer: String,
        /// Why, with the size.
        source: strata_dsl::buffer::ShapeError,
    },
    #[error("loop `{var}` (min {min}, extent {extent}) leaves the i32 range")]
    /// A loop whose range leaves the `i32` range.
    LoopRange {
        /// The loop variable.
        var: String,
        /// The loop's first value.
        min: i64,
        /// The loop's number of iterations.
        extent: i64,
    },
    #[error("`{0}` is an input and cannot be written")]
    /// A write to an input buffer.
    ReadOnly(String),
    #[error("{0}")]
    /// An arithmetic error of the kernel language (`strata_dsl::value::OpError`).
    Op(#[from] strata_dsl::value::OpError),
}

type IResult<T> = Result<T, InterpError>;

/// Evaluates `e` with the variables of `vars` (scalar parameters are looked up there too).
/// There are no buffers, so a `Load` or `Call` is an `UnknownBuffer` error.
pub fn eval_expr(e: &Expr, vars: &HashMap<String, VValue>) -> Result<VValue, InterpError> {
    let params: BTreeMap<String, Value> = vars
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_scalar()?)))
        .collect();
    Machine::new(vars, &params).eval(e)
}

/// Runs `kernel` on `args` and returns its output buffer.
///
/// Sizes are bound from the inputs' shapes (each by the first input dimension whose extent is
/// the bare size variable), then every input's element type, rank and extents are checked, and
/// every scalar parameter's presence and type. The output starts filled with zeros.
pub fn interpret(kernel: &LoweredKernel, args: &Args) -> Result<Buffer, InterpError> {
    interpret_counting(kernel, args).map(|(out, _)| out)
}

/// `interpret`, also counting the elements stored to each buffer (a vector store counts its
/// lanes): how much work a schedule does, which the answer alone does not show (a sliding
/// window computes each row of a producer once; recomputing them gives the same answer).
pub fn interpret_counting(
    kernel: &LoweredKernel,
    args: &Args,
) -> Result<(Buffer, HashMap<String, u64>), InterpError> {
    let binding = kernel.call_signature().bind(args)?;
    let sizes: HashMap<String, VValue> = binding
        .sizes
        .iter()
        .map(|(name, &v)| (name.clone(), VValue::scalar(Value::I32(v as i32))))
        .collect();
    let mut machine = Machine::new(&sizes, &args.scalars);
    for input in &kernel.inputs {
        let buffer = args
            .buffers
            .get(&input.name)
            .ok_or_else(|| InterpError::UnknownBuffer(input.name.clone()))?;
        machine.push_buffer(&input.name, Storage::from_input(&input.name, buffer)?);
    }
    let out = &kernel.output;
    let dims = binding
        .output_shape
        .iter()
        .map(|&extent| Dim {
            min: 0,
            extent: extent as i64,
        })
        .collect();
    machine.push_buffer(&out.name, Storage::new(&out.name, out.dtype, dims)?);
    machine.exec(&kernel.body)?;
    let storage = machine.pop_buffer(&out.name)?;
    Ok((storage.into_buffer()?, machine.stores))
}

/// One dimension of a buffer's box.
#[derive(Clone, Copy, Debug)]
struct Dim {
    min: i64,
    extent: i64,
}

/// A buffer: its elements in row-major order over `dims`.
#[derive(Clone, Debug)]
struct Storage {
    dtype: Dtype,
    dims: Vec<Dim>,
    values: Vec<Value>,
    read_only: bool,
}

impl Storage {
    /// A zero-filled buffer over `dims`, if its size is sane.
    fn new(name: &str, dtype: Dtype, dims: Vec<Dim>) -> IResult<Storage> {
        let mut len: i64 = 1;
        for d in &dims {
            len = len.saturating_mul(d.extent.max(0));
        }
        if dims.iter().any(|d| d.extent < 0) || len > MAX_ELEMENTS {
            let size = dims.iter().map(|d| d.extent).collect();
            return Err(InterpError::BadSize {
                buffer: name.to_string(),
                size,
            });
        }
        let shape: Vec<usize> = dims.iter().map(|d| d.extent as usize).collect();
        let values = filled(&shape, len as usize, Value::zero(dtype)).map_err(|source| {
            InterpError::OutOfMemory {
                buffer: name.to_string(),
                source,
            }
        })?;
        Ok(Storage {
            dtype,
            dims,
            values,
            read_only: false,
        })
    }

    /// A read-only copy of the input `name`.
    fn from_input(name: &str, buffer: &Buffer) -> IResult<Storage> {
        let dims = buffer
            .shape()
            .iter()
            .map(|&e| Dim {
                min: 0,
                extent: e as i64,
            })
            .collect();
        let zero = Value::zero(buffer.dtype());
        let mut values = filled(buffer.shape(), buffer.len(), zero).map_err(|source| {
            InterpError::OutOfMemory {
                buffer: name.to_string(),
                source,
            }
        })?;
        for (i, v) in values.iter_mut().enumerate() {
            *v = buffer.get_flat(i).unwrap_or(zero);
        }
        Ok(Storage {
            dtype: buffer.dtype(),
            dims,
            values,
            read_only: true,
        })
    }

    fn into_buffer(self) -> IResult<Buffer> {
        let shape: Vec<usize> = self.dims.iter().map(|d| d.extent as usize).collect();
        let mut buffer = Buffer::zeros(self.dtype, &shape).map_err(CallError::from)?;
        for (i, v) in self.values.into_iter().enumerate() {
            buffer.set_flat(i, v);
        }
        Ok(buffer)
    }

    fn shape(&self) -> Vec<i64> {
        self.dims.iter().map(|d| d.extent).collect()
    }

    /// The flat offset of a flat index, if inside.
    fn flat(&self, i: i64) -> Option<usize> {
        usize::try_from(i).ok().filter(|&i| i < self.values.len())
    }

    /// The flat offset of a multi-dimensional index (relative to the mins), if inside.
    fn offset(&self, index: &[i64]) -> Option<usize> {
        let mut offset: i64 = 0;
        for (&i, d) in index.iter().zip(&self.dims) {
            let rel = i.checked_sub(d.min).filter(|r| (0..d.extent).contains(r))?;
            offset = offset * d.extent + rel;
        }
        Some(offset as usize)
    }
}

/// The interpreter's state: variables in scope, parameters, and buffers by name.
struct Machine<'a> {
    /// Variables bound outside the code being run (sizes, or the caller's variables).
    globals: &'a HashMap<String, VValue>,
    params: &'a BTreeMap<String, Value>,
    /// Loop and let variables, innermost last.
    scope: Vec<(String, VValue)>,
    /// Buffers by name; the last of each list is the visible one.
    buffers: HashMap<String, Vec<Storage>>,
    /// Elements stored to each buffer so far.
    stores: HashMap<String, u64>,
}

impl<'a> Machine<'a> {
    fn new(globals: &'a HashMap<String, VValue>, params: &'a BTreeMap<String, Value>) -> Self {
        Machine {
            globals,
            params,
            scope: Vec::new(),
            buffers: HashMap::new(),
            stores: HashMap::new(),
        }
    }

    fn push_buffer(&mut self, name: &str, storage: Storage) {
        self.buffers
            .entry(name.to_string())
            .or_default()
            .push(storage);
    }

    fn pop_buffer(&mut self, name: &str) -> IResult<Storage> {
        self.buffers
            .get_mut(name)
            .and_then(|stack| stack.pop())
            .ok_or_else(|| InterpError::UnknownBuffer(name.to_string()))
    }

    fn buffer(&self, name: &str) -> IResult<&Storage> {
        self.buffers
            .get(name)
            .and_then(|stack| stack.last())
            .ok_or_else(|| InterpError::UnknownBuffer(name.to_string()))
    }

    fn buffer_mut(&mut self, name: &str) -> IResult<&mut Storage> {
        let storage = self
            .buffers
            .get_mut(name)
            .and_then(|stack| stack.last_mut())
            .ok_or_else(|| InterpError::UnknownBuffer(name.to_string()))?;
        if storage.read_only {
            return Err(InterpError::ReadOnly(name.to_string()));
        }
        Ok(storage)
    }

    fn lookup(&self, name: &str) -> IResult<&VValue> {
        let local = self.scope.iter().rev().find(|(n, _)| n == name);
        local
            .map(|(_, v)| v)
            .or_else(|| self.globals.get(name))
            .ok_or_else(|| InterpError::UnboundVar(name.to_string()))
    }

    /// Runs `f` with `name` bound to `value`, then unbinds it.
    fn with_var<T>(
        &mut self,
        name: &str,
        value: VValue,
        f: impl FnOnce(&mut Self) -> IResult<T>,
    ) -> IResult<T> {
        self.scope.push((name.to_string(), value));
        let result = f(self);
        self.scope.pop();
        result
    }

    // ----- expressions -----

    fn eval(&mut self, e: &Expr) -> IResult<VValue> {
        match e {
            Expr::Const(v) => Ok(VValue::Scalar(*v)),
            Expr::Var(name, ty) => self.var(name, *ty),
            Expr::Param(name, dtype) => self.param(name, *dtype),
            Expr::Call { func, args, ty } => self.call(func, args, *ty),
            Expr::Load { buffer, index, ty } => self.load(buffer, index, *ty),
            Expr::Unary(op, a) => self.unary(*op, a),
            Expr::Binary(op, a, b) => self.binary(*op, a, b),
            Expr::Select(c, t, f) => self.select(c, t, f),
            Expr::Cast(ty, a) => self.cast(*ty, a),
            Expr::Intrinsic(f, args) => self.intrinsic(*f, args),
            Expr::Ramp {
                base,
                stride,
                lanes,
            } => self.ramp(base, stride, *lanes),
            Expr::Broadcast { value, lanes } => self.broadcast(value, *lanes),
            Expr::Let { name, value, body } => {
                let value = self.eval(value)?;
                self.with_var(name, value, |m| m.eval(body))
            }
            Expr::VectorReduce { op, value } => self.vector_reduce(*op, value),
        }
    }

    /// Evaluates a scalar expression that must be an integer (or bool) and widens it.
    fn eval_int(&mut self, e: &Expr, what: &str) -> IResult<i64> {
        let v = self.eval(e)?;
        let v = v.as_scalar().ok_or_else(|| InterpError::LaneMismatch {
            what: what.to_string(),
            expected: 1,
            found: v.lane_count(),
        })?;
        as_int(v, what)
    }

    fn var(&self, name: &str, ty: Type) -> IResult<VValue> {
        let v = self.lookup(name)?;
        check_type(v, ty, &format!("variable `{name}`"))?;
        Ok(v.clone())
    }

    fn param(&self, name: &str, dtype: Dtype) -> IResult<VValue> {
        let v = self
            .params
            .get(name)
            .ok_or_else(|| InterpError::MissingParam(name.to_string()))?;
        if v.dtype() != dtype {
            return Err(InterpError::Type(format!(
                "parameter `{name}` is {} but used as {dtype}",
                v.dtype()
            )));
        }
        Ok(VValue::Scalar(*v))
    }

    fn load(&mut self, buffer: &str, index: &Expr, ty: Type) -> IResult<VValue> {
        let index = self.eval(index)?;
        let storage = self.buffer(buffer)?;
        check_elem(buffer, storage.dtype, ty.dtype)?;
        let mut lanes = Vec::with_capacity(index.lane_count());
        for &i in index.lanes() {
            let i = as_int(i, &format!("an index of `{buffer}`"))?;
            let len = storage.values.len();
            let at = storage
                .flat(i)
                .ok_or_else(|| out_of_bounds(buffer, i, len))?;
            lanes.push(storage.values[at]);
        }
        let v = index.rebuild(lanes);
        check_type(&v, ty, &format!("a load of `{buffer}`"))?;
        Ok(v)
    }

    fn call(&mut self, func: &str, args: &[Expr], ty: Type) -> IResult<VValue> {
        let points = self.multi_index(func, args)?;
        let storage = self.buffer(func)?;
        check_elem(func, storage.dtype, ty.dtype)?;
        let mut lanes = Vec::with_capacity(points.len());
        for point in points {
            let at = checked_offset(func, storage, point)?;
            lanes.push(storage.values[at]);
        }
        let v = VValue::vector(lanes);
        check_type(&v, ty, &format!("a call of `{func}`"))?;
        Ok(v)
    }

    /// The points a multi-dimensional access touches, one per lane. A scalar argument is the
    /// same in every lane; vector arguments must agree on their lane count.
    fn multi_index(&mut self, func: &str, args: &[Expr]) -> IResult<Vec<Vec<i64>>> {
        let what = format!("an index of `{func}`");
        let mut values = Vec::with_capacity(args.len());
        for a in args {
            values.push(self.eval(a)?);
        }
        let lanes = values.iter().map(VValue::lane_count).max().unwrap_or(1);
        let mut points = vec![Vec::with_capacity(args.len()); lanes];
        for v in &values {
            if v.lane_count() != 1 && v.lane_count() != lanes {
                return Err(lane_mismatch(&what, lanes, v.lane_count()));
            }
            for (lane, point) in points.iter_mut().enumerate() {
                let x = v.lanes()[lane.min(v.lane_count() - 1)];
                point.push(as_int(x, &what)?);
            }
        }
        Ok(points)
    }

    fn unary(&mut self, op: UnOp, a: &Expr) -> IResult<VValue> {
        let a = self.eval(a)?;
        a.map(|x| {
            Ok(match op {
                UnOp::Neg => x.neg()?,
                UnOp::Not => x.not()?,
            })
        })
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr) -> IResult<VValue> {
        let a = self.eval(a)?;
        // Scalar `&&` and `||` short-circuit, as in the reference evaluator.
        match (op, &a) {
            (BinOp::And, VValue::Scalar(Value::Bool(false)))
            | (BinOp::Or, VValue::Scalar(Value::Bool(true))) => return Ok(a),
            _ => {}
        }
        let b = self.eval(b)?;
        zip_lanes(op.symbol(), &[&a, &b], |v| {
            Ok(Value::binary(op, v[0], v[1])?)
        })
    }

    fn select(&mut self, c: &Expr, t: &Expr, f: &Expr) -> IResult<VValue> {
        let cond = self.eval(c)?;
        if let VValue::Scalar(c) = cond {
            return if as_bool(c, "a select condition")? {
                self.eval(t)
            } else {
                self.eval(f)
            };
        }
        let t = self.eval(t)?;
        let f = self.eval(f)?;
        zip_lanes("select", &[&cond, &t, &f], |v| {
            Ok(if as_bool(v[0], "a select condition")? {
                v[1]
            } else {
                v[2]
            })
        })
    }

    fn cast(&mut self, ty: Type, a: &Expr) -> IResult<VValue> {
        let a = self.eval(a)?;
        let v = a.map(|x| Ok(x.cast(ty.dtype)))?;
        check_type(&v, ty, "a cast")?;
        Ok(v)
    }

    fn intrinsic(&mut self, f: Intrinsic, args: &[Expr]) -> IResult<VValue> {
        let mut values = Vec::with_capacity(args.len());
        for a in args {
            values.push(self.eval(a)?);
        }
        let refs: Vec<&VValue> = values.iter().collect();
        zip_lanes(f.name(), &refs, |v| apply_intrinsic(f, v))
    }

    fn ramp(&mut self, base: &Expr, stride: &Expr, lanes: u16) -> IResult<VValue> {
        let base = self.scalar(base, "a ramp base")?;
        let stride = self.scalar(stride, "a ramp stride")?;
        nonzero_lanes(lanes, "a ramp")?;
        let mut out = Vec::with_capacity(lanes as usize);
        for i in 0..lanes {
            let step = Value::binary(
                BinOp::Mul,
                Value::I64(i as i64).cast(stride.dtype()),
                stride,
            )?;
            out.push(Value::binary(BinOp::Add, base, step)?);
        }
        Ok(VValue::vector(out))
    }

    /// Folds the lanes of `value` with `op`, first lane first.
    fn vector_reduce(&mut self, op: ReduceOp, value: &Expr) -> IResult<VValue> {
        let v = self.eval(value)?;
        let mut lanes = v.lanes().iter().copied();
        let first = lanes
            .next()
            .ok_or_else(|| lane_mismatch("a vector reduction", 2, 0))?;
        let folded = lanes.try_fold(first, |acc, x| match op {
            ReduceOp::Add => Value::binary(BinOp::Add, acc, x),
            ReduceOp::Mul => Value::binary(BinOp::Mul, acc, x),
            ReduceOp::Min => Value::min(acc, x),
            ReduceOp::Max => Value::max(acc, x),
        })?;
        Ok(VValue::Scalar(folded))
    }

    fn broadcast(&mut self, value: &Expr, lanes: u16) -> IResult<VValue> {
        let v = self.scalar(value, "a broadcast value")?;
        nonzero_lanes(lanes, "a broadcast")?;
        Ok(VValue::vector(vec![v; lanes as usize]))
    }

    /// Evaluates an expression that must be a scalar.
    fn scalar(&mut self, e: &Expr, what: &str) -> IResult<Value> {
        let v = self.eval(e)?;
        v.as_scalar()
            .ok_or_else(|| lane_mismatch(what, 1, v.lane_count()))
    }

    // ----- statements -----

    fn exec(&mut self, s: &Stmt) -> IResult<()> {
        match s {
            Stmt::For {
                var,
                min,
                extent,
                body,
                ..
            } => self.exec_for(var, min, extent, body),
            Stmt::Let { name, value, body } => {
                let value = self.eval(value)?;
                self.with_var(name, value, |m| m.exec(body))
            }
            Stmt::Block(stmts) => stmts.iter().try_for_each(|s| self.exec(s)),
            Stmt::If {
                cond,
                then_case,
                else_case,
            } => {
                let c = self.scalar(cond, "an if condition")?;
                if as_bool(c, "an if condition")? {
                    self.exec(then_case)
                } else {
                    else_case.as_ref().map_or(Ok(()), |e| self.exec(e))
                }
            }
            Stmt::Realize {
                func,
                dtype,
                region,
                body,
            } => {
                let mut dims = Vec::with_capacity(region.len());
                for r in region {
                    let min = self.eval_int(&r.min, &format!("a region min of `{func}`"))?;
                    let extent =
                        self.eval_int(&r.extent, &format!("a region extent of `{func}`"))?;
                    dims.push(Dim { min, extent });
                }
                self.exec_with_buffer(func, Storage::new(func, *dtype, dims)?, body)
            }
            Stmt::Allocate {
                buffer,
                dtype,
                size,
                body,
            } => {
                let extent = self.eval_int(size, &format!("the size of `{buffer}`"))?;
                let storage = Storage::new(buffer, *dtype, vec![Dim { min: 0, extent }])?;
                self.exec_with_buffer(buffer, storage, body)
            }
            Stmt::Produce { body, .. } => self.exec(body),
            Stmt::Provide { func, args, value } => self.provide(func, args, value),
            Stmt::Store {
                buffer,
                index,
                value,
            } => self.store(buffer, index, value),
            Stmt::NoOp => Ok(()),
        }
    }

    fn exec_for(&mut self, var: &str, min: &Expr, extent: &Expr, body: &Stmt) -> IResult<()> {
        let min = self.eval_int(min, &format!("the min of loop `{var}`"))?;
        let extent = self.eval_int(extent, &format!("the extent of loop `{var}`"))?;
        let slot = self.scope.len();
        self.scope
            .push((var.to_string(), VValue::Scalar(Value::I32(0))));
        let mut result = Ok(());
        for i in 0..extent.max(0) {
            let Some(x) = min.checked_add(i).and_then(|x| i32::try_from(x).ok()) else {
                result = Err(InterpError::LoopRange {
                    var: var.to_string(),
                    min,
                    extent,
                });
                break;
            };
            self.scope[slot].1 = VValue::Scalar(Value::I32(x));
            result = self.exec(body);
            if result.is_err() {
                break;
            }
        }
        self.scope.truncate(slot);
        result
    }

    fn exec_with_buffer(&mut self, name: &str, storage: Storage, body: &Stmt) -> IResult<()> {
        self.push_buffer(name, storage);
        let result = self.exec(body);
        self.pop_buffer(name)?;
        result
    }

    fn store(&mut self, buffer: &str, index: &Expr, value: &Expr) -> IResult<()> {
        let index = self.eval(index)?;
        let value = self.eval(value)?;
        let what = format!("the value stored to `{buffer}`");
        if value.is_vector() && value.lane_count() != index.lane_count() {
            return Err(lane_mismatch(&what, index.lane_count(), value.lane_count()));
        }
        let storage = self.buffer_mut(buffer)?;
        for (lane, &i) in index.lanes().iter().enumerate() {
            let i = as_int(i, &format!("an index of `{buffer}`"))?;
            let v = value.lanes()[lane.min(value.lane_count() - 1)];
            check_elem(buffer, storage.dtype, v.dtype())?;
            let len = storage.values.len();
            let at = storage
                .flat(i)
                .ok_or_else(|| out_of_bounds(buffer, i, len))?;
            storage.values[at] = v;
        }
        *self.stores.entry(buffer.to_string()).or_default() += index.lane_count() as u64;
        Ok(())
    }

    fn provide(&mut self, func: &str, args: &[Expr], value: &Expr) -> IResult<()> {
        let points = self.multi_index(func, args)?;
        let value = self.eval(value)?;
        let what = format!("the value provided to `{func}`");
        if value.is_vector() && value.lane_count() != points.len() {
            return Err(lane_mismatch(&what, points.len(), value.lane_count()));
        }
        let storage = self.buffer_mut(func)?;
        for (lane, point) in points.into_iter().enumerate() {
            let v = value.lanes()[lane.min(value.lane_count() - 1)];
            check_elem(func, storage.dtype, v.dtype())?;
            let at = checked_offset(func, storage, point)?;
            storage.values[at] = v;
        }
        Ok(())
    }
}

// ----- helpers -----

/// Applies `f` lane by lane to operands that all have the same number of lanes.
fn zip_lanes(
    what: &str,
    operands: &[&VValue],
    mut f: impl FnMut(&[Value]) -> IResult<Value>,
) -> IResult<VValue> {
    let Some(first) = operands.first() else {
        return Err(InterpError::Type(format!("`{what}` with no operands")));
    };
    let lanes = first.lane_count();
    for v in operands {
        if v.lane_count() != lanes || v.is_vector() != first.is_vector() {
            return Err(lane_mismatch(
                &format!("an operand of `{what}`"),
                lanes,
                v.lane_count(),
            ));
        }
    }
    let mut out = Vec::with_capacity(lanes);
    let mut lane_values = Vec::with_capacity(operands.len());
    for lane in 0..lanes {
        lane_values.clear();
        lane_values.extend(operands.iter().map(|v| v.lanes()[lane]));
        out.push(f(&lane_values)?);
    }
    Ok(first.rebuild(out))
}

/// One lane of an intrinsic, with the reference evaluator's semantics.
fn apply_intrinsic(f: Intrinsic, v: &[Value]) -> IResult<Value> {
    Ok(Value::intrinsic(f, v)?)
}

/// The integer value of an index or extent; floats and bools are refused.
fn as_int(v: Value, what: &str) -> IResult<i64> {
    v.as_i64()
        .filter(|_| v.dtype().is_int())
        .ok_or_else(|| InterpError::NotInteger {
            what: what.to_string(),
            value: v,
        })
}

fn as_bool(v: Value, what: &str) -> IResult<bool> {
    match v {
        Value::Bool(b) => Ok(b),
        other => Err(InterpError::Type(format!(
            "{what} is {other:?}, not a bool"
        ))),
    }
}

/// Checks a value against the type the IR says it has.
fn check_type(v: &VValue, ty: Type, what: &str) -> IResult<()> {
    if v.lane_count() != ty.lanes as usize {
        return Err(lane_mismatch(what, ty.lanes as usize, v.lane_count()));
    }
    match v.lanes().iter().find(|x| x.dtype() != ty.dtype) {
        Some(x) => Err(InterpError::Type(format!(
            "{what} is {} but typed {}",
            x.dtype(),
            ty.dtype
        ))),
        None => Ok(()),
    }
}

/// Checks an element type read from or written to a buffer against the buffer's.
fn check_elem(buffer: &str, have: Dtype, used: Dtype) -> IResult<()> {
    if have == used {
        return Ok(());
    }
    Err(InterpError::Type(format!(
        "buffer `{buffer}` holds {have} but is accessed as {used}"
    )))
}

fn checked_offset(name: &str, storage: &Storage, point: Vec<i64>) -> IResult<usize> {
    if point.len() != storage.dims.len() {
        return Err(InterpError::WrongRank {
            buffer: name.to_string(),
            found: point.len(),
            rank: storage.dims.len(),
        });
    }
    storage
        .offset(&point)
        .ok_or_else(|| InterpError::OutOfBounds {
            buffer: name.to_string(),
            index: point,
            mins: storage.dims.iter().map(|d| d.min).collect(),
            extents: storage.shape(),
        })
}

/// An out-of-bounds flat access.
fn out_of_bounds(buffer: &str, index: i64, len: usize) -> InterpError {
    InterpError::OutOfBounds {
        buffer: buffer.to_string(),
        index: vec![index],
        mins: vec![0],
        extents: vec![len as i64],
    }
}

fn nonzero_lanes(lanes: u16, what: &str) -> IResult<()> {
    match lanes {
        0 => Err(InterpError::Type(format!("{what} with 0 lanes"))),
        _ => Ok(()),
    }
}

fn lane_mismatch(what: &str, expected: usize, found: usize) -> InterpError {
    InterpError::LaneMismatch {
        what: what.to_string(),
        expected,
        found,
    }
}
