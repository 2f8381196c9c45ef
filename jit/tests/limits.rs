//! Sizes at and past the limits of the call boundary (`strata_dsl::signature`): every shape
//! whose sizes, extents, element counts or size expressions leave `i32` is refused with an
//! error naming the size, before anything is allocated or run, by the reference evaluator, the
//! interpreter and compiled kernels alike; split factors that would overflow loop bounds are
//! refused by validation.

mod common;

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::random_args;
use strata_dsl::signature::{MAX_ELEMENTS, MAX_EXTENT};
use strata_dsl::sizes;
use strata_dsl::{evaluate, parse_kernel, Args, Buffer, CallError, Dtype};
use strata_scheduler::interp::{interpret, InterpError};
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::Schedule;

#[test]
fn element_counts_that_overflow_usize_are_refused_by_buffers() {
    let shape = [1 << 22, 1 << 21, 1 << 21];
    let err = Buffer::from_vec(&shape, Vec::<u8>::new()).unwrap_err();
    assert!(err.to_string().contains("more elements than"), "{err}");
    assert!(Buffer::zeros(Dtype::U8, &shape).is_err());
}

#[test]
fn an_allocation_that_cannot_be_made_is_an_error_not_an_abort() {
    let err = Buffer::zeros(Dtype::F32, &[1 << 60]).unwrap_err();
    assert!(err.to_string().contains("could not allocate"), "{err}");
}

/// `pick(A: u8[X,Y,Z])` at 2^22 x 2^21 x 2^21: the CLI's inputs are refused before allocation.
#[test]
fn inputs_past_the_element_limit_are_refused_before_allocation() {
    let src = "kernel pick(A: u8[X, Y, Z]) -> B: u8[X] { B(i) = A(i, Y - 1, Z - 1); }";
    let k = parse_kernel(src, "pick.strata").unwrap();
    let mut rng = StdRng::seed_from_u64(1);
    let huge = sizes(&[("X", 1 << 22), ("Y", 1 << 21), ("Z", 1 << 21)]);
    let err = random_args(&k, &huge, &mut rng).unwrap_err();
    assert!(
        err.contains("input `A`") && err.contains("too large"),
        "{err}"
    );
    let wide = sizes(&[("X", 1), ("Y", 1), ("Z", MAX_EXTENT + 1)]);
    let err = random_args(&k, &wide, &mut rng).unwrap_err();
    assert!(err.contains("size `Z`"), "{err}");
}

/// `B: f32[N * N]` wraps i32 at N = 65536 (0 elements) and 65537 (131073): refused everywhere.
#[test]
fn output_extents_that_overflow_are_refused_everywhere() {
    let src = "kernel sq(A: f32[N]) -> B: f32[N * N] { B(i) = A(i % N); }";
    let (pipeline, lowered) = common::lower_source(src, "");
    let compiled = common::compile_lowered(src, "", &lowered);
    for n in [65536usize, 65537] {
        let a = Buffer::from_vec(&[n], vec![0f32; n]).unwrap();
        let args = Args::new().buffer("A", a);
        let expected =
            "the output extent `N * N` cannot be computed for these sizes: a step overflows i32";
        let reference = evaluate(&pipeline, &args).unwrap_err();
        assert_eq!(reference.to_string(), expected, "reference at N={n}");
        let jit = compiled.run(&args, 1).unwrap_err();
        assert!(matches!(jit, CallError::SizeExprFailed { .. }), "{jit}");
        assert!(jit.to_string().contains("overflows i32"), "{jit}");
        let interp = interpret(&lowered, &args).unwrap_err();
        assert!(matches!(interp, InterpError::Call(_)), "{interp}");
    }
    // Below the limit it runs and agrees.
    let a = Buffer::from_vec(&[3], vec![1f32, 2.0, 3.0]).unwrap();
    let args = Args::new().buffer("A", a);
    assert_eq!(
        compiled.run(&args, 1).unwrap(),
        evaluate(&pipeline, &args).unwrap()
    );
}

/// Outputs at the limits pass the check; one more element, or one more in an extent, does not.
#[test]
fn the_limits_are_exact() {
    let src = "kernel k(A: u8[N], M: u8[R]) -> B: u8[N, R] { B(i, j) = A(i) + M(j); }";
    let k = parse_kernel(src, "k.strata").unwrap();
    let signature = k.call_signature();
    let shapes = |n: i64, r: i64| {
        let sizes = [("N".to_string(), n), ("R".to_string(), r)];
        signature.shapes_for(&sizes.into_iter().collect())
    };
    // 2^31 - 1 is prime, so the largest output with extents <= 2^30 has 2^31 - 2 elements.
    let (_, out) = shapes(MAX_EXTENT - 1, 2).unwrap();
    assert_eq!(out.iter().product::<usize>() as u64, MAX_ELEMENTS - 1);
    let (inputs, _) = shapes(MAX_EXTENT, 1).unwrap();
    assert_eq!(inputs[0].1, vec![MAX_EXTENT as usize]);
    let err = shapes(1 << 16, 1 << 15).unwrap_err();
    assert!(matches!(err, CallError::TooManyElements { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("output `B` of shape [65536, 32768] is too large"),
        "{err}"
    );
    let err = shapes(MAX_EXTENT + 1, 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "size `N` is {}, more than the largest size strata supports ({MAX_EXTENT})",
            MAX_EXTENT + 1
        )
    );
}

/// `split(y, yo, yi, 2147483645)` overflowed the outer loop's extent and gave a wrong answer;
/// 6442450941 acted as 2147483645 (reduced mod 2^32). Both are refused with the rule.
#[test]
fn split_factors_that_overflow_loop_bounds_are_refused() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/kernels/brighten.strata"
    ))
    .unwrap();
    let k = parse_kernel(&src, "brighten.strata").unwrap();
    for factor in ["2147483645", "6442450941", "16777217"] {
        let text = format!("out: split(y, yo, yi, {factor})");
        let schedule = parse_schedule(&text).unwrap();
        let err = lower(&k, &schedule).unwrap_err().to_string();
        assert!(
            err.contains("is too large; use 1 to 16777216"),
            "{text}: {err}"
        );
    }
    let schedule: Schedule = parse_schedule("out: split(y, yo, yi, 16777216)").unwrap();
    assert!(lower(&k, &schedule).is_ok());
    let err = parse_schedule("out: split(y, yo, yi, 99999999999999999999)").unwrap_err();
    assert!(err.message.contains("does not fit"), "{}", err.message);
}

/// `sum(r in 0..N * N)` wrapped to an empty domain in compiled code where the reference
/// refused: now every executor refuses it.
#[test]
fn domains_that_overflow_are_refused_everywhere() {
    let src = "kernel k(A: f32[N]) -> B: f32[1] { B(i) = sum(r in 0..N * N) A(r % N); }";
    let a = Buffer::from_vec(&[65536], vec![0f32; 65536]).unwrap();
    refused_everywhere(
        src,
        &Args::new().buffer("A", a),
        "the reduction domain bound `N * N` cannot be computed for these sizes: a step overflows i32",
    );
}

/// Runs `src` at `args` through the reference, the interpreter and compiled code (default
/// schedule), expecting all three to refuse with `message`.
fn refused_everywhere(src: &str, args: &Args, message: &str) {
    let (pipeline, lowered) = common::lower_source(src, "");
    let compiled = common::compile_lowered(src, "", &lowered);
    let reference = evaluate(&pipeline, args).unwrap_err();
    assert_eq!(reference.to_string(), message, "reference");
    assert_eq!(
        compiled.run(args, 2).unwrap_err().to_string(),
        message,
        "jit"
    );
    assert_eq!(
        interpret(&lowered, args).unwrap_err().to_string(),
        message,
        "interp"
    );
}

/// `out(r - 1, x)` at `r = 0` read the output outside its buffer (a segfault at W = 8000000).
/// Where the bound is static (`r in 0..H`) the checker refuses the kernel, at the index.
#[test]
fn an_update_reading_its_output_below_zero_is_a_check_error() {
    let src = "kernel iir_r0(input: f32[H, W], a: f32) -> out: f32[H, W] {\n\
               out(y, x) = input(y, x);\n\
               for (r in 0..H) out(r, x) = a * input(r, x) + (1.0 - a) * out(r - 1, x);\n}";
    let err = parse_kernel(src, "iir_r0.strata").unwrap_err();
    assert!(
        err.message
            .contains("this index of the output `out` reaches -1"),
        "{err:?}"
    );
    assert_eq!(err.line_col(), (3, 63), "{err:?}");
}

/// Where it depends on the sizes (the domain starts at a size), the call is refused before
/// running, in the same words by every executor; where it stays inside, they agree.
#[test]
fn an_update_reading_its_output_outside_its_extents_is_refused() {
    let src = "kernel iir(input: f32[H, W], start: u8[S], a: f32) -> out: f32[H, W] { \
               out(y, x) = input(y, x); \
               for (r in S..H) out(r, x) = a * input(r, x) + (1.0 - a) * out(r - 1, x); }";
    let args = |s: usize| {
        Args::new()
            .buffer("input", Buffer::from_vec(&[2, 8], vec![1f32; 16]).unwrap())
            .buffer("start", Buffer::from_vec(&[s], vec![0u8; s]).unwrap())
            .scalar("a", strata_dsl::Value::F32(0.5))
    };
    refused_everywhere(
        src,
        &args(0),
        "output `out` is read or written at -1..=1 in dimension 0, outside its extent 2: an update reads or writes its own function outside the region the definition covers",
    );
    let (pipeline, lowered) = common::lower_source(src, "");
    let compiled = common::compile_lowered(src, "", &lowered);
    let expected = evaluate(&pipeline, &args(1)).unwrap();
    assert_eq!(compiled.run(&args(1), 2).unwrap(), expected);
    assert_eq!(interpret(&lowered, &args(1)).unwrap(), expected);
}

/// An update writing past its function's extent was clipped by compiled code but an error in
/// the reference: now an error in both.
#[test]
fn an_update_writing_past_its_output_is_refused() {
    let src = "kernel k(A: f32[N]) -> B: f32[N] { B(i) = A(i); for (r in 0..N) B(r + 1) = 1.0; }";
    let args = Args::new().buffer("A", Buffer::from_vec(&[4], vec![0f32; 4]).unwrap());
    refused_everywhere(
        src,
        &args,
        "output `B` is read or written at 1..=4 in dimension 0, outside its extent 4: an update reads or writes its own function outside the region the definition covers",
    );
}

/// A producer's region can hold more elements than any input or output (here 1999001^2 for a
/// 2000 x 2000 output). Its size wrapped in i32 and the body wrote past a small allocation;
/// now the count is exact and the runtime aborts with a message instead. The kernel runs in a
/// child process (this test binary again), since an abort ends the process.
#[test]
fn a_producer_region_past_the_element_limit_aborts_with_a_message() {
    const CHILD: &str = "STRATA_TEST_LARGE_PRODUCER";
    let src = "kernel k(A: f32[N]) -> out: f32[N, N] { f(x, y) = f32(x + y); \
               out(i, j) = f(i * 1000, j * 1000) + A(i); }";
    if std::env::var(CHILD).is_ok() {
        let (_, lowered) = common::lower_source(src, "f: compute_root()");
        let compiled = common::compile_lowered(src, "f: compute_root()", &lowered);
        let a = Buffer::from_vec(&[2000], vec![0f32; 2000]).unwrap();
        let result = compiled.run(&Args::new().buffer("A", a), 1);
        println!("the kernel returned: {:?}", result.map(|b| b.len()));
        return;
    }
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_producer_region_past_the_element_limit_aborts_with_a_message",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(!child.status.success(), "the child should abort: {stderr}");
    assert!(
        stderr.contains("more than strata supports (2147483647)"),
        "{}\n{stderr}",
        child.status
    );
}

/// A site under an empty loop is skipped by the call checks only where its load cannot leave
/// that loop: `A(y + 100)` does not depend on `r`, so code generation may hoist the load out of
/// the (empty) `r` loop, and the call must still check it. The reference, which never reads
/// inside an empty domain, answers; compiled code refuses clearly (a conservative check).
#[test]
fn a_load_that_may_be_hoisted_out_of_an_empty_loop_is_still_checked() {
    let src =
        "kernel k(A: f32[N], K: u8[S]) -> out: f32[N] { out(y) = sum(r in 0..S) A(y + 100); }";
    let (pipeline, lowered) = common::lower_source(src, "");
    let compiled = common::compile_lowered(src, "", &lowered);
    let args = Args::new()
        .buffer("A", Buffer::from_vec(&[4], vec![1f32; 4]).unwrap())
        .buffer("K", Buffer::from_vec(&[0], Vec::<u8>::new()).unwrap());
    assert_eq!(
        evaluate(&pipeline, &args)
            .unwrap()
            .as_slice::<f32>()
            .unwrap(),
        &[0.0; 4]
    );
    let err = compiled.run(&args, 1).unwrap_err();
    assert!(matches!(err, CallError::InputTooSmall { .. }), "{err}");
}

/// Sizes fixed in advance (`strata::compile`'s, `--shape` of `strata lower`) obey the same
/// limits as sizes bound at a call: negative ones and ones past 2^30 are refused by name.
#[test]
fn sizes_fixed_in_advance_past_the_limits_are_refused() {
    let src = "kernel k(A: f32[N]) -> B: f32[N] { B(i) = A(i); }";
    let pipeline = parse_kernel(src, "k.strata").unwrap();
    for n in [-1, MAX_EXTENT + 1, i64::from(i32::MAX) + 1] {
        let err = strata_jit::lower_for(&pipeline, &Schedule::new(), &sizes(&[("N", n)]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!("size `N` is {n}; a size fixed in advance must be 0 to {MAX_EXTENT}")
        );
    }
    strata_jit::lower_for(&pipeline, &Schedule::new(), &sizes(&[("N", MAX_EXTENT)])).unwrap();
}
