//! The language's semantics, pinned down by the reference evaluator: wrapping integers,
//! Euclidean division, division by zero, casts, boundary conditions, updates (histogram, scan,
//! update over pure variables), gathers, and the errors a wrong call gets.

use strata_dsl::{
    evaluate, parse_kernel, Args, Buffer, CallError, Dtype, EvalError, Pipeline, Value,
};

fn kernel(source: &str) -> Pipeline {
    parse_kernel(source, "test").unwrap_or_else(|e| panic!("{e}"))
}

fn run_i32(source: &str, inputs: &[(&str, Vec<i32>)]) -> Vec<i32> {
    let mut args = Args::new();
    for (name, values) in inputs {
        args = args.buffer(
            name,
            Buffer::from_vec(&[values.len()], values.clone()).unwrap(),
        );
    }
    let out = evaluate(&kernel(source), &args).unwrap_or_else(|e| panic!("{e}"));
    out.as_slice::<i32>().unwrap().to_vec()
}

#[test]
fn integer_division_and_modulo_are_euclidean() {
    let values = vec![-7, -6, -1, 0, 1, 6, 7];
    let div = run_i32(
        "kernel k(A: i32[N]) -> O: i32[N] { O(i) = A(i) / 3; }",
        &[("A", values.clone())],
    );
    let rem = run_i32(
        "kernel k(A: i32[N]) -> O: i32[N] { O(i) = A(i) % 3; }",
        &[("A", values.clone())],
    );
    let neg = run_i32(
        "kernel k(A: i32[N]) -> O: i32[N] { O(i) = A(i) / -3; }",
        &[("A", values.clone())],
    );
    assert_eq!(div, vec![-3, -2, -1, 0, 0, 2, 2]);
    assert_eq!(rem, vec![2, 0, 2, 0, 1, 0, 1]);
    assert_eq!(
        neg,
        values.iter().map(|v| v.div_euclid(-3)).collect::<Vec<_>>()
    );
}

#[test]
fn division_and_modulo_by_zero_give_zero() {
    let a = vec![5, -5, i32::MIN, 0];
    let b = vec![0, 0, 0, 0];
    let src_div = "kernel k(A: i32[N], B: i32[N]) -> O: i32[N] { O(i) = A(i) / B(i); }";
    let src_mod = "kernel k(A: i32[N], B: i32[N]) -> O: i32[N] { O(i) = A(i) % B(i); }";
    assert_eq!(
        run_i32(src_div, &[("A", a.clone()), ("B", b.clone())]),
        vec![0; 4]
    );
    assert_eq!(run_i32(src_mod, &[("A", a), ("B", b)]), vec![0; 4]);
    let overflow = run_i32(src_div, &[("A", vec![i32::MIN]), ("B", vec![-1])]);
    assert_eq!(overflow, vec![i32::MIN], "MIN / -1 wraps");
}

#[test]
fn integer_arithmetic_wraps() {
    let k = kernel("kernel k(A: u8[N]) -> O: u8[N] { O(i) = A(i) + 100; }");
    let a = Buffer::from_vec(&[3], vec![100u8, 200, 255]).unwrap();
    let out = evaluate(&k, &Args::new().buffer("A", a)).unwrap();
    assert_eq!(out.as_slice::<u8>().unwrap(), &[200, 44, 99]);
    let wrapped = run_i32(
        "kernel k(A: i32[N]) -> O: i32[N] { O(i) = A(i) * 2 + 1; }",
        &[("A", vec![i32::MAX])],
    );
    assert_eq!(wrapped, vec![i32::MAX.wrapping_mul(2).wrapping_add(1)]);
}

#[test]
fn float_to_integer_casts_truncate_and_saturate() {
    let k = kernel("kernel k(A: f32[N]) -> O: u8[N] { O(i) = u8(A(i)); }");
    let a = Buffer::from_vec(&[5], vec![-3.5f32, 1.9, 254.99, 300.0, f32::NAN]).unwrap();
    let out = evaluate(&k, &Args::new().buffer("A", a)).unwrap();
    assert_eq!(out.as_slice::<u8>().unwrap(), &[0, 1, 254, 255, 0]);
    let k = kernel("kernel k(A: f32[N]) -> O: i16[N] { O(i) = i16(A(i)); }");
    let a = Buffer::from_vec(&[3], vec![-1.7f32, 1e9, -1e9]).unwrap();
    let out = evaluate(&k, &Args::new().buffer("A", a)).unwrap();
    assert_eq!(out.as_slice::<i16>().unwrap(), &[-1, i16::MAX, i16::MIN]);
}

#[test]
fn every_cast_keeps_zero_and_one_and_wraps_or_saturates() {
    // Independent expectations: 0 and 1 survive every cast (1 becomes `true`), and 300
    // (where the source can hold it) wraps to 44 in u8 from an integer, saturates from a float.
    for from in Dtype::ALL {
        for to in Dtype::ALL {
            let src = format!("kernel k(A: {from}[N]) -> O: {to}[N] {{ O(i) = {to}(A(i)); }}");
            let mut buffer = Buffer::zeros(from, &[3]).unwrap();
            buffer.set_flat(1, Value::I64(1).cast(from));
            buffer.set_flat(2, Value::I64(300).cast(from));
            let out = evaluate(&kernel(&src), &Args::new().buffer("A", buffer)).unwrap();
            let as_f64 = |i: usize| out.get_flat(i).map(|v| v.as_f64());
            assert_eq!(as_f64(0), Some(0.0), "{from} -> {to} of 0");
            assert_eq!(as_f64(1), Some(1.0), "{from} -> {to} of 1");
            let source_holds_300 =
                from.is_float() || from.int_range().is_some_and(|(_, hi)| hi >= 300);
            if to == Dtype::U8 && source_holds_300 {
                let expected = if from.is_float() { 255.0 } else { 44.0 };
                assert_eq!(as_f64(2), Some(expected), "{from} -> u8 of 300");
            }
        }
    }
}

#[test]
fn round_is_half_to_even_and_min_max_clamp_work() {
    let k = kernel(
        "kernel k(A: f32[N]) -> O: f32[N] { O(i) = round(A(i)) + clamp(A(i), -1.0, 1.0) * 100.0; }",
    );
    let a = Buffer::from_vec(&[4], vec![0.5f32, 1.5, 2.5, -0.5]).unwrap();
    let out = evaluate(&k, &Args::new().buffer("A", a)).unwrap();
    assert_eq!(out.as_slice::<f32>().unwrap(), &[50.0, 102.0, 102.0, -50.0]);
}

fn boundary_read(boundary: &str, n: usize) -> Vec<i32> {
    let src =
        format!("kernel k(A: i32[N] with {boundary}) -> O: i32[N + 6] {{ O(i) = A(i - 3); }}");
    run_i32(&src, &[("A", (10..10 + n as i32).collect())])
}

#[test]
fn boundary_conditions_extend_inputs() {
    assert_eq!(
        boundary_read("clamp_edge", 3),
        vec![10, 10, 10, 10, 11, 12, 12, 12, 12]
    );
    assert_eq!(
        boundary_read("constant(-1)", 3),
        vec![-1, -1, -1, 10, 11, 12, -1, -1, -1]
    );
    assert_eq!(
        boundary_read("mirror", 3),
        vec![12, 11, 10, 10, 11, 12, 12, 11, 10]
    );
    assert_eq!(
        boundary_read("mirror_interior", 3),
        vec![11, 12, 11, 10, 11, 12, 11, 10, 11]
    );
    assert_eq!(boundary_read("mirror_interior", 1), vec![10; 7]);
    assert_eq!(boundary_read("mirror", 1), vec![10; 7]);
}

#[test]
fn reading_outside_an_input_without_boundary_is_an_error() {
    let k = kernel("kernel k(A: i32[N]) -> O: i32[N] { O(i) = A(i + 1); }");
    let a = Buffer::from_vec(&[2], vec![1, 2]).unwrap();
    let err = evaluate(&k, &Args::new().buffer("A", a)).unwrap_err();
    assert_eq!(
        err,
        EvalError::OutOfBounds {
            input: "A".into(),
            index: vec![2],
            shape: vec![2]
        }
    );
}

/// An empty input has no edge for `clamp_edge` or the mirrors to repeat: the error names the
/// input and its empty dimension (it said the input "has no boundary condition"). A constant
/// exterior answers every read.
#[test]
fn an_empty_input_has_no_edge_to_repeat() {
    for boundary in ["clamp_edge", "mirror", "mirror_interior"] {
        let k = kernel(&format!(
            "kernel k(A: i32[N, M] with {boundary}, B: i32[L]) -> O: i32[L] {{ O(i) = A(i - 1, 0) + B(i); }}"
        ));
        let args = Args::new()
            .buffer("A", Buffer::from_vec(&[3, 0], Vec::<i32>::new()).unwrap())
            .buffer("B", Buffer::from_vec(&[2], vec![1, 2]).unwrap());
        let err = evaluate(&k, &args).unwrap_err();
        assert_eq!(
            err.to_string(),
            "input `A` is read at 0..=0 in dimension 1, but that dimension is empty (extent 0): an empty input has no element to read and no edge for `clamp_edge` or `mirror` to repeat (only a `constant(v)` boundary gives such reads a value)",
            "{boundary}"
        );
    }
    let k = kernel(
        "kernel k(A: i32[N, M] with constant(9), B: i32[L]) -> O: i32[L] { O(i) = A(i - 1, 0) + B(i); }",
    );
    let args = Args::new()
        .buffer("A", Buffer::from_vec(&[3, 0], Vec::<i32>::new()).unwrap())
        .buffer("B", Buffer::from_vec(&[2], vec![1, 2]).unwrap());
    let out = evaluate(&k, &args).unwrap();
    assert_eq!(out.as_slice::<i32>().unwrap(), &[10, 11]);
}

#[test]
fn select_evaluates_only_the_branch_it_picks() {
    let src = "kernel k(A: i32[N]) -> O: i32[N] { O(i) = select(i > 0, A(i - 1), 0); }";
    assert_eq!(run_i32(src, &[("A", vec![4, 5, 6])]), vec![0, 4, 5]);
}

#[test]
fn scan_update_reads_earlier_results() {
    let src = "kernel prefix(A: i32[N]) -> S: i32[N] {\n    S(i) = A(i);\n    for (r in 1..N) S(r) = S(r - 1) + S(r);\n}";
    assert_eq!(
        run_i32(src, &[("A", vec![1, 2, 3, 4, 5])]),
        vec![1, 3, 6, 10, 15]
    );
}

#[test]
fn update_over_pure_variables_and_reduction_domain() {
    let src = "kernel box(A: i32[N]) -> O: i32[N - 2] {\n    O(x) = 0;\n    for (r in 0..3) O(x) += A(x + r);\n    O(x) *= 2;\n}";
    assert_eq!(
        run_i32(src, &[("A", vec![1, 2, 3, 4, 5])]),
        vec![12, 18, 24]
    );
}

#[test]
fn intermediate_function_with_a_data_dependent_update() {
    let src = "kernel k(A: u8[N]) -> O: i32[4] {\n    h(b) = 0;\n    for (r in 0..N) h(A(r) % 4u8) += 1;\n    O(b) = h(b) * 10;\n}";
    let k = kernel(src);
    let a = Buffer::from_vec(&[6], vec![0u8, 1, 5, 9, 3, 7]).unwrap();
    let out = evaluate(&k, &Args::new().buffer("A", a)).unwrap();
    assert_eq!(out.as_slice::<i32>().unwrap(), &[10, 30, 0, 20]);
}

#[test]
fn gather_through_a_lookup_table() {
    let src = "kernel lut(image: u8[H, W], table: u8[256]) -> out: u8[H, W] { out(y, x) = table(image(y, x)); }";
    let k = kernel(src);
    let image = Buffer::from_vec(&[2, 2], vec![0u8, 1, 254, 255]).unwrap();
    let table = Buffer::from_vec(&[256], (0..=255u8).map(|v| 255 - v).collect()).unwrap();
    let out = evaluate(
        &k,
        &Args::new().buffer("image", image).buffer("table", table),
    )
    .unwrap();
    assert_eq!(out.as_slice::<u8>().unwrap(), &[255, 254, 1, 0]);
}

#[test]
fn unboundable_region_is_an_error() {
    let src = "kernel k(A: i32[N]) -> O: i32[N] {\n    g(x) = x * 2;\n    h(x) = g(x);\n    h(x) = h(x) + 1;\n    O(i) = h(A(i));\n}";
    let err = run_err(src, vec![1, 2]);
    assert!(
        matches!(err, EvalError::RegionTooLarge { ref func, .. } if func == "h"),
        "{err}"
    );
}

fn run_err(src: &str, a: Vec<i32>) -> EvalError {
    let a = Buffer::from_vec(&[a.len()], a).unwrap();
    evaluate(&kernel(src), &Args::new().buffer("A", a)).unwrap_err()
}

#[test]
fn reductions_over_empty_domains_give_their_identity() {
    let src = "kernel k(A: i32[N]) -> O: i32[4] { O(i) = select(i == 0, sum(r in 0..0) A(r), select(i == 1, prod(r in 3..1) A(r), select(i == 2, max(r in 0..0) A(r), min(r in 0..0) A(r)))); }";
    assert_eq!(
        run_i32(src, &[("A", vec![7])]),
        vec![0, 1, i32::MIN, i32::MAX]
    );
}

#[test]
fn wrong_arguments_get_clear_errors() {
    let k = kernel("kernel mm(A: f32[M, K], B: f32[K, N], alpha: f32) -> C: f32[M, N] { C(i, j) = alpha * sum(k in 0..K) A(i, k) * B(k, j); }");
    let a = Buffer::from_vec(&[2, 3], vec![0f32; 6]).unwrap();
    let b = Buffer::from_vec(&[3, 2], vec![0f32; 6]).unwrap();
    let alpha = Value::F32(1.0);
    let full = || {
        Args::new()
            .buffer("A", a.clone())
            .buffer("B", b.clone())
            .scalar("alpha", alpha)
    };
    assert!(evaluate(&k, &full()).is_ok());

    let missing = Args::new().buffer("A", a.clone()).scalar("alpha", alpha);
    assert_eq!(
        evaluate(&k, &missing).unwrap_err(),
        EvalError::Call(CallError::MissingInput("B".into()))
    );

    let no_alpha = Args::new().buffer("A", a.clone()).buffer("B", b.clone());
    assert_eq!(
        evaluate(&k, &no_alpha).unwrap_err(),
        EvalError::Call(CallError::MissingInput("alpha".into()))
    );

    let extra = full().buffer("Z", a.clone());
    assert_eq!(
        evaluate(&k, &extra).unwrap_err(),
        EvalError::Call(CallError::UnknownArgument("Z".into()))
    );

    let wrong_type = full().buffer("B", Buffer::from_vec(&[3, 2], vec![0f64; 6]).unwrap());
    let err = evaluate(&k, &wrong_type).unwrap_err();
    assert_eq!(err.to_string(), "input `B` should be f32, found f64");

    let wrong_rank = full().buffer("B", Buffer::from_vec(&[6], vec![0f32; 6]).unwrap());
    let err = evaluate(&k, &wrong_rank).unwrap_err();
    assert_eq!(
        err.to_string(),
        "input `B` should have shape [K=3, N], found [6]"
    );

    let conflict = full().buffer("B", Buffer::from_vec(&[4, 2], vec![0f32; 8]).unwrap());
    let err = evaluate(&k, &conflict).unwrap_err();
    assert_eq!(
        err.to_string(),
        "input `B` should have shape [K=3, N=2], found [4, 2]"
    );

    let wrong_scalar = full().scalar("alpha", Value::I32(1));
    let err = evaluate(&k, &wrong_scalar).unwrap_err();
    assert_eq!(err.to_string(), "input `alpha` should be f32, found i32");
}

#[test]
fn constant_extents_are_checked() {
    let k = kernel("kernel k(W: f32[3, 3]) -> O: f32[3] { O(i) = W(i, i); }");
    let w = Buffer::from_vec(&[3, 4], vec![0f32; 12]).unwrap();
    let err = evaluate(&k, &Args::new().buffer("W", w)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "input `W` should have shape [3, 3], found [3, 4]"
    );
}

#[test]
fn empty_output_is_computed_without_reading_inputs() {
    let k = kernel("kernel k(A: i32[N]) -> O: i32[N] { O(i) = A(i + 100); }");
    let a = Buffer::from_vec(&[0], Vec::<i32>::new()).unwrap();
    let out = evaluate(&k, &Args::new().buffer("A", a)).unwrap();
    assert_eq!(out.shape(), &[0]);
}

#[test]
fn float_operations_are_counted_as_the_algorithm_states_them() {
    let mm = kernel("kernel mm(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] { C(i, j) = sum(k in 0..K) A(i, k) * B(k, j); }");
    let a = Buffer::from_vec(&[3, 5], vec![1f32; 15]).unwrap();
    let b = Buffer::from_vec(&[5, 4], vec![1f32; 20]).unwrap();
    let (_, work) =
        strata_dsl::evaluate_counting(&mm, &Args::new().buffer("A", a).buffer("B", b)).unwrap();
    assert_eq!(work.float_ops, 2 * 3 * 4 * 5);
    let int_kernel = kernel("kernel k(A: i32[N]) -> O: i32[N] { O(i) = A(i) * 2 + 1; }");
    let a = Buffer::from_vec(&[4], vec![1i32; 4]).unwrap();
    let (_, work) =
        strata_dsl::evaluate_counting(&int_kernel, &Args::new().buffer("A", a)).unwrap();
    assert_eq!(work.float_ops, 0);
}

/// The fallible copies the tuner and `strata run` use give what the infallible ones give, and
/// a size no machine has is an error naming its bytes, not an abort.
#[test]
fn fallible_buffer_copies_agree_and_name_what_does_not_fit() {
    let b = Buffer::from_vec(&[2, 3], vec![1.5f32, -2.0, 0.0, 7.25, 3.0, -0.5]).unwrap();
    assert_eq!(b.try_clone().unwrap(), b);
    let bytes = b.try_to_bytes().unwrap();
    assert_eq!(bytes, b.to_bytes());
    assert_eq!(Buffer::from_bytes(Dtype::F32, &[2, 3], &bytes).unwrap(), b);
    assert_eq!(
        Buffer::from_bytes(Dtype::F32, &[2, 3], &bytes[..20])
            .unwrap_err()
            .to_string(),
        "a buffer of shape [2, 3] needs 6 elements, found 5"
    );
    assert_eq!(
        Buffer::zeros(Dtype::F64, &[1 << 31, 1 << 30])
            .unwrap_err()
            .to_string(),
        format!(
            "could not allocate {} bytes for a buffer of shape [2147483648, 1073741824]",
            (1usize << 61).saturating_mul(8)
        )
    );
}
