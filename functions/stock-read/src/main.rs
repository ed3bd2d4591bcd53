//! The `stock-read` Lambda: its handler on the runtime; it links no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::http("stock-read", holdfast::handlers::stock_read::handle).await
}
