//! Random *deep* pipelines as kernel text (issue 20): pyramids (a chain of 2x downsamplings
//! and the upsample-and-blend back up, as Halide's interpolate and local Laplacian apps build
//! them) and long stencil chains with skip connections, up to 12 levels deep. Where
//! `generate_pipeline` draws a few functions of many kinds, this draws many functions of the
//! kinds app-sized pipelines are made of, so the differential tests reach the depths where
//! region expressions, inlining and placement compound.
//!
//! Every level reads its source at random taps (`2 * x + o` down, one of the three upsampling
//! index forms of Halide's apps up: `x / 2`, `(x + 1) / 2`, `x / 2 - 1 + 2 * (x % 2)`), with
//! small integer weights and a division by their sum, so values stay in range in `i32` (exact
//! comparisons) and in `f32` (sums of a few terms, within the float tolerance). The input is
//! read through a random boundary condition: a pyramid reads far outside it.
//!
//! A pyramid's finest level covers the coarsest level's stencils scaled up by 2 per level,
//! whatever the output's size, so two-dimensional pyramids stop at 4 levels (a 12-level one
//! makes the reference compute millions of points, and at 5 levels the interpreter took a
//! minute under some schedules); one-dimensional ones go to 12.
//!
//! [`DeepKernel::roots`] names every second level: a random schedule nesting each level inside
//! the next recomputes a producer per point of its consumer, so work grows by the stencil's
//! area per level; computing those at root keeps a test's work bounded whatever else the
//! schedule does.

use crate::generate_pipeline::GeneratedKernel;
use rand::seq::IndexedRandom;
use rand::Rng;
use std::collections::BTreeSet;
use strata_dsl::Dtype;

/// The deepest pyramid or chain drawn.
pub const MAX_LEVELS: usize = 12;
/// The deepest two-dimensional pyramid drawn (see the module documentation).
const MAX_LEVELS_2D_PYRAMID: usize = 4;

/// A generated deep kernel and the functions a test's schedule should compute at root.
#[derive(Clone, Debug)]
pub struct DeepKernel {
    /// The kernel (its features: `pyramid` or `chain`).
    pub kernel: GeneratedKernel,
    /// Every second level, which a schedule should compute at root to keep work bounded.
    pub roots: Vec<String>,
    /// How many levels deep it is.
    pub levels: usize,
}

/// A random pyramid or stencil chain (see the module documentation).
pub fn random_deep_pipeline(rng: &mut impl Rng) -> DeepKernel {
    let rank = rng.random_range(1..=2);
    let dtype = if rng.random_bool(0.5) {
        Dtype::I32
    } else {
        Dtype::F32
    };
    let pyramid = rng.random_bool(0.5);
    let most = if pyramid && rank == 2 {
        MAX_LEVELS_2D_PYRAMID
    } else {
        MAX_LEVELS
    };
    let levels = rng.random_range(2..=most);
    let mut gen = Deep::new(rank, dtype);
    let feature = if pyramid {
        gen.pyramid(levels, rng);
        "pyramid"
    } else {
        gen.chain(levels, rng);
        "chain"
    };
    gen.finish(feature, levels, rng)
}

/// Which way a level resamples its source.
#[derive(Clone, Copy)]
enum Step {
    Down,
    Up,
}

/// The kernel being written.
struct Deep {
    rank: usize,
    dtype: Dtype,
    body: Vec<String>,
    /// Functions to compute at root in a test's schedule.
    roots: Vec<String>,
    /// The last function defined.
    last: String,
}

impl Deep {
    fn new(rank: usize, dtype: Dtype) -> Deep {
        let mut deep = Deep {
            rank,
            dtype,
            body: Vec::new(),
            roots: Vec::new(),
            last: String::new(),
        };
        let vars = deep.vars().join(", ");
        deep.define("l0", format!("input({vars})"));
        deep
    }

    /// The pure variables, outermost first.
    fn vars(&self) -> Vec<&'static str> {
        ["y", "x"][2 - self.rank..].to_vec()
    }

    fn define(&mut self, name: &str, value: String) {
        let vars = self.vars().join(", ");
        self.body.push(format!("    {name}({vars}) = {value};"));
        self.last = name.to_string();
    }

    /// A literal of the kernel's type.
    fn number(&self, v: i64) -> String {
        match self.dtype {
            Dtype::F32 => format!("{v}.0"),
            _ => v.to_string(),
        }
    }

    /// `(w0 * t0 + w1 * t1 + ...) / (w0 + w1 + ...)`.
    fn weighted(&self, terms: &[(i64, String)]) -> String {
        let total: i64 = terms.iter().map(|(w, _)| w).sum();
        let sum: Vec<String> = (terms.iter())
            .map(|(w, t)| match w {
                1 => t.clone(),
                w => format!("{} * {t}", self.number(*w)),
            })
            .collect();
        format!("({}) / {}", sum.join(" + "), self.number(total))
    }

    /// A read of `src` with dimension `dim`'s index replaced by `index`.
    fn read(&self, src: &str, dim: usize, index: &str) -> String {
        let vars: Vec<String> = (self.vars().iter().enumerate())
            .map(|(d, v)| {
                if d == dim {
                    index.to_string()
                } else {
                    v.to_string()
                }
            })
            .collect();
        format!("{src}({})", vars.join(", "))
    }

    /// `src` downsampled by 2 along `dim`, at 2 to 4 random taps `2 * v + o`, `o` in -1..=2.
    fn downsample(&self, src: &str, dim: usize, rng: &mut impl Rng) -> String {
        let v = self.vars()[dim];
        let count = rng.random_range(2..=4);
        let taps: Vec<i64> = [-1i64, 0, 1, 2]
            .choose_multiple(rng, count)
            .copied()
            .collect();
        let terms: Vec<(i64, String)> = (taps.iter())
            .map(|o| {
                let index = match o {
                    0 => format!("2 * {v}"),
                    o if *o < 0 => format!("2 * {v} - {}", -o),
                    o => format!("2 * {v} + {o}"),
                };
                (rng.random_range(1..=3), self.read(src, dim, &index))
            })
            .collect();
        self.weighted(&terms)
    }

    /// `src` upsampled by 2 along `dim`, in one of the index forms Halide's apps use.
    fn upsample(&self, src: &str, dim: usize, rng: &mut impl Rng) -> String {
        let v = self.vars()[dim];
        let at = |index: String| self.read(src, dim, &index);
        match rng.random_range(0..3) {
            0 => at(format!("{v} / 2")),
            1 => self.weighted(&[
                (1, at(format!("{v} / 2"))),
                (1, at(format!("({v} + 1) / 2"))),
            ]),
            _ => self.weighted(&[
                (1, at(format!("{v} / 2 - 1 + 2 * ({v} % 2)"))),
                (3, at(format!("{v} / 2"))),
            ]),
        }
    }

    /// `src` resampled along every dimension, innermost first, as separable halves
    /// (`{name}_{dim}` for the inner ones, then `name`).
    fn separable(&mut self, name: &str, src: &str, step: Step, rng: &mut impl Rng) {
        let mut from = src.to_string();
        for dim in (0..self.rank).rev() {
            let half = if dim == 0 {
                name.to_string()
            } else {
                format!("{name}_{dim}")
            };
            let value = match step {
                Step::Down => self.downsample(&from, dim, rng),
                Step::Up => self.upsample(&from, dim, rng),
            };
            self.define(&half, value);
            from = half;
        }
    }

    /// Levels `l1..` each downsample the previous; then `o{j}` blends the upsampled coarser
    /// level with `l{j}`, back to the finest.
    fn pyramid(&mut self, levels: usize, rng: &mut impl Rng) {
        for j in 1..levels {
            self.separable(&format!("l{j}"), &format!("l{}", j - 1), Step::Down, rng);
            self.keep_at_root(j, &format!("l{j}"));
        }
        let mut coarser = format!("l{}", levels - 1);
        for j in (0..levels - 1).rev() {
            let up = format!("up{j}");
            self.separable(&up, &coarser, Step::Up, rng);
            let vars = self.vars().join(", ");
            let weight = rng.random_range(1..=3);
            let blend = self.weighted(&[
                (weight, format!("{up}({vars})")),
                (1, format!("l{j}({vars})")),
            ]);
            self.define(&format!("o{j}"), blend);
            self.keep_at_root(j, &format!("o{j}"));
            coarser = format!("o{j}");
        }
    }

    /// Levels `l1..` each a stencil of the previous (taps within 2 of the point), now and then
    /// with a skip connection from an earlier level.
    fn chain(&mut self, levels: usize, rng: &mut impl Rng) {
        for j in 1..levels {
            let src = format!("l{}", j - 1);
            let mut terms: Vec<(i64, String)> = Vec::new();
            for _ in 0..rng.random_range(1..=3) {
                let index: Vec<String> = (self.vars().iter())
                    .map(|v| match rng.random_range(-2i64..=2) {
                        0 => v.to_string(),
                        o if o < 0 => format!("{v} - {}", -o),
                        o => format!("{v} + {o}"),
                    })
                    .collect();
                terms.push((
                    rng.random_range(1..=3),
                    format!("{src}({})", index.join(", ")),
                ));
            }
            if j >= 2 && rng.random_bool(0.3) {
                let earlier = rng.random_range(0..j - 1);
                let vars = self.vars().join(", ");
                terms.push((1, format!("l{earlier}({vars})")));
            }
            let value = self.weighted(&terms);
            self.define(&format!("l{j}"), value);
            self.keep_at_root(j, &format!("l{j}"));
        }
    }

    fn keep_at_root(&mut self, level: usize, name: &str) {
        if level % 2 == 0 {
            self.roots.push(name.to_string());
        }
    }

    fn finish(mut self, feature: &'static str, levels: usize, rng: &mut impl Rng) -> DeepKernel {
        let vars = self.vars().join(", ");
        let last = self.last.clone();
        self.define("out", format!("{last}({vars})"));
        let sizes: Vec<String> = ["N", "M"][..self.rank]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let boundary = match rng.random_range(0..4) {
            0 => "clamp_edge".to_string(),
            1 => "mirror".to_string(),
            2 => "mirror_interior".to_string(),
            _ => format!("constant({})", self.number(7)),
        };
        let shape = sizes.join(", ");
        let dtype = self.dtype;
        let text = format!(
            "kernel deep(input: {dtype}[{shape}] with {boundary}) -> out: {dtype}[{shape}] {{\n{}\n}}\n",
            self.body.join("\n")
        );
        let features: BTreeSet<&'static str> = [feature, "boundary condition"].into();
        DeepKernel {
            kernel: GeneratedKernel {
                text,
                margins: vec![0; sizes.len()],
                sizes,
                features,
            },
            roots: self.roots,
            levels,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    /// Every drawn kernel passes the checker, replays from its seed, and the depths and kinds
    /// are all drawn.
    #[test]
    fn deep_kernels_check_replay_and_cover_the_depths() {
        let mut depths = BTreeSet::new();
        let mut kinds = BTreeSet::new();
        for seed in 0..300u64 {
            let deep = random_deep_pipeline(&mut StdRng::seed_from_u64(seed));
            if let Err(e) = deep.kernel.pipeline() {
                panic!(
                    "seed {seed}: the checker rejects\n{}\n{e}",
                    deep.kernel.text
                );
            }
            let again = random_deep_pipeline(&mut StdRng::seed_from_u64(seed));
            assert_eq!(deep.kernel.text, again.kernel.text, "seed {seed}");
            depths.insert(deep.levels);
            kinds.extend(deep.kernel.features);
        }
        assert_eq!(depths, (2..=MAX_LEVELS).collect(), "depths drawn");
        assert!(
            kinds.contains("pyramid") && kinds.contains("chain"),
            "{kinds:?}"
        );
    }
}
