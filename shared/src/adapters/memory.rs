//! In-memory adapters for fast unit tests and CPU benchmarks. Not used to prove AWS behaviour:
//! that is what the emulator tests are for.
