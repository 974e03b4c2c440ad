//! Permission updates in the reference's JSON shape: the suggestions keel offers with a
//! question (`permission_suggestions` in PermissionRequest payloads and SDK `can_use_tool`
//! requests) and the updates a program may send back with its answer.
//!
//! `{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test:*"}],
//!   "behavior":"allow","destination":"localSettings"}`

use serde_json::{Value, json};

use super::{AskInfo, Mode};

/// Splits a rule's text into the tool name and its content, keeping the content verbatim
/// (quotes and inner parentheses included): `Bash(echo "a (b)")` → (`Bash`, `echo "a (b)"`).
pub fn split_rule(rule: &str) -> (String, Option<String>) {
    let rule = rule.trim();
    match (rule.find('('), rule.ends_with(')')) {
        (Some(open), true) => (
            rule[..open].to_string(),
            Some(rule[open + 1..rule.len() - 1].to_string()),
        ),
        _ => (rule.to_string(), None),
    }
}

/// Joins a tool name and optional content back into rule text.
pub fn join_rule(tool: &str, content: Option<&str>) -> String {
    match content {
        Some(c) => format!("{tool}({c})"),
        None => tool.to_string(),
    }
}

fn rule_objects(rules: &[String]) -> Vec<Value> {
    rules
        .iter()
        .map(|r| {
            let (tool, content) = split_rule(r);
            match content {
                Some(c) => json!({"toolName": tool, "ruleContent": c}),
                None => json!({"toolName": tool}),
            }
        })
        .collect()
}

/// What "allow always" would do for this question, as update objects.
pub fn suggestions(info: &AskInfo) -> Vec<Value> {
    let mut out = Vec::new();
    if !info.rules_to_save.is_empty() {
        out.push(json!({
            "type": "addRules",
            "rules": rule_objects(&info.rules_to_save),
            "behavior": "allow",
            "destination": "localSettings",
        }));
    }
    if !info.session_grants.is_empty() {
        out.push(json!({
            "type": "addRules",
            "rules": rule_objects(&info.session_grants),
            "behavior": "allow",
            "destination": "session",
        }));
    }
    out
}

/// An update a program sent with its approval, in the forms keel applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// Allow rules for the rest of the session (`session`) or also saved (`localSettings`).
    AllowRules {
        rules: Vec<String>,
        save: bool,
    },
    SetMode(Mode),
}

/// Reads the updates of an answer; unsupported ones are returned as messages, not dropped
/// silently.
pub fn parse(updates: &[Value]) -> (Vec<Update>, Vec<String>) {
    let mut ok = Vec::new();
    let mut unsupported = Vec::new();
    for u in updates {
        let kind = u.get("type").and_then(Value::as_str).unwrap_or("?");
        let destination = u.get("destination").and_then(Value::as_str).unwrap_or("session");
        match kind {
            "addRules" if u.get("behavior").and_then(Value::as_str).unwrap_or("allow") == "allow" => {
                let rules: Vec<String> = u
                    .get("rules")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|r| {
                        let tool = r.get("toolName").and_then(Value::as_str)?;
                        Some(join_rule(tool, r.get("ruleContent").and_then(Value::as_str)))
                    })
                    .collect();
                match destination {
                    "session" => ok.push(Update::AllowRules { rules, save: false }),
                    "localSettings" => ok.push(Update::AllowRules { rules, save: true }),
                    other => unsupported.push(format!("addRules to {other}")),
                }
            }
            "setMode" => match u.get("mode").and_then(Value::as_str).and_then(Mode::parse) {
                Some(m) => ok.push(Update::SetMode(m)),
                None => unsupported.push(format!("setMode to {}", u.get("mode").unwrap_or(&Value::Null))),
            },
            other => unsupported.push(format!(
                "{other}{}",
                u.get("behavior")
                    .and_then(Value::as_str)
                    .map(|b| format!(" ({b})"))
                    .unwrap_or_default()
            )),
        }
    }
    (ok, unsupported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_split_with_their_quoting_kept() {
        assert_eq!(
            split_rule(r#"Bash(echo "a (b)")"#),
            ("Bash".into(), Some(r#"echo "a (b)""#.into()))
        );
        assert_eq!(split_rule("Edit"), ("Edit".into(), None));
        assert_eq!(join_rule("Bash", Some("npm test:*")), "Bash(npm test:*)");
    }

    #[test]
    fn suggestions_are_objects() {
        let info = AskInfo {
            reason: String::new(),
            rules_to_save: vec![r#"Bash(grep "x y" *.rs)"#.into()],
            session_grants: vec!["Edit(src/**)".into()],
        };
        let s = suggestions(&info);
        assert_eq!(
            s[0],
            json!({"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"grep \"x y\" *.rs"}],
                   "behavior":"allow","destination":"localSettings"})
        );
        assert_eq!(s[1]["destination"], "session");
        assert_eq!(s[1]["rules"][0]["ruleContent"], "src/**");
    }

    #[test]
    fn updates_parse_and_unsupported_ones_are_named() {
        let (ok, bad) = parse(&[
            json!({"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls:*"}],"behavior":"allow","destination":"session"}),
            json!({"type":"setMode","mode":"acceptEdits","destination":"session"}),
            json!({"type":"addDirectories","directories":["/x"],"destination":"session"}),
            json!({"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"deny","destination":"session"}),
        ]);
        assert_eq!(
            ok,
            vec![
                Update::AllowRules {
                    rules: vec!["Bash(ls:*)".into()],
                    save: false
                },
                Update::SetMode(Mode::AcceptEdits)
            ]
        );
        assert_eq!(bad, vec!["addDirectories".to_string(), "addRules (deny)".to_string()]);
    }
}
