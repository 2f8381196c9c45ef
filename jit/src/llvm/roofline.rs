//! The compute peak of LLVM-generated code on this CPU, for `strata roofline`: one JIT-compiled
//! loop of independent `llvm.fma` accumulator chains per vector register width the host has
//! (xmm `<4 x float>`, ymm `<8 x float>`, zmm `<16 x float>`), one thread, compiled the way the
//! LLVM backend compiles kernels (the host's CPU and features on the function, `default<O2>`,
//! MCJIT). Beside Cranelift's f32x4 figure it shows what the wider registers are worth.
//!
//! The loop is `void peak(i64 n, float* in, float* out)`: the multiplier, the addend and each
//! chain's start are loaded from `in` and the chains are stored to `out`, so LLVM can fold
//! nothing away, and without fast-math flags it cannot merge or reorder the chains either.

use super::{best_rate, calibrate, LlvmPeaks, WidthPeak, FMA_CHAINS, LINKS};
use inkwell::attributes::AttributeLoc;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::execution_engine::JitFunction;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::TargetMachine;
use inkwell::types::VectorType;
use inkwell::values::{BasicValue, FunctionValue, PointerValue, VectorValue};
use inkwell::{AddressSpace, OptimizationLevel};
use std::time::Duration;

/// The function under test: `peak(n, in, out)`.
type PeakFn = unsafe extern "C" fn(i64, *const f32, *mut f32);

/// Measures the peak of every register width the host has: each the best of `repetitions`
/// repetitions of at least `min_time`. `Err` says why LLVM could not build or run a probe.
pub fn measure(repetitions: usize, min_time: Duration) -> Result<LlvmPeaks, String> {
    let native_fma = host_has("fma");
    let mut peaks = Vec::new();
    for (register, lanes) in host_widths() {
        let gflops = width_peak(lanes, native_fma, repetitions, min_time)?;
        peaks.push(WidthPeak {
            register,
            lanes,
            gflops,
        });
    }
    Ok(LlvmPeaks {
        cpu: TargetMachine::get_host_cpu_name().to_string(),
        native_fma,
        peaks,
    })
}

/// The vector widths this CPU has, as (register, f32 lanes), narrowest first.
fn host_widths() -> Vec<(&'static str, u32)> {
    if !cfg!(target_arch = "x86_64") {
        return vec![("v128", 4)];
    }
    let mut widths = vec![("xmm", 4)];
    if host_has("avx") {
        widths.push(("ymm", 8));
    }
    if host_has("avx512f") {
        widths.push(("zmm", 16));
    }
    widths
}

/// Whether this x86-64 CPU has `feature` (`fma`, `avx`, `avx512f`); false elsewhere.
fn host_has(feature: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match feature {
            "fma" => std::arch::is_x86_feature_detected!("fma"),
            "avx" => std::arch::is_x86_feature_detected!("avx"),
            "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
            _ => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = feature;
        false
    }
}

/// The peak of `<lanes x float>` chains, GFLOP/s: the probe compiled in a context of its own
/// (freed on return), calibrated to about a millisecond per call, then timed.
fn width_peak(
    lanes: u32,
    native_fma: bool,
    repetitions: usize,
    min_time: Duration,
) -> Result<f64, String> {
    let context = Context::create();
    let module = probe_module(&context, lanes, native_fma)?;
    let engine = module
        .create_jit_execution_engine(OptimizationLevel::Aggressive)
        .map_err(|e| format!("LLVM cannot start its JIT: {e}"))?;
    // SAFETY: `peak` was defined by `define_peak` with exactly this signature.
    let peak: JitFunction<PeakFn> =
        unsafe { engine.get_function("peak") }.map_err(|e| format!("the JIT lacks `peak`: {e}"))?;
    let (input, mut output) = buffers(lanes);
    let mut call = |n: i64| {
        // SAFETY: `input` holds the (2 + FMA_CHAINS) vectors `peak` loads and `output` the
        // FMA_CHAINS vectors it stores, each `lanes` floats.
        unsafe { peak.call(n, input.as_ptr(), output.as_mut_ptr()) };
        std::hint::black_box(&output);
    };
    let iters = calibrate(&mut call);
    let flops_per_iter = (2 * lanes as usize * FMA_CHAINS * LINKS) as f64;
    Ok(best_rate(repetitions, min_time, || {
        call(iters);
        flops_per_iter * iters as f64
    }) / 1e9)
}

/// The input (multiplier 0.5, addend 0.25, chain `i` starting at `i / 100`) and output
/// buffers of a probe of `lanes` lanes.
fn buffers(lanes: u32) -> (Vec<f32>, Vec<f32>) {
    let lanes = lanes as usize;
    let mut input = vec![0.5; lanes];
    input.extend(std::iter::repeat_n(0.25, lanes));
    for chain in 0..FMA_CHAINS {
        input.extend(std::iter::repeat_n(chain as f32 * 0.01, lanes));
    }
    (input, vec![0.0; FMA_CHAINS * lanes])
}

/// The probe's module for this CPU, optimized by `default<O2>`.
fn probe_module(context: &Context, lanes: u32, native_fma: bool) -> Result<Module<'_>, String> {
    let machine = host_machine()?;
    let module = context.create_module("strata_roofline");
    module.set_triple(&machine.get_triple());
    module.set_data_layout(&machine.get_target_data().get_data_layout());
    define_peak(context, &module, lanes, native_fma)
        .map_err(|e| format!("building `peak`: {e}"))?;
    module
        .verify()
        .map_err(|e| format!("LLVM rejected `peak`: {e}"))?;
    module
        .run_passes("default<O2>", &machine, PassBuilderOptions::create())
        .map_err(|e| format!("LLVM's passes failed on `peak`: {e}"))?;
    Ok(module)
}

/// A target machine for this CPU with all its features: the LLVM backend's.
fn host_machine() -> Result<TargetMachine, String> {
    crate::llvm::host_machine().map_err(|e| e.to_string())
}

/// Why building the probe's IR failed (LLVM's builder refuses only misuse, a bug here).
type BuildResult<T> = Result<T, String>;

/// Defines `peak(n, in, out)`: loads the multiplier `a`, the addend `c` and [`FMA_CHAINS`]
/// accumulators from `in`; while `n > 0`, advances every chain `acc = fma(acc, a, c)` by
/// [`LINKS`] links and counts `n` down; stores the accumulators to `out`. The function
/// carries the host's `target-cpu` and `target-features` (MCJIT compiles for a generic x86-64
/// otherwise, without AVX).
fn define_peak<'ctx>(
    context: &'ctx Context,
    module: &Module<'ctx>,
    lanes: u32,
    native_fma: bool,
) -> BuildResult<()> {
    let (i64_type, ptr) = (
        context.i64_type(),
        context.ptr_type(AddressSpace::default()),
    );
    let fn_type = context
        .void_type()
        .fn_type(&[i64_type.into(), ptr.into(), ptr.into()], false);
    let function = module.add_function("peak", fn_type, None);
    for (key, value) in [
        ("target-cpu", TargetMachine::get_host_cpu_name().to_string()),
        (
            "target-features",
            TargetMachine::get_host_cpu_features().to_string(),
        ),
    ] {
        let attribute = context.create_string_attribute(key, &value);
        function.add_attribute(AttributeLoc::Function, attribute);
    }
    let param = |i| function.get_nth_param(i).ok_or("`peak` lacks a parameter");
    let n = param(0)?.into_int_value();
    let (input, output) = (
        param(1)?.into_pointer_value(),
        param(2)?.into_pointer_value(),
    );
    let vector = context.f32_type().vec_type(lanes);
    let b = context.create_builder();
    let entry = context.append_basic_block(function, "entry");
    let body = context.append_basic_block(function, "body");
    let exit = context.append_basic_block(function, "exit");

    b.position_at_end(entry);
    let load = |slot: usize| load_vector(&b, context, vector, input, slot);
    let (a, c) = (load(0)?, load(1)?);
    let starts = (0..FMA_CHAINS)
        .map(|chain| load(2 + chain))
        .collect::<BuildResult<Vec<_>>>()?;
    let zero = i64_type.const_zero();
    let positive = b
        .build_int_compare(inkwell::IntPredicate::SGT, n, zero, "positive")
        .map_err(|e| e.to_string())?;
    b.build_conditional_branch(positive, body, exit)
        .map_err(|e| e.to_string())?;

    b.position_at_end(body);
    let count = b.build_phi(i64_type, "n").map_err(|e| e.to_string())?;
    let accs = (0..FMA_CHAINS)
        .map(|_| b.build_phi(vector, "acc").map_err(|e| e.to_string()))
        .collect::<BuildResult<Vec<_>>>()?;
    let step = chain_step(module, vector, native_fma)?;
    let mut current: Vec<VectorValue> = accs
        .iter()
        .map(|p| p.as_basic_value().into_vector_value())
        .collect();
    for _ in 0..LINKS {
        for acc in current.iter_mut() {
            *acc = step.link(&b, *acc, a, c)?;
        }
    }
    let one = i64_type.const_int(1, false);
    let count_value = count.as_basic_value().into_int_value();
    let next = b
        .build_int_sub(count_value, one, "next")
        .map_err(|e| e.to_string())?;
    let more = b
        .build_int_compare(inkwell::IntPredicate::SGT, next, zero, "more")
        .map_err(|e| e.to_string())?;
    b.build_conditional_branch(more, body, exit)
        .map_err(|e| e.to_string())?;
    count.add_incoming(&[(&n, entry), (&next, body)]);
    for ((phi, start), end) in accs.iter().zip(&starts).zip(&current) {
        phi.add_incoming(&[(start, entry), (end, body)]);
    }

    b.position_at_end(exit);
    // Every phi first (LLVM wants them at the top of the block), then the stores.
    let mut results = Vec::new();
    for (start, end) in starts.iter().zip(&current) {
        let result = b.build_phi(vector, "result").map_err(|e| e.to_string())?;
        result.add_incoming(&[(start, entry), (end, body)]);
        results.push(result);
    }
    for (chain, result) in results.iter().enumerate() {
        let at = slot_pointer(&b, context, output, chain * lanes as usize)?;
        let store = b
            .build_store(at, result.as_basic_value())
            .map_err(|e| e.to_string())?;
        store.set_alignment(4).map_err(|e| e.to_string())?;
    }
    b.build_return(None).map_err(|e| e.to_string())?;
    Ok(())
}

/// The vector at `slot` (counted in vectors) of the float array `base`, loaded unaligned.
fn load_vector<'ctx>(
    b: &Builder<'ctx>,
    context: &'ctx Context,
    vector: VectorType<'ctx>,
    base: PointerValue<'ctx>,
    slot: usize,
) -> BuildResult<VectorValue<'ctx>> {
    let at = slot_pointer(b, context, base, slot * vector.get_size() as usize)?;
    let value = b.build_load(vector, at, "in").map_err(|e| e.to_string())?;
    if let Some(load) = value.as_instruction_value() {
        load.set_alignment(4).map_err(|e| e.to_string())?;
    }
    Ok(value.into_vector_value())
}

/// `&base[index]` of a float array.
fn slot_pointer<'ctx>(
    b: &Builder<'ctx>,
    context: &'ctx Context,
    base: PointerValue<'ctx>,
    index: usize,
) -> BuildResult<PointerValue<'ctx>> {
    let index = context.i64_type().const_int(index as u64, false);
    // SAFETY: the index is within the buffers `buffers` allocates for this probe.
    unsafe { b.build_in_bounds_gep(context.f32_type(), base, &[index], "at") }
        .map_err(|e| e.to_string())
}

/// One link of a chain: `llvm.fma` of the vector type, or `fmul` + `fadd` without native FMA
/// (an `llvm.fma` would then be a library call per lane).
enum ChainStep<'ctx> {
    Fma(FunctionValue<'ctx>),
    MulAdd,
}

/// The link of `vector` chains this CPU runs natively.
fn chain_step<'ctx>(
    module: &Module<'ctx>,
    vector: VectorType<'ctx>,
    native_fma: bool,
) -> BuildResult<ChainStep<'ctx>> {
    if !native_fma {
        return Ok(ChainStep::MulAdd);
    }
    let fma = Intrinsic::find("llvm.fma").ok_or("LLVM has no llvm.fma")?;
    let declaration = fma
        .get_declaration(module, &[vector.into()])
        .ok_or("LLVM cannot declare llvm.fma for this vector")?;
    Ok(ChainStep::Fma(declaration))
}

impl<'ctx> ChainStep<'ctx> {
    /// `acc * a + c`.
    fn link(
        &self,
        b: &Builder<'ctx>,
        acc: VectorValue<'ctx>,
        a: VectorValue<'ctx>,
        c: VectorValue<'ctx>,
    ) -> BuildResult<VectorValue<'ctx>> {
        match self {
            ChainStep::Fma(fma) => b
                .build_call(*fma, &[acc.into(), a.into(), c.into()], "acc")
                .map_err(|e| e.to_string())?
                .try_as_basic_value()
                .basic()
                .map(|v| v.into_vector_value())
                .ok_or_else(|| "llvm.fma returned nothing".to_string()),
            ChainStep::MulAdd => {
                let product = b
                    .build_float_mul(acc, a, "product")
                    .map_err(|e| e.to_string())?;
                b.build_float_add(product, c, "acc")
                    .map_err(|e| e.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each width's probe computes the chains' recurrence: `n` iterations of [`LINKS`] links
    /// from each start, in every lane; `n = 0` leaves the starts.
    #[test]
    fn the_probe_computes_the_recurrence() {
        for (_, lanes) in host_widths() {
            let context = Context::create();
            let module = probe_module(&context, lanes, host_has("fma")).unwrap();
            let engine = module
                .create_jit_execution_engine(OptimizationLevel::Aggressive)
                .unwrap();
            let peak: JitFunction<PeakFn> = unsafe { engine.get_function("peak") }.unwrap();
            for n in [0i64, 1, 3] {
                let (input, mut output) = buffers(lanes);
                unsafe { peak.call(n, input.as_ptr(), output.as_mut_ptr()) };
                for (i, got) in output.iter().enumerate() {
                    let mut expected = (i / lanes as usize) as f32 * 0.01;
                    for _ in 0..n as usize * LINKS {
                        expected = expected * 0.5 + 0.25;
                    }
                    assert!(
                        (got - expected).abs() < 1e-5,
                        "lanes {lanes}, n {n}, element {i}: {got} vs {expected}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_host_has_xmm_and_the_widths_grow() {
        let widths = host_widths();
        assert_eq!(widths[0].1, 4);
        assert!(
            widths.windows(2).all(|w| w[1].1 == 2 * w[0].1),
            "{widths:?}"
        );
    }
}
