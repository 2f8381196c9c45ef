//! The `kernel!` proc-macro: strata's kernel language inside Rust.
//!
//! The macro turns its tokens back into kernel-language text, remembering which token each
//! piece of text came from, and runs the same parser and checker as `.strata` files. A malformed
//! or ill-typed kernel becomes a `compile_error!` at the offending token; a good one expands to
//! code that rebuilds the checked Pipeline from its canonical printed form, so both doors give
//! the same Pipeline and the same hash.

#![warn(missing_docs)]

use proc_macro2::{Delimiter, Spacing, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned};

/// Declares a kernel in strata's kernel language and evaluates to its `strata::Pipeline`.
///
/// ```ignore
/// let matmul = strata::kernel! {
///     kernel matmul(A: f32[M, K], B: f32[K, N]) -> C: f32[M, N] {
///         C(i, j) = sum(k in 0..K) A(i, k) * B(k, j);
///     }
/// };
/// ```
#[proc_macro]
pub fn kernel(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    let mut source = Source::default();
    source.append(TokenStream::from(input));
    match strata_dsl::parse_kernel(&source.text, "kernel!") {
        Ok(pipeline) => {
            let canonical = pipeline.to_string();
            quote! { ::strata::__macro_support::kernel_from_canonical_text(#canonical) }
        }
        Err(diagnostic) => {
            let start = source.span_at(diagnostic.span.start);
            let last = diagnostic.span.end.max(diagnostic.span.start + 1) - 1;
            compile_error(&diagnostic.message, start, source.span_at(last))
        }
    }
    .into()
}

/// `compile_error!(message)` underlining the source from the token at `start` to the one at
/// `end`, as the file form's carets do: rustc reports a macro call's error over the span from
/// its first token to its last, so the path takes `start`'s span and the argument `end`'s (the
/// way `syn::Error` spans several tokens on stable Rust).
fn compile_error(message: &str, start: Span, end: Span) -> TokenStream {
    let path = quote_spanned! { start => ::core::compile_error! };
    let mut literal = proc_macro2::Literal::string(message);
    literal.set_span(end);
    let mut argument =
        proc_macro2::Group::new(Delimiter::Parenthesis, TokenTree::Literal(literal).into());
    argument.set_span(end);
    quote! { #path #argument }
}

/// Kernel text rebuilt from tokens, with the Rust span of every piece.
#[derive(Default)]
struct Source {
    text: String,
    /// `(start, end, span)`: text `start..end` came from the token at `span`.
    pieces: Vec<(usize, usize, Span)>,
    /// Whether the last token was a punctuation joined to the next one (`+` of `+=`).
    joint: bool,
}

impl Source {
    fn append(&mut self, tokens: TokenStream) {
        for tree in tokens {
            match tree {
                TokenTree::Group(group) => {
                    let (open, close) = match group.delimiter() {
                        Delimiter::Parenthesis => ("(", ")"),
                        Delimiter::Bracket => ("[", "]"),
                        Delimiter::Brace => ("{", "}"),
                        Delimiter::None => ("", ""),
                    };
                    self.push(open, group.span_open(), false);
                    self.append(group.stream());
                    self.push(close, group.span_close(), false);
                }
                TokenTree::Punct(p) => self.push(
                    &p.as_char().to_string(),
                    p.span(),
                    p.spacing() == Spacing::Joint,
                ),
                TokenTree::Ident(i) => self.push(&i.to_string(), i.span(), false),
                TokenTree::Literal(l) => self.push(&l.to_string(), l.span(), false),
            }
        }
    }

    fn push(&mut self, text: &str, span: Span, joint: bool) {
        if text.is_empty() {
            return;
        }
        if !self.joint && !self.text.is_empty() {
            self.text.push(' ');
        }
        let start = self.text.len();
        self.text.push_str(text);
        self.pieces.push((start, self.text.len(), span));
        self.joint = joint;
    }

    /// The span of the token covering byte `offset` (or the last token before it).
    fn span_at(&self, offset: usize) -> Span {
        self.pieces
            .iter()
            .rev()
            .find(|(start, _, _)| *start <= offset)
            .or(self.pieces.first())
            .map_or_else(Span::call_site, |(_, _, span)| *span)
    }
}
