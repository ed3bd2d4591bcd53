//! The `reservation-check` Lambda: its handler on the runtime; it links no other function's handler.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::sqs("reservation-check", holdfast::handlers::reservation_check::handle).await
}
