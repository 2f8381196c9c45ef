//! `strata roofline`: measure this machine's fma peak per backend and register width and its
//! copy bandwidth (the measurement is `strata::jit::roofline`).

use clap::Args;
use strata::jit::roofline::{LlvmPeaks, Roofline};
use strata::Backend;

use super::common::print_out;

#[derive(Args)]
pub(crate) struct RooflineArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Shorter measurements and a smaller large copy.
    #[arg(long)]
    quick: bool,
}

pub(crate) fn command(args: RooflineArgs) -> Result<(), String> {
    let r = strata::jit::roofline::measure(args.quick);
    match args.json {
        true => print_out(&format!("{:#}", json_value(&r))),
        false => print_out(&text_lines(&r).join("\n")),
    }
}

/// `strata roofline --json`'s object.
fn json_value(r: &Roofline) -> serde_json::Value {
    serde_json::json!({
        "quick": r.quick,
        "repetitions": r.repetitions,
        "min_time_s": r.min_time_s,
        "native_fma": r.native_fma,
        "fma_chains": r.fma_chains,
        "compute_threads": r.compute_threads,
        "f32x4_fma_gflops": r.f32x4_fma_gflops,
        "f32_fma_gflops": r.f32_fma_gflops,
        "all_threads": r.all_threads,
        "copy_method": "Rust copy_from_slice, one chunk per thread",
        "workload_copy_bytes": r.workload_copy_bytes,
        "copy_workload_1thread_gbps": r.copy_workload_1thread_gbps,
        "copy_workload_all_threads_gbps": r.copy_workload_all_threads_gbps,
        "large_copy_bytes": r.large_copy_bytes,
        "copy_large_1thread_gbps": r.copy_large_1thread_gbps,
        "copy_large_all_threads_gbps": r.copy_large_all_threads_gbps,
        "large_copy_skipped": r.large_copy_skipped,
        "backends": Backend::built().iter().map(|b| b.name()).collect::<Vec<_>>(),
        "llvm": llvm_json(&r.llvm),
    })
}

/// `strata roofline --json`'s `llvm`: null without LLVM built in, else its CPU and a peak per
/// register width, or the error that stopped the probe.
fn llvm_json(llvm: &Option<Result<LlvmPeaks, String>>) -> serde_json::Value {
    match llvm {
        None => serde_json::Value::Null,
        Some(Err(why)) => serde_json::json!({ "error": why }),
        Some(Ok(p)) => {
            let peaks: Vec<serde_json::Value> = p
                .peaks
                .iter()
                .map(|w| {
                    serde_json::json!({
                        "register": w.register,
                        "lanes": w.lanes,
                        "fma_gflops": w.gflops,
                    })
                })
                .collect();
            serde_json::json!({ "cpu": p.cpu, "native_fma": p.native_fma, "peaks": peaks })
        }
    }
}

/// `strata roofline`'s text: how each figure was measured, the compute peaks, then the copies.
fn text_lines(r: &Roofline) -> Vec<String> {
    let op = if r.native_fma {
        "fma"
    } else {
        "fmul+fadd (no native fma)"
    };
    let mut lines = vec![format!(
        "each figure: best of {} repetitions of >= {} s; copy = Rust copy_from_slice \
         (one chunk per thread), GB/s counts bytes read + written, working set = source + destination",
        r.repetitions, r.min_time_s
    )];
    let chains = r.fma_chains;
    lines.push(format!(
        "cranelift f32x4 {op} peak ({chains} chains, 1 thread): {:.2} GFLOP/s",
        r.f32x4_fma_gflops
    ));
    lines.push(format!(
        "cranelift f32 {op} peak ({chains} chains, 1 thread): {:.2} GFLOP/s",
        r.f32_fma_gflops
    ));
    lines.extend(llvm_lines(&r.llvm, chains));
    lines.extend(copy_lines(r));
    lines
}

/// `strata roofline`'s LLVM lines: a peak per register width, or why there is none.
fn llvm_lines(llvm: &Option<Result<LlvmPeaks, String>>, chains: usize) -> Vec<String> {
    match llvm {
        None => vec!["llvm: not built in (build with --features llvm to measure it)".into()],
        Some(Err(why)) => vec![format!("llvm: not measured: {why}")],
        Some(Ok(p)) => {
            let op = if p.native_fma { "fma" } else { "fmul+fadd" };
            p.peaks
                .iter()
                .map(|w| {
                    format!(
                        "llvm {} <{} x float> {op} peak ({chains} chains, 1 thread, cpu {}): {:.2} GFLOP/s",
                        w.register, w.lanes, p.cpu, w.gflops
                    )
                })
                .collect()
        }
    }
}

/// `strata roofline`'s copy bandwidth lines: the workload-sized copy and the large one.
fn copy_lines(r: &Roofline) -> Vec<String> {
    let mib = |b: usize| b >> 20;
    let n = r.all_threads;
    let ws = mib(r.workload_copy_bytes);
    let mut lines = vec![
        format!(
            "copy {ws} MiB, 1 thread: {:.2} GB/s",
            r.copy_workload_1thread_gbps
        ),
        format!(
            "copy {ws} MiB, {n} threads: {:.2} GB/s",
            r.copy_workload_all_threads_gbps
        ),
    ];
    let large = mib(r.large_copy_bytes);
    match (r.copy_large_1thread_gbps, r.copy_large_all_threads_gbps) {
        (Some(one), Some(all)) => {
            lines.push(format!("copy {large} MiB, 1 thread: {one:.2} GB/s"));
            lines.push(format!("copy {large} MiB, {n} threads: {all:.2} GB/s"));
        }
        _ => lines.push(format!(
            "copy {large} MiB: skipped ({})",
            r.large_copy_skipped.as_deref().unwrap_or("unknown reason")
        )),
    }
    lines
}
