use super::*;
use crate::shell::parse::parse;

fn d(s: &str) -> Option<String> {
    let c = &parse(s).unwrap()[0];
    destructive(
        c,
        Some(Path::new("/w/proj")),
        Path::new("/w/proj"),
        Some(Path::new("/home/u")),
    )
}

#[test]
fn destructive_commands() {
    for s in [
        "git reset --hard HEAD~1",
        "git clean -fd",
        "git clean -xdf",
        "git push --force origin main",
        "git push -f",
        "git push origin +main",
        "rm -rf /",
        "rm -rf ~",
        "rm -fr $HOME",
        "rm -r -f .",
        "rm -rf ..",
        "rm -rf /w/proj",
        "/bin/rm -rf /w/proj",
        "sudo rm -rf /",
        "rm -rf $BUILD_DIR",
        "terraform destroy -auto-approve",
        "pulumi destroy",
        "cdk destroy",
        "git reflog expire --expire=now --all",
        "git reflog delete HEAD@{1}",
        "git stash clear",
        "git stash drop",
        "git prune",
        "git gc --prune=now",
        "git branch -D topic",
        "git branch --delete --force topic",
        "git checkout -f main",
        "git switch --discard-changes main",
    ] {
        assert!(d(s).is_some(), "{s}");
    }
    for s in [
        "git reset HEAD file",
        "git clean -n",
        "git push origin feature",
        "git push --force origin feature",
        "rm -rf target",
        "rm -f /tmp/x",
        "terraform plan",
        "git reflog",
        "git stash list",
        "git branch -d done",
        "git checkout main",
        "git gc",
    ] {
        assert!(d(s).is_none(), "{s}");
    }
}

#[test]
fn credentials_and_configuration() {
    let home = Some(Path::new("/home/u"));
    assert!(credential_reason(Path::new("/p/.env"), home).is_some());
    assert!(credential_reason(Path::new("/p/.env.local"), home).is_some());
    assert!(credential_reason(Path::new("/p/tls/server.key"), home).is_some());
    assert!(credential_reason(Path::new("/home/u/.ssh/config"), home).is_some());
    assert!(credential_reason(Path::new("/p/src/env.rs"), home).is_none());
    // Other tools' logins, browser profiles and shell history.
    for p in [
        "/home/u/.codex/auth.json",
        "/home/u/.mozilla/firefox/x/cookies.sqlite",
        "/home/u/.bash_history",
    ] {
        assert!(credential_reason(Path::new(p), home).is_some(), "{p}");
    }
    // A PATH directory and tool configuration in the home count as configuration.
    assert!(config_reason(Path::new("/home/u/.local/bin/git"), home).is_some());
    assert!(config_reason(Path::new("/home/u/.cargo/config.toml"), home).is_some());
    assert!(config_reason(Path::new("/p/.git/config"), home).is_some());
    assert!(config_reason(Path::new("/p/.git/hooks/pre-commit"), home).is_some());
    assert!(config_reason(Path::new("/p/.claude/settings.json"), home).is_some());
    assert!(config_reason(Path::new("/p/.keel/settings.local.json"), home).is_some());
    assert!(config_reason(Path::new("/home/u/.bashrc"), home).is_some());
    assert!(config_reason(Path::new("/p/src/main.rs"), home).is_none());
    assert!(config_reason(Path::new("/p/.github/workflows/ci.yml"), home).is_none());
    // `.git` itself (a file copied into it becomes `.git/config`), everything inside it, MCP
    // server lists and the user's git and ssh configuration.
    assert!(config_reason(Path::new("/p/.git"), home).is_some());
    assert!(config_reason(Path::new("/p/.git/commondir"), home).is_some());
    assert!(config_reason(Path::new("/p/.mcp.json"), home).is_some());
    assert!(config_reason(Path::new("/home/u/.gitconfig"), home).is_some());
    assert!(config_reason(Path::new("/home/u/.ssh/config"), home).is_some());
    assert!(config_reason(Path::new("/p/.gitignore"), home).is_none());
    assert!(credential_reason(Path::new("/home/u/.gnupg/x"), home).is_some());
    assert!(credential_reason(Path::new("/home/u/.netrc"), home).is_some());
    assert!(credential_reason(Path::new("/home/u/.config/gcloud/creds.db"), home).is_some());
}
