//! "Did you mean" suggestions for misspelt names: the closest known name by edit distance,
//! where it is close enough to be a likely typo.

/// Levenshtein distance between `a` and `b`, in characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// The known name closest to `name`, if it is a likely typo of it: the same but for case, or
/// at most 2 edits away and fewer edits than `name` has characters (so `z` does not suggest
/// `x`). The first of equally close names wins.
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let likely = |k: &str, d: usize| k.eq_ignore_ascii_case(name) || (d <= 2 && d < name.len());
    known
        .into_iter()
        .filter(|k| *k != name)
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, k)| likely(k, *d))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// " (did you mean `k`?)" for the closest known name, or "" when none is close.
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, known)
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_suggested_and_far_ones_are_not() {
        assert_eq!(closest("colums", ["rows", "columns"]), Some("columns"));
        assert_eq!(closest("k", ["K", "i"]), Some("K"));
        assert_eq!(closest("z", ["x", "y"]), None);
        assert_eq!(closest("input", ["output", "weights"]), None);
        assert_eq!(did_you_mean("blr", ["blur"]), " (did you mean `blur`?)");
        assert_eq!(did_you_mean("blur", ["blur"]), "");
    }
}
