//! `match` on values: a `match` whose arms test only values (literals, ranges, `|`, `_`,
//! bindings, `x @ ..`, guards) becomes a chain of `if`/`else if` over the scrutinee, which the
//! rewriter then records as traced branches when the scrutinee is a `Val` (and runs natively
//! when it is a plain value).
//!
//! A `match` whose arms also name unit variants or constants (`E::A`, `Red`) becomes a chain of
//! `if`s that ask the scrutinee `::nacre::cf::Scrutinee` whether it matches each arm: a traced
//! enum answers with a traced condition, any other value natively with `matches!` (see
//! `nacre_trace::cf::scrutinee`). A closure holding the unguarded arms as a real `match` over
//! the enum type lets Rust check exhaustiveness. Any other pattern (a tuple, a struct, a
//! variant with fields) keeps the `match` native, as Rust runs it.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Error, Expr, ExprMatch, Pat, RangeLimits};

/// The scrutinee's temporary.
fn scrutinee() -> TokenStream {
    quote_spanned!(Span::mixed_site()=> __nacre_scrutinee)
}

/// The `if` chain of `m` when every arm tests values only; `None` otherwise (the `match` stays
/// native). A chain needs a final catch-all arm (`_` or a binding, without guard), or arms
/// for both `true` and `false`: a traced value has no exhaustiveness check.
pub(crate) fn lower(m: &ExprMatch) -> Option<Result<Expr, Error>> {
    if m.arms.iter().all(|a| is_variant_pattern(&a.pat))
        && m.arms.iter().any(|a| names_a_variant(&a.pat))
    {
        return Some(lower_variants(m));
    }
    if !m.arms.iter().all(|a| is_value_pattern(&a.pat)) {
        return None;
    }
    let last = m.arms.last()?;
    let exhaustive = (last.guard.is_none() && catches_all(&last.pat)) || covers_bools(m);
    if !exhaustive {
        return Some(Err(Error::new(
            m.match_token.span,
            "a `match` on literals in `#[jit]` needs a last arm `_ => ..` (a traced value has no \
             exhaustiveness check)",
        )));
    }
    let s = scrutinee();
    let e = &m.expr;
    let n = m.arms.len();
    let mut chain: Option<TokenStream> = None;
    for (k, arm) in m.arms.iter().enumerate().rev() {
        let binds = bindings(&arm.pat);
        let body = &arm.body;
        let arm_body = quote!({ #( let #binds = #s; )* #body });
        chain = Some(match chain {
            // The last arm is the final `else`: it catches what the others did not.
            None if k + 1 == n => arm_body,
            None => unreachable!("the last arm is visited first"),
            Some(rest) => {
                let cond = condition(&arm.pat);
                let cond = match &arm.guard {
                    Some((_, g)) => quote!(#cond && { #( let #binds = #s; )* #g }),
                    None => cond,
                };
                let kw = m.match_token.span;
                quote_spanned!(kw=> if #cond #arm_body else #rest)
            }
        });
    }
    let chain = chain?;
    Some(syn::parse2(quote!({ let #s = #e; #chain })))
}

/// The `if` chain of a `match` over variants (see the module docs).
fn lower_variants(m: &ExprMatch) -> Result<Expr, Error> {
    let last = m.arms.last().expect("a match naming a variant has arms");
    if let Some((if_token, _)) = &last.guard {
        return Err(Error::new(
            if_token.span,
            "the last arm of a `match` on variants in `#[jit]` cannot have a guard (it becomes              the final `else`)",
        ));
    }
    let mixed = Span::mixed_site();
    let (s, q, x) = (
        scrutinee(),
        quote_spanned!(mixed=> __nacre_query),
        quote_spanned!(mixed=> __nacre_variant),
    );
    let unguarded = m
        .arms
        .iter()
        .filter(|a| a.guard.is_none())
        .map(|a| without_bindings(&a.pat));
    // The witness's scrutinee is spanned at `match`, where Rust reports a missed variant.
    let kw = m.match_token.span;
    let w = syn::Ident::new("__nacre_variant", Span::mixed_site().located_at(kw));
    let witness =
        quote_spanned!(kw=> #q.exhaustive(|#w| ::nacre::__exhaustive!(#w; #( #unguarded ),*)););
    let n = m.arms.len();
    let mut chain = TokenStream::new();
    for (k, arm) in m.arms.iter().enumerate().rev() {
        let binds = bindings(&arm.pat);
        let body = &arm.body;
        let arm_body = quote!({ #( let #binds = #q.bound(); )* #body });
        chain = if k + 1 == n {
            arm_body
        } else {
            let pat = without_bindings(&arm.pat);
            let test = quote_spanned!(arm.pat.span()=> #q.is(|#x| ::core::matches!(#x, #pat)));
            let cond = match &arm.guard {
                Some((_, g)) => quote!(#test && { #( let #binds = #q.bound(); )* #g }),
                None => test,
            };
            let kw = m.match_token.span;
            quote_spanned!(kw=> if #cond #arm_body else #chain)
        };
    }
    let e = &m.expr;
    syn::parse2(quote!({
        #[allow(unused_imports)]
        use ::nacre::cf::{NativeScrutinee as _, TracedScrutinee as _};
        let #s = &(#e);
        let #q = &::nacre::cf::Scrutinee(#s);
        #witness
        #chain
    }))
}

/// True for the patterns of a `match` over variants: value patterns, unit variants and
/// constants (paths and capitalised names), and bindings of the whole scrutinee.
fn is_variant_pattern(p: &Pat) -> bool {
    match p {
        Pat::Path(_) | Pat::Lit(_) | Pat::Range(_) | Pat::Wild(_) => true,
        Pat::Ident(i) => {
            i.by_ref.is_none()
                && i.mutability.is_none()
                && i.subpat.as_ref().is_none_or(|(_, s)| is_variant_pattern(s))
        }
        Pat::Or(o) => o.cases.iter().all(is_variant_pattern),
        Pat::Paren(p) => is_variant_pattern(&p.pat),
        _ => false,
    }
}

/// True if `p` names a unit variant or a constant somewhere.
fn names_a_variant(p: &Pat) -> bool {
    match p {
        Pat::Path(_) => true,
        Pat::Ident(i) => match &i.subpat {
            Some((_, s)) => names_a_variant(s),
            None => looks_like_a_constant(&i.ident),
        },
        Pat::Or(o) => o.cases.iter().any(names_a_variant),
        Pat::Paren(p) => names_a_variant(&p.pat),
        _ => false,
    }
}

/// `p` with its bindings of the whole scrutinee removed (`x @ P` is `P`, `x` is `_`), as the
/// tests and the exhaustiveness witness use it.
fn without_bindings(p: &Pat) -> TokenStream {
    match p {
        Pat::Ident(i) if !looks_like_a_constant(&i.ident) => match &i.subpat {
            Some((_, sub)) => without_bindings(sub),
            None => quote_spanned!(i.ident.span()=> _),
        },
        Pat::Or(o) => {
            let cases = o.cases.iter().map(without_bindings);
            quote!(#( #cases )|*)
        }
        Pat::Paren(p) => {
            let inner = without_bindings(&p.pat);
            quote!((#inner))
        }
        other => quote!(#other),
    }
}

/// True for patterns that test a value only.
fn is_value_pattern(p: &Pat) -> bool {
    match p {
        Pat::Lit(_) | Pat::Range(_) | Pat::Wild(_) => true,
        Pat::Ident(i) => {
            i.by_ref.is_none()
                && i.mutability.is_none()
                && i.subpat.as_ref().is_none_or(|(_, s)| is_value_pattern(s))
                && !looks_like_a_constant(&i.ident)
        }
        Pat::Or(o) => o.cases.iter().all(is_value_pattern),
        Pat::Paren(p) => is_value_pattern(&p.pat),
        _ => false,
    }
}

/// An identifier pattern that may name a constant or a unit variant (`NONE`, `Red`) rather
/// than bind: left to Rust's `match`.
fn looks_like_a_constant(ident: &syn::Ident) -> bool {
    ident.to_string().starts_with(|c: char| c.is_uppercase())
}

/// True for `_` and plain bindings.
fn catches_all(p: &Pat) -> bool {
    match p {
        Pat::Wild(_) => true,
        Pat::Ident(i) => i.subpat.is_none(),
        Pat::Paren(p) => catches_all(&p.pat),
        _ => false,
    }
}

/// True if unguarded arms test both `true` and `false`.
fn covers_bools(m: &ExprMatch) -> bool {
    let has = |want: bool| {
        m.arms.iter().any(|a| {
            a.guard.is_none()
                && matches!(&a.pat, Pat::Lit(l) if matches!(&l.lit, syn::Lit::Bool(b) if b.value == want))
        })
    };
    has(true) && has(false)
}

/// The names a pattern binds (to the whole scrutinee: only `x` and `x @ ..` bind here).
fn bindings(p: &Pat) -> Vec<syn::Ident> {
    match p {
        Pat::Ident(i) if !looks_like_a_constant(&i.ident) => vec![i.ident.clone()],
        Pat::Or(o) => o.cases.first().map(bindings).unwrap_or_default(),
        Pat::Paren(p) => bindings(&p.pat),
        _ => Vec::new(),
    }
}

/// The condition under which the scrutinee matches `p`, as comparisons `#[jit]` rewrites.
fn condition(p: &Pat) -> TokenStream {
    let s = scrutinee();
    match p {
        Pat::Lit(l) => quote_spanned!(l.span()=> (#s == #l)),
        Pat::Range(r) => {
            let lo = r
                .start
                .as_ref()
                .map(|a| quote_spanned!(a.span()=> (#s >= #a)));
            let hi = r.end.as_ref().map(|b| match r.limits {
                RangeLimits::HalfOpen(_) => quote_spanned!(b.span()=> (#s < #b)),
                RangeLimits::Closed(_) => quote_spanned!(b.span()=> (#s <= #b)),
            });
            match (lo, hi) {
                (Some(lo), Some(hi)) => quote!((#lo && #hi)),
                (Some(c), None) | (None, Some(c)) => c,
                (None, None) => quote!(true),
            }
        }
        Pat::Ident(i) => match &i.subpat {
            Some((_, sub)) => condition(sub),
            None => quote!(true),
        },
        Pat::Or(o) => {
            let cases = o.cases.iter().map(condition);
            quote!((#( #cases )||*))
        }
        Pat::Paren(p) => condition(&p.pat),
        _ => quote!(true),
    }
}
