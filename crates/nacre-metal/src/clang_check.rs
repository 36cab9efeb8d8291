//! A compile check of generated MSL without Apple's toolchain: clang in C++ for OpenCL mode.
//!
//! MSL is C++14 with address spaces; OpenCL C++ (`-cl-std=clc++2021`) is C++17 with address
//! spaces, and clang checks them the same way. [`check_msl`] compiles a kernel's source
//! (syntax only) with the header [`HEADER_DIR`]`/metal_stdlib` in place of Metal's, which
//! maps `device`, `threadgroup`, `constant` and `thread` onto `__global`, `__local`,
//! `__constant` and `__private`, and the few Metal functions and types the printer uses onto
//! OpenCL's. With the generic address space switched off, an unqualified pointer is private
//! memory, as it is thread memory in Metal, so a pointer in the wrong space does not convert.
//!
//! What it catches: syntax errors, undeclared names, type errors, pointers into the wrong
//! address space (threadgroup vs device, in assignments, calls and block-parameter copies),
//! shared arrays outside kernel scope, `double` (fp64 is switched off), `goto` (the header
//! makes it a syntax error) and unknown or misspelled attributes. What it does not: the
//! arguments of attributes (`[[buffer(i)]]` indices), the types of built-in parameters,
//! Metal's limits (buffer slots, threadgroup memory), and everything that happens after
//! parsing in Apple's compiler. Only a Mac runs the real thing.
//!
//! The compiler is `clang` on `PATH`, or the command in the `NACRE_CLANG` environment
//! variable.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use thiserror::Error;

/// The directory holding the `metal_stdlib` header that maps Metal onto OpenCL C++.
pub const HEADER_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/clang");

/// The flags of the check (before `-I` and the input).
pub const FLAGS: &[&str] = &[
    "-x",
    "cl",
    "-cl-std=clc++2021",
    "-Xclang",
    "-cl-ext=-__opencl_c_generic_address_space,-__opencl_c_pipes,-__opencl_c_device_enqueue,-cl_khr_fp64,-__opencl_c_fp64",
    "-fsyntax-only",
    "-Werror=unknown-attributes",
    "-ferror-limit=20",
];

/// Why a check did not pass.
#[derive(Debug, Error)]
pub enum ClangCheckError {
    /// No clang to run.
    #[error(
        "clang was not found (`{command}`: {reason}); install it (Debian: apt-get install \
         clang) or set NACRE_CLANG to its path"
    )]
    Missing {
        /// The command tried.
        command: String,
        /// Why it could not run.
        reason: String,
    },
    /// clang rejected the source.
    #[error("clang rejected the MSL:\n{diagnostics}")]
    Rejected {
        /// clang's diagnostics.
        diagnostics: String,
    },
}

/// The attribute of the dynamic shared memory parameter (see [`check_msl`]).
pub const THREADGROUP_ATTRIBUTE: &str = "[[threadgroup(0)]]";

/// The clang command: `NACRE_CLANG` or `clang`.
pub fn clang_command() -> String {
    std::env::var("NACRE_CLANG").unwrap_or_else(|_| "clang".to_string())
}

/// The version line of the clang that [`check_msl`] would run, or why there is none.
pub fn clang_version() -> Result<String, ClangCheckError> {
    let command = clang_command();
    let missing = |reason: String| ClangCheckError::Missing {
        command: command.clone(),
        reason,
    };
    let out = Command::new(&command)
        .arg("--version")
        .output()
        .map_err(|e| missing(e.to_string()))?;
    if !out.status.success() {
        return Err(missing(format!("`--version` exited with {}", out.status)));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string())
}

/// Compiles MSL `source` with clang as OpenCL C++ against the Metal header; `Ok` when clang
/// accepts it. The attribute `[[threadgroup(0)]]` of a dynamic shared memory parameter is left
/// out: the header spells the `threadgroup` address space as a macro for OpenCL's `__local`,
/// which would expand inside the attribute's name too.
pub fn check_msl(source: &str) -> Result<(), ClangCheckError> {
    let source = source.replace(THREADGROUP_ATTRIBUTE, "");
    let command = clang_command();
    let mut child = Command::new(&command)
        .args(FLAGS)
        .arg(format!("-I{}", PathBuf::from(HEADER_DIR).display()))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ClangCheckError::Missing {
            command: command.clone(),
            reason: e.to_string(),
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A write error means clang exited early; its diagnostics say why.
        let _ = stdin.write_all(source.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| ClangCheckError::Missing {
            command,
            reason: e.to_string(),
        })?;
    if out.status.success() {
        Ok(())
    } else {
        let mut diagnostics = String::from_utf8_lossy(&out.stderr).into_owned();
        diagnostics.push_str(&String::from_utf8_lossy(&out.stdout));
        Err(ClangCheckError::Rejected { diagnostics })
    }
}
