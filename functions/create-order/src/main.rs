//! The `create-order` Lambda: its handler on the runtime; it links no other function's handler.
//! Its `wire` names the ports the handler reaches; only their adapters are linked, and the test
//! below holds them to the function's IAM grants (`holdfast::permissions::USES`).

use holdfast::app::Wiring;

const NAME: &str = "create-order";

fn wire(w: Wiring) -> Wiring {
    w.stock_table().order_table().queues().supplier().admission_keys()
}

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::http(
        NAME,
        wire,
        holdfast::handlers::create_order::ROUTES,
        holdfast::handlers::create_order::handle,
    )
    .await
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
