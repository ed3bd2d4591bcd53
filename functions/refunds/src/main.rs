//! The `refunds` Lambda: a thin main over the library.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::run("refunds").await
}
