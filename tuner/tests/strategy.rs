//! Every strategy is deterministic for a seed given the same measurements: replaying synthetic
//! timings (a fixed function of the schedule) gives the same candidate sequence, and another seed
//! a different one. Every candidate is a legal schedule, proposed once.

use std::collections::HashSet;
use strata_tuner::space::Space;
use strata_tuner::strategy::Searcher;
use strata_tuner::StrategyKind;

fn matmul() -> strata_dsl::Pipeline {
    strata_dsl::parse_kernel("kernel mm(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] { C(i, j) = sum(k in 0..K) A(i, k) * B(k, j); }", "mm").unwrap()
}

/// A made-up time that depends only on the schedule.
fn synthetic_seconds(hash: &str) -> f64 {
    let n = u64::from_str_radix(&hash[..8], 16).unwrap_or(1);
    1e-3 * (1.0 + (n % 1000) as f64 / 100.0)
}

fn sequence(kind: StrategyKind, seed: u64, n: usize) -> Vec<String> {
    let mut searcher = Searcher::new(kind, Space::new(&matmul()), seed);
    let mut hashes = Vec::new();
    for _ in 0..n {
        let Some(c) = searcher.propose() else { break };
        searcher.observe(&c.genome, Some(synthetic_seconds(&c.hash)));
        hashes.push(c.hash);
    }
    hashes
}

#[test]
fn same_seed_same_measurements_same_sequence() {
    for kind in [
        StrategyKind::Random,
        StrategyKind::Evolve,
        StrategyKind::Model,
    ] {
        let a = sequence(kind, 7, 30);
        assert_eq!(a.len(), 30, "{kind:?} ran out of candidates");
        assert_eq!(a, sequence(kind, 7, 30), "{kind:?}");
        assert_ne!(a, sequence(kind, 8, 30), "{kind:?}");
        let distinct: HashSet<&String> = a.iter().collect();
        assert_eq!(
            distinct.len(),
            a.len(),
            "{kind:?} proposed a schedule twice"
        );
    }
}
