//! `#[derive(Record)]`: a `#[repr(C)]` struct of scalars that traced code reaches through a
//! `Ptr<S>`: its `Fields` struct (`{Name}Fields`, one `Ptr` per field) and the checks that make
//! the pointers sound (scalar fields, no padding).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Error, Fields};

/// `impl Element`, `impl Record` and the `Fields` struct of a record.
pub(crate) fn derive(input: DeriveInput) -> Result<TokenStream, Error> {
    let name = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(Error::new_spanned(
            name,
            "`#[derive(Record)]` is for structs",
        ));
    };
    let Fields::Named(named) = &data.fields else {
        return Err(Error::new_spanned(
            name,
            "`#[derive(Record)]` needs named fields (they name the field pointers)",
        ));
    };
    if named.named.is_empty() {
        return Err(Error::new_spanned(
            name,
            "a record needs at least one field",
        ));
    }
    if !input.generics.params.is_empty() {
        return Err(Error::new_spanned(
            &input.generics,
            "`#[derive(Record)]` does not support generic structs",
        ));
    }
    let repr = repr_of(&input)?;
    if !repr.c {
        return Err(Error::new_spanned(
            name,
            "a record needs `#[repr(C)]`: compiled code reaches its fields at fixed offsets",
        ));
    }
    if repr.packed {
        return Err(Error::new_spanned(
            name,
            "a record cannot be `#[repr(packed)]`: compiled code reads its fields as aligned \
             values (a misaligned `u128` or `f64` is undefined behaviour in C and faults on a GPU)",
        ));
    }
    if let Some(f) = named
        .named
        .iter()
        .find(|f| !matches!(f.ty, syn::Type::Path(_)))
    {
        return Err(Error::new_spanned(
            &f.ty,
            "a record's fields are scalars (`f64`, `i32`, `u8`, `bool`, ...): write an array or \
             tuple field as one field per element",
        ));
    }
    let vis = &input.vis;
    let fields_ty = format_ident!("{}Fields", name);
    let idents: Vec<_> = named.named.iter().map(|f| f.ident.clone()).collect();
    let types: Vec<_> = named.named.iter().map(|f| f.ty.clone()).collect();
    let field_vis = named.named.iter().map(|f| &f.vis);
    let scalar_checks = types
        .iter()
        .map(|t| quote_spanned!(t.span()=> scalar::<#t>();));
    let doc = format!("Pointers to the fields of a `{name}` in memory (`#[derive(Record)]`).");
    let nacre = quote!(::nacre);
    Ok(quote! {
        #[doc = #doc]
        #[derive(Clone, Copy, Debug)]
        #vis struct #fields_ty {
            #( #[doc = "The field's pointer."] #field_vis #idents: #nacre::Ptr<#types>, )*
        }
        const _: () = {
            // Every field is a scalar (this is type-checked, never called) ...
            #[allow(dead_code)]
            fn fields_are_scalars() {
                fn scalar<T: #nacre::Scalar>() {}
                #( #scalar_checks )*
            }
            // ... and the fields fill the struct: it has no padding.
            assert!(
                0 #( + ::core::mem::size_of::<#types>() )* == ::core::mem::size_of::<#name>(),
                "a record cannot have padding: order its fields from the largest type to the \
                 smallest, or add fields that fill the gaps",
            );
        };
        // SAFETY: the struct is `#[repr(C)]`, its fields are scalars (checked above) that fill
        // it (no padding, checked above), so every value compiled code stores through its
        // field pointers is valid, and its memory can be copied and zeroed as bytes.
        unsafe impl #nacre::Element for #name {
            const POINTEE: #nacre::ir::Scalar = #nacre::ir::Scalar::U8;
            const STRIDE: u32 = ::core::mem::size_of::<#name>() as u32;
        }
        // SAFETY: each field pointer is made at the field's offset with the field's type.
        unsafe impl #nacre::Record for #name {
            type Fields = #fields_ty;
            fn fields(p: #nacre::Ptr<Self>) -> #fields_ty {
                #fields_ty {
                    #(
                        // SAFETY: `#name` has a field of this type at this offset.
                        #idents: unsafe {
                            p.field::<#types>(::core::mem::offset_of!(#name, #idents) as u32)
                        },
                    )*
                }
            }
        }
    })
}

/// What a struct's `#[repr(...)]` attributes say.
struct Repr {
    /// `#[repr(C)]`.
    c: bool,
    /// `#[repr(packed)]` or `#[repr(packed(N))]`.
    packed: bool,
}

/// The struct's representation.
fn repr_of(input: &DeriveInput) -> Result<Repr, Error> {
    let mut repr = Repr {
        c: false,
        packed: false,
    };
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("C") {
                repr.c = true;
            }
            if meta.path.is_ident("packed") {
                repr.packed = true;
            }
            if meta.input.peek(syn::token::Paren) {
                let _ = meta.input.parse::<proc_macro2::Group>();
            }
            Ok(())
        })?;
    }
    Ok(repr)
}
