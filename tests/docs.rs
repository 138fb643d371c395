//! Links in README.md and docs/ resolve: every relative link names a file that exists, and every
//! `#anchor` a heading of its target (as mdBook and GitHub make anchors of headings); every page
//! under docs/src is in docs/src/SUMMARY.md (mdBook builds only those). The site itself is built by
//! tests/cluster/mdbook.sh (tests/run-all.sh).
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The Markdown files whose links are checked: README.md and every .md under docs/.
fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![PathBuf::from("README.md")];
    walk(Path::new("docs"), &mut out);
    out.sort();
    out
}

/// `text` without fenced code blocks and inline code spans (their brackets are no links).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if fenced {
            out.push('\n');
            continue;
        }
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// The targets of the inline links `[text](target)` of `text` (code left out).
fn links(text: &str) -> Vec<String> {
    let p = prose(text);
    let mut out = Vec::new();
    let mut rest = p.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        out.push(target.to_string());
        rest = &rest[end..];
    }
    out
}

/// The anchor of a heading, as mdBook (and GitHub) make it: the heading's text without its
/// Markdown, lower case, spaces to `-`, other punctuation than `-` and `_` dropped.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // [text](target) -> text
    while let Some(i) = rest.find('[') {
        text.push_str(&rest[..i]);
        rest = &rest[i + 1..];
        if let Some(close) = rest.find("](") {
            text.push_str(&rest[..close]);
            let after = &rest[close + 2..];
            rest = after.find(')').map_or("", |e| &after[e + 1..]);
        }
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated heading's get `-1`, `-2`, …).
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut id = base.clone();
        let mut n = 0;
        while seen.contains(&id) {
            n += 1;
            id = format!("{base}-{n}");
        }
        seen.insert(id);
    }
    seen
}

/// What is wrong with the link `target` of the file `from`, if anything.
fn broken(from: &Path, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("an empty link".into());
    }
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let file = if path.is_empty() {
        from.to_path_buf()
    } else {
        from.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Some(format!("{} does not exist", file.display()));
    }
    if anchor.is_empty() {
        return None;
    }
    if file.extension().is_none_or(|x| x != "md") {
        return Some(format!(
            "#{anchor} points into {}, no Markdown",
            file.display()
        ));
    }
    let text = std::fs::read_to_string(&file).unwrap();
    (!anchors(&text).contains(anchor)).then(|| {
        format!(
            "{} has no heading whose anchor is #{anchor}",
            file.display()
        )
    })
}

#[test]
fn every_link_of_the_readme_and_the_docs_resolves() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for target in links(&text) {
            checked += 1;
            if let Some(why) = broken(&doc, &target) {
                bad.push(format!("{}: ({target}): {why}", doc.display()));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the link reader broken?"
    );
    assert!(
        bad.is_empty(),
        "{} broken links of {checked}:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn every_page_is_in_the_summary() {
    let summary = std::fs::read_to_string("docs/src/SUMMARY.md").unwrap();
    let listed: HashSet<String> = links(&summary)
        .into_iter()
        .map(|l| l.trim_start_matches("./").to_string())
        .collect();
    for doc in documents() {
        let Ok(rel) = doc.strip_prefix("docs/src") else {
            continue;
        };
        let rel = rel.to_string_lossy().to_string();
        assert!(
            rel == "SUMMARY.md" || listed.contains(&rel),
            "docs/src/{rel} is not in docs/src/SUMMARY.md: mdBook would leave it out of the site"
        );
    }
}

#[test]
fn the_link_reader_finds_what_breaks() {
    let dir = std::env::temp_dir().join(format!("ke-docs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("a.md");
    std::fs::write(
        &page,
        "# A page\n\n## Bring-your-own Secrets (`mode: secrets`)\n\n## Twice\n\n## Twice\n\n\
         See [here](#bring-your-own-secrets-mode-secrets), [again](#twice-1) and `[code](gone.md)`.\n\
         ```\n[fenced](gone.md)\n```\n[gone](gone.md) [no anchor](a.md#nowhere) [out](https://x/y)\n",
    )
    .unwrap();
    let text = std::fs::read_to_string(&page).unwrap();
    let found = links(&text);
    assert_eq!(
        found,
        [
            "#bring-your-own-secrets-mode-secrets",
            "#twice-1",
            "gone.md",
            "a.md#nowhere",
            "https://x/y"
        ]
    );
    let bad: Vec<String> = found.iter().filter_map(|t| broken(&page, t)).collect();
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad[0].ends_with("gone.md does not exist"), "{bad:?}");
    assert!(
        bad[1].contains("no heading whose anchor is #nowhere"),
        "{bad:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
