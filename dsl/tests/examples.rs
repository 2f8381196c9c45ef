//! Each example kernel's reference result equals a hand-written Rust loop nest, on seeded random
//! inputs of several shapes, including odd sizes and size 1. Floats are compared within a
//! relative 1e-6: the loop nests below add in the same order as the reference, so in practice
//! they agree exactly.

mod common;

use common::*;
use strata_dsl::{evaluate, Args, Buffer, CallError, EvalError, Value};

const FLOAT_TOLERANCE: f32 = 1e-6;

#[test]
fn matmul_matches_loop_nest() {
    let kernel = example("matmul");
    for (seed, &(m, n, k)) in [(1, 1, 1), (3, 5, 7), (8, 1, 4), (1, 9, 2), (13, 17, 11)]
        .iter()
        .enumerate()
    {
        let mut rng = rng(seed as u64);
        let (a, a_buf) = random_f32(&mut rng, &[m, k]);
        let (b, b_buf) = random_f32(&mut rng, &[k, n]);
        let out = evaluate(&kernel, &Args::new().buffer("A", a_buf).buffer("B", b_buf)).unwrap();
        let mut expected = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0.0f32;
                for kk in 0..k {
                    acc += a[i * k + kk] * b[kk * n + j];
                }
                expected[i * n + j] = acc;
            }
        }
        assert_eq!(out.shape(), &[m, n]);
        assert_close(
            out.as_slice::<f32>().unwrap(),
            &expected,
            FLOAT_TOLERANCE,
            &format!("matmul {m}x{n}x{k}"),
        );
    }
}

#[test]
fn blur3x3_matches_loop_nest() {
    let kernel = example("blur3x3");
    for (seed, &(h, w)) in [(3, 3), (4, 9), (17, 13), (3, 30), (2, 5)]
        .iter()
        .enumerate()
    {
        let mut rng = rng(seed as u64);
        let (input, buf) = random_u16(&mut rng, &[h, w]);
        let out = evaluate(&kernel, &Args::new().buffer("input", buf)).unwrap();
        let (oh, ow) = (h - 2, w - 2);
        let at = |y: usize, x: usize| input[y * w + x] as u32;
        let bx = |y: usize, x: usize| ((at(y, x) + at(y, x + 1) + at(y, x + 2)) / 3) as u16 as u32;
        let mut expected = vec![0u16; oh * ow];
        for y in 0..oh {
            for x in 0..ow {
                expected[y * ow + x] = ((bx(y, x) + bx(y + 1, x) + bx(y + 2, x)) / 3) as u16;
            }
        }
        assert_eq!(out.shape(), &[oh, ow]);
        assert_eq!(
            out.as_slice::<u16>().unwrap(),
            expected.as_slice(),
            "blur {h}x{w}"
        );
    }
}

#[test]
fn blur3x3_too_small_input_is_an_error() {
    let kernel = example("blur3x3");
    let buf = Buffer::from_vec(&[1, 5], vec![0u16; 5]).unwrap();
    let err = evaluate(&kernel, &Args::new().buffer("input", buf)).unwrap_err();
    assert_eq!(
        err,
        EvalError::Call(CallError::NegativeExtent {
            output: "out".into(),
            dim: 0,
            value: -1
        })
    );
}

#[test]
fn softmax_matches_loop_nest() {
    let kernel = example("softmax");
    for (seed, &(r, c)) in [(1, 1), (3, 7), (16, 33), (1, 64)].iter().enumerate() {
        let mut rng = rng(seed as u64);
        let (x, buf) = random_f32(&mut rng, &[r, c]);
        let out = evaluate(&kernel, &Args::new().buffer("X", buf)).unwrap();
        let mut expected = vec![0.0f32; r * c];
        for row in 0..r {
            let xs = &x[row * c..(row + 1) * c];
            let mx = xs
                .iter()
                .fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m });
            let s: f32 = xs.iter().fold(0.0, |s, &v| s + (v - mx).exp());
            for col in 0..c {
                expected[row * c + col] = (xs[col] - mx).exp() / s;
            }
        }
        assert_close(
            out.as_slice::<f32>().unwrap(),
            &expected,
            FLOAT_TOLERANCE,
            &format!("softmax {r}x{c}"),
        );
    }
}

#[test]
fn conv2d_matches_loop_nest() {
    let kernel = example("conv2d");
    let shapes = [
        (1, 1, 1, 3, 3),
        (1, 2, 3, 5, 4),
        (2, 3, 2, 7, 6),
        (1, 1, 1, 3, 9),
    ];
    for (seed, &(n, c, f, h, w)) in shapes.iter().enumerate() {
        let mut rng = rng(seed as u64);
        let (input, in_buf) = random_f32(&mut rng, &[n, c, h, w]);
        let (weights, w_buf) = random_f32(&mut rng, &[f, c, 3, 3]);
        let out = evaluate(
            &kernel,
            &Args::new().buffer("input", in_buf).buffer("weights", w_buf),
        )
        .unwrap();
        let (oh, ow) = (h - 2, w - 2);
        let mut expected = vec![0.0f32; n * f * oh * ow];
        for b in 0..n {
            for o in 0..f {
                for y in 0..oh {
                    for x in 0..ow {
                        let mut acc = 0.0f32;
                        for ch in 0..c {
                            for ky in 0..3 {
                                for kx in 0..3 {
                                    let i = input[((b * c + ch) * h + y + ky) * w + x + kx];
                                    let wt = weights[((o * c + ch) * 3 + ky) * 3 + kx];
                                    acc += i * wt;
                                }
                            }
                        }
                        expected[((b * f + o) * oh + y) * ow + x] = acc;
                    }
                }
            }
        }
        assert_eq!(out.shape(), &[n, f, oh, ow]);
        assert_close(
            out.as_slice::<f32>().unwrap(),
            &expected,
            FLOAT_TOLERANCE,
            &format!("conv2d {n}x{c}x{f}x{h}x{w}"),
        );
    }
}

#[test]
fn histogram_matches_loop_nest() {
    let kernel = example("histogram");
    for (seed, &(h, w)) in [(1, 1), (5, 7), (31, 17), (64, 3)].iter().enumerate() {
        let mut rng = rng(seed as u64);
        let (image, buf) = random_u8(&mut rng, &[h, w]);
        let out = evaluate(&kernel, &Args::new().buffer("image", buf)).unwrap();
        let mut expected = vec![0u32; 256];
        for &v in &image {
            expected[v as usize] += 1;
        }
        assert_eq!(out.shape(), &[256]);
        assert_eq!(
            out.as_slice::<u32>().unwrap(),
            expected.as_slice(),
            "histogram {h}x{w}"
        );
    }
}

#[test]
fn gaussian5_matches_loop_nest() {
    let kernel = example("gaussian5");
    const TAPS: [f32; 5] = [0.0625, 0.25, 0.375, 0.25, 0.0625];
    for (seed, &(h, w)) in [(1, 1), (2, 3), (9, 14), (5, 1)].iter().enumerate() {
        let mut rng = rng(seed as u64);
        let (input, buf) = random_f32(&mut rng, &[h, w]);
        let out = evaluate(&kernel, &Args::new().buffer("input", buf)).unwrap();
        let clamp = |i: i64, n: usize| i.clamp(0, n as i64 - 1) as usize;
        let at = |y: i64, x: i64| input[clamp(y, h) * w + clamp(x, w)];
        let gx = |y: i64, x: i64| {
            let mut acc = TAPS[0] * at(y, x - 2);
            for (d, tap) in TAPS.iter().enumerate().skip(1) {
                acc += tap * at(y, x + d as i64 - 2);
            }
            acc
        };
        let mut expected = vec![0.0f32; h * w];
        for y in 0..h as i64 {
            for x in 0..w as i64 {
                let mut acc = TAPS[0] * gx(y - 2, x);
                for (d, tap) in TAPS.iter().enumerate().skip(1) {
                    acc += tap * gx(y + d as i64 - 2, x);
                }
                expected[y as usize * w + x as usize] = acc;
            }
        }
        assert_close(
            out.as_slice::<f32>().unwrap(),
            &expected,
            FLOAT_TOLERANCE,
            &format!("gaussian5 {h}x{w}"),
        );
    }
}

#[test]
fn brighten_matches_loop_nest() {
    let kernel = example("brighten");
    for (seed, &(h, w, gain, offset)) in [(1, 1, 1.5, 10.0), (5, 6, 0.5, -3.0), (7, 3, 3.0, 40.0)]
        .iter()
        .enumerate()
    {
        let mut rng = rng(seed as u64);
        let (image, buf) = random_u8(&mut rng, &[h, w]);
        let args = Args::new()
            .buffer("image", buf)
            .scalar("gain", Value::F32(gain))
            .scalar("offset", Value::F32(offset));
        let out = evaluate(&kernel, &args).unwrap();
        let expected: Vec<u8> = image
            .iter()
            .map(|&v| (v as f32 * gain + offset).clamp(0.0, 255.0) as u8)
            .collect();
        assert_eq!(
            out.as_slice::<u8>().unwrap(),
            expected.as_slice(),
            "brighten {h}x{w}"
        );
    }
}

#[test]
fn kernel_files_load_by_path_with_errors_naming_the_file() {
    let path = format!(
        "{}/../examples/kernels/matmul.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    let kernels = strata_dsl::parse_kernel_file(&path).unwrap();
    assert_eq!(kernels.len(), 1);
    assert_eq!(kernels[0].name, "matmul");
    let missing = strata_dsl::parse_kernel_file("no/such/file.strata").unwrap_err();
    assert!(
        missing
            .to_string()
            .starts_with("cannot read no/such/file.strata: "),
        "{missing}"
    );
    let dir = std::env::temp_dir().join(format!("strata-kfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.strata");
    std::fs::write(&bad, "kernel k(A: f32[N]) -> B: f32[N] { B(i) = C(i); }").unwrap();
    let err = strata_dsl::parse_kernel_file(&bad).unwrap_err().to_string();
    assert!(err.contains("unknown function or input `C`"), "{err}");
    assert!(err.contains("bad.strata:1:"), "{err}");
}
