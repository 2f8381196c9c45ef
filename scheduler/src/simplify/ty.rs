//! The type of a loop-IR expression, found quickly: what the rules and interval arithmetic ask
//! of nearly every node they visit.

use crate::ir::{Expr, Type, UnOp};

/// The type of a node that says it without looking below itself.
fn own_type(e: &Expr) -> Option<Type> {
    match e {
        Expr::Const(_) | Expr::Param(..) => Some(e.ty()),
        Expr::Var(_, t)
        | Expr::Call { ty: t, .. }
        | Expr::Load { ty: t, .. }
        | Expr::Cast(t, _) => Some(*t),
        _ => None,
    }
}

/// `e.ty()`, read off an operand that has its type at hand where there is one, else off the
/// last operand: `Expr::ty` walks down first operands, which is slow on the left-leaning
/// chains that constants-to-the-right produces, like `min(min(x + 1, y + 2), z + 3)`.
pub(crate) fn ty_of(e: &Expr) -> Type {
    let typed = |xs: &[&Expr]| {
        xs.iter()
            .find_map(|x| own_type(x))
            .or_else(|| xs.last().map(|x| ty_of(x)))
    };
    match e {
        Expr::Binary(op, a, b) => {
            let t = typed(&[a, b]).unwrap_or(Type::I32);
            let boolean = op.is_comparison() || op.is_logical();
            if boolean {
                Type::BOOL.with_lanes(t.lanes)
            } else {
                t
            }
        }
        Expr::Intrinsic(_, args) if !args.is_empty() => {
            typed(&args.iter().collect::<Vec<_>>()).unwrap_or_else(|| e.ty())
        }
        Expr::Select(_, t, f) => typed(&[t, f]).unwrap_or_else(|| e.ty()),
        Expr::Unary(UnOp::Neg, a) => ty_of(a),
        Expr::Unary(UnOp::Not, a) => Type::BOOL.with_lanes(ty_of(a).lanes),
        _ => e.ty(),
    }
}
