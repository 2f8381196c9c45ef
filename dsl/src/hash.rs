//! The stable content hash of a kernel: SHA-256 of its canonical printed form. The same kernel
//! has the same hash whichever door it came through (`kernel!` or a `.strata` file) and whatever
//! its whitespace, comments or redundant parentheses; the tuning database keys winners on it.

use crate::ir::Pipeline;
use sha2::{Digest, Sha256};
use std::fmt;

/// A kernel's content hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelHash(pub [u8; 32]);

impl KernelHash {
    /// The first 12 hex digits, for tables and messages.
    pub fn short(&self) -> String {
        self.to_string()[..12].to_string()
    }
}

impl fmt::Display for KernelHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl Pipeline {
    /// The kernel's content hash.
    pub fn hash(&self) -> KernelHash {
        KernelHash(Sha256::digest(self.to_string().as_bytes()).into())
    }
}
