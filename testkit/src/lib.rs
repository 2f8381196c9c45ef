//! strata-testkit: what strata's tests share, kept out of the published libraries.
//!
//! - The generators: random legal schedules ([`generate`]), random pipelines of every
//!   construct ([`generate_pipeline`]), deep pipelines, pyramids and stencil chains
//!   ([`generate_pyramid`]) and Halide's apps at any depth ([`generate_apps`]).
//! - The bundled example kernels ([`example`], [`example_text`]), their hand schedules
//!   ([`example_schedule`]) and shapes for them ([`example_sizes`]).
//! - The differential harness ([`differential`]): the seeds a test runs (`STRATA_CASES`,
//!   `STRATA_SEED`), the one outcome besides the reference's answer that a case may have (a
//!   `round_up` schedule refusing an input smaller than it reads), and the loop that runs the
//!   cases and names every failing seed with the command that replays it.
//!
//! Only tests and benches depend on it (as a dev-dependency).

#![warn(missing_docs)]

pub mod differential;
pub mod generate;
pub mod generate_apps;
pub mod generate_pipeline;
pub mod generate_pyramid;

use rand::Rng;
use strata_dsl::{parse_kernel, Pipeline, Sizes};
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::Schedule;

/// The path of the bundled example kernel `examples/kernels/{name}.strata`.
pub fn example_path(name: &str) -> String {
    format!(
        "{}/../examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The text of the bundled example kernel `name`.
pub fn example_text(name: &str) -> String {
    let path = example_path(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The bundled example kernel `name`, parsed.
pub fn example(name: &str) -> Pipeline {
    let path = example_path(name);
    parse_kernel(&example_text(name), &path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The hand schedule `examples/schedules/{file}.sched`, parsed.
pub fn example_schedule(file: &str) -> Schedule {
    let path = format!(
        "{}/../examples/schedules/{file}.sched",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_schedule(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// How wide [`example_sizes`] draws the innermost extents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Widths {
    /// Small shapes, for the loop-IR interpreter (slow per element).
    Interpreted,
    /// Innermost extents up to about 20, so vector loops of 4 to 16 lanes run whole vectors and
    /// tails, for compiled code.
    Vectors,
}

/// A random shape for the example kernel `name` (sizes not divisible by any factor, size 1,
/// primes), drawn from `rng`; empty for a kernel without a table entry.
pub fn example_sizes(name: &str, widths: Widths, rng: &mut impl Rng) -> Sizes {
    let wide = widths == Widths::Vectors;
    let mut r = |lo: i64, hi: i64| rng.random_range(lo..=hi);
    let sizes: Vec<(&str, i64)> = match name {
        "matmul" => vec![
            ("M", r(1, 9)),
            ("N", r(1, if wide { 19 } else { 11 })),
            ("K", r(1, 7)),
        ],
        "blur3x3" => vec![("H", r(3, 12)), ("W", r(3, if wide { 21 } else { 13 }))],
        "softmax" | "softmax_fast" => vec![("R", r(1, 5)), ("C", r(1, if wide { 21 } else { 13 }))],
        "conv2d" => vec![
            ("N", r(1, 2)),
            ("C", r(1, 3)),
            ("F", r(1, 2)),
            ("H", r(3, 7)),
            ("W", r(3, if wide { 12 } else { 8 })),
        ],
        "histogram" | "brighten" => vec![("H", r(1, 7)), ("W", r(1, if wide { 19 } else { 9 }))],
        "gaussian5" => vec![("H", r(1, 9)), ("W", r(1, if wide { 18 } else { 10 }))],
        _ => vec![],
    };
    sizes.into_iter().map(|(n, v)| (n.to_string(), v)).collect()
}
