//! [`CExecutable`]: a loaded shared library built from generated C.

use crate::emit::{
    ARRAY_ENTRY_SYMBOL, ENTRY_SYMBOL, EXTERNS_SYMBOL, KERNEL_HANDLES_SYMBOL, LAUNCHER_SYMBOL,
};
use libloading::Library;
use nacre_backend::LaunchFn;
use nacre_backend::{BackendError, Executable};
use nacre_ir::{Module, Trap};
use std::fmt;
use std::sync::Arc;

/// The type of the array trampoline (see [`crate::emit::ARRAY_ENTRY_SYMBOL`]).
type ArrayEntry = unsafe extern "C" fn(args: *const u64, status: *mut u32) -> u64;

/// A module compiled by the C backend: the loaded library, its entry points and the source it
/// was built from. The library stays loaded as long as the executable (or a clone of its
/// library handle) lives; addresses from [`Executable::native_entry`] are valid only that long.
pub struct CExecutable {
    library: Arc<Library>,
    array_entry: ArrayEntry,
    native_entry: usize,
    arity: usize,
    source: String,
}

fn load_error(symbol: &str, e: libloading::Error) -> BackendError {
    BackendError::Load(format!("symbol `{symbol}`: {e}"))
}

impl CExecutable {
    /// Resolves the entry points of a library built from `source` (the output of
    /// [`crate::emit_c`] for `module`) and fills in its table of external functions and, when
    /// host code launches kernels, its launch globals from `launch` (the output of
    /// [`crate::emit::launch_table`] for `module`).
    pub(crate) fn new(
        library: Library,
        module: &Module,
        source: String,
        externs: &[usize],
        launch: Option<(LaunchFn, Vec<usize>)>,
    ) -> Result<CExecutable, BackendError> {
        let arity = module
            .entry_function()
            .map_or(0, |f| f.signature.params.len());
        // SAFETY: the generated source defines `nacre_entry_array` with exactly this type.
        let array_entry: ArrayEntry = unsafe { library.get::<ArrayEntry>(ARRAY_ENTRY_SYMBOL) }
            .map(|s| *s)
            .map_err(|e| load_error(ARRAY_ENTRY_SYMBOL, e))?;
        // SAFETY: reading a symbol's address as a pointer is valid for any symbol.
        let native_entry = unsafe { library.get::<*const u8>(ENTRY_SYMBOL) }
            .map(|s| *s as usize)
            .map_err(|e| load_error(ENTRY_SYMBOL, e))?;
        if !module.externs.is_empty() {
            // SAFETY: the generated source defines `nacre_externs` as an array of
            // `module.externs.len()` function pointers (pointer-sized, like `usize`), and
            // nothing reads it before this function returns.
            unsafe {
                let table = library
                    .get::<*mut usize>(EXTERNS_SYMBOL)
                    .map_err(|e| load_error(EXTERNS_SYMBOL, e))?;
                let table: *mut usize = *table;
                for (i, &addr) in externs.iter().enumerate() {
                    table.add(i).write(addr);
                }
            }
        }
        if let Some((launcher, handles)) = launch {
            // SAFETY: for a module whose host code launches kernels, the generated source
            // defines `nacre_launcher` as a function pointer (pointer-sized, like `usize`) and
            // `nacre_kernel_handles` as an array of one `uintptr_t` per launched kernel, which
            // is `handles.len()` (both come from `launched_kernels`); nothing reads them before
            // this function returns.
            unsafe {
                let slot = library
                    .get::<*mut usize>(LAUNCHER_SYMBOL)
                    .map_err(|e| load_error(LAUNCHER_SYMBOL, e))?;
                let slot: *mut usize = *slot;
                slot.write(launcher as usize);
                let table = library
                    .get::<*mut usize>(KERNEL_HANDLES_SYMBOL)
                    .map_err(|e| load_error(KERNEL_HANDLES_SYMBOL, e))?;
                let table: *mut usize = *table;
                for (i, &handle) in handles.iter().enumerate() {
                    table.add(i).write(handle);
                }
            }
        }
        crate::stack_check::fill(&library, module)?;
        Ok(CExecutable {
            library: Arc::new(library),
            array_entry,
            native_entry,
            arity,
            source,
        })
    }

    /// The C source the library was built from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The loaded library.
    pub fn library(&self) -> &Arc<Library> {
        &self.library
    }
}

impl Executable for CExecutable {
    /// Calls the entry function through the array trampoline.
    ///
    /// # Panics
    /// If `args` does not hold exactly one value per entry parameter.
    fn call(&self, args: &[u64]) -> Result<u64, Trap> {
        assert_eq!(
            args.len(),
            self.arity,
            "the entry function takes {} arguments",
            self.arity
        );
        let mut status = 0u32;
        // SAFETY: `array_entry` lives in `self.library`, which is loaded while `self` lives; it
        // reads exactly `self.arity` arguments, as checked above, and writes only `status`.
        let result = unsafe { (self.array_entry)(args.as_ptr(), &mut status) };
        match status {
            0 => Ok(result),
            // Generated code writes only trap codes; a launcher (foreign code) might write
            // another nonzero value, which counts as a device error.
            code => Err(Trap::from_code(code).unwrap_or(Trap::DeviceError)),
        }
    }

    fn native_entry(&self) -> Option<*const u8> {
        Some(self.native_entry as *const u8)
    }

    fn listing(&self) -> Option<&str> {
        Some(&self.source)
    }
}

impl fmt::Debug for CExecutable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CExecutable")
            .field("arity", &self.arity)
            .field("native_entry", &(self.native_entry as *const u8))
            .finish_non_exhaustive()
    }
}
