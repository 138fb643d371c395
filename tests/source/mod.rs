//! The crate's source as the fast-lane tests read it: the rooms and floors that `src/lib.rs`
//! states, and its module tree with each file's code apart from comments, strings and test-only
//! items. Shared by tests/structure.rs (the arrows between rooms, file sizes) and
//! tests/generated.rs (the module map of docs/src/architecture.md).
// Each test file uses its own part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The floors that `src/lib.rs` states, from the ground up: lines `//! N. `a`, `b`: ...`, where the
/// backquoted names before the first `:` are the rooms of floor N.
pub fn floors(lib: &str) -> Vec<Vec<String>> {
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
pub fn code_only(text: &str) -> String {
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
pub fn item_end(code: &[u8], from: usize) -> usize {
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
pub fn test_only(predicate: &str) -> bool {
    let p: String = predicate.chars().filter(|c| !c.is_whitespace()).collect();
    p == "test" || (p.starts_with("all(") && p[4..p.len() - 1].split(',').any(|t| t == "test"))
}

/// Blanks out the items under a test-only `#[cfg(...)]`; returns the names of the modules among
/// them that are declared here and live in files of their own (`mod tests;`), and how many lines
/// the items span (each from its `#[cfg` to its end).
pub fn drop_test_code(code: &mut String) -> (Vec<String>, usize) {
    let mut test_modules = Vec::new();
    let mut test_lines = 0;
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
        test_lines += code[at..end].matches('\n').count() + 1;
        let blanked: String = code[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        code.replace_range(at..end, &blanked);
        from = end;
    }
    (test_modules, test_lines)
}

/// The modules that `code` declares in files of their own (`mod name;`).
pub fn declared_modules(code: &str) -> Vec<String> {
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

/// One file of the crate's module tree that is compiled outside tests.
pub struct SourceFile {
    /// From the repository's root: `src/plan/rules.rs`.
    pub path: PathBuf,
    pub text: String,
    /// The text with comments, strings and test-only items blanked out (line breaks kept).
    pub code: String,
    /// The lines of its test-only items (`#[cfg(test)] mod tests { ... }`, test helpers).
    pub test_lines: usize,
}

impl SourceFile {
    /// Its lines without its test-only items: for most files, the lines before `mod tests`.
    pub fn production_lines(&self) -> usize {
        self.text.lines().count() - self.test_lines
    }

    /// Its module's path: `plan::upgrade::rules` for `src/plan/upgrade/rules.rs`, `plan` for
    /// `src/plan/mod.rs` (`crate` for `src/lib.rs`).
    pub fn module(&self) -> String {
        let rel = self.path.strip_prefix("src").unwrap().with_extension("");
        let mut parts: Vec<&str> = rel.iter().map(|p| p.to_str().unwrap()).collect();
        if parts.last() == Some(&"mod") {
            parts.pop();
        }
        if parts == ["lib"] {
            return "crate".to_string();
        }
        parts.join("::")
    }

    /// The first sentence of its `//!` doc, on one line (empty without one).
    pub fn summary(&self) -> String {
        let mut paragraph = Vec::new();
        for line in self.text.lines() {
            let Some(doc) = line.strip_prefix("//!") else {
                break;
            };
            let doc = doc.trim();
            if doc.is_empty() {
                break;
            }
            paragraph.push(doc);
        }
        let paragraph = paragraph.join(" ");
        // the first `. ` outside backquotes ends the sentence
        let mut quoted = false;
        let bytes = paragraph.as_bytes();
        for (i, &c) in bytes.iter().enumerate() {
            match c {
                b'`' => quoted = !quoted,
                b'.' if !quoted && bytes.get(i + 1) == Some(&b' ') => {
                    return paragraph[..=i].to_string();
                }
                _ => {}
            }
        }
        paragraph
    }
}

/// Every file of the module tree under `file` (relative to `root`) that is compiled outside
/// tests: a module declared under a test-only `#[cfg(...)]` (`mod tests;`, `mod sim;`) and its
/// files are not.
pub fn module_tree(root: &Path, file: &Path, out: &mut Vec<SourceFile>) {
    let text = std::fs::read_to_string(root.join(file))
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut code = code_only(&text);
    let (tests, test_lines) = drop_test_code(&mut code);
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
        let child = if root.join(&flat).exists() {
            flat
        } else {
            nested
        };
        module_tree(root, &child, out);
    }
    out.push(SourceFile {
        path: file.to_path_buf(),
        text,
        code,
        test_lines,
    });
}

/// The room of a file under `src/`: its first component (`src/plan/rules.rs` is in `plan`).
pub fn room_of(file: &Path) -> String {
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
