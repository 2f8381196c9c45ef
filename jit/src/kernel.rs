//! A compiled kernel: machine code plus the signature it was compiled for. Calls check every
//! buffer (element type, rank, extents, and that each input covers the region the code reads)
//! and every scalar before any generated code runs; the JIT memory is freed on drop.

use crate::codegen::{compile, CodegenError, CodegenOptions, Compiled};
use std::collections::HashMap;
use strata_dsl::{Args, Buffer, Dtype, Value};
use strata_scheduler::interp::{eval_expr, VValue};
use strata_scheduler::{Expr, LoweredKernel};

/// Why a call was refused. Nothing ran.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CallError {
    #[error("missing input `{0}`")]
    MissingInput(String),
    #[error("`{0}` is not an input of this kernel")]
    UnknownArgument(String),
    #[error("input `{name}` should be {expected}, found {actual}")]
    WrongType {
        name: String,
        expected: Dtype,
        actual: Dtype,
    },
    #[error("input `{name}` should have shape {expected}, found {actual:?}")]
    WrongShape {
        name: String,
        expected: String,
        actual: Vec<usize>,
    },
    #[error("input `{input}` is too small for this schedule: dimension {dim} is read at {min}..={max}, but its extent is {extent}")]
    InputTooSmall {
        input: String,
        dim: usize,
        min: i64,
        max: i64,
        extent: usize,
    },
    #[error("the output would have a negative or too large extent {0:?}")]
    BadOutputShape(Vec<i64>),
    #[error("the output buffer should be {expected}, found {actual}")]
    WrongOutput { expected: String, actual: String },
    #[error("size `{0}` is not bound by any input")]
    UnboundSize(String),
}

/// A kernel compiled to machine code, callable (from many threads at once) with checked buffers.
pub struct CompiledKernel {
    kernel: LoweredKernel,
    /// Owns the code; `None` only while dropping.
    compiled: Option<Compiled>,
    entry: unsafe extern "C" fn(*const u64),
}

// SAFETY: the generated code is immutable once finalized and reads only the frame it is given;
// the module is only touched again by `Drop`, which has exclusive access.
unsafe impl Send for CompiledKernel {}
unsafe impl Sync for CompiledKernel {}

impl Drop for CompiledKernel {
    fn drop(&mut self) {
        if let Some(compiled) = self.compiled.take() {
            // SAFETY: no function pointer into this module outlives `self`.
            unsafe { compiled.module.free_memory() };
        }
    }
}

impl CompiledKernel {
    /// Compiles a lowered kernel.
    pub fn new(
        kernel: &LoweredKernel,
        options: &CodegenOptions,
    ) -> Result<CompiledKernel, CodegenError> {
        let compiled = compile(kernel, options)?;
        let address = compiled.module.get_finalized_function(compiled.entry);
        // SAFETY: `entry` was generated with the signature `fn(*const u64)`.
        let entry =
            unsafe { std::mem::transmute::<*const u8, unsafe extern "C" fn(*const u64)>(address) };
        Ok(CompiledKernel {
            kernel: kernel.clone(),
            compiled: Some(compiled),
            entry,
        })
    }

    pub fn lowered(&self) -> &LoweredKernel {
        &self.kernel
    }

    /// The Cranelift IR of each function, if compiled with `keep_text`.
    pub fn clif(&self) -> &[String] {
        self.compiled.as_ref().map_or(&[], |c| &c.clif)
    }

    /// The machine code listing of each function, if compiled with `keep_text`.
    pub fn asm(&self) -> &[String] {
        self.compiled.as_ref().map_or(&[], |c| &c.asm)
    }

    /// Runs the kernel on `args` with up to `threads` threads and returns its output.
    pub fn run(&self, args: &Args, threads: usize) -> Result<Buffer, CallError> {
        let sizes = self.checked_sizes(args)?;
        let mut output = Buffer::zeros(self.kernel.output.dtype, &self.output_shape(&sizes)?);
        self.call(args, &sizes, &mut output, threads);
        Ok(output)
    }

    /// Runs the kernel writing into `output`, which must have the output's type and shape. A
    /// caller timing repeated runs reuses one output instead of allocating one per run.
    pub fn run_into(
        &self,
        args: &Args,
        output: &mut Buffer,
        threads: usize,
    ) -> Result<(), CallError> {
        let sizes = self.checked_sizes(args)?;
        let shape = self.output_shape(&sizes)?;
        if output.dtype() != self.kernel.output.dtype || output.shape() != shape.as_slice() {
            return Err(CallError::WrongOutput {
                expected: format!("{} {:?}", self.kernel.output.dtype, shape),
                actual: format!("{} {:?}", output.dtype(), output.shape()),
            });
        }
        self.call(args, &sizes, output, threads);
        Ok(())
    }

    /// The sizes the inputs bind, after checking every input against the signature.
    fn checked_sizes(&self, args: &Args) -> Result<HashMap<String, VValue>, CallError> {
        let sizes = self.bind_sizes(args)?;
        self.check_inputs(args, &sizes)?;
        Ok(sizes)
    }

    /// Runs the generated code; the arguments and the output's shape were checked.
    fn call(
        &self,
        args: &Args,
        sizes: &HashMap<String, VValue>,
        output: &mut Buffer,
        threads: usize,
    ) {
        let frame = self.frame(args, sizes, output, threads);
        // SAFETY: every buffer was checked to match the signature and to cover every region the
        // code reads, and the output has exactly the extents the code writes.
        unsafe { (self.entry)(frame.as_ptr()) };
    }

    fn input_buffer<'a>(&self, args: &'a Args, name: &str) -> Result<&'a Buffer, CallError> {
        args.buffers
            .get(name)
            .ok_or_else(|| CallError::MissingInput(name.to_string()))
    }

    /// Sizes from the input shapes: each size variable is the extent where it first appears.
    fn bind_sizes(&self, args: &Args) -> Result<HashMap<String, VValue>, CallError> {
        let is_input = |n: &String| self.kernel.inputs.iter().any(|i| &i.name == n);
        let is_param = |n: &String| self.kernel.params.iter().any(|(p, _)| p == n);
        if let Some(n) = args
            .buffers
            .keys()
            .find(|n| !is_input(n))
            .or_else(|| args.scalars.keys().find(|n| !is_param(n)))
        {
            return Err(CallError::UnknownArgument(n.clone()));
        }
        let mut sizes = HashMap::new();
        for input in &self.kernel.inputs {
            let buffer = self.input_buffer(args, &input.name)?;
            if buffer.shape().len() != input.extents.len() {
                // A wrong rank, before its extents bind sizes (else a missing dimension
                // would be reported as an unbound size).
                let names: Vec<String> = input
                    .extents
                    .iter()
                    .map(|e| match e {
                        Expr::Var(name, _) if !sizes.contains_key(name) => name.clone(),
                        _ => describe_extent(e, self.eval(e, &sizes)),
                    })
                    .collect();
                return Err(CallError::WrongShape {
                    name: input.name.clone(),
                    expected: format!("[{}]", names.join(", ")),
                    actual: buffer.shape().to_vec(),
                });
            }
            for (extent, &actual) in input.extents.iter().zip(buffer.shape()) {
                if let Expr::Var(name, _) = extent {
                    sizes
                        .entry(name.clone())
                        .or_insert(VValue::scalar(Value::I32(
                            actual.min(i32::MAX as usize) as i32
                        )));
                }
            }
        }
        if let Some(missing) = self.kernel.sizes.iter().find(|s| !sizes.contains_key(*s)) {
            return Err(CallError::UnboundSize(missing.clone()));
        }
        Ok(sizes)
    }

    fn eval(&self, e: &Expr, sizes: &HashMap<String, VValue>) -> i64 {
        eval_expr(e, sizes)
            .ok()
            .and_then(|v| v.as_scalar())
            .and_then(|v| v.as_i64())
            .unwrap_or(-1)
    }

    fn check_inputs(&self, args: &Args, sizes: &HashMap<String, VValue>) -> Result<(), CallError> {
        for input in &self.kernel.inputs {
            let buffer = self.input_buffer(args, &input.name)?;
            if buffer.dtype() != input.dtype {
                return Err(CallError::WrongType {
                    name: input.name.clone(),
                    expected: input.dtype,
                    actual: buffer.dtype(),
                });
            }
            let expected: Vec<i64> = input.extents.iter().map(|e| self.eval(e, sizes)).collect();
            let actual: Vec<i64> = buffer.shape().iter().map(|&e| e as i64).collect();
            if expected != actual {
                let names: Vec<String> = input
                    .extents
                    .iter()
                    .zip(&expected)
                    .map(|(e, v)| describe_extent(e, *v))
                    .collect();
                return Err(CallError::WrongShape {
                    name: input.name.clone(),
                    expected: format!("[{}]", names.join(", ")),
                    actual: buffer.shape().to_vec(),
                });
            }
        }
        for (name, dtype) in &self.kernel.params {
            match args.scalars.get(name) {
                None => return Err(CallError::MissingInput(name.clone())),
                Some(v) if v.dtype() != *dtype => {
                    return Err(CallError::WrongType {
                        name: name.clone(),
                        expected: *dtype,
                        actual: v.dtype(),
                    })
                }
                Some(_) => {}
            }
        }
        self.check_regions(args, sizes)
    }

    /// Every input covers the box the code reads of it.
    fn check_regions(&self, args: &Args, sizes: &HashMap<String, VValue>) -> Result<(), CallError> {
        for (name, region) in &self.kernel.input_regions {
            let buffer = self.input_buffer(args, name)?;
            for (dim, (range, &extent)) in region.iter().zip(buffer.shape()).enumerate() {
                let (min, len) = (
                    self.eval(&range.min, sizes),
                    self.eval(&range.extent, sizes),
                );
                if len > 0 && (min < 0 || min + len > extent as i64) {
                    return Err(CallError::InputTooSmall {
                        input: name.clone(),
                        dim,
                        min,
                        max: min + len - 1,
                        extent,
                    });
                }
            }
        }
        Ok(())
    }

    /// The output's shape for these sizes (without allocating it).
    fn output_shape(&self, sizes: &HashMap<String, VValue>) -> Result<Vec<usize>, CallError> {
        let extents: Vec<i64> = self
            .kernel
            .output
            .extents
            .iter()
            .map(|e| self.eval(e, sizes))
            .collect();
        let elements = extents.iter().try_fold(
            1i64,
            |acc, &e| if e < 0 { None } else { acc.checked_mul(e) },
        );
        match elements {
            Some(n) if n <= i32::MAX as i64 => Ok(extents.iter().map(|&e| e as usize).collect()),
            _ => Err(CallError::BadOutputShape(extents)),
        }
    }

    /// The frame `entry` reads: buffer pointers (inputs, output), sizes, parameter bits, threads.
    fn frame(
        &self,
        args: &Args,
        sizes: &HashMap<String, VValue>,
        output: &mut Buffer,
        threads: usize,
    ) -> Vec<u64> {
        let mut frame = Vec::new();
        for input in &self.kernel.inputs {
            frame.push(
                args.buffers
                    .get(&input.name)
                    .map_or(0, |b| b.as_ptr() as u64),
            );
        }
        frame.push(output.as_mut_ptr() as u64);
        for size in &self.kernel.sizes {
            frame.push(self.eval(&Expr::var(size.clone()), sizes) as u32 as u64);
        }
        for (name, _) in &self.kernel.params {
            frame.push(args.scalars.get(name).map_or(0, |v| scalar_bits(*v)));
        }
        frame.push(threads.clamp(1, i32::MAX as usize) as u64);
        frame
    }
}

fn describe_extent(e: &Expr, value: i64) -> String {
    match e {
        Expr::Var(name, _) => format!("{name}={value}"),
        _ => value.to_string(),
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
