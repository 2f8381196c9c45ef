//! Statements: loops, lets, conditionals, storage and stores. A parallel loop's body becomes a
//! function the runtime calls on chunks of the range, with a context holding every value in
//! scope.

use super::functions::{int, pointer, Fail, FnGen};
use crate::emit::EmitStmt;
use inkwell::module::Linkage;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, IntValue, PointerValue};
use inkwell::IntPredicate;
use strata_dsl::{BinOp, Dtype};
use strata_scheduler::{Expr, Stmt, Type as IrType};

/// Allocations of at most this many bytes with a constant size live on the stack (as in the
/// Cranelift backend).
const STACK_ALLOCATION_LIMIT: i64 = 16 * 1024;

/// A cap above every count one buffer may hold (2^31 - 1): capping partial products here keeps
/// the next product inside `i64` (see `cranelift/alloc.rs`).
const ELEMENT_CAP: i64 = 1 << 31;

impl<'ctx> FnGen<'_, 'ctx> {
    pub fn stmt(&mut self, s: &Stmt) -> Result<(), Fail> {
        crate::emit::emit(self, s)
    }

    fn serial_for(
        &mut self,
        var: &str,
        min: &Expr,
        extent: &Expr,
        body: &Stmt,
    ) -> Result<(), Fail> {
        let lo = int(self.expr(min)?)?;
        let n = int(self.expr(extent)?)?;
        let hi = self.b.build_int_add(lo, n, "")?;
        let locations = self.promotable(var, body);
        if locations.is_empty() {
            return self.counted_loop(var, lo, hi, body);
        }
        // Promoted values are read before the first iteration, so only when there is one.
        let runs = self.b.build_int_compare(IntPredicate::SLT, lo, hi, "")?;
        let promoted = self.g.ctx.append_basic_block(self.function, "promoted");
        let skip = self.g.ctx.append_basic_block(self.function, "skip");
        self.b.build_conditional_branch(runs, promoted, skip)?;
        self.b.position_at_end(promoted);
        let depth = self.promoted.len();
        self.promote(locations)?;
        self.counted_loop(var, lo, hi, body)?;
        self.write_back(depth)?;
        self.b.build_unconditional_branch(skip)?;
        self.b.position_at_end(skip);
        Ok(())
    }

    /// `for var in lo..hi { body }`, the test at the top. The increment is `nsw`: it runs
    /// only when `i < hi <= i32::MAX`, so it cannot wrap, and saying so lets LLVM widen the
    /// counter to 64 bits for addressing.
    pub fn counted_loop(
        &mut self,
        var: &str,
        lo: IntValue<'ctx>,
        hi: IntValue<'ctx>,
        body: &Stmt,
    ) -> Result<(), Fail> {
        let before = self.current_block()?;
        let header = self.g.ctx.append_basic_block(self.function, "loop");
        let body_block = self.g.ctx.append_basic_block(self.function, "body");
        let exit = self.g.ctx.append_basic_block(self.function, "exit");
        self.b.build_unconditional_branch(header)?;
        self.b.position_at_end(header);
        let i = self.b.build_phi(self.g.ctx.i32_type(), var)?;
        let i_value = int(i.as_basic_value())?;
        let done = self
            .b
            .build_int_compare(IntPredicate::SGE, i_value, hi, "")?;
        self.b.build_conditional_branch(done, exit, body_block)?;
        self.b.position_at_end(body_block);
        self.env
            .vars
            .push((var.to_string(), i_value.into(), IrType::I32));
        self.stmt(body)?;
        self.env.vars.pop();
        let one = self.g.ctx.i32_type().const_int(1, false);
        let next = self.b.build_int_nsw_add(i_value, one, "")?;
        let latch = self.current_block()?;
        self.b.build_unconditional_branch(header)?;
        i.add_incoming(&[(&lo, before), (&next, latch)]);
        self.b.position_at_end(exit);
        Ok(())
    }

    fn current_block(&self) -> Result<inkwell::basic_block::BasicBlock<'ctx>, Fail> {
        self.b
            .get_insert_block()
            .ok_or_else(|| Fail::msg("the builder is not in a block"))
    }

    fn if_then_else(
        &mut self,
        cond: &Expr,
        then_case: &Stmt,
        else_case: Option<&Stmt>,
    ) -> Result<(), Fail> {
        let c = int(self.expr(cond)?)?;
        let then_block = self.g.ctx.append_basic_block(self.function, "then");
        let else_block = self.g.ctx.append_basic_block(self.function, "else");
        let join = self.g.ctx.append_basic_block(self.function, "join");
        self.b.build_conditional_branch(c, then_block, else_block)?;
        for (block, branch) in [(then_block, Some(then_case)), (else_block, else_case)] {
            self.b.position_at_end(block);
            if let Some(s) = branch {
                self.stmt(s)?;
            }
            self.b.build_unconditional_branch(join)?;
        }
        self.b.position_at_end(join);
        Ok(())
    }

    fn store(&mut self, buffer: &str, index: &Expr, value: &Expr) -> Result<(), Fail> {
        let ty = value.ty();
        let lanes = index.ty().lanes;
        let v = self.expr(value)?;
        let v = self.splat(v, lanes)?;
        if let Some(slot) = self.promoted_slot(buffer, index) {
            self.b.build_store(slot, v)?;
            return Ok(());
        }
        let base = self.env.buffer(buffer)?;
        let v = self.memory_form(v, ty.with_lanes(lanes))?;
        if lanes == 1 {
            let at = self.element_pointer(base, index, ty.dtype)?;
            return self.store_value(at, v, ty.dtype);
        }
        if let Some(start) = super::expr::dense_start(index) {
            let at = self.element_pointer(base, start, ty.dtype)?;
            return self.store_value(at, v, ty.dtype);
        }
        let indices = self.expr(index)?;
        let index_lanes = self.unpack(indices, index.ty())?;
        for (k, i) in index_lanes.into_iter().enumerate() {
            let x = self.lane(v, k as u32)?;
            let at = self.element_pointer_at(base, i, ty.dtype)?;
            self.store_value(at, x, ty.dtype)?;
        }
        Ok(())
    }

    /// Stores `v` (in memory form) at `at`, aligned only to its element.
    pub fn store_value(
        &mut self,
        at: PointerValue<'ctx>,
        v: BasicValueEnum<'ctx>,
        dtype: Dtype,
    ) -> Result<(), Fail> {
        let store = self.b.build_store(at, v)?;
        store
            .set_alignment(dtype.bytes() as u32)
            .map_err(|e| Fail(e.to_string()))
    }

    /// Storage for `body`: on the stack when small and constant, else from the runtime (freed
    /// after `body`; the IR has no early exits, so that is every path).
    fn allocate(
        &mut self,
        buffer: &str,
        dtype: Dtype,
        size: &Expr,
        body: &Stmt,
    ) -> Result<(), Fail> {
        let elem = dtype.bytes() as i64;
        let memory_type = self.memory_type(dtype);
        if let Some(n) = size.as_int().filter(|n| n * elem <= STACK_ALLOCATION_LIMIT) {
            let ptr = self.alloca(memory_type, n.max(1) as u32, 64)?;
            return self.with_buffer(buffer, ptr, body);
        }
        let n = self.element_count(size)?;
        let i64_type = self.g.ctx.i64_type();
        let elem_bytes = i64_type.const_int(elem as u64, false);
        let ptr_ty: BasicTypeEnum = self.ptr_type().into();
        let malloc = self.runtime(
            "strata_malloc_elements",
            &[i64_type.into(), i64_type.into()],
            Some(ptr_ty),
        );
        let call = self
            .b
            .build_call(malloc, &[n.into(), elem_bytes.into()], "")?;
        let ptr = call
            .try_as_basic_value()
            .basic()
            .ok_or_else(|| Fail::msg("strata_malloc_elements returned nothing"))
            .and_then(pointer)?;
        self.with_buffer(buffer, ptr, body)?;
        let bytes = self.b.build_int_mul(n, elem_bytes, "")?;
        let free = self.runtime("strata_free", &[ptr_ty, i64_type.into()], None);
        self.b.build_call(free, &[ptr.into(), bytes.into()], "")?;
        Ok(())
    }

    fn with_buffer(
        &mut self,
        name: &str,
        ptr: PointerValue<'ctx>,
        body: &Stmt,
    ) -> Result<(), Fail> {
        self.env.buffers.push((name.to_string(), ptr));
        let result = self.stmt(body);
        self.env.buffers.pop();
        result
    }

    /// `size` as an `i64` element count, its products taken without wrapping (capped at
    /// `ELEMENT_CAP`); any other form is its `i32` value, sign-extended.
    fn element_count(&mut self, size: &Expr) -> Result<IntValue<'ctx>, Fail> {
        if let Expr::Binary(BinOp::Mul, a, b) = size {
            let a = self.element_count(a)?;
            let b = self.element_count(b)?;
            let product = self.b.build_int_mul(a, b, "")?;
            let cap = self.g.ctx.i64_type().const_int(ELEMENT_CAP as u64, false);
            let less = self
                .b
                .build_int_compare(IntPredicate::SLT, product, cap, "")?;
            return int(self.b.build_select(less, product, cap, "")?);
        }
        let n = self.expr(size)?;
        self.index64(n)
    }

    /// A `produce` block between the runtime's profiling calls (`crate::profile`).
    fn profiled(&mut self, func: &str, body: &Stmt) -> Result<(), Fail> {
        let functions = self.g.profile.as_deref().unwrap_or_default();
        let id = crate::profile::id_of(functions, func);
        let i32_ty = self.g.ctx.i32_type();
        let id = i32_ty.const_int(id as u32 as u64, true);
        let state = (self.env.profile)
            .ok_or_else(|| Fail::msg("a profiled block without profiling counters"))?;
        let params = [self.ptr_type().into(), i32_ty.into()];
        let enter = self.runtime("strata_profile_enter", &params, None);
        self.b.build_call(enter, &[state.into(), id.into()], "")?;
        self.stmt(body)?;
        let exit = self.runtime("strata_profile_exit", &params, None);
        self.b.build_call(exit, &[state.into(), id.into()], "")?;
        Ok(())
    }

    /// A parallel loop: the body becomes a function of `(ctx, lo, hi)` reading every value in
    /// scope back from a stack context, called through `strata_parallel_for`.
    fn parallel_for(
        &mut self,
        var: &str,
        min: &Expr,
        extent: &Expr,
        body: &Stmt,
    ) -> Result<(), Fail> {
        let lo = int(self.expr(min)?)?;
        let n = int(self.expr(extent)?)?;
        let captured = self.env.clone();
        let values = captured.values();
        let types: Vec<BasicTypeEnum> = values.iter().map(|v| v.get_type()).collect();
        let context_type = self.g.ctx.struct_type(&types, false);
        let ctx = self.alloca(context_type.into(), 1, 16)?;
        for (k, v) in values.iter().enumerate() {
            let field = self.b.build_struct_gep(context_type, ctx, k as u32, "")?;
            self.b.build_store(field, *v)?;
        }
        let body_fn = self.define_parallel_body(var, body, &captured, context_type)?;
        let ptr_ty: BasicTypeEnum = self.ptr_type().into();
        let i32_ty: BasicTypeEnum = self.g.ctx.i32_type().into();
        let run = self.runtime(
            "strata_parallel_for",
            &[ptr_ty, ptr_ty, i32_ty, i32_ty, i32_ty, ptr_ty],
            None,
        );
        let threads = captured
            .threads
            .unwrap_or_else(|| self.g.ctx.i32_type().const_int(1, false));
        let profile = (captured.profile).unwrap_or_else(|| self.ptr_type().const_null());
        let args: [BasicMetadataValueEnum; 6] = [
            body_fn.as_global_value().as_pointer_value().into(),
            ctx.into(),
            lo.into(),
            n.into(),
            threads.into(),
            profile.into(),
        ];
        self.b.build_call(run, &args, "")?;
        Ok(())
    }

    /// Defines `body(ctx, lo, hi)`: reads the scope back from the context and runs `var` over
    /// `lo..hi` in an inner function.
    fn define_parallel_body(
        &mut self,
        var: &str,
        body: &Stmt,
        captured: &super::functions::Env<'ctx>,
        context_type: inkwell::types::StructType<'ctx>,
    ) -> Result<inkwell::values::FunctionValue<'ctx>, Fail> {
        self.g.count += 1;
        let name = format!("parallel_{}", self.g.count);
        let ptr_ty: BasicTypeEnum = self.ptr_type().into();
        let i32_ty: BasicTypeEnum = self.g.ctx.i32_type().into();
        let function =
            FnGen::new_function(self.g, &name, &[ptr_ty, i32_ty, i32_ty], Linkage::Internal);
        let params: Vec<BasicValueEnum> = function.get_param_iter().collect();
        let ctx = pointer(params[0])?;
        let (lo, hi) = (int(params[1])?, int(params[2])?);
        let mut gen = FnGen::start(self.g, function);
        let mut values = Vec::new();
        for (k, field_type) in context_type.get_field_types().into_iter().enumerate() {
            let field = gen.b.build_struct_gep(context_type, ctx, k as u32, "")?;
            values.push(gen.b.build_load(field_type, field, "")?);
        }
        let env = captured.rebind(&values)?;
        gen.call_inner(&env, &[lo, hi], |inner, range| {
            inner.counted_loop(var, range[0], range[1], body)
        })?;
        gen.finish()?;
        Ok(function)
    }
}

impl<'ctx> EmitStmt for FnGen<'_, 'ctx> {
    type Error = Fail;

    fn emit_serial_for(&mut self, var: &str, min: &Expr, extent: &Expr, body: &Stmt) -> Emitted {
        self.serial_for(var, min, extent, body)
    }

    fn emit_parallel_for(&mut self, var: &str, min: &Expr, extent: &Expr, body: &Stmt) -> Emitted {
        self.parallel_for(var, min, extent, body)
    }

    fn emit_let(&mut self, name: &str, value: &Expr, body: &Stmt) -> Emitted {
        let v = self.expr(value)?;
        self.push_let(name, value, v);
        self.stmt(body)?;
        self.pop_let();
        Ok(())
    }

    fn emit_if(&mut self, cond: &Expr, then_case: &Stmt, else_case: Option<&Stmt>) -> Emitted {
        self.if_then_else(cond, then_case, else_case)
    }

    fn emit_allocate(&mut self, buffer: &str, dtype: Dtype, size: &Expr, body: &Stmt) -> Emitted {
        self.allocate(buffer, dtype, size, body)
    }

    fn emit_store(&mut self, buffer: &str, index: &Expr, value: &Expr) -> Emitted {
        self.store(buffer, index, value)
    }

    fn profiling(&self) -> bool {
        self.g.profile.is_some()
    }

    fn emit_profiled(&mut self, func: &str, body: &Stmt) -> Emitted {
        self.profiled(func, body)
    }
}

type Emitted = Result<(), Fail>;
