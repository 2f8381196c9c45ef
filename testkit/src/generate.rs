//! Random legal schedules for a pipeline: the generator behind the differential tests (and,
//! later, the tuner's random search and the fuzzers). Every directive it proposes is kept only
//! if the whole schedule still validates, so every schedule it returns is legal.
//!
//! First some reductions are factored (`rfactor`, one update in four) and some reads are
//! wrapped (`wrap`, about one read in six), then every function, the intermediates and
//! wrappers included, is placed and given loop directives, consumers first; a computed
//! function sometimes gets a random `reorder_storage`. Last, some computed functions get a
//! `fold_storage` of a random dimension by a small extent, kept only if the schedule still
//! lowers (whether a fold is large enough only bounds inference knows), so the differential
//! tests run folds as small as lowering allows, to the exact footprint; and some stages get
//! one or two `specialize` cases (random conditions on sizes and scalar parameters, often a
//! multiple of a small factor, which the tests' random shapes meet about as often as not),
//! each with loop directives of its own.

use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;
use strata_dsl::ir::{Expr, Func, Pipeline};
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::lift_reductions::{lift_reductions, Lifted};
use strata_scheduler::schedule::validate::{effective_consumers, validate, Placement, Plan};
use strata_scheduler::schedule::{Directive, LoopLevel, Schedule, StageRef, TailStrategy};

/// How many directives the generator tries per stage, at most.
const MAX_DIRECTIVES_PER_STAGE: usize = 4;

/// How many versions (`schedule::specialize`) a random schedule's specializations make, at most.
const MAX_VERSIONS: usize = 4;

/// A random legal schedule for `pipeline`.
pub fn random_schedule(pipeline: &Pipeline, rng: &mut impl Rng) -> Schedule {
    let lifted = lift_reductions(pipeline);
    let mut gen = Generator {
        wrapped: lifted.pipeline.clone(),
        lifted,
        schedule: Schedule::new(),
        fresh: 0,
    };
    gen.rfactor_some(rng);
    gen.wrap_some(rng);
    let order: Vec<String> = gen
        .wrapped
        .topo_order()
        .iter()
        .rev()
        .map(|f| f.name.clone())
        .collect();
    for name in order {
        gen.place(&name, rng);
        if rng.random_bool(0.2) {
            gen.try_reorder_storage(&name, rng);
        }
        let stages = gen.wrapped.func(&name).map_or(0, |f| f.updates.len() + 1);
        for stage in 0..stages {
            let stage = if stage == 0 {
                StageRef::Pure
            } else {
                StageRef::Update(stage - 1)
            };
            for _ in 0..rng.random_range(0..=MAX_DIRECTIVES_PER_STAGE) {
                gen.try_loop_directive(&name, stage, rng);
            }
        }
    }
    gen.fold_some(pipeline, rng);
    gen.specialize_some(pipeline, rng);
    gen.schedule.lines.retain(|l| !l.directives.is_empty());
    gen.schedule
}

struct Generator {
    lifted: Lifted,
    /// The lifted pipeline with the wrappers the schedule makes so far.
    wrapped: Pipeline,
    schedule: Schedule,
    fresh: usize,
}

impl Generator {
    fn plan(&self) -> Option<Plan> {
        validate(&self.lifted, &self.schedule).ok()
    }

    /// Appends `d` to a stage's line if the schedule stays legal.
    fn try_push(&mut self, func: &str, stage: StageRef, d: Directive) -> bool {
        self.schedule.stage(func, stage).directives_mut().push(d);
        if self.plan().is_some() {
            return true;
        }
        self.schedule.stage(func, stage).directives_mut().pop();
        false
    }

    fn name(&mut self, base: &str) -> String {
        self.fresh += 1;
        let base: String = base
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        format!("{base}_{}", self.fresh)
    }

    /// Factors some reductions (`rfactor`, one update in four): a reduction variable whole, or
    /// the inner or the outer part of a split of it, into a fresh intermediate, kept when legal
    /// (an associative fold); `wrapped` then holds the intermediates, which are placed and
    /// scheduled like any function, and the directives later added to the update's line
    /// schedule its merge.
    fn rfactor_some(&mut self, rng: &mut impl Rng) {
        let funcs = self.lifted.pipeline.funcs.clone();
        for func in &funcs {
            for (i, update) in func.updates.iter().enumerate() {
                let Some(r) = update.rvars.choose(rng).map(|r| r.name.clone()) else {
                    continue;
                };
                if !rng.random_bool(0.25) {
                    continue;
                }
                let intermediate = self.name(&format!("{}_rf", func.name));
                let mut directives = Vec::new();
                let var = match rng.random_range(0..3) {
                    0 => r,
                    part => {
                        let outer = self.name(&format!("{r}o"));
                        let inner = self.name(&format!("{r}i"));
                        directives.push(Directive::Split {
                            var: r,
                            outer: outer.clone(),
                            inner: inner.clone(),
                            factor: *[2, 3, 4, 8].choose(rng).unwrap_or(&4),
                            tail: None,
                        });
                        if part == 1 {
                            inner
                        } else {
                            outer
                        }
                    }
                };
                directives.push(Directive::Rfactor { var, intermediate });
                let stage = StageRef::Update(i);
                let before = self.schedule.directives(&func.name, stage).len();
                let line = self.schedule.stage(&func.name, stage).directives_mut();
                line.extend(directives);
                if self.plan().is_none() {
                    let line = self.schedule.stage(&func.name, stage).directives_mut();
                    line.truncate(before);
                }
            }
        }
        if let Some(plan) = self.plan() {
            self.wrapped = plan.lifted.pipeline;
        }
    }

    /// Wraps some of each function's reads (of inputs and of other functions), each with a
    /// fresh name; `wrapped` then holds the wrappers.
    fn wrap_some(&mut self, rng: &mut impl Rng) {
        let funcs = self.wrapped.funcs.clone();
        for func in &funcs {
            for producer in reads(func) {
                if rng.random_bool(1.0 / 6.0) {
                    let wrapper = self.name(&format!("{producer}_w"));
                    self.try_push(
                        &func.name,
                        StageRef::Pure,
                        Directive::Wrap { producer, wrapper },
                    );
                }
            }
        }
        if let Some(plan) = self.plan() {
            self.wrapped = plan.lifted.pipeline;
        }
    }

    /// A random storage order for `name` (kept when legal: not for the output or an inlined
    /// function).
    fn try_reorder_storage(&mut self, name: &str, rng: &mut impl Rng) {
        let Some(func) = self.wrapped.func(name) else {
            return;
        };
        let mut vars = func.vars.clone();
        if vars.len() < 2 {
            return;
        }
        vars.shuffle(rng);
        self.try_push(name, StageRef::Pure, Directive::ReorderStorage(vars));
    }

    /// Folds a random dimension of some computed functions (most often of those stored
    /// outside the loop they are computed in, where a fold can be legal), each fold kept only
    /// if `pipeline` still lowers with it.
    fn fold_some(&mut self, pipeline: &Pipeline, rng: &mut impl Rng) {
        let Some(plan) = self.plan() else { return };
        for (name, fp) in &plan.funcs {
            let stored_outside = fp.store != fp.compute;
            let odds = if stored_outside { 0.8 } else { 0.05 };
            if fp.compute == Placement::Inline || !rng.random_bool(odds) {
                continue;
            }
            let Some(var) = (plan.pipeline().func(name)).and_then(|f| f.vars.choose(rng)) else {
                continue;
            };
            let extent = *[1, 2, 3, 4, 5, 8, 16].choose(rng).unwrap_or(&4);
            let d = Directive::FoldStorage {
                var: var.clone(),
                extent,
            };
            if self.try_push(name, StageRef::Pure, d) && lower(pipeline, &self.schedule).is_err() {
                self.schedule
                    .stage(name, StageRef::Pure)
                    .directives_mut()
                    .pop();
            }
        }
    }

    /// Where a function is computed: pure non-output functions may be inlined, computed at
    /// root, or at a loop of a consumer; functions with updates at root or at a loop.
    fn place(&mut self, name: &str, rng: &mut impl Rng) {
        let Some(func) = self.wrapped.func(name) else {
            return;
        };
        if name == self.wrapped.output.name {
            return;
        }
        let has_updates = !func.updates.is_empty();
        let choice = rng.random_range(0..3);
        let directive = match choice {
            0 if !has_updates => Directive::ComputeInline,
            1 => Directive::ComputeRoot,
            _ => match self.consumer_loop(name, rng) {
                Some(level) => Directive::ComputeAt(level),
                None => Directive::ComputeRoot,
            },
        };
        if !self.try_push(name, StageRef::Pure, directive) {
            self.try_push(name, StageRef::Pure, Directive::ComputeRoot);
        }
        if rng.random_bool(0.2) {
            self.try_push(name, StageRef::Pure, Directive::StoreRoot);
        }
    }

    fn consumer_loop(&self, name: &str, rng: &mut impl Rng) -> Option<LoopLevel> {
        let plan = self.plan()?;
        let consumers = effective_consumers(plan.pipeline(), &plan.funcs, name);
        let (consumer, stage) = consumers.choose(rng)?.clone();
        let dims = &plan.funcs.get(&consumer)?.stages.get(stage)?.dims;
        let dim = dims.choose(rng)?;
        let stage = if stage == 0 {
            StageRef::Pure
        } else {
            StageRef::Update(stage - 1)
        };
        Some(LoopLevel {
            func: consumer,
            stage,
            var: dim.name.clone(),
        })
    }

    fn try_loop_directive(&mut self, func: &str, stage: StageRef, rng: &mut impl Rng) {
        let Some(dims) = self.plan().and_then(|plan| stage_dims(&plan, func, stage)) else {
            return;
        };
        let d = self.random_loop_directive(&dims, rng);
        self.try_push(func, stage, d);
    }

    /// Specializes some computed stages (one in four, up to `MAX_VERSIONS` versions) for one
    /// or two random conditions on the sizes and scalar parameters, each case with one to
    /// three loop directives of its own, kept only where the schedule stays legal.
    fn specialize_some(&mut self, pipeline: &Pipeline, rng: &mut impl Rng) {
        let Some(plan) = self.plan() else { return };
        let mut stages = Vec::new();
        for (name, fp) in &plan.funcs {
            if fp.compute != Placement::Inline {
                let refs =
                    (0..fp.stages.len()).map(strata_scheduler::schedule::validate::stage_ref);
                stages.extend(refs.map(|s| (name.clone(), s)));
            }
        }
        // Every version is a whole lowering: a few keep the differential tests' time bounded.
        let mut versions = 1;
        for (name, stage) in stages {
            let cases = rng.random_range(1..=2);
            if !rng.random_bool(0.25) || versions * (cases + 1) > MAX_VERSIONS {
                continue;
            }
            versions *= cases + 1;
            for _ in 0..cases {
                self.try_specialize(pipeline, &name, stage, rng);
            }
        }
    }

    /// One case of `func`'s `stage` under a random condition, as a line of its own (so it
    /// inherits all the stage's directives). With folded storage it is kept only if `pipeline`
    /// still lowers: its loops may leave a fold too small.
    fn try_specialize(
        &mut self,
        pipeline: &Pipeline,
        func: &str,
        stage: StageRef,
        rng: &mut impl Rng,
    ) {
        let mut own: Vec<Directive> = Vec::new();
        for _ in 0..rng.random_range(1..=3) {
            // The case's loops: the stage's general directives, then its own so far.
            let mut trial = self.schedule.clone();
            trial
                .stage(func, stage)
                .directives_mut()
                .extend(own.clone());
            let dims = validate(&self.lifted, &trial).ok();
            let Some(dims) = dims.and_then(|plan| stage_dims(&plan, func, stage)) else {
                break;
            };
            let d = self.random_loop_directive(&dims, rng);
            trial.stage(func, stage).directives_mut().push(d.clone());
            if validate(&self.lifted, &trial).is_ok() {
                own.push(d);
            }
        }
        let cond = self.random_condition(rng);
        let directives = std::iter::once(Directive::Specialize(cond)).chain(own);
        self.schedule.lines.push(strata_scheduler::schedule::Line {
            func: func.to_string(),
            stage,
            directives: directives.collect(),
        });
        let folds = (self.schedule.lines.iter().flat_map(|l| &l.directives))
            .any(|d| matches!(d, Directive::FoldStorage { .. }));
        if self.plan().is_none() || (folds && lower(pipeline, &self.schedule).is_err()) {
            self.schedule.lines.pop();
        }
    }

    /// A condition on the sizes and scalar parameters: a size a multiple of a small factor
    /// (often an extent of the output, whose splits then lose their tails) or at least a small
    /// bound, a scalar compared with a constant, or a conjunction of two.
    fn random_condition(&self, rng: &mut impl Rng) -> String {
        let pipeline = &self.lifted.pipeline;
        let mut terms: Vec<String> = pipeline.size_vars();
        terms.extend(pipeline.output.extents.iter().map(|e| format!("({e})")));
        let scalars: Vec<String> = (pipeline.inputs.iter())
            .filter(|i| matches!(i.kind, strata_dsl::ir::InputKind::Scalar))
            .filter_map(|i| match i.dtype {
                t if t.is_float() => Some(format!("{} > 0.5", i.name)),
                t if t.is_int() => Some(format!("{} > 1", i.name)),
                _ => None,
            })
            .collect();
        let one = |rng: &mut dyn rand::RngCore| -> String {
            let term = terms.choose(rng).cloned().unwrap_or_else(|| "1".into());
            match rng.random_range(0..5) {
                0 | 1 => format!("{term} % {} == 0", [2, 3, 4, 8].choose(rng).unwrap_or(&2)),
                2 => format!("{term} >= {}", rng.random_range(1..=8)),
                3 if !scalars.is_empty() => scalars.choose(rng).cloned().unwrap_or_default(),
                _ => format!("{term} % 2 == 1"),
            }
        };
        let first = one(rng);
        if rng.random_bool(0.2) {
            format!("{first} && {}", one(rng))
        } else {
            first
        }
    }

    /// A random split, tile, reorder, fuse, vectorize, unroll or parallel of `dims`.
    fn random_loop_directive(&mut self, dims: &[String], rng: &mut impl Rng) -> Directive {
        let pick = |rng: &mut _| dims.choose(rng).cloned().unwrap_or_default();
        match rng.random_range(0..8) {
            0 | 1 => {
                let var = pick(rng);
                let (outer, inner) = (self.name(&format!("{var}o")), self.name(&format!("{var}i")));
                let tail = [
                    None,
                    Some(TailStrategy::Guard),
                    Some(TailStrategy::Shift),
                    Some(TailStrategy::RoundUp),
                ];
                let tail = *tail.choose(rng).unwrap_or(&None);
                Directive::Split {
                    var,
                    outer,
                    inner,
                    factor: *[1, 2, 3, 4, 8].choose(rng).unwrap_or(&2),
                    tail,
                }
            }
            2 if dims.len() >= 2 => {
                let i = rng.random_range(0..dims.len() - 1);
                let (y, x) = (dims[i].clone(), dims[i + 1].clone());
                let names = [
                    self.name("yo"),
                    self.name("xo"),
                    self.name("yi"),
                    self.name("xi"),
                ];
                let [yo, xo, yi, xi] = names;
                Directive::Tile {
                    y,
                    x,
                    yo,
                    xo,
                    yi,
                    xi,
                    fy: rng.random_range(1..5),
                    fx: rng.random_range(1..9),
                    tail: None,
                }
            }
            3 if dims.len() >= 2 => {
                let mut vars = dims.to_vec();
                vars.swap(0, rng.random_range(0..dims.len()));
                vars.truncate(rng.random_range(2..=dims.len()));
                Directive::Reorder(vars)
            }
            4 if dims.len() >= 2 => {
                let i = rng.random_range(0..dims.len() - 1);
                Directive::Fuse {
                    outer: dims[i].clone(),
                    inner: dims[i + 1].clone(),
                    fused: self.name("f"),
                }
            }
            5 => Directive::Vectorize {
                var: pick(rng),
                width: Some(*[2, 3, 4, 8].choose(rng).unwrap_or(&4)),
            },
            6 => Directive::Unroll {
                var: pick(rng),
                factor: Some(*[2, 3, 4].choose(rng).unwrap_or(&2)),
            },
            _ => Directive::Parallel { var: pick(rng) },
        }
    }
}

/// The loops of `func`'s `stage` in `plan`, unless the function is inlined or has none.
fn stage_dims(plan: &Plan, func: &str, stage: StageRef) -> Option<Vec<String>> {
    let fp = plan.funcs.get(func)?;
    if fp.compute == Placement::Inline {
        return None;
    }
    let dims: Vec<String> = (fp.stages.get(stage.index())?.dims.iter())
        .map(|d| d.name.clone())
        .collect();
    (!dims.is_empty()).then_some(dims)
}

/// The inputs and other functions `func` reads directly, each once, in the order written.
fn reads(func: &Func) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    func.for_each_expr(&mut |e| {
        if let Expr::Call(call) = e {
            if call.name != func.name && !names.contains(&call.name) {
                names.push(call.name.clone());
            }
        }
    });
    names
}
