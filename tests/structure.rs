//! Every arrow points down: each `crate::` path in `src/` goes from a room to a room on a lower
//! floor of the order that `src/lib.rs` states (its doc comment, the numbered floors), and no two
//! rooms import each other. Test code (`#[cfg(test)]` items and modules) is left out: a test may
//! reach up to drive a scenario through the rooms above the one it checks. And no production file
//! is over 800 lines (`no_production_file_is_over_800_lines` says which files count).
// A test is one scenario read top to bottom: its length is the scenario's.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod source;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use source::{
    SourceFile, code_only, declared_modules, drop_test_code, floors, module_tree, room_of,
};

/// One `crate::` path: the file and line it stands on, and the room it names.
struct Arrow {
    file: PathBuf,
    line: usize,
    to: String,
}

/// How many `super::` lead from the file's module to the crate root (`src/a.rs` and
/// `src/a/mod.rs`: 1, `src/a/b.rs`: 2).
fn depth(file: &Path) -> usize {
    let parts = file.strip_prefix("src").unwrap().components().count();
    if file.file_name().is_some_and(|n| n == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// The rooms that the paths of `code` to the crate's root name: `crate::a::...`, each top-level
/// name of `crate::{a::..., b, ...}`, and the same after as many `super::` as lead to the root.
fn arrows(file: &Path, code: &str) -> Vec<Arrow> {
    let mut found = Vec::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let to_root = "super::".repeat(depth(file));
    let roots = code
        .match_indices("crate::")
        .chain(code.match_indices(to_root.as_str()));
    for (at, root) in roots {
        if at > 0 {
            let before = code.as_bytes()[at - 1];
            if before.is_ascii_alphanumeric() || before == b'_' || before == b':' {
                continue;
            }
        }
        let rest = &code[at + root.len()..];
        let rest = rest.trim_start();
        let mut names = Vec::new();
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut token = String::new();
            let mut first = true;
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        first = true;
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 && first && (c.is_alphanumeric() || c == '_') {
                    token.push(c);
                } else if !token.is_empty() {
                    names.push(std::mem::take(&mut token));
                    first = false;
                } else if depth == 0 && first && !c.is_whitespace() {
                    first = false;
                }
            }
            if !token.is_empty() {
                names.push(token);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.push(name);
        }
        for to in names {
            if !to.is_empty() && to != "self" {
                found.push(Arrow {
                    file: file.to_path_buf(),
                    line: line_of(at),
                    to,
                });
            }
        }
    }
    found
}

/// Every `crate::` arrow from one room to another, with the rooms' floors from `src/lib.rs`.
fn room_arrows(root: &Path) -> (BTreeMap<String, usize>, Vec<(String, Arrow)>) {
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let floors = floors(&lib);
    let mut floor_of = BTreeMap::new();
    for (i, rooms) in floors.iter().enumerate() {
        for room in rooms {
            assert!(
                floor_of.insert(room.clone(), i + 1).is_none(),
                "src/lib.rs names the room `{room}` on two floors"
            );
        }
    }
    let mut files = Vec::new();
    module_tree(root, Path::new("src/lib.rs"), &mut files);
    let mut lib_code = code_only(&lib);
    drop_test_code(&mut lib_code);
    let declared: BTreeSet<String> = declared_modules(&lib_code).into_iter().collect();
    let stated: BTreeSet<String> = floor_of.keys().cloned().collect();
    assert_eq!(
        declared, stated,
        "src/lib.rs: its modules (left) and the rooms its doc comment orders (right) differ: \
         name each module on one floor of the doc comment"
    );
    let mut all = Vec::new();
    for SourceFile {
        path: file, code, ..
    } in &files
    {
        if file == Path::new("src/lib.rs") {
            continue;
        }
        let from = room_of(file);
        for arrow in arrows(file, code) {
            if arrow.to != from && floor_of.contains_key(&arrow.to) {
                all.push((from.clone(), arrow));
            }
        }
    }
    (floor_of, all)
}

#[test]
fn every_arrow_between_rooms_points_down() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (floor_of, arrows) = room_arrows(root);
    let mut wrong = Vec::new();
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, arrow) in &arrows {
        graph.entry(from).or_default().insert(&arrow.to);
        let (up, to) = (floor_of[from], floor_of[&arrow.to]);
        if to >= up {
            wrong.push(format!(
                "{}:{}: {from} (floor {up}) -> {} (floor {to}): {}",
                arrow.file.display(),
                arrow.line,
                arrow.to,
                if to == up { "beside it" } else { "upward" }
            ));
        }
    }
    // a circle between rooms, named room by room (it cannot be without an arrow above, but it says
    // what the arrows tie together)
    let mut circles = Vec::new();
    for start in graph.keys() {
        let mut path = vec![*start];
        let mut seen = BTreeSet::new();
        if let Some(circle) = circle_from(&graph, start, &mut path, &mut seen)
            && circle.iter().min() == Some(start)
        {
            circles.push(circle.join(" -> "));
        }
    }
    assert!(
        wrong.is_empty() && circles.is_empty(),
        "{} import(s) from a room to a room on its own floor or above, against the order of \
         src/lib.rs (move the name down to the lowest room that needs it, or fix the order there):\n  \
         {}\ncircles between rooms: {}",
        wrong.len(),
        wrong.join("\n  "),
        if circles.is_empty() {
            "none".to_string()
        } else {
            circles.join("; ")
        }
    );
}

fn circle_from<'a>(
    graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    at: &'a str,
    path: &mut Vec<&'a str>,
    seen: &mut BTreeSet<&'a str>,
) -> Option<Vec<&'a str>> {
    for next in graph.get(at).into_iter().flatten() {
        if *next == path[0] {
            let mut circle = path.clone();
            circle.push(next);
            return Some(circle);
        }
        if seen.insert(next) {
            path.push(next);
            if let Some(circle) = circle_from(graph, next, path, seen) {
                return Some(circle);
            }
            path.pop();
        }
    }
    None
}

/// The most lines a production file of `src/` may have.
const MAX_LINES: usize = 800;

/// Files over `MAX_LINES` whose split waits (they were being changed when the limit came), each
/// with the size it may not grow past (a ratchet). Split one and take it off this list; no file
/// joins it.
const STILL_OVER: &[(&str, usize)] = &[];

/// A production file of `src/` has at most 800 lines: a file that grows past it has two real
/// parts, and becomes a folder with a file for each. Production files are those of the module
/// trees of `src/lib.rs`, `src/main.rs` and `src/build.rs` compiled outside tests; a module
/// declared under a test-only `#[cfg(...)]` (`mod tests;`, `plan::sim`, `testing`) is a test, not
/// production. A file's size is its line count without its test-only items (its
/// `#[cfg(test)] mod tests { ... }` and any `#[cfg(test)]` helper): for most files, the lines
/// before `mod tests`.
#[test]
fn no_production_file_is_over_800_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for top in ["src/lib.rs", "src/main.rs", "src/build.rs"] {
        module_tree(root, Path::new(top), &mut files);
    }
    let mut over = Vec::new();
    let mut listed: BTreeMap<&str, usize> = STILL_OVER.iter().copied().collect();
    for file in &files {
        let path = file.path.to_str().unwrap();
        let lines = file.production_lines();
        match listed.remove(path) {
            Some(ceiling) if lines > ceiling => over.push(format!(
                "{path}: {lines} lines, {} more than its ceiling of {ceiling} in STILL_OVER: \
                 split it along its parts (a folder with a file for each), or move what it gained \
                 into a file of its own",
                lines - ceiling
            )),
            Some(_) if lines <= MAX_LINES => over.push(format!(
                "{path}: {lines} lines, within {MAX_LINES} now: take it off STILL_OVER in \
                 tests/structure.rs"
            )),
            Some(_) => {}
            None if lines > MAX_LINES => over.push(format!(
                "{path}: {lines} lines before its tests, over {MAX_LINES}: split it along its \
                 parts (a folder with a file for each: `a.rs` becomes `a/mod.rs` and `a/part.rs`)"
            )),
            None => {}
        }
    }
    for path in listed.keys() {
        over.push(format!(
            "{path} is on STILL_OVER but is no production file now: take it off the list"
        ));
    }
    assert!(
        over.is_empty(),
        "{} file(s) of src/ over their size:\n  {}",
        over.len(),
        over.join("\n  ")
    );
}
