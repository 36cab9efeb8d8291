//! Traced code of a pipeline: one function `(frame, start, end) -> row` that runs rows
//! `start..end` of a batch through the filter, the keys and the aggregates, fused: every
//! expression is computed in registers, the filter becomes a mask (never a branch), and
//! nothing calls back into Rust.
//!
//! The frame is an array of `u64`s the host fills (see [`FrameLayout`]): the address of each
//! scanned column's values, the accumulator banks, a status word, with group keys the group
//! table, and the address of a validity byte per row for each column the program reads as
//! nullable. Without keys, the accumulators are carried in registers through the loop and
//! stored at its end. With keys, each row finds its group in an open-addressing table
//! (linear probing over the keys' 64-bit words; [`hash_words`] is the hash) and updates
//! that group's accumulators in memory; a row the filter rejects updates a spare slot past
//! the table instead. The function returns the row it stopped at: `end`, or earlier when the
//! table is half full, so that the host grows it and calls again. A program with a key
//! domain ([`Program::with_domain`]) compares each row's keys with the domain's values and
//! takes its slot from a lookup table instead of hashing and probing; it stops at the first
//! row whose key values are not there.
//!
//! A narrow program ([`Program::narrow`]) holds decimals in 64 bits: each column value is
//! checked to fit as it is read and each step as it is computed, and a value that does not
//! fit raises [`STATUS_WIDE`] (the host then runs the partition, or on a device the table,
//! again with the 128-bit program).

pub mod join;
pub mod kernel;

use crate::expr::{ArithOp, CmpOp, Expr, Lit, I128_DIGITS};
use crate::pipeline::{bank, Acc, AccKind, Join, Program, MAX_ACCS};
use crate::types::{ColType, Repr};
pub use join::JoinWords;
use nacre::{select, Ptr, Val};
use std::collections::HashMap;
use std::sync::Arc;

/// The multiplier of [`hash_words`].
const HASH_MUL: u64 = 0x9E37_79B9_7F4A_7C15;

/// The hash of a group key's words, as traced code computes it: the host uses it to move
/// groups when the table grows.
pub fn hash_words(words: &[u64]) -> u64 {
    let h = words
        .iter()
        .fold(0u64, |h, &w| (h ^ w).wrapping_mul(HASH_MUL));
    h ^ (h >> 32)
}

/// Where things are in the frame of a program with `columns` scanned columns.
#[derive(Copy, Clone, Debug)]
pub struct FrameLayout {
    /// Scanned columns.
    pub columns: usize,
}

impl FrameLayout {
    /// The word holding the address of accumulator bank `b` (`i64`, `i128`, `f64`): without
    /// keys, `MAX_ACCS` values; with keys, the bank's accumulators of each of `capacity + 1`
    /// slots (the last for rows the filter rejects), slot after slot.
    pub fn bank(self, b: usize) -> usize {
        self.columns + b
    }
    /// The word holding the address of the status word (nonzero after an overflow).
    pub fn status(self) -> usize {
        self.columns + 3
    }
    /// The word holding the address of the group keys (`key_words` per slot).
    pub fn keys(self) -> usize {
        self.columns + 4
    }
    /// The word holding the address of the slots' used flags (a `u64` each).
    pub fn used(self) -> usize {
        self.columns + 5
    }
    /// The word holding the address of the number of groups.
    pub fn count(self) -> usize {
        self.columns + 6
    }
    /// The word holding the table's capacity (a power of two).
    pub fn capacity(self) -> usize {
        self.columns + 7
    }
    /// The word holding the address of scanned column `k`'s validity, a byte per row (1:
    /// not null), where the program reads it as nullable ([`Program::nullable`]).
    pub fn validity(self, k: usize) -> usize {
        self.columns + 8 + k
    }
    /// The word holding the address of the lookup table of a program with a key domain
    /// ([`Program::with_domain`]): the slot of each combination of key values.
    pub fn lut(self) -> usize {
        2 * self.columns + 8
    }
    /// The words holding a join's lookup table (the module [`join`]).
    pub fn join(self) -> JoinWords {
        let at = 2 * self.columns + 9;
        JoinWords {
            keys: at,
            rows: at + 1,
            size: at + 2,
            base: at + 3,
        }
    }
    /// Words in all.
    pub fn words(self) -> usize {
        2 * self.columns + 13
    }
}

/// A traced value of one of the representations ([`Repr`]).
#[derive(Copy, Clone)]
enum V {
    B(Val<bool>),
    I32(Val<i32>),
    I64(Val<i64>),
    I128(Val<i128>),
    F64(Val<f64>),
    View(Val<u64>, Val<u64>),
}

/// A scanned column's values.
#[derive(Copy, Clone)]
enum Col {
    I32(Ptr<i32>),
    I64(Ptr<i64>),
    I128(Ptr<i128>),
    /// A decimal column read by a narrow program ([`Program::narrow`]): each value's two
    /// 64-bit words, low then high.
    Narrow(Ptr<i64>),
    F64(Ptr<f64>),
    View(Ptr<u64>),
}

/// What rows read: the columns, their validity where they can be null, and the join's
/// lookup table.
struct Sources {
    cols: Vec<Col>,
    /// Each column's validity, where it can be null.
    validity: Vec<Option<Ptr<u8>>>,
    join: Option<join::Table>,
}

impl Sources {
    /// What the host stored in `frame` for program `p`.
    fn load(p: &Program, frame: Ptr<u64>) -> Sources {
        let l = FrameLayout {
            columns: p.columns.len(),
        };
        Sources {
            cols: columns(p, frame),
            validity: validity(p, frame),
            join: p
                .join
                .as_ref()
                .map(|j| join::Table::load(frame, l.join(), j.lookup)),
        }
    }

    /// The columns and join table of a kernel's frame (`join`: where it holds the table):
    /// kernels run programs without nulls (`device::device_plan` and `device::table_plan`
    /// leave those to the CPU).
    fn kernel(p: &Program, frame: Ptr<u64>, join: JoinWords) -> Sources {
        Sources {
            cols: columns(p, frame),
            validity: Vec::new(),
            join: p
                .join
                .as_ref()
                .map(|j| join::Table::load(frame, join, j.lookup)),
        }
    }
}

/// Evaluates expressions for one row, each shared node once, with SQL's three-valued logic
/// where columns can be null.
struct Row<'a> {
    src: &'a Sources,
    i: Val<u64>,
    /// The first build column and the build row the join matched (once looked up).
    build: Option<(usize, Val<u64>)>,
    /// Whether the row takes the branch being computed (of a `CASE`, or the join's filter
    /// after its lookup): what the others compute must not count. `None`: every row.
    guard: Option<Val<bool>>,
    memo: HashMap<*const Expr, V>,
    valid_memo: HashMap<*const Expr, Option<Val<bool>>>,
    /// Whether the operands of the node being computed are all non-null (`None`: they
    /// cannot be null): what garbage in a null slot computes must not count.
    mask: Option<Val<bool>>,
    /// An arithmetic overflow (an error, as in DataFusion).
    overflow: Val<bool>,
    /// Data the program does not compute as DataFusion would: a NaN or negative zero
    /// compared (DataFusion runs the partition).
    invalid: Val<bool>,
    /// Whether decimals are computed in 64 bits ([`Program::narrow`]).
    narrow: bool,
    /// Nonzero after a decimal value or result outside `i64` in the narrow program (the
    /// partition runs again with the wide one): the checks' bits are OR-ed in, one
    /// instruction each.
    wide: Val<u64>,
}

/// The flags a pipeline carries from row to row (see [`Row`]).
#[derive(Copy, Clone, nacre::Carry)]
pub(crate) struct Flags {
    /// An arithmetic overflow.
    pub overflow: Val<bool>,
    /// Data the program does not compute with.
    pub invalid: Val<bool>,
    /// Nonzero after a decimal outside 64 bits in a narrow program.
    pub wide: Val<u64>,
}

impl Flags {
    /// None raised.
    pub fn clear() -> Flags {
        Flags {
            overflow: Val::new(false),
            invalid: Val::new(false),
            wide: Val::new(0u64),
        }
    }

    /// The status word's bits of the flags raised.
    pub fn bits(self) -> Val<u64> {
        select(self.overflow, STATUS_OVERFLOW, 0u64)
            | select(self.invalid, STATUS_UNSUPPORTED, 0u64)
            | select(self.wide.ne(0u64), STATUS_WIDE, 0u64)
    }
}

fn load(frame: Ptr<u64>, word: usize) -> Val<u64> {
    frame.load(word as u64)
}

/// A pointer stored in the frame.
fn ptr_at<T: nacre::Element>(frame: Ptr<u64>, word: usize) -> Ptr<T> {
    // SAFETY: the host stores in this word the address of memory of `T`s that the pipeline's
    // accesses stay within (`crate::run`), and compiles pipelines unchecked.
    unsafe { Ptr::from_addr(load(frame, word)) }
}

/// The validity of each scanned column the program reads as nullable.
fn validity(p: &Program, frame: Ptr<u64>) -> Vec<Option<Ptr<u8>>> {
    let l = FrameLayout {
        columns: p.columns.len(),
    };
    (0..p.columns.len())
        .map(|k| p.nullable[k].then(|| ptr_at::<u8>(frame, l.validity(k))))
        .collect()
}

fn columns(p: &Program, frame: Ptr<u64>) -> Vec<Col> {
    p.columns
        .iter()
        .enumerate()
        .map(|(k, ty)| match ty.repr() {
            Repr::I32 => Col::I32(ptr_at(frame, k)),
            Repr::I64 => Col::I64(ptr_at(frame, k)),
            Repr::I128 if p.narrow => Col::Narrow(ptr_at(frame, k)),
            Repr::I128 => Col::I128(ptr_at(frame, k)),
            Repr::F64 => Col::F64(ptr_at(frame, k)),
            Repr::View => Col::View(ptr_at(frame, k)),
            // Scanned columns have the types `pipeline::scan` reads, never booleans.
            Repr::Bool => unreachable!("a scanned boolean column"),
        })
        .collect()
}

fn pow10(k: i8) -> i128 {
    10i128.pow(u32::from(k.unsigned_abs()))
}

impl<'a> Row<'a> {
    /// Row `i` of columns `cols` (with `validity`) in program `p`, the flags carried so far.
    fn new(p: &Program, src: &'a Sources, i: Val<u64>, flags: Flags) -> Row<'a> {
        Row {
            src,
            i,
            build: None,
            guard: None,
            memo: HashMap::new(),
            valid_memo: HashMap::new(),
            mask: None,
            overflow: flags.overflow,
            invalid: flags.invalid,
            narrow: p.narrow,
            wide: flags.wide,
        }
    }

    /// The flags after this row.
    fn flags(&self) -> Flags {
        Flags {
            overflow: self.overflow,
            invalid: self.invalid,
            wide: self.wide,
        }
    }

    fn eval(&mut self, e: &Arc<Expr>) -> V {
        let key = Arc::as_ptr(e);
        if let Some(v) = self.memo.get(&key) {
            return *v;
        }
        let operands = match **e {
            Expr::And(..) | Expr::Or(..) => None,
            _ => self.valid(e),
        };
        let outer = std::mem::replace(&mut self.mask, operands);
        let v = self.compute(e);
        self.mask = outer;
        self.memo.insert(key, v);
        v
    }

    /// Whether `e` is not null in this row (`None`: it never is), by SQL's three-valued
    /// logic: `AND` is false where either side is false, `OR` true where either is true,
    /// `IS NULL` never null, every other operator null where an operand is.
    fn valid(&mut self, e: &Arc<Expr>) -> Option<Val<bool>> {
        let key = Arc::as_ptr(e);
        if let Some(v) = self.valid_memo.get(&key) {
            return *v;
        }
        let v = self.compute_valid(e);
        self.valid_memo.insert(key, v);
        v
    }

    fn compute_valid(&mut self, e: &Expr) -> Option<Val<bool>> {
        let both = |a: Option<Val<bool>>, b: Option<Val<bool>>| match (a, b) {
            (Some(a), Some(b)) => Some(a & b),
            (a, b) => a.or(b),
        };
        match e {
            Expr::Column { index, .. } => {
                let bytes = self.src.validity.get(*index).copied().flatten();
                let at = self.row_of(*index);
                bytes.map(|v| v.load(at).ne(0u8))
            }
            Expr::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                let (va, vb) = (
                    self.guarded_by(cond, true, |r| r.valid(then)),
                    self.guarded_by(cond, false, |r| r.valid(otherwise)),
                );
                if va.is_none() && vb.is_none() {
                    return None;
                }
                let c = self.holds(cond);
                let (va, vb) = (va.unwrap_or(Val::new(true)), vb.unwrap_or(Val::new(true)));
                Some((c & va) | (!c & vb))
            }
            Expr::Literal { .. } | Expr::IsNull { .. } => None,
            Expr::Arith { left, right, .. } | Expr::Compare { left, right, .. } => {
                let (l, r) = (self.valid(left), self.valid(right));
                both(l, r)
            }
            Expr::Not(x) | Expr::Cast { expr: x, .. } | Expr::LikePrefix { expr: x, .. } => {
                self.valid(x)
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                let (va, vb) = (self.valid(a), self.valid(b));
                if va.is_none() && vb.is_none() {
                    return None;
                }
                let (x, y) = (self.bool(a), self.bool(b));
                // The side that decides: false for AND, true for OR.
                let (x, y) = if matches!(e, Expr::And(..)) {
                    (!x, !y)
                } else {
                    (x, y)
                };
                let (va, vb) = (va.unwrap_or(Val::new(true)), vb.unwrap_or(Val::new(true)));
                Some((va & vb) | (va & x) | (vb & y))
            }
        }
    }

    /// `x` where the node being computed counts: its operands are not null and the row
    /// takes its branch ([`Row::guard`]).
    fn counted(&self, x: Val<bool>) -> Val<bool> {
        let x = self.mask.map_or(x, |m| x & m);
        self.guard.map_or(x, |g| x & g)
    }

    /// Notes an overflow of the node being computed (where it counts).
    fn note_overflow(&mut self, o: Val<bool>) {
        self.overflow |= self.counted(o);
    }

    /// Notes data the program does not compute with (where it counts).
    fn note_invalid(&mut self, x: Val<bool>) {
        self.invalid |= self.counted(x);
    }

    fn note_wide(&mut self, x: Val<bool>) {
        self.note_wide_bits(x.cast::<u64>());
    }

    /// Notes a check whose bits are nonzero where a value does not fit 64 bits.
    fn note_wide_bits(&mut self, bits: Val<u64>) {
        let counted = match (self.mask, self.guard) {
            (None, None) => bits,
            _ => select(self.counted(Val::new(true)), bits, 0u64),
        };
        self.wide |= counted;
    }

    /// Whether `cond` is true (not NULL).
    fn holds(&mut self, cond: &Arc<Expr>) -> Val<bool> {
        let c = self.bool(cond);
        self.valid(cond).map_or(c, |v| c & v)
    }

    /// `f` computed for the rows where `cond` holds (`when`) or does not (`!when`), as a
    /// branch: its overflows and checks count only there, and nodes it shares with the rest
    /// are computed again under the guard (not taken from, nor left in, the memo).
    fn guarded_by<T>(&mut self, cond: &Arc<Expr>, when: bool, f: impl FnOnce(&mut Self) -> T) -> T {
        let c = self.holds(cond);
        self.guarded(if when { c } else { !c }, f)
    }

    /// `f` computed where `g` holds (see [`Row::guarded_by`]).
    fn guarded<T>(&mut self, g: Val<bool>, f: impl FnOnce(&mut Self) -> T) -> T {
        let memo = std::mem::take(&mut self.memo);
        let valid_memo = std::mem::take(&mut self.valid_memo);
        let (mask, outer) = (self.mask.take(), self.guard);
        self.guard = Some(outer.map_or(g, |o| o & g));
        let v = f(self);
        (self.memo, self.valid_memo) = (memo, valid_memo);
        (self.mask, self.guard) = (mask, outer);
        v
    }

    /// Looks the row up in the join (`t`, its table) where it passed the filters below it
    /// (`pass`), and whether it passes the join and the filters above it: the build columns
    /// are then read at the matching build row.
    fn join(&mut self, j: &Join, t: &join::Table, pass: Val<bool>) -> Val<bool> {
        let look = self.valid(&j.key).map_or(pass, |v| pass & v);
        // The key is computed only where the row passed (a branch: guarded, nothing it
        // computes is left for code after it).
        let found = t.find(look, || self.guarded(look, |r| to_i64(r.eval(&j.key))));
        self.build = Some((j.first_build, join::build_row(found)));
        let matched = look & found.ne(0u64);
        match &j.filter {
            None => matched,
            Some(f) => matched & self.guarded(matched, |r| r.holds(f)),
        }
    }

    /// The row column `index` is read at: the scanned row, or for a build column the build
    /// row the join matched.
    fn row_of(&self, index: usize) -> Val<u64> {
        match self.build {
            Some((first, row)) if index >= first => row,
            _ => self.i,
        }
    }

    fn compute(&mut self, e: &Expr) -> V {
        match e {
            Expr::Column { index, .. } => self.column(*index),
            Expr::IsNull { expr, negated } => {
                let valid = self.valid(expr).unwrap_or(Val::new(true));
                V::B(if *negated { valid } else { !valid })
            }
            Expr::Literal { value, ty } => match literal(value, *ty) {
                V::I128(_) if self.narrow => V::I64(Val::new(decimal_constant(value, *ty) as i64)),
                v => v,
            },
            Expr::Arith {
                op,
                left,
                right,
                ty,
            } => {
                let (l, r) = (self.eval(left), self.eval(right));
                self.arith(*op, (l, left), (r, right), *ty)
            }
            Expr::Compare { op, left, right } => {
                let (l, r) = (self.eval(left), self.eval(right));
                V::B(self.compare(*op, (l, left), (r, right)))
            }
            Expr::And(a, b) => V::B(self.bool(a) & self.bool(b)),
            Expr::Or(a, b) => V::B(self.bool(a) | self.bool(b)),
            Expr::Not(a) => V::B(!self.bool(a)),
            Expr::Cast { expr, ty } => {
                let v = self.eval(expr);
                self.cast(v, expr, *ty)
            }
            Expr::LikePrefix {
                expr,
                prefix,
                negated,
            } => {
                let V::View(w0, w1) = self.eval(expr) else {
                    unreachable!("LIKE of a string")
                };
                let long_enough = (w0 & 0xffff_ffffu64).ge(prefix.len() as u64);
                // The prefix's bytes in the view's words: 0-3 after the length, 4-11 in the
                // second word (of prefix views, for strings of any length).
                let mut want = [0u8; 12];
                want[..prefix.len()].copy_from_slice(prefix);
                let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
                let first = word(&[&want[..4], &[0; 4]].concat());
                let mask_of = |n: usize| if n == 0 { 0 } else { u64::MAX >> (64 - 8 * n) };
                let head = ((w0 >> 32u64) & mask_of(prefix.len().min(4))).eq(first);
                let hit = if prefix.len() > 4 {
                    let rest = mask_of(prefix.len() - 4);
                    long_enough & head & (w1 & rest).eq(word(&want[4..12]))
                } else {
                    long_enough & head
                };
                V::B(if *negated { !hit } else { hit })
            }
            Expr::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                let a = self.guarded_by(cond, true, |r| r.eval(then));
                let b = self.guarded_by(cond, false, |r| r.eval(otherwise));
                let c = self.holds(cond);
                choose(c, a, b)
            }
        }
    }

    fn column(&mut self, index: usize) -> V {
        let i = self.row_of(index);
        match self.src.cols[index] {
            Col::I32(p) => V::I32(p.load(i)),
            Col::I64(p) => V::I64(p.load(i)),
            Col::Narrow(p) => {
                let (low, high) = (p.load(i * 2u64), p.load(i * 2u64 + 1u64));
                self.note_wide_bits((high ^ (low >> 63i64)).cast::<u64>());
                V::I64(low)
            }
            Col::I128(p) => V::I128(p.load(i)),
            Col::F64(p) => V::F64(p.load(i)),
            Col::View(p) => V::View(p.load(i * 2u64), p.load(i * 2u64 + 1u64)),
        }
    }

    fn bool(&mut self, e: &Arc<Expr>) -> Val<bool> {
        match self.eval(e) {
            V::B(b) => b,
            _ => unreachable!("a boolean operand"),
        }
    }

    /// `v` (of type `from`, at most `digits` digits) as a 128-bit integer at `scale`
    /// (integers have scale 0), noting an overflow where the digits allow one.
    fn wide(&mut self, v: V, from: ColType, scale: i8, digits: u32) -> Val<i128> {
        let x = match v {
            V::I32(x) => x.cast::<i128>(),
            V::I64(x) => x.cast::<i128>(),
            V::I128(x) => x,
            _ => unreachable!("a number"),
        };
        let up = scale - from.scale();
        if up <= 0 {
            return x;
        }
        let c = pow10(up);
        if digits + up as u32 > I128_DIGITS {
            let o = x.gt(i128::MAX / c) | x.lt(i128::MIN / c);
            self.note_overflow(o);
        }
        x.wrapping_mul(c)
    }

    /// `v` (of type `from`) as a 64-bit integer at `scale`, noting where it does not fit.
    fn narrow_scaled(&mut self, v: V, from: ColType, scale: i8) -> Val<i64> {
        let x = to_i64(v);
        let up = scale - from.scale();
        if up <= 0 {
            return x;
        }
        match 10i64.checked_pow(up as u32) {
            Some(c) => {
                let (y, o) = overflowing_mul_i64(x, Val::new(c));
                self.note_wide_bits(o);
                y
            }
            None => {
                self.note_wide(x.ne(0i64));
                Val::new(0i64)
            }
        }
    }

    /// Decimal arithmetic of a narrow program: as [`Row::arith`]'s, in 64 bits.
    fn narrow_arith(&mut self, op: ArithOp, l: (V, &Expr), r: (V, &Expr), ty: ColType) -> V {
        let s = if op == ArithOp::Mul { 0 } else { ty.scale() };
        let a = self.narrow_scaled(l.0, l.1.ty(), s);
        let b = self.narrow_scaled(r.0, r.1.ty(), s);
        let (y, o) = match (op, constant(l.1, s), constant(r.1, s)) {
            // With a constant, the other operand's range where the result fits: one or two
            // comparisons.
            (ArithOp::Add, _, Some(c)) => (a.wrapping_add(b), outside(a, c.addend_range())),
            (ArithOp::Add, Some(c), _) => (a.wrapping_add(b), outside(b, c.addend_range())),
            (ArithOp::Sub, _, Some(c)) => (a.wrapping_sub(b), outside(a, c.minuend_range())),
            (ArithOp::Sub, Some(c), _) => (a.wrapping_sub(b), outside(b, c.subtrahend_range())),
            (ArithOp::Add, ..) => a.overflowing_add(b),
            (ArithOp::Sub, ..) => a.overflowing_sub(b),
            _ => {
                let (y, bits) = overflowing_mul_i64(a, b);
                self.note_wide_bits(bits);
                return V::I64(y);
            }
        };
        self.note_wide(o);
        V::I64(y)
    }

    fn arith(&mut self, op: ArithOp, l: (V, &Expr), r: (V, &Expr), ty: ColType) -> V {
        match ty.repr() {
            Repr::I128 if self.narrow => self.narrow_arith(op, l, r, ty),
            Repr::I128 => {
                let s = if op == ArithOp::Mul { 0 } else { ty.scale() };
                let (dl, dr) = (l.1.digits(), r.1.digits());
                let a = self.wide(l.0, l.1.ty(), s, dl);
                let b = self.wide(r.0, r.1.ty(), s, dr);
                let up = |d: u32, e: &Expr| d + (s - e.ty().scale()).max(0) as u32;
                let exact = match op {
                    ArithOp::Mul => dl + dr <= I128_DIGITS,
                    _ => up(dl, l.1).max(up(dr, r.1)) < I128_DIGITS,
                };
                let (y, o) = match op {
                    ArithOp::Add if exact => (a.wrapping_add(b), None),
                    ArithOp::Sub if exact => (a.wrapping_sub(b), None),
                    ArithOp::Mul if exact => (a.wrapping_mul(b), None),
                    ArithOp::Add => {
                        let (y, o) = a.overflowing_add(b);
                        (y, Some(o))
                    }
                    ArithOp::Sub => {
                        let (y, o) = a.overflowing_sub(b);
                        (y, Some(o))
                    }
                    _ => (a.wrapping_mul(b), Some(mul_overflows(a, b))),
                };
                if let Some(o) = o {
                    self.note_overflow(o);
                }
                V::I128(y)
            }
            Repr::F64 => {
                let (a, b) = (to_f64(l.0, l.1.ty()), to_f64(r.0, r.1.ty()));
                V::F64(match op {
                    ArithOp::Add => a + b,
                    ArithOp::Sub => a - b,
                    ArithOp::Mul => a * b,
                    ArithOp::Div => a / b,
                })
            }
            Repr::I32 => {
                let (V::I32(a), V::I32(b)) = (l.0, r.0) else {
                    unreachable!("INT operands")
                };
                V::I32(int_op(op, a, b))
            }
            _ => V::I64(int_op(op, to_i64(l.0), to_i64(r.0))),
        }
    }

    fn compare(&mut self, op: CmpOp, l: (V, &Expr), r: (V, &Expr)) -> Val<bool> {
        match (l.0, r.0) {
            (V::F64(a), V::F64(b)) => {
                // Arrow orders floats totally (NaN greatest, -0 below +0); IEEE agrees elsewhere.
                let odd = |x: Val<f64>| x.is_nan() | (x.eq(0.0) & x.is_sign_negative());
                self.note_invalid(odd(a) | odd(b));
                cmp(op, a, b)
            }
            (V::I32(a), V::I32(b)) => cmp(op, a, b),
            (V::View(a0, a1), V::View(b0, b1)) => {
                let eq = a0.eq(b0) & a1.eq(b1);
                if op == CmpOp::Eq {
                    eq
                } else {
                    !eq
                }
            }
            (V::B(a), V::B(b)) => cmp(op, a, b),
            (a, b) if self.narrow && is_decimal(l.1, r.1) => {
                let s = l.1.ty().scale().max(r.1.ty().scale());
                let x = self.narrow_scaled(a, l.1.ty(), s);
                let y = self.narrow_scaled(b, r.1.ty(), s);
                cmp(op, x, y)
            }
            (a, b) if is_decimal(l.1, r.1) => {
                let s = l.1.ty().scale().max(r.1.ty().scale());
                let x = self.wide(a, l.1.ty(), s, l.1.digits());
                let y = self.wide(b, r.1.ty(), s, r.1.digits());
                cmp(op, x, y)
            }
            (a, b) => cmp(op, to_i64(a), to_i64(b)),
        }
    }

    fn cast(&mut self, v: V, e: &Expr, to: ColType) -> V {
        let from = e.ty();
        if from == to {
            return v;
        }
        let y = self.convert(v, e, to);
        if let ColType::Decimal { precision, .. } = to {
            // Arrow's cast fails where the value does not fit the target's precision.
            let shift = i32::from(to.scale()) - i32::from(from.scale());
            if e.digits() as i32 + shift.max(0) + 1 > i32::from(precision) {
                self.note_overflow(!within_digits(to_i128(y), u32::from(precision)));
            }
        }
        y
    }

    /// A cast to a decimal in a narrow program: as [`Row::convert`]'s, in 64 bits.
    fn narrow_convert(&mut self, v: V, from: ColType, to: ColType) -> V {
        if to.scale() >= from.scale() {
            return V::I64(self.narrow_scaled(v, from, to.scale()));
        }
        let x = to_i64(v);
        let drop = (from.scale() - to.scale()) as u32;
        let step = select(x.lt(0i64), -1i64, 1i64);
        // Half away from zero, as Arrow's cast.
        V::I64(match 10i64.checked_pow(drop) {
            Some(d) => {
                let (q, r) = (x / d, x % d);
                q + select(r.abs().ge(d / 2), step, 0i64)
            }
            // |x| < 10^19: dividing by 10^19 leaves 0 or, from half of it, +-1.
            None if drop == 19 => {
                let half = 5 * 10i64.pow(18);
                select(x.ge(half) | x.le(-half), step, 0i64)
            }
            None => Val::new(0i64),
        })
    }

    fn convert(&mut self, v: V, e: &Expr, to: ColType) -> V {
        let from = e.ty();
        match to.repr() {
            Repr::I64 => V::I64(to_i64(v)),
            Repr::F64 => V::F64(to_f64(v, from)),
            Repr::I128 if self.narrow => self.narrow_convert(v, from, to),
            Repr::I128 if to.scale() >= from.scale() => {
                V::I128(self.wide(v, from, to.scale(), e.digits()))
            }
            Repr::I128 => {
                // A smaller scale rounds half away from zero, as Arrow's cast.
                let V::I128(x) = v else {
                    unreachable!("a decimal")
                };
                let d = pow10(from.scale() - to.scale());
                let (q, r) = (x / d, x % d);
                let away = r.abs().ge(d / 2);
                let step = select(x.lt(0i128), -1i128, 1i128);
                V::I128(q + select(away, step, 0i128))
            }
            _ => v,
        }
    }
}

/// A decimal constant scaled to `scale`, where it fits 64 bits.
fn constant(e: &Expr, scale: i8) -> Option<Constant> {
    let Expr::Literal { value, ty } = e else {
        return None;
    };
    let up = u32::try_from(scale - ty.scale()).ok()?;
    let c = decimal_constant(value, *ty).checked_mul(10i128.checked_pow(up)?)?;
    i64::try_from(c).ok().map(|c| Constant(i128::from(c)))
}

/// A 64-bit constant operand, and where the other operand keeps a sum or difference within
/// 64 bits.
#[derive(Copy, Clone)]
struct Constant(i128);

impl Constant {
    /// The `x` with `x + c` within 64 bits.
    fn addend_range(self) -> (i128, i128) {
        (i128::from(i64::MIN) - self.0, i128::from(i64::MAX) - self.0)
    }
    /// The `x` with `x - c` within 64 bits.
    fn minuend_range(self) -> (i128, i128) {
        (i128::from(i64::MIN) + self.0, i128::from(i64::MAX) + self.0)
    }
    /// The `x` with `c - x` within 64 bits.
    fn subtrahend_range(self) -> (i128, i128) {
        (self.0 - i128::from(i64::MAX), self.0 - i128::from(i64::MIN))
    }
}

/// Whether `x` is outside `[lo, hi]` (the sides beyond 64 bits not compared).
fn outside(x: Val<i64>, (lo, hi): (i128, i128)) -> Val<bool> {
    let below = i64::try_from(lo)
        .ok()
        .filter(|&lo| lo > i64::MIN)
        .map(|lo| x.lt(lo));
    let above = i64::try_from(hi)
        .ok()
        .filter(|&hi| hi < i64::MAX)
        .map(|hi| x.gt(hi));
    match (below, above) {
        (Some(b), Some(a)) => b | a,
        (Some(b), None) => b,
        (None, Some(a)) => a,
        (None, None) => Val::new(false),
    }
}

/// `a * b` wrapped, and bits that are nonzero where it overflowed (the high word of the
/// 128-bit product against the low word's sign: one multiplication on 64-bit targets, where
/// `Val::overflowing_mul` divides).
fn overflowing_mul_i64(a: Val<i64>, b: Val<i64>) -> (Val<i64>, Val<u64>) {
    let wide = a.cast::<i128>() * b.cast::<i128>();
    let (low, high) = (wide.cast::<i64>(), (wide >> 64i128).cast::<i64>());
    (low, (high ^ (low >> 63i64)).cast::<u64>())
}

/// Whether `|x|` has at most `digits` decimal digits (`|x| <= 10^digits - 1`), with one
/// addition and one unsigned comparison.
fn within_digits(x: Val<i128>, digits: u32) -> Val<bool> {
    if digits > I128_DIGITS {
        return Val::new(true);
    }
    let max = 10i128.pow(digits) - 1;
    x.wrapping_add(max).cast::<u128>().le(max as u128 * 2)
}

/// Whether `a * b` overflows an `i128`: at once where both fit in 64 bits (the usual case,
/// taken by a branch), else [`mul_overflows_wide`].
#[nacre::jit]
fn mul_overflows(a: Val<i128>, b: Val<i128>) -> Val<bool> {
    let fits = |x: Val<i128>| x.eq(x.cast::<i64>().cast::<i128>());
    if fits(a) & fits(b) {
        Val::new(false)
    } else {
        mul_overflows_wide(a, b)
    }
}

/// Whether `a * b` overflows an `i128`, without a division: on the magnitudes' 64-bit
/// halves, at most one of which may be nonzero in the high half.
fn mul_overflows_wide(a: Val<i128>, b: Val<i128>) -> Val<bool> {
    let magnitude =
        |x: Val<i128>| select(x.lt(0i128), Val::new(0i128).wrapping_sub(x), x).cast::<u128>();
    let (ua, ub) = (magnitude(a), magnitude(b));
    let low = u128::from(u64::MAX);
    let (a_hi, a_lo, b_hi, b_lo) = (ua >> 64u128, ua & low, ub >> 64u128, ub & low);
    let both_high = a_hi.ne(0u128) & b_hi.ne(0u128);
    let cross = a_hi * b_lo + b_hi * a_lo;
    let cross_high = (cross >> 64u128).ne(0u128);
    let lows = a_lo * b_lo;
    let magnitude = (cross << 64u128).wrapping_add(lows);
    let carry = magnitude.lt(lows);
    let negative = a.lt(0i128) ^ b.lt(0i128);
    let limit = select(negative, 1u128 << 127, (1u128 << 127) - 1);
    both_high | cross_high | carry | magnitude.gt(limit)
}

fn int_op<T: nacre::Int>(op: ArithOp, a: Val<T>, b: Val<T>) -> Val<T> {
    match op {
        ArithOp::Add => a.wrapping_add(b),
        ArithOp::Sub => a.wrapping_sub(b),
        _ => a.wrapping_mul(b),
    }
}

fn cmp<T: nacre::Scalar>(op: CmpOp, a: Val<T>, b: Val<T>) -> Val<bool> {
    match op {
        CmpOp::Eq => a.eq(b),
        CmpOp::Ne => a.ne(b),
        CmpOp::Lt => a.lt(b),
        CmpOp::Le => a.le(b),
        CmpOp::Gt => a.gt(b),
        CmpOp::Ge => a.ge(b),
    }
}

/// `a` where `c` holds, else `b` (values of one representation).
fn choose(c: Val<bool>, a: V, b: V) -> V {
    match (a, b) {
        (V::B(x), V::B(y)) => V::B((c & x) | (!c & y)),
        (V::I32(x), V::I32(y)) => V::I32(select(c, x, y)),
        (V::I64(x), V::I64(y)) => V::I64(select(c, x, y)),
        (V::I128(x), V::I128(y)) => V::I128(select(c, x, y)),
        (V::F64(x), V::F64(y)) => V::F64(select(c, x, y)),
        (V::View(x0, x1), V::View(y0, y1)) => V::View(select(c, x0, y0), select(c, x1, y1)),
        _ => unreachable!("both values of a CASE have its type"),
    }
}

fn to_i64(v: V) -> Val<i64> {
    match v {
        V::I32(x) => x.cast::<i64>(),
        V::I64(x) => x,
        V::B(b) => b.cast::<i64>(),
        _ => unreachable!("an integer"),
    }
}

/// A number as a double; a decimal (held in 64 or 128 bits) divided by its scale.
fn to_f64(v: V, from: ColType) -> Val<f64> {
    let unscaled = match v {
        V::F64(x) => return x,
        V::I32(x) => x.cast::<f64>(),
        V::I64(x) => x.cast::<f64>(),
        V::I128(x) => x.cast::<f64>(),
        _ => unreachable!("a number"),
    };
    if from.scale() == 0 {
        unscaled
    } else {
        unscaled / pow10(from.scale()) as f64
    }
}

/// An integer (a decimal of a narrow program in 64 bits, or of a wide one) in 128 bits.
fn to_i128(v: V) -> Val<i128> {
    match v {
        V::I128(x) => x,
        v => to_i64(v).cast::<i128>(),
    }
}

/// Whether either operand of a comparison is a decimal.
fn is_decimal(l: &Expr, r: &Expr) -> bool {
    l.ty().repr() == Repr::I128 || r.ty().repr() == Repr::I128
}

/// The scaled integer of a decimal constant.
fn decimal_constant(value: &Lit, ty: ColType) -> i128 {
    match value {
        Lit::Decimal(x) => *x,
        Lit::Int(x) => i128::from(*x) * pow10(ty.scale()),
        _ => unreachable!("a decimal constant"),
    }
}

/// The 16 bytes of the view of a string of at most 12 bytes, as two words.
pub fn inline_view(s: &[u8]) -> [u64; 2] {
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(&(s.len() as u32).to_le_bytes());
    b[4..4 + s.len()].copy_from_slice(s);
    [
        u64::from_le_bytes(b[..8].try_into().unwrap_or_default()),
        u64::from_le_bytes(b[8..].try_into().unwrap_or_default()),
    ]
}

fn literal(value: &Lit, ty: ColType) -> V {
    match (value, ty.repr()) {
        (Lit::Bool(b), _) => V::B(Val::new(*b)),
        (Lit::Int(x), Repr::I32) => V::I32(Val::new(*x as i32)),
        (Lit::Int(x), Repr::I64) => V::I64(Val::new(*x)),
        (Lit::Decimal(_), _) | (Lit::Int(_), Repr::I128) => {
            V::I128(Val::new(decimal_constant(value, ty)))
        }
        (Lit::Float(x), _) => V::F64(Val::new(*x)),
        (Lit::Int(x), _) => V::F64(Val::new(*x as f64)),
        (Lit::Str(s), _) => {
            let [a, b] = inline_view(s);
            V::View(Val::new(a), Val::new(b))
        }
    }
}

/// The value an accumulator starts from.
pub fn identity_bits(acc: Acc) -> u128 {
    match (acc.kind, acc.repr) {
        (AccKind::Min, Repr::I64) => i64::MAX as u128,
        (AccKind::Max, Repr::I64) => i64::MIN as u64 as u128,
        (AccKind::Min, Repr::I128) => i128::MAX as u128,
        (AccKind::Max, Repr::I128) => i128::MIN as u128,
        (AccKind::Min, Repr::F64) => f64::INFINITY.to_bits() as u128,
        (AccKind::Max, Repr::F64) => f64::NEG_INFINITY.to_bits() as u128,
        (_, Repr::F64) => 0f64.to_bits() as u128,
        _ => 0,
    }
}

/// The accumulators carried without group keys: the banks `i64`, `i128`, `f64`.
type Banks = (
    [Val<i64>; MAX_ACCS],
    [Val<i128>; MAX_ACCS],
    [Val<f64>; MAX_ACCS],
);

/// One row's contribution: the filter's verdict, each accumulator's argument and whether
/// that is not null (`None`: it cannot be).
struct Contribution {
    pass: Val<bool>,
    args: Vec<Option<V>>,
    valid: Vec<Option<Val<bool>>>,
}

fn contribution(p: &Program, row: &mut Row<'_>) -> Contribution {
    let pass = passes(p, row);
    contribution_of(p, row, pass)
}

/// Whether the row passes the filter (true, not NULL) and, with a join, finds a build row
/// that passes the join's filter (the build columns are then read at that row).
fn passes(p: &Program, row: &mut Row<'_>) -> Val<bool> {
    let mut pass = match &p.filter {
        Some(f) => row.holds(f),
        None => Val::new(true),
    };
    if let (Some(j), Some(t)) = (&p.join, &row.src.join) {
        pass = row.join(j, t, pass);
    }
    pass
}

/// The row's contribution given whether it passes ([`passes`]).
fn contribution_of(p: &Program, row: &mut Row<'_>, pass: Val<bool>) -> Contribution {
    // What the filter rejects is not computed by DataFusion: its overflows don't count.
    let before = row.overflow;
    row.overflow = Val::new(false);
    // The projections' values first, outside any `CASE` branch (`Program::projected`).
    for e in &p.projected {
        row.eval(e);
    }
    let projected = row.overflow;
    row.overflow = Val::new(false);
    let args = p
        .accs
        .iter()
        .map(|a| a.arg.as_ref().map(|e| row.eval(e)))
        .collect();
    let valid = p
        .accs
        .iter()
        .map(|a| a.arg.as_ref().and_then(|e| row.valid(e)))
        .collect();
    row.overflow = before | ((row.overflow | projected) & pass);
    Contribution { pass, args, valid }
}

fn combine_i64(kind: AccKind, acc: Val<i64>, v: Val<i64>) -> Val<i64> {
    match kind {
        AccKind::Min => acc.min(v),
        AccKind::Max => acc.max(v),
        _ => acc.wrapping_add(v),
    }
}

fn combine_i128(kind: AccKind, acc: Val<i128>, v: Val<i128>) -> Val<i128> {
    match kind {
        AccKind::Min => acc.min(v),
        AccKind::Max => acc.max(v),
        _ => acc.wrapping_add(v),
    }
}

fn combine_f64(kind: AccKind, acc: Val<f64>, v: Val<f64>) -> Val<f64> {
    match kind {
        AccKind::Min => acc.min(v),
        AccKind::Max => acc.max(v),
        _ => acc + v,
    }
}

/// Folds one row into the carried banks, masked by the filter and by null arguments.
fn fold(p: &Program, mut banks: Banks, c: &Contribution) -> Banks {
    for ((a, arg), valid) in p.accs.iter().zip(&c.args).zip(&c.valid) {
        let Acc { kind, repr, slot } = a.acc;
        let take = valid.map_or(c.pass, |v| c.pass & v);
        match (kind, repr) {
            (AccKind::Count, _) => banks.0[slot] += take.cast::<i64>(),
            (_, Repr::I64) => {
                let v = to_i64(arg.expect("argument"));
                let acc = banks.0[slot];
                banks.0[slot] = select(take, combine_i64(kind, acc, v), acc);
            }
            (_, Repr::I128) => {
                let v = to_i128(arg.expect("argument"));
                let acc = banks.1[slot];
                banks.1[slot] = select(take, combine_i128(kind, acc, v), acc);
            }
            _ => {
                let V::F64(v) = arg.expect("argument") else {
                    unreachable!()
                };
                let acc = banks.2[slot];
                banks.2[slot] = select(take, combine_f64(kind, acc, v), acc);
            }
        }
    }
    banks
}

fn read_banks(frame: Ptr<u64>, l: FrameLayout) -> Banks {
    let (a, b, c) = (
        ptr_at::<i64>(frame, l.bank(0)),
        ptr_at::<i128>(frame, l.bank(1)),
        ptr_at::<f64>(frame, l.bank(2)),
    );
    (
        std::array::from_fn(|k| a.load(k as u64)),
        std::array::from_fn(|k| b.load(k as u64)),
        std::array::from_fn(|k| c.load(k as u64)),
    )
}

fn write_banks(frame: Ptr<u64>, l: FrameLayout, banks: Banks) {
    let (a, b, c) = (
        ptr_at::<i64>(frame, l.bank(0)),
        ptr_at::<i128>(frame, l.bank(1)),
        ptr_at::<f64>(frame, l.bank(2)),
    );
    for k in 0..MAX_ACCS {
        a.store(k as u64, banks.0[k]);
        b.store(k as u64, banks.1[k]);
        c.store(k as u64, banks.2[k]);
    }
}

/// The status bit of an arithmetic overflow.
pub const STATUS_OVERFLOW: u64 = 1;
/// The status bit of data the program cannot compute with (DataFusion runs the partition).
pub const STATUS_UNSUPPORTED: u64 = 2;
/// The status bit of a decimal outside 64 bits in a narrow program ([`Program::narrow`]):
/// the partition runs again with the wide program. It overrides the other bits, which a
/// wrapped value may have raised.
pub const STATUS_WIDE: u64 = 4;

fn note_status(frame: Ptr<u64>, l: FrameLayout, flags: Flags) {
    let status = ptr_at::<u64>(frame, l.status());
    status.store(0u64, status.load(0u64) | flags.bits());
}

/// The traced function of a program without group keys.
#[nacre::jit]
pub fn run_ungrouped(p: &Program, frame: Ptr<u64>, start: Val<u64>, end: Val<u64>) -> Val<u64> {
    let l = FrameLayout {
        columns: p.columns.len(),
    };
    let src = Sources::load(p, frame);
    let mut banks = read_banks(frame, l);
    let mut flags = Flags::clear();
    for i in start..end {
        if p.join.is_some() {
            // A row that does not pass the filters and the join costs nothing more: a branch
            // (join filters pass few rows; the lookup is one already).
            let mut row = Row::new(p, &src, i, flags);
            let pass = passes(p, &mut row);
            flags = row.flags();
            if pass {
                let c = contribution_of(p, &mut row, pass);
                flags = row.flags();
                banks = fold(p, banks, &c);
            }
        } else {
            let mut row = Row::new(p, &src, i, flags);
            let c = contribution(p, &mut row);
            flags = row.flags();
            banks = fold(p, banks, &c);
        }
    }
    write_banks(frame, l, banks);
    note_status(frame, l, flags);
    end
}

/// The group table as traced code sees it.
#[derive(Clone)]
struct Table {
    keys: Ptr<u64>,
    used: Ptr<u64>,
    capacity: Val<u64>,
    mask: Val<u64>,
    banks: (Ptr<i64>, Ptr<i128>, Ptr<f64>),
}

impl Table {
    fn load(frame: Ptr<u64>, l: FrameLayout) -> Table {
        let capacity = load(frame, l.capacity());
        Table {
            keys: ptr_at(frame, l.keys()),
            used: ptr_at(frame, l.used()),
            capacity,
            mask: capacity - 1u64,
            banks: (
                ptr_at(frame, l.bank(0)),
                ptr_at(frame, l.bank(1)),
                ptr_at(frame, l.bank(2)),
            ),
        }
    }

    fn same_key(&self, slot: Val<u64>, words: &[Val<u64>]) -> Val<bool> {
        let n = words.len() as u64;
        words.iter().enumerate().fold(Val::new(true), |eq, (k, w)| {
            eq & self.keys.load(slot * n + k as u64).eq(*w)
        })
    }

    fn insert(&self, slot: Val<u64>, words: &[Val<u64>]) {
        let n = words.len() as u64;
        for (k, w) in words.iter().enumerate() {
            self.keys.store(slot * n + k as u64, *w);
        }
        self.used.store(slot, 1u64);
    }

    /// Folds a row's contribution into the accumulators of `slot` (in memory, slot-major:
    /// accumulator `k` of bank `b` of slot `s` at `s * banks[b] + k`).
    fn update(&self, p: &Program, slot: Val<u64>, c: &Contribution) {
        let base: [Val<u64>; 3] = std::array::from_fn(|b| slot * p.banks[b] as u64);
        for ((a, arg), &valid) in p.accs.iter().zip(&c.args).zip(&c.valid) {
            let Acc {
                kind,
                repr,
                slot: k,
            } = a.acc;
            let at = base[bank(repr)] + k as u64;
            match (kind, repr) {
                (AccKind::Count, _) => {
                    let ptr = self.banks.0;
                    let one = valid.map_or(Val::new(1i64), |v| v.cast::<i64>());
                    ptr.store(at, ptr.load(at) + one);
                }
                (_, Repr::I64) => {
                    let (ptr, v) = (self.banks.0, to_i64(arg.expect("argument")));
                    let old = ptr.load(at);
                    ptr.store(at, unless_null(valid, combine_i64(kind, old, v), old));
                }
                (_, Repr::I128) => {
                    let v = to_i128(arg.expect("argument"));
                    let (ptr, old) = (self.banks.1, self.banks.1.load(at));
                    ptr.store(at, unless_null(valid, combine_i128(kind, old, v), old));
                }
                _ => {
                    let V::F64(v) = arg.expect("argument") else {
                        unreachable!()
                    };
                    let (ptr, old) = (self.banks.2, self.banks.2.load(at));
                    ptr.store(at, unless_null(valid, combine_f64(kind, old, v), old));
                }
            }
        }
    }
}

/// `new`, or `old` where the argument is null (`valid` false).
fn unless_null<T: nacre::Scalar>(valid: Option<Val<bool>>, new: Val<T>, old: Val<T>) -> Val<T> {
    valid.map_or(new, |v| select(v, new, old))
}

/// The words of a row's group key ([`Program::key_words`]), and whether a string key is too
/// long to be held whole in its view (more than 12 bytes: the pipeline then leaves the
/// partition to DataFusion).
fn key_words(p: &Program, row: &mut Row<'_>) -> (Vec<Val<u64>>, Val<bool>) {
    let mut out = Vec::new();
    let mut long = Val::new(false);
    for k in &p.keys {
        let mut words = Vec::new();
        let mut too_long = Val::new(false);
        match row.eval(k) {
            V::B(b) => words.push(b.cast::<u64>()),
            V::I32(x) => words.push(x.cast::<u64>()),
            // A decimal of a narrow program: the words of its 128 bits.
            V::I64(x) if k.ty().repr() == Repr::I128 => {
                words.push(x.cast::<u64>());
                words.push((x >> 63i64).cast::<u64>());
            }
            V::I64(x) => words.push(x.cast::<u64>()),
            V::I128(x) => {
                words.push(x.cast::<u64>());
                words.push((x >> 64i128).cast::<u64>());
            }
            V::F64(_) => unreachable!("float group keys are declined"),
            V::View(a, b) => {
                too_long = (a & 0xffff_ffffu64).gt(12u64);
                words.push(a);
                words.push(b);
            }
        }
        // A key that can be null: its words zeroed where it is (every NULL one group), then
        // whether it is not.
        match row.valid(k) {
            Some(valid) => {
                out.extend(words.iter().map(|&w| select(valid, w, 0u64)));
                out.push(valid.cast::<u64>());
                long |= too_long & valid;
            }
            None => {
                out.extend(words);
                long |= too_long;
            }
        }
    }
    (out, long)
}

fn traced_hash(words: &[Val<u64>]) -> Val<u64> {
    let h = words
        .iter()
        .fold(Val::new(0u64), |h, &w| (h ^ w).wrapping_mul(HASH_MUL));
    h ^ (h >> 32u64)
}

/// The slot of the group of `words`: its slot if present, else the empty slot where it
/// belongs.
#[nacre::jit]
fn probe(t: &Table, words: &[Val<u64>]) -> Val<u64> {
    let mut slot = traced_hash(words) & t.mask;
    while t.used.load(slot).ne(0u64) & !t.same_key(slot, words) {
        slot = (slot + 1u64) & t.mask;
    }
    slot
}

/// Row `i`'s contribution, its group key words, whether a string key is too long to be held
/// whole in its view, and the flags after the row (a key's overflow counted where the row
/// passes the filter).
fn keyed_row(
    p: &Program,
    src: &Sources,
    i: Val<u64>,
    flags: Flags,
) -> (Contribution, Vec<Val<u64>>, Val<bool>, Flags) {
    let mut row = Row::new(p, src, i, flags);
    let pass = passes(p, &mut row);
    keyed(p, &mut row, pass)
}

/// [`keyed_row`] of a row whose verdict is `pass` ([`passes`]).
fn keyed(
    p: &Program,
    row: &mut Row<'_>,
    pass: Val<bool>,
) -> (Contribution, Vec<Val<u64>>, Val<bool>, Flags) {
    let c = contribution_of(p, row, pass);
    let before = row.overflow;
    row.overflow = Val::new(false);
    let (words, long) = key_words(p, row);
    row.overflow = before | (row.overflow & c.pass);
    (c, words, long, row.flags())
}

/// The traced function of a program with group keys.
#[nacre::jit]
pub fn run_grouped(p: &Program, frame: Ptr<u64>, start: Val<u64>, end: Val<u64>) -> Val<u64> {
    let l = FrameLayout {
        columns: p.columns.len(),
    };
    let src = Sources::load(p, frame);
    let t = Table::load(frame, l);
    let count_ptr = ptr_at::<u64>(frame, l.count());
    let mut count = count_ptr.load(0u64);
    let mut flags = Flags::clear();
    let mut i = start;
    while i < end {
        if p.join.is_some() {
            // As in `run_ungrouped`: a row that does not pass costs nothing more.
            let mut row = Row::new(p, &src, i, flags);
            let pass = passes(p, &mut row);
            flags = row.flags();
            if pass {
                let (c, words, long, after) = keyed(p, &mut row, pass);
                flags = Flags {
                    invalid: after.invalid | long,
                    ..after
                };
                let slot = probe(&t, &words);
                if t.used.load(slot).eq(0u64) {
                    if count * 2u64 >= t.capacity {
                        break;
                    }
                    t.insert(slot, &words);
                    count += 1u64;
                }
                t.update(p, slot, &c);
            }
        } else {
            let (c, words, long, after) = keyed_row(p, &src, i, flags);
            flags = Flags {
                invalid: after.invalid | long,
                ..after
            };
            let slot = probe(&t, &words);
            let new = t.used.load(slot).eq(0u64) & c.pass;
            if new {
                if count * 2u64 >= t.capacity {
                    break;
                }
                t.insert(slot, &words);
                count += 1u64;
            }
            t.update(p, select(c.pass, slot, t.capacity), &c);
        }
        i += 1u64;
    }
    count_ptr.store(0u64, count);
    note_status(frame, l, flags);
    i
}

/// The index of a row's key values in `p`'s domain (`Σ index_k · stride_k`, the last key's
/// stride 1), and whether they are all there: each key's words compared with each of its
/// values, the words every value shares once. A string key whose values are all at most
/// 4 bytes long is told by its first word (length and bytes) alone.
fn domain_index(p: &Program, words: &[Val<u64>]) -> (Val<u64>, Val<bool>) {
    let domain = p.domain.as_deref().unwrap_or_default();
    let mut index = Val::new(0u64);
    let mut found = Val::new(true);
    let mut first = 0;
    for (values, key_expr) in domain.iter().zip(&p.keys) {
        let n = values.first().map_or(0, Vec::len);
        let key = &words[first..first + n];
        first += n;
        let short =
            key_expr.ty().repr() == Repr::View && values.iter().all(|v| v[0] & 0xffff_ffff <= 4);
        let compared = |j: &usize| !(short && *j == 1);
        let shared = |j: usize| values.iter().all(|v| v[j] == values[0][j]);
        let mut hit = Val::new(false);
        let mut at = Val::new(0u64);
        for (x, v) in values.iter().enumerate() {
            let same = (0..n)
                .filter(compared)
                .filter(|&j| !shared(j))
                .fold(Val::new(true), |eq, j| eq & key[j].eq(v[j]));
            hit |= same;
            at = select(same, x as u64, at);
        }
        for j in (0..n).filter(compared).filter(|&j| shared(j)) {
            found &= key[j].eq(values[0][j]);
        }
        found &= hit;
        index = index * values.len() as u64 + at;
    }
    (index, found)
}

/// The traced function of a program with a key domain ([`Program::with_domain`]): as
/// [`run_grouped`], each row's group from the lookup table at its key values' index; it
/// stops at the first row whose key values are not in the domain.
#[nacre::jit]
pub fn run_direct(p: &Program, frame: Ptr<u64>, start: Val<u64>, end: Val<u64>) -> Val<u64> {
    let l = FrameLayout {
        columns: p.columns.len(),
    };
    let src = Sources::load(p, frame);
    let t = Table::load(frame, l);
    let lut = ptr_at::<u64>(frame, l.lut());
    let mut flags = Flags::clear();
    let mut i = start;
    while i < end {
        // A string key in the domain is held whole in its view: not too long.
        if p.join.is_some() {
            // As in `run_ungrouped`: a row that does not pass costs nothing more.
            let mut row = Row::new(p, &src, i, flags);
            let pass = passes(p, &mut row);
            flags = row.flags();
            if pass {
                let (c, words, _, after) = keyed(p, &mut row, pass);
                let (index, found) = domain_index(p, &words);
                if !found {
                    break;
                }
                flags = after;
                t.update(p, lut.load(index), &c);
            }
        } else {
            let (c, words, _, after) = keyed_row(p, &src, i, flags);
            let (index, found) = domain_index(p, &words);
            if !found {
                break;
            }
            flags = after;
            t.update(p, select(c.pass, lut.load(index), t.capacity), &c);
        }
        i += 1u64;
    }
    note_status(frame, l, flags);
    i
}

/// Which traced function a program compiles to.
pub fn run(p: &Program, frame: Ptr<u64>, start: Val<u64>, end: Val<u64>) -> Val<u64> {
    if p.keys.is_empty() {
        run_ungrouped(p, frame, start, end)
    } else if p.domain.is_some() {
        run_direct(p, frame, start, end)
    } else {
        run_grouped(p, frame, start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nacre::{Engine, Options};

    /// `for i in 0..n { body(i) }`, traced.
    #[nacre::jit]
    fn for_each(n: Val<u64>, body: impl Fn(Val<u64>)) {
        for i in 0u64..n {
            body(i);
        }
    }

    #[test]
    fn mul_overflow_agrees_with_rust() {
        let engine = Engine::new(Options::default()).expect("engine");
        let f = engine
            .compile(|x: Ptr<i128>, out: Ptr<u8>, n: Val<u64>| {
                for_each(n, |i| {
                    let (a, b) = (x.load(i * 2u64), x.load(i * 2u64 + 1u64));
                    out.store(i, mul_overflows(a, b).cast::<u8>());
                })
            })
            .expect("compiled");
        let mut values = vec![
            0,
            1,
            -1,
            2,
            -2,
            3,
            10,
            i128::MAX,
            i128::MIN,
            i128::MAX / 2,
            i128::MIN / 2,
        ];
        for k in [31, 62, 63, 64, 65, 100, 126] {
            values.extend([
                1i128 << k,
                -(1i128 << k),
                (1i128 << k) - 1,
                1 - (1i128 << k),
            ]);
        }
        for k in [9, 18, 19, 20, 30, 37] {
            values.extend([10i128.pow(k), -(10i128.pow(k)), 10i128.pow(k) - 1]);
        }
        let mut state = 7u64;
        for _ in 0..200 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let bits = (state >> 1) as u32 % 127;
            values.push(((state as i128) << 64 | state as i128) >> (127 - bits));
        }
        let pairs: Vec<i128> = values
            .iter()
            .flat_map(|&a| values.iter().flat_map(move |&b| [a, b]))
            .collect();
        let mut out = vec![0u8; pairs.len() / 2];
        let n = out.len() as u64;
        f.call(&pairs[..], &mut out[..], n).expect("ran");
        for (k, o) in out.iter().enumerate() {
            let (a, b) = (pairs[2 * k], pairs[2 * k + 1]);
            assert_eq!(*o != 0, a.overflowing_mul(b).1, "{a} * {b}");
        }
    }

    #[test]
    fn constant_ranges_agree_with_checked_arithmetic() {
        let edges = [
            i64::MIN,
            i64::MIN + 1,
            -100,
            -1,
            0,
            1,
            99,
            100,
            i64::MAX - 1,
            i64::MAX,
        ];
        let within = |x: i64, (lo, hi): (i128, i128)| (lo..=hi).contains(&i128::from(x));
        for c in edges {
            let k = Constant(i128::from(c));
            for x in edges
                .iter()
                .flat_map(|&e| [e, e.wrapping_add(c), e.wrapping_sub(c)])
            {
                assert_eq!(
                    within(x, k.addend_range()),
                    x.checked_add(c).is_some(),
                    "{x} + {c}"
                );
                assert_eq!(
                    within(x, k.minuend_range()),
                    x.checked_sub(c).is_some(),
                    "{x} - {c}"
                );
                assert_eq!(
                    within(x, k.subtrahend_range()),
                    c.checked_sub(x).is_some(),
                    "{c} - {x}"
                );
            }
        }
    }

    #[test]
    fn hashes_and_views() {
        assert_eq!(inline_view(b"R"), [1 | (u64::from(b'R') << 32), 0]);
        assert_eq!(
            inline_view(b"abcdefghijkl")[1],
            u64::from_le_bytes(*b"efghijkl")
        );
        assert_ne!(hash_words(&[1, 2]), hash_words(&[2, 1]));
    }
}
