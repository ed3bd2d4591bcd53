//! The `payment-callback` Lambda: its handler on the runtime; it links no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::http("payment-callback", holdfast::handlers::payment_callback::handle).await
}
