//! `#[derive(Carry)]`: a struct of traced values (and of other carriable values: nested
//! structs, arrays, tuples, plain scalars) carried through traced control flow field by field.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{parse_quote, Data, DeriveInput, Error, Fields, Index, Member};

/// The `impl ::nacre::Carry` of a struct (and `impl ::nacre::cf::Return`, so `#[jit]` helpers
/// return it): its fields flattened in declaration order and rebuilt in the same order. Enums
/// and unions are an error.
pub(crate) fn derive(input: DeriveInput) -> Result<TokenStream, Error> {
    let Data::Struct(data) = &input.data else {
        return Err(Error::new_spanned(
            &input.ident,
            "`#[derive(Carry)]` supports structs only: a fieldless enum derives `TracedEnum` (traced as `EnumVal<E>`)",
        ));
    };
    let name = &input.ident;
    let members: Vec<Member> = match &data.fields {
        Fields::Named(f) => f
            .named
            .iter()
            .map(|f| Member::Named(f.ident.clone().expect("named fields have names")))
            .collect(),
        Fields::Unnamed(f) => (0..f.unnamed.len())
            .map(|i| Member::Unnamed(Index::from(i)))
            .collect(),
        Fields::Unit => Vec::new(),
    };
    let mut generics = input.generics.clone();
    let clause = generics.make_where_clause();
    for field in &data.fields {
        let ty = &field.ty;
        // Spanned at the field's type, so that a field that cannot be carried is named.
        let bound = quote_spanned!(ty.span()=> #ty: ::nacre::Carry);
        clause.predicates.push(parse_quote!(#bound));
    }
    let flat = flat_impl(&input, data, &members);
    let field_types: Vec<&syn::Type> = data.fields.iter().map(|f| &f.ty).collect();
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let carry = quote!(::nacre::Carry);
    Ok(quote! {
        #flat
        impl #impl_generics ::nacre::cf::Return for #name #ty_generics #where_clause {}
        impl #impl_generics #carry for #name #ty_generics #where_clause {
            const SLOTS: usize = 0 #( + <#field_types as #carry>::SLOTS )*;
            fn flatten(&self, out: &mut ::std::vec::Vec<::nacre::Slot>) {
                #( #carry::flatten(&self.#members, out); )*
            }
            fn flatten_as(
                &self,
                out: &mut ::std::vec::Vec<::nacre::Slot>,
                operation: &'static str,
            ) {
                #( #carry::flatten_as(&self.#members, out, operation); )*
            }
            fn rebuild(slots: &mut ::std::slice::Iter<'_, ::nacre::Slot>) -> Self {
                // Struct expressions evaluate their fields in the order written.
                Self { #( #members: #carry::rebuild(slots), )* }
            }
            fn unreachable_value() -> Self {
                Self { #( #members: #carry::unreachable_value(), )* }
            }
        }
    })
}

/// The `impl ::nacre::Flat` of a struct (it is passed to traced functions and kernels as one
/// parameter per field). Its bounds are higher-ranked (`for<'nacre> Field: Flat`), so that a
/// struct with a plain field (`u8`) still derives `Carry`: the impl then never applies, and
/// passing the struct names the field's type.
fn flat_impl(input: &DeriveInput, data: &syn::DataStruct, members: &[Member]) -> TokenStream {
    let name = &input.ident;
    let mut generics = input.generics.clone();
    let clause = generics.make_where_clause();
    for field in &data.fields {
        let ty = &field.ty;
        let bound = quote_spanned!(ty.span()=> for<'nacre> #ty: ::nacre::Flat);
        clause.predicates.push(parse_quote!(#bound));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let flat = quote!(::nacre::Flat);
    let types = data.fields.iter().map(|f| &f.ty);
    let types2 = types.clone();
    quote! {
        impl #impl_generics #flat for #name #ty_generics #where_clause {
            fn ir_types(out: &mut ::std::vec::Vec<::nacre::ir::Type>) {
                #( <#types as #flat>::ir_types(out); )*
            }
            fn from_handles(raws: &mut ::std::slice::Iter<'_, ::nacre::Handle>) -> Self {
                Self { #( #members: <#types2 as #flat>::from_handles(raws), )* }
            }
            fn handles(self, out: &mut ::std::vec::Vec<::nacre::Handle>) {
                #( #flat::handles(self.#members, out); )*
            }
        }
    }
}
