//! Untyped instruction building over inkwell's typed values. Loop IR is typed at run time
//! (a `Type` with a dtype and a lane count), inkwell at compile time (`IntValue`,
//! `FloatValue`, `VectorValue`); these helpers take and give `BasicValueEnum` and pick the
//! inkwell call that fits, so expression code reads like the scalar semantics it implements.

use super::functions::{Fail, FnGen};
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue};
use inkwell::{FloatPredicate, IntPredicate};
use strata_dsl::{Dtype, Value};
use strata_scheduler::Type as IrType;

/// Applies a binary integer-math builder method to two operands of one type (scalars or
/// vectors).
macro_rules! int_binary {
    ($gen:expr, $method:ident, $x:expr, $y:expr) => {
        match ($x, $y) {
            (inkwell::values::BasicValueEnum::IntValue(a), BasicValueEnum::IntValue(b)) => Ok(
                inkwell::values::BasicValue::as_basic_value_enum(&$gen.b.$method(a, b, "")?),
            ),
            (inkwell::values::BasicValueEnum::VectorValue(a), BasicValueEnum::VectorValue(b)) => {
                Ok(inkwell::values::BasicValue::as_basic_value_enum(
                    &$gen.b.$method(a, b, "")?,
                ))
            }
            (a, b) => Err(super::functions::Fail::types(stringify!($method), a, b)),
        }
    };
}

/// Applies a binary float-math builder method to two operands of one type.
macro_rules! float_binary {
    ($gen:expr, $method:ident, $x:expr, $y:expr) => {
        match ($x, $y) {
            (inkwell::values::BasicValueEnum::FloatValue(a), BasicValueEnum::FloatValue(b)) => Ok(
                inkwell::values::BasicValue::as_basic_value_enum(&$gen.b.$method(a, b, "")?),
            ),
            (inkwell::values::BasicValueEnum::VectorValue(a), BasicValueEnum::VectorValue(b)) => {
                Ok(inkwell::values::BasicValue::as_basic_value_enum(
                    &$gen.b.$method(a, b, "")?,
                ))
            }
            (a, b) => Err(super::functions::Fail::types(stringify!($method), a, b)),
        }
    };
}

/// Applies a conversion builder method (`value`, `target type`) to an integer operand.
macro_rules! int_convert {
    ($gen:expr, $method:ident, $x:expr, $to:expr) => {
        match ($x, $to) {
            (
                inkwell::values::BasicValueEnum::IntValue(a),
                inkwell::types::BasicTypeEnum::IntType(t),
            ) => Ok(inkwell::values::BasicValue::as_basic_value_enum(
                &$gen.b.$method(a, t, "")?,
            )),
            (
                inkwell::values::BasicValueEnum::VectorValue(a),
                inkwell::types::BasicTypeEnum::VectorType(t),
            ) => Ok(inkwell::values::BasicValue::as_basic_value_enum(
                &$gen.b.$method(a, t, "")?,
            )),
            (a, _) => Err(super::functions::Fail::types(stringify!($method), a, a)),
        }
    };
}

/// Applies a conversion builder method to a float operand.
macro_rules! float_convert {
    ($gen:expr, $method:ident, $x:expr, $to:expr) => {
        match ($x, $to) {
            (
                inkwell::values::BasicValueEnum::FloatValue(a),
                inkwell::types::BasicTypeEnum::FloatType(t),
            ) => Ok(inkwell::values::BasicValue::as_basic_value_enum(
                &$gen.b.$method(a, t, "")?,
            )),
            (
                inkwell::values::BasicValueEnum::VectorValue(a),
                inkwell::types::BasicTypeEnum::VectorType(t),
            ) => Ok(inkwell::values::BasicValue::as_basic_value_enum(
                &$gen.b.$method(a, t, "")?,
            )),
            (a, _) => Err(super::functions::Fail::types(stringify!($method), a, a)),
        }
    };
}

/// Applies an integer-to-float conversion builder method to an integer operand.
macro_rules! int_to_float {
    ($gen:expr, $method:ident, $x:expr, $to:expr) => {
        match ($x, $to) {
            (
                inkwell::values::BasicValueEnum::IntValue(a),
                inkwell::types::BasicTypeEnum::FloatType(t),
            ) => Ok(inkwell::values::BasicValue::as_basic_value_enum(
                &$gen.b.$method(a, t, "")?,
            )),
            (
                inkwell::values::BasicValueEnum::VectorValue(a),
                inkwell::types::BasicTypeEnum::VectorType(t),
            ) => Ok(inkwell::values::BasicValue::as_basic_value_enum(
                &$gen.b.$method(a, t, "")?,
            )),
            (a, _) => Err(super::functions::Fail::types(stringify!($method), a, a)),
        }
    };
}

pub(super) use {float_binary, float_convert, int_binary, int_convert, int_to_float};

type V<'ctx> = BasicValueEnum<'ctx>;

impl<'ctx> FnGen<'_, 'ctx> {
    /// The LLVM type of a loop-IR value of type `ty` in registers (`bool` is `i1`).
    pub fn value_type(&self, ty: IrType) -> BasicTypeEnum<'ctx> {
        let scalar = self.scalar_type(ty.dtype);
        if ty.lanes == 1 {
            return scalar;
        }
        let lanes = u32::from(ty.lanes);
        match scalar {
            BasicTypeEnum::IntType(t) => t.vec_type(lanes).into(),
            BasicTypeEnum::FloatType(t) => t.vec_type(lanes).into(),
            other => other,
        }
    }

    /// The LLVM type of one scalar of `dtype` in registers.
    pub fn scalar_type(&self, dtype: Dtype) -> BasicTypeEnum<'ctx> {
        let c = self.g.ctx;
        match dtype {
            Dtype::Bool => c.bool_type().into(),
            Dtype::U8 | Dtype::I8 => c.i8_type().into(),
            Dtype::U16 | Dtype::I16 => c.i16_type().into(),
            Dtype::U32 | Dtype::I32 => c.i32_type().into(),
            Dtype::I64 => c.i64_type().into(),
            Dtype::F32 => c.f32_type().into(),
            Dtype::F64 => c.f64_type().into(),
        }
    }

    /// The LLVM type of one element of `dtype` in memory (`bool` is a byte).
    pub fn memory_type(&self, dtype: Dtype) -> BasicTypeEnum<'ctx> {
        match dtype {
            Dtype::Bool => self.g.ctx.i8_type().into(),
            other => self.scalar_type(other),
        }
    }

    /// A scalar constant.
    pub fn constant(&self, v: Value) -> V<'ctx> {
        match (v, self.scalar_type(v.dtype())) {
            (Value::F32(x), BasicTypeEnum::FloatType(t)) => t.const_float(f64::from(x)).into(),
            (Value::F64(x), BasicTypeEnum::FloatType(t)) => t.const_float(x).into(),
            (Value::Bool(x), BasicTypeEnum::IntType(t)) => t.const_int(u64::from(x), false).into(),
            (other, BasicTypeEnum::IntType(t)) => t
                .const_int(other.as_i64().unwrap_or(0) as u64, false)
                .into(),
            (_, t) => t.const_zero(),
        }
    }

    /// `v` (a constant of `ty.dtype`) in every lane of `ty`.
    pub fn constant_of(&mut self, v: Value, ty: IrType) -> Result<V<'ctx>, Fail> {
        let scalar = self.constant(v.cast(ty.dtype));
        self.splat(scalar, ty.lanes)
    }

    /// `x` repeated in `lanes` lanes (`x` itself for one lane).
    pub fn splat(&mut self, x: V<'ctx>, lanes: u16) -> Result<V<'ctx>, Fail> {
        if lanes == 1 || x.is_vector_value() {
            return Ok(x);
        }
        let n = u32::from(lanes);
        let vty = match x.get_type() {
            BasicTypeEnum::IntType(t) => t.vec_type(n),
            BasicTypeEnum::FloatType(t) => t.vec_type(n),
            _ => return Err(Fail::msg("splat of a non-scalar")),
        };
        let zero = self.g.ctx.i32_type().const_zero();
        let one_lane = self.b.build_insert_element(vty.get_undef(), x, zero, "")?;
        let mask = self.g.ctx.i32_type().vec_type(n).const_zero();
        Ok(self
            .b
            .build_shuffle_vector(one_lane, vty.get_undef(), mask, "")?
            .into())
    }

    /// Lane `i` of vector `v`.
    pub fn lane(&mut self, v: V<'ctx>, i: u32) -> Result<V<'ctx>, Fail> {
        let index = self.g.ctx.i32_type().const_int(u64::from(i), false);
        match v {
            BasicValueEnum::VectorValue(v) => Ok(self.b.build_extract_element(v, index, "")?),
            other => Err(Fail::types("extractelement", other, other)),
        }
    }

    /// A vector of `lanes` built from scalars.
    pub fn pack(&mut self, lanes: Vec<V<'ctx>>, ty: IrType) -> Result<V<'ctx>, Fail> {
        if lanes.len() == 1 {
            return Ok(lanes[0]);
        }
        let vty = self.value_type(ty).into_vector_type();
        let mut v = vty.get_undef();
        for (i, x) in lanes.into_iter().enumerate() {
            let index = self.g.ctx.i32_type().const_int(i as u64, false);
            v = self.b.build_insert_element(v, x, index, "")?;
        }
        Ok(v.into())
    }

    /// Every lane of `v` (of type `ty`) as a scalar.
    pub fn unpack(&mut self, v: V<'ctx>, ty: IrType) -> Result<Vec<V<'ctx>>, Fail> {
        if ty.lanes == 1 {
            return Ok(vec![v]);
        }
        (0..u32::from(ty.lanes)).map(|i| self.lane(v, i)).collect()
    }

    /// `cond ? t : f`; `cond` is `i1` or a vector of `i1` with `t`'s lanes.
    pub fn select(&mut self, cond: V<'ctx>, t: V<'ctx>, f: V<'ctx>) -> Result<V<'ctx>, Fail> {
        Ok(match cond {
            BasicValueEnum::IntValue(c) => self.b.build_select(c, t, f, "")?,
            BasicValueEnum::VectorValue(c) => self.b.build_select(c, t, f, "")?,
            other => return Err(Fail::types("select", other, t)),
        })
    }

    /// An integer comparison of two operands of one type.
    pub fn icmp(&mut self, p: IntPredicate, x: V<'ctx>, y: V<'ctx>) -> Result<V<'ctx>, Fail> {
        match (x, y) {
            (BasicValueEnum::IntValue(a), BasicValueEnum::IntValue(b)) => {
                Ok(self.b.build_int_compare(p, a, b, "")?.into())
            }
            (BasicValueEnum::VectorValue(a), BasicValueEnum::VectorValue(b)) => {
                Ok(self.b.build_int_compare(p, a, b, "")?.into())
            }
            (a, b) => Err(Fail::types("icmp", a, b)),
        }
    }

    /// A float comparison of two operands of one type.
    pub fn fcmp(&mut self, p: FloatPredicate, x: V<'ctx>, y: V<'ctx>) -> Result<V<'ctx>, Fail> {
        match (x, y) {
            (BasicValueEnum::FloatValue(a), BasicValueEnum::FloatValue(b)) => {
                Ok(self.b.build_float_compare(p, a, b, "")?.into())
            }
            (BasicValueEnum::VectorValue(a), BasicValueEnum::VectorValue(b)) => {
                Ok(self.b.build_float_compare(p, a, b, "")?.into())
            }
            (a, b) => Err(Fail::types("fcmp", a, b)),
        }
    }

    /// Calls the LLVM intrinsic `name` overloaded on `types` with `args`.
    pub fn intrinsic(
        &mut self,
        name: &str,
        types: &[BasicTypeEnum<'ctx>],
        args: &[V<'ctx>],
    ) -> Result<V<'ctx>, Fail> {
        let intrinsic = inkwell::intrinsics::Intrinsic::find(name)
            .ok_or_else(|| Fail::msg(&format!("no LLVM intrinsic `{name}`")))?;
        let function = intrinsic
            .get_declaration(&self.g.module, types)
            .ok_or_else(|| Fail::msg(&format!("cannot declare `{name}`")))?;
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        let call = self.b.build_call(function, &args, "")?;
        call.try_as_basic_value()
            .basic()
            .ok_or_else(|| Fail::msg(&format!("`{name}` returned nothing")))
    }

    /// A unary float intrinsic (`llvm.floor`, `llvm.sqrt`, ...) on a scalar or vector.
    pub fn float_unary(&mut self, name: &str, x: V<'ctx>) -> Result<V<'ctx>, Fail> {
        self.intrinsic(name, &[x.get_type()], &[x])
    }

    /// `x >> k` with zeros shifted in, lane-wise.
    pub fn shift_right_logical(&mut self, x: V<'ctx>, k: V<'ctx>) -> Result<V<'ctx>, Fail> {
        self.shift_right(x, k, false)
    }

    /// `x >> k` with the sign shifted in, lane-wise.
    pub fn shift_right_arithmetic(&mut self, x: V<'ctx>, k: V<'ctx>) -> Result<V<'ctx>, Fail> {
        self.shift_right(x, k, true)
    }

    fn shift_right(&mut self, x: V<'ctx>, k: V<'ctx>, sign: bool) -> Result<V<'ctx>, Fail> {
        match (x, k) {
            (BasicValueEnum::IntValue(a), BasicValueEnum::IntValue(b)) => {
                Ok(self.b.build_right_shift(a, b, sign, "")?.into())
            }
            (BasicValueEnum::VectorValue(a), BasicValueEnum::VectorValue(b)) => {
                Ok(self.b.build_right_shift(a, b, sign, "")?.into())
            }
            (a, b) => Err(Fail::types("shift right", a, b)),
        }
    }

    /// `x` sign-extended to `i64` (an element index).
    pub fn index64(&mut self, x: V<'ctx>) -> Result<IntValue<'ctx>, Fail> {
        let x = super::functions::int(x)?;
        let i64_type = self.g.ctx.i64_type();
        if x.get_type().get_bit_width() == 64 {
            return Ok(x);
        }
        Ok(self.b.build_int_s_extend(x, i64_type, "")?)
    }
}
