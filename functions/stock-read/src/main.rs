//! The `stock-read` Lambda: the anonymous public reads (SKU views, availability, calendar,
//! campaigns), a thin main over the library. Read-only grants, no keyring (security review L5).

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    holdfast::lambda::run("stock-read").await
}
