//! The cache of loop-nest features of measured schedules (schema version 7): what the tuner's
//! learned cost model reads for each measurement, stored so a model is trained without
//! lowering every schedule of the history again. Derived data, not checksummed or exported:
//! a row that is missing or unreadable is computed again by its reader.

use rusqlite::params;
use std::collections::HashMap;

use crate::db::Db;
use crate::error::DbError;

/// Which features: the kernel (its hash), the shape (as the tuning key writes it) and the
/// features' version; the schedule hash is the row's own key within it.
#[derive(Clone, Copy, Debug)]
pub struct FeatureKey<'a> {
    /// The kernel's hash.
    pub kernel_hash: &'a str,
    /// The shape, as [`crate::TuningKey::shape`] writes it.
    pub shape: &'a str,
    /// The version of the features (a newer definition is another entry).
    pub version: i64,
}

impl Db {
    /// Every cached feature vector of `key`'s kernel, shape and version, by schedule hash
    /// (rows that do not parse are left out).
    pub fn cached_features(&self, key: FeatureKey) -> Result<HashMap<String, Vec<f64>>, DbError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT schedule_hash, features FROM loop_features
                 WHERE kernel_hash = ?1 AND shape = ?2 AND version = ?3",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![key.kernel_hash, key.shape, key.version], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(|e| self.err(e))?;
        let mut cached = HashMap::new();
        for row in rows {
            let (hash, text) = row.map_err(|e| self.err(e))?;
            if let Ok(features) = serde_json::from_str::<Vec<f64>>(&text) {
                cached.insert(hash, features);
            }
        }
        Ok(cached)
    }

    /// Caches feature vectors of `key`'s kernel, shape and version by schedule hash, in one
    /// transaction (a vector cached before is replaced). Only finite numbers are stored
    /// (JSON has no others): a vector holding another is skipped.
    pub fn cache_features(
        &self,
        key: FeatureKey,
        rows: &[(String, Vec<f64>)],
    ) -> Result<(), DbError> {
        self.write(|conn| {
            let mut insert = conn.prepare(
                "INSERT OR REPLACE INTO loop_features
                     (kernel_hash, shape, schedule_hash, version, features)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for (hash, features) in rows {
                if !features.iter().all(|x| x.is_finite()) {
                    continue;
                }
                let text = serde_json::to_string(features).unwrap_or_default();
                insert.execute(params![key.kernel_hash, key.shape, hash, key.version, text])?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_features_read_back_by_kernel_shape_and_version() {
        let path = std::env::temp_dir().join(format!("strata-features-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let db = Db::open(&path).unwrap();
        let key = FeatureKey {
            kernel_hash: "k",
            shape: "M=4",
            version: 1,
        };
        let rows = vec![
            ("a".to_string(), vec![1.0, 0.1 + 0.2]),
            ("b".to_string(), vec![f64::NAN]),
        ];
        db.cache_features(key, &rows).unwrap();
        let cached = db.cached_features(key).unwrap();
        assert_eq!(cached.len(), 1, "the NaN vector is not stored");
        assert_eq!(cached["a"], vec![1.0, 0.1 + 0.2], "the same bits");
        let newer = FeatureKey { version: 2, ..key };
        assert!(db.cached_features(newer).unwrap().is_empty());
        let other_shape = FeatureKey {
            shape: "M=8",
            ..key
        };
        assert!(db.cached_features(other_shape).unwrap().is_empty());
        drop(db);
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
        }
    }
}
