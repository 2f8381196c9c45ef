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
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::Schedule;

/// Premultiply, `levels - 1` downsamplings, as many upsample-and-blend steps, normalize; four
/// channels, read through `clamp_edge`.
fn interpolate(levels: usize) -> String {
    let mut s = String::from(
        "kernel interpolate(input: f32[H, W, 4] with clamp_edge) -> out: f32[H, W, 3] {\n",
    );
    s += "    d0(y, x, c) = select(c < 3, input(y, x, c) * input(y, x, 3), input(y, x, 3));\n";
    for l in 1..levels {
        let p = format!("d{}", l - 1);
        s += &format!("    dx{l}(y, x, c) = ({p}(y, 2 * x - 1, c) + 2.0 * {p}(y, 2 * x, c) + {p}(y, 2 * x + 1, c)) * 0.25;\n");
        s += &format!("    d{l}(y, x, c) = (dx{l}(2 * y - 1, x, c) + 2.0 * dx{l}(2 * y, x, c) + dx{l}(2 * y + 1, x, c)) * 0.25;\n");
    }
    let mut prev = format!("d{}", levels - 1);
    for l in (0..levels - 1).rev() {
        s += &format!(
            "    ux{l}(y, x, c) = ({prev}(y, x / 2, c) + {prev}(y, (x + 1) / 2, c)) * 0.5;\n"
        );
        s += &format!(
            "    up{l}(y, x, c) = (ux{l}(y / 2, x, c) + ux{l}((y + 1) / 2, x, c)) * 0.5;\n"
        );
        s += &format!(
            "    interp{l}(y, x, c) = d{l}(y, x, c) + (1.0 - d{l}(y, x, 3)) * up{l}(y, x, c);\n"
        );
        prev = format!("interp{l}");
    }
    s += &format!("    out(y, x, c) = {prev}(y, x, c) / {prev}(y, x, 3);\n}}\n");
    s
}

/// The local Laplacian filter with `levels` pyramid levels and 8 intensity levels: a remapping
/// LUT, the Gaussian pyramid of the gray image, a processed Laplacian pyramid per intensity
/// level read at data-dependent levels, collapsed, and the colour put back.
fn local_laplacian(levels: usize) -> String {
    let mut s = String::from(
        "kernel local_laplacian(input: u16[H, W, 3] with clamp_edge) -> out: f32[H, W, 3] {\n",
    );
    s += "    remap(i) = 0.5 * (f32(i) / 256.0) * exp(0.0 - (f32(i) / 256.0) * (f32(i) / 256.0) / 2.0);\n";
    s += "    gray(y, x) = 0.299 * (f32(input(y, x, 0)) / 65535.0) + 0.587 * (f32(input(y, x, 1)) / 65535.0) + 0.114 * (f32(input(y, x, 2)) / 65535.0);\n";
    s += "    g0(y, x, k) = gray(y, x) - f32(k) / 7.0 + f32(k) / 7.0 + remap(clamp(i32(gray(y, x) * 7.0 * 256.0), 0, 1792) - 256 * k);\n";
    let down = |s: &mut String, name: &str, src: &str, k: &str| {
        *s += &format!("    {name}x(y, x{k}) = ({src}(y, 2 * x - 1{k}) + 3.0 * {src}(y, 2 * x{k}) + 3.0 * {src}(y, 2 * x + 1{k}) + {src}(y, 2 * x + 2{k})) / 8.0;\n");
        *s += &format!("    {name}(y, x{k}) = ({name}x(2 * y - 1, x{k}) + 3.0 * {name}x(2 * y, x{k}) + 3.0 * {name}x(2 * y + 1, x{k}) + {name}x(2 * y + 2, x{k})) / 8.0;\n");
    };
    let up = |s: &mut String, name: &str, src: &str, k: &str| {
        *s += &format!("    {name}x(y, x{k}) = 0.25 * {src}(y, x / 2 - 1 + 2 * (x % 2){k}) + 0.75 * {src}(y, x / 2{k});\n");
        *s += &format!("    {name}(y, x{k}) = 0.25 * {name}x(y / 2 - 1 + 2 * (y % 2), x{k}) + 0.75 * {name}x(y / 2, x{k});\n");
    };
    for j in 1..levels {
        down(&mut s, &format!("g{j}"), &format!("g{}", j - 1), ", k");
    }
    for j in (0..levels - 1).rev() {
        up(&mut s, &format!("ug{j}"), &format!("g{}", j + 1), ", k");
        s += &format!("    l{j}(y, x, k) = g{j}(y, x, k) - ug{j}(y, x, k);\n");
    }
    s += "    ig0(y, x) = gray(y, x);\n";
    for j in 1..levels {
        down(&mut s, &format!("ig{j}"), &format!("ig{}", j - 1), "");
    }
    for j in 0..levels {
        let laplacian = if j == levels - 1 {
            format!("g{j}")
        } else {
            format!("l{j}")
        };
        let level = format!("ig{j}(y, x) * 7.0");
        let li = format!("clamp(i32({level}), 0, 6)");
        let lf = format!("({level} - f32({li}))");
        s += &format!("    ol{j}(y, x) = (1.0 - {lf}) * {laplacian}(y, x, {li}) + {lf} * {laplacian}(y, x, {li} + 1);\n");
    }
    s += &format!("    og{0}(y, x) = ol{0}(y, x);\n", levels - 1);
    for j in (0..levels - 1).rev() {
        up(&mut s, &format!("uo{j}"), &format!("og{}", j + 1), "");
        s += &format!("    og{j}(y, x) = uo{j}(y, x) + ol{j}(y, x);\n");
    }
    s += "    out(y, x, c) = og0(y, x) * (f32(input(y, x, c)) / 65535.0 + 0.01) / (gray(y, x) + 0.01);\n}\n";
    s
}

fn parse(source: &str) -> Pipeline {
    parse_kernel(source, "pyramid").unwrap_or_else(|e| panic!("{e}\n{source}"))
}

/// Every function but the output computed at root.
fn all_root(p: &Pipeline) -> Schedule {
    let text: Vec<String> = p
        .funcs
        .iter()
        .filter(|f| f.name != p.output.name)
        .map(|f| format!("{}: compute_root()", f.name))
        .collect();
    parse_schedule(&text.join("\n")).unwrap()
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
            lowered_text(&p, &all_root(&p)).len()
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
        for schedule in [all_root(&p), Schedule::new()] {
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
