//! `.npy` files (NumPy's `numpy.save` format) through the `npyz` crate: every element type of
//! the language, C order, any byte order on reading (little-endian on writing).

use super::{check_rank, read_error, write_error, Declared, IoError};
use npyz::{DType, Order, TypeChar, WriterBuilder};
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;
use strata_dsl::signature::MAX_ELEMENTS;
use strata_dsl::{Buffer, Data, Dtype};

/// The language's element type of a `.npy` type string (`<f4`, `|b1`, `>i8`), if it has one.
fn dtype_of(dtype: &DType) -> Option<Dtype> {
    let DType::Plain(ty) = dtype else {
        return None;
    };
    Some(match (ty.type_char(), ty.size_field()) {
        (TypeChar::Bool, 1) => Dtype::Bool,
        (TypeChar::Uint, 1) => Dtype::U8,
        (TypeChar::Uint, 2) => Dtype::U16,
        (TypeChar::Uint, 4) => Dtype::U32,
        (TypeChar::Int, 1) => Dtype::I8,
        (TypeChar::Int, 2) => Dtype::I16,
        (TypeChar::Int, 4) => Dtype::I32,
        (TypeChar::Int, 8) => Dtype::I64,
        (TypeChar::Float, 4) => Dtype::F32,
        (TypeChar::Float, 8) => Dtype::F64,
        _ => return None,
    })
}

/// How an error names a file's element type: strata's name where it has one, else NumPy's
/// type string (`u64`, `'<c8'`).
fn describe(dtype: &DType) -> String {
    match dtype_of(dtype) {
        Some(t) => t.to_string(),
        None => format!("{} (not a strata element type)", dtype.descr()),
    }
}

pub(super) fn read(path: &Path, declared: &Declared) -> Result<Buffer, IoError> {
    let what = &declared.what;
    let file = std::fs::File::open(path).map_err(|e| read_error(what, path, e))?;
    let npy = npyz::NpyFile::new(BufReader::new(file))
        .map_err(|e| read_error(what, path, format!("not a .npy file ({e})")))?;
    let dtype = npy.dtype();
    if dtype_of(&dtype) != Some(declared.dtype) {
        return Err(IoError::WrongDtype {
            what: what.clone(),
            path: path.to_path_buf(),
            expected: declared.dtype,
            actual: describe(&dtype),
        });
    }
    if npy.order() == Order::Fortran {
        return Err(IoError::FortranOrder {
            path: path.to_path_buf(),
        });
    }
    let shape = shape_of(npy.shape(), what, path)?;
    check_rank(path, declared, &shape)?;
    let buffer = match declared.dtype {
        Dtype::Bool => from_vec::<bool, _>(npy, &shape, what, path),
        Dtype::U8 => from_vec::<u8, _>(npy, &shape, what, path),
        Dtype::U16 => from_vec::<u16, _>(npy, &shape, what, path),
        Dtype::U32 => from_vec::<u32, _>(npy, &shape, what, path),
        Dtype::I8 => from_vec::<i8, _>(npy, &shape, what, path),
        Dtype::I16 => from_vec::<i16, _>(npy, &shape, what, path),
        Dtype::I32 => from_vec::<i32, _>(npy, &shape, what, path),
        Dtype::I64 => from_vec::<i64, _>(npy, &shape, what, path),
        Dtype::F32 => from_vec::<f32, _>(npy, &shape, what, path),
        Dtype::F64 => from_vec::<f64, _>(npy, &shape, what, path),
    }?;
    Ok(buffer)
}

/// The file's shape, refused before any element is read when strata could not hold it (so a
/// corrupt header cannot ask for terabytes).
fn shape_of(shape: &[u64], what: &str, path: &Path) -> Result<Vec<usize>, IoError> {
    let count = shape.iter().try_fold(1u64, |n, &e| n.checked_mul(e));
    match count {
        Some(n) if n <= MAX_ELEMENTS => Ok(shape.iter().map(|&e| e as usize).collect()),
        _ => Err(read_error(
            what,
            path,
            format!("its shape {shape:?} has more than {MAX_ELEMENTS} elements, strata's limit"),
        )),
    }
}

fn from_vec<T, R>(
    npy: npyz::NpyFile<R>,
    shape: &[usize],
    what: &str,
    path: &Path,
) -> Result<Buffer, IoError>
where
    T: npyz::Deserialize + strata_dsl::buffer::Element,
    R: std::io::Read,
{
    let values = npy.into_vec::<T>().map_err(|e| read_error(what, path, e))?;
    Buffer::from_vec(shape, values).map_err(|source| IoError::Shape {
        what: what.to_string(),
        path: path.to_path_buf(),
        source,
    })
}

pub(super) fn write(path: &Path, buffer: &Buffer, what: &str) -> Result<(), IoError> {
    match buffer.data() {
        Data::Bool(v) => write_slice(path, buffer.shape(), v, what),
        Data::U8(v) => write_slice(path, buffer.shape(), v, what),
        Data::U16(v) => write_slice(path, buffer.shape(), v, what),
        Data::U32(v) => write_slice(path, buffer.shape(), v, what),
        Data::I8(v) => write_slice(path, buffer.shape(), v, what),
        Data::I16(v) => write_slice(path, buffer.shape(), v, what),
        Data::I32(v) => write_slice(path, buffer.shape(), v, what),
        Data::I64(v) => write_slice(path, buffer.shape(), v, what),
        Data::F32(v) => write_slice(path, buffer.shape(), v, what),
        Data::F64(v) => write_slice(path, buffer.shape(), v, what),
    }
}

/// Writes `values` as a C-order array of `shape` with NumPy's type for `T` (little-endian).
fn write_slice<T: npyz::AutoSerialize + Copy>(
    path: &Path,
    shape: &[usize],
    values: &[T],
    what: &str,
) -> Result<(), IoError> {
    let fail = |e: std::io::Error| write_error(what, path, e);
    let file = std::fs::File::create(path).map_err(fail)?;
    let shape: Vec<u64> = shape.iter().map(|&e| e as u64).collect();
    let mut out = BufWriter::new(file);
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&shape)
        .writer(&mut out)
        .begin_nd()
        .map_err(fail)?;
    writer.extend(values.iter().copied()).map_err(fail)?;
    writer.finish().map_err(fail)?;
    // Flushed here, not on drop, where a failed write would be lost.
    out.flush().map_err(fail)
}
