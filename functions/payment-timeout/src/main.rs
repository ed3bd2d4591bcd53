//! The `payment-timeout` Lambda: its handler on the runtime; it links no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::sqs("payment-timeout", holdfast::handlers::payment_timeout::handle).await
}
