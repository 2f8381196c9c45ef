//! Code forms chosen from what an expression's form proves (cranelift/range.rs and the widening
//! loads): a vector load cast to integers twice as wide is one widening load per piece, a u32
//! division by a constant of a dividend below 2^22 goes through f32, and a narrowing cast of a
//! value that already fits drops its mask. Each must equal the reference evaluator bit for bit,
//! on inputs at the edges of their types, with odd extents (vector tails), and each form must
//! actually be chosen where it applies (and the general one where it does not).

mod common;
use common::compile;
use strata_dsl::{evaluate, Args, Buffer, Dtype, Value};

/// `n` values of `t`: its edges first (0, 1, max, max - 1, min, min + 1), then a pseudo-random
/// spread, every third one close to the type's maximum.
fn values(t: Dtype, n: usize) -> Vec<Value> {
    let (lo, hi) = t.int_range().unwrap();
    let edges = [0, 1, hi, hi - 1, lo, lo + 1];
    let mut out: Vec<Value> = edges
        .iter()
        .map(|&x| Value::I64(x as i64).cast(t))
        .collect();
    let mut state = 0x2545_F491u32;
    while out.len() < n {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let x = if out.len() % 3 == 0 {
            hi - (state >> 28) as i128
        } else {
            state as i128
        };
        out.push(Value::I64(x as i64).cast(t));
    }
    out.truncate(n);
    out
}

fn buffer(dtype: Dtype, values: &[Value]) -> Buffer {
    let mut b = Buffer::zeros(dtype, &[values.len()]).unwrap();
    for (i, v) in values.iter().enumerate() {
        assert!(b.set_flat(i, *v));
    }
    b
}

/// Runs `source` under each schedule on inputs of `dtype` at every extent, exactly against the
/// reference; returns the CLIF under the 16-wide schedule (whole registers even for bytes) for
/// the caller's checks.
fn agrees(source: &str, dtype: Dtype, schedules: &[&str]) -> String {
    let mut clif = String::new();
    for schedule in schedules {
        let (pipeline, compiled) = compile(source, schedule);
        if *schedule == "O: vectorize(i, 16)" {
            clif = compiled.clif().join("\n");
        }
        for n in [1003usize, 37, 19] {
            let args = Args::new().buffer("A", buffer(dtype, &values(dtype, n)));
            let what = format!("`{schedule}`, N = {n}\n{source}");
            let got = compiled
                .run(&args, 2)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(got, evaluate(&pipeline, &args).unwrap(), "{what}");
        }
    }
    clif
}

const VECTOR_SCHEDULES: [&str; 3] = [
    "O: vectorize(i, 8)",
    "O: vectorize(i, 16)",
    "O: split(i, io, ii, 32).vectorize(ii, 16).parallel(io)",
];

/// Every widening pair (zero extension from unsigned types, sign extension from signed ones),
/// loaded at an offset (unaligned), summed so the widened values are used.
#[test]
fn widening_loads() {
    let pairs = [
        (Dtype::U8, Dtype::U16, "uload8x8"),
        (Dtype::I8, Dtype::I16, "sload8x8"),
        (Dtype::U16, Dtype::U32, "uload16x4"),
        (Dtype::I16, Dtype::I32, "sload16x4"),
        (Dtype::U8, Dtype::I16, "uload8x8"),
        (Dtype::U16, Dtype::I32, "uload16x4"),
        (Dtype::I32, Dtype::I64, "sload32x2"),
        (Dtype::U32, Dtype::I64, "uload32x2"),
    ];
    for (from, to, instruction) in pairs {
        let source = format!(
            "kernel k(A: {from}[N]) -> O: {to}[N - 1] {{ O(i) = {to}(A(i)) + {to}(A(i + 1)); }}"
        );
        let clif = agrees(&source, from, &VECTOR_SCHEDULES);
        assert!(
            clif.contains(instruction),
            "{from} -> {to}: no {instruction}\n{clif}"
        );
    }
}

/// u32 division by constants of sums of widened u16 (below 2^22): through f32 (`x86_cvtt2dq`),
/// and exact; a dividend of the whole u32 range keeps the multiply-shift method.
#[test]
fn small_dividends_divide_through_f32() {
    for d in [3u32, 5, 7, 10, 255, 1000, 65_535] {
        let source = format!(
            "kernel k(A: u16[N]) -> O: u32[N - 2] {{
                O(i) = (u32(A(i)) + u32(A(i + 1)) + u32(A(i + 2))) / {d}u32;
            }}"
        );
        let clif = agrees(&source, Dtype::U16, &VECTOR_SCHEDULES);
        // The f32 route needs x86's truncating conversion; elsewhere it is multiply-shift.
        if cfg!(target_arch = "x86_64") {
            assert!(
                clif.contains("x86_cvtt2dq"),
                "/ {d}: not through f32\n{clif}"
            );
        }
    }
    let wide = "kernel k(A: u32[N]) -> O: u32[N] { O(i) = A(i) / 3u32; }";
    let clif = agrees(wide, Dtype::U32, &VECTOR_SCHEDULES);
    assert!(
        !clif.contains("x86_cvtt2dq"),
        "a full-range u32 went through f32\n{clif}"
    );
}

/// A narrowing cast of a value its form bounds by the target's maximum has no mask; one that
/// may exceed it keeps the mask (and so truncates, as `as` does).
#[test]
fn narrowing_drops_the_mask_only_when_the_value_fits() {
    let fits = "kernel k(A: u16[N]) -> O: u16[N - 2] {
        O(i) = u16((u32(A(i)) + u32(A(i + 1)) + u32(A(i + 2))) / 3u32);
    }";
    let clif = agrees(fits, Dtype::U16, &VECTOR_SCHEDULES);
    assert!(clif.contains("unarrow") && !clif.contains("band"), "{clif}");
    let wraps = "kernel k(A: u16[N]) -> O: u16[N - 2] {
        O(i) = u16((u32(A(i)) + u32(A(i + 1)) + u32(A(i + 2))) / 2u32);
    }";
    let clif = agrees(wraps, Dtype::U16, &VECTOR_SCHEDULES);
    assert!(clif.contains("unarrow") && clif.contains("band"), "{clif}");
}
