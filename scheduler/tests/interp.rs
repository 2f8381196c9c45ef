//! Tests of the loop-IR interpreter on small kernels built by hand: flat and multi-dimensional
//! forms, vectors, temporaries, guards, the integer semantics, and every kind of error.

use std::collections::HashMap;
use strata_dsl::{Args, BinOp, Buffer, CallError, Dtype, Intrinsic, Value};
use strata_scheduler::interp::{eval_expr, interpret, InterpError, VValue};
use strata_scheduler::ir::{BufferArg, Expr, ForKind, LoweredKernel, Range, Stmt, Type, UnOp};

const I32: Type = Type::I32;
const F32: Type = Type::scalar(Dtype::F32);

fn var(name: &str) -> Expr {
    Expr::var(name)
}

fn int(v: i32) -> Expr {
    Expr::int(v)
}

fn f32c(v: f32) -> Expr {
    Expr::Const(Value::F32(v))
}

fn arg(name: &str, dtype: Dtype, extents: Vec<Expr>) -> BufferArg {
    BufferArg {
        name: name.into(),
        dtype,
        extents,
    }
}

fn kernel(inputs: Vec<BufferArg>, output: BufferArg, sizes: &[&str], body: Stmt) -> LoweredKernel {
    LoweredKernel {
        name: "k".into(),
        inputs,
        params: vec![],
        output,
        sizes: sizes.iter().map(|s| s.to_string()).collect(),
        input_regions: vec![],
        output_region: vec![],
        domain_bounds: vec![],
        conditions: vec![],
        serial_vectors: vec![],
        body,
    }
}

fn serial(v: &str, min: Expr, extent: Expr, body: Stmt) -> Stmt {
    Stmt::For {
        var: v.into(),
        min,
        extent,
        kind: ForKind::Serial,
        body: Box::new(body),
    }
}

fn load(buffer: &str, index: Expr, ty: Type) -> Expr {
    Expr::Load {
        buffer: buffer.into(),
        index: Box::new(index),
        ty,
    }
}

fn store(buffer: &str, index: Expr, value: Expr) -> Stmt {
    Stmt::Store {
        buffer: buffer.into(),
        index,
        value,
    }
}

fn call(func: &str, args: Vec<Expr>, ty: Type) -> Expr {
    Expr::Call {
        func: func.into(),
        args,
        ty,
    }
}

fn provide(func: &str, args: Vec<Expr>, value: Expr) -> Stmt {
    Stmt::Provide {
        func: func.into(),
        args,
        value,
    }
}

fn ramp(base: Expr, stride: Expr, lanes: u16) -> Expr {
    Expr::Ramp {
        base: Box::new(base),
        stride: Box::new(stride),
        lanes,
    }
}

fn broadcast(value: Expr, lanes: u16) -> Expr {
    Expr::Broadcast {
        value: Box::new(value),
        lanes,
    }
}

fn i32_buf(shape: &[usize], values: Vec<i32>) -> Buffer {
    Buffer::from_vec(shape, values).unwrap()
}

fn f32_buf(shape: &[usize], values: Vec<f32>) -> Buffer {
    Buffer::from_vec(shape, values).unwrap()
}

fn i32s(b: &Buffer) -> Vec<i32> {
    b.as_slice::<i32>().unwrap().to_vec()
}

/// `out[i] = in[i]` over a 1-D `N`, i32.
fn copy_1d(body: Stmt) -> LoweredKernel {
    kernel(
        vec![arg("A", Dtype::I32, vec![var("N")])],
        arg("out", Dtype::I32, vec![var("N")]),
        &["N"],
        body,
    )
}

#[test]
fn copy_2d_loop_nest() {
    // out[y, x] = A[y, x] + 10 * y, flattened row-major.
    let flat = Expr::add(Expr::mul(var("y"), var("W")), var("x"));
    let value = Expr::add(load("A", flat.clone(), I32), Expr::mul(int(10), var("y")));
    let body = serial(
        "y",
        int(0),
        var("H"),
        serial("x", int(0), var("W"), store("out", flat, value)),
    );
    let k = kernel(
        vec![arg("A", Dtype::I32, vec![var("H"), var("W")])],
        arg("out", Dtype::I32, vec![var("H"), var("W")]),
        &["H", "W"],
        body,
    );
    let args = Args::new().buffer("A", i32_buf(&[2, 3], vec![1, 2, 3, 4, 5, 6]));
    let out = interpret(&k, &args).unwrap();
    assert_eq!(out.shape(), &[2, 3]);
    assert_eq!(i32s(&out), vec![1, 2, 3, 14, 15, 16]);
}

#[test]
fn vectorized_add_with_ramp_and_broadcast() {
    // C[ramp(4xo, 1, 4)] = A[ramp] + B[ramp] + broadcast(0.5)
    let v4 = F32.with_lanes(4);
    let idx = ramp(Expr::mul(var("xo"), int(4)), int(1), 4);
    let sum = Expr::add(load("A", idx.clone(), v4), load("B", idx.clone(), v4));
    let value = Expr::add(sum, broadcast(f32c(0.5), 4));
    let body = Stmt::For {
        var: "xo".into(),
        min: int(0),
        extent: Expr::binary(BinOp::Div, var("N"), int(4)),
        kind: ForKind::Parallel,
        body: Box::new(store("C", idx, value)),
    };
    let k = kernel(
        vec![
            arg("A", Dtype::F32, vec![var("N")]),
            arg("B", Dtype::F32, vec![var("N")]),
        ],
        arg("C", Dtype::F32, vec![var("N")]),
        &["N"],
        body,
    );
    let a: Vec<f32> = (0..8).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..8).map(|i| 100.0 * i as f32).collect();
    let args = Args::new()
        .buffer("A", f32_buf(&[8], a))
        .buffer("B", f32_buf(&[8], b));
    let out = interpret(&k, &args).unwrap();
    let expected: Vec<f32> = (0..8).map(|i| 101.0 * i as f32 + 0.5).collect();
    assert_eq!(out.as_slice::<f32>().unwrap(), expected.as_slice());
}

#[test]
fn vector_store_broadcasts_a_scalar_value() {
    let body = store("out", ramp(int(1), int(2), 2), int(7));
    let k = copy_1d(body);
    let out = interpret(&k, &Args::new().buffer("A", i32_buf(&[4], vec![0; 4]))).unwrap();
    assert_eq!(i32s(&out), vec![0, 7, 0, 7]);
}

#[test]
fn allocate_as_a_temporary() {
    // tmp[i] = A[i] + 1; out[i] = tmp[N - 1 - i] * 2
    let fill = serial(
        "i",
        int(0),
        var("N"),
        store("tmp", var("i"), Expr::add(load("A", var("i"), I32), int(1))),
    );
    let rev = Expr::sub(Expr::sub(var("N"), int(1)), var("i"));
    let use_ = serial(
        "i",
        int(0),
        var("N"),
        store("out", var("i"), Expr::mul(load("tmp", rev, I32), int(2))),
    );
    let body = Stmt::Allocate {
        buffer: "tmp".into(),
        dtype: Dtype::I32,
        size: var("N"),
        body: Box::new(Stmt::Block(vec![fill, use_])),
    };
    let out = interpret(
        &copy_1d(body),
        &Args::new().buffer("A", i32_buf(&[3], vec![1, 2, 3])),
    )
    .unwrap();
    assert_eq!(i32s(&out), vec![8, 6, 4]);
}

#[test]
fn allocate_shadows_and_is_scoped() {
    // Outer t[0] = 1; inner t (fresh, zero) gets t[0] = 5 and out[1] = t[0];
    // after the inner block out[0] = t[0] (the outer one again) and out[2] = inner's initial 0.
    let inner = Stmt::Allocate {
        buffer: "t".into(),
        dtype: Dtype::I32,
        size: int(1),
        body: Box::new(Stmt::Block(vec![
            store("out", int(2), load("t", int(0), I32)),
            store("t", int(0), int(5)),
            store("out", int(1), load("t", int(0), I32)),
        ])),
    };
    let body = Stmt::Allocate {
        buffer: "t".into(),
        dtype: Dtype::I32,
        size: int(1),
        body: Box::new(Stmt::Block(vec![
            store("t", int(0), int(1)),
            inner,
            store("out", int(0), load("t", int(0), I32)),
        ])),
    };
    let out = interpret(
        &copy_1d(body),
        &Args::new().buffer("A", i32_buf(&[3], vec![9; 3])),
    )
    .unwrap();
    assert_eq!(i32s(&out), vec![1, 5, 0]);

    // Outside its body the allocation is gone.
    let after = Stmt::Block(vec![
        Stmt::Allocate {
            buffer: "t".into(),
            dtype: Dtype::I32,
            size: int(1),
            body: Box::new(Stmt::NoOp),
        },
        store("t", int(0), int(1)),
    ]);
    let err = interpret(
        &copy_1d(after),
        &Args::new().buffer("A", i32_buf(&[3], vec![9; 3])),
    )
    .unwrap_err();
    assert_eq!(err, InterpError::UnknownBuffer("t".into()));
}

/// `out(y, x) = f(y, x) + f(y, x + 1)` with `f(y, x) = 2 * A(y, x)`, in the multi-dimensional form.
fn realize_kernel(f_min_x: i32) -> LoweredKernel {
    let produce = serial(
        "y",
        int(0),
        var("H"),
        serial(
            "x",
            int(f_min_x),
            var("W"),
            provide(
                "f",
                vec![var("y"), var("x")],
                Expr::mul(
                    int(2),
                    call("A", vec![var("y"), Expr::sub(var("x"), int(f_min_x))], I32),
                ),
            ),
        ),
    );
    let f_at = |dx: i32| {
        call(
            "f",
            vec![var("y"), Expr::add(var("x"), int(f_min_x + dx))],
            I32,
        )
    };
    let consume = serial(
        "y",
        int(0),
        var("H"),
        serial(
            "x",
            int(0),
            Expr::sub(var("W"), int(1)),
            provide("out", vec![var("y"), var("x")], Expr::add(f_at(0), f_at(1))),
        ),
    );
    let body = Stmt::Realize {
        func: "f".into(),
        dtype: Dtype::I32,
        region: vec![
            Range {
                min: int(0),
                extent: var("H"),
            },
            Range {
                min: int(f_min_x),
                extent: var("W"),
            },
        ],
        body: Box::new(Stmt::Block(vec![
            Stmt::Produce {
                func: "f".into(),
                body: Box::new(produce),
            },
            consume,
        ])),
    };
    kernel(
        vec![arg("A", Dtype::I32, vec![var("H"), var("W")])],
        arg(
            "out",
            Dtype::I32,
            vec![var("H"), Expr::sub(var("W"), int(1))],
        ),
        &["H", "W"],
        body,
    )
}

#[test]
fn realize_provide_call_matches_the_flat_form() {
    let a = i32_buf(&[2, 3], vec![1, 2, 3, 4, 5, 6]);
    let expected = vec![6, 10, 18, 22];
    for min in [0, 5, -3] {
        let out = interpret(&realize_kernel(min), &Args::new().buffer("A", a.clone())).unwrap();
        assert_eq!(out.shape(), &[2, 2]);
        assert_eq!(i32s(&out), expected, "region min {min}");
    }

    // The same computation flattened: f as an Allocate of H * W, loads and stores by hand.
    let fidx = |dx: i32| Expr::add(Expr::mul(var("y"), var("W")), Expr::add(var("x"), int(dx)));
    let produce = serial(
        "y",
        int(0),
        var("H"),
        serial(
            "x",
            int(0),
            var("W"),
            store("f", fidx(0), Expr::mul(int(2), load("A", fidx(0), I32))),
        ),
    );
    let oidx = Expr::add(Expr::mul(var("y"), Expr::sub(var("W"), int(1))), var("x"));
    let consume = serial(
        "y",
        int(0),
        var("H"),
        serial(
            "x",
            int(0),
            Expr::sub(var("W"), int(1)),
            store(
                "out",
                oidx,
                Expr::add(load("f", fidx(0), I32), load("f", fidx(1), I32)),
            ),
        ),
    );
    let mut flat = realize_kernel(0);
    flat.body = Stmt::Allocate {
        buffer: "f".into(),
        dtype: Dtype::I32,
        size: Expr::mul(var("H"), var("W")),
        body: Box::new(Stmt::Block(vec![produce, consume])),
    };
    let out = interpret(&flat, &Args::new().buffer("A", a)).unwrap();
    assert_eq!(i32s(&out), expected);
}

#[test]
fn call_outside_the_realized_region_is_an_error() {
    // f realized over x in [5, 8); reading f(4) fails and names f, the index and the box.
    let body = Stmt::Realize {
        func: "f".into(),
        dtype: Dtype::I32,
        region: vec![Range {
            min: int(5),
            extent: int(3),
        }],
        body: Box::new(provide("out", vec![int(0)], call("f", vec![int(4)], I32))),
    };
    let err = interpret(
        &copy_1d(body),
        &Args::new().buffer("A", i32_buf(&[2], vec![0, 0])),
    )
    .unwrap_err();
    assert_eq!(
        err,
        InterpError::OutOfBounds {
            buffer: "f".into(),
            index: vec![4],
            mins: vec![5],
            extents: vec![3],
        }
    );
    let text = err.to_string();
    assert!(
        text.contains("`f`") && text.contains("[4]") && text.contains("[3]"),
        "{text}"
    );
}

#[test]
fn call_with_the_wrong_rank_is_an_error() {
    let body = provide("out", vec![int(0)], call("A", vec![int(0), int(0)], I32));
    let err = interpret(
        &copy_1d(body),
        &Args::new().buffer("A", i32_buf(&[2], vec![0, 0])),
    )
    .unwrap_err();
    assert_eq!(
        err,
        InterpError::WrongRank {
            buffer: "A".into(),
            found: 2,
            rank: 1
        }
    );
}

#[test]
fn if_guards_a_partial_tile() {
    // for xo in 0..ceil(N/4), xi in 0..4: x = 4xo + xi; if x < N: out[x] = A[x] * 3
    let x = Expr::add(Expr::mul(var("xo"), int(4)), var("xi"));
    let guarded = Stmt::Let {
        name: "x".into(),
        value: x,
        body: Box::new(Stmt::If {
            cond: Expr::lt(var("x"), var("N")),
            then_case: Box::new(store(
                "out",
                var("x"),
                Expr::mul(load("A", var("x"), I32), int(3)),
            )),
            else_case: None,
        }),
    };
    let tiles = Expr::binary(BinOp::Div, Expr::add(var("N"), int(3)), int(4));
    let body = serial(
        "xo",
        int(0),
        tiles,
        Stmt::For {
            var: "xi".into(),
            min: int(0),
            extent: int(4),
            kind: ForKind::Unrolled,
            body: Box::new(guarded),
        },
    );
    let a: Vec<i32> = (1..=10).collect();
    let out = interpret(&copy_1d(body), &Args::new().buffer("A", i32_buf(&[10], a))).unwrap();
    assert_eq!(i32s(&out), (1..=10).map(|v| v * 3).collect::<Vec<_>>());
}

#[test]
fn if_else_takes_the_else_branch() {
    let body = serial(
        "i",
        int(0),
        var("N"),
        Stmt::If {
            cond: Expr::lt(var("i"), int(2)),
            then_case: Box::new(store("out", var("i"), int(1))),
            else_case: Some(Box::new(store("out", var("i"), int(-1)))),
        },
    );
    let out = interpret(
        &copy_1d(body),
        &Args::new().buffer("A", i32_buf(&[4], vec![0; 4])),
    )
    .unwrap();
    assert_eq!(i32s(&out), vec![1, 1, -1, -1]);
}

#[test]
fn integer_division_is_euclidean_and_by_zero_gives_zero() {
    // out[i] = A[i] / B[i], out2 via a second loop writing A[i] % B[i] into out[N + i].
    let div = store(
        "out",
        var("i"),
        Expr::binary(
            BinOp::Div,
            load("A", var("i"), I32),
            load("B", var("i"), I32),
        ),
    );
    let rem = store(
        "out",
        Expr::add(var("N"), var("i")),
        Expr::binary(
            BinOp::Mod,
            load("A", var("i"), I32),
            load("B", var("i"), I32),
        ),
    );
    let k = kernel(
        vec![
            arg("A", Dtype::I32, vec![var("N")]),
            arg("B", Dtype::I32, vec![var("N")]),
        ],
        arg("out", Dtype::I32, vec![Expr::mul(int(2), var("N"))]),
        &["N"],
        serial("i", int(0), var("N"), Stmt::Block(vec![div, rem])),
    );
    let args = Args::new()
        .buffer("A", i32_buf(&[5], vec![-7, 7, 7, 5, i32::MIN]))
        .buffer("B", i32_buf(&[5], vec![2, -2, 0, 3, -1]));
    let out = interpret(&k, &args).unwrap();
    // -7 = 2 * -4 + 1; 7 = -2 * -3 + 1; by zero: 0; MIN / -1 wraps to MIN.
    assert_eq!(i32s(&out), vec![-4, -3, 0, 1, i32::MIN, 1, 1, 0, 2, 0]);
}

#[test]
fn out_of_bounds_store_is_an_error() {
    let body = serial(
        "i",
        int(0),
        Expr::add(var("N"), int(1)),
        store("out", var("i"), int(1)),
    );
    let err = interpret(
        &copy_1d(body),
        &Args::new().buffer("A", i32_buf(&[3], vec![0; 3])),
    )
    .unwrap_err();
    assert_eq!(
        err,
        InterpError::OutOfBounds {
            buffer: "out".into(),
            index: vec![3],
            mins: vec![0],
            extents: vec![3],
        }
    );
    let text = err.to_string();
    assert!(text.contains("`out`") && text.contains("[3]"), "{text}");
}

#[test]
fn out_of_bounds_vector_load_and_negative_index_are_errors() {
    let v4 = I32.with_lanes(4);
    let body = store(
        "out",
        ramp(int(0), int(1), 4),
        load("A", ramp(int(1), int(1), 4), v4),
    );
    let err = interpret(
        &copy_1d(body),
        &Args::new().buffer("A", i32_buf(&[4], vec![0; 4])),
    )
    .unwrap_err();
    assert!(
        matches!(&err, InterpError::OutOfBounds { buffer, index, .. } if buffer == "A" && index == &vec![4]),
        "{err}"
    );

    let body = store("out", int(0), load("A", int(-1), I32));
    let err = interpret(
        &copy_1d(body),
        &Args::new().buffer("A", i32_buf(&[4], vec![0; 4])),
    )
    .unwrap_err();
    assert!(
        matches!(&err, InterpError::OutOfBounds { index, .. } if index == &vec![-1]),
        "{err}"
    );
}

#[test]
fn wrong_input_shape_names_the_input() {
    let k = kernel(
        vec![
            arg("A", Dtype::F32, vec![var("N"), int(3)]),
            arg("B", Dtype::F32, vec![var("N")]),
        ],
        arg("out", Dtype::F32, vec![var("N")]),
        &["N"],
        Stmt::NoOp,
    );
    let good = || {
        Args::new()
            .buffer("A", f32_buf(&[4, 3], vec![0.0; 12]))
            .buffer("B", f32_buf(&[4], vec![0.0; 4]))
    };
    assert!(interpret(&k, &good()).is_ok());

    let args = good().buffer("A", f32_buf(&[4, 5], vec![0.0; 20]));
    let err = interpret(&k, &args).unwrap_err();
    assert_eq!(
        err,
        InterpError::Call(CallError::WrongShape {
            name: "A".into(),
            expected: "[N=4, 3]".into(),
            actual: vec![4, 5]
        })
    );
    assert_eq!(
        err.to_string(),
        "input `A` should have shape [N=4, 3], found [4, 5]"
    );

    // B disagrees with the N that A bound.
    let args = good().buffer("B", f32_buf(&[5], vec![0.0; 5]));
    let err = interpret(&k, &args).unwrap_err();
    assert_eq!(
        err,
        InterpError::Call(CallError::WrongShape {
            name: "B".into(),
            expected: "[N=4]".into(),
            actual: vec![5]
        })
    );

    // Wrong rank, wrong element type, missing and unknown inputs.
    let args = good().buffer("A", f32_buf(&[12], vec![0.0; 12]));
    assert!(
        matches!(interpret(&k, &args), Err(InterpError::Call(CallError::WrongShape { name, .. })) if name == "A")
    );
    let args = good().buffer("B", i32_buf(&[4], vec![0; 4]));
    assert_eq!(
        interpret(&k, &args).unwrap_err(),
        InterpError::Call(CallError::WrongType {
            name: "B".into(),
            expected: Dtype::F32,
            actual: Dtype::I32
        })
    );
    let args = Args::new().buffer("A", f32_buf(&[4, 3], vec![0.0; 12]));
    assert_eq!(
        interpret(&k, &args).unwrap_err(),
        InterpError::Call(CallError::MissingInput("B".into()))
    );
    let args = good().buffer("C", f32_buf(&[1], vec![0.0]));
    assert_eq!(
        interpret(&k, &args).unwrap_err(),
        InterpError::Call(CallError::UnknownArgument("C".into()))
    );
}

#[test]
fn scalar_param() {
    let mut k = kernel(
        vec![arg("A", Dtype::F32, vec![var("N")])],
        arg("out", Dtype::F32, vec![var("N")]),
        &["N"],
        serial(
            "i",
            int(0),
            var("N"),
            store(
                "out",
                var("i"),
                Expr::mul(
                    load("A", var("i"), F32),
                    Expr::Param("alpha".into(), Dtype::F32),
                ),
            ),
        ),
    );
    k.params = vec![("alpha".into(), Dtype::F32)];
    let a = f32_buf(&[3], vec![1.0, -2.0, 0.5]);
    let args = Args::new()
        .buffer("A", a.clone())
        .scalar("alpha", Value::F32(3.0));
    let out = interpret(&k, &args).unwrap();
    assert_eq!(out.as_slice::<f32>().unwrap(), &[3.0, -6.0, 1.5]);

    let missing = Args::new().buffer("A", a.clone());
    assert_eq!(
        interpret(&k, &missing).unwrap_err(),
        InterpError::Call(CallError::MissingInput("alpha".into()))
    );
    let wrong = Args::new().buffer("A", a).scalar("alpha", Value::F64(3.0));
    assert!(
        matches!(interpret(&k, &wrong), Err(InterpError::Call(CallError::WrongType { name, .. })) if name == "alpha")
    );
}

#[test]
fn loop_bounds_are_evaluated_once_and_empty_loops_run_nothing() {
    // n[0] = 3; for i in 0..n[0] { n[0] = n[0] + 1; out[i] = i + 1 } runs three times.
    let n0 = || load("n", int(0), I32);
    let body = Stmt::Allocate {
        buffer: "n".into(),
        dtype: Dtype::I32,
        size: int(1),
        body: Box::new(Stmt::Block(vec![
            store("n", int(0), int(3)),
            serial(
                "i",
                int(0),
                n0(),
                Stmt::Block(vec![
                    store("n", int(0), Expr::add(n0(), int(1))),
                    store("out", var("i"), Expr::add(var("i"), int(1))),
                ]),
            ),
            serial("j", int(0), int(0), store("out", int(99), int(1))),
            serial("j", int(5), int(-2), store("out", int(99), int(1))),
        ])),
    };
    let out = interpret(
        &copy_1d(body),
        &Args::new().buffer("A", i32_buf(&[5], vec![0; 5])),
    )
    .unwrap();
    assert_eq!(i32s(&out), vec![1, 2, 3, 0, 0]);
}

#[test]
fn type_confusion_and_read_only_inputs_are_errors() {
    let a = || Args::new().buffer("A", i32_buf(&[2], vec![0; 2]));
    // A scalar meeting a vector.
    let body = store(
        "out",
        ramp(int(0), int(1), 2),
        Expr::add(ramp(int(0), int(1), 2), int(1)),
    );
    assert!(matches!(
        interpret(&copy_1d(body), &a()),
        Err(InterpError::LaneMismatch { .. })
    ));
    // Storing a float to an i32 buffer.
    let body = store("out", int(0), f32c(1.0));
    assert!(matches!(
        interpret(&copy_1d(body), &a()),
        Err(InterpError::Type(_))
    ));
    // A float index.
    let body = store("out", f32c(0.0), int(1));
    assert!(matches!(
        interpret(&copy_1d(body), &a()),
        Err(InterpError::NotInteger { .. })
    ));
    // Loading an i32 buffer as f32.
    let body = store(
        "out",
        int(0),
        Expr::Cast(I32, Box::new(load("A", int(0), F32))),
    );
    assert!(matches!(
        interpret(&copy_1d(body), &a()),
        Err(InterpError::Type(_))
    ));
    // Writing an input.
    let body = store("A", int(0), int(1));
    assert_eq!(
        interpret(&copy_1d(body), &a()).unwrap_err(),
        InterpError::ReadOnly("A".into())
    );
    // Unknown names.
    let body = store("out", int(0), load("nope", int(0), I32));
    assert_eq!(
        interpret(&copy_1d(body), &a()).unwrap_err(),
        InterpError::UnknownBuffer("nope".into())
    );
    let body = store("out", int(0), var("zz"));
    assert_eq!(
        interpret(&copy_1d(body), &a()).unwrap_err(),
        InterpError::UnboundVar("zz".into())
    );
    // A non-bool condition.
    let body = Stmt::If {
        cond: int(1),
        then_case: Box::new(Stmt::NoOp),
        else_case: None,
    };
    assert!(matches!(
        interpret(&copy_1d(body), &a()),
        Err(InterpError::Type(_))
    ));
    // A negative allocation.
    let body = Stmt::Allocate {
        buffer: "t".into(),
        dtype: Dtype::I32,
        size: int(-1),
        body: Box::new(Stmt::NoOp),
    };
    assert!(matches!(
        interpret(&copy_1d(body), &a()),
        Err(InterpError::BadSize { .. })
    ));
}

fn vars(pairs: &[(&str, VValue)]) -> HashMap<String, VValue> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.clone()))
        .collect()
}

fn ivec(v: &[i32]) -> VValue {
    VValue::vector(v.iter().map(|&x| Value::I32(x)).collect())
}

#[test]
fn eval_expr_scalars_vectors_and_lets() {
    let env = vars(&[("x", VValue::scalar(Value::I32(7)))]);
    let e = Expr::Let {
        name: "y".into(),
        value: Box::new(Expr::mul(var("x"), int(2))),
        body: Box::new(Expr::binary(BinOp::Mod, var("y"), int(-5))),
    };
    assert_eq!(eval_expr(&e, &env).unwrap(), VValue::scalar(Value::I32(4)));

    let e = Expr::add(ramp(var("x"), int(-1), 3), broadcast(int(10), 3));
    let v = eval_expr(&e, &env).unwrap();
    assert_eq!(v, ivec(&[17, 16, 15]));
    assert_eq!(v.lanes(), &[Value::I32(17), Value::I32(16), Value::I32(15)]);

    // Vector variables, lane-wise compare and select, casts and intrinsics.
    let v3 = I32.with_lanes(3);
    let env = vars(&[("v", ivec(&[-2, 0, 5]))]);
    let vv = Expr::Var("v".into(), v3);
    let sel = Expr::Select(
        Box::new(Expr::lt(vv.clone(), broadcast(int(0), 3))),
        Box::new(Expr::Unary(UnOp::Neg, Box::new(vv.clone()))),
        Box::new(Expr::mul(vv.clone(), broadcast(int(10), 3))),
    );
    assert_eq!(eval_expr(&sel, &env).unwrap(), ivec(&[2, 0, 50]));
    let clamp = Expr::Intrinsic(
        Intrinsic::Clamp,
        vec![vv.clone(), broadcast(int(-1), 3), broadcast(int(3), 3)],
    );
    assert_eq!(eval_expr(&clamp, &env).unwrap(), ivec(&[-1, 0, 3]));
    let cast = Expr::Cast(Type::scalar(Dtype::U8).with_lanes(3), Box::new(vv.clone()));
    assert_eq!(
        eval_expr(&cast, &env).unwrap().lanes(),
        &[Value::U8(254), Value::U8(0), Value::U8(5)]
    );

    // round is ties-to-even, log is ln.
    let round = Expr::Intrinsic(Intrinsic::Round, vec![f32c(2.5)]);
    assert_eq!(
        eval_expr(&round, &env).unwrap(),
        VValue::scalar(Value::F32(2.0))
    );
    let log = Expr::Intrinsic(
        Intrinsic::Log,
        vec![Expr::Const(Value::F64(std::f64::consts::E))],
    );
    assert_eq!(
        eval_expr(&log, &env).unwrap(),
        VValue::scalar(Value::F64(1.0))
    );

    // fast_exp and fast_pow are strata_dsl::fast_math's functions, lane by lane.
    use strata_dsl::fast_math::{fast_exp_f32, fast_pow_f32};
    let xs = ramp(f32c(-90.0), f32c(45.5), 4);
    let fast_exp = Expr::Intrinsic(Intrinsic::FastExp, vec![xs]);
    let want: Vec<Value> = [-90.0f32, -44.5, 1.0, 46.5]
        .map(|x| Value::F32(fast_exp_f32(x)))
        .to_vec();
    assert_eq!(eval_expr(&fast_exp, &env).unwrap(), VValue::vector(want));
    let fast_pow = Expr::Intrinsic(Intrinsic::FastPow, vec![f32c(2.0), f32c(0.5)]);
    assert_eq!(
        eval_expr(&fast_pow, &env).unwrap(),
        VValue::scalar(Value::F32(fast_pow_f32(2.0, 0.5)))
    );
    // f32 only: an f64 operand is an error, not a silently different function.
    let f64_exp = Expr::Intrinsic(Intrinsic::FastExp, vec![Expr::Const(Value::F64(1.0))]);
    assert!(eval_expr(&f64_exp, &env).is_err());

    // Wrapping arithmetic.
    let wrap = Expr::add(int(i32::MAX), int(1));
    assert_eq!(
        eval_expr(&wrap, &env).unwrap(),
        VValue::scalar(Value::I32(i32::MIN))
    );

    // Scalar params are looked up among the variables.
    let env = vars(&[("alpha", VValue::scalar(Value::F32(1.5)))]);
    let p = Expr::Param("alpha".into(), Dtype::F32);
    assert_eq!(
        eval_expr(&p, &env).unwrap(),
        VValue::scalar(Value::F32(1.5))
    );
}

#[test]
fn eval_expr_scalar_select_evaluates_only_the_chosen_branch() {
    let env = HashMap::new();
    let bad = load("nowhere", int(0), I32);
    let e = Expr::Select(
        Box::new(Expr::lt(int(0), int(1))),
        Box::new(int(1)),
        Box::new(bad.clone()),
    );
    assert_eq!(eval_expr(&e, &env).unwrap(), VValue::scalar(Value::I32(1)));
    let e = Expr::Select(
        Box::new(Expr::lt(int(1), int(0))),
        Box::new(int(1)),
        Box::new(bad),
    );
    assert_eq!(
        eval_expr(&e, &env).unwrap_err(),
        InterpError::UnknownBuffer("nowhere".into())
    );
}

#[test]
fn eval_expr_errors() {
    let env = vars(&[("x", VValue::scalar(Value::I32(1)))]);
    // A scalar meeting a vector.
    let e = Expr::add(ramp(int(0), int(1), 4), int(1));
    assert!(matches!(
        eval_expr(&e, &env),
        Err(InterpError::LaneMismatch { .. })
    ));
    // Vectors of different widths.
    let e = Expr::add(ramp(int(0), int(1), 4), broadcast(int(1), 2));
    assert!(matches!(
        eval_expr(&e, &env),
        Err(InterpError::LaneMismatch { .. })
    ));
    // Mixed element types.
    let e = Expr::add(int(1), f32c(1.0));
    assert!(matches!(eval_expr(&e, &env), Err(InterpError::Op(_))));
    // A variable used at the wrong type.
    let e = Expr::Var("x".into(), F32);
    assert!(matches!(eval_expr(&e, &env), Err(InterpError::Type(_))));
    // Unbound.
    assert_eq!(
        eval_expr(&var("q"), &env).unwrap_err(),
        InterpError::UnboundVar("q".into())
    );
    // Broadcast of a vector.
    let e = broadcast(ramp(int(0), int(1), 2), 2);
    assert!(matches!(
        eval_expr(&e, &env),
        Err(InterpError::LaneMismatch { .. })
    ));
}
