//! The learned cost model: ridge regression of log(run time) on features of a genome (split
//! factors as log2, loop order, vector width, unroll factor, parallelism, packing, rfactor
//! pieces, placement), trained online on every measurement so far. Small on purpose: the default
//! strategy only needs it to rank many unmeasured candidates well enough to measure the
//! promising ones first (the role of Ansor's and Adams2019's models).

use crate::space::{width_at, Genome, Place, FACTORS, RFACTOR_CHUNKS, UNROLLS, WIDTHS};

/// A genome's features, always the same length for one space; `widths` is the space's table
/// of vector widths (the width is a fraction of its widest, so 1.0 is the widest vector).
pub fn features(g: &Genome, widths: &[u32]) -> Vec<f64> {
    let widest = f64::from(widths.iter().copied().max().unwrap_or(0).max(1));
    let mut f = vec![1.0];
    for p in &g.places {
        let (inline, root, depth, slides) = match p {
            Place::Inline => (1.0, 0.0, 0.0, 0.0),
            Place::Root => (0.0, 1.0, 0.0, 0.0),
            Place::At(d) => (0.0, 0.0, 1.0 + *d as f64, 0.0),
            Place::Slide(d) => (0.0, 0.0, 1.0 + *d as f64, 1.0),
        };
        f.extend([inline, root, depth, slides]);
    }
    for s in &g.stages {
        f.extend(
            s.split
                .iter()
                .map(|&i| (FACTORS[i as usize % FACTORS.len()] as f64).log2()),
        );
        f.push(s.reduction_outside as u8 as f64);
        f.push(f64::from(width_at(widths, s.vector)) / widest);
        f.push((UNROLLS[s.unroll as usize % UNROLLS.len()] as f64).log2());
        f.push(s.parallel as u8 as f64);
        f.push(s.vector_reduction as u8 as f64);
        f.push(s.unroll_reduction as u8 as f64);
        f.push(s.pack as u8 as f64);
        let chunk = RFACTOR_CHUNKS[s.rfactor as usize % RFACTOR_CHUNKS.len()];
        f.push(f64::from(chunk.max(1)).log2() / 16.0);
    }
    f
}

/// Ridge regression `y ~ w . x`.
pub struct Model {
    /// The space's vector widths, which the genomes' width genes index.
    widths: Vec<u32>,
    xs: Vec<Vec<f64>>,
    ys: Vec<f64>,
    /// `gram[i][j] = xs[i] . xs[j]` for `j <= i`, grown by one row per measurement, so a refit
    /// in the dual form does not recompute it.
    gram: Vec<Vec<f64>>,
    weights: Option<Vec<f64>>,
}

impl Default for Model {
    /// A model of genomes of a Cranelift space (widths `WIDTHS`).
    fn default() -> Model {
        Model::for_widths(WIDTHS.to_vec())
    }
}

/// How strongly weights are pulled to zero (features are O(1)).
const RIDGE: f64 = 1.0;

impl Model {
    /// An untrained model of genomes whose width genes index `widths`.
    pub fn for_widths(widths: Vec<u32>) -> Model {
        Model {
            widths,
            xs: Vec::new(),
            ys: Vec::new(),
            gram: Vec::new(),
            weights: None,
        }
    }

    /// Adds a measurement (seconds) and refits.
    pub fn observe(&mut self, g: &Genome, seconds: f64) {
        if !(seconds > 0.0 && seconds.is_finite()) {
            return;
        }
        let x = features(g, &self.widths);
        self.gram
            .push(self.xs.iter().chain([&x]).map(|xi| dot(xi, &x)).collect());
        self.xs.push(x);
        self.ys.push(seconds.ln());
        self.weights = fit_with_gram(&self.xs, &self.ys, &self.gram);
    }

    /// Predicted log(seconds); `None` before any training.
    pub fn predict(&self, g: &Genome) -> Option<f64> {
        let w = self.weights.as_ref()?;
        Some(
            features(g, &self.widths)
                .iter()
                .zip(w)
                .map(|(x, w)| x * w)
                .sum(),
        )
    }

    /// How many measurements the model has been trained on.
    pub fn samples(&self) -> usize {
        self.ys.len()
    }
}

/// The ridge weights: the `w` that solves `(X^T X + ridge I) w = X^T y`.
pub fn fit(xs: &[Vec<f64>], ys: &[f64]) -> Option<Vec<f64>> {
    let gram: Vec<Vec<f64>> = (0..xs.len())
        .map(|i| (0..=i).map(|j| dot(&xs[i], &xs[j])).collect())
        .collect();
    fit_with_gram(xs, ys, &gram)
}

/// `fit` given the lower triangle of `X X^T`. With fewer measurements than features (an
/// app-sized pipeline has ~1,600 features and a tuning run a few hundred measurements) it
/// solves the dual system `(X X^T + ridge I) a = y` and returns `w = X^T a`, the same weights
/// (push-through identity) for a measurements-sized system: the features-sized one took
/// seconds per measurement on the local Laplacian, more than lowering a candidate.
fn fit_with_gram(xs: &[Vec<f64>], ys: &[f64], gram: &[Vec<f64>]) -> Option<Vec<f64>> {
    let n = xs.first()?.len();
    if xs.len() >= n {
        return fit_primal(xs, ys);
    }
    let m = xs.len();
    let mut a = vec![vec![0.0; m + 1]; m];
    for i in 0..m {
        for j in 0..=i {
            a[i][j] = gram[i][j];
            a[j][i] = gram[i][j];
        }
        a[i][i] += RIDGE;
        a[i][m] = ys[i];
    }
    let dual = solve(a)?;
    let mut w = vec![0.0; n];
    for (x, a) in xs.iter().zip(&dual) {
        for (w, x) in w.iter_mut().zip(x) {
            *w += a * x;
        }
    }
    Some(w)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

/// Solves `(X^T X + ridge I) w = X^T y` directly (features-sized).
fn fit_primal(xs: &[Vec<f64>], ys: &[f64]) -> Option<Vec<f64>> {
    let n = xs.first()?.len();
    let mut a = vec![vec![0.0; n + 1]; n];
    for (x, y) in xs.iter().zip(ys) {
        for i in 0..n {
            for j in 0..n {
                a[i][j] += x[i] * x[j];
            }
            a[i][n] += x[i] * y;
        }
    }
    for (i, row) in a.iter_mut().enumerate() {
        row[i] += RIDGE;
    }
    solve(a)
}

/// Solves the augmented system `a` (n rows of n coefficients and a right-hand side) by
/// Gauss-Jordan elimination with partial pivoting.
fn solve(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let n = a.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        for row in 0..n {
            if row != col {
                let factor = a[row][col] / a[col][col];
                for k in col..=n {
                    a[row][k] -= factor * a[col][k];
                }
            }
        }
    }
    Some((0..n).map(|i| a[i][n] / a[i][i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn fit_recovers_a_linear_function() {
        let xs: Vec<Vec<f64>> = (0..50)
            .map(|i| vec![1.0, i as f64, (i * i % 7) as f64])
            .collect();
        let ys: Vec<f64> = xs.iter().map(|x| 2.0 + 0.5 * x[1] - 3.0 * x[2]).collect();
        let w = fit(&xs, &ys).unwrap();
        // The ridge term pulls weights slightly toward zero; predictions stay close.
        assert!((w[1] - 0.5).abs() < 0.02, "{w:?}");
        assert!((w[2] + 3.0).abs() < 0.1, "{w:?}");
        let worst = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| (x.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() - y).abs())
            .fold(0.0, f64::max);
        assert!(worst < 0.5, "largest error {worst}");
    }

    #[test]
    fn the_dual_and_primal_forms_give_the_same_weights() {
        // More features than measurements takes the dual form, and the model's incremental
        // Gram matrix must give what `fit` computes from scratch.
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let xs: Vec<Vec<f64>> = (0..12)
            .map(|_| (0..40).map(|_| rng.random_range(-2.0..2.0)).collect())
            .collect();
        let ys: Vec<f64> = (0..12).map(|_| rng.random_range(-5.0..5.0)).collect();
        let dual = fit(&xs, &ys).unwrap();
        let primal = fit_primal(&xs, &ys).unwrap();
        for (d, p) in dual.iter().zip(&primal) {
            assert!((d - p).abs() < 1e-9, "dual {d} primal {p}");
        }
        let gram: Vec<Vec<f64>> = (0..xs.len())
            .map(|i| (0..=i).map(|j| dot(&xs[i], &xs[j])).collect())
            .collect();
        assert_eq!(fit_with_gram(&xs, &ys, &gram).unwrap(), dual);
    }

    #[test]
    fn singular_systems_are_regularised() {
        let xs = vec![vec![1.0, 0.0]; 3];
        let ys = vec![1.0; 3];
        assert!(fit(&xs, &ys).is_some());
    }
}
