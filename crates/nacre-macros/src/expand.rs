//! The attribute's entry: checks the function, rewrites its body and wraps it in
//! `cf::function_body`.

use crate::rewrite::Rewriter;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Error, ItemFn, ReturnType, Type};

/// Expands `#[jit]` (or `#[kernel]`, named `name` in messages) on `item`; errors become
/// `compile_error!`s next to a body-less copy of the function (`unreachable!()` body), so that
/// its callers still resolve.
pub(crate) fn expand(name: &str, attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            let e = Error::new(e.span(), format!("`#[{name}]` applies to functions: {e}"));
            let err = e.to_compile_error();
            return quote!(#err #item);
        }
    };
    match rewrite_fn(name, attr, func.clone()) {
        Ok(out) => out,
        Err(e) => {
            let err = e.to_compile_error();
            let ItemFn {
                attrs, vis, sig, ..
            } = func;
            quote! {
                #(#attrs)*
                #[allow(unused_variables)]
                #vis #sig {
                    #err
                    ::core::unreachable!()
                }
            }
        }
    }
}

/// Whether a type mentions `impl Trait` (which a closure's return type cannot name).
fn has_impl_trait(ty: &Type) -> bool {
    struct Finder(bool);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let mut f = Finder(false);
    syn::visit::Visit::visit_type(&mut f, ty);
    f.0
}

fn rewrite_fn(name: &str, attr: TokenStream, func: ItemFn) -> Result<TokenStream, Error> {
    if !attr.is_empty() {
        return Err(Error::new_spanned(
            attr,
            format!("`#[{name}]` takes no arguments"),
        ));
    }
    let sig = &func.sig;
    if let Some(t) = &sig.asyncness {
        return Err(Error::new(
            t.span,
            format!("`#[{name}]` functions cannot be `async`"),
        ));
    }
    if let Some(t) = &sig.constness {
        return Err(Error::new(
            t.span,
            format!("`#[{name}]` functions cannot be `const`"),
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(Error::new_spanned(
            v,
            format!("`#[{name}]` functions cannot be variadic"),
        ));
    }
    let ret = match &sig.output {
        ReturnType::Default => None,
        ReturnType::Type(_, ty) if matches!(&**ty, Type::Tuple(t) if t.elems.is_empty()) => None,
        ReturnType::Type(_, ty) if has_impl_trait(ty) => {
            return Err(Error::new_spanned(
                ty,
                format!(
                    "`#[{name}]` functions return `Val<T>`, `Ptr<T>` or `()`, not `impl Trait`"
                ),
            ));
        }
        ReturnType::Type(_, ty) => Some((**ty).clone()),
    };
    let mut rw = Rewriter::new(ret.clone());
    let body = rw.function_body(*func.block);
    let uses = match (rw.index_read, rw.index_write) {
        (false, false) => quote!(),
        (true, false) => quote!(
            use ::nacre::cf::{HostIndexRead as _, PtrIndexRead as _};
        ),
        (false, true) => quote!(
            use ::nacre::cf::{HostIndexWrite as _, PtrIndexWrite as _};
        ),
        (true, true) => quote! {
            use ::nacre::cf::{HostIndexRead as _, HostIndexWrite as _, PtrIndexRead as _, PtrIndexWrite as _};
        },
    };
    rw.finish()?;
    let ItemFn {
        attrs, vis, sig, ..
    } = func;
    let (ret_ty, check) = match &ret {
        Some(ty) => {
            let check = quote_spanned!(ty.span()=> let _: fn() = ::nacre::cf::returns::<#ty>;);
            (ty.to_token_stream(), check)
        }
        None => (quote!(()), quote!()),
    };
    Ok(quote! {
        #(#attrs)*
        #vis #sig {
            #check
            ::nacre::cf::function_body(move || -> ::nacre::cf::Flow<#ret_ty> {
                #uses
                #body
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::expand;
    use proc_macro2::TokenStream;
    use quote::quote;

    fn expand_fn(item: TokenStream) -> String {
        let out = expand("jit", TokenStream::new(), item);
        let f: syn::ItemFn = syn::parse2(out.clone()).expect("the expansion is a function");
        quote!(#f).to_string()
    }

    fn count(haystack: &str, needle: &str) -> usize {
        haystack.matches(needle).count()
    }

    #[test]
    fn constructs_become_cf_calls() {
        let out = expand_fn(quote! {
            fn f(x: Val<i32>, p: Ptr<i32>) -> Val<i32> {
                let mut r = x;
                if x < 0 { r = -x; } else if x == 0 { r = 1; }
                while r > 100 && x != 3 { r = r / 2; }
                for i in (0..x).step_by(2) { p[i] += r; }
                loop { if r > 5 { break; } r += 1; }
                r
            }
        });
        assert_eq!(count(&out, "nacre :: cf :: function_body"), 1);
        assert_eq!(count(&out, "nacre :: cf :: branch"), 3);
        assert_eq!(count(&out, "nacre :: cf :: while_loop"), 1);
        assert_eq!(count(&out, "nacre :: cf :: for_loop"), 1);
        assert_eq!(count(&out, "nacre :: cf :: range (0 , x) . step_by (2)"), 1);
        assert_eq!(count(&out, "nacre :: cf :: loop_"), 1);
        assert_eq!(count(&out, "nacre :: cf :: brk (0usize , (r ,))"), 1);
        assert_eq!(count(&out, "nacre :: cf :: and"), 1);
        assert_eq!(count(&out, "nacre :: cf :: lt (& x , & 0)"), 1);
        assert_eq!(count(&out, "nacre_index_set"), 1);
        assert_eq!(count(&out, "nacre :: cf :: returns :: < Val < i32 > >"), 1);
    }

    #[test]
    fn exits_carry_the_target_loop_state_and_depth() {
        let out = expand_fn(quote! {
            fn f(n: Val<i32>) -> Val<i32> {
                let mut a = n;
                let mut b = n;
                'outer: for i in 0..n {
                    a += i;
                    for j in 0..i {
                        b += j;
                        if j > 3 { continue 'outer; }
                        if j > 5 { return a; }
                    }
                }
                a + b
            }
        });
        assert_eq!(count(&out, "nacre :: cf :: cont (1usize , (a , b ,))"), 1);
        assert_eq!(
            count(&out, "return :: nacre :: cf :: ret :: < Val < i32 > , _ >"),
            1
        );
    }

    #[test]
    fn user_closures_and_nested_items_are_left_alone() {
        let out = expand_fn(quote! {
            fn f(x: Val<i32>) -> Val<i32> {
                let g = |y: i32| if y < 0 { -y } else { y };
                fn h(a: i32) -> bool { a < 3 }
                x + g(2) + h(1) as i32
            }
        });
        assert_eq!(count(&out, "nacre :: cf :: branch"), 0);
        assert_eq!(count(&out, "if y < 0"), 1);
        assert_eq!(count(&out, "a < 3"), 1);
    }

    #[test]
    fn misuse_becomes_compile_errors_in_a_recovery_function() {
        let out = expand(
            "jit",
            TokenStream::new(),
            quote! {
                fn f(x: Val<i32>) -> Val<i32> {
                    loop { break x; }
                }
            },
        );
        let f: syn::ItemFn = syn::parse2(out).expect("an error-recovery function");
        let text = quote!(#f).to_string();
        assert!(text.contains("compile_error"), "{text}");
        assert!(text.contains("unreachable"), "{text}");

        let out = expand(
            "kernel",
            quote!(fast),
            quote!(
                fn f() {}
            ),
        );
        assert!(out.to_string().contains("`#[kernel]` takes no arguments"));

        let out = expand(
            "jit",
            TokenStream::new(),
            quote!(
                struct S;
            ),
        );
        assert!(out.to_string().contains("compile_error"));
    }
}
