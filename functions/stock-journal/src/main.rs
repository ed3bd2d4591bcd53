//! The `stock-journal` Lambda: its handler on the runtime; it links no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::stream("stock-journal", holdfast::handlers::stock_journal::handle).await
}
