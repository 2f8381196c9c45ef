//! `.npy` files (NumPy's `numpy.save` format) through the `npyz` crate: every element type of
//! the language, C order, any byte order on reading (little-endian on writing).

use super::npy_header::{self, Descr, Header};
use super::{check_rank, read_error, Declared, IoError};
use npyz::{DType, Order, TypeChar, WriterBuilder};
use std::io::{BufReader, Write};
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
    let metadata = file.metadata().map_err(|e| read_error(what, path, e))?;
    // A pipe or device has no length to check the header against.
    let file_bytes = metadata.is_file().then_some(metadata.len());
    let mut reader = BufReader::new(file);
    let header = npy_header::read(&mut reader).map_err(|e| read_error(what, path, e))?;
    let npy = npyz::NpyFile::with_header(npyz_header(&header, declared, path)?, reader);
    if npy.order() == Order::Fortran {
        return Err(IoError::FortranOrder {
            path: path.to_path_buf(),
        });
    }
    let shape = shape_of(npy.shape(), what, path)?;
    check_rank(path, declared, &shape)?;
    if let Some(bytes) = file_bytes {
        check_data_length(&npy, bytes.saturating_sub(header.data_offset), what, path)?;
    }
    match declared.dtype {
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
    }
}

/// The header `npyz` reads the data with, once the file's element type is the declared one.
fn npyz_header(
    header: &Header,
    declared: &Declared,
    path: &Path,
) -> Result<npyz::NpyHeader, IoError> {
    let wrong_dtype = |actual: String| IoError::WrongDtype {
        what: declared.what.clone(),
        path: path.to_path_buf(),
        expected: declared.dtype,
        actual,
    };
    let descr = match &header.descr {
        Descr::Type(descr) => descr,
        Descr::Record(text) => {
            return Err(wrong_dtype(format!(
                "the record dtype {text} (not a strata element type)"
            )))
        }
    };
    let npyz_header = header.to_npyz(descr).map_err(|e| {
        let why = format!("its .npy header's type string '{descr}' is not one numpy writes ({e})");
        read_error(&declared.what, path, why)
    })?;
    let dtype = npyz_header.dtype();
    if dtype_of(&dtype) != Some(declared.dtype) {
        return Err(wrong_dtype(describe(&dtype)));
    }
    Ok(npyz_header)
}

/// Refuses a file whose data is shorter than its header's shape declares, saying both.
fn check_data_length<R: std::io::Read>(
    npy: &npyz::NpyFile<R>,
    data_bytes: u64,
    what: &str,
    path: &Path,
) -> Result<(), IoError> {
    // A plain type (the only kind `npyz_header` lets through) has a size.
    let item_bytes = npy.dtype().num_bytes().unwrap_or(1).max(1) as u64;
    let declared = npy.len();
    let held = data_bytes / item_bytes;
    if held >= declared {
        return Ok(());
    }
    Err(read_error(
        what,
        path,
        format!(
            "its .npy header declares shape {:?} ({declared} elements of {item_bytes} bytes), but \
             the file holds {data_bytes} bytes of data ({held} elements)",
            npy.shape()
        ),
    ))
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

/// Writes `buffer` as a `.npy` file to `out`: C order, NumPy's type, little-endian.
pub(super) fn encode(out: &mut dyn Write, buffer: &Buffer) -> std::io::Result<()> {
    let shape = buffer.shape();
    match buffer.data() {
        Data::Bool(v) => encode_slice(out, shape, v),
        Data::U8(v) => encode_slice(out, shape, v),
        Data::U16(v) => encode_slice(out, shape, v),
        Data::U32(v) => encode_slice(out, shape, v),
        Data::I8(v) => encode_slice(out, shape, v),
        Data::I16(v) => encode_slice(out, shape, v),
        Data::I32(v) => encode_slice(out, shape, v),
        Data::I64(v) => encode_slice(out, shape, v),
        Data::F32(v) => encode_slice(out, shape, v),
        Data::F64(v) => encode_slice(out, shape, v),
    }
}

fn encode_slice<T: npyz::AutoSerialize + Copy>(
    out: &mut dyn Write,
    shape: &[usize],
    values: &[T],
) -> std::io::Result<()> {
    let shape: Vec<u64> = shape.iter().map(|&e| e as u64).collect();
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&shape)
        .writer(out)
        .begin_nd()?;
    writer.extend(values.iter().copied())?;
    writer.finish()
}
