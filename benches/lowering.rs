//! Lowering time and peak heap against pyramid depth (issue 20's measure): the pyramid
//! interpolation at 2..=12 levels and the local Laplacian filter at 2..=8, each with every
//! level computed at root and under the default schedule (`strata_testkit::generate_apps`).
//! Lowering is `lower` alone: bounds inference, realization and simplification, no code
//! generation. The peak heap of one lowering (a counting allocator around the system one) is
//! printed before each case is timed; the growth per level should be additive.
//!
//! `cargo bench -p strata-benches --bench lowering`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use strata::scheduler::lower::lower;
use strata::{parse_kernel, Pipeline, Schedule};
use strata_testkit::generate_apps::{all_at_root, interpolate, local_laplacian};

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The peak heap, in MB, of lowering `p` under `s` once (above what was live before).
fn peak_mb(p: &Pipeline, s: &Schedule) -> f64 {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    lower(p, s).unwrap();
    (PEAK.load(Ordering::Relaxed) - before) as f64 / 1e6
}

fn lowering(c: &mut Criterion) {
    let apps: [(&str, fn(usize) -> String, std::ops::RangeInclusive<usize>); 2] = [
        ("interpolate", interpolate, 2..=12),
        ("local_laplacian", local_laplacian, 2..=8),
    ];
    for (name, generate, depths) in apps {
        let mut group = c.benchmark_group(format!("lower-{name}"));
        group.sample_size(10);
        for depth in depths {
            let p = parse_kernel(&generate(depth), name).unwrap();
            for (kind, schedule) in [
                ("root", all_at_root(&p).unwrap()),
                ("default", Schedule::new()),
            ] {
                eprintln!(
                    "{name} {depth} levels, {kind}: {} functions, peak heap {:.1} MB",
                    p.funcs.len(),
                    peak_mb(&p, &schedule)
                );
                group.bench_with_input(BenchmarkId::new(kind, depth), &schedule, |b, s| {
                    b.iter(|| lower(&p, s).unwrap())
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, lowering);
criterion_main!(benches);
