//! A measurement's settings as typed columns ([`Settings`]), and the reading of the JSON text
//! that schema versions 1 to 5 stored instead ([`Settings::from_legacy`]).
//!
//! Until schema version 6 a measurement's settings were one JSON object in a `settings` text
//! column, which readers parsed for what they needed (the report its time axis, resume its
//! genome). Version 6 stores each setting in its own column and adds the compile time. The
//! legacy text is read by one Rust function, exposed to SQL as [`LEGACY_FUNCTION`] so the
//! migration and the read-only views of older files ([`crate::schema`]) read it the same way;
//! nothing in it is dropped: a key without a column, or a value of the wrong type, stays in
//! [`Settings::other`].

use rusqlite::functions::FunctionFlags;
use rusqlite::types::Value;
use rusqlite::Connection;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Map;

/// How one candidate was measured, and what the search knew of it. Every field is optional:
/// records made by older tuners, or imported, may lack any of them (an export leaves an
/// absent one out).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The threads the kernel ran on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// The least time the timing loop ran for, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_time_s: Option<f64>,
    /// The time after which a slow candidate's timing was cut short, seconds; `None` when
    /// there was no cutoff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cutoff_s: Option<f64>,
    /// The relative tolerance the answer was checked with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// Seconds from the run's start to this measurement (the report's time axis).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<f64>,
    /// Seconds the candidate took to compile (lowering and code generation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compile_s: Option<f64>,
    /// The search's own encoding of the candidate (the tuner's genome, as JSON text); opaque
    /// here. Resume reads it to seed its search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub genome: Option<String>,
    /// What a legacy settings text held beyond the fields above, as it was: a JSON object
    /// of the remaining keys, or the whole text when it was not a JSON object. `None` for
    /// every record made since schema version 6.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other: Option<String>,
}

/// The settings' columns in the `measurements` table, in the order [`Settings::column`]
/// names them.
pub(crate) const COLUMNS: [&str; 8] = [
    "threads",
    "min_time_s",
    "cutoff_s",
    "tolerance",
    "elapsed_s",
    "compile_s",
    "genome",
    "other_settings",
];

/// The SQL function `strata_legacy_setting(settings_text, column)`: the value that
/// [`Settings::from_legacy`] gives the column named (one of [`COLUMNS`]).
pub(crate) const LEGACY_FUNCTION: &str = "strata_legacy_setting";

impl Settings {
    /// Reads the JSON object that schema versions 1 to 5 (and export versions 1 to 3) stored:
    /// known keys with values of their type become fields (a `null` is an absent value);
    /// everything else is kept in [`Settings::other`].
    pub fn from_legacy(text: &str) -> Settings {
        let Ok(serde_json::Value::Object(mut map)) = serde_json::from_str(text) else {
            return Settings {
                other: Some(text.to_string()),
                ..Settings::default()
            };
        };
        let threads = take(&mut map, "threads", |v| u32::try_from(v.as_u64()?).ok());
        let genome = take(&mut map, "genome", |v| Some(v.to_string()));
        Settings {
            threads,
            min_time_s: take(&mut map, "min_time_s", serde_json::Value::as_f64),
            cutoff_s: take(&mut map, "cutoff_s", serde_json::Value::as_f64),
            tolerance: take(&mut map, "tolerance", serde_json::Value::as_f64),
            elapsed_s: take(&mut map, "elapsed_s", serde_json::Value::as_f64),
            compile_s: take(&mut map, "compile_s", serde_json::Value::as_f64),
            genome,
            other: (!map.is_empty()).then(|| serde_json::Value::Object(map).to_string()),
        }
    }

    /// The value of column `name` (one of [`COLUMNS`]) as SQLite stores it; `None` for a
    /// name that is not a settings column.
    pub(crate) fn column(&self, name: &str) -> Option<Value> {
        let real = |x: Option<f64>| x.map_or(Value::Null, Value::Real);
        let text = |x: &Option<String>| x.clone().map_or(Value::Null, Value::Text);
        Some(match name {
            "threads" => self
                .threads
                .map_or(Value::Null, |t| Value::Integer(t.into())),
            "min_time_s" => real(self.min_time_s),
            "cutoff_s" => real(self.cutoff_s),
            "tolerance" => real(self.tolerance),
            "elapsed_s" => real(self.elapsed_s),
            "compile_s" => real(self.compile_s),
            "genome" => text(&self.genome),
            "other_settings" => text(&self.other),
            _ => return None,
        })
    }
}

/// Removes `key` from `map` and converts its value; a `null` is removed as nothing, and a
/// value `convert` refuses stays in the map.
fn take<T>(
    map: &mut Map<String, serde_json::Value>,
    key: &str,
    convert: impl Fn(&serde_json::Value) -> Option<T>,
) -> Option<T> {
    let value = map.get(key)?;
    if value.is_null() {
        map.remove(key);
        return None;
    }
    let converted = convert(value)?;
    map.remove(key);
    Some(converted)
}

/// Reads a measurement's `settings` field of any export version: an object (version 4 on),
/// or the legacy JSON text (versions 1 to 3).
pub(crate) fn deserialize_any<'de, D: Deserializer<'de>>(d: D) -> Result<Settings, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Field {
        Typed(Settings),
        Legacy(String),
    }
    Ok(match Field::deserialize(d)? {
        Field::Typed(s) => s,
        Field::Legacy(text) => Settings::from_legacy(&text),
    })
}

/// Registers [`LEGACY_FUNCTION`] on `conn` (per connection; registering again replaces it).
pub(crate) fn register(conn: &Connection) -> rusqlite::Result<()> {
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    conn.create_scalar_function(LEGACY_FUNCTION, 2, flags, |ctx| {
        let text: Option<String> = ctx.get(0)?;
        let name: String = ctx.get(1)?;
        let settings = text.map_or_else(Settings::default, |t| Settings::from_legacy(&t));
        settings.column(&name).ok_or_else(|| {
            let why = format!("{LEGACY_FUNCTION}: `{name}` is not a settings column");
            rusqlite::Error::UserFunctionError(why.into())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tuner_record_reads_into_fields_with_nothing_left() {
        let text = r#"{"min_time_s":0.05,"threads":2,"cutoff_s":null,"tolerance":0.001,
            "genome":{"places":[1],"stages":[]},"elapsed_s":1.5}"#;
        let s = Settings::from_legacy(text);
        assert_eq!(s.threads, Some(2));
        assert_eq!(s.min_time_s, Some(0.05));
        assert_eq!(s.cutoff_s, None);
        assert_eq!(s.tolerance, Some(0.001));
        assert_eq!(s.elapsed_s, Some(1.5));
        assert_eq!(s.genome.as_deref(), Some(r#"{"places":[1],"stages":[]}"#));
        assert_eq!(s.compile_s, None);
        assert_eq!(s.other, None);
    }

    /// Unknown keys, values of the wrong type, and text that is no JSON object are kept.
    #[test]
    fn what_has_no_column_is_kept() {
        let s = Settings::from_legacy(r#"{"warmup":2,"threads":-1,"min_time_s":"soon"}"#);
        assert_eq!((s.threads, s.min_time_s), (None, None));
        let other: serde_json::Value = serde_json::from_str(s.other.as_deref().unwrap()).unwrap();
        let expected = serde_json::json!({"warmup": 2, "threads": -1, "min_time_s": "soon"});
        assert_eq!(other, expected);
        assert_eq!(Settings::from_legacy("fast").other.as_deref(), Some("fast"));
        assert_eq!(Settings::from_legacy("[1]").other.as_deref(), Some("[1]"));
        assert_eq!(Settings::from_legacy("{}"), Settings::default());
    }

    #[test]
    fn every_column_has_a_value_and_the_sql_function_gives_it() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        let text = r#"{"threads":4,"elapsed_s":2,"genome":[3],"x":1}"#;
        let s = Settings::from_legacy(text);
        for name in COLUMNS {
            let sql = format!("SELECT {LEGACY_FUNCTION}(?1, ?2)");
            let got: Value = conn.query_row(&sql, [text, name], |r| r.get(0)).unwrap();
            assert_eq!(Some(got), s.column(name), "{name}");
        }
        assert_eq!(s.column("settings"), None);
    }

    /// Every time reads back from an export to the same bits: an export imported and exported
    /// again is the same stream. (serde_json's default float parser can be one unit in the last
    /// place off for 17-digit numbers such as a cutoff of `0.00032240000000000003`; the
    /// workspace enables its `float_roundtrip`.)
    #[test]
    fn times_survive_an_export_exactly() {
        let mut x: f64 = 3.224e-4;
        for i in 0..20_000u32 {
            x = (x * (1.0 + f64::from(i) * 1e-7) * 1.3).fract().max(1e-5);
            let s = Settings {
                cutoff_s: Some(x),
                ..Settings::default()
            };
            let back: Settings = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
            assert_eq!(back.cutoff_s.map(f64::to_bits), Some(x.to_bits()), "{x:?}");
        }
    }

    /// An export's `settings` is an object from version 4 on, the legacy text before.
    #[test]
    fn an_export_field_of_either_form_reads() {
        #[derive(Deserialize)]
        struct Line {
            #[serde(deserialize_with = "deserialize_any")]
            settings: Settings,
        }
        let legacy: Line = serde_json::from_str(r#"{"settings":"{\"threads\":1}"}"#).unwrap();
        let typed: Line = serde_json::from_str(r#"{"settings":{"threads":1}}"#).unwrap();
        assert_eq!(legacy.settings.threads, Some(1));
        assert_eq!(legacy.settings, typed.settings);
    }
}
