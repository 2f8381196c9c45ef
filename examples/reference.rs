//! Declares a kernel inline with `kernel!` and runs the reference evaluator on it.
//!
//! Run with `cargo run --example reference`.

use strata::{evaluate, kernel, Args, Buffer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let blur = kernel! {
        kernel blur3x3(input: u16[H, W]) -> out: u16[H - 2, W - 2] {
            bx(y, x) = u16((u32(input(y, x)) + u32(input(y, x + 1)) + u32(input(y, x + 2))) / 3);
            out(y, x) = u16((u32(bx(y, x)) + u32(bx(y + 1, x)) + u32(bx(y + 2, x))) / 3);
        }
    };
    println!("{blur}\n");
    println!("content hash: {}\n", blur.hash());

    let (h, w) = (5, 6);
    let pixels: Vec<u16> = (0..h * w).map(|i| (i * 1000 % 65536) as u16).collect();
    let input = Buffer::from_vec(&[h, w], pixels)?;
    let out = evaluate(&blur, &Args::new().buffer("input", input))?;

    let values = out.as_slice::<u16>().ok_or("the output is u16")?;
    let out_w = out.shape()[1];
    println!("output {:?}:", out.shape());
    for row in values.chunks(out_w) {
        println!("  {row:?}");
    }
    Ok(())
}
