//! The arguments of one evaluation or call: owned buffer inputs and scalar parameters by name
//! (`Args`), and the same seen as views without a copy (`ViewArgs`, in `buffer`).

use crate::buffer::{Buffer, BufferView, ViewArgs};
use crate::value::Value;
use std::collections::BTreeMap;

/// Buffer inputs and scalar parameters of one evaluation, by name.
#[derive(Clone, Debug, Default)]
pub struct Args {
    /// The buffer inputs, by the kernel's input names.
    pub buffers: BTreeMap<String, Buffer>,
    /// The scalar parameters, by name (each of the parameter's declared type).
    pub scalars: BTreeMap<String, Value>,
}

impl Args {
    /// No buffers and no scalars yet.
    pub fn new() -> Args {
        Args::default()
    }

    /// Adds the buffer input `name` (row-major, its extents the shape).
    pub fn buffer(mut self, name: &str, buffer: Buffer) -> Args {
        self.buffers.insert(name.to_string(), buffer);
        self
    }

    /// Adds the scalar parameter `name`.
    pub fn scalar(mut self, name: &str, value: Value) -> Args {
        self.scalars.insert(name.to_string(), value);
        self
    }
}

impl<'a> From<&'a Args> for ViewArgs<'a> {
    /// Owned arguments seen as views (no copy of any buffer).
    fn from(args: &'a Args) -> Self {
        ViewArgs {
            buffers: (args.buffers.iter())
                .map(|(name, b)| (name.clone(), BufferView::from(b)))
                .collect(),
            scalars: args.scalars.clone(),
        }
    }
}
