//! Validation: checks a schedule against a pipeline before lowering and resolves it into a
//! `Plan` (each function's placement, storage level and stage loops). Every illegal directive is
//! a `ScheduleError` that prints the function, the directive as written, the rule it breaks and
//! what would be legal. No directive is ever silently ignored.

use super::loops::{stage_loops, Dim, StageLoops, MAX_SPLIT_FACTOR};
use super::{Directive, LoopLevel, Schedule, StageRef};
use crate::ir::ForKind;
use crate::lower::lift_reductions::Lifted;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use strata_dsl::ir::{CallTarget, Expr, Func, Pipeline};

/// Why a schedule cannot be used with a pipeline.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    #[error("schedule names unknown function `{name}` (the functions are: {})", known.join(", "))]
    /// The schedule names a function the pipeline does not have.
    UnknownFunction {
        /// The name written.
        name: String,
        /// The pipeline's functions.
        known: Vec<String>,
    },
    #[error(
        "schedule names `{func}.update({index})`, but `{func}` has {count} update definition(s)"
    )]
    /// The schedule names an update `func.update(index)` that `func` does not have.
    UnknownStage {
        /// The function named.
        func: String,
        /// The update index written.
        index: usize,
        /// How many update definitions the function has.
        count: usize,
    },
    #[error("in the schedule of `{func}{}`: `{directive}`: {rule}", stage_suffix(*stage))]
    /// A directive breaks a rule.
    Directive {
        /// The function whose schedule holds the directive.
        func: String,
        /// The stage (pure definition or update) the directive is written on.
        stage: StageRef,
        /// The directive as written.
        directive: String,
        /// The rule it breaks, with what would be legal.
        rule: Rule,
    },
    #[error(
        "the schedule unrolls `{func}{}` into {copies} copies of its body (its own unrolled loops and those it is computed inside, multiplied); at most {MAX_UNROLLED_COPIES} keep compile time and code size bounded: unroll fewer or smaller loops",
        stage_suffix(*stage)
    )]
    /// Unrolling would make more than `MAX_UNROLLED_COPIES` copies of a stage's body.
    TooManyUnrolledCopies {
        /// The function whose stage is unrolled.
        func: String,
        /// The stage unrolled.
        stage: StageRef,
        /// The number of copies the unrolled loops multiply to.
        copies: u64,
    },
}

/// The most copies of one stage's body unrolling may make. Unroll factors are capped per loop
/// (`loops::max_lanes`), but nested unrolled loops multiply: 256 x 256 x 4 copies took minutes
/// and gigabytes to compile. The hand schedules unroll 8 copies at most.
pub const MAX_UNROLLED_COPIES: u64 = 1024;

fn stage_suffix(stage: StageRef) -> String {
    match stage {
        StageRef::Pure => String::new(),
        StageRef::Update(i) => format!(".update({i})"),
    }
}

/// The rule a directive breaks, with what would be legal.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    /// A directive names `var`, which is not a loop of the stage.
    UnknownVar {
        /// The name written.
        var: String,
        /// The stage's loops.
        loops: Vec<String>,
    },
    /// A directive names `var`, a loop already split or fused away.
    AlreadyReplaced {
        /// The name written.
        var: String,
        /// The stage's loops now.
        loops: Vec<String>,
    },
    /// A new loop or variable name (of a split, fuse or `rfactor`) already in use.
    NameInUse {
        /// The name given.
        name: String,
    },
    /// A split factor below 1.
    FactorNotPositive {
        /// The factor given.
        factor: i64,
    },
    /// A split factor larger than `MAX_SPLIT_FACTOR`.
    FactorTooLarge {
        /// The factor given.
        factor: i64,
    },
    /// An unroll factor or vector width (given, or the constant extent of the loop) outside
    /// `1..=max`.
    WidthOutOfRange {
        /// The factor or width given.
        width: i64,
        /// The largest legal one.
        max: i64,
        /// The kind of loop: unrolled, vectorized or lanes.
        kind: ForKind,
    },
    /// `unroll(v)` or `vectorize(v)` without a factor on a loop whose extent is not a
    /// constant after bounds inference (checked by `lower::constant_extents`).
    ExtentNotConstant {
        /// The loop named.
        var: String,
        /// The kind asked for (unrolled or vectorized).
        kind: ForKind,
    },
    /// A second kind (parallel, vectorized, unrolled, ...) given to a loop that has one already.
    LoopKindTwice {
        /// The loop named.
        var: String,
        /// The kind it already has.
        kind: ForKind,
    },
    /// A split or fuse of a loop already given a kind: loops are split and fused first.
    KindBeforeSplit {
        /// The loop named.
        var: String,
        /// The kind it already has.
        kind: ForKind,
    },
    /// A loop carrying a reduction dependency made parallel or vectorized, where only loops
    /// whose iterations are independent can be.
    CarriesReduction {
        /// The loop named.
        var: String,
        /// The kind asked for (parallel or vectorized).
        kind: ForKind,
    },
    /// A `reorder` naming a loop twice (it takes a permutation).
    ReorderRepeats {
        /// The loop repeated.
        var: String,
    },
    /// A `reorder` that changes the order of reduction loops that must keep it (a
    /// non-associative update, or elements depending on each other).
    ReorderChangesReduction,
    /// A `fuse` of loops that are not adjacent, outer first.
    FuseNotAdjacent {
        /// The stage's loops.
        loops: Vec<String>,
    },
    /// A `fuse` of a pure loop with a reduction loop.
    FuseMixesReduction,
    /// A loop of reduction variable `rvar`, whose bounds read `reads`, is outside or fused
    /// with `outer`, a loop of `reads` (Halide keeps a reduction variable inside those its
    /// bounds depend on): `inner` is that loop of `rvar`.
    BoundReadsInnerLoop {
        /// The reduction variable whose bounds read `reads`.
        rvar: String,
        /// The variable its bounds read.
        reads: String,
        /// The loop of `rvar` that would be outside (or fused with) `outer`.
        inner: String,
        /// The loop of `reads`.
        outer: String,
    },
    /// A `shift` tail on an update: it recomputes points, which an update cannot.
    ShiftOnUpdate,
    /// A `round_up` tail where it cannot be used: on the output, or on an update.
    RoundUpNeedsPadding {
        /// Whether the stage is the output's (else an update's).
        is_output: bool,
    },
    /// A placement (`compute_*`/`store_*`) on an update's line instead of the pure definition's.
    PlacementOnUpdate,
    /// A placement of the output, which is always computed and stored at root.
    PlacementOfOutput,
    /// `compute_inline` of a function with an update definition.
    InlineWithUpdate,
    /// A second placement of a function already placed.
    PlacedTwice {
        /// The placement directive that placed it first.
        first: String,
    },
    /// `var` is not a loop of the stage a `compute_at`/`store_at` names.
    UnknownLoopLevel {
        /// The loop named.
        var: String,
        /// The stage's loops.
        loops: Vec<String>,
    },
    /// A `compute_at`/`store_at` names a function or update that does not exist.
    UnknownLevelStage {
        /// The stage named.
        name: String,
        /// The stages there are.
        stages: Vec<String>,
    },
    /// A `compute_at`/`store_at` naming a loop of `func`, which is computed inline (has no loops).
    AtInlined {
        /// The inlined function named.
        func: String,
    },
    /// A `compute_at`/`store_at` at a loop that does not enclose every use of the function.
    NotEnclosing {
        /// A consumer reading the function outside that loop.
        consumer: String,
        /// Where the consumer is computed at root only by default: how to place it, in words.
        default_root: Option<String>,
        /// The legal levels, in words.
        legal: String,
    },
    /// A `compute_at`/`store_at` at a vectorized loop or a loop inside one.
    InsideVector {
        /// The loop named.
        var: String,
    },
    /// Placements that form a cycle (a function computed inside a loop of its own consumer chain).
    Cycle {
        /// The functions of the cycle, in order.
        chain: Vec<String>,
    },
    /// A function with an update stored outside `func`'s parallel loop `var` but computed
    /// inside it (a race).
    StoredOutsideParallelLoop {
        /// The function whose parallel loop it is.
        func: String,
        /// The parallel loop.
        var: String,
    },
    /// `compute` is the `compute_...` directive, or `None` for the default (root).
    StoreInsideCompute {
        /// The placement directive, as written.
        compute: Option<String>,
    },
    /// Storage or loop directives for a function computed inline.
    ScheduledInline,
    /// `wrap`, `reorder_storage` or `fold_storage` on an update's line: they apply to the
    /// whole function.
    PerFunctionOnUpdate,
    /// `f: wrap(f, ..)`: a function's reads of itself are its own storage.
    WrapSelf,
    /// `wrap(g, ..)` where the function does not read `g` directly; it reads `reads`.
    WrapNotRead {
        /// The input or function named.
        producer: String,
        /// The inputs and functions the function reads directly.
        reads: Vec<String>,
    },
    /// A wrapper named like something that exists (`by`, in words).
    WrapperNameTaken {
        /// The name given.
        name: String,
        /// What already has it, in words.
        by: String,
    },
    /// A wrapper name that is not a plain name (letters, digits, `_`) or is a reserved word.
    WrapperNameInvalid {
        /// The name given.
        name: String,
    },
    /// `reorder_storage` on the output, whose buffer is the caller's.
    StorageOfOutput,
    /// `specialize` inside a specialization.
    NestedSpecialization,
    /// A placement, `wrap`, `reorder_storage`, `fold_storage` or `rfactor` after `specialize`
    /// (or an `rfactor` that only some cases of a stage would see).
    SpecializedPerFunction,
    /// A `specialize` condition the kernel language refuses (its checker's message).
    BadCondition {
        /// The checker's message.
        message: String,
    },
    /// More than `specialize::MAX_VERSIONS` combinations of cases.
    TooManyVersions {
        /// The number of versions the specializations make.
        versions: usize,
    },
    /// `reorder_storage` names `var`, which is not one of the function's `dims`.
    UnknownDimension {
        /// The name written.
        var: String,
        /// The function's dimensions.
        dims: Vec<String>,
    },
    /// `fold_storage` on the output, whose buffer is the caller's.
    FoldOfOutput,
    /// `fold_storage` with an extent below 1 or past `MAX_SPLIT_FACTOR`.
    FoldOutOfRange {
        /// The extent given.
        extent: i64,
    },
    /// A second `fold_storage` of the same dimension.
    FoldedTwice {
        /// The dimension named.
        var: String,
    },
    /// A fold smaller than the rows of `var` one iteration computes and reads (checked by
    /// `lower::fold_storage` once bounds are inferred).
    FoldTooSmall {
        /// The folded dimension.
        var: String,
        /// The rows one iteration computes and reads.
        needed: i64,
        /// The fold's extent (slots).
        given: i64,
    },
    /// A fold of `var` where bounds inference finds no constant bound on the rows one
    /// iteration computes (computed at root over a whole dimension of a size, a data-dependent
    /// region).
    FoldNotProvable {
        /// The folded dimension.
        var: String,
    },
    /// A fold with the parallel loop `parallel` between the buffer and the computation.
    FoldUnderParallel {
        /// The folded dimension.
        var: String,
        /// The parallel loop.
        parallel: String,
    },
    /// `rfactor` on a pure definition's line: only an update reduces.
    RfactorOfPure,
    /// `rfactor(var, ..)` where `var` is not a reduction loop of the update; `loops` are.
    RfactorNotReduction {
        /// The name written.
        var: String,
        /// The update's reduction loops.
        loops: Vec<String>,
    },
    /// A directive other than the split of the factored variable before `rfactor` (`first`).
    RfactorAfterDirective {
        /// The first directive before the `rfactor`.
        first: String,
    },
    /// `rfactor` of an update that is not an associative fold (`f(x) = f(x) * 2 + e`).
    RfactorNotAssociative,
    /// `rfactor` of an update reading its function at another point, or through a function it
    /// calls (a scan): the order of the steps is part of the answer.
    RfactorScan,
    /// `rfactor` of an update whose target is not the function at its own pure variables
    /// (`hist(image(y, x)) += 1`, `f(x, 0) += e`).
    RfactorTarget,
    /// `rfactor` of an update whose reduction variable `var` has bounds reading a variable.
    RfactorNonRectangular {
        /// The reduction variable.
        var: String,
    },
    /// An intermediate named like something that exists (`by`, in words).
    RfactorNameTaken {
        /// The intermediate's name.
        name: String,
        /// What already has it, in words.
        by: String,
    },
}

fn kind_name(kind: ForKind) -> &'static str {
    match kind {
        ForKind::Serial => "serial",
        ForKind::Parallel => "parallel",
        ForKind::Vectorized => "vectorized",
        ForKind::Unrolled => "unrolled",
        ForKind::Lanes => "lanes",
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::UnknownVar { var, loops } => write!(f, "`{var}` is not a loop here; the loops are: {}", loops.join(", ")),
            Rule::AlreadyReplaced { var, loops } => write!(
                f,
                "`{var}` was already split or fused away and cannot be split twice; the loops are now: {}",
                loops.join(", ")
            ),
            Rule::NameInUse { name } => write!(f, "the new loop name `{name}` is already in use; choose a fresh name"),
            Rule::FactorNotPositive { factor } => write!(f, "the factor must be a positive integer, not {factor}"),
            Rule::FactorTooLarge { factor } => write!(
                f,
                "a split factor of {factor} is too large; use 1 to {MAX_SPLIT_FACTOR} (loop bounds are computed in i32)"
            ),
            Rule::WidthOutOfRange { width, max, kind: ForKind::Unrolled } => {
                write!(f, "an unroll factor of {width} is out of range; use 1 to {max}")
            }
            Rule::WidthOutOfRange { width, max, .. } => write!(f, "a width of {width} is out of range; use 1 to {max}"),
            Rule::ExtentNotConstant { var, kind: ForKind::Unrolled } => write!(
                f,
                "the extent of `{var}` is not a constant once bounds are inferred; give a factor (e.g. `unroll({var}, 4)`) or split it first"
            ),
            Rule::ExtentNotConstant { var, .. } => write!(
                f,
                "the extent of `{var}` is not a constant once bounds are inferred; give a width (e.g. `vectorize({var}, 8)`) or split it first"
            ),
            Rule::LoopKindTwice { var, kind } => write!(f, "`{var}` is already {}; a loop has one kind", kind_name(*kind)),
            Rule::KindBeforeSplit { var, kind } => write!(
                f,
                "`{var}` is already {}; split and fuse loops before giving them a kind",
                kind_name(*kind)
            ),
            Rule::CarriesReduction {
                var,
                kind: ForKind::Vectorized,
            } => write!(
                f,
                "loop `{var}` carries a reduction dependency and cannot be vectorized; only pure loops whose elements are computed independently can, and the reduction loops of an update folding into a target they do not move (`f(x) += e`, `f(x) *= e`, `f(x) = max(f(x), e)` or min)"
            ),
            Rule::CarriesReduction { var, kind } => write!(
                f,
                "loop `{var}` carries a reduction dependency and cannot be {}; only pure loops whose elements are computed independently can",
                kind_name(*kind)
            ),
            Rule::ReorderRepeats { var } => write!(f, "`{var}` appears twice; reorder takes a permutation of loops"),
            Rule::ReorderChangesReduction => f.write_str(
                "this order changes the meaning of the update: its reduction loops must keep their order (the update is not an associative `+=`, `-=`, `*=`, max or min fold) or its elements depend on each other",
            ),
            Rule::FuseNotAdjacent { loops } => write!(
                f,
                "only adjacent loops can be fused, the outer one first; the loops are: {}",
                loops.join(", ")
            ),
            Rule::FuseMixesReduction => f.write_str("a pure loop and a reduction loop cannot be fused"),
            Rule::BoundReadsInnerLoop { rvar, reads, inner, outer } if inner == outer => write!(
                f,
                "the bounds of reduction variable `{rvar}` read `{reads}`, so a loop of `{rvar}` cannot be fused with one of `{reads}` (loop `{inner}`)"
            ),
            Rule::BoundReadsInnerLoop { rvar, reads, inner, outer } => write!(
                f,
                "the bounds of reduction variable `{rvar}` read `{reads}`, so every loop of `{rvar}` must stay inside every loop of `{reads}`: loop `{inner}` would be outside loop `{outer}`"
            ),
            Rule::ShiftOnUpdate => f.write_str(
                "the shift tail recomputes points, which an update cannot do; use guard",
            ),
            Rule::RoundUpNeedsPadding { is_output: true } => f.write_str(
                "the round_up tail computes past the extent, which the output cannot store; use guard or shift",
            ),
            Rule::RoundUpNeedsPadding { is_output: false } => f.write_str(
                "the round_up tail cannot be used on an update; use guard",
            ),
            Rule::PlacementOnUpdate => f.write_str(
                "where a function is computed and stored is scheduled on its pure definition's line, not an update's",
            ),
            Rule::PlacementOfOutput => f.write_str("the output is always computed and stored at root"),
            Rule::InlineWithUpdate => f.write_str(
                "a function with an update definition cannot be inlined; use compute_root() or compute_at(...)",
            ),
            Rule::PlacedTwice { first } => write!(f, "the function is already placed by `{first}`; a function is placed once"),
            Rule::UnknownLoopLevel { var, loops } => {
                write!(f, "`{var}` is not a loop of that stage; its loops are: {}", loops.join(", "))
            }
            Rule::UnknownLevelStage { name, stages } => {
                write!(f, "there is no function stage `{name}`; the stages are: {}", stages.join(", "))
            }
            Rule::AtInlined { func: g } => write!(
                f,
                "`{g}` is computed inline, so it has no loops to compute at; place `{g}` with compute_root() or compute_at(...) too, or name a loop of its consumer"
            ),
            Rule::NotEnclosing { consumer, default_root: None, legal } => write!(
                f,
                "that loop does not enclose every use: `{consumer}` also reads this function outside it; legal: {legal}"
            ),
            Rule::NotEnclosing { consumer, default_root: Some(how), legal } => write!(
                f,
                "that loop does not enclose every use: `{consumer}` also reads this function outside it (`{consumer}` is computed at root by default, as {how}); legal: {legal}"
            ),
            Rule::InsideVector { var } => write!(
                f,
                "`{var}` is a vectorized loop or inside one; compute at a loop outside the vectorized loop"
            ),
            Rule::Cycle { chain } => write!(f, "placements form a cycle: {}", chain.join(" -> ")),
            Rule::StoreInsideCompute { compute: Some(compute) } => write!(
                f,
                "storage must be at the compute level or outside it, and this function is computed by `{compute}`"
            ),
            Rule::StoredOutsideParallelLoop { func, var } => write!(
                f,
                "the function is stored outside `{func}`'s parallel loop `{var}` but computed inside it: its update would accumulate into the same elements from different threads at once; store it at or inside that loop (store_at({func}, {var})), or keep the loop serial"
            ),
            Rule::StoreInsideCompute { compute: None } => f.write_str(
                "storage must be at the compute level or outside it, and this function is computed at root (the default for a function with an update definition); compute it inside that loop with compute_at(...)",
            ),
            Rule::ScheduledInline => f.write_str(
                "the function is computed inline (as a pure function is unless placed), so it has no loops or storage to schedule; add compute_root() or compute_at(...)",
            ),
            Rule::PerFunctionOnUpdate => f.write_str(
                "wrap, reorder_storage and fold_storage apply to the whole function (every stage); write them on its pure definition's line, not an update's",
            ),
            Rule::WrapSelf => f.write_str(
                "a function cannot wrap itself: its updates' reads of itself are its own storage; wrap it in a consumer instead",
            ),
            Rule::WrapNotRead { producer, reads } if reads.is_empty() => write!(
                f,
                "the function does not read `{producer}`; it reads no input or function (wrap names an input or function it calls)"
            ),
            Rule::WrapNotRead { producer, reads } => write!(
                f,
                "the function does not read `{producer}`; it reads: {} (wrap names an input or function it calls directly)",
                reads.join(", ")
            ),
            Rule::WrapperNameTaken { name, by } => write!(
                f,
                "the wrapper's name `{name}` is already {by}; choose a fresh name"
            ),
            Rule::WrapperNameInvalid { name } => write!(
                f,
                "`{name}` cannot name a function: use letters, digits and `_`, starting with a letter or `_`, and no reserved word"
            ),
            Rule::NestedSpecialization => f.write_str(
                "a specialization cannot be specialized again; write the conjunction as one condition (`a && b`) on the stage",
            ),
            Rule::SpecializedPerFunction => f.write_str(
                "placement, wrap, reorder_storage, fold_storage and rfactor apply to the whole function in every case; write them before `specialize` (or on a line of their own)",
            ),
            Rule::BadCondition { message } => write!(
                f,
                "the condition must be a bool expression of sizes, scalar parameters and constants: {message}"
            ),
            Rule::TooManyVersions { versions } => write!(
                f,
                "the schedule's specializations make {versions} versions of the kernel (the product over stages of their cases plus the general one); at most {} keep code size and compile time bounded",
                super::specialize::MAX_VERSIONS
            ),
            Rule::StorageOfOutput => f.write_str(
                "the output is stored in the caller's buffer, row-major in its dimensions' order; its storage order cannot change",
            ),
            Rule::UnknownDimension { var, dims } => write!(
                f,
                "`{var}` is not a dimension of the function; its dimensions are: {}",
                dims.join(", ")
            ),
            Rule::FoldOfOutput => f.write_str(
                "the output is stored whole in the caller's buffer; only a function computed and stored by the kernel can be folded",
            ),
            Rule::FoldOutOfRange { extent } => write!(
                f,
                "a fold of {extent} is out of range; use 1 to {MAX_SPLIT_FACTOR}"
            ),
            Rule::FoldedTwice { var } => write!(f, "`{var}` is already folded; a dimension is folded once"),
            Rule::FoldTooSmall { var, needed, given } => write!(
                f,
                "one iteration computes and reads up to {needed} values of `{var}`, more than the {given} slots of the fold (a value would be overwritten while still read); fold by at least {needed}"
            ),
            Rule::FoldNotProvable { var } => write!(
                f,
                "bounds inference finds no constant bound on the values of `{var}` computed at once (compute the function inside a loop of its consumer, e.g. `compute_at(g, y)` with `store_root()`), so no fold is provably safe"
            ),
            Rule::FoldUnderParallel { var, parallel } => write!(
                f,
                "the loop `{parallel}` between the buffer and the computation is parallel: its iterations would share the fold's slots of `{var}`; store the function inside `{parallel}` or make it serial"
            ),
            Rule::RfactorOfPure => f.write_str(
                "rfactor splits an update's reduction, and a pure definition has none; write it on an update's line (`f.update(0): ...`)",
            ),
            Rule::RfactorNotReduction { var, loops } => write!(
                f,
                "`{var}` is not a reduction loop of the update; rfactor takes one of: {}",
                loops.join(", ")
            ),
            Rule::RfactorAfterDirective { first } => write!(
                f,
                "only the split of the factored reduction variable may come before rfactor on its stage, and `{first}` does; schedule the merge after rfactor and the intermediate on its own lines"
            ),
            Rule::RfactorNotAssociative => f.write_str(
                "the update is not an associative fold, so its partial results cannot be combined in another order; rfactor takes `f(..) += e`, `-=`, `*=`, `f(..) = f(..) + e` (or `*`, or `f(..) - e`), `f(..) = max(f(..), e)` or min, where `e` does not read `f`",
            ),
            Rule::RfactorScan => f.write_str(
                "the update reads the function at another point or through a function it calls (a scan), so each step depends on the order of the earlier ones and cannot be factored",
            ),
            Rule::RfactorTarget => f.write_str(
                "the update writes a point that is not the function at its own pure variables (a data-dependent or constant index), so its partial results would not have one point each; rfactor takes an update of `f(x, y, ..)`",
            ),
            Rule::RfactorNonRectangular { var } => write!(
                f,
                "the bounds of `{var}` read another variable (the domain is not a box), so the factored loop's range would change from point to point"
            ),
            Rule::RfactorNameTaken { name, by } => write!(
                f,
                "the intermediate's name `{name}` is already {by}; choose a fresh name"
            ),
        }
    }
}

/// Where a function is computed (or stored).
#[derive(Clone, Debug, PartialEq)]
pub enum Placement {
    /// Computed inline at each use, with no storage of its own.
    Inline,
    /// Computed (or stored) at root, outside every loop.
    Root,
    /// Inside the loop `var` of stage `stage` of `func`.
    At {
        /// The consumer function.
        func: String,
        /// The consumer's stage: 0 the pure definition, `i + 1` update `i`.
        stage: usize,
        /// The loop of that stage.
        var: String,
    },
}

/// How one function is scheduled.
#[derive(Clone, Debug, PartialEq)]
pub struct FuncPlan {
    /// The function's name.
    pub name: String,
    /// Where the function is computed.
    pub compute: Placement,
    /// Where the function's buffer is allocated.
    pub store: Placement,
    /// Loops of each stage: the pure definition, then each update.
    pub stages: Vec<StageLoops>,
    /// The order of the buffer's dimensions, outermost first, as positions among the
    /// function's variables (`reorder_storage`; the definition's order by default).
    pub storage_order: Vec<usize>,
    /// The dimensions `fold_storage` folds (lowering also folds others on its own).
    pub folds: Vec<Fold>,
}

/// One `fold_storage`: a dimension of the function's buffer and its number of slots.
#[derive(Clone, Debug, PartialEq)]
pub struct Fold {
    /// The dimension's position among the function's variables.
    pub dim: usize,
    /// The number of slots the dimension is folded into.
    pub extent: i64,
    /// The directive as written, for lowering's errors.
    pub directive: String,
}

/// A validated schedule, resolved against a (lifted) pipeline.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The pipeline with reductions lifted, rfactor intermediates and wrappers.
    pub lifted: Lifted,
    /// Each function's plan, by name.
    pub funcs: BTreeMap<String, FuncPlan>,
}

impl Plan {
    /// The pipeline the plan schedules (the lifted one).
    pub fn pipeline(&self) -> &Pipeline {
        &self.lifted.pipeline
    }
}

/// Checks `schedule` against `lifted` and resolves it.
/// Rfactors' intermediates (`rfactor`), then wrappers (`wrap`), are made first, so the `Plan`'s
/// pipeline holds them as ordinary functions.
/// A schedule with specializations is checked in every version (`specialize::versions`); the
/// plan returned is the general case's.
pub fn validate(lifted: &Lifted, schedule: &Schedule) -> Result<Plan, ScheduleError> {
    if super::specialize::has_specializations(schedule) {
        let versions = super::specialize::versions(lifted, schedule)?;
        return Ok(versions.general().clone());
    }
    validate_plain(lifted, schedule)
}

/// `validate` for a schedule without specializations.
pub(crate) fn validate_plain(lifted: &Lifted, schedule: &Schedule) -> Result<Plan, ScheduleError> {
    // Rfactors first (each consumes its directives: the merge's lines keep only their own),
    // then wrappers, which may wrap an intermediate's reads.
    let (factored, schedule) = super::rfactor::apply_rfactors(lifted, schedule)?;
    let schedule = &schedule;
    let wrapped = super::wrap::apply_wrappers(&factored, schedule)?;
    let lifted = &wrapped;
    let pipeline = &lifted.pipeline;
    check_lines(pipeline, schedule)?;
    let mut funcs = BTreeMap::new();
    for func in &pipeline.funcs {
        let stages = func_stage_loops(pipeline, func, schedule)?;
        funcs.insert(
            func.name.clone(),
            FuncPlan {
                name: func.name.clone(),
                compute: Placement::Root,
                store: Placement::Root,
                stages,
                storage_order: storage_order(pipeline, func, schedule)?,
                folds: folds(pipeline, func, schedule)?,
            },
        );
    }
    let mut defaulted = BTreeSet::new();
    for func in &pipeline.funcs {
        let (compute, store) = explicit_placement(lifted, func, schedule, &funcs)?;
        if compute.is_none() && store.is_none() {
            defaulted.insert(func.name.clone());
        }
        let plan = funcs
            .get_mut(&func.name)
            .ok_or_else(|| unknown(&func.name, pipeline))?;
        plan.compute = compute.unwrap_or_else(|| default_compute(func, lifted));
        plan.store = store.unwrap_or_else(|| plan.compute.clone());
    }
    let mut bounded = funcs.clone();
    if super::inline_bound::root_past_inline_bound(pipeline, &mut bounded, &defaulted) {
        if let Ok(plan) = followed_plan(lifted, schedule, bounded) {
            return Ok(plan);
        }
    }
    followed_plan(lifted, schedule, funcs)
}

/// The plan of `funcs` with unplaced functions following placed producers into their loops
/// (`follow`); where following gives no legal plan, the defaults' plan gives the schedule's
/// own error.
fn followed_plan(
    lifted: &Lifted,
    schedule: &Schedule,
    funcs: BTreeMap<String, FuncPlan>,
) -> Result<Plan, ScheduleError> {
    if let Some(followed) = super::follow::follow_placed_producers(lifted, schedule, &funcs) {
        if let Ok(plan) = checked_plan(lifted, schedule, followed) {
            return Ok(plan);
        }
    }
    checked_plan(lifted, schedule, funcs)
}

/// The plan of `funcs` once lifted reductions are placed, checked against every rule that
/// reads more than one function's placement.
fn checked_plan(
    lifted: &Lifted,
    schedule: &Schedule,
    mut funcs: BTreeMap<String, FuncPlan>,
) -> Result<Plan, ScheduleError> {
    resolve_anonymous(lifted, schedule, &mut funcs);
    check_inline_has_no_loops(&funcs, schedule)?;
    let plan = Plan {
        lifted: lifted.clone(),
        funcs,
    };
    for func in &lifted.pipeline.funcs {
        check_encloses(&plan, func, schedule)?;
    }
    super::races::check_storage_races(&plan, schedule)?;
    check_unrolled_copies(&plan.funcs)?;
    Ok(plan)
}

/// Refuses a stage unrolled into more than `MAX_UNROLLED_COPIES` copies of its body. A loop
/// whose extent only bounds inference finds (`StageLoops::deferred`) counts once here;
/// lowering checks again once it knows that extent (`lower::constant_extents`).
pub(crate) fn check_unrolled_copies(
    funcs: &BTreeMap<String, FuncPlan>,
) -> Result<(), ScheduleError> {
    for fp in funcs.values() {
        let around = copies_around(funcs, &fp.compute);
        for loops in &fp.stages {
            let copies = around.saturating_mul(unrolled_copies(&loops.dims));
            if copies > MAX_UNROLLED_COPIES {
                return Err(ScheduleError::TooManyUnrolledCopies {
                    func: fp.name.clone(),
                    stage: stage_ref(loops.stage),
                    copies,
                });
            }
        }
    }
    Ok(())
}

/// How many copies unrolled loops make of whatever is computed at `placement`: the unrolled
/// loops of the consumer stage out to the placement's loop, then those around that consumer.
fn copies_around(funcs: &BTreeMap<String, FuncPlan>, placement: &Placement) -> u64 {
    let mut copies = 1u64;
    let mut at = placement;
    // Placements form no cycle (`check_encloses`); the bound only guards against a bug.
    for _ in 0..funcs.len() {
        let Placement::At { func, stage, var } = at else {
            break;
        };
        let Some(consumer) = funcs.get(func) else {
            break;
        };
        if let Some(loops) = consumer.stages.get(*stage) {
            let outside = loops.dims.iter().position(|d| d.name == *var);
            let enclosing = &loops.dims[..outside.map_or(0, |i| i + 1)];
            copies = copies.saturating_mul(unrolled_copies(enclosing));
        }
        at = &consumer.compute;
    }
    copies
}

/// The product of the extents of the unrolled loops among `dims`.
fn unrolled_copies(dims: &[Dim]) -> u64 {
    dims.iter()
        .filter(|d| d.kind == ForKind::Unrolled)
        .map(|d| d.const_extent.map_or(1, |e| e.max(1) as u64))
        .fold(1, u64::saturating_mul)
}

pub(super) fn unknown(name: &str, pipeline: &Pipeline) -> ScheduleError {
    ScheduleError::UnknownFunction {
        name: name.to_string(),
        known: pipeline.funcs.iter().map(|f| f.name.clone()).collect(),
    }
}

fn check_lines(pipeline: &Pipeline, schedule: &Schedule) -> Result<(), ScheduleError> {
    for line in &schedule.lines {
        let func = pipeline
            .func(&line.func)
            .ok_or_else(|| unknown(&line.func, pipeline))?;
        if let StageRef::Update(i) = line.stage {
            if i >= func.updates.len() {
                return Err(ScheduleError::UnknownStage {
                    func: func.name.clone(),
                    index: i,
                    count: func.updates.len(),
                });
            }
            if let Some(d) = line.directives.iter().find(|d| d.is_per_function()) {
                let rule = if d.is_placement() {
                    Rule::PlacementOnUpdate
                } else {
                    Rule::PerFunctionOnUpdate
                };
                return Err(directive_error(&func.name, line.stage, d, rule));
            }
        }
    }
    Ok(())
}

pub(super) fn directive_error(
    func: &str,
    stage: StageRef,
    d: &Directive,
    rule: Rule,
) -> ScheduleError {
    ScheduleError::Directive {
        func: func.to_string(),
        stage,
        directive: d.to_string(),
        rule,
    }
}

/// The constant extent of a reduction domain `lo..hi` when both bounds are constants.
fn const_extent(lo: &Expr, hi: &Expr) -> Option<i64> {
    match (lo, hi) {
        (Expr::Const(a), Expr::Const(b)) => Some(b.as_i64()? - a.as_i64()?),
        _ => None,
    }
}

fn func_stage_loops(
    pipeline: &Pipeline,
    func: &Func,
    schedule: &Schedule,
) -> Result<Vec<StageLoops>, ScheduleError> {
    let is_output = func.name == pipeline.output.name;
    let stages =
        std::iter::once(StageRef::Pure).chain((0..func.updates.len()).map(StageRef::Update));
    stages
        .map(|stage| {
            stage_loops(
                pipeline,
                func,
                stage,
                is_output,
                &schedule.directives(&func.name, stage),
                &const_extent,
            )
        })
        .collect()
}

/// The buffer order `reorder_storage` asks for (each directive reorders the dimensions it
/// names among their current places, as `reorder` does loops), as positions in `func.vars`.
fn storage_order(
    pipeline: &Pipeline,
    func: &Func,
    schedule: &Schedule,
) -> Result<Vec<usize>, ScheduleError> {
    let mut order: Vec<usize> = (0..func.vars.len()).collect();
    for d in schedule.directives(&func.name, StageRef::Pure) {
        let Directive::ReorderStorage(vars) = d else {
            continue;
        };
        let fail = |rule| directive_error(&func.name, StageRef::Pure, d, rule);
        if func.name == pipeline.output.name {
            return Err(fail(Rule::StorageOfOutput));
        }
        let mut wanted = Vec::new();
        for var in vars {
            let position = (func.vars.iter().position(|v| v == var)).ok_or_else(|| {
                fail(Rule::UnknownDimension {
                    var: var.clone(),
                    dims: func.vars.clone(),
                })
            })?;
            if wanted.contains(&position) {
                return Err(fail(Rule::ReorderRepeats { var: var.clone() }));
            }
            wanted.push(position);
        }
        let mut slots: Vec<usize> = (0..order.len())
            .filter(|&i| wanted.contains(&order[i]))
            .collect();
        slots.sort_unstable();
        for (slot, position) in slots.into_iter().zip(wanted) {
            order[slot] = position;
        }
    }
    Ok(order)
}

/// The dimensions `fold_storage` folds, each checked: a dimension of a function the kernel
/// stores, folded once, by an extent in range. Whether the extent is large enough only bounds
/// inference knows (`lower::fold_storage`).
fn folds(
    pipeline: &Pipeline,
    func: &Func,
    schedule: &Schedule,
) -> Result<Vec<Fold>, ScheduleError> {
    let mut folds: Vec<Fold> = Vec::new();
    for d in schedule.directives(&func.name, StageRef::Pure) {
        let Directive::FoldStorage { var, extent } = d else {
            continue;
        };
        let fail = |rule| directive_error(&func.name, StageRef::Pure, d, rule);
        if func.name == pipeline.output.name {
            return Err(fail(Rule::FoldOfOutput));
        }
        let dim = (func.vars.iter().position(|v| v == var)).ok_or_else(|| {
            fail(Rule::UnknownDimension {
                var: var.clone(),
                dims: func.vars.clone(),
            })
        })?;
        if !(1..=MAX_SPLIT_FACTOR).contains(extent) {
            return Err(fail(Rule::FoldOutOfRange { extent: *extent }));
        }
        if folds.iter().any(|f| f.dim == dim) {
            return Err(fail(Rule::FoldedTwice { var: var.clone() }));
        }
        folds.push(Fold {
            dim,
            extent: *extent,
            directive: d.to_string(),
        });
    }
    Ok(folds)
}

/// Pure functions are inlined; the output, functions with updates and functions holding an
/// inline reduction inside a larger expression (`rstd(r) = 1 / sqrt(sum(c in 0..C) ...)`,
/// whose sum lifting makes a function of its own) are computed at root. Inlined,
/// such a function would repeat its whole reduction for every element of every consumer
/// (layernorm: O(C^2) work per row); Halide users expect reductions computed once.
fn default_compute(func: &Func, lifted: &Lifted) -> Placement {
    let holds_reduction = lifted.anonymous.iter().any(|(_, c)| *c == func.name);
    if func.name == lifted.pipeline.output.name || !func.updates.is_empty() || holds_reduction {
        Placement::Root
    } else {
        Placement::Inline
    }
}

type Explicit = (Option<Placement>, Option<Placement>);

/// The compute and store placements a function's line asks for, checked one by one.
fn explicit_placement(
    lifted: &Lifted,
    func: &Func,
    schedule: &Schedule,
    funcs: &BTreeMap<String, FuncPlan>,
) -> Result<Explicit, ScheduleError> {
    let pipeline = &lifted.pipeline;
    let mut compute: Option<(Placement, &Directive)> = None;
    let mut store: Option<(Placement, &Directive)> = None;
    let is_output = func.name == pipeline.output.name;
    for d in schedule
        .directives(&func.name, StageRef::Pure)
        .into_iter()
        .filter(|d| d.is_placement())
    {
        let fail = |rule| directive_error(&func.name, StageRef::Pure, d, rule);
        if is_output {
            return Err(fail(Rule::PlacementOfOutput));
        }
        let placement = match d {
            Directive::ComputeInline if !func.updates.is_empty() => {
                return Err(fail(Rule::InlineWithUpdate))
            }
            Directive::ComputeInline => Placement::Inline,
            Directive::ComputeRoot | Directive::StoreRoot => Placement::Root,
            Directive::ComputeAt(level) | Directive::StoreAt(level) => {
                resolve_level(pipeline, level, funcs).map_err(fail)?
            }
            _ => continue,
        };
        let slot = if matches!(d, Directive::StoreRoot | Directive::StoreAt(_)) {
            &mut store
        } else {
            &mut compute
        };
        if let Some((_, first)) = slot {
            return Err(fail(Rule::PlacedTwice {
                first: first.to_string(),
            }));
        }
        *slot = Some((placement, d));
    }
    if let Some((s, d)) = &store {
        let fail = |rule| directive_error(&func.name, StageRef::Pure, d, rule);
        let c = compute
            .as_ref()
            .map_or_else(|| default_compute(func, lifted), |(c, _)| c.clone());
        if c == Placement::Inline {
            return Err(fail(Rule::ScheduledInline));
        }
        if !store_encloses(s, &c, funcs) {
            return Err(fail(Rule::StoreInsideCompute {
                compute: compute.as_ref().map(|(_, d)| d.to_string()),
            }));
        }
    }
    Ok((compute.map(|c| c.0), store.map(|s| s.0)))
}

/// A function computed inline has no loops: loop directives on its line would be ignored.
fn check_inline_has_no_loops(
    funcs: &BTreeMap<String, FuncPlan>,
    schedule: &Schedule,
) -> Result<(), ScheduleError> {
    for (name, _) in funcs.iter().filter(|(_, p)| p.compute == Placement::Inline) {
        let directives = schedule.directives(name, StageRef::Pure);
        // A wrap only redirects the function's reads; an inlined consumer may have one.
        let shapes_storage_or_loops =
            |d: &&Directive| !d.is_placement() && !matches!(d, Directive::Wrap { .. });
        if let Some(d) = directives.into_iter().find(shapes_storage_or_loops) {
            return Err(directive_error(
                name,
                StageRef::Pure,
                d,
                Rule::ScheduledInline,
            ));
        }
    }
    Ok(())
}

/// Resolves `g[.update(i)], v` to a loop of that stage, refusing vectorized loops.
fn resolve_level(
    pipeline: &Pipeline,
    level: &LoopLevel,
    funcs: &BTreeMap<String, FuncPlan>,
) -> Result<Placement, Rule> {
    let name = format!("{}{}", level.func, stage_suffix(level.stage));
    let Some(stage) = funcs
        .get(&level.func)
        .and_then(|plan| plan.stages.get(level.stage.index()))
    else {
        return Err(Rule::UnknownLevelStage {
            name,
            stages: stage_names(pipeline),
        });
    };
    let names: Vec<String> = stage.dims.iter().map(|d| d.name.clone()).collect();
    let at = names
        .iter()
        .position(|n| n == &level.var)
        .ok_or_else(|| Rule::UnknownLoopLevel {
            var: level.var.clone(),
            loops: names.clone(),
        })?;
    if stage.dims[..=at]
        .iter()
        .any(|d| d.kind == ForKind::Vectorized)
    {
        return Err(Rule::InsideVector {
            var: level.var.clone(),
        });
    }
    Ok(Placement::At {
        func: level.func.clone(),
        stage: level.stage.index(),
        var: level.var.clone(),
    })
}

/// Every stage of every function, as a schedule names them: `f`, `f.update(0)`, ...
fn stage_names(pipeline: &Pipeline) -> Vec<String> {
    let stages = |f: &Func| {
        let updates = (0..f.updates.len())
            .map(|i| format!("{}{}", f.name, stage_suffix(StageRef::Update(i))));
        std::iter::once(f.name.clone())
            .chain(updates)
            .collect::<Vec<_>>()
    };
    pipeline.funcs.iter().flat_map(stages).collect()
}

/// Whether storage at `store` is at or outside computation at `compute`.
fn store_encloses(
    store: &Placement,
    compute: &Placement,
    funcs: &BTreeMap<String, FuncPlan>,
) -> bool {
    match (store, compute) {
        (Placement::Root, _) => true,
        (_, Placement::Root | Placement::Inline) => false,
        (
            Placement::At {
                func: sf,
                stage: ss,
                var: sv,
            },
            Placement::At {
                func: cf,
                stage: cs,
                var: cv,
            },
        ) => {
            let Some(stage) = funcs.get(sf).and_then(|p| p.stages.get(*ss)) else {
                return false;
            };
            let pos = |v: &str| stage.dims.iter().position(|d| d.name == v);
            sf == cf && ss == cs && pos(sv) <= pos(cv)
        }
        (Placement::Inline, _) => false,
    }
}

/// Where `consumer` is computed at root because the schedule leaves it unplaced: why, and how
/// to move it into the loop `target` names, in words.
fn root_by_default(
    plan: &Plan,
    schedule: &Schedule,
    consumer: &str,
    target: &Placement,
) -> Option<String> {
    let at_root = plan.funcs.get(consumer)?.compute == Placement::Root;
    let func = plan.pipeline().func(consumer)?;
    let lifted = plan.lifted.anonymous.iter().any(|(a, _)| a == consumer);
    let output = consumer == plan.pipeline().output.name;
    if !at_root || lifted || output || super::follow::is_placed(schedule, consumer) {
        return None;
    }
    let Placement::At {
        func: g,
        stage,
        var,
    } = target
    else {
        return None;
    };
    let level = format!("compute_at({g}{}, {var})", stage_suffix(stage_ref(*stage)));
    Some(if func.updates.is_empty() {
        format!("a function holding a reduction is: place it in that loop with `{consumer}: {level}`, or inline it with `{consumer}: compute_inline()`")
    } else {
        format!("a function with an update is: place it in that loop with `{consumer}: {level}`")
    })
}

/// Functions lifting created default to the innermost non-vector loop of their one consumer.
fn resolve_anonymous(lifted: &Lifted, schedule: &Schedule, funcs: &mut BTreeMap<String, FuncPlan>) {
    for (name, _) in &lifted.anonymous {
        if super::follow::is_placed(schedule, name) {
            continue;
        }
        let consumers = effective_consumers(&lifted.pipeline, funcs, name);
        let placement = match consumers.as_slice() {
            [(consumer, stage)] => innermost_loop(funcs, consumer, *stage),
            _ => None,
        };
        if let (Some(placement), Some(plan)) = (placement, funcs.get_mut(name)) {
            plan.store = placement.clone();
            plan.compute = placement;
        }
    }
}

fn innermost_loop(
    funcs: &BTreeMap<String, FuncPlan>,
    consumer: &str,
    stage: usize,
) -> Option<Placement> {
    let dims = &funcs.get(consumer)?.stages.get(stage)?.dims;
    let first_vector = dims
        .iter()
        .position(|d| d.kind == ForKind::Vectorized)
        .unwrap_or(dims.len());
    let var = dims[..first_vector].last()?.name.clone();
    Some(Placement::At {
        func: consumer.to_string(),
        stage,
        var,
    })
}

/// The (function, stage) pairs that read `name`, looking through inlined functions.
pub fn effective_consumers(
    pipeline: &Pipeline,
    funcs: &BTreeMap<String, FuncPlan>,
    name: &str,
) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for func in &pipeline.funcs {
        if func.name == name {
            continue;
        }
        let inlined = funcs
            .get(&func.name)
            .is_some_and(|p| p.compute == Placement::Inline);
        for stage in stages_reading(func, name) {
            if inlined {
                for c in effective_consumers(pipeline, funcs, &func.name) {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            } else if !out.contains(&(func.name.clone(), stage)) {
                out.push((func.name.clone(), stage));
            }
        }
    }
    out
}

/// The stages of `func` whose definitions call `name`.
fn stages_reading(func: &Func, name: &str) -> Vec<usize> {
    let reads = |e: &Expr| {
        let mut found = false;
        e.for_each(&mut |x| {
            found |= matches!(x, Expr::Call(c) if c.target == CallTarget::Func && c.name == name)
        });
        found
    };
    let mut stages = Vec::new();
    if reads(&func.value) {
        stages.push(0);
    }
    for (i, u) in func.updates.iter().enumerate() {
        if reads(&u.value) || u.args.iter().any(reads) {
            stages.push(i + 1);
        }
    }
    stages
}

/// Checks a `compute_at` loop encloses every use of the function.
fn check_encloses(plan: &Plan, func: &Func, schedule: &Schedule) -> Result<(), ScheduleError> {
    let Some(fp) = plan.funcs.get(&func.name) else {
        return Ok(());
    };
    let Placement::At {
        func: g,
        stage,
        var,
    } = &fp.compute
    else {
        return Ok(());
    };
    let directive = schedule
        .directives(&func.name, StageRef::Pure)
        .into_iter()
        .find(|d| matches!(d, Directive::ComputeAt(_)))
        .map(|d| d.to_string())
        .unwrap_or_else(|| format!("(default) compute_at({g}, {var})"));
    let fail = |rule| ScheduleError::Directive {
        func: func.name.clone(),
        stage: StageRef::Pure,
        directive: directive.clone(),
        rule,
    };
    if plan
        .funcs
        .get(g)
        .is_some_and(|p| p.compute == Placement::Inline)
    {
        return Err(fail(Rule::AtInlined { func: g.clone() }));
    }
    let mut chain = vec![func.name.clone()];
    let target = Placement::At {
        func: g.clone(),
        stage: *stage,
        var: var.clone(),
    };
    for (consumer, consumer_stage) in effective_consumers(plan.pipeline(), &plan.funcs, &func.name)
    {
        let inside = consumer == *g && consumer_stage == *stage
            || nested_inside(plan, &consumer, &target, &mut chain).map_err(fail)?;
        if !inside {
            let legal = legal_levels(plan, &func.name);
            let default_root = root_by_default(plan, schedule, &consumer, &target);
            return Err(fail(Rule::NotEnclosing {
                consumer,
                default_root,
                legal,
            }));
        }
    }
    if nested_inside(
        plan,
        g,
        &Placement::At {
            func: func.name.clone(),
            stage: 0,
            var: String::new(),
        },
        &mut vec![func.name.clone()],
    )
    .map_err(fail)?
        || g == &func.name
    {
        return Err(fail(Rule::Cycle {
            chain: vec![func.name.clone(), g.clone(), func.name.clone()],
        }));
    }
    Ok(())
}

/// Whether `func` is computed inside `level` (at it, deeper in the same stage, or inside a
/// function computed there), following compute_at chains.
fn nested_inside(
    plan: &Plan,
    func: &str,
    level: &Placement,
    chain: &mut Vec<String>,
) -> Result<bool, Rule> {
    if chain.iter().any(|c| c == func) && chain.len() > 1 {
        chain.push(func.to_string());
        return Err(Rule::Cycle {
            chain: chain.clone(),
        });
    }
    let Some(fp) = plan.funcs.get(func) else {
        return Ok(false);
    };
    let Placement::At {
        func: g,
        stage,
        var,
    } = &fp.compute
    else {
        return Ok(false);
    };
    if let Placement::At {
        func: lf,
        stage: ls,
        var: lv,
    } = level
    {
        if g == lf && stage == ls {
            if lv.is_empty() {
                return Ok(true);
            }
            let dims = &plan.funcs[g].stages[*stage].dims;
            let pos = |v: &str| dims.iter().position(|d| d.name == v);
            return Ok(pos(var) >= pos(lv));
        }
    }
    chain.push(func.to_string());
    let result = nested_inside(plan, g, level, chain);
    chain.pop();
    result
}

/// What a `compute_at` of `name` could name instead: the loops of its only consumer's stage
/// outside any vectorized loop (`resolve_level` refuses the others), written with the stage
/// (`g.update(0)`) as a schedule names it, or root.
fn legal_levels(plan: &Plan, name: &str) -> String {
    match effective_consumers(plan.pipeline(), &plan.funcs, name).as_slice() {
        [(consumer, stage)] => {
            let dims = &plan.funcs[consumer].stages[*stage].dims;
            let loops: Vec<String> = dims
                .iter()
                .take_while(|d| d.kind != ForKind::Vectorized)
                .map(|d| d.name.clone())
                .collect();
            format!(
                "compute_root(), or compute_at({consumer}{}, v) for v in {}",
                stage_suffix(stage_ref(*stage)),
                loops.join(", ")
            )
        }
        _ => "compute_root(), or a loop of a function inside which every consumer is computed"
            .to_string(),
    }
}

/// The stage a `Plan` numbers `stage` (0: the pure definition, `i + 1`: update `i`).
pub(crate) fn stage_ref(stage: usize) -> StageRef {
    match stage.checked_sub(1) {
        None => StageRef::Pure,
        Some(i) => StageRef::Update(i),
    }
}
