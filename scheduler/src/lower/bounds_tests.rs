//! Bounds inference, property-tested: the `min`/`max` folding constructors keep every value, and
//! the box `access_bounds` finds for an access under a guard holds every index the access takes
//! and lies inside the box without the guard (a guard only narrows, even when its loop runs zero
//! times).

use crate::interp::eval_expr;
use crate::lower::bounds::{access_bounds, fold_max, fold_min};
use crate::{Expr, ForKind, Stmt};
use proptest::prelude::*;
use std::collections::HashMap;
use strata_dsl::Value;

/// The value of an integer expression with `vars` bound.
fn value(e: &Expr, vars: &[(&str, i32)]) -> i64 {
    let vars: HashMap<String, _> = vars
        .iter()
        .map(|(n, v)| (n.to_string(), crate::interp::VValue::scalar(Value::I32(*v))))
        .collect();
    let v = eval_expr(e, &vars).unwrap_or_else(|err| panic!("{e}: {err}"));
    v.as_scalar()
        .and_then(|s| s.as_i64())
        .unwrap_or_else(|| panic!("{e} is not an integer"))
}

/// `x + c`, `y + c`, `(x + c) / d + e` (an upsampling read), and `min`/`max` of those plus a
/// constant, nested.
fn index_expr() -> impl Strategy<Value = Expr> {
    let linear = (prop::sample::select(vec!["x", "y"]), -3i32..=3)
        .prop_map(|(v, c)| Expr::add(Expr::var(v), Expr::int(c)));
    let quotient = (
        prop::sample::select(vec!["x", "y"]),
        -3i32..=3,
        1i32..=3,
        -2i32..=2,
    )
        .prop_map(|(v, c, d, e)| {
            let n = Expr::add(Expr::var(v), Expr::int(c));
            Expr::add(
                Expr::binary(strata_dsl::BinOp::Div, n, Expr::int(d)),
                Expr::int(e),
            )
        });
    let leaf = prop_oneof![linear, quotient];
    leaf.prop_recursive(3, 12, 2, |inner| {
        (any::<bool>(), inner.clone(), inner, -3i32..=3).prop_map(|(is_min, a, b, c)| {
            let m = if is_min {
                Expr::min(a, b)
            } else {
                Expr::max(a, b)
            };
            Expr::add(m, Expr::int(c))
        })
    })
}

proptest! {
    #[test]
    fn fold_min_and_fold_max_keep_the_value(
        a in index_expr(),
        b in index_expr(),
        x in -10i32..=10,
        y in -10i32..=10,
    ) {
        let vars = [("x", x), ("y", y)];
        let (va, vb) = (value(&a, &vars), value(&b, &vars));
        prop_assert_eq!(value(&fold_min(a.clone(), b.clone()), &vars), va.min(vb));
        prop_assert_eq!(value(&fold_max(a, b), &vars), va.max(vb));
    }

    /// `for v in [lo, lo + extent) { let w = v * step + offset; if (w <= cap) { f(w * scale + c) } }`:
    /// the shape of a split reduction loop with its tail guard.
    #[test]
    fn a_guard_only_narrows_the_box(
        lo in -4i32..=4,
        extent in 0i32..=6,
        step in 1i32..=3,
        offset in -3i32..=3,
        cap in -8i32..=12,
        scale in prop::sample::select(vec![-2, -1, 1, 2]),
        c in -3i32..=3,
        strict in any::<bool>(),
    ) {
        let w = Expr::var("w");
        let index = Expr::add(Expr::mul(w.clone(), Expr::int(scale)), Expr::int(c));
        let access = Stmt::Provide { func: "f".into(), args: vec![index.clone()], value: Expr::int(0) };
        let cond = if strict {
            Expr::lt(w.clone(), Expr::int(cap + 1))
        } else {
            Expr::le(w.clone(), Expr::int(cap))
        };
        let nest = |body: Stmt| Stmt::For {
            var: "v".into(),
            min: Expr::int(lo),
            extent: Expr::int(extent),
            kind: ForKind::Serial,
            body: Box::new(Stmt::Let {
                name: "w".into(),
                value: Expr::add(Expr::mul(Expr::var("v"), Expr::int(step)), Expr::int(offset)),
                body: Box::new(body),
            }),
        };
        let guarded = nest(Stmt::If { cond, then_case: Box::new(access.clone()), else_case: None });
        let ends = |s: &Stmt| {
            let b = access_bounds(s, "f").expect("the nest accesses f");
            let end = |e: &Option<Expr>| value(e.as_ref().expect("bounded"), &[]);
            (end(&b[0].min), end(&b[0].max))
        };
        let (min, max) = ends(&guarded);
        let (open_min, open_max) = ends(&nest(access));
        prop_assert!(open_min <= min && max <= open_max,
            "guarded [{min}, {max}] outside unguarded [{open_min}, {open_max}]");
        for v in lo..lo + extent {
            let w = v * step + offset;
            if w <= cap {
                let i = i64::from(w * scale + c);
                prop_assert!(min <= i && i <= max, "index {i} at v = {v} outside [{min}, {max}]");
            }
        }
    }
}

/// An upsampling read at `x / 2` and `(x + 1) / 2` is bounded by one of them on each side, so
/// a pyramid's regions keep one term per level.
#[test]
fn quotients_of_one_numerator_order_like_their_numerators() {
    let div2 = |e: Expr| Expr::binary(strata_dsl::BinOp::Div, e, Expr::int(2));
    let low = div2(Expr::var("x"));
    let high = div2(Expr::add(Expr::var("x"), Expr::int(1)));
    assert_eq!(fold_min(low.clone(), high.clone()), low);
    assert_eq!(fold_max(low.clone(), high.clone()), high);
    // `x / 2 + 1` and `(x + 1) / 2` do not order alike in both parts: kept as they are.
    let shifted = Expr::add(low.clone(), Expr::int(1));
    assert_eq!(
        fold_max(shifted.clone(), high.clone()),
        Expr::max(shifted, high)
    );
}
