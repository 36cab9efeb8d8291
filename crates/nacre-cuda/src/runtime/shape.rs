//! Validation of a launch's grid and block against the device's limits.
//!
//! A launch the device would reject is a [`Trap::InvalidLaunch`], found before calling the
//! driver, exactly like on the CPU: an empty grid or block, more threads per block than the
//! device allows, or a block or grid dimension beyond the device's maximum.

use crate::runtime::context::LaunchLimits;
use nacre_ir::Trap;

/// A validated launch shape.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct Shape {
    /// Blocks per grid (x, y, z).
    pub grid: [u32; 3],
    /// Threads per block (x, y, z).
    pub block: [u32; 3],
}

/// Validates the six launch dimensions (grid x, y, z, block x, y, z).
pub(crate) fn validate(dims: [u32; 6], limits: &LaunchLimits) -> Result<Shape, Trap> {
    limits.check(dims)?;
    Ok(Shape {
        grid: [dims[0], dims[1], dims[2]],
        block: [dims[3], dims[4], dims[5]],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: LaunchLimits = LaunchLimits::TYPICAL;

    #[test]
    fn valid_shapes_pass() {
        for dims in [
            [1, 1, 1, 1, 1, 1],
            [4096, 1, 1, 256, 1, 1],
            [2, 3, 2, 4, 2, 2],
            [1, 1, 1, 1024, 1, 1],
            [1, 1, 1, 32, 32, 1],
            [1, 1, 1, 1, 16, 64],
            [i32::MAX as u32, 65535, 65535, 1, 1, 1],
        ] {
            let s = validate(dims, &L).unwrap();
            assert_eq!(s.grid, [dims[0], dims[1], dims[2]]);
            assert_eq!(s.block, [dims[3], dims[4], dims[5]]);
        }
    }

    #[test]
    fn invalid_shapes_are_invalid_launches() {
        for dims in [
            [0, 1, 1, 1, 1, 1],
            [1, 0, 1, 1, 1, 1],
            [1, 1, 1, 1, 1, 0],
            [1, 1, 1, 1025, 1, 1],
            [1, 1, 1, 32, 32, 2],
            [1, 1, 1, 1, 1, 65],
            [1, 1, 1, 1, 2048, 1],
            [1, 1, 1, u32::MAX, u32::MAX, u32::MAX],
            [u32::MAX, 1, 1, 1, 1, 1],
            [1, 65536, 1, 1, 1, 1],
            [1, 1, 65536, 1, 1, 1],
        ] {
            assert_eq!(validate(dims, &L), Err(Trap::InvalidLaunch), "{dims:?}");
        }
    }

    #[test]
    fn the_device_limits_are_used() {
        let small = LaunchLimits {
            max_threads_per_block: 512,
            max_block: [512, 512, 64],
            max_grid: [100, 100, 100],
        };
        assert!(validate([1, 1, 1, 1024, 1, 1], &L).is_ok());
        assert_eq!(
            validate([1, 1, 1, 1024, 1, 1], &small),
            Err(Trap::InvalidLaunch)
        );
        assert_eq!(
            validate([101, 1, 1, 1, 1, 1], &small),
            Err(Trap::InvalidLaunch)
        );
    }
}
