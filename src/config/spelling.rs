//! The nearest known name to a misspelt one, for messages that say "did you mean …".

/// The known name `word` most likely meant: the same name in other letter case, or one at most
/// two edits away (one for short names). `None` when nothing is that close.
pub fn nearest<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_ascii_lowercase();
    let limit = if lower.chars().count() <= 4 { 1 } else { 2 };
    known
        .into_iter()
        .map(|k| (distance(&lower, &k.to_ascii_lowercase()), k))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// " (did you mean `x`?)", or nothing.
pub fn did_you_mean<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    nearest(word, known)
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

/// Edits (insertions, deletions, substitutions, swaps of neighbours) from `a` to `b`.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Names are short; a full table is cheap and keeps neighbour swaps simple.
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_are_found_and_far_ones_are_not() {
        let known = ["model", "permissions", "PreToolUse", "PostToolUse", "hooks"];
        assert_eq!(nearest("modle", known), Some("model"));
        assert_eq!(nearest("permisions", known), Some("permissions"));
        assert_eq!(nearest("pretooluse", known), Some("PreToolUse"));
        assert_eq!(nearest("PreToolUze", known), Some("PreToolUse"));
        assert_eq!(nearest("hook", known), Some("hooks"));
        assert_eq!(nearest("colour", known), None);
        assert_eq!(did_you_mean("zzz", known), "");
        assert_eq!(did_you_mean("modl", known), " (did you mean `model`?)");
    }
}
