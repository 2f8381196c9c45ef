//! Per-function profiling (`CodegenOptions::profile`, `CompiledKernel::run_profiled_into`):
//! every computed function appears with its calls, self times add up to no more than the
//! call and most of it, the answer is unchanged with the markers (both backends), and a
//! kernel compiled without profiling calls no profiling function.

use rand::rngs::StdRng;
use rand::SeedableRng;
use std::time::{Duration, Instant};
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, Buffer, Pipeline, Sizes};
use strata_jit::profile::FunctionTime;
use strata_jit::{compile_pipeline, Backend, CodegenOptions, CompiledKernel};
use strata_scheduler::interp::interpret;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::Schedule;
use strata_testkit::example;
use strata_testkit::generate::random_schedule;

fn sizes(pairs: &[(&str, i64)]) -> Sizes {
    pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect()
}

fn compile(p: &Pipeline, s: &Schedule, backend: Backend, profile: bool) -> CompiledKernel {
    let options = CodegenOptions {
        backend,
        profile,
        verify: true,
        keep_text: true,
        ..Default::default()
    };
    compile_pipeline(p, s, &Sizes::new(), &options).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// What `runs` profiled runs of a kernel gave.
struct Profiled {
    /// Per function, summed over the runs.
    totals: Vec<FunctionTime>,
    /// The runs' wall times, summed.
    wall: Duration,
    /// The largest share of one run's wall time that its self times cover.
    best_share: f64,
}

/// Runs a profiled kernel `runs` times.
fn profile(k: &CompiledKernel, args: &strata_dsl::Args, runs: usize) -> Profiled {
    let mut out = k.run(args, 1).unwrap();
    let mut totals: Vec<FunctionTime> = Vec::new();
    let mut wall = Duration::ZERO;
    let mut best_share = 0.0f64;
    for _ in 0..runs {
        let t = Instant::now();
        let times = k.run_profiled_into(args, &mut out, 1).unwrap().unwrap();
        let run_wall = t.elapsed();
        wall += run_wall;
        let inside: u64 = times.iter().map(|t| t.self_nanos).sum();
        best_share = best_share.max(inside as f64 / run_wall.as_nanos().max(1) as f64);
        if totals.is_empty() {
            totals = times;
        } else {
            for (total, t) in totals.iter_mut().zip(times) {
                assert_eq!(total.name, t.name);
                total.self_nanos += t.self_nanos;
                total.calls += t.calls;
            }
        }
    }
    Profiled {
        totals,
        wall,
        best_share,
    }
}

/// blur3x3 with `bx` at root and inside `out`'s row loop: both functions appear, `bx` once
/// per run at root and once per output row inside; the self times sum to most of the call
/// and never more.
#[test]
fn blur_root_and_inside_show_both_functions() {
    let blur = example("blur3x3");
    // Large enough that what a call does outside its `produce` blocks (binding, allocating
    // and freeing the root `bx`, 2 MB here) is a small part of it: at 258x258 the LLVM
    // kernel ran in ~45 us, of which those took 8-20 us, and the best of 20 runs fell
    // below 0.6 one time in three on an idle machine (here: 0.91-0.99 idle and loaded).
    let (h, w) = (1026, 1026);
    let mut rng = StdRng::seed_from_u64(1);
    let args = random_args(&blur, &sizes(&[("H", h), ("W", w)]), &mut rng).unwrap();
    let runs = 20;
    for backend in Backend::built() {
        for (schedule, bx_calls) in [("bx: compute_root()", 1), ("bx: compute_at(out, y)", h - 2)] {
            let s = parse_schedule(schedule).unwrap();
            let k = compile(&blur, &s, backend, true);
            let Profiled {
                totals: times,
                wall,
                best_share,
            } = profile(&k, &args, runs);
            let mut names: Vec<&str> = times.iter().map(|t| t.name.as_str()).collect();
            names.sort();
            assert_eq!(names, ["bx", "out"], "{backend} {schedule}");
            let calls = |name: &str| times.iter().find(|t| t.name == name).unwrap().calls;
            assert_eq!(calls("out"), runs as u64, "{backend} {schedule}");
            assert_eq!(
                calls("bx"),
                bx_calls as u64 * runs as u64,
                "{backend} {schedule}"
            );
            assert!(times.iter().all(|t| t.self_nanos > 0), "{times:?}");
            let inside: u64 = times.iter().map(|t| t.self_nanos).sum();
            let wall = wall.as_nanos() as u64;
            // One thread: self times partition the time inside `produce` blocks, which is
            // inside the call; binding the arguments is all the call does besides.
            assert!(inside <= wall, "{backend} {schedule}: {inside} > {wall}");
            // Most of a run is inside its `produce` blocks. Checked on the best run: on a
            // loaded machine a run descheduled outside them (binding the arguments) has a
            // smaller share, and the sum over all runs fell to 5% now and then.
            assert!(
                best_share >= 0.6,
                "{backend} {schedule}: at best {best_share:.2} of a run ({inside} of {wall} in all)"
            );
        }
    }
}

/// The answer with the markers is the answer without them, bit for bit, and the reference's
/// and the loop-IR interpreter's (which run the same `produce` blocks), for random schedules
/// of several kernels with every backend; every produced function is reported.
#[test]
fn profiling_never_changes_the_answer() {
    let kernels: [(&str, &[(&str, i64)]); 5] = [
        ("blur3x3", &[("H", 13), ("W", 21)]),
        ("matmul", &[("M", 7), ("N", 19), ("K", 5)]),
        ("softmax", &[("R", 4), ("C", 17)]),
        ("histogram", &[("H", 6), ("W", 19)]),
        ("gaussian5", &[("H", 9), ("W", 18)]),
    ];
    for (name, shape) in kernels {
        let p = example(name);
        for seed in 0..6 {
            let mut rng = StdRng::seed_from_u64(seed);
            let schedule = random_schedule(&p, &mut rng);
            let args = random_args(&p, &sizes(shape), &mut rng).unwrap();
            let expected = evaluate(&p, &args).unwrap();
            for backend in Backend::built() {
                let plain = compile(&p, &schedule, backend, false);
                let profiled = compile(&p, &schedule, backend, true);
                let want: Buffer = plain.run(&args, 2).unwrap();
                let mut got = want.clone();
                let times = profiled
                    .run_profiled_into(&args, &mut got, 2)
                    .unwrap()
                    .unwrap();
                let case = format!("{name} {backend} {schedule}");
                agree(&got, &want, 0.0).unwrap_or_else(|e| panic!("{case}: {e}"));
                agree(&got, &expected, 1e-4).unwrap_or_else(|e| panic!("{case}: {e}"));
                let interpreted = interpret(profiled.lowered(), &args).unwrap();
                agree(&interpreted, &expected, 1e-4).unwrap_or_else(|e| panic!("{case}: {e}"));
                let listed = strata_jit::profile::produced_functions(&profiled.lowered().body);
                let names: Vec<String> = times.iter().map(|t| t.name.clone()).collect();
                assert_eq!(names, listed, "{case}");
                assert!(names.contains(&p.output.name), "{case}");
                // Not compiled with profiling: runs, and says there is no profile.
                let mut again = want.clone();
                assert_eq!(plain.run_profiled_into(&args, &mut again, 1).unwrap(), None);
            }
        }
    }
}

/// Without `profile` the code calls no profiling function; with it, it does (Cranelift:
/// one imported function more; LLVM: the declarations by name).
#[test]
fn default_compiles_carry_no_markers() {
    let blur = example("blur3x3");
    let s = parse_schedule("bx: compute_at(out, y)").unwrap();
    for backend in Backend::built() {
        let text = |profile: bool| compile(&blur, &s, backend, profile).ir().join("\n");
        let (plain, profiled) = (text(false), text(true));
        assert_ne!(plain, profiled, "{backend}");
        let imports = |t: &str| t.lines().filter(|l| l.contains(" = u0:")).count();
        match backend {
            Backend::Cranelift => assert_eq!(
                imports(&profiled),
                imports(&plain) + 2,
                "{plain}\n{profiled}"
            ),
            Backend::Llvm => {
                assert!(!plain.contains("strata_profile"), "{plain}");
                assert!(profiled.contains("@strata_profile_enter"), "{profiled}");
                assert!(profiled.contains("@strata_profile_exit"), "{profiled}");
            }
        }
    }
}

/// Markers on a kernel run without profiling (by `run`, not `run_profiled_into`) do nothing.
#[test]
fn a_profiled_kernel_runs_plainly_too() {
    let blur = example("blur3x3");
    let s = parse_schedule("bx: compute_at(out, y)").unwrap();
    let mut rng = StdRng::seed_from_u64(2);
    let args = random_args(&blur, &sizes(&[("H", 30), ("W", 40)]), &mut rng).unwrap();
    let k = compile(&blur, &s, Backend::Cranelift, true);
    let out = k.run(&args, 1).unwrap();
    agree(&out, &evaluate(&blur, &args).unwrap(), 0.0).unwrap();
}

/// Profiled runs of one kernel on two threads at once, and plain runs of it on a third,
/// each count exactly their own `produce` blocks: the counters belong to the call, not the
/// process (they were process-wide: the plain runs' blocks, and the other profiled runs',
/// were counted into whichever profiled run was in progress).
#[test]
fn overlapping_runs_count_only_their_own_blocks() {
    let blur = example("blur3x3");
    let (h, w) = (34, 40);
    let mut rng = StdRng::seed_from_u64(3);
    let args = random_args(&blur, &sizes(&[("H", h), ("W", w)]), &mut rng).unwrap();
    let s = parse_schedule("bx: compute_at(out, y)").unwrap();
    for backend in Backend::built() {
        let k = compile(&blur, &s, backend, true);
        let barrier = std::sync::Barrier::new(3);
        let profiled_runs = || {
            barrier.wait();
            let mut out = k.run(&args, 1).unwrap();
            for _ in 0..40 {
                let times = k.run_profiled_into(&args, &mut out, 1).unwrap().unwrap();
                let calls: Vec<(&str, u64)> =
                    times.iter().map(|t| (t.name.as_str(), t.calls)).collect();
                assert_eq!(calls, [("out", 1), ("bx", h as u64 - 2)], "{backend}");
            }
        };
        let profiled_done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            let plain = scope.spawn(|| {
                barrier.wait();
                while !profiled_done.load(std::sync::atomic::Ordering::Relaxed) {
                    k.run(&args, 1).unwrap();
                }
            });
            let a = scope.spawn(profiled_runs);
            let b = scope.spawn(profiled_runs);
            let (a, b) = (a.join(), b.join());
            profiled_done.store(true, std::sync::atomic::Ordering::Relaxed);
            plain.join().unwrap();
            a.unwrap();
            b.unwrap();
        });
    }
}
