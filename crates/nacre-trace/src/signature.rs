//! Signatures of traced functions: how Rust parameter and return types map to IR types and to
//! host values, and the two ways to run a traced function: [`trace`] it into an IR module, or
//! run it directly on concrete values ([`direct_call`]).

use crate::carry::Carry;
use crate::context::{self, FuncState, Tracer};
use crate::error::TraceError;
use crate::identity::{fresh_trace_id, Handle};
use crate::ptr::{Ptr, RawPtr};
use crate::val::Val;
use nacre_backend::Linkage;
use nacre_ir::half::{bf16, f16};
use nacre_ir::semantics::ScalarValue;
use nacre_ir::{FuncKind, Function, Module, Signature, Trap, Type};
use std::cell::Cell;
use std::collections::HashMap;

/// A host-side value passed to or returned from compiled code.
pub trait HostValue: Copy + Send + Sync + 'static {
    /// The type of the value in the native calling convention (`bool` is `u8`, pointers
    /// `usize`, no value is `()`).
    type Abi: Copy;
    /// The bits encoding (see [`nacre_ir::semantics`]).
    fn to_bits(self) -> u64;
    /// Decodes the bits encoding.
    fn from_bits(bits: u64) -> Self;
    /// Converts to the native calling convention.
    fn to_abi(self) -> Self::Abi;
    /// Converts from the native calling convention.
    fn from_abi(abi: Self::Abi) -> Self;
}

macro_rules! host_scalar {
    ($($t:ty),*) => {$(
        impl HostValue for $t {
            type Abi = $t;
            fn to_bits(self) -> u64 { ScalarValue::to_bits(self) as u64 }
            fn from_bits(bits: u64) -> Self { <$t as ScalarValue>::from_bits(u128::from(bits)) }
            fn to_abi(self) -> $t { self }
            fn from_abi(abi: $t) -> Self { abi }
        }
    )*};
}
host_scalar!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64, f16, bf16);

impl HostValue for bool {
    type Abi = u8;
    fn to_bits(self) -> u64 {
        self as u64
    }
    fn from_bits(bits: u64) -> Self {
        bits & 1 != 0
    }
    fn to_abi(self) -> u8 {
        self as u8
    }
    fn from_abi(abi: u8) -> Self {
        abi & 1 != 0
    }
}

impl<T: 'static> HostValue for RawPtr<T> {
    type Abi = usize;
    fn to_bits(self) -> u64 {
        self.as_ptr() as usize as u64
    }
    fn from_bits(bits: u64) -> Self {
        // SAFETY: a pointer returned by compiled code is handed back as-is; the caller that
        // created the pointers it derives from vouched for them.
        unsafe { RawPtr::new(bits as usize as *mut T) }
    }
    fn to_abi(self) -> usize {
        self.as_ptr() as usize
    }
    fn from_abi(abi: usize) -> Self {
        Self::from_bits(abi as u64)
    }
}

impl HostValue for () {
    type Abi = ();
    fn to_bits(self) -> u64 {
        0
    }
    fn from_bits(_: u64) -> Self {}
    fn to_abi(self) {}
    fn from_abi(_: ()) -> Self {}
}

/// A parameter type of a traced function: `Val<T>` or `Ptr<T>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a parameter of a traced function",
    note = "parameters of traced functions are `Val<T>` and `Ptr<T>`"
)]
pub trait Param: Copy + 'static {
    /// The host value a caller passes for it.
    type Host: HostValue;
    /// The IR type.
    fn ir_type() -> Type;
    /// Builds the parameter from its handle (an IR value of one trace, or bits).
    fn from_raw_param(raw: Handle) -> Self;
    /// The handle.
    fn raw_param(self) -> Handle;
}

impl<T: ScalarValue + HostValue> Param for Val<T> {
    type Host = T;
    fn ir_type() -> Type {
        Type::Scalar(T::SCALAR)
    }
    fn from_raw_param(raw: Handle) -> Self {
        Val::from_handle(raw)
    }
    fn raw_param(self) -> Handle {
        self.handle()
    }
}

impl<T: crate::ptr::Element> Param for Ptr<T> {
    type Host = RawPtr<T>;
    fn ir_type() -> Type {
        Ptr::<T>::ir_type()
    }
    fn from_raw_param(raw: Handle) -> Self {
        Ptr::from_handle(raw)
    }
    fn raw_param(self) -> Handle {
        self.handle()
    }
}

/// A value passed to a traced function as IR parameters: every [`Param`] (one parameter), a
/// struct with `#[derive(Carry)]` whose fields are all `Flat` (one parameter per field, in
/// declaration order), and arrays and tuples of `Flat` values. Functions traced by
/// [`crate::cf::call`] and kernels take them; a compiled entry takes [`Param`]s only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed to a traced function",
    note = "traced functions take `Val<T>`, `Ptr<T>`, `EnumVal<E>`, structs of them with `#[derive(Carry)]`, and arrays and tuples of them; a plain field (`u8`) must become a `Val`"
)]
pub trait Flat: Copy + 'static {
    /// Appends the IR types of its parameters.
    fn ir_types(out: &mut Vec<Type>);
    /// Builds the value from the handles of its parameters (as many as [`Flat::ir_types`]
    /// gives).
    fn from_handles(raws: &mut std::slice::Iter<'_, Handle>) -> Self;
    /// Appends the handles of its parameters.
    fn handles(self, out: &mut Vec<Handle>);
}

impl<P: Param> Flat for P {
    fn ir_types(out: &mut Vec<Type>) {
        out.push(P::ir_type());
    }
    fn from_handles(raws: &mut std::slice::Iter<'_, Handle>) -> Self {
        P::from_raw_param(raws.next().copied().unwrap_or(Handle::direct(0)))
    }
    fn handles(self, out: &mut Vec<Handle>) {
        out.push(self.raw_param());
    }
}

impl<F: Flat, const N: usize> Flat for [F; N] {
    fn ir_types(out: &mut Vec<Type>) {
        (0..N).for_each(|_| F::ir_types(out));
    }
    fn from_handles(raws: &mut std::slice::Iter<'_, Handle>) -> Self {
        std::array::from_fn(|_| F::from_handles(raws))
    }
    fn handles(self, out: &mut Vec<Handle>) {
        self.into_iter().for_each(|f| f.handles(out));
    }
}

macro_rules! tuple_flat {
    ($($n:ident),+) => {
        impl<$($n: Flat),+> Flat for ($($n,)+) {
            fn ir_types(out: &mut Vec<Type>) {
                $($n::ir_types(out);)+
            }
            fn from_handles(raws: &mut std::slice::Iter<'_, Handle>) -> Self {
                ($($n::from_handles(raws),)+)
            }
            #[allow(non_snake_case)]
            fn handles(self, out: &mut Vec<Handle>) {
                let ($($n,)+) = self;
                $($n.handles(out);)+
            }
        }
    };
}
tuple_flat!(A);
tuple_flat!(A, B);
tuple_flat!(A, B, C);
tuple_flat!(A, B, C, D);

/// A return type of a traced function: `Val<T>`, `Ptr<T>` or `()`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a traced function",
    note = "traced functions return `Val<T>`, `Ptr<T>` or `()`"
)]
pub trait Ret: Carry {
    /// The host value the caller gets.
    type Host: HostValue;
    /// The IR return type (`None` for `()`).
    fn ir_type() -> Option<Type>;
    /// The handle of the returned value.
    fn raw_ret(self) -> Option<Handle>;
    /// Builds the value from its handle.
    fn from_raw_ret(raw: Handle) -> Self;
}

impl<T: ScalarValue + HostValue> Ret for Val<T> {
    type Host = T;
    fn ir_type() -> Option<Type> {
        Some(Type::Scalar(T::SCALAR))
    }
    fn raw_ret(self) -> Option<Handle> {
        Some(self.handle())
    }
    fn from_raw_ret(raw: Handle) -> Self {
        Val::from_handle(raw)
    }
}

impl<T: crate::ptr::Element> Ret for Ptr<T> {
    type Host = RawPtr<T>;
    fn ir_type() -> Option<Type> {
        Some(Ptr::<T>::ir_type())
    }
    fn raw_ret(self) -> Option<Handle> {
        Some(self.handle())
    }
    fn from_raw_ret(raw: Handle) -> Self {
        Ptr::from_handle(raw)
    }
}

impl Ret for () {
    type Host = ();
    fn ir_type() -> Option<Type> {
        None
    }
    fn raw_ret(self) -> Option<Handle> {
        None
    }
    fn from_raw_ret(_: Handle) -> Self {}
}

/// A Rust function (or closure) over traced parameters that can be traced. `Args` is the tuple
/// of its parameter types.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be traced: a parameter or the return type is not a traced type",
    label = "not a function of traced values",
    note = "parameters must be `Val<T>` (T: bool, i8..i64, u8..u64, f32, f64, f16, bf16: not the 128-bit integers, which pass through a `Ptr<i128>`), `Ptr<T>`, `EnumVal<E>` or (for functions traced by `call` and kernels) `#[derive(Carry)]` structs of them, at most 8 of them; the return type one of `Val<T>`, `Ptr<T>`, `EnumVal<E>` or `()`",
    note = "a host integer such as `usize` becomes `Val<u64>` (or `Val<i64>`); a reference `&[T]` becomes `Ptr<T>`, lent at the call"
)]
pub trait TraceFn<Args>: Send + Sync + 'static {
    /// The return type.
    type Ret: Ret;
    /// IR types of the parameters.
    fn param_types() -> Vec<Type>;
    /// Calls the function on parameters built from their handles.
    fn call_raw(&self, raws: &[Handle]) -> Self::Ret;
}

macro_rules! trace_fn_impl {
    ($($a:ident),*) => {
        impl<Func, R: Ret, $($a: Flat),*> TraceFn<($($a,)*)> for Func
        where
            Func: Fn($($a),*) -> R + Send + Sync + 'static,
        {
            type Ret = R;
            #[allow(unused_mut)]
            fn param_types() -> Vec<Type> {
                let mut out = Vec::new();
                $($a::ir_types(&mut out);)*
                out
            }
            #[allow(unused_variables, unused_mut, non_snake_case)]
            fn call_raw(&self, raws: &[Handle]) -> R {
                let mut it = raws.iter();
                $(let $a = $a::from_handles(&mut it);)*
                self($($a),*)
            }
        }
    };
}
trace_fn_impl!();
trace_fn_impl!(A);
trace_fn_impl!(A, B);
trace_fn_impl!(A, B, C);
trace_fn_impl!(A, B, C, D);
trace_fn_impl!(A, B, C, D, E);
trace_fn_impl!(A, B, C, D, E, F);
trace_fn_impl!(A, B, C, D, E, F, G);
trace_fn_impl!(A, B, C, D, E, F, G, H);

/// The IR name of a Rust function type: its last path segment, made printable.
pub fn fn_name<F>() -> String {
    let full = std::any::type_name::<F>();
    let base = full.split('<').next().unwrap_or(full);
    let mut segs: Vec<&str> = base.split("::").collect();
    while segs.last() == Some(&"{{closure}}") && segs.len() > 1 {
        segs.pop();
    }
    let last = segs.last().copied().unwrap_or("f");
    let name: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if full.contains("{{closure}}") {
        format!("{name}_closure")
    } else {
        name
    }
}

/// Starts a new IR function in the tracer, with a fresh trace id (see [`crate::identity`]),
/// and returns its entry parameters as handles of it.
pub(crate) fn begin_function(
    t: &mut Tracer,
    name: String,
    sig: Signature,
    kind: FuncKind,
) -> (nacre_ir::FuncId, Vec<Handle>) {
    // Names are unique within a module (two closures of one function share a base name).
    let taken = |n: &str| t.module.functions.values().any(|f| f.name == n);
    let mut unique = name.clone();
    let mut k = 1;
    while taken(&unique) {
        unique = format!("{name}_{k}");
        k += 1;
    }
    let id = t
        .module
        .add_function(Function::new(unique.clone(), kind, sig.clone()));
    let mut func = Function::new(unique, kind, sig);
    let params = nacre_ir::FunctionBuilder::new(&mut func).create_entry_block();
    let current = func.entry();
    let trace = fresh_trace_id();
    t.push_func(FuncState {
        id,
        trace,
        func,
        current,
        frames: Vec::new(),
        traced_depth: 0,
    });
    let params = params.into_iter().map(|v| Handle::traced(v, trace));
    (id, params.collect())
}

/// Emits the return of the function being traced and moves it into the module.
pub(crate) fn end_function<R: Ret>(t: &mut Tracer, ret: R) {
    if t.func().is_live() {
        let v = ret.raw_ret().map(|h| {
            t.value(h, "return value", || {
                R::ir_type().expect("a returned handle has a type")
            })
        });
        t.func().builder().ret(v);
    }
    let fs = t.pop_func();
    t.module.functions[fs.id] = fs.func;
}

/// A traced function: the IR module whose entry it is, and the linkage that gives the
/// module's extern functions their addresses.
#[derive(Clone, Debug)]
pub struct Traced {
    /// The captured IR.
    pub module: Module,
    /// Where its externs are.
    pub linkage: Linkage,
}

/// Traces `f` into a new IR module whose entry is `f`.
pub fn trace<Args, F: TraceFn<Args>>(f: &F) -> Result<Traced, TraceError> {
    if context::is_tracing() {
        return Err(TraceError::OutsideTrace(
            "a trace cannot start while another trace is recorded on the same thread".into(),
        ));
    }
    let tracer = Tracer {
        module: Module::new(),
        linkage: Linkage::default(),
        funcs: Vec::new(),
        callees: HashMap::new(),
        error: None,
    };
    let sig = Signature {
        params: F::param_types(),
        ret: F::Ret::ir_type(),
    };
    let ((), mut tracer) = context::run_tracer(tracer, || {
        let params = context::with_tracer(|t| {
            let (id, params) = begin_function(t, fn_name::<F>(), sig, FuncKind::Host);
            t.module.entry = Some(id);
            // A recursive `call(f, ..)` inside `f` calls the entry itself.
            if std::mem::size_of::<F>() == 0 {
                t.callees.insert((std::any::TypeId::of::<F>(), 0), id);
            }
            params
        })
        .unwrap_or_default();
        let ret = f.call_raw(&params);
        context::with_tracer(|t| end_function(t, ret));
    });
    if let Some(e) = tracer.error.take() {
        return Err(e);
    }
    debug_assert!(tracer.funcs.is_empty());
    Ok(Traced {
        module: tracer.module,
        linkage: tracer.linkage,
    })
}

thread_local! {
    static DIRECT_RUNNER: Cell<u32> = const { Cell::new(0) };
}

/// Payload of the unwind that carries a trap out of direct-mode code to [`direct_call`].
pub(crate) struct DirectTrap(pub Trap);

/// True while [`direct_call`] runs on this thread.
pub(crate) fn in_direct_runner() -> bool {
    DIRECT_RUNNER.with(|d| d.get() > 0)
}

/// Runs `f` directly on concrete arguments (bits encoding), without tracing: the user's code
/// executes as plain Rust. Loads and stores may touch only the `regions` the caller lent
/// ([`crate::region`]). A runtime error (division by zero, an access outside the regions) is
/// returned as `Err`.
pub fn direct_call<Args, F: TraceFn<Args>>(
    f: &F,
    args: &[u64],
    regions: &[crate::region::Region],
) -> Result<u64, Trap> {
    struct Depth;
    impl Drop for Depth {
        fn drop(&mut self) {
            DIRECT_RUNNER.with(|d| d.set(d.get() - 1));
        }
    }
    DIRECT_RUNNER.with(|d| d.set(d.get() + 1));
    let _depth = Depth;
    let raws: Vec<Handle> = F::param_types()
        .iter()
        .zip(args)
        .map(|(ty, bits)| Handle::direct(nacre_ir::semantics::normalize(*ty, u128::from(*bits))))
        .collect();
    let run = || crate::region::with_regions(regions, || f.call_raw(&raws));
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(r) => Ok(r.raw_ret().map_or(0, |h| h.word("return value"))),
        Err(payload) => match payload.downcast::<DirectTrap>() {
            Ok(trap) => Err(trap.0),
            Err(other) => std::panic::resume_unwind(other),
        },
    }
}
