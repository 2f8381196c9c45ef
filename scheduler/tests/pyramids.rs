//! Pipelines the size of Halide's apps: a pyramid interpolation (Halide's `apps/interpolate`)
//! and a local Laplacian filter (`apps/local_laplacian`), generated at any depth. Every level
//! computed at root, they lower with each function's region stated once, in its consumers'
//! region names, so the printed loop nest grows by about the same amount per level (it grew
//! by a factor per level when regions were substituted into one another), and they give the
//! reference evaluator's answer.

use std::time::{Duration, Instant};
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, parse_kernel, Pipeline, Sizes};
use strata_scheduler::generate_apps::{all_at_root, interpolate, local_laplacian};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::Schedule;

fn parse(source: &str) -> Pipeline {
    parse_kernel(source, "pyramid").unwrap_or_else(|e| panic!("{e}\n{source}"))
}

/// The printed loop nest, and how long lowering took (at most a minute: a hang guard, not a
/// speed test).
fn lowered_text(p: &Pipeline, s: &Schedule) -> String {
    let start = Instant::now();
    let kernel = lower(p, s).unwrap_or_else(|e| panic!("{e}"));
    let took = start.elapsed();
    assert!(took < Duration::from_secs(60), "lowering took {took:?}");
    let text = kernel.body.to_string();
    eprintln!("lowered {} functions in {took:.2?}", p.funcs.len());
    text
}

/// The printed size at each depth grows by about the same amount per level: the last step
/// adds at most 1.5 times what the one before it added.
fn assert_additive(name: &str, depths: &[usize], sizes: &[usize]) {
    let steps: Vec<usize> = sizes.windows(2).map(|w| w[1] - w[0]).collect();
    eprintln!("{name}: printed sizes {sizes:?} at depths {depths:?}");
    for w in steps.windows(2) {
        assert!(
            w[1] * 2 <= w[0] * 3,
            "{name}: a level added {} characters after one added {} (sizes {sizes:?} at depths {depths:?})",
            w[1],
            w[0]
        );
    }
}

/// The printed size of `kernel(depth)`'s loop nest, every level at root, at each depth.
fn printed_sizes(kernel: fn(usize) -> String, depths: &[usize]) -> Vec<usize> {
    depths
        .iter()
        .map(|&d| {
            let p = parse(&kernel(d));
            lowered_text(&p, &all_at_root(&p).unwrap()).len()
        })
        .collect()
}

#[test]
fn interpolate_grows_by_a_level_at_a_time() {
    let depths = [6, 7, 8, 9];
    assert_additive("interpolate", &depths, &printed_sizes(interpolate, &depths));
}

#[test]
fn local_laplacian_grows_by_a_level_at_a_time() {
    let depths = [4, 5, 6];
    let sizes = printed_sizes(local_laplacian, &depths);
    assert_additive("local Laplacian", &depths, &sizes);
}

/// The loop-IR interpreter's answer under `schedule` is the reference evaluator's.
fn assert_reference_answer(p: &Pipeline, schedule: &Schedule, sizes: &[(&str, i64)]) {
    let sizes: Sizes = sizes.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(5);
    let args = random_args(p, &sizes, &mut rng).unwrap();
    let expected = evaluate(p, &args).unwrap();
    let kernel = lower(p, schedule).unwrap();
    let got = interpret(&kernel, &args).unwrap();
    if let Err(e) = agree(&got, &expected, 1e-4) {
        panic!("{}: {e}\nschedule:\n{schedule}", p.name);
    }
}

/// Every level at root, and the default schedule (which computes at root the levels that
/// inlining would multiply, `schedule::inline_bound`), at small sizes.
#[test]
fn pyramids_give_the_reference_answer() {
    for p in [parse(&interpolate(4)), parse(&local_laplacian(3))] {
        for schedule in [all_at_root(&p).unwrap(), Schedule::new()] {
            // Odd sizes, not multiples of any level's factor.
            for (h, w) in [(9, 7), (4, 5)] {
                assert_reference_answer(&p, &schedule, &[("H", h), ("W", w)]);
            }
        }
    }
}

/// The default schedule of an app-sized pyramid lowers (inlining every level was refused as
/// too large: each level read the one below at several points).
#[test]
fn deep_pyramids_lower_under_the_default_schedule() {
    for p in [parse(&interpolate(10)), parse(&local_laplacian(8))] {
        lowered_text(&p, &Schedule::new());
    }
}

/// Every downsampled and interpolated level of `interpolate(levels)` at root and vectorized,
/// the rest inlined: the shape of Halide's own schedule for the app.
fn vectorized_levels(p: &Pipeline) -> Schedule {
    let lines: Vec<String> = p
        .funcs
        .iter()
        .filter(|f| f.name != p.output.name)
        .map(|f| {
            let root = f.name.starts_with('d') && f.name != "d0"
                || f.name.starts_with("interp") && f.name != "interp0";
            match root && !f.name.starts_with("dx") {
                true => format!("{}: compute_root().vectorize(x, 4)", f.name),
                false => format!("{}: compute_inline()", f.name),
            }
        })
        .collect();
    strata_scheduler::schedule::text::parse_schedule(&lines.join("\n")).unwrap()
}

/// The printed size of the boxes a call of the kernel checks its inputs against.
fn input_check_size(p: &Pipeline, s: &Schedule) -> usize {
    let start = Instant::now();
    let kernel = lower(p, s).unwrap_or_else(|e| panic!("{e}"));
    let took = start.elapsed();
    assert!(took < Duration::from_secs(60), "lowering took {took:?}");
    let ranges = kernel.input_regions.iter().flat_map(|(_, r)| r);
    ranges
        .map(|r| r.min.to_string().len() + r.extent.to_string().len())
        .sum()
}

/// Issue 20: with the levels of a pyramid vectorized, the box of the input the call checks
/// was each level's region substituted into the next, a factor larger per level (a 4-level
/// interpolation took minutes to lower, a 10-level one ran out of 24 GB); the region lets of
/// functions computed at root now stay lets in it, so it grows by a level at a time.
#[test]
fn the_call_checks_of_a_vectorized_pyramid_grow_by_a_level_at_a_time() {
    let depths = [4, 5, 6, 7];
    let sizes: Vec<usize> = depths
        .iter()
        .map(|&d| {
            let p = parse(&interpolate(d));
            input_check_size(&p, &vectorized_levels(&p))
        })
        .collect();
    assert_additive("interpolate's input checks", &depths, &sizes);
    let p = parse(&interpolate(4));
    assert_reference_answer(&p, &vectorized_levels(&p), &[("H", 9), ("W", 7)]);
}
