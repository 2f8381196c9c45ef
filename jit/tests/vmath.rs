//! Accuracy and special-value tests of the inline f32x4 `exp`/`log` emitters, run through
//! the JIT exactly as generated kernels use them.

use cranelift_codegen::ir::{types, AbiParam, BlockArg, InstBuilder, MemFlagsData, Value};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use strata_jit::vmath::{exp_f32x4, log_f32x4};

/// Largest error allowed where the true result is a normal float, in ulps.
const MAX_ULP: f64 = 4.0;

type Emit = fn(&mut FunctionBuilder, Value) -> Value;
type Kernel = unsafe extern "C" fn(*const f32, *mut f32, i64);

/// A JIT-compiled `fn(in, out, n)` applying `emit` to each f32x4 chunk (`n % 4 == 0`).
struct Compiled {
    module: Option<JITModule>,
    kernel: Kernel,
}

impl Compiled {
    fn new(emit: Emit) -> Self {
        let mut module = jit_module();
        let mut sig = module.make_signature();
        let ptr = module.target_config().pointer_type();
        sig.params.extend([
            AbiParam::new(ptr),
            AbiParam::new(ptr),
            AbiParam::new(types::I64),
        ]);
        let id = module
            .declare_function("vmath_kernel", Linkage::Export, &sig)
            .unwrap();
        let mut ctx = module.make_context();
        ctx.func.signature = sig;
        let mut fctx = FunctionBuilderContext::new();
        build_loop(
            FunctionBuilder::new(&mut ctx.func, &mut fctx),
            emit,
            &module,
        );
        module.define_function(id, &mut ctx).unwrap();
        module.finalize_definitions().unwrap();
        let code = module.get_finalized_function(id);
        let kernel = unsafe { std::mem::transmute::<*const u8, Kernel>(code) };
        Compiled {
            module: Some(module),
            kernel,
        }
    }

    /// Applies the kernel to `xs` (padded to a multiple of 4 internally).
    fn apply(&self, xs: &[f32]) -> Vec<f32> {
        let mut input = xs.to_vec();
        input.resize(xs.len().div_ceil(4) * 4, 1.0);
        let mut out = vec![0.0f32; input.len()];
        unsafe { (self.kernel)(input.as_ptr(), out.as_mut_ptr(), input.len() as i64) };
        out.truncate(xs.len());
        out
    }
}

impl Drop for Compiled {
    fn drop(&mut self) {
        // SAFETY: the kernel pointer dies with `self`.
        unsafe { self.module.take().unwrap().free_memory() };
    }
}

/// The roofline doc's recipe: host ISA (for `fma`), speed, verifier on.
fn jit_module() -> JITModule {
    let mut fb = settings::builder();
    fb.set("opt_level", "speed").unwrap();
    fb.set("enable_verifier", "true").unwrap();
    fb.set("is_pic", "false").unwrap();
    fb.set("use_colocated_libcalls", "false").unwrap();
    let isa = cranelift_native::builder()
        .unwrap()
        .finish(settings::Flags::new(fb))
        .unwrap();
    JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()))
}

/// `for i in (0..n).step_by(4) { out[i..i+4] = emit(in[i..i+4]) }`.
fn build_loop(mut b: FunctionBuilder, emit: Emit, module: &JITModule) {
    let entry = b.create_block();
    let header = b.create_block();
    let body = b.create_block();
    let exit = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let (inp, out, n) = {
        let p = b.block_params(entry);
        (p[0], p[1], p[2])
    };
    let zero = b.ins().iconst(types::I64, 0);
    b.ins().jump(header, &[BlockArg::Value(zero)]);

    let i = b.append_block_param(header, types::I64);
    b.switch_to_block(header);
    let more = b.ins().icmp(
        cranelift_codegen::ir::condcodes::IntCC::SignedLessThan,
        i,
        n,
    );
    b.ins().brif(more, body, &[], exit, &[]);

    b.switch_to_block(body);
    let offset = b.ins().ishl_imm_u(i, 2);
    let src = b.ins().iadd(inp, offset);
    let dst = b.ins().iadd(out, offset);
    let x = b
        .ins()
        .load(types::F32X4, MemFlagsData::new().with_notrap(), src, 0);
    let y = emit(&mut b, x);
    b.ins().store(MemFlagsData::new().with_notrap(), y, dst, 0);
    let next = b.ins().iadd_imm_s(i, 4);
    b.ins().jump(header, &[BlockArg::Value(next)]);

    b.switch_to_block(exit);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(module.target_config());
}

/// Distance in representable floats between two finite floats of any sign.
fn ulp_distance(a: f32, b: f32) -> f64 {
    let key = |x: f32| {
        let bits = x.to_bits() as i32;
        i64::from(if bits < 0 { i32::MIN - bits } else { bits })
    };
    (key(a) - key(b)).unsigned_abs() as f64
}

/// Error of `got` in ulps of the true value `want` (f64), as `(got - want) / ulp(want)`.
fn ulp_error_f64(got: f32, want: f64) -> f64 {
    let w = want as f32;
    let ulp = f64::from(f32::from_bits(w.abs().to_bits() + 1) - w.abs());
    ((f64::from(got) - want) / ulp).abs()
}

/// Accuracy summary over the inputs whose true result is a normal float.
#[derive(Default, Debug)]
struct Stats {
    /// Largest distance to the std result, in representable floats.
    max_ulp_vs_std: f64,
    /// Largest error against the f64 result, in ulps of it.
    max_ulp_vs_f64: f64,
    worst_input: f32,
    checked: usize,
}

/// Compares `got` with `f32_ref` and `f64_ref` on every input with a normal result.
fn measure(xs: &[f32], got: &[f32], f32_ref: fn(f32) -> f32, f64_ref: fn(f64) -> f64) -> Stats {
    let mut s = Stats::default();
    for (&x, &g) in xs.iter().zip(got) {
        let want = f32_ref(x);
        if !want.is_normal() {
            continue;
        }
        let d = ulp_distance(g, want);
        if d > s.max_ulp_vs_std {
            s.max_ulp_vs_std = d;
            s.worst_input = x;
        }
        s.max_ulp_vs_f64 = s
            .max_ulp_vs_f64
            .max(ulp_error_f64(g, f64_ref(f64::from(x))));
        s.checked += 1;
    }
    s
}

/// Asserts every result, not only normal ones, is within `MAX_ULP` representable floats of
/// the std result (counting `+-inf` as one step past `+-f32::MAX` and stepping through the
/// subnormals), and NaN exactly where std gives NaN.
fn check_all_outputs(name: &str, xs: &[f32], got: &[f32], f32_ref: fn(f32) -> f32) {
    for (&x, &g) in xs.iter().zip(got) {
        let want = f32_ref(x);
        let ok = if want.is_nan() {
            g.is_nan()
        } else {
            !g.is_nan() && ulp_distance(g, want) <= MAX_ULP
        };
        assert!(ok, "{name}({x:e}) = {g:e}, want {want:e}");
    }
}

/// `n + 1` points evenly spaced over `[lo, hi]`.
fn linspace(lo: f32, hi: f32, n: usize) -> Vec<f32> {
    (0..=n)
        .map(|i| lo + (hi - lo) * (i as f32 / n as f32))
        .collect()
}

/// Every `stride`-th f32 bit pattern from `lo` to `hi` (both positive), plus `hi`.
fn bit_sweep(lo: f32, hi: f32, stride: u32) -> Vec<f32> {
    let mut v: Vec<f32> = (lo.to_bits()..hi.to_bits())
        .step_by(stride as usize)
        .map(f32::from_bits)
        .collect();
    v.push(hi);
    v
}

/// Asserts the special values map exactly as listed (NaN compared as NaN).
fn check_specials(c: &Compiled, cases: &[(f32, f32)]) {
    let xs: Vec<f32> = cases.iter().map(|c| c.0).collect();
    let got = c.apply(&xs);
    for (&(x, want), g) in cases.iter().zip(got) {
        let ok = if want.is_nan() {
            g.is_nan()
        } else {
            g.to_bits() == want.to_bits()
        };
        assert!(ok, "f({x:e}) = {g:e}, want {want:e}");
    }
}

#[test]
fn exp_accuracy_dense_sweep() {
    let c = Compiled::new(exp_f32x4);
    let mut xs = linspace(-100.0, 100.0, 4_000_000);
    xs.extend(linspace(-1.0, 1.0, 1_000_000));
    xs.extend(linspace(-1e-6, 1e-6, 100_000));
    xs.extend(bit_sweep(1e-30, 100.0, 101).iter().flat_map(|&x| [x, -x]));
    let got = c.apply(&xs);
    check_all_outputs("exp", &xs, &got, f32::exp);
    let s = measure(&xs, &got, f32::exp, f64::exp);
    eprintln!("exp: {s:?}");
    assert!(s.max_ulp_vs_std <= MAX_ULP, "exp: {s:?}");
    assert!(s.checked > 1_000_000);
}

#[test]
fn exp_overflow_underflow_and_subnormals() {
    let c = Compiled::new(exp_f32x4);
    // Overflow threshold and beyond: exactly where std overflows, so must we.
    let xs = linspace(80.0, 100.0, 200_000);
    let got = c.apply(&xs);
    for (&x, &g) in xs.iter().zip(&got) {
        let want = x.exp();
        if want.is_infinite() {
            assert_eq!(g, f32::INFINITY, "exp({x}) = {g}");
        } else {
            assert!(
                ulp_distance(g, want) <= MAX_ULP,
                "exp({x}) = {g}, want {want}"
            );
        }
    }
    // Subnormal results: close in absolute terms (a few smallest-subnormal steps), and 0
    // exactly where the true result is below half the smallest subnormal.
    let xs = linspace(-120.0, -87.0, 200_000);
    let got = c.apply(&xs);
    let mut worst = 0.0f64;
    for (&x, &g) in xs.iter().zip(&got) {
        let want = x.exp();
        let steps = (f64::from(g) - f64::from(want)).abs() / f64::from(f32::from_bits(1));
        let rel = if want.is_normal() {
            ulp_distance(g, want)
        } else {
            steps
        };
        worst = worst.max(rel);
        assert!(rel <= MAX_ULP, "exp({x}) = {g:e}, want {want:e}");
        if f64::from(x).exp() < f64::from(f32::from_bits(1)) / 2.0 * 0.99 {
            assert_eq!(g, 0.0, "exp({x}) should underflow to 0");
        }
    }
    eprintln!("exp near under/overflow: worst {worst} ulp or subnormal steps");
}

#[test]
fn exp_special_values() {
    let c = Compiled::new(exp_f32x4);
    check_specials(
        &c,
        &[
            (f32::NAN, f32::NAN),
            (-f32::NAN, f32::NAN),
            (f32::INFINITY, f32::INFINITY),
            (f32::NEG_INFINITY, 0.0),
            (0.0, 1.0),
            (-0.0, 1.0),
            (f32::MAX, f32::INFINITY),
            (f32::MIN, 0.0),
            (89.0, f32::INFINITY),
            (1000.0, f32::INFINITY),
            (-1000.0, 0.0),
            (-104.0, 0.0),
            (1e-30, 1.0),
            (f32::from_bits(1), 1.0),
        ],
    );
}

/// A lane's result must not depend on its neighbours (clamped or not, in the subnormal
/// range or not): each extreme value is put in each lane next to ordinary ones.
#[test]
fn exp_mixed_lanes() {
    let c = Compiled::new(exp_f32x4);
    let ordinary = [0.5f32, -3.25, 10.0, -80.0, 86.5, -86.5, 1e-30, -0.0];
    let extreme = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        86.500_01,
        -86.500_01,
        88.5,
        88.72283,
        88.72284,
        -87.5,
        -100.0,
        -104.0,
        -104.5,
        -104.7,
        -1e9,
        1e30,
        -1e30,
    ];
    // Reference: every lane computed in a vector of copies of itself.
    let alone = |x: f32| c.apply(&[x; 4])[0];
    for &e in &extreme {
        for lane in 0..4 {
            for (k, &o) in ordinary.iter().enumerate() {
                let mut xs = [o, ordinary[(k + 1) % 8], ordinary[(k + 2) % 8], o];
                xs[lane] = e;
                let got = c.apply(&xs);
                check_all_outputs("exp", &xs, &got, f32::exp);
                for (&x, &g) in xs.iter().zip(&got) {
                    let want = alone(x);
                    assert!(
                        g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                        "exp({x:e}) = {g:e} next to {e:e}, {want:e} alone"
                    );
                }
            }
        }
    }
}

#[test]
fn log_accuracy_sweep() {
    let c = Compiled::new(log_f32x4);
    // Every 61st float from the smallest subnormal to 1e30, plus dense sweeps near 1.
    let mut xs = bit_sweep(f32::from_bits(1), 1e30, 61);
    xs.extend(linspace(0.5, 2.0, 2_000_000));
    xs.extend(linspace(0.999, 1.001, 200_000));
    xs.extend(bit_sweep(1.0, 1.0001, 1));
    xs.extend(bit_sweep(0.9999, 1.0, 1));
    xs.extend(linspace(1e30, f32::MAX, 100_000));
    let got = c.apply(&xs);
    check_all_outputs("log", &xs, &got, f32::ln);
    let s = measure(&xs, &got, f32::ln, f64::ln);
    eprintln!("log: {s:?}");
    assert!(s.max_ulp_vs_std <= MAX_ULP, "log: {s:?}");
    assert!(s.checked > 1_000_000);
}

#[test]
fn log_subnormal_inputs() {
    let c = Compiled::new(log_f32x4);
    let xs = bit_sweep(f32::from_bits(1), f32::MIN_POSITIVE, 7);
    let got = c.apply(&xs);
    let s = measure(&xs, &got, f32::ln, f64::ln);
    eprintln!("log of subnormals: {s:?}");
    assert!(s.max_ulp_vs_std <= MAX_ULP, "log subnormal: {s:?}");
}

#[test]
fn log_special_values() {
    let c = Compiled::new(log_f32x4);
    check_specials(
        &c,
        &[
            (0.0, f32::NEG_INFINITY),
            (-0.0, f32::NEG_INFINITY),
            (-1.0, f32::NAN),
            (-1e-40, f32::NAN),
            (f32::MIN, f32::NAN),
            (f32::NEG_INFINITY, f32::NAN),
            (f32::INFINITY, f32::INFINITY),
            (f32::NAN, f32::NAN),
            (-f32::NAN, f32::NAN),
            (1.0, 0.0),
            (f32::MAX, f32::MAX.ln()),
            (f32::from_bits(1), f32::from_bits(1).ln()),
        ],
    );
}

/// Exhaustive check over every f32 (4 billion inputs; ~a minute in release):
/// `cargo test -p strata-jit --release --test vmath -- --ignored --nocapture`.
#[test]
#[ignore]
fn exhaustive_all_f32() {
    for (name, emit, f32_ref, f64_ref) in [
        (
            "exp",
            exp_f32x4 as Emit,
            f32::exp as fn(f32) -> f32,
            f64::exp as fn(f64) -> f64,
        ),
        ("log", log_f32x4 as Emit, f32::ln, f64::ln),
    ] {
        let c = Compiled::new(emit);
        let mut worst = Stats::default();
        let block = 1u64 << 24;
        for start in (0..1u64 << 32).step_by(block as usize) {
            let xs: Vec<f32> = (start..start + block)
                .map(|b| f32::from_bits(b as u32))
                .collect();
            let got = c.apply(&xs);
            check_all_outputs(name, &xs, &got, f32_ref);
            let s = measure(&xs, &got, f32_ref, f64_ref);
            if s.max_ulp_vs_std > worst.max_ulp_vs_std {
                worst.max_ulp_vs_std = s.max_ulp_vs_std;
                worst.worst_input = s.worst_input;
            }
            worst.max_ulp_vs_f64 = worst.max_ulp_vs_f64.max(s.max_ulp_vs_f64);
            worst.checked += s.checked;
        }
        eprintln!("{name} exhaustive: {worst:?}");
        assert!(worst.max_ulp_vs_std <= MAX_ULP, "{name}: {worst:?}");
    }
}
