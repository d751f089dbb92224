//! Session benchmarks (filled in below).

fn main() {}
