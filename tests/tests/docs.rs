//! The repository stands alone: the specs it implements ship in `docs/spec/` (identical
//! to the binding copies next to the repository, where those exist), and every relative
//! link in its Markdown resolves to a file inside it.

use std::path::{Component, Path, PathBuf};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_shipped_specs_are_the_binding_ones() {
    let root = repository();
    assert_eq!(
        read(&root.join("docs/spec/tiles.md")),
        read(&root.join("core/data/tiles.md")),
        "the engine parses core/data/tiles.md: it must be the shipped tiles.md"
    );
    let binding = root.join("../shared/spec");
    if !binding.is_dir() {
        eprintln!(
            "SKIPPED: no binding specs at {} to compare with",
            binding.display()
        );
        return;
    }
    for name in ["rules.md", "notation.md", "tiles.md"] {
        assert!(
            read(&root.join("docs/spec").join(name)) == read(&binding.join(name)),
            "docs/spec/{name} differs from the binding {name}: copy it again"
        );
    }
}

/// Every Markdown file of the repository, outside build output and the corpus.
fn markdown_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("a readable directory")
        .flatten()
    {
        let path = entry.path();
        let name = entry.file_name();
        let skipped = [".git", "target", "node_modules"];
        if path.is_dir() && !skipped.iter().any(|s| name == *s) {
            markdown_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "md") {
            found.push(path);
        }
    }
}

/// The targets of inline Markdown links `[text](target)` in `text`.
fn link_targets(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            let end = rest.find(')')?;
            Some(
                rest[..end]
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

/// `path` with `.` and `..` resolved lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut parts: Vec<Component> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if matches!(parts.last(), Some(Component::Normal(_))) => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.iter().collect()
}

#[test]
fn every_relative_link_stays_inside_the_repository() {
    let root = normalize(&std::fs::canonicalize(repository()).unwrap());
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(files.len() >= 5, "found the Markdown files: {files:?}");
    for file in files {
        for target in link_targets(&read(&file)) {
            let local = target.split('#').next().unwrap_or_default();
            if local.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let resolved = normalize(&file.parent().unwrap().join(local));
            assert!(
                resolved.starts_with(&root) && resolved.exists(),
                "{} links to {target}, which is not a file of the repository",
                file.display()
            );
        }
    }
}
