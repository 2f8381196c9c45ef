//! The header of a `.npy` file, read and checked by strata before `npyz` sees anything: its
//! length (at most [`MAX_HEADER_BYTES`], numpy's own default limit), its nesting (at most
//! [`MAX_NESTING`]) and its keys (exactly the three numpy writes). One pass over the text,
//! without backtracking, so any header is answered in microseconds. `npyz` then parses only
//! the canonical header rebuilt from what was read ([`Header::to_npyz`]).
//!
//! The text is the subset of Python literals numpy writes: a dict of strings to strings,
//! `True`/`False`, integers, tuples and lists.

use std::io::Read;

/// The longest header read: numpy's `np.load` refuses longer ones by default too
/// (`max_header_size=10000`), and the headers it writes for plain arrays are under 200 bytes.
pub(super) const MAX_HEADER_BYTES: usize = 10_000;

/// The deepest nesting of brackets read (a record dtype's description nests; a plain one does
/// not nest at all).
pub(super) const MAX_NESTING: usize = 16;

/// The most characters of a header an error quotes.
const QUOTE_CHARS: usize = 40;

/// A `.npy` header, checked: the three keys numpy writes, each of the type numpy writes.
#[derive(Debug)]
pub(super) struct Header {
    /// The element type.
    pub descr: Descr,
    /// `fortran_order`.
    pub fortran_order: bool,
    /// `shape`, outermost first.
    pub shape: Vec<u64>,
    /// The bytes before the data: magic, version, header length and header.
    pub data_offset: u64,
}

/// A header's `descr`.
#[derive(Debug)]
pub(super) enum Descr {
    /// A type string (`<f4`, `|b1`); native order (`=f4`) is already the host's (`<f4` on x86).
    Type(String),
    /// A record (structured) dtype: the description as written, cut to a quotable length.
    Record(String),
}

impl Header {
    /// The header `npyz` reads the data with, for a plain type string `descr`: the canonical
    /// text of what was read (numpy's own form, version 2.0), which `npyz` parses in a few
    /// microseconds whatever the file held.
    pub fn to_npyz(&self, descr: &str) -> std::io::Result<npyz::NpyHeader> {
        let order = if self.fortran_order { "True" } else { "False" };
        let extents: Vec<String> = self.shape.iter().map(u64::to_string).collect();
        let shape = match extents.len() {
            1 => format!("({},)", extents[0]),
            _ => format!("({})", extents.join(", ")),
        };
        let text =
            format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}\n");
        let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
        bytes.extend((text.len() as u32).to_le_bytes());
        bytes.extend(text.as_bytes());
        npyz::NpyHeader::from_reader(bytes.as_slice())
    }
}

/// Reads the magic, the version, the header length and the header from `r`, leaving `r` at
/// the first byte of data. The error says what is wrong, quoting at most a few words.
pub(super) fn read(r: &mut impl Read) -> Result<Header, String> {
    let mut start = [0u8; 8];
    r.read_exact(&mut start)
        .map_err(|_| "not a .npy file (it is shorter than the 8-byte magic and version)")?;
    if &start[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (it does not start with \\x93NUMPY)".into());
    }
    let length_bytes = match (start[6], start[7]) {
        (1, 0) => 2,
        (2, 0) | (3, 0) => 4,
        (major, minor) => {
            return Err(format!(
                "its .npy format version {major}.{minor} is not one numpy writes (1.0, 2.0, 3.0)"
            ))
        }
    };
    let mut length = [0u8; 4];
    r.read_exact(&mut length[..length_bytes])
        .map_err(|_| "the file ends inside its .npy header's length")?;
    let length = u32::from_le_bytes(length) as usize;
    if length > MAX_HEADER_BYTES {
        return Err(format!(
            "its .npy header is {length} bytes long; strata reads headers of at most \
             {MAX_HEADER_BYTES} bytes, as numpy does by default"
        ));
    }
    let mut text = vec![0u8; length];
    r.read_exact(&mut text).map_err(|_| {
        format!("the file ends inside its .npy header (which declares {length} bytes)")
    })?;
    let mut header = parse(&text).map_err(|e| format!("its .npy header {e}"))?;
    header.data_offset = (8 + length_bytes + length) as u64;
    Ok(header)
}

/// The header's dict checked for numpy's three keys and their types.
fn parse(text: &[u8]) -> Result<Header, String> {
    let mut parser = Parser { text, at: 0 };
    let entries = parser.dict()?;
    let mut descr = None;
    let mut fortran_order = None;
    let mut shape = None;
    for (key, value) in entries {
        let slot_filled = match key.as_str() {
            "descr" => descr.replace(descr_of(value, text)?).is_some(),
            "fortran_order" => fortran_order.replace(bool_of(&value)?).is_some(),
            "shape" => shape.replace(shape_of(&value)?).is_some(),
            other => {
                return Err(format!(
                    "has the key {}; numpy writes (and reads) only 'descr', 'fortran_order' \
                     and 'shape'",
                    quote(other.as_bytes())
                ))
            }
        };
        if slot_filled {
            return Err(format!("gives the key '{key}' twice"));
        }
    }
    let missing = |key: &str| format!("lacks the key '{key}'");
    Ok(Header {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran_order: fortran_order.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
        data_offset: 0,
    })
}

fn descr_of(value: Spanned, text: &[u8]) -> Result<Descr, String> {
    match value.literal {
        // numpy's type strings are a byte order, a kind and a size (`<M8[ns]` at most); this
        // also keeps quotes out of the canonical header `to_npyz` writes.
        Literal::Str(s)
            if s.bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"<>|=[]".contains(&c)) =>
        {
            Ok(Descr::Type(native_order_made_explicit(s)))
        }
        Literal::Str(s) => Err(format!(
            "has the 'descr' {}, not a type string numpy writes",
            quote(s.as_bytes())
        )),
        Literal::List => Ok(Descr::Record(quote(&text[value.span.0..value.span.1]))),
        _ => Err("has a 'descr' that is neither a type string nor a record description".into()),
    }
}

/// `=f4` (native order, valid for numpy) as the host's order, which `npyz` understands.
fn native_order_made_explicit(descr: String) -> String {
    match descr.strip_prefix('=') {
        Some(rest) if cfg!(target_endian = "little") => format!("<{rest}"),
        Some(rest) => format!(">{rest}"),
        None => descr,
    }
}

fn bool_of(value: &Spanned) -> Result<bool, String> {
    match value.literal {
        Literal::Bool(b) => Ok(b),
        _ => Err("has a 'fortran_order' that is not True or False".into()),
    }
}

fn shape_of(value: &Spanned) -> Result<Vec<u64>, String> {
    let not_a_shape = || "has a 'shape' that is not a tuple of non-negative integers".to_string();
    let Literal::Tuple(items) = &value.literal else {
        return Err(not_a_shape());
    };
    (items.iter())
        .map(|item| match item.literal {
            Literal::Int(n) => u64::try_from(n).map_err(|_| not_a_shape()),
            _ => Err(not_a_shape()),
        })
        .collect()
}

/// A Python literal of the kinds numpy writes in a header.
#[derive(Debug)]
enum Literal {
    Str(String),
    Int(i128),
    Bool(bool),
    Tuple(Vec<Spanned>),
    List,
}

/// A literal and the bytes of the header it was read from.
#[derive(Debug)]
struct Spanned {
    literal: Literal,
    span: (usize, usize),
}

/// A recursive-descent reader of the header text: each byte is looked at a bounded number of
/// times, and nesting past [`MAX_NESTING`] is refused before it recurses further.
struct Parser<'t> {
    text: &'t [u8],
    at: usize,
}

impl Parser<'_> {
    /// `{key: value, ...}` (a trailing comma allowed), then only blanks to the end.
    fn dict(&mut self) -> Result<Vec<(String, Spanned)>, String> {
        self.expect(b'{', "a dict `{`")?;
        let mut entries = Vec::new();
        while self.peek() != Some(b'}') {
            let key = match self.value(1)? {
                Spanned {
                    literal: Literal::Str(key),
                    ..
                } => key,
                other => return Err(self.error_at(other.span.0, "a key in quotes")),
            };
            self.expect(b':', "`:` after a key")?;
            entries.push((key, self.value(1)?));
            if !self.comma_or(b'}')? {
                break;
            }
        }
        self.expect(b'}', "`,` or `}`")?;
        self.skip_blanks();
        if self.at < self.text.len() {
            return Err(self.error_at(self.at, "nothing after the dict's `}`"));
        }
        Ok(entries)
    }

    /// One literal at nesting `depth` (the dict's own values are at 1).
    fn value(&mut self, depth: usize) -> Result<Spanned, String> {
        self.skip_blanks();
        let start = self.at;
        let literal = match self.peek() {
            Some(b'\'' | b'"') => Literal::Str(self.string()?),
            Some(b'(' | b'[') if depth >= MAX_NESTING => {
                return Err(format!(
                    "nests brackets deeper than {MAX_NESTING} levels (at byte {start}); numpy \
                     writes nothing that deep"
                ))
            }
            Some(b'(') => match self.items(b')', depth)? {
                // `(x)` is `x` in Python, `(x,)` a tuple.
                (mut items, false) if items.len() == 1 => items.remove(0).literal,
                (items, _) => Literal::Tuple(items),
            },
            Some(b'[') => {
                // Only a record dtype's description is a list; its text is all that is kept.
                self.items(b']', depth)?;
                Literal::List
            }
            Some(b'0'..=b'9' | b'-') => Literal::Int(self.int()?),
            Some(b'T' | b'F') => Literal::Bool(self.boolean()?),
            _ => return Err(self.error_at(start, "a string, a number, True, False, ( or [")),
        };
        Ok(self.spanned(literal, start))
    }

    fn spanned(&self, literal: Literal, start: usize) -> Spanned {
        Spanned {
            literal,
            span: (start, self.at),
        }
    }

    /// The items between the bracket at hand and `close`, and whether a comma ended them.
    fn items(&mut self, close: u8, depth: usize) -> Result<(Vec<Spanned>, bool), String> {
        self.at += 1;
        let mut items = Vec::new();
        let mut trailing_comma = false;
        self.skip_blanks();
        while self.peek() != Some(close) {
            items.push(self.value(depth + 1)?);
            trailing_comma = self.comma_or(close)?;
            if !trailing_comma {
                break;
            }
        }
        self.expect(close, &format!("`,` or `{}`", close as char))?;
        Ok((items, trailing_comma))
    }

    /// After an item: `true` after a `,`, `false` when `close` comes next.
    fn comma_or(&mut self, close: u8) -> Result<bool, String> {
        self.skip_blanks();
        match self.peek() {
            Some(b',') => {
                self.at += 1;
                self.skip_blanks();
                Ok(true)
            }
            Some(c) if c == close => Ok(false),
            _ => Err(self.error_at(self.at, &format!("`,` or `{}`", close as char))),
        }
    }

    /// A string in single or double quotes; a backslash takes the next byte as it is.
    fn string(&mut self) -> Result<String, String> {
        let start = self.at;
        let quote_mark = self.text[start];
        self.at += 1;
        let mut bytes = Vec::new();
        loop {
            match self.peek() {
                None => return Err(self.error_at(start, "a closing quote for the string")),
                Some(c) if c == quote_mark => break,
                Some(b'\\') if self.at + 1 < self.text.len() => {
                    bytes.push(self.text[self.at + 1]);
                    self.at += 2;
                }
                Some(c) => {
                    bytes.push(c);
                    self.at += 1;
                }
            }
        }
        self.at += 1;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A decimal integer, optionally negative and with Python 2's `L` suffix (`3L`).
    fn int(&mut self) -> Result<i128, String> {
        let start = self.at;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let mut value: i128 = 0;
        let digits_start = self.at;
        while let Some(d @ b'0'..=b'9') = self.peek() {
            value = (value.checked_mul(10))
                .and_then(|v| v.checked_add(i128::from(d - b'0')))
                .ok_or_else(|| self.error_at(start, "a number of at most 38 digits"))?;
            self.at += 1;
        }
        if self.at == digits_start {
            return Err(self.error_at(start, "a number"));
        }
        if self.peek() == Some(b'L') {
            self.at += 1;
        }
        Ok(if negative { -value } else { value })
    }

    fn boolean(&mut self) -> Result<bool, String> {
        for (word, value) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.text[self.at..].starts_with(word) {
                self.at += word.len();
                return Ok(value);
            }
        }
        Err(self.error_at(self.at, "True or False"))
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), String> {
        self.skip_blanks();
        if self.peek() != Some(byte) {
            return Err(self.error_at(self.at, what));
        }
        self.at += 1;
        Ok(())
    }

    fn skip_blanks(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0c') = self.peek() {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    /// "is not what numpy writes: at byte N, expected WHAT, found `...`", quoting a few words.
    fn error_at(&self, at: usize, expected: &str) -> String {
        let found = match self.text.get(at..) {
            Some(rest) if !rest.is_empty() => quote(rest),
            _ => "the end of the header".to_string(),
        };
        format!(
            "is not a dict as numpy writes it: at byte {at}, expected {expected}, found {found}"
        )
    }
}

/// At most [`QUOTE_CHARS`] characters of `bytes` in backquotes, `...` after them when cut,
/// control and bidirectional characters escaped (`printable`).
fn quote(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(QUOTE_CHARS * 4)]);
    let cut: String = text.chars().take(QUOTE_CHARS).collect();
    let more = if cut.len() < bytes.len() { "..." } else { "" };
    format!("`{}`{more}", strata_tuning_db::printable(&cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(text: &str) -> Result<Header, String> {
        parse(text.as_bytes())
    }

    #[test]
    fn reads_what_numpy_writes() {
        let h = header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }  \n").unwrap();
        assert!(matches!(h.descr, Descr::Type(ref t) if t == "<f4"));
        assert!(!h.fortran_order);
        assert_eq!(h.shape, [2, 3]);
        let h = header("{'descr':'|u1','fortran_order':True,'shape':(7L,)}").unwrap();
        assert_eq!(h.shape, [7]);
        assert!(h.fortran_order);
        assert_eq!(
            header("{'descr': '<i8', 'fortran_order': False, 'shape': ()}")
                .unwrap()
                .shape,
            Vec::<u64>::new()
        );
    }

    #[test]
    fn a_parenthesized_number_is_not_a_tuple() {
        let e = header("{'descr': '<f4', 'fortran_order': False, 'shape': (3)}").unwrap_err();
        assert!(e.contains("'shape' that is not a tuple"), "{e}");
    }

    #[test]
    fn a_record_dtype_is_kept_as_text() {
        let h = header(
            "{'descr': [('x', '<f4'), ('y', '<i4', (2,))], 'fortran_order': False, 'shape': (2,)}",
        )
        .unwrap();
        assert!(
            matches!(h.descr, Descr::Record(ref r) if r.starts_with("`[('x', '<f4'), ('y'")),
            "{h:?}"
        );
    }
}
