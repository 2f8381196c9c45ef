//! Reading winners back: a stored schedule checked against the kernel before use, the best
//! usable winner of a key, and where the database is by default.

use std::path::{Path, PathBuf};
use strata_dsl::Pipeline;
use strata_schedule::lift_reductions::lift_reductions;
use strata_schedule::validate::validate;
use strata_schedule::Schedule;
use strata_tuning_db::{printable, Db, Miss, TuningKey, Winner};

/// `text` as a schedule of `pipeline`, or why it is not one: it does not parse, or it
/// breaks a rule for this kernel. A schedule read from a database is checked so before use.
pub fn checked_schedule(pipeline: &Pipeline, text: &str) -> Result<Schedule, String> {
    let schedule = strata_schedule::text::parse_schedule(text)
        .map_err(|d| format!("its schedule does not parse: {}", d.message))?;
    validate(&lift_reductions(pipeline), &schedule)
        .map_err(|e| format!("its schedule is illegal for `{}`: {e}", pipeline.name))?;
    Ok(schedule)
}

/// What [`usable_winner`] found.
#[derive(Debug)]
pub struct UsableWinner {
    /// The best stored winner whose schedule fits the kernel, parsed; `None` when every
    /// stored winner was skipped.
    pub found: Option<(Schedule, Winner)>,
    /// Why each better winner was skipped, best first (for warnings).
    pub skipped: Vec<String>,
}

/// The database's best winner for `key` whose schedule fits `pipeline`: one that does not
/// parse or breaks a rule (an imported or older record) is skipped for the next best.
/// `Err` when the database has no winner at all (the miss says why).
// A miss is the cold path of a once-per-kernel lookup: its size does not matter.
#[allow(clippy::result_large_err)]
pub fn usable_winner(db: &Db, pipeline: &Pipeline, key: &TuningKey) -> Result<UsableWinner, Miss> {
    let (winners, damaged) =
        db.snapshot(|db| Ok::<_, Miss>((db.ranked_winners(key)?, db.damaged(Some(key))?)))?;
    // Damaged rows never rank; say which were left out.
    let mut skipped: Vec<String> = damaged
        .iter()
        .map(|d| format!("skipping a damaged record: {d}"))
        .collect();
    if winners.is_empty() {
        return Err(db.explain_miss(key)?);
    }
    for winner in winners {
        match checked_schedule(pipeline, &winner.measurement.schedule) {
            Ok(schedule) => {
                return Ok(UsableWinner {
                    found: Some((schedule, winner)),
                    skipped,
                })
            }
            Err(why) => skipped.push(format!(
                "skipping the stored winner of run {} (trial {}): {}",
                winner.run_id,
                winner.measurement.trial,
                printable(&why)
            )),
        }
    }
    Ok(UsableWinner {
        found: None,
        skipped,
    })
}

/// Where the tuning database is by default: `STRATA_DB`, else `strata.db` here.
pub fn default_db_path() -> PathBuf {
    std::env::var_os("STRATA_DB")
        .map_or_else(|| Path::new("strata.db").to_path_buf(), PathBuf::from)
}
