//! The call API of a compiled kernel: every refused call names what is wrong, with the exact
//! message a user sees, and produces no output; one compiled kernel can be called from many
//! threads at once; and the thread count never changes a bit of the answer.

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::random::{agree, random_args, random_buffer};
use strata_dsl::{evaluate, parse_kernel, Args, Buffer, Data, Dtype, Pipeline, Value};
use strata_dsl::{sizes, Sizes};
use strata_jit::{CallError, CodegenOptions, CompiledKernel};
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::LoweredKernel;

/// Floats may differ from the reference by reassociation and fused multiply-adds.
const FLOAT_TOLERANCE: f64 = 1e-4;

fn example_source(name: &str) -> String {
    let path = format!(
        "{}/../examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

fn hand_schedule(name: &str) -> String {
    let path = format!(
        "{}/../examples/schedules/{name}.sched",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

struct Kernel {
    pipeline: Pipeline,
    lowered: LoweredKernel,
    compiled: CompiledKernel,
}

/// Parses, schedules, lowers and compiles `source` (with the verifier on).
fn compile(source: &str, schedule: &str) -> Kernel {
    let pipeline = parse_kernel(source, "test.strata").unwrap_or_else(|e| panic!("{e:?}"));
    let schedule = parse_schedule(schedule).unwrap_or_else(|e| panic!("{e:?}"));
    let lowered = lower(&pipeline, &schedule).unwrap_or_else(|e| panic!("{e}"));
    let options = CodegenOptions {
        verify: true,
        ..CodegenOptions::default()
    };
    let compiled = CompiledKernel::new(&lowered, &options).unwrap_or_else(|e| panic!("{e}"));
    Kernel {
        pipeline,
        lowered,
        compiled,
    }
}

fn example(name: &str, schedule: &str) -> Kernel {
    compile(&example_source(name), schedule)
}

fn f32s(shape: &[usize]) -> Buffer {
    let n = shape.iter().product();
    Buffer::from_vec(shape, (0..n).map(|i| i as f32 * 0.25).collect::<Vec<f32>>()).unwrap()
}

/// Runs a call that must be refused: checks the error's message and that no output came back.
fn refused(kernel: &Kernel, args: &Args, message: &str) -> CallError {
    match kernel.compiled.run(args, 2) {
        Ok(output) => panic!(
            "the call should have been refused with `{message}`, but produced an output of shape {:?}",
            output.shape()
        ),
        Err(e) => {
            assert_eq!(e.to_string(), message, "{e:?}");
            e
        }
    }
}

/// As `refused`, and the reference evaluator refuses the same arguments in the same words.
fn refused_like_reference(kernel: &Kernel, args: &Args, message: &str) -> CallError {
    let e = refused(kernel, args, message);
    match evaluate(&kernel.pipeline, args) {
        Ok(_) => panic!("the reference evaluator accepted what the JIT refused with `{message}`"),
        Err(reference) => assert_eq!(reference.to_string(), message, "the reference evaluator"),
    }
    e
}

fn matmul_args(a: &[usize], b: &[usize]) -> Args {
    Args::new().buffer("A", f32s(a)).buffer("B", f32s(b))
}

#[test]
fn missing_input() {
    let k = example("matmul", "");
    let e = refused_like_reference(
        &k,
        &Args::new().buffer("A", f32s(&[2, 3])),
        "missing input `B`",
    );
    assert_eq!(e, CallError::MissingInput("B".into()));
    refused_like_reference(&k, &Args::new(), "missing input `A`");
}

#[test]
fn unknown_buffer_argument() {
    let k = example("matmul", "");
    let args = matmul_args(&[2, 3], &[3, 4]).buffer("C", f32s(&[2, 4]));
    let e = refused_like_reference(&k, &args, "`C` is not an input of this kernel");
    assert_eq!(e, CallError::UnknownArgument("C".into()));
}

#[test]
fn unknown_scalar_argument() {
    let k = example("matmul", "");
    let args = matmul_args(&[2, 3], &[3, 4]).scalar("alpha", Value::F32(2.0));
    refused_like_reference(&k, &args, "`alpha` is not an input of this kernel");
}

/// A buffer under a scalar parameter's name, and a scalar under a buffer's name, are unknown
/// arguments too: the names of the two kinds are separate. (The reference evaluator is more
/// lenient here: it ignores a buffer named after a scalar parameter, and reports the scalar as
/// missing when it is.)
#[test]
fn argument_of_the_wrong_kind() {
    let k = example("brighten", "");
    let image = Buffer::from_vec(&[2, 3], vec![7u8; 6]).unwrap();
    let args = Args::new()
        .buffer("image", image.clone())
        .buffer("gain", Buffer::from_vec(&[1], vec![1.0f32]).unwrap())
        .scalar("offset", Value::F32(1.0));
    refused(&k, &args, "`gain` is not an input of this kernel");
    let args = Args::new()
        .buffer("image", image)
        .scalar("image", Value::U8(1))
        .scalar("gain", Value::F32(1.0))
        .scalar("offset", Value::F32(1.0));
    refused(&k, &args, "`image` is not an input of this kernel");
}

#[test]
fn wrong_element_type() {
    let k = example("matmul", "");
    let a = Buffer::zeros(Dtype::F64, &[2, 3]).unwrap();
    let args = Args::new().buffer("A", a).buffer("B", f32s(&[3, 4]));
    let e = refused_like_reference(&k, &args, "input `A` should be f32, found f64");
    assert_eq!(
        e,
        CallError::WrongType {
            name: "A".into(),
            expected: Dtype::F32,
            actual: Dtype::F64
        }
    );
    let k = example("blur3x3", "");
    let args = Args::new().buffer("input", Buffer::zeros(Dtype::I16, &[5, 5]).unwrap());
    refused_like_reference(&k, &args, "input `input` should be u16, found i16");
}

#[test]
fn wrong_rank_too_many_dimensions() {
    let k = example("blur3x3", "");
    let args = Args::new().buffer("input", Buffer::zeros(Dtype::U16, &[4, 5, 6]).unwrap());
    refused_like_reference(
        &k,
        &args,
        "input `input` should have shape [H, W], found [4, 5, 6]",
    );
}

#[test]
fn wrong_rank_too_few_dimensions() {
    // A wrong rank is reported before the input's extents bind any size (as the reference
    // evaluator does), so no size is named with a value, and a missing dimension is not
    // mistaken for an unbound size.
    let k = example("matmul", "");
    let args = matmul_args(&[3], &[3, 4]);
    refused_like_reference(&k, &args, "input `A` should have shape [M, K], found [3]");
    // Here no other input binds `W`.
    let k = example("blur3x3", "");
    let args = Args::new().buffer("input", Buffer::zeros(Dtype::U16, &[6]).unwrap());
    refused_like_reference(
        &k,
        &args,
        "input `input` should have shape [H, W], found [6]",
    );
}

const CONSTANT_EXTENT: &str = "
kernel mix(X: f32[N, 3], W: f32[3, 3]) -> O: f32[N, 3] {
    O(i, j) = sum(k in 0..3) X(i, k) * W(k, j);
}";

#[test]
fn wrong_constant_extent() {
    let k = compile(CONSTANT_EXTENT, "");
    let args = Args::new()
        .buffer("X", f32s(&[5, 3]))
        .buffer("W", f32s(&[3, 4]));
    let e = refused_like_reference(
        &k,
        &args,
        "input `W` should have shape [3, 3], found [3, 4]",
    );
    assert_eq!(
        e,
        CallError::WrongShape {
            name: "W".into(),
            expected: "[3, 3]".into(),
            actual: vec![3, 4]
        }
    );
    let args = Args::new()
        .buffer("X", f32s(&[5, 2]))
        .buffer("W", f32s(&[3, 3]));
    refused_like_reference(
        &k,
        &args,
        "input `X` should have shape [N=5, 3], found [5, 2]",
    );
    // The right extents run.
    let args = Args::new()
        .buffer("X", f32s(&[5, 3]))
        .buffer("W", f32s(&[3, 3]));
    agree(
        &k.compiled.run(&args, 1).unwrap(),
        &evaluate(&k.pipeline, &args).unwrap(),
        FLOAT_TOLERANCE,
    )
    .unwrap();
}

#[test]
fn inputs_disagree_on_a_size() {
    let k = example("matmul", "");
    // Sizes are bound from every input first, so the shape names all of them.
    let e = refused_like_reference(
        &k,
        &matmul_args(&[2, 3], &[4, 5]),
        "input `B` should have shape [K=3, N=5], found [4, 5]",
    );
    assert!(matches!(e, CallError::WrongShape { .. }));
    refused(
        &k,
        &matmul_args(&[2, 5], &[4, 5]),
        "input `B` should have shape [K=5, N=5], found [4, 5]",
    );
}

#[test]
fn missing_scalar_parameter() {
    let k = example("brighten", "");
    let image = Buffer::from_vec(&[2, 3], vec![7u8; 6]).unwrap();
    let args = Args::new()
        .buffer("image", image.clone())
        .scalar("offset", Value::F32(1.0));
    let e = refused_like_reference(&k, &args, "missing input `gain`");
    assert_eq!(e, CallError::MissingInput("gain".into()));
    let args = Args::new()
        .buffer("image", image)
        .scalar("gain", Value::F32(1.0));
    refused_like_reference(&k, &args, "missing input `offset`");
}

#[test]
fn scalar_of_the_wrong_type() {
    let k = example("brighten", "");
    let image = Buffer::from_vec(&[2, 3], vec![7u8; 6]).unwrap();
    let args = Args::new()
        .buffer("image", image.clone())
        .scalar("gain", Value::F64(1.0))
        .scalar("offset", Value::F32(1.0));
    let e = refused_like_reference(&k, &args, "input `gain` should be f32, found f64");
    assert_eq!(
        e,
        CallError::WrongType {
            name: "gain".into(),
            expected: Dtype::F32,
            actual: Dtype::F64
        }
    );
    let args = Args::new()
        .buffer("image", image)
        .scalar("gain", Value::F32(1.0))
        .scalar("offset", Value::I32(1));
    refused_like_reference(&k, &args, "input `offset` should be f32, found i32");
}

/// `split(y, yo, yi, 4, round_up)` on `bx` computes whole blocks of 4 rows, so it reads the
/// input's rows up to the next multiple of 4: an input whose height is not one is too small.
#[test]
fn input_too_small_for_a_round_up_schedule() {
    let k = example(
        "blur3x3",
        "bx: compute_root().split(y, yo, yi, 4, round_up)",
    );
    let (name, region) = &k.lowered.input_regions[0];
    assert_eq!(name, "input");
    assert_eq!(region.len(), 2);
    let mut rng = StdRng::seed_from_u64(7);
    let input = |h: usize, rng: &mut StdRng| random_buffer(Dtype::U16, &[h, 9], rng).unwrap();
    // Height 10: rows 0..=11 are read.
    let args = Args::new().buffer("input", input(10, &mut rng));
    let e = refused(
        &k,
        &args,
        "input `input` is too small for this schedule: dimension 0 is read at 0..=11, but its extent is 10",
    );
    assert_eq!(
        e,
        CallError::InputTooSmall {
            input: "input".into(),
            dim: 0,
            min: 0,
            max: 11,
            extent: 10
        }
    );
    for h in [5, 6, 7, 9, 13] {
        let args = Args::new().buffer("input", input(h, &mut rng));
        let rounded = h.div_ceil(4) * 4;
        refused(
            &k,
            &args,
            &format!(
                "input `input` is too small for this schedule: dimension 0 is read at 0..={}, but its extent is {h}",
                rounded - 1
            ),
        );
    }
    // Heights that are multiples of 4 run and agree with the reference.
    for h in [4, 8, 12] {
        let args = Args::new().buffer("input", input(h, &mut rng));
        let got = k.compiled.run(&args, 2).unwrap();
        agree(&got, &evaluate(&k.pipeline, &args).unwrap(), 0.0).unwrap();
    }
}

/// The bits of a buffer's elements (floats by their encoding), for exact comparisons.
fn bits(b: &Buffer) -> Vec<u64> {
    match b.data() {
        Data::F32(v) => v.iter().map(|x| x.to_bits() as u64).collect(),
        Data::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
        _ => (0..b.len())
            .map(|i| b.get_flat(i).unwrap().as_i64().unwrap() as u64)
            .collect(),
    }
}

/// Four threads call one compiled kernel at once, each with its own inputs (and each call
/// itself parallel), and every answer matches the reference.
#[test]
fn one_kernel_called_from_four_threads_at_once() {
    for (name, size) in [
        ("matmul", sizes(&[("M", 37), ("N", 29), ("K", 23)])),
        ("blur3x3", sizes(&[("H", 70), ("W", 53)])),
        ("softmax", sizes(&[("R", 19), ("C", 45)])),
    ] {
        let k = example(name, &hand_schedule(name));
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (pipeline, k, size) = (&k.pipeline, &k.compiled, &size);
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(t);
                    for round in 0..25 {
                        let args = random_args(pipeline, size, &mut rng).unwrap();
                        let expected = evaluate(pipeline, &args).unwrap();
                        let got = k.run(&args, 1 + (round % 3)).unwrap();
                        agree(&got, &expected, FLOAT_TOLERANCE)
                            .unwrap_or_else(|e| panic!("{name} thread {t} round {round}: {e}"));
                    }
                });
            }
        });
    }
}

/// One thread and four give identical bits: the parallel loops split only pure dimensions.
fn same_bits_for_any_thread_count(name: &str, schedule: &str, size: Sizes) {
    let k = example(name, schedule);
    assert!(
        k.lowered.to_string().contains("parallel"),
        "{name}: the schedule should have a parallel loop:\n{}",
        k.lowered
    );
    let mut rng = StdRng::seed_from_u64(11);
    for _ in 0..5 {
        let args = random_args(&k.pipeline, &size, &mut rng).unwrap();
        let one = k.compiled.run(&args, 1).unwrap();
        let four = k.compiled.run(&args, 4).unwrap();
        assert_eq!(one.shape(), four.shape());
        assert!(bits(&one) == bits(&four), "{name}: 1 and 4 threads differ");
        agree(
            &one,
            &evaluate(&k.pipeline, &args).unwrap(),
            FLOAT_TOLERANCE,
        )
        .unwrap();
    }
}

#[test]
fn thread_count_does_not_change_an_integer_kernel() {
    same_bits_for_any_thread_count(
        "blur3x3",
        &hand_schedule("blur3x3"),
        sizes(&[("H", 131), ("W", 150)]),
    );
    same_bits_for_any_thread_count(
        "brighten",
        &hand_schedule("brighten"),
        sizes(&[("H", 67), ("W", 45)]),
    );
}

#[test]
fn thread_count_does_not_change_a_float_kernel() {
    same_bits_for_any_thread_count(
        "matmul",
        &hand_schedule("matmul"),
        sizes(&[("M", 45), ("N", 37), ("K", 29)]),
    );
    same_bits_for_any_thread_count(
        "softmax",
        &hand_schedule("softmax"),
        sizes(&[("R", 33), ("C", 50)]),
    );
    same_bits_for_any_thread_count(
        "conv2d",
        &hand_schedule("conv2d"),
        sizes(&[("N", 2), ("C", 3), ("F", 5), ("H", 11), ("W", 19)]),
    );
}

#[test]
fn run_into_reuses_an_output_of_the_right_shape_and_refuses_others() {
    let pipeline =
        strata_dsl::parse_kernel("kernel k(A: i32[N]) -> O: i32[N] { O(i) = A(i) * 3; }", "k")
            .unwrap();
    let lowered =
        strata_scheduler::lower::lower(&pipeline, &strata_scheduler::Schedule::new()).unwrap();
    let kernel =
        strata_jit::CompiledKernel::new(&lowered, &strata_jit::CodegenOptions::default()).unwrap();
    let args = strata_dsl::Args::new().buffer(
        "A",
        strata_dsl::Buffer::from_vec(&[3], vec![1i32, 2, 3]).unwrap(),
    );
    let mut out = strata_dsl::Buffer::from_vec(&[3], vec![7i32; 3]).unwrap();
    kernel.run_into(&args, &mut out, 1).unwrap();
    assert_eq!(out.as_slice::<i32>().unwrap(), &[3, 6, 9]);
    let mut wrong = strata_dsl::Buffer::from_vec(&[4], vec![0i32; 4]).unwrap();
    let err = kernel.run_into(&args, &mut wrong, 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the output buffer should be i32 [3], found i32 [4]"
    );
    assert_eq!(wrong.as_slice::<i32>().unwrap(), &[0; 4], "nothing ran");
}
