//! Narrowing integer casts of native vectors: `u32 -> u16`, `i32 -> i16`, `u16 -> u8`,
//! `i16 -> i8` (any mix of signedness) and `32 -> 8` bits in two steps, with the pack
//! instructions instead of lane by lane.
//!
//! The language's casts are Rust's `as`: they truncate (keep the low bits), they do not
//! saturate. Cranelift's narrows (`snarrow`, `unarrow`, `uunarrow`) all saturate, and x64 lowers
//! only `snarrow` and `unarrow` for `i32x4 -> i16x8` and `i16x8 -> i8x16` (`packssdw`,
//! `packusdw`, `packsswb`, `packuswb`). So each lane is first masked to the target's width
//! (`band` with a splat of `0xFFFF` or `0xFF`, in the source type): every lane is then in
//! `0..=max` of the target's unsigned type, where `unarrow` (which reads its inputs as signed
//! and saturates to the unsigned range) is exact, and its result has the right bits whatever
//! the target's signedness. For `32 -> 8` bits one mask of `0xFF` is enough for both steps.

use super::values::{layout, scalar_type, CVal, Layout};
use cranelift_codegen::ir::{InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;
use strata_scheduler::Type as IrType;

/// `v` (of type `from`) cast to `to` with native narrowing instructions, or `None` where this
/// does not apply (a side that is not a native vector, not an integer narrowing from 16 or 32
/// bits, or pieces that do not pair up): the caller then casts lane by lane. `fits`: the caller
/// proved every lane already in `0..=max` of the target's type, so no mask is needed.
pub fn narrow_natively(
    b: &mut FunctionBuilder,
    v: &CVal,
    from: IrType,
    to: IrType,
    fits: bool,
) -> Option<CVal> {
    let (
        Layout::Native {
            pieces: from_pieces,
            vector: from_vector,
            ..
        },
        Layout::Native {
            pieces: to_pieces,
            vector: to_vector,
            ..
        },
    ) = (layout(from), layout(to))
    else {
        return None;
    };
    let (from_bytes, to_bytes) = (from.dtype.bytes(), to.dtype.bytes());
    if !from.dtype.is_int()
        || !to.dtype.is_int()
        || !matches!(from_bytes, 2 | 4)
        || to_bytes >= from_bytes
    {
        return None;
    }
    // Each step halves the lane width and the number of pieces.
    let steps = (from_bytes / to_bytes).trailing_zeros();
    let pieces = v.pieces();
    if pieces.len() != from_pieces
        || from_pieces % (1 << steps) != 0
        || from_pieces >> steps != to_pieces
    {
        return None;
    }
    let mut current: Vec<Value> = if fits {
        pieces.to_vec()
    } else {
        let mask = (1i64 << (8 * to_bytes)) - 1;
        let mask = b.ins().iconst(scalar_type(from.dtype), mask);
        let mask = b.ins().splat(from_vector, mask);
        pieces.iter().map(|&p| b.ins().band(p, mask)).collect()
    };
    for _ in 0..steps {
        // `unarrow(x, y)`: the lanes of `x`, then those of `y`, at half the width.
        current = current
            .chunks(2)
            .map(|pair| b.ins().unarrow(pair[0], pair[1]))
            .collect();
    }
    debug_assert!(current
        .iter()
        .all(|&p| b.func.dfg.value_type(p) == to_vector));
    Some(CVal::Pieces(current))
}
