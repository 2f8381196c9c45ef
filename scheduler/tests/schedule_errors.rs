//! Schedule validation on the example kernels: each illegal schedule gives one error whose full
//! text names the function, the directive as written, the rule and what would be legal; the
//! hand-written fast schedules validate into the expected `Plan`.

use strata_dsl::Pipeline;
use strata_scheduler::schedule::lift_reductions::lift_reductions;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::schedule::validate::{validate, Placement, Plan};
use strata_scheduler::ForKind;

fn kernel(name: &str) -> Pipeline {
    let path = format!(
        "{}/../examples/kernels/{name}.strata",
        env!("CARGO_MANIFEST_DIR")
    );
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    strata_dsl::parse_kernel(&source, &path).unwrap_or_else(|e| panic!("{e}"))
}

fn check(kernel_name: &str, text: &str) -> Result<Plan, String> {
    let schedule = parse_schedule(text).unwrap_or_else(|e| panic!("{e}"));
    validate(&lift_reductions(&kernel(kernel_name)), &schedule).map_err(|e| e.to_string())
}

/// The message validating `text` against the example kernel gives.
fn error(kernel_name: &str, text: &str) -> String {
    match check(kernel_name, text) {
        Ok(_) => panic!("{kernel_name}: `{text}` should be rejected"),
        Err(message) => message,
    }
}

fn plan(kernel_name: &str, text: &str) -> Plan {
    check(kernel_name, text)
        .unwrap_or_else(|e| panic!("{kernel_name}: `{text}` should validate: {e}"))
}

/// Each loop of a stage as `name` or `name:kind` (non-serial), with `(r)` for reduction loops.
fn loops(plan: &Plan, func: &str, stage: usize) -> Vec<String> {
    let kind = |k: ForKind| match k {
        ForKind::Serial => "",
        ForKind::Parallel => ":parallel",
        ForKind::Vectorized => ":vectorized",
        ForKind::Unrolled => ":unrolled",
        ForKind::Lanes => ":lanes",
    };
    plan.funcs[func].stages[stage]
        .dims
        .iter()
        .map(|d| {
            format!(
                "{}{}{}",
                d.name,
                kind(d.kind),
                if d.pure { "" } else { "(r)" }
            )
        })
        .collect()
}

fn at(func: &str, stage: usize, var: &str) -> Placement {
    Placement::At {
        func: func.into(),
        stage,
        var: var.into(),
    }
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

#[test]
fn unknown_function() {
    assert_eq!(
        error("matmul", "D: parallel(i)"),
        "schedule names unknown function `D` (the functions are: C)"
    );
}

#[test]
fn unknown_update_stage() {
    assert_eq!(
        error("matmul", "C.update(1): parallel(i)"),
        "schedule names `C.update(1)`, but `C` has 1 update definition(s)"
    );
}

#[test]
fn unknown_loop_variable_lists_the_loops() {
    assert_eq!(
        error("softmax", "mx.update(0): parallel(q)"),
        "in the schedule of `mx.update(0)`: `parallel(q)`: `q` is not a loop here; the loops are: r, c"
    );
}

#[test]
fn splitting_a_variable_twice() {
    assert_eq!(
        error("matmul", "C: split(i, io, ii, 4).split(i, a, b, 2)"),
        "in the schedule of `C`: `split(i, a, b, 2)`: `i` was already split or fused away and cannot be split twice; the loops are now: io, ii, j"
    );
}

#[test]
fn new_loop_name_already_in_use() {
    assert_eq!(
        error("matmul", "C: split(i, io, j, 4)"),
        "in the schedule of `C`: `split(i, io, j, 4)`: the new loop name `j` is already in use; choose a fresh name"
    );
}

// ---------------------------------------------------------------------------------------------
// Factors and widths
// ---------------------------------------------------------------------------------------------

#[test]
fn split_factor_zero() {
    assert_eq!(
        error("matmul", "C: split(i, io, ii, 0)"),
        "in the schedule of `C`: `split(i, io, ii, 0)`: the factor must be a positive integer, not 0"
    );
}

#[test]
fn negative_split_factor() {
    assert_eq!(
        error("brighten", "out: split(x, xo, xi, -4)"),
        "in the schedule of `out`: `split(x, xo, xi, -4)`: the factor must be a positive integer, not -4"
    );
}

#[test]
fn negative_tile_factor() {
    assert_eq!(
        error("gaussian5", "out: tile(y, x, yo, xo, yi, xi, 8, -16)"),
        "in the schedule of `out`: `tile(y, x, yo, xo, yi, xi, 8, -16)`: the factor must be a positive integer, not -16"
    );
}

#[test]
fn vectorize_width_out_of_range() {
    assert_eq!(
        error("matmul", "C: vectorize(j, 128)"),
        "in the schedule of `C`: `vectorize(j, 128)`: a width of 128 is out of range; use 1 to 64"
    );
}

#[test]
fn vectorize_a_loop_too_long() {
    assert_eq!(
        error("blur3x3", "out: split(x, xo, xi, 512).vectorize(xi)"),
        "in the schedule of `out`: `vectorize(xi)`: a width of 512 is out of range; use 1 to 64"
    );
}

#[test]
fn unroll_factor_out_of_range() {
    assert_eq!(
        error("blur3x3", "out: split(x, xo, xi, 512).unroll(xi)"),
        "in the schedule of `out`: `unroll(xi)`: an unroll factor of 512 is out of range; use 1 to 256"
    );
    assert_eq!(
        error("blur3x3", "out: unroll(x, 300)"),
        "in the schedule of `out`: `unroll(x, 300)`: an unroll factor of 300 is out of range; use 1 to 256"
    );
}

// `vectorize(j)` or `unroll(x)` without a factor on a loop whose extent is not a constant is
// refused by lowering, once bounds inference has found the extent (tests/constant_extents.rs).

// ---------------------------------------------------------------------------------------------
// Loop kinds
// ---------------------------------------------------------------------------------------------

#[test]
fn vectorizing_a_fold_reduction_loop_is_allowed() {
    // Halide's `atomic().vectorize()`: the lanes keep partial sums (or maxima).
    plan("matmul", "C.update(0): vectorize(k, 4)");
    plan("conv2d", "out.update(0): vectorize(kx)");
    plan(
        "softmax",
        "mx: compute_root(); mx.update(0): vectorize(c, 8); s: compute_root(); s.update(0): vectorize(c, 8)",
    );
}

#[test]
fn vectorizing_a_histogram_loop() {
    assert_eq!(
        error("histogram", "hist.update(0): vectorize(x, 4)"),
        "in the schedule of `hist.update(0)`: `vectorize(x, 4)`: loop `x.v` carries a reduction dependency and cannot be vectorized; only pure loops whose elements are computed independently can, and the reduction loops of an update folding into a target they do not move (`f(x) += e`, `f(x) *= e`, `f(x) = max(f(x), e)` or min)"
    );
}

#[test]
fn parallelizing_a_reduction_loop() {
    assert_eq!(
        error("histogram", "hist.update(0): parallel(y)"),
        "in the schedule of `hist.update(0)`: `parallel(y)`: loop `y` carries a reduction dependency and cannot be parallel; only pure loops whose elements are computed independently can"
    );
    assert_eq!(
        error("matmul", "C.update(0): parallel(k)"),
        "in the schedule of `C.update(0)`: `parallel(k)`: loop `k` carries a reduction dependency and cannot be parallel; only pure loops whose elements are computed independently can"
    );
}

#[test]
fn a_loop_given_two_kinds() {
    assert_eq!(
        error("matmul", "C: vectorize(j, 4).unroll(j.v)"),
        "in the schedule of `C`: `unroll(j.v)`: `j.v` is already vectorized; a loop has one kind"
    );
    assert_eq!(
        error("matmul", "C: parallel(i).parallel(i)"),
        "in the schedule of `C`: `parallel(i)`: `i` is already parallel; a loop has one kind"
    );
}

#[test]
fn splitting_a_loop_that_has_a_kind() {
    assert_eq!(
        error("matmul", "C: parallel(i).vectorize(i, 4)"),
        "in the schedule of `C`: `vectorize(i, 4)`: `i` is already parallel; split and fuse loops before giving them a kind"
    );
    assert_eq!(
        error("conv2d", "out: parallel(n).fuse(n, f, nf)"),
        "in the schedule of `out`: `fuse(n, f, nf)`: `n` is already parallel; split and fuse loops before giving them a kind"
    );
}

// ---------------------------------------------------------------------------------------------
// Loop structure
// ---------------------------------------------------------------------------------------------

#[test]
fn reorder_with_a_repeated_loop() {
    assert_eq!(
        error("matmul", "C: reorder(j, i, j)"),
        "in the schedule of `C`: `reorder(j, i, j)`: `j` appears twice; reorder takes a permutation of loops"
    );
}

#[test]
fn fuse_of_non_adjacent_loops() {
    assert_eq!(
        error("conv2d", "out: fuse(n, y, ny)"),
        "in the schedule of `out`: `fuse(n, y, ny)`: only adjacent loops can be fused, the outer one first; the loops are: n, f, y, x"
    );
}

#[test]
fn fuse_of_a_pure_and_a_reduction_loop() {
    assert_eq!(
        error("matmul", "C.update(0): fuse(j, k, jk)"),
        "in the schedule of `C.update(0)`: `fuse(j, k, jk)`: a pure loop and a reduction loop cannot be fused"
    );
}

// ---------------------------------------------------------------------------------------------
// Tails
// ---------------------------------------------------------------------------------------------

#[test]
fn shift_tail_on_an_update() {
    assert_eq!(
        error("matmul", "C: split(i, io, ii, 4, shift); C.update(0): split(i, io, ii, 4, shift)"),
        "in the schedule of `C.update(0)`: `split(i, io, ii, 4, shift)`: the shift tail recomputes points, which an update cannot do; use guard"
    );
}

#[test]
fn round_up_tail_on_the_output() {
    assert_eq!(
        error("matmul", "C: split(i, io, ii, 4, round_up)"),
        "in the schedule of `C`: `split(i, io, ii, 4, round_up)`: the round_up tail computes past the extent, which the output cannot store; use guard or shift"
    );
}

#[test]
fn round_up_tail_on_an_update_of_the_output() {
    assert_eq!(
        error("matmul", "C.update(0): tile(i, j, io, jo, ii, ji, 4, 8, round_up)"),
        "in the schedule of `C.update(0)`: `tile(i, j, io, jo, ii, ji, 4, 8, round_up)`: the round_up tail cannot be used on an update; use guard"
    );
}

// ---------------------------------------------------------------------------------------------
// Placement
// ---------------------------------------------------------------------------------------------

#[test]
fn placement_directive_on_an_update_line() {
    assert_eq!(
        error("softmax", "s.update(0): compute_root()"),
        "in the schedule of `s.update(0)`: `compute_root()`: where a function is computed and stored is scheduled on its pure definition's line, not an update's"
    );
}

#[test]
fn placement_of_the_output() {
    assert_eq!(
        error("softmax", "P: compute_root()"),
        "in the schedule of `P`: `compute_root()`: the output is always computed and stored at root"
    );
}

#[test]
fn compute_inline_of_a_function_with_an_update() {
    assert_eq!(
        error("softmax", "s: compute_inline()"),
        "in the schedule of `s`: `compute_inline()`: a function with an update definition cannot be inlined; use compute_root() or compute_at(...)"
    );
}

#[test]
fn a_function_placed_twice() {
    assert_eq!(
        error("blur3x3", "bx: compute_root().compute_at(out, y)"),
        "in the schedule of `bx`: `compute_at(out, y)`: the function is already placed by `compute_root()`; a function is placed once"
    );
    assert_eq!(
        error("blur3x3", "bx: compute_at(out, y).store_root(); bx: store_at(out, y)"),
        "in the schedule of `bx`: `store_at(out, y)`: the function is already placed by `store_root()`; a function is placed once"
    );
}

#[test]
fn compute_at_a_loop_that_does_not_exist() {
    assert_eq!(
        error("blur3x3", "out: split(y, yo, yi, 8); bx: compute_at(out, y)"),
        "in the schedule of `bx`: `compute_at(out, y)`: `y` is not a loop of that stage; its loops are: yo, yi, x"
    );
    assert_eq!(
        error("blur3x3", "bx: compute_at(out, z)"),
        "in the schedule of `bx`: `compute_at(out, z)`: `z` is not a loop of that stage; its loops are: y, x"
    );
}

#[test]
fn compute_at_a_stage_that_does_not_exist() {
    assert_eq!(
        error("softmax", "e: compute_at(s.update(3), r)"),
        "in the schedule of `e`: `compute_at(s.update(3), r)`: there is no function stage `s.update(3)`; the stages are: mx, mx.update(0), e, s, s.update(0), P"
    );
    assert_eq!(
        error("blur3x3", "bx: compute_at(D, y)"),
        "in the schedule of `bx`: `compute_at(D, y)`: there is no function stage `D`; the stages are: bx, out"
    );
}

#[test]
fn compute_at_an_inlined_function() {
    assert_eq!(
        error("softmax", "mx: compute_at(e, c)"),
        "in the schedule of `mx`: `compute_at(e, c)`: `e` is computed inline, so it has no loops to compute at; place `e` with compute_root() or compute_at(...) too, or name a loop of its consumer"
    );
}

/// `s`, unplaced, is at root by default (it has an update): the error says so, and how to move
/// it; placed explicitly, it is not "by default".
#[test]
fn compute_at_a_loop_that_does_not_enclose_every_use() {
    assert_eq!(
        error("softmax", "mx: compute_at(P, c)"),
        "in the schedule of `mx`: `compute_at(P, c)`: that loop does not enclose every use: `s` also reads this function outside it (`s` is computed at root by default, as a function with an update is: place it in that loop with `s: compute_at(P, c)`); legal: compute_root(), or a loop of a function inside which every consumer is computed"
    );
    assert_eq!(
        error("softmax", "mx: compute_at(P, c)\ns: compute_root()"),
        "in the schedule of `mx`: `compute_at(P, c)`: that loop does not enclose every use: `s` also reads this function outside it; legal: compute_root(), or a loop of a function inside which every consumer is computed"
    );
}

#[test]
fn compute_at_the_function_itself() {
    assert_eq!(
        error("blur3x3", "bx: compute_at(bx, y)"),
        "in the schedule of `bx`: `compute_at(bx, y)`: that loop does not enclose every use: `out` also reads this function outside it; legal: compute_root(), or compute_at(out, v) for v in y, x"
    );
}

#[test]
fn compute_at_inside_a_vectorized_loop() {
    assert_eq!(
        error("blur3x3", "out: vectorize(x, 8); bx: compute_at(out, x.v)"),
        "in the schedule of `bx`: `compute_at(out, x.v)`: `x.v` is a vectorized loop or inside one; compute at a loop outside the vectorized loop"
    );
}

#[test]
fn store_at_inside_the_compute_level() {
    assert_eq!(
        error("blur3x3", "bx: compute_at(out, y).store_at(out, x)"),
        "in the schedule of `bx`: `store_at(out, x)`: storage must be at the compute level or outside it, and this function is computed by `compute_at(out, y)`"
    );
}

#[test]
fn store_at_inside_the_default_root_computation() {
    assert_eq!(
        error("softmax", "s: store_at(P, r)"),
        "in the schedule of `s`: `store_at(P, r)`: storage must be at the compute level or outside it, and this function is computed at root (the default for a function with an update definition); compute it inside that loop with compute_at(...)"
    );
}

/// Storage shared by the iterations of a parallel loop computing into it is a race
/// (softmax's row sums, computed per element of a parallel fused loop into one root buffer,
/// came out wrong); Halide refuses it too.
#[test]
fn storage_outside_a_parallel_loop_it_is_computed_in() {
    assert_eq!(
        error("softmax", "P: fuse(r, c, f).parallel(f); s: compute_at(P, f).store_root()"),
        "in the schedule of `s`: `store_root()`: the function is stored outside `P`'s parallel loop `f` but computed inside it: its update would accumulate into the same elements from different threads at once; store it at or inside that loop (store_at(P, f)), or keep the loop serial"
    );
    // At or inside the parallel loop, serial loops between, and a pure function (each element
    // written with one value, whichever thread writes it) are fine.
    plan(
        "blur3x3",
        "out: split(y, yo, yi, 8).parallel(yo); bx: compute_at(out, yi).store_at(out, yo)",
    );
    plan(
        "blur3x3",
        "out: split(y, yo, yi, 8).parallel(yo); bx: compute_at(out, yi).store_root()",
    );
    plan(
        "blur3x3",
        "out: split(y, yo, yi, 8); bx: compute_at(out, yi).store_root()",
    );
}

#[test]
fn storage_for_an_inlined_function() {
    assert_eq!(
        error("blur3x3", "bx: store_root()"),
        "in the schedule of `bx`: `store_root()`: the function is computed inline (as a pure function is unless placed), so it has no loops or storage to schedule; add compute_root() or compute_at(...)"
    );
    assert_eq!(
        error("gaussian5", "gx: compute_inline().store_at(out, y)"),
        "in the schedule of `gx`: `store_at(out, y)`: the function is computed inline (as a pure function is unless placed), so it has no loops or storage to schedule; add compute_root() or compute_at(...)"
    );
}

#[test]
fn loop_directives_for_an_inlined_function() {
    assert_eq!(
        error("softmax", "e: parallel(r)"),
        "in the schedule of `e`: `parallel(r)`: the function is computed inline (as a pure function is unless placed), so it has no loops or storage to schedule; add compute_root() or compute_at(...)"
    );
    assert_eq!(
        error("blur3x3", "bx: vectorize(x, 8).compute_inline()"),
        "in the schedule of `bx`: `vectorize(x, 8)`: the function is computed inline (as a pure function is unless placed), so it has no loops or storage to schedule; add compute_root() or compute_at(...)"
    );
}

#[test]
fn a_compute_at_cycle() {
    assert_eq!(
        error(
            "softmax",
            "mx: compute_at(e, r); e: compute_at(mx.update(0), r)"
        ),
        "in the schedule of `mx`: `compute_at(e, r)`: placements form a cycle: mx -> e -> mx"
    );
}

// ---------------------------------------------------------------------------------------------
// Wrappers and storage order
// ---------------------------------------------------------------------------------------------

#[test]
fn wrap_of_a_name_the_function_does_not_read() {
    assert_eq!(
        error("matmul", "C: wrap(X, Xp)"),
        "in the schedule of `C`: `wrap(X, Xp)`: the function does not read `X`; it reads: A, B (wrap names an input or function it calls directly)"
    );
}

/// `out` reads the input only through `bx`: a wrap redirects direct calls only.
#[test]
fn wrap_of_an_input_read_only_through_another_function() {
    assert_eq!(
        error("blur3x3", "out: wrap(input, ip)"),
        "in the schedule of `out`: `wrap(input, ip)`: the function does not read `input`; it reads: bx (wrap names an input or function it calls directly)"
    );
}

#[test]
fn wrap_of_a_scalar_parameter() {
    let kernel = "kernel scale(A: f32[N], alpha: f32) -> out: f32[N] { out(x) = alpha * A(x); }";
    assert_eq!(
        error_in(kernel, "out: wrap(alpha, a)"),
        "in the schedule of `out`: `wrap(alpha, a)`: the function does not read `alpha`; it reads: A (wrap names an input or function it calls directly)"
    );
}

#[test]
fn a_function_wrapping_itself() {
    assert_eq!(
        error("matmul", "C: wrap(C, Cp)"),
        "in the schedule of `C`: `wrap(C, Cp)`: a function cannot wrap itself: its updates' reads of itself are its own storage; wrap it in a consumer instead"
    );
}

#[test]
fn wrap_in_an_unknown_function() {
    assert_eq!(
        error("matmul", "D: wrap(B, Bp)"),
        "schedule names unknown function `D` (the functions are: C)"
    );
}

#[test]
fn wrapper_named_like_an_input() {
    assert_eq!(
        error("matmul", "C: wrap(B, A)"),
        "in the schedule of `C`: `wrap(B, A)`: the wrapper's name `A` is already the input `A`; choose a fresh name"
    );
}

#[test]
fn wrapper_named_like_a_function() {
    assert_eq!(
        error("blur3x3", "out: wrap(bx, out)"),
        "in the schedule of `out`: `wrap(bx, out)`: the wrapper's name `out` is already the function `out`; choose a fresh name"
    );
}

#[test]
fn wrapper_named_like_a_variable() {
    assert_eq!(
        error("matmul", "C: wrap(B, k)"),
        "in the schedule of `C`: `wrap(B, k)`: the wrapper's name `k` is already a variable of `C`; choose a fresh name"
    );
}

#[test]
fn wrapper_named_like_a_size() {
    assert_eq!(
        error("matmul", "C: wrap(B, N)"),
        "in the schedule of `C`: `wrap(B, N)`: the wrapper's name `N` is already the size `N`; choose a fresh name"
    );
}

#[test]
fn two_wraps_with_one_name() {
    assert_eq!(
        error("matmul", "C: wrap(A, P).wrap(B, P)"),
        "in the schedule of `C`: `wrap(B, P)`: the wrapper's name `P` is already the function `P`; choose a fresh name"
    );
    assert_eq!(
        error("softmax", "e: wrap(X, Xw); s: wrap(e, Xw)"),
        "in the schedule of `s`: `wrap(e, Xw)`: the wrapper's name `Xw` is already the function `Xw`; choose a fresh name"
    );
}

/// After the first wrap, `C` reads `P`, not `B`.
#[test]
fn wrapping_one_read_twice() {
    assert_eq!(
        error("matmul", "C: wrap(B, P).wrap(B, Q)"),
        "in the schedule of `C`: `wrap(B, Q)`: the function does not read `B`; it reads: A, P (wrap names an input or function it calls directly)"
    );
}

#[test]
fn wrapper_name_that_is_not_a_plain_name() {
    assert_eq!(
        error("matmul", "C: wrap(B, B.p)"),
        "in the schedule of `C`: `wrap(B, B.p)`: `B.p` cannot name a function: use letters, digits and `_`, starting with a letter or `_`, and no reserved word"
    );
    assert_eq!(
        error("matmul", "C: wrap(B, sum)"),
        "in the schedule of `C`: `wrap(B, sum)`: `sum` cannot name a function: use letters, digits and `_`, starting with a letter or `_`, and no reserved word"
    );
}

#[test]
fn wrap_on_an_update_line() {
    assert_eq!(
        error("matmul", "C.update(0): wrap(B, Bp)"),
        "in the schedule of `C.update(0)`: `wrap(B, Bp)`: wrap, reorder_storage and fold_storage apply to the whole function (every stage); write them on its pure definition's line, not an update's"
    );
}

/// Wraps apply in the order written: a wrapper is wrapped again only on a later line.
#[test]
fn wrap_in_a_wrapper_before_it_exists() {
    assert_eq!(
        error("matmul", "Bp: wrap(B, Bq); C: wrap(B, Bp)"),
        "schedule names unknown function `Bp` (the functions are: C)"
    );
    let p = plan("matmul", "C: wrap(B, Bp); Bp: wrap(B, Bq)");
    assert_eq!(p.pipeline().func("Bp").unwrap().callees(), ["Bq"]);
}

/// Loop and storage directives of a wrapper need it placed (it is a pure function, inlined by
/// default); its placement line may come before the wrap.
#[test]
fn scheduling_an_inlined_wrapper() {
    assert_eq!(
        error("matmul", "C: wrap(B, Bp); Bp: vectorize(j, 8)"),
        "in the schedule of `Bp`: `vectorize(j, 8)`: the function is computed inline (as a pure function is unless placed), so it has no loops or storage to schedule; add compute_root() or compute_at(...)"
    );
    plan(
        "matmul",
        "Bp: compute_at(C.update(0), j).vectorize(j, 8); C: wrap(B, Bp)",
    );
}

#[test]
fn reorder_storage_of_the_output() {
    assert_eq!(
        error("matmul", "C: reorder_storage(j, i)"),
        "in the schedule of `C`: `reorder_storage(j, i)`: the output is stored in the caller's buffer, row-major in its dimensions' order; its storage order cannot change"
    );
}

#[test]
fn reorder_storage_of_an_unknown_dimension() {
    assert_eq!(
        error("blur3x3", "bx: compute_root().reorder_storage(x, q)"),
        "in the schedule of `bx`: `reorder_storage(x, q)`: `q` is not a dimension of the function; its dimensions are: y, x"
    );
}

#[test]
fn reorder_storage_with_a_repeated_dimension() {
    assert_eq!(
        error("blur3x3", "bx: compute_root().reorder_storage(x, x)"),
        "in the schedule of `bx`: `reorder_storage(x, x)`: `x` appears twice; reorder takes a permutation of loops"
    );
}

#[test]
fn reorder_storage_on_an_update_line() {
    assert_eq!(
        error("softmax", "s.update(0): reorder_storage(r)"),
        "in the schedule of `s.update(0)`: `reorder_storage(r)`: wrap, reorder_storage and fold_storage apply to the whole function (every stage); write them on its pure definition's line, not an update's"
    );
}

#[test]
fn reorder_storage_of_an_inlined_function() {
    assert_eq!(
        error("blur3x3", "bx: reorder_storage(x, y)"),
        "in the schedule of `bx`: `reorder_storage(x, y)`: the function is computed inline (as a pure function is unless placed), so it has no loops or storage to schedule; add compute_root() or compute_at(...)"
    );
}

/// An inlined consumer may wrap what it reads; the wrapper is placed at a loop of the function
/// it is inlined into.
#[test]
fn wrap_in_an_inlined_consumer() {
    let p = plan("blur3x3", "bx: wrap(input, ip); ip: compute_at(out, y)");
    assert_eq!(p.funcs["bx"].compute, Placement::Inline);
    assert_eq!(p.funcs["ip"].compute, at("out", 0, "y"));
}

/// sgemm with B packed per column tile: the wrapper is an ordinary function of the plan,
/// computed at the tile loop, its variables named after `C`'s reads of B, stored `j` outermost
/// when asked.
#[test]
fn matmul_with_b_packed() {
    let p = plan(
        "matmul",
        "C: wrap(B, Bp)\n\
         C.update(0): split(j, jo, ji, 8).reorder(jo, i, k, ji).vectorize(ji)\n\
         Bp: compute_at(C.update(0), jo).reorder_storage(j, k).vectorize(j, 8)",
    );
    let bp = p.pipeline().func("Bp").unwrap();
    assert_eq!(bp.vars, ["k", "j"]);
    assert_eq!(p.pipeline().func("C").unwrap().callees(), ["Bp"]);
    assert_eq!(p.funcs["Bp"].compute, at("C", 1, "jo"));
    assert_eq!(p.funcs["Bp"].storage_order, [1, 0]);
    assert_eq!(p.funcs["C"].storage_order, [0, 1]);
    assert_eq!(loops(&p, "Bp", 0), ["k", "j", "j.v:vectorized"]);
}

// ---------------------------------------------------------------------------------------------
// Legal schedules and their plans
// ---------------------------------------------------------------------------------------------

#[test]
fn default_schedules_validate() {
    for name in [
        "matmul",
        "blur3x3",
        "softmax",
        "conv2d",
        "histogram",
        "gaussian5",
        "brighten",
    ] {
        plan(name, "");
    }
    let p = plan("softmax", "");
    assert_eq!(p.funcs["e"].compute, Placement::Inline);
    assert_eq!(p.funcs["mx"].compute, Placement::Root);
    assert_eq!(p.funcs["s"].store, Placement::Root);
    assert_eq!(loops(&p, "s", 1), ["r", "c(r)"]);
    assert_eq!(loops(&plan("histogram", ""), "hist", 1), ["y(r)", "x(r)"]);
}

#[test]
fn blur3x3_fast_schedule() {
    let p = plan("blur3x3", "out: tile(y, x, yo, xo, yi, xi, 32, 64).vectorize(xi, 8); bx: compute_at(out, xo).vectorize(x, 8)");
    assert_eq!(p.funcs["bx"].compute, at("out", 0, "xo"));
    assert_eq!(p.funcs["bx"].store, at("out", 0, "xo"));
    assert_eq!(p.funcs["out"].compute, Placement::Root);
    assert_eq!(
        loops(&p, "out", 0),
        ["yo", "xo", "yi", "xi", "xi.v:vectorized"]
    );
    assert_eq!(loops(&p, "bx", 0), ["y", "x", "x.v:vectorized"]);
}

#[test]
fn matmul_fast_schedule() {
    let p = plan(
        "matmul",
        "C: tile(i, j, io, jo, ii, ji, 4, 8)\n\
         C.update(0): tile(i, j, io, jo, ii, ji, 4, 8).reorder(io, jo, k, ii, ji).vectorize(ji).unroll(ii)",
    );
    assert_eq!(loops(&p, "C", 0), ["io", "jo", "ii", "ji"]);
    assert_eq!(
        loops(&p, "C", 1),
        ["io", "jo", "k(r)", "ii:unrolled", "ji:vectorized"]
    );
    let inner = p.funcs["C"].stages[1].dim("ji").unwrap();
    assert_eq!(inner.const_extent, Some(8));
}

#[test]
fn softmax_fused_rows() {
    let p = plan(
        "softmax",
        "P: vectorize(c, 8).parallel(r); e: compute_at(P, r); s: compute_at(P, r); mx: compute_at(P, r)\n\
         s.update(0): unroll(c, 4)",
    );
    for f in ["e", "s", "mx"] {
        assert_eq!(p.funcs[f].compute, at("P", 0, "r"), "{f}");
        assert_eq!(p.funcs[f].store, at("P", 0, "r"), "{f}");
    }
    assert_eq!(loops(&p, "P", 0), ["r:parallel", "c", "c.v:vectorized"]);
    assert_eq!(loops(&p, "s", 1), ["r", "c(r)", "c.u:unrolled(r)"]);
}

#[test]
fn conv2d_reduction_inside_vector_loop() {
    let p = plan(
        "conv2d",
        "out: parallel(f).vectorize(x, 8)\n\
         out.update(0): reorder(n, f, y, c, ky, kx, x).vectorize(x, 8).unroll(kx).unroll(ky).parallel(f)",
    );
    assert_eq!(
        loops(&p, "out", 1),
        [
            "n",
            "f:parallel",
            "y",
            "c(r)",
            "ky:unrolled(r)",
            "kx:unrolled(r)",
            "x",
            "x.v:vectorized"
        ]
    );
}

#[test]
fn gaussian5_with_tails_and_storage_at_root() {
    let p = plan(
        "gaussian5",
        "out: split(y, yo, yi, 32, shift).parallel(yo).vectorize(x, 8); gx: compute_at(out, yo).store_root().vectorize(x, 8)",
    );
    assert_eq!(p.funcs["gx"].compute, at("out", 0, "yo"));
    assert_eq!(p.funcs["gx"].store, Placement::Root);
    assert_eq!(
        loops(&p, "out", 0),
        ["yo:parallel", "yi", "x", "x.v:vectorized"]
    );
}

#[test]
fn histogram_reduction_reordered_and_unrolled() {
    let p = plan(
        "histogram",
        "hist: vectorize(b, 8); hist.update(0): reorder(x, y).unroll(x, 4)",
    );
    assert_eq!(loops(&p, "hist", 0), ["b", "b.v:vectorized"]);
    assert_eq!(loops(&p, "hist", 1), ["x(r)", "x.u:unrolled(r)", "y(r)"]);
}

#[test]
fn round_up_on_a_producer_and_fuse_then_parallel() {
    let p = plan(
        "blur3x3",
        "bx: compute_root().split(x, xo, xi, 8, round_up).vectorize(xi)",
    );
    assert_eq!(p.funcs["bx"].compute, Placement::Root);
    assert_eq!(loops(&p, "bx", 0), ["y", "xo", "xi:vectorized"]);
    let p = plan(
        "conv2d",
        "out: fuse(n, f, nf).parallel(nf); out.update(0): fuse(n, f, nf).parallel(nf)",
    );
    assert_eq!(loops(&p, "out", 0), ["nf:parallel", "y", "x"]);
    assert_eq!(
        loops(&p, "out", 1),
        ["nf:parallel", "y", "x", "c(r)", "ky(r)", "kx(r)"]
    );
}

#[test]
fn brighten_vector_and_parallel() {
    let p = plan("brighten", "out: vectorize(x, 16).parallel(y)");
    assert_eq!(loops(&p, "out", 0), ["y:parallel", "x", "x.v:vectorized"]);
}

#[test]
fn store_outside_compute_in_the_same_stage() {
    let p = plan("blur3x3", "bx: compute_at(out, x).store_at(out, y)");
    assert_eq!(p.funcs["bx"].compute, at("out", 0, "x"));
    assert_eq!(p.funcs["bx"].store, at("out", 0, "y"));
    let p = plan("blur3x3", "bx: store_root().compute_at(out, y)");
    assert_eq!(p.funcs["bx"].store, Placement::Root);
}

// ---------------------------------------------------------------------------------------------
// Validation never panics
// ---------------------------------------------------------------------------------------------

mod fuzz {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::Config;
    use strata_scheduler::{Directive, Line, LoopLevel, Schedule, StageRef, TailStrategy};

    type Names = &'static [&'static str];

    /// What a `wrap` may name: inputs and functions of the kernels, names that exist nowhere
    /// (`W`, the name the function lists give a wrapper) and a loop name.
    const WRAPPED: Names = &[
        "A", "B", "input", "weights", "X", "bx", "e", "gx", "W", "D", "x",
    ];

    /// Each kernel with its functions (and one that does not exist) and its loop names (and
    /// names a schedule makes).
    const KERNELS: &[(&str, Names, Names)] = &[
        (
            "matmul",
            &["C", "D", "W"],
            &["i", "j", "k", "io", "ii", "k.v", "t"],
        ),
        (
            "blur3x3",
            &["bx", "out", "D", "W"],
            &["y", "x", "xo", "xi", "yo", "x.v", "t"],
        ),
        (
            "softmax",
            &["mx", "e", "s", "P", "D", "W"],
            &["r", "c", "co", "ci", "c.v", "t"],
        ),
        (
            "conv2d",
            &["out", "D", "W"],
            &["n", "f", "y", "x", "c", "ky", "kx", "xo", "x.v", "t"],
        ),
        (
            "histogram",
            &["hist", "D", "W"],
            &["b", "y", "x", "xo", "b.v", "t"],
        ),
        (
            "gaussian5",
            &["gx", "out", "D", "W"],
            &["y", "x", "yo", "yi", "x.v", "t"],
        ),
        (
            "brighten",
            &["out", "D", "W"],
            &["y", "x", "xo", "xi", "x.v", "t"],
        ),
    ];

    fn name(names: Names) -> impl Strategy<Value = String> {
        prop::sample::select(names).prop_map(String::from)
    }

    fn stage() -> impl Strategy<Value = StageRef> {
        prop_oneof![3 => Just(StageRef::Pure), 1 => (0..3usize).prop_map(StageRef::Update)]
    }

    fn factor() -> impl Strategy<Value = i64> {
        prop_oneof![
            -1i64..=9,
            Just(64),
            Just(65),
            Just(256),
            Just(257),
            Just(i64::MAX),
            Just(i64::MIN)
        ]
    }

    fn tail() -> impl Strategy<Value = Option<TailStrategy>> {
        prop::option::of(prop_oneof![
            Just(TailStrategy::Guard),
            Just(TailStrategy::Shift),
            Just(TailStrategy::RoundUp)
        ])
    }

    fn directive(funcs: Names, vars: Names) -> impl Strategy<Value = Directive> {
        let var = move || name(vars);
        let level = move || {
            (name(funcs), stage(), var()).prop_map(|(func, stage, var)| LoopLevel {
                func,
                stage,
                var,
            })
        };
        prop_oneof![
            (var(), var(), var(), factor(), tail()).prop_map(
                |(var, outer, inner, factor, tail)| Directive::Split {
                    var,
                    outer,
                    inner,
                    factor,
                    tail
                }
            ),
            (var(), var(), var()).prop_map(|(outer, inner, fused)| Directive::Fuse {
                outer,
                inner,
                fused
            }),
            prop::collection::vec(var(), 1..5).prop_map(Directive::Reorder),
            (prop::collection::vec(var(), 6), factor(), factor(), tail()).prop_map(
                |(n, fy, fx, tail)| Directive::Tile {
                    y: n[0].clone(),
                    x: n[1].clone(),
                    yo: n[2].clone(),
                    xo: n[3].clone(),
                    yi: n[4].clone(),
                    xi: n[5].clone(),
                    fy,
                    fx,
                    tail,
                }
            ),
            (var(), prop::option::of(factor()))
                .prop_map(|(var, width)| Directive::Vectorize { var, width }),
            (var(), prop::option::of(factor()))
                .prop_map(|(var, factor)| Directive::Unroll { var, factor }),
            var().prop_map(|var| Directive::Parallel { var }),
            Just(Directive::ComputeInline),
            Just(Directive::ComputeRoot),
            Just(Directive::StoreRoot),
            level().prop_map(Directive::ComputeAt),
            level().prop_map(Directive::StoreAt),
            prop::collection::vec(var(), 1..4).prop_map(Directive::ReorderStorage),
            (name(WRAPPED), name(WRAPPED))
                .prop_map(|(producer, wrapper)| Directive::Wrap { producer, wrapper }),
        ]
    }

    /// A kernel and a schedule over its names.
    fn kernel_and_schedule() -> impl Strategy<Value = (&'static str, Schedule)> {
        prop::sample::select(KERNELS).prop_flat_map(|(kernel, funcs, vars)| {
            let line = (
                name(funcs),
                stage(),
                prop::collection::vec(directive(funcs, vars), 0..4),
            )
                .prop_map(|(func, stage, directives)| Line {
                    func,
                    stage,
                    directives,
                });
            (
                Just(kernel),
                prop::collection::vec(line, 0..5).prop_map(|lines| Schedule { lines }),
            )
        })
    }

    proptest! {
        #![proptest_config(Config { cases: 5000, failure_persistence: None, ..Config::default() })]

        #[test]
        fn validation_never_panics((k, s) in kernel_and_schedule()) {
            let lifted = lift_reductions(&kernel(k));
            match validate(&lifted, &s) {
                Ok(plan) => prop_assert_eq!(plan.funcs.len(), plan.pipeline().funcs.len()),
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
    }
}

/// `D` is read only by the lifted `E_sum0`'s update, whose loops `i, l, j` are not all loops of
/// `E_sum0`'s pure definition.
const SCALED_MATMUL: &str = "kernel scaled_matmul(A: f32[M, K], B: f32[K, N]) -> E: f32[M, N] {
    D(i, k) = 2.0 * A(i, k);
    E(i, l) = 1.0 + sum(j in 0..K) D(i, j) * B(j, l);
}";

/// The message validating `text` against a kernel given as source gives.
fn error_in(source: &str, text: &str) -> String {
    let pipeline =
        strata_dsl::parse_kernel(source, "test.strata").unwrap_or_else(|e| panic!("{e}"));
    let schedule = parse_schedule(text).unwrap_or_else(|e| panic!("{e}"));
    match validate(&lift_reductions(&pipeline), &schedule) {
        Ok(_) => panic!("`{text}` should be rejected"),
        Err(e) => e.to_string(),
    }
}

/// Each place the message offers, written as it says, validates.
fn assert_suggestions_validate(source: &str, func: &str, message: &str, rest: &str) {
    let pipeline =
        strata_dsl::parse_kernel(source, "test.strata").unwrap_or_else(|e| panic!("{e}"));
    let (_, legal) = message
        .split_once("legal: compute_root(), or compute_at(")
        .expect("a compute_at suggestion");
    let (stage, loops) = legal.split_once(", v) for v in ").expect("a list of loops");
    for v in loops.split(", ") {
        let text = format!("{func}: compute_at({stage}, {v}){rest}");
        let schedule = parse_schedule(&text).unwrap_or_else(|e| panic!("{e}"));
        if let Err(e) = validate(&lift_reductions(&pipeline), &schedule) {
            panic!("suggested `{text}` is refused: {e}");
        }
    }
}

#[test]
fn compute_at_suggestions_name_the_consumers_stage() {
    let message = error_in(SCALED_MATMUL, "D: compute_at(E_sum0, l)");
    assert_eq!(
        message,
        "in the schedule of `D`: `compute_at(E_sum0, l)`: that loop does not enclose every use: `E_sum0` also reads this function outside it; legal: compute_root(), or compute_at(E_sum0.update(0), v) for v in i, l, j"
    );
    assert_suggestions_validate(SCALED_MATMUL, "D", &message, "");
}

#[test]
fn compute_at_suggestions_leave_out_vectorized_loops() {
    let vectorized = "\nE_sum0.update(0): vectorize(l, 4)";
    let message = error_in(
        SCALED_MATMUL,
        &format!("D: compute_at(E_sum0, i){vectorized}"),
    );
    assert!(
        message
            .ends_with("legal: compute_root(), or compute_at(E_sum0.update(0), v) for v in i, l"),
        "{message}"
    );
    assert_suggestions_validate(SCALED_MATMUL, "D", &message, vectorized);
}
