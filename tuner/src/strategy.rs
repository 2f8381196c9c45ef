//! Search strategies over the space: `random` (uniform points), `evolve` (a population of the
//! fastest measured points, mutated one decision at a time and crossed over), and `model` (the
//! default: many candidates from mutation and random sampling, ranked by the learned cost model,
//! the most promising measured; Ansor / Adams2019 style). `evolve` and `model` first measure the
//! space's rule-made seeds (`Space::seeds`), so the population starts from sensible schedules. For a given seed, `random` proposes the
//! same sequence every time; `evolve` and `model` propose the same sequence given the same
//! measurements (they learn from timings, so timing noise can change what they try next).

use crate::learned::guide::Guide;
use crate::model::Model;
use crate::space::{schedule_hash, Genome, Space};
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use std::collections::HashSet;
use strata_schedule::canonical::canonicalize_lifted;
use strata_schedule::Schedule;

/// Which strategy proposes candidates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrategyKind {
    /// Uniformly random legal schedules (no seeds, no model).
    Random,
    /// A population evolved by mutation and crossover of the best measured, after the seeds.
    Evolve,
    /// A learned cost model ranks a pool of candidates; the best predicted are measured (the
    /// default).
    Model,
}

impl StrategyKind {
    /// The name `strata tune --strategy` and the database use.
    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::Random => "random",
            StrategyKind::Evolve => "evolve",
            StrategyKind::Model => "model",
        }
    }

    /// The strategy called `name`, if one is.
    pub fn from_name(name: &str) -> Option<StrategyKind> {
        [
            StrategyKind::Random,
            StrategyKind::Evolve,
            StrategyKind::Model,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }
}

/// A candidate: its genome, its schedule and the schedule's hash.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The point of the search space.
    pub genome: Genome,
    /// The schedule it stands for (canonical: directives that change nothing dropped).
    pub schedule: Schedule,
    /// The schedule's hash, its identity in the database.
    pub hash: String,
}

/// Parents kept for mutation and crossover.
const POPULATION: usize = 8;
/// Candidates the model ranks for each measurement.
const POOL: usize = 64;
/// Tries to find an unseen legal candidate before giving up (the space is exhausted).
const MAX_TRIES: usize = 2000;

/// Proposes candidates one at a time under a strategy, learning from each measurement
/// (`observe`); never proposes the same schedule twice.
pub struct Searcher {
    kind: StrategyKind,
    /// The search space of the kernel.
    pub space: Space,
    rng: StdRng,
    /// Measured points that ran, fastest first.
    best: Vec<(Genome, f64)>,
    model: Model,
    seen: HashSet<String>,
    /// The space's rule-made seeds not yet proposed, last first (none for `random`).
    seeds: Vec<Genome>,
    /// The model learned across runs, when the strategy is `model` and one is given.
    guide: Option<Guide>,
}

impl Searcher {
    /// A searcher over `space`, deterministic under `seed`.
    pub fn new(kind: StrategyKind, space: Space, seed: u64) -> Searcher {
        let mut seeds = match kind {
            StrategyKind::Random => Vec::new(),
            _ => space.seeds(),
        };
        seeds.reverse();
        Searcher {
            seeds,
            kind,
            model: Model::for_widths(space.widths.clone()),
            space,
            rng: StdRng::seed_from_u64(seed),
            best: Vec::new(),
            seen: HashSet::new(),
            guide: None,
        }
    }

    /// Lets the learned model `guide` choose among the ranked pool's first candidates (the
    /// `model` strategy only; others ignore it).
    pub fn set_guide(&mut self, guide: Guide) {
        if self.kind == StrategyKind::Model {
            self.guide = Some(guide);
        }
    }

    /// The loop-nest features the learned model computed, by schedule hash (none without
    /// one).
    pub fn known_loop_features(&self) -> std::collections::HashMap<String, Vec<f64>> {
        self.guide
            .as_ref()
            .map(Guide::known_loop_features)
            .unwrap_or_default()
    }

    /// Marks a schedule as already measured (by an earlier run, say).
    pub fn mark_seen(&mut self, hash: &str) {
        self.seen.insert(hash.to_string());
    }

    /// The next candidate not measured before, its schedule canonical (no directive that
    /// changes nothing: `schedule::canonical`), so schedules that compile alike are measured,
    /// hashed and recorded once; `None` when none can be found.
    pub fn propose(&mut self) -> Option<Candidate> {
        for _ in 0..MAX_TRIES {
            let mut c = self.propose_as_generated()?;
            let Ok(schedule) = canonicalize_lifted(&self.space.lifted, &c.schedule) else {
                return Some(c);
            };
            let hash = schedule_hash(&schedule);
            // Unchanged, the candidate is fresh (`propose_as_generated` checked its hash);
            // shortened, it may be a schedule measured before in its canonical form.
            if hash == c.hash || self.seen.insert(hash.clone()) {
                (c.schedule, c.hash) = (schedule, hash);
                return Some(c);
            }
        }
        None
    }

    /// The next candidate as the space writes it (its hash marked seen).
    fn propose_as_generated(&mut self) -> Option<Candidate> {
        while let Some(genome) = self.seeds.pop() {
            if let Some(c) = self.candidate(genome) {
                self.seen.insert(c.hash.clone());
                return Some(c);
            }
        }
        match self.kind {
            StrategyKind::Model if self.model.samples() >= 4 || self.guided() => self.ranked(),
            StrategyKind::Random => self.fresh(|s| s.space.random(&mut s.rng)),
            _ => self.fresh(|s| s.evolved()),
        }
    }

    /// Records how a candidate did (`None`: it did not run), for the learned model too.
    pub fn observe_candidate(&mut self, candidate: &Candidate, seconds: Option<f64>) {
        if let Some(guide) = &mut self.guide {
            guide.observe(candidate, seconds);
        }
        self.observe(&candidate.genome, seconds);
    }

    fn guided(&self) -> bool {
        self.guide.as_ref().is_some_and(Guide::is_trained)
    }

    /// Records how a genome did (`None`: it did not run).
    pub fn observe(&mut self, genome: &Genome, seconds: Option<f64>) {
        let Some(t) = seconds else { return };
        self.model.observe(genome, t);
        let at = self.best.partition_point(|(_, b)| *b <= t);
        self.best.insert(at, (genome.clone(), t));
        self.best.truncate(POPULATION);
    }

    /// The first legal unseen candidate `make` produces.
    fn fresh(&mut self, mut make: impl FnMut(&mut Self) -> Genome) -> Option<Candidate> {
        for _ in 0..MAX_TRIES {
            let genome = make(self);
            if let Some(c) = self.candidate(genome) {
                self.seen.insert(c.hash.clone());
                return Some(c);
            }
        }
        None
    }

    fn candidate(&self, genome: Genome) -> Option<Candidate> {
        let schedule = self.space.schedule(&genome)?;
        let hash = schedule_hash(&schedule);
        (!self.seen.contains(&hash)).then_some(Candidate {
            genome,
            schedule,
            hash,
        })
    }

    /// A child of the population (random until there is one).
    fn evolved(&mut self) -> Genome {
        if self.best.len() < 2 || self.rng.random_bool(0.1) {
            return self.space.random(&mut self.rng);
        }
        let parent = self
            .best
            .choose(&mut self.rng)
            .map(|(g, _)| g.clone())
            .unwrap_or_else(|| self.space.default_genome());
        if self.rng.random_bool(0.3) {
            let other = self
                .best
                .choose(&mut self.rng)
                .map(|(g, _)| g.clone())
                .unwrap_or_else(|| parent.clone());
            let child = self.space.crossover(&parent, &other, &mut self.rng);
            return self.space.mutate(&child, &mut self.rng);
        }
        self.space.mutate(&parent, &mut self.rng)
    }

    /// The candidate the model ranks fastest among a pool of evolved and random genomes (with a
    /// little exploration: sometimes a random member of the pool). The genomes are ranked
    /// before they are made into schedules, and made into schedules best first until one is
    /// legal and unseen: validating a schedule of an app-sized pipeline takes milliseconds,
    /// and validating the whole pool took longer than lowering the candidate.
    fn ranked(&mut self) -> Option<Candidate> {
        let mut pool: Vec<Genome> = (0..POOL).map(|_| self.evolved()).collect();
        if self.rng.random_bool(0.15) {
            pool.shuffle(&mut self.rng);
        } else {
            let mut scored: Vec<(f64, Genome)> = pool
                .into_iter()
                .map(|g| (self.model.predict(&g).unwrap_or(0.0), g))
                .collect();
            // Stable: equal predictions keep the order they were made in.
            scored.sort_by(|a, b| a.0.total_cmp(&b.0));
            pool = scored.into_iter().map(|(_, g)| g).collect();
        }
        if self.guided() {
            if let Some(c) = self.guided_pick(pool.clone()) {
                return Some(c);
            }
        }
        for genome in pool {
            if let Some(c) = self.candidate(genome) {
                self.seen.insert(c.hash.clone());
                return Some(c);
            }
        }
        self.fresh(|s| s.space.random(&mut s.rng))
    }

    /// The candidate the learned model predicts fastest among the first few legal unseen
    /// ones of `pool` (in the pool's order; as many as [`Guide::choices`] says).
    fn guided_pick(&mut self, pool: Vec<Genome>) -> Option<Candidate> {
        let n = self.guide.as_ref()?.choices();
        let mut hashes = HashSet::new();
        let choices: Vec<Candidate> = pool
            .into_iter()
            .filter_map(|g| self.candidate(g))
            .filter(|c| hashes.insert(c.hash.clone()))
            .take(n)
            .collect();
        let (c, _) = self.guide.as_mut()?.pick(choices)?;
        self.seen.insert(c.hash.clone());
        Some(c)
    }
}
