//! Compile latency of a candidate: lower (with bounds inference and simplification) + codegen +
//! finalize, per example kernel and schedule kind (default, hand-written, random), for every
//! backend built in (`compile/<kernel>/<kind>` is Cranelift, `compile-llvm/...` LLVM).
//! The tuner's budget depends on this (target with Cranelift: median under 20 ms).
//!
//! `cargo bench -p strata-benches --bench compile` (add `--features llvm` for the LLVM rows)

use criterion::{criterion_group, criterion_main, Criterion};
use rand::rngs::StdRng;
use rand::SeedableRng;
use strata::scheduler::schedule::text::parse_schedule;
use strata::{parse_kernel, Pipeline, Schedule};
use strata_testkit::generate::random_schedule;

const KERNELS: [&str; 7] = [
    "matmul",
    "blur3x3",
    "softmax",
    "conv2d",
    "histogram",
    "gaussian5",
    "brighten",
];

/// The repository root (this package is `benches/`, one level below it).
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{path}")).unwrap()
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
    for backend in strata::Backend::built() {
        let group_name = match backend {
            strata::Backend::Cranelift => "compile".to_string(),
            other => format!("compile-{other}"),
        };
        let mut group = c.benchmark_group(group_name);
        group.sample_size(20);
        let options = strata::CodegenOptions {
            backend,
            ..Default::default()
        };
        for name in KERNELS {
            let pipeline = example(name);
            for (kind, schedule) in schedules(name, &pipeline) {
                group.bench_function(format!("{name}/{kind}"), |b| {
                    b.iter(|| {
                        strata::compile_with(&pipeline, &schedule, &strata::Sizes::new(), &options)
                            .unwrap()
                    });
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, compile_latency);
criterion_main!(benches);
