//! The inner loops of register-tiled kernels, read in the machine code (x86-64), and the
//! answers of the code paths that shape them.
//!
//! - Multiplicand order (`cranelift/fma_order.rs`): x64 Cranelift's fma overwrites its first
//!   multiplicand, so the first one should be the one with fewer uses. conv2d's input vector
//!   multiplies eight weights; first, it was copied before seven of every eight fmas.
//! - Induction variables (`counted_loop`, `induction`): an address term `counter * c` with `c`
//!   not a power of two steps by an addition instead of an `imul` (port 1, one of the two
//!   ports the fmas run on) in every iteration. They start at `c * lo`, so loops that do not
//!   start at 0 (a parallel loop's chunks), negative steps and loops under tail guards are
//!   checked against the reference.

use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, parse_kernel, sizes, Pipeline};
use strata_jit::{CodegenOptions, CompiledKernel};
use strata_scheduler::schedule::text::parse_schedule;

/// Parses `source`, applies `schedule`, lowers for the sizes `fixed` (the loop bounds and
/// strides become constants, as `strata run` compiles) and compiles with Cranelift.
fn compile_fixed(
    source: &str,
    schedule: &str,
    fixed: &[(&str, i64)],
) -> (Pipeline, CompiledKernel) {
    let pipeline = parse_kernel(source, "test.strata").unwrap_or_else(|e| panic!("{e:?}"));
    let parsed = parse_schedule(schedule).unwrap_or_else(|e| panic!("{schedule}\n{e:?}"));
    let lowered = strata_jit::lower_for(&pipeline, &parsed, &sizes(fixed))
        .unwrap_or_else(|e| panic!("{schedule}\n{e}"));
    let options = CodegenOptions {
        verify: true,
        keep_text: true,
        ..CodegenOptions::default()
    };
    let compiled = CompiledKernel::new(&lowered, &options)
        .unwrap_or_else(|e| panic!("{schedule}\n{e}\n{lowered}"));
    (pipeline, compiled)
}

/// The example kernel `name` and its hand schedule, as text.
fn example(name: &str) -> (String, String) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let read =
        |path: String| std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    (
        read(format!("{root}/kernels/{name}.strata")),
        read(format!("{root}/schedules/{name}.sched")),
    )
}

/// The machine-code block holding packed fmas (`vfmadd...ps`): the loop body of the
/// microkernel (its scalar tail's fmas are `...ss`).
fn vector_fma_block(asm: &str) -> &str {
    asm.split("\nblock")
        .find(|block| {
            block
                .lines()
                .any(|l| mnemonic(l).starts_with("vfmadd") && mnemonic(l).ends_with("ps"))
        })
        .unwrap_or_else(|| panic!("no block with packed fmas:\n{asm}"))
}

fn mnemonic(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
}

/// Instructions of `block` whose mnemonic is `name`.
fn count(block: &str, name: &str) -> usize {
    block.lines().filter(|l| mnemonic(l) == name).count()
}

/// Copies of one vector register into another (`movdqa %xmm1, %xmm2` and the like).
fn register_copies(block: &str) -> usize {
    block
        .lines()
        .filter(|l| {
            matches!(
                mnemonic(l),
                "movdqa" | "movaps" | "movapd" | "vmovdqa" | "vmovaps"
            ) && !l.contains('(')
        })
        .count()
}

/// Runs `compiled` on seeded random arguments of `fixed` sizes with 1, 2 and 3 threads and
/// compares with the reference evaluator.
fn agrees_with_reference(pipeline: &Pipeline, compiled: &CompiledKernel, fixed: &[(&str, i64)]) {
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(7);
    let args = random_args(pipeline, &sizes(fixed), &mut rng).unwrap();
    let expected = evaluate(pipeline, &args).unwrap();
    for threads in 1..=3 {
        let got = compiled
            .run(&args, threads)
            .unwrap_or_else(|e| panic!("{fixed:?} threads {threads}: {e}"));
        agree(&got, &expected, 1e-4).unwrap_or_else(|e| panic!("{fixed:?} threads {threads}: {e}"));
    }
}

const CONV2D_SHAPE: [(&str, i64); 5] = [("N", 1), ("C", 64), ("F", 64), ("H", 56), ("W", 56)];

/// conv2d's hand schedule at 64 -> 64 channels, 56 x 56: 16 fmas per step of the channel loop.
/// The input vector is no longer the overwritten multiplicand (15 register copies per step
/// before, now one per accumulator at most), and the two address strides (72 and 25088 bytes)
/// are induction variables, not two `imul`s per step.
#[test]
fn conv2d_inner_loop_copies_no_input_vector_and_multiplies_no_index() {
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    let (source, schedule) = example("conv2d");
    let (_, compiled) = compile_fixed(&source, &schedule, &CONV2D_SHAPE);
    let asm = compiled.asm().join("\n");
    let block = vector_fma_block(&asm);
    let fmas = block
        .lines()
        .filter(|l| mnemonic(l).starts_with("vfmadd"))
        .count();
    assert_eq!(fmas, 16, "the loop body:\nblock{block}");
    assert!(
        register_copies(block) <= 8,
        "{} register copies for 16 fmas:\nblock{block}",
        register_copies(block)
    );
    assert_eq!(
        count(block, "imulq"),
        0,
        "index multiplications in:\nblock{block}"
    );
}

/// The sgemm tile of `matmul.sched` with the product written `B * A`: the register copies of
/// its fma block are those of `A * B` (the order of multiplicands is chosen, not inherited).
#[test]
fn operand_order_in_the_source_does_not_change_the_fma_block() {
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    let (source, schedule) = example("matmul");
    let swapped = source.replace("A(i, k) * B(k, j)", "B(k, j) * A(i, k)");
    assert_ne!(source, swapped, "matmul.strata changed: update this test");
    let shape = [("M", 512), ("N", 512), ("K", 512)];
    let copies = |source: &str| {
        let (_, compiled) = compile_fixed(source, &schedule, &shape);
        let asm = compiled.asm().join("\n");
        let block = vector_fma_block(&asm).to_string();
        (register_copies(&block), block)
    };
    let ((a_b, block_ab), (b_a, block_ba)) = (copies(&source), copies(&swapped));
    assert_eq!(a_b, b_a, "A * B:\nblock{block_ab}\nB * A:\nblock{block_ba}");
}

/// conv2d's hand schedule compiled for small fixed shapes (induction variables in the vector
/// loop and its scalar tail, blocks of 8 filters in parallel) against the reference.
#[test]
fn conv2d_with_fixed_shapes_agrees_with_the_reference() {
    let (source, schedule) = example("conv2d");
    for (c, f, h, w) in [(4, 16, 7, 9), (3, 8, 5, 11), (2, 8, 6, 6)] {
        let fixed = [("N", 1), ("C", c), ("F", f), ("H", h), ("W", w)];
        let (pipeline, compiled) = compile_fixed(&source, &schedule, &fixed);
        agrees_with_reference(&pipeline, &compiled, &fixed);
    }
}

/// A strided read in a parallel innermost loop: each chunk starts its induction variable at
/// `12 * lo`, not at 0 (one `imul` per chunk, before the loop); the loop body multiplies no
/// index.
#[test]
fn strided_reads_in_parallel_chunks() {
    let source = "kernel s(X: f32[N]) -> Y: f32[(N - 1) / 3] { Y(i) = X(3 * i + 1) * 2.0; }";
    let fixed = [("N", 112)];
    let (pipeline, compiled) = compile_fixed(source, "Y: parallel(i)", &fixed);
    agrees_with_reference(&pipeline, &compiled, &fixed);
    if cfg!(target_arch = "x86_64") {
        let asm = compiled.asm().join("\n");
        let body = asm
            .split("\nblock")
            .find(|block| block.contains("vmulss"))
            .unwrap_or_else(|| panic!("no loop body:\n{asm}"));
        assert_eq!(
            count(body, "imulq"),
            0,
            "an index multiplication:\nblock{body}"
        );
    }
}

/// Negative strides (a reversed, strided read) and an innermost loop under a tail guard.
#[test]
fn negative_and_guarded_strides() {
    let source = "kernel r(X: f32[N]) -> Y: f32[N / 3] { Y(i) = X(N - 1 - 3 * i) + X(3 * i); }";
    let fixed = [("N", 100)];
    for schedule in [
        "",
        "Y: parallel(i)",
        "Y: split(i, io, ii, 5)",
        "Y: split(i, io, ii, 6).parallel(io)",
        "Y: split(i, io, ii, 4).vectorize(ii)",
    ] {
        let (pipeline, compiled) = compile_fixed(source, schedule, &fixed);
        agrees_with_reference(&pipeline, &compiled, &fixed);
    }
}

/// Random legal schedules of the example kernels compiled for fixed random shapes, so that
/// strides are constants and innermost loops step by induction variables wherever a stride is
/// not a power of two, against the reference with 1 to 3 threads. (The differential tests
/// compile for sizes bound at the call, where strides are variables.)
#[test]
fn random_schedules_with_fixed_shapes_agree_with_the_reference() {
    use rand::{Rng, SeedableRng};
    let cases: u64 = std::env::var("STRATA_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    for name in ["matmul", "conv2d", "blur3x3", "gaussian5", "softmax"] {
        let (source, _) = example(name);
        let pipeline = parse_kernel(&source, "test.strata").unwrap();
        for seed in 0..cases {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed * 7919 + name.len() as u64);
            let schedule = strata_testkit::generate::random_schedule(&pipeline, &mut rng);
            let mut r = |lo: i64, hi: i64| rng.random_range(lo..=hi);
            let fixed: Vec<(&str, i64)> = match name {
                "matmul" => vec![("M", r(1, 13)), ("N", r(1, 19)), ("K", r(1, 11))],
                "conv2d" => vec![
                    ("N", r(1, 2)),
                    ("C", r(1, 5)),
                    ("F", r(1, 9)),
                    ("H", r(3, 9)),
                    ("W", r(3, 13)),
                ],
                "softmax" => vec![("R", r(1, 7)), ("C", r(1, 23))],
                _ => vec![("H", r(3, 13)), ("W", r(3, 23))],
            };
            let threads = r(1, 3) as usize;
            let text = schedule.to_string();
            let (pipeline, compiled) = compile_fixed(&source, &text, &fixed);
            let args = random_args(&pipeline, &sizes(&fixed), &mut rng).unwrap();
            let expected = evaluate(&pipeline, &args).unwrap();
            let context = || format!("{name} seed {seed} {fixed:?} threads {threads}\n{text}");
            match compiled.run(&args, threads) {
                Err(
                    strata_jit::CallError::InputTooSmall { .. }
                    | strata_jit::CallError::ReadsEmptyInput { .. },
                ) if text.contains("round_up") => {}
                Err(e) => panic!("{}\n{e}", context()),
                Ok(got) => {
                    agree(&got, &expected, 1e-4).unwrap_or_else(|e| panic!("{}\n{e}", context()))
                }
            }
        }
    }
}
