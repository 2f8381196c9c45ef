//! Owned, typed, row-major buffers: the inputs and outputs of the reference evaluator (and of
//! every later rung's tests). The last index is contiguous, as in numpy and ndarray.
//!
//! Also borrowed views of the caller's memory (`BufferView`, `BufferViewMut`, `ViewArgs`): a
//! slice and a shape, which compiled kernels read and write in place. A view keeps its element
//! type in an enum of slices rather than a type parameter, so one argument map holds inputs of
//! different types; both kinds are checked by the same code (`BufferShape`, `Signature::bind`).

use crate::dtype::Dtype;
use crate::value::Value;

/// The elements of a buffer, one vector per element type.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// `bool` elements.
    Bool(Vec<bool>),
    /// `u8` elements.
    U8(Vec<u8>),
    /// `u16` elements.
    U16(Vec<u16>),
    /// `u32` elements.
    U32(Vec<u32>),
    /// `i8` elements.
    I8(Vec<i8>),
    /// `i16` elements.
    I16(Vec<i16>),
    /// `i32` elements.
    I32(Vec<i32>),
    /// `i64` elements.
    I64(Vec<i64>),
    /// `f32` elements.
    F32(Vec<f32>),
    /// `f64` elements.
    F64(Vec<f64>),
}

/// A row-major n-dimensional array of one element type.
#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    shape: Vec<usize>,
    data: Data,
}

/// A Rust type that is an element type of the language.
pub trait Element: Copy + 'static {
    /// The element type.
    const DTYPE: Dtype;
    /// The values as a `Data` of their type.
    fn into_data(values: Vec<Self>) -> Data;
    /// The elements of `data`, if they are of this type.
    fn slice(data: &Data) -> Option<&[Self]>;
}

macro_rules! element {
    ($t:ty, $variant:ident) => {
        impl Element for $t {
            const DTYPE: Dtype = Dtype::$variant;
            fn into_data(values: Vec<Self>) -> Data {
                Data::$variant(values)
            }
            fn slice(data: &Data) -> Option<&[Self]> {
                match data {
                    Data::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
element!(bool, Bool);
element!(u8, U8);
element!(u16, U16);
element!(u32, U32);
element!(i8, I8);
element!(i16, I16);
element!(i32, I32);
element!(i64, I64);
element!(f32, F32);
element!(f64, F64);

/// Runs `$body` with `$v` bound to the vector inside any `Data`.
macro_rules! with_vec {
    ($data:expr, |$v:ident| $body:expr) => {
        match $data {
            Data::Bool($v) => $body,
            Data::U8($v) => $body,
            Data::U16($v) => $body,
            Data::U32($v) => $body,
            Data::I8($v) => $body,
            Data::I16($v) => $body,
            Data::I32($v) => $body,
            Data::I64($v) => $body,
            Data::F32($v) => $body,
            Data::F64($v) => $body,
        }
    };
}

/// A buffer could not be made: its shape and data disagree, its element count does not fit a
/// `usize`, or the memory for it could not be allocated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ShapeError {
    /// The number of values is not the product of the extents.
    #[error("a buffer of shape {shape:?} needs {expected} elements, found {found}")]
    WrongLength {
        /// The shape asked for.
        shape: Vec<usize>,
        /// The product of its extents.
        expected: usize,
        /// The number of values given.
        found: usize,
    },
    /// The element count does not fit a `usize`.
    #[error("a buffer of shape {0:?} has more elements than this machine can address")]
    TooLarge(Vec<usize>),
    /// The allocation failed.
    #[error("could not allocate {bytes} bytes for a buffer of shape {shape:?}")]
    OutOfMemory {
        /// The shape asked for.
        shape: Vec<usize>,
        /// The bytes it needs.
        bytes: usize,
    },
}

/// The number of elements of `shape`, if it fits a `usize`.
pub fn element_count(shape: &[usize]) -> Result<usize, ShapeError> {
    shape
        .iter()
        .try_fold(1usize, |n, &e| n.checked_mul(e))
        .ok_or_else(|| ShapeError::TooLarge(shape.to_vec()))
}

/// `n` copies of `value` (the elements of a buffer of `shape`), or an error instead of an abort
/// when the memory is not there.
pub fn filled<T: Clone>(shape: &[usize], n: usize, value: T) -> Result<Vec<T>, ShapeError> {
    let mut v = reserved(shape, n)?;
    v.resize(n, value);
    Ok(v)
}

/// An empty vector with room for `n` elements of a buffer of `shape`, or the error naming the
/// bytes where the memory is not there.
fn reserved<T>(shape: &[usize], n: usize) -> Result<Vec<T>, ShapeError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| ShapeError::OutOfMemory {
            shape: shape.to_vec(),
            bytes: n.saturating_mul(std::mem::size_of::<T>()),
        })?;
    Ok(v)
}

/// A copy of `values`, or an error instead of an abort when the memory is not there.
fn copied<T: Clone>(shape: &[usize], values: &[T]) -> Result<Vec<T>, ShapeError> {
    let mut v = reserved(shape, values.len())?;
    v.extend_from_slice(values);
    Ok(v)
}

impl Buffer {
    /// A buffer of `shape` filled with zeros (`false`); an error if its size overflows or the
    /// memory cannot be allocated.
    pub fn zeros(dtype: Dtype, shape: &[usize]) -> Result<Buffer, ShapeError> {
        let n = element_count(shape)?;
        let data = match dtype {
            Dtype::Bool => Data::Bool(filled(shape, n, false)?),
            Dtype::U8 => Data::U8(filled(shape, n, 0)?),
            Dtype::U16 => Data::U16(filled(shape, n, 0)?),
            Dtype::U32 => Data::U32(filled(shape, n, 0)?),
            Dtype::I8 => Data::I8(filled(shape, n, 0)?),
            Dtype::I16 => Data::I16(filled(shape, n, 0)?),
            Dtype::I32 => Data::I32(filled(shape, n, 0)?),
            Dtype::I64 => Data::I64(filled(shape, n, 0)?),
            Dtype::F32 => Data::F32(filled(shape, n, 0.0)?),
            Dtype::F64 => Data::F64(filled(shape, n, 0.0)?),
        };
        Ok(Buffer {
            shape: shape.to_vec(),
            data,
        })
    }

    /// A buffer holding `values` in row-major order.
    pub fn from_vec<T: Element>(shape: &[usize], values: Vec<T>) -> Result<Buffer, ShapeError> {
        let expected = element_count(shape)?;
        if values.len() != expected {
            return Err(ShapeError::WrongLength {
                shape: shape.to_vec(),
                expected,
                found: values.len(),
            });
        }
        Ok(Buffer {
            shape: shape.to_vec(),
            data: T::into_data(values),
        })
    }

    /// A copy of the buffer, or an error instead of an abort when the memory is not there.
    pub fn try_clone(&self) -> Result<Buffer, ShapeError> {
        let shape = &self.shape;
        let data = match &self.data {
            Data::Bool(v) => Data::Bool(copied(shape, v)?),
            Data::U8(v) => Data::U8(copied(shape, v)?),
            Data::U16(v) => Data::U16(copied(shape, v)?),
            Data::U32(v) => Data::U32(copied(shape, v)?),
            Data::I8(v) => Data::I8(copied(shape, v)?),
            Data::I16(v) => Data::I16(copied(shape, v)?),
            Data::I32(v) => Data::I32(copied(shape, v)?),
            Data::I64(v) => Data::I64(copied(shape, v)?),
            Data::F32(v) => Data::F32(copied(shape, v)?),
            Data::F64(v) => Data::F64(copied(shape, v)?),
        };
        Ok(Buffer {
            shape: shape.clone(),
            data,
        })
    }

    /// The extents, outermost first (row-major: the last is contiguous).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        match &self.data {
            Data::Bool(_) => Dtype::Bool,
            Data::U8(_) => Dtype::U8,
            Data::U16(_) => Dtype::U16,
            Data::U32(_) => Dtype::U32,
            Data::I8(_) => Dtype::I8,
            Data::I16(_) => Dtype::I16,
            Data::I32(_) => Dtype::I32,
            Data::I64(_) => Dtype::I64,
            Data::F32(_) => Dtype::F32,
            Data::F64(_) => Dtype::F64,
        }
    }

    /// The elements, as a vector of the element type.
    pub fn data(&self) -> &Data {
        &self.data
    }

    /// The elements' bytes (little-endian, row-major; `bool` as one byte 0 or 1).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() * self.dtype().bytes());
        self.append_bytes(&mut out);
        out
    }

    /// `to_bytes`, or an error instead of an abort when the memory is not there.
    pub fn try_to_bytes(&self) -> Result<Vec<u8>, ShapeError> {
        let mut out = reserved(&self.shape, self.len().saturating_mul(self.dtype().bytes()))?;
        self.append_bytes(&mut out);
        Ok(out)
    }

    fn append_bytes(&self, out: &mut Vec<u8>) {
        for i in 0..self.len() {
            match self.get_flat(i) {
                Some(Value::Bool(x)) => out.push(x as u8),
                Some(Value::U8(x)) => out.push(x),
                Some(Value::I8(x)) => out.extend(x.to_le_bytes()),
                Some(Value::U16(x)) => out.extend(x.to_le_bytes()),
                Some(Value::I16(x)) => out.extend(x.to_le_bytes()),
                Some(Value::U32(x)) => out.extend(x.to_le_bytes()),
                Some(Value::I32(x)) => out.extend(x.to_le_bytes()),
                Some(Value::I64(x)) => out.extend(x.to_le_bytes()),
                Some(Value::F32(x)) => out.extend(x.to_le_bytes()),
                Some(Value::F64(x)) => out.extend(x.to_le_bytes()),
                None => {}
            }
        }
    }

    /// A buffer from the bytes `to_bytes` gives; an error where their length does not fit
    /// `dtype` and `shape` (`found` counts whole elements) or the memory is not there.
    pub fn from_bytes(dtype: Dtype, shape: &[usize], bytes: &[u8]) -> Result<Buffer, ShapeError> {
        let size = dtype.bytes();
        let n = element_count(shape)?;
        if Some(bytes.len()) != n.checked_mul(size) {
            return Err(ShapeError::WrongLength {
                shape: shape.to_vec(),
                expected: n,
                found: bytes.len() / size,
            });
        }
        let mut buffer = Buffer::zeros(dtype, shape)?;
        for (i, chunk) in bytes.chunks(size).enumerate() {
            let mut wide = [0u8; 8];
            wide[..size].copy_from_slice(chunk);
            let bits = u64::from_le_bytes(wide);
            let v = match dtype {
                Dtype::Bool => Value::Bool(bits != 0),
                Dtype::U8 => Value::U8(bits as u8),
                Dtype::I8 => Value::I8(bits as u8 as i8),
                Dtype::U16 => Value::U16(bits as u16),
                Dtype::I16 => Value::I16(bits as u16 as i16),
                Dtype::U32 => Value::U32(bits as u32),
                Dtype::I32 => Value::I32(bits as u32 as i32),
                Dtype::I64 => Value::I64(bits as i64),
                Dtype::F32 => Value::F32(f32::from_bits(bits as u32)),
                Dtype::F64 => Value::F64(f64::from_bits(bits)),
            };
            buffer.set_flat(i, v);
        }
        Ok(buffer)
    }

    /// The address of the first element (elements are contiguous, row-major; `bool` is one
    /// byte holding 0 or 1). For code that reads the buffer through raw pointers.
    pub fn as_ptr(&self) -> *const u8 {
        with_vec!(&self.data, |v| v.as_ptr() as *const u8)
    }

    /// The mutable address of the first element, for code that writes the buffer. Writers must
    /// store valid values of the element type (0 or 1 for `bool`).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        with_vec!(&mut self.data, |v| v.as_mut_ptr() as *mut u8)
    }

    /// The elements as a slice of `T`, if `T` is the buffer's element type.
    pub fn as_slice<T: Element>(&self) -> Option<&[T]> {
        T::slice(&self.data)
    }

    /// The number of elements (the product of the extents).
    pub fn len(&self) -> usize {
        with_vec!(&self.data, |v| v.len())
    }

    /// Whether some extent is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The flat offset of a multi-index, if it is inside the buffer.
    pub fn offset(&self, index: &[i64]) -> Option<usize> {
        if index.len() != self.shape.len() {
            return None;
        }
        let mut offset = 0usize;
        for (&i, &extent) in index.iter().zip(&self.shape) {
            let i = usize::try_from(i).ok().filter(|&i| i < extent)?;
            offset = offset * extent + i;
        }
        Some(offset)
    }

    /// The element at flat offset `i`.
    pub fn get_flat(&self, i: usize) -> Option<Value> {
        Some(match &self.data {
            Data::Bool(v) => Value::Bool(*v.get(i)?),
            Data::U8(v) => Value::U8(*v.get(i)?),
            Data::U16(v) => Value::U16(*v.get(i)?),
            Data::U32(v) => Value::U32(*v.get(i)?),
            Data::I8(v) => Value::I8(*v.get(i)?),
            Data::I16(v) => Value::I16(*v.get(i)?),
            Data::I32(v) => Value::I32(*v.get(i)?),
            Data::I64(v) => Value::I64(*v.get(i)?),
            Data::F32(v) => Value::F32(*v.get(i)?),
            Data::F64(v) => Value::F64(*v.get(i)?),
        })
    }

    /// The element at a multi-index, if it is inside the buffer.
    pub fn get(&self, index: &[i64]) -> Option<Value> {
        self.get_flat(self.offset(index)?)
    }

    /// Stores `value` (cast to the buffer's type) at flat offset `i`; false if out of range.
    pub fn set_flat(&mut self, i: usize, value: Value) -> bool {
        if i >= self.len() {
            return false;
        }
        let value = value.cast(self.dtype());
        match (&mut self.data, value) {
            (Data::Bool(v), Value::Bool(x)) => v[i] = x,
            (Data::U8(v), Value::U8(x)) => v[i] = x,
            (Data::U16(v), Value::U16(x)) => v[i] = x,
            (Data::U32(v), Value::U32(x)) => v[i] = x,
            (Data::I8(v), Value::I8(x)) => v[i] = x,
            (Data::I16(v), Value::I16(x)) => v[i] = x,
            (Data::I32(v), Value::I32(x)) => v[i] = x,
            (Data::I64(v), Value::I64(x)) => v[i] = x,
            (Data::F32(v), Value::F32(x)) => v[i] = x,
            (Data::F64(v), Value::F64(x)) => v[i] = x,
            _ => return false,
        }
        true
    }
}

/// What the call boundary (`Signature::bind`) reads of a buffer argument: its element type,
/// shape and element count. Owned buffers and borrowed views are checked by the same code.
pub trait BufferShape {
    /// The element type.
    fn dtype(&self) -> Dtype;
    /// The extents, outermost first.
    fn shape(&self) -> &[usize];
    /// The number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl BufferShape for Buffer {
    fn dtype(&self) -> Dtype {
        Buffer::dtype(self)
    }
    fn shape(&self) -> &[usize] {
        Buffer::shape(self)
    }
    fn len(&self) -> usize {
        Buffer::len(self)
    }
}

/// A caller's elements, borrowed: one variant per element type, so a view stays typed without
/// a type parameter (one argument map holds inputs of different types).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SliceRef<'a> {
    /// `bool` elements.
    Bool(&'a [bool]),
    /// `u8` elements.
    U8(&'a [u8]),
    /// `u16` elements.
    U16(&'a [u16]),
    /// `u32` elements.
    U32(&'a [u32]),
    /// `i8` elements.
    I8(&'a [i8]),
    /// `i16` elements.
    I16(&'a [i16]),
    /// `i32` elements.
    I32(&'a [i32]),
    /// `i64` elements.
    I64(&'a [i64]),
    /// `f32` elements.
    F32(&'a [f32]),
    /// `f64` elements.
    F64(&'a [f64]),
}

/// A caller's elements, borrowed mutably (an output written in place).
#[derive(Debug, PartialEq)]
pub enum SliceMut<'a> {
    /// `bool` elements.
    Bool(&'a mut [bool]),
    /// `u8` elements.
    U8(&'a mut [u8]),
    /// `u16` elements.
    U16(&'a mut [u16]),
    /// `u32` elements.
    U32(&'a mut [u32]),
    /// `i8` elements.
    I8(&'a mut [i8]),
    /// `i16` elements.
    I16(&'a mut [i16]),
    /// `i32` elements.
    I32(&'a mut [i32]),
    /// `i64` elements.
    I64(&'a mut [i64]),
    /// `f32` elements.
    F32(&'a mut [f32]),
    /// `f64` elements.
    F64(&'a mut [f64]),
}

/// A Rust element type's borrowed slices as `SliceRef`/`SliceMut` (the element types of the
/// language; implemented for the same types as [`Element`]).
pub trait ViewElement: Element {
    /// The values as a `SliceRef` of their type.
    fn slice_ref(values: &[Self]) -> SliceRef<'_>;
    /// The values as a `SliceMut` of their type.
    fn slice_mut(values: &mut [Self]) -> SliceMut<'_>;
    /// The elements of `slice`, if they are of this type.
    fn from_ref<'a>(slice: SliceRef<'a>) -> Option<&'a [Self]>;
}

macro_rules! view_element {
    ($t:ty, $variant:ident) => {
        impl ViewElement for $t {
            fn slice_ref(values: &[Self]) -> SliceRef<'_> {
                SliceRef::$variant(values)
            }
            fn slice_mut(values: &mut [Self]) -> SliceMut<'_> {
                SliceMut::$variant(values)
            }
            fn from_ref<'a>(slice: SliceRef<'a>) -> Option<&'a [Self]> {
                match slice {
                    SliceRef::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
view_element!(bool, Bool);
view_element!(u8, U8);
view_element!(u16, U16);
view_element!(u32, U32);
view_element!(i8, I8);
view_element!(i16, I16);
view_element!(i32, I32);
view_element!(i64, I64);
view_element!(f32, F32);
view_element!(f64, F64);

/// Runs `$body` with `$v` bound to the slice inside a `SliceRef` or `SliceMut`.
macro_rules! with_slice {
    ($kind:ident, $slice:expr, |$v:ident| $body:expr) => {
        match $slice {
            $kind::Bool($v) => $body,
            $kind::U8($v) => $body,
            $kind::U16($v) => $body,
            $kind::U32($v) => $body,
            $kind::I8($v) => $body,
            $kind::I16($v) => $body,
            $kind::I32($v) => $body,
            $kind::I64($v) => $body,
            $kind::F32($v) => $body,
            $kind::F64($v) => $body,
        }
    };
}

/// The element type of a `SliceRef`/`SliceMut` variant.
macro_rules! slice_dtype {
    ($kind:ident, $slice:expr) => {
        match $slice {
            $kind::Bool(_) => Dtype::Bool,
            $kind::U8(_) => Dtype::U8,
            $kind::U16(_) => Dtype::U16,
            $kind::U32(_) => Dtype::U32,
            $kind::I8(_) => Dtype::I8,
            $kind::I16(_) => Dtype::I16,
            $kind::I32(_) => Dtype::I32,
            $kind::I64(_) => Dtype::I64,
            $kind::F32(_) => Dtype::F32,
            $kind::F64(_) => Dtype::F64,
        }
    };
}

/// Checks that `len` elements fill `shape` exactly (the rule `Buffer::from_vec` applies).
fn check_view_len(shape: &[usize], len: usize) -> Result<(), ShapeError> {
    let expected = element_count(shape)?;
    if len != expected {
        return Err(ShapeError::WrongLength {
            shape: shape.to_vec(),
            expected,
            found: len,
        });
    }
    Ok(())
}

/// A row-major n-dimensional array in the caller's memory: a borrowed slice and a shape. A
/// compiled kernel reads it in place (`CompiledKernel::run_views`), with the same checks as an
/// owned [`Buffer`].
#[derive(Clone, Debug, PartialEq)]
pub struct BufferView<'a> {
    shape: Vec<usize>,
    data: SliceRef<'a>,
}

impl<'a> BufferView<'a> {
    /// A view of `values` as an array of `shape` (row-major); an error unless the slice holds
    /// exactly the shape's element count.
    pub fn new<T: ViewElement>(values: &'a [T], shape: &[usize]) -> Result<Self, ShapeError> {
        check_view_len(shape, values.len())?;
        Ok(BufferView {
            shape: shape.to_vec(),
            data: T::slice_ref(values),
        })
    }

    /// The extents, outermost first (row-major: the last is contiguous).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        slice_dtype!(SliceRef, self.data)
    }

    /// The number of elements (the product of the extents).
    pub fn len(&self) -> usize {
        with_slice!(SliceRef, self.data, |v| v.len())
    }

    /// Whether some extent is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements, as a slice of the element type.
    pub fn data(&self) -> SliceRef<'a> {
        self.data
    }

    /// The elements as a slice of `T`, if `T` is the view's element type.
    pub fn as_slice<T: ViewElement>(&self) -> Option<&'a [T]> {
        T::from_ref(self.data)
    }

    /// The address of the first element, for code that reads the view through raw pointers.
    pub fn as_ptr(&self) -> *const u8 {
        with_slice!(SliceRef, self.data, |v| v.as_ptr() as *const u8)
    }
}

impl<'a> From<&'a Buffer> for BufferView<'a> {
    /// An owned buffer seen as a view (no copy), so owned and borrowed arguments mix.
    fn from(buffer: &'a Buffer) -> Self {
        let data = with_vec!(&buffer.data, |v| ViewElement::slice_ref(v.as_slice()));
        BufferView {
            shape: buffer.shape.clone(),
            data,
        }
    }
}

impl BufferShape for BufferView<'_> {
    fn dtype(&self) -> Dtype {
        BufferView::dtype(self)
    }
    fn shape(&self) -> &[usize] {
        BufferView::shape(self)
    }
    fn len(&self) -> usize {
        BufferView::len(self)
    }
}

/// A row-major n-dimensional array in the caller's memory, borrowed mutably: where a compiled
/// kernel writes its output in place (`CompiledKernel::run_views_into`).
#[derive(Debug, PartialEq)]
pub struct BufferViewMut<'a> {
    shape: Vec<usize>,
    data: SliceMut<'a>,
}

impl<'a> BufferViewMut<'a> {
    /// A mutable view of `values` as an array of `shape` (row-major); an error unless the slice
    /// holds exactly the shape's element count.
    pub fn new<T: ViewElement>(values: &'a mut [T], shape: &[usize]) -> Result<Self, ShapeError> {
        check_view_len(shape, values.len())?;
        Ok(BufferViewMut {
            shape: shape.to_vec(),
            data: T::slice_mut(values),
        })
    }

    /// The extents, outermost first (row-major: the last is contiguous).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> Dtype {
        slice_dtype!(SliceMut, self.data)
    }

    /// The number of elements (the product of the extents).
    pub fn len(&self) -> usize {
        with_slice!(SliceMut, &self.data, |v| v.len())
    }

    /// Whether some extent is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The mutable address of the first element, for code that writes the view. Writers must
    /// store valid values of the element type (0 or 1 for `bool`).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        with_slice!(SliceMut, &mut self.data, |v| v.as_mut_ptr() as *mut u8)
    }
}

impl<'a> From<&'a mut Buffer> for BufferViewMut<'a> {
    /// An owned buffer seen as a mutable view (no copy).
    fn from(buffer: &'a mut Buffer) -> Self {
        let data = with_vec!(&mut buffer.data, |v| ViewElement::slice_mut(
            v.as_mut_slice()
        ));
        BufferViewMut {
            shape: buffer.shape.clone(),
            data,
        }
    }
}

/// The arguments of a call on borrowed memory: buffer views and scalar parameters, by name
/// (what [`crate::Args`] is for owned buffers).
#[derive(Clone, Debug, Default)]
pub struct ViewArgs<'a> {
    /// The buffer inputs, by name.
    pub buffers: std::collections::BTreeMap<String, BufferView<'a>>,
    /// The scalar parameters, by name.
    pub scalars: std::collections::BTreeMap<String, Value>,
}

impl<'a> ViewArgs<'a> {
    /// No buffers and no scalars yet.
    pub fn new() -> Self {
        ViewArgs::default()
    }

    /// Adds a view (or an owned buffer, through `BufferView::from(&buffer)`).
    pub fn buffer(mut self, name: &str, view: impl Into<BufferView<'a>>) -> Self {
        self.buffers.insert(name.to_string(), view.into());
        self
    }

    /// Adds the scalar parameter `name`.
    pub fn scalar(mut self, name: &str, value: Value) -> Self {
        self.scalars.insert(name.to_string(), value);
        self
    }
}
