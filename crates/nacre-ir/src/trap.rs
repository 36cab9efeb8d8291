//! Runtime traps: the errors a compiled function can return instead of a value.
//!
//! Every backend reports the same trap for the same input. Native backends write the trap code
//! into a status word passed as the hidden last argument of every IR function (see the
//! `nacre-backend` crate for the calling convention).

use std::fmt;

/// A runtime error raised by IR execution.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
#[repr(u32)]
pub enum Trap {
    /// Integer division by zero.
    DivisionByZero = 1,
    /// Integer remainder by zero.
    RemainderByZero = 2,
    /// Calls nested too deeply (the interpreter's call stack is bounded).
    StackOverflow = 3,
    /// A kernel launch with an empty grid or block, or a block larger than the device allows.
    InvalidLaunch = 4,
    /// A kernel argument points to memory that is not a live `Array` (freed, or never
    /// allocated through Nacre).
    UnknownBuffer = 5,
    /// The GPU device reported an error during a launch (details are logged by the runtime).
    DeviceError = 6,
}

impl Trap {
    /// The status code native code writes for this trap (never 0, which means "no trap").
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// The trap for a status code, or `None` for 0 and unknown codes.
    pub const fn from_code(code: u32) -> Option<Trap> {
        match code {
            1 => Some(Trap::DivisionByZero),
            2 => Some(Trap::RemainderByZero),
            3 => Some(Trap::StackOverflow),
            4 => Some(Trap::InvalidLaunch),
            5 => Some(Trap::UnknownBuffer),
            6 => Some(Trap::DeviceError),
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
        }
    }
}

impl std::error::Error for Trap {}
