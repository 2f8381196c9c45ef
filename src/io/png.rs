//! PNG images through the `image` crate (only its png codec): 8-bit images are `u8` arrays,
//! 16-bit ones `u16`; `[H, W]` for one channel or `[H, W, C]`, channels interleaved.

use super::{check_rank, read_error, Declared, Format, IoError};
use image::codecs::png::PngEncoder;
use image::{DynamicImage, ImageBuffer, ImageFormat, Pixel};
use std::io::{BufReader, Write};
use std::path::Path;
use strata_dsl::{Buffer, Data, Dtype};

/// A decoded image's samples: its height, width, channels and the samples row by row.
enum Samples {
    U8(Vec<u8>),
    U16(Vec<u16>),
}

pub(super) fn read(path: &Path, declared: &Declared) -> Result<Buffer, IoError> {
    let what = &declared.what;
    let file = std::fs::File::open(path).map_err(|e| read_error(what, path, e))?;
    let image = image::ImageReader::with_format(BufReader::new(file), ImageFormat::Png)
        .decode()
        .map_err(|e| read_error(what, path, format!("not a PNG image strata reads ({e})")))?;
    let (width, height) = (image.width() as usize, image.height() as usize);
    let channels = image.color().channel_count() as usize;
    let (samples, depth) = samples(image, what, path)?;
    let dtype = match samples {
        Samples::U8(_) => Dtype::U8,
        Samples::U16(_) => Dtype::U16,
    };
    if dtype != declared.dtype {
        return Err(IoError::WrongDtype {
            what: what.clone(),
            path: path.to_path_buf(),
            expected: declared.dtype,
            actual: format!(
                "{} image ({dtype})",
                if depth == 8 { "an 8-bit" } else { "a 16-bit" }
            ),
        });
    }
    // One channel reads as [H, W] or [H, W, 1], whichever the kernel declares.
    let shape = match declared.shape.len() {
        2 if channels == 1 => vec![height, width],
        _ => vec![height, width, channels],
    };
    check_rank(path, declared, &shape)?;
    let buffer = match samples {
        Samples::U8(v) => Buffer::from_vec(&shape, v),
        Samples::U16(v) => Buffer::from_vec(&shape, v),
    };
    buffer.map_err(|source| IoError::Shape {
        what: what.clone(),
        path: path.to_path_buf(),
        source,
    })
}

/// The samples of a decoded PNG and its bit depth (sub-byte depths and palettes are expanded
/// to 8 bits by the decoder).
fn samples(image: DynamicImage, what: &str, path: &Path) -> Result<(Samples, u32), IoError> {
    Ok(match image {
        DynamicImage::ImageLuma8(b) => (Samples::U8(b.into_raw()), 8),
        DynamicImage::ImageLumaA8(b) => (Samples::U8(b.into_raw()), 8),
        DynamicImage::ImageRgb8(b) => (Samples::U8(b.into_raw()), 8),
        DynamicImage::ImageRgba8(b) => (Samples::U8(b.into_raw()), 8),
        DynamicImage::ImageLuma16(b) => (Samples::U16(b.into_raw()), 16),
        DynamicImage::ImageLumaA16(b) => (Samples::U16(b.into_raw()), 16),
        DynamicImage::ImageRgb16(b) => (Samples::U16(b.into_raw()), 16),
        DynamicImage::ImageRgba16(b) => (Samples::U16(b.into_raw()), 16),
        other => {
            let why = format!(
                "its pixels are {:?}, not 8- or 16-bit samples",
                other.color()
            );
            return Err(read_error(what, path, why));
        }
    })
}

/// The image size and channel count for an array of `dtype` and `shape`, or why a PNG cannot
/// hold it.
pub(super) fn check_writable(
    dtype: Dtype,
    shape: &[usize],
    what: &str,
) -> Result<(u32, u32, usize), IoError> {
    let unsupported = || IoError::Unsupported {
        what: what.to_string(),
        dtype,
        shape: shape.to_vec(),
        format: Format::Png,
    };
    if !matches!(dtype, Dtype::U8 | Dtype::U16) {
        return Err(unsupported());
    }
    let (h, w, c) = match *shape {
        [h, w] => (h, w, 1),
        [h, w, c] if (1..=4).contains(&c) => (h, w, c),
        _ => return Err(unsupported()),
    };
    if w == 0 || h == 0 {
        return Err(IoError::EmptyImage {
            what: what.to_string(),
            dtype,
            shape: shape.to_vec(),
        });
    }
    match (u32::try_from(w), u32::try_from(h)) {
        (Ok(w), Ok(h)) => Ok((w, h, c)),
        _ => Err(unsupported()),
    }
}

/// Writes `buffer` as a PNG image to `out` (its type and shape already `check_writable`).
pub(super) fn encode(out: &mut dyn Write, buffer: &Buffer, what: &str) -> Result<(), String> {
    let (w, h, channels) =
        check_writable(buffer.dtype(), buffer.shape(), what).map_err(|e| e.to_string())?;
    let image = match buffer.data() {
        Data::U8(v) => image_u8(w, h, channels, v.clone()),
        Data::U16(v) => image_u16(w, h, channels, v.clone()),
        _ => None,
    };
    // `check_writable` accepted the type and shape, so the samples fill the image exactly.
    let image = image.ok_or("the samples do not fill the image")?;
    // Into the caller's writer, whose flush is checked (`save_with_format` drops a buffered
    // writer's error).
    image
        .write_with_encoder(PngEncoder::new(out))
        .map_err(|e| e.to_string())
}

fn image_u8(w: u32, h: u32, channels: usize, v: Vec<u8>) -> Option<DynamicImage> {
    Some(match channels {
        1 => DynamicImage::ImageLuma8(buffer(w, h, v)?),
        2 => DynamicImage::ImageLumaA8(buffer(w, h, v)?),
        3 => DynamicImage::ImageRgb8(buffer(w, h, v)?),
        _ => DynamicImage::ImageRgba8(buffer(w, h, v)?),
    })
}

fn image_u16(w: u32, h: u32, channels: usize, v: Vec<u16>) -> Option<DynamicImage> {
    Some(match channels {
        1 => DynamicImage::ImageLuma16(buffer(w, h, v)?),
        2 => DynamicImage::ImageLumaA16(buffer(w, h, v)?),
        3 => DynamicImage::ImageRgb16(buffer(w, h, v)?),
        _ => DynamicImage::ImageRgba16(buffer(w, h, v)?),
    })
}

fn buffer<P: Pixel>(
    w: u32,
    h: u32,
    v: Vec<P::Subpixel>,
) -> Option<ImageBuffer<P, Vec<P::Subpixel>>> {
    ImageBuffer::from_raw(w, h, v)
}
