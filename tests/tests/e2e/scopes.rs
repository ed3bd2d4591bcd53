//! Admin scopes split by what they touch (security review L7; docs/deploy.md, "Scopes"): over
//! HTTP on the local stack, whose authorizer applies template.yaml's `AuthorizationScopes` as
//! API Gateway does (any one of a route's scopes suffices).

use crate::common::spawn;
use serde_json::json;

#[tokio::test]
async fn an_admin_token_without_the_codes_scope_cannot_upload_or_view_codes() {
    let s = spawn().await;
    let catalogue = s.local.token("cat-admin", &["stock:catalogue", "stock:adjust", "orders:admin"]);
    let codes = s.local.token("code-admin", &["stock:codes"]);
    let spec = json!({"name": "gift card", "price": 1000, "currency": "EUR", "shards": 1,
                      "model": {"management": "CODE_POOL"}});
    // the catalogue scope creates the SKU …
    let a = s.call("PUT", "/admin/skus/GIFT-SCOPE", Some(&catalogue), &[], Some(spec.to_string())).await;
    assert_eq!(a.status, 201, "{}", a.body);
    // … but neither it nor stock:adjust nor orders:admin may touch the codes
    let batch = json!({"batch_id": "b-1", "codes": ["CODE-AAAA-0001", "CODE-AAAA-0002"]});
    let a = s.post("/admin/skus/GIFT-SCOPE/codes", &catalogue, batch.clone()).await;
    assert_eq!(a.status, 403, "{}", a.body);
    let a = s.get("/admin/skus/GIFT-SCOPE/codes", Some(&catalogue)).await;
    assert_eq!(a.status, 403, "{}", a.body);
    // the codes scope may, and the legacy stock:admin still may
    let a = s.post("/admin/skus/GIFT-SCOPE/codes", &codes, batch.clone()).await;
    assert_eq!(a.status, 201, "{}", a.body);
    let a = s.get("/admin/skus/GIFT-SCOPE/codes", Some(&s.admin)).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["uploaded"], 2, "{}", a.body);
    // and the codes scope is only that: no prices, no stock, no orders
    let a = s.call("PUT", "/admin/skus/GIFT-SCOPE", Some(&codes), &[], Some(spec.to_string())).await;
    assert_eq!(a.status, 403, "{}", a.body);
    let adj = json!({"adjustment_id": "a-1", "delta": 5, "reason": "test"});
    let a = s.post("/admin/skus/GIFT-SCOPE/adjustments", &codes, adj).await;
    assert_eq!(a.status, 403, "{}", a.body);
    let a = s.get("/admin/orders/01J00000000000000000000000", Some(&codes)).await;
    assert_eq!(a.status, 403, "{}", a.body);
    // a buyer's token is no admin token at all
    let a = s.post("/admin/skus/GIFT-SCOPE/codes", &s.user("alice"), batch).await;
    assert_eq!(a.status, 403, "{}", a.body);
}
