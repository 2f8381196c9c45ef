//! A compiled kernel: machine code plus the signature it was compiled for. Calls check every
//! buffer (element type, rank, extents, and that each input covers the region the code reads)
//! and every scalar before any generated code runs; the JIT memory is freed on drop.

use crate::backend::{Backend, CodegenError, CodegenOptions, MachineCode};
use crate::profile::ProfileState;
use std::collections::BTreeMap;
use strata_dsl::buffer::{BufferView, BufferViewMut, ViewArgs};
use strata_dsl::signature::Binding;
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
    /// With profiling compiled in, the functions it times (`crate::profile`).
    profile: Option<Vec<String>>,
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
        let compiled = options.backend.generator()?.compile(kernel, options)?;
        Ok(CompiledKernel {
            kernel: kernel.clone(),
            signature: kernel.call_signature(),
            entry: compiled.entry(),
            compiled,
            backend: options.backend,
            profile: (options.profile).then(|| crate::profile::produced_functions(&kernel.body)),
        })
    }

    /// The loop nest this kernel was compiled from (what `strata lower --stage loops` prints).
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
        let binding = self.signature.bind(args)?;
        let inputs = Inputs::Owned(&args.buffers);
        self.run_bound(&binding, inputs, &args.scalars, threads)
    }

    /// Runs the kernel writing into `output`, which must have the output's type and shape. A
    /// caller timing repeated runs reuses one output instead of allocating one per run.
    pub fn run_into(
        &self,
        args: &Args,
        output: &mut Buffer,
        threads: usize,
    ) -> Result<(), CallError> {
        self.run_into_profiling(args, output, threads, std::ptr::null())
    }

    /// [`CompiledKernel::run_into`], counting into `profile` (null: not profiled).
    fn run_into_profiling(
        &self,
        args: &Args,
        output: &mut Buffer,
        threads: usize,
        profile: *const ProfileState,
    ) -> Result<(), CallError> {
        let binding = self.signature.bind(args)?;
        let (dtype, len) = (output.dtype(), output.len());
        self.check_output(&binding.output_shape, dtype, output.shape(), len)?;
        let inputs = Inputs::Owned(&args.buffers);
        let out = output.as_mut_ptr();
        let call = Call { threads, profile };
        self.call(inputs, &args.scalars, &binding.sizes, out, call);
        Ok(())
    }

    /// Runs the kernel as [`CompiledKernel::run_into`] does and returns each function's self
    /// time and `produce` count in this run (see `crate::profile`), or `None` (after running)
    /// when it was compiled without `CodegenOptions::profile`. Each run has its own counters,
    /// so profiled runs in one process may overlap.
    pub fn run_profiled_into(
        &self,
        args: &Args,
        output: &mut Buffer,
        threads: usize,
    ) -> Result<Option<Vec<crate::profile::FunctionTime>>, CallError> {
        let Some(functions) = &self.profile else {
            return self.run_into(args, output, threads).map(|()| None);
        };
        let (result, times) = crate::profile::profiled(functions, |state| {
            self.run_into_profiling(args, output, threads, state)
        });
        result.map(|()| Some(times))
    }

    /// Runs the kernel on buffers in the caller's memory (read in place, no copy) and returns
    /// its output. `args` may mix views and owned buffers (`BufferView::from(&buffer)`); they
    /// are checked as [`CompiledKernel::run`] checks owned ones.
    pub fn run_views(&self, args: &ViewArgs, threads: usize) -> Result<Buffer, CallError> {
        let binding = self.signature.bind_views(args)?;
        let inputs = Inputs::Views(&args.buffers);
        self.run_bound(&binding, inputs, &args.scalars, threads)
    }

    /// Runs the bound call into a new output of the bound shape.
    fn run_bound(
        &self,
        binding: &Binding,
        inputs: Inputs,
        scalars: &BTreeMap<String, Value>,
        threads: usize,
    ) -> Result<Buffer, CallError> {
        let mut output = Buffer::zeros(self.kernel.output.dtype, &binding.output_shape)?;
        let out = output.as_mut_ptr();
        self.call(inputs, scalars, &binding.sizes, out, Call::plain(threads));
        Ok(output)
    }

    /// Runs the kernel on buffers in the caller's memory, writing its output into the caller's
    /// `output` (which must have the output's type and shape): no buffer is copied or allocated
    /// by the call.
    pub fn run_views_into(
        &self,
        args: &ViewArgs,
        mut output: BufferViewMut,
        threads: usize,
    ) -> Result<(), CallError> {
        let binding = self.signature.bind_views(args)?;
        let (dtype, len) = (output.dtype(), output.len());
        self.check_output(&binding.output_shape, dtype, output.shape(), len)?;
        let inputs = Inputs::Views(&args.buffers);
        let out = output.as_mut_ptr();
        self.call(
            inputs,
            &args.scalars,
            &binding.sizes,
            out,
            Call::plain(threads),
        );
        Ok(())
    }

    /// The caller's output has the output's type and exactly the shape the code writes.
    fn check_output(
        &self,
        shape: &[usize],
        dtype: Dtype,
        actual: &[usize],
        len: usize,
    ) -> Result<(), CallError> {
        let expected_len: usize = shape.iter().product();
        if dtype != self.kernel.output.dtype || actual != shape || len != expected_len {
            return Err(CallError::WrongOutput {
                expected: format!("{} {shape:?}", self.kernel.output.dtype),
                actual: format!("{dtype} {actual:?}"),
            });
        }
        Ok(())
    }

    /// Runs the generated code; `bind` checked the arguments and `output` (the address of an
    /// output of the checked type and shape, which the caller holds mutably borrowed).
    fn call(
        &self,
        inputs: Inputs,
        scalars: &BTreeMap<String, Value>,
        sizes: &Sizes,
        output: *mut u8,
        call: Call,
    ) {
        let frame = self.frame(inputs, scalars, sizes, output, call);
        // SAFETY: `Signature::bind` (or `bind_views`) checked every buffer against the
        // signature (types, shapes, real lengths, element counts within i32) and that each
        // covers every region the code reads, and the output has exactly the extents the code
        // writes. The output is borrowed mutably and the inputs shared, so they cannot overlap.
        unsafe { (self.entry)(frame.as_ptr()) };
    }

    /// The frame `entry` reads: buffer pointers (inputs, output), sizes, parameter bits, the
    /// thread count and the profiling counters' address (read only by code compiled with
    /// profiling).
    fn frame(
        &self,
        inputs: Inputs,
        scalars: &BTreeMap<String, Value>,
        sizes: &Sizes,
        output: *mut u8,
        call: Call,
    ) -> Vec<u64> {
        let mut frame = Vec::new();
        for input in &self.kernel.inputs {
            frame.push(inputs.address(&input.name).map_or(0, |p| p as u64));
        }
        frame.push(output as u64);
        for size in &self.kernel.sizes {
            // `bind` bound every size, each at most i32::MAX.
            frame.push(sizes.get(size).copied().unwrap_or(0) as u32 as u64);
        }
        for (name, _) in &self.kernel.params {
            frame.push(scalars.get(name).map_or(0, |v| scalar_bits(*v)));
        }
        frame.push(call.threads.clamp(1, i32::MAX as usize) as u64);
        frame.push(call.profile as u64);
        frame
    }
}

/// How one call runs, beyond its arguments.
#[derive(Clone, Copy)]
struct Call {
    /// At most this many threads.
    threads: usize,
    /// The call's profiling counters, or null (`crate::profile`).
    profile: *const ProfileState,
}

impl Call {
    /// A call on up to `threads` threads, not profiled.
    fn plain(threads: usize) -> Call {
        Call {
            threads,
            profile: std::ptr::null(),
        }
    }
}

/// A call's input buffers: owned ones or the caller's views (the two call paths share the
/// frame without converting one into the other per call).
#[derive(Clone, Copy)]
enum Inputs<'a, 'v> {
    Owned(&'a BTreeMap<String, Buffer>),
    Views(&'a BTreeMap<String, BufferView<'v>>),
}

impl Inputs<'_, '_> {
    /// The address of input `name`'s first element.
    fn address(self, name: &str) -> Option<*const u8> {
        match self {
            Inputs::Owned(buffers) => buffers.get(name).map(Buffer::as_ptr),
            Inputs::Views(views) => views.get(name).map(BufferView::as_ptr),
        }
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
