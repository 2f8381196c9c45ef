//! A compiled kernel: machine code plus the signature it was compiled for. Calls check every
//! buffer (element type, rank, extents, and that each input covers the region the code reads)
//! and every scalar before any generated code runs; the JIT memory is freed on drop.

use crate::backend::{self, Backend, MachineCode};
use crate::codegen::{CodegenError, CodegenOptions};
use std::collections::BTreeMap;
use strata_dsl::buffer::{BufferView, BufferViewMut, ViewArgs};
use strata_dsl::{Args, Buffer, Dtype, Signature, Sizes, Value};
use strata_scheduler::{Expr, LoweredKernel};

/// Why a call was refused (the check every executor shares). Nothing ran.
pub use strata_dsl::CallError;

/// A kernel compiled to machine code, callable (from many threads at once) with checked buffers.
pub struct CompiledKernel {
    kernel: LoweredKernel,
    /// What every call is checked against before the code runs.
    signature: Signature<Expr>,
    /// Owns the code (freed when dropped).
    compiled: Box<dyn MachineCode>,
    entry: unsafe extern "C" fn(*const u64),
    backend: Backend,
}

// SAFETY: the generated code is immutable once finalized and reads only the frame it is given;
// the code's owner is only touched again by `Drop`, which has exclusive access.
unsafe impl Send for CompiledKernel {}
unsafe impl Sync for CompiledKernel {}

impl CompiledKernel {
    /// Compiles a lowered kernel with the backend `options` names.
    pub fn new(
        kernel: &LoweredKernel,
        options: &CodegenOptions,
    ) -> Result<CompiledKernel, CodegenError> {
        let compiled = backend::compile(kernel, options)?;
        Ok(CompiledKernel {
            kernel: kernel.clone(),
            signature: kernel.call_signature(),
            entry: compiled.entry(),
            compiled,
            backend: options.backend,
        })
    }

    pub fn lowered(&self) -> &LoweredKernel {
        &self.kernel
    }

    /// The backend that compiled this kernel.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The backend's IR of each function (Cranelift IR or LLVM IR), if compiled with
    /// `keep_text`.
    pub fn ir(&self) -> &[String] {
        self.compiled.ir_text()
    }

    /// The Cranelift IR of each function, if compiled by Cranelift with `keep_text`.
    pub fn clif(&self) -> &[String] {
        match self.backend {
            Backend::Cranelift => self.compiled.ir_text(),
            Backend::Llvm => &[],
        }
    }

    /// The machine code listing of each function, if compiled with `keep_text`.
    pub fn asm(&self) -> &[String] {
        self.compiled.asm_text()
    }

    /// Runs the kernel on `args` with up to `threads` threads and returns its output.
    pub fn run(&self, args: &Args, threads: usize) -> Result<Buffer, CallError> {
        self.run_views(&ViewArgs::from(args), threads)
    }

    /// Runs the kernel writing into `output`, which must have the output's type and shape. A
    /// caller timing repeated runs reuses one output instead of allocating one per run.
    pub fn run_into(
        &self,
        args: &Args,
        output: &mut Buffer,
        threads: usize,
    ) -> Result<(), CallError> {
        self.run_views_into(&ViewArgs::from(args), BufferViewMut::from(output), threads)
    }

    /// Runs the kernel on buffers in the caller's memory (read in place, no copy) and returns
    /// its output. `args` may mix views and owned buffers (`BufferView::from(&buffer)`); they
    /// are checked as [`CompiledKernel::run`] checks owned ones.
    pub fn run_views(&self, args: &ViewArgs, threads: usize) -> Result<Buffer, CallError> {
        let binding = self.signature.bind_views(args)?;
        let mut output = Buffer::zeros(self.kernel.output.dtype, &binding.output_shape)?;
        let out = BufferViewMut::from(&mut output);
        self.call(args, &binding.sizes, out, threads);
        Ok(output)
    }

    /// Runs the kernel on buffers in the caller's memory, writing its output into the caller's
    /// `output` (which must have the output's type and shape): no buffer is copied or allocated
    /// by the call.
    pub fn run_views_into(
        &self,
        args: &ViewArgs,
        output: BufferViewMut,
        threads: usize,
    ) -> Result<(), CallError> {
        let binding = self.signature.bind_views(args)?;
        let shape = &binding.output_shape;
        let expected_len: usize = shape.iter().product();
        if output.dtype() != self.kernel.output.dtype
            || output.shape() != shape.as_slice()
            || output.len() != expected_len
        {
            return Err(wrong_output(self.kernel.output.dtype, shape, &output));
        }
        self.call(args, &binding.sizes, output, threads);
        Ok(())
    }

    /// Runs the generated code; `bind` checked the arguments and the output's shape.
    fn call(&self, args: &ViewArgs, sizes: &Sizes, mut output: BufferViewMut, threads: usize) {
        let frame = self.frame(&args.buffers, &args.scalars, sizes, &mut output, threads);
        // SAFETY: `Signature::bind_views` checked every buffer against the signature (types,
        // shapes, real lengths, element counts within i32) and that each covers every region
        // the code reads, and the output has exactly the extents the code writes. The output
        // is borrowed mutably and the inputs shared, so they cannot overlap.
        unsafe { (self.entry)(frame.as_ptr()) };
    }

    /// The frame `entry` reads: buffer pointers (inputs, output), sizes, parameter bits, threads.
    fn frame(
        &self,
        buffers: &BTreeMap<String, BufferView>,
        scalars: &BTreeMap<String, Value>,
        sizes: &Sizes,
        output: &mut BufferViewMut,
        threads: usize,
    ) -> Vec<u64> {
        let mut frame = Vec::new();
        for input in &self.kernel.inputs {
            frame.push(buffers.get(&input.name).map_or(0, |b| b.as_ptr() as u64));
        }
        frame.push(output.as_mut_ptr() as u64);
        for size in &self.kernel.sizes {
            // `bind` bound every size, each at most i32::MAX.
            frame.push(sizes.get(size).copied().unwrap_or(0) as u32 as u64);
        }
        for (name, _) in &self.kernel.params {
            frame.push(scalars.get(name).map_or(0, |v| scalar_bits(*v)));
        }
        frame.push(threads.clamp(1, i32::MAX as usize) as u64);
        frame
    }
}

/// The refusal of an output buffer of the wrong type or shape: what was expected and given.
fn wrong_output(dtype: Dtype, shape: &[usize], output: &BufferViewMut) -> CallError {
    CallError::WrongOutput {
        expected: format!("{dtype} {shape:?}"),
        actual: format!("{} {:?}", output.dtype(), output.shape()),
    }
}

/// A scalar's bits in the low bytes of a `u64`, as the generated code loads them.
fn scalar_bits(v: Value) -> u64 {
    match v {
        Value::F32(x) => x.to_bits() as u64,
        Value::F64(x) => x.to_bits(),
        Value::Bool(x) => x as u64,
        other => other.as_i64().unwrap_or(0) as u64,
    }
}
