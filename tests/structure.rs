//! Every arrow points down: each `crate::` path in `src/` goes from a room to a room on a lower
//! floor of the order that `src/lib.rs` states (its doc comment, the numbered floors), and no two
//! rooms import each other. Test code (`#[cfg(test)]` items and modules) is left out: a test may
//! reach up to drive a scenario through the rooms above the one it checks.
// A test is one scenario read top to bottom: its length is the scenario's.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors that `src/lib.rs` states, from the ground up: lines `//! N. `a`, `b`: ...`, where the
/// backquoted names before the first `:` are the rooms of floor N.
fn floors(lib: &str) -> Vec<Vec<String>> {
    let mut floors = Vec::new();
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//! ") else {
            continue;
        };
        let Some((number, rest)) = doc.split_once(". ") else {
            continue;
        };
        if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        assert_eq!(
            number.parse::<usize>().unwrap(),
            floors.len() + 1,
            "src/lib.rs: the floors are numbered 1, 2, 3, ... from the ground up: {line}"
        );
        let names = rest.split_once(':').map_or(rest, |(names, _)| names);
        let rooms: Vec<String> = names
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        assert!(
            !rooms.is_empty(),
            "src/lib.rs: floor {number} names no room in backquotes before its `:`: {line}"
        );
        floors.push(rooms);
    }
    floors
}

/// The text with comments, strings and character literals blanked out (line breaks kept, so a
/// position still has its line).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            blank(&mut out, start, i);
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            blank(&mut out, start, i);
        } else if (b[i] == b'r' || (b[i] == b'b' && b.get(i + 1) == Some(&b'r')))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
            && {
                let j = if b[i] == b'b' { i + 2 } else { i + 1 };
                let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
                b.get(j + hashes) == Some(&b'"')
            }
        {
            let j = if b[i] == b'b' { i + 2 } else { i + 1 };
            let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            i = j + hashes + 1;
            while i < b.len() && !b[i..].starts_with(&close) {
                i += 1;
            }
            i = (i + close.len()).min(b.len());
            blank(&mut out, start, i);
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            blank(&mut out, start, i);
        } else if b[i] == b'\'' {
            // a character literal ('a', '\n', '\u{1F600}') or a lifetime ('a): only the first is blanked
            if b.get(i + 1) == Some(&b'\\') {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
                blank(&mut out, start, i);
            } else if let Some(len) = text[i + 1..].chars().next().map(char::len_utf8)
                && b.get(i + 1 + len) == Some(&b'\'')
            {
                i += len + 2;
                blank(&mut out, start, i);
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// The end of the item that starts at `from`: after its `;`, or after the `}` that closes its
/// first `{` (a `;` inside parentheses or brackets, as in `[u8; 4]`, is not its end).
fn item_end(code: &[u8], from: usize) -> usize {
    let mut depth = 0i32;
    let mut i = from;
    while i < code.len() {
        match code[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b';' if depth == 0 => return i + 1,
            b'{' if depth == 0 => {
                let mut braces = 0;
                while i < code.len() {
                    match code[i] {
                        b'{' => braces += 1,
                        b'}' => {
                            braces -= 1;
                            if braces == 0 {
                                return i + 1;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                return i;
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// Whether a `cfg` predicate holds only under test (`test`, `all(test, ...)`).
fn test_only(predicate: &str) -> bool {
    let p: String = predicate.chars().filter(|c| !c.is_whitespace()).collect();
    p == "test" || (p.starts_with("all(") && p[4..p.len() - 1].split(',').any(|t| t == "test"))
}

/// Blanks out the items under a test-only `#[cfg(...)]`; returns the names of the modules among
/// them that are declared here and live in files of their own (`mod tests;`).
fn drop_test_code(code: &mut String) -> Vec<String> {
    let mut test_modules = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(").map(|at| at + from) {
        let open = at + "#[cfg(".len();
        let mut depth = 1;
        let mut close = open;
        while depth > 0 {
            match code.as_bytes()[close] {
                b'(' => depth += 1,
                b')' => depth -= 1,
                _ => {}
            }
            close += 1;
        }
        let predicate = code[open..close - 1].to_string();
        let close = close + 1; // past the `]`
        if !test_only(&predicate) {
            from = close;
            continue;
        }
        let end = close + item_end(&code.as_bytes()[close..], 0);
        let item = &code[close..end];
        let words: Vec<&str> = item
            .trim_start_matches(|c: char| c == ']' || c.is_whitespace())
            .split(|c: char| c.is_whitespace() || c == ';')
            .filter(|w| !w.is_empty())
            .collect();
        if let [.., "mod", name] = words.as_slice() {
            test_modules.push((*name).to_string());
        }
        let blanked: String = code[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        code.replace_range(at..end, &blanked);
        from = end;
    }
    test_modules
}

/// The modules that `code` declares in files of their own (`mod name;`).
fn declared_modules(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(end) = rest.find([';', '{', '}']) {
        let (statement, terminator) = (&rest[..end], rest.as_bytes()[end]);
        rest = &rest[end + 1..];
        if terminator != b';' {
            continue;
        }
        // what follows the item's attributes (`#[...]`, `#![...]`)
        let item = statement.rsplit(']').next().unwrap();
        let words: Vec<&str> = item.split_whitespace().collect();
        if let [.., "mod", name] = words.as_slice()
            && words[..words.len() - 2]
                .iter()
                .all(|w| w.starts_with("pub"))
        {
            names.push((*name).to_string());
        }
    }
    names
}

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

/// Every file of the module tree under `file` that is compiled outside tests, with its code
/// (comments, strings and test-only items blanked out).
fn module_tree(file: &Path, out: &mut Vec<(PathBuf, String)>) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut code = code_only(&text);
    let tests = drop_test_code(&mut code);
    let dir = match file.file_name().and_then(|n| n.to_str()) {
        Some("lib.rs" | "mod.rs") => file.parent().unwrap().to_path_buf(),
        _ => file.with_extension(""),
    };
    for name in declared_modules(&code) {
        if tests.contains(&name) {
            continue;
        }
        let flat = dir.join(format!("{name}.rs"));
        let nested = dir.join(&name).join("mod.rs");
        let child = if flat.exists() { flat } else { nested };
        module_tree(&child, out);
    }
    out.push((file.to_path_buf(), code));
}

/// The room of a file under `src/`: its first component (`src/plan/rules.rs` is in `plan`).
fn room_of(file: &Path) -> String {
    let rel = file.strip_prefix("src").unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_str()
        .unwrap();
    first.trim_end_matches(".rs").to_string()
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
    let previous = std::env::current_dir().unwrap();
    std::env::set_current_dir(root).unwrap();
    module_tree(Path::new("src/lib.rs"), &mut files);
    std::env::set_current_dir(previous).unwrap();
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
    for (file, code) in &files {
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
