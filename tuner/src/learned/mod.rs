//! The cost model that learns across runs: gradient-boosted regression trees (the `gbdt`
//! crate; TVM's and Ansor's cost models are XGBoost's trees) predicting the log of a
//! candidate's run time from the features of its lowered loop nest
//! ([`strata_scheduler::features`]), not from its genome, so what is learned on one kernel,
//! shape or thread count carries to another. It is trained on every trusted search
//! measurement in the database for this machine and backend ([`samples`]), and refined during
//! a run with the run's own measurements ([`crate::strategy::Searcher`]).
//!
//! Why trees: run times depend on features through thresholds (a working set that fits the
//! cache or not, a vector width or not), which trees split on directly; they rank well from
//! a few hundred samples, train on thousands in well under a second, and need no scaling of
//! the features. A small MLP would need more samples and tuning of its own.

pub mod autoschedule;
pub mod evaluate;
pub mod guide;
mod samples;

pub use samples::{cache_run_features, samples_from_db, Sample};

use gbdt::config::{Config, Loss};
use gbdt::decision_tree::{Data, DataVec};
use gbdt::gradient_boost::GBDT;
use strata_dsl::{Pipeline, Sizes};
use strata_schedule::Schedule;
use strata_scheduler::features::{LoopFeatures, FEATURE_NAMES};

/// Fewer samples than this train no model (trees fitted to a handful of points rank
/// candidates no better than chance).
pub const MIN_SAMPLES: usize = 24;
/// Trees in the ensemble, each this deep at most, each step scaled by `SHRINKAGE`.
const TREES: usize = 80;
const DEPTH: u32 = 5;
const SHRINKAGE: f32 = 0.15;
/// A leaf holds this many samples at least (no leaf fitted to one noisy measurement).
const MIN_LEAF: usize = 3;

/// The model's input for a candidate: its loop nest's features ([`loop_features`]), then the
/// log of the thread count it runs with (parallel work is only worth what the threads make
/// of it).
pub fn features(
    pipeline: &Pipeline,
    schedule: &Schedule,
    sizes: &Sizes,
    threads: usize,
) -> Result<Vec<f64>, String> {
    Ok(model_input(
        &loop_features(pipeline, schedule, sizes)?,
        threads,
    ))
}

/// The features of the loop nest `schedule` makes of `pipeline` at `sizes` (what the
/// database caches: they do not depend on the threads).
pub fn loop_features(
    pipeline: &Pipeline,
    schedule: &Schedule,
    sizes: &Sizes,
) -> Result<Vec<f64>, String> {
    let kernel = strata_jit::lower_for(pipeline, schedule, sizes).map_err(|e| e.to_string())?;
    Ok(LoopFeatures::of(&kernel).vector())
}

/// A loop nest's features with the thread count: what the model reads.
pub fn model_input(loop_features: &[f64], threads: usize) -> Vec<f64> {
    let mut f = loop_features.to_vec();
    f.push((threads.max(1) as f64).ln());
    f
}

/// How many entries [`features`] gives.
pub const FEATURE_COUNT: usize = FEATURE_NAMES.len() + 1;

/// Trees trained on measurements: predicts a candidate's run time from its features.
pub struct LearnedModel {
    trees: GBDT,
    samples: usize,
}

impl LearnedModel {
    /// A model of `samples` (each weighted by its `weight`); `None` when there are fewer
    /// than [`MIN_SAMPLES`] usable ones.
    pub fn fit(samples: &[Sample]) -> Option<LearnedModel> {
        let mut data: DataVec = samples
            .iter()
            .filter(|s| s.usable())
            .map(|s| {
                Data::new_training_data(
                    as_f32(&s.features),
                    s.weight as f32,
                    s.log_seconds() as f32,
                    None,
                )
            })
            .collect();
        if data.len() < MIN_SAMPLES {
            return None;
        }
        let mut config = Config::new();
        config.set_feature_size(FEATURE_COUNT);
        config.set_max_depth(DEPTH);
        config.set_iterations(TREES);
        config.set_shrinkage(SHRINKAGE);
        config.set_min_leaf_size(MIN_LEAF);
        config.set_loss(&loss_name());
        // Both sampling ratios stay 1: below 1 the crate samples from an unseeded generator,
        // and the same measurements would train different models.
        let mut trees = GBDT::new(&config);
        trees.fit(&mut data);
        Some(LearnedModel {
            trees,
            samples: data.len(),
        })
    }

    /// The predicted run time of each candidate, seconds (only the order means much: the
    /// model is trained for ranking, across kernels it has never seen).
    pub fn predict(&self, candidates: &[Vec<f64>]) -> Vec<f64> {
        if candidates.is_empty() {
            return Vec::new();
        }
        let data: DataVec = candidates
            .iter()
            .map(|f| Data::new_test_data(as_f32(f), None))
            .collect();
        self.trees
            .predict(&data)
            .into_iter()
            .map(|log| f64::from(log).exp())
            .collect()
    }

    /// How many measurements trained it.
    pub fn samples(&self) -> usize {
        self.samples
    }
}

/// The loss `gbdt` names squared error by (its config takes names).
fn loss_name() -> String {
    gbdt::config::loss2string(&Loss::SquaredError)
}

/// Features as the crate's `f32`s, of [`FEATURE_COUNT`] entries (a sample from another
/// version of the features is padded or cut, and then rarely useful; [`Sample::usable`]).
fn as_f32(features: &[f64]) -> Vec<f32> {
    let mut v: Vec<f32> = features.iter().map(|&x| x as f32).collect();
    v.resize(FEATURE_COUNT, 0.0);
    v
}

#[cfg(test)]
mod tests;
