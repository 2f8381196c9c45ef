//! Compiling and dropping thousands of kernels in one process (what a tuner does) does not grow
//! its memory without bound: the JIT's code pages are freed when a `CompiledKernel` drops.
//!
//! Resident memory is read from /proc/self/statm (Linux); elsewhere the numbers are not
//! available and the assertion is skipped with a note. This file holds one test so nothing else
//! in its process allocates while it measures.

use rand::rngs::StdRng;
use rand::SeedableRng;
use std::time::Instant;
use strata_dsl::random::{agree, random_args};
use strata_dsl::Sizes;
use strata_dsl::{evaluate, parse_kernel, Args, Buffer};
use strata_jit::{CodegenOptions, CompiledKernel};
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::LoweredKernel;

/// Kernels compiled, run and dropped before the first measurement (thread pools, allocator
/// arenas and caches reach their steady size).
const WARM_UP: usize = 200;
/// Kernels compiled, run and dropped between the two measurements.
const MEASURED: usize = 2_000;
/// The most resident memory may grow over `MEASURED` kernels: 2 KiB a kernel. Measured (this
/// test on Linux x86-64): no growth at all when kernels are freed; 8.8 MiB (4.5 KiB a kernel: each
/// kernel's code page, and a page of constants for some) when `Drop` skips
/// `JITModule::free_memory`, and 16.4 MiB when the whole module is leaked.
const MAX_GROWTH_BYTES: u64 = 4 * 1024 * 1024;

/// The kernels cycled through: small examples under default and hand schedules (vectorized,
/// unrolled, parallel, compute_at), so every kind of generated function is created and freed.
const VARIANTS: [(&str, &str); 8] = [
    ("matmul", ""),
    ("matmul", "hand"),
    ("blur3x3", "hand"),
    ("brighten", "hand"),
    ("softmax", "hand"),
    ("histogram", "hand"),
    ("gaussian5", "hand"),
    ("brighten", "out: vectorize(x, 8).unroll(y, 2)"),
];

fn sizes(name: &str) -> Sizes {
    let pairs: &[(&str, i64)] = match name {
        "matmul" => &[("M", 5), ("N", 9), ("K", 4)],
        "softmax" => &[("R", 3), ("C", 10)],
        _ => &[("H", 6), ("W", 11)],
    };
    pairs.iter().map(|&(n, v)| (n.to_string(), v)).collect()
}

struct Variant {
    lowered: LoweredKernel,
    args: Args,
    expected: Buffer,
}

fn variants() -> Vec<Variant> {
    let dir = env!("CARGO_MANIFEST_DIR");
    let mut rng = StdRng::seed_from_u64(1);
    VARIANTS
        .iter()
        .map(|&(name, schedule)| {
            let source =
                std::fs::read_to_string(format!("{dir}/../examples/kernels/{name}.strata"))
                    .unwrap();
            let pipeline = parse_kernel(&source, name).unwrap();
            let schedule = if schedule == "hand" {
                std::fs::read_to_string(format!("{dir}/../examples/schedules/{name}.sched"))
                    .unwrap()
            } else {
                schedule.to_string()
            };
            let lowered = lower(&pipeline, &parse_schedule(&schedule).unwrap()).unwrap();
            let args = random_args(&pipeline, &sizes(name), &mut rng).unwrap();
            let expected = evaluate(&pipeline, &args).unwrap();
            Variant {
                lowered,
                args,
                expected,
            }
        })
        .collect()
}

/// Virtual and resident memory in bytes: the first two fields of /proc/self/statm (pages)
/// times the page size.
fn memory_bytes() -> Option<(u64, u64)> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let mut fields = statm.split_whitespace().map(|f| f.parse::<u64>().ok());
    let (size, resident) = (fields.next()??, fields.next()??);
    let page = page_size();
    Some((size * page, resident * page))
}

/// The kernel's page size, from the first mapping in /proc/self/smaps (4 KiB if unreadable).
fn page_size() -> u64 {
    std::fs::read_to_string("/proc/self/smaps")
        .ok()
        .and_then(|smaps| {
            smaps
                .lines()
                .find_map(|l| l.strip_prefix("KernelPageSize:"))
                .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(4096, |kb| kb * 1024)
}

/// Compiles, runs (checking the answer) and drops `count` kernels, starting at `first`.
fn churn(variants: &[Variant], first: usize, count: usize) {
    let options = CodegenOptions::default();
    for i in first..first + count {
        let v = &variants[i % variants.len()];
        let kernel = CompiledKernel::new(&v.lowered, &options).unwrap();
        let got = kernel.run(&v.args, 1 + i % 2).unwrap();
        agree(&got, &v.expected, 1e-4).unwrap_or_else(|e| panic!("kernel {i}: {e}"));
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[test]
fn compiling_and_dropping_kernels_does_not_grow_memory() {
    let variants = variants();
    let start = Instant::now();
    churn(&variants, 0, WARM_UP);
    let before = memory_bytes();
    let warm = start.elapsed();
    churn(&variants, WARM_UP, MEASURED);
    let after = memory_bytes();
    let total = start.elapsed();
    println!(
        "{WARM_UP} kernels warm-up in {:.1} s, {MEASURED} more in {:.1} s ({:.2} ms each)",
        warm.as_secs_f64(),
        (total - warm).as_secs_f64(),
        (total - warm).as_secs_f64() * 1e3 / MEASURED as f64
    );
    let (Some((size_before, before)), Some((size_after, after))) = (before, after) else {
        println!("note: /proc/self/statm is not readable here; memory growth not checked");
        return;
    };
    let growth = after.saturating_sub(before);
    println!(
        "resident memory: {:.1} MiB after warm-up, {:.1} MiB after {MEASURED} more kernels: \
         growth {:.2} MiB ({:.0} bytes a kernel; bound {:.1} MiB)",
        mib(before),
        mib(after),
        mib(growth),
        growth as f64 / MEASURED as f64,
        mib(MAX_GROWTH_BYTES)
    );
    println!(
        "virtual memory: {:.1} MiB after warm-up, {:.1} MiB after: growth {:.2} MiB",
        mib(size_before),
        mib(size_after),
        mib(size_after.saturating_sub(size_before))
    );
    assert!(
        growth <= MAX_GROWTH_BYTES,
        "resident memory grew by {:.2} MiB over {MEASURED} kernels (bound {:.1} MiB): \
         is the JIT memory freed when a kernel drops?",
        mib(growth),
        mib(MAX_GROWTH_BYTES)
    );
}
