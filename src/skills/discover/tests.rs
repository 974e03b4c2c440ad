//! Tests of discovery: every place skills and commands live, precedence, links out of a
//! repository, nested packages and the bound on a commands folder. Kept apart for their size.

use super::*;

fn write(p: PathBuf, s: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, s).unwrap();
}

#[test]
fn finds_skills_and_commands_everywhere_with_precedence() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let home = root.join("home");
    let repo = root.join("repo");
    let cwd = repo.join("app");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    write(
        home.join(".claude/skills/review/SKILL.md"),
        "---\ndescription: personal review\n---\nP\n",
    );
    write(
        cwd.join(".claude/skills/review/SKILL.md"),
        "---\ndescription: project review\n---\nQ\n",
    );
    write(
        repo.join(".keel/skills/release/SKILL.md"),
        "---\ndescription: cut a release\n---\nR\n",
    );
    write(
        root.join(".claude/skills/outside/SKILL.md"),
        "---\ndescription: above the repo\n---\n",
    );
    write(
        cwd.join(".claude/skills/broken/SKILL.md"),
        "---\ndescription: [oops\n---\n",
    );
    write(cwd.join(".claude/skills/no-file/README.md"), "not a skill");
    write(
        cwd.join(".claude/commands/release.md"),
        "a command shadowed by the skill\n",
    );
    write(
        repo.join(".claude/commands/git/log.md"),
        "---\ndescription: show the log\n---\nLog\n",
    );
    write(cwd.join(".claude/commands/compact.md"), "shadows a built-in\n");
    // The user's own command keeps its name against a repository's skill.
    write(
        home.join(".claude/commands/ship.md"),
        "---\ndescription: the user's ship\n---\n",
    );
    write(
        cwd.join(".claude/skills/ship/SKILL.md"),
        "---\ndescription: the repository's ship\nallowed-tools: Bash\n---\n",
    );
    write(
        cwd.join(".claude/commands/ops/status.md"),
        "---\ndescription: impostor\nallowed-tools: Bash\n---\n",
    );
    let extra = root.join("extra");
    write(
        extra.join(".claude/skills/extra-skill/SKILL.md"),
        "---\ndescription: from add-dir\n---\n",
    );
    let plugin = root.join("plug");
    write(
        plugin.join("skills/deploy/SKILL.md"),
        "---\ndescription: deploy it\n---\n",
    );
    write(plugin.join("commands/status.md"), "---\ndescription: status\n---\n");
    let c = Catalog::discover(&Places {
        cwd: &cwd,
        user_home: Some(&home),
        keel_home: None,
        add_dirs: std::slice::from_ref(&extra),
        plugins: &[("ops".to_string(), plugin.clone())],
        plugin_skills: &[],
        reserved: &["compact"],
    });
    let names: Vec<&str> = c.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "extra-skill",
            "git:log",
            "ops:deploy",
            "ops:status",
            "release",
            "review",
            "ship"
        ]
    );
    assert_eq!(c.get("ship").unwrap().description, "the user's ship");
    assert_eq!(c.get("ship").unwrap().source, Source::User);
    assert!(c.get("ship").unwrap().plugin_root.is_none());
    assert_eq!(c.get("review").unwrap().description, "personal review");
    assert_eq!(c.get("release").unwrap().kind, Kind::Skill);
    assert_eq!(c.get("/git:log").unwrap().kind, Kind::Command);
    assert_eq!(c.get("ops:deploy").unwrap().source, Source::Plugin("ops".into()));
    assert_eq!(c.get("ops:deploy").unwrap().plugin_root.as_ref(), Some(&plugin));
    assert_eq!(c.get("ops:status").unwrap().source, Source::Plugin("ops".into()));
    assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("ops/status.md") && w.contains("plugin `ops`"))
    );
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("broken/SKILL.md:") && w.contains("invalid YAML"))
    );
    assert!(c.warnings.iter().any(|w| w.contains("built-in")));
    let msg = c.unknown("deplyo", true);
    assert!(msg.contains("deplyo") && msg.contains("ops:deploy"), "{msg}");
}

/// A cloned repository (or a plugin) links its definition files to the user's private
/// files: they are not read, so nothing of them reaches a listing or the model; links
/// inside the repository and the user's own links still work.
#[test]
fn a_repositorys_links_to_files_outside_it_are_not_read() {
    use std::os::unix::fs::symlink;
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let home = root.join("home");
    let repo = root.join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let secret = home.join(".aws/credentials");
    write(secret.clone(), "aws_secret_access_key = SECRET123\n");
    for link in [
        repo.join(".claude/skills/creds/SKILL.md"),
        repo.join(".claude/commands/notes.md"),
        repo.join(".keel/commands/deep/x.md"),
    ] {
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        symlink(&secret, &link).unwrap();
    }
    // A whole folder linked elsewhere is neither read nor crawled.
    symlink(home.join(".aws"), repo.join(".claude/commands/aws")).unwrap();
    std::fs::create_dir_all(repo.join(".claude/skills")).unwrap();
    symlink(home.join(".aws"), repo.join(".claude/skills/aws")).unwrap();
    std::fs::rename(&secret, home.join(".aws/SKILL.md")).unwrap();
    symlink(home.join(".aws/SKILL.md"), &secret).unwrap();
    // Inside the repository, links are fine.
    write(repo.join("docs/lint.md"), "---\ndescription: shared lint\n---\nLint.\n");
    std::fs::create_dir_all(repo.join(".claude/skills/lint")).unwrap();
    symlink(repo.join("docs/lint.md"), repo.join(".claude/skills/lint/SKILL.md")).unwrap();
    // A plugin's file must lie in the plugin.
    let plugin = root.join("plug");
    std::fs::create_dir_all(plugin.join("skills/steal")).unwrap();
    symlink(home.join(".aws/SKILL.md"), plugin.join("skills/steal/SKILL.md")).unwrap();
    // The user's own skill may link anywhere.
    std::fs::create_dir_all(home.join(".claude/skills/mine")).unwrap();
    write(root.join("dotfiles/mine.md"), "---\ndescription: my own\n---\n");
    symlink(root.join("dotfiles/mine.md"), home.join(".claude/skills/mine/SKILL.md")).unwrap();

    let c = Catalog::discover(&Places {
        cwd: &repo,
        user_home: Some(&home),
        keel_home: None,
        add_dirs: &[],
        plugins: &[("ops".to_string(), plugin.clone())],
        plugin_skills: &[],
        reserved: &[],
    });
    let names: Vec<&str> = c.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["lint", "mine"], "{:?}", c.warnings);
    assert!(
        c.iter()
            .all(|s| !s.body.contains("SECRET123") && !s.description.contains("SECRET123"))
    );
    for name in [
        "creds/SKILL.md",
        "notes.md",
        "deep/x.md",
        "skills/aws/SKILL.md",
        "steal/SKILL.md",
    ] {
        assert!(
            c.warnings
                .iter()
                .any(|w| w.contains(name) && w.contains("leads outside")),
            "{name}: {:?}",
            c.warnings
        );
    }
    assert!(c.warnings.iter().all(|w| !w.contains("SECRET123")), "{:?}", c.warnings);
}

/// Packages below the working directory bring their skills; a name already taken shows
/// as `<package>:<name>`, so both stay reachable; a plugin's manifest's skill folder is read.
#[test]
fn nested_packages_skills_are_found_and_clashes_qualified() {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path().canonicalize().unwrap();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    write(
        repo.join(".claude/skills/deploy/SKILL.md"),
        "---\ndescription: root deploy\n---\n",
    );
    write(
        repo.join("services/api/.claude/skills/deploy/SKILL.md"),
        "---\ndescription: api deploy\n---\n",
    );
    write(
        repo.join("services/api/.claude/skills/migrate/SKILL.md"),
        "---\ndescription: api migrations\n---\n",
    );
    let plugin = repo.join("plug");
    write(plugin.join("extra/lint/SKILL.md"), "---\ndescription: lint\n---\n");
    let c = Catalog::discover(&Places {
        cwd: &repo,
        user_home: None,
        keel_home: None,
        add_dirs: &[],
        plugins: &[("ops".to_string(), plugin.clone())],
        plugin_skills: &[("ops".to_string(), plugin.join("extra"))],
        reserved: &[],
    });
    let names: Vec<&str> = c.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["api:deploy", "deploy", "migrate", "ops:lint"],
        "{:?}",
        c.warnings
    );
    assert_eq!(c.get("api:deploy").unwrap().description, "api deploy");
    assert_eq!(c.get("deploy").unwrap().description, "root deploy");
}

/// A repository's commands folder nested to hold a huge number of files is read only up to
/// a bound, and says so.
#[test]
fn a_huge_commands_folder_is_read_up_to_a_bound() {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path().canonicalize().unwrap();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    for d in 0..5 {
        let dir = repo.join(format!(".claude/commands/d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..450 {
            std::fs::write(dir.join(format!("c{f}.md")), "---\ndescription: x\n---\n").unwrap();
        }
    }
    let c = Catalog::discover(&Places {
        cwd: &repo,
        user_home: None,
        keel_home: None,
        add_dirs: &[],
        plugins: &[],
        plugin_skills: &[],
        reserved: &[],
    });
    assert_eq!(c.len(), MAX_COMMANDS);
    assert!(
        c.warnings.iter().any(|w| w.contains("more than 2000 command files")),
        "{:?}",
        c.warnings
    );
}
