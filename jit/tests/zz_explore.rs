use strata_dsl::{evaluate, parse_kernel, Args, Buffer};
use strata_jit::{CodegenOptions, CompiledKernel};
use strata_scheduler::lower::lower;
use strata_scheduler::schedule::text::parse_schedule;
#[test]
fn explore() {
    for b in ["clamp_edge", "constant(-7)", "mirror", "mirror_interior"] {
        let src = format!("kernel b(A: i32[N] with {b}) -> O: i32[N + 8] {{ O(i) = A(i - 4); }}");
        let p = parse_kernel(&src, "b").unwrap();
        let s = parse_schedule("").unwrap();
        let l = lower(&p, &s).unwrap();
        println!("{:?}", l.input_regions);
        println!("{l}");
        let k = CompiledKernel::new(&l, &CodegenOptions::default()).unwrap();
        let args = Args::new().buffer("A", Buffer::from_vec(&[0], Vec::<i32>::new()).unwrap());
        println!("reference: {:?}", evaluate(&p, &args));
        let r = k.run(&args, 1);
        println!("jit: {:?}", r);
    }
}
