//! From a lowered kernel to callable machine code: a module for the host CPU, the functions,
//! LLVM's optimization pipeline, and an MCJIT engine whose runtime calls are mapped to
//! strata's runtime. The engine, its module and their context live as long as the code.

use super::functions::{define_entry, Fail, Gen};
use crate::backend::{CodeGenerator, CodegenError, CodegenOptions, MachineCode};
use crate::runtime;
use inkwell::context::Context;
use inkwell::execution_engine::ExecutionEngine;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine,
};
use inkwell::OptimizationLevel;
use std::mem::ManuallyDrop;
use strata_scheduler::LoweredKernel;

/// The LLVM code generator (cargo feature `llvm`).
pub struct Llvm;

impl CodeGenerator for Llvm {
    fn compile(
        &self,
        kernel: &LoweredKernel,
        options: &CodegenOptions,
    ) -> Result<Box<dyn MachineCode>, CodegenError> {
        Ok(Box::new(compile(kernel, options)?))
    }
}

/// Machine code made by LLVM, with what owns it.
pub struct LlvmCode {
    // Dropped in this order (see `Drop`): the module and the engine refer to the context.
    module: ManuallyDrop<Module<'static>>,
    engine: ManuallyDrop<ExecutionEngine<'static>>,
    context: ManuallyDrop<Box<Context>>,
    entry: unsafe extern "C" fn(*const u64),
    ir: Vec<String>,
    asm: Vec<String>,
}

impl Drop for LlvmCode {
    fn drop(&mut self) {
        // SAFETY: each field is dropped once, the context last: nothing refers to it after.
        unsafe {
            ManuallyDrop::drop(&mut self.module);
            ManuallyDrop::drop(&mut self.engine);
            ManuallyDrop::drop(&mut self.context);
        }
    }
}

impl MachineCode for LlvmCode {
    fn entry(&self) -> unsafe extern "C" fn(*const u64) {
        self.entry
    }

    fn ir_text(&self) -> &[String] {
        &self.ir
    }

    fn asm_text(&self) -> &[String] {
        &self.asm
    }
}

fn llvm_error(function: &str, message: impl ToString) -> CodegenError {
    CodegenError::Llvm {
        function: function.to_string(),
        message: message.to_string(),
    }
}

/// Compiles `kernel` with LLVM for this CPU.
pub fn compile(kernel: &LoweredKernel, options: &CodegenOptions) -> Result<LlvmCode, CodegenError> {
    let context = Box::new(Context::create());
    // SAFETY: the context is boxed (its address is stable) and `LlvmCode` drops it after
    // everything made from it; on an early return the locals below, declared later, are
    // dropped first.
    let ctx: &'static Context = unsafe { &*(context.as_ref() as *const Context) };
    let machine = host_machine()?;
    let mut gen = Gen {
        ctx,
        module: ctx.create_module(&kernel.name),
        cpu: TargetMachine::get_host_cpu_name().to_string(),
        features: TargetMachine::get_host_cpu_features().to_string(),
        count: 0,
        profile: (options.profile).then(|| crate::profile::produced_functions(&kernel.body)),
    };
    gen.module.set_triple(&machine.get_triple());
    gen.module
        .set_data_layout(&machine.get_target_data().get_data_layout());
    define_entry(&mut gen, kernel).map_err(|Fail(m)| llvm_error(&kernel.name, m))?;
    let module = gen.module;
    if options.verify {
        module.verify().map_err(|e| {
            llvm_error(&kernel.name, format!("{}\n{}", e, module.print_to_string()))
        })?;
    }
    optimize(&module, &machine, options)?;
    let mut ir = Vec::new();
    let mut asm = Vec::new();
    if options.keep_text {
        ir.push(module.print_to_string().to_string());
        asm.push(assembly(&module, &machine)?);
    }
    let engine = module
        .create_jit_execution_engine(engine_level(options))
        .map_err(|e| llvm_error("engine", e))?;
    map_runtime(&module, &engine);
    let address = engine
        .get_function_address("entry")
        .map_err(|e| llvm_error("entry", e))?;
    // SAFETY: `entry` was generated with the signature `fn(*const u64)`.
    let entry = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*const u64)>(address) };
    Ok(LlvmCode {
        module: ManuallyDrop::new(module),
        engine: ManuallyDrop::new(engine),
        context: ManuallyDrop::new(context),
        entry,
        ir,
        asm,
    })
}

/// A target machine for this CPU, with all its features (AVX-512 where present).
pub(crate) fn host_machine() -> Result<TargetMachine, CodegenError> {
    Target::initialize_native(&InitializationConfig::default()).map_err(CodegenError::Isa)?;
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple).map_err(|e| CodegenError::Isa(e.to_string()))?;
    target
        .create_target_machine(
            &triple,
            &TargetMachine::get_host_cpu_name().to_string(),
            &TargetMachine::get_host_cpu_features().to_string(),
            OptimizationLevel::Default,
            RelocMode::Default,
            CodeModel::JITDefault,
        )
        .ok_or_else(|| CodegenError::Isa("LLVM cannot target this CPU".into()))
}

/// Runs LLVM's `default<O2>` pipeline (nothing for `opt_level: "none"`).
fn optimize(
    module: &Module,
    machine: &TargetMachine,
    options: &CodegenOptions,
) -> Result<(), CodegenError> {
    if options.opt_level == "none" {
        return Ok(());
    }
    module
        .run_passes("default<O2>", machine, PassBuilderOptions::create())
        .map_err(|e| llvm_error("passes", e))
}

fn engine_level(options: &CodegenOptions) -> OptimizationLevel {
    if options.opt_level == "none" {
        OptimizationLevel::None
    } else {
        OptimizationLevel::Default
    }
}

/// The module's machine code as assembly text.
fn assembly(module: &Module, machine: &TargetMachine) -> Result<String, CodegenError> {
    let buffer = machine
        .write_to_memory_buffer(module, FileType::Assembly)
        .map_err(|e| llvm_error("assembly", e))?;
    Ok(String::from_utf8_lossy(buffer.as_slice()).into_owned())
}

/// Points every runtime function the module declares at strata's runtime.
fn map_runtime(module: &Module, engine: &ExecutionEngine) {
    for (name, address) in runtime::symbols() {
        if let Some(function) = module.get_function(name) {
            engine.add_global_mapping(&function, address as usize);
        }
    }
}
