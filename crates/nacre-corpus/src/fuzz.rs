//! Differential fuzzing: random valid IR modules, run on every backend and compared.
//!
//! [`generate`] builds a random module from a seed: a host entry taking scalars and one or two
//! pointers, helper functions it calls (acyclic, or recursive: itself or through a second
//! helper, with a depth bound), and, for kernel programs, kernels with barriers and shared
//! arrays that the entry launches on a small grid. Every program terminates (loops count to
//! small bounds, recursion stops within a few levels, or runs out of stack on every backend)
//! and may trap: integer division by zero, out-of-bounds accesses (indices negative, just past
//! the end, far away, computed), invalid launch shapes, stack overflow.
//!
//! [`Runner::check`] verifies, optimises and bounds-checks it the way the engine does, runs it
//! on the interpreter (the reference, optimised and not) and on Cranelift (both optimisation
//! levels) and C, kernels on the CPU runtime in grid mode with each backend as host backend,
//! and compares result bits (any NaN equal to any NaN), traps (in full: kind, function and
//! parameter) and the arrays' contents. Each array lies between guard bytes that every run
//! checks; the guard bytes differ between runs, and the reference runs twice, so that a read
//! outside the arrays shows as a difference too.
//!
//! Kernels are generated race-free, so that any execution order gives the same result: a
//! thread writes global memory only at its own linear index, reads other elements only of
//! arrays the kernel does not write, and exchanges data through shared arrays only across
//! barriers (which sit in uniform control flow). Each kernel can raise at most one trap value
//! (its *trap mode*: one out-of-bounds pointer, or division by zero), because blocks run in
//! parallel and the first trap to be reported wins.
//!
//! Found so far: a recursion that never ends loops forever on C when GCC turns the recursive
//! call into a jump (fixed: C is compiled with `-fno-optimize-sibling-calls`; the regression
//! test is `unbounded_tail_recursion_traps_on_every_backend` in `tests/fuzz.rs`).

use nacre::gpu::{CpuMode, CpuOptions, CpuRuntime, KernelRuntime, PreparedKernels};
use nacre::ir::semantics::normalize;
use nacre::ir::transform::{insert_bounds_checks, BoundsOptions};
use nacre::ir::{
    BinaryOp, Block, CmpOp, Dim, FuncId, FuncKind, Function, FunctionBuilder, GpuIndex, Module,
    PassOptions, Scalar, Trap, Type, UnaryOp, Value, VerifiedModule,
};
use nacre::{Backend, BackendKind, Linkage, OptLevel, Options};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

// ---------------------------------------------------------------------------------------------
// Random numbers

/// A small deterministic random number generator (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        let mut r = Rng(seed ^ 0x6a09_e667_f3bc_c908);
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent`%.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One element of a non-empty slice.
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// The case seed of the `i`-th case of a run with base seed `base` (spread so that
/// neighbouring cases share nothing).
pub fn case_seed(base: u64, i: u64) -> u64 {
    Rng::new(base ^ i.wrapping_mul(0xd1b5_4a32_d192_ed03)).next_u64()
}

const INTS: [Scalar; 8] = [
    Scalar::I8,
    Scalar::I16,
    Scalar::I32,
    Scalar::I64,
    Scalar::U8,
    Scalar::U16,
    Scalar::U32,
    Scalar::U64,
];

const F32_EDGES: [f32; 24] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    1.5,
    -2.5,
    3.0,
    255.5,
    -128.5,
    65535.9,
    2147483520.0,
    4294967040.0,
    -2147483648.0,
    1e10,
    -1e-10,
    1e20,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::MAX,
    f32::MIN_POSITIVE,
    1e-45,
    9.2233715e18,
];

const F64_EDGES: [f64; 24] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    1.5,
    -2.5,
    3.0,
    255.5,
    -128.5,
    65535.9,
    2147483647.0,
    4294967295.0,
    -2147483648.5,
    9.223372036854775e18,
    1.8446744073709552e19,
    1e300,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::MAX,
    f64::MIN_POSITIVE,
    5e-324,
    -0.1,
];

/// Interesting bits of scalar type `s`: edge values most of the time, random ones otherwise.
pub fn interesting_bits(rng: &mut Rng, s: Scalar) -> u64 {
    let ty = Type::Scalar(s);
    let bits = match s {
        Scalar::Bool => rng.below(2),
        Scalar::F32 => match rng.below(10) {
            0..=5 => rng.pick(&F32_EDGES).to_bits() as u64,
            6..=7 => ((rng.below(2001) as f32 - 1000.0) / 8.0).to_bits() as u64,
            _ => rng.next_u64() & 0xffff_ffff,
        },
        Scalar::F64 => match rng.below(10) {
            0..=5 => rng.pick(&F64_EDGES).to_bits(),
            6..=7 => ((rng.below(2001) as f64 - 1000.0) / 8.0).to_bits(),
            _ => rng.next_u64(),
        },
        Scalar::F16 | Scalar::BF16 => match rng.below(10) {
            0..=5 => nacre::ir::semantics::f32_to_half(s, rng.pick(&F32_EDGES)) as u64,
            6..=7 => {
                nacre::ir::semantics::f32_to_half(s, (rng.below(2001) as f32 - 1000.0) / 8.0) as u64
            }
            _ => rng.next_u64() & 0xffff,
        },
        _ => {
            let w = s.bits();
            let min = 1u64 << (w - 1);
            match rng.below(14) {
                0 => 0,
                1 => 1,
                2 => u64::MAX,
                3 => {
                    if s.is_signed_int() {
                        min
                    } else {
                        u64::MAX
                    }
                }
                4 => {
                    if s.is_signed_int() {
                        min - 1
                    } else {
                        min
                    }
                }
                5 => rng.below(16),
                6 => rng.below(16).wrapping_neg(),
                7 => 1 << rng.below(w as u64),
                8 => (1u64 << rng.below(w as u64)).wrapping_sub(1),
                9..=10 => rng.below(300),
                _ => rng.next_u64(),
            }
        }
    };
    norm(ty, bits)
}

/// [`normalize`] on the 64-bit words the fuzzer's values (no wider than 64 bits) travel in.
fn norm(ty: Type, bits: u64) -> u64 {
    normalize(ty, u128::from(bits)) as u64
}

// ---------------------------------------------------------------------------------------------
// Programs

/// One pointer parameter of a program's entry: the array the runner passes for it.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct ArraySpec {
    /// Element type.
    pub elem: Scalar,
    /// Number of elements the program is told about (the companion size is `len * bytes`).
    pub len: usize,
}

/// A generated program and the inputs to run it on.
#[derive(Clone, Debug)]
pub struct Program {
    /// The seed it was generated from.
    pub seed: u64,
    /// The module (not yet verified).
    pub module: Module,
    /// The entry's parameter types, before bounds checking.
    pub params: Vec<Type>,
    /// The array of each pointer parameter, in parameter order.
    pub arrays: Vec<ArraySpec>,
    /// The initial contents of each array (bits, one per element).
    pub init: Vec<Vec<u64>>,
    /// Sets of scalar arguments (bits, one per scalar parameter in order).
    pub inputs: Vec<Vec<u64>>,
    /// Whether the module has kernels.
    pub has_kernels: bool,
}

impl Program {
    /// The entry's return type.
    pub fn ret(&self) -> Option<Type> {
        self.module.entry_function().and_then(|f| f.signature.ret)
    }
}

/// What to generate.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Flavor {
    /// Host functions only.
    Host,
    /// A host entry that launches kernels.
    Kernels,
}

/// What a kernel may trap on: at most one trap value per kernel (blocks run in parallel, so
/// with two possible traps which one is reported would depend on timing).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum TrapMode {
    /// Nothing traps.
    Nothing,
    /// Loads from the input array may be out of bounds.
    OobIn,
    /// Accesses of the output array at the thread's index are not guarded.
    OobOut,
    /// Reads of the shared array at another thread's slot are not wrapped around.
    OobShared,
    /// Integer divisions may divide by zero (remainders never do).
    Div,
}

/// How a function body may access a pointer.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Role {
    /// Host code: any access at any index.
    Host,
    /// A kernel's input: loads only, at any index (safe or not, by trap mode).
    KIn,
    /// A kernel's output: accesses only at the thread's global index, in the epilogue.
    KOut,
    /// A shared array: the thread's own slot anywhere, others' slots across barriers.
    Shared,
}

/// A pointer in scope.
#[derive(Copy, Clone, Debug)]
struct PtrVal {
    v: Value,
    elem: Scalar,
    /// The number of elements it is believed to point to (a hint for indices).
    len: u64,
    role: Role,
}

/// A function that generated code may call.
#[derive(Clone, Debug)]
struct Callee {
    id: FuncId,
    params: Vec<Type>,
    ret: Option<Type>,
    /// No memory, no traps: callable from kernels.
    pure: bool,
    /// Roughly how many instructions a call runs at most.
    cost: u64,
    /// Only the entry may call it (a deep recursion).
    host_only: bool,
}

/// Kernel facts a kernel body needs.
#[derive(Clone, Debug)]
struct KernelCx {
    mode: TrapMode,
    /// The thread's linear index in its block.
    ltid: Value,
    /// The threads per block.
    nthr: Value,
}

/// The rules of one function body.
#[derive(Clone, Debug)]
struct FnRules {
    /// The functions it may call.
    callees: Vec<Callee>,
    /// No memory and no traps.
    pure: bool,
    /// Integer division may trap (`Div` only, when `div_only`).
    div_traps: bool,
    div_only: bool,
    kernel: Option<KernelCx>,
    /// Early returns are allowed (not before a kernel's last barrier).
    returns: bool,
    /// The deepest loop nest.
    max_loops: u32,
}

/// The most instructions (roughly) a call may run: calls that could run more are not made.
const MAX_COST: u64 = 100_000;

/// Generates the body of one function.
struct Body<'a, 'f> {
    b: &'a mut FunctionBuilder<'f>,
    rng: &'a mut Rng,
    rules: FnRules,
    vals: Vec<Value>,
    ptrs: Vec<PtrVal>,
    /// Loop counters in scope.
    counters: Vec<Value>,
    budget: i64,
    depth: u32,
    loops: u32,
    ret: Option<Type>,
    /// Values that must not reach results (grid-stride kernels: GPU indices).
    hidden: Vec<Value>,
    /// How many times the current block runs at most per call (enclosing loops' trips).
    mult: u64,
    /// Roughly how many instructions a call runs at most, so far.
    cost: u64,
}

#[derive(Copy, Clone)]
struct Scope {
    vals: usize,
    ptrs: usize,
    counters: usize,
}

impl<'a, 'f> Body<'a, 'f> {
    fn new(
        b: &'a mut FunctionBuilder<'f>,
        rng: &'a mut Rng,
        rules: FnRules,
        ret: Option<Type>,
        budget: i64,
    ) -> Self {
        Body {
            b,
            rng,
            rules,
            vals: Vec::new(),
            ptrs: Vec::new(),
            counters: Vec::new(),
            budget,
            depth: 0,
            loops: 0,
            ret,
            hidden: Vec::new(),
            mult: 1,
            cost: 0,
        }
    }

    fn scope(&self) -> Scope {
        Scope {
            vals: self.vals.len(),
            ptrs: self.ptrs.len(),
            counters: self.counters.len(),
        }
    }

    fn restore(&mut self, s: Scope) {
        self.vals.truncate(s.vals);
        self.ptrs.truncate(s.ptrs);
        self.counters.truncate(s.counters);
    }

    fn sty(&self, v: Value) -> Scalar {
        self.b
            .value_type(v)
            .scalar()
            .expect("scalar pool holds scalars")
    }

    fn any_type(&mut self) -> Scalar {
        // Weighted towards the common types, every type reachable.
        match self.rng.below(20) {
            0..=3 => Scalar::I32,
            4..=5 => Scalar::I64,
            6..=7 => Scalar::F64,
            8..=9 => Scalar::F32,
            10 => Scalar::Bool,
            _ => self.rng.pick(&Scalar::HOST),
        }
    }

    fn int_type(&mut self) -> Scalar {
        match self.rng.below(10) {
            0..=3 => Scalar::I32,
            4..=5 => Scalar::I64,
            _ => self.rng.pick(&INTS),
        }
    }

    fn konst(&mut self, s: Scalar, bits: u64) -> Value {
        let ty = Type::Scalar(s);
        self.b.const_bits(ty, norm(ty, bits))
    }

    fn random_const(&mut self, s: Scalar) -> Value {
        let bits = interesting_bits(self.rng, s);
        self.konst(s, bits)
    }

    /// An existing value of type `s`, if any (recent ones more likely).
    fn existing(&mut self, s: Scalar) -> Option<Value> {
        let cands: Vec<Value> = self
            .vals
            .iter()
            .copied()
            .filter(|&v| self.b.value_type(v) == Type::Scalar(s))
            .collect();
        if cands.is_empty() {
            return None;
        }
        let n = cands.len() as u64;
        let i = if self.rng.chance(50) {
            n - 1 - self.rng.below(n.min(3))
        } else {
            self.rng.below(n)
        };
        Some(cands[i as usize])
    }

    fn any_existing(&mut self) -> Option<Value> {
        if self.vals.is_empty() {
            return None;
        }
        let n = self.vals.len() as u64;
        let i = if self.rng.chance(50) {
            n - 1 - self.rng.below(n.min(4))
        } else {
            self.rng.below(n)
        };
        Some(self.vals[i as usize])
    }

    /// A value of type `s`: an existing one, a cast of one, or a constant.
    fn operand(&mut self, s: Scalar) -> Value {
        let r = self.rng.below(100);
        if r < 55 {
            if let Some(v) = self.existing(s) {
                return v;
            }
        }
        if r < 80 {
            if let Some(v) = self.any_existing() {
                if self.sty(v) == s {
                    return v;
                }
                return self.b.cast(v, Type::Scalar(s));
            }
        }
        self.random_const(s)
    }

    fn push(&mut self, v: Value) -> Value {
        self.vals.push(v);
        v
    }

    fn bool_operand(&mut self) -> Value {
        if self.rng.chance(70) {
            let s = self.any_type();
            let a = self.operand(s);
            let b = self.operand(s);
            let op = self.rng.pick(&CmpOp::ALL);
            self.b.cmp(op, a, b)
        } else {
            self.operand(Scalar::Bool)
        }
    }

    fn stmts(&mut self, n: u64) {
        for _ in 0..n {
            if self.budget <= 0 {
                break;
            }
            self.stmt();
        }
    }

    fn stmt(&mut self) {
        self.budget -= 1;
        self.cost = self.cost.saturating_add(self.mult);
        let r = self.rng.below(100);
        match r {
            0..=19 => self.binary_stmt(),
            20..=26 => self.unary_stmt(),
            27..=32 => self.cast_stmt(),
            33..=38 => self.cmp_stmt(),
            39..=43 => self.select_stmt(),
            44..=46 => self.fma_stmt(),
            47..=57 => self.load_stmt(),
            58..=66 => self.store_stmt(),
            67..=72 => self.call_stmt(),
            73..=80 if self.depth < 3 => self.diamond(),
            81..=86 if self.loops < self.rules.max_loops && self.depth < 3 => self.counted_loop(),
            87..=89 if self.rules.returns && self.depth > 0 => self.early_return(),
            90..=94 => self.ptr_stmt(),
            _ => self.binary_stmt(),
        }
    }

    /// The divisor of an integer division or remainder: as is when it may trap, else made
    /// odd (never zero).
    fn divisor(&mut self, op: BinaryOp, s: Scalar, d: Value) -> Value {
        let may_trap = self.rules.div_traps && !(self.rules.div_only && op == BinaryOp::Rem);
        if !s.is_int() || may_trap {
            return d;
        }
        let one = self.konst(s, 1);
        self.b.binary(BinaryOp::Or, d, one)
    }

    fn binary_stmt(&mut self) {
        let s = self.any_type();
        let ops: Vec<BinaryOp> = BinaryOp::ALL
            .into_iter()
            .filter(|op| op.accepts(s))
            .collect();
        let op = self.rng.pick(&ops);
        let a = self.operand(s);
        let mut b = self.operand(s);
        if matches!(op, BinaryOp::Div | BinaryOp::Rem) {
            b = self.divisor(op, s, b);
        }
        let v = self.b.binary(op, a, b);
        self.push(v);
    }

    fn unary_stmt(&mut self) {
        let s = self.any_type();
        let ops: &[UnaryOp] = if s.is_float() {
            &[
                UnaryOp::Neg,
                UnaryOp::Abs,
                UnaryOp::Sqrt,
                UnaryOp::Floor,
                UnaryOp::Ceil,
                UnaryOp::Trunc,
                UnaryOp::Round,
            ]
        } else if s.is_int() {
            &[
                UnaryOp::Neg,
                UnaryOp::Not,
                UnaryOp::Abs,
                UnaryOp::CountOnes,
                UnaryOp::LeadingZeros,
                UnaryOp::TrailingZeros,
                UnaryOp::SwapBytes,
                UnaryOp::ReverseBits,
            ]
        } else {
            &[UnaryOp::Neg, UnaryOp::Not, UnaryOp::Abs]
        };
        let op = self.rng.pick(ops);
        let a = self.operand(s);
        let v = self.b.unary(op, a);
        self.push(v);
    }

    fn cast_stmt(&mut self) {
        let from = self.any_type();
        let to = self.any_type();
        let a = self.operand(from);
        let v = self.b.cast(a, Type::Scalar(to));
        self.push(v);
    }

    fn cmp_stmt(&mut self) {
        let c = self.bool_operand();
        self.push(c);
    }

    fn select_stmt(&mut self) {
        let c = self.bool_operand();
        let s = self.any_type();
        let a = self.operand(s);
        let b = self.operand(s);
        let v = self.b.select(c, a, b);
        self.push(v);
    }

    fn fma_stmt(&mut self) {
        let s = if self.rng.chance(50) {
            Scalar::F32
        } else {
            Scalar::F64
        };
        let a = self.operand(s);
        let b = self.operand(s);
        let c = self.operand(s);
        let v = self.b.fma(a, b, c);
        self.push(v);
    }

    // ----- memory

    /// An index into memory believed to hold `len` elements: mostly in bounds, sometimes
    /// negative, just past the end or far away, sometimes computed.
    fn index(&mut self, len: u64) -> Value {
        let r = self.rng.below(100);
        if r < 20 && !self.counters.is_empty() {
            let c = self.rng.pick(&self.counters.clone());
            let s = self.sty(c);
            return match self.rng.below(4) {
                0 | 1 => c,
                2 => {
                    let k = self.rng.below(3);
                    let k = self.konst(s, k);
                    self.b.binary(BinaryOp::Add, c, k)
                }
                _ => {
                    let k = self.rng.below(3);
                    let k = self.konst(s, k);
                    let op = self.rng.pick(&[BinaryOp::Sub, BinaryOp::Mul]);
                    self.b.binary(op, c, k)
                }
            };
        }
        let s = self.int_type();
        let signed = s.is_signed_int();
        let r = self.rng.below(100);
        let bits = if r < 62 && len > 0 {
            self.rng.below(len)
        } else if r < 68 {
            len + self.rng.below(2)
        } else if r < 74 {
            if signed || self.rng.chance(30) {
                self.rng.range(1, 3).wrapping_neg()
            } else {
                len + 1
            }
        } else if r < 78 {
            self.rng.pick(&[
                1 << 20,
                1 << 33,
                i64::MIN as u64,
                i64::MAX as u64,
                i32::MAX as u64,
                i32::MIN as u64,
                u32::MAX as u64,
            ])
        } else if r < 93 && len > 0 {
            // Computed: a value modulo the length (negative for negative signed values),
            // or masked.
            let v = self.operand(s);
            let k = if self.rng.chance(60) {
                self.konst(s, len)
            } else {
                let m = (len.next_power_of_two() - 1).max(1);
                let m = self.konst(s, m);
                return self.b.binary(BinaryOp::And, v, m);
            };
            return self.b.binary(BinaryOp::Rem, v, k);
        } else {
            return self.operand(s);
        };
        self.konst(s, bits)
    }

    /// An index that is always in `0..len` (`len > 0`).
    fn safe_index(&mut self, len: u64) -> Value {
        let v = self.operand(Scalar::U32);
        let k = self.konst(Scalar::U32, len);
        self.b.binary(BinaryOp::Rem, v, k)
    }

    /// The address of an element of `p` per its role (`None` if the role forbids it here).
    fn address(&mut self, p: PtrVal, write: bool) -> Option<Value> {
        let idx = match p.role {
            Role::Host => {
                if self.rng.chance(10) {
                    return Some(p.v);
                }
                self.index(p.len)
            }
            Role::KIn => {
                if write {
                    return None;
                }
                let mode = self.rules.kernel.as_ref().map(|k| k.mode);
                if mode == Some(TrapMode::OobIn) {
                    self.index(p.len)
                } else if p.len == 0 {
                    return None;
                } else {
                    self.safe_index(p.len)
                }
            }
            Role::KOut => return None,
            Role::Shared => self.rules.kernel.as_ref()?.ltid,
        };
        let mut a = self.b.elem_ptr(p.v, idx);
        if p.role == Role::Host && self.rng.chance(10) {
            // A chain: p + i + j.
            let j = self.index(2);
            a = self.b.elem_ptr(a, j);
        }
        Some(a)
    }

    fn pick_ptr(&mut self) -> Option<PtrVal> {
        if self.ptrs.is_empty() || self.rules.pure {
            return None;
        }
        Some(self.rng.pick(&self.ptrs.clone()))
    }

    fn load_stmt(&mut self) {
        let Some(p) = self.pick_ptr() else {
            return self.binary_stmt();
        };
        let Some(a) = self.address(p, false) else {
            return self.binary_stmt();
        };
        let v = self.b.load(a);
        self.push(v);
    }

    fn store_stmt(&mut self) {
        let Some(p) = self.pick_ptr() else {
            return self.binary_stmt();
        };
        let Some(a) = self.address(p, true) else {
            return self.binary_stmt();
        };
        let v = self.operand(p.elem);
        self.b.store(a, v);
    }

    /// Pointer arithmetic, selects, round trips through integers and comparisons (host only).
    fn ptr_stmt(&mut self) {
        let hosts: Vec<PtrVal> = self
            .ptrs
            .iter()
            .copied()
            .filter(|p| p.role == Role::Host)
            .collect();
        if hosts.is_empty() || self.rules.pure {
            return self.binary_stmt();
        }
        let p = self.rng.pick(&hosts);
        match self.rng.below(10) {
            0..=3 => {
                let i = self.index(p.len);
                let q = self.b.elem_ptr(p.v, i);
                let len = p.len.saturating_sub(1);
                self.ptrs.push(PtrVal { v: q, len, ..p });
            }
            4..=6 => {
                let same: Vec<PtrVal> =
                    hosts.iter().copied().filter(|q| q.elem == p.elem).collect();
                let q = self.rng.pick(&same);
                let c = self.bool_operand();
                let v = self.b.select(c, p.v, q.v);
                self.ptrs.push(PtrVal {
                    v,
                    len: p.len.min(q.len),
                    ..p
                });
            }
            7 => {
                // Through an integer: a pointer from nowhere, every access traps.
                let ity = if self.rng.chance(50) {
                    Type::U64
                } else {
                    Type::I64
                };
                let i = self.b.cast(p.v, ity);
                let q = self.b.cast(i, Type::ptr(p.elem));
                self.ptrs.push(PtrVal { v: q, ..p });
            }
            _ => {
                // p against p plus a small offset: independent of where the memory is.
                let k = self.rng.below(4);
                let k = self.konst(Scalar::I64, k);
                let q = self.b.elem_ptr(p.v, k);
                let op = self.rng.pick(&CmpOp::ALL);
                let c = if self.rng.chance(50) {
                    self.b.cmp(op, p.v, q)
                } else {
                    self.b.cmp(op, q, p.v)
                };
                self.push(c);
            }
        }
    }

    // ----- calls

    fn call_stmt(&mut self) {
        let cands: Vec<Callee> = self
            .rules
            .callees
            .iter()
            .filter(|c| !(self.rules.pure || self.rules.kernel.is_some()) || c.pure)
            .filter(|c| self.mult.saturating_mul(c.cost) <= MAX_COST)
            .filter(|c| {
                c.params.iter().all(|t| match t {
                    Type::Ptr(e, _) => self
                        .ptrs
                        .iter()
                        .any(|p| p.elem == *e && p.role == Role::Host),
                    Type::Scalar(_) => true,
                })
            })
            .cloned()
            .collect();
        if cands.is_empty() {
            return self.binary_stmt();
        }
        let c = self.rng.pick(&cands.iter().collect::<Vec<_>>()).clone();
        let mut args = Vec::new();
        let mut first_ptr = None;
        for &t in &c.params {
            match t {
                Type::Scalar(s) => args.push(self.operand(s)),
                Type::Ptr(e, _) => {
                    let ps: Vec<PtrVal> = self
                        .ptrs
                        .iter()
                        .copied()
                        .filter(|p| p.elem == e && p.role == Role::Host)
                        .collect();
                    let p = self.rng.pick(&ps);
                    first_ptr.get_or_insert(p);
                    args.push(p.v);
                }
            }
        }
        let r = self.b.call(c.id, args, c.ret);
        self.cost = self.cost.saturating_add(self.mult.saturating_mul(c.cost));
        if let (Some(r), Some(t)) = (r, c.ret) {
            match t {
                Type::Scalar(_) => {
                    self.push(r);
                }
                Type::Ptr(e, _) => {
                    let len = first_ptr.map_or(4, |p| p.len);
                    self.ptrs.push(PtrVal {
                        v: r,
                        elem: e,
                        len,
                        role: Role::Host,
                    });
                }
            }
        }
    }

    // ----- control flow

    fn block_with_params(&mut self, n: u64) -> (Block, Vec<Scalar>, Vec<Value>) {
        let blk = self.b.create_block();
        let tys: Vec<Scalar> = (0..n).map(|_| self.any_type()).collect();
        let params = tys
            .iter()
            .map(|&s| self.b.append_block_param(blk, Type::Scalar(s)))
            .collect();
        (blk, tys, params)
    }

    fn operands(&mut self, tys: &[Scalar]) -> Vec<Value> {
        tys.iter().map(|&s| self.operand(s)).collect()
    }

    /// `if c { .. } else { .. }` merging values (and sometimes a pointer) in a block with
    /// parameters; the arms may have parameters of their own, return early or be empty.
    fn diamond(&mut self) {
        let cond = self.bool_operand();
        let n_then = if self.rng.chance(25) {
            self.rng.range(1, 2)
        } else {
            0
        };
        let n_else = if self.rng.chance(25) {
            self.rng.range(1, 2)
        } else {
            0
        };
        let (then_b, then_tys, then_ps) = self.block_with_params(n_then);
        let one_armed = self.rng.chance(25);
        let (else_b, else_tys, else_ps) = if one_armed {
            (then_b, vec![], vec![])
        } else {
            self.block_with_params(n_else)
        };
        let n_merge = self.rng.below(3);
        let (merge, merge_tys, merge_ps) = self.block_with_params(n_merge);
        // A pointer through the merge (host code only).
        let merge_ptr = self
            .ptrs
            .iter()
            .copied()
            .filter(|p| p.role == Role::Host)
            .collect::<Vec<_>>();
        let merge_ptr = (!merge_ptr.is_empty() && self.rng.chance(20))
            .then(|| self.rng.pick(&merge_ptr))
            .map(|p| {
                let v = self.b.append_block_param(merge, Type::ptr(p.elem));
                (p, v)
            });
        let then_args = self.operands(&then_tys);
        let (else_target, else_args) = if one_armed {
            let mut args = self.operands(&merge_tys);
            if let Some((p, _)) = merge_ptr {
                args.push(p.v);
            }
            (merge, args)
        } else {
            (else_b, self.operands(&else_tys))
        };
        self.b
            .branch(cond, then_b, then_args, else_target, else_args);
        let arms: Vec<(Block, Vec<Value>)> = if one_armed {
            vec![(then_b, then_ps)]
        } else {
            vec![(then_b, then_ps), (else_b, else_ps)]
        };
        let scope = self.scope();
        self.depth += 1;
        for (arm, ps) in arms {
            self.b.switch_to_block(arm);
            self.vals.extend(ps);
            let n = self.rng.below(5);
            self.stmts(n);
            if self.rules.returns && self.rng.chance(8) {
                self.ret_here();
            } else {
                let mut args = self.operands(&merge_tys);
                if let Some((p, _)) = merge_ptr {
                    let same: Vec<PtrVal> = self
                        .ptrs
                        .iter()
                        .copied()
                        .filter(|q| q.elem == p.elem && q.role == Role::Host)
                        .collect();
                    args.push(self.rng.pick(&same).v);
                }
                self.b.jump(merge, args);
            }
            self.restore(scope);
        }
        self.depth -= 1;
        self.b.switch_to_block(merge);
        self.vals.extend(merge_ps);
        if let Some((p, v)) = merge_ptr {
            self.ptrs.push(PtrVal { v, ..p });
        }
    }

    /// A loop counting up (by 1 or 2) or down to a small bound, carrying values, with an
    /// optional break and early return.
    fn counted_loop(&mut self) {
        let cs = self.rng.pick(&[
            Scalar::I32,
            Scalar::I32,
            Scalar::U32,
            Scalar::I64,
            Scalar::U64,
            Scalar::I16,
            Scalar::U8,
        ]);
        let down = self.rng.chance(25);
        let (init, bound, trips, far) = self.loop_range(cs, down);
        // (Stepping by 2 to a bound near the type's largest value would wrap around.)
        let step = if !down && !far && self.rng.chance(20) {
            2
        } else {
            1
        };
        let n_carry = self.rng.below(3);
        let carry_tys: Vec<Scalar> = (0..n_carry).map(|_| self.any_type()).collect();
        let inits = self.operands(&carry_tys);
        let header = self.b.create_block();
        let i = self.b.append_block_param(header, Type::Scalar(cs));
        let carried: Vec<Value> = carry_tys
            .iter()
            .map(|&s| self.b.append_block_param(header, Type::Scalar(s)))
            .collect();
        let body = self.b.create_block();
        let exit = self.b.create_block();
        let exit_ps: Vec<Value> = carry_tys
            .iter()
            .map(|&s| self.b.append_block_param(exit, Type::Scalar(s)))
            .collect();
        let start = if down { bound } else { init };
        let mut args = vec![start];
        args.extend(inits);
        self.b.jump(header, args);

        self.b.switch_to_block(header);
        let cond = if down {
            let zero = self.konst(cs, 0);
            self.b.cmp(CmpOp::Gt, i, zero)
        } else {
            self.b.cmp(CmpOp::Lt, i, bound)
        };
        self.b.branch(cond, body, vec![], exit, carried.clone());

        self.b.switch_to_block(body);
        let scope = self.scope();
        self.depth += 1;
        self.loops += 1;
        let outer_mult = self.mult;
        self.mult = self.mult.saturating_mul(trips.max(1));
        let index = if down {
            let one = self.konst(cs, 1);
            self.b.binary(BinaryOp::Sub, i, one)
        } else {
            i
        };
        self.counters.push(index);
        self.vals.extend(carried.iter().copied());
        self.vals.push(index);
        // `p[i]` on every iteration: the access whose checks are hoisted out of the loop.
        let hosts: Vec<PtrVal> = self
            .ptrs
            .iter()
            .copied()
            .filter(|p| p.role == Role::Host)
            .collect();
        if !hosts.is_empty() && !self.rules.pure && self.rng.chance(60) {
            let p = self.rng.pick(&hosts);
            let a = self.b.elem_ptr(p.v, index);
            if self.rng.chance(50) {
                let v = self.b.load(a);
                self.push(v);
            } else {
                let v = self.operand(p.elem);
                self.b.store(a, v);
            }
        }
        let n = self.rng.range(1, 5);
        self.stmts(n);
        if self.rng.chance(20) {
            // break
            let c = self.bool_operand();
            let cont = self.b.create_block();
            let args = self.operands(&carry_tys);
            self.b.branch(c, exit, args, cont, vec![]);
            self.b.switch_to_block(cont);
        }
        if self.rules.returns && self.rng.chance(10) {
            self.early_return();
        }
        let n = self.rng.below(3);
        self.stmts(n);
        let k = self.konst(cs, step);
        let next = if down {
            self.b.binary(BinaryOp::Sub, i, k)
        } else {
            self.b.binary(BinaryOp::Add, i, k)
        };
        let mut args = vec![next];
        args.extend(self.operands(&carry_tys));
        self.b.jump(header, args);
        self.mult = outer_mult;
        self.loops -= 1;
        self.depth -= 1;
        self.restore(scope);

        self.b.switch_to_block(exit);
        self.vals.extend(exit_ps);
    }

    /// The first value and the bound of a loop counter of type `cs` (the bound only, as the
    /// start, when counting down): small ranges from 0, ranges up to an array's length,
    /// ranges from negative values, and short ranges around the magnitudes where element
    /// offsets wrap (2^58 .. 2^63 for 64-bit counters, 2^31 and 2^32 for 32-bit ones); and
    /// the most iterations, and whether the range is one of the last kind.
    fn loop_range(&mut self, cs: Scalar, down: bool) -> (Value, Value, u64, bool) {
        let bits = cs.bits();
        let (min, max): (i128, i128) = if cs.is_signed_int() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        let mk = |b: &mut Self, v: i128| {
            let v = v.clamp(min, max);
            b.konst(cs, v as u64)
        };
        let r = self.rng.below(100);
        let long_ok = self.mult <= 100;
        if down || r < 40 || !long_ok {
            let zero = mk(self, 0);
            let (bound, trips) = if self.rng.chance(50) {
                let n = self.rng.below(7);
                (mk(self, n as i128), n)
            } else {
                let v = self.operand(cs);
                let m = mk(self, 7);
                (self.b.binary(BinaryOp::And, v, m), 7)
            };
            return (zero, bound, trips, false);
        }
        if r < 65 {
            let lens: Vec<u64> = self.ptrs.iter().map(|p| p.len).collect();
            let len = if lens.is_empty() {
                8
            } else {
                self.rng.pick(&lens)
            } as i128;
            let init = if self.rng.chance(50) {
                let k = self.rng.below(3) as i128;
                mk(self, k)
            } else {
                let v = self.operand(cs);
                let m = mk(self, 3);
                self.b.binary(BinaryOp::And, v, m)
            };
            let d = self.rng.below(4) as i128 - 2;
            let bound = mk(self, (len + d).max(0));
            return (init, bound, len as u64 + 2, false);
        }
        if r < 80 && cs.is_signed_int() {
            let k = self.rng.range(1, 3) as i128;
            let n = self.rng.below(3) as i128;
            return (mk(self, -k), mk(self, n), 6, false);
        }
        let centres: &[i128] = match bits {
            64 if cs.is_signed_int() => &[
                1 << 58,
                1 << 59,
                1 << 60,
                1 << 61,
                1 << 62,
                -(1 << 58),
                -(1 << 59),
                -(1 << 61),
                -(1 << 63),
                (1 << 63) - 1,
            ],
            64 => &[1 << 58, 1 << 59, 1 << 61, 1 << 62, 1 << 63, (1 << 64) - 1],
            32 if cs.is_signed_int() => &[-(1 << 31), (1 << 31) - 1, 1 << 30, -(1 << 30)],
            32 => &[1 << 31, (1 << 32) - 1, 1 << 30],
            _ => &[min, max, 0],
        };
        let x = self.rng.pick(centres);
        let lo = (x - self.rng.below(3) as i128).clamp(min, max);
        let hi = (x + self.rng.below(3) as i128).clamp(min, max);
        (mk(self, lo), mk(self, hi), 5, true)
    }

    /// Returns from the current block (which it terminates).
    fn ret_here(&mut self) {
        let v = self.ret.map(|t| match t {
            Type::Scalar(s) => self.result(s),
            Type::Ptr(e, _) => self.ret_ptr(e),
        });
        self.b.ret(v);
    }

    fn ret_ptr(&mut self, e: Scalar) -> Value {
        let same: Vec<PtrVal> = self
            .ptrs
            .iter()
            .copied()
            .filter(|p| p.elem == e && p.role == Role::Host)
            .collect();
        let p = self.rng.pick(&same);
        if self.rng.chance(70) {
            let i = self.index(p.len);
            self.b.elem_ptr(p.v, i)
        } else {
            p.v
        }
    }

    /// `if c { return .. }`.
    fn early_return(&mut self) {
        let c = self.bool_operand();
        let ret_b = self.b.create_block();
        let cont = self.b.create_block();
        self.b.branch(c, ret_b, vec![], cont, vec![]);
        self.b.switch_to_block(ret_b);
        let scope = self.scope();
        let n = self.rng.below(2);
        self.stmts(n);
        self.ret_here();
        self.restore(scope);
        self.b.switch_to_block(cont);
    }

    /// A result of type `s` that depends on several values of the pool.
    fn result(&mut self, s: Scalar) -> Value {
        if self.rng.chance(40) || self.vals.is_empty() {
            return self.operand(s);
        }
        let n = self.rng.range(2, 5);
        let mut acc = self.operand(s);
        for _ in 0..n {
            let Some(v) = self.any_existing() else { break };
            if self.hidden.contains(&v) {
                continue;
            }
            let v = if self.sty(v) == s {
                v
            } else {
                self.b.cast(v, Type::Scalar(s))
            };
            let op = if s.is_float() {
                self.rng
                    .pick(&[BinaryOp::Add, BinaryOp::Min, BinaryOp::Max, BinaryOp::Sub])
            } else {
                self.rng
                    .pick(&[BinaryOp::Add, BinaryOp::Xor, BinaryOp::Sub])
            };
            acc = self.b.binary(op, acc, v);
        }
        acc
    }

    fn finish(&mut self) {
        self.ret_here();
    }
}

// ---------------------------------------------------------------------------------------------
// Functions

struct ModuleGen {
    rng: Rng,
    module: Module,
    callees: Vec<Callee>,
}

impl ModuleGen {
    fn next_id(&self) -> FuncId {
        FuncId::from_u32(self.module.functions.len() as u32)
    }

    fn add(&mut self, f: Function) -> FuncId {
        self.module.add_function(f)
    }

    /// A helper: pure (scalars only, no traps) or general (pointers, traps), possibly
    /// recursive (itself, or through a second helper that calls it back), possibly returning
    /// a pointer. A recursive helper stops within a few levels, except a *deep* one (host
    /// programs only): it recurses until its counter reaches 0, from 2^30 when the argument
    /// is 1000 or more, so that every backend runs out of stack (`Trap::StackOverflow`).
    fn helper(&mut self, pure: bool, host_only_ok: bool) {
        let id = self.next_id();
        let rng = &mut self.rng;
        let recursive = rng.chance(30);
        let deep = recursive && host_only_ok && rng.chance(40);
        let mutual = recursive && !deep && rng.chance(30);
        // A deep helper cannot trap in any other way: where it would trap first depends on
        // how deep each backend's stack goes.
        let pure = pure || deep;
        let mut params = Vec::new();
        if recursive {
            params.push(Type::U32);
        }
        for _ in 0..rng.range(0, 3) {
            params.push(Type::Scalar(rng.pick(&Scalar::HOST)));
        }
        let mut ptr_elems = Vec::new();
        if !pure {
            for _ in 0..rng.range(0, 2) {
                let e = rng.pick(&Scalar::HOST);
                ptr_elems.push(e);
                params.push(Type::ptr(e));
            }
        }
        let ret = if !ptr_elems.is_empty() && rng.chance(20) {
            Some(Type::ptr(rng.pick(&ptr_elems)))
        } else if rng.chance(10) {
            None
        } else {
            Some(Type::Scalar(rng.pick(&Scalar::HOST)))
        };
        let rules = FnRules {
            callees: if deep {
                Vec::new()
            } else {
                self.callees
                    .iter()
                    .filter(|c| (!pure || c.pure) && !c.host_only)
                    .cloned()
                    .collect()
            },
            pure,
            div_traps: !pure,
            div_only: false,
            kernel: None,
            returns: true,
            max_loops: if deep { 0 } else { 1 },
        };
        let budget = if deep {
            rng.range(1, 6)
        } else {
            rng.range(4, 20)
        } as i64;
        let depth = rng.range(1, 6);
        let mut sub = Rng::new(rng.next_u64());
        let mut sub2 = Rng::new(rng.next_u64());
        let sig = params.clone();
        let target = if mutual {
            FuncId::from_u32(id.as_u32() + 1)
        } else {
            id
        };
        let mut cost = 0;
        let f = FunctionBuilder::build(
            &format!("h{}", id.as_u32()),
            FuncKind::Host,
            &params,
            ret,
            |b, ps| {
                let mut body = Body::new(b, &mut sub, rules.clone(), ret, budget);
                body.params(ps, &sig);
                if recursive {
                    let d = ps[0];
                    let zero = body.konst(Scalar::U32, 0);
                    let c = if deep {
                        body.b.cmp(CmpOp::Eq, d, zero)
                    } else {
                        let max = body.konst(Scalar::U32, depth);
                        let c0 = body.b.cmp(CmpOp::Eq, d, zero);
                        let c1 = body.b.cmp(CmpOp::Gt, d, max);
                        body.b.binary(BinaryOp::Or, c0, c1)
                    };
                    let base = body.b.create_block();
                    let rec = body.b.create_block();
                    body.b.branch(c, base, vec![], rec, vec![]);
                    body.b.switch_to_block(base);
                    let scope = body.scope();
                    let n = body.rng.below(4);
                    body.depth = 1;
                    body.stmts(n);
                    body.finish();
                    body.restore(scope);
                    body.b.switch_to_block(rec);
                    let n = body.rng.below(3);
                    body.stmts(n);
                    let one = body.konst(Scalar::U32, 1);
                    let mut d1 = body.b.binary(BinaryOp::Sub, d, one);
                    if deep {
                        let small = body.konst(Scalar::U32, 1000);
                        let is_small = body.b.cmp(CmpOp::Lt, d, small);
                        let far = body.konst(Scalar::U32, 1 << 30);
                        let far = body.b.binary(BinaryOp::Or, d, far);
                        d1 = body.b.select(is_small, d1, far);
                    }
                    body.recursive_call(target, d1, ps, &sig, ret);
                }
                body.stmts(budget as u64);
                body.finish();
                cost = body.cost.saturating_add(1);
            },
        );
        self.add(f);
        if mutual {
            // The helper that calls the first one back with its own counter.
            let g = FunctionBuilder::build(
                &format!("h{}", target.as_u32()),
                FuncKind::Host,
                &params,
                ret,
                |b, ps| {
                    let mut body = Body::new(b, &mut sub2, rules, ret, budget);
                    body.params(ps, &sig);
                    let n = body.rng.below(4);
                    body.stmts(n);
                    body.recursive_call(id, ps[0], ps, &sig, ret);
                    let n = body.rng.below(3);
                    body.stmts(n);
                    body.finish();
                    cost = cost.saturating_add(body.cost);
                },
            );
            self.add(g);
        }
        let cost = if deep {
            MAX_COST
        } else if recursive {
            cost.saturating_mul(depth + 1)
        } else {
            cost
        };
        for f in [id, target] {
            self.callees.push(Callee {
                id: f,
                params: params.clone(),
                ret,
                pure,
                cost,
                host_only: deep,
            });
            if !mutual {
                break;
            }
        }
    }
}

impl Body<'_, '_> {
    /// Puts a function's parameters in scope (pointers with a guessed length).
    fn params(&mut self, ps: &[Value], sig: &[Type]) {
        for (&p, &t) in ps.iter().zip(sig) {
            match t {
                Type::Scalar(_) => self.vals.push(p),
                Type::Ptr(e, _) => {
                    let len = self.rng.pick(&[1, 4, 8, 16]);
                    self.ptrs.push(PtrVal {
                        v: p,
                        elem: e,
                        len,
                        role: Role::Host,
                    });
                }
            }
        }
    }

    /// Calls `target` (of signature `sig`, first parameter the recursion counter) with
    /// counter `d`, the pointer parameters `ps` (or pointers near them) and new scalars.
    fn recursive_call(
        &mut self,
        target: FuncId,
        d: Value,
        ps: &[Value],
        sig: &[Type],
        ret: Option<Type>,
    ) {
        let mut args = vec![d];
        for (i, &t) in sig.iter().enumerate().skip(1) {
            args.push(match t {
                Type::Scalar(s) => self.operand(s),
                Type::Ptr(..) => {
                    if self.rng.chance(70) {
                        ps[i]
                    } else {
                        let k = self.index(2);
                        self.b.elem_ptr(ps[i], k)
                    }
                }
            });
        }
        let r = self.b.call(target, args, ret);
        match (r, ret) {
            (Some(r), Some(Type::Scalar(_))) => self.vals.push(r),
            (Some(r), Some(Type::Ptr(e, _))) => self.ptrs.push(PtrVal {
                v: r,
                elem: e,
                len: 2,
                role: Role::Host,
            }),
            _ => {}
        }
    }
}

/// A kernel the entry launches.
#[derive(Clone, Debug)]
struct KernelPlan {
    id: FuncId,
    /// The entry's pointer parameters it takes (indices into the arrays), in order.
    ptr_args: Vec<usize>,
    /// Its scalar parameters (after the pointers).
    scalars: Vec<Scalar>,
    /// `[grid x, grid y, block x, block y]`.
    dims: [u32; 4],
    /// The launch may compute its block size from an argument (possibly 0: an invalid launch).
    dynamic: bool,
}

impl ModuleGen {
    /// A kernel over the entry's arrays `arrays` (indices `ptrs` of them).
    fn kernel(&mut self, arrays: &[ArraySpec]) -> KernelPlan {
        let id = self.next_id();
        let rng = &mut self.rng;
        // Roles: a kernel never reads another thread's element of an array it writes.
        let n = arrays.len();
        let mut ptr_args: Vec<usize> = (0..n).collect();
        if n == 2 && rng.chance(50) {
            ptr_args.swap(0, 1);
        }
        if n == 2 && rng.chance(20) {
            ptr_args.truncate(1);
        }
        let roles: Vec<Role> = match ptr_args.len() {
            1 => vec![if rng.chance(70) {
                Role::KOut
            } else {
                Role::KIn
            }],
            _ => {
                if rng.chance(20) {
                    vec![Role::KOut, Role::KOut]
                } else {
                    vec![Role::KIn, Role::KOut]
                }
            }
        };
        let grid_stride = rng.chance(20);
        let two_d = !grid_stride && rng.chance(20);
        let dims = if two_d {
            let bx = rng.range(1, 4) as u32;
            let by = rng.range(1, (8 / bx) as u64) as u32;
            [rng.range(1, 2) as u32, rng.range(1, 2) as u32, bx, by]
        } else {
            [rng.range(1, 3) as u32, 1, rng.range(1, 8) as u32, 1]
        };
        let dynamic = !two_d && rng.chance(15);
        let has_in = roles.contains(&Role::KIn);
        let has_out = roles.contains(&Role::KOut);
        let use_shared = !grid_stride && rng.chance(75);
        let mode = match rng.below(100) {
            0..=44 => TrapMode::Nothing,
            45..=59 if has_in => TrapMode::OobIn,
            60..=74 if has_out => TrapMode::OobOut,
            75..=84 if use_shared => TrapMode::OobShared,
            85..=99 => TrapMode::Div,
            _ => TrapMode::Nothing,
        };
        let scalars: Vec<Scalar> = (0..rng.range(0, 3))
            .map(|_| rng.pick(&Scalar::HOST))
            .collect();
        let mut params: Vec<Type> = ptr_args
            .iter()
            .map(|&a| Type::ptr(arrays[a].elem))
            .collect();
        params.extend(scalars.iter().map(|&s| Type::Scalar(s)));
        let callees: Vec<Callee> = self
            .callees
            .iter()
            .filter(|c| c.pure && !c.host_only)
            .cloned()
            .collect();
        let mut sub = Rng::new(rng.next_u64());
        let name = format!("k{}", id.as_u32());
        let specs: Vec<ArraySpec> = ptr_args.iter().map(|&a| arrays[a]).collect();
        let f = FunctionBuilder::build(&name, FuncKind::Kernel, &params, None, |b, ps| {
            let tx = b.gpu_index(GpuIndex::ThreadIdx, Dim::X);
            let bx = b.gpu_index(GpuIndex::BlockIdx, Dim::X);
            let dx = b.gpu_index(GpuIndex::BlockDim, Dim::X);
            let gx = b.gpu_index(GpuIndex::GridDim, Dim::X);
            let (ltid, nthr, gid) = if grid_stride || !two_d {
                let base = b.binary(BinaryOp::Mul, bx, dx);
                (tx, dx, b.binary(BinaryOp::Add, base, tx))
            } else {
                let ty = b.gpu_index(GpuIndex::ThreadIdx, Dim::Y);
                let by = b.gpu_index(GpuIndex::BlockIdx, Dim::Y);
                let dy = b.gpu_index(GpuIndex::BlockDim, Dim::Y);
                let dz = b.gpu_index(GpuIndex::BlockDim, Dim::Z);
                let row = b.binary(BinaryOp::Mul, ty, dx);
                let ltid = b.binary(BinaryOp::Add, row, tx);
                let nxy = b.binary(BinaryOp::Mul, dx, dy);
                let nthr = b.binary(BinaryOp::Mul, nxy, dz);
                let brow = b.binary(BinaryOp::Mul, by, gx);
                let blin = b.binary(BinaryOp::Add, brow, bx);
                let base = b.binary(BinaryOp::Mul, blin, nthr);
                (ltid, nthr, b.binary(BinaryOp::Add, base, ltid))
            };
            let rules = FnRules {
                callees,
                pure: false,
                div_traps: mode == TrapMode::Div,
                div_only: true,
                kernel: Some(KernelCx { mode, ltid, nthr }),
                returns: false,
                max_loops: 1,
            };
            let budget = sub.range(6, 24) as i64;
            let mut body = Body::new(b, &mut sub, rules, None, budget);
            let mut outs = Vec::new();
            for (i, (&p, &role)) in ps.iter().zip(&roles).enumerate() {
                let pv = PtrVal {
                    v: p,
                    elem: specs[i].elem,
                    len: specs[i].len as u64,
                    role,
                };
                if role == Role::KOut {
                    outs.push(pv);
                }
                body.ptrs.push(pv);
            }
            let scalar_ps: Vec<Value> = ps[roles.len()..].to_vec();
            body.vals.extend(scalar_ps.iter().copied());
            if grid_stride {
                kernel_grid_stride(&mut body, gid, gx, dx, &outs, &specs, &roles);
            } else {
                body.vals.extend([gid, ltid]);
                kernel_phases(&mut body, gid, bx, &scalar_ps, &outs, use_shared);
            }
        });
        self.add(f);
        KernelPlan {
            id,
            ptr_args,
            scalars,
            dims,
            dynamic,
        }
    }
}

/// A kernel of phases separated by barriers (some in uniform loops or uniform branches), then
/// an epilogue that writes the thread's element of each output.
fn kernel_phases(
    body: &mut Body<'_, '_>,
    gid: Value,
    bx: Value,
    uniform: &[Value],
    outs: &[PtrVal],
    use_shared: bool,
) {
    let cx = body.rules.kernel.clone().expect("kernel");
    let mut shared = Vec::new();
    if use_shared {
        for _ in 0..body.rng.range(1, 2) {
            let e = body.rng.pick(&Scalar::HOST);
            let len = body.rng.pick(&[8, 8, 12, 16]);
            let v = body.b.shared_alloc(e, len);
            shared.push(PtrVal {
                v,
                elem: e,
                len: len as u64,
                role: Role::Shared,
            });
        }
        body.ptrs.extend(shared.iter().copied());
        init_shared(body, &cx, &shared);
    }
    let mut uniform: Vec<Value> = uniform.to_vec();
    uniform.push(bx);
    let phases = body.rng.range(1, 3);
    for _ in 0..phases {
        match body.rng.below(10) {
            0..=5 => phase(body, &cx, &shared),
            6..=7 => {
                // A loop with a uniform trip count around a phase.
                let bound = if !uniform.is_empty() && body.rng.chance(50) {
                    let u = body.rng.pick(&uniform);
                    let u = body.b.cast(u, Type::U32);
                    let m = body.konst(Scalar::U32, 3);
                    body.b.binary(BinaryOp::And, u, m)
                } else {
                    let n = body.rng.range(1, 3);
                    body.konst(Scalar::U32, n)
                };
                let header = body.b.create_block();
                let i = body.b.append_block_param(header, Type::U32);
                let lbody = body.b.create_block();
                let exit = body.b.create_block();
                let zero = body.konst(Scalar::U32, 0);
                body.b.jump(header, vec![zero]);
                body.b.switch_to_block(header);
                let c = body.b.cmp(CmpOp::Lt, i, bound);
                body.b.branch(c, lbody, vec![], exit, vec![]);
                body.b.switch_to_block(lbody);
                let scope = body.scope();
                body.vals.push(i);
                body.loops += 1;
                phase(body, &cx, &shared);
                body.loops -= 1;
                body.restore(scope);
                let one = body.konst(Scalar::U32, 1);
                let next = body.b.binary(BinaryOp::Add, i, one);
                body.b.jump(header, vec![next]);
                body.b.switch_to_block(exit);
            }
            _ => {
                // A branch on a uniform condition, a phase in one or both arms.
                let c = if !uniform.is_empty() {
                    let u = body.rng.pick(&uniform);
                    let s = body.sty(u);
                    let k = body.random_const(s);
                    let op = body.rng.pick(&CmpOp::ALL);
                    body.b.cmp(op, u, k)
                } else {
                    body.operand(Scalar::Bool)
                };
                let then_b = body.b.create_block();
                let else_b = body.b.create_block();
                let merge = body.b.create_block();
                body.b.branch(c, then_b, vec![], else_b, vec![]);
                let scope = body.scope();
                body.b.switch_to_block(then_b);
                phase(body, &cx, &shared);
                body.b.jump(merge, vec![]);
                body.restore(scope);
                body.b.switch_to_block(else_b);
                if body.rng.chance(50) {
                    phase(body, &cx, &shared);
                } else {
                    let n = body.rng.below(3);
                    body.stmts(n);
                }
                body.b.jump(merge, vec![]);
                body.restore(scope);
                body.b.switch_to_block(merge);
            }
        }
    }
    // Epilogue: past the last barrier, threads may leave early.
    body.rules.returns = true;
    if body.rng.chance(20) {
        body.early_return();
    }
    let n = body.rng.below(3);
    body.stmts(n);
    for out in outs {
        let guarded = cx.mode != TrapMode::OobOut;
        let (st, done) = if guarded {
            let len = body.konst(Scalar::U32, out.len);
            let ok = body.b.cmp(CmpOp::Lt, gid, len);
            let st = body.b.create_block();
            let done = body.b.create_block();
            body.b.branch(ok, st, vec![], done, vec![]);
            body.b.switch_to_block(st);
            (Some(st), Some(done))
        } else {
            (None, None)
        };
        let a = body.b.elem_ptr(out.v, gid);
        let scope = body.scope();
        if body.rng.chance(50) {
            let old = body.b.load(a);
            body.vals.push(old);
        }
        let v = body.result(out.elem);
        body.b.store(a, v);
        body.restore(scope);
        if let (Some(_), Some(done)) = (st, done) {
            body.b.jump(done, vec![]);
            body.b.switch_to_block(done);
        }
    }
    body.b.ret(None);
}

/// Fills the shared arrays (whose contents are undefined when a block starts): thread `t`
/// writes elements `t, t + n, ..` (`n` threads) with a value of the element's index, then a
/// barrier.
fn init_shared(body: &mut Body<'_, '_>, cx: &KernelCx, shared: &[PtrVal]) {
    for sh in shared {
        let header = body.b.create_block();
        let j = body.b.append_block_param(header, Type::U32);
        let lbody = body.b.create_block();
        let exit = body.b.create_block();
        let len = body.konst(Scalar::U32, sh.len);
        body.b.jump(header, vec![cx.ltid]);
        body.b.switch_to_block(header);
        let c = body.b.cmp(CmpOp::Lt, j, len);
        body.b.branch(c, lbody, vec![], exit, vec![]);
        body.b.switch_to_block(lbody);
        let k = interesting_bits(body.rng, Scalar::U32);
        let k = body.konst(Scalar::U32, k);
        let v = body.b.binary(BinaryOp::Mul, j, k);
        let v = body.b.cast(v, Type::Scalar(sh.elem));
        let a = body.b.elem_ptr(sh.v, j);
        body.b.store(a, v);
        let next = body.b.binary(BinaryOp::Add, j, cx.nthr);
        body.b.jump(header, vec![next]);
        body.b.switch_to_block(exit);
    }
    body.b.barrier();
}

/// One phase: statements, the thread's slot of each shared array written, a barrier, another
/// thread's slot read, a barrier.
fn phase(body: &mut Body<'_, '_>, cx: &KernelCx, shared: &[PtrVal]) {
    let n = body.rng.range(1, 5);
    body.stmts(n);
    if shared.is_empty() {
        if body.rng.chance(50) {
            body.b.barrier();
        }
        return;
    }
    for sh in shared {
        let a = body.b.elem_ptr(sh.v, cx.ltid);
        let v = body.result(sh.elem);
        body.b.store(a, v);
    }
    body.b.barrier();
    for sh in shared {
        let k = body.rng.range(0, 8);
        let k = body.konst(Scalar::U32, k);
        let i = body.b.binary(BinaryOp::Add, cx.ltid, k);
        let i = if cx.mode == TrapMode::OobShared {
            i
        } else {
            body.b.binary(BinaryOp::Rem, i, cx.nthr)
        };
        let a = body.b.elem_ptr(sh.v, i);
        let v = body.b.load(a);
        body.vals.push(v);
    }
    body.b.barrier();
}

/// A canonical grid-stride loop (`for i in (gid..X).step_by(gridDim * blockDim)`), which the
/// CPU runtime may run collapsed, in parallel chunks.
fn kernel_grid_stride(
    body: &mut Body<'_, '_>,
    gid: Value,
    gx: Value,
    dx: Value,
    outs: &[PtrVal],
    specs: &[ArraySpec],
    roles: &[Role],
) {
    let mode = body.rules.kernel.as_ref().expect("kernel").mode;
    let ity = body.rng.pick(&[
        Scalar::U32,
        Scalar::U32,
        Scalar::I32,
        Scalar::U64,
        Scalar::I64,
    ]);
    let stride = body.b.binary(BinaryOp::Mul, gx, dx);
    let (start, stride) = if ity == Scalar::U32 {
        (gid, stride)
    } else {
        (
            body.b.cast(gid, Type::Scalar(ity)),
            body.b.cast(stride, Type::Scalar(ity)),
        )
    };
    body.hidden.extend([gid, stride, start]);
    let len_of = |role: Role| -> Option<u64> {
        roles
            .iter()
            .zip(specs)
            .filter(|(r, _)| **r == role)
            .map(|(_, s)| s.len as u64)
            .min()
    };
    let in_len = len_of(Role::KIn);
    let out_len = len_of(Role::KOut);
    // The bound: within every array accessed at `i`, except the one the trap mode names.
    let safe = in_len.unwrap_or(u64::MAX).min(out_len.unwrap_or(u64::MAX));
    let safe = if safe == u64::MAX { 16 } else { safe };
    let x = match mode {
        TrapMode::OobOut | TrapMode::OobIn => safe + body.rng.range(0, 6),
        _ => safe,
    };
    let x = match mode {
        TrapMode::OobOut => x.min(in_len.unwrap_or(u64::MAX)),
        TrapMode::OobIn => x.min(out_len.unwrap_or(u64::MAX)),
        _ => x,
    };
    let bound = body.konst(ity, x);
    let header = body.b.create_block();
    let i = body.b.append_block_param(header, Type::Scalar(ity));
    let lbody = body.b.create_block();
    let exit = body.b.create_block();
    body.b.jump(header, vec![start]);
    body.b.switch_to_block(header);
    let c = body.b.cmp(CmpOp::Lt, i, bound);
    body.b.branch(c, lbody, vec![], exit, vec![]);
    body.b.switch_to_block(lbody);
    body.vals.push(i);
    body.loops += 1;
    // Loads at `i` from the inputs.
    let ins: Vec<PtrVal> = body
        .ptrs
        .iter()
        .copied()
        .filter(|p| p.role == Role::KIn)
        .collect();
    for p in &ins {
        let idx = if mode == TrapMode::OobIn || x <= p.len {
            i
        } else {
            let k = body.konst(ity, p.len.max(1));
            body.b.binary(BinaryOp::Rem, i, k)
        };
        if p.len == 0 && mode != TrapMode::OobIn {
            continue;
        }
        let a = body.b.elem_ptr(p.v, idx);
        let v = body.b.load(a);
        body.vals.push(v);
    }
    let n = body.rng.range(1, 6);
    body.stmts(n);
    for out in outs {
        let a = body.b.elem_ptr(out.v, i);
        let scope = body.scope();
        if body.rng.chance(40) {
            let old = body.b.load(a);
            body.vals.push(old);
        }
        let v = body.result(out.elem);
        body.b.store(a, v);
        body.restore(scope);
    }
    body.loops -= 1;
    let next = body.b.binary(BinaryOp::Add, i, stride);
    body.b.jump(header, vec![next]);
    body.b.switch_to_block(exit);
    body.b.ret(None);
}

/// Generates the program of `seed`.
pub fn generate(seed: u64, flavor: Flavor) -> Program {
    let mut g = ModuleGen {
        rng: Rng::new(seed),
        module: Module::new(),
        callees: Vec::new(),
    };
    let kernels = flavor == Flavor::Kernels;
    let n_helpers = g.rng.range(0, 3);
    for _ in 0..n_helpers {
        let pure = kernels || g.rng.chance(40);
        g.helper(pure, !kernels);
    }
    // The entry's parameters.
    let rng = &mut g.rng;
    let n_arrays = rng.range(1, 2) as usize;
    let arrays: Vec<ArraySpec> = (0..n_arrays)
        .map(|_| ArraySpec {
            elem: match rng.below(4) {
                0 => Scalar::I32,
                1 => Scalar::F64,
                _ => rng.pick(&Scalar::HOST),
            },
            len: rng.pick(&[0, 1, 3, 5, 8, 8, 12, 16, 16, 24, 30, 64, 100]),
        })
        .collect();
    let n_scalars = rng.range(1, 4);
    let mut params: Vec<Type> = (0..n_scalars)
        .map(|_| Type::Scalar(rng.pick(&Scalar::HOST)))
        .collect();
    // Pointers at random positions among the scalars.
    // (in array order: each after the previous one).
    let mut at = 0;
    for a in &arrays {
        at = rng.range(at as u64, params.len() as u64) as usize;
        params.insert(at, Type::ptr(a.elem));
        at += 1;
    }
    let ret = if rng.chance(8) {
        None
    } else {
        Some(Type::Scalar(rng.pick(&Scalar::HOST)))
    };
    let plans: Vec<KernelPlan> = if kernels {
        let n = g.rng.range(1, 2);
        (0..n).map(|_| g.kernel(&arrays)).collect()
    } else {
        Vec::new()
    };
    let callees = g.callees.clone();
    let rules = FnRules {
        callees,
        pure: false,
        div_traps: true,
        div_only: false,
        kernel: None,
        returns: true,
        max_loops: 2,
    };
    let mut sub = Rng::new(g.rng.next_u64());
    let budget = if kernels {
        sub.range(2, 10)
    } else {
        sub.range(8, 40)
    } as i64;
    let sig = params.clone();
    let arrays_c = arrays.clone();
    let entry = FunctionBuilder::build("entry", FuncKind::Host, &params, ret, |b, ps| {
        let mut body = Body::new(b, &mut sub, rules, ret, budget);
        let mut k = 0;
        let mut array_ptrs = Vec::new();
        for (&p, &t) in ps.iter().zip(&sig) {
            match t {
                Type::Scalar(_) => body.vals.push(p),
                Type::Ptr(e, _) => {
                    let spec = arrays_c[k];
                    debug_assert_eq!(spec.elem, e);
                    k += 1;
                    let pv = PtrVal {
                        v: p,
                        elem: e,
                        len: spec.len as u64,
                        role: Role::Host,
                    };
                    array_ptrs.push(pv);
                    body.ptrs.push(pv);
                }
            }
        }
        if plans.is_empty() {
            body.stmts(budget as u64);
        } else {
            let n = body.rng.below(4);
            body.stmts(n);
            for plan in &plans {
                let times = if body.rng.chance(20) { 2 } else { 1 };
                for _ in 0..times {
                    launch(&mut body, plan, &array_ptrs);
                }
            }
            let n = body.rng.range(1, 4);
            body.stmts(n);
            // Read back some elements.
            for p in &array_ptrs {
                if p.len > 0 && body.rng.chance(70) {
                    let i = body.rng.below(p.len);
                    let i = body.konst(Scalar::I64, i);
                    let a = body.b.elem_ptr(p.v, i);
                    let v = body.b.load(a);
                    body.vals.push(v);
                }
            }
        }
        body.finish();
    });
    g.module.entry = Some(g.add(entry));

    let rng = &mut g.rng;
    let init = arrays
        .iter()
        .map(|a| (0..a.len).map(|_| interesting_bits(rng, a.elem)).collect())
        .collect();
    let scalar_tys: Vec<Scalar> = params.iter().filter_map(|t| t.scalar()).collect();
    let inputs = (0..6)
        .map(|_| {
            scalar_tys
                .iter()
                .map(|&s| interesting_bits(rng, s))
                .collect()
        })
        .collect();
    Program {
        seed,
        module: g.module,
        params,
        arrays,
        init,
        inputs,
        has_kernels: kernels,
    }
}

/// Launches `plan` from the entry.
fn launch(body: &mut Body<'_, '_>, plan: &KernelPlan, arrays: &[PtrVal]) {
    let [gx, gy, bx, by] = plan.dims;
    let gx = body.konst(Scalar::U32, gx as u64);
    let gy = body.konst(Scalar::U32, gy as u64);
    let one = body.konst(Scalar::U32, 1);
    let bx = if plan.dynamic {
        // From a value: 0 (an invalid launch) to 8 threads.
        let v = body.operand(Scalar::U32);
        let m = body.konst(Scalar::U32, 7);
        let v = body.b.binary(BinaryOp::And, v, m);
        if body.rng.chance(70) {
            body.b.binary(BinaryOp::Add, v, one)
        } else {
            v
        }
    } else {
        body.konst(Scalar::U32, bx as u64)
    };
    let by = body.konst(Scalar::U32, by as u64);
    let mut args: Vec<Value> = plan.ptr_args.iter().map(|&a| arrays[a].v).collect();
    for &s in &plan.scalars {
        args.push(body.operand(s));
    }
    body.b.launch(plan.id, [gx, gy, one], [bx, by, one], args);
}

// ---------------------------------------------------------------------------------------------
// Running

/// What one run of a program returned.
#[derive(Clone, PartialEq, Debug)]
pub struct Outcome {
    /// The result bits (NaNs canonical) or the trap.
    pub result: Result<u64, Trap>,
    /// The arrays' final contents (bits, NaNs canonical).
    pub arrays: Vec<Vec<u64>>,
}

/// One way to run a module: a backend, kernels on the CPU runtime compiled by that backend.
pub struct Target {
    /// Its name in reports.
    pub name: String,
    backend: Arc<dyn Backend>,
    /// Run the module without the optimisation passes.
    unoptimized: bool,
    /// Time spent compiling and running, in microseconds.
    compile_us: AtomicU64,
    run_us: AtomicU64,
}

/// Runs programs on every target and compares them with the reference (the first target).
pub struct Runner {
    targets: Vec<Target>,
    runtime: CpuRuntime,
    /// Also compare the arrays after a trap (host-only programs run sequentially, so memory
    /// after a trap is defined).
    pub compare_memory_on_trap: bool,
}

/// A disagreement, or a failure to compile or run.
#[derive(Clone, Debug)]
pub struct Mismatch {
    /// The program's seed.
    pub seed: u64,
    /// What went wrong.
    pub what: String,
    /// The module as generated.
    pub module: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seed {:#018x}: {}\n--- module ---\n{}",
            self.seed, self.what, self.module
        )
    }
}

/// Guard elements on each side of every array.
const GUARD: usize = 4;

fn nan_canonical(s: Scalar, bits: u64) -> u64 {
    match s {
        Scalar::F32 if f32::from_bits(bits as u32).is_nan() => 0x7fc0_0000,
        Scalar::F64 if f64::from_bits(bits).is_nan() => 0x7ff8_0000_0000_0000,
        Scalar::F16 | Scalar::BF16
            if nacre::ir::semantics::half_to_f32(s, bits.into()).is_nan() =>
        {
            nacre::ir::semantics::f32_to_half(s, f32::NAN) as u64
        }
        _ => bits,
    }
}

/// An array with guard elements around it.
struct Guarded {
    spec: ArraySpec,
    /// Storage (8-byte aligned).
    words: Vec<u64>,
    /// The guard bytes as written.
    pattern: Vec<u8>,
}

impl Guarded {
    fn new(spec: ArraySpec, init: &[u64], pattern_seed: u64) -> Guarded {
        let eb = spec.elem.bytes() as usize;
        let total = (spec.len + 2 * GUARD) * eb;
        let mut words = vec![0u64; total.div_ceil(8)];
        let mut rng = Rng::new(pattern_seed);
        let pattern: Vec<u8> = (0..2 * GUARD * eb).map(|_| rng.next_u64() as u8).collect();
        let bytes = Self::bytes_mut(&mut words, total);
        bytes[..GUARD * eb].copy_from_slice(&pattern[..GUARD * eb]);
        bytes[(GUARD + spec.len) * eb..].copy_from_slice(&pattern[GUARD * eb..]);
        for (i, &b) in init.iter().enumerate() {
            let at = (GUARD + i) * eb;
            bytes[at..at + eb].copy_from_slice(&b.to_le_bytes()[..eb]);
        }
        Guarded {
            spec,
            words,
            pattern,
        }
    }

    fn bytes_mut(words: &mut [u64], total: usize) -> &mut [u8] {
        // SAFETY: u64 storage viewed as bytes, within its length.
        unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr() as *mut u8, total) }
    }

    fn bytes(&self) -> &[u8] {
        let total = (self.spec.len + 2 * GUARD) * self.spec.elem.bytes() as usize;
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const u8, total) }
    }

    /// The address of element 0.
    fn addr(&mut self) -> u64 {
        self.words.as_mut_ptr() as u64 + (GUARD * self.spec.elem.bytes() as usize) as u64
    }

    fn byte_len(&self) -> u64 {
        (self.spec.len * self.spec.elem.bytes() as usize) as u64
    }

    /// `Err` naming the first changed guard byte.
    fn check_guards(&self) -> Result<(), String> {
        let eb = self.spec.elem.bytes() as usize;
        let bytes = self.bytes();
        let front = &bytes[..GUARD * eb];
        let back = &bytes[(GUARD + self.spec.len) * eb..];
        for (i, (&a, &b)) in front.iter().zip(&self.pattern[..GUARD * eb]).enumerate() {
            if a != b {
                return Err(format!(
                    "guard byte {} before the array changed ({b:#04x} -> {a:#04x})",
                    GUARD * eb - i
                ));
            }
        }
        for (i, (&a, &b)) in back.iter().zip(&self.pattern[GUARD * eb..]).enumerate() {
            if a != b {
                return Err(format!(
                    "guard byte {i} after the array changed ({b:#04x} -> {a:#04x})"
                ));
            }
        }
        Ok(())
    }

    fn contents(&self) -> Vec<u64> {
        let eb = self.spec.elem.bytes() as usize;
        let bytes = self.bytes();
        (0..self.spec.len)
            .map(|i| {
                let at = (GUARD + i) * eb;
                let mut b = [0u8; 8];
                b[..eb].copy_from_slice(&bytes[at..at + eb]);
                let bits = u64::from_le_bytes(b);
                let bits = norm(Type::Scalar(self.spec.elem), bits);
                nan_canonical(self.spec.elem, bits)
            })
            .collect()
    }
}

/// A compiled entry, called with arguments as bits.
type ExecFn = dyn Fn(&[u64]) -> Result<u64, Trap> + Send + Sync;

/// A compiled program on one target.
struct Compiled {
    exec: Box<ExecFn>,
    _kernels: Option<Arc<dyn PreparedKernels>>,
}

impl Runner {
    /// Interpreter (the reference; also unoptimised), Cranelift at both optimisation levels,
    /// and C (whose sources go to the directory `NACRE_FUZZ_KEEP_C` if it is set).
    pub fn new() -> Runner {
        let make = |kind: BackendKind, opt: OptLevel| {
            let mut o = Options::with_backend(kind);
            o.opt_level = opt;
            // For debugging: keep every generated C source there.
            o.c.keep_source_dir = std::env::var_os("NACRE_FUZZ_KEEP_C").map(Into::into);
            nacre::make_backend(&o).expect("backend")
        };
        let mut targets = vec![Target {
            name: "interp".into(),
            backend: make(BackendKind::Interp, OptLevel::Speed),
            unoptimized: false,
            compile_us: AtomicU64::new(0),
            run_us: AtomicU64::new(0),
        }];
        targets.push(Target {
            name: "interp-unoptimized".into(),
            backend: make(BackendKind::Interp, OptLevel::Speed),
            unoptimized: true,
            compile_us: AtomicU64::new(0),
            run_us: AtomicU64::new(0),
        });
        for kind in BackendKind::ALL {
            if kind == BackendKind::Interp {
                continue;
            }
            targets.push(Target {
                name: kind.name().into(),
                backend: make(kind, OptLevel::Speed),
                unoptimized: false,
                compile_us: AtomicU64::new(0),
                run_us: AtomicU64::new(0),
            });
        }
        targets.push(Target {
            name: "cranelift-none".into(),
            backend: make(BackendKind::Cranelift, OptLevel::None),
            unoptimized: false,
            compile_us: AtomicU64::new(0),
            run_us: AtomicU64::new(0),
        });
        Runner {
            targets,
            runtime: CpuRuntime::new(
                CpuOptions {
                    mode: CpuMode::Grid,
                },
                Default::default(),
            ),
            compare_memory_on_trap: true,
        }
    }

    /// The targets' names, the reference first.
    pub fn target_names(&self) -> Vec<String> {
        self.targets.iter().map(|t| t.name.clone()).collect()
    }

    fn compile(&self, t: &Target, module: &VerifiedModule) -> Result<Compiled, String> {
        let linkage = Linkage::default();
        let (kernels, linkage) = if module
            .module()
            .functions
            .values()
            .any(|f| f.kind == FuncKind::Kernel)
        {
            let k = self
                .runtime
                .prepare(module, &linkage, &*t.backend)
                .map_err(|e| format!("preparing kernels: {e}"))?;
            let l = linkage.with_launch(k.launch_binding());
            (Some(k), l)
        } else {
            (None, linkage)
        };
        let exec = t
            .backend
            .compile(module, &linkage)
            .map_err(|e| format!("compiling: {e}"))?;
        // The executable's methods are callable on the trait object.
        let exec: Box<ExecFn> = Box::new(move |args: &[u64]| exec.call(args));
        Ok(Compiled {
            exec,
            _kernels: kernels,
        })
    }

    /// Runs the compiled program on input set `input`, with guard pattern `pattern`.
    fn run(
        &self,
        c: &Compiled,
        p: &Program,
        input: &[u64],
        pattern: u64,
    ) -> Result<Outcome, String> {
        let mut arrays: Vec<Guarded> = p
            .arrays
            .iter()
            .zip(&p.init)
            .enumerate()
            .map(|(i, (&spec, init))| Guarded::new(spec, init, pattern ^ (i as u64) << 56))
            .collect();
        let mut args = Vec::new();
        let mut companions = Vec::new();
        let (mut si, mut ai) = (0, 0);
        for t in &p.params {
            if t.is_ptr() {
                let a = arrays[ai].addr();
                args.push(a);
                companions.push(a);
                companions.push(arrays[ai].byte_len());
                ai += 1;
            } else {
                args.push(input[si]);
                si += 1;
            }
        }
        args.extend(companions);
        let result = (c.exec)(&args);
        for (i, a) in arrays.iter().enumerate() {
            a.check_guards()
                .map_err(|e| format!("array {i} ({:?}): {e}", a.spec))?;
        }
        let result = result.map(|bits| match p.ret() {
            Some(Type::Scalar(s)) => nan_canonical(s, norm(Type::Scalar(s), bits)),
            _ => bits,
        });
        Ok(Outcome {
            result,
            arrays: arrays.iter().map(Guarded::contents).collect(),
        })
    }

    /// Verifies, optimises and bounds-checks `p`, runs it on every target and compares.
    /// Returns the reference's outcomes.
    pub fn check(&self, p: &Program) -> Result<Vec<Outcome>, Mismatch> {
        let fail = |what: String| Mismatch {
            seed: p.seed,
            what,
            module: p.module.to_string(),
        };
        let verified = nacre::ir::verify(p.module.clone())
            .map_err(|e| fail(format!("generated module does not verify: {e}")))?;
        let unoptimized = insert_bounds_checks(verified.clone(), BoundsOptions::default());
        // The unoptimised reference computes half types directly (the interpreter follows
        // `nacre_ir::semantics`); the optimised module has them widened, as the engine does.
        let widened = nacre::ir::transform::widen_half(verified);
        let optimized = nacre::ir::passes::optimize(widened, &PassOptions::default()).0;
        let optimized = insert_bounds_checks(optimized, BoundsOptions::default());
        let mut reference: Option<Vec<Outcome>> = None;
        for (ti, t) in self.targets.iter().enumerate() {
            let module = if t.unoptimized {
                &unoptimized
            } else {
                &optimized
            };
            let t0 = Instant::now();
            let c = self.compile(t, module);
            let t1 = Instant::now();
            t.compile_us
                .fetch_add((t1 - t0).as_micros() as u64, Ordering::Relaxed);
            let _run_time = Elapsed(&t.run_us, t1);
            let c = c.map_err(|e| {
                fail(format!(
                    "{}: {e}\n--- checked module ---\n{}",
                    t.name,
                    module.module()
                ))
            })?;
            let mut outs = Vec::new();
            for (ii, input) in p.inputs.iter().enumerate() {
                let pattern = p.seed ^ (ti as u64 + 1).wrapping_mul(0x9e37_79b9);
                let o = self.run(&c, p, input, pattern).map_err(|e| {
                    fail(format!(
                        "{} on input {ii} {}: memory outside the arrays changed: {e}\n--- checked module ---\n{}",
                        t.name,
                        show_input(input),
                        module.module()
                    ))
                })?;
                if ti == 0 {
                    // The reference again, with other guards: a difference means it read
                    // memory outside its arrays.
                    let again = self
                        .run(&c, p, input, !pattern)
                        .map_err(|e| fail(format!("{} (second run): {e}", t.name)))?;
                    if !self.same(p, &o, &again) {
                        return Err(fail(format!(
                            "{} on input {ii} {}: two runs differ (reads outside the arrays?): {} vs {}\n--- checked module ---\n{}",
                            t.name,
                            show_input(input),
                            show(p, &o),
                            show(p, &again),
                            module.module()
                        )));
                    }
                } else if let Some(r) = &reference {
                    let agree = if t.unoptimized {
                        self.same_unoptimized(p, &r[ii], &o)
                    } else {
                        self.same(p, &r[ii], &o)
                    };
                    if !agree {
                        return Err(fail(format!(
                            "{} disagrees with {} on input {ii} {}:\n  {}: {}\n  {}: {}\n--- optimized, checked module ---\n{}",
                            t.name,
                            self.targets[0].name,
                            show_input(input),
                            self.targets[0].name,
                            show(p, &r[ii]),
                            t.name,
                            show(p, &o),
                            module.module()
                        )));
                    }
                }
                outs.push(o);
            }
            if ti == 0 {
                reference = Some(outs);
            }
        }
        Ok(reference.unwrap_or_default())
    }

    /// The optimised reference `opt` against the unoptimised run `unopt`. The passes run
    /// before bounds checking and remove unused loads, so an out-of-bounds trap of the
    /// unoptimised module may be gone; anything else must agree.
    fn same_unoptimized(&self, p: &Program, opt: &Outcome, unopt: &Outcome) -> bool {
        match unopt.result {
            Err(Trap::OutOfBounds { .. }) => true,
            _ => self.same(p, opt, unopt),
        }
    }

    fn same(&self, p: &Program, a: &Outcome, b: &Outcome) -> bool {
        if a.result != b.result {
            return false;
        }
        // After a stack overflow memory depends on how deep each backend got.
        let memory = a.result.is_ok()
            || (self.compare_memory_on_trap
                && !p.has_kernels
                && a.result != Err(Trap::StackOverflow));
        !memory || a.arrays == b.arrays
    }
}

/// Adds the time since its start to a counter when dropped.
struct Elapsed<'a>(&'a AtomicU64, Instant);

impl Drop for Elapsed<'_> {
    fn drop(&mut self) {
        self.0
            .fetch_add(self.1.elapsed().as_micros() as u64, Ordering::Relaxed);
    }
}

impl Runner {
    /// Per target: its name and the seconds spent compiling and running so far.
    pub fn timings(&self) -> Vec<(String, f64, f64)> {
        self.targets
            .iter()
            .map(|t| {
                (
                    t.name.clone(),
                    t.compile_us.load(Ordering::Relaxed) as f64 / 1e6,
                    t.run_us.load(Ordering::Relaxed) as f64 / 1e6,
                )
            })
            .collect()
    }
}

impl Default for Runner {
    fn default() -> Self {
        Runner::new()
    }
}

fn show_input(input: &[u64]) -> String {
    let mut s = String::from("[");
    for (i, x) in input.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{x:#x}");
    }
    s.push(']');
    s
}

fn show(p: &Program, o: &Outcome) -> String {
    let mut s = match o.result {
        Ok(bits) => format!("Ok({bits:#x})"),
        Err(t) => format!("Err({t:?})"),
    };
    for (i, a) in o.arrays.iter().enumerate() {
        let _ = write!(s, " a{i}:{}=[", p.arrays[i].elem);
        for (j, x) in a.iter().enumerate() {
            if j > 0 {
                s.push(',');
            }
            let _ = write!(s, "{x:#x}");
        }
        s.push(']');
    }
    s
}

/// Statistics of a run of many cases.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Programs run.
    pub cases: u64,
    /// Runs (programs × inputs) that returned a value.
    pub ok: u64,
    /// Runs that trapped, by trap kind.
    pub traps: std::collections::BTreeMap<String, u64>,
}

impl Stats {
    /// Adds the reference outcomes of one program.
    pub fn add(&mut self, outs: &[Outcome]) {
        self.cases += 1;
        for o in outs {
            match o.result {
                Ok(_) => self.ok += 1,
                Err(t) => {
                    let name = match t {
                        Trap::OutOfBounds { .. } => "OutOfBounds".to_string(),
                        t => format!("{t:?}"),
                    };
                    *self.traps.entry(name).or_default() += 1;
                }
            }
        }
    }

    /// Merges another run's statistics.
    pub fn merge(&mut self, o: &Stats) {
        self.cases += o.cases;
        self.ok += o.ok;
        for (k, v) in &o.traps {
            *self.traps.entry(k.clone()).or_default() += v;
        }
    }
}

/// What a module contains, by operation and type (`binary.add.i32`, `cast.f32>u8`,
/// `load.f64`, `launch`, `call.recursive`, ...): the generator's coverage.
pub fn census(module: &Module) -> std::collections::BTreeMap<String, usize> {
    use nacre::ir::InstKind as K;
    let mut m = std::collections::BTreeMap::new();
    let mut add = |k: String| *m.entry(k).or_insert(0) += 1;
    for (id, f) in module.functions.iter() {
        add(format!("function.{:?}", f.kind).to_lowercase());
        let ret_blocks = f
            .layout
            .iter()
            .filter(|&&b| {
                f.terminator(b)
                    .is_some_and(|t| matches!(f.insts[t].kind, K::Return(_)))
            })
            .count();
        if ret_blocks > 1 {
            add("return.early".into());
        }
        for &b in &f.layout {
            if !f.blocks[b].params.is_empty() {
                add("block_params".into());
            }
            for &i in &f.blocks[b].insts {
                let data = &f.insts[i];
                let ty = |v: Value| f.values[v].ty.to_string();
                let rty = data.result.map(|r| f.values[r].ty.to_string());
                let k = match &data.kind {
                    K::Const(_) => "const".to_string(),
                    K::Unary(op, a) => format!("unary.{}.{}", op.name(), ty(*a)),
                    K::Binary(op, a, _) => format!("binary.{}.{}", op.name(), ty(*a)),
                    K::Fma(a, ..) => format!("fma.{}", ty(*a)),
                    K::Math(m, a) => format!("math.{}.{}", m.name(), ty(*a)),
                    K::Math2(m, a, _) => format!("math.{}.{}", m.name(), ty(*a)),
                    K::Cmp(op, a, _) => {
                        let t = f.values[*a].ty;
                        let t = if t.is_ptr() {
                            "ptr".into()
                        } else {
                            t.to_string()
                        };
                        format!("cmp.{}.{t}", op.name())
                    }
                    K::Cast(a) => {
                        let from = f.values[*a].ty;
                        let to = f.values[data.result.expect("cast result")].ty;
                        if from.is_ptr() || to.is_ptr() {
                            "cast.ptr-int".to_string()
                        } else {
                            format!("cast.{from}>{to}")
                        }
                    }
                    K::Select(_, a, _) => {
                        if f.values[*a].ty.is_ptr() {
                            "select.ptr".to_string()
                        } else {
                            "select".to_string()
                        }
                    }
                    K::ElemPtr(..) => "elem_ptr".to_string(),
                    K::Load(_) => format!("load.{}", rty.unwrap_or_default()),
                    K::Store(_, v) => format!("store.{}", ty(*v)),
                    K::BoundsCheck { .. } => "bounds_check".to_string(),
                    K::AtomicRmw { op, value, .. } => {
                        format!("atomic.{}.{}", op.name(), ty(*value))
                    }
                    K::AtomicCas { new, .. } => format!("atomic_cas.{}", ty(*new)),
                    K::Fence { .. } => "fence".to_string(),
                    K::Call(callee, _) => {
                        if *callee == id {
                            "call.recursive".to_string()
                        } else if module.functions[*callee]
                            .live_insts()
                            .any(|d| matches!(d.kind, K::Call(c, _) if c == id))
                        {
                            "call.mutual".to_string()
                        } else if f.kind == FuncKind::Kernel {
                            "call.from_kernel".to_string()
                        } else if module.functions[*callee]
                            .signature
                            .ret
                            .is_some_and(|t| t.is_ptr())
                        {
                            "call.returns_ptr".to_string()
                        } else {
                            "call".to_string()
                        }
                    }
                    K::CallExtern(..) => "call_extern".to_string(),
                    K::GpuIndex(g, d) => format!("gpu.{}.{}", g.name(), d.name()),
                    K::Barrier => "barrier".to_string(),
                    K::SharedAlloc { elem, .. } => format!("shared_alloc.{elem}"),
                    K::LocalArray { elem, .. } => format!("local_array.{elem}"),
                    K::DynamicShared { elem } => format!("dynamic_shared.{elem}"),
                    K::DynamicSharedBytes => "dynamic_shared_bytes".to_string(),
                    K::LaneId => "lane_id".to_string(),
                    K::Shuffle(op, v, _) => format!("{}.{}", op.name(), ty(*v)),
                    K::Warp(op, v) => format!("{}.{}", op.name(), ty(*v)),
                    K::BlockVote(op, _) => op.name().to_string(),
                    K::Launch(l) if l.shared_bytes.is_some() => "launch.shared".to_string(),
                    K::Launch(_) => "launch".to_string(),
                    K::Jump(_) => "jump".to_string(),
                    K::Branch { .. } => "branch".to_string(),
                    K::Return(_) => "return".to_string(),
                };
                add(k);
            }
        }
    }
    m
}
