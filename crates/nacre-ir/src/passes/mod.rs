//! Optimisation passes.

/// Which passes run.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct PassOptions {
    /// Constant folding and propagation.
    pub const_fold: bool,
    /// Dead-code elimination.
    pub dce: bool,
    /// CFG simplification.
    pub simplify_cfg: bool,
    /// Loop detection.
    pub loops: bool,
}

impl Default for PassOptions {
    fn default() -> Self {
        PassOptions { const_fold: true, dce: true, simplify_cfg: true, loops: true }
    }
}

/// What the passes changed.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct PassStats {
    /// Instructions folded to constants.
    pub folded: usize,
    /// Instructions removed.
    pub removed_insts: usize,
    /// Blocks removed or merged.
    pub removed_blocks: usize,
}
