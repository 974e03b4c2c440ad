//! Credentials taken out of what keel stores (transcripts, spilled tool results, the debug
//! log) before it is written: API keys of the common providers (`sk-ant-…`, `sk-…`), GitHub
//! tokens (`ghp_…`, `github_pat_…`), GitLab, npm and Hugging Face tokens (`glpat-…`, `npm_…`,
//! `hf_…`), AWS access key ids (`AKIA…`) and secret keys (after `aws_secret_access_key`), Slack
//! tokens (`xox…`), the credential of an `Authorization:` or `x-api-key:` header, a `Cookie:`
//! header's value, the password in a URL (`scheme://user:PASSWORD@host`), the value given to an
//! environment-style name ending in `_KEY`, `_TOKEN`, `_SECRET` or `_PASSWORD`, and PEM and PGP
//! private keys. Each becomes `[REDACTED:<kind>]`, so the record says that something was taken
//! out and what it was.
//!
//! One automaton pass over the text (the `regex` crate: linear time, no backtracking); text
//! without a match is returned borrowed. The patterns need the providers' prefixes and a
//! minimum length, so hex digests, UUIDs and ordinary words do not match.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::{Captures, Regex};
use serde_json::Value;

/// What each alternative of [`PATTERN`] finds, by capture group name.
const KINDS: &[(&str, &str)] = &[
    ("pem", "private-key"),
    ("ant", "anthropic-key"),
    ("oai", "openai-key"),
    ("gh", "github-token"),
    ("aws", "aws-access-key"),
    ("slack", "slack-token"),
    ("google", "google-api-key"),
    ("stripe", "stripe-key"),
    ("glab", "gitlab-token"),
    ("npm", "npm-token"),
    ("hf", "huggingface-token"),
];

/// Alternatives that keep a leading name (header, variable, URL user) and replace only the
/// value after it: (the kept group, the value group, the kind).
const KEPT_PREFIX: &[(&str, &str, &str)] = &[
    ("hdr", "cred", "header-credential"),
    ("cookie", "cval", "cookie"),
    ("awsk", "awsv", "aws-secret-key"),
    ("env", "eval", "secret-value"),
    ("url", "upw", "url-password"),
];

/// Alternatives in priority order (leftmost-first): the longer prefix before the shorter.
const PATTERN: &str = concat!(
    // A whole block, or one cut short: then only the base64 lines that follow the header go
    // (a short last line only at the end of the text), not the prose after it.
    r"(?P<pem>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:(?s:.*?)-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|(?:(?:\r?\n|\\n)[A-Za-z0-9+/=]{16,})*(?:(?:\r?\n|\\n)[A-Za-z0-9+/=]{1,15}\z)?))",
    r"|(?P<ant>\bsk-ant-[A-Za-z0-9_-]{20,})",
    r"|(?P<oai>\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})",
    r"|(?P<gh>\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}))",
    r"|(?P<aws>\b(?:AKIA|ASIA)[A-Z0-9]{16}\b)",
    r"|(?P<slack>\bxox[abposr]-[A-Za-z0-9-]{10,})",
    r"|(?P<google>\bAIza[A-Za-z0-9_-]{35})",
    r"|(?P<stripe>\b[sr]k_live_[A-Za-z0-9]{20,})",
    r"|(?P<glab>\bglpat-[A-Za-z0-9_-]{20,})",
    r"|(?P<npm>\bnpm_[A-Za-z0-9]{36})",
    r"|(?P<hf>\bhf_[A-Za-z0-9]{30,})",
    // A header's credential: the name and scheme stay, the value goes.
    r#"|(?P<hdr>(?i:\b(?:authorization|proxy-authorization)["']?\s*[:=]\s*["']?(?:bearer|basic|token)\s+|\bx-api-key["']?\s*[:=]\s*["']?))(?P<cred>[A-Za-z0-9._~+/=-]{8,})"#,
    r#"|(?P<cookie>(?i:\b(?:set-)?cookie["']?\s*:\s*["']?))(?P<cval>[^\r\n"']{8,})"#,
    r#"|(?P<awsk>(?i:\baws_secret_access_key["']?\s*[:=]\s*["']?))(?P<awsv>[A-Za-z0-9/+=]{40})"#,
    r#"|(?P<env>\b[A-Z][A-Z0-9_]*_(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)["']?\s*[:=]\s*["']?)(?P<eval>[A-Za-z0-9._~+/=!@#%^&*-]{8,})"#,
    r"|(?P<url>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)(?P<upw>[^\s@/]+)@",
);

fn pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // A constant pattern, covered by the tests: it compiles.
        #[allow(clippy::expect_used)]
        Regex::new(PATTERN).expect("the redaction pattern compiles")
    })
}

/// The marker that replaces a credential of `kind`.
pub fn marker(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

/// `text` with every recognised credential replaced by its marker, and the kinds replaced
/// (one entry per credential).
pub fn redact(text: &str) -> (Cow<'_, str>, Vec<&'static str>) {
    let re = pattern();
    if !re.is_match(text) {
        return (Cow::Borrowed(text), Vec::new());
    }
    let mut kinds = Vec::new();
    let out = re.replace_all(text, |c: &Captures<'_>| {
        for (kept, value, kind) in KEPT_PREFIX {
            if let (Some(prefix), Some(value)) = (c.name(kept), c.name(value)) {
                // A value that is itself a recognised key keeps that key's kind.
                if *kept == "env" {
                    let (inner, found) = redact(value.as_str());
                    if inner == marker(found.first().copied().unwrap_or_default()) {
                        kinds.extend(found);
                        return format!("{}{inner}", prefix.as_str());
                    }
                }
                kinds.push(*kind);
                let tail = if *kept == "url" { "@" } else { "" };
                return format!("{}{}{tail}", prefix.as_str(), marker(kind));
            }
        }
        let whole = c.get(0).map_or("", |m| m.as_str());
        for (group, kind) in KINDS {
            if c.name(group).is_some() {
                // A key body is random: one without a digit is a word (`sk-learn-…`).
                let needs_digit = matches!(*group, "ant" | "oai" | "slack" | "stripe");
                if needs_digit && !whole.bytes().any(|b| b.is_ascii_digit()) {
                    return whole.to_string();
                }
                kinds.push(*kind);
                return marker(kind);
            }
        }
        whole.to_string()
    });
    (out, kinds)
}

/// Redacts every string inside `value` in place; returns the kinds replaced. Blocks a provider
/// signed or encrypted (thinking, redacted thinking, its own search results) are left alone:
/// the API refuses them changed, and they are sent back as received.
pub fn redact_value(value: &mut Value) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    walk(value, &mut kinds);
    kinds
}

fn walk(value: &mut Value, kinds: &mut Vec<&'static str>) {
    match value {
        Value::String(s) => {
            let (out, found) = redact(s);
            if !found.is_empty() {
                *s = out.into_owned();
                kinds.extend(found);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| walk(v, kinds)),
        Value::Object(map) => {
            let signed = map
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| matches!(t, "thinking" | "redacted_thinking" | "web_search_tool_result"));
            if !signed {
                map.values_mut().for_each(|v| walk(v, kinds));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn only(text: &str) -> String {
        redact(text).0.into_owned()
    }

    #[test]
    fn provider_keys_and_tokens_are_replaced_by_their_kind() {
        let ant = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdEFGH";
        let oai = "sk-proj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1HgFeDcBa";
        let gh = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let pat = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz";
        let aws = "AKIAIOSFODNN7EXAMPLE";
        let slack = "xoxb-123456789012-abcdefABCDEF";
        let text = format!("a={ant} b={oai}\ngh {gh} {pat}\naws {aws}; slack {slack}.");
        let (out, kinds) = redact(&text);
        assert_eq!(
            out,
            "a=[REDACTED:anthropic-key] b=[REDACTED:openai-key]\ngh [REDACTED:github-token] \
             [REDACTED:github-token]\naws [REDACTED:aws-access-key]; slack [REDACTED:slack-token]."
        );
        assert_eq!(kinds.len(), 6);
    }

    #[test]
    fn header_credentials_keep_the_header_name_and_scheme() {
        assert_eq!(
            only("curl -H 'Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.abc123' x"),
            "curl -H 'Authorization: Bearer [REDACTED:header-credential]' x"
        );
        assert_eq!(
            only("{\"authorization\": \"Basic dXNlcjpwYXNzd29yZA==\"}"),
            "{\"authorization\": \"Basic [REDACTED:header-credential]\"}"
        );
        assert_eq!(
            only("x-api-key: 0123456789abcdef"),
            "x-api-key: [REDACTED:header-credential]"
        );
    }

    #[test]
    fn private_keys_go_whole_even_when_cut() {
        let pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nabc+/=\n-----END RSA PRIVATE KEY-----";
        assert_eq!(
            only(&format!("key:\n{pem}\nafter")),
            "key:\n[REDACTED:private-key]\nafter"
        );
        let cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA";
        assert_eq!(only(cut), "[REDACTED:private-key]");
        // Public material is no secret.
        let public = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----";
        assert_eq!(only(public), public);
    }

    #[test]
    fn more_token_kinds_and_named_values_are_replaced() {
        let cases = [
            ("glpat-AbCdEfGh0123456789xyzW", "[REDACTED:gitlab-token]"),
            ("npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "[REDACTED:npm-token]"),
            (
                "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
                "[REDACTED:huggingface-token]",
            ),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [REDACTED:aws-secret-key]",
            ),
            (
                "export MY_SERVICE_TOKEN=s3cr3t-v4lue-here",
                "export MY_SERVICE_TOKEN=[REDACTED:secret-value]",
            ),
            (
                "DB_PASSWORD: 'hunter2hunter2'",
                "DB_PASSWORD: '[REDACTED:secret-value]'",
            ),
            (
                "git clone https://bob:pa55word@git.example.com/r.git",
                "git clone https://bob:[REDACTED:url-password]@git.example.com/r.git",
            ),
            (
                "Cookie: session=abcdef0123456789; theme=dark",
                "Cookie: [REDACTED:cookie]",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(only(text), want, "{text}");
        }
        let pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----";
        assert_eq!(only(pgp), "[REDACTED:private-key]");
    }

    #[test]
    fn a_cut_private_key_takes_only_its_base64_lines() {
        let cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7abcdefghij0123\nsee above: the key was cut.";
        assert_eq!(only(cut), "[REDACTED:private-key]\nsee above: the key was cut.");
    }

    #[test]
    fn hashes_uuids_and_words_are_left_alone() {
        for text in [
            "commit 3f786850e387550fdab836ed7e6dc881de23001b",
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "id 123e4567-e89b-12d3-a456-426614174000",
            "pip install scikit-learn; the task-abcdefghijklmnopqrstuvwxyz0123 ran",
            "sk-learn-is-a-library-name-not-a-key",
            "Authorization: Bearer",
            "AKIA is a prefix",
            "ordinary prose with no secret at all",
            "https://example.com:8080/path@v2 and http://localhost:3000/",
            "PATH_KEY=$OTHER_VARIABLE",
            "let primary_key = 42;",
        ] {
            let (out, kinds) = redact(text);
            assert!(matches!(out, Cow::Borrowed(_)) || kinds.is_empty(), "{text}");
            assert_eq!(out, text, "{text}");
        }
    }

    #[test]
    fn values_are_redacted_except_signed_blocks() {
        let key = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
        let mut v = serde_json::json!({
            "content": [
                {"type": "text", "text": format!("key {key}")},
                {"type": "thinking", "thinking": format!("the key is {key}"), "signature": "sig"},
                {"type": "tool_use", "input": {"command": format!("export K={key}")}},
            ]
        });
        let kinds = redact_value(&mut v);
        assert_eq!(kinds, vec!["anthropic-key", "anthropic-key"]);
        assert_eq!(v["content"][0]["text"], "key [REDACTED:anthropic-key]");
        assert!(v["content"][1]["thinking"].as_str().unwrap().contains(key));
        assert_eq!(v["content"][2]["input"]["command"], "export K=[REDACTED:anthropic-key]");
    }

    #[test]
    fn a_huge_text_without_secrets_passes_in_one_scan() {
        let text = "sk-".repeat(100_000) + &"a".repeat(100_000);
        let (out, kinds) = redact(&text);
        assert!(kinds.is_empty());
        assert_eq!(out.len(), text.len());
    }
}
