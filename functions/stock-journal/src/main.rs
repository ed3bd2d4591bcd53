//! The `stock-journal` Lambda: a thin main over the library.

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::run("stock-journal").await
}
