//! Expressions: loop-IR `Expr` to LLVM values, vectors at the width the schedule gave them.
//! Scalar semantics as in `cranelift/scalar.rs` (../../dsl/src/value.rs): wrapping integers,
//! Euclidean division and modulo with division by zero giving 0, `min(a, b)` as
//! `a < b ? a : b`, casts as Rust's `as`.

use super::functions::{Fail, FnGen};
use super::ops::{float_binary, float_convert, int_binary, int_convert, int_to_float};
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicValue, BasicValueEnum, PointerValue};
use inkwell::{FloatPredicate, IntPredicate};
use strata_dsl::{BinOp, Dtype, Intrinsic, Value};
use strata_scheduler::ir::{ReduceOp, UnOp};
use strata_scheduler::{Expr, Type as IrType};

type V<'ctx> = BasicValueEnum<'ctx>;

/// The first index of a contiguous `ramp(base, 1, n)`, if `index` is one.
pub fn dense_start(index: &Expr) -> Option<&Expr> {
    match index {
        Expr::Ramp { base, stride, .. } if stride.as_int() == Some(1) => Some(base),
        _ => None,
    }
}

impl<'ctx> FnGen<'_, 'ctx> {
    pub fn expr(&mut self, e: &Expr) -> Result<V<'ctx>, Fail> {
        let ty = e.ty();
        match e {
            Expr::Const(v) => Ok(self.constant(*v)),
            Expr::Var(name, _) => self.env.var(name),
            Expr::Param(name, _) => self.env.param(name),
            Expr::Load { buffer, index, ty } => self.load(buffer, index, *ty),
            Expr::Unary(op, a) => {
                let x = self.expr(a)?;
                self.unary(*op, x, ty)
            }
            Expr::Binary(op, a, b) => self.binary(*op, a, b, ty),
            Expr::Select(c, t, f) => {
                let (c, t, f) = (self.expr(c)?, self.expr(t)?, self.expr(f)?);
                self.select(c, t, f)
            }
            Expr::Cast(to, a) => {
                let x = self.expr(a)?;
                self.cast(x, a.ty(), *to)
            }
            Expr::Intrinsic(f, args) => self.intrinsic_call(*f, args, ty),
            Expr::Ramp {
                base,
                stride,
                lanes,
            } => self.ramp(base, stride, *lanes, ty),
            Expr::Broadcast { value, lanes } => {
                let x = self.expr(value)?;
                self.splat(x, *lanes)
            }
            Expr::Let { name, value, body } => {
                let v = self.expr(value)?;
                self.push_let(name, value, v);
                let result = self.expr(body);
                self.pop_let();
                result
            }
            Expr::Call { func, .. } => Err(Fail(format!(
                "a call of `{func}` reached code generation unflattened"
            ))),
            Expr::VectorReduce { op, value } => self.vector_reduce(*op, value),
        }
    }

    fn unary(&mut self, op: UnOp, x: V<'ctx>, ty: IrType) -> Result<V<'ctx>, Fail> {
        match op {
            UnOp::Neg if ty.dtype.is_float() => match x {
                BasicValueEnum::FloatValue(a) => Ok(self.b.build_float_neg(a, "")?.into()),
                BasicValueEnum::VectorValue(a) => Ok(self.b.build_float_neg(a, "")?.into()),
                other => Err(Fail::types("fneg", other, other)),
            },
            UnOp::Neg => {
                let zero = self.constant_of(Value::I64(0), ty)?;
                int_binary!(self, build_int_sub, zero, x)
            }
            UnOp::Not => {
                let one = self.constant_of(Value::Bool(true), ty)?;
                int_binary!(self, build_xor, x, one)
            }
        }
    }

    /// A value loaded from memory (`bool` as a byte) in register form (`bool` as `i1`).
    pub fn register_form(&mut self, v: V<'ctx>, ty: IrType) -> Result<V<'ctx>, Fail> {
        if ty.dtype != Dtype::Bool {
            return Ok(v);
        }
        let zero = self.constant_of(Value::U8(0), retype(ty, Dtype::U8))?;
        self.icmp(IntPredicate::NE, v, zero)
    }

    /// A value in register form as it is stored (`bool` as a byte, 0 or 1).
    pub fn memory_form(&mut self, v: V<'ctx>, ty: IrType) -> Result<V<'ctx>, Fail> {
        if ty.dtype != Dtype::Bool {
            return Ok(v);
        }
        let to = self.value_type(retype(ty, Dtype::U8));
        int_convert!(self, build_int_z_extend, v, to)
    }

    /// The address of element `index` (an `i32` expression) of a buffer of `dtype`.
    pub fn element_pointer(
        &mut self,
        base: PointerValue<'ctx>,
        index: &Expr,
        dtype: Dtype,
    ) -> Result<PointerValue<'ctx>, Fail> {
        let i = self.expr(index)?;
        self.element_pointer_at(base, i, dtype)
    }

    /// The address of element `i` (an `i32` value) of a buffer of `dtype`.
    pub fn element_pointer_at(
        &mut self,
        base: PointerValue<'ctx>,
        i: V<'ctx>,
        dtype: Dtype,
    ) -> Result<PointerValue<'ctx>, Fail> {
        let wide = self.index64(i)?;
        let elem = self.memory_type(dtype);
        // SAFETY (of the IR): the call boundary checked every index the kernel computes lies
        // inside its buffer.
        Ok(unsafe { self.b.build_in_bounds_gep(elem, base, &[wide], "")? })
    }

    fn load(&mut self, buffer: &str, index: &Expr, ty: IrType) -> Result<V<'ctx>, Fail> {
        if let Some(slot) = self.promoted_slot(buffer, index) {
            return Ok(self.b.build_load(self.value_type(ty), slot, "")?);
        }
        let base = self.env.buffer(buffer)?;
        if ty.lanes == 1 {
            let at = self.element_pointer(base, index, ty.dtype)?;
            return self.load_value(at, ty);
        }
        if let Some(start) = dense_start(index) {
            let at = self.element_pointer(base, start, ty.dtype)?;
            return self.load_value(at, ty);
        }
        let indices = self.expr(index)?;
        let lanes = self.unpack(indices, index.ty())?;
        let mut values = Vec::with_capacity(lanes.len());
        for i in lanes {
            let at = self.element_pointer_at(base, i, ty.dtype)?;
            values.push(self.load_value(at, ty.with_lanes(1))?);
        }
        self.pack(values, ty)
    }

    /// `ty.lanes` contiguous elements from `at`, aligned only to the element.
    pub fn load_value(&mut self, at: PointerValue<'ctx>, ty: IrType) -> Result<V<'ctx>, Fail> {
        let memory = retype(
            ty,
            if ty.dtype == Dtype::Bool {
                Dtype::U8
            } else {
                ty.dtype
            },
        );
        let load_type = self.value_type(memory);
        let v = self.b.build_load(load_type, at, "")?;
        if let Some(inst) = v.as_instruction_value() {
            inst.set_alignment(ty.dtype.bytes() as u32)
                .map_err(|e| Fail(e.to_string()))?;
        }
        self.register_form(v, ty)
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, ty: IrType) -> Result<V<'ctx>, Fail> {
        if let Some(fused) = self.fused_multiply_add(op, a, b)? {
            return Ok(fused);
        }
        let (x, y) = (self.expr(a)?, self.expr(b)?);
        let dtype = a.ty().dtype;
        if op.is_comparison() {
            return self.compare(op, x, y, dtype);
        }
        let float = dtype.is_float();
        match op {
            BinOp::Add if float => float_binary!(self, build_float_add, x, y),
            BinOp::Sub if float => float_binary!(self, build_float_sub, x, y),
            BinOp::Mul if float => float_binary!(self, build_float_mul, x, y),
            BinOp::Div if float => float_binary!(self, build_float_div, x, y),
            BinOp::Mod if float => self.float_mod(x, y),
            BinOp::Add => int_binary!(self, build_int_add, x, y),
            BinOp::Sub => int_binary!(self, build_int_sub, x, y),
            BinOp::Mul => int_binary!(self, build_int_mul, x, y),
            BinOp::Div | BinOp::Mod if dtype.is_signed_int() => {
                self.signed_div_mod(op, x, y, retype(ty, dtype))
            }
            BinOp::Div | BinOp::Mod => self.unsigned_div_mod(op, x, y, retype(ty, dtype)),
            BinOp::And => int_binary!(self, build_and, x, y),
            BinOp::Or => int_binary!(self, build_or, x, y),
            _ => Ok(x),
        }
    }

    /// `a * b + c` on floats as `llvm.fmuladd` (fused where the host has FMA, as the
    /// Cranelift backend does; the stated float tolerance covers the single rounding).
    fn fused_multiply_add(
        &mut self,
        op: BinOp,
        a: &Expr,
        b: &Expr,
    ) -> Result<Option<V<'ctx>>, Fail> {
        if op != BinOp::Add || !a.ty().dtype.is_float() {
            return Ok(None);
        }
        let (product, addend) = match (a, b) {
            (Expr::Binary(BinOp::Mul, x, y), c) => ((x, y), c),
            (c, Expr::Binary(BinOp::Mul, x, y)) => ((x, y), c),
            _ => return Ok(None),
        };
        let x = self.expr(product.0)?;
        let y = self.expr(product.1)?;
        let c = self.expr(addend)?;
        let t = x.get_type();
        Ok(Some(self.intrinsic("llvm.fmuladd", &[t], &[x, y, c])?))
    }

    fn compare(
        &mut self,
        op: BinOp,
        x: V<'ctx>,
        y: V<'ctx>,
        dtype: Dtype,
    ) -> Result<V<'ctx>, Fail> {
        if dtype.is_float() {
            let p = match op {
                BinOp::Eq => FloatPredicate::OEQ,
                BinOp::Ne => FloatPredicate::UNE,
                BinOp::Lt => FloatPredicate::OLT,
                BinOp::Le => FloatPredicate::OLE,
                BinOp::Gt => FloatPredicate::OGT,
                _ => FloatPredicate::OGE,
            };
            return self.fcmp(p, x, y);
        }
        let signed = dtype.is_signed_int();
        let p = match (op, signed) {
            (BinOp::Eq, _) => IntPredicate::EQ,
            (BinOp::Ne, _) => IntPredicate::NE,
            (BinOp::Lt, true) => IntPredicate::SLT,
            (BinOp::Le, true) => IntPredicate::SLE,
            (BinOp::Gt, true) => IntPredicate::SGT,
            (BinOp::Ge, true) => IntPredicate::SGE,
            (BinOp::Lt, false) => IntPredicate::ULT,
            (BinOp::Le, false) => IntPredicate::ULE,
            (BinOp::Gt, false) => IntPredicate::UGT,
            _ => IntPredicate::UGE,
        };
        self.icmp(p, x, y)
    }

    /// `a - b * floor(a / b)`.
    fn float_mod(&mut self, x: V<'ctx>, y: V<'ctx>) -> Result<V<'ctx>, Fail> {
        let q = float_binary!(self, build_float_div, x, y)?;
        let q = self.float_unary("llvm.floor", q)?;
        let p = float_binary!(self, build_float_mul, y, q)?;
        float_binary!(self, build_float_sub, x, p)
    }

    /// Euclidean `/` or `%` of signed integers: `b == 0` gives 0, `MIN / -1` wraps, and no
    /// instruction can trap or be undefined (the divisor is replaced by 1 where the real one
    /// would).
    fn signed_div_mod(
        &mut self,
        op: BinOp,
        x: V<'ctx>,
        y: V<'ctx>,
        ty: IrType,
    ) -> Result<V<'ctx>, Fail> {
        let zero = self.constant_of(Value::I64(0), ty)?;
        let one = self.constant_of(Value::I64(1), ty)?;
        let minus_one = self.constant_of(Value::I64(-1), ty)?;
        let is_zero = self.icmp(IntPredicate::EQ, y, zero)?;
        let is_minus_one = self.icmp(IntPredicate::EQ, y, minus_one)?;
        let unsafe_divisor = int_binary!(self, build_or, is_zero, is_minus_one)?;
        let d = self.select(unsafe_divisor, one, y)?;
        let q = int_binary!(self, build_int_signed_div, x, d)?;
        let r = int_binary!(self, build_int_signed_rem, x, d)?;
        // Euclidean: a negative remainder moves up by |b|, the quotient down by sign(b).
        let negative = self.icmp(IntPredicate::SLT, r, zero)?;
        let positive_divisor = self.icmp(IntPredicate::SGT, d, zero)?;
        let step = self.select(positive_divisor, one, minus_one)?;
        let step = self.select(negative, step, zero)?;
        let (result, minus_one_case) = if op == BinOp::Div {
            let negated = int_binary!(self, build_int_sub, zero, x)?;
            (int_binary!(self, build_int_sub, q, step)?, negated)
        } else {
            let magnitude = self.abs(d, ty)?;
            let adjust = self.select(negative, magnitude, zero)?;
            (int_binary!(self, build_int_add, r, adjust)?, zero)
        };
        let result = self.select(is_minus_one, minus_one_case, result)?;
        self.select(is_zero, zero, result)
    }

    fn unsigned_div_mod(
        &mut self,
        op: BinOp,
        x: V<'ctx>,
        y: V<'ctx>,
        ty: IrType,
    ) -> Result<V<'ctx>, Fail> {
        let zero = self.constant_of(Value::I64(0), ty)?;
        let one = self.constant_of(Value::I64(1), ty)?;
        let is_zero = self.icmp(IntPredicate::EQ, y, zero)?;
        let d = self.select(is_zero, one, y)?;
        let result = if op == BinOp::Div {
            int_binary!(self, build_int_unsigned_div, x, d)?
        } else {
            int_binary!(self, build_int_unsigned_rem, x, d)?
        };
        self.select(is_zero, zero, result)
    }

    /// Converts between any two types with Rust's `as` semantics (float to integer
    /// saturates, NaN gives 0; `bool` is unsigned; anything to `bool` is `!= 0`).
    fn cast(&mut self, x: V<'ctx>, from: IrType, to: IrType) -> Result<V<'ctx>, Fail> {
        let (fd, td) = (from.dtype, to.dtype);
        if fd == td {
            return Ok(x);
        }
        if td == Dtype::Bool {
            return self.is_nonzero(x, from);
        }
        let target = self.value_type(to);
        match (fd.is_float(), td.is_float()) {
            (true, true) if td == Dtype::F64 => float_convert!(self, build_float_ext, x, target),
            (true, true) => float_convert!(self, build_float_trunc, x, target),
            (false, true) if fd.is_signed_int() => {
                int_to_float!(self, build_signed_int_to_float, x, target)
            }
            (false, true) => int_to_float!(self, build_unsigned_int_to_float, x, target),
            (true, false) => {
                let name = if td.is_signed_int() {
                    "llvm.fptosi.sat"
                } else {
                    "llvm.fptoui.sat"
                };
                self.intrinsic(name, &[target, x.get_type()], &[x])
            }
            (false, false) => self.int_to_int(x, fd, td, target),
        }
    }

    fn is_nonzero(&mut self, x: V<'ctx>, from: IrType) -> Result<V<'ctx>, Fail> {
        let zero = self.constant_of(Value::I64(0), from)?;
        if from.dtype.is_float() {
            self.fcmp(FloatPredicate::UNE, x, zero)
        } else {
            self.icmp(IntPredicate::NE, x, zero)
        }
    }

    /// Wrapping integer conversion: truncate, or extend by the source's signedness.
    fn int_to_int(
        &mut self,
        x: V<'ctx>,
        from: Dtype,
        to: Dtype,
        target: BasicTypeEnum<'ctx>,
    ) -> Result<V<'ctx>, Fail> {
        let bits = |d: Dtype| if d == Dtype::Bool { 1 } else { d.bytes() * 8 };
        if bits(from) == bits(to) {
            return Ok(x); // u32 <-> i32 and friends share their bits
        }
        if bits(from) > bits(to) {
            int_convert!(self, build_int_truncate, x, target)
        } else if from.is_signed_int() {
            int_convert!(self, build_int_s_extend, x, target)
        } else {
            int_convert!(self, build_int_z_extend, x, target)
        }
    }

    fn intrinsic_call(&mut self, f: Intrinsic, args: &[Expr], ty: IrType) -> Result<V<'ctx>, Fail> {
        let values = args
            .iter()
            .map(|a| self.expr(a))
            .collect::<Result<Vec<_>, _>>()?;
        let dtype = ty.dtype;
        match f {
            Intrinsic::Min => self.min_max(true, values[0], values[1], dtype),
            Intrinsic::Max => self.min_max(false, values[0], values[1], dtype),
            Intrinsic::Clamp => {
                let low = self.min_max(false, values[0], values[1], dtype)?;
                self.min_max(true, low, values[2], dtype)
            }
            Intrinsic::Abs => self.abs(values[0], ty),
            Intrinsic::Floor => self.float_unary("llvm.floor", values[0]),
            Intrinsic::Ceil => self.float_unary("llvm.ceil", values[0]),
            Intrinsic::Round => self.float_unary("llvm.roundeven", values[0]),
            Intrinsic::Sqrt => self.float_unary("llvm.sqrt", values[0]),
            Intrinsic::Exp if polynomial_math(ty) => self.exp_f32(values[0], ty),
            Intrinsic::Log if polynomial_math(ty) => self.log_f32(values[0], ty),
            Intrinsic::FastExp => self.fast_exp(values[0], ty.lanes),
            Intrinsic::FastLog => self.fast_log(values[0], ty.lanes),
            Intrinsic::FastPow => self.fast_pow(values[0], values[1], ty.lanes),
            _ => self.math_call(f, &values, args, ty),
        }
    }

    /// The language's `min` or `max`, on scalars or vectors: `a < b ? a : b` (`a > b ? a :
    /// b`) on integers and bools; on floats `llvm.minimum`/`llvm.maximum`, IEEE 754-2019's
    /// (NaN wins, `-0.0 < +0.0`), as `strata_dsl::Value::min`.
    fn min_max(
        &mut self,
        is_min: bool,
        x: V<'ctx>,
        y: V<'ctx>,
        dtype: Dtype,
    ) -> Result<V<'ctx>, Fail> {
        if dtype.is_float() {
            let name = if is_min {
                "llvm.minimum"
            } else {
                "llvm.maximum"
            };
            return self.intrinsic(name, &[x.get_type()], &[x, y]);
        }
        let op = if is_min { BinOp::Lt } else { BinOp::Gt };
        let pick_x = self.compare(op, x, y, dtype)?;
        self.select(pick_x, x, y)
    }

    /// `abs`, keeping the type (the most negative integer wraps to itself).
    fn abs(&mut self, x: V<'ctx>, ty: IrType) -> Result<V<'ctx>, Fail> {
        if ty.dtype.is_float() {
            return self.float_unary("llvm.fabs", x);
        }
        if !ty.dtype.is_signed_int() {
            return Ok(x);
        }
        let zero = self.constant_of(Value::I64(0), ty)?;
        let negative = self.icmp(IntPredicate::SLT, x, zero)?;
        let negated = int_binary!(self, build_int_sub, zero, x)?;
        self.select(negative, negated, x)
    }

    /// A math function without an instruction: the runtime's scalar function, lane by lane.
    fn math_call(
        &mut self,
        f: Intrinsic,
        values: &[V<'ctx>],
        args: &[Expr],
        ty: IrType,
    ) -> Result<V<'ctx>, Fail> {
        let name = math_symbol(f, ty.dtype)
            .ok_or_else(|| Fail(format!("no code for `{}` on {}", f.name(), ty.dtype)))?;
        let scalar = self.scalar_type(ty.dtype);
        let function = self.runtime(name, &vec![scalar; values.len()], Some(scalar));
        let lanes: Vec<Vec<V<'ctx>>> = values
            .iter()
            .zip(args)
            .map(|(&v, a)| self.unpack(v, a.ty()))
            .collect::<Result<_, _>>()?;
        let mut out = Vec::with_capacity(usize::from(ty.lanes));
        for i in 0..usize::from(ty.lanes) {
            let call_args: Vec<inkwell::values::BasicMetadataValueEnum> =
                lanes.iter().map(|l| l[i].into()).collect();
            let call = self.b.build_call(function, &call_args, "")?;
            out.push(
                call.try_as_basic_value()
                    .basic()
                    .ok_or_else(|| Fail(format!("`{name}` returned nothing")))?,
            );
        }
        self.pack(out, ty)
    }

    /// `base + stride * [0, 1, ..., lanes - 1]`, wrapping as the scalar arithmetic does.
    fn ramp(
        &mut self,
        base: &Expr,
        stride: &Expr,
        lanes: u16,
        ty: IrType,
    ) -> Result<V<'ctx>, Fail> {
        let base = self.expr(base)?;
        let stride = self.expr(stride)?;
        let base = self.splat(base, lanes)?;
        let stride = self.splat(stride, lanes)?;
        let steps: Vec<V<'ctx>> = (0..i64::from(lanes))
            .map(|i| self.constant(Value::I64(i).cast(ty.dtype)))
            .collect();
        let steps = self.constant_vector(steps)?;
        if ty.dtype.is_float() {
            let offsets = float_binary!(self, build_float_mul, stride, steps)?;
            float_binary!(self, build_float_add, base, offsets)
        } else {
            let offsets = int_binary!(self, build_int_mul, stride, steps)?;
            int_binary!(self, build_int_add, base, offsets)
        }
    }

    /// A constant vector of scalar constants.
    fn constant_vector(&mut self, lanes: Vec<V<'ctx>>) -> Result<V<'ctx>, Fail> {
        Ok(inkwell::types::VectorType::const_vector(&lanes).into())
    }

    /// The lanes of a vector folded into one scalar, first lane first, with the scalar
    /// operations (so the same semantics as the interpreter).
    fn vector_reduce(&mut self, op: ReduceOp, value: &Expr) -> Result<V<'ctx>, Fail> {
        let ty = value.ty();
        let dtype = ty.dtype;
        let v = self.expr(value)?;
        let lanes = self.unpack(v, ty)?;
        let mut acc = lanes[0];
        for &x in &lanes[1..] {
            acc = match op {
                ReduceOp::Min => self.min_max(true, acc, x, dtype)?,
                ReduceOp::Max => self.min_max(false, acc, x, dtype)?,
                ReduceOp::Add if dtype.is_float() => float_binary!(self, build_float_add, acc, x)?,
                ReduceOp::Mul if dtype.is_float() => float_binary!(self, build_float_mul, acc, x)?,
                ReduceOp::Add => int_binary!(self, build_int_add, acc, x)?,
                ReduceOp::Mul => int_binary!(self, build_int_mul, acc, x)?,
            };
        }
        Ok(acc)
    }
}

/// Whether `exp`/`log` of `ty` use the inline polynomial rather than libm lane by lane: for
/// f32 vectors of whole 128-bit pieces, exactly where the Cranelift backend does, so both
/// backends give the same bits.
fn polynomial_math(ty: IrType) -> bool {
    ty.dtype == Dtype::F32 && ty.is_vector() && ty.lanes.is_multiple_of(4)
}

/// The runtime symbol for a math function without an instruction.
fn math_symbol(f: Intrinsic, dtype: Dtype) -> Option<&'static str> {
    let f32 = dtype == Dtype::F32;
    let pick = |a: &'static str, b: &'static str| Some(if f32 { a } else { b });
    match f {
        Intrinsic::Exp => pick("strata_expf", "strata_exp"),
        Intrinsic::Log => pick("strata_logf", "strata_log"),
        Intrinsic::Pow => pick("strata_powf", "strata_pow"),
        Intrinsic::Sin => pick("strata_sinf", "strata_sin"),
        Intrinsic::Cos => pick("strata_cosf", "strata_cos"),
        Intrinsic::Tanh => pick("strata_tanhf", "strata_tanh"),
        _ => None,
    }
}

/// `ty` with its element type replaced.
fn retype(ty: IrType, dtype: Dtype) -> IrType {
    IrType { dtype, ..ty }
}
