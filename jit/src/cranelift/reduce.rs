//! Horizontal reductions: the lanes of a vector folded into one scalar, first lane first, with
//! the same scalar operations (and so the same semantics) as the interpreter. Vectorized
//! reductions keep a vector accumulator in their loop and reduce it once after it, so this
//! runs outside hot loops and extracts lanes simply.

use super::scalar;
use super::values::{unpack, CVal};
use super::FnCodegen;
use strata_dsl::BinOp;
use strata_scheduler::ir::ReduceOp;
use strata_scheduler::Expr;

impl FnCodegen<'_, '_, '_> {
    pub fn vector_reduce(&mut self, op: ReduceOp, value: &Expr) -> CVal {
        let ty = value.ty();
        let dtype = ty.dtype;
        let v = self.expr(value);
        let lanes = unpack(&mut self.b, &v, ty);
        let folded = lanes
            .into_iter()
            .reduce(|acc, x| match op {
                ReduceOp::Add => scalar::binary(&mut self.b, BinOp::Add, acc, x, dtype),
                ReduceOp::Mul => scalar::binary(&mut self.b, BinOp::Mul, acc, x, dtype),
                ReduceOp::Min => scalar::min_max(&mut self.b, true, acc, x, dtype),
                ReduceOp::Max => scalar::min_max(&mut self.b, false, acc, x, dtype),
            })
            .expect("a vector has at least one lane");
        CVal::Scalar(folded)
    }
}
