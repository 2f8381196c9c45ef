//! Non-rectangular reduction domains through both doors: `kernel!` (whose tokens carry `where`
//! and `i + 1..M` as Rust tokens) gives the same Pipeline and hash as the `.strata` file.

use strata::{kernel, parse_kernel, Pipeline};

fn from_file(name: &str) -> Pipeline {
    let path = format!(
        "{}/examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    let source = std::fs::read_to_string(&path).unwrap();
    parse_kernel(&source, &path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn trmm_and_syrk_through_both_doors() {
    let trmm = kernel! {
        kernel trmm(A: f32[M, M], B: f32[M, N], alpha: f32) -> out: f32[M, N] {
            out(i, j) = alpha * (B(i, j) + sum(k in i + 1..M) A(k, i) * B(k, j));
        }
    };
    assert_eq!(trmm, from_file("trmm"));
    assert_eq!(trmm.hash(), from_file("trmm").hash());
    let syrk = kernel! {
        kernel syrk(A: f32[N, M], C: f32[N, N], alpha: f32, beta: f32) -> out: f32[N, N] {
            out(i, j) = beta * C(i, j);
            for (r in 0..N, s in 0..r + 1, k in 0..M) out(r, s) += alpha * A(r, k) * A(s, k);
        }
    };
    assert_eq!(syrk, from_file("syrk"));
}

#[test]
fn a_where_predicate_through_the_macro() {
    let from_macro = kernel! {
        kernel k(A: i32[N]) -> out: i32[N] {
            out(i) = sum(k in 0..i + 1 where (k + i) % 2 == 0) A(k);
        }
    };
    let text = "kernel k(A: i32[N]) -> out: i32[N] { out(i) = sum(k in 0..i + 1 where (k + i) % 2 == 0) A(k); }";
    assert_eq!(from_macro, parse_kernel(text, "text").unwrap());
}
