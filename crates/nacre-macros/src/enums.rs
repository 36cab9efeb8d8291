//! `#[derive(TracedEnum)]`: a fieldless enum with an integer `repr` becomes a traced value
//! (`nacre::EnumVal<E>`), passed to and from compiled code as its discriminant.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Error, Fields, Ident};

/// The integer types an enum's `repr` may name.
const REPRS: [&str; 8] = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"];

/// `impl TracedEnum`, `impl HostValue` and the comparisons of the enum with its traced values.
pub(crate) fn derive(input: DeriveInput) -> Result<TokenStream, Error> {
    let name = &input.ident;
    let Data::Enum(data) = &input.data else {
        return Err(Error::new_spanned(
            name,
            "`#[derive(TracedEnum)]` is for fieldless enums; a struct of traced values derives \
             `Carry`",
        ));
    };
    if !input.generics.params.is_empty() {
        return Err(Error::new_spanned(
            &input.generics,
            "`#[derive(TracedEnum)]` does not support generic enums",
        ));
    }
    if let Some(v) = data
        .variants
        .iter()
        .find(|v| !matches!(v.fields, Fields::Unit))
    {
        return Err(Error::new_spanned(
            &v.fields,
            "a traced enum's variants cannot have fields (it is traced as its discriminant)",
        ));
    }
    if data.variants.is_empty() {
        return Err(Error::new_spanned(
            name,
            "a traced enum needs at least one variant",
        ));
    }
    let repr = repr_of(&input)?;
    let variants = data.variants.iter().map(|v| &v.ident);
    let label = name.to_string();
    let nacre = quote!(::nacre);
    let host = quote!(#nacre::HostValue);
    let eq = quote!(#nacre::cf::Equality);
    let ev = quote!(#nacre::EnumVal<#name>);
    let vb = quote!(#nacre::Val<bool>);
    Ok(quote! {
        impl #nacre::TracedEnum for #name {
            type Repr = #repr;
            const VARIANTS: &'static [Self] = &[#( #name::#variants ),*];
            const NAME: &'static str = #label;
            fn to_repr(self) -> #repr { self as #repr }
        }
        impl #host for #name {
            type Abi = <#repr as #host>::Abi;
            fn to_bits(self) -> u64 { <#repr as #host>::to_bits(self as #repr) }
            fn from_bits(bits: u64) -> Self { #nacre::__private::variant_from_bits(bits) }
            fn to_abi(self) -> Self::Abi { <#repr as #host>::to_abi(self as #repr) }
            fn from_abi(abi: Self::Abi) -> Self {
                let r = <#repr as #host>::from_abi(abi);
                #nacre::__private::variant_from_bits(<#repr as #host>::to_bits(r))
            }
        }
        impl #eq<#name> for #ev {
            type Output = #vb;
            fn eq(self, rhs: #name) -> #vb { <#ev>::eq(self, rhs) }
            fn ne(self, rhs: #name) -> #vb { <#ev>::ne(self, rhs) }
        }
        impl #eq<&#name> for &#ev {
            type Output = #vb;
            fn eq(self, rhs: &#name) -> #vb { <#ev>::eq(*self, *rhs) }
            fn ne(self, rhs: &#name) -> #vb { <#ev>::ne(*self, *rhs) }
        }
        impl #eq<#ev> for #name {
            type Output = #vb;
            fn eq(self, rhs: #ev) -> #vb { <#ev>::eq(rhs, self) }
            fn ne(self, rhs: #ev) -> #vb { <#ev>::ne(rhs, self) }
        }
        impl #eq<&#ev> for &#name {
            type Output = #vb;
            fn eq(self, rhs: &#ev) -> #vb { <#ev>::eq(*rhs, *self) }
            fn ne(self, rhs: &#ev) -> #vb { <#ev>::ne(*rhs, *self) }
        }
    })
}

/// The integer type of the enum's `#[repr(..)]`.
fn repr_of(input: &DeriveInput) -> Result<Ident, Error> {
    let mut found = None;
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            if let Some(id) = meta.path.get_ident() {
                if REPRS.contains(&id.to_string().as_str()) {
                    found = Some(id.clone());
                }
            }
            Ok(())
        })?;
    }
    found.ok_or_else(|| {
        Error::new_spanned(
            &input.ident,
            "a traced enum needs an integer representation: add `#[repr(u8)]` (or i8..i64, \
             u16..u64)",
        )
    })
}
