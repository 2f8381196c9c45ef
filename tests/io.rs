//! Your own data: `.npy` and PNG files in and out of `strata::io` and `strata run` (`--input`,
//! `--output`, `--param`): round trips for every element type, sizes inferred from the files,
//! outputs equal to the reference evaluator's answer, and every refusal with its message.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use strata::dsl::random::{agree, random_buffer};
use strata::dsl::signature::BufferParam;
use strata::dsl::Extent;
use strata::io::Declared;
use strata::{Args, Buffer, Dtype, Value};

const DTYPES: [Dtype; 10] = [
    Dtype::Bool,
    Dtype::U8,
    Dtype::U16,
    Dtype::U32,
    Dtype::I8,
    Dtype::I16,
    Dtype::I32,
    Dtype::I64,
    Dtype::F32,
    Dtype::F64,
];

/// A fresh directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("strata-io-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

mod common;
use common::{strata, text};

fn example(name: &str) -> String {
    format!(
        "{}/examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn pipeline(name: &str) -> strata::Pipeline {
    strata::parse_kernel_file(Path::new(&example(name)))
        .unwrap()
        .remove(0)
}

/// A declaration of `name` with `rank` sizes, as the reader checks files against.
fn declared(name: &str, dtype: Dtype, rank: usize) -> Declared {
    Declared::input(&BufferParam {
        name: name.into(),
        dtype,
        shape: (0..rank).map(|d| Extent::Size(format!("S{d}"))).collect(),
    })
}

/// The extreme values of each type, so a round trip sees every byte of the element.
fn extremes(dtype: Dtype) -> Vec<Value> {
    match dtype {
        Dtype::Bool => vec![Value::Bool(true), Value::Bool(false)],
        Dtype::U8 => vec![Value::U8(0), Value::U8(u8::MAX)],
        Dtype::U16 => vec![Value::U16(0), Value::U16(u16::MAX)],
        Dtype::U32 => vec![Value::U32(0), Value::U32(u32::MAX)],
        Dtype::I8 => vec![Value::I8(i8::MIN), Value::I8(i8::MAX)],
        Dtype::I16 => vec![Value::I16(i16::MIN), Value::I16(i16::MAX)],
        Dtype::I32 => vec![Value::I32(i32::MIN), Value::I32(i32::MAX)],
        Dtype::I64 => vec![Value::I64(i64::MIN), Value::I64(i64::MAX)],
        Dtype::F32 => vec![Value::F32(f32::MAX), Value::F32(-0.0), Value::F32(1e-40)],
        Dtype::F64 => vec![
            Value::F64(f64::MIN),
            Value::F64(f64::INFINITY),
            Value::F64(5e-324),
        ],
    }
}

fn buffer_with_extremes(dtype: Dtype, shape: &[usize], rng: &mut StdRng) -> Buffer {
    let mut buffer = random_buffer(dtype, shape, rng).unwrap();
    for (i, v) in extremes(dtype).into_iter().enumerate() {
        assert!(buffer.set_flat(i, v));
    }
    buffer
}

#[test]
fn npy_round_trips_every_element_type_bit_for_bit() {
    let dir = temp_dir("npy-round-trip");
    let mut rng = StdRng::seed_from_u64(1);
    for dtype in DTYPES {
        for shape in [vec![3usize, 4, 2], vec![5], vec![0, 3]] {
            let mut buffer = random_buffer(dtype, &shape, &mut rng).unwrap();
            if buffer.len() >= 3 {
                buffer = buffer_with_extremes(dtype, &shape, &mut rng);
            }
            let path = dir.join(format!("{dtype}.npy"));
            strata::io::write(&path, &buffer, "output `Y`").unwrap();
            let back = strata::io::read(&path, &declared("X", dtype, shape.len())).unwrap();
            assert_eq!(back.dtype(), dtype);
            assert_eq!(back.shape(), shape.as_slice());
            assert_eq!(back.to_bytes(), buffer.to_bytes(), "{dtype} {shape:?}");
        }
    }
}

/// The header of a `.npy` file: magic, version 1.0, the dictionary padded to 64 bytes.
fn npy_header(descr: &str, fortran: bool, shape: &str) -> Vec<u8> {
    let order = if fortran { "True" } else { "False" };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((dict.len() as u16).to_le_bytes());
    bytes.extend(dict.as_bytes());
    bytes
}

#[test]
fn npy_files_strata_writes_have_numpys_header_and_c_order_data() {
    let dir = temp_dir("npy-header");
    let values: Vec<f32> = (0..6).map(|i| i as f32 * 0.5).collect();
    let buffer = Buffer::from_vec(&[2, 3], values.clone()).unwrap();
    let path = dir.join("y.npy");
    strata::io::write(&path, &buffer, "output `Y`").unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(bytes.starts_with(b"\x93NUMPY"));
    assert!(header.contains("'descr': '<f4'"), "{header}");
    assert!(header.contains("'fortran_order': False"), "{header}");
    // `(2, 3)` or `(2, 3, )`: both are Python's tuple (2, 3).
    let compact = header.replace(' ', "").replace(",)", ")");
    assert!(compact.contains("'shape':(2,3)"), "{header}");
    let data: Vec<f32> = bytes[10 + header_len..]
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(data, values);
}

#[test]
fn npy_files_written_by_hand_read_in_either_byte_order() {
    let dir = temp_dir("npy-by-hand");
    let mut little = npy_header("<i2", false, "(2, 2)");
    for v in [1i16, -2, 300, -32768] {
        little.extend(v.to_le_bytes());
    }
    let path = dir.join("little.npy");
    std::fs::write(&path, little).unwrap();
    let b = strata::io::read(&path, &declared("X", Dtype::I16, 2)).unwrap();
    assert_eq!(b.as_slice::<i16>().unwrap(), &[1, -2, 300, -32768]);
    let mut big = npy_header(">f8", false, "(3,)");
    for v in [1.5f64, -0.25, 1e300] {
        big.extend(v.to_be_bytes());
    }
    let path = dir.join("big.npy");
    std::fs::write(&path, big).unwrap();
    let b = strata::io::read(&path, &declared("X", Dtype::F64, 1)).unwrap();
    assert_eq!(b.as_slice::<f64>().unwrap(), &[1.5, -0.25, 1e300]);
}

#[test]
fn npy_refusals_name_the_input_the_file_and_what_differs() {
    let dir = temp_dir("npy-refusals");
    let mut fortran = npy_header("<f4", true, "(2, 2)");
    fortran.extend([0u8; 16]);
    let path = dir.join("fortran.npy");
    std::fs::write(&path, fortran).unwrap();
    let err = strata::io::read(&path, &declared("A", Dtype::F32, 2)).unwrap_err();
    assert!(
        err.to_string()
            .contains("is stored in Fortran (column-major) order; strata reads C order"),
        "{err}"
    );

    let path = dir.join("u64.npy");
    let mut u64s = npy_header("<u8", false, "(2,)");
    u64s.extend([0u8; 16]);
    std::fs::write(&path, u64s).unwrap();
    let err = strata::io::read(&path, &declared("A", Dtype::U32, 1)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "input `A` should be u32, but {} holds '<u8' (not a strata element type)",
            path.display()
        )
    );

    let path = dir.join("short.npy");
    let mut short = npy_header("<i4", false, "(4,)");
    short.extend([0u8; 8]);
    std::fs::write(&path, short).unwrap();
    let err = strata::io::read(&path, &declared("A", Dtype::I32, 1)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("cannot read input `A` from {}", path.display())),
        "{err}"
    );

    let path = dir.join("garbage.npy");
    std::fs::write(&path, b"not numpy at all").unwrap();
    let err = strata::io::read(&path, &declared("A", Dtype::I32, 1)).unwrap_err();
    assert!(err.to_string().contains("not a .npy file"), "{err}");

    let err = strata::io::read(&dir.join("x.txt"), &declared("A", Dtype::I32, 1)).unwrap_err();
    assert!(
        err.to_string().contains("give a .npy or .png file"),
        "{err}"
    );
}

#[test]
fn png_round_trips_u8_and_u16_in_every_channel_layout() {
    let dir = temp_dir("png-round-trip");
    let mut rng = StdRng::seed_from_u64(2);
    for dtype in [Dtype::U8, Dtype::U16] {
        for shape in [
            vec![5usize, 7],
            vec![5, 7, 1],
            vec![5, 7, 2],
            vec![4, 3, 3],
            vec![2, 6, 4],
        ] {
            let buffer = buffer_with_extremes(dtype, &shape, &mut rng);
            let path = dir.join(format!("{dtype}-{}.png", shape.len()));
            strata::io::write(&path, &buffer, "output `Y`").unwrap();
            let back = strata::io::read(&path, &declared("X", dtype, shape.len())).unwrap();
            assert_eq!(back, buffer, "{dtype} {shape:?}");
        }
    }
}

#[test]
fn png_refusals_say_why() {
    let dir = temp_dir("png-refusals");
    let rgb = Buffer::from_vec(&[2, 2, 3], vec![7u8; 12]).unwrap();
    let path = dir.join("rgb.png");
    strata::io::write(&path, &rgb, "output `Y`").unwrap();
    // A color image for a rank-2 input.
    let err = strata::io::read(&path, &declared("image", Dtype::U8, 2)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "input `image` has rank 2 ([S0, S1]), but {} holds an array of shape [2, 2, 3]",
            path.display()
        )
    );
    // An 8-bit image for a u16 input, and for an f32 one.
    let err = strata::io::read(&path, &declared("image", Dtype::U16, 3)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "input `image` should be u16, but {} holds an 8-bit image (u8)",
            path.display()
        )
    );
    assert!(strata::io::read(&path, &declared("image", Dtype::F32, 3)).is_err());
    // Arrays a PNG cannot hold.
    let f32s = Buffer::from_vec(&[2, 2], vec![0.5f32; 4]).unwrap();
    let err = strata::io::write(&dir.join("f.png"), &f32s, "output `Y`").unwrap_err();
    assert_eq!(
        err.to_string(),
        "output `Y` is f32[2, 2]: a PNG holds u8 or u16 arrays of shape [H, W] or [H, W, C] with C from 1 to 4"
    );
    let five = Buffer::from_vec(&[1, 1, 5], vec![0u8; 5]).unwrap();
    assert!(strata::io::write(&dir.join("five.png"), &five, "output `Y`").is_err());
    let empty = Buffer::from_vec(&[0, 3], Vec::<u8>::new()).unwrap();
    assert!(strata::io::write(&dir.join("empty.png"), &empty, "output `Y`").is_err());
    std::fs::write(dir.join("bad.png"), b"\x89PNG not really").unwrap();
    let err = strata::io::read(&dir.join("bad.png"), &declared("X", Dtype::U8, 2)).unwrap_err();
    assert!(err.to_string().contains("not a PNG image"), "{err}");
}

fn write_npy(path: &Path, buffer: &Buffer) {
    strata::io::write(path, buffer, "test input").unwrap();
}

fn read_npy(path: &Path, dtype: Dtype, rank: usize) -> Buffer {
    strata::io::read(path, &declared("Y", dtype, rank)).unwrap()
}

#[test]
fn run_infers_sizes_from_npy_inputs_and_writes_the_reference_answer() {
    let dir = temp_dir("run-npy");
    let mut rng = StdRng::seed_from_u64(3);
    let a = random_buffer(Dtype::F32, &[3, 4], &mut rng).unwrap();
    let b = random_buffer(Dtype::F32, &[4, 5], &mut rng).unwrap();
    let (pa, pb, pc) = (dir.join("a.npy"), dir.join("b.npy"), dir.join("c.npy"));
    write_npy(&pa, &a);
    write_npy(&pb, &b);
    let input_a = format!("A={}", pa.display());
    let input_b = format!("B={}", pb.display());
    let output = format!("C={}", pc.display());
    let matmul = example("matmul");
    let out = strata(&[
        "run",
        &matmul,
        "--input",
        &input_a,
        "--input",
        &input_b,
        "--output",
        &output,
        "--min-time",
        "0",
        "--schedule",
        "C: split(j, jo, ji, 4).vectorize(ji, 4)",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("matmul K=4,M=3,N=5 "), "{stdout}");
    assert!(stdout.contains("answer: matches the reference"), "{stdout}");
    assert!(stdout.contains("time: median"), "{stdout}");
    let written = format!("output: C f32[3, 5] written to {}", pc.display());
    assert!(stdout.contains(&written), "{stdout}");
    let args = Args::new().buffer("A", a).buffer("B", b);
    let expected = strata::evaluate(&pipeline("matmul"), &args).unwrap();
    let got = read_npy(&pc, Dtype::F32, 2);
    assert_eq!(got.shape(), &[3, 5]);
    agree(&got, &expected, 1e-4).unwrap();
}

#[test]
fn run_reads_and_writes_16_bit_pngs() {
    let dir = temp_dir("run-png16");
    let mut rng = StdRng::seed_from_u64(4);
    // The u16 blur wraps past 21845 (its kernel file says why); stay below.
    let values: Vec<u16> = (0..9 * 11).map(|_| rng.random_range(0..21845)).collect();
    let input = Buffer::from_vec(&[9, 11], values).unwrap();
    let (png_in, png_out, npy_out) = (dir.join("in.png"), dir.join("out.png"), dir.join("out.npy"));
    strata::io::write(&png_in, &input, "test input").unwrap();
    let arg_in = format!("input={}", png_in.display());
    let out = strata(&[
        "run",
        &example("blur3x3_u16"),
        "--input",
        &arg_in,
        "--output",
        png_out.to_str().unwrap(),
        "--output",
        npy_out.to_str().unwrap(),
        "--min-time",
        "0",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("blur3x3_u16 H=9,W=11 "));
    let expected = strata::evaluate(
        &pipeline("blur3x3_u16"),
        &Args::new().buffer("input", input),
    )
    .unwrap();
    assert_eq!(expected.shape(), &[7, 9]);
    let from_png = strata::io::read(&png_out, &declared("Y", Dtype::U16, 2)).unwrap();
    assert_eq!(from_png, expected);
    assert_eq!(read_npy(&npy_out, Dtype::U16, 2), expected);
}

#[test]
fn run_takes_scalar_parameters_and_an_8_bit_png() {
    let dir = temp_dir("run-param");
    let mut rng = StdRng::seed_from_u64(5);
    let image = random_buffer(Dtype::U8, &[6, 8], &mut rng).unwrap();
    let (png_in, npy_out) = (dir.join("in.png"), dir.join("out.npy"));
    strata::io::write(&png_in, &image, "test input").unwrap();
    let arg_in = format!("image={}", png_in.display());
    let out = strata(&[
        "run",
        &example("brighten"),
        "--input",
        &arg_in,
        "--param",
        "gain=1.5",
        "--param",
        "offset=-20",
        "--output",
        npy_out.to_str().unwrap(),
        "--min-time",
        "0",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let args = Args::new()
        .buffer("image", image)
        .scalar("gain", Value::F32(1.5))
        .scalar("offset", Value::F32(-20.0));
    let expected = strata::evaluate(&pipeline("brighten"), &args).unwrap();
    assert_eq!(read_npy(&npy_out, Dtype::U8, 2), expected);
    // --json says which files it wrote.
    let out = strata(&[
        "run",
        &example("brighten"),
        "--input",
        &arg_in,
        "--output",
        npy_out.to_str().unwrap(),
        "--min-time",
        "0",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["outputs"][0], npy_out.display().to_string());
    assert_eq!(json["correct"], true);
}

#[test]
fn run_makes_inputs_not_given_random_and_takes_missing_sizes_from_shape() {
    let dir = temp_dir("run-partial");
    let mut rng = StdRng::seed_from_u64(6);
    let a = random_buffer(Dtype::F32, &[2, 3], &mut rng).unwrap();
    let pa = dir.join("a.npy");
    write_npy(&pa, &a);
    let input_a = format!("A={}", pa.display());
    let matmul = example("matmul");
    let out = strata(&["run", &matmul, "--input", &input_a, "--min-time", "0"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("the shape leaves size `N` unbound (give --shape N=...)"),
        "{}",
        text(&out.stderr)
    );
    // --shape may repeat a size the file gives, and must agree with it.
    let out = strata(&[
        "run",
        &matmul,
        "--input",
        &input_a,
        "--shape",
        "N=4,M=2",
        "--min-time",
        "0",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("matmul K=3,M=2,N=4 "));
}

/// Runs `strata run` with `args` after the kernel file and expects it to fail with `message`
/// on stderr.
fn refused(kernel: &str, args: &[&str], message: &str) {
    let mut all = vec!["run", kernel, "--min-time", "0"];
    all.extend(args);
    let out = strata(&all);
    assert!(!out.status.success(), "{all:?} succeeded");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(message),
        "{all:?}:\nexpected: {message}\ngot: {stderr}"
    );
}

#[test]
fn run_refuses_bad_inputs_naming_the_input_the_file_and_the_difference() {
    let dir = temp_dir("run-refusals");
    let mut rng = StdRng::seed_from_u64(7);
    let file = |name: &str, dtype: Dtype, shape: &[usize], rng: &mut StdRng| {
        let path = dir.join(name);
        write_npy(&path, &random_buffer(dtype, shape, rng).unwrap());
        path.display().to_string()
    };
    let a34 = file("a34.npy", Dtype::F32, &[3, 4], &mut rng);
    let b52 = file("b52.npy", Dtype::F32, &[5, 2], &mut rng);
    let a_f64 = file("a_f64.npy", Dtype::F64, &[3, 4], &mut rng);
    let a_flat = file("a_flat.npy", Dtype::F32, &[12], &mut rng);
    let matmul = example("matmul");
    let m = matmul.as_str();
    let a = format!("A={a34}");
    refused(
        m,
        &["--input", &format!("A={a_f64}")],
        &format!("error: input `A` should be f32, but {a_f64} holds f64"),
    );
    refused(
        m,
        &["--input", &format!("A={a_flat}")],
        &format!("error: input `A` has rank 2 ([M, K]), but {a_flat} holds an array of shape [12]"),
    );
    refused(
        m,
        &["--input", &a, "--input", &format!("B={b52}")],
        &format!(
            "error: size `K` is 4 from input `A` ({a34}, dimension 1) but 5 from input `B` ({b52}, dimension 0)"
        ),
    );
    refused(
        m,
        &["--input", &a, "--shape", "M=7,N=2"],
        &format!("error: size `M` is 7 from --shape M=7 but 3 from input `A` ({a34}, dimension 0)"),
    );
    let missing = dir.join("missing.npy").display().to_string();
    refused(
        m,
        &["--input", &format!("A={missing}"), "--shape", "N=2"],
        &format!("error: cannot read input `A` from {missing}: "),
    );
    refused(
        m,
        &["--input", &format!("Z={a34}")],
        "error: kernel `matmul` has no buffer input `Z` (its buffer inputs: A, B)",
    );
    refused(
        m,
        &["--input", &a, "--input", &a],
        "error: --input gives `A` more than once",
    );
    refused(
        m,
        &["--input", &a34],
        "is not NAME=FILE (e.g. --input A=a.npy)",
    );
    let brighten = example("brighten");
    refused(
        &brighten,
        &["--input", &format!("gain={a34}")],
        "error: `gain` is a scalar parameter of `brighten`: give it with --param gain=VALUE",
    );
    let png = dir.join("img.png");
    strata::io::write(&png, &Buffer::from_vec(&[2, 2], vec![1u8; 4]).unwrap(), "x").unwrap();
    refused(
        m,
        &["--input", &format!("A={}", png.display()), "--shape", "N=2"],
        &format!(
            "error: input `A` should be f32, but {} holds an 8-bit image (u8)",
            png.display()
        ),
    );
}

#[test]
fn run_refuses_a_file_whose_extent_differs_from_a_constant_one() {
    let dir = temp_dir("run-const");
    let kernel = dir.join("rows.strata");
    std::fs::write(
        &kernel,
        "kernel rows(X: f32[N, 3]) -> Y: f32[N] { Y(i) = X(i, 0) + X(i, 1) + X(i, 2); }\n",
    )
    .unwrap();
    let x = dir.join("x.npy");
    write_npy(&x, &Buffer::from_vec(&[2, 4], vec![0.0f32; 8]).unwrap());
    refused(
        kernel.to_str().unwrap(),
        &["--input", &format!("X={}", x.display())],
        &format!(
            "error: input `X` ({}) has shape [2, 4], but the kernel declares extent 3 in dimension 1",
            x.display()
        ),
    );
}

#[test]
fn run_refuses_bad_outputs_and_params_before_running() {
    let dir = temp_dir("run-out-refusals");
    let matmul = example("matmul");
    let m = matmul.as_str();
    let shape = ["--shape", "M=2,N=3,K=4"];
    let png = dir.join("c.png");
    let png_arg = png.display().to_string();
    refused(
        m,
        &[&shape[..], &["--output", &png_arg]].concat(),
        "error: output `C` is f32[2, 3]: a PNG holds u8 or u16 arrays",
    );
    assert!(
        !png.exists(),
        "nothing is written when the output cannot be"
    );
    refused(
        m,
        &[
            &shape[..],
            &["--output", &format!("D={}", dir.join("d.npy").display())],
        ]
        .concat(),
        "error: kernel `matmul` has no output `D` (its output is `C`)",
    );
    refused(
        m,
        &[
            &shape[..],
            &["--output", &dir.join("c.csv").display().to_string()],
        ]
        .concat(),
        "has no format strata knows: give a .npy or .png file",
    );
    refused(
        m,
        &[&shape[..], &["--param", "alpha=1"]].concat(),
        "error: kernel `matmul` has no scalar parameter `alpha` (its parameters: none)",
    );
    let brighten = example("brighten");
    let b = ["--shape", "H=2,W=2"];
    refused(
        &brighten,
        &[&b[..], &["--param", "gain=fast"]].concat(),
        "error: --param gain=fast: not a value of type f32",
    );
    let u8_param = dir.join("levels.strata");
    std::fs::write(
        &u8_param,
        "kernel levels(X: u8[N], t: u8) -> Y: bool[N] { Y(i) = X(i) > t; }\n",
    )
    .unwrap();
    refused(
        u8_param.to_str().unwrap(),
        &["--shape", "N=4", "--param", "t=300"],
        "error: --param t=300: not a value of type u8",
    );
}

#[test]
fn run_without_check_still_writes_the_output() {
    let dir = temp_dir("run-no-check");
    let npy = dir.join("y.npy");
    let levels = dir.join("levels.strata");
    std::fs::write(
        &levels,
        "kernel levels(X: u8[N], t: u8) -> Y: bool[N] { Y(i) = X(i) > t; }\n",
    )
    .unwrap();
    let x = dir.join("x.npy");
    write_npy(
        &x,
        &Buffer::from_vec(&[4], vec![1u8, 50, 200, 100]).unwrap(),
    );
    let out = strata(&[
        "run",
        levels.to_str().unwrap(),
        "--input",
        &format!("X={}", x.display()),
        "--param",
        "t=99",
        "--output",
        npy.to_str().unwrap(),
        "--no-check",
        "--min-time",
        "0",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("answer: not checked"));
    let y = strata::io::read(&npy, &declared("Y", Dtype::Bool, 1)).unwrap();
    assert_eq!(y.as_slice::<bool>().unwrap(), &[false, false, true, true]);
}

/// Every byte of a `.npy` file and a PNG, changed or cut short, gives an array or an error,
/// never a panic (files are user input).
#[test]
fn damaged_files_are_errors_not_panics() {
    let dir = temp_dir("damaged");
    let mut rng = StdRng::seed_from_u64(8);
    let cases = [
        ("x.npy", Dtype::I32, vec![3usize, 5]),
        ("x.png", Dtype::U16, vec![4, 3, 3]),
    ];
    for (name, dtype, shape) in cases {
        let path = dir.join(name);
        strata::io::write(&path, &random_buffer(dtype, &shape, &mut rng).unwrap(), "x").unwrap();
        let good = std::fs::read(&path).unwrap();
        let decl = declared("X", dtype, shape.len());
        for trial in 0..300 {
            let mut bytes = good.clone();
            match trial % 3 {
                0 => bytes.truncate(rng.random_range(0..good.len())),
                _ => {
                    for _ in 0..rng.random_range(1..4) {
                        let i = rng.random_range(0..bytes.len());
                        bytes[i] = rng.random();
                    }
                }
            }
            std::fs::write(&path, &bytes).unwrap();
            let read = std::panic::catch_unwind(|| strata::io::read(&path, &decl).map(|_| ()));
            assert!(read.is_ok(), "{name} trial {trial}: reading panicked");
        }
    }
}

/// A `.npy` file whose header is `dict` (padded as numpy pads it), then `data`.
fn npy_with_header(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut dict = dict.to_string();
    while !(10 + dict.len() + 1).is_multiple_of(64) {
        dict.push(' ');
    }
    dict.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((dict.len() as u16).to_le_bytes());
    bytes.extend(dict.as_bytes());
    bytes.extend(data);
    bytes
}

/// Reading `bytes` as an f32 vector `A` fails; the message.
fn npy_refusal(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let err = strata::io::read(&path, &declared("A", Dtype::F32, 1)).unwrap_err();
    err.to_string()
}

/// The 144-byte file of issue 19: brackets nested 25 deep in an extra key took `npyz`'s
/// backtracking parser minutes (twice as long per level). Refused at once, saying why.
#[test]
fn a_deeply_nested_npy_header_is_refused_at_once() {
    let dir = temp_dir("npy-nested");
    let nested = format!("{}{}", "[".repeat(25), "]".repeat(25));
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': {nested}}}");
    let bytes = npy_with_header(&dict, &[0; 4]);
    assert_eq!(bytes.len(), 132);
    let start = std::time::Instant::now();
    let err = npy_refusal(&dir, "nested.npy", &bytes);
    assert!(
        err.contains("nests brackets deeper than 16 levels"),
        "{err}"
    );
    assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
}

/// numpy writes (and reads) exactly 'descr', 'fortran_order' and 'shape'.
#[test]
fn an_npy_header_has_numpys_three_keys() {
    let dir = temp_dir("npy-keys");
    let extra = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}";
    let err = npy_refusal(&dir, "extra.npy", &npy_with_header(extra, &[0; 4]));
    assert!(err.ends_with("its .npy header has the key `x`; numpy writes (and reads) only 'descr', 'fortran_order' and 'shape'"), "{err}");
    let missing = "{'descr': '<f4', 'shape': (1,)}";
    let err = npy_refusal(&dir, "missing.npy", &npy_with_header(missing, &[0; 4]));
    assert!(
        err.ends_with("its .npy header lacks the key 'fortran_order'"),
        "{err}"
    );
    let twice = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (1,)}";
    let err = npy_refusal(&dir, "twice.npy", &npy_with_header(twice, &[0; 4]));
    assert!(
        err.ends_with("its .npy header gives the key 'shape' twice"),
        "{err}"
    );
}

/// A header past numpy's 10 000 bytes is refused by its length, and a syntax error quotes a
/// few words of the header, not all of it (a 10 MB header was printed twice).
#[test]
fn npy_header_errors_quote_little_of_the_header() {
    let dir = temp_dir("npy-long");
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    let long = format!("{{'descr': '<f4', {}}}\n", "x".repeat(10 << 20));
    bytes.extend((long.len() as u32).to_le_bytes());
    bytes.extend(long.as_bytes());
    let err = npy_refusal(&dir, "long.npy", &bytes);
    assert!(
        err.ends_with(&format!(
            "its .npy header is {} bytes long; strata reads headers of at most 10000 bytes, as numpy does by default",
            long.len()
        )),
        "{}",
        &err[..err.len().min(300)]
    );
    let garbage = format!("{{'descr': '<f4', {}}}", "x".repeat(9000));
    let err = npy_refusal(&dir, "garbage.npy", &npy_with_header(&garbage, &[]));
    assert!(err.len() < 400, "{} bytes: {}", err.len(), &err[..300]);
    assert!(
        err.contains("at byte 17, expected a string, a number, True, False, ( or [, found `xxxx"),
        "{err}"
    );
}

/// '=f4' (native order, which numpy accepts) is the host's order.
#[test]
fn a_native_order_npy_reads_in_the_hosts_order() {
    let dir = temp_dir("npy-native");
    let data: Vec<u8> = [1.5f32, -2.0]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    let dict = "{'descr': '=f4', 'fortran_order': False, 'shape': (2,), }";
    let path = dir.join("native.npy");
    std::fs::write(&path, npy_with_header(dict, &data)).unwrap();
    let b = strata::io::read(&path, &declared("A", Dtype::F32, 1)).unwrap();
    assert_eq!(b.as_slice::<f32>().unwrap(), &[1.5, -2.0]);
}

/// A header claiming more elements than the file holds says both counts.
#[test]
fn a_short_npy_says_how_many_elements_it_holds_and_declares() {
    let dir = temp_dir("npy-short-data");
    let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }";
    let err = npy_refusal(&dir, "short.npy", &npy_with_header(dict, &[0; 13]));
    assert!(
        err.ends_with(
            "its .npy header declares shape [10] (10 elements of 4 bytes), but the file holds 13 bytes of data (3 elements)"
        ),
        "{err}"
    );
}

#[test]
fn an_empty_png_output_says_a_png_cannot_be_empty() {
    let dir = temp_dir("png-empty");
    let empty = Buffer::from_vec(&[0, 3], Vec::<u8>::new()).unwrap();
    let err = strata::io::write(&dir.join("empty.png"), &empty, "output `Y`").unwrap_err();
    assert_eq!(
        err.to_string(),
        "output `Y` is u8[0, 3]: a PNG cannot be empty (its height and width must be at least 1); write a .npy file instead"
    );
}

/// A write the disk refuses is an error for PNG as for `.npy` (the image crate's buffered
/// writer dropped its error: "written", exit 0, a truncated file).
#[cfg(target_os = "linux")]
#[test]
fn a_failed_write_is_an_error_in_every_format() {
    let dir = temp_dir("dev-full");
    let image = Buffer::from_vec(&[64, 64], vec![7u8; 64 * 64]).unwrap();
    for name in ["full.png", "full.npy"] {
        let link = dir.join(name);
        std::os::unix::fs::symlink("/dev/full", &link).unwrap();
        let err = strata::io::write(&link, &image, "output `Y`").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot write output `Y` to {}: No space left on device (os error 28)",
                link.display()
            )
        );
    }
}

/// `brighten`'s arguments with `image` read from `input` and the output written to `output`.
fn brighten_args(input: &Path, output: &str) -> Vec<String> {
    let input = format!("image={}", input.display());
    [
        "--input", &input, "--output", output, "--param", "gain=2", "--param", "offset=1",
    ]
    .map(String::from)
    .to_vec()
}

/// An output that is an input's file, under any of its names, is refused before anything is
/// written (it destroyed the input).
#[cfg(unix)]
#[test]
fn run_never_writes_over_an_input() {
    let dir = temp_dir("run-output-is-input");
    let x = dir.join("x.npy");
    write_npy(&x, &Buffer::from_vec(&[2, 3], vec![9u8; 6]).unwrap());
    let before = std::fs::read(&x).unwrap();
    let link = dir.join("link.npy");
    std::os::unix::fs::symlink(&x, &link).unwrap();
    let dotted = format!("{}/./x.npy", dir.display());
    let brighten = example("brighten");
    for output in [x.display().to_string(), dotted, link.display().to_string()] {
        let args = brighten_args(&x, &output);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(
            &brighten,
            &args,
            &format!(
                "error: refusing to write {output}: it is the file of input `image` ({}); write \
                 the output to another file",
                x.display()
            ),
        );
    }
    assert_eq!(std::fs::read(&x).unwrap(), before);
}

/// An output that is the tuning database, by name or through a link, is refused as `db export`
/// refuses it (it lost 8 measurements).
#[cfg(unix)]
#[test]
fn run_never_writes_over_the_tuning_database() {
    let dir = temp_dir("run-output-is-db");
    let x = dir.join("x.npy");
    write_npy(&x, &Buffer::from_vec(&[2, 3], vec![9u8; 6]).unwrap());
    let brighten = example("brighten");
    let named_npy = dir.join("tuning.npy");
    let db = dir.join("strata.db");
    let link = dir.join("link.npy");
    std::os::unix::fs::symlink(&db, &link).unwrap();
    for (db, output) in [(&named_npy, &named_npy), (&db, &link)] {
        strata::tuning_db::Db::open(db).unwrap();
        let before = std::fs::read(db).unwrap();
        let mut args = brighten_args(&x, &output.display().to_string());
        args.extend(["--db".to_string(), db.display().to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(
            &brighten,
            &args,
            &format!(
                "error: refusing to write {}: it is the tuning database {} or one of its files",
                output.display(),
                db.display()
            ),
        );
        assert_eq!(std::fs::read(db).unwrap(), before);
    }
}

/// An output that cannot be created is refused before the kernel is compiled (it was found
/// after the whole run): here the schedule's error would come first otherwise.
#[test]
fn run_refuses_an_output_it_cannot_create_before_compiling() {
    let dir = temp_dir("run-output-dir");
    let output = dir.join("missing").join("c.npy");
    refused(
        &example("matmul"),
        &[
            "--shape",
            "M=2,N=2,K=2",
            "--output",
            output.to_str().unwrap(),
            "--schedule",
            "C: vectorize(nowhere, 4)",
        ],
        &format!(
            "error: cannot write output `C` to {}: cannot create a file in {}: No such file or \
             directory",
            output.display(),
            dir.join("missing").display()
        ),
    );
}

/// A write that fails halfway (a file size limit) is an error and leaves the file that was
/// there (it truncated it first), and no temporary file.
#[cfg(unix)]
#[test]
fn a_failed_output_write_keeps_the_old_file() {
    let dir = temp_dir("run-output-ulimit");
    let output = dir.join("c.npy");
    write_npy(
        &output,
        &Buffer::from_vec(&[2, 2], vec![1.0f32; 4]).unwrap(),
    );
    let before = std::fs::read(&output).unwrap();
    let matmul = example("matmul");
    // 4 blocks of at most 1 KiB, ignoring SIGXFSZ so the write fails with EFBIG instead.
    let out = std::process::Command::new("sh")
        .args(["-c", "trap '' XFSZ; ulimit -f 4; exec \"$@\"", "sh"])
        .arg(env!("CARGO_BIN_EXE_strata"))
        .args([
            "run",
            &matmul,
            "--shape",
            "M=64,N=64,K=2",
            "--min-time",
            "0",
        ])
        .args(["--output", output.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    assert!(
        stderr.contains(&format!(
            "error: cannot write output `C` to {}: File too large",
            output.display()
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&output).unwrap(), before);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["c.npy"]);
}
