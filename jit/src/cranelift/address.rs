//! Element addresses: `base + index * bytes`, built so that Cranelift can hoist the
//! loop-invariant part out of inner loops and fold constants into the access.
//!
//! A flat index is an i32 expression like `(yo * 4 + 1) * W + xo * 8 + 2`, often through lets.
//! Computing it in i32 and extending it once puts the whole sum inside the innermost loop that
//! mentions any of its variables, and makes each unrolled row its own address register. Instead
//! the index (lets substituted) is put in linear form, a sum of `coefficient * product of
//! factors` plus a constant (here `4W * yo + W + 8 * xo + 2`); each term is computed in 64 bits
//! and the terms are added to the base pointer outermost first (ordered by how deeply their
//! variables are bound), so the partial sum over outer loops is one loop-invariant value the
//! optimizer hoists, and the constant becomes the access's immediate offset.
//!
//! The 64-bit sum equals the sign-extended i32 index because index arithmetic does not
//! overflow i32 (the assumption bounds inference already makes, as Halide does).
//!
//! The hoisting depends on Cranelift seeing strata's loops as loops while it elaborates: see
//! `counted_loop` (stmt.rs) for the header shape that makes its loop-invariant code motion work.
//!
//! What stays in the innermost loop is the term of its own counter. Multiplied by a power of
//! two it is a shift or a scaled index; by any other constant (conv2d's channel strides, 72
//! and 25088 bytes) it would be an `imul` in every iteration, so such a term is an induction
//! variable instead: started at `coefficient * lo` before the loop and stepped by
//! `coefficient` at its end (`counted_loop`, `induction`). The sums are the same in 64-bit
//! wrapping arithmetic.

use super::FnCodegen;
use cranelift_codegen::ir::{types, InstBuilder, Value};
use strata_dsl::{BinOp, Dtype};
use strata_scheduler::ir::UnOp;
use strata_scheduler::{Expr, Stmt};

/// At most this many terms: beyond it an index is computed as it is written.
const MAX_TERMS: usize = 16;

/// `coefficient * factors[0] * factors[1] * ...`.
#[derive(Clone, Debug, PartialEq)]
struct Term {
    factors: Vec<Expr>,
    coefficient: i64,
}

/// `Σ terms + constant`.
#[derive(Default)]
struct Linear {
    terms: Vec<Term>,
    constant: i64,
}

impl FnCodegen<'_, '_, '_> {
    /// The address of `buffer[index]` (`index` scalar) as a pointer and a constant byte offset.
    pub fn element_address(&mut self, base: Value, index: &Expr, dtype: Dtype) -> (Value, i32) {
        let bytes = dtype.bytes() as i64;
        let linear = linearize(index, &self.lets)
            .and_then(|l| l.scaled(bytes))
            .filter(|l| l.terms.len() <= MAX_TERMS && i32::try_from(l.constant).is_ok());
        let Some(linear) = linear else {
            let i = self.expr(index).scalar();
            return (self.address(base, i, dtype), 0);
        };
        let mut keyed: Vec<(usize, &Term)> = linear
            .terms
            .iter()
            .map(|t| {
                (
                    t.factors
                        .iter()
                        .map(|f| self.binding_depth(f))
                        .max()
                        .unwrap_or(0),
                    t,
                )
            })
            .collect();
        keyed.sort_by_key(|(depth, _)| *depth);
        let mut addr = base;
        for (_, term) in keyed {
            let offset = match self.counter_term(term) {
                Some(offset) => offset,
                None => {
                    let product = self.product(&term.factors);
                    self.b.ins().imul_imm_s(product, term.coefficient)
                }
            };
            addr = self.b.ins().iadd(addr, offset);
        }
        (addr, linear.constant as i32)
    }

    /// `coefficient * counter` as an induction variable, when the term is a counter times a
    /// constant worth one (`counter_times_constant`) and the counter's loop keeps induction
    /// variables.
    fn counter_term(&mut self, term: &Term) -> Option<Value> {
        let name = counter_times_constant(term)?;
        let counter = match self.env.var(name) {
            super::CVal::Scalar(v) => v,
            super::CVal::Pieces(_) => return None,
        };
        self.induction(counter, term.coefficient)
    }

    /// Whether an access of `body` (a loop over `var`) has an address with a term
    /// `var * coefficient` worth an induction variable (`counter_times_constant`).
    pub fn wants_inductions(&self, var: &str, body: &Stmt) -> bool {
        crate::promote::accesses(body, &self.lets)
            .into_iter()
            .any(|(index, ty)| {
                let start = super::expr::dense_start(&index).unwrap_or(&index);
                linearize(start, &[])
                    .and_then(|l| l.scaled(ty.dtype.bytes() as i64))
                    .is_some_and(|l| {
                        l.terms
                            .iter()
                            .any(|t| counter_times_constant(t).is_some_and(|name| name == var))
                    })
            })
    }

    /// The product of i32 `factors`, each sign-extended, in 64 bits.
    fn product(&mut self, factors: &[Expr]) -> Value {
        let mut out: Option<Value> = None;
        for f in factors {
            let v = self.expr(f).scalar();
            let wide = self.b.ins().sextend(types::I64, v);
            out = Some(match out {
                None => wide,
                Some(p) => self.b.ins().imul(p, wide),
            });
        }
        out.expect("a term has at least one factor")
    }

    /// How deep the innermost binding `e` mentions sits in the scope (0 for constants and
    /// parameters): terms bound further out are added first so their partial sums hoist.
    fn binding_depth(&self, e: &Expr) -> usize {
        let mut depth = 0;
        e.for_each(&mut |node| {
            if let Expr::Var(name, _) = node {
                depth = depth.max(self.env.var_depth(name));
            }
        });
        depth
    }
}

/// The variable of a term `variable * coefficient` whose coefficient is worth an induction
/// variable: not a power of two. A power of two costs a shift or nothing (a scaled index), and
/// an induction variable measured slower there (sgemm's inner loop, about 5%); any other
/// constant is an `imul` per iteration, on port 1, one of the two ports the fmas run on
/// (conv2d's inner loop had two).
fn counter_times_constant(term: &Term) -> Option<&str> {
    let [Expr::Var(name, _)] = term.factors.as_slice() else {
        return None;
    };
    let cheap = term.coefficient > 0 && (term.coefficient as u64).is_power_of_two();
    (!cheap).then_some(name.as_str())
}

/// `e` in linear form with the lets in scope substituted (`lets` hold expanded values), or
/// `None` when a coefficient would overflow.
fn linearize(e: &Expr, lets: &[(String, Expr)]) -> Option<Linear> {
    let mut out = Linear::default();
    add_scaled(e, 1, lets, &mut out)?;
    Some(out)
}

fn add_scaled(e: &Expr, scale: i64, lets: &[(String, Expr)], out: &mut Linear) -> Option<()> {
    if let Some(c) = e.as_int() {
        out.constant = out.constant.checked_add(c.checked_mul(scale)?)?;
        return Some(());
    }
    match e {
        // A let is substituted unless its value reads memory (a load evaluated again here
        // could see a store made since the let) or it stands for itself (`promote::let_entry`
        // keeps a let with a large expansion as its own name; substituting that would recur
        // forever).
        Expr::Var(name, _) => match lets.iter().rev().find(|(n, _)| n == name) {
            Some((_, value))
                if !value.reads_memory() && !matches!(value, Expr::Var(n, _) if n == name) =>
            {
                add_scaled(value, scale, lets, out)
            }
            _ => out.add_term(vec![e.clone()], scale),
        },
        Expr::Binary(BinOp::Add, a, b) => {
            add_scaled(a, scale, lets, out)?;
            add_scaled(b, scale, lets, out)
        }
        Expr::Binary(BinOp::Sub, a, b) => {
            add_scaled(a, scale, lets, out)?;
            add_scaled(b, scale.checked_neg()?, lets, out)
        }
        Expr::Unary(UnOp::Neg, a) => add_scaled(a, scale.checked_neg()?, lets, out),
        Expr::Binary(BinOp::Mul, a, b) => {
            let (x, y) = (linearize(a, lets)?, linearize(b, lets)?);
            out.add_product(&x, &y, scale)
        }
        _ => out.add_term(vec![e.clone()], scale),
    }
}

impl Linear {
    fn add_term(&mut self, factors: Vec<Expr>, coefficient: i64) -> Option<()> {
        if coefficient == 0 {
            return Some(());
        }
        match self.terms.iter_mut().find(|t| t.factors == factors) {
            Some(t) => t.coefficient = t.coefficient.checked_add(coefficient)?,
            None => self.terms.push(Term {
                factors,
                coefficient,
            }),
        }
        self.terms.retain(|t| t.coefficient != 0);
        Some(())
    }

    /// Adds `scale * x * y`, multiplied out (distributing over the sums is exact in 64 bits).
    fn add_product(&mut self, x: &Linear, y: &Linear, scale: i64) -> Option<()> {
        let parts = |l: &Linear| {
            let mut p: Vec<(Vec<Expr>, i64)> = l
                .terms
                .iter()
                .map(|t| (t.factors.clone(), t.coefficient))
                .collect();
            if l.constant != 0 {
                p.push((Vec::new(), l.constant));
            }
            p
        };
        for (fx, cx) in parts(x) {
            for (fy, cy) in parts(y) {
                let c = cx.checked_mul(cy)?.checked_mul(scale)?;
                let mut factors = fx.clone();
                factors.extend(fy.iter().cloned());
                if factors.is_empty() {
                    self.constant = self.constant.checked_add(c)?;
                } else {
                    self.add_term(factors, c)?;
                }
            }
        }
        Some(())
    }

    fn scaled(mut self, by: i64) -> Option<Linear> {
        for t in &mut self.terms {
            t.coefficient = t.coefficient.checked_mul(by)?;
        }
        self.constant = self.constant.checked_mul(by)?;
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A let kept as its own name (`promote::let_entry`) is a term of its own, not substituted
    /// forever (a random pipeline at huge fixed sizes hung code generation).
    #[test]
    fn a_let_standing_for_itself_is_a_term() {
        let t = Expr::var("t");
        let lets = vec![("t".to_string(), t.clone())];
        let index = Expr::add(Expr::mul(t.clone(), Expr::int(4)), Expr::int(3));
        let linear = linearize(&index, &lets).unwrap();
        assert_eq!(linear.constant, 3);
        assert_eq!(linear.terms.len(), 1);
        assert_eq!(linear.terms[0].factors, vec![t]);
        assert_eq!(linear.terms[0].coefficient, 4);
    }
}
