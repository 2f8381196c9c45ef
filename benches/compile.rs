//! Compile latency of a candidate: lower (with bounds inference and simplification) + Cranelift
//! codegen + finalize, per example kernel and schedule kind (default, hand-written, random).
//! The tuner's budget depends on this (target: median under 20 ms).
//!
//! `cargo bench --bench compile`

use criterion::{criterion_group, criterion_main, Criterion};
use rand::rngs::StdRng;
use rand::SeedableRng;
use strata::scheduler::generate::random_schedule;
use strata::scheduler::schedule::text::parse_schedule;
use strata::{parse_kernel, Pipeline, Schedule};

const KERNELS: [&str; 7] = [
    "matmul",
    "blur3x3",
    "softmax",
    "conv2d",
    "histogram",
    "gaussian5",
    "brighten",
];

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn example(name: &str) -> Pipeline {
    parse_kernel(&read(&format!("examples/kernels/{name}.strata")), name).unwrap()
}

fn schedules(name: &str, pipeline: &Pipeline) -> Vec<(&'static str, Schedule)> {
    let hand = parse_schedule(&read(&format!("examples/schedules/{name}.sched"))).unwrap();
    let random = random_schedule(pipeline, &mut StdRng::seed_from_u64(7));
    vec![
        ("default", Schedule::new()),
        ("hand", hand),
        ("random", random),
    ]
}

fn compile_latency(c: &mut Criterion) {
    let mut group = c.benchmark_group("compile");
    group.sample_size(20);
    for name in KERNELS {
        let pipeline = example(name);
        for (kind, schedule) in schedules(name, &pipeline) {
            group.bench_function(format!("{name}/{kind}"), |b| {
                b.iter(|| strata::compile(&pipeline, &schedule, &strata::Sizes::new()).unwrap());
            });
        }
    }
    group.finish();
}

criterion_group!(benches, compile_latency);
criterion_main!(benches);
