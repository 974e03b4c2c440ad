use super::*;
use crate::permissions::shell::parse;

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
    ] {
        assert!(d(s).is_none(), "{s}");
    }
}

#[test]
fn read_only_classification() {
    let ro = |s: &str| is_read_only(&parse(s).unwrap()[0]);
    assert!(ro("ls -la"));
    assert!(ro("git status"));
    assert!(ro("git -C sub log --oneline"));
    assert!(ro("find . -name '*.rs'"));
    assert!(ro("uniq a.txt"));
    for s in [
        "find . -delete",
        "find . -fprint0 out",
        "echo hi > f",
        "git branch -D x",
        "sed -n '1e touch /tmp/pwned' a.txt",
        "sed -n 1p a.txt",
        "git -c core.fsmonitor='touch /tmp/x' status",
        "git diff --output=/tmp/x",
        "rg --pre ./pre.sh x a.txt",
        "uniq a.txt out.txt",
        "tree -o out.txt",
        "sort --compress-program=sh a",
        "date -s 2020-01-01",
        "hostname evil",
        "file -C -m magic",
        "less a.txt",
        "rm x",
    ] {
        assert!(!ro(s), "{s}");
    }
}

#[test]
fn file_operands_skip_patterns_and_values() {
    let ops = |s: &str| -> Vec<String> {
        let c = &parse(s).unwrap()[0];
        file_operands(c).iter().map(|w| w.text.clone()).collect()
    };
    assert_eq!(ops("grep -n SECRET .env"), vec![".env"]);
    assert_eq!(ops("grep -e SECRET -r config"), vec!["config"]);
    assert_eq!(ops("head -n 5 notes.md"), vec!["notes.md"]);
    assert_eq!(ops("cut -d , -f 1 data.csv"), vec!["data.csv"]);
    assert_eq!(ops("jq .name package.json"), vec!["package.json"]);
    assert_eq!(ops("find src -name x"), vec!["src"]);
    assert_eq!(ops("echo /etc/passwd"), Vec::<String>::new());
    assert_eq!(ops("wc -l < input.txt"), vec!["input.txt"]);
}

#[test]
fn credentials_and_configuration() {
    let home = Some(Path::new("/home/u"));
    assert!(credential_reason(Path::new("/p/.env"), home).is_some());
    assert!(credential_reason(Path::new("/p/.env.local"), home).is_some());
    assert!(credential_reason(Path::new("/p/tls/server.key"), home).is_some());
    assert!(credential_reason(Path::new("/home/u/.ssh/config"), home).is_some());
    assert!(credential_reason(Path::new("/p/src/env.rs"), home).is_none());
    assert!(config_reason(Path::new("/p/.git/config"), home).is_some());
    assert!(config_reason(Path::new("/p/.git/hooks/pre-commit"), home).is_some());
    assert!(config_reason(Path::new("/p/.claude/settings.json"), home).is_some());
    assert!(config_reason(Path::new("/p/.keel/settings.local.json"), home).is_some());
    assert!(config_reason(Path::new("/home/u/.bashrc"), home).is_some());
    assert!(config_reason(Path::new("/p/src/main.rs"), home).is_none());
    assert!(config_reason(Path::new("/p/.github/workflows/ci.yml"), home).is_none());
}
