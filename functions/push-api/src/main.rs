//! The `push-api` Lambda: the WebSocket API's routes and the push queue (docs/push.md); it links
//! no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::batch("push-api", holdfast::handlers::push_api::handle).await
}
