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
/// Functions lowered per pick at most (candidates times the pipeline's functions): an
/// app-sized pipeline (a hundred functions) takes tens of milliseconds to lower, and its
/// search would spend more time ranking than measuring. Counted, not timed, so the search
/// stays deterministic.
const FUNCTIONS_PER_PICK: usize = 96;

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
    /// How many candidates each pick compares ([`Guide::choices`]).
    choices: usize,
}

impl Guide {
    /// A guide trained on `history` that lowers candidates with `featurize`, for candidates
    /// run with `threads`.
    pub fn new(history: Vec<Sample>, featurize: Featurize, threads: usize) -> Guide {
        Guide {
            choices: MOST_CHOICES,
            threads,
            model: LearnedModel::fit(&history),
            history,
            run: Vec::new(),
            unfitted: 0,
            featurize,
            known: HashMap::new(),
        }
    }

    /// A guide for `pipeline` at `sizes` run with `threads`, trained on `history`.
    pub fn for_kernel(
        pipeline: &Pipeline,
        sizes: &Sizes,
        threads: usize,
        history: Vec<Sample>,
    ) -> Guide {
        let functions = pipeline.funcs.len().max(1);
        let (pipeline, sizes) = (pipeline.clone(), sizes.clone());
        let featurize = move |s: &Schedule| loop_features(&pipeline, s, &sizes).ok();
        let mut guide = Guide::new(history, Box::new(featurize), threads);
        guide.choices = (FUNCTIONS_PER_PICK / functions).clamp(FEWEST_CHOICES, MOST_CHOICES);
        guide
    }

    /// Whether it has a model (enough samples to fit one).
    pub fn is_trained(&self) -> bool {
        self.model.is_some()
    }

    /// How many candidates each pick compares: [`MOST_CHOICES`], fewer (down to
    /// [`FEWEST_CHOICES`]) for a pipeline of many functions.
    pub fn choices(&self) -> usize {
        self.choices
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
        let f = (self.featurize)(&c.schedule);
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
