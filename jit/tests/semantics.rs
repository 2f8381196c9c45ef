//! The language's scalar semantics (../../dsl/src/value.rs) hold in compiled code, scalar and
//! vectorized, on the values where implementations usually go wrong: integer division and
//! modulo (Euclidean, by zero gives 0, `MIN / -1` wraps) for every integer type; every cast
//! between every pair of the 10 types (Rust's `as`: wrapping, truncating and saturating, NaN
//! to 0); the math intrinsics on f32 and f64; and boundary conditions, down to inputs of extent
//! 1. Every answer is compared with `strata_dsl::Value`'s own operations and with the
//! reference evaluator.
//!
//! Tolerances: integers, casts, `min`/`max`/`abs`/`clamp`/`floor`/`ceil`/`round`/`sqrt` and
//! boundary reads must match bit for bit (any NaN matches any NaN). `exp`, `log`, `pow`, `sin`,
//! `cos` and `tanh` must agree within `MATH_TOLERANCE` (1e-5) relative, or within the smallest
//! normal number absolutely (a subnormal result has fewer significant bits): scalar lanes call
//! the same Rust functions as the reference, and the vector f32 `exp` is a Cephes polynomial
//! measured within 4 ulp (about 5e-7 relative) in tests/vmath.rs, so 1e-5 leaves a 20x margin.

mod common;
use std::collections::BTreeSet;
use strata_dsl::{evaluate, Args, BinOp, Buffer, Dtype, EvalError, Pipeline, Value};
use strata_jit::{CallError, CompiledKernel};

const MATH_TOLERANCE: f64 = 1e-5;

const INT_TYPES: [Dtype; 7] = [
    Dtype::U8,
    Dtype::U16,
    Dtype::U32,
    Dtype::I8,
    Dtype::I16,
    Dtype::I32,
    Dtype::I64,
];

struct Kernel {
    pipeline: Pipeline,
    /// The kernel compiled by each backend built in (Cranelift first).
    compiled: Vec<CompiledKernel>,
}

/// Parses, schedules, lowers and compiles `source` with the verifier on; a vectorizing
/// schedule must give vector code.
fn compile(source: &str, schedule: &str) -> Kernel {
    let (pipeline, lowered) = common::lower_source(source, schedule);
    if schedule.contains("vectorize") {
        assert!(
            lowered.to_string().contains("ramp("),
            "`{schedule}` should give vector code:\n{lowered}"
        );
    }
    let compiled = common::compile_with_every_backend(source, schedule, &lowered);
    Kernel { pipeline, compiled }
}

/// Runs the compiled kernel (two threads) and the reference evaluator on the same arguments.
/// Every backend must give the same bits (NaNs aside) as the first; its result is returned.
fn run_both(kernel: &Kernel, args: &Args, what: &str) -> (Buffer, Buffer) {
    let results: Vec<Buffer> = kernel
        .compiled
        .iter()
        .map(|c| {
            c.run(args, 2)
                .unwrap_or_else(|e| panic!("{what} ({}): the call was refused: {e}", c.backend()))
        })
        .collect();
    let got = results[0].clone();
    for (other, compiled) in results.iter().zip(&kernel.compiled).skip(1) {
        let pairs = elements(&got).into_iter().zip(elements(other));
        for (k, (a, b)) in pairs.enumerate() {
            assert!(
                same(a, b),
                "{what}: element {k} is {a:?} from {} but {b:?} from {}",
                kernel.compiled[0].backend(),
                compiled.backend()
            );
        }
    }
    let expected =
        evaluate(&kernel.pipeline, args).unwrap_or_else(|e| panic!("{what}: reference: {e}"));
    assert_eq!(got.shape(), expected.shape(), "{what}");
    (got, expected)
}

/// The schedules every elementwise kernel `O(i)` runs under: the default (scalar), and
/// vectorized at `widths` (the split's tail is shifted inwards or guarded, as the scheduler
/// chooses, since the extents used are not multiples of the widths).
fn schedules(widths: &[i64]) -> Vec<String> {
    let mut s = vec![String::new()];
    s.extend(widths.iter().map(|w| format!("O: vectorize(i, {w})")));
    s
}

fn buffer(dtype: Dtype, values: &[Value]) -> Buffer {
    let mut b = Buffer::zeros(dtype, &[values.len()]).unwrap();
    for (i, v) in values.iter().enumerate() {
        assert_eq!(v.dtype(), dtype);
        assert!(b.set_flat(i, *v));
    }
    b
}

/// Bit-for-bit equality, except that any NaN equals any NaN.
fn same(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::F32(x), Value::F32(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        (Value::F64(x), Value::F64(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// `got` equals `expected` element by element under `close`; the message lists the first few
/// elements that differ, with the inputs that produced them.
fn check(
    got: &Buffer,
    expected: &[Value],
    inputs: &dyn Fn(usize) -> String,
    close: &dyn Fn(Value, Value) -> bool,
    what: &str,
) {
    assert_eq!(got.len(), expected.len(), "{what}");
    let bad: Vec<String> = (0..expected.len())
        .filter(|&i| !close(got.get_flat(i).unwrap(), expected[i]))
        .take(8)
        .map(|i| {
            format!(
                "  {}: got {:?}, expected {:?}",
                inputs(i),
                got.get_flat(i).unwrap(),
                expected[i]
            )
        })
        .collect();
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

/// `values` repeated until there are at least `n`: a vectorized loop runs its vector body only
/// where a whole vector fits (shorter extents fall back to a scalar loop), so every input is made
/// long enough for several vectors of the widest width plus a tail.
fn at_least(values: Vec<Value>, n: usize) -> Vec<Value> {
    values
        .iter()
        .copied()
        .cycle()
        .take(n.max(values.len()))
        .collect()
}

/// The length inputs are stretched to (several vectors of 16 lanes and a tail).
const MIN_LENGTH: usize = 67;

fn elements(b: &Buffer) -> Vec<Value> {
    (0..b.len()).map(|i| b.get_flat(i).unwrap()).collect()
}

// ---------------------------------------------------------------------------------------------
// (a) Integer division and modulo
// ---------------------------------------------------------------------------------------------

/// Values where division goes wrong: small numbers of both signs, the type's extremes and
/// their neighbours (wrapped into the type, so `-1` is the maximum of an unsigned type).
fn division_values(t: Dtype) -> Vec<Value> {
    let (lo, hi) = t.int_range().unwrap();
    let mut seen = BTreeSet::new();
    [
        0,
        1,
        -1,
        2,
        -2,
        3,
        -3,
        4,
        -4,
        7,
        -7,
        100,
        -100,
        lo,
        lo + 1,
        hi,
        hi - 1,
        lo / 2,
        hi / 2,
    ]
    .into_iter()
    .map(|x| Value::I64(x as i64).cast(t))
    .filter(|v| seen.insert(v.as_i64().unwrap()))
    .collect()
}

/// Widths that divide a 128-bit register's lanes, span several registers, and don't fit one.
fn integer_widths(t: Dtype) -> Vec<i64> {
    let native = 16 / t.bytes() as i64;
    let mut w: Vec<i64> = vec![3, 8, native, 2 * native];
    w.sort();
    w.dedup();
    w
}

#[test]
fn integer_division_and_modulo_by_every_divisor() {
    for t in INT_TYPES {
        let values = division_values(t);
        let pairs: Vec<(Value, Value)> = values
            .iter()
            .flat_map(|&a| values.iter().map(move |&b| (a, b)))
            .collect();
        let a: Vec<Value> = pairs.iter().map(|p| p.0).collect();
        let b: Vec<Value> = pairs.iter().map(|p| p.1).collect();
        let args = Args::new()
            .buffer("A", buffer(t, &a))
            .buffer("B", buffer(t, &b));
        for op in [BinOp::Div, BinOp::Mod] {
            let expected: Vec<Value> = pairs
                .iter()
                .map(|&(x, y)| Value::binary(op, x, y).unwrap())
                .collect();
            let source = format!(
                "kernel k(A: {t}[N], B: {t}[N]) -> O: {t}[N] {{ O(i) = A(i) {} B(i); }}",
                op.symbol()
            );
            for schedule in schedules(&integer_widths(t)) {
                let what = format!("{t} {} `{schedule}`", op.symbol());
                let kernel = compile(&source, &schedule);
                let (got, reference) = run_both(&kernel, &args, &what);
                let inputs = |i: usize| format!("{:?} {} {:?}", a[i], op.symbol(), b[i]);
                check(&got, &expected, &inputs, &|x, y| x == y, &what);
                check(&reference, &expected, &inputs, &|x, y| x == y, &what);
            }
        }
    }
}

/// The cases named in the language's rules, spelled out for i32.
#[test]
fn integer_division_rules_for_i32() {
    let cases: [(i32, i32, i32, i32); 10] = [
        // (a, b, a / b, a % b)
        (7, 2, 3, 1),
        (-7, 2, -4, 1),
        (7, -2, -3, 1),
        (-7, -2, 4, 1),
        (-1, 3, -1, 2),
        (5, 0, 0, 0),
        (-5, 0, 0, 0),
        (0, 0, 0, 0),
        (i32::MIN, -1, i32::MIN, 0),
        (i32::MIN, 0, 0, 0),
    ];
    let a: Vec<Value> = cases.iter().map(|c| Value::I32(c.0)).collect();
    let b: Vec<Value> = cases.iter().map(|c| Value::I32(c.1)).collect();
    let args = Args::new()
        .buffer("A", buffer(Dtype::I32, &a))
        .buffer("B", buffer(Dtype::I32, &b));
    for (op, pick) in [
        (
            BinOp::Div,
            (|c: &(i32, i32, i32, i32)| c.2) as fn(&_) -> i32,
        ),
        (BinOp::Mod, |c| c.3),
    ] {
        let source = format!(
            "kernel k(A: i32[N], B: i32[N]) -> O: i32[N] {{ O(i) = A(i) {} B(i); }}",
            op.symbol()
        );
        let expected: Vec<Value> = cases.iter().map(|c| Value::I32(pick(c))).collect();
        for schedule in schedules(&[3, 4, 8]) {
            let what = format!("i32 {} `{schedule}`", op.symbol());
            let (got, _) = run_both(&compile(&source, &schedule), &args, &what);
            let inputs = |i: usize| format!("{:?} {} {:?}", a[i], op.symbol(), b[i]);
            check(&got, &expected, &inputs, &|x, y| x == y, &what);
        }
    }
}

/// Divisors known when compiling (the simplifier and Cranelift may strength-reduce them to
/// shifts and multiplications, which round toward zero unless corrected) and dividends known
/// when compiling, for every integer type.
#[test]
fn integer_division_by_constants() {
    for t in INT_TYPES {
        let values = at_least(division_values(t), MIN_LENGTH);
        let args = Args::new().buffer("A", buffer(t, &values));
        let (lo, hi) = t.int_range().unwrap();
        let signed = t.is_signed_int();
        let mut constants: Vec<i128> = vec![0, 1, 2, 3, 4, 7, 16, hi];
        if signed {
            constants.extend([-1, -2, -3, -4, -7, -16, lo]);
        }
        for c in constants {
            let cv = Value::I64(c as i64).cast(t);
            let literal = format!("({c}{t})");
            for op in [BinOp::Div, BinOp::Mod] {
                let sym = op.symbol();
                for (body, expect) in [
                    (
                        format!("A(i) {sym} {literal}"),
                        &(|x: Value| Value::binary(op, x, cv).unwrap()) as &dyn Fn(Value) -> Value,
                    ),
                    (format!("{literal} {sym} A(i)"), &|x: Value| {
                        Value::binary(op, cv, x).unwrap()
                    }),
                ] {
                    let source = format!("kernel k(A: {t}[N]) -> O: {t}[N] {{ O(i) = {body}; }}");
                    let expected: Vec<Value> = values.iter().map(|&x| expect(x)).collect();
                    for schedule in schedules(&[3, 16 / t.bytes() as i64]) {
                        let what = format!("{t}: {body} `{schedule}`");
                        let (got, reference) = run_both(&compile(&source, &schedule), &args, &what);
                        let inputs = |i: usize| format!("A = {:?}", values[i]);
                        check(&got, &expected, &inputs, &|x, y| x == y, &what);
                        check(&reference, &expected, &inputs, &|x, y| x == y, &what);
                    }
                }
            }
        }
    }
}

/// Division of constants, folded before code generation: `MIN / -1` wraps and `MIN % -1` is 0
/// in every signed type, and division by zero is 0 in every type.
#[test]
fn folded_constant_division() {
    for t in INT_TYPES {
        let (lo, hi) = t.int_range().unwrap();
        let mut cases: Vec<(i128, &str, i128)> = vec![
            (hi, "/", 0),
            (hi, "%", 0),
            (7, "/", 2),
            (7, "%", 4),
            (hi, "/", hi),
        ];
        if t.is_signed_int() {
            cases.extend([
                (lo, "/", -1),
                (lo, "%", -1),
                (lo, "/", 0),
                (-7, "/", 2),
                (-7, "%", 2),
                (-7, "/", -2),
                (-7, "%", -2),
                (7, "%", -2),
            ]);
        }
        for (x, sym, y) in cases {
            let op = if sym == "/" { BinOp::Div } else { BinOp::Mod };
            let (xv, yv) = (Value::I64(x as i64).cast(t), Value::I64(y as i64).cast(t));
            let expected = Value::binary(op, xv, yv).unwrap();
            // `A(i) - A(i)` keeps an input in the kernel; the division folds to a constant.
            let source = format!(
                "kernel k(A: {t}[N]) -> O: {t}[N] {{ O(i) = A(i) - A(i) + ({x}{t}) {sym} ({y}{t}); }}"
            );
            let args =
                Args::new().buffer("A", buffer(t, &at_least(division_values(t), MIN_LENGTH)));
            for schedule in schedules(&[8]) {
                let what = format!("{t}: {x} {sym} {y} `{schedule}`");
                let (got, reference) = run_both(&compile(&source, &schedule), &args, &what);
                let want = vec![expected; got.len()];
                let inputs = |_: usize| format!("{x} {sym} {y}");
                check(&got, &want, &inputs, &|a, b| a == b, &what);
                check(&reference, &want, &inputs, &|a, b| a == b, &what);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (b) Casts
// ---------------------------------------------------------------------------------------------

/// Values of `t` where a conversion goes wrong: zero and its sign, halves and their rounding,
/// the edges of every integer type and just past them, float extremes, infinities and NaN.
fn cast_values(t: Dtype) -> Vec<Value> {
    if t == Dtype::Bool {
        return vec![Value::Bool(false), Value::Bool(true)];
    }
    let ints: Vec<i64> = vec![
        0,
        1,
        -1,
        2,
        -2,
        127,
        128,
        -128,
        -129,
        255,
        256,
        -256,
        32767,
        32768,
        -32768,
        -32769,
        65535,
        65536,
        i32::MAX as i64,
        i32::MIN as i64,
        u32::MAX as i64,
        1 << 32,
        (1 << 24) + 1,
        (1 << 24) + 3,
        -(1 << 24) - 1,
        (1 << 53) + 1,
        i64::MAX,
        i64::MIN,
        i64::MIN + 1,
        0x5555_5555_5555_5555,
    ];
    if t.is_int() {
        let mut seen = BTreeSet::new();
        return ints
            .into_iter()
            .map(|x| Value::I64(x).cast(t))
            .filter(|v| seen.insert(v.as_i64().unwrap()))
            .collect();
    }
    let mut floats: Vec<f64> = vec![
        0.0,
        0.5,
        1.0,
        1.5,
        2.5,
        0.499_999_97,
        0.999_999_9,
        127.5,
        127.99,
        128.0,
        128.5,
        255.5,
        255.99,
        256.0,
        32767.5,
        32768.0,
        65535.9,
        65536.0,
        2_147_483_520.0,
        2_147_483_647.5,
        2_147_483_648.0,
        4_294_967_295.5,
        4_294_967_296.0,
        9_007_199_254_740_993.0,
        9.223_372_036_854_775e18,
        9.3e18,
        1.0e20,
        3.0e38,
        f32::MAX as f64,
        1.0e300,
        f64::MAX,
        f32::MIN_POSITIVE as f64,
        1.0e-40,
        f64::MIN_POSITIVE,
        5.0e-324,
        f64::INFINITY,
    ];
    floats.extend(floats.clone().into_iter().map(|x| -x));
    floats.push(f64::NAN);
    floats.push(-f64::NAN);
    floats.into_iter().map(|x| Value::F64(x).cast(t)).collect()
}

#[test]
fn every_cast_between_every_pair_of_types() {
    for from in Dtype::ALL {
        let values = at_least(cast_values(from), MIN_LENGTH);
        let args = Args::new().buffer("A", buffer(from, &values));
        for to in Dtype::ALL {
            let source = format!("kernel k(A: {from}[N]) -> O: {to}[N] {{ O(i) = {to}(A(i)); }}");
            let expected: Vec<Value> = values.iter().map(|v| v.cast(to)).collect();
            for schedule in schedules(&[4, 8, 16]) {
                let what = format!("{from} -> {to} `{schedule}`");
                let (got, reference) = run_both(&compile(&source, &schedule), &args, &what);
                let inputs = |i: usize| format!("{to}({:?})", values[i]);
                check(&got, &expected, &inputs, &|x, y| same(x, y), &what);
                check(&reference, &expected, &inputs, &|x, y| same(x, y), &what);
            }
        }
    }
}

/// A cast chain inside one vector expression: widening, arithmetic that wraps in the narrow
/// type, and back (the u8/u16/u32 lane-count changes that image kernels do).
#[test]
fn cast_chains_in_vector_code() {
    let values: Vec<Value> = (0..=255u8).map(Value::U8).collect();
    let args = Args::new().buffer("A", buffer(Dtype::U8, &values));
    let source = "kernel k(A: u8[N]) -> O: i16[N] {
        O(i) = i16(u16(A(i)) * 300u16) - i16(i8(A(i))) + i16(f32(A(i)) * -1.5);
    }";
    let expected: Vec<Value> = values
        .iter()
        .map(|v| {
            let a = v.as_i64().unwrap();
            let x = ((a as u16).wrapping_mul(300)) as i16;
            let y = (a as u8 as i8) as i16;
            let z = ((a as f32) * -1.5) as i16;
            Value::I16(x.wrapping_sub(y).wrapping_add(z))
        })
        .collect();
    for schedule in schedules(&[4, 8, 16, 32]) {
        let what = format!("cast chain `{schedule}`");
        let (got, reference) = run_both(&compile(source, &schedule), &args, &what);
        let inputs = |i: usize| format!("A = {:?}", values[i]);
        check(&got, &expected, &inputs, &|x, y| x == y, &what);
        check(&reference, &expected, &inputs, &|x, y| x == y, &what);
    }
}

// ---------------------------------------------------------------------------------------------
// (c) Math intrinsics
// ---------------------------------------------------------------------------------------------

/// Whether a transcendental result is close enough: same class (NaN, infinity of a sign),
/// else within `MATH_TOLERANCE` relative or the smallest normal number absolutely.
fn close_math(got: Value, expected: Value) -> bool {
    let (g, e, tiny) = match (got, expected) {
        (Value::F32(g), Value::F32(e)) => (g as f64, e as f64, f32::MIN_POSITIVE as f64),
        (Value::F64(g), Value::F64(e)) => (g, e, f64::MIN_POSITIVE),
        _ => return false,
    };
    if e.is_nan() || g.is_nan() {
        return e.is_nan() && g.is_nan();
    }
    if e.is_infinite() || g.is_infinite() {
        return g == e;
    }
    (g - e).abs() <= MATH_TOLERANCE * e.abs() || (g - e).abs() <= tiny
}

/// Float inputs: a sweep over [-12, 12] that hits halves and integers, and special values.
fn math_values(t: Dtype) -> Vec<Value> {
    let mut xs: Vec<f64> = (-96..=96).map(|k| k as f64 * 0.125).collect();
    xs.extend((-40..=40).map(|k| k as f64 * 0.3 + 0.01));
    xs.extend([
        0.1, -0.1, 0.7, -0.7, 1e-3, -1e-3, 1e-30, -1e-30, 30.0, -30.0, 87.0, 88.5, 89.0, -87.0,
        -103.0, -104.0, -110.0, 200.0, -200.0, 710.0, -745.0, 1e10, -1e10, 1e30, -1e30,
    ]);
    xs.extend([
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
    ]);
    let mut v: Vec<Value> = xs.into_iter().map(|x| Value::F64(x).cast(t)).collect();
    if t == Dtype::F32 {
        v.extend([
            Value::F32(f32::MIN_POSITIVE),
            Value::F32(1e-40),
            Value::F32(f32::MAX),
            Value::F32(-f32::MAX),
        ]);
    }
    v
}

/// Runs `source` (inputs `A`, `B`, `C` of type `t`, all of one length) under every schedule and
/// compares with `expected` under `close` and with the reference evaluator.
fn check_elementwise(
    source: &str,
    inputs: &[(&str, &[Value])],
    t: Dtype,
    expected: &[Value],
    widths: &[i64],
    close: &dyn Fn(Value, Value) -> bool,
    what: &str,
) {
    let mut args = Args::new();
    for (name, values) in inputs {
        args = args.buffer(name, buffer(t, values));
    }
    let describe = |i: usize| {
        inputs
            .iter()
            .map(|(n, v)| format!("{n} = {:?}", v[i]))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for schedule in schedules(widths) {
        let what = format!("{what} `{schedule}`");
        let (got, reference) = run_both(&compile(source, &schedule), &args, &what);
        check(&got, expected, &describe, close, &what);
        check(&got, &elements(&reference), &describe, close, &what);
    }
}

#[test]
fn float_unary_intrinsics() {
    type F = (fn(f32) -> f32, fn(f64) -> f64);
    let functions: [(&str, F, bool); 10] = [
        ("floor", (f32::floor, f64::floor), true),
        ("ceil", (f32::ceil, f64::ceil), true),
        ("round", (f32::round_ties_even, f64::round_ties_even), true),
        ("sqrt", (f32::sqrt, f64::sqrt), true),
        ("abs", (f32::abs, f64::abs), true),
        ("exp", (f32::exp, f64::exp), false),
        ("log", (f32::ln, f64::ln), false),
        ("sin", (f32::sin, f64::sin), false),
        ("cos", (f32::cos, f64::cos), false),
        ("tanh", (f32::tanh, f64::tanh), false),
    ];
    for t in [Dtype::F32, Dtype::F64] {
        let a = math_values(t);
        for (name, (f32_fn, f64_fn), exact) in functions {
            let expected: Vec<Value> = a
                .iter()
                .map(|v| v.float_fn(name, f32_fn, f64_fn).unwrap())
                .collect();
            let source = format!("kernel k(A: {t}[N]) -> O: {t}[N] {{ O(i) = {name}(A(i)); }}");
            let close: &dyn Fn(Value, Value) -> bool = if exact { &same } else { &close_math };
            let widths = [3, 4, 8, 16];
            check_elementwise(
                &source,
                &[("A", &a)],
                t,
                &expected,
                &widths,
                close,
                &format!("{name} {t}"),
            );
        }
    }
}

/// Pairs of float inputs: every special value against a handful of ordinary ones, both ways.
fn float_pairs(t: Dtype) -> (Vec<Value>, Vec<Value>) {
    let specials: Vec<f64> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        3.0,
        10.0,
        1e-3,
        1e30,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let ordinary: Vec<f64> = vec![0.0, -0.0, 2.0, -3.0, 0.25, 1.5, -0.5, 7.0];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &x in &specials {
        for &y in &specials {
            a.push(x);
            b.push(y);
        }
    }
    for k in 0..150 {
        let x = (k as f64 * 0.731).sin() * 12.0;
        let y = ordinary[k % ordinary.len()];
        a.extend([x, y]);
        b.extend([y, x]);
    }
    let cast = |v: Vec<f64>| v.into_iter().map(|x| Value::F64(x).cast(t)).collect();
    (cast(a), cast(b))
}

#[test]
fn float_binary_intrinsics() {
    for t in [Dtype::F32, Dtype::F64] {
        let (a, b) = float_pairs(t);
        let cases: [(&str, fn(Value, Value) -> Value, bool); 3] = [
            ("min", |x, y| Value::min(x, y).unwrap(), true),
            ("max", |x, y| Value::max(x, y).unwrap(), true),
            ("pow", |x, y| Value::pow(x, y).unwrap(), false),
        ];
        for (name, f, exact) in cases {
            let expected: Vec<Value> = a.iter().zip(&b).map(|(&x, &y)| f(x, y)).collect();
            let source = format!(
                "kernel k(A: {t}[N], B: {t}[N]) -> O: {t}[N] {{ O(i) = {name}(A(i), B(i)); }}"
            );
            let close: &dyn Fn(Value, Value) -> bool = if exact { &same } else { &close_math };
            check_elementwise(
                &source,
                &[("A", &a), ("B", &b)],
                t,
                &expected,
                &[3, 4, 8],
                close,
                &format!("{name} {t}"),
            );
        }
    }
}

#[test]
fn float_clamp() {
    for t in [Dtype::F32, Dtype::F64] {
        let (a, b) = float_pairs(t);
        // The high bound: sometimes below the low one, sometimes NaN or infinite.
        let c: Vec<Value> = b
            .iter()
            .enumerate()
            .map(|(i, v)| match i % 5 {
                0 => Value::F64(1.0).cast(t),
                1 => Value::F64(-1.0).cast(t),
                _ => Value::max(a[(i * 7) % a.len()], *v).unwrap(),
            })
            .collect();
        let expected: Vec<Value> = (0..a.len())
            .map(|i| Value::min(Value::max(a[i], b[i]).unwrap(), c[i]).unwrap())
            .collect();
        let source = format!(
            "kernel k(A: {t}[N], B: {t}[N], C: {t}[N]) -> O: {t}[N] {{ O(i) = clamp(A(i), B(i), C(i)); }}"
        );
        check_elementwise(
            &source,
            &[("A", &a), ("B", &b), ("C", &c)],
            t,
            &expected,
            &[3, 4, 8],
            &same,
            &format!("clamp {t}"),
        );
        // Constant bounds, as image kernels write them.
        let expected: Vec<Value> = a
            .iter()
            .map(|&x| {
                let lo = Value::F64(-1.5).cast(t);
                let hi = Value::F64(2.0).cast(t);
                Value::min(Value::max(x, lo).unwrap(), hi).unwrap()
            })
            .collect();
        let source =
            format!("kernel k(A: {t}[N]) -> O: {t}[N] {{ O(i) = clamp(A(i), -1.5, 2.0); }}");
        check_elementwise(
            &source,
            &[("A", &a)],
            t,
            &expected,
            &[4, 8],
            &same,
            &format!("clamp constant {t}"),
        );
    }
}

/// `min`, `max`, `abs` and `clamp` on every integer type (exact; `abs(MIN)` wraps to `MIN`).
#[test]
fn integer_min_max_abs_clamp() {
    for t in INT_TYPES {
        let values = division_values(t);
        let pairs: Vec<(Value, Value)> = values
            .iter()
            .flat_map(|&a| values.iter().map(move |&b| (a, b)))
            .collect();
        let a: Vec<Value> = pairs.iter().map(|p| p.0).collect();
        let b: Vec<Value> = pairs.iter().map(|p| p.1).collect();
        let c: Vec<Value> = (0..a.len()).map(|i| a[(i * 5 + 3) % a.len()]).collect();
        let widths = integer_widths(t);
        let cases: [(&str, &dyn Fn(usize) -> Value); 4] = [
            ("min(A(i), B(i))", &|i| Value::min(a[i], b[i]).unwrap()),
            ("max(A(i), B(i))", &|i| Value::max(a[i], b[i]).unwrap()),
            ("abs(A(i))", &|i| a[i].abs().unwrap()),
            ("clamp(A(i), B(i), C(i))", &|i| {
                Value::min(Value::max(a[i], b[i]).unwrap(), c[i]).unwrap()
            }),
        ];
        for (body, f) in cases {
            let expected: Vec<Value> = (0..a.len()).map(f).collect();
            let source = format!(
                "kernel k(A: {t}[N], B: {t}[N], C: {t}[N]) -> O: {t}[N] {{ O(i) = {body} + B(i) * 0 + C(i) * 0; }}"
            );
            check_elementwise(
                &source,
                &[("A", &a), ("B", &b), ("C", &c)],
                t,
                &expected,
                &widths,
                &|x, y| x == y,
                &format!("{body} {t}"),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (d) Boundary conditions
// ---------------------------------------------------------------------------------------------

const BOUNDARIES: [&str; 4] = ["clamp_edge", "constant(-7)", "mirror", "mirror_interior"];

/// Where a read at `i` lands in a dimension of extent `n` (`None`: the constant exterior),
/// written from the definitions in dsl/src/ir.rs, independently of the evaluator.
fn boundary_index(boundary: &str, i: i64, n: i64) -> Option<i64> {
    match boundary {
        "clamp_edge" => Some(i.clamp(0, n - 1)),
        "mirror" => {
            // .. 1 0 | 0 1 .. n-1 | n-1 n-2 ..
            let m = i.rem_euclid(2 * n);
            Some(if m < n { m } else { 2 * n - 1 - m })
        }
        "mirror_interior" if n == 1 => Some(0),
        "mirror_interior" => {
            // .. 2 1 | 0 1 .. n-1 | n-2 ..
            let p = 2 * n - 2;
            let m = i.rem_euclid(p);
            Some(if m < n { m } else { p - m })
        }
        _ => (0..n).contains(&i).then_some(i),
    }
}

/// Reads far outside a 1-D input (several periods of a mirror for small extents), scalar and
/// vectorized, against both the evaluator and the definitions.
fn boundary_one_dimension(boundary: &str) {
    let source = format!(
        "kernel b(A: i32[N] with {boundary}) -> O: i32[N + 40] {{
            O(i) = A(i - 20) * 10 + A(i + 3);
        }}"
    );
    let schedules = [
        "",
        "O: vectorize(i, 4)",
        "O: vectorize(i, 8)",
        "O: split(i, io, ii, 5, guard).vectorize(ii)",
        "O: split(i, io, ii, 16).parallel(io).vectorize(ii, 8)",
    ];
    for schedule in schedules {
        let kernel = compile(&source, schedule);
        for n in [1i64, 2, 3, 4, 5, 8, 13] {
            let a: Vec<i32> = (0..n as i32).map(|k| 100 + k).collect();
            let args = Args::new().buffer("A", Buffer::from_vec(&[n as usize], a.clone()).unwrap());
            let what = format!("{boundary} N={n} `{schedule}`");
            let (got, reference) = run_both(&kernel, &args, &what);
            let read = |i: i64| boundary_index(boundary, i, n).map_or(-7, |j| a[j as usize]);
            let expected: Vec<Value> = (0..n + 40)
                .map(|i| Value::I32(read(i - 20).wrapping_mul(10).wrapping_add(read(i + 3))))
                .collect();
            let inputs = |i: usize| format!("O({i})");
            check(&got, &expected, &inputs, &|x, y| x == y, &what);
            check(&reference, &expected, &inputs, &|x, y| x == y, &what);
        }
    }
}

/// Two dimensions, floats, extents 1 in either or both, tiled, vectorized and parallel.
fn boundary_two_dimensions(boundary: &str) {
    let boundary = boundary.replace("-7", "-7.0");
    let source = format!(
        "kernel b(A: f32[H, W] with {boundary}) -> O: f32[H + 6, W + 6] {{
            O(y, x) = A(y - 3, x - 3) * 2.0 + A(y - 5, x + 1);
        }}"
    );
    let schedules = [
        "",
        "O: vectorize(x, 4)",
        "O: tile(y, x, yo, xo, yi, xi, 2, 8).vectorize(xi, 4).parallel(yo)",
        "O: reorder(x, y).vectorize(y, 8)",
    ];
    for schedule in schedules {
        let kernel = compile(&source, schedule);
        for (h, w) in [(1, 1), (1, 2), (2, 1), (1, 7), (5, 1), (3, 4), (6, 9)] {
            let a: Vec<f32> = (0..h * w).map(|k| k as f32 * 0.5 - 3.0).collect();
            let args = Args::new().buffer("A", Buffer::from_vec(&[h, w], a).unwrap());
            let what = format!("{boundary} {h}x{w} `{schedule}`");
            let (got, reference) = run_both(&kernel, &args, &what);
            // `x * 2.0` is exact, so a fused multiply-add rounds the same as two steps.
            let inputs = |i: usize| format!("O({}, {})", i / (w + 6), i % (w + 6));
            check(&got, &elements(&reference), &inputs, &same, &what);
        }
    }
}

#[test]
fn clamp_edge_one_dimension() {
    boundary_one_dimension("clamp_edge");
}

#[test]
fn constant_exterior_one_dimension() {
    boundary_one_dimension("constant(-7)");
}

/// Mirrored reads (the reflected index's bounds come from a bounds hint: bounds inference cannot
/// see through the `select` that reflects it, and without the hint every mirrored input was
/// refused as too small).
#[test]
fn mirror_one_dimension() {
    boundary_one_dimension("mirror");
    boundary_one_dimension("mirror_interior");
}

#[test]
fn clamp_edge_and_constant_exterior_two_dimensions() {
    boundary_two_dimensions("clamp_edge");
    boundary_two_dimensions("constant(-7)");
}

/// As `mirror_one_dimension`.
#[test]
fn mirror_two_dimensions() {
    boundary_two_dimensions("mirror");
    boundary_two_dimensions("mirror_interior");
}

/// The 5-tap Gaussian example (clamp_edge) on images of 1 and 2 pixels in either dimension,
/// under its default and hand schedules.
#[test]
fn gaussian_on_tiny_images() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let source =
        std::fs::read_to_string(format!("{dir}/../examples/kernels/gaussian5.strata")).unwrap();
    let hand =
        std::fs::read_to_string(format!("{dir}/../examples/schedules/gaussian5.sched")).unwrap();
    for schedule in ["".to_string(), hand] {
        let kernel = compile(&source, &schedule);
        for (h, w) in [(1, 1), (1, 2), (2, 1), (2, 2), (1, 9), (9, 1), (3, 70)] {
            let a: Vec<f32> = (0..h * w).map(|k| ((k * 37) % 11) as f32 - 5.0).collect();
            let args = Args::new().buffer("input", Buffer::from_vec(&[h, w], a).unwrap());
            let what = format!("gaussian5 {h}x{w}");
            let (got, reference) = run_both(&kernel, &args, &what);
            strata_dsl::random::agree(&got, &reference, 1e-5)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
}

/// An empty input under a boundary condition: a constant exterior is read as its constant
/// without touching the buffer, and the call agrees with the reference; `clamp_edge` and the
/// mirrors have no edge to repeat, and the call is refused before any code runs with the
/// reference's error. It never reads outside the buffer.
#[test]
fn boundary_conditions_on_an_empty_input() {
    for boundary in BOUNDARIES {
        let source =
            format!("kernel b(A: i32[N] with {boundary}) -> O: i32[N + 8] {{ O(i) = A(i - 4); }}");
        for schedule in ["", "O: vectorize(i, 4)"] {
            let kernel = compile(&source, schedule);
            let args = Args::new().buffer("A", Buffer::from_vec(&[0], Vec::<i32>::new()).unwrap());
            for compiled in &kernel.compiled {
                let what = format!("{boundary} N=0 `{schedule}` ({})", compiled.backend());
                empty_input_is_handled(&kernel.pipeline, compiled, &args, &what);
            }
        }
    }
}

/// `compiled` on `args` (with an empty input `A`) gives the reference's answer, or the
/// reference's refusal: that `A`'s dimension 0 is empty.
fn empty_input_is_handled(pipeline: &Pipeline, compiled: &CompiledKernel, args: &Args, what: &str) {
    let constant = what.starts_with("constant");
    match (compiled.run(args, 1), evaluate(pipeline, args)) {
        (Ok(got), Ok(reference)) if constant => assert_eq!(got, reference, "{what}"),
        (Err(e), Err(EvalError::Call(reference))) if !constant => {
            // The indices differ (the reference names the read, the call the clamped box).
            for e in [e, reference] {
                assert!(
                    matches!(&e, CallError::ReadsEmptyInput { input, dim: 0, .. } if input == "A"),
                    "{what}: {e}"
                );
            }
        }
        (got, reference) => panic!("{what}: the JIT gave {got:?}, the reference {reference:?}"),
    }
}

/// Vector division of u32 by constants (the multiply-shift path) on the whole u32 range.
#[test]
fn vector_u32_division_by_constants_on_the_full_range() {
    let src = "kernel d(A: u32[N]) -> O: u32[N] { O(i) = A(i) / 3 + A(i) / 7 * 2 + A(i) / 641 + A(i) / 4294967295 + A(i) / 10; }";
    let pipeline = strata_dsl::parse_kernel(src, "d").unwrap();
    let mut values: Vec<u32> = vec![
        0,
        1,
        2,
        3,
        6,
        7,
        9,
        640,
        641,
        642,
        u32::MAX,
        u32::MAX - 1,
        u32::MAX - 2,
        1 << 31,
    ];
    let mut state = 12345u32;
    while values.len() < 1003 {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        values.push(state);
    }
    let n = values.len();
    let args =
        strata_dsl::Args::new().buffer("A", strata_dsl::Buffer::from_vec(&[n], values).unwrap());
    let expected = strata_dsl::evaluate(&pipeline, &args).unwrap();
    for schedule in [
        "O: vectorize(i, 4)",
        "O: vectorize(i, 8)",
        "O: vectorize(i, 16)",
    ] {
        let schedule = strata_scheduler::schedule::text::parse_schedule(schedule).unwrap();
        let lowered = strata_scheduler::lower::lower(&pipeline, &schedule).unwrap();
        let kernel =
            strata_jit::CompiledKernel::new(&lowered, &strata_jit::CodegenOptions::default())
                .unwrap();
        assert_eq!(kernel.run(&args, 1).unwrap(), expected, "{schedule}");
    }
}
