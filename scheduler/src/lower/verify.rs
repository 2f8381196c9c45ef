//! The verifier: checks that lowered loop IR is well formed before anything runs it. Every
//! variable is bound where it is used; every load and store names a buffer in scope (an
//! allocation, an input or the output) and uses its element type; operand types agree and
//! vector widths match; no multi-dimensional `Realize`/`Provide`/`Call` and no vectorized or
//! unrolled loop is left; an `if` condition is a scalar bool. That every access lies inside its
//! buffer follows from bounds inference (each realization covers every access of it; each input
//! must cover `input_regions`, which the safe call checks); the interpreter checks it again,
//! access by access, in the differential tests.

use crate::ir::{Expr, ForKind, LoweredKernel, Stmt, Type, UnOp};
use std::collections::HashMap;
use strata_dsl::Dtype;

/// The first problem found in a lowered kernel.
pub fn verify(kernel: &LoweredKernel) -> Result<(), String> {
    verify_body(kernel, &kernel.body, LoopsLeft::None)
}

/// Which loops the statement being verified may still have: the passes that make vectorized
/// and unrolled loops into code come after storage flattening, where verifying starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum LoopsLeft {
    /// Vectorized and unrolled loops (before vectorization).
    VectorizedAndUnrolled,
    /// Unrolled loops (after vectorization, before unrolling).
    Unrolled,
    /// Neither: the lowered kernel.
    None,
}

/// Verifies `body` as the body of `frame` (its sizes, parameters, inputs and output), with the
/// loops `left` still allowed: lowering checks the statement after every pass from storage
/// flattening on with it (in debug builds, or with `STRATA_VERIFY_PASSES=1`).
pub(crate) fn verify_body(
    frame: &LoweredKernel,
    body: &Stmt,
    left: LoopsLeft,
) -> Result<(), String> {
    let mut v = Verifier {
        left,
        ..Verifier::default()
    };
    for size in &frame.sizes {
        v.vars.push((size.clone(), Type::I32));
    }
    for (name, dtype) in &frame.params {
        v.params.insert(name.clone(), *dtype);
    }
    for input in &frame.inputs {
        v.buffers.push((input.name.clone(), input.dtype));
    }
    v.buffers
        .push((frame.output.name.clone(), frame.output.dtype));
    v.stmt(body)
}

struct Verifier {
    /// The loop kinds lowering has not made into code yet.
    left: LoopsLeft,
    vars: Vec<(String, Type)>,
    params: HashMap<String, Dtype>,
    /// Buffers in scope: name and element type.
    buffers: Vec<(String, Dtype)>,
}

impl Default for Verifier {
    fn default() -> Verifier {
        Verifier {
            left: LoopsLeft::None,
            vars: Vec::new(),
            params: HashMap::new(),
            buffers: Vec::new(),
        }
    }
}

impl Verifier {
    fn var_type(&self, name: &str) -> Option<Type> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| *t)
    }

    fn buffer(&self, name: &str) -> Result<Dtype, String> {
        self.buffers
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| *t)
            .ok_or_else(|| format!("`{name}` is not a buffer in scope"))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), String> {
        for e in s.exprs() {
            self.expr(e)?;
        }
        match s {
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => {
                let allowed = match kind {
                    ForKind::Vectorized => self.left == LoopsLeft::VectorizedAndUnrolled,
                    ForKind::Unrolled => self.left != LoopsLeft::None,
                    _ => true,
                };
                if !allowed {
                    return Err(format!("loop `{var}` is still {kind:?} after lowering"));
                }
                self.scalar_int(min, "a loop min")?;
                self.scalar_int(extent, "a loop extent")?;
                self.scoped(var, Type::I32, |v| v.stmt(body))
            }
            Stmt::Let { name, value, body } => self.scoped(name, value.ty(), |v| v.stmt(body)),
            Stmt::If {
                cond,
                then_case,
                else_case,
            } => {
                if cond.ty() != Type::BOOL {
                    return Err(format!(
                        "the condition `{cond}` is {}, not a scalar bool",
                        cond.ty()
                    ));
                }
                self.stmt(then_case)?;
                else_case.as_ref().map_or(Ok(()), |e| self.stmt(e))
            }
            Stmt::Allocate {
                buffer,
                dtype,
                size,
                body,
            } => {
                self.scalar_int(size, "an allocation size")?;
                self.buffers.push((buffer.clone(), *dtype));
                let result = self.stmt(body);
                self.buffers.pop();
                result
            }
            Stmt::Store {
                buffer,
                index,
                value,
            } => {
                let dtype = self.buffer(buffer)?;
                self.access(buffer, index)?;
                if value.ty().dtype != dtype || value.ty().lanes != index.ty().lanes {
                    return Err(format!(
                        "store of {} to `{buffer}` ({dtype}) at index of {} lanes",
                        value.ty(),
                        index.ty().lanes
                    ));
                }
                Ok(())
            }
            Stmt::Realize { func, .. } | Stmt::Provide { func, .. } => {
                Err(format!("`{func}` was not flattened"))
            }
            Stmt::Block(stmts) => stmts.iter().try_for_each(|s| self.stmt(s)),
            Stmt::Produce { body, .. } => self.stmt(body),
            Stmt::NoOp => Ok(()),
        }
    }

    fn scoped(
        &mut self,
        name: &str,
        ty: Type,
        f: impl FnOnce(&mut Self) -> Result<(), String>,
    ) -> Result<(), String> {
        self.vars.push((name.to_string(), ty));
        let result = f(self);
        self.vars.pop();
        result
    }

    fn scalar_int(&self, e: &Expr, what: &str) -> Result<(), String> {
        if e.ty() == Type::I32 {
            Ok(())
        } else {
            Err(format!("{what} `{e}` is {}, not i32", e.ty()))
        }
    }

    /// An index is `i32` in every lane.
    fn access(&self, buffer: &str, index: &Expr) -> Result<(), String> {
        if index.ty().dtype != Dtype::I32 {
            return Err(format!(
                "the index `{index}` of `{buffer}` is {}, not i32",
                index.ty()
            ));
        }
        Ok(())
    }

    fn expr(&mut self, e: &Expr) -> Result<(), String> {
        match e {
            Expr::Var(name, ty) => match self.var_type(name) {
                Some(t) if t == *ty => Ok(()),
                Some(t) => Err(format!("`{name}` is used as {ty} but bound as {t}")),
                None => Err(format!("`{name}` is used but not bound")),
            },
            Expr::Param(name, dtype) => match self.params.get(name) {
                Some(t) if t == dtype => Ok(()),
                _ => Err(format!("`{name}` is not a {dtype} parameter")),
            },
            Expr::Call { func, .. } => Err(format!("call of `{func}` was not flattened")),
            Expr::Load { buffer, index, ty } => {
                self.expr(index)?;
                let dtype = self.buffer(buffer)?;
                if ty.dtype != dtype || ty.lanes != index.ty().lanes {
                    return Err(format!(
                        "load of {ty} from `{buffer}` ({dtype}) at index of {} lanes",
                        index.ty().lanes
                    ));
                }
                self.access(buffer, index)
            }
            Expr::Let { name, value, body } => {
                self.expr(value)?;
                self.scoped(name, value.ty(), |v| v.expr(body))
            }
            other => {
                for c in other.children() {
                    self.expr(c)?;
                }
                operand_types(other)
            }
        }
    }
}

/// Operands of one operation share a type (and a width).
fn operand_types(e: &Expr) -> Result<(), String> {
    let same = |a: &Expr, b: &Expr| {
        if a.ty() == b.ty() {
            Ok(())
        } else {
            Err(format!("`{e}` mixes {} and {}", a.ty(), b.ty()))
        }
    };
    match e {
        Expr::Binary(_, a, b) => same(a, b),
        Expr::Select(c, t, f) => {
            same(t, f)?;
            if c.ty().dtype != Dtype::Bool || (c.ty().lanes != 1 && c.ty().lanes != t.ty().lanes) {
                return Err(format!("the condition of `{e}` is {}", c.ty()));
            }
            Ok(())
        }
        Expr::Intrinsic(_, args) => args.windows(2).try_for_each(|w| same(&w[0], &w[1])),
        Expr::Unary(UnOp::Not, a) if a.ty().dtype != Dtype::Bool => {
            Err(format!("`{e}` negates a {}", a.ty()))
        }
        Expr::Cast(t, a) if t.lanes != a.ty().lanes => Err(format!("`{e}` changes the width")),
        Expr::Ramp { base, stride, .. } => same(base, stride),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `out[i] = 1.0` in a loop of `kind` over 4 points, in the frame of a kernel with an f32
    /// output `out`.
    fn one_loop(kind: ForKind) -> (LoweredKernel, Stmt) {
        let pipeline =
            strata_dsl::parse_kernel("kernel k(a: f32[N]) -> out: f32[N] { out(i) = a(i); }", "k")
                .unwrap();
        let frame = crate::lower::lower(&pipeline, &crate::Schedule::new()).unwrap();
        let body = Stmt::For {
            var: "i".into(),
            min: Expr::int(0),
            extent: Expr::int(4),
            kind,
            body: Box::new(Stmt::Store {
                buffer: "out".into(),
                index: Expr::Var("i".into(), Type::I32),
                value: Expr::Const(strata_dsl::Value::F32(1.0)),
            }),
        };
        (frame, body)
    }

    #[test]
    fn vectorized_and_unrolled_loops_are_allowed_until_their_pass() {
        use LoopsLeft::{None as Lowered, Unrolled, VectorizedAndUnrolled};
        let (frame, vectorized) = one_loop(ForKind::Vectorized);
        assert!(verify_body(&frame, &vectorized, VectorizedAndUnrolled).is_ok());
        for left in [Unrolled, Lowered] {
            let err = verify_body(&frame, &vectorized, left).unwrap_err();
            assert!(err.contains("still Vectorized"), "{err}");
        }
        let (frame, unrolled) = one_loop(ForKind::Unrolled);
        assert!(verify_body(&frame, &unrolled, VectorizedAndUnrolled).is_ok());
        assert!(verify_body(&frame, &unrolled, Unrolled).is_ok());
        let err = verify_body(&frame, &unrolled, Lowered).unwrap_err();
        assert!(err.contains("still Unrolled"), "{err}");
        let (frame, serial) = one_loop(ForKind::Serial);
        assert!(verify_body(&frame, &serial, Lowered).is_ok());
    }
}
