use std::path::{Path, PathBuf};

use super::*;

fn texts(s: &str) -> Vec<String> {
    parse(s).unwrap().iter().map(SimpleCommand::text).collect()
}

#[test]
fn splits_compound_commands() {
    assert_eq!(texts("echo ok && rm -rf x"), vec!["echo ok", "rm -rf x"]);
    assert_eq!(
        texts("a || b; c | d |& e & f\ng"),
        vec!["a", "b", "c", "d", "e", "f", "g"]
    );
}

#[test]
fn quotes_and_escapes() {
    assert_eq!(
        texts(r#"git commit -m "fix: a && b" "#),
        vec!["git commit -m fix: a && b"]
    );
    assert_eq!(texts("echo 'x;y' a\\ b"), vec!["echo x;y a b"]);
}

#[test]
fn wrappers_and_assignments_are_looked_through() {
    assert_eq!(texts("timeout 30 npm test"), vec!["npm test"]);
    assert_eq!(texts("timeout -s KILL 5s cargo build"), vec!["cargo build"]);
    assert_eq!(texts("env FOO=1 BAR=2 make check"), vec!["make check"]);
    assert_eq!(texts("RUST_LOG=debug nice -n 10 cargo run"), vec!["cargo run"]);
    assert_eq!(texts("nohup time stdbuf -oL ./run.sh"), vec!["./run.sh"]);
    assert_eq!(texts("xargs rm"), vec!["rm"]);
    assert_eq!(texts("exec rm x"), vec!["rm x"]);
    assert_eq!(texts("command -v git"), vec!["command -v git"]);
}

#[test]
fn nested_shells_are_read_like_the_outer_line() {
    assert_eq!(texts("sh -c 'rm -f f'"), vec!["rm -f f"]);
    assert_eq!(
        texts("bash -lc \"echo a && git reset --hard\""),
        vec!["echo a", "git reset --hard"]
    );
    assert_eq!(texts("timeout 5 sh -c 'sh -c \"touch x\"'"), vec!["touch x"]);
    assert!(parse("bash script.sh").is_err(), "a script file cannot be checked");
    assert!(parse("sh -c \"$CMD\"").is_err());
    assert!(
        parse("sh -c 'sh -c \"sh -c \\\"sh -c x\\\"\"'").is_err(),
        "nesting is bounded"
    );
}

#[test]
fn unknown_constructs_are_refused() {
    for s in [
        "echo $(rm -rf /)",
        "echo `id`",
        "(cd x && rm y)",
        "diff <(ls a) <(ls b)",
        "cat <<EOF\nhi\nEOF",
        "if true; then rm x; fi",
        "for f in *; do rm $f; done",
        "echo \"$(whoami)\"",
        "{ rm x; }",
        "eval rm x",
        "source env.sh",
        "env -S 'touch /tmp/pwned' ls",
        "$EDITOR notes.txt",
    ] {
        assert!(parse(s).is_err(), "{s}");
    }
}

#[test]
fn redirections_are_collected() {
    let p = parse("echo hi > out.txt 2>&1; cat < in.txt >> log 2> err.txt; ls &> all.txt").unwrap();
    assert_eq!(p[0].text(), "echo hi");
    let t = |ws: &[Word]| ws.iter().map(|w| w.text.clone()).collect::<Vec<_>>();
    assert_eq!(t(&p[0].writes), vec!["out.txt"]);
    assert_eq!(t(&p[1].reads), vec!["in.txt"]);
    assert_eq!(t(&p[1].writes), vec!["log", "err.txt"]);
    assert_eq!(t(&p[2].writes), vec!["all.txt"]);
    let q = parse("cmd >/dev/null 2>&1").unwrap();
    assert_eq!(t(&q[0].writes), vec!["/dev/null"]);
    let r = parse("echo x >> $HOME/.profile").unwrap();
    assert!(r[0].writes[0].dynamic);
}

#[test]
fn expansions_are_marked() {
    let p = &parse("cat '$HOME' \"$HOME\" ~/x *.rs plain").unwrap()[0];
    let dynamic: Vec<bool> = p.args().iter().map(|w| w.dynamic).collect();
    assert_eq!(dynamic, vec![false, true, true, true, false]);
}

#[test]
fn comments_are_ignored() {
    assert_eq!(texts("ls # && rm -rf /"), vec!["ls"]);
}

#[test]
fn rule_texts_see_through_paths_and_sudo() {
    let p = &parse("/bin/rm -f x").unwrap()[0];
    assert_eq!(p.rule_texts(), vec!["/bin/rm -f x", "rm -f x"]);
    let q = &parse("sudo -n rm -rf /srv").unwrap()[0];
    assert!(q.rule_texts().contains(&"rm -rf /srv".to_string()));
}

#[test]
fn words_resolve_to_paths_where_keel_can_tell() {
    let d = tempfile::tempdir().unwrap();
    let cwd = d.path();
    std::fs::write(cwd.join(".env"), "x").unwrap();
    std::fs::write(cwd.join("a.rs"), "x").unwrap();
    std::fs::write(cwd.join("b.rs"), "x").unwrap();
    let home = Path::new("/home/u");
    let word = |s: &str| parse(&format!("cat {s}")).unwrap()[0].args()[0].clone();
    assert_eq!(
        resolve_word(&word("x.txt"), cwd, Some(home)),
        Resolved::Paths(vec![cwd.join("x.txt")])
    );
    assert_eq!(
        resolve_word(&word("~/.ssh/id_rsa"), cwd, Some(home)),
        Resolved::Paths(vec![PathBuf::from("/home/u/.ssh/id_rsa")])
    );
    assert_eq!(
        resolve_word(&word("$HOME/.aws/credentials"), cwd, Some(home)),
        Resolved::Paths(vec![PathBuf::from("/home/u/.aws/credentials")])
    );
    assert_eq!(
        resolve_word(&word(".en*"), cwd, Some(home)),
        Resolved::Paths(vec![cwd.join(".env")])
    );
    assert_eq!(
        resolve_word(&word("*.rs"), cwd, Some(home)),
        Resolved::Paths(vec![cwd.join("a.rs"), cwd.join("b.rs")])
    );
    assert_eq!(resolve_word(&word("$SECRET_FILE"), cwd, Some(home)), Resolved::Unknown);
    assert_eq!(resolve_word(&word("*/.env"), cwd, Some(home)), Resolved::Unknown);
}
