use super::*;
use crate::shell::parse::parse;

fn first(s: &str) -> SimpleCommand {
    parse(s).unwrap().remove(0)
}

fn observes(s: &str, strict: bool) -> bool {
    analyze(&first(s), strict).observes
}

fn reads(s: &str) -> Vec<String> {
    analyze(&first(s), false).reads.iter().map(|w| w.text.clone()).collect()
}

#[test]
fn ordinary_reading_commands_observe_in_both_modes() {
    for s in [
        "ls -la",
        "ls -1 src",
        "cat -n a.txt",
        "head -n 5 a.txt",
        "head -20 a.txt",
        "tail -f -n 3 log",
        "grep -rn TODO src",
        "rg -n --hidden foo",
        "rg --files",
        "wc -l a b",
        "sort -u -k 2 a.txt",
        "git status",
        "git status --short",
        "git -C sub log --oneline -n 5",
        "git log --oneline --graph --decorate",
        "git diff --stat HEAD~1",
        "git diff --cached",
        "git show HEAD:src/main.rs",
        "git branch -a",
        "git reflog",
        "find . -name '*.rs' -type f",
        "jq .name package.json",
        "LC_ALL=C sort a.txt",
        "date +%s",
        "echo hello",
        "cd src",
        "pwd",
    ] {
        assert!(observes(s, false), "jail: {s}");
        assert!(observes(s, true), "allow-list: {s}");
    }
}

#[test]
fn writes_and_programs_however_spelled_do_not_observe() {
    for s in [
        // Glued short options and GNU abbreviations.
        "sort -o$HOME/.bashrc a",
        "sort -uo out a",
        "sort --outp=out a",
        "sort --compress-prog=sh a",
        "sort --files0-from=- ",
        "sort -T /tmp a",
        "git grep --open-files=touch x",
        "git grep --open x",
        "git grep -Otouch x",
        "git diff --outp=/tmp/x",
        "git log --ext-diff -p",
        "git -c core.fsmonitor=x status",
        "git --config-env=core.pager=X log",
        "git reflog expire --expire=now --all",
        "git reflog delete HEAD@{1}",
        "git branch -D x",
        "git tag -d v1",
        "git remote add x y",
        "git stash drop",
        "rg --pre ./pre.sh x",
        "rg --pre=./pre.sh x",
        "rg -z x",
        "wc --files0-from=list",
        "uniq a.txt out.txt",
        "tree -o out.txt",
        "file -C -m magic",
        "date -s 2020-01-01",
        "date 010100002020",
        "hostname evil",
        "find . -delete",
        "find . -exec rm {} ;",
        "find . -fprint0 out",
        "md5sum -c sums",
        // Environment that makes git or anything else run programs.
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=x git status",
        "env GIT_CONFIG_COUNT=1 git status",
        "LD_PRELOAD=/tmp/x.so ls",
        "PAGER=sh git log",
        "less a.txt",
        "sed -n 1p a.txt",
        "awk 1 a.txt",
    ] {
        assert!(!observes(s, false), "jail: {s}");
        assert!(!observes(s, true), "allow-list: {s}");
    }
}

#[test]
fn the_allow_list_asks_about_what_only_the_jail_can_contain() {
    for s in [
        "ls --frobnicate",
        "cat -Q a",
        "grep -R secret .",
        "cd -P src",
        "git -p log",
        "git log --some-new-option",
        "xargs cat",
    ] {
        assert!(
            !observes(s, true) || analyze(&first(s), true).reads_unknown,
            "allow-list: {s}"
        );
    }
    assert!(observes("ls --frobnicate", false));
    assert!(observes("grep -R secret .", false));
    assert!(observes("cd -P src", false));
    assert!(analyze(&first("xargs cat"), false).reads_unknown);
}

#[test]
fn files_read_through_options_and_operands_are_named() {
    assert_eq!(reads("grep -n SECRET .env"), vec![".env"]);
    assert_eq!(reads("grep -e SECRET -r config"), vec!["config"]);
    assert_eq!(reads("grep -f ~/.ssh/id_rsa x"), vec!["~/.ssh/id_rsa", "x"]);
    assert_eq!(reads("grep -r x"), vec!["."]);
    assert_eq!(reads("head -n 5 notes.md"), vec!["notes.md"]);
    assert_eq!(reads("cut -d , -f 1 data.csv"), vec!["data.csv"]);
    assert_eq!(reads("jq .name package.json"), vec!["package.json"]);
    assert_eq!(reads("find src -name x"), vec!["src"]);
    assert_eq!(reads("echo /etc/passwd"), Vec::<String>::new());
    assert_eq!(reads("wc -l < input.txt"), vec!["input.txt"]);
    assert_eq!(reads("diff --from-file=~/.ssh/id_rsa a"), vec!["~/.ssh/id_rsa", "a"]);
    assert_eq!(reads("git diff --no-index /etc/hosts a"), vec!["/etc/hosts", "a"]);
    assert_eq!(reads("git -C /srv/other log"), vec!["/srv/other"]);
    assert_eq!(reads("git blame --contents=/tmp/x a.rs"), vec!["/tmp/x"]);
    assert_eq!(reads("cd ~/.ssh"), vec!["~/.ssh"]);
}

#[test]
fn file_commands_name_every_path_they_touch() {
    let paths = |s: &str| fs_paths(&first(s)).map(|v| v.iter().map(|w| w.text.clone()).collect::<Vec<_>>());
    assert_eq!(paths("mkdir -p a/b"), Some(vec!["a/b".to_string()]));
    assert_eq!(paths("cp -t$HOME x"), Some(vec!["x".to_string(), "$HOME".to_string()]));
    assert_eq!(
        paths("cp --target-directory=/srv a"),
        Some(vec!["a".to_string(), "/srv".to_string()])
    );
    assert_eq!(
        paths("mv --targ=/srv a"),
        Some(vec!["a".to_string(), "/srv".to_string()])
    );
    assert_eq!(paths("cp -rt /srv a"), Some(vec!["a".to_string(), "/srv".to_string()]));
    assert_eq!(
        paths("touch -r /etc/x y"),
        Some(vec!["y".to_string(), "/etc/x".to_string()])
    );
    assert_eq!(paths("touch -t 202001010000 y"), Some(vec!["y".to_string()]));
    assert_eq!(paths("cp --frobnicate a b"), None);
    assert_eq!(paths("xargs touch"), None);
    assert_eq!(paths("HOME=/srv cp a ~"), None);
    assert_eq!(paths("rm a"), None);
}

#[test]
fn programs_keel_cannot_see_are_named() {
    for s in [
        "xargs rm",
        "find . -delete",
        "find . -exec rm {} +",
        "python3 -c 'import os'",
        "perl -e 'unlink 1'",
        "node -e 'x'",
        "awk 'BEGIN{system(\"rm x\")}'",
        "sed 's/a/b/e' f",
    ] {
        assert!(hidden_program(&first(s)).is_some(), "{s}");
    }
    for s in [
        "rm x",
        "setsid rm x",
        "python3 script.py",
        "find . -name x",
        "git status",
    ] {
        assert!(hidden_program(&first(s)).is_none(), "{s}");
    }
    // setsid is looked through, so deny rules see the program it starts.
    assert_eq!(first("setsid -f rm x").text(), "rm x");
}
