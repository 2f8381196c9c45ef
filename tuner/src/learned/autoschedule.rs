//! A schedule from the learned model alone, nothing measured (the way Adams2019 uses its
//! model): the space's rule-made seeds, mutations of them and random points are lowered,
//! their features predicted, and the fastest predicted is the answer.

use super::{features, samples_from_db, LearnedModel, MIN_SAMPLES};
use crate::space::{schedule_hash, Space};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::SeedableRng;
use std::collections::HashSet;
use strata_dsl::{Pipeline, Sizes};
use strata_jit::Backend;
use strata_schedule::canonical::canonicalize_lifted;
use strata_schedule::Schedule;
use strata_tuning_db::{Db, DbError, Target};

/// Random points of the space the model is asked about.
const RANDOM: usize = 150;
/// Mutations of the seeds (one to three decisions changed each) it is asked about.
const MUTATED: usize = 250;
/// The most measurements of the database the model is trained on.
const HISTORY: usize = 3000;

/// What [`autoschedule`] chose.
#[derive(Clone, Debug)]
pub struct Autoscheduled {
    /// The schedule predicted fastest (empty: the default schedule).
    pub schedule: Schedule,
    /// Its predicted run time, seconds.
    pub predicted_s: f64,
    /// The default schedule's predicted run time, seconds.
    pub default_predicted_s: f64,
    /// The measurements the model was trained on.
    pub samples: usize,
    /// The candidates it compared.
    pub candidates: usize,
}

/// Why no schedule came from the model.
#[derive(Debug, thiserror::Error)]
pub enum AutoscheduleError {
    /// Too few measurements on this machine and backend to train a model.
    #[error("the tuning database has {samples} usable measurements on this machine with the {backend} backend; a model needs {MIN_SAMPLES}: run `strata tune` (on any kernel) first")]
    Untrained {
        /// How many it has.
        samples: usize,
        /// The backend asked for.
        backend: String,
    },
    /// The kernel does not lower at these sizes (a size missing or out of range).
    #[error("{0}")]
    Lower(String),
    /// The database could not be read.
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The schedule of `pipeline` at `sizes` (run with `threads`, compiled by `backend`) that a
/// model trained on `db`'s measurements on `target`'s machine predicts fastest; `seed` draws
/// the candidates.
pub fn autoschedule(
    pipeline: &Pipeline,
    sizes: &Sizes,
    threads: usize,
    backend: Backend,
    db: &Db,
    target: &Target,
    seed: u64,
) -> Result<Autoscheduled, AutoscheduleError> {
    // The default schedule first: sizes it cannot be lowered at are the user's error.
    let default =
        features(pipeline, &Schedule::new(), sizes, threads).map_err(AutoscheduleError::Lower)?;
    let history = samples_from_db(db, target, backend.name(), HISTORY, false)?;
    let Some(model) = LearnedModel::fit(&history) else {
        return Err(AutoscheduleError::Untrained {
            samples: history.iter().filter(|s| s.usable()).count(),
            backend: backend.name().to_string(),
        });
    };
    let space = Space::for_backend(pipeline, backend);
    // The default first: its prediction is reported beside the winner's.
    let mut schedules = vec![Schedule::new()];
    let mut inputs = vec![default];
    for s in candidates(&space, seed) {
        if let Ok(f) = features(pipeline, &s, sizes, threads) {
            schedules.push(s);
            inputs.push(f);
        }
    }
    let predicted = model.predict(&inputs);
    let best = (0..schedules.len())
        .min_by(|&a, &b| predicted[a].total_cmp(&predicted[b]))
        .unwrap_or(0);
    Ok(Autoscheduled {
        predicted_s: predicted[best],
        default_predicted_s: predicted[0],
        samples: model.samples(),
        candidates: schedules.len(),
        schedule: schedules.swap_remove(best),
    })
}

/// Distinct legal schedules of `space` (canonical, the default left out): its seeds,
/// mutations of them, random points.
fn candidates(space: &Space, seed: u64) -> Vec<Schedule> {
    let mut rng = StdRng::seed_from_u64(seed);
    let seeds = space.seeds();
    let mut genomes = seeds.clone();
    for _ in 0..MUTATED {
        let Some(mut g) = seeds.choose(&mut rng).cloned() else {
            break;
        };
        for _ in 0..rand::Rng::random_range(&mut rng, 1..=3) {
            g = space.mutate(&g, &mut rng);
        }
        genomes.push(g);
    }
    genomes.extend((0..RANDOM).map(|_| space.random(&mut rng)));
    let mut seen = HashSet::from([schedule_hash(&Schedule::new())]);
    genomes
        .iter()
        .filter_map(|g| space.schedule(g))
        .filter_map(|s| canonicalize_lifted(&space.lifted, &s).ok())
        .filter(|s| seen.insert(schedule_hash(s)))
        .collect()
}
