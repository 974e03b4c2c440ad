use super::*;

fn touch(p: &Path) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, "x").unwrap();
}

#[test]
fn entries_are_paths_with_the_references_prefixes() {
    let base = Path::new("/proj/.claude");
    let home = dirs::home_dir().unwrap();
    assert_eq!(parse_entry("~/.kube", base).unwrap(), home.join(".kube"));
    assert_eq!(parse_entry("~", base).unwrap(), home);
    assert_eq!(parse_entry("//opt/sdk/", base).unwrap(), PathBuf::from("/opt/sdk"));
    assert_eq!(parse_entry("/opt/sdk/**", base).unwrap(), PathBuf::from("/opt/sdk"));
    assert_eq!(parse_entry("./data", base).unwrap(), base.join("data"));
    assert_eq!(parse_entry("/", base).unwrap(), PathBuf::from("/"));
    for bad in ["~/**.kdbx", "/etc/*.conf", "a?b", "  ", "~bob/.ssh"] {
        assert!(parse_entry(bad, base).is_err(), "{bad}");
    }
}

#[test]
fn settings_lists_add_up_and_a_pattern_is_an_error() {
    let t = tempfile::tempdir().unwrap();
    let keel = t.path().join("keel");
    let proj = t.path().join("proj");
    touch(&keel.join("settings.json"));
    std::fs::write(
        keel.join("settings.json"),
        r#"{"sandbox": {"filesystem": {"allowRead": ["/opt/a"], "denyRead": ["/opt/a/secret"]}}}"#,
    )
    .unwrap();
    touch(&proj.join(".keel/settings.json"));
    std::fs::write(
        proj.join(".keel/settings.json"),
        r#"{"sandbox": {"filesystem": {"denyRead": ["/srv/keys/**"]}}}"#,
    )
    .unwrap();
    let s = Settings::load(None, &keel, &proj, None).unwrap();
    let r = ReadSettings::from_settings(&s).unwrap();
    assert_eq!(r.allow, vec![PathBuf::from("/opt/a")]);
    assert_eq!(r.deny, vec![PathBuf::from("/opt/a/secret"), PathBuf::from("/srv/keys")]);
    let s = Settings::load(
        None,
        &keel,
        &proj,
        Some(r#"{"sandbox": {"filesystem": {"denyRead": ["~/**.kdbx"]}}}"#),
    )
    .unwrap();
    let e = ReadSettings::from_settings(&s).unwrap_err().to_string();
    assert!(e.contains("denyRead") && e.contains("pattern"), "{e}");
}

/// The home is private but for toolchains and plain configuration; credential files inside
/// allowed trees stay hidden, in every home that has something readable; allowRead can name a
/// credential location, denyRead wins.
#[test]
fn homes_are_private_but_for_toolchains_and_plain_configuration() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().canonicalize().unwrap().join("home");
    for f in [
        ".cargo/credentials.toml",
        ".cargo/registry/x",
        ".npmrc",
        ".ssh/id_rsa",
        ".ssh/known_hosts",
        ".gitconfig",
        ".config/git/config",
        ".config/git/credentials",
        ".local/lib/python3.11/site-packages/m.py",
        ".keel/projects/p/s/tool-results/a.txt",
        ".keel/projects/p/s/subagents/agent-1/tool-results/b.txt",
        ".keel/projects/p/s/mcp-logs/server.log",
        ".keel/projects/p/memory/MEMORY.md",
    ] {
        touch(&home.join(f));
    }
    let work = t.path().canonicalize().unwrap().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let settings = ReadSettings {
        allow: vec![
            home.join(".npmrc"),
            home.join(".ssh/known_hosts"),
            PathBuf::from("/opt/extra"),
        ],
        deny: vec![home.join(".cargo/registry")],
    };
    let session = home.join(".keel/projects/p/s");
    let handed = Handed {
        session_dir: Some(session.clone()),
        paths: vec![home.join(".keel/projects/p/memory")],
    };
    let scope = ReadScope::with_env(Some(&home), Some(&home.join(".keel")), settings, handed, &|_| None);
    let l = scope.lists(std::slice::from_ref(&work));
    for p in [
        home.clone(),
        PathBuf::from("/root"),
        home.join(".keel"),
        home.join(".claude"),
    ] {
        assert!(l.private.contains(&p), "{p:?} private: {:?}", l.private);
    }
    for p in [
        work.clone(),
        home.join(".cargo"),
        home.join(".rustup"),
        home.join(".gitconfig"),
        home.join(".config/git/config"),
        home.join(".local/lib/python3.11"),
        home.join(".keel/projects/p/memory"),
        session.join("hook-env.sh"),
        session.join("tool-results"),
        session.join("subagents/agent-1/tool-results"),
        PathBuf::from("/opt/extra"),
        home.join(".npmrc"),
        home.join(".ssh/known_hosts"),
    ] {
        assert!(l.readable.contains(&p), "{p:?} readable: {:?}", l.readable);
    }
    for p in [
        home.join(".config/git"),
        home.join(".config"),
        home.join(".local/lib"),
        session.join("mcp-logs"),
        home.join(".keel/projects"),
    ] {
        assert!(!l.readable.contains(&p), "{p:?} must not be readable");
    }
    // Credentials inside allowed trees, and the settings' deny.
    for p in [
        home.join(".cargo/credentials.toml"),
        home.join(".config/git/credentials"),
        home.join(".cargo/registry"),
    ] {
        assert!(l.hidden.contains(&p), "{p:?} hidden: {:?}", l.hidden);
    }
    // Named in allowRead: readable; something inside named: the rest stays closed.
    assert!(!l.hidden.contains(&home.join(".npmrc")));
    assert!(!l.hidden.contains(&home.join(".ssh")) && l.private.contains(&home.join(".ssh")));
}

#[test]
fn a_program_on_path_in_a_home_brings_its_toolchain() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().canonicalize().unwrap();
    let dirs = [
        home.join(".pyenv/shims"),
        home.join("bin"),
        home.clone(),
        PathBuf::from("/usr/bin"),
    ];
    let path = std::env::join_paths(&dirs).unwrap();
    let env = |k: &str| match k {
        "PATH" => Some(path.clone()),
        "CARGO_HOME" => Some("/opt/cargo".into()),
        // Too broad to open through a variable.
        "GOPATH" => Some(home.join(".local").into_os_string()),
        _ => None,
    };
    let scope = ReadScope::with_env(Some(&home), None, ReadSettings::default(), Handed::default(), &env);
    let l = scope.lists(&[]);
    for p in [home.join(".pyenv"), home.join("bin"), PathBuf::from("/opt/cargo")] {
        assert!(l.readable.contains(&p), "{p:?}: {:?}", l.readable);
    }
    assert!(!l.readable.contains(&home), "a home on PATH does not open the home");
    assert!(!l.readable.contains(&home.join(".local")), "{:?}", l.readable);
    assert!(!l.readable.contains(&home.join(".pyenv/shims")));
}
