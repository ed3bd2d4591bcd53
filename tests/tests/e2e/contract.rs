//! The published contract, end to end: the local stack serves the OpenAPI document generated
//! from the API types, and schemathesis (from the project's virtualenv) fuzzes every route of
//! that document against the running stack.

use crate::common::{spawn, WEBHOOK_SECRET};

#[tokio::test]
async fn the_local_stack_serves_its_openapi_document_and_a_docs_page() {
    let s = spawn().await;
    let spec = s.get("/openapi.json", None).await;
    assert_eq!(spec.status, 200);
    let generated: serde_json::Value = serde_json::from_str(&holdfast::handlers::routes::openapi_json()).unwrap();
    assert_eq!(spec.body, generated);
    let page = s.get("/docs", None).await;
    assert_eq!(page.status, 200);
    assert!(page.headers["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = page.body.as_str().unwrap();
    assert!(html.contains("<code>POST /orders</code>") && html.contains("href=\"/openapi.json\""), "{html}");
    // Only GET; other methods on these paths are the gateway's unknown route.
    assert_eq!(s.call("POST", "/openapi.json", None, &[], None).await.status, 404);
}

/// Bounded so `make test` stays fast; raise for a deeper local run.
fn examples() -> String {
    std::env::var("HOLDFAST_FUZZ_EXAMPLES").unwrap_or_else(|_| "10".into())
}

/// Runs schemathesis from the project's virtualenv against `base` with `spec`; (passed, output).
async fn schemathesis(base: &str, spec: &std::path::Path, token: &str, extra: &[&str]) -> (bool, String) {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let bin = root.join(".venv/bin/schemathesis");
    assert!(bin.exists(), "{} is missing: run `make venv` (scripts/venv.sh installs it)", bin.display());
    // Hypothesis keeps an example database in the working directory; keep it out of the tree.
    let work = std::env::temp_dir().join(format!("holdfast-schemathesis-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let seed = std::env::var("HOLDFAST_FUZZ_SEED").unwrap_or_else(|_| "1".into());
    let out = tokio::process::Command::new(bin)
        .current_dir(&work)
        .env("SCHEMATHESIS_HOOKS", root.join("tests/schemathesis/hooks.py"))
        .env("PAYMENT_WEBHOOK_SECRET", WEBHOOK_SECRET)
        .env("NO_COLOR", "1")
        .arg("--config-file")
        .arg(root.join("tests/schemathesis/schemathesis.toml"))
        .arg("run")
        .arg(spec)
        .args(["--url", base, "--header", &format!("Authorization: Bearer {token}")])
        // One worker: CPython 3.11's ast module is not thread-safe under hypothesis's lambda
        // introspection ("AST constructor recursion depth mismatch" with two workers).
        .args(["--max-examples", &examples(), "--seed", &seed, "--no-shrink", "--workers", "1"])
        .args(["--checks", "all"])
        // The shared emulator serialises DynamoDB requests for every e2e test running in
        // parallel: an answer can wait seconds behind a 400-buyer test (AWS does not).
        .args(["--request-timeout", "60"])
        // Excluded, with the reasons:
        // - unsupported_method: for a method with no route API Gateway HTTP APIs answer 404
        //   {"message":"Not Found"}, not 405; the local stack does the same.
        // - positive_data_acceptance: a body may be valid by the schema and still name a SKU,
        //   reservation or cursor that does not exist, which is correctly refused (422
        //   unknown_sku, 422 invalid cursor); a schema cannot tell made-up names from real ones.
        .args(["--exclude-checks", "unsupported_method,positive_data_acceptance"])
        .args(extra)
        .output()
        .await
        .expect("schemathesis runs");
    let _ = std::fs::remove_dir_all(&work);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn schemathesis_finds_no_server_error_no_answer_outside_the_spec_and_no_accepted_bad_input() {
    let s = spawn().await;
    // The document's example SKU exists, so generated checkouts also reach the paths past stock.
    s.sku("SKU-HOODIE-M", 2500, 10_000, 4, Some(50)).await;
    let token = s.local.token("fuzzer", &["stock:admin", "reservations:write", "orders:read", "orders:write"]);
    let spec = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi.json");
    let (ok, out) = schemathesis(&s.local.base_url, &spec, &token, &[]).await;
    assert!(ok, "schemathesis failed:\n{out}");
    let routes: usize = holdfast::handlers::ROUTES.iter().map(|(_, rs)| rs.len()).sum();
    assert!(out.contains(&format!("Tested: {routes}")), "not every operation was tested:\n{out}");
    // Generated requests went past validation into the real flows, not only into refusals.
    let snap = s.local.snapshot().await.unwrap();
    assert!(!snap.reservations.is_empty(), "no generated request reserved stock:\n{out}");
}

#[tokio::test]
async fn schemathesis_fails_when_the_stack_answers_outside_a_mutated_copy_of_the_spec() {
    let s = spawn().await;
    let token = s.local.token("fuzzer", &["stock:admin", "reservations:write", "orders:read", "orders:write"]);
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi.json");
    let mut spec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    // The copy no longer admits the 404 that GET /skus/{sku} answers for an unknown SKU.
    spec["paths"]["/skus/{sku}"]["get"]["responses"].as_object_mut().unwrap().remove("404").unwrap();
    let copy = std::env::temp_dir().join(format!("holdfast-openapi-mutated-{}.json", std::process::id()));
    std::fs::write(&copy, spec.to_string()).unwrap();
    let (ok, out) =
        schemathesis(&s.local.base_url, &copy, &token, &["--include-path", "/skus/{sku}", "--max-failures", "1"]).await;
    let _ = std::fs::remove_file(&copy);
    assert!(!ok, "schemathesis passed against a spec the stack does not follow:\n{out}");
    assert!(out.contains("404"), "{out}");
}
