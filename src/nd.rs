//! `ndarray` interop (cargo feature `ndarray`): a row-major (standard layout) `ArrayView` or
//! `ArrayViewMut` is a strata buffer view without a copy, and a view or owned buffer is an
//! `ArrayViewD`.
//!
//! ```
//! use ndarray::Array2;
//! let kernel = strata::kernel! {
//!     kernel scale(X: f32[M, N], alpha: f32) -> Y: f32[M, N] { Y(i, j) = alpha * X(i, j); }
//! };
//! let compiled = strata::compile(&kernel, &strata::Schedule::new(), &strata::Sizes::new())?;
//! let x = Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f32);
//! let mut y = Array2::<f32>::zeros((2, 3));
//! let args = strata::ViewArgs::new()
//!     .buffer("X", strata::nd::view(x.view())?)
//!     .scalar("alpha", strata::Value::F32(2.0));
//! compiled.run_views_into(&args, strata::nd::view_mut(y.view_mut())?, 1)?;
//! assert_eq!(y, &x * 2.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use ndarray::{ArrayView, ArrayViewD, ArrayViewMut, Dimension, IxDyn};
use strata_dsl::buffer::{BufferView, BufferViewMut, Element, ViewElement};
use strata_dsl::Buffer;

/// An array that is not in standard (row-major, contiguous) layout: strata's kernels index
/// row-major memory, so such an array must be copied first (`array.as_standard_layout()`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("an array of shape {shape:?} with strides {strides:?} is not in standard (row-major, contiguous) layout: copy it with .as_standard_layout() first")]
pub struct LayoutError {
    /// The array's shape.
    pub shape: Vec<usize>,
    /// Its strides, in elements.
    pub strides: Vec<isize>,
}

fn layout_error(shape: &[usize], strides: &[isize]) -> LayoutError {
    LayoutError {
        shape: shape.to_vec(),
        strides: strides.to_vec(),
    }
}

/// A standard-layout array view as a strata view of the same memory.
pub fn view<'a, T: ViewElement, D: Dimension>(
    array: ArrayView<'a, T, D>,
) -> Result<BufferView<'a>, LayoutError> {
    let shape = array.shape().to_vec();
    let slice = (array.to_slice()).ok_or_else(|| layout_error(&shape, array.strides()))?;
    // The slice holds exactly the shape's elements, so this cannot fail.
    BufferView::new(slice, &shape).map_err(|_| layout_error(&shape, &[]))
}

/// A standard-layout mutable array view as a strata mutable view (where a kernel writes its
/// output in place).
pub fn view_mut<'a, T: ViewElement, D: Dimension>(
    array: ArrayViewMut<'a, T, D>,
) -> Result<BufferViewMut<'a>, LayoutError> {
    let shape = array.shape().to_vec();
    let strides = array.strides().to_vec();
    let slice = (array.into_slice()).ok_or_else(|| layout_error(&shape, &strides))?;
    BufferViewMut::new(slice, &shape).map_err(|_| layout_error(&shape, &strides))
}

/// A strata view as an `ArrayViewD` of its elements, if `T` is its element type.
pub fn array<'a, T: ViewElement>(view: &BufferView<'a>) -> Option<ArrayViewD<'a, T>> {
    ArrayView::from_shape(IxDyn(view.shape()), view.as_slice::<T>()?).ok()
}

/// An owned buffer as an `ArrayViewD` (no copy), if `T` is its element type.
pub fn buffer_array<T: Element>(buffer: &Buffer) -> Option<ArrayViewD<'_, T>> {
    ArrayView::from_shape(IxDyn(buffer.shape()), buffer.as_slice::<T>()?).ok()
}
