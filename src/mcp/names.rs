//! Tool names as the model sees them: `mcp__<server>__<tool>`, limited to the characters and
//! length the model APIs accept, with collisions resolved deterministically.

use std::collections::BTreeSet;

/// Longest tool name the APIs accept.
pub const MAX_NAME: usize = 64;

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(part: &str) -> String {
    let s: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "_".to_string() } else { s }
}

/// The model-facing name of a server's tool, unique among `taken` (which it is added to).
/// Too long a name is cut and given a short hash of the full name, so two long names that
/// share a prefix stay apart; a name still taken gets `_2`, `_3`, … in the order tools
/// are registered (server configuration order, then the server's tool order).
pub fn tool_name(server: &str, tool: &str, taken: &mut BTreeSet<String>) -> String {
    let full = format!("mcp__{}__{}", sanitize(server), sanitize(tool));
    let base = if full.len() <= MAX_NAME {
        full.clone()
    } else {
        let hash = short_hash(&full);
        format!("{}_{hash}", &full[..MAX_NAME - hash.len() - 1])
    };
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        let suffix = format!("_{n}");
        let keep = base.len().min(MAX_NAME - suffix.len());
        name = format!("{}{suffix}", &base[..keep]);
        n += 1;
    }
    taken.insert(name.clone());
    name
}

/// The prefix shared by all tools of a server (also its permission rule name).
pub fn server_prefix(server: &str) -> String {
    format!("mcp__{}__", sanitize(server))
}

fn short_hash(s: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(s.as_bytes());
    digest.iter().take(4).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitised_unique_and_bounded() {
        let mut taken = BTreeSet::new();
        assert_eq!(
            tool_name("github", "create_issue", &mut taken),
            "mcp__github__create_issue"
        );
        assert_eq!(
            tool_name("my server", "get.thing/x", &mut taken),
            "mcp__my_server__get_thing_x"
        );
        // `get thing/x` sanitises to the same name: the second one registered gets `_2`.
        assert_eq!(
            tool_name("my server", "get thing/x", &mut taken),
            "mcp__my_server__get_thing_x_2"
        );
        assert_eq!(
            tool_name("my server", "get thing x", &mut taken),
            "mcp__my_server__get_thing_x_3"
        );
        let long = "a".repeat(100);
        let a = tool_name("s", &long, &mut taken);
        let b = tool_name("s", &format!("{long}b"), &mut taken);
        assert!(a.len() <= MAX_NAME && b.len() <= MAX_NAME);
        assert_ne!(a, b);
        let again = tool_name("s", &long, &mut taken);
        assert!(again.len() <= MAX_NAME && again != a, "{again}");
        // Deterministic: the same registrations give the same names.
        let mut fresh = BTreeSet::new();
        assert_eq!(tool_name("s", &long, &mut fresh), a);
        assert_eq!(sanitize("é!"), "__");
    }
}
