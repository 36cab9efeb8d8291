//! Code for the *state* of a construct: the tuple of its variables passed into the runtime,
//! the closure patterns that rebind them, and the destructuring assignment that writes them
//! back afterwards.
//!
//! The variables keep the span of their first assignment in the user's code, so they resolve
//! exactly like the user's own identifiers and type errors (a variable that cannot be carried)
//! point there. States of more than [`CHUNK`] variables are nested tuples of at most `CHUNK`
//! elements (the runtime's `Carry` is implemented for tuples of up to 16).

use proc_macro2::{Ident, TokenStream};
use quote::{quote, quote_spanned, ToTokens};

/// The largest flat tuple generated.
pub(crate) const CHUNK: usize = 12;

/// How a closure pattern binds a state variable.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Bind {
    /// `mut x`: the closure assigns it.
    Mut,
    /// `x`: the closure only reads it.
    Plain,
    /// `_`: the closure does not use it.
    Ignore,
}

/// Groups items into nested tuples of at most [`CHUNK`] elements.
fn nest(items: Vec<TokenStream>) -> TokenStream {
    if items.len() <= CHUNK {
        return quote!((#(#items,)*));
    }
    let chunks: Vec<TokenStream> = items.chunks(CHUNK).map(|c| nest(c.to_vec())).collect();
    nest(chunks)
}

/// The state as a tuple expression (`(x, y,)`, `()` when empty). Used as a value and, on the
/// left of `=`, as the assignee that writes the state back.
pub(crate) fn tuple(vars: &[Ident]) -> TokenStream {
    nest(vars.iter().map(|v| quote!(#v)).collect())
}

/// The state as the input of a construct: like [`tuple`], with the tuple itself spanned at
/// the first variable's assignment, so that a type error about the state (a variable that
/// cannot be carried) points at the user's assignment.
pub(crate) fn input(vars: &[Ident]) -> TokenStream {
    let Some(first) = vars.first() else {
        return quote!(());
    };
    let inner = tuple(vars);
    let inner: Vec<TokenStream> = match inner.into_iter().next() {
        Some(proc_macro2::TokenTree::Group(g)) => vec![g.stream()],
        other => other.into_iter().map(|t| t.into_token_stream()).collect(),
    };
    quote_spanned!(first.span()=> (#(#inner)*))
}

/// The closure pattern that rebinds the state's variables.
pub(crate) fn pattern(vars: &[Ident], bind: impl Fn(&Ident) -> Bind) -> TokenStream {
    nest(
        vars.iter()
            .map(|v| match bind(v) {
                Bind::Mut => quote!(mut #v),
                Bind::Plain => quote!(#v),
                Bind::Ignore => quote!(_),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::Span;

    fn vars(n: usize) -> Vec<Ident> {
        (0..n)
            .map(|i| Ident::new(&format!("v{i}"), Span::call_site()))
            .collect()
    }

    #[test]
    fn small_states_are_flat() {
        assert_eq!(tuple(&[]).to_string(), "()");
        assert_eq!(tuple(&vars(1)).to_string(), "(v0 ,)");
        assert_eq!(
            pattern(&vars(2), |v| if v == "v0" {
                Bind::Mut
            } else {
                Bind::Ignore
            })
            .to_string(),
            "(mut v0 , _ ,)"
        );
    }

    #[test]
    fn large_states_nest() {
        let t: syn::Expr = syn::parse2(tuple(&vars(30))).unwrap();
        let syn::Expr::Tuple(t) = t else {
            panic!("a tuple")
        };
        assert_eq!(t.elems.len(), 3);
        let t: syn::Expr = syn::parse2(tuple(&vars(200))).unwrap();
        let syn::Expr::Tuple(t) = t else {
            panic!("a tuple")
        };
        assert!(t.elems.len() <= CHUNK);
    }
}
