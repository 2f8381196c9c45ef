//! The one timing routine (`strata_jit::time_runs`): how many runs it times, what a warm-up
//! and a cutoff do, and that its figures are a sorted set of the runs it made.

use rand::SeedableRng;
use std::time::Duration;
use strata_dsl::random::random_args;
use strata_dsl::{parse_kernel, sizes};
use strata_jit::{compile_pipeline, time_runs, CodegenOptions, CompiledKernel, Timing};
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
