//! The order of an `fma`'s multiplicands, chosen once a function is built.
//!
//! x64 Cranelift (0.135) lowers `fma x, y, z` to `vfmadd213 x, y, z`: the result overwrites
//! the register of the *first* multiplicand, never the addend (no rule emits the 231 form,
//! where the accumulator would be overwritten; when a multiplicand is a load folded into the
//! instruction, `vfmadd132` overwrites the other one). When the overwritten multiplicand is
//! still needed afterwards, the register allocator copies it first. In conv2d's microkernel
//! one input vector multiplies eight broadcast weights: with the input first, seven of every
//! eight fmas copied it.
//!
//! `x * y` is the same number whichever comes first (one rounding either way; only which NaN
//! payload survives two NaN multiplicands may change), so each fma gets as first
//! multiplicand the one with fewer uses: the one more likely to die at this fma.
//! On a tie the order is left as written. Uses are counted as Cranelift will see them after
//! its value numbering: codegen emits an unrolled body's shared loads once per statement
//! (eight identical loads of conv2d's input vector, one use each), which the optimizer
//! merges into one value with eight uses, so identical pure instructions count as one.

use cranelift_codegen::entity::SecondaryMap;
use cranelift_codegen::ir::instructions::InstructionFormat;
use cranelift_codegen::ir::{Function, Inst, InstructionData, Opcode, Type, Value};
use std::collections::HashMap;

/// Swaps the multiplicands of every `fma` whose first multiplicand has more uses than its
/// second.
pub fn order_multiplicands(func: &mut Function) {
    let counts = UseCounts::of(func);
    let fmas: Vec<Inst> = instructions(func)
        .filter(|&inst| func.dfg.insts[inst].opcode() == Opcode::Fma)
        .collect();
    for inst in fmas {
        let args = func.dfg.inst_args(inst);
        if counts.uses(func, args[0]) > counts.uses(func, args[1]) {
            func.dfg.inst_args_mut(inst).swap(0, 1);
        }
    }
}

/// Every instruction in layout order.
fn instructions(func: &Function) -> impl Iterator<Item = Inst> + '_ {
    func.layout
        .blocks()
        .flat_map(move |block| func.layout.block_insts(block))
}

/// Operand counts per value, with identical pure instructions merged.
struct UseCounts {
    /// The first value computed the same way, for a value that repeats an earlier one.
    same_as: SecondaryMap<Value, Option<Value>>,
    uses: SecondaryMap<Value, u32>,
}

impl UseCounts {
    /// Counts the operands of every instruction in layout order; an instruction that repeats
    /// an earlier one (same opcode, immediates, result type and operands) is merged with it and
    /// its operands are not counted again, as Cranelift's value numbering will do.
    fn of(func: &Function) -> UseCounts {
        let mut counts = UseCounts {
            same_as: SecondaryMap::with_default(None),
            uses: SecondaryMap::with_default(0),
        };
        let mut seen: HashMap<(InstructionData, Type), Value> = HashMap::new();
        for inst in instructions(func) {
            if let Some(key) = counts.key(func, inst) {
                let result = func.dfg.first_result(inst);
                if let Some(&first) = seen.get(&key) {
                    counts.same_as[result] = Some(first);
                    continue;
                }
                seen.insert(key, result);
            }
            for v in func.dfg.inst_values(inst) {
                let v = counts.canonical(func, v);
                counts.uses[v] += 1;
            }
        }
        counts
    }

    fn uses(&self, func: &Function, v: Value) -> u32 {
        self.uses[self.canonical(func, v)]
    }

    fn canonical(&self, func: &Function, v: Value) -> Value {
        let v = func.dfg.resolve_aliases(v);
        self.same_as[v].unwrap_or(v)
    }

    /// What identifies a pure instruction's result (its data with canonical operands, and its
    /// type), or `None` for one that is not merged: side effects, several results, loads
    /// that may not move, formats holding value lists.
    fn key(&self, func: &Function, inst: Inst) -> Option<(InstructionData, Type)> {
        let data = func.dfg.insts[inst];
        let op = data.opcode();
        let inline_operands = matches!(
            op.format(),
            InstructionFormat::Unary
                | InstructionFormat::Binary
                | InstructionFormat::Ternary
                | InstructionFormat::BinaryImm8
                | InstructionFormat::TernaryImm8
                | InstructionFormat::IntCompare
                | InstructionFormat::FloatCompare
                | InstructionFormat::Shuffle
                | InstructionFormat::UnaryImm
                | InstructionFormat::UnaryIeee32
                | InstructionFormat::UnaryIeee64
                | InstructionFormat::UnaryConst
                | InstructionFormat::Load
        );
        let side_effects = op.can_store()
            || op.can_trap()
            || op.other_side_effects()
            || op.is_call()
            || op.is_branch();
        let movable_load = match data {
            InstructionData::Load { flags, .. } => {
                let flags = func.dfg.mem_flags[flags];
                flags.readonly() && flags.notrap() && flags.can_move()
            }
            _ => !op.can_load(),
        };
        if !inline_operands
            || side_effects
            || !movable_load
            || func.dfg.inst_results(inst).len() != 1
        {
            return None;
        }
        let mut data = data;
        // Inline formats keep their operands in the instruction: no pool is read or written.
        let mut no_pool = cranelift_codegen::ir::ValueListPool::new();
        for arg in data.arguments_mut(&mut no_pool) {
            *arg = self.canonical(func, *arg);
        }
        let ty = func.dfg.value_type(func.dfg.first_result(inst));
        Some((data, ty))
    }
}
