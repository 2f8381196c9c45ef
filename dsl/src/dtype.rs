//! Element types of the kernel language and the promotion rules between them.
//!
//! # Promotion rules
//! strata does not convert between typed values implicitly: `u16 + u32` is a type error that
//! names both types, and the programmer writes the cast (`u32(a) + b`). The single exception is an
//! unsuffixed literal, which takes the type its context asks for:
//! - an integer literal (`3`) becomes the other operand's type, integer or float, when its value
//!   fits that type (`300` next to a `u8` is an error, not a silent wrap);
//! - a float literal (`0.5`) becomes the other operand's float type (`f32` or `f64`);
//! - with no typed context, an integer literal is `i32` and a float literal is `f32`.
//!
//! A suffix fixes a literal's type: `1u8`, `2i64`, `0.5f64`.

use std::fmt;

/// The type of every value, buffer element and expression in a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    /// `bool`: `true` or `false`.
    Bool,
    /// `u8`: unsigned 8-bit integer.
    U8,
    /// `u16`: unsigned 16-bit integer.
    U16,
    /// `u32`: unsigned 32-bit integer.
    U32,
    /// `i8`: signed 8-bit integer.
    I8,
    /// `i16`: signed 16-bit integer.
    I16,
    /// `i32`: signed 32-bit integer.
    I32,
    /// `i64`: signed 64-bit integer.
    I64,
    /// `f32`: IEEE single precision.
    F32,
    /// `f64`: IEEE double precision.
    F64,
}

impl Dtype {
    /// Every type, in the order the language lists them.
    pub const ALL: [Dtype; 10] = [
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

    /// The type's name as written in kernels.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Bool => "bool",
            Dtype::U8 => "u8",
            Dtype::U16 => "u16",
            Dtype::U32 => "u32",
            Dtype::I8 => "i8",
            Dtype::I16 => "i16",
            Dtype::I32 => "i32",
            Dtype::I64 => "i64",
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
        }
    }

    /// The type named `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|t| t.name() == name)
    }

    /// `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F32 | Dtype::F64)
    }

    /// Any signed or unsigned integer type (not `bool`).
    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    /// `i8`, `i16`, `i32` or `i64`.
    pub fn is_signed_int(self) -> bool {
        matches!(self, Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64)
    }

    /// `u8`, `u16` or `u32`.
    pub fn is_unsigned_int(self) -> bool {
        matches!(self, Dtype::U8 | Dtype::U16 | Dtype::U32)
    }

    /// Numbers: everything but `bool`.
    pub fn is_numeric(self) -> bool {
        self != Dtype::Bool
    }

    /// Size of one element in bytes (`bool` is stored as one byte).
    pub fn bytes(self) -> usize {
        match self {
            Dtype::Bool | Dtype::U8 | Dtype::I8 => 1,
            Dtype::U16 | Dtype::I16 => 2,
            Dtype::U32 | Dtype::I32 | Dtype::F32 => 4,
            Dtype::I64 | Dtype::F64 => 8,
        }
    }

    /// The smallest and largest value of an integer or bool type, as `i128`.
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            Dtype::Bool => (0, 1),
            Dtype::U8 => (0, u8::MAX as i128),
            Dtype::U16 => (0, u16::MAX as i128),
            Dtype::U32 => (0, u32::MAX as i128),
            Dtype::I8 => (i8::MIN as i128, i8::MAX as i128),
            Dtype::I16 => (i16::MIN as i128, i16::MAX as i128),
            Dtype::I32 => (i32::MIN as i128, i32::MAX as i128),
            Dtype::I64 => (i64::MIN as i128, i64::MAX as i128),
            Dtype::F32 | Dtype::F64 => return None,
        })
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
