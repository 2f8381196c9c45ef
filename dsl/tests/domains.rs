//! Non-rectangular reduction domains: bounds affine in the variables around the domain and in
//! the reduction variables declared before, and `where` predicates, in inline reductions and
//! in updates. The printed form parses back to the same pipeline, each rule a bound or a
//! predicate can break has its error, and the reference evaluator visits exactly the points of
//! the domain (checked against loops written out in Rust).

use strata_dsl::{evaluate, parse_kernel, parse_kernels, Args, Buffer, Pipeline};

fn kernel(source: &str) -> Pipeline {
    parse_kernel(source, "test").unwrap_or_else(|e| panic!("{e}"))
}

fn error_of(source: &str) -> String {
    match parse_kernels(source, "test") {
        Ok(_) => panic!("expected an error for:\n{source}"),
        Err(d) => d.message,
    }
}

/// A deterministic pseudo-random vector of small integers.
fn values(n: usize, seed: i64) -> Vec<i32> {
    (0..n as i64)
        .map(|i| ((i * 7919 + seed * 104_729) % 23 - 11) as i32)
        .collect()
}

fn eval_i32(p: &Pipeline, inputs: &[(&str, &[usize], Vec<i32>)]) -> Vec<i32> {
    let mut args = Args::new();
    for (name, shape, v) in inputs {
        args = args.buffer(name, Buffer::from_vec(shape, v.clone()).unwrap());
    }
    let out = evaluate(p, &args).unwrap_or_else(|e| panic!("{e}"));
    out.as_slice::<i32>().unwrap().to_vec()
}

const TRIANGULAR: &str = "kernel tri(A: i32[M, N]) -> out: i32[M, N] {
    out(i, j) = sum(k in i + 1..M where (k + j) % 3 != 0) A(k, j) * (k - i);
}";

const UPDATE_DOMAIN: &str = "kernel upd(A: i32[N, N]) -> out: i32[N] {
    out(x) = 0;
    for (r in 0..N, s in r..N where r + s < N + x) out(x) += A(r, s) + x;
    for (r in 1..x + 1) out(x) = out(x) * 2 - r;
}";

const NESTED: &str = "kernel nest(A: i32[N]) -> out: i32[N] {
    out(i) = max(k in 0..i + 1) sum(l in k..2 * i - k + 1 where l < N) A(l) - k;
}";

#[test]
fn triangular_domains_print_and_parse_back_to_the_same_pipeline() {
    for src in [TRIANGULAR, UPDATE_DOMAIN, NESTED] {
        let p = kernel(src);
        let printed = p.to_string();
        let reparsed = parse_kernel(&printed, "printed").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(reparsed, p, "{printed}");
        assert_eq!(reparsed.to_string(), printed);
        assert_eq!(reparsed.hash(), p.hash());
    }
    let printed = kernel(TRIANGULAR).to_string();
    assert!(
        printed.contains("sum(k in i + 1..M where (k + j) % 3 != 0)"),
        "{printed}"
    );
    let printed = kernel(UPDATE_DOMAIN).to_string();
    assert!(
        printed.contains("for (r in 0..N, s in r..N where r + s < N + x) out(x) +="),
        "{printed}"
    );
}

#[test]
fn a_predicate_changes_the_hash() {
    let with = kernel(TRIANGULAR);
    let without = kernel(&TRIANGULAR.replace(" where (k + j) % 3 != 0", ""));
    assert_ne!(with.hash(), without.hash());
}

#[test]
fn the_reference_sums_a_triangular_domain_with_a_predicate() {
    let (m, n) = (7usize, 5usize);
    let a = values(m * n, 1);
    let got = eval_i32(&kernel(TRIANGULAR), &[("A", &[m, n], a.clone())]);
    let mut want = vec![0i32; m * n];
    for i in 0..m {
        for j in 0..n {
            for k in i + 1..m {
                if (k + j) % 3 != 0 {
                    want[i * n + j] += a[k * n + j] * (k as i32 - i as i32);
                }
            }
        }
    }
    assert_eq!(got, want);
}

#[test]
fn the_reference_runs_update_domains_that_read_pure_and_earlier_reduction_variables() {
    for n in [0usize, 1, 2, 5] {
        let a = values(n * n, 2);
        let got = eval_i32(&kernel(UPDATE_DOMAIN), &[("A", &[n, n], a.clone())]);
        let mut want = vec![0i32; n];
        for (x, w) in want.iter_mut().enumerate() {
            for r in 0..n {
                for s in r..n {
                    if r + s < n + x {
                        *w += a[r * n + s] + x as i32;
                    }
                }
            }
            for r in 1..x as i32 + 1 {
                *w = *w * 2 - r;
            }
        }
        assert_eq!(got, want, "N = {n}");
    }
}

#[test]
fn the_reference_runs_nested_reductions_whose_bounds_read_the_outer_one() {
    let n = 6usize;
    let a = values(n, 3);
    let got = eval_i32(&kernel(NESTED), &[("A", &[n], a.clone())]);
    let want: Vec<i32> = (0..n as i64)
        .map(|i| {
            (0..=i)
                .map(|k| {
                    (k..2 * i - k + 1)
                        .filter(|&l| l < n as i64)
                        .map(|l| a[l as usize] - k as i32)
                        .sum::<i32>()
                })
                .max()
                .unwrap_or(i32::MIN)
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn an_index_correlating_two_variables_of_a_triangular_domain_stays_inside_the_output() {
    // `s - r` over `s in r..N` is `0..N - 1`: the box of the update is inside the output (the
    // hulls of `r` and `s` alone would reach `-(N - 1)` and refuse the call).
    let src = "kernel k(A: i32[N]) -> out: i32[N] {
        out(x) = 0;
        for (r in 0..N, s in r..N) out(s - r) += A(s) * (r + 1);
    }";
    let a = values(6, 4);
    let got = eval_i32(&kernel(src), &[("A", &[6], a.clone())]);
    let mut want = vec![0i32; 6];
    for r in 0..6 {
        for s in r..6 {
            want[s - r] += a[s] * (r as i32 + 1);
        }
    }
    assert_eq!(got, want);
}

#[test]
fn an_empty_part_of_a_triangular_domain_gives_the_identity() {
    // At the last row `k in i + 1..M` is empty: the sum is 0 and the product 1.
    let src = "kernel k(A: i32[M]) -> out: i32[M] { out(i) = prod(k in i + 1..M) A(k) + 1; }";
    let a = vec![2, 3, 4];
    assert_eq!(eval_i32(&kernel(src), &[("A", &[3], a)]), vec![4 * 5, 5, 1]);
}

#[test]
fn a_predicate_false_everywhere_reads_nothing() {
    // A reads no point of `p` outside its domain: the predicate skips every point, and `p`,
    // whose region is the domain's hull, is computed but never read past it.
    let src = "kernel k(A: i32[N]) -> out: i32[N] {
        p(x) = A(x) * 2;
        out(i) = sum(k in 0..i + 1 where k > i) p(k);
    }";
    assert_eq!(
        eval_i32(&kernel(src), &[("A", &[4], vec![1; 4])]),
        vec![0; 4]
    );
}

#[test]
fn a_bound_must_be_affine() {
    for (bound, shown) in [
        ("i * i", "i * i"),
        ("min(i, 3)", "min(i, 3)"),
        ("i * M", "i * M"),
        ("i / 2", "i / 2"),
    ] {
        let src =
            format!("kernel k(A: i32[M]) -> out: i32[M] {{ out(i) = sum(k in {bound}..M) A(k); }}");
        let message = error_of(&src);
        assert!(
            message.starts_with("a reduction bound must be affine")
                && message.contains(&format!("`{shown}`")),
            "{bound}: {message}"
        );
    }
    // Constant coefficients and sizes added are affine.
    kernel("kernel k(A: i32[M]) -> out: i32[M] { out(i) = sum(k in 2 * i - (M - 1)..M + -i * 3) A(k); }");
}

#[test]
fn a_bound_may_not_use_its_own_or_a_later_reduction_variable() {
    let later = error_of(
        "kernel k(A: i32[N, N]) -> out: i32[N] { out(x) = 0; for (r in s..N, s in 0..N) out(x) += A(r, s); }",
    );
    assert!(
        later.starts_with("reduction variable `s` is not declared yet"),
        "{later}"
    );
    let own = error_of("kernel k(A: i32[N]) -> out: i32[N] { out(i) = sum(k in 0..k) A(k); }");
    assert!(
        own.starts_with("reduction variable `k` is not declared yet"),
        "{own}"
    );
    let elsewhere = error_of(
        "kernel k(A: i32[N]) -> out: i32[N] { p(i) = sum(q in 0..N) A(q); out(i) = sum(k in 0..q) A(k) + p(i); }",
    );
    assert!(
        elsewhere.starts_with("reduction variable `q` is not in scope here"),
        "{elsewhere}"
    );
}

#[test]
fn an_update_bound_may_use_only_the_pure_variables_bare_in_its_target() {
    let message = error_of(
        "kernel k(A: i32[N]) -> out: i32[N] { out(x) = 0; for (r in 0..x) out(r) += A(r); }",
    );
    assert!(
        message.starts_with(
            "pure variable `x` of `out` can be used in this update only if it appears bare"
        ),
        "{message}"
    );
}

#[test]
fn a_predicate_must_be_a_bool_of_variables() {
    let not_bool = error_of(
        "kernel k(A: i32[N]) -> out: i32[N] { out(i) = sum(k in 0..N where k + 1) A(k); }",
    );
    assert_eq!(not_bool, "a `where` predicate must be bool, found i32");
    let reads = error_of(
        "kernel k(A: i32[N]) -> out: i32[N] { out(i) = sum(k in 0..N where A(k) > 0) A(k); }",
    );
    assert!(
        reads.starts_with(
            "a `where` predicate may use only variables, sizes, scalar parameters and constants"
        ),
        "{reads}"
    );
    let outside = error_of(
        "kernel k(A: i32[N]) -> out: i32[N] { out(x) = 0; for (r in 0..N where r < y) out(x) += A(r); }",
    );
    assert_eq!(outside, "unknown name `y`");
    // `where` is a keyword: it cannot name anything.
    let reserved = error_of("kernel k(where: i32[N]) -> out: i32[N] { out(i) = where(i); }");
    assert!(
        reserved.contains("`where` is a built-in name"),
        "{reserved}"
    );
}

#[test]
fn a_domain_is_variables_then_one_predicate() {
    let message = error_of(
        "kernel k(A: i32[N]) -> out: i32[N] { out(i) = sum(k in 0..N where k > 0, l in 0..N) A(k); }",
    );
    assert!(message.starts_with("expected `)`"), "{message}");
    let message =
        error_of("kernel k(A: i32[N]) -> out: i32[N] { out(i) = sum(k in 0..N l in 0..N) A(k); }");
    assert!(
        message.starts_with("expected `,`, `where` or `)`"),
        "{message}"
    );
}
