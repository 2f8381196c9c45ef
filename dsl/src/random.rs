//! Seeded random inputs for a kernel, and the comparison of two results with the stated float
//! tolerance: what every differential test, `strata run` and the tuner use to check an answer.

use crate::args::Args;
use crate::buffer::{Buffer, ShapeError};
use crate::dtype::Dtype;
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

/// How far an answer may be from the reference's, the rule every check of an answer states:
///
/// - floats: within `relative` of the larger of 1 and the expected value's magnitude (NaN
///   matches NaN, an infinity only itself): schedules reassociate float arithmetic;
/// - integers: exactly, unless the kernel computes them through float arithmetic
///   (`integers_from_floats`, [`Pipeline::computes_with_floats`]): a float one ulp away from the
///   reference's can cross a rounding boundary on its way to an integer, so then within one
///   unit more than the float rule allows (`1 + relative * max(1, |expected|)`);
/// - bools: exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// The relative tolerance of floats.
    pub relative: f64,
    /// Integers may be off as floats are, plus one unit.
    pub integers_from_floats: bool,
}

impl Tolerance {
    /// The tolerance for the answers of `pipeline`, floats within `relative`.
    pub fn for_kernel(pipeline: &Pipeline, relative: f64) -> Tolerance {
        Tolerance {
            relative,
            integers_from_floats: pipeline.computes_with_floats(),
        }
    }

    /// Whether integer `got` passes for `expected`.
    fn integers_agree(self, got: i64, expected: i64) -> bool {
        if !self.integers_from_floats {
            return got == expected;
        }
        let slack = 1.0 + self.relative * (expected as f64).abs().max(1.0);
        (i128::from(got) - i128::from(expected)).abs() as f64 <= slack
    }

    /// Whether float `got` passes for `expected`.
    fn floats_agree(self, g: f64, e: f64) -> bool {
        // Infinities agree only with themselves (their difference is NaN or infinite).
        let finite = g.is_finite() && e.is_finite();
        (g.is_nan() && e.is_nan())
            || g == e
            || (finite && (g - e).abs() <= self.relative * e.abs().max(1.0))
    }
}

/// Whether `got` is `expected`: same shape, integers exactly, floats within `tolerance`
/// relative to the larger of 1 and the expected value's magnitude (NaN matches NaN).
pub fn agree(got: &Buffer, expected: &Buffer, tolerance: f64) -> Result<(), String> {
    let exact_integers = Tolerance {
        relative: tolerance,
        integers_from_floats: false,
    };
    agree_within(got, expected, exact_integers)
}

/// Whether `got` is `expected` under `tolerance`: same shape and type, every element within
/// the rule [`Tolerance`] states.
pub fn agree_within(got: &Buffer, expected: &Buffer, tolerance: Tolerance) -> Result<(), String> {
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
        let ok = match (g, e) {
            _ if float => tolerance.floats_agree(g.as_f64(), e.as_f64()),
            (Value::Bool(_), _) => g == e,
            _ => match (g.as_i64(), e.as_i64()) {
                (Some(g), Some(e)) => tolerance.integers_agree(g, e),
                _ => false,
            },
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

    fn kernel(source: &str) -> Pipeline {
        crate::parse_kernel(source, "k.strata").unwrap()
    }

    /// Integers computed through float arithmetic may be one unit more off than the float
    /// rule allows; other integers, and bools, must be exact.
    #[test]
    fn integers_from_floats_get_one_unit_more_than_floats() {
        let through_floats =
            kernel("kernel k(X: f32[N]) -> out: u16[N] { out(i) = u16(X(i) * 65535.0 + 0.5); }");
        let cast_only = kernel("kernel k(X: f32[N]) -> out: u16[N] { out(i) = u16(X(i)); }");
        let summed = kernel(
            "kernel k(X: f32[N]) -> out: i32[N] { out(i) = i32(sum(k in 0..4) X(k) * 0.0); }",
        );
        assert!(through_floats.computes_with_floats() && summed.computes_with_floats());
        assert!(!cast_only.computes_with_floats());
        let (a, b) = (
            Buffer::from_vec(&[1], vec![37937u16]),
            Buffer::from_vec(&[1], vec![37938u16]),
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        let loose = Tolerance::for_kernel(&through_floats, 1e-4);
        assert_eq!(agree_within(&a, &b, loose), Ok(()));
        assert!(agree_within(&a, &b, Tolerance::for_kernel(&cast_only, 1e-4)).is_err());
        // 1 + 1e-4 * 60000 = 7 units at most.
        let far = Buffer::from_vec(&[1], vec![60008u16]).unwrap();
        let near = Buffer::from_vec(&[1], vec![60006u16]).unwrap();
        let expected = Buffer::from_vec(&[1], vec![60000u16]).unwrap();
        assert!(agree_within(&far, &expected, loose).is_err());
        assert_eq!(agree_within(&near, &expected, loose), Ok(()));
        let (t, f) = (
            Buffer::from_vec(&[1], vec![true]),
            Buffer::from_vec(&[1], vec![false]),
        );
        assert!(agree_within(&t.unwrap(), &f.unwrap(), loose).is_err());
    }
}
