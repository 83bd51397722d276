//! Bundles the worker packages a user can install with `guild-hall workers add NAME` into the
//! binary. Each package directory below stays the single source: every file in it is compiled
//! in with `include_bytes!` from its path, its executable bit recorded from the file's mode.
//! A file several packages carry the same (a coder's script, a shared posture) is kept once: the
//! others hold a relative symlink to it, followed here, so each package bundles it whole.
//! Adding a package is one line in [`PACKAGES`].

use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The bundled packages, by directory (relative to the crate root); the package's name is its
/// `worker.yaml`'s (the directory's name, a test checks).
const PACKAGES: &[&str] = &[
    "examples/workers/scribe",
    "examples/workers/scripted-researcher",
    "examples/workers/counsel",
    "contrib/workers/claude-code",
    "contrib/workers/claude-code-coder",
    "contrib/workers/researcher",
    "contrib/workers/codex",
    "contrib/workers/codex-coder",
    "contrib/workers/gemini",
    "contrib/workers/gemini-coder",
    "contrib/workers/claude-code-acp",
    "contrib/workers/claude-code-acp-coder",
    "contrib/workers/codex-acp",
    "contrib/workers/codex-acp-coder",
    "contrib/workers/gemini-acp",
    "contrib/workers/gemini-acp-coder",
];

fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let mut out = String::from("&[\n");
    for dir in PACKAGES {
        println!("cargo:rerun-if-changed={dir}");
        let abs = Path::new(&root).join(dir);
        let mut files: Vec<_> = std::fs::read_dir(&abs)
            .unwrap_or_else(|e| panic!("bundled worker package {dir}: {e}"))
            .map(|e| e.expect("reading a bundled package's directory").path())
            .collect();
        files.sort();
        writeln!(out, "    BundledPackage {{ dir: {dir:?}, files: &[").expect("write to a String");
        for f in files {
            let meta = std::fs::metadata(&f).expect("a bundled file's metadata");
            // Flat packages only: a subdirectory would be silently missing from the bundle.
            assert!(meta.is_file(), "bundled worker package {dir}: {} is not a regular file", f.display());
            let name = f.file_name().and_then(|n| n.to_str()).expect("a UTF-8 file name");
            let executable = meta.permissions().mode() & 0o111 != 0;
            writeln!(
                out,
                "        BundledFile {{ name: {name:?}, bytes: include_bytes!({:?}), executable: {executable} }},",
                f.display().to_string()
            )
            .expect("write to a String");
        }
        writeln!(out, "    ] }},").expect("write to a String");
    }
    out.push_str("]\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("bundled_workers.rs");
    std::fs::write(dest, out).expect("writing the bundled packages' table");
    println!("cargo:rerun-if-changed=build.rs");
}
