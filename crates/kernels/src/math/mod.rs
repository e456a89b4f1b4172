//! The math libraries the op families are written in: special functions, vectorised
//! transcendental functions, and the unstable sorting algorithms of CPU's C++ library.

pub mod special;
pub mod stl;
pub mod vmath;
