//! The learned model's training data: measurements as (features, seconds), read back from the
//! database. A measurement's loop-nest features come from the database's cache
//! (`loop_features`, filled at the end of every tuning run by [`cache_run_features`]), or,
//! for records older than the cache or than this version of the features, by lowering the
//! recorded schedule of the recorded kernel again (the database keeps the kernel's source,
//! the shape and the schedule's text).

use super::{loop_features, model_input, FEATURE_COUNT};
use std::collections::HashMap;
use strata_dsl::{Pipeline, Sizes};
use strata_schedule::text::parse_schedule;
use strata_scheduler::features::FEATURE_VERSION;
use strata_tuning_db::{Db, DbError, FeatureKey, Measurement, Run, Status, Target, TuningKey};

/// One measurement as the model learns from it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The candidate's features ([`super::features`]).
    pub features: Vec<f64>,
    /// Its measured run time.
    pub seconds: f64,
    /// How much it counts (the run being tuned counts more than the database's history).
    pub weight: f64,
    /// What was measured: the kernel's name and the shape (`matmul at M=64,N=64,K=64`; empty
    /// for the run being tuned), for evaluations that hold a kernel out.
    pub origin: String,
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
/// schedule no longer parses or lowers is skipped. With `cache`, features it had to compute
/// (records older than the cache or than these features) are cached for the next reader (a
/// tuning run, whose database is open for writing; a reader writes nothing).
pub fn samples_from_db(
    db: &Db,
    target: &Target,
    backend: &str,
    limit: usize,
    cache: bool,
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
        let cached = db.cached_features(feature_key(key))?;
        let mut computed = Vec::new();
        for m in db.measurements(run_id)? {
            if samples.len() >= limit {
                break;
            }
            let Some(seconds) = trusted_search_time(&m) else {
                continue;
            };
            let features = match cached.get(&m.schedule_hash) {
                Some(f) => Some(f.clone()),
                None => lowered_features(&pipeline, &m.schedule, &sizes).inspect(|f| {
                    computed.push((m.schedule_hash.clone(), f.clone()));
                }),
            };
            if let Some(f) = features {
                samples.push(Sample {
                    features: model_input(&f, threads),
                    seconds,
                    weight: 1.0,
                    origin: format!("{} at {}", key.kernel_name, key.shape),
                });
            }
        }
        if cache && !computed.is_empty() {
            // Only a speed-up for the next reader: a cache that cannot be written costs it
            // the time to lower these again, and this reader nothing.
            let _ = db.cache_features(feature_key(key), &computed);
        }
    }
    Ok(samples)
}

/// Caches the loop-nest features of every timed search measurement of run `run_id` (of
/// `pipeline` at `sizes`, recorded under `key`) that the cache lacks; `known` holds features
/// already computed, by schedule hash (a guided search's), which are not computed again.
pub fn cache_run_features(
    db: &Db,
    run_id: i64,
    pipeline: &Pipeline,
    sizes: &Sizes,
    key: &TuningKey,
    known: &HashMap<String, Vec<f64>>,
) -> Result<(), DbError> {
    let fkey = feature_key(key);
    let cached = db.cached_features(fkey)?;
    let rows: Vec<(String, Vec<f64>)> = db
        .measurements(run_id)?
        .iter()
        .filter(|m| trusted_search_time(m).is_some() && !cached.contains_key(&m.schedule_hash))
        .filter_map(|m| {
            let f = (known.get(&m.schedule_hash).cloned())
                .or_else(|| lowered_features(pipeline, &m.schedule, sizes))?;
            Some((m.schedule_hash.clone(), f))
        })
        .collect();
    db.cache_features(fkey, &rows)
}

/// The cache entry of a tuning key's kernel and shape, for this version of the features.
fn feature_key(key: &TuningKey) -> FeatureKey<'_> {
    FeatureKey {
        kernel_hash: &key.kernel_hash,
        shape: &key.shape,
        version: i64::from(FEATURE_VERSION),
    }
}

/// A search measurement's time when it ran and is trusted (a re-measurement is left out:
/// its search measurement is in).
fn trusted_search_time(m: &Measurement) -> Option<f64> {
    match (&m.status, m.remeasured) {
        (Status::Ok, false) => m.median_s,
        _ => None,
    }
}

/// The loop-nest features of a recorded schedule, when its text still parses and lowers.
fn lowered_features(pipeline: &Pipeline, schedule: &str, sizes: &Sizes) -> Option<Vec<f64>> {
    let schedule = parse_schedule(schedule).ok()?;
    loop_features(pipeline, &schedule, sizes).ok()
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
