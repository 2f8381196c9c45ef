//! Storage: `Allocate` as a stack slot when small and constant, else the runtime's heap. The
//! element count is computed without wrapping: a producer's region can hold more elements than
//! any input or output (a stencil's border), and an `i32` product that wrapped would allocate
//! a small buffer that the body then writes past. Products are taken in `i64`, each partial
//! product capped just past the most one buffer may hold, and the runtime aborts with a
//! message, instead of allocating, when the count passes that limit.

use super::FnCodegen;
use cranelift_codegen::ir::{types, InstBuilder, StackSlotData, StackSlotKind, Value};
use strata_dsl::{BinOp, Dtype};
use strata_scheduler::{Expr, Stmt};

/// Allocations of at most this many bytes with a constant size live on the stack.
const STACK_ALLOCATION_LIMIT: i64 = 16 * 1024;

/// A cap above every count one buffer may hold (2^31 - 1): capping partial products here keeps
/// the next product (at most 2^31 x 2^31) inside `i64`.
const ELEMENT_CAP: i64 = 1 << 31;

impl FnCodegen<'_, '_, '_> {
    /// Storage for `body`, freed after it (the IR has no early exits, so that is every path).
    pub(super) fn allocate(&mut self, buffer: &str, dtype: Dtype, size: &Expr, body: &Stmt) {
        let elem = dtype.bytes() as i64;
        if let Some(n) = size.as_int().filter(|n| n * elem <= STACK_ALLOCATION_LIMIT) {
            let bytes = (n.max(1) * elem) as u32;
            let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                bytes,
                6,
            ));
            let ptr = self.b.ins().stack_addr(self.comp.pointer(), slot, 0);
            self.with_buffer(buffer, ptr, body);
            return;
        }
        let n = self.element_count(size);
        let elem_bytes = self.b.ins().iconst(types::I64, elem);
        let ptr_ty = self.comp.pointer();
        let malloc = self.runtime_ref(
            "strata_malloc_elements",
            &[types::I64, types::I64],
            &[ptr_ty],
        );
        let call = self.b.ins().call(malloc, &[n, elem_bytes]);
        let ptr = self.b.inst_results(call)[0];
        self.with_buffer(buffer, ptr, body);
        let bytes = self.b.ins().imul_imm_s(n, elem);
        let free = self.runtime_ref("strata_free", &[ptr_ty, types::I64], &[]);
        self.b.ins().call(free, &[ptr, bytes]);
    }

    /// `size` as an `i64` element count, its products taken without wrapping (capped at
    /// `ELEMENT_CAP`); any other form is its `i32` value, sign-extended.
    fn element_count(&mut self, size: &Expr) -> Value {
        if let Expr::Binary(BinOp::Mul, a, b) = size {
            let a = self.element_count(a);
            let b = self.element_count(b);
            let product = self.b.ins().imul(a, b);
            let cap = self.b.ins().iconst(types::I64, ELEMENT_CAP);
            return self.b.ins().smin(product, cap);
        }
        let n = self.expr(size).scalar();
        if self.b.func.dfg.value_type(n) == types::I64 {
            n
        } else {
            self.b.ins().sextend(types::I64, n)
        }
    }
}
