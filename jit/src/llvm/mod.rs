//! The LLVM backend (cargo feature `llvm`): a lowered kernel (flattened loop IR) to LLVM IR,
//! optimized by LLVM's `default<O2>` pipeline for the host CPU and compiled by MCJIT.
//!
//! Same contract as the Cranelift backend (`crate::backend`): one entry `entry(frame)` reading
//! the same frame, parallel loop bodies called through `strata_parallel_for`, storage from
//! the same runtime, the same vector `exp`/`log` algorithms. What differs is the width:
//! vectors keep the width the schedule gave them (`<16 x float>` is one zmm register on an
//! AVX-512 host) instead of being split into 128-bit pieces.
//!
//! Semantics are kept exactly, without undefined behaviour or poison the language does not
//! have: integer arithmetic wraps (no `nsw`/`nuw`, except a loop counter's increment, which
//! runs only below the loop's end and so cannot wrap), division never traps (the divisor is
//! replaced where it is 0 or -1), float-to-int casts saturate (`llvm.fptosi.sat`), min/max
//! are compare-and-select (no `minnum`), and no fast-math flags are set: the only fused
//! operation is `a * b + c`, as `llvm.fmuladd`, which the stated float tolerance covers as it
//! covers Cranelift's `fma`.
//!
//! Aliasing: each function's body is an inner function whose buffer pointers are `noalias`
//! parameters (a thin wrapper unpacks the frame or the parallel context and calls it), so LLVM
//! knows the output, the inputs and each producer's storage never overlap (the call boundary
//! checked they are distinct buffers) and keeps accumulators in registers.

mod engine;
mod expr;
mod functions;
mod ops;
mod promote;
mod stmt;
mod vmath;

pub(crate) use engine::host_machine;
pub use engine::Llvm;
