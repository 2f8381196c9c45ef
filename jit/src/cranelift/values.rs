//! How loop-IR values live in Cranelift values. A scalar is one Cranelift value (`bool` is an
//! `i8` holding 0 or 1). A logical vector of `w` lanes is a list of pieces: native 128-bit
//! vectors when `w` lanes fill whole registers (`f32x8` is two `f32x4`), otherwise one scalar
//! per lane (`f32x2`, and every `bool` vector). x64 Cranelift lowers only 128-bit vectors.

use cranelift_codegen::ir::{types, InstBuilder, Type, Value};
use cranelift_frontend::FunctionBuilder;
use strata_dsl::Dtype;
use strata_scheduler::Type as IrType;

/// The Cranelift type of one element.
pub fn scalar_type(dtype: Dtype) -> Type {
    match dtype {
        Dtype::Bool | Dtype::U8 | Dtype::I8 => types::I8,
        Dtype::U16 | Dtype::I16 => types::I16,
        Dtype::U32 | Dtype::I32 => types::I32,
        Dtype::I64 => types::I64,
        Dtype::F32 => types::F32,
        Dtype::F64 => types::F64,
    }
}

/// How a logical type is split into Cranelift values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Layout {
    Scalar,
    /// `pieces` native vectors of type `vector`, `per` lanes each.
    Native {
        pieces: usize,
        per: usize,
        vector: Type,
    },
    /// One scalar per lane.
    Lanes(usize),
}

pub fn layout(ty: IrType) -> Layout {
    let lanes = ty.lanes as usize;
    if lanes == 1 {
        return Layout::Scalar;
    }
    let bits = ty.dtype.bytes() * 8;
    if ty.dtype == Dtype::Bool || (lanes * bits) % 128 != 0 {
        return Layout::Lanes(lanes);
    }
    let per = 128 / bits;
    let vector = scalar_type(ty.dtype).by(per as u32).unwrap_or(types::I32X4);
    Layout::Native {
        pieces: lanes / per,
        per,
        vector,
    }
}

/// A value of the loop IR in Cranelift: one value for a scalar, pieces for a vector.
#[derive(Clone, Debug)]
pub enum CVal {
    /// A scalar: one Cranelift value.
    Scalar(Value),
    /// A vector: its 128-bit pieces, lowest lanes first.
    Pieces(Vec<Value>),
}

impl CVal {
    /// The value of a scalar (of a vector, its first piece).
    pub fn scalar(&self) -> Value {
        match self {
            CVal::Scalar(v) => *v,
            CVal::Pieces(p) => p[0],
        }
    }

    /// The pieces of a vector (a scalar is one piece).
    pub fn pieces(&self) -> &[Value] {
        match self {
            CVal::Scalar(v) => std::slice::from_ref(v),
            CVal::Pieces(p) => p,
        }
    }
}

/// The lanes of a value as scalars.
pub fn unpack(b: &mut FunctionBuilder, v: &CVal, ty: IrType) -> Vec<Value> {
    match (layout(ty), v) {
        (Layout::Native { per, .. }, CVal::Pieces(pieces)) => pieces
            .iter()
            .flat_map(|&piece| (0..per).map(move |lane| (piece, lane)))
            .map(|(piece, lane)| b.ins().extractlane(piece, lane as u8))
            .collect(),
        (_, v) => v.pieces().to_vec(),
    }
}

/// Builds a value of type `ty` from its lanes as scalars.
pub fn pack(b: &mut FunctionBuilder, lanes: Vec<Value>, ty: IrType) -> CVal {
    match layout(ty) {
        Layout::Scalar => CVal::Scalar(lanes[0]),
        Layout::Lanes(_) => CVal::Pieces(lanes),
        Layout::Native { per, vector, .. } => CVal::Pieces(
            lanes
                .chunks(per)
                .map(|chunk| {
                    let mut v = b.ins().splat(vector, chunk[0]);
                    for (lane, &x) in chunk.iter().enumerate().skip(1) {
                        v = b.ins().insertlane(v, x, lane as u8);
                    }
                    v
                })
                .collect(),
        ),
    }
}

/// A scalar repeated in every lane of `ty`.
pub fn splat(b: &mut FunctionBuilder, x: Value, ty: IrType) -> CVal {
    match layout(ty) {
        Layout::Scalar => CVal::Scalar(x),
        Layout::Lanes(n) => CVal::Pieces(vec![x; n]),
        Layout::Native { pieces, vector, .. } => {
            let v = b.ins().splat(vector, x);
            CVal::Pieces(vec![v; pieces])
        }
    }
}
