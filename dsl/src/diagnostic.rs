//! Source positions and the error a malformed or ill-typed kernel produces: file, line, column,
//! the offending line and a caret under the offending text.

use std::fmt;

/// A byte range `start..end` in the source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// Byte offset of the first character.
    pub start: usize,
    /// Byte offset just past the last character.
    pub end: usize,
}

impl Span {
    /// The bytes `start..end` of the source.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// An error in kernel source, located at a span. `Display` renders it rustc-style:
///
/// ```text
/// error: type mismatch: u16 + u32
///  --> blur.strata:3:17
///   |
/// 3 |     bx(y, x) = input(y, x) + u32(1);
///   |                ^^^^^^^^^^^^^^^^^^^^
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// What is wrong, in one line.
    pub message: String,
    /// Where, in the source.
    pub span: Span,
    /// The file name shown in the report (`kernel!` uses the Rust source location).
    pub file: String,
    /// The source text the span indexes (for the rendered line and caret).
    pub source: String,
}

impl Diagnostic {
    /// An error at `span`, without a file yet (`in_file` adds it and the source text).
    pub fn new(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span,
            file: String::new(),
            source: String::new(),
        }
    }

    /// Attaches the file name and text the span points into.
    pub fn in_file(mut self, file: &str, source: &str) -> Diagnostic {
        self.file = file.to_string();
        self.source = source.to_string();
        self
    }

    /// 1-based line and column (in characters) of the span's start.
    pub fn line_col(&self) -> (usize, usize) {
        line_col(&self.source, self.span.start)
    }
}

/// 1-based line and column (in characters) of byte `offset` in `source`.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = floor_char_boundary(source, offset);
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = source[line_start..offset].chars().count() + 1;
    (line, col)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "error: {}", self.message)?;
        let (line, col) = self.line_col();
        writeln!(f, " --> {}:{}:{}", self.file, line, col)?;
        let line_text = self.source.lines().nth(line - 1).unwrap_or("");
        let gutter = " ".repeat(line.to_string().len());
        let caret_len = self.caret_len(line_text, col);
        writeln!(f, "{gutter} |")?;
        writeln!(f, "{line} | {line_text}")?;
        // Tabs stay tabs so the carets line up under the text however wide a tab is shown.
        let indent: String = line_text
            .chars()
            .take(col - 1)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        write!(f, "{gutter} | {indent}{}", "^".repeat(caret_len))
    }
}

impl Diagnostic {
    /// Carets cover the span, cut at the end of its first line, and are at least one wide.
    fn caret_len(&self, line_text: &str, col: usize) -> usize {
        let start = floor_char_boundary(&self.source, self.span.start);
        let end = floor_char_boundary(&self.source, self.span.end.max(start));
        let spanned = self.source[start..end].chars().count();
        let left_on_line = line_text.chars().count().saturating_sub(col - 1);
        spanned.min(left_on_line).max(1)
    }
}

impl std::error::Error for Diagnostic {}
