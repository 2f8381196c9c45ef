//! `rfactor` (Halide's `Func::rfactor`): its text and serde forms, one test per rule it can
//! break, what it makes of the pipeline, and the answer: hand schedules factoring every kind of
//! associative fold (integer sums, differences, products, min, max, the `f = f op e` forms,
//! float sums; whole variables, the inner and the outer part of a split; domains with a
//! nonzero start, a `where` predicate, two variables; intermediates vectorized, parallel,
//! computed inside the consumer, factored again, wrapped) are lowered, interpreted and
//! compared with the reference on shapes where the split divides, does not, and where the
//! domain is shorter than one piece or empty. The random schedules of the differential tests
//! factor reductions too (`generate.rs`); the last test checks they do.

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, parse_kernel, Pipeline};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::lift_reductions::lift_reductions;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::schedule::validate::validate;
use strata_scheduler::schedule::StageRef;
use strata_scheduler::{Directive, Schedule};
use strata_testkit::generate::random_schedule;

const FLOAT_TOLERANCE: f64 = 1e-4;

fn kernel(text: &str) -> Pipeline {
    parse_kernel(text, "test.strata").unwrap_or_else(|e| panic!("{e}"))
}

fn example(name: &str) -> Pipeline {
    let path = format!(
        "{}/../examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    kernel(&std::fs::read_to_string(&path).unwrap())
}

/// `out(i)` over `M` rows folding `A(i, k)` for `k in 0..K` with the update `update`.
fn fold_kernel(dtype: &str, init: &str, update: &str) -> Pipeline {
    kernel(&format!(
        "kernel folds(A: {dtype}[M, K]) -> out: {dtype}[M] {{\n    out(i) = {init};\n    {update}\n}}"
    ))
}

/// The message validating `text` against `pipeline` gives.
fn error(pipeline: &Pipeline, text: &str) -> String {
    let schedule = parse_schedule(text).unwrap_or_else(|e| panic!("{e}"));
    match validate(&lift_reductions(pipeline), &schedule) {
        Ok(_) => panic!("`{text}` should be rejected"),
        Err(e) => e.to_string(),
    }
}

fn sum_kernel() -> Pipeline {
    fold_kernel("i32", "0", "for (k in 0..K) out(i) += A(i, k);")
}

// ---------------------------------------------------------------------------------------------
// Text and serde
// ---------------------------------------------------------------------------------------------

const TEXT: &str = "C.update(0): split(k, ko, ki, 8).rfactor(ki, Cf).parallel(i)\n\
                    Cf: compute_at(C.update(0), i)\n\
                    Cf.update(0): reorder(ko, ki).vectorize(ki)";

#[test]
fn text_round_trip() {
    let parsed = parse_schedule(TEXT).unwrap();
    assert_eq!(parsed.to_string(), TEXT);
    assert_eq!(parse_schedule(&parsed.to_string()).unwrap(), parsed);
    let mut built = Schedule::new();
    built
        .stage("C", StageRef::Update(0))
        .split("k", "ko", "ki", 8)
        .rfactor("ki", "Cf")
        .parallel("i");
    assert_eq!(
        built.lines[0].directives[1],
        Directive::Rfactor {
            var: "ki".into(),
            intermediate: "Cf".into()
        }
    );
    assert_eq!(built.lines[0], parsed.lines[0]);
}

#[test]
fn serde_round_trip() {
    let parsed = parse_schedule(TEXT).unwrap();
    let json = serde_json::to_string(&parsed).unwrap();
    assert!(json.contains("Rfactor"), "{json}");
    let back: Schedule = serde_json::from_str(&json).unwrap();
    assert_eq!(back, parsed);
}

#[test]
fn text_errors() {
    let message = |text: &str| parse_schedule(text).unwrap_err().to_string();
    assert!(message("C.update(0): rfactor(k)").contains("`rfactor` takes 2 arguments"));
    assert!(
        message("C.update(0): rfactor(k, 3)").contains("expected the name of an input or function")
    );
}

// ---------------------------------------------------------------------------------------------
// Rules
// ---------------------------------------------------------------------------------------------

#[test]
fn rfactor_of_a_pure_definition() {
    assert_eq!(
        error(&sum_kernel(), "out: rfactor(k, of)"),
        "in the schedule of `out`: `rfactor(k, of)`: rfactor splits an update's reduction, and a pure definition has none; write it on an update's line (`f.update(0): ...`)"
    );
}

#[test]
fn rfactor_of_a_pure_variable() {
    assert_eq!(
        error(&sum_kernel(), "out.update(0): rfactor(i, of)"),
        "in the schedule of `out.update(0)`: `rfactor(i, of)`: `i` is not a reduction loop of the update; rfactor takes one of: k"
    );
}

#[test]
fn rfactor_of_a_loop_the_split_did_not_make() {
    assert_eq!(
        error(&sum_kernel(), "out.update(0): split(k, ko, ki, 4).rfactor(k, of)"),
        "in the schedule of `out.update(0)`: `rfactor(k, of)`: `k` is not a reduction loop of the update; rfactor takes one of: ko, ki"
    );
}

#[test]
fn rfactor_after_another_directive() {
    assert_eq!(
        error(&sum_kernel(), "out.update(0): parallel(i).rfactor(k, of)"),
        "in the schedule of `out.update(0)`: `rfactor(k, of)`: only the split of the factored reduction variable may come before rfactor on its stage, and `parallel(i)` does; schedule the merge after rfactor and the intermediate on its own lines"
    );
    // A split of a pure loop is not the factored variable's split either.
    let message = error(
        &sum_kernel(),
        "out.update(0): split(i, io, ii, 2).rfactor(k, of)",
    );
    assert!(message.contains("`split(i, io, ii, 2)` does"), "{message}");
}

#[test]
fn rfactor_of_a_non_associative_update() {
    let pipeline = fold_kernel("i32", "1", "for (k in 0..K) out(i) = out(i) * 2 + A(i, k);");
    assert_eq!(
        error(&pipeline, "out.update(0): rfactor(k, of)"),
        "in the schedule of `out.update(0)`: `rfactor(k, of)`: the update is not an associative fold, so its partial results cannot be combined in another order; rfactor takes `f(..) += e`, `-=`, `*=`, `f(..) = f(..) + e` (or `*`, or `f(..) - e`), `f(..) = max(f(..), e)` or min, where `e` does not read `f`"
    );
    // `e - f` alternates signs.
    let pipeline = fold_kernel("i32", "1", "for (k in 0..K) out(i) = A(i, k) - out(i);");
    assert!(error(&pipeline, "out.update(0): rfactor(k, of)").contains("not an associative fold"));
}

#[test]
fn rfactor_of_a_scan() {
    let pipeline = kernel(
        "kernel scan(A: i32[N]) -> out: i32[N] {\n    out(i) = A(i);\n    for (k in 1..N) out(k) = out(k - 1) + A(k);\n}",
    );
    // The target `out(k)` is not at the pure variable.
    assert!(error(&pipeline, "out.update(0): rfactor(k, of)")
        .contains("not the function at its own pure variables"));
    let pipeline = kernel(
        "kernel scan(A: i32[N, K]) -> out: i32[N] {\n    out(i) = 0;\n    for (k in 0..K) out(i) += out(i) * A(i, k);\n}",
    );
    assert!(error(&pipeline, "out.update(0): rfactor(k, of)").contains("not an associative fold"));
    let pipeline = kernel(
        "kernel scan(A: i32[N, K]) -> out: i32[N] {\n    out(i) = 0;\n    for (k in 0..K) out(i) += A(i, k) * sum(j in 0..N) out(j);\n}",
    );
    assert_eq!(
        error(&pipeline, "out.update(0): rfactor(k, of)"),
        "in the schedule of `out.update(0)`: `rfactor(k, of)`: the update reads the function at another point or through a function it calls (a scan), so each step depends on the order of the earlier ones and cannot be factored"
    );
}

#[test]
fn rfactor_of_a_data_dependent_target() {
    assert_eq!(
        error(&example("histogram"), "hist.update(0): rfactor(x, hf)"),
        "in the schedule of `hist.update(0)`: `rfactor(x, hf)`: the update writes a point that is not the function at its own pure variables (a data-dependent or constant index), so its partial results would not have one point each; rfactor takes an update of `f(x, y, ..)`"
    );
}

#[test]
fn rfactor_of_a_triangular_domain() {
    let pipeline = kernel(
        "kernel tri(A: i32[N, N]) -> out: i32[N] {\n    out(i) = 0;\n    for (r in 0..N, c in r..N) out(i) += A(r, c);\n}",
    );
    assert_eq!(
        error(&pipeline, "out.update(0): rfactor(r, of)"),
        "in the schedule of `out.update(0)`: `rfactor(r, of)`: the bounds of `c` read another variable (the domain is not a box), so the factored loop's range would change from point to point"
    );
}

#[test]
fn rfactor_into_a_name_in_use() {
    assert_eq!(
        error(&example("matmul"), "C.update(0): rfactor(k, A)"),
        "in the schedule of `C.update(0)`: `rfactor(k, A)`: the intermediate's name `A` is already the input `A`; choose a fresh name"
    );
    let message = error(&example("matmul"), "C.update(0): rfactor(k, C)");
    assert!(message.contains("already the function `C`"), "{message}");
}

#[test]
fn rfactor_into_a_reserved_name() {
    assert_eq!(
        error(&example("matmul"), "C.update(0): rfactor(k, sum)"),
        "in the schedule of `C.update(0)`: `rfactor(k, sum)`: `sum` cannot name a function: use letters, digits and `_`, starting with a letter or `_`, and no reserved word"
    );
}

#[test]
fn rfactor_split_names_clash() {
    assert_eq!(
        error(&example("matmul"), "C.update(0): split(k, ko, j, 4).rfactor(j, Cf)"),
        "in the schedule of `C.update(0)`: `rfactor(j, Cf)`: the new loop name `j` is already in use; choose a fresh name"
    );
}

#[test]
fn rfactor_split_factor_and_tail() {
    let message = error(
        &sum_kernel(),
        "out.update(0): split(k, ko, ki, 0).rfactor(ki, of)",
    );
    assert!(
        message.contains("the factor must be a positive integer, not 0"),
        "{message}"
    );
    let message = error(
        &sum_kernel(),
        "out.update(0): split(k, ko, ki, 4, shift).rfactor(ki, of)",
    );
    assert!(
        message.contains("the shift tail recomputes points"),
        "{message}"
    );
}

#[test]
fn rfactor_of_an_update_that_does_not_exist() {
    assert_eq!(
        error(&sum_kernel(), "out.update(1): rfactor(k, of)"),
        "schedule names `out.update(1)`, but `out` has 1 update definition(s)"
    );
}

#[test]
fn the_merge_keeps_the_directives_after_rfactor() {
    let pipeline = example("matmul");
    let schedule = parse_schedule(
        "C.update(0): split(k, ko, ki, 4).rfactor(ki, Cf).reorder(ki, i).vectorize(j, 4)",
    )
    .unwrap();
    let plan = validate(&lift_reductions(&pipeline), &schedule).unwrap();
    let cf = plan.pipeline().func("Cf").unwrap();
    assert_eq!(cf.vars, ["i", "j", "ki"]);
    assert_eq!(cf.updates.len(), 2, "the main update and the tail");
    let merge = &plan.funcs["C"].stages[1];
    let names: Vec<&str> = merge.dims.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["ki", "j", "j.v", "i"]);
    // Misplaced after rfactor: `ko` belongs to the intermediate now.
    let message = error(
        &pipeline,
        "C.update(0): split(k, ko, ki, 4).rfactor(ki, Cf).parallel(ko)",
    );
    assert!(
        message.contains("`ko` is not a loop here; the loops are: i, j, ki"),
        "{message}"
    );
}

// ---------------------------------------------------------------------------------------------
// The answer
// ---------------------------------------------------------------------------------------------

/// Lowers `pipeline` under `text`, interprets it for every `sizes` and compares with the
/// reference.
fn agrees(pipeline: &Pipeline, text: &str, sizes: &[&[(&str, i64)]]) {
    let schedule = parse_schedule(text).unwrap_or_else(|e| panic!("{e}"));
    let kernel = lower(pipeline, &schedule).unwrap_or_else(|e| panic!("`{text}`: {e}"));
    for (seed, sizes) in sizes.iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(seed as u64);
        let args = random_args(pipeline, &strata_dsl::sizes(sizes), &mut rng).unwrap();
        let expected = evaluate(pipeline, &args).unwrap();
        let got = interpret(&kernel, &args)
            .unwrap_or_else(|e| panic!("`{text}` {sizes:?}: {e}\n{kernel}"));
        agree(&got, &expected, FLOAT_TOLERANCE)
            .unwrap_or_else(|e| panic!("`{text}` {sizes:?}: {e}\n{kernel}"));
    }
}

/// Extents of the reduction: empty, shorter than a piece, one piece, dividing and not.
const KS: [i64; 7] = [0, 1, 3, 4, 8, 13, 29];

fn shapes() -> Vec<Vec<(&'static str, i64)>> {
    KS.iter()
        .enumerate()
        .map(|(i, &k)| vec![("M", 1 + i as i64 % 3), ("K", k)])
        .collect()
}

/// The factored schedules every fold of `out.update(0)` over `k` takes.
const FOLD_SCHEDULES: [&str; 7] = [
    "out.update(0): rfactor(k, of)",
    "out.update(0): split(k, ko, ki, 4).rfactor(ki, of)\nof.update(0): reorder(ko, ki).vectorize(ki)",
    "out.update(0): split(k, ko, ki, 3).rfactor(ko, of).parallel(i)\nof.update(0): parallel(ko)",
    "out.update(0): split(k, ko, ki, 4).rfactor(ki, of).unroll(ki)\nof: compute_at(out.update(0), i)\nof.update(0): reorder(ko, ki).vectorize(ki, 2)",
    "out.update(0): split(k, k, ki, 2).rfactor(k, of)\nof.update(0): split(ki, kio, kii, 2).rfactor(kio, og)\nog.update(1): unroll(k, 2)",
    "out.update(0): split(k, ko, ki, 8).rfactor(ki, of)\nof: wrap(A, Aw)\nAw: compute_root().vectorize(_1, 4)",
    "out.update(0): split(k, ko, ki, 5).rfactor(ki, of)\nof: compute_root().vectorize(ki, 4)\nof.update(0): reorder(ko, i, ki).unroll(i, 2)\nof.update(1): parallel(i)",
];

fn check_folds(dtype: &str, init: &str, updates: &[&str]) {
    for update in updates {
        let pipeline = fold_kernel(dtype, init, update);
        let sizes = shapes();
        let sizes: Vec<&[(&str, i64)]> = sizes.iter().map(Vec::as_slice).collect();
        for text in FOLD_SCHEDULES {
            agrees(&pipeline, text, &sizes);
        }
    }
}

#[test]
fn integer_folds_are_exact() {
    check_folds(
        "i32",
        "7",
        &[
            "for (k in 0..K) out(i) += A(i, k) * 3;",
            "for (k in 0..K) out(i) -= A(i, k);",
            "for (k in 0..K) out(i) *= A(i, k) % 5 + 1;",
            "for (k in 0..K) out(i) = out(i) + A(i, k);",
            "for (k in 0..K) out(i) = A(i, k) * 2 + out(i);",
            "for (k in 0..K) out(i) = out(i) - A(i, k);",
            "for (k in 0..K) out(i) = max(out(i), A(i, k));",
            "for (k in 0..K) out(i) = min(A(i, k) - 30000, out(i));",
        ],
    );
}

#[test]
fn integer_products_wrap_alike() {
    // Products of values up to 65535 overflow i32 after two steps: wrapping is associative.
    check_folds("i32", "1", &["for (k in 0..K) out(i) *= A(i, k) + 1;"]);
}

#[test]
fn domains_with_a_start_a_predicate() {
    check_folds(
        "i32",
        "0",
        &[
            "for (k in 2..K) out(i) += A(i, k);",
            "for (k in 0..K where (k + i) % 3 != 1) out(i) += A(i, k) * (k + 1);",
        ],
    );
}

#[test]
fn float_sums_agree_within_the_tolerance() {
    check_folds(
        "f32",
        "0.5",
        &[
            "for (k in 0..K) out(i) += A(i, k) * A(i, k);",
            "for (k in 0..K) out(i) = max(out(i), A(i, k));",
        ],
    );
}

#[test]
fn a_two_variable_domain() {
    let pipeline = kernel(
        "kernel two(X: i32[M, R, C]) -> out: i32[M] {\n    out(i) = 0;\n    for (r in 0..R, c in 0..C) out(i) += X(i, r, c) * (r + 2);\n}",
    );
    let sizes: Vec<Vec<(&str, i64)>> = [(1, 1, 1), (2, 3, 5), (3, 4, 8), (2, 0, 3), (1, 5, 2)]
        .iter()
        .map(|&(m, r, c)| vec![("M", m), ("R", r), ("C", c)])
        .collect();
    let sizes: Vec<&[(&str, i64)]> = sizes.iter().map(Vec::as_slice).collect();
    for text in [
        "out.update(0): rfactor(r, of)\nof.update(0): parallel(r)",
        "out.update(0): rfactor(c, of)\nof.update(0): reorder(r, c).vectorize(c, 4)",
        "out.update(0): split(c, co, ci, 4).rfactor(ci, of)\nof.update(0): reorder(r, co, ci).vectorize(ci)",
        "out.update(0): split(r, ro, ri, 2).rfactor(ro, of)\nof.update(0): parallel(ro).vectorize(c, 4)",
    ] {
        agrees(&pipeline, text, &sizes);
    }
}

#[test]
fn example_kernels() {
    let cases: [(&str, &[(&str, i64)], &str); 4] = [
        (
            "matmul",
            &[("M", 3), ("N", 5), ("K", 11)],
            "C.update(0): split(k, ko, ki, 4).rfactor(ki, Cf)\nCf.update(0): reorder(ko, ki).vectorize(j, 4)",
        ),
        (
            "matmul",
            &[("M", 4), ("N", 9), ("K", 2)],
            "C.update(0): split(k, ko, ki, 8).rfactor(ko, Cf)\nCf.update(0): parallel(ko).vectorize(ki, 4)",
        ),
        (
            "softmax",
            &[("R", 3), ("C", 13)],
            "mx: compute_at(P, r)\nmx.update(0): split(c, co, ci, 4).rfactor(ci, mf)\nmf: compute_at(P, r)\nmf.update(0): reorder(co, ci).vectorize(ci)\ns: compute_at(P, r)\ns.update(0): split(c, co, ci, 8).rfactor(ci, sf)\nsf: compute_at(P, r)",
        ),
        (
            "conv2d",
            &[("N", 1), ("C", 3), ("F", 2), ("H", 5), ("W", 6)],
            "out.update(0): rfactor(c, cf)\ncf.update(0): parallel(c)",
        ),
    ];
    for (name, sizes, text) in cases {
        agrees(&example(name), text, &[sizes]);
    }
}

/// The dot product's hand schedule (`examples/schedules/dot.sched`) around its pieces of 8192.
#[test]
fn dot_hand_schedule() {
    let path = format!(
        "{}/../examples/schedules/dot.sched",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    let sizes: Vec<Vec<(&str, i64)>> = [0, 5, 8192, 8193, 20000]
        .iter()
        .map(|&n| vec![("N", n)])
        .collect();
    let sizes: Vec<&[(&str, i64)]> = sizes.iter().map(Vec::as_slice).collect();
    agrees(&example("dot"), &text, &sizes);
}

#[test]
fn random_schedules_factor_reductions() {
    let pipeline = example("matmul");
    let mut rng = StdRng::seed_from_u64(5);
    let factored = (0..200)
        .map(|_| random_schedule(&pipeline, &mut rng))
        .filter(|s| s.to_string().contains("rfactor("))
        .count();
    assert!(
        factored >= 10,
        "{factored} of 200 random schedules factor a reduction"
    );
}

/// The outer part's guard (`ko < N / 8192`: no piece computes where the domain holds none)
/// reads only the pieces' loop, so unswitching takes it out of the vectorized fold, whose
/// accumulators then stay in registers.
#[test]
fn the_piece_guard_leaves_the_fold() {
    let path = format!(
        "{}/../examples/schedules/dot.sched",
        env!("CARGO_MANIFEST_DIR")
    );
    let schedule = parse_schedule(&std::fs::read_to_string(path).unwrap()).unwrap();
    let text = lower(&example("dot"), &schedule).unwrap().to_string();
    let guard = text.find("if (dp.s1.ko < N / 8192)").expect(&text);
    let fold = text.find("for dp.s1.ki.o").expect(&text);
    assert!(guard < fold, "{text}");
}
