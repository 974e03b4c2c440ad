//! Permission updates in the reference's JSON shape: the suggestions keel offers with a
//! question (`permission_suggestions` in PermissionRequest payloads and SDK `can_use_tool`
//! requests) and the updates a program may send back with its answer.
//!
//! `{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test:*"}],
//!   "behavior":"allow","destination":"localSettings"}`

use serde_json::{Value, json};

use super::rules::Behavior;
use super::{AskInfo, Mode};
pub use crate::types::permission::{Destination, RuleOp, Update};

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

/// Reads the updates of an answer; malformed ones are returned as messages, not dropped
/// silently. As with the reference, one malformed update voids the whole list.
pub fn parse(updates: &[Value]) -> (Vec<Update>, Vec<String>) {
    let mut ok = Vec::new();
    let mut bad = Vec::new();
    for u in updates {
        match parse_one(u) {
            Ok(update) => ok.push(update),
            Err(e) => bad.push(e),
        }
    }
    if !bad.is_empty() {
        ok.clear();
    }
    (ok, bad)
}

fn parse_one(u: &Value) -> Result<Update, String> {
    let kind = u.get("type").and_then(Value::as_str).unwrap_or("?");
    let destination = match u.get("destination").and_then(Value::as_str) {
        None => Destination::Session,
        Some(d) => Destination::parse(d).ok_or_else(|| format!("{kind} to unknown destination `{d}`"))?,
    };
    let op = match kind {
        "addRules" => RuleOp::Add,
        "replaceRules" => RuleOp::Replace,
        "removeRules" => RuleOp::Remove,
        "setMode" => {
            let mode = u
                .get("mode")
                .and_then(Value::as_str)
                .and_then(Mode::parse)
                .ok_or_else(|| format!("setMode to {}", u.get("mode").unwrap_or(&Value::Null)))?;
            return Ok(Update::SetMode { mode, destination });
        }
        "addDirectories" | "removeDirectories" => {
            let directories = u
                .get("directories")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|d| d.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>()
                })
                .and_then(|d| d)
                .ok_or_else(|| format!("{kind} without a list of directory strings"))?;
            return Ok(Update::Directories {
                add: kind == "addDirectories",
                directories,
                destination,
            });
        }
        other => return Err(format!("unknown update type `{other}`")),
    };
    let behavior = match u.get("behavior").and_then(Value::as_str) {
        Some("allow") => Behavior::Allow,
        Some("deny") => Behavior::Deny,
        Some("ask") => Behavior::Ask,
        Some(other) => return Err(format!("{kind} with unknown behavior `{other}`")),
        None => return Err(format!("{kind} without `behavior`")),
    };
    let rules = u
        .get("rules")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{kind} without `rules`"))?
        .iter()
        .map(|r| {
            let tool = r.get("toolName").and_then(Value::as_str)?;
            Some(join_rule(tool, r.get("ruleContent").and_then(Value::as_str)))
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| format!("{kind}: every rule needs a string `toolName`"))?;
    Ok(Update::Rules {
        op,
        behavior,
        rules,
        destination,
    })
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
    fn updates_parse_and_malformed_ones_are_named() {
        let (ok, bad) = parse(&[
            json!({"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls:*"}],"behavior":"allow","destination":"session"}),
            json!({"type":"setMode","mode":"acceptEdits","destination":"localSettings"}),
            json!({"type":"addDirectories","directories":["/x"],"destination":"session"}),
            json!({"type":"replaceRules","rules":[{"toolName":"Bash"}],"behavior":"deny","destination":"projectSettings"}),
            json!({"type":"removeRules","rules":[{"toolName":"Read"}],"behavior":"ask","destination":"userSettings"}),
            json!({"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"maybe"}),
            json!({"type":"addRules","rules":[{"toolName":"Bash"}],"destination":"elsewhere"}),
            json!({"type":"grantEverything"}),
            json!({"type":"addDirectories","directories":[3]}),
        ]);
        assert!(ok.is_empty(), "one bad update voids them all");
        assert_eq!(bad.len(), 4, "{bad:?}");
        assert!(bad[0].contains("maybe") && bad[1].contains("elsewhere") && bad[2].contains("grantEverything"));
        let (ok, bad) = parse(&[
            json!({"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls:*"}],"behavior":"allow","destination":"session"}),
            json!({"type":"setMode","mode":"acceptEdits","destination":"localSettings"}),
            json!({"type":"addDirectories","directories":["/x"],"destination":"session"}),
            json!({"type":"replaceRules","rules":[{"toolName":"Bash"}],"behavior":"deny","destination":"projectSettings"}),
            json!({"type":"removeRules","rules":[{"toolName":"Read"}],"behavior":"ask","destination":"userSettings"}),
        ]);
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(
            ok,
            vec![
                Update::Rules {
                    op: RuleOp::Add,
                    behavior: Behavior::Allow,
                    rules: vec!["Bash(ls:*)".into()],
                    destination: Destination::Session
                },
                Update::SetMode {
                    mode: Mode::AcceptEdits,
                    destination: Destination::LocalSettings
                },
                Update::Directories {
                    add: true,
                    directories: vec!["/x".into()],
                    destination: Destination::Session
                },
                Update::Rules {
                    op: RuleOp::Replace,
                    behavior: Behavior::Deny,
                    rules: vec!["Bash".into()],
                    destination: Destination::ProjectSettings
                },
                Update::Rules {
                    op: RuleOp::Remove,
                    behavior: Behavior::Ask,
                    rules: vec!["Read".into()],
                    destination: Destination::UserSettings
                },
            ]
        );
    }
}
