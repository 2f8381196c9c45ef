//! The schedule's text form (docs/design.md §8): one line per function stage, directives
//! chained with `.`, lines separated by newlines or `;`.
//!
//! ```text
//! out: tile(y, x, yo, xo, yi, xi, 32, 256).vectorize(xi, 16).parallel(yo)
//! bx: compute_at(out, xo).vectorize(x, 16)
//! hist.update(0): parallel(y)
//! out.specialize((W - 2) % 16 == 0): vectorize(xi, 16)
//! ```
//!
//! `specialize(cond)` takes a condition in the kernel language, kept as written (its own
//! parentheses nest; it ends on its line) and read by the dsl's parser at validation. A line
//! whose first directive is `specialize` prints it in its head, `f.specialize(cond): ...`;
//! written anywhere in a chain it reads as Halide's `f.split(..).specialize(cond).vectorize(..)`
//! (see `Directive::Specialize`).
//!
//! Printing then parsing gives back an equal `Schedule`, and parsing then printing gives the
//! canonical text (one line per `Line`, `, ` between arguments).

use super::*;
use std::fmt;

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, line) in self.lines.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{line}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.func)?;
        if let StageRef::Update(i) = self.stage {
            write!(f, ".update({i})")?;
        }
        let mut directives = self.directives.as_slice();
        if let [Directive::Specialize(cond), rest @ ..] = directives {
            write!(f, ".specialize({cond})")?;
            directives = rest;
        }
        f.write_str(":")?;
        for (i, d) in directives.iter().enumerate() {
            f.write_str(if i == 0 { " " } else { "." })?;
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl fmt::Display for TailStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TailStrategy::Guard => "guard",
            TailStrategy::Shift => "shift",
            TailStrategy::RoundUp => "round_up",
        })
    }
}

impl fmt::Display for LoopLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.func)?;
        if let StageRef::Update(i) = self.stage {
            write!(f, ".update({i})")?;
        }
        write!(f, ", {}", self.var)
    }
}

fn tail_suffix(tail: &Option<TailStrategy>) -> String {
    tail.map(|t| format!(", {t}")).unwrap_or_default()
}

impl fmt::Display for Directive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Directive::Split {
                var,
                outer,
                inner,
                factor,
                tail,
            } => {
                write!(
                    f,
                    "split({var}, {outer}, {inner}, {factor}{})",
                    tail_suffix(tail)
                )
            }
            Directive::Fuse {
                outer,
                inner,
                fused,
            } => write!(f, "fuse({outer}, {inner}, {fused})"),
            Directive::Reorder(vars) => write!(f, "reorder({})", vars.join(", ")),
            Directive::Tile {
                y,
                x,
                yo,
                xo,
                yi,
                xi,
                fy,
                fx,
                tail,
            } => write!(
                f,
                "tile({y}, {x}, {yo}, {xo}, {yi}, {xi}, {fy}, {fx}{})",
                tail_suffix(tail)
            ),
            Directive::Vectorize {
                var,
                width: Some(w),
            } => write!(f, "vectorize({var}, {w})"),
            Directive::Vectorize { var, width: None } => write!(f, "vectorize({var})"),
            Directive::Unroll {
                var,
                factor: Some(n),
            } => write!(f, "unroll({var}, {n})"),
            Directive::Unroll { var, factor: None } => write!(f, "unroll({var})"),
            Directive::Parallel { var } => write!(f, "parallel({var})"),
            Directive::ComputeInline => f.write_str("compute_inline()"),
            Directive::ComputeRoot => f.write_str("compute_root()"),
            Directive::ComputeAt(level) => write!(f, "compute_at({level})"),
            Directive::StoreRoot => f.write_str("store_root()"),
            Directive::StoreAt(level) => write!(f, "store_at({level})"),
            Directive::ReorderStorage(vars) => write!(f, "reorder_storage({})", vars.join(", ")),
            Directive::Wrap { producer, wrapper } => write!(f, "wrap({producer}, {wrapper})"),
            Directive::FoldStorage { var, extent } => write!(f, "fold_storage({var}, {extent})"),
            Directive::Specialize(cond) => write!(f, "specialize({cond})"),
            Directive::Rfactor { var, intermediate } => write!(f, "rfactor({var}, {intermediate})"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

use std::str::FromStr;
use strata_dsl::suggest::edit_distance;
use strata_dsl::{Diagnostic, Span};

/// Parses the text form: lines separated by newlines or `;`, blank lines and `//` comments
/// allowed; a line is `func[.update(N)]: directive(.directive)*` with the directives as
/// `Display` prints them (`compute_inline`, `compute_root` and `store_root` may drop their
/// `()`). Names are letters, digits, `_` and `.` (loop names like `x.v`), starting with a
/// letter or `_`; factors are integers, possibly negative (validation rejects those later).
/// Errors point at the offending text (file name `schedule`). Never panics.
pub fn parse_schedule(text: &str) -> Result<Schedule, Diagnostic> {
    let parse = || {
        Parser {
            text,
            tokens: tokenize(text)?,
            pos: 0,
        }
        .schedule()
    };
    parse().map_err(|e| e.in_file("schedule", text))
}

impl FromStr for Schedule {
    type Err = Diagnostic;

    fn from_str(text: &str) -> Result<Schedule, Diagnostic> {
        parse_schedule(text)
    }
}

/// The directives, how many arguments each takes, and how it is written.
const DIRECTIVES: &[(&str, usize, usize, &str)] = &[
    ("split", 4, 5, "split(var, outer, inner, factor[, tail])"),
    ("fuse", 3, 3, "fuse(outer, inner, fused)"),
    (
        "reorder",
        1,
        usize::MAX,
        "reorder(loop, ...), outermost first",
    ),
    ("tile", 8, 9, "tile(y, x, yo, xo, yi, xi, fy, fx[, tail])"),
    ("vectorize", 1, 2, "vectorize(var[, width])"),
    ("unroll", 1, 2, "unroll(var[, factor])"),
    ("parallel", 1, 1, "parallel(var)"),
    ("compute_inline", 0, 0, "compute_inline()"),
    ("compute_root", 0, 0, "compute_root()"),
    ("compute_at", 2, 2, "compute_at(func, var)"),
    ("store_root", 0, 0, "store_root()"),
    ("store_at", 2, 2, "store_at(func, var)"),
    (
        "reorder_storage",
        1,
        usize::MAX,
        "reorder_storage(dim, ...), outermost first",
    ),
    ("wrap", 2, 2, "wrap(input or function, new function)"),
    ("fold_storage", 2, 2, "fold_storage(dim, extent)"),
    ("rfactor", 2, 2, "rfactor(reduction loop, new function)"),
    (
        "specialize",
        1,
        1,
        "specialize(condition), the condition over sizes and scalar parameters",
    ),
];

const TAILS: &str = "guard, shift or round_up";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Ident,
    Int,
    LParen,
    RParen,
    Comma,
    Dot,
    Colon,
    /// The condition of `specialize(...)`: the text between its parentheses, kept whole
    /// (it is kernel-language text, which the dsl's parser reads at validation).
    Cond,
    /// A newline or `;`.
    Sep,
    Eof,
}

#[derive(Clone, Copy, Debug)]
struct Token {
    kind: Kind,
    span: Span,
}

fn error(message: impl Into<String>, span: Span) -> Diagnostic {
    Diagnostic::new(message, span)
}

/// The byte index after the run of characters matching `pred` starting at `i`.
fn scan(text: &str, i: usize, pred: impl Fn(char) -> bool) -> usize {
    let rest = text.get(i..).unwrap_or("");
    i + rest.find(|c: char| !pred(c)).unwrap_or(rest.len())
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Splits `text` into tokens; identifiers and integers stop at `.`, which is a token of its own
/// (names like `x.v` are put back together by the parser from adjacent tokens).
fn tokenize(text: &str) -> Result<Vec<Token>, Diagnostic> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(c) = text.get(i..).and_then(|rest| rest.chars().next()) {
        let start = i;
        let next_is_digit = text
            .get(i + 1..)
            .is_some_and(|rest| rest.starts_with(|d: char| d.is_ascii_digit()));
        let kind = match c {
            ' ' | '\t' | '\r' => {
                i += 1;
                continue;
            }
            '/' if text[i..].starts_with("//") => {
                i = scan(text, i, |c| c != '\n');
                continue;
            }
            '\n' | ';' => Kind::Sep,
            '(' => Kind::LParen,
            ')' => Kind::RParen,
            ',' => Kind::Comma,
            '.' => Kind::Dot,
            ':' => Kind::Colon,
            c if c.is_ascii_alphabetic() || c == '_' => Kind::Ident,
            c if c.is_ascii_digit() || (c == '-' && next_is_digit) => Kind::Int,
            other => {
                let span = Span::new(i, i + other.len_utf8());
                return Err(error(
                    format!("unexpected character `{other}` in a schedule"),
                    span,
                ));
            }
        };
        i = match kind {
            Kind::Ident => scan(text, i, is_word_char),
            Kind::Int => scan(text, i + 1, |c| c.is_ascii_digit()),
            _ => i + 1,
        };
        tokens.push(Token {
            kind,
            span: Span::new(start, i),
        });
        if kind == Kind::Ident && &text[start..i] == "specialize" && text[i..].starts_with('(') {
            i = condition_tokens(text, i, &mut tokens)?;
        }
    }
    tokens.push(Token {
        kind: Kind::Eof,
        span: Span::new(text.len(), text.len()),
    });
    Ok(tokens)
}

/// The tokens of `(cond)` starting at the `(` at `open`: `(`, the condition's text as one
/// `Cond` token (spaces around it left out), `)`. Parentheses nest; the condition ends on its
/// line. Returns the index after the `)`.
fn condition_tokens(text: &str, open: usize, tokens: &mut Vec<Token>) -> Result<usize, Diagnostic> {
    let mut depth = 0usize;
    for (offset, c) in text[open..].char_indices() {
        let at = open + offset;
        match c {
            '(' => depth += 1,
            ')' if depth > 1 => depth -= 1,
            ')' => {
                let inner = &text[open + 1..at];
                let start = open + 1 + (inner.len() - inner.trim_start().len());
                let end = at - (inner.len() - inner.trim_end().len());
                let kinds = [
                    (Kind::LParen, open, open + 1),
                    (Kind::Cond, start, end.max(start)),
                ];
                for (kind, a, b) in kinds.into_iter().chain([(Kind::RParen, at, at + 1)]) {
                    tokens.push(Token {
                        kind,
                        span: Span::new(a, b),
                    });
                }
                return Ok(at + 1);
            }
            '\n' | ';' => break,
            _ => {}
        }
    }
    Err(error(
        "unclosed `(`: the condition of `specialize` ends with `)` on its line",
        Span::new(open, open + 1),
    ))
}

/// One argument of a directive (or a line's head) as written.
#[derive(Clone, Debug)]
struct Arg<'a> {
    text: &'a str,
    span: Span,
    value: ArgValue<'a>,
}

#[derive(Clone, Debug)]
enum ArgValue<'a> {
    Name,
    Int(i64),
    /// `func.update(N)`.
    Update(&'a str, usize),
    /// Neither a name nor an integer (`4.5`, `x..y`, an integer too large).
    Other,
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Token {
        self.token(self.pos)
    }

    /// The token at `index`, or the end of the text past the last one.
    fn token(&self, index: usize) -> Token {
        let eof = Token {
            kind: Kind::Eof,
            span: Span::new(self.text.len(), self.text.len()),
        };
        self.tokens.get(index).copied().unwrap_or(eof)
    }

    fn bump(&mut self) -> Token {
        let token = self.peek();
        self.pos = (self.pos + 1).min(self.tokens.len());
        token
    }

    fn slice(&self, span: Span) -> &'a str {
        self.text.get(span.start..span.end).unwrap_or("")
    }

    /// How a token reads in an error message.
    fn describe(&self, token: Token) -> String {
        match token.kind {
            Kind::Eof => "the end of the schedule".to_string(),
            Kind::Sep if self.slice(token.span) == "\n" => "the end of the line".to_string(),
            _ => format!("`{}`", self.slice(token.span)),
        }
    }

    /// The next token if it is a `kind`, else "expected {expected}, found ...{hint}".
    fn expect(&mut self, kind: Kind, expected: &str, hint: &str) -> Result<Token, Diagnostic> {
        let token = self.peek();
        if token.kind != kind {
            let message = format!("expected {expected}, found {}{hint}", self.describe(token));
            return Err(error(message, token.span));
        }
        Ok(self.bump())
    }

    fn schedule(&mut self) -> Result<Schedule, Diagnostic> {
        let mut lines = Vec::new();
        loop {
            while self.peek().kind == Kind::Sep {
                self.bump();
            }
            if self.peek().kind == Kind::Eof {
                return Ok(Schedule { lines });
            }
            lines.push(self.line()?);
        }
    }

    /// `func[.update(N)]: directive(.directive)*`, up to the separator.
    fn line(&mut self) -> Result<Line, Diagnostic> {
        let head = self.arg("a function name at the start of the line")?;
        let (func, stage) = match head.value {
            ArgValue::Name => (head.text.to_string(), StageRef::Pure),
            ArgValue::Update(func, i) => (func.to_string(), StageRef::Update(i)),
            _ => {
                return Err(error(
                    format!("expected a function name, found `{}`", head.text),
                    head.span,
                ))
            }
        };
        let mut directives = Vec::new();
        let (func, specialized) = self.head_specialization(func, stage)?;
        directives.extend(specialized);
        let expected = format!(
            "`:` after `{}`",
            self.slice(head.span.to(self.token(self.pos.saturating_sub(1)).span))
        );
        self.expect(
            Kind::Colon,
            &expected,
            "; a line reads `func: directive(...).directive(...)`",
        )?;
        if !matches!(self.peek().kind, Kind::Sep | Kind::Eof) {
            directives.push(self.directive("a directive after `:`")?);
            while self.peek().kind == Kind::Dot {
                self.bump();
                directives.push(self.directive("a directive after `.`")?);
            }
        }
        let next = self.peek();
        if !matches!(next.kind, Kind::Sep | Kind::Eof) {
            let message = format!(
                "unexpected {} after a directive; chain directives with `.` and end a line with a newline or `;`",
                self.describe(next)
            );
            return Err(error(message, next.span));
        }
        Ok(Line {
            func,
            stage,
            directives,
        })
    }

    /// The `.specialize(cond)` of a line's head, `f.specialize(cond):` or
    /// `f.update(N).specialize(cond):`: `func` without it, and the directive. (For a pure
    /// stage the head's name ran on through `.specialize`.)
    fn head_specialization(
        &mut self,
        func: String,
        stage: StageRef,
    ) -> Result<(String, Option<Directive>), Diagnostic> {
        if stage == StageRef::Pure {
            match func.strip_suffix(".specialize") {
                Some(f) if self.peek().kind == Kind::LParen => {
                    let cond = self.condition()?;
                    return Ok((f.to_string(), Some(cond)));
                }
                _ => return Ok((func, None)),
            }
        }
        let is_specialize = self.peek().kind == Kind::Dot
            && self.slice(self.token(self.pos + 1).span) == "specialize"
            && self.token(self.pos + 2).kind == Kind::LParen;
        if !is_specialize {
            return Ok((func, None));
        }
        self.pos += 2;
        Ok((func, Some(self.condition()?)))
    }

    /// `(cond)` after `specialize`, as the directive.
    fn condition(&mut self) -> Result<Directive, Diagnostic> {
        self.expect(Kind::LParen, "`(` after `specialize`", "")?;
        let cond = self.peek();
        if cond.kind != Kind::Cond || cond.span.start == cond.span.end {
            let message = "`specialize` takes a condition over sizes and scalar parameters, as in `specialize(W % 16 == 0)`";
            return Err(error(message, cond.span));
        }
        self.bump();
        self.expect(Kind::RParen, "`)` after the condition", "")?;
        Ok(Directive::Specialize(self.slice(cond.span).to_string()))
    }

    /// `name(args)`, or a bare `compute_inline`, `compute_root` or `store_root`.
    fn directive(&mut self, expected: &str) -> Result<Directive, Diagnostic> {
        let name_token = self.expect(Kind::Ident, expected, "")?;
        let name = self.slice(name_token.span);
        if name == "specialize" && self.peek().kind == Kind::LParen {
            return self.condition();
        }
        let Some(&(_, min, max, usage)) = DIRECTIVES.iter().find(|d| d.0 == name) else {
            return Err(error(unknown_directive(name), name_token.span));
        };
        let takes_none = max == 0;
        let args = if takes_none && self.peek().kind != Kind::LParen {
            Vec::new()
        } else {
            self.expect(
                Kind::LParen,
                &format!("`(` after `{name}`"),
                &format!("; it is written {usage}"),
            )?;
            self.args(name)?
        };
        let span = name_token
            .span
            .to(self.token(self.pos.saturating_sub(1)).span);
        if args.len() < min || args.len() > max {
            let message = format!(
                "`{name}` takes {}, found {}: {usage}",
                count(min, max),
                args.len()
            );
            return Err(error(message, span));
        }
        build(name, &args)
    }

    /// A comma-separated argument list after `(`, through the closing `)`.
    fn args(&mut self, directive: &str) -> Result<Vec<Arg<'a>>, Diagnostic> {
        let mut args = Vec::new();
        if self.peek().kind == Kind::RParen {
            self.bump();
            return Ok(args);
        }
        let context = format!("in the arguments of `{directive}`");
        loop {
            args.push(self.arg(&format!("an argument {context}"))?);
            match self.peek().kind {
                Kind::Comma => {
                    self.bump();
                }
                Kind::RParen => {
                    self.bump();
                    return Ok(args);
                }
                _ => {
                    self.expect(Kind::RParen, &format!("`,` or `)` {context}"), "")?;
                }
            }
        }
    }

    /// A name, an integer or `func.update(N)`: a run of adjacent identifier, integer and `.`
    /// tokens, then `(N)` when the run ends in `.update`.
    fn arg(&mut self, what: &str) -> Result<Arg<'a>, Diagnostic> {
        let first = self.peek();
        if !matches!(first.kind, Kind::Ident | Kind::Int | Kind::Dot) {
            return Err(error(
                format!("expected {what}, found {}", self.describe(first)),
                first.span,
            ));
        }
        let mut span = self.bump().span;
        while matches!(self.peek().kind, Kind::Ident | Kind::Int | Kind::Dot)
            && self.peek().span.start == span.end
        {
            span = span.to(self.bump().span);
        }
        let text = self.slice(span);
        if let Some(func) = text.strip_suffix(".update").filter(|f| is_name(f)) {
            if self.peek().kind == Kind::LParen {
                return self.update_arg(func, span);
            }
        }
        let value = if is_name(text) {
            ArgValue::Name
        } else {
            text.parse().map_or(ArgValue::Other, ArgValue::Int)
        };
        Ok(Arg { text, span, value })
    }

    /// The `(N)` of `func.update(N)`.
    fn update_arg(&mut self, func: &'a str, start: Span) -> Result<Arg<'a>, Diagnostic> {
        self.bump();
        let index = self.peek();
        let value = (index.kind == Kind::Int)
            .then(|| self.slice(index.span).parse::<usize>().ok())
            .flatten();
        let Some(i) = value else {
            let message = format!(
                "expected the update's index (0, 1, ...), found {}",
                self.describe(index)
            );
            return Err(error(message, index.span));
        };
        self.bump();
        let close = self.expect(Kind::RParen, &format!("`)` after `{func}.update({i}`"), "")?;
        let span = start.to(close.span);
        Ok(Arg {
            text: self.slice(span),
            span,
            value: ArgValue::Update(func, i),
        })
    }
}

/// Letters, digits and `_` in parts joined by single dots, starting with a letter or `_`.
fn is_name(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && text
            .split('.')
            .all(|part| !part.is_empty() && part.chars().all(is_word_char))
}

fn unknown_directive(name: &str) -> String {
    let known: Vec<&str> = DIRECTIVES.iter().map(|d| d.0).collect();
    let close = known.iter().find(|k| edit_distance(name, k) <= 2);
    let suggestion = close
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default();
    let hint = if name == "update" {
        "; `.update(N)` goes before the `:`, as in `f.update(0): ...`"
    } else {
        ""
    };
    format!(
        "unknown directive `{name}`{suggestion}; the directives are: {}{hint}",
        known.join(", ")
    )
}

/// "no arguments", "1 argument", "4 or 5 arguments", "1 or more arguments".
fn count(min: usize, max: usize) -> String {
    let plural = |n: usize| if n == 1 { "argument" } else { "arguments" };
    match (min, max) {
        (0, 0) => "no arguments".to_string(),
        (a, b) if a == b => format!("{a} {}", plural(a)),
        (a, usize::MAX) => format!("{a} or more arguments"),
        (a, b) => format!("{a} or {b} arguments"),
    }
}

/// The directive `name` with arguments `args` (already counted).
fn build(name: &str, args: &[Arg<'_>]) -> Result<Directive, Diagnostic> {
    let a = Args(args);
    Ok(match name {
        "split" => Directive::Split {
            var: a.name(0)?,
            outer: a.name(1)?,
            inner: a.name(2)?,
            factor: a.int(3, "the split factor")?,
            tail: a.tail(4)?,
        },
        "fuse" => Directive::Fuse {
            outer: a.name(0)?,
            inner: a.name(1)?,
            fused: a.name(2)?,
        },
        "reorder" => Directive::Reorder(
            (0..args.len())
                .map(|i| a.name(i))
                .collect::<Result<_, _>>()?,
        ),
        "tile" => Directive::Tile {
            y: a.name(0)?,
            x: a.name(1)?,
            yo: a.name(2)?,
            xo: a.name(3)?,
            yi: a.name(4)?,
            xi: a.name(5)?,
            fy: a.int(6, "the factor of `y`")?,
            fx: a.int(7, "the factor of `x`")?,
            tail: a.tail(8)?,
        },
        "vectorize" => Directive::Vectorize {
            var: a.name(0)?,
            width: a.opt_int(1, "the vector width")?,
        },
        "unroll" => Directive::Unroll {
            var: a.name(0)?,
            factor: a.opt_int(1, "the unroll factor")?,
        },
        "parallel" => Directive::Parallel { var: a.name(0)? },
        "compute_inline" => Directive::ComputeInline,
        "compute_root" => Directive::ComputeRoot,
        "store_root" => Directive::StoreRoot,
        "compute_at" => Directive::ComputeAt(a.level()?),
        "reorder_storage" => Directive::ReorderStorage(
            (0..args.len())
                .map(|i| a.name(i))
                .collect::<Result<_, _>>()?,
        ),
        "rfactor" => Directive::Rfactor {
            var: a.name(0)?,
            intermediate: a.function(1)?,
        },
        "wrap" => Directive::Wrap {
            producer: a.function(0)?,
            wrapper: a.function(1)?,
        },
        "fold_storage" => Directive::FoldStorage {
            var: a.name(0)?,
            extent: a.int(1, "the fold's extent")?,
        },
        _ => Directive::StoreAt(a.level()?),
    })
}

/// Typed access to a directive's arguments.
struct Args<'s, 'a>(&'s [Arg<'a>]);

impl Args<'_, '_> {
    fn get(&self, i: usize) -> Result<&Arg<'_>, Diagnostic> {
        let end = self
            .0
            .last()
            .map_or(Span::default(), |a| Span::new(a.span.end, a.span.end));
        self.0.get(i).ok_or_else(|| error("missing argument", end))
    }

    fn name(&self, i: usize) -> Result<String, Diagnostic> {
        let arg = self.get(i)?;
        match arg.value {
            ArgValue::Name => Ok(arg.text.to_string()),
            _ => Err(error(
                format!("expected a loop name, found `{}`", arg.text),
                arg.span,
            )),
        }
    }

    /// A function or input name (`wrap`'s arguments).
    fn function(&self, i: usize) -> Result<String, Diagnostic> {
        let arg = self.get(i)?;
        match arg.value {
            ArgValue::Name => Ok(arg.text.to_string()),
            _ => Err(error(
                format!(
                    "expected the name of an input or function, found `{}`",
                    arg.text
                ),
                arg.span,
            )),
        }
    }

    fn int(&self, i: usize, role: &str) -> Result<i64, Diagnostic> {
        let arg = self.get(i)?;
        match arg.value {
            ArgValue::Int(n) => Ok(n),
            _ if arg
                .text
                .trim_start_matches('-')
                .chars()
                .all(|c| c.is_ascii_digit()) =>
            {
                Err(error(
                    format!("{role} `{}` does not fit in 64 bits", arg.text),
                    arg.span,
                ))
            }
            _ => Err(error(
                format!("{role} must be an integer, found `{}`", arg.text),
                arg.span,
            )),
        }
    }

    fn opt_int(&self, i: usize, role: &str) -> Result<Option<i64>, Diagnostic> {
        if i < self.0.len() {
            self.int(i, role).map(Some)
        } else {
            Ok(None)
        }
    }

    fn tail(&self, i: usize) -> Result<Option<TailStrategy>, Diagnostic> {
        let Some(arg) = self.0.get(i) else {
            return Ok(None);
        };
        match arg.text {
            "guard" => Ok(Some(TailStrategy::Guard)),
            "shift" => Ok(Some(TailStrategy::Shift)),
            "round_up" => Ok(Some(TailStrategy::RoundUp)),
            other => Err(error(
                format!("unknown tail strategy `{other}`; use {TAILS}"),
                arg.span,
            )),
        }
    }

    /// `g, v` or `g.update(N), v`.
    fn level(&self) -> Result<LoopLevel, Diagnostic> {
        let arg = self.get(0)?;
        let (func, stage) = match arg.value {
            ArgValue::Name => (arg.text.to_string(), StageRef::Pure),
            ArgValue::Update(func, i) => (func.to_string(), StageRef::Update(i)),
            _ => {
                return Err(error(
                    format!("expected a function name, found `{}`", arg.text),
                    arg.span,
                ))
            }
        };
        Ok(LoopLevel {
            func,
            stage,
            var: self.name(1)?,
        })
    }
}
