//! Strings read from a database are data, not terminal commands.

use std::borrow::Cow;

/// `text` with every control character (ESC, OSC's BEL, carriage returns, newlines, …)
/// and every bidirectional formatting character written as a Rust escape (`\u{1b}`),
/// so printing a string from a database cannot drive the terminal or reorder a line.
///
/// ```
/// assert_eq!(strata_tuning_db::printable("a\u{1b}]0;x\u{7}b"), "a\\u{1b}]0;x\\u{7}b");
/// assert_eq!(strata_tuning_db::printable("EPYC™ 7B13"), "EPYC™ 7B13");
/// ```
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Controls, and the bidirectional embeddings, overrides, isolates and marks.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}
