//! The workloads of docs/design.md §7, each at 1 thread and at all threads: strata's default, hand
//! (`examples/schedules/<kernel>.sched`) and tuned (the tuning database's winner, when there is
//! one) schedules, beside the loop nest a user would write in plain Rust (single-threaded and
//! rayon over rows) and, for sgemm, the `matrixmultiply` crate.
//!
//! `cargo bench -p strata-benches --bench workloads` (this package is `benches/`)
//!
//! Every strata kernel is compiled once for its shape outside the timed closure, and its output
//! is checked once against the plain Rust result before it is timed. The tuned variant reads
//! `STRATA_DB` or the repository root's `strata.db` and is skipped, with a note, when the database has no winner.

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Duration;
use strata::dsl::random::{agree, random_args};
use strata::scheduler::schedule::text::parse_schedule;
use strata::{parse_kernel, Args, Buffer, Pipeline, Schedule, TunedFrom};

/// sgemm 1024³ as well as 512³. Off: the default schedule alone takes about 9 s a run at 1024³
/// (about 200 s for its two thread counts), which takes the bench past five minutes.
const SGEMM_1024: bool = false;
const SEED: u64 = 0x5747_a7a;

/// The repository root (this package is `benches/`, one level below it).
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{path}")).unwrap()
}

fn example(name: &str) -> Pipeline {
    parse_kernel(&read(&format!("examples/kernels/{name}.strata")), name).unwrap()
}

fn hand(name: &str) -> Schedule {
    parse_schedule(&read(&format!("examples/schedules/{name}.sched"))).unwrap()
}

fn all_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn thread_counts() -> Vec<usize> {
    let all = all_threads();
    if all > 1 {
        vec![1, all]
    } else {
        vec![1]
    }
}

fn db() -> Option<strata::tuning_db::Db> {
    // `cargo bench` runs in this package's folder: the default database is the repository
    // root's, where `cargo run --release -- tune` puts it.
    let path = std::env::var("STRATA_DB").unwrap_or_else(|_| format!("{ROOT}/strata.db"));
    match strata::tuning_db::Db::open_existing(std::path::Path::new(&path)) {
        Ok(db) => Some(db),
        Err(e) => {
            println!("note: no tuning database at {path} ({e}): tuned variants skipped");
            None
        }
    }
}

fn f32s<'a>(args: &'a Args, name: &str) -> &'a [f32] {
    args.buffers[name].as_slice::<f32>().unwrap()
}

fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g
}

/// One workload: the kernel, its sizes and inputs, and the plain Rust result to check against.
struct Workload<'a> {
    kernel: &'a str,
    label: String,
    sizes: strata::Sizes,
    pipeline: Pipeline,
    args: Args,
    expected: Buffer,
}

impl<'a> Workload<'a> {
    fn new(kernel: &'a str, label: String, sizes: Vec<(&'static str, i64)>) -> Workload<'a> {
        let pipeline = example(kernel);
        let sizes = strata::sizes(&sizes);
        let args = random_args(&pipeline, &sizes, &mut StdRng::seed_from_u64(SEED)).unwrap();
        let expected = Buffer::zeros(strata::Dtype::F32, &[0]).expect("an empty buffer");
        Workload {
            kernel,
            label,
            sizes,
            pipeline,
            args,
            expected,
        }
    }

    /// Benches strata's default, hand and (when the database has one) tuned schedules at every
    /// thread count, each checked once against `self.expected`.
    fn bench_strata(&self, c: &mut Criterion, db: Option<&strata::tuning_db::Db>) {
        let mut g = group(c, &self.label);
        for threads in thread_counts() {
            let mut variants = vec![
                ("strata_default", Some(Schedule::new())),
                ("strata_hand", Some(hand(self.kernel))),
            ];
            let tuned = db.and_then(|db| {
                match strata::compile_tuned(db, &self.pipeline, &self.sizes, threads) {
                    Ok((_, TunedFrom::Winner { schedule, .. })) => Some(schedule),
                    Ok((_, TunedFrom::Default { reason })) => {
                        println!(
                            "note: {}/strata_tuned/t{threads} skipped: no winner ({reason})",
                            self.label
                        );
                        None
                    }
                    Err(e) => panic!("{}: tuned schedule does not compile: {e}", self.label),
                }
            });
            if db.is_some() {
                variants.push(("strata_tuned", tuned));
            }
            for (variant, schedule) in variants {
                let Some(schedule) = schedule else { continue };
                let kernel = strata::compile(&self.pipeline, &schedule, &self.sizes)
                    .unwrap_or_else(|e| panic!("{}/{variant}: {e}", self.label));
                let mut out = kernel.run(&self.args, threads).unwrap();
                if let Err(e) = agree(&out, &self.expected, 1e-4) {
                    panic!(
                        "{}/{variant}/t{threads} disagrees with plain Rust: {e}",
                        self.label
                    );
                }
                g.bench_function(format!("{variant}/t{threads}"), |b| {
                    b.iter(|| {
                        kernel
                            .run_into(black_box(&self.args), &mut out, threads)
                            .unwrap()
                    })
                });
            }
        }
        g.finish();
    }
}

// ---------------------------------------------------------------------------------------------
// Plain Rust, as a user would write it.

/// C = A B, ikj order (the inner loop streams a row of B into a row of C and vectorizes).
fn sgemm_row(a_row: &[f32], b: &[f32], n: usize, c_row: &mut [f32]) {
    c_row.fill(0.0);
    for (k, &a) in a_row.iter().enumerate() {
        let b_row = &b[k * n..(k + 1) * n];
        for (c, &b) in c_row.iter_mut().zip(b_row) {
            *c += a * b;
        }
    }
}

fn sgemm_plain(a: &[f32], b: &[f32], c: &mut [f32], k: usize, n: usize) {
    for (a_row, c_row) in a.chunks(k).zip(c.chunks_mut(n)) {
        sgemm_row(a_row, b, n, c_row);
    }
}

fn sgemm_rayon(a: &[f32], b: &[f32], c: &mut [f32], k: usize, n: usize) {
    c.par_chunks_mut(n)
        .zip(a.par_chunks(k))
        .for_each(|(c_row, a_row)| sgemm_row(a_row, b, n, c_row));
}

fn sgemm(c: &mut Criterion, size: usize, db: Option<&strata::tuning_db::Db>) {
    let s = size as i64;
    let mut w = Workload::new(
        "matmul",
        format!("sgemm{size}"),
        vec![("M", s), ("N", s), ("K", s)],
    );
    let (a, b) = (f32s(&w.args, "A").to_vec(), f32s(&w.args, "B").to_vec());
    let mut out = vec![0.0f32; size * size];
    sgemm_plain(&a, &b, &mut out, size, size);
    w.expected = Buffer::from_vec(&[size, size], out.clone()).unwrap();

    // matrixmultiply, checked the same way.
    let mut mm = vec![0.0f32; size * size];
    let run_mm = |mm: &mut [f32]| unsafe {
        matrixmultiply::sgemm(
            size,
            size,
            size,
            1.0,
            a.as_ptr(),
            size as isize,
            1,
            b.as_ptr(),
            size as isize,
            1,
            0.0,
            mm.as_mut_ptr(),
            size as isize,
            1,
        )
    };
    run_mm(&mut mm);
    agree(
        &Buffer::from_vec(&[size, size], mm.clone()).unwrap(),
        &w.expected,
        1e-4,
    )
    .expect("matrixmultiply disagrees with plain Rust");
    let mut rayon_out = vec![0.0f32; size * size];
    sgemm_rayon(&a, &b, &mut rayon_out, size, size);
    assert_eq!(rayon_out, out);

    w.bench_strata(c, db);
    let mut g = group(c, &w.label);
    g.bench_function("plain_rust/t1", |bch| {
        bch.iter(|| sgemm_plain(black_box(&a), &b, &mut out, size, size))
    });
    g.bench_function(format!("plain_rust_rayon/t{}", all_threads()), |bch| {
        bch.iter(|| sgemm_rayon(black_box(&a), &b, &mut rayon_out, size, size))
    });
    g.bench_function("matrixmultiply/t1", |bch| bch.iter(|| run_mm(&mut mm)));
    g.finish();
}

/// The two passes of the separable blur, each over rows: bx (h rows) then out (h - 2 rows).
fn blur_bx_row(input: &[u16], y: usize, w: usize, bx_row: &mut [u16]) {
    let row = &input[y * w..(y + 1) * w];
    for (x, o) in bx_row.iter_mut().enumerate() {
        *o = ((row[x] as u32 + row[x + 1] as u32 + row[x + 2] as u32) / 3) as u16;
    }
}

fn blur_out_row(bx: &[u16], y: usize, ow: usize, out_row: &mut [u16]) {
    let (r0, r1, r2) = (
        &bx[y * ow..(y + 1) * ow],
        &bx[(y + 1) * ow..(y + 2) * ow],
        &bx[(y + 2) * ow..(y + 3) * ow],
    );
    for x in 0..ow {
        out_row[x] = ((r0[x] as u32 + r1[x] as u32 + r2[x] as u32) / 3) as u16;
    }
}

fn blur_plain(input: &[u16], w: usize, bx: &mut [u16], out: &mut [u16]) {
    let ow = w - 2;
    for (y, bx_row) in bx.chunks_mut(ow).enumerate() {
        blur_bx_row(input, y, w, bx_row);
    }
    for (y, out_row) in out.chunks_mut(ow).enumerate() {
        blur_out_row(bx, y, ow, out_row);
    }
}

fn blur_rayon(input: &[u16], w: usize, bx: &mut [u16], out: &mut [u16]) {
    let ow = w - 2;
    bx.par_chunks_mut(ow)
        .enumerate()
        .for_each(|(y, bx_row)| blur_bx_row(input, y, w, bx_row));
    let bx = &*bx;
    out.par_chunks_mut(ow)
        .enumerate()
        .for_each(|(y, out_row)| blur_out_row(bx, y, ow, out_row));
}

fn blur3x3(c: &mut Criterion, db: Option<&strata::tuning_db::Db>) {
    let (oh, ow) = (4096usize, 4096usize);
    let (h, w) = (oh + 2, ow + 2);
    let mut wl = Workload::new(
        "blur3x3",
        format!("blur3x3_{oh}x{ow}"),
        vec![("H", h as i64), ("W", w as i64)],
    );
    let input = wl.args.buffers["input"].as_slice::<u16>().unwrap().to_vec();
    let mut bx = vec![0u16; h * ow];
    let mut out = vec![0u16; oh * ow];
    blur_plain(&input, w, &mut bx, &mut out);
    wl.expected = Buffer::from_vec(&[oh, ow], out.clone()).unwrap();
    let mut rayon_out = vec![0u16; oh * ow];
    blur_rayon(&input, w, &mut bx, &mut rayon_out);
    assert_eq!(rayon_out, out);

    wl.bench_strata(c, db);
    let mut g = group(c, &wl.label);
    g.bench_function("plain_rust/t1", |b| {
        b.iter(|| blur_plain(black_box(&input), w, &mut bx, &mut out))
    });
    g.bench_function(format!("plain_rust_rayon/t{}", all_threads()), |b| {
        b.iter(|| blur_rayon(black_box(&input), w, &mut bx, &mut rayon_out))
    });
    g.finish();
}

fn softmax_row(x: &[f32], p: &mut [f32]) {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut s = 0.0f32;
    for (p, &x) in p.iter_mut().zip(x) {
        *p = (x - m).exp();
        s += *p;
    }
    for p in p.iter_mut() {
        *p /= s;
    }
}

fn softmax(c: &mut Criterion, db: Option<&strata::tuning_db::Db>) {
    let (r, cols) = (4096usize, 1024usize);
    let mut w = Workload::new(
        "softmax",
        format!("softmax_{r}x{cols}"),
        vec![("R", r as i64), ("C", cols as i64)],
    );
    let x = f32s(&w.args, "X").to_vec();
    let plain = |x: &[f32], p: &mut [f32]| {
        for (xr, pr) in x.chunks(cols).zip(p.chunks_mut(cols)) {
            softmax_row(xr, pr);
        }
    };
    let rayon = |x: &[f32], p: &mut [f32]| {
        p.par_chunks_mut(cols)
            .zip(x.par_chunks(cols))
            .for_each(|(pr, xr)| softmax_row(xr, pr));
    };
    let mut out = vec![0.0f32; r * cols];
    plain(&x, &mut out);
    w.expected = Buffer::from_vec(&[r, cols], out.clone()).unwrap();
    let mut rayon_out = vec![0.0f32; r * cols];
    rayon(&x, &mut rayon_out);
    assert_eq!(rayon_out, out);

    w.bench_strata(c, db);
    // The same softmax with `fast_exp`, on the same input, checked against the same answer.
    let mut fast = Workload::new(
        "softmax_fast",
        format!("softmax_fast_{r}x{cols}"),
        vec![("R", r as i64), ("C", cols as i64)],
    );
    assert_eq!(
        f32s(&fast.args, "X"),
        &x[..],
        "softmax_fast's input is softmax's"
    );
    fast.expected = w.expected.clone();
    fast.bench_strata(c, db);
    let mut g = group(c, &w.label);
    g.bench_function("plain_rust/t1", |b| {
        b.iter(|| plain(black_box(&x), &mut out))
    });
    g.bench_function(format!("plain_rust_rayon/t{}", all_threads()), |b| {
        b.iter(|| rayon(black_box(&x), &mut rayon_out))
    });
    g.finish();
}

/// One output channel of the convolution: for each input channel and tap, a scaled, shifted
/// copy of the input plane is accumulated into the output plane (the inner loop runs along x).
fn conv_filter(input: &[f32], wf: &[f32], ch: usize, h: usize, w: usize, out_f: &mut [f32]) {
    let (oh, ow) = (h - 2, w - 2);
    out_f.fill(0.0);
    for c in 0..ch {
        let plane = &input[c * h * w..(c + 1) * h * w];
        for ky in 0..3 {
            for kx in 0..3 {
                let wt = wf[c * 9 + ky * 3 + kx];
                for y in 0..oh {
                    let src = &plane[(y + ky) * w + kx..(y + ky) * w + kx + ow];
                    let dst = &mut out_f[y * ow..(y + 1) * ow];
                    for (d, &s) in dst.iter_mut().zip(src) {
                        *d += wt * s;
                    }
                }
            }
        }
    }
}

fn conv2d(c: &mut Criterion, db: Option<&strata::tuning_db::Db>) {
    let (ch, f, h, w) = (64usize, 64usize, 56usize, 56usize);
    let (oh, ow) = (h - 2, w - 2);
    let mut wl = Workload::new(
        "conv2d",
        format!("conv2d_{ch}to{f}_{h}x{w}"),
        vec![
            ("N", 1),
            ("C", ch as i64),
            ("F", f as i64),
            ("H", h as i64),
            ("W", w as i64),
        ],
    );
    let input = f32s(&wl.args, "input").to_vec();
    let weights = f32s(&wl.args, "weights").to_vec();
    let plain = |out: &mut [f32]| {
        for (fi, out_f) in out.chunks_mut(oh * ow).enumerate() {
            conv_filter(&input, &weights[fi * ch * 9..], ch, h, w, out_f);
        }
    };
    let rayon = |out: &mut [f32]| {
        out.par_chunks_mut(oh * ow)
            .enumerate()
            .for_each(|(fi, out_f)| conv_filter(&input, &weights[fi * ch * 9..], ch, h, w, out_f));
    };
    let mut out = vec![0.0f32; f * oh * ow];
    plain(&mut out);
    wl.expected = Buffer::from_vec(&[1, f, oh, ow], out.clone()).unwrap();
    let mut rayon_out = vec![0.0f32; f * oh * ow];
    rayon(&mut rayon_out);
    assert_eq!(rayon_out, out);

    wl.bench_strata(c, db);
    let mut g = group(c, &wl.label);
    g.bench_function("plain_rust/t1", |b| b.iter(|| plain(black_box(&mut out))));
    g.bench_function(format!("plain_rust_rayon/t{}", all_threads()), |b| {
        b.iter(|| rayon(black_box(&mut rayon_out)))
    });
    g.finish();
}

fn workloads(c: &mut Criterion) {
    let db = db();
    let db = db.as_ref();
    sgemm(c, 512, db);
    if SGEMM_1024 {
        sgemm(c, 1024, db);
    }
    blur3x3(c, db);
    softmax(c, db);
    conv2d(c, db);
}

criterion_group!(benches, workloads);
criterion_main!(benches);
