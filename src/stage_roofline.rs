//! Each function of a schedule on this machine's roofline (`strata explain`): its operations
//! and its estimated memory traffic counted from the lowered loop nest
//! (`strata::scheduler::features`: arithmetic per lane; the bytes of accesses whose reuse does
//! not fit the second-level cache), its self time from the per-function profile, and the
//! rate the roofline allows at its intensity: min(fma peak x threads, intensity x copy
//! bandwidth), the peaks measured as `strata roofline --quick` measures them.

use strata::jit::roofline::Roofline;
use strata::scheduler::features::LoopFeatures;
use strata::scheduler::LoweredKernel;

use crate::profile::Profile;

/// One function's place.
pub struct StagePoint {
    pub name: String,
    /// Arithmetic operations per run (per lane: a vector fma of 8 lanes is 16).
    pub ops: f64,
    /// Estimated bytes from memory per run.
    pub memory_bytes: f64,
    /// Self time per run, seconds (the profile's).
    pub seconds: f64,
    /// Operations per second reached, in billions.
    pub achieved: f64,
    /// Operations per second the roofline allows at this intensity, in billions.
    pub attainable: f64,
}

/// Every function's place, with the roofline it is placed on.
pub struct StageRoofline {
    /// The fma peak for the backend and the threads, GFLOP/s.
    pub peak: f64,
    /// The copy bandwidth for the threads, GB/s.
    pub bandwidth: f64,
    pub points: Vec<StagePoint>,
}

/// The functions of `lowered` placed by `profile`'s self times on `roofline`, for `threads`
/// and the backend `backend` names; `None` when the roofline has no peak for the backend
/// (LLVM's, when its probe failed).
pub fn place(
    lowered: &LoweredKernel,
    profile: &Profile,
    roofline: &Roofline,
    threads: usize,
    backend: &str,
) -> Option<StageRoofline> {
    let bandwidth = roofline.copy_bandwidth(threads);
    let peak = roofline.fma_peak(backend, threads)?;
    let points = LoopFeatures::per_function(lowered)
        .into_iter()
        .filter_map(|(name, f)| {
            let row = profile.rows.iter().find(|r| r.name == name)?;
            let seconds = row.self_time.as_secs_f64();
            let attainable = match f.streamed_bytes {
                b if b > 0.0 => peak.min(f.work / b * bandwidth),
                _ => peak,
            };
            Some(StagePoint {
                name,
                ops: f.work,
                memory_bytes: f.streamed_bytes,
                seconds,
                achieved: if seconds > 0.0 {
                    f.work / seconds / 1e9
                } else {
                    0.0
                },
                attainable,
            })
        })
        .collect();
    Some(StageRoofline {
        peak,
        bandwidth,
        points,
    })
}

/// The table `strata explain` prints.
pub fn table(r: Option<&StageRoofline>) -> String {
    let Some(r) = r else {
        return "roofline: no fma peak measured for this backend".to_string();
    };
    let mut lines = vec![
        format!(
            "roofline: fma peak {:.1} GFLOP/s, copy bandwidth {:.1} GB/s (measured now, quick)",
            r.peak, r.bandwidth
        ),
        format!(
            "  {:<20} {:>10} {:>12} {:>10} {:>10} {:>11} {:>6}",
            "function", "Mop/run", "memory MB", "op/byte", "Gop/s", "attainable", "share"
        ),
    ];
    for p in &r.points {
        let intensity = match p.memory_bytes {
            b if b > 0.0 => format!("{:.1}", p.ops / b),
            _ => "cached".to_string(),
        };
        let share = match p.attainable {
            a if a > 0.0 => format!("{:.0}%", p.achieved / a * 100.0),
            _ => "-".to_string(),
        };
        lines.push(format!(
            "  {:<20} {:>10.2} {:>12.3} {:>10} {:>10.2} {:>11.1} {:>6}",
            p.name,
            p.ops / 1e6,
            p.memory_bytes / 1e6,
            intensity,
            p.achieved,
            p.attainable,
            share
        ));
    }
    lines.push(
        "  operations and memory bytes are counted from the loop nest (memory: accesses whose \
         reuse does not fit a 1 MiB cache; `cached`: none), per run; Gop/s from the profile's \
         self time"
            .to_string(),
    );
    lines.join("\n")
}

/// `strata explain --json`'s `roofline` (null without a peak).
pub fn json(r: Option<&StageRoofline>) -> serde_json::Value {
    let Some(r) = r else {
        return serde_json::Value::Null;
    };
    let points: Vec<serde_json::Value> = (r.points.iter())
        .map(|p| {
            serde_json::json!({
                "function": p.name,
                "ops_per_run": p.ops,
                "memory_bytes_per_run": p.memory_bytes,
                "self_s": p.seconds,
                "achieved_gops": p.achieved,
                "attainable_gops": p.attainable,
            })
        })
        .collect();
    serde_json::json!({
        "peak_gflops": r.peak,
        "bandwidth_gbps": r.bandwidth,
        "functions": points,
    })
}
