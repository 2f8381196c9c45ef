//! `strata lower`: print a kernel at one rung of the compiler (the pipeline, the loop nest,
//! the backend's IR or the machine code).

use clap::{Args, ValueEnum};
use std::path::PathBuf;
use strata::Backend;

use super::common::{
    load, pick_kernel, print_out, read_schedule, shape_or_none, warn_if_wasteful, BackendArg,
};

#[derive(Args)]
pub(crate) struct LowerArgs {
    /// The `.strata` file holding the kernel.
    file: PathBuf,
    /// Which kernel of the file (needed when it holds several).
    #[arg(long)]
    kernel: Option<String>,
    /// The rung to print.
    #[arg(long, value_enum)]
    stage: Stage,
    /// The schedule, as text (`out: tile(...)...; bx: compute_at(out, xo)`) or `@FILE`.
    #[arg(long)]
    schedule: Option<String>,
    /// Sizes to fix, e.g. `H=256,W=256`; the loop nest is simplified for them.
    #[arg(long)]
    shape: Option<String>,
    /// The code generator, for the stages `ir`, `clif` and `asm`.
    #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
    backend: BackendArg,
}

/// The rungs `strata lower` can print.
#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Stage {
    /// The Pipeline: typed pure functions, before any schedule.
    High,
    /// The loop nest a schedule lowers to.
    Loops,
    /// The IR the backend compiles (Cranelift IR, or LLVM IR with `--backend llvm`).
    Ir,
    /// The Cranelift IR of the compiled kernel (`--stage ir` with Cranelift).
    Clif,
    /// The machine code of the compiled kernel.
    Asm,
}

pub(crate) fn command(args: LowerArgs) -> Result<(), String> {
    let kernels = load(&args.file)?;
    let chosen = pick_kernel(&kernels, args.kernel.as_deref(), &args.file)?;
    if args.stage == Stage::High {
        return print_out(&chosen.to_string());
    }
    let schedule = read_schedule(args.schedule.as_deref())?;
    let fixed = shape_or_none(args.shape.as_deref())?;
    let lowered =
        strata::jit::lower_for(chosen, &schedule, &fixed).map_err(|e| format!("error: {e}"))?;
    warn_if_wasteful(&lowered);
    if args.stage == Stage::Loops {
        return print_out(&lowered.to_string());
    }
    let backend = args.backend.built()?;
    if args.stage == Stage::Clif && backend != Backend::Cranelift {
        return Err(format!(
            "error: --stage clif prints Cranelift IR; the {backend} backend's IR is --stage ir"
        ));
    }
    let options = strata::CodegenOptions {
        backend,
        keep_text: true,
        ..Default::default()
    };
    let compiled =
        strata::CompiledKernel::new(&lowered, &options).map_err(|e| format!("error: {e}"))?;
    let texts = match args.stage {
        Stage::Asm => compiled.asm(),
        _ => compiled.ir(),
    };
    print_out(&texts.join("\n"))
}
