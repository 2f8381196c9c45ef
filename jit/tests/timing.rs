//! The one timing routine (`strata_jit::time_runs`): how many runs it times, what a warm-up
//! and a cutoff do, and that its figures are a sorted set of the runs it made.

use rand::SeedableRng;
use std::time::Duration;
use strata_dsl::random::random_args;
use strata_dsl::{parse_kernel, sizes};
use strata_jit::timing::{BATCHES, MIN_BATCH_RUNS};
use strata_jit::{compile_pipeline, time_runs, CodegenOptions, CompiledKernel, Timing, Timings};
use strata_scheduler::Schedule;

fn brighten() -> (CompiledKernel, strata_dsl::Args) {
    let pipeline = parse_kernel(
        "kernel brighten(a: f32[N]) -> b: f32[N] { b(i) = a(i) * 2.0 + 1.0; }",
        "brighten",
    )
    .unwrap();
    let sizes = sizes(&[("N", 1000)]);
    let kernel = compile_pipeline(
        &pipeline,
        &Schedule::default(),
        &sizes,
        &CodegenOptions::default(),
    )
    .unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let args = random_args(&pipeline, &sizes, &mut rng).unwrap();
    (kernel, args)
}

#[test]
fn it_times_the_minimum_runs_when_the_minimum_time_is_zero() {
    let (kernel, args) = brighten();
    let mut output = kernel.run(&args, 1).unwrap();
    let t = time_runs(
        &kernel,
        &args,
        &mut output,
        1,
        &Timing::for_at_least(Duration::ZERO),
    )
    .unwrap();
    assert_eq!(t.runs(), Timing::MIN_RUNS);
    assert!(!t.cut_at_warm_up);
    assert!(t.times().windows(2).all(|w| w[0] <= w[1]), "sorted");
    assert_eq!(
        (t.min(), t.median(), t.max()),
        (t.times()[0], t.times()[1], t.times()[2])
    );
}

#[test]
fn it_stops_at_the_most_runs_however_long_the_minimum_time() {
    let (kernel, args) = brighten();
    let mut output = kernel.run(&args, 1).unwrap();
    let timing = Timing {
        max_runs: 7,
        ..Timing::for_at_least(Duration::from_secs(3600))
    };
    assert_eq!(
        time_runs(&kernel, &args, &mut output, 1, &timing)
            .unwrap()
            .runs(),
        7
    );
}

#[test]
fn a_warm_up_run_past_the_cutoff_is_the_only_timing() {
    let (kernel, args) = brighten();
    let mut output = kernel.run(&args, 1).unwrap();
    let timing = Timing::for_at_least(Duration::ZERO).with_cutoff(Some(Duration::ZERO));
    let t = time_runs(&kernel, &args, &mut output, 1, &timing).unwrap();
    assert_eq!(t.runs(), 1);
    assert!(t.cut_at_warm_up);
    // Without its warm-up, the first timed run is the one cut short.
    let t = time_runs(&kernel, &args, &mut output, 1, &timing.without_warm_up()).unwrap();
    assert_eq!(t.runs(), 1);
    assert!(!t.cut_at_warm_up);
}

#[test]
fn a_cutoff_below_the_minimum_time_does_not_cut() {
    // A first run pays for cold caches: it is cut only past the minimum time too (half a
    // second: no run of this kernel takes that long, however busy the machine).
    let (kernel, args) = brighten();
    let mut output = kernel.run(&args, 1).unwrap();
    let timing = Timing::for_at_least(Duration::from_millis(500)).with_cutoff(Some(Duration::ZERO));
    let t = time_runs(&kernel, &args, &mut output, 1, &timing).unwrap();
    assert!(t.runs() > Timing::MIN_RUNS, "{} runs", t.runs());
}

fn ms(values: &[f64]) -> Vec<Duration> {
    values
        .iter()
        .map(|&v| Duration::from_secs_f64(v * 1e-3))
        .collect()
}

/// A spell at half speed over the middle of a measurement: the median of all runs is the
/// spell's, the steady median the kernel's own (its fastest batch's median).
#[test]
fn the_steady_median_is_the_fastest_batchs_median() {
    let in_order = ms(&[
        0.95, 0.90, 0.92, // batch 0: median 0.92
        1.80, 1.85, 1.90, // batches 1 to 3: the spell
        1.85, 1.80, 1.90, //
        1.90, 1.85, 1.80, //
        0.91, 9.00, 0.90, // batch 4: median 0.91 (one run interrupted)
    ]);
    let t = Timings::of(in_order, false);
    assert_eq!(t.batches(), BATCHES);
    assert_eq!(t.steady(), ms(&[0.91])[0]);
    assert_eq!(t.median(), ms(&[1.80])[0]);
    assert_eq!(t.min(), ms(&[0.90])[0]);
    assert_eq!(t.max(), ms(&[9.00])[0]);
}

/// Batches hold at least `MIN_BATCH_RUNS` runs, at most `BATCHES` of them; the first ones take
/// what does not divide evenly, and too few runs for two batches give the plain median.
#[test]
fn batches_are_consecutive_and_as_even_as_can_be() {
    let three = Timings::of(ms(&[3.0, 1.0, 2.0]), false);
    assert_eq!((three.batches(), three.steady()), (1, three.median()));
    let five = Timings::of(ms(&[5.0, 1.0, 1.0, 9.0, 9.0]), false);
    assert_eq!((five.batches(), five.steady()), (1, ms(&[5.0])[0]));
    // 7 runs, 2 batches of 4 and 3: [1, 8, 8, 8] has median 8, [2, 2, 9] median 2.
    let seven = Timings::of(ms(&[1.0, 8.0, 8.0, 8.0, 2.0, 2.0, 9.0]), false);
    assert_eq!((seven.batches(), seven.steady()), (2, ms(&[2.0])[0]));
    let many = Timings::of(ms(&[1.0; 1000]), false);
    assert_eq!(many.batches(), BATCHES);
    assert!(
        MIN_BATCH_RUNS >= 3,
        "a batch's median ignores one interrupted run"
    );
}

/// What the routine times gives a steady median among its runs.
#[test]
fn a_timed_kernel_reports_a_steady_median_among_its_runs() {
    let (kernel, args) = brighten();
    let mut output = kernel.run(&args, 1).unwrap();
    let timing = Timing::for_at_least(Duration::from_millis(20));
    let t = time_runs(&kernel, &args, &mut output, 1, &timing).unwrap();
    assert!(t.min() <= t.steady() && t.steady() <= t.max());
    assert_eq!(t.batches(), (t.runs() / MIN_BATCH_RUNS).clamp(1, BATCHES));
}
