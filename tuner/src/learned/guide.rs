//! The learned model inside a search: it starts trained on the database's history for this
//! machine, picks among the candidates the search would measure next the one it predicts
//! fastest, and is refitted every few measurements with the run's own, which count more
//! (refined online, as Ansor's model is between rounds).

use super::{loop_features, model_input, LearnedModel, Sample};
use crate::strategy::Candidate;
use std::collections::HashMap;
use strata_dsl::{Pipeline, Sizes};
use strata_schedule::Schedule;

/// The run's measurements count this many times a history sample: they are of the kernel
/// and shape being tuned.
const RUN_WEIGHT: f64 = 4.0;
/// The model is refitted after this many new measurements of the run, or after one per
/// `REFIT_SHARE` samples it would be fitted on when that is more: a fit's time grows with its
/// samples (thousands of history samples take a good part of a second), and counting keeps
/// the search deterministic, as a clock would not.
const REFIT_EVERY: usize = 8;
const REFIT_SHARE: usize = 64;
/// Candidates offered to the model per pick at most, and at least.
const MOST_CHOICES: usize = 12;
const FEWEST_CHOICES: usize = 2;
/// The time lowering the candidates of one pick may take: an app-sized pipeline takes tens of
/// milliseconds to lower, and its search would spend more time ranking than measuring.
const PICK_SECONDS: f64 = 0.25;

/// Computes a schedule's loop-nest features (lowering it), `None` when it does not lower.
pub type Featurize = Box<dyn Fn(&Schedule) -> Option<Vec<f64>>>;

/// The learned model of a search, with what it was trained on.
pub struct Guide {
    model: Option<LearnedModel>,
    history: Vec<Sample>,
    run: Vec<Sample>,
    unfitted: usize,
    featurize: Featurize,
    /// The threads the candidates run with (the model's last input).
    threads: usize,
    /// Loop-nest features by schedule hash (a candidate ranked and then measured is lowered
    /// once).
    known: HashMap<String, Option<Vec<f64>>>,
    /// Seconds spent lowering candidates for their features, and how many were.
    lowering: (f64, u32),
}

impl Guide {
    /// A guide trained on `history` that lowers candidates with `featurize`, for candidates
    /// run with `threads`.
    pub fn new(history: Vec<Sample>, featurize: Featurize, threads: usize) -> Guide {
        Guide {
            threads,
            model: LearnedModel::fit(&history),
            history,
            run: Vec::new(),
            unfitted: 0,
            featurize,
            known: HashMap::new(),
            lowering: (0.0, 0),
        }
    }

    /// A guide for `pipeline` at `sizes` run with `threads`, trained on `history`.
    pub fn for_kernel(
        pipeline: &Pipeline,
        sizes: &Sizes,
        threads: usize,
        history: Vec<Sample>,
    ) -> Guide {
        let (pipeline, sizes) = (pipeline.clone(), sizes.clone());
        let featurize = move |s: &Schedule| loop_features(&pipeline, s, &sizes).ok();
        Guide::new(history, Box::new(featurize), threads)
    }

    /// Whether it has a model (enough samples to fit one).
    pub fn is_trained(&self) -> bool {
        self.model.is_some()
    }

    /// How many measurements the model was last fitted on.
    pub fn samples(&self) -> usize {
        self.model.as_ref().map_or(0, LearnedModel::samples)
    }

    /// How many candidates the next pick should compare: as many as lowering them in about
    /// [`PICK_SECONDS`] allows, from [`FEWEST_CHOICES`] to [`MOST_CHOICES`].
    pub fn choices(&self) -> usize {
        let (seconds, count) = self.lowering;
        if count == 0 || seconds <= 0.0 {
            return MOST_CHOICES;
        }
        let each = seconds / f64::from(count);
        ((PICK_SECONDS / each) as usize).clamp(FEWEST_CHOICES, MOST_CHOICES)
    }

    /// Learns from a measured candidate (`None`: it did not run, and teaches nothing).
    pub fn observe(&mut self, candidate: &Candidate, seconds: Option<f64>) {
        let Some(seconds) = seconds else { return };
        let Some(features) = self.features_of(candidate) else {
            return;
        };
        self.run.push(Sample {
            features,
            seconds,
            weight: RUN_WEIGHT,
            origin: String::new(),
        });
        self.unfitted += 1;
        let samples = self.history.len() + self.run.len();
        if self.unfitted >= REFIT_EVERY.max(samples / REFIT_SHARE) {
            self.refit();
        }
    }

    /// The candidate predicted fastest (the first of equals), and its predicted time; `None`
    /// without a model or candidates. A candidate that does not lower is predicted last.
    pub fn pick(&mut self, candidates: Vec<Candidate>) -> Option<(Candidate, f64)> {
        self.model.as_ref()?;
        let features: Vec<Option<Vec<f64>>> =
            candidates.iter().map(|c| self.features_of(c)).collect();
        let model = self.model.as_ref()?;
        let lowered: Vec<Vec<f64>> = features.iter().flatten().cloned().collect();
        let mut predictions = model.predict(&lowered).into_iter();
        let times = features.iter().map(|f| {
            f.as_ref()
                .and_then(|_| predictions.next())
                .unwrap_or(f64::INFINITY)
        });
        let best = candidates
            .into_iter()
            .zip(times)
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        Some(best)
    }

    /// The loop-nest features computed so far, by schedule hash (for the database's cache).
    pub fn known_loop_features(&self) -> HashMap<String, Vec<f64>> {
        (self.known.iter())
            .filter_map(|(hash, f)| Some((hash.clone(), f.clone()?)))
            .collect()
    }

    /// The model's input for a candidate (its loop nest lowered once).
    fn features_of(&mut self, c: &Candidate) -> Option<Vec<f64>> {
        let threads = self.threads;
        Some(model_input(&self.loop_features_of(c)?, threads))
    }

    fn loop_features_of(&mut self, c: &Candidate) -> Option<Vec<f64>> {
        if let Some(known) = self.known.get(&c.hash) {
            return known.clone();
        }
        let start = std::time::Instant::now();
        let f = (self.featurize)(&c.schedule);
        self.lowering.0 += start.elapsed().as_secs_f64();
        self.lowering.1 += 1;
        self.known.insert(c.hash.clone(), f.clone());
        f
    }

    fn refit(&mut self) {
        let all: Vec<Sample> = self.history.iter().chain(&self.run).cloned().collect();
        if let Some(model) = LearnedModel::fit(&all) {
            self.model = Some(model);
        }
        self.unfitted = 0;
    }
}
