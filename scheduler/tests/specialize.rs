//! `specialize(cond)`: the text form, one test per rule a specialization can break, which
//! directives each case runs, the lowered branches (golden), and answers that never depend on
//! which case runs: the interpreter against the reference on shapes on both sides of each
//! condition.

use rand::rngs::StdRng;
use rand::SeedableRng;
use strata_dsl::evaluate;
use strata_dsl::random::{agree, random_args};
use strata_scheduler::interp::interpret;
use strata_scheduler::lower::{bind_sizes, lower};
use strata_scheduler::schedule::lift_reductions::lift_reductions;
use strata_scheduler::schedule::specialize::{versions, Versions};
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::schedule::validate::validate;
use strata_scheduler::schedule::{Directive, Schedule, StageRef};
use strata_testkit::example;
use strata_testkit::generate::random_schedule;

fn parse(text: &str) -> Schedule {
    parse_schedule(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The message validating `text` against the example kernel gives.
fn error(kernel: &str, text: &str) -> String {
    match validate(&lift_reductions(&example(kernel)), &parse(text)) {
        Ok(_) => panic!("{kernel}: `{text}` should be refused"),
        Err(e) => e.to_string(),
    }
}

fn versions_of(kernel: &str, text: &str) -> Versions {
    versions(&lift_reductions(&example(kernel)), &parse(text))
        .unwrap_or_else(|e| panic!("{kernel}: `{text}`: {e}"))
}

/// The loops of `func`'s pure stage in each version, in the order the versions are tried.
fn loops(v: &Versions, func: &str) -> Vec<Vec<String>> {
    let names = |p: &strata_scheduler::schedule::validate::Plan| {
        (p.funcs[func].stages[0].dims.iter())
            .map(|d| format!("{}:{:?}", d.name, d.kind))
            .collect()
    };
    v.versions
        .iter()
        .map(|version| names(&version.plan))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Text form
// ---------------------------------------------------------------------------------------------

#[test]
fn both_spellings_parse_to_the_same_directives_and_print_as_a_head() {
    let chained = parse("out: split(x, xo, xi, 16).specialize(W % 16 == 0).vectorize(xi)");
    let directives = &chained.lines[0].directives;
    assert_eq!(directives[1], Directive::Specialize("W % 16 == 0".into()));
    assert_eq!(
        chained.to_string(),
        "out: split(x, xo, xi, 16).specialize(W % 16 == 0).vectorize(xi)"
    );
    let head = parse("out.specialize( (W - 2) % 16 == 0 && gain > 1.5 ):vectorize(x, 8)");
    assert_eq!(
        head.lines[0].directives,
        vec![
            Directive::Specialize("(W - 2) % 16 == 0 && gain > 1.5".into()),
            Directive::Vectorize {
                var: "x".into(),
                width: Some(8)
            }
        ]
    );
    assert_eq!(
        head.to_string(),
        "out.specialize((W - 2) % 16 == 0 && gain > 1.5): vectorize(x, 8)"
    );
    let update = parse("hist.update(0).specialize(H >= 64): parallel(y)");
    assert_eq!(update.lines[0].stage, StageRef::Update(0));
    assert_eq!(
        update.to_string(),
        "hist.update(0).specialize(H >= 64): parallel(y)"
    );
    let empty_case = parse("out.specialize(min(H, W) > (3)):");
    assert_eq!(empty_case.to_string(), "out.specialize(min(H, W) > (3)):");
}

#[test]
fn print_parse_and_serde_round_trip() {
    let texts = [
        "out: split(x, xo, xi, 16).specialize(W % 16 == 0).vectorize(xi)\nout: parallel(y)",
        "out.specialize(W % 16 == 0): vectorize(x, 16)\nout.specialize(W >= 8): vectorize(x, 8)",
        "bx: compute_root()\nbx.specialize((W - 2) % 4 == 0 || H < 5): vectorize(x, 4)",
        "hist.update(0).specialize(!(H == 1)): parallel(y)",
    ];
    for text in texts {
        let s = parse(text);
        assert_eq!(s.to_string(), text);
        assert_eq!(parse(&s.to_string()), s);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Schedule>(&json).unwrap(), s);
    }
    let mut built = Schedule::new();
    built
        .func("out")
        .split("x", "xo", "xi", 4)
        .specialize(" W % 4 == 0 ")
        .vectorize_loop("xi");
    assert_eq!(
        built.to_string(),
        "out: split(x, xo, xi, 4).specialize(W % 4 == 0).vectorize(xi)"
    );
    assert_eq!(parse(&built.to_string()), built);
}

#[test]
fn text_errors_point_at_the_condition() {
    let e = parse_schedule("out: specialize()").unwrap_err();
    assert!(e.message.contains("`specialize` takes a condition"), "{e}");
    let e = parse_schedule("out: specialize(W % (4 == 0).vectorize(x)").unwrap_err();
    assert!(e.message.contains("unclosed `(`"), "{e}");
    assert_eq!(e.span.start, "out: specialize".len());
    let e = parse_schedule("out: specialize(W > 1\nout: parallel(y)").unwrap_err();
    assert!(e.message.contains("ends with `)` on its line"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Rules (one test each)
// ---------------------------------------------------------------------------------------------

#[test]
fn rule_nested_specialization() {
    let e = error(
        "brighten",
        "out: specialize(W % 4 == 0).vectorize(x, 4).specialize(H > 2)",
    );
    assert_eq!(e, "in the schedule of `out`: `specialize(H > 2)`: a specialization cannot be specialized again; write the conjunction as one condition (`a && b`) on the stage");
}

#[test]
fn rule_per_function_directives_cannot_be_specialized() {
    let e = error("blur3x3", "bx: specialize(W > 8).compute_root()");
    assert_eq!(e, "in the schedule of `bx`: `compute_root()`: placement, wrap, reorder_storage, fold_storage and rfactor apply to the whole function in every case; write them before `specialize` (or on a line of their own)");
    let e = error("blur3x3", "out.specialize(W > 8): wrap(bx, bw)");
    assert!(e.contains("`wrap(bx, bw)`: placement, wrap"), "{e}");
    let e = error("matmul", "C.update(0).specialize(K > 4): rfactor(k, Ci)");
    assert!(e.contains("`rfactor(k, Ci)`: placement, wrap"), "{e}");
    // An rfactor on the general case's lines after the case: the case would lack `Ci`.
    let e = error(
        "matmul",
        "C.update(0).specialize(K > 4): parallel(i)\nC.update(0): rfactor(k, Ci)",
    );
    assert!(e.contains("`specialize(K > 4)`: placement, wrap"), "{e}");
    // Before the case, every version factors the same way.
    versions_of(
        "matmul",
        "C.update(0): rfactor(k, Ci)\nC.update(0).specialize(K > 4): parallel(i)",
    );
}

#[test]
fn rule_bad_condition() {
    let cases = [
        ("W + 1", "a condition must be a bool, found i32"),
        (
            "image(0, 0) > 3",
            "`image` reads data: a condition may use only sizes, scalar parameters and constants",
        ),
        ("out(0, 0) > 3", "`out` reads data"),
        ("Q > 1", "unknown name `Q`"),
        ("W %% 2 == 0", "expected"),
        ("W > 1 W", "expected the end of the condition"),
        (
            "sum(r in 0..W) r > 3",
            "a reduction: a condition may use only",
        ),
    ];
    for (cond, message) in cases {
        let e = error("brighten", &format!("out.specialize({cond}): parallel(y)"));
        let prefix = format!("in the schedule of `out`: `specialize({cond})`: the condition must be a bool expression of sizes, scalar parameters and constants: ");
        assert!(e.starts_with(&prefix), "{cond}: {e}");
        assert!(e.contains(message), "{cond}: {e}");
    }
}

#[test]
fn rule_too_many_versions() {
    let cases: Vec<String> = (1..=16)
        .map(|n| format!("out.specialize(W >= {n}): parallel(y)"))
        .collect();
    assert!(versions(
        &lift_reductions(&example("brighten")),
        &parse(&cases[..15].join("\n"))
    )
    .is_ok());
    let e = error("brighten", &cases.join("\n"));
    assert_eq!(e, "in the schedule of `out`: `specialize(W >= 16)`: the schedule's specializations make 17 versions of the kernel (the product over stages of their cases plus the general one); at most 16 keep code size and compile time bounded");
    // Stages multiply: 4 x 5 cases of two stages.
    let mut two = vec!["bx: compute_root()".to_string()];
    two.extend((1..=3).map(|n| format!("bx.specialize(W >= {n}): parallel(y)")));
    two.extend((1..=4).map(|n| format!("out.specialize(H >= {n}): parallel(y)")));
    let e = error("blur3x3", &two.join("\n"));
    assert!(e.contains("make 20 versions"), "{e}");
}

#[test]
fn rule_an_inlined_function_has_no_cases() {
    let e = error("blur3x3", "bx.specialize(W > 8): vectorize(x, 4)");
    assert!(
        e.starts_with(
            "in the schedule of `bx`: `specialize(W > 8)`: the function is computed inline"
        ),
        "{e}"
    );
}

#[test]
fn a_case_breaking_a_loop_rule_is_refused_like_any_directive() {
    let e = error("brighten", "out.specialize(W > 8): vectorize(z, 4)");
    assert!(
        e.starts_with("in the schedule of `out`: `vectorize(z, 4)`: `z` is not a loop here"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// What each case schedules
// ---------------------------------------------------------------------------------------------

#[test]
fn a_case_inherits_the_directives_written_before_it_and_only_those() {
    let v = versions_of(
        "brighten",
        "out: split(x, xo, xi, 4)\nout.specialize(W % 4 == 0): vectorize(xi)\nout: parallel(y)",
    );
    assert_eq!(
        loops(&v, "out"),
        vec![
            vec!["y:Serial", "xo:Serial", "xi:Vectorized"],
            vec!["y:Parallel", "xo:Serial", "xi:Serial"],
        ]
    );
    // The same condition twice is one case; the first case that holds wins.
    let v = versions_of(
        "brighten",
        "out.specialize(W > 8): parallel(y)\nout.specialize(W > 4): unroll(x, 2)\nout.specialize(W > 8): vectorize(x, 4)",
    );
    assert_eq!(v.split.stages[0].cases.len(), 2);
    assert_eq!(
        loops(&v, "out"),
        vec![
            vec!["y:Parallel", "x:Serial", "x.v:Vectorized"],
            vec!["y:Serial", "x:Serial", "x.u:Unrolled"],
            vec!["y:Serial", "x:Serial"],
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Lowering
// ---------------------------------------------------------------------------------------------

#[test]
fn golden_branches_of_a_specialized_split() {
    let schedule = parse("out: split(x, xo, xi, 4).specialize(W % 4 == 0).vectorize(xi)");
    let kernel = lower(&example("brighten"), &schedule).unwrap();
    insta::assert_snapshot!("brighten_specialized_split", kernel.to_string());
    // The condition's case has no tail: no guard, no shifted last piece, no serial lanes.
    let text = kernel.to_string();
    let (special, general) = text.split_once("} else {").unwrap();
    assert!(!special.contains("<= out.x.max") && !special.contains("max(min("));
    assert!(general.contains("if (out.s0.x <= out.x.max)"));
    // Sizes fixed in advance decide the condition: one branch is left.
    for (w, kept) in [(64, "ramp("), (66, "min(out.s0.xo * 4, 62)")] {
        let sizes = strata_dsl::sizes(&[("H", 8), ("W", w)]);
        let bound = bind_sizes(&kernel, &sizes).unwrap().to_string();
        assert!(
            !bound.contains("% 4 == 0") && bound.contains(kept),
            "{bound}"
        );
    }
}

#[test]
fn golden_two_specialized_stages_nest() {
    let schedule = parse(
        "bx: compute_at(out, y)\nbx.specialize(W >= 32): vectorize(x, 8)\nout.specialize((W - 2) % 8 == 0): vectorize(x, 8)",
    );
    let kernel = lower(&example("blur3x3"), &schedule).unwrap();
    insta::assert_snapshot!("blur3x3_two_specialized_stages", kernel.to_string());
}

/// Interpreter against reference for `text` on `kernel` at every shape of `shapes`.
fn agrees(kernel: &str, text: &str, shapes: &[Vec<(&str, i64)>]) {
    let pipeline = example(kernel);
    let lowered = lower(&pipeline, &parse(text)).unwrap_or_else(|e| panic!("{text}: {e}"));
    let mut rng = StdRng::seed_from_u64(7);
    for shape in shapes {
        let args = random_args(&pipeline, &strata_dsl::sizes(shape), &mut rng).unwrap();
        let expected = evaluate(&pipeline, &args).unwrap();
        let got = interpret(&lowered, &args).unwrap_or_else(|e| panic!("{text} {shape:?}: {e}"));
        agree(&got, &expected, 1e-4).unwrap_or_else(|e| panic!("{text} {shape:?}: {e}"));
    }
}

#[test]
fn hand_specializations_agree_with_the_reference_on_both_sides() {
    let blur_shapes: Vec<Vec<(&str, i64)>> =
        [(3, 3), (5, 10), (9, 18), (10, 17), (12, 34), (4, 26)]
            .iter()
            .map(|&(h, w)| vec![("H", h), ("W", w)])
            .collect();
    let blur = [
        "out: split(x, xo, xi, 8).specialize((W - 2) % 8 == 0).vectorize(xi).parallel(y)",
        "out: tile(y, x, yo, xo, yi, xi, 4, 8, shift)\nout.specialize((W - 2) % 8 == 0 && (H - 2) % 4 == 0): vectorize(xi).unroll(yi)\nbx: compute_at(out, xo)",
        "bx: compute_root()\nbx.specialize(W % 2 == 0): vectorize(x, 2)\nbx.specialize(H >= 9): split(y, yo, yi, 3, guard)\nout.specialize(W > 10): vectorize(x, 4)",
        "out.specialize((W - 2) % 2 == 0): split(x, xo, xi, 2).unroll(xi)\nbx: compute_at(out, y).store_root()",
    ];
    for text in blur {
        agrees("blur3x3", text, &blur_shapes);
    }
    let brighten_shapes: Vec<Vec<(&str, i64)>> = [(1, 1), (2, 8), (3, 12), (4, 16), (5, 7)]
        .iter()
        .map(|&(h, w)| vec![("H", h), ("W", w)])
        .collect();
    agrees(
        "brighten",
        "out: split(x, xo, xi, 4).specialize(W % 4 == 0).vectorize(xi)\nout.specialize(gain > 0.5): parallel(y)",
        &brighten_shapes,
    );
    let matmul_shapes: Vec<Vec<(&str, i64)>> = [(1, 1, 1), (4, 8, 3), (5, 16, 4), (8, 7, 2)]
        .iter()
        .map(|&(m, n, k)| vec![("M", m), ("N", n), ("K", k)])
        .collect();
    agrees(
        "matmul",
        "C: vectorize(j, 4)\nC.update(0).specialize(N % 8 == 0 && M % 4 == 0): tile(i, j, io, jo, ii, ji, 4, 8).vectorize(ji).unroll(ii)\nC.update(0).specialize(K >= 3): reorder(k, j)",
        &matmul_shapes,
    );
}

#[test]
fn the_generator_specializes_stages() {
    let pipeline = example("blur3x3");
    let mut rng = StdRng::seed_from_u64(11);
    let specialized = (0..60)
        .map(|_| random_schedule(&pipeline, &mut rng))
        .filter(|s| s.to_string().contains("specialize("))
        .count();
    assert!(
        specialized >= 5,
        "{specialized} of 60 random schedules specialize a stage"
    );
}
