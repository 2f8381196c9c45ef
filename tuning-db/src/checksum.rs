//! Row checksums: SHA-256 over an unambiguous encoding of a measurement row's content, so
//! damage that SQLite's own checks cannot see (a flipped byte inside a row's text or times
//! passes `PRAGMA quick_check`) is caught before a record is trusted.
//!
//! The checksum covers the run's uid (so a row moved to another run fails) and every
//! measurement column a winner, a report or an export reads: trial, schedule, schedule
//! hash, status, status detail, median/min/max times, runs, settings, the default and
//! re-measured flags, and when it was measured ([`COVERED`]). Not covered: the row id and
//! the local run id (they differ between files), and the runs table's own columns.
//!
//! It is computed by a SQL function ([`FUNCTION`]) over the columns as stored, registered
//! on every connection: inserts store it, schema version 4's migration fills it in for
//! older rows, and readers keep only rows where it matches ([`VERIFIED_WHERE`]). A
//! migration that changes a covered column must compute it again.

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use sha2::{Digest, Sha256};

/// The SQL function's name: `strata_measurement_checksum(<COVERED>)`, a lowercase hex
/// SHA-256.
pub(crate) const FUNCTION: &str = "strata_measurement_checksum";

/// The columns the checksum covers, in order (aliases `r` for the run, `m` for the
/// measurement).
pub(crate) const COVERED: &str = "r.uid, m.trial, m.schedule, m.schedule_hash, m.status, \
     m.status_detail, m.median_s, m.min_s, m.max_s, m.runs, m.settings, m.is_default, \
     m.remeasured, m.measured_at";

/// How many columns [`COVERED`] lists (the SQL function's arity).
const COVERED_COUNT: usize = 14;

/// The SQL condition (aliases `r`, `m`) that holds for a row whose content matches its
/// checksum: [`FUNCTION`] over [`COVERED`].
pub(crate) const VERIFIED_WHERE: &str = "m.checksum = strata_measurement_checksum(r.uid, \
     m.trial, m.schedule, m.schedule_hash, m.status, m.status_detail, m.median_s, m.min_s, \
     m.max_s, m.runs, m.settings, m.is_default, m.remeasured, m.measured_at)";

/// What the encoding starts with: names the scheme, so a later one cannot be mistaken for it.
const DOMAIN: &[u8] = b"strata-tuning-db measurement row v1";

/// Registers [`FUNCTION`] on `conn` (per connection; registering again replaces it).
pub(crate) fn register(conn: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    conn.create_scalar_function(FUNCTION, COVERED_COUNT as i32, flags, |ctx| {
        let values: Vec<ValueRef<'_>> = (0..ctx.len()).map(|i| ctx.get_raw(i)).collect();
        Ok(checksum(&values))
    })
}

/// The lowercase hex SHA-256 of [`encode`]`(values)`.
fn checksum(values: &[ValueRef<'_>]) -> String {
    let digest = Sha256::digest(encode(values));
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// An encoding no two different rows share: the domain, then per value a type tag and its
/// payload (integers as 8 little-endian bytes, floats as their bits, text and blobs with
/// their length first), so neither a value's type nor where one ends is ambiguous.
fn encode(values: &[ValueRef<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    push_bytes(&mut out, DOMAIN);
    for value in values {
        match *value {
            ValueRef::Null => out.push(0),
            ValueRef::Integer(i) => {
                out.push(1);
                out.extend_from_slice(&i.to_le_bytes());
            }
            ValueRef::Real(f) => {
                out.push(2);
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            ValueRef::Text(t) => {
                out.push(3);
                push_bytes(&mut out, t);
            }
            ValueRef::Blob(b) => {
                out.push(4);
                push_bytes(&mut out, b);
            }
        }
    }
    out
}

/// Appends `bytes` after their length (8 bytes, little-endian).
fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_condition_calls_the_function_on_the_covered_columns() {
        let call = format!("m.checksum = {FUNCTION}({COVERED})");
        let squeeze = |s: &str| s.split_whitespace().collect::<String>();
        assert_eq!(squeeze(VERIFIED_WHERE), squeeze(&call));
        assert_eq!(COVERED.split(',').count(), COVERED_COUNT);
    }

    /// Moving a boundary between two texts, or changing a value's type, changes the encoding.
    #[test]
    fn the_encoding_is_unambiguous() {
        let split = |a: &'static str, b: &'static str| {
            encode(&[ValueRef::Text(a.as_bytes()), ValueRef::Text(b.as_bytes())])
        };
        assert_ne!(split("ab", "c"), split("a", "bc"));
        let one_int = encode(&[ValueRef::Integer(1)]);
        let one_real = encode(&[ValueRef::Real(1.0)]);
        let one_text = encode(&[ValueRef::Text(b"1")]);
        assert_ne!(one_int, one_real);
        assert_ne!(one_real, one_text);
        assert_ne!(encode(&[ValueRef::Null]), encode(&[ValueRef::Text(b"")]));
        assert_eq!(checksum(&[ValueRef::Integer(7)]).len(), 64);
    }

    #[test]
    fn the_sql_function_is_the_rust_function() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        let args = (1..=COVERED_COUNT)
            .map(|i| format!("{i}"))
            .collect::<Vec<_>>();
        let sql = format!("SELECT {FUNCTION}({})", args.join(", "));
        let from_sql: String = conn.query_row(&sql, [], |r| r.get(0)).unwrap();
        let values: Vec<ValueRef<'_>> = (1..=COVERED_COUNT as i64).map(ValueRef::Integer).collect();
        assert_eq!(from_sql, checksum(&values));
    }
}
