//! Malformed and ill-typed kernels: each test pins the error message and the exact line and
//! column (1-based, in characters) that the diagnostic points at.

use strata_dsl::{parse_kernel, parse_kernels, Diagnostic};

/// `d` rendered, with very long source lines cut so a failure stays readable.
fn shown(d: &Diagnostic) -> String {
    let lines: Vec<String> = d
        .to_string()
        .lines()
        .map(|l| match l.char_indices().nth(200) {
            Some((i, _)) => format!("{}...", &l[..i]),
            None => l.to_string(),
        })
        .collect();
    lines.join("\n")
}

/// The error `src` produces; panics (showing the parsed kernels) if it parses.
fn error_of(src: &str) -> Diagnostic {
    match parse_kernels(src, "test.strata") {
        Ok(kernels) => {
            let printed: Vec<String> = kernels.iter().map(ToString::to_string).collect();
            panic!(
                "expected an error, but the source parsed:\n{}",
                printed.join("\n")
            )
        }
        Err(diagnostic) => diagnostic,
    }
}

/// Asserts that `src` fails with a message containing `message` at `line`:`col`.
#[track_caller]
fn check(src: &str, message: &str, line: usize, col: usize) {
    let d = error_of(src);
    assert!(
        d.message.contains(message),
        "message {:?} does not contain {:?}\n{}",
        d.message,
        message,
        shown(&d)
    );
    assert_eq!(d.line_col(), (line, col), "wrong position\n{}", shown(&d));
}

/// Like `check`, with the whole message given exactly.
#[track_caller]
fn check_exact(src: &str, message: &str, line: usize, col: usize) {
    let d = error_of(src);
    assert_eq!(d.message, message, "\n{}", shown(&d));
    assert_eq!(d.line_col(), (line, col), "wrong position\n{}", shown(&d));
}

/// `kernel k(A: f32[N]) -> B: f32[N] {` on line 1, then each statement on its own line (2, 3,
/// ...) indented by four spaces, so a statement's first character is at column 5, and `}`.
fn in_kernel(stmts: &[&str]) -> String {
    let mut src = String::from("kernel k(A: f32[N]) -> B: f32[N] {\n");
    for stmt in stmts {
        src.push_str("    ");
        src.push_str(stmt);
        src.push('\n');
    }
    src.push('}');
    src
}

// ---------------------------------------------------------------------------------------------
// Lexical errors
// ---------------------------------------------------------------------------------------------

#[test]
fn unexpected_character() {
    // `B(i) = ` puts the value at column 12; `$` is 5 further.
    check_exact(
        &in_kernel(&["B(i) = A(i) $ 2;"]),
        "unexpected character `$`",
        2,
        17,
    );
}

#[test]
fn unexpected_non_ascii_character_column_counts_characters() {
    // `é` in the comment is two bytes but one column; `×` is reported whole.
    let src = "kernel k(A: f32[N]) -> B: f32[N] {\n    B(i) = A(i) × 2; // é\n}";
    check_exact(src, "unexpected character `×`", 2, 17);
    let src = "kernel k(A: f32[N]) -> B: f32[N] { // é\n    B(i) = é;\n}";
    check_exact(src, "unexpected character `é`", 2, 12);
}

#[test]
fn unterminated_block_comment() {
    check_exact(
        &in_kernel(&["/* never closed", "B(i) = A(i);"]),
        "unterminated block comment",
        2,
        5,
    );
}

#[test]
fn bad_number_suffix_points_at_the_suffix() {
    // `2x`: the `x` (column 20) is the problem, not the digits.
    check_exact(
        &in_kernel(&["B(i) = A(i) * 2x;"]),
        "`x` is not a numeric type suffix (use u8, u16, u32, i8, i16, i32, i64, f32 or f64)",
        2,
        20,
    );
}

#[test]
fn bool_is_not_a_number_suffix() {
    check(
        &in_kernel(&["B(i) = A(i) * 1bool;"]),
        "`bool` is not a numeric type suffix",
        2,
        20,
    );
}

#[test]
fn float_literal_with_integer_suffix() {
    check_exact(
        &in_kernel(&["B(i) = A(i) * 1.5u8;"]),
        "a float literal cannot have the integer suffix `u8`",
        2,
        19,
    );
}

#[test]
fn integer_literal_too_large() {
    // 40 digits: more than a u128 holds.
    check_exact(
        &in_kernel(&["B(i) = A(i) * 9999999999999999999999999999999999999999;"]),
        "integer literal too large",
        2,
        19,
    );
}

// ---------------------------------------------------------------------------------------------
// Literals that do not fit their type
// ---------------------------------------------------------------------------------------------

#[test]
fn literal_does_not_fit_u8_context() {
    let src = "kernel k(A: u8[N]) -> B: u8[N] {\n    B(i) = A(i) + 300;\n}";
    check_exact(src, "literal 300 does not fit in u8 (0..=255)", 2, 19);
}

#[test]
fn negative_literal_does_not_fit_i8() {
    let src = "kernel k(A: i8[N]) -> B: i8[N] {\n    B(i) = A(i) * -200;\n}";
    check_exact(src, "literal -200 does not fit in i8 (-128..=127)", 2, 19);
}

#[test]
fn suffixed_literal_out_of_range() {
    check_exact(
        &in_kernel(&["B(i) = A(i) * f32(256u8);"]),
        "literal 256 does not fit in u8 (0..=255)",
        2,
        23,
    );
}

#[test]
fn float_literal_overflows_f32() {
    check_exact(
        &in_kernel(&["B(i) = A(i) * 1e39;"]),
        "literal 1e39 does not fit in f32",
        2,
        19,
    );
}

// ---------------------------------------------------------------------------------------------
// Syntax errors
// ---------------------------------------------------------------------------------------------

#[test]
fn unknown_type_name() {
    // kernel k(A: f33[N]) ...
    //             ^ column 13
    check_exact(
        "kernel k(A: f33[N]) -> B: f32[N] {\n    B(i) = A(i);\n}",
        "unknown type `f33` (the types are bool, u8, u16, u32, i8, i16, i32, i64, f32, f64)",
        1,
        13,
    );
}

#[test]
fn unknown_output_type_name() {
    check(
        "kernel k(A: f32[N]) -> B: float[N] {\n    B(i) = A(i);\n}",
        "unknown type `float`",
        1,
        27,
    );
}

#[test]
fn missing_close_paren() {
    //  B(i) = (A(i) + 1;
    //                  ^ column 21
    check_exact(
        &in_kernel(&["B(i) = (A(i) + 1;"]),
        "expected `)`, found `;`",
        2,
        21,
    );
}

#[test]
fn missing_close_paren_in_call() {
    check_exact(
        &in_kernel(&["B(i) = A(i;"]),
        "expected `,` or `)`, found `;`",
        2,
        15,
    );
}

#[test]
fn missing_semicolon() {
    // The parser reports the token it found instead: the next statement's first name.
    check_exact(
        &in_kernel(&["g(i) = A(i)", "B(i) = g(i);"]),
        "expected `;`, found `B`",
        3,
        5,
    );
}

#[test]
fn missing_semicolon_at_end_of_input() {
    check_exact(
        "kernel k(A: f32[N]) -> B: f32[N] {\n    B(i) = A(i)",
        "expected `;`, found end of input",
        2,
        16,
    );
}

#[test]
fn missing_kernel_keyword() {
    check_exact(
        "// a comment first\nkern k(A: f32[N]) -> B: f32[N] {\n    B(i) = A(i);\n}",
        "expected `kernel`, found `kern`",
        2,
        1,
    );
}

#[test]
fn missing_closing_brace() {
    check_exact(
        "kernel k(A: f32[N]) -> B: f32[N] {\n    B(i) = A(i);\n",
        "expected `}` to close the kernel, found end of input",
        3,
        1,
    );
}

#[test]
fn missing_arrow() {
    check_exact(
        "kernel k(A: f32[N]) B: f32[N] {\n    B(i) = A(i);\n}",
        "expected `->`, found `B`",
        1,
        21,
    );
}

#[test]
fn missing_assignment_operator() {
    check_exact(
        &in_kernel(&["B(i) == A(i);"]),
        "expected `=`, `+=`, `-=` or `*=`, found `==`",
        2,
        10,
    );
}

#[test]
fn statement_that_is_not_a_definition() {
    check_exact(
        &in_kernel(&["B(i) = A(i);", "3 = 4;"]),
        "expected a function definition, found a number",
        3,
        5,
    );
}

#[test]
fn missing_operand() {
    check_exact(
        &in_kernel(&["B(i) = A(i) * ;"]),
        "expected an expression, found `;`",
        2,
        19,
    );
}

#[test]
fn unknown_boundary_condition() {
    // kernel k(A: f32[N] with wrap) ...
    //                         ^ column 25
    check_exact(
        "kernel k(A: f32[N] with wrap) -> B: f32[N] {\n    B(i) = A(i);\n}",
        "unknown boundary condition `wrap` (use clamp_edge, constant(v), mirror or mirror_interior)",
        1,
        25,
    );
}

#[test]
fn chained_comparisons() {
    //  B(i) = select(A(i) < 1.0 < 2.0, 1.0, 0.0);
    //                           ^ column 30: the second `<`
    check_exact(
        &in_kernel(&["B(i) = select(A(i) < 1.0 < 2.0, 1.0, 0.0);"]),
        "comparisons cannot be chained: use `&&` or parentheses around the first before `<`",
        2,
        30,
    );
}

#[test]
fn expression_nested_too_deep_is_an_error_not_a_stack_overflow() {
    let depth = 1000;
    let value = format!("{}A(i){}", "(".repeat(depth), ")".repeat(depth));
    let src = in_kernel(&[&format!("B(i) = {value};")]);
    // The value starts at column 12; the 257th `(` is the one that goes past 256 levels.
    check_exact(&src, "expression nested more than 256 deep", 2, 12 + 256);
}

/// An operator chain is flat text, not nesting: a sum of 1,000 terms, even 250 parentheses
/// deep, parses and round-trips (it was refused as "nested more than 256 deep").
#[test]
fn a_long_operator_chain_is_not_nesting() {
    let sum = vec!["A(i)"; 1000].join(" + ");
    let value = format!("{}{sum}{}", "(".repeat(250), ")".repeat(250));
    let src = in_kernel(&[&format!("B(i) = {value};")]);
    let kernel = parse_kernel(&src, "sum.strata").expect("parses");
    let printed = kernel.to_string();
    assert_eq!(parse_kernel(&printed, "printed.strata").unwrap(), kernel);
}

#[test]
fn operator_chain_past_the_tree_depth_limit_is_an_error_not_a_stack_overflow() {
    let terms = vec!["A(i)"; 5000];
    let src = in_kernel(&[&format!("B(i) = {};", terms.join(" + "))]);
    // `((A(i) + A(i)) + ...) + A(i)`: the `+` joining term t to the terms before it is
    // 5001 - t deep, its right operand one deeper and that call's index `i` two deeper. The
    // first level past 4096 is reached at term 906's `i`: terms are `A(i) + `, 7 columns each
    // from column 12, and `i` is 2 into its term.
    check_exact(
        &src,
        "expression more than 4096 levels deep, counting each operator of a chain as a level: split it into several functions",
        2,
        12 + 905 * 7 + 2,
    );
}

#[test]
fn deeply_nested_unary_operators_are_an_error_not_a_stack_overflow() {
    let src = in_kernel(&[&format!("B(i) = {}A(i);", "-".repeat(100_000))]);
    check(&src, "expression nested more than 256 deep", 2, 12 + 256);
}

#[test]
fn deeply_nested_calls_are_an_error_not_a_stack_overflow() {
    let src = in_kernel(&[&format!(
        "B(i) = {}i{};",
        "A(".repeat(2000),
        ")".repeat(2000)
    )]);
    check(
        &src,
        "expression nested more than 256 deep",
        2,
        12 + 2 * 256,
    );
}

#[test]
fn nesting_just_under_the_limit_is_accepted_and_round_trips() {
    let depth = 250;
    let value = format!("{}A(i){}", "(".repeat(depth), ")".repeat(depth));
    let src = in_kernel(&[&format!("B(i) = -{value} + 1.0;")]);
    let kernel = parse_kernel(&src, "deep.strata").expect("parses");
    let printed = kernel.to_string();
    assert_eq!(parse_kernel(&printed, "printed.strata").unwrap(), kernel);
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

#[test]
fn unknown_function_or_input() {
    check_exact(
        &in_kernel(&["B(i) = C(i);"]),
        "unknown function or input `C`",
        2,
        12,
    );
}

#[test]
fn unknown_name() {
    check_exact(&in_kernel(&["B(i) = A(j);"]), "unknown name `j`", 2, 14);
}

#[test]
fn misspelt_names_get_a_suggestion() {
    let src = "kernel k(weights: f32[N], scale: f32) -> out: f32[N] {\n    out(idx) = wieghts(idx) * scale;\n}";
    check_exact(
        src,
        "unknown function or input `wieghts` (did you mean `weights`?)",
        2,
        16,
    );
    let src = "kernel k(weights: f32[N], scale: f32) -> out: f32[N] {\n    out(idx) = weights(idx) * scael;\n}";
    check_exact(src, "unknown name `scael` (did you mean `scale`?)", 2, 31);
    let src = "kernel k(A: f32[N]) -> out: f32[N] {\n    out(idx) = A(ixd);\n}";
    check_exact(src, "unknown name `ixd` (did you mean `idx`?)", 2, 18);
}

#[test]
fn unbound_size_variable_in_output_extent() {
    // kernel k(A: f32[N]) -> B: f32[M] {
    //                               ^ column 31
    check_exact(
        "kernel k(A: f32[N]) -> B: f32[M] {\n    B(i) = A(i);\n}",
        "unbound size variable `M`: an output extent may only use sizes named in the inputs' shapes and integer constants",
        1,
        31,
    );
}

#[test]
fn unbound_size_variable_in_reduction_bound() {
    //  B(i) = sum(r in 0..M) A(r);
    //                     ^ column 24
    check_exact(
        &in_kernel(&["B(i) = sum(r in 0..M) A(r);"]),
        "unbound size variable `M`: a reduction bound may only use sizes named in the inputs' shapes, integer constants and the variables around it",
        2,
        24,
    );
}

#[test]
fn pure_variable_in_output_extent_is_named_as_one() {
    // kernel k(A: f32[N]) -> B: f32[i] {
    //                               ^ column 31
    check_exact(
        "kernel k(A: f32[N]) -> B: f32[i] {\n    B(i) = A(i);\n}",
        "`i` is a pure variable, not a size: an output extent may only use sizes named in the inputs' shapes and integer constants",
        1,
        31,
    );
}

#[test]
fn call_in_output_extent() {
    check_exact(
        "kernel k(A: f32[N]) -> B: f32[exp(N)] {\n    B(i) = A(i);\n}",
        "an output extent may only use sizes, integer constants, arithmetic, min and max",
        1,
        31,
    );
}

#[test]
fn float_output_extent() {
    check_exact(
        "kernel k(A: f32[N]) -> B: f32[1.5] {\n    B(i) = A(i);\n}",
        "an output extent must be an i32 expression, found f32",
        1,
        31,
    );
}

#[test]
fn reduction_variable_used_outside_its_reduction() {
    //  B(i) = (sum(r in 0..N) A(r)) + A(r);
    //                                   ^ column 38
    check_exact(
        &in_kernel(&["B(i) = (sum(r in 0..N) A(r)) + A(r);"]),
        "reduction variable `r` is used outside its reduction",
        2,
        38,
    );
}

#[test]
fn reduction_variable_shadowing_a_pure_variable() {
    check_exact(
        &in_kernel(&["B(i) = sum(i in 0..N) A(i);"]),
        "reduction variable `i` is already a variable here",
        2,
        16,
    );
}

#[test]
fn input_name_used_twice() {
    // kernel k(A: f32[N], A: f32[N]) ...
    //                     ^ column 21
    check_exact(
        "kernel k(A: f32[N], A: f32[N]) -> B: f32[N] {\n    B(i) = A(i);\n}",
        "`A` is already an input; choose another name for an input",
        1,
        21,
    );
}

#[test]
fn function_name_clashes_with_an_input() {
    check_exact(
        &in_kernel(&["A(i) = 1.0;", "B(i) = A(i);"]),
        "`A` is already an input; choose another name for a function",
        2,
        5,
    );
}

#[test]
fn variable_name_clashes_with_a_size() {
    check_exact(
        &in_kernel(&["B(N) = A(N);"]),
        "`N` is already a size variable; choose another name for the variable",
        2,
        7,
    );
}

#[test]
fn output_name_clashes_with_an_input() {
    check_exact(
        "kernel k(A: f32[N]) -> A: f32[N] {\n    A(i) = 1.0;\n}",
        "`A` is already an input; choose another name for the output",
        1,
        24,
    );
}

#[test]
fn builtin_name_used_as_a_function_name() {
    check_exact(
        &in_kernel(&["exp(i) = A(i);", "B(i) = exp(i);"]),
        "`exp` is a built-in name and cannot name a function",
        2,
        5,
    );
}

#[test]
fn builtin_name_used_as_an_input_name() {
    check_exact(
        "kernel k(sum: f32[N]) -> B: f32[N] {\n    B(i) = 1.0;\n}",
        "`sum` is a built-in name and cannot name an input",
        1,
        10,
    );
}

#[test]
fn builtin_name_used_as_a_variable() {
    check_exact(
        &in_kernel(&["B(f32) = A(0);"]),
        "`f32` is a built-in name and cannot be a variable",
        2,
        7,
    );
}

#[test]
fn input_buffer_used_without_indexing() {
    check_exact(
        &in_kernel(&["B(i) = A + 1.0;"]),
        "`A` is an input buffer; index it, e.g. `A(...)`",
        2,
        12,
    );
}

#[test]
fn function_used_without_arguments() {
    check_exact(
        &in_kernel(&["g(i) = A(i);", "B(i) = g * 2.0;"]),
        "`g` is a function; call it with its arguments, e.g. `g(...)`",
        3,
        12,
    );
}

#[test]
fn scalar_parameter_called_with_arguments() {
    //  B(i) = A(i) * s(i);
    //                ^ column 19
    check_exact(
        "kernel k(A: f32[N], s: f32) -> B: f32[N] {\n    B(i) = A(i) * s(i);\n}",
        "`s` is a scalar parameter; use it without arguments",
        2,
        19,
    );
}

#[test]
fn input_extent_that_is_an_expression() {
    // kernel k(A: f32[N + 1]) ...
    //                 ^ column 17
    check_exact(
        "kernel k(A: f32[N + 1]) -> B: f32[N] {\n    B(i) = A(i);\n}",
        "an input's extent must be a size variable or an integer constant (output extents may be expressions)",
        1,
        17,
    );
}

// ---------------------------------------------------------------------------------------------
// Arity
// ---------------------------------------------------------------------------------------------

#[test]
fn wrong_number_of_arguments_to_a_function() {
    check_exact(
        &in_kernel(&["g(i) = A(i);", "B(i) = g(i, i);"]),
        "`g` takes 1 argument, found 2",
        3,
        12,
    );
}

#[test]
fn wrong_number_of_arguments_to_an_input() {
    check_exact(
        &in_kernel(&["B(i) = A(i, 0);"]),
        "`A` takes 1 argument, found 2",
        2,
        12,
    );
}

#[test]
fn wrong_number_of_arguments_to_select() {
    check_exact(
        &in_kernel(&["B(i) = select(A(i) > 0.0, A(i));"]),
        "`select` takes 3 arguments, found 2",
        2,
        12,
    );
}

#[test]
fn wrong_number_of_arguments_to_clamp() {
    check_exact(
        &in_kernel(&["B(i) = A(i) + clamp(A(i), 0.0);"]),
        "`clamp` takes 3 arguments, found 2",
        2,
        19,
    );
}

#[test]
fn wrong_number_of_arguments_to_exp() {
    check_exact(
        &in_kernel(&["B(i) = exp();"]),
        "`exp` takes 1 argument, found 0",
        2,
        12,
    );
}

#[test]
fn wrong_number_of_arguments_to_a_cast() {
    check_exact(
        &in_kernel(&["B(i) = f32(A(i), 1);"]),
        "`f32` takes 1 argument, found 2",
        2,
        12,
    );
}

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

#[test]
fn type_mismatch_names_both_types() {
    check_exact(
        "kernel k(A: u16[N], C: u32[N]) -> B: u32[N] {\n    B(i) = A(i) + C(i);\n}",
        "type mismatch in `+`: u16 and u32 (cast explicitly, e.g. `u32(...)`)",
        2,
        12,
    );
}

#[test]
fn type_mismatch_suggests_a_type_that_holds_both() {
    // Not the narrower signed type: `i8(...)` would not hold a u32.
    let kernel = |a: &str, c: &str| {
        format!("kernel k(A: {a}[N], C: {c}[N]) -> B: i64[N] {{\n    B(i) = A(i) * C(i);\n}}")
    };
    for (a, c, message) in [
        (
            "u32",
            "i8",
            "type mismatch in `*`: u32 and i8 (cast explicitly, e.g. `i64(...)`)",
        ),
        (
            "i8",
            "u32",
            "type mismatch in `*`: i8 and u32 (cast explicitly, e.g. `i64(...)`)",
        ),
        (
            "u8",
            "i8",
            "type mismatch in `*`: u8 and i8 (cast explicitly, e.g. `i16(...)`)",
        ),
        (
            "i32",
            "u16",
            "type mismatch in `*`: i32 and u16 (cast explicitly, e.g. `i32(...)`)",
        ),
        (
            "u8",
            "u16",
            "type mismatch in `*`: u8 and u16 (cast explicitly, e.g. `u16(...)`)",
        ),
        (
            "i64",
            "f32",
            "type mismatch in `*`: i64 and f32 (cast explicitly, e.g. `f32(...)`)",
        ),
    ] {
        check_exact(&kernel(a, c), message, 2, 12);
    }
}

#[test]
fn type_mismatch_among_three_operands() {
    let src =
        "kernel k(A: f32[N], L: i32[N]) -> B: f32[N] {\n    B(i) = clamp(A(i), L(i), 1.0);\n}";
    check_exact(
        src,
        "type mismatch in `clamp`: f32 and i32 and f32 (cast explicitly, e.g. `f32(...)`)",
        2,
        12,
    );
}

#[test]
fn output_declared_type_differs_from_its_definition() {
    check_exact(
        "kernel k(A: f32[N]) -> B: f64[N] {\n    B(i) = A(i) * 2.0;\n}",
        "type mismatch: the output `B` is declared f64 but its definition is f32",
        2,
        12,
    );
}

#[test]
fn update_of_a_different_type() {
    check_exact(
        &in_kernel(&["B(i) = A(i);", "for (r in 0..N) B(r) += 1.0f64;"]),
        "type mismatch: `B` is f32 but this update gives f64",
        3,
        29,
    );
}

#[test]
fn float_index() {
    check_exact(
        "kernel k(A: f32[N], X: f32[N]) -> B: f32[N] {\n    B(i) = A(X(i));\n}",
        "index 1 of `A` must be an integer, found f32",
        2,
        14,
    );
}

#[test]
fn float_literal_index() {
    check_exact(
        &in_kernel(&["B(i) = A(i) + A(1.5);"]),
        "index 1 of `A` must be an integer, found f32",
        2,
        21,
    );
}

#[test]
fn exp_of_an_integer() {
    check_exact(
        "kernel k(A: i32[N]) -> B: i32[N] {\n    B(i) = exp(A(i));\n}",
        "`exp` needs a float argument (cast it, e.g. `f32(...)`), found i32",
        2,
        12,
    );
}

#[test]
fn fast_exp_of_an_f64() {
    check_exact(
        "kernel k(A: f64[N]) -> B: f64[N] {\n    B(i) = fast_exp(A(i));\n}",
        "`fast_exp` is defined for f32 only (cast it, e.g. `f32(...)`, or use `exp`), found f64",
        2,
        12,
    );
}

#[test]
fn fast_log_of_an_integer() {
    check_exact(
        "kernel k(A: i32[N]) -> B: f32[N] {\n    B(i) = 1.0 + fast_log(A(i));\n}",
        "`fast_log` is defined for f32 only (cast it, e.g. `f32(...)`, or use `log`), found i32",
        2,
        18,
    );
}

#[test]
fn fast_pow_of_f64_operands() {
    // The literal takes the other operand's type, so the error is about f64, not a mismatch.
    check_exact(
        "kernel k(A: f64[N]) -> B: f64[N] {\n    B(i) = fast_pow(A(i), 2);\n}",
        "`fast_pow` is defined for f32 only (cast it, e.g. `f32(...)`, or use `pow`), found f64",
        2,
        12,
    );
}

#[test]
fn fast_pow_with_one_argument() {
    check_exact(
        &in_kernel(&["B(i) = fast_pow(A(i));"]),
        "`fast_pow` takes 2 arguments, found 1",
        2,
        12,
    );
}

#[test]
fn fast_exp_as_a_function_name() {
    check_exact(
        &in_kernel(&["fast_exp(i) = A(i);", "B(i) = fast_exp(i);"]),
        "`fast_exp` is a built-in name and cannot name a function",
        2,
        5,
    );
}

#[test]
fn fast_exp_error_renders_the_line_and_a_caret() {
    let d = error_of("kernel k(A: f64[N]) -> B: f64[N] {\n    B(i) = fast_exp(A(i));\n}");
    let shown = d.to_string();
    assert!(
        shown.contains("2 |     B(i) = fast_exp(A(i));\n  |            ^^^^^^^^^^^^^^"),
        "{shown}"
    );
}

#[test]
fn not_of_a_number() {
    //  B(i) = select(!A(i), 1.0, 2.0);
    //                ^ column 19
    check_exact(
        &in_kernel(&["B(i) = select(!A(i), 1.0, 2.0);"]),
        "`!` needs a bool, found f32",
        2,
        19,
    );
}

#[test]
fn and_of_numbers() {
    check_exact(
        &in_kernel(&["B(i) = select(A(i) && A(i), 1.0, 2.0);"]),
        "`&&` needs bool operands, found f32",
        2,
        19,
    );
}

#[test]
fn negation_of_a_bool() {
    check_exact(
        &in_kernel(&["B(i) = select(-(A(i) > 0.0), 1.0, 2.0);"]),
        "`-` needs a number, found bool",
        2,
        19,
    );
}

#[test]
fn arithmetic_on_bools() {
    check_exact(
        &in_kernel(&["B(i) = select(true + false, 1.0, 2.0);"]),
        "`+` needs numbers, found bool",
        2,
        19,
    );
}

#[test]
fn select_condition_not_bool() {
    check_exact(
        &in_kernel(&["B(i) = select(A(i), 1.0, 2.0);"]),
        "the condition of `select` must be bool, found f32",
        2,
        19,
    );
}

#[test]
fn reduction_of_bools() {
    check_exact(
        &in_kernel(&["B(i) = select(sum(r in 0..N) A(r) > 0.0, 1.0, 0.0);"]),
        "`sum` needs a numeric body, found bool",
        2,
        19,
    );
}

#[test]
fn constant_boundary_of_the_wrong_type() {
    check_exact(
        "kernel k(A: f32[N] with constant(1u16)) -> B: f32[N] {\n    B(i) = A(i);\n}",
        "type mismatch: the boundary value is u16 but the input is f32",
        1,
        34,
    );
}

#[test]
fn constant_boundary_that_is_not_a_literal() {
    check_exact(
        "kernel k(A: f32[N] with constant(N)) -> B: f32[N] {\n    B(i) = A(i);\n}",
        "a constant boundary condition takes a literal value",
        1,
        34,
    );
}

// ---------------------------------------------------------------------------------------------
// Definitions
// ---------------------------------------------------------------------------------------------

#[test]
fn function_defined_twice() {
    check_exact(
        &in_kernel(&["g(i) = A(i);", "g(i) = A(i) * 2.0;", "B(i) = g(i);"]),
        "function `g` is defined twice (an update must read `g` or use `+=`, `*=`, `-=` or `for`)",
        3,
        5,
    );
}

#[test]
fn kernel_defined_twice_in_one_file() {
    let src = "kernel k(A: f32[N]) -> B: f32[N] {\n    B(i) = A(i);\n}\n\
               kernel k(A: f32[N]) -> B: f32[N] {\n    B(i) = 2.0 * A(i);\n}";
    check_exact(src, "kernel `k` is defined twice", 4, 8);
}

#[test]
fn parse_kernel_wants_exactly_one_kernel() {
    let src = "kernel k(A: f32[N]) -> B: f32[N] {\n    B(i) = A(i);\n}\n\
               kernel j(A: f32[N]) -> B: f32[N] {\n    B(i) = 2.0 * A(i);\n}";
    let d = parse_kernel(src, "two.strata").unwrap_err();
    assert_eq!(d.message, "expected exactly one kernel, found 2");
    assert_eq!(d.line_col(), (1, 1));
    let d = parse_kernel("// nothing here\n", "empty.strata").unwrap_err();
    assert_eq!(d.message, "expected exactly one kernel, found 0");
}

#[test]
fn cycle_between_functions() {
    // The cycle is reported where it closes: `g`'s call of `f`.
    check_exact(
        &in_kernel(&["f(i) = g(i);", "g(i) = f(i);", "B(i) = f(i);"]),
        "cycle between functions: f -> g -> f",
        3,
        12,
    );
}

#[test]
fn pure_definition_reading_itself() {
    check(
        &in_kernel(&["g(i) = A(i) + g(i);", "B(i) = g(i);"]),
        "`g` reads itself in its pure definition",
        2,
        19,
    );
}

#[test]
fn update_before_pure_definition() {
    check_exact(
        &in_kernel(&["B(i) += A(i);"]),
        "update of `B` before its pure definition: define `B(x, ...) = ...` first",
        2,
        5,
    );
}

#[test]
fn reduction_update_before_pure_definition() {
    //  for (r in 0..N) B(r) = A(r);
    //                  ^ column 21
    check(
        &in_kernel(&["for (r in 0..N) B(r) = A(r);"]),
        "update of `B` before its pure definition",
        2,
        21,
    );
}

#[test]
fn pure_definition_with_a_non_variable_argument() {
    check_exact(
        &in_kernel(&["B(i + 1) = A(i);"]),
        "the pure definition of `B` must have plain variables as arguments",
        2,
        7,
    );
}

#[test]
fn duplicate_variable_in_a_pure_definition() {
    check_exact(
        &in_kernel(&["g(i, i) = A(i);", "B(i) = g(i, i);"]),
        "variable `i` appears twice in the definition of `g`",
        2,
        10,
    );
}

#[test]
fn output_never_defined() {
    check_exact(
        &in_kernel(&["g(i) = A(i);"]),
        "the output `B` is never defined",
        1,
        24,
    );
}

#[test]
fn output_rank_mismatch() {
    check(
        "kernel k(A: f32[N]) -> B: f32[N, N] {\n    B(i) = A(i);\n}",
        "the output `B` is declared with 2 dimensions but defined with 1 variable",
        2,
        5,
    );
}

#[test]
fn update_with_the_wrong_number_of_arguments() {
    check(
        &in_kernel(&["B(i) = A(i);", "B(i, i) += 1.0;"]),
        "`B` has 1 argument",
        3,
        5,
    );
}

#[test]
fn pure_variable_misplaced_in_an_update() {
    //  B(0) = B(i);
    //           ^ column 14
    check_exact(
        &in_kernel(&["B(i) = A(i);", "B(0) = B(i);"]),
        "pure variable `i` of `B` can be used in this update only if it appears bare in its own position",
        3,
        14,
    );
}

#[test]
fn pure_variable_shifted_in_a_read_of_the_updated_function() {
    //  B(i) = B(i) + B(i - 1);
    //                  ^ column 21
    check_exact(
        &in_kernel(&["B(i) = A(i);", "B(i) = B(i) + B(i - 1);"]),
        "pure variable `i` can be used in a read of `B` inside its update only bare, in its own position; for a recurrence, use a reduction variable: `for (r in 1..N) B(r, ...) = ... B(r - 1, ...)`",
        3,
        21,
    );
}

#[test]
fn update_reading_the_output_below_zero() {
    //  for (r in 0..N) B(r) = B(r - 1);
    //                             ^ column 30
    check_exact(
        &in_kernel(&["B(i) = A(i);", "for (r in 0..N) B(r) = B(r - 1);"]),
        "this index of the output `B` reaches -1, outside its extents: an update may read or write the output only inside them (start the reduction domain later, or compute the recurrence in a producer)",
        3,
        30,
    );
}

#[test]
fn reduction_domain_missing() {
    check_exact(
        &in_kernel(&["B(i) = sum(A(i));"]),
        "`sum` needs a reduction domain: `sum(k in 0..K) body`",
        2,
        12,
    );
}

#[test]
fn compound_update_of_a_bool_function() {
    let src = "kernel k(A: f32[N]) -> B: f32[N] {\n    \
               m(i) = A(i) > 0.0;\n    \
               for (r in 0..N) m(r) += true;\n    \
               B(i) = select(m(i), 1.0, 0.0);\n}";
    check_exact(src, "`+=` needs a numeric function, but `m` is bool", 3, 26);
}

// ---------------------------------------------------------------------------------------------
// The rendered report
// ---------------------------------------------------------------------------------------------

#[test]
fn rendered_report() {
    let src = "// brightness\nkernel k(A: u16[N], C: u32[N]) -> B: u32[N] {\n    B(i) = A(i) + C(i);\n}\n";
    let d = parse_kernels(src, "blur.strata").unwrap_err();
    let expected = "\
error: type mismatch in `+`: u16 and u32 (cast explicitly, e.g. `u32(...)`)
 --> blur.strata:3:12
  |
3 |     B(i) = A(i) + C(i);
  |            ^^^^^^^^^^^";
    assert_eq!(d.to_string(), expected);
}

#[test]
fn rendered_report_at_end_of_input() {
    let src = "kernel k(A: f32[N]) -> B: f32[N] {\n    B(i) = A(i)";
    let d = parse_kernels(src, "eof.strata").unwrap_err();
    let expected = "\
error: expected `;`, found end of input
 --> eof.strata:2:16
  |
2 |     B(i) = A(i)
  |                ^";
    assert_eq!(d.to_string(), expected);
}

#[test]
fn rendered_report_keeps_tabs_so_the_caret_lines_up() {
    let src = "kernel k(A: f32[N]) -> B: f32[N] {\n\tB(i) = A(i) $ 2;\n}";
    let d = parse_kernels(src, "tabs.strata").unwrap_err();
    assert_eq!(d.line_col(), (2, 14));
    let expected = "\
error: unexpected character `$`
 --> tabs.strata:2:14
  |
2 | \tB(i) = A(i) $ 2;
  | \t            ^";
    assert_eq!(d.to_string(), expected);
}

#[test]
fn rendered_report_with_crlf_line_endings() {
    let src = "kernel k(A: f32[N]) -> B: f32[N] {\r\n    B(i) = A(i) $ 2;\r\n}\r\n";
    let d = parse_kernels(src, "crlf.strata").unwrap_err();
    let expected = "\
error: unexpected character `$`
 --> crlf.strata:2:17
  |
2 |     B(i) = A(i) $ 2;
  |                 ^";
    assert_eq!(d.to_string(), expected);
}

#[test]
fn rendered_report_with_a_multi_line_span_cuts_the_carets_at_the_line_end() {
    // The mismatched `+` spans two lines; the carets stop at the end of the first.
    let src = "kernel k(A: u8[N], C: u16[N]) -> B: u16[N] {\n    B(i) = A(i)\n        + C(i);\n}";
    let d = parse_kernels(src, "multi.strata").unwrap_err();
    let expected = "\
error: type mismatch in `+`: u8 and u16 (cast explicitly, e.g. `u16(...)`)
 --> multi.strata:2:12
  |
2 |     B(i) = A(i)
  |            ^^^^";
    assert_eq!(d.to_string(), expected);
}
