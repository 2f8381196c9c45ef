//! A roofline probe of this machine, measured in one run: the compute peak of Cranelift-generated
//! code (a JIT-compiled loop of independent `fma` accumulator chains, f32x4 and scalar f32, one
//! thread, with the same module settings as strata's kernels), with the feature `llvm` the peak
//! of LLVM-generated code per vector register width the host has (`llvm` below: xmm, ymm, zmm),
//! and the memory copy bandwidth of plain Rust `copy_from_slice` over a working set like the
//! workloads' and over a large one, with one thread and with all threads.
//!
//! Every figure is the best of [`Roofline::repetitions`] repetitions, each measured for at least
//! [`Roofline::min_time_s`] seconds.

use cranelift_codegen::ir::{types, AbiParam, BlockArg, InstBuilder, Type, UserFuncName, Value};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module};
use std::time::{Duration, Instant};

/// LLVM's probe (declared here rather than in `llvm/mod.rs`, which is the code generator's:
/// the probe shares this module's timing and its figures land in [`Roofline`]).
#[cfg(feature = "llvm")]
#[path = "llvm/roofline.rs"]
pub mod llvm;

/// Independent accumulator chains in the compute loop (12 fill both FMA ports: latency 4).
pub const FMA_CHAINS: usize = 12;
/// Links (`fma`s) per chain per loop iteration.
const LINKS: usize = 4;
/// Working set (source + destination) of the workload-sized copy.
pub const WORKLOAD_COPY_BYTES: usize = 32 << 20;
/// Working set (source + destination) of the large copy; `--quick` shrinks it.
pub const LARGE_COPY_BYTES: usize = 1 << 30;
/// The large copy's working set with `quick`.
pub const QUICK_LARGE_COPY_BYTES: usize = 256 << 20;

/// The measured figures. Bandwidths count bytes read plus bytes written.
#[derive(Clone, Debug)]
pub struct Roofline {
    /// Measured with `--quick` (shorter repetitions, a smaller large copy).
    pub quick: bool,
    /// Each figure is the best of this many repetitions.
    pub repetitions: usize,
    /// Each repetition runs for at least this long.
    pub min_time_s: f64,
    /// Whether the host ISA has FMA; without it the compute loop uses `fmul` + `fadd` (still 2
    /// flops per lane per link).
    pub native_fma: bool,
    /// Independent fma chains in the compute loop (enough to hide fma latency).
    pub fma_chains: usize,
    /// Threads of the compute figures.
    pub compute_threads: usize,
    /// f32x4 `fma` chains, GFLOP/s (2 flops per lane per fma).
    pub f32x4_fma_gflops: f64,
    /// Scalar f32 `fma` chains, GFLOP/s (2 flops per fma).
    pub f32_fma_gflops: f64,
    /// Threads of the "all threads" copy figures.
    pub all_threads: usize,
    /// Working set (source + destination) of the workload-sized copy, bytes.
    pub workload_copy_bytes: usize,
    /// The workload-sized copy on one thread, GB/s.
    pub copy_workload_1thread_gbps: f64,
    /// The workload-sized copy on `all_threads` threads, GB/s.
    pub copy_workload_all_threads_gbps: f64,
    /// Working set (source + destination) of the large copy, bytes.
    pub large_copy_bytes: usize,
    /// `None` when the large copy was skipped (see `large_copy_skipped`).
    pub copy_large_1thread_gbps: Option<f64>,
    /// The large copy on `all_threads` threads, GB/s (`None` when skipped).
    pub copy_large_all_threads_gbps: Option<f64>,
    /// Why the large copy was skipped (say, its buffers could not be allocated), if it was.
    pub large_copy_skipped: Option<String>,
    /// LLVM's fma peaks: `None` when this strata is built without LLVM, `Some(Err(why))` when
    /// LLVM could not build or run its probe.
    pub llvm: Option<Result<LlvmPeaks, String>>,
}

/// The fma peak of LLVM-generated code at each vector width the host has.
#[derive(Clone, Debug, PartialEq)]
pub struct LlvmPeaks {
    /// The CPU LLVM compiled for (e.g. `sapphirerapids`).
    pub cpu: String,
    /// Whether the host has fused multiply-add; without it the chains are `fmul` + `fadd`.
    pub native_fma: bool,
    /// One per register width the host has, narrowest first.
    pub peaks: Vec<WidthPeak>,
}

/// The peak of one vector width.
#[derive(Clone, Debug, PartialEq)]
pub struct WidthPeak {
    /// The x86 register the vector fills (`xmm`, `ymm`, `zmm`; `v128` elsewhere).
    pub register: &'static str,
    /// f32 lanes per vector.
    pub lanes: u32,
    /// GFLOP/s (one thread, [`FMA_CHAINS`] chains), 2 flops per lane per fma.
    pub gflops: f64,
}

impl Roofline {
    /// The fma peak of `threads` threads (at most the machine's) compiled by the backend
    /// named `backend`, GFLOP/s: Cranelift's f32x4, LLVM's widest register; `None` for LLVM
    /// when its peaks were not measured.
    pub fn fma_peak(&self, backend: &str, threads: usize) -> Option<f64> {
        let per_thread = match backend {
            "llvm" => match &self.llvm {
                Some(Ok(peaks)) => peaks.peaks.iter().map(|p| p.gflops).fold(0.0, f64::max),
                _ => return None,
            },
            _ => self.f32x4_fma_gflops,
        };
        Some(per_thread * self.threads_used(threads) as f64)
    }

    /// The copy bandwidth of `threads` threads, GB/s (one thread's, or all threads').
    pub fn copy_bandwidth(&self, threads: usize) -> f64 {
        match self.threads_used(threads) {
            1 => self.copy_workload_1thread_gbps,
            _ => self.copy_workload_all_threads_gbps,
        }
    }

    /// `threads`, at least 1 and at most the threads the roofline measured.
    fn threads_used(&self, threads: usize) -> usize {
        threads.clamp(1, self.all_threads.max(1))
    }
}

/// Measures every figure; takes a few seconds (well under one with `quick`).
pub fn measure(quick: bool) -> Roofline {
    let repetitions = if quick { 3 } else { 5 };
    let min_time = Duration::from_secs_f64(if quick { 0.05 } else { 0.2 });
    let all_threads = std::thread::available_parallelism().map_or(1, |n| n.get());

    let (native_fma, f32x4, f32) = compute_peaks(repetitions, min_time);
    let llvm = llvm_peaks(repetitions, min_time);

    let workload = copy_bandwidths(WORKLOAD_COPY_BYTES, all_threads, repetitions, min_time)
        .expect("the workload-sized copy buffers can be allocated");
    let large_copy_bytes = if quick {
        QUICK_LARGE_COPY_BYTES
    } else {
        LARGE_COPY_BYTES
    };
    let (large, large_copy_skipped) =
        match copy_bandwidths(large_copy_bytes, all_threads, repetitions, min_time) {
            Ok((one, all)) => ((Some(one), Some(all)), None),
            Err(why) => ((None, None), Some(why)),
        };

    Roofline {
        quick,
        repetitions,
        min_time_s: min_time.as_secs_f64(),
        native_fma,
        fma_chains: FMA_CHAINS,
        compute_threads: 1,
        f32x4_fma_gflops: f32x4,
        f32_fma_gflops: f32,
        all_threads,
        workload_copy_bytes: WORKLOAD_COPY_BYTES,
        copy_workload_1thread_gbps: workload.0,
        copy_workload_all_threads_gbps: workload.1,
        large_copy_bytes,
        copy_large_1thread_gbps: large.0,
        copy_large_all_threads_gbps: large.1,
        large_copy_skipped,
        llvm,
    }
}

/// LLVM's peaks, when this strata has LLVM.
#[cfg(feature = "llvm")]
fn llvm_peaks(repetitions: usize, min_time: Duration) -> Option<Result<LlvmPeaks, String>> {
    Some(llvm::measure(repetitions, min_time))
}

/// Without LLVM built in there is nothing to measure.
#[cfg(not(feature = "llvm"))]
fn llvm_peaks(_repetitions: usize, _min_time: Duration) -> Option<Result<LlvmPeaks, String>> {
    None
}

/// The best rate (work per second) of `repetitions` repetitions of at least `min_time` each;
/// `run` does one unit of work and returns how much.
fn best_rate(repetitions: usize, min_time: Duration, mut run: impl FnMut() -> f64) -> f64 {
    run(); // warm-up: page faults, caches, clocks
    (0..repetitions)
        .map(|_| {
            let start = Instant::now();
            let mut work = 0.0;
            loop {
                work += run();
                let elapsed = start.elapsed();
                if elapsed >= min_time {
                    return work / elapsed.as_secs_f64();
                }
            }
        })
        .fold(0.0, f64::max)
}

// ---------------------------------------------------------------- compute

/// Returns (native fma?, f32x4 GFLOP/s, f32 GFLOP/s).
fn compute_peaks(repetitions: usize, min_time: Duration) -> (bool, f64, f64) {
    let mut module = new_module();
    let native_fma = module
        .isa()
        .isa_flags()
        .iter()
        .any(|f| f.name == "has_fma" && f.as_bool() == Some(true));
    let vector = define_chains(&mut module, "roof_f32x4", types::F32X4, native_fma);
    let scalar = define_chains(&mut module, "roof_f32", types::F32, native_fma);
    module
        .finalize_definitions()
        .expect("the roofline loops finalize");
    // SAFETY: both functions were defined above with the signature (i64) -> f32, the platform's
    // default calling convention, and the module stays alive until they are no longer called.
    let (vector_fn, scalar_fn) = unsafe {
        let f = |id| {
            std::mem::transmute::<*const u8, extern "C" fn(i64) -> f32>(
                module.get_finalized_function(id),
            )
        };
        (f(vector), f(scalar))
    };
    let gflops = |f: extern "C" fn(i64) -> f32, lanes: usize| {
        let flops_per_iter = (2 * lanes * FMA_CHAINS * LINKS) as f64;
        let iters = calibrate(|n| {
            std::hint::black_box(f(n));
        });
        best_rate(repetitions, min_time, || {
            std::hint::black_box(f(iters));
            flops_per_iter * iters as f64
        }) / 1e9
    };
    let v = gflops(vector_fn, 4);
    let s = gflops(scalar_fn, 1);
    // SAFETY: no pointer into the module is used after this point.
    unsafe { module.free_memory() };
    (native_fma, v, s)
}

/// Iteration count for which one call takes about a millisecond.
fn calibrate(mut call: impl FnMut(i64)) -> i64 {
    let mut n: i64 = 1 << 10;
    loop {
        let start = Instant::now();
        call(n);
        if start.elapsed() >= Duration::from_millis(1) || n >= 1 << 40 {
            return n;
        }
        n *= 2;
    }
}

/// A JIT module set up like strata's kernels (see `cranelift::new_module`).
fn new_module() -> JITModule {
    let mut flags = settings::builder();
    for (name, value) in [
        ("opt_level", "speed"),
        ("is_pic", "false"),
        ("use_colocated_libcalls", "false"),
    ] {
        flags.set(name, value).expect("a known Cranelift setting");
    }
    let isa = cranelift_native::builder()
        .expect("the host ISA is supported")
        .finish(settings::Flags::new(flags))
        .expect("the host ISA builds");
    JITModule::new(JITBuilder::with_isa(
        isa,
        cranelift_module::default_libcall_names(),
    ))
}

/// Defines `fn(iters: i64) -> f32` (iters ≥ 1): a loop whose body advances [`FMA_CHAINS`]
/// independent chains `acc = fma(acc, 0.5, 0.25)` by [`LINKS`] links each, then returns the sum
/// of every lane of every accumulator (so nothing is dead).
fn define_chains(
    module: &mut JITModule,
    name: &str,
    ty: Type,
    native_fma: bool,
) -> cranelift_module::FuncId {
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(types::I64));
    sig.returns.push(AbiParam::new(types::F32));
    let id = module
        .declare_function(name, Linkage::Local, &sig)
        .expect("the roofline loop declares");
    let mut ctx = module.make_context();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let vector = ty.is_vector();
        let constant = |b: &mut FunctionBuilder, c: f32| {
            let s = b.ins().f32const(c);
            if vector {
                b.ins().splat(ty, s)
            } else {
                s
            }
        };

        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        let body = b.create_block();
        let exit = b.create_block();
        let n = b.append_block_param(body, types::I64);
        let accs: Vec<Value> = (0..FMA_CHAINS)
            .map(|_| b.append_block_param(body, ty))
            .collect();
        let results: Vec<Value> = (0..FMA_CHAINS)
            .map(|_| b.append_block_param(exit, ty))
            .collect();

        b.switch_to_block(entry);
        let iters = b.block_params(entry)[0];
        let mut args = vec![BlockArg::Value(iters)];
        for i in 0..FMA_CHAINS {
            let init = constant(&mut b, i as f32 * 0.01);
            args.push(BlockArg::Value(init));
        }
        b.ins().jump(body, &args);

        b.switch_to_block(body);
        let a = constant(&mut b, 0.5);
        let c = constant(&mut b, 0.25);
        let mut cur = accs;
        for _ in 0..LINKS {
            for acc in cur.iter_mut() {
                *acc = if native_fma {
                    b.ins().fma(*acc, a, c)
                } else {
                    let m = b.ins().fmul(*acc, a);
                    b.ins().fadd(m, c)
                };
            }
        }
        let next = b.ins().iadd_imm_s(n, -1);
        let mut again = vec![BlockArg::Value(next)];
        again.extend(cur.iter().map(|&v| BlockArg::Value(v)));
        let done: Vec<BlockArg> = cur.iter().map(|&v| BlockArg::Value(v)).collect();
        b.ins().brif(next, body, &again, exit, &done);

        b.switch_to_block(exit);
        let mut sum = results[0];
        for &r in &results[1..] {
            sum = b.ins().fadd(sum, r);
        }
        let total = if vector {
            let mut t = b.ins().extractlane(sum, 0);
            for lane in 1..ty.lane_count() as u8 {
                let l = b.ins().extractlane(sum, lane);
                t = b.ins().fadd(t, l);
            }
            t
        } else {
            sum
        };
        b.ins().return_(&[total]);
        b.seal_all_blocks();
        b.finalize(module.target_config());
    }
    module
        .define_function(id, &mut ctx)
        .expect("the roofline loop compiles");
    module.clear_context(&mut ctx);
    id
}

// ---------------------------------------------------------------- memory

/// Copy bandwidth (GB/s, bytes read + written) over a working set of `working_set` bytes
/// (half source, half destination) with 1 thread and with `threads` threads. `Err` when the
/// buffers cannot be allocated.
fn copy_bandwidths(
    working_set: usize,
    threads: usize,
    repetitions: usize,
    min_time: Duration,
) -> Result<(f64, f64), String> {
    let half = working_set / 2;
    let alloc = |fill: u8| -> Result<Vec<u8>, String> {
        let mut v = Vec::new();
        v.try_reserve_exact(half)
            .map_err(|e| format!("cannot allocate 2 × {} MiB for the copy: {e}", half >> 20))?;
        v.resize(half, fill); // touches every page
        Ok(v)
    };
    let src = alloc(1)?;
    let mut dst = alloc(0)?;
    let bytes = 2.0 * half as f64;

    let one = best_rate(repetitions, min_time, || {
        dst.copy_from_slice(std::hint::black_box(&src));
        bytes
    }) / 1e9;

    let chunk = half.div_ceil(threads.max(1));
    let all = best_rate(repetitions, min_time, || {
        std::thread::scope(|s| {
            for (d, s_) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
                s.spawn(move || d.copy_from_slice(std::hint::black_box(s_)));
            }
        });
        bytes
    }) / 1e9;
    std::hint::black_box(&dst);
    Ok((one, all))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_compute_the_recurrence() {
        let mut module = new_module();
        let fma = module
            .isa()
            .isa_flags()
            .iter()
            .any(|f| f.name == "has_fma" && f.as_bool() == Some(true));
        let v = define_chains(&mut module, "v", types::F32X4, fma);
        let s = define_chains(&mut module, "s", types::F32, fma);
        module.finalize_definitions().unwrap();
        let expected = |iters: i64| -> f32 {
            let mut total = 0.0f32;
            for i in 0..FMA_CHAINS {
                let mut acc = i as f32 * 0.01;
                for _ in 0..iters as usize * LINKS {
                    acc = acc * 0.5 + 0.25;
                }
                total += acc;
            }
            total
        };
        unsafe {
            let v: extern "C" fn(i64) -> f32 =
                std::mem::transmute(module.get_finalized_function(v));
            let s: extern "C" fn(i64) -> f32 =
                std::mem::transmute(module.get_finalized_function(s));
            for iters in [1, 3] {
                let e = expected(iters);
                assert!((s(iters) - e).abs() < 1e-4, "{} vs {e}", s(iters));
                assert!(
                    (v(iters) - 4.0 * e).abs() < 1e-3,
                    "{} vs {}",
                    v(iters),
                    4.0 * e
                );
            }
            module.free_memory();
        }
    }
}
