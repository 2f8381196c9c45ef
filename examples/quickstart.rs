//! The whole embedded use of strata: declare a kernel with `kernel!`, schedule it, compile it
//! for this CPU, run it, and check the answer against the reference evaluator.
//!
//! Run with `cargo run --release --example quickstart`.

use std::time::Instant;
use strata::dsl::random::{agree, random_args};
use strata::{evaluate, kernel, Schedule};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // What to compute.
    let matmul = kernel! {
        kernel matmul(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] {
            C(i, j) = sum(k in 0..K) A(i, k) * B(k, j);
        }
    };

    // How to compute it: 4x8 tiles of C kept in registers across k, rows of tiles in parallel.
    let mut schedule = Schedule::new();
    schedule
        .func("C")
        .tile("i", "j", "io", "jo", "ii", "ji", 4, 8)
        .vectorize_loop("ji")
        .unroll_loop("ii")
        .parallel("io");
    schedule
        .func("C")
        .update(0)
        .tile("i", "j", "io", "jo", "ii", "ji", 4, 8)
        .reorder(&["io", "jo", "k", "ii", "ji"])
        .vectorize_loop("ji")
        .unroll_loop("ii")
        .parallel("io");
    println!("schedule:\n{schedule}\n");

    // Compile for a shape, run on random inputs, check against the reference.
    let (m, n, k) = (256, 256, 256);
    let sizes = strata::sizes(&[("M", m), ("N", n), ("K", k)]);
    let compiled = strata::compile(&matmul, &schedule, &sizes)?;
    let args = random_args(&matmul, &sizes, &mut rand::rng())?;
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());

    let start = Instant::now();
    let c = compiled.run(&args, threads)?;
    let seconds = start.elapsed().as_secs_f64();

    let expected = evaluate(&matmul, &args)?;
    agree(&c, &expected, 1e-4)?;
    let gflops = 2.0 * (m * n * k) as f64 / seconds / 1e9;
    println!(
        "C is {:?}, matches the reference; first run {:.2} ms ({gflops:.1} GFLOP/s)",
        c.shape(),
        seconds * 1e3
    );
    Ok(())
}
