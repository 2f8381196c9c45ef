//! Validation: checks a schedule against a pipeline before lowering and resolves it into a
//! `Plan` (each function's placement, storage level and stage loops). Every illegal directive is
//! a `ScheduleError` that prints the function, the directive as written, the rule it breaks and
//! what would be legal. No directive is ever silently ignored.

mod plain;
pub mod specialize;

pub use crate::errors::{directive_error, stage_suffix, unknown, Rule, ScheduleError};
pub use crate::limits::MAX_UNROLLED_COPIES;
pub use crate::plan::{effective_consumers, Fold, FuncPlan, Placement, Plan};
pub(crate) use plain::validate_plain;
pub use plain::{check_unrolled_copies, stage_ref};

use crate::lift_reductions::Lifted;
use crate::Schedule;

/// Checks `schedule` against `lifted` and resolves it.
/// Rfactors' intermediates (`rfactor`), then wrappers (`wrap`), are made first, so the `Plan`'s
/// pipeline holds them as ordinary functions.
/// A schedule with specializations is checked in every version (`specialize::versions`); the
/// plan returned is the general case's.
pub fn validate(lifted: &Lifted, schedule: &Schedule) -> Result<Plan, ScheduleError> {
    if specialize::has_specializations(schedule) {
        let versions = specialize::versions(lifted, schedule)?;
        return Ok(versions.general().clone());
    }
    validate_plain(lifted, schedule)
}
