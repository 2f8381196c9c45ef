//! The code generators strata can compile with, and the boundary they share.
//!
//! A backend is a [`CodeGenerator`], one per module (`cranelift/`, `llvm/`): it takes a
//! lowered, possibly specialized kernel (flattened loop IR) and gives [`MachineCode`], one
//! entry function `entry(frame: *const u64)`, keeping the language's semantics exactly. What
//! every backend shares is here or beside it: the options and errors below, the frame, the
//! runtime it calls (`runtime.rs`: `strata_parallel_for`, allocation, scalar math), the
//! register-promotion analysis (`promote.rs`) and the statement dispatch (`emit.rs`).
//! `CompiledKernel` (`kernel.rs`) compiles with the generator [`Backend::generator`] gives
//! (`registry.rs`) and checks every call the same way, so everything above this rung is
//! backend-blind except for choosing one.
//!
//! The frame: the entry's one argument points to, in order, one pointer per buffer (inputs,
//! then the output), each size variable, each scalar parameter (its bits, zero-extended), the
//! thread count and the call's profiling counters (`crate::profile::ProfileState`, null unless
//! profiled; read only by code compiled with `CodegenOptions::profile`). Each parallel loop body
//! becomes a function `body(ctx, lo, hi)` called through the runtime's `strata_parallel_for`
//! (which also gets the counters); `ctx` points to a copy of every value in scope where the loop
//! starts.
//!
//! - Cranelift (always built): milliseconds per compile, 128-bit vectors.
//! - LLVM (cargo feature `llvm`, LLVM 19): vectors as wide as the host has (AVX2, AVX-512),
//!   tens of milliseconds per compile.

use strata_dsl::Dtype;
use strata_scheduler::LoweredKernel;

/// Which code generator compiles a kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// Cranelift: always built.
    #[default]
    Cranelift,
    /// LLVM 19: built with the cargo feature `llvm`.
    Llvm,
}

impl Backend {
    /// Every backend strata knows, built or not.
    pub const ALL: [Backend; 2] = [Backend::Cranelift, Backend::Llvm];

    /// The name the command line, the tuning database and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cranelift => "cranelift",
            Backend::Llvm => "llvm",
        }
    }

    /// The backend called `name`, if strata knows one.
    pub fn from_name(name: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Whether this build of strata includes the backend.
    pub fn is_built(self) -> bool {
        match self {
            Backend::Cranelift => true,
            Backend::Llvm => cfg!(feature = "llvm"),
        }
    }

    /// The backends this build includes (Cranelift first).
    pub fn built() -> Vec<Backend> {
        Backend::ALL.into_iter().filter(|b| b.is_built()).collect()
    }

    /// The widest vector register this backend uses on this host, in bytes: 16 for Cranelift
    /// (it lowers only 128-bit vectors); for LLVM 64 with AVX-512, 32 with AVX2, else 16.
    pub fn vector_bytes(self) -> u16 {
        match self {
            Backend::Cranelift => 16,
            Backend::Llvm => host_vector_bytes(),
        }
    }

    /// How many lanes of `dtype` one vector register of this backend holds on this host.
    pub fn native_lanes(self, dtype: Dtype) -> u16 {
        self.vector_bytes() / dtype.bytes().max(1) as u16
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Backend {
    type Err = String;

    fn from_str(s: &str) -> Result<Backend, String> {
        Backend::from_name(s).ok_or_else(|| {
            let names: Vec<_> = Backend::ALL.iter().map(|b| b.name()).collect();
            format!(
                "unknown backend `{s}` (expected one of: {})",
                names.join(", ")
            )
        })
    }
}

/// The widest vector register of this CPU, in bytes.
fn host_vector_bytes() -> u16 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return 64;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return 32;
        }
    }
    16
}

/// A code generator: flattened loop IR to machine code that keeps the frame contract above.
/// Each backend module implements it once (`cranelift::Cranelift`, `llvm::Llvm`).
pub trait CodeGenerator: Sync {
    /// Compiles `kernel` (lowered and flattened; the verifier has passed it) with `options`.
    fn compile(
        &self,
        kernel: &LoweredKernel,
        options: &CodegenOptions,
    ) -> Result<Box<dyn MachineCode>, CodegenError>;
}

/// Machine code for one kernel, owning its memory (freed on drop).
pub trait MachineCode {
    /// The entry function, `entry(frame)`.
    fn entry(&self) -> unsafe extern "C" fn(*const u64);
    /// The backend's IR of each function (entry first), when compiled with `keep_text`.
    fn ir_text(&self) -> &[String];
    /// The machine code listing of each function, when compiled with `keep_text`.
    fn asm_text(&self) -> &[String];
}

/// Why a kernel could not be compiled (a bug in an earlier rung or in code generation).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CodegenError {
    /// Cranelift could not describe this CPU (its settings or features).
    #[error("cannot set up the host ISA: {0}")]
    Isa(String),
    /// Cranelift refused the function generated (its verifier or code generator).
    #[error("Cranelift rejected `{function}`: {message}")]
    Cranelift {
        /// The generated function's name.
        function: String,
        /// Cranelift's message.
        message: String,
    },
    /// LLVM refused the module generated (its verifier or code generator).
    #[error("LLVM rejected `{function}`: {message}")]
    Llvm {
        /// The generated function's name.
        function: String,
        /// LLVM's message.
        message: String,
    },
    /// The backend asked for is not in this build (`llvm` without the cargo feature).
    #[error("this strata was built without the {0} backend (build with `--features {0}`)")]
    NotBuilt(Backend),
}

/// Compilation settings.
#[derive(Clone, Debug)]
pub struct CodegenOptions {
    /// Which code generator compiles the kernel.
    pub backend: Backend,
    /// `"speed"` (default) or `"none"`.
    pub opt_level: &'static str,
    /// Run Cranelift's IR verifier (on in tests).
    pub verify: bool,
    /// Keep the text of the Cranelift IR and of the machine code, for printing.
    pub keep_text: bool,
    /// Emit per-function profiling calls around each `produce` block (`profile.rs`); off by
    /// default, and then nothing is emitted.
    pub profile: bool,
}

impl Default for CodegenOptions {
    fn default() -> Self {
        CodegenOptions {
            backend: Backend::Cranelift,
            opt_level: "speed",
            verify: cfg!(debug_assertions),
            keep_text: false,
            profile: false,
        }
    }
}
