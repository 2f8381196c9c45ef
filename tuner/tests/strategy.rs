//! Every strategy is deterministic for a seed given the same measurements: replaying synthetic
//! timings (a fixed function of the schedule) gives the same candidate sequence, and another seed
//! a different one. Every candidate is a legal schedule, proposed once.

use std::collections::HashSet;
use strata_scheduler::schedule::canonical::canonicalize_lifted;
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

fn softmax() -> strata_dsl::Pipeline {
    strata_dsl::parse_kernel(
        "kernel softmax(X: f32[R, C]) -> P: f32[R, C] {
            mx(r) = max(c in 0..C) X(r, c);
            e(r, c) = exp(X(r, c) - mx(r));
            s(r) = sum(c in 0..C) e(r, c);
            P(r, c) = e(r, c) / s(r);
        }",
        "softmax",
    )
    .unwrap()
}

/// The rule-made seeds are legal, distinct (also in canonical form), and what `evolve` and
/// `model` measure first (in order); `random` does not use them.
#[test]
fn seeds_come_first_and_are_legal() {
    for pipeline in [matmul(), softmax()] {
        let space = Space::new(&pipeline);
        let seeds: Vec<String> = space
            .seeds()
            .iter()
            .map(|g| {
                let schedule = space.schedule(g).expect("a seed is a legal schedule");
                // Proposals are canonical (`schedule::canonical`), so seeds are compared so.
                let lifted = &space.lifted;
                let canonical = canonicalize_lifted(lifted, &schedule).expect("it validates");
                strata_tuner::space::schedule_hash(&canonical)
            })
            .collect();
        assert!(seeds.len() >= 5, "only {} seeds", seeds.len());
        let distinct: HashSet<&String> = seeds.iter().collect();
        assert_eq!(distinct.len(), seeds.len(), "two seeds are one schedule");
        for kind in [StrategyKind::Evolve, StrategyKind::Model] {
            let mut searcher = Searcher::new(kind, Space::new(&pipeline), 3);
            let first: Vec<String> = (0..seeds.len())
                .map(|_| searcher.propose().expect("a candidate").hash)
                .collect();
            assert_eq!(first, seeds, "{kind:?}");
        }
        let mut random = Searcher::new(StrategyKind::Random, Space::new(&pipeline), 3);
        let first = random.propose().expect("a candidate").hash;
        assert_ne!(Some(&first), seeds.first(), "random used a seed");
    }
}

/// The seeds hold the schedules the rules describe: for a contraction a register tile with the
/// reduction outside it; for softmax every producer at the output's row loop (the row max may
/// sit in the exponentials' row loop, inside it) with the row reductions vectorized.
#[test]
fn seeds_hold_the_rule_made_schedules() {
    let texts = |p: &strata_dsl::Pipeline| -> Vec<String> {
        let space = Space::new(p);
        space
            .seeds()
            .iter()
            .filter_map(|g| space.schedule(g))
            .map(|s| s.to_string())
            .collect()
    };
    let matmul = texts(&matmul());
    assert!(
        matmul
            .iter()
            .any(|t| t.contains("reorder(i_o, j_o, k_o, k_i, i_i, j_i)")
                && t.contains("unroll(k_i, 2)")
                && t.contains("vectorize(j_i, 8)")),
        "no register tile among {matmul:#?}"
    );
    let softmax = texts(&softmax());
    assert!(
        softmax.iter().any(|t| t.contains("e: compute_at(P, r)")
            && t.contains("s: compute_at(P, r)")
            && (t.contains("mx: compute_at(P, r)") || t.contains("mx: compute_at(e, r)"))
            && t.contains("mx.update(0): vectorize(c, 8)")
            && t.contains("s.update(0): vectorize(c, 8)")),
        "no fused softmax among {softmax:#?}"
    );
}
