//! Expressions: loop-IR `Expr` to Cranelift values. Vectors are handled piece by piece with
//! native 128-bit instructions where the operation exists for that type, and lane by lane
//! otherwise (integer division, comparisons, casts between lane widths, calls).

use super::scalar;
use super::values::{layout, pack, scalar_type, splat, unpack, CVal, Layout};
use super::FnCodegen;
use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, Value};
use strata_dsl::{BinOp, Dtype, Intrinsic};
use strata_scheduler::ir::UnOp;
use strata_scheduler::{Expr, Type as IrType};

/// Flags for every buffer access: buffers are checked before the call, so accesses never trap;
/// nothing is claimed about alignment.
pub fn mem_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

impl FnCodegen<'_, '_, '_> {
    pub fn expr(&mut self, e: &Expr) -> CVal {
        let ty = e.ty();
        match e {
            Expr::Const(v) => CVal::Scalar(self.constant(*v)),
            Expr::Var(name, _) => self.env.var(name),
            Expr::Param(name, _) => CVal::Scalar(self.env.param(name)),
            Expr::Load { buffer, index, ty } => self.load(buffer, index, *ty),
            Expr::Unary(op, a) => {
                let a_val = self.expr(a);
                self.lanewise(ty, &[(a_val, a.ty())], &mut |b, l| match op {
                    UnOp::Neg if ty.dtype.is_float() => b.ins().fneg(l[0]),
                    UnOp::Neg => b.ins().ineg(l[0]),
                    UnOp::Not => b.ins().bxor_imm_s(l[0], 1),
                })
            }
            Expr::Binary(op, a, b) => self.binary(*op, a, b, ty),
            Expr::Select(c, t, f) => self.select(c, t, f, ty),
            Expr::Cast(to, a) => self.cast(a, *to),
            Expr::Intrinsic(f, args) => self.intrinsic(*f, args, ty),
            Expr::Ramp {
                base,
                stride,
                lanes,
            } => self.ramp(base, stride, *lanes, ty),
            Expr::Broadcast { value, .. } => {
                let x = self.expr(value).scalar();
                splat(&mut self.b, x, ty)
            }
            Expr::Let { name, value, body } => {
                let v = self.expr(value);
                self.push_let(name, value, v);
                let result = self.expr(body);
                self.pop_let();
                result
            }
            Expr::Call { .. } => CVal::Scalar(self.b.ins().iconst(types::I32, 0)),
            Expr::VectorReduce { op, value } => self.vector_reduce(*op, value),
        }
    }

    fn constant(&mut self, v: strata_dsl::Value) -> Value {
        use strata_dsl::Value as V;
        let ty = scalar_type(v.dtype());
        match v {
            V::F32(x) => self.b.ins().f32const(x),
            V::F64(x) => self.b.ins().f64const(x),
            other => scalar::iconst(&mut self.b, ty, other.as_i64().unwrap_or(0)),
        }
    }

    /// Applies `f` to operands of types `ops`, giving type `ty`: on each native piece when all
    /// operands and the result share one native layout and `native` allows it, else lane by
    /// lane on scalars.
    fn lanewise(
        &mut self,
        ty: IrType,
        ops: &[(CVal, IrType)],
        f: &mut dyn FnMut(&mut cranelift_frontend::FunctionBuilder, &[Value]) -> Value,
    ) -> CVal {
        self.lanewise_with(ty, ops, true, f)
    }

    fn lanewise_with(
        &mut self,
        ty: IrType,
        ops: &[(CVal, IrType)],
        native: bool,
        f: &mut dyn FnMut(&mut cranelift_frontend::FunctionBuilder, &[Value]) -> Value,
    ) -> CVal {
        if ty.lanes == 1 {
            let scalars: Vec<Value> = ops.iter().map(|(v, _)| v.scalar()).collect();
            return CVal::Scalar(f(&mut self.b, &scalars));
        }
        let same_layout = ops.iter().all(|(_, t)| layout(*t) == layout(ty));
        if native && same_layout && matches!(layout(ty), Layout::Native { .. }) {
            let pieces = ops[0].0.pieces().len();
            let out = (0..pieces)
                .map(|i| {
                    let args: Vec<Value> = ops.iter().map(|(v, _)| v.pieces()[i]).collect();
                    f(&mut self.b, &args)
                })
                .collect();
            return CVal::Pieces(out);
        }
        let lanes: Vec<Vec<Value>> = ops
            .iter()
            .map(|(v, t)| unpack(&mut self.b, v, *t))
            .collect();
        let out = (0..ty.lanes as usize)
            .map(|i| {
                let args: Vec<Value> = lanes.iter().map(|l| l[i]).collect();
                f(&mut self.b, &args)
            })
            .collect();
        pack(&mut self.b, out, ty)
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, ty: IrType) -> CVal {
        let operand = a.ty();
        if let Some(fused) = self.fused_multiply_add(op, a, b, ty) {
            return fused;
        }
        if let Some(d) = constant_u32_divisor(op, a, b, ty) {
            let through_f32 = self.divides_through_f32(a, d);
            if through_f32 || magic_u32(d).is_some() {
                let x = self.expr(a);
                let divide = if through_f32 {
                    divide_small_u32x4_by_constant
                } else {
                    divide_u32x4_by_constant
                };
                return CVal::Pieces(
                    x.pieces()
                        .iter()
                        .map(|&p| divide(&mut self.b, p, d))
                        .collect(),
                );
            }
        }
        let (x, y) = (self.expr(a), self.expr(b));
        let dtype = operand.dtype;
        // Integer division, float modulo, comparisons and byte multiplication (x64 has no
        // vector instruction for them) run lane by lane.
        let native = match op {
            BinOp::Add | BinOp::Sub => true,
            BinOp::Mul => dtype.is_float() || matches!(dtype.bytes(), 2 | 4),
            BinOp::Div => dtype.is_float(),
            _ => false,
        };
        self.lanewise_with(ty, &[(x, operand), (y, b.ty())], native, &mut |bld, l| {
            scalar::binary(bld, op, l[0], l[1], dtype)
        })
    }

    /// Whether `a / d` (native u32 vectors; x64 has no vector integer division) can go through
    /// f32: `a`'s form bounds it by 2^22. Otherwise multiply and shift, when a 32-bit magic
    /// number exists, or lane by lane.
    fn divides_through_f32(&self, a: &Expr, d: u32) -> bool {
        // `x86_cvtt2dq` (a truncating conversion without saturation) exists only on x86.
        cfg!(target_arch = "x86_64")
            && d <= 1 << 16
            && super::range::unsigned_bound(a, &self.lets)
                .is_some_and(|bound| bound <= SMALL_DIVIDEND_BOUND)
    }

    /// `a * b + c` on floats as one fused multiply-add when the host has it (the stated float
    /// tolerance covers the single rounding).
    fn fused_multiply_add(&mut self, op: BinOp, a: &Expr, b: &Expr, ty: IrType) -> Option<CVal> {
        if op != BinOp::Add || !ty.dtype.is_float() || !self.comp.has_fma {
            return None;
        }
        let (product, addend) = match (a, b) {
            (Expr::Binary(BinOp::Mul, x, y), c) => ((x, y), c),
            (c, Expr::Binary(BinOp::Mul, x, y)) => ((x, y), c),
            _ => return None,
        };
        let ops = [
            (self.expr(product.0), ty),
            (self.expr(product.1), ty),
            (self.expr(addend), ty),
        ];
        Some(self.lanewise(ty, &ops, &mut |bld, l| bld.ins().fma(l[0], l[1], l[2])))
    }

    fn select(&mut self, c: &Expr, t: &Expr, f: &Expr, ty: IrType) -> CVal {
        let (cv, tv, fv) = (self.expr(c), self.expr(t), self.expr(f));
        if c.ty().lanes == 1 && ty.lanes > 1 {
            // One condition for every lane: pick whole pieces.
            let cond = cv.scalar();
            let pieces = tv
                .pieces()
                .iter()
                .zip(fv.pieces())
                .map(|(&x, &y)| self.b.ins().select(cond, x, y))
                .collect();
            return CVal::Pieces(pieces);
        }
        let ops = [(cv, c.ty()), (tv, ty), (fv, ty)];
        self.lanewise_with(ty, &ops, false, &mut |bld, l| {
            bld.ins().select(l[0], l[1], l[2])
        })
    }

    fn cast(&mut self, a: &Expr, to: IrType) -> CVal {
        let from = a.ty();
        if let Some(widened) = self.widening_load(a, to) {
            return widened;
        }
        let v = self.expr(a);
        if from.dtype == to.dtype {
            return v;
        }
        let same_bits = scalar_type(from.dtype) == scalar_type(to.dtype)
            && from.dtype != Dtype::Bool
            && to.dtype != Dtype::Bool;
        if same_bits {
            return v; // u32 <-> i32 and friends share their bits
        }
        if let Some(widened) = self.widen_natively(&v, from, to) {
            return widened;
        }
        // Only an unsigned source narrowed to an integer can be proved to fit.
        let fits = from.dtype.is_unsigned_int()
            && to.dtype.is_int()
            && to.dtype.bytes() < from.dtype.bytes()
            && super::range::unsigned_bound(a, &self.lets)
                .is_some_and(|bound| bound <= to.dtype.int_range().map_or(0, |r| r.1) as u64);
        if let Some(narrowed) = super::narrow::narrow_natively(&mut self.b, &v, from, to, fits) {
            return narrowed;
        }
        let (fd, td) = (from.dtype, to.dtype);
        if let (Layout::Native { .. }, Layout::Native { .. }) = (layout(from), layout(to)) {
            let convert: Option<fn(&mut cranelift_frontend::FunctionBuilder, Value) -> Value> =
                match (fd, td) {
                    (Dtype::I32, Dtype::F32) => {
                        Some(|bld, x| bld.ins().fcvt_from_sint(types::F32X4, x))
                    }
                    (Dtype::F32, Dtype::I32) => {
                        Some(|bld, x| bld.ins().fcvt_to_sint_sat(types::I32X4, x))
                    }
                    _ => None,
                };
            if let Some(convert) = convert {
                return CVal::Pieces(
                    v.pieces()
                        .iter()
                        .map(|&p| convert(&mut self.b, p))
                        .collect(),
                );
            }
        }
        self.lanewise_with(to, &[(v, from)], false, &mut |bld, l| {
            scalar::cast(bld, l[0], fd, td)
        })
    }

    /// A dense vector load cast to integers twice as wide, as widening loads (`pmovzxwd` and
    /// friends from memory: one instruction per piece instead of a load and two widenings).
    fn widening_load(&mut self, a: &Expr, to: IrType) -> Option<CVal> {
        let Expr::Load { buffer, index, ty } = a else {
            return None;
        };
        let (Layout::Native { .. }, Layout::Native { pieces, .. }) = (layout(*ty), layout(to))
        else {
            return None;
        };
        let (from, bytes) = (ty.dtype, ty.dtype.bytes());
        if !from.is_int() || !to.dtype.is_int() || to.dtype.bytes() != 2 * bytes {
            return None;
        }
        let start = dense_start(index)?;
        if self.promoted_location(buffer, index).is_some() {
            return None;
        }
        let flags = self.load_flags(buffer, index);
        let base = self.env.buffer(buffer);
        let (addr, offset) = self.element_address(base, start, from);
        let signed = from.is_signed_int();
        // Each piece of the result holds 8 bytes of the source.
        let load = |b: &mut cranelift_frontend::FunctionBuilder, at: i32| match (bytes, signed) {
            (1, false) => b.ins().uload8x8(flags, addr, at),
            (1, true) => b.ins().sload8x8(flags, addr, at),
            (2, false) => b.ins().uload16x4(flags, addr, at),
            (2, true) => b.ins().sload16x4(flags, addr, at),
            (_, false) => b.ins().uload32x2(flags, addr, at),
            (_, true) => b.ins().sload32x2(flags, addr, at),
        };
        Some(CVal::Pieces(
            (0..pieces as i32)
                .map(|p| load(&mut self.b, offset + p * 8))
                .collect(),
        ))
    }

    /// `u16 -> u32`, `i16 -> i32`, `u8 -> u16`, `i8 -> i16` (and on to 32 bits) with the
    /// widening instructions, when both sides are native vectors.
    fn widen_natively(&mut self, v: &CVal, from: IrType, to: IrType) -> Option<CVal> {
        let (Layout::Native { .. }, Layout::Native { .. }) = (layout(from), layout(to)) else {
            return None;
        };
        if !from.dtype.is_int() || !to.dtype.is_int() || to.dtype.bytes() != 2 * from.dtype.bytes()
        {
            return None;
        }
        let signed = from.dtype.is_signed_int();
        let mut out = Vec::new();
        for &piece in v.pieces() {
            let (lo, hi) = if signed {
                (
                    self.b.ins().swiden_low(piece),
                    self.b.ins().swiden_high(piece),
                )
            } else {
                (
                    self.b.ins().uwiden_low(piece),
                    self.b.ins().uwiden_high(piece),
                )
            };
            out.push(lo);
            out.push(hi);
        }
        Some(CVal::Pieces(out))
    }

    fn intrinsic(&mut self, f: Intrinsic, args: &[Expr], ty: IrType) -> CVal {
        let dtype = ty.dtype;
        if f.needs_f32() {
            return self.fast_math(f, args, ty);
        }
        if let Some(name) = math_symbol(f, dtype) {
            // f32x4 exp and log stay in vector registers (within 1 ulp of the scalar functions).
            let vector: Option<fn(&mut cranelift_frontend::FunctionBuilder, Value) -> Value> =
                match f {
                    Intrinsic::Exp => Some(crate::vmath::exp_f32x4),
                    Intrinsic::Log => Some(crate::vmath::log_f32x4),
                    _ => None,
                };
            if let (Some(vector), Dtype::F32, Layout::Native { .. }) = (vector, dtype, layout(ty)) {
                let x = self.expr(&args[0]);
                return CVal::Pieces(x.pieces().iter().map(|&p| vector(&mut self.b, p)).collect());
            }
            let vals: Vec<(CVal, IrType)> = args.iter().map(|a| (self.expr(a), a.ty())).collect();
            let func = self.math_ref(name, dtype, args.len());
            return self.lanewise_with(ty, &vals, false, &mut |bld, l| {
                let call = bld.ins().call(func, l);
                bld.inst_results(call)[0]
            });
        }
        let vals: Vec<(CVal, IrType)> = args.iter().map(|a| (self.expr(a), a.ty())).collect();
        let native = !(dtype.is_int() && dtype.bytes() == 8);
        self.lanewise_with(ty, &vals, native, &mut |bld, l| match f {
            Intrinsic::Min => scalar::min_max(bld, true, l[0], l[1], dtype),
            Intrinsic::Max => scalar::min_max(bld, false, l[0], l[1], dtype),
            Intrinsic::Clamp => {
                let low = scalar::min_max(bld, false, l[0], l[1], dtype);
                scalar::min_max(bld, true, low, l[2], dtype)
            }
            Intrinsic::Abs => scalar::abs(bld, l[0], dtype),
            Intrinsic::Floor => bld.ins().floor(l[0]),
            Intrinsic::Ceil => bld.ins().ceil(l[0]),
            Intrinsic::Round => bld.ins().nearest(l[0]),
            Intrinsic::Sqrt => bld.ins().sqrt(l[0]),
            _ => l[0],
        })
    }

    /// `fast_exp`, `fast_log`, `fast_pow`: inline on every f32x4 piece, or on every lane
    /// of a vector without native pieces, or on the scalar (`crate::fast_math`, the same
    /// operations as the reference's `strata_dsl::fast_math`, so the results are bit for bit
    /// the reference's).
    fn fast_math(&mut self, f: Intrinsic, args: &[Expr], ty: IrType) -> CVal {
        let vals: Vec<(CVal, IrType)> = args.iter().map(|a| (self.expr(a), a.ty())).collect();
        self.lanewise(ty, &vals, &mut |bld, l| match (f, l) {
            (Intrinsic::FastExp, &[x]) => crate::fast_math::fast_exp(bld, x),
            (Intrinsic::FastLog, &[x]) => crate::fast_math::fast_log(bld, x),
            (Intrinsic::FastPow, &[x, y]) => crate::fast_math::fast_pow(bld, x, y),
            // Not reached: the checker gives each function its arity.
            _ => l[0],
        })
    }

    fn ramp(&mut self, base: &Expr, stride: &Expr, lanes: u16, ty: IrType) -> CVal {
        let base = self.expr(base).scalar();
        let stride = self.expr(stride).scalar();
        let dtype = ty.dtype;
        let lane_values: Vec<Value> = (0..lanes as i64)
            .map(|i| {
                let k = self.constant(strata_dsl::Value::I64(i).cast(dtype));
                let step = scalar::binary(&mut self.b, BinOp::Mul, stride, k, dtype);
                scalar::binary(&mut self.b, BinOp::Add, base, step, dtype)
            })
            .collect();
        pack(&mut self.b, lane_values, ty)
    }

    /// The address of element `index` (an `i32`) of a buffer of `dtype`.
    pub fn address(&mut self, base: Value, index: Value, dtype: Dtype) -> Value {
        let wide = self.b.ins().sextend(types::I64, index);
        let offset = self.b.ins().imul_imm_s(wide, dtype.bytes() as i64);
        self.b.ins().iadd(base, offset)
    }

    fn load(&mut self, buffer: &str, index: &Expr, ty: IrType) -> CVal {
        if let Some(vars) = self.promoted_location(buffer, index) {
            let pieces: Vec<Value> = vars.iter().map(|v| self.b.use_var(*v)).collect();
            return if ty.lanes == 1 {
                CVal::Scalar(pieces[0])
            } else {
                CVal::Pieces(pieces)
            };
        }
        let base = self.env.buffer(buffer);
        let flags = self.load_flags(buffer, index);
        let elem = scalar_type(ty.dtype);
        if ty.lanes == 1 {
            let (addr, offset) = self.element_address(base, index, ty.dtype);
            return CVal::Scalar(self.b.ins().load(elem, flags, addr, offset));
        }
        if let Some(start) = dense_start(index) {
            let (addr, offset) = self.element_address(base, start, ty.dtype);
            return self.load_dense(addr, offset, ty, flags);
        }
        let indices = self.expr(index);
        let lanes = unpack(&mut self.b, &indices, index.ty());
        let values = lanes
            .into_iter()
            .map(|i| {
                let addr = self.address(base, i, ty.dtype);
                self.b.ins().load(elem, flags, addr, 0)
            })
            .collect();
        pack(&mut self.b, values, ty)
    }

    /// Flags for loads of `buffer[index]`. Inputs are never written by the kernel. An input
    /// load may also move: every index it can compute from the enclosing loops' variables lies
    /// in the region bounds inference required and the call checked (regions do not shrink for
    /// empty inner loops), so Cranelift may hoist it out of loops or sink it into its user (a
    /// broadcast or an fma operand) and schedule it next to its use. Under an `if` that holds
    /// only while the load is in bounds, the load must not rise above the `if`: it may move
    /// only when its index depends on a loop counter bound inside the innermost `if`, which
    /// pins it there.
    pub fn load_flags(&self, buffer: &str, index: &Expr) -> MemFlagsData {
        if !self.env.is_read_only(buffer) {
            return mem_flags();
        }
        let movable = match self.env.condition_scope {
            None => true,
            Some(scope) => self.depends_on_counter_inside(index, scope),
        };
        if movable {
            mem_flags().with_readonly().with_can_move()
        } else {
            mem_flags().with_readonly()
        }
    }

    /// Whether `index` (lets substituted) uses a loop counter among the variables bound after
    /// the first `scope`: a block parameter of a loop header, which no load using it can rise
    /// above. (Unrolled loops bind constants, which pin nothing.)
    fn depends_on_counter_inside(&self, index: &Expr, scope: usize) -> bool {
        let expanded = crate::promote::expand(index, &self.lets);
        let mut pinned = false;
        expanded.for_each(&mut |e| {
            if let Expr::Var(name, _) = e {
                pinned |= self.env.var_depth(name) > scope && self.is_loop_counter(name);
            }
        });
        pinned
    }

    fn is_loop_counter(&self, name: &str) -> bool {
        match self.env.var(name) {
            CVal::Scalar(v) => matches!(
                self.b.func.dfg.value_def(v),
                cranelift_codegen::ir::ValueDef::Param(..)
            ),
            CVal::Pieces(_) => false,
        }
    }

    /// `ty.lanes` contiguous elements from `addr + offset`.
    pub fn load_dense(
        &mut self,
        addr: Value,
        offset: i32,
        ty: IrType,
        flags: MemFlagsData,
    ) -> CVal {
        let bytes = ty.dtype.bytes() as i32;
        match layout(ty) {
            Layout::Native { pieces, vector, .. } => CVal::Pieces(
                (0..pieces)
                    .map(|p| {
                        self.b
                            .ins()
                            .load(vector, flags, addr, offset + p as i32 * 16)
                    })
                    .collect(),
            ),
            _ => {
                let elem = scalar_type(ty.dtype);
                CVal::Pieces(
                    (0..ty.lanes as i32)
                        .map(|i| self.b.ins().load(elem, flags, addr, offset + i * bytes))
                        .collect(),
                )
            }
        }
    }
}

/// The first index of a contiguous `ramp(base, 1, n)`, if `index` is one.
pub fn dense_start(index: &Expr) -> Option<&Expr> {
    match index {
        Expr::Ramp { base, stride, .. } if stride.as_int() == Some(1) => Some(base),
        _ => None,
    }
}

/// `d` when `a / b` divides native u32 vectors by a constant `d >= 2`.
fn constant_u32_divisor(op: BinOp, a: &Expr, b: &Expr, ty: IrType) -> Option<u32> {
    if op != BinOp::Div
        || ty.dtype != Dtype::U32
        || !matches!(layout(ty), Layout::Native { .. })
        || a.ty() != ty
    {
        return None;
    }
    let constant = match b {
        Expr::Broadcast { value, .. } => value.as_ref(),
        other => other,
    };
    match constant {
        Expr::Const(strata_dsl::Value::U32(d)) if *d >= 2 => Some(*d),
        _ => None,
    }
}

/// `(m, k)` with `floor(x / d) == (x * m) >> k` for every u32 `x`, and `x * m` fitting in u64:
/// `m = ceil(2^k / d)` with the error `m * d - 2^k` at most `2^(k - 32)`.
pub fn magic_u32(d: u32) -> Option<(u64, u32)> {
    let d = d as u128;
    (32..64u32).find_map(|k| {
        let m = (1u128 << k).div_ceil(d);
        let exact = m * d - (1u128 << k) <= 1u128 << (k - 32);
        (exact && m < (1u128 << 32)).then_some((m as u64, k))
    })
}

/// The largest dividend `divide_small_u32x4_by_constant` is exact for.
const SMALL_DIVIDEND_BOUND: u64 = 1 << 22;

/// The least f32 at or above `1 / d` (`d <= 2^16`, so the f64 product below is exact).
pub fn reciprocal_rounded_up(d: u32) -> f32 {
    let r = 1.0 / d as f32;
    if (r as f64) * (d as f64) < 1.0 {
        f32::from_bits(r.to_bits() + 1)
    } else {
        r
    }
}

/// `x / d` for four u32 lanes at most 2^22 (and `d <= 2^16`), in three instructions through
/// f32: `trunc(x * r)` with `r` the reciprocal rounded up. Exact: `x * r >= x / d`, and
/// rounding to nearest cannot fall below the integer quotient `q`; above, the two roundings
/// add less than `x / d * 2^-22 <= 1 / d`, so the product stays under `q + 1` (x = q d + s,
/// s < d). `x` converts exactly (below 2^24) and the quotient fits an i32.
fn divide_small_u32x4_by_constant(
    b: &mut cranelift_frontend::FunctionBuilder,
    x: Value,
    d: u32,
) -> Value {
    let r = b.ins().f32const(reciprocal_rounded_up(d));
    let r = b.ins().splat(types::F32X4, r);
    let xf = b.ins().fcvt_from_sint(types::F32X4, x);
    let q = b.ins().fmul(xf, r);
    b.ins().x86_cvtt2dq(types::I32X4, q)
}

/// `x / d` for the four u32 lanes of `x`: widen to u64 lanes, multiply by the magic number,
/// shift, and keep the low 32 bits of each lane.
fn divide_u32x4_by_constant(
    b: &mut cranelift_frontend::FunctionBuilder,
    x: Value,
    d: u32,
) -> Value {
    let Some((m, k)) = magic_u32(d) else { return x };
    // Both factors as widened u32 lanes: x64 then multiplies with `pmuludq` (32 x 32 -> 64
    // bits) instead of a full 64-bit lane multiply.
    // A vector constant rather than a splat: Cranelift rewrites `uwiden_low(splat(c))` to a
    // splat of a 64-bit constant, which loses the pattern `pmuludq` is selected from.
    let bytes: Vec<u8> = (0..4).flat_map(|_| (m as u32).to_le_bytes()).collect();
    let handle = b.func.dfg.constants.insert(bytes.into());
    let magic = b.ins().vconst(types::I32X4, handle);
    let lo = b.ins().uwiden_low(x);
    let magic_lo = b.ins().uwiden_low(magic);
    let hi = b.ins().uwiden_high(x);
    let magic_hi = b.ins().uwiden_high(magic);
    let [lo, hi] = [(lo, magic_lo), (hi, magic_hi)].map(|(h, m)| {
        let product = b.ins().imul(h, m);
        b.ins().ushr_imm_u(product, k as i64)
    });
    let little = MemFlagsData::new().with_endianness(cranelift_codegen::ir::Endianness::Little);
    let lo = b.ins().bitcast(types::I8X16, little, lo);
    let hi = b.ins().bitcast(types::I8X16, little, hi);
    // The low 4 bytes of each 8-byte lane: bytes 0-3 and 8-11 of `lo`, then of `hi` (16+).
    let mask: Vec<u8> = vec![0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27];
    let mask = b.func.dfg.immediates.push(mask.into());
    let packed = b.ins().shuffle(lo, hi, mask);
    b.ins().bitcast(types::I32X4, little, packed)
}

/// The runtime symbol for a math function without a native instruction.
fn math_symbol(f: Intrinsic, dtype: Dtype) -> Option<&'static str> {
    let f32 = dtype == Dtype::F32;
    Some(match f {
        Intrinsic::Exp => {
            if f32 {
                "strata_expf"
            } else {
                "strata_exp"
            }
        }
        Intrinsic::Log => {
            if f32 {
                "strata_logf"
            } else {
                "strata_log"
            }
        }
        Intrinsic::Pow => {
            if f32 {
                "strata_powf"
            } else {
                "strata_pow"
            }
        }
        Intrinsic::Sin => {
            if f32 {
                "strata_sinf"
            } else {
                "strata_sin"
            }
        }
        Intrinsic::Cos => {
            if f32 {
                "strata_cosf"
            } else {
                "strata_cos"
            }
        }
        Intrinsic::Tanh => {
            if f32 {
                "strata_tanhf"
            } else {
                "strata_tanh"
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::{magic_u32, reciprocal_rounded_up, SMALL_DIVIDEND_BOUND};

    /// What `divide_small_u32x4_by_constant` computes in each lane.
    fn through_f32(x: u32, d: u32) -> u32 {
        (x as f32 * reciprocal_rounded_up(d)).trunc() as u32
    }

    /// Every dividend up to the bound for a few divisors, and for every divisor up to 2^16 the
    /// dividends where an error would show first: each side of the multiples near the bound.
    #[test]
    fn small_dividends_divide_exactly_through_f32() {
        let bound = SMALL_DIVIDEND_BOUND as u32;
        for d in [3u32, 7, 10, 65_535] {
            for x in 0..=bound {
                assert_eq!(through_f32(x, d), x / d, "{x} / {d}");
            }
        }
        for d in 2..=1u32 << 16 {
            assert!(reciprocal_rounded_up(d) as f64 * d as f64 >= 1.0, "1 / {d}");
            let top = bound / d * d;
            for q in [top, top - d, top / 2 / d * d, d, 0] {
                for x in [q.saturating_sub(1), q, q + 1, q + d - 1] {
                    let x = x.min(bound);
                    assert_eq!(through_f32(x, d), x / d, "{x} / {d}");
                }
            }
        }
    }

    #[test]
    fn magic_numbers_divide_every_u32_exactly() {
        let mut xs: Vec<u32> = vec![
            0,
            1,
            2,
            3,
            6,
            7,
            255,
            65_535,
            65_536,
            1 << 31,
            u32::MAX - 1,
            u32::MAX,
        ];
        let mut state = 0x9e37_79b9_u32;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            xs.push(state);
        }
        for d in [
            2u32,
            3,
            5,
            6,
            7,
            9,
            10,
            11,
            12,
            25,
            100,
            641,
            1000,
            65_535,
            65_537,
            1 << 20,
            u32::MAX / 3,
            u32::MAX,
        ] {
            let Some((m, k)) = magic_u32(d) else { continue };
            for &x in xs.iter().chain(&[
                d - 1,
                d,
                d.saturating_add(1),
                d.saturating_mul(2).saturating_sub(1),
            ]) {
                assert_eq!(((x as u64 * m) >> k) as u32, x / d, "{x} / {d}");
            }
        }
    }
}
