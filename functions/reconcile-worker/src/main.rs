//! The `reconcile-worker` Lambda: its handler on the runtime; it links no other function's handler.
//! Its `wire` names the ports the handler reaches; only their adapters are linked, and the test
//! below holds them to the function's IAM grants (`holdfast::permissions::USES`).

use holdfast::app::Wiring;

const NAME: &str = "reconcile-worker";

fn wire(w: Wiring) -> Wiring {
    // code keys and KMS: a paid order's lost supplier code issue, run by the sweep
    w.stock_table().order_table().sweep().journal().queues().bus().providers().supplier().code_keys().code_key_service()
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::sqs(NAME, wire, holdfast::handlers::reconcile_worker::handle).await
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
