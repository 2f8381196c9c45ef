//! A run's setup before anything is measured: the inputs (seeded random, or given as data),
//! the reference answer computed under the time budget and Ctrl-C, and the files the
//! workers read them from.

use super::{TuneError, TuneOptions};
use crate::worker::{run_inputs, InputData, Setup};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use strata_dsl::{Args, Buffer, Pipeline, Sizes, Value, Work};

/// Computes the reference answer once, for every worker to check against.
pub(super) fn prepare(
    pipeline: &Pipeline,
    source: &str,
    sizes: &Sizes,
    options: &TuneOptions,
    deadline: Option<Instant>,
) -> Result<(Setup, BTreeMap<String, Value>, u64, u64, Vec<ExpectedFile>), TuneError> {
    let mut args =
        run_inputs(pipeline, sizes, options.seed, &options.params).map_err(TuneError::Setup)?;
    let inputs = given_inputs(&mut args, &options.inputs)?;
    let scalars = args.scalars.clone();
    let input_bytes = args
        .buffers
        .values()
        .map(|b| b.len() * b.dtype().bytes())
        .sum::<usize>();
    let (expected, work) = reference_answer(pipeline, args, options, deadline)?;
    let bytes = input_bytes + expected.len() * expected.dtype().bytes();
    let expected_bytes = expected
        .try_to_bytes()
        .map_err(|e| TuneError::Setup(format!("the expected answer: {e}")))?;
    let file = ExpectedFile::write(&expected_bytes).map_err(TuneError::Setup)?;
    let (inputs, mut files): (Vec<InputData>, Vec<ExpectedFile>) = inputs.into_iter().unzip();
    let setup = Setup {
        kernel_source: source.to_string(),
        kernel_name: pipeline.name.clone(),
        sizes: sizes.clone(),
        seed: options.seed,
        params: (scalars.iter())
            .map(|(name, value)| (name.clone(), value.plain_text()))
            .collect(),
        inputs,
        threads: options.threads,
        expected_path: file.path.clone(),
        expected_dtype: expected.dtype().name().to_string(),
        expected_shape: expected.shape().to_vec(),
        tolerance: options.tolerance,
        min_time_s: options.min_time.as_secs_f64(),
    };
    files.push(file);
    Ok((setup, scalars, work.float_ops, bytes as u64, files))
}

/// The buffers `given` put in `args` in place of the random ones, each written to a file for
/// the workers; refused where a name is not a buffer input or the type or shape differs.
fn given_inputs(
    args: &mut Args,
    given: &[(String, Buffer)],
) -> Result<Vec<(InputData, ExpectedFile)>, TuneError> {
    let mut out = Vec::new();
    for (name, buffer) in given {
        let Some(random) = args.buffers.get(name) else {
            return Err(TuneError::Setup(format!(
                "the kernel has no buffer input `{name}`"
            )));
        };
        if random.dtype() != buffer.dtype() || random.shape() != buffer.shape() {
            return Err(TuneError::Setup(format!(
                "input `{name}` is {}{:?}, but the kernel takes {}{:?} at this shape",
                buffer.dtype(),
                buffer.shape(),
                random.dtype(),
                random.shape()
            )));
        }
        let bytes = (buffer.try_to_bytes())
            .map_err(|e| TuneError::Setup(format!("input `{name}`: {e}")))?;
        let file = ExpectedFile::write(&bytes).map_err(TuneError::Setup)?;
        let data = InputData {
            name: name.clone(),
            path: file.path.clone(),
            dtype: buffer.dtype().name().to_string(),
            shape: buffer.shape().to_vec(),
        };
        args.buffers.insert(name.clone(), buffer.clone());
        out.push((data, file));
    }
    Ok(out)
}

/// How often a wait for the reference answer looks at the clock and at Ctrl-C.
const REFERENCE_POLL: Duration = Duration::from_millis(100);

/// The reference evaluator's answer (and its work count) for `args`, computed on its own
/// thread so that the time budget and Ctrl-C bound the wait, with a spinner while it runs
/// (the evaluator interprets every point: minutes for a large matmul). When the budget runs
/// out or Ctrl-C comes first, the run ends before anything is measured; the thread is left to
/// finish on its own (the command exits; a library caller's process keeps it until then).
fn reference_answer(
    pipeline: &Pipeline,
    args: Args,
    options: &TuneOptions,
    deadline: Option<Instant>,
) -> Result<(Buffer, Work), TuneError> {
    let (send, answer) = mpsc::channel();
    // The inputs move to the evaluator's thread: a copy could be as large as they are.
    let pipeline = pipeline.clone();
    std::thread::Builder::new()
        .name("strata-reference".into())
        .spawn(move || {
            let _ = send.send(strata_dsl::evaluate_counting(&pipeline, &args));
        })
        .map_err(|e| TuneError::Setup(format!("cannot start the reference evaluator: {e}")))?;
    let spinner = reference_spinner(options.progress);
    let started = Instant::now();
    let result = loop {
        match answer.recv_timeout(REFERENCE_POLL) {
            Ok(result) => {
                break result.map_err(|e| format!("the reference evaluator failed: {e}"));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err("the reference evaluator stopped without an answer".into());
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let waited = started.elapsed().as_secs_f64();
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break Err(format!(
                "the time budget ran out after {waited:.1} s while the reference evaluator \
                 was computing the expected answer, before any schedule was measured: give \
                 --time more seconds or tune a smaller shape"
            ));
        }
        if options.stop.load(Ordering::SeqCst) {
            break Err(format!(
                "interrupted after {waited:.1} s while the reference evaluator was computing \
                 the expected answer, before any schedule was measured"
            ));
        }
    };
    spinner.finish_and_clear();
    result.map_err(TuneError::Setup)
}

/// A spinner saying the reference answer is being computed (hidden without progress, and
/// by indicatif when stderr is not a terminal).
fn reference_spinner(progress: bool) -> ProgressBar {
    if !progress {
        return ProgressBar::hidden();
    }
    let spinner = ProgressBar::new_spinner();
    let style = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] computing the reference answer with the evaluator \
         (every candidate is checked against it; slow for large shapes)",
    )
    .unwrap_or_else(|_| ProgressStyle::default_spinner());
    spinner.set_style(style);
    spinner.enable_steady_tick(Duration::from_millis(200));
    spinner
}

/// The reference answer (or an input given as data), in a file for the workers to read
/// (`strata-expected-*.bin` in the temp directory). The tuner holds a lock on it while it lives and removes it when
/// done; a killed tuner cannot, and its lock dies with it, so the next tuner removes every
/// such file nobody holds.
pub(super) struct ExpectedFile {
    path: PathBuf,
    /// Open for the lock's sake.
    _locked: std::fs::File,
}

/// The names of expected-answer files: `strata-expected-<pid>-<nanos>.bin`.
const EXPECTED_PREFIX: &str = "strata-expected-";
const EXPECTED_SUFFIX: &str = ".bin";

impl ExpectedFile {
    /// Removes the files killed tuners left, then writes `bytes` to a new locked file.
    fn write(bytes: &[u8]) -> Result<ExpectedFile, String> {
        let dir = std::env::temp_dir();
        remove_abandoned_expected_files(&dir);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!(
            "{EXPECTED_PREFIX}{}-{nanos}{EXPECTED_SUFFIX}",
            std::process::id()
        );
        let path = dir.join(&name);
        // Written under a name the sweep ignores, and locked before it gets its real
        // name, so another tuner's sweep never sees it unlocked.
        let partial = dir.join(format!("{name}.part"));
        let cannot = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        let mut file = std::fs::File::create_new(&partial).map_err(cannot)?;
        let written = file
            .lock()
            .and_then(|()| std::io::Write::write_all(&mut file, bytes))
            .and_then(|()| std::fs::rename(&partial, &path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&partial);
            return Err(cannot(e));
        }
        Ok(ExpectedFile {
            path,
            _locked: file,
        })
    }
}

impl Drop for ExpectedFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Removes every expected-answer file in `dir` that no living tuner holds locked.
/// Best effort: a file that cannot be opened or removed (another user's) stays.
fn remove_abandoned_expected_files(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(EXPECTED_PREFIX) && name.ends_with(EXPECTED_SUFFIX)) {
            continue;
        }
        let path = entry.path();
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        if file.try_lock().is_ok() {
            let _ = std::fs::remove_file(&path);
        }
    }
}
