//! The `queue-api` Lambda: its handler on the runtime; it links no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::http("queue-api", holdfast::handlers::queue_api::handle).await
}
