//! The schedule's text form: parsing then printing gives the canonical text, printing then
//! parsing gives back an equal `Schedule`, the chaining API prints what it built, serde JSON
//! round-trips, malformed text gives a located message, and the parser never panics.

use proptest::prelude::*;
use proptest::test_runner::Config;
use strata_scheduler::schedule::text::parse_schedule;
use strata_scheduler::{Directive, Line, LoopLevel, Schedule, StageRef, TailStrategy};

fn config(cases: u32) -> Config {
    Config {
        cases,
        // Failures print their minimal input; keep the source tree free of regression files.
        failure_persistence: None,
        ..Config::default()
    }
}

fn parse(text: &str) -> Schedule {
    parse_schedule(text).unwrap_or_else(|e| panic!("{text:?} should parse:\n{e}"))
}

/// (text as written, canonical text). Together they use every directive, every tail, update
/// lines, `compute_at`/`store_at` at update levels and dotted loop names.
const CASES: &[(&str, &str)] = &[
    (
        "out: tile(y, x, yo, xo, yi, xi, 32, 256).vectorize(xi, 16).parallel(yo)",
        "out: tile(y, x, yo, xo, yi, xi, 32, 256).vectorize(xi, 16).parallel(yo)",
    ),
    (
        "out: tile(y, x, yo, xo, yi, xi, 32, 64).vectorize(xi, 8); bx: compute_at(out, xo).vectorize(x, 8)",
        "out: tile(y, x, yo, xo, yi, xi, 32, 64).vectorize(xi, 8)\nbx: compute_at(out, xo).vectorize(x, 8)",
    ),
    (
        "C: tile(i, j, io, jo, ii, ji, 4, 8)\nC.update(0): tile(i, j, io, jo, ii, ji, 4, 8).reorder(io, jo, k, ii, ji).vectorize(ji).unroll(ii)",
        "C: tile(i, j, io, jo, ii, ji, 4, 8)\nC.update(0): tile(i, j, io, jo, ii, ji, 4, 8).reorder(io, jo, k, ii, ji).vectorize(ji).unroll(ii)",
    ),
    ("hist.update(0): parallel(r.y)", "hist.update(0): parallel(r.y)"),
    (
        "f: split(x, xo, xi, 8, guard).split(y, yo, yi, 4, shift).split(z, zo, zi, 2, round_up)",
        "f: split(x, xo, xi, 8, guard).split(y, yo, yi, 4, shift).split(z, zo, zi, 2, round_up)",
    ),
    (
        "g: tile(y, x, yo, xo, yi, xi, 8, 8, round_up).fuse(yo, xo, t).parallel(t)",
        "g: tile(y, x, yo, xo, yi, xi, 8, 8, round_up).fuse(yo, xo, t).parallel(t)",
    ),
    (
        "e: compute_at(s.update(0), r).store_at(P, r)",
        "e: compute_at(s.update(0), r).store_at(P, r)",
    ),
    (
        "a: compute_inline; b: compute_root; c: store_root.compute_at(out, y)",
        "a: compute_inline()\nb: compute_root()\nc: store_root().compute_at(out, y)",
    ),
    (
        "  // a comment line\n\nout :  vectorize( x , 8 ) . unroll(y,4)  // trailing comment\r\n\n",
        "out: vectorize(x, 8).unroll(y, 4)",
    ),
    (
        "out: vectorize(x).unroll(x.v.u, -3).reorder(x.v, y)",
        "out: vectorize(x).unroll(x.v.u, -3).reorder(x.v, y)",
    ),
    (
        "mx.update(0): split(c, co, ci, 0, guard);;\n;mx: compute_at(P.update(12), c.v)",
        "mx.update(0): split(c, co, ci, 0, guard)\nmx: compute_at(P.update(12), c.v)",
    ),
    ("out:\nout: parallel(y)", "out:\nout: parallel(y)"),
    (
        "\tx_1.update(3): reorder(r.x, r.y, _z, a9).vectorize(_z, 64)",
        "x_1.update(3): reorder(r.x, r.y, _z, a9).vectorize(_z, 64)",
    ),
    (
        "C: wrap(B, Bp).wrap(A,Ap)\nBp: compute_at(C.update(0), jo).reorder_storage(j, k).vectorize(j, 8)",
        "C: wrap(B, Bp).wrap(A, Ap)\nBp: compute_at(C.update(0), jo).reorder_storage(j, k).vectorize(j, 8)",
    ),
    ("", ""),
    ("// nothing but a comment", ""),
];

#[test]
fn parse_then_print_gives_the_canonical_text() {
    for (text, canonical) in CASES {
        assert_eq!(
            parse(text).to_string(),
            *canonical,
            "printing the parse of {text:?}"
        );
    }
}

#[test]
fn print_then_parse_gives_the_same_schedule() {
    for (text, canonical) in CASES {
        let schedule = parse(text);
        assert_eq!(
            parse(&schedule.to_string()),
            schedule,
            "re-parsing the print of {text:?}"
        );
        assert_eq!(parse(canonical), schedule, "parsing {canonical:?}");
    }
}

#[test]
fn from_str_is_parse_schedule() {
    let text = "out: parallel(y)";
    let schedule: Schedule = text.parse().unwrap();
    assert_eq!(schedule, parse(text));
    assert!("out parallel(y)".parse::<Schedule>().is_err());
}

#[test]
fn parsed_structure_is_exact() {
    let schedule = parse("hist.update(0): parallel(r.y).vectorize(b, 8)\nbx: compute_at(out.update(2), x.v).store_root()");
    let expected = Schedule {
        lines: vec![
            Line {
                func: "hist".into(),
                stage: StageRef::Update(0),
                directives: vec![
                    Directive::Parallel { var: "r.y".into() },
                    Directive::Vectorize {
                        var: "b".into(),
                        width: Some(8),
                    },
                ],
            },
            Line {
                func: "bx".into(),
                stage: StageRef::Pure,
                directives: vec![
                    Directive::ComputeAt(LoopLevel {
                        func: "out".into(),
                        stage: StageRef::Update(2),
                        var: "x.v".into(),
                    }),
                    Directive::StoreRoot,
                ],
            },
        ],
    };
    assert_eq!(schedule, expected);
}

#[test]
fn tails_and_optional_arguments_parse_to_their_values() {
    let schedule = parse(
        "f: split(x, xo, xi, 8).split(y, yo, yi, 4, guard).split(z, zo, zi, 2, shift)\
         .tile(a, b, ao, bo, ai, bi, 3, -5, round_up).vectorize(v).unroll(u).unroll(w, 2)",
    );
    let d = &schedule.lines[0].directives;
    let tail = |i: usize| match &d[i] {
        Directive::Split { tail, .. } | Directive::Tile { tail, .. } => *tail,
        other => panic!("not a split: {other}"),
    };
    assert_eq!(
        [tail(0), tail(1), tail(2), tail(3)],
        [
            None,
            Some(TailStrategy::Guard),
            Some(TailStrategy::Shift),
            Some(TailStrategy::RoundUp)
        ]
    );
    assert!(matches!(&d[3], Directive::Tile { fy: 3, fx: -5, .. }));
    assert_eq!(
        d[4],
        Directive::Vectorize {
            var: "v".into(),
            width: None
        }
    );
    assert_eq!(
        d[5],
        Directive::Unroll {
            var: "u".into(),
            factor: None
        }
    );
    assert_eq!(
        d[6],
        Directive::Unroll {
            var: "w".into(),
            factor: Some(2)
        }
    );
}

#[test]
fn extreme_factors_round_trip() {
    let text = format!(
        "f: split(x, xo, xi, {}).split(y, yo, yi, {})",
        i64::MIN,
        i64::MAX
    );
    assert_eq!(parse(&text).to_string(), text);
}

#[test]
fn chaining_api_prints_the_expected_text() {
    let mut s = Schedule::new();
    s.func("out")
        .tile("y", "x", "yo", "xo", "yi", "xi", 32, 256)
        .vectorize("xi", 16)
        .parallel("yo");
    s.func("bx").compute_at("out", "xo").vectorize("x", 16);
    s.func("C")
        .split_with("i", "io", "ii", 4, Some(TailStrategy::Guard))
        .update(0)
        .reorder(&["k", "i", "j"])
        .vectorize_loop("j")
        .unroll_loop("k");
    s.func("g").compute_inline();
    s.func("h")
        .compute_root()
        .split("x", "xo", "xi", 8)
        .fuse("xo", "y", "t")
        .unroll("xi", 2);
    s.func("k").store_root().store_at("out", "y");
    // Continuing a stage appends to its line.
    s.func("out").unroll("yi", 2);
    s.stage("hist", StageRef::Update(1)).parallel("r.y");
    s.func("e").compute_at("s", "r");
    // Continuing C's pure line, which an earlier line opened.
    s.func("C").wrap("B", "Bp");
    s.func("Bp")
        .compute_at("C", "jo")
        .reorder_storage(&["j", "k"]);
    let expected = "\
out: tile(y, x, yo, xo, yi, xi, 32, 256).vectorize(xi, 16).parallel(yo).unroll(yi, 2)
bx: compute_at(out, xo).vectorize(x, 16)
C: split(i, io, ii, 4, guard).wrap(B, Bp)
C.update(0): reorder(k, i, j).vectorize(j).unroll(k)
g: compute_inline()
h: compute_root().split(x, xo, xi, 8).fuse(xo, y, t).unroll(xi, 2)
k: store_root().store_at(out, y)
hist.update(1): parallel(r.y)
e: compute_at(s, r)
Bp: compute_at(C, jo).reorder_storage(j, k)";
    assert_eq!(s.to_string(), expected);
    assert_eq!(parse(expected), s);
}

#[test]
fn serde_json_round_trips() {
    let mut schedules: Vec<Schedule> = CASES.iter().map(|(text, _)| parse(text)).collect();
    let mut built = Schedule::new();
    built
        .func("out")
        .split_with("x", "xo", "xi", 8, Some(TailStrategy::RoundUp))
        .vectorize_loop("xi");
    built.func("bx").compute_at("out", "xo").store_root();
    schedules.push(built);
    for schedule in schedules {
        let json = serde_json::to_string(&schedule).unwrap();
        let back: Schedule = serde_json::from_str(&json).unwrap();
        assert_eq!(back, schedule, "JSON {json}");
        let pretty = serde_json::to_string_pretty(&schedule).unwrap();
        assert_eq!(serde_json::from_str::<Schedule>(&pretty).unwrap(), schedule);
    }
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// The message and 1-based (line, column) of the error parsing `text`.
fn error(text: &str) -> (String, (usize, usize)) {
    match parse_schedule(text) {
        Ok(s) => panic!("{text:?} should not parse, got {s:?}"),
        Err(e) => (e.message.clone(), e.line_col()),
    }
}

#[test]
fn error_unknown_directive_lists_the_directives() {
    assert_eq!(
        error("out: parallel(y)\nbx: compute_at(out, y).vectorise(x, 8)"),
        (
            "unknown directive `vectorise` (did you mean `vectorize`?); the directives are: split, fuse, reorder, tile, vectorize, unroll, parallel, compute_inline, compute_root, compute_at, store_root, store_at, reorder_storage, wrap, fold_storage, rfactor, specialize".into(),
            (2, 24)
        )
    );
}

#[test]
fn error_unknown_directive_without_a_close_match() {
    assert_eq!(
        error("out: swizzle(x)"),
        (
            "unknown directive `swizzle`; the directives are: split, fuse, reorder, tile, vectorize, unroll, parallel, compute_inline, compute_root, compute_at, store_root, store_at, reorder_storage, wrap, fold_storage, rfactor, specialize".into(),
            (1, 6)
        )
    );
}

#[test]
fn error_update_in_the_chain_says_where_it_goes() {
    assert_eq!(
        error("hist: parallel(b).update(0)"),
        (
            "unknown directive `update`; the directives are: split, fuse, reorder, tile, vectorize, unroll, parallel, compute_inline, compute_root, compute_at, store_root, store_at, reorder_storage, wrap, fold_storage, rfactor, specialize; `.update(N)` goes before the `:`, as in `f.update(0): ...`".into(),
            (1, 19)
        )
    );
}

#[test]
fn error_wrong_number_of_arguments_says_what_the_directive_takes() {
    assert_eq!(
        error("out: split(x, xo, 8)"),
        (
            "`split` takes 4 or 5 arguments, found 3: split(var, outer, inner, factor[, tail])"
                .into(),
            (1, 6)
        )
    );
    assert_eq!(
        error("out: parallel(x, y)"),
        (
            "`parallel` takes 1 argument, found 2: parallel(var)".into(),
            (1, 6)
        )
    );
    assert_eq!(
        error("bx: compute_root(out)"),
        (
            "`compute_root` takes no arguments, found 1: compute_root()".into(),
            (1, 5)
        )
    );
    assert_eq!(
        error("C: wrap(B)"),
        (
            "`wrap` takes 2 arguments, found 1: wrap(input or function, new function)".into(),
            (1, 4)
        )
    );
    assert_eq!(
        error("out: reorder()"),
        (
            "`reorder` takes 1 or more arguments, found 0: reorder(loop, ...), outermost first"
                .into(),
            (1, 6)
        )
    );
    assert_eq!(
        error("out: tile(y, x, yo, xo, yi, xi, 8)"),
        (
            "`tile` takes 8 or 9 arguments, found 7: tile(y, x, yo, xo, yi, xi, fy, fx[, tail])"
                .into(),
            (1, 6)
        )
    );
    assert_eq!(
        error("bx: compute_at(out)"),
        (
            "`compute_at` takes 2 arguments, found 1: compute_at(func, var)".into(),
            (1, 5)
        )
    );
}

#[test]
fn error_missing_colon() {
    assert_eq!(
        error("out: parallel(y)\n\nbx compute_root()"),
        ("expected `:` after `bx`, found `compute_root`; a line reads `func: directive(...).directive(...)`".into(), (3, 4))
    );
    assert_eq!(
        error("hist.update(0) parallel(b)"),
        (
            "expected `:` after `hist.update(0)`, found `parallel`; a line reads `func: directive(...).directive(...)`".into(),
            (1, 16)
        )
    );
}

#[test]
fn error_non_integer_factor() {
    assert_eq!(
        error("out: split(x, xo, xi, four)"),
        (
            "the split factor must be an integer, found `four`".into(),
            (1, 23)
        )
    );
    assert_eq!(
        error("out: vectorize(x, 4.5)"),
        (
            "the vector width must be an integer, found `4.5`".into(),
            (1, 19)
        )
    );
    assert_eq!(
        error("out: tile(y, x, yo, xo, yi, xi, 8, x)"),
        (
            "the factor of `x` must be an integer, found `x`".into(),
            (1, 36)
        )
    );
    assert_eq!(
        error("out: unroll(x, 99999999999999999999)"),
        (
            "the unroll factor `99999999999999999999` does not fit in 64 bits".into(),
            (1, 16)
        )
    );
}

#[test]
fn error_unknown_tail_strategy() {
    assert_eq!(
        error("out: split(x, xo, xi, 8, clamp)"),
        (
            "unknown tail strategy `clamp`; use guard, shift or round_up".into(),
            (1, 26)
        )
    );
    assert_eq!(
        error("out: tile(y, x, yo, xo, yi, xi, 8, 8, 4)"),
        (
            "unknown tail strategy `4`; use guard, shift or round_up".into(),
            (1, 39)
        )
    );
}

#[test]
fn error_trailing_garbage() {
    assert_eq!(
        error("out: parallel(y) vectorize(x, 8)"),
        (
            "unexpected `vectorize` after a directive; chain directives with `.` and end a line with a newline or `;`".into(),
            (1, 18)
        )
    );
    assert_eq!(
        error("out: compute_root() )"),
        ("unexpected `)` after a directive; chain directives with `.` and end a line with a newline or `;`".into(), (1, 21))
    );
}

#[test]
fn error_unexpected_character() {
    assert_eq!(
        error("out: parallel(y)\nbx: compute_at(out, y) + 1"),
        ("unexpected character `+` in a schedule".into(), (2, 24))
    );
    assert_eq!(
        error("out: parallel(ÿ)"),
        ("unexpected character `ÿ` in a schedule".into(), (1, 15))
    );
}

#[test]
fn error_unclosed_arguments() {
    assert_eq!(
        error("out: parallel(y\nbx: compute_root()"),
        (
            "expected `,` or `)` in the arguments of `parallel`, found the end of the line".into(),
            (1, 16)
        )
    );
    assert_eq!(
        error("out: split(x, xo, xi, 8"),
        (
            "expected `,` or `)` in the arguments of `split`, found the end of the schedule".into(),
            (1, 24)
        )
    );
    assert_eq!(error("out: parallel"), ("expected `(` after `parallel`, found the end of the schedule; it is written parallel(var)".into(), (1, 14)));
}

#[test]
fn error_missing_directive_or_argument() {
    assert_eq!(
        error("out: parallel(y)."),
        (
            "expected a directive after `.`, found the end of the schedule".into(),
            (1, 18)
        )
    );
    assert_eq!(
        error("out: fuse(x, , xy)"),
        (
            "expected an argument in the arguments of `fuse`, found `,`".into(),
            (1, 14)
        )
    );
    assert_eq!(
        error(": parallel(y)"),
        (
            "expected a function name at the start of the line, found `:`".into(),
            (1, 1)
        )
    );
    assert_eq!(
        error("4: parallel(y)"),
        ("expected a function name, found `4`".into(), (1, 1))
    );
}

#[test]
fn error_bad_update_index() {
    assert_eq!(
        error("hist.update(x): parallel(b)"),
        (
            "expected the update's index (0, 1, ...), found `x`".into(),
            (1, 13)
        )
    );
    assert_eq!(
        error("hist.update(-1): parallel(b)"),
        (
            "expected the update's index (0, 1, ...), found `-1`".into(),
            (1, 13)
        )
    );
    assert_eq!(
        error("bx: compute_at(out.update(0, x)"),
        (
            "expected `)` after `out.update(0`, found `,`".into(),
            (1, 28)
        )
    );
}

#[test]
fn error_wrong_kind_of_argument() {
    assert_eq!(
        error("out: split(4, xo, xi, 8)"),
        ("expected a loop name, found `4`".into(), (1, 12))
    );
    assert_eq!(
        error("out: parallel(x..y)"),
        ("expected a loop name, found `x..y`".into(), (1, 15))
    );
    assert_eq!(
        error("bx: compute_at(out, out.update(0))"),
        (
            "expected a loop name, found `out.update(0)`".into(),
            (1, 21)
        )
    );
    assert_eq!(
        error("bx: store_at(4, y)"),
        ("expected a function name, found `4`".into(), (1, 14))
    );
    assert_eq!(
        error("C: wrap(B, 3)"),
        (
            "expected the name of an input or function, found `3`".into(),
            (1, 12)
        )
    );
}

#[test]
fn error_renders_with_file_line_column_and_caret() {
    let err =
        parse_schedule("out: parallel(y)\nbx: compute_at(out, y).vectorise(x, 8)").unwrap_err();
    assert_eq!(err.file, "schedule");
    let rendered = err.to_string();
    let expected_tail = " --> schedule:2:24\n  |\n2 | bx: compute_at(out, y).vectorise(x, 8)\n  |                        ^^^^^^^^^";
    assert!(rendered.ends_with(expected_tail), "{rendered}");
    assert!(
        rendered.starts_with("error: unknown directive `vectorise` (did you mean `vectorize`?)"),
        "{rendered}"
    );
}

#[test]
fn error_spans_cover_the_offending_text() {
    let text = "out: split(x, xo, 8)";
    let err = parse_schedule(text).unwrap_err();
    assert_eq!(&text[err.span.start..err.span.end], "split(x, xo, 8)");
    let text = "out: vectorize(x, 4.5)";
    let err = parse_schedule(text).unwrap_err();
    assert_eq!(&text[err.span.start..err.span.end], "4.5");
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/// Parses `text`; an error must lie inside the text and render; an accepted text must print to
/// a canonical text that parses back to the same schedule.
fn check_total(text: &str) -> Result<(), TestCaseError> {
    match parse_schedule(text) {
        Ok(schedule) => {
            let printed = schedule.to_string();
            let reparsed = parse_schedule(&printed)
                .map_err(|e| TestCaseError::fail(format!("{printed:?} does not re-parse:\n{e}")))?;
            prop_assert_eq!(reparsed, schedule);
        }
        Err(e) => {
            prop_assert!(
                e.span.start <= e.span.end && e.span.end <= text.len(),
                "span {:?} outside {:?}",
                e.span,
                text
            );
            prop_assert!(text.is_char_boundary(e.span.start) && text.is_char_boundary(e.span.end));
            let _ = e.to_string();
        }
    }
    Ok(())
}

/// Pieces of schedules, good and bad, for random sequences.
const TOKENS: &[&str] = &[
    "out",
    "bx",
    "x",
    "xo",
    "x.v",
    "r.y",
    "update",
    ".update(",
    "update(0)",
    "(",
    ")",
    ",",
    ".",
    ":",
    ";",
    "\n",
    " ",
    "\t",
    "\r\n",
    "//",
    "split",
    "fuse",
    "reorder",
    "tile",
    "vectorize",
    "unroll",
    "parallel",
    "compute_inline",
    "compute_root",
    "compute_at",
    "store_root",
    "store_at",
    "guard",
    "shift",
    "round_up",
    "0",
    "8",
    "-4",
    "-",
    "4.5",
    "99999999999999999999",
    "18446744073709551616",
    "x..y",
    "é",
    "ÿ",
    "_",
    "..",
    "::",
    "((",
    "))",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..40).prop_map(|t| t.concat())
}

/// A name as the text form allows: letters, digits and `_` in dot-separated parts, including
/// names that look like keywords or end in `.update`.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z_][a-z0-9_]{0,5}(\\.[a-z0-9_]{1,3}){0,2}",
        1 => prop::sample::select(&["update", "x.update", "split", "guard", "round_up", "x.v", "r.y", "_", "x.0", "A9"][..])
            .prop_map(String::from),
    ]
}

fn tail() -> impl Strategy<Value = Option<TailStrategy>> {
    prop::option::of(prop_oneof![
        Just(TailStrategy::Guard),
        Just(TailStrategy::Shift),
        Just(TailStrategy::RoundUp)
    ])
}

fn stage() -> impl Strategy<Value = StageRef> {
    prop_oneof![
        Just(StageRef::Pure),
        (0..4usize).prop_map(StageRef::Update),
        any::<usize>().prop_map(StageRef::Update)
    ]
}

fn level() -> impl Strategy<Value = LoopLevel> {
    (name(), stage(), name()).prop_map(|(func, stage, var)| LoopLevel { func, stage, var })
}

fn factor() -> impl Strategy<Value = i64> {
    prop_oneof![-2i64..=64, any::<i64>()]
}

fn directive() -> impl Strategy<Value = Directive> {
    prop_oneof![
        (name(), name(), name(), factor(), tail()).prop_map(|(var, outer, inner, factor, tail)| {
            Directive::Split {
                var,
                outer,
                inner,
                factor,
                tail,
            }
        }),
        (name(), name(), name()).prop_map(|(outer, inner, fused)| Directive::Fuse {
            outer,
            inner,
            fused
        }),
        prop::collection::vec(name(), 1..5).prop_map(Directive::Reorder),
        (prop::collection::vec(name(), 6), factor(), factor(), tail()).prop_map(
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
        (name(), prop::option::of(factor()))
            .prop_map(|(var, width)| Directive::Vectorize { var, width }),
        (name(), prop::option::of(factor()))
            .prop_map(|(var, factor)| Directive::Unroll { var, factor }),
        name().prop_map(|var| Directive::Parallel { var }),
        Just(Directive::ComputeInline),
        Just(Directive::ComputeRoot),
        Just(Directive::StoreRoot),
        level().prop_map(Directive::ComputeAt),
        level().prop_map(Directive::StoreAt),
        prop::collection::vec(name(), 1..5).prop_map(Directive::ReorderStorage),
        (name(), name()).prop_map(|(producer, wrapper)| Directive::Wrap { producer, wrapper }),
        (name(), factor()).prop_map(|(var, extent)| Directive::FoldStorage { var, extent }),
        "([A-Z] % [1-9] == [0-9]|\\([A-Z] - [0-9]\\) % [1-9] == 0|[a-z]+ > 0\\.5 && min\\([A-Z], [A-Z]\\) >= [0-9]{1,3})"
            .prop_map(Directive::Specialize),
    ]
}

fn schedule() -> impl Strategy<Value = Schedule> {
    let line = (name(), stage(), prop::collection::vec(directive(), 0..6)).prop_map(
        |(func, stage, directives)| Line {
            func,
            stage,
            directives,
        },
    );
    prop::collection::vec(line, 0..6).prop_map(|lines| Schedule { lines })
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        check_total(&text)?;
    }

    #[test]
    fn schedule_like_strings_never_panic(text in "[a-z_.(),:;0-9 \\n-]{0,80}") {
        check_total(&text)?;
    }

    #[test]
    fn token_sequences_never_panic(text in token_soup()) {
        check_total(&text)?;
    }

    #[test]
    fn mutated_schedules_never_panic(s in schedule(), cut in any::<prop::sample::Index>(), insert in prop::sample::select(TOKENS)) {
        let mut text = s.to_string();
        if !text.is_empty() {
            let mut at = cut.index(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            text.insert_str(at, insert);
        }
        check_total(&text)?;
    }

    #[test]
    fn random_schedules_round_trip(s in schedule()) {
        let printed = s.to_string();
        let parsed = parse_schedule(&printed).map_err(|e| TestCaseError::fail(format!("{printed:?}:\n{e}")))?;
        prop_assert_eq!(&parsed, &s);
        prop_assert_eq!(parsed.to_string(), printed);
    }
}
