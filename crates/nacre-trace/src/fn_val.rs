//! Function values: [`FnVal<F>`] chooses at run time among the functions of a static table —
//! traced functions (`fn(Val<i32>) -> Val<i32>`) or Rust `extern "C"` functions
//! (`extern "C" fn(i32) -> i32`) — and is picked by a traced index, compared, selected,
//! carried through loops and branches, and called.
//!
//! The table is known while tracing, so a call through a function value is compiled as a
//! dispatch over the table's entries: a balanced tree of traced branches on the index
//! (`log2(len)` comparisons), each leaf a direct call of one entry (a traced entry becomes one
//! IR function, traced once however many call sites it has; an extern entry an extern call).
//! This is how a closed set of function pointers is compiled without indirect calls, so it
//! runs on every backend, the GPU ones included, and the callees stay visible to the optimiser.
//!
//! An index past the table's end picks its last entry (a function value always names an
//! entry: there is no null function).

use crate::carry::{Carry, Slot};
use crate::cf::{if_else, Equality, Flow};
use crate::context::with_tracer;
use crate::error::TraceError;
use crate::extern_fn::{call_pointer, invoke, CallArgs, ExternRet, ExternValue};
use crate::signature::{Flat, Ret};
use crate::val::{select, IntoVal, Val};
use std::any::Any;
use std::marker::PhantomData;
use std::sync::{Mutex, PoisonError};

/// A function pointer type that can be an entry of a function table: `fn(..) -> R` over
/// traced parameters or `extern "C" fn(..) -> R` over host scalars.
pub trait FnPointer: Copy + Send + Sync + 'static {
    /// The address that identifies the function.
    fn addr(self) -> usize;
}

/// A [`FnPointer`] called with arguments `Args`.
pub trait Callee<Args: CallArgs>: FnPointer {
    /// What a call returns (traced).
    type Ret: Ret;
    /// Calls it (traced once per trace and address; an extern function at run time), named
    /// `name` in the IR.
    fn call_entry(self, name: &str, args: Args) -> Self::Ret;
}

macro_rules! callee {
    ($($a:ident, $x:ident);*) => {
        impl<R: Ret, $($a: Flat),*> FnPointer for fn($($a),*) -> R {
            fn addr(self) -> usize {
                self as usize
            }
        }
        impl<R: Ret, $($a: Flat),*> Callee<($($a,)*)> for fn($($a),*) -> R {
            type Ret = R;
            fn call_entry(self, name: &str, args: ($($a,)*)) -> R {
                call_pointer(self, self as usize, name, args)
            }
        }
        impl<R: ExternRet, $($x: ExternValue),*> FnPointer for extern "C" fn($($x),*) -> R {
            fn addr(self) -> usize {
                self as usize
            }
        }
        impl<R: ExternRet, $($x: ExternValue),*> Callee<($($x::Traced,)*)>
            for extern "C" fn($($x),*) -> R
        {
            type Ret = R::Traced;
            fn call_entry(self, name: &str, args: ($($x::Traced,)*)) -> R::Traced {
                invoke(name, self, args)
            }
        }
    };
}
callee!();
callee!(A, X);
callee!(A, X; B, Y);
callee!(A, X; B, Y; C, Z);
callee!(A, X; B, Y; C, Z; D, W);

/// A traced choice of one entry of a static function table (see the [module docs](self)).
pub struct FnVal<F: 'static> {
    table: u32,
    index: Val<u32>,
    _f: PhantomData<fn() -> F>,
}

impl<F: 'static> Clone for FnVal<F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F: 'static> Copy for FnVal<F> {}

impl<F: 'static> std::fmt::Debug for FnVal<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FnVal(table {}, {:?})", self.table, self.index)
    }
}

impl<F: FnPointer> FnVal<F> {
    /// Entry `index` of `table` (its last entry for an index past the end).
    pub fn pick<const N: usize>(table: &'static [F; N], index: impl IntoVal<u32>) -> FnVal<F> {
        const { assert!(N > 0, "a function table needs at least one entry") };
        FnVal {
            table: register(table),
            index: index.into_val().min(Val::new(N as u32 - 1)),
            _f: PhantomData,
        }
    }

    /// The entry's index in its table.
    pub fn index(self) -> Val<u32> {
        self.index
    }

    /// `if cond { a } else { b }` without control flow; both must come from one table.
    pub fn select(cond: Val<bool>, a: FnVal<F>, b: FnVal<F>) -> FnVal<F> {
        if a.table != b.table {
            mismatch("selected between");
        }
        FnVal {
            table: a.table,
            index: select(cond, a.index, b.index),
            _f: PhantomData,
        }
    }

    /// Whether both name the same function (by address, across tables too).
    pub fn eq(self, other: FnVal<F>) -> Val<bool> {
        if self.table == other.table {
            return self.index.eq(other.index);
        }
        let (a, b) = (entries::<F>(self.table), entries::<F>(other.table));
        let mut same = Val::new(false);
        for (i, fa) in a.iter().enumerate() {
            for (j, fb) in b.iter().enumerate() {
                if fa.addr() == fb.addr() {
                    same |= self.index.eq(i as u32) & other.index.eq(j as u32);
                }
            }
        }
        same
    }

    /// Calls the function with `args`.
    pub fn call<Args: CallArgs>(self, args: Args) -> F::Ret
    where
        F: Callee<Args>,
    {
        let table = entries::<F>(self.table);
        if table.is_empty() {
            return F::Ret::unreachable_value();
        }
        dispatch(table, self.index, args, 0, table.len())
    }
}

/// Calls entry `index` of `table[lo..hi]`: a branch on `index < mid` between the two halves,
/// down to one entry.
fn dispatch<Args: CallArgs, F: Callee<Args>>(
    table: &[F],
    index: Val<u32>,
    args: Args,
    lo: usize,
    hi: usize,
) -> F::Ret {
    if hi - lo == 1 {
        // Named by its place in the table (a function pointer has no name of its own).
        return table[lo].call_entry(&format!("fn_entry{lo}"), args);
    }
    let mid = (lo + hi) / 2;
    let low = index.lt(mid as u32);
    let r = if_else(
        low,
        (),
        |()| Flow::Next(dispatch(table, index, args, lo, mid)),
        |()| Flow::Next(dispatch(table, index, args, mid, hi)),
    );
    match r {
        Flow::Next(r) => r,
        Flow::Exit => F::Ret::unreachable_value(),
    }
}

impl<F: FnPointer> Equality<FnVal<F>> for FnVal<F> {
    type Output = Val<bool>;
    fn eq(self, rhs: FnVal<F>) -> Val<bool> {
        FnVal::eq(self, rhs)
    }
    fn ne(self, rhs: FnVal<F>) -> Val<bool> {
        !FnVal::eq(self, rhs)
    }
}

impl<F: FnPointer> Equality<&FnVal<F>> for &FnVal<F> {
    type Output = Val<bool>;
    fn eq(self, rhs: &FnVal<F>) -> Val<bool> {
        FnVal::eq(*self, *rhs)
    }
    fn ne(self, rhs: &FnVal<F>) -> Val<bool> {
        !FnVal::eq(*self, *rhs)
    }
}

impl<F: 'static> Carry for FnVal<F> {
    const SLOTS: usize = 2;
    fn flatten(&self, out: &mut Vec<Slot>) {
        self.table.flatten(out);
        self.index.flatten(out);
    }
    fn flatten_as(&self, out: &mut Vec<Slot>, operation: &'static str) {
        self.table.flatten(out);
        self.index.flatten_as(out, operation);
    }
    fn rebuild(slots: &mut std::slice::Iter<'_, Slot>) -> Self {
        FnVal {
            table: u32::rebuild(slots),
            index: Val::rebuild(slots),
            _f: PhantomData,
        }
    }
    fn unreachable_value() -> Self {
        FnVal {
            table: NO_TABLE,
            index: Val::unreachable_value(),
            _f: PhantomData,
        }
    }
}

/// The table of [`Carry::unreachable_value`]'s function value: none, for code that never runs.
const NO_TABLE: u32 = u32::MAX;

/// Every function table used so far, by id: a `&'static [F]`, boxed once per table.
type Table = &'static (dyn Any + Send + Sync);
static TABLES: Mutex<Vec<Table>> = Mutex::new(Vec::new());

/// The id of `table` (registered on first use).
fn register<F: FnPointer>(table: &'static [F]) -> u32 {
    let mut tables = TABLES.lock().unwrap_or_else(PoisonError::into_inner);
    let same = |t: &Table| {
        t.downcast_ref::<&'static [F]>()
            .is_some_and(|t| std::ptr::eq(*t, table))
    };
    if let Some(k) = tables.iter().position(same) {
        return k as u32;
    }
    let boxed: Table = Box::leak(Box::new(table));
    tables.push(boxed);
    (tables.len() - 1) as u32
}

/// The entries of table `id`, or none (after failing the trace) if no table of entry type
/// `F` has that id.
fn entries<F: FnPointer>(id: u32) -> &'static [F] {
    if id == NO_TABLE {
        // A value of code that never runs (`Carry::unreachable_value`): nothing to call.
        return &[];
    }
    let found = {
        let tables = TABLES.lock().unwrap_or_else(PoisonError::into_inner);
        tables
            .get(id as usize)
            .and_then(|t| t.downcast_ref::<&'static [F]>().copied())
    };
    found.unwrap_or_else(|| {
        fail(TraceError::UnknownFunctionTable {
            ty: std::any::type_name::<F>(),
        });
        &[]
    })
}

fn mismatch(what: &'static str) {
    fail(TraceError::FunctionTableMismatch { what });
}

/// Fails the trace with `e`, or, outside a trace, reports it as direct mode reports errors.
fn fail(e: TraceError) {
    if with_tracer(|t| t.fail(e.clone())).is_none() {
        panic!("{e}");
    }
}
