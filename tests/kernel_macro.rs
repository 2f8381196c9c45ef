//! `kernel!` and `.strata` files are two doors to one parser: the same kernel gives the same
//! Pipeline and the same hash through both.

use strata::{kernel, parse_kernel, Pipeline};

fn from_file(name: &str) -> Pipeline {
    let path = format!(
        "{}/examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    let source = std::fs::read_to_string(&path).unwrap();
    parse_kernel(&source, &path).unwrap_or_else(|e| panic!("{e}"))
}

fn assert_same(name: &str, from_macro: Pipeline) {
    let from_file = from_file(name);
    assert_eq!(from_macro, from_file, "{name}: Pipelines differ");
    assert_eq!(from_macro.hash(), from_file.hash(), "{name}: hashes differ");
}

#[test]
fn matmul_through_both_doors() {
    assert_same(
        "matmul",
        kernel! {
            kernel matmul(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] {
                C(i, j) = sum(k in 0..K) A(i, k) * B(k, j);
            }
        },
    );
}

#[test]
fn blur3x3_through_both_doors() {
    assert_same(
        "blur3x3",
        kernel! {
            kernel blur3x3(input: u16[H, W]) -> out: u16[H - 2, W - 2] {
                bx(y, x) = u16((u32(input(y, x)) + u32(input(y, x + 1)) + u32(input(y, x + 2))) / 3);
                out(y, x) = u16((u32(bx(y, x)) + u32(bx(y + 1, x)) + u32(bx(y + 2, x))) / 3);
            }
        },
    );
}

#[test]
fn softmax_fast_through_both_doors() {
    assert_same(
        "softmax_fast",
        kernel! {
            kernel softmax_fast(X: f32[R, C]) -> P: f32[R, C] {
                mx(r) = max(c in 0..C) X(r, c);
                e(r, c) = fast_exp(X(r, c) - mx(r));
                s(r) = sum(c in 0..C) e(r, c);
                P(r, c) = e(r, c) / s(r);
            }
        },
    );
}

#[test]
fn softmax_through_both_doors() {
    assert_same(
        "softmax",
        kernel! {
            kernel softmax(X: f32[R, C]) -> P: f32[R, C] {
                mx(r) = max(c in 0..C) X(r, c);
                e(r, c) = exp(X(r, c) - mx(r));
                s(r) = sum(c in 0..C) e(r, c);
                P(r, c) = e(r, c) / s(r);
            }
        },
    );
}

#[test]
fn conv2d_through_both_doors() {
    assert_same(
        "conv2d",
        kernel! {
            kernel conv2d(input: f32[N, C, H, W], weights: f32[F, C, 3, 3]) -> out: f32[N, F, H - 2, W - 2] {
                out(n, f, y, x) = sum(c in 0..C, ky in 0..3, kx in 0..3)
                    input(n, c, y + ky, x + kx) * weights(f, c, ky, kx);
            }
        },
    );
}

#[test]
fn histogram_through_both_doors() {
    assert_same(
        "histogram",
        kernel! {
            kernel histogram(image: u8[H, W]) -> hist: u32[256] {
                hist(b) = 0;
                for (y in 0..H, x in 0..W) hist(image(y, x)) += 1;
            }
        },
    );
}

#[test]
fn gaussian5_through_both_doors() {
    assert_same(
        "gaussian5",
        kernel! {
            kernel gaussian5(input: f32[H, W] with clamp_edge) -> out: f32[H, W] {
                gx(y, x) = 0.0625 * input(y, x - 2) + 0.25 * input(y, x - 1) + 0.375 * input(y, x)
                    + 0.25 * input(y, x + 1) + 0.0625 * input(y, x + 2);
                out(y, x) = 0.0625 * gx(y - 2, x) + 0.25 * gx(y - 1, x) + 0.375 * gx(y, x)
                    + 0.25 * gx(y + 1, x) + 0.0625 * gx(y + 2, x);
            }
        },
    );
}

#[test]
fn brighten_through_both_doors() {
    assert_same(
        "brighten",
        kernel! {
            kernel brighten(image: u8[H, W], gain: f32, offset: f32) -> out: u8[H, W] {
                out(y, x) = u8(clamp(f32(image(y, x)) * gain + offset, 0.0, 255.0));
            }
        },
    );
}

#[test]
fn joined_punctuation_survives_the_token_round_trip() {
    let from_macro = kernel! {
        kernel k(A: i32[N]) -> O: i32[N] {
            O(i) = A(i)*-1;
            for (r in 0..N) O(i) -= select(A(r)<=0&&!(A(r)!=2), 1, 0);
        }
    };
    let source = "kernel k(A: i32[N]) -> O: i32[N] {
        O(i) = A(i) * -1;
        for (r in 0..N) O(i) -= select(A(r) <= 0 && !(A(r) != 2), 1, 0);
    }";
    assert_eq!(from_macro, parse_kernel(source, "k").unwrap());
}
