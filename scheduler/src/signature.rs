//! The loop IR's side of the one checked call boundary (`strata_dsl::signature`): loop-IR
//! expressions of sizes evaluate exactly, and a [`LoweredKernel`] describes its arguments,
//! output and input regions as a `Signature`, which the interpreter and compiled kernels bind.

use crate::ir::{Expr, LoweredKernel, UnOp};
use strata_dsl::signature::{
    checked_int_binary, checked_int_cast, checked_int_intrinsic, BufferParam, SizeExpr,
    SizeExprError, Sizes,
};
use strata_dsl::{BinOp, Extent, Signature};

impl SizeExpr for Expr {
    fn eval_size(&self, sizes: &Sizes) -> Result<i64, SizeExprError> {
        let int = |e: &Expr| e.eval_size(sizes);
        let dtype = self.ty().dtype;
        match self {
            Expr::Const(v) if !v.dtype().is_float() => v
                .as_i64()
                .ok_or_else(|| SizeExprError::Unsupported(self.to_string())),
            Expr::Var(name, _) | Expr::Param(name, _) => sizes
                .get(name)
                .copied()
                .ok_or_else(|| SizeExprError::Unbound(name.clone())),
            Expr::Unary(UnOp::Neg, a) => checked_int_binary(BinOp::Sub, 0, int(a)?, dtype),
            Expr::Unary(UnOp::Not, a) => Ok((int(a)? == 0) as i64),
            Expr::Binary(op, a, b) => checked_int_binary(*op, int(a)?, int(b)?, dtype),
            Expr::Select(c, t, f) => int(if int(c)? != 0 { t } else { f }),
            Expr::Cast(to, a) => checked_int_cast(int(a)?, to.dtype),
            Expr::Intrinsic(f, args) => {
                let values = args.iter().map(int).collect::<Result<Vec<i64>, _>>()?;
                checked_int_intrinsic(*f, &values, dtype)
            }
            Expr::Let { name, value, body } => {
                let mut inner = sizes.clone();
                inner.insert(name.clone(), int(value)?);
                body.eval_size(&inner)
            }
            _ => Err(SizeExprError::Unsupported(self.to_string())),
        }
    }
}

/// An input's extent in the loop IR: a size variable or a constant, as the language declares.
fn extent_of(e: &Expr) -> Extent {
    match e {
        Expr::Const(v) => Extent::Const(v.as_i64().unwrap_or(-1)),
        Expr::Var(name, _) => Extent::Size(name.clone()),
        // Lowering copies input extents from the kernel's declaration, which has no other form;
        // an unknown name makes every call refused rather than unchecked.
        other => Extent::Size(other.to_string()),
    }
}

impl LoweredKernel {
    /// What a call of this kernel must pass, and the box of each input its code reads.
    pub fn call_signature(&self) -> Signature<Expr> {
        let inputs = self
            .inputs
            .iter()
            .map(|input| BufferParam {
                name: input.name.clone(),
                dtype: input.dtype,
                shape: input.extents.iter().map(extent_of).collect(),
            })
            .collect();
        let input_regions = self
            .input_regions
            .iter()
            .map(|(name, ranges)| {
                let region = ranges
                    .iter()
                    .map(|r| (r.min.clone(), r.extent.clone()))
                    .collect();
                (name.clone(), region)
            })
            .collect();
        let output_region = self
            .output_region
            .iter()
            .map(|ranges| {
                ranges
                    .iter()
                    .map(|r| (r.min.clone(), r.extent.clone()))
                    .collect()
            })
            .collect();
        Signature {
            inputs,
            scalars: self.params.clone(),
            output_name: self.output.name.clone(),
            output_dtype: self.output.dtype,
            output_extents: self.output.extents.clone(),
            input_regions,
            output_region,
            domain_bounds: self.domain_bounds.clone(),
            conditions: self.conditions.clone(),
        }
    }
}
