//! The sizes a kernel's inputs imply: each size variable takes the extent of the first input
//! (in signature order) that uses it; every other use, and `--shape`, must agree.

use std::collections::BTreeMap;
use std::path::PathBuf;
use strata_dsl::signature::BufferParam;
use strata_dsl::{Buffer, Extent, Sizes};

/// An input read from a file.
#[derive(Clone, Debug)]
pub struct FileInput {
    /// The input's name in the kernel.
    pub name: String,
    /// The file it came from.
    pub path: PathBuf,
    /// Its contents.
    pub buffer: Buffer,
}

/// Where a size's value came from, for the error when another use disagrees.
fn origin(input: &FileInput, dim: usize) -> String {
    format!(
        "input `{}` ({}, dimension {dim})",
        input.name,
        input.path.display()
    )
}

/// The sizes bound by `given` (each read for the input of the same name among `params`, so
/// with its declared rank), and by `shape` (sizes given by hand, which must agree with the
/// files). Sizes neither binds stay unbound: the caller says which are missing.
pub fn infer_sizes(
    params: &[BufferParam],
    given: &[FileInput],
    shape: &Sizes,
) -> Result<Sizes, String> {
    let mut sizes = shape.clone();
    let mut origins: BTreeMap<String, String> = (shape.iter())
        .map(|(name, value)| (name.clone(), format!("--shape {name}={value}")))
        .collect();
    for param in params {
        let Some(input) = given.iter().find(|g| g.name == param.name) else {
            continue;
        };
        for (dim, (extent, &actual)) in param.shape.iter().zip(input.buffer.shape()).enumerate() {
            let actual = i64::try_from(actual).unwrap_or(i64::MAX);
            match extent {
                Extent::Const(c) if *c != actual => {
                    return Err(format!(
                        "input `{}` ({}) has shape {:?}, but the kernel declares extent {c} in \
                         dimension {dim}",
                        input.name,
                        input.path.display(),
                        input.buffer.shape()
                    ));
                }
                Extent::Const(_) => {}
                Extent::Size(size) => match sizes.get(size) {
                    Some(&bound) if bound != actual => {
                        return Err(format!(
                            "size `{size}` is {bound} from {} but {actual} from {}",
                            origins.get(size).map_or("", String::as_str),
                            origin(input, dim)
                        ));
                    }
                    Some(_) => {}
                    None => {
                        sizes.insert(size.clone(), actual);
                        origins.insert(size.clone(), origin(input, dim));
                    }
                },
            }
        }
    }
    Ok(sizes)
}
