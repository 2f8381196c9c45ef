//! Loop-invariant code leaves strata's loops: Cranelift hoists it only when it recognises the
//! loop while elaborating, which depends on the loop header's shape (`counted_loop`). Before
//! the header was fixed, a vectorized `exp` reloaded its dozen vector constants from the
//! constant pool in every iteration. The check reads the machine code of the loop body (the
//! block holding the fmas) on x86-64, where constant-pool loads are `(%rip)`-relative.

mod common;
use common::compile;

#[test]
fn vector_constants_are_hoisted_out_of_the_loop() {
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    let source = "kernel ex(X: f32[R, C]) -> P: f32[R, C] { P(r, c) = exp(X(r, c)); }";
    let (_, compiled) = compile(source, "P: vectorize(c, 4)");
    let asm = compiled.asm().join("\n");
    let body = asm
        .split("\nblock")
        .find(|block| block.contains("vfmadd"))
        .unwrap_or_else(|| panic!("no block with fmas:\n{asm}"));
    assert!(
        !body.contains("(%rip)"),
        "the exp loop reloads constants every iteration:\nblock{body}"
    );
}
