//! The Cranelift backend: a lowered kernel (flattened loop IR) to machine code through
//! Cranelift, keeping the frame contract of `crate::backend` (one entry function
//! `entry(frame: *const u64)`, each parallel loop body a function `body(ctx, lo, hi)` called
//! through the runtime's `strata_parallel_for`).

mod address;
mod alloc;
mod expr;
mod fma_order;
mod narrow;
mod range;
mod reduce;
mod scalar;
mod stmt;
mod values;

use crate::backend::{CodegenError, CodegenOptions, MachineCode};
use crate::promote;
use crate::runtime;
use cranelift_codegen::ir::{
    types, AbiParam, FuncRef, InstBuilder, Signature, Type, UserFuncName, Value,
};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module};
use std::collections::HashMap;
use strata_dsl::Dtype;
use strata_scheduler::{LoweredKernel, Type as IrType};
pub use values::CVal;

/// The machine code of one kernel, with the module that owns it (freed on drop).
pub struct Compiled {
    /// `None` only while dropping.
    module: Option<JITModule>,
    entry: unsafe extern "C" fn(*const u64),
    /// Cranelift IR of every function (entry first), when asked for.
    clif: Vec<String>,
    /// The machine code listing (Cranelift's VCode) of every function, when asked for.
    asm: Vec<String>,
}

impl Drop for Compiled {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: no function pointer into this module outlives `self` (`CompiledKernel`
            // owns both).
            unsafe { module.free_memory() };
        }
    }
}

impl MachineCode for Compiled {
    fn entry(&self) -> unsafe extern "C" fn(*const u64) {
        self.entry
    }

    fn ir_text(&self) -> &[String] {
        &self.clif
    }

    fn asm_text(&self) -> &[String] {
        &self.asm
    }
}

/// The Cranelift code generator (always built).
pub struct Cranelift;

impl crate::backend::CodeGenerator for Cranelift {
    fn compile(
        &self,
        kernel: &LoweredKernel,
        options: &CodegenOptions,
    ) -> Result<Box<dyn MachineCode>, CodegenError> {
        Ok(Box::new(compile(kernel, options)?))
    }
}

/// Compiles `kernel` into a fresh JIT module.
pub fn compile(kernel: &LoweredKernel, options: &CodegenOptions) -> Result<Compiled, CodegenError> {
    let module = new_module(options)?;
    let has_fma = module
        .isa()
        .isa_flags()
        .iter()
        .any(|f| f.name == "has_fma" && f.as_bool() == Some(true));
    let mut comp = Compiler {
        module,
        kernel,
        options: options.clone(),
        has_fma,
        closures: 0,
        clif: Vec::new(),
        asm: Vec::new(),
    };
    let entry = comp.entry_function()?;
    let Compiler {
        mut module,
        clif,
        asm,
        ..
    } = comp;
    module
        .finalize_definitions()
        .map_err(|e| CodegenError::Cranelift {
            function: "finalize".into(),
            message: e.to_string(),
        })?;
    let address = module.get_finalized_function(entry);
    // SAFETY: `entry` was generated with the signature `fn(*const u64)`.
    let entry =
        unsafe { std::mem::transmute::<*const u8, unsafe extern "C" fn(*const u64)>(address) };
    Ok(Compiled {
        module: Some(module),
        entry,
        clif,
        asm,
    })
}

fn new_module(options: &CodegenOptions) -> Result<JITModule, CodegenError> {
    let isa_error = |e: &dyn std::fmt::Display| CodegenError::Isa(e.to_string());
    let mut flags = settings::builder();
    let settings = [
        ("opt_level", options.opt_level),
        (
            "enable_verifier",
            if options.verify { "true" } else { "false" },
        ),
        ("is_pic", "false"),
        ("use_colocated_libcalls", "false"),
    ];
    for (name, value) in settings {
        flags.set(name, value).map_err(|e| isa_error(&e))?;
    }
    let mut isa_flags = cranelift_native::builder().map_err(|e| isa_error(&e))?;
    // Without AVX-512DQ, a 64-bit lane multiply of two widened u32 vectors (division by a
    // constant) is one `pmuludq`, not `vpmullq` (3 uops, 15 cycles). Nothing else strata
    // emits needs DQ: vectors are 128 bits and i64 lanes are rare.
    // (An ISA without the setting has nothing to turn off.)
    let _ = isa_flags.set("has_avx512dq", "false");
    let isa = isa_flags
        .finish(settings::Flags::new(flags))
        .map_err(|e| isa_error(&e))?;
    let mut builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    for (name, address) in runtime::symbols() {
        builder.symbol(name, address);
    }
    Ok(JITModule::new(builder))
}

/// State shared by every function of one kernel.
pub(crate) struct Compiler<'k> {
    module: JITModule,
    kernel: &'k LoweredKernel,
    options: CodegenOptions,
    pub(crate) has_fma: bool,
    closures: usize,
    clif: Vec<String>,
    asm: Vec<String>,
}

impl Compiler<'_> {
    fn pointer(&self) -> Type {
        self.module.target_config().pointer_type()
    }

    fn entry_function(&mut self) -> Result<FuncId, CodegenError> {
        let mut sig = self.module.make_signature();
        sig.params.push(AbiParam::new(self.pointer()));
        let id = self.declare("entry", &sig)?;
        let kernel = self.kernel;
        self.define(id, "entry", sig, |cg, params| {
            cg.load_frame(params[0], kernel);
            cg.stmt(&kernel.body);
        })?;
        Ok(id)
    }

    fn declare(&mut self, name: &str, sig: &Signature) -> Result<FuncId, CodegenError> {
        self.module
            .declare_function(name, Linkage::Local, sig)
            .map_err(|e| CodegenError::Cranelift {
                function: name.to_string(),
                message: e.to_string(),
            })
    }

    /// Builds the body of function `id` with `build`, which gets the entry block's parameters.
    fn define(
        &mut self,
        id: FuncId,
        name: &str,
        sig: Signature,
        build: impl FnOnce(&mut FnCodegen, &[Value]),
    ) -> Result<(), CodegenError> {
        let mut ctx = self.module.make_context();
        ctx.func.signature = sig;
        ctx.func.name = UserFuncName::user(0, id.as_u32());
        let mut fctx = FunctionBuilderContext::new();
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let block = b.create_block();
            b.append_block_params_for_function_params(block);
            b.switch_to_block(block);
            b.seal_block(block);
            let params = b.block_params(block).to_vec();
            let mut cg = FnCodegen {
                b,
                env: Env::default(),
                comp: self,
                refs: HashMap::new(),
                failure: None,
                lets: Vec::new(),
                promoted: Vec::new(),
                loops: Vec::new(),
            };
            build(&mut cg, &params);
            cg.b.ins().return_(&[]);
            let FnCodegen { b, failure, .. } = cg;
            b.finalize(self.module.target_config());
            if let Some(e) = failure {
                return Err(e);
            }
        }
        fma_order::order_multiplicands(&mut ctx.func);
        self.finish(id, name, &mut ctx)
    }

    fn finish(&mut self, id: FuncId, name: &str, ctx: &mut Context) -> Result<(), CodegenError> {
        if self.options.keep_text {
            self.clif.push(ctx.func.display().to_string());
            ctx.set_disasm(true);
        }
        self.module
            .define_function(id, ctx)
            .map_err(|e| CodegenError::Cranelift {
                function: name.to_string(),
                message: format!("{e:?}"),
            })?;
        if self.options.keep_text {
            let text = ctx
                .compiled_code()
                .and_then(|c| c.vcode.clone())
                .unwrap_or_default();
            self.asm.push(format!("; {name}\n{text}"));
        }
        self.module.clear_context(ctx);
        Ok(())
    }
}

/// What is in scope while generating code: variables, buffers, parameters, the thread count
/// and, in code compiled with profiling, the call's profiling counters (`crate::profile`).
#[derive(Clone, Default)]
pub(crate) struct Env {
    vars: Vec<(String, CVal, IrType)>,
    buffers: Vec<(String, Value)>,
    params: Vec<(String, Value, Dtype)>,
    threads: Option<Value>,
    profile: Option<Value>,
    /// The inputs: value semantics means the kernel never writes them.
    read_only: Vec<String>,
    /// How many variables were in scope at the innermost `if` enclosing the code being
    /// generated (`None` outside any `if` of this function). Bounds inference narrows regions
    /// by guards, so an input load there may be out of bounds if hoisted above the `if`.
    pub condition_scope: Option<usize>,
}

impl Env {
    pub fn push_var(&mut self, name: &str, v: CVal, ty: IrType) {
        self.vars.push((name.to_string(), v, ty));
    }

    pub fn pop_var(&mut self) {
        self.vars.pop();
    }

    /// A variable's value (the verifier guarantees it is bound).
    pub fn var(&self, name: &str) -> CVal {
        self.vars
            .iter()
            .rev()
            .find(|(n, ..)| n == name)
            .map(|(_, v, _)| v.clone())
            .unwrap_or_else(|| panic!("strata bug: unbound `{name}` reached code generation"))
    }

    /// Where `name`'s binding sits in the scope (later bindings are nested deeper); 0 when it
    /// is not a variable.
    pub fn var_depth(&self, name: &str) -> usize {
        self.vars
            .iter()
            .rposition(|(n, ..)| n == name)
            .map_or(0, |i| i + 1)
    }

    /// How many variables are in scope.
    pub fn scope_len(&self) -> usize {
        self.vars.len()
    }

    /// Whether `name` is never written by the kernel (an input).
    pub fn is_read_only(&self, name: &str) -> bool {
        self.read_only.iter().any(|n| n == name)
    }

    pub fn buffer(&self, name: &str) -> Value {
        self.buffers
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| {
                panic!("strata bug: unknown buffer `{name}` reached code generation")
            })
    }

    pub fn param(&self, name: &str) -> Value {
        self.params
            .iter()
            .find(|(n, ..)| n == name)
            .map(|(_, v, _)| *v)
            .unwrap_or_else(|| {
                panic!("strata bug: unknown parameter `{name}` reached code generation")
            })
    }
}

/// Generates one Cranelift function.
pub(crate) struct FnCodegen<'c, 'f, 'k> {
    pub b: FunctionBuilder<'f>,
    pub env: Env,
    pub comp: &'c mut Compiler<'k>,
    refs: HashMap<String, FuncRef>,
    /// The first error (from defining a parallel body); reported when the function is done.
    failure: Option<CodegenError>,
    /// The lets in scope with their values expanded, to recognise promoted locations.
    lets: Vec<(String, strata_scheduler::Expr)>,
    /// Locations living in variables during the loop being generated.
    promoted: Vec<(promote::Location, Vec<cranelift_frontend::Variable>)>,
    /// The loops being generated, innermost last.
    loops: Vec<LoopInductions>,
}

/// A loop being generated: its counter and the induction variables its body asked for.
pub(crate) struct LoopInductions {
    /// The counter (an `i32` parameter of the loop header).
    counter: Value,
    /// `(step, variable)`: the variable holds `step * counter` in 64 bits.
    steps: Vec<(i64, cranelift_frontend::Variable)>,
}

impl FnCodegen<'_, '_, '_> {
    /// Binds buffers, sizes, parameters, the thread count and (with profiling) the profiling
    /// counters' address from the entry's frame.
    fn load_frame(&mut self, frame: Value, kernel: &LoweredKernel) {
        let flags = expr::mem_flags();
        let ptr = self.comp.pointer();
        let mut slot = 0i32;
        let mut next = |cg: &mut Self, ty: Type| {
            let v = cg.b.ins().load(ty, flags, frame, slot * 8);
            slot += 1;
            v
        };
        for input in &kernel.inputs {
            let p = next(self, ptr);
            self.env.buffers.push((input.name.clone(), p));
            self.env.read_only.push(input.name.clone());
        }
        let out = next(self, ptr);
        self.env.buffers.push((kernel.output.name.clone(), out));
        for size in &kernel.sizes {
            let v = next(self, types::I32);
            self.env.push_var(size, CVal::Scalar(v), IrType::I32);
        }
        for (name, dtype) in &kernel.params {
            let v = next(self, values::scalar_type(*dtype));
            self.env.params.push((name.clone(), v, *dtype));
        }
        self.env.threads = Some(next(self, types::I32));
        if self.comp.options.profile {
            self.env.profile = Some(next(self, ptr));
        }
    }

    /// A reference to a runtime function, imported once per function.
    fn runtime_ref(&mut self, name: &str, params: &[Type], returns: &[Type]) -> FuncRef {
        if let Some(r) = self.refs.get(name) {
            return *r;
        }
        let mut sig = self.comp.module.make_signature();
        sig.params.extend(params.iter().map(|t| AbiParam::new(*t)));
        sig.returns
            .extend(returns.iter().map(|t| AbiParam::new(*t)));
        let id = self
            .comp
            .module
            .declare_function(name, Linkage::Import, &sig)
            .unwrap_or_else(|e| panic!("strata bug: runtime function `{name}`: {e}"));
        let r = self.comp.module.declare_func_in_func(id, self.b.func);
        self.refs.insert(name.to_string(), r);
        r
    }

    /// Binds a let: its value for code generation and its expanded expression for matching
    /// promoted locations.
    fn push_let(&mut self, name: &str, value: &strata_scheduler::Expr, v: CVal) {
        let expanded = promote::expand(value, &self.lets);
        self.lets.push(promote::let_entry(name, expanded));
        self.env.push_var(name, v, value.ty());
    }

    fn pop_let(&mut self) {
        self.lets.pop();
        self.env.pop_var();
    }

    /// The variables holding `buffer[index]`, if that location is promoted.
    fn promoted_location(
        &self,
        buffer: &str,
        index: &strata_scheduler::Expr,
    ) -> Option<Vec<cranelift_frontend::Variable>> {
        promote::find(&self.promoted, buffer, index, &self.lets).cloned()
    }

    /// The scalar math function `name` (`nargs` arguments of `dtype`).
    fn math_ref(&mut self, name: &str, dtype: Dtype, nargs: usize) -> FuncRef {
        let t = values::scalar_type(dtype);
        self.runtime_ref(name, &vec![t; nargs], &[t])
    }
}
