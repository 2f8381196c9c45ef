//! `strata::nd` (cargo feature `ndarray`): ndarray views in and out of compiled kernels without
//! copies, and the refusal of arrays that are not row-major.
#![cfg(feature = "ndarray")]

use ndarray::{s, Array2, Array3, ShapeBuilder};
use strata::{Args, Buffer, Sizes, ViewArgs};

fn matmul() -> (strata::Pipeline, strata::CompiledKernel) {
    let path = format!(
        "{}/examples/kernels/matmul.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    let pipeline = strata::parse_kernel_file(std::path::Path::new(&path))
        .unwrap()
        .remove(0);
    let schedule = strata::scheduler::schedule::text::parse_schedule(
        "C: tile(i, j, io, jo, ii, ji, 4, 8).vectorize(ji, 4)",
    )
    .unwrap();
    let kernel = strata::compile(&pipeline, &schedule, &Sizes::new()).unwrap();
    (pipeline, kernel)
}

#[test]
fn a_kernel_runs_on_ndarray_views_and_writes_into_one() {
    let (pipeline, kernel) = matmul();
    let a = Array2::from_shape_fn((5, 3), |(i, k)| (i as f32) - 0.5 * k as f32);
    let b = Array2::from_shape_fn((3, 9), |(k, j)| (k * 9 + j) as f32 * 0.25);
    let mut c = Array2::<f32>::zeros((5, 9));
    let args = ViewArgs::new()
        .buffer("A", strata::nd::view(a.view()).unwrap())
        .buffer("B", strata::nd::view(b.view()).unwrap());
    kernel
        .run_views_into(&args, strata::nd::view_mut(c.view_mut()).unwrap(), 2)
        .unwrap();
    // ndarray's own product, and the reference evaluator, agree with what was written.
    let expected = a.dot(&b);
    assert!(
        c.iter()
            .zip(expected.iter())
            .all(|(x, y)| (x - y).abs() <= 1e-4 * (1.0 + y.abs())),
        "{c} vs {expected}"
    );
    let owned = Args::new()
        .buffer(
            "A",
            Buffer::from_vec(&[5, 3], a.iter().copied().collect()).unwrap(),
        )
        .buffer(
            "B",
            Buffer::from_vec(&[3, 9], b.iter().copied().collect()).unwrap(),
        );
    let reference = strata::evaluate(&pipeline, &owned).unwrap();
    let reference = strata::nd::buffer_array::<f32>(&reference).unwrap();
    assert_eq!(reference.shape(), c.shape());
    let out = kernel.run(&owned, 1).unwrap();
    assert_eq!(
        strata::nd::buffer_array::<f32>(&out).unwrap(),
        c.view().into_dyn()
    );
}

#[test]
fn views_convert_back_to_ndarray_without_copying() {
    let a = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 100 + j * 10 + k) as i32);
    let view = strata::nd::view(a.view()).unwrap();
    assert_eq!(view.shape(), &[2, 3, 4]);
    assert_eq!(
        view.as_ptr(),
        a.as_ptr() as *const u8,
        "the view is the array's memory"
    );
    let back = strata::nd::array::<i32>(&view).unwrap();
    assert_eq!(back, a.view().into_dyn());
    assert!(
        strata::nd::array::<f32>(&view).is_none(),
        "wrong element type"
    );
}

#[test]
fn arrays_not_in_row_major_layout_are_refused() {
    let a = Array2::<f32>::zeros((3, 4).f());
    let err = strata::nd::view(a.view()).unwrap_err();
    assert_eq!(err.shape, vec![3, 4]);
    assert!(
        err.to_string()
            .contains("not in standard (row-major, contiguous) layout"),
        "{err}"
    );
    let b = Array2::<f32>::zeros((4, 6));
    assert!(
        strata::nd::view(b.slice(s![.., ..3])).is_err(),
        "a column slice is strided"
    );
    assert!(
        strata::nd::view(b.t()).is_err(),
        "a transpose is column-major"
    );
    let mut c = Array2::<f32>::zeros((4, 6));
    assert!(strata::nd::view_mut(c.slice_mut(s![.., 1..])).is_err());
    // A slice of whole rows is contiguous, so it is accepted.
    assert_eq!(
        strata::nd::view(b.slice(s![1..3, ..])).unwrap().shape(),
        &[2, 6]
    );
}
