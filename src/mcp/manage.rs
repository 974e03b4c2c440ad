//! `keel mcp list|get|add|remove`: the merged configuration and editing keel's files
//! (`keel.json` for the user and local scopes, `.mcp.json` for the project scope). Files are
//! rewritten atomically and keep every key keel does not manage.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::config::{self, Scope};
use super::sources::{self, Approval, Sources};

/// Which file a scope is written to.
fn scope_file(src: &Sources<'_>, scope: Scope) -> std::path::PathBuf {
    match scope {
        Scope::Project => src.cwd.join(".mcp.json"),
        _ => sources::keel_json(src.keel_home),
    }
}

/// The `mcpServers` map a scope keeps in its document (created when missing).
fn servers_map<'a>(doc: &'a mut Map<String, Value>, scope: Scope, cwd: &Path) -> &'a mut Map<String, Value> {
    let holder = match scope {
        Scope::Local => sources::project_entry(doc, cwd),
        _ => doc,
    };
    let servers = holder.entry("mcpServers").or_insert_with(|| json!({}));
    if !servers.is_object() {
        *servers = json!({});
    }
    match servers {
        Value::Object(m) => m,
        _ => unreachable!("set to an object above"),
    }
}

fn edit(
    src: &Sources<'_>,
    scope: Scope,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<(), String>,
) -> Result<(), String> {
    let path = scope_file(src, scope);
    let mut doc = sources::read_json(&path)?.unwrap_or_else(|| json!({}));
    let Some(obj) = doc.as_object_mut() else {
        return Err(format!("{}: must be a JSON object", path.display()));
    };
    change(servers_map(obj, scope, src.cwd))?;
    sources::write_json(&path, &doc)
}

/// Adds a server to a scope; an existing server of that name in that scope is an error.
pub fn add(src: &Sources<'_>, scope: Scope, name: &str, entry: Value) -> Result<String, String> {
    config::parse_entry(name, &entry)?;
    let file = scope_file(src, scope);
    edit(src, scope, |servers| {
        if servers.contains_key(name) {
            return Err(format!(
                "an MCP server named `{name}` already exists in the {} scope ({}); remove it first",
                scope.as_str(),
                file.display()
            ));
        }
        servers.insert(name.to_string(), entry);
        Ok(())
    })?;
    if scope == Scope::Project {
        // The person adding it approves it for this project.
        sources::remember_approval(src.keel_home, src.cwd, name, true)?;
    }
    Ok(format!(
        "Added MCP server `{name}` to the {} scope ({}).",
        scope.as_str(),
        file.display()
    ))
}

/// Removes a server. Without a scope it must be defined in exactly one of keel's scopes.
pub fn remove(src: &Sources<'_>, name: &str, scope: Option<Scope>) -> Result<String, String> {
    let scopes: Vec<Scope> = match scope {
        Some(s) => vec![s],
        None => [Scope::Local, Scope::Project, Scope::User]
            .into_iter()
            .filter(|s| defined_in(src, *s, name))
            .collect(),
    };
    match scopes.as_slice() {
        [] => {
            let elsewhere = sources::load(
                &Sources {
                    cli_configs: &[],
                    strict: false,
                    ..*src
                },
                &|_| None,
            )
            .ok()
            .and_then(|l| l.entries.into_iter().find(|e| e.name == name));
            Err(match elsewhere {
                Some(e) => format!(
                    "MCP server `{name}` is defined in {}, which keel does not edit; change it there",
                    e.source
                ),
                None => format!(
                    "no MCP server named `{name}` is configured{}",
                    scope
                        .map(|s| format!(" in the {} scope", s.as_str()))
                        .unwrap_or_default()
                ),
            })
        }
        [only] => {
            let mut found = false;
            edit(src, *only, |servers| {
                found = servers.remove(name).is_some();
                Ok(())
            })?;
            if !found {
                return Err(format!("no MCP server named `{name}` in the {} scope", only.as_str()));
            }
            Ok(format!(
                "Removed MCP server `{name}` from the {} scope ({}).",
                only.as_str(),
                scope_file(src, *only).display()
            ))
        }
        many => Err(format!(
            "MCP server `{name}` exists in several scopes ({}); say which with --scope",
            many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
}

fn defined_in(src: &Sources<'_>, scope: Scope, name: &str) -> bool {
    let Ok(Some(mut doc)) = sources::read_json(&scope_file(src, scope)) else {
        return false;
    };
    let Some(obj) = doc.as_object_mut() else {
        return false;
    };
    match scope {
        Scope::Local => obj
            .get("projects")
            .and_then(|p| p.get(sources::project_key(src.cwd)))
            .and_then(|p| p.get("mcpServers"))
            .and_then(|m| m.get(name))
            .is_some(),
        _ => obj.get("mcpServers").and_then(|m| m.get(name)).is_some(),
    }
}

/// Every configured server with its scope, source, target and whether it may start.
pub fn list(src: &Sources<'_>) -> Result<String, String> {
    let loaded = sources::load(src, &|k| std::env::var(k).ok())?;
    let mut out = String::new();
    for w in &loaded.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    if loaded.entries.is_empty() {
        out.push_str("No MCP servers are configured. Add one with `keel mcp add NAME -- COMMAND [ARGS…]`.\n");
        return Ok(out);
    }
    for e in &loaded.entries {
        let target = match config::parse_entry(&e.name, &e.raw) {
            Ok(spec) => format!("{} ({})", spec.target(), spec.transport()),
            Err(err) => format!("invalid: {err}"),
        };
        out.push_str(&format!(
            "{}: {target} — {} scope, {}",
            e.name,
            e.scope.as_str(),
            approval_word(src, e)
        ));
        out.push('\n');
        if let Some(line) = super::signin::state_line(src.keel_home, e) {
            out.push_str(&format!("    {line}\n"));
        }
        if let Err(err) = &e.spec
            && config::parse_entry(&e.name, &e.raw).is_ok()
        {
            out.push_str(&format!("    cannot start: {err}\n"));
        }
        for s in &e.shadows {
            out.push_str(&format!("    overrides {s}\n"));
        }
    }
    Ok(out)
}

fn approval_word(src: &Sources<'_>, e: &sources::Entry) -> &'static str {
    if e.scope != Scope::Project {
        return "enabled";
    }
    match sources::project_approval(&e.name, src) {
        Approval::Approved => "approved",
        Approval::Rejected => "rejected",
        Approval::Pending => "needs approval",
    }
}

/// One server's configuration in detail.
pub fn get(src: &Sources<'_>, name: &str) -> Result<String, String> {
    let loaded = sources::load(src, &|k| std::env::var(k).ok())?;
    let e = loaded
        .entries
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| format!("no MCP server named `{name}` is configured"))?;
    let mut out = format!("{name}:\n  scope: {}\n  source: {}\n", e.scope.as_str(), e.source);
    out.push_str(&format!("  status: {}\n", approval_word(src, e)));
    match config::parse_entry(name, &e.raw) {
        Ok(config::ServerSpec::Stdio {
            command,
            args,
            env,
            cwd,
        }) => {
            out.push_str(&format!(
                "  type: stdio\n  command: {command}\n  args: {}\n",
                args.join(" ")
            ));
            for (k, v) in env {
                out.push_str(&format!("  env: {k}={v}\n"));
            }
            if let Some(c) = cwd {
                out.push_str(&format!("  cwd: {}\n", c.display()));
            }
        }
        Ok(config::ServerSpec::Http { url, headers, .. }) | Ok(config::ServerSpec::Sse { url, headers, .. }) => {
            out.push_str(&format!(
                "  type: {}\n  url: {url}\n",
                if e.raw.get("type") == Some(&json!("sse")) {
                    "sse"
                } else {
                    "http"
                }
            ));
            for (k, v) in headers {
                out.push_str(&format!("  header: {k}: {v}\n"));
            }
        }
        Ok(config::ServerSpec::Sdk) => out.push_str("  type: sdk (a server inside the program driving keel)\n"),
        Err(err) => out.push_str(&format!("  invalid: {err}\n")),
    }
    if let Err(err) = &e.spec {
        out.push_str(&format!("  cannot start: {err}\n"));
    }
    for s in &e.shadows {
        out.push_str(&format!("  overrides: {s}\n"));
    }
    Ok(out)
}

/// The entry for `keel mcp add`: a command line (stdio) or a URL (`http`/`sse`).
pub fn entry_from_args(
    transport: &str,
    target: &str,
    args: &[String],
    env: &[String],
    headers: &[String],
) -> Result<Value, String> {
    match transport {
        "stdio" => {
            let mut map = Map::new();
            for pair in env {
                let (k, v) = pair
                    .split_once('=')
                    .ok_or_else(|| format!("--env needs KEY=VALUE, got `{pair}`"))?;
                map.insert(k.to_string(), json!(v));
            }
            let mut entry = json!({"type": "stdio", "command": target, "args": args});
            if !map.is_empty() {
                entry["env"] = Value::Object(map);
            }
            Ok(entry)
        }
        "http" | "sse" => {
            if !args.is_empty() {
                return Err(format!(
                    "a {transport} server takes only a URL, not extra arguments ({})",
                    args.join(" ")
                ));
            }
            let mut map = Map::new();
            for h in headers {
                let (k, v) = h
                    .split_once(':')
                    .ok_or_else(|| format!("--header needs `Name: value`, got `{h}`"))?;
                map.insert(k.trim().to_string(), json!(v.trim()));
            }
            let mut entry = json!({"type": transport, "url": target});
            if !map.is_empty() {
                entry["headers"] = Value::Object(map);
            }
            Ok(entry)
        }
        other => Err(format!("unknown transport `{other}`; use stdio, http or sse")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::Settings;

    #[test]
    fn add_list_get_remove_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("repo");
        let keel = dir.path().join("keel");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&keel).unwrap();
        std::fs::write(cwd.join(".mcp.json"), r#"{"mcpServers": {}, "other": 1}"#).unwrap();
        let settings = Settings::default();
        let src = Sources {
            cwd: &cwd,
            home: None,
            keel_home: &keel,
            settings: &settings,
            cli_configs: &[],
            strict: false,
        };
        let e = entry_from_args("stdio", "node", &["srv.js".into()], &["K=v".into()], &[]).unwrap();
        add(&src, Scope::Local, "fs", e.clone()).unwrap();
        assert!(
            add(&src, Scope::Local, "fs", e.clone())
                .unwrap_err()
                .contains("already exists")
        );
        add(&src, Scope::Project, "fs", e).unwrap();
        let h = entry_from_args(
            "http",
            "https://h/mcp",
            &[],
            &[],
            &["Authorization: Bearer ${T}".into()],
        )
        .unwrap();
        add(&src, Scope::User, "remote", h).unwrap();
        let listing = list(&src).unwrap();
        assert!(listing.contains("fs: node srv.js (stdio) — local scope"), "{listing}");
        assert!(listing.contains("overrides"), "{listing}");
        assert!(
            listing.contains("remote: https://h/mcp (http) — user scope"),
            "{listing}"
        );
        assert!(
            listing.contains("cannot start: server `remote`: environment variable(s) T not set"),
            "{listing}"
        );
        let detail = get(&src, "remote").unwrap();
        assert!(detail.contains("header: Authorization: Bearer ${T}"), "{detail}");
        assert!(remove(&src, "fs", None).unwrap_err().contains("several scopes"));
        remove(&src, "fs", Some(Scope::Project)).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(cwd.join(".mcp.json")).unwrap()).unwrap();
        assert_eq!(doc["other"], 1, "keys keel does not manage are kept");
        remove(&src, "fs", None).unwrap();
        assert!(remove(&src, "fs", None).unwrap_err().contains("no MCP server"));
        assert!(entry_from_args("http", "https://h", &["x".into()], &[], &[]).is_err());
        assert!(add(&src, Scope::User, "bad", json!({"url": "https://h"})).is_err());
    }
}
