//! The calling thread's last runtime error.
//!
//! Compiled host code learns only a trap code from a launch; when the code is
//! [`nacre_ir::Trap::DeviceError`], the full [`CudaError`] behind it is kept here, per thread,
//! so that whoever called the compiled function can report what happened
//! ([`take_last_error`]). Hooks that cannot return errors (host access to an array) record
//! their failures here too.

use crate::runtime::error::CudaError;
use std::cell::RefCell;

thread_local! {
    static LAST: RefCell<Option<CudaError>> = const { RefCell::new(None) };
}

/// Records `e` as the calling thread's last error (replacing an older one).
pub(crate) fn set_last_error(e: CudaError) {
    let _ = LAST.try_with(|l| {
        if let Ok(mut slot) = l.try_borrow_mut() {
            *slot = Some(e);
        }
    });
}

/// Takes the calling thread's last error, leaving none.
pub fn take_last_error() -> Option<CudaError> {
    LAST.try_with(|l| l.try_borrow_mut().ok().and_then(|mut s| s.take()))
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_per_thread_and_taken_once() {
        set_last_error(CudaError::NoDevice {
            ordinal: 1,
            count: 1,
        });
        assert!(std::thread::spawn(take_last_error)
            .join()
            .unwrap()
            .is_none());
        let e = take_last_error().unwrap();
        assert!(matches!(e, CudaError::NoDevice { ordinal: 1, .. }));
        assert!(take_last_error().is_none());
    }
}
