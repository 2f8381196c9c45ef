//! Index arithmetic in linear form: an i32 expression of variables and constants written as a
//! sum of `coefficient * term` plus a constant, with let-bound variables replaced by their
//! values where the scope knows them. Two such expressions whose difference has no terms left
//! differ by a constant whatever the variables are (`x.min + 63` and `x.min`). Only for i32
//! expressions that read no memory and no parameter, and only where the scope's intervals
//! prove that both sides' exact values fit in i32, so wrapping arithmetic agrees with them.

use crate::ir::{Expr, Type};
use crate::simplify::interval::{bounds, Scope};
use strata_dsl::BinOp;

/// `a - b` when it is a constant by the linear forms of `a` and `b`.
pub(super) fn constant_difference(a: &Expr, b: &Expr, scope: &Scope) -> Option<i64> {
    let (terms, constant) = difference(a, b, scope)?;
    terms.is_empty().then_some(constant)
}

/// The range of `a - b`: its linear form's terms that do not cancel, bounded by the scope's
/// intervals, plus its constant.
pub(super) fn difference_range(a: &Expr, b: &Expr, scope: &Scope) -> Option<(i64, i64)> {
    let (terms, constant) = difference(a, b, scope)?;
    let (lo, hi) = range(&terms, constant, scope)?;
    Some((i64::try_from(lo).ok()?, i64::try_from(hi).ok()?))
}

/// The exact range of `Σ k * term + constant` from the terms' intervals.
fn range(terms: &[(&Expr, i64)], constant: i64, scope: &Scope) -> Option<(i128, i128)> {
    let (mut lo, mut hi) = (constant as i128, constant as i128);
    for (term, k) in terms {
        let interval = bounds(term, scope)?;
        let (x, y) = (
            interval.lo as i128 * *k as i128,
            interval.hi as i128 * *k as i128,
        );
        lo += x.min(y);
        hi += x.max(y);
    }
    Some((lo, hi))
}

/// The terms of `a - b` that do not cancel, with their coefficients, and its constant; `None`
/// unless both sides are i32 linear forms whose exact values provably fit in i32. Then their
/// wrapping evaluation (exact modulo 2^32 for `+`, `-` and `*` by constants) gives the exact
/// values, so the difference computed here is the program's.
fn difference<'e>(
    a: &'e Expr,
    b: &'e Expr,
    scope: &'e Scope,
) -> Option<(Vec<(&'e Expr, i64)>, i64)> {
    if a.ty() != Type::I32 || b.ty() != Type::I32 {
        return None;
    }
    let (fa, fb) = (Form::of(a, scope)?, Form::of(b, scope)?);
    if !fa.fits_i32(scope)? || !fb.fits_i32(scope)? {
        return None;
    }
    let mut combined: Vec<(&Expr, i64)> = Vec::new();
    let negated = fb.terms.iter().map(|(t, k)| (*t, -k));
    for (t, k) in fa.terms.iter().copied().chain(negated) {
        match combined.iter_mut().find(|(u, _)| *u == t) {
            Some((_, c)) => *c = c.checked_add(k)?,
            None => combined.push((t, k)),
        }
    }
    combined.retain(|(_, k)| *k != 0);
    Some((combined, fa.constant.checked_sub(fb.constant)?))
}

/// At most this many nodes are visited per linear form: substituting nested lets can
/// otherwise grow exponentially (`let a = x + x in let b = a + a in ...`).
const MAX_NODES: usize = 256;

/// A linear form being built: `Σ coefficient * term + constant`.
struct Form<'e> {
    terms: Vec<(&'e Expr, i64)>,
    constant: i64,
    budget: usize,
}

impl<'e> Form<'e> {
    fn of(e: &'e Expr, scope: &'e Scope) -> Option<Form<'e>> {
        let mut form = Form {
            terms: Vec::new(),
            constant: 0,
            budget: MAX_NODES,
        };
        form.add(e, 1, scope)?;
        Some(form)
    }

    /// Whether the form's exact value lies in i32 for every value its terms can take; `None`
    /// when a term has no known interval.
    fn fits_i32(&self, scope: &Scope) -> Option<bool> {
        let (lo, hi) = range(&self.terms, self.constant, scope)?;
        Some(lo >= i32::MIN as i128 && hi <= i32::MAX as i128)
    }

    /// Adds `scale * e`; let-bound variables are replaced by their values where the scope
    /// knows them. `None` if `e` reads memory or a parameter, or is too large.
    fn add(&mut self, e: &'e Expr, scale: i64, scope: &'e Scope) -> Option<()> {
        self.budget = self.budget.checked_sub(1)?;
        if let Some(c) = e.as_int() {
            self.constant = self.constant.checked_add(c.checked_mul(scale)?)?;
            return Some(());
        }
        match e {
            Expr::Var(name, _) => match scope.let_value(name) {
                Some(value) => self.add(value, scale, scope),
                None => self.atom(e, scale),
            },
            Expr::Binary(BinOp::Add, x, y) => {
                self.add(x, scale, scope)?;
                self.add(y, scale, scope)
            }
            Expr::Binary(BinOp::Sub, x, y) => {
                self.add(x, scale, scope)?;
                self.add(y, scale.checked_neg()?, scope)
            }
            Expr::Binary(BinOp::Mul, x, y) => match (x.as_int(), y.as_int()) {
                (Some(c), _) => self.add(y, scale.checked_mul(c)?, scope),
                (_, Some(c)) => self.add(x, scale.checked_mul(c)?, scope),
                _ => self.atom(e, scale),
            },
            _ => self.atom(e, scale),
        }
    }

    fn atom(&mut self, e: &'e Expr, scale: i64) -> Option<()> {
        let mut opaque = false;
        e.for_each(&mut |x| {
            opaque |= matches!(x, Expr::Load { .. } | Expr::Call { .. } | Expr::Param(..))
        });
        if opaque {
            return None;
        }
        self.terms.push((e, scale));
        Some(())
    }
}
