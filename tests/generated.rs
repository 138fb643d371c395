//! Generated files (crds/, completions/, tests/monitoring/rules.yaml, link/hot-code.order, the verb
//! tables and the module map of docs/src/) must match what generates them now.
// A test is one scenario read top to bottom: its length is the scenario's. The size and
// complexity gates (Cargo.toml's [lints.clippy], clippy.toml) are for the shipped code.
#![allow(clippy::too_many_lines, clippy::cognitive_complexity)]

mod source;

use kubectl_etcd::cli;

fn check(path: &str, want: &str, regenerate: &str) {
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "{path} is stale or missing; regenerate it with `{regenerate}`"
    );
}

#[test]
fn the_crd_file_is_fresh() {
    check(
        "crds/crds.yaml",
        &cli::crd_yaml(),
        "cargo run -q -- crd > crds/crds.yaml",
    );
}

#[test]
fn the_operator_manifests_are_fresh() {
    check(
        "crds/operator.yaml",
        &cli::operator_yaml(),
        "cargo run -q -- manifests > crds/operator.yaml",
    );
}

#[test]
fn the_prometheus_rule_file_is_fresh() {
    check(
        "tests/monitoring/rules.yaml",
        &cli::prometheus_rules_yaml(),
        "cargo run -q -- manifests --prometheus-rules > tests/monitoring/rules.yaml",
    );
}

#[test]
fn completions_are_fresh() {
    for (shell, name, file) in [
        (
            cli::CompletionTarget::Bash,
            "bash",
            "completions/kubectl-etcd.bash",
        ),
        (
            cli::CompletionTarget::Zsh,
            "zsh",
            "completions/_kubectl-etcd",
        ),
        (
            cli::CompletionTarget::Fish,
            "fish",
            "completions/kubectl-etcd.fish",
        ),
        (
            cli::CompletionTarget::Kubectl,
            "kubectl",
            "completions/kubectl_complete-etcd",
        ),
    ] {
        check(
            file,
            &cli::completions(shell),
            &format!("cargo run -q -- completions {name} > {file}"),
        );
    }
}

/// The verb tables of README.md and docs/src/verbs.md, between their markers, are what the
/// command line says now. `KE_REGENERATE=1` writes them instead of failing.
#[test]
fn the_verb_tables_are_fresh() {
    let regenerate = "KE_REGENERATE=1 cargo test --features live,e2e --test generated verb_tables";
    for (path, table) in [
        ("README.md", cli::verb_summary("docs/src/verbs.md")),
        ("docs/src/verbs.md", cli::verb_reference()),
    ] {
        let have = std::fs::read_to_string(path).unwrap();
        let want = cli::with_verb_table(&have, &table).unwrap_or_else(|| {
            panic!(
                "{path} has no verb table: put the lines\n{}\n{}\nwhere it goes, then run `{regenerate}`",
                cli::VERB_TABLE_BEGIN,
                cli::VERB_TABLE_END
            )
        });
        if have == want {
            continue;
        }
        if std::env::var_os("KE_REGENERATE").is_some() {
            std::fs::write(path, want).unwrap();
        } else {
            panic!(
                "{path}'s verb table is stale (a verb or flag changed); regenerate it with `{regenerate}`"
            );
        }
    }
}

/// Every verb clap knows is in both tables, and nothing else is.
#[test]
fn the_verb_tables_list_every_verb() {
    use clap::CommandFactory;
    let cmd = cli::Cli::command();
    let verbs: Vec<&str> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .map(clap::Command::get_name)
        .collect();
    let reference = cli::verb_reference();
    let summary = cli::verb_summary("docs/src/verbs.md");
    for v in &verbs {
        assert!(
            reference.contains(&format!("\n### {v}\n")),
            "no section for {v}"
        );
        assert!(
            summary.contains(&format!("| [`{v}`](docs/src/verbs.md#{v}) |")),
            "no row for {v}"
        );
    }
    assert!(reference.contains("\n### backup list\n"));
    assert!(reference.contains("\n### backup verify\n"));
    assert!(
        reference.starts_with(&format!("{} verbs,", verbs.len() + 2)),
        "{reference}"
    );
}

/// Runs the kubectl completion helper as kubectl would.
fn complete(words: &[&str]) -> Vec<String> {
    let out = std::process::Command::new("/bin/sh")
        .arg("completions/kubectl_complete-etcd")
        .args(words)
        .env("PATH", "/nonexistent") // no kubectl: API lookups answer nothing
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn kubectl_plugin_completion_offers_verbs_then_flags() {
    let verbs = complete(&[""]);
    assert!(
        verbs.contains(&"create".to_string()) && verbs.contains(&"scale".to_string()),
        "{verbs:?}"
    );
    assert_eq!(verbs.last().unwrap(), ":4");
    let flags = complete(&["scale", "demo", "--"]);
    assert!(
        flags.contains(&"--replicas".to_string()) && flags.contains(&"--namespace".to_string()),
        "{flags:?}"
    );
    assert!(
        flags.contains(&"--storage".to_string()) && !flags.contains(&"--ephemeral".to_string()),
        "scale's own flags, not create's: {flags:?}"
    );
    let formats = complete(&["status", "-o", ""]);
    assert_eq!(formats, ["table", "json", "yaml", ":4"]);
}

#[test]
fn the_crd_has_the_scale_subresource_printer_columns_and_a_short_name() {
    let crd = serde_json::to_value(cli::crd()).unwrap();
    let v = &crd["spec"]["versions"][0];
    assert_eq!(
        v["subresources"]["scale"]["specReplicasPath"],
        ".spec.replicas"
    );
    assert!(v["subresources"]["status"].is_object());
    let cols: Vec<&str> = v["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, ["Replicas", "Ready", "Version", "Phase", "Age"]);
    assert_eq!(crd["spec"]["names"]["shortNames"][0], "etcdc");
    let replicas = &v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"];
    assert_eq!(replicas["minimum"].as_f64(), Some(1.0));
    // Fixed fields are refused at admission (CEL, Kubernetes 1.29+; see api::ADMISSION_RULES).
    let storage = &v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["storage"];
    assert!(storage["x-kubernetes-validations"][0]["rule"].is_string());
}

/// The release build's function order (src/build.rs) names functions by their symbols, whose
/// hashes change with the dependencies: regenerated with every change of Cargo.lock.
#[test]
fn the_hot_code_order_follows_the_lockfile() {
    let order = std::fs::read_to_string("link/hot-code.order").unwrap();
    let lock = std::fs::read("Cargo.lock").unwrap();
    let hex = kubectl_etcd::archive::codec::hex(
        ring::digest::digest(&ring::digest::SHA256, &lock).as_ref(),
    );
    let recorded = order
        .lines()
        .find_map(|l| l.strip_prefix("# Cargo.lock sha256: "))
        .expect("link/hot-code.order records the Cargo.lock it was generated with");
    assert_eq!(
        recorded, hex,
        "link/hot-code.order was generated for another Cargo.lock; regenerate it with `tests/hot-code.sh` (on the testbed)"
    );
    let functions = order.lines().filter(|l| !l.starts_with('#')).count();
    assert!(functions > 1000, "{functions} functions listed");
}

const MODULE_MAP_BEGIN: &str =
    "<!-- modules: generated from src/ by tests/generated.rs; do not edit -->";
const MODULE_MAP_END: &str = "<!-- modules: end -->";

/// The module map: the rooms floor by floor in the order `src/lib.rs` states, each room's
/// modules (those compiled outside tests) after it, each with the first sentence of its `//!`
/// doc. Fails naming a module without one.
fn module_map(root: &std::path::Path) -> String {
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let mut files = Vec::new();
    source::module_tree(root, std::path::Path::new("src/lib.rs"), &mut files);
    let mut table = String::from("| floor | module | what it is |\n|---|---|---|\n");
    for (i, rooms) in source::floors(&lib).iter().enumerate() {
        let mut floor = Some(i + 1);
        for room in rooms {
            let mut modules: Vec<&source::SourceFile> = files
                .iter()
                .filter(|f| f.path != std::path::Path::new("src/lib.rs"))
                .filter(|f| source::room_of(&f.path) == *room)
                .collect();
            modules.sort_by_key(|f| f.module());
            assert!(
                !modules.is_empty(),
                "src/lib.rs names the room `{room}`, which has no file"
            );
            for f in modules {
                let summary = f.summary();
                assert!(
                    !summary.is_empty(),
                    "{} has no `//!` doc: begin it with one sentence saying what the module is",
                    f.path.display()
                );
                table.push_str(&format!(
                    "| {} | `{}` | {} |\n",
                    floor.take().map(|n| n.to_string()).unwrap_or_default(),
                    f.module(),
                    summary.replace('|', "\\|")
                ));
            }
        }
    }
    table
}

/// The module map of docs/src/architecture.md, between its markers, is what `src/` says now.
/// `KE_REGENERATE=1` writes it instead of failing.
#[test]
fn the_module_map_is_fresh() {
    let regenerate = "KE_REGENERATE=1 cargo test --features live,e2e --test generated module_map";
    let path = "docs/src/architecture.md";
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let have = std::fs::read_to_string(root.join(path)).unwrap();
    let (Some(begin), Some(end)) = (have.find(MODULE_MAP_BEGIN), have.find(MODULE_MAP_END)) else {
        panic!(
            "{path} has no module map: put the lines\n{MODULE_MAP_BEGIN}\n{MODULE_MAP_END}\nwhere it goes, then run `{regenerate}`"
        )
    };
    let start = begin + MODULE_MAP_BEGIN.len();
    let want = format!("{}\n{}{}", &have[..start], module_map(root), &have[end..]);
    if have == want {
        return;
    }
    if std::env::var_os("KE_REGENERATE").is_some() {
        std::fs::write(root.join(path), want).unwrap();
    } else {
        panic!(
            "{path}'s module map is stale (a module or its `//!` doc changed); regenerate it with `{regenerate}`"
        );
    }
}

/// The map has every room of `src/lib.rs` and every module compiled outside tests, and none of
/// the test-only ones.
#[test]
fn the_module_map_lists_every_module() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = module_map(root);
    for module in [
        "keys",
        "plan",
        "plan::upgrade::rules",
        "cli::verbs::restore",
        "pod_tools",
    ] {
        assert!(
            map.contains(&format!("| `{module}` |")),
            "no row for {module}:\n{map}"
        );
    }
    for test_only in ["plan::sim", "plan::tests", "fixtures", "testing"] {
        assert!(
            !map.contains(&format!("`{test_only}`")),
            "{test_only} is test code:\n{map}"
        );
    }
    let rows = map.lines().count() - 2;
    let mut files = Vec::new();
    source::module_tree(root, std::path::Path::new("src/lib.rs"), &mut files);
    assert_eq!(
        rows,
        files.len() - 1,
        "one row per module but the crate's root:\n{map}"
    );
    let floors: Vec<&str> = map
        .lines()
        .skip(2)
        .map(|l| l.split('|').nth(1).unwrap().trim())
        .filter(|f| !f.is_empty())
        .collect();
    assert_eq!(floors.first(), Some(&"1"));
    assert_eq!(
        floors.len(),
        floors.last().unwrap().parse::<usize>().unwrap()
    );
}
