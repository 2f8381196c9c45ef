//! Helpers shared by the integration tests: unique temporary database paths and
//! builders for keys, runs and measurements.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use strata_tuning_db::{Measurement, NewRun, Settings, Status, Target, TuningKey};

/// A unique path in the temp dir; the file and its `-wal`/`-shm` are removed on drop.
pub struct TempPath(pub PathBuf);

impl TempPath {
    /// A fresh path whose name contains `tag`, the process id and a counter.
    pub fn new(tag: &str) -> TempPath {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!("strata-tdb-{tag}-{}-{n}-{nanos}.db", std::process::id());
        let p = TempPath(std::env::temp_dir().join(name));
        p.remove();
        p
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Removes the file and its companions, if present.
    fn remove(&self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        self.remove();
    }
}

/// A target with `threads` threads.
pub fn target(threads: u32) -> Target {
    Target {
        cpu_model: "Test CPU 9000".into(),
        features: "avx2,fma".into(),
        threads,
    }
}

/// The key of kernel `name`/`hash` at square size `n` without scalar parameters on a
/// 4-thread target, compiled by Cranelift.
pub fn key(name: &str, hash: &str, n: u64) -> TuningKey {
    TuningKey {
        kernel_hash: hash.into(),
        kernel_name: name.into(),
        shape: strata_tuning_db::canonical_shape([("M", n), ("N", n), ("K", n)]),
        params: String::new(),
        target: target(4),
        backend: "cranelift".into(),
    }
}

/// A run of `key` started at second `second` of the test day.
pub fn new_run(key: &TuningKey, seed: u64, second: u32) -> NewRun {
    NewRun {
        key: key.clone(),
        kernel_source: format!("kernel {} {{ C(i,j) += A(i,k) * B(k,j) }}", key.kernel_name),
        strata_version: "0.1.0".into(),
        strategy: "evolutionary".into(),
        seed,
        budget_trials: Some(100),
        budget_seconds: Some(60.5),
        float_ops: Some(2 * 64 * 64 * 64),
        bytes: 3 * 64 * 64 * 4,
        started_at: format!("2026-05-01T10:00:{second:02}Z"),
    }
}

/// An `ok` measurement of trial `trial` (schedule `s<trial>`) with median `median_ms` ms.
pub fn ok(trial: u64, median_ms: f64) -> Measurement {
    let s = median_ms * 1e-3;
    Measurement {
        trial,
        schedule: format!("tile(i, j, {trial}, 8).vectorize(j, 8)"),
        schedule_hash: format!("s{trial}"),
        status: Status::Ok,
        median_s: Some(s),
        min_s: Some(s * 0.9),
        max_s: Some(s * 1.5),
        runs: 11,
        settings: Settings {
            threads: Some(2),
            min_time_s: Some(0.05),
            tolerance: Some(1e-3),
            elapsed_s: Some(0.25 * trial as f64),
            compile_s: Some(0.004),
            genome: Some(format!(r#"{{"tile":[{trial},8]}}"#)),
            ..Settings::default()
        },
        is_default: false,
        remeasured: false,
        measured_at: format!("2026-05-01T10:01:{:02}Z", trial % 60),
    }
}

/// A failed measurement of trial `trial` with `status`.
pub fn failed(trial: u64, status: Status) -> Measurement {
    Measurement {
        status,
        median_s: None,
        min_s: None,
        max_s: None,
        runs: 0,
        ..ok(trial, 1.0)
    }
}

/// Reads a file's bytes (empty when missing).
pub fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}
