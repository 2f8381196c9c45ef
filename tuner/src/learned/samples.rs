//! The learned model's training data: measurements as (features, seconds), read back from the
//! database by lowering each recorded schedule of each recorded kernel again (the database
//! keeps the kernel's source, the shape and the schedule's text, so nothing else needs
//! storing, and features of a newer version come from old records too).

use super::{features, FEATURE_COUNT};
use strata_dsl::{Pipeline, Sizes};
use strata_schedule::text::parse_schedule;
use strata_tuning_db::{Db, DbError, Run, Status, Target};

/// One measurement as the model learns from it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The candidate's features ([`super::features`]).
    pub features: Vec<f64>,
    /// Its measured run time.
    pub seconds: f64,
    /// How much it counts (the run being tuned counts more than the database's history).
    pub weight: f64,
}

impl Sample {
    /// The target the trees fit: run times span orders of magnitude.
    pub fn log_seconds(&self) -> f64 {
        self.seconds.ln()
    }

    /// A positive finite time and finite features of this version's length.
    pub fn usable(&self) -> bool {
        self.seconds > 0.0
            && self.seconds.is_finite()
            && self.weight > 0.0
            && self.features.len() == FEATURE_COUNT
            && self.features.iter().all(|x| x.is_finite())
    }
}

/// The trusted search measurements in `db` of runs on `target`'s machine (its CPU model and
/// vector features; any thread count, which is a feature) compiled by `backend`, newest runs
/// first, at most `limit` of them. Damaged rows are never read ([`Db::measurements`]);
/// re-measurements are left out (their search measurement is in); a record whose kernel or
/// schedule no longer parses or lowers is skipped.
pub fn samples_from_db(
    db: &Db,
    target: &Target,
    backend: &str,
    limit: usize,
) -> Result<Vec<Sample>, DbError> {
    let mut samples = Vec::new();
    for (run_id, run) in db.runs()?.into_iter().rev() {
        if samples.len() >= limit {
            break;
        }
        let key = &run.start.key;
        let same_machine = key.target.cpu_model == target.cpu_model
            && key.target.features == target.features
            && key.backend == backend;
        let Some((pipeline, sizes)) = same_machine.then(|| kernel_of(&run)).flatten() else {
            continue;
        };
        let threads = key.target.threads as usize;
        for m in db.measurements(run_id)? {
            if samples.len() >= limit {
                break;
            }
            let (Status::Ok, false, Some(seconds)) = (&m.status, m.remeasured, m.median_s) else {
                continue;
            };
            let Ok(schedule) = parse_schedule(&m.schedule) else {
                continue;
            };
            if let Ok(features) = features(&pipeline, &schedule, &sizes, threads) {
                samples.push(Sample {
                    features,
                    seconds,
                    weight: 1.0,
                });
            }
        }
    }
    Ok(samples)
}

/// The kernel a run tuned and the shape it tuned at, when its record still parses.
fn kernel_of(run: &Run) -> Option<(Pipeline, Sizes)> {
    let key = &run.start.key;
    let pipeline = strata_dsl::parse_kernels(&run.start.kernel_source, "database")
        .ok()?
        .into_iter()
        .find(|k| k.name == key.kernel_name)?;
    Some((pipeline, shape_of(&key.shape)?))
}

/// The sizes of a shape as the database writes it (`K=256,M=256,N=256`; empty: none).
pub(crate) fn shape_of(text: &str) -> Option<Sizes> {
    text.split(',')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let (name, value) = part.split_once('=')?;
            Some((name.trim().to_string(), value.trim().parse().ok()?))
        })
        .collect()
}
