//! Recurrences: updates that read their own function at other points (scans, IIR filters).
//! Which of their loops a schedule may reorder, run in parallel or vectorize, that every schedule
//! allowed computes the reference evaluator's answer (through the loop-IR interpreter), and that
//! an empty reduction domain widens no region.

use rand::rngs::StdRng;
use rand::SeedableRng;
use std::collections::BTreeMap;
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, parse_kernel, Pipeline};
use strata_scheduler::generate::random_schedule;
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::schedule::Schedule;

/// A first-order IIR filter down the columns (Halide's IIR blur): row `r` of `out` reads row
/// `r - 1` at the same column, so the column loop `x` is free and the row loop `r` is not.
const IIR: &str = "kernel iir(input: f32[H, W], a: f32) -> out: f32[H, W] {
    out(y, x) = input(y, x);
    for (r in 1..H) out(r, x) = a * input(r, x) + (1.0 - a) * out(r - 1, x);
}";

/// Like the IIR, but each element reads its upper right neighbour: `x` carries the dependence.
const SHIFTED: &str = "kernel shifted(input: i32[H, W]) -> out: i32[H, W] {
    out(y, x) = input(y, x);
    for (r in 1..H) out(r, x) = out(r - 1, min(x + 1, W - 1)) + input(r, x);
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
/// the reference evaluator (floats within 1e-4 relative).
fn matches_reference(
    pipeline: &Pipeline,
    schedule: &Schedule,
    shapes: &[&[(&str, usize)]],
) -> Result<(), String> {
    let kernel = lower(pipeline, schedule).map_err(|e| format!("lowering failed: {e}"))?;
    for (seed, shape) in shapes.iter().enumerate() {
        let sizes: BTreeMap<String, usize> =
            shape.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        let args = random_args(pipeline, &sizes, &mut StdRng::seed_from_u64(seed as u64))?;
        let expected = evaluate(pipeline, &args).map_err(|e| format!("reference: {e}"))?;
        let got = interpret(&kernel, &args)
            .map_err(|e| format!("sizes {shape:?}: interpreter: {e}\n{kernel}"))?;
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
