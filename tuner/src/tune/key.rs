//! What a run is recorded under: the tuning key (kernel, shape, parameters, this machine,
//! backend) and the time stamps of records.

use std::collections::BTreeMap;
use strata_dsl::{Pipeline, Sizes, Value};
use strata_jit::Backend;
use strata_tuning_db::{canonical_params, Target, TuningKey};

/// The database key of a kernel at a shape with the scalar parameters' values `scalars` (by
/// name; empty for a kernel without any) on this machine, compiled by `backend`.
pub fn tuning_key(
    pipeline: &Pipeline,
    sizes: &Sizes,
    scalars: &BTreeMap<String, Value>,
    threads: usize,
    backend: Backend,
) -> TuningKey {
    TuningKey {
        kernel_hash: pipeline.hash().to_string(),
        kernel_name: pipeline.name.clone(),
        shape: shape_text(sizes),
        params: params_text(scalars),
        target: host_target(threads),
        backend: backend.name().to_string(),
    }
}

/// `K=256,M=256,N=256`: sizes in name order.
pub fn shape_text(sizes: &Sizes) -> String {
    sizes
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `alpha=0.5,levels=8`: scalar parameters' values in name order, as plain text.
pub fn params_text(scalars: &BTreeMap<String, Value>) -> String {
    canonical_params(scalars.iter().map(|(n, v)| (n, v.plain_text())))
}

/// This machine: CPU model, the vector features codegen uses, and the thread count.
pub fn host_target(threads: usize) -> Target {
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    Target {
        cpu_model,
        features: host_features(),
        threads: threads as u32,
    }
}

#[cfg(target_arch = "x86_64")]
fn host_features() -> String {
    let mut f = Vec::new();
    if std::arch::is_x86_feature_detected!("sse4.1") {
        f.push("sse4.1");
    }
    if std::arch::is_x86_feature_detected!("avx2") {
        f.push("avx2");
    }
    if std::arch::is_x86_feature_detected!("fma") {
        f.push("fma");
    }
    if std::arch::is_x86_feature_detected!("avx512f") {
        f.push("avx512f");
    }
    f.join(",")
}

#[cfg(not(target_arch = "x86_64"))]
fn host_features() -> String {
    std::env::consts::ARCH.to_string()
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a (year, month, day) date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
