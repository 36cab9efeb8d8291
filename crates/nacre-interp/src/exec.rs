//! The dispatch loop: runs a [`Program`] on a register stack.
//!
//! All frames of one run live in one contiguous `Vec<u128>` (the register stack); a frame is a
//! window of its function's `nregs` slots, and a callee's window starts right after its
//! caller's. Calls between IR functions push a small return record on a heap-allocated frame
//! stack instead of recursing on the host stack, so deep IR recursion can never overflow the
//! host's stack; the register stack is capped at [`MAX_STACK_SLOTS`] slots, beyond which the
//! run stops with [`ExecError::StackOverflow`].
//!
//! Every register holds its value's normalised bits (zero-extended to the type's width), which
//! the specialised operators rely on and preserve. Arguments from outside and extern results
//! are normalised on entry.

use crate::mem::{load, store};
use crate::ops::{CallOp, LaunchOp, LocalOp, Op, Reg};
use crate::program::{LoweredFunc, Program};
use nacre_backend::atomic;
use nacre_backend::LaunchDims;
use nacre_ir::{semantics, Trap};
use thiserror::Error;

/// The most register slots (all frames of one call together) a run may use: 4 Mi slots
/// (64 MiB), which allows a recursion depth of hundreds of thousands of small frames.
pub const MAX_STACK_SLOTS: usize = 1 << 22;

/// Register-stack capacity (in slots) kept in the per-thread buffer between calls; a run that
/// grew it further (deep recursion) gives the memory back when it ends.
const RETAINED_SLOTS: usize = 1 << 18;

/// Why a run of interpreted code stopped without a result.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Error)]
pub enum ExecError {
    /// The IR code trapped (the same trap every backend reports).
    #[error(transparent)]
    Trap(#[from] Trap),
    /// The IR call stack needed more than [`MAX_STACK_SLOTS`] register slots (runaway
    /// recursion).
    #[error("interpreter call stack exhausted (more than {MAX_STACK_SLOTS} register slots)")]
    StackOverflow,
}

/// A saved caller: where to continue and where the callee's result goes.
#[derive(Copy, Clone, Debug)]
struct Frame {
    func: u32,
    pc: u32,
    base: u32,
    d: Reg,
}

/// Reusable per-run buffers (kept per thread by the executable, so runs do not allocate).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    regs: Vec<u128>,
    frames: Vec<Frame>,
    ext_args: Vec<u64>,
    /// The local arrays of the calls in progress, each with the depth (frames below it) of
    /// the call that made it: freed when that call returns.
    locals: Vec<(usize, Box<[u128]>)>,
}

impl Scratch {
    /// Empty buffers.
    pub(crate) const fn new() -> Scratch {
        Scratch {
            regs: Vec::new(),
            frames: Vec::new(),
            ext_args: Vec::new(),
            locals: Vec::new(),
        }
    }

    /// Releases buffers that a deep recursion made unusually large.
    pub(crate) fn trim(&mut self) {
        if self.regs.capacity() > RETAINED_SLOTS {
            self.regs = Vec::new();
        }
        if self.frames.capacity() > RETAINED_SLOTS {
            self.frames = Vec::new();
        }
    }
}

/// Kernel launches with at most this many arguments encode them in an array on the host
/// stack; longer argument lists use the run's reusable buffer.
const STACK_LAUNCH_ARGS: usize = 16;

/// Why the inner loop handed control back to [`run`].
enum Exit {
    /// An IR call: set up the callee's frame.
    Call(CallOp),
    /// A local array to allocate for the current call.
    Local(LocalOp),
    /// A return with the result bits.
    Ret(u128),
}

/// Runs the program's entry function with `args` (missing arguments read as 0, extra ones are
/// ignored; each is normalised to its parameter's type).
pub(crate) fn run(prog: &Program, args: &[u64], scratch: &mut Scratch) -> Result<u64, ExecError> {
    let Scratch {
        regs: stack,
        frames,
        ext_args,
        locals,
    } = scratch;
    frames.clear();
    locals.clear();
    let mut fi = prog.entry;
    let mut f = &prog.funcs[fi];
    if stack.len() < f.nregs {
        stack.resize(f.nregs, 0);
    }
    enter(&mut stack[..f.nregs], f);
    for (k, (slot, mask)) in stack.iter_mut().zip(&f.param_masks).enumerate() {
        *slot = u128::from(args.get(k).map_or(0, |a| a & mask));
    }
    let mut base = 0usize;
    let mut pc = 0usize;
    loop {
        let exit = execute(prog, f, &mut stack[base..base + f.nregs], &mut pc, ext_args)?;
        match exit {
            Exit::Call(c) => {
                let callee = c.callee as usize;
                let g = &prog.funcs[callee];
                let new_base = base + f.nregs;
                let end = new_base + g.nregs;
                if end > MAX_STACK_SLOTS {
                    return Err(ExecError::StackOverflow);
                }
                if stack.len() < end {
                    stack.resize(end, 0);
                }
                let (lower, upper) = stack.split_at_mut(new_base);
                let caller = &lower[base..];
                let window = &mut upper[..g.nregs];
                let start = c.args as usize;
                for (slot, &a) in window
                    .iter_mut()
                    .zip(&f.arg_pool[start..start + c.nargs as usize])
                {
                    *slot = caller[a as usize];
                }
                enter(window, g);
                // Fits in u32: bounded by MAX_STACK_SLOTS and the function sizes.
                frames.push(Frame {
                    func: fi as u32,
                    pc: pc as u32,
                    base: base as u32,
                    d: c.d,
                });
                fi = callee;
                f = g;
                base = new_base;
                pc = 0;
            }
            Exit::Local(l) => {
                let mut words = vec![0u128; l.words as usize].into_boxed_slice();
                stack[base + l.d as usize] = words.as_mut_ptr() as usize as u128;
                locals.push((frames.len(), words));
            }
            Exit::Ret(v) => {
                free_locals(locals, frames.len());
                match frames.pop() {
                    // The entry's result is at most 64 bits (the verifier's host boundary).
                    None => return Ok(v as u64),
                    Some(frame) => {
                        fi = frame.func as usize;
                        f = &prog.funcs[fi];
                        base = frame.base as usize;
                        pc = frame.pc as usize;
                        stack[base + frame.d as usize] = v;
                    }
                }
            }
        }
    }
}

/// Frees the local arrays of the call at `depth` (frames below it) that returns.
fn free_locals(locals: &mut Vec<(usize, Box<[u128]>)>, depth: usize) {
    while locals.last().is_some_and(|(d, _)| *d >= depth) {
        locals.pop();
    }
}

/// Pre-loads a new frame's constants (the parameters are written by the caller).
#[inline(always)]
fn enter(window: &mut [u128], f: &LoweredFunc) {
    window[f.nparams..f.nparams + f.consts.len()].copy_from_slice(&f.consts);
}

#[inline(always)]
fn f32_of(x: u64) -> f32 {
    f32::from_bits(x as u32)
}

#[inline(always)]
fn f64_of(x: u64) -> f64 {
    f64::from_bits(x)
}

#[inline(always)]
fn bits32(x: f32) -> u64 {
    u64::from(x.to_bits())
}

#[inline(always)]
fn bits64(x: f64) -> u64 {
    x.to_bits()
}

/// Launches a kernel: encodes the sizes and arguments (registers already hold the bits
/// encoding of [`nacre_ir::semantics`]) and calls the module's launcher; a nonzero status
/// is the launch's trap ([`Trap::DeviceError`] for codes no trap has).
#[inline(never)]
fn launch(
    prog: &Program,
    f: &LoweredFunc,
    regs: &[u128],
    l: LaunchOp,
    ext_args: &mut Vec<u64>,
) -> Result<(), Trap> {
    let kernel = &prog.launches[l.kernel as usize];
    let start = l.args as usize;
    let (sizes, args) = f.arg_pool[start..start + l.sizes() + l.nargs as usize].split_at(l.sizes());
    let mut dims = [0u32; LaunchDims::WORDS];
    for (d, &r) in dims.iter_mut().zip(sizes) {
        // A `u32` register holds its value zero-extended.
        *d = regs[r as usize] as u32;
    }
    let mut small = [0u64; STACK_LAUNCH_ARGS];
    let bits: &[u64] = if args.len() <= STACK_LAUNCH_ARGS {
        for (b, &r) in small.iter_mut().zip(args) {
            *b = regs[r as usize] as u64;
        }
        &small[..args.len()]
    } else {
        ext_args.clear();
        ext_args.extend(args.iter().map(|&r| regs[r as usize] as u64));
        ext_args
    };
    let mut status = 0u32;
    // SAFETY: `kernel.launcher` and `kernel.handle` come from the linkage's `LaunchBinding`,
    // whose contract (see `nacre_backend::LaunchFn`) is that the launcher accepts the handles the
    // runtime gave for the module's kernels, a `LaunchDims` and one `u64` per kernel
    // parameter in the bits encoding, and a status word to write. Lowering checked that this
    // launch passes exactly as many arguments as the kernel has parameters; `dims`, `bits` and
    // `status` are live, non-null and aligned for the duration of the call.
    unsafe { (kernel.launcher)(kernel.handle, dims.as_ptr(), bits.as_ptr(), &mut status) };
    match status {
        0 => Ok(()),
        code => Err(Trap::from_code(code).unwrap_or(Trap::DeviceError)),
    }
}

/// Runs `f`'s code on its frame `regs` from `*pc` until a call or a return.
fn execute(
    prog: &Program,
    f: &LoweredFunc,
    regs: &mut [u128],
    pc_io: &mut usize,
    ext_args: &mut Vec<u64>,
) -> Result<Exit, Trap> {
    let code = f.code.as_slice();
    let mut pc = *pc_io;

    macro_rules! bin {
        ($r:expr, |$x:ident, $y:ident| $e:expr) => {{
            let r = $r;
            let $x = regs[r.a as usize] as u64;
            let $y = regs[r.b as usize] as u64;
            regs[r.d as usize] = u128::from($e);
        }};
    }
    macro_rules! un {
        ($r:expr, |$x:ident| $e:expr) => {{
            let r = $r;
            let $x = regs[r.a as usize] as u64;
            regs[r.d as usize] = u128::from($e);
        }};
    }
    // The generic operators see whole registers (the 128-bit integers need them).
    macro_rules! bin_wide {
        ($r:expr, |$x:ident, $y:ident| $e:expr) => {{
            let r = $r;
            let $x = regs[r.a as usize];
            let $y = regs[r.b as usize];
            regs[r.d as usize] = $e;
        }};
    }
    macro_rules! un_wide {
        ($r:expr, |$x:ident| $e:expr) => {{
            let r = $r;
            let $x = regs[r.a as usize];
            regs[r.d as usize] = $e;
        }};
    }
    macro_rules! jump_unless {
        ($j:expr, |$x:ident, $y:ident| $e:expr) => {{
            let j = $j;
            let $x = regs[j.a as usize] as u64;
            let $y = regs[j.b as usize] as u64;
            if !$e {
                pc = j.target as usize;
            }
        }};
    }
    macro_rules! div {
        ($r:expr, $trap:expr, |$x:ident, $y:ident| $e:expr) => {{
            let r = $r;
            let $x = regs[r.a as usize] as u64;
            let $y = regs[r.b as usize] as u64;
            if $y == 0 {
                return Err($trap);
            }
            regs[r.d as usize] = u128::from($e);
        }};
    }

    loop {
        let op = code[pc];
        pc += 1;
        match op {
            Op::Mov(r) => un_wide!(r, |x| x),

            Op::Jump(j) => pc = j.target as usize,
            Op::JumpIf(j) => {
                if regs[j.c as usize] != 0 {
                    pc = j.target as usize;
                }
            }
            Op::JumpUnless(j) => {
                if regs[j.c as usize] == 0 {
                    pc = j.target as usize;
                }
            }
            Op::JumpUnlessEq(j) => jump_unless!(j, |x, y| x == y),
            Op::JumpUnlessNe(j) => jump_unless!(j, |x, y| x != y),
            Op::JumpUnlessULt(j) => jump_unless!(j, |x, y| x < y),
            Op::JumpUnlessULe(j) => jump_unless!(j, |x, y| x <= y),
            Op::JumpUnlessSLt32(j) => jump_unless!(j, |x, y| (x as i32) < (y as i32)),
            Op::JumpUnlessSLe32(j) => jump_unless!(j, |x, y| (x as i32) <= (y as i32)),
            Op::JumpUnlessSLt64(j) => jump_unless!(j, |x, y| (x as i64) < (y as i64)),
            Op::JumpUnlessSLe64(j) => jump_unless!(j, |x, y| (x as i64) <= (y as i64)),
            Op::Ret(r) => return Ok(Exit::Ret(regs[r.s as usize])),
            Op::RetVoid(_) => return Ok(Exit::Ret(0)),
            Op::Call(c) => {
                *pc_io = pc;
                return Ok(Exit::Call(c));
            }
            Op::LocalArray(l) => {
                *pc_io = pc;
                return Ok(Exit::Local(l));
            }
            Op::CallExtern(c) => {
                let ext = &prog.externs[c.callee as usize];
                let start = c.args as usize;
                ext_args.clear();
                ext_args.extend(
                    f.arg_pool[start..start + c.nargs as usize]
                        .iter()
                        .map(|&a| regs[a as usize] as u64),
                );
                // SAFETY: `ext.dyn_call` is the trampoline that the linkage pairs with
                // `ext.addr`; the linkage's invariant (whoever filled it in) is that the
                // trampoline was created for exactly that function's signature. Lowering
                // checked that this call passes exactly as many arguments as the signature has,
                // and every argument is a normalised value of the IR-declared parameter type.
                let result = unsafe { (ext.dyn_call)(ext.addr, ext_args) };
                regs[c.d as usize] = u128::from(result & ext.ret_mask);
            }
            Op::Launch(l) => launch(prog, f, regs, l, ext_args)?,

            Op::IAdd8(r) => bin!(r, |x, y| u64::from((x as u8).wrapping_add(y as u8))),
            Op::IAdd16(r) => bin!(r, |x, y| u64::from((x as u16).wrapping_add(y as u16))),
            Op::IAdd32(r) => bin!(r, |x, y| u64::from((x as u32).wrapping_add(y as u32))),
            Op::IAdd64(r) => bin!(r, |x, y| x.wrapping_add(y)),
            Op::ISub8(r) => bin!(r, |x, y| u64::from((x as u8).wrapping_sub(y as u8))),
            Op::ISub16(r) => bin!(r, |x, y| u64::from((x as u16).wrapping_sub(y as u16))),
            Op::ISub32(r) => bin!(r, |x, y| u64::from((x as u32).wrapping_sub(y as u32))),
            Op::ISub64(r) => bin!(r, |x, y| x.wrapping_sub(y)),
            Op::IMul8(r) => bin!(r, |x, y| u64::from((x as u8).wrapping_mul(y as u8))),
            Op::IMul16(r) => bin!(r, |x, y| u64::from((x as u16).wrapping_mul(y as u16))),
            Op::IMul32(r) => bin!(r, |x, y| u64::from((x as u32).wrapping_mul(y as u32))),
            Op::IMul64(r) => bin!(r, |x, y| x.wrapping_mul(y)),
            Op::And(r) => bin!(r, |x, y| x & y),
            Op::Or(r) => bin!(r, |x, y| x | y),
            Op::Xor(r) => bin!(r, |x, y| x ^ y),
            Op::Shl8(r) => bin!(r, |x, y| u64::from((x as u8).wrapping_shl(y as u32))),
            Op::Shl16(r) => bin!(r, |x, y| u64::from((x as u16).wrapping_shl(y as u32))),
            Op::Shl32(r) => bin!(r, |x, y| u64::from((x as u32).wrapping_shl(y as u32))),
            Op::Shl64(r) => bin!(r, |x, y| x.wrapping_shl(y as u32)),
            Op::SShr8(r) => bin!(r, |x, y| u64::from((x as i8).wrapping_shr(y as u32) as u8)),
            Op::SShr16(r) => bin!(
                r,
                |x, y| u64::from((x as i16).wrapping_shr(y as u32) as u16)
            ),
            Op::SShr32(r) => bin!(
                r,
                |x, y| u64::from((x as i32).wrapping_shr(y as u32) as u32)
            ),
            Op::SShr64(r) => bin!(r, |x, y| (x as i64).wrapping_shr(y as u32) as u64),
            Op::UShr8(r) => bin!(r, |x, y| u64::from((x as u8).wrapping_shr(y as u32))),
            Op::UShr16(r) => bin!(r, |x, y| u64::from((x as u16).wrapping_shr(y as u32))),
            Op::UShr32(r) => bin!(r, |x, y| u64::from((x as u32).wrapping_shr(y as u32))),
            Op::UShr64(r) => bin!(r, |x, y| x.wrapping_shr(y as u32)),
            Op::SDiv32(r) => {
                div!(r, Trap::DivisionByZero, |x, y| u64::from(
                    (x as i32).wrapping_div(y as i32) as u32
                ))
            }
            Op::SDiv64(r) => div!(
                r,
                Trap::DivisionByZero,
                |x, y| (x as i64).wrapping_div(y as i64) as u64
            ),
            Op::UDiv32(r) => div!(r, Trap::DivisionByZero, |x, y| u64::from(
                x as u32 / y as u32
            )),
            Op::UDiv64(r) => div!(r, Trap::DivisionByZero, |x, y| x / y),
            Op::SRem32(r) => {
                div!(r, Trap::RemainderByZero, |x, y| u64::from(
                    (x as i32).wrapping_rem(y as i32) as u32
                ))
            }
            Op::SRem64(r) => div!(
                r,
                Trap::RemainderByZero,
                |x, y| (x as i64).wrapping_rem(y as i64) as u64
            ),
            Op::URem32(r) => div!(r, Trap::RemainderByZero, |x, y| u64::from(
                x as u32 % y as u32
            )),
            Op::URem64(r) => div!(r, Trap::RemainderByZero, |x, y| x % y),

            Op::FAdd32(r) => bin!(r, |x, y| bits32(f32_of(x) + f32_of(y))),
            Op::FSub32(r) => bin!(r, |x, y| bits32(f32_of(x) - f32_of(y))),
            Op::FMul32(r) => bin!(r, |x, y| bits32(f32_of(x) * f32_of(y))),
            Op::FDiv32(r) => bin!(r, |x, y| bits32(f32_of(x) / f32_of(y))),
            Op::FAdd64(r) => bin!(r, |x, y| bits64(f64_of(x) + f64_of(y))),
            Op::FSub64(r) => bin!(r, |x, y| bits64(f64_of(x) - f64_of(y))),
            Op::FMul64(r) => bin!(r, |x, y| bits64(f64_of(x) * f64_of(y))),
            Op::FDiv64(r) => bin!(r, |x, y| bits64(f64_of(x) / f64_of(y))),
            Op::BinGeneric(g) => {
                let r = g.r;
                regs[r.d as usize] =
                    semantics::binary(g.op, g.s, regs[r.a as usize], regs[r.b as usize])?;
            }

            Op::INeg8(r) => un!(r, |x| u64::from((x as u8).wrapping_neg())),
            Op::INeg16(r) => un!(r, |x| u64::from((x as u16).wrapping_neg())),
            Op::INeg32(r) => un!(r, |x| u64::from((x as u32).wrapping_neg())),
            Op::INeg64(r) => un!(r, |x| x.wrapping_neg()),
            Op::INot8(r) => un!(r, |x| u64::from(!(x as u8))),
            Op::INot16(r) => un!(r, |x| u64::from(!(x as u16))),
            Op::INot32(r) => un!(r, |x| u64::from(!(x as u32))),
            Op::INot64(r) => un!(r, |x| !x),
            Op::BNot(r) => un!(r, |x| (x & 1) ^ 1),
            Op::FNeg32(r) => un!(r, |x| bits32(-f32_of(x))),
            Op::FNeg64(r) => un!(r, |x| bits64(-f64_of(x))),
            Op::FAbs32(r) => un!(r, |x| bits32(f32_of(x).abs())),
            Op::FAbs64(r) => un!(r, |x| bits64(f64_of(x).abs())),
            Op::FSqrt32(r) => un!(r, |x| bits32(f32_of(x).sqrt())),
            Op::FSqrt64(r) => un!(r, |x| bits64(f64_of(x).sqrt())),
            Op::UnGeneric(g) => un_wide!(g.r, |x| semantics::unary(g.op, g.s, x)),
            Op::Math(g) => un_wide!(g.r, |x| semantics::math(g.f, g.s, x)),
            Op::Math2(g) => bin_wide!(g.r, |x, y| semantics::math2(g.f, g.s, x, y)),

            Op::IEq(r) => bin!(r, |x, y| u64::from(x == y)),
            Op::INe(r) => bin!(r, |x, y| u64::from(x != y)),
            Op::ULt(r) => bin!(r, |x, y| u64::from(x < y)),
            Op::ULe(r) => bin!(r, |x, y| u64::from(x <= y)),
            Op::SLt8(r) => bin!(r, |x, y| u64::from((x as i8) < (y as i8))),
            Op::SLt16(r) => bin!(r, |x, y| u64::from((x as i16) < (y as i16))),
            Op::SLt32(r) => bin!(r, |x, y| u64::from((x as i32) < (y as i32))),
            Op::SLt64(r) => bin!(r, |x, y| u64::from((x as i64) < (y as i64))),
            Op::SLe8(r) => bin!(r, |x, y| u64::from((x as i8) <= (y as i8))),
            Op::SLe16(r) => bin!(r, |x, y| u64::from((x as i16) <= (y as i16))),
            Op::SLe32(r) => bin!(r, |x, y| u64::from((x as i32) <= (y as i32))),
            Op::SLe64(r) => bin!(r, |x, y| u64::from((x as i64) <= (y as i64))),
            Op::FEq32(r) => bin!(r, |x, y| u64::from(f32_of(x) == f32_of(y))),
            Op::FNe32(r) => bin!(r, |x, y| u64::from(f32_of(x) != f32_of(y))),
            Op::FLt32(r) => bin!(r, |x, y| u64::from(f32_of(x) < f32_of(y))),
            Op::FLe32(r) => bin!(r, |x, y| u64::from(f32_of(x) <= f32_of(y))),
            Op::FEq64(r) => bin!(r, |x, y| u64::from(f64_of(x) == f64_of(y))),
            Op::FNe64(r) => bin!(r, |x, y| u64::from(f64_of(x) != f64_of(y))),
            Op::FLt64(r) => bin!(r, |x, y| u64::from(f64_of(x) < f64_of(y))),
            Op::FLe64(r) => bin!(r, |x, y| u64::from(f64_of(x) <= f64_of(y))),

            Op::Trunc8(r) => un!(r, |x| u64::from(x as u8)),
            Op::Trunc16(r) => un!(r, |x| u64::from(x as u16)),
            Op::Trunc32(r) => un!(r, |x| u64::from(x as u32)),
            Op::Sext8To16(r) => un!(r, |x| u64::from(i16::from(x as i8) as u16)),
            Op::Sext8To32(r) => un!(r, |x| u64::from(i32::from(x as i8) as u32)),
            Op::Sext8To64(r) => un!(r, |x| i64::from(x as i8) as u64),
            Op::Sext16To32(r) => un!(r, |x| u64::from(i32::from(x as i16) as u32)),
            Op::Sext16To64(r) => un!(r, |x| i64::from(x as i16) as u64),
            Op::Sext32To64(r) => un!(r, |x| i64::from(x as i32) as u64),
            Op::ToBool(r) => un!(r, |x| u64::from(x != 0)),
            Op::S32ToF32(r) => un!(r, |x| bits32(x as i32 as f32)),
            Op::S32ToF64(r) => un!(r, |x| bits64(f64::from(x as i32))),
            Op::S64ToF64(r) => un!(r, |x| bits64(x as i64 as f64)),
            Op::F32ToS32(r) => un!(r, |x| u64::from(f32_of(x) as i32 as u32)),
            Op::F64ToS32(r) => un!(r, |x| u64::from(f64_of(x) as i32 as u32)),
            Op::F64ToS64(r) => un!(r, |x| f64_of(x) as i64 as u64),
            Op::F32ToF64(r) => un!(r, |x| bits64(f64::from(f32_of(x)))),
            Op::F64ToF32(r) => un!(r, |x| bits32(f64_of(x) as f32)),
            Op::CastGeneric(g) => un_wide!(g.r, |x| semantics::cast(g.from, g.to, x)),
            Op::CmpGeneric(g) => {
                let r = g.r;
                let (a, b) = (regs[r.a as usize], regs[r.b as usize]);
                regs[r.d as usize] = u128::from(semantics::compare(g.op, g.s.into(), a, b));
            }

            Op::Select(r) => {
                let v = if regs[r.a as usize] != 0 {
                    regs[r.b as usize]
                } else {
                    regs[r.c as usize]
                };
                regs[r.d as usize] = v;
            }
            Op::FFma32(r) => {
                let (a, b, c) = (
                    f32_of(regs[r.a as usize] as u64),
                    f32_of(regs[r.b as usize] as u64),
                    f32_of(regs[r.c as usize] as u64),
                );
                regs[r.d as usize] = u128::from(bits32(a.mul_add(b, c)));
            }
            Op::FFma64(r) => {
                let (a, b, c) = (
                    f64_of(regs[r.a as usize] as u64),
                    f64_of(regs[r.b as usize] as u64),
                    f64_of(regs[r.c as usize] as u64),
                );
                regs[r.d as usize] = u128::from(bits64(a.mul_add(b, c)));
            }
            Op::FmaGeneric(g) => {
                let r = g.r;
                regs[r.d as usize] = semantics::fma(
                    g.s,
                    regs[r.a as usize],
                    regs[r.b as usize],
                    regs[r.c as usize],
                );
            }

            Op::ElemPtr(a) => {
                let offset = (regs[a.i as usize] as u64).wrapping_shl(u32::from(a.shift));
                regs[a.d as usize] = u128::from((regs[a.p as usize] as u64).wrapping_add(offset));
            }
            Op::ElemPtrS8(a) => {
                let offset =
                    (i64::from(regs[a.i as usize] as i8) as u64).wrapping_shl(u32::from(a.shift));
                regs[a.d as usize] = u128::from((regs[a.p as usize] as u64).wrapping_add(offset));
            }
            Op::ElemPtrS16(a) => {
                let offset =
                    (i64::from(regs[a.i as usize] as i16) as u64).wrapping_shl(u32::from(a.shift));
                regs[a.d as usize] = u128::from((regs[a.p as usize] as u64).wrapping_add(offset));
            }
            Op::ElemPtrS32(a) => {
                let offset =
                    (i64::from(regs[a.i as usize] as i32) as u64).wrapping_shl(u32::from(a.shift));
                regs[a.d as usize] = u128::from((regs[a.p as usize] as u64).wrapping_add(offset));
            }
            // Loads: the address is an IR pointer value, which ultimately comes
            // from the arguments of the compiled function (plus in-bounds `elem_ptr`
            // arithmetic); the engine's contract is that whoever calls the compiled function
            // passes pointers valid for every access the traced code performs.
            Op::LoadBool(r) => {
                // SAFETY: caller-guaranteed pointer, valid for reading one byte (see above).
                un!(r, |x| u64::from(unsafe { load::<u8>(x) }) & 1)
            }
            Op::Load8(r) => {
                // SAFETY: caller-guaranteed pointer, valid for reading 1 byte (see above).
                un!(r, |x| u64::from(unsafe { load::<u8>(x) }))
            }
            Op::Load16(r) => {
                // SAFETY: caller-guaranteed pointer, valid for reading 2 bytes (see above).
                un!(r, |x| u64::from(unsafe { load::<u16>(x) }))
            }
            Op::Load32(r) => {
                // SAFETY: caller-guaranteed pointer, valid for reading 4 bytes (see above).
                un!(r, |x| u64::from(unsafe { load::<u32>(x) }))
            }
            Op::Load64(r) => {
                // SAFETY: caller-guaranteed pointer, valid for reading 8 bytes (see above).
                un!(r, |x| unsafe { load::<u64>(x) })
            }
            Op::Load128(r) => {
                // SAFETY: caller-guaranteed pointer, valid for reading 16 bytes (see above).
                un_wide!(r, |x| unsafe { load::<u128>(x as u64) })
            }
            // Stores: as for loads, the pointer comes from the compiled function's
            // caller, who guarantees it is valid for writes of the element type and that no
            // Rust reference aliases the written memory during the call.
            Op::Store8(s) => {
                let (p, v) = (regs[s.p as usize] as u64, regs[s.v as usize]);
                // SAFETY: caller-guaranteed pointer, valid for writing 1 byte (see above).
                unsafe { store::<u8>(p, v as u8) }
            }
            Op::Store16(s) => {
                let (p, v) = (regs[s.p as usize] as u64, regs[s.v as usize]);
                // SAFETY: caller-guaranteed pointer, valid for writing 2 bytes (see above).
                unsafe { store::<u16>(p, v as u16) }
            }
            Op::Store32(s) => {
                let (p, v) = (regs[s.p as usize] as u64, regs[s.v as usize]);
                // SAFETY: caller-guaranteed pointer, valid for writing 4 bytes (see above).
                unsafe { store::<u32>(p, v as u32) }
            }
            Op::Store64(s) => {
                let (p, v) = (regs[s.p as usize] as u64, regs[s.v as usize]);
                // SAFETY: caller-guaranteed pointer, valid for writing 8 bytes (see above).
                unsafe { store::<u64>(p, v as u64) }
            }
            Op::Store128(s) => {
                let (p, v) = (regs[s.p as usize] as u64, regs[s.v as usize]);
                // SAFETY: caller-guaranteed pointer, valid for writing 16 bytes (see above).
                unsafe { store::<u128>(p, v) }
            }
            Op::AtomicRmw(a) => {
                let (p, v) = (regs[a.p as usize] as u64, regs[a.v as usize]);
                // SAFETY: as for stores, a caller-guaranteed pointer valid for reading and
                // writing one element of the atomic's type.
                let old = unsafe {
                    atomic::rmw(p, a.s, a.order, |old| {
                        Some(semantics::atomic_rmw(a.op, a.s, u128::from(old), v) as u64)
                    })
                };
                regs[a.d as usize] = u128::from(old);
            }
            Op::AtomicCas(c) => {
                let en = c.en as usize;
                let (e, n) = (f.arg_pool[en] as usize, f.arg_pool[en + 1] as usize);
                let (p, e, n) = (regs[c.p as usize] as u64, regs[e] as u64, regs[n] as u64);
                // SAFETY: as for `AtomicRmw`.
                let old = unsafe { atomic::rmw(p, c.s, c.order, |old| (old == e).then_some(n)) };
                regs[c.d as usize] = u128::from(old);
            }
            Op::Fence(f) => std::sync::atomic::fence(f.order.to_std()),
            Op::BoundsCheck(c) => {
                let (addr, base) = (regs[c.addr as usize] as u64, regs[c.base as usize] as u64);
                let bytes = regs[c.bytes as usize] as u64;
                if !semantics::in_bounds(addr, base, bytes, c.size()) {
                    let code = c.trap_code();
                    return Err(Trap::from_code(code).unwrap_or(Trap::out_of_bounds(None, None)));
                }
            }
        }
    }
}
