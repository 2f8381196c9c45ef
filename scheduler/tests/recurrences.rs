//! Recurrences: updates that read their own function at other points (scans, IIR filters).
//! Which of their loops a schedule may reorder, run in parallel or vectorize, that every schedule
//! allowed computes the reference evaluator's answer (through the loop-IR interpreter), and that
//! an empty reduction domain widens no region.

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::{agree, random_args};
use strata_dsl::Sizes;
use strata_dsl::{evaluate, parse_kernel, CallError, Pipeline};
use strata_scheduler::interp::{interpret, InterpError};
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::schedule::Schedule;
use strata_testkit::generate::random_schedule;

/// A first-order IIR filter down the columns (Halide's IIR blur): row `r` of `out` reads row
/// `r - 1` at the same column, so the column loop `x` is free and the row loop `r` is not.
const IIR: &str = "kernel iir(input: f32[H, W], a: f32) -> out: f32[H, W] {
    out(y, x) = input(y, x);
    for (r in 1..H) out(r, x) = a * input(r, x) + (1.0 - a) * out(r - 1, x);
}";

/// Every column reads column 0 of the previous row, which iteration `x = 0` updates: `x`
/// carries a dependence. (The checker allows a read of the updated function to hold a pure
/// variable only bare in its own position, but a position may hold an expression of none.)
const FIRST_COLUMN: &str = "kernel first_column(input: i32[H, W]) -> out: i32[H, W] {
    out(y, x) = input(y, x);
    for (r in 1..H) out(r, x) = out(r - 1, 0) + input(r, x);
}";

/// An inclusive scan of a function computed before the output.
const SCAN: &str = "kernel scan(A: i32[N]) -> out: i32[N] {
    p(i) = A(i);
    for (r in 1..N) p(r) = p(r - 1) + p(r);
    out(i) = p(i);
}";

/// A scan whose update also reads the input at `r - 1`.
const SCAN_OF_INPUT: &str = "kernel scan_of_input(A: i32[N]) -> out: i32[N] {
    p(i) = A(i);
    for (r in 1..N) p(r) = p(r - 1) + A(r - 1);
    out(i) = p(i);
}";

/// The update reads the whole previous row through a lifted `out_sum0(r)`, computed inside the
/// update's loops: no loop of the update is free, although `out(r, x)` reads nothing else of
/// `out` directly.
const ROW_SUMS: &str = "kernel row_sums(input: f32[H, W]) -> out: f32[H, W] {
    out(y, x) = input(y, x);
    for (r in 1..H) out(r, x) = input(r, x) + sum(k in 0..W) out(r - 1, k);
}";

fn kernel(source: &str) -> Pipeline {
    parse_kernel(source, "recurrences.rs").unwrap_or_else(|e| panic!("{e}"))
}

fn schedule(text: &str) -> Schedule {
    parse_schedule(text).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `schedule` on random inputs of each shape through the interpreter and compares with
/// the reference evaluator (floats within 1e-4 relative). A `round_up` tail computes past the
/// region and may read past an input: refusing such an input is then the other right answer.
fn matches_reference(
    pipeline: &Pipeline,
    schedule: &Schedule,
    shapes: &[&[(&str, usize)]],
) -> Result<(), String> {
    let kernel = lower(pipeline, schedule).map_err(|e| format!("lowering failed: {e}"))?;
    for (seed, shape) in shapes.iter().enumerate() {
        let sizes: Sizes = shape
            .iter()
            .map(|(n, v)| (n.to_string(), *v as i64))
            .collect();
        let args = random_args(pipeline, &sizes, &mut StdRng::seed_from_u64(seed as u64))?;
        let expected = evaluate(pipeline, &args).map_err(|e| format!("reference: {e}"))?;
        let got = match interpret(&kernel, &args) {
            Err(InterpError::Call(
                CallError::InputTooSmall { .. } | CallError::ReadsEmptyInput { .. },
            )) if schedule.to_string().contains("round_up") => continue,
            result => result.map_err(|e| format!("sizes {shape:?}: interpreter: {e}\n{kernel}"))?,
        };
        agree(&got, &expected, 1e-4).map_err(|e| format!("sizes {shape:?}: {e}\n{kernel}"))?;
    }
    Ok(())
}

fn assert_matches_reference(source: &str, text: &str, shapes: &[&[(&str, usize)]]) {
    let pipeline = kernel(source);
    if let Err(e) = matches_reference(&pipeline, &schedule(text), shapes) {
        panic!("`{text}` on {}: {e}", pipeline.name);
    }
}

// ---------------------------------------------------------------------------------------------
// Empty reduction domains
// ---------------------------------------------------------------------------------------------

/// At `N = 1` the scan's domain `1..1` is empty; split, its guard `r <= N - 1` used to make `r`
/// range down to 0, so `p` was computed over `[-1, 0]` and the call refused as reading `A` at -1.
#[test]
fn an_empty_split_scan_domain_widens_no_region() {
    let shapes: &[&[(&str, usize)]] = &[&[("N", 1)], &[("N", 2)], &[("N", 3)], &[("N", 8)]];
    for source in [SCAN, SCAN_OF_INPUT] {
        for text in [
            "p: compute_root()\np.update(0): split(r, ro, ri, 2)",
            "p: compute_root()\np.update(0): split(r, ro, ri, 3).unroll(ri)",
        ] {
            assert_matches_reference(source, text, shapes);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Which loops of a recurrence are free
// ---------------------------------------------------------------------------------------------

const IIR_SHAPES: &[&[(&str, usize)]] = &[
    &[("H", 1), ("W", 1)],
    &[("H", 2), ("W", 8)],
    &[("H", 5), ("W", 13)],
    &[("H", 9), ("W", 21)],
];

/// The IIR's column loop is independent: each column is its own recurrence (Halide's IIR blur
/// schedules exactly these).
const IIR_SCHEDULES: &[&str] = &[
    "out.update(0): parallel(x)",
    "out.update(0): vectorize(x, 8)",
    "out.update(0): split(x, xo, xi, 8).reorder(xo, r, xi).vectorize(xi)",
    "out.update(0): split(x, xo, xi, 8).reorder(xo, r, xi).vectorize(xi).parallel(xo)",
    "out.update(0): reorder(r, x).vectorize(x, 4)",
    "out.update(0): split(x, xo, xi, 4).reorder(xi, r, xo).unroll(xi).parallel(xo)",
];

#[test]
fn the_pure_loop_of_an_iir_filter_is_free() {
    for text in IIR_SCHEDULES {
        assert_matches_reference(IIR, text, IIR_SHAPES);
    }
}

/// The output's update writes `out(r, x)` under a guard that `r` is inside the output; guarding
/// the bare `x` as well (`0 <= x`) kept the vectorizer from versioning `x`, so the loop ran
/// serially.
#[test]
fn the_iir_column_loop_runs_as_vectors() {
    for text in [
        "out.update(0): vectorize(x, 8)",
        "out.update(0): split(x, xo, xi, 8).reorder(xo, r, xi).vectorize(xi)",
    ] {
        let lowered = lower(&kernel(IIR), &schedule(text)).unwrap_or_else(|e| panic!("{e}"));
        let printed = lowered.to_string();
        assert!(
            printed.contains("out[ramp((out.s1.r - 1) * W + out.s1.x"),
            "`{text}` reads the previous row as scalars:\n{printed}"
        );
    }
}

/// The validation error `text` gives on `source`'s kernel.
fn error(source: &str, text: &str) -> String {
    match lower(&kernel(source), &schedule(text)) {
        Ok(_) => panic!("`{text}` should be refused"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_reduction_loop_of_an_iir_filter_stays_serial() {
    assert_eq!(
        error(IIR, "out.update(0): parallel(r)"),
        "in the schedule of `out.update(0)`: `parallel(r)`: loop `r` carries a reduction dependency and cannot be parallel; only pure loops whose elements are computed independently can"
    );
    assert!(error(IIR, "out.update(0): vectorize(r, 4)")
        .starts_with("in the schedule of `out.update(0)`: `vectorize(r, 4)`: loop `r.v` carries a reduction dependency and cannot be vectorized"));
    assert!(
        error(IIR, "out.update(0): split(r, ro, ri, 2).reorder(ri, ro)")
            .contains("this order changes the meaning of the update")
    );
}

/// `out(r, x)` reads `out(r - 1, 0)`: running `x` in parallel, as vectors or inside `r` could
/// read column 0 before iteration `x = 0` has updated it.
#[test]
fn a_pure_loop_read_at_another_coordinate_stays_serial() {
    for (text, why) in [
        (
            "out.update(0): vectorize(x, 8)",
            "loop `x.v` carries a reduction dependency and cannot be vectorized",
        ),
        (
            "out.update(0): parallel(x)",
            "loop `x` carries a reduction dependency and cannot be parallel",
        ),
        (
            "out.update(0): reorder(r, x)",
            "this order changes the meaning of the update",
        ),
        (
            "out.update(0): split(x, xo, xi, 4).reorder(xo, r, xi)",
            "this order changes the meaning of the update",
        ),
    ] {
        let message = error(FIRST_COLUMN, text);
        assert!(message.contains(why), "`{text}`: {message}");
    }
    // Splitting keeps the order, so it stays legal.
    assert_matches_reference(
        FIRST_COLUMN,
        "out.update(0): split(x, xo, xi, 4).unroll(xi)",
        &[&[("H", 4), ("W", 7)], &[("H", 1), ("W", 3)]],
    );
}

/// `out_sum0(r)` (computed inside the update's loops) reads all of row `r - 1`, so the column
/// loop is not free even though `out(r, x)` reads no other element of `out` itself.
#[test]
fn a_read_through_a_lifted_reduction_keeps_the_pure_loop_serial() {
    for text in [
        "out.update(0): parallel(x)",
        "out.update(0): vectorize(x, 4)",
    ] {
        let message = error(ROW_SUMS, text);
        assert!(
            message.contains("carries a reduction dependency"),
            "`{text}`: {message}"
        );
    }
}

/// A reduction reading the very function its update writes cannot be placed: a clear error,
/// not an internal one, whatever the (legal) schedule.
#[test]
fn a_lifted_reduction_reading_the_updated_function_is_a_clear_error() {
    for text in ["", "out.update(0): split(x, xo, xi, 4)"] {
        let e = lower(&kernel(ROW_SUMS), &schedule(text))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "the reduction `out_sum0` inside an update of `out` reads `out` itself, which strata cannot schedule; compute the reduction as an update of its own function first",
            "`{text}`"
        );
    }
}

/// Random legal schedules of each recurrence (whatever the generator finds legal) compute the
/// reference's answer: the new freedom is exercised in combinations no list above names.
#[test]
fn random_schedules_of_recurrences_match_the_reference() {
    let cases: [(&str, &[&[(&str, usize)]]); 4] = [
        (IIR, IIR_SHAPES),
        (
            FIRST_COLUMN,
            &[&[("H", 4), ("W", 9)], &[("H", 1), ("W", 2)]],
        ),
        (SCAN, &[&[("N", 1)], &[("N", 7)]]),
        (SCAN_OF_INPUT, &[&[("N", 1)], &[("N", 6)]]),
    ];
    for (source, shapes) in cases {
        let pipeline = kernel(source);
        for seed in 0..150 {
            let schedule = random_schedule(&pipeline, &mut StdRng::seed_from_u64(seed));
            if let Err(e) = matches_reference(&pipeline, &schedule, shapes) {
                panic!("{} seed {seed}:\n{schedule}\n{e}", pipeline.name);
            }
        }
    }
}
