//! Upper bounds of unsigned integer expressions, so the code generator can pick cheaper forms
//! that are exact only on a known range: a u32 division by a constant through f32 when the
//! dividend stays below 2^22, a narrowing cast without its mask when the value already fits.
//! A bound is only ever what the expression's form proves; anything else is bounded by its type.

use strata_dsl::{BinOp, Dtype, Intrinsic};
use strata_scheduler::Expr;

/// The largest value `e` can take, when `e` has an unsigned integer type (lanes alike):
/// `lets` are the enclosing lets with their values expanded (innermost last).
pub fn unsigned_bound(e: &Expr, lets: &[(String, Expr)]) -> Option<u64> {
    let dtype = e.ty().dtype;
    let type_max = dtype.int_range().filter(|_| dtype.is_unsigned_int())?.1 as u64;
    let formed = match e {
        Expr::Const(v) => v.as_i64().and_then(|v| u64::try_from(v).ok()),
        Expr::Broadcast { value, .. } => unsigned_bound(value, lets),
        Expr::Var(name, _) => lets
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .and_then(|(_, value)| unsigned_bound(value, &[])),
        // Zero extension keeps the value; anything else (narrowing, from signed) wraps.
        Expr::Cast(_, a) if widens_unsigned(a.ty().dtype, dtype) => unsigned_bound(a, lets),
        Expr::Binary(op, a, b) => binary_bound(*op, a, b, lets),
        Expr::Intrinsic(Intrinsic::Min, args) => {
            args.iter().filter_map(|a| unsigned_bound(a, lets)).min()
        }
        Expr::Intrinsic(Intrinsic::Max, args) => {
            args.iter().filter_map(|a| unsigned_bound(a, lets)).max()
        }
        _ => None,
    };
    // A sum or product past the type's range wraps, so its formed bound says nothing.
    Some(formed.filter(|&b| b <= type_max).unwrap_or(type_max))
}

fn binary_bound(op: BinOp, a: &Expr, b: &Expr, lets: &[(String, Expr)]) -> Option<u64> {
    let (x, y) = (unsigned_bound(a, lets)?, unsigned_bound(b, lets)?);
    match op {
        BinOp::Add => x.checked_add(y),
        BinOp::Mul => x.checked_mul(y),
        // Division by zero gives zero; by anything else at most the dividend over the least
        // divisor, which is known only for a constant.
        BinOp::Div => Some(match constant(b) {
            Some(d) if d > 0 => x / d,
            _ => x,
        }),
        BinOp::Mod => Some(x.min(y.saturating_sub(1))),
        _ => None,
    }
}

fn constant(e: &Expr) -> Option<u64> {
    match e {
        Expr::Const(v) => v.as_i64().and_then(|v| u64::try_from(v).ok()),
        Expr::Broadcast { value, .. } => constant(value),
        _ => None,
    }
}

fn widens_unsigned(from: Dtype, to: Dtype) -> bool {
    from.is_unsigned_int() && to.is_unsigned_int() && from.bytes() <= to.bytes()
}

#[cfg(test)]
mod tests {
    use super::unsigned_bound;
    use strata_dsl::{BinOp, Dtype, Value};
    use strata_scheduler::ir::Type;
    use strata_scheduler::Expr;

    fn u16_load(lanes: u16) -> Expr {
        Expr::Load {
            buffer: "input".into(),
            index: Box::new(Expr::Ramp {
                base: Box::new(Expr::int(0)),
                stride: Box::new(Expr::int(1)),
                lanes,
            }),
            ty: Type::scalar(Dtype::U16).with_lanes(lanes),
        }
    }

    fn widen(e: Expr) -> Expr {
        Expr::Cast(Type::scalar(Dtype::U32), Box::new(e))
    }

    fn u32_const(v: u32) -> Expr {
        Expr::Const(Value::U32(v))
    }

    #[test]
    fn sums_of_widened_u16_divided_by_a_constant() {
        let sum = Expr::binary(
            BinOp::Add,
            Expr::binary(BinOp::Add, widen(u16_load(1)), widen(u16_load(1))),
            widen(u16_load(1)),
        );
        assert_eq!(unsigned_bound(&sum, &[]), Some(3 * 65535));
        let third = Expr::binary(BinOp::Div, sum, u32_const(3));
        assert_eq!(unsigned_bound(&third, &[]), Some(65535));
    }

    #[test]
    fn wrapping_forms_fall_back_to_the_type() {
        let big = Expr::binary(BinOp::Mul, u32_const(1 << 20), u32_const(1 << 20));
        assert_eq!(unsigned_bound(&big, &[]), Some(u32::MAX as u64));
        let signed = Expr::Cast(Type::scalar(Dtype::U32), Box::new(Expr::int(-1)));
        assert_eq!(unsigned_bound(&signed, &[]), Some(u32::MAX as u64));
        assert_eq!(unsigned_bound(&Expr::int(5), &[]), None, "not unsigned");
    }

    #[test]
    fn lets_and_min() {
        let lets = vec![("t".to_string(), widen(u16_load(1)))];
        let t = Expr::Var("t".into(), Type::scalar(Dtype::U32));
        assert_eq!(unsigned_bound(&t, &lets), Some(65535));
        let m = Expr::Intrinsic(
            strata_dsl::Intrinsic::Min,
            vec![
                Expr::Var("x".into(), Type::scalar(Dtype::U32)),
                u32_const(7),
            ],
        );
        assert_eq!(unsigned_bound(&m, &[]), Some(7));
    }
}
