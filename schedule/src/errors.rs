//! The errors of validation: `ScheduleError` and the catalogue of rules a directive can break
//! (`Rule`), each printed with the function, the directive as written, the rule and what would
//! be legal.

use crate::limits::{MAX_SPLIT_FACTOR, MAX_UNROLLED_COPIES, MAX_VERSIONS};
use crate::Directive;
use crate::ForKind;
use crate::StageRef;
use std::fmt;
use strata_dsl::ir::Pipeline;

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

/// How a message names a stage after its function: `.update(i)` for update `i`, nothing for
/// the pure definition.
pub fn stage_suffix(stage: StageRef) -> String {
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
                MAX_VERSIONS
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

/// The error for a function `name` that `pipeline` does not have (listing those it has).
pub fn unknown(name: &str, pipeline: &Pipeline) -> ScheduleError {
    ScheduleError::UnknownFunction {
        name: name.to_string(),
        known: pipeline.funcs.iter().map(|f| f.name.clone()).collect(),
    }
}

/// The error for directive `d` of `func`'s stage `stage`, which breaks `rule`.
pub fn directive_error(func: &str, stage: StageRef, d: &Directive, rule: Rule) -> ScheduleError {
    ScheduleError::Directive {
        func: func.to_string(),
        stage,
        directive: d.to_string(),
        rule,
    }
}
