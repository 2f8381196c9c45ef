//! Tests of the runtime that generated code calls: `strata_parallel_for`, the buffer
//! allocator and the scalar math symbols.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use strata_jit::runtime::*;

/// What a coverage body records: how often each index ran, and every chunk it saw.
struct Coverage {
    min: i32,
    counts: Vec<AtomicU32>,
    chunks: Mutex<Vec<(i32, i32)>>,
}

impl Coverage {
    fn new(min: i32, extent: i32) -> Self {
        let counts = (0..extent.max(0)).map(|_| AtomicU32::new(0)).collect();
        Coverage {
            min,
            counts,
            chunks: Mutex::new(Vec::new()),
        }
    }

    fn ctx(&self) -> *const u8 {
        self as *const Self as *const u8
    }
}

/// Counts every index of `lo .. hi` once and records the chunk.
unsafe extern "C" fn count_body(ctx: *const u8, lo: i32, hi: i32) {
    let cov = unsafe { &*(ctx as *const Coverage) };
    cov.chunks.lock().unwrap().push((lo, hi));
    for i in lo..hi {
        cov.counts[(i - cov.min) as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs a coverage loop and checks every index ran exactly once in sensible chunks.
fn check_coverage(min: i32, extent: i32, threads: i32) {
    let cov = Coverage::new(min, extent);
    unsafe {
        strata_parallel_for(
            count_body,
            cov.ctx(),
            min,
            extent,
            threads,
            std::ptr::null(),
        )
    };
    let what = format!("min {min} extent {extent} threads {threads}");
    for (i, c) in cov.counts.iter().enumerate() {
        assert_eq!(
            c.load(Ordering::Relaxed),
            1,
            "index {} ran wrong count: {what}",
            i as i32 + min
        );
    }
    let chunks = cov.chunks.into_inner().unwrap();
    if extent <= 0 {
        assert!(chunks.is_empty(), "{what}: ran {chunks:?}");
        return;
    }
    if threads <= 1 {
        assert_eq!(chunks, vec![(min, min + extent)], "{what}");
        return;
    }
    let t = i64::from(threads).min(MAX_THREADS as i64);
    let most = (CHUNKS_PER_THREAD * t).min(i64::from(extent));
    assert_eq!(chunks.len() as i64, most, "{what}: chunk count");
    assert!(
        chunks.iter().all(|&(lo, hi)| lo < hi),
        "{what}: an empty chunk"
    );
}

#[test]
fn parallel_for_covers_every_index_once() {
    let extents = [
        -5, 0, 1, 2, 3, 4, 5, 7, 8, 13, 31, 32, 33, 97, 100, 1009, 4096, 10007,
    ];
    let mins = [-1000, -3, 0, 1, 17, i32::MAX - 20_000];
    for &min in &mins {
        for &extent in &extents {
            for threads in -1..=8 {
                check_coverage(min, extent, threads);
            }
        }
    }
}

#[test]
fn parallel_for_clamps_huge_thread_counts() {
    check_coverage(0, 5000, 100_000);
    check_coverage(0, 3, i32::MAX);
}

#[test]
fn parallel_for_range_ending_at_i32_max() {
    check_coverage(i32::MAX - 1000, 1000, 4);
    check_coverage(i32::MIN, 1000, 3);
}

/// Output buffer for the determinism test.
struct Out(Vec<std::cell::UnsafeCell<f64>>);
unsafe impl Sync for Out {}

/// A float-heavy function of the index, written to its own slot.
unsafe extern "C" fn compute_body(ctx: *const u8, lo: i32, hi: i32) {
    let out = unsafe { &*(ctx as *const Out) };
    for i in lo..hi {
        let mut acc = 0.0f64;
        for k in 0..50 {
            acc += (f64::from(i) * 0.37 + f64::from(k)).sin() / (1.0 + f64::from(k));
        }
        unsafe { *out.0[i as usize].get() = acc };
    }
}

#[test]
fn results_do_not_depend_on_thread_count() {
    let run = |threads: i32| {
        let out = Out((0..5003)
            .map(|_| std::cell::UnsafeCell::new(f64::NAN))
            .collect());
        unsafe {
            strata_parallel_for(
                compute_body,
                &out as *const Out as *const u8,
                0,
                5003,
                threads,
                std::ptr::null(),
            )
        };
        out.0
            .into_iter()
            .map(|c| c.into_inner().to_bits())
            .collect::<Vec<_>>()
    };
    let serial = run(1);
    for threads in [2, 3, 4, 7, 8, 16] {
        assert_eq!(run(threads), serial, "threads {threads}");
    }
}

/// Nested loop context: an outer loop over rows whose body runs an inner parallel loop.
struct Nest {
    rows: i32,
    cols: i32,
    outer_threads: i32,
    inner_threads: i32,
    counts: Vec<AtomicU32>,
}

/// Carries one row of a nested loop to the inner body.
struct Row<'a> {
    nest: &'a Nest,
    row: i32,
}

unsafe extern "C" fn inner_body(ctx: *const u8, lo: i32, hi: i32) {
    let row = unsafe { &*(ctx as *const Row) };
    for j in lo..hi {
        let idx = (row.row * row.nest.cols + j) as usize;
        row.nest.counts[idx].fetch_add(1, Ordering::Relaxed);
    }
}

unsafe extern "C" fn outer_body(ctx: *const u8, lo: i32, hi: i32) {
    let nest = unsafe { &*(ctx as *const Nest) };
    for i in lo..hi {
        let row = Row { nest, row: i };
        let ctx = &row as *const Row as *const u8;
        unsafe {
            strata_parallel_for(
                inner_body,
                ctx,
                0,
                nest.cols,
                nest.inner_threads,
                std::ptr::null(),
            )
        };
    }
}

fn check_nested(rows: i32, cols: i32, outer_threads: i32, inner_threads: i32) {
    let counts = (0..rows * cols).map(|_| AtomicU32::new(0)).collect();
    let nest = Nest {
        rows,
        cols,
        outer_threads,
        inner_threads,
        counts,
    };
    let ctx = &nest as *const Nest as *const u8;
    unsafe {
        strata_parallel_for(
            outer_body,
            ctx,
            0,
            nest.rows,
            nest.outer_threads,
            std::ptr::null(),
        )
    };
    assert!(
        nest.counts.iter().all(|c| c.load(Ordering::Relaxed) == 1),
        "nested {rows}x{cols} outer {outer_threads} inner {inner_threads}"
    );
}

#[test]
fn nested_parallel_for_covers_every_index_once() {
    for outer in [1, 2, 3, 4, 8] {
        for inner in [1, 2, 3, 4, 8] {
            check_nested(37, 41, outer, inner);
        }
    }
}

/// Three levels: each of `n` outer iterations runs a nested 2-level loop.
unsafe extern "C" fn three_level_body(ctx: *const u8, lo: i32, hi: i32) {
    let threads = unsafe { *(ctx as *const i32) };
    for _ in lo..hi {
        check_nested(9, 11, threads + 1, threads + 2);
    }
}

#[test]
fn three_level_nesting_does_not_deadlock() {
    for threads in [2, 3, 5] {
        let ctx = &threads as *const i32 as *const u8;
        unsafe { strata_parallel_for(three_level_body, ctx, 0, 24, threads, std::ptr::null()) };
    }
}

unsafe extern "C" fn noop_body(_: *const u8, _: i32, _: i32) {}

#[test]
fn many_small_calls_are_cheap() {
    // Warm up the pool, then time many calls: they must not spawn threads.
    unsafe { strata_parallel_for(noop_body, std::ptr::null(), 0, 64, 4, std::ptr::null()) };
    let start = std::time::Instant::now();
    let calls = 20_000;
    for _ in 0..calls {
        unsafe { strata_parallel_for(noop_body, std::ptr::null(), 0, 64, 4, std::ptr::null()) };
    }
    let per_call = start.elapsed() / calls;
    eprintln!("strata_parallel_for(extent 64, 4 threads): {per_call:?} per call");
    assert!(
        per_call < std::time::Duration::from_millis(1),
        "{per_call:?} per call"
    );
}

#[test]
fn concurrent_callers_share_pools() {
    std::thread::scope(|s| {
        for t in 0..6 {
            s.spawn(move || {
                for extent in [1, 10, 333, 1000] {
                    check_coverage(t * 10, extent, 2 + t % 3);
                }
            });
        }
    });
}

#[test]
fn malloc_free_round_trip_and_alignment() {
    for bytes in [1i64, 2, 3, 63, 64, 65, 100, 4096, 4097, 1 << 20, 3 << 20] {
        let p = strata_malloc(bytes);
        assert!(!p.is_null());
        assert_eq!(p as usize % BUFFER_ALIGN, 0, "{bytes} bytes");
        let buf = unsafe { std::slice::from_raw_parts_mut(p, bytes as usize) };
        for (i, b) in buf.iter_mut().enumerate() {
            *b = i as u8;
        }
        assert!(buf.iter().enumerate().all(|(i, &b)| b == i as u8));
        unsafe { strata_free(p, bytes) };
    }
}

#[test]
fn empty_buffers_are_dangling_but_aligned() {
    for bytes in [0i64, -1, i64::MIN] {
        let p = strata_malloc(bytes);
        assert!(!p.is_null());
        assert_eq!(p as usize % BUFFER_ALIGN, 0);
        unsafe { strata_free(p, bytes) };
    }
    unsafe { strata_free(std::ptr::null_mut(), 16) };
}

#[test]
fn math_matches_std_exactly() {
    let xs32 = [
        -100.0f32,
        -2.5,
        -1.0,
        -0.0,
        0.0,
        1e-40,
        0.5,
        1.0,
        2.0,
        88.0,
        1e30,
        f32::INFINITY,
    ];
    for &x in &xs32 {
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        assert!(same(strata_expf(x), x.exp()));
        assert!(same(strata_logf(x), x.ln()));
        assert!(same(strata_powf(x, 1.7), x.powf(1.7)));
        assert!(same(strata_sinf(x), x.sin()));
        assert!(same(strata_cosf(x), x.cos()));
        assert!(same(strata_tanhf(x), x.tanh()));
        let y = f64::from(x);
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        assert!(same(strata_exp(y), y.exp()));
        assert!(same(strata_log(y), y.ln()));
        assert!(same(strata_pow(y, -0.3), y.powf(-0.3)));
        assert!(same(strata_sin(y), y.sin()));
        assert!(same(strata_cos(y), y.cos()));
        assert!(same(strata_tanh(y), y.tanh()));
    }
}

#[test]
fn symbols_are_unique_and_complete() {
    let syms = symbols();
    let names: HashSet<_> = syms.iter().map(|(n, _)| *n).collect();
    assert_eq!(names.len(), syms.len());
    assert_eq!(syms.len(), 18);
    assert!(syms
        .iter()
        .all(|(n, p)| n.starts_with("strata_") && !p.is_null()));
    let addr = syms.iter().find(|(n, _)| *n == "strata_expf").unwrap().1;
    let f: extern "C" fn(f32) -> f32 = unsafe { std::mem::transmute(addr) };
    assert_eq!(f(1.0), 1.0f32.exp());
}
