//! A crate that depends on `nacre` alone, as a user's does: its tests (`tests/`) check that
//! generic numeric code (`T: nacre::Num`), structs carried through loops and branches
//! (`#[derive(nacre::Carry)]`) and kernels compile and run with nothing else in scope.
