//! The `stock-events` Lambda: its handler on the runtime; it links no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::sqs("stock-events", holdfast::handlers::stock_events::handle).await
}
