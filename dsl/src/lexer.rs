//! Turns kernel source text into tokens. Whitespace and `//` comments separate tokens; nothing
//! else is skipped, so every byte of the input is accounted for or reported.

use crate::diagnostic::{Diagnostic, Span};
use crate::dtype::Dtype;

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A name: a kernel, function, variable, size, type or keyword.
    Ident(String),
    /// An integer literal with an optional type suffix (`3`, `255u8`).
    Int(u128, Option<Dtype>),
    /// A float literal's digits (underscores removed) with an optional type suffix (`0.5`,
    /// `1e-3f64`); kept as text so each float type rounds it once, from the decimal.
    Float(String, Option<Dtype>),
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `,`
    Comma,
    /// `:`
    Colon,
    /// `;`
    Semi,
    /// `->`
    Arrow,
    /// `..`
    DotDot,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// `=`
    Assign,
    /// `+=`
    PlusAssign,
    /// `-=`
    MinusAssign,
    /// `*=`
    StarAssign,
    /// `==`
    EqEq,
    /// `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&`
    AndAnd,
    /// `||`
    OrOr,
    /// `!`
    Bang,
    /// The end of the text.
    Eof,
}

impl Tok {
    /// How the token is described in "expected X, found Y" messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(name) => format!("`{name}`"),
            Tok::Int(..) | Tok::Float(..) => "a number".into(),
            Tok::Eof => "end of input".into(),
            other => format!("`{}`", other.symbol()),
        }
    }

    fn symbol(&self) -> &'static str {
        match self {
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Comma => ",",
            Tok::Colon => ":",
            Tok::Semi => ";",
            Tok::Arrow => "->",
            Tok::DotDot => "..",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::Assign => "=",
            Tok::PlusAssign => "+=",
            Tok::MinusAssign => "-=",
            Tok::StarAssign => "*=",
            Tok::EqEq => "==",
            Tok::NotEq => "!=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::Bang => "!",
            Tok::Ident(_) | Tok::Int(..) | Tok::Float(..) | Tok::Eof => "",
        }
    }
}

/// A token and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What it is.
    pub tok: Tok,
    /// Where it is in the source.
    pub span: Span,
}

/// Splits `src` into tokens, ending with `Tok::Eof`.
pub fn lex(src: &str) -> Result<Vec<Token>, Diagnostic> {
    let mut lexer = Lexer { src, pos: 0 };
    let mut tokens = Vec::new();
    loop {
        lexer.skip_trivia()?;
        let start = lexer.pos;
        let Some(c) = lexer.peek() else {
            tokens.push(Token {
                tok: Tok::Eof,
                span: Span::new(start, start),
            });
            return Ok(tokens);
        };
        let tok = if c.is_ascii_alphabetic() || c == '_' {
            Tok::Ident(
                lexer
                    .take_while(|c| c.is_ascii_alphanumeric() || c == '_')
                    .to_string(),
            )
        } else if c.is_ascii_digit() {
            lexer.number()?
        } else {
            lexer.punct()?
        };
        tokens.push(Token {
            tok,
            span: Span::new(start, lexer.pos),
        });
    }
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(ahead)
    }

    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &'a str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if !keep(c) {
                break;
            }
            self.pos += c.len_utf8();
        }
        &self.src[start..self.pos]
    }

    fn skip_trivia(&mut self) -> Result<(), Diagnostic> {
        loop {
            self.take_while(char::is_whitespace);
            if self.src[self.pos..].starts_with("//") {
                self.take_while(|c| c != '\n');
            } else if self.src[self.pos..].starts_with("/*") {
                let start = self.pos;
                match self.src[self.pos + 2..].find("*/") {
                    Some(end) => self.pos += 2 + end + 2,
                    None => {
                        return Err(Diagnostic::new(
                            "unterminated block comment",
                            Span::new(start, start + 2),
                        ))
                    }
                }
            } else {
                return Ok(());
            }
        }
    }

    /// Digits, an optional fraction and exponent, an optional type suffix.
    fn number(&mut self) -> Result<Tok, Diagnostic> {
        let start = self.pos;
        let is_digit = |c: char| c.is_ascii_digit() || c == '_';
        self.take_while(is_digit);
        let mut is_float = false;
        if self.peek() == Some('.') && self.peek_at(1).is_some_and(|c| c.is_ascii_digit()) {
            is_float = true;
            self.pos += 1;
            self.take_while(is_digit);
        }
        if matches!(self.peek(), Some('e' | 'E')) && self.exponent_follows() {
            is_float = true;
            self.pos += 1;
            if matches!(self.peek(), Some('+' | '-')) {
                self.pos += 1;
            }
            self.take_while(is_digit);
        }
        let digits: String = self.src[start..self.pos].replace('_', "");
        let suffix_start = self.pos;
        let suffix = self.take_while(|c| c.is_ascii_alphanumeric() || c == '_');
        let span = Span::new(start, self.pos);
        let dtype = match suffix {
            "" => None,
            s => match Dtype::from_name(s) {
                Some(Dtype::Bool) | None => {
                    return Err(Diagnostic::new(
                        format!("`{s}` is not a numeric type suffix (use u8, u16, u32, i8, i16, i32, i64, f32 or f64)"),
                        Span::new(suffix_start, self.pos),
                    ))
                }
                Some(t) => Some(t),
            },
        };
        if is_float || dtype.is_some_and(Dtype::is_float) {
            if dtype.is_some_and(Dtype::is_int) {
                return Err(Diagnostic::new(
                    format!("a float literal cannot have the integer suffix `{suffix}`"),
                    span,
                ));
            }
            if digits.parse::<f64>().is_err() {
                return Err(Diagnostic::new("malformed float literal", span));
            }
            return Ok(Tok::Float(digits, dtype));
        }
        let value: u128 = digits
            .parse()
            .map_err(|_| Diagnostic::new("integer literal too large", span))?;
        Ok(Tok::Int(value, dtype))
    }

    /// Whether the `e` at the cursor starts an exponent (`1e5`, `1e-3`) rather than a suffix.
    fn exponent_follows(&self) -> bool {
        match self.peek_at(1) {
            Some(c) if c.is_ascii_digit() => true,
            Some('+' | '-') => self.peek_at(2).is_some_and(|c| c.is_ascii_digit()),
            _ => false,
        }
    }

    fn punct(&mut self) -> Result<Tok, Diagnostic> {
        const TWO: [(&str, Tok); 11] = [
            ("->", Tok::Arrow),
            ("..", Tok::DotDot),
            ("+=", Tok::PlusAssign),
            ("-=", Tok::MinusAssign),
            ("*=", Tok::StarAssign),
            ("==", Tok::EqEq),
            ("!=", Tok::NotEq),
            ("<=", Tok::Le),
            (">=", Tok::Ge),
            ("&&", Tok::AndAnd),
            ("||", Tok::OrOr),
        ];
        let rest = &self.src[self.pos..];
        if let Some((text, tok)) = TWO.iter().find(|(text, _)| rest.starts_with(text)) {
            self.pos += text.len();
            return Ok(tok.clone());
        }
        let c = self.peek().unwrap_or('\0');
        let tok = match c {
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '[' => Tok::LBracket,
            ']' => Tok::RBracket,
            '{' => Tok::LBrace,
            '}' => Tok::RBrace,
            ',' => Tok::Comma,
            ':' => Tok::Colon,
            ';' => Tok::Semi,
            '+' => Tok::Plus,
            '-' => Tok::Minus,
            '*' => Tok::Star,
            '/' => Tok::Slash,
            '%' => Tok::Percent,
            '=' => Tok::Assign,
            '<' => Tok::Lt,
            '>' => Tok::Gt,
            '!' => Tok::Bang,
            _ => {
                return Err(Diagnostic::new(
                    format!("unexpected character `{c}`"),
                    Span::new(self.pos, self.pos + c.len_utf8()),
                ))
            }
        };
        self.pos += c.len_utf8();
        Ok(tok)
    }
}
