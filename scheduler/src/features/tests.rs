//! The features of small lowered kernels, checked against counts worked out by hand.

use super::{LoopFeatures, FEATURE_NAMES};
use crate::lower::{bind_sizes, lower};
use crate::schedule::text::parse_schedule;
use strata_dsl::parse_kernels;

const MATMUL: &str = "kernel matmul(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] {
    C(i, j) = sum(k in 0..K) A(i, k) * B(k, j);
}";

fn features(source: &str, schedule: &str, sizes: &[(&str, i64)]) -> LoopFeatures {
    let pipeline = parse_kernels(source, "test.strata").unwrap().remove(0);
    let schedule = parse_schedule(schedule).unwrap();
    let kernel = lower(&pipeline, &schedule).unwrap();
    let kernel = bind_sizes(&kernel, &strata_dsl::sizes(sizes)).unwrap();
    LoopFeatures::of(&kernel)
}

const SIZES: [(&str, i64); 3] = [("M", 64), ("N", 64), ("K", 32)];

#[test]
fn the_default_matmul_does_its_multiply_adds_in_scalars() {
    let f = features(MATMUL, "", &SIZES);
    // 64 * 64 * 32 multiply-adds: at least a multiply and an add each.
    assert!(f.work >= 2.0 * 64.0 * 64.0 * 32.0, "{f:?}");
    assert_eq!(f.work, f.instructions, "no vectors: {f:?}");
    assert_eq!(f.parallel_work, 0.0);
    // Every A and B element is read once per (i, j, k), and C initialized and updated.
    assert!(f.loads >= 2.0 * 64.0 * 64.0 * 32.0, "{f:?}");
    assert!(f.stores >= 64.0 * 64.0 * 33.0, "{f:?}");
    assert_eq!(f.produces, 1.0);
}

#[test]
fn vectors_and_parallel_loops_show_in_the_mix() {
    let schedule = "C: vectorize(j, 8).parallel(i)
        C.update(0): vectorize(j, 8).parallel(i)";
    let f = features(MATMUL, schedule, &SIZES);
    let v = f.vector();
    let at = |name: &str| v[FEATURE_NAMES.iter().position(|n| *n == name).unwrap()];
    assert!(at("lanes_per_instruction") > 4.0, "{f:?}");
    assert!(at("parallel_share") > 0.99, "{f:?}");
    assert_eq!(f.parallel_tasks, 2.0 * 64.0, "two stages of 64 rows");
    assert!(
        at("dense_load_share") > 0.4,
        "B's rows are dense vectors: {f:?}"
    );
    assert_eq!(v.len(), FEATURE_NAMES.len());
    assert!(v.iter().all(|x| x.is_finite()));
}

#[test]
fn a_split_with_a_tail_counts_guarded_work() {
    // 64 is no multiple of 12: the tail of j runs under a guard.
    let guarded = features(MATMUL, "C.update(0): split(j, jo, ji, 12)", &SIZES);
    let exact = features(MATMUL, "C.update(0): split(j, jo, ji, 8)", &SIZES);
    assert!(guarded.guarded_work > 0.0, "{guarded:?}");
    assert_eq!(exact.guarded_work, 0.0, "{exact:?}");
}

#[test]
fn blocking_for_the_cache_moves_bytes_from_memory_to_reuse() {
    let sizes = [("M", 1024), ("N", 1024), ("K", 1024)];
    // k outermost: each k sweeps all of C (4 MiB), which comes back only after the sweep.
    let swept = features(MATMUL, "C.update(0): reorder(k, i, j)", &sizes);
    // Blocked by 64 columns: a row of the block of C stays in the first-level cache over k,
    // the block of B (256 KiB) in the second-level one over i.
    let blocked = features(
        MATMUL,
        "C.update(0): split(j, jo, ji, 64).reorder(jo, i, k, ji)",
        &sizes,
    );
    assert!(
        blocked.streamed_bytes < swept.streamed_bytes,
        "blocked {blocked:?}\nswept {swept:?}"
    );
}

#[test]
fn each_function_counts_its_own_work() {
    const STAGED: &str = "kernel staged(A: f32[N]) -> C: f32[N] {
        B(i) = A(i) * 2.0 + 1.0;
        C(i) = B(i) * B(i);
    }";
    let sizes = [("N", 1024)];
    for schedule in ["B: compute_root()", "B: compute_at(C, i)"] {
        let pipeline = parse_kernels(STAGED, "staged.strata").unwrap().remove(0);
        let kernel = lower(&pipeline, &parse_schedule(schedule).unwrap()).unwrap();
        let kernel = bind_sizes(&kernel, &strata_dsl::sizes(&sizes)).unwrap();
        let stages = LoopFeatures::per_function(&kernel);
        let names: Vec<&str> = stages.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(names.len(), 2, "{schedule}: {names:?}");
        let work = |name: &str| stages.iter().find(|(f, _)| f == name).unwrap().1.work;
        // B: a multiply and an add per point; C: a multiply per point.
        assert_eq!(work("B"), 2.0 * 1024.0, "{schedule}");
        assert_eq!(work("C"), 1024.0, "{schedule}");
        let all = LoopFeatures::of(&kernel);
        assert_eq!(work("B") + work("C"), all.work, "{schedule}");
    }
}

#[test]
fn a_register_tiled_matmul_counts_its_flops_and_no_address_arithmetic_as_work() {
    let schedule = "C.update(0): tile(i, j, io, jo, ii, ji, 4, 8).split(k, kk, kj, 2).reorder(io, jo, kk, kj, ii, ji).vectorize(ji).unroll(ii).unroll(kj)";
    let f = features(MATMUL, schedule, &[("M", 64), ("N", 64), ("K", 64)]);
    // A multiply and an add per (i, j, k); loop bases, rows and offsets are addresses.
    assert_eq!(f.work, 2.0 * 64.0 * 64.0 * 64.0, "{f:?}");
    assert_eq!(
        f.instructions,
        f.work / 8.0,
        "every operation on 8 lanes: {f:?}"
    );
    assert!(f.index_ops > 0.0);
}
