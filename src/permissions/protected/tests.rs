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

/// The destructive check as the permission layer calls it, in a real directory (whether a
/// name of `git checkout NAME` exists decides whether it is a path).
fn d_in(dir: &Path, s: &str) -> Option<String> {
    let c = &parse(s).unwrap()[0];
    destructive(c, Some(dir), dir, Some(Path::new("/home/u")))
}

#[test]
fn git_commands_that_overwrite_the_working_tree() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path();
    std::fs::create_dir_all(w.join("src")).unwrap();
    std::fs::write(w.join("src/lib.rs"), "x").unwrap();
    std::fs::create_dir_all(w.join("sub/inner")).unwrap();
    for s in [
        "git checkout -- .",
        "git checkout .",
        "git checkout -- src/lib.rs",
        "git checkout HEAD -- src/lib.rs",
        "git checkout HEAD~1 src/lib.rs",
        "git checkout main src missing.txt",
        "git checkout src/lib.rs",
        "git checkout src",
        "git checkout '*.rs'",
        "git checkout :/",
        "git checkout --ours -- a.txt",
        "git checkout --pathspec-from-file=list.txt",
        "git -C sub checkout -- .",
        "git -C sub/inner checkout ..",
        "git -c core.x=1 checkout -- .",
        "git checkout -qf main",
        "git checkout --forc",
        "git checkout -f -b topic",
        "git switch -fq main",
        "git switch --discard main",
        "git restore src/lib.rs",
        "git restore .",
        "git restore -s HEAD~2 src/lib.rs",
        "git restore --source=HEAD -- a",
        "git restore --staged --worktree src/lib.rs",
        "git restore -SW src/lib.rs",
        "git restore --staged --wor a",
        "git restore --staged --no-staged a",
        "git restore -p a",
        "git commit --amend",
        "git commit --amend --no-edit",
        "git commit -a --amen -m x",
        "git -C sub commit --amend -m x",
        "git reset --har",
        "git reset --h HEAD",
        "git clean --forc -d",
        "terraform -chdir=infra destroy",
        "terraform destroy -target=aws_instance.web",
        "terraform apply -destroy",
        "terraform apply --destroy -auto-approve",
        "terraform apply -destroy=true",
        "tofu -chdir=x apply -destroy",
        "pulumi down",
        "pulumi -s dev destroy",
        "xargs git checkout --",
        "xargs git checkout",
        "xargs -0 git restore",
        "git -c alias.x='checkout -- .' x",
        "git --config-env=alias.y=EVIL y",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='checkout -- .' git x",
    ] {
        assert!(d_in(w, s).is_some(), "{s}");
    }
    for s in [
        "git checkout main",
        "git checkout -b feature",
        "git checkout -b feature origin/main",
        "git checkout -B feature",
        "git checkout -qb src",
        "git checkout --orphan src",
        "git checkout -t origin/topic",
        "git checkout --detach HEAD~1",
        "git checkout -",
        "git checkout main --",
        "git checkout missing-branch",
        "git switch main",
        "git switch -c src",
        "git restore --staged src/lib.rs",
        "git restore -S src/lib.rs",
        "git restore --staged --no-worktree src/lib.rs",
        "git restore --worktree --no-worktree --staged a",
        "git commit -m amend",
        "git commit --fixup=amend:HEAD",
        "git commit -- --amend",
        "git reset --soft HEAD~1",
        "git clean -n",
        "terraform plan -destroy",
        "terraform apply",
        "terraform apply -destroy=false",
        "terraform -chdir=x plan",
        "pulumi up",
    ] {
        assert!(d_in(w, s).is_none(), "{s}");
    }
}

#[test]
fn git_checkout_of_a_name_in_an_unknown_directory_counts_as_paths() {
    let c = &parse("git checkout main").unwrap()[0];
    assert!(destructive(c, None, Path::new("/w/proj"), None).is_some());
    let c = &parse("git checkout -- .").unwrap()[0];
    assert!(destructive(c, None, Path::new("/w/proj"), None).is_some());
    let c = &parse("git checkout -b topic").unwrap()[0];
    assert!(destructive(c, None, Path::new("/w/proj"), None).is_none());
}
