//! Property tests: the lexer, parser and checker never panic, whatever the input; every kernel
//! that checks prints to text that parses back to the same kernel and prints identically; and
//! the reference evaluator, given small inputs, returns `Ok` or `Err` but never panics.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;
use strata_dsl::lexer::{lex, Tok};
use strata_dsl::{evaluate, parse_kernels, Args, Buffer, Dtype, Extent, InputKind, Pipeline};
use strata_dsl::{BinOp, Expr, Intrinsic, Value};

/// The example kernels, the seeds of the mutation tests.
const EXAMPLES: [&str; 7] = [
    include_str!("../../examples/kernels/blur3x3.strata"),
    include_str!("../../examples/kernels/brighten.strata"),
    include_str!("../../examples/kernels/conv2d.strata"),
    include_str!("../../examples/kernels/gaussian5.strata"),
    include_str!("../../examples/kernels/histogram.strata"),
    include_str!("../../examples/kernels/matmul.strata"),
    include_str!("../../examples/kernels/softmax.strata"),
];

fn config(cases: u32) -> Config {
    Config {
        cases,
        // Failures print their minimal input; keep the source tree free of regression files.
        failure_persistence: None,
        ..Config::default()
    }
}

/// Parses `src`; on success checks the print/re-parse round trip of every kernel, on failure
/// renders the diagnostic (which must not panic either). Returns the kernels.
fn parse_and_round_trip(src: &str) -> Result<Vec<Pipeline>, TestCaseError> {
    match parse_kernels(src, "fuzz.strata") {
        Ok(kernels) => {
            for kernel in &kernels {
                let printed = kernel.to_string();
                let reparsed = match parse_kernels(&printed, "printed.strata") {
                    Ok(k) => k,
                    Err(d) => {
                        return Err(TestCaseError::fail(format!(
                            "the printed kernel does not parse:\n{d}\n--- source:\n{src}"
                        )))
                    }
                };
                prop_assert_eq!(reparsed.len(), 1);
                prop_assert_eq!(
                    reparsed[0].to_string(),
                    printed.clone(),
                    "printing is not stable; source:\n{}",
                    src
                );
                prop_assert_eq!(
                    &reparsed[0],
                    kernel,
                    "the re-parsed kernel differs; printed:\n{}",
                    printed
                );
            }
            Ok(kernels)
        }
        Err(d) => {
            let (line, col) = d.line_col();
            prop_assert!(line >= 1 && col >= 1);
            prop_assert!(d.span.start <= src.len(), "span past the end: {:?}", d.span);
            let rendered = d.to_string();
            prop_assert!(rendered.starts_with("error: "));
            Ok(Vec::new())
        }
    }
}

/// Kernels the properties below once found printing to text that read back differently.
#[test]
fn round_trip_regressions() {
    for value in [
        // A suffixed literal inside a cast printed bare took the cast's type when read back.
        "f64(3.0f32)",
        "f64(2i32)",
        "f64(min(1.0f32, 2.0))",
        "f64(select(A(i) > 0.0, 1.0f32, 2.0) + 1.0)",
        "f64(sum(r in 0..N) 1.0f32)",
        "f64(-(1.0f32 + 2.0) * 3.0)",
        "f64(exp(1.0f32))",
        // The f32-only functions read their literals as f32 whatever the context.
        "f64(fast_exp(1.5)) + f64(fast_pow(A(i), 2)) + f64(fast_log(3))",
        // ... or did not fit it at all.
        "f64(u8(300i32))",
        // A negated zero printed as `-0`, which reads back as the literal 0.
        "f64(--0)",
        "f64(--0u8)",
        "f64(- -0)",
    ] {
        let src = format!("kernel k(A: f32[N]) -> B: f64[N] {{\n    B(i) = {value};\n}}");
        let kernels = parse_and_round_trip(&src).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kernels.len(), 1, "{src}");
    }
}

/// Each kind of nesting at the deepest the parser accepts: checking, printing, re-parsing and
/// evaluating it must fit in a test thread's 2 MiB stack. (This holds with the workspace's
/// `opt-level = 1` test profile; unoptimized, the parser alone needs more stack than that.)
#[test]
fn deepest_accepted_nesting_checks_prints_and_evaluates() {
    type Nest = fn(usize) -> String;
    let kinds: [(&str, Nest); 8] = [
        ("parentheses", |d| {
            format!("{}A(i){}", "(".repeat(d), ")".repeat(d))
        }),
        ("negations", |d| format!("{}A(i)", "-".repeat(d))),
        ("a + chain", |d| vec!["A(i)"; d].join(" + ")),
        ("nested indices", |d| {
            format!("A({}i{})", "D(".repeat(d), ")".repeat(d))
        }),
        ("nested selects", |d| {
            format!(
                "{}A(i){}",
                "select(A(i) > 0.0, 1.0, ".repeat(d),
                ")".repeat(d)
            )
        }),
        ("nested casts", |d| {
            format!("{}A(i){}", "f32(f64(".repeat(d / 2), "))".repeat(d / 2))
        }),
        ("nested reductions", |d| {
            let domains: String = (0..d).map(|k| format!("sum(r{k} in 0..1) ")).collect();
            format!("{domains}A(i)")
        }),
        ("nested intrinsics", |d| {
            format!("{}A(i){}", "max(1.0, ".repeat(d), ")".repeat(d))
        }),
    ];
    for (what, nest) in kinds {
        let src_of = |d: usize| {
            format!(
                "kernel deep(A: f32[N] with clamp_edge, D: i32[N] with clamp_edge) -> B: f32[N] {{\n    B(i) = {};\n}}",
                nest(d)
            )
        };
        let parses = |d: usize| parse_kernels(&src_of(d), "deep.strata").is_ok();
        assert!(parses(1), "{what}: not even depth 1 parses");
        assert!(!parses(10_000), "{what}: no depth limit");
        // Binary search for the deepest that parses (accepted depths are a prefix).
        let (mut deepest, mut refused) = (1, 10_000);
        while refused - deepest > 1 {
            let mid = (deepest + refused) / 2;
            if parses(mid) {
                deepest = mid;
            } else {
                refused = mid;
            }
        }
        assert!(deepest >= 100, "{what}: only {deepest} deep parses");
        let kernels =
            parse_and_round_trip(&src_of(deepest)).unwrap_or_else(|e| panic!("{what}: {e}"));
        let args = Args::new()
            .buffer(
                "A",
                Buffer::from_vec(&[3], vec![1.0f32, -2.0, 3.0]).unwrap(),
            )
            .buffer("D", Buffer::from_vec(&[3], vec![2i32, 0, 1]).unwrap());
        evaluate(&kernels[0], &args).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation on small random inputs
// ---------------------------------------------------------------------------------------------

/// A small deterministic generator for input values (proptest supplies the seed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// A small integer, sometimes negative, sometimes an extreme.
    fn small(&mut self) -> i64 {
        match self.next() % 16 {
            0 => -1,
            1 => 255,
            2 => i64::from(i32::MAX),
            _ => (self.next() % 7) as i64,
        }
    }
}

fn random_buffer(dtype: Dtype, shape: &[usize], rng: &mut Lcg) -> Buffer {
    let n: usize = shape.iter().product();
    let ints: Vec<i64> = (0..n).map(|_| rng.small()).collect();
    macro_rules! of {
        ($t:ty) => {
            Buffer::from_vec(shape, ints.iter().map(|&v| v as $t).collect::<Vec<$t>>())
        };
    }
    match dtype {
        Dtype::Bool => Buffer::from_vec(shape, ints.iter().map(|&v| v % 2 != 0).collect()),
        Dtype::U8 => of!(u8),
        Dtype::U16 => of!(u16),
        Dtype::U32 => of!(u32),
        Dtype::I8 => of!(i8),
        Dtype::I16 => of!(i16),
        Dtype::I32 => of!(i32),
        Dtype::I64 => of!(i64),
        Dtype::F32 => Buffer::from_vec(
            shape,
            ints.iter().map(|&v| v as f32 * 0.5).collect::<Vec<f32>>(),
        ),
        Dtype::F64 => Buffer::from_vec(
            shape,
            ints.iter().map(|&v| v as f64 * 0.5).collect::<Vec<f64>>(),
        ),
    }
    .expect("the shape's product is the length")
}

/// The value of an output extent, if it only uses what the checker allows there.
fn extent_value(e: &Expr, sizes: &[(String, i64)]) -> Option<i64> {
    Some(match e {
        Expr::Const(v) => v.as_i64()?,
        Expr::Size(name) => sizes.iter().find(|(n, _)| n == name)?.1,
        Expr::Neg(a) => extent_value(a, sizes)?.checked_neg()?,
        Expr::Binary(op, a, b) => {
            let (a, b) = (extent_value(a, sizes)?, extent_value(b, sizes)?);
            match op {
                BinOp::Add => a.checked_add(b)?,
                BinOp::Sub => a.checked_sub(b)?,
                BinOp::Mul => a.checked_mul(b)?,
                BinOp::Div if b != 0 => a.div_euclid(b),
                BinOp::Mod if b != 0 => a.rem_euclid(b),
                _ => return None,
            }
        }
        Expr::Intrinsic(Intrinsic::Min, args) => {
            extent_value(&args[0], sizes)?.min(extent_value(&args[1], sizes)?)
        }
        Expr::Intrinsic(Intrinsic::Max, args) => {
            extent_value(&args[0], sizes)?.max(extent_value(&args[1], sizes)?)
        }
        _ => return None,
    })
}

/// Whether `kernel` is cheap enough to evaluate: no integer literal above 300 (which could ask
/// for a huge region or reduction) and a small output.
fn cheap_to_evaluate(kernel: &Pipeline, sizes: &[(String, i64)]) -> bool {
    let printed = kernel.to_string();
    let Ok(tokens) = lex(&printed) else {
        return false;
    };
    let small_literals = tokens
        .iter()
        .all(|t| !matches!(t.tok, Tok::Int(v, _) if v > 300));
    let output_elements = kernel.output.extents.iter().try_fold(1i64, |n, e| {
        let extent = extent_value(e, sizes)?;
        n.checked_mul(extent.max(0))
    });
    small_literals && output_elements.is_some_and(|n| n <= 4096)
}

/// Evaluates `kernel` on random inputs whose sizes are drawn from `size_choices` (1 to 4);
/// the result may be an error, but evaluation must return.
fn evaluate_on_small_inputs(kernel: &Pipeline, size_choices: &[usize], seed: u64) {
    let mut rng = Lcg(seed);
    let mut sizes: Vec<(String, i64)> = Vec::new();
    let mut args = Args::new();
    for input in &kernel.inputs {
        match &input.kind {
            InputKind::Scalar => {
                args = args.scalar(&input.name, Value::I64(rng.small()).cast(input.dtype));
            }
            InputKind::Buffer { shape, .. } => {
                let mut dims = Vec::new();
                for extent in shape {
                    let dim = match extent {
                        Extent::Const(c) => *c,
                        Extent::Size(name) => match sizes.iter().find(|(n, _)| n == name) {
                            Some(&(_, v)) => v,
                            None => {
                                let v = size_choices[sizes.len() % size_choices.len()] as i64;
                                sizes.push((name.clone(), v));
                                v
                            }
                        },
                    };
                    dims.push(usize::try_from(dim).unwrap_or(0));
                }
                if dims.iter().product::<usize>() > 4096 {
                    return;
                }
                args = args.buffer(&input.name, random_buffer(input.dtype, &dims, &mut rng));
            }
        }
    }
    if cheap_to_evaluate(kernel, &sizes) {
        // Ok or Err, both fine; a panic fails the test.
        let _ = evaluate(kernel, &args);
    }
}

fn sizes_strategy() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(1usize..=4, 1..=4)
}

// ---------------------------------------------------------------------------------------------
// (a) Arbitrary text
// ---------------------------------------------------------------------------------------------

/// Pieces that glue into text close to the language: every punctuation character, digits,
/// identifiers, keywords, type names and a few troublesome fragments.
#[rustfmt::skip]
const FRAGMENTS: &[&str] = &[
    "(", ")", "[", "]", "{", "}", ",", ":", ";", "-", ">", ".", "+", "*", "/", "%", "=", "<", "!",
    "&", "|", "_", " ", " ", " ", "\n", "\t", "\r", "0", "1", "2", "9", "e", "E", "x", "y", "i",
    "A", "B", "N", "kernel", "kernel k(", "sum", "max", "min", "in", "for", "with", "select",
    "clamp", "clamp_edge", "constant", "mirror", "exp", "true", "false", "f32", "f64", "u8", "u16",
    "u32", "i8", "i32", "i64", "bool", "->", "..", "//", "/*", "*/", "1e", "1.", "0x", "e-", "u",
    "é", "×", "\u{0}", "\u{feff}", "fast_exp", "fast_pow",
];

fn fragment_soup() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(FRAGMENTS), 0..80).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn arbitrary_strings_never_panic(src in any::<String>()) {
        parse_and_round_trip(&src)?;
    }

    #[test]
    fn punctuation_heavy_strings_never_panic(src in fragment_soup()) {
        parse_and_round_trip(&src)?;
    }

    #[test]
    fn arbitrary_text_after_a_valid_header_never_panics(src in fragment_soup()) {
        parse_and_round_trip(&format!("kernel k(A: f32[N]) -> B: f32[N] {{\n    B(i) = {src}"))?;
    }
}

// ---------------------------------------------------------------------------------------------
// (b) Sequences of valid tokens
// ---------------------------------------------------------------------------------------------

#[rustfmt::skip]
const VOCABULARY: &[&str] = &[
    "kernel", "k", "A", "B", "N", "M", "i", "j", "x", "r", "f", "f32", "u8", "i32", "bool", "(",
    ")", "[", "]", "{", "}", ",", ":", ";", "->", "..", "+", "-", "*", "/", "%", "=", "+=", "-=",
    "*=", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "!", "sum", "max", "min", "prod", "in",
    "for", "with", "clamp_edge", "mirror", "constant", "select", "clamp", "exp", "true", "false",
    "0", "1", "3", "255u8", "-128i8", "1.5", "0.5f64", "1e9", "1e-3", "99999999999999999999999",
    "fast_exp", "fast_log", "fast_pow",
];

fn token_sequence() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(VOCABULARY), 0..60).prop_map(|v| v.join(" "))
}

/// Headers after which a token sequence lands in different parts of the grammar.
const HEADERS: &[&str] = &[
    "",
    "kernel k(",
    "kernel k(A: f32[N]) -> B: f32[N] {",
    "kernel k(A: f32[N]) -> B: f32[N] { B(i) =",
    "kernel k(A: u8[N, M] with clamp_edge, s: f32) -> B: f32[N] { f(i) = s; B(i) = sum(j in 0..M)",
];

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn token_sequences_never_panic(
        header in proptest::sample::select(HEADERS),
        tokens in token_sequence(),
        close in any::<bool>(),
    ) {
        let tail = if close { " ; }" } else { "" };
        parse_and_round_trip(&format!("{header} {tokens}{tail}"))?;
    }
}

// ---------------------------------------------------------------------------------------------
// (c) Mutations of the example kernels
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Mutation {
    DeleteToken(Index),
    DuplicateToken(Index),
    SwapTokens(Index, Index),
    ReplaceToken(Index, &'static str),
    DeleteChar(Index),
    DuplicateChar(Index),
    SwapChars(Index, Index),
    InsertFragment(Index, &'static str),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let index = any::<Index>;
    let word = || proptest::sample::select(VOCABULARY);
    prop_oneof![
        index().prop_map(Mutation::DeleteToken),
        index().prop_map(Mutation::DuplicateToken),
        (index(), index()).prop_map(|(a, b)| Mutation::SwapTokens(a, b)),
        (index(), word()).prop_map(|(a, w)| Mutation::ReplaceToken(a, w)),
        index().prop_map(Mutation::DeleteChar),
        index().prop_map(Mutation::DuplicateChar),
        (index(), index()).prop_map(|(a, b)| Mutation::SwapChars(a, b)),
        (index(), proptest::sample::select(FRAGMENTS))
            .prop_map(|(a, f)| Mutation::InsertFragment(a, f)),
    ]
}

/// The source's tokens as text, with the whitespace before each kept so line structure stays.
fn token_texts(src: &str) -> Option<Vec<String>> {
    let tokens = lex(src).ok()?;
    let mut texts = Vec::new();
    let mut prev_end = 0;
    for t in tokens.iter().filter(|t| t.tok != Tok::Eof) {
        let gap = &src[prev_end..t.span.start];
        // Keep a newline if the gap had one (drops comments), else one space.
        let sep = if gap.contains('\n') { "\n" } else { " " };
        texts.push(format!("{sep}{}", &src[t.span.start..t.span.end]));
        prev_end = t.span.end;
    }
    Some(texts)
}

fn apply(src: &str, m: &Mutation) -> String {
    let chars: Vec<char> = src.chars().collect();
    let char_op = |f: &dyn Fn(&mut Vec<char>)| {
        let mut c = chars.clone();
        if !c.is_empty() {
            f(&mut c);
        }
        c.into_iter().collect::<String>()
    };
    let token_op = |f: &dyn Fn(&mut Vec<String>)| match token_texts(src) {
        Some(mut t) if !t.is_empty() => {
            f(&mut t);
            t.concat()
        }
        _ => src.to_string(),
    };
    match m {
        Mutation::DeleteToken(i) => token_op(&|t| {
            t.remove(i.index(t.len()));
        }),
        Mutation::DuplicateToken(i) => token_op(&|t| {
            let k = i.index(t.len());
            t.insert(k, t[k].clone());
        }),
        Mutation::SwapTokens(a, b) => token_op(&|t| {
            let n = t.len();
            t.swap(a.index(n), b.index(n));
        }),
        Mutation::ReplaceToken(i, w) => token_op(&|t| {
            let k = i.index(t.len());
            t[k] = format!(" {w}");
        }),
        Mutation::DeleteChar(i) => char_op(&|c| {
            c.remove(i.index(c.len()));
        }),
        Mutation::DuplicateChar(i) => char_op(&|c| {
            let k = i.index(c.len());
            c.insert(k, c[k]);
        }),
        Mutation::SwapChars(a, b) => char_op(&|c| {
            let n = c.len();
            c.swap(a.index(n), b.index(n));
        }),
        Mutation::InsertFragment(i, f) => {
            let k = i.index(chars.len() + 1);
            let mut s: String = chars[..k].iter().collect();
            s.push_str(f);
            s.extend(&chars[k..]);
            s
        }
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn mutated_examples_never_panic(
        example in proptest::sample::select(&EXAMPLES[..]),
        mutations in proptest::collection::vec(mutation(), 1..4),
        sizes in sizes_strategy(),
        seed in any::<u64>(),
    ) {
        let mut src = example.to_string();
        for m in &mutations {
            src = apply(&src, m);
        }
        for kernel in parse_and_round_trip(&src)? {
            evaluate_on_small_inputs(&kernel, &sizes, seed);
        }
    }

    #[test]
    fn unmutated_examples_evaluate(
        example in proptest::sample::select(&EXAMPLES[..]),
        sizes in sizes_strategy(),
        seed in any::<u64>(),
    ) {
        let kernels = parse_and_round_trip(example)?;
        prop_assert_eq!(kernels.len(), 1);
        evaluate_on_small_inputs(&kernels[0], &sizes, seed);
    }
}

// ---------------------------------------------------------------------------------------------
// (d) Random expressions over a fixed signature, without regard to types: nearly all are
// rejected, which drives the checker's error paths from deep inside expressions
// ---------------------------------------------------------------------------------------------

fn expression() -> impl Strategy<Value = String> {
    let leaf = proptest::sample::select(
        &[
            "i", "A(i)", "A(i + 1)", "A(i - 2)", "C(i)", "D(0)", "D(i % K)", "s", "N", "K", "1",
            "0", "-3", "2.5", "255u8", "-128i8", "1e3", "0.5f64", "true", "false", "r",
        ][..],
    )
    .prop_map(str::to_string);
    leaf.prop_recursive(4, 24, 3, |inner| {
        let binop = proptest::sample::select(
            &[
                "+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||",
            ][..],
        );
        let unary_fn = proptest::sample::select(
            &[
                "f32", "f64", "u8", "u16", "i32", "i64", "bool", "abs", "exp", "sqrt", "floor",
                "round", "tanh", "fast_exp", "fast_log",
            ][..],
        );
        let binary_fn = proptest::sample::select(&["min", "max", "pow", "fast_pow"][..]);
        let reduce = proptest::sample::select(&["sum", "prod", "max", "min"][..]);
        let bound = proptest::sample::select(&["N", "K", "3", "N - 1", "min(N, K)"][..]);
        let input = proptest::sample::select(&["A", "C", "D"][..]);
        prop_oneof![
            (inner.clone(), binop.clone(), inner.clone())
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            (inner.clone(), binop, inner.clone()).prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("-{a}")),
            inner.clone().prop_map(|a| format!("!({a})")),
            (unary_fn, inner.clone()).prop_map(|(f, a)| format!("{f}({a})")),
            (binary_fn, inner.clone(), inner.clone())
                .prop_map(|(f, a, b)| format!("{f}({a}, {b})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| format!("select({c}, {a}, {b})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(x, lo, hi)| format!("clamp({x}, {lo}, {hi})")),
            (input, inner.clone()).prop_map(|(f, a)| format!("{f}({a})")),
            (reduce, bound, inner.clone())
                .prop_map(|(op, hi, body)| format!("({op}(r in 0..{hi}) {body})")),
            inner.clone().prop_map(|a| format!("g({a})")),
        ]
    })
}

fn generated_kernel() -> impl Strategy<Value = String> {
    let out_type = proptest::sample::select(&["f32", "f64", "i32", "u8", "u16", "bool"][..]);
    let update = prop_oneof![
        Just(String::new()),
        expression().prop_map(|e| format!("    for (r in 0..N) B(r) += {e};\n")),
        expression().prop_map(|e| format!("    B(0) = B(0) * {e};\n")),
        expression().prop_map(|e| format!("    for (r in 0..K) B(D(r) % N) = {e};\n")),
    ];
    (out_type, expression(), expression(), update).prop_map(|(t, g, b, update)| {
        format!(
            "kernel gen(A: f32[N] with clamp_edge, C: u8[N] with constant(7), D: i32[K] with mirror, s: f32) -> B: {t}[N] {{\n    g(i) = {g};\n    B(i) = {b};\n{update}}}\n"
        )
    })
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn random_expressions_never_panic(
        src in generated_kernel(),
        sizes in sizes_strategy(),
        seed in any::<u64>(),
    ) {
        for kernel in parse_and_round_trip(&src)? {
            evaluate_on_small_inputs(&kernel, &sizes, seed);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (e) Type-directed kernels: built so that nearly all of them check (over 90%), to stress the
// printer's parentheses and literal suffixes and the evaluator on programs no example contains
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Debug)]
enum Ty {
    F32,
    F64,
    I32,
    U8,
    Bool,
}

impl Ty {
    const NUMERIC: [Ty; 4] = [Ty::F32, Ty::F64, Ty::I32, Ty::U8];

    fn name(self) -> &'static str {
        match self {
            Ty::F32 => "f32",
            Ty::F64 => "f64",
            Ty::I32 => "i32",
            Ty::U8 => "u8",
            Ty::Bool => "bool",
        }
    }

    fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }
}

/// Writes random kernel text of a requested type, from a seed.
struct KernelWriter {
    rng: Lcg,
    /// Integer variables in scope: the pure variable (or an update's reduction variable) and
    /// the variables of the reductions around the current point.
    vars: Vec<String>,
    /// The function `g` and its type, once callable.
    g: Option<Ty>,
    reductions: usize,
}

impl KernelWriter {
    fn below(&mut self, n: usize) -> usize {
        (self.rng.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    fn var(&mut self) -> String {
        let vars = self.vars.clone();
        vars[self.below(vars.len())].clone()
    }

    fn leaf(&mut self, t: Ty) -> String {
        let v = self.var();
        let choices: Vec<String> = match t {
            Ty::F32 => vec![
                format!("A({v})"),
                format!("A({v} + 1)"),
                format!("M({v}, {v} - 1)"),
                "s".into(),
                "2.5".into(),
                "1".into(),
                "-0.5".into(),
                "1e3".into(),
                "3.0f32".into(),
            ],
            Ty::F64 => vec![
                format!("f64(A({v}))"),
                "0.25f64".into(),
                "f64(s)".into(),
                "-2".into(),
            ],
            Ty::I32 => vec![
                v.clone(),
                "N".into(),
                "K".into(),
                "D(0)".into(),
                format!("D({v} % K)"),
                "3".into(),
                "-7".into(),
                "2147483647".into(),
            ],
            Ty::U8 => vec![
                format!("C({v})"),
                "255u8".into(),
                "7".into(),
                format!("u8({v})"),
            ],
            Ty::Bool => vec![
                "true".into(),
                "false".into(),
                format!("A({v}) > 0.0"),
                format!("C({v}) == 7"),
            ],
        };
        choices[self.below(choices.len())].clone()
    }

    fn expr(&mut self, t: Ty, depth: u32) -> String {
        if depth == 0 || self.below(4) == 0 {
            return self.leaf(t);
        }
        let d = depth - 1;
        if t == Ty::Bool {
            return match self.below(6) {
                0 | 1 => {
                    let nt = self.pick(&Ty::NUMERIC);
                    let op = self.pick(&["==", "!=", "<", "<=", ">", ">="]);
                    format!("{} {op} {}", self.expr(nt, d), self.expr(nt, d))
                }
                2 => format!("{} && {}", self.expr(t, d), self.expr(t, d)),
                3 => format!("({} || {})", self.expr(t, d), self.expr(t, d)),
                4 => format!("!({})", self.expr(t, d)),
                _ => format!("{} == {}", self.operand(t, d), self.operand(t, d)),
            };
        }
        match self.below(12) {
            0 | 1 => {
                let op = self.pick(&["+", "-", "*", "/", "%"]);
                format!("{} {op} {}", self.expr(t, d), self.expr(t, d))
            }
            2 => {
                let op = self.pick(&["+", "-", "*", "/", "%"]);
                format!("({} {op} {})", self.expr(t, d), self.expr(t, d))
            }
            3 => format!("-{}", self.operand(t, d)),
            4 => {
                let f = self.pick(&["min", "max"]);
                format!("{f}({}, {})", self.expr(t, d), self.expr(t, d))
            }
            5 => format!(
                "clamp({}, {}, {})",
                self.expr(t, d),
                self.expr(t, d),
                self.expr(t, d)
            ),
            6 => format!(
                "select({}, {}, {})",
                self.expr(Ty::Bool, d),
                self.expr(t, d),
                self.expr(t, d)
            ),
            7 => {
                let from = self.pick(&[Ty::F32, Ty::F64, Ty::I32, Ty::U8, Ty::Bool]);
                format!("{}({})", t.name(), self.expr(from, d))
            }
            8 if t == Ty::F32 && self.below(3) == 0 => {
                let f = self.pick(&["fast_exp", "fast_log", "fast_pow"]);
                let second = if f == "fast_pow" {
                    format!(", {}", self.expr(t, d))
                } else {
                    String::new()
                };
                format!("{f}({}{second})", self.expr(t, d))
            }
            8 if t.is_float() => {
                let f = self.pick(&[
                    "exp", "sqrt", "floor", "ceil", "round", "abs", "tanh", "log",
                ]);
                format!("{f}({})", self.expr(t, d))
            }
            8 => format!("abs({})", self.expr(t, d)),
            9 => {
                let op = self.pick(&["sum", "prod", "max", "min"]);
                let bounds = self.pick(&["0..N", "0..K", "1..3", "-1..N", "0..min(N, K)"]);
                let r = format!("r{}", self.reductions);
                self.reductions += 1;
                self.vars.push(r.clone());
                let body = self.expr(t, d);
                self.vars.pop();
                format!("({op}({r} in {bounds}) {body})")
            }
            10 if self.g == Some(t) => format!("g({})", self.expr(Ty::I32, d)),
            _ => {
                let index = self.expr(Ty::I32, d);
                match t {
                    Ty::F32 => format!("A({index})"),
                    Ty::F64 => format!("f64(A({index}))"),
                    Ty::I32 => format!("D({index})"),
                    _ => format!("C({index})"),
                }
            }
        }
    }

    /// An expression safe as the operand of a prefix operator.
    fn operand(&mut self, t: Ty, depth: u32) -> String {
        format!("({})", self.expr(t, depth))
    }

    fn kernel(seed: u64) -> String {
        let mut w = KernelWriter {
            rng: Lcg(seed),
            vars: vec!["i".into()],
            g: None,
            reductions: 0,
        };
        let all = [Ty::F32, Ty::F64, Ty::I32, Ty::U8, Ty::Bool];
        let (g_type, out_type) = (w.pick(&all), w.pick(&all));
        let depth = 1 + w.below(4) as u32;
        let g = w.expr(g_type, depth);
        w.g = Some(g_type);
        let b = w.expr(out_type, depth);
        w.vars = vec!["u".into()];
        let update = match w.below(4) {
            0 if out_type != Ty::Bool => {
                let op = w.pick(&["+=", "-=", "*="]);
                format!(
                    "    for (u in 0..N) B(u) {op} {};\n",
                    w.expr(out_type, depth)
                )
            }
            1 => format!(
                "    for (u in 0..K) B(D(u) % N) = {};\n",
                w.expr(out_type, depth)
            ),
            2 if out_type != Ty::Bool => {
                w.vars = vec!["i".into()];
                format!("    B(i) = B(i) + {};\n", w.expr(out_type, depth))
            }
            _ => String::new(),
        };
        format!(
            "kernel gen(A: f32[N] with clamp_edge, C: u8[N] with constant(7), D: i32[K] with mirror, \
             M: f32[N, K] with mirror_interior, s: f32) -> B: {}[N] {{\n    g(i) = {g};\n    B(i) = {b};\n{update}}}\n",
            out_type.name()
        )
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn typed_kernels_round_trip_and_evaluate(
        seed in any::<u64>(),
        sizes in sizes_strategy(),
        input_seed in any::<u64>(),
    ) {
        let src = KernelWriter::kernel(seed);
        for kernel in parse_and_round_trip(&src)? {
            evaluate_on_small_inputs(&kernel, &sizes, input_seed);
        }
    }
}
