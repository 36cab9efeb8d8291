//! The case registry and the machinery to run a case against its reference.

use nacre::ir::semantics::{self, ScalarValue};
use nacre::ir::{Scalar, Trap};
use nacre::{Engine, Error};
use nacre_trace::{HostValue, Param, Ret, TraceFn};
use std::fmt;

/// A compiled case, called with arguments as bits.
pub type DynFn = Box<dyn Fn(&[u64]) -> Result<u64, Error>>;

/// Compiles a case's traced function on an engine.
pub type CompileFn = Box<dyn Fn(&Engine) -> Result<DynFn, Error> + Send + Sync>;

/// A case's plain-Rust reference over arguments as bits.
pub type ReferenceFn = Box<dyn Fn(&[u64]) -> Result<u64, Trap> + Send + Sync>;

/// What a case runs on.
pub enum CaseKind {
    /// Scalar parameters and result.
    Scalar {
        /// Parameter types (for generating inputs).
        params: Vec<Scalar>,
        /// Result type (`None` for no result).
        ret: Option<Scalar>,
        /// Compiles the traced function on an engine.
        compile: CompileFn,
        /// The plain-Rust reference.
        reference: ReferenceFn,
        /// How far a float result may be from the reference, in ulps (0: bit for bit). Math
        /// functions are not exact on every backend (see [`Case::within_ulps`]).
        ulps: u64,
    },
    /// A function over an `i32` array (through pointers), checked by its own routine that
    /// compiles it, runs it on the data and compares with plain Rust.
    Array {
        /// Compiles and checks the case on the given data.
        check: fn(&Engine, &[i32]) -> Result<(), String>,
    },
}

/// One corpus entry.
pub struct Case {
    /// A unique name.
    pub name: &'static str,
    /// How to run it.
    pub kind: CaseKind,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The result of one run: the value bits or the trap.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Returned a value (bits encoding; NaNs are canonicalised).
    Value(u64),
    /// Raised a runtime error.
    Trap(Trap),
}

fn canonical(ret: Option<Scalar>, bits: u64) -> u64 {
    match ret {
        Some(Scalar::F32) if f32::from_bits(bits as u32).is_nan() => f32::NAN.to_bits() as u64,
        Some(Scalar::F64) if f64::from_bits(bits).is_nan() => f64::NAN.to_bits(),
        Some(s @ (Scalar::F16 | Scalar::BF16))
            if semantics::half_to_f32(s, bits.into()).is_nan() =>
        {
            semantics::f32_to_half(s, f32::NAN) as u64
        }
        _ => bits,
    }
}

impl Case {
    /// Compiles the case on `engine` and compares it with the reference on every input
    /// (scalar cases: one argument vector per input; array cases: the data). Returns a
    /// description of the first mismatch.
    pub fn check(
        &self,
        engine: &Engine,
        inputs: &[Vec<u64>],
        data: &[i32],
    ) -> Result<usize, String> {
        match &self.kind {
            CaseKind::Scalar {
                ret,
                compile,
                reference,
                ulps,
                ..
            } => {
                let f =
                    compile(engine).map_err(|e| format!("{}: compile failed: {e}", self.name))?;
                for args in inputs {
                    let got = match f(args) {
                        Ok(v) => Outcome::Value(canonical(*ret, v)),
                        Err(Error::Trap(t)) => Outcome::Trap(t),
                        Err(e) => return Err(format!("{}{args:?}: call failed: {e}", self.name)),
                    };
                    let want = match reference(args) {
                        Ok(v) => Outcome::Value(canonical(*ret, v)),
                        Err(t) => Outcome::Trap(t),
                    };
                    if got != want && !close(*ret, *ulps, got, want) {
                        return Err(format!(
                            "{} on {}: got {got:?}, expected {want:?}",
                            self.name,
                            describe(self.params(), args)
                        ));
                    }
                }
                Ok(inputs.len())
            }
            CaseKind::Array { check } => check(engine, data)
                .map(|()| 1)
                .map_err(|e| format!("{}: {e}", self.name)),
        }
    }

    /// The case with float results accepted within `n` ulps of the reference (a math
    /// function's result differs by an ulp or two between C libraries).
    pub fn within_ulps(mut self, n: u64) -> Case {
        if let CaseKind::Scalar { ulps, .. } = &mut self.kind {
            *ulps = n;
        }
        self
    }

    /// Parameter types of a scalar case (empty for array cases).
    pub fn params(&self) -> &[Scalar] {
        match &self.kind {
            CaseKind::Scalar { params, .. } => params,
            CaseKind::Array { .. } => &[],
        }
    }

    /// Every combination of edge values for the parameters (capped at `limit` inputs).
    pub fn edge_inputs(&self, limit: usize) -> Vec<Vec<u64>> {
        let mut out: Vec<Vec<u64>> = vec![Vec::new()];
        for p in self.params() {
            let vals = edge_values(*p);
            out = out
                .into_iter()
                .flat_map(|prefix| {
                    vals.iter()
                        .map(move |v| [prefix.clone(), vec![*v]].concat())
                })
                .collect();
            out.truncate(limit);
        }
        out
    }
}

/// Whether two float results are within `ulps` of each other.
fn close(ret: Option<Scalar>, ulps: u64, got: Outcome, want: Outcome) -> bool {
    match (ret, got, want) {
        (Some(s), Outcome::Value(a), Outcome::Value(b)) if s.is_float() => {
            nacre::ir::semantics::ulps(s, a, b) <= ulps
        }
        _ => false,
    }
}

fn describe(params: &[Scalar], args: &[u64]) -> String {
    let parts: Vec<String> = params
        .iter()
        .zip(args)
        .map(|(p, a)| {
            nacre::ir::printer::const_value(nacre::ir::Const {
                ty: (*p).into(),
                bits: u128::from(*a),
            })
        })
        .collect();
    format!("({})", parts.join(", "))
}

/// Edge values of a scalar type, as bits: 0, ±1, MIN, MAX and a few others; for floats also
/// -0.0, NaN and the infinities.
pub fn edge_values(s: Scalar) -> Vec<u64> {
    fn ints<T: ScalarValue>(v: &[T]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits() as u64).collect()
    }
    match s {
        Scalar::Bool => vec![0, 1],
        Scalar::I8 => ints(&[0i8, 1, -1, 7, -100, i8::MIN, i8::MAX]),
        Scalar::I16 => ints(&[0i16, 1, -1, 300, -1234, i16::MIN, i16::MAX]),
        Scalar::I32 => ints(&[0i32, 1, -1, 7, -13, 100_000, i32::MIN, i32::MAX]),
        Scalar::I64 => ints(&[0i64, 1, -1, 7, -13, 1 << 40, i64::MIN, i64::MAX]),
        Scalar::U8 => ints(&[0u8, 1, 2, 7, 128, u8::MAX]),
        Scalar::U16 => ints(&[0u16, 1, 2, 300, 40_000, u16::MAX]),
        Scalar::U32 => ints(&[0u32, 1, 2, 7, 1 << 31, u32::MAX]),
        Scalar::U64 => ints(&[0u64, 1, 2, 7, 1 << 63, u64::MAX]),
        Scalar::F32 => ints(&[
            0f32,
            -0.0,
            1.0,
            -1.5,
            2.75,
            1e10,
            1e-40,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
        ]),
        Scalar::F64 => ints(&[
            0f64,
            -0.0,
            1.0,
            -1.5,
            2.75,
            1e300,
            -4e-320,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
        ]),
        Scalar::F16 | Scalar::BF16 => [
            0f32,
            -0.0,
            1.0,
            -1.5,
            2.75,
            1000.0,
            65504.0,
            6e-8,
            1e-40,
            1e10,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ]
        .iter()
        .map(|&x| semantics::f32_to_half(s, x) as u64)
        .collect(),
        // Entry parameters are at most 64 bits wide (the verifier's host boundary).
        Scalar::I128 | Scalar::U128 => Vec::new(),
    }
}

/// A plain-Rust reference implementation over host values.
pub trait Reference<Args>: Send + Sync + 'static {
    /// Calls it with arguments as bits.
    fn call_bits(&self, args: &[u64]) -> Result<u64, Trap>;
}

macro_rules! reference_impl {
    ($($p:ident),*) => {
        impl<Fun, R: HostValue, $($p: Param),*> Reference<($($p,)*)> for Fun
        where
            Fun: Fn($($p::Host),*) -> Result<R, Trap> + Send + Sync + 'static,
        {
            #[allow(unused_variables, unused_mut, non_snake_case)]
            fn call_bits(&self, args: &[u64]) -> Result<u64, Trap> {
                let mut it = args.iter();
                $(let $p = <$p::Host as HostValue>::from_bits(*it.next().unwrap_or(&0));)*
                self($($p),*).map(HostValue::to_bits)
            }
        }
    };
}
reference_impl!();
reference_impl!(A);
reference_impl!(A, B);
reference_impl!(A, B, C);
reference_impl!(A, B, C, D);

fn scalar_of(t: nacre::ir::Type) -> Option<Scalar> {
    t.scalar()
}

/// Builds a scalar case from a traced function and its reference.
pub fn scalar_case<Args: 'static, F, R>(name: &'static str, f: F, reference: R) -> Case
where
    F: TraceFn<Args> + Copy,
    R: Reference<Args>,
{
    let params = F::param_types().into_iter().filter_map(scalar_of).collect();
    let ret = <F::Ret as Ret>::ir_type().and_then(scalar_of);
    let compile = move |engine: &Engine| -> Result<DynFn, Error> {
        let c = engine.compile(f)?;
        Ok(Box::new(move |args: &[u64]| {
            // SAFETY: scalar cases have no pointer parameters, and tests pass one argument per
            // parameter.
            unsafe { c.call_bits(args) }
        }))
    };
    Case {
        name,
        kind: CaseKind::Scalar {
            params,
            ret,
            compile: Box::new(compile),
            reference: Box::new(move |args: &[u64]| reference.call_bits(args)),
            ulps: 0,
        },
    }
}

/// Every case of the corpus.
pub fn all() -> Vec<Case> {
    crate::cases::all()
}

/// The case with this name.
pub fn find(name: &str) -> Option<Case> {
    all().into_iter().find(|c| c.name == name)
}
