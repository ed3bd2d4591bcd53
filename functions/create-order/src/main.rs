//! The `create-order` Lambda: its handler on the runtime; it links no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::http("create-order", holdfast::handlers::create_order::handle).await
}
