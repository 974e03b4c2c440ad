use super::*;
use serde_json::json;

fn authorizer(allow: &[&str], ask: &[&str], deny: &[&str]) -> (Authorizer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let work = work.canonicalize().unwrap();
    let anchors = Anchors {
        cwd: work.clone(),
        base_dir: work.clone(),
        home: Some(dir.path().join("home")),
    };
    let mut rules = Vec::new();
    for (list, b) in [(allow, Behavior::Allow), (ask, Behavior::Ask), (deny, Behavior::Deny)] {
        for r in list {
            rules.push(Rule::parse(r, b, "test", &anchors).unwrap());
        }
    }
    let save = work.join(".keel/settings.local.json");
    (
        Authorizer::new(rules, vec![work], Some(dir.path().join("home")), Some(save)),
        dir,
    )
}

fn cwd(a: &Authorizer) -> PathBuf {
    a.working_dirs()[0].clone()
}

fn bash(a: &Authorizer, cmd: &str, mode: Mode) -> Verdict {
    a.check("Bash", &json!({"command": cmd}), false, mode, &cwd(a), None)
}

fn is_allow(v: &Verdict) -> bool {
    matches!(v, Verdict::Allow | Verdict::AllowConfined(_))
}
fn is_ask(v: &Verdict) -> bool {
    matches!(v, Verdict::Ask { .. })
}
fn is_deny(v: &Verdict) -> bool {
    matches!(v, Verdict::Deny(_))
}

#[test]
fn compound_command_needs_every_part_allowed() {
    let (a, _d) = authorizer(&["Bash(echo:*)"], &[], &[]);
    assert!(is_allow(&bash(&a, "echo ok", Mode::Default)));
    let v = bash(&a, "echo ok && rm -rf x", Mode::Default);
    assert!(is_ask(&v), "{v:?}");
    if let Verdict::Ask { info, .. } = v {
        assert_eq!(info.rules_to_save, vec!["Bash(rm:*)"]);
    }
    // dontAsk and headless turn the ask into a denial in the pipeline; here it stays an ask.
    assert!(is_ask(&bash(&a, "echo ok; touch y", Mode::DontAsk)));
}

#[test]
fn deny_beats_allow_and_bypass() {
    let (a, _d) = authorizer(&["Bash"], &[], &["Bash(rm:*)"]);
    assert!(is_deny(&bash(&a, "rm -f x", Mode::BypassPermissions)));
    assert!(is_deny(&bash(&a, "ls && rm x", Mode::BypassPermissions)));
    assert!(is_deny(&bash(&a, "timeout 5 rm x", Mode::BypassPermissions)));
    assert!(is_deny(&bash(&a, "FOO=1 rm x", Mode::BypassPermissions)));
    // Inside a construct keel cannot split, a deny prefix still catches it.
    assert!(is_deny(&bash(&a, "(cd sub && rm -rf y)", Mode::BypassPermissions)));
    assert!(is_allow(&bash(&a, "ls", Mode::BypassPermissions)));
}

#[test]
fn ask_rules_ask_even_in_bypass() {
    let (a, _d) = authorizer(&[], &["Bash(git push:*)"], &[]);
    let v = bash(&a, "git push origin feature", Mode::BypassPermissions);
    assert!(matches!(v, Verdict::Ask { hard: true, .. }), "{v:?}");
}

#[test]
fn unknown_constructs_ask() {
    let (a, _d) = authorizer(&["Bash(echo:*)"], &[], &[]);
    assert!(is_ask(&bash(&a, "echo $(whoami)", Mode::Default)));
    assert!(is_ask(&bash(&a, "echo `id`", Mode::AcceptEdits)));
}

#[test]
fn read_only_commands_run_in_every_mode_but_writes_do_not() {
    let (a, _d) = authorizer(&[], &[], &[]);
    for m in [Mode::Default, Mode::AcceptEdits, Mode::Plan, Mode::DontAsk] {
        assert!(is_allow(&bash(&a, "git status && ls -la | wc -l", m)), "{m:?}");
    }
    assert!(is_ask(&bash(&a, "echo hi > out.txt", Mode::Default)));
    assert!(is_allow(&bash(&a, "echo hi > out.txt", Mode::AcceptEdits)));
    assert!(is_allow(&bash(&a, "echo hi > /dev/null", Mode::Default)));
    assert!(is_ask(&bash(&a, "echo hi > /etc/owned", Mode::AcceptEdits)));
    assert!(is_allow(&bash(&a, "mkdir -p build", Mode::AcceptEdits)));
    assert!(is_ask(&bash(&a, "mkdir -p build", Mode::Default)));
}

#[test]
fn plan_mode_denies_changes() {
    let (a, _d) = authorizer(&["Bash(make:*)"], &[], &[]);
    assert!(is_deny(&bash(&a, "make install", Mode::Plan)));
    let p = cwd(&a).join("x.txt");
    let v = a.check(
        "Write",
        &json!({"file_path": p, "content": "x"}),
        false,
        Mode::Plan,
        &cwd(&a),
        None,
    );
    assert!(is_deny(&v), "{v:?}");
    let v = a.check("Read", &json!({"file_path": p}), true, Mode::Plan, &cwd(&a), None);
    assert!(is_allow(&v));
    let v = a.check("ExitPlanMode", &json!({"plan": "x"}), false, Mode::Plan, &cwd(&a), None);
    assert!(matches!(v, Verdict::Ask { hard: true, .. }));
}

#[test]
fn destructive_commands_always_ask_unless_explicitly_allowed() {
    let (a, _d) = authorizer(&["Bash"], &[], &[]);
    for m in [Mode::Default, Mode::AcceptEdits, Mode::BypassPermissions] {
        let v = bash(&a, "git reset --hard HEAD~3", m);
        assert!(matches!(v, Verdict::Ask { hard: true, .. }), "{m:?}: {v:?}");
    }
    let hook_allowed = a.check(
        "Bash",
        &json!({"command": "git clean -fdx"}),
        false,
        Mode::BypassPermissions,
        &cwd(&a),
        Some(HookDecision::Allow),
    );
    assert!(is_ask(&hook_allowed), "a hook's allow is not an explicit rule");
    let (b, _d2) = authorizer(&["Bash(git reset --hard:*)"], &[], &[]);
    assert!(is_allow(&bash(&b, "git reset --hard HEAD~3", Mode::BypassPermissions)));
}

#[test]
fn discarding_worktree_changes_and_amending_need_a_rule_in_every_mode() {
    let (a, _d) = authorizer(&["Bash"], &[], &[]);
    let modes = [Mode::Default, Mode::AcceptEdits, Mode::DontAsk, Mode::BypassPermissions];
    for line in [
        "git checkout -- .",
        "git checkout .",
        "FOO=1 git -C . checkout -- src/lib.rs",
        "git status && git restore src/lib.rs",
        "git add -A; git commit --amend --no-edit",
        "bash -c 'git restore --staged --worktree .'",
        "terraform destroy -target=x",
        // Lines the strict reader refuses: the destructive part is still found.
        "(git checkout -- .)",
        "echo $(git reset --hard)",
        "if true; then git commit --amend; fi",
        "git reset --hard <<EOF\nx\nEOF",
    ] {
        for m in modes {
            let v = bash(&a, line, m);
            assert!(
                matches!(&v, Verdict::Ask { hard: true, info } if info.reason.contains("destructive")),
                "{line} in {m:?}: {v:?}"
            );
        }
    }
    for line in [
        "git checkout main",
        "git checkout -b feature",
        "git restore --staged src/lib.rs",
        "(git status)",
    ] {
        let v = bash(&a, line, Mode::BypassPermissions);
        assert!(is_allow(&v), "{line}: {v:?}");
    }
    // An explicit rule is the explicit approval.
    let (b, _d2) = authorizer(&["Bash(git checkout -- .)", "Bash(git commit --amend:*)"], &[], &[]);
    assert!(is_allow(&bash(&b, "git checkout -- .", Mode::BypassPermissions)));
    assert!(is_allow(&bash(&b, "git commit --amend -m x", Mode::DontAsk)));
    let (c, _d3) = authorizer(&["Bash((git checkout -- .))"], &[], &[]);
    assert!(is_allow(&bash(&c, "(git checkout -- .)", Mode::BypassPermissions)));
}

#[test]
fn credential_files_are_denied_unless_allowed() {
    let (a, _d) = authorizer(&[], &[], &[]);
    let env = cwd(&a).join(".env");
    let v = a.check(
        "Read",
        &json!({"file_path": env}),
        true,
        Mode::BypassPermissions,
        &cwd(&a),
        None,
    );
    assert!(is_deny(&v), "{v:?}");
    assert!(is_deny(&bash(&a, "cat .env", Mode::Default)));
    let (b, _d2) = authorizer(&["Read(.env)"], &[], &[]);
    let v = b.check(
        "Read",
        &json!({"file_path": cwd(&b).join(".env")}),
        true,
        Mode::Default,
        &cwd(&b),
        None,
    );
    assert!(is_allow(&v));
}

#[test]
fn edits_follow_mode_dirs_and_rules() {
    let (a, _d) = authorizer(&[], &[], &["Edit(/secrets/**)"]);
    let inside = cwd(&a).join("src/lib.rs");
    let check = |p: &Path, m| a.check("Edit", &json!({"file_path": p}), false, m, &cwd(&a), None);
    assert!(is_ask(&check(&inside, Mode::Default)));
    assert!(is_allow(&check(&inside, Mode::AcceptEdits)));
    assert!(is_ask(&check(Path::new("/etc/passwd"), Mode::AcceptEdits)));
    assert!(is_deny(&check(&cwd(&a).join("secrets/k.txt"), Mode::BypassPermissions)));
}

#[test]
fn symlink_out_of_the_workspace_is_not_inside() {
    let (a, d) = authorizer(&[], &[], &[]);
    let outside = d.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, cwd(&a).join("link")).unwrap();
    let v = a.check(
        "Write",
        &json!({"file_path": cwd(&a).join("link/f.txt")}),
        false,
        Mode::AcceptEdits,
        &cwd(&a),
        None,
    );
    assert!(is_ask(&v), "{v:?}");
}

#[test]
fn hook_allow_skips_soft_asks_only() {
    let (a, _d) = authorizer(&[], &["Bash(npm publish:*)"], &[]);
    let soft = a.check(
        "Bash",
        &json!({"command": "make"}),
        false,
        Mode::Default,
        &cwd(&a),
        Some(HookDecision::Allow),
    );
    assert!(is_allow(&soft));
    let hard = a.check(
        "Bash",
        &json!({"command": "npm publish"}),
        false,
        Mode::Default,
        &cwd(&a),
        Some(HookDecision::Allow),
    );
    assert!(is_ask(&hard));
    let forced = a.check(
        "Bash",
        &json!({"command": "ls"}),
        false,
        Mode::Default,
        &cwd(&a),
        Some(HookDecision::Ask),
    );
    assert!(is_ask(&forced));
}

#[test]
fn allow_always_grants_for_the_session_and_saves() {
    let (a, _d) = authorizer(&[], &[], &[]);
    let Verdict::Ask { info, .. } = bash(&a, "npm run test -- --watch", Mode::Default) else {
        panic!("expected ask")
    };
    assert_eq!(info.rules_to_save, vec!["Bash(npm run test:*)"]);
    assert_eq!(a.grant(&info), None);
    assert!(is_allow(&bash(&a, "npm run test", Mode::Default)));
    let saved = std::fs::read_to_string(cwd(&a).join(".keel/settings.local.json")).unwrap();
    assert!(saved.contains("Bash(npm run test:*)"), "{saved}");
}

#[test]
fn bare_name_deny_removes_tool() {
    let (a, _d) = authorizer(&[], &[], &["Grep", "mcp__github"]);
    assert!(a.denies_whole_tool("Grep"));
    assert!(a.denies_whole_tool("mcp__github__create_issue"));
    assert!(!a.denies_whole_tool("Read"));
    let (b, _d2) = authorizer(&[], &[], &["Bash(rm:*)"]);
    assert!(!b.denies_whole_tool("Bash"));
}

#[test]
fn describe_lists_rules_by_behaviour() {
    let (a, _d) = authorizer(&["Read"], &["Bash(git push:*)"], &["Bash(rm:*)"]);
    let text = a.describe(Mode::AcceptEdits);
    assert!(text.starts_with("Permission mode: acceptEdits"));
    let deny = text.find("deny rules:").unwrap();
    let ask = text.find("ask rules:").unwrap();
    let allow = text.find("allow rules:").unwrap();
    assert!(deny < ask && ask < allow);
    assert!(text.contains("Bash(rm:*)  (test)"));
}

#[test]
fn observing_programs_with_dangerous_options_are_not_read_only() {
    let (a, _d) = authorizer(&[], &[], &[]);
    for cmd in [
        "sed -n '1e touch /tmp/pwned' a.txt",
        "env -S 'touch /tmp/pwned' ls",
        "git -c core.fsmonitor='touch /tmp/pwned' status",
        "rg --pre ./pre.sh x a.txt",
        "uniq a.txt out.txt",
    ] {
        assert!(is_deny(&bash(&a, cmd, Mode::Plan)), "plan: {cmd}");
        assert!(is_ask(&bash(&a, cmd, Mode::DontAsk)), "dontAsk must not allow: {cmd}");
    }
}

#[test]
fn credential_reads_through_the_shell_are_denied() {
    let (a, d) = authorizer(&[], &[], &[]);
    std::fs::write(cwd(&a).join(".env"), "SECRET=1").unwrap();
    let home = d.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "key").unwrap();
    for cmd in [
        "cat $HOME/.ssh/id_rsa",
        "cat .en*",
        "cd ~/.ssh && cat id_rsa",
        "head -n 1 ~/.ssh/id_rsa",
        "grep -n SECRET .env",
        "wc -l < .env",
    ] {
        let v = bash(&a, cmd, Mode::BypassPermissions);
        assert!(is_deny(&v), "{cmd}: {v:?}");
    }
    // Variables keel cannot resolve make the read unknown: never auto-approved.
    assert!(is_ask(&bash(&a, "cat $SECRET_FILE", Mode::Default)));
}

#[test]
fn writes_resolve_cd_and_home_before_the_mode_decides() {
    let (a, _d) = authorizer(&[], &[], &[]);
    for cmd in [
        "cd $HOME && echo x >> .bashrc",
        "echo x >> $HOME/.profile",
        "cd .. && touch outside",
    ] {
        let v = bash(&a, cmd, Mode::AcceptEdits);
        assert!(
            is_ask(&v),
            "acceptEdits must not write outside the workspace: {cmd}: {v:?}"
        );
    }
    let v = bash(&a, "echo x >> ~/.bashrc", Mode::BypassPermissions);
    assert!(
        matches!(v, Verdict::Ask { hard: true, .. }),
        "shell start-up files are protected: {v:?}"
    );
    assert!(is_allow(&bash(
        &a,
        "mkdir -p sub && cd sub && touch x",
        Mode::AcceptEdits
    )));
}

#[test]
fn agent_and_git_configuration_is_protected_in_every_mode() {
    let (a, _d) = authorizer(&[], &[], &[]);
    for path in [
        ".claude/settings.json",
        ".keel/settings.local.json",
        ".git/config",
        ".git/hooks/pre-commit",
    ] {
        let p = cwd(&a).join(path);
        let v = a.check(
            "Write",
            &json!({"file_path": p, "content": "x"}),
            false,
            Mode::BypassPermissions,
            &cwd(&a),
            None,
        );
        assert!(matches!(v, Verdict::Ask { hard: true, .. }), "{path}: {v:?}");
    }
    let v = bash(&a, "git config core.fsmonitor 'touch /tmp/x'", Mode::BypassPermissions);
    assert!(matches!(v, Verdict::Ask { hard: true, .. }), "{v:?}");
    assert!(is_allow(&bash(
        &a,
        "git config --get user.name",
        Mode::BypassPermissions
    )));
    let (b, _d2) = authorizer(&["Edit(/.claude/**)"], &[], &[]);
    let p = cwd(&b).join(".claude/settings.json");
    let v = b.check(
        "Write",
        &json!({"file_path": p, "content": "x"}),
        false,
        Mode::Default,
        &cwd(&b),
        None,
    );
    assert!(is_allow(&v), "an explicit rule allows it: {v:?}");
}

#[test]
fn deny_rules_see_through_paths_sudo_and_nested_shells() {
    let (a, _d) = authorizer(&["Bash"], &[], &["Bash(rm:*)"]);
    for cmd in [
        "/bin/rm -f f",
        "sh -c 'rm -f f'",
        "bash -lc \"echo a; rm -f f\"",
        "sudo rm -f f",
    ] {
        assert!(is_deny(&bash(&a, cmd, Mode::BypassPermissions)), "{cmd}");
    }
    let v = bash(&a, "sh -c 'git reset --hard'", Mode::BypassPermissions);
    assert!(matches!(v, Verdict::Ask { hard: true, .. }), "{v:?}");
}

#[test]
fn reads_outside_the_working_directories_ask_in_the_shell_too() {
    let (a, _d) = authorizer(&[], &[], &[]);
    assert!(is_ask(&bash(&a, "cat /etc/hostname", Mode::Default)));
    assert!(is_allow(&bash(&a, "cat /etc/hostname", Mode::BypassPermissions)));
    assert!(
        is_allow(&bash(&a, "echo /etc/hostname", Mode::Default)),
        "echo reads no files"
    );
}

#[test]
fn interpreters_are_only_ever_suggested_exactly() {
    let (a, _d) = authorizer(&[], &[], &[]);
    let Verdict::Ask { info, .. } = bash(&a, "python3 -c 'print(1)'", Mode::Default) else {
        panic!()
    };
    // With its quoting, so the saved rule reads back as the same words.
    assert_eq!(info.rules_to_save, vec!["Bash(python3 -c 'print(1)')"]);
    let Verdict::Ask { info, .. } = bash(&a, "cargo test -p keel", Mode::Default) else {
        panic!()
    };
    assert_eq!(info.rules_to_save, vec!["Bash(cargo test:*)"]);
    let Verdict::Ask { info, .. } = bash(&a, r#"python3 -c "print('hi')""#, Mode::Default) else {
        panic!()
    };
    assert_eq!(info.rules_to_save, vec![r#"Bash(python3 -c 'print('\''hi'\'')')"#]);
}

#[test]
fn a_saved_quoted_rule_allows_exactly_its_command() {
    let (a, _d) = authorizer(&["Bash(python3 -c 'print(42)')"], &[], &[]);
    assert!(is_allow(&bash(&a, "python3 -c 'print(42)'", Mode::Default)));
    assert!(
        is_allow(&bash(&a, r#"python3 -c "print(42)""#, Mode::Default)),
        "the same words"
    );
    assert!(is_ask(&bash(&a, "python3 -c 'print(43)'", Mode::Default)));
    assert!(is_ask(&bash(&a, "python3 -c 'print(42)' extra", Mode::Default)));
    // Every suggestion, saved as it is offered, allows the command it was offered for.
    let (plain, _d2) = authorizer(&[], &[], &[]);
    for cmd in [
        "python3 -c 'print(42)'",
        "node -e 'console.log(1 + 2)'",
        "sed -n '1,5p' a.txt",
    ] {
        let Verdict::Ask { info, .. } = bash(&plain, cmd, Mode::Default) else {
            panic!("{cmd}")
        };
        let rules: Vec<&str> = info.rules_to_save.iter().map(String::as_str).collect();
        let (saved, _d3) = authorizer(&rules, &[], &[]);
        assert!(is_allow(&bash(&saved, cmd, Mode::Default)), "{cmd}: {rules:?}");
    }
}

#[test]
fn commands_approved_by_keel_itself_come_back_confined() {
    let (a, _d) = authorizer(&["Bash(cargo test:*)"], &[], &[]);
    assert_eq!(
        bash(&a, "git status && cat a.txt", Mode::Default),
        Verdict::AllowConfined(crate::sandbox::Confinement::ReadOnly)
    );
    assert_eq!(
        bash(&a, "mkdir -p src/x && touch src/x/y", Mode::AcceptEdits),
        Verdict::AllowConfined(crate::sandbox::Confinement::WorkspaceWrite { creates_at_top: true })
    );
    assert_eq!(
        bash(&a, "echo hi > out.txt", Mode::AcceptEdits),
        Verdict::AllowConfined(crate::sandbox::Confinement::WorkspaceWrite { creates_at_top: true })
    );
    // Work that creates nothing new at the top lets the kernel keep missing configuration
    // names from appearing there.
    std::fs::create_dir_all(cwd(&a).join("src")).unwrap();
    std::fs::write(cwd(&a).join("a.txt"), "a").unwrap();
    for line in [
        "mkdir -p src/x/y",
        "touch a.txt src/z",
        "cp a.txt src/",
        "echo hi >> a.txt",
    ] {
        assert_eq!(
            bash(&a, line, Mode::AcceptEdits),
            Verdict::AllowConfined(crate::sandbox::Confinement::WorkspaceWrite { creates_at_top: false }),
            "{line}"
        );
    }
    for line in ["mv a.txt b.txt", "mkdir -p new/x", "mv src/z .", "cp -t . src/z"] {
        assert_eq!(
            bash(&a, line, Mode::AcceptEdits),
            Verdict::AllowConfined(crate::sandbox::Confinement::WorkspaceWrite { creates_at_top: true }),
            "{line}"
        );
    }
    // Backups are entries the command line does not name (`-S n` turns `.mcp.jso`'s backup
    // into `.mcp.json`).
    for line in [
        "cp -b -S n a.txt .mcp.jso",
        "mv --suffix=n -b a.txt .mcp.jso",
        "cp --backup a.txt src/",
    ] {
        assert!(is_ask(&bash(&a, line, Mode::AcceptEdits)), "{line}");
    }
    // A rule or bypass mode approves it as it is.
    assert_eq!(bash(&a, "cargo test -q", Mode::Default), Verdict::Allow);
    assert_eq!(bash(&a, "git status", Mode::BypassPermissions), Verdict::Allow);
    // A rule allows the command, not an environment that makes it run other programs.
    assert!(is_ask(&bash(&a, "RUSTC_WRAPPER=/tmp/x cargo test", Mode::Default)));
    assert_eq!(bash(&a, "RUST_BACKTRACE=1 cargo test", Mode::Default), Verdict::Allow);
}

#[test]
fn with_a_deny_rule_programs_keel_cannot_see_ask_even_in_bypass() {
    let (a, _d) = authorizer(&[], &[], &["Bash(rm:*)"]);
    for cmd in [
        "$(echo rm) -f x",
        "eval rm -f x",
        "x=rm; $x -f y",
        "echo x | xargs rm -f",
        "find . -name x -delete",
        "python3 -c 'import os; os.remove(\"x\")'",
    ] {
        let v = bash(&a, cmd, Mode::BypassPermissions);
        assert!(
            matches!(v, Verdict::Ask { hard: true, .. } | Verdict::Deny(_)),
            "{cmd}: {v:?}"
        );
    }
    assert!(is_deny(&bash(&a, "setsid rm -f x", Mode::BypassPermissions)));
    // Without deny rules bypass runs them.
    let (b, _d) = authorizer(&[], &[], &[]);
    assert!(is_allow(&bash(&b, "eval rm -f x", Mode::BypassPermissions)));
}

#[test]
fn disguised_credential_reads_and_escapes_are_not_approved() {
    let (a, d) = authorizer(&[], &[], &[]);
    let ssh = d.path().join("home/.ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), "k").unwrap();
    for cmd in [
        "cd -P ~/.ssh && cat id_rsa",
        "diff --from-file=$HOME/.ssh/id_rsa a",
        "git diff --no-index ~/.ssh/id_rsa a",
    ] {
        assert!(is_deny(&bash(&a, cmd, Mode::Default)), "{cmd}");
    }
    for cmd in [
        "echo ~/.ssh/id_rsa | xargs cat",
        "CDPATH=$HOME cd .ssh && cat id_rsa",
        "sort --files0-from=- < list",
    ] {
        assert!(is_ask(&bash(&a, cmd, Mode::Default)), "{cmd}");
    }
    for cmd in [
        "cp -t$HOME a",
        "cp --target-directory=/srv a",
        "echo /srv/x | xargs touch",
        "cp x/config .git",
    ] {
        assert!(is_ask(&bash(&a, cmd, Mode::AcceptEdits)), "{cmd}");
    }
}

#[test]
fn wrappers_code_strings_and_environment_cannot_hide_a_denied_program() {
    let (a, _d) = authorizer(&[], &[], &["Bash(rm:*)"]);
    for cmd in [
        "ionice rm x",
        "strace -o /dev/null rm x",
        "taskset 1 rm x",
        "runuser -u root -- rm x",
        "trap 'rm x' EXIT",
        "coproc rm x",
        "hash -p /bin/rm cat; cat x",
        "exec -a other rm x",
        "git -c alias.x='!rm x' x",
        "BASH_ENV=run.sh bash -c true",
        "rg --pre rm x",
    ] {
        let v = bash(&a, cmd, Mode::BypassPermissions);
        assert!(
            matches!(v, Verdict::Ask { hard: true, .. } | Verdict::Deny(_)),
            "{cmd}: {v:?}"
        );
    }
    // Commands that only mention the word stay as they were.
    for cmd in ["echo rm", "grep -n rm notes.txt", "git commit -m 'rm old files'"] {
        let v = bash(&a, cmd, Mode::BypassPermissions);
        assert!(is_allow(&v), "{cmd}: {v:?}");
    }
}

#[test]
fn file_commands_are_judged_where_their_paths_really_lead() {
    let (a, d) = authorizer(&[], &[], &[]);
    let w = cwd(&a);
    std::fs::create_dir_all(w.join("tpl/.claude")).unwrap();
    std::os::unix::fs::symlink(".mcp.json", w.join("cfg")).unwrap();
    std::os::unix::fs::symlink(".", w.join("up")).unwrap();
    let aws = d.path().join("home/.aws/sso");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(d.path().join("home/.aws/credentials"), "k").unwrap();
    std::os::unix::fs::symlink(&aws, w.join("sso")).unwrap();
    for cmd in [
        "cp -r tpl/. .",
        "cp -rT tpl .",
        "cp -r tpl/./ up",
        "touch cfg",
        "echo '{}' > cfg",
    ] {
        assert!(is_ask(&bash(&a, cmd, Mode::AcceptEdits)), "{cmd}");
    }
    for cmd in ["touch new.txt", "mkdir build", "cp -r tpl copy", "cp -r tpl/. copy"] {
        assert!(is_allow(&bash(&a, cmd, Mode::AcceptEdits)), "{cmd}");
    }
    // `sso/..` is the link target's parent: the credential file, not `./credentials`.
    assert!(is_deny(&bash(&a, "cat sso/../credentials", Mode::Default)));
    assert!(is_deny(&bash(
        &a,
        "jq -n --rawfile x ~/.aws/credentials '$x'",
        Mode::Default
    )));
    assert!(is_ask(&bash(&a, "jq -n 'import \"x\" as $x; $x'", Mode::Default)));
    assert!(is_allow(&bash(
        &a,
        "jq -n --arg x ~/.aws/credentials '$x'",
        Mode::Default
    )));
}

/// With a Bash deny rule, a program keel cannot identify — one that does not exist when the
/// line is checked, or a copy of a denied program under another name — asks, even in bypass.
#[test]
fn deny_rules_see_copies_of_denied_programs() {
    let (a, _d) = authorizer(&[], &[], &["Bash(rm:*)"]);
    let rm = ["/bin/rm", "/usr/bin/rm"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap();
    std::fs::copy(rm, cwd(&a).join("tidy")).unwrap();
    for line in [
        "./tidy -f x",
        "cp /bin/r[m] zz && ./zz -f x",
        "not-a-program-anywhere x",
    ] {
        assert!(is_ask(&bash(&a, line, Mode::BypassPermissions)), "{line}");
    }
    for line in ["ls -la", "git status", "cd . && pwd", "echo hi"] {
        assert!(is_allow(&bash(&a, line, Mode::BypassPermissions)), "{line}");
    }
}
