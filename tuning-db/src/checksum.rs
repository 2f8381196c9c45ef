//! Row checksums: SHA-256 over an unambiguous encoding of a measurement row's content, so
//! damage that SQLite's own checks cannot see (a flipped byte inside a row's text or times
//! passes `PRAGMA quick_check`) is caught before a record is trusted.
//!
//! The checksum covers the run's uid (so a row moved to another run fails) and every
//! measurement column a winner, a report or an export reads: trial, schedule, schedule
//! hash, status, status detail, median/min/max times, runs, the settings' columns, the
//! default and re-measured flags, and when it was measured ([`COVERED`]). Not covered: the
//! row id and the local run id (they differ between files), and the runs table's own columns.
//!
//! It is computed by a SQL function ([`FUNCTION`]) over the columns as stored, registered
//! on every connection: inserts store it, migrations fill it in for older rows, and readers
//! keep only rows where it matches ([`VERIFIED_WHERE`]). A migration that changes a covered
//! column must compute it again.
//!
//! Schema versions 4 and 5 checksummed the single `settings` text column ([`FUNCTION_V1`]
//! over [`COVERED_V1`]); version 6's migration gives a row whose old checksum matched the
//! new one, and leaves a row whose old one did not (a damaged row) damaged.

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use sha2::{Digest, Sha256};

/// The SQL function's name: `strata_measurement_checksum_v2(<COVERED>)`, a lowercase hex
/// SHA-256.
pub(crate) const FUNCTION: &str = "strata_measurement_checksum_v2";

/// The columns the checksum covers, in order (aliases `r` for the run, `m` for the
/// measurement).
pub(crate) const COVERED: &str = "r.uid, m.trial, m.schedule, m.schedule_hash, m.status, \
     m.status_detail, m.median_s, m.min_s, m.max_s, m.runs, m.threads, m.min_time_s, \
     m.cutoff_s, m.tolerance, m.elapsed_s, m.compile_s, m.genome, m.other_settings, \
     m.is_default, m.remeasured, m.measured_at";

/// How many columns [`COVERED`] lists (the SQL function's arity).
const COVERED_COUNT: usize = 21;

/// The SQL condition (aliases `r`, `m`) that holds for a row whose content matches its
/// checksum: [`FUNCTION`] over [`COVERED`].
pub(crate) const VERIFIED_WHERE: &str = "m.checksum = strata_measurement_checksum_v2(r.uid, \
     m.trial, m.schedule, m.schedule_hash, m.status, m.status_detail, m.median_s, m.min_s, \
     m.max_s, m.runs, m.threads, m.min_time_s, m.cutoff_s, m.tolerance, m.elapsed_s, \
     m.compile_s, m.genome, m.other_settings, m.is_default, m.remeasured, m.measured_at)";

/// What the encoding starts with: names the scheme, so a later one cannot be mistaken for it.
const DOMAIN: &[u8] = b"strata-tuning-db measurement row v2";

/// Schema versions 4 and 5's checksum function (called by version 4's migration, and by
/// version 6's to recognise the rows it may carry over).
pub(crate) const FUNCTION_V1: &str = "strata_measurement_checksum";

/// The columns [`FUNCTION_V1`] covers, in order: [`COVERED`] with the one `settings` text
/// column in place of the settings' columns.
pub(crate) const COVERED_V1: &str = "r.uid, m.trial, m.schedule, m.schedule_hash, m.status, \
     m.status_detail, m.median_s, m.min_s, m.max_s, m.runs, m.settings, m.is_default, \
     m.remeasured, m.measured_at";

/// How many columns [`COVERED_V1`] lists.
const COVERED_V1_COUNT: usize = 14;

/// [`DOMAIN`] of [`FUNCTION_V1`].
const DOMAIN_V1: &[u8] = b"strata-tuning-db measurement row v1";

/// Registers [`FUNCTION`] and [`FUNCTION_V1`] on `conn` (per connection; registering again
/// replaces them).
pub(crate) fn register(conn: &Connection) -> rusqlite::Result<()> {
    let functions = [
        (FUNCTION, COVERED_COUNT, DOMAIN),
        (FUNCTION_V1, COVERED_V1_COUNT, DOMAIN_V1),
    ];
    for (name, arity, domain) in functions {
        let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
        conn.create_scalar_function(name, arity as i32, flags, move |ctx| {
            let values: Vec<ValueRef<'_>> = (0..ctx.len()).map(|i| ctx.get_raw(i)).collect();
            Ok(checksum(domain, &values))
        })?;
    }
    Ok(())
}

/// The lowercase hex SHA-256 of [`encode`]`(domain, values)`.
fn checksum(domain: &[u8], values: &[ValueRef<'_>]) -> String {
    let digest = Sha256::digest(encode(domain, values));
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// An encoding no two different rows share: the scheme's domain, then per value a type tag and its
/// payload (integers as 8 little-endian bytes, floats as their bits, text and blobs with
/// their length first), so neither a value's type nor where one ends is ambiguous.
fn encode(domain: &[u8], values: &[ValueRef<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    push_bytes(&mut out, domain);
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
        assert_eq!(COVERED_V1.split(',').count(), COVERED_V1_COUNT);
    }

    /// The covered columns are the version-1 ones with the settings text replaced by the
    /// settings' columns, in their order.
    #[test]
    fn the_covered_columns_are_the_old_ones_with_typed_settings() {
        let settings: Vec<String> = crate::settings::COLUMNS
            .iter()
            .map(|c| format!("m.{c}"))
            .collect();
        let expected = COVERED_V1.replace("m.settings", &settings.join(", "));
        let squeeze = |s: &str| s.split_whitespace().collect::<String>();
        assert_eq!(squeeze(COVERED), squeeze(&expected));
    }

    /// Moving a boundary between two texts, or changing a value's type, changes the encoding.
    #[test]
    fn the_encoding_is_unambiguous() {
        let encode = |values: &[ValueRef<'_>]| encode(DOMAIN, values);
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
        assert_eq!(checksum(DOMAIN, &[ValueRef::Integer(7)]).len(), 64);
        let seven = [ValueRef::Integer(7)];
        assert_ne!(checksum(DOMAIN, &seven), checksum(DOMAIN_V1, &seven));
    }

    #[test]
    fn the_sql_functions_are_the_rust_function() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        for (name, arity, domain) in [
            (FUNCTION, COVERED_COUNT, DOMAIN),
            (FUNCTION_V1, COVERED_V1_COUNT, DOMAIN_V1),
        ] {
            let args = (1..=arity).map(|i| format!("{i}")).collect::<Vec<_>>();
            let sql = format!("SELECT {name}({})", args.join(", "));
            let from_sql: String = conn.query_row(&sql, [], |r| r.get(0)).unwrap();
            let values: Vec<ValueRef<'_>> = (1..=arity as i64).map(ValueRef::Integer).collect();
            assert_eq!(from_sql, checksum(domain, &values), "{name}");
        }
    }
}
