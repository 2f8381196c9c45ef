//! Canonical schedules (`schedule::canonical`): the directives that change nothing are dropped,
//! the ones that change the loop nest are kept, and the canonical schedule computes what the
//! original computes (the same loop nest up to variable names, so the same answer).

use rand::rngs::StdRng;
use rand::SeedableRng;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use strata_dsl::evaluate;
use strata_dsl::random::{agree, random_args};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::canonical::canonicalize;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::{Expr, LoweredKernel, Schedule, Stmt};
use strata_testkit::example;
use strata_testkit::generate::random_schedule;

/// The canonical form of `schedule` for `kernel`, printed.
fn canonical(kernel: &str, schedule: &str) -> String {
    let schedule = parse_schedule(schedule).unwrap_or_else(|e| panic!("{e}"));
    canonicalize(&example(kernel), &schedule)
        .unwrap_or_else(|e| panic!("{schedule}: {e}"))
        .to_string()
}

#[test]
fn a_reorder_into_the_order_the_loops_have_is_dropped() {
    assert_eq!(
        canonical(
            "matmul",
            "C.update(0): split(j, jo, ji, 32).reorder(i, jo, ji).vectorize(ji, 8)"
        ),
        "C.update(0): split(j, jo, ji, 32).vectorize(ji, 8)"
    );
}

#[test]
fn placements_that_repeat_the_default_are_dropped() {
    // A function's storage defaults to its compute level.
    assert_eq!(
        canonical(
            "blur3x3",
            "out: split(y, yo, yi, 8); bx: compute_at(out, yo).store_at(out, yo)"
        ),
        "out: split(y, yo, yi, 8)\nbx: compute_at(out, yo)"
    );
    assert_eq!(
        canonical("blur3x3", "bx: compute_root().store_root()"),
        "bx: compute_root()"
    );
}

#[test]
fn directives_that_change_the_loop_nest_are_kept() {
    let schedules = [
        "C.update(0): split(j, jo, ji, 32).vectorize(ji, 8).parallel(i)",
        "C.update(0): reorder(j, i)",
        "C: parallel(i)",
    ];
    for schedule in schedules {
        assert_eq!(canonical("matmul", schedule), schedule);
    }
}

#[test]
fn a_schedule_that_does_not_lower_is_an_error() {
    let schedule = parse_schedule("C: vectorize(nope, 8)").unwrap();
    let error = canonicalize(&example("matmul"), &schedule).unwrap_err();
    assert!(error.to_string().contains("nope"), "{error}");
}

/// Over random schedules of every example: canonicalizing twice changes nothing more, the
/// canonical schedule has no more directives, and it lowers to the same loop nest as the
/// original (up to the names of bound variables), so it gives the same answer.
#[test]
fn canonical_random_schedules_lower_to_the_same_loop_nest() {
    let mut rng = StdRng::seed_from_u64(11);
    let (mut dropped, mut compared) = (0, 0);
    for name in [
        "matmul",
        "blur3x3",
        "softmax",
        "conv2d",
        "histogram",
        "gaussian5",
    ] {
        let pipeline = example(name);
        for _ in 0..8 {
            let schedule = random_schedule(&pipeline, &mut rng);
            let Ok(once) = canonicalize(&pipeline, &schedule) else {
                continue;
            };
            let twice = canonicalize(&pipeline, &once).unwrap();
            assert_eq!(once, twice, "{schedule}");
            let count = |s: &Schedule| s.lines.iter().map(|l| l.directives.len()).sum::<usize>();
            assert!(count(&once) <= count(&schedule));
            dropped += count(&schedule) - count(&once);
            let lowered = |s| {
                lower(&pipeline, s)
                    .map(|k| normalized(&k))
                    .map_err(|e| e.to_string())
            };
            let (original, canonical) = (lowered(&schedule), lowered(&once));
            assert!(original == canonical, "{schedule}\n  -> {once}");
            compared += 1;
        }
    }
    println!("{compared} schedules compared, {dropped} directives dropped");
    assert!(
        compared >= 20 && dropped > 0,
        "{compared} compared, {dropped} dropped"
    );
}

/// The same schedule gives the reference's answer before and after canonicalizing.
#[test]
fn a_canonical_schedule_gives_the_reference_answer() {
    let pipeline = example("blur3x3");
    let schedule = "out: split(y, yo, yi, 8).reorder(yo, yi, x).vectorize(x, 4); \
                    bx: compute_at(out, yo).store_at(out, yo).vectorize(x, 4)";
    let schedule = parse_schedule(schedule).unwrap();
    let once = canonicalize(&pipeline, &schedule).unwrap();
    assert!(
        once.to_string().len() < schedule.to_string().len(),
        "{once}"
    );
    let sizes = strata_dsl::sizes(&[("H", 13), ("W", 11)]);
    let args = random_args(&pipeline, &sizes, &mut StdRng::seed_from_u64(3)).unwrap();
    let got = interpret(&lower(&pipeline, &once).unwrap(), &args).unwrap();
    agree(&got, &evaluate(&pipeline, &args).unwrap(), 0.0).unwrap();
}

/// The kernel with its body's bound variables renamed `%0`, `%1`, ... in binding order: two
/// kernels are the same loop nest exactly when their normalized forms are equal.
fn normalized(kernel: &LoweredKernel) -> LoweredKernel {
    let mut out = kernel.clone();
    out.body = Renamer::default().stmt(&kernel.body);
    out
}

/// Renames bound variables in the order they are bound; free variables (sizes) keep theirs.
/// (Interior mutability: `Stmt::map` takes the expression and statement visitors at once.)
#[derive(Default)]
struct Renamer {
    scope: RefCell<HashMap<String, Vec<String>>>,
    next: Cell<usize>,
}

impl Renamer {
    fn bind(&self, name: &str) -> String {
        let fresh = format!("%{}", self.next.get());
        self.next.set(self.next.get() + 1);
        let mut scope = self.scope.borrow_mut();
        scope
            .entry(name.to_string())
            .or_default()
            .push(fresh.clone());
        fresh
    }

    fn unbind(&self, name: &str) {
        if let Some(names) = self.scope.borrow_mut().get_mut(name) {
            names.pop();
        }
    }

    fn lookup(&self, name: &str) -> String {
        let scope = self.scope.borrow();
        let bound = scope.get(name).and_then(|names| names.last());
        bound.cloned().unwrap_or_else(|| name.to_string())
    }

    fn stmt(&self, s: &Stmt) -> Stmt {
        match s {
            Stmt::For {
                var,
                min,
                extent,
                kind,
                body,
            } => {
                let (min, extent) = (self.expr(min), self.expr(extent));
                let fresh = self.bind(var);
                let body = Box::new(self.stmt(body));
                self.unbind(var);
                Stmt::For {
                    var: fresh,
                    min,
                    extent,
                    kind: *kind,
                    body,
                }
            }
            Stmt::Let { name, value, body } => {
                let value = self.expr(value);
                let fresh = self.bind(name);
                let body = Box::new(self.stmt(body));
                self.unbind(name);
                Stmt::Let {
                    name: fresh,
                    value,
                    body,
                }
            }
            other => other.map(&mut |e| self.expr(e), &mut |c| self.stmt(c)),
        }
    }

    fn expr(&self, e: &Expr) -> Expr {
        match e {
            Expr::Var(name, ty) => Expr::Var(self.lookup(name), *ty),
            Expr::Let { name, value, body } => {
                let value = Box::new(self.expr(value));
                let fresh = self.bind(name);
                let body = Box::new(self.expr(body));
                self.unbind(name);
                Expr::Let {
                    name: fresh,
                    value,
                    body,
                }
            }
            other => other.map_children(&mut |c| self.expr(c)),
        }
    }
}
