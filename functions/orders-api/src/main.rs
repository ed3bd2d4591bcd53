//! The `orders-api` Lambda: its handler on the runtime; it links no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::http("orders-api", holdfast::handlers::orders_api::handle).await
}
