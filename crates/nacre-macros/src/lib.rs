//! The `#[jit]` and `#[kernel]` attributes and the derives `Carry`, `TracedEnum` and `Record`
//! of Nacre (use them through `nacre`: `nacre::jit`, `nacre::kernel`, `nacre::Carry`,
//! `nacre::TracedEnum`, `nacre::Record`).
//!
#![doc = include_str!("../REFERENCE.md")]

mod analysis;
mod carry;
mod enums;
mod expand;
mod pattern;
mod record;
mod rewrite;
mod state;

use proc_macro::TokenStream;

/// Makes the control flow of a function traceable.
///
/// ```ignore
/// #[nacre::jit]
/// fn clamp(x: Val<i32>, hi: Val<i32>) -> Val<i32> {
///     if x > hi { hi } else { x }
/// }
/// ```
///
/// # Reference
///
#[doc = include_str!("../REFERENCE.md")]
#[proc_macro_attribute]
pub fn jit(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand("jit", attr.into(), item.into()).into()
}

/// For functions meant to become GPU kernels: launched with `nacre::gpu::launch`, they read
/// `thread_idx_x()` and the other GPU indices, synchronise with `sync_threads()` and share
/// `shared_array::<T, N>()` within a block. The rewrite is [`macro@jit`]'s.
///
/// # Reference
///
#[doc = include_str!("../REFERENCE.md")]
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand("kernel", attr.into(), item.into()).into()
}

/// Makes a struct carriable through traced control flow (`impl nacre::Carry`): assigned in a
/// traced `if` or loop, its traced fields become block parameters, its plain fields must agree
/// on every path. Every field must be carriable: `Val<T>`, `Ptr<T>`, plain scalars, arrays
/// and tuples of them, and other `#[derive(Carry)]` structs. The struct must be `Copy`.
///
/// ```ignore
/// #[derive(Clone, Copy, nacre::Carry)]
/// struct Stats { sum: Val<f64>, count: Val<u32> }
/// ```
#[proc_macro_derive(Carry)]
pub fn derive_carry(item: TokenStream) -> TokenStream {
    match syn::parse::<syn::DeriveInput>(item) {
        Ok(input) => carry::derive(input).unwrap_or_else(|e| e.to_compile_error()),
        Err(e) => e.to_compile_error(),
    }
    .into()
}

/// Makes a fieldless enum with an integer `#[repr(..)]` a traced value: `nacre::EnumVal<E>`
/// holds one of its variants as the discriminant; it compares with `==`/`!=` (with another
/// `EnumVal` or a variant), is matched in `#[jit]` (`E::A | E::B => ..`, `_`, guards), is
/// carried through traced control flow, and is a parameter and return type (the host passes
/// and gets the enum itself). The enum must be `Copy`.
///
/// ```ignore
/// #[derive(Clone, Copy, nacre::TracedEnum)]
/// #[repr(u8)]
/// enum Op { Add = 1, Mul = 2 }
/// ```
#[proc_macro_derive(TracedEnum)]
pub fn derive_traced_enum(item: TokenStream) -> TokenStream {
    match syn::parse::<syn::DeriveInput>(item) {
        Ok(input) => enums::derive(input).unwrap_or_else(|e| e.to_compile_error()),
        Err(e) => e.to_compile_error(),
    }
    .into()
}

/// Makes a `#[repr(C)]` struct of scalars reachable through pointers: `Ptr<S>` (a parameter
/// taking `&[S]`, `&mut [S]`, `Vec<S>` or `Array<S>`), offset by whole records, with
/// `p.fields()` giving one `Ptr` per field (in a generated `{Name}Fields` struct) to read,
/// write or offset. Every field must be a scalar and the fields must fill the struct (no
/// padding), checked at compile time. The struct must be `Copy`.
///
/// ```ignore
/// #[derive(Clone, Copy, nacre::Record)]
/// #[repr(C)]
/// struct Order { price: f64, qty: i32, side: u32 }
/// // in traced code: let o = orders.offset(i).fields(); let total = o.price.read() * ..;
/// ```
#[proc_macro_derive(Record)]
pub fn derive_record(item: TokenStream) -> TokenStream {
    match syn::parse::<syn::DeriveInput>(item) {
        Ok(input) => record::derive(input).unwrap_or_else(|e| e.to_compile_error()),
        Err(e) => e.to_compile_error(),
    }
    .into()
}
