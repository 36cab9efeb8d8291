//! Options of the Cranelift backend.

/// How much Cranelift optimises the generated code.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, Default)]
pub enum OptLevel {
    /// No optimisation: the fastest compilation (Cranelift's `opt_level = "none"`).
    None,
    /// Optimise for speed (Cranelift's `opt_level = "speed"`: e-graph rewrites, GVN, LICM).
    #[default]
    Speed,
}

impl OptLevel {
    /// The value of Cranelift's `opt_level` setting.
    pub const fn cranelift_name(self) -> &'static str {
        match self {
            OptLevel::None => "none",
            OptLevel::Speed => "speed",
        }
    }
}

/// Options of a [`crate::CraneliftBackend`].
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct CraneliftOptions {
    /// Cranelift's optimisation level (default [`OptLevel::Speed`]).
    pub opt_level: OptLevel,
    /// Keep a text listing of every compiled function (its Cranelift IR and the generated
    /// machine code), returned by [`nacre_backend::Executable::listing`]. Off by default: it
    /// costs more than the compilation itself.
    pub keep_listing: bool,
}
