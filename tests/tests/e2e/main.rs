//! One test binary for everything that needs the emulator (docs/architecture.md, "Testing"): the emulator's own
//! contract, the template, and end-to-end scenarios over HTTP on the local stack.

mod after_sale;
mod at_shipment;
mod backstops;
mod campaigns;
mod codes;
mod codes_lifecycle;
mod combinations;
mod common;
mod contract;
mod dynamo_as_is;
mod edges;
mod emulator;
mod events;
mod hostile;
mod journal;
mod ledger;
mod models;
mod order_record;
mod orders;
mod payments;
mod push;
mod queue;
mod sale;
mod sam_env;
mod scopes;
mod soak;
mod stock;
mod store_contract;
mod stripe;
mod supplier;
mod supplier_codes;
mod waitlist;
mod warehouses;
mod waves;
mod webhook_keys;
