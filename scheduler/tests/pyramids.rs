//! Pipelines the size of Halide's apps: a pyramid interpolation (Halide's `apps/interpolate`)
//! and a local Laplacian filter (`apps/local_laplacian`), generated at any depth. Every level
//! computed at root, they lower with each function's region stated once, in its consumers'
//! region names, so the printed loop nest grows by about the same amount per level (it grew
//! by a factor per level when regions were substituted into one another), and they give the
//! reference evaluator's answer.

use std::time::{Duration, Instant};
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, parse_kernel, Pipeline, Sizes};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::Schedule;
use strata_testkit::generate_apps::{all_at_root, interpolate, local_laplacian};

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

/// An open finding of the deep-pipeline generator (`generate_pyramid`; `random_schedule` met
/// it lowering a candidate for seed 29 of `random_deep_pipelines`, so that seed never
/// finishes): a 3-level pyramid under this random schedule (wrappers, a level's copy tiled four
/// times over with the level computed in the innermost tiles, storage folds) takes minutes to
/// lower in a test build and 16 s in a release build (10 s of it realization and bounds
/// inference: a stack sample shows access sites' bounds taken over the nested tile loops, the
/// expressions growing per loop). Without the folds, `store_root`s and unrolls it takes 5.6 s
/// in a test build, 2.9 s in release. Ignored until fixed; lowering runs on its own thread and
/// the test fails after 30 s rather than hanging.
#[test]
#[ignore]
fn a_pyramid_level_in_nested_tiles_lowers_promptly() {
    let source = r"kernel deep(input: f32[N, M] with constant(7.0)) -> out: f32[N, M] {
    l0(y, x) = input(y, x);
    l1_1(y, x) = (3.0 * l0(y, 2 * x + 1) + 3.0 * l0(y, 2 * x)) / 6.0;
    l1(y, x) = (2.0 * l1_1(2 * y + 2, x) + 3.0 * l1_1(2 * y - 1, x) + 2.0 * l1_1(2 * y + 1, x)) / 7.0;
    l2_1(y, x) = (2.0 * l1(y, 2 * x - 1) + 2.0 * l1(y, 2 * x + 1) + 2.0 * l1(y, 2 * x + 2)) / 6.0;
    l2(y, x) = (3.0 * l2_1(2 * y - 1, x) + 2.0 * l2_1(2 * y + 1, x) + 3.0 * l2_1(2 * y + 2, x)) / 8.0;
    l3_1(y, x) = (l2(y, 2 * x - 1) + 2.0 * l2(y, 2 * x) + l2(y, 2 * x + 2)) / 4.0;
    l3(y, x) = (3.0 * l3_1(2 * y + 2, x) + l3_1(2 * y - 1, x) + l3_1(2 * y, x)) / 5.0;
    up2_1(y, x) = l3(y, x / 2);
    up2(y, x) = up2_1(y / 2, x);
    o2(y, x) = (3.0 * up2(y, x) + l2(y, x)) / 4.0;
    up1_1(y, x) = (o2(y, x / 2 - 1 + 2 * (x % 2)) + 3.0 * o2(y, x / 2)) / 4.0;
    up1(y, x) = (up1_1(y / 2 - 1 + 2 * (y % 2), x) + 3.0 * up1_1(y / 2, x)) / 4.0;
    o1(y, x) = (3.0 * up1(y, x) + l1(y, x)) / 4.0;
    up0_1(y, x) = o1(y, x / 2);
    up0(y, x) = (up0_1(y / 2 - 1 + 2 * (y % 2), x) + 3.0 * up0_1(y / 2, x)) / 4.0;
    o0(y, x) = (2.0 * up0(y, x) + l0(y, x)) / 3.0;
    out(y, x) = o0(y, x);
}
";
    let schedule = r"l1_1: wrap(l0, l0_w_1).compute_root().store_root().fuse(y, x, f_54).parallel(f_54)
up2: wrap(up2_1, up2_1_w_2).compute_inline()
up0: wrap(up0_1, up0_1_w_3).compute_at(o0, xo_5).unroll(y, 4).split(y, yo_8, yi_9, 2, shift).vectorize(yi_9, 4)
out: fuse(y, x, f_4).unroll(f_4, 2).reorder(f_4, f_4.u)
o0: compute_at(out, f_4).reorder_storage(y, x).split(x, xo_5, xi_6, 8, round_up).unroll(y, 4)
up0_1_w_3: compute_root().split(y, yo_10, yi_11, 3).vectorize(yo_10, 4).unroll(yo_10, 4)
up0_1: compute_inline()
o1: compute_root().parallel(x).vectorize(y, 3)
up1: compute_root().split(y, yo_14, yi_15, 3, shift)
up1_1: compute_at(up1, x).store_root().unroll(x, 4).split(x, xo_16, xi_17, 3).fuse(xo_16, xi_17, f_18).fold_storage(x, 4)
o2: compute_root().reorder_storage(x, y).unroll(y, 4).split(x, xo_19, xi_20, 8)
up2_1_w_2: compute_at(o2, y).tile(y, x, yo_21, xo_22, yi_23, xi_24, 3, 6).tile(yi_23, xi_24, yo_25, xo_26, yi_27, xi_28, 2, 7).tile(xo_22, yo_25, yo_29, xo_30, yi_31, xi_32, 4, 7).tile(yo_21, yo_29, yo_33, xo_34, yi_35, xi_36, 3, 4)
up2_1: compute_at(up2_1_w_2, yi_31).store_root().split(y, yo_37, yi_38, 2, guard).split(yi_38, yi_38o_39, yi_38i_40, 8).vectorize(x, 2).parallel(yi_38i_40)
l3: compute_at(up2_1, x).reorder_storage(x, y).fuse(y, x, f_41)
l3_1: compute_root().store_root().reorder_storage(x, y).tile(y, x, yo_42, xo_43, yi_44, xi_45, 1, 7).split(yi_44, yi_44o_46, yi_44i_47, 4, shift)
l2: compute_root().reorder_storage(x, y).vectorize(y, 3)
l2_1: compute_root().store_root().reorder_storage(x, y).fuse(y, x, f_49).split(f_49, f_49o_50, f_49i_51, 4).fuse(f_49o_50, f_49i_51, f_52)
l1: compute_root().reorder(y, x).vectorize(x, 4)
l0_w_1: compute_at(l1_1, f_54).tile(y, x, yo_55, xo_56, yi_57, xi_58, 3, 1).split(yo_55, yo_55o_59, yo_55i_60, 2, shift)
l0: compute_root().reorder_storage(y, x).fuse(y, x, f_61)
";
    let p = parse(source);
    let s = strata_scheduler::schedule::text::parse_schedule(schedule).unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(lower(&p, &s).map(|_| ()).map_err(|e| e.to_string()));
    });
    match finished.recv_timeout(Duration::from_secs(30)) {
        Ok(result) => result.unwrap_or_else(|e| panic!("{e}")),
        Err(_) => panic!("lowering did not finish in 30 s"),
    }
}
