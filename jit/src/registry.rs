//! Which code generator each backend is: the one place that names every backend module (so the
//! boundary, `backend.rs`, which every backend imports, imports none of them).

use crate::backend::{Backend, CodeGenerator, CodegenError};

impl Backend {
    /// This backend's code generator, or `CodegenError::NotBuilt` when this build does not
    /// include it.
    pub fn generator(self) -> Result<&'static dyn CodeGenerator, CodegenError> {
        match self {
            Backend::Cranelift => Ok(&crate::cranelift::Cranelift),
            #[cfg(feature = "llvm")]
            Backend::Llvm => Ok(&crate::llvm::Llvm),
            #[cfg(not(feature = "llvm"))]
            Backend::Llvm => Err(CodegenError::NotBuilt(Backend::Llvm)),
        }
    }
}
