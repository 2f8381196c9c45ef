//! The cost model learned across runs, on a database of synthetic measurements whose times
//! follow a known law of the lowered loop nest (a nanosecond per instruction and per load):
//! the samples are read back for this machine and backend only, the model trained on one
//! kernel ranks schedules of another kernel, `autoschedule` picks from the model alone a
//! schedule the law says is faster than the default, and that schedule computes the
//! reference's answer.

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::{agree_within, random_args, Tolerance};
use strata_dsl::{Pipeline, Sizes};
use strata_jit::{lower_for, Backend};
use strata_schedule::Schedule;
use strata_scheduler::features::LoopFeatures;
use strata_tuner::learned::autoschedule::{autoschedule, AutoscheduleError};
use strata_tuner::learned::guide::Guide;
use strata_tuner::learned::{cache_run_features, samples_from_db};
use strata_tuner::space::{schedule_hash, Space};
use strata_tuner::strategy::Searcher;
use strata_tuner::StrategyKind;
use strata_tuning_db::{Db, Measurement, NewRun, Settings, Status, Target, TuningKey};

fn kernel(source: &str) -> Pipeline {
    strata_dsl::parse_kernel(source, "test.strata").unwrap()
}

const MATMUL: &str = "kernel mm(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] {
    C(i, j) = sum(k in 0..K) A(i, k) * B(k, j);
}";
const BLUR: &str = "kernel blur(I: f32[H, W]) -> O: f32[H - 2, W - 2] {
    O(y, x) = (I(y, x) + I(y, x + 1) + I(y, x + 2) + I(y + 1, x) + I(y + 2, x)) * 0.2;
}";

fn target() -> Target {
    Target {
        cpu_model: "test cpu".into(),
        features: "sse4.1".into(),
        threads: 1,
    }
}

/// The law the synthetic times follow: a nanosecond per instruction and per load executed.
fn law_seconds(pipeline: &Pipeline, schedule: &Schedule, sizes: &Sizes) -> f64 {
    let f = LoopFeatures::of(&lower_for(pipeline, schedule, sizes).unwrap());
    1e-9 * (f.instructions + f.loads + f.index_ops)
}

/// A fresh database file, removed (with its `-wal` and `-shm`) when dropped.
struct TempDb(std::path::PathBuf);

impl TempDb {
    fn remove(&self) {
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", self.0.display()));
        }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        self.remove();
    }
}

fn temp_db(name: &str) -> (Db, TempDb) {
    let name = format!("strata-learned-{name}-{}.db", std::process::id());
    let file = TempDb(std::env::temp_dir().join(name));
    // A file a killed run left.
    file.remove();
    (Db::open(&file.0).unwrap(), file)
}

/// A database of 120 random matmul schedules timed by the law, and the blur at the shape the
/// transfer tests ask about.
fn trained_on_matmul(name: &str) -> (Db, TempDb, Pipeline, Sizes) {
    let (db, file) = temp_db(name);
    let at = sizes(&[("M", 64), ("N", 64), ("K", 32)]);
    record_run(&db, MATMUL, &at, target(), 120);
    (db, file, kernel(BLUR), sizes(&[("H", 130), ("W", 258)]))
}

/// A run of `source` at `sizes` with `n` random schedules timed by the law.
fn record_run(db: &Db, source: &str, sizes: &Sizes, target: Target, n: usize) {
    let pipeline = kernel(source);
    let key = TuningKey {
        kernel_hash: pipeline.hash().to_string(),
        kernel_name: pipeline.name.clone(),
        shape: strata_tuner::tune::shape_text(sizes),
        params: String::new(),
        target,
        backend: "cranelift".into(),
    };
    let run = db
        .start_run(&NewRun {
            key,
            kernel_source: source.into(),
            strata_version: "test".into(),
            strategy: "random".into(),
            seed: 1,
            budget_trials: None,
            budget_seconds: None,
            float_ops: None,
            bytes: 0,
            started_at: "2026-01-01T00:00:00Z".into(),
        })
        .unwrap();
    let space = Space::new(&pipeline);
    let mut rng = StdRng::seed_from_u64(3);
    let mut trial = 0;
    while trial < n {
        let Some(schedule) = space.schedule(&space.random(&mut rng)) else {
            continue;
        };
        let seconds = law_seconds(&pipeline, &schedule, sizes);
        db.record(run, &measurement(trial as u64, &schedule, seconds))
            .unwrap();
        trial += 1;
    }
}

fn measurement(trial: u64, schedule: &Schedule, seconds: f64) -> Measurement {
    Measurement {
        trial,
        schedule: schedule.to_string(),
        schedule_hash: schedule_hash(schedule),
        status: Status::Ok,
        median_s: Some(seconds),
        min_s: Some(seconds),
        max_s: Some(seconds),
        runs: 3,
        settings: Settings::default(),
        is_default: false,
        remeasured: false,
        measured_at: "2026-01-01T00:00:01Z".into(),
    }
}

fn sizes(pairs: &[(&str, i64)]) -> Sizes {
    strata_dsl::sizes(pairs)
}

#[test]
fn samples_are_read_for_this_machine_and_backend_only() {
    let (db, _file) = temp_db("samples");
    record_run(
        &db,
        MATMUL,
        &sizes(&[("M", 32), ("N", 32), ("K", 16)]),
        target(),
        30,
    );
    let other = Target {
        cpu_model: "another cpu".into(),
        ..target()
    };
    record_run(&db, BLUR, &sizes(&[("H", 34), ("W", 66)]), other, 10);
    let samples = samples_from_db(&db, &target(), "cranelift", 1000, false).unwrap();
    assert_eq!(samples.len(), 30);
    assert!(samples.iter().all(|s| s.usable()));
    assert!(samples_from_db(&db, &target(), "llvm", 1000, false)
        .unwrap()
        .is_empty());
    assert_eq!(
        samples_from_db(&db, &target(), "cranelift", 7, false)
            .unwrap()
            .len(),
        7
    );
}

#[test]
fn without_measurements_autoschedule_says_what_to_run() {
    let (db, _file) = temp_db("empty");
    let blur = kernel(BLUR);
    let err = autoschedule(
        &blur,
        &sizes(&[("H", 34), ("W", 66)]),
        1,
        Backend::Cranelift,
        &db,
        &target(),
        1,
    )
    .unwrap_err();
    assert!(
        matches!(err, AutoscheduleError::Untrained { samples: 0, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("strata tune"), "{err}");
}

#[test]
fn a_model_trained_on_matmul_autoschedules_a_blur_faster_by_the_law() {
    let (db, _file, blur, at) = trained_on_matmul("transfer");
    let chosen = autoschedule(&blur, &at, 1, Backend::Cranelift, &db, &target(), 1).unwrap();
    assert!(chosen.candidates > 50, "{chosen:?}");
    let law = law_seconds(&blur, &chosen.schedule, &at);
    let default = law_seconds(&blur, &Schedule::new(), &at);
    assert!(
        law < 0.7 * default,
        "by the law the chosen schedule takes {law:e} s, the default {default:e} s: {}",
        chosen.schedule
    );
    // The answer never depends on the schedule.
    let args = random_args(&blur, &at, &mut StdRng::seed_from_u64(5)).unwrap();
    let expected = strata_dsl::eval::evaluate(&blur, &args).unwrap();
    let compiled =
        strata_jit::compile_pipeline(&blur, &chosen.schedule, &at, &Default::default()).unwrap();
    let got = compiled.run(&args, 1).unwrap();
    agree_within(&got, &expected, Tolerance::for_kernel(&blur, 1e-5)).unwrap();
}

#[test]
fn a_guided_search_proposes_schedules_the_law_ranks_faster() {
    let (db, _file, blur, at) = trained_on_matmul("guided");
    // The mean log time by the law of the proposals after the space's seeds (which come
    // first, guided or not).
    let mean_log_after_seeds = |guided: bool| {
        let space = Space::new(&blur);
        let seeds = space.seeds().len();
        let mut searcher = Searcher::new(StrategyKind::Model, space, 9);
        if guided {
            let history = samples_from_db(&db, &target(), "cranelift", 1000, false).unwrap();
            searcher.set_guide(Guide::for_kernel(&blur, &at, 1, history));
        }
        let mut logs = Vec::new();
        for i in 0..seeds + 16 {
            let c = searcher.propose().unwrap();
            let t = law_seconds(&blur, &c.schedule, &at);
            searcher.observe_candidate(&c, Some(t));
            if i >= seeds {
                logs.push(t.ln());
            }
        }
        logs.iter().sum::<f64>() / logs.len() as f64
    };
    let (guided, unguided) = (mean_log_after_seeds(true), mean_log_after_seeds(false));
    assert!(
        guided < unguided,
        "mean log seconds: guided {guided}, unguided {unguided}"
    );
}

#[test]
fn features_are_cached_per_run_and_read_from_the_cache() {
    let (db, _file) = temp_db("cache");
    let at = sizes(&[("M", 32), ("N", 32), ("K", 16)]);
    record_run(&db, MATMUL, &at, target(), 12);
    let (run_id, run) = db.runs().unwrap().pop().unwrap();
    let key = run.start.key;
    let fkey = strata_tuning_db::FeatureKey {
        kernel_hash: &key.kernel_hash,
        shape: &key.shape,
        version: i64::from(strata_scheduler::features::FEATURE_VERSION),
    };
    let pipeline = kernel(MATMUL);
    let before = samples_from_db(&db, &target(), "cranelift", 100, false).unwrap();
    cache_run_features(&db, run_id, &pipeline, &at, &key, &Default::default()).unwrap();
    let cached = db.cached_features(fkey).unwrap();
    assert_eq!(cached.len(), 12, "every timed schedule of the run");
    assert_eq!(
        samples_from_db(&db, &target(), "cranelift", 100, false).unwrap(),
        before
    );
    // A reader that may cache fills the cache as cache_run_features does.
    let (db2, _file2) = temp_db("cache-on-read");
    record_run(&db2, MATMUL, &at, target(), 12);
    samples_from_db(&db2, &target(), "cranelift", 100, true).unwrap();
    assert_eq!(db2.cached_features(fkey).unwrap(), cached);
    // The samples come from the cache: what it holds is what they read.
    let marked: Vec<(String, Vec<f64>)> = cached
        .keys()
        .map(|h| {
            (
                h.clone(),
                vec![7.0; strata_scheduler::features::FEATURE_NAMES.len()],
            )
        })
        .collect();
    db.cache_features(fkey, &marked).unwrap();
    let samples = samples_from_db(&db, &target(), "cranelift", 100, false).unwrap();
    assert!(
        samples.iter().all(|s| s.features[0] == 7.0),
        "{:?}",
        samples[0]
    );
}
