//! `strata train`: fills the tuning database with measurements for the learned cost model to
//! train on, before there is a kernel to tune (Adams2019 trained its model on random
//! pipelines with random schedules the same way). Each round takes a kernel of the given
//! files at a random shape and measures random schedules of it in the tuner's workers (the
//! strategy `random`: no model, no seeds, so the samples spread over the space); every
//! measurement is an ordinary record of the database, which `tune` and `autoschedule` then
//! learn from.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::SeedableRng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::tuner::{StrategyKind, TuneOptions, WorkerCommand};
use strata::tuning_db::Db;
use strata::{Pipeline, Schedule, Sizes};

/// The sizes a random shape draws each size from.
const SIZES: [i64; 10] = [16, 24, 32, 48, 64, 96, 128, 192, 256, 512];
/// Sizes multiplying past this are made smaller: the reference answer of each round is
/// computed by the (slow) evaluator, and a round should take seconds.
const MAX_SIZE_PRODUCT: f64 = 8.0e6;
/// Draws of a shape before a kernel is given up for the round.
const SHAPE_TRIES: usize = 50;

/// What a training session is told.
pub(crate) struct TrainSettings {
    /// The kernels to measure, with the source each came from.
    pub kernels: Vec<(Pipeline, String)>,
    /// Stop after this long.
    pub time: Duration,
    /// Random schedules measured per kernel and shape.
    pub trials: u64,
    pub threads: usize,
    pub backend: strata::Backend,
    pub seed: u64,
    /// Each candidate timed for at least this long.
    pub min_time: Duration,
}

/// Runs rounds until the time is spent (or Ctrl-C); returns the measurements recorded.
pub(crate) fn train(db: &Db, settings: &TrainSettings) -> Result<u64, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    let mut rng = StdRng::seed_from_u64(settings.seed);
    let deadline = Instant::now() + settings.time;
    let mut recorded = 0;
    for round in 0.. {
        let left = deadline.saturating_duration_since(Instant::now());
        if left < Duration::from_secs(1) || stop.load(Ordering::SeqCst) {
            break;
        }
        let (kernel, source) = settings
            .kernels
            .choose(&mut rng)
            .ok_or("error: no kernels")?;
        let Some(sizes) = random_shape(kernel, &mut rng) else {
            eprintln!("train: no shape of `{}` fits; skipped", kernel.name);
            continue;
        };
        let options = TuneOptions {
            trials: Some(settings.trials),
            time: Some(left),
            strategy: StrategyKind::Random,
            seed: settings.seed.wrapping_add(round),
            threads: settings.threads,
            min_time: settings.min_time,
            timeout: Duration::from_secs(10),
            worker: WorkerCommand::current_exe().map_err(|e| format!("error: {e}"))?,
            backend: settings.backend,
            stop: stop.clone(),
            progress: false,
            ..TuneOptions::default()
        };
        let shape = strata::tuner::tune::shape_text(&sizes);
        match strata::tuner::tune(db, kernel, source, &sizes, &options) {
            Ok(result) => {
                recorded += result.trials + 1;
                eprintln!(
                    "train: {} at {shape}: {} trials",
                    kernel.name, result.trials
                );
            }
            // A kernel the tuner refuses at this shape (an input it cannot draw, say) is
            // not the session's failure: the next round draws another.
            Err(e) => eprintln!("train: {} at {shape}: skipped: {e}", kernel.name),
        }
    }
    Ok(recorded)
}

/// A shape of `kernel` its default schedule lowers at, every size drawn from [`SIZES`] and the
/// largest halved (down to 16) while they multiply past [`MAX_SIZE_PRODUCT`] (a kernel of five
/// sizes, a convolution's, would otherwise rarely be drawn small enough).
fn random_shape(kernel: &Pipeline, rng: &mut StdRng) -> Option<Sizes> {
    let names = kernel.size_vars();
    (0..SHAPE_TRIES).find_map(|_| {
        let mut sizes: Sizes = (names.iter())
            .map(|n| (n.clone(), *SIZES.choose(rng).unwrap_or(&64)))
            .collect();
        while sizes.values().map(|&v| v as f64).product::<f64>() > MAX_SIZE_PRODUCT {
            let largest = sizes.values_mut().max()?;
            if *largest <= SIZES[0] {
                return None;
            }
            *largest = (*largest / 2).max(SIZES[0]);
        }
        strata::jit::lower_for(kernel, &Schedule::new(), &sizes)
            .is_ok()
            .then_some(sizes)
    })
}
