//! The search space, derived from the pipeline with no user templates. A point (`Genome`) holds
//! one decision per gene: for each function where it is computed (inlined, at root, or at one of
//! its consumer's loops); for each stage a split factor per dimension (a tile), whether the
//! reduction loops run outside the tile's inner loops (register blocking), a vector width for the
//! innermost pure loop, an unroll factor for the loop outside it, and whether the outermost pure
//! loop is parallel, whether a contraction's strided operand is packed (`Pack`), and whether a
//! full reduction (a dot product's) is factored into parallel pieces (`rfactor`, the only way
//! to run it in parallel). `seeds` gives rule-made starting points. `schedule` turns a genome
//! into a legal `Schedule` (or `None` when validation refuses it); equal schedules are recognised by
//! the hash of their canonical text.
//!
//! The vector widths depend on the backend that compiles the candidates: Cranelift's are fixed
//! (`WIDTHS`: one to four of its 128-bit registers of f32), LLVM's follow the host's native
//! registers (`vector_widths`: up to two of them, so 32 f32 lanes with AVX-512), and the
//! stage templates of the seeds scale with the native width.

use rand::seq::IndexedRandom;
use rand::Rng;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use strata_dsl::ir::{Expr, InputKind, Pipeline, RVar, Update, UpdateOp};
use strata_dsl::{BinOp, Dtype};
use strata_jit::Backend;
use strata_schedule::lift_reductions::{lift_reductions, Lifted};
use strata_schedule::plan::Placement;
use strata_schedule::validate::validate;
use strata_schedule::{rfactor, Directive, LoopLevel, Schedule, StageRef};
use strata_scheduler::lower::limits::check_limits_within;

/// The largest definition, in expression nodes once inlined functions are substituted, a
/// schedule of the space may have (`Space::schedule`).
pub const MAX_INLINED_NODES: u64 = 1 << 16;

/// Split factors a gene can pick (1: no split).
pub const FACTORS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Cranelift's vector widths (0: scalar): its 128-bit registers hold 4 f32, so 1 to 4 of them.
pub const WIDTHS: [u32; 4] = [0, 4, 8, 16];
/// The narrowest vector LLVM's space offers: one 128-bit register of f32.
const MIN_LLVM_WIDTH: u32 = 4;
/// The widest vector any space offers: the scheduler's limit on a vector's lanes.
const MAX_WIDTH: u32 = strata_schedule::limits::MAX_LANES as u32;
/// Unroll factors (1: none).
pub const UNROLLS: [u32; 4] = [1, 2, 4, 8];
/// The pieces of a factored reduction (`StageGenes::rfactor`; 0: not factored).
pub const RFACTOR_CHUNKS: [u32; 4] = [0, 1024, 8192, 65536];

/// Where a function is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Place {
    /// Inlined into its consumers.
    Inline,
    /// Computed whole before its consumers.
    Root,
    /// At the loop this many levels into its consumer's stage (clamped to the deepest allowed).
    At(u8),
    /// As `At`, stored one loop further out (at root for the outermost loop), so that it
    /// slides: each iteration computes only what the previous ones did not
    /// (`store_at(g, yo).compute_at(g, yi)`, Halide's sliding window).
    Slide(u8),
}

/// The decisions for one stage.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct StageGenes {
    /// An index into `FACTORS` per dimension: pure dimensions first, then reduction ones.
    pub split: Vec<u8>,
    /// Put the reduction loops between the outer and the inner pure loops (a tile kept across
    /// the reduction) rather than innermost.
    pub reduction_outside: bool,
    /// An index into the space's `widths`.
    pub vector: u8,
    /// An index into `UNROLLS`.
    pub unroll: u8,
    /// Run the outermost loop in parallel (when it is a pure loop).
    pub parallel: bool,
    /// Vectorize the innermost loop when it is a reduction loop (legal for folds like `+=`
    /// and max), instead of the innermost pure loop.
    #[serde(default)]
    pub vector_reduction: bool,
    /// Unroll the inner loop of the innermost split reduction by 2 (sgemm's `k`).
    #[serde(default)]
    pub unroll_reduction: bool,
    /// Copy the stage's `StageShape::pack` operand into a contiguous buffer at an outer tile
    /// loop (sgemm's B per column tile). Set by the seeds; mutation leaves it as it is.
    #[serde(default)]
    pub pack: bool,
    /// An index into `RFACTOR_CHUNKS`: factor the stage's `StageShape::rfactor` variable into
    /// pieces of that many points (`rfactor`), the pieces' partial results computed in
    /// parallel and each vectorized as the stage's `vector` gene asks, then merged.
    #[serde(default)]
    pub rfactor: u8,
}

/// A point of the search space.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Genome {
    /// One per function of `Space::funcs` (the output's is ignored).
    pub places: Vec<Place>,
    /// One per stage of `Space::stages`.
    pub stages: Vec<StageGenes>,
}

/// A stage's own loops, by kind.
#[derive(Clone, Debug)]
pub struct StageShape {
    /// The function.
    pub func: String,
    /// Which of its stages.
    pub stage: StageRef,
    /// Its pure loops, outermost first.
    pub pure: Vec<String>,
    /// Its reduction loops.
    pub reduction: Vec<String>,
    /// The operand packing copies, for a contraction's update.
    pub pack: Option<Pack>,
    /// How the register-tile seeds shape a contraction's tile (`None`: as for sgemm, rows
    /// on the second innermost pure loop, the last reduction unrolled).
    pub tile: Option<RegisterTile>,
    /// The reduction variable `rfactor` may split into parallel pieces: the innermost one of a
    /// full reduction (an update of the output whose every pure loop has extent 1, like a dot
    /// product's), which has no other loop to run in parallel, when it is an associative fold.
    pub rfactor: Option<String>,
}

/// The loops of a contraction `f(..) += a(..) * b(..)` a register tile is made of, beside
/// its innermost pure loop (vectorized: the tile's columns). The rows are a pure dimension
/// that only the operand not reading the innermost one reads: each row's accumulators then
/// share one vector of the other operand, and each vector one broadcast of this one (sgemm's
/// `i` of `A(i, k)`; conv2d's `f` of `weights(f, c, ky, kx)`, where the second innermost
/// pure loop, `y`, would make every row load its own input vectors). The unrolled reduction
/// is the last whose extent is not a constant under 4 (sgemm's `k`; conv2d's `c`: its `kx`,
/// of 3, split by 2 leaves a guarded half iteration).
#[derive(Clone, Debug, PartialEq)]
pub struct RegisterTile {
    /// The pure dimension the tile's rows unroll.
    pub rows: String,
    /// The reduction dimension split by 2 and unrolled.
    pub reduction: String,
}

/// What packing copies for a contraction `f(..) += a(..) * b(..)`: its strided operand, the
/// one read at bare variables whose rows the reduction walks (sgemm's `B(k, j)`: each step of
/// `k` jumps a row; conv2d's `weights(f, c, ky, kx)`, the only operand read at bare variables:
/// the tile's filters lie a whole filter apart). Halide's sgemm schedule packs B this way
/// (`B.in().compute_at(C, jo)`). The copy is a wrapper (`wrap`) computed at the outer loop of
/// the tile dimension it is indexed by, that loop moved outermost so each copy serves every
/// other tile, stored with that dimension innermost so the microkernel reads it unit-stride.
#[derive(Clone, Debug, PartialEq)]
pub struct Pack {
    /// The operand copied (an input or function).
    pub operand: String,
    /// The stage's pure variables the operand is indexed by.
    pub pure: Vec<String>,
    /// The copy's variables (named after the update's reads), in the operand's order.
    pub vars: Vec<String>,
    /// The copy's variables in storage order: those of reduction variables first, then
    /// `pure`, each group in the operand's order.
    pub storage: Vec<String>,
}

/// The most levels of `compute_at` a seed nests below a function at root (see
/// `Space::cap_seed_nesting`).
const SEED_NESTING: usize = 3;

/// The space of one pipeline, for one backend.
pub struct Space {
    /// The pipeline with inline reductions lifted to update definitions (what schedules name).
    pub lifted: Lifted,
    /// Functions in consumers-first order.
    pub funcs: Vec<(
        String,
        bool, /* has updates */
        bool, /* is output */
    )>,
    /// Every stage's loops.
    pub stages: Vec<StageShape>,
    /// The backend the candidates are compiled with.
    pub backend: Backend,
    /// How many lanes of the kernel's widest element type one vector register of the backend
    /// holds on this host.
    pub native_lanes: u32,
    /// The vector widths a stage may pick (0: scalar), ascending; `StageGenes::vector`
    /// indexes it.
    pub widths: Vec<u32>,
    /// The rules the seeds apply to every stage, for these widths.
    templates: Vec<Template>,
}

impl Space {
    /// The space of `pipeline` compiled with Cranelift.
    pub fn new(pipeline: &Pipeline) -> Space {
        Space::for_backend(pipeline, Backend::Cranelift)
    }

    /// The space of `pipeline` compiled with `backend` on this host: its vector widths and
    /// seed templates follow the backend's native vector of the kernel's widest element type.
    pub fn for_backend(pipeline: &Pipeline, backend: Backend) -> Space {
        let lifted = lift_reductions(pipeline);
        let out = lifted.pipeline.output.name.clone();
        let order: Vec<_> = lifted
            .pipeline
            .topo_order()
            .into_iter()
            .rev()
            .cloned()
            .collect();
        let funcs = order
            .iter()
            .map(|f| (f.name.clone(), !f.updates.is_empty(), f.name == out))
            .collect();
        let mut stages = Vec::new();
        for f in &order {
            stages.push(StageShape {
                func: f.name.clone(),
                stage: StageRef::Pure,
                pure: f.vars.clone(),
                reduction: Vec::new(),
                pack: None,
                tile: None,
                rfactor: None,
            });
            for (i, u) in f.updates.iter().enumerate() {
                let pure: Vec<String> = f
                    .vars
                    .iter()
                    .zip(&u.args)
                    .filter(|(v, a)| matches!(a, Expr::Var(n) if n == *v))
                    .map(|(v, _)| v.clone())
                    .collect();
                let reduction = u.rvars.iter().map(|r| r.name.clone()).collect();
                let full = f.name == out && full_reduction(&lifted.pipeline);
                let factorable = full && rfactor::factorable(&lifted.pipeline, f, u);
                stages.push(StageShape {
                    rfactor: (u.rvars.last())
                        .filter(|_| factorable)
                        .map(|r| r.name.clone()),
                    func: f.name.clone(),
                    stage: StageRef::Update(i),
                    pack: strided_operand(u, &pure),
                    tile: register_tile(u, &pure),
                    pure,
                    reduction,
                });
            }
        }
        let native_lanes = u32::from(backend.native_lanes(widest_dtype(pipeline))).max(1);
        let widths = vector_widths(backend, native_lanes);
        let contraction = stages.iter().any(|s| s.tile.is_some());
        let templates = templates(native_lanes, &widths, contraction);
        Space {
            lifted,
            funcs,
            stages,
            backend,
            native_lanes,
            widths,
            templates,
        }
    }

    /// The default schedule's genome: everything as the language defaults leave it.
    pub fn default_genome(&self) -> Genome {
        Genome {
            places: self
                .funcs
                .iter()
                .map(|(_, updates, _)| if *updates { Place::Root } else { Place::Inline })
                .collect(),
            stages: self
                .stages
                .iter()
                .map(|s| StageGenes {
                    split: vec![0; s.pure.len() + s.reduction.len()],
                    reduction_outside: false,
                    vector: 0,
                    unroll: 0,
                    parallel: false,
                    vector_reduction: false,
                    unroll_reduction: false,
                    pack: false,
                    rfactor: 0,
                })
                .collect(),
        }
    }

    /// Rule-made starting points, measured before the search proper (TVM's MetaSchedule
    /// builds its space from rules like these, and Halide's autoschedulers start from similar
    /// templates): each placement of the producers (all at their consumer's outermost loop;
    /// pure ones at its second loop; all at root; pure ones inlined) crossed with each `Template`,
    /// applied to every stage. A stage the template makes illegal keeps the default decisions;
    /// placements the validator refuses give no seed, and seeds giving one schedule count once.
    pub fn seeds(&self) -> Vec<Genome> {
        // (for pure functions, for reductions): a reduction placed deeper than its consumer's
        // outermost loop would be recomputed for every inner tile.
        let placements = [
            (Place::At(0), Place::At(0)),
            (Place::At(1), Place::At(0)),
            (Place::Root, Place::Root),
            (Place::Inline, Place::At(0)),
        ];
        let (mut out, mut hashes) = (Vec::new(), std::collections::HashSet::new());
        for &template in &self.templates {
            for (pure, reducing) in placements {
                let mut g = self.default_genome();
                for (slot, (_, has_updates, _)) in g.places.iter_mut().zip(&self.funcs) {
                    *slot = if *has_updates { reducing } else { pure };
                }
                self.cap_seed_nesting(&mut g);
                if self.schedule(&g).is_none() {
                    continue;
                }
                self.apply_template(&mut g, template);
                if let Some(schedule) = self.schedule(&g) {
                    if hashes.insert(schedule_hash(&schedule)) {
                        out.push(g);
                    }
                }
            }
        }
        out
    }

    /// `g` with every function more than [`SEED_NESTING`] levels of `compute_at` below a
    /// function computed at root (or the output) computed at root instead. Down a pyramid,
    /// each level computed inside its consumer's loop recomputes the levels below it for
    /// every iteration: the local Laplacian's all-`compute_at` seeds each ran into the
    /// timeout. Up to three levels (a stencil inside its consumer's rows, producers of that)
    /// are left as they are: the seeds of the small kernels do not change (with two,
    /// softmax's or matmul's did).
    fn cap_seed_nesting(&self, g: &mut Genome) {
        let pipeline = &self.lifted.pipeline;
        let mut depth: HashMap<&str, usize> = HashMap::new();
        for (i, (name, _, is_output)) in self.funcs.iter().enumerate() {
            let nested = !*is_output && matches!(g.places[i], Place::At(_) | Place::Slide(_));
            let below = (pipeline.funcs.iter())
                .filter(|c| c.callees().contains(name))
                .filter_map(|c| depth.get(c.name.as_str()))
                .max()
                .copied()
                .unwrap_or(0);
            let d = match nested {
                true if below + 1 > SEED_NESTING => {
                    g.places[i] = Place::Root;
                    0
                }
                true => below + 1,
                false => 0,
            };
            depth.insert(name, d);
        }
    }

    /// `g` with `template` applied to every stage it leaves legal: to all at once where that
    /// is legal (one validation, not one per stage: a pipeline of 84 functions has about as
    /// many stages), else stage by stage, each kept if the schedule stays legal.
    fn apply_template(&self, g: &mut Genome, template: Template) {
        let templated: Vec<StageGenes> = (self.stages.iter())
            .map(|shape| template.genes(shape, &self.widths))
            .collect();
        let before = std::mem::replace(&mut g.stages, templated.clone());
        if self.schedule(g).is_some() {
            return;
        }
        g.stages = before;
        for (s, genes) in templated.into_iter().enumerate() {
            let before = std::mem::replace(&mut g.stages[s], genes);
            if self.schedule(g).is_none() {
                g.stages[s] = before;
            }
        }
    }

    /// A random point of the space: every decision drawn at random.
    pub fn random(&self, rng: &mut impl Rng) -> Genome {
        let mut g = self.default_genome();
        for i in 0..g.places.len() {
            g.places[i] = random_place(self.funcs[i].1, rng);
        }
        for (genes, shape) in g.stages.iter_mut().zip(&self.stages) {
            *genes = random_stage(shape, self.widths.len(), rng);
        }
        g
    }

    /// `g` with one decision changed.
    pub fn mutate(&self, g: &Genome, rng: &mut impl Rng) -> Genome {
        let mut g = g.clone();
        let placeable: Vec<usize> = (0..g.places.len()).filter(|&i| !self.funcs[i].2).collect();
        if !placeable.is_empty() && rng.random_bool(0.25) {
            let i = *placeable.choose(rng).unwrap_or(&0);
            g.places[i] = random_place(self.funcs[i].1, rng);
            return g;
        }
        let s = rng.random_range(0..g.stages.len());
        let genes = &mut g.stages[s];
        match rng.random_range(0..7) {
            0 if !genes.split.is_empty() => {
                let d = rng.random_range(0..genes.split.len());
                genes.split[d] = rng.random_range(0..FACTORS.len() as u8);
            }
            1 => genes.reduction_outside = !genes.reduction_outside,
            2 => genes.vector = rng.random_range(0..self.widths.len() as u8),
            3 => genes.unroll = rng.random_range(0..UNROLLS.len() as u8),
            4 => genes.vector_reduction = !genes.vector_reduction,
            5 => genes.unroll_reduction = !genes.unroll_reduction,
            _ => genes.parallel = !genes.parallel,
        }
        // Only full reductions have the gene, so other spaces draw what they always drew.
        if self.stages[s].rfactor.is_some() && rng.random_bool(0.5) {
            g.stages[s].rfactor = rng.random_range(0..RFACTOR_CHUNKS.len() as u8);
        }
        g
    }

    /// A child taking each function's decisions from one parent or the other.
    pub fn crossover(&self, a: &Genome, b: &Genome, rng: &mut impl Rng) -> Genome {
        let mut child = a.clone();
        for (i, (name, ..)) in self.funcs.iter().enumerate() {
            if rng.random_bool(0.5) {
                child.places[i] = b.places[i];
                for (s, shape) in self.stages.iter().enumerate() {
                    if &shape.func == name {
                        child.stages[s] = b.stages[s].clone();
                    }
                }
            }
        }
        child
    }

    /// The legal schedule a genome describes, or `None`.
    pub fn schedule(&self, g: &Genome) -> Option<Schedule> {
        let mut schedule = Schedule::new();
        // Function by function, consumers first: a placement needs its consumer's final loops,
        // and a producer's loop directives are only legal once it is placed (an inlined
        // function has no loops, so its stage genes are ignored).
        for (i, (name, _, is_output)) in self.funcs.iter().enumerate() {
            let place = if *is_output {
                None
            } else {
                Some(*g.places.get(i)?)
            };
            if let Some(place) = place {
                let directives = self.placement(&schedule, name, place)?;
                let line = schedule.stage(name, StageRef::Pure).directives_mut();
                line.splice(0..0, directives);
            }
            if place != Some(Place::Inline) {
                for (shape, genes) in self.stages.iter().zip(&g.stages) {
                    if &shape.func == name && !self.rfactor(&mut schedule, shape, genes) {
                        for d in stage_directives(shape, genes, &self.widths) {
                            schedule
                                .stage(&shape.func, shape.stage)
                                .directives_mut()
                                .push(d);
                        }
                        self.pack(&mut schedule, shape, genes);
                    }
                }
            }
        }
        // Once, for the whole schedule: validating after each function (about as many
        // validations as functions, each of the whole pipeline) made a schedule of the
        // 84-function local Laplacian take seconds to build. A placement and the loops it
        // names come from the consumer's directives, which precede it, legal or not; an
        // illegal schedule is refused here all the same.
        let plan = validate(&self.lifted, &schedule).ok()?;
        // A schedule lowering would refuse as too large (pyramid levels inlined into one
        // another: millions of nodes) is not a point of the space: measured, it was a trial
        // spent on a compile error, two of every three on the 10-level interpolation.
        // Nor is one lowering accepts but far past what is worth measuring: a definition with
        // pyramid levels inlined into one another (hundreds of thousands of nodes) took seconds
        // to lower and compile and ran 30-80 times slower than the best: the interpolation's
        // timeouts (10 s each) and the bilateral grid's slowest candidates were all past
        // `MAX_INLINED_NODES`, the examples' default and hand schedules all below a fifth of
        // it (the largest: 13,470 nodes).
        check_limits_within(&plan, MAX_INLINED_NODES).ok()?;
        schedule.lines.retain(|l| !l.directives.is_empty());
        Some(schedule)
    }

    /// The lines packing `shape`'s operand when `genes` ask for it: `f: wrap(B, B_p)` and
    /// `B_p: compute_at(f.update(0), j_o).reorder_storage(..).reorder(..).vectorize(..)`, the
    /// copy's loops in its storage order, the innermost vectorized as wide as the stage's.
    fn pack(&self, schedule: &mut Schedule, shape: &StageShape, genes: &StageGenes) {
        let (Some(pack), Some(at)) = (&shape.pack, pack_loop(shape, genes)) else {
            return;
        };
        let wrapper = self.fresh_name(&format!("{}_p", pack.operand));
        schedule.func(&shape.func).wrap(&pack.operand, &wrapper);
        let line = schedule.func(&wrapper).directives_mut();
        line.push(Directive::ComputeAt(LoopLevel {
            func: shape.func.clone(),
            stage: shape.stage,
            var: at,
        }));
        if pack.storage != pack.vars {
            line.push(Directive::ReorderStorage(pack.storage.clone()));
            line.push(Directive::Reorder(pack.storage.clone()));
        }
        let width = width_at(&self.widths, genes.vector);
        if let (Some(innermost), true) = (pack.storage.last(), width > 0) {
            line.push(Directive::Vectorize {
                var: innermost.clone(),
                width: Some(i64::from(width)),
            });
        }
    }

    /// The lines factoring `shape`'s reduction when `genes` ask for it (whether they did):
    /// `f.update(i): split(k, k_rf, k_in, C).rfactor(k_rf, f_rf)` and `f_rf.update(0):
    /// parallel(k_rf).vectorize(k_in, w)`, the pieces in parallel, each a vectorized fold (`w`
    /// the stage's width; without a width, or where the fold cannot be vectorized, scalar).
    /// The merge, over the pieces, keeps the default loops.
    fn rfactor(&self, schedule: &mut Schedule, shape: &StageShape, genes: &StageGenes) -> bool {
        let chunk = RFACTOR_CHUNKS[genes.rfactor as usize % RFACTOR_CHUNKS.len()];
        let Some(var) = shape.rfactor.as_ref().filter(|_| chunk > 0) else {
            return false;
        };
        let (pieces, inner) = (format!("{var}_rf"), format!("{var}_in"));
        let intermediate = self.fresh_name(&format!("{}_rf", shape.func));
        (schedule.stage(&shape.func, shape.stage))
            .split(var, &pieces, &inner, i64::from(chunk))
            .rfactor(&pieces, &intermediate);
        let line = schedule
            .stage(&intermediate, StageRef::Update(0))
            .parallel(&pieces);
        let width = width_at(&self.widths, genes.vector);
        if width > 0 {
            line.vectorize(&inner, i64::from(width));
            if validate(&self.lifted, schedule).is_err() {
                schedule
                    .stage(&intermediate, StageRef::Update(0))
                    .directives_mut()
                    .pop();
            }
        }
        true
    }

    /// `base`, or `base` with more `_p` until no function, input or size has the name.
    fn fresh_name(&self, base: &str) -> String {
        let pipeline = &self.lifted.pipeline;
        let mut name = base.to_string();
        let taken = |n: &str| {
            pipeline.func(n).is_some()
                || pipeline.input(n).is_some()
                || pipeline.size_vars().iter().any(|s| s == n)
        };
        while taken(&name) {
            name.push_str("_p");
        }
        name
    }

    /// The placement directives of `place` for `name`: where it is computed, and for `Slide`
    /// where it is stored.
    fn placement(&self, schedule: &Schedule, name: &str, place: Place) -> Option<Vec<Directive>> {
        let depth = match place {
            Place::Inline => return Some(vec![Directive::ComputeInline]),
            Place::Root => return Some(vec![Directive::ComputeRoot]),
            Place::At(depth) | Place::Slide(depth) => depth,
        };
        let plan = validate(&self.lifted, schedule).ok()?;
        let host = plan.host(name)?;
        let (consumer, stage, limit) = (host.func, host.stage, host.enclosing_loops);
        let dims = &plan.funcs.get(&consumer)?.stages.get(stage)?.dims;
        let usable = dims
            .iter()
            .take_while(|d| d.kind != strata_schedule::ForKind::Vectorized)
            .count()
            .min(limit);
        if usable == 0 || plan.funcs.get(&consumer)?.compute == Placement::Inline {
            return Some(vec![Directive::ComputeRoot]);
        }
        let position = (depth as usize).min(usable - 1);
        let stage = if stage == 0 {
            StageRef::Pure
        } else {
            StageRef::Update(stage - 1)
        };
        let at = |var: &str| LoopLevel {
            func: consumer.clone(),
            stage,
            var: var.to_string(),
        };
        let compute = Directive::ComputeAt(at(&dims[position].name));
        if !matches!(place, Place::Slide(_)) {
            return Some(vec![compute]);
        }
        // The loops are listed outermost first.
        let store = match position.checked_sub(1) {
            Some(outer) => Directive::StoreAt(at(&dims[outer].name)),
            None => Directive::StoreRoot,
        };
        Some(vec![compute, store])
    }
}

/// A rule for one stage's loops, as the seeds apply it.
#[derive(Clone, Copy)]
enum Template {
    /// Vectorize the innermost loop `width` wide (the innermost reduction loop when
    /// `reductions`, as for a row max or sum); the outermost loop parallel.
    Vector { width: u32, reductions: bool },
    /// Tile the two innermost pure dimensions `rows` x `cols`, vectorize `width` wide. As a
    /// `register` tile (multi-level tiling for a contraction): the reductions run outside the
    /// tile, whose rows are unrolled, and a reduction is split by 2 and unrolled (the rows and
    /// the reduction of the stage's `RegisterTile` when it has one).
    Tile {
        rows: u32,
        cols: u32,
        width: u32,
        register: bool,
        /// Also pack the contraction's strided operand (`StageGenes::pack`).
        pack: bool,
    },
}

/// The seeds' templates for vectors of `native` lanes per register, using only `widths`.
/// "Two registers" (`pair`) is the width of the main templates and of the register tile's
/// columns: a 4-row tile then keeps 8 vector accumulators, enough independent fma chains to
/// hide the latency on either backend. The second vector template is the widest other width,
/// and the stencil tile uses the widest. For Cranelift (4 lanes, widths up to 16) these are
/// the templates strata always had: vectorize 8 and 16, a 4x8 register tile, a 16x64 tile
/// vectorized 16 wide. A pipeline with a contraction (`contraction`) also gets an 8-row
/// register tile one register wide: 8 accumulators again, each step one vector load and 8
/// broadcasts (conv2d's hand schedule on Cranelift, 8 filters x 4 columns: its 4x8 tile was
/// about 1.5x slower, and the 54 columns leave it a longer tail).
fn templates(native: u32, widths: &[u32], contraction: bool) -> Vec<Template> {
    let widest = widths.iter().copied().max().unwrap_or(0);
    let pair = widths
        .iter()
        .copied()
        .filter(|&w| w <= native.saturating_mul(2))
        .max()
        .unwrap_or(widest);
    let other = widths
        .iter()
        .copied()
        .filter(|&w| w > 0 && w != pair)
        .max()
        .unwrap_or(pair);
    let mut templates = vec![
        Template::Vector {
            width: pair,
            reductions: true,
        },
        Template::Vector {
            width: other,
            reductions: true,
        },
        Template::Vector {
            width: pair,
            reductions: false,
        },
        Template::Tile {
            rows: 4,
            cols: pair,
            width: pair,
            register: true,
            pack: false,
        },
        Template::Tile {
            rows: 16,
            cols: 64,
            width: widest,
            register: false,
            pack: false,
        },
        Template::Tile {
            rows: 4,
            cols: pair,
            width: pair,
            register: true,
            pack: true,
        },
    ];
    if contraction && widths.contains(&native) && native != pair {
        templates.push(Template::Tile {
            rows: 8,
            cols: native,
            width: native,
            register: true,
            pack: false,
        });
    }
    templates
}

/// The vector widths (0 first: scalar) of `backend`'s space when its registers hold `native`
/// lanes. Cranelift keeps `WIDTHS` whatever the type (its candidates stay those it always
/// had). LLVM gets every power of two from a quarter register (at least `MIN_LLVM_WIDTH`) to
/// two registers (at least 16, at most the scheduler's `MAX_WIDTH`): 4, 8, 16, 32 for f32 on
/// AVX-512; 4, 8, 16 for f32 on AVX2 or SSE.
pub fn vector_widths(backend: Backend, native: u32) -> Vec<u32> {
    if backend == Backend::Cranelift {
        return WIDTHS.to_vec();
    }
    let lo = (native / 4).max(MIN_LLVM_WIDTH);
    // MAX_WIDTH (64) is above 16, so `clamp` cannot panic.
    let hi = native.saturating_mul(2).clamp(16, MAX_WIDTH);
    let mut widths = vec![0];
    let mut w = lo.next_power_of_two();
    while w <= hi {
        widths.push(w);
        w *= 2;
    }
    widths
}

/// The widest element type `pipeline` computes or reads: it takes the most registers per
/// vector, so it decides how many lanes fit in one.
fn widest_dtype(pipeline: &Pipeline) -> Dtype {
    let buffers = pipeline
        .inputs
        .iter()
        .filter(|i| matches!(i.kind, InputKind::Buffer { .. }))
        .map(|i| i.dtype);
    let funcs = pipeline.funcs.iter().map(|f| f.dtype);
    buffers
        .chain(funcs)
        .max_by_key(|d| d.bytes())
        .unwrap_or(Dtype::F32)
}

impl Template {
    /// The genes this template gives `shape`, with widths as indices into `widths`.
    fn genes(self, shape: &StageShape, widths: &[u32]) -> StageGenes {
        let (pure, dims) = (shape.pure.len(), shape.pure.len() + shape.reduction.len());
        let mut g = StageGenes {
            split: vec![0; dims],
            reduction_outside: false,
            vector: 0,
            unroll: 0,
            parallel: true,
            vector_reduction: false,
            unroll_reduction: false,
            pack: false,
            rfactor: 0,
        };
        match self {
            Template::Vector { width, reductions } => {
                g.vector = index_of(widths, width);
                g.vector_reduction = reductions && !shape.reduction.is_empty();
                // A full reduction's vector folds run in parallel pieces.
                if reductions && shape.rfactor.is_some() {
                    g.rfactor = index_of(&RFACTOR_CHUNKS, 8192);
                }
            }
            Template::Tile {
                rows,
                cols,
                width,
                register,
                pack,
            } => {
                g.pack = pack && shape.pack.is_some();
                if pure >= 1 {
                    g.split[pure - 1] = index_of(&FACTORS, cols);
                }
                let tile = shape.tile.as_ref().filter(|_| register);
                let row_dim = tile
                    .and_then(|t| shape.pure.iter().position(|d| *d == t.rows))
                    .or(pure.checked_sub(2));
                if let Some(d) = row_dim.filter(|&d| d + 1 < pure) {
                    g.split[d] = index_of(&FACTORS, rows);
                }
                g.vector = index_of(widths, width);
                if register && dims > pure {
                    let unrolled = tile
                        .and_then(|t| shape.reduction.iter().position(|r| *r == t.reduction))
                        .map_or(dims - 1, |r| pure + r);
                    g.reduction_outside = true;
                    g.unroll = index_of(&UNROLLS, rows);
                    g.split[unrolled] = index_of(&FACTORS, 2);
                    g.unroll_reduction = true;
                }
            }
        }
        g
    }
}

/// The width gene `index` picks from `widths` (wrapping, as a genome recorded for another
/// space may hold any index; an empty table is scalar).
pub fn width_at(widths: &[u32], index: u8) -> u32 {
    match widths.len() {
        0 => 0,
        n => widths[index as usize % n],
    }
}

/// Where `value` is in `table` (the tables above hold every value the templates use).
fn index_of(table: &[u32], value: u32) -> u8 {
    table.iter().position(|&v| v == value).unwrap_or(0) as u8
}

fn random_place(has_updates: bool, rng: &mut impl Rng) -> Place {
    match rng.random_range(0..4) {
        0 if !has_updates => Place::Inline,
        1 => Place::Root,
        2 => Place::Slide(rng.random_range(0..4)),
        _ => Place::At(rng.random_range(0..4)),
    }
}

/// Random genes for `shape`, the vector width among `widths` choices.
fn random_stage(shape: &StageShape, widths: usize, rng: &mut impl Rng) -> StageGenes {
    let dims = shape.pure.len() + shape.reduction.len();
    StageGenes {
        split: (0..dims).map(|_| rng.random_range(0..5u8)).collect(),
        reduction_outside: rng.random_bool(0.5),
        vector: rng.random_range(0..widths as u8),
        unroll: rng.random_range(0..UNROLLS.len() as u8),
        parallel: rng.random_bool(0.5),
        vector_reduction: !shape.reduction.is_empty() && rng.random_bool(0.5),
        unroll_reduction: !shape.reduction.is_empty() && rng.random_bool(0.5),
        pack: false,
        rfactor: match shape.rfactor {
            Some(_) => rng.random_range(0..RFACTOR_CHUNKS.len() as u8),
            None => 0,
        },
    }
}

/// Whether the output is one value (every extent the constant 1, or none): its reduction is a
/// full one, whose only parallelism is in the reduction itself.
fn full_reduction(pipeline: &Pipeline) -> bool {
    let one = |e: &Expr| matches!(e, Expr::Const(v) if v.as_i64() == Some(1));
    pipeline.output.extents.iter().all(one)
}

/// The contraction's operand packing copies (see `Pack`), if `update` is `f(..) += a * b` with
/// an operand read at bare variables, at least one a reduction variable: of two such, the one
/// whose last index is one of the stage's `pure` variables (walked along a row by the tile).
fn strided_operand(update: &Update, pure: &[String]) -> Option<Pack> {
    let (a, b) = contraction_operands(update)?;
    let bare = |e: &Expr| match e {
        Expr::Call(call) => {
            let vars: Option<Vec<(String, bool)>> = (call.args.iter())
                .map(|a| match a {
                    Expr::Var(v) => Some((v.clone(), pure.contains(v))),
                    Expr::RVar(v) => Some((v.clone(), false)),
                    _ => None,
                })
                .collect();
            vars.filter(|v| v.iter().any(|(_, p)| !p))
                .map(|v| (call.name.clone(), v))
        }
        _ => None,
    };
    let candidates: Vec<(String, Vec<(String, bool)>)> =
        [a, b].into_iter().filter_map(bare).collect();
    let row_walked =
        |(_, vars): &&(String, Vec<(String, bool)>)| vars.last().is_some_and(|(_, p)| *p);
    let (operand, vars) = candidates.iter().find(row_walked).or(candidates.last())?;
    let (pure_vars, reduced): (Vec<_>, Vec<_>) = vars.iter().partition(|(_, p)| *p);
    let names =
        |vs: Vec<&(String, bool)>| vs.into_iter().map(|(v, _)| v.clone()).collect::<Vec<_>>();
    let pure_vars = names(pure_vars);
    let storage = names(reduced)
        .into_iter()
        .chain(pure_vars.clone())
        .collect();
    Some(Pack {
        operand: operand.clone(),
        pure: pure_vars,
        vars: vars.iter().map(|(v, _)| v.clone()).collect(),
        storage,
    })
}

/// The register tile of a contraction `update` with pure loops `pure` ([`RegisterTile`]),
/// when its value is a product of two operands of which exactly one reads the innermost pure
/// dimension, and the other reads another pure dimension the first does not.
fn register_tile(update: &Update, pure: &[String]) -> Option<RegisterTile> {
    let (a, b) = contraction_operands(update)?;
    let innermost = pure.last()?;
    // `vector` is the operand read along the innermost loop, `broadcast` the other.
    let (vector, broadcast) = match (reads(a, innermost), reads(b, innermost)) {
        (true, false) => (a, b),
        (false, true) => (b, a),
        _ => return None,
    };
    let rows = pure
        .iter()
        .rev()
        .find(|d| reads(broadcast, d) && !reads(vector, d))?;
    let small = |r: &&RVar| match (&r.lo, &r.hi) {
        (Expr::Const(lo), Expr::Const(hi)) => {
            matches!((lo.as_i64(), hi.as_i64()), (Some(lo), Some(hi)) if hi - lo < 4)
        }
        _ => false,
    };
    let reduction = (update.rvars.iter().rev().find(|r| !small(r))).or(update.rvars.last())?;
    Some(RegisterTile {
        rows: rows.clone(),
        reduction: reduction.name.clone(),
    })
}

/// The two operands of a contraction `f(..) += a * b`, if `update` is one.
fn contraction_operands(update: &Update) -> Option<(&Expr, &Expr)> {
    match &update.value {
        Expr::Binary(BinOp::Mul, a, b) if update.op == UpdateOp::Add => Some((a, b)),
        _ => None,
    }
}

/// Whether `e` reads the pure or reduction variable `var`.
fn reads(e: &Expr, var: &str) -> bool {
    let mut found = false;
    e.for_each(&mut |x| found |= matches!(x, Expr::Var(v) | Expr::RVar(v) if v == var));
    found
}

/// The outer loop of a pure dimension after the stage's splits: `d_o`, or `d` unsplit.
fn outer_loop(shape: &StageShape, g: &StageGenes, dim: &str) -> Option<String> {
    let at = shape.pure.iter().position(|d| d == dim)?;
    let factor = FACTORS[*g.split.get(at)? as usize % FACTORS.len()];
    Some(if factor > 1 {
        format!("{dim}_o")
    } else {
        dim.to_string()
    })
}

/// The loop packing computes its copy at, when `g` packs: the outer loop of the last pure
/// dimension the operand is indexed by.
fn pack_loop(shape: &StageShape, g: &StageGenes) -> Option<String> {
    let pack = shape.pack.as_ref().filter(|_| g.pack)?;
    outer_loop(shape, g, pack.pure.last()?)
}

/// The loop directives of one stage: splits, the loop order, vectorize (a width of
/// `widths`), unroll, parallel.
fn stage_directives(shape: &StageShape, g: &StageGenes, widths: &[u32]) -> Vec<Directive> {
    let mut out = Vec::new();
    let mut outer = Vec::new();
    let mut inner = Vec::new();
    let (mut red_outer, mut red_inner) = (Vec::new(), Vec::new());
    let dims = shape
        .pure
        .iter()
        .map(|d| (d, true))
        .chain(shape.reduction.iter().map(|d| (d, false)));
    // Where the last split reduction's outer loop is in `red_outer` (its inner loop is the one
    // `unroll_reduction` unrolls).
    let mut last_split_reduction = None;
    for ((dim, pure), &f) in dims.zip(&g.split) {
        let factor = FACTORS[f as usize % FACTORS.len()];
        let (o, i) = (format!("{dim}_o"), format!("{dim}_i"));
        let (outer_list, inner_list) = if pure {
            (&mut outer, &mut inner)
        } else {
            (&mut red_outer, &mut red_inner)
        };
        if factor > 1 && !pure {
            last_split_reduction = Some(outer_list.len());
        }
        if factor > 1 {
            out.push(Directive::Split {
                var: dim.clone(),
                outer: o.clone(),
                inner: i.clone(),
                factor: factor as i64,
                tail: None,
            });
            outer_list.push(o);
            inner_list.push(i);
        } else {
            outer_list.push(dim.clone());
        }
    }
    if pack_loop(shape, g).is_some() {
        // The copy's loops first, so one copy serves every tile of the other loops.
        let packed: Vec<String> = (shape.pack.iter().flat_map(|p| &p.pure))
            .filter_map(|d| outer_loop(shape, g, d))
            .collect();
        outer.sort_by_key(|l| !packed.contains(l));
    }
    if let Some(at) = last_split_reduction.filter(|_| g.unroll_reduction) {
        // The unrolled reduction's outer loop innermost of the outer ones: the loop around the
        // unrolled body is then the long one (conv2d's `c_o`, 32 steps, not `kx`, 3), and the
        // backends keep the tile's accumulators in registers across that loop. conv2d's 8x4
        // tile ran 1.5x slower with `c_o` outside `ky` and `kx`.
        let unrolled_outer = red_outer.remove(at);
        red_outer.push(unrolled_outer);
    }
    let reductions: Vec<String> = red_outer.iter().chain(&red_inner).cloned().collect();
    let order: Vec<String> = if g.reduction_outside {
        outer
            .iter()
            .chain(&reductions)
            .chain(&inner)
            .cloned()
            .collect()
    } else {
        outer
            .iter()
            .chain(&inner)
            .chain(&reductions)
            .cloned()
            .collect()
    };
    // The order the splits alone give: each dimension's outer loop then its inner one.
    let natural: Vec<String> = out.iter().fold(
        shape
            .pure
            .iter()
            .chain(&shape.reduction)
            .cloned()
            .collect::<Vec<_>>(),
        |mut loops, d| {
            if let Directive::Split {
                var, outer, inner, ..
            } = d
            {
                if let Some(at) = loops.iter().position(|l| l == var) {
                    loops.splice(at..=at, [outer.clone(), inner.clone()]);
                }
            }
            loops
        },
    );
    if order != natural {
        out.push(Directive::Reorder(order.clone()));
    }
    let pure_loops: Vec<&String> = order.iter().filter(|l| !reductions.contains(l)).collect();
    let width = width_at(widths, g.vector);
    let innermost_reduction = order.last().filter(|l| reductions.contains(l));
    let vectorized = match innermost_reduction {
        Some(r) if g.vector_reduction => Some(r),
        _ => pure_loops.last().copied(),
    };
    if let (Some(v), true) = (vectorized, width > 0) {
        out.push(Directive::Vectorize {
            var: v.clone(),
            width: Some(width as i64),
        });
    }
    if let Some(r) = red_inner
        .last()
        .filter(|r| g.unroll_reduction && Some(*r) != vectorized)
    {
        out.push(Directive::Unroll {
            var: r.clone(),
            factor: Some(2),
        });
    }
    let unroll = UNROLLS[g.unroll as usize % UNROLLS.len()];
    if unroll > 1 && pure_loops.len() >= 2 {
        out.push(Directive::Unroll {
            var: pure_loops[pure_loops.len() - 2].clone(),
            factor: Some(unroll as i64),
        });
    }
    if g.parallel {
        if let Some(first) = order.first().filter(|l| !reductions.contains(l)) {
            out.push(Directive::Parallel { var: first.clone() });
        }
    }
    out
}

/// A schedule's canonical hash: SHA-256 of its canonical text.
pub fn schedule_hash(schedule: &Schedule) -> String {
    let digest = Sha256::digest(schedule.to_string().as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}
