//! Vectorised transcendental functions over slices (placeholder; being written).
