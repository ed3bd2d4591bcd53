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

/// The stock table's item `pk`, read consistently.
async fn stored(
    s: &crate::common::Stack,
    pk: &str,
) -> std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> {
    aws_sdk_dynamodb::Client::new(&s.local.sdk)
        .get_item()
        .table_name(s.local.resources.table("StockTable").unwrap())
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(pk.into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .unwrap_or_else(|| panic!("{pk} is stored"))
}

/// Every admin write records the caller's `sub` (security review L7): a SKU's pause and resume
/// stamp its metadata record (`ub`, `ua`, `ut` on `SKU#<sku>`, in the same transaction as the
/// pause) and the answer shows it; the public view never does.
#[tokio::test]
async fn a_sku_pause_records_the_admins_sub_on_the_sku_and_shows_it_in_the_admin_answer() {
    let s = spawn().await;
    let merch = s.local.token("merch-7", &["stock:catalogue"]);
    let other = s.local.token("merch-8", &["stock:catalogue"]);
    let spec = json!({"name": "t-shirt", "price": 1500, "currency": "EUR", "shards": 2});
    let a = s.call("PUT", "/admin/skus/STAMP-SKU", Some(&merch), &[], Some(spec.to_string())).await;
    assert_eq!(
        (a.status, a.body["updated_by"]["sub"].as_str(), a.body["updated_by"]["action"].as_str()),
        (201, Some("merch-7"), Some("put")),
        "{}",
        a.body
    );
    let a = s.post("/admin/skus/STAMP-SKU/pause", &other, json!({})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["paused"], true, "{}", a.body);
    assert_eq!(a.body["updated_by"]["sub"], "merch-8", "{}", a.body);
    assert_eq!(a.body["updated_by"]["action"], "pause", "{}", a.body);
    assert!(a.body["updated_by"]["at"].as_str().is_some_and(|t| t.ends_with('Z')), "{}", a.body);
    let item = stored(&s, "SKU#STAMP-SKU").await;
    assert_eq!(item["ub"].as_s().unwrap(), "merch-8");
    assert_eq!(item["ua"].as_s().unwrap(), "pause");
    assert_eq!(item["ps"].as_bool().unwrap(), &true, "the stamp is on the record the pause wrote");
    let a = s.post("/admin/skus/STAMP-SKU/resume", &merch, json!({})).await;
    assert_eq!(
        (a.status, a.body["updated_by"]["sub"].as_str(), a.body["updated_by"]["action"].as_str()),
        (200, Some("merch-7"), Some("resume")),
        "{}",
        a.body
    );
    assert_eq!(stored(&s, "SKU#STAMP-SKU").await["ub"].as_s().unwrap(), "merch-7");
    // anonymous readers never see who administers the catalogue
    let public = s.get("/skus/STAMP-SKU", None).await;
    assert_eq!(public.status, 200, "{}", public.body);
    assert!(public.body.get("updated_by").is_none(), "{}", public.body);
}

/// The same for a campaign: its put (create and update), pause and resume stamp the campaign
/// record (`CMP#<id>`) and the admin answers show it.
#[tokio::test]
async fn a_campaign_put_records_the_admins_sub_on_the_campaign_and_shows_it_in_the_admin_answer() {
    let s = spawn().await;
    s.sku("STAMP-C", 1000, 10, 1, None).await;
    let merch = s.local.token("merch-9", &["stock:catalogue"]);
    let at = |offset_s: i64| holdfast::clock::rfc3339((holdfast::clock::now_s() + offset_s) * 1000);
    let body = json!({"name": "stamp sale", "starts_at": at(-5), "ends_at": at(3600),
                      "items": [{"sku": "STAMP-C", "quota": 5, "price": 900}]});
    let a = s.call("PUT", "/admin/campaigns/stamp", Some(&merch), &[], Some(body.to_string())).await;
    assert_eq!(a.status, 201, "{}", a.body);
    assert_eq!(
        (a.body["updated_by"]["sub"].as_str(), a.body["updated_by"]["action"].as_str()),
        (Some("merch-9"), Some("put")),
        "{}",
        a.body
    );
    let item = stored(&s, "CMP#stamp").await;
    assert_eq!((item["ub"].as_s().unwrap().as_str(), item["ua"].as_s().unwrap().as_str()), ("merch-9", "put"));
    // an update by another admin replaces the stamp; a pause by a third, too
    let a = s.call("PUT", "/admin/campaigns/stamp", Some(&s.admin), &[], Some(body.to_string())).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let admin_sub = stored(&s, "CMP#stamp").await["ub"].as_s().unwrap().to_owned();
    assert_ne!(admin_sub, "merch-9");
    assert_eq!(a.body["updated_by"]["sub"], admin_sub.as_str(), "{}", a.body);
    let ops = s.local.token("ops-1", &["stock:catalogue"]);
    let a = s.post("/admin/campaigns/stamp/pause", &ops, json!({})).await;
    assert_eq!(
        (a.status, a.body["updated_by"]["sub"].as_str(), a.body["updated_by"]["action"].as_str()),
        (200, Some("ops-1"), Some("pause")),
        "{}",
        a.body
    );
    let public = s.get("/campaigns/stamp", None).await;
    assert!(public.body.get("updated_by").is_none(), "{}", public.body);
}
