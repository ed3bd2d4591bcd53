//! The published contract, end to end: the local stack serves the OpenAPI document generated
//! from the API types, and schemathesis (from the project's virtualenv) fuzzes every route of
//! that document against the running stack.

use crate::common::spawn;

#[tokio::test]
async fn the_local_stack_serves_its_openapi_document_and_a_docs_page() {
    let s = spawn().await;
    let spec = s.get("/openapi.json", None).await;
    assert_eq!(spec.status, 200);
    let generated: serde_json::Value = serde_json::from_str(&holdfast::api::spec::openapi_json()).unwrap();
    assert_eq!(spec.body, generated);
    let page = s.get("/docs", None).await;
    assert_eq!(page.status, 200);
    assert!(page.headers["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = page.body.as_str().unwrap();
    assert!(html.contains("<code>POST /orders</code>") && html.contains("href=\"/openapi.json\""), "{html}");
    // Only GET; other methods on these paths are the gateway's unknown route.
    assert_eq!(s.call("POST", "/openapi.json", None, &[], None).await.status, 404);
}
