//! strata-dsl: the high rung of strata.
//!
//! The kernel language (one grammar for `.strata` files and the `kernel!` macro), its type
//! checker, the `Pipeline` IR it produces, the printer whose output parses back to the same
//! Pipeline, the kernel's content hash, and the reference evaluator: the slow, obviously-correct
//! oracle that every schedule of every kernel is checked against.
//!
//! ```
//! let src = "kernel scale(X: f32[N]) -> Y: f32[N] { Y(i) = 2 * X(i); }";
//! let kernel = strata_dsl::parse_kernel(src, "scale.strata").unwrap();
//! assert_eq!(kernel.signature(), "kernel scale(X: f32[N]) -> Y: f32[N]");
//! ```

#![warn(missing_docs)]

pub mod args;
pub mod ast;
pub mod bounds;
pub mod buffer;
pub mod check;
pub mod diagnostic;
pub mod dtype;
pub mod eval;
pub mod fast_math;
pub mod hash;
mod intrinsic;
pub mod ir;
pub mod lexer;
pub mod parser;
pub mod print;
pub mod random;
pub mod signature;
pub mod suggest;
pub mod value;

pub use buffer::{Buffer, Data};
pub use diagnostic::{Diagnostic, Span};
pub use dtype::Dtype;
pub use eval::{evaluate, evaluate_counting, Args, EvalError, Work};
pub use hash::KernelHash;
pub use ir::*;
pub use signature::{sizes, CallError, Signature, Sizes};
pub use value::{BinOp, Value};

/// The stack the parser, checker and reference evaluator run on. Nesting is limited to 256
/// levels, which needs a few megabytes in an unoptimized build: more than a test thread's
/// default 2 MiB.
const BIG_STACK_BYTES: usize = 32 << 20;

/// Parses and checks every kernel in `source`; `file` names it in error messages.
pub fn parse_kernels(source: &str, file: &str) -> Result<Vec<Pipeline>, Diagnostic> {
    with_big_stack(|| parse_and_check(source)).map_err(|d| d.in_file(file, source))
}

/// Runs `f` on a thread with `BIG_STACK_BYTES` of stack, or on this thread if none can start.
pub(crate) fn with_big_stack<T: Send>(f: impl Fn() -> T + Sync) -> T {
    with_stack(BIG_STACK_BYTES, f)
}

/// Runs `f` on a thread with `bytes` of stack (reserved, touched only as deep as `f` goes), or
/// on this thread if none can start. A panic in `f` is resumed in the caller. Every rung that
/// walks trees recursively runs its deep work this way.
pub fn with_stack<T: Send>(bytes: usize, f: impl Fn() -> T + Sync) -> T {
    let on_big_stack = std::thread::scope(|scope| {
        let builder = std::thread::Builder::new().stack_size(bytes);
        builder
            .spawn_scoped(scope, &f)
            .ok()
            .map(|handle| handle.join())
    });
    match on_big_stack {
        Some(Ok(value)) => value,
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        None => f(),
    }
}

fn parse_and_check(source: &str) -> Result<Vec<Pipeline>, Diagnostic> {
    let asts = parser::parse(source)?;
    let mut kernels: Vec<Pipeline> = Vec::new();
    // A set, not a search of `kernels`: a file may hold many thousands of kernels.
    let mut names = std::collections::HashSet::new();
    for ast in &asts {
        if !names.insert(ast.name.name.as_str()) {
            return Err(Diagnostic::new(
                format!("kernel `{}` is defined twice", ast.name.name),
                ast.name.span,
            ));
        }
        kernels.push(check::check_kernel(ast)?);
    }
    Ok(kernels)
}

/// Why a kernel file could not be loaded: it could not be read, or it does not check.
#[derive(Debug, thiserror::Error)]
pub enum KernelFileError {
    /// The file could not be read.
    #[error("cannot read {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// Why, as the system says it.
        message: String,
    },
    /// The text does not parse or check (the diagnostic names the file, line and column).
    #[error(transparent)]
    Check(#[from] Diagnostic),
}

/// Reads a `.strata` file and parses and checks every kernel in it (errors name the file).
pub fn parse_kernel_file(
    path: impl AsRef<std::path::Path>,
) -> Result<Vec<Pipeline>, KernelFileError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let source = std::fs::read_to_string(path).map_err(|e| KernelFileError::Read {
        path: name.clone(),
        message: e.to_string(),
    })?;
    Ok(parse_kernels(&source, &name)?)
}

/// Parses and checks a source that holds exactly one kernel.
pub fn parse_kernel(source: &str, file: &str) -> Result<Pipeline, Diagnostic> {
    let mut kernels = parse_kernels(source, file)?;
    match kernels.len() {
        1 => Ok(kernels.remove(0)),
        n => Err(Diagnostic::new(
            format!("expected exactly one kernel, found {n}"),
            Span::new(0, 0),
        )
        .in_file(file, source)),
    }
}
