//! Arrays from and to files: `.npy` (NumPy's format, every element type strata has) and PNG
//! (8- and 16-bit images, for `u8`/`u16` buffers), and the sizes a kernel's inputs imply.
//! `strata run --input/--output` is built on this; a library user can call it too.
//!
//! A PNG is an array of shape `[H, W]` (one channel) or `[H, W, C]` with the channels
//! interleaved (`C` = 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA), as `numpy.asarray(PIL.Image.open(f))`
//! gives: the kernel's rank decides which. Nothing is converted: an 8-bit image is `u8`, a
//! 16-bit one `u16`, and any other pairing is an error.

mod npy;
mod npy_header;
mod png;
mod sizes;

pub use sizes::{infer_sizes, FileInput};

use std::io::Write;
use std::path::{Path, PathBuf};
use strata_dsl::buffer::ShapeError;
use strata_dsl::signature::BufferParam;
use strata_dsl::{Buffer, Dtype, Extent};

/// The file formats strata reads and writes, chosen by extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// NumPy's `.npy`: every element type, C order.
    Npy,
    /// PNG: 8-bit (`u8`) and 16-bit (`u16`) images.
    Png,
}

impl Format {
    /// The format of `path` from its extension (`.npy`, `.png`, any case).
    pub fn of(path: &Path) -> Result<Format, IoError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_lowercase);
        match ext.as_deref() {
            Some("npy") => Ok(Format::Npy),
            Some("png") => Ok(Format::Png),
            _ => Err(IoError::UnknownFormat(path.to_path_buf())),
        }
    }
}

/// Why an array could not be read or written. Each names the argument and the file.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The file's extension is neither `.npy` nor `.png`.
    #[error("`{}` has no format strata knows: give a .npy or .png file", .0.display())]
    UnknownFormat(PathBuf),
    /// The file could not be read or decoded.
    #[error("cannot read {what} from {}: {reason}", path.display())]
    Read {
        /// The argument, as messages name it (`input `A``).
        what: String,
        /// The file.
        path: PathBuf,
        /// The underlying error, as text.
        reason: String,
    },
    /// The file could not be encoded or written.
    #[error("cannot write {what} to {}: {reason}", path.display())]
    Write {
        /// The argument, as messages name it (`input `A``).
        what: String,
        /// The file.
        path: PathBuf,
        /// The underlying error, as text.
        reason: String,
    },
    /// The file holds another element type than the argument's (nothing is converted).
    #[error("{what} should be {expected}, but {} holds {actual}", path.display())]
    WrongDtype {
        /// The argument, as messages name it (`input `A``).
        what: String,
        /// The file.
        path: PathBuf,
        /// The argument's element type.
        expected: Dtype,
        /// What the file holds.
        actual: String,
    },
    /// The file's array has another rank than the argument's.
    #[error("{what} has rank {expected} ({declared}), but {} holds an array of shape {actual:?}", path.display())]
    WrongRank {
        /// The argument, as messages name it (`input `A``).
        what: String,
        /// The file.
        path: PathBuf,
        /// The argument's rank.
        expected: usize,
        /// The argument's declared shape (`[M, K]`).
        declared: String,
        /// The file's shape.
        actual: Vec<usize>,
    },
    /// A `.npy` file in column-major order.
    #[error("{} is stored in Fortran (column-major) order; strata reads C order: save it with numpy.save(path, numpy.ascontiguousarray(a))", path.display())]
    FortranOrder {
        /// The file.
        path: PathBuf,
    },
    /// The format cannot hold this element type or shape.
    #[error("{what} is {dtype}{shape:?}: {}", format_reason(*format))]
    Unsupported {
        /// The argument, as messages name it (`input `A``).
        what: String,
        /// The element type asked for.
        dtype: Dtype,
        /// The shape asked for.
        shape: Vec<usize>,
        /// The format asked for.
        format: Format,
    },
    /// An output of height or width 0 for a PNG, which cannot be empty.
    #[error("{what} is {dtype}{shape:?}: a PNG cannot be empty (its height and width must be at least 1); write a .npy file instead")]
    EmptyImage {
        /// The argument, as messages name it (`output `Y``).
        what: String,
        /// The element type.
        dtype: Dtype,
        /// The shape, with an extent 0.
        shape: Vec<usize>,
    },
    /// The file's shape is not a valid buffer shape.
    #[error("{what}: {}: {source}", path.display())]
    Shape {
        /// The argument, as messages name it (`input `A``).
        what: String,
        /// The file.
        path: PathBuf,
        /// Why the shape is refused.
        source: ShapeError,
    },
}

fn format_reason(format: Format) -> &'static str {
    match format {
        Format::Png => {
            "a PNG holds u8 or u16 arrays of shape [H, W] or [H, W, C] with C from 1 to 4"
        }
        Format::Npy => "not representable in a .npy file",
    }
}

/// The declaration of a buffer argument, as the error messages describe it (`input `A``,
/// `f32`, `[M, K]`).
#[derive(Clone, Debug)]
pub struct Declared {
    /// `input `A`` or `output `C``.
    pub what: String,
    /// The element type.
    pub dtype: Dtype,
    /// The extents as declared (sizes and expressions of them).
    pub shape: Vec<Extent>,
}

impl Declared {
    /// The declaration of the buffer input `param`.
    pub fn input(param: &BufferParam) -> Declared {
        Declared {
            what: format!("input `{}`", param.name),
            dtype: param.dtype,
            shape: param.shape.clone(),
        }
    }

    /// The shape as declared: `[M, 3]`.
    pub fn shape_text(&self) -> String {
        let parts: Vec<String> = (self.shape.iter())
            .map(|e| match e {
                Extent::Size(s) => s.clone(),
                Extent::Const(c) => c.to_string(),
            })
            .collect();
        format!("[{}]", parts.join(", "))
    }
}

/// Reads the array for an argument declared as `declared` from `path` (format by extension).
/// Its element type and rank must be the declared ones; its extents are checked later,
/// against the other inputs and the sizes (`infer_sizes`, then the call).
pub fn read(path: &Path, declared: &Declared) -> Result<Buffer, IoError> {
    match Format::of(path)? {
        Format::Npy => npy::read(path, declared),
        Format::Png => png::read(path, declared),
    }
}

/// Writes `buffer` to `path` (format by extension); `what` names it in errors. The file is
/// replaced whole or not at all (`strata_tuning_db::write_replacing`): a failed write, a full
/// disk or a file size limit is an error and leaves an existing file as it was.
pub fn write(path: &Path, buffer: &Buffer, what: &str) -> Result<(), IoError> {
    let format = Format::of(path)?;
    check_writable(path, buffer.dtype(), buffer.shape(), what)?;
    let encode = |out: &mut dyn Write| match format {
        Format::Npy => npy::encode(out, buffer).map_err(|e| write_error(what, path, e)),
        Format::Png => png::encode(out, buffer, what).map_err(|e| write_error(what, path, e)),
    };
    strata_tuning_db::write_replacing(path, encode, |e| write_error(what, path, e))
}

/// Whether an array of `dtype` and `shape` can be written to `path`: its format holds it and
/// the file can be created (a temporary file beside it, removed again). Checked before a
/// kernel runs, so a long run does not end in an output it cannot save.
pub fn check_writable(
    path: &Path,
    dtype: Dtype,
    shape: &[usize],
    what: &str,
) -> Result<(), IoError> {
    match Format::of(path)? {
        Format::Npy => {}
        Format::Png => {
            png::check_writable(dtype, shape, what)?;
        }
    }
    strata_tuning_db::check_replaceable(path).map_err(|e| write_error(what, path, e))
}

fn read_error(what: &str, path: &Path, reason: impl std::fmt::Display) -> IoError {
    IoError::Read {
        what: what.to_string(),
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

fn write_error(what: &str, path: &Path, reason: impl std::fmt::Display) -> IoError {
    IoError::Write {
        what: what.to_string(),
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// The checked rank of a file's array against the declaration.
fn check_rank(path: &Path, declared: &Declared, shape: &[usize]) -> Result<(), IoError> {
    if shape.len() != declared.shape.len() {
        return Err(IoError::WrongRank {
            what: declared.what.clone(),
            path: path.to_path_buf(),
            expected: declared.shape.len(),
            declared: declared.shape_text(),
            actual: shape.to_vec(),
        });
    }
    Ok(())
}
