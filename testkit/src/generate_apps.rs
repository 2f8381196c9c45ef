//! Kernels the size of Halide's apps, generated at any pyramid depth, as `.strata` source:
//! a pyramid interpolation (Halide's `apps/interpolate`) and a local Laplacian filter
//! (`apps/local_laplacian`), ported term by term. Tests check that they lower with each
//! level adding about the same (`scheduler/tests/pyramids.rs`); the `lowering` bench times
//! them against depth (`benches/lowering.rs`).

use strata_dsl::Diagnostic;
use strata_dsl::Pipeline;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::Schedule;

/// Every function of `p` but the output computed at root (each pyramid level at root).
pub fn all_at_root(p: &Pipeline) -> Result<Schedule, Diagnostic> {
    let lines: Vec<String> = p
        .funcs
        .iter()
        .filter(|f| f.name != p.output.name)
        .map(|f| format!("{}: compute_root()", f.name))
        .collect();
    parse_schedule(&lines.join("\n"))
}

/// Premultiply, `levels - 1` downsamplings, as many upsample-and-blend steps, normalize; four
/// channels, read through `clamp_edge`. At least one level. As in Halide's app, the fourth
/// downsampling reads the third level through a clamp to its size (`H / 8`, `W / 8`): without
/// it every level's footprint reaches 512 pixels past each edge of the image, which at small
/// sizes is most of the work.
pub fn interpolate(levels: usize) -> String {
    let levels = levels.max(1);
    let mut s = String::from(
        "kernel interpolate(input: f32[H, W, 4] with clamp_edge) -> out: f32[H, W, 3] {\n",
    );
    s += "    d0(y, x, c) = select(c < 3, input(y, x, c) * input(y, x, 3), input(y, x, 3));\n";
    for l in 1..levels {
        let p = format!("d{}", l - 1);
        // The row and columns `dx{l}` reads `p` at, clamped at level 4.
        let clamped = l == 4;
        let row = if clamped { "clamp(y, 0, H / 8)" } else { "y" };
        let col = |dx: &str| match clamped {
            true => format!("clamp(2 * x{dx}, 0, W / 8)"),
            false => format!("2 * x{dx}"),
        };
        let (a, b, c) = (col(" - 1"), col(""), col(" + 1"));
        s += &format!("    dx{l}(y, x, c) = ({p}({row}, {a}, c) + 2.0 * {p}({row}, {b}, c) + {p}({row}, {c}, c)) * 0.25;\n");
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

/// The local Laplacian filter with `levels` pyramid levels, as Halide's app writes it: a
/// remapping LUT (`alpha` the detail gain), the Gaussian pyramid of the gray image, a Laplacian
/// pyramid processed at each of `intensity_levels` intensities (a run-time parameter, as in
/// Halide: the LUT index is clamped with `(intensity_levels - 1) * 256` and the levels a pixel
/// reads with `intensity_levels - 2`) and read at data-dependent levels, collapsed, and the
/// colour put back (`beta` the base gain). The output stays `f32` in `0..=1` (Halide's converts
/// it back to `u16`). At least one level.
pub fn local_laplacian(levels: usize) -> String {
    let levels = levels.max(1);
    let mut s = String::from(
        "kernel local_laplacian(input: u16[H, W, 3] with clamp_edge, intensity_levels: i32, alpha: f32, beta: f32) -> out: f32[H, W, 3] {\n",
    );
    s += "    remap(i) = alpha * (f32(i) / 256.0) * exp(0.0 - (f32(i) / 256.0) * (f32(i) / 256.0) / 2.0);\n";
    s += "    gray(y, x) = 0.299 * (f32(input(y, x, 0)) / 65535.0) + 0.587 * (f32(input(y, x, 1)) / 65535.0) + 0.114 * (f32(input(y, x, 2)) / 65535.0);\n";
    s += "    g0(y, x, k) = beta * (gray(y, x) - f32(k) * (1.0 / f32(intensity_levels - 1))) + f32(k) * (1.0 / f32(intensity_levels - 1)) + remap(clamp(i32(gray(y, x) * f32(intensity_levels - 1) * 256.0), 0, (intensity_levels - 1) * 256) - 256 * k);\n";
    let down = |s: &mut String, name: &str, src: &str, k: &str| {
        *s += &format!("    {name}x(y, x{k}) = ({src}(y, 2 * x - 1{k}) + 3.0 * ({src}(y, 2 * x{k}) + {src}(y, 2 * x + 1{k})) + {src}(y, 2 * x + 2{k})) / 8.0;\n");
        *s += &format!("    {name}(y, x{k}) = ({name}x(2 * y - 1, x{k}) + 3.0 * ({name}x(2 * y, x{k}) + {name}x(2 * y + 1, x{k})) + {name}x(2 * y + 2, x{k})) / 8.0;\n");
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
        let level = format!("ig{j}(y, x) * f32(intensity_levels - 1)");
        let li = format!("clamp(i32({level}), 0, intensity_levels - 2)");
        let lf = format!("({level} - f32({li}))");
        s += &format!("    ol{j}(y, x) = (1.0 - {lf}) * {laplacian}(y, x, {li}) + {lf} * {laplacian}(y, x, {li} + 1);\n");
    }
    s += &format!("    og{0}(y, x) = ol{0}(y, x);\n", levels - 1);
    for j in (0..levels - 1).rev() {
        up(&mut s, &format!("uo{j}"), &format!("og{}", j + 1), "");
        s += &format!("    og{j}(y, x) = uo{j}(y, x) + ol{j}(y, x);\n");
    }
    s += "    out(y, x, c) = clamp(og0(y, x) * (f32(input(y, x, c)) / 65535.0 + 0.01) / (gray(y, x) + 0.01), 0.0, 1.0);\n}\n";
    s
}
