//! strata-schedule: the schedule language of strata, on its own so that lowering and the tuner
//! depend on it and it on nothing but the kernel language.
//! Its contract with lowering is [`plan::Plan`]: what `validate` makes of a pipeline and a
//! schedule, every function's placement and loops.
//!
//! Schedules as data: for each function and each of its stages, the directives of
//! docs/design.md §4 in the order written. A `Schedule` is built with the chaining API
//! (`s.func("out").tile(...).vectorize(...)`), parsed from and printed to the text form
//! (`text.rs`, round-trips exactly), serialized with serde, and validated against a pipeline
//! before lowering (`validate/`).
//!
//! Conventions (where Halide differs, we follow the kernel language's "last is innermost"):
//! - `reorder(a, b, c)` lists loops **outermost first**: `c` becomes the innermost.
//! - `tile(y, x, yo, xo, yi, xi, fy, fx)` splits `y` by `fy` and `x` by `fx` and orders the
//!   loops `yo, xo, yi, xi` (outer dimension first).
//! - `vectorize(x, w)` splits `x` by `w`, keeps the name `x` for the outer loop and vectorizes
//!   the inner one, named `x.v`; `unroll(x, f)` likewise with `x.u`.
//!
//! What a schedule leaves unsaid keeps its default: a pure function is inlined into its
//! consumers; the output, any function with an update and any function holding an inline
//! reduction (`rstd(r) = 1 / sqrt(sum(c in 0..C) ...)`) are computed at root; loops run
//! serially in the order of the definition's variables, the last innermost, and an update's pure
//! variables loop outside its reduction variables.

#![warn(missing_docs)]

pub mod canonical;
pub mod errors;
pub(crate) mod follow;
pub mod inline_bound;
pub mod lift_reductions;
pub mod limits;
pub mod loops;
pub mod plan;
pub mod races;
pub mod rfactor;
pub mod text;
pub mod validate;
pub mod wrap;

pub use validate::specialize;

use serde::{Deserialize, Serialize};

/// How a loop runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ForKind {
    /// One iteration after another, in order.
    Serial,
    /// Iterations spread over the thread pool.
    Parallel,
    /// Becomes vector expressions (the extent must be a constant).
    Vectorized,
    /// Becomes copies of the body (the extent must be a constant).
    Unrolled,
    /// Runs serially over the lanes of a vectorized loop that could not run as vectors (the
    /// tail of a guarded loop). Its iterations are independent, as every vectorized loop's
    /// are, so later passes may move it outward.
    Lanes,
}

/// A whole schedule: lines in the order written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// The lines, in the order written.
    pub lines: Vec<Line>,
}

/// The directives for one stage of one function: `name:` or `name.update(i):`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// The function the line schedules.
    pub func: String,
    /// The stage of the function the line schedules.
    pub stage: StageRef,
    /// The directives, in the order written.
    pub directives: Vec<Directive>,
}

/// Which definition of a function a line schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StageRef {
    /// The pure definition (stage 0). Placement directives live here.
    Pure,
    /// The `i`-th update definition (stage `i + 1`).
    Update(usize),
}

impl StageRef {
    /// 0 for the pure definition, `i + 1` for update `i`.
    pub fn index(self) -> usize {
        match self {
            StageRef::Pure => 0,
            StageRef::Update(i) => i + 1,
        }
    }
}

/// What happens to the last partial piece when a split factor does not divide the extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TailStrategy {
    /// Guard the body with `if x < extent` (always legal).
    Guard,
    /// Shift the last piece inwards so it ends at the extent, recomputing some points (pure
    /// definitions only; falls back to guarding when the extent is smaller than the factor).
    Shift,
    /// Compute the whole last piece past the extent (not for outputs: it needs padded storage).
    RoundUp,
}

/// A loop named in a directive: a function (and stage) and one of its loop variables.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LoopLevel {
    /// The function whose loop it is.
    pub func: String,
    /// The stage whose loop it is.
    pub stage: StageRef,
    /// The loop variable.
    pub var: String,
}

/// One schedule directive, named as in Halide.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Directive {
    /// `split(x, xo, xi, factor[, tail])`: `x = xo * factor + xi`, `xi` inner.
    Split {
        /// The loop split.
        var: String,
        /// The new outer loop's name.
        outer: String,
        /// The new inner loop's name.
        inner: String,
        /// The inner loop's extent.
        factor: i64,
        /// What to do with the last partial piece; `None` for the default (shift for a pure
        /// definition, guard for an update).
        tail: Option<TailStrategy>,
    },
    /// `fuse(outer, inner, fused)`: one loop over both (they must be adjacent, outer first).
    Fuse {
        /// The outer loop.
        outer: String,
        /// The inner loop.
        inner: String,
        /// The name of the fused loop.
        fused: String,
    },
    /// `reorder(a, b, ...)`: these loops in this order, outermost first; others keep their places.
    Reorder(Vec<String>),
    /// `tile(y, x, yo, xo, yi, xi, fy, fx[, tail])`.
    Tile {
        /// The outer dimension's loop.
        y: String,
        /// The inner dimension's loop.
        x: String,
        /// The new outer loop of `y`.
        yo: String,
        /// The new outer loop of `x`.
        xo: String,
        /// The new inner loop of `y`.
        yi: String,
        /// The new inner loop of `x`.
        xi: String,
        /// The split factor of `y`.
        fy: i64,
        /// The split factor of `x`.
        fx: i64,
        /// What to do with the last partial pieces; `None` for the default.
        tail: Option<TailStrategy>,
    },
    /// `vectorize(x[, width])`.
    Vectorize {
        /// The loop vectorized.
        var: String,
        /// The vector width: the loop is split by it first (its inner loop `x.v` vectorized);
        /// `None` vectorizes the whole loop, whose extent must be a constant.
        width: Option<i64>,
    },
    /// `unroll(x[, factor])`.
    Unroll {
        /// The loop unrolled.
        var: String,
        /// The unroll factor: the loop is split by it first (its inner loop `x.u` unrolled);
        /// `None` unrolls the whole loop, whose extent must be a constant.
        factor: Option<i64>,
    },
    /// `parallel(x)`.
    Parallel {
        /// The loop run in parallel.
        var: String,
    },
    /// `compute_inline()`: substitute the definition into every consumer.
    ComputeInline,
    /// `compute_root()`: compute the whole needed region before the output's loops.
    ComputeRoot,
    /// `compute_at(g, v)`: compute the region needed by one iteration of `g`'s loop `v`.
    ComputeAt(LoopLevel),
    /// `store_root()`: allocate at root (with `compute_at`, storage outlives the loop).
    StoreRoot,
    /// `store_at(g, v)`: allocate inside `g`'s loop `v`.
    StoreAt(LoopLevel),
    /// `reorder_storage(a, b, ...)`: lay the function's buffer out with these dimensions in this
    /// order, outermost first (the last contiguous); dimensions not named keep their places
    /// (the same reading as `reorder`). Halide's `reorder_storage`, whose list is innermost
    /// first. The default is the definition's order. Not for the output, whose buffer is the
    /// caller's. It moves no loop: only where each element lives, so the answer is unchanged.
    ///
    /// Rewrite (conv2d's copy of the weights of 8 filters, `Wp(f, c, ky, kx)` with C = 4, and
    /// `Wp: reorder_storage(c, ky, kx, f)`: the 8 filters' weights of one tap become adjacent):
    ///
    /// ```text
    /// Wp[f, c, ky, kx] is flat element ((f * 4 + c) * 3 + ky) * 3 + kx
    ///   -->
    /// Wp[f, c, ky, kx] is flat element ((c * 3 + ky) * 3 + kx) * 8 + f
    /// ```
    ReorderStorage(Vec<String>),
    /// `wrap(g, gw)`, on the line of a consumer `f` (Halide's `g.in(f)`, TVM's `cache_read`):
    /// makes a new function `gw(v..) = g(v..)`, a copy of the input or function `g`, and turns
    /// every call of `g` in `f`'s definitions (every stage) into a call of `gw`. Other
    /// consumers of `g` keep reading `g`. `gw` is then scheduled like any function: left alone
    /// it is inlined (the wrap changes nothing); `gw: compute_at(f, v)` copies, once per
    /// iteration of `v`, the region of `g` that `f` reads inside `v` into a buffer of that
    /// size, which `reorder_storage` and `gw`'s own loop directives (vectorize, unroll) shape.
    /// Its variables are `g`'s own for a function; for an input, the variable `f` indexes each
    /// dimension with when every call has the same bare variable there (`B(k, j)` gives `k, j`),
    /// else `_0`, `_1`, ... Wraps apply in the order written, so a wrapper may be wrapped again
    /// on a later line. `gw` must be a fresh name (no function, input, size or variable).
    ///
    /// Rewrite (sgemm `C(i, j) += A(i, k) * B(k, j)` with `C: wrap(B, Bp)` and
    /// `Bp: compute_at(C.update(0), jo).vectorize(j, 8)`; B's rows are N floats apart, the
    /// packed panel's 8):
    ///
    /// ```text
    /// for C.s1.jo:
    ///   for C.s1.k:
    ///     for C.s1.ji (vectorized):
    ///       C[i, j] = C[i, j] + A[i, k] * B[k, j]
    ///   -->
    /// for C.s1.jo:
    ///   realize Bp[Bp.k.min ..= Bp.k.max, Bp.j.min ..= Bp.j.max]:
    ///     for Bp.s0.k in Bp.k.min ..= Bp.k.max:
    ///       for Bp.s0.j (vectorized):
    ///         Bp[k, j] = B[k, j]
    ///     for C.s1.k:
    ///       for C.s1.ji (vectorized):
    ///         C[i, j] = C[i, j] + A[i, k] * Bp[k, j]
    /// ```
    Wrap {
        /// The input or function wrapped (`g`).
        producer: String,
        /// The new function's name (`gw`).
        wrapper: String,
    },
    /// `fold_storage(y, n)` (Halide's `fold_storage`): the function's buffer keeps only `n`
    /// slots in dimension `y`, element `y` living in slot `y mod n` (a circular buffer).
    /// Legal when the function is computed inside a serial loop whose every iteration
    /// computes, and reads, at most `n` consecutive values of `y` (its region there, found by
    /// bounds inference, has at most `n` rows): a row is then never overwritten while it is
    /// still read. Lowering refuses a fold it cannot prove large enough (the function, the
    /// dimension, the rows needed and the fold given), one under a parallel loop between the
    /// buffer and the computation (iterations running at once would share slots), and the
    /// output, whose buffer is the caller's. Lowering also folds on its own where this is
    /// safe (`lower::fold_storage`): the directive fixes the extent, or folds a dimension
    /// automatic folding leaves alone (the contiguous one).
    ///
    /// Rewrite (blur3x3 with `bx: store_root().compute_at(out, y).fold_storage(y, 3)`: H rows
    /// of `bx` become 3):
    ///
    /// ```text
    /// realize bx[0 ..= H - 1, 0 ..= W - 3]:
    ///   for out.y:
    ///     for bx.y in out.y ..= out.y + 2: bx[bx.y, x] = ..
    ///     for out.x: out[y, x] = bx[y, x] + bx[y + 1, x] + bx[y + 2, x]
    ///   -->
    /// realize bx[0 ..= 2, 0 ..= W - 3]:
    ///   for out.y:
    ///     for bx.y in out.y ..= out.y + 2: bx[bx.y % 3, x] = ..
    ///     for out.x: out[y, x] = bx[y % 3, x] + bx[(y + 1) % 3, x] + bx[(y + 2) % 3, x]
    /// ```
    FoldStorage {
        /// The dimension folded (`y`).
        var: String,
        /// The number of slots kept (`n`).
        extent: i64,
    },
    /// `specialize(cond)` (Halide's `f.specialize(cond)`): the directives after it on its line
    /// schedule the stage for the calls where `cond` holds; the stage's other directives are the
    /// general case. `cond` is a bool expression in the kernel language over sizes, scalar
    /// parameters and constants (`W % 16 == 0`, `N >= 64 && alpha > 0.0`), kept as written.
    /// As in Halide, a specialization starts from the stage's loop directives written before
    /// it (on earlier lines and earlier on its own line) and adds its own; lines after it
    /// schedule only the general case. Specializations of a stage are tried in the order
    /// written, the first whose condition holds wins; the same condition twice is the same
    /// specialization. Placement, `wrap`, `reorder_storage` and `fold_storage` cannot be
    /// specialized (they apply to the whole function), nor can a specialization be
    /// specialized again. Written `f.specialize(cond): ...` when it starts a line (the
    /// printer's form), or after general directives as Halide chains it:
    /// `f: split(x, xo, xi, 16).specialize(W % 16 == 0).vectorize(xi)`.
    ///
    /// Lowering (`lower::specialize`) decides the conditions once per call, outside every
    /// loop: the kernel is lowered once per combination of cases (at most
    /// `specialize::MAX_VERSIONS`) and each lowering runs where its conditions hold, with them
    /// known, so `W % 16 == 0` removes the tail of a split of `W` by 16.
    ///
    /// Rewrite (`out(y, x)` over `H x W`; `out: split(x, xo, xi, 16).specialize(W % 16 ==
    /// 0).vectorize(xi)`):
    ///
    /// ```text
    /// for out.s0.y in 0 ..= H - 1:
    ///   for out.s0.xo in 0 ..= (W + 15) / 16 - 1:
    ///     for out.s0.xi in 0 ..= 15:
    ///       if out.s0.xo * 16 + out.s0.xi < W:
    ///         out[y, x] = ...
    ///   -->
    /// if W % 16 == 0:
    ///   for out.s0.y in 0 ..= H - 1:
    ///     for out.s0.xo in 0 ..= W / 16 - 1:
    ///       out[y, xo * 16 + ramp(0, 1, 16)] = ...      (no tail: 16 divides W)
    /// else:
    ///   for out.s0.y in 0 ..= H - 1:
    ///     for out.s0.xo in 0 ..= (W + 15) / 16 - 1:
    ///       for out.s0.xi in 0 ..= 15:
    ///         if out.s0.xo * 16 + out.s0.xi < W:
    ///           out[y, x] = ...
    /// ```
    Specialize(String),
    /// `rfactor(v, fi)`, on an update's line (Halide's `Func::rfactor`): splits an associative
    /// reduction into a partial reduction and a final combine. `v` is a reduction variable of
    /// the update, or a part of one split just before it on the stage (`split(k, ko, ki, 8)
    /// .rfactor(ki, fi)`). The new function `fi(v.., v)`, `f`'s pure variables then `v`, starts
    /// from the fold's identity and folds in every point of the other reduction loops for each
    /// value of `v`; the update becomes the merge, `f(v..) op= fi(v.., v)` over `v`. The
    /// directives after `rfactor` on the stage schedule the merge; `fi` is scheduled like any
    /// function with updates (`fi.update(0): reorder(ko, ki).vectorize(ki)`), computed at root
    /// unless placed. For a split, `fi`'s `update(1)` folds the last `extent mod factor` points
    /// into `fi(v.., 0)`, so every domain stays rectangular and the main update has no tail.
    /// Only for folds (`+=`, `-=`, `*=`, `f = f + e`, `f = max(f, e)`, min) into the update's
    /// own point that read `f` nowhere else; float sums and products are reassociated (see
    /// `rfactor.rs`). `fi` must be a fresh name.
    ///
    /// Rewrite (`d(i) += a(i, k) * b(k)` over `k in 0..N`, `d.update(0): split(k, ko, ki, 8)
    /// .rfactor(ki, df)` and `df.update(0): reorder(ko, ki).vectorize(ki)`):
    ///
    /// ```text
    /// for d.s1.i:
    ///   for d.s1.k in 0 ..= N - 1:
    ///     d[i] = d[i] + a[i, k] * b[k]
    ///   -->
    /// realize df[i, 0 ..= 7]:
    ///   for df.s0.i: for df.s0.ki (vectorized): df[i, ki] = 0
    ///   for df.s1.i:
    ///     for df.s1.ko in 0 ..= N / 8 - 1:
    ///       for df.s1.ki (vectorized):
    ///         df[i, ki] = df[i, ki] + a[i, ko * 8 + ki] * b[ko * 8 + ki]
    ///   for df.s2.i:
    ///     for df.s2.k in N / 8 * 8 ..= N - 1:
    ///       df[i, 0] = df[i, 0] + a[i, k] * b[k]
    ///   for d.s1.i:
    ///     for d.s1.ki in 0 ..= 7:
    ///       d[i] = d[i] + df[i, ki]
    /// ```
    Rfactor {
        /// The reduction variable factored out (`v`).
        var: String,
        /// The new intermediate function's name (`fi`).
        intermediate: String,
    },
}

impl Directive {
    /// Whether this directive applies to the whole function (every stage) rather than to one
    /// stage's loops: placements, `reorder_storage`, `wrap` and `fold_storage`, written on the
    /// pure line.
    pub fn is_per_function(&self) -> bool {
        self.is_placement()
            || matches!(
                self,
                Directive::ReorderStorage(_)
                    | Directive::Wrap { .. }
                    | Directive::FoldStorage { .. }
            )
    }

    /// Whether this directive places the function (rather than shaping a stage's loops).
    pub fn is_placement(&self) -> bool {
        matches!(
            self,
            Directive::ComputeInline
                | Directive::ComputeRoot
                | Directive::ComputeAt(_)
                | Directive::StoreRoot
                | Directive::StoreAt(_)
        )
    }
}

impl Schedule {
    /// The empty schedule: every function keeps its default (see the module doc).
    pub fn new() -> Schedule {
        Schedule::default()
    }

    /// Starts (or continues) the line for `func`'s pure definition.
    pub fn func(&mut self, func: &str) -> StageBuilder<'_> {
        self.stage(func, StageRef::Pure)
    }

    /// Starts (or continues) the line for one stage of `func`.
    pub fn stage(&mut self, func: &str, stage: StageRef) -> StageBuilder<'_> {
        let line = match self
            .lines
            .iter()
            .position(|l| l.func == func && l.stage == stage)
        {
            Some(i) => i,
            None => {
                self.lines.push(Line {
                    func: func.to_string(),
                    stage,
                    directives: Vec::new(),
                });
                self.lines.len() - 1
            }
        };
        StageBuilder {
            schedule: self,
            line,
        }
    }

    /// Every directive for one stage of one function, in order (lines may repeat a stage).
    pub fn directives(&self, func: &str, stage: StageRef) -> Vec<&Directive> {
        self.lines
            .iter()
            .filter(|l| l.func == func && l.stage == stage)
            .flat_map(|l| &l.directives)
            .collect()
    }
}

/// The chaining API: each method appends one directive and returns the builder.
pub struct StageBuilder<'a> {
    schedule: &'a mut Schedule,
    line: usize,
}

impl<'a> StageBuilder<'a> {
    fn push(self, d: Directive) -> Self {
        self.schedule.lines[self.line].directives.push(d);
        self
    }

    /// The directives of this line, to edit directly.
    pub fn directives_mut(self) -> &'a mut Vec<Directive> {
        &mut self.schedule.lines[self.line].directives
    }

    /// Switches to update `i` of the same function.
    pub fn update(self, i: usize) -> StageBuilder<'a> {
        let func = self.schedule.lines[self.line].func.clone();
        self.schedule.stage(&func, StageRef::Update(i))
    }

    /// `split(var, outer, inner, factor)` with the default tail (`shift` on a pure definition,
    /// `guard` on an update): `var` becomes `outer * factor + inner`, `inner` the inner loop.
    pub fn split(self, var: &str, outer: &str, inner: &str, factor: i64) -> Self {
        self.split_with(var, outer, inner, factor, None)
    }

    /// `split` with the tail strategy given (`None`: the default).
    pub fn split_with(
        self,
        var: &str,
        outer: &str,
        inner: &str,
        factor: i64,
        tail: Option<TailStrategy>,
    ) -> Self {
        self.push(Directive::Split {
            var: var.into(),
            outer: outer.into(),
            inner: inner.into(),
            factor,
            tail,
        })
    }

    /// `fuse(outer, inner, fused)`: two adjacent loops, `outer` directly around `inner`, become one.
    pub fn fuse(self, outer: &str, inner: &str, fused: &str) -> Self {
        self.push(Directive::Fuse {
            outer: outer.into(),
            inner: inner.into(),
            fused: fused.into(),
        })
    }

    /// `reorder(..)`: these loops in this order, outermost first; the others keep their places.
    pub fn reorder(self, vars: &[&str]) -> Self {
        self.push(Directive::Reorder(
            vars.iter().map(|v| v.to_string()).collect(),
        ))
    }

    /// `tile(y, x, yo, xo, yi, xi, fy, fx)`: splits `y` by `fy` and `x` by `fx` and orders the loops
    /// `yo, xo, yi, xi` (outer dimension first).
    #[allow(clippy::too_many_arguments)]
    pub fn tile(
        self,
        y: &str,
        x: &str,
        yo: &str,
        xo: &str,
        yi: &str,
        xi: &str,
        fy: i64,
        fx: i64,
    ) -> Self {
        self.push(Directive::Tile {
            y: y.into(),
            x: x.into(),
            yo: yo.into(),
            xo: xo.into(),
            yi: yi.into(),
            xi: xi.into(),
            fy,
            fx,
            tail: None,
        })
    }

    /// `vectorize(var, width)`: splits `var` by `width` and vectorizes the inner loop (`var.v`),
    /// keeping the name `var` for the outer one.
    pub fn vectorize(self, var: &str, width: i64) -> Self {
        self.push(Directive::Vectorize {
            var: var.into(),
            width: Some(width),
        })
    }

    /// Vectorizes a loop of constant extent as it is: one the schedule makes constant (the
    /// inner loop of a split) or bounds inference does (a producer's rows inside its consumer;
    /// lowering refuses it otherwise, see `lower::constant_extents`).
    pub fn vectorize_loop(self, var: &str) -> Self {
        self.push(Directive::Vectorize {
            var: var.into(),
            width: None,
        })
    }

    /// `unroll(var, factor)`: splits `var` by `factor` and unrolls the inner loop (`var.u`),
    /// keeping the name `var` for the outer one.
    pub fn unroll(self, var: &str, factor: i64) -> Self {
        self.push(Directive::Unroll {
            var: var.into(),
            factor: Some(factor),
        })
    }

    /// Unrolls a loop of constant extent completely; constant as for `vectorize_loop`.
    pub fn unroll_loop(self, var: &str) -> Self {
        self.push(Directive::Unroll {
            var: var.into(),
            factor: None,
        })
    }

    /// `parallel(var)`: the iterations of `var` run on the thread pool (refused on a loop that
    /// carries a reduction: see `rfactor`).
    pub fn parallel(self, var: &str) -> Self {
        self.push(Directive::Parallel { var: var.into() })
    }

    /// `compute_inline()`: the function is substituted into its consumers (a pure function's default).
    pub fn compute_inline(self) -> Self {
        self.push(Directive::ComputeInline)
    }

    /// `compute_root()`: the function is computed whole before its consumers run.
    pub fn compute_root(self) -> Self {
        self.push(Directive::ComputeRoot)
    }

    /// `compute_at(func, var)`: the function is computed inside the loop `var` of its consumer `func`,
    /// over the region one iteration reads (to name an update's loop, edit `directives_mut`).
    pub fn compute_at(self, func: &str, var: &str) -> Self {
        self.push(Directive::ComputeAt(LoopLevel {
            func: func.into(),
            stage: StageRef::Pure,
            var: var.into(),
        }))
    }

    /// `store_root()`: the function's buffer is allocated once, outside every loop.
    pub fn store_root(self) -> Self {
        self.push(Directive::StoreRoot)
    }

    /// `store_at(func, var)`: the function's buffer is allocated inside the loop `var` of `func`,
    /// at or outside its compute level.
    pub fn store_at(self, func: &str, var: &str) -> Self {
        self.push(Directive::StoreAt(LoopLevel {
            func: func.into(),
            stage: StageRef::Pure,
            var: var.into(),
        }))
    }

    /// `reorder_storage(..)`: the function's buffer laid out in this order of its dimensions,
    /// outermost first.
    pub fn reorder_storage(self, vars: &[&str]) -> Self {
        self.push(Directive::ReorderStorage(
            vars.iter().map(|v| v.to_string()).collect(),
        ))
    }

    /// Keeps `extent` slots of the buffer's dimension `var` (a circular buffer).
    pub fn fold_storage(self, var: &str, extent: i64) -> Self {
        self.push(Directive::FoldStorage {
            var: var.into(),
            extent,
        })
    }

    /// Starts the specialization of this stage for the calls where `cond` holds (see
    /// `Directive::Specialize`): the directives chained after it schedule that case.
    pub fn specialize(self, cond: &str) -> Self {
        self.push(Directive::Specialize(cond.trim().to_string()))
    }

    /// Factors this update's reduction over `var` into the new function `intermediate` (see
    /// `Directive::Rfactor`); the directives chained after it schedule the merge.
    pub fn rfactor(self, var: &str, intermediate: &str) -> Self {
        self.push(Directive::Rfactor {
            var: var.into(),
            intermediate: intermediate.into(),
        })
    }

    /// Makes `wrapper`, a copy of `producer` that this function reads instead.
    pub fn wrap(self, producer: &str, wrapper: &str) -> Self {
        self.push(Directive::Wrap {
            producer: producer.into(),
            wrapper: wrapper.into(),
        })
    }
}
