use super::*;

const JEST: &str = "// Jest Snapshot v1, https://goo.gl/fbAQLP\n\nexports[`adds 1`] = `3`;\n\nexports[`renders 1`] = `\n<div>\n  \\`quoted\\`\n</div>\n`;\n";

#[test]
fn snapshot_files_by_convention() {
    for p in [
        "__tests__/__snapshots__/x.test.js.snap",
        "src/__snapshots__/a.spec.ts.snap",
        "tests/snapshots/it__adds.snap",
        "tests/__snapshots__/test_a.ambr",
        "tests/__snapshots__/test_a/test_b.json",
    ] {
        assert!(is_snapshot(Path::new(p)), "{p}");
    }
    for p in ["tests/snapshots/it__adds.snap.new", "src/app.py", "snapshots.md"] {
        assert!(!is_snapshot(Path::new(p)), "{p}");
    }
}

#[test]
fn jest_entries_changed_removed_and_added() {
    assert_eq!(
        entries(JEST),
        vec![
            ("adds 1".to_string(), "3".to_string()),
            ("renders 1".to_string(), "\n<div>\n  \\`quoted\\`\n</div>\n".to_string())
        ]
    );
    assert_eq!(changed(JEST, JEST), 0);
    assert_eq!(changed(JEST, &JEST.replace("`3`", "`4`")), 1, "a value rewritten");
    let without = JEST.replace("exports[`adds 1`] = `3`;\n", "");
    assert_eq!(changed(JEST, &without), 1, "an entry removed");
    assert_eq!(changed(JEST, ""), 2, "the file removed");
    let more = format!("{JEST}\nexports[`subtracts 1`] = `1`;\n");
    assert_eq!(changed(JEST, &more), 0, "a new entry is no weakening");
    assert_eq!(changed("", JEST), 0, "a new file is no weakening");
}

#[test]
fn insta_and_syrupy_entries() {
    let insta = "---\nsource: tests/it.rs\nexpression: add(1, 2)\n---\n3\n";
    let moved = "---\nsource: tests/it.rs\nassertion_line: 12\nexpression: add(1, 2)\n---\n3\n";
    assert_eq!(changed(insta, moved), 0, "the header is metadata");
    assert_eq!(changed(insta, &insta.replace("---\n3\n", "---\n4\n")), 1);
    let ambr = "# serializer version: 1\n# name: test_add\n  3\n# ---\n# name: test_sub\n  1\n# ---\n";
    assert_eq!(changed(ambr, ambr), 0);
    assert_eq!(changed(ambr, &ambr.replace("  3\n", "  4\n")), 1);
    assert_eq!(
        changed("{\"a\": 1}\n", "{\"a\": 2}\n"),
        1,
        "any other snapshot: the whole file"
    );
}
