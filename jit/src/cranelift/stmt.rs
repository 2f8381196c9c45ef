//! Statements: loops, lets, conditionals, storage and stores. A parallel loop's body becomes its
//! own function, called by the runtime on chunks of the range with a context holding every value
//! in scope.

use super::expr::{dense_start, mem_flags};
use super::values::{layout, splat, unpack, CVal, Layout};
use super::{Env, FnCodegen, LoopInductions};
use crate::emit::EmitStmt;
use crate::promote;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, BlockArg, InstBuilder, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::Variable;
use cranelift_module::Module;
use std::convert::Infallible;
use strata_dsl::Dtype;
use strata_scheduler::{Expr, Stmt, Type as IrType};

impl FnCodegen<'_, '_, '_> {
    pub fn stmt(&mut self, s: &Stmt) {
        let Ok(()) = crate::emit::emit(self, s);
    }

    fn serial_for(&mut self, var: &str, min: &Expr, extent: &Expr, body: &Stmt) {
        let lo = self.expr(min).scalar();
        let n = self.expr(extent).scalar();
        let hi = self.b.ins().iadd(lo, n);
        let locations = promote::promotable(var, body, &self.lets);
        if locations.is_empty() {
            self.loop_body(var, lo, hi, body);
            return;
        }
        // Promoted values are read before the first iteration, so only when there is one.
        let runs = self.b.ins().icmp(IntCC::SignedLessThan, lo, hi);
        let (promoted, skip) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(runs, promoted, &[], skip, &[]);
        self.b.switch_to_block(promoted);
        self.b.seal_block(promoted);
        let depth = self.promoted.len();
        for location in locations {
            let vars = self.read_into_variables(&location);
            self.promoted.push((location, vars));
        }
        self.loop_body(var, lo, hi, body);
        let written: Vec<_> = self.promoted.drain(depth..).collect();
        for (location, vars) in written.iter().filter(|(l, _)| l.stored) {
            self.write_back(location, vars);
        }
        self.b.ins().jump(skip, &[]);
        self.b.switch_to_block(skip);
        self.b.seal_block(skip);
    }

    fn loop_body(&mut self, var: &str, lo: Value, hi: Value, body: &Stmt) {
        let inductions = self.steps_by_induction(var, body);
        self.counted_loop(lo, hi, inductions, &mut |cg, i| {
            cg.env.push_var(var, CVal::Scalar(i), IrType::I32);
            cg.stmt(body);
            cg.env.pop_var();
        });
    }

    /// Loads a promoted location into one variable per piece.
    fn read_into_variables(&mut self, location: &promote::Location) -> Vec<Variable> {
        let (addr, offset) = self.location_address(location);
        let flags = self.load_flags(&location.buffer, &location.index);
        let value = if location.ty.lanes == 1 {
            let elem = super::values::scalar_type(location.ty.dtype);
            CVal::Scalar(self.b.ins().load(elem, flags, addr, offset))
        } else {
            self.load_dense(addr, offset, location.ty, flags)
        };
        value
            .pieces()
            .iter()
            .map(|&piece| {
                let var = self.b.declare_var(self.b.func.dfg.value_type(piece));
                self.b.def_var(var, piece);
                var
            })
            .collect()
    }

    /// The address of a promoted location's first element.
    fn location_address(&mut self, location: &promote::Location) -> (Value, i32) {
        let base = self.env.buffer(&location.buffer);
        let start = match &location.index {
            Expr::Ramp { base, .. } => base.as_ref(),
            other => other,
        };
        self.element_address(base, start, location.ty.dtype)
    }

    fn write_back(&mut self, location: &promote::Location, vars: &[Variable]) {
        let (addr, offset) = self.location_address(location);
        let step = match layout(location.ty) {
            Layout::Native { .. } => 16,
            _ => location.ty.dtype.bytes() as i32,
        };
        for (k, var) in vars.iter().enumerate() {
            let piece = self.b.use_var(*var);
            self.b
                .ins()
                .store(mem_flags(), piece, addr, offset + k as i32 * step);
        }
    }

    /// `for i in lo..hi { body(i) }` with `i` an `i32` block parameter.
    ///
    /// The header branches to the exit on `i >= hi` and falls to the body otherwise, in that
    /// order: Cranelift's elaborator (its loop-invariant code motion) walks the header's
    /// dominator-tree children in that order and keeps a stack of the loops it is in, popping a
    /// loop at a block outside it and not pushing it back. With the body first (`brif i < hi,
    /// body, exit`) the exit came first, the loop was popped before its body was reached, and
    /// nothing was hoisted out of any loop (egraph stats: 2 hoists in a whole exp kernel).
    /// Rotating the loop instead (the test at the end) hoists too, but the accumulators then
    /// flow both to the back edge and out of the loop, which makes Cranelift refuse to fold
    /// the loads feeding them into their users.
    ///
    /// With `inductions` (`steps_by_induction`), the body's addresses step through memory by
    /// induction variables (`induction`) rather than multiplying the counter in every
    /// iteration; the loop's preheader, which starts them, is filled after the body, once the
    /// body has said which it uses.
    fn counted_loop(
        &mut self,
        lo: Value,
        hi: Value,
        inductions: bool,
        body: &mut dyn FnMut(&mut Self, Value),
    ) {
        let header = self.b.create_block();
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        let i = self.b.append_block_param(header, types::I32);
        let preheader = self.enter_loop(header, lo, inductions);
        self.b.switch_to_block(header);
        let done = self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, i, hi);
        self.b.ins().brif(done, exit, &[], body_block, &[]);
        self.b.switch_to_block(body_block);
        self.b.seal_block(body_block);
        let steps = self.body_with_inductions(i, preheader.is_some(), body);
        for &(step, var) in &steps {
            let offset = self.b.use_var(var);
            let next = self.b.ins().iadd_imm_s(offset, step);
            self.b.def_var(var, next);
        }
        let next = self.b.ins().iadd_imm_s(i, 1);
        self.b.ins().jump(header, &[BlockArg::Value(next)]);
        if let Some(preheader) = preheader {
            self.start_inductions(preheader, header, lo, &steps);
        }
        self.b.seal_block(header);
        self.b.switch_to_block(exit);
        self.b.seal_block(exit);
    }

    /// Generates a loop's body for counter `i`; with `inductions`, returns the induction
    /// variables it asked for (`induction`), as `(step, variable)`.
    fn body_with_inductions(
        &mut self,
        i: Value,
        inductions: bool,
        body: &mut dyn FnMut(&mut Self, Value),
    ) -> Vec<(i64, Variable)> {
        if !inductions {
            body(self, i);
            return Vec::new();
        }
        self.loops.push(LoopInductions {
            counter: i,
            steps: Vec::new(),
        });
        body(self, i);
        self.loops.pop().map(|l| l.steps).unwrap_or_default()
    }

    /// Leaves the current block for a loop's header: straight to it (counter `lo`), or, for a
    /// loop with `inductions`, to a new, empty preheader placed next in the layout, returned
    /// to be filled once the body is generated (`start_inductions`).
    fn enter_loop(&mut self, header: Block, lo: Value, inductions: bool) -> Option<Block> {
        let current = self.b.current_block().filter(|_| inductions);
        let Some(current) = current else {
            self.b.ins().jump(header, &[BlockArg::Value(lo)]);
            return None;
        };
        let preheader = self.b.create_block();
        self.b.insert_block_after(preheader, current);
        self.b.ins().jump(preheader, &[]);
        Some(preheader)
    }

    /// Fills a loop's preheader: each induction variable starts at `step * lo`, then the loop.
    fn start_inductions(
        &mut self,
        preheader: Block,
        header: Block,
        lo: Value,
        steps: &[(i64, Variable)],
    ) {
        self.b.switch_to_block(preheader);
        self.b.seal_block(preheader);
        if !steps.is_empty() {
            let wide_lo = self.b.ins().sextend(types::I64, lo);
            for &(step, var) in steps {
                let start = self.b.ins().imul_imm_s(wide_lo, step);
                self.b.def_var(var, start);
            }
        }
        self.b.ins().jump(header, &[BlockArg::Value(lo)]);
    }

    /// Whether the loop over `var` keeps address terms in induction variables: an innermost
    /// loop (in an outer loop the multiplications run once per inner loop, and induction
    /// variables would only hold registers across it) with a term worth one. Other loops keep
    /// the plain shape, whose code is unchanged.
    fn steps_by_induction(&self, var: &str, body: &Stmt) -> bool {
        innermost(body) && self.wants_inductions(var, body)
    }

    /// Reads every promoted variable at the top of a loop body, so that the loop header's
    /// parameters (and the back edge's arguments) list the accumulators before the induction
    /// variables. Cranelift computes a back edge's arguments in their order: with an
    /// induction variable first, its increment came before the loads that use its old value,
    /// which then needed a register of its own and a copy in every iteration.
    fn carry_promoted_first(&mut self) {
        let vars: Vec<Variable> = self
            .promoted
            .iter()
            .flat_map(|(_, vars)| vars.iter().copied())
            .collect();
        for var in vars {
            self.b.use_var(var);
        }
    }

    /// `step * counter` (sign-extended, in 64 bits) for `counter` the counter of a loop being
    /// generated with induction variables, as a variable the loop starts at `step * lo` and
    /// steps by `step` each iteration: one addition per iteration instead of a sign extension
    /// and a multiplication (an `imul`, on one of the two ports the fmas need). `None` for any
    /// other value.
    pub(super) fn induction(&mut self, counter: Value, step: i64) -> Option<Value> {
        let depth = self.loops.iter().rposition(|l| l.counter == counter)?;
        let existing = self.loops[depth]
            .steps
            .iter()
            .find(|(s, _)| *s == step)
            .map(|&(_, var)| var);
        let var = match existing {
            Some(var) => var,
            None => {
                if self.loops[depth].steps.is_empty() {
                    self.carry_promoted_first();
                }
                let var = self.b.declare_var(types::I64);
                self.loops[depth].steps.push((step, var));
                var
            }
        };
        Some(self.b.use_var(var))
    }

    fn if_then_else(&mut self, cond: &Expr, then_case: &Stmt, else_case: Option<&Stmt>) {
        let c = self.expr(cond).scalar();
        let then_block = self.b.create_block();
        let else_block = self.b.create_block();
        let join = self.b.create_block();
        self.b.ins().brif(c, then_block, &[], else_block, &[]);
        let scope = Some(self.env.scope_len());
        let outer = std::mem::replace(&mut self.env.condition_scope, scope);
        for (block, branch) in [(then_block, Some(then_case)), (else_block, else_case)] {
            self.b.switch_to_block(block);
            self.b.seal_block(block);
            if let Some(s) = branch {
                self.stmt(s);
            }
            self.b.ins().jump(join, &[]);
        }
        self.env.condition_scope = outer;
        self.b.switch_to_block(join);
        self.b.seal_block(join);
    }

    fn store(&mut self, buffer: &str, index: &Expr, value: &Expr) {
        let base = self.env.buffer(buffer);
        let ty = value.ty();
        let dtype = ty.dtype;
        let lanes = index.ty().lanes;
        let v = self.expr(value);
        if let Some(vars) = self.promoted_location(buffer, index) {
            let v = if ty.lanes < lanes {
                splat(&mut self.b, v.scalar(), ty.with_lanes(lanes))
            } else {
                v
            };
            for (var, &piece) in vars.iter().zip(v.pieces()) {
                self.b.def_var(*var, piece);
            }
            return;
        }
        if lanes == 1 {
            let (addr, offset) = self.element_address(base, index, dtype);
            self.b.ins().store(mem_flags(), v.scalar(), addr, offset);
            return;
        }
        let vty = ty.with_lanes(lanes);
        let v = if ty.lanes == 1 {
            splat(&mut self.b, v.scalar(), vty)
        } else {
            v
        };
        if let Some(start) = dense_start(index) {
            let (addr, offset) = self.element_address(base, start, dtype);
            let step = match layout(vty) {
                Layout::Native { .. } => 16,
                _ => dtype.bytes() as i32,
            };
            for (k, &piece) in v.pieces().iter().enumerate() {
                self.b
                    .ins()
                    .store(mem_flags(), piece, addr, offset + k as i32 * step);
            }
            return;
        }
        let indices = self.expr(index);
        let index_lanes = unpack(&mut self.b, &indices, index.ty());
        let value_lanes = unpack(&mut self.b, &v, vty);
        for (i, x) in index_lanes.into_iter().zip(value_lanes) {
            let addr = self.address(base, i, dtype);
            self.b.ins().store(mem_flags(), x, addr, 0);
        }
    }

    pub(super) fn with_buffer(&mut self, name: &str, ptr: Value, body: &Stmt) {
        self.env.buffers.push((name.to_string(), ptr));
        self.stmt(body);
        self.env.buffers.pop();
    }

    /// A `produce` block between the runtime's profiling calls (`crate::profile`).
    fn profiled(&mut self, func: &str, body: &Stmt) {
        let functions = crate::profile::produced_functions(&self.comp.kernel.body);
        let id = i64::from(crate::profile::id_of(&functions, func));
        let ptr = self.comp.pointer();
        let state = (self.env.profile)
            .unwrap_or_else(|| panic!("strata bug: a profiled block without profiling counters"));
        let enter = self.runtime_ref("strata_profile_enter", &[ptr, types::I32], &[]);
        let id_value = self.b.ins().iconst(types::I32, id);
        self.b.ins().call(enter, &[state, id_value]);
        self.stmt(body);
        let exit = self.runtime_ref("strata_profile_exit", &[ptr, types::I32], &[]);
        let id_value = self.b.ins().iconst(types::I32, id);
        self.b.ins().call(exit, &[state, id_value]);
    }

    /// A parallel loop: the body becomes a function of `(ctx, lo, hi)`; everything in scope is
    /// copied into a stack context that the function reads back.
    fn parallel_for(&mut self, var: &str, min: &Expr, extent: &Expr, body: &Stmt) {
        let lo = self.expr(min).scalar();
        let n = self.expr(extent).scalar();
        let (ctx, captured) = self.capture_scope();
        let Some(func) = self.define_parallel_body(var, body, &captured) else {
            return;
        };
        let ptr_ty = self.comp.pointer();
        let body_ref = self.comp.module.declare_func_in_func(func, self.b.func);
        let body_addr = self.b.ins().func_addr(ptr_ty, body_ref);
        let threads = self
            .env
            .threads
            .unwrap_or_else(|| self.b.ins().iconst(types::I32, 1));
        let profile = (self.env.profile).unwrap_or_else(|| self.b.ins().iconst(ptr_ty, 0));
        let params = [ptr_ty, ptr_ty, types::I32, types::I32, types::I32, ptr_ty];
        let run = self.runtime_ref("strata_parallel_for", &params, &[]);
        self.b
            .ins()
            .call(run, &[body_addr, ctx, lo, n, threads, profile]);
    }

    /// Stores every value in scope in a stack slot, 16 bytes per Cranelift value; returns its
    /// address and the environment with the Cranelift types of what was stored.
    fn capture_scope(&mut self) -> (Value, Env) {
        let mut values: Vec<Value> = Vec::new();
        for (_, v, _) in &self.env.vars {
            values.extend_from_slice(v.pieces());
        }
        values.extend(self.env.buffers.iter().map(|(_, p)| *p));
        values.extend(self.env.params.iter().map(|(_, p, _)| *p));
        values.extend(self.env.threads);
        values.extend(self.env.profile);
        let bytes = (values.len().max(1) * 16) as u32;
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            bytes,
            4,
        ));
        for (i, &v) in values.iter().enumerate() {
            let ptr = self.comp.pointer();
            self.b.ins().stack_store(ptr, v, slot, i as i32 * 16);
        }
        let ctx = self.b.ins().stack_addr(self.comp.pointer(), slot, 0);
        (ctx, self.env.clone())
    }

    /// Defines the function running `body` for `var` in `lo..hi`, reading `captured` back from
    /// its context. `None` (with the error kept) if Cranelift rejects it.
    fn define_parallel_body(
        &mut self,
        var: &str,
        body: &Stmt,
        captured: &Env,
    ) -> Option<cranelift_module::FuncId> {
        let ptr_ty = self.comp.pointer();
        let mut sig = self.comp.module.make_signature();
        sig.params.extend([
            AbiParam::new(ptr_ty),
            AbiParam::new(types::I32),
            AbiParam::new(types::I32),
        ]);
        self.comp.closures += 1;
        let name = format!("parallel_{}", self.comp.closures);
        let result = self.comp.declare(&name, &sig).and_then(|id| {
            let types_of: Vec<cranelift_codegen::ir::Type> = self.captured_types(captured);
            self.comp
                .define(id, &name, sig, |cg, params| {
                    cg.env = restore_scope(cg, params[0], captured, &types_of);
                    let inductions = cg.steps_by_induction(var, body);
                    cg.counted_loop(params[1], params[2], inductions, &mut |cg, i| {
                        cg.env.push_var(var, CVal::Scalar(i), IrType::I32);
                        cg.stmt(body);
                        cg.env.pop_var();
                    });
                })
                .map(|()| id)
        });
        match result {
            Ok(id) => Some(id),
            Err(e) => {
                self.failure.get_or_insert(e);
                None
            }
        }
    }

    /// The Cranelift types of the values `capture_scope` stores, in order.
    fn captured_types(&self, env: &Env) -> Vec<cranelift_codegen::ir::Type> {
        let mut out = Vec::new();
        for (_, v, _) in &env.vars {
            out.extend(v.pieces().iter().map(|p| self.b.func.dfg.value_type(*p)));
        }
        out.extend(
            env.buffers
                .iter()
                .map(|(_, p)| self.b.func.dfg.value_type(*p)),
        );
        out.extend(
            env.params
                .iter()
                .map(|(_, p, _)| self.b.func.dfg.value_type(*p)),
        );
        out.extend(env.threads.iter().map(|p| self.b.func.dfg.value_type(*p)));
        out.extend(env.profile.iter().map(|p| self.b.func.dfg.value_type(*p)));
        out
    }
}

/// Cranelift cannot fail to emit a statement (its verifier runs on the finished function).
impl EmitStmt for FnCodegen<'_, '_, '_> {
    type Error = Infallible;

    fn emit_serial_for(&mut self, var: &str, min: &Expr, extent: &Expr, body: &Stmt) -> Emitted {
        self.serial_for(var, min, extent, body);
        Ok(())
    }

    fn emit_parallel_for(&mut self, var: &str, min: &Expr, extent: &Expr, body: &Stmt) -> Emitted {
        self.parallel_for(var, min, extent, body);
        Ok(())
    }

    fn emit_let(&mut self, name: &str, value: &Expr, body: &Stmt) -> Emitted {
        let v = self.expr(value);
        self.push_let(name, value, v);
        self.stmt(body);
        self.pop_let();
        Ok(())
    }

    fn emit_if(&mut self, cond: &Expr, then_case: &Stmt, else_case: Option<&Stmt>) -> Emitted {
        self.if_then_else(cond, then_case, else_case);
        Ok(())
    }

    fn emit_allocate(&mut self, buffer: &str, dtype: Dtype, size: &Expr, body: &Stmt) -> Emitted {
        self.allocate(buffer, dtype, size, body);
        Ok(())
    }

    fn emit_store(&mut self, buffer: &str, index: &Expr, value: &Expr) -> Emitted {
        self.store(buffer, index, value);
        Ok(())
    }

    fn profiling(&self) -> bool {
        self.comp.options.profile
    }

    fn emit_profiled(&mut self, func: &str, body: &Stmt) -> Emitted {
        self.profiled(func, body);
        Ok(())
    }
}

type Emitted = Result<(), Infallible>;

/// Whether a loop body holds no loop (then it is an innermost loop's).
fn innermost(body: &Stmt) -> bool {
    let mut found = false;
    body.for_each(&mut |s| found |= matches!(s, Stmt::For { .. }));
    !found
}

/// Rebuilds the environment `captured` inside a parallel body from the context at `ctx`.
fn restore_scope(
    cg: &mut FnCodegen,
    ctx: Value,
    captured: &Env,
    types_of: &[cranelift_codegen::ir::Type],
) -> Env {
    let mut next = 0usize;
    let mut load = |cg: &mut FnCodegen| {
        let v =
            cg.b.ins()
                .load(types_of[next], mem_flags(), ctx, next as i32 * 16);
        next += 1;
        v
    };
    let mut env = Env {
        read_only: captured.read_only.clone(),
        // The body runs only for iterations that reached the parallel loop, and code cannot
        // move out of this function: an `if` around the loop constrains nothing in here.
        condition_scope: None,
        ..Env::default()
    };
    for (name, v, ty) in &captured.vars {
        let pieces: Vec<Value> = v.pieces().iter().map(|_| load(cg)).collect();
        let value = if matches!(v, CVal::Scalar(_)) {
            CVal::Scalar(pieces[0])
        } else {
            CVal::Pieces(pieces)
        };
        env.vars.push((name.clone(), value, *ty));
    }
    for (name, _) in &captured.buffers {
        env.buffers.push((name.clone(), load(cg)));
    }
    for (name, _, dtype) in &captured.params {
        env.params.push((name.clone(), load(cg), *dtype));
    }
    if captured.threads.is_some() {
        env.threads = Some(load(cg));
    }
    if captured.profile.is_some() {
        env.profile = Some(load(cg));
    }
    env
}
