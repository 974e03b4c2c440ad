//! Reasoning carried in the history: each protocol returns its own kind, and a server must never
//! receive another protocol's (Anthropic rejects foreign signatures, OpenAI knows no thinking
//! blocks). Everything lives in [`ContentBlock::Thinking`]; the signature says whose it is.
//!
//! - Anthropic: the API's own signature (base64), sent back unchanged.
//! - OpenAI Responses: `keel-openai-responses:` + the item's `encrypted_content`, sent back as a
//!   `reasoning` item so the model keeps its chain of thought between tool calls.
//! - Chat Completions (`reasoning_content`, `reasoning`, `reasoning_details`): no signature; sent
//!   back only to models whose table entry says the server wants it.
//!
//! [`ContentBlock::Thinking`]: crate::types::message::ContentBlock::Thinking

/// Prefix of a Responses reasoning item's signature.
pub const RESPONSES_TAG: &str = "keel-openai-responses:";

/// The signature that carries a Responses reasoning item's encrypted content.
pub fn responses_signature(encrypted: Option<&str>) -> String {
    format!("{RESPONSES_TAG}{}", encrypted.unwrap_or(""))
}

/// The encrypted content of a Responses reasoning item (`Some("")` when the server sent none).
pub fn responses_encrypted(signature: &str) -> Option<&str> {
    signature.strip_prefix(RESPONSES_TAG)
}

/// Whether a signature came from the Anthropic API (so it may be sent back there).
pub fn is_anthropic(signature: &str) -> bool {
    !signature.is_empty() && !signature.starts_with("keel-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_say_whose_reasoning_it_is() {
        let s = responses_signature(Some("gAAAA=="));
        assert_eq!(responses_encrypted(&s), Some("gAAAA=="));
        assert!(!is_anthropic(&s));
        assert_eq!(responses_encrypted(&responses_signature(None)), Some(""));
        assert!(is_anthropic("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"));
        assert!(!is_anthropic(""));
        assert_eq!(responses_encrypted("EqQB"), None);
    }
}
