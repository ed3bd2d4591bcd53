//! The `publish-events` Lambda: its handler on the runtime; it links no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::stream("publish-events", holdfast::handlers::publish_events::handle).await
}
