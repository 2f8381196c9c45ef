//! Functions of one kernel: the entry, parallel loop bodies, and the scope each one sees.
//!
//! Every function is built in two parts. The *inner* function takes every value in scope as a
//! parameter, buffer pointers marked `noalias` (and `readonly` for inputs), and runs the code.
//! A thin *wrapper* with the ABI the runtime calls (`entry(frame)`, `body(ctx, lo, hi)`) loads
//! the scope from the frame or the context and calls the inner function. So the code that
//! does the work always sees buffers LLVM knows are disjoint, wherever it was outlined from.

use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::{Builder, BuilderError};
use inkwell::context::Context;
use inkwell::module::{Linkage, Module};
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, IntValue, PointerValue,
};
use inkwell::AddressSpace;
use strata_dsl::Dtype;
use strata_scheduler::{LoweredKernel, Type as IrType};

/// Why code generation stopped: an inconsistency between the loop IR and what was built (a
/// strata bug), reported as a `CodegenError` rather than a panic.
#[derive(Debug)]
pub struct Fail(pub String);

impl Fail {
    pub fn msg(m: &str) -> Fail {
        Fail(m.to_string())
    }

    /// Operands of an operation whose types do not fit it.
    pub fn types(op: &str, a: BasicValueEnum, b: BasicValueEnum) -> Fail {
        Fail(format!(
            "`{op}` on operands of types {} and {}",
            a.get_type().print_to_string(),
            b.get_type().print_to_string()
        ))
    }
}

/// `v` as an integer (or `i1`) scalar.
pub fn int(v: BasicValueEnum) -> Result<IntValue, Fail> {
    match v {
        BasicValueEnum::IntValue(i) => Ok(i),
        other => Err(Fail::types("an integer", other, other)),
    }
}

/// `v` as a pointer.
pub fn pointer(v: BasicValueEnum) -> Result<PointerValue, Fail> {
    match v {
        BasicValueEnum::PointerValue(p) => Ok(p),
        other => Err(Fail::types("a pointer", other, other)),
    }
}

impl From<BuilderError> for Fail {
    fn from(e: BuilderError) -> Fail {
        Fail(e.to_string())
    }
}

/// State shared by every function of one kernel.
pub struct Gen<'ctx> {
    pub ctx: &'ctx Context,
    pub module: Module<'ctx>,
    /// `target-cpu` and `target-features` of the host, set on every function.
    pub cpu: String,
    pub features: String,
    /// How many functions were made (for unique names).
    pub count: usize,
    /// With profiling on, the functions `produce` blocks compute (`crate::profile`), else
    /// `None`.
    pub profile: Option<Vec<String>>,
}

/// What is in scope while generating code: variables, buffers, parameters, the thread count
/// and, in code compiled with profiling, the call's profiling counters (`crate::profile`).
#[derive(Clone, Default)]
pub struct Env<'ctx> {
    pub vars: Vec<(String, BasicValueEnum<'ctx>, IrType)>,
    pub buffers: Vec<(String, PointerValue<'ctx>)>,
    pub params: Vec<(String, BasicValueEnum<'ctx>, Dtype)>,
    pub threads: Option<IntValue<'ctx>>,
    pub profile: Option<PointerValue<'ctx>>,
    /// The inputs: value semantics means the kernel never writes them.
    pub read_only: Vec<String>,
}

impl<'ctx> Env<'ctx> {
    /// Every value in scope, in a fixed order: variables, buffers, parameters, threads,
    /// profiling counters.
    pub fn values(&self) -> Vec<BasicValueEnum<'ctx>> {
        let mut out: Vec<BasicValueEnum> = self.vars.iter().map(|(_, v, _)| *v).collect();
        out.extend(self.buffers.iter().map(|(_, p)| p.as_basic_value_enum()));
        out.extend(self.params.iter().map(|(_, v, _)| *v));
        out.extend(self.threads.map(|t| t.as_basic_value_enum()));
        out.extend(self.profile.map(|p| p.as_basic_value_enum()));
        out
    }

    /// The same scope with its values replaced, in `values`' order, by `new`.
    pub fn rebind(&self, new: &[BasicValueEnum<'ctx>]) -> Result<Env<'ctx>, Fail> {
        if new.len() != self.values().len() {
            return Err(Fail::msg("a scope rebound to the wrong number of values"));
        }
        let mut it = new.iter().copied();
        let mut env = Env {
            read_only: self.read_only.clone(),
            ..Env::default()
        };
        for ((name, _, ty), v) in self.vars.iter().zip(it.by_ref()) {
            env.vars.push((name.clone(), v, *ty));
        }
        for ((name, _), v) in self.buffers.iter().zip(it.by_ref()) {
            env.buffers.push((name.clone(), pointer(v)?));
        }
        for ((name, _, dtype), v) in self.params.iter().zip(it.by_ref()) {
            env.params.push((name.clone(), v, *dtype));
        }
        if self.threads.is_some() {
            env.threads = it.next().map(int).transpose()?;
        }
        if self.profile.is_some() {
            env.profile = it.next().map(pointer).transpose()?;
        }
        Ok(env)
    }

    pub fn var(&self, name: &str) -> Result<BasicValueEnum<'ctx>, Fail> {
        self.vars
            .iter()
            .rev()
            .find(|(n, ..)| n == name)
            .map(|(_, v, _)| *v)
            .ok_or_else(|| Fail(format!("unbound `{name}` reached code generation")))
    }

    pub fn buffer(&self, name: &str) -> Result<PointerValue<'ctx>, Fail> {
        self.buffers
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, p)| *p)
            .ok_or_else(|| Fail(format!("unknown buffer `{name}` reached code generation")))
    }

    pub fn param(&self, name: &str) -> Result<BasicValueEnum<'ctx>, Fail> {
        self.params
            .iter()
            .find(|(n, ..)| n == name)
            .map(|(_, v, _)| *v)
            .ok_or_else(|| {
                Fail(format!(
                    "unknown parameter `{name}` reached code generation"
                ))
            })
    }
}

/// Generates one LLVM function.
pub struct FnGen<'g, 'ctx> {
    pub g: &'g mut Gen<'ctx>,
    pub b: Builder<'ctx>,
    pub function: FunctionValue<'ctx>,
    /// The first block, holding only `alloca`s (so stack storage is reserved once per call,
    /// not per loop iteration); it branches to the code when the function is finished.
    allocas: BasicBlock<'ctx>,
    pub env: Env<'ctx>,
    /// The lets in scope with their values expanded, to recognise promoted locations.
    pub lets: Vec<(String, strata_scheduler::Expr)>,
    /// Locations living in stack slots (registers, after SROA) during the loop being
    /// generated.
    pub promoted: Vec<(crate::promote::Location, PointerValue<'ctx>)>,
}

impl<'g, 'ctx> FnGen<'g, 'ctx> {
    /// Starts function `function`: an allocas block, then a block the code goes in.
    pub fn start(g: &'g mut Gen<'ctx>, function: FunctionValue<'ctx>) -> FnGen<'g, 'ctx> {
        let allocas = g.ctx.append_basic_block(function, "allocas");
        let code = g.ctx.append_basic_block(function, "code");
        let b = g.ctx.create_builder();
        b.position_at_end(code);
        FnGen {
            g,
            b,
            function,
            allocas,
            env: Env::default(),
            lets: Vec::new(),
            promoted: Vec::new(),
        }
    }

    /// Returns from the function and links the allocas block to the code.
    pub fn finish(self) -> Result<(), Fail> {
        self.b.build_return(None)?;
        let code = self
            .allocas
            .get_next_basic_block()
            .ok_or_else(|| Fail::msg("a function without code"))?;
        self.b.position_at_end(self.allocas);
        self.b.build_unconditional_branch(code)?;
        Ok(())
    }

    /// Stack storage of `ty` (times `count`), reserved in the allocas block.
    pub fn alloca(
        &mut self,
        ty: BasicTypeEnum<'ctx>,
        count: u32,
        align: u32,
    ) -> Result<PointerValue<'ctx>, Fail> {
        let b = self.g.ctx.create_builder();
        b.position_at_end(self.allocas);
        let n = self.g.ctx.i32_type().const_int(u64::from(count), false);
        let ptr = b.build_array_alloca(ty, n, "")?;
        if let Some(inst) = ptr.as_instruction_value() {
            inst.set_alignment(align).map_err(|e| Fail(e.to_string()))?;
        }
        Ok(ptr)
    }

    pub fn ptr_type(&self) -> inkwell::types::PointerType<'ctx> {
        self.g.ctx.ptr_type(AddressSpace::default())
    }

    /// Declares a new function of the kernel's module with the host's target attributes.
    pub fn new_function(
        g: &mut Gen<'ctx>,
        name: &str,
        params: &[BasicTypeEnum<'ctx>],
        linkage: Linkage,
    ) -> FunctionValue<'ctx> {
        let params: Vec<BasicMetadataTypeEnum> = params.iter().map(|&t| t.into()).collect();
        let fn_type = g.ctx.void_type().fn_type(&params, false);
        let function = g.module.add_function(name, fn_type, Some(linkage));
        for (key, value) in [("target-cpu", &g.cpu), ("target-features", &g.features)] {
            let attribute = g.ctx.create_string_attribute(key, value);
            function.add_attribute(AttributeLoc::Function, attribute);
        }
        function.add_attribute(AttributeLoc::Function, enum_attribute(g.ctx, "nounwind"));
        function
    }

    /// Calls a new inner function taking every value of `env` (and then `extra`) as
    /// parameters, whose code `build` generates with the scope rebound to its parameters;
    /// buffer parameters are `noalias` (inputs also `readonly`).
    pub fn call_inner(
        &mut self,
        env: &Env<'ctx>,
        extra: &[IntValue<'ctx>],
        build: impl FnOnce(&mut FnGen<'_, 'ctx>, &[IntValue<'ctx>]) -> Result<(), Fail>,
    ) -> Result<(), Fail> {
        let mut args = env.values();
        args.extend(extra.iter().map(|v| v.as_basic_value_enum()));
        let types: Vec<BasicTypeEnum> = args.iter().map(|v| v.get_type()).collect();
        self.g.count += 1;
        let name = format!("inner_{}", self.g.count);
        let inner = FnGen::new_function(self.g, &name, &types, Linkage::Internal);
        mark_buffers(self.g.ctx, inner, env);
        let params: Vec<BasicValueEnum> = inner.get_param_iter().collect();
        let (scope, extra_params) = params.split_at(params.len() - extra.len());
        let extra_params = extra_params
            .iter()
            .map(|&p| int(p))
            .collect::<Result<Vec<_>, _>>()?;
        let mut gen = FnGen::start(self.g, inner);
        gen.env = env.rebind(scope)?;
        build(&mut gen, &extra_params)?;
        gen.finish()?;
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        self.b.build_call(inner, &args, "")?;
        Ok(())
    }

    /// The runtime function `name` (declared once per module; its address is mapped when the
    /// engine is made).
    pub fn runtime(
        &mut self,
        name: &str,
        params: &[BasicTypeEnum<'ctx>],
        ret: Option<BasicTypeEnum<'ctx>>,
    ) -> FunctionValue<'ctx> {
        if let Some(f) = self.g.module.get_function(name) {
            return f;
        }
        let params: Vec<BasicMetadataTypeEnum> = params.iter().map(|&t| t.into()).collect();
        let fn_type = match ret {
            Some(t) => t.fn_type(&params, false),
            None => self.g.ctx.void_type().fn_type(&params, false),
        };
        self.g
            .module
            .add_function(name, fn_type, Some(Linkage::External))
    }
}

/// `noalias` on every buffer parameter of `inner` (in `env`'s order), `readonly` on inputs'.
fn mark_buffers<'ctx>(ctx: &'ctx Context, inner: FunctionValue<'ctx>, env: &Env<'ctx>) {
    let first = env.vars.len() as u32;
    for (k, (name, _)) in env.buffers.iter().enumerate() {
        let loc = AttributeLoc::Param(first + k as u32);
        inner.add_attribute(loc, enum_attribute(ctx, "noalias"));
        if env.read_only.iter().any(|n| n == name) {
            inner.add_attribute(loc, enum_attribute(ctx, "readonly"));
        }
    }
}

/// The LLVM attribute `name` without a value.
pub fn enum_attribute(ctx: &Context, name: &str) -> Attribute {
    ctx.create_enum_attribute(Attribute::get_named_enum_kind_id(name), 0)
}

/// Defines `entry(frame)`: loads buffers, sizes, parameters and the thread count from the
/// frame (one 8-byte slot each, in that order) and runs the kernel's body.
pub fn define_entry<'ctx>(g: &mut Gen<'ctx>, kernel: &LoweredKernel) -> Result<(), Fail> {
    let ptr: BasicTypeEnum = g.ctx.ptr_type(AddressSpace::default()).into();
    let entry = FnGen::new_function(g, "entry", &[ptr], Linkage::External);
    let frame = entry
        .get_nth_param(0)
        .ok_or_else(|| Fail::msg("entry without a frame"))
        .and_then(pointer)?;
    let mut gen = FnGen::start(g, entry);
    let env = gen.load_frame(frame, kernel)?;
    gen.call_inner(&env, &[], |inner, _| inner.stmt(&kernel.body))?;
    gen.finish()
}

impl<'ctx> FnGen<'_, 'ctx> {
    /// The scope at the kernel's start, read from the frame.
    fn load_frame(
        &mut self,
        frame: PointerValue<'ctx>,
        kernel: &LoweredKernel,
    ) -> Result<Env<'ctx>, Fail> {
        let mut slot = 0u64;
        let mut env = Env::default();
        let ptr_ty: BasicTypeEnum = self.ptr_type().into();
        for input in &kernel.inputs {
            let p = self.frame_slot(frame, &mut slot, ptr_ty)?;
            env.buffers
                .push((input.name.clone(), p.into_pointer_value()));
            env.read_only.push(input.name.clone());
        }
        let out = self.frame_slot(frame, &mut slot, ptr_ty)?;
        env.buffers
            .push((kernel.output.name.clone(), pointer(out)?));
        let i32_ty: BasicTypeEnum = self.g.ctx.i32_type().into();
        for size in &kernel.sizes {
            let v = self.frame_slot(frame, &mut slot, i32_ty)?;
            env.vars.push((size.clone(), v, IrType::I32));
        }
        for (name, dtype) in &kernel.params {
            let v = self.frame_slot(frame, &mut slot, self.memory_type(*dtype))?;
            let v = self.register_form(v, IrType::scalar(*dtype))?;
            env.params.push((name.clone(), v, *dtype));
        }
        env.threads = Some(int(self.frame_slot(frame, &mut slot, i32_ty)?)?);
        if self.g.profile.is_some() {
            env.profile = Some(pointer(self.frame_slot(frame, &mut slot, ptr_ty)?)?);
        }
        Ok(env)
    }

    /// The low bytes of the frame's next 8-byte slot, as `ty`.
    fn frame_slot(
        &mut self,
        frame: PointerValue<'ctx>,
        slot: &mut u64,
        ty: BasicTypeEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>, Fail> {
        let i64_ty = self.g.ctx.i64_type();
        let index = i64_ty.const_int(*slot, false);
        *slot += 1;
        // SAFETY (of the IR, not of this Rust call): the frame has one slot per value.
        let at = unsafe { self.b.build_gep(i64_ty, frame, &[index], "")? };
        Ok(self.b.build_load(ty, at, "")?)
    }
}
