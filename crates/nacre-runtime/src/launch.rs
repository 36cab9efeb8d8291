//! [`LaunchLimits`]: the grid and block sizes a device accepts, checked before every launch
//! on every kernel runtime.
//!
//! A launch outside them is a [`Trap::InvalidLaunch`]: an empty grid or block, more threads
//! per block than the device allows, or a block or grid dimension beyond its maximum; more
//! shared memory per block than the device has is a [`Trap::SharedMemoryLimit`]. The CPU
//! runtime uses CUDA's limits ([`LaunchLimits::TYPICAL`]), so a kernel that launches on the CPU
//! launches on a GPU too, and the grid of a launch is bounded there as on the GPU.

use nacre_backend::LaunchDims;
use nacre_ir::Trap;

/// The launch shapes a device accepts.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct LaunchLimits {
    /// Threads per block (1024 on every current GPU).
    pub max_threads_per_block: u32,
    /// Block size per dimension (x, y, z).
    pub max_block: [u32; 3],
    /// Grid size per dimension (x, y, z).
    pub max_grid: [u32; 3],
    /// Shared memory per block in bytes, static arrays and dynamic memory together (on CUDA
    /// the opt-in maximum: a launch above 48 KiB raises the kernel's limit first).
    pub max_shared_bytes: u32,
}

impl LaunchLimits {
    /// The limits of every CUDA device of compute capability 3.0 and newer (48 KiB of shared
    /// memory per block, what every one gives without opting in), which the CPU runtime
    /// applies too.
    pub const TYPICAL: LaunchLimits = LaunchLimits {
        max_threads_per_block: 1024,
        max_block: [1024, 1024, 64],
        max_grid: [i32::MAX as u32, 65535, 65535],
        max_shared_bytes: 48 * 1024,
    };

    /// Checks a launch of a kernel whose static shared arrays take `static_shared` bytes.
    pub fn check(&self, dims: &LaunchDims, static_shared: u64) -> Result<(), Trap> {
        let (grid, block) = (dims.grid, dims.block);
        let threads = block.iter().map(|&d| u128::from(d)).product::<u128>();
        let fits = |v: [u32; 3], max: [u32; 3]| v.iter().zip(max).all(|(&d, m)| d <= m);
        if grid.contains(&0)
            || block.contains(&0)
            || threads > u128::from(self.max_threads_per_block)
            || !fits(block, self.max_block)
            || !fits(grid, self.max_grid)
        {
            return Err(Trap::InvalidLaunch);
        }
        if static_shared + u64::from(dims.shared_bytes) > u64::from(self.max_shared_bytes) {
            return Err(Trap::SharedMemoryLimit);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_inside_the_limits_pass_and_others_are_invalid_launches() {
        let l = LaunchLimits::TYPICAL;
        let at = |w: [u32; 6]| LaunchDims::from_words([w[0], w[1], w[2], w[3], w[4], w[5], 0]);
        assert_eq!(l.check(&at([1, 1, 1, 1024, 1, 1]), 0), Ok(()));
        assert_eq!(
            l.check(&at([i32::MAX as u32, 65535, 65535, 32, 32, 1]), 0),
            Ok(())
        );
        for dims in [
            [0, 1, 1, 1, 1, 1],
            [1, 1, 1, 1, 1, 0],
            [1, 1, 1, 1025, 1, 1],
            [1, 1, 1, 32, 32, 2],
            [1, 1, 1, 1, 1, 65],
            [u32::MAX, 1, 1, 1, 1, 1],
            [1, 65536, 1, 1, 1, 1],
            [u32::MAX, u32::MAX, 1, 1, 1, 1],
        ] {
            assert_eq!(l.check(&at(dims), 0), Err(Trap::InvalidLaunch), "{dims:?}");
        }
    }

    #[test]
    fn static_and_dynamic_shared_memory_together_stay_within_the_limit() {
        let l = LaunchLimits::TYPICAL;
        let with = |bytes| LaunchDims {
            grid: [1; 3],
            block: [32, 1, 1],
            shared_bytes: bytes,
        };
        assert_eq!(l.check(&with(48 * 1024), 0), Ok(()));
        assert_eq!(l.check(&with(40 * 1024), 8 * 1024), Ok(()));
        assert_eq!(
            l.check(&with(40 * 1024), 8 * 1024 + 1),
            Err(Trap::SharedMemoryLimit)
        );
        assert_eq!(
            l.check(&with(u32::MAX), u64::from(u32::MAX)),
            Err(Trap::SharedMemoryLimit)
        );
    }
}
