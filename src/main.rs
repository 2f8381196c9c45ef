//! The `strata` command: `check`, `lower`, `run`, `compare`, `tune`, `report`, `db` and
//! `roofline` (`cli/`, one file per command), and the tuner's worker processes (this binary
//! started by the tuner).

mod cli;
mod compare;
mod explain;
mod profile;
mod run;
mod stage_roofline;
mod train;
mod tuning;

use std::process::ExitCode;

pub(crate) use cli::print_out;

/// Lowering allocates and frees many small expression trees: mimalloc makes that several times
/// cheaper than the system allocator (the tuner's workers are this binary too).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The stack every command runs on. Lowering runs on its own large stack (see
/// `strata::scheduler::lower`), but code generation and the reference evaluator walk the
/// lowered IR and the pipeline recursively too: 256 MiB of address space (touched only as deep
/// as a kernel needs) keeps the deepest kernel lowering accepts far from the end.
const COMMAND_STACK_BYTES: usize = 256 << 20;

fn main() -> ExitCode {
    let command = std::thread::Builder::new()
        .name("strata".into())
        .stack_size(COMMAND_STACK_BYTES)
        .spawn(cli::run_command_line);
    match command.map(|thread| thread.join()) {
        Ok(Ok(code)) => code,
        // The panic has been reported by the hook; keep Rust's exit status for it.
        Ok(Err(_panic)) => ExitCode::from(101),
        // No thread could start (a system out of resources): run here instead.
        Err(_) => cli::run_command_line(),
    }
}
