//! Storage folding (`fold_storage(y, n)` and the automatic folds of `lower::fold_storage`):
//! the text form and serde round trip, one test per rule a fold can break (with its message),
//! the printed loop IR of a folded buffer (golden), and the answer unchanged: stencils stored
//! at root and computed per row (or per tile) of their consumer, folded automatically, by
//! exactly the rows they need and by more, interpreted on random shapes against the reference;
//! random schedules with folds likewise.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, parse_kernel, Pipeline, Sizes};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::{bind_sizes, lower};
use strata_scheduler::schedule::lift_reductions::lift_reductions;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::schedule::validate::validate;
use strata_scheduler::{Directive, LoweredKernel, Schedule};
use strata_testkit::example;
use strata_testkit::generate::random_schedule;

/// Three stencils in a chain, the middle one with an update reading its producer at three
/// rows: folds of every stage, of a function with an update, and of a producer's producer.
const CHAIN: &str = "kernel chain(input: i32[H, W] with clamp_edge) -> out: i32[H, W] {
    a(y, x) = input(y - 1, x) + 2 * input(y, x + 1);
    b(y, x) = a(y - 1, x) * 3 - a(y + 1, x - 1);
    c(y, x) = b(y, x);
    for (r in 0..3) c(y, x) += b(y + r - 1, x);
    out(y, x) = c(y - 2, x) + c(y, x) + c(y + 1, x);
}";

fn kernel(name: &str) -> Pipeline {
    match name {
        "chain" => parse_kernel(CHAIN, "chain.strata").unwrap_or_else(|e| panic!("{e}")),
        _ => example(name),
    }
}

fn schedule(text: &str) -> Schedule {
    parse_schedule(text).unwrap_or_else(|e| panic!("{e}"))
}

fn lowered(name: &str, text: &str) -> LoweredKernel {
    lower(&kernel(name), &schedule(text)).unwrap_or_else(|e| panic!("{name}: `{text}`: {e}"))
}

/// The message validating or lowering `text` gives.
fn error(name: &str, text: &str) -> String {
    match lower(&kernel(name), &schedule(text)) {
        Ok(_) => panic!("{name}: `{text}` should be refused"),
        Err(e) => e.to_string(),
    }
}

/// The elements of `func`'s buffer at H = 66, W = 130 (bx and gx have 128 or 130 columns),
/// from the printed loop IR's `allocate func: type[n]`; `None` where the size is not constant.
fn buffer_size(k: &LoweredKernel, func: &str) -> Option<i64> {
    let sizes = strata_dsl::sizes(&[("H", 66), ("W", 130)]);
    let text = bind_sizes(k, &sizes).unwrap().to_string();
    let name = format!("allocate {func}: ");
    let line = text.lines().find(|l| l.trim_start().starts_with(&name))?;
    let size = line.split('[').nth(1)?.split(']').next()?;
    size.parse().ok()
}

#[test]
fn text_and_serde_round_trip() {
    let text = "bx: store_root().compute_at(out, y).fold_storage(y, 3)";
    let parsed = schedule(text);
    assert_eq!(parsed.to_string().trim(), text);
    let mut built = Schedule::new();
    built
        .func("bx")
        .store_root()
        .compute_at("out", "y")
        .fold_storage("y", 3);
    assert_eq!(parsed, built);
    assert!(parsed.lines[0]
        .directives
        .contains(&Directive::FoldStorage {
            var: "y".into(),
            extent: 3
        }));
    let json = serde_json::to_string(&parsed).unwrap();
    assert_eq!(serde_json::from_str::<Schedule>(&json).unwrap(), parsed);
    let wrong = parse_schedule("bx: fold_storage(y)")
        .unwrap_err()
        .to_string();
    assert!(wrong.contains("fold_storage(dim, extent)"), "{wrong}");
}

// ---- one test per rule --------------------------------------------------------------------

#[test]
fn fold_of_output_is_refused() {
    let e = error("blur3x3", "out: fold_storage(y, 4)");
    assert_eq!(
        e,
        "in the schedule of `out`: `fold_storage(y, 4)`: the output is stored whole in the caller's buffer; only a function computed and stored by the kernel can be folded"
    );
}

#[test]
fn fold_out_of_range_is_refused() {
    for extent in [0, -3, (1 << 24) + 1] {
        let e = error(
            "blur3x3",
            &format!("bx: store_root().compute_at(out, y).fold_storage(y, {extent})"),
        );
        assert!(
            e.ends_with(&format!(
                "`fold_storage(y, {extent})`: a fold of {extent} is out of range; use 1 to 16777216"
            )),
            "{e}"
        );
    }
}

#[test]
fn fold_of_unknown_dimension_is_refused() {
    let e = error(
        "blur3x3",
        "bx: store_root().compute_at(out, y).fold_storage(z, 4)",
    );
    assert!(
        e.ends_with("`fold_storage(z, 4)`: `z` is not a dimension of the function; its dimensions are: y, x"),
        "{e}"
    );
}

#[test]
fn folding_a_dimension_twice_is_refused() {
    let e = error(
        "blur3x3",
        "bx: store_root().compute_at(out, y).fold_storage(y, 4).fold_storage(y, 8)",
    );
    assert!(
        e.ends_with("`fold_storage(y, 8)`: `y` is already folded; a dimension is folded once"),
        "{e}"
    );
}

#[test]
fn fold_smaller_than_the_rows_one_iteration_needs_is_refused() {
    // Halide's test/error/bad_fold.cpp: each row of `out` reads 3 rows of `bx`.
    let e = error(
        "blur3x3",
        "bx: store_root().compute_at(out, y).fold_storage(y, 2)",
    );
    assert_eq!(
        e,
        "in the schedule of `bx`: `fold_storage(y, 2)`: one iteration computes and reads up to 3 values of `y`, more than the 2 slots of the fold (a value would be overwritten while still read); fold by at least 3"
    );
    // Per tile of 4 rows, 6 rows; the exact fold lowers.
    let tiled = "out: split(y, yo, yi, 4); bx: store_root().compute_at(out, yo)";
    let e = error("blur3x3", &format!("{tiled}.fold_storage(y, 5)"));
    assert!(
        e.contains("up to 6 values of `y`, more than the 5 slots"),
        "{e}"
    );
    lowered("blur3x3", &format!("{tiled}.fold_storage(y, 6)"));
    // gx's own rows split by 2 with round_up: each row of out computes 6 rows of gx, not 5.
    let rounded = "gx: store_root().compute_at(out, y).split(y, yo, yi, 2, round_up)";
    let e = error("gaussian5", &format!("{rounded}.fold_storage(y, 5)"));
    assert!(
        e.contains("up to 6 values of `y`, more than the 5 slots"),
        "{e}"
    );
    lowered("gaussian5", &format!("{rounded}.fold_storage(y, 6)"));
}

#[test]
fn fold_without_a_constant_bound_is_refused() {
    // At root, bx has H rows: no constant bound.
    let e = error("blur3x3", "bx: compute_root().fold_storage(y, 64)");
    assert!(
        e.ends_with("`fold_storage(y, 64)`: bounds inference finds no constant bound on the values of `y` computed at once (compute the function inside a loop of its consumer, e.g. `compute_at(g, y)` with `store_root()`), so no fold is provably safe"),
        "{e}"
    );
    // Per row of out, every column: x has no constant bound either.
    let e = error(
        "blur3x3",
        "bx: store_root().compute_at(out, y).fold_storage(x, 64)",
    );
    assert!(e.contains("no constant bound on the values of `x`"), "{e}");
}

#[test]
fn fold_under_a_parallel_loop_is_refused() {
    let e = error(
        "blur3x3",
        "out: parallel(y); bx: store_root().compute_at(out, y).fold_storage(y, 4)",
    );
    assert!(
        e.ends_with("`fold_storage(y, 4)`: the loop `out.s0.y` between the buffer and the computation is parallel: its iterations would share the fold's slots of `y`; store the function inside `out.s0.y` or make it serial"),
        "{e}"
    );
}

#[test]
fn fold_of_an_inlined_function_or_on_an_update_line_is_refused() {
    let e = error("blur3x3", "bx: fold_storage(y, 4)");
    assert!(
        e.contains("`fold_storage(y, 4)`: the function is computed inline"),
        "{e}"
    );
    let e = error(
        "chain",
        "c: compute_root(); c.update(0): fold_storage(y, 4)",
    );
    assert!(
        e.contains("wrap, reorder_storage and fold_storage apply to the whole function"),
        "{e}"
    );
}

// ---- what folding does --------------------------------------------------------------------

#[test]
fn automatic_folds_keep_a_power_of_two_rows() {
    let k = lowered("blur3x3", "bx: store_root().compute_at(out, y)");
    assert_eq!(buffer_size(&k, "bx"), Some(4 * 128));
    let k = lowered(
        "blur3x3",
        "bx: store_root().compute_at(out, y).fold_storage(y, 3)",
    );
    assert_eq!(buffer_size(&k, "bx"), Some(3 * 128));
    // Per tile of 4 rows: 6 rows, 8 slots; the columns (contiguous) are left alone.
    let k = lowered(
        "blur3x3",
        "out: tile(y, x, yo, xo, yi, xi, 4, 8); bx: store_root().compute_at(out, xo)",
    );
    assert_eq!(buffer_size(&k, "bx"), Some(8 * 128));
    // Asked for, the columns fold too.
    let k = lowered(
        "blur3x3",
        "out: tile(y, x, yo, xo, yi, xi, 4, 8); bx: store_root().compute_at(out, xo).fold_storage(x, 8)",
    );
    assert_eq!(buffer_size(&k, "bx"), Some(8 * 8));
}

#[test]
fn no_automatic_fold_where_it_is_unsafe_or_gains_nothing() {
    // Under a parallel loop between the buffer and the computation: iterations share slots.
    let k = lowered(
        "blur3x3",
        "out: parallel(y); bx: store_root().compute_at(out, y)",
    );
    assert_eq!(buffer_size(&k, "bx"), Some(66 * 128));
    // Stored inside the parallel loop, each iteration has its own buffer, folded.
    let k = lowered(
        "blur3x3",
        "out: split(y, yo, yi, 8).parallel(yo); bx: store_at(out, yo).compute_at(out, yi)",
    );
    assert_eq!(buffer_size(&k, "bx"), Some(4 * 128));
    // Stored where computed: nothing to fold (3 rows either way).
    let k = lowered("blur3x3", "bx: compute_at(out, y)");
    assert!(!k.to_string().contains(" % "), "{k}");
    assert_eq!(buffer_size(&k, "bx"), Some(3 * 128));
}

#[test]
fn golden_folded_blur() {
    let sizes = strata_dsl::sizes(&[("H", 66), ("W", 130)]);
    for (name, text) in [
        ("auto", "bx: store_root().compute_at(out, y)"),
        (
            "explicit",
            "bx: store_root().compute_at(out, y).fold_storage(y, 3)",
        ),
    ] {
        let k = bind_sizes(&lowered("blur3x3", text), &sizes).unwrap();
        insta::assert_snapshot!(format!("blur3x3_fold_{name}"), k.to_string());
    }
}

// ---- the answer is unchanged --------------------------------------------------------------

fn random_sizes(rng: &mut StdRng) -> Sizes {
    let sizes = [
        ("H", rng.random_range(1..=14)),
        ("W", rng.random_range(1..=13)),
    ];
    let sizes = sizes.map(|(n, v)| (n.to_string(), v as i64));
    sizes.into_iter().collect()
}

/// `text` on 12 random shapes (H and W at least `min`), interpreted, against the reference.
fn agrees(name: &str, text: &str, min: i64, rng: &mut StdRng) {
    let pipeline = kernel(name);
    let k = lowered(name, text);
    for _ in 0..12 {
        let mut sizes = random_sizes(rng);
        sizes.values_mut().for_each(|v| *v = (*v).max(min));
        let args = random_args(&pipeline, &sizes, rng).unwrap();
        let expected = evaluate(&pipeline, &args).unwrap();
        let got = interpret(&k, &args).unwrap_or_else(|e| panic!("{name} `{text}`: {e}"));
        agree(&got, &expected, 1e-4)
            .unwrap_or_else(|e| panic!("{name} `{text}` {sizes:?}: {e}\n{k}"));
    }
}

#[test]
fn folded_stencils_compute_the_reference() {
    let mut rng = StdRng::seed_from_u64(14_3);
    let cases: &[(&str, &str)] = &[
        ("blur3x3", "bx: store_root().compute_at(out, y)"),
        ("blur3x3", "bx: store_root().compute_at(out, y).fold_storage(y, 3)"),
        ("blur3x3", "bx: store_root().compute_at(out, y).fold_storage(y, 7)"),
        ("blur3x3", "out: split(y, yo, yi, 4, shift); bx: store_root().compute_at(out, yo).fold_storage(y, 6)"),
        ("gaussian5", "gx: store_root().compute_at(out, y).split(y, yo, yi, 2, round_up)"),
        ("blur3x3", "out: tile(y, x, yo, xo, yi, xi, 4, 8).vectorize(xi, 4); bx: store_root().compute_at(out, xo).fold_storage(x, 10).vectorize(x, 4)"),
        ("blur3x3", "out: split(y, yo, yi, 8).parallel(yo); bx: store_at(out, yo).compute_at(out, yi)"),
        ("gaussian5", "gx: store_root().compute_at(out, y).fold_storage(y, 5)"),
        ("gaussian5", "out: vectorize(x, 8); gx: store_root().compute_at(out, y).vectorize(x, 8)"),
        ("chain", "a: store_root().compute_at(b, y); b: store_root().compute_at(out, y); c: store_root().compute_at(out, y)"),
        ("chain", "a: store_root().compute_at(out, y).fold_storage(y, 8); b: store_root().compute_at(out, y).fold_storage(y, 6); c: store_root().compute_at(out, y).fold_storage(y, 4)"),
        ("chain", "out: split(y, yo, yi, 2); b: store_root().compute_at(out, yo).fold_storage(y, 7); c: store_root().compute_at(out, yo).fold_storage(y, 5)"),
    ];
    for (name, text) in cases {
        // blur3x3's output is two smaller than its input: H and W at least 3.
        let min = if *name == "blur3x3" { 3 } else { 1 };
        let k = lowered(name, text);
        assert!(
            k.to_string().contains(" % "),
            "`{text}` folds nothing:\n{k}"
        );
        agrees(name, text, min, &mut rng);
    }
    // Per column, one column: a fold of 1 leaves a column of H rows (`x % 1` is 0).
    let text = "out: reorder(x, y); bx: store_root().compute_at(out, x).fold_storage(x, 1)";
    assert_eq!(buffer_size(&lowered("blur3x3", text), "bx"), Some(66));
    agrees("blur3x3", text, 3, &mut rng);
}

#[test]
fn exact_folds_of_the_chain_are_its_footprints() {
    // Per row of out: c has rows y - 2 ..= y + 1 (4), b those plus its update's -1..=+1 (6),
    // a those plus -1..=+1 (8).
    let text = |fa: i64, fb: i64, fc: i64| {
        format!(
            "a: store_root().compute_at(out, y).fold_storage(y, {fa}); b: store_root().compute_at(out, y).fold_storage(y, {fb}); c: store_root().compute_at(out, y).fold_storage(y, {fc})"
        )
    };
    lowered("chain", &text(8, 6, 4));
    for (fa, fb, fc, func, needed) in [(7, 6, 4, "a", 8), (8, 5, 4, "b", 6), (8, 6, 3, "c", 4)] {
        let e = error("chain", &text(fa, fb, fc));
        assert!(
            e.starts_with(&format!("in the schedule of `{func}`"))
                && e.contains(&format!("up to {needed} values of `y`")),
            "{e}"
        );
    }
}

#[test]
fn random_schedules_with_folds_compute_the_reference() {
    let mut folded = 0;
    for name in ["blur3x3", "chain", "gaussian5"] {
        let pipeline = kernel(name);
        for seed in 0..150u64 {
            let mut rng = StdRng::seed_from_u64(seed);
            let s = random_schedule(&pipeline, &mut rng);
            validate(&lift_reductions(&pipeline), &s).unwrap();
            let text = s.to_string();
            let k = lower(&pipeline, &s).unwrap_or_else(|e| panic!("{name} {seed}: {e}\n{text}"));
            folded += usize::from(text.contains("fold_storage"));
            let min = if name == "blur3x3" { 3 } else { 1 };
            let mut sizes = random_sizes(&mut rng);
            sizes.values_mut().for_each(|v| *v = (*v).max(min));
            let args = random_args(&pipeline, &sizes, &mut rng).unwrap();
            let expected = evaluate(&pipeline, &args).unwrap();
            match interpret(&k, &args) {
                Ok(got) => agree(&got, &expected, 1e-4)
                    .unwrap_or_else(|e| panic!("{name} {seed} {sizes:?}: {e}\n{text}\n{k}")),
                // A round_up tail may read past an input without a boundary condition.
                Err(e) if text.contains("round_up") => drop(e),
                Err(e) => panic!("{name} {seed}: {e}\n{text}"),
            }
        }
    }
    // About one schedule in forty: folds need a function stored outside its loop (store_root
    // or store_at, one placement in five) and an extent at least its footprint.
    assert!(folded >= 8, "only {folded} of 450 random schedules fold");
}
