//! Lowering: a Pipeline and a Schedule to loop IR, as a fixed list of named passes (Halide's
//! `Lower.cpp` is the model). Each pass is one file whose doc comment says what it establishes.
//! Set `STRATA_LOG_PASSES=1` to print the IR after every pass (passes that changed nothing are
//! marked `(unchanged)`). The verifier checks the IR after every pass from storage flattening
//! on in debug builds and with `STRATA_VERIFY_PASSES=1`, at the end of lowering always.

pub(crate) mod access_sites;
pub(crate) mod bounds;
pub(crate) mod constant_extents;
pub(crate) mod empty_inputs;
pub(crate) mod flatten;
pub(crate) mod fold_storage;
pub(crate) mod inline;
pub(crate) mod interchange_lanes;
pub mod limits;
pub(crate) mod loop_nest;
pub(crate) mod partition_loops;
pub(crate) mod realize;
pub(crate) mod sliding_window;
pub(crate) mod specialize;
pub(crate) mod unroll;
pub(crate) mod unswitch;
pub(crate) mod vector_accumulators;
pub(crate) mod vectorize;
pub(crate) mod verify;

#[cfg(test)]
mod bounds_tests;
#[cfg(test)]
mod unswitch_tests;

use crate::ir::{BufferArg, Expr, LoweredKernel, Range, Stmt};
use crate::schedule::validate::{Plan, ScheduleError};
use crate::schedule::{lift_reductions, Schedule};
use strata_dsl::ir::{InputKind, Pipeline};
use strata_dsl::signature::MAX_EXTENT;
use strata_dsl::Sizes;

/// Why a kernel could not be lowered with a schedule.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LowerError {
    /// The schedule breaks a rule (it names the function, the directive and the rule).
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    /// A region bounds inference cannot bound: an index read from data of an unbounded type.
    #[error("cannot bound the region of `{func}` in dimension {dim}: an index depends on data of an unbounded type; clamp it")]
    Unbounded {
        /// The function whose region is unbounded.
        func: String,
        /// The dimension (0 is outermost).
        dim: usize,
    },
    /// A size fixed in advance that the kernel does not have.
    #[error("unknown size `{name}` (the kernel's sizes are: {})", sizes.join(", "))]
    UnknownSize {
        /// The size given.
        name: String,
        /// The kernel's sizes.
        sizes: Vec<String>,
    },
    /// Sizes fixed in advance that make a buffer, an output extent or a reduction domain
    /// bound break the call boundary's limits (`Signature::check_sizes`, as a call would).
    #[error(transparent)]
    Sizes(#[from] strata_dsl::signature::CallError),
    /// A size fixed in advance outside 0..=`MAX_EXTENT`.
    #[error("size `{name}` is {value}; a size fixed in advance must be 0 to {MAX_EXTENT}")]
    SizeOutOfRange {
        /// The size.
        name: String,
        /// Its value.
        value: i64,
    },
    /// An inline reduction in an update of `func` that reads `func` itself.
    #[error("the reduction `{reduction}` inside an update of `{func}` reads `{func}` itself, which strata cannot schedule; compute the reduction as an update of its own function first")]
    ReductionReadsUpdatedFunction {
        /// The function updated.
        func: String,
        /// The function the reduction was lifted to (`<func>_<op><n>`).
        reduction: String,
    },
    /// The kernel is past one of the limits in `limits` (which keep lowering on its stack).
    #[error("the kernel is too large to lower: {0}")]
    TooLarge(String),
    /// A bug in a lowering pass.
    #[error("internal error in lowering: {0}")]
    Internal(String),
    /// A bug caught by the final verifier (`verify`).
    #[error("internal error: the lowered IR is malformed: {0}")]
    Verify(String),
}

/// Prints the IR after each pass when `STRATA_LOG_PASSES` is set; `STRATA_LOG_PASSES=time`
/// prints only the time each pass took (to find the pass a large pipeline spends it in).
struct PassLog {
    mode: LogMode,
    previous: Option<Stmt>,
    since: std::time::Instant,
    /// Each pass's printed IR, in `LogMode::Collect` ([`lower_passes`]).
    collected: Vec<PassIr>,
}

#[derive(PartialEq)]
enum LogMode {
    Off,
    Ir,
    Time,
    Collect,
}

/// The IR after one named pass of lowering ([`lower_passes`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PassIr {
    /// The pass, as `STRATA_LOG_PASSES` names it.
    pub pass: String,
    /// The printed statement after it; `None` when the pass changed nothing.
    pub ir: Option<String>,
}

impl PassLog {
    fn new() -> PassLog {
        let mode = match std::env::var("STRATA_LOG_PASSES") {
            Ok(v) if v == "time" => LogMode::Time,
            Ok(_) => LogMode::Ir,
            Err(_) => LogMode::Off,
        };
        PassLog {
            mode,
            previous: None,
            since: std::time::Instant::now(),
            collected: Vec::new(),
        }
    }

    fn collecting() -> PassLog {
        PassLog {
            mode: LogMode::Collect,
            ..PassLog::new()
        }
    }

    fn log(&mut self, pass: &str, s: &Stmt) {
        match self.mode {
            LogMode::Off => {}
            LogMode::Time => {
                eprintln!("-- {pass}: {:.3} s", self.since.elapsed().as_secs_f64());
                self.since = std::time::Instant::now();
            }
            LogMode::Ir if self.previous.as_ref() == Some(s) => {
                eprintln!("-- after {pass} (unchanged)");
            }
            LogMode::Ir => {
                eprintln!("-- after {pass}:\n{s}\n");
                self.previous = Some(s.clone());
            }
            LogMode::Collect => {
                let changed = self.previous.as_ref() != Some(s);
                self.collected.push(PassIr {
                    pass: pass.to_string(),
                    ir: changed.then(|| s.to_string()),
                });
                self.previous = Some(s.clone());
            }
        }
    }
}

/// Verifies the statement after each pass from storage flattening on (the earlier passes'
/// statements still hold multi-dimensional realizations, which the verifier refuses), in debug
/// builds (every test) and when `STRATA_VERIFY_PASSES=1`: a pass that breaks the IR is named,
/// rather than found by the final verifier or, worse, by code generation.
struct PassVerifier {
    /// The kernel's frame (sizes, parameters, inputs, output) when verifying.
    frame: Option<LoweredKernel>,
}

impl PassVerifier {
    fn new(pipeline: &Pipeline) -> PassVerifier {
        let on =
            cfg!(debug_assertions) || std::env::var("STRATA_VERIFY_PASSES").is_ok_and(|v| v == "1");
        PassVerifier {
            frame: on.then(|| kernel_signature(pipeline, CallChecks::default(), Stmt::NoOp)),
        }
    }

    fn after(&self, pass: &str, s: &Stmt, left: verify::LoopsLeft) -> Result<(), LowerError> {
        match &self.frame {
            Some(frame) => verify::verify_body(frame, s, left)
                .map_err(|e| LowerError::Verify(format!("after {pass}: {e}"))),
            None => Ok(()),
        }
    }
}

/// Rewrites `s` top down: each serial loop `rewrite` transforms is replaced (and not visited
/// further); every other statement keeps its shape with its children rewritten. The shape of
/// the passes that act on a loop nest as a whole (`interchange_lanes`, `vector_accumulators`).
pub(crate) fn rewrite_serial_loops(s: &Stmt, rewrite: &dyn Fn(&Stmt) -> Option<Stmt>) -> Stmt {
    if let Stmt::For {
        kind: crate::ir::ForKind::Serial,
        ..
    } = s
    {
        if let Some(out) = rewrite(s) {
            return out;
        }
    }
    s.map(&mut |e| e.clone(), &mut |c| {
        rewrite_serial_loops(c, rewrite)
    })
}

/// Lowers `pipeline` under `schedule` to a loop nest. Runs on its own large stack, and refuses
/// a kernel past the limits in `limits` (`LowerError::TooLarge`) before any pass.
pub fn lower(pipeline: &Pipeline, schedule: &Schedule) -> Result<LoweredKernel, LowerError> {
    limits::on_big_stack(|| lower_here(pipeline, schedule))
}

/// Lowers `pipeline` under `schedule` as [`lower`] does, and returns the IR after each pass
/// (what `STRATA_LOG_PASSES=1` prints): the ladder's middle rung, pass by pass, for golden
/// tests and for reading.
pub fn lower_passes(pipeline: &Pipeline, schedule: &Schedule) -> Result<Vec<PassIr>, LowerError> {
    limits::on_big_stack(|| {
        let mut log = PassLog::collecting();
        lower_logged(pipeline, schedule, &mut log)?;
        Ok(log.collected)
    })
}

fn lower_here(pipeline: &Pipeline, schedule: &Schedule) -> Result<LoweredKernel, LowerError> {
    lower_logged(pipeline, schedule, &mut PassLog::new())
}

fn lower_logged(
    pipeline: &Pipeline,
    schedule: &Schedule,
    log: &mut PassLog,
) -> Result<LoweredKernel, LowerError> {
    let lifted = lift_reductions::lift_reductions(pipeline);
    let versions = crate::schedule::specialize::versions(&lifted, schedule)?;
    refuse_self_reading_reductions(&lifted)?;
    // Versions differ only in their stages' loops, not in what is inlined or wrapped.
    let plan = versions.general();
    // Before inlining, which an inlined diamond (`h(i) = g(i) + g(i)`, 40 deep) would make
    // exponentially large; each version's own loops are checked again below.
    limits::check_limits(plan)?;
    let inlined = inline::inline_functions(plan);
    log.log("inlining", &Stmt::block(Vec::new()));
    let mut realized = Vec::new();
    let mut bodies = Vec::new();
    for version in &versions.versions {
        let plan = specialize::with_known_multiples(&versions, version);
        let (r, s) = lower_version(&inlined, &plan, log)?;
        realized.push(r);
        bodies.push(s);
    }
    let realized = specialize::choose(&versions, &inlined, &realized);
    // The checks read the versioned statement: an empty input's reads are under its `if`.
    let realized = empty_inputs::version_empty_inputs(&realized, &inlined);
    let mut checks = call_checks(&inlined, &realized)?;
    log.log("call checks", &realized);
    checks.conditions = specialize::size_conditions(&versions, &inlined);
    let s = specialize::choose(&versions, &inlined, &bodies);
    if versions.versions.len() > 1 {
        log.log("specialization", &s);
    }
    let s = empty_inputs::version_empty_inputs(&s, &inlined);
    log.log("empty inputs", &s);
    let verifier = PassVerifier::new(&inlined);
    use verify::LoopsLeft::{None as Lowered, Unrolled, VectorizedAndUnrolled};
    let s = flatten::flatten(&s, &inlined, plan);
    log.log("storage flattening", &s);
    verifier.after("storage flattening", &s, VectorizedAndUnrolled)?;
    let s = partition_loops::partition_loops(&s);
    log.log("loop partitioning", &s);
    verifier.after("loop partitioning", &s, VectorizedAndUnrolled)?;
    let mut serial_vectors = Vec::new();
    let s = vectorize::vectorize_noting(&s, &mut serial_vectors);
    log.log("vectorization", &s);
    verifier.after("vectorization", &s, Unrolled)?;
    let s = unroll::unroll(&s);
    log.log("unrolling", &s);
    verifier.after("unrolling", &s, Lowered)?;
    let s = crate::simplify::simplify(&s);
    log.log("simplification", &s);
    verifier.after("simplification", &s, Lowered)?;
    let s = unswitch::unswitch(&s);
    log.log("unswitching", &s);
    verifier.after("unswitching", &s, Lowered)?;
    let s = interchange_lanes::interchange_lanes(&s);
    log.log("lane-loop interchange", &s);
    verifier.after("lane-loop interchange", &s, Lowered)?;
    let s = vector_accumulators::vector_accumulators(&s);
    log.log("vector accumulators", &s);
    let mut kernel = kernel_signature(&inlined, checks, s);
    kernel.serial_vectors = serial_vectors;
    verify::verify(&kernel).map_err(LowerError::Verify)?;
    Ok(kernel)
}

/// The passes that follow one version's plan (all of them, for a schedule without
/// specializations): the realized statement, which the call's checks are read from, and the
/// statement with every loop's extent fixed.
fn lower_version(
    inlined: &Pipeline,
    plan: &Plan,
    log: &mut PassLog,
) -> Result<(Stmt, Stmt), LowerError> {
    limits::check_limits(plan)?;
    let realized = realize::realize_functions(inlined, plan)?;
    log.log("realization and bounds inference", &realized);
    let s = fold_storage::fold_storage(&realized, inlined, plan)?;
    log.log("storage folding", &s);
    let s = sliding_window::slide_windows(&s, inlined);
    log.log("sliding window", &s);
    let s = loop_nest::strip_bounds_hints(&s);
    log.log("stripping bounds hints", &s);
    let s = constant_extents::constant_extents(&s, inlined, plan)?;
    log.log("constant extents", &s);
    Ok((realized, s))
}

/// An inline reduction lifted out of `f`'s update that reads `f` would need `f` computed before
/// and after itself: refused with a clear error (it was an internal error in placement).
fn refuse_self_reading_reductions(lifted: &lift_reductions::Lifted) -> Result<(), LowerError> {
    for (reduction, consumer) in &lifted.anonymous {
        let reads_consumer = lifted
            .pipeline
            .func(reduction)
            .is_some_and(|f| f.callees().contains(consumer));
        if reads_consumer {
            return Err(LowerError::ReductionReadsUpdatedFunction {
                func: consumer.clone(),
                reduction: reduction.clone(),
            });
        }
    }
    Ok(())
}

/// `kernel` with some of its sizes fixed to constants (`--shape` on the command line): the
/// loop nest a given shape runs, simplified. Sizes not given stay symbolic. (Halide's
/// `specialize`, a run-time condition in the schedule, is another thing.)
pub fn bind_sizes(kernel: &LoweredKernel, sizes: &Sizes) -> Result<LoweredKernel, LowerError> {
    limits::on_big_stack(|| bind_sizes_here(kernel, sizes))
}

fn bind_sizes_here(kernel: &LoweredKernel, sizes: &Sizes) -> Result<LoweredKernel, LowerError> {
    let mut out = kernel.clone();
    for (name, value) in sizes {
        if !kernel.sizes.contains(name) {
            return Err(LowerError::UnknownSize {
                name: name.clone(),
                sizes: kernel.sizes.clone(),
            });
        }
        let value = i32::try_from(*value)
            .ok()
            .filter(|v| (0..=MAX_EXTENT).contains(&i64::from(*v)))
            .ok_or_else(|| LowerError::SizeOutOfRange {
                name: name.clone(),
                value: *value,
            })?;
        let c = Expr::int(value);
        let sub = |e: &Expr| e.substitute(name, &c);
        out.body = substitute_stmt(&out.body, name, &c);
        out.output.extents = out.output.extents.iter().map(sub).collect();
        for input in &mut out.inputs {
            input.extents = input.extents.iter().map(sub).collect();
        }
        let regions = out.input_regions.iter_mut().map(|(_, region)| region);
        out.domain_bounds = out.domain_bounds.iter().map(sub).collect();
        for (_, condition) in &mut out.conditions {
            *condition = sub(condition);
        }
        for region in regions.chain(out.output_region.iter_mut()) {
            for r in region.iter_mut() {
                *r = Range {
                    min: sub(&r.min),
                    extent: sub(&r.extent),
                };
            }
        }
    }
    // Refused as a call with these sizes would be (an input past the element limit).
    kernel.call_signature().check_sizes(sizes)?;
    // Fixed sizes are constants now, no longer bound from the inputs' shapes.
    out.sizes.retain(|s| !sizes.contains_key(s));
    // Known sizes can remove tails that kept the last two passes from applying.
    let body = unswitch::unswitch(&crate::simplify::simplify(&out.body));
    let body = interchange_lanes::interchange_lanes(&body);
    out.body = vector_accumulators::vector_accumulators(&body);
    verify::verify(&out).map_err(LowerError::Verify)?;
    Ok(out)
}

fn substitute_stmt(s: &Stmt, name: &str, value: &Expr) -> Stmt {
    s.map(&mut |e| e.substitute(name, value), &mut |c| {
        substitute_stmt(c, name, value)
    })
}

/// The boxes of each buffer input the statement reads (one per group of sites, see
/// `access_sites`), as expressions of the sizes.
fn input_regions(pipeline: &Pipeline, s: &Stmt) -> Result<Vec<(String, Vec<Range>)>, LowerError> {
    let sizes = pipeline.size_vars();
    let mut regions = Vec::new();
    for input in &pipeline.inputs {
        let InputKind::Buffer { shape, .. } = &input.kind else {
            continue;
        };
        // Input loads may be hoisted out of loops (they are `can_move`).
        let sites = checked_sites(s, &input.name, &sizes, true)?;
        if sites.is_empty() {
            let empty = Range {
                min: Expr::int(0),
                extent: Expr::int(0),
            };
            regions.push((input.name.clone(), vec![empty; shape.len()]));
        }
        regions.extend(sites.into_iter().map(|r| (input.name.clone(), r)));
    }
    Ok(regions)
}

/// The boxes of the output that the statement reads and writes, as expressions of the sizes
/// (a data-dependent index spans its type's range, refused unless clamped, as the reference
/// refuses it). Nothing guards an update's accesses, so these boxes are what the call checks.
fn output_region(pipeline: &Pipeline, s: &Stmt) -> Result<Vec<Vec<Range>>, LowerError> {
    checked_sites(s, &pipeline.output.name, &pipeline.size_vars(), false)
}

/// The bounds of every reduction domain of `pipeline`, as loop-IR expressions of the sizes.
fn domain_bounds(pipeline: &Pipeline) -> Vec<Expr> {
    let conv = loop_nest::Converter {
        pipeline,
        func: &pipeline.output.name,
        stage: 0,
    };
    pipeline
        .domain_bounds()
        .iter()
        .map(|e| conv.expr(e))
        .collect()
}

/// The box of each group of sites accessing `name` in `s`, as ranges. A group whose run
/// conditions are expressions of the sizes (the extents of the loops around it positive, the
/// `if`s around it holding) gets an extent of 0 wherever one of them is false (the sites run
/// nothing then), so the call skips it.
fn checked_sites(
    s: &Stmt,
    name: &str,
    sizes: &[String],
    hoistable: bool,
) -> Result<Vec<Vec<Range>>, LowerError> {
    let mut boxes = Vec::new();
    for site in access_sites::access_sites(s, name, sizes, hoistable) {
        let runs = site.runs_if.into_iter().reduce(access_sites::and);
        let mut ranges = Vec::new();
        for (dim, i) in site.region.into_iter().enumerate() {
            let (Some(min), Some(max)) = (i.min, i.max) else {
                return Err(LowerError::Unbounded {
                    func: name.to_string(),
                    dim,
                });
            };
            let extent = bounds::fold_add(bounds::fold_sub(max, min.clone()), Expr::int(1));
            let extent = match &runs {
                Some(runs) => Expr::Select(
                    Box::new(runs.clone()),
                    Box::new(extent),
                    Box::new(Expr::int(0)),
                ),
                None => extent,
            };
            ranges.push(Range { min, extent });
        }
        boxes.push(ranges);
    }
    Ok(boxes)
}

/// What a call of the kernel is checked against, found from the realized statement (before
/// later passes blur which loop an access lies in).
#[derive(Default)]
struct CallChecks {
    input_regions: Vec<(String, Vec<Range>)>,
    output_region: Vec<Vec<Range>>,
    domain_bounds: Vec<Expr>,
    conditions: Vec<(String, Expr)>,
}

fn call_checks(pipeline: &Pipeline, realized: &Stmt) -> Result<CallChecks, LowerError> {
    Ok(CallChecks {
        input_regions: input_regions(pipeline, realized)?,
        output_region: output_region(pipeline, realized)?,
        domain_bounds: domain_bounds(pipeline),
        conditions: Vec::new(),
    })
}

fn kernel_signature(pipeline: &Pipeline, checks: CallChecks, body: Stmt) -> LoweredKernel {
    let conv = loop_nest::Converter {
        pipeline,
        func: &pipeline.output.name,
        stage: 0,
    };
    let mut inputs = Vec::new();
    let mut params = Vec::new();
    for input in &pipeline.inputs {
        match &input.kind {
            InputKind::Buffer { shape, .. } => inputs.push(BufferArg {
                name: input.name.clone(),
                dtype: input.dtype,
                extents: shape.iter().map(loop_nest::extent_expr).collect(),
            }),
            InputKind::Scalar => params.push((input.name.clone(), input.dtype)),
        }
    }
    LoweredKernel {
        name: pipeline.name.clone(),
        inputs,
        params,
        output: BufferArg {
            name: pipeline.output.name.clone(),
            dtype: pipeline.output.dtype,
            extents: pipeline
                .output
                .extents
                .iter()
                .map(|e| conv.expr(e))
                .collect(),
        },
        sizes: pipeline.size_vars(),
        input_regions: checks.input_regions,
        output_region: checks.output_region,
        domain_bounds: checks.domain_bounds,
        conditions: checks.conditions,
        serial_vectors: Vec::new(),
        body,
    }
}
