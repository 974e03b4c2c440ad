use std::path::PathBuf;

use serde_json::{Value, json};

use super::*;

fn layer(scope: Scope, name: &str, value: Value) -> Layer {
    Layer {
        scope,
        path: Some(PathBuf::from(name)),
        base_dir: PathBuf::from("/p"),
        value,
    }
}

fn settings(layers: Vec<Layer>) -> Settings {
    Settings { layers }
}

const UNTRUSTED: Weigh = Weigh {
    project_trusted: false,
    lower_only: &[],
};
const TRUSTED: Weigh = Weigh {
    project_trusted: true,
    lower_only: &[],
};

#[test]
fn a_project_may_lower_a_limit_and_not_raise_it() {
    let procs: &[&str] = &["sandbox", "limits", "maxProcesses"];
    let weigh = Weigh {
        project_trusted: true,
        lower_only: &[(procs, 4096)],
    };
    let mut raised = settings(vec![layer(
        Scope::Project,
        "p.json",
        json!({"sandbox": {"limits": {"maxProcesses": 100000}}}),
    )]);
    let notices = enforce(&mut raised, weigh);
    assert!(raised.nested(procs).is_none());
    assert!(notices[0].contains("4096"), "{notices:?}");
    let mut lowered = settings(vec![
        layer(
            Scope::User,
            "u.json",
            json!({"sandbox": {"limits": {"maxProcesses": 200}}}),
        ),
        layer(
            Scope::Project,
            "p.json",
            json!({"sandbox": {"limits": {"maxProcesses": 100}}}),
        ),
    ]);
    assert!(enforce(&mut lowered, weigh).is_empty());
    assert_eq!(lowered.nested(procs).unwrap().0, 100);
}

#[test]
fn a_project_cannot_switch_off_the_users_sandbox() {
    let mut s = settings(vec![
        layer(Scope::User, "user.json", json!({"sandbox": {"enabled": true}})),
        layer(
            Scope::Project,
            ".claude/settings.json",
            json!({"sandbox": {"enabled": false}}),
        ),
    ]);
    let notices = enforce(&mut s, TRUSTED);
    assert_eq!(s.flag(&["sandbox", "enabled"]).unwrap(), Some(true));
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains(".claude/settings.json") && notices[0].contains("sandbox.enabled"),
        "{notices:?}"
    );
}

#[test]
fn a_project_cannot_widen_the_sandbox_even_where_the_user_set_nothing() {
    let mut s = settings(vec![layer(
        Scope::Project,
        "p.json",
        json!({"sandbox": {"allowNetwork": true, "failIfUnavailable": false, "additionalWritePaths": ["~"]}}),
    )]);
    let notices = enforce(&mut s, TRUSTED);
    assert_eq!(s.flag(&["sandbox", "allowNetwork"]).unwrap(), None);
    assert_eq!(s.flag(&["sandbox", "failIfUnavailable"]).unwrap(), None);
    assert!(s.strings(&["sandbox", "additionalWritePaths"]).unwrap().is_empty());
    assert_eq!(notices.len(), 3, "{notices:?}");
}

#[test]
fn a_projects_extra_directories_need_a_trusted_folder() {
    let dirs = || {
        layer(
            Scope::Project,
            "p.json",
            json!({"permissions": {"additionalDirectories": ["~"]}}),
        )
    };
    let mut untrusted = settings(vec![dirs()]);
    let notices = enforce(&mut untrusted, UNTRUSTED);
    assert!(
        untrusted
            .strings(&["permissions", "additionalDirectories"])
            .unwrap()
            .is_empty()
    );
    assert!(notices[0].contains("--trust-project"), "{notices:?}");
    let mut trusted = settings(vec![dirs()]);
    assert!(enforce(&mut trusted, TRUSTED).is_empty());
    assert_eq!(
        trusted
            .strings(&["permissions", "additionalDirectories"])
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_project_may_turn_the_sandbox_on() {
    let mut s = settings(vec![layer(
        Scope::Project,
        "p.json",
        json!({"sandbox": {"enabled": true}}),
    )]);
    assert!(enforce(&mut s, UNTRUSTED).is_empty());
    assert_eq!(s.flag(&["sandbox", "enabled"]).unwrap(), Some(true));
}

#[test]
fn a_projects_disable_all_hooks_turns_off_only_its_own_hooks() {
    let mut s = settings(vec![
        layer(Scope::User, "user.json", json!({"hooks": {"PreToolUse": []}})),
        layer(Scope::Project, "p.json", json!({"hooks": {"Stop": []}})),
        layer(
            Scope::Local,
            "l.json",
            json!({"disableAllHooks": true, "hooks": {"Stop": []}}),
        ),
    ]);
    let notices = enforce(&mut s, TRUSTED);
    assert!(s.scalar("disableAllHooks").is_none());
    assert!(s.layers[0].value.get("hooks").is_some(), "the user's hooks stay");
    assert!(s.layers[1].value.get("hooks").is_none(), "the project's own hooks go");
    assert!(s.layers[2].value.get("hooks").is_none(), "the local file's hooks go");
    assert!(notices.iter().any(|n| n.contains("disableAllHooks")), "{notices:?}");
}

#[test]
fn a_project_cannot_raise_the_mode_to_bypass_or_dont_ask() {
    for mode in ["bypassPermissions", "dontAsk"] {
        let mut s = settings(vec![layer(
            Scope::Project,
            "p.json",
            json!({"permissions": {"defaultMode": mode}}),
        )]);
        let notices = enforce(&mut s, TRUSTED);
        assert!(s.nested(&["permissions", "defaultMode"]).is_none(), "{mode}");
        assert!(
            notices[0].contains("p.json") && notices[0].contains(mode),
            "{notices:?}"
        );
    }
}

#[test]
fn a_projects_accept_edits_needs_a_trusted_folder() {
    let project = || {
        layer(
            Scope::Local,
            "l.json",
            json!({"permissions": {"defaultMode": "acceptEdits"}}),
        )
    };
    let mut untrusted = settings(vec![project()]);
    let notices = enforce(&mut untrusted, UNTRUSTED);
    assert!(untrusted.nested(&["permissions", "defaultMode"]).is_none());
    assert!(notices[0].contains("--trust-project"), "{notices:?}");
    let mut trusted = settings(vec![project()]);
    assert!(enforce(&mut trusted, TRUSTED).is_empty());
    assert_eq!(
        trusted.nested(&["permissions", "defaultMode"]).unwrap().0,
        "acceptEdits"
    );
}

#[test]
fn a_project_mode_at_or_below_the_users_applies() {
    let mut s = settings(vec![
        layer(
            Scope::User,
            "u.json",
            json!({"permissions": {"defaultMode": "bypassPermissions"}}),
        ),
        layer(
            Scope::Project,
            "p.json",
            json!({"permissions": {"defaultMode": "plan"}}),
        ),
    ]);
    assert!(enforce(&mut s, UNTRUSTED).is_empty());
    assert_eq!(s.nested(&["permissions", "defaultMode"]).unwrap().0, "plan");
    let mut same = settings(vec![
        layer(
            Scope::User,
            "u.json",
            json!({"permissions": {"defaultMode": "acceptEdits"}}),
        ),
        layer(
            Scope::Project,
            "p.json",
            json!({"permissions": {"defaultMode": "acceptEdits"}}),
        ),
    ]);
    assert!(enforce(&mut same, UNTRUSTED).is_empty());
}

#[test]
fn a_project_cannot_open_reads() {
    let mut s = settings(vec![layer(
        Scope::Project,
        "p.json",
        json!({"sandbox": {"filesystem": {"allowRead": ["~/.ssh"], "denyRead": ["secrets"]}}}),
    )]);
    let notices = enforce(&mut s, TRUSTED);
    assert!(s.nested(&["sandbox", "filesystem", "allowRead"]).is_none());
    assert!(
        s.nested(&["sandbox", "filesystem", "denyRead"]).is_some(),
        "a deny only tightens"
    );
    assert_eq!(notices.len(), 1);
}

#[test]
fn managed_hooks_only_drops_every_other_layers_hooks() {
    let mut s = settings(vec![
        layer(Scope::User, "u.json", json!({"hooks": {"Stop": []}})),
        layer(Scope::Cli, "--settings", json!({"hooks": {"Stop": []}})),
        layer(
            Scope::Managed,
            "/etc/keel/managed-settings.json",
            json!({"allowManagedHooksOnly": true, "hooks": {"PreToolUse": []}}),
        ),
    ]);
    let notices = enforce(&mut s, TRUSTED);
    assert!(s.layers[0].value.get("hooks").is_none() && s.layers[1].value.get("hooks").is_none());
    assert!(s.layers[2].value.get("hooks").is_some());
    assert_eq!(notices.len(), 2, "{notices:?}");
}

#[test]
fn managed_rules_only_drops_lower_allow_rules_and_keeps_their_denies() {
    let mut s = settings(vec![
        layer(
            Scope::User,
            "u.json",
            json!({"permissions": {"allow": ["Bash"], "deny": ["Read(./x)"]}}),
        ),
        layer(
            Scope::Managed,
            "m.json",
            json!({"allowManagedPermissionRulesOnly": true, "permissions": {"allow": ["Read"]}}),
        ),
    ]);
    enforce(&mut s, TRUSTED);
    let allow: Vec<String> = s
        .strings(&["permissions", "allow"])
        .unwrap()
        .into_iter()
        .map(|(r, _)| r)
        .collect();
    assert_eq!(allow, ["Read"]);
    assert_eq!(s.strings(&["permissions", "deny"]).unwrap().len(), 1);
}

#[test]
fn a_managed_sandbox_stays_on_whatever_the_user_says() {
    let mut s = settings(vec![
        layer(
            Scope::User,
            "u.json",
            json!({"sandbox": {"enabled": false, "failIfUnavailable": false, "allowNetwork": true, "additionalWritePaths": ["/tmp/x"]}}),
        ),
        layer(
            Scope::Managed,
            "m.json",
            json!({"sandbox": {"enabled": true, "additionalWritePaths": []}}),
        ),
    ]);
    let notices = enforce(&mut s, TRUSTED);
    assert_eq!(s.flag(&["sandbox", "enabled"]).unwrap(), Some(true));
    assert_eq!(s.flag(&["sandbox", "failIfUnavailable"]).unwrap(), None);
    assert_eq!(s.flag(&["sandbox", "allowNetwork"]).unwrap(), None);
    assert!(s.strings(&["sandbox", "additionalWritePaths"]).unwrap().is_empty());
    assert_eq!(notices.len(), 4, "{notices:?}");
}

#[test]
fn the_managed_ceiling_removes_higher_modes_below_it() {
    let mut s = settings(vec![
        layer(
            Scope::User,
            "u.json",
            json!({"permissions": {"defaultMode": "bypassPermissions"}}),
        ),
        layer(
            Scope::Managed,
            "m.json",
            json!({"permissions": {"modeCeiling": "default"}}),
        ),
    ]);
    let notices = enforce(&mut s, TRUSTED);
    assert!(s.nested(&["permissions", "defaultMode"]).is_none());
    assert!(notices[0].contains("m.json"), "{notices:?}");
    let c = mode_ceiling(&s).unwrap();
    assert!(c.refuses(Mode::AcceptEdits).is_some());
    assert!(c.refuses(Mode::DontAsk).is_none() && c.refuses(Mode::Plan).is_none());
}

#[test]
fn disable_bypass_is_a_ceiling_and_a_managed_one_is_kept_when_lower() {
    let s = settings(vec![layer(
        Scope::Project,
        "p.json",
        json!({"permissions": {"disableBypassPermissionsMode": "disable"}}),
    )]);
    let c = mode_ceiling(&s).unwrap();
    assert!(c.refuses(Mode::BypassPermissions).is_some() && c.refuses(Mode::AcceptEdits).is_none());
    let s = settings(vec![
        layer(
            Scope::User,
            "u.json",
            json!({"permissions": {"disableBypassPermissionsMode": "disable"}}),
        ),
        layer(
            Scope::Managed,
            "m.json",
            json!({"permissions": {"modeCeiling": "plan"}}),
        ),
    ]);
    assert_eq!(mode_ceiling(&s).unwrap().mode, Mode::Plan);
}

#[test]
fn the_model_allowlist_removes_lower_models_outside_it() {
    let mut s = settings(vec![
        layer(
            Scope::User,
            "u.json",
            json!({"model": "opus", "fallbackModel": "claude-sonnet-5-5"}),
        ),
        layer(
            Scope::Managed,
            "m.json",
            json!({"availableModels": ["sonnet", "haiku"], "enforceAvailableModels": true}),
        ),
    ]);
    let notices = enforce(&mut s, TRUSTED);
    assert!(s.scalar("model").is_none(), "opus is outside the list");
    assert!(
        s.scalar("fallbackModel").is_some(),
        "the full id of an allowed alias stays"
    );
    assert_eq!(notices.len(), 1, "{notices:?}");
    let list = model_allowlist(&s).unwrap();
    assert!(list.allows("anthropic/haiku"));
    assert!(list.refuses("gpt-5").unwrap().contains("m.json"));
}

#[test]
fn an_allowlist_without_enforcement_is_no_limit() {
    let s = settings(vec![layer(
        Scope::Managed,
        "m.json",
        json!({"availableModels": ["sonnet"]}),
    )]);
    assert!(model_allowlist(&s).is_none());
}

#[test]
fn managed_typos_are_errors() {
    for bad in [
        json!({"allowManagedHooksOnly": "yes"}),
        json!({"permissions": {"modeCeiling": "everything"}}),
        json!({"availableModels": "sonnet"}),
    ] {
        let s = settings(vec![layer(Scope::Managed, "m.json", bad.clone())]);
        assert!(check_managed(&s).is_err(), "{bad}");
    }
}

#[test]
fn managed_keys_in_a_users_file_have_no_force() {
    let mut s = settings(vec![
        layer(
            Scope::User,
            "u.json",
            json!({"allowManagedHooksOnly": true, "hooks": {"Stop": []}}),
        ),
        layer(Scope::Project, "p.json", json!({"hooks": {"Stop": []}})),
    ]);
    enforce(&mut s, TRUSTED);
    assert!(s.layers.iter().all(|l| l.value.get("hooks").is_some()));
}
