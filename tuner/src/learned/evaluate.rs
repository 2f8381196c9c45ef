//! How well the learned model ranks schedules of a kernel it has not seen: for each kernel
//! of the database, a model trained on the others ranks that kernel's measurements, and the
//! share of pairs of schedules (of one shape) it orders as their times do is reported (0.5 is
//! chance, 1 a perfect ranking). The number that says whether pre-training (`strata train`)
//! helps a new kernel, measured without measuring anything new.

use super::{LearnedModel, Sample};
use std::collections::BTreeMap;
use strata_scheduler::features::FEATURE_NAMES;

/// The held-out ranking of one kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldOut {
    /// The kernel's name.
    pub kernel: String,
    /// Its measurements ranked.
    pub samples: usize,
    /// The share of pairs ordered as their times are (pairs within one shape whose times
    /// differ by more than 5%, so noise is not ranked).
    pub pair_agreement: f64,
    /// Those pairs.
    pub pairs: usize,
    /// The share a baseline with nothing learned orders alike: the instructions and loads a
    /// schedule executes, counted from its loop nest (what the model must do better than).
    pub baseline_agreement: f64,
}

/// Times closer than this ratio are a tie, not a pair to rank.
const TIE: f64 = 1.05;

/// Each kernel of `samples` held out in turn (kernels with fewer than 2 samples, or whose
/// others train no model, are left out).
pub fn leave_one_kernel_out(samples: &[Sample]) -> Vec<HeldOut> {
    let kernel_of = |s: &Sample| s.origin.split(" at ").next().unwrap_or("").to_string();
    let mut kernels: BTreeMap<String, Vec<&Sample>> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.usable()) {
        kernels.entry(kernel_of(s)).or_default().push(s);
    }
    kernels
        .iter()
        .filter_map(|(kernel, held)| {
            let others: Vec<Sample> = (samples.iter())
                .filter(|s| kernel_of(s) != *kernel)
                .cloned()
                .collect();
            let model = LearnedModel::fit(&others)?;
            let features: Vec<Vec<f64>> = held.iter().map(|s| s.features.clone()).collect();
            let predicted = model.predict(&features);
            let (agree, pairs) = agreement(held, &predicted);
            let counted: Vec<f64> = held.iter().map(|s| executed(&s.features)).collect();
            let (baseline, _) = agreement(held, &counted);
            (pairs > 0).then(|| HeldOut {
                kernel: kernel.clone(),
                samples: held.len(),
                pair_agreement: agree as f64 / pairs as f64,
                pairs,
                baseline_agreement: baseline as f64 / pairs as f64,
            })
        })
        .collect()
}

/// Instructions plus loads executed, from a sample's features (`log_instructions` and
/// `log_loads` are `ln(1 + count)`).
fn executed(features: &[f64]) -> f64 {
    let count = |name: &str| {
        let at = FEATURE_NAMES.iter().position(|n| *n == name);
        at.and_then(|i| features.get(i)).map_or(0.0, |x| x.exp_m1())
    };
    count("log_instructions") + count("log_loads")
}

/// Pairs of one origin (kernel and shape) whose times differ by more than [`TIE`]: how many
/// the predictions order alike, and how many there are.
fn agreement(held: &[&Sample], predicted: &[f64]) -> (usize, usize) {
    let (mut agree, mut pairs) = (0, 0);
    for i in 0..held.len() {
        for j in i + 1..held.len() {
            let (a, b) = (held[i], held[j]);
            let ratio = a.seconds.max(b.seconds) / a.seconds.min(b.seconds);
            if a.origin != b.origin || ratio <= TIE {
                continue;
            }
            pairs += 1;
            if (a.seconds < b.seconds) == (predicted[i] < predicted[j]) {
                agree += 1;
            }
        }
    }
    (agree, pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learned::FEATURE_COUNT;

    /// Samples of `kernel` at one shape whose log time follows feature 0, and one sample of
    /// another shape (never paired with these).
    fn kernel_samples(kernel: &str, n: usize, slope: f64) -> Vec<Sample> {
        (0..n)
            .map(|i| {
                let mut features = vec![0.5; FEATURE_COUNT];
                features[0] = i as f64 / n as f64;
                Sample {
                    seconds: (slope * features[0]).exp() * 1e-3,
                    features,
                    weight: 1.0,
                    origin: format!("{kernel} at N={}", if i == 0 { 1 } else { 2 }),
                }
            })
            .collect()
    }

    #[test]
    fn a_kernel_is_ranked_by_a_model_of_the_others() {
        let mut samples = kernel_samples("a", 30, 3.0);
        samples.extend(kernel_samples("b", 30, 3.0));
        let held = leave_one_kernel_out(&samples);
        assert_eq!(held.len(), 2);
        for h in &held {
            assert_eq!(h.samples, 30);
            // 29 samples of one shape: every pair is more than 5% apart.
            assert_eq!(h.pairs, 29 * 28 / 2, "{h:?}");
            assert!(h.pair_agreement > 0.9, "{h:?}");
        }
    }

    #[test]
    fn a_kernel_unlike_the_others_is_ranked_badly() {
        // The held-out kernel's time falls as feature 0 grows; the other's rises.
        let mut samples = kernel_samples("rising", 30, 3.0);
        samples.extend(kernel_samples("falling", 30, -3.0));
        let held = leave_one_kernel_out(&samples);
        assert!(held.iter().all(|h| h.pair_agreement < 0.1), "{held:?}");
    }
}
