//! One test binary for everything that needs the emulator (STYLE §6): the emulator's own
//! contract, the template, and end-to-end scenarios over HTTP on the local stack.

mod campaigns;
mod common;
mod contract;
mod edges;
mod emulator;
mod events;
mod hostile;
mod orders;
mod soak;
mod stock;
