//! Borrowed buffer views: a compiled kernel runs on the caller's memory (no copy) and answers
//! exactly what it answers on owned buffers, under random legal schedules and shapes; views
//! are refused as owned buffers are, naming the expected and actual shape.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use strata::dsl::random::random_args;
use strata::{
    Args, Buffer, BufferView, BufferViewMut, CallError, CompiledKernel, Pipeline, Sizes, ViewArgs,
};
use strata_testkit::example;
use strata_testkit::generate::random_schedule;

/// Every owned buffer of `args` as views of copies the test owns (so the views' memory is
/// not the `Buffer`s').
fn copies(args: &Args) -> Vec<(String, Buffer)> {
    args.buffers
        .iter()
        .map(|(n, b)| (n.clone(), b.clone()))
        .collect()
}

fn views<'a>(owned: &'a [(String, Buffer)], args: &Args) -> ViewArgs<'a> {
    let mut views = ViewArgs::new();
    for (name, buffer) in owned {
        let view = match buffer.data() {
            strata::dsl::Data::F32(v) => BufferView::new(v.as_slice(), buffer.shape()),
            strata::dsl::Data::U16(v) => BufferView::new(v.as_slice(), buffer.shape()),
            strata::dsl::Data::U8(v) => BufferView::new(v.as_slice(), buffer.shape()),
            strata::dsl::Data::I32(v) => BufferView::new(v.as_slice(), buffer.shape()),
            other => panic!("no view for {other:?} in this test"),
        };
        views = views.buffer(name, view.unwrap());
    }
    for (name, value) in &args.scalars {
        views = views.scalar(name, *value);
    }
    views
}

/// Runs `kernel` on owned `args`, on views, and into a caller's output view: the same bits.
/// False when the call is refused (the same way for both).
fn assert_views_agree(kernel: &CompiledKernel, args: &Args, what: &str) -> bool {
    let mem = copies(args);
    let view_args = views(&mem, args);
    let owned = match kernel.run(args, 2) {
        Ok(owned) => owned,
        // A round_up schedule may read past an input: views are refused in the same words.
        Err(e) => {
            assert_eq!(kernel.run_views(&view_args, 2).unwrap_err(), e, "{what}");
            return false;
        }
    };
    let from_views = kernel.run_views(&view_args, 2).unwrap();
    assert_eq!(owned, from_views, "{what}: run_views differs from run");
    let mut out = Buffer::zeros(owned.dtype(), owned.shape()).unwrap();
    kernel
        .run_views_into(&view_args, BufferViewMut::from(&mut out), 3)
        .unwrap();
    assert_eq!(owned, out, "{what}: run_views_into differs from run");
    true
}

#[test]
fn views_answer_what_owned_buffers_answer_under_random_schedules_and_shapes() {
    let mut rng = StdRng::seed_from_u64(7);
    let mut ran = 0;
    for name in ["matmul", "blur3x3_u16", "brighten", "softmax"] {
        let pipeline = example(name);
        for trial in 0..6 {
            let schedule = random_schedule(&pipeline, &mut rng);
            let kernel = strata::compile(&pipeline, &schedule, &Sizes::new()).unwrap();
            let sizes: Sizes = (pipeline.size_vars().into_iter())
                .map(|s| (s, rng.random_range(3..=19)))
                .collect();
            let args = random_args(&pipeline, &sizes, &mut rng).unwrap();
            let what = format!("{name} trial {trial} sizes {sizes:?} schedule {schedule}");
            ran += assert_views_agree(&kernel, &args, &what) as usize;
            // The reference agrees too (the views path adds no second answer).
            if let Ok(got) = kernel.run(&args, 1) {
                let expected = strata::evaluate(&pipeline, &args).unwrap();
                strata::dsl::random::agree(&got, &expected, 1e-4)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            }
        }
    }
    assert!(
        ran >= 12,
        "only {ran} of 24 calls ran: the comparison checked too little"
    );
}

fn scale() -> (Pipeline, CompiledKernel) {
    let pipeline = strata::kernel! {
        kernel scale(X: f32[M, N], alpha: f32) -> Y: f32[M, N] { Y(i, j) = alpha * X(i, j); }
    };
    let kernel = strata::compile(&pipeline, &strata::Schedule::new(), &Sizes::new()).unwrap();
    (pipeline, kernel)
}

#[test]
fn a_kernel_writes_into_the_callers_slice_in_place() {
    let (_, kernel) = scale();
    let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let mut y = vec![-1.0f32; 12];
    let args = ViewArgs::new()
        .buffer("X", BufferView::new(&x, &[3, 4]).unwrap())
        .scalar("alpha", strata::Value::F32(0.5));
    kernel
        .run_views_into(&args, BufferViewMut::new(&mut y, &[3, 4]).unwrap(), 1)
        .unwrap();
    let expected: Vec<f32> = x.iter().map(|v| v * 0.5).collect();
    assert_eq!(y, expected);
}

#[test]
fn owned_buffers_and_views_mix_in_one_call() {
    let pipeline = example("matmul");
    let kernel = strata::compile(&pipeline, &strata::Schedule::new(), &Sizes::new()).unwrap();
    let mut rng = StdRng::seed_from_u64(3);
    let sizes = strata::sizes(&[("M", 5), ("N", 7), ("K", 3)]);
    let args = random_args(&pipeline, &sizes, &mut rng).unwrap();
    let b: Vec<f32> = args.buffers["B"].as_slice::<f32>().unwrap().to_vec();
    let mixed = ViewArgs::new()
        .buffer("A", &args.buffers["A"])
        .buffer("B", BufferView::new(&b, &[3, 7]).unwrap());
    assert_eq!(
        kernel.run_views(&mixed, 1).unwrap(),
        kernel.run(&args, 1).unwrap()
    );
}

#[test]
fn a_view_of_the_wrong_shape_is_refused_with_the_expected_and_actual_shape() {
    let pipeline = example("matmul");
    let kernel = strata::compile(&pipeline, &strata::Schedule::new(), &Sizes::new()).unwrap();
    let a = vec![0.0f32; 12];
    let b = vec![0.0f32; 10];
    let args = ViewArgs::new()
        .buffer("A", BufferView::new(&a, &[3, 4]).unwrap())
        .buffer("B", BufferView::new(&b, &[5, 2]).unwrap());
    let err = kernel.run_views(&args, 1).unwrap_err();
    assert_eq!(
        err,
        CallError::WrongShape {
            name: "B".into(),
            expected: "[K=4, N=2]".into(),
            actual: vec![5, 2],
        }
    );
    assert_eq!(
        err.to_string(),
        "input `B` should have shape [K=4, N=2], found [5, 2]"
    );
    // The owned path refuses the same call in the same words.
    let owned = Args::new()
        .buffer("A", Buffer::from_vec(&[3, 4], a.clone()).unwrap())
        .buffer("B", Buffer::from_vec(&[5, 2], b.clone()).unwrap());
    assert_eq!(kernel.run(&owned, 1).unwrap_err(), err);
}

#[test]
fn a_view_of_the_wrong_type_or_a_missing_one_is_refused() {
    let (_, kernel) = scale();
    let x = vec![0i32; 6];
    let args = ViewArgs::new()
        .buffer("X", BufferView::new(&x, &[2, 3]).unwrap())
        .scalar("alpha", strata::Value::F32(1.0));
    assert_eq!(
        kernel.run_views(&args, 1).unwrap_err().to_string(),
        "input `X` should be f32, found i32"
    );
    let none = ViewArgs::new().scalar("alpha", strata::Value::F32(1.0));
    assert_eq!(
        kernel.run_views(&none, 1).unwrap_err(),
        CallError::MissingInput("X".into())
    );
}

#[test]
fn an_output_view_of_the_wrong_shape_or_type_is_refused_and_left_untouched() {
    let (_, kernel) = scale();
    let x = vec![1.0f32; 6];
    let args = ViewArgs::new()
        .buffer("X", BufferView::new(&x, &[2, 3]).unwrap())
        .scalar("alpha", strata::Value::F32(2.0));
    let mut y = vec![7.0f32; 6];
    let err = kernel
        .run_views_into(&args, BufferViewMut::new(&mut y, &[3, 2]).unwrap(), 1)
        .unwrap_err();
    assert_eq!(
        err,
        CallError::WrongOutput {
            expected: "f32 [2, 3]".into(),
            actual: "f32 [3, 2]".into(),
        }
    );
    assert!(y.iter().all(|&v| v == 7.0), "nothing ran: {y:?}");
    let mut wrong_type = vec![0.0f64; 6];
    let err = kernel
        .run_views_into(
            &args,
            BufferViewMut::new(&mut wrong_type, &[2, 3]).unwrap(),
            1,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the output buffer should be f32 [2, 3], found f64 [2, 3]"
    );
}

#[test]
fn a_view_whose_slice_does_not_fill_its_shape_cannot_be_made() {
    let x = vec![0.0f32; 5];
    let err = BufferView::new(&x, &[2, 3]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a buffer of shape [2, 3] needs 6 elements, found 5"
    );
    let mut y = vec![0u8; 7];
    assert!(BufferViewMut::new(&mut y, &[2, 3]).is_err());
}

#[test]
fn an_input_view_smaller_than_the_region_a_schedule_reads_is_refused() {
    // `bx` computed in whole blocks of 4 rows reads the input's rows up to the next multiple
    // of 4: a view 10 rows high is too small, as an owned buffer would be.
    let pipeline = example("blur3x3_u16");
    let schedule = strata::scheduler::schedule::text::parse_schedule(
        "bx: compute_root().split(y, yo, yi, 4, round_up)",
    )
    .unwrap();
    let kernel = strata::compile(&pipeline, &schedule, &Sizes::new()).unwrap();
    let input = vec![1u16; 10 * 9];
    let args = ViewArgs::new().buffer("input", BufferView::new(&input, &[10, 9]).unwrap());
    let err = kernel.run_views(&args, 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "input `input` is too small for this schedule: dimension 0 is read at 0..=11, but its extent is 10"
    );
    let taller = vec![1u16; 12 * 9];
    let args = ViewArgs::new().buffer("input", BufferView::new(&taller, &[12, 9]).unwrap());
    assert_eq!(kernel.run_views(&args, 1).unwrap().shape(), &[10, 7]);
}
