//! The statement dispatch every backend shares: which kind of flattened statement becomes which
//! emission. A backend implements [`EmitStmt`], one method per kind of statement that reaches
//! code generation, and sends every statement through [`emit`], so a new kind of statement is
//! one more method each backend must provide, not a `match` to keep in step in every backend.

use strata_dsl::Dtype;
use strata_scheduler::{Expr, ForKind, Stmt};

/// What a backend emits for each kind of statement (bodies go back through [`emit`]).
pub(crate) trait EmitStmt {
    /// What stops code generation (Cranelift: nothing can; LLVM: its builder's errors).
    type Error;

    /// A serial (or vectorized-then-serial, or unrolled-then-serial) loop.
    fn emit_serial_for(
        &mut self,
        var: &str,
        min: &Expr,
        extent: &Expr,
        body: &Stmt,
    ) -> Result<(), Self::Error>;

    /// A parallel loop: its body becomes a function the runtime calls on chunks of the range.
    fn emit_parallel_for(
        &mut self,
        var: &str,
        min: &Expr,
        extent: &Expr,
        body: &Stmt,
    ) -> Result<(), Self::Error>;

    /// `let name = value in body`.
    fn emit_let(&mut self, name: &str, value: &Expr, body: &Stmt) -> Result<(), Self::Error>;

    /// A conditional.
    fn emit_if(
        &mut self,
        cond: &Expr,
        then_case: &Stmt,
        else_case: Option<&Stmt>,
    ) -> Result<(), Self::Error>;

    /// A producer's storage of `size` elements of `dtype`, live during `body`.
    fn emit_allocate(
        &mut self,
        buffer: &str,
        dtype: Dtype,
        size: &Expr,
        body: &Stmt,
    ) -> Result<(), Self::Error>;

    /// `buffer[index] = value`.
    fn emit_store(&mut self, buffer: &str, index: &Expr, value: &Expr) -> Result<(), Self::Error>;

    /// Whether this code is compiled with profiling (each `produce` block timed).
    fn profiling(&self) -> bool;

    /// A `produce` block timed as the function `func` (only when [`EmitStmt::profiling`]).
    fn emit_profiled(&mut self, func: &str, body: &Stmt) -> Result<(), Self::Error>;
}

/// Emits `s` with the backend `e`.
pub(crate) fn emit<E: EmitStmt>(e: &mut E, s: &Stmt) -> Result<(), E::Error> {
    match s {
        Stmt::For {
            var,
            min,
            extent,
            kind,
            body,
        } => match kind {
            ForKind::Parallel => e.emit_parallel_for(var, min, extent, body),
            _ => e.emit_serial_for(var, min, extent, body),
        },
        Stmt::Let { name, value, body } => e.emit_let(name, value, body),
        Stmt::Block(stmts) => stmts.iter().try_for_each(|s| emit(e, s)),
        Stmt::If {
            cond,
            then_case,
            else_case,
        } => e.emit_if(cond, then_case, else_case.as_deref()),
        Stmt::Allocate {
            buffer,
            dtype,
            size,
            body,
        } => e.emit_allocate(buffer, *dtype, size, body),
        Stmt::Store {
            buffer,
            index,
            value,
        } => e.emit_store(buffer, index, value),
        Stmt::Produce { func, body } if e.profiling() => e.emit_profiled(func, body),
        Stmt::Produce { body, .. } => emit(e, body),
        // The verifier rules these out after flattening.
        Stmt::Realize { .. } | Stmt::Provide { .. } | Stmt::NoOp => Ok(()),
    }
}
