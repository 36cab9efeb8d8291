//! Calls out of straight-line tracing: [`call`] traces a Rust function once as a separate IR
//! function and calls it (recursion included); [`invoke`] calls a Rust `extern "C"` function at
//! run time.

use crate::context::{with_tracer, Tracer};
use crate::identity::Handle;
use crate::signature::{
    begin_function, end_function, fn_name, Flat, HostValue, Param, Ret, TraceFn,
};
use nacre_backend::{DynCall, ExternAddr};
use nacre_ir::{FuncKind, Signature, Type, Value};
use std::any::TypeId;

/// Arguments of [`call`] and [`invoke`]: a tuple of `Val`s, `Ptr`s and other [`Flat`] values
/// (flattened into one IR argument per scalar).
pub trait CallArgs: Copy {
    /// The handles of the arguments.
    fn raws(&self) -> Vec<Handle>;
    /// The IR types of the arguments.
    fn types() -> Vec<Type>;
}

macro_rules! call_args {
    ($($a:ident),*) => {
        impl<$($a: Flat),*> CallArgs for ($($a,)*) {
            #[allow(non_snake_case, unused_mut)]
            fn raws(&self) -> Vec<Handle> {
                let ($($a,)*) = *self;
                let mut out = Vec::new();
                $($a.handles(&mut out);)*
                out
            }
            #[allow(unused_mut)]
            fn types() -> Vec<Type> {
                let mut out = Vec::new();
                $($a::ir_types(&mut out);)*
                out
            }
        }
    };
}
call_args!();
call_args!(A);
call_args!(A, B);
call_args!(A, B, C);
call_args!(A, B, C, D);
call_args!(A, B, C, D, E);
call_args!(A, B, C, D, E, F);
call_args!(A, B, C, D, E, F, G);
call_args!(A, B, C, D, E, F, G, H);

/// Calls traced function `f` as a separate IR function: it is traced once per trace (the
/// first call) and every call site becomes an IR call, so recursion and large shared helpers
/// cost nothing at trace time. Outside a trace it simply calls `f`.
///
/// Functions are identified by their Rust type, so `f` should be a function item or a closure
/// that captures nothing; a capturing closure is traced again at each call site.
pub fn call<Args: CallArgs, F: TraceFn<Args>>(f: F, args: Args) -> F::Ret {
    let raws = args.raws();
    if !crate::is_tracing() {
        return f.call_raw(&raws);
    }
    let id = traced_function(&f, FuncKind::Host);
    call_traced::<Args, F>(id, &raws)
}

/// [`call`] of a function pointer `f` of a function table (see [`crate::FnVal`]): traced once
/// per trace and address, named `name`.
pub(crate) fn call_pointer<Args: CallArgs, F: TraceFn<Args>>(
    f: F,
    addr: usize,
    name: &str,
    args: Args,
) -> F::Ret {
    let raws = args.raws();
    if !crate::is_tracing() {
        return f.call_raw(&raws);
    }
    let id = traced_function_as(&f, FuncKind::Host, Some((addr, name)));
    call_traced::<Args, F>(id, &raws)
}

/// The IR call of traced function `id` with the argument handles `raws`.
fn call_traced<Args: CallArgs, F: TraceFn<Args>>(id: nacre_ir::FuncId, raws: &[Handle]) -> F::Ret {
    let ret_ty = F::Ret::ir_type();
    let result = with_tracer(|t| {
        let args = operands::<Args>(t, raws, "call argument");
        call_result(t, |b| b.call(id, args, ret_ty))
    })
    .expect("tracing");
    F::Ret::from_raw_ret(result)
}

/// The IR values of the argument handles `raws` (of types `Args::types()`), as operands of
/// `operation` in the function being traced (checked to belong to it).
pub(crate) fn operands<Args: CallArgs>(
    t: &mut Tracer,
    raws: &[Handle],
    operation: &'static str,
) -> Vec<Value> {
    raws.iter()
        .enumerate()
        .map(|(i, h)| t.value(*h, operation, || Args::types()[i]))
        .collect()
}

/// Emits a call whose result, if any, is a handle of the function being traced.
fn call_result(
    t: &mut Tracer,
    f: impl FnOnce(&mut nacre_ir::FunctionBuilder<'_>) -> Option<Value>,
) -> Handle {
    let fs = t.func();
    let mut b = fs.builder();
    let v = f(&mut b);
    fs.current = b.current_block();
    v.map_or(Handle::direct(0), |v| Handle::traced(v, fs.trace))
}

/// The IR function of `f` in the module being traced: traced now (as a function of `kind`) on
/// first use, found in the trace's cache afterwards (for function items and non-capturing
/// closures).
pub(crate) fn traced_function<Args, F: TraceFn<Args>>(f: &F, kind: FuncKind) -> nacre_ir::FuncId {
    traced_function_as(f, kind, None)
}

/// [`traced_function`], for a function pointer `pointer = Some((address, name))` cached by its
/// address and named `name`.
fn traced_function_as<Args, F: TraceFn<Args>>(
    f: &F,
    kind: FuncKind,
    pointer: Option<(usize, &str)>,
) -> nacre_ir::FuncId {
    let cacheable = std::mem::size_of::<F>() == 0 || pointer.is_some();
    let key = (TypeId::of::<F>(), pointer.map_or(0, |(addr, _)| addr));
    let known = if cacheable {
        with_tracer(|t| t.callees.get(&key).copied()).flatten()
    } else {
        None
    };
    if let Some(id) = known {
        let actual = with_tracer(|t| t.module.functions[id].kind).unwrap_or(kind);
        if actual != kind {
            with_tracer(|t| {
                t.fail(crate::TraceError::KindMismatch {
                    name: fn_name::<F>(),
                });
            });
        }
        return id;
    }
    let sig = Signature {
        params: F::param_types(),
        ret: F::Ret::ir_type(),
    };
    let (id, params) = with_tracer(|t| {
        let name = pointer.map_or_else(fn_name::<F>, |(_, n)| n.to_string());
        let (id, params) = begin_function(t, name, sig, kind);
        if cacheable {
            t.callees.insert(key, id);
        }
        (id, params)
    })
    .expect("tracing");
    let ret = f.call_raw(&params);
    with_tracer(|t| end_function(t, ret));
    id
}

/// An `extern "C"` function pointer that traced code can call at run time.
pub trait ExternFn<Args>: Copy + 'static {
    /// The traced return type.
    type Ret: Ret;
    /// Parameter and return types.
    fn signature() -> Signature;
    /// The function's address.
    fn addr(self) -> usize;
    /// The trampoline that calls it with arguments as bits.
    fn dyn_call() -> DynCall;
    /// Calls it directly on concrete arguments (direct mode).
    fn call_direct(self, args: &[u64]) -> u64;
}

/// Host types that are also valid `extern "C"` argument and result types of traced calls.
pub trait ExternValue: HostValue {
    /// The traced type.
    type Traced: Param;
    /// The IR type.
    fn ir_type() -> Type;
}

macro_rules! extern_value {
    ($($t:ty),*) => {$(
        impl ExternValue for $t {
            type Traced = crate::val::Val<$t>;
            fn ir_type() -> Type { Type::Scalar(<$t as nacre_ir::semantics::ScalarValue>::SCALAR) }
        }
    )*};
}
extern_value!(bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// Return types of extern functions.
pub trait ExternRet: HostValue {
    /// The traced type.
    type Traced: Ret;
}
macro_rules! extern_ret {
    ($($t:ty),*) => {$( impl ExternRet for $t { type Traced = crate::val::Val<$t>; } )*};
}
extern_ret!(bool, i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
impl ExternRet for () {
    type Traced = ();
}

fn ret_ir_type<R: ExternRet>() -> Option<Type> {
    <R::Traced as Ret>::ir_type()
}

macro_rules! extern_fn_impl {
    ($($a:ident),*) => {
        impl<R: ExternRet, $($a: ExternValue),*> ExternFn<($($a::Traced,)*)> for extern "C" fn($($a),*) -> R {
            type Ret = R::Traced;
            fn signature() -> Signature {
                Signature { params: vec![$($a::ir_type()),*], ret: ret_ir_type::<R>() }
            }
            fn addr(self) -> usize {
                self as usize
            }
            fn dyn_call() -> DynCall {
                #[allow(unused_variables, unused_mut, non_snake_case)]
                unsafe fn trampoline<R: ExternRet, $($a: ExternValue),*>(addr: usize, args: &[u64]) -> u64 {
                    // SAFETY: `addr` was taken from a function pointer of exactly this type
                    // (see `ExternFn::addr`), as the `DynCall` contract requires.
                    let f: extern "C" fn($($a),*) -> R = unsafe { std::mem::transmute(addr) };
                    let mut it = args.iter();
                    $(let $a = $a::from_bits(*it.next().unwrap_or(&0));)*
                    f($($a),*).to_bits()
                }
                trampoline::<R, $($a),*>
            }
            fn call_direct(self, args: &[u64]) -> u64 {
                // SAFETY: the trampoline is called with this function's own address and one
                // argument per parameter.
                unsafe { Self::dyn_call()(self.addr(), args) }
            }
        }
    };
}
extern_fn_impl!();
extern_fn_impl!(A);
extern_fn_impl!(A, B);
extern_fn_impl!(A, B, C);
extern_fn_impl!(A, B, C, D);
extern_fn_impl!(A, B, C, D, E);
extern_fn_impl!(A, B, C, D, E, F);

/// Calls the Rust function `f` (named `name` in the IR) with traced arguments at run time.
/// The `invoke!` macro of the `nacre` crate fills in the name and the function-pointer cast.
pub fn invoke<Args: CallArgs, F: ExternFn<Args>>(name: &str, f: F, args: Args) -> F::Ret {
    let raws = args.raws();
    if !crate::is_tracing() {
        let bits: Vec<u64> = raws
            .iter()
            .map(|h| h.word("extern call argument"))
            .collect();
        return <F::Ret as Ret>::from_raw_ret(Handle::direct_word(f.call_direct(&bits)));
    }
    let sig = F::signature();
    let ret = sig.ret;
    let at = ExternAddr {
        addr: f.addr(),
        dyn_call: F::dyn_call(),
    };
    let result = with_tracer(|t| {
        let id = t.declare_extern(name, sig, at);
        let args = operands::<Args>(t, &raws, "extern call argument");
        call_result(t, |b| b.call_extern(id, args, ret))
    })
    .expect("tracing");
    <F::Ret as Ret>::from_raw_ret(result)
}

macro_rules! extern_fn_coercions {
    ($($name:ident($($a:ident),*);)*) => {$(
        /// Coerces a function item to its `extern "C"` function pointer type (used by
        /// `invoke!`, so that argument and result types are known at once).
        pub fn $name<R, $($a),*>(f: extern "C" fn($($a),*) -> R) -> extern "C" fn($($a),*) -> R {
            f
        }
    )*};
}
extern_fn_coercions! {
    extern_fn0();
    extern_fn1(A);
    extern_fn2(A, B);
    extern_fn3(A, B, C);
    extern_fn4(A, B, C, D);
    extern_fn5(A, B, C, D, E);
    extern_fn6(A, B, C, D, E, F);
}
