//! Seeded random inputs for a kernel, and the comparison of two results with the stated float
//! tolerance: what every differential test, `strata run` and the tuner use to check an answer.

use crate::buffer::{Buffer, ShapeError};
use crate::dtype::Dtype;
use crate::eval::Args;
use crate::ir::{InputKind, Pipeline};
use crate::signature::Sizes;
use crate::value::Value;
use rand::Rng;

/// Random buffers and scalars for every input of `pipeline`, with the given sizes. Floats are
/// uniform in [-1, 1) (scalars in [-2, 4)); integers cover the type's range up to 65535. The
/// shapes (inputs' and output's) are checked as a call would check them before anything is
/// allocated, and allocation failure is an error, not an abort.
pub fn random_args(pipeline: &Pipeline, sizes: &Sizes, rng: &mut impl Rng) -> Result<Args, String> {
    let (shapes, _) = pipeline
        .call_signature()
        .shapes_for(sizes)
        .map_err(|e| e.to_string())?;
    let mut args = Args::new();
    for input in &pipeline.inputs {
        if input.kind == InputKind::Scalar {
            let v = match input.dtype {
                t if t.is_float() => Value::F64(rng.random_range(-2.0..4.0)).cast(t),
                t => Value::I64(rng.random_range(0..=100)).cast(t),
            };
            args = args.scalar(&input.name, v);
        } else if let Some((_, shape)) = shapes.iter().find(|(name, _)| name == &input.name) {
            let buffer = random_buffer(input.dtype, shape, rng).map_err(|e| e.to_string())?;
            args = args.buffer(&input.name, buffer);
        }
    }
    Ok(args)
}

/// A buffer of `shape` with random elements of `dtype`.
pub fn random_buffer(
    dtype: Dtype,
    shape: &[usize],
    rng: &mut impl Rng,
) -> Result<Buffer, ShapeError> {
    let mut buffer = Buffer::zeros(dtype, shape)?;
    for i in 0..buffer.len() {
        let v = match dtype {
            Dtype::F32 | Dtype::F64 => Value::F64(rng.random_range(-1.0..1.0)).cast(dtype),
            _ => Value::I64(rng.random_range(0..=u16::MAX as i64)).cast(dtype),
        };
        buffer.set_flat(i, v);
    }
    Ok(buffer)
}

/// Whether `got` is `expected`: same shape, integers exactly, floats within `tolerance`
/// relative to the larger of 1 and the expected value's magnitude (NaN matches NaN).
pub fn agree(got: &Buffer, expected: &Buffer, tolerance: f64) -> Result<(), String> {
    if got.shape() != expected.shape() || got.dtype() != expected.dtype() {
        return Err(format!(
            "got {} {:?}, expected {} {:?}",
            got.dtype(),
            got.shape(),
            expected.dtype(),
            expected.shape()
        ));
    }
    let float = expected.dtype().is_float();
    for i in 0..expected.len() {
        let (Some(g), Some(e)) = (got.get_flat(i), expected.get_flat(i)) else {
            continue;
        };
        let ok = if float {
            let (g, e) = (g.as_f64(), e.as_f64());
            // Infinities agree only with themselves (their difference is NaN or infinite).
            let finite = g.is_finite() && e.is_finite();
            (g.is_nan() && e.is_nan())
                || g == e
                || (finite && (g - e).abs() <= tolerance * e.abs().max(1.0))
        } else {
            g == e
        };
        if !ok {
            return Err(format!("element {i} is {g:?}, expected {e:?}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(values: &[f32]) -> Buffer {
        let mut b = Buffer::zeros(Dtype::F32, &[values.len()]).unwrap();
        for (i, v) in values.iter().enumerate() {
            assert!(b.set_flat(i, Value::F32(*v)));
        }
        b
    }

    #[test]
    fn equal_infinities_and_nans_agree_and_different_ones_do_not() {
        let a = floats(&[f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1.0]);
        assert_eq!(agree(&a, &a.clone(), 1e-4), Ok(()));
        let b = floats(&[f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NAN, 1.0]);
        assert!(agree(&a, &b, 1e-4).is_err());
        let c = floats(&[f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1.5]);
        assert!(agree(&a, &c, 1e-4).is_err());
    }
}
