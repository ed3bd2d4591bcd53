//! The `reconcile-worker` Lambda: its handler on the runtime; it links no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::sqs("reconcile-worker", holdfast::handlers::reconcile_worker::handle).await
}
