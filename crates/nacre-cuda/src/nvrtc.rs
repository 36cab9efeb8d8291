//! Run-time compilation of CUDA C with NVRTC.
//!
//! [`compile_cubin`] turns a [`KernelSource`] into machine code (SASS) for one compute
//! capability, ready for `cuModuleLoadData`; [`compile_ptx`] into PTX for a virtual
//! architecture, which the driver can JIT for newer devices. Both use the options in
//! [`OPTIONS`]: IEEE float semantics as Nacre defines them (no contraction of `a * b + c`
//! into an FMA, no flushing of denormals, correctly rounded division and square root) and
//! C++17; with NVRTC 12.4 or newer also [`MINIMAL`], which leaves out the CUDA runtime's
//! device-side declarations that generated code never uses and cuts the compile time of a
//! small kernel by about a quarter.
//!
//! libnvrtc is loaded at run time through `cudarc` (dynamic loading), once per process. Its
//! presence is checked before anything else is called (cudarc would panic on a missing
//! library), and every entry point is looked up and checked before use, so a machine without
//! NVRTC, or with an incomplete one, gets [`NvrtcError::LibraryMissing`], never a panic.

use crate::codegen::KernelSource;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::sync::OnceLock;
use thiserror::Error;

/// A compute capability, such as 9.0 for the H100/H200.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Arch {
    /// The major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
}

impl Arch {
    /// Compute capability `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Arch {
        Arch { major, minor }
    }

    /// The real architecture that cubins target (`sm_90`).
    pub fn sm(self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }

    /// The virtual architecture that PTX targets (`compute_90`).
    pub fn compute(self) -> String {
        format!("compute_{}{}", self.major, self.minor)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The options every compilation uses, besides the architecture.
pub const OPTIONS: &[&str] = &[
    "--std=c++17",
    "--fmad=false",
    "--ftz=false",
    "--prec-div=true",
    "--prec-sqrt=true",
];

/// The option that omits texture, device-runtime and launch declarations (NVRTC 12.4+).
pub const MINIMAL: &str = "-minimal";

/// The option that enables `__int128` in device code (NVRTC 11.5+ on Linux), given to the
/// sources that use the 128-bit integers.
pub const INT128: &str = "--device-int128";

/// Why NVRTC could not compile a kernel.
#[derive(Debug, Error)]
pub enum NvrtcError {
    /// libnvrtc could not be loaded, or lacks an entry point.
    #[error(
        "the CUDA runtime compiler NVRTC is not available: {detail}. Install it with the CUDA \
         toolkit or the driver packages of your distribution (libnvrtc.so.13), or run `pip \
         install nvidia-cuda-nvrtc` and add the wheel's `nvidia/cu13/lib` folder to \
         LD_LIBRARY_PATH"
    )]
    LibraryMissing {
        /// What was looked for and not found.
        detail: String,
    },
    /// NVRTC rejected the source.
    #[error(
        "NVRTC could not compile kernel `{kernel}` for {target}:\n{log}\n--- source ---\n{}",
        numbered(cuda_source)
    )]
    Compile {
        /// The kernel's symbol.
        kernel: String,
        /// The target architecture (`sm_90`, `compute_90`).
        target: String,
        /// NVRTC's complete log.
        log: String,
        /// The CUDA C that failed.
        cuda_source: String,
    },
    /// Another NVRTC call failed.
    #[error("NVRTC call {call} failed: {message}")]
    Call {
        /// The NVRTC function.
        call: &'static str,
        /// NVRTC's description of the failure, with the program log when there is one.
        message: String,
    },
}

/// `source` with line numbers, to read beside NVRTC's `file(line)` diagnostics.
fn numbered(source: &str) -> String {
    source
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{:4} | {l}\n", i + 1))
        .collect()
}

/// An NVRTC program handle.
type Program = *mut c_void;

/// The NVRTC entry points Nacre uses, looked up once, and the library's version.
struct Api {
    release: (u32, u32),
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int,
    error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    create: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int,
    compile: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int,
    destroy: unsafe extern "C" fn(*mut Program) -> c_int,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    log: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    ptx_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    ptx: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    cubin_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    cubin: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
}

/// Looks up one entry point of the loaded library.
///
/// # Safety
/// `T` must be the C signature of `name`.
unsafe fn symbol<T: Copy>(name: &str) -> Result<T, String> {
    // SAFETY: only called after `is_culib_present` found the library, so `culib` loads it
    // instead of panicking; the library stays loaded for the life of the process (cudarc
    // keeps it in a static), so the function pointer never dangles.
    let lib = unsafe { cudarc::nvrtc::sys::culib() };
    // SAFETY: the caller guarantees that `T` is the symbol's signature.
    match unsafe { lib.get::<T>(name.as_bytes()) } {
        Ok(f) => Ok(*f),
        Err(e) => Err(format!("libnvrtc has no entry point {name} ({e})")),
    }
}

impl Api {
    fn load() -> Result<Api, String> {
        // SAFETY: probing loads and unloads libnvrtc, whose initialisers have no
        // preconditions.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            let mut tried: Vec<String> = Vec::new();
            for name in cudarc::get_lib_name_candidates("nvrtc") {
                if !tried.contains(&name) {
                    tried.push(name);
                }
            }
            return Err(format!(
                "libnvrtc could not be loaded (tried {})",
                tried.join(", ")
            ));
        }
        // SAFETY: each type below is the signature of the NVRTC function of that name in
        // nvrtc.h (nvrtcResult is a C enum, an `int`; nvrtcProgram a pointer).
        let mut api = unsafe {
            Api {
                release: (0, 0),
                version: symbol("nvrtcVersion")?,
                error_string: symbol("nvrtcGetErrorString")?,
                create: symbol("nvrtcCreateProgram")?,
                compile: symbol("nvrtcCompileProgram")?,
                destroy: symbol("nvrtcDestroyProgram")?,
                log_size: symbol("nvrtcGetProgramLogSize")?,
                log: symbol("nvrtcGetProgramLog")?,
                ptx_size: symbol("nvrtcGetPTXSize")?,
                ptx: symbol("nvrtcGetPTX")?,
                cubin_size: symbol("nvrtcGetCUBINSize")?,
                cubin: symbol("nvrtcGetCUBIN")?,
            }
        };
        let (mut major, mut minor) = (0, 0);
        // SAFETY: both pointers are valid for writes.
        let code = unsafe { (api.version)(&mut major, &mut minor) };
        if code != 0 {
            return Err(format!("nvrtcVersion failed: {}", api.describe(code)));
        }
        api.release = (major.max(0) as u32, minor.max(0) as u32);
        Ok(api)
    }

    /// The options of a compilation for `target` (`sm_90`, `compute_90`); with `fast_math`,
    /// `--use_fast_math` replaces the IEEE options; with `int128`, [`INT128`] is added.
    fn options(&self, target: &str, fast_math: bool, int128: bool) -> Vec<String> {
        let mut options = vec![format!("--gpu-architecture={target}")];
        if fast_math {
            options.push("--std=c++17".to_string());
            options.push("--use_fast_math".to_string());
        } else {
            options.extend(OPTIONS.iter().map(|o| o.to_string()));
        }
        if self.release >= (12, 4) {
            options.push(MINIMAL.to_string());
        }
        if int128 {
            options.push(INT128.to_string());
        }
        options
    }

    /// The library's description of a result code.
    fn describe(&self, code: c_int) -> String {
        // SAFETY: nvrtcGetErrorString accepts any value and returns a static string (or
        // null for codes it does not know, handled below).
        let text = unsafe { (self.error_string)(code) };
        if text.is_null() {
            return format!("error code {code}");
        }
        // SAFETY: a non-null result is a NUL-terminated static string.
        let text = unsafe { CStr::from_ptr(text) };
        format!("{} (code {code})", text.to_string_lossy())
    }

    /// `Ok` for NVRTC_SUCCESS, else the failure of `call`.
    fn check(&self, call: &'static str, code: c_int) -> Result<(), NvrtcError> {
        if code == 0 {
            Ok(())
        } else {
            Err(NvrtcError::Call {
                call,
                message: self.describe(code),
            })
        }
    }
}

/// The loaded library, or why it could not be loaded.
fn api() -> Result<&'static Api, NvrtcError> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(Api::load)
        .as_ref()
        .map_err(|detail| NvrtcError::LibraryMissing {
            detail: detail.clone(),
        })
}

/// Whether libnvrtc can be loaded (and has every entry point Nacre uses).
pub fn available() -> Result<(), NvrtcError> {
    api().map(|_| ())
}

/// The version of the loaded NVRTC, `(major, minor)`.
pub fn version() -> Result<(u32, u32), NvrtcError> {
    Ok(api()?.release)
}

/// Compiles a kernel to a cubin (SASS) for compute capability `arch` (`-arch=sm_XY`).
pub fn compile_cubin(src: &KernelSource, arch: Arch) -> Result<Vec<u8>, NvrtcError> {
    compile(src, arch.sm(), Output::Cubin)
}

/// Compiles a kernel to PTX for the virtual architecture of `arch` (`-arch=compute_XY`).
pub fn compile_ptx(src: &KernelSource, arch: Arch) -> Result<String, NvrtcError> {
    let bytes = compile(src, arch.compute(), Output::Ptx)?;
    String::from_utf8(bytes).map_err(|_| NvrtcError::Call {
        call: "nvrtcGetPTX",
        message: "the PTX is not valid UTF-8 text".to_string(),
    })
}

/// What to take from a compiled program.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Output {
    Ptx,
    Cubin,
}

/// A created program, destroyed on drop.
struct ProgramGuard<'a> {
    api: &'a Api,
    prog: Program,
}

impl Drop for ProgramGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: `prog` was created by nvrtcCreateProgram and is destroyed only here. A
        // failure leaks the program, which is all that can be done in a destructor.
        let _ = unsafe { (self.api.destroy)(&mut self.prog) };
    }
}

impl ProgramGuard<'_> {
    /// Reads a sized buffer (log, PTX, cubin) through its `size` and `get` entry points.
    fn read(
        &self,
        calls: (&'static str, &'static str),
        size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
        get: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    ) -> Result<Vec<u8>, NvrtcError> {
        let mut len = 0usize;
        // SAFETY: `prog` is a live program and `len` is valid for writes.
        self.api
            .check(calls.0, unsafe { size(self.prog, &mut len) })?;
        let mut buf = vec![0u8; len];
        // SAFETY: `buf` holds exactly the `len` bytes NVRTC said it writes.
        self.api.check(calls.1, unsafe {
            get(self.prog, buf.as_mut_ptr().cast::<c_char>())
        })?;
        Ok(buf)
    }

    /// The program log as text, without the terminating NUL.
    fn log(&self) -> Result<String, NvrtcError> {
        let bytes = self.read(
            ("nvrtcGetProgramLogSize", "nvrtcGetProgramLog"),
            self.api.log_size,
            self.api.log,
        )?;
        Ok(text(&bytes))
    }
}

/// Text from a NUL-terminated buffer.
fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end])
        .trim_end()
        .to_string()
}

fn compile(src: &KernelSource, target: String, output: Output) -> Result<Vec<u8>, NvrtcError> {
    let api = api()?;
    let invalid = |what: &str| NvrtcError::Call {
        call: "nvrtcCreateProgram",
        message: format!("the {what} contains a NUL byte"),
    };
    let source = CString::new(src.source.as_str()).map_err(|_| invalid("source"))?;
    let name = CString::new(format!("{}.cu", src.name)).map_err(|_| invalid("kernel name"))?;
    let mut prog: Program = std::ptr::null_mut();
    // SAFETY: `prog` is valid for writes; `source` and `name` are NUL-terminated and outlive
    // the program (it is destroyed by the guard below, before they are dropped); no headers.
    let created = unsafe {
        (api.create)(
            &mut prog,
            source.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    api.check("nvrtcCreateProgram", created)?;
    let program = ProgramGuard { api, prog };

    let option_text = api.options(&target, src.fast_math, src.source.contains("__int128"));
    let options: Vec<CString> = option_text
        .iter()
        .map(|o| CString::new(o.as_str()).map_err(|_| invalid("option")))
        .collect::<Result<_, _>>()?;
    let pointers: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: `pointers` holds `options.len()` NUL-terminated strings that outlive the call.
    let compiled =
        unsafe { (api.compile)(program.prog, pointers.len() as c_int, pointers.as_ptr()) };
    const NVRTC_ERROR_COMPILATION: c_int = 6;
    if compiled == NVRTC_ERROR_COMPILATION {
        return Err(NvrtcError::Compile {
            kernel: src.name.clone(),
            target,
            log: program.log()?,
            cuda_source: src.source.clone(),
        });
    }
    if compiled != 0 {
        let log = program.log().unwrap_or_default();
        let options = option_text.join(" ");
        return Err(NvrtcError::Call {
            call: "nvrtcCompileProgram",
            message: format!(
                "{} with options `{options}`{}{log}",
                api.describe(compiled),
                if log.is_empty() { "" } else { ":\n" }
            ),
        });
    }
    match output {
        Output::Ptx => {
            let mut ptx =
                program.read(("nvrtcGetPTXSize", "nvrtcGetPTX"), api.ptx_size, api.ptx)?;
            let end = ptx.iter().position(|&b| b == 0).unwrap_or(ptx.len());
            ptx.truncate(end);
            Ok(ptx)
        }
        Output::Cubin => program.read(
            ("nvrtcGetCUBINSize", "nvrtcGetCUBIN"),
            api.cubin_size,
            api.cubin,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_names() {
        let a = Arch::new(9, 0);
        assert_eq!(a.sm(), "sm_90");
        assert_eq!(a.compute(), "compute_90");
        assert_eq!(a.to_string(), "9.0");
        assert!(Arch::new(8, 6) < a);
    }

    #[test]
    fn numbered_source() {
        assert_eq!(numbered("a\nb"), "   1 | a\n   2 | b\n");
    }

    #[test]
    fn text_stops_at_nul() {
        assert_eq!(text(b"log line\n\0junk"), "log line");
        assert_eq!(text(b"no nul"), "no nul");
    }

    #[test]
    fn missing_library_says_how_to_install() {
        let e = NvrtcError::LibraryMissing {
            detail: "none of the libraries libnvrtc.so could be loaded".into(),
        };
        let text = e.to_string();
        assert!(text.contains("pip install nvidia-cuda-nvrtc"), "{text}");
        assert!(text.contains("LD_LIBRARY_PATH"), "{text}");
    }

    /// The library is either found, or reported as missing: never a panic.
    #[test]
    fn availability_is_a_result() {
        match available() {
            Ok(()) => {
                let (major, _) = version().expect("version of a loaded NVRTC");
                assert!(major >= 11, "NVRTC {major}");
            }
            Err(NvrtcError::LibraryMissing { detail }) => {
                eprintln!("NVRTC not available ({detail})");
                assert!(matches!(version(), Err(NvrtcError::LibraryMissing { .. })));
                let src = KernelSource {
                    name: "k".into(),
                    source: "extern \"C\" __global__ void k() {}".into(),
                    fast_math: false,
                };
                assert!(matches!(
                    compile_ptx(&src, Arch::new(9, 0)),
                    Err(NvrtcError::LibraryMissing { .. })
                ));
            }
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
}
