//! Helpers shared by the dsl integration tests: loading the example kernels and seeded inputs.

#![allow(dead_code)]

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata_dsl::{Buffer, Pipeline};

/// Parses `examples/kernels/<name>.strata`.
pub fn example(name: &str) -> Pipeline {
    let path = format!(
        "{}/../examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    strata_dsl::parse_kernel(&source, &path).unwrap_or_else(|e| panic!("{e}"))
}

/// Every example kernel's name.
pub const EXAMPLES: [&str; 7] = [
    "matmul",
    "blur3x3",
    "softmax",
    "conv2d",
    "histogram",
    "gaussian5",
    "brighten",
];

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// Uniform f32 in [-1, 1).
pub fn random_f32(rng: &mut StdRng, shape: &[usize]) -> (Vec<f32>, Buffer) {
    let n = shape.iter().product();
    let values: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let buffer = Buffer::from_vec(shape, values.clone()).unwrap();
    (values, buffer)
}

pub fn random_u16(rng: &mut StdRng, shape: &[usize]) -> (Vec<u16>, Buffer) {
    let n = shape.iter().product();
    let values: Vec<u16> = (0..n).map(|_| rng.random()).collect();
    let buffer = Buffer::from_vec(shape, values.clone()).unwrap();
    (values, buffer)
}

pub fn random_u8(rng: &mut StdRng, shape: &[usize]) -> (Vec<u8>, Buffer) {
    let n = shape.iter().product();
    let values: Vec<u8> = (0..n).map(|_| rng.random()).collect();
    let buffer = Buffer::from_vec(shape, values.clone()).unwrap();
    (values, buffer)
}

/// Asserts two float results agree within `rel` relative error (absolute below 1).
pub fn assert_close(actual: &[f32], expected: &[f32], rel: f32, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: length");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        let tolerance = rel * e.abs().max(1.0);
        assert!(
            (a - e).abs() <= tolerance,
            "{what}: element {i} is {a}, expected {e}"
        );
    }
}
