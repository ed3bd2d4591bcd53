//! The `reconcile` Lambda: its handler on the runtime; it links no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::schedule("reconcile", holdfast::handlers::reconcile::handle).await
}
