//! [`LaunchLimits`]: the grid and block sizes a device accepts, checked before every launch
//! on every kernel runtime.
//!
//! A launch outside them is a [`Trap::InvalidLaunch`]: an empty grid or block, more threads
//! per block than the device allows, or a block or grid dimension beyond its maximum. The CPU
//! runtime uses CUDA's limits ([`LaunchLimits::TYPICAL`]), so a kernel that launches on the CPU
//! launches on a GPU too, and the grid of a launch is bounded there as on the GPU.

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
}

impl LaunchLimits {
    /// The limits of every CUDA device of compute capability 3.0 and newer, which the CPU
    /// runtime applies too.
    pub const TYPICAL: LaunchLimits = LaunchLimits {
        max_threads_per_block: 1024,
        max_block: [1024, 1024, 64],
        max_grid: [i32::MAX as u32, 65535, 65535],
    };

    /// Checks the six launch dimensions (grid x, y, z, block x, y, z).
    pub fn check(&self, dims: [u32; 6]) -> Result<(), Trap> {
        let grid = [dims[0], dims[1], dims[2]];
        let block = [dims[3], dims[4], dims[5]];
        let threads = block.iter().map(|&d| u128::from(d)).product::<u128>();
        let fits = |v: [u32; 3], max: [u32; 3]| v.iter().zip(max).all(|(&d, m)| d <= m);
        if dims.contains(&0)
            || threads > u128::from(self.max_threads_per_block)
            || !fits(block, self.max_block)
            || !fits(grid, self.max_grid)
        {
            return Err(Trap::InvalidLaunch);
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
        assert_eq!(l.check([1, 1, 1, 1024, 1, 1]), Ok(()));
        assert_eq!(l.check([i32::MAX as u32, 65535, 65535, 32, 32, 1]), Ok(()));
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
            assert_eq!(l.check(dims), Err(Trap::InvalidLaunch), "{dims:?}");
        }
    }
}
