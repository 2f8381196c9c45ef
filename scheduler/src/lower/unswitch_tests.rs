//! Loop unswitching moves an `if` that does not change across a loop outside it, merging the
//! per-copy `if`s unrolling leaves, and leaves alone conditions that vary or read memory.

use crate::ir::{Expr, ForKind, Stmt, Type};
use crate::lower::unswitch::unswitch;
use strata_dsl::Value;

fn store(buffer: &str, index: Expr) -> Stmt {
    Stmt::Store {
        buffer: buffer.into(),
        index,
        value: Expr::int(1),
    }
}

fn guarded(cond: Expr, body: Stmt) -> Stmt {
    Stmt::If {
        cond,
        then_case: Box::new(body),
        else_case: None,
    }
}

fn looped(var: &str, body: Stmt) -> Stmt {
    Stmt::For {
        var: var.into(),
        min: Expr::int(0),
        extent: Expr::int(4),
        kind: ForKind::Serial,
        body: Box::new(body),
    }
}

#[test]
fn invariant_guards_of_unrolled_copies_move_out_of_the_loop() {
    let cond = Expr::le(Expr::var("xo"), Expr::int(3));
    let body = Stmt::Block(vec![
        guarded(cond.clone(), store("a", Expr::var("k"))),
        guarded(cond.clone(), store("b", Expr::var("k"))),
    ]);
    let expected = guarded(
        cond,
        looped(
            "k",
            Stmt::Block(vec![store("a", Expr::var("k")), store("b", Expr::var("k"))]),
        ),
    );
    assert_eq!(unswitch(&looped("k", body)), expected);
}

#[test]
fn a_guard_on_the_loop_variable_stays_inside() {
    let s = looped(
        "k",
        guarded(
            Expr::le(Expr::var("k"), Expr::int(2)),
            store("a", Expr::var("k")),
        ),
    );
    assert_eq!(unswitch(&s), s);
}

#[test]
fn conditions_that_read_memory_are_not_merged() {
    let load = Expr::Load {
        buffer: "flag".into(),
        index: Box::new(Expr::int(0)),
        ty: Type::scalar(strata_dsl::Dtype::Bool),
    };
    let cond = Expr::binary(strata_dsl::BinOp::Eq, load, Expr::Const(Value::Bool(true)));
    let body = Stmt::Block(vec![
        guarded(cond.clone(), store("flag", Expr::int(0))),
        guarded(cond, store("a", Expr::var("k"))),
    ]);
    let s = looped("k", body);
    assert_eq!(unswitch(&s), s);
}
