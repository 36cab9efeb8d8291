//! Validation of a launch's grid and block against the device's limits.
//!
//! A launch the device would reject is a [`Trap::InvalidLaunch`], found before calling the
//! driver, exactly like on the CPU: an empty grid or block, more threads per block than the
//! device allows, or a block or grid dimension beyond the device's maximum. More shared memory
//! than the device's opt-in maximum is a [`Trap::SharedMemoryLimit`].

use crate::runtime::context::LaunchLimits;
use nacre_backend::LaunchDims;
use nacre_ir::Trap;

/// A validated launch shape.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct Shape {
    /// Blocks per grid (x, y, z).
    pub grid: [u32; 3],
    /// Threads per block (x, y, z).
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory per block.
    pub shared_bytes: u32,
}

/// Validates a launch of a kernel with `static_shared` bytes of static shared arrays.
pub(crate) fn validate(
    dims: &LaunchDims,
    limits: &LaunchLimits,
    static_shared: u32,
) -> Result<Shape, Trap> {
    limits.check(dims, u64::from(static_shared))?;
    Ok(Shape {
        grid: dims.grid,
        block: dims.block,
        shared_bytes: dims.shared_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: LaunchLimits = LaunchLimits::TYPICAL;

    fn at(w: [u32; 6]) -> LaunchDims {
        LaunchDims::from_words([w[0], w[1], w[2], w[3], w[4], w[5], 0])
    }

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
            let s = validate(&at(dims), &L, 0).unwrap();
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
            assert_eq!(
                validate(&at(dims), &L, 0),
                Err(Trap::InvalidLaunch),
                "{dims:?}"
            );
        }
    }

    #[test]
    fn the_device_limits_are_used() {
        let small = LaunchLimits {
            max_threads_per_block: 512,
            max_block: [512, 512, 64],
            max_grid: [100, 100, 100],
            max_shared_bytes: 1000,
        };
        assert!(validate(&at([1, 1, 1, 1024, 1, 1]), &L, 0).is_ok());
        assert_eq!(
            validate(&at([1, 1, 1, 1024, 1, 1]), &small, 0),
            Err(Trap::InvalidLaunch)
        );
        assert_eq!(
            validate(&at([101, 1, 1, 1, 1, 1]), &small, 0),
            Err(Trap::InvalidLaunch)
        );
        let dynamic = LaunchDims {
            shared_bytes: 900,
            ..at([1, 1, 1, 32, 1, 1])
        };
        assert_eq!(validate(&dynamic, &small, 100).unwrap().shared_bytes, 900);
        assert_eq!(
            validate(&dynamic, &small, 101),
            Err(Trap::SharedMemoryLimit)
        );
    }
}
