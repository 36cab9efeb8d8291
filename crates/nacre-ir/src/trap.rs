//! Runtime traps: the errors a compiled function can return instead of a value.
//!
//! Every backend reports the same trap for the same input. Native backends write the trap code
//! into a status word passed as the hidden last argument of every IR function (see the
//! `nacre-backend` crate for the calling convention).

use std::fmt;

/// A runtime error raised by IR execution.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Trap {
    /// Integer division by zero.
    DivisionByZero,
    /// Integer remainder by zero.
    RemainderByZero,
    /// Calls nested too deeply (the interpreter's call stack is bounded).
    StackOverflow,
    /// A kernel launch with an empty grid or block, or a block larger than the device allows.
    InvalidLaunch,
    /// A kernel argument points to memory that is not a live `Array` (freed, or never
    /// allocated through Nacre).
    UnknownBuffer,
    /// The GPU device reported an error during a launch (details are logged by the runtime).
    DeviceError,
    /// A kernel launch asks for more shared memory per block (the kernel's static shared
    /// arrays plus the launch's dynamic shared memory) than the device allows.
    SharedMemoryLimit,
    /// A load or store outside the memory its pointer was derived from (a checked access, see
    /// [`crate::InstKind::BoundsCheck`]).
    OutOfBounds {
        /// The function whose access failed (its index in the module), when known.
        func: Option<u16>,
        /// The pointer parameter of that function the pointer was derived from, when known.
        param: Option<u8>,
    },
}

/// The low byte of a status code: which trap; the higher bytes carry its details.
const KIND_MASK: u32 = 0xff;

impl Trap {
    /// The status code native code writes for this trap (never 0, which means "no trap").
    pub const fn code(self) -> u32 {
        match self {
            Trap::DivisionByZero => 1,
            Trap::RemainderByZero => 2,
            Trap::StackOverflow => 3,
            Trap::InvalidLaunch => 4,
            Trap::UnknownBuffer => 5,
            Trap::DeviceError => 6,
            Trap::SharedMemoryLimit => 8,
            Trap::OutOfBounds { func, param } => {
                let func = match func {
                    Some(f) => f as u32 + 1,
                    None => 0,
                };
                let param = match param {
                    Some(p) if p < u8::MAX => p as u32 + 1,
                    _ => 0,
                };
                7 | param << 8 | func << 16
            }
        }
    }

    /// An out-of-bounds trap naming what is known of the access: the function's index and the
    /// pointer parameter (indices that do not fit the status code are left out).
    pub fn out_of_bounds(func: Option<usize>, param: Option<usize>) -> Trap {
        Trap::OutOfBounds {
            func: func
                .and_then(|f| u16::try_from(f).ok())
                .filter(|&f| f < u16::MAX),
            param: param
                .and_then(|p| u8::try_from(p).ok())
                .filter(|&p| p < u8::MAX),
        }
    }

    /// The same kind of trap without its details (for comparing trap kinds).
    pub const fn kind(self) -> Trap {
        match self {
            Trap::OutOfBounds { .. } => Trap::OutOfBounds {
                func: None,
                param: None,
            },
            t => t,
        }
    }

    /// The trap for a status code, or `None` for 0 and unknown codes.
    pub const fn from_code(code: u32) -> Option<Trap> {
        if code & KIND_MASK == 7 {
            let param = (code >> 8) & 0xff;
            let func = code >> 16;
            return Some(Trap::OutOfBounds {
                func: if func == 0 {
                    None
                } else {
                    Some((func - 1) as u16)
                },
                param: if param == 0 {
                    None
                } else {
                    Some((param - 1) as u8)
                },
            });
        }
        if code > KIND_MASK {
            return None;
        }
        match code {
            1 => Some(Trap::DivisionByZero),
            2 => Some(Trap::RemainderByZero),
            3 => Some(Trap::StackOverflow),
            4 => Some(Trap::InvalidLaunch),
            5 => Some(Trap::UnknownBuffer),
            6 => Some(Trap::DeviceError),
            8 => Some(Trap::SharedMemoryLimit),
            _ => None,
        }
    }
}

impl fmt::Display for Trap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trap::DivisionByZero => f.write_str("integer division by zero"),
            Trap::RemainderByZero => f.write_str("integer remainder by zero"),
            Trap::StackOverflow => f.write_str("call stack overflow (recursion too deep)"),
            Trap::InvalidLaunch => {
                f.write_str("invalid kernel launch: empty grid or block, or too many threads per block")
            }
            Trap::UnknownBuffer => f.write_str(
                "a kernel argument points to memory that is not a live Array (freed or never allocated); \
                 keep the Array alive until the launch completes",
            ),
            Trap::DeviceError => f.write_str("the GPU device reported an error during a kernel launch"),
            Trap::SharedMemoryLimit => f.write_str(
                "a kernel launch asks for more shared memory per block (static shared arrays plus \
                 the dynamic size) than the device allows; give a smaller dynamic size or use \
                 smaller shared arrays",
            ),
            Trap::OutOfBounds { func, param } => {
                f.write_str("out-of-bounds memory access")?;
                if let Some(p) = param {
                    write!(f, " through pointer parameter {p}")?;
                }
                if let Some(func) = func {
                    write!(f, " of function #{func}")?;
                }
                f.write_str(
                    ": an index outside the array the pointer was derived from; \
                     check the index against the array's length",
                )
            }
        }
    }
}

impl std::error::Error for Trap {}
