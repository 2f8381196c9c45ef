//! Narrowing integer casts of vectors (`u32`/`i32` to 16 and 8 bits, `u16`/`i16` to 8 bits)
//! run with the pack instructions (`unarrow` after masking each lane to the target's width,
//! cranelift/narrow.rs) and keep the language's semantics: Rust's `as`, truncation modulo
//! 2^bits, never saturation. Inputs cover the whole source range (values above `0xFFFF` and
//! `0xFF`, negative ones, the edges of every type), extents are odd so vector loops have
//! tails, and every answer must equal the reference evaluator's bit for bit.

mod common;
use common::compile;
use strata_dsl::{evaluate, Args, Buffer, Dtype, Value};

/// The integer types a vector cast narrows from, and the types it narrows to.
const SOURCES: [Dtype; 4] = [Dtype::U32, Dtype::I32, Dtype::U16, Dtype::I16];
const TARGETS: [Dtype; 4] = [Dtype::U16, Dtype::I16, Dtype::U8, Dtype::I8];

const SCHEDULES: [&str; 2] = ["O: vectorize(i, 8)", "O: vectorize(i, 16)"];

/// Edge values of every integer width (as i64, cast to the source type), then a pseudo-random
/// spread over the whole 32-bit range, `n` values in all.
fn values(t: Dtype, n: usize) -> Vec<Value> {
    let edges: [i64; 28] = [
        0,
        1,
        -1,
        2,
        -2,
        0x7F,
        0x80,
        0xFF,
        0x100,
        0x1FF,
        -0x80,
        -0x81,
        -0x100,
        0x7FFF,
        0x8000,
        0xFFFF,
        0x1_0000,
        0x1_0001,
        0x1_FFFF,
        -0x8000,
        -0x8001,
        -0x1_0000,
        i32::MAX as i64,
        i32::MIN as i64,
        u32::MAX as i64,
        0x1234_5678,
        0x89AB_CDEF,
        0xDEAD_BEEF,
    ];
    let mut out: Vec<Value> = edges.iter().map(|&x| Value::I64(x).cast(t)).collect();
    let mut state = 0x2545_F491u32;
    while out.len() < n {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        out.push(Value::I64(state as i64).cast(t));
    }
    out.truncate(n);
    out
}

fn buffer(dtype: Dtype, shape: &[usize], values: &[Value]) -> Buffer {
    let mut b = Buffer::zeros(dtype, shape).unwrap();
    assert_eq!(b.len(), values.len());
    for (i, v) in values.iter().enumerate() {
        assert!(b.set_flat(i, *v));
    }
    b
}

fn elements(b: &Buffer) -> Vec<Value> {
    (0..b.len()).map(|i| b.get_flat(i).unwrap()).collect()
}

/// Whether a `lanes`-wide vector of `t` is held in whole 128-bit registers (values.rs `layout`):
/// only then is the cast native.
fn native(t: Dtype, lanes: usize) -> bool {
    (lanes * t.bytes() * 8).is_multiple_of(128)
}

/// The JIT and the reference agree exactly, and both equal Rust's `as` on every element.
fn check(got: &Buffer, reference: &Buffer, expected: &[Value], inputs: &[Value], what: &str) {
    assert_eq!(got.shape(), reference.shape(), "{what}");
    let (got, reference) = (elements(got), elements(reference));
    assert_eq!(
        reference, expected,
        "{what}: the reference is not Rust's `as`"
    );
    let bad: Vec<String> = (0..expected.len())
        .filter(|&i| got[i] != expected[i])
        .take(8)
        .map(|i| {
            format!(
                "  [{i}] {:?}: got {:?}, expected {:?}",
                inputs[i], got[i], expected[i]
            )
        })
        .collect();
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

/// Every narrowing pair, 8 and 16 lanes wide, on odd extents (tails), checked exactly. Where
/// both sides are whole registers the code must narrow natively: `unarrow`, no lane extraction.
#[test]
fn narrowing_casts_truncate_on_the_full_range() {
    for from in SOURCES {
        for to in TARGETS.into_iter().filter(|t| t.bytes() < from.bytes()) {
            let source = format!("kernel k(A: {from}[N]) -> O: {to}[N] {{ O(i) = {to}(A(i)); }}");
            for n in [1003, 37, 17] {
                let inputs = values(from, n);
                let expected: Vec<Value> = inputs.iter().map(|v| v.cast(to)).collect();
                let args = Args::new().buffer("A", buffer(from, &[n], &inputs));
                for (schedule, lanes) in SCHEDULES.iter().zip([8, 16]) {
                    let what = format!("{from} -> {to}, N = {n}, `{schedule}`");
                    let (pipeline, compiled) = compile(&source, schedule);
                    if n == 1003 && native(from, lanes) && native(to, lanes) {
                        let clif = compiled.clif().join("\n");
                        assert!(clif.contains("unarrow"), "{what}: not narrowed\n{clif}");
                        assert!(
                            !clif.contains("extractlane") && !clif.contains("insertlane"),
                            "{what}: still lane by lane\n{clif}"
                        );
                    }
                    let got = compiled
                        .run(&args, 2)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    let reference = evaluate(&pipeline, &args).unwrap();
                    check(&got, &reference, &expected, &inputs, &what);
                }
            }
        }
    }
}

/// Narrowing as part of a vector expression: arithmetic that wraps in 32 bits, the narrowing
/// (two steps for 8 bits), then arithmetic that wraps in the narrow type, on a 2-D image with
/// an odd width.
#[test]
fn narrowing_inside_vector_expressions() {
    let (h, w) = (5, 67);
    let a_in = values(Dtype::I32, h * w);
    let b_in = values(Dtype::U32, h * w + 7)[7..].to_vec();
    let args = Args::new()
        .buffer("A", buffer(Dtype::I32, &[h, w], &a_in))
        .buffer("B", buffer(Dtype::U32, &[h, w], &b_in));
    let kernels = [
        (
            Dtype::U16,
            "kernel k(A: i32[H, W], B: u32[H, W]) -> O: u16[H, W] {
                O(y, x) = u16(A(y, x) * 3 - i32(B(y, x))) + u16(B(y, x) / 8u32) * 7u16;
            }",
        ),
        (
            Dtype::I16,
            "kernel k(A: i32[H, W], B: u32[H, W]) -> O: i16[H, W] {
                O(y, x) = i16(B(y, x) + u32(A(y, x))) - i16(A(y, x) / 32i32);
            }",
        ),
        (
            Dtype::U8,
            "kernel k(A: i32[H, W], B: u32[H, W]) -> O: u8[H, W] {
                O(y, x) = u8(A(y, x) + 1000i32) + u8(u16(B(y, x)) * 3u16);
            }",
        ),
        (
            Dtype::I8,
            "kernel k(A: i32[H, W], B: u32[H, W]) -> O: i8[H, W] {
                O(y, x) = i8(A(y, x)) - i8(i16(B(y, x)) / 16i16);
            }",
        ),
    ];
    for (to, source) in kernels {
        let mut reference_once = None;
        for schedule in [
            "",
            "O: vectorize(x, 8)",
            "O: vectorize(x, 16)",
            "O: vectorize(x, 16).parallel(y)",
        ] {
            let what = format!("{to} `{schedule}`\n{source}");
            let (pipeline, compiled) = compile(source, schedule);
            let got = compiled
                .run(&args, 2)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let reference = reference_once
                .get_or_insert_with(|| evaluate(&pipeline, &args).unwrap())
                .clone();
            assert_eq!(got.dtype(), to, "{what}");
            let expected = elements(&reference);
            check(&got, &reference, &expected, &a_in, &what);
        }
    }
}

/// The u16 blur example under its own schedule (u32 sums narrowed back to u16 in the vector
/// loop) on odd shapes and on inputs near `u16::MAX`: exact, and its vector code has no lane
/// extraction left.
#[test]
fn blur3x3_example_narrows_natively() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let source =
        std::fs::read_to_string(format!("{root}/examples/kernels/blur3x3.strata")).unwrap();
    let schedule =
        std::fs::read_to_string(format!("{root}/examples/schedules/blur3x3.sched")).unwrap();
    let (pipeline, compiled) = compile(&source, &schedule);
    let clif = compiled.clif().join("\n");
    assert!(clif.contains("unarrow"), "{clif}");
    assert!(
        !clif.contains("extractlane") && !clif.contains("insertlane"),
        "blur3x3 still casts lane by lane:\n{clif}"
    );
    for (h, w) in [(37, 75), (70, 131), (3, 3)] {
        let mut state = 7u32 + h as u32;
        let pixels: Vec<Value> = (0..h * w)
            .map(|i| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let x = (state >> 16) as u16;
                Value::U16(if i % 3 == 0 { u16::MAX - (x & 7) } else { x })
            })
            .collect();
        let args = Args::new().buffer("input", buffer(Dtype::U16, &[h, w], &pixels));
        for threads in [1, 3] {
            let what = format!("blur3x3 {h}x{w}, {threads} threads");
            let got = compiled
                .run(&args, threads)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let reference = evaluate(&pipeline, &args).unwrap();
            assert_eq!(got, reference, "{what}");
        }
    }
}
