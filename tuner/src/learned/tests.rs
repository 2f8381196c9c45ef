//! The trees on synthetic data whose times follow known features, and the features of real
//! schedules.

use super::samples::shape_of;
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Samples whose log time is a known function of three features (a threshold among them, as
/// a cache would make), the rest noise the model must ignore.
fn synthetic(n: usize, seed: u64) -> Vec<Sample> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let features: Vec<f64> = (0..FEATURE_COUNT)
                .map(|_| rng.random_range(0.0..1.0))
                .collect();
            let cache_miss = if features[3] > 0.6 { 1.5 } else { 0.0 };
            let log_s = -8.0 + 3.0 * features[0] - 2.0 * features[1] + cache_miss;
            Sample {
                features,
                seconds: log_s.exp(),
                weight: 1.0,
                origin: String::new(),
            }
        })
        .collect()
}

/// The share of pairs the two orders agree on (1: the same order).
fn pair_agreement(a: &[f64], b: &[f64]) -> f64 {
    let (mut agree, mut pairs) = (0.0, 0.0);
    for i in 0..a.len() {
        for j in i + 1..a.len() {
            pairs += 1.0;
            if (a[i] < a[j]) == (b[i] < b[j]) {
                agree += 1.0;
            }
        }
    }
    agree / pairs
}

#[test]
fn too_few_samples_train_no_model() {
    assert!(LearnedModel::fit(&synthetic(MIN_SAMPLES - 1, 1)).is_none());
    let mut unusable = synthetic(MIN_SAMPLES, 1);
    unusable[0].seconds = f64::NAN;
    assert!(LearnedModel::fit(&unusable).is_none());
}

#[test]
fn the_trees_rank_unseen_candidates_by_the_features_that_matter() {
    let model = LearnedModel::fit(&synthetic(400, 2)).unwrap();
    assert_eq!(model.samples(), 400);
    let held_out = synthetic(100, 3);
    let features: Vec<Vec<f64>> = held_out.iter().map(|s| s.features.clone()).collect();
    let truth: Vec<f64> = held_out.iter().map(|s| s.seconds).collect();
    let predicted = model.predict(&features);
    let agreement = pair_agreement(&predicted, &truth);
    assert!(agreement > 0.85, "pairs ranked alike: {agreement}");
}

#[test]
fn the_same_samples_train_the_same_model() {
    let samples = synthetic(200, 4);
    let features: Vec<Vec<f64>> = synthetic(20, 5).into_iter().map(|s| s.features).collect();
    let a = LearnedModel::fit(&samples).unwrap().predict(&features);
    let b = LearnedModel::fit(&samples).unwrap().predict(&features);
    assert_eq!(a, b);
}

#[test]
fn features_of_a_vectorized_schedule_differ_from_the_default() {
    let pipeline = strata_dsl::parse_kernel(
        "kernel scale(A: f32[N]) -> B: f32[N] { B(i) = A(i) * 2.0; }",
        "scale.strata",
    )
    .unwrap();
    let sizes = shape_of("N=1024").unwrap();
    let plain = features(&pipeline, &Schedule::new(), &sizes, 1).unwrap();
    let vector: Schedule = "B: vectorize(i, 8)".parse().unwrap();
    let vectorized = features(&pipeline, &vector, &sizes, 4).unwrap();
    assert_eq!(plain.len(), FEATURE_COUNT);
    assert_ne!(plain, vectorized);
    assert_eq!(
        vectorized[FEATURE_COUNT - 1],
        4f64.ln(),
        "threads are the last feature"
    );
}

#[test]
fn shapes_read_back_as_the_database_writes_them() {
    let sizes = shape_of("K=256,M=128").unwrap();
    assert_eq!(sizes.get("K"), Some(&256));
    assert_eq!(sizes.get("M"), Some(&128));
    assert!(shape_of("").unwrap().is_empty());
    assert!(shape_of("K=x").is_none());
}
