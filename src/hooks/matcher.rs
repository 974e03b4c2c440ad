//! Hook matchers: absent, empty or `*` match everything; plain names and `A|B` (or `A,B`)
//! lists match exactly; anything else is an unanchored regular expression.

#[derive(Debug, Clone)]
pub enum Matcher {
    All,
    Names(Vec<String>),
    Regex(regex::Regex),
}

impl Matcher {
    pub fn parse(raw: Option<&str>) -> Result<Matcher, String> {
        let Some(raw) = raw.map(str::trim) else {
            return Ok(Matcher::All);
        };
        if raw.is_empty() || raw == "*" {
            return Ok(Matcher::All);
        }
        let plain = raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ' ' | '-' | ',' | '|'));
        if plain {
            return Ok(Matcher::Names(
                raw.split(['|', ','])
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
            ));
        }
        regex::Regex::new(raw)
            .map(Matcher::Regex)
            .map_err(|e| format!("invalid matcher regular expression `{raw}`: {e}"))
    }

    /// `target` is what the event matches on (tool name, source, trigger…); events without a
    /// target match every matcher.
    pub fn matches(&self, target: Option<&str>) -> bool {
        let Some(t) = target else { return true };
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == t),
            Matcher::Regex(re) => re.is_match(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let m = |s: &str| Matcher::parse(Some(s)).unwrap();
        assert!(Matcher::parse(None).unwrap().matches(Some("Bash")));
        assert!(m("").matches(Some("Bash")) && m("*").matches(Some("x")));
        assert!(m("Bash").matches(Some("Bash")) && !m("Bash").matches(Some("BashOutput")));
        assert!(m("Edit|Write").matches(Some("Write")) && !m("Edit|Write").matches(Some("Read")));
        assert!(m("Edit, Write").matches(Some("Edit")));
        assert!(m("Edit.*").matches(Some("NotebookEdit")));
        assert!(!m("^Edit$").matches(Some("NotebookEdit")));
        assert!(m("mcp__memory__.*").matches(Some("mcp__memory__create")));
        assert!(m("mcp__github__create_issue").matches(Some("mcp__github__create_issue")));
        assert!(Matcher::parse(Some("(")).is_err());
    }
}
