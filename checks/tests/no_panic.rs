//! No input panics, crashes or gives a wrong answer: proptest over kernel text, schedule text,
//! shapes and imported tuning records. Each input starts from something valid (a generated
//! kernel from `generate_pipeline`, a random legal schedule, an export of a real database) and
//! is mutated (numbers swapped for boundary values, spans deleted or duplicated, names and types
//! swapped), then pushed as far through strata as it goes: parse, check, lower, compile, run.
//! Every step may refuse with an error; none may panic, and a kernel that runs must give the
//! reference evaluator's answer (floats within 1e-4 relative) whenever the reference has one.
//!
//! Running is limited to small work: a kernel or schedule whose text holds a number above
//! `RUN_LIMIT` is lowered and compiled but not run (a reduction over 0..2147483647 is slow, not
//! wrong). `PROPTEST_CASES` scales every property (default 256 each, from a fixed seed;
//! `PROPTEST_RNG_SEED` picks another).

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand::rngs::StdRng;
use rand::SeedableRng;
use strata::dsl::random::{agree, random_args};
use strata::scheduler::schedule::text::parse_schedule;
use strata::{evaluate, parse_kernel, Pipeline, Schedule, Sizes};
use strata_testkit::generate::random_schedule;
use strata_testkit::generate_pipeline::random_pipeline;

const FLOAT_TOLERANCE: f64 = 1e-4;
/// The largest number a text may hold for its kernel to be run (not only compiled).
const RUN_LIMIT: u64 = 4096;

/// Values that sit on the edges of the types strata computes with.
const BOUNDARY_NUMBERS: [&str; 14] = [
    "0",
    "1",
    "-1",
    "2",
    "3",
    "255",
    "256",
    "65536",
    "16777217",
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967296",
    "99999999999999999999",
];

const TYPE_NAMES: [&str; 10] = [
    "bool", "u8", "u16", "u32", "i8", "i16", "i32", "i64", "f32", "f64",
];

const WORDS: [&str; 24] = [
    "(",
    ")",
    ",",
    ";",
    "..",
    "+=",
    "*=",
    "=",
    "for",
    "in",
    "with",
    "clamp_edge",
    "x",
    "y",
    "r1",
    "N",
    "M",
    "out",
    "f0",
    "A",
    "split",
    "vectorize",
    "compute_at",
    "update(0)",
];

/// One edit of a text; positions are taken modulo the text's length.
#[derive(Clone, Debug)]
enum Edit {
    /// Replace the number nearest after `at` with a boundary value.
    Number { at: usize, value: usize },
    /// Delete `len` characters at `at`.
    Delete { at: usize, len: usize },
    /// Insert a copy of `len` characters from `from` at `at`.
    Duplicate { at: usize, from: usize, len: usize },
    /// Replace the type name nearest after `at` with another.
    Type { at: usize, to: usize },
    /// Insert a word of the kernel or schedule language at `at`.
    Word { at: usize, word: usize },
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => (any::<usize>(), 0..BOUNDARY_NUMBERS.len()).prop_map(|(at, value)| Edit::Number { at, value }),
        1 => (any::<usize>(), 1..12usize).prop_map(|(at, len)| Edit::Delete { at, len }),
        1 => (any::<usize>(), any::<usize>(), 1..24usize)
            .prop_map(|(at, from, len)| Edit::Duplicate { at, from, len }),
        1 => (any::<usize>(), 0..TYPE_NAMES.len()).prop_map(|(at, to)| Edit::Type { at, to }),
        1 => (any::<usize>(), 0..WORDS.len()).prop_map(|(at, word)| Edit::Word { at, word }),
    ]
}

/// The character boundary at or after `at % (len + 1)`.
fn position(text: &str, at: usize) -> usize {
    let mut p = at % (text.len() + 1);
    while !text.is_char_boundary(p) {
        p += 1;
    }
    p
}

/// The span of the first token after `at` that `is_token` accepts, as a byte range.
fn token_after(text: &str, at: usize, is_token: impl Fn(&str) -> bool) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut start = position(text, at);
    while start < text.len() {
        let word_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.';
        let end = (start..text.len())
            .find(|&i| !word_char(bytes[i]))
            .unwrap_or(text.len());
        if end > start && is_token(&text[start..end]) {
            return Some((start, end));
        }
        start = end.max(start + 1);
    }
    None
}

fn apply(text: &str, edit: &Edit) -> String {
    let mut out = text.to_string();
    match *edit {
        Edit::Number { at, value } => {
            let is_number = |t: &str| t.starts_with(|c: char| c.is_ascii_digit());
            if let Some((s, e)) = token_after(text, at, is_number) {
                let digits = text[s..e]
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(e - s);
                out.replace_range(s..s + digits, BOUNDARY_NUMBERS[value]);
            }
        }
        Edit::Delete { at, len } => {
            let s = position(text, at);
            let e = position(text, s + len.min(text.len() - s));
            out.replace_range(s..e.max(s), "");
        }
        Edit::Duplicate { at, from, len } => {
            let s = position(text, from);
            let e = position(text, s + len.min(text.len() - s));
            out.insert_str(position(text, at), &text[s..e.max(s)]);
        }
        Edit::Type { at, to } => {
            if let Some((s, e)) = token_after(text, at, |t| TYPE_NAMES.contains(&t)) {
                out.replace_range(s..e, TYPE_NAMES[to]);
            }
        }
        Edit::Word { at, word } => {
            out.insert_str(position(text, at), &format!(" {} ", WORDS[word]))
        }
    }
    out
}

fn mutate(text: &str, edits: &[Edit]) -> String {
    edits.iter().fold(text.to_string(), |t, e| apply(&t, e))
}

/// Whether every number in `text` is at most `RUN_LIMIT` (so running it is quick).
fn small_numbers(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|d| !d.is_empty())
        .all(|d| d.parse::<u64>().is_ok_and(|v| v <= RUN_LIMIT))
}

/// Lowers, compiles and (when `run`) runs `pipeline` under `schedule` on `sizes`. Errors are
/// fine; an answer must be the reference's.
fn exercise(
    pipeline: &Pipeline,
    schedule: &Schedule,
    sizes: &Sizes,
    run: bool,
) -> Result<(), TestCaseError> {
    let Ok(compiled) = strata::compile(pipeline, schedule, &Sizes::new()) else {
        return Ok(());
    };
    if !run {
        return Ok(());
    }
    let Ok(args) = random_args(pipeline, sizes, &mut StdRng::seed_from_u64(1)) else {
        return Ok(());
    };
    if let (Ok(got), Ok(expected)) = (compiled.run(&args, 2), evaluate(pipeline, &args)) {
        agree(&got, &expected, FLOAT_TOLERANCE).map_err(TestCaseError::fail)?;
    }
    Ok(())
}

/// Small sizes for every size variable of `pipeline`.
fn small_sizes(pipeline: &Pipeline, seed: u64) -> Sizes {
    let mut sizes = Sizes::new();
    for (i, input) in pipeline.inputs.iter().enumerate() {
        if let strata::dsl::ir::InputKind::Buffer { shape, .. } = &input.kind {
            for extent in shape {
                if let strata::dsl::ir::Extent::Size(s) = extent {
                    let v = ((seed >> (i * 3)) % 7) as i64 + 1;
                    sizes.entry(s.clone()).or_insert(v);
                }
            }
        }
    }
    sizes
}

/// 256 cases per property from a fixed seed, so `cargo test` runs the same cases every time;
/// `PROPTEST_CASES` and `PROPTEST_RNG_SEED` run more or others.
fn config() -> ProptestConfig {
    fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
        std::env::var(name).ok().and_then(|v| v.parse().ok())
    }
    ProptestConfig {
        cases: env("PROPTEST_CASES").unwrap_or(256),
        rng_seed: RngSeed::Fixed(env("PROPTEST_RNG_SEED").unwrap_or(20261201)),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// Kernel text: generated kernels, mutated, through every rung.
    #[test]
    fn mutated_kernel_text(seed in any::<u64>(), edits in prop::collection::vec(edit(), 0..4)) {
        let kernel = random_pipeline(&mut StdRng::seed_from_u64(seed));
        let text = mutate(&kernel.text, &edits);
        let Ok(pipeline) = parse_kernel(&text, "mutated") else {
            return Ok(());
        };
        let schedule = random_schedule(&pipeline, &mut StdRng::seed_from_u64(seed));
        let run = small_numbers(&text);
        exercise(&pipeline, &schedule, &small_sizes(&pipeline, seed), run)?;
    }

    /// Schedule text: random legal schedules of generated kernels, printed and mutated.
    #[test]
    fn mutated_schedule_text(seed in any::<u64>(), edits in prop::collection::vec(edit(), 1..4)) {
        let kernel = random_pipeline(&mut StdRng::seed_from_u64(seed));
        let pipeline = kernel.pipeline().map_err(TestCaseError::fail)?;
        let schedule = random_schedule(&pipeline, &mut StdRng::seed_from_u64(seed));
        let text = mutate(&schedule.to_string(), &edits);
        let Ok(schedule) = parse_schedule(&text) else {
            return Ok(());
        };
        let run = small_numbers(&text);
        exercise(&pipeline, &schedule, &small_sizes(&pipeline, seed), run)?;
    }

    /// Shapes: sizes of any magnitude, fixed at compile time (`strata::compile`) and bound at
    /// call time with buffers that have a zero extent (no memory, whatever the other extents).
    #[test]
    fn any_shape(seed in any::<u64>(), values in prop::collection::vec(prop_oneof![
        Just(0i64), Just(1), Just(-1), Just(i32::MAX as i64), Just(i32::MAX as i64 + 1),
        Just(u32::MAX as i64), Just(i64::MAX), Just(i64::MIN), 0..64i64,
    ], 2)) {
        let kernel = random_pipeline(&mut StdRng::seed_from_u64(seed));
        let pipeline = kernel.pipeline().map_err(TestCaseError::fail)?;
        let schedule = random_schedule(&pipeline, &mut StdRng::seed_from_u64(seed));
        let fixed: Sizes = kernel.sizes.iter().cloned().zip(values.iter().copied()).collect();
        let _ = strata::compile(&pipeline, &schedule, &fixed);
        // Bound at call time: one size zero, so every buffer is empty.
        let big = values.iter().map(|v| v.saturating_abs()).max().unwrap_or(0);
        let mut sizes: Sizes = kernel.sizes.iter().map(|s| (s.clone(), big)).collect();
        if let Some(first) = kernel.sizes.first() {
            sizes.insert(first.clone(), 0);
        }
        if kernel.sizes.len() == 2 {
            let Ok(compiled) = strata::compile(&pipeline, &schedule, &Sizes::new()) else {
                return Ok(());
            };
            if let Ok(args) = random_args(&pipeline, &sizes, &mut StdRng::seed_from_u64(0)) {
                if let Ok(got) = compiled.run(&args, 1) {
                    let expected = evaluate(&pipeline, &args);
                    let expected = expected.map_err(|e| TestCaseError::fail(format!(
                        "the JIT ran on {sizes:?} where the reference refused: {e}")))?;
                    agree(&got, &expected, FLOAT_TOLERANCE).map_err(TestCaseError::fail)?;
                }
            }
        }
    }
}

/// A database in a fresh temporary folder, removed on drop.
struct TempDb {
    dir: std::path::PathBuf,
    db: strata::tuning_db::Db,
}

impl TempDb {
    fn new() -> TempDb {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("strata-no-panic-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let db = strata::tuning_db::Db::open(&dir.join("t.db")).unwrap();
        TempDb { dir, db }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The export of a database holding one run of `pipeline` on `sizes` with one measured
/// schedule (the winner).
fn export_of(pipeline: &Pipeline, shape: &Sizes, schedule: &Schedule) -> String {
    use strata::tuning_db::{Measurement, NewRun, Status};
    let temp = TempDb::new();
    let run = NewRun {
        // No parameters' values, as `compile_tuned` looks the winner up.
        key: strata::tuner::tune::tuning_key(
            pipeline,
            shape,
            &Default::default(),
            1,
            strata::Backend::Cranelift,
        ),
        kernel_source: pipeline.to_string(),
        strata_version: "0".into(),
        strategy: "random".into(),
        seed: 0,
        budget_trials: Some(1),
        budget_seconds: None,
        float_ops: None,
        bytes: 0,
        started_at: "2026-01-01T00:00:00Z".into(),
    };
    let run_id = temp.db.start_run(&run).unwrap();
    let measurement = Measurement {
        trial: 0,
        schedule_hash: strata::tuner::space::schedule_hash(schedule),
        schedule: schedule.to_string(),
        status: Status::Ok,
        median_s: Some(1e-3),
        min_s: Some(1e-3),
        max_s: Some(1e-3),
        runs: 1,
        settings: Default::default(),
        is_default: false,
        remeasured: false,
        measured_at: "2026-01-01T00:00:01Z".into(),
    };
    temp.db.record(run_id, &measurement).unwrap();
    let mut out = Vec::new();
    temp.db.export(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

proptest! {
    #![proptest_config(config())]

    /// Imported records: a real export, mutated, imported into a fresh database, then used by
    /// `compile_tuned` (whose winner's schedule text comes from the import) and run.
    #[test]
    fn mutated_imported_records(seed in any::<u64>(), edits in prop::collection::vec(edit(), 1..4)) {
        let kernel = random_pipeline(&mut StdRng::seed_from_u64(seed));
        let pipeline = kernel.pipeline().map_err(TestCaseError::fail)?;
        let schedule = random_schedule(&pipeline, &mut StdRng::seed_from_u64(seed));
        let sizes = small_sizes(&pipeline, seed);
        let text = mutate(&export_of(&pipeline, &sizes, &schedule), &edits);
        let temp = TempDb::new();
        if temp.db.import(&mut text.as_bytes()).is_err() {
            return Ok(());
        }
        let Ok((compiled, _)) = strata::compile_tuned(&temp.db, &pipeline, &sizes, 1) else {
            return Ok(());
        };
        // Sizes the kernel's shapes refuse (a negative output extent) are not under test here.
        let Ok(args) = random_args(&pipeline, &sizes, &mut StdRng::seed_from_u64(2)) else {
            return Ok(());
        };
        if let (Ok(got), Ok(expected)) = (compiled.run(&args, 1), evaluate(&pipeline, &args)) {
            agree(&got, &expected, FLOAT_TOLERANCE).map_err(TestCaseError::fail)?;
        }
    }
}
