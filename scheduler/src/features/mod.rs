//! Loop-nest features: what a learned cost model reads from a lowered kernel (the program a
//! schedule makes, not the schedule's words), so that what it learns on one kernel carries to
//! another (Ansor's and Adams2019's featurization is the model). One walk over the final loop
//! IR, with the sizes bound, counts what runs: arithmetic per lane and per instruction,
//! transcendentals, loads and stores by how their lanes lie in memory, the bytes each access
//! brings in and at which cache level the loop that reuses them finds them again, loop
//! iterations, work under parallel loops and under guards, allocations. Counts are weighted by
//! how often their statement runs (the product of the enclosing loops' extents, at their upper
//! bounds, so a guarded tail counts as a whole iteration).

mod access;

use crate::ir::{Expr, ForKind, LoweredKernel, Stmt};
use crate::simplify::{bounds, Scope};
use access::{coefficient, footprint, is_transcendental, lanes_of, Lanes, Lets};
use std::collections::HashMap;
use strata_dsl::bounds::ConstantInterval;
use strata_dsl::{BinOp, Dtype};

/// Bumped whenever a feature's meaning changes: a model trained on other features is stale.
pub const FEATURE_VERSION: u32 = 2;

/// A first-level data cache's size, for the reuse estimate (most x86 cores have 32-48 KiB).
const L1_BYTES: f64 = 32.0 * 1024.0;
/// A second-level cache's size (1-2 MiB per core on recent x86).
const L2_BYTES: f64 = 1024.0 * 1024.0;
/// A loop whose extent bounds inference cannot bound counts as this many iterations.
const UNKNOWN_EXTENT: f64 = 16.0;

/// What one run of a lowered kernel does, counted from its loop nest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoopFeatures {
    /// Arithmetic operations per lane (a vector add of 8 lanes is 8).
    pub work: f64,
    /// Arithmetic instructions (a vector add is 1).
    pub instructions: f64,
    /// Arithmetic in indices (addresses), instructions.
    pub index_ops: f64,
    /// Transcendental calls per lane (`exp`, `log`, `pow`, ...).
    pub transcendentals: f64,
    /// Divisions and remainders per lane.
    pub divisions: f64,
    /// Load instructions.
    pub loads: f64,
    /// Bytes loaded.
    pub load_bytes: f64,
    /// Loads of consecutive lanes.
    pub dense_loads: f64,
    /// Vector loads of lanes scattered in memory (one element each).
    pub gathers: f64,
    /// Loads whose address does not move with the innermost loop.
    pub invariant_loads: f64,
    /// Loads whose address moves by more than one element with the innermost loop.
    pub strided_loads: f64,
    /// Store instructions.
    pub stores: f64,
    /// Bytes stored.
    pub store_bytes: f64,
    /// Vector stores of consecutive lanes.
    pub dense_stores: f64,
    /// Bytes accessed again, by a loop around them, while they still fit the first-level cache.
    pub l1_reuse_bytes: f64,
    /// Bytes accessed again while they fit the second-level cache but not the first.
    pub l2_reuse_bytes: f64,
    /// Bytes accessed without a reuse that fits a cache (streamed from memory, at best
    /// prefetched).
    pub streamed_bytes: f64,
    /// Loop iterations, every loop counted (the loops' overhead).
    pub iterations: f64,
    /// Iterations of innermost loops.
    pub innermost_iterations: f64,
    /// Work inside a parallel loop.
    pub parallel_work: f64,
    /// Tasks of parallel loops started (iterations of parallel loops).
    pub parallel_tasks: f64,
    /// Work under an `if` (tails, guards, specializations).
    pub guarded_work: f64,
    /// Allocations made (buffers allocated inside loops count once per iteration).
    pub allocations: f64,
    /// Bytes allocated, summed over allocations made.
    pub allocated_bytes: f64,
    /// Stages computed (`produce` statements run).
    pub produces: f64,
}

/// Applies `a.f += k * b.f` to every count `f` of [`LoopFeatures`].
macro_rules! add_scaled_fields {
    ($a:ident, $b:ident, $k:ident) => {
        $a.work += $k * $b.work;
        $a.instructions += $k * $b.instructions;
        $a.index_ops += $k * $b.index_ops;
        $a.transcendentals += $k * $b.transcendentals;
        $a.divisions += $k * $b.divisions;
        $a.loads += $k * $b.loads;
        $a.load_bytes += $k * $b.load_bytes;
        $a.dense_loads += $k * $b.dense_loads;
        $a.gathers += $k * $b.gathers;
        $a.invariant_loads += $k * $b.invariant_loads;
        $a.strided_loads += $k * $b.strided_loads;
        $a.stores += $k * $b.stores;
        $a.store_bytes += $k * $b.store_bytes;
        $a.dense_stores += $k * $b.dense_stores;
        $a.l1_reuse_bytes += $k * $b.l1_reuse_bytes;
        $a.l2_reuse_bytes += $k * $b.l2_reuse_bytes;
        $a.streamed_bytes += $k * $b.streamed_bytes;
        $a.iterations += $k * $b.iterations;
        $a.innermost_iterations += $k * $b.innermost_iterations;
        $a.parallel_work += $k * $b.parallel_work;
        $a.parallel_tasks += $k * $b.parallel_tasks;
        $a.guarded_work += $k * $b.guarded_work;
        $a.allocations += $k * $b.allocations;
        $a.allocated_bytes += $k * $b.allocated_bytes;
        $a.produces += $k * $b.produces;
    };
}

/// The names of [`LoopFeatures::vector`]'s entries, in order.
pub const FEATURE_NAMES: [&str; 27] = [
    "log_work",
    "log_instructions",
    "log_index_ops",
    "log_transcendentals",
    "log_divisions",
    "log_loads",
    "log_load_bytes",
    "log_stores",
    "log_store_bytes",
    "log_l1_reuse_bytes",
    "log_l2_reuse_bytes",
    "log_streamed_bytes",
    "log_iterations",
    "log_innermost_iterations",
    "log_parallel_tasks",
    "log_allocations",
    "log_allocated_bytes",
    "log_produces",
    "lanes_per_instruction",
    "dense_load_share",
    "gather_share",
    "invariant_load_share",
    "strided_load_share",
    "dense_store_share",
    "parallel_share",
    "guarded_share",
    "work_per_byte",
];

impl LoopFeatures {
    /// The features of `kernel` (its sizes bound, for loop extents to be known).
    pub fn of(kernel: &LoweredKernel) -> LoopFeatures {
        let mut walk = Walk::new(kernel);
        walk.stmt(&kernel.body);
        walk.features
    }

    /// The features of each function `kernel` computes (its `produce` statements, a
    /// producer computed inside its consumer's loops counted for itself only), in the order
    /// they first run; they add up to [`LoopFeatures::of`] less what runs outside every
    /// `produce`.
    pub fn per_function(kernel: &LoweredKernel) -> Vec<(String, LoopFeatures)> {
        let mut walk = Walk::new(kernel);
        walk.stages = Some(Vec::new());
        walk.stmt(&kernel.body);
        walk.stages.unwrap_or_default()
    }

    /// `self + k * other`, every count.
    fn add_scaled(&mut self, other: &LoopFeatures, k: f64) {
        add_scaled_fields!(self, other, k);
    }

    /// The features as a vector the model reads, named by [`FEATURE_NAMES`]: counts as
    /// `ln(1 + count)` (run times span orders of magnitude), mixes as shares in 0..=1.
    pub fn vector(&self) -> Vec<f64> {
        let log = |x: f64| x.max(0.0).ln_1p();
        let share = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
        let bytes = self.load_bytes + self.store_bytes;
        vec![
            log(self.work),
            log(self.instructions),
            log(self.index_ops),
            log(self.transcendentals),
            log(self.divisions),
            log(self.loads),
            log(self.load_bytes),
            log(self.stores),
            log(self.store_bytes),
            log(self.l1_reuse_bytes),
            log(self.l2_reuse_bytes),
            log(self.streamed_bytes),
            log(self.iterations),
            log(self.innermost_iterations),
            log(self.parallel_tasks),
            log(self.allocations),
            log(self.allocated_bytes),
            log(self.produces),
            share(self.work, self.instructions),
            share(self.dense_loads, self.loads),
            share(self.gathers, self.loads),
            share(self.invariant_loads, self.loads),
            share(self.strided_loads, self.loads),
            share(self.dense_stores, self.stores),
            share(self.parallel_work, self.work),
            share(self.guarded_work, self.work),
            log(share(self.work, bytes)),
        ]
    }
}

/// An enclosing loop: its variable, its extent (upper bound), whether it is parallel.
struct Loop {
    var: String,
    extent: f64,
}

/// The walk's state: the loops and lets around the statement, how often it runs, and the
/// counts so far.
struct Walk {
    loops: Vec<Loop>,
    lets: Lets,
    scope: Scope,
    /// How many times the current statement runs.
    trips: f64,
    parallel: bool,
    guarded: bool,
    /// Element types of the buffers (inputs, output, allocations).
    dtypes: HashMap<String, Dtype>,
    features: LoopFeatures,
    /// Per function, when asked for ([`LoopFeatures::per_function`]): the counts so far.
    stages: Option<Vec<(String, LoopFeatures)>>,
    /// Loops walked so far (a loop whose body adds none is innermost).
    loops_walked: usize,
    /// The `produce` statements being walked: each one's function, the counts when it
    /// began, and what the `produce` statements inside it counted.
    producing: Vec<(String, LoopFeatures, LoopFeatures)>,
}

impl Walk {
    fn new(kernel: &LoweredKernel) -> Walk {
        let mut dtypes: HashMap<String, Dtype> = kernel
            .inputs
            .iter()
            .map(|b| (b.name.clone(), b.dtype))
            .collect();
        dtypes.insert(kernel.output.name.clone(), kernel.output.dtype);
        Walk {
            loops: Vec::new(),
            lets: Vec::new(),
            scope: Scope::new(),
            trips: 1.0,
            parallel: false,
            guarded: false,
            dtypes,
            features: LoopFeatures::default(),
            stages: None,
            loops_walked: 0,
            producing: Vec::new(),
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => self.for_loop(var, min, extent, *kind, body),
            Stmt::Let { name, value, body } => {
                self.expr(value, is_address(value));
                let interval = bounds(value, &self.scope);
                self.scope.push_let(name, interval, value);
                self.lets.push((name.clone(), value.clone()));
                self.stmt(body);
                self.lets.pop();
                self.scope.pop();
            }
            Stmt::Block(stmts) => stmts.iter().for_each(|s| self.stmt(s)),
            Stmt::If {
                cond,
                then_case,
                else_case,
            } => {
                self.expr(cond, false);
                let outer = std::mem::replace(&mut self.guarded, true);
                self.stmt(then_case);
                if let Some(e) = else_case {
                    self.stmt(e);
                }
                self.guarded = outer;
            }
            Stmt::Allocate {
                buffer,
                dtype,
                size,
                body,
            } => {
                let size = self.upper_bound(size).unwrap_or(UNKNOWN_EXTENT);
                self.features.allocations += self.trips;
                self.features.allocated_bytes += self.trips * size * dtype.bytes() as f64;
                let outer = self.dtypes.insert(buffer.clone(), *dtype);
                self.stmt(body);
                restore(&mut self.dtypes, buffer, outer);
            }
            Stmt::Store {
                buffer,
                index,
                value,
            } => self.store(buffer, index, value),
            Stmt::Produce { func, body } => {
                self.features.produces += self.trips;
                let before = self.features.clone();
                self.producing
                    .push((func.clone(), before, LoopFeatures::default()));
                self.stmt(body);
                self.end_produce();
            }
            Stmt::Realize { body, .. } => self.stmt(body),
            Stmt::Provide { args, value, .. } => {
                args.iter().for_each(|a| self.expr(a, true));
                self.expr(value, false);
            }
            Stmt::NoOp => {}
        }
    }

    /// Files what the innermost `produce` counted, less its inner ones', under its function,
    /// and the whole under the enclosing `produce`'s inner counts.
    fn end_produce(&mut self) {
        let Some((func, before, inner)) = self.producing.pop() else {
            return;
        };
        let mut total = self.features.clone();
        total.add_scaled(&before, -1.0);
        if let Some((_, _, outer_inner)) = self.producing.last_mut() {
            outer_inner.add_scaled(&total, 1.0);
        }
        let Some(stages) = &mut self.stages else {
            return;
        };
        let mut own = total;
        own.add_scaled(&inner, -1.0);
        match stages.iter_mut().find(|(f, _)| *f == func) {
            Some((_, counts)) => counts.add_scaled(&own, 1.0),
            None => stages.push((func, own)),
        }
    }

    fn for_loop(&mut self, var: &str, min: &Expr, extent: &Expr, kind: ForKind, body: &Stmt) {
        let n = self.upper_bound(extent).unwrap_or(UNKNOWN_EXTENT).max(0.0);
        self.features.iterations += self.trips * n;
        self.loops_walked += 1;
        let loops_before = self.loops_walked;
        let interval = self.loop_interval(min, extent);
        self.scope.push(var, interval);
        self.loops.push(Loop {
            var: var.to_string(),
            extent: n,
        });
        let outer = (self.trips, self.parallel);
        self.trips *= n;
        if kind == ForKind::Parallel {
            self.features.parallel_tasks += outer.0 * n;
            self.parallel = true;
        }
        self.stmt(body);
        (self.trips, self.parallel) = outer;
        if self.loops_walked == loops_before {
            self.features.innermost_iterations += self.trips * n;
        }
        self.loops.pop();
        self.scope.pop();
    }

    /// The values a loop's variable takes: `min .. min + extent` at their bounds.
    fn loop_interval(&self, min: &Expr, extent: &Expr) -> Option<ConstantInterval> {
        let min = bounds(min, &self.scope)?;
        let extent = bounds(extent, &self.scope)?;
        Some(ConstantInterval::new(min.lo, min.hi + extent.hi - 1))
    }

    fn upper_bound(&self, e: &Expr) -> Option<f64> {
        bounds(e, &self.scope).map(|i| i.hi as f64)
    }

    fn store(&mut self, buffer: &str, index: &Expr, value: &Expr) {
        self.expr(index, true);
        self.expr(value, false);
        let elem = self.elem_bytes(buffer);
        let lanes = f64::from(value.ty().lanes);
        let f = &mut self.features;
        f.stores += self.trips;
        f.store_bytes += self.trips * lanes * elem;
        if lanes_of(index) == Lanes::Dense {
            f.dense_stores += self.trips;
        }
        let moves = self.moves(index);
        self.reuse(index, &moves, elem, lanes);
    }

    fn load(&mut self, buffer: &str, index: &Expr, lanes: f64) {
        let elem = self.elem_bytes(buffer);
        let f = &mut self.features;
        f.loads += self.trips;
        f.load_bytes += self.trips * lanes * elem;
        match lanes_of(index) {
            Lanes::Dense => f.dense_loads += self.trips,
            Lanes::Gather => f.gathers += self.trips,
            Lanes::Scalar | Lanes::Repeated => {}
        }
        let moves = self.moves(index);
        match moves.last().map(|(c, _)| *c) {
            Some(Some(0)) => self.features.invariant_loads += self.trips,
            Some(Some(1 | -1)) | None => {}
            Some(_) => self.features.strided_loads += self.trips,
        }
        self.reuse(index, &moves, elem, lanes);
    }

    /// How each enclosing loop (outermost first) moves `index`: its variable's coefficient
    /// ([`coefficient`]) and the loop's extent.
    fn moves(&self, index: &Expr) -> Vec<(Option<i64>, f64)> {
        (self.loops.iter())
            .map(|l| (coefficient(index, &l.var, &self.lets), l.extent))
            .collect()
    }

    /// Files the access's bytes under the cache level that holds them when the innermost loop
    /// that does not move the access (which reuses them) comes back to them: what the loops
    /// inside it touch, by this access alone, must still be cached.
    fn reuse(&mut self, index: &Expr, moves: &[(Option<i64>, f64)], elem: f64, lanes: f64) {
        let bytes = self.trips * lanes * elem;
        let reuser = moves.iter().rposition(|(c, n)| *c == Some(0) && *n > 1.0);
        let Some(at) = reuser else {
            self.features.streamed_bytes += bytes;
            return;
        };
        let dense = lanes_of(index) == Lanes::Dense;
        let vector_bytes = if dense { lanes * elem } else { elem };
        let touched = footprint(vector_bytes, elem, &moves[at + 1..]);
        let f = &mut self.features;
        if touched <= L1_BYTES {
            f.l1_reuse_bytes += bytes;
        } else if touched <= L2_BYTES {
            f.l2_reuse_bytes += bytes;
        } else {
            f.streamed_bytes += bytes;
        }
    }

    fn elem_bytes(&self, buffer: &str) -> f64 {
        self.dtypes.get(buffer).map_or(4, |d| d.bytes()) as f64
    }

    /// Counts the operations of `e` (as address arithmetic when `in_index`) and its loads.
    fn expr(&mut self, e: &Expr, in_index: bool) {
        match e {
            Expr::Load { buffer, index, ty } => {
                self.expr(index, true);
                self.load(buffer, index, f64::from(ty.lanes));
                return;
            }
            Expr::Let { name, value, body } => {
                self.expr(value, in_index || is_address(value));
                self.lets.push((name.clone(), (**value).clone()));
                self.expr(body, in_index);
                self.lets.pop();
                return;
            }
            Expr::Const(_) | Expr::Var(..) | Expr::Param(..) => return,
            // A cast to the type a value already has (`load as f32x8`) is no instruction.
            Expr::Cast(ty, value) if value.ty().dtype == ty.dtype => {}
            Expr::Ramp { .. } | Expr::Broadcast { .. } => {}
            _ => self.operation(e, in_index),
        }
        e.for_each_child(&mut |child| self.expr(child, in_index));
    }

    fn operation(&mut self, e: &Expr, in_index: bool) {
        let lanes = f64::from(e.ty().lanes);
        let f = &mut self.features;
        if in_index {
            f.index_ops += self.trips;
            return;
        }
        f.instructions += self.trips;
        f.work += self.trips * lanes;
        if self.parallel {
            f.parallel_work += self.trips * lanes;
        }
        if self.guarded {
            f.guarded_work += self.trips * lanes;
        }
        match e {
            Expr::Intrinsic(op, _) if is_transcendental(*op) => {
                f.transcendentals += self.trips * lanes;
            }
            Expr::Binary(BinOp::Div | BinOp::Mod, ..) => f.divisions += self.trips * lanes,
            _ => {}
        }
    }
}

/// Puts back what a name meant outside a binding.
fn restore(dtypes: &mut HashMap<String, Dtype>, name: &str, outer: Option<Dtype>) {
    match outer {
        Some(d) => dtypes.insert(name.to_string(), d),
        None => dtypes.remove(name),
    };
}

/// Whether a let's value is address arithmetic: a scalar `i32` (what lowering and CSE bind
/// loop bases, rows and flat offsets to; a kernel's own `i32` values bound by a let are
/// rarer, and counted as addresses too).
fn is_address(value: &Expr) -> bool {
    value.ty() == crate::ir::Type::I32
}

#[cfg(test)]
mod tests;
