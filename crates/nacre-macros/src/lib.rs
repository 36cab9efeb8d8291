//! `#[jit]`: the attribute that makes ordinary Rust control flow traceable.
//!
//! Rust cannot overload `if`, `while`, `<` or `&&`, so `#[jit]` rewrites the control flow of
//! the function it annotates into calls of the runtime's structured control-flow API,
//! `::nacre::cf` (the annotated code must be able to name the `nacre` crate). Each construct
//! then works on plain values (decided while tracing: the untaken branch is never traced,
//! loops unroll) and on traced ones (`Val<bool>` conditions and ranges with a `Val` bound are
//! recorded as IR branches and loops). Outside a trace the function simply runs.
//!
//! # The rewrite
//!
//! - The body runs inside `cf::function_body(move || -> Flow<R> { .. })`, where `R` is the
//!   declared return type, which must be `Val<T>`, `Ptr<T>` or `()` (checked through
//!   `cf::returns::<R>`, spanned at the return type). Values returned (the tail and
//!   `return e`) are converted with `Into::<R>::into`, pushed into `if`/`match` arms and block
//!   tails: `if c { 1 } else { x }` returns a `Val<i32>` from both branches, so a traced `if`
//!   merges traced values.
//! - A construct's *state* is the outer variables assigned inside it (`x = ..`, `x op= ..`,
//!   destructuring `(a, b) = ..`, `x.field = ..`), in order of first assignment, following
//!   Rust's scoping (`let`, closure parameters, patterns shadow). The state is passed into
//!   each closure as a tuple and rebound there (nested tuples beyond 12 variables); afterwards
//!   it is written back with a destructuring assignment. State values must be `Carry` (`Val`,
//!   `Ptr`, plain scalars, tuples and arrays of them).
//! - `if c { A } else { B }` (also `else if` chains, a missing `else`, as a statement or an
//!   expression) → `cf::branch(c, state, |state| .., |state| ..)` (`cf::if_else` with the
//!   state's type tied to its input), each closure returning `Flow::Next((state, value))`.
//!   `if let` and `match` run natively; their arms are rewritten in place.
//! - `while c { B }` → `cf::while_loop(state, |state| c, |state| ..)`, `loop { B }` →
//!   `cf::loop_` (an expression of type `!` when no `break` leaves it), `while let P = e { B }`
//!   → `cf::while_loop` on `true` whose body starts with `let P = e else { break }`.
//!   `for P in e { B }` → `cf::for_loop(e, state, |P, state| ..)`, where a range literal
//!   `a..b` / `a..=b` (also under `.step_by(s)`) becomes `cf::range(a, b)` /
//!   `cf::range_inclusive(a, b)` (a traced loop when a bound is a `Val`); other iterators run
//!   natively, unrolling the loop while tracing.
//! - `break` / `continue` (with labels) → `return cf::brk(depth, state)` /
//!   `return cf::cont(depth, state)`, where `depth` counts the loops between it and its target
//!   (0 = innermost) and `state` is the target loop's; `return e` →
//!   `return cf::ret::<R, _>(e)`. Every construct's result is matched: `Flow::Exit` returns
//!   `Flow::Exit` from the enclosing generated closure.
//! - `a < b` (and `<=`, `>`, `>=`, `==`, `!=`) → `cf::lt(&a, &b)` ... (the operands are not
//!   moved, as with the operators); `a && b` → `cf::and(a, || b)`, `a || b` →
//!   `cf::or(a, || b)`. Other operators stay (they are implemented on `Val`).
//! - `a[i]` in value position (also as a method receiver) → `a.nacre_index(i)` (a `Ptr` load,
//!   or a copy out of a Rust container); `a[i] = v` → `a.nacre_index_set(i, v)`;
//!   `a[i] op= v` evaluates `i` and `v` once, reads, applies `op`, writes. Indexing under
//!   `&`/`&mut`, as a field's base, or as a `match`/`if let`/`while let` scrutinee stays
//!   native.
//! - User closures, nested items and macro invocations are left exactly as written.
//!
//! Generated code keeps the user's spans where errors should point (conditions, operators,
//! state variables, the keyword of each construct) and the macro's span elsewhere, and is
//! free of warnings (no unreachable tails after diverging branches, no spurious `mut`s or
//! parentheses).
//!
//! # Rejected (compile errors spanned at the construct)
//!
//! `break` with a value; labelled blocks; the `?` operator; control flow (`if`, loops,
//! `break`, `continue`, `return`) inside a `while` condition or the right operand of
//! `&&`/`||`; assignments in a `while` condition; `let` chains in `while`; a `break` /
//! `continue` after a `let` that shadows one of its target loop's state variables;
//! `break`/`continue` outside a loop or to an unknown label; `async`/`const` functions;
//! `impl Trait` return types; arguments to the attribute.
//!
//! # Limitations
//!
//! - Host containers mutated in place (a `&mut self` method, `v[i] = x` on a `Vec` or array)
//!   inside a traced construct are not part of its state (pointer stores are recorded as
//!   memory operations; a Rust container is just mutated while tracing): use `Ptr`s, or
//!   reassign the variable.
//! - The two branches of an `if` (and a `while` condition and its body) are separate closures,
//!   so they cannot both borrow the same host variable mutably.
//! - A variable declared without initialiser and initialised inside a construct
//!   (`let x; if c { x = 1 } else { x = 2 }`) is not supported.
//! - Each `else if` nests a closure: chains of more than about 125 arms exceed rustc's default
//!   `recursion_limit` (128) while instantiating; raise it with
//!   `#![recursion_limit = "256"]` (or more) in the crate that defines them.
//! - The expansion names `::nacre::cf`: the `nacre` crate must be a dependency under that
//!   name (inside the `nacre` crate itself, `extern crate self as nacre;`).

mod analysis;
mod carry;
mod expand;
mod rewrite;
mod state;

use proc_macro::TokenStream;

/// Makes the control flow of a function traceable (see the crate docs for the rewrite).
///
/// ```ignore
/// #[nacre::jit]
/// fn clamp(x: Val<i32>, hi: Val<i32>) -> Val<i32> {
///     if x > hi { hi } else { x }
/// }
/// ```
#[proc_macro_attribute]
pub fn jit(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand("jit", attr.into(), item.into()).into()
}

/// For functions meant to become GPU kernels. For now it is an alias of [`macro@jit`] and
/// rewrites the function identically.
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
