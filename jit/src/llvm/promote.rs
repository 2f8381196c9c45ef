//! Register promotion for the LLVM backend: the locations `crate::promote` finds
//! invariant in a serial loop (an accumulator tile) live in stack slots during the loop,
//! which LLVM's SROA turns into registers. LLVM's own promotion (LICM) cannot do this for a
//! register tile: the tile's rows are at `i32` offsets that wrap, which its alias analysis
//! cannot tell apart, so it would reload and store every accumulator in every iteration.

use super::functions::{Fail, FnGen};
use crate::promote::{self, Location};
use inkwell::values::{BasicValueEnum, PointerValue};
use strata_scheduler::Expr;

impl<'ctx> FnGen<'_, 'ctx> {
    /// The lets in scope recorded with their values expanded (to recognise promoted
    /// locations), then the variable bound for code generation.
    pub fn push_let(&mut self, name: &str, value: &Expr, v: BasicValueEnum<'ctx>) {
        let expanded = promote::expand(value, &self.lets);
        self.lets.push(promote::let_entry(name, expanded));
        self.env.vars.push((name.to_string(), v, value.ty()));
    }

    pub fn pop_let(&mut self) {
        self.lets.pop();
        self.env.vars.pop();
    }

    /// The locations of `body` that can live in registers across the loop over `var`.
    pub fn promotable(&self, var: &str, body: &strata_scheduler::Stmt) -> Vec<Location> {
        promote::promotable(var, body, &self.lets)
    }

    /// Reads each location into a new stack slot and makes it promoted.
    pub fn promote(&mut self, locations: Vec<Location>) -> Result<(), Fail> {
        for location in locations {
            let at = self.location_pointer(&location)?;
            let value = self.load_value(at, location.ty)?;
            let slot = self.alloca(value.get_type(), 1, 64)?;
            self.b.build_store(slot, value)?;
            self.promoted.push((location, slot));
        }
        Ok(())
    }

    /// Ends the promotions made since there were `depth`, writing back what the loop stored.
    pub fn write_back(&mut self, depth: usize) -> Result<(), Fail> {
        let ended: Vec<_> = self.promoted.drain(depth..).collect();
        for (location, slot) in ended.iter().filter(|(l, _)| l.stored) {
            let value = self.b.build_load(self.value_type(location.ty), *slot, "")?;
            let at = self.location_pointer(location)?;
            let value = self.memory_form(value, location.ty)?;
            self.store_value(at, value, location.ty.dtype)?;
        }
        Ok(())
    }

    /// The slot holding `buffer[index]`, if that location is promoted.
    pub fn promoted_slot(&self, buffer: &str, index: &Expr) -> Option<PointerValue<'ctx>> {
        promote::find(&self.promoted, buffer, index, &self.lets).copied()
    }

    /// The address of a promoted location's first element.
    fn location_pointer(&mut self, location: &Location) -> Result<PointerValue<'ctx>, Fail> {
        let base = self.env.buffer(&location.buffer)?;
        let start = match &location.index {
            Expr::Ramp { base, .. } => base.as_ref(),
            other => other,
        };
        self.element_pointer(base, start, location.ty.dtype)
    }
}
