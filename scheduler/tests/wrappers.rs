//! Wrappers (`wrap`) and storage orders (`reorder_storage`) never change an answer: a wrapper is
//! a pure copy, so the reference evaluator gives the same bits with and without it, and a
//! schedule that packs an operand computes the same bits as the same schedule reading the
//! operand in place (the consumer's arithmetic is the same, only where it loads from moves).
//! The random schedule generator wraps reads, so the differential tests run wrappers too.

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::ir::{CallTarget, Expr};
use strata_dsl::random::{agree, random_args};
use strata_dsl::{evaluate, Args, Pipeline};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::lift_reductions::lift_reductions;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::schedule::validate::{validate, Placement};
use strata_scheduler::schedule::wrap::apply_wrappers;
use strata_scheduler::{Directive, Schedule};
use strata_testkit::example;
use strata_testkit::generate::random_schedule;

const EXAMPLES: [&str; 7] = [
    "matmul",
    "blur3x3",
    "softmax",
    "conv2d",
    "histogram",
    "gaussian5",
    "brighten",
];

fn hand_schedule(name: &str) -> String {
    let path = format!(
        "{}/../examples/schedules/{name}.sched",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap()
}

fn args(pipeline: &Pipeline, sizes: &[(&str, i64)], seed: u64) -> Args {
    let mut rng = StdRng::seed_from_u64(seed);
    random_args(pipeline, &strata_dsl::sizes(sizes), &mut rng).unwrap()
}

/// A schedule wrapping every read (of an input or another function) of every function.
fn wrap_everything(pipeline: &Pipeline) -> Schedule {
    let mut schedule = Schedule::new();
    for func in &pipeline.funcs {
        let mut read = Vec::new();
        func.for_each_expr(&mut |e| {
            if let Expr::Call(call) = e {
                let other = call.target == CallTarget::Input || call.name != func.name;
                if other && !read.contains(&call.name) {
                    read.push(call.name.clone());
                }
            }
        });
        for producer in read {
            let wrapper = format!("{}_{producer}_w", func.name);
            schedule.func(&func.name).wrap(&producer, &wrapper);
        }
    }
    schedule
}

/// The reference evaluator gives the same bits for every example with every read wrapped.
#[test]
fn wrapping_every_read_keeps_the_reference_answer() {
    let sizes: [&[(&str, i64)]; 7] = [
        &[("M", 5), ("N", 7), ("K", 3)],
        &[("H", 6), ("W", 9)],
        &[("R", 3), ("C", 7)],
        &[("N", 1), ("C", 2), ("F", 3), ("H", 5), ("W", 6)],
        &[("H", 4), ("W", 5)],
        &[("H", 7), ("W", 8)],
        &[("H", 3), ("W", 4)],
    ];
    for (name, sizes) in EXAMPLES.into_iter().zip(sizes) {
        let lifted = lift_reductions(&example(name));
        let schedule = wrap_everything(&lifted.pipeline);
        let wrapped = apply_wrappers(&lifted, &schedule).unwrap_or_else(|e| panic!("{e}"));
        let added = wrapped.pipeline.funcs.len() - lifted.pipeline.funcs.len();
        assert!(added >= 1, "{name}: nothing was wrapped");
        for seed in 0..3 {
            let args = args(&lifted.pipeline, sizes, seed);
            let plain = evaluate(&lifted.pipeline, &args).unwrap();
            let copied = evaluate(&wrapped.pipeline, &args).unwrap();
            assert_eq!(copied, plain, "{name} seed {seed}:\n{schedule}");
        }
    }
}

/// `hand` plus packing lines: the packed and the plain schedule, lowered and interpreted on
/// shapes with tails, give the same bits, which match the reference.
fn assert_packing_changes_no_bit(name: &str, packing: &str, shapes: &[&[(&str, i64)]]) {
    let pipeline = example(name);
    let plain = parse_schedule(&hand_schedule(name)).unwrap();
    let packed = parse_schedule(&format!("{}\n{packing}", hand_schedule(name))).unwrap();
    let plain = lower(&pipeline, &plain).unwrap_or_else(|e| panic!("{e}"));
    let packed = lower(&pipeline, &packed).unwrap_or_else(|e| panic!("{e}"));
    for (seed, sizes) in shapes.iter().enumerate() {
        let args = args(&pipeline, sizes, seed as u64);
        let expected = evaluate(&pipeline, &args).unwrap();
        let got = interpret(&packed, &args).unwrap_or_else(|e| panic!("{sizes:?}: {e}"));
        assert_eq!(got, interpret(&plain, &args).unwrap(), "{name} {sizes:?}");
        agree(&got, &expected, 1e-4).unwrap_or_else(|e| panic!("{name} {sizes:?}: {e}"));
    }
}

#[test]
fn sgemm_with_b_packed_per_column_tile_changes_no_bit() {
    let shapes: &[&[(&str, i64)]] = &[
        &[("M", 8), ("N", 16), ("K", 5)],
        &[("M", 7), ("N", 13), ("K", 9)],
        &[("M", 1), ("N", 3), ("K", 1)],
    ];
    // `Bp` is copied where each 8-column tile starts, its rows 8 floats apart.
    let at_tile = "C: wrap(B, Bp)\nBp: compute_at(C.update(0), jo).vectorize(j, 8)";
    assert_packing_changes_no_bit("matmul", at_tile, shapes);
    // The whole of B, transposed, once; and A's rows per row tile.
    let everywhere = "C: wrap(B, Bp).wrap(A, Ap)\nBp: compute_root().reorder_storage(j, k)\n\
                      Ap: compute_at(C.update(0), io).unroll(i, 4)";
    assert_packing_changes_no_bit("matmul", everywhere, shapes);
}

#[test]
fn conv2d_with_weights_packed_per_filter_block_changes_no_bit() {
    let shapes: &[&[(&str, i64)]] = &[
        &[("N", 1), ("C", 4), ("F", 8), ("H", 5), ("W", 9)],
        &[("N", 2), ("C", 3), ("F", 10), ("H", 4), ("W", 7)],
    ];
    // The 8 filters of a block contiguous for each (c, ky, kx).
    let packing = "out: wrap(weights, Wp)\n\
                   Wp: compute_at(out.update(0), fo).reorder_storage(c, ky, kx, f)";
    assert_packing_changes_no_bit("conv2d", packing, shapes);
}

/// Of 200 random matmul schedules, some wrap a read and compute the wrapper at a loop and some
/// reorder a buffer's storage; every one validates.
#[test]
fn random_schedules_wrap_reads_and_reorder_storage() {
    let pipeline = example("matmul");
    let lifted = lift_reductions(&pipeline);
    let (mut computed_wrappers, mut storage_orders) = (0, 0);
    for seed in 0..200 {
        let schedule = random_schedule(&pipeline, &mut StdRng::seed_from_u64(seed));
        let plan = validate(&lifted, &schedule).unwrap_or_else(|e| panic!("{e}\n{schedule}"));
        let wrappers: Vec<String> = (schedule.lines.iter())
            .flat_map(|l| &l.directives)
            .filter_map(|d| match d {
                Directive::Wrap { wrapper, .. } => Some(wrapper.clone()),
                _ => None,
            })
            .collect();
        let at_a_loop = |w: &String| matches!(plan.funcs[w].compute, Placement::At { .. });
        computed_wrappers += usize::from(wrappers.iter().any(at_a_loop));
        let reordered = plan.funcs.values().any(|f| f.storage_order != [0, 1]);
        storage_orders += usize::from(reordered);
    }
    assert!(computed_wrappers >= 10, "{computed_wrappers} of 200");
    assert!(storage_orders >= 2, "{storage_orders} of 200");
}
