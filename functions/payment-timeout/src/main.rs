//! The `payment-timeout` Lambda: its handler on the runtime; it links no other function's handler.
//! Its `wire` names the ports the handler reaches; only their adapters are linked, and the test
//! below holds them to the function's IAM grants (`holdfast::permissions::USES`).

use holdfast::app::Wiring;

const NAME: &str = "payment-timeout";

fn wire(w: Wiring) -> Wiring {
    // code keys and KMS: a supplier's codes sealed as they arrive (docs/suppliers.md)
    w.order_table().queues().providers().supplier().code_keys().code_key_service()
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::sqs(NAME, wire, holdfast::handlers::payment_timeout::handle).await
}

#[cfg(test)]
mod tests {
    #[test]
    fn wires_the_ports_its_grants_imply_and_no_other() {
        if let Err(e) = holdfast::app::check_grants(super::NAME, super::wire) {
            panic!("{e}");
        }
    }
}
