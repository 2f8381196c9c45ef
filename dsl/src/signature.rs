//! The one checked call boundary. Every executor (the reference evaluator, the loop-IR
//! interpreter, compiled kernels) describes what it takes as a [`Signature`] and calls
//! [`Signature::bind`] before computing anything, so an argument is accepted or refused the same
//! way, in the same words, by all three.
//!
//! `bind` establishes, or refuses with a [`CallError`]:
//! - every argument is an input of the kernel, every input is given, with its element type;
//! - every buffer's rank and extents match its declared shape (constants, and size variables
//!   bound by their first use; a later use that differs is a wrong shape);
//! - every size, every extent and every element count fits the index type the generated code
//!   uses (`i32`): at most [`MAX_ELEMENTS`] elements per buffer (Halide's limit is 2^31 bytes
//!   without `large_buffers`; strata's is 2^31 - 1 elements, since it indexes elements), and at
//!   most [`MAX_EXTENT`] (2^30) per size and per dimension, which leaves index arithmetic
//!   headroom: a loop split by a factor up to the schedule's limit (2^24), rounded up, and
//!   shifted by a stencil's offset still stays inside `i32`;
//! - every buffer's data really has that many elements;
//! - the output's extents, every reduction domain's bounds and every `specialize` condition of
//!   sizes, evaluated with overflow checks, are exact (and the extents non-negative and within
//!   the limits);
//! - every input covers each box the code reads of it (`input_regions`), and each box of the
//!   output the code reads or writes lies inside the output (`output_region`).
//!
//! Expressions of sizes (output extents, region bounds, domain bounds) belong to the rung that
//! describes the signature; they implement [`SizeExpr`], which evaluates them exactly or not at
//! all.

use crate::args::Args;
use crate::buffer::{BufferShape, BufferView, ShapeError, ViewArgs};
use crate::dtype::Dtype;
use crate::ir::{Extent, Intrinsic};
use crate::value::{BinOp, Value};
use std::collections::BTreeMap;
use std::fmt;

/// The value of every size variable of a call, by name. The one sizes type of the public API:
/// what a call binds, what `compile` fixes in advance, what `random_args`, the tuner and the
/// tuning database's shapes take.
pub type Sizes = BTreeMap<String, i64>;

/// `Sizes` from pairs: `sizes(&[("M", 512), ("N", 256)])`.
pub fn sizes(pairs: &[(&str, i64)]) -> Sizes {
    pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect()
}

/// The most elements one buffer may have: flattened element indices are `i32`.
pub const MAX_ELEMENTS: u64 = i32::MAX as u64;

/// The largest value a size variable or one extent may take (sizes are `i32` in the generated
/// code; the half of the range above this is headroom for index arithmetic).
pub const MAX_EXTENT: i64 = 1 << 30;

/// Why a call was refused. Nothing ran.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CallError {
    /// A buffer input or scalar parameter of the kernel was not given.
    #[error("missing input `{0}`")]
    MissingInput(String),
    /// An argument the kernel does not have.
    #[error("`{0}` is not an input of this kernel")]
    UnknownArgument(String),
    /// An input of another element type (or a scalar of another type).
    #[error("input `{name}` should be {expected}, found {actual}")]
    WrongType {
        /// The input's name.
        name: String,
        /// The declared element type.
        expected: Dtype,
        /// The element type given.
        actual: Dtype,
    },
    /// An input of another rank, or whose extents disagree with sizes bound elsewhere.
    #[error("input `{name}` should have shape {expected}, found {actual:?}")]
    WrongShape {
        /// The input's name.
        name: String,
        /// What was expected, as text.
        expected: String,
        /// The shape given.
        actual: Vec<usize>,
    },
    /// A buffer whose element count is not the product of its extents.
    #[error("input `{name}` has shape {shape:?} but holds {found} elements")]
    WrongLength {
        /// The input's name.
        name: String,
        /// The shape given.
        shape: Vec<usize>,
        /// The number of elements given.
        found: usize,
    },
    /// A size above `MAX_EXTENT`.
    #[error("size `{size}` is {value}, more than the largest size strata supports ({MAX_EXTENT})")]
    SizeTooLarge {
        /// The size's name.
        size: String,
        /// Its value.
        value: u64,
    },
    /// A buffer past the limits (`MAX_EXTENT` per dimension, `MAX_ELEMENTS` in all).
    #[error("{what} of shape {shape:?} is too large: strata supports at most {MAX_EXTENT} per dimension and {MAX_ELEMENTS} elements (it indexes elements with i32)")]
    TooManyElements {
        /// Which buffer.
        what: String,
        /// Its shape.
        shape: Vec<u64>,
    },
    /// A size no input's shape gives (and no fixed value).
    #[error("size `{0}` is not bound by any input")]
    UnboundSize(String),
    /// An output extent expression negative for these sizes.
    #[error("output `{output}` has a negative extent {value} in dimension {dim}")]
    NegativeExtent {
        /// The output's name.
        output: String,
        /// The dimension (0 is outermost).
        dim: usize,
        /// The extent computed.
        value: i64,
    },
    /// An expression of sizes (an extent, a region, a domain bound) that would wrap or is unbound.
    #[error("{what} `{expr}` cannot be computed for these sizes: {reason}")]
    SizeExprFailed {
        /// What the expression is (an output extent, a region, a domain bound).
        what: String,
        /// The expression, as text.
        expr: String,
        /// Why it has no value.
        reason: SizeExprError,
    },
    /// An input smaller than the region the compiled code reads (a `round_up` split, say).
    #[error("input `{input}` is too small for this schedule: dimension {dim} is read at {min}..={max}, but its extent is {extent}")]
    InputTooSmall {
        /// The input's name.
        input: String,
        /// The dimension (0 is outermost).
        dim: usize,
        /// The lowest index the code touches.
        min: i64,
        /// The highest index the code touches.
        max: i64,
        /// The buffer's extent there.
        extent: usize,
    },
    /// A read of an input in a dimension of extent 0, where no boundary condition but
    /// `constant(v)` gives a value (`clamp_edge` and the mirrors have no edge to repeat).
    #[error("input `{input}` is read at {min}..={max} in dimension {dim}, but that dimension is empty (extent 0): an empty input has no element to read and no edge for `clamp_edge` or `mirror` to repeat (only a `constant(v)` boundary gives such reads a value)")]
    ReadsEmptyInput {
        /// The input's name.
        input: String,
        /// The empty dimension (0 is outermost).
        dim: usize,
        /// The lowest index read there.
        min: i64,
        /// The highest index read there.
        max: i64,
    },
    /// An update that would read or write its output outside the output's extents.
    #[error("output `{output}` is read or written at {min}..={max} in dimension {dim}, outside its extent {extent}: an update reads or writes its own function outside the region the definition covers")]
    OutsideOutput {
        /// The output's name.
        output: String,
        /// The dimension (0 is outermost).
        dim: usize,
        /// The lowest index the code touches.
        min: i64,
        /// The highest index the code touches.
        max: i64,
        /// The buffer's extent there.
        extent: usize,
    },
    /// A caller-provided output buffer of the wrong type or shape.
    #[error("the output buffer should be {expected}, found {actual}")]
    WrongOutput {
        /// The output's type and shape, as text.
        expected: String,
        /// The buffer's, as text.
        actual: String,
    },
    /// A buffer view whose shape is invalid.
    #[error(transparent)]
    Buffer(#[from] ShapeError),
}

/// Why an expression of sizes has no exact value.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SizeExprError {
    /// A step of the computation leaves the range of this type.
    #[error("a step overflows {0}")]
    Overflow(Dtype),
    /// The expression reads a size that has no value.
    #[error("size `{0}` is unbound")]
    Unbound(String),
    /// The expression is not an integer expression of sizes.
    #[error("`{0}` is not an integer expression of sizes")]
    Unsupported(String),
}

/// An integer expression of the sizes, evaluated exactly: an error where any step leaves its
/// type's range (where the generated code would wrap).
pub trait SizeExpr: fmt::Display {
    /// The value for `sizes`, exactly, or why there is none.
    fn eval_size(&self, sizes: &Sizes) -> Result<i64, SizeExprError>;
}

/// A buffer argument: its name, element type and declared shape.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferParam {
    /// The argument's name.
    pub name: String,
    /// Its element type.
    pub dtype: Dtype,
    /// Its declared extents (sizes, or expressions of them).
    pub shape: Vec<Extent>,
}

/// A box of a buffer the code touches: `(min, extent)` per dimension.
pub type Region<E> = Vec<(E, E)>;

/// What a kernel takes and gives, as every executor checks it.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature<E> {
    /// The buffer inputs, in declaration order.
    pub inputs: Vec<BufferParam>,
    /// The scalar parameters and their types, in declaration order.
    pub scalars: Vec<(String, Dtype)>,
    /// The output's name.
    pub output_name: String,
    /// The output's element type.
    pub output_dtype: Dtype,
    /// The output's extents, as expressions of the sizes.
    pub output_extents: Vec<E>,
    /// The box of each input the code reads; empty for executors that check each read.
    pub input_regions: Vec<(String, Region<E>)>,
    /// The boxes of the output the code reads and writes; none when each access is checked.
    pub output_region: Vec<Region<E>>,
    /// The bounds of every reduction domain: expressions of sizes the code computes, which
    /// must not wrap.
    pub domain_bounds: Vec<E>,
    /// The conditions of sizes that choose the kernel's version (`specialize`), each with the
    /// function it specializes: computed before anything runs, they must not wrap either.
    pub conditions: Vec<(String, E)>,
}

/// A call's arguments after `bind`: the sizes and the output's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    /// Every size's value.
    pub sizes: Sizes,
    /// The output's extents for these sizes.
    pub output_shape: Vec<usize>,
}

impl<E: SizeExpr> Signature<E> {
    /// Checks `args` against the signature (see the module doc) and binds the sizes.
    pub fn bind(&self, args: &Args) -> Result<Binding, CallError> {
        self.bind_parts(&args.buffers, &args.scalars)
    }

    /// [`Signature::bind`] for buffers in the caller's memory: the same checks, in the same
    /// words.
    pub fn bind_views(&self, args: &ViewArgs) -> Result<Binding, CallError> {
        self.bind_parts::<BufferView>(&args.buffers, &args.scalars)
    }

    fn bind_parts<B: BufferShape>(
        &self,
        buffers: &BTreeMap<String, B>,
        scalars: &BTreeMap<String, Value>,
    ) -> Result<Binding, CallError> {
        self.check_names(buffers, scalars)?;
        let sizes = self.bind_buffers(buffers)?;
        self.check_scalars(scalars)?;
        self.check_conditions(&sizes)?;
        for bound in &self.domain_bounds {
            eval(bound, &sizes, "the reduction domain bound")?;
        }
        let output_shape = self.output_shape(&sizes)?;
        // The regions the code touches may be written in terms of integer scalar parameters
        // (a LUT index clamped with one), which are fixed for the call as sizes are.
        let fixed = with_int_params(&sizes, scalars);
        self.check_regions(buffers, &fixed)?;
        self.check_output_region(&fixed, &output_shape)?;
        Ok(Binding {
            sizes,
            output_shape,
        })
    }

    /// The shape of every input and of the output for `sizes`, checked as `bind` checks a
    /// call's buffers: for callers that make inputs from sizes (and must refuse before they
    /// allocate).
    pub fn shapes_for(
        &self,
        sizes: &Sizes,
    ) -> Result<(Vec<(String, Vec<usize>)>, Vec<usize>), CallError> {
        self.check_sizes(sizes)?;
        // Past `check_sizes`, only a size left unbound is an error here.
        for bound in &self.domain_bounds {
            eval(bound, sizes, "the reduction domain bound")?;
        }
        let inputs = (self.inputs.iter())
            .map(|input| Ok((input.name.clone(), input_shape(input, sizes)?)))
            .collect::<Result<_, CallError>>()?;
        Ok((inputs, self.output_shape(sizes)?))
    }

    /// The one check of sizes given by hand, before anything uses them: every size, and every
    /// reduction domain bound, input shape and output shape the sizes determine, within the
    /// limits `bind` enforces. Sizes may be left unbound (`strata lower --shape` fixes some),
    /// and what needs them is not checked. [`Signature::shapes_for`] (`random_args`, hence
    /// `strata run`, `compare` and the tuner) and lowering for fixed sizes (`strata lower`,
    /// `compile`) both refuse through here.
    pub fn check_sizes(&self, sizes: &Sizes) -> Result<(), CallError> {
        for (size, &value) in sizes {
            check_size_value(size, value)?;
        }
        unless_unbound(self.check_conditions(sizes))?;
        for bound in &self.domain_bounds {
            unless_unbound(eval(bound, sizes, "the reduction domain bound"))?;
        }
        for input in &self.inputs {
            unless_unbound(input_shape(input, sizes))?;
        }
        unless_unbound(self.output_shape(sizes))
    }

    /// Every `specialize` condition can be computed (an error names it and its function).
    fn check_conditions(&self, sizes: &Sizes) -> Result<(), CallError> {
        for (func, condition) in &self.conditions {
            eval(
                condition,
                sizes,
                &format!("`{func}`'s specialize condition"),
            )?;
        }
        Ok(())
    }

    fn check_names<B>(
        &self,
        buffers: &BTreeMap<String, B>,
        scalars: &BTreeMap<String, Value>,
    ) -> Result<(), CallError> {
        let is_input = |n: &String| self.inputs.iter().any(|i| &i.name == n);
        let is_scalar = |n: &String| self.scalars.iter().any(|(s, _)| s == n);
        let unknown = (buffers.keys().find(|n| !is_input(n)))
            .or_else(|| scalars.keys().find(|n| !is_scalar(n)));
        match unknown {
            Some(name) => Err(CallError::UnknownArgument(name.clone())),
            None => Ok(()),
        }
    }

    /// Checks every buffer in signature order: first types and ranks, binding each size at its
    /// first use, then every extent against the bound sizes (so a wrong shape is described with
    /// every size it can name).
    fn bind_buffers<B: BufferShape>(&self, args: &BTreeMap<String, B>) -> Result<Sizes, CallError> {
        let mut buffers = Vec::new();
        for input in &self.inputs {
            let buffer = args
                .get(&input.name)
                .ok_or_else(|| CallError::MissingInput(input.name.clone()))?;
            buffers.push((input, buffer));
        }
        let mut sizes = Sizes::new();
        for &(input, buffer) in &buffers {
            bind_sizes_of(input, buffer, &mut sizes)?;
        }
        for &(input, buffer) in &buffers {
            check_extents(input, buffer, &sizes)?;
        }
        Ok(sizes)
    }

    fn check_scalars(&self, scalars: &BTreeMap<String, Value>) -> Result<(), CallError> {
        for (name, dtype) in &self.scalars {
            let value = scalars
                .get(name)
                .ok_or_else(|| CallError::MissingInput(name.clone()))?;
            if value.dtype() != *dtype {
                return Err(CallError::WrongType {
                    name: name.clone(),
                    expected: *dtype,
                    actual: value.dtype(),
                });
            }
        }
        Ok(())
    }

    /// The output's extents, each evaluated exactly, and their product within `MAX_ELEMENTS`.
    pub fn output_shape(&self, sizes: &Sizes) -> Result<Vec<usize>, CallError> {
        let mut extents = Vec::new();
        for (dim, e) in self.output_extents.iter().enumerate() {
            let value = eval(e, sizes, "the output extent")?;
            if value < 0 {
                return Err(CallError::NegativeExtent {
                    output: self.output_name.clone(),
                    dim,
                    value,
                });
            }
            extents.push(value);
        }
        checked_shape(&format!("output `{}`", self.output_name), &extents)
    }

    /// Every input covers the box the code reads of it.
    fn check_regions<B: BufferShape>(
        &self,
        buffers: &BTreeMap<String, B>,
        sizes: &Sizes,
    ) -> Result<(), CallError> {
        for (name, region) in &self.input_regions {
            let buffer = buffers
                .get(name)
                .ok_or_else(|| CallError::MissingInput(name.clone()))?;
            for (dim, ((min, extent), &size)) in region.iter().zip(buffer.shape()).enumerate() {
                let what = format!("the region read of input `{name}`");
                let (min, len) = (eval(min, sizes, &what)?, eval(extent, sizes, &what)?);
                let max = min.saturating_add(len - 1);
                if len > 0 && size == 0 {
                    return Err(CallError::ReadsEmptyInput {
                        input: name.clone(),
                        dim,
                        min,
                        max,
                    });
                }
                if len > 0 && (min < 0 || max >= size as i64) {
                    return Err(CallError::InputTooSmall {
                        input: name.clone(),
                        dim,
                        min,
                        max,
                        extent: size,
                    });
                }
            }
        }
        Ok(())
    }
}

impl<E: SizeExpr> Signature<E> {
    /// Every box of the output the code touches lies inside its extents.
    fn check_output_region(&self, sizes: &Sizes, shape: &[usize]) -> Result<(), CallError> {
        let what = format!("the region of output `{}`", self.output_name);
        for region in &self.output_region {
            for (dim, ((min, extent), &size)) in region.iter().zip(shape).enumerate() {
                let (min, len) = (eval(min, sizes, &what)?, eval(extent, sizes, &what)?);
                let max = min.saturating_add(len - 1);
                check_inside_output(&self.output_name, dim, min, max, size)?;
            }
        }
        Ok(())
    }
}

/// An error unless `min..=max` (if not empty) lies in `0..extent`: the words the reference
/// evaluator and the call check share for an update touching its output outside its extents.
pub fn check_inside_output(
    output: &str,
    dim: usize,
    min: i64,
    max: i64,
    extent: usize,
) -> Result<(), CallError> {
    if min <= max && (min < 0 || max >= extent as i64) {
        return Err(CallError::OutsideOutput {
            output: output.to_string(),
            dim,
            min,
            max,
            extent,
        });
    }
    Ok(())
}

/// `sizes` and the integer scalar parameters' values, by name (the language keeps the two
/// apart: a parameter may not be named as a size). Borrowed when there are no parameters, so a
/// call without them copies nothing.
fn with_int_params<'a>(
    sizes: &'a Sizes,
    scalars: &BTreeMap<String, Value>,
) -> std::borrow::Cow<'a, Sizes> {
    if scalars.is_empty() {
        return std::borrow::Cow::Borrowed(sizes);
    }
    let mut fixed = sizes.clone();
    for (name, value) in scalars {
        if let Some(v) = value.as_i64() {
            fixed.entry(name.clone()).or_insert(v);
        }
    }
    std::borrow::Cow::Owned(fixed)
}

fn eval<E: SizeExpr>(e: &E, sizes: &Sizes, what: &str) -> Result<i64, CallError> {
    e.eval_size(sizes)
        .map_err(|reason| CallError::SizeExprFailed {
            what: what.to_string(),
            expr: e.to_string(),
            reason,
        })
}

/// An input's shape for `sizes`, within the limits.
fn input_shape(input: &BufferParam, sizes: &Sizes) -> Result<Vec<usize>, CallError> {
    let extents = (input.shape.iter())
        .map(|e| match e {
            Extent::Const(c) => Ok(*c),
            Extent::Size(s) => {
                (sizes.get(s).copied()).ok_or_else(|| CallError::UnboundSize(s.clone()))
            }
        })
        .collect::<Result<Vec<i64>, CallError>>()?;
    checked_shape(&format!("input `{}`", input.name), &extents)
}

/// `result`'s error, unless it is only that a size is unbound.
fn unless_unbound<T>(result: Result<T, CallError>) -> Result<(), CallError> {
    match result {
        Err(CallError::UnboundSize(_)) => Ok(()),
        Err(CallError::SizeExprFailed {
            reason: SizeExprError::Unbound(_),
            ..
        }) => Ok(()),
        other => other.map(|_| ()),
    }
}

fn check_size_value(size: &str, value: i64) -> Result<(), CallError> {
    if value > MAX_EXTENT {
        return Err(CallError::SizeTooLarge {
            size: size.to_string(),
            value: value as u64,
        });
    }
    Ok(())
}

/// Checks one buffer's type and rank, and binds the sizes its shape uses first.
fn bind_sizes_of(
    input: &BufferParam,
    buffer: &impl BufferShape,
    sizes: &mut Sizes,
) -> Result<(), CallError> {
    if buffer.dtype() != input.dtype {
        return Err(CallError::WrongType {
            name: input.name.clone(),
            expected: input.dtype,
            actual: buffer.dtype(),
        });
    }
    if buffer.shape().len() != input.shape.len() {
        return Err(wrong_shape(input, buffer, sizes));
    }
    for (extent, &actual) in input.shape.iter().zip(buffer.shape()) {
        if let Extent::Size(size) = extent {
            if !sizes.contains_key(size) {
                let value = i64::try_from(actual).unwrap_or(i64::MAX);
                check_size_value(size, value)?;
                sizes.insert(size.clone(), value);
            }
        }
    }
    Ok(())
}

/// Checks one buffer's extents against the bound sizes, its element count and its length.
fn check_extents(
    input: &BufferParam,
    buffer: &impl BufferShape,
    sizes: &Sizes,
) -> Result<(), CallError> {
    for (extent, &actual) in input.shape.iter().zip(buffer.shape()) {
        let expected = match extent {
            Extent::Const(c) => Some(*c),
            Extent::Size(size) => sizes.get(size).copied(),
        };
        if expected != i64::try_from(actual).ok() {
            return Err(wrong_shape(input, buffer, sizes));
        }
    }
    let shape: Vec<i64> = buffer.shape().iter().map(|&e| e as i64).collect();
    let shape = checked_shape(&format!("input `{}`", input.name), &shape)?;
    if buffer.len() != shape.iter().product::<usize>() {
        return Err(CallError::WrongLength {
            name: input.name.clone(),
            shape,
            found: buffer.len(),
        });
    }
    Ok(())
}

fn wrong_shape(input: &BufferParam, buffer: &impl BufferShape, sizes: &Sizes) -> CallError {
    CallError::WrongShape {
        name: input.name.clone(),
        expected: describe_shape(&input.shape, sizes),
        actual: buffer.shape().to_vec(),
    }
}

/// `extents` as a shape, if each is in `0..=MAX_EXTENT` and their product is at most
/// `MAX_ELEMENTS`.
fn checked_shape(what: &str, extents: &[i64]) -> Result<Vec<usize>, CallError> {
    let elements = extents.iter().try_fold(1u64, |n, &e| {
        let e = u64::try_from(e).ok().filter(|&e| e <= MAX_EXTENT as u64)?;
        n.checked_mul(e)
    });
    match elements {
        Some(n) if n <= MAX_ELEMENTS => Ok(extents.iter().map(|&e| e as usize).collect()),
        _ => Err(CallError::TooManyElements {
            what: what.to_string(),
            shape: extents.iter().map(|&e| e.max(0) as u64).collect(),
        }),
    }
}

/// `[M=4, 3, K]`: each extent with the value its size is bound to, if it is.
fn describe_shape(shape: &[Extent], sizes: &Sizes) -> String {
    let parts: Vec<String> = shape
        .iter()
        .map(|e| match e {
            Extent::Const(c) => c.to_string(),
            Extent::Size(s) => match sizes.get(s) {
                Some(v) => format!("{s}={v}"),
                None => s.clone(),
            },
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// `a op b` on integers of type `dtype` with the language's semantics (Euclidean division and
/// modulo, division by zero gives 0; comparisons and logic give 0 or 1), or an overflow where
/// the exact result leaves `dtype`'s range (where the generated code would wrap).
pub fn checked_int_binary(op: BinOp, a: i64, b: i64, dtype: Dtype) -> Result<i64, SizeExprError> {
    let exact = match op {
        BinOp::Add => a.checked_add(b),
        BinOp::Sub => a.checked_sub(b),
        BinOp::Mul => a.checked_mul(b),
        BinOp::Div if b == 0 => Some(0),
        BinOp::Div => a.checked_div_euclid(b),
        BinOp::Mod if b == 0 => Some(0),
        BinOp::Mod => a.checked_rem_euclid(b),
        BinOp::Eq => Some((a == b) as i64),
        BinOp::Ne => Some((a != b) as i64),
        BinOp::Lt => Some((a < b) as i64),
        BinOp::Le => Some((a <= b) as i64),
        BinOp::Gt => Some((a > b) as i64),
        BinOp::Ge => Some((a >= b) as i64),
        BinOp::And => Some((a != 0 && b != 0) as i64),
        BinOp::Or => Some((a != 0 || b != 0) as i64),
    };
    exact
        .filter(|&v| fits(v, dtype))
        .ok_or(SizeExprError::Overflow(dtype))
}

/// `min`, `max`, `abs` and `clamp` of integers of type `dtype`, exactly.
pub fn checked_int_intrinsic(
    f: Intrinsic,
    args: &[i64],
    dtype: Dtype,
) -> Result<i64, SizeExprError> {
    let exact = match (f, args) {
        (Intrinsic::Min, [a, b]) => Some(*a.min(b)),
        (Intrinsic::Max, [a, b]) => Some(*a.max(b)),
        (Intrinsic::Abs, [a]) => a.checked_abs(),
        (Intrinsic::Clamp, [x, lo, hi]) => Some((*x).max(*lo).min(*hi)),
        _ => return Err(SizeExprError::Unsupported(format!("{f:?}"))),
    };
    exact
        .filter(|&v| fits(v, dtype))
        .ok_or(SizeExprError::Overflow(dtype))
}

/// `value` cast to the integer type `to`, if it fits (a cast that would wrap is an overflow).
pub fn checked_int_cast(value: i64, to: Dtype) -> Result<i64, SizeExprError> {
    if fits(value, to) {
        Ok(value)
    } else {
        Err(SizeExprError::Overflow(to))
    }
}

/// Whether `v` is a value of the integer (or bool) type `dtype`.
fn fits(v: i64, dtype: Dtype) -> bool {
    dtype
        .int_range()
        .is_some_and(|(lo, hi)| (lo..=hi).contains(&(v as i128)))
}

/// The high rung's expressions of sizes: output extents and domain bounds.
impl SizeExpr for crate::ir::Expr {
    fn eval_size(&self, sizes: &Sizes) -> Result<i64, SizeExprError> {
        use crate::ir::Expr;
        let int = |e: &Expr| e.eval_size(sizes);
        match self {
            Expr::Const(v) => v
                .as_i64()
                .filter(|_| !v.dtype().is_float())
                .ok_or_else(|| SizeExprError::Unsupported(self.to_string())),
            Expr::Size(name) | Expr::Param(name, _) => sizes
                .get(name)
                .copied()
                .ok_or_else(|| SizeExprError::Unbound(name.clone())),
            Expr::Neg(a) => checked_int_binary(BinOp::Sub, 0, int(a)?, self.dtype()),
            Expr::Not(a) => Ok((int(a)? == 0) as i64),
            Expr::Binary(op, a, b) => checked_int_binary(*op, int(a)?, int(b)?, self.dtype()),
            Expr::Select(c, t, f) => int(if int(c)? != 0 { t } else { f }),
            Expr::Cast(to, a) => checked_int_cast(int(a)?, *to),
            Expr::Intrinsic(f, args) => {
                let values = args.iter().map(int).collect::<Result<Vec<i64>, _>>()?;
                checked_int_intrinsic(*f, &values, self.dtype())
            }
            _ => Err(SizeExprError::Unsupported(self.to_string())),
        }
    }
}

impl crate::ir::Pipeline {
    /// The kernel's signature as the reference evaluator checks it (it checks each read of an
    /// input itself, so it lists no input regions).
    pub fn call_signature(&self) -> Signature<crate::ir::Expr> {
        use crate::ir::InputKind;
        let mut inputs = Vec::new();
        let mut scalars = Vec::new();
        for input in &self.inputs {
            match &input.kind {
                InputKind::Buffer { shape, .. } => inputs.push(BufferParam {
                    name: input.name.clone(),
                    dtype: input.dtype,
                    shape: shape.clone(),
                }),
                InputKind::Scalar => scalars.push((input.name.clone(), input.dtype)),
            }
        }
        Signature {
            inputs,
            scalars,
            output_name: self.output.name.clone(),
            output_dtype: self.output.dtype,
            output_extents: self.output.extents.clone(),
            input_regions: Vec::new(),
            output_region: Vec::new(),
            domain_bounds: self.domain_bounds(),
            conditions: Vec::new(),
        }
    }

    /// The bounds of every reduction domain that are expressions of sizes: of updates and of
    /// inline reductions. A bound that reads variables (a triangular domain's) is computed at
    /// each point of the loops around it, with index arithmetic, and is not checked here.
    pub fn domain_bounds(&self) -> Vec<crate::ir::Expr> {
        use crate::ir::Expr;
        let mut bounds = Vec::new();
        let mut visit = |e: &Expr| {
            if let Expr::Reduce(r) = e {
                r.rvars
                    .iter()
                    .for_each(|v| bounds.extend([v.lo.clone(), v.hi.clone()]));
            }
        };
        for func in &self.funcs {
            func.value.for_each(&mut visit);
            for update in &func.updates {
                update.args.iter().for_each(|a| a.for_each(&mut visit));
                update.value.for_each(&mut visit);
            }
        }
        for update in self.funcs.iter().flat_map(|f| &f.updates) {
            for v in &update.rvars {
                bounds.extend([v.lo.clone(), v.hi.clone()]);
            }
        }
        bounds.retain(|b| !b.reads_vars());
        bounds
    }
}
